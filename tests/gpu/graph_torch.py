"""A PyTorch CUDA graph (check_graphs.py): a small MLP's forward captured by
torch.cuda.graph after a warm-up on a side stream, replayed 5 times, the
graph kept alive to the end. Prints key=value lines:
  replays_match=1    every replay's output equals the eager one
  private_pool_bytes the segments of the graph's private pool (memory_snapshot:
                     segment_pool_id other than (0, 0))
  reserved_bytes     torch.cuda.memory_reserved()
  allocated_bytes    torch.cuda.memory_allocated()
  graph_reserved_bytes / graph_used_bytes  cuDeviceGetGraphMemAttribute
                     (ReservedMemCurrent, UsedMemCurrent) of device 0
With --compile the graphs are torch.compile(mode="reduce-overhead")'s own
(Inductor's CUDA graph trees: warm-up, record, then replays; their memory in
a private pool of the trees'): the compiled forward called 6 times, each
output within rounding of the eager one (the fused kernels' float order).
usage: graph_torch.py [--compile] (the allocator from PYTORCH_CUDA_ALLOC_CONF)"""
import ctypes
import sys

import torch

COMPILE = '--compile' in sys.argv[1:]

torch.manual_seed(0)
m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(6)]).cuda().eval()
x = torch.randn(512, 1024, device='cuda')
with torch.no_grad():
    ref = m(x).clone()
    if COMPILE:
        f = torch.compile(m, mode='reduce-overhead')
        ok = True
        for _ in range(6):
            y = f(x).clone()   # a tree's output is overwritten by the next replay: kept by a copy
            ok &= bool(torch.allclose(y, ref, rtol=1e-3, atol=1e-3))
        torch.cuda.synchronize()
    else:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)
        ok = True
        for _ in range(5):
            g.replay()
            torch.cuda.synchronize()
            ok &= bool(torch.equal(y, ref))
print('replays_match=%d' % ok)
private = 0
try:
    for seg in torch.cuda.memory_snapshot():
        if tuple(seg.get('segment_pool_id', (0, 0))) != (0, 0):
            private += seg['total_size']
except RuntimeError:
    private = -1   # (the cudaMallocAsync backend keeps no snapshot)
print('private_pool_bytes=%d' % private)
print('reserved_bytes=%d' % torch.cuda.memory_reserved())
print('allocated_bytes=%d' % torch.cuda.memory_allocated())
drv = ctypes.CDLL('libcuda.so.1')   # already loaded by torch; the driver's query, on this thread's context
for name, attr in (('graph_reserved_bytes', 2), ('graph_used_bytes', 0)):   # CU_GRAPH_MEM_ATTR_*
    v = ctypes.c_uint64(0)
    rc = drv.cuDeviceGetGraphMemAttribute(0, attr, ctypes.byref(v))
    print('%s=%d' % (name, v.value if rc == 0 else -1))
