"""GPU check: the iterations of unmarked training loops as users run them, on
frameworks whose loops no other check drives (issue 11 parts 4 and 5):
- PyTorch Lightning's Trainer.fit (lightning_fit.py: no ranges, no code for
  the tracer), --steps steps, under the default allocator and
  cudaMallocAsync: found automatically, the iterations are the steps run, and
  `leaks` calls nothing a leak;
- the same with a validation loop of 2 batches every 10 steps (cudaMallocAsync):
  the iterations are the training steps, each validation inside the step
  before it;
- CuPy (sweep_frameworks.py's FFT loop, its memory pool): the steps run.
About 2 minutes.
usage: check_loops.py --build BUILD --out DIR [--steps 30]"""
import argparse
import os

from gpucheck import report_json, finish, fresh_db, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=30)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)


fit = ['python3', os.path.join(here, 'lightning_fit.py'), '--steps', str(a.steps)]
CASES = [
    ('lightning-default', fit, {}, a.steps),
    ('lightning-async', fit, {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'}, a.steps),
    ('lightning-val-async', fit + ['--val-every', '10'], {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'},
     a.steps),
    ('cupy', ['python3', os.path.join(here, 'sweep_frameworks.py'), '--framework', 'cupy', '--batch-size', '4',
              '--steps', '20'], {}, 20),
]
for name, argv, env, steps in CASES:
    db = fresh_db(a.out, name)
    p = run(argv, shim=shim, db=db, env_extra=dict(env, GPUTRACE_QUIET='1'))
    if p.returncode != 0 or not os.path.exists(db):
        report(False, '%s: runs' % name, 'rc %d: %s' % (p.returncode, p.stderr[-400:]))
        continue
    s = report_json(gputrace, 'summary', db)
    lk = report_json(gputrace, 'leaks', db)
    how = s.get('iteration_detection') or ''
    leak = lk.get('total_bytes')
    print('   %s: iterations %s from %s (%s); leaks: leak %s B, held for the run %s B' % (
        name, s.get('iterations'), s.get('iteration_source'), how[:260], leak, lk.get('held_for_run_bytes')),
        flush=True)
    report(s.get('iteration_source') == 'auto' and s.get('iterations') == steps,
           '%s: found automatically, the iterations are the steps run' % name,
           '%s from %s for %d steps' % (s.get('iterations'), s.get('iteration_source'), steps))
    report(lk.get('accumulation_told') and leak == 0, '%s: a clean job reads clean (no leak, told)' % name,
           'leak %s B, told %s' % (leak, lk.get('accumulation_told')))
finish()
