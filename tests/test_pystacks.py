"""Python call stacks: an allocation made from Python code carries the Python
frames that led to it (function, file, line), in place of the interpreter's
native frame that ran them, from the main thread, threads, a thread pool, a
generator, a C function calling back into Python, a forked child and a C
program embedding the interpreter; reports start a call site at the
program's own line. Expected lines come from tests/progs/py_stacks.py's
"# site: NAME" comments, never from the tool's output."""
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import unittest

from gtlib import GPUTRACE, TraceTest, prog, query

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, 'progs', 'py_stacks.py')
SIZES = {'main': 1001, 'thread': 1002, 'generator': 1003, 'fork': 1004, 'pool': 1005, 'deep': 1006,
         'callback': 1007, 'keep': 1008, 'specialized': 1009}


def sites(path=SCRIPT):
    """NAME -> line of each '# site: NAME' comment in the script."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r'# site: (\w+)', line)
            if m:
                out[m.group(1)] = n
    return out


S = sites()


def frames_of(db, size, op='alloc'):
    """(kind, function, file, line) of each frame of the first OP event of SIZE, innermost first."""
    rows = query(db, "SELECT e.stack_id FROM events_v e WHERE e.size = ? AND e.op = ? ORDER BY e.id LIMIT 1",
                 (size, op))
    if not rows or rows[0][0] is None:
        return []
    return query(db, "SELECT f.kind, f.function, f.file, f.line FROM stack_frames sf JOIN frames f "
                     "ON f.id = sf.frame_id WHERE sf.stack_id = ? ORDER BY sf.level", (rows[0][0],))


def python_frames(db, size, op='alloc'):
    return [(fn, file, line) for kind, fn, file, line in frames_of(db, size, op) if kind == 'python']


def here(name, function):
    return (function, SCRIPT, S[name])


class PythonStacksTest(TraceTest):
    PYTHON = sys.executable   # the interpreter every program of this class runs under

    _versions = {}   # interpreter -> its version, asked once

    @classmethod
    def version(cls):
        if cls.PYTHON not in cls._versions:
            cls._versions[cls.PYTHON] = subprocess.run(
                [cls.PYTHON, '-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'],
                capture_output=True, text=True, check=True).stdout.strip()
        return cls._versions[cls.PYTHON]

    def run_script(self, *modes, python=None, env_extra=None, name='trace.db'):
        p, db = self.trace([python or self.PYTHON, SCRIPT] + list(modes), name=name, env_extra=env_extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, db

    def test_a_code_object_made_where_a_freed_one_was_is_not_taken_for_it(self):
        # exec() in a loop: each new function's code object and line table come at the
        # addresses of freed ones; the call lies on line 2 (4096 B) or line 3 (8192 B) of
        # "gen.py", and every allocation must name its own line
        self.assert_exec_loop_names_each_line([], 'exec.db')

    def assert_exec_loop_names_each_line(self, args, name):
        """py_exec_loop.py 3000 ARGS: some address reused by both sources, and every
        allocation names its own line."""
        p, db = self.trace([self.PYTHON, os.path.join(HERE, 'progs', 'py_exec_loop.py'), '3000'] + args, name=name)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(int(p.stdout.split('shared=')[1]), 0, 'no address was reused: nothing tested')
        rows = query(db, """SELECT e.size, f.line, count(*) FROM events e JOIN stack_frames sf ON sf.stack_id = e.stack_id
                            JOIN frames f ON f.id = sf.frame_id
                            WHERE e.api = 1 AND f.kind = 'python' AND f.file = 'gen.py' GROUP BY e.size, f.line""")
        odd = sum(bin(i).count('1') & 1 for i in range(3000))   # the program's rule for source 1
        self.assertEqual(sorted(rows), [(4096, 2, 3000 - odd), (8192, 3, odd)])

    def test_code_objects_numbered_0_after_the_counter_ran_out_are_still_told_apart(self):
        # 3.12 numbers each new code object (co_version) from one counter that stops at 0
        # when it runs out; code objects numbered 0 are told apart by their line tables, as
        # in 3.11 (keyed on addresses alone, half of these allocations named the other line)
        if not self.version().startswith('3.12'):
            self.skipTest('co_version is 3.12\'s')
        libdir = subprocess.run([self.PYTHON, '-c', 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))'],
                                capture_output=True, text=True).stdout.strip()
        lib = os.path.join(libdir, 'libpython3.12.so.1.0')
        nm = subprocess.run(['nm', lib], capture_output=True, text=True) if os.path.exists(lib) else None
        found = re.search(r'^([0-9a-f]+) [dDbB] _Py_next_func_version$', nm.stdout if nm else '', re.M)
        if not found:
            self.skipTest('no shared libpython3.12 with a symbol table here')
        self.assert_exec_loop_names_each_line(['--counter-at', '0x' + found.group(1)], 'exec0.db')

    def test_a_free_has_no_stack_unless_asked_and_then_its_python_and_native_frames(self):
        _, db = self.run_script('main')
        self.assertEqual(query(db, "SELECT count(*), count(stack_id) FROM events_v WHERE op = 'free' AND size = ?",
                               (SIZES['main'],)), [(1, 0)])
        self.assertIn('python', {f[0] for f in frames_of(db, SIZES['main'])})   # the allocation's are there
        _, db = self.run_script('main', env_extra={'GPUTRACE_FREE_STACKS': '1'}, name='free-stacks.db')
        free = frames_of(db, SIZES['main'], op='free')
        self.assertEqual({f[0] for f in free}, {'python', 'native'})
        self.assertEqual(python_frames(db, SIZES['main'], op='free'),
                         [here('cuda_free', 'cuda_free'), here('train_step_free', 'train_step'),
                          here('main_train_step', 'main'), here('module', '<module>')])

    def test_main_thread_frames_name_each_function_and_line(self):
        _, db = self.run_script('main')
        self.assertEqual(python_frames(db, SIZES['main']),
                         [here('cuda_alloc', 'cuda_alloc'), here('train_step', 'train_step'),
                          here('main_train_step', 'main'), here('module', '<module>')])
        self.assertEqual(query(db, "SELECT message FROM notes WHERE component = 'python'"),
                         [('on: Python %s frames are recorded' % self.version(),)])
        self.assertIntegrity(db)

    def test_thread_frames_start_at_the_threads_function(self):
        _, db = self.run_script('thread')
        frames = python_frames(db, SIZES['thread'])
        self.assertEqual(frames[:2], [here('cuda_alloc', 'cuda_alloc'), here('worker', 'worker')])
        # below them, the threading module's bootstrap, and nothing of the main thread
        self.assertEqual(frames[2][0], 'Thread.run')
        self.assertEqual(os.path.basename(frames[2][1]), 'threading.py')
        self.assertNotIn('main', [f[0] for f in frames])

    def test_thread_pool_worker_frames(self):
        _, db = self.run_script('pool')
        frames = python_frames(db, SIZES['pool'])
        self.assertEqual(frames[:2], [here('cuda_alloc', 'cuda_alloc'), here('pooled', 'pooled')])
        self.assertEqual(frames[2][0], '_WorkItem.run')
        self.assertTrue(frames[2][1].endswith(os.path.join('concurrent', 'futures', 'thread.py')), frames[2])

    def test_generator_frames_include_the_generator_and_its_consumer(self):
        _, db = self.run_script('generator')
        self.assertEqual(python_frames(db, SIZES['generator']),
                         [here('cuda_alloc', 'cuda_alloc'), here('batches', 'batches'), here('consume', 'consume'),
                          here('main_consume', 'main'), here('module', '<module>')])
        # both allocations of the loop carry the same Python frames, each frame one row; on 3.11
        # one stack. 3.12 runs the generator inline from the second iteration on (its specialised
        # FOR_ITER_GEN; the first goes through gen_iternext), so the native frames differ there
        stacks = [s for (s,) in query(db, "SELECT stack_id FROM events_v WHERE size = ? AND op = 'alloc' ORDER BY id",
                                      (SIZES['generator'],))]
        self.assertEqual(len(stacks), 2)
        python_of = [query(db, "SELECT f.function, f.line FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id "
                               "WHERE sf.stack_id = ? AND f.kind = 'python' ORDER BY sf.level", (s,)) for s in stacks]
        self.assertEqual(python_of[0], python_of[1])
        if self.version().startswith('3.11.'):
            self.assertEqual(len(set(stacks)), 1)
        self.assertEqual(query(db, "SELECT count(*) FROM (SELECT function, file, line FROM frames WHERE "
                                   "kind = 'python' GROUP BY 1, 2, 3 HAVING count(*) > 1)"), [(0,)])

    def test_a_line_reached_through_the_interpreters_generic_and_specialized_calls_is_one_site(self):
        # sorted(key=f) 20 times: the first calls go through CPython's generic call machinery, the
        # later ones, specialized, straight to the builtin; the stacks differ in libpython's frames
        # alone, and one leaking line was two sites (13 and 7 allocations; a helper's probe)
        _, db = self.run_script('specialized')
        stacks = query(db, "SELECT count(DISTINCT stack_id) FROM events_v WHERE size = ? AND op = 'alloc'",
                       (SIZES['specialized'],))[0][0]
        self.assertGreater(stacks, 1, 'the interpreter took one path every time: nothing tested')
        d = json.loads(subprocess.run([GPUTRACE, 'leaks', '--json', db], capture_output=True, text=True).stdout)
        sites = [s for s in d['sites'] if 'in by_key' in s['call_site']]
        self.assertEqual([(s['count'], s['bytes']) for s in sites], [(20, 20 * SIZES['specialized'])], d['sites'])
        self.assertIn('py_stacks.py:%d in by_key <- py_stacks.py:%d in specialized' % (S['by_key'], S['specialized']),
                      sites[0]['call_site'])
        self.assertNotIn('via', sites[0]['call_site'])

    def test_file_names_long_or_not_utf8_stay_apart_and_readable(self):
        # a file name's bytes that are not UTF-8 were written as invalid UTF-8 (Python's sqlite3
        # could not read the trace); two paths past 1,023 bytes that differ in their file names
        # alone were cut to one file (a helper's probe)
        deep = os.path.join(self.dir.encode(), b'd' * 200, b'e' * 200, b'f' * 200, b'g' * 200, b'h' * 200)
        os.makedirs(deep)
        paths = [os.path.join(deep, b'model_a.py'), os.path.join(deep, b'model_b.py'),
                 os.path.join(self.dir.encode(), b'caf\xe9.py'), os.path.join(self.dir.encode(), b'tab\tnew\nline.py')]
        for i, path in enumerate(paths):
            with open(path, 'w') as f:
                f.write('import ctypes\nrt = ctypes.CDLL("libcudart.so.13")\n'
                        'def alloc():\n    p = ctypes.c_void_p()\n    rt.cudaMalloc(ctypes.byref(p), %d)\n'
                        '    return p\n' % (3001 + i))
        main = os.path.join(self.dir, 'names.py')
        with open(main, 'w') as f:
            f.write('import importlib.util, sys\nkept = []\n'
                    'for i, p in enumerate(sys.argv[1:]):\n'
                    '    spec = importlib.util.spec_from_file_location("m%d" % i, p)\n'
                    '    m = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(m)\n'
                    '    kept.append(m.alloc())\n')
        p, db = self.trace([self.PYTHON.encode(), main.encode()] + paths)
        self.assertEqual(p.returncode, 0, p.stderr)
        files = {size: file for size, file in sqlite3.connect(db).execute(   # (raised on invalid UTF-8)
            "SELECT e.size, t.file FROM events_v e JOIN stack_text t ON t.stack_id = e.stack_id "
            "WHERE t.function = 'alloc' AND e.op = 'alloc'")}
        self.assertTrue(files[3001].startswith('...') and files[3001].endswith('/model_a.py'), files[3001])
        self.assertTrue(files[3002].startswith('...') and files[3002].endswith('/model_b.py'), files[3002])
        self.assertLessEqual(max(len(files[3001].encode()), len(files[3002].encode())), 1023)
        self.assertEqual(files[3003], os.path.join(self.dir, 'caf\\xe9.py'))
        leaks = json.loads(subprocess.run([GPUTRACE, 'leaks', '--json', db], capture_output=True, text=True).stdout)
        self.assertEqual(sorted(s['bytes'] for s in leaks['sites']), [3001, 3002, 3003, 3004])
        # a name with a newline stays on its row of the table
        text = subprocess.run([GPUTRACE, 'leaks', db], capture_output=True, text=True).stdout
        self.assertIn('tab\\tnew\\nline.py:5 in alloc', text)
        self.assertEqual(len([l for l in text.splitlines() if 'in alloc' in l]), 4, text)

    def test_a_dataclass_default_factory_is_named_by_the_programs_line(self):
        # the factory runs in dataclasses' generated __init__ ("<string>" in __create_fn__): the site
        # started there, before the line that made the object (a helper's probe)
        script = os.path.join(self.dir, 'dc.py')
        with open(script, 'w') as f:
            f.write(textwrap.dedent('''\
                import ctypes, functools
                from dataclasses import dataclass, field
                rt = ctypes.CDLL("libcudart.so.13")
                kept = []
                def factory():
                    p = ctypes.c_void_p()
                    kept.append(p)
                    return functools.partial(rt.cudaMalloc, ctypes.byref(p), 4096)
                @dataclass
                class State:
                    buf: int = field(default_factory=factory())
                states = [State() for _ in range(3)]  # site: made
                '''))
        p, db = self.trace([self.PYTHON, script])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(('__create_fn__', '<string>'), [(fn.split('.')[0], file) for fn, file, _ in python_frames(db, 4096)])
        d = json.loads(subprocess.run([GPUTRACE, 'leaks', '--json', db], capture_output=True, text=True).stdout)
        self.assertTrue(d['sites'][0]['call_site'].startswith('dc.py:%d in ' % sites(script)['made']), d['sites'])

    def test_twenty_deep_recursion_keeps_every_frame(self):
        _, db = self.run_script('deep')
        self.assertEqual(python_frames(db, SIZES['deep']),
                         [here('cuda_alloc', 'cuda_alloc'), here('deep_bottom', 'deep')] +
                         [here('deep_recurse', 'deep')] * 20 + [here('main_deep', 'main'), here('module', '<module>')])

    def test_a_stack_deeper_than_kept_ends_with_a_marker(self):
        # 300 deep: the innermost 127 frames and a marker that says the outer
        # ones are not recorded (it read as a complete stack, and stacks that
        # differed only further out were one call site)
        _, db = self.run_script('verydeep')
        frames = python_frames(db, SIZES['deep'])
        self.assertEqual(len(frames), 128)
        self.assertEqual(frames[:3], [here('cuda_alloc', 'cuda_alloc'), here('deep_bottom', 'deep'),
                                      here('deep_recurse', 'deep')])
        self.assertEqual(frames[-1], ('<more Python frames>', None, None))

    def test_c_function_calling_back_into_python_keeps_both_sides(self):
        _, db = self.run_script('callback')
        self.assertEqual(python_frames(db, SIZES['callback']),
                         [here('cuda_alloc', 'cuda_alloc'), here('from_callback', 'from_callback'),
                          here('via_c_lambda', 'via_c.<locals>.<lambda>'), here('via_c', 'via_c'),
                          here('main_via_c', 'main'), here('module', '<module>')])
        # qsort (native) lies between the callback's frames and via_c's
        kinds = [k for k, *_ in frames_of(db, SIZES['callback'])]
        first_py = kinds.index('python')
        segments = re.findall(r'p+', ''.join('p' if k == 'python' else 'n' for k in kinds[first_py:]))
        self.assertGreaterEqual(len(segments), 2, kinds)

    def test_python_frames_stand_where_the_eval_loop_ran_them(self):
        _, db = self.run_script('main')
        frames = frames_of(db, SIZES['main'])
        kinds = ''.join('p' if k == 'python' else 'n' for k, *_ in frames)
        self.assertRegex(kinds, r'^n+p+n+$')   # ctypes/libffi inside, the interpreter's start-up outside
        natives = [fn for kind, fn, *_ in frames if kind == 'native']
        self.assertNotIn('_PyEval_EvalFrameDefault', natives)
        self.assertIn('ffi_call', natives[:kinds.index('p')])
        self.assertIn('PyEval_EvalCode', natives[kinds.index('p'):])

    def test_native_stack_cut_by_the_depth_limit_still_gets_python_frames(self):
        _, db = self.run_script('main', env_extra={'GPUTRACE_STACK_DEPTH': 3})
        frames = frames_of(db, SIZES['main'])
        self.assertEqual([k for k, *_ in frames], ['native'] * 3 + ['python'] * 4)
        self.assertEqual(python_frames(db, SIZES['main']),
                         [here('cuda_alloc', 'cuda_alloc'), here('train_step', 'train_step'),
                          here('main_train_step', 'main'), here('module', '<module>')])

    def test_a_python_thread_unwinds_fewer_native_frames_and_its_python_frames_follow(self):
        # GPUTRACE_STACK_DEPTH_PYTHON: native frames on a thread whose Python frames are recorded
        _, db = self.run_script('main', env_extra={'GPUTRACE_STACK_DEPTH_PYTHON': 3})
        frames = frames_of(db, SIZES['main'])
        self.assertEqual([k for k, *_ in frames], ['native'] * 3 + ['python'] * 4)
        self.assertEqual(python_frames(db, SIZES['main'])[0], here('cuda_alloc', 'cuda_alloc'))
        _, db = self.run_script('main', env_extra={'GPUTRACE_STACK_DEPTH_PYTHON': 0}, name='python-only.db')
        self.assertEqual([k for k, *_ in frames_of(db, SIZES['main'])], ['python'] * 4)

    def test_forked_child_records_its_own_python_frames(self):
        p, _ = self.run_script('fork', name='t-%p.db')
        dbs = [os.path.join(self.dir, f) for f in os.listdir(self.dir) if f.endswith('.db')]
        child = [d for d in dbs if query(d, "SELECT count(*) FROM events WHERE size = ?", (SIZES['fork'],))[0][0]]
        self.assertEqual(len(dbs), 2, p.stderr)
        self.assertEqual(len(child), 1)
        self.assertEqual(python_frames(child[0], SIZES['fork']),
                         [here('cuda_alloc', 'cuda_alloc'), here('in_child', 'in_child'),
                          here('child_in_child', 'main'), here('module', '<module>')])
        self.assertIntegrity(child[0])
        self.assertEqual(query(child[0], "SELECT message FROM notes WHERE component = 'python'"),
                         [('on: Python %s frames are recorded' % self.version(),)])

    def test_multiprocessing_spawn_child_records_its_python_frames(self):
        p, _ = self.run_script('spawn', name='t-%p.db')
        dbs = [os.path.join(self.dir, f) for f in os.listdir(self.dir) if f.endswith('.db')]
        self.assertEqual(len(dbs), 1, p.stderr)   # the parent made no CUDA call
        frames = python_frames(dbs[0], SIZES['fork'])
        self.assertEqual(frames[:2], [here('cuda_alloc', 'cuda_alloc'), here('in_child', 'in_child')])
        self.assertEqual(frames[2][0], 'BaseProcess.run')

    def test_daemon_threads_allocating_through_interpreter_shutdown(self):
        script = os.path.join(self.dir, 'daemons.py')
        with open(script, 'w') as f:
            f.write(textwrap.dedent('''\
                import ctypes, threading, time
                rt = ctypes.CDLL("libcudart.so.13")
                started = threading.Semaphore(0)
                def spin():
                    p = ctypes.c_void_p()
                    rt.cudaMalloc(ctypes.byref(p), 64)
                    started.release()
                    while True:
                        rt.cudaFree(p)
                        rt.cudaMalloc(ctypes.byref(p), 64)
                for _ in range(4):
                    threading.Thread(target=spin, daemon=True).start()
                for _ in range(4):   # every thread allocating (a loaded machine may not run them in 50 ms)
                    started.acquire(timeout=30)
                time.sleep(0.05)
                print("main done")
                '''))
        for i in range(5):
            p, db = self.trace([self.PYTHON, script], name='d%d.db' % i)
            self.assertEqual((p.returncode, p.stdout), (0, 'main done\n'), p.stderr)
            self.assertIntegrity(db)
            self.assertGreater(query(db, "SELECT count(*) FROM frames WHERE kind = 'python' AND function = 'spin'")
                               [0][0], 0)

    def test_native_thread_allocating_while_one_thread_waits_in_backward_gets_its_frames(self):
        script = os.path.join(HERE, 'progs', 'py_backward.py')
        lines = sites(script)
        p, db = self.trace([self.PYTHON, script, prog('libnative_worker.so')])
        self.assertEqual(p.returncode, 0, p.stderr)
        frames = frames_of(db, 3001)
        kinds = ''.join('p' if k == 'python' else 'n' for k, *_ in frames)
        self.assertRegex(kinds, r'^n+p+$')   # the native thread's own frames, then the waiting thread's
        self.assertEqual(python_frames(db, 3001),
                         [('<backward>', None, None), ('_engine_run_backward', script, lines['engine']),
                          ('backward', script, lines['backward']), ('train_step', script, lines['train_step']),
                          ('main', script, lines['main_train_step']), ('<module>', script, lines['module'])])
        self.assertEqual(python_frames(db, 3002), [])   # nobody waits in backward
        self.assertEqual(python_frames(db, 3003), [])   # two threads wait: whose pass it is cannot be told
        want = 'backward: py_backward.py:%d in _engine_run_backward <- py_backward.py:%d in backward' % (
            lines['engine'], lines['backward'])
        out = subprocess.run([GPUTRACE, 'top', db], capture_output=True, text=True)
        self.assertIn(want, out.stdout)
        chrome = os.path.join(self.dir, 'x.json')
        subprocess.run([GPUTRACE, 'export', db, '-o', chrome], capture_output=True, check=True)
        with open(chrome) as f:
            events = json.load(f)['traceEvents']
        self.assertIn('backward: _engine_run_backward (%s:%d)' % (script, lines['engine']),
                      [e.get('args', {}).get('python_frame') for e in events])

    def test_a_kept_native_thread_names_the_second_backward_pass_after_only_a_free_between(self):
        # the autograd thread keeps the waiting thread's frames from the first
        # pass; the main thread's free between the passes (its only call) must
        # tell it they may have changed, though a free records no frames
        script = os.path.join(HERE, 'progs', 'py_backward_again.py')
        lines = sites(script)
        p, db = self.trace([self.PYTHON, script, prog('libnative_worker.so')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(python_frames(db, 3101)[:3],
                         [('<backward>', None, None), ('_engine_run_backward', script, lines['engine']),
                          ('first_pass', script, lines['first_pass'])])
        self.assertEqual(python_frames(db, 3102)[:3],
                         [('<backward>', None, None), ('_engine_run_backward', script, lines['engine']),
                          ('second_pass', script, lines['second_pass'])])
        self.assertEqual(query(db, "SELECT count(*), count(stack_id) FROM events_v WHERE op = 'free' AND size = 3100"),
                         [(1, 0)])

    def test_a_kept_native_thread_names_the_second_pass_with_no_cuda_call_between(self):
        # a GAN's discriminator then generator passes under a caching
        # allocator: Python ran between them, no CUDA call did
        script = os.path.join(HERE, 'progs', 'py_backward_again.py')
        lines = sites(script)
        p, db = self.trace([self.PYTHON, script, prog('libnative_worker.so'), 'no-call'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(python_frames(db, 3102)[:3],
                         [('<backward>', None, None), ('_engine_run_backward', script, lines['engine']),
                          ('second_pass', script, lines['second_pass'])])

    def test_gputrace_python_0_records_no_python_frames_and_says_so(self):
        _, db = self.run_script('main', env_extra={'GPUTRACE_PYTHON': 0})
        self.assertEqual(query(db, "SELECT count(*) FROM frames WHERE kind = 'python'"), [(0,)])
        self.assertNotEqual(frames_of(db, SIZES['main']), [])   # native stacks as before
        self.assertEqual(query(db, "SELECT message FROM notes WHERE component = 'python'"),
                         [('off: GPUTRACE_PYTHON=0',)])

    def test_program_without_python_has_no_python_frames_or_note(self):
        p, db = self.trace([prog('call_chain')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(query(db, "SELECT count(*) FROM frames WHERE kind = 'native'")[0][0], 0)
        self.assertEqual(query(db, "SELECT count(*) FROM frames WHERE kind = 'python'"), [(0,)])
        self.assertEqual(query(db, "SELECT count(*) FROM notes WHERE component = 'python'"), [(0,)])

    def test_python_version_without_a_known_layout_turns_python_frames_off_with_one_note(self):
        for hexversion, says in (('0x030E00F0', '3.14.0'), ('0x030D00F0', '3.13.0'), ('0x030C00A1', '3.12.0')):
            p, db = self.trace([prog('unknown_python'), hexversion], name='u%s.db' % hexversion)
            self.assertEqual(p.returncode, 0, p.stderr)
            notes = query(db, "SELECT message FROM notes WHERE component = 'python'")
            self.assertEqual(len(notes), 1, notes)
            self.assertTrue(notes[0][0].startswith('off: Python %s ' % says), notes)
            self.assertEqual(query(db, "SELECT count(*) FROM frames WHERE kind = 'python'"), [(0,)])
            self.assertNotEqual(frames_of(db, 5001), [])

    def test_embedded_interpreter_frames_and_calls_outside_it(self):
        embed = prog('embed_python')
        if not os.path.exists(embed):
            self.skipTest('python3-embed not found at build time')
        p, db = self.trace([embed, SCRIPT, 'main', 'thread'])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(python_frames(db, 2001), [])   # before Py_Initialize
        self.assertEqual(python_frames(db, 2002), [])   # after Py_FinalizeEx
        self.assertNotEqual(frames_of(db, 2002), [])
        self.assertEqual(python_frames(db, SIZES['main']),
                         [here('cuda_alloc', 'cuda_alloc'), here('train_step', 'train_step'),
                          here('main_train_step', 'main'), here('module', '<module>')])
        self.assertEqual(python_frames(db, SIZES['thread'])[:2],
                         [here('cuda_alloc', 'cuda_alloc'), here('worker', 'worker')])

    def test_python_linked_statically_into_its_executable(self):
        exe = '/usr/bin/python3.11'
        if not os.path.exists(exe) or b'libpython' in subprocess.run(['ldd', exe], capture_output=True).stdout:
            self.skipTest('no python3.11 executable with libpython linked in')
        _, db = self.run_script('main', 'generator', python=exe)
        self.assertEqual(python_frames(db, SIZES['generator']),
                         [here('cuda_alloc', 'cuda_alloc'), here('batches', 'batches'), here('consume', 'consume'),
                          here('main_consume', 'main'), here('module', '<module>')])


def other_python(version):
    """A CPython VERSION ('3.12') other than the one running the tests: on the
    PATH or under pyenv; None where there is none (the class then skips)."""
    if '%d.%d' % sys.version_info[:2] == version:
        return None
    candidates = sorted(glob.glob(os.path.expanduser('~/.pyenv/versions/%s.*/bin/python%s' % (version, version))))
    candidates += [c for c in [shutil.which('python' + version)] if c]   # a pyenv shim may not run it: tried last
    for exe in candidates:
        try:
            out = subprocess.run([exe, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                                 capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return exe
    return None


class PythonStacks312Test(PythonStacksTest):
    """The same programs under CPython 3.12 (the GPU machine's Python: another
    frame layout, co_version in the frame identity), where one is installed."""
    PYTHON = other_python('3.12')

    @classmethod
    def setUpClass(cls):
        if not cls.PYTHON:
            raise unittest.SkipTest('no CPython 3.12 here (on the PATH or under pyenv)')
        super().setUpClass()

    def test_embedded_interpreter_frames_and_calls_outside_it(self):
        self.skipTest("embed_python links the build's own libpython")

    def test_python_linked_statically_into_its_executable(self):
        self.skipTest('the statically linked case is /usr/bin/python3.11')


class PythonUnknownLayoutTest(TraceTest):
    """A real CPython whose frame layout the shim does not know (3.13): Python
    frames off with one note; the program runs as without the shim."""
    PYTHON = other_python('3.13')

    def test_a_real_python_3_13_turns_python_frames_off_with_one_note(self):
        if not self.PYTHON:
            self.skipTest('no CPython 3.13 here (on the PATH or under pyenv)')
        p, db = self.trace([self.PYTHON, SCRIPT, 'main'])
        self.assertEqual(p.returncode, 0, p.stderr)
        notes = query(db, "SELECT message FROM notes WHERE component = 'python'")
        self.assertEqual(len(notes), 1, notes)
        self.assertTrue(notes[0][0].startswith('off: Python 3.13.'), notes)
        self.assertEqual(query(db, "SELECT count(*) FROM frames WHERE kind = 'python'"), [(0,)])
        self.assertNotEqual(frames_of(db, SIZES['main']), [])   # native stacks as before


class PythonReportsTest(TraceTest):
    """The analyzer names the program's own line, not a library's."""

    def test_only_the_interpreters_own_frames_are_passed_over_in_telling_sites_apart(self):
        # stacks that differ in libpython's frames alone are one site; an extension's frames still
        # tell sites apart, even where the extension calls back into Python (a review: "python" in
        # its name took myops.cpython-312-...so for the interpreter, and two operators' sites were one)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import analyzer_traces as T
        ext, libpy = '/venv/site-packages/myops.cpython-312-x86_64-linux-gnu.so', '/usr/lib/libpython3.12.so.1.0'
        path = os.path.join(self.dir, 'ext.db')
        t = T.Trace(path)
        tail = ['py:train.py:10:step', 'PyEval_EvalCode', 'py:train.py:20:<module>']
        for i in range(4):
            t.alloc(1 << 20, ['wrap', 'myops::alloc_output', 'PyObject_Call'] + tail)
            t.alloc(1 << 20, ['wrap', 'myops::alloc_output', 'PyObject_Vectorcall', 'cfunction_call'] + tail)
            t.alloc(2 << 20, ['wrap', 'myops::alloc_workspace', 'PyObject_Call'] + tail)
        t.alloc(4096, ['wrap', 'PyObject_Call', 'py:train.py:30:hook', 'myops::run_hooks', 'PyObject_Call'] + tail)
        t.close()
        con = sqlite3.connect(path)
        for fid, fn in con.execute('SELECT id, function FROM frames').fetchall():
            if fn.startswith('py:'):
                _, f, line, name = fn.split(':')
                con.execute("UPDATE frames SET kind = 'python', module = NULL, ip = 0, file = ?, line = ?, function = ?"
                            " WHERE id = ?", (f, int(line), name, fid))
            else:
                con.execute('UPDATE frames SET module = ? WHERE id = ?',
                            (ext if fn.startswith('myops') or fn == 'wrap' else libpy, fid))
        con.commit()
        con.close()
        d = json.loads(subprocess.run([GPUTRACE, 'leaks', '--json', path], capture_output=True, text=True).stdout)
        got = sorted((s['bytes'], s['count']) for s in d['sites'])
        self.assertEqual(got, [(4096, 1), (8 << 20, 4), (8 << 20, 8)], d['sites'])

    def make_program(self):
        lib = os.path.join(self.dir, 'venv', 'lib', 'python3.11', 'site-packages')
        os.makedirs(lib)
        with open(os.path.join(lib, 'fakelib.py'), 'w') as f:
            f.write(textwrap.dedent('''\
                import ctypes
                rt = ctypes.CDLL("libcudart.so.13")
                def alloc(size):
                    p = ctypes.c_void_p()
                    rt.cudaMalloc(ctypes.byref(p), size)
                    return p
                '''))
        script = os.path.join(self.dir, 'step.py')
        with open(script, 'w') as f:
            f.write(textwrap.dedent('''\
                import sys
                sys.path.insert(0, %r)
                import fakelib
                kept = []
                def step():
                    kept.append(fakelib.alloc(4096))  # site: step
                for _ in range(3):
                    step()  # site: loop
                ''' % lib))
        return script, sites(script)

    def test_call_site_starts_at_the_programs_own_line_and_native_shows_the_rest(self):
        script, lines = self.make_program()
        p, db = self.trace([sys.executable, script])
        self.assertEqual(p.returncode, 0, p.stderr)
        for report in ('top', 'leaks'):
            out = subprocess.run([GPUTRACE, report, db], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            site = [l for l in out.stdout.splitlines() if 'step.py' in l]
            self.assertTrue(site, out.stdout)
            self.assertIn('step.py:%d in step <- step.py:%d in <module>' % (lines['step'], lines['loop']), site[0])
            self.assertNotIn('fakelib', out.stdout)
            self.assertNotIn('ffi_call', out.stdout)
        html = os.path.join(self.dir, 'r.html')
        subprocess.run([GPUTRACE, 'report', db, '-o', html], capture_output=True, check=True)
        with open(html) as f:   # the page's data block: the leaks table's call site
            page = f.read()
        data = json.loads(page.split('id="gt-data">', 1)[1].split('</script>', 1)[0])
        self.assertEqual(data['traces'][0]['leaks']['sites'][0]['call_site'],
                         'step.py:%d in step <- step.py:%d in <module>' % (lines['step'], lines['loop']))
        out = subprocess.run([GPUTRACE, 'top', '--native', '--frames', '100', db], capture_output=True, text=True)
        self.assertIn('fakelib.py:5 in alloc', out.stdout)
        self.assertIn('ffi_call', out.stdout)
        # with the default 4 frames, ctypes' own took them all: the program's line stays in sight
        out = subprocess.run([GPUTRACE, 'top', '--native', db], capture_output=True, text=True)
        site = [l for l in out.stdout.splitlines() if 'ffi_call' in l]
        self.assertTrue(site, out.stdout)
        self.assertIn('step.py:%d in step' % lines['step'], site[0])

    def test_json_frames_kinds_and_python_count(self):
        script, lines = self.make_program()
        p, db = self.trace([sys.executable, script])
        out = subprocess.run([GPUTRACE, 'top', '--json', db], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        site = json.loads(out.stdout)['by_bytes'][0]
        frames, kinds = site['frames'], site['frame_kinds']
        self.assertEqual(len(frames), len(kinds))
        python = [f for f, k in zip(frames, kinds) if k == 'python']
        self.assertEqual(site['python_frames'], len(python))
        lib = os.path.join(self.dir, 'venv', 'lib', 'python3.11', 'site-packages', 'fakelib.py')
        self.assertEqual(python, ['alloc (%s:5)' % lib, 'step (%s:%d)' % (script, lines['step']),
                                  '<module> (%s:%d)' % (script, lines['loop'])])
        self.assertIn('step.py:%d in step' % lines['step'], site['call_site'])

    def test_sites_alike_in_python_keep_their_start_and_say_which_native_path(self):
        script = os.path.join(self.dir, 'paths.py')
        with open(script, 'w') as f:
            f.write(textwrap.dedent('''\
                import ctypes, sys
                lib = ctypes.CDLL(sys.argv[1])
                def step():
                    for fn in (lib.alloc_here_a, lib.alloc_here_b):
                        fn(4000)  # site: two_paths
                step()
                '''))
        line = sites(script)['two_paths']
        p, db = self.trace([sys.executable, script, prog('libnative_worker.so')])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = subprocess.run([GPUTRACE, 'top', db], capture_output=True, text=True).stdout
        rows = [l for l in out.splitlines() if 'paths.py' in l][:2]
        self.assertEqual(len(rows), 2, out)
        for r, fn in zip(sorted(rows, key=lambda r: 'alloc_here_b' in r), ('alloc_here_a', 'alloc_here_b')):
            self.assertIn('  paths.py:%d in step <- ' % line, r)
            self.assertRegex(r, r'\(via %s \(libnative_worker\.so\)' % fn)

    def test_trace_of_schema_1_still_opens(self):
        script, _ = self.make_program()
        p, db = self.trace([sys.executable, script])
        old = os.path.join(self.dir, 'old.db')
        shutil.copy(db, old)
        con = __import__('sqlite3').connect(old)
        con.executescript("DROP VIEW stack_text; ALTER TABLE frames DROP COLUMN kind; PRAGMA user_version = 1;")
        con.close()
        out = subprocess.run([GPUTRACE, 'top', '--json', old], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        site = json.loads(out.stdout)['by_bytes'][0]
        self.assertEqual(site['python_frames'], 0)
        self.assertEqual(set(site['frame_kinds']), {'native'})
