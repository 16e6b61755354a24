"""The seeds' questions answered end to end: C programs written after the
seeds' PyTorch examples (tests/progs/seed_*.c, caching_allocator.c) run under
the shim against the CUDA stand-in, and the analyzer's answers are checked
against what each program planted. Every expectation is computed here from
the planted workload (sizes, order, device capacity), never taken from the
analyzer's own output."""
import os

import analyzer_traces as T
import gtlib
from gtlib import prog

F = 4   # sizeof(float)

# seed_leak.c: ModelWithStoredTensor, batch 32, Linear(10, 20) -> ReLU -> Linear(20, 1)
LEAK_BATCH, LEAK_IN, LEAK_HIDDEN, LEAK_OUT = 32, 10, 20, 1
LEAK_BYTES_PER_STEP = LEAK_BATCH * LEAK_HIDDEN * F      # the ReLU output appended each step
LEAK_PARAM_BYTES = (LEAK_HIDDEN * LEAK_IN + LEAK_HIDDEN + LEAK_OUT * LEAK_HIDDEN + LEAK_OUT) * F
LEAK_DATA_BYTES = (LEAK_BATCH * LEAK_IN + LEAK_BATCH * LEAK_OUT) * F
# per step: linear1 out, relu out, linear2 out, loss, grad out, grad hidden, 4 param grads
LEAK_ALLOCS_PER_STEP = 10

# seed 000's SimpleConv (32x32 RGB input; the fc layer fixed to 64*6*6 inputs),
# its activations per sample, and the batch sizes its example 3 runs
CONV_PARAMS = (3 * 32 * 9 + 32) + (32 * 64 * 9 + 64) + (64 * 6 * 6 * 10 + 10)
CONV_INPUT = 3 * 32 * 32
CONV_WIDTHS = [32 * 30 * 30, 32 * 15 * 15, 64 * 13 * 13, 64 * 6 * 6, 10]
SEED000_BATCHES = [64, 8, 32, 4]

# seed 002's equation: an MLP of 4 layers of 1024 on 1024 inputs; all sizes
# multiples of 512 bytes, the stand-in's rounding, so capacity is exact
MLP_PARAMS = 1024 * 1024 * 4 + 1024 * 4
MLP_INPUT = 1024
MLP_WIDTHS = [1024] * 4
LOSS_BYTES = 512


def fixed_bytes(params):
    """Model + Adam's two states + the gradients + the loss scalar."""
    return 4 * params * F + LOSS_BYTES


def per_sample_bytes(input_floats, widths):
    """Input + every activation + the backward temporary (widest layer)."""
    return (input_floats + sum(widths) + max(widths)) * F


def batches_argv(mark, params, input_floats, widths, batches):
    return [prog('seed_batches'), mark, str(params), str(input_floats), ','.join(map(str, widths))] + [str(b) for b in batches]


def simulate_batches(params, input_floats, widths, batches, capacity):
    """Replays seed_batches.c's allocation order against a device of
    `capacity` bytes (the stand-in rounds each request up to 512). Returns
    (per-step peaks of the steps that completed, the failure or None): the
    failure is (step index, requested bytes, live bytes then)."""
    r512 = lambda n: (n + 511) // 512 * 512
    live = {'bytes': 0, 'rounded': 0}

    def alloc(n):
        if live['rounded'] + r512(n) > capacity:
            return False
        live['bytes'] += n
        live['rounded'] += r512(n)
        return True

    def free(n):
        live['bytes'] -= n
        live['rounded'] -= r512(n)

    for _ in range(3):                                   # model, exp_avg, exp_avg_sq
        assert alloc(params * F)
    grads, peaks = 0, []
    for k, bs in enumerate(batches):
        if grads:
            free(grads)
            grads = 0
        peak = live['bytes']
        step = [bs * input_floats * F] + [bs * w * F for w in widths] + [LOSS_BYTES, bs * max(widths) * F, params * F]
        for n in step:
            if not alloc(n):
                return peaks, (k, n, live['bytes'])
            peak = max(peak, live['bytes'])
        grads = params * F
        for n in [bs * max(widths) * F] + [bs * w * F for w in reversed(widths)] + [LOSS_BYTES, bs * input_floats * F]:
            free(n)
        peaks.append(peak)
    return peaks, None


def frames_name(site, function):
    return any(f.split(' ')[0] == function for f in site['frames'])


class SeedTest(T.AnalyzerTest):
    def run_traced(self, argv, name='trace.db', rc=0, **env):
        p, db = self.trace(argv, name=name, env_extra=env)
        self.assertEqual(p.returncode, rc, 'stdout:\n%s\nstderr:\n%s' % (p.stdout, p.stderr))
        self.assertIntegrity(db)
        return db


class Seed001RetainedTensorLeak(SeedTest):
    """Seed 001: memory grows per batch because forward keeps every ReLU output."""
    STEPS = 20

    def test_leak_growth_slope_and_planting_site_from_every_iteration_source(self):
        for mark, source in (('nvtx', 'nvtx'), ('marker', 'marker'), ('none', 'auto')):
            with self.subTest(marking=mark):
                db = self.run_traced([prog('seed_leak'), 'leak', mark, str(self.STEPS)], name='leak-%s.db' % mark)
                d = self.json('growth', db)
                self.assertEqual(d['iteration_source'], source)
                self.assertEqual(d['iterations'], self.STEPS)
                self.assertEqual(d['verdict'], 'growing')
                self.assertWithin(d['slope_bytes_per_iteration'], LEAK_BYTES_PER_STEP)
                top = d['sites'][0]
                self.assertWithin(top['bytes_per_iteration'], LEAK_BYTES_PER_STEP)
                self.assertTrue(frames_name(top, 'ModelWithStoredTensor_forward'), top['frames'])

    def test_leak_live_bytes_at_each_step_end_grow_by_the_retained_tensor(self):
        db = self.run_traced([prog('seed_leak'), 'leak', 'nvtx', str(self.STEPS)])
        d = self.json('growth', db)
        grads = LEAK_PARAM_BYTES   # .grad tensors live from backward to the next zero_grad
        want = [LEAK_PARAM_BYTES + LEAK_DATA_BYTES + grads + (k + 1) * LEAK_BYTES_PER_STEP for k in range(self.STEPS)]
        self.assertEqual(d['live_bytes_at_iteration_end'], want)

    def test_leak_report_names_the_retained_tensors(self):
        db = self.run_traced([prog('seed_leak'), 'leak', 'none', str(self.STEPS)])
        d = self.json('leaks', db)
        self.assertEqual((d['total_bytes'], d['total_count']), (self.STEPS * LEAK_BYTES_PER_STEP, self.STEPS))
        self.assertEqual(d['cached_bytes'], 0)
        self.assertTrue(frames_name(d['sites'][0], 'ModelWithStoredTensor_forward'), d['sites'][0]['frames'])
        s = self.json('summary', db)
        self.assertEqual(s['growth_verdict'], 'growing')

    def test_fixed_loop_is_stable_without_leaks(self):
        for mark, source in (('nvtx', 'nvtx'), ('marker', 'marker'), ('none', 'auto')):
            with self.subTest(marking=mark):
                db = self.run_traced([prog('seed_leak'), 'fixed', mark, str(self.STEPS)], name='fixed-%s.db' % mark)
                d = self.json('growth', db)
                self.assertEqual((d['iteration_source'], d['iterations']), (source, self.STEPS))
                self.assertEqual(d['verdict'], 'stable')
                self.assertEqual(d['slope_bytes_per_iteration'], 0)
                self.assertEqual(d['sites'], [])
                leaks = self.json('leaks', db)
                self.assertEqual((leaks['total_bytes'], leaks['total_count'], leaks['cached_bytes']), (0, 0, 0))
                self.assertEqual(self.gputrace('growth', '--fail-above', '1', db).returncode, 0)

    def test_fail_above_fails_the_leak_and_passes_the_fix(self):
        leak = self.run_traced([prog('seed_leak'), 'leak', 'marker', str(self.STEPS)], name='leak.db')
        fixed = self.run_traced([prog('seed_leak'), 'fixed', 'marker', str(self.STEPS)], name='fixed.db')
        limit = LEAK_BYTES_PER_STEP // 2
        self.assertEqual(self.gputrace('growth', '--fail-above', limit, leak).returncode, 1)
        self.assertEqual(self.gputrace('growth', '--fail-above', limit, fixed).returncode, 0)


class AutomaticIterations(SeedTest):
    """No markers: the loop is found from the repeating allocation pattern."""

    def test_unmarked_loop_count_exact_for_short_and_long_runs(self):
        for steps in (3, 4, 7, 50, 400):
            with self.subTest(steps=steps):
                db = self.run_traced([prog('seed_leak'), 'fixed', 'none', str(steps)], name='auto-%d.db' % steps)
                d = self.json('summary', db)
                self.assertEqual((d['iteration_source'], d['iterations']), ('auto', steps))
                self.assertIn('%d allocations repeats %d times' % (LEAK_ALLOCS_PER_STEP, steps), d['iteration_detection'])

    def test_unmarked_steps_of_a_layer_stack_counted_exactly(self):
        # every step allocates 4 identical activations: the step, not the layer, repeats
        for steps in (3, 9):
            with self.subTest(steps=steps):
                db = self.run_traced(batches_argv('none', MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, [16] * steps), name='%d.db' % steps)
                d = self.json('peak', db)
                self.assertEqual((d['iteration_source'], len(d['iterations'])), ('auto', steps))
                want = fixed_bytes(MLP_PARAMS) + 16 * per_sample_bytes(MLP_INPUT, MLP_WIDTHS)
                self.assertEqual([it['peak_bytes'] for it in d['iterations']], [want] * steps)

    def test_unmarked_iterations_cover_each_step_once(self):
        steps = 12
        db = self.run_traced([prog('seed_leak'), 'fixed', 'none', str(steps)])
        d = self.json('peak', db)
        # the step's peak: model, data, last grads freed; linear1 out + relu
        # out (linear1 out freed), linear2 out, loss, then backward's two
        # temporaries and the four new grads
        base = LEAK_PARAM_BYTES + LEAK_DATA_BYTES
        relu = LEAK_BATCH * LEAK_HIDDEN * F
        out = LEAK_BATCH * LEAK_OUT * F
        peak = base + relu + out + F + out + relu + LEAK_PARAM_BYTES
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], [peak] * steps)

    def test_steps_of_a_realistic_pool_pattern_counted_exactly(self):
        # train_pattern.c: forward of many sizes, backward frees in reverse,
        # optimizer state made at step 0, a logging tensor every 7th step and a
        # larger workspace tried every 5th: no clean stretch is longer than 4
        # steps (a ResNet-50 under cudaMallocAsync gave 4 iterations for 30)
        for steps in (3, 30, 64):
            with self.subTest(steps=steps):
                db = self.run_traced([prog('train_pattern'), str(steps)], name='pattern-%d.db' % steps)
                d = self.json('peak', db)
                self.assertEqual((d['iteration_source'], len(d['iterations'])), ('auto', steps), d['iteration_detection'])
                self.assertIn('recurs once per step', d['iteration_detection'])
                # each iteration starts at the step's input batch (3 MiB), after the parameters
                starts = gtlib.query(db, "SELECT e.t_ns FROM events e JOIN apis a ON a.id = e.api"
                                         " WHERE a.name = 'cudaMallocAsync' AND e.size = ? ORDER BY e.t_ns", (3 << 20,))
                self.assertEqual([it['start_ns'] for it in d['iterations']], [t for (t,) in starts])

    def test_leak_found_without_markers_matches_marked_analysis(self):
        marked = self.json('growth', self.run_traced([prog('seed_leak'), 'leak', 'nvtx', '30'], name='m.db'))
        auto = self.json('growth', self.run_traced([prog('seed_leak'), 'leak', 'none', '30'], name='a.db'))
        self.assertEqual((auto['iterations'], auto['slope_bytes_per_iteration']),
                         (marked['iterations'], marked['slope_bytes_per_iteration']))


class BatchSizeMemory(SeedTest):
    """Seeds 000 and 002: peak per batch size, the memory equation, the largest batch."""

    def check_peaks(self, mark, source):
        db = self.run_traced(batches_argv(mark, CONV_PARAMS, CONV_INPUT, CONV_WIDTHS, SEED000_BATCHES), name='%s.db' % mark)
        d = self.json('peak', db)
        self.assertEqual(d['iteration_source'], source)
        fixed, ps = fixed_bytes(CONV_PARAMS), per_sample_bytes(CONV_INPUT, CONV_WIDTHS)
        self.assertEqual([(it['index'], it['batch_size'], it['peak_bytes']) for it in d['iterations']],
                         [(k, b, fixed + b * ps) for k, b in enumerate(SEED000_BATCHES)])
        self.assertEqual(d['peak_bytes'], fixed + max(SEED000_BATCHES) * ps)
        self.assertEqual([(b['batch_size'], b['peak_bytes']) for b in d['by_batch_size']],
                         sorted((b, fixed + b * ps) for b in SEED000_BATCHES))
        self.assertWithin(d['fit']['fixed_bytes'], fixed)
        self.assertWithin(d['fit']['per_sample_bytes'], ps)
        self.assertGreater(d['fit']['r2'], 0.999)

    def test_seed000_batch_sequence_peaks_exact_with_nvtx(self):
        self.check_peaks('nvtx', 'nvtx')

    def test_seed000_batch_sequence_peaks_exact_with_marker_api(self):
        self.check_peaks('marker', 'marker')

    def test_simulation_agrees_with_closed_form(self):
        # the replay used by the OOM tests gives the same peaks as the equation
        peaks, failure = simulate_batches(CONV_PARAMS, CONV_INPUT, CONV_WIDTHS, SEED000_BATCHES, 1 << 40)
        self.assertIsNone(failure)
        fixed, ps = fixed_bytes(CONV_PARAMS), per_sample_bytes(CONV_INPUT, CONV_WIDTHS)
        self.assertEqual(peaks, [fixed + b * ps for b in SEED000_BATCHES])

    def capacity_and_max_batch(self):
        fixed, ps = fixed_bytes(MLP_PARAMS), per_sample_bytes(MLP_INPUT, MLP_WIDTHS)
        capacity = fixed + 700 * ps + ps // 2   # room for 700.5 samples: 700 fit
        return capacity, (capacity - fixed) // ps

    def test_seed002_equation_fit_and_largest_batch_that_fits_the_device(self):
        capacity, max_bs = self.capacity_and_max_batch()
        self.assertEqual(max_bs, 700)
        db = self.run_traced(batches_argv('nvtx', MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, [16, 32, 64, 128, 256]),
                             FAKE_CUDA_DEVICE_BYTES=capacity, LD_LIBRARY_PATH=gtlib.WITH_NVML)
        d = self.json('peak', db)
        self.assertWithin(d['fit']['fixed_bytes'], fixed_bytes(MLP_PARAMS))
        self.assertWithin(d['fit']['per_sample_bytes'], per_sample_bytes(MLP_INPUT, MLP_WIDTHS))
        self.assertEqual(d['device_total_bytes'], capacity)
        self.assertEqual(d['max_batch_size'], max_bs)
        # and the stand-in agrees: max_bs trains, one more runs out of memory
        self.run_traced(batches_argv('none', MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, [max_bs]), name='fits.db',
                        FAKE_CUDA_DEVICE_BYTES=capacity)
        self.run_traced(batches_argv('none', MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, [max_bs + 1]), name='oom.db',
                        rc=1, FAKE_CUDA_DEVICE_BYTES=capacity)

    def test_oom_request_live_bytes_and_how_much_smaller_the_batch(self):
        capacity, max_bs = self.capacity_and_max_batch()
        batches = [32, 64, 128, 1024]
        peaks, failure = simulate_batches(MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, batches, capacity)
        self.assertIsNotNone(failure)
        step, requested, live = failure
        db = self.run_traced(batches_argv('nvtx', MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, batches), rc=1,
                             FAKE_CUDA_DEVICE_BYTES=capacity, LD_LIBRARY_PATH=gtlib.WITH_NVML)
        d = self.json('oom', db)
        self.assertEqual(len(d['failures']), 1)
        f = d['failures'][0]
        self.assertEqual((f['requested_bytes'], f['live_bytes']), (requested, live))
        self.assertEqual(f['device_total_bytes'], capacity)
        self.assertEqual(f['needed_bytes'], requested + live - capacity)
        self.assertEqual(f['batch_size'], batches[step])
        self.assertEqual(f['batch_size_reduction'], batches[step] - max_bs)
        self.assertTrue(any(frames_name(s, 'layer_forward') for s in f['sites']), f['sites'])
        # the completed steps' peaks are still exact, the failed one is not fitted
        p = self.json('peak', db)
        self.assertEqual([it['peak_bytes'] for it in p['iterations']][:step], peaks)
        self.assertEqual(p['max_batch_size'], max_bs)
        text = self.ok('oom', db).stdout
        self.assertIn('%d smaller' % (batches[step] - max_bs), text)


class AllocatedVersusReserved(SeedTest):
    """Seed 004: a caching allocator's segments are reserved memory, kept to
    exit by design: reported as cached, not as a leak; a real leak beside
    them is still a leak; peaks are of reserved memory."""
    PER_SAMPLE = 96 * 1024
    BATCHES = SEED000_BATCHES
    SEG = 2 << 20
    VOCABULARY = 3 << 20
    WEIGHTS = 5 << 20

    def simulate(self):
        """Replays caching_allocator.c: (segment sizes at exit, reserved peak
        per step, the tensors' allocated peak)."""
        segs = []   # [bytes, in_use]
        reserved, allocated, max_allocated = 0, 0, 0

        def malloc(n):
            nonlocal reserved, allocated, max_allocated
            want = -(-n // self.SEG) * self.SEG
            free = [s for s in segs if not s[1] and s[0] >= want]
            if free:
                s = min(free, key=lambda s: s[0])
            else:
                s = [want, False]
                segs.append(s)
                reserved += want
            s[1] = True
            allocated += n
            max_allocated = max(max_allocated, allocated)
            return s

        def release(s, n):
            nonlocal allocated
            s[1] = False
            allocated -= n

        malloc(self.WEIGHTS)
        peaks = []
        for bs in self.BATCHES:
            act = malloc(bs * self.PER_SAMPLE)
            grad = malloc(bs * self.PER_SAMPLE // 2)
            release(grad, bs * self.PER_SAMPLE // 2)
            release(act, bs * self.PER_SAMPLE)
            peaks.append(reserved)
        return [s[0] for s in segs], peaks, max_allocated

    def test_segments_kept_to_exit_are_cached_and_the_vocabulary_is_held_for_the_run(self):
        db = self.run_traced([prog('caching_allocator'), str(self.PER_SAMPLE)] + [str(b) for b in self.BATCHES])
        segs, _, _ = self.simulate()
        d = self.json('leaks', db)
        self.assertEqual((d['cached_bytes'], d['cached_count']), (sum(segs), len(segs)))
        # the vocabulary table, loaded once before the loop and never freed, is held for the run: not a leak
        self.assertEqual((d['total_bytes'], d['total_count']), (0, 0))
        self.assertEqual((d['held_for_run_bytes'], d['held_for_run_count']), (self.VOCABULARY, 1))
        self.assertTrue(frames_name(d['held_for_run_sites'][0], 'load_vocabulary_table'),
                        d['held_for_run_sites'][0]['frames'])
        text = self.ok('leaks', db).stdout
        self.assertIn('Cached (held until exit by a caching allocator or a library handle, not counted as leaks): %.2f MiB in %d allocations'
                      % (sum(segs) / (1 << 20), len(segs)), text)

    def test_peak_is_reserved_memory_which_stays_at_the_largest_batch(self):
        db = self.run_traced([prog('caching_allocator'), str(self.PER_SAMPLE)] + [str(b) for b in self.BATCHES])
        segs, reserved_peaks, max_allocated = self.simulate()
        d = self.json('peak', db)
        want = [self.VOCABULARY + r for r in reserved_peaks]
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], want)
        # decreasing the batch does not give memory back (seed 000's question),
        # and reserved is above what the tensors ever used (seed 004's)
        self.assertEqual(len(set(want)), 1)
        self.assertEqual(d['peak_bytes'], self.VOCABULARY + sum(segs))
        self.assertGreater(sum(segs), max_allocated)
        self.assertEqual(self.json('growth', db)['verdict'], 'stable')

    def test_growing_segments_are_said_to_be_segments_not_the_kept_tensor(self):
        # batch sizes rising every step: each step needs a new, larger segment,
        # requested through DeviceCachingAllocator_malloc
        db = self.run_traced([prog('caching_allocator'), str(self.PER_SAMPLE)] + [str(b) for b in range(8, 80, 8)])
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'growing')
        self.assertTrue(frames_name(d['sites'][0], 'DeviceCachingAllocator_malloc'), d['sites'][0]['frames'])
        self.assertIs(d['sites_are_segments'], True)
        self.assertIn('the request that needed a new segment', self.ok('growth', db).stdout)

    def test_a_cache_growing_to_the_largest_batch_yet_is_told_how_it_grew(self):
        # batch sizes that vary from step to step (as sequence lengths do with
        # dynamic padding): the cache grows in steps, each when a step needs
        # more than any before, then holds; at device level a leak that fills
        # its segments first looks the same, and growth says so
        self.BATCHES = [4, 6, 5, 8, 7, 9, 6, 10, 8, 11, 9, 7, 12, 10, 8, 13, 9, 11, 12, 10]
        self.PER_SAMPLE = 1100 * 1000
        db = self.run_traced([prog('caching_allocator'), str(self.PER_SAMPLE)] + [str(b) for b in self.BATCHES])
        _, reserved, _ = self.simulate()
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'growing')
        fitted = reserved[d['warmup']:]   # every step closes its range: all after warm-up are fitted
        steps = sum(1 for a, b in zip(fitted, fitted[1:]) if b > a)
        tail = len(fitted) - max(k for k in range(len(fitted)) if k == 0 or fitted[k] != fitted[k - 1])
        self.assertEqual((d['growth_steps'], d['growth_steps_at_new_highs'], d['steady_tail_iterations']),
                         (steps, steps, tail))
        self.assertGreaterEqual(tail, 3)   # the workload is the case
        text = self.ok('growth', db).stdout
        self.assertIn('how it grew: at %d of %d iterations (each one whose peak was the highest yet); the last %d'
                      % (steps, len(fitted) - 1, tail), text)
        self.assertIn('a caching allocator\n   reserving for the largest batch or shape yet grows so', text)
        self.assertIn('in %d steps; the last %d iterations ended holding the same bytes' % (steps, tail),
                      self.ok('summary', db).stdout)
        # a verdict of stable (a threshold above the growth) gets no word of how it grew
        out = self.ok('growth', '--threshold', str(100 << 20), db).stdout
        self.assertIn('-> stable', out)
        self.assertNotIn('how it grew', out)
        self.assertNotIn('reserving for the largest batch', out)
        # batch sizes rising every step: a step at every iteration, no steady end, no such word
        self.BATCHES = list(range(8, 80, 8))
        db = self.run_traced([prog('caching_allocator'), str(self.PER_SAMPLE)] + [str(b) for b in self.BATCHES],
                             name='rising.db')
        _, reserved, _ = self.simulate()
        d = self.json('growth', db)
        fitted = reserved[d['warmup']:]
        self.assertTrue(all(b > a for a, b in zip(fitted, fitted[1:])))
        self.assertEqual((d['growth_steps'], d['steady_tail_iterations']), (len(fitted) - 1, 1))
        self.assertNotIn('reserving for the largest batch', self.ok('growth', db).stdout)

    def test_a_direct_allocation_that_grows_is_not_called_a_segment(self):
        db = self.run_traced([prog('seed_leak'), 'leak', 'marker', str(30)])
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'growing')
        self.assertIs(d['sites_are_segments'], False)
        self.assertNotIn('new segment', self.ok('growth', db).stdout)


class BadInputOnRealTraces(SeedTest):
    """Bad input cases on traces written by the shim (test_analyzer_badinput.py
    covers each case on synthetic traces)."""

    def test_one_unmarked_step_has_no_iterations_growth_exits_8(self):
        # its four identical layer allocations repeat, but free nothing between
        # repetitions: a layer stack, not a loop (once taken for 4 "growing"
        # iterations)
        db = self.run_traced(batches_argv('none', MLP_PARAMS, MLP_INPUT, MLP_WIDTHS, [16]))
        self.assertIn('no iterations', self.assertOneErrorLine(self.gputrace('growth', db), 8, db))
        d = self.json('peak', db)   # peak still answers, for the whole run
        self.assertEqual(d['peak_bytes'], fixed_bytes(MLP_PARAMS) + 16 * per_sample_bytes(MLP_INPUT, MLP_WIDTHS))

    def test_iterations_none_turns_a_marked_loop_into_no_iterations(self):
        db = self.run_traced([prog('seed_leak'), 'leak', 'nvtx', '10'])
        self.assertOneErrorLine(self.gputrace('growth', '--iterations', 'none', db), 8, db)

    def test_shim_trace_truncated_at_a_page_boundary_exits_4(self):
        db = self.run_traced([prog('seed_leak'), 'leak', 'none', '3000'])
        with open(db, 'rb') as f:
            data = f.read()
        page = int.from_bytes(data[16:18], 'big') or 65536
        cut = os.path.join(self.dir, 'cut.db')
        with open(cut, 'wb') as f:
            f.write(data[:(len(data) // page // 2) * page])
        for cmd in ('summary', 'leaks', 'growth', 'peak'):
            self.assertOneErrorLine(self.gputrace(cmd, cut), 4, cut)
