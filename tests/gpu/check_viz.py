"""GPU checks of the timeline views (issue 6) on real traces: the PyTorch loop
of train_mlp.py with NVTX steps and CUPTI, default allocator and
cudaMallocAsync backend, exported with `gputrace export` and drawn with
`gputrace report`. The export must pass the same structural checks as CI
(tests/test_export.py) on real CUPTI data, hold every kernel of the trace,
and its counters must peak where `gputrace summary` says; the report's data
must carry the same peaks. Chromium is not expected on the GPU machine: if
present, the page is also rendered and checked for script errors.
usage: check_viz.py --build BUILD --out DIR"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

from gpucheck import finish, one, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=30)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..'))
os.environ.setdefault('GPUTRACE_BUILD', os.path.abspath(a.build))
import test_export  # noqa: E402 - the CI structure check, reused as is

shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
train = ['python3', os.path.join(here, 'train_mlp.py'), '--steps', str(a.steps), '--batch', '256', '--nvtx']


def safe(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        report(False, name, 'raised %r' % e)


def gt(*args):
    t0 = time.monotonic()
    p = subprocess.run([gputrace] + list(args), capture_output=True, text=True, timeout=600)
    p.wall = time.monotonic() - t0
    return p


for mode, conf in (('default', None), ('async', 'backend:cudaMallocAsync')):
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    db = os.path.join(a.out, 'viz-%s.db' % mode)
    p = run(train, shim=shim, db=db, env_extra=env)
    ok = p.returncode == 0 and os.path.exists(db)
    report(ok, '%s: traced run completes' % mode, 'rc %d; stderr tail: %s' % (p.returncode, p.stderr[-300:]))
    if not ok:
        continue
    summary = json.loads(gt('summary', '--json', db).stdout)
    peaks = {('%s bytes (GPU %d)' % (x['memory'], x['device'])): x['peak_bytes'] for x in summary['peaks'] if x['device'] >= 0}

    def export(mode=mode, db=db, peaks=peaks):
        out = os.path.join(a.out, 'viz-%s.json' % mode)
        e = gt('export', '--format', 'chrome', db, '-o', out)
        report(e.returncode == 0, '%s: export runs' % mode, 'rc %d %.2f s; %s' % (e.returncode, e.wall, e.stderr.strip()))
        with open(out, encoding='utf-8') as f:
            doc = json.load(f)
        tc = unittest.TestCase()
        test_export.check_trace_events(tc, doc)   # raises on a structural error
        ev = doc['traceEvents']
        kinds = {}
        for x in ev:
            kinds[x['ph']] = kinds.get(x['ph'], 0) + 1
        report(True, '%s: export passes the trace-event structure checks' % mode,
               '%.1f MiB, events by ph %s' % (os.path.getsize(out) / 2**20, kinds))
        n_k = one(db, 'SELECT count(*) FROM kernels')
        got = sum(1 for x in ev if x['ph'] == 'X' and x['cat'] == 'kernel')
        report(got == n_k and n_k > 0, '%s: every kernel exported' % mode, '%d kernels in the trace, %d in the export' % (n_k, got))
        cmax = {}
        for x in ev:
            if x['ph'] == 'C' and x['name'] in peaks:
                cmax[x['name']] = max(cmax.get(x['name'], 0), x['args']['bytes'])
        report(cmax == peaks, '%s: counter maxima equal summary peaks' % mode, 'export %s; summary %s' % (cmax, peaks))
        steps = [x for x in ev if x['ph'] == 'X' and x['cat'] == 'nvtx' and x['name'].startswith('step ')]
        its = [x for x in ev if x['ph'] == 'X' and x['cat'] == 'iteration']
        report(len(steps) == a.steps and len(its) == a.steps, '%s: NVTX steps and iterations as slices' % mode,
               '%d step ranges, %d iterations (planted %d)' % (len(steps), len(its), a.steps))

    def html(mode=mode, db=db, peaks=peaks):
        out = os.path.join(a.out, 'viz-%s.html' % mode)
        r = gt('report', db, '-o', out)
        report(r.returncode == 0, '%s: report runs' % mode, 'rc %d %.2f s; %s' % (r.returncode, r.wall, r.stderr.strip()))
        with open(out, encoding='utf-8') as f:
            page = f.read()
        data = json.loads(re.search(r'id="gt-data">(.*?)</script>', page, re.S).group(1))
        series = {'%s bytes (GPU %d)' % (s['memory'], s['device']): s['peak_bytes'] for s in data['traces'][0]['series']
                  if s['memory'] != 'nvml_used'}
        # the page also draws pinned host memory, which summary's peaks leave out
        shown = {k: v for k, v in series.items() if k in peaks}
        report(shown == peaks, '%s: report series peaks equal summary peaks' % mode,
               '%s; %.2f MiB page; NVML series: %d' % (series, len(page) / 2**20,
                                                       sum(1 for s in data['traces'][0]['series'] if s['memory'] == 'nvml_used')))
        browser = shutil.which('chromium') or shutil.which('chromium-browser')
        if not browser:
            print('   (no chromium here: page not rendered)')
            return
        d = subprocess.run([browser, '--headless', '--no-sandbox', '--disable-gpu', '--dump-dom', 'file://' + out],
                           capture_output=True, text=True, timeout=120)
        err = re.search(r'<pre id="errors"[^>]*>(.*?)</pre>', d.stdout, re.S)
        report('data-rendered="ok"' in d.stdout and err is not None and not err.group(1).strip(),
               '%s: page renders without script errors' % mode, (err.group(1)[:300] if err else 'no #errors element'))

    safe('%s: export' % mode, export)
    safe('%s: report' % mode, html)

finish()
