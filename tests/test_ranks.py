"""gputrace ranks: a job of several ranks, one trace each (rank_train.c under
the CUDA stand-in, RANK set per process), read together; and what each trace
records to line ranks up (rank, world size, host, wall-clock start). Expected
values come from what each rank was told to allocate."""
import json
import os
import sqlite3
import subprocess

from gtlib import GPUTRACE, SHIM, TraceTest, base_env, prog, query, run

MiB = 1 << 20
GiB = 1 << 30
KiB = 1 << 10
STEPS = 8
ACT = 1 * MiB


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


class RanksTest(TraceTest):

    def rank(self, r, weights, leak, world=4, extra=(), env_extra=None):
        """Runs rank r of the job; returns its trace files (the rank's own and its children's)."""
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'r%r-%p.db'), GPUTRACE_QUIET=1, RANK=r, LOCAL_RANK=r,
                       WORLD_SIZE=world, **(env_extra or {}))
        p = run([prog('rank_train'), str(weights), str(ACT), str(leak), str(STEPS)] + list(extra), env=env, cwd=self.dir)
        return p

    def files(self):
        return sorted(os.path.join(self.dir, f) for f in os.listdir(self.dir) if f.endswith('.db'))

    def ranks(self, *args, files=None):
        p = subprocess.run([GPUTRACE, 'ranks'] + list(args) + (files or self.files()), capture_output=True, text=True,
                           timeout=120)
        return p

    def rendered_report(self, files):
        """The DOM of gputrace report over files, rendered by headless Chromium."""
        from test_report import Dom, chromium
        out = os.path.join(self.dir, 'job.html')
        p = subprocess.run([GPUTRACE, 'report', '-o', out] + files, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        d = subprocess.run([chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                            '--no-first-run', '--user-data-dir=' + os.path.join(self.dir, 'profile'), '--dump-dom',
                            'file://' + out], capture_output=True, text=True, timeout=120)
        dom = Dom(d.stdout)
        self.assertEqual(dom.find('body')[0].attrs.get('data-rendered'), 'ok')
        self.assertEqual(dom.find('pre')[0].text.strip(), '')
        return dom

    def ranks_json(self, files=None):
        p = self.ranks('--json', files=files)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)


class Job(RanksTest):

    def setUp(self):
        super().setUp()
        # rank r holds (8 + r) MiB of weights; rank 2 also keeps 256 KiB per step
        self.weights = {r: (8 + r) * MiB for r in range(4)}
        self.leak = {r: 256 * KiB if r == 2 else 0 for r in range(4)}
        for r in range(4):
            extra = ('child', str(64 * MiB)) if r == 0 else ()
            self.assertEqual(self.rank(r, self.weights[r], self.leak[r], extra=extra).returncode, 0)

    def expected_peak(self, r, step=STEPS - 1):
        return self.weights[r] + ACT + (step + 1) * self.leak[r]

    def test_ranks_names_the_leaking_rank_and_the_exact_skew(self):
        j = self.ranks_json()
        self.assertEqual([x['rank'] for x in j['ranks']], [0, 1, 2, 3])
        peaks = [self.expected_peak(r) for r in range(4)]
        self.assertEqual([x['peak_bytes'] for x in j['ranks']], peaks)
        self.assertEqual([x['final_bytes'] for x in j['ranks']], [STEPS * self.leak[r] for r in range(4)])
        self.assertEqual(j['max_peak_rank'], 2)
        self.assertEqual(j['peak_skew_bytes'], max(peaks) - median(peaks))
        self.assertEqual(j['growth_outliers'], [2])
        self.assertEqual(j['growing_ranks'], [2])
        self.assertEqual(j['ranks'][2]['growth_verdict'], 'growing')
        self.assertEqual(j['ranks'][2]['slope_bytes_per_iteration'], self.leak[2])
        self.assertEqual([x['iterations'] for x in j['ranks']], [STEPS] * 4)
        self.assertEqual(j['failed_ranks'], [])
        self.assertEqual(j['missing_ranks'], [])
        self.assertEqual(j['world_size'], 4)
        text = self.ranks().stdout
        self.assertIn('Highest peak: rank 2', text)
        self.assertIn('rank 2 is growing', text)

    def test_iterations_are_aligned_by_index_rank_by_rank(self):
        j = self.ranks_json()
        self.assertEqual([it['index'] for it in j['iterations']], list(range(STEPS)))
        for it in j['iterations']:
            self.assertEqual(it['peak_bytes'], [self.expected_peak(r, it['index']) for r in range(4)])
        text = self.ranks('--all-iterations').stdout
        self.assertIn('Peak of each iteration, rank by rank', text)
        self.assertNotIn('Peak of each iteration', self.ranks().stdout)

    def test_a_child_sharing_its_rank_is_shown_under_its_main_process(self):
        files = self.files()
        self.assertEqual(len(files), 5)   # four ranks and rank 0's child
        j = self.ranks_json()
        self.assertEqual(len(j['ranks']), 4)
        r0 = j['ranks'][0]
        main_pid = query(r0['file'], 'SELECT pid FROM processes')[0][0]
        self.assertEqual(r0['pid'], main_pid)
        self.assertEqual(len(r0['children']), 1)
        child = r0['children'][0]
        self.assertEqual(child['ppid'], main_pid)
        self.assertEqual(child['peak_bytes'], 64 * MiB)
        # the child's 64 MiB is not rank 0's peak, nor the job's highest
        self.assertEqual(r0['peak_bytes'], self.expected_peak(0))
        self.assertEqual(j['max_peak_rank'], 2)
        self.assertTrue(all(r['children'] == [] for r in j['ranks'][1:]))

    def test_report_draws_each_ranks_peak_per_iteration(self):
        dom = self.rendered_report(self.files())
        lines = {e.attrs['data-name']: [int(v) for v in e.attrs['data-peaks'].split(',')]
                 for e in dom.find('path', 'rank-series')}
        self.assertEqual(lines, {'rank %d' % r: [self.expected_peak(r, k) for k in range(STEPS)] for r in range(4)})
        self.assertEqual(len(dom.find('section', 'trace')), 5)   # and every file's own section

    def test_trace_records_rank_local_rank_world_size_and_host(self):
        for x in self.ranks_json()['ranks']:
            row = query(x['file'], 'SELECT rank, local_rank, world_size, host, start_unix_ns FROM processes')[0]
            self.assertEqual(row[:3], (x['rank'], x['rank'], 4))
            self.assertEqual(row[3], os.uname().nodename)
            self.assertGreater(row[4], 1.6e18)


class Failures(RanksTest):

    def test_rank_that_ran_out_of_memory_is_listed_as_failed(self):
        self.rank(0, 8 * MiB, 0, world=3)
        # rank 1 has room for 12 MiB and keeps 1 MiB per step: its 4th step does not fit
        p = self.rank(1, 8 * MiB, 1 * MiB, world=3, env_extra={'FAKE_CUDA_DEVICE_BYTES': 12 * MiB})
        self.assertEqual(p.returncode, 1)
        j = self.ranks_json()
        self.assertEqual([(f['rank'], f['reason']) for f in j['failed_ranks']], [(1, 'ended on an out-of-memory failure')])
        self.assertEqual([x['ooms'] for x in j['ranks']], [0, 1])
        self.assertEqual(j['missing_ranks'], [2])
        self.assertIn('Missing (no trace given for): rank 2', self.ranks().stdout)

    def test_flight_recorder_ranks_are_compared_by_their_whole_runs_peaks(self):
        # window_loop's 1 GiB spike at the start is long gone from a 1 s window:
        # the window's 3 MiB were compared as the ranks' peaks, and nothing said so
        for r in (0, 1):
            env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'w%d.db' % r), GPUTRACE_QUIET=1, RANK=r,
                           WORLD_SIZE=2, GPUTRACE_WINDOW_S=1)
            p = run([prog('window_loop'), '1800'], env=env, cwd=self.dir)
            self.assertEqual(p.returncode, 0, p.stderr)
        j = self.ranks_json()
        self.assertEqual([(x['rank'], x['peak_bytes'], x['windowed']) for x in j['ranks']],
                         [(0, GiB + MiB, True), (1, GiB + MiB, True)])
        self.assertIn('flight recorder (GPUTRACE_WINDOW_S): 2 of these traces keep only their last seconds',
                      self.ranks().stdout)

    def test_ranks_that_disagree_on_the_world_size_are_said_to(self):
        # 4, 4 and 8: "(world size 8)" and four ranks missing were said without the conflict
        self.rank(0, 8 * MiB, 0, world=4)
        self.rank(1, 8 * MiB, 0, world=4)
        self.rank(2, 8 * MiB, 0, world=8)
        self.rank(3, 8 * MiB, 0, world=4)
        j = self.ranks_json()
        self.assertTrue(j['world_sizes_disagree'])
        self.assertIn('the ranks disagree on the world size: 4 to 8', self.ranks().stdout)
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        self.rank(0, 8 * MiB, 0, world=2)
        self.rank(1, 8 * MiB, 0, world=2)
        self.assertFalse(self.ranks_json()['world_sizes_disagree'])
        self.assertIn('(world size 2)', self.ranks().stdout)

    def test_trace_never_closed_is_a_failed_rank(self):
        self.rank(0, 8 * MiB, 0, world=2)
        self.rank(1, 8 * MiB, 0, world=2)
        killed = [f for f in self.files() if os.path.basename(f).startswith('r1-')][0]
        con = sqlite3.connect(killed)
        con.execute('UPDATE processes SET end_ns = NULL, end_reason = NULL')   # as a killed process leaves it
        con.commit()
        con.close()
        j = self.ranks_json()
        self.assertEqual([f['rank'] for f in j['failed_ranks']], [1])
        self.assertIn('not closed', j['failed_ranks'][0]['reason'])

    def test_unreadable_file_is_named_and_the_rest_reported(self):
        self.rank(0, 8 * MiB, 0, world=1)
        bad = os.path.join(self.dir, 'bad.db')
        with open(bad, 'w') as f:
            f.write('not a database at all, not even close' * 100)
        p = self.ranks('--json', files=self.files())
        self.assertEqual(p.returncode, 4, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual([x['rank'] for x in j['ranks']], [0])
        self.assertEqual([u['file'] for u in j['unreadable']], [bad])
        self.assertIn('bad.db', p.stderr)
        p = self.ranks('--json', files=[bad])
        self.assertEqual(p.returncode, 4)
        j = json.loads(p.stdout)
        self.assertEqual((j['ranks'], j['max_peak_rank'], j['max_peak_bytes'], j['peak_skew_bytes']), ([], None, None, None))


class NotAJob(RanksTest):

    def test_report_of_processes_without_ranks_draws_no_rank_panel(self):
        for k in range(2):
            env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'p%d.db' % k), GPUTRACE_QUIET=1)
            env.pop('RANK', None)
            run([prog('rank_train'), str(8 * MiB), str(ACT), '0', str(STEPS)], env=env, cwd=self.dir, check=True)
        dom = self.rendered_report(self.files())
        self.assertEqual(dom.find('path', 'rank-series'), [])
        self.assertEqual(len(dom.find('section', 'trace')), 2)


class Clocks(RanksTest):

    def test_ranks_on_two_hosts_line_up_by_wall_clock(self):
        self.rank(0, 8 * MiB, 256 * KiB, world=2)
        self.rank(1, 8 * MiB, 256 * KiB, world=2)
        base = 1700000000 * 10**9
        starts = {0: base + 3 * 10**9, 1: base}   # rank 1 started 3 s earlier, on another host
        peak_t = {}
        for f in self.files():
            r = query(f, 'SELECT rank FROM processes')[0][0]
            con = sqlite3.connect(f)
            con.execute('UPDATE processes SET host = ?, start_unix_ns = ?', ('host%d' % r, starts[r]))
            con.commit()
            peak_t[r] = con.execute("SELECT MAX(t_ns) FROM events_v WHERE op = 'alloc' AND result = 0").fetchone()[0]
            con.close()
        j = self.ranks_json()
        self.assertEqual(j['hosts'], 2)
        self.assertEqual(j['job_start_unix_ns'], base)
        by = {x['rank']: x for x in j['ranks']}
        for r in (0, 1):
            self.assertEqual(by[r]['peak_time_ns'], peak_t[r])
            self.assertEqual(by[r]['peak_job_time_ns'], starts[r] - base + peak_t[r])


class OldTraces(RanksTest):

    def test_trace_of_schema_1_without_world_size_is_still_read(self):
        self.rank(0, 8 * MiB, 0, world=1)
        f = self.files()[0]
        con = sqlite3.connect(f)
        con.execute('ALTER TABLE processes DROP COLUMN world_size')
        con.execute('PRAGMA user_version = 1')
        con.commit()
        con.close()
        j = self.ranks_json()
        self.assertIsNone(j['world_size'])
        self.assertEqual(j['ranks'][0]['peak_bytes'], 8 * MiB + ACT)
        p = subprocess.run([GPUTRACE, 'summary', '--json', f], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsNone(json.loads(p.stdout)['process']['world_size'])


class RunAgain(RanksTest):
    def test_a_rank_run_again_is_read_from_its_latest_run_and_the_earlier_one_is_not_its_child(self):
        # a job run twice into one directory (or a restart): the earliest
        # root file was taken as the rank's, and the new run's growing rank
        # was listed as a "child" of the stale one
        for r in (0, 1):
            self.assertEqual(self.rank(r, 8 * MiB, 0, world=2).returncode, 0)
        first = set(self.files())
        p = self.rank(1, 8 * MiB, 256 * KiB, world=2)
        self.assertEqual(p.returncode, 0, p.stderr)
        again = (set(self.files()) - first).pop()
        d = self.ranks_json()
        one = [r for r in d['ranks'] if r['rank'] == 1][0]
        self.assertEqual((one['file'], one['growth_verdict']), (again, 'growing'))
        self.assertEqual([c['file'] for c in one['earlier_runs']], [f for f in first if 'r1-' in f])
        self.assertEqual(one['children'], [])
        self.assertIn(1, d['growing_ranks'])
        out = self.ranks().stdout
        self.assertIn('Earlier run of rank 1: pid', out)
        self.assertNotIn('Child of rank 1', out)
        self.assertFalse(one['earlier_runs'][0]['concurrent'])

    def test_processes_given_the_same_rank_at_once_are_said_to_run_together(self):
        # four processes at once, all RANK=0 (a launcher's misconfiguration):
        # one rank and three "earlier runs" were said
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'r%r-%p.db'), GPUTRACE_QUIET=1, RANK=0, LOCAL_RANK=0,
                       WORLD_SIZE=4, LD_PRELOAD=SHIM)
        procs = [subprocess.Popen([prog('window_loop'), '600'], env=env, cwd=self.dir, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(3)]
        for q in procs:
            self.assertEqual(q.wait(timeout=60), 0)
        d = self.ranks_json()
        runs = d['ranks'][0]['earlier_runs']
        self.assertEqual([r['concurrent'] for r in runs], [True, True])
        self.assertIn('Running at the same time as rank 0', self.ranks().stdout)

    def test_a_rank_whose_file_was_given_but_not_read_is_not_missing(self):
        # --device 0 left rank 1's file out (its memory is on device 1): it
        # was listed as "Missing (no trace given for): rank 1"
        for r in (0, 1):
            self.assertEqual(self.rank(r, 8 * MiB, 0, world=2).returncode, 0)
        files = self.files()
        r1 = [f for f in files if 'r1-' in f][0]
        con = sqlite3.connect(r1)
        con.execute('UPDATE events SET device = 1')
        con.commit()
        con.close()
        p = self.ranks('--device', '0')
        self.assertEqual(p.returncode, 11, p.stderr)
        self.assertNotIn('Missing', p.stdout)
        self.assertIn('Not read: rank 1: %s (no memory on device 0' % r1, p.stdout)
        d = json.loads(self.ranks('--json', '--device', '0').stdout)
        self.assertEqual((d['missing_rank_count'], [u['rank'] for u in d['unreadable']]), (0, [1]))


class EpochIndices(TraceTest):
    def test_iterations_whose_index_restarts_each_epoch_are_matched_by_position(self):
        # matched by index, only each index's first iteration was kept: the
        # second epoch's peaks (rank 1's growth) went unseen (a helper's probe)
        import analyzer_traces as T
        files = []
        for r in range(2):
            t = T.Trace(os.path.join(self.dir, 'r%d.db' % r), pid=100 + r, rank=r)
            t.alloc(8 * MiB, ['init', 'main'])
            for epoch in range(2):
                for k in range(4):
                    t.iteration(k)
                    a = t.alloc(MiB, ['fwd', 'step', 'main'])
                    if r == 1:
                        t.alloc(MiB, ['keep', 'step', 'main'])
                    t.free(a)
            files.append(t.close())
        p = subprocess.run([GPUTRACE, 'ranks', '--json'] + files, capture_output=True, text=True, timeout=60)
        d = json.loads(p.stdout)
        self.assertEqual(d['iterations_matched_by'], 'position')
        self.assertEqual([it['index'] for it in d['iterations']], list(range(8)))
        self.assertEqual([it['peak_bytes'][1] for it in d['iterations']], [(9 + k + 1) * MiB for k in range(8)])
        out = subprocess.run([GPUTRACE, 'ranks', '--all-iterations'] + files, capture_output=True, text=True).stdout
        self.assertIn('Peak of each iteration (by position: a rank\'s indices repeat), rank by rank:', out)

    def unranked_runs(self, start_b_s, steps=(30, 20)):
        """Two runs of one script without RANK: b starts start_b_s after a."""
        import analyzer_traces as T
        files = []
        for name, pid, n in (('a.db', 500, steps[0]), ('b.db', 600, steps[1])):
            t = T.Trace(os.path.join(self.dir, name), pid=pid)
            t.alloc(8 * MiB, ['init', 'main'])
            for k in range(n):
                t.iteration(k)
                t.free(t.alloc(MiB, ['fwd', 'step', 'main']))
            files.append(t.close())
        con = sqlite3.connect(files[1])
        con.execute('UPDATE processes SET start_unix_ns = start_unix_ns + ?', (int(start_b_s * 1e9),))
        con.commit()
        con.close()
        return files

    def test_traces_without_ranks_run_one_after_another_are_said_to_be_separate_runs(self):
        # two runs of one script: "2 ranks", as if one job's
        files = self.unranked_runs(60)
        out = subprocess.run([GPUTRACE, 'ranks'] + files, capture_output=True, text=True).stdout
        self.assertIn('(no trace has a rank: RANK was not set, so they are compared as processes; they ran one after '
                      'another, never at the same time: separate runs, not one job\'s ranks?)', out)
        d = json.loads(subprocess.run([GPUTRACE, 'ranks', '--json'] + files, capture_output=True, text=True).stdout)
        self.assertIs(d['unranked_one_after_another'], True)
        # at the same time: not said to be separate
        files = self.unranked_runs(0)
        out = subprocess.run([GPUTRACE, 'ranks'] + files, capture_output=True, text=True).stdout
        self.assertIn('(no trace has a rank: RANK was not set, so they are compared as processes)', out)
        d = json.loads(subprocess.run([GPUTRACE, 'ranks', '--json'] + files, capture_output=True, text=True).stdout)
        self.assertIs(d['unranked_one_after_another'], False)

    def test_iterations_matched_are_those_every_rank_has(self):
        files = self.unranked_runs(0)   # 30 and 20 iterations: 20 in both
        out = subprocess.run([GPUTRACE, 'ranks'] + files, capture_output=True, text=True).stdout
        self.assertIn('20 iterations matched by index across ranks, of 30 that any rank has', out)
        d = json.loads(subprocess.run([GPUTRACE, 'ranks', '--json'] + files, capture_output=True, text=True).stdout)
        self.assertEqual(d['iterations_in_every_rank'], 20)

    def test_a_file_without_a_rank_started_by_a_rank_is_its_child(self):
        import analyzer_traces as T
        files = []
        for name, pid, rank in (('r0.db', 100, 0), ('r1.db', 101, 1), ('w.db', 300, None)):
            t = T.Trace(os.path.join(self.dir, name), pid=pid, rank=rank)
            t.alloc((60 if rank is None else 8) * MiB, ['init', 'main'])
            files.append(t.close())
            con = sqlite3.connect(files[-1])
            con.execute('UPDATE processes SET ppid = ?', (100 if rank is None else 1,))
            if rank is not None:
                con.execute('UPDATE processes SET world_size = 2')
            con.commit()
            con.close()
        d = json.loads(subprocess.run([GPUTRACE, 'ranks', '--json'] + files, capture_output=True, text=True).stdout)
        self.assertEqual([r['rank'] for r in d['ranks']], [0, 1])
        self.assertEqual([c['file'] for c in d['ranks'][0]['children']], [files[2]])
        self.assertEqual(d['max_peak_rank'], 0)
