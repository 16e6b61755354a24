"""GPU checks of CUPTI activity, NVTX ranges and device facts (issue 4): the
PyTorch loop of train_mlp.py with torch.cuda.nvtx.range_push/pop around each
step, traced with nothing but LD_PRELOAD; with torch.profiler holding CUPTI;
and step time with CUPTI on vs off.
usage: check_nvtx_cupti.py --build BUILD --out DIR"""
import argparse
import os
import subprocess

from gpucheck import counters, finish, median, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=40)
ap.add_argument('--timing-runs', type=int, default=5)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
train = ['python3', os.path.join(here, 'train_mlp.py'), '--steps', str(a.steps), '--batch', '256']


def safe(name, fn):
    """One check must not stop the others: an exception is that check's FAIL."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        report(False, name, 'raised %r' % e)


# ---- 1. NVTX steps, kernels, copies, devices --------------------------------
for mode, conf in (('default', None), ('async', 'backend:cudaMallocAsync')):
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    db = os.path.join(a.out, 'nvtx-%s.db' % mode)
    p = run(train + ['--nvtx'], shim=shim, db=db, env_extra=env)
    ok = p.returncode == 0 and os.path.exists(db)
    report(ok, '%s: traced run completes' % mode, 'rc %d; stderr tail: %s' % (p.returncode, p.stderr[-300:]))
    if not ok:
        continue

    def contents(mode=mode, db=db, p=p):
        notes = rows(db, "SELECT component, message FROM notes ORDER BY id")
        n_k, n_c, n_r = (one(db, 'SELECT count(*) FROM %s' % t) for t in ('kernels', 'memcpys', 'ranges'))
        steps = rows(db, "SELECT message, batch_size FROM ranges WHERE source = 'nvtx' ORDER BY start_ns")
        want = [('step %d bs=256' % i, 256) for i in range(a.steps)]
        report(n_k > 0 and n_c > 0 and steps == want, '%s: kernels, copies and step ranges in the trace' % mode,
               '%d kernels, %d memcpys, %d ranges (%d as planted); notes %s' %
               (n_k, n_c, n_r, sum(1 for s in steps if s in want), notes))
        names = rows(db, 'SELECT s.text, count(*) FROM kernels k JOIN strings s ON s.id = k.name_id '
                         'GROUP BY s.text ORDER BY 2 DESC LIMIT 3')
        print('   top kernels: %s' % names)

    def inside(mode=mode, db=db):
        r = rows(db, "SELECT start_ns, end_ns FROM ranges WHERE source = 'nvtx' ORDER BY start_ns")
        lo, hi = r[0][0], r[-1][1]
        ev = rows(db, "SELECT t_ns, api, size FROM events_v WHERE op = 'alloc' AND t_ns BETWEEN ? AND ?", (lo, hi))
        out = [e for e in ev if not any(s <= e[0] <= t for s, t in r)]
        report(not out, '%s: every allocation during the loop lies inside a step range' % mode,
               '%d allocations in the loop, %d outside any step range %s' % (len(ev), len(out), out[:5]))

    def per_step(mode=mode, db=db):
        # train_mlp synchronizes after each pop: a step's kernels all start
        # between its push and the next step's push (on one clock, or none match)
        starts = [s for (s,) in rows(db, "SELECT start_ns FROM ranges WHERE source = 'nvtx' ORDER BY start_ns")]
        counts = [one(db, 'SELECT count(*) FROM kernels WHERE start_ns >= ? AND start_ns < ?', (s, t))
                  for s, t in zip(starts, starts[1:])]
        steady = counts[3:]
        report(steady and min(steady) == max(steady) > 0, '%s: kernel count per step stable' % mode,
               'per step %s' % counts)
        end = one(db, 'SELECT end_ns FROM processes')
        bad = one(db, 'SELECT count(*) FROM kernels WHERE start_ns < -1000000000 OR start_ns > ?', (end,))
        report(bad == 0, '%s: kernel times on the trace clock' % mode, '%d kernels outside [-1 s, end]' % bad)

    def device(mode=mode, db=db, p=p):
        smi = subprocess.run(['nvidia-smi', '--query-gpu=name,uuid,memory.total', '--format=csv,noheader,nounits'],
                             capture_output=True, text=True).stdout.strip().splitlines()
        dev = rows(db, 'SELECT name, uuid, total_bytes, cc_major, cc_minor, driver_version, runtime_version '
                       'FROM devices ORDER BY id')
        name, uuid, mib = [x.strip() for x in smi[0].split(',')]
        # nvidia-smi's memory.total counts memory the driver reserves for itself;
        # CUDA's totalGlobalMem (what the trace and torch report) does not.
        total = counters(p.stdout).get('total_memory')
        ok = bool(dev) and dev[0][0] == name and dev[0][1] == uuid and dev[0][2] == total
        report(ok, '%s: device row matches nvidia-smi (name, UUID) and CUDA (total memory)' % mode,
               'trace %s; nvidia-smi %s; torch total_memory %s; nvidia-smi - CUDA = %.0f MiB' %
               (dev[:1], smi[:1], total, float(mib) - dev[0][2] / 2**20 if dev else 0))

    for name, fn in (('contents', contents), ('inside', inside), ('per step', per_step), ('device', device)):
        safe('%s: %s' % (mode, name), fn)

# ---- 2. torch.profiler holds CUPTI ------------------------------------------
PROF = r'''
import sys, torch
early = sys.argv[1] == 'early'
prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
if early:
    prof.__enter__()          # the profiler takes CUPTI before the program's first CUDA call
m = torch.nn.Linear(512, 512).cuda()
if not early:
    prof.__enter__()          # ... or after it: the shim hands CUPTI over
for _ in range(20):
    y = m(torch.randn(64, 512, device='cuda')).sum(); y.backward()
torch.cuda.synchronize()
prof.__exit__(None, None, None)
print('profiler_kernels=%d' % sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA))
'''
for when in ('early', 'late'):
    def profiler(when=when):
        db = os.path.join(a.out, 'profiler-%s.db' % when)
        p = run(['python3', '-c', PROF, when], shim=shim, db=db)
        notes = rows(db, "SELECT message FROM notes WHERE component = 'cupti'") if os.path.exists(db) else []
        said = [n for (n,) in notes if n.startswith(('unavailable:', 'taken over:'))]
        kernels = counters(p.stdout).get('profiler_kernels', 0)
        ok = p.returncode == 0 and bool(said) and one(db, 'SELECT count(*) FROM events') > 0 and kernels > 0
        report(ok, 'torch.profiler (%s): run completes, trace says CUPTI was unavailable' % when,
               'rc %d, profiler saw %d GPU events, notes %s, stderr %s' % (p.returncode, kernels, notes,
                                                                          [l for l in p.stderr.splitlines() if 'gputrace' in l]))
    safe('torch.profiler (%s)' % when, profiler)

# ---- 3. step time, CUPTI on vs off (interleaved) ----------------------------
def timing():
    on, off = [], []
    for i in range(a.timing_runs):
        for env, acc in (({'GPUTRACE_CUPTI': '1'}, on), ({'GPUTRACE_CUPTI': '0'}, off)):
            p = run(train + ['--nvtx'], shim=shim, db=os.path.join(a.out, 't%d-%s.db' % (i, env['GPUTRACE_CUPTI'])),
                    env_extra=env)
            acc.append(counters(p.stdout).get('step_ms', float('nan')))
    report(True, 'step time, CUPTI on vs off (median of %d interleaved runs)' % a.timing_runs,
           'on %.3f ms, off %.3f ms, ratio %.3f (runs on %s, off %s)' % (median(on), median(off), median(on) / median(off),
                                                                         on, off))
safe('timing', timing)

finish()
