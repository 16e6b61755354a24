"""gputrace reports answer the seeds' questions with exact numbers: leaks and
growth (seed 001), peak per batch size and the fit (seeds 000, 002, 003), OOM
context (seed 004), top call sites, summary, several files at once. Every
expected number is computed from what the workload in analyzer_traces.py
planted."""
import json
import os
import sqlite3

import analyzer_traces as T
import gtlib


def frames_text(site):
    return ' '.join(site['frames'])


class LeakAndGrowth(T.AnalyzerTest):
    """Seed 001: a retained tensor per iteration, and the fixed loop."""

    def test_leak_detected_with_planting_function_in_top_site(self):
        db = T.leak_retained(self.dir)
        d = self.json('leaks', db)
        self.assertEqual(d['total_bytes'], T.LEAK_ITERATIONS * T.LEAK_RETAINED_BYTES)
        self.assertEqual(d['total_count'], T.LEAK_ITERATIONS)
        self.assertEqual(len(d['sites']), 1)
        top = d['sites'][0]
        self.assertEqual(top['bytes'], T.LEAK_ITERATIONS * T.LEAK_RETAINED_BYTES)
        self.assertEqual(top['count'], T.LEAK_ITERATIONS)
        self.assertIn(T.LEAK_PLANTING_FUNCTION, frames_text(top))
        self.assertEqual(top['frames'][0], 'relu_forward (leak_retained)')   # innermost first, module basename
        self.assertEqual(d['cached_bytes'], 0)

    def test_leaks_text_names_planting_function_and_size(self):
        db = T.leak_retained(self.dir)
        out = self.ok('leaks', db).stdout
        self.assertIn('5.00 MiB in 20 allocations at 1 call site', out)
        self.assertIn(T.LEAK_PLANTING_FUNCTION, out)

    def test_growth_slope_within_1pct_of_planted_bytes_per_iteration(self):
        db = T.leak_retained(self.dir)
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'growing')
        self.assertEqual(d['iteration_source'], 'nvtx')
        self.assertEqual(d['iterations'], T.LEAK_ITERATIONS)
        self.assertWithin(d['slope_bytes_per_iteration'], T.LEAK_RETAINED_BYTES)
        self.assertIn(T.LEAK_PLANTING_FUNCTION, frames_text(d['sites'][0]))
        self.assertWithin(d['sites'][0]['bytes_per_iteration'], T.LEAK_RETAINED_BYTES)
        self.assertEqual(len(d['sites']), 1)   # nothing else grows

    def test_growth_live_bytes_at_each_iteration_end_exact(self):
        db = T.leak_retained(self.dir)
        d = self.json('growth', db)
        base = 2 * sum(T.LEAK_WEIGHTS) + T.LEAK_BATCH * T.LEAK_IN * 4 + T.LEAK_BATCH * 4   # weights, grads, data
        expected = [base + (k + 1) * T.LEAK_RETAINED_BYTES for k in range(T.LEAK_ITERATIONS)]
        self.assertEqual(d['live_bytes_at_iteration_end'], expected)
        self.assertEqual(d['warmup'], 1)
        self.assertEqual(d['iterations_fitted'], T.LEAK_ITERATIONS - 1)

    def test_fixed_loop_is_stable_and_leak_free(self):
        db = T.leak_fixed(self.dir)
        g = self.json('growth', db)
        self.assertEqual(g['verdict'], 'stable')
        self.assertEqual(g['slope_bytes_per_iteration'], 0)
        self.assertEqual(g['sites'], [])
        leaks = self.json('leaks', db)
        self.assertEqual((leaks['total_bytes'], leaks['total_count'], leaks['sites']), (0, 0, []))
        self.assertIn('No leaks', self.ok('leaks', db).stdout)

    def test_fail_above_exits_1_only_when_slope_exceeds_limit(self):
        leaky, fixed = T.leak_retained(self.dir), T.leak_fixed(self.dir)
        p = self.gputrace('growth', '--fail-above', T.LEAK_RETAINED_BYTES - 1, leaky)
        line = self.assertOneErrorLine(p, 1, leaky)
        self.assertIn('--fail-above', line)
        self.ok('growth', '--fail-above', T.LEAK_RETAINED_BYTES, leaky)
        self.ok('growth', '--fail-above', '0', fixed)
        self.assertEqual(self.gputrace('growth', '--fail-above', '1K', '--json', leaky).returncode, 1)

    def test_threshold_above_slope_makes_growth_stable(self):
        db = T.leak_retained(self.dir)
        self.assertEqual(self.json('growth', '--threshold', '1M', db)['verdict'], 'stable')

    def test_warmup_option_changes_fitted_iterations(self):
        db = T.leak_retained(self.dir)
        d = self.json('growth', '--warmup', '5', db)
        self.assertEqual(d['iterations_fitted'], T.LEAK_ITERATIONS - 5)
        self.assertWithin(d['slope_bytes_per_iteration'], T.LEAK_RETAINED_BYTES)

    def test_a_warmup_past_every_iteration_says_so(self):
        db = T.leak_retained(self.dir)
        for warm in (T.LEAK_ITERATIONS, 100):
            text = self.ok('growth', '--warmup', str(warm), db).stdout
            self.assertIn('verdict: unknown (--warmup %d skips all %d iterations the trace has: give a smaller --warmup'
                          % (warm, T.LEAK_ITERATIONS), text)
            self.assertEqual(self.json('growth', '--warmup', str(warm), db)['verdict'], 'unknown')

    def test_too_few_iterations_give_unknown_verdict(self):
        db = T.leak_retained(self.dir, iterations=3)
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'unknown')

    def test_killed_process_leaks_say_trace_end(self):
        db = T.leak_retained(self.dir)
        import sqlite3
        con = sqlite3.connect(db)
        con.execute('UPDATE processes SET end_ns = NULL, end_reason = NULL')
        con.commit()
        con.close()
        self.assertFalse(self.json('leaks', db)['process_exited'])
        self.assertIn('did not exit normally', self.ok('leaks', db).stdout)


def frames_name(site, function):
    """Does a JSON site's call stack pass through FUNCTION?"""
    return any(f.split(' (')[0] == function for f in site['frames'])


class HeldForTheRun(T.AnalyzerTest):
    """A training job holds its parameters and optimizer state for its whole
    life: a job ended by os._exit must read clean. Memory that accumulates over
    the loop is the leak; what the last iteration still used is neither."""
    POOL = ['c10::cuda::CUDACachingAllocator::CudaMallocAsync::mallocAsync', 'at::detail::empty_cuda']

    def job(self, leak_every=1, steps=10):
        t = T.Trace(os.path.join(self.dir, 'job.db'), command_line='python train.py')
        a = lambda n, where: t.alloc(n, self.POOL + [where, 'main'], api='cudaMallocAsync')
        params = [a(4 * T.MiB, 'init_model') for _ in range(3)]
        history = []
        for step in range(steps):
            t.push('step %d' % step)
            act = a(8 * T.MiB, 'forward')
            if step == 0:
                state = [a(8 * T.MiB, 'optimizer_step') for _ in range(3)]   # Adam's moments: first step, kept
            if step % leak_every == 0:
                history.append(a(T.MiB, 'keep_history'))
            if step < steps - 1:
                t.free(act)   # the last step's activation is still in use at exit
            t.pop()
        return t.close(), params, state, history

    def test_parameters_and_optimizer_state_are_held_not_leaked(self):
        db, params, state, history = self.job()
        d = self.json('leaks', db)
        self.assertTrue(d['classified_by_iterations'])
        self.assertEqual((d['total_bytes'], d['total_count']), (len(history) * T.MiB, len(history)))
        self.assertTrue(frames_name(d['sites'][0], 'keep_history'), d['sites'][0]['frames'])
        self.assertEqual((d['held_for_run_bytes'], d['held_for_run_count']), (3 * 4 * T.MiB + 3 * 8 * T.MiB, 6))
        self.assertEqual({f.split(' (')[0] for s in d['held_for_run_sites'] for f in s['frames']} & {'init_model', 'optimizer_step'},
                         {'init_model', 'optimizer_step'})
        self.assertEqual((d['at_end_bytes'], d['at_end_count']), (8 * T.MiB, 1))
        self.assertEqual(self.json('summary', db)['leak_bytes'], len(history) * T.MiB)
        text = self.ok('leaks', db).stdout
        self.assertIn('Leaks: 10.00 MiB in 10 allocations at 1 call site, allocated during the loop', text)
        self.assertIn('Held for the run', text)
        self.assertIn('In use when the process ended', text)

    def test_a_clean_job_reads_clean(self):
        db, _, _, _ = self.job(leak_every=100)   # kept only in step 0: held, like optimizer state
        d = self.json('leaks', db)
        self.assertEqual(d['total_bytes'], 0)
        self.assertIn('No leaks: nothing allocated during the loop', self.ok('leaks', db).stdout)

    def test_a_run_that_freed_everything_tells_its_leaks_whatever_its_iterations(self):
        for steps in (10, 2):
            t = T.Trace(os.path.join(self.dir, 'freed%d.db' % steps), command_line='python train.py')
            for step in range(steps):
                t.push('step %d' % step)
                t.free(t.alloc(8 * T.MiB, self.POOL + ['forward', 'main'], api='cudaMallocAsync'))
                t.pop()
            db = t.close()
            d = self.json('leaks', db)
            self.assertEqual((d['total_bytes'], d['iterations'], d['accumulation_told']), (0, steps, True), steps)
            self.assertTrue(self.json('summary', db)['leaks_told'], steps)

    def test_what_only_the_iteration_before_the_last_left_live_is_in_use_not_a_leak(self):
        # a step that fetches the next step's batch at its end (or an automatic iteration that
        # begins inside the step): the last step's batch was allocated in the iteration before
        t = T.Trace(os.path.join(self.dir, 'prefetch.db'), command_line='python train.py')
        a = lambda n, where: t.alloc(n, self.POOL + [where, 'main'], api='cudaMallocAsync')
        params = [a(4 * T.MiB, 'init_model') for _ in range(3)]
        steps, batch = 10, a(2 * T.MiB, 'next_batch')
        for step in range(steps):
            t.push('step %d' % step)
            t.free(a(8 * T.MiB, 'forward'))
            if step < steps - 1:   # the batch for the last step comes at the end of the one before
                t.free(batch)
                batch = a(2 * T.MiB, 'next_batch')
            t.pop()
        db = t.close()
        d = self.json('leaks', db)
        self.assertTrue(d['classified_by_iterations'])
        self.assertEqual(d['total_bytes'], 0, d['sites'])
        self.assertEqual((d['at_end_bytes'], d['at_end_count']), (2 * T.MiB, 1))
        self.assertEqual(d['held_for_run_bytes'], 3 * 4 * T.MiB)
        self.assertIn('No leaks: nothing allocated during the loop (iterations 2 to 9 of 10) accumulated; what was '
                      'live at process end is below.', self.ok('leaks', db).stdout)
        del params

    def test_with_three_iterations_a_leak_in_the_middle_one_is_still_a_leak(self):
        db = T.leak_retained(self.dir, iterations=3)
        d = self.json('leaks', db)
        self.assertTrue(d['classified_by_iterations'])
        self.assertGreater(d['total_bytes'], 0)

    def test_an_occasional_leak_is_still_a_leak(self):
        db, _, _, history = self.job(leak_every=4, steps=13)   # steps 0, 4, 8, 12: all of the site counts
        d = self.json('leaks', db)
        self.assertEqual((d['total_bytes'], d['total_count']), (len(history) * T.MiB, len(history)))

    def test_a_job_that_died_in_its_second_step_splits_held_from_in_use_and_does_not_tell_leaks(self):
        # an H200 conv net out of memory in step 1 (session 33): its ranges
        # "step 0" and "step 1", the second open; the step's activations live
        # at the end are in use, the parameters and step 0's state held, and
        # what accumulates cannot be told from two iterations
        t = T.Trace(os.path.join(self.dir, 'died.db'), command_line='python train.py')
        a = lambda n, where: t.alloc(n, self.POOL + [where, 'main'], api='cudaMallocAsync')
        [a(4 * T.MiB, 'init_model') for _ in range(3)]
        t.push('step 0 bs=268')
        t.free(a(8 * T.MiB, 'forward'))
        [a(8 * T.MiB, 'optimizer_step') for _ in range(2)]
        t.pop()
        t.push('step 1 bs=268')
        for layer in range(6):   # a forward's layers repeat: no pattern to take for the loop
            a(50 * T.MiB, 'conv_forward')
            t.free(a(T.MiB, 'workspace'))
        db = t.close(end_reason='exit')
        d = self.json('leaks', db)
        self.assertTrue(d['classified_by_iterations'])
        self.assertEqual((d['iterations'], d['accumulation_told'], d['total_bytes']), (2, False, 0))
        self.assertEqual((d['held_for_run_bytes'], d['at_end_bytes']), (12 * T.MiB + 16 * T.MiB, 300 * T.MiB))
        text = self.ok('leaks', db).stdout
        self.assertIn('Leaks: not told: 2 iterations, a first and a last', text)
        self.assertIn('In use when the process ended (allocated after the first of 2 iterations): 300.00 MiB', text)
        self.assertNotIn('No leaks', text)
        s = self.json('summary', db)
        self.assertEqual((s['iteration_source'], s['iterations'], s['leaks_told']), ('nvtx', 2, False))
        self.assertIn('leaks: not told (2 iterations', self.ok('summary', db).stdout)
        # with 3 iterations or more the figures are told
        self.assertTrue(self.json('summary', self.job()[0])['leaks_told'])
        self.assertTrue(self.json('leaks', self.job()[0])['accumulation_told'])
        self.assertIn('optimizer state and the like; with 2 iterations not told from a leak', text)
        db = self.job()[0]
        self.assertFalse(self.json('summary', '--iterations', 'none', db)['leaks_told'])
        self.assertIn('live at exit, not told from memory held for the run (fewer than 2 iterations',
                      self.ok('summary', '--iterations', 'none', db).stdout)

    def test_without_iterations_everything_live_is_reported_and_the_reason_given(self):
        db, params, state, history = self.job(steps=10)
        d = self.json('leaks', '--iterations', 'none', db)
        self.assertFalse(d['classified_by_iterations'])
        self.assertEqual(d['total_count'], 3 + 3 + len(history) + 1)
        self.assertIn('cannot be told from memory that accumulates', self.ok('leaks', '--iterations', 'none', db).stdout)


class CachingAllocator(T.AnalyzerTest):
    """PyTorch's default allocator keeps its segments: cached, not leaked."""

    def test_segments_held_until_exit_are_cached_not_leaks(self):
        db = T.batch_sequence_caching(self.dir)
        d = self.json('leaks', db)
        segments = T.caching_segments_for(max(T.seq_peak(b) for b in T.SEQ_BATCHES))
        self.assertEqual(d['total_bytes'], 0)
        self.assertEqual(d['sites'], [])
        self.assertEqual(d['cached_bytes'], segments * T.CACHING_SEGMENT)
        self.assertEqual(d['cached_count'], segments)
        self.assertIn('CUDACachingAllocator', frames_text(d['cached_sites'][0]))
        out = self.ok('leaks', db).stdout
        self.assertIn('held until exit by a caching allocator or a library handle', out)

    def test_text_folds_the_allocators_own_frames_json_keeps_them(self):
        # every PyTorch site starts with the same allocator frames; text starts
        # at the first frame that is not one, JSON keeps the whole stack
        db = T.batch_sequence_caching(self.dir)
        folded = T.CACHING_FRAMES.index('train_step')
        out = self.ok('leaks', db).stdout
        self.assertRegex(out, r'\[%d allocator frames\] train_step \(' % folded)
        self.assertNotIn('DeviceCachingAllocator::malloc', out)
        full = self.ok('leaks', '--allocator-frames', db).stdout
        self.assertRegex(full, r'  c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc \(')
        self.assertNotIn('allocator frames]', full)
        d = self.json('leaks', db)
        self.assertEqual([f.split(' (')[0] for f in d['cached_sites'][0]['frames']], T.CACHING_FRAMES)
        self.assertEqual(d['cached_sites'][0]['allocator_frames'], folded)

    def test_a_library_handles_workspace_is_cached_a_leak_beside_it_is_not(self):
        # PyTorch keeps its cuBLAS handles to exit: their workspaces (cuBLAS's
        # own cuMemAlloc_v2, frames unnamed in the stripped library) are not
        # a leak; the program's own allocation kept to exit is
        t = T.Trace(os.path.join(self.dir, 'cublas.db'), command_line='python train.py')
        t.alloc(64 * T.MiB, ['libcublas.so.13+0x5b45ee', 'cublasCreate_v2', 'at::cuda::getCurrentCUDABlasHandle', 'main'],
                api='cuMemAlloc_v2')
        t.alloc(3 * T.MiB, ['load_weights', 'main'])
        d = self.json('leaks', t.close())
        self.assertEqual((d['total_bytes'], d['cached_bytes']), (3 * T.MiB, 64 * T.MiB))
        self.assertEqual(d['sites'][0]['frames'][0].split(' (')[0], 'load_weights')

    def test_without_stacks_the_caching_pattern_is_recognised(self):
        db = T.batch_sequence_caching(self.dir, stack_depth=0)
        d = self.json('leaks', db)
        segments = T.caching_segments_for(max(T.seq_peak(b) for b in T.SEQ_BATCHES))
        self.assertEqual((d['total_bytes'], d['cached_bytes']), (0, segments * T.CACHING_SEGMENT))

    def test_no_cache_heuristic_reports_segments_as_leaks(self):
        db = T.batch_sequence_caching(self.dir)
        d = self.json('leaks', '--no-cache-heuristic', db)
        segments = T.caching_segments_for(max(T.seq_peak(b) for b in T.SEQ_BATCHES))
        # nothing is called cached; the segments, reserved in the first iteration (batch 64), are held for the run
        self.assertEqual((d['total_bytes'], d['held_for_run_bytes'], d['cached_bytes']),
                         (0, segments * T.CACHING_SEGMENT, 0))

    def test_pool_tensors_of_the_async_backend_live_at_exit_are_leaks_not_cache(self):
        # PyTorch's cudaMallocAsync backend: one pool allocation per tensor,
        # through c10::cuda frames. Tensors kept to exit are held, not cached.
        t = T.Trace(os.path.join(self.dir, 'async_backend.db'), command_line='python train.py')
        torch = ['c10::cuda::CUDACachingAllocator::CudaMallocAsync::mallocAsync',
                 'c10::cuda::CUDACachingAllocator::CudaMallocAsync::CudaMallocAsyncAllocator::allocate',
                 'at::detail::empty_cuda']
        kept = [t.alloc(3 * T.MiB, torch + ['retain_history', 'main'], api='cudaMallocAsync') for _ in range(5)]
        for _ in range(5):
            t.free(t.alloc(7 * T.MiB, torch + ['forward', 'main'], api='cudaMallocAsync'))
        db = t.close()
        d = self.json('leaks', db)
        self.assertEqual((d['total_bytes'], d['total_count'], d['cached_bytes']), (15 * T.MiB, len(kept), 0))
        self.assertEqual(d['sites'][0]['frames'][d['sites'][0]['allocator_frames']].split(' (')[0], 'retain_history')

    def test_reserved_memory_stays_at_largest_batch_after_smaller_batches(self):
        # seed 000's question at the device level: a smaller batch does not give memory back
        db = T.batch_sequence_caching(self.dir)
        d = self.json('peak', db)
        reserved = T.caching_segments_for(max(T.seq_peak(b) for b in T.SEQ_BATCHES)) * T.CACHING_SEGMENT
        self.assertEqual(d['memory'], 'device')
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], [reserved] * len(T.SEQ_BATCHES))


class LongRunKernelsSampled(T.AnalyzerTest):
    """A job that allocates nothing per step has iterations from its kernels,
    which are sampled by default: every kernel for the first 5 s, then 1 s of
    every 20. Growth over the run also counts the steps the later windows
    show (placed at the iterations' pace), fitted over the windows' medians,
    and growing only when the level rose across at least 2 gaps between
    windows."""

    def growth(self, **kw):
        return self.json('growth', T.kernels_sampled_run(self.dir, **kw))

    def test_a_cache_that_creeps_up_after_the_first_seconds_reads_growing(self):
        # before: "stable, 0 B per iteration" from the first 5 s alone
        full, seen = self.growth(sampled=False), self.growth()
        self.assertEqual((full['verdict'], seen['verdict']), ('growing', 'growing'))
        self.assertEqual(seen['iterations'], 50)   # the iterations themselves: the first span's
        self.assertGreaterEqual(seen['later_steps_fitted'], 10)
        # a window at a random moment of each 20 s after the first 5: 3 or 4 with the first,
        # the level higher at each
        self.assertIn(seen['kernel_windows_fitted'], (3, 4))
        self.assertEqual(seen['window_rises'], seen['kernel_windows_fitted'] - 1)
        self.assertIsNone(seen['one_off_step_bytes'])   # a step up at every gap: growth
        self.assertEqual(seen['later_steps_placed_at_ns'], 100 * 10**6)
        self.assertIsNone(full['later_steps_placed_at_ns'])
        # 20 MiB every 50 steps: 419,430 B a step over the run
        self.assertWithin(full['slope_bytes_per_iteration'], 20 * T.MiB / 50, rel=0.05)
        self.assertWithin(seen['slope_bytes_per_iteration'], 20 * T.MiB / 50, rel=0.1)
        self.assertEqual(seen['sites'][0]['frames'][seen['sites'][0]['allocator_frames']].split(' (')[0], 'train.py:42')
        text = self.ok('growth', T.kernels_sampled_run(self.dir)).stdout
        self.assertIn('medians of %d kernel windows' % seen['kernel_windows_fitted'], text)
        self.assertIn('placed at about 100.000 ms a step', text)
        self.assertIn('rose across %d of the %d gaps' % ((seen['kernel_windows_fitted'] - 1,) * 2), text)
        summary = self.ok('summary', T.kernels_sampled_run(self.dir)).stdout
        self.assertIn('growth: growing', summary)
        self.assertIn('with steps seen in later kernel windows', summary)

    def test_a_cache_that_holds_stays_stable_over_the_later_windows(self):
        d = self.growth(keep_every=None)
        self.assertEqual((d['verdict'], d['slope_bytes_per_iteration']), ('stable', 0))
        self.assertGreaterEqual(d['later_steps_fitted'], 10)

    def test_one_step_up_between_windows_is_no_growth(self):
        # a checkpoint of 400 MiB loaded once at 15 s, held: the level rose across one
        # gap (a line through the windows would read 1 MB an iteration)
        d = self.growth(keep_every=None, jump_at_s=15)
        self.assertEqual((d['verdict'], d['slope_bytes_per_iteration'], d['window_rises']), ('stable', 0, 1))
        self.assertEqual(d['one_off_step_bytes'], 400 * T.MiB)
        text = self.ok('growth', T.kernels_sampled_run(self.dir, keep_every=None, jump_at_s=15)).stdout
        self.assertIn('a one-off step, not growth', text)

    def test_memory_that_rises_and_falls_every_twenty_seconds_or_so_is_no_growth(self):
        # segments taken every 2 s and given back every 19.5 s, 10 minutes: windows at a
        # fixed moment of each 20 s (the shim's first schedule) caught them at a phase
        # creeping up, 24 KB an iteration; at a random moment each, as the shim now puts them
        d = self.growth(keep_every=None, churn_s=19.5, steps=6000)
        self.assertEqual((d['verdict'], d['slope_bytes_per_iteration']), ('stable', 0))
        self.assertGreater(d['kernel_windows_fitted'], 20)

    def test_a_leak_under_that_churn_reads_growing(self):
        # a 20 MiB segment kept every 30 s, the churn given back every 13 s
        full, seen = self.growth(keep_every=300, churn_s=13, steps=6000, sampled=False), \
            self.growth(keep_every=300, churn_s=13, steps=6000)
        self.assertEqual((full['verdict'], seen['verdict']), ('growing', 'growing'))
        self.assertWithin(seen['slope_bytes_per_iteration'], full['slope_bytes_per_iteration'], rel=0.15)

    def test_later_windows_of_other_work_give_no_steps(self):
        # their kernels are no step's: nothing to place, the first span's answer
        d = self.growth(later='other')
        self.assertEqual((d['later_steps_fitted'], d['verdict']), (0, 'stable'))

    def test_steps_at_another_pace_are_not_placed(self):
        # how many steps ran between windows is not known: the iterations' own verdict, told
        d = self.growth(later_step_ms=180)
        self.assertEqual(d['later_steps_fitted'], 0)
        self.assertGreater(d['later_steps_seen'], 10)
        text = self.ok('growth', T.kernels_sampled_run(self.dir, later_step_ms=180)).stdout
        self.assertIn('steps seen in later kernel windows are not fitted', text)

    def test_steps_of_a_window_before_the_iterations_escape_no_warm_up(self):
        # set-up kernels fill the first window: the iterations come from the one at 25 s,
        # and the cache's warm-up in the first window's steps is not growth
        d = self.growth(keep_every=None, setup_steps=41, steps=300)
        self.assertEqual((d['iterations'], d['later_steps_fitted'], d['verdict']), (10, 0, 'stable'))


class PreallocatingFramework(T.AnalyzerTest):
    """JAX under preallocation: one allocation of a large share of the device before the loop,
    its arrays carved inside it out of the trace's sight. Its steps are found from their kernels;
    that nothing grew or accumulated outside the pool says nothing of what it keeps inside."""

    def test_growth_and_leaks_are_not_told_inside_the_pool(self):
        db = T.xla_compile_staging(self.dir, kernel_steps=20)
        g = self.json('growth', db)
        self.assertEqual(g['iterations'], 20)
        self.assertEqual((g['verdict'], g['preallocated_bytes']), ('unknown', 100 * T.GiB))
        self.assertEqual(g['slope_bytes_per_iteration'], 0)   # what the trace sees: nothing
        text = self.ok('growth', db).stdout
        self.assertIn('-> unknown', text)
        self.assertIn('(not told: one allocation of 100.00 GiB, 78% of device 0, was made before the loop and held',
                      text)
        self.assertIn('XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform', text)
        l = self.json('leaks', db)
        self.assertEqual((l['total_bytes'], l['accumulation_told'], l['preallocated_bytes']), (0, False, 100 * T.GiB))
        text = self.ok('leaks', db).stdout
        self.assertTrue(text.startswith('Leaks: not told: one allocation of 100.00 GiB, 78% of device 0'), text)
        self.assertNotIn('No leaks', text)
        self.assertIn('Outside the pool: nothing allocated during the loop', text)
        s = self.json('summary', db)
        self.assertEqual((s['growth_verdict'], s['leaks_told'], s['preallocated_bytes']), ('unknown', False, 100 * T.GiB))
        text = self.ok('summary', db).stdout
        self.assertIn("leaks: not told (a preallocating framework's arrays lie inside its one allocation of 78% of "
                      "device 0; gputrace leaks)", text)
        self.assertIn("growth: unknown (a preallocating framework's arrays lie inside its one allocation of 78% of "
                      "device 0, out of sight; gputrace growth)", text)

    def test_without_iterations_a_pool_given_back_at_exit_still_hides_its_arrays(self):
        # the GPU's JAX trace of 20 steps: no iterations found, the pool freed at exit
        for free_pool in (False, True):
            with self.subTest(free_pool=free_pool):
                db = T.xla_compile_staging(self.dir, free_pool=free_pool)
                l = self.json('leaks', db)
                self.assertEqual((l['iterations'], l['total_bytes'], l['accumulation_told'], l['preallocated_bytes']),
                                 (0, 0, False, 100 * T.GiB))
                text = self.ok('leaks', db).stdout
                self.assertTrue(text.startswith('Leaks: not told: one allocation of 100.00 GiB, 78% of device 0, was '
                                                'made early and held'), text)

    def test_the_last_iteration_open_to_the_end_is_marked_in_the_list(self):
        # its end is the trace's (after JAX gave the pool back): a level no step ended at
        text = self.ok('growth', T.xla_compile_staging(self.dir, kernel_steps=20, free_pool=True)).stdout
        line = next(l for l in text.splitlines() if l.startswith('  live at iteration end:'))
        self.assertTrue(line.endswith('0 B (the last, not closed, runs to the end of the record: not fitted)'), line)
        # marked iterations are each closed: no mark
        text = self.ok('growth', T.leak_retained(self.dir)).stdout
        self.assertIn('  live at iteration end:', text)
        self.assertNotIn('not closed', text)

    def test_a_pool_of_a_smaller_share_hides_its_arrays_as_well(self):
        # XLA_PYTHON_CLIENT_MEM_FRACTION=0.16 (processes sharing a GPU): 20 of 128 GiB; and 8
        for gib, pct in ((20, 16), (8, 6)):
            with self.subTest(gib=gib):
                db = T.xla_compile_staging(self.dir, kernel_steps=20, pool_gib=gib)
                g = self.json('growth', db)
                self.assertEqual((g['verdict'], g['preallocated_bytes']), ('unknown', gib * T.GiB))
                l = self.json('leaks', db)
                self.assertEqual((l['accumulation_told'], l['preallocated_bytes']), (False, gib * T.GiB))
                self.assertTrue(self.ok('leaks', db).stdout.startswith(
                    'Leaks: not told: one allocation of %d.00 GiB, %d%% of device 0, was made before the loop'
                    % (gib, pct)))

    def test_a_stream_ordered_allocation_elsewhere_does_not_hide_the_pool(self):
        # with one cudaMallocAsync in the trace the commands look at pool memory; the
        # framework's pool is device memory, and still its arrays' home
        db = T.xla_compile_staging(self.dir, kernel_steps=20, async_alloc=True)
        for cmd in ('growth', 'leaks'):
            self.assertEqual(self.json(cmd, db)['preallocated_bytes'], 100 * T.GiB, cmd)
        self.assertEqual(self.json('growth', db)['verdict'], 'unknown')
        self.assertIs(self.json('peak', db)['preallocated'], True)

    def test_a_growing_pools_regions_hide_their_arrays_too(self):
        # XLA_PYTHON_CLIENT_PREALLOCATE=false alone: the BFC allocator grows by regions of
        # 2, 4, 8 ... MiB, and the arrays lie inside them the same way
        t = T.Trace(os.path.join(self.dir, 'bfc-growth.db'))
        for k in range(10):
            t.alloc((2 << k) * T.MiB, ['tsl::BFCAllocator::Extend', 'main'], api='cuMemAlloc_v2')
        for step in range(6):
            t.push('step %d' % step)
            t.kernel('fusion')
            t.pop()
        db = t.close()
        g = self.json('growth', db)
        self.assertEqual((g['verdict'], g['preallocated_bytes']), ('unknown', 2046 * T.MiB))
        text = self.ok('growth', db).stdout
        self.assertIn('(not told: 10 allocations of 2.00 GiB in all, 2% of device 0, were made before the loop and '
                      'held', text)
        self.assertIn('carves its arrays inside them', text)
        self.assertIn("growth: unknown (a preallocating framework's arrays lie inside its 10 allocations, 2% of device 0",
                      self.ok('summary', db).stdout)

    def test_a_pool_beside_a_frameworks_own_memory_is_not_its_pool(self):
        # RAPIDS' pool made for preprocessing (4 GiB) beside the 20 GiB a PyTorch job holds in
        # its own segments: the loop's memory is the job's, seen; its growth is told
        t = T.Trace(os.path.join(self.dir, 'rmm-beside.db'))
        t.alloc(4 * T.GiB, ['rmm::mr::pool_memory_resource::do_allocate', 'cudf::read_parquet', 'main'],
                api='cudaMalloc')
        t.alloc(20 * T.GiB, ['c10::cuda::CUDACachingAllocator::malloc', 'model_to_cuda', 'main'], api='cudaMalloc')
        for step in range(6):
            t.push('step %d' % step)
            t.free(t.alloc(T.MiB, ['c10::cuda::CUDACachingAllocator::malloc', 'forward', 'main'], api='cudaMalloc'))
            t.pop()
        db = t.close()
        self.assertEqual(self.json('growth', db)['verdict'], 'stable')
        self.assertEqual(self.json('leaks', db)['preallocated_bytes'], None)

    def test_without_stacks_only_most_of_the_device_is_a_pool(self):
        # a driver call is weaker evidence than a pooling allocator's frames: at 30% of the
        # device it is a program's buffer; through XLA's or RAPIDS' pool it is a pool
        for name, where, api, pool in (('driver-no-stack', None, 'cuMemAlloc_v2', False),
                                       ('xla', ['tsl::BFCAllocator::Extend', 'main'], 'cuMemAlloc_v2', True),
                                       ('rmm-pool', ['rmm::mr::pool_memory_resource::do_allocate', 'main'],
                                        'cudaMalloc', True)):
            with self.subTest(name=name):
                db = self.big_buffer_then_a_loop('share-' + name, where, api, gib=24)   # 30% of 80 GiB
                self.assertEqual(self.json('growth', db)['preallocated_bytes'], 24 * T.GiB if pool else None)
                self.assertIs(self.json('peak', db)['preallocated'], pool)

    def test_one_large_tensor_of_a_framework_that_allocates_as_needed_is_no_pool(self):
        # PyTorch holding a dataset of 60% of the device: a tensor, whose fellows the trace sees
        t = T.Trace(os.path.join(self.dir, 'dataset.db'))
        t.alloc(48 * T.GiB, ['c10::cuda::CUDACachingAllocator::malloc', 'load_dataset', 'main'], api='cudaMalloc')
        for step in range(6):
            t.push('step %d' % step)
            t.free(t.alloc(T.MiB, ['c10::cuda::CUDACachingAllocator::malloc', 'forward', 'main'], api='cudaMalloc'))
            t.pop()
        db = t.close()
        g = self.json('growth', db)
        self.assertEqual((g['verdict'], g['preallocated_bytes']), ('stable', None))
        l = self.json('leaks', db)
        self.assertEqual((l['accumulation_told'], l['preallocated_bytes']), (True, None))
        self.assertFalse(self.json('peak', db)['preallocated'])

    def big_buffer_then_a_loop(self, name, where, api, iterations=6, gib=48):
        # one allocation of 60% of the 80 GiB device (gib) before the loop, then steps that
        # each allocate and free 1 MiB
        t = T.Trace(os.path.join(self.dir, name + '.db'))
        t.alloc(gib * T.GiB, where, api=api)
        for step in range(iterations):
            t.push('step %d' % step)
            t.free(t.alloc(T.MiB, ['forward', 'main'], api='cudaMalloc'))
            t.pop()
        return t.close()

    def test_only_a_frameworks_pool_is_one_not_any_large_buffer(self):
        # a plain CUDA program's buffer for its data, with stacks or without (site none),
        # and a stream-ordered pool's tensor, are memory the trace sees being used; without
        # stacks a driver call (cuMemAlloc, as XLA makes it) is taken as a framework's
        for name, where, api, pool in (('plain', ['main'], 'cudaMalloc', False),
                                       ('plain-no-stack', None, 'cudaMalloc', False),
                                       ('async-no-stack', None, 'cudaMallocAsync', False),
                                       ('driver-no-stack', None, 'cuMemAlloc_v2', True),
                                       ('driver-plain', ['main'], 'cuMemAlloc_v2', False),
                                       ('xla', ['tsl::BFCAllocator::Extend', 'main'], 'cuMemAlloc_v2', True),
                                       # XLA's platform allocator: each array its own allocation
                                       ('xla-platform', ['stream_executor::gpu::CudaExecutor::Allocate',
                                                         'xla::PjRtStreamExecutorRawClient::AllocateRawBuffer', 'main'],
                                        'cuMemAlloc_v2', False),
                                       ('rmm-pool', ['rmm::mr::pool_memory_resource::do_allocate', 'main'],
                                        'cudaMalloc', True),
                                       ('rmm-plain', ['rmm::mr::cuda_memory_resource::do_allocate', 'main'],
                                        'cudaMalloc', False)):
            with self.subTest(name=name):
                db = self.big_buffer_then_a_loop(name, where, api)
                g, l, p = self.json('growth', db), self.json('leaks', db), self.json('peak', db)
                self.assertEqual((g['verdict'], g['preallocated_bytes']),
                                 ('unknown', 48 * T.GiB) if pool else ('stable', None))
                self.assertEqual((l['accumulation_told'], l['preallocated_bytes']),
                                 (False, 48 * T.GiB) if pool else (True, None))
                self.assertIs(p['preallocated'], pool)
                if not pool:
                    self.assertIn('No leaks', self.ok('leaks', db).stdout)

    def test_two_iterations_beside_a_pool_read_one_leaks_line(self):
        db = self.big_buffer_then_a_loop('two', ['tsl::BFCAllocator::Extend', 'main'], 'cuMemAlloc_v2', iterations=2)
        text = self.ok('leaks', db).stdout
        self.assertEqual([l for l in text.splitlines() if l.startswith('Leaks:')],
                         ['Leaks: not told: 2 iterations, a first and a last; memory that accumulates shows from 3 on '
                          '(run or mark more steps). What was live at process end is below.'])
        self.assertTrue(text.startswith('Note: one allocation of 48.00 GiB, 60% of device 0'), text)

    def test_peak_withholds_for_a_pool_given_back_at_exit_in_a_trace_without_iterations(self):
        # the GPU's JAX trace of 20 steps: no iterations, the pool freed at exit
        d = self.json('peak', T.xla_compile_staging(self.dir, free_pool=True))
        self.assertIs(d['preallocated'], True)

    def test_growth_outside_the_pool_is_still_told(self):
        # what the trace does see grow is growth, pool or not; the pool is said beside it
        db = T.xla_compile_staging(self.dir, kernel_steps=20, keep_per_step=3 * T.MiB)
        g = self.json('growth', db)
        self.assertEqual(g['verdict'], 'growing')
        self.assertWithin(g['slope_bytes_per_iteration'], 3 * T.MiB)
        self.assertIn('train.py:88', frames_text(g['sites'][0]))
        l = self.json('leaks', db)
        self.assertEqual((l['accumulation_told'], l['preallocated_bytes']), (True, 100 * T.GiB))
        self.assertEqual(l['total_bytes'], 20 * 3 * T.MiB)   # a site keeping what later steps make: all of it
        text = self.ok('leaks', db).stdout
        self.assertTrue(text.startswith('Note: one allocation of 100.00 GiB, 78% of device 0'), text)
        self.assertIn('Leaks: 60.00 MiB in 20 allocations', text)


class PeakAndFit(T.AnalyzerTest):
    """Seeds 000/002/003: peak per batch size and peak = fixed + per_sample * bs."""

    def test_batch_sequence_per_iteration_peaks_exact(self):
        db = T.batch_sequence(self.dir)
        d = self.json('peak', db)
        self.assertEqual(d['memory'], 'pool')   # the trace has cudaMallocAsync: tensor level
        self.assertEqual([it['batch_size'] for it in d['iterations']], T.SEQ_BATCHES)
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], [T.seq_peak(b) for b in T.SEQ_BATCHES])
        self.assertEqual([b['batch_size'] for b in d['by_batch_size']], sorted(T.SEQ_BATCHES))
        self.assertEqual([b['peak_bytes'] for b in d['by_batch_size']], [T.seq_peak(b) for b in sorted(T.SEQ_BATCHES)])

    def test_batch_sequence_fit_recovers_fixed_and_per_sample_within_1pct(self):
        db = T.batch_sequence(self.dir)
        fit = self.json('peak', db)['fit']
        self.assertWithin(fit['fixed_bytes'], T.SEQ_FIXED)
        self.assertWithin(fit['per_sample_bytes'], T.SEQ_PER_SAMPLE)
        self.assertGreater(fit['r2'], 0.9999)

    def test_a_number_past_two_to_the_50_in_a_ranges_name_is_no_batch_size(self):
        # its leading digits were read as one: 'bs=2000000000000000' as 200000000000000 (a helper's probe)
        t = T.Trace(os.path.join(self.dir, 'digits.db'))
        for k, text in enumerate(('2000000000000000', '9223372036854775807', '4000000000000000000000')):
            t.push('train_step bs=%s' % text)
            t.free(t.alloc((k + 1) * 64 * T.MiB, ['train_step', 'main']))
            t.pop()
        d = self.json('peak', t.close())
        # (the first is read whole: the digits stop only past 2^50)
        self.assertEqual([it['batch_size'] for it in d['iterations']], [2000000000000000, None, None])
        self.assertEqual([b['batch_size'] for b in d['by_batch_size']], [2000000000000000])

    def test_peaks_that_do_not_follow_batch_size_mark_the_fit_unreliable(self):
        # peaks that barely move with the batch, then jump (no history: each
        # smaller batch after a larger one peaked lower)
        t = T.Trace(os.path.join(self.dir, 'poor.db'))
        peaks = {64: 100 * T.MiB, 8: 90 * T.MiB, 32: 95 * T.MiB, 128: 300 * T.MiB}
        for bs, peak in peaks.items():
            t.push('step batch_size=%d' % bs, batch_size=bs)
            t.free(t.alloc(peak, ['train_step', 'main']))
            t.pop()
        db = t.close()
        d = self.json('peak', db)
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], list(peaks.values()))
        self.assertLess(d['fit']['r2'], 0.9)
        self.assertIs(d['fit']['reliable'], False)
        self.assertIn('the fit is poor', self.ok('peak', db).stdout)
        good = self.json('peak', '--device-bytes', '80G', T.batch_sequence(self.dir))
        self.assertIs(good['fit']['reliable'], True)
        self.assertIsNone(good['max_batch_size_withheld'])

    def test_a_device_too_small_for_batch_size_1_reads_none_not_0(self):
        # --device-bytes asks what fits on a smaller card: one too small for a
        # single sample printed "largest batch size predicted to fit: 0"
        db = T.batch_sequence(self.dir)
        d = self.json('peak', '--device-bytes', '1K', db)
        self.assertEqual(d['max_batch_size'], 0)   # (the JSON's number: no batch size fits)
        text = self.ok('peak', '--device-bytes', '1K', db).stdout
        self.assertIn('largest batch size predicted to fit: none: batch size 1 needs more than the 1.00 KiB available',
                      text)
        self.assertNotIn('predicted to fit: 0', text)

    def test_a_poor_fit_gives_no_largest_batch(self):
        # issue 11: under PyTorch's default allocator a mixed-batch trace said
        # "largest batch 487" with the fit marked unreliable; the truth was 303
        t = T.Trace(os.path.join(self.dir, 'poor.db'), device_total=80 * T.GiB)
        for bs, peak in ((8, 2650), (2, 2600), (6, 2550), (4, 2500), (10, 4360)):
            t.push('step batch_size=%d' % bs, batch_size=bs)
            t.free(t.alloc(peak * T.MiB, ['train_step', 'main']))
            t.pop()
        db = t.close()
        d = self.json('peak', '--device-bytes', '80G', db)
        self.assertIs(d['fit']['reliable'], False)
        self.assertIsNone(d['max_batch_size'])
        self.assertIn('R^2 below 0.9', d['max_batch_size_withheld'])
        text = self.ok('peak', '--device-bytes', '80G', db).stdout
        self.assertIn('no largest batch size', text)
        self.assertNotIn('largest batch size predicted', text)

    def test_caching_allocator_history_lists_new_highs_and_gives_no_number(self):
        # issue 11 part 3: batch sizes 8, 2, 6, 4, 10 in one process under a
        # caching allocator: 8 reserves 2650 MiB in segments, 2, 6 and 4 run
        # inside them, 10 adds segments up to 4360 MiB; one growth failed first
        t = T.Trace(os.path.join(self.dir, 'history.db'), device_total=80 * T.GiB)
        seg = 10 * T.MiB
        reserved = 0
        for bs, peak in ((8, 2650), (2, 2650), (6, 2650), (4, 2650), (10, 4360)):
            t.push('step batch_size=%d' % bs, batch_size=bs)
            if bs == 10:
                t.alloc(1800 * T.MiB, T.CACHING_FRAMES, result=T.CUDA_ERROR_MEMORY_ALLOCATION)
            while reserved < peak * T.MiB:
                t.alloc(seg, T.CACHING_FRAMES)
                reserved += seg
            t.pop()
        db = t.close()
        d = self.json('peak', '--device-bytes', '80G', db)
        self.assertIs(d['peaks_follow_history'], True)
        self.assertIsNone(d['max_batch_size'])
        self.assertIn("follow the allocator's history", d['max_batch_size_withheld'])
        self.assertIn('gputrace sweep', d['what_would_give_one'])
        self.assertEqual([(h['index'], h['batch_size'], h['peak_bytes'], h['added_bytes'], h['kept_allocations'],
                           h['failed_allocations']) for h in d['new_highs']],
                         [(0, 8, 2650 * T.MiB, 2650 * T.MiB, 265, 0), (4, 10, 4360 * T.MiB, 1710 * T.MiB, 171, 1)])
        self.assertEqual(d['failed_allocations'], 1)
        self.assertIsNone(d['fit'])   # no numbers from a fit over history
        text = self.ok('peak', '--device-bytes', '80G', db).stdout
        self.assertIn('iteration 0, batch 8: 2.59 GiB, +2.59 GiB, 265 allocations kept', text)
        self.assertIn('iteration 4, batch 10: 4.26 GiB, +1.67 GiB, 171 allocations kept', text)
        self.assertIn('batch sizes with no new high: 2, 6, 4', text)
        self.assertIn('failed allocations in iterations: 1', text)
        self.assertNotIn('largest batch size predicted', text)
        self.assertNotIn('fit: peak', text)

    def test_memory_equation_fit_and_largest_batch_that_fits(self):
        db = T.memory_equation(self.dir, outside=700 * T.MiB)
        d = self.json('peak', db)
        self.assertEqual(d['iteration_source'], 'marker')
        self.assertEqual([it['batch_size'] for it in d['iterations']], T.EQ_BATCHES)
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], [T.EQ_FIXED + T.EQ_PER_SAMPLE * b for b in T.EQ_BATCHES])
        self.assertWithin(d['fit']['fixed_bytes'], T.EQ_FIXED)
        self.assertWithin(d['fit']['per_sample_bytes'], T.EQ_PER_SAMPLE)
        self.assertEqual(d['device_total_bytes'], T.EQ_DEVICE_TOTAL)
        # what the process can get: the total less what NVML shows held outside the trace
        self.assertEqual(d['available_bytes'], T.EQ_DEVICE_TOTAL - 700 * T.MiB)
        self.assertEqual(d['margin_bytes'], T.EQ_MARGIN)
        self.assertEqual(d['max_batch_size'], T.eq_max_batch(outside=700 * T.MiB))
        self.assertLess(d['max_batch_size'], T.eq_max_batch())   # the bare device total over-promises
        by = {b['batch_size']: b for b in d['by_batch_size']}
        self.assertEqual(by[16]['iterations'], 2)
        self.assertEqual(by[16]['median_peak_bytes'], T.EQ_FIXED + T.EQ_PER_SAMPLE * 16)

    def test_device_bytes_option_sets_capacity_for_max_batch_size(self):
        db = T.memory_equation(self.dir)
        d = self.json('peak', '--device-bytes', '8G', db)
        self.assertEqual(d['device_total_bytes'], 8 * T.GiB)
        self.assertEqual(d['max_batch_size'], T.eq_max_batch(8 * T.GiB))

    def test_without_nvml_or_device_bytes_no_largest_batch(self):
        # the CUDA context and other processes are not in a trace without NVML:
        # the bare device total would over-promise
        db = T.memory_equation(self.dir)
        d = self.json('peak', db)
        self.assertTrue(d['fit']['reliable'])
        self.assertIsNone(d['max_batch_size'])
        self.assertIsNone(d['available_bytes'])
        self.assertIn('no NVML samples', d['max_batch_size_withheld'])
        self.assertIn('--device-bytes', d['what_would_give_one'])
        self.assertIn('no largest batch size: what the process can get is not known', self.ok('peak', db).stdout)

    def test_two_batch_sizes_give_no_largest_batch(self):
        db = T.memory_equation(self.dir, batches=[16, 64, 16], outside=0)
        d = self.json('peak', db)
        self.assertEqual(d['fit']['r2'], 1.0)
        self.assertIsNone(d['max_batch_size'])
        self.assertIn('only 2 batch sizes', d['max_batch_size_withheld'])

    def test_overall_peak_lists_live_allocations_by_site(self):
        db = T.memory_equation(self.dir)
        d = self.json('peak', db)
        biggest = max(T.EQ_BATCHES)
        self.assertEqual(d['peak_bytes'], T.EQ_FIXED + T.EQ_PER_SAMPLE * biggest)
        self.assertEqual(sum(s['bytes'] for s in d['peak_sites']), d['peak_bytes'])
        self.assertEqual(d['peak_sites'][0]['bytes'], T.EQ_PARAMS * 4)

    def test_peak_text_says_level_fit_and_max_batch(self):
        db = T.memory_equation(self.dir, outside=700 * T.MiB)
        out = self.ok('peak', db).stdout
        self.assertIn('Peak of pool memory', out)
        self.assertIn('fit: peak = ', out)
        self.assertIn('largest batch size predicted to fit: %d (in 15.22 GiB available, less a margin of 4.49 KiB)'
                      % T.eq_max_batch(outside=700 * T.MiB), out)
        self.assertIn('15.90 GiB total (NVML) - 700.00 MiB held outside the trace', out)

    def iteration_rows(self, out):
        """The iteration table's rows of peak's text: [(index, note)]."""
        rows, lines = [], out.splitlines()
        start = next(i for i, line in enumerate(lines) if line.split()[:2] == ['iteration', 'batch'])
        for line in lines[start + 1:]:
            words = line.split()
            if not words or not words[0].isdigit():
                break
            rows.append((int(words[0]), ' '.join(words[6:])))
        return rows, lines

    def test_many_iterations_are_summarised_in_text_and_all_listed_on_request(self):
        db = T.leak_retained(self.dir, iterations=200)   # peaks grow: the last is the highest
        rows, lines = self.iteration_rows(self.ok('peak', db).stdout)
        self.assertEqual(rows, [(0, 'the first'), (199, 'the last; the highest peak')])
        self.assertIn('    ... 198 more iterations not shown (--all-iterations lists every one)', lines)
        rows, _ = self.iteration_rows(self.ok('peak', '--all-iterations', db).stdout)
        self.assertEqual([k for k, _ in rows], list(range(200)))
        self.assertEqual(len(self.json('peak', db)['iterations']), 200)   # JSON keeps every iteration

    def test_summary_keeps_the_highest_peak_and_incomplete_iterations(self):
        t = T.Trace(os.path.join(self.dir, 'spiky.db'))
        for i in range(30):
            t.iteration(i, 8)
            size = 9 * T.MiB if i == 17 else T.MiB
            if i == 23:
                t.alloc(size, ['forward', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)
                continue
            t.free(t.alloc(size, ['forward', 'main']))
        rows, _ = self.iteration_rows(self.ok('peak', t.close()).stdout)
        self.assertEqual(rows, [(0, 'the first'), (17, 'the highest peak'), (23, 'allocation failed: incomplete, not fitted'),
                                (29, 'the last')])

    def test_few_iterations_are_all_listed(self):
        rows, lines = self.iteration_rows(self.ok('peak', T.memory_equation(self.dir)).stdout)
        self.assertEqual([k for k, _ in rows], list(range(len(T.EQ_BATCHES))))
        self.assertFalse([line for line in lines if 'not shown' in line])

    def test_single_batch_size_gives_no_fit(self):
        db = T.leak_fixed(self.dir)
        d = self.json('peak', db)
        self.assertIsNone(d['fit'])
        self.assertIsNone(d['max_batch_size'])
        self.assertTrue(all(it['batch_size'] is None for it in d['iterations']))


class OutOfMemory(T.AnalyzerTest):
    """Seed 004: what the failed allocation needed."""

    def test_oom_request_and_live_bytes_exact(self):
        db = T.oom(self.dir)
        d = self.json('oom', db)
        self.assertEqual(len(d['failures']), 1)
        f = d['failures'][0]
        self.assertEqual(f['requested_bytes'], T.OOM_REQUESTED)
        self.assertEqual(f['live_bytes'], T.OOM_LIVE)
        self.assertEqual(f['live_device_bytes'], T.OOM_LIVE)
        self.assertEqual(f['device_total_bytes'], T.EQ_DEVICE_TOTAL)
        self.assertEqual(f['needed_bytes'], T.OOM_LIVE + T.OOM_REQUESTED - T.EQ_DEVICE_TOTAL)
        self.assertEqual(f['result'], T.CUDA_ERROR_MEMORY_ALLOCATION)
        self.assertEqual(f['api'], 'cudaMalloc')
        self.assertEqual(sum(s['bytes'] for s in f['sites']), T.OOM_LIVE)
        self.assertIn('layer_forward_', frames_text(f['sites'][0]))

    def test_oom_batch_reduction_from_fit(self):
        # --device-bytes: the trace has no NVML samples; the margin (7 allocations
        # live at the failed step's peak, 511 B each) leaves the floor as it is
        db = T.oom(self.dir)
        f = self.json('oom', '--device-bytes', T.EQ_DEVICE_TOTAL, db)['failures'][0]
        self.assertEqual(f['batch_size'], T.oom_failed_batch())
        self.assertEqual(f['max_batch_size'], T.eq_max_batch())
        self.assertEqual(f['batch_size_reduction'], T.oom_failed_batch() - T.eq_max_batch())
        out = self.ok('oom', '--device-bytes', T.EQ_DEVICE_TOTAL, db).stdout
        self.assertIn('the batch had to be %d smaller' % (T.oom_failed_batch() - T.eq_max_batch()), out)

    def test_iteration_cut_short_by_oom_is_not_fitted(self):
        db = T.oom(self.dir)
        d = self.json('peak', db)
        self.assertEqual([it['failed_allocation'] for it in d['iterations']], [False] * (len(d['iterations']) - 1) + [True])
        self.assertNotIn(T.oom_failed_batch(), [b['batch_size'] for b in d['by_batch_size']])
        self.assertWithin(d['fit']['fixed_bytes'], T.EQ_FIXED)
        self.assertWithin(d['fit']['per_sample_bytes'], T.EQ_PER_SAMPLE)

    def test_no_failures_means_empty_list(self):
        db = T.leak_fixed(self.dir)
        self.assertEqual(self.json('oom', db)['failures'], [])
        text = self.ok('oom', db).stdout
        self.assertIn('No failed allocations: no CUDA allocation call failed while traced', text)
        self.assertNotIn('never ran out of memory', text)   # XLA refuses past the device without a CUDA call


class OutOfMemoryRequests(T.AnalyzerTest):
    """What the H100 showed (issue 11): PyTorch retries a failed cudaMalloc
    after freeing its cache, a library tries a larger workspace first and
    recovers, and with expandable segments a growth of 20 MiB chunks is rolled
    back when a chunk fails, after a start-up cuMemCreate probe refused with
    800 (not permitted)."""
    GB = 10**9

    def caching(self):
        t = T.Trace(os.path.join(self.dir, 'retries.db'), device_total=80 * T.GiB)
        cache = [t.alloc(2 * T.GiB, ['segment_alloc', 'main']) for _ in range(4)]
        t.push('step 0')
        t.alloc(17 * self.GB, ['cudnn_workspace', 'conv_forward', 'main'], result=2)
        for p in cache[:2]:
            t.free(p, ['release_cached_blocks', 'main'])
        t.alloc(17 * self.GB, ['cudnn_workspace', 'conv_forward', 'main'], result=2)   # the retry
        t.alloc(1 * T.GiB, ['cudnn_workspace', 'conv_forward', 'main'])              # a smaller one fits
        t.pop()
        t.push('step 1')
        t.alloc(15 * self.GB, ['empty_cuda', 'conv_forward', 'main'], result=2)
        t.free(cache[2], ['release_cached_blocks', 'main'])
        t.alloc(15 * self.GB, ['empty_cuda', 'conv_forward', 'main'], result=2)
        t.free(cache[3], ['exception_unwinding', 'main'])
        return t.close()

    def test_retries_are_one_request_and_the_last_ended_the_program(self):
        d = self.json('oom', self.caching())
        f = d['failures']
        self.assertEqual([(x['requested_bytes'], x['attempts'], x['ended_program']) for x in f],
                         [(15 * self.GB, 2, True), (17 * self.GB, 2, False)])
        self.assertEqual(f[0]['live_device_bytes'], 2 * T.GiB + 1 * T.GiB)   # after the cache was released
        self.assertTrue(all(x['needed_bytes'] >= 0 and x['unaccounted_bytes'] >= 0 for x in f))
        self.assertEqual(d['other_failures'], [])
        text = self.ok('oom', self.caching()).stdout
        self.assertIn('Out of memory: 2 requests failed (1 ended the program, 1 recovered from)', text)
        self.assertLess(text.index('the failure it ended on'), text.index('recovered from: the program went on'))
        self.assertNotIn(' -', text)

    def test_a_host_allocation_after_a_device_failure_is_no_recovery(self):
        # a DataLoader's pin-memory thread pins one more buffer after the
        # training thread's fatal OOM: the program did not go on (sweep reads
        # the run's end from this too)
        t = T.Trace(os.path.join(self.dir, 'pin.db'), device_total=80 * T.GiB)
        t.alloc(70 * T.GiB, ['forward', 'main'])
        t.alloc(20 * T.GiB, ['forward', 'main'], result=2)
        t.tid = 4300
        t.alloc(64 * T.MiB, ['pin_memory_loop'], api='cudaMallocHost')
        path = t.close()
        d = self.json('oom', path)
        self.assertEqual([x['ended_program'] for x in d['failures']], [True])
        self.assertIn('1 ended the program', self.ok('oom', path).stdout)
        # a device allocation after it, on any thread, is the program going on
        t = T.Trace(os.path.join(self.dir, 'went_on.db'), device_total=80 * T.GiB)
        t.alloc(70 * T.GiB, ['forward', 'main'])
        t.alloc(20 * T.GiB, ['forward', 'main'], result=2)
        t.tid = 4300
        t.alloc(1 * T.GiB, ['forward', 'main'])
        self.assertEqual([x['ended_program'] for x in self.json('oom', t.close())['failures']], [False])

    def test_more_live_than_the_device_holds_gives_no_shortfall(self):
        # an address allocated again while its first allocation is still live
        # (a free not seen): 120 GiB "live" on an 80 GiB device; what had to go
        # cannot be told, and oom and peak say the record has gaps
        t = T.Trace(os.path.join(self.dir, 'gaps.db'), device_total=80 * T.GiB)
        p = t.alloc(60 * T.GiB, ['load_model', 'main'])
        t.live.pop(p)
        t.free_lists.setdefault(60 * T.GiB, []).append(p)
        t.alloc(60 * T.GiB, ['load_model', 'main'])   # the same address again
        t.alloc(30 * T.GiB, ['forward', 'main'], result=2)
        path = t.close()
        f = self.json('oom', path)['failures'][0]
        self.assertTrue(f['live_exceeds_device'])
        self.assertIsNone(f['needed_bytes'])
        text = self.ok('oom', path).stdout
        self.assertIn('the record has gaps', text)
        self.assertIn('what had to go cannot be told', text)
        self.assertNotIn('had to go\n', text.replace('cannot be told from it\n', ''))
        self.assertIn('the record has gaps', self.ok('peak', path).stdout)

    def expandable(self):
        t = T.Trace(os.path.join(self.dir, 'expandable.db'), device_total=80 * T.GiB)
        t.alloc(2 * T.MiB, ['probe_handle_type', 'main'], api='cuMemCreate', result=800)
        weights = t.alloc(60 * T.GiB, ['expandable_map', 'main'], api='cuMemCreate')
        chunks = [t.alloc(20 * T.MiB, ['expandable_map', 'main'], api='cuMemCreate') for _ in range(3)]
        t.alloc(20 * T.MiB, ['expandable_map', 'main'], api='cuMemCreate', result=2)
        for c in chunks:
            t.free(c, ['expandable_unmap', 'main'])
        return t.close(), weights

    def test_a_rolled_back_growth_is_one_request_of_at_least_its_chunks(self):
        db, _ = self.expandable()
        d = self.json('oom', db)
        self.assertEqual(len(d['failures']), 1)
        f = d['failures'][0]
        self.assertEqual((f['requested_bytes'], f['requested_is_lower_bound'], f['chunks_rolled_back'], f['failed_call_bytes']),
                         (4 * 20 * T.MiB, True, 3, 20 * T.MiB))
        self.assertEqual(f['live_device_bytes'], 60 * T.GiB)   # the growth's own chunks are the request's
        self.assertEqual((f['needed_bytes'], f['unaccounted_bytes']), (0, 20 * T.GiB - 80 * T.MiB))
        self.assertTrue(f['ended_program'])

    def test_a_tensor_that_fits_then_one_of_its_size_that_fails_are_not_one_growth(self):
        # the H200 under cudaMallocAsync (session 33): an 8.38 GiB tensor, a
        # second of that size fails, the first freed as the exception unwinds
        for api in ('cudaMallocAsync', 'cudaMalloc'):
            t = T.Trace(os.path.join(self.dir, 'twice-%s.db' % api), device_total=80 * T.GiB)
            held = t.alloc(30 * T.GiB, ['weights', 'main'], api=api)
            first = t.alloc(9 * T.GiB, ['conv_forward', 'main'], api=api)
            t.alloc(9 * T.GiB, ['conv_forward', 'main'], api=api, result=2)
            t.free(first, ['exception_unwinding', 'main'])
            t.free(held, ['exit', 'main'])
            f = self.json('oom', t.close())['failures']
            self.assertEqual([(x['requested_bytes'], x['requested_is_lower_bound'], x['chunks_rolled_back']) for x in f],
                             [(9 * T.GiB, False, 0)], api)
            live = f[0]['live_pool_bytes' if api == 'cudaMallocAsync' else 'live_device_bytes']
            self.assertEqual(live, 39 * T.GiB, api)   # the first tensor was live at the failure

    def test_failures_that_are_not_out_of_memory_are_listed_apart(self):
        db, _ = self.expandable()
        d = self.json('oom', db)
        self.assertEqual([(o['api'], o['requested_bytes'], o['result'], o['result_name']) for o in d['other_failures']],
                         [('cuMemCreate', 2 * T.MiB, 800, 'not permitted')])
        text = self.ok('oom', db).stdout
        self.assertIn('Other failed allocation calls (not out of memory): 1', text)
        self.assertIn('not permitted (result 800)', text)


class TopAndSummary(T.AnalyzerTest):

    def test_top_ranks_sites_by_bytes_peak_and_count(self):
        db = T.leak_retained(self.dir)
        d = self.json('top', db)
        n, act = T.LEAK_ITERATIONS, T.LEAK_BATCH * T.LEAK_HIDDEN * 4
        # linear_forward allocates h1 and the output every iteration
        self.assertEqual(d['by_bytes'][0]['bytes'], n * (act + T.LEAK_BATCH * 4))
        self.assertIn('linear_forward', d['by_bytes'][0]['frames'][0])
        self.assertEqual(d['by_count'][0]['count'], 2 * n)
        self.assertEqual(d['by_peak'][0]['peak_live_bytes'], n * T.LEAK_RETAINED_BYTES)
        self.assertIn(T.LEAK_PLANTING_FUNCTION, frames_text(d['by_peak'][0]))

    def test_summary_reports_process_peak_iterations_and_verdicts(self):
        db = T.leak_retained(self.dir)
        d = self.json('summary', db)
        self.assertEqual(d['process']['pid'], 4242)
        self.assertEqual(d['iterations'], T.LEAK_ITERATIONS)
        self.assertEqual(d['iteration_source'], 'nvtx')
        self.assertEqual(d['leak_bytes'], T.LEAK_ITERATIONS * T.LEAK_RETAINED_BYTES)
        self.assertEqual(d['growth_verdict'], 'growing')
        self.assertWithin(d['slope_bytes_per_iteration'], T.LEAK_RETAINED_BYTES)
        n, act = T.LEAK_ITERATIONS, T.LEAK_BATCH * T.LEAK_HIDDEN * 4
        base = 2 * sum(T.LEAK_WEIGHTS) + T.LEAK_BATCH * T.LEAK_IN * 4 + T.LEAK_BATCH * 4
        # last iteration, after relu_backward: n retained + its gradient + output + loss
        peak = base + n * T.LEAK_RETAINED_BYTES + act + T.LEAK_BATCH * 4 + 4
        device = [p for p in d['peaks'] if p['memory'] == 'device']
        self.assertEqual(len(device), 1)
        self.assertEqual(device[0]['peak_bytes'], peak)
        self.assertEqual(device[0]['final_bytes'], n * T.LEAK_RETAINED_BYTES)
        self.assertEqual(d['events']['total'], d['events']['allocs'] + d['events']['frees'])
        self.assertEqual(d['events']['dropped'], 0)

    def test_summary_text_has_one_line_verdicts(self):
        db = T.leak_retained(self.dir)
        out = self.ok('summary', db).stdout
        self.assertIn('leaks: 5.00 MiB in 20 allocations at 1 call site', out)
        self.assertIn('growth: growing, 256.00 KiB per iteration of device memory', out)
        self.assertIn('iterations: NVTX range "train_step"', out)

    def test_a_program_given_inline_is_named_by_its_first_line(self):
        # python3 -c "<script>": the command line is the whole script; the
        # summary's first line names the command and the script's first line
        t = T.Trace(self.dir + '/inline.db', command_line='python3 -c \nimport torch\nx = 1\n\ny = 2\n')
        t.free(t.alloc(T.MiB, ['main']))
        first = self.ok('summary', t.close()).stdout.splitlines()[0]
        self.assertTrue(first.endswith(': python3 -c  import torch ... (2 more lines)'), first)
        # a one-line command line is printed whole
        t = T.Trace(self.dir + '/one.db', command_line='python train.py --steps 3')
        t.free(t.alloc(T.MiB, ['main']))
        self.assertTrue(self.ok('summary', t.close()).stdout.splitlines()[0].endswith(': python train.py --steps 3'))


class SeveralFiles(T.AnalyzerTest):

    def test_several_files_give_one_json_object_each_with_rank(self):
        r0, r1 = T.two_ranks(self.dir)
        d = self.json('growth', r0, r1)
        self.assertIsInstance(d, list)
        self.assertEqual([x['rank'] for x in d], [0, 1])
        self.assertEqual([x['verdict'] for x in d], ['stable', 'growing'])
        self.assertWithin(d[1]['slope_bytes_per_iteration'], T.LEAK_RETAINED_BYTES)

    def test_several_files_text_has_a_section_per_rank(self):
        r0, r1 = T.two_ranks(self.dir)
        out = self.ok('leaks', r0, r1).stdout
        self.assertIn('== %s (rank 0, pid 5000) ==' % r0, out)
        self.assertIn('== %s (rank 1, pid 5001) ==' % r1, out)
        self.assertLess(out.index('No leaks'), out.index('Leaks: 5.00 MiB'))

    def test_bad_file_among_several_reports_error_and_first_failing_status(self):
        r0, r1 = T.two_ranks(self.dir)
        missing = os.path.join(self.dir, 'rank2.db')
        p = self.gputrace('leaks', '--json', r0, missing, r1)
        self.assertOneErrorLine(p, 3, missing)
        d = json.loads(p.stdout)
        self.assertEqual(len(d), 3)
        self.assertEqual(d[1]['exit_code'], 3)
        self.assertIn('no such file', d[1]['error'])
        self.assertEqual(d[2]['total_count'], T.LEAK_ITERATIONS)

    def test_fail_above_follows_the_verdict(self):
        # a slope the verdict calls noise, or too few iterations to judge, failed the gate beside
        # a report that said "stable" or "unknown"
        import random
        rnd = random.Random(1)
        t = T.Trace(os.path.join(self.dir, 'noisy.db'))
        t.alloc(100 * T.MiB, ['weights', 'main'])
        scratch = None
        for i in range(30):
            t.push('train_step')
            if scratch:
                t.free(scratch)
            t.alloc(64 * 1024, ['keep', 'train_step', 'main'])
            scratch = t.alloc(rnd.randint(1, 4 * T.MiB), ['scratch', 'train_step', 'main'])
            t.pop()
        noisy = t.close()
        g = self.json('growth', noisy)
        self.assertEqual(g['verdict'], 'stable')
        self.assertGreater(g['slope_bytes_per_iteration'], 32 * 1024)
        p = self.gputrace('growth', '--fail-above', '32K', noisy)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('--fail-above not failed: the fitted slope', p.stderr)
        self.assertIn('(verdict stable)', p.stderr)
        three = T._leak_workload(os.path.join(self.dir, 'three.db'), 3, fixed=False)
        self.assertEqual(self.json('growth', three)['verdict'], 'unknown')
        p = self.gputrace('growth', '--fail-above', '1K', three)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('--fail-above not judged: growth is unknown', p.stderr)
        # a slope --threshold made stable is said so, not blamed on the iterations' scatter (a helper's probe)
        leaky = T.leak_retained(self.dir)
        p = self.gputrace('growth', '--threshold', '1G', '--fail-above', '1', leaky)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('but not above --threshold 1.00 GiB (verdict stable); lower --threshold to judge it', p.stderr)
        self.assertNotIn('vary by', p.stderr)

    def test_fail_above_with_several_files_exits_1(self):
        r0, r1 = T.two_ranks(self.dir)
        self.assertEqual(self.gputrace('growth', '--fail-above', '1K', r0, r1).returncode, 1)


class JsonAndHelp(T.AnalyzerTest):

    DOCUMENTED = {
        'leaks': ['total_bytes', 'total_count', 'sites', 'cached_bytes'],
        'growth': ['iterations', 'iteration_source', 'slope_bytes_per_iteration', 'verdict', 'sites'],
        'peak': ['iterations', 'by_batch_size', 'fit', 'device_total_bytes', 'max_batch_size'],
        'oom': ['failures'],
        'top': ['by_bytes', 'by_peak', 'by_count'],
        'summary': ['process', 'devices', 'duration_ns', 'events', 'peaks', 'iterations', 'iteration_source'],
    }

    def test_json_of_every_command_parses_with_documented_keys(self):
        dbs = [T.leak_retained(self.dir), T.batch_sequence(self.dir), T.oom(self.dir)]
        for db in dbs:
            for cmd, keys in self.DOCUMENTED.items():
                d = self.json(cmd, db)
                for k in keys:
                    self.assertIn(k, d, '%s %s' % (cmd, os.path.basename(db)))
        g = self.json('growth', dbs[0])
        for k in ('bytes_per_iteration', 'frames'):
            self.assertIn(k, g['sites'][0])
        p = self.json('peak', dbs[1])
        self.assertEqual(set(p['fit']), {'fixed_bytes', 'per_sample_bytes', 'r2', 'reliable'})
        for k in ('index', 'batch_size', 'peak_bytes'):
            self.assertIn(k, p['iterations'][0])
        o = self.json('oom', dbs[2])
        for k in ('time_ns', 'requested_bytes', 'live_bytes', 'sites'):
            self.assertIn(k, o['failures'][0])

    def test_json_strings_are_escaped(self):
        db = T.leak_retained(self.dir)
        import sqlite3
        con = sqlite3.connect(db)
        con.execute("""UPDATE frames SET function = 'op<"quoted"\\back' || char(9) || char(1) || 'x' WHERE id = 1""")
        con.execute("UPDATE processes SET command_line = 'python -c \"print(1)\"' || char(10) || 'next'")
        con.commit()
        con.close()
        for cmd in ('top', 'summary', 'peak', 'leaks'):
            d = self.json(cmd, db)
        d = self.json('summary', db)
        self.assertEqual(d['process']['command_line'], 'python -c "print(1)"\nnext')
        top = self.json('top', db)
        self.assertIn('op<"quoted"\\back\t\x01x (leak_retained)', [f for s in top['by_bytes'] for f in s['frames']])

    def test_help_for_every_command_and_exit_codes_documented(self):
        p = self.ok('--help')
        for word in ('summary', 'leaks', 'growth', 'peak', 'oom', 'top', 'run', 'Exit status'):
            self.assertIn(word, p.stdout)
        for code in range(0, 9):
            self.assertIn('\n  %d  ' % code, p.stdout)
        for cmd in ('summary', 'leaks', 'growth', 'peak', 'oom', 'top'):
            self.assertIn('usage: gputrace ' + cmd, self.ok(cmd, '--help').stdout)
            self.assertIn('usage: gputrace ' + cmd, self.ok('help', cmd).stdout)
        self.assertIn('caching allocator', self.ok('leaks', '--help').stdout)
        self.assertIn('Theil-Sen', self.ok('growth', '--help').stdout)

    def test_memory_option_selects_level(self):
        db = T.batch_sequence(self.dir)
        self.assertEqual(self.gputrace('peak', '--memory', 'device', db).returncode, 11)   # none: see FilterMatchesNothing
        self.assertEqual(self.json('peak', '--memory', 'all', db)['peak_bytes'], T.seq_peak(64))
        self.assertEqual(self.json('growth', '--memory', 'pool', db)['memory'], 'pool')


class FilterMatchesNothing(T.AnalyzerTest):
    """--device and --memory are filters: one that matches no memory of the
    trace says so, names what the trace has, and exits 11, instead of a report
    of zeros, "No leaks" or "stable"."""

    def two_levels(self):
        """Pool memory on device 0, device memory on device 1."""
        t = T.Trace(os.path.join(self.dir, 'two.db'))
        for _ in range(3):
            t.push('step')
            p = t.alloc(3 * T.MiB, ['forward', 'main'], api='cudaMallocAsync', device=0)
            q = t.alloc(5 * T.MiB, ['workspace', 'main'], device=1)
            t.free(p)
            t.free(q)
            t.pop()
        return t.close()

    def test_device_that_holds_nothing_is_an_error_naming_the_devices_there(self):
        db = T.leak_retained(self.dir)
        for cmd in ('peak', 'leaks', 'growth', 'top', 'oom', 'summary'):
            p = self.gputrace(cmd, '--device', '5', db)
            line = self.assertOneErrorLine(p, 11, db)
            self.assertIn('no memory on device 5; the trace has device memory on device 0 (5.44 MiB peak)', line)
            self.assertEqual(p.stdout, '', cmd)

    def test_memory_kind_the_trace_lacks_is_an_error(self):
        db = T.leak_retained(self.dir)
        line = self.assertOneErrorLine(self.gputrace('growth', '--memory', 'pool', db), 11, db)
        self.assertIn('no pool memory; the trace has device memory on device 0', line)
        line = self.assertOneErrorLine(self.gputrace('leaks', '--memory', 'pool', '--device', '0', db), 11, db)
        self.assertIn('no pool memory on device 0;', line)

    def test_several_files_report_the_matching_ones(self):
        db, other = T.leak_retained(self.dir), T.batch_sequence(self.dir)
        p = self.gputrace('peak', '--json', '--memory', 'pool', db, other)
        self.assertEqual(p.returncode, 11)
        d = json.loads(p.stdout)
        self.assertEqual(d[0]['exit_code'], 11)
        self.assertIn('no pool memory', d[0]['error'])
        self.assertEqual(d[1]['peak_bytes'], T.seq_peak(64))

    def test_filter_that_matches_reports_as_before(self):
        db = self.two_levels()
        self.assertEqual(self.json('peak', '--device', '0', db)['peak_bytes'], 3 * T.MiB)
        d = self.json('peak', '--device', '1', db)   # the default level follows the device: its device memory
        self.assertEqual((d['memory'], d['peak_bytes']), ('device', 5 * T.MiB))
        line = self.assertOneErrorLine(self.gputrace('peak', '--device', '2', db), 11)
        self.assertIn('the trace has device memory on device 1 (5.00 MiB peak), pool memory on device 0 (3.00 MiB peak)', line)


REPORT_JS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'analyzer', 'report.js')


def js_fmt_bytes(values):
    """report.js's fmtBytes over values, run by node (the function's own text,
    cut out of the page's script); None when node is not installed."""
    import re
    import shutil
    import subprocess
    node = shutil.which('node') or shutil.which('nodejs')
    if not node:
        return None
    with open(REPORT_JS) as f:
        fn = re.search(r'\n  (function fmtBytes\(b\) \{.*?\n  \})\n', f.read(), re.S).group(1)
    p = subprocess.run([node, '-e', fn + '\nconsole.log(JSON.stringify(%s.map(fmtBytes)));' % json.dumps(values)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


class Wording(T.AnalyzerTest):
    """Text a person reads: counts agree with their nouns, no doubled words,
    and the same bytes print the same in the text reports and the HTML page."""
    SIZES = [81395712, 1048575, 1535, 1536, 3 * T.MiB + 5 * T.KiB, 1023, 1]

    def one_leak(self, size=81395712, **kw):
        t = T.Trace(os.path.join(self.dir, 'one.db'), **kw)
        t.alloc(size, ['load_weights', 'main'])
        return t.close()

    def test_one_allocation_is_singular_everywhere(self):
        db = self.one_leak()
        self.assertIn('Leaks: 77.63 MiB in 1 allocation at 1 call site, live at process end', self.ok('leaks', db).stdout)
        out = self.ok('summary', db).stdout
        self.assertIn('events: 1 (1 allocation, 0 frees, 0 failed calls, 0 other)', out)
        self.assertIn('leaks: 77.63 MiB in 1 allocation at 1 call site', out)
        self.assertIn('(1 allocation, 0 frees, 77.63 MiB live at end)', out)
        self.assertIn('Top call sites (all memory kinds, 1 site):', self.ok('top', db).stdout)
        for cmd in ('summary', 'leaks', 'top', 'peak', 'oom'):
            self.assertNotRegex(self.ok(cmd, db).stdout, r'\b1 (allocations|frees|sites|call sites|iterations)\b', cmd)

    def test_summary_and_peak_headings_say_each_thing_once(self):
        db = self.one_leak()
        out = self.ok('summary', db).stdout
        self.assertIn('  peak of device memory on device 0: 77.63 MiB at ', out)
        self.assertNotIn('peak device  device', out)
        first = self.ok('peak', db).stdout.splitlines()[0]
        self.assertEqual(first, 'Peak of device memory (device size 80.00 GiB)')
        db = self.one_leak(device_total=None)
        first = self.ok('peak', '--device', '0', db).stdout.splitlines()[0]
        self.assertEqual(first, 'Peak of device memory on device 0 (device size unknown: --device-bytes N gives it)')

    def test_bytes_round_the_same_in_text_and_in_the_html_page(self):
        t = T.Trace(os.path.join(self.dir, 'sizes.db'))
        for k, size in enumerate(self.SIZES):
            t.alloc(size, ['site_%d' % k, 'main'])
        db = t.close()
        text = {}
        for line in self.ok('leaks', '--top', '100', db).stdout.splitlines():
            words = line.split()
            if len(words) > 4 and words[4].startswith('site_'):
                text[int(words[4][5:])] = ' '.join(words[:2])
        by_site = [text[k] for k in range(len(self.SIZES))]
        self.assertEqual(by_site[0], '77.63 MiB')   # 77.625 MiB exactly: the half rounds up
        self.assertEqual(by_site[1], '1.00 MiB')    # 1023.999 KiB
        js = js_fmt_bytes(self.SIZES)
        if js is None:
            self.skipTest('node is not installed: report.js checked by test_report.py only')
        self.assertEqual(js, by_site)


# PyTorch's frames as a real trace (H100, PyTorch 2.11) records them, full demangled names
TORCH_ALLOCATOR = [
    'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)',
    'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)',
    'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)',
    'at::TensorBase at::detail::_empty_strided_generic<c10::ArrayRef<long> >(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType)',
    'at::detail::empty_strided_generic(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType)',
    'at::detail::empty_strided_cuda(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>)',
]
TORCH_DISPATCH = [
    'at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__empty_strided(c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>)',
    'c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>), &at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__empty_strided>, at::Tensor, c10::guts::typelist::typelist<c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt> > >, at::Tensor (c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>)>::call(c10::OperatorKernel*, c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>)',
    'at::_ops::empty_strided::redispatch(c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>)',
    'at::Tensor c10::Dispatcher::redispatch<at::Tensor, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt> >(c10::TypedOperatorHandle<at::Tensor (c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>)> const&, c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>) const',
    'at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>)',
]
TORCH_CONV = [
    'at::native::run_conv_plan(cudnnContext*, cudnn_frontend::ExecutionPlan&, at::Tensor const&, at::Tensor const&, at::Tensor const&, cudnn_frontend::ExecutionPlan const&)',
    'at::native::run_single_conv(cudnnBackendDescriptorType_t const&, at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)',
    'at::native::raw_cudnn_convolution_forward_out(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)',
    'at::native::cudnn_convolution_forward_out(at::TensorArg&, char const*, at::TensorArg const&, at::TensorArg const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)',
    'at::native::cudnn_convolution_forward(char const*, at::TensorArg const&, at::TensorArg const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)',
]
TORCH_CALLERS = ['at::native::cudnn_convolution(at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)',
                 'at::native::cudnn_convolution_transpose(at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)',
                 'at::native::cudnn_convolution_relu(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long)']
TORCH_OUTER = ['torch::autograd::VariableType::(anonymous namespace)::convolution(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)',
               'at::_ops::convolution::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)',
               'at::native::conv2d_symint(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)',
               'torch::autograd::THPVariable_conv2d(_object*, _object*, _object*)', '_PyEval_EvalFrameDefault', 'main',
               '__libc_start_call_main', '__libc_start_main', '_start']


class CallSiteText(T.AnalyzerTest):
    """Call sites a person can read: short names, the dispatcher's plumbing
    and the C library's start-up folded away, and sites that would read
    alike told apart."""

    def torch_trace(self):
        t = T.Trace(os.path.join(self.dir, 'torch.db'), command_line='python train.py',
                    module='/usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so')
        for k, caller in enumerate(TORCH_CALLERS):
            t.alloc((k + 1) * T.MiB, TORCH_ALLOCATOR + TORCH_DISPATCH + TORCH_CONV + [caller] + TORCH_OUTER)
        return t.close()

    def test_pytorch_sites_read_short_with_plumbing_folded_and_what_differs_first(self):
        db = self.torch_trace()
        rows = [line for line in self.ok('top', db).stdout.splitlines() if 'run_conv_plan' in line][:3]
        self.assertEqual(rows[0].split('device  ', 1)[1],
                         '[6 allocator frames] [5 dispatcher frames] <- at::native::run_conv_plan (libtorch_cuda.so) '
                         '<- [4 common frames] <- at::native::cudnn_convolution_relu (libtorch_cuda.so) '
                         '<- [2 dispatcher frames] <- at::native::conv2d_symint (libtorch_cuda.so) '
                         '<- torch::autograd::THPVariable_conv2d (libtorch_cuda.so) <- ... (2 more)')
        self.assertEqual(len({row.split('device  ', 1)[1] for row in rows}), 3)
        for row in rows:
            self.assertNotIn('(c10::', row)
            self.assertLess(len(row), 400)
        d = self.json('top', db)
        site = d['by_bytes'][0]
        self.assertEqual(site['frames'][6], TORCH_DISPATCH[0] + ' (libtorch_cuda.so)')   # JSON: full names, all frames
        self.assertEqual(site['frames'][-1], '_start (libtorch_cuda.so)')
        self.assertEqual(site['call_site'], rows[0].split('device  ', 1)[1])

    def test_full_names_and_all_frames_show_what_text_folds(self):
        db = self.torch_trace()
        out = self.ok('top', '--full-names', db).stdout
        self.assertIn('at::native::run_conv_plan(cudnnContext*, cudnn_frontend::ExecutionPlan&', out)
        self.assertIn('at::native::cudnn_convolution_relu(at::Tensor const&, at::Tensor const&', out)
        out = self.ok('top', '--all-frames', '--frames', '100', db).stdout
        self.assertIn('c10::impl::wrap_kernel_functor_unboxed_::call (libtorch_cuda.so)', out)
        self.assertIn('__libc_start_main (libtorch_cuda.so) <- _start (libtorch_cuda.so)', out)
        self.assertNotIn('dispatcher frames', out)

    def test_sites_that_print_alike_show_their_offsets_and_no_libc_start_up(self):
        p, db = self.trace([gtlib.prog('demo_loop')])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = self.ok('top', db).stdout
        rows = [line.split('device  ', 1)[1] for line in out.splitlines() if 'train_step' in line][:3]
        self.assertEqual(len(rows), 3)
        self.assertEqual(len(set(rows)), 3, rows)
        for row in rows:
            self.assertRegex(row, r'^alloc \(demo_loop\) <- train_step \(demo_loop\+0x[0-9a-f]+\) <- main \(demo_loop\)$')
        self.assertNotIn('libc.so', out)
        self.assertNotIn('__libc_start', out)
        frames = self.json('top', db)['by_bytes'][0]['frames']
        self.assertTrue(any(f.startswith('__libc_start_main') for f in frames), frames)   # JSON keeps them


class RecordGaps(T.AnalyzerTest):
    """Dropped events and frees not seen are said where the figures rest on
    what stayed live (a helper's probe: 5 dropped frees read as a 320 MiB
    leak and as growth, with no word in leaks or growth)."""

    def test_leaks_and_growth_say_the_record_has_gaps(self):
        t = T.Trace(os.path.join(self.dir, 'gaps.db'))
        t.alloc(T.GiB, ['init_params', 'main'])
        for i in range(20):
            t.push('train_step')
            a = t.alloc(64 * T.MiB, ['forward', 'train_step', 'main'])
            if i % 4 == 3:   # its free was dropped: the address comes back still "live"
                t.live.pop(a)
                t.free_lists.setdefault(64 * T.MiB, []).append(a)
            else:
                t.free(a)
            t.pop()
        db = t.close()
        con = sqlite3.connect(db)
        con.execute("INSERT INTO drops VALUES ('queue_full', 5, 'events dropped because the queue was full')")
        con.execute('UPDATE processes SET events_dropped = 5')
        con.commit()
        con.close()
        note = ('Note: the record has gaps (5 events dropped, 4 allocations at an address still live (a free not seen)):'
                ' memory below may have been freed; gputrace summary says more.')
        for cmd in ('leaks', 'growth'):
            self.assertEqual(self.ok(cmd, db).stdout.splitlines()[0], note, cmd)
            self.assertEqual(self.json(cmd, db)['record_gaps'], {'dropped': 5, 'reallocated_while_live': 4}, cmd)
        clean = T.leak_fixed(self.dir)
        self.assertNotIn('record has gaps', self.ok('leaks', clean).stdout)
        self.assertIsNone(self.json('leaks', clean)['record_gaps'])
