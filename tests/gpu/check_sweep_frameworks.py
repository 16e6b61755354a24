"""gputrace sweep on frameworks other than PyTorch (sweep_frameworks.py), on a
real GPU (issue 13: "a preallocating framework (JAX's default) is detected and
the sweep says how to run it instead"; any framework that allocates through
CUDA):
  jax-prealloc: JAX as it starts by default (75% of the device at its first
      operation; on CUDA 13 one cuMemCreate): the sweep stops after one run
      with exit status 13 and names the settings; `gputrace peak` on that
      run's trace fits nothing and says how to trace at tensor level.
  jax-platform: JAX with those settings, on an MLP (jax-mlp: the conv
      net's convolutions, untuned, ran a batch of 370 past 120 s at 100%
      utilization, session 33): the sweep proves a largest batch size N; plain runs (no tracer, fresh processes): N fits
      in each of 2, N+1 runs out of memory. XLA's autotuning and command
      buffers off (XLA_FLAGS): with them, under the platform allocator, a
      plain run of batch size 300 was still compiling after 100 s on an H200
      and its command buffers' captures logged CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
      (tests/gpu/RESULTS.md, session 32).
  cupy: CuPy's memory pool and cuFFT: the same proof (on that H200 the sweep
      proved 371 in 8 runs, 15.9 s).
The GPU must be otherwise idle.
usage: check_sweep_frameworks.py --build BUILD --out DIR [--cases jax-prealloc,cupy,jax-platform]"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck import FAILED, out_of_memory, report, run  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--cases', default='jax-prealloc,cupy,jax-platform')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
PLATFORM = {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false', 'XLA_PYTHON_CLIENT_ALLOCATOR': 'platform',
            'XLA_FLAGS': '--xla_gpu_autotune_level=0 --xla_gpu_enable_command_buffer='}


def command(framework, bs):
    return [sys.executable, os.path.join(here, 'sweep_frameworks.py'), '--framework', framework,
            '--batch-size', str(bs), '--steps', '3']


def sweep(case, framework, env, extra=()):
    d = os.path.join(a.out, 'sweep-' + case)
    shutil.rmtree(d, ignore_errors=True)   # the sweep's --dir must be empty
    # (a run past 120 s is stopped, and the sweep says so with its last lines:
    # the JAX platform-allocator run that never ended, session 32)
    p = run([gputrace, 'sweep', '--json', '--dir', d, '--run-timeout', '120'] + list(extra) + ['--'] +
            command(framework, '{bs}'),
            env_extra=env, timeout=560)
    for line in p.stderr.splitlines():
        print('     ' + line, flush=True)
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError as e:
        report(False, case + ': the sweep\'s JSON parses', '%s: %r' % (e, p.stdout[:300]))
        doc = None
    return p, doc, d


def fits(framework, bs, env):
    p = run(command(framework, bs), env_extra=env, timeout=300)
    ok = p.returncode == 0
    print('     plain run: batch size %d %s (%.1f s)' % (bs, 'fits' if ok else 'OOM or failed', p.wall), flush=True)
    if not ok and not out_of_memory(p.stderr):
        raise RuntimeError('batch size %d: exit status %d: %s' % (bs, p.returncode, p.stderr.strip()[-600:]))
    return ok


def preallocating():
    case = 'jax-prealloc'
    p, doc, d = sweep(case, 'jax', {})
    said = 'XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform' in p.stderr
    report(p.returncode == 13 and doc is not None and doc.get('stopped') == 'preallocation' and
           doc.get('runs_used') == 1 and said, case + ': the sweep detects the preallocation after one run and says '
           'how to run instead (exit 13)', 'exit %d, stopped %s, runs %s, settings named %s' % (
               p.returncode, doc and doc.get('stopped'), doc and doc.get('runs_used'), said))
    traces = sorted(f for f in os.listdir(d) if f.endswith('.db')) if os.path.isdir(d) else []
    if not traces:
        report(False, case + ': run 1 left a trace', 'none in %s' % d)
        return
    db = os.path.join(d, traces[0])
    pk = run([gputrace, 'peak', '--json', db])
    text = run([gputrace, 'peak', db]).stdout
    try:
        pj = json.loads(pk.stdout)
    except ValueError:
        pj = {}
    report(pj.get('preallocated') is True and pj.get('max_batch_size') is None and pj.get('fit') is None and
           'XLA_PYTHON_CLIENT_PREALLOCATE=false' in text,
           case + ': peak on its trace fits nothing and says how to trace at tensor level',
           'preallocated %s, fit %s, max_batch_size %s; %s' % (pj.get('preallocated'), pj.get('fit'),
                                                               pj.get('max_batch_size'),
                                                               [l for l in text.splitlines() if 'prealloc' in l][:2]))


def proven(case, framework, env):
    p, doc, d = sweep(case, framework, env)
    n = doc and doc.get('max_batch_size')
    ok = p.returncode == 0 and doc is not None and doc.get('verified') is True and n
    report(bool(ok), case + ': the sweep proves a largest batch size', 'exit %d, largest %s, verified %s, runs %s, '
           '%.1f s; fit %s' % (p.returncode, n, doc and doc.get('verified'), doc and doc.get('runs_used'),
                               (doc or {}).get('total_seconds') or 0, (doc or {}).get('fit')))
    if not ok:
        return
    runs = ', '.join('%d%s' % (r['batch_size'], ' OOM' if r['oom'] else '') for r in doc['runs'])
    print('   runs: ' + runs, flush=True)
    got = [fits(framework, n, env) for _ in range(2)] + [fits(framework, n + 1, env)]
    report(got == [True, True, False], case + ': sweep == N fits, N+1 runs out of memory (plain runs, fresh '
           'processes)', 'sweep %d: %d fit %d of 2, %d %s' % (n, n, sum(got[:2]), n + 1,
                                                              'fits' if got[2] else 'OOM'))


for case in a.cases.split(','):
    try:
        if case == 'jax-prealloc':
            preallocating()
        elif case == 'jax-platform':
            proven(case, 'jax-mlp', PLATFORM)
        elif case == 'cupy':
            proven(case, 'cupy', {})
        else:
            report(False, case, 'unknown case')
    except Exception as e:   # a failed workload is a failed check; the next case still runs
        report(False, case, '%s: %s' % (type(e).__name__, e))
print('all checks passed' if not FAILED else '%d checks failed' % len(FAILED))
sys.exit(1 if FAILED else 0)
