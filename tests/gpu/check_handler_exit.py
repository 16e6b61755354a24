"""GPU check of a program's own signal handler that calls _exit (pysafe item
4): a C program (built here with nvcc, -cudart shared) launches kernels and
stream-ordered allocations on a worker thread with the real CUPTI recording,
and its SIGTERM handler _exits(3). The main thread sends the worker SIGTERM
after a random delay, so the handler interrupts it anywhere, CUDA and CUPTI
calls included. Each traced run must exit 3 as the untraced one does, within
2 s of the signal (the shim's bounded path, no CUPTI flush inside the
handler), with a finished trace that the analyzer opens: end_reason '_exit',
every event written or counted (one file, or complete in WAL mode with its
-wal beside it when the stop neared its deadline: writer.c; such runs are
named).
usage: check_handler_exit.py --build BUILD --out DIR   (about 1 minute)"""
import argparse
import os
import random
import subprocess

from gpucheck import finish, one, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--runs', type=int, default=20)
a = ap.parse_args()
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)

SRC = r'''
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ void step(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1; }

static void handled(int sig) { (void)sig; _exit(3); }
static volatile int ready;

static void *worker(void *arg)
{
    (void)arg;
    cudaStream_t s;
    cudaStreamCreate(&s);
    for (long k = 0;; k++) {
        float *x;
        cudaMallocAsync((void **)&x, 1 << 20, s);
        step<<<1024, 256, 0, s>>>(x, 1 << 18);
        cudaFreeAsync(x, s);
        if (k % 64 == 63) { cudaStreamSynchronize(s); ready = 1; }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handled;
    sigaction(SIGTERM, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (!ready) usleep(1000);
    usleep((useconds_t)atol(argv[1]));
    pthread_kill(t, SIGTERM);
    for (;;) pause();
}
'''
src = os.path.join(a.out, 'handler_exit.cu')
exe = os.path.join(a.out, 'handler_exit')
with open(src, 'w') as f:
    f.write(SRC)
b = subprocess.run(['nvcc', '-O1', '-cudart', 'shared', '-o', exe, src, '-lpthread'], capture_output=True, text=True)
report(b.returncode == 0, 'build', b.stderr.strip()[-300:] or exe)
if b.returncode:
    finish()

bare = run([exe, '100000'], timeout=60)
report(bare.returncode == 3, 'untraced: the handler exits 3', 'status %d' % bare.returncode)

rng = random.Random(7)
slow, bad, events = [], [], []
in_wal = []
for i in range(a.runs):
    db = os.path.join(a.out, 'run%02d.db' % i)
    if os.path.exists(db):
        os.unlink(db)
    delay_us = rng.randrange(0, 300000)
    try:
        p = run([exe, str(delay_us)], shim=shim, db=db, timeout=60)
    except subprocess.TimeoutExpired:
        bad.append('run %d: did not end in 60 s' % i)
        continue
    if p.returncode != 3:
        bad.append('run %d: status %d: %s' % (i, p.returncode, p.stderr.strip()[-200:]))
        continue
    s = subprocess.run([gputrace, 'summary', db], capture_output=True, text=True, timeout=60)
    if s.returncode != 0 or not os.path.exists(db):
        bad.append('run %d: trace not opened (summary %d)' % (i, s.returncode))
        continue
    if os.path.exists(db + '-wal'):
        # by design (writer.c): when the bounded stop nears its deadline the
        # one-file conversion is skipped, the trace complete in WAL mode
        in_wal.append(i)
    reason, recorded, dropped = (one(db, 'SELECT end_reason FROM processes'),
                                 one(db, 'SELECT events_recorded FROM processes'),
                                 one(db, 'SELECT events_dropped FROM processes'))
    if reason != '_exit':
        bad.append('run %d: end_reason %r' % (i, reason))
    events.append((recorded, dropped))
    slow.append(p.wall - delay_us / 1e6)   # CUDA's start-up, the work before the delay, and the exit
report(not bad, 'traced: %d runs exit 3 with a finished trace, end_reason _exit' % a.runs,
       '; '.join(bad[:3]) or 'events recorded %s..%s, dropped max %s; left in WAL mode (complete, the bounded '
       'stop near its deadline): runs %s' % (min(e[0] for e in events), max(e[0] for e in events),
                                             max(e[1] for e in events), in_wal or 'none'))
# the bounded path allows 1 s after the signal; the untraced run's start-up is the rest
report(bool(slow) and max(slow) < bare.wall - 0.1 + 2, 'traced: each run ends within 2 s of the signal',
       'wall minus delay: median %.2f s, max %.2f s; untraced %.2f s' % (
           sorted(slow)[len(slow) // 2], max(slow), bare.wall - 0.1) if slow else 'no run')
finish()
