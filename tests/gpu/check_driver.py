"""GPU checks of driver-level capture: (a) PyTorch with expandable segments
(cuMemCreate/cuMemMap through cudaGetDriverEntryPointByVersion) against
memory_reserved()/max_memory_reserved(); (b) a program built with plain
`nvcc prog.cu` (static cudart: no runtime symbol to interpose); (c) a
driver-API-only program (cuMemAlloc, cuMemCreate + cuMemMap, a handle mapped
twice, releases while mapped); (d) the default allocator and the
cudaMallocAsync backend still count each allocation once (no driver rows).
Output and exit code are compared with and without the shim for each.
On a failure the traced run is repeated with GPUTRACE_DEBUG_HOOKS=1 and the
lookups the shim saw are printed.
usage: check_driver.py --build BUILD --out DIR"""
import argparse
import os
import re
import subprocess

from gpucheck import counters, finish, live_and_peak, live_peak, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
train = ['python3', os.path.join(here, 'train_mlp.py'), '--steps', '60', '--hard-exit']


def double_counted(db):
    """Driver allocations at the address and size of a runtime allocation: a
    runtime call counted a second time through the driver call it made."""
    return one(db, """SELECT count(*) FROM events_v d JOIN events_v r ON r.ptr = d.ptr AND r.size = d.size
                      WHERE d.layer = 'driver' AND r.layer = 'runtime' AND d.op = 'alloc' AND r.op = 'alloc'
                      AND d.result = 0 AND r.result = 0 AND d.tid = r.tid AND d.id < r.id
                      AND r.t_ns - d.t_ns < 1000000""")  # the driver row recorded inside the runtime call


def api_counts(db):
    return rows(db, 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api ORDER BY api')


def debug_lookups(argv, env_extra, name):
    """Repeat a failed traced run with the shim's lookup log; print it."""
    p = run(argv, shim=shim, db=os.path.join(a.out, name + '-debug.db'),
            env_extra=dict(env_extra, GPUTRACE_DEBUG_HOOKS='1'))
    lines = [l for l in p.stderr.splitlines() if 'debug:' in l]
    print('   %s: %d lookups seen by the shim (GPUTRACE_DEBUG_HOOKS=1), first 40:' % (name, len(lines)))
    for l in lines[:40]:
        print('     ' + l)


def masked(s):  # host pointers differ from run to run (ASLR), with or without the shim
    return re.sub(r'0x[0-9a-f]+', 'ADDR', s)


def same_output(name, bare, traced, lines):
    ok = bare.returncode == traced.returncode == 0 and lines(bare.stdout) == lines(traced.stdout)
    if not ok:
        print('   bare:   %s\n   traced: %s\n   traced stderr: %s' % (lines(bare.stdout), lines(traced.stdout),
                                                                     traced.stderr[-2000:]))
    report(ok, '%s: output and exit code identical' % name,
           'rc %d/%d; %d lines compared' % (bare.returncode, traced.returncode, len(lines(bare.stdout))))
    return traced.returncode == 0


def printed_allocs(stdout):
    """'api PTR SIZE' lines of a program's output -> [(api, ptr, size)]."""
    out = []
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[1].startswith('0x') and w[2].isdigit():
            out.append((w[0], int(w[1], 16), int(w[2])))
    return out


# (a) expandable segments; (d) default allocator and cudaMallocAsync backend
def loss_lines(s):   # memory_reserved() of the async backend varies run to run (see check_capture)
    return [l for l in s.splitlines() if l.startswith('step ') or 'allocated=' in l]


for mode, conf in (('expandable', 'expandable_segments:True'), ('default', None),
                   ('async', 'backend:cudaMallocAsync')):
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    db = os.path.join(a.out, 'train-%s.db' % mode)
    bare, traced = run(train, env_extra=env), run(train, shim=shim, db=db, env_extra=env)
    if not same_output(mode, bare, traced, loss_lines):
        continue
    c = counters(traced.stdout)
    print('   %s torch: reserved=%d max_reserved=%d allocated=%d max_allocated=%d' %
          (mode, c['reserved'], c['max_reserved'], c['allocated'], c['max_allocated']))
    print('   %s api counts: %s' % (mode, api_counts(db)))
    print('   %s stderr: %s' % (mode, traced.stderr.strip().splitlines()[-1:]))
    ok_int = one(db, 'PRAGMA integrity_check') == 'ok' and one(db, 'SELECT events_dropped FROM processes') == 0
    report(ok_int, '%s: integrity ok, nothing dropped' % mode, '%d events' % one(db, 'SELECT count(*) FROM events'))
    dup = double_counted(db)
    report(dup == 0, '%s: no allocation counted twice (runtime call and the driver call it made)' % mode,
           '%d driver rows at a runtime allocation\'s address and size' % dup)
    # what PyTorch's counters count: its allocator's calls; anything else is
    # device memory held outside it (e.g. a library's own), printed, not compared
    own = {'expandable': "api = 'cuMemCreate'", 'default': "api = 'cudaMalloc'",
           'async': "api IN ('cudaMallocAsync', 'cudaMallocFromPoolAsync')"}[mode]
    live, peak = live_peak(db, own)
    other = rows(db, "SELECT api, count(*), sum(size) FROM allocations WHERE memory IN ('device', 'pool') AND NOT (%s) "
                     "GROUP BY api" % own)
    print('   %s: device/pool memory outside the allocator\'s own calls: %s' % (mode, other or 'none'))
    live_all, peak_all = live_and_peak(db, 'device')
    print('   %s: all device bytes: live %d, peak %d' % (mode, live_all, peak_all))
    if mode == 'expandable':
        creates = one(db, "SELECT count(*) FROM events_v WHERE api = 'cuMemCreate' AND result = 0")
        maps = one(db, "SELECT count(*) FROM events_v WHERE api = 'cuMemMap' AND result = 0")
        report(creates > 0 and maps > 0, 'expandable: cuMemCreate and cuMemMap captured',
               '%d cuMemCreate, %d cuMemMap, %d runtime allocation calls' %
               (creates, maps, one(db, "SELECT count(*) FROM events_v WHERE layer = 'runtime' AND op = 'alloc'")))
        report(live == c['reserved'], 'expandable: live cuMemCreate bytes at exit == memory_reserved()',
               'trace %d, torch %d (diff %d)' % (live, c['reserved'], live - c['reserved']))
        report(peak == c['max_reserved'], 'expandable: peak cuMemCreate bytes == max_memory_reserved()',
               'trace %d, torch %d (diff %d)' % (peak, c['max_reserved'], peak - c['max_reserved']))
        report(one(db, 'SELECT peak_device_bytes FROM processes') == peak_all,
               'expandable: processes.peak_device_bytes == peak device bytes from events', str(peak_all))
        print('   expandable reservations: %s' % rows(db, "SELECT count(*), sum(size) FROM events_v "
                                                          "WHERE api = 'cuMemAddressReserve' AND result = 0"))
        if creates == 0 or live != c['reserved']:
            debug_lookups(train, env, mode)
    elif mode == 'default':
        report(live == c['reserved'] and peak == c['max_reserved'],
               'default: live/peak cudaMalloc bytes == memory_reserved()/max_memory_reserved()',
               'live %d vs %d, peak %d vs %d' % (live, c['reserved'], peak, c['max_reserved']))
    else:
        report(live == c['allocated'] and peak == c['max_allocated'],
               'async: live/peak pool bytes == memory_allocated()/max_memory_allocated()',
               'live %d vs %d, peak %d vs %d' % (live, c['allocated'], peak, c['max_allocated']))


# (b) plain `nvcc prog.cu`: cudart linked statically
exe = os.path.join(a.out, 'runtime_static')
subprocess.run(['nvcc', '-g', '-o', exe, os.path.join(here, 'runtime_shared.cu')], check=True)
linked = subprocess.run(['ldd', exe], capture_output=True, text=True).stdout
print('   runtime_static links: %s' % (', '.join(l.split()[0] for l in linked.splitlines() if 'cuda' in l)
                                     or 'no CUDA library'))
db = os.path.join(a.out, 'runtime_static.db')
bare, traced = run([exe]), run([exe], shim=shim, db=db)
if same_output('nvcc static cudart', bare, traced, lambda s: masked(s).splitlines()):
    want = printed_allocs(traced.stdout)
    got = rows(db, "SELECT api, ptr, size FROM events_v WHERE op = 'alloc' AND result = 0 ORDER BY id")
    got_ps = {(p, s) for _, p, s in got}
    missing = [w for w in want if (w[1], w[2]) not in got_ps]
    print('   static api counts: %s' % api_counts(db))
    print('   static: the program allocated %s' % [(x, s) for x, _, s in want])
    print('   static: the trace holds %s' % [(x, s) for x, _, s in got])
    report(bool(want) and not missing, 'nvcc static cudart: every allocation recorded, pointers and sizes exact',
           '%d of %d program allocations found (%d rows in the trace)%s' %
           (len(want) - len(missing), len(want), len(got), '; missing %s' % missing if missing else ''))
    fails = rows(db, 'SELECT api, size, result FROM failures')
    report(any(s == 1 << 50 and r == 2 for _, s, r in fails), 'nvcc static cudart: failed cudaMalloc(1<<50) recorded',
           str(fails))
    freed = rows(db, "SELECT ptr, size FROM events_v WHERE op = 'free' AND result = 0 AND size IS NOT NULL")
    unfreed = [w for w in want if (w[1], w[2]) not in set(freed)]
    report(bool(want) and not unfreed, 'nvcc static cudart: every free recorded with its size',
           '%d frees in the trace%s' % (len(freed), '; not freed %s' % unfreed if unfreed else ''))
    report(one(db, "SELECT count(*) FROM events_v WHERE layer = 'runtime'") == 0,
           'nvcc static cudart: nothing came through runtime symbols (so nothing counted twice)',
           '%d runtime rows' % one(db, "SELECT count(*) FROM events_v WHERE layer = 'runtime'"))
    if missing or not want:
        debug_lookups([exe], {}, 'static')

# (c) a driver-API-only program
exe = os.path.join(a.out, 'driver_api')
subprocess.run(['nvcc', '-g', '-o', exe, os.path.join(here, 'driver_api.cu'), '-lcuda'], check=True)
db = os.path.join(a.out, 'driver_api.db')
bare, traced = run([exe]), run([exe], shim=shim, db=db)
if same_output('driver API program', bare, traced, lambda s: masked(s).splitlines()):
    out = traced.stdout.split()
    g = int(out[out.index('granularity') + 1])
    va = int(out[out.index('va') + 1], 16)
    allocs = printed_allocs(traced.stdout)
    plain = [x for x in allocs if x[0] == 'cuMemAlloc_v2']
    handles = [x for x in allocs if x[0] == 'cuMemCreate']
    print('   driver api counts: %s' % api_counts(db))
    got = rows(db, "SELECT api, ptr, size FROM events_v WHERE op = 'alloc' AND result = 0 AND layer = 'driver' "
                   "AND api IN ('cuMemAlloc_v2', 'cuMemCreate') ORDER BY id")
    report(got == plain + handles, 'driver API: cuMemAlloc and cuMemCreate recorded, pointers/handles and sizes exact',
           '%d rows' % len(got) if got == plain + handles else 'trace %s != program %s' % (got, plain + handles))
    maps = rows(db, "SELECT e.ptr, e.size, m.handle FROM events_v e JOIN mappings m ON m.event_id = e.id ORDER BY e.id")
    h1, h2 = handles[0][1], handles[1][1]
    want_maps = [(va, 2 * g, h1), (va + 2 * g, 2 * g, h1), (va + 4 * g, g, h2)]
    report(maps == want_maps, 'driver API: each cuMemMap recorded with its handle', str(maps))
    live = [r[0] for r in rows(db, "SELECT live_bytes FROM memory_timeline WHERE memory = 'device' ORDER BY t_ns")]
    # the plain allocations all live at once, then freed; then h1, h2, both freed by the last unmap
    peak_plain = sum(s for _, _, s in plain)
    report(max(live) == max(peak_plain, 3 * g) and live[-1] == 0 and 4 * g not in live and 5 * g not in live,
           'driver API: device bytes count a twice-mapped handle once, releases while mapped end at the last unmap',
           'device live bytes over time %s (granularity %d)' % (live, g))
    rel = rows(db, "SELECT api, size FROM events_v WHERE api LIKE 'cuMemRelease%' OR api = 'cuMemUnmap_last_mapping' "
                   "ORDER BY id")
    report(rel == [('cuMemRelease_while_mapped', g), ('cuMemRelease_while_mapped', 2 * g),
                   ('cuMemUnmap_last_mapping', 2 * g), ('cuMemUnmap_last_mapping', g)],
           'driver API: releases while mapped and the unmap that frees them', str(rel))
    if not got:
        debug_lookups([exe], {}, 'driver_api')
finish()
