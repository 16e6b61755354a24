"""GPU check of Python call stacks (issue 12), on PyTorch with LD_PRELOAD only:
- seed_001.py leak under the default allocator and under
  backend:cudaMallocAsync: `gputrace growth`'s top growing site starts at the
  line of seed_001.py that makes the retained tensor (the relu line of
  ModelWithStoredTensor.forward, found in the source, not in our output), and
  the trace says Python frames are on;
- PyTorch's own recorder on the same program (default allocator,
  _record_memory_history(stacks='python'), _snapshot() at the end): the
  retained blocks' innermost seed_001.py frame is the same line;
- backward pass (cudaMallocAsync): allocations made on PyTorch's autograd
  thread carry the frames of the thread waiting in backward() after the
  <backward> marker, and their call site reads "backward: seed_001.py:N in
  train_step_memory_leak" with N the line of loss.backward();
- a code object made where a freed one was (tests/progs/py_exec_loop.py on the
  real libcudart, through ctypes): each of 3000 code objects, made where the
  last one was freed, names its own line (Python 3.12 keys a frame on co_version; 3.11 on the line table);
- step time of tests/gpu/transformer_step.py under backend:cudaMallocAsync,
  untraced vs traced with Python stacks (GPUTRACE_CUPTI=0), fresh processes,
  shuffled, --runs each: ratio of medians <= 1.05.
About 3 minutes on an H100.
usage: check_pystacks.py --build BUILD --out DIR [--steps N] [--runs N] [--exec-loop-only]"""
import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys

from gpucheck import counters, finish, median, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument('--hidden', type=int, default=131072)
ap.add_argument('--runs', type=int, default=6)
ap.add_argument('--exec-loop-only', action='store_true', help='the frame-identity check alone (seconds)')
ap.add_argument('--step-count', type=int, default=40, help='transformer steps per run (median of steps 10..)')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
seed = os.path.join(here, 'seed_001.py')
os.makedirs(a.out, exist_ok=True)

with open(seed) as f:
    src = f.read().splitlines()
relu_line = next(i for i, l in enumerate(src, 1) if re.search(r'x = torch\.relu\(self\.linear1\(x\)\)', l))
want_text = 'seed_001.py:%d in ModelWithStoredTensor.forward' % relu_line
in_leak_step = False
for i, l in enumerate(src, 1):
    if l.startswith('def train_step_memory_leak'):
        in_leak_step = True
    elif in_leak_step and 'loss.backward()' in l:
        backward_line = i
        break
want_backward = 'backward: seed_001.py:%d in train_step_memory_leak' % backward_line
retained = 32 * a.hidden * 4
print('   the retained tensor is made at seed_001.py:%d (%d bytes per step)' % (relu_line, retained))

# ---- frame identity: code objects at the addresses of freed ones (before torch: seconds)
def cudart_dir():
    """Where libcudart.so.13 lies: the toolkit, or the wheel PyTorch brought."""
    import site
    pats = ['/usr/local/cuda*/lib64/libcudart.so.13*', '/usr/local/cuda*/targets/*/lib/libcudart.so.13*']
    pats += [os.path.join(d, 'nvidia', '*', 'lib', 'libcudart.so.13*') for d in site.getsitepackages()]
    hits = [h for pat in pats for h in glob.glob(pat)]
    return os.path.dirname(hits[0]) if hits else None


loop = os.path.join(here, '..', 'progs', 'py_exec_loop.py')
db = os.path.join(a.out, 'exec-loop.db')
if os.path.exists(db):
    os.remove(db)
libdir = cudart_dir()
env = {'GPUTRACE_CUPTI': '0'}
if libdir:
    env['LD_LIBRARY_PATH'] = ':'.join(d for d in (libdir, os.environ.get('LD_LIBRARY_PATH')) if d)
p = run([sys.executable, loop, '3000'], shim=shim, db=db, env_extra=env)
shared = int(p.stdout.split('shared=')[1]) if 'shared=' in p.stdout else -1
got = rows(db, """SELECT e.size, f.line, count(*) FROM events e JOIN stack_frames sf ON sf.stack_id = e.stack_id
                  JOIN frames f ON f.id = sf.frame_id WHERE e.api = 1 AND f.kind = 'python' AND f.file = 'gen.py'
                  GROUP BY e.size, f.line ORDER BY 1, 2""") if p.returncode == 0 and os.path.exists(db) else []
odd = sum(bin(i).count('1') & 1 for i in range(3000))   # the program's rule for source 1
want_rows = [(4096, 2, 3000 - odd), (8192, 3, odd)]
report(shared > 0 and got == want_rows,
       'exec loop: each code object made where a freed one was names its own line (Python %d.%d)' % sys.version_info[:2],
       '(size, line, allocations) %s, want %s; %d address pairs shared by both '
       'sources (the test needs some); libcudart from %s; rc %d %s' % (got, want_rows, shared, libdir, p.returncode,
                                                                        p.stderr[-600:] if p.returncode else ''))
if a.exec_loop_only:
    finish()

# ---- seed 001 under both allocators
for mode, conf in (('default', None), ('async', 'backend:cudaMallocAsync')):
    name = 'seed001-%s' % mode
    db = os.path.join(a.out, name + '.db')
    if os.path.exists(db):
        os.remove(db)
    env = {'GPUTRACE_CUPTI': '0'}
    if conf:
        env['PYTORCH_CUDA_ALLOC_CONF'] = conf
    p = run([sys.executable, seed, 'leak', '--steps', str(a.steps), '--hidden', str(a.hidden), '--nvtx',
             '--hard-exit'], shim=shim, db=db, env_extra=env)
    if p.returncode != 0 or not os.path.exists(db):
        report(False, '%s: ran traced' % name, 'rc %d: %s' % (p.returncode, p.stderr[-1500:]))
        continue
    note = rows(db, "SELECT message FROM notes WHERE component = 'python'")
    report(bool(note) and note[0][0].startswith('on:'), '%s: Python frames on' % name, str(note))
    g = subprocess.run([gputrace, 'growth', '--json', db], capture_output=True, text=True, timeout=300)
    try:
        doc = json.loads(g.stdout)
    except ValueError:
        report(False, '%s: top growing site' % name, 'gputrace growth exited %d: %s' % (g.returncode, g.stderr))
        continue
    sites = doc.get('sites') or []
    top = sites[0] if sites else {}
    text = top.get('call_site', '')
    print('   %s: verdict %s, slope %s B/iteration; top site %s B/iteration: %s' % (
        name, doc.get('verdict'), doc.get('slope_bytes_per_iteration'), top.get('bytes_per_iteration'), text))
    print('   %s: frames %s' % (name, [f for f, k in zip(top.get('frames', []), top.get('frame_kinds', []))
                                     if k == 'python'][:6]))
    if mode == 'async':   # tensor level: the site that grows is the tensor kept
        report(text.startswith(want_text), '%s: top growing site names the line that makes the kept tensor' % name,
               'call site "%s", want "%s ..."' % (text[:160], want_text))
    else:   # segments: the site is the request that needed a new segment, and growth says so
        report(text.startswith('seed_001.py:') or text.startswith('backward: seed_001.py:'),
               '%s: top growing site names a line of seed_001.py' % name, 'call site "%s"' % text[:160])
        report(doc.get('sites_are_segments') is True, '%s: growth says its sites are segment requests' % name,
               'sites_are_segments %s' % doc.get('sites_are_segments'))
    if mode == 'async':
        main_tid = one(db, 'SELECT pid FROM processes')
        by = rows(db, """SELECT e.tid = ?1 AS main, count(*),
                         sum(EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                                     WHERE sf.stack_id = e.stack_id AND f.kind = 'python')),
                         sum(EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                                     WHERE sf.stack_id = e.stack_id AND f.function = '<backward>'))
                         FROM events_v e WHERE e.op = 'alloc' GROUP BY 1""", (main_tid,))
        other = [0, 0, 0]
        for is_main, n, with_py, marked in by:
            print('   %s: %s thread%s: %d allocations, %d with Python frames, %d of them the waiting thread\'s' % (
                name, 'main' if is_main else 'other (autograd)', '' if is_main else 's', n, with_py, marked))
            if not is_main:
                other = [n, with_py, marked]
        t = subprocess.run([gputrace, 'top', '--json', '--top', '100', db], capture_output=True, text=True, timeout=300)
        marked_sites = []
        try:
            for site in json.loads(t.stdout).get('by_bytes', []):
                if '<backward>' in site.get('frames', []):
                    marked_sites.append(site.get('call_site', ''))
        except ValueError:
            pass
        wrong = [c for c in marked_sites if not c.startswith(want_backward)]
        report(other[0] > 0 and other[2] >= 0.9 * other[0] and bool(marked_sites) and not wrong,
               '%s: autograd-thread allocations attributed to the line that called backward()' % name,
               '%d of %d autograd-thread allocations carry the waiting thread\'s frames; %d sites, %d not "%s": %s'
               % (other[2], other[0], len(marked_sites), len(wrong), want_backward, wrong[:2]))

# ---- PyTorch's own recorder, default allocator
RUNNER = r'''
import collections, json, runpy, sys, torch
torch.cuda.memory._record_memory_history(stacks='python')
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')
snap = torch.cuda.memory._snapshot()
want = int(sys.argv[sys.argv.index('--hidden') + 1]) * 32 * 4
lines = collections.Counter()
for seg in snap['segments']:
    for b in seg['blocks']:
        if b.get('state') == 'active_allocated' and b.get('size') == (want + 511) // 512 * 512:
            seed = [f for f in b.get('frames', []) if f.get('filename', '').endswith('seed_001.py')]
            # innermost first unless <module> (always outermost) comes first
            if seed and seed[0].get('name') == '<module>':
                seed.reverse()
            lines['%s:%s' % (seed[0]['line'], seed[0]['name']) if seed else 'none'] += 1
print('SNAPSHOT ' + json.dumps(lines))
'''
p = subprocess.run([sys.executable, '-c', RUNNER, seed, 'leak', '--steps', str(a.steps), '--hidden', str(a.hidden)],
                   capture_output=True, text=True, timeout=600)
got = [l for l in p.stdout.splitlines() if l.startswith('SNAPSHOT ')]
lines = json.loads(got[0][9:]) if got else {}
best = max(lines, key=lines.get) if lines else None
report(best is not None and best.split(':')[0] == str(relu_line),
       "torch snapshot (stacks='python'): the kept blocks' innermost seed_001.py line is the same",
       'blocks by line: %s (want %d); rc %d %s' % (lines, relu_line, p.returncode, p.stderr[-500:] if not got else ''))

# ---- step time, cudaMallocAsync, untraced vs traced with Python stacks
# (--runs 0: left to bench_cost.py, which measures it with intervals)
if a.runs:
    step = os.path.join(here, 'transformer_step.py')
    plan = [c for c in ('untraced', 'traced') for _ in range(a.runs)]
    random.shuffle(plan)
    times = {'untraced': [], 'traced': []}
    py_frac = None
    for i, cfg in enumerate(plan):
        db = os.path.join(a.out, 'step-%d.db' % i)
        env = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync', 'GPUTRACE_CUPTI': '0', 'GPUTRACE_QUIET': '1'}
        p = run([sys.executable, step, '--steps', str(a.step_count), '--from', '10'],
                shim=shim if cfg == 'traced' else None, db=db, env_extra=env)
        c = counters(p.stdout)
        if p.returncode != 0 or 'step_ms' not in c:
            report(False, 'transformer step %s run %d' % (cfg, i), p.stderr[-800:])
            continue
        times[cfg].append(c['step_ms'])
        if cfg == 'traced' and py_frac is None:
            n, with_py = rows(db, """SELECT count(*), sum(EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f
                                     ON f.id = sf.frame_id WHERE sf.stack_id = e.stack_id AND f.kind = 'python'))
                                     FROM events_v e WHERE e.op = 'alloc'""")[0]
            py_frac = (n, with_py)
        if cfg == 'traced':
            os.remove(db)
    mu, mt = median(times['untraced']), median(times['traced'])
    print('   step ms untraced %s' % ['%.2f' % t for t in times['untraced']])
    print('   step ms traced   %s' % ['%.2f' % t for t in times['traced']])
    if py_frac:
        print('   traced run: %d allocations, %d with Python frames' % py_frac)
    report(len(times['traced']) == a.runs and len(times['untraced']) == a.runs and mt <= 1.05 * mu,
           'transformer step, cudaMallocAsync, Python + native stacks, CUPTI off: <= 5% over untraced',
           'median %.3f ms vs %.3f ms untraced: ratio %.3f (%d + %d runs)' % (
               mt, mu, mt / mu if mu else float('nan'), len(times['traced']), len(times['untraced'])))
finish()
