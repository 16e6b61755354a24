"""Allocations through the CUDA stand-in (ctypes) from named Python functions,
for the Python-frames tests (tests/test_pystacks.py). Each allocation is
tagged by its size, so a test can find its event and check the frames that
led to it; the test reads the expected lines from this file's source (the
lines marked "# site: NAME"), never from the tool.

usage: py_stacks.py [main|thread|generator|pool|deep|callback|keep|specialized|fork|spawn]..."""
import ctypes
import os
import sys
import threading

rt = ctypes.CDLL("libcudart.so.13")

SIZES = {'main': 1001, 'thread': 1002, 'generator': 1003, 'fork': 1004, 'pool': 1005, 'deep': 1006,
         'callback': 1007, 'keep': 1008, 'specialized': 1009}
KEPT = []


def cuda_alloc(size):
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), size)  # site: cuda_alloc
    return p


def cuda_free(p):
    rt.cudaFree(p)  # site: cuda_free


def train_step():
    p = cuda_alloc(SIZES['main'])  # site: train_step
    cuda_free(p)  # site: train_step_free


def worker():
    cuda_free(cuda_alloc(SIZES['thread']))  # site: worker


def batches():
    for _ in range(2):
        yield cuda_alloc(SIZES['generator'])  # site: batches


def consume():
    for p in batches():  # site: consume
        cuda_free(p)


def in_child():
    cuda_free(cuda_alloc(SIZES['fork']))  # site: in_child


def pooled():
    cuda_free(cuda_alloc(SIZES['pool']))  # site: pooled


def deep(n):
    if n == 0:
        return cuda_alloc(SIZES['deep'])  # site: deep_bottom
    return deep(n - 1)  # site: deep_recurse


CALLBACK = ctypes.CFUNCTYPE(None)


def from_callback():
    cuda_free(cuda_alloc(SIZES['callback']))  # site: from_callback


def via_c():
    # a C function (qsort) calling back into Python: the eval loop is entered again
    cmp = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))(
        lambda a, b: (from_callback(), 0)[1])  # site: via_c_lambda
    arr = (ctypes.c_int * 2)(1, 2)
    ctypes.CDLL(None).qsort(arr, 2, ctypes.sizeof(ctypes.c_int), cmp)  # site: via_c


def keep():
    KEPT.append(cuda_alloc(SIZES['keep']))  # site: keep


def by_key(x):
    KEPT.append(cuda_alloc(SIZES['specialized']))  # site: by_key
    return x


def specialized():
    # a builtin calling back into Python: its first calls go through the
    # interpreter's generic call path, the later ones, specialized, straight
    # to the builtin; the native frames between differ, the line does not
    for _ in range(20):
        sorted([1], key=by_key)  # site: specialized


def main(what):
    if 'main' in what:
        train_step()  # site: main_train_step
    if 'thread' in what:
        t = threading.Thread(target=worker, name='pyworker')
        t.start()
        t.join()
    if 'generator' in what:
        consume()  # site: main_consume
    if 'pool' in what:
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            ex.submit(pooled).result()
    if 'deep' in what:
        cuda_free(deep(20))  # site: main_deep
    if 'verydeep' in what:
        cuda_free(deep(300))  # site: main_verydeep
    if 'callback' in what:
        via_c()  # site: main_via_c
    if 'keep' in what:
        keep()  # site: main_keep
    if 'specialized' in what:
        specialized()  # site: main_specialized
    if 'fork' in what:
        train_step()  # site: main_before_fork
        pid = os.fork()
        if pid == 0:
            in_child()  # site: child_in_child
            os._exit(0)
        os.waitpid(pid, 0)
    if 'spawn' in what:
        import multiprocessing
        child = multiprocessing.get_context('spawn').Process(target=in_child)
        child.start()
        child.join()


if __name__ == '__main__':
    main(sys.argv[1:] or ['main'])  # site: module
