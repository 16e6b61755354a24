#!/usr/bin/env python3
"""The writer thread at a training step's pace (bench_paced: 700 allocations a
step, ~8 us of CPU work after each, ~1,400 events a step): the step time
traced against bare, and the writer thread's CPU time per 1,000 events, for
one or more builds side by side, fresh processes interleaved in shuffled
order; medians and spread. The first build's stand-in runs every build.
--work W: CPU work after each allocation (bench_paced's W, 10000 by default:
~240,000 events a second on the CI machine); a larger W is a slower pace
(80000: ~30,000 events a second, the H200 transformer step's under
cudaMallocAsync, where the writer's fixed cost a wake-up shows).
usage: bench_writer.py BUILD [BUILD...] [--runs N] [--steps N] [--work W]"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sqlite3
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument('builds', nargs='+')
ap.add_argument('--runs', type=int, default=7)
ap.add_argument('--steps', type=int, default=100)
ap.add_argument('--work', type=int, default=10000)
a = ap.parse_args()
builds = [os.path.abspath(b) for b in a.builds]
prog = os.path.join(builds[0], 'tests', 'bench', 'bench_paced')
fake = os.path.join(builds[0], 'tests', 'fake_cuda')
tmp = tempfile.mkdtemp(prefix='gputrace-writer-')


def cpu_of_threads(pid):
    """{tid: CPU seconds} of a process, read just before it exits (it is stopped there)."""
    out = {}
    for tid in os.listdir('/proc/%d/task' % pid):
        with open('/proc/%d/task/%s/stat' % (pid, tid)) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    return out


def run(label, build, i):
    env = dict(os.environ, LD_LIBRARY_PATH=fake, GPUTRACE_QUIET='1', GPUTRACE_CUPTI='0')
    db = None
    if build:
        db = os.path.join(tmp, '%d-%d.db' % (label, i))
        env.update(LD_PRELOAD=os.path.join(build, 'shim', 'libgputrace.so'), GPUTRACE_OUTPUT=db)
    # ptrace-free: the program is stopped at exit by a SIGSTOP it cannot see, so
    # its threads' CPU times are read while they still exist
    p = subprocess.Popen(['bash', '-c', '"$@" & pid=$!; echo $pid; wait $pid', '_', prog, str(a.steps), '700', str(a.work)],
                         env=env, stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    cpu = {}
    while p.poll() is None:
        try:
            cpu = cpu_of_threads(pid) or cpu
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
        time.sleep(0.02)
    out = p.stdout.read()
    step = float(out.split('median_step_us=')[1].split()[0])
    writer = sorted(cpu.values())[0] if len(cpu) > 1 else 0.0   # the main thread is the busiest
    events = 0
    if db:
        con = sqlite3.connect(db)
        events = con.execute('SELECT events_recorded FROM processes').fetchone()[0]
        con.close()
    return step, writer, events


labels = [None] + builds
res = {i: [] for i in range(len(labels))}
for r in range(a.runs):
    order = list(range(len(labels)))
    random.shuffle(order)
    for i in order:
        res[i].append(run(i, labels[i], r))
bare = statistics.median(x[0] for x in res[0])
print('bench_writer: %d runs x %d steps (work %d), median step (us), spread, ratio to bare; writer CPU ms per 1,000 '
      'events' % (a.runs, a.steps, a.work))
for i, label in enumerate(labels):
    steps = [x[0] for x in res[i]]
    line = '  %-40s %8.1f  %8.1f-%-8.1f  %.4f' % (label or 'bare', statistics.median(steps), min(steps), max(steps),
                                                 statistics.median(steps) / bare)
    if label:
        per_k = [1000 * x[1] * 1000 / x[2] for x in res[i] if x[2]]
        line += '  writer %.3f ms (%.3f-%.3f)' % (statistics.median(per_k), min(per_k), max(per_k))
    print(line)
shutil.rmtree(tmp, ignore_errors=True)
