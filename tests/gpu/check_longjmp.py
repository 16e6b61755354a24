"""GPU check: a watchdog that leaves a CUDA call by siglongjmp (tests/gpu/watchdog.cu,
built by nvcc with the runtime static and shared): a kernel spins, cudaFree waits
for it, SIGALRM's handler jumps out of the free after 200 ms, and the program goes
on with 1000 allocations and frees from deeper frames. Traced as untraced (output,
exit); the call left is counted (drops: left_by_longjmp), every call after it is
recorded (the thread's re-entry guard was left set before session 49: "2 events, 0
dropped"), and the writer is not held by the free's reserved slot. Seconds.
usage: check_longjmp.py --build BUILD --out DIR"""
import argparse
import os
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
    bare = run([exe, '2000', '1000'], timeout=60)   # (a runtime left holding a lock would hang it: untraced too)
    report(bare.returncode == 0 and bare.stdout == 'left 1, 2000 calls after\n',
           '%s: untraced, the free is left and 2000 calls follow' % cudart, 'rc %d %r %s' % (
               bare.returncode, bare.stdout, bare.stderr[-300:]))
    db = os.path.join(a.out, 'watchdog_%s.db' % cudart)
    p = run([exe, '2000', '1000'], shim=shim, db=db, env_extra={'GPUTRACE_QUIET': '1'}, timeout=60)
    report((p.returncode, p.stdout) == (bare.returncode, bare.stdout),
           '%s: traced as untraced' % cudart, 'rc %d/%d %r' % (p.returncode, bare.returncode, p.stdout))
    ok = os.path.exists(db)
    left = one(db, "SELECT coalesce(sum(count), 0) FROM drops WHERE reason = 'left_by_longjmp'") if ok else None
    after = one(db, "SELECT count(*) FROM events_v WHERE size = 8192 AND result = 0") if ok else None
    full = one(db, "SELECT coalesce(sum(count), 0) FROM drops WHERE reason IN ('queue_full', "
                   "'unfinished_at_exit')") if ok else None
    report(left == 1 and after is not None and after >= 1000 and full == 0,
           '%s: the call left is counted, the 1000 allocations after it are recorded, nothing held up' % cudart,
           'left_by_longjmp %s, 8 KiB events %s, queue_full + unfinished_at_exit %s' % (left, after, full))
finish()
