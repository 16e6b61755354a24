"""`gputrace run`: preloads the shim, keeps the user's LD_PRELOAD, passes the
output path and stack depth on, and returns the command's exit status."""
import os
import signal
import subprocess
import sys
import time
import unittest

from gtlib import GPUTRACE, SANITIZER, TraceTest, base_env, prog, query, run

RUN_LOG_HEADER = 'gputrace run log 1\n'   # the launcher's first line (analyzer/run_log.c)


class LauncherTest(TraceTest):
    def launch(self, args, env=None):
        return run([GPUTRACE, 'run'] + args, preload=False, env=env or base_env(), cwd=self.dir)

    def test_run_traces_command_and_returns_its_exit_code(self):
        db = os.path.join(self.dir, 'out.db')
        p = self.launch(['-o', db, '--', prog('output')])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])
        self.assertIn('gputrace run: wrote out.db (20 events', p.stderr)

    def test_a_trace_that_could_not_be_created_is_not_called_no_cuda_call(self):
        # the default output in a directory the user cannot write: the shim said "cannot create trace file",
        # then run's closing line said no process made a CUDA call (a helper's probe)
        import shutil
        if os.geteuid() != 0 or not shutil.which('setpriv'):
            self.skipTest('needs root and setpriv to run as another user')
        here = os.path.join(self.dir, 'rootonly')
        os.mkdir(here, 0o755)
        os.chmod(self.dir, 0o755)
        p = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', GPUTRACE, 'run', '--',
                            prog('demo_loop')], cwd=here, env=base_env(GPUTRACE_CUPTI=0), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stderr.splitlines()
        self.assertIn('cannot create trace file', lines[0])
        self.assertEqual(lines[-1], 'gputrace run: nothing was traced: 1 process of the command could not create its '
                                    'trace file (see the line above; -o names a writable place)', p.stderr)
        self.assertEqual(os.listdir(here), [])

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

    def test_the_files_left_of_a_removed_trace_are_named_not_written_beside(self):
        # rm t.db after a killed run left t.db-wal and t.db-shm: the next run wrote t.PID.db
        db = os.path.join(self.dir, 't.db')
        for side in ('-wal', '-shm'):
            with open(db + side, 'wb') as f:
                f.write(b'x' * 32)
        line = self.refused(db)
        self.assertIn('t.db-wal and %s-shm are left of a trace removed without them; remove them too' % db, line)
        self.assertEqual(sorted(os.listdir(self.dir)), ['t.db-shm', 't.db-wal'])
        os.unlink(db + '-shm')
        self.assertIn('t.db-wal is left of a trace removed without it; remove it too', self.refused(db))

    def test_output_dash_is_refused_not_made_a_file_named_dash(self):
        # `-o -` is stdout to export and report; run made a trace named '-' (a helper's probe)
        self.assertIn("a trace is a SQLite file, not a stream to stdout", self.refused('-'))
        self.assertEqual(os.listdir(self.dir), [])

    def test_a_path_that_is_a_side_file_of_a_trace_there_is_refused(self):
        # run -o t.db-wal beside the trace t.db was taken: SQLite read the new
        # trace as t.db's write-ahead log, and `symbolize t.db` removed it
        db = os.path.join(self.dir, 't.db')
        self.launch(['-o', db, prog('output')])
        for side in ('-wal', '-shm', '-journal'):
            self.assertIn("write-ahead log, index or journal", self.refused(db + side))
        self.assertEqual(sorted(os.listdir(self.dir)), ['t.db'])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])
        # a name of that form with no database beside it is a name like any other
        lone = os.path.join(self.dir, 'u.db-wal')
        p = self.launch(['-o', lone, prog('output')])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(lone, 'SELECT count(*) FROM events'), [(20,)])

    def test_a_command_that_traced_nothing_says_the_earlier_trace_is_still_there(self):
        db = os.path.join(self.dir, 'keep.db')
        self.launch(['-o', db, '--', prog('output')])
        p = self.launch(['-o', db, '--', '/bin/true'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('gputrace run: %s still holds the earlier trace: this run wrote none there' % db, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])
        p = self.launch(['-o', db, '--', prog('output')])   # a run that writes one says nothing of the earlier
        self.assertNotIn('earlier trace', p.stderr)

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

    def test_run_dies_of_the_signal_that_killed_the_command(self):
        # as the command itself would end: a calling shell stops its script on
        # a child that died of SIGINT, not on one that exited 130
        for sig in (signal.SIGTERM, signal.SIGINT):
            p = self.launch(['--quiet', '--', '/bin/sh', '-c', 'kill -%d $$' % sig])
            self.assertEqual(p.returncode, -sig, p.stderr)
        p = run(['/bin/sh', '-c', '"$0" run --quiet -- /bin/sh -c "kill -INT \\$\\$"; echo "after $?"', GPUTRACE],
                preload=False, env=base_env(), cwd=self.dir)
        self.assertIn('after 130', p.stdout)   # what the shell saw: the same as for the plain command
        self.assertNotIn('core', ' '.join(os.listdir(self.dir)))

    @unittest.skipIf(SANITIZER == 'thread', 'ThreadSanitizer defers a signal handler until the thread leaves the '
                                            'blocking waitpid run waits in: the thread stage showed the signal never '
                                            'passed on (the plain and address stages run it)')
    def test_a_signal_sent_to_run_alone_reaches_the_command(self):
        # an orchestrator's kill PID must not orphan the command
        self.assertEqual(self.signal_run_alone('TERM', 7), (7, 'TERM\n'))

    @unittest.skipIf(SANITIZER == 'thread', 'ThreadSanitizer defers a signal handler until the thread leaves the '
                                            'blocking waitpid run waits in (as for SIGTERM above)')
    def test_a_schedulers_sigusr1_sent_to_run_alone_reaches_the_command(self):
        # Slurm's --signal and Lightning's requeue: run died of it (exit 138)
        # and the command ran on, orphaned
        for sig in ('USR1', 'USR2', 'ALRM'):
            self.assertEqual(self.signal_run_alone(sig, 9), (9, sig + '\n'), sig)

    def signal_run_alone(self, sig, status):
        """Sends SIG<sig> to `gputrace run` alone, once its command (a shell that
        traps it, writes its name and exits status) is ready; returns run's exit
        status and what the trap wrote."""
        marker = os.path.join(self.dir, 'got' + sig)
        script = "trap 'echo %s > %s; exit %d' %s; touch %s.ready; while :; do sleep 0.05; done" % (
            sig, marker, status, sig, marker)
        proc = subprocess.Popen([GPUTRACE, 'run', '--quiet', '--', '/bin/sh', '-c', script], env=base_env(),
                                cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(200):
            if os.path.exists(marker + '.ready'):
                break
            time.sleep(0.02)
        proc.send_signal(getattr(signal, 'SIG' + sig))
        code = proc.wait(timeout=20)
        with open(marker) as f:
            return code, f.read()

    def test_an_ignored_sigchld_inherited_does_not_lose_the_status(self):
        keep = 'import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execvp(sys.argv[1], sys.argv[1:])'
        p = run([sys.executable, '-c', keep, GPUTRACE, 'run', '--quiet', '--', '/bin/sh', '-c', 'exit 5'],
                preload=False, env=base_env(), cwd=self.dir)
        self.assertEqual((p.returncode, p.stderr), (5, ''))

    def test_a_relative_output_is_where_run_was_started_when_the_command_changes_directory(self):
        os.mkdir(os.path.join(self.dir, 'sub'))
        p = self.launch(['-o', 't.db', '--', '/bin/sh', '-c', 'cd sub && exec "$0"', prog('output')])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(os.path.join(self.dir, 't.db'), 'SELECT count(*) FROM events'), [(20,)])
        self.assertEqual(os.listdir(os.path.join(self.dir, 'sub')), [])

    def test_a_command_that_does_not_start_keeps_the_old_trace(self):
        db = os.path.join(self.dir, 'keep.db')
        self.launch(['-o', db, '--quiet', '--', prog('output')])
        p = self.launch(['-o', db, '--quiet', '--', 'pyhton-typo'])
        self.assertEqual(p.returncode, 127)
        self.assertEqual(sorted(os.listdir(self.dir)), ['keep.db'])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])

    def test_run_usage_errors_exit_2_with_one_line(self):
        for args in ([], ['-o'], ['--stack-depth', 'x', 'true'], ['--bogus', 'true']):
            p = self.launch(args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, (args, p.stderr))
        p = self.launch(['--', '/nonexistent/cmd'])
        self.assertEqual(p.returncode, 127)

    def test_gputrace_disable_left_in_the_environment_is_named_and_nothing_runs(self):
        # it turned the shim off, and run then said the command made no CUDA call (a helper's probe)
        marker = os.path.join(self.dir, 'ran')
        for cmd in (['run', '-o', 't.db'], ['sweep', '--dir', 'sw']):
            for on in ('1', 'yes', 'maybe'):
                p = run([GPUTRACE] + cmd + ['--', '/bin/sh', '-c', 'touch %s' % marker], preload=False,
                        env=base_env(GPUTRACE_DISABLE=on), cwd=self.dir)
                self.assertEqual(p.returncode, 2, (cmd, on, p.stderr))
                self.assertEqual(p.stderr, 'gputrace %s: GPUTRACE_DISABLE=%s is set, which turns tracing off in every'
                                 ' process: unset it (env -u GPUTRACE_DISABLE gputrace %s ...)\n'
                                 % (cmd[0], on, cmd[0]), (cmd, on))
                self.assertFalse(os.path.exists(marker), (cmd, on))
        # off in the words the shim takes: traced as ever
        p = run([GPUTRACE, 'run', '-o', 'off.db', '--', prog('output')], preload=False,
                env=base_env(GPUTRACE_DISABLE='off'), cwd=self.dir)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(os.path.join(self.dir, 'off.db'), 'SELECT count(*) FROM events'), [(20,)])

    def test_run_help_describes_options(self):
        p = self.launch(['--help'])
        self.assertEqual(p.returncode, 0)
        for word in ('-o', '--stack-depth', 'exit status', 'GPUTRACE_OUTPUT', 'SIGUSR1, SIGUSR2\nand SIGALRM'):
            self.assertIn(word, p.stdout)


class ClosingLineTest(TraceTest):
    """Under `gputrace run` one closing line names every trace the command's
    processes wrote, or says that none called CUDA; the per-process lines
    stay quiet. Without run each process says its own line."""

    def launch(self, args, **env):
        return run([GPUTRACE, 'run'] + args, preload=False, env=base_env(GPUTRACE_CUPTI=0, **env), cwd=self.dir)

    def gputrace_lines(self, stderr):
        return [l for l in stderr.splitlines() if l.startswith('gputrace')]

    def test_command_without_cuda_says_that_nothing_was_traced(self):
        p = self.launch(['--', '/bin/sh', '-c', 'echo hi; /bin/true'])
        self.assertEqual((p.returncode, p.stdout), (0, 'hi\n'))
        self.assertEqual(self.gputrace_lines(p.stderr),
                         ['gputrace run: no process of the command that the preload reached made a CUDA call gputrace records (memory, graphs): nothing was traced'])
        self.assertEqual(os.listdir(self.dir), [])

    def test_a_command_that_cannot_be_run_gets_its_one_line_only(self):
        # "cannot run" was followed by "no process of the command called CUDA"
        p = self.launch(['--', 'no-such-command-here'])
        self.assertEqual(p.returncode, 127)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("cannot run 'no-such-command-here'", lines[0])

    def test_a_trace_name_with_a_tab_or_newline_is_still_in_the_closing_line(self):
        # the run log is lines of tab-separated fields: such a name was left
        # out, and the line said no process had called CUDA
        for name in ('a\tb.db', 'a\nb.db'):
            p = self.launch(['-o', name, '--', prog('output')])
            self.assertEqual(p.returncode, 3, p.stderr)
            lines = self.gputrace_lines(p.stderr)
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn('gputrace run: wrote %s (20 events' % name.replace('\t', '\\x09').replace('\n', '\\x0a'),
                          lines[0])

    def test_one_cuda_process_is_one_closing_line_with_its_figures(self):
        p = self.launch(['-o', 'out.db', '--', prog('output')])
        self.assertEqual(p.returncode, 3, p.stderr)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r'^gputrace run: wrote out\.db \(20 events, 0 dropped, peak device memory \d')

    def test_the_closing_line_names_managed_and_pinned_host_peaks(self):
        p = self.launch(['-o', 'm.db', '--', sys.executable, '-c',
                         'import ctypes\nrt = ctypes.CDLL("libcudart.so.13")\np = ctypes.c_void_p()\n'
                         'rt.cudaMallocManaged(ctypes.byref(p), ctypes.c_size_t(3 << 20), 1)\n'
                         'h = ctypes.c_void_p()\nrt.cudaMallocHost(ctypes.byref(h), ctypes.c_size_t(5 << 20))\n'])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn('peak device memory 0 B, managed 3.00 MiB, pinned host 5.00 MiB)', lines[0])

    def test_parent_and_cuda_children_are_listed_in_one_line_by_pid(self):
        p = self.launch(['-o', 't.db', '--', prog('spawn_children'), 'posix_spawn'])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        files = sorted(os.listdir(self.dir))
        self.assertEqual(len(files), 2, files)
        self.assertIn('gputrace run: wrote 2 traces, one per process that called CUDA: ', lines[0])
        for f in files:
            pid, events = query(os.path.join(self.dir, f), 'SELECT pid, events_recorded FROM processes')[0]
            self.assertIn('%s (pid %d, %d events, 0 dropped, peak device memory ' % (f, pid, events), lines[0])
        child = [f for f in files if f != 't.db'][0]
        self.assertLess(lines[0].index('t.db (pid'), lines[0].index(child), 'the parent comes first')

    def test_a_parent_comes_first_even_when_pids_wrapped_around(self):
        # pids wrap (at 32768 on many hosts): a child's can be lower than its parent's.
        # The processes' own run-log lines, as the shim writes them: the parent (pid 32000)
        # began before the child (pid 300)
        lines = ''.join('%s\\n' % l for l in (
            'open\\t300\\t-1\\t2000000\\t%s/child.db' % self.dir,
            'open\\t32000\\t-1\\t1000000\\t%s/parent.db' % self.dir,
            'wrote\\t300\\t5\\t0\\t1024\\t0\\t%s/child.db' % self.dir,
            'wrote\\t32000\\t7\\t0\\t2048\\t0\\t%s/parent.db' % self.dir))
        p = self.launch(['--', '/bin/sh', '-c', 'printf "%s" >> "$GPUTRACE_RUN_LOG"' % lines])
        self.assertEqual(p.returncode, 0, p.stderr)
        line = self.gputrace_lines(p.stderr)
        self.assertEqual(len(line), 1, p.stderr)
        self.assertIn('wrote 2 traces', line[0])
        self.assertLess(line[0].index('parent.db (pid 32000'), line[0].index('child.db (pid 300'), line[0])

    def test_a_process_that_died_while_its_trace_was_created_is_told_and_its_file_removed(self):
        # killed a few ms after its first CUDA call: the shim had said "creating" with its
        # temporary file, and no "open"; "nothing was traced" was false, the file left behind
        tmp = os.path.join(self.dir, 'k.db.creating-')
        script = ('touch %s$$ %s$$-journal; printf "creating\\t$$\\t%s$$\\n" >> "$GPUTRACE_RUN_LOG"; kill -KILL $$'
                  % (tmp, tmp, tmp))
        p = self.launch(['-o', 'k.db', '--', '/bin/sh', '-c', script])
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r'^gputrace run: process \d+ ended while its trace was being created, a moment after '
                                   r'its first CUDA call: nothing of it was recorded \(its unfinished file was removed\)$')
        self.assertEqual(os.listdir(self.dir), [])

    def test_a_trace_that_could_not_be_created_is_not_told_as_a_kill(self):
        # the shim's creation failed (a file size limit): it says why itself, and its
        # "creating" line is followed by "failed"; the launcher blamed a kill before
        import resource

        def tiny_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        p = subprocess.run([GPUTRACE, 'run', '-o', 'f.db', '--', prog('exit_modes'), 'return', '10'],
                           capture_output=True, text=True, timeout=120, env=base_env(GPUTRACE_CUPTI=0), cwd=self.dir,
                           preexec_fn=tiny_files)
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertIn('cannot initialise trace file', p.stderr)
        self.assertNotIn('ended while its trace was being created', p.stderr)

    def test_an_exec_that_dies_creating_its_trace_is_told_though_its_pid_opened_one_before(self):
        # one pid, two images: the first opened its trace, the exec'ed one was killed creating its own
        tmp = os.path.join(self.dir, 'b.db.creating-')
        script = ('printf "creating\\t$$\\t%s/a.db.creating-$$\\nopen\\t$$\\t-1\\t1\\t%s/a.db\\n'
                  'wrote\\t$$\\t5\\t0\\t1024\\t0\\t%s/a.db\\ncreating\\t$$\\t%s$$\\n" >> "$GPUTRACE_RUN_LOG"; '
                  'touch %s$$; kill -KILL $$' % (self.dir, self.dir, self.dir, tmp, tmp))
        p = self.launch(['--', '/bin/sh', '-c', script])
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertIn('gputrace run: wrote a.db', lines[0])
        self.assertRegex(lines[1], r'^gputrace run: process \d+ ended while its trace was being created')
        self.assertEqual([n for n in os.listdir(self.dir) if '.creating-' in n], [])

    def test_a_process_still_creating_its_trace_is_left_alone(self):
        # a process of the command that outlives it (a daemon): its file is its own to finish
        tmp = os.path.join(self.dir, 'k.db.creating-')
        script = ('sleep 5 >/dev/null 2>&1 & touch %s$!; printf "creating\\t$!\\t%s$!\\n" >> "$GPUTRACE_RUN_LOG"; echo $! > pid'
                  % (tmp, tmp))
        p = self.launch(['--', '/bin/sh', '-c', script])
        with open(os.path.join(self.dir, 'pid')) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(self.gputrace_lines(p.stderr)[0], r'^gputrace run: process \d+ still runs, its trace still '
                                                           r'being created \(k\.db\.creating-\d+\)$')
        self.assertEqual(len([n for n in os.listdir(self.dir) if '.creating-' in n]), 1)

    def test_a_command_killed_before_any_trace_says_so_not_that_nothing_called_cuda(self):
        p = self.launch(['--', '/bin/sh', '-c', 'kill -KILL $$'])
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr)
        self.assertEqual(self.gputrace_lines(p.stderr),
                         ['gputrace run: nothing was traced: the command died of signal 9 (Killed) before any of its '
                          'processes had a trace file (it may have made no CUDA call; one killed within a few ms of its '
                          'first leaves none too)'])

    def test_the_shim_says_creating_with_its_temporary_file_before_open(self):
        log = os.path.join(self.dir, 'run.log')
        with open(log, 'w') as f:
            f.write(RUN_LOG_HEADER)
        p = run([prog('output')], env=base_env(GPUTRACE_CUPTI=0, GPUTRACE_OUTPUT=os.path.join(self.dir, 'c.db'),
                                               GPUTRACE_RUN_LOG=log), cwd=self.dir)
        self.assertEqual(p.returncode, 3, p.stderr)
        with open(log) as f:
            recs = [l.split('\t') for l in f.read().splitlines()[1:]]
        self.assertEqual([r[0] for r in recs], ['creating', 'open', 'wrote'], recs)
        self.assertEqual(recs[0][1], recs[1][1])
        self.assertEqual(recs[0][2], os.path.realpath(os.path.join(self.dir, 'c.db')) + '.creating-' + recs[0][1])

    def test_an_earlier_runs_child_traces_beside_the_output_are_said(self):
        # run -o t.db twice on a command with a CUDA child: the first run's t.PID.db stayed
        # beside the second's, and ranks/report over t*.db mixed the two runs unsaid
        p = self.launch(['-o', 't.db', '--', prog('spawn_children'), 'posix_spawn'])
        self.assertEqual(p.returncode, 0, p.stderr)
        first = sorted(n for n in os.listdir(self.dir) if n != 't.db')
        self.assertEqual(len(first), 1, first)
        self.assertNotIn('earlier run', p.stderr)
        p = self.launch(['-o', 't.db', '--', prog('spawn_children'), 'posix_spawn'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('gputrace run: 1 trace of an earlier run lies beside t.db (%s): a wildcard over them mixes the '
                      'runs; give this run\'s files by name, or remove it' % first[0], p.stderr)
        # files named otherwise are not an earlier run's
        os.unlink(os.path.join(self.dir, first[0]))
        open(os.path.join(self.dir, 't.notes.db'), 'w').close()
        p = self.launch(['-o', 't.db', '--', prog('spawn_children'), 'posix_spawn'])
        self.assertIn('1 trace of an earlier run', p.stderr)   # the second run's child, not t.notes.db
        self.assertNotIn('t.notes.db', p.stderr)

    def test_without_run_each_process_says_its_own_line(self):
        p = run([prog('spawn_children'), 'posix_spawn'],
                env=base_env(GPUTRACE_CUPTI=0, GPUTRACE_OUTPUT=os.path.join(self.dir, 't.db')), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertTrue(all(l.startswith('gputrace: wrote ') for l in lines), lines)

    def test_a_run_log_named_that_is_not_one_is_never_written(self):
        # GPUTRACE_RUN_LOG=/etc/passwd had three lines appended to it, and the closing line was lost (a probe)
        other = os.path.join(self.dir, 'passwd')
        with open(other, 'w') as f:
            f.write('root:x:0:0:root:/root:/bin/bash\n')
        p = run([prog('output')], env=base_env(GPUTRACE_CUPTI=0, GPUTRACE_OUTPUT=os.path.join(self.dir, 'c.db'),
                                               GPUTRACE_RUN_LOG=other), cwd=self.dir)
        self.assertEqual(p.returncode, 3, p.stderr)
        with open(other) as f:
            self.assertEqual(f.read(), 'root:x:0:0:root:/root:/bin/bash\n')
        self.assertEqual(len([l for l in p.stderr.splitlines() if l.startswith('gputrace: wrote ')]), 1, p.stderr)

    def test_child_whose_exec_failed_reports_its_file_once(self):
        # the child traces, tries exec on two paths that do not exist and _exits: each stop
        # before an exec reports (the image may be gone after it); after a failed one nothing
        # was written, so nothing is reported again
        argv = [prog('fork_child'), 'cuda-exec-fails', '5']
        p = run(argv, env=base_env(GPUTRACE_CUPTI=0, GPUTRACE_OUTPUT=os.path.join(self.dir, 't.db')), cwd=self.dir)
        self.assertEqual(p.returncode, 127, p.stderr)
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertEqual(len({l.split(' (')[0] for l in lines}), 2, lines)
        # the run log the launcher reads: one "wrote" record per file
        log = os.path.join(self.dir, 'run.log')
        with open(log, 'w') as f:
            f.write(RUN_LOG_HEADER)
        p = run(argv, env=base_env(GPUTRACE_CUPTI=0, GPUTRACE_OUTPUT=os.path.join(self.dir, 'r.db'),
                                   GPUTRACE_RUN_LOG=log), cwd=self.dir)
        self.assertEqual((p.returncode, self.gputrace_lines(p.stderr)), (127, []), p.stderr)
        with open(log) as f:
            wrote = [l.split('\t')[-1] for l in f.read().splitlines() if l.startswith('wrote\t')]
        self.assertEqual(len(wrote), 2, wrote)
        self.assertEqual(len(set(wrote)), 2, wrote)

    def test_child_that_outlives_the_command_says_its_own_line(self):
        import time
        p = self.launch(['--', '/bin/sh', '-c', '(sleep 0.5; exec %s) 2>%s/late.err >/dev/null &' % (prog('output'), self.dir)])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.gputrace_lines(p.stderr),
                         ['gputrace run: no process of the command that the preload reached made a CUDA call gputrace records (memory, graphs): nothing was traced'])
        deadline = time.monotonic() + 20
        late = os.path.join(self.dir, 'late.err')
        said = []
        while not said and time.monotonic() < deadline:
            time.sleep(0.05)
            if os.path.exists(late):
                with open(late) as f:
                    said = [l for l in f.read().splitlines() if l.startswith('gputrace')]
        self.assertEqual(len(said), 1, said)
        self.assertRegex(said[0], r'^gputrace: wrote .*gputrace-\d+\.db \(20 events')

    def test_trace_of_a_killed_process_is_listed_as_not_finished(self):
        # killed once its trace has its name (the writer creates it asynchronously,
        # under a temporary name first): before that there is nothing to list.
        # The writer names the file, then appends its line to the run log: a
        # kill between the two (microseconds; seen once in a CI run) leaves a
        # named file the launcher never heard of, so the kill waits 0.3 s more
        script = ('%s hang 10 > hang.out & while ! [ -s hang.out ] || ! [ -e k.db ]; do sleep 0.02; done; '
                  'sleep 0.3; kill -KILL $!; wait' % prog('exit_modes'))
        p = self.launch(['-o', 'k.db', '--', '/bin/sh', '-c', script])
        lines = self.gputrace_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r'^gputrace run: wrote k\.db \(pid \d+, not finished: its process was killed, or still runs\)$')
        # of a ranked process ("pid 24634rank 1, , not finished" before)
        os.unlink(os.path.join(self.dir, 'hang.out'))
        p = self.launch(['-o', 'r.db', '--', '/bin/sh', '-c', script.replace('k.db', 'r.db')], RANK='1')
        self.assertRegex(self.gputrace_lines(p.stderr)[0],
                         r'^gputrace run: wrote r\.db \(pid \d+, rank 1, not finished: its process was killed, or still runs\)$')

    def test_a_quiet_setting_that_means_off_keeps_the_closing_line(self):
        # GPUTRACE_QUIET=false is off for the shim, but run took any value
        # but "0" as quiet: no closing line, and each process its own
        for off in ('false', 'off', 'NO'):
            p = self.launch(['-o', 'q-%s.db' % off, '--', prog('output')], GPUTRACE_QUIET=off)
            lines = self.gputrace_lines(p.stderr)
            self.assertEqual(len(lines), 1, lines)
            self.assertTrue(lines[0].startswith('gputrace run: wrote q-%s.db' % off), lines)

    def test_quiet_run_says_nothing(self):
        p = self.launch(['--quiet', '--', prog('output')])
        self.assertEqual(self.gputrace_lines(p.stderr), [])
        p = self.launch(['--', prog('output')], GPUTRACE_QUIET=1)
        self.assertEqual(self.gputrace_lines(p.stderr), [])


class RunLogTest(TraceTest):
    def test_a_run_log_that_is_a_fifo_delays_nothing(self):
        # the writer opened it blocking: the program's exit waited the 30 s the
        # writer is given (a helper's probe)
        fifo = os.path.join(self.dir, 'log')
        os.mkfifo(fifo)
        t0 = time.monotonic()
        p, db = self.trace([prog('output')], env_extra={'GPUTRACE_RUN_LOG': fifo})
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])
