"""GPU checks of what issue 14 changed in the trace (not its timing, which is
bench_cost.py's): on the transformer step of transformer_step.py,
- the stream-ordered pool's reservation that the writer reads from the pool
  (memory_pools rows 'sampled') equals PyTorch's memory_reserved() under
  cudaMallocAsync, with no MEMORY2 records by default;
- kernel sampling on the real CUPTI: with GPUTRACE_KERNELS_FULL_S=1 and
  GPUTRACE_KERNELS_EVERY_S=2, kernels only inside the spans the notes give,
  and the reports say so;
- the flight recorder on a real job: GPUTRACE_WINDOW_S=2, rows before the
  window gone but the live allocations (parameters, optimizer state), the
  interval summaries' peak equal to the whole-run peak of a run without it.
About 1 minute (four runs of ~300 steps).
usage: check_cost.py --build BUILD --out DIR"""
import argparse
import json
import os
import subprocess

from gpucheck import counters, finish, fresh_db, kernel_spans, one, report, rows, run, safe

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=300)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
step = ['python3', os.path.join(here, 'transformer_step.py'), '--steps', str(a.steps)]
ASYNC = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'}


def traced(name, env, argv=None):
    db = fresh_db(a.out, name)
    p = run(argv or step, shim=shim, db=db, env_extra=dict(env, GPUTRACE_QUIET='1'))
    ok = p.returncode == 0 and os.path.exists(db)
    report(ok, '%s: traced run completes' % name, 'rc %d in %.1f s; stderr tail: %s' % (p.returncode, p.wall,
                                                                                   p.stderr[-300:]))
    return (db, counters(p.stdout)) if ok else (None, None)


def pool():
    db, c = traced('pool', ASYNC)
    if not db:
        return
    sampled = rows(db, "SELECT t_ns, size, utilized_size FROM memory_pools WHERE op = 'sampled' ORDER BY t_ns")
    last = sampled[-1][1] if sampled else None
    report(last == c['reserved'], 'async: the pool reservation read by the writer equals memory_reserved()',
           'last sampled %s, torch reserved %d, %d sampled rows over the run' % (last, c['reserved'], len(sampled)))
    n_dm = one(db, 'SELECT count(*) FROM driver_memory')
    note = one(db, "SELECT message FROM notes WHERE component = 'cupti'")
    report(n_dm == 0 and 'driver memory' not in note, 'async: no MEMORY2 records by default',
           '%d driver_memory rows; cupti note: %s' % (n_dm, note))
    led = json.loads(subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True).stdout)
    buckets = [b for x in led['ledger'] for i in x['instants'] if i['instant'] == 'exit' for b in i['buckets']
               if b['kind'] == 'pool']
    report(bool(buckets) and buckets[0]['reservation_known'] and buckets[0]['bytes'] == c['reserved'],
           'async: the ledger shows the reservation', 'pool bucket %s' % buckets)


def kernels():
    db, c = traced('kernels', {'GPUTRACE_KERNELS_FULL_S': '1', 'GPUTRACE_KERNELS_EVERY_S': '2'},
                   step[:-1] + [str(max(a.steps, 600))])  # a loop of several seconds: spans inside it
    if not db:
        return
    notes = rows(db, "SELECT t_ns, message FROM notes WHERE component = 'kernels' ORDER BY t_ns")
    spans = kernel_spans(db)
    ks = [r[0] for r in rows(db, 'SELECT start_ns FROM kernels')]
    # a kernel launched just before a pause may start on the GPU a little after it
    outside = [k for k in ks if not any(s - 1e6 <= k <= e + 50e6 for s, e in spans)]
    # CUPTI is detached after each span and attached again for the next: each span inside the
    # training loop has its kernels (spans before or after it may have none: the model is built
    # on the CPU for seconds, and the process ends after it)
    base = one(db, 'SELECT start_mono_ns FROM processes')
    loop = (c['steady_start_ns'] - base, c['steady_end_ns'] - base)
    per_span = [sum(1 for k in ks if s - 1e6 <= k <= e + 50e6) for s, e in spans]
    in_loop = [n for (s, e), n in zip(spans, per_span) if loop[0] <= s and e <= loop[1]]
    report(len(in_loop) >= 2 and all(in_loop), 'every sampled span inside the training loop has kernels (CUPTI '
           'attached again after each detach)', 'kernels per span %s, loop %.2f..%.2f s' % (
               per_span, loop[0] / 1e9, loop[1] / 1e9))
    report(len(spans) >= 2 and ks and not outside, 'kernels recorded only in the sampled spans',
           '%d kernels, %d spans %s, %d outside them; notes %s' % (len(ks), len(spans),
                                                                  [(round(s / 1e9, 2), round(e / 1e9, 2)) for s, e in spans],
                                                                  len(outside), [m for _, m in notes][:4]))
    text = subprocess.run([gputrace, 'summary', db], capture_output=True, text=True).stdout
    report('kernels sampled' in text, 'summary says the kernels were sampled', text.splitlines()[0] if text else '')


def window():
    ref, c_ref = traced('full', ASYNC)
    db, c = traced('window', dict(ASYNC, GPUTRACE_WINDOW_S='2'))
    if not db or not ref:
        return
    fr = rows(db, 'SELECT window_ns, complete_from_ns FROM flight_recorder')[0]
    end = one(db, 'SELECT end_ns FROM processes')
    old = one(db, 'SELECT count(*) FROM events WHERE t_ns < ?', (fr[1] - 100 * 10 ** 6,))
    live_old = one(db, 'SELECT count(*) FROM live_at_exit WHERE alloc_ns < ?', (fr[1],))
    live_ref = one(ref, 'SELECT count(*) FROM live_at_exit')
    live_win = one(db, 'SELECT count(*) FROM live_at_exit')
    report(fr[1] > 0 and end - fr[1] <= fr[0] + 600 * 10 ** 6 and live_win == live_ref,
           'window: the last 2 s in full, the allocations live at exit all kept',
           'complete from %.2f s of %.2f s; %d rows before it (live allocations: %d); live at exit %d (run without '
           'a window: %d)' % (fr[1] / 1e9, end / 1e9, old, live_old, live_win, live_ref))
    peak_sum = one(db, "SELECT max(peak_bytes) FROM interval_summaries WHERE memory = 'pool'")
    report(peak_sum == c['max_allocated'], 'window: the summaries give the whole run\'s pool peak',
           'summaries %s, torch max_memory_allocated %d' % (peak_sum, c['max_allocated']))
    report(one(db, 'PRAGMA integrity_check') == 'ok', 'window: the file is sound', 'integrity_check ok')
    text = subprocess.run([gputrace, 'summary', db], capture_output=True, text=True)
    report(text.returncode == 0 and 'flight recorder' in text.stdout, 'window: summary labels the trace',
           (text.stdout.splitlines() or [''])[0])
    sizes = [os.path.getsize(x) for x in (ref, db)]
    report(True, 'window: file sizes', 'without a window %d B, with 2 s %d B (%d steps)' % (sizes[0], sizes[1],
                                                                                           a.steps))


PROF_LATE = r'''
import time, torch
m = torch.nn.Linear(512, 512).cuda()
t0 = time.monotonic()
while time.monotonic() - t0 < 2.0:   # past the 1 s window, the 200 ms flush and the detach at the next call
    y = m(torch.randn(64, 512, device='cuda')).sum(); y.backward(); torch.cuda.synchronize()
prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
prof.__enter__()
for _ in range(20):
    y = m(torch.randn(64, 512, device='cuda')).sum(); y.backward()
torch.cuda.synchronize()
prof.__exit__(None, None, None)
print('profiler_kernels=%d' % sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA))
'''


def profiler_after_detach():
    db = os.path.join(a.out, 'profiler-detached.db')
    p = run(['python3', '-c', PROF_LATE], shim=shim, db=db,
            env_extra={'GPUTRACE_KERNELS_FULL_S': '1', 'GPUTRACE_KERNELS_EVERY_S': '60'})
    notes = [m for (m,) in rows(db, "SELECT message FROM notes WHERE component IN ('cupti', 'kernels') ORDER BY id")] \
        if os.path.exists(db) else []
    kernels = counters(p.stdout).get('profiler_kernels', 0)
    ok = p.returncode == 0 and kernels > 0 and any(n.startswith('taken over:') for n in notes)
    report(ok, 'torch.profiler started while CUPTI is detached: it records, the trace says it took CUPTI',
           'rc %d, profiler saw %d GPU events, notes %s, stderr %s' % (
               p.returncode, kernels, notes, [l for l in p.stderr.splitlines() if 'gputrace' in l or 'rror' in l][-3:]))


safe('pool', pool)
safe('profiler after detach', profiler_after_detach)
safe('kernels', kernels)
safe('window', window)
finish()
