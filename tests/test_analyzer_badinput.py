"""Bad input never crashes gputrace or yields a wrong number: each case gives
one line on stderr naming the file and a distinct, documented exit status."""
import os
import random
import sqlite3

import analyzer_traces as T

COMMANDS = ('summary', 'leaks', 'growth', 'peak', 'oom', 'top')


class BadInput(T.AnalyzerTest):

    def check_all_commands(self, path, rc):
        for cmd in COMMANDS:
            for extra in ([], ['--json']):
                p = self.gputrace(cmd, *extra, path)
                self.assertOneErrorLine(p, rc, path)
                self.assertEqual(p.stdout, '', '%s %s printed on stdout' % (cmd, extra))

    def test_missing_file_exits_3(self):
        self.check_all_commands(os.path.join(self.dir, 'nope.db'), 3)

    def test_directory_exits_3(self):
        self.check_all_commands(self.dir, 3)
        self.assertIn('is a directory, not a trace file; give the trace files in it (DIR/*.db)',
                      self.gputrace('summary', self.dir).stderr)

    def test_not_a_sqlite_file_exits_4(self):
        path = os.path.join(self.dir, 'notes.txt')
        with open(path, 'w') as f:
            f.write('this is not a database\n' * 20)
        self.check_all_commands(path, 4)

    def test_zero_byte_file_exits_4(self):
        path = os.path.join(self.dir, 'zero.db')
        open(path, 'w').close()
        self.check_all_commands(path, 4)

    def test_sqlite_file_that_is_not_a_trace_exits_5(self):
        path = os.path.join(self.dir, 'other.db')
        con = sqlite3.connect(path)
        con.execute('CREATE TABLE events(id INTEGER PRIMARY KEY, t_ns INTEGER)')
        con.commit()
        con.close()
        self.check_all_commands(path, 5)

    def test_newer_schema_version_exits_6(self):
        path = T.leak_fixed(self.dir)
        con = sqlite3.connect(path)
        con.execute('PRAGMA user_version = 99')
        con.close()
        self.check_all_commands(path, 6)
        self.assertIn('newer', self.gputrace('summary', path).stderr)

    def test_trace_truncated_to_half_exits_4(self):
        path = T.leak_retained(self.dir, iterations=2000)
        with open(path, 'rb') as f:
            data = f.read()
        cut = os.path.join(self.dir, 'cut.db')
        with open(cut, 'wb') as f:
            f.write(data[:len(data) // 2])
        self.check_all_commands(cut, 4)
        self.assertIn('truncated', self.gputrace('leaks', cut).stderr)

    def test_trace_truncated_mid_page_exits_4(self):
        path = T.leak_retained(self.dir, iterations=500)
        with open(path, 'rb') as f:
            data = f.read()
        cut = os.path.join(self.dir, 'cut.db')
        with open(cut, 'wb') as f:
            f.write(data[:len(data) // 2 + 100])
        self.check_all_commands(cut, 4)

    def test_corrupt_event_pages_exit_4(self):
        path = T.leak_retained(self.dir, iterations=2000)
        data = bytearray(open(path, 'rb').read())
        page = 4096
        npages = len(data) // page
        rnd = random.Random(5)
        for pg in range(npages // 2, npages // 2 + 4):   # the middle of the file: events pages
            data[pg * page:(pg + 1) * page] = bytes(rnd.getrandbits(8) for _ in range(page))
        bad = os.path.join(self.dir, 'corrupt.db')
        open(bad, 'wb').write(data)
        self.check_all_commands(bad, 4)

    def test_corrupt_schema_page_exits_4(self):
        path = T.leak_fixed(self.dir)
        data = bytearray(open(path, 'rb').read())
        data[100:4096] = b'\x5a' * (4096 - 100)   # sqlite_master, after the header
        bad = os.path.join(self.dir, 'corrupt.db')
        open(bad, 'wb').write(data)
        self.check_all_commands(bad, 4)

    def test_trace_missing_events_table_exits_4(self):
        path = T.leak_fixed(self.dir)
        con = sqlite3.connect(path)
        con.execute('DROP VIEW events_v')
        con.execute('DROP VIEW allocations')
        con.execute('DROP VIEW live_at_exit')
        con.execute('DROP VIEW memory_timeline')
        con.execute('DROP VIEW failures')
        con.execute('DROP TABLE events')
        con.commit()
        con.close()
        line = self.assertOneErrorLine(self.gputrace('leaks', path), 4, path)
        self.assertIn('incomplete', line)

    def test_oom_json_on_a_trace_without_its_frames_fails_as_the_text_does(self):
        # the failed-frees list after the failures overwrote their error: --json printed "failures": [] and
        # exited 0 where the text exited 4 (a review)
        path = T.oom(self.dir)
        con = sqlite3.connect(path)
        con.execute('DROP TABLE stack_frames')
        con.commit()
        con.close()
        text = self.gputrace('oom', path)
        self.assertOneErrorLine(text, 4, path)
        self.assertOneErrorLine(self.gputrace('oom', '--json', path), 4, path)

    def test_empty_trace_exits_7(self):
        self.check_all_commands(T.empty_trace(self.dir), 7)

    def test_growth_without_iterations_exits_8(self):
        path = T.no_iterations(self.dir)
        line = self.assertOneErrorLine(self.gputrace('growth', path), 8, path)
        self.assertIn('no iterations', line)

    def test_peak_without_iterations_still_reports_overall_peak(self):
        path = T.no_iterations(self.dir)
        d = self.json('peak', path)
        self.assertEqual(d['iterations'], [])
        self.assertEqual(d['peak_bytes'], 5 * T.MiB)   # 2 MiB and 3 MiB live together
        self.assertIsNone(d['fit'])
        for cmd in ('summary', 'leaks', 'oom', 'top'):
            self.ok(cmd, path)

    def test_usage_errors_exit_2(self):
        db = T.leak_fixed(self.dir)
        cases = [(), ('frobnicate', db), ('leaks',), ('peak', '--frobnicate', db), ('peak', '--memory', 'vram', db),
                 ('growth', '--fail-above', 'lots', db), ('leaks', '--fail-above', '1', db), ('peak', '--top', '0', db),
                 ('growth', '--iterations', 'sometimes', db), ('peak', '--device-bytes'), ('summary', '--json=yes', db)]
        for args in cases:
            p = self.gputrace(*args)
            self.assertEqual(p.returncode, 2, args)
            if args:
                self.assertEqual(len(p.stderr.splitlines()), 1, args)
                self.assertTrue(p.stderr.startswith('gputrace: '), args)

    def test_trace_still_being_written_in_wal_mode_is_readable(self):
        path = os.path.join(self.dir, 'live.db')
        t = T.Trace(path)
        t.con.execute('PRAGMA journal_mode = WAL')
        t.alloc(T.MiB, ['setup', 'main'])
        t.close(end_reason=None)
        writer = sqlite3.connect(path)
        writer.execute('PRAGMA wal_autocheckpoint = 0')
        writer.execute('INSERT INTO events(t_ns, api, ptr, size, device, tid, result) VALUES (999999, 1, 12345, 4096, 0, 1, 0)')
        writer.commit()
        try:
            d = self.json('leaks', path)
            self.assertEqual((d['total_count'], d['total_bytes']), (2, T.MiB + 4096))
            self.assertFalse(d['process_exited'])
        finally:
            writer.close()


class KilledTraces(T.AnalyzerTest):
    """A traced process killed mid-run leaves its trace in WAL mode: what was
    committed lives in the -wal file until a checkpoint. The analyzer reads it
    through SQLite and never calls it truncated because of the main file's
    header; a copy without the -wal file gets a message that says so."""

    def killed_trace(self, n=3000):
        import signal
        import subprocess
        import time
        import gtlib
        db = os.path.join(self.dir, 'killed.db')
        env = gtlib.base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1, GPUTRACE_CUPTI=0, LD_PRELOAD=gtlib.SHIM)
        p = subprocess.Popen([gtlib.prog('exit_modes'), 'hang', str(n)], env=env, stdout=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline().decode().split(), ['allocated', str(n)])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    if gtlib.query(db, 'SELECT count(*) FROM events') == [(n,)]:
                        break
                except sqlite3.Error:
                    pass
                time.sleep(0.02)
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()
        self.assertTrue(os.path.getsize(db + '-wal') > 0)
        return db

    def test_killed_trace_opens_through_its_wal_whatever_the_header_says(self):
        db = self.killed_trace()
        with open(db, 'r+b') as f:   # a checkpoint cut short: page 1 written, the pages after it not yet
            f.seek(28)
            f.write((1000).to_bytes(4, 'big'))
        d = self.json('summary', db)
        self.assertEqual(d['events']['allocs'], 3000)
        self.assertIn('not closed (the process was killed or crashed, or still runs)', self.ok('summary', db).stdout)

    def test_copy_without_its_wal_file_says_the_wal_is_missing(self):
        import shutil
        db = self.killed_trace()
        os.mkdir(os.path.join(self.dir, 'copy'))
        copy = os.path.join(self.dir, 'copy', 'killed.db')
        shutil.copy(db, copy)
        for cmd in ('summary', 'leaks'):
            line = self.assertOneErrorLine(self.gputrace(cmd, copy), 4, copy)
            self.assertIn('-wal file', line)
            self.assertIn('missing', line)
        # and the analyzer made no -wal or -shm beside the copy (it told the
        # user to copy the -wal its own run had made, and a name with a -wal
        # beside it is taken by the shim)
        self.assertEqual(sorted(os.listdir(os.path.dirname(copy))), ['killed.db'])


    def test_a_wal_cut_short_is_said_not_taken_for_an_empty_run(self):
        # a -wal cut short by 552 bytes read as "ended before its first events were written", and one cut in
        # half silently gave 97% of the events (a helper's probe)
        import shutil
        import signal
        import subprocess
        import time
        import gtlib
        db = self.killed_trace()   # its events in one commit
        many = os.path.join(self.dir, 'many.db')   # a loop killed after many commits
        env = gtlib.base_env(GPUTRACE_OUTPUT=many, GPUTRACE_QUIET=1, GPUTRACE_CUPTI=0, LD_PRELOAD=gtlib.SHIM)
        p = subprocess.Popen([gtlib.prog('live_loop'), '100000', '20', '2000'], env=env, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not os.path.exists(many) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.5)
        p.send_signal(signal.SIGKILL)
        p.wait()
        full = self.json('summary', many)['events']['allocs']
        self.assertGreater(full, 100)
        for name, src, keep, rc in (('short', db, os.path.getsize(db + '-wal') - 552, 4),
                                    ('half', many, os.path.getsize(many + '-wal') // 2 + 100, 0)):
            d = os.path.join(self.dir, name)
            os.mkdir(d)
            copy = shutil.copy(src, os.path.join(d, 'killed.db'))
            with open(src + '-wal', 'rb') as f, open(copy + '-wal', 'wb') as g:
                g.write(f.read(keep))
            p = self.gputrace('summary', '--json', copy)
            if rc:
                line = self.assertOneErrorLine(p, rc, copy)
                self.assertIn('-wal file, which holds what was written, was cut short (it ends in a partial frame', line)
                self.assertNotIn('before its first events were written', line)
                continue
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(T.json.loads(p.stdout)['wal_cut_short'])
            self.assertLess(T.json.loads(p.stdout)['events']['allocs'], full)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn('ends in a partial frame', p.stderr)
        # the whole -wal says nothing
        p = self.gputrace('summary', '--json', db)
        self.assertEqual((p.returncode, p.stderr), (0, ''))
        self.assertFalse(T.json.loads(p.stdout)['wal_cut_short'])

    def test_symbolize_of_a_killed_trace_leaves_no_missing_wal_behind(self):
        # its close folded the -wal into the file and deleted it; the file, still in WAL mode, then made
        # every report warn that its -wal was missing (a helper's probe)
        db = self.killed_trace()
        p = self.gputrace('symbolize', db)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(db + '-wal'))
        p = self.gputrace('summary', '--json', db)
        self.assertEqual((p.returncode, p.stderr), (0, ''))
        d = T.json.loads(p.stdout)
        self.assertEqual((d['wal_missing'], d['events']['allocs']), (False, 3000))


class HostileNames(T.AnalyzerTest):
    def test_a_function_name_longer_than_the_short_names_buffer_ends(self):
        # an undemangled symbol of 511 bytes or more, with its module after it: leaks,
        # peak, top and report looped forever (the short name's buffer full, the name's
        # cursor no longer moved on)
        for n in (510, 511, 5000):
            t = T.Trace(os.path.join(self.dir, 'fn%d.db' % n))
            t.alloc(1 << 20, [('_ZN2at6native' + 'N5torch8autograd' * 400)[:n], 'main'])
            db = t.close()
            for cmd in ('leaks', 'peak', 'top', 'summary'):
                p = self.gputrace(cmd, db, timeout=30)
                self.assertEqual(p.returncode, 0, (n, cmd, p.stderr))
            self.assertIn('_ZN2at6native', self.ok('leaks', db).stdout)


class HostileNumbers(T.AnalyzerTest):
    """Sizes and times at the ends of int64 never wrap into a wrong number."""

    def test_sizes_that_add_up_past_2_62_are_refused_as_corrupt(self):
        t = T.Trace(os.path.join(self.dir, 'huge.db'))
        for _ in range(40):
            t.alloc(T.MiB, ['huge', 'main'])
        db = t.close()
        con = sqlite3.connect(db)   # 40 x 2^62: a sum that wraps to 0 in int64
        con.execute('UPDATE events SET size = ?', (1 << 62,))
        con.commit()
        con.close()
        for cmd in ('summary', 'leaks', 'peak', 'top', 'growth', 'oom'):
            self.assertIn('add up to more than 2^62', self.assertOneErrorLine(self.gputrace(cmd, db), 4, db))

    def test_a_failed_request_of_int64_max_gives_no_negative_or_wrapped_need(self):
        t = T.Trace(os.path.join(self.dir, 'ask.db'))
        t.alloc(T.GiB, ['weights', 'main'])
        t.alloc((1 << 63) - 1, ['ask_everything', 'main'], result=2)
        f = self.json('oom', t.close())['failures'][0]
        self.assertEqual((f['requested_bytes'], f['needed_bytes']), ((1 << 63) - 1, (1 << 63) - 1))

    def test_export_of_extreme_times_is_valid_json(self):
        import json
        t = T.Trace(os.path.join(self.dir, 'times.db'))
        p = t.alloc(T.MiB, ['a', 'main'])
        t.free(p)
        db = t.close()
        con = sqlite3.connect(db)
        con.execute('UPDATE events SET t_ns = ? WHERE id = (SELECT min(id) FROM events)', (-(1 << 63),))
        con.execute('UPDATE events SET t_ns = ? WHERE id = (SELECT max(id) FROM events)', ((1 << 63) - 1,))
        con.commit()
        con.close()
        out = self.ok('export', db).stdout
        json.loads(out)
