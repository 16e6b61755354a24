"""Where the step-time noise between fresh processes comes from (issue 14's
method): runs the cost workload's transformer step untraced N times, each in
a fresh process, and prints per run the median step's wall time, the step
thread's own CPU time (time.thread_time), the machine's steal and iowait
time over the run (/proc/stat), and the GPU's SM clock and power sampled by
nvidia-smi while it ran. A run slow in wall time but not in thread CPU time
waits (GPU, another tenant); one slow in both runs slower code or a slower
core. Each run's steps in four quarters, each quarter's median: quarters
as far apart as runs are mean noise that drifts in time (longer runs average
it); quarters that agree while runs differ mean a state each process keeps.
usage: step_noise.py [--runs N] [--steps N] [--alloc default|async]"""
import argparse
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))

if len(sys.argv) > 1 and sys.argv[1] == '--child':
    import torch
    sys.path.insert(0, here)
    steps = int(sys.argv[2])
    torch.manual_seed(0)
    dev = torch.device('cuda')
    d, layers, seq, vocab, batch = 768, 6, 256, 32000, 16
    layer = torch.nn.TransformerEncoderLayer(d, 12, 4 * d, batch_first=True, norm_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, d), torch.nn.TransformerEncoder(layer, layers),
                                torch.nn.Linear(d, vocab)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, vocab, (batch, seq), device=dev)
    y = torch.randint(0, vocab, (batch, seq), device=dev)
    wall, cpu, gpu = [], [], []
    for step in range(steps):
        torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.thread_time()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        with torch.autocast('cuda', dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        c1 = time.thread_time()
        e1.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((c1 - c0) * 1e3)
        gpu.append(e0.elapsed_time(e1))
    w, c, g = wall[10:], cpu[10:], gpu[10:]
    quarters = ' '.join('%.2f' % statistics.median(w[k * len(w) // 4:(k + 1) * len(w) // 4]) for k in range(4))
    print('quarters=%s wall=%.3f cpu=%.3f gpu=%.3f wall_p10=%.3f wall_p90=%.3f cpu_p90=%.3f' % (quarters,
        statistics.median(w), statistics.median(c), statistics.median(g), sorted(w)[len(w) // 10],
        sorted(w)[len(w) * 9 // 10], sorted(c)[len(c) * 9 // 10]))
    raise SystemExit(0)


def stat():
    f = open('/proc/stat').readline().split()[1:]
    return [int(v) for v in f]


ap = argparse.ArgumentParser()
ap.add_argument('--runs', type=int, default=6)
ap.add_argument('--steps', type=int, default=100)
ap.add_argument('--alloc', default='async')
a = ap.parse_args()
env = dict(os.environ)
if a.alloc == 'async':
    env['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'
for i in range(a.runs):
    smi = subprocess.Popen(['nvidia-smi', '--query-gpu=clocks.sm,power.draw,temperature.gpu,utilization.gpu',
                            '--format=csv,noheader,nounits', '-lms', '200'], stdout=subprocess.PIPE, text=True)
    s0 = stat()
    p = subprocess.run([sys.executable, __file__, '--child', str(a.steps)], env=env, capture_output=True, text=True)
    s1 = stat()
    smi.terminate()
    rows = [l.split(', ') for l in smi.communicate()[0].splitlines() if l.count(',') == 3]
    clocks = sorted(int(r[0]) for r in rows) if rows else [0]
    util = sorted(int(r[3]) for r in rows) if rows else [0]
    d = [b - x for b, x in zip(s1, s0)]
    total = sum(d) or 1
    print('run %d: %s | steal %.1f%% iowait %.1f%% | sm clock %d-%d MHz, util median %d%%' % (
        i, p.stdout.strip() or p.stderr[-300:], 100 * d[7] / total, 100 * d[4] / total, clocks[0], clocks[-1],
        util[len(util) // 2]), flush=True)
