"""GPU check: a thread started with a small stack that calls cudaMalloc deep in
it (tests/progs/small_stack.c, built by nvcc with the runtime static and
shared): where the untraced program runs, the traced one runs too, its
allocations recorded, those with too little stack left without their call
stack (drops: stack_low, one a cudaMalloc); with room, every allocation
carries its stack. Prints how deep the untraced program could go. Seconds.
usage: check_small_stack.py --build BUILD --out DIR"""
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
src = os.path.join(here, '..', 'progs', 'small_stack.c')
for cudart in ('static', 'shared'):
    exe = os.path.join(a.out, 'small_stack_' + cudart)
    subprocess.run(['nvcc', '-O1', '-cudart', cudart, '-o', exe, src, '-lpthread'], check=True)
    # the deepest the untraced program runs at, of a few
    # the real runtime's first call on a thread takes more stack than the stand-in's: the smallest
    # stack the untraced program runs in, at the deepest it runs there
    found = [(s, u) for s in (32768, 65536, 131072, 262144)
             for u in (s - 8192, s - 12288, s - 16384, s - 24576, s // 2, s // 4)
             if u > 0 and run([exe, str(s), str(u)]).returncode == 0]
    if not found:
        report(False, '%s: the untraced program runs at some depth' % cudart, 'in no stack up to 256 KiB')
        continue
    STACK, use = min(found, key=lambda x: (x[0], -x[1]))
    print('   %s: untraced, a %d-byte thread stack runs at most %d deep (of those tried)' % (cudart, STACK, use),
          flush=True)
    db = os.path.join(a.out, 'low_%s.db' % cudart)
    p = run([exe, str(STACK), str(use)], shim=shim, db=db, env_extra={'GPUTRACE_QUIET': '1'})
    ok = os.path.exists(db)
    low = one(db, "SELECT coalesce(sum(count), 0) FROM drops WHERE reason = 'stack_low'") if ok else None
    # the static runtime allocates through the driver (cuMemAlloc_v2): an allocation of either
    n = one(db, "SELECT count(*) FROM events_v WHERE op = 'alloc'") if ok else None
    stacked = one(db, "SELECT count(*) FROM events_v WHERE op = 'alloc' AND stack_id IS NOT NULL AND tid != "
                      "(SELECT pid FROM processes)") if ok else None
    report(p.returncode == 0 and p.stdout == 'done\n' and n == 101 and low + stacked == 100,
           '%s: a %d-byte thread stack used %d deep runs traced, each of its 100 allocations with its stack or '
           'counted without one' % (cudart, STACK, use), 'rc %d, allocations %s, with a stack %s, stack_low %s %s' % (
               p.returncode, n, stacked, low, p.stderr[-300:]))
    db = os.path.join(a.out, 'room_%s.db' % cudart)
    p = run([exe, '1048576', '8192'], shim=shim, db=db, env_extra={'GPUTRACE_QUIET': '1'})
    bare_stacks = one(db, "SELECT count(*) FROM events_v WHERE op = 'alloc' AND stack_id IS NULL") \
        if os.path.exists(db) else None
    report(p.returncode == 0 and bare_stacks == 0, '%s: with room every allocation carries its stack' % cudart,
           'rc %d, without a stack %s' % (p.returncode, bare_stacks))
finish()
