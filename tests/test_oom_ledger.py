"""oom uses the ledger (issue 11 part 6): at the failure, the request, who
held the device (the ledger's buckets), what was held outside the trace
(NVML), what was free, how much the request was short by (never negative),
and what would have made it fit: a smaller batch from a sound fit only, else
the largest call sites live then. End to end on the stand-in with a planted
context, another process and 1 MiB driver rounding; the figures are the
stand-in's own bookkeeping, replayed here."""
import os

import analyzer_traces as T
import gtlib
from gtlib import prog, query

CAPACITY = 2000 * 1000 * 1000
CONTEXT, OTHER, GRANULARITY = 300 * 1000 * 1000, 100 * 1000 * 1000, 1 << 20
PLANTED = dict(FAKE_CUDA_DEVICE_BYTES=CAPACITY, FAKE_CUDA_CONTEXT_BYTES=CONTEXT, FAKE_CUDA_OTHER_BYTES=OTHER,
               FAKE_CUDA_GRANULARITY=GRANULARITY, GPUTRACE_CUPTI=0)
PARAMS, INPUT, WIDTHS = 1000000, 20000, [40000, 30000, 40000]


def up(n):
    return (n + GRANULARITY - 1) // GRANULARITY * GRANULARITY


def replay_failure(bs):
    """seed_batches' live tensors when the step of batch bs fails: (requested, live sizes)."""
    live = [PARAMS * 4] * 3 + [bs * INPUT * 4]   # model, Adam's states (grads freed by zero_grad), input
    # each layer's activation, the loss, backward's temporary, the gradients
    for n in [bs * w * 4 for w in WIDTHS] + [512, bs * max(WIDTHS) * 4, PARAMS * 4]:
        if CONTEXT + OTHER + sum(up(x) for x in live) + up(n) > CAPACITY:
            return n, live
        live.append(n)
    raise AssertionError('batch %d fits' % bs)


class OomLedger(T.AnalyzerTest):
    def run_oom(self, batches, nvml=True):
        env = dict(PLANTED)
        if nvml:
            env['LD_LIBRARY_PATH'] = gtlib.WITH_NVML
        p, db = self.trace([prog('seed_batches'), 'nvtx', str(PARAMS), str(INPUT), ','.join(map(str, WIDTHS))] +
                           [str(b) for b in batches], env_extra=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        return db

    def test_failure_shows_buckets_free_bytes_shortfall_and_a_sound_batch_reduction(self):
        db = self.run_oom([16, 32, 48, 64, 3000])
        requested, live = replay_failure(3000)
        f = self.json('oom', db)['failures'][0]
        self.assertEqual(f['requested_bytes'], requested)
        self.assertEqual([(b['name'], b['bytes']) for b in f['ledger']], [("program's direct allocations", sum(live))])
        # what the stand-in had free then: capacity less its context, the other process and the rounded live tensors
        free = CAPACITY - CONTEXT - OTHER - sum(up(x) for x in live)
        self.assertEqual(f['free_bytes'], free)
        self.assertIs(f['free_is_upper_bound'], False)
        self.assertEqual(f['held_outside_trace_bytes'], CONTEXT + OTHER + sum(up(x) - x for x in live))
        self.assertEqual(f['short_by_bytes'], requested - free)
        # the reduction comes from peak's sound answer, which never over-promises
        p = self.json('peak', db)
        self.assertIsNotNone(p['max_batch_size'])
        self.assertEqual(f['batch_size_reduction'], 3000 - p['max_batch_size'])
        text = self.ok('oom', db).stdout
        self.assertIn("held then: program's direct allocations", text)
        self.assertIn('short by', text)
        self.assertIn('the batch had to be %d smaller' % (3000 - p['max_batch_size']), text)

    def test_without_a_sound_fit_the_call_sites_that_would_have_made_it_fit(self):
        db = self.run_oom([64, 3000])   # two batch sizes: no sound fit, no reduction
        requested, live = replay_failure(3000)
        f = self.json('oom', db)['failures'][0]
        self.assertIsNone(f['batch_size_reduction'])
        self.assertGreater(f['short_by_bytes'], 0)
        covered = 0
        for k, s in enumerate(f['sites']):
            covered += s['bytes']
            if covered >= f['short_by_bytes']:
                break
        self.assertEqual(f['sites_to_free'], k + 1)
        self.assertIn('to fit: the %d largest call site' % (k + 1), self.ok('oom', db).stdout)

    def test_two_batch_sizes_say_peaks_reason_for_no_fit_not_a_fixed_one(self):
        db = self.run_oom([16, 32, 3000])   # two batch sizes ran: a line through them tests nothing
        f = self.json('oom', db)['failures'][0]
        why = self.json('peak', db)['max_batch_size_withheld']
        self.assertTrue(why)
        self.assertEqual(f['max_batch_size_withheld'], why)
        self.assertIn('no largest batch size from the fit: ' + why, self.ok('oom', db).stdout)

    def test_the_excess_over_the_device_total_is_a_lower_bound_beside_the_shortfall(self):
        db = self.run_oom([16, 32, 48, 64, 3000])
        requested, live = replay_failure(3000)
        text = self.ok('oom', db).stdout
        if requested + sum(live) > CAPACITY:
            self.assertIn('at least that much had to go', text)
        # the context and the other process held more: the shortfall is larger than the excess
        self.assertIn('short by', text)
        self.assertNotIn(': that much had to go', text)

    def test_summary_says_the_program_ended_out_of_memory(self):
        db = self.run_oom([16, 32, 3000])
        requested, _ = replay_failure(3000)
        s = self.json('summary', db)['out_of_memory']
        self.assertEqual((s['requests'], s['ended_program'], s['requested_bytes'], s['device']), (1, True, requested, 0))
        self.assertEqual(s['api'], self.json('oom', db)['failures'][0]['api'])
        text = self.ok('summary', db).stdout
        self.assertRegex(text, r'out of memory: the program ended on a failed \w+ of [0-9.]+ [KMG]iB on device 0 '
                               r'\(gputrace oom\)')

    def test_summary_of_a_run_without_failures_has_no_out_of_memory_line(self):
        p, db = self.trace([prog('seed_batches'), 'nvtx', str(PARAMS), str(INPUT), ','.join(map(str, WIDTHS)), '16',
                            '32'], env_extra=dict(PLANTED))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.json('summary', db)['out_of_memory'], {'requests': 0, 'ended_program': False})
        self.assertNotIn('out of memory', self.ok('summary', db).stdout)

    def test_a_trace_without_stacks_gives_no_call_site_advice(self):
        # a sweep's runs have no stacks: "(no stack: GPUTRACE_STACK_DEPTH=0?)" and "to fit: the 1
        # largest call site held enough" (everything live) were guesses
        env = dict(PLANTED, LD_LIBRARY_PATH=gtlib.WITH_NVML, GPUTRACE_STACK_DEPTH='0')
        p, db = self.trace([prog('seed_batches'), 'nvtx', str(PARAMS), str(INPUT), ','.join(map(str, WIDTHS)), '64',
                            '3000'], env_extra=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        f = self.json('oom', db)['failures'][0]
        self.assertGreater(f['short_by_bytes'], 0)
        self.assertIsNone(f['sites_to_free'])
        text = self.ok('oom', db).stdout
        self.assertIn('(no stacks: traced with stack depth 0; gputrace run --stack-depth 32 records them)', text)
        self.assertIn('of what was live had to go; which call sites held it needs stacks', text)
        self.assertNotIn('largest call site', text.replace('largest live allocations by call site', ''))

    def test_without_nvml_free_is_an_upper_bound(self):
        db = self.run_oom([16, 32, 48, 64, 3000], nvml=False)
        requested, live = replay_failure(3000)
        f = self.json('oom', db)['failures'][0]
        self.assertIsNone(f['held_outside_trace_bytes'])
        self.assertIs(f['free_is_upper_bound'], True)
        self.assertEqual(f['free_bytes'], CAPACITY - sum(live))
        self.assertIn('free then: at most', self.ok('oom', db).stdout)

    def test_never_a_negative_need_when_the_ledger_says_it_fitted(self):
        # the request fits in what the ledger calls free (fragmentation, memory
        # taken after the last sample): no shortfall, no negative number
        t = T.Trace(os.path.join(self.dir, 'frag.db'), device_total=16 * T.GiB)
        keep = t.alloc(8 * T.GiB, ['load_weights', 'main'])
        t.nvml_sample(500 * T.MiB)
        t.alloc(2 * T.GiB, ['forward', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        t.free(keep)
        t.nvml_sample(500 * T.MiB)
        f = self.json('oom', t.close())['failures'][0]
        self.assertEqual(f['free_bytes'], 16 * T.GiB - 8 * T.GiB - 500 * T.MiB)
        self.assertEqual(f['short_by_bytes'], 0)
        self.assertEqual(f['needed_bytes'], 0)
        self.assertIsNone(f['sites_to_free'])
        self.assertIn('by the ledger it fitted', self.ok('oom', os.path.join(self.dir, 'frag.db')).stdout)


class PoolKeptTheDevice(T.AnalyzerTest):
    """A stream-ordered pool keeps what is freed in it and gives none of it to
    an allocation made outside it (on an H200 a plain run of a conv net under
    cudaMallocAsync failed in cublasCreate: tests/gpu/RESULTS.md, session
    29). The stand-in's pools reserve all the
    device but 1 MiB at their first allocation (FAKE_CUDA_POOL_GRAB_LEAVE);
    sweep_train --lib-alloc then asks cudaMalloc for 4 MiB after each forward."""
    LIB = 4 << 20

    def run_train(self, *args, grab=True, **planted):
        env = dict(FAKE_CUDA_DEVICE_BYTES=1 << 30, GPUTRACE_CUPTI=0, LD_LIBRARY_PATH=gtlib.WITH_NVML, **planted)
        if grab:
            env['FAKE_CUDA_POOL_GRAB_LEAVE'] = 1 << 20
        env = {k: str(v) for k, v in env.items()}
        p, db = self.trace([prog('sweep_train'), '--async', '--batch-size', '8'] + [str(a) for a in args], env_extra=env)
        return p, db

    def test_an_allocation_outside_the_pool_short_by_less_than_its_unused_reserve_names_the_pool(self):
        p, db = self.run_train('--lib-alloc', self.LIB)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn('CUBLAS_STATUS_ALLOC_FAILED', p.stderr)
        f = self.json('oom', db)['failures'][0]
        self.assertEqual(f['requested_bytes'], self.LIB)
        pool = [b for b in f['ledger'] if b['kind'] == 'pool']
        self.assertEqual(len(pool), 1, f['ledger'])
        self.assertEqual(pool[0]['in_use_bytes'], f['live_pool_bytes'])
        self.assertGreater(f['short_by_bytes'], 0)
        self.assertEqual(f['pool_unused_bytes'], pool[0]['bytes'] - pool[0]['in_use_bytes'])
        self.assertGreaterEqual(f['pool_unused_bytes'], f['short_by_bytes'])
        text = self.ok('oom', db).stdout
        self.assertIn('more than its bytes in use (as last read), which would have covered', text)
        self.assertIn('none to an allocation outside it, as this cudaMalloc was', text)
        self.assertIn('torch.cuda.empty_cache()', text)
        self.assertNotIn('to fit: the 1 largest call site', text)   # freeing tensors is not what it needed
        # without the pool's grab the same allocation fits
        p, db = self.run_train('--lib-alloc', self.LIB, grab=False)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_request_of_the_pool_itself_is_not_told_the_pool_kept_it(self):
        # the pool's own request placed past the device's end, while the pool
        # held half as much again as its bytes in use (fragmentation): its
        # reserve was its own to use, so the shortfall is not its keeping
        p, db = self.run_train('--oom-at', 8, grab=False, FAKE_CUDA_POOL_FRAGMENTATION=50)
        self.assertEqual(p.returncode, 1, p.stderr)
        f = self.json('oom', db)['failures'][0]
        pool = [b for b in f['ledger'] if b['kind'] == 'pool']
        self.assertGreaterEqual(pool[0]['bytes'] - pool[0]['in_use_bytes'], f['short_by_bytes'])   # the case it is
        self.assertIsNone(f['pool_unused_bytes'])
        self.assertNotIn('which would have covered', self.ok('oom', db).stdout)
        # its unused reserve covered the shortfall but not the request: not split either
        self.assertLess(pool[0]['bytes'] - pool[0]['in_use_bytes'], f['requested_bytes'])
        self.assertIsNone(f['pool_split_bytes'])

    def test_requests_past_the_detailed_ones_say_nothing_of_a_pool(self):
        # 40 recovered attempts: the first 32 get the ledger, the rest totals
        # only; none of them may claim a pool's reserve (there is no pool)
        env = {'FAKE_CUDA_DEVICE_BYTES': str(1 << 30), 'GPUTRACE_CUPTI': '0'}
        p, db = self.trace([prog('sweep_train'), '--batch-size', '2', '--steps', '40', '--try-workspace', str(2 << 30)],
                           env_extra=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        failures = self.json('oom', db)['failures']
        self.assertEqual(len(failures), 40)
        self.assertEqual([f['pool_unused_bytes'] for f in failures], [None] * 40)


class PoolSplit(T.AnalyzerTest):
    """The pool's own request failed while the pool held at least as much
    unused: its free memory in pieces none large enough (on an H200 under
    cudaMallocAsync, 16 of 17 failures near a conv net's limit: 8.34 GiB asked
    for with 30.7 GiB unused; tests/gpu/RESULTS.md, session 32). The figure is
    a lower bound: the reservation less the bytes in use, 2 MiB per live
    tensor and the request in 2 MiB pages (what the failed call may have grown
    the pool by), from a pool that keeps what is freed in it (its release
    threshold read, at least its reservation; no reading fell). The
    stand-in's pools keep their unused reserve in pieces of at most 1 MiB
    (FAKE_CUDA_POOL_PIECE), so each larger tensor grows them by all of it;
    sweep_train --async frees its batch, activation and gradients each step,
    and the device runs out with the pool mostly unused. The figures are the
    stand-in's own bookkeeping, replayed."""
    DEVICE, PIECE, PAGE = 1 << 30, 1 << 20, 2 << 20
    FIXED, PER_SAMPLE, BS = 64 << 20, 3 << 20, 8

    def page(self, n):
        return (n + self.PAGE - 1) // self.PAGE * self.PAGE

    def replay(self):
        """(requested, reserved, live bytes, live count) when the stand-in's device runs out."""
        reserved, live, half = 0, [], self.BS * (self.PER_SAMPLE // 2)
        def tensor(n):
            nonlocal reserved
            if reserved + self.page(n) > self.DEVICE:
                raise StopIteration(n)
            reserved += self.page(n)
            live.append(n)
        try:
            tensor(self.FIXED // 2)
            tensor(self.FIXED // 4)   # model, optimizer state
            grads = None
            while True:
                if grads is not None:
                    live.remove(grads)            # zero_grad
                tensor(half)
                tensor(half)                      # input batch, activation
                tensor(self.FIXED // 4)           # backward's gradients
                grads = self.FIXED // 4
                live.remove(half)
                live.remove(half)                 # the step's tensors die
        except StopIteration as e:
            return e.value, reserved, sum(live), len(live)

    def run_train(self, **planted):
        env = dict(FAKE_CUDA_DEVICE_BYTES=self.DEVICE, GPUTRACE_CUPTI=0, LD_LIBRARY_PATH=gtlib.WITH_NVML)
        env.update(planted)
        p, db = self.trace([prog('sweep_train'), '--async', '--batch-size', str(self.BS), '--steps', '100'],
                           env_extra={k: str(v) for k, v in env.items()})
        self.assertEqual(p.returncode, 1, p.stderr)
        return db

    def test_a_pool_request_failed_with_more_than_it_unused_in_the_pool_says_so(self):
        db = self.run_train(FAKE_CUDA_POOL_PIECE=self.PIECE)
        requested, reserved, live, count = self.replay()
        f = self.json('oom', db)['failures'][0]
        self.assertEqual(f['api'], 'cudaMallocAsync')
        self.assertEqual(f['requested_bytes'], requested)
        self.assertEqual(f['live_pool_bytes'], live)
        # the program ended on it: the reading at exit is the reservation then
        # (nothing grew it after), or more by what the failed call grew
        bound = reserved - live - count * self.PAGE - self.page(requested)
        self.assertEqual(f['pool_split_bytes'], bound)
        self.assertGreater(f['pool_split_bytes'], requested)   # the case it is: more unused than asked for
        self.assertIsNone(f['pool_unused_bytes'])              # not an allocation outside the pool
        self.assertEqual(query(db, "SELECT DISTINCT release_threshold FROM memory_pools"), [(2 ** 63 - 1,)])
        text = self.ok('oom', db).stdout
        self.assertIn('the pool held at least %.2f MiB unused' % (bound / (1 << 20)), text)
        self.assertIn('and did not serve it from', text)
        # the gap below the device's total is named the pool's first, not only memory outside the trace
        self.assertIn("held beside the live bytes (a pool's reservation beyond its use, the CUDA context", text)
        self.assertNotIn('largest call site', text.split('largest live allocations')[0])

    def test_a_pool_that_reused_its_reserve_is_not_called_split(self):
        # the same loop with the pool's unused memory reusable: it never grows
        # past the step's need, and a device too small for one step fails
        # with less unused than the request
        db = self.run_train(FAKE_CUDA_POOL_KEEPS=1, FAKE_CUDA_DEVICE_BYTES=80 << 20)
        f = self.json('oom', db)['failures'][0]
        pool = [b for b in f['ledger'] if b['kind'] == 'pool']
        self.assertLess(pool[0]['bytes'] - pool[0]['in_use_bytes'], f['requested_bytes'])
        self.assertIsNone(f['pool_split_bytes'])
        self.assertNotIn('did not serve it', self.ok('oom', db).stdout)

    def split_trace(self, name, extra, readings_after=(), recovered=False, reading_at_exit=None, threshold=2**63 - 1,
                    api='cudaMallocAsync', device=0, cupti_pool=None):
        """Ten live 100 MiB pool tensors, a reading of the pool's reservation of
        their bytes + 200 MiB + `extra` (then `readings_after` more), and a
        200 MiB request (`api`) that fails with the device 1 GiB short. The
        bound: extra - 10 x 2 MiB - 200 MiB + 200 MiB."""
        MiB = T.MiB
        t = T.Trace(os.path.join(self.dir, name), device_total=16 * T.GiB)
        live = [t.alloc(100 * MiB, ['forward', 'main'], api='cudaMallocAsync', device=device) for _ in range(10)]
        reserved = 1000 * MiB + 200 * MiB + extra
        t.nvml_sample(16 * T.GiB - 1000 * MiB + 1 * T.GiB - 200 * MiB)   # whatever leaves the device 1 GiB short
        reading = ("INSERT INTO memory_pools(t_ns, op, size, utilized_size, device, release_threshold)"
                   " VALUES (?, 'sampled', ?, ?, ?, ?)")
        if cupti_pool:   # (threshold, size): CUPTI's record of a pool made at the start
            t.con.execute("INSERT INTO memory_pools(t_ns, op, size, device, release_threshold)"
                          " VALUES (?, 'created', ?, ?, ?)", (1, cupti_pool[1], device, cupti_pool[0]))
        for r in (reserved,) + tuple(readings_after):
            t.con.execute(reading, (t.now(), r, 1000 * MiB, device, threshold))
        t.alloc(200 * MiB, ['forward', 'main'], api=api, device=device, result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        if recovered:
            t.free(live.pop())
            live.append(t.alloc(50 * MiB, ['forward', 'main'], api='cudaMallocAsync', device=device))
        if reading_at_exit is not None:
            t.con.execute(reading, (t.now(), reserved + reading_at_exit, 1000 * MiB, device, threshold))
        db = t.close()
        failures = self.json('oom', db)['failures']
        return failures[0] if failures else None

    def test_the_rounding_and_the_request_count_against_it(self):
        # 2 MiB for each of the 10 live tensors (the driver's pages) and the
        # request's own 200 MiB must be left beside it: at exactly that the
        # pool held enough; a byte less, not provably
        MiB = T.MiB
        self.assertEqual(self.split_trace('at.db', 220 * MiB, recovered=True)['pool_split_bytes'], 200 * MiB)
        self.assertIsNone(self.split_trace('under.db', 220 * MiB - 1, recovered=True)['pool_split_bytes'])

    def test_only_a_pool_that_keeps_what_is_freed_gives_a_bound(self):
        MiB = T.MiB
        self.assertEqual(self.split_trace('kept.db', 500 * MiB, recovered=True)['pool_split_bytes'], 480 * MiB)
        # its reservation fell between readings: the last may be more than it held at the failure
        self.assertIsNone(self.split_trace('fell.db', 500 * MiB, readings_after=[2500 * MiB, 1700 * MiB],
                                           recovered=True)['pool_split_bytes'])
        # CUDA's default threshold, 0: it gives back at each synchronization,
        # which readings taken apart may never show
        self.assertIsNone(self.split_trace('zero.db', 500 * MiB, threshold=0, recovered=True)['pool_split_bytes'])
        # no threshold read (a trace from before it was): nothing says it keeps
        self.assertIsNone(self.split_trace('unread.db', 500 * MiB, threshold=None, recovered=True)['pool_split_bytes'])
        # a threshold of UINT64_MAX as an older shim wrote it (-1): it keeps
        self.assertEqual(self.split_trace('minus1.db', 500 * MiB, threshold=-1, recovered=True)['pool_split_bytes'],
                         480 * MiB)
        # a fall only in the first reading after the failure counts too
        self.assertIsNone(self.split_trace('fell_after.db', 500 * MiB, reading_at_exit=-100 * MiB)['pool_split_bytes'])

    def test_a_reading_after_a_failure_the_program_ended_on_counts(self):
        # read at exit 1000 MiB above its last reading before: nothing was
        # allocated after, so the pool held that much when the call failed,
        # less what the call itself grew it by (the request, counted)
        MiB = T.MiB
        self.assertEqual(self.split_trace('exit.db', 220 * MiB, reading_at_exit=1000 * MiB)['pool_split_bytes'],
                         1200 * MiB)

    def test_cuptis_records_of_other_pools_do_not_decide_the_threshold(self):
        # a CUPTI record of a pool the program made, with CUDA's default
        # threshold 0, says nothing of the device's current pool, which the
        # writer's readings describe
        MiB = T.MiB
        f = self.split_trace('cupti.db', 500 * MiB, recovered=True, cupti_pool=(0, 64 * MiB))
        self.assertEqual(f['pool_split_bytes'], 480 * MiB)
        # nor does it stand for a threshold the readings lack
        f = self.split_trace('cupti2.db', 500 * MiB, recovered=True, threshold=None, cupti_pool=(2 ** 63 - 1, 64 * MiB))
        self.assertIsNone(f['pool_split_bytes'])

    def test_a_request_from_another_pool_is_not_judged_by_the_current_one(self):
        # the readings are of the device's current pool; a FromPool request's
        # pool is another one, whose reserve the trace does not read
        f = self.split_trace('frompool.db', 500 * T.MiB, api='cudaMallocFromPoolAsync', recovered=True)
        self.assertIsNone(f['pool_split_bytes'])

    def test_oom_on_one_device_lists_only_its_own_failures(self):
        # a failure on device 1 is not read against device 0's pool and tensors
        t = T.Trace(os.path.join(self.dir, 'two.db'), device_total=16 * T.GiB)
        t.alloc(100 * T.MiB, ['forward', 'main'], api='cudaMallocAsync', device=0)
        t.alloc(100 * T.MiB, ['forward', 'main'], api='cudaMallocAsync', device=1)
        t.alloc(200 * T.MiB, ['forward', 'main'], api='cudaMallocAsync', device=1, result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        db = t.close()
        self.assertEqual(self.json('oom', '--device', '0', db)['failures'], [])
        f = self.json('oom', '--device', '1', db)['failures']
        self.assertEqual((len(f), f[0]['device'], f[0]['live_pool_bytes']), (1, 1, 100 * T.MiB))


class OomTellsOnlyWhatTheTraceShows(T.AnalyzerTest):
    """Each figure of `oom` against a planted situation (a helper's probe,
    session 42): NVML's samples around the failure, not at exit; no shortfall
    claimed without NVML; a growth of chunks is one burst; one request per
    device; a request past the device; host and managed memory not judged
    against a device; a pool's reserve that covered the shortfall named."""
    G = T.GiB

    def test_another_job_that_held_memory_at_the_failure_and_ended_before_exit_counts(self):
        t = T.Trace(os.path.join(self.dir, 'other.db'), device_total=16 * self.G)
        a = t.alloc(4 * self.G, ['load_model', 'main'])
        t.nvml_sample(outside=6 * self.G + 300 * T.MiB, others=6 * self.G)
        t.alloc(8 * self.G, ['forward', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        t.nvml_sample(outside=300 * T.MiB, others=0)   # the other job has ended
        b = t.alloc(8 * self.G, ['forward', 'main'])
        t.free(b)
        t.free(a)
        t.nvml_sample(outside=300 * T.MiB, others=0)
        db = t.close()
        f = self.json('oom', db)['failures'][0]
        free = 16 * self.G - 4 * self.G - 6 * self.G - 300 * T.MiB
        self.assertEqual((f['free_bytes'], f['short_by_bytes']), (free, 8 * self.G - free))
        self.assertLess(f['outside_sampled_at_ns'], f['time_ns'])   # the sample before it
        self.assertNotIn('by the ledger it fitted', self.ok('oom', db).stdout)

    def test_without_nvml_no_fit_is_claimed_and_a_shortfall_is_a_lower_bound(self):
        t = T.Trace(os.path.join(self.dir, 'nonvml.db'), device_total=64 * T.MiB)
        t.alloc(40 * T.MiB, ['load_model', 'main'])
        t.alloc(20 * T.MiB, ['forward', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)   # under "at most 24 free"
        t.alloc(30 * T.MiB, ['forward', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)   # over it
        db = t.close()
        under, over = sorted(self.json('oom', db)['failures'], key=lambda f: f['requested_bytes'])
        self.assertEqual((under['short_by_bytes'], under['short_by_is_lower_bound']), (None, False))
        self.assertEqual((over['short_by_bytes'], over['short_by_is_lower_bound']), (6 * T.MiB, True))
        text = self.ok('oom', db).stdout
        self.assertNotIn('by the ledger it fitted', text)
        self.assertIn('not known whether it fitted', text)
        self.assertIn('short by at least 6.00 MiB', text)

    def test_chunks_made_long_before_and_freed_by_a_later_cleanup_are_not_the_request(self):
        t = T.Trace(os.path.join(self.dir, 'chunks.db'), device_total=10 * T.MiB, tick_ns=1000)
        chunks = [t.alloc(2 * T.MiB, ['weights', 'main'], api='cuMemCreate') for _ in range(5)]
        t.t += 200 * 1000 * 1000   # 200 ms later
        t.alloc(2 * T.MiB, ['grow', 'main'], api='cuMemCreate', result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        t.t += 100 * 1000 * 1000
        for c in chunks:
            t.free(c)
        f = self.json('oom', t.close())['failures'][0]
        self.assertEqual((f['requested_bytes'], f['requested_is_lower_bound'], f['chunks_rolled_back']),
                         (2 * T.MiB, False, 0))
        self.assertEqual(f['live_device_bytes'], 10 * T.MiB)

    def test_a_burst_of_chunks_released_at_the_failure_is_one_growth(self):
        t = T.Trace(os.path.join(self.dir, 'burst.db'), device_total=10 * T.MiB)
        t.alloc(4 * T.MiB, ['weights', 'main'])
        chunks = [t.alloc(2 * T.MiB, ['grow', 'main'], api='cuMemCreate') for _ in range(3)]
        t.alloc(2 * T.MiB, ['grow', 'main'], api='cuMemCreate', result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        for c in chunks:
            t.free(c)
        f = self.json('oom', t.close())['failures'][0]
        self.assertEqual((f['requested_bytes'], f['requested_is_lower_bound'], f['chunks_rolled_back']),
                         (8 * T.MiB, True, 3))

    def test_failures_of_one_size_on_two_devices_are_two_requests(self):
        t = T.Trace(os.path.join(self.dir, 'twodev.db'), device_total=100 * T.MiB)
        t.alloc(90 * T.MiB, ['a', 'main'], device=0)
        t.alloc(80 * T.MiB, ['b', 'main'], device=1)
        t.alloc(30 * T.MiB, ['c', 'main'], device=0, result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        t.alloc(30 * T.MiB, ['c', 'main'], device=1, result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        f = self.json('oom', t.close())['failures']
        self.assertEqual(sorted((x['device'], x['attempts'], x['live_device_bytes']) for x in f),
                         [(0, 1, 90 * T.MiB), (1, 1, 80 * T.MiB)])

    def test_a_request_larger_than_the_device_is_said_to_fit_by_no_freeing(self):
        t = T.Trace(os.path.join(self.dir, 'big.db'), device_total=64 * T.MiB)
        t.alloc(10 * T.MiB, ['a', 'main'])
        t.alloc(100 * T.MiB, ['b', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        db = t.close()
        self.assertIs(self.json('oom', db)['failures'][0]['request_exceeds_device'], True)
        text = self.ok('oom', db).stdout
        self.assertIn('no freeing makes it fit', text)
        self.assertNotIn('that much had to go', text)

    def test_host_and_managed_failures_are_not_judged_against_a_device(self):
        t = T.Trace(os.path.join(self.dir, 'host.db'), device_total=1 * self.G)
        t.alloc(900 * T.MiB, ['a', 'main'])
        t.alloc(1 << 50, ['b', 'main'], api='cudaMallocHost', device=-1, result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        t.alloc(1 << 50, ['c', 'main'], api='cudaMallocManaged', result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        db = t.close()
        by_kind = {f['memory_kind']: f for f in self.json('oom', db)['failures']}
        self.assertEqual(sorted(by_kind), ['host', 'managed'])
        self.assertIsNone(by_kind['host']['device'])
        for f in by_kind.values():
            self.assertEqual((f['device_total_bytes'], f['needed_bytes'], f['short_by_bytes']), (None, None, None))
        text = self.ok('oom', db).stdout
        self.assertNotIn('device -1', text)
        self.assertNotIn('that much had to go', text)
        self.assertIn('pinned host memory is not bounded', text)

    def test_a_pool_whose_unused_reserve_covered_the_shortfall_is_named(self):
        MiB = T.MiB
        t = T.Trace(os.path.join(self.dir, 'trim.db'), device_total=64 * MiB)
        t.nvml_sample(outside=0)
        t.con.execute("INSERT INTO memory_pools(t_ns, op, size, utilized_size, device, release_threshold)"
                      " VALUES (?, 'sampled', ?, 0, 0, ?)", (t.now(), 40 * MiB, 2 ** 63 - 1))
        t.nvml_sample(outside=40 * MiB)   # the pool's reservation is outside the live bytes: 24 MiB free
        t.alloc(30 * MiB, ['forward', 'main'], api='cudaMallocAsync', result=T.CUDA_ERROR_MEMORY_ALLOCATION)
        db = t.close()
        f = self.json('oom', db)['failures'][0]
        self.assertEqual(f['short_by_bytes'], 6 * MiB)
        self.assertIsNone(f['pool_split_bytes'])
        self.assertEqual(f['pool_trim_bytes'], 10 * MiB)   # 40 reserved - 0 in use - the request's own 30
        text = self.ok('oom', db).stdout
        self.assertIn('trim the pool', text)
        self.assertNotIn('more than all the traced memory', text)

    def test_an_address_allocated_again_while_live_is_counted_in_summary(self):
        t = T.Trace(os.path.join(self.dir, 'reset.db'), device_total=64 * T.MiB)
        p = t.alloc(50 * T.MiB, ['a', 'main'])
        t.live.pop(p)                       # cudaDeviceReset: gone without a free call
        t.free_lists.setdefault(50 * T.MiB, []).append(p)
        t.alloc(50 * T.MiB, ['a', 'main'])  # the same address again
        db = t.close()
        self.assertEqual(self.json('summary', db)['events']['reallocated_while_live'], 1)
        self.assertIn('1 allocation at an address still live', self.ok('summary', db).stdout)


class SummaryFilters(T.AnalyzerTest):
    def test_memory_and_device_given_choose_the_peaks_and_ledger_summary_shows(self):
        # they chose only the leaks line: the peaks and the ledger still showed every device and kind
        t = T.Trace(os.path.join(self.dir, 'two.db'), device_total=16 * T.GiB)
        t.alloc(100 * T.MiB, ['a', 'main'], device=0)
        t.alloc(200 * T.MiB, ['b', 'main'], device=1)
        t.alloc(50 * T.MiB, ['c', 'main'], api='cudaMallocAsync', device=1)
        db = t.close()
        every = self.json('summary', db)
        self.assertEqual(sorted((p['memory'], p['device']) for p in every['peaks']),
                         [('device', 0), ('device', 1), ('pool', 1)])
        one = self.json('summary', '--device', '1', db)
        self.assertEqual(sorted((p['memory'], p['device']) for p in one['peaks']), [('device', 1), ('pool', 1)])
        self.assertEqual([l['device'] for l in one['ledger']], [1])
        pool = self.json('summary', '--memory', 'pool', db)
        self.assertEqual([(p['memory'], p['device'], p['peak_bytes']) for p in pool['peaks']], [('pool', 1, 50 * T.MiB)])
        self.assertNotIn('memory on device 0', self.ok('summary', '--device', '1', db).stdout)
