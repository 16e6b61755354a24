"""Under a tight address-space limit (ulimit -v: issue 15, item 8) the shim
never takes the program's memory: when it cannot get its own (queue, stack
set, writer thread, SQLite) it turns itself off with one stderr line and the
program runs as without it."""
import os
import resource
import unittest

from gtlib import SANITIZER, SHIM, TraceTest, base_env, prog, run


def limit(kib):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, kib * 1024))
    return apply


class MemoryLimitTest(TraceTest):
    def run_limited(self, kib, **env):
        import subprocess
        return subprocess.run([prog('exit_modes'), 'return', '10'], env=base_env(**env), cwd=self.dir,
                              capture_output=True, text=True, timeout=60, preexec_fn=limit(kib))

    @unittest.skipIf(SANITIZER, 'a sanitizer maps its shadow memory (terabytes of address space) at start: '
                                'under any RLIMIT_AS that leaves the shim short, the runtime fails first')
    def test_a_tight_ulimit_v_never_fails_the_programs_calls(self):
        # from the smallest limit at which the program runs with the shim
        # merely loaded (its code and data cost what they cost) upwards
        low = next(k for k in range(3000, 40000, 250)
                   if self.run_limited(k, LD_PRELOAD=SHIM, GPUTRACE_DISABLE=1).returncode == 7)
        turned_off = traced = 0
        for kib in range(low, low + 16000, 500):
            with self.subTest(kib=kib):
                bare = self.run_limited(kib)
                self.assertEqual((bare.returncode, bare.stdout), (7, 'allocated 10\n'), bare.stderr)
                db = '%s/t%d.db' % (self.dir, kib)
                p = self.run_limited(kib, LD_PRELOAD=SHIM, GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0)
                self.assertEqual((p.returncode, p.stdout), (7, 'allocated 10\n'), p.stderr)
                lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace:')]
                self.assertEqual(len(lines), 1, p.stderr)
                if 'wrote' in lines[0]:
                    traced += 1
                elif 'out of memory' in lines[0] and 'writing trace' in lines[0]:
                    # started, then SQLite ran short while writing: the rest is
                    # counted as dropped, and the program's calls still succeed
                    self.assertIn('the program continues', lines[0])
                    traced += 1
                else:
                    self.assertIn('tracing is off', lines[0])
                    self.assertIn('the program continues', lines[0])
                    left = [f for f in os.listdir(self.dir) if f.startswith('t%d.db' % kib)]
                    self.assertEqual(left, [], 'a trace that could not start left files behind')
                    turned_off += 1
        self.assertGreater(turned_off, 0, 'the shim never ran short: the test proves nothing')
        self.assertGreater(traced, 0, 'the shim never traced: the limits are all too low')
