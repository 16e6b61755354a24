"""Pinned host tensors in PyTorch, for check_host_register.py: under the
default pinned allocator (cudaHostAlloc) or, with PYTORCH_CUDA_ALLOC_CONF=
pinned_use_cuda_host_register:True, malloc + cudaHostRegister. Keeps some,
frees others, copies through them to the GPU, then prints PyTorch's host
allocator counters and ends with os._exit (nothing freed after the print)."""
import os
import sys

import torch

keep = []
x = torch.zeros(1, device='cuda')
for i, n in enumerate((1 << 20, 3 << 20, 5 << 20, 1 << 22, 7 << 20, 1 << 20)):
    t = torch.empty(n // 4, dtype=torch.float32, pin_memory=True).fill_(i)
    x = x + t.to('cuda', non_blocking=True).sum()
    if i % 2 == 0:
        keep.append(t)
    del t
torch.cuda.synchronize()
stats = torch.cuda.host_memory_stats() if hasattr(torch.cuda, 'host_memory_stats') else {}
for k in sorted(stats):
    if isinstance(stats[k], int):
        print('host_stat %s %d' % (k, stats[k]))
print('sum %.1f' % x.item())
sys.stdout.flush()
os._exit(0)
