"""A training job longer than the shim's first kernel window (every kernel
for the first 5 s of GPU work, then 1 s of every 20 s), under PyTorch's
default allocator, warm from its first step (no cudaMalloc per step):
an MLP, one step every --step-ms (the rest of the step waits, as a job
waiting for its data does), for --seconds. --keep-every N keeps one 24 MiB
tensor every N steps (a cache that creeps up: each one a segment of its
own); 0 keeps nothing. Prints key=value lines:
  steps=N           steps run
  reserved_first=B  memory_reserved() after the first step
  reserved_end=B    and after the last
  keep_line=L       the line that keeps the tensors
usage: long_run.py [--seconds 60] [--step-ms 100] [--keep-every 50]"""
import argparse
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument('--seconds', type=float, default=60)
ap.add_argument('--step-ms', type=float, default=100)
ap.add_argument('--keep-every', type=int, default=50)
a = ap.parse_args()
torch.manual_seed(0)
dev = torch.device('cuda')
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device=dev)
kept = []
reserved_first = None
t_end = time.monotonic() + a.seconds
step = 0
while time.monotonic() < t_end:
    t0 = time.monotonic()
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    if a.keep_every and step and step % a.keep_every == 0:
        kept.append(torch.empty(24 << 20, dtype=torch.uint8, device=dev))
    torch.cuda.synchronize()
    if reserved_first is None:
        reserved_first = torch.cuda.memory_reserved()
    step += 1
    left = a.step_ms / 1000 - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
print('steps=%d' % step)
print('reserved_first=%d' % reserved_first)
print('reserved_end=%d' % torch.cuda.memory_reserved())
print('keep_line=%d' % next(i + 1 for i, l in enumerate(open(__file__)) if 'kept.append(' in l))
