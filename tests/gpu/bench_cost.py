"""Step-time cost of tracing (issue 14), measured as the guide asks: each
configuration runs --runs times, every run a fresh process, the order of
configurations shuffled in every round; per configuration the median of the
runs' median step times; the ratio of medians to the untraced run with a 95%
bootstrap interval (runs resampled with replacement, 2000 times) and the
spread (min-max of the runs). A target is met when the interval's upper end
is at or under it.
usage: bench_cost.py --build BUILD --out DIR [--runs N] [--alloc default|async]
                     [--configs NAME,...] [--steps N]
Configurations: bare, defaults, cupti0, history, and kinds:K1+K2 (CUPTI on
with only the listed activity kinds, via GPUTRACE_CUPTI_KINDS)."""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--runs', type=int, default=10)
ap.add_argument('--alloc', default='default', choices=('default', 'async'))
ap.add_argument('--configs', default='bare,defaults,cupti0,history')
ap.add_argument('--steps', type=int, default=80)
ap.add_argument('--seed', type=int, default=1)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
dbdir = tempfile.mkdtemp(prefix='bench-cost-')   # traces stay on the machine: only the table comes back
configs = a.configs.split(',')
if a.alloc == 'async' and 'history' in configs:
    configs.remove('history')   # PyTorch refuses to record history under cudaMallocAsync


def command(cfg, i):
    argv = [sys.executable, os.path.join(here, 'transformer_step.py'), '--steps', str(a.steps)]
    env = dict(os.environ)
    if a.alloc == 'async':
        env['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'
    if cfg == 'history':
        argv.append('--history')
    elif cfg != 'bare':
        env['LD_PRELOAD'] = shim
        env['GPUTRACE_OUTPUT'] = os.path.join(dbdir, '%s-%s-%d.db' % (a.alloc, cfg.replace(':', '_').replace('+', '_'), i))
        env['GPUTRACE_QUIET'] = '1'
        if cfg == 'cupti0':
            env['GPUTRACE_CUPTI'] = '0'
        elif cfg.startswith('kinds:'):
            env['GPUTRACE_CUPTI_KINDS'] = cfg[6:].replace('+', ',')
    return argv, env


def ratio_ci(num, den, n=2000):
    rng = random.Random(7)
    rs = sorted(statistics.median(rng.choices(num, k=len(num))) / statistics.median(rng.choices(den, k=len(den)))
                for _ in range(n))
    return rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def table(rounds):
    base = samples.get('bare') or []
    rows = []
    print('\n%s allocator, %d runs per configuration, %d steps (median of steps 10..%d):' % (a.alloc, rounds, a.steps, a.steps))
    print('%-28s %8s %15s %7s %17s' % ('configuration', 'median', 'spread (ms)', 'ratio', '95% interval'))
    for cfg in configs:
        s = samples[cfg]
        if not s:
            print('%-28s no runs' % cfg)
            continue
        med = statistics.median(s)
        r = lo = hi = float('nan')
        if base and cfg != 'bare':
            r = med / statistics.median(base)
            lo, hi = ratio_ci(s, base)
        elif cfg == 'bare':
            r = lo = hi = 1.0
        print('%-28s %8.3f %7.3f-%-7.3f %7.3f %8.3f-%-8.3f' % (cfg, med, min(s), max(s), r, lo, hi))
        rows.append({'config': cfg, 'median_ms': med, 'runs_ms': s, 'ratio': r, 'ci95': [lo, hi]})
    with open(os.path.join(a.out, 'bench_cost_%s.json' % a.alloc), 'w') as f:
        json.dump({'alloc': a.alloc, 'runs': rounds, 'steps': a.steps, 'rows': rows}, f, indent=1)


random.seed(a.seed)
samples = {c: [] for c in configs}
t_start = time.monotonic()
for i in range(a.runs):
    order = configs[:]
    random.shuffle(order)
    for cfg in order:
        argv, env = command(cfg, i)
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        ms = [float(l.split('=')[1]) for l in p.stdout.splitlines() if l.startswith('step_ms=')]
        if p.returncode != 0 or not ms:
            print('run %d %s failed (rc %d): %s' % (i, cfg, p.returncode, p.stderr[-800:]), flush=True)
            continue
        samples[cfg].append(ms[0])
    print('round %d done at %.0f s' % (i + 1, time.monotonic() - t_start), flush=True)
    table(i + 1)   # after every round: a run cut off by a time limit still leaves its table
