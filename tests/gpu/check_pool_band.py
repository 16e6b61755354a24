"""Why a batch size near the end fits in some fresh runs and not in others
under backend:cudaMallocAsync (the conv net on an H200: 265 fit every one of
15 runs, 266-269 about half theirs, 277 all of 6; tests/gpu/RESULTS.md
sessions 29-31), and what `gputrace oom` says of each failure.
Every size of --sizes runs --runs times traced (CUPTI off, stacks on) in fresh
processes, in shuffled order, in each of --variants: plain; warm (`--warm-libs`:
one step at batch size 1 first, cuBLAS and cuDNN make their handles before
the pool grows); trim (`--empty-cache`: torch.cuda.empty_cache() after each
step, the pool gives back the chunks no allocation holds). A plain run of 266 once
failed in cublasCreate: a library's own cudaMalloc, outside the pool, which
PyTorch's backend never trims; session 32 found 16 of 17 failures in the
pool's own request with its unused reserve 3.7 times the request.
For each failure: the call that failed, its size, the pool's reservation and
bytes in use then, and oom's `pool_unused_bytes` (set when the pool's unused
reserve would have covered an allocation made outside it).
PASS lines:
  - every failure outside the pool with the pool's unused reserve at least
    its shortfall is named so by oom (pool_unused_bytes set);
  - every failure of the pool's own request with its unused reserve at least
    the request plus 2 MiB per live tensor is named so (pool_split_bytes);
  - every failure of the pool's own request is read as that request (no
    rolled-back growth: session 33's 8.38 GiB read as 16.75);
  - the shim read the pool's release threshold with its readings: PyTorch's
    backend sets UINT64_MAX, stored capped at INT64_MAX (what oom's
    pool_split_bytes needs to call the pool one that keeps what is freed);
  - (findings, reported either way) how many runs of each variant fit.
usage: check_pool_band.py --build BUILD --out DIR [--model conv] [--sizes 266,267,268,269] [--runs 3]
       [--variants plain,warm,trim]"""
import argparse
import json
import os
import random
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck import FAILED, report, run  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='conv')
ap.add_argument('--sizes', default='266,267,268,269')
ap.add_argument('--runs', type=int, default=3)
ap.add_argument('--variants', default='plain,warm')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
ENV = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync', 'GPUTRACE_CUPTI': '0'}
GiB = 2 ** 30

FLAGS = {'plain': [], 'warm': ['--warm-libs'], 'trim': ['--empty-cache']}
VARIANTS = a.variants.split(',')
plan = [(bs, v, k) for bs in map(int, a.sizes.split(',')) for v in VARIANTS for k in range(a.runs)]
random.Random(31).shuffle(plan)
results = {}   # (bs, variant) -> [fits...]
failures = []
for bs, variant, k in plan:
    db = os.path.join(a.out, 'bs%d-%s-%d.db' % (bs, variant, k))
    if os.path.exists(db):
        os.remove(db)
    argv = [sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model, '--batch-size', str(bs),
            '--steps', '3'] + FLAGS[variant]
    p = run(argv, shim=shim, db=db, env_extra=ENV, timeout=300)
    ok = p.returncode == 0
    results.setdefault((bs, variant), []).append(ok)
    line = 'bs %d %s run %d: %s (%.1f s)' % (bs, variant, k, 'fits' if ok else 'failed', p.wall)
    if not ok:
        last = [l for l in p.stderr.strip().splitlines() if 'Error' in l or 'error' in l][-1:] or p.stderr.strip().splitlines()[-1:]
        o = run([gputrace, 'oom', '--json', db], timeout=120)
        try:
            f = json.loads(o.stdout)['failures']
        except (ValueError, KeyError):
            f = []
        end = f[0] if f else {}
        pool = [b for b in end.get('ledger', []) if b.get('kind') == 'pool']
        failures.append(dict(bs=bs, variant=variant, call=end.get('api'), requested=end.get('requested_bytes'),
                             short_by=end.get('short_by_bytes'), pool_unused=end.get('pool_unused_bytes'),
                             pool_split=end.get('pool_split_bytes'), iteration=end.get('iteration'),
                             lower_bound=end.get('requested_is_lower_bound'), rolled=end.get('chunks_rolled_back'),
                             live_count=sum(x.get('count', 0) for x in end.get('sites', []) if x.get('memory') == 'pool'),
                             reserved=pool[0]['bytes'] if pool else None,
                             in_use=pool[0].get('in_use_bytes') if pool else None, said=last))
        line += ' in iteration %s: %s of %s; pool %s reserved, %s in use; short by %s; pool_unused %s; pool_split %s; %s' % (
            end.get('iteration'),
            end.get('api'), end.get('requested_bytes'), pool and '%.2f GiB' % (pool[0]['bytes'] / GiB),
            pool and pool[0].get('in_use_bytes') is not None and '%.2f GiB' % (pool[0]['in_use_bytes'] / GiB),
            end.get('short_by_bytes'), end.get('pool_unused_bytes'), end.get('pool_split_bytes'), last)
    print('   ' + line, flush=True)

print('\n| batch size | ' + ' | '.join('%s: fit' % v for v in VARIANTS) + ' |\n|---|' + '---|' * len(VARIANTS))
for bs in map(int, a.sizes.split(',')):
    print('| %d | ' % bs + ' | '.join('%d of %d' % (sum(results.get((bs, v), [])), len(results.get((bs, v), [])))
                                      for v in VARIANTS) + ' |')
outside = [f for f in failures if f['call'] and 'Async' not in f['call'] and f['short_by'] and   # not a pool's call
           f['reserved'] is not None and f['in_use'] is not None and f['reserved'] - f['in_use'] >= f['short_by']]
report(all(f['pool_unused'] is not None for f in outside),
       'oom names the pool\'s unused reserve for every failure outside it that the reserve would have covered',
       '%d such failures of %d, named %d' % (len(outside), len(failures),
                                           sum(f['pool_unused'] is not None for f in outside)))
# (not under trim: a pool that gave memory back has no reading that bounds its reservation below)
thresholds = set()
for bs, variant, k in plan:
    db = os.path.join(a.out, 'bs%d-%s-%d.db' % (bs, variant, k))
    if os.path.exists(db):
        con = sqlite3.connect(db)
        thresholds |= {r[0] for r in con.execute("SELECT DISTINCT release_threshold FROM memory_pools WHERE op = 'sampled'")}
        con.close()
report(thresholds == {2 ** 63 - 1}, 'the pool\'s readings carry its release threshold, UINT64_MAX as PyTorch sets it',
       'thresholds read: %s' % sorted(thresholds, key=lambda v: (v is None, v)))
split = [f for f in failures if f['variant'] != 'trim' and f['call'] and 'Async' in f['call'] and f['requested'] and f['short_by'] and
         f['reserved'] is not None and f['in_use'] is not None and
         f['reserved'] - f['in_use'] >= f['requested'] + f['live_count'] * 2 * 2 ** 20]
report(all(f['pool_split'] is not None for f in split),
       'oom names the pool\'s unused reserve for every failure of its own request that the reserve would have held',
       '%d such failures of %d, named %d' % (len(split), len(failures), sum(f['pool_split'] is not None for f in split)))
# under cudaMallocAsync nothing rolls back: a tensor of the pool that failed after one
# of its size fitted is its own request (session 33: oom read 8.38 GiB as a growth of 16.75)
own = [f for f in failures if f['call'] and 'Async' in f['call']]
report(all(not f['lower_bound'] and not f['rolled'] for f in own),
       'oom reads every failure of the pool\'s own request as the request itself, no rolled-back growth',
       '%d such failures; requests %s' % (len(own), sorted({f['requested'] for f in own})))
for v in VARIANTS:
    got = [x for (bs, w), xs in results.items() if w == v for x in xs]
    print('   finding: %s fit %d of %d runs' % (v, sum(got), len(got)))
print('all checks passed' if not FAILED else '%d checks failed' % len(FAILED))
sys.exit(1 if FAILED else 0)
