"""Helpers shared by the GPU checks: run a command with and without the shim,
read a trace, report `PASS name: figures` / `FAIL name: why` lines."""
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

FAILED = []


def report(ok, name, detail):
    print('%s %s: %s' % ('PASS' if ok else 'FAIL', name, detail), flush=True)
    if not ok:
        FAILED.append(name)


def run(argv, shim=None, db=None, env_extra=None, timeout=600):
    env = dict(os.environ)
    env.update(env_extra or {})
    if shim:
        env['LD_PRELOAD'] = shim
        env['GPUTRACE_OUTPUT'] = db
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    p.wall = time.monotonic() - t0
    return p


def report_json(gputrace, cmd, db, timeout=300):
    """gputrace CMD --json DB, parsed: the one trace's object (a document of
    several traces gives its first). Raises where it printed no JSON."""
    p = subprocess.run([gputrace, cmd, '--json', db], capture_output=True, text=True, timeout=timeout)
    d = json.loads(p.stdout)
    return d['traces'][0] if 'traces' in d else d


def rows(db, sql, args=()):
    con = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def one(db, sql, args=()):
    return rows(db, sql, args)[0][0]


def out_of_memory(stderr):
    """A plain run that ended out of memory: PyTorch's message, or a library
    that could not allocate its handle or workspace (cublasCreate under a
    full device: CUBLAS_STATUS_ALLOC_FAILED; on the H200 the conv net at 266
    under cudaMallocAsync, session 29)."""
    s = stderr.lower()
    return 'out of memory' in s or 'status_alloc_failed' in s


def counters(stdout):
    """key=value lines printed by the workload."""
    out = {}
    for line in stdout.splitlines():
        if '=' in line and ' ' not in line:
            k, v = line.split('=', 1)
            try:
                out[k] = float(v) if '.' in v else int(v)
            except ValueError:  # a name, such as gpu=<uuid>
                out[k] = v
    return out


def live_and_peak(db, memory):
    """Live bytes at the end and peak live bytes of one kind of memory, from the trace."""
    live = one(db, "SELECT coalesce(sum(size), 0) FROM live_at_exit WHERE memory = ?", (memory,))
    peak = one(db, "SELECT coalesce(max(live), 0) FROM (SELECT sum(live_bytes) AS live FROM memory_timeline "
                   "WHERE memory = ? GROUP BY t_ns)", (memory,))
    return live, peak


def live_peak(db, where):
    """Live bytes at the end and peak live bytes of the allocations matching
    `where` (SQL over the allocations view), from the trace."""
    live = one(db, 'SELECT coalesce(sum(size), 0) FROM allocations WHERE free_ns IS NULL AND ' + where)
    peak = one(db, """SELECT coalesce(max(live), 0) FROM (SELECT sum(d) OVER (ORDER BY t, id ROWS UNBOUNDED PRECEDING)
                      AS live FROM (SELECT alloc_ns AS t, alloc_id AS id, size AS d FROM allocations WHERE {w}
                      UNION ALL SELECT free_ns, free_id, -size FROM allocations WHERE free_id IS NOT NULL AND {w}))"""
               .format(w=where))
    return live, peak


def safe(name, fn):
    """One check must not stop the others: an exception is that check's FAIL."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        report(False, name, 'raised %r' % e)


def fresh_db(out, name):
    """OUT/NAME.db with no trace left from an earlier run (nor its -wal, -journal)."""
    db = os.path.join(out, name + '.db')
    for x in ('', '-wal', '-journal'):
        if os.path.exists(db + x):
            os.remove(db + x)
    return db


def kernel_spans(db):
    """[(start, end)] of each span with kernel records on, from the 'kernels' notes (the last one
    open to the process's end)."""
    spans, since = [], None
    for t, m in rows(db, "SELECT t_ns, message FROM notes WHERE component = 'kernels' ORDER BY t_ns"):
        if m.endswith('recording') and since is None:
            since = t
        elif m.endswith('paused') and since is not None:
            spans.append((since, t))
            since = None
    if since is not None:
        spans.append((since, one(db, 'SELECT end_ns FROM processes')))
    return spans


def median(xs):
    return statistics.median(xs) if xs else float('nan')


def finish():
    print('%d checks failed' % len(FAILED) if FAILED else 'all checks passed')
    sys.exit(1 if FAILED else 0)
