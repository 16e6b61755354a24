"""Children started after CUDA is up, every way C and Python start them: the
parent's trace stays complete (every event before and after), each traced
process prints exactly one summary line, and a child that calls CUDA gets a
file of its own. CPython's subprocess and glibc's posix_spawn start children
with vfork(): the child runs the shim's exec and _exit hooks in the parent's
memory, which once ended the parent's trace (issue 18)."""
import os
import re
import subprocess
import sys

from gtlib import SHIM, TraceTest, base_env, prog, query, run

PY_PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'progs', 'spawn_children.py')
BIG = 1 << 16


class ChildrenTest(TraceTest):
    def run_parent(self, argv):
        env = base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 't-%p.db'))
        env['LD_PRELOAD'] = SHIM
        p = subprocess.Popen(argv, env=env, cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        return p.pid, err

    def check(self, argv):
        parent, err = self.run_parent(argv)
        files = sorted(f for f in os.listdir(self.dir) if f.endswith('.db'))
        leftovers = [f for f in os.listdir(self.dir) if not f.endswith('.db') and not f.startswith('pymp')]
        self.assertEqual(leftovers, [], 'a trace was left open (-wal/-shm)')
        parent_db = os.path.join(self.dir, 't-%d.db' % parent)
        self.assertIn(os.path.basename(parent_db), files, err)
        # the parent's trace: all 200 pairs, the 100 after the children included, closed at exit
        self.assertEqual(query(parent_db, 'SELECT count(*), sum(size) FROM events WHERE api = 1 AND size = ?', (BIG,)),
                         [(200, 200 * BIG)])
        self.assertEqual(query(parent_db, 'SELECT count(*) FROM events'), [(400,)])
        self.assertEqual(query(parent_db, 'SELECT pid, events_recorded, events_dropped, end_reason FROM processes'),
                         [(parent, 400, 0, 'exit')])
        self.assertIntegrity(parent_db)
        # the child that called CUDA: a file of its own with its own 10 pairs, none of the parent's
        children = [os.path.join(self.dir, f) for f in files if f != os.path.basename(parent_db)]
        self.assertEqual(len(children), 1, files)
        self.assertEqual(query(children[0], 'SELECT count(*), max(size) FROM events'), [(20, 4096)])
        (child_pid,), = query(children[0], 'SELECT pid FROM processes')
        self.assertNotEqual(child_pid, parent)
        # one summary line per traced process, naming its own file
        wrote = re.findall(r'^gputrace: wrote (\S+) ', err, re.M)
        self.assertEqual(sorted(wrote), sorted([parent_db] + children), err)

    def test_c_vfork_then_execve(self):
        self.check([prog('spawn_children'), 'vfork_exec'])

    def test_c_posix_spawn(self):
        self.check([prog('spawn_children'), 'posix_spawn'])

    def test_c_system(self):
        self.check([prog('spawn_children'), 'system'])

    def test_python_subprocess_run(self):
        self.check([sys.executable, PY_PROG, 'subprocess_run'])

    def test_python_popen_close_fds(self):
        self.check([sys.executable, PY_PROG, 'popen_close_fds'])

    def test_python_popen_keep_fds(self):
        self.check([sys.executable, PY_PROG, 'popen_keep_fds'])

    def test_python_posix_spawn(self):
        self.check([sys.executable, PY_PROG, 'posix_spawn'])

    def test_python_os_system(self):
        self.check([sys.executable, PY_PROG, 'system'])

    def test_python_multiprocessing_fork(self):
        self.check([sys.executable, PY_PROG, 'mp_fork'])

    def test_python_multiprocessing_forkserver(self):
        self.check([sys.executable, PY_PROG, 'mp_forkserver'])

    def test_python_multiprocessing_spawn(self):
        self.check([sys.executable, PY_PROG, 'mp_spawn'])


class ForkDuringExitTest(TraceTest):
    def test_an_exit_while_another_thread_forks_is_not_held(self):
        # a fork's prepare took the writer's lock while the trace was active,
        # the exit stopped it, and the fork's parent handler (asking the state
        # again) did not give the lock back: 5 of 30 exits took 30 s
        import time
        for k in range(10):
            db = os.path.join(self.dir, 'f%d.db' % k)
            t0 = time.monotonic()
            p = run([prog('fork_exit')], env=base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1),
                    cwd=self.dir, timeout=60)
            wall = time.monotonic() - t0
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertLess(wall, 10, 'run %d took %.1f s: %s' % (k, wall, p.stderr))
            self.assertEqual(query(db, 'SELECT end_reason FROM processes'), [('exit',)])
