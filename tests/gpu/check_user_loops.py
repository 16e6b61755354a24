"""GPU check: answers on loops written the way users write them, none of which
the rules were tuned on (user_loops.py; no ranges, no code for the tracer):
- Hugging Face Trainer (default allocator and cudaMallocAsync), a gradient
  accumulation loop (cudaMallocAsync), a DataLoader with pinned memory and
  workers (default allocator): the iterations found automatically are the
  optimizer steps (accumulation: the optimizer steps or the micro-batches,
  shown), and `leaks` calls nothing a leak;
- generate() under no_grad: `leaks` calls nothing a leak (the iterations are
  shown: a generate() call or a decoded token are both loops);
- a loop that keeps every step's loss with its graph (cudaMallocAsync, ended
  by os._exit): `growth` says growing, its slope is what PyTorch's
  memory_allocated() grew a step (within 5%), the top growing site is the line
  of user_loops.py that makes the kept activations, and `leaks` leads with
  them (at least 80% of what the steps after the first kept);
- a conv net evaluated every 5 steps (both allocators; its evaluation is
  longer than a step), a GPT-2 trained on a
  new sequence length every step (both), an MLP that empties PyTorch's cache
  after every step, a conv net under float16 autocast with a GradScaler, an MLP
  under torch.compile (cudaMallocAsync), a 12-layer GPT-2's forward passes
  under no_grad (default allocator; and on a new sequence length every batch,
  both allocators): the iterations are the training steps or batches
  and nothing is a leak (growth, if any, only in steps at new highs of the
  default allocator's segments, told so);
- a loop that keeps each step's hidden features on the GPU (both allocators,
  ending normally): `growth` says growing, its slope is what
  memory_allocated() grew a step (cudaMallocAsync, within 5%) or half to
  one and a half times what memory_reserved() grew a step on average (the
  default allocator's segments come in 20 MiB steps), and the top growing
  site is the line that makes the features (cudaMallocAsync) or is told to
  be the request that needed a new segment (the default allocator: which
  request finds the cache full is chance);
- a loop tested on 30 batches after training, a Hugging Face Trainer that
  evaluates every 5 steps, activation checkpointing, cudnn.benchmark, a
  DataLoader whose last batch is smaller (one epoch, and three of 7 batches,
  both allocators): the iterations are the training steps and nothing is a
  leak;
- an MLP split across two GPUs in one process (both allocators; only where
  two GPUs are): each device's memory on its own device, as PyTorch counts
  it (default: the ledger's framework allocator at exit ==
  memory_reserved(d); cudaMallocAsync: the pool's peak ==
  max_memory_allocated(d)), the iterations the steps, and each device's
  ledger measures its context and adds up to NVML's figure for the process
  within 1% at exit, with the driver's own reservation told apart from other
  processes' memory (the lent machine runs nothing else: under 64 MiB).
About 6 minutes.
usage: check_user_loops.py --build BUILD --out DIR [--steps 20] [--cases a,b]"""
import argparse
import os

from gpucheck import report_json, counters, finish, fresh_db, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=20)
ap.add_argument('--cases', default='')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
ASYNC = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'}


CASES = [   # name, mode, env, iterations allowed (None: shown only)
    ('trainer-default', 'trainer', {}, lambda s: [s]),
    ('trainer-async', 'trainer', ASYNC, lambda s: [s]),
    ('accum-async', 'accum', ASYNC, lambda s: [s, 4 * s]),
    ('pinned-default', 'pinned', {}, lambda s: [s]),
    ('generate-default', 'generate', {}, None),
    ('leaky-async', 'leaky', ASYNC, None),
    ('evalevery-default', 'evalevery', {}, lambda s: [s]),
    ('evalevery-async', 'evalevery', ASYNC, lambda s: [s]),
    ('varlen-async', 'varlen', ASYNC, lambda s: [s]),
    ('varlen-default', 'varlen', {}, lambda s: [s]),
    ('emptycache-default', 'emptycache', {}, lambda s: [s]),
    ('amp-default', 'amp', {}, lambda s: [s]),
    ('compiled-async', 'compiled', ASYNC, lambda s: [s]),
    ('infer-default', 'infer', {}, lambda s: [s]),
    ('infer-varlen-default', 'infer-varlen', {}, lambda s: [s]),
    ('infer-varlen-async', 'infer-varlen', ASYNC, lambda s: [s]),
    ('keepfeat-default', 'keepfeat', {}, None),
    ('keepfeat-async', 'keepfeat', ASYNC, None),
    ('twoloops-default', 'twoloops', {}, lambda s: [s]),
    ('twoloops-async', 'twoloops', ASYNC, lambda s: [s]),
    ('hfeval-default', 'hfeval', {}, lambda s: [s]),
    ('hfeval-async', 'hfeval', ASYNC, lambda s: [s]),
    ('ckpt-async', 'ckpt', ASYNC, lambda s: [s]),
    ('ckpt-default', 'ckpt', {}, lambda s: [s]),
    ('cudnnbench-default', 'cudnnbench', {}, lambda s: [s]),
    ('lastbatch-async', 'lastbatch', ASYNC, lambda s: [s]),
    ('epochs-async', 'epochs', ASYNC, lambda s: [s]),
    ('epochs-default', 'epochs', {}, lambda s: [s]),
    ('split-default', 'split', {}, lambda s: [s]),
    ('split-async', 'split', ASYNC, lambda s: [s]),
]
try:   # the GPUs, without a CUDA context of this process
    gpus = sum(1 for line in os.popen('nvidia-smi -L 2>/dev/null') if line.startswith('GPU '))
except OSError:
    gpus = 0
only = set(c for c in a.cases.split(',') if c)
for name, mode, env, allowed in CASES:
    if only and name not in only:
        continue
    if mode == 'split' and gpus < 2:
        print('   %s: skipped (%d GPU)' % (name, gpus))
        continue
    db = fresh_db(a.out, name)
    p = run(['python3', os.path.join(here, 'user_loops.py'), mode, '--steps', str(a.steps)], shim=shim, db=db,
            env_extra=dict(env, GPUTRACE_QUIET='1'))
    c = counters(p.stdout)
    if p.returncode != 0 or not os.path.exists(db) or 'steps' not in c:
        report(False, '%s: runs' % name, 'rc %d: %s' % (p.returncode, p.stderr[-600:]))
        continue
    s = report_json(gputrace, 'summary', db)
    lk = report_json(gputrace, 'leaks', db)
    g = report_json(gputrace, 'growth', db)
    steps = c['steps']
    print('   %s: %d steps; iterations %s from %s (%s); leaks: leak %s B in %s, held for the run %s B, told %s; '
          'growth %s, slope %s B' % (
              name, steps, s.get('iterations'), s.get('iteration_source'), (s.get('iteration_detection') or '')[:300],
              lk.get('total_bytes'), lk.get('total_count'), lk.get('held_for_run_bytes'), lk.get('accumulation_told'),
              g.get('verdict'), g.get('slope_bytes_per_iteration')), flush=True)
    if allowed:
        report(s.get('iteration_source') == 'auto' and s.get('iterations') in allowed(steps),
               '%s: found automatically, the iterations are the loop\'s' % name,
               '%s from %s for %d steps (allowed %s)' % (s.get('iterations'), s.get('iteration_source'), steps,
                                                          allowed(steps)))
    if mode == 'split':
        peaks = {(p_['memory'], p_['device']): p_ for p_ in s.get('peaks', [])}
        for d in (0, 1):
            led = [x for x in s.get('ledger', []) if x.get('device') == d]
            ex = {i['instant']: i for i in led[0]['instants']}.get('exit', {}) if led else {}
            un, proc = ex.get('unaccounted_bytes'), ex.get('nvml_process_bytes')
            report(bool(led) and led[0].get('context_bytes') is not None and un is not None and proc and
                   abs(un) <= 0.01 * proc, '%s: device %d\'s ledger measures its context and adds up to NVML' % (name, d),
                   'context %s, NVML %s for the process, unaccounted %s, why %s' % (
                       led[0].get('context_bytes') if led else None, proc, un,
                       led[0].get('context_unknown_why') if led else 'no ledger'))
            others, res = ex.get('other_processes_bytes'), ex.get('driver_reserved_bytes')
            report(res is not None and res > 0 and others is not None and others < 64 << 20,
                   '%s: device %d: the driver\'s own reservation is told apart from other processes' % (name, d),
                   'driver and firmware %s B, other processes %s B' % (res, others))
            if env:
                got, want = peaks.get(('pool', d), {}).get('peak_bytes'), c['max_allocated%d' % d]
                report(got == want, '%s: device %d\'s pool peak == max_memory_allocated(%d)' % (name, d, d),
                       '%s vs %d' % (got, want))
            else:
                led = [x for x in s.get('ledger', []) if x.get('device') == d]
                ex = {i['instant']: i for i in led[0]['instants']}.get('exit', {}) if led else {}
                got = {b['name']: b['bytes'] for b in ex.get('buckets', [])}.get('framework allocator')
                report(got == c['reserved%d' % d], '%s: device %d\'s framework allocator bucket at exit == '
                       'memory_reserved(%d)' % (name, d, d), '%s vs %d' % (got, c['reserved%d' % d]))
    if mode not in ('leaky', 'keepfeat'):
        # growth under a caching allocator that reserves for the largest shape yet (a new
        # sequence length) is told as such: each step at a new high, then steady
        at_highs = (g.get('growth_steps') and g.get('growth_steps_at_new_highs') == g.get('growth_steps') and
                    (g.get('steady_tail_iterations') or 0) >= 3 and g.get('sites_are_segments'))
        report(lk.get('total_bytes') == 0 and (g.get('verdict') != 'growing' or at_highs),
               '%s: a clean job reads clean (no leak; not growing, or growing only at new highs, told so)' % name,
               'leak %s B, told %s; sites %s; growth %s' % (
                   lk.get('total_bytes'), lk.get('accumulation_told'),
                   [x.get('call_site') for x in (lk.get('sites') or [])[:3]], g.get('verdict')))
        # nor does it accumulate memory it frees only when the loop ends (leaks' freed_after_loop)
        report(not lk.get('freed_after_loop_bytes'),
               '%s: nothing accumulated over the loop to be freed only after it' % name,
               'freed after the loop %s B at %s' % (lk.get('freed_after_loop_bytes'), [
                   x.get('call_site') for x in (lk.get('freed_after_loop_sites') or [])[:3]]))
        continue
    kept, line = c['kept_per_step'], c['kept_line']
    slope = g.get('slope_bytes_per_iteration') or 0
    if env or mode == 'leaky':
        report(g.get('verdict') == 'growing' and abs(slope - kept) <= 0.05 * kept,
               '%s: growth says growing at what PyTorch kept a step' % name,
               'verdict %s, slope %s B/iteration, memory_allocated() grew %d B a step' % (g.get('verdict'), slope, kept))
    else:
        res = c['reserved_per_step']
        report(g.get('verdict') == 'growing' and 0.5 * res <= slope <= 1.5 * res,
               '%s: growth says growing at what the allocator reserved more a step' % name,
               'verdict %s, slope %s B/iteration, memory_reserved() grew %.0f B a step on average (memory_allocated() '
               '%d)' % (g.get('verdict'), slope, res, kept))
    top = (g.get('sites') or [{}])[0].get('call_site', '')
    want = 'user_loops.py:%d' % line
    if env or mode == 'leaky':
        report(top.startswith(want), '%s: the top growing site is the line that makes what is kept' % name,
               'top site "%s", want "%s ..."' % (top[:160], want))
    else:
        # the default allocator's segment is asked for by whichever request found the cache
        # full: the site is told to be that, with the way to see the keeper
        report(g.get('sites_are_segments') is True and bool(g.get('sites')),
               '%s: the growing site is told to be the request that needed a new segment' % name,
               'sites_are_segments %s, top site "%s" (the line that keeps: %s)' % (
                   g.get('sites_are_segments'), top[:160], want))
    if mode != 'leaky':
        continue
    lead = (lk.get('sites') or [{}])[0].get('call_site', '')
    report((lk.get('total_bytes') or 0) >= 0.8 * kept * (steps - 2) and lead.startswith(want),
           '%s: leaks leads with what accumulated, named by that line' % name,
           'leak %s B (the steps after the first kept %d), first site "%s"' % (
               lk.get('total_bytes'), kept * (steps - 1), lead[:160]))
finish()
