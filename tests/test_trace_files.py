"""Trace files as users handle them (a helper's hostile probe, session 41):
names SQLite would read as URIs, output over the trace read, a copy made
without its -wal after a checkpoint, a read-only trace given to symbolize,
paths longer than SQLite opens, a world size from the environment that
would list billions of missing ranks, a usage error with a newline."""
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import analyzer_traces as T
import gtlib


def small_trace(path, pid, rank=None):
    t = T.Trace(path, pid=pid, rank=rank)
    for s in range(4):
        t.push('train_step %d' % s)
        t.free(t.alloc(T.MiB, ['forward', 'main']))
        t.pop()
    return t.close()


class UriLikeNames(T.AnalyzerTest):
    def test_a_relative_name_beginning_with_file_colon_is_that_file(self):
        # Debian's SQLite reads "file:two.db" as a URI naming two.db
        small_trace(os.path.join(self.dir, 'file:two.db'), pid=1111)
        small_trace(os.path.join(self.dir, 'two.db'), pid=2222)
        p = subprocess.run([gtlib.GPUTRACE, 'summary', '--json', 'file:two.db'], cwd=self.dir, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(T.json.loads(p.stdout)['pid'], 1111)

    def test_the_shim_writes_a_trace_named_file_colon(self):
        env = gtlib.base_env(GPUTRACE_OUTPUT='file:x.db', GPUTRACE_QUIET=1, GPUTRACE_CUPTI=0)
        p = gtlib.run([gtlib.prog('demo_loop')], env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, '')
        self.assertEqual(sorted(os.listdir(self.dir)), ['file:x.db'])
        self.assertGreater(gtlib.query(os.path.join(self.dir, 'file:x.db'), 'SELECT count(*) FROM events')[0][0], 0)


class OutputFiles(T.AnalyzerTest):
    def test_export_and_report_refuse_to_write_over_a_trace(self):
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        before = open(db, 'rb').read()
        for cmd in ('export', 'report'):
            line = self.assertOneErrorLine(self.gputrace(cmd, '-o', db, db), 10, db)
            self.assertIn('which -o would replace', line)
            self.assertEqual(open(db, 'rb').read(), before)

    def test_output_through_a_link_replaces_its_file_and_keeps_the_link(self):
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        real, link = os.path.join(self.dir, 'real.json'), os.path.join(self.dir, 'link.json')
        open(real, 'w').write('old')
        os.symlink('real.json', link)
        self.ok('export', '-o', link, db)
        self.assertTrue(os.path.islink(link))
        self.assertIn('traceEvents', open(real).read())


class OutputOverACompanion(T.AnalyzerTest):
    def test_export_and_report_refuse_a_traces_wal_shm_and_journal(self):
        # a killed run's events are in its -wal alone: -o there replaced them all (a helper's probe)
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        con = sqlite3.connect(db)   # a live trace: WAL mode, a commit not yet checkpointed
        try:
            con.execute('PRAGMA journal_mode=WAL')
            con.execute('PRAGMA wal_autocheckpoint=0')
            con.execute("INSERT INTO notes(t_ns, component, message) VALUES (1, 'test', 'only in the wal')")
            con.commit()
            os.mkdir(os.path.join(self.dir, 'k'))
            for ext in ('', '-wal', '-shm'):   # as a killed run leaves them
                shutil.copy(db + ext, os.path.join(self.dir, 'k', 't.db' + ext))
        finally:
            con.close()
        k = os.path.join(self.dir, 'k', 't.db')
        before = {ext: open(k + ext, 'rb').read() for ext in ('', '-wal')}   # (a reader marks the -shm)
        shutil.copy(k + '-wal', os.path.join(self.dir, 'k', 'log.bin'))   # a write-ahead log by its header alone
        for cmd in ('export', 'report'):
            for out in (k + '-wal', k + '-shm', k + '-journal', os.path.join(self.dir, 'k', 'log.bin')):
                line = self.assertOneErrorLine(self.gputrace(cmd, '-o', out, k), 10, out)
                self.assertIn('which -o would replace', line)
        self.assertFalse(os.path.exists(k + '-journal'))
        self.assertEqual({ext: open(k + ext, 'rb').read() for ext in ('', '-wal')}, before)
        self.assertTrue(open(k + '-shm', 'rb').read())
        self.assertIn('only in the wal', [m for (m,) in gtlib.query(k, 'SELECT message FROM notes')])
        # a name that only ends like one, with no database beside it, is an output like any other
        self.ok('export', '-o', os.path.join(self.dir, 'k', 'x-wal'), k)


class StillWritten(T.AnalyzerTest):
    """A trace read while its process still writes it (the process of this
    host that holds the file open) is not called killed, nor its creation
    file one to delete (a helper's probe)."""

    def hold(self, path, writer=True):
        """A process that keeps path open: as the traced process's writer does (libgputrace mapped, the
        file open for writing), or as a reader (neither: never taken for the writer; a review)."""
        env = dict(os.environ, LD_PRELOAD=gtlib.SHIM, GPUTRACE_QUIET='1') if writer else None   # (no CUDA: no trace)
        p = subprocess.Popen([sys.executable, '-c', 'import sys, time; f = open(sys.argv[1], sys.argv[2]); '
                              'print("open", flush=True); time.sleep(120)', path, 'r+b' if writer else 'rb'],
                             stdout=subprocess.PIPE, text=True, env=env)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), 'open')
        return p

    def unclosed(self, path):
        t = T.Trace(path)
        t.alloc(1 << 20, ['init', 'main'])
        for i in range(4):
            t.iteration(i, 8)
            t.free(t.alloc(8 << 20, ['step', 'main']))
        t.iteration(4, 8)
        t.alloc(4 << 20, ['step', 'main'])   # the last step, cut by the end of the record
        return t.close(end_reason=None)

    def test_an_unclosed_trace_says_whether_its_process_still_writes_it(self):
        db = self.unclosed(os.path.join(self.dir, 'u.db'))
        out = self.ok('summary', db).stdout
        self.assertIn('not closed (the process was killed or crashed, or still runs)', out)
        self.assertIn('the record ends in it (the process was killed?): incomplete, not fitted', self.ok('peak', db).stdout)
        reader = self.hold(db, writer=False)   # another reader is not its writer
        self.assertIn('(the process was killed or crashed, or still runs)', self.ok('summary', db).stdout)
        self.assertIn('the record ends in it (the process was killed?)', self.ok('peak', db).stdout)
        reader.kill()
        p = self.hold(db)   # traced, open for writing, but not the process the trace names (a fork child)
        self.assertIn('(the process was killed or crashed, or still runs)', self.ok('summary', db).stdout)
        con = sqlite3.connect(db)   # now it is the trace's own
        con.execute('UPDATE processes SET pid = ?', (p.pid,))
        con.commit()
        con.close()
        self.assertIn('not closed: process %d still writes it' % p.pid, self.ok('summary', db).stdout)
        peak = self.ok('peak', db).stdout
        self.assertIn('the process still runs in it (the trace is being written): incomplete, not fitted', peak)
        self.assertNotIn('killed', peak)

    def test_a_trace_read_while_written_is_one_snapshot(self):
        # each query took its own snapshot: iterations read after the events
        # ended before they began, had no allocation, or ran flat while memory
        # grew 64 KiB a step (a helper's probe)
        db = os.path.join(self.dir, 'live.db')
        env = gtlib.base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1, GPUTRACE_CUPTI=0, LD_PRELOAD=gtlib.SHIM)
        p = subprocess.Popen([gtlib.prog('live_loop'), '100000', '100', '1000'], env=env, stdout=subprocess.DEVNULL)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        deadline = time.monotonic() + 30
        while not os.path.exists(db) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        for _ in range(6):
            peak, growth = self.json('peak', db), self.json('growth', db)
            its = peak['iterations']
            self.assertGreater(len(its), 10)
            for it in its:
                self.assertGreaterEqual(it['end_ns'], it['start_ns'], it)
            self.assertTrue(all(it['peak_bytes'] > 0 for it in its[:-1]), its[-5:])
            self.assertEqual(growth['slope_bytes_per_iteration'], 65536, growth)
            self.assertFalse(its[-1]['process_died_in_it'] and its[-1]['not_closed'])
            time.sleep(0.2)
        self.assertIsNone(p.poll())   # still running: every reading was of a trace being written

    def test_a_trace_being_created_is_not_one_to_delete(self):
        made = self.unclosed(os.path.join(self.dir, 'x.db'))
        db = os.path.join(self.dir, 'c.db')
        p = self.hold(made, writer=False)   # (a pid for the name: a reader, not its writer)
        creating = db + '.creating-%d' % p.pid
        os.rename(made, creating)
        line = self.assertOneErrorLine(self.gputrace('summary', db), 3, db)
        self.assertIn('the traced process ended (killed?) while creating the trace', line)
        self.assertIn('delete it', line)
        line = self.assertOneErrorLine(self.gputrace('summary', creating), 7, creating)
        self.assertIn('delete it', line)
        p.kill()
        p.wait()
        p = self.hold(creating)   # the writer, under another pid than the name's: not it either
        self.assertIn('delete it', self.assertOneErrorLine(self.gputrace('summary', db), 3, db))
        p.kill()
        p.wait()
        os.rename(creating, db + '.creating-%d' % p.pid)   # the name's pid gone: still to delete
        self.assertIn('delete it', self.assertOneErrorLine(self.gputrace('summary', db), 3, db))
        q = self.hold(db + '.creating-%d' % p.pid)
        creating = db + '.creating-%d' % q.pid
        os.rename(db + '.creating-%d' % p.pid, creating)
        p = q
        line = self.assertOneErrorLine(self.gputrace('summary', db), 3, db)
        self.assertIn('not there yet: process %d is creating it' % p.pid, line)
        self.assertNotIn('delete', line)
        line = self.assertOneErrorLine(self.gputrace('summary', creating), 7, creating)
        self.assertIn('a trace still being created: process %d has it open' % p.pid, line)
        self.assertNotIn('delete', line)


class CopiedWithoutWal(T.AnalyzerTest):
    def test_a_copy_made_while_written_without_its_wal_says_its_last_events_may_be_missing(self):
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        con = sqlite3.connect(db)   # as a live trace is: not closed, WAL mode, a commit not yet checkpointed
        con.execute('UPDATE processes SET end_ns = NULL, end_reason = NULL')
        con.commit()
        con.execute('PRAGMA journal_mode=WAL')
        con.execute('PRAGMA wal_autocheckpoint=0')
        con.execute("INSERT INTO notes(t_ns, component, message) VALUES (1, 'test', 'after the checkpoint')")
        con.commit()
        try:
            os.mkdir(os.path.join(self.dir, 'copy'))
            copy = shutil.copy(db, os.path.join(self.dir, 'copy', 't.db'))
            p = self.gputrace('summary', '--json', copy)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(T.json.loads(p.stdout)['wal_missing'])
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn('no -wal file beside it: if it was copied without its -wal', p.stderr)
            self.assertIn('copy %s-wal with it' % copy, p.stderr)
            self.assertEqual(os.listdir(os.path.dirname(copy)), ['t.db'])   # nothing made beside it
            copy = shutil.copy(db, os.path.join(self.dir, 'copy', 'odd %?#name.db'))   # (escaped in its URI)
            self.assertTrue(T.json.loads(self.gputrace('summary', '--json', copy).stdout)['wal_missing'])
            # a path given with '//' (no URI host: "invalid uri authority")
            self.assertEqual(self.gputrace('summary', '/' + copy).returncode, 0)
            # the trace itself, its -wal beside it, says nothing
            p = self.gputrace('summary', '--json', db)
            self.assertEqual((p.returncode, p.stderr), (0, ''))
            self.assertFalse(T.json.loads(p.stdout)['wal_missing'])
        finally:
            con.close()


class ReadOnlyAndLongPaths(T.AnalyzerTest):
    def test_symbolize_on_a_trace_it_cannot_write_says_so(self):
        if os.geteuid() != 0 or not shutil.which('setpriv'):
            self.skipTest('needs root and setpriv to run as another user')
        os.chmod(self.dir, 0o755)
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        os.chmod(db, 0o444)
        p = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', gtlib.GPUTRACE,
                            'symbolize', db], capture_output=True, text=True, timeout=60)
        line = self.assertOneErrorLine(p, 3, db)
        self.assertIn('read-only', line)

    def test_the_shim_says_a_trace_path_is_longer_than_sqlite_opens_and_run_refuses_it_first(self):
        # the line said only "unable to open database file", and run started the command to trace nothing
        deep = self.dir
        while len(deep) < 520:
            deep = os.path.join(deep, 'd' * 60)
        os.makedirs(deep)
        p = gtlib.run([gtlib.prog('demo_loop')], env=gtlib.base_env(GPUTRACE_CUPTI=0), cwd=deep)
        self.assertEqual(p.returncode, 0, p.stderr)
        line = [l for l in p.stderr.splitlines() if l.startswith('gputrace:')]
        self.assertEqual(len(line), 1, p.stderr)
        self.assertRegex(line[0], r'^gputrace: cannot open trace file .*: its full path is \d+ bytes, and SQLite opens '
                         r'none over 504; tracing is off, the program continues \(set GPUTRACE_OUTPUT to a shorter '
                         r'path\)$')
        self.assertEqual(os.listdir(deep), [])
        marker = os.path.join(self.dir, 'ran')
        for out in (os.path.join(deep, 't.db'), deep, os.path.join(deep, 't-%p.db')):
            p = subprocess.run([gtlib.GPUTRACE, 'run', '-o', out, '--', '/bin/sh', '-c', 'touch ' + marker],
                               capture_output=True, text=True, timeout=60, env=gtlib.base_env())
            self.assertEqual(p.returncode, 2, (out, p.stderr))
            self.assertRegex(p.stderr, r'^gputrace run: -o .*: the trace\'s full path would be up to \d+ bytes, and '
                             r'SQLite opens none over 504; choose a shorter path\n$')
            self.assertFalse(os.path.exists(marker), out)

    def test_a_program_s_restrictive_umask_still_leaves_a_trace_its_owner_can_read(self):
        # umask 0277 made the trace read-only: "attempt to write a readonly database", no trace (a helper's probe)
        if os.geteuid() != 0 or not shutil.which('setpriv'):
            self.skipTest('needs root and setpriv to run as another user')
        os.chmod(self.dir, 0o777)
        db = os.path.join(self.dir, 'u.db')
        p = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '/bin/sh', '-c',
                            'umask 0277; exec "$0"', gtlib.prog('demo_loop')], cwd=self.dir, capture_output=True,
                           text=True, timeout=60,
                           env=gtlib.base_env(GPUTRACE_CUPTI=0, GPUTRACE_OUTPUT=db, LD_PRELOAD=gtlib.SHIM))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('readonly', p.stderr)
        self.assertEqual(oct(os.stat(db).st_mode & 0o777), oct(0o600))   # group and others as the umask says
        self.assertGreater(sqlite3.connect(db).execute('SELECT count(*) FROM events').fetchone()[0], 0)
        self.assertEqual(sorted(os.listdir(self.dir)), ['u.db'])

    def test_a_path_longer_than_sqlite_opens_says_so(self):
        deep = self.dir
        while len(deep) < 520:
            deep = os.path.join(deep, 'd' * 60)
        os.makedirs(deep)
        db = os.path.join(deep, 't.db')   # (Python's SQLite cannot make it there either)
        os.rename(small_trace(os.path.join(self.dir, 't.db'), pid=1), db)
        line = self.assertOneErrorLine(self.gputrace('summary', db), 3)
        self.assertIn('shorter path', line)


class HostileWorldSize(T.AnalyzerTest):
    def test_a_world_size_of_two_billion_lists_missing_ranks_as_a_range(self):
        db = small_trace(os.path.join(self.dir, 'r0.db'), pid=1, rank=0)
        con = sqlite3.connect(db)
        con.execute('UPDATE processes SET world_size = 2000000000')
        con.commit()
        con.close()
        p = self.gputrace('ranks', db, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('Missing (no trace given for): rank 1-1999999999\n', p.stdout)
        self.assertLess(len(p.stdout), 10000)
        d = self.json('ranks', db)
        self.assertEqual(d['missing_rank_count'], 1999999999)
        self.assertEqual(len(d['missing_ranks']), 10000)
        self.assertEqual(d['missing_ranks'][:2], [1, 2])


class UsageAndRanks(T.AnalyzerTest):
    def test_a_newline_in_an_option_value_stays_one_line(self):
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        p = self.gputrace('top', '--top', '1\n2', db)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    def test_a_newline_in_a_trace_path_stays_one_line(self):
        # the error line and the section header split in two (a helper's probe)
        line = self.assertOneErrorLine(self.gputrace('summary', os.path.join(self.dir, 'no\nsuch.db')), 3)
        self.assertIn('no\\nsuch.db: no such file', line)
        db = small_trace(os.path.join(self.dir, 't.db'), pid=1)
        odd = os.path.join(self.dir, 'a\tb\nc.db')
        shutil.copy(db, odd)
        out = self.ok('summary', db, odd).stdout
        self.assertIn('== %s (pid 1) ==\n' % os.path.join(self.dir, 'a\\tb\\nc.db'), out)
        p = self.gputrace('export', '-o', os.path.join(self.dir, 'no such dir', 'x\ny.json'), db)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    def test_a_file_given_twice_is_one_rank(self):
        db = small_trace(os.path.join(self.dir, 'r0.db'), pid=1, rank=0)
        p = self.gputrace('ranks', '--json', db, os.path.join(self.dir, '.', 'r0.db'))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(T.json.loads(p.stdout)['ranks']), 1)
        self.assertIn('given twice: read once', p.stderr)
