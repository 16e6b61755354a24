"""A training loop per thread, as a job driving one GPU from each thread
runs it: each thread sets its device (thread i on GPU i % count), trains a
small MLP for STEPS steps, each step inside an NVTX range "worker step".
One thread (LEAKER; -1: none) keeps a 1 MiB tensor from every step (the line marked
LEAK below). Threads run at once, or one after another with
--sequential (short workers). Ends by os._exit after printing each thread's
kept bytes, as a killed job ends (nothing freed at exit).
usage: thread_loops.py THREADS LEAKER STEPS [--sequential]"""
import os
import sys
import threading

import torch

threads, leaker, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sequential = '--sequential' in sys.argv
kept, native = {}, {}


def worker(i):
    dev = torch.device('cuda', i % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    torch.manual_seed(i)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    mine = kept.setdefault(i, [])
    native[i] = threading.get_native_id()
    for step in range(steps):
        torch.cuda.nvtx.range_push('worker step')
        x = torch.randn(256, 1024, device=dev)
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i == leaker:
            mine.append(torch.full((262144,), float(step), device=dev))   # LEAK: 1 MiB kept every step
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize(dev)


ts = [threading.Thread(target=worker, args=(i,), name='worker-%d' % i) for i in range(threads)]
for t in ts:
    t.start()
    if sequential:
        t.join()
for t in ts:
    t.join()
for i in range(threads):
    print('thread', i, 'kept_bytes', sum(x.numel() * x.element_size() for x in kept.get(i, [])), 'tid', native[i])
sys.stdout.flush()
os._exit(0)
