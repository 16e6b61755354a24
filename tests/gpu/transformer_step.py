"""The cost benchmark's workload (issue 14): a transformer training step as
measured there (d_model 768, 6 layers, batch 16, sequence 256, bf16 autocast,
AdamW). Prints step_ms=, the median of steps --from to --steps (each step
synchronised), and the memory counters.
usage: transformer_step.py [--steps N] [--from K] [--history [all|python]] [--pin-main CORE] [--probe]
                          [--barrier DIR:N]
--history: torch.cuda.memory._record_memory_history(stacks='all', or 'python') first
(PyTorch's own recorder; it refuses the cudaMallocAsync backend).
bench_cost.py imports it and calls main() in fresh forked children of a
process that imported torch once (CUDA is first touched in the child).
--probe: after each step (outside its time) a fixed loop of pure Python, no
CUDA, on the step's thread; prints probe_ms=, its median over the steps
measured: the host's speed in that run, which a tracer does not touch (the
step time spread 14-24 ms between fresh untraced runs on the GPU machine).
--barrier DIR:N: after the warm-up, keep stepping (unmeasured) until N runs
have written their ready file into DIR, then measure: runs of several
configurations on several GPUs of one host measure the same seconds, so the
host's drifting speed is the same on both sides of their ratio."""
import argparse
import statistics
import time

import torch


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--steps', type=int, default=80)
    ap.add_argument('--from', dest='first', type=int, default=10)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--history', nargs='?', const='all', choices=('all', 'python'))
    ap.add_argument('--settle-s', type=float, default=0,
                    help='steps before this many seconds after the model is on the GPU are warm-up too (a '
                         'long job\'s steady state: past the shim\'s first period of full CUPTI records)')
    ap.add_argument('--pin-main', type=int, default=-1,
                    help='once CUDA is up, the main thread alone on this core (threads started before keep theirs)')
    ap.add_argument('--probe', action='store_true', help='time a fixed CPU loop after each step: prints probe_ms=')
    ap.add_argument('--barrier', default='', help='DIR:N: measure once N runs are ready in DIR')
    args = ap.parse_args(argv)
    run(args)


PROBE_ITERATIONS = 20000   # about 0.5 ms of CPython 3.12 on the GPU machine's host


def probe():
    """Milliseconds of a fixed loop of Python arithmetic: CPU speed alone (no
    CUDA call, nothing the tracer hooks, a working set in the L1 cache)."""
    t0 = time.perf_counter()
    s = 0
    for i in range(PROBE_ITERATIONS):
        s += i * i
    return (time.perf_counter() - t0) * 1e3


BARRIER_TIMEOUT_S = 120


def wait_for_peers(spec, step):
    """Announces this run ready in DIR and keeps stepping until N runs are
    (a step's length apart at most: the poll is between steps). Prints how
    long it waited, and barrier_timeout=1 if the peers never came."""
    import os
    where, _, n = spec.rpartition(':')
    with open(os.path.join(where, 'ready-%d' % os.getpid()), 'w'):
        pass
    t0 = time.monotonic()
    while len([f for f in os.listdir(where) if f.startswith('ready-')]) < int(n):
        if time.monotonic() - t0 > BARRIER_TIMEOUT_S:
            print('barrier_timeout=1')
            break
        step()
    print('barrier_wait_s=%.2f' % (time.monotonic() - t0))


def run(args):
    if args.history:
        torch.cuda.memory._record_memory_history(stacks=args.history)
    torch.manual_seed(0)
    dev = torch.device('cuda')
    d, layers, seq, vocab = 768, 6, 256, 32000
    layer = torch.nn.TransformerEncoderLayer(d, 12, 4 * d, batch_first=True, norm_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, d), torch.nn.TransformerEncoder(layer, layers),
                                torch.nn.Linear(d, vocab)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, vocab, (args.batch, seq), device=dev)
    if args.pin_main >= 0:
        # Linux: pid 0 is the calling thread. The threads CUDA, CUPTI and the
        # tracer started at the first CUDA call keep the cores they inherited,
        # so the step's own thread never shares its core with them.
        import os
        os.sched_setaffinity(0, {args.pin_main})
    y = torch.randint(0, vocab, (args.batch, seq), device=dev)
    props = torch.cuda.get_device_properties(dev)   # which card ran it (several GPUs side by side: bench_cost)
    print('gpu=%s' % (getattr(props, 'uuid', None) or props.name))
    times, probes = [], []
    steady = [0, 0]  # CLOCK_MONOTONIC (the trace's clock) around the steps measured

    def train_step():
        with torch.autocast('cuda', dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return loss

    t_model = time.monotonic()
    warm = 0
    while args.settle_s and time.monotonic() - t_model < args.settle_s:
        train_step()
        warm += 1
    if args.settle_s:
        print('settle_steps=%d' % warm)
    if args.barrier:
        wait_for_peers(args.barrier, train_step)
    for step in range(args.steps):
        if step == args.first:
            torch.cuda.synchronize()
            steady[0] = time.monotonic_ns()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = train_step()
        times.append((time.perf_counter() - t0) * 1e3)
        if args.probe:
            probes.append(probe())
    steady[1] = time.monotonic_ns()
    print('loss=%.6f' % loss.item())
    print('steady_start_ns=%d' % steady[0])
    print('steady_end_ns=%d' % steady[1])
    print('step_ms=%.4f' % statistics.median(times[args.first:]))
    if args.probe:
        print('probe_ms=%.4f' % statistics.median(probes[args.first:]))
    print('reserved=%d' % torch.cuda.memory_reserved())
    print('max_allocated=%d' % torch.cuda.max_memory_allocated())


if __name__ == '__main__':
    main()
