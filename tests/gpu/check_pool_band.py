"""Why a batch size near the end fits in some fresh runs and not in others
under backend:cudaMallocAsync (the conv net on an H200: 265 fit every one of
15 runs, 266-269 about half theirs, 277 all of 6; tests/gpu/RESULTS.md
sessions 29-31), and what `gputrace oom` says of each failure.
Every size of --sizes runs --runs times traced (CUPTI off, stacks on) in fresh
processes, in shuffled order, each plain and with `--warm-libs` (one step at
batch size 1 first: cuBLAS and cuDNN make their handles before the pool
grows). A plain run of 266 once failed in cublasCreate: a library's own
cudaMalloc, outside the pool, which PyTorch's backend never trims.
For each failure: the call that failed, its size, the pool's reservation and
bytes in use then, and oom's `pool_unused_bytes` (set when the pool's unused
reserve would have covered an allocation made outside it).
PASS lines:
  - every failure outside the pool with the pool's unused reserve at least
    its shortfall is named so by oom (pool_unused_bytes set);
  - (a finding, reported either way) whether --warm-libs fit every run.
usage: check_pool_band.py --build BUILD --out DIR [--model conv] [--sizes 266,267,268,269] [--runs 3]"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck import FAILED, report, run  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='conv')
ap.add_argument('--sizes', default='266,267,268,269')
ap.add_argument('--runs', type=int, default=3)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
ENV = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync', 'GPUTRACE_CUPTI': '0'}
GiB = 2 ** 30

plan = [(bs, warm, k) for bs in map(int, a.sizes.split(',')) for warm in (False, True) for k in range(a.runs)]
random.Random(31).shuffle(plan)
results = {}   # (bs, warm) -> [fits...]
failures = []
for bs, warm, k in plan:
    db = os.path.join(a.out, 'bs%d-%s-%d.db' % (bs, 'warm' if warm else 'plain', k))
    if os.path.exists(db):
        os.remove(db)
    argv = [sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model, '--batch-size', str(bs),
            '--steps', '3'] + (['--warm-libs'] if warm else [])
    p = run(argv, shim=shim, db=db, env_extra=ENV, timeout=300)
    ok = p.returncode == 0
    results.setdefault((bs, warm), []).append(ok)
    line = 'bs %d %s run %d: %s (%.1f s)' % (bs, 'warm' if warm else 'plain', k, 'fits' if ok else 'failed', p.wall)
    if not ok:
        last = [l for l in p.stderr.strip().splitlines() if 'Error' in l or 'error' in l][-1:] or p.stderr.strip().splitlines()[-1:]
        o = run([gputrace, 'oom', '--json', db], timeout=120)
        try:
            f = json.loads(o.stdout)['failures']
        except (ValueError, KeyError):
            f = []
        end = f[0] if f else {}
        pool = [b for b in end.get('ledger', []) if b.get('kind') == 'pool']
        failures.append(dict(bs=bs, warm=warm, call=end.get('api'), requested=end.get('requested_bytes'),
                             short_by=end.get('short_by_bytes'), pool_unused=end.get('pool_unused_bytes'),
                             reserved=pool[0]['bytes'] if pool else None,
                             in_use=pool[0].get('in_use_bytes') if pool else None, said=last))
        line += ': %s of %s; pool %s reserved, %s in use; short by %s; pool_unused %s; %s' % (
            end.get('api'), end.get('requested_bytes'), pool and '%.2f GiB' % (pool[0]['bytes'] / GiB),
            pool and pool[0].get('in_use_bytes') is not None and '%.2f GiB' % (pool[0]['in_use_bytes'] / GiB),
            end.get('short_by_bytes'), end.get('pool_unused_bytes'), last)
    print('   ' + line, flush=True)

print('\n| batch size | plain: fit | --warm-libs: fit |\n|---|---|---|')
for bs in map(int, a.sizes.split(',')):
    pl, wm = results.get((bs, False), []), results.get((bs, True), [])
    print('| %d | %d of %d | %d of %d |' % (bs, sum(pl), len(pl), sum(wm), len(wm)))
outside = [f for f in failures if f['call'] and 'Async' not in f['call'] and f['short_by'] and   # not a pool's call
           f['reserved'] is not None and f['in_use'] is not None and f['reserved'] - f['in_use'] >= f['short_by']]
report(all(f['pool_unused'] is not None for f in outside),
       'oom names the pool\'s unused reserve for every failure outside it that the reserve would have covered',
       '%d such failures of %d, named %d' % (len(outside), len(failures),
                                           sum(f['pool_unused'] is not None for f in outside)))
warm_all = all(all(v) for (bs, w), v in results.items() if w)
plain_all = all(all(v) for (bs, w), v in results.items() if not w)
print('   finding: --warm-libs fit %s; plain fit %s' % ('every run' if warm_all else 'not every run',
                                                    'every run' if plain_all else 'not every run'))
print('all checks passed' if not FAILED else '%d checks failed' % len(FAILED))
sys.exit(1 if FAILED else 0)
