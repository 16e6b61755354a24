"""`gputrace run`: preloads the shim, keeps the user's LD_PRELOAD, passes the
output path and stack depth on, and returns the command's exit status."""
import os
import signal

from gtlib import GPUTRACE, TraceTest, base_env, prog, query, run


class LauncherTest(TraceTest):
    def launch(self, args, env=None):
        return run([GPUTRACE, 'run'] + args, preload=False, env=env or base_env(), cwd=self.dir)

    def test_run_traces_command_and_returns_its_exit_code(self):
        db = os.path.join(self.dir, 'out.db')
        p = self.launch(['-o', db, '--', prog('output')])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])
        self.assertIn('gputrace: wrote %s' % db, p.stderr)

    def test_run_replaces_an_existing_output_file(self):
        db = os.path.join(self.dir, 'out.db')
        self.launch(['-o', db, prog('output')])
        self.launch(['-o', db, prog('output')])
        self.assertEqual(sorted(os.listdir(self.dir)), ['out.db'])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])

    def refused(self, target, args=None):
        """run -o TARGET is refused before the command starts; returns the one stderr line."""
        marker = os.path.join(self.dir, 'ran')
        p = self.launch(['-o', target] + (args or []) + ['--', '/bin/sh', '-c', 'touch ' + marker])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertFalse(os.path.exists(marker), 'the command ran')
        return p.stderr

    def test_run_never_replaces_a_file_that_is_not_a_finished_trace(self):
        import sqlite3
        script = os.path.join(self.dir, 'train.py')
        with open(script, 'w') as f:
            f.write('print("my training script")\n')
        self.assertIn('not a finished gputrace trace', self.refused(script))
        with open(script) as f:
            self.assertEqual(f.read(), 'print("my training script")\n')
        other = os.path.join(self.dir, 'app.db')
        con = sqlite3.connect(other)
        con.execute('CREATE TABLE t(x)')
        con.commit()
        con.close()
        self.refused(other)
        self.assertEqual(query(other, 'SELECT count(*) FROM t'), [(0,)])

    def test_run_never_replaces_a_trace_still_being_written(self):
        db = os.path.join(self.dir, 'out.db')
        self.launch(['-o', db, prog('output')])
        open(db + '-wal', 'w').close()   # what a live writer (or a killed one) has beside it
        self.assertIn('still', self.refused(db))
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])

    def test_run_refuses_an_output_directory_that_does_not_exist(self):
        self.assertIn('does not exist', self.refused(os.path.join(self.dir, 'no', 'such', 't.db')))
        self.assertIn('no such directory', self.refused(os.path.join(self.dir, 'nodir') + '/'))

    def test_run_output_directory_holds_the_trace_under_the_default_name(self):
        sub = os.path.join(self.dir, 'traces')
        os.mkdir(sub)
        p = self.launch(['-o', sub, '--', prog('output')])
        self.assertEqual(p.returncode, 3, p.stderr)
        files = os.listdir(sub)
        self.assertEqual(len(files), 1, files)
        self.assertRegex(files[0], r'^gputrace-\d+\.db$')
        self.assertEqual(query(os.path.join(sub, files[0]), 'SELECT count(*) FROM events'), [(20,)])

    def test_run_passes_stack_depth_and_quiet(self):
        db = os.path.join(self.dir, 'out.db')
        p = self.launch(['-o', db, '--stack-depth', '0', '--quiet', '--', prog('call_chain')])
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stderr, '')
        self.assertEqual(query(db, 'SELECT stack_depth, (SELECT count(*) FROM stacks) FROM processes'), [(0, 0)])

    def test_run_keeps_an_existing_ld_preload(self):
        env = base_env(LD_PRELOAD='libm.so.6')
        p = self.launch(['-o', os.path.join(self.dir, 'x.db'), '--', '/bin/sh', '-c', 'echo "$LD_PRELOAD"'], env)
        self.assertEqual(p.returncode, 0, p.stderr)
        parts = p.stdout.strip().split(':')
        self.assertTrue(parts[0].endswith('/libgputrace.so'), parts)
        self.assertEqual(parts[1:], ['libm.so.6'])

    def test_run_reports_signal_death_like_a_shell(self):
        p = self.launch(['--', '/bin/sh', '-c', 'kill -TERM $$'])
        self.assertEqual(p.returncode, 128 + signal.SIGTERM)

    def test_run_usage_errors_exit_2_with_one_line(self):
        for args in ([], ['-o'], ['--stack-depth', 'x', 'true'], ['--bogus', 'true']):
            p = self.launch(args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, (args, p.stderr))
        p = self.launch(['--', '/nonexistent/cmd'])
        self.assertEqual(p.returncode, 127)

    def test_run_help_describes_options(self):
        p = self.launch(['--help'])
        self.assertEqual(p.returncode, 0)
        for word in ('-o', '--stack-depth', 'exit status', 'GPUTRACE_OUTPUT'):
            self.assertIn(word, p.stdout)
