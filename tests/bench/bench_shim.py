#!/usr/bin/env python3
"""Capture benchmark: per-call overhead of the shim against the bare CUDA
stand-in (no stacks, 32-frame stacks), sustained events/s into SQLite, bytes
per event. Runs every variant side by side, interleaved, in one run; reports
medians. usage: bench_shim.py [BUILD] [--runs N] [--pairs N]"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument('build', nargs='?', default='build')
ap.add_argument('--runs', type=int, default=7)
ap.add_argument('--pairs', type=int, default=200000)
a = ap.parse_args()
build = os.path.abspath(a.build)
prog = os.path.join(build, 'tests', 'bench', 'bench_calls')
shim = os.path.join(build, 'shim', 'libgputrace.so')
tmp = tempfile.mkdtemp(prefix='gputrace-bench-')


def run(variant, i):
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, 'tests', 'fake_cuda'), GPUTRACE_QUIET='1')
    depth = 32 if variant == 'shim+stack32' else 0
    db = os.path.join(tmp, '%s-%d.db' % (variant, i))
    if variant != 'bare':
        # The ring holds the whole run, so the per-call figure is the hot path's
        # cost, not the writer's pace (the 'throttled' variant shows that).
        queue = '65536' if variant == 'shim-throttled' else str(1 << 20)
        env.update(LD_PRELOAD=shim, GPUTRACE_OUTPUT=db, GPUTRACE_STACK_DEPTH=str(depth),
                   GPUTRACE_QUEUE_EVENTS=queue)
    t0 = time.monotonic()
    out = subprocess.run([prog, str(a.pairs), str(depth)], env=env, capture_output=True, text=True, check=True)
    wall = time.monotonic() - t0
    ns = float(out.stdout.split('=')[1])
    return ns, wall, db


variants = ['bare', 'bare+stack32', 'shim', 'shim+stack32', 'shim-throttled']
res = {v: [] for v in variants}
for i in range(a.runs):
    for v in variants:
        if v == 'bare+stack32':  # same call depth, no shim: the fair baseline for stacks
            env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, 'tests', 'fake_cuda'))
            out = subprocess.run([prog, str(a.pairs), '32'], env=env, capture_output=True, text=True, check=True)
            res[v].append((float(out.stdout.split('=')[1]), 0, None))
        else:
            res[v].append(run(v, i))

med = {v: statistics.median(x[0] for x in res[v]) for v in variants}
print('per-call cost, median of %d runs x %d alloc/free pairs (ns per call):' % (a.runs, a.pairs))
for v in variants:
    print('  %-14s %8.1f' % (v, med[v]))
print('  overhead without stacks: %.1f ns/call (target <= 100)' % (med['shim'] - med['bare']))
print('  overhead with 32-frame stacks: %.1f ns/call (target <= 1000)' % (med['shim+stack32'] - med['bare+stack32']))
print('  shim-throttled: default 64K-event ring, so a program calling faster than the writer'
      ' drains is slowed to the writer\'s pace (backpressure instead of loss)')

# Sustained rate into SQLite: events written / wall time of the whole traced
# run including the final drain, for the no-stack variant; and bytes/event.
rates, bpe, dropped = [], [], 0
for (ns, wall, db) in res['shim-throttled']:
    con = sqlite3.connect(db)
    n, d = con.execute('SELECT events_recorded, events_dropped FROM processes').fetchone()
    con.close()
    dropped += d
    rates.append(n / wall)
    bpe.append(os.path.getsize(db) / n)
print('sustained: %.2f M events/s into SQLite (median, whole run incl. final drain; target >= 1 M), dropped %d'
      % (statistics.median(rates) / 1e6, dropped))
print('file size: %.1f bytes/event (target <= 24)' % statistics.median(bpe))
