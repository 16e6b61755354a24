"""GPU check of issue 11's largest batch on a model of our own (sweep_models.py):
- batch sizes 2..10 (--batch-sizes) traced in one process (answers_train.py, --steps 3 each,
  a loss.item() per step as a logging loop has) under --alloc (async:
  backend:cudaMallocAsync; default; expandable: expandable_segments:True);
- `gputrace peak`'s figures per traced batch size: the peak in use, the pool's
  reservation read after it and the slack (reservation - in use); the fitted
  peak and slack lines, available, margin, safety; the largest batch P, or
  the reason none is given;
- P against the real largest batch R, found with plain runs of sweep_models.py
  without the tracer (one fresh process each, same allocator, --steps 3):
  with --truth N (a boundary found before), only N and N+1, each twice; the
  check fails if N does not fit twice or N+1 does not fail twice (then the
  boundary moved: run without --truth). Without --truth: from P up to a
  failing batch, bisection, the boundary pair twice (library workspaces vary
  with free memory). PASS: P <= R and P >= 97% of R;
- --mixed (default allocator): batch sizes 8, 2, 6, 4, 10 in one process give
  no number and list the new highs (8 and 10 on the H100), nothing else;
  in ascending order (without --mixed) no number either: each peak holds the
  segments the batch sizes before it reserved (carried_bytes);
- PyTorch's own counters of a plain run at P and at R (max_reserved -
  max_allocated: the slack in a fresh process) beside the slack line there;
- the ledger of the traced run beside NVML (summary --json).
A process start costs 10-16 s on the H100: with --truth about 2 minutes, a
bisection about 3-4. The GPU must be otherwise idle (other processes move the
boundary).
usage: check_answers.py --build BUILD --out DIR [--model conv|transformer]
       [--alloc async|default|expandable] [--truth N] [--batch-sizes A,B,..] [--mixed]
       [--traced-only]   (the traced run and peak's answer alone, under a minute)"""
import argparse
import json
import math
import os
import sys

from gpucheck import counters, finish, out_of_memory, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='conv', choices=('conv', 'transformer'))
ap.add_argument('--alloc', default='async', choices=('async', 'default', 'expandable'))
ap.add_argument('--truth', type=int, help='the real largest batch found before: only it and the next one are run, twice')
ap.add_argument('--batch-sizes', default='2,3,4,5,6,7,8,9,10',
                help='the batch sizes traced in one process, in order (e.g. nearer the boundary: 40,60,80,100,120)')
ap.add_argument('--mixed', action='store_true', help='only the default allocator in the mixed order 8, 2, 6, 4, 10')
ap.add_argument('--traced-only', action='store_true', help='the traced run and peak\'s answer alone: no plain runs')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
ALLOC = {'async': {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'}, 'default': {},
         'expandable': {'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True'}}
MiB = 2 ** 20
TAG = '%s %s' % (a.model, a.alloc)


def mib(b):
    return 'n/a' if b is None else '%.1f MiB' % (b / MiB)


def analyze(cmd, db):
    p = run([gputrace, cmd, '--json', db], timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        print('   %s: rc %d %s' % (cmd, p.returncode, p.stderr[-500:]))
        return None


def traced(name, batch_sizes, env):
    db = os.path.join(a.out, name + '.db')
    if os.path.exists(db):
        os.remove(db)
    p = run([sys.executable, os.path.join(here, 'answers_train.py'), '--model', a.model, '--steps', '3',
             '--batch-sizes', ','.join(map(str, batch_sizes))], shim=shim, db=db, env_extra=env, timeout=300)
    report(p.returncode == 0, '%s: traced run' % name,
           'rc %d, %.1f s %s' % (p.returncode, p.wall, p.stderr[-300:] if p.returncode else ''))
    return db if p.returncode == 0 else None


RUNS = []
FRESH = {}   # batch size -> PyTorch's counters of a plain run that fitted


def fits(bs):
    """A plain run (no tracer) of batch size bs under the allocator: 3 steps."""
    p = run([sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model, '--batch-size', str(bs),
             '--steps', '3'], env_extra=ALLOC[a.alloc], timeout=300)
    ok = p.returncode == 0
    if not ok and not out_of_memory(p.stderr):
        raise RuntimeError('batch size %d: exit status %d: %s' % (bs, p.returncode, p.stderr.strip()[-400:]))
    RUNS.append('%d%s (%.0f s)' % (bs, '' if ok else ' OOM', p.wall))
    if ok:
        FRESH[bs] = counters(p.stdout)
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


def truth_holds(n):
    """n fits twice, n + 1 fails twice (the boundary given by --truth)."""
    return all([fits(n), fits(n), not fits(n + 1), not fits(n + 1)])


def print_figures(pk):
    """Per traced batch size: in use, reservation, slack; the lines and the room."""
    slack = pk.get('pool_slack') or {}
    read = {b['batch_size']: b for b in slack.get('by_batch_size', [])}
    print('   batch  in-use peak     reserved        slack')
    for b in pk['by_batch_size']:
        r = read.get(b['batch_size'], {})
        print('   %5d  %12s %12s %12s' % (b['batch_size'], mib(b['peak_bytes']), mib(r.get('reserved_bytes')),
                                         mib(r.get('slack_bytes'))))
    fit = pk['fit']
    print('   peak fit: %s' % (fit and '%s + %s x bs (R^2 %.5f)' % (mib(fit['fixed_bytes']), mib(fit['per_sample_bytes']),
                                                                   fit['r2'])))
    sf = slack.get('fit')
    print('   slack fit: %s' % (sf and '%s + %s x bs%s, residual deviation %s, step %s' % (
        mib(sf['fixed_bytes']), mib(sf['per_sample_bytes']), ' (shrank: kept fixed)' if sf['shrank_kept_fixed'] else '',
        mib(sf['residual_deviation_bytes']), mib(sf['granularity_bytes']))))
    room = pk['room']
    print('   available %s (total %s from %s, held outside %s, beside %s); margin %s = slack %s + safety %s + rounding'
          % (mib(pk['available_bytes']), mib(room['total_bytes']), room['total_from'], mib(room['held_outside_trace_bytes']),
             mib(room['beside_level_bytes']), mib(pk['margin_bytes']), mib(room['pool_slack_bytes']),
             mib(room['safety_bytes'])))


if a.mixed:
    # the default allocator, mixed order: no number, the new highs listed
    db = traced('default-mixed-%s' % a.model, [8, 2, 6, 4, 10], {})
    pk = analyze('peak', db) if db else None
    if pk:
        highs = [h['batch_size'] for h in pk['new_highs']]
        print('   new highs: ' + ', '.join('bs %s: %d B (+%d B, %d kept)' % (h['batch_size'], h['peak_bytes'], h['added_bytes'],
                                                                          h['kept_allocations']) for h in pk['new_highs']))
        report(pk['max_batch_size'] is None, 'default mixed order: no number', str(pk['max_batch_size_withheld']))
        report(pk['peaks_follow_history'] and highs[:1] == [8] and 10 in highs and not {2, 4, 6} & set(highs),
               'default mixed order: new highs listed', 'new highs at batch sizes %s (expected 8 and 10)' % highs)
    finish()

TRACED = [int(b) for b in a.batch_sizes.split(',')]
db = traced('%s-%s-%d-%d' % (a.model, a.alloc, TRACED[0], TRACED[-1]), TRACED, ALLOC[a.alloc])
pk = analyze('peak', db) if db else None
if pk:
    print_figures(pk)
    P = pk['max_batch_size']
    print('   %s: peak prints %s%s' % (TAG, P, '' if P is not None else ' (' + str(pk['max_batch_size_withheld']) + ')'))
    print('   held through the loop %s; fixed part %s' % (mib(pk['room'].get('held_through_loop_bytes')),
                                                          mib(pk['fit'] and pk['fit']['fixed_bytes'])))
    if a.alloc == 'async':
        report(P is not None, '%s: peak prints a largest batch' % TAG,
               'P = %s%s' % (P, '' if P is not None else ': ' + str(pk['max_batch_size_withheld'])))
    if a.alloc == 'default':
        # issue 11 part 3: a fit over batch sizes in one process under the
        # caching allocator models its history, in ascending order too (the
        # segments earlier batch sizes reserved stay in its cache)
        report(P is None and pk['peaks_follow_history'] and pk['fit'] is None,
               '%s: no number from batch sizes in one process under the caching allocator' % TAG,
               'P = %s; carried %s at batch size %s; %s' % (P, mib(pk.get('carried_bytes')), pk.get('carried_batch_size'),
                                                           pk['max_batch_size_withheld']))
    if a.traced_only:
        finish()
    try:
        if P is None:
            R = None
        elif a.truth:
            R = a.truth
            report(truth_holds(R), '%s: the boundary given holds' % TAG, '%d fits twice, %d fails twice' % (R, R + 1))
        else:
            R, again = real_largest(P)
            report(again, '%s: the boundary pair repeats' % TAG, '%d fits, %d does not, run twice' % (R, R + 1))
        if RUNS:
            print('   plain runs: ' + ', '.join(RUNS))
        # the truth about the slack: a fresh process at the boundary, by
        # PyTorch's own counters (under cudaMallocAsync: the pool's
        # reservation and bytes in use at their highs), beside the line
        sf = (pk.get('pool_slack') or {}).get('fit')
        for bs in sorted(FRESH):
            if bs in (P, R) and 'max_reserved' in FRESH[bs]:
                c = FRESH[bs]
                print('   fresh process at batch %d: max_reserved %s, max_allocated %s, slack %s; the slack line there %s'
                      % (bs, mib(c['max_reserved']), mib(c['max_allocated']), mib(c['max_reserved'] - c['max_allocated']),
                         mib(sf and sf['fixed_bytes'] + sf['per_sample_bytes'] * bs)))
        if R:
            report(P <= R and P >= 0.97 * R, '%s: never over, within 3%%' % TAG, 'P %d, real %d (%.2f%%)' % (P, R, 100.0 * P / R))
    except RuntimeError as e:
        report(False, '%s: real largest batch' % TAG, str(e))
    summ = analyze('summary', db)
    for led in (summ or {}).get('ledger', []):
        for x in led['instants']:
            print('   ledger device %d at %s: %s; accounted %s, NVML process %s, unaccounted %s, other processes %s' % (
                led['device'], x['instant'], ', '.join('%s %d' % (b['name'], b['bytes']) for b in x['buckets']),
                x['accounted_bytes'], x['nvml_process_bytes'], x['unaccounted_bytes'], x['other_processes_bytes']))
finish()
