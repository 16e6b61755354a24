"""Does tracing change how much memory PyTorch's cudaMallocAsync pool holds
beyond what is in use? (session 25: the sweep's traced runs of the transformer
fit batch 152 twice with identical peaks, while plain runs of 152 failed 3 of 3
and 150, 151 fit 2 of 3.) Runs sweep_models.py at one batch size that fits,
--runs traced and --runs plain, each a fresh process, in shuffled order, and
prints per run what the workload itself reports (torch.cuda.max_memory_reserved
and max_memory_allocated: the pool's high-water marks) and the device's free
memory after the loop (torch.cuda.mem_get_info), then the medians and ranges
of each side. No pass/fail: a measurement for the sweep's margin.
With --compare, the traced runs' databases are kept and compared: is the
sequence of the program's pool allocations and frees (sizes, in order) the
same in every run, and where does each run's pool grow (the driver's pool
size on each allocation, CUPTI's memory records)? Same calls with different
growth: the driver placed them differently; different calls: the program
(its libraries) asked differently.
usage: probe_pool_slack.py --build BUILD --out DIR [--model transformer]
                           [--batch-size 140] [--runs 7] [--compare]"""
import argparse
import hashlib
import os
import sqlite3
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
ap.add_argument('--compare', action='store_true', help='keep the traced runs\' databases and compare their calls')
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
    if os.path.exists(db) and not (a.compare and side == 'traced'):
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


def calls_and_growth(db):
    """The pool's calls in order ((op, size), ...) and its growth: (index of
    the call, pool size after it) each time the driver's pool size changed."""
    c = sqlite3.connect(db)
    calls = c.execute("""SELECT op, size FROM events_v WHERE memory = 'pool' AND result = 0 AND op IN ('alloc', 'free')
                         ORDER BY id""").fetchall()
    sizes = [r[0] for r in c.execute("""SELECT pool_size FROM driver_memory WHERE is_async = 1 AND op = 'alloc'
                                         ORDER BY t_ns, id""")]
    c.close()
    growth, last = [], 0
    allocs = [i for i, (op, _) in enumerate(calls) if op == 'alloc']
    for k, ps in enumerate(sizes):
        if ps and ps != last:
            growth.append((allocs[k] if k < len(allocs) else -1, ps))
            last = ps
    return calls, growth, len(sizes)


if a.compare:
    dbs = [os.path.join(a.out, 'slack-%d.db' % i) for i, side in enumerate(order) if side == 'traced']
    dbs = [d for d in dbs if os.path.exists(d)]
    ref = None
    for d in dbs:
        calls, growth, records = calls_and_growth(d)
        h = hashlib.sha1(repr(calls).encode()).hexdigest()[:12]
        if ref is None:
            ref = (calls, growth)
        first_call = next((i for i, (x, y) in enumerate(zip(calls, ref[0])) if x != y),
                          None if len(calls) == len(ref[0]) else min(len(calls), len(ref[0])))
        first_growth = next((k for k, (x, y) in enumerate(zip(growth, ref[1])) if x != y), None)
        print('%s: %d calls (sha1 %s), %d pool records, %d growths, final pool %.3f GiB; first call unlike run 0: %s; '
              'first growth unlike run 0: %s' % (
                  os.path.basename(d), len(calls), h, records, len(growth), (growth[-1][1] if growth else 0) / GIB,
                  first_call, first_growth if first_growth is None else '#%d: %s (run 0: %s), call %s' % (
                      first_growth, growth[first_growth],
                      ref[1][first_growth] if first_growth < len(ref[1]) else None,
                      calls[growth[first_growth][0]] if 0 <= growth[first_growth][0] < len(calls) else None)))
        print('   growth (call, GiB): ' + ', '.join('%d:%.3f' % (i, ps / GIB) for i, ps in growth[:40]))
