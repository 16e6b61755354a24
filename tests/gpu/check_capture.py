"""GPU checks of the capture core (runtime API): a PyTorch MLP+Adam loop under
the default caching allocator and the cudaMallocAsync backend, compared with
PyTorch's own counters; a `nvcc -cudart shared` program traced fully; output
and exit code unchanged; step time with and without the shim.
usage: check_capture.py --build BUILD --out DIR"""
import argparse
import os
import re
import subprocess

from gpucheck import counters, finish, live_and_peak, live_peak, median, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--timing-runs', type=int, default=5)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
train = ['python3', os.path.join(here, 'train_mlp.py'), '--steps', '60']


def loss_lines(s):
    # memory_reserved() is left out: with the cudaMallocAsync backend it is the
    # driver pool's reservation, which differs between runs with or without us.
    return [l for l in s.splitlines() if l.startswith('step ') or 'allocated=' in l]


for mode, conf in (('default', None), ('async', 'backend:cudaMallocAsync')):
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    db = os.path.join(a.out, 'train-%s.db' % mode)
    # --hard-exit: the process ends with os._exit right after printing its
    # counters, so nothing is freed between the print and the end of the trace.
    bare = run(train + ['--hard-exit'], env_extra=env)
    traced = run(train + ['--hard-exit'], shim=shim, db=db, env_extra=env)
    if loss_lines(bare.stdout) != loss_lines(traced.stdout):
        print('   bare:   %s\n   traced: %s' % (loss_lines(bare.stdout), loss_lines(traced.stdout)))
    report(bare.returncode == traced.returncode == 0 and loss_lines(bare.stdout) == loss_lines(traced.stdout),
           '%s: output and exit code identical' % mode,
           'rc %d/%d; %d lines compared' % (bare.returncode, traced.returncode, len(loss_lines(bare.stdout))))
    if traced.returncode != 0:
        print(traced.stderr[-3000:])
        continue
    c = counters(traced.stdout)
    print('   %s counters: %s' % (mode, {k: c[k] for k in ('reserved', 'max_reserved', 'allocated', 'max_allocated')}))
    print('   %s api counts: %s' % (mode, rows(db, 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api')))
    print('   %s stderr: %s' % (mode, traced.stderr.strip().splitlines()[-1:]))
    live_dev, peak_dev = live_and_peak(db, 'device')
    # PyTorch's counters count its allocator's own calls; since the driver API
    # is traced, libraries' own device memory (cuBLAS's cuMemAlloc_v2
    # workspaces) is in the trace too: printed, not compared
    own_live, own_peak = live_peak(db, "api = 'cudaMalloc'")
    live_pool, peak_pool = live_and_peak(db, 'pool')
    print('   %s: all device bytes live %d, peak %d; outside the allocator: %s' % (
        mode, live_dev, peak_dev, rows(db, "SELECT api, count(*), sum(size) FROM allocations WHERE memory = 'device' "
                                           "AND api != 'cudaMalloc' GROUP BY api") or 'none'))
    if mode == 'default':
        report(own_live == c['reserved'], 'default: live cudaMalloc bytes at exit == memory_reserved()',
               'trace %d, torch %d' % (own_live, c['reserved']))
        report(own_peak == c['max_reserved'], 'default: peak cudaMalloc bytes == max_memory_reserved()',
               'trace %d, torch %d' % (own_peak, c['max_reserved']))
        report(one(db, 'SELECT peak_device_bytes FROM processes') == peak_dev,
               'default: processes.peak_device_bytes == peak from events', str(peak_dev))
    else:
        report(peak_pool == c['max_allocated'], 'async: peak pool bytes == max_memory_allocated()',
               'trace %d, torch %d (diff %d)' % (peak_pool, c['max_allocated'], peak_pool - c['max_allocated']))
        report(live_pool == c['allocated'], 'async: live pool bytes at exit == memory_allocated()',
               'trace %d, torch %d' % (live_pool, c['allocated']))
    top = rows(db, """SELECT group_concat(f.function, ' <- ') FROM (SELECT stack_id FROM events WHERE stack_id IS NOT NULL
                      LIMIT 1) s JOIN stack_frames sf ON sf.stack_id = s.stack_id JOIN frames f ON f.id = sf.frame_id
                      WHERE sf.level < 6""")
    print('   %s first stack: %s' % (mode, top[0][0]))
    report('c10::cuda::CUDACachingAllocator' in (top[0][0] or ''), '%s: C++ frames demangled' % mode,
           (top[0][0] or '')[:80])
    report(one(db, 'SELECT end_reason FROM processes') == '_exit', '%s: os._exit flushed the trace' % mode,
           one(db, 'SELECT end_reason FROM processes'))
    report(one(db, 'PRAGMA integrity_check') == 'ok' and one(db, 'SELECT events_dropped FROM processes') == 0,
           '%s: integrity ok, nothing dropped' % mode, '%d events' % one(db, 'SELECT count(*) FROM events'))
    # the clock the stamps were taken with: unless GPUTRACE_CLOCK says otherwise, the counter exactly where the
    # kernel's clocksource is tsc (shim/stamp.c)
    clock_note = one(db, "SELECT message FROM notes WHERE component = 'clock'") or ''
    if not os.environ.get('GPUTRACE_CLOCK'):
        with open('/sys/devices/system/clocksource/clocksource0/current_clocksource') as f:
            source = f.read().strip()
        report(('time-stamp counter' in clock_note) == (source == 'tsc'),
               '%s: stamped with the counter exactly where the clocksource is tsc (here %s)' % (mode, source),
               clock_note)
    else:
        print('   %s clock: %s' % (mode, clock_note))

# nvcc -cudart shared program: every call recorded with exact sizes
exe = os.path.join(a.out, 'runtime_shared')
subprocess.run(['nvcc', '-g', '-cudart', 'shared', '-o', exe, os.path.join(here, 'runtime_shared.cu')], check=True)
db = os.path.join(a.out, 'runtime_shared.db')
bare, traced = run([exe]), run([exe], shim=shim, db=db)
def masked(s):  # host pointers differ from run to run (ASLR), with or without the shim
    return re.sub(r'0x[0-9a-f]+', 'ADDR', s)
report(masked(bare.stdout) == masked(traced.stdout) and bare.returncode == traced.returncode == 0,
       'nvcc -cudart shared: output (addresses masked) and exit code identical', 'rc %d' % traced.returncode)
want = []
for line in traced.stdout.splitlines():
    w = line.split()
    if len(w) == 3 and w[1].startswith('0x'):
        want.append((w[0], int(w[1], 16), int(w[2])))
got = rows(db, "SELECT api, ptr, size FROM events_v WHERE op = 'alloc' AND result = 0 ORDER BY id")
report(got == want, 'nvcc -cudart shared: every allocation recorded, pointers and sizes exact',
       '%d allocations' % len(got) if got == want else 'trace %s != program %s' % (got, want))
fails = rows(db, 'SELECT api, size, result FROM failures')
report(fails == [('cudaMalloc', 1 << 50, 2)], 'nvcc -cudart shared: failed cudaMalloc recorded', str(fails))
frees = one(db, "SELECT count(*) FROM events_v WHERE op = 'free' AND size IS NOT NULL")
report(frees == len(want) and one(db, 'SELECT count(*) FROM live_at_exit') == 0,
       'nvcc -cudart shared: every free recorded with its size, nothing live at exit', '%d frees' % frees)
gputrace = os.path.join(a.build, 'analyzer', 'gputrace')
if os.path.exists(gputrace):   # file:line from nvcc -g debug info, after the run
    sym = subprocess.run([gputrace, 'symbolize', db], capture_output=True, text=True)
    src_lines = [n for n, l in enumerate(open(os.path.join(here, 'runtime_shared.cu')), 1) if 'cudaMalloc(&p[i]' in l]
    got = rows(db, "SELECT DISTINCT f.file, f.line FROM events_v e JOIN stack_frames sf ON sf.stack_id = e.stack_id "
                   "AND sf.level = 0 JOIN frames f ON f.id = sf.frame_id WHERE e.api = 'cudaMalloc' AND e.result = 0")
    report(sym.returncode == 0 and [(os.path.basename(f or ''), l) for f, l in got] == [('runtime_shared.cu', src_lines[0])],
           'gputrace symbolize: cudaMalloc call site is runtime_shared.cu:%d' % src_lines[0], '%s %s' % (got, sym.stderr.strip()))

# step time with and without the shim, interleaved
t_bare, t_traced = [], []
for i in range(a.timing_runs):
    t_bare.append(counters(run(train).stdout)['step_ms'])
    t_traced.append(counters(run(train, shim=shim, db=os.path.join(a.out, 't%d.db' % i)).stdout)['step_ms'])
report(True, 'step time (median of %d interleaved runs)' % a.timing_runs,
       'bare %.3f ms, traced %.3f ms, ratio %.3f' % (median(t_bare), median(t_traced), median(t_traced) / median(t_bare)))
finish()
