"""leaks and growth where the allocator is not PyTorch's (session 48, CuPy and
JAX on an H200, tests/gpu/check_framework_loops.py):
- CuPy's memory pool is Cython: its frames are mangled C names
  (__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool_malloc), which the
  "cupy.cuda.memory" pattern never matched, so a pool block the loop made was
  called a leak at the line that needed a new block (rfft2), not the line that
  kept an array;
- device memory that is mostly a caching allocator's cache read "stable"
  with no word that arrays kept inside its blocks do not show (CuPy kept
  1 MiB a step for 20 steps inside blocks it held);
- JAX releases every buffer at the interpreter's teardown, so arrays a loop
  kept in a list were never live at exit: leaks said "No leaks ... nothing
  accumulated" beside growth's 2 MiB an iteration."""
import os

import analyzer_traces as T

MiB = T.MiB
CUPY_POOL = ['cudaMalloc',
             '__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc(unsigned long, int)',
             '__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool_malloc(__pyx_obj_4cupy_4cuda_6memory_'
             'SingleDeviceMemoryPool*, unsigned long, int)',
             '__pyx_pw_4cupy_4cuda_6memory_10MemoryPool_3malloc(_object*, _object* const*, long, _object*)']


def pool_loop(t, steps, new_block_at=(), first=3):
    """A CuPy-like loop: blocks of 16 MiB made through the pool before the loop
    (and at the steps in new_block_at, where the pool needed one more), never
    freed; each step's arrays live inside them, out of sight."""
    for _ in range(first):
        t.alloc(16 * MiB, CUPY_POOL + ['cupy_loop (train.py:10)', '<module> (train.py:40)'])
    for s in range(steps):
        t.push('step')
        if s in new_block_at:
            t.alloc(16 * MiB, CUPY_POOL + ['cupy_loop (train.py:17)', '<module> (train.py:40)'])
        t.pop()
    return t.close()


CUPY_NO_POOL = ['cudaMalloc',
                '__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc(unsigned long, int)',
                '__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(_object*, _object*, _object*)',
                '__pyx_pw_4cupy_4cuda_6memory_3_malloc(_object*, _object* const*, long, _object*)']


class CupyPoolFrames(T.AnalyzerTest):
    def test_cupy_pool_blocks_are_cached_not_leaks(self):
        db = pool_loop(T.Trace(os.path.join(self.dir, 'cupy.db')), 20, new_block_at=(5, 10, 15))
        d = self.json('leaks', db)
        self.assertEqual((d['total_bytes'], d['cached_bytes'], d['cached_in_loop_bytes']), (0, 96 * MiB, 48 * MiB))
        self.assertEqual(d['cached_in_loop_by'], "CuPy's memory pool")
        self.assertIn('cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)', self.ok('leaks', db).stdout)

    def test_cupy_without_its_pool_is_an_allocation_per_array(self):
        # set_allocator(None): each array one cudaMalloc through cupy.cuda.memory.Memory, no cache
        # (an H200: the first build's pattern of the module called these cached, and the leak vanished)
        t = T.Trace(os.path.join(self.dir, 'nopool.db'))
        for s in range(20):
            t.push('step')
            t.alloc(MiB, CUPY_NO_POOL + ['cupy_loop (train.py:17)', '<module> (train.py:40)'])
            t.pop()
        d = self.json('leaks', t.close())
        self.assertEqual((d['total_bytes'], d['cached_bytes']), (20 * MiB, 0))

    def test_growing_cupy_blocks_are_segments_with_cupys_setting(self):
        db = pool_loop(T.Trace(os.path.join(self.dir, 'cupy.db')), 20, new_block_at=range(2, 20))
        d = self.json('growth', db)
        self.assertEqual((d['verdict'], d['sites_are_segments']), ('growing', True))
        out = self.ok('growth', db).stdout
        self.assertIn("device memory of CuPy's memory pool: a site above is the request that needed a new segment", out)
        self.assertIn('cupy.cuda.set_allocator', out)


class StableInsideACache(T.AnalyzerTest):
    def test_a_stable_cache_says_its_verdict_is_the_caches(self):
        db = pool_loop(T.Trace(os.path.join(self.dir, 'flat.db')), 20)
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'stable')
        self.assertEqual((d['verdict_of_cache']['allocator'], d['verdict_of_cache']['cached_bytes'],
                          d['verdict_of_cache']['live_bytes']), ("CuPy's memory pool", 48 * MiB, 48 * MiB))
        self.assertIn("48.00 MiB is CuPy's memory pool's cache: stable\n   says it asked CUDA for no more",
                      self.ok('growth', db).stdout)
        self.assertIn("growth: stable, 0 B per iteration of device memory, 48.00 MiB of its 48.00 MiB is CuPy's memory "
                      "pool's cache, which asked CUDA for no\n    more (a tensor kept inside", self.ok('summary', db).stdout)
        self.assertEqual(self.json('summary', db)['growth_verdict_of_cache'], "CuPy's memory pool")

    def test_pytorch_segments_name_pytorchs_setting(self):
        t = T.Trace(os.path.join(self.dir, 'torch.db'))
        t.alloc(40 * MiB, T.CACHING_FRAMES)
        for s in range(20):
            t.push('step')
            t.pop()
        d = self.json('growth', t.close())
        self.assertEqual(d['verdict_of_cache']['per_tensor'], 'PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync')

    def test_memory_of_its_own_allocations_is_no_caches_verdict(self):
        t = T.Trace(os.path.join(self.dir, 'plain.db'))
        t.alloc(40 * MiB, ['init_weights', 'main'])
        t.alloc(8 * MiB, CUPY_POOL + ['main'])   # a cache, but under half of what is live
        for s in range(20):
            t.push('step')
            t.free(t.alloc(8 * MiB, ['forward', 'main']))
            t.pop()
        db = t.close()
        self.assertIsNone(self.json('growth', db)['verdict_of_cache'])
        self.assertNotIn("cache: stable", self.ok('growth', db).stdout)


class FreedOnlyAfterTheLoop(T.AnalyzerTest):
    def job(self, name, steps=20, keep=True, prefetch=0, weights_freed=True):
        """steps NVTX-marked steps; keep: one 2 MiB array a step into a list that
        is freed only after the loop (as JAX's teardown does); prefetch: that
        many batches in flight, the oldest freed each step, the rest after."""
        t = T.Trace(os.path.join(self.dir, name + '.db'))
        w = t.alloc(64 * MiB, ['init_weights', 'main'])
        kept, queue = [], []
        for s in range(steps):
            t.push('step')
            t.free(t.alloc(16 * MiB, ['forward', 'main']))
            if keep:
                kept.append(t.alloc(2 * MiB, ['keep (train.py:33)', 'main']))
            if prefetch:
                queue.append(t.alloc(4 * MiB, ['prefetch (train.py:21)', 'main']))
                if len(queue) > prefetch:
                    t.free(queue.pop(0))
            t.pop()
        for a in kept + queue + ([w] if weights_freed else []):   # the teardown
            t.free(a)
        return t.close()

    def test_what_the_loop_kept_until_it_ended_is_told(self):
        db = self.job('kept')
        d = self.json('leaks', db)
        # every iteration made one: a site that accumulates is counted whole, the first and the last
        # iterations' too, as a leak live at exit is (18 of 20 were counted: 36 MiB against growth's 2 MiB a step)
        self.assertEqual((d['total_bytes'], d['freed_after_loop_bytes'], d['freed_after_loop_count']),
                         (0, 20 * 2 * MiB, 20))
        self.assertIn('keep (train.py:33) (workload)', d['freed_after_loop_sites'][0]['frames'])
        out = self.ok('leaks', db).stdout
        self.assertIn('No leaks: every allocation was freed before the process ended; but what accumulated during\n'
                      'the loop was freed only after it (below).', out)
        self.assertIn('Accumulated over the loop and freed only after it', out)
        self.assertIn('leaks: none live at exit; 40.00 MiB accumulated over the loop and was freed only after it',
                      self.ok('summary', db).stdout)
        self.assertEqual(self.json('summary', db)['freed_after_loop_bytes'], 40 * MiB)

    def marked_loop(self, name, last_frees_its_own=False):
        """20 steps marked by gputrace_iteration, each keeping a 2 MiB array; the
        teardown frees them (the last first) ten ticks after the loop."""
        t = T.Trace(os.path.join(self.dir, name + '.db'))
        w = t.alloc(64 * MiB, ['init_weights', 'main'])
        kept = []
        for s in range(20):
            t.iteration(s)
            t.free(t.alloc(16 * MiB, ['forward', 'main']))
            kept.append(t.alloc(2 * MiB, ['keep (train.py:33)', 'main']))
            if last_frees_its_own and s == 19:
                t.free(kept.pop())
            t.now()
        for _ in range(10):   # the interpreter's finalization before the teardown frees
            t.now()
        for a in reversed(kept + [w]):
            t.free(a)
        return t.close()

    def test_the_last_steps_array_is_counted_when_its_iteration_runs_on_to_the_teardown(self):
        # iterations marked by gputrace_iteration (as found automatically): the last runs on to the
        # trace's end, and the teardown's frees fell in it; its kept array was read as the step's own
        # temporary (CuPy keeping 1 MiB a step for 20 steps on an H200: 19 arrays). A teardown a step's
        # time after the last step frees it after the loop; a temporary of the last step, freed within
        # it, is still the step's.
        d = self.json('leaks', self.marked_loop('marked'))
        self.assertEqual((d['freed_after_loop_bytes'], d['freed_after_loop_count']), (20 * 2 * MiB, 20))
        # the same loop whose last step frees its array itself: 19 accumulated
        d = self.json('leaks', self.marked_loop('marked_last_freed', last_frees_its_own=True))
        self.assertEqual((d['freed_after_loop_bytes'], d['freed_after_loop_count']), (19 * 2 * MiB, 19))

    def test_beside_memory_live_at_exit(self):
        out = self.ok('leaks', self.job('weights', weights_freed=False)).stdout
        self.assertIn('No leaks: nothing allocated during the loop (iterations 2 to 19 of 20) was still live at\n'
                      'process end; but what accumulated during it was freed only after it (below).', out)
        self.assertIn('Held for the run', out)

    def test_a_prefetch_queue_freed_after_the_loop_is_not_told(self):
        for depth in (1, 2, 3):
            d = self.json('leaks', self.job('prefetch%d' % depth, keep=False, prefetch=depth))
            self.assertEqual((d['freed_after_loop_bytes'], d['freed_after_loop_sites']), (0, []), depth)

    def test_a_clean_loop_and_a_short_one_tell_nothing(self):
        self.assertEqual(self.json('leaks', self.job('clean', keep=False))['freed_after_loop_bytes'], 0)
        # under 6 iterations a queue cannot be told from accumulation
        self.assertEqual(self.json('leaks', self.job('short', steps=5))['freed_after_loop_bytes'], 0)


class ReviewedCases(T.AnalyzerTest):
    """A review of the above (session 48): RMM's default resource is no cache;
    a buffer made once in the loop's second half, a ring still filling early
    and a producer thread's loop that ended first are no accumulation; the
    cache's verdict is said of "stable" alone, and not where the loop's own
    arrays are visible beside an idle cache."""

    def steps(self, t, n, body):
        for s in range(n):
            t.push('step')
            body(s)
            t.pop()

    def test_rmms_default_resource_is_an_allocation_per_buffer(self):
        rmm = ['cudaMalloc', 'rmm::mr::cuda_memory_resource::do_allocate(unsigned long, rmm::cuda_stream_view)',
               'rmm::device_buffer::allocate_async(unsigned long)']
        t = T.Trace(os.path.join(self.dir, 'rmm.db'))
        self.steps(t, 20, lambda s: t.alloc(2 * MiB, rmm + ['keep_result', 'main']))
        d = self.json('leaks', t.close())
        self.assertEqual((d['total_bytes'], d['cached_bytes']), (40 * MiB, 0))
        pool = ['cudaMalloc', 'rmm::mr::pool_memory_resource<rmm::mr::cuda_memory_resource>::do_allocate(unsigned long)']
        t = T.Trace(os.path.join(self.dir, 'rmmpool.db'))
        self.steps(t, 20, lambda s: t.alloc(2 * MiB, pool + ['main']) if s % 5 == 0 else None)
        d = self.json('leaks', t.close())
        self.assertEqual((d['total_bytes'], d['cached_bytes'], d['cached_in_loop_by']), (0, 8 * MiB, "RMM's pool"))

    def test_one_buffer_made_late_is_not_accumulation(self):
        t = T.Trace(os.path.join(self.dir, 'ema.db'))
        w = t.alloc(64 * MiB, ['init', 'main'])
        made = []
        self.steps(t, 20, lambda s: made.append(t.alloc(32 * MiB, ['ema_init', 'main'])) if s == 12 else None)
        for a in made + [w]:
            t.free(a)
        self.assertEqual(self.json('leaks', t.close())['freed_after_loop_bytes'], 0)

    def test_a_ring_filled_before_the_end_is_not_accumulation(self):
        t = T.Trace(os.path.join(self.dir, 'ring.db'))
        ring = []
        self.steps(t, 12, lambda s: ring.append(t.alloc(MiB, ['ring_slot', 'main'])) if len(ring) < 8 else None)
        for a in ring:
            t.free(a)
        self.assertEqual(self.json('leaks', t.close())['freed_after_loop_bytes'], 0)

    def test_a_producer_threads_batches_freed_by_the_main_loop_are_not_after_it(self):
        t = T.Trace(os.path.join(self.dir, 'producer.db'))
        main, queue, made, ahead = t.tid, [], 0, 0.0
        for s in range(20):
            ahead += 1.5
            while made < 20 and ahead >= 1:   # the producer's own 'step' ranges, ahead of the main loop
                t.tid = 888
                t.push('step')
                queue.append(t.alloc(4 * MiB, ['load_batch', 'producer']))
                t.pop()
                t.tid, made, ahead = main, made + 1, ahead - 1
            t.push('step')
            t.free(t.alloc(8 * MiB, ['forward', 'main']))
            t.free(queue.pop(0))
            t.pop()
        self.assertEqual(self.json('leaks', t.close())['freed_after_loop_bytes'], 0)

    def test_no_caches_verdict_over_unknown_or_beside_visible_arrays(self):
        # a new segment of another size every step, the last one given back: the cache asked CUDA every step
        t = T.Trace(os.path.join(self.dir, 'unknown.db'))
        sizes, held = [264, 320, 208, 360, 208, 216] * 4, []

        def step(s):
            held.append(t.alloc(sizes[s] * MiB, T.CACHING_FRAMES))
            if len(held) > 1:
                t.free(held.pop(0))
        self.steps(t, 20, step)
        g = self.json('growth', t.close())
        self.assertEqual((g['verdict'], g['verdict_of_cache']), ('unknown', None))
        # a cuBLAS workspace's segment made once, beside arrays made one by one in the loop
        t = T.Trace(os.path.join(self.dir, 'visible.db'))
        t.alloc(64 * MiB, T.CACHING_FRAMES)
        t.alloc(40 * MiB, CUPY_NO_POOL + ['init', 'main'])
        self.steps(t, 20, lambda s: t.free(t.alloc(8 * MiB, CUPY_NO_POOL + ['step', 'main'])))
        g = self.json('growth', t.close())
        self.assertEqual((g['verdict'], g['verdict_of_cache']), ('stable', None))
