"""GPU check: a watchdog that leaves a CUDA call by siglongjmp (tests/gpu/watchdog.cu,
built by nvcc with the runtime static and shared): a kernel spins, cudaFree waits
for it, SIGALRM's handler jumps out of the free, and the program goes on with 1000
allocations and frees from deeper frames. Traced as untraced (output, exit); the
call left is counted (drops: left_by_longjmp), every call after it is recorded (the
thread's re-entry guard was left set before session 49: "2 events, 0 dropped"), and
the writer is not held by the free's reserved slot.
The call left holds the driver's lock that CUPTI's flush waits for (session 50):
on the writer's thread the periodic flush then never returned (the 2,000 calls not
written, the exit held 30 s), and the atexit flush hung the exit for good. Two
timings: the jump at 200 ms, before CUPTI's first periodic flush (500 ms), and at
900 ms, with that flush already waiting. The traced exit comes within 3 s of the
untraced one, and a CUPTI note says why kernels stop. A third case leaves
cudaDeviceSynchronize, which the shim does not hook (no jump seen, none counted):
the writer and the exit must not be held either. Seconds.
usage: check_longjmp.py --build BUILD --out DIR"""
import argparse
import os
import sqlite3
import subprocess

from gpucheck import finish, one, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
src = os.path.join(here, 'watchdog.cu')
for cudart in ('static', 'shared'):
    exe = os.path.join(a.out, 'watchdog_' + cudart)
    subprocess.run(['nvcc', '-O1', '-cudart', cudart, '-o', exe, src], check=True)
    for spin_ms, alarm_ms, sync in ((2000, 200, False), (3000, 900, False), (3000, 900, True)):
        case = '%s, jump at %d ms%s' % (cudart, alarm_ms, ' out of cudaDeviceSynchronize' if sync else '')
        argv = [exe, str(spin_ms), '1000', str(alarm_ms)] + (['sync'] if sync else [])
        bare = run(argv, timeout=60)   # (a runtime left holding a lock would hang it: untraced too)
        report(bare.returncode == 0 and bare.stdout == 'left 1, 2000 calls after\n',
               '%s: untraced, the call is left and 2000 calls follow' % case, 'rc %d %r %s, %.2f s' % (
                   bare.returncode, bare.stdout, bare.stderr[-300:], bare.wall))
        db = os.path.join(a.out, 'watchdog_%s_%d%s.db' % (cudart, alarm_ms, '_sync' if sync else ''))
        try:
            p = run(argv, shim=shim, db=db, env_extra={'GPUTRACE_QUIET': '1'}, timeout=60)
        except subprocess.TimeoutExpired:
            report(False, '%s: traced as untraced' % case, 'the traced program did not end within 60 s')
            continue
        report((p.returncode, p.stdout) == (bare.returncode, bare.stdout) and p.wall < bare.wall + 3 and
               'did not finish' not in p.stderr,
               '%s: traced as untraced, its exit not held' % case, 'rc %d/%d %r, %.2f s against %.2f s untraced %s' % (
                   p.returncode, bare.returncode, p.stdout, p.wall, bare.wall, p.stderr[-200:]))
        ok = os.path.exists(db)
        left = one(db, "SELECT coalesce(sum(count), 0) FROM drops WHERE reason = 'left_by_longjmp'") if ok else None
        after = one(db, "SELECT count(*) FROM events_v WHERE size = 8192 AND result = 0") if ok else None
        full = one(db, "SELECT coalesce(sum(count), 0) FROM drops WHERE reason IN ('queue_full', "
                       "'unfinished_at_exit')") if ok else None
        report(left == (0 if sync else 1) and after is not None and after >= 2000 and full == 0,
               '%s: the call left is counted (a hooked one), the 2000 calls after it are recorded, nothing held up'
               % case,
               'left_by_longjmp %s, 8 KiB events %s, queue_full + unfinished_at_exit %s' % (left, after, full))
        note = one(db, "SELECT count(*) FROM notes WHERE component = 'cupti' AND message LIKE "
                       "'%a longjmp left a CUDA call%'") if ok else None
        kernels = one(db, "SELECT count(*) FROM kernels") if ok else None
        if not sync:
            report(note == 1, '%s: a CUPTI note says the kernels after the jump are not recorded' % case,
                   'notes %s, kernels recorded %s' % (note, kernels))
        else:
            print('  %s: kernels recorded %s, cupti notes %s' % (case, kernels, [m for (m,) in sqlite3.connect(
                db).execute("SELECT message FROM notes WHERE component = 'cupti'")] if ok else None))
finish()
