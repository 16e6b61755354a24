#!/usr/bin/env python3
"""Python-frames benchmark: what recording the Python stack adds to each
allocation call made from a 20-deep Python stack, over the native-stack cost.
One Python program (below) calls the CUDA stand-in's cudaMallocAsync /
cudaFreeAsync through ctypes from 20 frames deep; it runs bare, under the
shim with GPUTRACE_PYTHON=0 (native stacks only) and with Python frames on,
side by side, interleaved, in one run; medians of the calling thread's CPU
time per call (wall time on a shared machine measures the neighbours). The same for a native thread
allocating while the Python thread waits 20 frames deep in a function named
like PyTorch's _engine_run_backward (what an autograd thread pays to carry
the waiting thread's frames).
usage: bench_pystacks.py [BUILD] [--runs N] [--pairs N] [--python EXE]"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

# the stand-in's cudaMallocAsync / cudaFreeAsync through ctypes (bench_stackset.py's program starts alike)
CUDART = r'''
import ctypes, sys, time
rt = ctypes.CDLL("libcudart.so.13")
malloc, free = rt.cudaMallocAsync, rt.cudaFreeAsync
malloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
p = ctypes.c_void_p()
ref = ctypes.byref(p)
'''

PROGRAM = CUDART + r'''
pairs = int(sys.argv[1])

def leaf():
    t0 = time.thread_time_ns()
    for _ in range(pairs):
        malloc(ref, 4096, None)
        free(p, None)
    return (time.thread_time_ns() - t0) / (2 * pairs)

def descend(d):
    return leaf() if d <= 1 else descend(d - 1)

rt.cudaMalloc(ref, 1)          # the trace starts here, outside the timed loop
if len(sys.argv) > 2:          # a native thread allocates while we wait in "backward"
    lib = ctypes.CDLL(sys.argv[2])
    lib.native_loop_ns.restype = ctypes.c_double
    def _engine_run_backward():
        return lib.native_loop_ns(pairs)
    def leaf():
        return _engine_run_backward()
print("ns_per_call=%.1f" % descend(20))
'''

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--runs', type=int, default=7)
    ap.add_argument('--pairs', type=int, default=100000)
    ap.add_argument('--python', default=sys.executable)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    shim = os.path.join(build, 'shim', 'libgputrace.so')
    tmp = tempfile.mkdtemp(prefix='gputrace-bench-')
    script = os.path.join(tmp, 'alloc_deep.py')
    with open(script, 'w') as f:
        f.write(PROGRAM)

    VARIANTS = {'bare': None, 'native stacks': '0', 'native + python': '1'}


    def run(variant, i, backward=False):
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, 'tests', 'fake_cuda'), GPUTRACE_QUIET='1')
        db = os.path.join(tmp, '%d-%d.db' % (list(VARIANTS).index(variant), i))
        if VARIANTS[variant] is not None:
            env.update(LD_PRELOAD=shim, GPUTRACE_OUTPUT=db, GPUTRACE_PYTHON=VARIANTS[variant],
                       GPUTRACE_QUEUE_EVENTS=str(1 << 21), GPUTRACE_CUPTI='0')
        argv = [a.python, script, str(a.pairs)] + ([os.path.join(build, 'tests', 'progs', 'libnative_worker.so')]
                                                    if backward else [])
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.split('=')[1]), db


    res = {v: [] for v in VARIANTS}
    bw = {v: [] for v in VARIANTS}
    for i in range(a.runs):
        for v in VARIANTS:
            res[v].append(run(v, i))
            bw[v].append(run(v, i + 1000, backward=True))

    # the traced stack must hold the 20 Python frames, else this measures nothing
    con = sqlite3.connect(res['native + python'][0][1])
    depth = con.execute("SELECT count(*) FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id "
                        "WHERE f.kind = 'python' AND sf.stack_id = (SELECT stack_id FROM events WHERE api = 3 LIMIT 1)"
                        ).fetchone()[0]
    con.close()
    med = {v: statistics.median(x[0] for x in res[v]) for v in VARIANTS}
    print('per-call cost from a %d-deep Python stack, median of %d runs x %d alloc/free pairs (ns per call):'
          % (depth, a.runs, a.pairs))
    for v in VARIANTS:
        print('  %-16s %8.1f' % (v, med[v]))
    print('  Python frames add %.1f ns/call over native stacks (target <= 1000)'
          % (med['native + python'] - med['native stacks']))
    bmed = {v: statistics.median(x[0] for x in bw[v]) for v in VARIANTS}
    con = sqlite3.connect(bw['native + python'][0][1])
    bdepth = con.execute("SELECT count(*) FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id "
                         "WHERE f.kind = 'python' AND sf.stack_id = (SELECT stack_id FROM events WHERE api = 3 LIMIT 1)"
                         ).fetchone()[0]
    con.close()
    print('a native thread allocating while Python waits in backward (%d Python frames attributed, marker included):'
          % bdepth)
    for v in VARIANTS:
        print('  %-16s %8.1f' % (v, bmed[v]))
    print('  the waiting thread\'s frames add %.1f ns/call over native stacks'
          % (bmed['native + python'] - bmed['native stacks']))


if __name__ == '__main__':
    main()
