"""Shared helpers for the end-to-end tests: where the build is, running a test
program with the shim preloaded against the CUDA stand-in, and reading traces."""
import os
import sqlite3
import subprocess
import tempfile
import unittest

BUILD = os.environ.get('GPUTRACE_BUILD', os.path.abspath('build'))
SHIM = os.path.join(BUILD, 'shim', 'libgputrace.so')
GPUTRACE = os.path.join(BUILD, 'analyzer', 'gputrace')
PROGS = os.path.join(BUILD, 'tests', 'progs')
FAKE_CUDA_DIR = os.path.join(BUILD, 'tests', 'fake_cuda')
# the NVML stand-in: on LD_LIBRARY_PATH only for tests that want NVML samples
FAKE_NVML_DIR = os.path.join(BUILD, 'tests', 'fake_nvml')
WITH_NVML = FAKE_NVML_DIR + ':' + FAKE_CUDA_DIR
# The CUPTI stand-in: every traced test program gets it (base_env), not the
# toolkit's real libcupti, which finds the fake libcuda and fails (and crashes
# LeakSanitizer's tracer under the address stage). A test of the real one
# missing or unusable asks for it: GPUTRACE_CUPTI_PATH='' (search as a user's
# run does) or a path of its own.
FAKE_CUPTI = os.path.join(BUILD, 'tests', 'fake_cupti', 'libcupti.so.13')
# 'address' or 'thread' when BUILD was built with that sanitizer
# (tests/run_tests.py --sanitizer): a test that cannot run under it says so.
SANITIZER = os.environ.get('GPUTRACE_TEST_SANITIZER', '')


def prog(name):
    """Absolute path of a test program built from tests/progs/NAME.c."""
    return os.path.join(PROGS, name)


def base_env(**extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith('GPUTRACE_') or k.startswith('FAKE_CUDA_'):
            del env[k]
    env['LD_LIBRARY_PATH'] = FAKE_CUDA_DIR + (':' + env['LD_LIBRARY_PATH'] if env.get('LD_LIBRARY_PATH') else '')
    env['GPUTRACE_CUPTI_PATH'] = FAKE_CUPTI
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(argv, preload=True, env=None, cwd=None, timeout=120, check=False):
    """Run argv (optionally under LD_PRELOAD=shim); returns CompletedProcess with text output."""
    e = env if env is not None else base_env()
    if preload:
        e = dict(e)
        e['LD_PRELOAD'] = SHIM
    p = subprocess.run(argv, env=e, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError('%s exited %d\nstdout:%s\nstderr:%s' % (argv, p.returncode, p.stdout, p.stderr))
    return p


def connect(path):
    con = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
    con.row_factory = sqlite3.Row
    return con


def query(path, sql, args=()):
    con = connect(path)
    try:
        return [tuple(r) for r in con.execute(sql, args)]
    finally:
        con.close()


class TraceTest(unittest.TestCase):
    """Base class: each test gets a fresh temporary directory in self.dir."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix='gputrace-test-')
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def trace(self, argv, name='trace.db', env_extra=None, **kw):
        """Run argv under the shim writing to self.dir/name; returns (proc, db path)."""
        db = os.path.join(self.dir, name)
        env = base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1, **(env_extra or {}))
        p = run(argv, env=env, cwd=self.dir, **kw)
        return p, db

    def assertIntegrity(self, db):
        self.assertEqual(query(db, 'PRAGMA integrity_check'), [('ok',)])
