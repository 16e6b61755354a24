"""The memory ledger (summary's "ledger"): what a process holds on a device,
split by who holds it, beside NVML's figure for the process. The context
bucket is measured at the first NVML sample (NVML's bytes for the process
minus all the trace shows live then), so the buckets adding up at the end is
a check: what does not add up is printed as unaccounted."""
import os
import sqlite3

import analyzer_traces as T
import gtlib

MiB, GiB = T.MiB, T.GiB
CONTEXT = T.LEDGER_CONTEXT
LEDGER_TORCH_STACK = T.LEDGER_TORCH + ['forward', 'main']


class Ledger(T.AnalyzerTest):
    def job(self, **kw):
        return T.ledger_job(self.dir, **kw)

    def exit_instant(self, d):
        led = d['ledger']
        self.assertEqual(len(led), 1)
        return led[0], {x['instant']: x for x in led[0]['instants']}['exit']

    def test_buckets_add_up_to_nvml_and_the_context_is_measured_at_the_start(self):
        dev, x = self.exit_instant(self.json('summary', self.job()))
        self.assertEqual((dev['device'], dev['context_bytes'], dev['per_process']), (0, CONTEXT, True))
        buckets = {b['name']: b['bytes'] for b in x['buckets']}
        self.assertEqual(buckets, {'framework allocator': 2 * GiB, 'cuBLAS': 128 * MiB,
                                   "program's direct allocations": 64 * MiB, 'stream-ordered pool': 512 * MiB,
                                   'CUDA context and driver': CONTEXT})
        pool = [b for b in x['buckets'] if b['kind'] == 'pool'][0]
        self.assertEqual((pool['in_use_bytes'], pool['reservation_known']), (300 * MiB, True))
        self.assertEqual(x['accounted_bytes'], sum(buckets.values()))
        self.assertEqual(x['unaccounted_bytes'], 1 * MiB)
        self.assertEqual(x['nvml_process_bytes'], x['accounted_bytes'] + 1 * MiB)
        self.assertEqual(x['other_processes_bytes'], 3 * GiB)
        self.assertEqual(x['free_bytes'], 80 * GiB - x['nvml_process_bytes'] - 3 * GiB)
        text = self.ok('summary', self.job()).stdout
        self.assertIn('Memory ledger', text)
        self.assertIn('CUDA context and driver', text)
        self.assertIn('unaccounted 1.00 MiB', text)

    def test_the_peak_instant_holds_the_pool_at_its_highest_use(self):
        dev, _ = self.exit_instant(self.json('summary', self.job()))
        peak = {x['instant']: x for x in dev['instants']}['peak']
        pool = [b for b in peak['buckets'] if b['kind'] == 'pool'][0]
        self.assertEqual(pool['in_use_bytes'], 500 * MiB)

    def test_without_per_process_figures_nothing_is_guessed(self):
        dev, x = self.exit_instant(self.json('summary', self.job(process_known=False)))
        self.assertEqual((dev['context_bytes'], dev['per_process']), (None, False))
        self.assertIsNone(x['unaccounted_bytes'])
        self.assertIsNone(x['nvml_process_bytes'])
        self.assertEqual(x['device_used_bytes'], 3 * GiB + CONTEXT + 2 * GiB + 704 * MiB + 1 * MiB)
        self.assertIn("cannot tell this process's", self.ok('summary', self.job(process_known=False)).stdout)

    def test_the_drivers_own_reservation_is_not_called_another_process(self):
        # an idle H200 shows 623.88 MiB used by no process: NVML's v1 used counts what the
        # driver and firmware set aside; v2 tells it apart
        db = self.job(driver_reserved=624 * MiB)
        dev, x = self.exit_instant(self.json('summary', db))
        self.assertEqual((x['other_processes_bytes'], x['driver_bytes'], x['driver_reserved_bytes']),
                         (3 * GiB, 624 * MiB, 624 * MiB))
        self.assertEqual(x['free_bytes'], 80 * GiB - x['nvml_process_bytes'] - 3 * GiB - 624 * MiB)
        self.assertEqual((dev['context_bytes'], x['unaccounted_bytes']), (CONTEXT, 1 * MiB))
        text = self.ok('summary', db).stdout
        self.assertRegex(text, r'NVML: other processes +3\.00 GiB\n')
        self.assertRegex(text, r'NVML: driver and firmware +624\.00 MiB')
        room = self.json('peak', db)['room']
        self.assertEqual((room['other_processes_bytes'], room['driver_bytes']), (3 * GiB, 624 * MiB))

    def test_a_trace_from_before_schema_4_is_read_without_the_reservation(self):
        db = self.job(driver_reserved=624 * MiB)
        with sqlite3.connect(db) as con:
            con.executescript('ALTER TABLE memory_samples DROP COLUMN reserved_bytes; '
                              'ALTER TABLE memory_samples DROP COLUMN others_bytes; PRAGMA user_version = 3;')
        dev, x = self.exit_instant(self.json('summary', db))
        self.assertEqual((x['other_processes_bytes'], x['driver_bytes'], x['driver_reserved_bytes']),
                         (3 * GiB + 624 * MiB, None, None))
        self.assertEqual((dev['context_bytes'], x['unaccounted_bytes']), (CONTEXT, 1 * MiB))
        self.assertIn("the driver's own memory: not told apart in this trace", self.ok('summary', db).stdout)

    def test_without_samples_the_traced_buckets_stand_alone(self):
        dev, x = self.exit_instant(self.json('summary', self.job(samples=False)))
        self.assertIsNone(dev['context_bytes'])
        self.assertNotIn('CUDA context and driver', [b['name'] for b in x['buckets']])
        self.assertIn('no NVML samples', self.ok('summary', self.job(samples=False)).stdout)


class ASecondDeviceUsedLater(T.AnalyzerTest):
    """A program that turns to a second GPU after its first allocation (a
    model split across two GPUs, on an H200 x2 host): the shim's first NVML
    sample came before this process had a context there, and NVML listed no
    figure for it on that device. The device's ledger starts at its first
    sample after the program used it: its context is measured there, not
    given up as unknowable."""
    CTX0, CTX1 = 530 * MiB, 540 * MiB

    def trace(self):
        t = T.Trace(os.path.join(self.dir, 'split.db'), device_total=80 * GiB)
        t.alloc(1 * GiB, LEDGER_TORCH_STACK)
        samples = [(t.now(), 0, self.CTX0 + 1 * GiB, self.CTX0 + 1 * GiB),
                   (t.now(), 1, 600 * MiB, None)]                      # no context of ours on device 1 yet
        t.alloc(2 * GiB, LEDGER_TORCH_STACK, device=1)
        samples += [(t.now(), 1, 600 * MiB + self.CTX1 + 2 * GiB, self.CTX1 + 2 * GiB)]
        t.alloc(256 * MiB, LEDGER_TORCH_STACK, device=1)
        end = t.now() + 10
        samples += [(end, 0, self.CTX0 + 1 * GiB, self.CTX0 + 1 * GiB),
                    (end, 1, 600 * MiB + self.CTX1 + 2304 * MiB, self.CTX1 + 2304 * MiB)]
        db = t.close()
        with sqlite3.connect(db) as con:
            con.execute("INSERT INTO devices(id, name, uuid, total_bytes, cc_major, cc_minor) "
                        "VALUES (1, 'Fake GPU', 'GPU-00000000-fake1', ?, 9, 0)", (80 * GiB,))
            con.executemany('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) '
                            'VALUES (?, ?, ?, %d, ?)' % (80 * GiB), samples)
        return db

    def test_its_context_is_measured_at_its_first_sample_after_the_program_used_it(self):
        led = {x['device']: x for x in self.json('summary', self.trace())['ledger']}
        self.assertEqual(sorted(led), [0, 1])
        for d, ctx in ((0, self.CTX0), (1, self.CTX1)):
            self.assertEqual((led[d]['per_process'], led[d]['context_bytes'], led[d]['context_unknown_why']),
                             (True, ctx, None), 'device %d' % d)
            x = {i['instant']: i for i in led[d]['instants']}['exit']
            self.assertEqual(x['unaccounted_bytes'], 0, 'device %d' % d)
        self.assertNotIn("cannot tell this process's", self.ok('summary', self.trace()).stdout)


class PoolReadAfterTheExitSample(T.AnalyzerTest):
    """A device whose pool calls the shim's writer first saw in its last drain
    has its pool read only after the exit sample: with no pool call after the
    sample, that reading is the reservation at it, not memory outside the
    trace."""

    def trace(self, later_call=False):
        t = T.Trace(os.path.join(self.dir, 'late%d.db' % later_call), device_total=80 * GiB)
        ptrs = [t.alloc(100 * MiB, ['forward', 'main'], api='cudaMallocAsync') for _ in range(3)]
        for ptr in ptrs:
            t.free(ptr)
        exit_t = t.now() + 10
        if later_call:   # a pool call after the sample: the later reading is no figure for it
            t.free(t.alloc(50 * MiB, ['forward', 'main'], api='cudaMallocAsync'))
        db = t.close()
        with sqlite3.connect(db) as con:
            # the exit sample: the context and the pool's 400 MiB reservation (nothing traced is live)
            con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) VALUES (?, 0, ?, ?, ?)',
                        (exit_t, CONTEXT + 400 * MiB, 80 * GiB, CONTEXT + 400 * MiB))
            con.execute("INSERT INTO memory_pools (t_ns, op, size, utilized_size, device) VALUES (?, 'sampled', ?, 0, 0)",
                        (exit_t + 10 ** 6, 400 * MiB))
        return db

    def test_the_reading_after_the_exit_sample_is_the_pool_at_it(self):
        db = self.trace()
        room = self.json('peak', db)['room']
        self.assertEqual(room['held_outside_trace_bytes'], CONTEXT)
        led = self.json('summary', db)['ledger'][0]
        x = {i['instant']: i for i in led['instants']}['exit']
        pool = [b for b in x['buckets'] if b['kind'] == 'pool'][0]
        self.assertEqual((pool['bytes'], pool['reservation_known']), (400 * MiB, True))
        self.assertEqual((led['context_bytes'], x['unaccounted_bytes']), (CONTEXT, 0))

    def test_a_pool_call_between_them_leaves_the_later_reading_out(self):
        room = self.json('peak', self.trace(later_call=True))['room']
        self.assertEqual(room['held_outside_trace_bytes'], CONTEXT + 400 * MiB)


class ModulesMeasuredOnTheirOwn(T.AnalyzerTest):
    """Issue 11 part 1: the memory the driver takes with no traced call after
    the start (kernel modules loaded lazily at a kernel's first launch, a
    library's start-up) is measured on its own by the NVML sample the shim
    takes when the first iteration has ended; what still does not add up at
    exit is what came later. The stand-in plants a context, another
    process's memory, 90 MB taken in the first step and 7 MB in the last."""
    CONTEXT, OTHER, LAZY, LATE = 300 * 1000 * 1000, 100 * 1000 * 1000, 90 * 1000 * 1000, 7 * 1000 * 1000

    def planted(self, *args, env=None, name='trace.db'):
        """sweep_train ARGS traced under the planted context, other process and NVML; the trace."""
        p, db = self.trace([gtlib.prog('sweep_train'), '--batch-size', '4'] + list(args),
                           env_extra=dict(LD_LIBRARY_PATH=gtlib.WITH_NVML, FAKE_CUDA_DEVICE_BYTES=2 * 10**9,
                                          FAKE_CUDA_CONTEXT_BYTES=self.CONTEXT, FAKE_CUDA_OTHER_BYTES=self.OTHER,
                                          GPUTRACE_CUPTI=0, **(env or {})), name=name)
        self.assertEqual(p.returncode, 0, p.stderr)
        return db

    def test_first_iteration_modules_are_their_own_bucket_and_later_ones_unaccounted(self):
        db = self.planted('--steps', '4', '--lazy-module', str(self.LAZY), '--late-module', str(self.LATE))
        led = self.json('summary', db)['ledger'][0]
        self.assertEqual((led['context_bytes'], led['modules_bytes']), (self.CONTEXT, self.LAZY))
        x = {i['instant']: i for i in led['instants']}['exit']
        buckets = {b['name']: b['bytes'] for b in x['buckets']}
        self.assertEqual(buckets['CUDA modules and library start-up'], self.LAZY)
        self.assertEqual(x['unaccounted_bytes'], self.LATE)
        self.assertEqual(x['other_processes_bytes'], self.OTHER)
        text = self.ok('summary', db).stdout
        self.assertIn('CUDA modules and library start-up', text)
        self.assertIn('(measured after the first iteration)', text)

    def test_the_shim_records_the_drivers_reservation_apart_where_nvml_tells_it(self):
        reserved = 600 * 1000 * 1000
        for v2 in (True, False):
            db = self.planted('--steps', '2', env=dict(FAKE_NVML_RESERVED_BYTES=reserved,
                                                       FAKE_NVML_NO_V2='0' if v2 else '1'), name='v2-%s.db' % v2)
            rows = gtlib.query(db, 'SELECT used_bytes - process_bytes, reserved_bytes, others_bytes FROM memory_samples')
            self.assertTrue(rows)
            self.assertEqual(set(rows), {(self.OTHER + reserved, reserved if v2 else None, self.OTHER)}, 'v2 %s' % v2)
            x = {i['instant']: i for i in self.json('summary', db)['ledger'][0]['instants']}['exit']
            self.assertEqual((x['other_processes_bytes'], x['driver_bytes'], x['driver_reserved_bytes'],
                              x['unaccounted_bytes']), (self.OTHER, reserved, reserved if v2 else None, 0), 'v2 %s' % v2)

    def test_memory_in_use_that_no_listed_process_holds_is_the_drivers(self):
        # an idle H200: 8.81 MiB in use beside the 615.06 MiB set aside, in no process's name
        unlisted = 9 * 1000 * 1000
        db = self.planted('--steps', '2', env=dict(FAKE_NVML_RESERVED_BYTES=600 * 1000 * 1000,
                                                   FAKE_NVML_UNLISTED_BYTES=unlisted))
        self.assertEqual(set(gtlib.query(db, 'SELECT others_bytes FROM memory_samples')), {(self.OTHER - unlisted,)})
        x = {i['instant']: i for i in self.json('summary', db)['ledger'][0]['instants']}['exit']
        self.assertEqual((x['other_processes_bytes'], x['driver_bytes']), (self.OTHER - unlisted, 600 * 1000 * 1000 + unlisted))
        self.assertRegex(self.ok('summary', db).stdout, r'NVML: driver and firmware .*572\.20 MiB set aside, 8\.58 MiB in use')

    def test_the_memory_held_for_graphs_is_its_own_bucket_not_part_of_the_modules(self):
        # a graph captured and first run in the first step (as torch.cuda.graph
        # under backend:cudaMallocAsync): the driver takes its allocation
        # node's memory with no traced call, which the shim reads (graph_memory)
        graph = 64 * MiB
        db = self.planted('--steps', '3', '--step-ms', '150', '--lazy-module', str(self.LAZY), '--graph', str(graph))
        led = self.json('summary', db)['ledger'][0]
        self.assertEqual((led['context_bytes'], led['modules_bytes']), (self.CONTEXT, self.LAZY))
        x = {i['instant']: i for i in led['instants']}['exit']
        buckets = {b['name']: (b['kind'], b['bytes']) for b in x['buckets']}
        self.assertEqual(buckets["CUDA graphs' allocation nodes"], ('graph_memory', graph))
        self.assertEqual(x['unaccounted_bytes'], 0)
        self.assertIn("CUDA graphs' allocation nodes", self.ok('summary', db).stdout)

    def test_a_program_without_ranges_or_markers_gets_its_modules_measured_too(self):
        # no iteration is announced: the shim's samples (every 50 ms for the
        # first 16 s) give the analyzer one after the first iteration it finds
        db = self.planted('--steps', '6', '--unmarked', '--step-ms', '300', '--lazy-module', str(self.LAZY))
        s = self.json('summary', db)
        self.assertEqual(s['iteration_source'], 'auto')
        led = s['ledger'][0]
        self.assertEqual((led['context_bytes'], led['modules_bytes']), (self.CONTEXT, self.LAZY))
        x = {i['instant']: i for i in led['instants']}['exit']
        self.assertEqual(x['unaccounted_bytes'], 0)

    def test_an_unmarked_program_that_starts_late_and_trains_briefly_gets_its_modules_measured(self):
        # as train_mlp.py on the GPU: 5.8 s from the first CUDA call to the
        # first step, 30 steps in 0.33 s; the first iteration must be followed
        # by a sample before the exit (1, 2, 4 ... s after the first had none,
        # nor 250 ms apart)
        db = self.planted('--steps', '6', '--unmarked', '--start-ms', '1200', '--step-ms', '30',
                          '--lazy-module', str(self.LAZY))
        led = self.json('summary', db)['ledger'][0]
        self.assertEqual((led['context_bytes'], led['modules_bytes']), (self.CONTEXT, self.LAZY))
        x = {i['instant']: i for i in led['instants']}['exit']
        self.assertEqual(x['unaccounted_bytes'], 0)

    def test_modules_contradicted_by_the_exit_sample_are_left_out_not_a_negative_remainder(self):
        # as when the pool grew between its last reading and the sample after the
        # first iteration: the buckets with modules exceed NVML's figure at exit
        db = self.planted('--steps', '4', '--lazy-module', str(self.LAZY), '--late-module', str(self.LATE))
        self.assertEqual(self.json('summary', db)['ledger'][0]['modules_bytes'], self.LAZY)
        import sqlite3
        con = sqlite3.connect(db)
        con.execute('UPDATE memory_samples SET process_bytes = process_bytes - ?, used_bytes = used_bytes - ?'
                    ' WHERE t_ns = (SELECT max(t_ns) FROM memory_samples)', (self.LAZY + self.LATE, self.LAZY + self.LATE))
        con.commit()
        con.close()
        led = self.json('summary', db)['ledger'][0]
        self.assertIsNone(led['modules_bytes'])
        self.assertIs(led['modules_refuted'], True)
        x = {i['instant']: i for i in led['instants']}['exit']
        self.assertNotIn('CUDA modules and library start-up', [b['name'] for b in x['buckets']])
        self.assertGreaterEqual(x['unaccounted_bytes'], 0)
        self.assertIn('exceed NVML', self.ok('summary', db).stdout)


class ReadingsTheLedgerCannotTake(T.AnalyzerTest):
    """What the ledger's buckets cannot rest on is said, never folded into
    another bucket (a helper's probe, session 43)."""

    def samples(self, db, times, process):
        con = sqlite3.connect(db)
        for ts in times:
            con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) '
                        'VALUES (?,0,?,?,?)', (ts, process, 80 * T.GiB, process))
        con.commit()
        con.close()

    def test_a_pool_reading_below_its_bytes_in_use_is_not_taken(self):
        # a program's own pool (cudaMallocFromPoolAsync) beside the device's
        # current pool, which alone is read: 1 GiB read for 2 GiB in use, and
        # the missing GiB was named the CUDA context
        t = T.Trace(os.path.join(self.dir, 'pools.db'))
        t.alloc(T.GiB, ['init_params', 'main'], api='cudaMallocAsync')
        t.alloc(T.GiB, ['kv_cache', 'main'], api='cudaMallocFromPoolAsync')
        read, first = t.now(), t.now()
        t.t += 10
        last = t.now()
        db = t.close()
        con = sqlite3.connect(db)
        con.execute("INSERT INTO memory_pools(t_ns, op, pool_type, size, utilized_size, release_threshold, device) "
                    "VALUES (?, 'sampled', 'local', ?, ?, -1, 0)", (read, T.GiB, T.GiB))
        con.commit()
        con.close()
        self.samples(db, (first, last), 500 * T.MiB + 2 * T.GiB)
        x = self.json('summary', db)['ledger'][0]
        self.assertEqual(x['context_bytes'], 500 * T.MiB)
        pool = [b for b in x['instants'][0]['buckets'] if b['kind'] == 'pool'][0]
        self.assertEqual((pool['bytes'], pool['in_use_bytes'], pool['reservation_known']), (2 * T.GiB, 2 * T.GiB, False))
        self.assertEqual(x['instants'][0]['unaccounted_bytes'], 0)
        self.assertIn('its reservation read then is below its bytes in use: not the pool the program allocates from',
                      self.ok('summary', db).stdout)

    def test_an_nvml_figure_below_the_traced_memory_says_why_the_context_is_unknown(self):
        t = T.Trace(os.path.join(self.dir, 'early.db'))
        t.alloc(2 * T.GiB, ['init_params', 'main'])
        first = t.now()
        t.alloc(T.GiB, ['more', 'main'])
        last = t.now()
        db = t.close()
        self.samples(db, (first, last), T.GiB)
        x = self.json('summary', db)['ledger'][0]
        self.assertIsNone(x['context_bytes'])
        self.assertIn("NVML's figure for this process at its first sample (1.00 GiB) is below what the trace shows live"
                      " then (2.00 GiB)", x['context_unknown_why'])

    def test_managed_memory_live_on_the_device_is_not_named_kernel_modules(self):
        # 4 GiB of cudaMallocManaged made before the loop, resident by the
        # end of the first iteration: it was named "CUDA modules and library
        # start-up 4.00 GiB"
        t = T.Trace(os.path.join(self.dir, 'managed.db'))
        t.alloc(T.GiB, ['init_params', 'main'])
        t.nvml_sample(500 * T.MiB)
        t.alloc(4 * T.GiB, ['embedding_table', 'main'], api='cudaMallocManaged')
        for i in range(5):
            t.push('train_step')
            t.free(t.alloc(256 * T.MiB, ['forward', 'main']))
            t.pop()
            t.nvml_sample(500 * T.MiB + 4 * T.GiB)
        db = t.close()
        x = self.json('summary', db)['ledger'][0]
        self.assertIsNone(x['modules_bytes'])
        self.assertEqual(x['modules_managed_bytes'], 4 * T.GiB)
        self.assertEqual(x['context_bytes'], 500 * T.MiB)
        text = self.ok('summary', db).stdout
        self.assertNotIn('CUDA modules and library start-up', text)
        self.assertIn('kernel modules and library start-up are not measured: 4.00 GiB of managed memory was live', text)
        self.assertIn('(4.00 GiB of managed memory is live on the device', text)

    def test_the_ledgers_instants_are_the_times_the_summary_says(self):
        # "exit after 9.683 ms" above a ledger "at exit (358.599 us)" (its
        # last event), and a peak said at the next event's time
        t = T.Trace(os.path.join(self.dir, 'times.db'))
        t.alloc(T.GiB, ['init_params', 'main'])
        t.nvml_sample(500 * T.MiB)
        a = t.alloc(256 * T.MiB, ['forward', 'main'])
        t.free(a)
        t.t += 5000000   # the process runs on after its last allocation
        t.nvml_sample(500 * T.MiB)
        db = t.close()
        d = self.json('summary', db)
        instants = {i['instant']: i['t_ns'] for i in d['ledger'][0]['instants']}
        peak = [p for p in d['peaks'] if p['memory'] == 'device'][0]
        self.assertEqual(instants['peak'], peak['peak_time_ns'])
        self.assertEqual(instants['exit'], d['duration_ns'])
        self.assertEqual([b['bytes'] for b in d['ledger'][0]['instants'][1]['buckets'] if b['kind'] == 'direct'],
                         [T.GiB + 256 * T.MiB])

    def test_a_reading_from_before_the_pool_grew_is_stale_not_another_pool(self):
        # at a peak the pool has often just grown past its last reading (they
        # are ~10 ms apart): that is no other pool's reading (a review)
        t = T.Trace(os.path.join(self.dir, 'stale.db'))
        t.alloc(T.GiB, ['init_params', 'main'], api='cudaMallocAsync')
        read = t.now()
        t.nvml_sample(500 * T.MiB)
        a = t.alloc(T.GiB, ['forward', 'main'], api='cudaMallocAsync')
        t.free(a)
        later = t.now()
        t.nvml_sample(500 * T.MiB + T.GiB)
        db = t.close()
        con = sqlite3.connect(db)
        for ts, size in ((read, T.GiB), (later, 2 * T.GiB)):
            con.execute("INSERT INTO memory_pools(t_ns, op, pool_type, size, utilized_size, release_threshold, device) "
                        "VALUES (?, 'sampled', 'local', ?, ?, -1, 0)", (ts, size, size))
        con.commit()
        con.close()
        text = self.ok('summary', db).stdout
        self.assertIn('2.00 GiB in use (its reservation was not read since it last grew)', text)
        self.assertNotIn('not the pool the program allocates from', text)


class LedgerReadingsThatDisagree(T.AnalyzerTest):
    """NVML's readings that contradict the trace or each other: no negative
    remainder and no negative byte count is printed, and text and JSON agree."""

    def test_a_context_the_exit_sample_refutes_is_left_out(self):
        t = T.Trace(os.path.join(self.dir, 'ctx.db'))
        t.alloc(1 * GiB, ['main'])
        t.nvml_sample(outside=2 * GiB)          # the context, measured: 2 GiB beyond what is live
        t.alloc(1 * GiB, ['main'])
        t.nvml_sample(outside=512 * MiB)        # at exit: only 0.5 GiB beyond 2 GiB live
        path = t.close()
        dev = self.json('summary', path)['ledger'][0]
        x = {i['instant']: i for i in dev['instants']}['exit']
        self.assertIsNone(dev['context_bytes'])
        self.assertIn('left out', dev['context_unknown_why'])
        self.assertIsNone(x['unaccounted_bytes'])
        text = self.ok('summary', path).stdout
        self.assertNotIn('unaccounted -', text)
        self.assertIn('is left out: with it the buckets exceed what NVML says', text)

    def test_a_device_figure_below_the_process_figure_is_said_not_printed_negative(self):
        t = T.Trace(os.path.join(self.dir, 'race.db'))
        t.alloc(1 * GiB, ['main'])
        t.nvml_sample(outside=500 * MiB)
        t.con.execute('UPDATE memory_samples SET process_bytes = used_bytes + 100 * 1048576')
        path = t.close()
        x = self.json('summary', path)['ledger'][0]['instants'][0]
        self.assertIsNone(x['other_processes_bytes'])
        text = self.ok('summary', path).stdout
        self.assertNotIn('-100', text)
        self.assertIn('the two readings disagree', text)
