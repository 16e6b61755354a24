"""README command 1 (scripts/setup.sh): its demo traces a loop against the
CUDA and CUPTI stand-ins and must read as a success to a new user: no line
that looks like a failure, and the trace it names is written."""
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what a reader takes for trouble (the real libcupti's "cupti unavailable:
# ... CUPTI_ERROR_UNKNOWN (no usable CUDA driver?)" was one)
ALARMING = re.compile(r'unavailable|error|fail|warning|cannot|CUPTI_', re.I)


class SetupDemo(unittest.TestCase):
    def test_setup_demo_prints_no_alarming_line(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(('GPUTRACE_', 'FAKE_CU'))}
        for k in ('ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS', 'TSAN_OPTIONS', 'LD_PRELOAD'):
            env.pop(k, None)   # the demo uses the plain build/, whatever stage runs this
        p = subprocess.run(['sh', 'scripts/setup.sh'], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        self.assertRegex(out, r'(?m)^gputrace run: wrote build/demo\.db \(352 events, 0 dropped')
        # the demo's own reports name what the loop leaks: those lines are the point
        # ("0 failed calls" in the summary is a count, not an alarm)
        self.assertEqual([l for l in out.splitlines() if ALARMING.search(l.replace(' 0 failed calls', ''))], [])

    def test_readmes_sample_output_is_what_the_demo_prints(self):
        # the README shows summary and leaks of the demo: each line of its sample
        # without "..." must be in what the analyzer prints for the demo's trace
        from gtlib import GPUTRACE, base_env, prog, run
        with open(os.path.join(ROOT, 'README.md')) as f:
            readme = f.read()
        sample = readme.split('$ gputrace summary build/demo.db\n', 1)[1].split('```', 1)[0]
        with tempfile.TemporaryDirectory(prefix='gputrace-test-') as d:
            os.mkdir(os.path.join(d, 'build'))
            db = 'build/demo.db'   # as the README's sample names it (its symbolize hint repeats the path)
            env = base_env(GPUTRACE_CUPTI=0)
            run([GPUTRACE, 'run', '--quiet', '-o', db, '--', prog('demo_loop')], preload=False, env=env, check=True,
                cwd=d)
            printed = []
            for cmd in ('summary', 'leaks'):
                printed += run([GPUTRACE, cmd, db], preload=False, env=env, check=True, cwd=d).stdout.splitlines()
        for line in sample.splitlines():
            if line.startswith('$ ') or '...' in line or not line.strip():
                continue
            self.assertIn(line, printed)

if __name__ == '__main__':
    unittest.main()
