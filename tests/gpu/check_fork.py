"""GPU check of fork under the shim with real CUDA and CUPTI (the writer's
activity round and fork: fork no longer waits on a mutex the writer holds
while it calls into CUDA, CUPTI or the loader; it waits at most 200 ms for a
round in progress, and no round starts while a fork is pending). A PyTorch
loop (default allocator, CUPTI on) forks 200 times while allocating and
launching kernels; each child runs CPU work only and exits; one child in ten
calls CUDA-free code that walks the loaded objects (ctypes.CDLL of libm),
which would block forever had the child inherited the loader's lock. Every
fork must return (no hang: each child is reaped within 10 s), the slowest
fork is printed against the untraced run's, and the parent's trace must be
complete (closed, nothing dropped, at least PyTorch's own cudaMalloc calls).
usage: check_fork.py --build BUILD --out DIR"""
import argparse
import os

from gpucheck import counters, finish, one, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))

PROG = r'''
import ctypes, os, signal, time, torch
x = torch.randn(1024, 1024, device='cuda')
slowest, n = 0.0, 200
for i in range(n):
    y = torch.empty(int(1 + i % 7) << 20, dtype=torch.uint8, device='cuda')
    x = x @ x.T / 1024.0
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        if i % 10 == 0:
            ctypes.CDLL('libm.so.6')   # dlopen: the loader's locks in the child
        os._exit(0)
    slowest = max(slowest, time.monotonic() - t0)
    deadline = time.monotonic() + 10
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            print('hung_child=%d' % i)
            os.waitpid(pid, 0)
            break
        time.sleep(0.001)
    del y
torch.cuda.synchronize()
print('forks=%d' % n)
print('slowest_fork_ms=%.3f' % (slowest * 1e3))
print('cudaMalloc_calls=%d' % torch.cuda.memory_stats()['segment.all.allocated'])
'''
script = os.path.join(a.out, 'fork_loop.py')
with open(script, 'w') as f:
    f.write(PROG)

bare = run(['python3', script], timeout=300)
db = os.path.join(a.out, 'fork.db')
traced = run(['python3', script], shim=shim, db=db, timeout=300)
cb, ct = counters(bare.stdout), counters(traced.stdout)
report(bare.returncode == 0 and 'hung_child' not in bare.stdout, 'fork_untraced',
       'exit %d, slowest fork %.1f ms, %.1f s' % (bare.returncode, cb.get('slowest_fork_ms', -1), bare.wall))
ok = traced.returncode == 0 and 'hung_child' not in traced.stdout and ct.get('forks') == 200
report(ok, 'fork_traced_no_hang', 'exit %d, %s, slowest fork %.1f ms (untraced %.1f ms), %.1f s; stderr %r' %
       (traced.returncode, 'no child hung' if 'hung_child' not in traced.stdout else 'a child hung',
        ct.get('slowest_fork_ms', -1), cb.get('slowest_fork_ms', -1), traced.wall, traced.stderr[-300:]))
report(ct.get('slowest_fork_ms', 1e9) < cb.get('slowest_fork_ms', 0) + 250, 'fork_delay_bounded',
       'slowest traced fork %.1f ms <= untraced %.1f ms + 250 ms' % (ct.get('slowest_fork_ms', -1),
                                                                    cb.get('slowest_fork_ms', -1)))
if os.path.exists(db):
    end, dropped = one(db, 'SELECT end_reason FROM processes'), one(db, 'SELECT events_dropped FROM processes')
    mallocs = one(db, "SELECT count(*) FROM events_v WHERE api = 'cudaMalloc' AND result = 0")
    kernels = one(db, 'SELECT count(*) FROM kernels')
    report(end == 'exit' and dropped == 0 and mallocs >= ct.get('cudaMalloc_calls', 1 << 30), 'fork_parent_trace_complete',
           'end %s, dropped %d, cudaMalloc %d (PyTorch\'s own: %s, libraries add theirs), kernels %d' %
           (end, dropped, mallocs, ct.get('cudaMalloc_calls'), kernels))
else:
    report(False, 'fork_parent_trace_complete', 'no trace at %s' % db)
finish()
