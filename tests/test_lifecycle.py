"""Life cycle: every way out of the process keeps every event; fork children
get a trace only if they use CUDA; processes without CUDA leave nothing; a bad
output path costs one stderr line and nothing else; the program's output and
exit code never change."""
import os
import re
import subprocess
import sys
import time
import unittest

import gtlib
from gtlib import SANITIZER, SHIM, TraceTest, base_env, prog, query, run


class ExitPathTest(TraceTest):
    def check_complete(self, how, n=1000, expect_rc=7, reason=None):
        p, db = self.trace([prog('exit_modes'), how, str(n)])
        self.assertEqual(p.returncode, expect_rc, p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ['trace.db'], 'trace left open (-wal/-shm remain)')
        self.assertEqual(query(db, 'SELECT count(*), sum(size) FROM events WHERE api = 1'),
                         [(n, sum(4096 + i for i in range(n)))])
        self.assertEqual(query(db, 'SELECT events_recorded, events_dropped, end_reason FROM processes'),
                         [(n, 0, reason or how)])
        self.assertIntegrity(db)
        return db

    def test_return_from_main_loses_nothing(self):
        self.check_complete('return', reason='exit')

    def test_exit_loses_nothing(self):
        self.check_complete('exit')

    @unittest.skipIf(SANITIZER, "LeakSanitizer's check at exit crashes while another thread still runs "
                                "(\"Tracer caught signal 11\"), traced or not")
    def test_calls_another_thread_makes_while_the_exit_finishes_the_trace_are_counted(self):
        # a thread allocating while main returns: its calls after the trace began to end were neither
        # recorded nor counted ("0 dropped" beside hundreds of thousands; a helper's probe)
        db = os.path.join(self.dir, 'trace.db')
        p = run([prog('exit_modes'), 'busy-return', '10'], env=base_env(GPUTRACE_OUTPUT=db), cwd=self.dir)
        self.assertEqual(p.returncode, 7, p.stderr)
        (recorded, dropped), = query(db, 'SELECT events_recorded, events_dropped FROM processes')
        drops = dict(query(db, 'SELECT reason, count FROM drops'))
        late = drops.get('after_trace_end', 0)
        self.assertGreater(late, 0)
        # one reading of the counters: the processes row, the drops table and the exit's line
        # agree (205,108, 205,148 and 330,864 for one run; a helper's probe)
        events = ('queue_full', 'queue_held', 'unfinished_at_exit', 'write_failed', 'unwritten_at_signal',
                  'left_by_longjmp', 'after_trace_end')
        self.assertEqual(dropped, sum(n for r, n in drops.items() if r in events), drops)
        self.assertIn('%d events, %d dropped' % (recorded, dropped), p.stderr)
        self.assertIntegrity(db)

    def slow_free(self, n, *more, **env):
        db = os.path.join(self.dir, 'trace.db')
        env.setdefault('FAKE_CUDA_SLOW_FREE_MS', 1500)
        p = run([prog('slow_free'), '777777', str(n)] + list(more), env=base_env(
            GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUEUE_EVENTS=1024, GPUTRACE_QUEUE_WAIT_MS=100,
            FAKE_CUDA_HANG_FREE_BYTES=777777, **env), cwd=self.dir)
        return p, db

    def test_a_free_that_waits_holds_no_event_behind_it(self):
        # a synchronizing cudaFree waiting on the GPU kept its place in the queue, and the writer drained nothing
        # behind it: another thread's 40,000 calls in 1.5 s filled a queue of 1,024, and each waited 100 ms in vain
        # (a probe: 134,465 events lost in a second). Now the writer takes the waiting free as it is.
        p, db = self.slow_free(20000)
        self.assertEqual((p.returncode, p.stdout), (0, '20000\n'), p.stderr)
        self.assertEqual(query(db, 'SELECT reason, count FROM drops WHERE count > 0'), [])
        self.assertEqual(query(db, 'SELECT events_recorded, events_dropped FROM processes'), [(2 + 2 * 20000, 0)])
        # the free in its place: before the other thread's calls, which it began before, and it worked
        (free_t, result, size), = query(db, "SELECT t_ns, result, size FROM events_v WHERE api = 'cudaFree'")
        first_pair, = query(db, "SELECT min(t_ns) FROM events_v WHERE api = 'cudaMallocAsync'")[0]
        self.assertLess(free_t, first_pair)
        self.assertEqual(result, 0)
        self.assertGreaterEqual(size, 777777)
        self.assertEqual(query(db, "SELECT count(*) FROM live_at_exit"), [(0,)])
        self.assertIntegrity(db)

    def test_a_free_that_waits_then_fails_reads_failed(self):
        # written as a free that worked while it waited, its row is corrected when it returns an error: the
        # block stays live, as the program still holds it
        p, db = self.slow_free(20000, 'may-fail', FAKE_CUDA_SLOW_FREE_RESULT=1)
        self.assertEqual((p.returncode, p.stdout), (0, 'free failed 1\n20000\n'), p.stderr)
        self.assertEqual(query(db, 'SELECT events_recorded, events_dropped FROM processes'), [(2 + 2 * 20000, 0)])
        self.assertEqual(query(db, "SELECT result, size FROM events_v WHERE api = 'cudaFree'"), [(1, None)])
        self.assertEqual(query(db, "SELECT api, size >= 777777 FROM live_at_exit"), [('cudaMalloc', 1)])
        self.assertEqual(query(db, "SELECT count(*) FROM notes WHERE message LIKE '%could not be corrected%'"),
                         [(0,)])
        self.assertIntegrity(db)

    def test_a_flight_recorder_keeps_the_row_of_a_block_whose_waiting_free_fails(self):
        # the free was taken as one that worked: the flight recorder's checkpoints left the block's row out
        # of the live ones, pruned it past the window, and the failure 2.5 s on found no row to make live again
        p, db = self.slow_free(1000, 'may-fail', FAKE_CUDA_SLOW_FREE_MS=2500, FAKE_CUDA_SLOW_FREE_RESULT=1,
                               GPUTRACE_WINDOW_S=1)
        self.assertEqual((p.returncode, p.stdout), (0, 'free failed 1\n1000\n'), p.stderr)
        # (the free's own row is older than the window: pruned, as any event past it)
        self.assertEqual(query(db, "SELECT api, size >= 777777 FROM live_at_exit"), [('cudaMalloc', 1)])

    def test_a_flight_recorder_prunes_a_block_and_its_waiting_free_together_when_the_free_works(self):
        # the checkpoints while the free waited kept the block's row live; a prune past the window then took
        # the free's row alone, and the block read live at exit though it was freed (a review)
        p, db = self.slow_free(1000, FAKE_CUDA_SLOW_FREE_MS=2500, GPUTRACE_WINDOW_S=1)
        self.assertEqual((p.returncode, p.stdout), (0, '1000\n'), p.stderr)
        self.assertEqual(query(db, "SELECT count(*) FROM live_at_exit"), [(0,)])

    def test_an_exit_beside_a_free_that_never_returns_is_not_held_and_keeps_the_free(self):
        # the exit waited 2 s for the free's place in the queue, then counted it unfinished_at_exit
        t0 = time.monotonic()
        p, db = self.slow_free(1000, 'no-join', FAKE_CUDA_SLOW_FREE_MS='')
        took = time.monotonic() - t0
        self.assertEqual((p.returncode, p.stdout), (0, '1000\n'), p.stderr)
        self.assertLess(took, 1.5, p.stderr)
        self.assertEqual(query(db, 'SELECT events_recorded, events_dropped FROM processes'), [(2 + 2 * 1000, 0)])
        self.assertEqual(query(db, "SELECT result FROM events_v WHERE api = 'cudaFree'"), [(0,)])
        self.assertIntegrity(db)

    def test_underscore_exit_loses_nothing(self):
        self.check_complete('_exit')

    def test_capital_exit_loses_nothing(self):
        self.check_complete('_Exit', reason='_exit')

    def test_quick_exit_loses_nothing(self):
        # glibc's quick_exit ends in its internal _exit, past the _exit hook
        self.check_complete('quick_exit')

    def test_main_leaving_by_pthread_exit_ends_the_process_and_the_trace(self):
        # the process ends with its last thread; the writer's must not keep it alive
        if SANITIZER == 'thread':
            self.skipTest("ThreadSanitizer's runtime keeps a thread of its own: the process outlives main there")
        self.check_complete('pthread_exit', expect_rc=0, reason='exit')

    def test_a_data_file_on_fd_2_gets_no_shim_line(self):
        # started with 2>&-: the program's data file gets fd 2; the summary line, or the
        # line saying the trace could not be created, must not go into it
        for out in (os.path.join(self.dir, 't.db'), '/nonexistent-dir/t.db'):
            data = os.path.join(self.dir, 'data.txt')
            env = base_env(GPUTRACE_OUTPUT=out, GPUTRACE_CUPTI=0, LD_PRELOAD=SHIM)
            p = subprocess.run(['/bin/sh', '-c', 'exec "$0" "$1" 2>&-', prog('fd2_data'), data], env=env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assertEqual(open(data).read(), 'DATA\n', out)
        self.assertTrue(os.path.exists(os.path.join(self.dir, 't.db')))

    def test_files_a_program_opens_on_reused_numbers_are_never_written(self):
        # libunwind's memory-check pipe, checked when stepping through code without
        # unwind information, must not be what a program's closefrom(3) frees for its files
        import platform
        if platform.machine() != 'x86_64':
            self.skipTest('the program makes x86-64 machine code')
        if SANITIZER == 'thread':
            # (its files stay intact there too; ThreadSanitizer reports the close of the writer's
            # descriptors from the program's thread as a race and exits 66: the case is that close)
            self.skipTest('the program closes the writer thread\'s descriptors: a race ThreadSanitizer reports')
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 't.db'), GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1)
        p = run([prog('fd_reuse'), 'jit'], env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        for i in range(6):
            self.assertEqual(open(os.path.join(self.dir, 'own%d.dat' % i), 'rb').read(), b'X', i)

    @unittest.skipIf(SANITIZER == 'thread', 'the program dup2s onto a descriptor libunwind uses from its threads: '
                                            'a race ThreadSanitizer reports (exit 86), the case itself')
    def test_a_program_file_on_libunwinds_descriptor_is_never_read_stacks_are_counted_instead(self):
        # a blocking pipe of the program's dup2'ed onto 256, where libunwind's
        # memory-check pipe lies: libunwind read from it and the program hung
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 1024:
            self.skipTest('a descriptor limit under 1024: the pipe is not put at 256')

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        db = os.path.join(self.dir, 't.db')
        env = dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1), LD_PRELOAD=SHIM)
        p = subprocess.run([prog('fd_taken')], env=env, cwd=self.dir, capture_output=True, text=True, timeout=60,
                           preexec_fn=limit)
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'), p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(2 + 2 * 4000,)])
        # every allocation after the dup2 that needed libunwind's walk: without its stack, counted
        self.assertGreater(query(db, "SELECT count FROM drops WHERE reason = 'stack_not_taken'")[0][0], 0)

    @unittest.skipIf(SANITIZER, "a sanitizer's instrumentation takes its own share of a small thread stack")
    def test_a_thread_with_a_small_stack_runs_as_untraced_its_stack_not_taken(self):
        # a thread of 32 KiB calling cudaMalloc 24 KiB deep: taking the call stack (about 8 KiB more)
        # overflowed it, SIGSEGV under the shim only; now no stack there, counted
        def traced(stack, use):
            db = os.path.join(self.dir, 'small-%d-%d.db' % (stack, use))
            env = dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1), LD_PRELOAD=SHIM)
            p = subprocess.run([prog('small_stack'), str(stack), str(use)], env=env, capture_output=True, text=True,
                               timeout=60)
            return p, db
        bare = subprocess.run([prog('small_stack'), '32768', '24576'], env=base_env(), capture_output=True,
                              text=True, timeout=60)
        self.assertEqual((bare.returncode, bare.stdout), (0, 'done\n'), bare.stderr)
        p, db = traced(32768, 24576)
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'), p.stderr)
        self.assertEqual(query(db, "SELECT count FROM drops WHERE reason = 'stack_low'"), [(100,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(2 + 200,)])
        # with room the thread's allocations carry their stacks
        p, db = traced(262144, 8192)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, "SELECT count(*) FROM drops WHERE reason = 'stack_low' AND count > 0"), [(0,)])
        self.assertEqual(query(db, "SELECT count(*) FROM events e JOIN apis a ON a.id = e.api "
                                   "WHERE a.name = 'cudaMalloc' AND e.stack_id IS NULL"), [(0,)])

    def stack_edges(self, *args, traced=True):
        env = base_env()
        db = os.path.join(self.dir, 'edges.db')
        if traced:
            env = dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1), LD_PRELOAD=SHIM)
        p = subprocess.run([prog('stack_edges')] + [str(a) for a in args], env=env, cwd=self.dir, capture_output=True,
                           text=True, timeout=60)
        drops = {}
        for f in os.listdir(self.dir) if traced else []:
            if f.endswith('.db'):
                for reason, n in query(os.path.join(self.dir, f), 'SELECT reason, count FROM drops WHERE count > 0'):
                    drops[reason] = drops.get(reason, 0) + n
        return p, drops

    @unittest.skipIf(SANITIZER, "the hang is glibc malloc's lock; a sanitizer's allocator and signals differ")
    def test_a_threads_first_stack_in_a_signal_handler_is_not_taken(self):
        # the handler interrupted malloc, and libunwind's first use on the thread allocates its storage:
        # the process waited forever (a review, session 48)
        bare, _ = self.stack_edges('handler', 200, traced=False)
        self.assertEqual((bare.returncode, bare.stdout), (0, 'done\n'), bare.stderr)
        p, drops = self.stack_edges('handler', 200)
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'), p.stderr)
        self.assertEqual(drops, {'stack_in_signal_handler': 200})

    @unittest.skipIf(SANITIZER, "a sanitizer's instrumentation takes its own share of a small stack")
    def test_a_handler_on_a_small_alternate_stack_runs_as_untraced(self):
        # the alternate stack was malloc'd memory: taking a stack there overflowed into the heap
        bare, _ = self.stack_edges('altstack', 8192, traced=False)
        self.assertEqual((bare.returncode, bare.stdout), (0, 'done\n'), bare.stderr)
        p, drops = self.stack_edges('altstack', 8192)
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'), p.stderr)
        self.assertEqual(drops, {'stack_low': 3})

    @unittest.skipIf(SANITIZER, "ASan warns that it does not support swapcontext (a report to the harness)")
    def test_a_fiber_on_a_stack_of_its_own_gets_its_stacks(self):
        # sp far from the thread's own stack: the scan for a signal frame reads only pages the kernel says it can
        p, drops = self.stack_edges('fiber', 20)
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'), p.stderr)
        self.assertEqual(drops, {})
        db = os.path.join(self.dir, 'edges.db')
        self.assertEqual(query(db, "SELECT count(*), count(stack_id) FROM events_v WHERE op = 'alloc'"), [(101, 101)])

    @unittest.skipIf(SANITIZER, "a sanitizer's instrumentation takes its own share of a small thread stack")
    def test_a_fork_child_of_a_small_stacked_thread_runs_as_untraced(self):
        # the child's only thread has the process's pid, and was taken for the main thread: unchecked
        bare, _ = self.stack_edges('fork', 32768, 20000, traced=False)
        self.assertEqual((bare.returncode, bare.stdout), (0, 'done\n'), bare.stderr)
        p, drops = self.stack_edges('fork', 32768, 20000)
        self.assertEqual((p.returncode, p.stdout), (0, 'done\n'), p.stderr)
        self.assertEqual(drops, {'stack_low': 10})

    def test_the_trace_files_descriptors_are_off_the_numbers_a_program_reuses(self):
        # between the check that a descriptor is still the trace's and the
        # write, a program's closefrom and open could put its file there: the
        # trace's files are kept above 300, where such reuse does not reach
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 1024:
            self.skipTest('a descriptor limit under 1024')
        db = os.path.join(self.dir, 't.db')
        env = dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1), LD_PRELOAD=SHIM)
        p = subprocess.run([prog('fd_taken'), 'list'], env=env, cwd=self.dir, capture_output=True, text=True,
                           timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)))
        self.assertEqual(p.returncode, 0, p.stderr)
        ours = [int(line.split()[0]) for line in p.stdout.splitlines() if os.path.basename(db) in line]
        self.assertTrue(ours, p.stdout)
        self.assertTrue(all(fd >= 300 for fd in ours), p.stdout)

    def test_a_program_file_on_the_shms_descriptor_gets_no_lock_of_the_traces(self):
        # the -shm's own descriptor was never checked: SQLite's locks landed on
        # the program's file, and its unlocks and close would have been the program's loss
        db = os.path.join(self.dir, 't.db')
        env = dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0), LD_PRELOAD=SHIM)
        p = subprocess.run([prog('fd_taken'), 'shm'], env=env, cwd=self.dir, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, 'locks 0\n'), p.stderr)
        with open(os.path.join(self.dir, 'mine.dat'), 'rb') as f:
            self.assertEqual(f.read(), b'0123456789')
        self.assertIn("closed the trace file's descriptor", p.stderr)

    def test_a_line_on_a_stderr_nobody_reads_does_not_kill_the_program(self):
        # (prog; echo $?) 2>&1 | true: the shim's closing line raised SIGPIPE (141; 0 untraced);
        # so could a warning about a bad GPUTRACE_* value, written at the start
        for k, extra in enumerate(({}, {'GPUTRACE_STACK_DEPTH': 'lots'})):
            r, w = os.pipe()
            os.close(r)
            db = os.path.join(self.dir, 't%d.db' % k)
            try:
                p = subprocess.run([prog('each_api')], env=dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, **extra),
                                                                LD_PRELOAD=SHIM),
                                   cwd=self.dir, stdout=subprocess.DEVNULL, stderr=w, timeout=60)
            finally:
                os.close(w)
            self.assertEqual(p.returncode, 0, extra)
            self.assertEqual(query(db, 'SELECT end_reason FROM processes'), [('exit',)])

    def test_a_program_started_with_stdout_closed_gets_fd_1_for_its_file(self):
        # (the writer opens the trace meanwhile: its SQLite never takes 0-2, not even for a moment)
        log = os.path.join(self.dir, 'log.txt')
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 't.db'), GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1,
                       LD_PRELOAD=SHIM)
        p = subprocess.run(['/bin/sh', '-c', 'exec "$0" openlog "$1" >&-', prog('fd_reuse'), log], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(open(log).read(), 'stdout fd=1\n')

    def test_exec_loses_nothing(self):
        self.check_complete('exec')

    def test_failed_exec_keeps_tracing(self):
        p, db = self.trace([prog('exit_modes'), 'exec-fails', '10'])
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(11,)])
        self.assertEqual(query(db, 'SELECT end_reason FROM processes'), [('exit',)])


class WriteFailureTest(TraceTest):
    def allocate_under_file_limit(self, limit):
        """exit_modes' 100,000 allocations traced into full.db under RLIMIT_FSIZE
        limit (a full disk); returns the run and the trace's path."""
        import resource

        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        db = os.path.join(self.dir, 'full.db')
        p = subprocess.run([prog('exit_modes'), 'return', '100000'], capture_output=True, text=True, timeout=120,
                           env=dict(base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0), LD_PRELOAD=SHIM),
                           cwd=self.dir, preexec_fn=small_files)
        self.assertEqual((p.returncode, p.stdout), (7, 'allocated 100000\n'), p.stderr)
        return p, db

    def test_a_write_that_fails_mid_run_costs_two_lines_saying_what_was_lost(self):
        # a full disk (here the file-size limit): the first line said "further
        # events are counted as dropped", but the drops table could not take
        # them either and nothing more was said (a helper's probe)
        p, db = self.allocate_under_file_limit(300000)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertIn('writing trace %s failed' % db, lines[0])
        m = re.search(r'is incomplete: at least (\d+) events were not written', lines[1])
        self.assertTrue(m, lines[1])
        self.assertGreater(int(m.group(1)), 0)

    def test_the_events_of_a_transaction_whose_commit_failed_are_counted_as_not_written(self):
        # their INSERTs succeeded, the COMMIT met the full disk and took them
        # back: they were counted as recorded, neither in the file nor in the
        # count (a helper's probe: 205,794 calls lost, "at least 168,930")
        p, db = self.allocate_under_file_limit(1000000)
        m = re.search(r'at least (\d+) events were not written', p.stderr)
        self.assertTrue(m, p.stderr)
        written = query(db, 'SELECT count(*) FROM events')[0][0]
        self.assertEqual(written + int(m.group(1)), 100000, (written, p.stderr))


    def test_a_file_size_limit_met_while_the_trace_is_created_leaves_nothing_behind(self):
        # the message said "the file was removed" and a 16 KB -shm stayed
        import resource

        def tiny_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        out = os.path.join(self.dir, 'out')
        os.mkdir(out)
        p = subprocess.run([prog('exit_modes'), 'return', '10'], capture_output=True, text=True, timeout=120,
                           env=dict(base_env(GPUTRACE_OUTPUT=os.path.join(out, 't.db'), GPUTRACE_CUPTI=0),
                                    LD_PRELOAD=SHIM), cwd=self.dir, preexec_fn=tiny_files)
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertIn('cannot initialise trace file', p.stderr)
        self.assertIn('the file was removed', p.stderr)
        self.assertEqual(os.listdir(out), [])

    def test_a_disk_that_fills_while_the_trace_is_created_leaves_no_file_at_its_name(self):
        # the schema's checkpoint failed at the close: the file was published
        # without its -wal, a truncated "trace" at the final name (a helper's
        # probe, on a 200 KiB tmpfs; mounting one needs root)
        mnt = os.path.join(self.dir, 'small')
        os.mkdir(mnt)
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=200k', 'tmpfs', mnt], capture_output=True).returncode:
            self.skipTest('mounting a small tmpfs needs root')
        try:
            db = os.path.join(mnt, 't.db')
            p = run([prog('output')], env=base_env(GPUTRACE_OUTPUT=db), cwd=self.dir)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertFalse(os.path.exists(db), os.listdir(mnt))
            # nothing of the shim's is left to fill the disk the program writes to
            self.assertEqual(os.listdir(mnt), [])
            self.assertIn('cannot initialise trace file', p.stderr)
            self.assertIn('the file was removed', p.stderr)
            self.assertEqual(len([l for l in p.stderr.splitlines() if l.startswith('gputrace')]), 1, p.stderr)
        finally:
            subprocess.run(['umount', mnt], capture_output=True)


class TraceRemovedTest(TraceTest):
    @unittest.skipIf(SANITIZER == 'thread', 'the thread stage runs no Python program')
    def test_a_trace_removed_while_written_is_not_said_to_be_written(self):
        # its directory recreated, the file deleted or another moved onto its
        # name: the shim said "wrote" over a file that was not there
        db = os.path.join(self.dir, 'gone.db')
        script = ('import ctypes, os, sys, time\n'
                  'rt = ctypes.CDLL("libcudart.so.13")\n'
                  'p = ctypes.c_void_p()\n'
                  'rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096))\n'
                  'for _ in range(200):\n'
                  '    if os.path.exists(sys.argv[1]): break\n'
                  '    time.sleep(0.01)\n'
                  'os.unlink(sys.argv[1])\n'
                  'rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096))\n')
        p = run([sys.executable, '-c', script, db], env=base_env(GPUTRACE_OUTPUT=db), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('wrote', p.stderr)
        self.assertIn('was removed or replaced while it was written', p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)


class ForkTest(TraceTest):
    def test_fork_child_without_cuda_leaves_no_file(self):
        p, db = self.trace([prog('fork_child'), 'quiet'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ['trace.db'])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(101,)])

    def test_fork_child_with_cuda_gets_its_own_complete_file(self):
        p, db = self.trace([prog('fork_child'), 'cuda', '50'])
        self.assertEqual(p.returncode, 0, p.stderr)
        child = int(p.stdout.split()[1])
        # two files, one per process; which gets the plain name is the order in
        # which their writer threads created them (the parent's is created
        # asynchronously and may come after the fork): found by the pid each records
        files = sorted(os.listdir(self.dir))
        self.assertEqual(len(files), 2, files)
        by_pid = {query(os.path.join(self.dir, f), 'SELECT pid FROM processes')[0][0]: os.path.join(self.dir, f)
                  for f in files}
        self.assertIn(child, by_pid, files)
        child_db = by_pid.pop(child)
        db = list(by_pid.values())[0]
        self.assertIn(os.path.basename(child_db), ('trace.db', 'trace.%d.db' % child))
        # the child's file holds only the child's own calls, none of the parent's buffered ones
        self.assertEqual(query(child_db, 'SELECT count(*), min(size), max(size) FROM events'), [(50, 4096, 4096)])
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(101,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM events WHERE size = 4096'), [(0,)])
        self.assertIntegrity(child_db)
        self.assertIntegrity(db)
        # the parent's CUPTI and kernel-sampling notes, queued at the fork, are not the child's: it has no
        # CUPTI and says so itself (a helper's probe: 5 of 5 children forked this early had them)
        notes = query(child_db, "SELECT component, message FROM notes WHERE component IN ('cupti', 'kernels')")
        self.assertEqual([c for c, m in notes if c == 'kernels' or not m.startswith('unavailable')], [], notes)

    def test_a_fork_child_of_a_parent_without_cupti_does_not_say_the_parent_started_it(self):
        # with CUPTI off in the parent, the child's note said "CUPTI was started by the parent" (a review)
        p, db = self.trace([prog('fork_child'), 'cuda', '50'], env_extra={'GPUTRACE_CUPTI': '0'})
        self.assertEqual(p.returncode, 0, p.stderr)
        child = int(p.stdout.split()[1])
        files = [os.path.join(self.dir, f) for f in os.listdir(self.dir)]
        child_db = [f for f in files if query(f, 'SELECT pid FROM processes')[0][0] == child][0]
        notes = [m for (m,) in query(child_db, "SELECT message FROM notes WHERE component = 'cupti'")]
        self.assertTrue(notes, 'the child says why it has no CUPTI')
        self.assertFalse([m for m in notes if 'started by the parent' in m], notes)
        self.assertTrue(all(m.startswith('off: GPUTRACE_CUPTI=0') or m.startswith('unavailable: as in the parent')
                            for m in notes), notes)


class NoCudaTest(TraceTest):
    def test_true_under_the_shim_leaves_no_file(self):
        env = base_env()
        env.pop('GPUTRACE_OUTPUT', None)
        p = run(['/bin/true'], env=env, cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, '', ''))
        p = run(['/bin/sh', '-c', 'echo hello; ls >/dev/null'], env=env, cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, 'hello\n', ''))
        self.assertEqual(os.listdir(self.dir), [])

    def test_process_without_cuda_never_maps_libunwind(self):
        # libunwind (and its liblzma) load at the first CUDA call only: a shell
        # or compiler that inherits LD_PRELOAD maps nothing but the shim.
        p = run(['/bin/cat', '/proc/self/maps'], env=base_env(), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('libgputrace.so', p.stdout)
        self.assertNotIn('libunwind', p.stdout)
        self.assertNotIn('liblzma', p.stdout)

    def test_default_output_name_uses_pid(self):
        env = base_env(GPUTRACE_QUIET=1)
        p = run([prog('output')], env=env, cwd=self.dir)
        files = os.listdir(self.dir)
        self.assertEqual(len(files), 1)
        self.assertRegex(files[0], r'^gputrace-\d+\.db$')
        self.assertEqual(query(os.path.join(self.dir, files[0]), 'SELECT pid FROM processes'),
                         [(int(files[0][9:-3]),)])
        self.assertEqual(p.returncode, 3)


class OutputTest(TraceTest):
    @unittest.skipIf(SANITIZER == 'thread', 'the thread stage runs no Python program')
    def test_the_exit_line_rounds_bytes_as_the_reports_do(self):
        # 81,395,712 B is 77.625 MiB: printf's rounding to even said 77.62
        # where summary, run and the report say 77.63; 1023.995 KiB is 1.00 MiB
        for size, shown in ((81395712, '77.63 MiB'), (1048571, '1.00 MiB')):
            db = os.path.join(self.dir, '%d.db' % size)
            script = ('import ctypes\nrt = ctypes.CDLL("libcudart.so.13")\np = ctypes.c_void_p()\n'
                      'rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(%d))\nrt.cudaFree(p)\n' % size)
            p = run([sys.executable, '-c', script], env=base_env(GPUTRACE_OUTPUT=db))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('peak device memory %s)' % shown, p.stderr)
            self.assertIn('%s at' % shown, gtlib.run([gtlib.GPUTRACE, 'summary', db], preload=False).stdout)

    @unittest.skipIf(SANITIZER == 'thread', 'the thread stage runs no Python program')
    def test_the_exit_line_names_managed_and_pinned_host_peaks(self):
        # a managed-memory program's line read "peak device memory 0 B" alone (a helper's probe)
        db = os.path.join(self.dir, 'm.db')
        script = ('import ctypes\nrt = ctypes.CDLL("libcudart.so.13")\np, h = ctypes.c_void_p(), ctypes.c_void_p()\n'
                  'rt.cudaMallocManaged(ctypes.byref(p), ctypes.c_size_t(3 << 20), 1)\n'
                  'rt.cudaMallocHost(ctypes.byref(h), ctypes.c_size_t(5 << 20))\nrt.cudaFree(p)\nrt.cudaFreeHost(h)\n')
        p = run([sys.executable, '-c', script], env=base_env(GPUTRACE_OUTPUT=db))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('peak device memory 0 B, managed 3.00 MiB, pinned host 5.00 MiB)', p.stderr)

    def test_program_output_and_exit_code_identical_with_and_without_shim(self):
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 't.db'))
        bare = run([prog('output')], preload=False, env=env, cwd=self.dir)
        traced = run([prog('output')], env=env, cwd=self.dir)
        self.assertEqual(bare.returncode, 3)
        self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout))
        # stderr differs only by the shim's one summary line (and, without a
        # GPU driver, the one line saying CUPTI is unavailable: test_nvtx)
        extra = [l for l in traced.stderr.splitlines() if l not in bare.stderr.splitlines()
                 and not l.startswith('gputrace: cupti unavailable: ')]
        self.assertEqual(len(extra), 1, traced.stderr)
        self.assertRegex(extra[0], r'^gputrace: wrote .*t\.db \(20 events, 0 dropped, peak device memory ')
        quiet = run([prog('output')], env=base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'q.db'),
                                                   GPUTRACE_QUIET=1), cwd=self.dir)
        self.assertEqual((quiet.stdout, quiet.stderr), (bare.stdout, bare.stderr))

    def test_unwritable_directory_one_stderr_line_exit_code_unchanged(self):
        ro = os.path.join(self.dir, 'ro')
        os.mkdir(ro, 0o500)
        target = os.path.join(ro, 'sub', 'x.db')  # a missing directory fails even for root
        p = run([prog('output')], env=base_env(GPUTRACE_OUTPUT=target), cwd=self.dir)
        bare = run([prog('output')], preload=False, env=base_env(), cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout), (3, bare.stdout))
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace:')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn('cannot create trace file', lines[0])
        self.assertIn(target, lines[0])

    def test_symlink_is_not_followed(self):
        victim = os.path.join(self.dir, 'victim')
        with open(victim, 'w') as f:
            f.write('keep me')
        link = os.path.join(self.dir, 'link.db')
        os.symlink(victim, link)
        p = run([prog('output')], env=base_env(GPUTRACE_OUTPUT=link, GPUTRACE_QUIET=1), cwd=self.dir)
        self.assertEqual(p.returncode, 3)
        with open(victim) as f:
            self.assertEqual(f.read(), 'keep me')

    def test_existing_file_is_not_clobbered(self):
        existing = os.path.join(self.dir, 'trace.db')
        with open(existing, 'w') as f:
            f.write('not mine')
        p, _ = self.trace([prog('output')])
        with open(existing) as f:
            self.assertEqual(f.read(), 'not mine')
        others = [f for f in os.listdir(self.dir) if f != 'trace.db']
        self.assertEqual(len(others), 1, others)
        self.assertRegex(others[0], r'^trace\.\d+\.db$')
        self.assertEqual(query(os.path.join(self.dir, others[0]), 'SELECT count(*) FROM events'), [(20,)])

    @unittest.skipIf(SANITIZER == 'thread', 'the thread stage runs no Python program')
    def test_a_relative_output_is_where_the_process_started_whatever_it_moves_to(self):
        # the writer thread resolved it later, in whatever directory the program
        # had moved to right after its first CUDA call (a race: the trace there,
        # or lost half way through)
        os.mkdir(os.path.join(self.dir, 'moved'))
        script = ('import ctypes, os\n'
                  'rt = ctypes.CDLL("libcudart.so.13")\n'
                  'p = ctypes.c_void_p()\n'
                  'rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096))\n'
                  'os.chdir("moved")\n'
                  'for _ in range(50):\n'
                  '    rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096))\n')
        for _ in range(3):
            p = run([sys.executable, '-c', script], env=base_env(GPUTRACE_OUTPUT='rel.db', GPUTRACE_QUIET=1),
                    cwd=self.dir)
            self.assertEqual((p.returncode, p.stderr), (0, ''))
            self.assertEqual(query(os.path.join(self.dir, 'rel.db'), 'SELECT count(*) FROM events'), [(51,)])
            self.assertEqual(os.listdir(os.path.join(self.dir, 'moved')), [])
            os.unlink(os.path.join(self.dir, 'rel.db'))

    def test_a_name_with_a_side_file_left_beside_it_is_taken(self):
        # a run killed at trace.db left trace.db-wal; the user removed trace.db
        # alone: SQLite read that WAL into the new trace (the new run lost, the
        # old shown) and the side file was not the shim's to touch
        for side in ('-wal', '-shm', '-journal'):
            left = os.path.join(self.dir, 'trace.db' + side)
            with open(left, 'w') as f:
                f.write('left by another run')
            p, _ = self.trace([prog('output')])
            self.assertEqual(p.returncode, 3, p.stderr)
            with open(left) as f:
                self.assertEqual(f.read(), 'left by another run', side)
            self.assertFalse(os.path.exists(os.path.join(self.dir, 'trace.db')), side)
            others = [f for f in os.listdir(self.dir) if re.match(r'^trace\.\d+\.db$', f)]
            self.assertEqual(len(others), 1, os.listdir(self.dir))
            self.assertEqual(query(os.path.join(self.dir, others[0]), 'SELECT count(*) FROM events'), [(20,)])
            for f in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, f))

    def test_a_name_that_is_a_side_file_of_a_database_there_is_taken(self):
        # GPUTRACE_OUTPUT=trace.db-wal beside a database trace.db: SQLite reads
        # the trace as that database's write-ahead log, and the next writer to
        # open trace.db removes it (a helper's probe, through `run -o`)
        import sqlite3
        other = os.path.join(self.dir, 'trace.db')
        con = sqlite3.connect(other)
        con.execute('CREATE TABLE t(x)')
        con.execute('INSERT INTO t VALUES (7)')
        con.commit()
        con.close()
        for side in ('-wal', '-shm', '-journal'):
            p, _ = self.trace([prog('output')], name='trace.db' + side)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertFalse(os.path.exists(other + side), (side, os.listdir(self.dir)))
            mine = [f for f in os.listdir(self.dir) if re.match(r'^trace\.db%s\.\d+$' % side, f)]
            self.assertEqual(len(mine), 1, os.listdir(self.dir))
            self.assertEqual(query(os.path.join(self.dir, mine[0]), 'SELECT count(*) FROM events'), [(20,)])
            os.unlink(os.path.join(self.dir, mine[0]))
        self.assertEqual(query(other, 'SELECT x FROM t'), [(7,)])
        self.assertEqual(sorted(os.listdir(self.dir)), ['trace.db'])

    def test_pattern_expands_pid_host_and_rank(self):
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'r%r-%h-%p.db'), GPUTRACE_QUIET=1, RANK=3)
        run([prog('output')], env=env, cwd=self.dir)
        files = os.listdir(self.dir)
        self.assertEqual(len(files), 1)
        self.assertRegex(files[0], r'^r3-%s-\d+\.db$' % os.uname().nodename)
        self.assertEqual(query(os.path.join(self.dir, files[0]), 'SELECT rank FROM processes'), [(3,)])

    def traced_into(self, pattern):
        """Runs the output program with GPUTRACE_OUTPUT=pattern; returns the
        process and the files (relative to self.dir) it left."""
        p = run([prog('output')], env=base_env(GPUTRACE_OUTPUT=pattern, GPUTRACE_QUIET=1), cwd=self.dir)
        self.assertEqual(p.returncode, 3, p.stderr)
        found = [os.path.relpath(os.path.join(d, f), self.dir) for d, _, fs in os.walk(self.dir) for f in fs]
        return p, found

    def test_output_naming_an_existing_directory_puts_the_trace_inside_it(self):
        out = os.path.join(self.dir, 'traces')
        os.mkdir(out)
        for pattern in (out, out + '/'):
            for f in os.listdir(out):
                os.unlink(os.path.join(out, f))
            p, found = self.traced_into(pattern)
            self.assertEqual(len(found), 1, found)
            self.assertRegex(found[0], r'^traces/gputrace-\d+\.db$')
            self.assertEqual(query(os.path.join(self.dir, found[0]), 'SELECT count(*) FROM events'), [(20,)])
            self.assertNotIn('gputrace:', p.stderr)

    def test_output_ending_in_slash_without_the_directory_is_one_line_and_no_file(self):
        p, found = self.traced_into(os.path.join(self.dir, 'missing') + '/')
        self.assertEqual(found, [])
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace:')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn('cannot create trace file', lines[0])
        self.assertIn('missing/gputrace-', lines[0])

    def test_unknown_escape_is_kept_and_warned_about_once(self):
        p, found = self.traced_into(os.path.join(self.dir, 'a%x-%y-%p.db'))
        self.assertEqual(len(found), 1, found)
        self.assertRegex(found[0], r'^a%x-%y-\d+\.db$')
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace:')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("unknown escape '%x'", lines[0])

    def test_unknown_escape_is_not_warned_about_by_a_process_without_cuda(self):
        p = run(['/bin/sh', '-c', 'echo hi'], env=base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'a%x.db')),
                cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, 'hi\n', ''))
        self.assertEqual(os.listdir(self.dir), [])


class ClosedDescriptorsTest(TraceTest):
    """A program that closes every descriptor above 2 and opens its own files,
    which get the numbers SQLite held (issue 15): the trace is never written
    into them; tracing stops with one line and the program runs on."""

    def test_trace_never_written_into_the_programs_files(self):
        import sqlite3
        import time
        db = os.path.join(self.dir, 'trace.db')
        env = base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, LD_PRELOAD=SHIM)
        p = subprocess.Popen([prog('close_fds'), self.dir, '20000'], env=env, cwd=self.dir, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the first burst's 40,000 events committed before the program closes
        # the descriptors (it waits for our line)
        written, deadline = 0, time.monotonic() + 60
        while written < 40000 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.02)
            try:
                written = query(db, 'SELECT count(*) FROM events')[0][0]
            except sqlite3.Error:
                pass  # not yet given its name, or its schema not yet committed
        self.assertEqual(written, 40000, 'the writer did not commit the first burst in 60 s')
        t0 = time.monotonic()
        out, err = p.communicate('go\n', timeout=120)
        elapsed = time.monotonic() - t0
        self.assertEqual(p.returncode, 5, err)
        for i in range(8):
            with open(os.path.join(self.dir, 'own%d.dat' % i), 'rb') as f:
                self.assertEqual(f.read(), b"the program's own data\n", 'own%d.dat was written to' % i)
        lines = [l for l in err.splitlines() if l.startswith('gputrace:')]
        self.assertEqual(len(lines), 1, err)
        self.assertIn("closed the trace file's descriptor", lines[0])
        self.assertLess(elapsed, 10, 'the exit waited for the writer')
        # what was committed before the descriptors went is still a readable trace
        self.assertGreaterEqual(query(db, 'SELECT count(*) FROM events')[0][0], 40000)


class SwappedOutputTest(TraceTest):
    """Between the shim's exclusive create of the trace and SQLite's open of
    the same name, a rename puts a symbolic link to another database there
    (issue 15: the trace went into an existing SQLite database 13 times in 20).
    tests/progs/swap_on_open.c makes the race certain: at the first open of the
    name without O_EXCL (SQLite's) it renames the link over it first."""

    def swap_in(self, make_other):
        """Runs a traced program while make_other(path) is renamed over the
        trace's name just before SQLite opens it; returns (stderr line, db)."""
        db = os.path.join(self.dir, 'trace.db')
        make_other(db + '.swap')
        env = base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, SWAP_FROM=db + '.swap', SWAP_TO=db)
        env['LD_PRELOAD'] = prog('libswap_on_open.so') + ':' + SHIM
        p = run([prog('exit_modes'), 'return', '500'], preload=False, env=env, cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout), (7, 'allocated 500\n'), p.stderr)
        self.assertFalse(os.path.exists(db + '.swap'), 'the swap did not happen: the test proves nothing')
        lines = [l for l in p.stderr.splitlines() if l.startswith('gputrace:')]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn('was replaced', lines[0])
        return lines[0], db

    def other_database(self, path):
        import sqlite3
        con = sqlite3.connect(path)
        con.execute('CREATE TABLE precious(x)')
        con.execute("INSERT INTO precious VALUES ('keep')")
        con.commit()
        con.close()
        self.before = open(path, 'rb').read()

    def test_another_database_renamed_over_the_name_is_never_written(self):
        _, db = self.swap_in(self.other_database)
        self.assertEqual(open(db, 'rb').read(), self.before, 'the trace was written into another database')
        self.assertFalse(os.path.exists(db + '-wal'))

    def test_a_link_renamed_over_the_name_is_never_followed(self):
        victim = os.path.join(self.dir, 'app.db')
        self.other_database(victim)
        _, db = self.swap_in(lambda p: os.symlink(victim, p))
        self.assertTrue(os.path.islink(db))
        self.assertEqual(open(victim, 'rb').read(), self.before)


class LockedByAReaderTest(TraceTest):
    """Another connection holds the trace's write lock for a while (issue 15:
    "database is locked", 466,000 of 600,000 events lost, "dropped 0"). The
    writer waits and goes on; every call is either recorded or counted as
    dropped; the program is not slowed; a lock held at exit delays it by a
    moment at most."""
    LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'progs', 'alloc_loop.py')

    def traced_loop(self, seconds, lock_after, lock_for):
        import sqlite3
        import sys
        import threading
        import time
        db = os.path.join(self.dir, 'trace.db')
        env = base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUEUE_WAIT_MS=100, LD_PRELOAD=SHIM)

        locked_at = []

        def hold():
            deadline = time.monotonic() + 10
            while not os.path.exists(db + '-wal') and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(lock_after)
            con = sqlite3.connect(db, isolation_level=None, timeout=10)
            con.execute('BEGIN IMMEDIATE')
            locked_at.append(time.monotonic())
            time.sleep(lock_for)
            con.execute('COMMIT')
            con.close()
        th = threading.Thread(target=hold)
        th.start()
        t0 = time.monotonic()
        p = run([sys.executable, self.LOOP, str(seconds), '2'], preload=False, env=env, cwd=self.dir)
        elapsed = time.monotonic() - t0
        th.join()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(locked_at and locked_at[0] < t0 + elapsed, 'the lock was taken after the program ended: '
                        'the test proves nothing')
        return p, db, int(p.stdout.split()[0]), elapsed

    def test_a_readers_lock_costs_counted_drops_not_the_trace(self):
        p, db, calls, elapsed = self.traced_loop(3.5, 0.3, 2.5)   # longer than SQLite's own 2 s busy wait
        recorded, dropped = query(db, 'SELECT events_recorded, events_dropped FROM processes')[0]
        self.assertEqual(recorded + dropped, calls, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(recorded,)])
        self.assertGreater(dropped, 0, 'the lock was not met: the test proves nothing')
        after = query(db, 'SELECT count(*) FROM events WHERE t_ns > (SELECT max(t_ns) FROM events) - 500000000')[0][0]
        self.assertGreater(after, 0, 'nothing recorded after the lock was released')
        self.assertEqual([l for l in p.stderr.splitlines() if 'failed' in l or 'stopped' in l], [])
        self.assertLess(elapsed, 3.5 + 1.5)

    def test_a_lock_held_at_exit_delays_it_by_a_moment_at_most(self):
        p, db, calls, elapsed = self.traced_loop(1.5, 0.2, 5.0)
        self.assertLess(elapsed, 1.5 + 2.5, 'the exit waited for the lock')
        self.assertIn('stayed locked by another connection at exit', p.stderr)


class ConfigWarningsTest(TraceTest):
    def test_a_bad_value_is_said_once_by_the_process_that_traces_not_by_every_child(self):
        db = os.path.join(self.dir, 'trace.db')
        env = base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_STACK_DEPTH='abc')
        quiet = run(['/bin/sh', '-c', 'ls / >/dev/null; /bin/true'], env=env, cwd=self.dir)
        self.assertEqual((quiet.returncode, quiet.stderr), (0, ''))
        p = run(['/bin/sh', '-c', '%s return 3; ls / >/dev/null' % prog('exit_modes')], env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        warnings = [l for l in p.stderr.splitlines() if 'ignoring GPUTRACE_STACK_DEPTH' in l]
        self.assertEqual(warnings, ['gputrace: ignoring GPUTRACE_STACK_DEPTH=abc (expected an integer from 0 to 128): 32, the default, is used'])


class TwoCopiesTest(TraceTest):
    """Two copies of the shim from different paths in LD_PRELOAD (`gputrace
    run` in a shell that preloads the build tree's): one trace, one line (a
    helper's probe: two files and two lines a process)."""

    @unittest.skipIf(SANITIZER, 'a copy of an instrumented shim needs its runtime first in the preload list')
    def test_the_second_copy_stays_passive(self):
        import shutil
        copy = os.path.join(self.dir, 'copy', 'libgputrace.so')
        os.makedirs(os.path.dirname(copy))
        shutil.copy(SHIM, copy)
        db = os.path.join(self.dir, 't.db')
        env = base_env(GPUTRACE_OUTPUT=db, LD_PRELOAD=SHIM + ':' + copy)
        p = run([prog('demo_loop')], preload=False, env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(re.findall(r'^gputrace: wrote ', p.stderr, re.M)), 1, p.stderr)
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if f.endswith('.db')), ['t.db'])
        n = query(db, "SELECT count(*) FROM events_v WHERE api = 'cudaMalloc'")[0][0]
        self.assertGreater(n, 0)
        # each allocation once, as with one copy
        one = os.path.join(self.dir, 'one.db')
        run([prog('demo_loop')], env=base_env(GPUTRACE_OUTPUT=one), cwd=self.dir, check=True)
        self.assertEqual(query(one, "SELECT count(*) FROM events_v WHERE api = 'cudaMalloc'")[0][0], n)
