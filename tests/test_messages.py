"""Messages (issue 15, item 9): whatever goes wrong, the shim and the analyzer
each say it in one short line, never with SQL text (a 17.8 KB line carrying
the whole schema; multi-line analyzer errors quoting a damaged schema)."""
import os
import sqlite3
import subprocess

from gtlib import GPUTRACE, TraceTest, base_env, prog, run


class ShimMessagesTest(TraceTest):
    def test_a_planted_shm_link_costs_one_short_line_and_its_name(self):
        # a -shm beside the name makes the name taken (output.c): the trace goes
        # to NAME.PID.db, the link and its target untouched, one short line
        victim = os.path.join(self.dir, 'victim')
        with open(victim, 'w') as f:
            f.write('keep me')
        db = os.path.join(self.dir, 'trace.db')
        os.symlink(victim, db + '-shm')
        p = run([prog('exit_modes'), 'return', '10'], env=base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0),
                cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout), (7, 'allocated 10\n'), p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertLess(len(p.stderr), 300, p.stderr)
        self.assertRegex(p.stderr, r'^gputrace: wrote .*/trace\.\d+\.db \(10 events')
        with open(victim) as f:
            self.assertEqual(f.read(), 'keep me')
        self.assertTrue(os.path.islink(db + '-shm'))


class AnalyzerMessagesTest(TraceTest):
    def test_an_error_quoting_a_damaged_schema_is_one_short_line(self):
        p, db = self.trace([prog('exit_modes'), 'return', '10'])
        self.assertEqual(p.returncode, 7, p.stderr)
        con = sqlite3.connect(db)
        con.execute('PRAGMA writable_schema=ON')
        # an unterminated token spanning lines, then 3000 characters: SQLite's
        # message quotes all of it
        con.execute("INSERT INTO sqlite_master VALUES('table', 'zz', 'zz', 0, "
                    "'CREATE TABLE zz(a \"unterminated\n line two\n line three' || ?)", ('x' * 3000,))
        con.commit()
        con.close()
        for argv in (['summary', db], ['leaks', '--json', db]):
            with self.subTest(argv[0]):
                r = subprocess.run([GPUTRACE] + argv, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 4, r.stderr)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                self.assertLess(len(r.stderr), 400, r.stderr)
                self.assertIn('malformed database schema', r.stderr)
