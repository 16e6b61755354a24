"""GPU check of CUDA arrays (cudaMallocArray, cudaMalloc3DArray,
cudaMallocMipmappedArray, cuArrayCreate, cuArray3DCreate; a sparse one where
the device supports it): tests/gpu/arrays.cu built by nvcc with the static
runtime (the default) and the shared one. For each build: output and exit
code as without the shim; every array one event (a runtime call is not seen
again as the driver call it makes) with the bytes its descriptor asks for;
each recorded size against what cudaMemGetInfo says the device lost to the
call (the driver's tiling on top: printed); frees pair by handle and the two
arrays left live are live at exit; the ledger at exit adds up to NVML's
figure within 1%.
usage: check_arrays.py --build BUILD --out DIR"""
import argparse
import json
import os
import re
import subprocess

from gpucheck import finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.join(a.build, 'analyzer', 'gputrace')
os.makedirs(a.out, exist_ok=True)
MiB = 1 << 20


def masked(s):
    """Handles differ run to run (host pointers), and so does what
    cudaMemGetInfo says a call took (the driver's own lazy allocations): the
    fourth column of an array's line is left out."""
    s = re.sub(r'0x[0-9a-f]+', 'ADDR', s)
    return re.sub(r'^(\S+ ADDR \d+) \d+$', r'\1', s, flags=re.M)


for cudart in ('static', 'shared'):
    exe = os.path.join(a.out, 'arrays_' + cudart)
    subprocess.run(['nvcc', '-O1', '-cudart', cudart, '-o', exe, os.path.join(here, 'arrays.cu'), '-lcuda'], check=True)
    bare = run([exe])
    db = os.path.join(a.out, 'arrays_%s.db' % cudart)
    for f in (db, db + '-wal', db + '-shm'):
        if os.path.exists(f):
            os.remove(f)
    p = run([exe], shim=shim, db=db, env_extra={'GPUTRACE_QUIET': '1'})
    same = bare.returncode == p.returncode == 0 and masked(bare.stdout) == masked(p.stdout)
    report(same, '%s runtime: output and exit code as without the shim' % cudart,
           'rc %d/%d; %s' % (bare.returncode, p.returncode, 'untraced:\n%s\ntraced:\n%s' % (bare.stdout + bare.stderr,
                                                                                             p.stdout + p.stderr)
                             if not same else p.stdout.splitlines()[-2]))
    if p.returncode != 0:
        continue
    made, live = [], []
    for line in p.stdout.splitlines():
        w = line.split()
        if w[0] == 'live':
            live = [int(x, 16) for x in w[1:]]
        elif len(w) == 4 and w[1].startswith('0x'):
            made.append((w[0], int(w[1], 16), int(w[2]), int(w[3])))
    got = rows(db, "SELECT api, ptr, size FROM events_v WHERE op = 'alloc' AND api LIKE '%Array%' ORDER BY id")
    want = [(api, h, b) for api, h, b, _ in made]
    if cudart == 'static':
        # the static runtime's own functions cannot be interposed: its arrays
        # are the driver calls it makes, under the driver's names
        got = [(w[0], g[1], g[2]) if w[0].startswith('cuda') and g[0].startswith('cu') and not g[0].startswith('cuda')
               else g for g, w in zip(got, want)] + got[len(want):]
    report(got == want, '%s runtime: every array one event with the bytes its descriptor asks for' % cudart,
           'recorded %d, printed %d%s' % (len(got), len(want), '' if got == want else ': %s vs %s' % (got, want)))
    n = rows(db, "SELECT count(*) FROM events_v WHERE op = 'alloc' AND api LIKE '%Array%'")[0][0]
    own = rows(db, "SELECT count(*) FROM events_v WHERE layer = 'driver' AND op = 'alloc' AND api LIKE '%Array%'")[0][0]
    # shared: only the program's own two driver calls are driver rows; static:
    # the runtime cannot be interposed, so every array is its driver call, once
    want_own = sum(1 for api, *_ in made if api.startswith('cu') and not api.startswith('cuda')) if cudart == 'shared' \
        else len(made)
    report(n == len(made) and own == want_own,
           '%s runtime: no array counted twice through the driver call the runtime makes' % cudart,
           '%d array allocations recorded for %d made, %d of them driver rows (want %d)' % (n, len(made), own, want_own))
    # the asked size against what the device lost (cudaMemGetInfo: 2 MiB pages)
    lines = ['%s %.2f MiB asked, %.2f MiB held (+%.2f%%)' % (api, b / MiB, held / MiB, 100.0 * (held - b) / b if b else 0)
             for api, _, b, held in made]
    close = all(b <= held + 2 * MiB and (b == 0 or held <= 1.10 * b + 2 * MiB) for _, _, b, held in made)
    report(close, '%s runtime: each recorded size is what the device lost to the call, within its 2 MiB pages and '
                  'the driver\'s tiling (10%%)' % cudart, '; '.join(lines))
    at_exit = rows(db, "SELECT ptr FROM allocations WHERE free_ns IS NULL AND api LIKE '%Array%' ORDER BY ptr")
    report([r[0] for r in at_exit] == sorted(live), '%s runtime: frees pair by handle; the arrays left are live at '
                                                    'exit' % cudart, 'live %s, program says %s' % (at_exit, live))
    s = subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True)
    d = json.loads(s.stdout)
    d = d['traces'][0] if 'traces' in d else d
    ex = [x for x in ((d.get('ledger') or [{}])[0].get('instants') or []) if x['instant'] == 'exit']
    bk = {b['kind']: b['bytes'] for b in ex[0]['buckets']} if ex else {}
    nvml, un = (ex[0].get('nvml_process_bytes'), ex[0].get('unaccounted_bytes')) if ex else (None, None)
    report(bool(nvml) and un is not None and abs(un) <= 0.01 * nvml,
           '%s runtime: the ledger at exit adds up to NVML\'s figure within 1%%' % cudart,
           'buckets %s, NVML %s, unaccounted %s' % (bk, nvml, un))
finish()
