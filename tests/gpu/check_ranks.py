"""GPU check of multi-rank traces (issue 17): a DDP job started by torchrun
(--nproc_per_node=2, localhost only) with LD_PRELOAD on torchrun itself, so
its workers inherit it, one rank made to leak. Checks:
  - one trace per worker (torchrun, which never touches CUDA, leaves none),
    each recording its rank, local rank, world size 2 and host;
  - gputrace ranks names the leaking rank: highest peak, and growing while
    the other is stable;
  - per rank, the trace's device bytes at the end equal that rank's
    memory_reserved() plus the memory the ledger names by library (cuBLAS,
    NCCL, ...), nothing else: memory mapped from the other rank (NCCL's peer
    buffers, CUDA IPC) is not counted as this rank's, so nothing is counted
    twice between the ranks;
  - with --two-gpus (NCCL, rank r on GPU r): NCCL's own buffers are in the
    ledger under NCCL, and what was imported from the peer is shown apart;
  - without: a CUDA tensor shared with a spawned child (torch.multiprocessing,
    ipc_share.py) is in the child's trace as opened through IPC, with the size
    of the parent's segment, and not among the child's device bytes.
Default: the gloo backend, both ranks on GPU 0 (NCCL refuses two ranks on
one device). About 1 minute; --two-gpus needs a machine with two GPUs.
usage: check_ranks.py --build BUILD --out DIR [--two-gpus] [--steps N]"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys

from gpucheck import finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--two-gpus', action='store_true', help='NCCL, one rank per GPU (needs 2 GPUs)')
ap.add_argument('--steps', type=int, default=30)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.join(a.build, 'analyzer', 'gputrace')
backend = 'nccl' if a.two_gpus else 'gloo'
out = os.path.abspath(os.path.join(a.out, backend))
shutil.rmtree(out, ignore_errors=True)   # traces of an earlier run would be read as ranks too
os.makedirs(out)
LEAK_RANK, LEAK_MIB = 1, 4

with socket.socket() as s:   # a free port on localhost for the rendezvous
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
cmd = [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=2', '--nnodes=1', '--master_addr=127.0.0.1',
       '--master_port=%d' % port, os.path.join(here, 'ddp_train.py'), '--out', out, '--backend', backend,
       '--steps', str(a.steps), '--leak-rank', str(LEAK_RANK), '--leak-mib', str(LEAK_MIB)]
env = {'GPUTRACE_QUIET': '1', 'OMP_NUM_THREADS': '1'}
p = run(cmd, shim=shim, db=os.path.join(out, 'rank%r-%p.db'), env_extra=env, timeout=300)
report(p.returncode == 0, '%s: torchrun job ran traced' % backend,
       'exit %d in %.1f s%s' % (p.returncode, p.wall, '' if p.returncode == 0 else ': ' + (p.stdout + p.stderr)[-3000:]))
if p.returncode != 0:
    finish()
counters = {}
for f in glob.glob(os.path.join(out, 'rank*.json')):
    c = json.load(open(f))
    counters[c['rank']] = c
dbs = sorted(glob.glob(os.path.join(out, '*.db')))
procs = {db: rows(db, 'SELECT rank, local_rank, world_size, host, pid FROM processes')[0] for db in dbs}
print('   traces: %s' % procs)
report(len(dbs) == 2 and sorted(r[0] for r in procs.values()) == [0, 1] and
       all(r[1] == r[0] and r[2] == 2 and r[3] == socket.gethostname() for r in procs.values()) and
       {r[4] for r in procs.values()} == {c['pid'] for c in counters.values()},
       '%s: one trace per worker with rank, local rank, world size and host' % backend,
       '%d traces: %s' % (len(dbs), sorted(procs.values())))

r = subprocess.run([gputrace, 'ranks', '--json'] + dbs, capture_output=True, text=True)
if r.returncode != 0:
    report(False, '%s: gputrace ranks' % backend, r.stderr)
    finish()
j = json.loads(r.stdout)
print(subprocess.run([gputrace, 'ranks'] + dbs, capture_output=True, text=True).stdout)
peaks = {x['rank']: x['peak_bytes'] for x in j['ranks']}
report(j['max_peak_rank'] == LEAK_RANK and j['growing_ranks'] == [LEAK_RANK],
       '%s: ranks names the leaking rank %d' % (backend, LEAK_RANK),
       'max_peak_rank %s, growing %s, verdicts %s, slopes %s, peaks %s, skew %s' % (
           j['max_peak_rank'], j['growing_ranks'], [x['growth_verdict'] for x in j['ranks']],
           [x['slope_bytes_per_iteration'] for x in j['ranks']], peaks, j['peak_skew_bytes']))
report(all(x['iterations'] == a.steps for x in j['ranks']) and len(j['iterations']) == a.steps,
       '%s: %d iterations per rank, matched by index' % (backend, a.steps),
       '%s per rank, %d matched' % ([x['iterations'] for x in j['ranks']], len(j['iterations'])))

for x in j['ranks']:
    rank, db = x['rank'], x['file']
    c = counters.get(rank)
    s = subprocess.run([gputrace, 'summary', '--json', '--memory', 'device', db], capture_output=True, text=True)
    if s.returncode != 0 or c is None:
        report(False, '%s rank %d: summary and counters' % (backend, rank), s.stderr + ' counters %s' % c)
        continue
    sm = json.loads(s.stdout)
    level = [lv for lv in sm['peaks'] if lv['memory'] == 'device' and lv['device'] == c['device']]
    final = level[0]['final_bytes'] if level else None
    led = [d for d in sm['ledger'] if d['device'] == c['device']]
    buckets = {}
    if led:
        ex = {i['instant']: i for i in led[0]['instants']}['exit']
        buckets = {b['name']: (b['kind'], b['bytes']) for b in ex['buckets']}
    libs = {n: b for n, (k, b) in buckets.items() if k == 'library'}
    framework = buckets.get('framework allocator', ('', 0))[1]
    direct = buckets.get("program's direct allocations", ('', 0))[1]
    print('   rank %d: device final %s, reserved %d, framework %d, libraries %s, direct %d, imported at end %s' % (
        rank, final, c['reserved'], framework, libs, direct, sm.get('imported_at_end')))
    report(framework == c['reserved'], '%s rank %d: framework allocator bucket == memory_reserved()' % (backend, rank),
           '%d vs %d' % (framework, c['reserved']))
    report(final == c['reserved'] + sum(libs.values()),
           '%s rank %d: device bytes == memory_reserved() + named library memory' % (backend, rank),
           '%s == %d + %d (direct, unnamed: %d)' % (final, c['reserved'], sum(libs.values()), direct))
    if a.two_gpus:
        report(libs.get('NCCL', 0) > 0, '%s rank %d: NCCL\'s buffers labelled NCCL' % (backend, rank),
               '%s bytes; imported from the peer, apart: %s' % (libs.get('NCCL'), sm.get('imported_at_end')))

if not a.two_gpus:
    # CUDA IPC under PyTorch: a tensor shared with a spawned child is the parent's memory, not the child's
    ipc = os.path.join(out, 'ipc')
    os.makedirs(ipc, exist_ok=True)
    p = run([sys.executable, os.path.join(here, 'ipc_share.py'), ipc], shim=shim, db=os.path.join(ipc, 'ipc-%p.db'),
            env_extra={'GPUTRACE_QUIET': '1'}, timeout=300)
    try:
        parent, kid = (json.load(open(os.path.join(ipc, n + '.json'))) for n in ('parent', 'child'))
    except OSError as e:
        parent = kid = None
        report(False, 'ipc: workload ran', 'exit %d, %s: %s' % (p.returncode, e, (p.stdout + p.stderr)[-2000:]))
    if kid:
        db = os.path.join(ipc, 'ipc-%d.db' % kid['pid'])
        opened = rows(db, "SELECT api, size FROM events_v WHERE memory = 'imported' AND op = 'alloc' AND result = 0")
        s = subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True)
        sm = json.loads(s.stdout) if s.returncode == 0 else {}
        final = sum(lv['final_bytes'] for lv in sm.get('peaks', []) if lv['memory'] == 'device')
        imp = sm.get('imported_at_end', {})
        print('   ipc: parent shared a %s-byte segment; child opened %s, reserved %d, device final %d, imported %s' % (
            parent['segment_bytes'], opened, kid['reserved'], final, imp))
        report(len(opened) == 1 and opened[0][1] == parent['segment_bytes'] and imp.get('ipc_bytes') == opened[0][1],
               'ipc: the child\'s trace shows the parent\'s segment opened through IPC, its size from the driver',
               '%s vs segment %s, at end %s' % (opened, parent['segment_bytes'], imp))
        report(kid['sum'] == 16 << 20 and final < parent['segment_bytes'],
               'ipc: the opened segment is not the child\'s device bytes',
               'child device bytes %d (its reserved %d), segment %s' % (final, kid['reserved'], parent['segment_bytes']))
finish()
