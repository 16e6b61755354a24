#!/usr/bin/env python3
"""The shim's hot path in instructions, counted by valgrind's callgrind: what
each cudaMallocAsync/cudaFreeAsync pair adds to the calling thread, and to
the writer thread, for one or more builds side by side. Instruction counts
do not move with the host's load (the shim's functions count alike to a few
instructions from run to run; the calling thread's total, which includes
Python's own work, to ~1%), which wall and CPU times on a shared
machine do (the GPU hosts' step times spread 15-20%; this machine's per-call
times 30-50%): a change to the hot path shows here as an exact figure, and
its time on the GPU still needs bench_cost.py.

The program is bench_pystacks.py's (ctypes calls from a 20-deep Python
stack into the CUDA stand-in), run with PAIRS1 and PAIRS2 pairs; the
difference between the two runs, less the same difference untraced, over
PAIRS2 - PAIRS1, is the cost of one more pair: start-up, the first sighting
of each frame and the trace's closing cancel out.
usage: bench_instructions.py BUILD [BUILD...] [--python EXE] [--pairs1 N] [--pairs2 N] [--env K=V ...]"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_pystacks import PROGRAM  # noqa: E402  (the same program, one definition)

# functions whose inclusive count per pair is worth a column (shim/*.c)
PARTS = ['gt_py_capture', 'gt_py_capture_backward', 'gt_unwind_memo', 'publish', 'interleave', 'gt_stack_capture',
         'gt_py_count_call']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('builds', nargs='+')
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--pairs1', type=int, default=2000)
    ap.add_argument('--pairs2', type=int, default=12000)
    ap.add_argument('--env', action='append', default=[], help='K=V for the traced runs (GPUTRACE_PYTHON=0, ...)')
    ap.add_argument('--backward', action='store_true',
                    help='a native thread allocates while the Python thread waits in a function named like '
                         'PyTorch\'s _engine_run_backward (what an autograd thread pays)')
    a = ap.parse_args()
    if not shutil.which('valgrind') or not shutil.which('callgrind_annotate'):
        print('bench_instructions.py: valgrind (callgrind) is not installed: apt-get install valgrind')
        return 2
    tmp = tempfile.mkdtemp(prefix='gputrace-instr-')
    script = os.path.join(tmp, 'alloc_deep.py')
    with open(script, 'w') as f:
        f.write(PROGRAM)
    extra = dict(kv.split('=', 1) for kv in a.env)
    # one stand-in for every build (the first's): a build of the shim alone has none, and a missing
    # directory would let ctypes find the real libcudart, whose calls fail fast without a GPU
    fake = os.path.join(os.path.abspath(a.builds[0]), 'tests', 'fake_cuda')
    if not os.path.exists(os.path.join(fake, 'libcudart.so.13')):
        print('bench_instructions.py: no CUDA stand-in in %s: build %s whole' % (fake, a.builds[0]))
        return 2

    def run(build, pairs, traced):
        """(calling threads' Ir, writer's Ir, {part: inclusive Ir}) of one run under callgrind: the
        writer is the thread that runs writer_main, the calling threads all others."""
        build = os.path.abspath(build)
        out = os.path.join(tmp, '%s-%d-%d.cg' % (os.path.basename(build), pairs, traced))
        env = dict(os.environ, LD_LIBRARY_PATH=fake, GPUTRACE_QUIET='1')
        if traced:
            env.update(LD_PRELOAD=os.path.join(build, 'shim', 'libgputrace.so'), GPUTRACE_CUPTI='0',
                       GPUTRACE_OUTPUT=os.path.join(tmp, 'trace-%d.db' % pairs), GPUTRACE_QUEUE_EVENTS=str(1 << 20),
                       **extra)
        for leftover in os.listdir(tmp):
            if leftover.startswith(os.path.basename(out)) or leftover.startswith('trace-'):
                os.unlink(os.path.join(tmp, leftover))
        worker = [os.path.join(os.path.abspath(a.builds[0]), 'tests', 'progs', 'libnative_worker.so')] \
            if a.backward else []
        subprocess.run(['valgrind', '--tool=callgrind', '--separate-threads=yes', '--callgrind-out-file=' + out,
                        a.python, script, str(pairs)] + worker, env=env, check=True, capture_output=True)
        calling, writer, parts = 0, 0, dict.fromkeys(PARTS, 0)
        for name in os.listdir(tmp):
            m = re.match(re.escape(os.path.basename(out)) + r'-(\d+)$', name)
            if not m:
                continue
            text = subprocess.run(['callgrind_annotate', '--inclusive=yes', '--threshold=100',
                                   os.path.join(tmp, name)], capture_output=True, text=True, check=True).stdout
            total = int(re.search(r'^([\d,]+) .*PROGRAM TOTALS', text, re.M).group(1).replace(',', ''))
            if re.search(r'shim/writer\.c:writer_main ', text):
                writer += total
                continue
            calling += total
            seen = set()
            for line in text.splitlines():
                mm = re.match(r'\s*([\d,]+) .*shim/[a-z_]+\.c:([A-Za-z_0-9]+) ', line)
                if mm and mm.group(2) in PARTS and mm.group(2) not in seen:
                    seen.add(mm.group(2))
                    parts[mm.group(2)] += int(mm.group(1).replace(',', ''))
        return calling, writer, parts

    n = a.pairs2 - a.pairs1
    bare1, bare2 = run(a.builds[0], a.pairs1, False), run(a.builds[0], a.pairs2, False)
    bare_main = (bare2[0] - bare1[0]) / n
    print('instructions per cudaMallocAsync/cudaFreeAsync pair (%s; %s; pairs %d -> %d)'
          % ('a native thread, 24 Python frames of the thread waiting in backward' if a.backward
             else '22 Python frames deep', os.path.basename(a.python), a.pairs1, a.pairs2))
    print('  untraced: %.0f on the calling thread%s' % (bare_main, 's (the program\'s, all)' if a.backward else ''))
    rows = []
    for build in a.builds:
        t1, t2 = run(build, a.pairs1, True), run(build, a.pairs2, True)
        added = (t2[0] - t1[0]) / n - bare_main
        parts = {p: (t2[2][p] - t1[2][p]) / n for p in PARTS}
        rows.append((build, added, (t2[1] - t1[1]) / n, parts))
    for build, added, writer, parts in rows:
        print('  %s: +%.0f on the calling thread, +%.0f on the shim\'s other threads (the writer)'
              % (build, added, writer))
        print('    ' + ', '.join('%s %.0f' % (p, v) for p, v in parts.items() if v))
    if len(rows) > 1:
        base = rows[0][1]
        for build, added, _, _ in rows[1:]:
            print('  %s / %s on the calling thread: %.3f' % (build, rows[0][0], added / base if base else float('nan')))
    return 0


if __name__ == '__main__':
    sys.exit(main())
