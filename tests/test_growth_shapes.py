"""growth on shapes Theil-Sen alone misreads (a helper's probe, session 41):
memory kept at a few iterations only (the median of pairwise slopes is 0
when most iterations hold one level, so two steps of 8 MiB read "stable" or
"growing" by where they fell), and live bytes at iteration ends that
scatter so widely that a leak inside them cannot show (then "stable" is
more than the data says)."""
import os
import random

import analyzer_traces as T

MiB = T.MiB
WEIGHTS = 64 * MiB


def loop(dirpath, name, steps, keep_at=(), give_back_at=(), end_scatter=0, seed=7):
    """NVTX-marked steps over weights of 64 MiB: each step an activation of
    32 MiB, freed inside the step; at the steps in keep_at one 8 MiB buffer
    is kept from then on (keep_cache), and at the steps in give_back_at the
    oldest kept one is freed. end_scatter: each step ends with a buffer of a
    random size up to this many bytes still live (freed after the range
    ends, as when the range closes before the step's last tensors go)."""
    rnd = random.Random(seed)
    t = T.Trace(os.path.join(dirpath, name + '.db'))
    t.alloc(WEIGHTS, ['init_weights', 'main'])
    kept = []
    for s in range(steps):
        t.push('train_step %d' % s)
        act = t.alloc(32 * MiB, ['forward', 'train_step', 'main'])
        if s in keep_at:
            kept.append(t.alloc(8 * MiB, ['keep_cache', 'train_step', 'main']))
        if s in give_back_at:
            t.free(kept.pop(0))
        t.free(act)
        tail = t.alloc(rnd.randrange(1, end_scatter) // 512 * 512 + 512, ['collate', 'train_step', 'main']) \
            if end_scatter else None
        t.pop()
        if tail is not None:
            t.free(tail)
    return t.close()


class HeldSteps(T.AnalyzerTest):
    def test_two_steps_kept_far_apart_read_growing_at_their_average(self):
        db = loop(self.dir, 'rare', 200, keep_at=(45, 190))
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'growing')
        self.assertTrue(d['growing_in_held_steps'])
        self.assertEqual((d['held_rise_bytes'], d['held_rise_steps']), (16 * MiB, 2))
        # the rise over the 199 fitted iterations (the first is warm-up)
        self.assertWithin(d['slope_bytes_per_iteration'], 16 * MiB / 198, rel=0.01)
        self.assertEqual(d['sites'][0]['frames'][0].split(' (')[0], 'keep_cache')
        text = self.ok('growth', db).stdout
        self.assertIn('the level rose 16.00 MiB over 199 iterations in 2 steps', text)
        # a CI gate sees it
        self.assertEqual(self.gputrace('growth', '--fail-above', '1K', db).returncode, 1)

    def test_the_same_two_steps_at_other_iterations_read_the_same(self):
        early, late = (self.json('growth', loop(self.dir, n, 200, keep_at=k))
                       for n, k in (('a', (45, 190)), ('b', (120, 170))))
        self.assertEqual((early['verdict'], late['verdict']), ('growing', 'growing'))

    def test_one_step_kept_is_a_one_off_not_growth(self):
        db = loop(self.dir, 'once', 100, keep_at=(7,))
        d = self.json('growth', db)
        self.assertEqual((d['verdict'], d['slope_bytes_per_iteration']), ('stable', 0))
        self.assertEqual((d['held_rise_bytes'], d['held_rise_steps'], d['growing_in_held_steps']), (8 * MiB, 1, False))
        self.assertIn('one step up of 8.00 MiB at iteration 7, held to the end: a one-off', self.ok('growth', db).stdout)

    def test_steps_that_all_came_early_are_a_cache_settling(self):
        db = loop(self.dir, 'settle', 100, keep_at=(5, 10, 20))
        d = self.json('growth', db)
        self.assertEqual((d['verdict'], d['held_rise_steps']), ('stable', 3))
        self.assertIn('all in the first half of these iterations, and held: a cache settling',
                      self.ok('growth', db).stdout)

    def test_memory_given_back_is_no_staircase(self):
        d = self.json('growth', loop(self.dir, 'back', 200, keep_at=(45, 190), give_back_at=(100,)))
        self.assertEqual(d['verdict'], 'stable')
        self.assertIsNone(d['held_rise_bytes'])


class ScatterHides(T.AnalyzerTest):
    def test_ends_that_scatter_over_a_tenth_of_the_level_give_unknown_not_stable(self):
        # up to 64 MiB live at each end beside 64 MiB of weights
        db = loop(self.dir, 'wide', 60, end_scatter=64 * MiB)
        d = self.json('growth', db)
        self.assertEqual(d['verdict'], 'unknown')
        self.assertTrue(d['scatter_hides_growth'])
        self.assertGreater(3 * d['scatter_bytes'], 0.1 * WEIGHTS)
        text = self.ok('growth', db).stdout
        self.assertIn('-> unknown', text)
        self.assertIn('iterations that end at the\n   same point of each step would tell', text)
        self.assertIn('growth: unknown', self.ok('summary', db).stdout)

    def test_a_narrow_scatter_still_reads_stable(self):
        d = self.json('growth', loop(self.dir, 'narrow', 60, end_scatter=1 * MiB))
        self.assertEqual((d['verdict'], d['scatter_hides_growth']), ('stable', False))
        self.assertGreater(d['scatter_bytes'], 0)
