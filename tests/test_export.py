"""gputrace export --format chrome: the output is Chrome trace-event JSON by
structure (required fields per event type, slices nested per track, numeric
counters, every pid and synthetic track named), and it holds what the
workloads in viz_traces.py planted: live-bytes counters, ranges, iterations,
kernels and copies per stream, allocation instants; limits cut it down as
documented; output files appear whole or not at all."""
import json
import os
import sqlite3
import stat
import subprocess

import analyzer_traces as T
import gtlib
import viz_traces as V

SYNTHETIC_TID = 1 << 30
METADATA = {'process_name', 'process_sort_index', 'process_labels', 'thread_name', 'thread_sort_index'}


def check_trace_events(tc, doc):
    """Asserts the trace-event format's structural rules on a parsed document."""
    tc.assertIsInstance(doc, dict)
    tc.assertIsInstance(doc['traceEvents'], list)
    named_pids, named_tids, used = set(), set(), set()
    open_be = {}
    slices = {}
    for e in doc['traceEvents']:
        ph = e['ph']
        tc.assertIn(ph, ('X', 'B', 'E', 'i', 'C', 'M'), e)
        tc.assertIsInstance(e['pid'], int, e)
        tc.assertIsInstance(e['tid'], int, e)
        tc.assertIsInstance(e['ts'], (int, float), e)
        tc.assertIsInstance(e['name'], str, e)
        if ph == 'M':
            tc.assertIn(e['name'], METADATA, e)
            tc.assertIsInstance(e['args'], dict, e)
            if e['name'] == 'process_name':
                named_pids.add(e['pid'])
            if e['name'] == 'thread_name':
                named_tids.add((e['pid'], e['tid']))
            continue
        used.add((e['pid'], e['tid']) if ph != 'C' else (e['pid'], None))
        if ph == 'X':
            tc.assertIsInstance(e['dur'], (int, float), e)
            tc.assertGreaterEqual(e['dur'], 0, e)
            slices.setdefault((e['pid'], e['tid']), []).append((e['ts'], e['ts'] + e['dur'], e['name']))
        elif ph == 'i':
            tc.assertIn(e.get('s', 't'), ('t', 'p', 'g'), e)
        elif ph == 'C':
            tc.assertTrue(e['args'], e)
            for v in e['args'].values():
                tc.assertIsInstance(v, (int, float), e)
        elif ph == 'B':
            open_be.setdefault((e['pid'], e['tid']), []).append(e)
        elif ph == 'E':
            tc.assertTrue(open_be.get((e['pid'], e['tid'])), 'E without B: %s' % e)
            open_be[(e['pid'], e['tid'])].pop()
    tc.assertFalse([k for k, v in open_be.items() if v], 'unbalanced B/E')
    # slices on one track nest: sorted by start (longest first), each ends within its parent
    for track, ss in slices.items():
        stack = []
        for s, e, name in sorted(ss, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1][1] <= s + 1e-9:
                stack.pop()
            if stack:
                tc.assertLessEqual(e, stack[-1][1] + 1e-9, 'slice %r overlaps %r on track %s' % (name, stack[-1][2], track))
            stack.append((s, e, name))
    for pid, tid in used:
        tc.assertIn(pid, named_pids, 'pid %d has no process_name' % pid)
        if tid is not None and tid >= SYNTHETIC_TID:
            tc.assertIn((pid, tid), named_tids, 'synthetic track %d has no thread_name' % tid)


def us(ns):
    return ns / 1000.0


class ExportTest(T.AnalyzerTest):

    def export(self, *args):
        out = os.path.join(self.dir, 'trace.json')
        self.ok('export', '--format', 'chrome', *args, '-o', out)
        with open(out, encoding='utf-8') as f:
            doc = json.load(f)
        check_trace_events(self, doc)
        return doc['traceEvents']

    def planted(self, **kw):
        return V.timeline(self.dir, **kw)

    @staticmethod
    def counters(events, name):
        return [(e['ts'], e['args']['bytes']) for e in events if e['ph'] == 'C' and e['name'] == name]

    @staticmethod
    def thread_names(events):
        return {e['tid']: e['args']['name'] for e in events if e['ph'] == 'M' and e['name'] == 'thread_name'}


class Content(ExportTest):

    def test_counters_follow_planted_live_bytes_of_device_and_pool(self):
        db, p = self.planted()
        ev = self.export(db)
        levels = p.levels()
        for memory in ('device', 'pool'):
            want = [(us(t), b) for t, b in levels[memory]]
            self.assertEqual(self.counters(ev, '%s bytes (GPU 0)' % memory), want, memory)
        self.assertEqual(max(b for _, b in levels['pool']), V.POOL_STATE + max(V.BATCHES) * V.PER_SAMPLE + V.WORKSPACE)

    def test_nvml_samples_become_used_and_process_counters(self):
        db, p = self.planted()
        ev = self.export(db)
        self.assertEqual(self.counters(ev, 'NVML used bytes (GPU 0)'), [(us(t), u) for t, u in p.samples])
        self.assertEqual(self.counters(ev, 'NVML process bytes (GPU 0)'), [(us(t), u - 500 * V.MiB) for t, u in p.samples])

    def test_every_call_is_an_instant_with_size_and_top_frame(self):
        db, p = self.planted()
        ev = self.export(db)
        inst = [e for e in ev if e['ph'] == 'i' and e['cat'] in ('alloc', 'free', 'failed')]
        self.assertEqual(len(inst), len(p.calls))
        self.assertEqual([(e['ts'], e['args']['bytes']) for e in inst], [(us(c[0]), c[2]) for c in p.calls])
        self.assertTrue(all(e['tid'] == 4242 for e in inst))
        failed = [e for e in inst if e['cat'] == 'failed']
        self.assertEqual(len(failed), 1)
        self.assertEqual(failed[0]['name'], 'cudaMalloc failed')
        self.assertEqual(failed[0]['args']['bytes'], V.FAILED_REQUEST)
        self.assertEqual(failed[0]['args']['error'], T.CUDA_ERROR_MEMORY_ALLOCATION)
        self.assertEqual(failed[0]['args']['frame'], 'resize_buffer (timeline)')
        # a function name with quotes, markup and non-ASCII survives escaping
        evil = [e for e in inst if e['args'].get('frame', '').startswith('evil')]
        self.assertEqual(evil[0]['args']['frame'], V.EVIL_FUNCTION + ' (timeline)')

    def test_iterations_and_nvtx_ranges_are_slices(self):
        db, p = self.planted()
        ev = self.export(db)
        its = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'iteration']
        self.assertEqual([(e['ts'], e['dur'], e['args']['batch_size']) for e in its],
                         [(us(s), us(e - s), bs) for s, e, bs in p.iterations])
        self.assertEqual(self.thread_names(ev)[its[0]['tid']], 'iterations')
        steps = [e for e in ev if e['ph'] == 'X' and e['name'].startswith('train_step')]
        self.assertEqual(len(steps), len(V.BATCHES))
        self.assertTrue(all(e['tid'] == 4242 for e in steps))
        self.assertEqual(len([e for e in ev if e['ph'] == 'X' and e['name'] == 'forward']), len(V.BATCHES))
        # never closed: lasts until the trace ends, and says so
        shut = [e for e in ev if e['ph'] == 'X' and e['name'] == 'shutdown'][0]
        self.assertEqual(shut['args'].get('closed'), False)
        self.assertAlmostEqual(shut['ts'] + shut['dur'], us(p.end_ns), places=3)
        marks = [e for e in ev if e['ph'] == 'i' and e['name'] == 'checkpoint <saved>']
        self.assertEqual(len(marks), 1)

    def test_killed_process_open_ranges_end_with_the_last_thing_recorded(self):
        db, p = self.planted()
        con = sqlite3.connect(db)
        con.execute('UPDATE processes SET end_ns = NULL, end_reason = NULL')
        con.commit()
        last = max(v for (v,) in con.execute(
            'SELECT max(t_ns) FROM events UNION ALL SELECT max(coalesce(end_ns, start_ns)) FROM ranges '
            'UNION ALL SELECT max(t_ns) FROM marks UNION ALL SELECT max(end_ns) FROM kernels '
            'UNION ALL SELECT max(end_ns) FROM memcpys UNION ALL SELECT max(end_ns) FROM memsets '
            'UNION ALL SELECT max(t_ns) FROM memory_samples UNION ALL SELECT max(t_ns) FROM iterations') if v is not None)
        con.close()
        self.assertGreaterEqual(last, p.calls[-1][0])
        ev = self.export(db)
        shut = [e for e in ev if e['ph'] == 'X' and e['name'] == 'shutdown'][0]
        self.assertAlmostEqual(shut['ts'] + shut['dur'], us(last), places=3)

    def test_overlapping_start_end_ranges_go_on_separate_lanes(self):
        db, p = self.planted()
        ev = self.export(db)
        loads = sorted((e for e in ev if e['ph'] == 'X' and e['name'].startswith('async load')), key=lambda e: e['ts'])
        self.assertEqual([(e['ts'], e['dur']) for e in loads], [(us(s), us(e - s)) for s, e in p.start_ranges])
        self.assertNotEqual(loads[0]['tid'], loads[1]['tid'])

    def test_kernels_copies_and_memsets_on_their_stream_tracks(self):
        db, p = self.planted()
        ev = self.export(db)
        names = self.thread_names(ev)
        kernels = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'kernel']
        copies = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'memcpy']
        sets = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'memset']
        self.assertEqual(len(kernels), len(p.kernels))
        self.assertEqual([(e['ts'], e['dur']) for e in kernels], [(us(k[0]), us(k[1] - k[0])) for k in p.kernels])
        self.assertEqual({names[e['tid']] for e in kernels}, {'GPU 0 stream %d' % V.KERNEL_STREAM})
        self.assertEqual([(e['ts'], e['args']['bytes'], e['name']) for e in copies],
                         [(us(s), b, 'memcpy ' + kind) for s, _, kind, b in p.copies])
        self.assertEqual(len(sets), V.N_MEMSETS)
        self.assertEqual({names[e['tid']] for e in copies + sets}, {'GPU 0 stream %d' % V.COPY_STREAM})

    def test_ranks_are_processes_side_by_side_on_wall_clock(self):
        base = 1700000000 * 10**9
        db0, _ = self.planted(name='r0.db', rank=0, pid=700, start_unix_ns=base)
        db1, p1 = self.planted(name='r1.db', rank=1, pid=700, start_unix_ns=base + 5 * 10**6)
        ev = self.export(db0, db1)
        procs = {e['pid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
        self.assertEqual(len(procs), 2)   # the same pid on two hosts still gives two processes
        self.assertEqual(sorted(n.split(' (')[0] for n in procs.values()), ['rank 0', 'rank 1'])
        pid1 = [pid for pid, n in procs.items() if n.startswith('rank 1')][0]
        first = min(e['ts'] for e in ev if e['pid'] == pid1 and e['ph'] == 'i' and e['cat'] == 'alloc')
        self.assertAlmostEqual(first, us(5 * 10**6 + p1.calls[0][0]), places=3)


class Limits(ExportTest):

    def test_time_window_keeps_only_events_inside_and_counters_start_right(self):
        db, p = self.planted()
        lo, hi = p.iterations[1][0], p.iterations[3][1]
        ev = self.export(db, '--from', '%dns' % lo, '--to', '%dus' % (hi // 1000))
        hi = hi // 1000 * 1000
        for e in ev:
            if e['ph'] != 'M':
                self.assertGreaterEqual(e['ts'], us(lo), e)
                self.assertLessEqual(e['ts'] + e.get('dur', 0), us(hi) + 1e-9, e)
        pool = self.counters(ev, 'pool bytes (GPU 0)')
        self.assertEqual(pool[0], (us(lo), p.live_at('pool', lo)))
        want = [(us(t), b) for t, b in p.levels()['pool'] if lo <= t <= hi]
        self.assertEqual(pool[1:], want)
        calls = [e for e in ev if e['ph'] == 'i' and e['cat'] in ('alloc', 'free')]
        self.assertEqual(len(calls), len([c for c in p.calls if lo <= c[0] <= hi]))

    def test_iteration_range_limits_to_those_iterations(self):
        db, p = self.planted()
        ev = self.export(db, '--iterations', '2:3')
        its = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'iteration']
        self.assertEqual([e['args']['index'] for e in its], [2, 3])
        lo, hi = p.iterations[2][0], p.iterations[3][1]
        self.assertTrue(all(us(lo) <= e['ts'] <= us(hi) for e in ev if e['ph'] != 'M'))
        steps = [e for e in ev if e['ph'] == 'X' and e['name'].startswith('train_step')]
        self.assertEqual([e['name'] for e in steps], ['train_step batch_size=%d' % V.BATCHES[k] for k in (2, 3)])

    def test_no_kernels_and_no_allocs_drop_only_those(self):
        db, p = self.planted()
        full = self.export(db)
        ev = self.export(db, '--no-kernels', '--no-allocs')
        self.assertFalse([e for e in ev if e.get('cat') in ('kernel', 'memcpy', 'memset', 'alloc', 'free', 'failed')])
        streams = {tid for tid, name in self.thread_names(full).items() if 'stream' in name}
        keep = lambda evs: [e for e in evs if e.get('cat') not in ('kernel', 'memcpy', 'memset', 'alloc', 'free', 'failed')
                            and not (e['ph'] == 'M' and e['tid'] in streams)]
        self.assertEqual(keep(full), keep(ev))
        self.assertEqual(len(full) - len(keep(full)), len(p.calls) + len(p.kernels) + V.N_COPIES + V.N_MEMSETS + 2 * 2)

    def test_unknown_iteration_range_is_exit_8(self):
        db, _ = self.planted()
        p = self.gputrace('export', db, '--iterations', '50:60', '-o', os.path.join(self.dir, 'x.json'))
        self.assertEqual(p.returncode, 8, p.stderr)
        self.assertIn('no such iterations', p.stderr)
        self.assertIn('give indexes it has: 0 to %d' % (len(p_its(db, self)) - 1), p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'x.json')))

    def test_nvml_counters_keep_their_value_at_the_windows_start(self):
        # the shim samples every 50 ms for 16 s, then at 32 s: a window from 20 s to 30 s
        # had no NVML track at all, though its value there is known
        S = 10 ** 9
        t = T.Trace(os.path.join(self.dir, 'nvml.db'), tick_ns=S)
        for k in range(59):
            t.alloc(1 << 20, ['step', 'main'])
        db = t.close()
        with T.sqlite3.connect(db) as con:
            for k, ts in enumerate([k * 50_000_000 for k in range(320)] + [32 * S]):
                con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) '
                            'VALUES (?,0,?,?,?)', (ts, (2 << 30) + k, 80 << 30, (1 << 30) + k))
        ev = self.export(db, '--from', '20s', '--to', '30s')
        used = [e for e in ev if e['ph'] == 'C' and e['name'] == 'NVML used bytes (GPU 0)']
        proc = [e for e in ev if e['ph'] == 'C' and e['name'] == 'NVML process bytes (GPU 0)']
        self.assertEqual([(e['ts'], e['args']['bytes']) for e in used], [(us(20 * S), (2 << 30) + 319)])
        self.assertEqual([e['args']['bytes'] for e in proc], [(1 << 30) + 319])
        # a window that holds a sample: the one before it at its start, then its own
        ev = self.export(db, '--from', '20s', '--to', '40s')
        used = [e for e in ev if e['ph'] == 'C' and e['name'] == 'NVML used bytes (GPU 0)']
        self.assertEqual([(e['ts'], e['args']['bytes']) for e in used],
                         [(us(20 * S), (2 << 30) + 319), (us(32 * S), (2 << 30) + 320)])

    def test_a_window_after_the_trace_says_so(self):
        db, _ = self.planted()
        out = os.path.join(self.dir, 'late.json')
        p = self.gputrace('export', db, '--from', '1000s', '-o', out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r'gputrace export: .*: --from 1000\.000 s is after the trace\'s end \([0-9.]+ [mu]?s\): '
                                   r'none of it is exported')
        with open(out) as f:
            self.assertFalse([e for e in json.load(f)['traceEvents'] if e['ph'] != 'M' and e['ph'] != 'C'])
        p = self.gputrace('export', db, '--from', '0s', '-o', out)   # a window inside it: nothing said
        self.assertNotIn('after the trace', p.stderr)

    def epochs_trace(self, order):
        t = T.Trace(os.path.join(self.dir, 'epochs.db'))
        for idx in order:
            t.iteration(idx)
            t.free(t.alloc(1 << 20, ['step', 'main']))
        return t.close()

    def test_an_iteration_marked_before_the_first_cuda_call_can_start_the_window(self):
        # the loop marks iteration 0 before its first cudaMalloc: it starts before time 0, and
        # --iterations 0:4 was refused ("no such iterations ... 0 to 4")
        p, db = self.trace_markers()
        self.assertLess(T.gtlib.query(db, 'SELECT min(t_ns) FROM iterations')[0][0], 0)
        ev = self.export(db, '--iterations', '0:1')
        its = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'iteration']
        self.assertEqual([e['args']['index'] for e in its], [0, 1])

    def trace_markers(self):
        db = os.path.join(self.dir, 'markers.db')
        p = T.gtlib.run([T.gtlib.prog('markers')], env=T.gtlib.base_env(GPUTRACE_OUTPUT=db), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, db

    def test_indexes_out_of_time_order_are_refused_not_an_empty_window(self):
        db = self.epochs_trace([10, 5, 3, 7, 9])
        p = self.gputrace('export', db, '--iterations', '5:10', '-o', os.path.join(self.dir, 'x.json'))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('iteration 10 ends before iteration 5 starts', p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'x.json')))

    def test_indexes_that_restart_each_epoch_give_the_first_a_and_the_first_b_after_it(self):
        db = self.epochs_trace([0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
        ev = self.export(db, '--iterations', '1:2')
        allocs = [e for e in ev if e['ph'] == 'i' and e['cat'] == 'alloc']
        self.assertEqual(len(allocs), 2)   # the first epoch's iterations 1 and 2, not a window across epochs
        starts = [r[0] for r in gtlib.query(db, 'SELECT t_ns FROM iterations ORDER BY t_ns')]
        self.assertTrue(all(e['ts'] < starts[3] / 1000 for e in allocs))


class Output(ExportTest):

    def test_a_fifo_is_written_to_not_replaced(self):
        # -o /dev/null, a FIFO, /dev/stdout: written as they are; a file put in
        # their place replaced /dev/null itself for root (a helper's probe)
        import threading
        db, _ = self.planted()
        fifo = os.path.join(self.dir, 'pipe')
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=lambda: got.append(open(fifo, 'rb').read()))
        reader.start()
        p = self.gputrace('export', db, '-o', fifo)
        if reader.is_alive():   # nothing opened the FIFO for writing: let the reader go
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        check_trace_events(self, json.loads(got[0]))
        self.assertEqual(sorted(os.listdir(self.dir)), ['pipe', 'timeline.db'])

    def test_a_replaced_output_keeps_its_mode(self):
        db, _ = self.planted()
        out = os.path.join(self.dir, 'private.json')
        with open(out, 'w') as f:
            f.write('{}')
        os.chmod(out, 0o600)
        self.ok('export', db, '-o', out)
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o600)

    def test_a_write_error_on_stdout_is_exit_10(self):
        db, _ = self.planted()
        for cmd in ('summary', 'top'):
            with open('/dev/full', 'w') as full:
                p = subprocess.run([gtlib.GPUTRACE, cmd, '--json', db], stdout=full, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 10, (cmd, p.stderr))
            self.assertIn('cannot write to standard output', p.stderr)

    def test_stdout_holds_the_same_document(self):
        db, _ = self.planted()
        out = self.ok('export', db).stdout
        check_trace_events(self, json.loads(out))

    def test_bad_trace_among_files_leaves_no_output_file(self):
        db, _ = self.planted()
        out = os.path.join(self.dir, 'out.json')
        p = self.gputrace('export', db, os.path.join(self.dir, 'missing.db'), '-o', out)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ['timeline.db'])

    def empty_trace(self, name='empty.db', pid=777):
        t = T.Trace(os.path.join(self.dir, name), pid=pid)
        t.close()
        return t.path

    def test_an_empty_trace_alone_prints_json_that_parses_and_names_it(self):
        empty = self.empty_trace()
        p = self.gputrace('export', empty)
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn('empty trace', p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc['traceEvents'], [])
        self.assertEqual([(m['file'], m['exit_status']) for m in doc['otherData']['skipped']], [(empty, 7)])
        self.assertIn('empty trace', doc['otherData']['skipped'][0]['error'])

    def test_an_empty_trace_among_others_is_left_out_and_the_others_written(self):
        db, _ = self.planted()
        empty = self.empty_trace()
        out = os.path.join(self.dir, 'out.json')
        p = self.gputrace('export', empty, db, '-o', out)
        self.assertEqual(p.returncode, 7, p.stderr)
        with open(out, encoding='utf-8') as f:
            doc = json.load(f)
        check_trace_events(self, doc)
        names = [e['args']['name'] for e in doc['traceEvents'] if e['ph'] == 'M' and e['name'] == 'process_name']
        self.assertEqual(len(names), 1, names)
        self.assertIn(os.path.basename(db), names[0])
        self.assertTrue(any(e['ph'] == 'i' for e in doc['traceEvents']))
        self.assertEqual([m['file'] for m in doc['otherData']['skipped']], [empty])
        self.assertNotIn('incomplete', doc['otherData'])

    def test_a_trace_that_fails_part_way_ends_the_json_closed_and_named(self):
        t = T.Trace(os.path.join(self.dir, 'cut.db'))
        ptr = t.alloc(1 << 20, ['main'])
        for i in range(300):
            t.kernel('kernel_%d' % i)
        t.free(ptr)
        t.close()
        con = sqlite3.connect(t.path)
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'kernels'").fetchone()[0]
        page = con.execute('PRAGMA page_size').fetchone()[0]
        con.close()
        with open(t.path, 'r+b') as f:   # the kernels table's root page made garbage: read only by export's later parts
            f.seek((root - 1) * page)
            f.write(b'\xff' * page)
        p = self.gputrace('export', t.path)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([(m['file'], m['exit_status']) for m in doc['otherData']['incomplete']], [(t.path, 4)])
        self.assertTrue(any(e['ph'] == 'M' and e['name'] == 'process_name' for e in doc['traceEvents']))
        out = os.path.join(self.dir, 'cut.json')
        p = self.gputrace('export', t.path, '-o', out)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_failure_inside_an_event_still_parses_and_names_the_traces_not_reached(self):
        db, _ = self.planted()
        con = sqlite3.connect(db)
        con.execute('ALTER TABLE frames RENAME TO frames_gone')   # read for an allocation's frame, mid-event
        con.commit()
        con.close()
        good = os.path.join(self.dir, 'good.db')
        t = T.Trace(good)
        t.free(t.alloc(1 << 20, ['main']))
        t.close()
        p = self.gputrace('export', db, good)
        self.assertEqual(p.returncode, 4, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([m['file'] for m in doc['otherData']['incomplete']], [db, good])
        self.assertIn('not read: the export stopped at the failure of %s' % db,
                      doc['otherData']['incomplete'][1]['error'])

    def test_export_to_a_full_stdout_is_exit_10_with_one_line(self):
        db, _ = self.planted()
        with open('/dev/full', 'w') as full:
            p = subprocess.run([gtlib.GPUTRACE, 'export', db], stdout=full, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 10, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_unwritable_output_is_exit_10_with_one_line(self):
        db, _ = self.planted()
        p = self.gputrace('export', db, '-o', os.path.join(self.dir, 'no', 'such', 'dir', 'x.json'))
        self.assertEqual(p.returncode, 10, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_existing_output_replaced_only_when_complete(self):
        db, _ = self.planted()
        out = os.path.join(self.dir, 'keep.json')
        with open(out, 'w') as f:
            f.write('old')
        p = self.gputrace('export', db, '--iterations', '50:60', '-o', out)
        self.assertEqual(p.returncode, 8)
        with open(out) as f:
            self.assertEqual(f.read(), 'old')
        self.ok('export', db, '-o', out)
        with open(out) as f:
            check_trace_events(self, json.load(f))

    def test_usage_errors(self):
        for args in (['--format', 'pprof'], ['--from', 'soon'], ['--iterations', '3:1'], ['--bogus'],
                     ['--from', '0x10'], ['--to', 'inf'], ['--iterations', '1:99999999999999999999']):
            p = self.gputrace('export', *args, 'x.db')
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_iterations_takes_a_range_never_a_mode(self):
        db = T.leak_retained(self.dir)
        for mode in ('auto', 'best', 'none', '3'):
            p = self.gputrace('export', db, '--iterations', mode)
            self.assertEqual(p.returncode, 2, (mode, p.stderr))
            self.assertEqual(p.stdout, '')
            self.assertEqual(p.stderr.strip(), "gputrace: export --iterations takes a range of iteration indices A:B "
                             "(e.g. 2:5), not \"%s\"; --iteration NAME picks the range that is one iteration; "
                             "see gputrace export --help" % mode)
        self.assertEqual(self.gputrace('peak', db, '--iterations', 'auto').returncode, 0)   # the reports' mode


class EndToEnd(ExportTest):
    """Traces written by the shim itself (CUDA and CUPTI stand-ins), exported."""

    def test_shim_trace_with_cupti_activity_exports_kernels_copy_and_memset(self):
        # tests/progs/cupti_activity.c plants 200 kernels "matmul" on stream 7, a 4096-byte
        # HtoD copy and a 2048-byte memset between two allocations
        fake_cupti = os.path.join(gtlib.BUILD, 'tests', 'fake_cupti', 'libcupti.so.13')
        p, db = self.trace([gtlib.prog('cupti_activity'), 'plant'], env_extra={'GPUTRACE_CUPTI_PATH': fake_cupti})
        self.assertEqual(p.returncode, 0, p.stderr)
        ev = self.export(db)
        kernels = [e for e in ev if e['ph'] == 'X' and e['cat'] == 'kernel']
        self.assertEqual(len(kernels), 200)
        self.assertEqual({e['name'] for e in kernels}, {'matmul(float*, float*, int)'})
        self.assertEqual({self.thread_names(ev)[e['tid']] for e in kernels}, {'GPU 0 stream 7'})
        self.assertEqual([(e['name'], e['args']['bytes']) for e in ev if e.get('cat') == 'memcpy'], [('memcpy HtoD', 4096)])
        self.assertEqual([e['args']['bytes'] for e in ev if e.get('cat') == 'memset'], [2048])

    def test_shim_trace_with_threads_keeps_ranges_nested_per_thread(self):
        p, db = self.trace([gtlib.prog('nvtx_ranges'), 'threads'])
        self.assertEqual(p.returncode, 0, p.stderr)
        ev = self.export(db)   # the structure check asserts nesting per thread
        con = sqlite3.connect(db)
        tids = {r[0] for r in con.execute("SELECT DISTINCT tid FROM ranges WHERE kind = 'push'")}
        con.close()
        self.assertGreater(len(tids), 1)
        self.assertTrue(tids <= {e['tid'] for e in ev if e['ph'] == 'X' and e['cat'] == 'nvtx'})

    def test_events_recorded_out_of_time_order_still_line_up_with_their_threads(self):
        # a writer may commit an event with an earlier timestamp after a later one
        db, p = self.planted()
        con = sqlite3.connect(db)
        ids = [r[0] for r in con.execute('SELECT id FROM events ORDER BY id')]
        t_mid = con.execute('SELECT t_ns FROM events WHERE id = ?', (ids[len(ids) // 2],)).fetchone()[0]
        con.execute('UPDATE events SET t_ns = ?, tid = ? WHERE id = ?', (t_mid + 1, V.SECOND_TID, ids[2]))
        con.commit()
        con.close()
        ev = self.export(db)
        inst = [e for e in ev if e['ph'] == 'i' and e['cat'] in ('alloc', 'free', 'failed')]
        self.assertEqual(len(inst), len(p.calls))
        moved = [e for e in inst if e['tid'] == V.SECOND_TID]
        self.assertEqual([e['ts'] for e in moved], [(t_mid + 1) / 1000.0])


class KilledTraceTest(T.AnalyzerTest):
    """A killed process's trace has no end time: it ends at the last thing
    recorded of any kind, not at the last allocation call (a job under a
    caching allocator makes almost none after its first steps), and a range
    that was closed keeps its own end (a helper's probe: every step read 0
    long in the export)."""

    def test_closed_ranges_keep_their_length_and_the_run_its_duration(self):
        t = T.Trace(os.path.join(self.dir, 'killed.db'))
        t.alloc(64 * T.MiB, ['warmup', 'main'])   # the last allocation call, at 1 us
        db = t.close(end_reason=None)
        con = sqlite3.connect(db)
        for k in range(5):
            s = 1000000 * (k + 1)
            con.execute("INSERT INTO ranges(source, kind, message, tid, start_ns, end_ns, depth)"
                        " VALUES ('nvtx', 'push', ?, 4242, ?, ?, 0)", ('step %d' % k, s, s + 900000))
        con.commit()
        con.close()
        doc = json.loads(self.ok('export', db).stdout)
        steps = sorted((e['ts'], e['dur']) for e in doc['traceEvents']
                       if e.get('ph') == 'X' and e.get('name', '').startswith('step '))
        self.assertEqual(steps, [(1000.0 * (k + 1), 900.0) for k in range(5)])
        self.assertEqual(self.json('summary', db)['duration_ns'], 5900000)


class DomainsTest(T.AnalyzerTest):
    def test_push_ranges_of_two_domains_ending_out_of_order_keep_their_lengths(self):
        # push/pop ranges nest within their own domain only: a library's range
        # that the program's range ends inside was cut to the program's end
        t = T.Trace(os.path.join(self.dir, 'domains.db'))
        t.free(t.alloc(T.MiB, ['f', 'main']))
        db = t.close()
        con = sqlite3.connect(db)
        con.execute("INSERT INTO ranges(source, kind, domain, message, tid, start_ns, end_ns, depth)"
                    " VALUES ('nvtx', 'push', NULL, 'app_step', 4242, 1000, 10000, 0)")
        con.execute("INSERT INTO ranges(source, kind, domain, message, tid, start_ns, end_ns, depth)"
                    " VALUES ('nvtx', 'push', 'NCCL', 'allreduce', 4242, 5000, 15000, 0)")
        con.execute("INSERT INTO ranges(source, kind, domain, message, tid, start_ns, end_ns, depth)"
                    " VALUES ('nvtx', 'push', 'NCCL', 'inside', 4242, 2000, 3000, 0)")
        con.execute('UPDATE processes SET end_ns = 20000')
        con.commit()
        con.close()
        doc = json.loads(self.ok('export', db).stdout)
        got = {e['name']: (e['ts'], e['dur']) for e in doc['traceEvents'] if e.get('ph') == 'X'
               and e['name'] in ('app_step', 'allreduce', 'inside')}
        self.assertEqual(got, {'app_step': (1.0, 9.0), 'allreduce': (5.0, 10.0), 'inside': (2.0, 1.0)})


def p_its(db, test):
    """The trace's iterations as export's window reads them (summary's count)."""
    return range(test.json('summary', db)['iterations'])


class OutputDirectory(ExportTest):
    def test_a_directory_given_to_o_says_to_give_a_file_name(self):
        # "cannot open it for writing (Is a directory)", no remedy (a first-hour probe)
        db, _ = self.planted()
        for cmd in ('export', 'report'):
            p = self.gputrace(cmd, db, '-o', self.dir)
            self.assertEqual((p.returncode, p.stdout), (10, ''), p.stderr)
            self.assertEqual(p.stderr, 'gputrace: %s: is a directory; give a file name (-o %s/NAME)\n' % (self.dir, self.dir))
