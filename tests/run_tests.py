#!/usr/bin/env python3
"""Run the C unit tests registered with meson (`meson test`: tests/unit and
the CUDA stand-in's self-check) and every tests/test_*.py (stdlib unittest, no
pytest needed), and end with the line `N passed, N failed` that CI reads. It
counts each unit test case (each TAP line "ok N" / "not ok N") and each
Python test method; a unit test program that fails without a failing case
(crash, timeout, missing plan) counts as one more failure.

usage: tests/run_tests.py [BUILD_DIR] [-k SUBSTRING]... [--sanitizer address|thread]
BUILD_DIR defaults to $GPUTRACE_BUILD or ./build. -k keeps the tests whose id
contains SUBSTRING, or any of several (unit cases are named unit.PROGRAM.CASE).
--sanitizer: BUILD_DIR was built with that sanitizer (scripts/test.sh's
stages); every child writes its sanitizer reports to a log directory instead
of stderr, and a test after which a report appeared fails with the report,
whatever its own assertions said (see sanitizer_env).
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SAN_EXIT = 86   # the exit status of a child that a sanitizer stopped


def sanitizer_env(kind, logdir):
    """The environment a sanitizer stage runs every child in: a report goes to
    LOGDIR/<tool>.PID (log_path) rather than into a stderr that a test may not
    read, the first report stops the child with status SAN_EXIT (ASan always
    halts; UBSan too, as the build has -fno-sanitize-recover; TSan by
    halt_on_error), and LeakSanitizer runs at each child's exit.
    verify_asan_link_order=0: the shim is preloaded ahead of the instrumented
    test programs' own libasan, which still comes before libc, so the shim's
    malloc/free and memory accesses are checked all the same; in an
    uninstrumented program (python3, sh) the shim runs with ASan's shadow
    checks but without ASan's allocator, which that process never loads
    first. Any warning a runtime logs counts as a report: better a false alarm
    looked at than a finding passed over."""
    common = 'exitcode=%d:log_path=%s/%%s' % (SAN_EXIT, logdir)
    env = {'GPUTRACE_TEST_SANITIZER': kind}
    if kind == 'address':
        env['ASAN_OPTIONS'] = (common % 'asan') + ':halt_on_error=1:abort_on_error=0:detect_leaks=1:' \
            'verify_asan_link_order=0:detect_stack_use_after_return=0:strict_string_checks=1'
        env['UBSAN_OPTIONS'] = (common % 'ubsan') + ':halt_on_error=1:print_stacktrace=1'
        # print_suppressions=0: a suppressed leak (tests/sanitizer/lsan.supp)
        # would still leave its statistics in the log, a report to the harness
        env['LSAN_OPTIONS'] = 'print_suppressions=0:suppressions=%s' % os.path.join(HERE, 'sanitizer', 'lsan.supp')
    elif kind == 'thread':
        # die_after_fork=0: a fork child that calls CUDA starts its own
        # writer thread, which TSan refuses by default after a fork of a
        # threaded process (its support there is partial; the shim's is the
        # behaviour under test)
        env['TSAN_OPTIONS'] = (common % 'tsan') + ':halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:' \
            'suppressions=%s' % os.path.join(HERE, 'sanitizer', 'tsan.supp')
    else:
        raise SystemExit('run_tests.py: --sanitizer takes address or thread, not %r' % kind)
    return env


# Lines a runtime logs that are no finding. LeakSanitizer in a fork child:
# the runtime's thread registry still lists the parent's other threads
# (the shim's writer), which the child does not have; its leak check runs.
BENIGN = (re.compile(r'^==\d+==Running thread \d+ was not suspended\. False leaks are possible\.$'),)


class SanitizerLogs:
    """The log directory of a sanitizer stage: reports() hands back (and sets
    aside) every report written since the last call; a log of nothing but
    BENIGN lines is none."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='gputrace-sanitizer-')

    def reports(self):
        out = []
        for path in sorted(glob.glob(os.path.join(self.dir, '*'))):
            if path.endswith('.seen'):
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
            os.rename(path, path + '.seen')
            if any(l.strip() and not any(b.match(l) for b in BENIGN) for l in text.splitlines()):
                out.append('%s:\n%s' % (os.path.basename(path), text[-6000:]))
        return out


LOGS = None   # a SanitizerLogs under --sanitizer


class Result(unittest.TextTestResult):
    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _line(self, test, word):
        dt = time.monotonic() - self._t0
        self.stream.write('%-6s %s (%.2fs)\n' % (word, test.id().replace('test_', '', 1), dt))
        self.stream.flush()

    def addSuccess(self, test):
        found = LOGS.reports() if LOGS else []
        if found:   # the test passed, a child of it did not
            try:
                raise AssertionError('sanitizer report in a child:\n' + '\n'.join(found))
            except AssertionError:
                unittest.TestResult.addFailure(self, test, sys.exc_info())
            self._line(test, 'FAIL')
            self.stream.write('\n'.join(found) + '\n')
            return
        unittest.TestResult.addSuccess(self, test)
        self._line(test, 'PASS')

    def _reports_too(self):
        for r in LOGS.reports() if LOGS else []:
            self.stream.write('sanitizer report in a child: %s\n' % r)

    def addFailure(self, test, err):
        unittest.TestResult.addFailure(self, test, err)
        self._line(test, 'FAIL')
        self._reports_too()

    def addError(self, test, err):
        unittest.TestResult.addError(self, test, err)
        self._line(test, 'ERROR')
        self._reports_too()

    def addSubTest(self, test, subtest, err):
        # a failed subtest ends its test without addFailure or addSuccess:
        # its children's reports are shown here, else the next test to end
        # would take them for its own
        unittest.TestResult.addSubTest(self, test, subtest, err)
        if err is not None:
            self._line(subtest, 'FAIL')
            self._reports_too()

    def addSkip(self, test, reason):
        unittest.TestResult.addSkip(self, test, reason)
        self._line(test, 'SKIP')


TAP_CASE = re.compile(r'^(not )?ok\b\s*(\d*)\s*-?\s*(.*)$')
TAP_PLAN = re.compile(r'^1\.\.(\d+)')


def parse_tap(text):
    """[(passed, name, diagnostics)] of each TAP case line, and the plan (None
    if absent). Diagnostics are the '#' lines printed before the case's line."""
    cases, diag, plan = [], [], None
    for line in text.splitlines():
        m = TAP_CASE.match(line)
        if m:
            skip = re.search(r'#\s*SKIP', m.group(3), re.I)
            cases.append(('skip' if skip else not m.group(1), m.group(3).split('#')[0].strip() or m.group(2), diag))
            diag = []
        elif TAP_PLAN.match(line):
            plan = int(TAP_PLAN.match(line).group(1))
        elif line.startswith('#') or line.startswith('Bail out!'):
            diag.append(line)
    return cases, plan, diag


def wanted(tid, patterns):
    return not patterns or any(p in tid for p in patterns)


def run_unit_tests(build, pattern):
    """Runs `meson test -C BUILD` and reads each test's TAP output from meson's
    JSON log; prints one line per case. Returns (passed, failed, skipped)."""
    log = os.path.join(build, 'meson-logs', 'testlog.json')
    if os.path.exists(log):
        os.unlink(log)
    try:
        p = subprocess.run(['meson', 'test', '-C', build], capture_output=True, text=True, timeout=600)
        out = p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        out = str(e)
    if not os.path.exists(log):
        print('FAIL   unit (meson test ran no test):\n' + out[-3000:])
        return 0, 1, 0
    counts = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}

    def report(word, tid, dur=None, diag=()):
        if not wanted(tid, pattern):
            return
        counts[word] += 1
        print('%-6s %s%s' % (word, tid, ' (%.2fs)' % dur if dur is not None else ''))
        for d in diag:
            print('         ' + d)

    with open(log, encoding='utf-8', errors='replace') as f:
        runs = sorted((json.loads(line) for line in f if line.strip()), key=lambda r: r['name'])
    for r in runs:
        name, result = r['name'], r.get('result')
        cases, plan, tail = parse_tap(r.get('stdout') or '')
        if not cases and plan is None:   # not a TAP test: one case
            output = ((r.get('stdout') or '') + (r.get('stderr') or '')).splitlines()[-20:]
            report('PASS' if result == 'OK' else 'SKIP' if result == 'SKIP' else 'FAIL', 'unit.' + name,
                   r.get('duration'), [] if result in ('OK', 'SKIP') else ['exit status %s (%s)' % (r.get('returncode'), result)] + output)
            continue
        for ok, case, diag in cases:
            report('SKIP' if ok == 'skip' else 'PASS' if ok else 'FAIL', 'unit.%s.%s' % (name, case), diag=diag)
        # a program that ends badly without a failing case (crash, timeout,
        # cases missing from the plan) is one failure more
        if plan != len(cases) or (result != 'OK' and not any(ok is False for ok, _, _ in cases)):
            why = 'exit status %s (%s), %d of %s planned cases ran' % (r.get('returncode'), result, len(cases), plan)
            report('FAIL', 'unit.' + name, r.get('duration'), [why] + tail + (r.get('stderr') or '').splitlines()[-20:])
    found = LOGS.reports() if LOGS else []
    if found:   # not told apart per program: the reports name it
        counts['FAIL'] += 1
        print('FAIL   unit (sanitizer reports)\n' + '\n'.join(found))
    return counts['PASS'], counts['FAIL'], counts['SKIP']


def main():
    global LOGS
    # A suite started as a background job of a shell without job control
    # (`cmd &` in a script) inherits SIGINT and SIGQUIT ignored, and every
    # child after it: the tests that send SIGINT to a program (it must die of
    # it, traced as untraced) then saw it ignored and failed. Children get
    # the default dispositions a terminal's job gets.
    for sig in (signal.SIGINT, signal.SIGQUIT):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    args = sys.argv[1:]
    pattern = []
    while '-k' in args:
        i = args.index('-k')
        pattern.append(args[i + 1])
        del args[i:i + 2]
    if '--sanitizer' in args:
        i = args.index('--sanitizer')
        LOGS = SanitizerLogs()
        os.environ.update(sanitizer_env(args[i + 1], LOGS.dir))
        del args[i:i + 2]
    if args:
        os.environ['GPUTRACE_BUILD'] = os.path.abspath(args[0])
    os.environ.setdefault('GPUTRACE_BUILD', os.path.abspath('build'))
    unit_passed, unit_failed, unit_skipped = run_unit_tests(os.environ['GPUTRACE_BUILD'], pattern)
    sys.stdout.flush()
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern='test_*.py', top_level_dir=HERE)
    if pattern:
        def keep(s):
            out = unittest.TestSuite()
            for t in s:
                if isinstance(t, unittest.TestSuite):
                    out.addTest(keep(t))
                elif wanted(t.id(), pattern):
                    out.addTest(t)
            return out
        suite = keep(suite)
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=0, resultclass=Result)
    res = runner.run(suite)
    # a test whose several subtests fail is one failed test
    failed = len({getattr(t, 'test_case', t).id() for t, _ in res.failures + res.errors})
    passed = res.testsRun - failed - len(res.skipped)
    passed, failed, skipped = passed + unit_passed, failed + unit_failed, len(res.skipped) + unit_skipped
    line = '%d passed, %d failed' % (passed, failed)
    if skipped:
        line += ', %d skipped' % skipped
    print(line)
    if LOGS:
        shutil.rmtree(LOGS.dir, ignore_errors=True)
    return 1 if failed or passed + failed == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
