"""GPU checks of pinned host memory the program page-locks itself
(cudaHostRegister, cuMemHostRegister): (a) an `nvcc -cudart shared -lcuda`
program: each call one event with the range and result it saw (the runtime's
call reaches the driver inside it and is not counted twice), the range left
registered is the host memory live at exit, a refused registration is no
out-of-memory failure; (b) PyTorch's pinned tensors under its default pinned
allocator (cudaHostAlloc) and under pinned_use_cuda_host_register:True
(malloc + cudaHostRegister): the trace's live pinned host bytes at exit equal
what PyTorch's host allocator says it holds. Output and exit codes compared
with and without the shim.
usage: check_host_register.py --build BUILD --out DIR"""
import argparse
import json
import os
import re
import subprocess

from gpucheck import finish, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)


def masked(s):   # host addresses differ from run to run (ASLR)
    return re.sub(r'0x[0-9a-f]+', 'ADDR', s)


exe = os.path.join(a.out, 'host_register')
subprocess.run(['nvcc', '-g', '-cudart', 'shared', '-o', exe, os.path.join(here, 'host_register.cu'), '-lcuda'],
               check=True)
db = os.path.join(a.out, 'host_register.db')
bare, traced = run([exe]), run([exe], shim=shim, db=db)
report(bare.returncode == traced.returncode == 0 and masked(bare.stdout) == masked(traced.stdout),
       'nvcc program: output (addresses masked) and exit code identical',
       'rc %d/%d: %s' % (bare.returncode, traced.returncode, masked(traced.stdout).splitlines()))
calls = [(w[0], int(w[1], 16), int(w[2]), int(w[3])) for w in map(str.split, traced.stdout.splitlines()) if len(w) == 4]
got = rows(db, 'SELECT api, coalesce(ptr, 0), size, result FROM events_v ORDER BY id')
print('   program: %s' % calls)
print('   trace:   %s' % got)
ok_calls = [c for c in calls if c[3] == 0]
report([g for g in got if g[3] == 0] == ok_calls and
       [(g[0], g[3]) for g in got if g[3]] == [(c[0], c[3]) for c in calls if c[3]],
       'nvcc program: each registration and unregistration one event, range and result as the program saw',
       '%d calls, %d refused (%s)' % (len(calls), sum(1 for c in calls if c[3]), [c[3] for c in calls if c[3]]))
live = rows(db, 'SELECT ptr, size, memory FROM allocations WHERE free_ns IS NULL')
report(live == [(calls[-1][1], calls[-1][2], 'host')], 'nvcc program: the range left registered is the host memory live at exit',
       str(live))
o = subprocess.run([gputrace, 'oom', '--json', db], capture_output=True, text=True)
d = json.loads(o.stdout) if o.returncode == 0 else {}
report(o.returncode == 0 and d.get('failures') == [] and
       [x['api'] for x in d.get('other_failures', [])] == [c[0] for c in calls if c[3] and 'Unregister' not in c[0]],
       'nvcc program: a refused registration is a failed call, not out of memory',
       str(d.get('other_failures')) if o.returncode == 0 else o.stderr.strip())

for mode, conf in (('cudaHostAlloc', None), ('cudaHostRegister', 'pinned_use_cuda_host_register:True')):
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    prog = ['python3', os.path.join(here, 'pinned_torch.py')]
    db = os.path.join(a.out, 'pinned-%s.db' % mode)
    bare, traced = run(prog, env_extra=env), run(prog, shim=shim, db=db, env_extra=env)
    report(bare.returncode == traced.returncode == 0 and bare.stdout.splitlines()[-1:] == traced.stdout.splitlines()[-1:],
           'torch pinned (%s): output and exit code identical' % mode,
           'rc %d/%d %s' % (bare.returncode, traced.returncode, traced.stderr[-500:] if traced.returncode else ''))
    if traced.returncode:
        continue
    stats = {w[1]: int(w[2]) for w in map(str.split, traced.stdout.splitlines()) if w[:1] == ['host_stat']}
    print('   %s: torch host stats %s' % (mode, {k: v for k, v in stats.items() if 'current' in k or 'bytes' in k}))
    print('   %s: api counts %s' % (mode, rows(db, 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api ORDER BY api')))
    # PyTorch's host allocator's blocks: live host allocations whose stack passes through it (a 4-byte
    # pinned buffer of another path, .item()'s, is in the trace beside them and not in its counters)
    live = rows(db, """SELECT a.size, a.api, (SELECT count(*) FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                         WHERE sf.stack_id = a.alloc_stack_id AND f.function LIKE '%HostAllocator%')
                         FROM allocations a WHERE a.memory = 'host' AND a.free_ns IS NULL""")
    print('   %s: live pinned host allocations (size, api, frames in the host allocator): %s' % (mode, live))
    ours = [size for size, api, n in live if n]
    apis = {api for size, api, n in live}
    want_api = 'cudaHostRegister' if conf else 'cudaHostAlloc'
    allocated, count = stats.get('allocated_bytes.current'), stats.get('allocations.current')
    # On an H200 (torch 2.11) the trace held one block more than torch's counters, of 4 bytes, made under the
    # host allocator's frames too (.item()'s staging buffer; its counters also read active_bytes.freed -2):
    # the bytes and the count must reconcile exactly, the difference being such blocks alone.
    tiny = [b for b in ours if b < 512]
    report(apis == {want_api} and allocated is not None and
           (sum(ours), len(ours)) in ((allocated, count), (allocated + sum(tiny), count + len(tiny))),
           '%s: live pinned host memory of the host allocator at exit == PyTorch host allocated_bytes.current '
           'and allocations.current (blocks under 512 B its counters skip named)' % mode,
           'trace %d B in %d blocks by %s, torch %s B in %s; blocks its counters skip: %s' % (
               sum(ours), len(ours), sorted(apis), allocated, count, tiny if (sum(ours), len(ours)) != (allocated, count) else 'none'))
finish()
