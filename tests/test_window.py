"""The flight recorder (GPUTRACE_WINDOW_S): a long job's trace keeps its last
window in full and a summary per interval of the whole run. Rows older than
the window are deleted by the writer, except the alloc rows of allocations
still live then (leaks and live-at-exit stay right); the summaries still
cover the whole run; and every report says the trace is windowed and shows
the whole run's peak beside the window's (tests/progs/window_loop.c)."""
import json
import os
import sqlite3
import unittest

import analyzer_traces as T
from gtlib import GPUTRACE, SANITIZER, SHIM, TraceTest, base_env, prog, query, run

MiB, GiB = 1 << 20, 1 << 30


class FlightRecorder(TraceTest):
    def job(self, window='1', run_ms='2500'):
        env = {'GPUTRACE_WINDOW_S': window} if window else {}
        p, db = self.trace([prog('window_loop'), run_ms], env_extra=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return db, int(p.stdout.split()[-1])

    def test_rows_older_than_the_window_are_gone_but_live_allocations_stay(self):
        db, n = self.job()
        window_ns, complete_from = query(db, 'SELECT window_ns, complete_from_ns FROM flight_recorder')[0]
        end = query(db, 'SELECT end_ns FROM processes')[0][0]
        self.assertEqual(window_ns, 10 ** 9)
        # the window holds: complete from at most a window, an interval between checkpoints and one
        # between prunes (250 ms each, later on a loaded machine) before the end
        self.assertGreater(complete_from, 0)
        self.assertLessEqual(end - complete_from, window_ns + 700 * 10 ** 6)
        self.assertGreaterEqual(end - complete_from, window_ns)
        # before it (less a margin for rows still queued at the checkpoint) only the allocations live
        # then: the 1 MiB kept to the end and the 2 MiB held until the end; the spike, its free
        # and the failed call are gone
        old = query(db, "SELECT op, size, result FROM events_v WHERE t_ns < ? ORDER BY t_ns",
                    (complete_from - 50 * 10 ** 6,))
        self.assertEqual(old, [('alloc', MiB, 0), ('alloc', 2 * MiB, 0)])
        # the window itself is complete: every temporary of its last second, each with its free
        recent = query(db, "SELECT count(*) FROM allocations WHERE size = 4096 AND alloc_ns >= ?", (complete_from,))[0][0]
        self.assertGreater(recent, 100)
        self.assertEqual(query(db, "SELECT count(*) FROM allocations WHERE size = 4096 AND free_ns IS NULL"), [(0,)])
        # the 2 MiB allocation pairs with its free at the end; the 1 MiB one is live at exit
        self.assertEqual(query(db, 'SELECT size FROM live_at_exit'), [(MiB,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM allocations WHERE size = ? AND free_ns > ?',
                               (2 * MiB, complete_from)), [(1,)])
        self.assertEqual(query(db, 'PRAGMA integrity_check'), [('ok',)])

    def test_summaries_cover_the_whole_run(self):
        db, n = self.job()
        rows = query(db, "SELECT min(start_ns), max(end_ns), sum(allocs), sum(frees), sum(failed), max(peak_bytes)"
                         " FROM interval_summaries WHERE memory = 'device' AND device = 0")[0]
        last_event = query(db, 'SELECT max(t_ns) FROM events')[0][0]
        self.assertEqual(rows[0], 0)
        self.assertGreaterEqual(rows[1], last_event)
        # every call of the run, the deleted ones too: kept, spike, held and n temporaries
        self.assertEqual(rows[2:5], (n + 3, n + 2, 1))
        self.assertEqual(rows[5], MiB + GiB)  # the spike, long gone from the events
        # intervals follow each other without gaps
        spans = query(db, "SELECT start_ns, end_ns FROM interval_summaries WHERE memory = 'device' ORDER BY start_ns")
        for a, b in zip(spans, spans[1:]):
            self.assertEqual(a[1], b[0])

    def test_reports_say_the_trace_is_windowed_and_give_the_whole_run_peak(self):
        db, n = self.job()
        complete_from = query(db, 'SELECT complete_from_ns FROM flight_recorder')[0][0]
        out = run([GPUTRACE, 'summary', '--json', db], preload=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        d = json.loads(out.stdout)
        fr = d['flight_recorder']
        self.assertEqual((fr['window_ns'], fr['complete_from_ns']), (10 ** 9, complete_from))
        self.assertEqual([(p['memory'], p['device'], p['peak_bytes']) for p in fr['whole_run_peaks']],
                         [('device', 0, GiB + MiB)])
        dev = [p for p in d['peaks'] if p['memory'] == 'device'][0]
        self.assertEqual((dev['peak_bytes'], dev['whole_run_peak_bytes']), (3 * MiB + 4096, GiB + MiB))
        for cmd in ('summary', 'leaks', 'growth', 'peak', 'top', 'oom'):
            text = run([GPUTRACE, cmd, db], preload=False)
            self.assertIn('flight recorder (GPUTRACE_WINDOW_S): only the last 1.000 s are kept in full', text.stdout,
                          cmd)
            self.assertIn('whole run (interval summaries): peak of device memory on device 0 1.00 GiB', text.stdout)
            js = run([GPUTRACE, cmd, '--json', db], preload=False)
            if js.returncode == 0:
                self.assertEqual(json.loads(js.stdout)['flight_recorder']['complete_from_ns'], complete_from, cmd)
        self.assertIn('whole run: 1.00 GiB', run([GPUTRACE, 'summary', db], preload=False).stdout)

    def test_oom_says_failures_before_the_window_that_the_summaries_counted(self):
        # the 1 TiB request failed at the start, before the window: "no CUDA
        # allocation call failed while traced" was said of it
        db, n = self.job()
        text = run([GPUTRACE, 'oom', db], preload=False)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn('1 allocation call failed before it', text.stdout)
        self.assertNotIn('no CUDA allocation call failed', text.stdout)
        d = json.loads(run([GPUTRACE, 'oom', '--json', db], preload=False).stdout)
        self.assertEqual((d['failures'], d['flight_recorder']['failed_calls_before']), ([], 1))

    def test_a_day_long_runs_window_is_read_though_its_ids_span_billions(self):
        # the rows live at the cut keep the ids of the run's start, the window's are the
        # run's latest: the analyzer sized its array by the id span (exit 70 from 1 billion
        # ids, "too many events" past 4 billion) for a file of a few thousand rows
        db, n = self.job()
        rows = query(db, 'SELECT count(*) FROM events')[0][0]
        before = json.loads(run([GPUTRACE, 'summary', '--json', db], preload=False, check=True).stdout)
        first_recent = query(db, 'SELECT min(id) FROM events WHERE t_ns >= (SELECT complete_from_ns FROM '
                                 'flight_recorder)')[0][0]
        con = sqlite3.connect(db)
        for table in ('graph_calls',):
            if con.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]:
                con.execute('UPDATE %s SET event_id = event_id + 5000000000 WHERE event_id >= ?' % table, (first_recent,))
        con.execute('UPDATE events SET id = id + 5000000000 WHERE id >= ?', (first_recent,))
        con.commit()
        con.close()
        p = run([GPUTRACE, 'summary', '--json', db], preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        after = json.loads(p.stdout)
        self.assertEqual(after['events']['total'], rows)
        self.assertEqual((after['peaks'], after['iterations'], after['leak_bytes']),
                         (before['peaks'], before['iterations'], before['leak_bytes']))

    def test_export_marks_where_the_window_begins_with_the_whole_runs_peak(self):
        # the exported device counter showed a flat 3 MiB over a span where 1 GiB was taken
        db, n = self.job()
        out = os.path.join(self.dir, 'w.json')
        run([GPUTRACE, 'export', db, '-o', out], preload=False, check=True)
        with open(out) as f:
            marks = [e for e in json.load(f)['traceEvents'] if e.get('cat') == 'flight_recorder']
        complete_from = query(db, 'SELECT complete_from_ns FROM flight_recorder')[0][0]
        self.assertEqual(len(marks), 1)
        self.assertEqual(marks[0]['ts'], complete_from / 1000)
        self.assertRegex(marks[0]['name'], r"^flight recorder: complete from here; the whole run's peak: device memory "
                                           r"on GPU 0: 1\.00 GiB")

    def test_without_a_window_nothing_is_deleted_or_summarized(self):
        db, n = self.job(window=None, run_ms='600')
        self.assertEqual(query(db, 'SELECT count(*) FROM flight_recorder'), [(0,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM interval_summaries'), [(0,)])
        # 4 calls at the start, the failed one, the temporaries and their frees, the held one's free
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(2 * n + 6,)])
        out = run([GPUTRACE, 'summary', '--json', db], preload=False)
        self.assertNotIn('flight_recorder', json.loads(out.stdout))
        self.assertNotIn('flight recorder', run([GPUTRACE, 'summary', db], preload=False).stdout)


    @unittest.skipIf(SANITIZER, "fail_malloc hands out glibc's memory, which a sanitizer's allocator would not know")
    def test_checkpoint_without_memory_is_skipped_and_counted_never_pruning_live_rows(self):
        # 1234 more allocations live from the start: at each checkpoint the list of live
        # rows is 1236 or 1237 (a temporary in flight) rows of 8 bytes, with room for the
        # rows of 64 frees written while their call still runs, and that malloc fails
        extra, taken_rows = 1234, 64
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'trace.db'), GPUTRACE_QUIET=1, GPUTRACE_WINDOW_S=1,
                       FAIL_MALLOC_SIZES='%d,%d' % (8 * (extra + 2 + taken_rows), 8 * (extra + 3 + taken_rows)))
        env['LD_PRELOAD'] = SHIM + ':' + prog('libfail_malloc.so')
        p = run([prog('window_loop'), '1500', str(extra)], preload=False, env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        db = os.path.join(self.dir, 'trace.db')
        skipped = query(db, "SELECT count FROM drops WHERE reason = 'window_checkpoint_skipped'")
        self.assertTrue(skipped and skipped[0][0] >= 2, skipped)   # 1.5 s: several intervals of 250 ms
        # no checkpoint, no prune: every allocation live at exit keeps its row, and the
        # summaries still cover the run
        self.assertEqual(query(db, 'SELECT count(*), sum(size) FROM live_at_exit'), [(extra + 1, extra * 8192 + MiB)])
        self.assertEqual(query(db, 'SELECT complete_from_ns FROM flight_recorder'), [(0,)])
        self.assertGreater(query(db, 'SELECT count(DISTINCT start_ns) FROM interval_summaries')[0][0], 2)
        self.assertIntegrity(db)


class LedgerOfAWindow(T.AnalyzerTest):
    """The ledger measures the CUDA context against the first NVML sample: in
    a flight recorder's trace that moment may be before the window, where the
    allocations freed since are gone, so the context is not known."""

    def job(self, complete_from):
        t = T.Trace(os.path.join(self.dir, 'win.db'))
        t.alloc(2 * GiB, ['forward', 'main'])
        first_t = t.now()
        t.alloc(64 * MiB, ['upload', 'main'])
        last_t = t.now() + 10
        db = t.close()
        con = sqlite3.connect(db)
        for ts, proc in ((first_t, 2 * GiB + 500 * MiB), (last_t, 2 * GiB + 564 * MiB)):
            con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) VALUES (?, 0, ?, ?, ?)', (ts, proc, 80 * GiB, proc))
        con.execute('INSERT INTO flight_recorder VALUES (?, ?, ?)', (10 ** 9, 25 * 10 ** 7, complete_from(first_t)))
        con.commit()
        con.close()
        return db

    def test_context_not_measured_when_the_first_sample_is_before_the_window(self):
        led = self.json('summary', self.job(lambda first: first + 1))['ledger'][0]
        self.assertIsNone(led['context_bytes'])
        x = {i['instant']: i for i in led['instants']}['exit']
        self.assertIsNone(x['unaccounted_bytes'])
        self.assertIn('the CUDA context, measured against the first NVML sample, is not known',
                      self.ok('summary', self.job(lambda first: first + 1)).stdout)

    def test_context_measured_when_the_window_holds_the_first_sample(self):
        led = self.json('summary', self.job(lambda first: first - 1))['ledger'][0]
        self.assertEqual(led['context_bytes'], 500 * MiB)


class ShorterThanItsWindow(TraceTest):
    """A run shorter than its window lost nothing, yet every report said "only the
    last 60 s are kept in full ... not the whole run" and called its peak the
    window's: it says the whole run is here."""

    def test_nothing_cut_reads_as_the_whole_run(self):
        p, db = self.trace([prog('demo_loop')], env_extra=dict(GPUTRACE_WINDOW_S=60))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT complete_from_ns FROM flight_recorder'), [(0,)])
        text = run([GPUTRACE, 'summary', db], preload=False).stdout
        self.assertIn('flight recorder (GPUTRACE_WINDOW_S): the last 60.000 s are kept in full, and the run was '
                      'shorter: all of it is here', text)
        self.assertNotIn('not the whole run', text)
        self.assertNotIn('in the window', text)
        self.assertNotIn('whole run:', text)
        fr = json.loads(run([GPUTRACE, 'summary', '--json', db], preload=False).stdout)['flight_recorder']
        self.assertEqual(fr['covers'], 'nothing was cut: the report\'s figures cover the whole run')
