#!/usr/bin/env python3
"""Benchmark of the timeline views: time, output size and peak memory (max
RSS) of `gputrace export --format chrome`, with and without its limits, and
of `gputrace report`, on a generated trace of EVENTS allocation events
(default 1 million; bench_analyzer_gen.c's training loop, 1000 events per
iteration) to which EVENTS/4 kernels on two streams are added. With
--validate the full export is parsed back with Python's json module and
checked for its event count.

usage: tests/bench/bench_export.py [BUILD_DIR] [--events N] [--work DIR] [--validate]
Results go to tests/bench/RESULTS.md by hand."""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def measure(argv):
    """Runs argv; returns (seconds, max RSS MiB, exit status)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    secs = time.monotonic() - t0
    err = p.stderr.read().decode(errors='replace')
    p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if rc:
        sys.stderr.write('%s: exit %d: %s\n' % (' '.join(argv), rc, err.strip()))
    return secs, ru.ru_maxrss / 1024.0, rc


def make_trace(work, events):
    db = os.path.join(work, 'export-trace-%d.db' % events)
    if os.path.exists(db):
        return db
    gen = os.path.join(work, 'bench_analyzer_gen')
    subprocess.run(['cc', '-O2', '-o', gen, os.path.join(HERE, 'bench_analyzer_gen.c'), '-lsqlite3'], check=True)
    subprocess.run([gen, db + '.tmp', os.path.join(ROOT, 'schema', 'gputrace.sql'), str(events), '1000'], check=True,
                   stdout=subprocess.DEVNULL)
    con = sqlite3.connect(db + '.tmp')
    end = con.execute('SELECT max(t_ns) FROM events').fetchone()[0]
    n = events // 4
    con.execute("INSERT INTO strings VALUES (1, 'sgemm_128x64_nn'), (2, 'elementwise_kernel')")
    con.executemany('INSERT INTO kernels(start_ns, end_ns, device, stream_id, correlation_id, name_id) VALUES (?,?,0,?,?,?)',
                    ((k * end // n, k * end // n + end // n // 2, 7 + k % 2, k, 1 + k % 2) for k in range(n)))
    con.commit()
    con.close()
    os.rename(db + '.tmp', db)
    return db


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--events', type=int, default=1000000)
    ap.add_argument('--work', default=os.path.join(os.environ.get('TMPDIR', '/tmp'), 'gputrace-bench-export'))
    ap.add_argument('--validate', action='store_true')
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    gputrace = os.path.join(os.path.abspath(a.build), 'analyzer', 'gputrace')
    db = make_trace(a.work, a.events)
    nev = sqlite3.connect(db).execute('SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM kernels),'
                                      ' (SELECT count(*) FROM ranges)').fetchone()
    print('trace: %s: %d events, %d kernels, %d ranges, %.0f MiB' % (db, nev[0], nev[1], nev[2], os.path.getsize(db) / 2**20))
    out, full = os.path.join(a.work, 'out.json'), os.path.join(a.work, 'full.json')
    # a tenth of the iterations the analyzer finds, from the middle of the run
    its = json.loads(subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True).stdout)['iterations']
    lo, hi = its * 4 // 10, its * 5 // 10 - 1
    variants = [('export', []), ('export --no-allocs', ['--no-allocs']), ('export --no-kernels', ['--no-kernels']),
                ('export --no-allocs --no-kernels', ['--no-allocs', '--no-kernels']),
                ('export --iterations %d:%d (%d of %d iterations)' % (lo, hi, hi - lo + 1, its), ['--iterations', '%d:%d' % (lo, hi)])]
    print('| command | seconds | output MiB | bytes/event in | max RSS MiB |')
    print('|---|---|---|---|---|')
    for name, extra in variants:
        secs, rss, rc = measure([gputrace, 'export', '--format', 'chrome', db, '-o', out] + extra)
        size = os.path.getsize(out) if rc == 0 else 0
        print('| %s | %.2f | %.1f | %.0f | %.0f |' % (name, secs, size / 2**20, size / float(nev[0] + nev[1]), rss))
        if name == 'export' and rc == 0:
            os.replace(out, full)
    html = os.path.join(a.work, 'report.html')
    secs, rss, rc = measure([gputrace, 'report', db, '-o', html])
    print('| report | %.2f | %.2f | | %.0f |' % (secs, os.path.getsize(html) / 2**20 if rc == 0 else 0, rss))
    secs, rss, rc = measure([gputrace, 'summary', db])
    print('| summary (for scale) | %.2f | | | %.0f |' % (secs, rss))
    # last: a forked child's max RSS would include this process's parsed document
    if a.validate and os.path.exists(full):
        t0 = time.monotonic()
        with open(full, encoding='utf-8') as f:
            doc = json.load(f)
        kinds = {}
        for e in doc['traceEvents']:
            kinds[e['ph']] = kinds.get(e['ph'], 0) + 1
        print('full export parsed back by Python json in %.1f s: events by ph %s' % (time.monotonic() - t0, kinds))


if __name__ == '__main__':
    main()
