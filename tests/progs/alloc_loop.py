"""Allocation/free pairs through the CUDA stand-in (ctypes) for argv[1] seconds;
prints how many calls it made."""
import ctypes, sys, time
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
n, end = 0, time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(1000):
        rt.cudaMalloc(ctypes.byref(p), 4096); rt.cudaFree(p)
    n += 2000
print(n)
