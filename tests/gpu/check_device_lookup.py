"""GPU check behind a possible hot-path change (issue 14): the shim asks
cudaGetDevice after every successful runtime allocation (shim/current_device.c),
~80 ns an allocation in the cost notes of the H200 hosts. cuCtxGetDevice (the
current context's device) would do as well if, right after a successful
runtime call, it always names the runtime's device. device_lookup.cu, built
here with nvcc, untraced: each lookup's cost (median of 9 loops of 1M calls)
and, per case (each device by cudaSetDevice, cudaMalloc and cudaMallocAsync;
a non-primary context made current through the driver; no current context),
both answers and the allocation's own device (on two or more GPUs also a
stream and a pool of device 1 used while device 0 is current). PASS when
the two lookups agree in every case and name the allocation's own device;
the costs are figures, not checks. Run on a multi-GPU kind to cover more than device 0 (`nvidia-h100-x2`).
usage: check_device_lookup.py --out DIR"""
import argparse
import os
import subprocess

from gpucheck import finish, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(a.out, exist_ok=True)
exe = os.path.join(a.out, 'device_lookup')
subprocess.run(['nvcc', '-O2', '-o', exe, os.path.join(here, 'device_lookup.cu'), '-lcuda'], check=True)
p = run([exe])
print(p.stdout, end='')
report(p.returncode == 0 and 'done 0' in p.stdout, 'device_lookup ran', 'rc %d %s' % (p.returncode, p.stderr[-500:]))
cases = [l.split() for l in p.stdout.splitlines() if l.startswith('case ') and ' runtime ' in l]
differ = [' '.join(c) for c in cases if c[-5] != c[-3]]
report(cases and not differ, 'cuCtxGetDevice names the runtime\'s device after each runtime allocation',
       '%d cases, %d differ%s' % (len(cases), len(differ), ': ' + '; '.join(differ) if differ else ''))
elsewhere = [' '.join(c) for c in cases if c[-1] != c[-3]]
report(cases and not elsewhere, 'each allocation is on the current device (the lookup is the right question)',
       '%d cases, %d elsewhere%s' % (len(cases), len(elsewhere), ': ' + '; '.join(elsewhere) if elsewhere else ''))
finish()
