"""GPU check of issue 11's answers on a conv net of our own (sweep_models.py):
- backend:cudaMallocAsync, batch sizes 2..10 traced in one process
  (answers_train.py): `gputrace peak` prints a largest batch P, and P <= the
  real largest batch R and P >= 97% of R. R is found with plain runs of
  sweep_models.py without the tracer, one fresh process each, same allocator:
  P first, then up from it to a failing batch, then bisection; the boundary
  pair (R fits, R+1 does not) is run twice (library workspaces vary with free
  memory);
- the default allocator, batch sizes 8, 2, 6, 4, 10 in one process: `peak`
  prints no number (peaks follow the allocator's history) and lists the
  batch sizes that reached a new high (the issue's H100 run: 8 and 10);
- the ledger of the cudaMallocAsync run beside NVML (summary --json): the
  buckets, NVML's figure for the process, what is unaccounted (figures).
A process start costs 10-16 s on the H100: about 10-12 runs, 3 minutes.
The GPU must be otherwise idle (other processes move the boundary).
usage: check_answers.py --build BUILD --out DIR [--model conv]"""
import argparse
import json
import math
import os
import sys

from gpucheck import finish, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='conv')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
ASYNC = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'}
MiB = 2 ** 20


def analyze(cmd, db):
    p = run([gputrace, cmd, '--json', db], timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        print('   %s: rc %d %s' % (cmd, p.returncode, p.stderr[-500:]))
        return None


def traced(name, batch_sizes, env):
    db = os.path.join(a.out, name + '.db')
    p = run([sys.executable, os.path.join(here, 'answers_train.py'), '--model', a.model, '--batch-sizes',
             ','.join(map(str, batch_sizes))], shim=shim, db=db, env_extra=env, timeout=300)
    report(p.returncode == 0, '%s: traced run' % name, 'rc %d, %.1f s %s' % (p.returncode, p.wall, p.stderr[-300:] if p.returncode else ''))
    return db if p.returncode == 0 else None


RUNS = []


def fits(bs):
    """A plain run (no tracer) of batch size bs under cudaMallocAsync: 3 steps."""
    p = run([sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model, '--batch-size', str(bs),
             '--steps', '3'], env_extra=ASYNC, timeout=300)
    ok = p.returncode == 0
    if not ok and 'out of memory' not in p.stderr.lower():
        raise RuntimeError('batch size %d: exit status %d: %s' % (bs, p.returncode, p.stderr.strip()[-400:]))
    RUNS.append('%d%s (%.0f s)' % (bs, '' if ok else ' OOM', p.wall))
    return ok


def real_largest(start):
    """The largest batch that fits, from start: up to a failure, then bisection; boundary pair twice."""
    lo, hi = 0, None
    if fits(start):
        lo, step = start, max(2, int(math.ceil(start * 0.031)))
        while fits(lo + step):
            lo, step = lo + step, step * 2
        hi = lo + step
    else:
        hi = start
        lo = max(1, int(start * 0.9))
        while not fits(lo):
            hi, lo = lo, max(1, lo // 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    again = fits(lo) and not fits(hi)
    return lo, again


# 1. cudaMallocAsync, batch sizes 2..10 in one process
db = traced('async-2-10', list(range(2, 11)), ASYNC)
pk = analyze('peak', db) if db else None
if pk:
    fit = pk['fit']
    print('   fit: %s; available %s, margin %s; room %s' % (
        fit and '%.1f MiB + %.3f MiB x bs (R^2 %.5f)' % (fit['fixed_bytes'] / MiB, fit['per_sample_bytes'] / MiB, fit['r2']),
        pk['available_bytes'], pk['margin_bytes'], json.dumps(pk['room'])))
    P = pk['max_batch_size']
    report(P is not None, 'async: peak prints a largest batch', 'P = %s%s' % (P, '' if P is not None else ': ' + str(pk['max_batch_size_withheld'])))
    if P:
        try:
            R, again = real_largest(P)
            print('   plain runs: ' + ', '.join(RUNS))
            report(P <= R and P >= 0.97 * R, 'async: never over, within 3%', 'P %d, real %d (%.2f%%)' % (P, R, 100.0 * P / R))
            report(again, 'async: the boundary pair repeats', '%d fits, %d does not, run twice' % (R, R + 1))
        except RuntimeError as e:
            report(False, 'async: real largest batch', str(e))
    summ = analyze('summary', db)
    for led in (summ or {}).get('ledger', []):
        for x in led['instants']:
            print('   ledger device %d at %s: %s; accounted %s, NVML process %s, unaccounted %s, other processes %s' % (
                led['device'], x['instant'], ', '.join('%s %d' % (b['name'], b['bytes']) for b in x['buckets']),
                x['accounted_bytes'], x['nvml_process_bytes'], x['unaccounted_bytes'], x['other_processes_bytes']))

# 2. the default allocator, mixed order
db = traced('default-mixed', [8, 2, 6, 4, 10], {})
pk = analyze('peak', db) if db else None
if pk:
    highs = [h['batch_size'] for h in pk['new_highs']]
    print('   new highs: ' + ', '.join('bs %s: %d B (+%d B, %d kept)' % (h['batch_size'], h['peak_bytes'], h['added_bytes'],
                                                                      h['kept_allocations']) for h in pk['new_highs']))
    report(pk['max_batch_size'] is None, 'default mixed order: no number', str(pk['max_batch_size_withheld']))
    report(pk['peaks_follow_history'] and highs[:1] == [8] and 10 in highs and not {2, 4, 6} & set(highs),
           'default mixed order: new highs listed', 'new highs at batch sizes %s (expected 8 and 10)' % highs)
finish()
