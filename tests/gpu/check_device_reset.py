"""GPU check of device resets (device_reset.cu: cases that allocate and
reset the device instead of freeing, as test suites and CUDA samples do),
built `-cudart shared` (the runtime's cudaDeviceReset hooked), static (the
runtime's reset reaches the driver's cuDevicePrimaryCtxReset through
cuGetProcAddress) and calling the driver's reset itself:
- output and exit code as untraced;
- one reset event per reset, of the API the program's build reaches;
- the reset's free rows end the device, managed and pinned allocations it
  gave back, and nothing else: at exit only the pool's allocations are live
  (they outlive a reset: probe_reset.cu, session 47);
- device memory's peak is one case's (4 x 64 MiB), not the cases' sum;
- leaks counts only the pool's allocations.
usage: check_device_reset.py --build BUILD --out DIR [--cases N]"""
import argparse
import json
import os
import subprocess

from gpucheck import finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--cases', type=int, default=5)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
MiB = 1 << 20

for build, flags in (('shared', ['-cudart', 'shared']), ('static', [])):
    exe = os.path.join(a.out, 'device_reset_' + build)
    subprocess.run(['nvcc', '-g'] + flags + ['-o', exe, os.path.join(here, 'device_reset.cu'), '-lcuda'], check=True)
    for mode in ('runtime', 'driver'):
        name = '%s-%s' % (build, mode)
        argv = [exe, str(a.cases)] + (['driver'] if mode == 'driver' else [])
        db = os.path.join(a.out, name + '.db')
        if os.path.exists(db):
            os.remove(db)
        bare, traced = run(argv), run(argv, shim=shim, db=db)
        report(bare.returncode == traced.returncode == 0 and bare.stdout == traced.stdout,
               '%s: output and exit code as untraced' % name,
               'rc %d/%d: %s %s' % (bare.returncode, traced.returncode, traced.stdout[-300:], traced.stderr[-500:]))
        if traced.returncode:
            continue
        resets = rows(db, "SELECT api, device, result FROM events_v WHERE api GLOB '*Reset*' ORDER BY id")
        # the static runtime's reset asks cuGetProcAddress for the driver's at version 7000: the unversioned export
        want_api = {('shared', 'runtime'): 'cudaDeviceReset',
                    ('static', 'runtime'): 'cuDevicePrimaryCtxReset'}.get((build, mode), 'cuDevicePrimaryCtxReset_v2')
        report(resets == [(want_api, 0, 0)] * a.cases, '%s: one %s event per reset' % (name, want_api), str(resets))
        freed = rows(db, """SELECT a.memory, count(*), sum(a.size) FROM allocations a JOIN events_v f ON f.id = a.free_id
                            WHERE f.api = 'reset_free' GROUP BY a.memory ORDER BY 1""")
        live = rows(db, "SELECT memory, count(*), sum(size) FROM allocations WHERE free_ns IS NULL GROUP BY memory")
        n = a.cases
        print('   %s: freed by resets %s; live at exit %s' % (name, freed, live))
        report(freed == [('device', 4 * n, 4 * n * 64 * MiB), ('host', n, n * 4 * MiB), ('managed', n, n * 8 * MiB)]
               and live == [('pool', n, n * 2 * MiB)],
               '%s: the resets free device, managed and pinned memory; only the pool\'s outlive them' % name,
               'freed %s, live %s' % (freed, live))
        s = json.loads(subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True).stdout)
        peaks = {(x['memory'], x['device']): x['peak_bytes'] for x in s['peaks']}
        report(peaks.get(('device', 0)) == 4 * 64 * MiB, '%s: device peak is one case\'s' % name, str(peaks))
        lk = json.loads(subprocess.run([gputrace, 'leaks', '--json', db], capture_output=True, text=True).stdout)
        counted = lk['total_bytes'] + lk['at_end_bytes'] + lk['held_for_run_bytes'] + lk['held_steady_bytes']
        report(counted == n * 2 * MiB, '%s: leaks counts only the pool\'s allocations' % name,
               'leaks %s, at end %s, held %s (pool %d)' % (lk['total_bytes'], lk['at_end_bytes'],
                                                           lk['held_for_run_bytes'], n * 2 * MiB))
finish()
