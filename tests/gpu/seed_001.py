"""Seed 001 ("Does PyTorch GPU memory usage increase per batch?"), examples 2
and 3 as published: ModelWithStoredTensor appends its ReLU output to
self.intermediate_tensors in every forward; `leak` never clears the list
(example 2), `fixed` clears it after each optimizer step (example 3).

Changed from the seed, for the GPU check (tests/gpu/check_seeds.py):
- --hidden (default 20, the seed's): the width of the hidden layer. The
  seed's retained tensor is 32 x 20 floats = 2560 bytes; under the default
  caching allocator it is carved out of a 2 MiB segment that already exists,
  so no cudaMalloc happens and the growth is invisible at the level the
  driver sees (reserved memory) until ~800 steps have filled a segment. The
  check uses --hidden 131072: 16 MiB retained per step, above the
  allocator's 10 MiB "own segment" size, so every step reserves one more
  segment and the default allocator shows the growth too.
- --steps (default 5, the seed's), --nvtx (a torch.cuda.nvtx range
  "step N bs=32" around each step), --hard-exit (os._exit right after the
  counters, so nothing is freed between them and the end of the trace).
Prints the seed's per-step line, then key=value counters: reserved,
max_reserved, allocated, max_allocated, retained_bytes_per_step, steps.
usage: seed_001.py leak|fixed [--steps N] [--hidden H] [--nvtx] [--hard-exit]"""
import argparse
import os
import sys

import torch
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument('variant', choices=('leak', 'fixed'))
ap.add_argument('--steps', type=int, default=5)
ap.add_argument('--hidden', type=int, default=20)
ap.add_argument('--nvtx', action='store_true')
ap.add_argument('--hard-exit', action='store_true')
args = ap.parse_args()


class ModelWithStoredTensor(nn.Module):
    def __init__(self):
        super(ModelWithStoredTensor, self).__init__()
        self.linear1 = nn.Linear(10, args.hidden)
        self.linear2 = nn.Linear(args.hidden, 1)
        self.intermediate_tensors = []

    def forward(self, x):
        x = torch.relu(self.linear1(x))
        self.intermediate_tensors.append(x)  # store intermediate tensor
        x = self.linear2(x)
        return x


torch.manual_seed(0)
model = ModelWithStoredTensor().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.MSELoss()

# Input data
input_data = torch.randn(32, 10).cuda()
target_data = torch.randn(32, 1).cuda()


def train_step_memory_leak(inputs, targets):
    optimizer.zero_grad()
    outputs = model(inputs)
    loss = criterion(outputs, targets)
    loss.backward()
    optimizer.step()
    # No clearing, accumulating memory


def train_step_clear_memory(inputs, targets):
    optimizer.zero_grad()
    outputs = model(inputs)
    loss = criterion(outputs, targets)
    loss.backward()
    optimizer.step()
    model.intermediate_tensors.clear()


step = train_step_memory_leak if args.variant == 'leak' else train_step_clear_memory
for i in range(args.steps):
    if args.nvtx:
        torch.cuda.nvtx.range_push('step %d bs=32' % i)
    step(input_data, target_data)
    if args.nvtx:
        torch.cuda.nvtx.range_pop()
    print(f"Step {i+1}: GPU memory allocated = {torch.cuda.memory_allocated()/1024**2:.2f} MB")

torch.cuda.synchronize()
print('reserved=%d' % torch.cuda.memory_reserved())
print('max_reserved=%d' % torch.cuda.max_memory_reserved())
print('allocated=%d' % torch.cuda.memory_allocated())
print('max_allocated=%d' % torch.cuda.max_memory_allocated())
print('retained_bytes_per_step=%d' % (32 * args.hidden * 4 if args.variant == 'leak' else 0))
print('steps=%d' % args.steps)
if args.hard_exit:
    sys.stdout.flush()
    os._exit(0)
