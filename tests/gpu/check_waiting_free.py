"""GPU check: a synchronizing cudaFree waiting on a kernel holds no event behind it
(tests/gpu/waiting_free.cu: a kernel spins 1.5 s, one thread's cudaFree waits for
it, another thread makes 40,000 cudaMallocAsync/cudaFreeAsync pairs meanwhile).
The free's record used to keep its place in the queue unfilled until the free
returned: with a queue of 1,024 events and a wait of 100 ms, every pair made while
it waited past that was dropped (queue_held). Now the writer takes the free after
5 ms as one that worked: nothing dropped, every call recorded, the free in its
place (before the other thread's calls), the block not live at the end, and the
program's output as untraced. The check has teeth only when the other thread made
more than 1,024 pairs while the free waited (said in the figures). Then the kernel
faults (a write through a bad address) and the waiting free fails with the sticky
error: its row, written while it waited, takes that result afterwards, and the block
reads live at the end. Seconds.
usage: check_waiting_free.py --build BUILD --out DIR"""
import argparse
import os
import re
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
exe = os.path.join(a.out, 'waiting_free')
subprocess.run(['nvcc', '-O1', '-cudart', 'shared', '-o', exe, os.path.join(here, 'waiting_free.cu')], check=True)
n = 40000
argv = [exe, '1500', str(n)]
bare = run(argv, timeout=120)
LINE = r'free ([0-9.]+) s, result (-?\d+), pairs during it (\d+) of (\d+), failed (\d+)\n$'
m = re.match(LINE, bare.stdout)
report(bare.returncode == 0 and m is not None, 'untraced: the free waits and the other thread allocates',
       'rc %d %r %s' % (bare.returncode, bare.stdout, bare.stderr[-300:]))
db = os.path.join(a.out, 'waiting_free.db')
if os.path.exists(db):
    os.unlink(db)
env = {'GPUTRACE_CUPTI': '0', 'GPUTRACE_QUEUE_EVENTS': '1024', 'GPUTRACE_QUEUE_WAIT_MS': '100', 'GPUTRACE_QUIET': '1'}
p = run(argv, shim=shim, db=db, env_extra=env, timeout=120)
mt = re.match(LINE, p.stdout)
during = int(mt.group(3)) if mt else None
report(p.returncode == 0 and mt is not None and float(mt.group(1)) > 1.0,
       'traced: the free waited on the kernel, the program ended as untraced',
       'rc %d %r (untraced %r) %s' % (p.returncode, p.stdout, bare.stdout, p.stderr[-300:]))
ok = os.path.exists(db)
recorded = one(db, 'SELECT events_recorded FROM processes') if ok else None
dropped = one(db, 'SELECT events_dropped FROM processes') if ok else None
drops = one(db, "SELECT group_concat(reason || ' ' || count) FROM drops WHERE count > 0") if ok else None
report(during is not None and during > 1024 and recorded == 2 + 2 * n and dropped == 0,
       'nothing dropped behind the waiting free, every call recorded',
       '%s pairs made while the free waited (a queue of 1,024 events); recorded %s of %d, dropped %s (%s)' % (
           during, recorded, 2 + 2 * n, dropped, drops))
# by operation, not name: a runtime linked statically reaches the shim as driver calls
big = "(SELECT ptr FROM events_v WHERE op = 'alloc' AND size >= 777777)"
if ok:
    got = sqlite3.connect(db).execute("SELECT api, t_ns, result, size FROM events_v WHERE op = 'free' AND ptr = %s"
                                      % big).fetchall()
    first = one(db, "SELECT min(t_ns) FROM events_v WHERE op = 'alloc' AND size = 4096")
    live = one(db, "SELECT count(*) FROM live_at_exit WHERE size >= 777777")
    report(len(got) == 1 and got[0][2] == 0 and first is not None and got[0][1] < first and live == 0,
           'the waiting free in its place: before the other thread\'s calls, worked, the block not live at the end',
           'free %s; first 4 KiB allocation at %s ns; the block live at exit %s' % (got, first, live))
# the kernel faults: the waiting free fails with the sticky error after the writer took it
argv = [exe, '1500', str(n), 'fault']
bare = run(argv, timeout=120)
m = re.match(LINE, bare.stdout)
report(bare.returncode == 0 and m is not None and int(m.group(2)) != 0,
       'untraced, the kernel faults: the waiting free fails', 'rc %d %r %s' % (bare.returncode, bare.stdout,
                                                                           bare.stderr[-300:]))
db = os.path.join(a.out, 'waiting_free_fault.db')
if os.path.exists(db):
    os.unlink(db)
p = run(argv, shim=shim, db=db, env_extra=env, timeout=120)
mt = re.match(LINE, p.stdout)
report(p.returncode == 0 and mt is not None and m is not None and mt.group(2) == m.group(2) and
       float(mt.group(1)) > 1.0, 'traced, the kernel faults: the free waited and failed as untraced',
       'rc %d %r (untraced %r) %s' % (p.returncode, p.stdout, bare.stdout, p.stderr[-300:]))
if os.path.exists(db) and mt:
    got = sqlite3.connect(db).execute("SELECT api, result, size FROM events_v WHERE op = 'free' AND ptr = %s"
                                      % big).fetchall()
    live = one(db, "SELECT count(*) FROM live_at_exit WHERE size >= 777777")
    notes = one(db, "SELECT count(*) FROM notes WHERE message LIKE '%could not be%'")
    report(len(got) == 1 and got[0][1] == int(mt.group(2)) and got[0][2] is None and live == 1 and notes == 0,
           'the waiting free written while it waited takes its failure afterwards: the block live at the end',
           'free rows %s (the program saw %s), the block live at exit %s, notes of rows not corrected %s; '
           'recorded %s, dropped %s' % (got, mt.group(2), live, notes,
                                        one(db, 'SELECT events_recorded FROM processes'),
                                        one(db, 'SELECT events_dropped FROM processes')))
finish()
