"""GPU check of the per-thread stack memo (shim/unwind_memo.c) on PyTorch:
with GPUTRACE_UNWIND_CHECK=1 every stack the memo gives is unwound by
libunwind too, and the trace's `stacks` note counts the differences. Under
both allocators, the transformer step (hundreds of allocation paths a step,
on the main thread and PyTorch's autograd thread) and seed_001.py: PASS when
none differed (under the default allocator seed_001.py's few segment
requests each come from a new stack position: nothing from the memo).
usage: check_unwind_memo.py --build BUILD --out DIR"""
import argparse
import os
import re
import sys

from gpucheck import finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
programs = {'transformer': [os.path.join(here, 'transformer_step.py'), '--steps', '20'],
            'seed_001': [os.path.join(here, 'seed_001.py'), 'leak']}
for name, argv in programs.items():
    for alloc in ('default', 'async'):
        env = {'GPUTRACE_UNWIND_CHECK': '1', 'GPUTRACE_CUPTI': '0', 'GPUTRACE_QUIET': '1'}
        if alloc == 'async':
            env['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'
        db = os.path.join(a.out, 'memo-%s-%s.db' % (name, alloc))
        p = run([sys.executable] + argv, shim=shim, db=db, env_extra=env, timeout=300)
        notes = [m for (m,) in rows(db, "SELECT message FROM notes WHERE component = 'stacks'")] if os.path.exists(db) else []
        m = [x for x in (re.match(r'unwind check: (\d+) stacks taken from the memo, (\d+) differed', n) for n in notes) if x]
        ok = p.returncode == 0 and len(m) == 1 and int(m[0].group(2)) == 0
        report(ok, '%s/%s: every memo stack equals libunwind\'s' % (name, alloc),
               '%s%s; rc %d %s' % (notes, ' (the memo was not used: each allocation came from a new stack position)'
                                   if m and int(m[0].group(1)) == 0 else '', p.returncode,
                                   p.stderr[-400:] if p.returncode else ''))
finish()
