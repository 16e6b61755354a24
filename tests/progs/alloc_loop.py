"""Allocation/free pairs through the CUDA stand-in (ctypes) for argv[1]
seconds, in bursts of 1000 pairs with argv[2] ms of pause between them (0 by
default: the pauses let another connection take the trace's lock between the
writer's transactions); prints how many calls it made."""
import ctypes
import sys
import time

rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
gap = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0
n, end = 0, time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(1000):
        rt.cudaMalloc(ctypes.byref(p), 4096)
        rt.cudaFree(p)
    n += 2000
    if gap:
        time.sleep(gap)
print(n)
