"""GPU check of `gputrace oom` (issue 11, part 6): the conv net of
sweep_models.py at a batch that cannot fit (--batch-size, default 400; 178 is
its largest under the default allocator), under the default allocator,
backend:cudaMallocAsync and expandable_segments:True. The workload catches
PyTorch's OutOfMemoryError, prints what PyTorch said it tried to allocate and
its counters at that moment, and raises it again (exit 1, as a job dies).
Per allocator:
- the failure `oom --json` says ended the program asked for the bytes PyTorch
  said it tried to allocate (within 1%: PyTorch prints two decimals); under
  expandable segments, where PyTorch maps the request 20 MiB at a time and
  the driver never sees its size, a lower bound said to be one, at most it;
- no negative figure anywhere in the JSON; the failures the program recovered
  from are marked so, and other failed calls (a refused cuMemCreate probe) are
  not counted as out of memory;
- under cudaMallocAsync the pool's live bytes at the failure equal PyTorch's
  memory_allocated(); under the default allocator and expandable segments the
  live device bytes equal memory_reserved() plus the memory of other libraries
  the ledger names (cuBLAS/cuDNN workspaces), printed beside it;
- summary's out-of-memory line and JSON name the same request.
About 2 minutes.
usage: check_oom.py --build BUILD --out DIR [--batch-size N]"""
import argparse
import json
import os
import re
import subprocess

from gpucheck import counters, finish, fresh_db, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--batch-size', type=int, default=400)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)

WORKLOAD = r'''
import re, sys, torch
sys.path.insert(0, %r)
from sweep_models import build, batch, loss_of
UNITS = {'B': 1, 'KiB': 2**10, 'MiB': 2**20, 'GiB': 2**30, 'TiB': 2**40}
torch.manual_seed(0)
model = build('conv').cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
try:
    for step in range(2):
        x, y = batch('conv', %d)
        opt.zero_grad(set_to_none=True)
        loss_of('conv', model, x, y).backward()
        opt.step()
except torch.OutOfMemoryError as e:
    text = str(e)
    m = re.search(r'Tried to allocate ([0-9.]+) ([KMGT]?i?B)', text) or \
        re.search(r'Requested\s*:\s*([0-9.]+) ([KMGT]?i?B)', text)
    print('tried=%%d' %% (float(m.group(1)) * UNITS[m.group(2)] if m else -1))
    print('allocated=%%d' %% torch.cuda.memory_allocated())
    print('reserved=%%d' %% torch.cuda.memory_reserved())
    print('message: ' + text.splitlines()[0][:300].replace('=', ':'))
    sys.stdout.flush()
    raise
'''


def negatives(x, path=''):
    """Paths of negative numbers in a JSON value (ids and times excepted)."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            out += negatives(v, path + '.' + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out += negatives(v, '%s[%d]' % (path, i))
    elif isinstance(x, (int, float)) and not isinstance(x, bool) and x < 0 and not path.endswith(('result', 'device')):
        out.append('%s=%s' % (path, x))
    return out


def one_allocator(name, conf):
    db = fresh_db(a.out, 'oom-' + name)
    env = {'GPUTRACE_QUIET': '1'}
    if conf:
        env['PYTORCH_CUDA_ALLOC_CONF'] = conf
    p = run(['python3', '-c', WORKLOAD % (here, a.batch_size)], shim=shim, db=db, env_extra=env)
    c = counters(p.stdout)
    msg = [l for l in p.stdout.splitlines() if l.startswith('message: ')]
    print('   %s: rc %d, %s; PyTorch: %s' % (name, p.returncode, {k: c.get(k) for k in ('tried', 'allocated', 'reserved')},
                                          msg[0][9:] if msg else p.stderr[-300:]), flush=True)
    if p.returncode == 0 or c.get('tried', -1) <= 0 or not os.path.exists(db):
        report(False, '%s: the run died of OOM with a traced failure' % name, 'rc %d, tried %s, trace %s' % (
            p.returncode, c.get('tried'), os.path.exists(db)))
        return
    q = subprocess.run([gputrace, 'oom', '--json', db], capture_output=True, text=True)
    try:
        js = json.loads(q.stdout)
    except ValueError:
        report(False, '%s: oom --json parses' % name, 'rc %d: %s %s' % (q.returncode, q.stdout[:200], q.stderr[:200]))
        return
    tr = js['traces'][0] if 'traces' in js else js
    fails = tr.get('failures', [])
    ended = [f for f in fails if f.get('ended_program')]
    print('   %s: %d out-of-memory requests (%d ended the program), %d other failed calls %s' % (
        name, len(fails), len(ended), len(tr.get('other_failures', [])),
        [(o['api'], o['result_name'], o['requested_bytes']) for o in tr.get('other_failures', [])][:4]), flush=True)
    for f in fails:
        print('     %s requested %s (lower bound %s, attempts %d, chunks rolled back %d), ended %s, live device %d, '
              'pool %d, needed %s, short by %s, ledger %s' % (
                  f['api'], f['requested_bytes'], f['requested_is_lower_bound'], f['attempts'], f['chunks_rolled_back'],
                  f['ended_program'], f['live_device_bytes'], f['live_pool_bytes'], f['needed_bytes'],
                  f.get('short_by_bytes'), [(b['name'], b['bytes']) for b in f.get('ledger', [])]), flush=True)
    if len(ended) != 1:
        report(False, '%s: one request ended the program' % name, '%d marked so' % len(ended))
        return
    e = ended[0]
    tried = c['tried']
    req = e['requested_bytes'] or 0
    if conf and 'expandable_segments:True' in conf:
        # PyTorch's ExpandableSegment::map creates one 20-MiB handle after
        # another and never passes the request's size to the driver: no trace
        # below PyTorch can know it (sessions 21 and 34). What oom can stand
        # behind is a lower bound, said to be one, never above the request.
        report(e['requested_is_lower_bound'] and 0 < req <= tried, '%s: the request that ended the program is given as '
               'a lower bound, at most what PyTorch raised on (the driver never sees the request)' % name,
               'oom says at least %d B (lower bound %s), PyTorch tried %d B (%.1f%% of it)' % (
                   req, e['requested_is_lower_bound'], tried, 100.0 * req / tried))
    else:
        report(abs(req - tried) <= 0.01 * tried, '%s: the request that ended the program is the one PyTorch raised on '
               '(within 1%%)' % name, 'oom says %d B, PyTorch tried %d B (%+.3f%%)' % (req, tried,
                                                                               100.0 * (req - tried) / tried))
    neg = negatives(js)
    report(not neg, '%s: no negative figure in oom --json' % name, 'negatives: %s' % neg[:5])
    if conf and 'cudaMallocAsync' in conf:
        report(e['live_pool_bytes'] == c['allocated'], '%s: live pool bytes at the failure == memory_allocated()' % name,
               'trace %d, torch %d (%+d)' % (e['live_pool_bytes'], c['allocated'], e['live_pool_bytes'] - c['allocated']))
    else:
        libs = sum(b['bytes'] for b in e.get('ledger', []) if b.get('kind') == 'library')
        diff = e['live_device_bytes'] - c['reserved']
        report(diff == libs, '%s: live device bytes at the failure == memory_reserved() + other libraries\' memory'
               % name, 'trace %d, torch reserved %d, difference %d, library buckets %d' % (
                   e['live_device_bytes'], c['reserved'], diff, libs))
    text = subprocess.run([gputrace, 'oom', db], capture_output=True, text=True).stdout
    print('\n'.join('     | ' + l for l in text.splitlines()[:24]), flush=True)
    # summary's verdict line tells the same failure (a run that died of an OOM read "1 failed call")
    sj = json.loads(subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True).stdout)
    sj = sj['traces'][0] if 'traces' in sj else sj
    so = sj.get('out_of_memory', {})
    st = subprocess.run([gputrace, 'summary', db], capture_output=True, text=True).stdout
    line = [l.strip() for l in st.splitlines() if l.strip().startswith('out of memory:')]
    report(so.get('ended_program') is True and so.get('requested_bytes') == e['requested_bytes'] and
           so.get('api') == e['api'] and len(line) == 1 and 'ended on a failed' in line[0],
           '%s: summary says the program ended out of memory, on oom\'s request' % name,
           'summary %s; line %s' % (so, line))


for name, conf in (('default', None), ('async', 'backend:cudaMallocAsync'), ('expandable', 'expandable_segments:True')):
    try:
        one_allocator(name, conf)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        report(False, name, 'raised %r' % e)
finish()
