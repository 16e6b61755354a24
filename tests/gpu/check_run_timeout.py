"""`gputrace sweep --run-timeout` on a real GPU job that never ends (issue 13:
JAX under its platform allocator held a sweep 9 minutes with no end, session
32). The job (--job): PyTorch takes 1 GiB of the GPU per sample, prints, then
sleeps without end; it runs behind a shell wrapper (`sh -c`, as a launcher
script would), so the run is two processes. Two variants: the job ends on
SIGTERM as Python does by default, and the job ignores SIGTERM (the sweep must
follow with SIGKILL 10 s later).
PASS lines, per variant:
  - the sweep stops with exit 12, `stopped` = run-timeout, runs[0].timed_out,
    within the timeout + 15 s (SIGTERM) or + 25 s (SIGTERM ignored);
  - no process of the run is left (the wrapper and its Python child: found by
    a marker in their command lines);
  - the GPU holds none of it: nvidia-smi lists no compute process of the run,
    and the device's used memory is back within 64 MiB of what it was before.
usage: check_run_timeout.py --build BUILD --out DIR [--timeout-s 20]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck import FAILED, report, run  # noqa: E402

JOB = r'''
import signal, sys, time
import torch
if sys.argv[2] == 'ignore':
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
x = torch.empty(int(sys.argv[1]) << 30, dtype=torch.uint8, device='cuda')
x.fill_(1)
torch.cuda.synchronize()
print('holding', x.numel(), flush=True)
while True:
    time.sleep(1)
'''

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--timeout-s', type=int, default=20)
ap.add_argument('--job', action='store_true', help=argparse.SUPPRESS)
a = ap.parse_args()
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
job = os.path.join(a.out, 'never_ends.py')
with open(job, 'w') as f:
    f.write(JOB)


def gpu_used_mib():
    out = subprocess.run(['nvidia-smi', '--query-gpu=memory.used', '--format=csv,noheader,nounits', '-i', '0'],
                         capture_output=True, text=True).stdout
    return int(out.split()[0])


def compute_pids():
    out = subprocess.run(['nvidia-smi', '--query-compute-apps=pid', '--format=csv,noheader'],
                         capture_output=True, text=True).stdout
    return {int(x) for x in out.split() if x.strip().isdigit()}


def left_processes(marker):
    out = subprocess.run(['ps', '-eo', 'pid,args'], capture_output=True, text=True).stdout
    return [l.strip() for l in out.splitlines() if marker in l and 'ps -eo' not in l]


for variant in ('default', 'ignore'):
    marker = 'gt-timeout-%s-%d' % (variant, os.getpid())
    before = gpu_used_mib()
    pids_before = compute_pids()
    d = os.path.join(a.out, 'sweep-' + variant)
    shutil.rmtree(d, ignore_errors=True)
    wrapper = ['sh', '-c', '%s %s "$1" %s %s; echo wrapper-after-job' % (sys.executable, job, variant, marker),
               marker, '{bs}']
    t0 = time.monotonic()
    p = run([gputrace, 'sweep', '--json', '--dir', d, '--run-timeout', '%ds' % a.timeout_s, '--'] + wrapper,
            timeout=a.timeout_s + 120)
    took = time.monotonic() - t0
    for line in p.stderr.splitlines()[-6:]:
        print('     ' + line, flush=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    runs = doc.get('runs') or [{}]
    limit = a.timeout_s + (25 if variant == 'ignore' else 15)
    report(p.returncode == 12 and doc.get('stopped') == 'run-timeout' and runs[0].get('timed_out') is True and
           took <= limit, '%s: the sweep stops the run past --run-timeout (exit 12, run-timeout) within %d s' % (
               variant, limit), 'exit %d, stopped %s, timed_out %s, %.1f s' % (
               p.returncode, doc.get('stopped'), runs[0].get('timed_out'), took))
    time.sleep(2)
    left = left_processes(marker)
    report(not left, '%s: no process of the run is left (wrapper and job)' % variant, '%d left %s' % (len(left), left))
    after, pids_after = gpu_used_mib(), compute_pids()
    report(not (pids_after - pids_before) and after - before <= 64,
           '%s: the GPU holds none of the run' % variant, 'used %d MiB before, %d MiB after; new compute pids %s' % (
               before, after, sorted(pids_after - pids_before)))
    for pid in [int(l.split()[0]) for l in left]:   # leave the GPU clean for what follows
        try:
            os.kill(pid, 9)
        except OSError:
            pass
print('all checks passed' if not FAILED else '%d checks failed' % len(FAILED))
sys.exit(1 if FAILED else 0)
