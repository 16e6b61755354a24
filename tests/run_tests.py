#!/usr/bin/env python3
"""Run the C unit tests registered with meson (`meson test`: tests/unit and
the CUDA stand-in's self-check) and every tests/test_*.py (stdlib unittest, no
pytest needed), and end with the line `N passed, N failed` that CI reads. It
counts each unit test case (each TAP line "ok N" / "not ok N") and each
Python test method; a unit test program that fails without a failing case
(crash, timeout, missing plan) counts as one more failure.

usage: tests/run_tests.py [BUILD_DIR] [-k SUBSTRING]
BUILD_DIR defaults to $GPUTRACE_BUILD or ./build. -k keeps the tests whose id
contains SUBSTRING (unit cases are named unit.PROGRAM.CASE).
"""
import json
import os
import re
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Result(unittest.TextTestResult):
    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _line(self, test, word):
        dt = time.monotonic() - self._t0
        self.stream.write('%-6s %s (%.2fs)\n' % (word, test.id().replace('test_', '', 1), dt))
        self.stream.flush()

    def addSuccess(self, test):
        unittest.TestResult.addSuccess(self, test)
        self._line(test, 'PASS')

    def addFailure(self, test, err):
        unittest.TestResult.addFailure(self, test, err)
        self._line(test, 'FAIL')

    def addError(self, test, err):
        unittest.TestResult.addError(self, test, err)
        self._line(test, 'ERROR')

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
        if pattern and pattern not in tid:
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
    return counts['PASS'], counts['FAIL'], counts['SKIP']


def main():
    args = sys.argv[1:]
    pattern = None
    if '-k' in args:
        i = args.index('-k')
        pattern = args[i + 1]
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
                elif pattern in t.id():
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
    return 1 if failed or passed + failed == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
