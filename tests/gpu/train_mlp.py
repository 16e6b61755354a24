"""A small PyTorch training loop (MLP + Adam, as in the seeds) that prints its
own memory counters at the end, so a trace of it can be checked against them.
usage: train_mlp.py [--steps N] [--batch B] [--hidden H] [--nvtx] [--emit-nvtx] [--record-function] [--hard-exit]
--emit-nvtx: the loop inside torch.autograd.profiler.emit_nvtx() (a range per
operator call). --record-function: each step inside
torch.autograd.profiler.record_function('train_step').
Prints: loss per 10 steps, then `reserved=`, `max_reserved=`, `allocated=`,
`max_allocated=` and `step_ms=` (median step time) on the last lines."""
import argparse
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument('--steps', type=int, default=60)
ap.add_argument('--batch', type=int, default=256)
ap.add_argument('--hidden', type=int, default=2048)
ap.add_argument('--nvtx', action='store_true')
ap.add_argument('--emit-nvtx', action='store_true')
ap.add_argument('--record-function', action='store_true')
ap.add_argument('--hard-exit', action='store_true', help='os._exit right after printing: no teardown frees')
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device('cuda')
model = torch.nn.Sequential(
    torch.nn.Linear(1024, args.hidden), torch.nn.ReLU(),
    torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
    torch.nn.Linear(args.hidden, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = torch.nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(1)
data = [(torch.randn(args.batch, 1024, generator=g), torch.randint(0, 10, (args.batch,), generator=g))
        for _ in range(8)]
times = []
emit = torch.autograd.profiler.emit_nvtx() if args.emit_nvtx else None
if emit:
    emit.__enter__()
for step in range(args.steps):
    t0 = time.perf_counter()
    if args.nvtx:
        torch.cuda.nvtx.range_push('step %d bs=%d' % (step, args.batch))
    scope = torch.autograd.profiler.record_function('train_step') if args.record_function else None
    if scope:
        scope.__enter__()
    x, y = data[step % len(data)]
    x, y = x.to(dev), y.to(dev)
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if step % 10 == 0:   # inside the step's range: .item() pins a host buffer
        print('step %d loss %.4f' % (step, loss.item()))
    if scope:
        scope.__exit__(None, None, None)
    if args.nvtx:
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    times.append((time.perf_counter() - t0) * 1e3)
if emit:
    emit.__exit__(None, None, None)
torch.cuda.synchronize()
print('total_memory=%d' % torch.cuda.get_device_properties(0).total_memory)
print('reserved=%d' % torch.cuda.memory_reserved())
print('max_reserved=%d' % torch.cuda.max_memory_reserved())
print('allocated=%d' % torch.cuda.memory_allocated())
print('max_allocated=%d' % torch.cuda.max_memory_allocated())
print('step_ms=%.3f' % statistics.median(times[5:]))
if args.hard_exit:
    import os
    import sys
    sys.stdout.flush()
    os._exit(0)
