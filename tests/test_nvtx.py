"""NVTX ranges and marks, the marker API (C and Python ctypes) and CUPTI
activity, end to end under the shim: tests/progs/{nvtx_ranges,markers,
cupti_activity}.c plant ranges around allocations of known sizes, and activity
through the CUPTI stand-in (tests/fake_cupti). Without a GPU driver the real
CUPTI is unavailable: the shim must say so once and trace allocations as ever."""
import json
import os
import sqlite3
import shutil
import subprocess
import sys
import unittest

from gtlib import BUILD, GPUTRACE, SHIM, TraceTest, base_env, prog, query, run

FAKE_CUPTI = os.path.join(BUILD, 'tests', 'fake_cupti', 'libcupti.so.13')
FAKE_CUDART = os.path.join(BUILD, 'tests', 'fake_cuda', 'libcudart.so.13')


def sizes_in(db, start, end, tid=None):
    """Sizes of the allocations recorded within [start, end] (on tid)."""
    sql = 'SELECT size FROM events_v WHERE op = ? AND t_ns BETWEEN ? AND ?'
    args = ['alloc', start, end]
    if tid is not None:
        sql += ' AND tid = ?'
        args.append(tid)
    return sorted(r[0] for r in query(db, sql, args))


class NvtxRanges(TraceTest):
    def ranges(self, db):
        return {r[0]: r for r in query(db, 'SELECT message, depth, parent_id, domain, kind, tid, start_ns, end_ns,'
                                           ' batch_size, id, source FROM ranges')}

    def test_push_pop_nesting_times_and_marks(self):
        p, db = self.trace([prog('nvtx_ranges'), 'basic'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('depths 0 1 2 popped 2 1 0', p.stdout)  # what nvtxRangePush/Pop returned
        r = self.ranges(db)
        self.assertEqual(sorted(r), ['async', 'inner bs=8', 'load batch_size=32', 'outer', 'setup'])
        self.assertEqual({m: r[m][10] for m in r}, {m: 'nvtx' for m in r})
        # nesting: setup > outer > inner on the main thread
        self.assertEqual((r['setup'][1], r['setup'][2]), (0, None))
        self.assertEqual((r['outer'][1], r['outer'][2]), (1, r['setup'][9]))
        self.assertEqual((r['inner bs=8'][1], r['inner bs=8'][2]), (2, r['outer'][9]))
        # times: each range holds exactly the allocations planted inside it
        self.assertEqual(sizes_in(db, r['inner bs=8'][6], r['inner bs=8'][7]), [3000])
        self.assertEqual(sizes_in(db, r['outer'][6], r['outer'][7]), [2000, 3000])
        self.assertEqual(sizes_in(db, r['load batch_size=32'][6], r['load batch_size=32'][7]), [4000])
        self.assertEqual(sizes_in(db, r['async'][6], r['async'][7]), [5000])
        # "setup" was pushed before the first CUDA call (time 0) and is still kept
        self.assertLess(r['setup'][6], 0)
        self.assertEqual(sizes_in(db, r['setup'][6], r['setup'][7]), [1000, 2000, 3000, 4000, 5000])
        # batch sizes from the messages
        self.assertEqual(r['inner bs=8'][8], 8)
        self.assertEqual(r['load batch_size=32'][8], 32)
        self.assertIsNone(r['outer'][8])
        # domain, and a start/end range ended on another thread
        self.assertEqual(r['load batch_size=32'][3], 'io')
        self.assertIsNone(r['outer'][3])
        self.assertEqual((r['async'][4], r['outer'][4]), ('start', 'push'))
        marks = query(db, 'SELECT message, domain, source, t_ns FROM marks ORDER BY t_ns')
        self.assertEqual([m[:3] for m in marks], [('checkpoint', None, 'nvtx'), ('io-mark', 'io', 'nvtx')])
        self.assertTrue(r['inner bs=8'][6] < marks[0][3] < r['inner bs=8'][7])
        self.assertIntegrity(db)

    def test_ranges_past_the_stack_are_counted_and_pops_stay_with_their_domain(self):
        # 127 ranges of the program, a library's in its own domain (the 128th
        # the shim keeps on a thread), 2 more of the program's past it: those
        # are counted as drops, and each pop closes its own domain's range (a
        # helper's probe: the library's pop took one of the uncounted ones,
        # lib-op never closed and every later pop closed the wrong range)
        p, db = self.trace([prog('nvtx_ranges'), 'deep'])
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.ranges(db)
        self.assertEqual(len([m for m in r if m.startswith('lvl')]), 127)
        self.assertNotIn('lvl127', r)
        self.assertEqual(sizes_in(db, r['lib-op'][6], r['lib-op'][7]), [2000])
        self.assertEqual(query(db, 'SELECT count(*) FROM ranges WHERE end_ns IS NULL'), [(0,)])
        self.assertEqual(sizes_in(db, r['lvl126'][6], r['lvl126'][7]), [2000])
        self.assertEqual(sizes_in(db, r['lvl125'][6], r['lvl125'][7]), [2000, 3000])
        self.assertEqual(query(db, "SELECT count FROM drops WHERE reason = 'range_too_deep'"), [(2,)])

    def test_messages_are_capped_and_valid_utf8(self):
        # 200 ranges of 1 MB names held 200 MB of the program's memory and
        # wrote them all; a Latin-1 name made Python's sqlite3 fail on the table
        p, db = self.trace([prog('nvtx_ranges'), 'odd'])
        self.assertEqual(p.returncode, 0, p.stderr)
        con = sqlite3.connect(db)   # the default text factory: fails on bytes that are not UTF-8
        msgs = [m for (m,) in con.execute('SELECT message FROM ranges ORDER BY start_ns')]
        con.close()
        self.assertEqual(len(msgs), 204)
        self.assertIn('b' * 1024, msgs)   # a message of exactly 1 KiB is kept whole
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("SELECT domain FROM ranges WHERE message = 'in it'").fetchall(), [('caf\ufffd',)])
        con.close()
        self.assertTrue(all(m.startswith('big aaa') and m.endswith('...') and len(m.encode()) <= 1024
                            for m in msgs[:200]), (len(msgs[0]), msgs[0][-10:]))
        self.assertEqual(msgs[200], 'caf\ufffd \ufffd end')
        self.assertEqual(msgs[201], 'w\ufffd\ufffd!')
        self.assertEqual(query(db, "SELECT count FROM drops WHERE reason = 'message_cut'"), [(200,)])
        self.assertLess(os.path.getsize(db), 4 << 20)

    def test_ranges_opened_before_the_trace_are_kept_up_to_a_bound_and_the_rest_counted(self):
        # a process that never calls CUDA pays for what it keeps pending: 1024 at most
        p, db = self.trace([prog('nvtx_ranges'), 'pending'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, "SELECT count(*), min(message), count(end_ns) FROM ranges WHERE message LIKE 'early %'"),
                         [(1024, 'early 0', 1024)])
        self.assertEqual(query(db, "SELECT count FROM drops WHERE reason = 'range_not_kept'"), [(2000 - 1024,)])

    def test_ranges_lost_in_a_full_queue_are_counted_apart_from_events(self):
        # a range push, pop or mark the full queue dropped was counted as a
        # dropped event (queue_full, events_dropped): 1,920,720 "events" for
        # 768,294 allocation calls lost (a helper's probe)
        p, db = self.trace([prog('nvtx_flood'), '20000', '4'],
                           env_extra={'GPUTRACE_QUEUE_EVENTS': '1024', 'GPUTRACE_QUEUE_WAIT_MS': '0'})
        self.assertEqual(p.returncode, 0, p.stderr)
        calls, records = int(p.stdout.split()[1]), int(p.stdout.split()[3])
        rows = query(db, 'SELECT count(*) FROM events')[0][0]
        drops = dict(query(db, 'SELECT reason, count FROM drops'))
        dropped = query(db, 'SELECT events_dropped FROM processes')[0][0]
        self.assertEqual((rows + dropped, drops.get('queue_full', 0) + drops.get('queue_held', 0)), (calls, dropped))
        kept = query(db, 'SELECT count(*) + count(end_ns) FROM ranges')[0][0] + query(db, 'SELECT count(*) FROM marks')[0][0]
        # a range whose pop was lost may be closed by another rule, so only: lost ones are counted apart
        lost = drops.get('range_queue_full', 0) + drops.get('range_queue_held', 0)
        self.assertEqual(kept < records, lost > 0, (kept, records, drops))
        self.assertGreater(dropped + lost, 0, 'the queue never overflowed: no test')

    def test_ranges_nest_per_thread(self):
        p, db = self.trace([prog('nvtx_ranges'), 'threads'])
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.ranges(db)
        self.assertEqual(len(r), 8)
        for i in range(4):
            outer, inner = r['t%d-outer' % i], r['t%d-inner' % i]
            self.assertEqual((outer[1], outer[2]), (0, None))       # other threads' ranges do not nest it
            self.assertEqual((inner[1], inner[2]), (1, outer[9]))
            self.assertEqual(inner[5], outer[5])                    # same thread
            # on its own thread, the outer range holds exactly its two planted allocations
            self.assertEqual(sizes_in(db, outer[6], outer[7], tid=outer[5]), [(i + 1) * 100, (i + 1) * 100 + 1])
            self.assertEqual(sizes_in(db, inner[6], inner[7], tid=inner[5]), [(i + 1) * 100 + 1])
        self.assertEqual(len({r['t%d-outer' % i][5] for i in range(4)}), 4)

    def test_nvtx_without_cuda_writes_no_file(self):
        p, db = self.trace([prog('nvtx_ranges'), 'nocuda'])
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'))
        self.assertEqual(os.listdir(self.dir), [])

    def test_another_nvtx_tool_keeps_the_injection_and_it_is_noted(self):
        p, db = self.trace([prog('nvtx_ranges'), 'basic'], env_extra={'NVTX_INJECTION64_PATH': '/nonexistent/libtool.so'})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM ranges'), [(0,)])
        notes = query(db, "SELECT message FROM notes WHERE component = 'nvtx'")
        self.assertEqual(len(notes), 1)
        self.assertIn('/nonexistent/libtool.so', notes[0][0])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(10,)])

    def test_child_with_injection_path_but_no_preload_declines_and_writes_nothing(self):
        # children inherit NVTX_INJECTION64_PATH; one run without LD_PRELOAD must stay untraced
        env = base_env(NVTX_INJECTION64_PATH=SHIM, GPUTRACE_OUTPUT=os.path.join(self.dir, 'x.db'))
        p = run([prog('nvtx_ranges'), 'basic'], preload=False, env=env, cwd=self.dir)
        self.assertEqual((p.returncode, p.stderr), (0, ''))
        # declined: NVTX's no-ops answer (push/pop return -2 without a tool), not our handlers
        self.assertIn('depths -2 -2 -2 popped -2 -2 -2', p.stdout)
        self.assertEqual(os.listdir(self.dir), [])

    def test_gputrace_nvtx_0_turns_ranges_off(self):
        p, db = self.trace([prog('nvtx_ranges'), 'basic'], env_extra={'GPUTRACE_NVTX': 0})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM ranges'), [(0,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(10,)])

    def test_the_words_a_flag_takes_turn_it_off_and_another_value_keeps_the_default(self):
        # GPUTRACE_NVTX=false was ignored with a warning and ranges stayed on (a helper's probe)
        for off in ('false', 'OFF', 'no'):
            p, db = self.trace([prog('nvtx_ranges'), 'basic'], name='%s.db' % off, env_extra={'GPUTRACE_NVTX': off})
            self.assertEqual((p.returncode, p.stderr), (0, ''), off)
            self.assertEqual(query(db, 'SELECT count(*) FROM ranges'), [(0,)], off)
        p, db = self.trace([prog('nvtx_ranges'), 'basic'], name='maybe.db', env_extra={'GPUTRACE_NVTX': 'maybe'})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('gputrace: ignoring GPUTRACE_NVTX=maybe (expected 1, true, yes, on or 0, false, no, off): on,'
                      ' the default, is used\n', p.stderr)
        self.assertGreater(query(db, 'SELECT count(*) FROM ranges')[0][0], 0)


class MarkerApi(TraceTest):
    def check_markers(self, db):
        its = query(db, 'SELECT idx, batch_size, t_ns FROM iterations ORDER BY t_ns')
        self.assertEqual([i[:2] for i in its], [(i, 8 * (i + 1)) for i in range(5)])
        ends = [i[2] for i in its[1:]] + [10 ** 18]
        for i, (start, end) in enumerate(zip([i[2] for i in its], ends)):
            self.assertEqual(sizes_in(db, start, end), [10 * (i + 1), 1000 * (i + 1)])
        r = query(db, "SELECT message, depth, source, start_ns, end_ns FROM ranges ORDER BY start_ns")
        self.assertEqual([x[:3] for x in r], [('fwd', 0, 'marker')] * 5)
        for i, x in enumerate(r):
            self.assertEqual(sizes_in(db, x[3], x[4]), [10 * (i + 1)])
        self.assertEqual(query(db, 'SELECT message, source FROM marks'), [('end', 'marker')] * 5)

    def test_marker_api_from_c(self):
        p, db = self.trace([prog('markers')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, 'recording 0 1 depths 0 pops 0 extra_pop -1\n')
        self.check_markers(db)
        # the first iteration began before the first CUDA call: kept, before time 0
        self.assertLess(query(db, 'SELECT min(t_ns) FROM iterations')[0][0], 0)

    def test_readmes_python_snippet_takes_the_same_arguments_traced_or_not(self):
        # the snippet bound the C function itself when preloaded: iteration(1) raised
        # TypeError only under the shim, while its no-op fallback took it
        readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'README.md')).read()
        snippet = readme.split('```python\nimport ctypes\n_gt = ctypes.CDLL(None)', 1)[1].split('```', 1)[0]
        script = os.path.join(self.dir, 'snippet.py')
        with open(script, 'w') as f:
            f.write('import ctypes\n_gt = ctypes.CDLL(None)' + snippet.split('\nfor step,', 1)[0] +
                    '\ncuda = ctypes.CDLL("libcudart.so.13")\np = ctypes.c_void_p()\n'
                    'cuda.cudaMalloc(ctypes.byref(p), 4096)\n'
                    'iteration(1)\niteration(2, 8)\nmark("checkpoint")\nprint("ok")\n')
        for preload in (False, True):
            p = run([sys.executable, script], preload=preload, env=base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 's.db')),
                    cwd=self.dir)
            self.assertEqual((p.returncode, p.stdout), (0, 'ok\n'), (preload, p.stderr))
        self.assertEqual(query(os.path.join(self.dir, 's.db'), 'SELECT idx, batch_size FROM iterations ORDER BY t_ns'),
                         [(1, None), (2, 8)])

    def test_marker_api_without_shim_is_a_noop(self):
        p = run([prog('markers')], preload=False, cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout), (0, 'recording 0 0 depths -5 pops -5 extra_pop -1\n'))
        self.assertEqual(os.listdir(self.dir), [])

    PY = r'''
import ctypes
lib = ctypes.CDLL(None)                      # the process's global symbols
cuda = ctypes.CDLL("libcudart.so.13")
if hasattr(lib, "gputrace_iteration"):
    lib.gputrace_iteration.argtypes = [ctypes.c_long, ctypes.c_long]
    lib.gputrace_mark.argtypes = [ctypes.c_char_p]
    lib.gputrace_range_push.argtypes = [ctypes.c_char_p]
    iteration, mark = lib.gputrace_iteration, lambda m: lib.gputrace_mark(m.encode())
    push, pop = lambda m: lib.gputrace_range_push(m.encode()), lib.gputrace_range_pop
    print("preloaded")
else:
    iteration = mark = push = lambda *a: None
    pop = lambda: None
    print("not preloaded")
malloc = lib.cudaMalloc if hasattr(lib, "gputrace_iteration") else cuda.cudaMalloc  # the shim's, when there
free = lib.cudaFree if hasattr(lib, "gputrace_iteration") else cuda.cudaFree
for i in range(5):
    iteration(i, 8 * (i + 1))
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    assert malloc(ctypes.byref(a), ctypes.c_size_t(1000 * (i + 1))) == 0
    push("fwd")
    assert malloc(ctypes.byref(b), ctypes.c_size_t(10 * (i + 1))) == 0
    pop()
    mark("end")
    free(b); free(a)
'''

    def test_marker_api_from_python_ctypes(self):
        p, db = self.trace([sys.executable, '-c', self.PY])
        self.assertEqual((p.returncode, p.stdout), (0, 'preloaded\n'), p.stderr)
        self.check_markers(db)
        bare = run([sys.executable, '-c', self.PY], preload=False, cwd=self.dir)
        self.assertEqual((bare.returncode, bare.stdout), (0, 'not preloaded\n'), bare.stderr)

    def test_analyzer_takes_iterations_and_batch_sizes_from_marker_api(self):
        p, db = self.trace([prog('markers')])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = subprocess.run([GPUTRACE, 'peak', '--json', db], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        doc = json.loads(out.stdout)
        doc = doc[0] if isinstance(doc, list) else doc
        self.assertEqual([i['batch_size'] for i in doc['iterations']], [8, 16, 24, 32, 40])
        self.assertEqual([i['peak_bytes'] for i in doc['iterations']], [1010 * (i + 1) for i in range(5)])


class CuptiUnavailable(TraceTest):
    """No GPU driver here: the real CUPTI (if the toolkit has one) cannot start.
    These tests search for libcupti as a user's run does (GPUTRACE_CUPTI_PATH
    empty), not for the stand-in every other test gets."""

    def run_each_api(self, **env):
        env.setdefault('GPUTRACE_CUPTI_PATH', '')
        db = os.path.join(self.dir, 'u%d.db' % len(os.listdir(self.dir)))
        p = run([prog('demo_loop')], env=base_env(GPUTRACE_OUTPUT=db, **env), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, db

    def test_unavailable_said_once_and_allocation_trace_complete(self):
        p, db = self.run_each_api()
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace: cupti')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r'^gputrace: cupti unavailable: .*allocation tracing goes on')
        notes = query(db, "SELECT message FROM notes WHERE component = 'cupti'")
        self.assertEqual(len(notes), 1)
        self.assertTrue(notes[0][0].startswith('unavailable: '), notes)
        self.assertEqual(query(db, 'SELECT count(*) FROM kernels'), [(0,)])
        # the allocation trace is the one recorded with CUPTI off
        _, off = self.run_each_api(GPUTRACE_CUPTI=0)
        seq = 'SELECT api, size, result FROM events ORDER BY id'
        self.assertEqual(query(db, seq), query(off, seq))
        self.assertGreater(len(query(db, seq)), 100)
        self.assertEqual(query(db, 'SELECT events_dropped FROM processes'), [(0,)])

    def test_missing_library_is_named(self):
        p, db = self.run_each_api(GPUTRACE_CUPTI_PATH='/nonexistent/libcupti.so.13', GPUTRACE_QUIET=1)
        self.assertEqual([l for l in p.stderr.splitlines() if 'cupti' in l], [])  # quiet
        notes = query(db, "SELECT message FROM notes WHERE component = 'cupti'")
        self.assertEqual(len(notes), 1)
        self.assertRegex(notes[0][0], r'^unavailable: GPUTRACE_CUPTI_PATH=/nonexistent/libcupti.so.13 cannot be loaded')

    def test_cupti_0_is_silent(self):
        p, db = self.run_each_api(GPUTRACE_CUPTI=0)
        self.assertEqual([l for l in p.stderr.splitlines() if 'cupti' in l.lower()], [])
        self.assertEqual(query(db, "SELECT message FROM notes WHERE component = 'cupti'"),
                         [('off: GPUTRACE_CUPTI=0',)])

    def test_nvml_samples_without_nvml_are_noted_once(self):
        if os.path.exists('/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1'):
            self.skipTest('this machine has NVML')
        p, db = self.run_each_api(GPUTRACE_SAMPLE_MS=5, GPUTRACE_CUPTI=0)
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace: nvml')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r'^gputrace: nvml unavailable: libnvidia-ml.so.1 cannot be loaded')
        self.assertEqual(query(db, 'SELECT count(*) FROM memory_samples'), [(0,)])
        self.assertEqual(len(query(db, "SELECT * FROM notes WHERE component = 'nvml'")), 1)

    def test_too_old_cupti_is_refused(self):
        p, db = self.run_each_api(GPUTRACE_CUPTI_PATH=FAKE_CUPTI, FAKE_CUPTI_VERSION=120000)
        notes = query(db, "SELECT message FROM notes WHERE component = 'cupti'")
        self.assertRegex(notes[0][0], r'^unavailable: .* has CUPTI API version 120000')

    def test_cupti_held_by_another_tool(self):
        p, db = self.run_each_api(GPUTRACE_CUPTI_PATH=FAKE_CUPTI, FAKE_CUPTI_BUSY=1)
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace: cupti')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn('held by another tool', lines[0])
        self.assertGreater(query(db, 'SELECT count(*) FROM events')[0][0], 100)


class CuptiActivity(TraceTest):
    """Activity planted through the CUPTI stand-in."""

    def plant(self, mode='plant', **env):
        env.setdefault('GPUTRACE_CUPTI_PATH', FAKE_CUPTI)
        env.setdefault('GPUTRACE_CUPTI_KINDS', 'kernel,memcpy,memset,memory,pool')  # every kind, the driver's too
        p, db = self.trace([prog('cupti_activity'), mode], env_extra=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        last = p.stdout.splitlines()[-1].split()
        self.assertEqual(last[:2], ['emitted', '204'])
        return p, db, int(last[3]), int(last[4])

    def plant_kinds(self, kinds):
        db = os.path.join(self.dir, 'kinds-%d.db' % len(os.listdir(self.dir)))
        p = run([prog('cupti_activity'), 'plant'], cwd=self.dir,
                env=base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI_PATH=FAKE_CUPTI, GPUTRACE_CUPTI_KINDS=kinds))
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, db, None, None

    def test_cupti_kinds_records_only_the_kinds_named(self):
        p, db, _, _ = self.plant_kinds('kernel')
        self.assertEqual(query(db, 'SELECT count(*) FROM kernels'), [(200,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM memcpys'), [(0,)])
        note = query(db, "SELECT message FROM notes WHERE component = 'cupti'")[0][0]
        self.assertRegex(note, r'^on: .*: kernels$')
        p, db, _, _ = self.plant_kinds('memcpy,bogus')
        self.assertEqual(query(db, 'SELECT count(*) FROM kernels'), [(0,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM memcpys'), [(1,)])
        self.assertIn("GPUTRACE_CUPTI_KINDS: ignoring 'bogus'", p.stderr)

    def test_activity_drained_from_many_buffers_on_the_events_clock(self):
        p, db, t0, t1 = self.plant()
        start_mono = query(db, 'SELECT start_mono_ns FROM processes')[0][0]
        k = query(db, 'SELECT start_ns, end_ns, device, stream_id, correlation_id, grid_x, block_x, shared_bytes,'
                      ' registers, s.text FROM kernels JOIN strings s ON s.id = name_id ORDER BY correlation_id')
        self.assertEqual(len(k), 200)  # 200 kernels over buffers of 64 records: 4 buffers drained
        self.assertEqual([r[4] for r in k], list(range(1, 201)))
        self.assertEqual({r[2:4] + r[5:] for r in k}, {(0, 7, 4, 128, 1280, 32, 'matmul(float*, float*, int)')})
        self.assertEqual({r[1] - r[0] for r in k}, {1000})
        # one clock: CUPTI stamped them with ours, inside the span the program measured,
        # and between the two allocations made before and after
        t_alloc = [r[0] for r in query(db, "SELECT t_ns FROM events_v WHERE op = 'alloc' ORDER BY id")]
        for r in k:
            self.assertTrue(t0 <= r[0] + start_mono <= t1, (t0, r[0] + start_mono, t1))
            self.assertTrue(t_alloc[0] < r[0] < t_alloc[1])
        self.assertEqual(query(db, 'SELECT kind, bytes, correlation_id FROM memcpys'), [('HtoD', 4096, 1001)])
        self.assertEqual(query(db, 'SELECT value, bytes, end_ns - start_ns FROM memsets'), [(7, 2048, 300)])
        self.assertEqual(query(db, 'SELECT op, memory_kind, bytes FROM driver_memory'), [('alloc', 'device', 1 << 20)])
        self.assertEqual(query(db, 'SELECT op, pool_type, size FROM memory_pools'), [('created', 'local', 32 << 20)])
        notes = query(db, "SELECT message FROM notes WHERE component = 'cupti'")
        self.assertEqual(len(notes), 1)
        self.assertTrue(notes[0][0].startswith('on: '), notes)
        self.assertIntegrity(db)

    def test_found_next_to_the_loaded_libcudart(self):
        d = os.path.join(self.dir, 'cuda')
        os.mkdir(d)
        shutil.copy(FAKE_CUDART, d)
        shutil.copy(FAKE_CUPTI, d)
        env = base_env()
        p, db, _, _ = self.plant(GPUTRACE_CUPTI_PATH='', LD_LIBRARY_PATH=d + ':' + env['LD_LIBRARY_PATH'])
        note = query(db, "SELECT message FROM notes WHERE component = 'cupti'")[0][0]
        self.assertTrue(note.startswith('on: ' + os.path.join(d, 'libcupti.so.13')), note)
        self.assertEqual(query(db, 'SELECT count(*) FROM kernels'), [(200,)])

    def test_taken_over_by_another_client_is_noted_and_nothing_after_it_recorded(self):
        p, db, _, _ = self.plant('takeover')
        self.assertIn('program got 5', p.stdout)  # the program's own buffers got its kernels
        self.assertEqual(query(db, 'SELECT count(*) FROM kernels'), [(200,)])
        self.assertEqual(query(db, "SELECT count(*) FROM strings WHERE text LIKE 'after%'"), [(0,)])
        notes = [m for (m,) in query(db, "SELECT message FROM notes WHERE component = 'cupti' ORDER BY id")]
        self.assertEqual([n.split(':')[0] for n in notes], ['on', 'taken over'])


if __name__ == '__main__':
    unittest.main()
