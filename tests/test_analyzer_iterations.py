"""gputrace finds iterations from the marker API, from repeated NVTX ranges,
or automatically from the allocation (or kernel) pattern, says which, and
reads batch sizes from range messages."""
import os

import analyzer_traces as T


def gtlib_query(db, sql):
    import gtlib
    return gtlib.query(db, sql)


class Iterations(T.AnalyzerTest):

    def test_auto_detection_counts_unmarked_loop_exactly(self):
        db = T.unmarked_loop(self.dir)
        d = self.json('growth', db)
        self.assertEqual(d['iteration_source'], 'auto')
        self.assertEqual(d['iterations'], T.UNMARKED_ITERATIONS)
        self.assertEqual(d['verdict'], 'stable')
        self.assertIn('repeats %d times' % T.UNMARKED_ITERATIONS, self.ok('summary', db).stdout)

    def test_auto_detection_exact_for_short_and_long_loops(self):
        for n in (3, 4, 10, 250):
            db = T.unmarked_loop(self.dir, iterations=n)
            self.assertEqual(self.json('summary', db)['iterations'], n, 'loop of %d' % n)

    def test_a_last_step_cut_short_is_an_iteration_too(self):
        # the process ended in its last step (killed, or os._exit before the next step began)
        db = T.unmarked_loop(self.dir, iterations=12, killed_in_last_step=True)
        d = self.json('summary', db)
        self.assertEqual(d['iterations'], 12)
        self.assertIn('repeats 12 times, the last cut short after 5 of them', d['iteration_detection'])
        # a loop that ends with whole steps has no cut-short one
        db = T.unmarked_loop(self.dir, iterations=12)
        self.assertNotIn('cut short', self.json('summary', db)['iteration_detection'])

    def test_auto_detected_iterations_put_boundaries_where_memory_is_lowest(self):
        db = T.unmarked_loop(self.dir)
        d = self.json('peak', db)
        model = 2 * (40 * T.MiB + 40 * T.MiB + 4 * T.MiB)   # params and grads
        step = T.UNMARKED_STEP
        # conv_forward #2 is freed before the last two allocations
        peak = model + step[0][0] + step[2][0] + step[3][0] + step[4][0] + step[5][0]
        peak = max(peak, model + sum(s for s, _ in step[:4]))
        self.assertEqual([it['peak_bytes'] for it in d['iterations']], [peak] * T.UNMARKED_ITERATIONS)

    def test_auto_detection_finds_leak_without_markers(self):
        db = T.leak_retained(self.dir, markers=False, iterations=30)
        d = self.json('growth', db)
        self.assertEqual(d['iteration_source'], 'auto')
        # the first step also creates param.grad: it differs and is not counted
        self.assertEqual(d['iterations'], 29)
        self.assertEqual(d['verdict'], 'growing')
        self.assertWithin(d['slope_bytes_per_iteration'], T.LEAK_RETAINED_BYTES)

    def test_kernel_pattern_used_when_allocations_do_not_repeat(self):
        db = T.kernels_only(self.dir)
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS))
        self.assertIn('kernel', d['iteration_detection'])

    def test_kernels_of_a_model_split_across_two_gpus_repeat_on_each_device(self):
        d = self.json('summary', T.kernels_two_devices(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS), d['iteration_detection'])

    def test_steps_whose_kernels_differ_are_found_by_the_kernel_each_launches_once(self):
        d = self.json('summary', T.kernels_steps_that_differ(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS), d['iteration_detection'])
        self.assertIn('one kernel recurs once per step, %d times' % T.KERNEL_ITERATIONS, d['iteration_detection'])
        its = self.json('peak', T.kernels_steps_that_differ(self.dir))['iterations']
        self.assertEqual(len(its), T.KERNEL_ITERATIONS)

    def test_an_evaluation_between_some_steps_is_no_step(self):
        # every 5 steps (12 steps: two evaluations, shorter than a step; one longer than a
        # step: the next test)
        d = self.json('summary', T.kernels_steps_that_differ(self.dir, evaluate_every=5))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS), d['iteration_detection'])

    def test_steps_with_an_evaluation_longer_than_a_step_between_some_are_the_iterations(self):
        # the exact pattern is 5 steps and an evaluation; each step runs the same kernels
        # named as gradients' (backward, dgrad, wgrad) and the evaluation none
        for every in (5, 4):
            d = self.json('summary', T.kernels_evaluation_every(self.dir, every=every))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])
            self.assertIn('each step runs the same backward kernels; the exact pattern of %d launches, several '
                          'steps and other work between them, repeats' % (31 * every + 45), d['iteration_detection'])
        # evaluations every 2 or 3 steps, of one batch (under half a step) or of 6 (about 3
        # steps), or once, mid-run (the exact pattern then spans the steps on one side)
        for kw in (dict(every=2, batches=2), dict(every=3, batches=2), dict(batches=1), dict(batches=6),
                   dict(once_after=9)):
            d = self.json('summary', T.kernels_evaluation_every(self.dir, **kw))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), '%s: %s' % (kw, d['iteration_detection']))
        # with nothing named as a gradient's, nothing tells a step from a layer: the exact pattern stays
        d = self.json('summary', T.kernels_evaluation_every(self.dir, backward_names=False))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 4), d['iteration_detection'])
        self.assertIn('a pattern of 200 kernel launches repeats 4 times', d['iteration_detection'])

    def test_epochs_that_end_in_a_batch_of_other_kernels_are_all_steps(self):
        for epochs, per in ((3, 7), (4, 5)):
            d = self.json('summary', T.kernels_epochs(self.dir, epochs, per))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', epochs * per), d['iteration_detection'])
            self.assertIn('steps of about one length, each with backward kernels; the exact pattern of %d launches, '
                          '%d steps' % (31 * per + 1, per), d['iteration_detection'])

    def test_a_multi_task_steps_backward_passes_are_one_iteration(self):
        for heads in (2, 3):
            d = self.json('summary', T.kernels_multitask(self.dir, heads=heads))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), '%d: %s' % (heads, d['iteration_detection']))

    def test_accumulated_micro_batches_under_one_optimizer_step_are_one_iteration(self):
        for opt in (('fused_adam',), ('fused_adam', 'clip_norm'), tuple('adam_%d' % k for k in range(12))):
            d = self.json('summary', T.kernels_accumulation(self.dir, optimizer=opt))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), '%s: %s' % (opt, d['iteration_detection']))

    def test_a_pattern_inside_an_xla_compilation_is_no_loop(self):
        d = self.json('summary', T.xla_compile_staging(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('none', 0), d['iteration_detection'])
        self.assertIn("lies inside XLA's compilation of jit_step", d['iteration_detection'])
        # the same pattern after the compilation is a loop, and beside a compilation on
        # another thread than the program's main one
        for kw in (dict(inside=False), dict(compile_tid=7)):
            d = self.json('summary', T.xla_compile_staging(self.dir, **kw))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 21), '%s: %s' % (kw, d['iteration_detection']))
        # the steps after it, seen in their kernels (a later kernel window): those are the iterations
        d = self.json('summary', T.xla_compile_staging(self.dir, kernel_steps=20))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])
        self.assertIn("kernel launches repeats", d['iteration_detection'])
        self.assertIn("a pattern of allocations inside XLA's compilation of jit_step was passed over",
                      d['iteration_detection'])
        # XLA's autotuning kernels, inside the compilations of three modules, are no steps either
        d = self.json('summary', T.xla_compile_staging(self.dir, autotune=True))
        self.assertEqual((d['iteration_source'], d['iterations']), ('none', 0), d['iteration_detection'])
        d = self.json('summary', T.xla_compile_staging(self.dir, autotune=True, kernel_steps=20))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])
        # nor the initialisation's kernels before jit_step was compiled (its steps were not recorded)
        d = self.json('summary', T.xla_compile_staging(self.dir, autotune=True, init_kernels=33))
        self.assertEqual((d['iteration_source'], d['iterations']), ('none', 0), d['iteration_detection'])
        # and when the steps were recorded too, they are found among the kernels after the
        # compilation alone (on an H200 a pattern over the whole trace found none: 0 iterations)
        for shares in (False, True):
            d = self.json('summary', T.xla_compile_staging(self.dir, autotune=True, init_kernels=33, kernel_steps=20,
                                                           init_shares=shares))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])

    def test_a_jax_step_compiled_again_every_step_keeps_its_kernels(self):
        # its kernels run on the GPU while the host compiles the next step: they are
        # no autotuning (they run outside every compilation too)
        d = self.json('summary', T.jax_recompiling(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 40), d['iteration_detection'])

    def test_a_layers_gradient_kernel_is_no_step_of_a_training_loop(self):
        d = self.json('summary', T.kernels_training_layers(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])

    def test_a_kernel_every_layer_launches_is_no_step_of_an_inference_loop(self):
        d = self.json('summary', T.kernels_inference(self.dir))
        self.assertEqual(d['iteration_source'], 'auto', d['iteration_detection'])
        self.assertIn(d['iterations'], (9, 10), d['iteration_detection'])   # the last batch differs

    def test_batches_of_changing_shapes_are_found_by_call_site_with_sizes_set_aside(self):
        d = self.json('summary', T.pool_inference_varlen(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])
        self.assertIn('by call site with sizes set aside', d['iteration_detection'])
        self.assertNotEqual(d['growth_verdict'], 'growing')

    def test_an_inference_loop_on_changing_shapes_is_found_by_a_kernel_once_per_batch(self):
        # the exact pattern is one batch's layers; the batch's own kernel recurs about that far apart
        d = self.json('summary', T.kernels_inference(self.dir, steps=20, tiles_vary=True))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])
        self.assertIn('a part of a step', d['iteration_detection'])

    def test_without_call_sites_sizes_are_not_set_aside(self):
        for kw in (dict(stack_depth=0), dict(), dict(api='cudaMallocAsync')):
            d = self.json('summary', T.one_site_loop(self.dir, **kw))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), '%s: %s' % (kw, d['iteration_detection']))
            self.assertNotIn('sizes set aside', d['iteration_detection'])

    def test_a_kernel_launched_once_per_run_of_batches_is_no_step(self):
        d = self.json('summary', T.kernels_inference_runs(self.dir))
        self.assertEqual(d['iteration_source'], 'auto', d['iteration_detection'])
        self.assertGreaterEqual(d['iterations'], 20, d['iteration_detection'])

    def test_a_long_evaluation_at_the_end_adds_no_steps(self):
        d = self.json('summary', T.kernels_long_evaluation_at_the_end(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20), d['iteration_detection'])

    def test_a_kernel_launched_in_set_up_is_no_step(self):
        for set_up in (60, 300):
            d = self.json('summary', T.kernels_after_set_up(self.dir, set_up=set_up))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 20),
                             '%d: %s' % (set_up, d['iteration_detection']))

    def test_a_first_step_that_launches_more_or_other_kernels_is_an_iteration(self):
        # AdamW's first step makes its state (zero fills) and runs other update
        # kernels: the exact pattern begins at the second step (a ResNet-50 on an
        # H200: 29 iterations for 30 steps)
        d = self.json('summary', T.kernels_first_step(self.dir))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS))
        self.assertIn('repeats %d times, and before them a step of 24 launches that holds 18 of the pattern\'s 20 in '
                      'order' % (T.KERNEL_ITERATIONS - 1), d['iteration_detection'])
        # a first step that differs in 3 of 20 is not taken for one by the pattern (under 9/10 of
        # it), but the kernel every step launches once, first, counts it
        d = self.json('summary', T.kernels_first_step(self.dir, first_other=3))
        self.assertEqual(d['iterations'], T.KERNEL_ITERATIONS)
        self.assertNotIn('before them a step', d['iteration_detection'])
        self.assertIn('one kernel recurs once per step, %d times' % T.KERNEL_ITERATIONS, d['iteration_detection'])

    def test_a_first_step_with_kernels_of_its_own_inside_its_forward_pass_is_an_iteration(self):
        # on an H200 a conv net under float16 autocast: the GradScaler's first step launches
        # two fills inside the forward pass, the exact repetition begins after them, at a
        # phase too far into the step to move (19 for 20); the kernel each step launches
        # first recurs once per repetition of the pattern and finds the first step too
        d = self.json('summary', T.kernels_first_step(self.dir, first_extra=2, first_other=0, fill_at=3))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS), d['iteration_detection'])
        self.assertIn('about every 20 launches', d['iteration_detection'])

    def test_kernel_iterations_begin_where_the_first_step_begins(self):
        # the exact repetition begins 2 kernels before the first step's end:
        # the steps' phase is where the first step's first kernel (the batch's
        # randn) stands in the pattern, and every iteration begins with it
        db = T.kernels_first_step_rotated(self.dir)
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS))
        self.assertIn('and before them a step of 49 launches that holds 43 of the pattern\'s 45 in order',
                      d['iteration_detection'])
        for cut in (0, 1, 30):   # a job that died in its last step, near its end or early in it
            db = T.kernels_first_step_rotated(self.dir, cut_last=cut)
            starts = [it['start_ns'] for it in self.json('peak', db)['iterations']]
            randn = [r[0] for r in gtlib_query(db, "SELECT k.start_ns FROM kernels k JOIN strings s ON s.id = "
                                                     "k.name_id WHERE s.text = 'randn_kernel' ORDER BY k.start_ns")]
            # (a last step that ran 15 of its 45 kernels is no repetition of the pattern, but it
            # began with the kernel every step launches once: the step the job died in)
            self.assertEqual(starts, randn, 'last step cut by %d' % cut)

    def test_a_first_step_is_found_where_the_pattern_s_phase_cuts_it(self):
        # the exact repetition begins at the first step's update: at that
        # phase the 35 kernels before it hold only 23 of the pattern's 30; at
        # the steps' own phase (where the later steps begin with what the
        # first began with) they hold all 30, with 12 fills more
        db = T.kernels_first_step_filled(self.dir)
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', T.KERNEL_ITERATIONS))
        self.assertIn('and before them a step of 42 launches that holds the pattern and 12 more',
                      d['iteration_detection'])
        starts = [it['start_ns'] for it in self.json('peak', db)['iterations']]
        first = [r[0] for r in gtlib_query(db, "SELECT k.start_ns FROM kernels k JOIN strings s ON s.id = k.name_id"
                                               " WHERE s.text = 'gemm_a' ORDER BY k.start_ns")][::2]
        self.assertEqual(starts, first)

    def died_in_first_step(self, outer, steps=1):
        """The model's parameters, then `outer` ranges: steps-1 whole steps, and
        a last one whose forward keeps each of 8 layers' activation (a
        workspace freed between) until an allocation fails."""
        t = T.Trace(self.dir + '/died-%s-%d.db' % (outer.split()[0], steps))
        for _ in range(3):
            t.alloc(40 * T.MiB, ['init_params', 'main'])
        for s in range(steps):
            t.push(outer.replace('#', str(s)))
            acts = []
            for layer in range(8):
                acts.append(t.alloc(512 * T.MiB, ['conv_forward', 'forward', 'main']))
                t.free(t.alloc(64 * T.MiB, ['cudnn_workspace', 'conv_forward', 'forward', 'main']))
            if s + 1 < steps:
                for a in reversed(acts):
                    t.free(a)
                t.pop()
        t.alloc(80 * 1024 * T.MiB, ['conv_forward', 'forward', 'main'], result=2)
        return t.close(end_reason='exit 1')

    def test_a_run_that_died_in_its_one_step_range_is_one_iteration_not_its_layers(self):
        # out of memory in the first step's forward: the layers repeat, inside
        # the program's one "step 0"; they are not iterations, and their
        # activations are no leak
        db = self.died_in_first_step('step #')
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 1))
        self.assertIn('a repeating pattern of 8 found inside it is that step\'s own', d['iteration_detection'])
        self.assertFalse(d['leaks_told'])
        self.assertIn('not told from memory held for the run', self.ok('summary', db).stdout)
        self.assertEqual(self.json('growth', db)['verdict'], 'unknown')

    def test_one_range_named_otherwise_keeps_the_pattern_inside_it(self):
        # "epoch 0" around the steps is an outer loop; "forward" says nothing:
        # the pattern inside stays the iterations
        for outer in ('epoch #', 'forward'):
            d = self.json('summary', self.died_in_first_step(outer))
            self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 8), outer)
        # two "step" ranges: the pair's rule (both steps) as before
        d = self.json('summary', self.died_in_first_step('step #', steps=2))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 2))

    def leaking_loop(self, name, outer=None, pair_before=None, oom=False, steps=20):
        """steps unmarked steps, each keeping 256 KiB (a leak) and freeing its
        temporaries; around them one range `outer` (closed unless oom ends the
        run in it), or before them a pair of ranges `pair_before` % 0, 1."""
        t = T.Trace(self.dir + '/%s.db' % name)
        t.alloc(40 * T.MiB, ['init_params', 'main'])
        for k in range(2 if pair_before else 0):
            t.push(pair_before % k)
            t.free(t.alloc(3 * T.MiB, ['warmup', 'main']))
            t.pop()
        if outer:
            t.push(outer)
        for _ in range(steps):
            a = t.alloc(8 * T.MiB, ['forward', 'train_step', 'main'])
            t.alloc(256 * T.KiB, ['append_output', 'train_step', 'main'])
            b = t.alloc(4 * T.MiB, ['backward', 'train_step', 'main'])
            t.free(b)
            t.free(a)
        if oom:
            t.alloc(80 * 1024 * T.MiB, ['forward', 'train_step', 'main'], result=2)
            return t.close(end_reason='exit 1')
        if outer:
            t.pop()
        return t.close()

    def test_a_range_around_a_leaking_loop_keeps_the_loop_and_its_leak(self):
        # a range around the whole loop is no step unless it is named as one,
        # numbered, and the run ended in it: the leak stays told
        for name, kw in (('plural', dict(outer='train_steps')), ('unnumbered', dict(outer='train_step')),
                         ('closed', dict(outer='step 0')), ('writer', dict(outer='SummaryWriter 1', oom=True)),
                         ('loader', dict(outer='_MultiProcessingDataLoaderIter 1', oom=True)),
                         ('warmup', dict(pair_before='warmup step %d')), ('oom', dict(outer='train_steps', oom=True))):
            db = self.leaking_loop(name, **kw)
            d = self.json('growth', db)
            self.assertEqual((d['iteration_source'], d['iterations'], d['verdict']), ('auto', 20, 'growing'), name)
            self.assertTrue(self.json('summary', db)['leaks_told'], name)

    def test_marker_api_iterations_carry_index_and_batch_size(self):
        db = T.memory_equation(self.dir)
        d = self.json('peak', db)
        self.assertEqual(d['iteration_source'], 'marker')
        self.assertEqual([it['index'] for it in d['iterations']], list(range(len(T.EQ_BATCHES))))
        self.assertEqual([it['batch_size'] for it in d['iterations']], T.EQ_BATCHES)

    def test_batch_size_parsed_from_range_message(self):
        db = T.oom(self.dir)   # ranges "step bs=N" with ranges.batch_size NULL
        d = self.json('peak', db)
        self.assertEqual(d['iteration_source'], 'nvtx')
        self.assertEqual([it['batch_size'] for it in d['iterations']], T.OOM_BATCHES)

    def test_outermost_repeated_range_is_the_iteration(self):
        t = T.Trace(self.dir + '/nested.db')
        t.push('epoch 0')
        for i in range(5):
            t.push('train_step %d' % i)
            t.push('forward')
            p = t.alloc(T.MiB, ['fwd', 'main'])
            t.pop()
            t.free(p)
            t.pop()
        t.pop()
        d = self.json('growth', t.close())
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 5))
        self.assertIn('train_step', d['iteration_detection'])

    def test_steps_inside_epochs_are_the_iterations(self):
        # 3 "epoch N" ranges of 10 "step bs=16" each, a step keeping 512 KiB:
        # the outermost kind gave 3 iterations, growth "unknown", and peak
        # asked for a batch size the steps' names carry (a helper's probe)
        def trace(name, outer, inner):
            t = T.Trace(self.dir + '/%s.db' % name)
            t.alloc(32 * T.MiB, ['init_params', 'main'])
            for e in range(3):
                t.push(outer % e if '%' in outer else outer)
                for _ in range(10):
                    t.push(inner)
                    t.alloc(T.MiB // 2, ['keep_history', 'main'])
                    t.free(t.alloc(16 * T.MiB, ['forward', 'main']))
                    t.pop()
                t.pop()
            return t.close()
        for outer, inner in (('epoch %d', 'step bs=16'), ('Epoch %d/3', 'train_step'), ('epoch', 'iteration')):
            db = trace('epochs', outer, inner)
            d = self.json('growth', db)
            self.assertEqual((d['iteration_source'], d['iterations'], d['verdict'], d['slope_bytes_per_iteration']),
                             ('nvtx', 30, 'growing', T.MiB // 2), outer)
            self.assertIn('"%s"' % inner, d['iteration_detection'])
            os.remove(db)
        self.assertEqual({it['batch_size'] for it in self.json('peak', trace('bs', 'epoch %d', 'step bs=16'))['iterations']},
                         {16})
        # an outer kind not named as epochs stays the loop (its inner kind may be the layers)
        d = self.json('growth', trace('outer', 'train_step %d', 'layer'))
        self.assertEqual((d['iterations'], d['iteration_detection'].split('"')[1]), (3, 'train_step #'))

    def test_two_numbered_ranges_are_iterations_and_three_of_a_kind_still_win(self):
        # a run that died in its second step has two ("step 0", "step 1");
        # two unnumbered ranges ("warmup" twice) are not a loop, and two
        # epochs around steps that repeat 3 times give the steps
        def trace(name, outer, inner):
            t = T.Trace(self.dir + '/%s.db' % name)
            for o in outer:
                if o:
                    t.push(o)
                for i in inner:
                    t.push(i)
                    t.free(t.alloc(T.MiB, ['fwd', 'main']))
                    t.pop()
                if o:
                    t.pop()
            return t.close()
        # the label is the kind's, numbers as '#': the first range's own name read as if every
        # iteration were its ("train_step batch_size=16" for sizes 16, 32 and 64: a helper's probe)
        d = self.json('summary', trace('sizes', [None], ['train_step batch_size=%d' % b for b in (16, 32, 64)]))
        self.assertIn('NVTX range "train_step batch_size=#"', d['iteration_detection'])
        d = self.json('summary', trace('same', [None], ['train_step'] * 3))
        self.assertIn('NVTX range "train_step"', d['iteration_detection'])
        d = self.json('summary', trace('died', [None], ['step 0', 'step 1']))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 2))
        self.assertIn('"step #"', d['iteration_detection'])
        self.assertNotEqual(self.json('summary', trace('warm', [None], ['warmup', 'warmup']))['iteration_source'], 'nvtx')
        d = self.json('summary', trace('epochs', ['epoch 0', 'epoch 1'], ['step %d' % k for k in range(3)]))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 6))
        self.assertIn('"step #"', d['iteration_detection'])

    def test_an_allocation_pattern_across_two_numbered_ranges_is_the_loop_and_inside_one_is_not(self):
        # 2 epochs of 20 unmarked steps, each keeping 1 MiB: the pattern spans
        # both epochs, so it is the loop (and the leak is told); a pattern
        # inside the second of "step 0", "step 1" is that step's layers
        t = T.Trace(self.dir + '/epochs.db')
        for e in range(2):
            t.push('epoch %d' % e)
            for k in range(20):
                t.alloc(T.MiB, ['keep_history', 'main'])
                t.free(t.alloc(8 * T.MiB, ['forward', 'main']))
                t.free(t.alloc(4 * T.MiB, ['backward', 'main']))
            t.pop()
        db = t.close()
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations'], d['leaks_told']), ('auto', 40, True), d['iteration_detection'])
        self.assertGreater(d['leak_bytes'], 30 * T.MiB)
        t = T.Trace(self.dir + '/died.db')
        t.push('step 0')
        t.free(t.alloc(8 * T.MiB, ['forward', 'main']))
        t.pop()
        t.push('step 1')   # dies inside: its layers repeat, each keeping its output
        for layer in range(8):
            t.alloc(8 * T.MiB, ['conv', 'main'])
            t.free(t.alloc(T.MiB, ['workspace', 'main']))
            t.free(t.alloc(2 * T.MiB, ['bn_tmp', 'main']))
        db = t.close()
        auto = self.json('summary', '--iterations', 'auto', db)
        self.assertGreater(auto['iterations'], 2, 'no pattern inside the step: the test proves nothing')
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 2))
        self.assertIn('found inside one of them is that step\'s own, not the loop', d['iteration_detection'])

    def test_iteration_option_names_the_range(self):
        db = T.batch_sequence(self.dir)
        d = self.json('peak', '--iteration', 'train_step', db)
        self.assertEqual(len(d['iterations']), len(T.SEQ_BATCHES))
        p = self.gputrace('growth', '--iteration', 'no_such_range', db)
        line = self.assertOneErrorLine(p, 8, db)
        self.assertIn('no range named "no_such_range" in the trace; its ranges: "train_step"', line)
        # a typo gets the nearest name the trace has
        p = self.gputrace('growth', '--iteration', 'train_stepp', db)
        self.assertIn('no range named "train_stepp" in the trace (did you mean "train_step"?)',
                      self.assertOneErrorLine(p, 8, db))

    def test_iterations_none_turns_detection_off(self):
        db = T.leak_retained(self.dir)
        p = self.gputrace('growth', '--iterations', 'none', db)
        self.assertOneErrorLine(p, 8, db)
        d = self.json('peak', '--iterations', 'none', db)
        self.assertEqual(d['iterations'], [])
        self.assertEqual(d['iteration_source'], 'none')
        self.assertGreater(d['peak_bytes'], 0)

    def test_iterations_mode_forces_a_source(self):
        db = T.leak_retained(self.dir)
        self.assertEqual(self.json('summary', '--iterations', 'nvtx', db)['iteration_source'], 'nvtx')
        auto = self.json('summary', '--iterations', 'auto', db)
        self.assertEqual(auto['iteration_source'], 'auto')
        self.assertEqual(auto['iterations'], T.LEAK_ITERATIONS - 1)
        self.assertEqual(self.json('summary', '--iterations', 'marker', db)['iteration_source'], 'none')


class LibraryDomains(T.AnalyzerTest):
    """Ranges that CUDA libraries emit in NVTX domains of their own (CCCL's
    cub:: ranges under PyTorch) are the library's calls, not the program's
    loop: 23 library ranges over a 30-step loop must never read as 23
    iterations."""

    def trace_lib_domains(self, mode):
        import gtlib
        db = self.dir + '/lib-%s.db' % mode
        gtlib.run([gtlib.prog('lib_domains'), mode], check=True,
                  env=gtlib.base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1, GPUTRACE_CUPTI=0))
        self.assertEqual(gtlib.query(db, "SELECT count(*) FROM ranges WHERE domain = 'CCCL'"), [(23,)])
        return db

    def test_program_ranges_win_over_a_library_domain(self):
        d = self.json('growth', self.trace_lib_domains('ranges'))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 30))
        self.assertIn('"step #"', d['iteration_detection'])

    def test_library_domain_never_becomes_iterations_without_program_ranges(self):
        db = self.trace_lib_domains('none')
        d = self.json('growth', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 30))
        self.assertIn('23 ranges of library NVTX domains (CCCL) are not iterations', d['iteration_detection'])
        self.assertEqual(self.json('summary', '--iterations', 'nvtx', db)['iteration_source'], 'none')

    def test_iteration_option_can_name_a_library_range(self):
        d = self.json('growth', '--iteration', 'cub::DeviceRadixSort::SortPairs', self.trace_lib_domains('none'))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 23))

    def emit_nvtx_trace(self, step_ranges):
        # torch.autograd.profiler.emit_nvtx: a range per operator call in the
        # default domain, "aten::linear, seq = 12, op_id = 40", and per
        # record_function scope, "Optimizer.step#AdamW.step, op_id = 41"
        # (PyTorch's own), on the program's thread and on autograd's
        t = T.Trace(self.dir + '/emit-nvtx-%d.db' % step_ranges)
        op_id = 0
        for i in range(10):
            if step_ranges:
                t.push('step %d' % i)
            ptrs = []
            for k, size in enumerate((4 * T.MiB, 2 * T.MiB, T.MiB)):
                op_id += 1
                t.push('aten::linear, seq = %d, op_id = %d' % (3 * i + k, op_id))
                ptrs.append(t.alloc(size, ['linear', 'train_step', 'main']))
                t.pop()
            # backward nodes run on autograd's own thread, where they are
            # outermost: "AddmmBackward0, seq = 5, op_id = 43"
            main_tid, t.tid = t.tid, t.tid + 1
            for k in range(3):
                op_id += 1
                t.push('AddmmBackward0, seq = %d, op_id = %d' % (3 * i + 2 - k, op_id))
                t.free(t.alloc(size, ['AddmmBackward0', 'backward']))
                t.pop()
            t.tid = main_tid
            if i % 3 != 2:   # a scope PyTorch records by name inside an operator, not every step
                t.push('aten::detach_, op_id = %d' % (op_id + 1))
                t.push('detach_, op_id = %d' % (op_id + 2))
                t.pop()
                t.pop()
                op_id += 2
            op_id += 1
            t.push('Optimizer.step#AdamW.step, op_id = %d' % op_id)
            for p in ptrs:
                t.free(p)
            t.pop()
            if step_ranges:
                t.pop()
        return t.close()

    def test_pytorch_operator_ranges_never_become_iterations(self):
        d = self.json('growth', self.emit_nvtx_trace(False))
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 10))
        self.assertIn("84 PyTorch operator ranges (emit_nvtx) are not iterations", d['iteration_detection'])
        # the program's own step ranges around them are its loop
        d = self.json('growth', self.emit_nvtx_trace(True))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 10))
        self.assertIn('"step #"', d['iteration_detection'])
        # and --iteration may still name an operator
        d = self.json('growth', '--iteration', 'aten::linear', self.emit_nvtx_trace(False))
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 30))

    def test_a_record_function_scope_of_the_program_s_own_stays_a_loop_under_emit_nvtx(self):
        # emit_nvtx gives the program's own record_function("train_step") the
        # suffix ", op_id = N" too; a user range "step 3, seq = 512" (a
        # sequence length) is the program's as well
        for fmt in ('train_step, op_id = %d', 'step %d, seq = 512'):
            t = T.Trace(self.dir + '/rf.db')
            for i in range(6):
                t.push(fmt % (100 + i))
                t.push('aten::linear, seq = %d, op_id = %d' % (i, 200 + i))
                t.free(t.alloc(T.MiB, ['linear', 'main']))
                t.pop()
                t.pop()
            d = self.json('growth', t.close())
            self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 6), fmt)
            os.remove(self.dir + '/rf.db')

    def test_xla_s_own_domain_never_becomes_iterations(self):
        # once an NVTX tool is attached XLA (JAX, TensorFlow) creates the
        # domain "TSL": a range per executable run and per thunk, and its
        # autotuning's modules many times before the loop (on an H200:
        # "XlaModule:#hlo_module=gemm_fusion_dot.65#" 58 times)
        t = T.Trace(self.dir + '/tsl.db')
        for k in range(40):
            t.push('XlaModule:#hlo_module=gemm_fusion_dot.65#', domain='TSL')
            t.free(t.alloc((k + 1) * 256 * 1024, ['autotune', 'compile']))   # a workspace per config
            t.pop()
        for i in range(8):
            for mod, size in (('jit_data', 8 * T.MiB), ('jit_step', 32 * T.MiB)):
                t.push('XlaModule:#hlo_module=%s,program_id=%d#' % (mod, 3 if mod == 'jit_step' else 2), domain='TSL')
                t.push('Thunk:#hlo_op=fusion#', domain='TSL')
                p = t.alloc(size, [mod, 'execute'])
                t.pop()
                t.free(p)
                t.pop()
        d = self.json('growth', t.close())
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 8))
        self.assertIn('ranges of library NVTX domains (TSL) are not iterations', d['iteration_detection'])

    def test_the_program_s_step_inside_the_optimizer_s_closure_stays_its_own(self):
        # Lightning's automatic optimization runs training_step in the closure
        # that optimizer.step runs inside PyTorch's "Optimizer.step#SGD.step"
        # scope: inside one of PyTorch's scopes a range may be the program's
        for fmt in ('training_step', 'training_step, op_id = %d'):
            t = T.Trace(self.dir + '/closure.db')
            for i in range(10):
                t.push('Optimizer.step#SGD.step, op_id = %d' % (3 * i + 1))
                t.push(fmt % (3 * i + 2) if '%' in fmt else fmt)
                t.push('aten::linear, seq = %d, op_id = %d' % (i, 3 * i + 3))
                t.free(t.alloc(T.MiB * (1 + i % 3), ['linear', 'main']))
                t.pop()
                t.pop()
                t.pop()
            d = self.json('growth', t.close())
            self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 10), fmt)
            self.assertIn('"training_step', d['iteration_detection'])
            os.remove(self.dir + '/closure.db')

    def test_set_up_that_ends_as_steps_end_is_no_first_step(self):
        # set-up code that ends with the fills each step ends with: the steps
        # begin where the loop does, not at a phase cut late in the pattern
        t = T.Trace(self.dir + '/setup-fills.db')
        t.alloc(512 * T.MiB, T.CACHING_FRAMES)
        for name in ['init_weights_kernel'] + ['fill'] * 7 + ['normal']:
            t.kernel(name)
        for i in range(12):
            for name in ['step_kernel_%d' % k for k in range(24)] + ['fill'] * 6:
                t.kernel(name)
        db = t.close()
        d = self.json('summary', db)
        self.assertEqual((d['iteration_source'], d['iterations']), ('auto', 12))
        starts = [it['start_ns'] for it in self.json('peak', db)['iterations']]
        first = [r[0] for r in gtlib_query(db, "SELECT k.start_ns FROM kernels k JOIN strings s ON s.id = k.name_id"
                                               " WHERE s.text = 'step_kernel_0' ORDER BY k.start_ns")]
        self.assertEqual(starts, first)

    def test_a_domain_the_program_registered_is_its_own(self):
        t = T.Trace(self.dir + '/own-domain.db')
        for i in range(5):
            t.push('train_step %d' % i, domain='trainer')
            for _ in range(2):
                t.push('cub::DeviceScan', domain='CCCL')
                t.pop()
            p = t.alloc(T.MiB, ['fwd', 'main'])
            t.free(p)
            t.pop()
        d = self.json('growth', t.close())
        self.assertEqual((d['iteration_source'], d['iterations']), ('nvtx', 5))
        self.assertIn('domain trainer', d['iteration_detection'])


class LoopAmongTheProgramsRanges(T.AnalyzerTest):
    """Which of the program's own repeating ranges is the loop: set-up ranges,
    a loader thread's and ranges nested inside the steps are not (a helper's
    probe: each was taken for the loop, and growth and leaks read the
    parameters, or a loader's prefetching, as what grows)."""

    LEAK = 2 * T.MiB

    def steps(self, t, n=10, leak=True, inner=None):
        kept = []
        for i in range(n):
            t.push('step %d' % i)
            for j in range(2 if inner else 1):
                if inner:
                    t.push('forward', source=inner)
                acts = [t.alloc(8 * T.MiB, ['forward', 'main']) for _ in range(8)]
                for a in acts:
                    t.free(a)
                if inner:
                    t.pop()
            if leak:
                kept.append(t.alloc(self.LEAK, ['keep_loss', 'main']))
            t.pop()

    def growth(self, t):
        d = self.json('growth', t.close())
        return d['iterations'], d['iteration_detection'], d['slope_bytes_per_iteration']

    def test_set_up_ranges_around_each_layers_parameters_are_not_the_loop(self):
        for leak in (True, False):
            t = T.Trace(self.dir + '/layers-%d.db' % leak)
            for i in range(12):
                t.push('init layer %d' % i)
                t.alloc(10 * T.MiB, ['init_parameters', 'main'])
                t.pop()
            self.steps(t, leak=leak)
            n, how, slope = self.growth(t)
            self.assertEqual(n, 10, how)
            self.assertIn('"step #"', how)
            self.assertEqual(slope, self.LEAK if leak else 0)

    def test_set_up_in_the_default_domain_does_not_beat_steps_in_a_registered_one(self):
        t = T.Trace(self.dir + '/domains.db')
        for i in range(4):
            t.push('init %d' % i)
            t.alloc(10 * T.MiB, ['init_parameters', 'main'])
            t.pop()
        for i in range(10):
            t.push('train_step %d' % i, domain='trainer')
            for a in [t.alloc(8 * T.MiB, ['forward', 'main']) for _ in range(8)]:
                t.free(a)
            t.alloc(self.LEAK, ['keep_loss', 'main'])
            t.pop()
        n, how, slope = self.growth(t)
        self.assertEqual((n, slope), (10, self.LEAK), how)

    def test_a_marker_range_inside_each_nvtx_step_is_not_the_loop(self):
        t = T.Trace(self.dir + '/mixed.db')
        self.steps(t, inner='marker')
        for r in t.ranges:   # the shim counts depths per source: a marker range inside an NVTX one is at 0
            if r[0] == 'marker':
                r[6], r[7] = 0, None
        n, how, slope = self.growth(t)
        self.assertEqual((n, slope), (10, self.LEAK), how)

    def test_a_loader_threads_prefetching_ranges_are_not_the_loop(self):
        t = T.Trace(self.dir + '/loader.db')
        for i in range(14):   # the loader thread runs ahead of the loop
            t.tid = t.pid + 1
            t.push('load %d' % i)
            t.alloc(T.MiB, ['pin_batch', 'loader'], api='cudaMallocHost')
            t.pop()
            if i >= 4:
                t.tid = t.pid
                self.steps(t, n=1)
        n, how, slope = self.growth(t)
        self.assertEqual(n, 10, how)
        self.assertIn('thread %d' % t.pid, how)

    def test_a_step_whose_pop_was_skipped_does_not_swallow_the_rest_of_the_loop(self):
        # step 5's batch was skipped by an exception before its pop: every
        # later step is one level deeper, inside it (20 steps read as 6)
        t = T.Trace(self.dir + '/unpopped.db')
        for i in range(20):
            t.push('step %d' % i)
            for a in [t.alloc(8 * T.MiB, ['forward', 'main']) for _ in range(4)]:
                t.free(a)
            if i > 5:
                t.alloc(self.LEAK, ['keep_loss', 'main'])
            if i == 5:
                continue   # no pop
            t.pop()
        n, how, slope = self.growth(t)
        self.assertEqual((n, slope), (20, self.LEAK), how)



class LaterLoop(T.AnalyzerTest):
    """A second loop after the one found (an evaluation after training): what
    it left live at exit was told as "in use when the process ended" under
    "leaks: none" (a helper's probe); it is told apart, not judged, with the
    command that judges it."""
    MiB = T.MiB

    def train_then_eval(self, name, eval_keeps):
        t = T.Trace(os.path.join(self.dir, name))
        t.alloc(64 * self.MiB, ['init_weights', 'main'])
        for s in range(20):
            t.push('train_step %d' % s)
            t.free(t.alloc(8 * self.MiB, ['forward', 'train_step', 'main']))
            t.pop()
        kept = []
        for s in range(10):
            t.push('eval_step %d' % s)
            out = t.alloc(2 * self.MiB, ['predict', 'eval_step', 'main'])
            if eval_keeps:
                kept.append(out)
            else:
                t.free(out)
            t.pop()
        return t.close()

    def test_what_a_later_loop_left_live_is_told_apart_and_how_to_judge_it(self):
        db = self.train_then_eval('eval.db', eval_keeps=True)
        d = self.json('leaks', db)
        self.assertEqual(d['total_bytes'], 0)   # the training loop kept nothing
        self.assertEqual(d['later_loop'], {'name': 'eval_step 0', 'ranges': 10, 'bytes': 20 * self.MiB, 'count': 10})
        self.assertIn("gputrace leaks --iteration 'eval_step 0' tells whether it accumulated", self.ok('leaks', db).stdout)
        s = self.json('summary', db)
        self.assertEqual(s['leaks_later_loop']['bytes'], 20 * self.MiB)
        self.assertIn('leaks: none in the loop; 20.00 MiB live at exit was made in a later loop (10 ranges "eval_step 0"),'
                      ' not judged', self.ok('summary', db).stdout)
        # and the command it names judges it: 2 MiB an iteration
        named = self.json('leaks', '--iteration', 'eval_step 0', db)
        self.assertEqual(named['total_bytes'], 20 * self.MiB)   # the site grows: all it keeps, the first's too
        self.assertIsNone(named['later_loop'])

    def test_a_later_loop_that_frees_what_it_makes_is_not_named(self):
        db = self.train_then_eval('clean.db', eval_keeps=False)
        self.assertIsNone(self.json('leaks', db)['later_loop'])
        self.assertIsNone(self.json('summary', db)['leaks_later_loop'])
        self.assertIn('  leaks: none\n', self.ok('summary', db).stdout)


class MadeOnce(T.AnalyzerTest):
    """One buffer made in one iteration of a marked loop and kept: it was a
    leak "iteration after iteration" when made in iteration 5 of 10 (growth:
    a one-off, stable), and "allocated in the last iteration or after the
    loop" when made in iteration 8 (a helper's probe)."""
    MiB = T.MiB

    def loop(self, name, keep_at, steps=10):
        t = T.Trace(os.path.join(self.dir, name))
        t.alloc(64 * self.MiB, ['init_weights', 'main'])
        for s in range(steps):
            t.iteration(s, 8)
            t.free(t.alloc(4 * self.MiB, ['forward', 'main']))
            if s in keep_at:
                t.alloc(8 * self.MiB, ['make_buffer', 'main'])
        return t.close()

    def test_a_buffer_made_once_in_the_loop_is_not_a_leak_and_says_so(self):
        # (in the loop's first half it is held steady: a buffer made once and reused, as before)
        d = self.json('leaks', self.loop('early.db', {2}))
        self.assertEqual((d['total_bytes'], d['held_steady_bytes']), (0, 8 * self.MiB))
        for k in (5, 7):
            db = self.loop('once-%d.db' % k, {k})
            d = self.json('leaks', db)
            self.assertEqual((k, d['total_bytes'], d['made_once_bytes'], d['made_once_count']), (k, 0, 8 * self.MiB, 1))
            self.assertEqual(self.json('growth', db)['verdict'], 'stable')
            self.assertIn('Made once during the loop and kept', self.ok('leaks', db).stdout)
            self.assertEqual(self.json('summary', db)['made_once_bytes'], 8 * self.MiB)

    def test_kept_in_the_iteration_before_the_last_is_said_to_be_late_in_the_loop(self):
        d = self.json('leaks', self.loop('late.db', {8}))
        self.assertEqual((d['total_bytes'], d['made_once_bytes'], d['at_end_bytes']), (0, 0, 8 * self.MiB))
        self.assertIn("In use when the process ended (allocated in the loop's last two iterations or after it)",
                      self.ok('leaks', os.path.join(self.dir, 'late.db')).stdout)

    def test_a_buffer_kept_every_fifth_iteration_is_still_a_leak(self):
        # kept at 0 and 5 of 10: the first is in the first iteration, so the site recurs
        d = self.json('leaks', self.loop('fifth.db', {0, 5}))
        self.assertEqual((d['total_bytes'], d['made_once_bytes']), (16 * self.MiB, 0))
        # kept at 3 and 6: two iterations of the loop
        d = self.json('leaks', self.loop('twice.db', {3, 6}))
        self.assertEqual((d['total_bytes'], d['made_once_bytes']), (16 * self.MiB, 0))
        # kept at 5 and again in the last iteration: it recurs (a review found it called made once)
        for keep in ({5, 9}, {4, 8}):
            d = self.json('leaks', self.loop('late-%d.db' % min(keep), keep))
            self.assertEqual((keep, d['total_bytes'], d['made_once_bytes']), (keep, 16 * self.MiB, 0))
