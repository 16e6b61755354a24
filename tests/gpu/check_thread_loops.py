"""GPU check of loops on several threads (a thread per GPU, each its own
NVTX-marked loop; thread_loops.py): one thread keeps 1 MiB from each of its
steps, under backend:cudaMallocAsync (tensors are CUDA calls) and the job
ends by os._exit (nothing freed at exit). Threads at once and one after
another (the case a stand-in probe saw read "leaks: none" in 4 of 5 runs,
by which thread the scheduler ran first), the leaker first and last:
- output and exit code as untraced;
- `leaks`: exactly the kept tensors (STEPS x 1 MiB, STEPS allocations, as
  the program counts them), at one site whose call site names the LEAK
  line of thread_loops.py; nothing else is a leak;
- summary says the same range ran on the other threads;
- `growth`: growing by 1 MiB an iteration, its top site the LEAK line (where
  the whole process's memory over the chosen loop does not grow, the report
  is of the leaking thread's own loop, and names that thread);
- without a leak (threads at once): no leak, and growth not "growing".
On one GPU the threads share it; on two, thread i drives GPU i % 2.
usage: check_thread_loops.py --build BUILD --out DIR [--threads N] [--steps N]"""
import argparse
import json
import os
import subprocess

from gpucheck import finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--threads', type=int, default=3)
ap.add_argument('--steps', type=int, default=12)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
prog = os.path.join(here, 'thread_loops.py')
leak_line = next(i for i, l in enumerate(open(prog), 1) if '# LEAK' in l)
MiB = 1 << 20


def analyze(cmd, db):
    p = subprocess.run([gputrace, cmd, '--json', db], capture_output=True, text=True, timeout=300)
    return json.loads(p.stdout) if p.stdout.strip() else {'error': p.stderr.strip()}


cases = [('at-once', [], a.threads - 1), ('at-once-first', [], 0),
         ('one-after-another', ['--sequential'], a.threads - 1), ('one-after-another-first', ['--sequential'], 0),
         ('at-once-no-leak', [], -1)]
for name, extra, leaker in cases:
    argv = ['python3', prog, str(a.threads), str(leaker), str(a.steps)] + extra
    env = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync', 'GPUTRACE_CUPTI': '0'}
    db = os.path.join(a.out, name + '.db')
    if os.path.exists(db):
        os.remove(db)
    bare, traced = run(argv, env_extra=env), run(argv, shim=shim, db=db, env_extra=env)
    no_tid = lambda out: [l.split(' tid ')[0] for l in out.splitlines()]   # thread ids differ run to run
    report(bare.returncode == traced.returncode == 0 and no_tid(bare.stdout) == no_tid(traced.stdout),
           '%s: output and exit code as untraced' % name,
           'rc %d/%d %s' % (bare.returncode, traced.returncode, (bare.stderr + traced.stderr)[-800:]))
    if traced.returncode or not os.path.exists(db):
        continue
    kept = {int(w[1]): int(w[3]) for w in map(str.split, traced.stdout.splitlines()) if w[:1] == ['thread']}
    native = {int(w[1]): int(w[5]) for w in map(str.split, traced.stdout.splitlines()) if w[:1] == ['thread']}
    tids = rows(db, "SELECT DISTINCT tid FROM events_v WHERE op = 'alloc'")
    lk = analyze('leaks', db)
    sites = lk.get('sites') or []
    print('   %s: kept per thread %s; %d threads allocated; leaks %s B in %s, %d sites; held for the run %s B in %s; '
          'in use at end %s B in %s' % (name, kept, len(tids), lk.get('total_bytes'), lk.get('total_count'), len(sites),
                                       lk.get('held_for_run_bytes'), lk.get('held_for_run_count'),
                                       lk.get('at_end_bytes'), lk.get('at_end_count')))
    for s in sites[:3]:
        print('      site %s B x %s: %s' % (s.get('bytes'), s.get('count'), (s.get('call_site') or '')[:160]))
    want = 'thread_loops.py:%d' % leak_line
    gr = analyze('growth', db)
    gsites = gr.get('sites') or []
    tl = gr.get('thread_loop')
    print('   %s: growth %s, %s B an iteration (scatter %s); thread_loop %s; top site %s' % (
        name, gr.get('verdict'), gr.get('slope_bytes_per_iteration'), gr.get('scatter_bytes'), tl,
        (gsites[0].get('call_site') or '')[:100] if gsites else None))
    if leaker < 0:
        report(lk.get('total_bytes') == 0 and gr.get('verdict') != 'growing',
               '%s: no leak, and growth is not "growing"' % name,
               'leaks %s B; growth %s, thread_loop %s' % (lk.get('total_bytes'), gr.get('verdict'), tl))
        continue
    report(lk.get('total_bytes') == kept.get(leaker) == a.steps * MiB and lk.get('total_count') == a.steps and
           len(sites) == 1 and want in (sites[0].get('call_site') or ''),
           '%s: leaks are the %d kept tensors (thread %d), at %s, and nothing else' % (name, a.steps, leaker, want),
           'leaks %s B in %s at %s; the program kept %s B' % (
               lk.get('total_bytes'), lk.get('total_count'), [(s.get('call_site') or '')[:100] for s in sites[:3]],
               kept.get(leaker)) if 'error' not in lk else lk['error'])
    # (where the whole process's own fit grows, Theil-Sen's median of its pairs is within a byte or so of 1 MiB)
    slope = gr.get('slope_bytes_per_iteration') or 0
    report(gr.get('verdict') == 'growing' and (slope == MiB if tl else abs(slope - MiB) < MiB / 100) and gsites and
           want in (gsites[0].get('call_site') or '') and (tl is None or tl.get('tid') == native.get(leaker)),
           '%s: growth: growing 1 MiB an iteration at %s (of the leaking thread %s where the process read otherwise)' % (
               name, want, native.get(leaker)),
           'growth %s, %s B an iteration, thread_loop %s, top site %s' % (
               gr.get('verdict'), gr.get('slope_bytes_per_iteration'), tl,
               (gsites[0].get('call_site') or '')[:100] if gsites else None))
    text = subprocess.run([gputrace, 'summary', db], capture_output=True, text=True, timeout=300).stdout
    line = next((l for l in text.splitlines() if 'other thread' in l), '')
    report('the same range on %d other threads' % (a.threads - 1) in text,
           '%s: summary says the loop ran on the other threads' % name, line.strip() or text[:600])
finish()
