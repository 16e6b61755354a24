"""A thread that waits in a function named like PyTorch's
torch.autograd.graph._engine_run_backward while a native thread (which runs
no Python) allocates, as PyTorch's autograd thread does during backward()
(3001 bytes); the same native allocation with nobody waiting in backward
(3002); and with two threads waiting at once, when whose pass it serves
cannot be told (3003). Lines are marked "# site: NAME" for
tests/test_pystacks.py. usage: py_backward.py LIBNATIVE_WORKER"""
import ctypes
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.run_on_native_thread.argtypes = [ctypes.c_size_t]


def _engine_run_backward(size, lock=None):
    if lock is None:
        lib.run_on_native_thread(size)  # site: engine
    else:
        lock.acquire()   # waits in C, as backward() does


def backward(size):
    _engine_run_backward(size)  # site: backward


def train_step():
    backward(3001)  # site: train_step


def main():
    train_step()  # site: main_train_step
    time.sleep(0.05)
    lib.run_on_native_thread(3002)
    time.sleep(0.05)
    # two threads waiting in backward: the allocation is not attributed
    locks = [threading.Lock() for _ in range(2)]
    threads = []
    for lock in locks:
        lock.acquire()
        threads.append(threading.Thread(target=_engine_run_backward, args=(0, lock)))
        threads[-1].start()
    time.sleep(0.05)
    lib.run_on_native_thread(3003)
    for lock, t in zip(locks, threads):
        lock.release()
        t.join()


if __name__ == '__main__':
    main()  # site: module
