"""A native thread kept for every backward pass (as PyTorch's autograd
thread is) allocates during two passes that the main thread enters from two
different lines (3101, then 3102), with nothing but a free on the main
thread between them: the second allocation must name the second pass's
line, not the frames kept from the first. Lines are marked "# site: NAME"
for tests/test_pystacks.py. With no-call, no CUDA call at all between the
passes, a moment of Python instead (a forward pass a caching allocator serves
from its cache). usage: py_backward_again.py LIBNATIVE_WORKER [no-call]"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
lib.on_kept_thread.argtypes = [ctypes.c_size_t]
lib.malloc_here.argtypes = [ctypes.c_size_t]
lib.malloc_here.restype = ctypes.c_void_p
lib.free_here.argtypes = [ctypes.c_void_p]


def _engine_run_backward(size):
    lib.on_kept_thread(size)  # site: engine


def first_pass():
    _engine_run_backward(3101)  # site: first_pass


def second_pass():
    _engine_run_backward(3102)  # site: second_pass


def main():
    kept = lib.malloc_here(3100)
    first_pass()
    if len(sys.argv) > 2 and sys.argv[2] == 'no-call':
        time.sleep(0.002)   # a forward pass served from an allocator's cache: Python runs, no CUDA call
    else:
        lib.free_here(kept)   # the main thread's one call between the passes
    second_pass()


if __name__ == '__main__':
    main()
