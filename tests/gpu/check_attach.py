"""GPU checks of CUPTI's detach between kernel-sampling windows (issue 14) at
its edges, with windows made short (GPUTRACE_KERNELS_FULL_S=1,
GPUTRACE_KERNELS_EVERY_S=2) so that they close in the middle of things:
- graphs: one CUDA graph replayed for 9 s across windows (graph_replay.py),
  made while CUPTI is attached and while it is detached: every replay exact,
  and the notes say CUPTI stays attached (a detach killed such a graph);
- compile: torch.compile(mode='reduce-overhead') training (CUDA graphs of
  Inductor, its compile workers): same loss lines as without the shim;
- profiler: a program that loads CUPTI itself (ctypes: dlopen + dlsym on the
  handle, as JAX's profiler does) and starts a profiling session of its own
  (cuptiProfilerInitialize) while our windows run: the call succeeds, the trace
  says CUPTI then stays attached, and the program's training goes on;
- rss: the traced process's anonymous resident memory over a 40-s run with a
  detach every 2 s, against the same run with GPUTRACE_CUPTI=0: does each
  cuptiFinalize leave CUPTI's buffers behind?
- first period: train_mlp.py (its first step comes ~4 s after its first CUDA
  call) has kernels for its loop with the default settings.
About 4 minutes.
usage: check_attach.py --build BUILD --out DIR"""
import argparse
import os
import subprocess
import threading
import time

from gpucheck import counters, finish, fresh_db, kernel_spans, one, report, rows, run, safe

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--rss-steps', type=int, default=1600)
ap.add_argument('--only', help='comma-separated: first period, profiler, graphs, compile, rss')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
SHORT = {'GPUTRACE_KERNELS_FULL_S': '1', 'GPUTRACE_KERNELS_EVERY_S': '2', 'GPUTRACE_QUIET': '1'}


def fresh(name):
    return fresh_db(a.out, name)


def kernel_notes(db):
    return [m for (m,) in rows(db, "SELECT message FROM notes WHERE component = 'kernels' ORDER BY id")]


def graphs():
    """One graph exec replayed for 9 s, made while CUPTI is attached (the first window) or while it
    is detached (between windows, launched in the next): before the fix both died with "unspecified
    launch failure" at the replay after the next detach."""
    for mode in ('attached', 'detached'):
        argv = ['python3', os.path.join(here, 'graph_replay.py'), mode, '9']
        db = fresh('graphs-' + mode)
        p = run(argv, shim=shim, db=db, env_extra=dict(SHORT, GPUTRACE_KERNELS_EVERY_S='3'))
        c = counters(p.stdout)
        cupti = [m for (m,) in rows(db, "SELECT message FROM notes WHERE component = 'cupti' ORDER BY id")] \
            if os.path.exists(db) else []
        kn = kernel_notes(db) if os.path.exists(db) else []
        spans = [one(db, 'SELECT count(*) FROM kernels WHERE start_ns BETWEEN ? AND ?', (s, e))
                 for s, e in spans_of(db)] if os.path.exists(db) else []
        ok = (p.returncode == 0 and c.get('replays', 0) > 1000 and c.get('mismatches') == 0 and kn.count('paused') >= 2
              and any('CUDA graphs' in m for m in cupti) and sum(1 for n in spans if n) >= 2)
        report(ok, 'graphs (%s): a graph replayed across kernel windows: exact, CUPTI kept attached, windows go on'
               % mode, 'rc %d, %s, %d pauses, kernels per span %s, cupti notes %s; stderr %s' % (
                   p.returncode, p.stdout.split(), kn.count('paused'), spans, cupti[1:],
                   [l for l in p.stderr.splitlines() if 'rror' in l][:2]))


def spans_of(db):
    """The kernel spans, each end 50 ms late: a kernel launched just before a pause starts after it
    (and none starts after the process's end)."""
    return [(s, e + 50 * 10**6) for s, e in kernel_spans(db)]


def compile_():
    argv = ['python3', os.path.join(here, 'compile_train.py'), '--steps', '1500']
    plain = run(argv)
    db = fresh('compile')
    p = run(argv, shim=shim, db=db, env_extra=SHORT)
    losses = [l for l in p.stdout.splitlines() if l.startswith('step ')]
    want = [l for l in plain.stdout.splitlines() if l.startswith('step ')]
    notes = kernel_notes(db) if os.path.exists(db) else []
    report(p.returncode == 0 and losses == want and len(want) == 150,
           'compile: torch.compile reduce-overhead under short windows: the same losses as untraced',
           'rc %d (untraced %d), %d of %d loss lines equal, %d pauses, wall %.1f s (untraced %.1f s); stderr %s' % (
               p.returncode, plain.returncode, sum(1 for x, y in zip(losses, want) if x == y), len(want),
               notes.count('paused'), p.wall, plain.wall, p.stderr[-300:]))


PROFILER = r'''
import ctypes, time, torch
m = torch.nn.Linear(2048, 2048).cuda()
def work(seconds):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        y = m(torch.randn(256, 2048, device='cuda')).sum(); y.backward(); torch.cuda.synchronize()
work(2.5)   # past the 1-s full period: CUPTI detached, the next window 1 s later
path = [l.split()[-1] for l in open('/proc/self/maps') if 'libcupti.so' in l][0]
cupti = ctypes.CDLL(path)                     # dlopen of the one already loaded, dlsym on its handle
class Params(ctypes.Structure):
    _fields_ = [('structSize', ctypes.c_size_t), ('pPriv', ctypes.c_void_p)]
p = Params(ctypes.sizeof(Params), None)
r = cupti.cuptiProfilerInitialize(ctypes.byref(p))
print('profiler_init=%d' % r)
work(4.0)
print('profiler_deinit=%d' % cupti.cuptiProfilerDeInitialize(ctypes.byref(p)))
'''


def profiler():
    db = fresh('profiler')
    p = run(['python3', '-c', PROFILER], shim=shim, db=db, env_extra=SHORT)
    c = counters(p.stdout)
    cupti = [m for (m,) in rows(db, "SELECT message FROM notes WHERE component = 'cupti' ORDER BY id")] \
        if os.path.exists(db) else []
    stays = any(m.startswith('between windows CUPTI stays attached') for m in cupti)
    report(p.returncode == 0 and c.get('profiler_init') == 0 and c.get('profiler_deinit') == 0 and stays,
           'profiler: a program\'s own CUPTI profiling session (dlopen + dlsym) succeeds; CUPTI then stays attached',
           'rc %d, init %s, deinit %s, cupti notes %s, kernel notes %s; stderr %s' % (
               p.returncode, c.get('profiler_init'), c.get('profiler_deinit'), cupti,
               kernel_notes(db) if os.path.exists(db) else [], p.stderr[-300:]))


def rss_run(name, env):
    """RssAnon of the child every 0.5 s, from the parent: its anonymous
    memory (heap, buffers), where a leak would grow. Not VmRSS: that also
    counts the pages of libraries and files mapped in as they are first
    touched (session 40: +129 MB of VmRSS in one run's second half with
    windows, none in the next; in a probe of four configurations,
    tests/gpu/probe_rss.py, RssAnon stayed flat in each while the file-backed
    pages rose 48 MB with CUPTI off and untouched with windows)."""
    db = fresh(name)
    e = dict(os.environ, LD_PRELOAD=shim, GPUTRACE_OUTPUT=db, **env)
    proc = subprocess.Popen(['python3', os.path.join(here, 'transformer_step.py'), '--steps', str(a.rss_steps)],
                            env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples, t0 = [], time.monotonic()

    def watch():
        while proc.poll() is None:
            try:
                with open('/proc/%d/status' % proc.pid) as f:
                    kb = [int(l.split()[1]) for l in f if l.startswith('RssAnon')]
                if kb and kb[0]:  # none (or 0) once the process is exiting
                    samples.append((time.monotonic() - t0, kb[0]))
            except OSError:
                break
            time.sleep(0.5)
    th = threading.Thread(target=watch)
    th.start()
    out, err = proc.communicate()
    th.join()
    return proc.returncode, samples, out, err, db


def rss():
    res = {}
    for name, env in (('rss-cupti0', {'GPUTRACE_CUPTI': '0', 'GPUTRACE_QUIET': '1'}), ('rss-windows', SHORT)):
        rc, samples, out, err, db = rss_run(name, env)
        c = counters(out)
        base = one(db, 'SELECT start_mono_ns FROM processes') if os.path.exists(db) else 0
        # the training loop's second half: CUDA, the model and the allocator are warm
        lo = (c.get('steady_start_ns', 0) - base) / 1e9
        hi = (c.get('steady_end_ns', 0) - base) / 1e9
        n = len(samples)
        half = [kb for t, kb in samples[n // 2:]]
        res[name] = (rc, half[0] if half else 0, half[-1] if half else 0, max(kb for _, kb in samples) if samples else 0,
                     kernel_notes(db).count('paused') if os.path.exists(db) else 0, lo, hi, err[-200:])
        print('   %s: rc %d, RssAnon second half %d -> %d kB (max %d), %d pauses, loop %.1f..%.1f s' % (
            name, rc, res[name][1], res[name][2], res[name][3], res[name][4], lo, hi), flush=True)
    g0 = res['rss-cupti0'][2] - res['rss-cupti0'][1]
    g1 = res['rss-windows'][2] - res['rss-windows'][1]
    report(res['rss-windows'][0] == 0 and res['rss-windows'][4] >= 8 and g1 - g0 < 64 * 1024,
           'rss: a detach every 2 s leaves no growing memory behind (second half of the run, against CUPTI=0)',
           'growth %+d kB with windows (%d pauses), %+d kB with CUPTI=0; peak %d kB vs %d kB' % (
               g1, res['rss-windows'][4], g0, res['rss-windows'][3], res['rss-cupti0'][3]))


def first_period():
    db = fresh('first-period')
    p = run(['python3', os.path.join(here, 'train_mlp.py'), '--steps', '40'], shim=shim, db=db,
            env_extra={'GPUTRACE_QUIET': '1'})
    if p.returncode != 0 or not os.path.exists(db):
        report(False, 'first period: run completes', 'rc %d %s' % (p.returncode, p.stderr[-300:]))
        return
    first_alloc = one(db, "SELECT min(t_ns) FROM events_v WHERE op = 'alloc'")
    kern = rows(db, 'SELECT min(start_ns), max(start_ns), count(*) FROM kernels')[0]
    copies = rows(db, 'SELECT min(start_ns) FROM memcpys')[0][0]
    report(kern[2] > 100, 'first period: the loop\'s kernels are recorded though it starts seconds after the first '
           'CUDA call', '%d kernels from %.2f to %.2f s; first copy %.2f s, first allocation %.2f s; notes %s' % (
               kern[2], (kern[0] or 0) / 1e9, (kern[1] or 0) / 1e9, (copies or 0) / 1e9, first_alloc / 1e9,
               kernel_notes(db)))


which = a.only.split(',') if a.only else None
for name, fn in (('first period', first_period), ('profiler', profiler), ('graphs', graphs), ('compile', compile_),
                 ('rss', rss)):
    if which is None or name in which:
        safe(name, fn)
finish()
