"""gputrace symbolize: frames get the source file and line of the call,
read from the modules' debug info after the run; reports then show them."""
import os
import shutil
import subprocess

from gtlib import GPUTRACE, TraceTest, prog, query

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'progs', 'call_chain.c')


def source_line(text):
    """1-based line of call_chain.c that contains text (the call each frame makes)."""
    with open(SOURCE, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError('%r not in %s' % (text, SOURCE))


class SymbolizeTest(TraceTest):
    def symbolize(self, *args, cwd=None):
        return subprocess.run([GPUTRACE, 'symbolize'] + list(args), capture_output=True, text=True, cwd=cwd)

    def frame_lines(self, db):
        return dict((f, (os.path.basename(file) if file else None, line)) for f, file, line in query(
            db, "SELECT function, file, line FROM frames WHERE function IN "
                "('inner_layer', 'middle_layer', 'outer_layer', 'main')"))

    def test_frames_get_the_file_and_line_of_each_call(self):
        p, db = self.trace([prog('call_chain')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM frames WHERE file IS NOT NULL'), [(0,)])
        s = self.symbolize(db)
        self.assertEqual(s.returncode, 0, s.stderr)
        lines = self.frame_lines(db)
        self.assertEqual(lines['inner_layer'], ('call_chain.c', source_line('cudaMalloc(&p, n)')))
        self.assertEqual(lines['middle_layer'], ('call_chain.c', source_line('inner_layer(n + 1)')))
        self.assertEqual(lines['outer_layer'], ('call_chain.c', source_line('middle_layer(n + 1)')))
        path = query(db, "SELECT file FROM frames WHERE function = 'inner_layer'")[0][0]
        self.assertEqual(os.path.realpath(path), os.path.realpath(SOURCE))
        self.assertIntegrity(db)

    def test_reports_show_file_and_line_after_symbolize(self):
        p, db = self.trace([prog('call_chain')])
        self.assertEqual(self.symbolize(db).returncode, 0)
        top = subprocess.run([GPUTRACE, 'top', db], capture_output=True, text=True)
        self.assertEqual(top.returncode, 0, top.stderr)
        self.assertIn('call_chain.c:%d' % source_line('cudaMalloc(&p, n)'), top.stdout)

    def test_reports_say_how_to_get_lines_until_symbolized(self):
        # a CUDA developer's first report named functions only, with no word of symbolize
        p, db = self.trace([prog('call_chain')])
        hint = '(call sites without source lines: gputrace symbolize %s adds file:line' % db
        out = subprocess.run([GPUTRACE, 'top', db], capture_output=True, text=True).stdout
        self.assertIn(hint, out.splitlines()[-1])
        # a report that shows no call site says nothing of them (everything was freed)
        self.assertNotIn('gputrace symbolize', subprocess.run([GPUTRACE, 'leaks', db], capture_output=True,
                                                              text=True).stdout)
        self.assertEqual(self.symbolize(db).returncode, 0)
        self.assertNotIn('gputrace symbolize', subprocess.run([GPUTRACE, 'top', db], capture_output=True,
                                                              text=True).stdout)
        self.assertNotIn('gputrace symbolize', subprocess.run([GPUTRACE, 'top', '--json', db], capture_output=True,
                                                              text=True).stdout)

    def test_the_hint_is_not_given_again_after_symbolize_found_nothing(self):
        # stripped binaries: addr2line answers ??:0, and the hint to run symbolize again sent the user in a circle
        p, db = self.trace([prog('call_chain')])
        fake = os.path.join(self.dir, 'addr2line')
        with open(fake, 'w') as f:
            f.write('#!/bin/sh\nwhile read a; do echo "$a"; echo "??:0"; done\n')
        os.chmod(fake, 0o755)
        s = self.symbolize('--addr2line', fake, db)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertIn(' 0 of ', s.stdout)
        out = subprocess.run([GPUTRACE, 'top', db], capture_output=True, text=True).stdout
        self.assertNotIn('gputrace symbolize', out)

    def test_growth_failing_its_threshold_still_gives_the_hint(self):
        p, db = self.trace([prog('demo_loop')])
        g = subprocess.run([GPUTRACE, 'growth', '--fail-above', '1K', db], capture_output=True, text=True)
        self.assertEqual(g.returncode, 1, g.stderr)
        self.assertIn('(call sites without source lines: gputrace symbolize', g.stdout)

    def test_running_twice_changes_nothing(self):
        p, db = self.trace([prog('call_chain')])
        self.assertEqual(self.symbolize(db).returncode, 0)
        first = query(db, 'SELECT id, file, line FROM frames ORDER BY id')
        again = self.symbolize(db)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(query(db, 'SELECT id, file, line FROM frames ORDER BY id'), first)

    def test_module_gone_from_disk_leaves_frames_unresolved(self):
        exe = os.path.join(self.dir, 'call_chain_copy')
        shutil.copy(prog('call_chain'), exe)
        p, db = self.trace([exe])
        self.assertEqual(p.returncode, 0, p.stderr)
        os.unlink(exe)
        s = self.symbolize(db)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertIn('no longer on disk', s.stdout)
        self.assertEqual(self.frame_lines(db)['inner_layer'], (None, None))

    def test_missing_addr2line_is_one_line_and_exit_9(self):
        p, db = self.trace([prog('call_chain')])
        s = self.symbolize('--addr2line', os.path.join(self.dir, 'no-such-addr2line'), db)
        self.assertEqual(s.returncode, 9)
        self.assertEqual(len(s.stderr.strip().splitlines()), 1, s.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM frames WHERE file IS NOT NULL'), [(0,)])

    def test_bad_input_exit_codes_match_the_reports(self):
        self.assertEqual(self.symbolize(os.path.join(self.dir, 'missing.db')).returncode, 3)
        junk = os.path.join(self.dir, 'junk.db')
        with open(junk, 'wb') as f:
            f.write(b'not a database' * 100)
        s = self.symbolize(junk)
        self.assertEqual(s.returncode, 4)
        self.assertEqual(len(s.stderr.strip().splitlines()), 1, s.stderr)
        self.assertEqual(self.symbolize().returncode, 2)

    def test_program_started_by_a_relative_path_symbolizes_the_same_from_any_directory(self):
        os.mkdir(os.path.join(self.dir, 'bin'))
        os.mkdir(os.path.join(self.dir, 'elsewhere'))
        shutil.copy(prog('call_chain'), os.path.join(self.dir, 'bin', 'call_chain'))
        p, db = self.trace(['bin/call_chain'])   # run from self.dir: the loader names it "bin/call_chain"
        self.assertEqual(p.returncode, 0, p.stderr)
        # recorded absolute: a relative name is the traced process's directory's, not symbolize's
        # ("../repro/app" read "no longer on disk" from elsewhere, or stored another file's lines)
        self.assertIn((os.path.realpath(os.path.join(self.dir, 'bin', 'call_chain')),),
                      query(db, 'SELECT DISTINCT module FROM frames'))
        self.assertEqual(query(db, "SELECT count(*) FROM frames WHERE module NOT LIKE '/%'"), [(0,)])
        here, there = os.path.join(self.dir, 'here.db'), os.path.join(self.dir, 'there.db')
        shutil.copy(db, here)
        shutil.copy(db, there)
        a = self.symbolize(here, cwd=self.dir)
        b = self.symbolize(there, cwd=os.path.join(self.dir, 'elsewhere'))
        self.assertEqual((a.returncode, b.returncode), (0, 0), a.stderr + b.stderr)
        self.assertEqual(a.stdout.split(':', 1)[1], b.stdout.split(':', 1)[1])
        self.assertNotIn('no longer on disk', b.stdout)
        self.assertEqual(self.frame_lines(there), self.frame_lines(here))
        self.assertEqual(self.frame_lines(there)['inner_layer'], ('call_chain.c', source_line('cudaMalloc(&p, n)')))

    def test_relative_paths_in_debug_info_are_not_resolved_against_the_working_directory(self):
        # debug info built with -ffile-prefix-map=BUILD=. names ./../tests/progs/call_chain.c;
        # run from DIR/x, a decoy at DIR/tests/progs/call_chain.c was what realpath found
        p, db = self.trace([prog('call_chain_relpath')])
        self.assertEqual(p.returncode, 0, p.stderr)
        os.makedirs(os.path.join(self.dir, 'tests', 'progs'))
        os.mkdir(os.path.join(self.dir, 'x'))
        with open(os.path.join(self.dir, 'tests', 'progs', 'call_chain.c'), 'w') as f:
            f.write('/* not the program */\n')
        s = self.symbolize(db, cwd=os.path.join(self.dir, 'x'))
        self.assertEqual(s.returncode, 0, s.stderr)
        path, line = query(db, "SELECT file, line FROM frames WHERE function = 'inner_layer'")[0]
        self.assertEqual(line, source_line('cudaMalloc(&p, n)'))
        self.assertFalse(path.startswith('/'), path)   # as the debug info says it, not made absolute here
        self.assertTrue(path.endswith('tests/progs/call_chain.c'), path)

    def test_a_trace_still_being_written_loses_nothing_to_symbolize(self):
        # symbolize held SQLite's write lock across every addr2line run: the program, ending
        # meanwhile, could not write its last events (51 of 100 lost, the trace not closed)
        import time
        from gtlib import SHIM, base_env
        if not shutil.which('addr2line'):
            self.skipTest('no addr2line')
        slow = os.path.join(self.dir, 'slow_addr2line')
        with open(slow, 'w') as f:
            f.write('#!/bin/sh\nsleep 3\nexec addr2line "$@"\n')
        os.chmod(slow, 0o755)
        db = os.path.join(self.dir, 'live.db')
        prog_run = subprocess.Popen([prog('window_loop'), '1500'], env=dict(base_env(GPUTRACE_OUTPUT=db), LD_PRELOAD=SHIM),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not os.path.exists(db) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        s = self.symbolize('--addr2line', slow, db)
        out, err = prog_run.communicate(timeout=60)
        self.assertEqual(prog_run.returncode, 0, err)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertNotIn('locked', err)
        self.assertEqual(query(db, 'SELECT end_reason, events_dropped FROM processes'), [('exit', 0)])
        self.assertEqual(query(db, 'SELECT count(*) FROM drops WHERE count > 0'), [(0,)])

