#!/usr/bin/env python3
"""fork() while the program's threads allocate, without and with the shim:
bench_fork (4 threads allocating, 20 forks a run), runs interleaved; the
median over runs of each run's mean fork() time, and the largest fork seen.
usage: bench_fork.py [BUILD] [--runs N] [--threads N]"""
import argparse
import os
import statistics
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument('build', nargs='?', default='build')
ap.add_argument('--runs', type=int, default=6)
ap.add_argument('--threads', type=int, default=4)
a = ap.parse_args()
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
exe = os.path.join(os.path.abspath(a.build), 'tests', 'bench', 'bench_fork')
cwd = tempfile.mkdtemp(prefix='gputrace-fork-')
res = {'bare': [], 'shim': []}
for r in range(a.runs):
    for name in res:
        env = dict(os.environ, GPUTRACE_QUIET='1', GPUTRACE_OUTPUT=os.path.join(cwd, 'r%d.db' % r))
        env.pop('LD_PRELOAD', None)
        if name == 'shim':
            env['LD_PRELOAD'] = shim
        out = subprocess.run([exe, str(a.threads)], env=env, cwd=cwd, capture_output=True, text=True, check=True)
        res[name].append(tuple(float(x) for x in out.stdout.split()))
for name, v in res.items():
    print('%-5s fork(): median of runs\' means %.2f ms (runs %.2f-%.2f), largest %.2f ms'
          % (name, statistics.median(m for m, _ in v), min(m for m, _ in v), max(m for m, _ in v), max(x for _, x in v)))
