"""A traced Python parent that starts children between two bursts of CUDA
calls (through the CUDA stand-in, by ctypes), every way Python does: one child
that never calls CUDA and one that does (this script, "child": 10 pairs);
subprocess_run also starts a program that does not exist.
usage: spawn_children.py subprocess_run|popen_close_fds|popen_keep_fds|
                         posix_spawn|system|mp_fork|mp_forkserver|mp_spawn"""
import ctypes
import multiprocessing
import os
import subprocess
import sys

_rt = None


def pairs(n, size):
    global _rt
    if _rt is None:
        _rt = ctypes.CDLL('libcudart.so.13')
    p = ctypes.c_void_p()
    for _ in range(n):
        if _rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)) or _rt.cudaFree(p):
            sys.exit(3)


def mp_child():
    pairs(10, 4096)


def mp_quiet_child():
    pass


def start(mode, argv):
    """Runs argv to completion in a child started the way MODE says; its exit status."""
    if mode == 'subprocess_run':
        return subprocess.run(argv).returncode
    if mode == 'popen_close_fds':
        return subprocess.Popen(argv, close_fds=True).wait()
    if mode == 'popen_keep_fds':
        return subprocess.Popen(argv, close_fds=False).wait()
    if mode == 'posix_spawn':
        pid = os.posix_spawn(argv[0], argv, os.environ)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if mode == 'system':
        return os.waitstatus_to_exitcode(os.system(' '.join(argv)))
    raise SystemExit('unknown mode ' + mode)


def main():
    mode = sys.argv[1]
    if mode == 'child':
        mp_child()
        return 0
    pairs(100, 1 << 16)
    if mode.startswith('mp_'):
        ctx = multiprocessing.get_context(mode[3:])
        for target in (mp_quiet_child, mp_child):
            p = ctx.Process(target=target)
            p.start()
            p.join()
            if p.exitcode != 0:
                return 4
    else:
        if mode == 'subprocess_run':  # every exec fails: the vfork child ends in _exit()
            try:
                subprocess.run(['/nonexistent/gputrace-missing'])
                return 5
            except FileNotFoundError:
                pass
        if start(mode, ['/bin/true']) != 0 or start(mode, [sys.executable, os.path.abspath(__file__), 'child']) != 0:
            return 4
    pairs(100, 1 << 16)
    return 0


if __name__ == '__main__':
    sys.exit(main())
