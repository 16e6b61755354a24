"""Capture core: each runtime API lands in the trace with the pointer, size,
device, stream and result the program saw; frees carry the size they free;
failed allocations are recorded; stacks name the calling functions in order."""
import json
import os
import re
import sys
import unittest

from gtlib import BUILD, GPUTRACE, SANITIZER, SHIM, TraceTest, base_env, prog, query, run


class CaptureTest(TraceTest):
    def test_each_runtime_api_recorded_with_program_pointer_and_size(self):
        p, db = self.trace([prog('each_api')])
        self.assertEqual(p.returncode, 0, p.stderr)
        seen = {}
        stream = None
        for line in p.stdout.splitlines():
            name, ptr, size = (line.split() + [''])[:3]
            if name == 'stream':
                stream = int(ptr, 16)
            else:
                seen[name] = (int(ptr, 16), int(size))
        rows = query(db, "SELECT api, ptr, size, result, device, stream FROM events_v WHERE op = 'alloc' ORDER BY id")
        self.assertEqual([r[0] for r in rows], list(seen))
        for api, ptr, size, result, device, strm in rows:
            self.assertEqual((ptr, size), seen[api], api)
            self.assertEqual(result, 0)
            self.assertEqual(device, -1 if api in ('cudaMallocHost', 'cudaHostAlloc') else 0, api)
            if 'Async' in api:
                self.assertEqual(strm, stream, api)
            else:
                self.assertIsNone(strm, api)
        self.assertIntegrity(db)

    def test_a_runtime_bundled_under_another_name_and_loaded_locally_is_called_and_traced(self):
        # a wheel repaired by auditwheel bundles libcudart-<hash>.so, which its
        # extension (loaded RTLD_LOCAL, as Python loads them) calls: the shim's
        # export takes the call and RTLD_NEXT cannot see the runtime; every
        # hooked call failed with error 302 (a helper's probe)
        ext = os.path.join(BUILD, 'tests', 'progs', 'libbundled_ext.so')
        plain = run([prog('local_loader'), ext], preload=False, env=base_env())
        p, db = self.trace([prog('local_loader'), ext])
        self.assertEqual((p.returncode, p.stdout), (plain.returncode, plain.stdout))
        self.assertEqual(plain.returncode, 0, plain.stdout)
        self.assertEqual(query(db, 'SELECT api, size, result FROM events_v ORDER BY id'),
                         [('cudaMalloc', 4096, 0), ('cudaFree', 4096, 0), ('cudaMallocHost', 8192, 0),
                          ('cudaFreeHost', 8192, 0)])

    def test_another_preloaded_interposer_of_the_runtime_still_runs_in_either_order(self):
        # a first attempt at routing each call to the caller's own runtime
        # took the caller's dependencies' definition: another preload's
        # wrapper was skipped, or, preloaded first, looped back into the shim
        # and crashed (a review); the shim must pass calls to the next
        # definition as the loader would
        # (the call comes from a library linked to the runtime, as a framework's does)
        other = os.path.join(BUILD, 'tests', 'progs', 'libother_interposer.so')
        plain = run([prog('stripped_caller')], preload=False, env=base_env(LD_PRELOAD=other))
        self.assertEqual((plain.returncode, plain.stdout), (0, 'other interposer: cudaMalloc 4096\nallocated\n'))
        for order in ((SHIM, other), (other, SHIM)):
            db = os.path.join(self.dir, 'o%d.db' % (order[0] == SHIM))
            p = run([prog('stripped_caller')], preload=False, env=base_env(LD_PRELOAD=':'.join(order), GPUTRACE_OUTPUT=db))
            self.assertEqual((p.returncode, p.stdout), (plain.returncode, plain.stdout), (order, p.stderr))
            self.assertEqual(query(db, "SELECT count(*) FROM events_v WHERE api = 'cudaMalloc'"), [(1,)])

    def test_a_cuda_11_programs_graph_instantiation_gets_all_five_arguments(self):
        # CUDA 11's cudaGraphInstantiate took (exec, graph, errorNode, log,
        # logSize), CUDA 12's the same name (exec, graph, flags): the hook
        # passed on three, and the runtime wrote its log through garbage
        # registers (a crash here)
        plain = run([prog('graph_instantiate_11')], preload=False, env=base_env())
        self.assertEqual((plain.returncode, plain.stdout), (0, "rc 1 node NULL log 'graph is NULL (CUDA 11's log)'\n"))
        p = run([prog('graph_instantiate_11')], env=base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 't.db')))
        self.assertEqual((p.returncode, p.stdout), (plain.returncode, plain.stdout), p.stderr)

    @unittest.skipIf(SANITIZER == 'thread', 'the thread stage runs no Python program')
    def test_a_failed_request_past_64_bits_is_recorded_at_its_saturated_size(self):
        # width x height wrapped (2^33 x 2^31 recorded 0 bytes) and SIZE_MAX was
        # recorded as -1: an out-of-memory report then said 0 bytes were asked for
        script = ('import ctypes\n'
                  'rt = ctypes.CDLL("libcudart.so.13")\n'
                  'p, pitch = ctypes.c_void_p(), ctypes.c_size_t()\n'
                  'rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))\n'
                  'print(rt.cudaMallocPitch(ctypes.byref(p), ctypes.byref(pitch), ctypes.c_size_t(1 << 33), '
                  'ctypes.c_size_t(1 << 31)) != 0)\n'
                  'print(rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(2 ** 64 - 1)) != 0)\n')
        p, db = self.trace([sys.executable, '-c', script])
        self.assertEqual((p.returncode, p.stdout), (0, 'True\nTrue\n'), p.stderr)
        self.assertEqual(query(db, 'SELECT api, size FROM events_v WHERE result != 0 ORDER BY id'),
                         [('cudaMallocPitch', 2 ** 63 - 1), ('cudaMalloc', 2 ** 63 - 1)])
        # and oom says the size is at least that, not exactly it (a helper's probe: "8192 PiB", exact)
        o = run([GPUTRACE, 'oom', '--json', db])
        self.assertEqual(o.returncode, 0, o.stderr)
        reqs = json.loads(o.stdout)['failures']
        self.assertEqual([(r['requested_bytes'], r['requested_is_lower_bound']) for r in reqs], [(2 ** 63 - 1, True)] * 2)
        text = run([GPUTRACE, 'oom', db]).stdout
        self.assertIn('cudaMalloc of at least 8192.00 PiB failed', text)
        self.assertIn('the size asked for is 2^63 - 1 bytes or more, past what the trace stores', text)

    @unittest.skipIf(SANITIZER == 'thread', 'a Python the ThreadSanitizer runtime did not build crashes with it '
                                            'preloaded (the thread stage runs no Python program)')
    def test_an_allocation_records_the_device_current_on_its_thread(self):
        # the device is asked of CUDA after the call (cudaGetDevice, or the driver's current context):
        # device 0, then device 1 after cudaSetDevice(1), through the runtime and the driver alike
        code = (
            'import ctypes\n'
            'rt = ctypes.CDLL("libcudart.so.13"); drv = ctypes.CDLL("libcuda.so.1")\n'
            'p = ctypes.c_void_p(); d = ctypes.c_uint64()\n'
            'assert rt.cudaMalloc(ctypes.byref(p), 4096) == 0\n'
            'assert rt.cudaSetDevice(1) == 0\n'
            'assert rt.cudaMalloc(ctypes.byref(p), 8192) == 0\n'
            'assert rt.cudaMallocAsync(ctypes.byref(p), 12288, None) == 0\n'
            'assert drv.cuMemAlloc_v2(ctypes.byref(d), 16384) == 0\n'
            'assert rt.cudaSetDevice(0) == 0\n'
            'assert drv.cuMemAlloc_v2(ctypes.byref(d), 20480) == 0\n')
        p, db = self.trace([sys.executable, '-c', code], env_extra={'FAKE_CUDA_DEVICE_COUNT': '2'})
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = query(db, "SELECT api, size, device FROM events_v WHERE op = 'alloc' ORDER BY id")
        self.assertEqual(rows, [('cudaMalloc', 4096, 0), ('cudaMalloc', 8192, 1), ('cudaMallocAsync', 12288, 1),
                                ('cuMemAlloc_v2', 16384, 1), ('cuMemAlloc_v2', 20480, 0)])

    @unittest.skipIf(SANITIZER == 'thread', 'a Python the ThreadSanitizer runtime did not build crashes with it '
                                            'preloaded (the thread stage runs no Python program)')
    def test_a_stream_ordered_allocation_records_the_device_of_its_stream_or_pool(self):
        # On two H200s, cudaMallocAsync on device 1's stream and cudaMallocFromPoolAsync from device 1's
        # pool, with device 0 current, both put the memory on device 1 (tests/gpu/check_device_lookup.py);
        # the stand-in places them so too. Device 0's own stream and the default streams (0, legacy,
        # per-thread) stay on device 0; through the driver, device 1's pool and device 1's stream give 1.
        code = (
            'import ctypes\n'
            'rt = ctypes.CDLL("libcudart.so.13"); drv = ctypes.CDLL("libcuda.so.1")\n'
            'p = ctypes.c_void_p(); d = ctypes.c_uint64()\n'
            's1 = ctypes.c_void_p(); s0 = ctypes.c_void_p(); pool1 = ctypes.c_void_p(); dpool1 = ctypes.c_void_p()\n'
            'assert rt.cudaSetDevice(1) == 0\n'
            'assert rt.cudaStreamCreate(ctypes.byref(s1)) == 0\n'
            'assert rt.cudaDeviceGetDefaultMemPool(ctypes.byref(pool1), 1) == 0\n'
            'assert rt.cudaSetDevice(0) == 0\n'
            'assert rt.cudaStreamCreate(ctypes.byref(s0)) == 0\n'
            'assert rt.cudaMallocAsync(ctypes.byref(p), 4096, s1) == 0\n'
            'assert rt.cudaMallocFromPoolAsync(ctypes.byref(p), 8192, pool1, s0) == 0\n'
            'assert rt.cudaMallocAsync(ctypes.byref(p), 12288, s0) == 0\n'
            'assert rt.cudaMallocAsync(ctypes.byref(p), 16384, None) == 0\n'
            'assert drv.cuDeviceGetDefaultMemPool(ctypes.byref(dpool1), 1) == 0\n'
            'assert drv.cuMemAllocFromPoolAsync(ctypes.byref(d), 20480, dpool1, None) == 0\n'
            'assert drv.cuMemAllocAsync(ctypes.byref(d), 24576, None) == 0\n'
            'assert drv.cuMemAllocAsync(ctypes.byref(d), 28672, s1) == 0\n'
            'assert rt.cudaMallocAsync(ctypes.byref(p), 32768, ctypes.c_void_p(1)) == 0\n'
            'assert rt.cudaMallocAsync(ctypes.byref(p), 36864, ctypes.c_void_p(2)) == 0\n'
            'assert rt.cudaMallocAsync_ptsz(ctypes.byref(p), 40960, s1) == 0\n')
        p, db = self.trace([sys.executable, '-c', code], env_extra={'FAKE_CUDA_DEVICE_COUNT': '2'})
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = query(db, "SELECT api, size, device FROM events_v WHERE op = 'alloc' ORDER BY id")
        self.assertEqual(rows, [('cudaMallocAsync', 4096, 1), ('cudaMallocFromPoolAsync', 8192, 1),
                                ('cudaMallocAsync', 12288, 0), ('cudaMallocAsync', 16384, 0),
                                ('cuMemAllocFromPoolAsync', 20480, 1), ('cuMemAllocAsync', 24576, 0),
                                ('cuMemAllocAsync', 28672, 1), ('cudaMallocAsync', 32768, 0),
                                ('cudaMallocAsync', 36864, 0), ('cudaMallocAsync', 40960, 1)])

    def test_free_events_carry_the_size_they_free(self):
        p, db = self.trace([prog('each_api')])
        self.assertEqual(p.returncode, 0, p.stderr)
        allocs = dict(query(db, "SELECT ptr, size FROM events_v WHERE op = 'alloc'"))
        frees = query(db, "SELECT api, ptr, size FROM events_v WHERE op = 'free' ORDER BY id")
        self.assertEqual(len(frees), 8)
        for api, ptr, size in frees:
            self.assertEqual(size, allocs[ptr], api)
        self.assertEqual(query(db, 'SELECT count(*) FROM live_at_exit'), [(0,)])
        names = [r[0] for r in frees]
        self.assertEqual(names, ['cudaFree', 'cudaFreeAsync', 'cudaFreeAsync', 'cudaFree',
                                 'cudaFreeHost', 'cudaFreeHost', 'cudaFree', 'cudaFree'])

    def test_failed_allocation_recorded_with_its_error(self):
        chunk = 1 << 20
        p, db = self.trace([prog('oom'), str(chunk)], env_extra={'FAKE_CUDA_DEVICE_BYTES': 10 * chunk + 5})
        self.assertEqual(p.returncode, 0, p.stderr)
        words = p.stdout.split()
        self.assertEqual(words[0], 'failed')
        result, live = int(words[3]), int(words[5])
        self.assertEqual(result, 2)  # cudaErrorMemoryAllocation
        fails = query(db, 'SELECT api, size, ptr, result FROM failures ORDER BY id')
        # the failed cudaMallocPitch is recorded with what it asked for (width x
        # height), not with the pitch variable the failed call never set
        self.assertEqual(fails, [('cudaMalloc', chunk, None, 2), ('cudaMallocPitch', 2 * chunk, None, 2)])
        self.assertEqual(query(db, "SELECT sum(size) FROM events_v WHERE op='alloc' AND result=0"), [(live,)])
        self.assertEqual(query(db, 'SELECT peak_device_bytes FROM processes'), [(live,)])

    def test_stack_of_known_call_chain_names_functions_in_order(self):
        p, db = self.trace([prog('call_chain')])
        self.assertEqual(p.returncode, 0, p.stderr)
        funcs = [r[0] for r in query(db, """
            SELECT f.function FROM events e JOIN stack_frames sf ON sf.stack_id = e.stack_id
            JOIN frames f ON f.id = sf.frame_id WHERE e.api = 1 ORDER BY sf.level""")]
        self.assertEqual(funcs[:4], ['inner_layer', 'middle_layer', 'outer_layer', 'main'])
        module = query(db, "SELECT module FROM frames WHERE function = 'inner_layer'")[0][0]
        self.assertEqual(os.path.basename(module), 'call_chain')

    def test_paths_at_the_same_stack_depth_keep_their_own_frames(self):
        # path_a (4096 B) and path_b (8192 B) reach cudaMalloc at the same stack
        # depth from one call site, in a pseudo-random order, some behind a
        # recursion; the per-thread stack memo must never hand one the other's
        # frames, nor drop the recursion's
        p, db = self.trace([prog('same_depth_paths'), '2000'])
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = query(db, """
            SELECT e.id, e.size, group_concat(f.function, ' ') FROM events e
            JOIN stack_frames sf ON sf.stack_id = e.stack_id JOIN frames f ON f.id = sf.frame_id
            WHERE e.api = 1 GROUP BY e.id ORDER BY e.id""")
        self.assertEqual(len(rows), 2000)
        nests = {}
        for _, size, funcs in rows:
            names = funcs.split()
            own, other = ('path_a', 'path_b') if size == 4096 else ('path_b', 'path_a')
            self.assertEqual(names[:2], ['alloc_here', own], funcs)
            self.assertNotIn(other, names)
            nests[names.count('nest')] = nests.get(names.count('nest'), 0) + 1
        self.assertEqual(sorted(nests), [1, 2, 3, 4])   # the recursion's depths, each seen
        self.assertGreater(min(nests.values()), 50)

    def test_unwind_check_finds_every_memo_stack_equal_to_libunwinds(self):
        # GPUTRACE_UNWIND_CHECK=1 unwinds every stack the memo gives a second time with
        # libunwind and counts differences (with the memo's check against the stack
        # switched off, 1486 of 2996 differed on this program)
        p, db = self.trace([prog('same_depth_paths'), '2000'], name='check.db',
                           env_extra={'GPUTRACE_UNWIND_CHECK': '1'})
        self.assertEqual(p.returncode, 0, p.stderr)
        notes = [m for (m,) in query(db, "SELECT message FROM notes WHERE component = 'stacks'")]
        m = [re.match(r'unwind check: (\d+) stacks taken from the memo, (\d+) differed', n) for n in notes]
        m = [x for x in m if x]
        self.assertEqual(len(m), 1, notes)
        self.assertGreater(int(m[0].group(1)), 1900)
        self.assertEqual(int(m[0].group(2)), 0)

    @unittest.skipIf(SANITIZER == 'thread', "ThreadSanitizer delivers a signal only at a call it intercepts, "
                     "and the program's loop makes none: the handler never runs")
    def test_memo_never_takes_a_path_through_a_signal_frame_for_one_seen_before(self):
        # a timer's handler allocates wherever it interrupts a loop; the slot above a
        # signal frame holds what the interrupted code last popped (without such paths
        # marked, 427 to 631 of 1499 memo stacks differed here)
        for k in range(3):
            p, db = self.trace([prog('signal_alloc'), '1500'], name='sig-%d.db' % k,
                               env_extra={'GPUTRACE_UNWIND_CHECK': '1'})
            self.assertEqual(p.returncode, 0, p.stderr)
            notes = [m for (m,) in query(db, "SELECT message FROM notes WHERE component = 'stacks'")]
            m = [x for x in (re.match(r'unwind check: (\d+) stacks taken from the memo, (\d+) differed', n)
                             for n in notes) if x]
            self.assertEqual(len(m), 1, notes)
            self.assertEqual(int(m[0].group(2)), 0, notes)
            self.assertEqual(query(db, "SELECT count(*) FROM events WHERE api = 1 AND size = 4096"), [(1500,)])

    def test_static_function_in_stripped_library_is_not_named_after_its_neighbour(self):
        # libstripped.so keeps only dynamic symbols (as cuBLAS does); the static
        # hidden_helper sits right after exported_before_helper. Its frame must
        # keep module + offset, not take the neighbour's name.
        p, db = self.trace([prog('stripped_caller')])
        self.assertEqual(p.returncode, 0, p.stderr)
        frames = query(db, """
            SELECT f.function, f.module FROM events e JOIN stack_frames sf ON sf.stack_id = e.stack_id
            JOIN frames f ON f.id = sf.frame_id WHERE e.api = 1 ORDER BY sf.level""")
        self.assertEqual([os.path.basename(m) for _, m in frames[:3]],
                         ['libstripped.so', 'libstripped.so', 'stripped_caller'])
        self.assertEqual([f for f, _ in frames[:3]], [None, 'exported_entry', 'main'])
        self.assertNotIn('exported_before_helper', [f for f, _ in frames])

    def test_stack_depth_limits_frames_and_zero_turns_stacks_off(self):
        p, db = self.trace([prog('call_chain')], env_extra={'GPUTRACE_STACK_DEPTH': 2})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT max(depth) FROM stacks'), [(2,)])
        self.assertEqual(query(db, 'SELECT stack_depth FROM processes'), [(2,)])
        p, db = self.trace([prog('call_chain')], name='nostack.db', env_extra={'GPUTRACE_STACK_DEPTH': 0})
        self.assertEqual(query(db, 'SELECT count(*), count(stack_id) FROM events'), [(2, 0)])
        self.assertEqual(query(db, 'SELECT count(*) FROM stacks'), [(0,)])

    def test_identical_stacks_are_stored_once(self):
        p, db = self.trace([prog('threads'), '1', '500'], env_extra={'GPUTRACE_FREE_STACKS': 1})
        self.assertEqual(p.returncode, 0, p.stderr)
        # one call site for cudaMalloc and one for cudaFree
        self.assertEqual(query(db, 'SELECT count(DISTINCT stack_id), count(stack_id), count(*) FROM events'),
                         [(2, 1000, 1000)])
        self.assertEqual(query(db, 'SELECT count(*) FROM stacks'), [(2,)])

    @unittest.skipIf(SANITIZER, "fail_malloc hands out glibc's memory, which a sanitizer's allocator would not know")
    def test_a_stack_whose_record_could_not_be_made_is_recorded_at_its_next_sighting(self):
        # the first malloc of the stack's record fails: that event has no stack and a drop
        # says so; the next call from the same site records the stack, and no event names
        # a stack the trace does not hold
        bench = [os.path.join(BUILD, 'tests', 'bench', 'bench_calls'), '50', '40']   # 50 pairs, 40 frames deep
        p, db = self.trace(bench, name='plain.db')
        self.assertEqual(p.returncode, 0, p.stderr)
        (depth,), = query(db, 'SELECT DISTINCT s.depth FROM events e JOIN stacks s ON s.id = e.stack_id '
                              "JOIN apis a ON a.id = e.api WHERE a.name = 'cudaMallocAsync'")
        record_bytes = 24 + 8 * depth   # struct gt_stack_rec and its frames (a size nothing else asks for)
        db = os.path.join(self.dir, 'failing.db')
        env = base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1, FAIL_MALLOC_SIZES=str(record_bytes), FAIL_MALLOC_TIMES=1)
        env['LD_PRELOAD'] = SHIM + ':' + prog('libfail_malloc.so')
        p = run(bench, preload=False, env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, "SELECT count FROM drops WHERE reason = 'stack_lost'"), [(1,)])
        stacks = [s for (s,) in query(db, "SELECT e.stack_id FROM events e JOIN apis a ON a.id = e.api "
                                          "WHERE a.name = 'cudaMallocAsync' ORDER BY e.id")]
        self.assertEqual(len(stacks), 50)
        self.assertIsNone(stacks[0])
        self.assertEqual(len(set(stacks[1:])), 1)
        self.assertIsNotNone(stacks[1])
        self.assertEqual(query(db, 'SELECT count(*) FROM events e WHERE e.stack_id IS NOT NULL AND '
                                   'NOT EXISTS (SELECT 1 FROM stacks s WHERE s.id = e.stack_id)'), [(0,)])

    def test_a_free_has_a_stack_only_when_it_fails_or_free_stacks_is_on(self):
        # pairing.c: successful frees, and five that fail (a double
        # cuMemRelease; cudaFree twice, of an interior pointer, of an unknown
        # address, of pinned host memory)
        p, db = self.trace([prog('pairing')])
        self.assertEqual(p.returncode, 0, p.stderr)
        by_outcome = query(db, """SELECT result = 0, count(*), count(stack_id) FROM events_v
                                  WHERE op = 'free' GROUP BY result = 0 ORDER BY 1""")
        self.assertEqual(by_outcome[0][0], 0)
        self.assertEqual(by_outcome[0][1:], (5, 5))         # every failed free: its stack
        self.assertGreater(by_outcome[1][1], 5)
        self.assertEqual(by_outcome[1][2], 0)               # no successful one
        frames = [r[0] for r in query(db, """SELECT f.function FROM events_v e
            JOIN stack_frames sf ON sf.stack_id = e.stack_id JOIN frames f ON f.id = sf.frame_id
            WHERE e.op = 'free' AND e.result != 0""")]
        self.assertIn('main', frames)                       # the program's frames, not the shim's
        self.assertFalse([f for f in frames if f and f.startswith('gt_')], frames)
        self.assertEqual(query(db, "SELECT count(*) FROM events_v WHERE op = 'alloc' AND stack_id IS NULL"), [(0,)])
        p, db = self.trace([prog('pairing')], name='free-stacks.db', env_extra={'GPUTRACE_FREE_STACKS': 1})
        self.assertEqual(query(db, "SELECT count(*) = count(stack_id) FROM events_v WHERE op = 'free'"), [(1,)])

    def test_eight_threads_twenty_thousand_pairs_nothing_dropped(self):
        p, db = self.trace([prog('threads'), '8', '20000'], timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, "SELECT op, count(*) FROM events_v GROUP BY op ORDER BY op"),
                         [('alloc', 160000), ('free', 160000)])
        self.assertEqual(query(db, 'SELECT events_recorded, events_dropped FROM processes'), [(320000, 0)])
        self.assertEqual(query(db, 'SELECT count(*) FROM drops'), [(0,)])
        self.assertEqual(query(db, 'SELECT count(DISTINCT tid) FROM events'), [(8,)])
        # every free carries the size of what it freed: the order never shows an address live twice
        self.assertEqual(query(db, "SELECT count(*) FROM events_v WHERE op = 'free' AND size IS NOT 1024"), [(0,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM live_at_exit'), [(0,)])
        self.assertIntegrity(db)
