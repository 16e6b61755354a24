"""GPU check of the memory ledger (issue 11 part 1): train_mlp.py ended by
os._exit under the default allocator, backend:cudaMallocAsync and
expandable_segments, traced with LD_PRELOAD only. At the end the ledger's
buckets (framework allocator, pool reservation, libraries, direct, and the
CUDA context measured at the first NVML sample) must add up to NVML's figure
for the process within 1%; the framework bucket must equal
memory_reserved() where PyTorch reserves through traced calls.
usage: check_ledger.py --build BUILD --out DIR"""
import argparse
import json
import os
import subprocess

from gpucheck import counters, finish, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.join(a.build, 'analyzer', 'gputrace')
os.makedirs(a.out, exist_ok=True)
train = ['python3', os.path.join(here, 'train_mlp.py'), '--steps', '30', '--hard-exit']

# eager: CUDA loads every kernel module when the context is created, so the
# first sample already holds them; under the default (lazy) loading the driver
# takes memory for modules as kernels first run, after the first sample.
for mode, conf, loading in (('default', None, None), ('async', 'backend:cudaMallocAsync', None),
                            ('expandable', 'expandable_segments:True', None), ('default-eager', None, 'EAGER'),
                            ('async-eager', 'backend:cudaMallocAsync', 'EAGER')):
    db = os.path.join(a.out, 'ledger-%s.db' % mode)
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    if loading:
        env['CUDA_MODULE_LOADING'] = loading
    p = run(train, shim=shim, db=db, env_extra=env)
    if p.returncode != 0:
        report(False, '%s: workload ran' % mode, p.stderr[-2000:])
        continue
    c = counters(p.stdout)
    s = subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True)
    if s.returncode != 0:
        report(False, '%s: summary --json' % mode, s.stderr)
        continue
    led = json.loads(s.stdout)['ledger']
    print('   %s samples: %s' % (mode, rows(db, 'SELECT t_ns, device, used_bytes, process_bytes FROM memory_samples')))
    print('   %s nvml note: %s' % (mode, rows(db, "SELECT message FROM notes WHERE component = 'nvml'")))
    if not led:
        report(False, '%s: a ledger' % mode, 'none')
        continue
    dev = led[0]
    x = {i['instant']: i for i in dev['instants']}['exit']
    buckets = {b['name']: b['bytes'] for b in x['buckets']}
    print('   %s: context %s, buckets %s, accounted %s, NVML process %s, unaccounted %s, other processes %s, free %s' % (
        mode, dev['context_bytes'], buckets, x['accounted_bytes'], x['nvml_process_bytes'], x['unaccounted_bytes'],
        x['other_processes_bytes'], x['free_bytes']))
    print('   %s torch: reserved %d, allocated %d' % (mode, c['reserved'], c['allocated']))
    ok = dev['per_process'] and x['unaccounted_bytes'] is not None and x['nvml_process_bytes']
    report(bool(ok) and abs(x['unaccounted_bytes']) <= 0.01 * x['nvml_process_bytes'],
           '%s: ledger at exit adds up to NVML\'s figure for the process within 1%%' % mode,
           'accounted %s, NVML %s, unaccounted %s (%.3f%%)' % (
               x['accounted_bytes'], x['nvml_process_bytes'], x['unaccounted_bytes'],
               100.0 * x['unaccounted_bytes'] / x['nvml_process_bytes'] if ok else float('nan')))
    if not mode.startswith('async'):
        report(buckets.get('framework allocator') == c['reserved'],
               '%s: framework allocator bucket == memory_reserved()' % mode,
               '%s vs %d' % (buckets.get('framework allocator'), c['reserved']))
    else:
        pool = [b for b in x['buckets'] if b['kind'] == 'pool']
        report(bool(pool) and pool[0]['in_use_bytes'] == c['allocated'],
               '%s: pool bucket in use == memory_allocated()' % mode,
               '%s vs %d (reservation known: %s)' % (pool[0]['in_use_bytes'] if pool else None, c['allocated'],
                                                     pool[0]['reservation_known'] if pool else None))
    report(dev['context_bytes'] is not None and dev['context_bytes'] > 0, '%s: context measured on its own' % mode,
           '%s bytes at %s ns' % (dev['context_bytes'], dev['context_measured_at_ns']))
finish()
