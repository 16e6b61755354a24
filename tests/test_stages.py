"""README command 2 as CI runs it (.ci/run -> scripts/test.sh ->
tests/run_stages.py): every stage's count ends up in one closing line
"N passed, N failed", the only line of that form; a failing stage, or one
that dies without its count, makes the count and the exit status say so.
The stages themselves are stood in for by small commands (the real ones
take minutes); the real table is checked for what each stage must run."""
import json
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
import run_stages  # noqa: E402

COUNT = re.compile(r'\d+ passed, \d+ failed')


def stage(out, rc=0):
    """A stand-in stage: prints OUT, exits RC."""
    return [sys.executable, '-c', 'import sys; sys.stdout.write(%r); sys.exit(%d)' % (out, rc)]


class StagesTest(unittest.TestCase):
    def run_stages(self, stages):
        return subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'run_stages.py'), '--fake-stages',
                               json.dumps(stages)], cwd=ROOT, capture_output=True, text=True, timeout=120)

    def counts(self, p):
        """The lines of the form 'N passed, N failed' anywhere in the output."""
        return [l for l in p.stdout.splitlines() if COUNT.search(l)]

    def test_every_stage_is_summed_into_one_closing_line(self):
        p = self.run_stages({'plain': stage('PASS a\n300 passed, 0 failed\n'),
                             'address': stage('PASS a\n290 passed, 0 failed, 2 skipped\n'),
                             'thread': stage('120 passed, 0 failed\n')})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.counts(p), ['710 passed, 0 failed, 2 skipped'])
        self.assertEqual(p.stdout.splitlines()[-1], '710 passed, 0 failed, 2 skipped')
        self.assertIn('== stage address: passed 290, failed 0, skipped 2', p.stdout)

    def test_a_failing_stage_fails_the_whole_run(self):
        p = self.run_stages({'plain': stage('300 passed, 0 failed\n'),
                             'address': stage('FAIL x\n289 passed, 1 failed\n', rc=1),
                             'thread': stage('120 passed, 0 failed\n')})
        self.assertEqual(p.returncode, 1)
        self.assertEqual(self.counts(p), ['709 passed, 1 failed'])

    def test_a_stage_ending_without_its_count_is_a_failure(self):
        # a crash, a build that stopped, a sanitizer killing the harness
        p = self.run_stages({'plain': stage('300 passed, 0 failed\n'),
                             'thread': stage('Segmentation fault\n', rc=139)})
        self.assertEqual(p.returncode, 1)
        self.assertEqual(self.counts(p), ['300 passed, 1 failed'])
        self.assertIn('exit status 139 and no count', p.stdout)

    def test_a_nonzero_exit_with_nothing_failed_is_a_failure(self):
        p = self.run_stages({'plain': stage('12 passed, 0 failed\n', rc=3)})
        self.assertEqual(p.returncode, 1)
        self.assertEqual(self.counts(p), ['12 passed, 1 failed'])

    def test_ci_runs_every_stage_and_each_stage_what_it_must(self):
        with open(os.path.join(ROOT, '.ci', 'run')) as f:
            self.assertIn('scripts/test.sh', f.read())
        with open(os.path.join(ROOT, 'scripts', 'test.sh')) as f:
            self.assertIn('exec python3 tests/run_stages.py', f.read())
        stages = {name: (builddir, opts, args) for name, builddir, opts, args in run_stages.STAGES}
        self.assertEqual(sorted(stages), ['address', 'plain', 'thread'])
        self.assertEqual(len({b for b, _, _ in stages.values()}), 3)   # a build directory each
        self.assertEqual(stages['plain'][2], [])                       # the whole suite
        self.assertIn('-Db_sanitize=address,undefined', stages['address'][1])
        self.assertIn('-Dc_args=-fno-sanitize-recover=all', stages['address'][1])
        self.assertEqual(stages['address'][2], ['--sanitizer', 'address'])   # the whole suite, no -k
        self.assertIn('-Db_sanitize=thread', stages['thread'][1])
        self.assertEqual(stages['thread'][2][:2], ['--sanitizer', 'thread'])
        for must in ('unit.', 'capture.', 'driver.', 'nvtx.NvtxRanges'):
            self.assertIn(must, stages['thread'][2])


class SanitizerHarnessTest(unittest.TestCase):
    """run_tests.py --sanitizer: a report a child wrote to the log directory
    fails the test it ran under, even one whose own assertions passed."""

    def setUp(self):
        import io
        import run_tests
        self.rt = run_tests
        self.logs = run_tests.SanitizerLogs()
        self.addCleanup(lambda: __import__('shutil').rmtree(self.logs.dir, ignore_errors=True))
        self.saved, run_tests.LOGS = run_tests.LOGS, self.logs
        self.addCleanup(lambda: setattr(run_tests, 'LOGS', self.saved))
        self.out = io.StringIO()
        self.result = run_tests.Result(self.out, False, 0)

    def passing(self, log=None):
        """Runs a passing test whose child wrote LOG (if any) as a report file."""
        logs, result = self.logs, self.result

        class Child(unittest.TestCase):
            def runTest(self):
                if log:
                    with open(os.path.join(logs.dir, 'asan.4242'), 'w') as f:
                        f.write(log)
        Child().run(result)
        return result

    def test_a_report_fails_a_test_that_passed(self):
        r = self.passing('==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602\n'
                         'SUMMARY: AddressSanitizer: heap-buffer-overflow shim/queue.c:42\n')
        self.assertEqual((len(r.failures), r.wasSuccessful()), (1, False))
        self.assertIn('heap-buffer-overflow', r.failures[0][1])
        self.assertIn('FAIL', self.out.getvalue())
        self.assertEqual(self.logs.reports(), [])   # counted once, not again for the next test

    def test_a_report_from_a_failed_subtest_is_shown_with_it_not_with_the_next_test(self):
        logs, result = self.logs, self.result

        class Child(unittest.TestCase):
            def runTest(self):
                with self.subTest('segv'):
                    with open(os.path.join(logs.dir, 'asan.4243'), 'w') as f:
                        f.write('==4243==ERROR: AddressSanitizer: SEGV on unknown address\n')
                    self.fail('died by the wrong signal')
        Child().run(result)
        self.assertEqual(len(result.failures), 1)
        self.assertIn('SEGV on unknown address', self.out.getvalue())
        self.assertEqual(self.logs.reports(), [])   # the next test passes

    def test_a_test_without_report_passes(self):
        self.assertTrue(self.passing().wasSuccessful())

    def test_the_fork_childs_thread_registry_warning_alone_is_no_report(self):
        r = self.passing('==77==Running thread 76 was not suspended. False leaks are possible.\n')
        self.assertTrue(r.wasSuccessful(), r.failures)

    def test_children_report_to_the_log_directory_and_stop(self):
        env = self.rt.sanitizer_env('address', '/x')
        self.assertIn('log_path=/x/asan', env['ASAN_OPTIONS'])
        self.assertIn('log_path=/x/ubsan', env['UBSAN_OPTIONS'])
        self.assertIn('halt_on_error=1', env['UBSAN_OPTIONS'])
        self.assertIn('detect_leaks=1', env['ASAN_OPTIONS'])
        env = self.rt.sanitizer_env('thread', '/x')
        self.assertIn('log_path=/x/tsan', env['TSAN_OPTIONS'])
        self.assertIn('halt_on_error=1', env['TSAN_OPTIONS'])


if __name__ == '__main__':
    unittest.main()
