"""GPU check of the device an allocation is recorded on (shim/current_device.c;
issue 14 for its cost). device_lookup.cu, built here with nvcc twice (the
runtime linked shared, so the shim's runtime hooks see its calls, and static,
nvcc's default, so only its driver hooks do), prints each lookup's cost
(median of 9 loops of 1M calls) and, per case (each device by
cudaSetDevice, cudaMalloc and cudaMallocAsync; a non-primary context made
current through the driver; no current context; on two or more GPUs, a
stream and a pool of device 1 used while device 0 is current), the
runtime's current device, the driver's, and the allocation's own device
(asked of its pointer). Checks:
- untraced: cudaGetDevice and cuCtxGetDevice agree after every runtime
  allocation (the shim asks the cheaper cuCtxGetDevice);
- traced, both builds: every allocation's recorded device is its own
  device, case by case (a stream-ordered allocation on another device's
  stream or pool is not on the current device).
Run on a multi-GPU kind to cover more than device 0 (`nvidia-h100-x2`).
usage: check_device_lookup.py --build BUILD --out DIR"""
import argparse
import os
import subprocess

from gpucheck import finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)


def cases_of(stdout):
    """[(name, runtime, driver, own)] from 'case NAME runtime R driver D own W' lines."""
    out = []
    for line in stdout.splitlines():
        if line.startswith('case ') and ' runtime ' in line:
            w = line.split()
            out.append((' '.join(w[1:-6]), int(w[-5]), int(w[-3]), int(w[-1])))
    return out


for cudart in ('shared', 'static'):
    exe = os.path.join(a.out, 'device_lookup_' + cudart)
    subprocess.run(['nvcc', '-O2', '-cudart', cudart, '-o', exe, os.path.join(here, 'device_lookup.cu'), '-lcuda'],
                   check=True)
    if cudart == 'shared':
        p = run([exe])
        print(p.stdout, end='')
        report(p.returncode == 0 and 'done 0' in p.stdout, 'device_lookup ran', 'rc %d %s' % (p.returncode, p.stderr[-500:]))
        cases = cases_of(p.stdout)
        differ = ['%s: %d %d' % (n, r, d) for n, r, d, _ in cases if r != d]
        report(cases and not differ, 'cuCtxGetDevice names the runtime\'s device after each runtime allocation',
               '%d cases, %d differ%s' % (len(cases), len(differ), ': ' + '; '.join(differ) if differ else ''))
        print('   not on the current device: %s' % ('; '.join(n for n, r, _, w in cases if w != r) or 'none'))
    db = os.path.join(a.out, 'device_lookup_%s.db' % cudart)
    if os.path.exists(db):
        os.remove(db)
    p = run([exe], shim=shim, db=db)
    cases = cases_of(p.stdout)
    got = [r[0] for r in rows(db, "SELECT device FROM events_v WHERE op = 'alloc' ORDER BY id")] \
        if p.returncode == 0 and os.path.exists(db) else []
    wrong = ['%s: recorded %s, own %d' % (c[0], g, c[3]) for c, g in zip(cases, got) if g != c[3]]
    report(p.returncode == 0 and cases and len(got) == len(cases) and not wrong,
           'traced (runtime %s): each allocation recorded on its own device' % cudart,
           'rc %d, %d cases, %d allocations recorded%s %s' % (
               p.returncode, len(cases), len(got), ': ' + '; '.join(wrong) if wrong else '', p.stderr[-300:]))
finish()
