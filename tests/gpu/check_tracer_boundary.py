"""Does the tracer move the largest batch that fits? (issue 13; promise 1)

Twice under cudaMallocAsync the transformer of sweep_models.py fitted at
batch 150 in every traced run of the sweep and ran out of memory in a plain
run of the same command. This check runs the same command at the given
batch sizes in fresh processes, rounds in shuffled order, in four ways:
  plain      no tracer
  traced     LD_PRELOAD the shim, its defaults
  nocupti    the shim with GPUTRACE_CUPTI=0 (only the hooks and NVML), as
             `gputrace sweep` runs it
  nostacks   as nocupti with GPUTRACE_STACK_DEPTH=0 (the hot path's time
             mostly gone: does the tracer's time or its presence matter?)
  blocking   no tracer, CUDA_LAUNCH_BLOCKING=1 (the host never runs ahead)
and prints, per way and batch size, how many runs fitted, torch's
max_reserved of those that did, and where those that failed ran out (the
last line of torch's error). If plain and traced differ beyond run-to-run
variation, the tracer changes the program's memory (or its timing, if
blocking agrees with traced): the sweep's answer must then be proven
untraced.
usage: check_tracer_boundary.py --build BUILD --out DIR --model M --alloc A
                                --batch-sizes 149,150 [--rounds 3] [--ways ...]"""
import argparse
import os
import random
import re
import sys

from gpucheck import counters, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='transformer')
ap.add_argument('--alloc', default='async')
ap.add_argument('--batch-sizes', default='149,150')
ap.add_argument('--rounds', type=int, default=3)
ap.add_argument('--ways', default='plain,traced,nocupti,blocking')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
alloc_env = {'async': {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'},
             'expandable': {'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True'}}.get(a.alloc, {})
WAYS = {'plain': ({}, False), 'traced': ({}, True), 'nocupti': ({'GPUTRACE_CUPTI': '0'}, True),
        'nostacks': ({'GPUTRACE_CUPTI': '0', 'GPUTRACE_STACK_DEPTH': '0'}, True),
        'blocking': ({'CUDA_LAUNCH_BLOCKING': '1'}, False)}
ways = a.ways.split(',')
sizes = [int(b) for b in a.batch_sizes.split(',')]
jobs = [(w, bs) for _ in range(a.rounds) for w in ways for bs in sizes]
random.seed(11)
random.shuffle(jobs)
results = {}
for i, (w, bs) in enumerate(jobs):
    env, traced = WAYS[w]
    env = dict(env, **alloc_env)
    db = os.path.join(a.out, '%s-bs%d-%d.db' % (w, bs, i))
    argv = [sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model, '--batch-size', str(bs)]
    p = run(argv, shim=shim if traced else None, db=db, env_extra=env, timeout=300)
    c = counters(p.stdout)
    if p.returncode == 0:
        what = 'fits, max_reserved %.2f GiB' % (c.get('max_reserved', 0) / 2**30)
    else:
        m = re.search(r'(Tried to allocate [^.]*\.[^\n]*)', p.stderr)
        what = 'FAILS (%d): %s' % (p.returncode, (m.group(1) if m else p.stderr.strip()[-300:])[:300])
    results.setdefault((w, bs), []).append((p.returncode == 0, c.get('max_reserved')))
    print('%2d %-9s bs %d: %s (%.1f s)' % (i + 1, w, bs, what, p.wall), flush=True)
print()
print('| way | ' + ' | '.join('bs %d fits' % b for b in sizes) + ' |')
print('|---|' + '---|' * len(sizes))
for w in ways:
    cells = []
    for bs in sizes:
        r = results.get((w, bs), [])
        cells.append('%d of %d' % (sum(1 for ok, _ in r if ok), len(r)))
    print('| %s | %s |' % (w, ' | '.join(cells)))
