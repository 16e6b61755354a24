#!/usr/bin/env python3
"""The stages of README command 2 (scripts/test.sh, run by .ci/run): the whole
suite on the plain build, the whole suite again under AddressSanitizer +
UndefinedBehaviorSanitizer, the threaded tests under ThreadSanitizer. Each
stage is tests/run_tests.py on a build directory of its own; this prints each
stage's count on a line of its own ("== stage NAME: passed N, failed N") and
ends with the one line CI reads, "N passed, N failed", summing every stage.
A stage that cannot build, or ends without its count, is one failure more.

usage: tests/run_stages.py [-k SUBSTRING]...   (passed on to every stage)
GPUTRACE_TEST_STAGES=plain,address picks stages (default: all).
"""
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The threaded tests: the shim's multi-producer queue (unit.queue, capture's
# eight threads), the writer thread against program threads (capture,
# lifecycle's start and exit paths), stacks' lock-free set (threads sharing
# call sites), the entry-point lookups racing dlopen (driver), NVTX ranges
# and CUPTI buffers from several threads (nvtx), fork (lifecycle, pairing,
# children's C programs), the writer's flight-recorder deletes and pool
# samples beside the program's allocating thread (window, cost's pool
# reservation), the run log `gputrace run` reads (launcher), the capture set
# the writer's rows follow (graphs). Left out: tests
# whose traced program is python3
# (an uninstrumented interpreter cannot host a TSan-built shim), and fork
# children that call CUDA (they start a writer thread of their own, whose
# pthread id TSan's registry still holds for the parent's: "dup thread with
# used id", TSan's limit after a threaded fork, not a race), and the fatal
# signal tests (TSan's runtime has its own fault handlers and delivers the
# program's signals from its own; fatal_signal.c's worker and main thread
# share a plain call counter, a race of the test program's, not the shim's).
THREADED = ['unit.', 'capture.', 'lifecycle.ExitPathTest', 'lifecycle.ForkTest.test_fork_child_without_cuda',
            'lifecycle.NoCudaTest', 'lifecycle.ClosedDescriptorsTest', 'driver.', 'nvtx.NvtxRanges',
            'nvtx.CuptiActivity', 'children.ChildrenTest.test_c_', 'window.FlightRecorder', 'cost.PoolReservation',
            'launcher.LauncherTest', 'graphs.GraphCapture.']

# name, build directory, meson options, run_tests.py arguments
STAGES = [
    ('plain', 'build', [], []),
    # The shim is sanitized too and preloaded into sanitized test programs:
    # its hot path and writer run under ASan+UBSan in every traced test
    # (see run_tests.py's sanitizer_env for how the runtime is loaded).
    ('address', 'build-asan',
     ['-Db_sanitize=address,undefined', '-Db_lundef=false', '-Dc_args=-fno-sanitize-recover=all'],
     ['--sanitizer', 'address']),
    ('thread', 'build-tsan', ['-Db_sanitize=thread', '-Db_lundef=false'],
     ['--sanitizer', 'thread'] + [a for k in THREADED for a in ('-k', k)]),
]

SUMMARY = re.compile(r'^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$')


def build(builddir, options):
    """Sets up (once) and builds BUILDDIR; returns '' or the failure's tail."""
    path = os.path.join(ROOT, builddir)
    steps = []
    if not os.path.exists(os.path.join(path, 'build.ninja')):
        steps.append(['meson', 'setup', path] + options)
    steps.append(['ninja', '-C', path])
    for argv in steps:
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        if p.returncode:
            return '%s failed (exit %d):\n%s' % (' '.join(argv), p.returncode, (p.stdout + p.stderr)[-3000:])
    return ''


def run_stage(name, argv):
    """Runs one stage's command, echoing its lines but its count, which
    becomes the stage's line. Returns (passed, failed, skipped)."""
    t0 = time.monotonic()
    counts = None
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors='replace')
    for line in p.stdout:
        m = SUMMARY.match(line.rstrip('\n'))
        if m:
            counts = [int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)]
            continue
        sys.stdout.write(line)
        sys.stdout.flush()
    rc = p.wait()
    why = ''
    if counts is None:
        counts, why = [0, 1, 0], ' (ended with exit status %d and no count: one failure)' % rc
    elif rc and not counts[1]:
        counts[1] += 1
        why = ' (exit status %d without a failed test: one failure)' % rc
    print('== stage %s: passed %d, failed %d, skipped %d, %.0f s%s' %
          (name, counts[0], counts[1], counts[2], time.monotonic() - t0, why))
    sys.stdout.flush()
    return counts


def main():
    args = sys.argv[1:]
    # test-only: {"name": argv, ...} replaces the stages' builds and commands
    fake = None
    if args[:1] == ['--fake-stages']:
        fake = json.loads(args[1])
        args = args[2:]
    if fake is not None:
        plan = [(name, None, None, argv) for name, argv in fake.items()]
    else:
        pick = os.environ.get('GPUTRACE_TEST_STAGES')
        names = pick.split(',') if pick else [s[0] for s in STAGES]
        unknown = set(names) - {s[0] for s in STAGES}
        if unknown:
            print('run_stages.py: no stage %s (stages: %s)' % (', '.join(sorted(unknown)),
                                                             ', '.join(s[0] for s in STAGES)))
            return 2
        plan = [(n, d, o, [sys.executable, os.path.join('tests', 'run_tests.py'), d] + a + args)
                for n, d, o, a in STAGES if n in names]
    total = [0, 0, 0]
    for name, builddir, options, argv in plan:
        print('== stage %s%s' % (name, ' (%s)' % builddir if builddir else ''))
        sys.stdout.flush()
        failure = build(builddir, options) if builddir else ''
        if failure:
            print(failure)
            print('== stage %s: passed 0, failed 1, skipped 0 (the build failed)' % name)
            counts = [0, 1, 0]
        else:
            counts = run_stage(name, argv)
        total = [a + b for a, b in zip(total, counts)]
    line = '%d passed, %d failed' % (total[0], total[1])
    if total[2]:
        line += ', %d skipped' % total[2]
    print(line)
    return 1 if total[1] or not total[0] else 0


if __name__ == '__main__':
    sys.exit(main())
