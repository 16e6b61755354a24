"""One rank of a small DDP training job for check_ranks.py, started by
torchrun (RANK, LOCAL_RANK, WORLD_SIZE set). Each step is an NVTX range
'train_step'. One rank can be made to leak: it keeps --leak-mib MiB of device
memory per step. At the end each rank writes its own counters to
DIR/rank<R>.json (memory_reserved, memory_allocated, the device it used),
then ends by os._exit: the process group is not torn down, so NCCL's buffers
are still held when the counters are read and the trace ends.
usage: ddp_train.py --out DIR [--steps N] [--backend gloo|nccl] [--leak-rank R] [--leak-mib M]
gloo runs every rank on cuda:0 (two ranks share one GPU: NCCL refuses that);
nccl puts rank r on cuda:LOCAL_RANK."""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=30)
ap.add_argument('--backend', default='gloo', choices=('gloo', 'nccl'))
ap.add_argument('--leak-rank', type=int, default=-1)
ap.add_argument('--leak-mib', type=int, default=4)
a = ap.parse_args()

rank, local_rank = int(os.environ['RANK']), int(os.environ['LOCAL_RANK'])
dev = torch.device('cuda', local_rank if a.backend == 'nccl' else 0)
torch.cuda.set_device(dev)
dist.init_process_group(a.backend, device_id=dev if a.backend == 'nccl' else None)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).to(dev)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
loss_fn = torch.nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(1 + rank)
data = [(torch.randn(128, 1024, generator=g), torch.randint(0, 10, (128,), generator=g)) for _ in range(4)]
kept = []
for step in range(a.steps):
    torch.cuda.nvtx.range_push('train_step')
    x, y = data[step % len(data)]
    x, y = x.to(dev), y.to(dev)
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(ddp(x), y)
    loss.backward()
    opt.step()
    if rank == a.leak_rank:
        kept.append(torch.empty(a.leak_mib << 20, dtype=torch.uint8, device=dev))
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
dist.barrier()
torch.cuda.synchronize()
with open(os.path.join(a.out, 'rank%d.json' % rank), 'w') as f:
    json.dump({'rank': rank, 'local_rank': local_rank, 'device': dev.index, 'pid': os.getpid(),
               'reserved': torch.cuda.memory_reserved(dev), 'allocated': torch.cuda.memory_allocated(dev),
               'max_reserved': torch.cuda.max_memory_reserved(dev)}, f)
sys.stdout.flush()
os._exit(0)
