"""What one NVML sample costs the writer thread (session 40: ~4 us of writer
CPU a call on an H200 was not explained; the writer samples NVML every 50 ms
for a trace's first 16 s, a memory-info and a process-list call per device).
Times N calls of each, wall and thread CPU, with and without a CUDA context
in this process (torch allocating), and prints medians in us."""
import argparse, ctypes, statistics, time

ap = argparse.ArgumentParser()
ap.add_argument('-n', type=int, default=300)
a = ap.parse_args()
nv = ctypes.CDLL('libnvidia-ml.so.1')
assert nv.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0


class Mem2(ctypes.Structure):
    _fields_ = [('version', ctypes.c_uint), ('total', ctypes.c_ulonglong), ('reserved', ctypes.c_ulonglong),
                ('free', ctypes.c_ulonglong), ('used', ctypes.c_ulonglong)]


class Proc(ctypes.Structure):   # nvmlProcessInfo_t (v2 layout)
    _fields_ = [('pid', ctypes.c_uint), ('usedGpuMemory', ctypes.c_ulonglong), ('gpuInstanceId', ctypes.c_uint),
                ('computeInstanceId', ctypes.c_uint)]


def mem():
    m = Mem2(version=(2 << 24) | ctypes.sizeof(Mem2))
    return nv.nvmlDeviceGetMemoryInfo_v2(dev, ctypes.byref(m))


procs_fn = getattr(nv, 'nvmlDeviceGetComputeRunningProcesses_v3', None) or nv.nvmlDeviceGetComputeRunningProcesses


def procs():
    n = ctypes.c_uint(64)
    arr = (Proc * 64)()
    return procs_fn(dev, ctypes.byref(n), arr)


def timed(fn):
    wall, cpu = [], []
    for _ in range(a.n):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        rc = fn()
        cpu.append((time.thread_time_ns() - c0) / 1e3)
        wall.append((time.perf_counter_ns() - w0) / 1e3)
    return rc, statistics.median(wall), statistics.median(cpu), max(wall)


for phase in ('no context', 'with a context'):
    if phase == 'with a context':
        import torch
        x = torch.empty(1 << 28, device='cuda')
        torch.cuda.synchronize()
    for name, fn in (('memory_info_v2', mem), ('running_processes', procs)):
        rc, w, c, mx = timed(fn)
        print('%-15s %-18s rc %d: wall %.1f us (max %.1f), thread CPU %.1f us (median of %d)' % (
            phase, name, rc, w, mx, c, a.n), flush=True)
