"""Workload for check_answers.py: sweep_models.py's conv net or transformer
trained through several batch sizes in one process (as a batch-size finder
runs), --steps steps each, each step an NVTX range "step N bs=B" ending
on loss.item() (a logging loop's sync: each step lasts its GPU time, so the
tracer reads the pool's reservation within each batch size). A
torch.OutOfMemoryError ends the run (exit 1).
usage: answers_train.py --model conv|transformer --batch-sizes 2,3,4 [--steps 2]"""
import argparse
import sys

import torch

import sweep_models as M


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', choices=('conv', 'transformer'), required=True)
    ap.add_argument('--batch-sizes', required=True)
    ap.add_argument('--steps', type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = M.build(a.model).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    step = 0
    for bs in [int(b) for b in a.batch_sizes.split(',')]:
        for _ in range(a.steps):
            torch.cuda.nvtx.range_push('step %d bs=%d' % (step, bs))
            x, y = M.batch(a.model, bs)
            opt.zero_grad(set_to_none=True)
            loss = M.loss_of(a.model, model, x, y)
            loss.backward()
            opt.step()
            loss.item()
            del x, y, loss
            torch.cuda.nvtx.range_pop()
            step += 1
    torch.cuda.synchronize()
    print('steps=%d\nmax_allocated=%d\nmax_reserved=%d' % (step, torch.cuda.max_memory_allocated(),
                                                           torch.cuda.max_memory_reserved()))
    sys.stdout.flush()


if __name__ == '__main__':
    main()
