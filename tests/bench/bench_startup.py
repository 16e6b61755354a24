#!/usr/bin/env python3
"""Cost of the shim to a process that never calls CUDA (shells, compilers,
DataLoader workers inherit LD_PRELOAD): N runs of /bin/true with and without
the shim, interleaved; ms per process (median of batches) and files left.
usage: bench_startup.py [BUILD] [--n N]"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument('build', nargs='?', default='build')
ap.add_argument('--n', type=int, default=200)
a = ap.parse_args()
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
cwd = tempfile.mkdtemp(prefix='gputrace-startup-')
res = {'bare': [], 'shim': []}
for batch in range(5):
    for name in res:
        env = dict(os.environ)
        env.pop('LD_PRELOAD', None)
        if name == 'shim':
            env['LD_PRELOAD'] = shim
        t0 = time.monotonic()
        for _ in range(a.n // 5):
            subprocess.run(['/bin/true'], env=env, cwd=cwd, check=True)
        res[name].append((time.monotonic() - t0) * 1e3 / (a.n // 5))
b, s = statistics.median(res['bare']), statistics.median(res['shim'])
print('/bin/true: bare %.3f ms, with shim %.3f ms per process (+%.3f ms); files left: %d'
      % (b, s, s - b, len(os.listdir(cwd))))
