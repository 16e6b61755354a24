"""Seed 000 ("Does decreasing batch size increase PyTorch's memory
consumption?"), example 3: one SimpleConv trained with Adam through the batch
sizes 64, 8, 32, 4, with torch.cuda.empty_cache() and gc.collect() after each.

Changed from the seed:
- Fix (minimal): the seed's fc layer is nn.Linear(64 * 5 * 5, 10), but a
  32x32 input leaves 6x6 feature maps (32 -conv3-> 30 -pool-> 15 -conv3-> 13
  -pool-> 6), so the published script crashes in forward ("mat1 and mat2
  shapes cannot be multiplied"). It is nn.Linear(64 * 6 * 6, 10) here.
- --nvtx: a torch.cuda.nvtx range "step N bs=B" around each batch, so the
  analyzer knows the iterations and their batch sizes.
- --batch-sizes (default the seed's 64 8 32 4), --hard-exit (os._exit
  right after the counters).
- For the check: torch.cuda.reset_peak_memory_stats() before each batch and,
  after it, key=value lines iterK_bs, iterK_max_reserved, iterK_max_allocated
  (PyTorch's own per-batch peaks); at the end reserved, max_reserved,
  allocated, max_allocated.
usage: seed_000.py [--nvtx] [--batch-sizes B...] [--hard-exit]"""
import argparse
import gc
import os
import sys
import time

import torch
import torch.nn as nn
import torch.optim as optim

ap = argparse.ArgumentParser()
ap.add_argument('--nvtx', action='store_true')
ap.add_argument('--batch-sizes', type=int, nargs='+', default=[64, 8, 32, 4])
ap.add_argument('--hard-exit', action='store_true')
args = ap.parse_args()


class SimpleConv(nn.Module):
    def __init__(self):
        super(SimpleConv, self).__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.fc = nn.Linear(64 * 6 * 6, 10)  # the seed's 64 * 5 * 5 crashes: the maps are 6x6

    def forward(self, x):
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = x.view(x.size(0), -1)
        x = self.fc(x)
        return x


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SimpleConv().to(device)
optimizer = optim.Adam(model.parameters(), lr=0.001)
criterion = nn.CrossEntropyLoss()
input_size = (1, 3, 32, 32)  # 1 batch for memory check
dummy_input = torch.randn(input_size).to(device)
dummy_target = torch.randint(0, 10, (1,)).to(device)

for k, batch_size in enumerate(args.batch_sizes):
    torch.cuda.synchronize()
    try:
        torch.cuda.reset_peak_memory_stats()
    except RuntimeError as e:   # the check then sees cumulative peaks, and says so
        print('reset_peak_memory_stats failed: %s' % e)
    if args.nvtx:
        torch.cuda.nvtx.range_push('step %d bs=%d' % (k, batch_size))
    print("Starting memory analysis for batch size", batch_size)
    start_time = time.time()

    optimizer.zero_grad()
    output = model(dummy_input.expand(batch_size, 3, 32, 32))
    loss = criterion(output, dummy_target.expand(batch_size))
    loss.backward()
    optimizer.step()
    print("Finished, timing:", time.time() - start_time, "seconds")
    print("Memory allocated: ", torch.cuda.memory_allocated(device=device) / 1e6, "MB")
    torch.cuda.empty_cache()  # Clear before each loop
    gc.collect()  # collect before each loop
    torch.cuda.synchronize()
    if args.nvtx:
        torch.cuda.nvtx.range_pop()
    print('iter%d_bs=%d' % (k, batch_size))
    print('iter%d_max_reserved=%d' % (k, torch.cuda.max_memory_reserved()))
    print('iter%d_max_allocated=%d' % (k, torch.cuda.max_memory_allocated()))

del dummy_input
del dummy_target
torch.cuda.synchronize()
print('reserved=%d' % torch.cuda.memory_reserved())
print('max_reserved=%d' % torch.cuda.max_memory_reserved())
print('allocated=%d' % torch.cuda.memory_allocated())
print('max_allocated=%d' % torch.cuda.max_memory_allocated())
if args.hard_exit:
    sys.stdout.flush()
    os._exit(0)
