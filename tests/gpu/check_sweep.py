"""GPU check of `gputrace sweep` (issue 13) on a workload of our own
(sweep_models.py: a conv net or a transformer, --steps 3, whose largest batch
is about 150-180 on an 80 GB H100 because their activations per sample are
large), under PyTorch's default caching allocator or
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync or expandable_segments:True;
one (model, allocator) pair
per call, about 4-6 minutes of GPU time:
- the sweep proves a largest batch size N (verified, exit status 0);
- an independent check with plain runs of the same command, without the
  tracer, each a fresh process: N fits and N+1 runs out of memory (where
  the sweep saw N+1 both fit and fail, once in --repeat runs; with
  --bisect: a full bisection over [N/2, 2N+2], both ends run first, the
  bracket widened if the boundary is not inside, the largest that fit run
  once more and the search taken lower if it fails: about 9 more runs;
  then, since under cudaMallocAsync a batch size can fit in some fresh
  processes and not in others, every size from one below the lower of the
  two answers to one above the higher is run until it has --repeat plain
  runs (default 3): the truth is the largest size that fit in all of its
  runs while the next one failed at least once, and each size's count of
  fits is printed (the band where the boundary is unsteady), and while no
  size of the band fit in all its runs, it widens down one size at a time
  (at most 6); when the
  sweep took a margin (the runs of the largest size M that fit peaked half
  a sample or more apart, or another large run held more of the pool's
  slack, so it answered N below M), the truth must lie in
  [N, M] instead of equal N (without --bisect: N fits, M+1 does not);
- issue 11's rule where the boundary is a band (cudaMallocAsync): the answer
  N fits in each of --repeat plain runs (never over), and some size in
  (N, floor(N / 0.97) + 1] ran out of memory in a run, the sweep's or a
  plain one (so N is at least 97% of the largest size that fits every time);
  a plain run of floor(N / 0.97) + 1 up to --repeat times where none had;
- side by side on the same model and data, Lightning's BatchSizeFinder
  (Tuner.scale_batch_size, mode binsearch, steps_per_trial 3, init_val 2,
  no margin) in one process (lightning_finder.py): the batch size it finds,
  its trials, its wall time; a check that the sweep used fewer runs than it
  had trials;
- what a process start costs each of our runs, which Lightning's in-process
  trials do not pay, measured two ways: per traced run of the sweep that fit,
  its wall time (as the sweep timed it) less its training loop's own time
  (sweep_models.py prints steps_seconds): Python, torch, the CUDA context,
  the model, the tracer's start and its trace's closing, exit; and one plain
  run with --steps 0, without the tracer.
The GPU must be otherwise idle (other processes' memory moves the boundary
between runs).
usage: check_sweep.py --build BUILD --out DIR [--models conv|transformer|gpt2]
                      [--alloc default|async|expandable] [--bisect [--repeat K]]
                      [--sweep-repeat K] [--no-lightning]
(--models and --alloc take comma lists too; each pair costs its minutes.)"""
import argparse
import json
import math
import os
import shutil
import statistics
import sys
import time

from gpucheck import counters, finish, out_of_memory, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--models', default='conv')
ap.add_argument('--alloc', '--modes', dest='alloc', default='default')
ap.add_argument('--bisect', action='store_true', help='a full independent bisection, not only N and N+1')
ap.add_argument('--repeat', type=int, default=3,
                help='with --bisect: plain runs of each size around the two answers (the unsteady band)')
ap.add_argument('--sweep-repeat', type=int, default=None,
                help='passed to gputrace sweep as --repeat (fits that prove the largest; the sweep\'s default 2)')
ap.add_argument('--no-lightning', action='store_true', help='skip Lightning\'s BatchSizeFinder (minutes)')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
MODES = {'default': None, 'async': 'backend:cudaMallocAsync', 'expandable': 'expandable_segments:True'}
ROWS = []


def command(model, bs, steps=3, free=False):
    return [sys.executable, os.path.join(here, 'sweep_models.py'), '--model', model, '--batch-size', str(bs),
            '--steps', str(steps)] + (['--report-free'] if free else [])


def env_of(mode):
    return {'PYTORCH_CUDA_ALLOC_CONF': MODES[mode]} if MODES[mode] else {}


class Bisection:
    """Plain runs (no tracer), one fresh process each: does batch size bs fit?"""

    def __init__(self, model, mode):
        self.model, self.mode, self.runs, self.seconds, self.failed = model, mode, [], 0.0, None

    def fits(self, bs):
        p = run(command(self.model, bs), env_extra=env_of(self.mode), timeout=300)
        self.seconds += p.wall
        ok = p.returncode == 0
        # each run as it ends: a call cut by the device's time limit still shows what ran
        print('     plain run: batch size %d %s (%.1f s)' % (bs, 'fits' if ok else 'OOM or failed', p.wall), flush=True)
        if not ok and not out_of_memory(p.stderr):
            self.failed = 'batch size %d: exit status %d: %s' % (bs, p.returncode, p.stderr.strip()[-500:])
            raise RuntimeError(self.failed)
        self.runs.append((bs, ok))
        return ok

    def search(self, n):
        """The largest batch size that fit every time it ran: bisecting [n/2, 2n+2]
        after checking both ends, the largest that fit run once more (as the sweep
        does: on one H100, batch 151 of the transformer under cudaMallocAsync fit in
        1 to 2 of 4 runs traced or not), and the search goes on below it if it fails."""
        lo, hi = max(1, n // 2), 2 * n + 2
        while lo > 0 and not self.fits(lo):
            hi, lo = lo, lo // 2
        if lo == 0:
            return 0
        while self.fits(hi):
            lo, hi = hi, 2 * hi
        while True:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.fits(mid):
                    lo = mid
                else:
                    hi = mid
            if self.fits(lo):
                return lo
            hi = lo   # fit once, not again: below it, the largest that never failed
            steady = [bs for bs, _ in self.runs if bs < hi and all(ok for b, ok in self.runs if b == bs)]
            lo = max(steady) if steady else 0
            if lo == 0:
                return 0


    def band(self, n, found, k):
        """Every size from one below min(n, found) to one above max(n, found)
        run until it has k runs, and while none of them fit in all its runs,
        the band widened down one size at a time (at most 6); returns ({size:
        (fits, runs)}, the largest size that fit in all its runs while the
        next failed at least once, or None)."""
        low, high = max(1, min(n, found) - 1), max(n, found) + 1
        while True:
            sizes = range(low, high + 1)
            for bs in sizes:
                while sum(1 for b, _ in self.runs if b == bs) < k:
                    self.fits(bs)
            count = {bs: (sum(ok for b, ok in self.runs if b == bs), sum(1 for b, _ in self.runs if b == bs))
                     for bs in sizes}
            steady = [bs for bs in sizes if bs + 1 in count and count[bs][0] == count[bs][1]
                      and count[bs + 1][0] < count[bs + 1][1]]
            # no size in the band fit every time (session 25: 150 to 153): the
            # band goes on down, one size at a time, at most 6 below it
            if steady or low <= max(1, min(n, found) - 7):
                return count, (max(steady) if steady else None)
            low -= 1


def printed(doc, r, key):
    """What a run of the sweep printed as key=value on its stdout (bsB-runN.stdout, kept by the sweep); None."""
    path = os.path.join(doc['dir'], 'bs%d-run%d.stdout' % (r['batch_size'], r['run']))
    try:
        with open(path) as f:
            return counters(f.read()).get(key)
    except OSError:
        return None


def start_costs(doc):
    """Per traced run that fit: its wall time less its training loop's."""
    out = []
    for r in doc['runs']:
        steps_s = None if r['oom'] or r['exit_status'] else printed(doc, r, 'steps_seconds')
        if steps_s is not None:
            out.append(r['seconds'] - steps_s)
    return out


def check_headroom(name, doc):
    """The sweep's headroom (what the answer's tightest run left of the device
    at its peak, by NVML) against what those runs saw free after their loop
    (torch.cuda.mem_get_info; the allocator keeps what it reserved, so the
    same memory): never more, and less by under a sample."""
    h = doc.get('headroom')
    free = [printed(doc, r, 'device_free') for r in doc['runs']
            if r['batch_size'] == doc['max_batch_size'] and not r['oom'] and not r['exit_status']]
    free = [int(v) for v in free if v is not None]
    if not h or not free:
        report(False, '%s: the sweep says the answer\'s headroom' % name,
               'headroom %s; device_free printed by the runs %s' % (h, free))
        return
    least = min(free)
    ok = h['bytes'] <= least + 2 * 2**20 and least - h['bytes'] < (h['sample_bytes'] or 0)
    report(ok, '%s: the headroom the sweep says is at most what the answer\'s runs saw free after their loop, '
               'and short of it by under a sample' % name,
           'headroom %.3f GiB (%.2f of a sample of %.3f GiB; one sample at %s), free after the loop %s GiB' % (
               h['bytes'] / 2**30, h['samples'] or 0, (h['sample_bytes'] or 0) / 2**30, h['one_sample_batch_size'],
               ', '.join('%.3f' % (f / 2**30) for f in free)))


def sweep(model, mode):
    d = os.path.join(a.out, 'sweep-%s-%s' % (model, mode))
    shutil.rmtree(d, ignore_errors=True)
    argv = [gputrace, 'sweep', '--json', '--dir', d] + (
        ['--repeat', str(a.sweep_repeat)] if a.sweep_repeat else []) + ['--'] + command(model, '{bs}', free=True)
    p = run(argv, env_extra=env_of(mode), timeout=420)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    print('   sweep progress:\n     ' + '\n     '.join(l for l in p.stderr.splitlines() if l.startswith('gputrace')))
    return p, doc


def lightning(model, mode):
    p = run([sys.executable, os.path.join(here, 'lightning_finder.py'), '--model', model], env_extra=env_of(mode),
            timeout=300)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), p
    except (ValueError, IndexError):
        return None, p


def plain_boundary(b, n, top, unsteady):
    """Without --bisect: n when n fits in a plain run and top + 1 does not.
    A top + 1 that the sweep saw both fit and fail is in the band where fresh
    runs differ (session 28: 268 fit 1 of 2 sweep runs and a plain run): it
    must fail in one of --repeat plain runs. An answer n below a margin
    (top > n: the pool's draw, a spread) must fit in each of --repeat plain
    runs: that room is what it is for."""
    for _ in range(a.repeat if top > n else 1):
        if not b.fits(n):
            return None
    for _ in range(a.repeat if top + 1 in unsteady else 1):
        if not b.fits(top + 1):
            return n
    return None


def check_within(name, doc, b, n):
    """Issue 11's rule for a boundary that is a band: never over (n fits in
    each of --repeat plain runs) and at least 97% of the truth, the largest
    size below which every size fits every time (the band need not be
    monotone: the conv net's 277 fit every run while 266-269 failed half
    theirs, session 30): shown by a failure, in any run (the sweep's or a
    plain one), of a size s with n < s <= floor(n / 0.97) + 1, since then
    the truth is at most s - 1 <= n / 0.97. Without one, floor(n / 0.97) + 1
    runs plain until it fails, --repeat times at most (session 30's first
    version stopped at floor(n / 0.97): 267 fitting 3 times did not refute
    259, which is 97.004% of 267)."""
    while sum(1 for bs, _ in b.runs if bs == n) < a.repeat:
        b.fits(n)
    n_runs = [f for bs, f in b.runs if bs == n]
    top = int(math.floor(n / 0.97)) + 1
    failed = sorted({r['batch_size'] for r in doc['runs'] if r['oom'] and n < r['batch_size'] <= top} |
                    {bs for bs, f in b.runs if not f and n < bs <= top})
    while not failed and sum(1 for bs, _ in b.runs if bs == top) < a.repeat:
        if not b.fits(top):
            failed = [top]
    ok = all(n_runs) and bool(failed)
    report(ok, '%s: never over and within 3%% of the truth (%d fits in each of %d plain runs; a size in (%d, %d] '
               'ran out of memory in some run, so the largest that always fits is below it)' % (
                   name, n, a.repeat, n, top),
           '%d: %d of %d plain runs fit; failed in (%d, %d]: %s' % (
               n, sum(n_runs), len(n_runs), n, top, ', '.join(map(str, failed)) or 'none'))


def check(model, mode):
    name = '%s/%s' % (model, mode)
    t0 = time.monotonic()
    plain_start = run(command(model, 1, steps=0), env_extra=env_of(mode), timeout=300).wall
    p, doc = sweep(model, mode)
    ok = p.returncode == 0 and doc is not None and doc['verified']
    report(ok, '%s: sweep proves the largest batch size' % name,
           'rc %d; %s' % (p.returncode, 'largest %s (fit %s of %s runs needed), predicted %s, runs %d, %.1f s; fit %s' % (
               doc['max_batch_size'], doc.get('max_batch_size_fits'), doc.get('fits_required'),
               doc['predicted_max_batch_size'], doc['runs_used'], doc['total_seconds'],
               doc['fit'] and '%.1f MiB + %.2f MiB x bs over %s..%s, linear %s' % (
                   doc['fit']['fixed_bytes'] / 2**20, doc['fit']['per_sample_bytes'] / 2**20,
                   doc['fit']['from_batch_size'], doc['fit']['to_batch_size'], doc['fit']['linear']))
               if doc else p.stderr[-800:]))
    if not doc or not doc.get('max_batch_size'):
        return
    def failed(r):   # how the run failed, as the sweep read its trace
        if r.get('pool_unused_bytes') is not None:
            return ' OOM outside the pool'
        if r.get('pool_split_bytes') is not None:
            return ' OOM in the pool with %.2f GiB unused' % (r['pool_split_bytes'] / 2**30)
        return ' OOM'
    print('   runs: ' + ', '.join('%d%s%s' % (r['batch_size'], failed(r) if r['oom'] else '',
                                             ' (model)' if r['from_model'] else '') for r in doc['runs']))
    print('   peaks (GiB): ' + ', '.join('%d: %s' % (r['batch_size'], '%.2f' % (r['peak_bytes'] / 2**30) if not r['oom']
                                                   else '>= %.2f' % (r['needed_at_least_bytes'] / 2**30)
                                                   if r['needed_at_least_bytes'] is not None else 'OOM')
                                     for r in doc['runs']))
    pooled = [r for r in doc['runs'] if r.get('pool_in_use_bytes') is not None]
    if pooled:   # under a pool the peak is its reservation: the slack beside the bytes in use
        print('   pool (GiB): ' + ', '.join('%d: %s reserved, %.2f in use' % (
            r['batch_size'], '%.2f' % (r['peak_bytes'] / 2**30) if r['pool_read'] else 'not read',
            r['pool_in_use_bytes'] / 2**30) for r in pooled))
    starts = start_costs(doc)
    traced_start = statistics.median(starts) if starts else float('nan')
    print('   a process start costs: traced runs of the sweep %.1f s (median of %d: run wall less its steps), '
          'a plain run with --steps 0 %.1f s (Python, torch, CUDA context, model, exit)' % (
              traced_start, len(starts), plain_start))
    n = doc['max_batch_size']
    margin = doc.get('margin')
    # with a margin taken (runs of the largest that fit peaked half a sample or
    # more apart), the sweep answers below that size M on purpose: then the
    # plain boundary must lie in [N, M] (N fits, M+1 runs out of memory)
    top = margin['batch_size'] if margin and margin['taken'] else n
    if margin:
        print('   margin: %d fit %d times, peaks %.2f GiB apart, room %.2f GiB for %s (a pool\'s draw %s GiB, '
              'left %s GiB), a sample %.2f GiB; taken %s' % (
                  margin['batch_size'], margin['fits'], margin['spread_bytes'] / 2**30, margin['room_bytes'] / 2**30,
                  margin.get('room_for'), '%.2f' % (margin['pool_draw_bytes'] / 2**30)
                  if margin.get('pool_draw_bytes') is not None else '-',
                  '%.3f' % (margin['left_bytes'] / 2**30) if margin.get('left_bytes') is not None else '-',
                  margin['per_sample_bytes'] / 2**30, margin['taken']))
    if doc.get('pool_slack'):
        ps = doc['pool_slack']
        print('   pool slack beyond its fixed part (share of in use, %d large runs): %.2f%% to %.2f%% (the most at %d), '
              'the largest\'s own %.2f%%' % (ps['runs'], 100 * ps['min_share'], 100 * ps['max_share'],
                                             ps['max_share_batch_size'], 100 * ps['largest_share']))
    check_headroom(name, doc)
    b = Bisection(model, mode)
    counts = None
    try:
        truth = b.search(n) if a.bisect else plain_boundary(b, n, top, {u['batch_size'] for u in doc['unsteady']})
        if a.bisect and truth:
            print('   independent bisection (one run a size): %d' % truth)
            counts, truth = b.band(n, truth, a.repeat)
    except RuntimeError:
        truth = None
    in_range = truth is not None and (truth == n if top == n else n <= truth <= top)
    report(in_range, '%s: sweep %s (plain runs, fresh processes)' % (
               name, ('== ' if top == n else '<= the truth <= the margin\'s size, the truth being ') + (
                   'the largest that fit in all of %d runs, the next failing once or more' % a.repeat
                   if a.bisect else 'N fits, N+1 runs out of memory (once in %d runs, if the sweep saw it unsteady)'
                   % a.repeat if top == n else 'N if it fits in each of %d runs and M+1 does not' % a.repeat)),
           'sweep %s, plain runs %s in %d runs, %.1f s: %s%s' % (
               n, truth, len(b.runs), b.seconds,
               b.failed or ', '.join('%d%s' % (bs, '' if f else ' OOM') for bs, f in b.runs),
               '; fits by size: ' + ', '.join('%d %d/%d' % (bs, f, r) for bs, (f, r) in sorted(counts.items()))
               if counts else ''))
    if not b.failed:
        try:
            check_within(name, doc, b, n)
        except RuntimeError:
            pass
    if a.no_lightning:
        print('   %s done in %.0f s (Lightning not run)' % (name, time.monotonic() - t0))
        return
    lt, lp = lightning(model, mode)
    if lt is None:
        report(False, '%s: Lightning BatchSizeFinder ran' % name, 'rc %d: %s' % (lp.returncode, lp.stderr[-1500:]))
        return
    report(doc['runs_used'] < lt['trials'], '%s: sweep needs fewer runs than Lightning binsearch trials' % name,
           'sweep %d runs (largest %d, proven), Lightning %d trials (found %s; batch sizes %s)' % (
               doc['runs_used'], n, lt['trials'], lt['batch_size'], lt['trial_batch_sizes']))
    ROWS.append((name, n, truth, doc['runs_used'], doc['total_seconds'], doc['runs_used'] * traced_start,
                 lt['batch_size'], lt['trials'], lt['find_seconds'], lt['process_seconds']))
    print('   %s done in %.0f s' % (name, time.monotonic() - t0))


for model in a.models.split(','):
    for mode in a.alloc.split(','):
        check(model, mode)

print('\n| workload | sweep: largest (proven) | plain runs | sweep runs | sweep wall | of which process starts | '
      'Lightning binsearch: found | trials | search wall | process wall |')
print('|---|---|---|---|---|---|---|---|---|---|')
for r in ROWS:
    print('| %s | %d | %s | %d | %.1f s | ~%.0f s | %s | %d | %.1f s | %.1f s |' % r)
finish()
