"""Does tracing move the largest batch that fits? (issue 13: on one H100 the
sweep proved 147 for the transformer under cudaMallocAsync where plain untraced
runs bisected to 148.) Runs sweep_models.py at one batch size, --trials fresh
processes per arm, arms shuffled in every round:
- plain: untraced;
- traced: as `gputrace sweep` runs it (LD_PRELOAD, GPUTRACE_CUPTI=0,
  GPUTRACE_BATCH_SIZE, default stacks);
- nostacks: traced with GPUTRACE_STACK_DEPTH=0 (the hot path's time mostly
  gone: does the time or the tracer's presence matter?).
Prints, per arm, how many runs fit and how many ran out of memory. With a
batch size at the boundary, a difference between arms larger than the
plain arm's own scatter says tracing moves the boundary.
usage: check_boundary.py --build BUILD --out DIR --model transformer --alloc async --bs 148 [--trials 6]"""
import argparse
import os
import random
import sys

from gpucheck import run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--model', default='transformer', choices=('conv', 'transformer'))
ap.add_argument('--alloc', default='async', choices=('default', 'async'))
ap.add_argument('--bs', type=int, required=True)
ap.add_argument('--trials', type=int, default=6)
ap.add_argument('--arms', default='plain,traced,nostacks')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
argv = [sys.executable, os.path.join(here, 'sweep_models.py'), '--model', a.model, '--batch-size', str(a.bs),
        '--steps', '3']
base = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'} if a.alloc == 'async' else {}
arms = a.arms.split(',')
results = {arm: [] for arm in arms}
rng = random.Random(1)
for trial in range(a.trials):
    order = arms[:]
    rng.shuffle(order)
    for arm in order:
        env = dict(base)
        traced = arm != 'plain'
        if traced:
            env.update(GPUTRACE_CUPTI='0', GPUTRACE_BATCH_SIZE=str(a.bs), GPUTRACE_QUIET='1')
            if arm == 'nostacks':
                env['GPUTRACE_STACK_DEPTH'] = '0'
        db = os.path.join(a.out, '%s-%d.db' % (arm, trial))
        p = run(argv, shim=shim if traced else None, db=db if traced else None, env_extra=env, timeout=300)
        oom = 'out of memory' in p.stderr.lower()
        if p.returncode and not oom:
            print('FAIL %s trial %d: exit status %d: %s' % (arm, trial, p.returncode, p.stderr.strip()[-300:]))
            sys.exit(1)
        results[arm].append(p.returncode == 0)
        if os.path.exists(db):
            os.unlink(db)
        print('  trial %d %-9s %s (%.1f s)' % (trial + 1, arm, 'fits' if p.returncode == 0 else 'OOM', p.wall),
              flush=True)
print('%s/%s at batch size %d:' % (a.model, a.alloc, a.bs))
for arm in arms:
    r = results[arm]
    print('  %-9s fits in %d of %d runs' % (arm, sum(r), len(r)))
