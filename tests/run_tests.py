#!/usr/bin/env python3
"""Run every tests/test_*.py (stdlib unittest, no pytest needed) and end with
the line `N passed, N failed` that CI reads.

usage: tests/run_tests.py [BUILD_DIR] [-k SUBSTRING]
BUILD_DIR defaults to $GPUTRACE_BUILD or ./build.
"""
import os
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
    line = '%d passed, %d failed' % (passed, failed)
    if res.skipped:
        line += ', %d skipped' % len(res.skipped)
    print(line)
    return 1 if failed or res.testsRun == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
