"""A launch-bound workload for the cost benchmark (issue 14): each "step" is
--ops small elementwise kernels on a 4 KiB tensor, then a synchronize, so the
step time is the host's cost of launching kernels, where CUPTI's per-launch
work shows undiluted (the transformer step hides part of it behind the GPU).
Steps before --settle-s seconds after the first CUDA call are warm-up, so a
configuration that turns kernel records off after a window (GPUTRACE_KERNELS_*)
is measured after it. Same output as transformer_step.py: step_ms= (median of
the measured steps), steady_start_ns=, steady_end_ns=; us_per_op= beside it.
usage: launch_step.py [--steps N] [--ops K] [--settle-s S] [--pin-main CORE]
bench_cost.py --workload launch imports it like transformer_step."""
import argparse
import os
import statistics
import time

import torch


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--steps', type=int, default=200)
    ap.add_argument('--from', dest='first', type=int, default=0, help='(ignored: --settle-s is the warm-up)')
    ap.add_argument('--ops', type=int, default=200)
    ap.add_argument('--settle-s', type=float, default=2.0)
    ap.add_argument('--pin-main', type=int, default=-1)
    ap.add_argument('--barrier', default='', help='DIR:N: measure once N runs are ready in DIR (transformer_step.py)')
    args = ap.parse_args(argv)
    x = torch.ones(1024, device='cuda')
    t_cuda = time.monotonic()
    if args.pin_main >= 0:
        os.sched_setaffinity(0, {args.pin_main})

    def step():
        y = x
        for _ in range(args.ops):
            y = y * 1.0001
        torch.cuda.synchronize()
        return y

    while time.monotonic() - t_cuda < args.settle_s:
        step()
    if args.barrier:
        from transformer_step import wait_for_peers
        wait_for_peers(args.barrier, step)
    steady = [time.monotonic_ns(), 0]
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        y = step()
        times.append((time.perf_counter() - t0) * 1e3)
    steady[1] = time.monotonic_ns()
    med = statistics.median(times)
    print('check=%.6f' % y[0].item())
    print('steady_start_ns=%d' % steady[0])
    print('steady_end_ns=%d' % steady[1])
    print('step_ms=%.4f' % med)
    print('us_per_op=%.3f' % (med * 1e3 / args.ops))


if __name__ == '__main__':
    main()
