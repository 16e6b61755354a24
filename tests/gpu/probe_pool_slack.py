"""Does tracing change how much memory PyTorch's cudaMallocAsync pool holds
beyond what is in use? (session 25: the sweep's traced runs of the transformer
fit batch 152 twice with identical peaks, while plain runs of 152 failed 3 of 3
and 150, 151 fit 2 of 3.) Runs sweep_models.py at one batch size that fits,
--runs traced and --runs plain, each a fresh process, in shuffled order, and
prints per run what the workload itself reports (torch.cuda.max_memory_reserved
and max_memory_allocated: the pool's high-water marks) and the device's free
memory after the loop (torch.cuda.mem_get_info), then the medians and ranges
of each side. No pass/fail: a measurement for the sweep's margin.
usage: probe_pool_slack.py --build BUILD --out DIR [--model transformer]
                           [--batch-size 140] [--runs 7]"""
import argparse
import os
import random
import statistics
import sys

from gpucheck import counters, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='transformer')
ap.add_argument('--batch-size', type=int, default=140)
ap.add_argument('--runs', type=int, default=7)
ap.add_argument('--alloc', default='backend:cudaMallocAsync')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
GIB = float(1 << 30)

order = ['traced'] * a.runs + ['plain'] * a.runs
random.seed(25)
random.shuffle(order)
seen = {'traced': [], 'plain': []}
for i, side in enumerate(order):
    db = os.path.join(a.out, 'slack-%d.db' % i)
    argv = [sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model,
            '--batch-size', str(a.batch_size), '--steps', '3', '--report-free']
    p = run(argv, shim=shim if side == 'traced' else None, db=db,
            env_extra={'PYTORCH_CUDA_ALLOC_CONF': a.alloc} if a.alloc else None, timeout=300)
    if os.path.exists(db):
        os.remove(db)
    if p.returncode != 0:
        print('%2d %-6s exit %d: %s' % (i, side, p.returncode, p.stderr.strip()[-300:]), flush=True)
        continue
    c = counters(p.stdout)
    slack = c['max_reserved'] - c['max_allocated']
    seen[side].append((c['max_reserved'], c['max_allocated'], slack, c['device_free'], c['device_total']))
    print('%2d %-6s reserved %.3f GiB, allocated %.3f GiB, slack %.3f GiB (%.2f%%), device free after %.3f GiB'
          % (i, side, c['max_reserved'] / GIB, c['max_allocated'] / GIB, slack / GIB,
             100.0 * slack / c['max_allocated'], c['device_free'] / GIB), flush=True)

for side, rows in seen.items():
    if not rows:
        continue
    for k, name in ((0, 'reserved'), (2, 'slack'), (3, 'free after')):
        v = [r[k] / GIB for r in rows]
        print('%s %s: median %.3f GiB, range %.3f-%.3f, n %d' % (side, name, statistics.median(v), min(v), max(v), len(v)))
