"""CUDA IPC under PyTorch for check_ranks.py: the parent puts a 64 MiB CUDA
tensor on a torch.multiprocessing queue; a spawned child (traced too: it
inherits LD_PRELOAD) receives it, which opens the parent's memory with
cudaIpcOpenMemHandle, sums it on the GPU and writes its own counters to
OUT/child.json; the parent writes the size of the segment it shared to
OUT/parent.json. usage: ipc_share.py OUT"""
import json
import os
import sys

import torch
import torch.multiprocessing as mp


def child(q, done, out):
    t = q.get()                              # opens the parent's segment through CUDA IPC
    total = float(t.sum())                   # the sum's result: this process's own memory
    torch.cuda.synchronize()
    with open(os.path.join(out, 'child.json'), 'w') as f:
        json.dump({'pid': os.getpid(), 'reserved': torch.cuda.memory_reserved(), 'sum': total,
                   'numel': t.numel()}, f)
    done.set()
    sys.stdout.flush()
    os._exit(0)                              # PyTorch keeps the IPC handle open until exit


if __name__ == '__main__':
    out = sys.argv[1]
    ctx = mp.get_context('spawn')
    x = torch.ones(16 << 20, device='cuda')  # 64 MiB
    seg = [s for s in torch.cuda.memory_snapshot() if s['address'] <= x.data_ptr() < s['address'] + s['total_size']]
    q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=child, args=(q, done, out))
    p.start()
    q.put(x)
    done.wait(120)
    p.join(120)
    with open(os.path.join(out, 'parent.json'), 'w') as f:
        json.dump({'pid': os.getpid(), 'segment_bytes': seg[0]['total_size'] if seg else None,
                   'child_exit': p.exitcode}, f)
    sys.stdout.flush()
    os._exit(0)
