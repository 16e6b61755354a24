#!/usr/bin/env python3
"""The stack set under many paths: what a training step's few hundred
distinct allocation stacks cost the hot path's hash and its "seen before?"
lookup (a program with one path, as bench_pystacks.py's, always finds its
stack in the thread's memo and measures neither). One Python program (below)
cycles through 256 distinct Python paths to cudaMallocAsync / cudaFreeAsync
on the CUDA stand-in (the first build's), 14 frames deep; each build given
runs it traced (CUPTI off), side by side, interleaved in shuffled order, in one run. Prints per build the median
calling-thread CPU time per call and the trace's own `cost` note parts per
call (the stack set, Python frames, the whole), and the number of stacks the
trace holds (the 256 allocation paths and the first call's).
With --thrash-kb K the program writes K KiB between two calls, as a
framework's own work between two allocations evicts the shim's lines from
the near caches; the CPU column then counts that work too (read the note's).
usage: bench_stackset.py BUILD [BUILD...] [--runs N] [--rounds N] [--python EXE] [--thrash-kb K]"""
import argparse
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pystacks import CUDART  # noqa: E402  (the same ctypes preamble, one definition)

PROGRAM = CUDART + r'''
# a0..a15 each call b0..b15, each b calls alloc: 256 paths that differ in two frames
src = ["def alloc():\n    malloc(ref, 4096, None)\n    thrash(junk, 1, len(junk))\n    free(p, None)\n"
        "    thrash(junk, 2, len(junk))\n"]
src += ["def b%d():\n    alloc()\n" % j for j in range(16)]
src += ["def a%d(j):\n" % i + "".join("    if j == %d: b%d()\n" % (j, j) for j in range(16)) for i in range(16)]
src.append("A = [%s]\n" % ", ".join("a%d" % i for i in range(16)))
exec("".join(src))
def descend(d, f):
    return f() if d <= 1 else descend(d - 1, f)
def every_path():
    for i in range(16):
        for j in range(16):
            A[i](j)
rounds = int(sys.argv[1])
# between two calls, the program's own work evicts the shim's lines from the near caches (PyTorch runs
# ~10 us of dispatch between two allocations): with --thrash-kb, a memset of that many KiB stands for it
junk = ctypes.create_string_buffer(max(1, int(sys.argv[2]) * 1024)) if int(sys.argv[2]) else b""
thrash = ctypes.memset if int(sys.argv[2]) else (lambda *a: None)
rt.cudaMalloc(ref, 1)
descend(10, every_path)    # first sightings, not timed
t0 = time.thread_time_ns()
descend(10, lambda: [every_path() for _ in range(rounds)])
print("ns_per_call=%.1f" % ((time.thread_time_ns() - t0) / (2 * 256 * rounds)))
'''

PARTS = {'whole': r'\(([\d.]+) us a call\)', 'stack set': r'the stack set ([\d.]+) ms',
         'Python frames': r"the calling thread's Python frames ([\d.]+) ms",
         'unwinding': r'native unwinding ([\d.]+) ms', 'clock': r'time stamps ([\d.]+) ms',
         'queue': r'the queue ([\d.]+) ms', 'device': r'the device asked of CUDA ([\d.]+) ms'}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('builds', nargs='+')
    ap.add_argument('--runs', type=int, default=7)
    ap.add_argument('--rounds', type=int, default=2000)
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--thrash-kb', type=int, default=0,
                    help='KiB of memory the program writes between two calls (cold caches, as on a GPU host)')
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='gputrace-stackset-')
    script = os.path.join(tmp, 'paths.py')
    with open(script, 'w') as f:
        f.write(PROGRAM)
    # one stand-in for every build (the first's): a build of the shim alone has none, and a missing
    # directory would let ctypes find the real libcudart, whose calls fail fast without a GPU
    fake = os.path.join(os.path.abspath(a.builds[0]), 'tests', 'fake_cuda')
    if not os.path.exists(os.path.join(fake, 'libcudart.so.13')):
        sys.exit('bench_stackset: no CUDA stand-in in %s: build %s whole (ninja -C %s)' % (fake, a.builds[0],
                                                                                      a.builds[0]))
    res = {b: [] for b in a.builds}
    rng = random.Random(1)
    for i in range(a.runs):
        order = a.builds[:]
        rng.shuffle(order)   # whichever runs first or second in a round is not always the same build
        for b in order:
            build = os.path.abspath(b)
            db = os.path.join(tmp, '%d-%d.db' % (a.builds.index(b), i))
            env = dict(os.environ, LD_LIBRARY_PATH=fake, GPUTRACE_QUIET='1',
                       LD_PRELOAD=os.path.join(build, 'shim', 'libgputrace.so'), GPUTRACE_OUTPUT=db,
                       GPUTRACE_CUPTI='0')
            out = subprocess.run([a.python, script, str(a.rounds), str(a.thrash_kb)], env=env, capture_output=True, text=True,
                                 check=True)
            con = sqlite3.connect(db)
            note = con.execute("SELECT message FROM notes WHERE component = 'cost'").fetchone()
            stacks = con.execute('SELECT count(*) FROM stacks').fetchone()[0]
            con.close()
            if not note:
                sys.exit('bench_stackset: %s wrote no cost note' % db)
            calls = int(re.search(r'(\d+) calls recorded', note[0]).group(1))
            row = {'ns a call': float(out.stdout.split('=')[1]), 'stacks': stacks}
            for part, pattern in PARTS.items():
                v = float(re.search(pattern, note[0]).group(1))
                row[part] = v * 1e3 if part == 'whole' else v * 1e6 / calls   # ns a call
            res[b].append(row)
    print('256 Python paths to one allocation, cycled %d times%s; median of %d runs (ns a call; the note\'s parts '
          'per call recorded)' % (a.rounds, ', %d KiB written between calls' % a.thrash_kb if a.thrash_kb else '',
                                  a.runs))
    cols = ['whole', 'unwinding', 'Python frames', 'clock', 'queue', 'stack set', 'device']
    print('  %-24s %10s %s %7s' % ('build', 'CPU', ' '.join('%10s' % c[:10] for c in cols), 'stacks'))
    for b in a.builds:
        med = {k: statistics.median(r[k] for r in res[b]) for k in res[b][0]}
        print('  %-24s %10.1f %s %7d' % (b, med['ns a call'], ' '.join('%10.1f' % med[c] for c in cols),
                                         med['stacks']))


if __name__ == '__main__':
    main()
