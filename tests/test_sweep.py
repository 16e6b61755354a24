"""`gputrace sweep`: the largest batch size that fits, found from a model and
proven by real runs of tests/progs/sweep_train (memory per step exactly
fixed + per_sample x batch size) under the CUDA stand-in's device limit
(FAKE_CUDA_DEVICE_BYTES): the exact boundary, verified, in at most 10 runs,
with linear memory and with a step in per-sample cost; a failed run's lower
bound of its need; failures that are not out of memory; {bs} and
GPUTRACE_BATCH_SIZE; --max-runs; a preallocating program."""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import gtlib
from gtlib import GPUTRACE, TraceTest, base_env, prog, query, run

MIB = 1 << 20
DEVICE = 1024 * MIB
POOL_DRAW = 0.051   # the least room for a pool's draw, a share of bytes in use (GT_SWEEP_POOL_DRAW, analyzer/sweep.h)


class SweepTest(TraceTest):
    def sweep(self, args, cmd, device=DEVICE, dirname='sweep', cwd=None):
        """gputrace sweep ARGS --dir DIR -- sweep_train CMD...; returns (proc, dir)."""
        d = os.path.join(self.dir, dirname)
        argv = [GPUTRACE, 'sweep', '--dir', d] + args + ['--'] + cmd
        p = run(argv, preload=False, env=base_env(FAKE_CUDA_DEVICE_BYTES=device), cwd=cwd or self.dir)
        return p, d

    def sweep_json(self, args, cmd, **kw):
        p, d = self.sweep(['--json'] + args, cmd, **kw)
        return p, json.loads(p.stdout), d

    def train(self, *args):
        return [prog('sweep_train'), '--batch-size', '{bs}'] + [str(a) for a in args]

    def test_linear_memory_gives_the_exact_largest_batch_verified_in_at_most_10_runs(self):
        # 64 MiB + 3 MiB per sample in 1 GiB: (1024 - 64) / 3 = 320 exactly
        p, doc, d = self.sweep_json([], self.train())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(doc['max_batch_size'], 320)
        self.assertEqual(doc['min_failing_batch_size'], 321)
        self.assertTrue(doc['verified'])
        self.assertLessEqual(doc['runs_used'], 10)
        self.assertEqual(doc['predicted_max_batch_size'], 320)
        self.assertEqual(doc['memory'], 'device')
        self.assertEqual(doc['device_total_bytes'], DEVICE)
        fit = doc['fit']
        self.assertAlmostEqual(fit['fixed_bytes'], 64 * MIB, delta=1)
        self.assertAlmostEqual(fit['per_sample_bytes'], 3 * MIB, delta=1)
        self.assertTrue(fit['linear'])
        runs = doc['runs']
        self.assertEqual(len(runs), doc['runs_used'])
        # phase 1 is 1, 2, 4: one line holds them, so the prediction comes next
        self.assertEqual([r['batch_size'] for r in runs], [1, 2, 4, 320, 321, 320])
        self.assertEqual([r['oom'] for r in runs], [False] * 4 + [True, False])
        self.assertEqual([r['phase'] for r in runs], ['model'] * 3 + ['search', 'search', 'repeat'])
        for r in runs:
            self.assertTrue(os.path.exists(r['trace']), r)
            if not r['oom']:
                self.assertEqual(r['peak_bytes'], 64 * MIB + 3 * MIB * r['batch_size'])
                self.assertEqual(r['exit_status'], 0)
            self.assertGreater(r['seconds'], 0)
        self.assertEqual(runs[4]['exit_status'], 1)   # the program's own OOM exit; the trace says OOM
        self.assertIsNone(runs[4]['peak_bytes'])
        # 321 failed at its gradients (16 MiB), with the model and optimizer
        # state (48 MiB), its input and activation (481.5 MiB each) live: the
        # trace shows it needed at least all of its 64 + 3 x 321 MiB
        self.assertEqual(runs[4]['needed_at_least_bytes'], 64 * MIB + 321 * 3 * MIB)
        self.assertIsNone(runs[3]['needed_at_least_bytes'])
        # one progress line per run on stderr
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace sweep: run ')]
        self.assertEqual(len(lines), 6, p.stderr)
        self.assertIn('batch size 321 (search): out of memory', lines[4])
        self.assertRegex(lines[0], r'batch size 1 \(model\): fits, peak 67\.00 MiB \(device\), [\d.]+ s; [\d.]+ s in all')

    def test_a_flight_recorder_asked_for_in_the_environment_is_not_passed_to_the_runs(self):
        # a window keeps a run's last seconds: a peak before them was gone and
        # a 913 MiB run read as 11 MiB; each run's peak is its whole life's
        d = os.path.join(self.dir, 'sweep')
        p = run([GPUTRACE, 'sweep', '--json', '--dir', d, '--batch-sizes', '1,2,4', '--max-runs', '3', '--']
                + self.train(), preload=False, env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE, GPUTRACE_WINDOW_S='1'),
                cwd=self.dir)
        self.assertIn('GPUTRACE_WINDOW_S=1 is not passed on', p.stderr)
        doc = json.loads(p.stdout)
        for r in doc['runs']:
            self.assertEqual(query(r['trace'], 'SELECT count(*) FROM flight_recorder'), [(0,)])

    def test_an_interrupted_sweep_says_what_it_proved_and_dies_of_the_signal(self):
        # ^C or kill -INT to the sweep: it exited 12 ("a run failed"), the cut run tabled as failed 130
        import signal
        import subprocess
        import time
        d = os.path.join(self.dir, 'sweep')
        cmd = ['/bin/sh', '-c', 'sleep 0.4; exec "$0" --batch-size "$1"', prog('sweep_train'), '{bs}']
        proc = subprocess.Popen([GPUTRACE, 'sweep', '--json', '--dir', d, '--'] + cmd,
                                env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE), cwd=self.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)   # a run or three done, one under way
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, -signal.SIGINT, err)
        self.assertIn('stopped: interrupted (Interrupt)', err)
        doc = json.loads(out)
        self.assertTrue(doc['runs'])
        self.assertTrue(all(r['exit_status'] == 0 for r in doc['runs']), doc['runs'])

    def test_a_batch_size_past_what_the_shim_takes_is_refused(self):
        # GPUTRACE_BATCH_SIZE is read up to 2^31 - 1: a run of 2^31 had no batch size in its trace
        p, _ = self.sweep(['--batch-sizes', '2147483648'], self.train())
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('from 1 to 2147483647', p.stderr)

    def test_memory_held_for_cuda_graphs_is_in_each_run_s_peak(self):
        # a graph captured in the first step holds 100 MiB for its node, with no
        # traced call: (1024 - 64 - 100) / 3 = 286.7, so 286 fits
        p, doc, d = self.sweep_json([], self.train('--graph', 100 * MIB))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size']), (286, 287))
        self.assertTrue(doc['verified'])
        fits = [r for r in doc['runs'] if not r['oom']]
        self.assertTrue(fits)
        for r in fits:
            self.assertEqual(r['peak_bytes'], 164 * MIB + 3 * MIB * r['batch_size'], r)
        self.assertEqual(doc['predicted_max_batch_size'], 286)
        # a run out of memory: the graph's memory is its own need, not memory held outside the trace
        self.assertEqual(doc['unaccounted_bytes'], 0)
        failed = [r for r in doc['runs'] if r['oom']]
        self.assertTrue(failed)
        for r in failed:
            self.assertGreaterEqual(r['needed_at_least_bytes'], 164 * MIB + 3 * MIB * r['batch_size'], r)

    def test_text_output_shows_table_fit_prediction_and_proof(self):
        p, d = self.sweep([], self.train())
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        self.assertRegex(out, r'run\s+batch\s+phase\s+peak\s+result\s+exit\s+seconds')
        self.assertRegex(out, r'\n\s+5\s+321\s+search\s+-\s+OOM\s+1\s')
        self.assertIn('fit: peak = 64.00 MiB + 3.00 MiB x batch_size', out)
        self.assertIn('predicted largest batch size: 320', out)
        self.assertIn('largest batch size that fits: 320 (proven: 320 ran twice, 321 ran out of memory)', out)
        self.assertRegex(out, r'runs: 6, [\d.]+ s in all')

    def test_batch_size_that_fits_only_sometimes_is_said_apart_and_not_the_answer(self):
        # 320 fits on its first run and needs one sample more on every later
        # one (a pool's fragmentation at the boundary, as on the H100): the
        # repeat of 320 runs out of memory, so the answer is 319, proven
        flag = os.path.join(self.dir, 'ran-once')
        p, doc, d = self.sweep_json([], self.train('--unsteady-at', 320, '--unsteady-file', flag))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (319, 320, True))
        self.assertEqual(doc['unsteady'], [{'batch_size': 320, 'runs': 2, 'fits': 1}])
        self.assertEqual([r['oom'] for r in doc['runs'] if r['batch_size'] == 320], [False, True])
        os.unlink(flag)
        p, d = self.sweep([], self.train('--unsteady-at', 320, '--unsteady-file', flag), dirname='sweep2')
        self.assertIn('unsteady: batch size 320 (fit in 1 of 2 runs)', p.stdout)
        self.assertIn('largest batch size that fits: 319 (proven: 319 ran twice, 320 ran out of memory)', p.stdout)
        # a steady sweep says nothing of it
        p, doc, d = self.sweep_json([], self.train(), dirname='sweep3')
        self.assertEqual(doc['unsteady'], [])

    def test_largest_whose_two_runs_peak_half_a_sample_apart_answers_below_it_with_that_room(self):
        # 64 MiB + 3 MiB per sample in 1 GiB, and each size's first run holds
        # 2 MiB more: first runs fit up to 319, a second run at 320 would. 319's
        # two runs peak 2 MiB apart, two thirds of a sample: a fresh run there
        # fits or not by chance, and the answer is 318, proven by its own runs
        flag = os.path.join(self.dir, 'spread')
        p, doc, d = self.sweep_json([], self.train('--spread', 2 * MIB, '--spread-file', flag))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (318, 320, True))
        self.assertEqual(doc['max_batch_size_fits'], 2)
        # (no pool: no draw's room; 319's higher peak left 1 MiB of the 1 GiB)
        self.assertEqual(doc['margin'], {'batch_size': 319, 'fits': 2, 'spread_bytes': 2 * MIB,
                                         'room_bytes': 2 * MIB, 'room_for': 'spread', 'pool_draw_bytes': None,
                                         'left_bytes': MIB, 'per_sample_bytes': 3 * MIB, 'taken': True})
        peaks = sorted(r['peak_bytes'] for r in doc['runs'] if r['batch_size'] == 319)
        self.assertEqual(peaks, [64 * MIB + 319 * 3 * MIB, 64 * MIB + 319 * 3 * MIB + 2 * MIB])
        self.assertEqual([r['phase'] for r in doc['runs'] if r['batch_size'] == 318], ['margin', 'margin'])
        for name in os.listdir(self.dir):
            if name.startswith('spread.'):
                os.unlink(os.path.join(self.dir, name))
        p, d = self.sweep([], self.train('--spread', 2 * MIB, '--spread-file', flag), dirname='sweep2')
        self.assertIn('largest batch size that fits: 318 (proven with room: 318 ran twice; 319 ran twice, 320 ran '
                      'out of memory; see margin)', p.stdout)
        self.assertIn('margin: batch size 319 fit in all 2 of its runs, but their peaks differed by 2.00 MiB, '
                      '0.7 samples of 3.00 MiB', p.stdout)
        # a spread under half a sample (1 MiB of 3) is no margin: 319 is the answer
        for name in os.listdir(self.dir):
            if name.startswith('spread.'):
                os.unlink(os.path.join(self.dir, name))
        p, doc, d = self.sweep_json([], self.train('--spread', MIB, '--spread-file', flag), dirname='sweep3')
        self.assertEqual((doc['max_batch_size'], doc['verified'], doc['margin']), (319, True, None))

    def test_repeat_asks_the_largest_to_fit_that_many_times(self):
        # 320 fits in its first two runs and not in its third: the default proof
        # (two fits) takes 320; --repeat 3 runs it a third time and proves 319
        flag = os.path.join(self.dir, 'runs-at-320')
        p, doc, d = self.sweep_json([], self.train('--unsteady-at', 320, '--unsteady-file', flag,
                                                   '--unsteady-fits', 2))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['verified'], doc['fits_required'], doc['max_batch_size_fits']),
                         (320, True, 2, 2))
        os.unlink(flag)
        p, doc, d = self.sweep_json(['--repeat', '3'], self.train('--unsteady-at', 320, '--unsteady-file', flag,
                                                                  '--unsteady-fits', 2), dirname='sweep2')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (319, 320, True))
        self.assertEqual([r['oom'] for r in doc['runs'] if r['batch_size'] == 320], [False, False, True])
        self.assertEqual([r['oom'] for r in doc['runs'] if r['batch_size'] == 319], [False] * 3)
        self.assertEqual((doc['fits_required'], doc['max_batch_size_fits']), (3, 3))
        self.assertEqual(doc['unsteady'], [{'batch_size': 320, 'runs': 3, 'fits': 2}])
        # steady: the largest runs three times in all, and the text says so
        p, d = self.sweep(['--repeat', '3'], self.train(), dirname='sweep3')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('largest batch size that fits: 320 (proven: 320 ran 3 times, 321 ran out of memory)', p.stdout)
        # --max-runs reached between the second and third: not proven, and the text says how far it got
        p, d = self.sweep(['--repeat', '3', '--max-runs', '6'], self.train(), dirname='sweep4')
        self.assertEqual(p.returncode, 14, p.stderr)
        self.assertIn('320 (not proven: 320 ran 2 of the 3 times asked (--repeat), 321 ran out of memory)', p.stdout)

    def test_traces_are_named_by_batch_size_and_run_and_children_get_their_own(self):
        # a shell that uses no CUDA starts two trainers: two traces per run
        cmd = ['/bin/sh', '-c', '"$0" --batch-size "$1" & "$0" --batch-size "$1"; wait', prog('sweep_train'), '{bs}']
        p, doc, d = self.sweep_json(['--batch-sizes', '1,2', '--max-runs', '2'], cmd)
        self.assertEqual(p.returncode, 14, p.stderr)
        names = sorted(os.listdir(d))
        self.assertIn('bs1-run1.db', names)
        self.assertIn('bs2-run2.stderr', names)
        self.assertEqual(len([n for n in names if re.match(r'^bs1-run1\.\d+\.db$', n)]), 1, names)
        self.assertEqual([r['traces'] for r in doc['runs']], [2, 2])
        self.assertEqual([r['peak_bytes'] for r in doc['runs']], [67 * MIB, 70 * MIB])

    def test_a_margin_whose_size_runs_out_of_memory_goes_on_just_below_it(self):
        # as above, 319's runs peak 2 MiB apart and the margin asks for 318;
        # but 318 fails (--oom-at: its forward asks for 1 MiB more than the
        # device has free, as a shape near the boundary a pool cannot place
        # while a larger one fits). The search goes on below it, one size
        # down at once (its trace puts the boundary just below it), and 317
        # is the answer, proven twice (the walk that follows further failures
        # is test_sweep_plan's a_margin_that_fails_in_a_band_walks_down_from_it)
        flag = os.path.join(self.dir, 'spread')
        cmd = self.train('--spread', 2 * MIB, '--spread-file', flag, '--oom-at', 318)
        p, doc, d = self.sweep_json([], cmd)
        self.assertEqual(p.returncode, 0, p.stderr)
        runs = [(r['batch_size'], r['oom'], r['phase']) for r in doc['runs']]
        self.assertEqual(runs[-3:], [(318, True, 'margin'), (317, False, 'search'), (317, False, 'repeat')])
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (317, 318, True))
        self.assertEqual((doc['margin']['batch_size'], doc['margin']['taken']), (319, False))
        self.assertEqual(doc['max_batch_size_fits'], 2)
        # its trace: 1 MiB past the device's end
        failed = [r for r in doc['runs'] if r['batch_size'] == 318][0]
        self.assertEqual(failed['needed_at_least_bytes'], DEVICE + MIB)
        cmd[cmd.index(flag)] = flag + '-text'   # (each size's first run again)
        p, d = self.sweep([], cmd, dirname='sweep-text')
        self.assertIn('largest batch size that fits: 317 (proven: 317 ran twice, 318 ran out of memory)', p.stdout)
        self.assertIn('The size that left that much room ran out of memory, and the\n  search went on below it', p.stdout)

    def test_step_in_per_sample_cost_still_ends_on_the_proven_boundary_in_at_most_10_runs(self):
        # 2 MiB per sample up to batch 100, 6 MiB above: the line through
        # 1, 2, 4 predicts 480; the truth is (1024 - 64) / 6 = 160. 480's
        # trace shows it needed at least 1.45 GiB: the next steps are
        # interpolated from that, not walked down from 480
        p, doc, d = self.sweep_json([], self.train('--per-sample', 2 * MIB, '--knee', 100, '--per-sample-above', 6 * MIB))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(doc['predicted_max_batch_size'], 480)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (160, 161, True))
        self.assertLessEqual(doc['runs_used'], 10)
        self.assertEqual(doc['runs'][3]['needed_at_least_bytes'], 48 * MIB + 480 * 3 * MIB)   # its input failed
        # a step inside phase 1 (2 MiB per sample up to 3, 6 above): not
        # linear; phase 1 stays 1, 2, 4 (the fit keeps 2 and 4: 10 MiB per
        # sample) and the search's first large run and the secant through
        # it find the boundary
        p, doc, d = self.sweep_json([], self.train('--per-sample', 2 * MIB, '--knee', 3, '--per-sample-above', 6 * MIB),
                                    dirname='sweep2')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(doc['fit']['linear'])
        self.assertEqual([r['batch_size'] for r in doc['runs'] if r['phase'] == 'model'], [1, 2, 4])
        self.assertEqual(doc['fit']['from_batch_size'], 2)
        self.assertAlmostEqual(doc['fit']['per_sample_bytes'], 10 * MIB, delta=1)
        self.assertEqual((doc['max_batch_size'], doc['verified']), (160, True))
        self.assertLessEqual(doc['runs_used'], 8)
        p, d = self.sweep([], self.train('--per-sample', 2 * MIB, '--knee', 3, '--per-sample-above', 6 * MIB),
                          dirname='sweep3')
        self.assertIn('not linear', p.stdout)

    def test_pool_memory_is_fitted_and_device_memory_beside_it_is_held_outside(self):
        # cudaMallocAsync tensors, a 128 MiB cudaMalloc workspace: (1024 - 128 - 64) / 3 = 277
        # fits, its 895 MiB in use reserving all 896 (the pool maps 2 MiB
        # pages); a fresh run's pool may draw 5.1% of them more, 45.64 MiB,
        # 15.2 samples of 3 MiB, so the answer is 261
        p, doc, d = self.sweep_json([], self.train('--async', '--workspace', 128 * MIB))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['memory'], doc['outside_bytes'], doc['available_bytes']), ('pool', 128 * MIB, 896 * MIB))
        self.assertEqual((doc['min_failing_batch_size'], doc['verified']), (278, True))
        m = doc['margin']
        self.assertEqual((m['batch_size'], m['fits'], m['room_for'], m['left_bytes'], m['taken']),
                         (277, 2, 'pool_draw', 0, True))
        draw = POOL_DRAW * 895 * MIB
        self.assertEqual(m['pool_draw_bytes'], int(draw))
        self.assertEqual(m['room_bytes'], math.ceil(draw))
        self.assertEqual(doc['max_batch_size'], 277 - math.ceil(draw / (3 * MIB)))
        self.assertEqual(doc['max_batch_size'], 261)
        self.assertEqual(doc['max_batch_size_fits'], 2)
        self.assertLessEqual(doc['runs_used'], 12)
        # the text says why; a device-level sweep says nothing of a pool
        p, d = self.sweep([], self.train('--async', '--workspace', 128 * MIB), dirname='sweep2')
        self.assertIn('largest batch size that fits: 261 (proven with room: 261 ran twice; 277 ran twice, 278 ran out '
                      'of memory; see margin)', p.stdout)
        self.assertIn("margin: batch size 277 fit in all 2 of its runs, at the end of what was available at its "
                      "peak.\n  Under a stream-ordered pool", p.stdout)
        self.assertIn("varied by up to 5.1% of its bytes in\n  use", p.stdout)
        self.assertIn('Drawing %.2f MiB more, 277 would pass the end by\n  %.2f MiB, %.1f samples of 3.00 MiB.\n'
                      '  The answer is 261, which leaves that much room' % (
                          int(draw) / MIB, math.ceil(draw) / MIB, math.ceil(draw) / (3 * MIB)), p.stdout)
        p, d = self.sweep([], self.train(), dirname='sweep3')
        self.assertNotIn('stream-ordered pool', p.stdout)

    def test_a_reservation_that_met_the_device_s_end_counts_in_the_spread(self):
        # cudaMallocAsync tensors, 64 MiB + 3 MiB x bs in use; above 200 the
        # device holds 700 MiB more (untraced), so 200 is the largest. Every
        # run of a size but its first, the stand-in's pool reserves all the
        # device has but 1 MiB (as a fresh run's pool on an H200 reserved
        # 138.81 GiB where another held 132.94 for the same 116.20 in use).
        # 200's runs reserve 664 MiB and 1022 MiB: a fresh run's pool can
        # take that much more, and the margin leaves that 358 MiB as room
        # (more than the draw's 5.1% of 664 MiB), 120 samples: 80
        flag = os.path.join(self.dir, 'runs')
        cmd = self.train('--async', '--untraced-above', '200:%d' % (700 * MIB), '--grab-leave', MIB,
                         '--spread-file', flag)
        p, doc, d = self.sweep_json(['--max-runs', '30'], cmd)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['memory'], doc['min_failing_batch_size'], doc['verified']), ('pool', 201, True))
        peaks = sorted(r['peak_bytes'] for r in doc['runs'] if r['batch_size'] == 200 and not r['oom'])
        self.assertEqual(peaks, [664 * MIB, DEVICE - 2 * MIB])
        m = doc['margin']
        self.assertEqual((m['batch_size'], m['fits'], m['spread_bytes'], m['room_bytes']), (200, 2, 358 * MIB, 358 * MIB))
        self.assertEqual((m['room_for'], m['left_bytes'], m['taken']), ('spread', 2 * MIB, True))
        self.assertEqual(doc['max_batch_size'], 200 - math.ceil(358 * MIB / m['per_sample_bytes']))
        self.assertEqual(doc['max_batch_size'], 80)

    def test_runs_failed_outside_a_pool_that_kept_the_device_are_named(self):
        # each size's first run fits; every later one, the stand-in's pool
        # reserves all but 6 MiB at its first allocation and the step's own
        # 14 MiB cudaMalloc (a library's, outside the pool) fails: the band of
        # a pool that keeps the device. The pool's reserve beyond its use (10
        # to 13 MiB) covers what the request was short by, not the whole one.
        # The runs that failed so are named, with that reserve, and gputrace
        # oom agrees on each.
        flag = os.path.join(self.dir, 'runs')
        cmd = self.train('--async', '--lib-alloc', 14 * MIB, '--grab-leave', 6 * MIB, '--spread-file', flag)
        p, doc, d = self.sweep_json(['--max-runs', '14'], cmd)
        kept = [r for r in doc['runs'] if r['pool_unused_bytes'] is not None]
        self.assertTrue(kept, doc['runs'])
        for r in doc['runs']:
            o = json.loads(run([GPUTRACE, 'oom', '--json', r['trace']], preload=False).stdout)
            f = o['failures'][0] if o['failures'] else None
            self.assertEqual(r['pool_unused_bytes'] is not None, bool(f and f['pool_unused_bytes'] is not None),
                             (r, f))
            if r['pool_unused_bytes'] is not None:
                self.assertTrue(r['oom'])
                self.assertEqual(f['api'], 'cudaMalloc')
                self.assertEqual(r['pool_unused_bytes'], f['pool_unused_bytes'])
        # the case: some failed with a reserve short of the whole request
        self.assertTrue([r for r in kept if r['pool_unused_bytes'] < 14 * MIB], [r['pool_unused_bytes'] for r in kept])
        cmd = self.train('--async', '--lib-alloc', 14 * MIB, '--grab-leave', 6 * MIB, '--spread-file', flag + '2')
        text = self.sweep(['--max-runs', '14'], cmd, dirname='sweep2')[0]   # the same runs, in text
        self.assertIn('failed outside the pool: run %d (batch size %d, cudaMalloc)' % (kept[0]['run'], kept[0]['batch_size']),
                      text.stdout)
        self.assertIn("a cudaMalloc outside the pool, which held", text.stderr)

    def test_runs_failed_in_a_pool_that_held_more_unused_than_asked_for_are_named(self):
        # the stand-in's pools keep their unused reserve in pieces of at most
        # 1 MiB (FAKE_CUDA_POOL_PIECE): each step's batch, activation and
        # gradients grow the pool anew, so a run fails in its later steps with
        # its pool mostly unused, as 16 of 17 failures of a conv net near its
        # limit under cudaMallocAsync did on an H200. The runs that failed so
        # are named, and gputrace oom agrees on each.
        cmd = self.train('--async')
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE, FAKE_CUDA_POOL_PIECE=MIB)
        out = {}
        for form in ('json', 'text'):
            d = os.path.join(self.dir, form)
            p = run([GPUTRACE, 'sweep', '--dir', d] + (['--json'] if form == 'json' else []) + ['--'] + cmd,
                    preload=False, env=env, cwd=self.dir)
            self.assertEqual(p.returncode, 0, p.stderr)
            out[form] = p
        doc = json.loads(out['json'].stdout)
        self.assertTrue(doc['verified'])
        split = [r for r in doc['runs'] if r['pool_split_bytes'] is not None]
        self.assertTrue(split, doc['runs'])
        for r in doc['runs']:
            o = json.loads(run([GPUTRACE, 'oom', '--json', r['trace']], preload=False).stdout)
            f = o['failures'][0] if o['failures'] else None
            self.assertEqual(r['pool_split_bytes'], f and f['pool_split_bytes'], (r, f))
            if f and f['pool_split_bytes'] is not None:
                self.assertTrue(r['oom'])
                self.assertEqual(f['api'], 'cudaMallocAsync')
                self.assertGreaterEqual(f['pool_split_bytes'], f['requested_bytes'])
                self.assertIsNone(r['pool_unused_bytes'])
        first = split[0]
        self.assertIn('failed in the pool while it held enough unused: run %d (batch size %d)'
                      % (first['run'], first['batch_size']), out['text'].stdout)
        self.assertIn('in the pool, which held', out['text'].stderr)

    def test_a_pool_slack_drawn_higher_in_another_run_gets_room_below_the_largest(self):
        # the stand-in's pool holds 3% beyond its allocations, 64 MiB + 3 MiB
        # x bs in use: 310 fits (1023.8 MiB), 311 does not. With the same 3% in
        # every run the answer is 310, no margin; when phase 1's runs of 100
        # and 150 drew 8% (as a fresh cudaMallocAsync run draws a higher
        # slack by chance: 3.4% to 6.6% on an H100), 310's two runs at 3% say
        # nothing of a run that draws 8%, and the answer leaves room for it
        def inuse(bs):
            return 64 * MIB + 3 * MIB * bs
        self.assertLessEqual(inuse(310) * 1.03, DEVICE)
        self.assertGreater(inuse(311) * 1.03, DEVICE)
        cmd = self.train('--async')
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE, FAKE_CUDA_POOL_FRAGMENTATION=3)
        for name, extra in (('even', []), ('drawn', ['--pool-slack-below', '150:8'])):
            d = os.path.join(self.dir, name)
            p = run([GPUTRACE, 'sweep', '--json', '--batch-sizes', '1,2,100,150', '--dir', d, '--'] + cmd + extra,
                    preload=False, env=env, cwd=self.dir)
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            self.assertTrue(doc['verified'])
            self.assertEqual(doc['min_failing_batch_size'], 311)
            m, slack = doc['margin'], doc['pool_slack']
            if name == 'even':
                # no run drew more than the largest's own (the fixed part is
                # taken from batch size 1, so smaller runs' shares come out
                # lower): the room is the draw's, 5.1% of 310's in use less
                # what its highest reservation left of the device
                self.assertEqual(slack['max_share'], slack['largest_share'])
                self.assertEqual(slack['max_share_batch_size'], 310)
                top = max(r['peak_bytes'] for r in doc['runs'] if r['batch_size'] == 310)
                self.assertEqual((m['batch_size'], m['room_for'], m['left_bytes']), (310, 'pool_draw', DEVICE - top))
                self.assertEqual(m['pool_draw_bytes'], int(POOL_DRAW * inuse(310)))
                self.assertEqual(m['room_bytes'], math.ceil(POOL_DRAW * inuse(310) - (DEVICE - top)))
                self.assertEqual(doc['max_batch_size'], 310 - math.ceil(m['room_bytes'] / m['per_sample_bytes']))
                self.assertAlmostEqual(m['per_sample_bytes'], 3.09 * MIB, delta=0.01 * MIB)   # (3 MiB and 3%)
                continue
            self.assertEqual(m['room_for'], 'pool_slack')   # (more than the draw's)
            self.assertEqual((m['batch_size'], m['fits'], m['spread_bytes'], m['taken']), (310, 2, 0, True))
            # shares beyond the least slack (batch size 1's) and a page: 150's
            # 8% less ~7 MiB of 514, 310's 3% less that of 994
            self.assertGreater(slack['max_share'], 0.065)
            self.assertLess(slack['max_share'], 0.08)
            self.assertLess(slack['largest_share'], 0.03)
            self.assertIn(slack['max_share_batch_size'], (100, 150))
            self.assertGreater(m['room_bytes'], POOL_DRAW * inuse(310))
            answer = doc['max_batch_size']
            self.assertEqual(answer, 310 - math.ceil(m['room_bytes'] / m['per_sample_bytes']))
            self.assertGreaterEqual(answer, 0.9 * 310)
            self.assertEqual(doc['max_batch_size_fits'], 2)
            self.assertEqual([r['phase'] for r in doc['runs']].count('margin'), 2)
        p = run([GPUTRACE, 'sweep', '--batch-sizes', '1,2,100,150', '--dir', os.path.join(self.dir, 'text'), '--'] +
                cmd + ['--pool-slack-below', '150:8'], preload=False, env=env, cwd=self.dir)
        self.assertRegex(p.stdout, r"margin: batch size 310 fit in all 2 of its runs, its pool holding 2\.\d% of in use "
                                   r"beyond a fixed\n  part at most, but a run of 1[05]0 held [67]\.\d%")

    def test_pool_slack_is_in_the_peak_and_the_exact_boundary_is_found_in_at_most_10_runs(self):
        # the pool reserves 100 MiB beyond what it uses (FAKE_CUDA_POOL_SLACK_BYTES,
        # charged to the device); 128 MiB workspace beside it: the pool may
        # reserve 896 MiB, 164 MiB + 8 MiB x bs: 91 fits, 92 does not. Fitted
        # at bytes in use (64 + 8 x bs) the model asked for 104, and each
        # failure's shortfall (the pool's slack) lowered the bytes available.
        # The answer leaves the draw's room: 5.1% of 91's 792 MiB in use,
        # 40.39 MiB, less the 4 MiB it left, 4.5 samples: 86
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE, FAKE_CUDA_POOL_SLACK_BYTES=100 * MIB)
        d = os.path.join(self.dir, 'slack')
        p = run([GPUTRACE, 'sweep', '--json', '--dir', d, '--'] + self.train('--async', '--workspace', 128 * MIB,
                                                                              '--per-sample', 8 * MIB),
                preload=False, env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc['memory'], doc['margin']['batch_size'], doc['min_failing_batch_size'], doc['verified']),
                         ('pool', 91, 92, True))
        self.assertEqual((doc['max_batch_size'], doc['margin']['left_bytes']), (86, 4 * MIB))
        self.assertLessEqual(len([r for r in doc['runs'] if r['phase'] != 'margin']), 10)
        self.assertEqual(doc['available_bytes'], 896 * MIB)
        for r in doc['runs']:
            if not r['oom']:
                self.assertEqual(r['pool_in_use_bytes'], 64 * MIB + 8 * MIB * r['batch_size'], r)
                self.assertEqual(r['peak_bytes'], r['pool_in_use_bytes'] + 100 * MIB, r)
                self.assertTrue(r['pool_read'], r)
        self.assertRegex(p.stderr, r'batch size 1 \(model\): fits, peak 172\.00 MiB \(pool reserved; 72\.00 MiB in use\)')
        # a draw of 5.1% of 792 MiB, 40.39 MiB: the 4 MiB left take the first of it
        draw = POOL_DRAW * 792 * MIB
        p = run([GPUTRACE, 'sweep', '--dir', d + '-text', '--'] + self.train('--async', '--workspace', 128 * MIB,
                                                                             '--per-sample', 8 * MIB),
                preload=False, env=env, cwd=self.dir)
        self.assertIn('margin: batch size 91 fit in all 2 of its runs, 4.00 MiB short of the end of what was available '
                      'at its peak.', p.stdout)
        self.assertIn('Drawing %.2f MiB more, 91 would pass the end by\n  %.2f MiB, %.1f samples of 8.00 MiB.' % (
            int(draw) / MIB, math.ceil(draw - 4 * MIB) / MIB, math.ceil(draw - 4 * MIB) / (8 * MIB)), p.stdout)
        self.assertIn('Drawing 40.39 MiB more', p.stdout)

    def nvml_sweep(self, name, *train_args, **planted):
        """A sweep with the NVML stand-in and a 40 MiB CUDA context (in no trace)."""
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE, FAKE_CUDA_CONTEXT_BYTES=40 * MIB,
                       LD_LIBRARY_PATH=gtlib.WITH_NVML, **planted)
        out = {}
        for fmt in ('--json', '--text'):
            d = os.path.join(self.dir, name + fmt)
            p = run([GPUTRACE, 'sweep'] + ([fmt] if fmt == '--json' else []) + ['--dir', d, '--'] +
                    self.train(*train_args), preload=False, env=env, cwd=self.dir)
            self.assertEqual(p.returncode, 0, p.stderr)
            out[fmt] = json.loads(p.stdout) if fmt == '--json' else p.stdout
        return out['--json'], out['--text']

    def test_nvml_s_context_is_not_available_and_the_answer_s_headroom_is_measured(self):
        # 64 MiB + 3 MiB per sample; the context's 40 MiB leave 984 MiB:
        # 306 fits (982 MiB), 2 MiB from the end, two thirds of a sample
        doc, text = self.nvml_sweep('ctx')
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (306, 307, True))
        self.assertEqual(doc['untraced_bytes'], 40 * MIB)
        self.assertEqual(doc['available_bytes'], DEVICE - 40 * MIB)
        # NVML's figure before any failure: the first prediction is the boundary
        self.assertEqual(doc['predicted_max_batch_size'], 306)
        self.assertEqual([r['batch_size'] for r in doc['runs']], [1, 2, 4, 306, 307, 306])
        h = doc['headroom']
        self.assertEqual((h['batch_size'], h['bytes']), (306, DEVICE - 40 * MIB - (64 + 3 * 306) * MIB))
        self.assertAlmostEqual(h['sample_bytes'], 3 * MIB, delta=1)
        self.assertAlmostEqual(h['samples'], 2 / 3, places=3)
        self.assertEqual(h['one_sample_batch_size'], 305)
        self.assertIn('headroom: at its peak, the tightest run of 306 left 2.00 MiB of the device unused', text)
        self.assertIn('0.7 of a sample (3.00 MiB)', text)
        self.assertNotIn('less than a sample', text)   # (said under a pool only)
        # without NVML the headroom is not known, and not guessed
        p, doc, d = self.sweep_json([], self.train(), dirname='no-nvml')
        self.assertIsNone(doc['headroom'])
        self.assertIsNone(doc['untraced_bytes'])

    def test_a_pool_s_answer_with_less_than_a_sample_of_headroom_names_the_size_that_leaves_one(self):
        # the pool reserves 100 MiB beyond its use, 120 MiB workspace beside it
        # and the 40 MiB context: 164 + 32 x bs <= 864 MiB, 21 fits with 28
        # MiB left. Half a sample (16 MiB) is more than the draw's room (5.1%
        # of 736 MiB in use, 37.54 MiB, less those 28): no margin, but the line
        doc, text = self.nvml_sweep('pool', '--async', '--workspace', 120 * MIB, '--per-sample', 32 * MIB,
                                    FAKE_CUDA_POOL_SLACK_BYTES=100 * MIB)
        self.assertLess(2 * (POOL_DRAW * 736 - 28), 32)
        self.assertEqual((doc['memory'], doc['max_batch_size'], doc['verified'], doc['margin']),
                         ('pool', 21, True, None))
        self.assertEqual(doc['available_bytes'], DEVICE - 40 * MIB - 120 * MIB)
        h = doc['headroom']
        self.assertEqual(h['bytes'], DEVICE - 40 * MIB - 120 * MIB - (164 + 32 * 21) * MIB)
        self.assertEqual(h['bytes'], 28 * MIB)
        self.assertEqual(h['one_sample_batch_size'], 20)
        self.assertIn('less than a sample: under a stream-ordered pool', text)
        self.assertIn('so a run of 21 may fail; 20 leaves\n  60.00 MiB by the sample\'s slope', text)

    def test_a_next_size_that_needs_far_more_than_a_sample_is_said_with_what_its_trace_showed(self):
        # above 250 each step takes a 200 MiB workspace after its forward (as
        # cuDNN may choose another algorithm): 250 fits with 170 MiB left,
        # 56.7 samples, and 251 needs 48 + 3 x 251 + 200 = 1001 MiB of the 984
        doc, text = self.nvml_sweep('jump', '--workspace-above', '250:%d' % (200 * MIB))
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (250, 251, True))
        self.assertEqual(doc['headroom']['bytes'], (984 - 64 - 3 * 250) * MIB)
        self.assertIsNone(doc['headroom']['one_sample_batch_size'])
        self.assertIn('56.7 samples of 3.00 MiB', text)
        self.assertIn('yet 251 ran out of memory: its trace showed it needed at least 1001.00 MiB, 187.00 MiB more '
                      'than 250\'s peak\n  (62.3 samples)', text)
        # a plain boundary says nothing of the kind
        doc, text = self.nvml_sweep('plain')
        self.assertNotIn('yet 307', text)

    def test_a_next_size_refused_by_the_framework_is_said_so_not_explained_by_the_device(self):
        # above 250 the framework refuses in its own words before any CUDA
        # call (PyTorch past its memory fraction): the device had room
        doc, text = self.nvml_sweep('refused', '--refuse-above', 250)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (250, 251, True))
        self.assertEqual([r['oom_from'] for r in doc['runs'] if r['batch_size'] == 251], ['message'])
        self.assertIn("yet 251 ran out of memory by the program's own error, with no CUDA call failed", text)
        self.assertNotIn('no room for one more sample', text)

    def test_a_next_size_failed_by_memory_its_trace_does_not_hold_is_not_explained_by_it(self):
        # above 250 the stand-in driver takes 175 MiB at the start with no
        # traced call: 251 fails at its gradients, needing 3 MiB more than
        # 250's peak by its trace, well within the 170 MiB 250 left
        env = dict(FAKE_CUDA_DEVICE_BYTES=DEVICE, FAKE_CUDA_CONTEXT_BYTES=40 * MIB, LD_LIBRARY_PATH=gtlib.WITH_NVML)
        p = run([GPUTRACE, 'sweep', '--batch-sizes', '248,250,251', '--dir', os.path.join(self.dir, 'outside'), '--'] +
                self.train('--untraced-above', '250:%d' % (175 * MIB)), preload=False, env=base_env(**env), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('largest batch size that fits: 250 (proven', p.stdout)
        self.assertIn('yet 251 ran out of memory: its trace showed it needed at least 3.00 MiB more than 250\'s peak, '
                      'within\n  the room left; the rest of what failed it is not in its trace', p.stdout)
        self.assertNotIn('one more sample costs more than a sample', p.stdout)

    def test_a_program_that_exits_0_after_a_request_it_went_on_without_fit(self):
        # an optional 2 GiB cache tried last and skipped, then exit 0: "batch size 1 ran out of memory"
        # (a helper's probe); through a wrapper whose 0 says nothing of its program, a failure still counts
        script = os.path.join(self.dir, 'optional_cache.py')
        with open(script, 'w') as f:
            f.write('import ctypes, os, sys\nrt = ctypes.CDLL("libcudart.so.13")\n'
                    'bs = int(os.environ["GPUTRACE_BATCH_SIZE"])\np = ctypes.c_void_p()\n'
                    'if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t((64 + 3 * bs) << 20)):\n'
                    '    sys.exit("out of memory")\nrt.cudaFree(p)\n'
                    'q = ctypes.c_void_p()\n'
                    'print("cache", "on" if rt.cudaMalloc(ctypes.byref(q), ctypes.c_size_t(2048 << 20)) == 0 else "off")\n')
        p, doc, d = self.sweep_json([], [sys.executable, script])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (320, 321, True))
        p, doc, d = self.sweep_json([], ['sh', '-c', '"$0" "$1"; true', sys.executable, script], dirname='wrapped')
        self.assertTrue(all(r['oom'] for r in doc['runs']), doc['runs'])   # each run's trace ends on the 2 GiB
        self.assertIsNone(doc['max_batch_size'])

    def test_a_job_the_command_left_running_is_waited_for(self):
        # sh -c "train & sleep 0.3": its trace was read half written and called a fit (the model alone), and
        # the next run started beside it (a helper's probe)
        job = '"$0" --batch-size "$1" --start-ms 600 & sleep 0.3'
        p, doc, d = self.sweep_json([], ['sh', '-c', job, prog('sweep_train'), '{bs}'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (320, 321, True))
        self.assertIn("run 1's command returned while process", p.stderr)
        self.assertIn('which it left running, still writes its trace: waiting for it', p.stderr)
        self.assertTrue(all(r['seconds'] > 0.55 for r in doc['runs']), [r['seconds'] for r in doc['runs']])

    def test_failure_other_than_memory_stops_the_sweep_with_its_last_stderr_lines(self):
        p, doc, d = self.sweep_json([], self.train('--fail-above', 100))
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertEqual(doc['stopped'], 'failed')
        self.assertEqual(doc['runs'][-1]['exit_status'], 3)
        self.assertFalse(doc['runs'][-1]['oom'])
        self.assertFalse(doc['verified'])
        self.assertEqual(doc['max_batch_size'], 4)
        self.assertIn('run 4 (batch size 320) exited with status 3, and its trace does not end on an out-of-memory',
                      p.stderr)
        self.assertIn('ValueError: shapes (320, 3) and (4, 5) not aligned', p.stderr)
        # a progress bar redrawn with \r before the error (tqdm's): the lines as a terminal leaves them,
        # not 1,288 frames in one 64 KiB line (a helper's probe)
        bar = ('i=0; while [ $i -lt 2000 ]; do printf "\\r%d/2000 [00:01<00:00, 1000it/s]" $i >&2; i=$((i+1)); done; '
               'echo >&2; printf "x%.0s" $(seq 1000) >&2; echo >&2; exec "$0" --batch-size "$1" --fail-above 100')
        p, doc, d = self.sweep_json([], ['sh', '-c', bar, prog('sweep_train'), '{bs}'], dirname='sweep_bar')
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertIn('ValueError: shapes (320, 3) and (4, 5) not aligned', p.stderr)
        self.assertIn('    1999/2000 [00:01<00:00, 1000it/s]\n', p.stderr)
        self.assertIn('    ' + 'x' * 297 + '...\n', p.stderr)
        p, d = self.sweep([], ['sh', '-c', bar, prog('sweep_train'), '{bs}'], dirname='sweep_bar_text')
        self.assertIn("Sweep of: sh -c '", p.stdout)   # the command as a shell takes it back
        self.assertIn("""exec "$0" --batch-size "$1" --fail-above 100' %s {bs}\n""" % prog('sweep_train'), p.stdout)
        self.assertLess(max(len(l) for l in p.stderr.splitlines()), 320, p.stderr)
        # a crash, before the shim wrote anything
        p, doc, d = self.sweep_json([], self.train('--crash-above', 4), dirname='sweep2')
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertIn('run 4 (batch size 320) was killed by signal 6', p.stderr)
        self.assertEqual(doc['runs'][-1]['exit_status'], 128 + 6)
        # a command that cannot be run
        p, d = self.sweep([], ['/nonexistent/train', '{bs}'], dirname='sweep3')
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertIn("cannot run '/nonexistent/train'", p.stderr)

    def test_a_run_past_the_run_timeout_is_stopped_and_stops_the_sweep(self):
        # each step lasts 3 s: the first run would take 9 s; past --run-timeout
        # 1.5s it gets SIGTERM, and the sweep stops with its stderr's last lines
        import time
        t0 = time.monotonic()
        p, doc, d = self.sweep_json(['--run-timeout', '1.5s'], self.train('--step-ms', 3000))
        elapsed = time.monotonic() - t0
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertEqual((doc['stopped'], doc['runs_used']), ('run-timeout', 1))
        r = doc['runs'][0]
        self.assertTrue(r['timed_out'])
        self.assertEqual(r['exit_status'], 128 + 15)   # SIGTERM: the shim closed its trace and re-raised it
        self.assertFalse(r['oom'])
        self.assertIsNone(r['peak_bytes'])   # stopped, not ended: its trace's figures are partial
        self.assertLess(elapsed, 6, 'stopped at 1.5 s, not at the run\'s end (9 s)')
        self.assertIn('run 1 (batch size 1) did not end within --run-timeout 1.5 s', p.stderr)
        self.assertIn('stopped: it ran past --run-timeout', p.stderr)
        # runs that end in time are not touched by it
        p, doc, d = self.sweep_json(['--run-timeout', '10m'], self.train(), dirname='sweep2')
        self.assertEqual((p.returncode, doc['max_batch_size'], doc['verified']), (0, 320, True), p.stderr)
        self.assertFalse(any(r['timed_out'] for r in doc['runs']))
        for bad in ('soon', 'nan', 'inf', '0', '1e-12'):   # none of them a time to wait
            p, d = self.sweep(['--run-timeout', bad], self.train(), dirname='sweep-' + bad)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn('--run-timeout needs a time (e.g. 600, 10m, 1.5h), not "%s"' % bad, p.stderr)

    def test_under_a_run_timeout_interrupt_still_reaches_the_run(self):
        # with a timeout each run leads its own process group, which the
        # terminal's ^C does not reach: the sweep passes it on
        import signal
        import subprocess
        import time
        d = os.path.join(self.dir, 'sweep')
        argv = [GPUTRACE, 'sweep', '--json', '--run-timeout', '60', '--dir', d, '--'] + self.train('--step-ms', 3000)
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE)
        p = subprocess.Popen(argv, env=env, cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20   # the first run started (its files made just before), on a slow machine too
        while not os.path.exists(os.path.join(d, 'bs1-run1.stderr')) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        # the sweep stops, says what it proved (nothing yet) and dies of the signal;
        # the run got it too, and ended by it
        self.assertEqual(p.returncode, -signal.SIGINT, err)
        doc = json.loads(out)
        self.assertEqual((doc['stopped'], doc['runs']), ('interrupted', []), err)
        self.assertEqual(query(os.path.join(d, 'bs1-run1.db'), 'SELECT end_reason FROM processes'),
                         [('signal SIGINT',)])

    def test_the_run_timeout_stops_what_a_wrapper_started_too(self):
        # the command is a shell that starts the training and waits for it
        # (a launcher, a wrapper script): past the timeout both are stopped,
        # not only the shell, which would leave the run holding the device
        import time
        pidfile = os.path.join(self.dir, 'inner.pid')
        wrapper = ['sh', '-c', '"$@" & echo $! > %s; wait' % pidfile, 'wrapper'] + self.train('--step-ms', 3000)
        p, doc, d = self.sweep_json(['--run-timeout', '1s'], wrapper)
        self.assertEqual((p.returncode, doc['stopped']), (12, 'run-timeout'), p.stderr)
        inner = int(open(pidfile).read())
        deadline = time.monotonic() + 5
        while os.path.exists('/proc/%d' % inner) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(os.path.exists('/proc/%d' % inner), 'the wrapped run outlived the sweep')

    def test_a_run_that_ignores_sigterm_behind_a_wrapper_is_killed_before_the_sweep_ends(self):
        # the wrapper dies of SIGTERM at once; the job it started ignores it
        # (on an H200 such a PyTorch job outlived the sweep holding the GPU):
        # the run has ended only when its whole group has, SIGKILL after 10 s
        import time
        pidfile = os.path.join(self.dir, 'inner.pid')
        wrapper = ['sh', '-c', '(trap "" TERM; exec "$@") & echo $! > %s; wait' % pidfile, 'wrapper'] + \
            self.train('--step-ms', 3000, '--steps', 100)   # 300 s: only SIGKILL ends it
        t0 = time.monotonic()
        p, doc, d = self.sweep_json(['--run-timeout', '1s'], wrapper)
        elapsed = time.monotonic() - t0
        self.assertEqual((p.returncode, doc['stopped'], doc['runs'][0]['timed_out']), (12, 'run-timeout', True),
                         p.stderr)
        inner = int(open(pidfile).read())
        alive = os.path.exists('/proc/%d' % inner) and 'Z' not in open('/proc/%d/stat' % inner).read().split()[2]
        self.assertFalse(alive, 'the job that ignored SIGTERM outlived the sweep')
        self.assertGreater(elapsed, 10, 'the job was not left its 10 s between SIGTERM and SIGKILL')
        self.assertLess(elapsed, 25, 'the sweep waited past SIGKILL\'s grace')

    def test_a_framework_that_refuses_a_buffer_past_the_device_is_out_of_memory_by_its_own_error(self):
        # batch size 1000 asks one tensor of 1.5 GB of the 1 GiB device: XLA
        # says RESOURCE_EXHAUSTED before any CUDA call (on an H200, JAX under
        # its platform allocator); the sweep takes it as out of memory, not
        # as a failed run, and proves 320 below it
        p, doc, d = self.sweep_json(['--batch-sizes', '1,2,4,1000'], self.train('--refuse-past-device'))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['verified'], doc['stopped']), (320, True, None))
        r = [x for x in doc['runs'] if x['batch_size'] == 1000][0]
        self.assertEqual((r['oom'], r['oom_from'], r['exit_status'], r['needed_at_least_bytes']),
                         (True, 'message', 1, None))
        self.assertEqual(query(r['trace'], 'SELECT count(*) FROM failures')[0][0], 0)   # no CUDA call failed
        self.assertIn("run 4, batch size 1000 (model): out of memory (the program's own error: no CUDA call failed)",
                      p.stderr)
        self.assertEqual({x['oom_from'] for x in doc['runs'] if x['oom'] and x['batch_size'] != 1000}, {'trace'})
        self.assertTrue(all(x['oom_from'] is None for x in doc['runs'] if not x['oom']))

    def test_an_out_of_memory_message_that_is_not_the_runs_last_error_is_a_failed_run(self):
        # a warning of memory early in the run, then a shape error above 100:
        # the sweep stops as failed, as it would without the warning
        warn = ['sh', '-c', 'echo "torch.OutOfMemoryError: CUDA out of memory (a warning)" >&2; '
                'for i in 1 2 3 4 5 6 7 8 9; do echo "log line $i" >&2; done; exec "$@"', 'warn']
        p, doc, d = self.sweep_json([], warn + self.train('--fail-above', 100))
        self.assertEqual((p.returncode, doc['stopped']), (12, 'failed'), p.stderr)
        self.assertFalse(doc['runs'][-1]['oom'])
        # the words alone, with no trace: no CUDA was used, the run failed
        say = ['sh', '-c', 'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; exit 1',
               'say', '{bs}']
        p, doc, d = self.sweep_json([], say, dirname='sweep2')
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertFalse(doc['runs'][0]['oom'])
        self.assertIsNone(doc['max_batch_size'])

    def test_a_sweep_that_inherits_orphans_reaps_them(self):
        # as PID 1 of a container, or a subreaper, the sweep inherits the
        # job its killed wrapper left: it must reap it, or the zombie keeps
        # the group alive and the sweep waits 30 s and says it was left
        import time
        launcher = ('import ctypes, os, sys\n'
                    'ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER\n'
                    'os.execv(sys.argv[1], sys.argv[1:])\n')
        wrapper = ['sh', '-c', '(trap "" TERM; exec "$@") & wait', 'wrapper'] + \
            self.train('--step-ms', 3000, '--steps', 100)
        d = os.path.join(self.dir, 'sweep')
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE)
        t0 = time.monotonic()
        p = run([sys.executable, '-c', launcher, GPUTRACE, 'sweep', '--json', '--run-timeout', '1s', '--dir', d, '--'] +
                wrapper, preload=False, env=env, cwd=self.dir)
        elapsed = time.monotonic() - t0
        self.assertEqual((p.returncode, json.loads(p.stdout)['stopped']), (12, 'run-timeout'), p.stderr)
        self.assertNotIn('left behind', p.stderr)
        self.assertLess(elapsed, 25, 'the sweep waited on a zombie of its own')

    def test_out_of_memory_the_program_recovers_from_is_not_a_failed_run(self):
        # every step first asks for 2 GiB of the 1 GiB device (a larger
        # workspace tried first) and goes on without it: each run's trace
        # holds a failed allocation, yet every run below the boundary fits
        p, doc, d = self.sweep_json([], self.train('--try-workspace', 2048 * MIB))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (320, 321, True))
        runs = doc['runs']
        self.assertEqual([r['oom'] for r in runs], [r['batch_size'] > 320 for r in runs])
        for r in runs:
            self.assertEqual(r['exit_status'], 1 if r['oom'] else 0, r)
            failed = query(r['trace'], 'SELECT count(*) FROM failures')[0][0]
            self.assertGreater(failed, 0, 'the run tried no workspace: the test proves nothing')
            if not r['oom']:
                self.assertEqual(r['peak_bytes'], 64 * MIB + 3 * MIB * r['batch_size'])

    def test_bs_placeholder_and_gputrace_batch_size_both_give_the_batch_size(self):
        # {bs} inside an argument (--batch-size={bs}) and alone
        p, doc, d = self.sweep_json(['--batch-sizes', '3,5'], [prog('sweep_train'), '--steps', '2', '--batch-size', '{bs}'])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(d, 'bs5-run2.stdout')) as f:
            self.assertEqual(f.read(), 'batch size 5, 2 steps\ndone\n')
        self.assertNotIn('no {bs}', p.stderr)
        # no {bs}: the program reads GPUTRACE_BATCH_SIZE, and the sweep says so
        p2, doc2, d2 = self.sweep_json(['--batch-sizes', '3,5'], [prog('sweep_train')], dirname='sweep2')
        self.assertEqual(p2.returncode, 0, p2.stderr)
        self.assertIn('no {bs} in the command', p2.stderr)
        with open(os.path.join(d2, 'bs3-run1.stdout')) as f:
            self.assertEqual(f.read(), 'batch size 3, 3 steps\ndone\n')
        self.assertEqual((doc['max_batch_size'], doc2['max_batch_size']), (320, 320))
        self.assertEqual([r['peak_bytes'] for r in doc['runs'][:2]], [r['peak_bytes'] for r in doc2['runs'][:2]])

    def test_runs_get_the_batch_size_no_cupti_and_the_stack_depth_in_their_environment(self):
        cmd = ['/bin/sh', '-c', 'echo "$GPUTRACE_BATCH_SIZE $GPUTRACE_CUPTI $GPUTRACE_STACK_DEPTH $GPUTRACE_QUIET" >&2; '
               'exec "$0" "$@"', prog('sweep_train')]
        p, doc, d = self.sweep_json(['--batch-sizes', '2', '--max-runs', '1', '--stack-depth', '5'], cmd)
        self.assertEqual(p.returncode, 14, p.stderr)
        with open(os.path.join(d, 'bs2-run1.stderr')) as f:
            self.assertEqual(f.read(), '2 0 5 1\n')
        # the trace says the batch size it ran at (a report over a sweep's traces draws it)
        notes = query(os.path.join(d, 'bs2-run1.db'), "SELECT message FROM notes WHERE component = 'sweep'")
        self.assertEqual(notes, [('batch size 2 (GPUTRACE_BATCH_SIZE)',)])

    def test_runs_have_no_stacks_unless_asked(self):
        # a run's timing is the program's own: on an H100 a transformer traced with stacks
        # fit two batch sizes past the untraced boundary under cudaMallocAsync
        cmd = ['/bin/sh', '-c', 'echo "$GPUTRACE_STACK_DEPTH" >&2; exec "$0" "$@"', prog('sweep_train')]
        p, doc, d = self.sweep_json(['--batch-sizes', '2', '--max-runs', '1'], cmd, dirname='nostacks')
        self.assertEqual(p.returncode, 14, p.stderr)
        with open(os.path.join(d, 'bs2-run1.stderr')) as f:
            self.assertEqual(f.read(), '0\n')
        self.assertEqual(query(os.path.join(d, 'bs2-run1.db'), 'SELECT stack_depth FROM processes'), [(0,)])
        self.assertEqual(query(os.path.join(d, 'bs2-run1.db'), 'SELECT count(*) FROM stacks'), [(0,)])

    def test_max_runs_reached_says_what_is_proven(self):
        p, doc, d = self.sweep_json(['--max-runs', '4'], self.train())
        self.assertEqual(p.returncode, 14, p.stderr)
        self.assertEqual((doc['stopped'], doc['verified'], doc['runs_used']), ('max-runs', False, 4))
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size']), (320, None))
        p, d = self.sweep(['--max-runs', '4'], self.train(), dirname='sweep2')
        self.assertIn('not proven: at least 320 (ran); no larger batch size ran out of memory', p.stdout)
        p, d = self.sweep(['--max-runs', '5'], self.train(), dirname='sweep3')
        self.assertEqual(p.returncode, 14, p.stderr)
        self.assertIn('320 (not proven: 320 ran once, not yet repeated, 321 ran out of memory)', p.stdout)

    def test_max_runs_spent_in_the_model_phase_is_said_so(self):
        # the fit was shown and the prediction read "needs a fit whose peak
        # grows" beside it, and 40 sizes under the default 20 runs gave no
        # word before the model phase took them all (a helper's probe)
        p, d = self.sweep(['--max-runs', '2'], self.train())
        self.assertEqual(p.returncode, 14, p.stderr)
        self.assertIn('fit: peak = 64.00 MiB + 3.00 MiB x batch_size', p.stdout)
        self.assertIn('predicted largest batch size: none (the sweep stopped in its model phase, before it predicts: '
                      'see stopped)', p.stdout)
        self.assertNotIn('needs a fit whose peak grows', p.stdout)
        self.assertNotIn('--batch-sizes names', p.stderr)
        p, doc, d = self.sweep_json(['--batch-sizes', ','.join(str(b) for b in range(1, 41))], self.train(),
                                    dirname='sweep2')
        self.assertEqual(p.returncode, 14, p.stderr)
        self.assertEqual((doc['stopped'], doc['runs_used']), ('max-runs', 20))
        self.assertIn('gputrace sweep: --batch-sizes names 40 sizes and --max-runs is 20: the model phase takes '
                      'every run', p.stderr)

    def test_a_run_that_wrote_no_trace_reads_failed_in_its_progress_line(self):
        p, doc, d = self.sweep_json([], ['sh', '-c', 'echo its own words >&2', 'sh', '{bs}'])
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertEqual(doc['stopped'], 'no-trace')
        self.assertIn('gputrace sweep: run 1, batch size 1 (model): failed (wrote no trace)', p.stderr)
        self.assertNotIn(': fits', p.stderr)
        # the reason names where the run's stderr is, and the last lines follow it on stderr only
        self.assertRegex(doc['stopped_why'], r'its stderr is in \S+bs1-run1\.stderr$')
        self.assertIn("gputrace sweep: run 1's last lines on stderr:\n    its own words\n", p.stderr)

    def test_preallocating_program_is_detected_and_told_how_to_run(self):
        # --prealloc-vmm: one cuMemCreate mapped into a reserved range, through
        # the driver reached by dlsym, as JAX 0.11.2 preallocates on CUDA 13
        # (tests/gpu/RESULTS.md, session 28), not with cudaMalloc
        for how in ('--prealloc', '--prealloc-vmm'):
            with self.subTest(how=how):
                p, doc, d = self.sweep_json([], self.train(how, 75), dirname='sweep' + how)
                self.assertEqual(p.returncode, 13, p.stderr)
                self.assertEqual((doc['stopped'], doc['runs_used']), ('preallocation', 1))
                self.assertIn('XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform', p.stderr)
                self.assertIn('768.00 MiB of the device', p.stderr)
        # its first run fails inside the arena, in XLA's own words: still
        # the preallocation, not a batch size out of memory
        p, doc, d = self.sweep_json(['--batch-sizes', '400,800'], self.train('--prealloc', 75), dirname='sweep-arena')
        self.assertEqual(p.returncode, 13, p.stderr)
        self.assertEqual((doc['stopped'], doc['runs_used'], doc['runs'][0]['oom_from']), ('preallocation', 1, 'message'))

    def test_batch_size_one_out_of_memory_proves_none_fits(self):
        # proven, but not a size: a status of its own, so that `sweep && use it` does not read a null
        p, doc, d = self.sweep_json([], self.train('--fixed', 2048 * MIB))
        self.assertEqual(p.returncode, 15, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['min_failing_batch_size'], doc['verified']), (None, 1, True))
        self.assertEqual(doc['runs_used'], 1)

    def test_a_command_that_fits_at_every_size_up_to_the_cap_is_not_proven(self):
        # 2 bytes a sample in 1 TiB: every size up to 2^31 fits; the cap is no answer
        p, doc, d = self.sweep_json([], self.train('--per-sample', 2), device=1 << 40)
        self.assertEqual(p.returncode, 14, p.stderr)
        self.assertEqual((doc['stopped'], doc['verified'], doc['min_failing_batch_size']), ('max-batch-size', False, None))
        self.assertIn('every batch size tried fit', doc['stopped_why'])

    def test_sweeps_started_together_without_dir_each_get_their_own(self):
        # (the race it guards against, a directory checked then made, showed in
        # about 1 of 30 pairs: this catches it only sometimes)
        procs = [subprocess.Popen([GPUTRACE, 'sweep', '--json', '--quiet', '--max-runs', '1', '--'] + self.train(),
                                  env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE), cwd=self.dir, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        dirs = [json.loads(p.communicate(timeout=120)[0])['dir'] for p in procs]
        self.assertEqual(len(set(dirs)), 4, dirs)
        for d in dirs:
            self.assertEqual(len([f for f in os.listdir(d) if f.endswith('.db')]), 1, os.listdir(d))

    def test_a_sweep_with_its_stdout_closed_gives_each_run_its_own(self):
        d = os.path.join(self.dir, 'closed')
        cmd = ['/bin/sh', '-c', '"$@"; echo printed', 'sh'] + self.train()
        p = subprocess.run([GPUTRACE, 'sweep', '--quiet', '--max-runs', '1', '--dir', d, '--'] + cmd,
                           env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE), cwd=self.dir, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=120,
                           preexec_fn=lambda: os.close(1))
        self.assertEqual(p.returncode, 14, p.stderr)
        with open(os.path.join(d, 'bs1-run1.stdout')) as f:
            self.assertIn('printed', f.read())

    def test_a_run_under_a_timeout_reads_the_terminal(self):
        # with --run-timeout each run leads its own process group: it was never
        # given the terminal, so a read from it stopped the run (SIGTTIN) until
        # the timeout killed it
        import fcntl
        import pty
        import termios
        d = os.path.join(self.dir, 'tty')
        master, slave = pty.openpty()

        def own_terminal():
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

        cmd = ['/bin/sh', '-c', 'read x; echo "got $x"; "$@"', 'sh'] + self.train()
        proc = subprocess.Popen([GPUTRACE, 'sweep', '--quiet', '--max-runs', '1', '--run-timeout', '20', '--dir', d,
                                 '--'] + cmd, env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE), cwd=self.dir,
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=own_terminal)
        os.close(slave)
        time.sleep(1)
        os.write(master, b'hello\n')
        out, err = proc.communicate(timeout=60)
        os.close(master)
        self.assertEqual(proc.returncode, 14, err)   # --max-runs 1: not proven, but run
        with open(os.path.join(d, 'bs1-run1.stdout')) as f:
            self.assertIn('got hello', f.read())

    def test_a_signal_sent_to_a_sweep_with_a_run_timeout_reaches_its_run(self):
        # with --run-timeout each run leads its own process group: a SIGTERM
        # sent to the sweep alone must stop the run too, not orphan it
        d = os.path.join(self.dir, 'term')
        pidfile = os.path.join(self.dir, 'run.pid')
        cmd = ['/bin/sh', '-c', 'echo $$ > %s; "$@"; exec sleep 60' % pidfile, 'sh'] + self.train()
        proc = subprocess.Popen([GPUTRACE, 'sweep', '--quiet', '--run-timeout', '100', '--dir', d, '--'] + cmd,
                                env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE), cwd=self.dir, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        for _ in range(500):
            if os.path.exists(pidfile) and os.path.getsize(pidfile):
                break
            time.sleep(0.02)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        with open(pidfile) as f:
            pid = int(f.read())
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            self.fail('the run (pid %d) outlived the sweep' % pid)

    def test_a_run_that_runs_out_of_pinned_host_memory_is_not_a_device_out_of_memory(self):
        # its 2^50-byte host request was taken as the batch's device need, and
        # moved the search by terabytes (a helper's probe)
        p, doc, d = self.sweep_json([], self.train('--host-oom-above', 200))
        self.assertEqual((p.returncode, doc['stopped']), (12, 'failed'), p.stderr)
        self.assertFalse(any(r['oom'] for r in doc['runs']))
        self.assertIn('pinned host', doc['stopped_why'])

    def test_memory_held_outside_the_trace_in_a_failed_run_moves_the_model(self):
        # above 200 the stand-in's driver holds 50,000,000 B no traced call made:
        # NVML's reading in the first failed run says so (the model stepped
        # down one failure at a time: 19 runs, for 7)
        env = {'LD_LIBRARY_PATH': gtlib.WITH_NVML}
        d = os.path.join(self.dir, 'untraced')
        p = run([GPUTRACE, 'sweep', '--json', '--quiet', '--dir', d, '--'] + self.train('--untraced-above', '200:50000000'),
                preload=False, env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE, **env), cwd=self.dir)
        doc = json.loads(p.stdout)
        truth = (DEVICE - 50000000 - 64 * MIB) // (3 * MIB)
        self.assertEqual((p.returncode, doc['max_batch_size'], doc['verified']), (0, truth, True), p.stderr)
        self.assertLessEqual(doc['runs_used'], 8)

    def test_memory_that_stops_following_the_batch_size_past_phase_1_stops_the_sweep(self):
        # above 200 the command takes 200's memory: past the model it doubled
        # on to 20,971,520 and called that the answer (a helper's probe)
        p, doc, d = self.sweep_json([], self.train('--clamp-above', 200))
        self.assertEqual((p.returncode, doc['stopped']), (12, 'batch-size-ignored'), p.stderr)
        self.assertLessEqual(doc['runs_used'], 6)
        self.assertIn('stopped following the batch size', doc['stopped_why'])
        self.assertIsNone(doc['max_batch_size'])

    def test_command_that_ignores_the_batch_size_stops_the_sweep(self):
        # after 1, 2, 4 and three sizes each 16 times larger: 64, 1024, 16384
        p, doc, d = self.sweep_json([], [prog('sweep_train'), '--batch-size', '5'])
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertEqual((doc['stopped'], doc['runs_used']), ('batch-size-ignored', 6))
        self.assertEqual([r['batch_size'] for r in doc['runs']], [1, 2, 4, 64, 1024, 16384])
        self.assertIn('the peak does not grow with the batch size', p.stderr)
        # 16384 ran, but the command never took it: no largest batch size is claimed, nor headroom at one
        self.assertIsNone(doc['max_batch_size'])
        self.assertIsNone(doc['headroom'])
        p = run([GPUTRACE, 'sweep', '--quiet', '--dir', os.path.join(self.dir, 'text'), '--', prog('sweep_train'),
                 '--batch-size', '5'], preload=False, env=base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE), cwd=self.dir)
        self.assertIn('largest batch size that fits: unknown: the runs\' memory does not follow the batch size (up to '
                      '16384: see stopped, below), so they prove no largest one', p.stdout)
        self.assertIn('predicted largest batch size: none (the peak does not grow with the batch size)', p.stdout)
        self.assertNotIn('at least 16384', p.stdout)
        self.assertNotIn('the tightest run of 16384', p.stdout)
        # --max-runs within the widening: the verdict is still that the
        # command ignores it, not a largest batch size cut short
        p, doc, d = self.sweep_json(['--max-runs', '2'], [prog('sweep_train'), '--batch-size', '5'], dirname='sweep-max2')
        self.assertEqual((p.returncode, doc['stopped']), (14, 'max-runs'), p.stderr)   # 1 and 2 alike say nothing yet
        for runs in (3, 4, 5):
            p, doc, d = self.sweep_json(['--max-runs', str(runs)], [prog('sweep_train'), '--batch-size', '5'],
                                        dirname='sweep-max%d' % runs)
            self.assertEqual((p.returncode, doc['stopped'], doc['runs_used']), (12, 'batch-size-ignored', runs), p.stderr)

    def test_samples_hidden_under_the_fixed_peak_at_small_sizes_are_found_at_a_larger_one(self):
        # up to batch size 8 the peak is the fixed part alone (an MLP in JAX on
        # an H200 peaked at its update, 340.17 MiB at 2 and 4 alike): the
        # sweep runs a larger size before calling the batch size ignored;
        # above 8, 64 MiB + 3 MiB a sample: 320 in 1 GiB
        p, doc, d = self.sweep_json([], self.train('--per-sample', 0, '--knee', 8, '--per-sample-above', 3 * MIB))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((doc['max_batch_size'], doc['verified'], doc['stopped']), (320, True, None))
        self.assertEqual([r['batch_size'] for r in doc['runs'][:4]], [1, 2, 4, 64])
        self.assertEqual(doc['runs'][3]['phase'], 'model')

    def test_default_dir_is_named_after_the_time(self):
        env = base_env(FAKE_CUDA_DEVICE_BYTES=DEVICE)
        p = run([GPUTRACE, 'sweep', '--batch-sizes', '1', '--max-runs', '1', '--', prog('sweep_train')], preload=False,
                env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 14, p.stderr)
        dirs = os.listdir(self.dir)
        self.assertEqual(len(dirs), 1)
        self.assertRegex(dirs[0], r'^gputrace-sweep-\d{8}-\d{6}$')
        self.assertIn('bs1-run1.db', os.listdir(os.path.join(self.dir, dirs[0])))

    def test_usage_errors_exit_2_with_one_line(self):
        os.mkdir(os.path.join(self.dir, 'full'))
        open(os.path.join(self.dir, 'full', 'x'), 'w').close()
        cases = [['sweep'], ['sweep', '--batch-sizes', '0', '--', 'true'], ['sweep', '--batch-sizes', '1,,2', 'true'],
                 ['sweep', '--max-runs', '0', 'true'], ['sweep', '--repeat', '1', 'true'],
                 ['sweep', '--repeat', '11', 'true'], ['sweep', '--dir', os.path.join(self.dir, 'no', 'such'), 'true'],
                 ['sweep', '--dir', os.path.join(self.dir, 'full'), 'true'], ['sweep', '--memory', 'pool', 'true']]
        for args in cases:
            p = run([GPUTRACE] + args, preload=False, env=base_env(), cwd=self.dir)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, (args, p.stderr))
            self.assertEqual(p.stdout, '')
