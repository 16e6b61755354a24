"""A torch.compile(mode='reduce-overhead') training loop: Inductor starts its
compile workers as subprocesses (vfork + exec from CPython), CUDA graphs are
captured and replayed, and after training the script runs `nvidia-smi -L`
through subprocess and makes one more allocation (`--tail-bytes`, its own
segment under the default allocator), so a trace that stopped at any child
start is told apart from a complete one.
usage: compile_train.py [--steps N] [--hard-exit]
Prints: loss every 10 steps, then reserved=, max_reserved=, allocated=,
max_allocated=, workers= (child processes this process started)."""
import argparse
import os
import subprocess

import torch

ap = argparse.ArgumentParser()
ap.add_argument('--steps', type=int, default=40)
ap.add_argument('--tail-bytes', type=int, default=100 * 2**20 + 1)
ap.add_argument('--hard-exit', action='store_true', help='os._exit right after printing: no teardown frees')
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device('cuda')
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step_fn = torch.compile(model, mode='reduce-overhead')
g = torch.Generator().manual_seed(1)
data = [torch.randn(256, 1024, generator=g) for _ in range(4)]
for step in range(args.steps):
    torch.compiler.cudagraph_mark_step_begin()
    x = data[step % len(data)].to(dev)
    loss = step_fn(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 10 == 0:
        print('step %d loss %.6f' % (step, loss.item()), flush=True)
subprocess.run(['nvidia-smi', '-L'], stdout=subprocess.DEVNULL, check=True)
tail = torch.empty(args.tail_bytes, dtype=torch.uint8, device=dev)
torch.cuda.synchronize()
workers = 0
try:  # children of this process, as the kernel lists them (compile workers)
    for tid in os.listdir('/proc/self/task'):
        with open('/proc/self/task/%s/children' % tid) as f:
            workers += len(f.read().split())
except OSError:
    workers = -1
print('reserved=%d' % torch.cuda.memory_reserved())
print('max_reserved=%d' % torch.cuda.max_memory_reserved())
print('allocated=%d' % torch.cuda.memory_allocated())
print('max_allocated=%d' % torch.cuda.max_memory_allocated())
print('workers=%d' % workers, flush=True)
if args.hard_exit:
    os._exit(0)
