"""GPU checks of the analyzer on the seeds' own PyTorch scripts, traced with
LD_PRELOAD only, under the default caching allocator and under
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync:
- seed_001.py leak / fixed: `gputrace growth` says growing / stable, with the
  leak's slope equal to the tensor it retains per step, with NVTX step ranges
  and unmarked (iterations found automatically); `gputrace leaks` printed;
- seed_000.py (batch sizes 64, 8, 32, 4, NVTX ranges "step N bs=B"): the
  per-batch peaks of `gputrace peak` equal PyTorch's own per-batch peaks
  (reset_peak_memory_stats before each batch);
- the overall peak equals PyTorch's counter: default allocator, device
  bytes == max_memory_reserved(); cudaMallocAsync, pool bytes ==
  max_memory_allocated().
Every script ends with os._exit right after printing its counters, so the
trace and the counters describe the same moment.
usage: check_seeds.py --build BUILD --out DIR [--steps N] [--hidden H]"""
import argparse
import json
import os
import subprocess

from gpucheck import counters, finish, one, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=40)
ap.add_argument('--hidden', type=int, default=131072, help='seed_001 hidden width: 32*H*4 bytes retained per step')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
MODES = (('default', None, 'device', 'max_reserved'), ('async', 'backend:cudaMallocAsync', 'pool', 'max_allocated'))


def analyze(cmd, db, *extra):
    """gputrace CMD --json EXTRA DB -> (exit status, parsed JSON or None, stderr)."""
    p = subprocess.run([gputrace, cmd, '--json'] + list(extra) + [db], capture_output=True, text=True, timeout=600)
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        doc = None
    return p.returncode, doc, p.stderr.strip()


def traced(name, argv, env):
    db = os.path.join(a.out, name + '.db')
    if os.path.exists(db):
        os.remove(db)
    p = run(argv, shim=shim, db=db, env_extra=env)
    ok = p.returncode == 0 and os.path.exists(db)
    report(ok, '%s: ran traced' % name, 'rc %d; %s' % (p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else ''))
    if not ok:
        print(p.stdout[-2000:], p.stderr[-3000:])
    return (db, counters(p.stdout)) if ok else (None, None)



def outside(db, level, t):
    """Bytes of device memory live at time t that PyTorch's allocator did not
    allocate (cuBLAS's own cuMemAlloc_v2 workspaces, seen since the driver API
    is traced): part of the trace's device peak, not of max_memory_reserved().
    Pool memory (the cudaMallocAsync backend) has no such part."""
    if level != 'device':
        return 0
    return one(db, "SELECT coalesce(sum(size), 0) FROM allocations WHERE memory = 'device' AND api != 'cudaMalloc' "
                   "AND alloc_ns <= ? AND (free_ns IS NULL OR free_ns > ?)", (t, t))

def frames(site, n=4):
    return ' <- '.join(site.get('frames', [])[:n])


for mode, conf, level, counter in MODES:
    env = {'PYTORCH_CUDA_ALLOC_CONF': conf} if conf else {}
    # the retained tensor's size, rounded as each allocator rounds it: the
    # default one gives a >= 10 MiB request its own segment rounded to 2 MiB;
    # cudaMallocAsync is asked for the tensor's bytes rounded to 512
    retained = 32 * a.hidden * 4
    want_slope = -(-retained // (2 << 20)) * (2 << 20) if mode == 'default' else -(-retained // 512) * 512
    for variant in ('leak', 'fixed'):
        for marking in ('nvtx', 'none'):
            name = 'seed001-%s-%s-%s' % (mode, variant, marking)
            argv = ['python3', os.path.join(here, 'seed_001.py'), variant, '--steps', str(a.steps),
                    '--hidden', str(a.hidden), '--hard-exit'] + (['--nvtx'] if marking == 'nvtx' else [])
            db, c = traced(name, argv, env)
            if not db:
                continue
            print('   %s counters: %s' % (name, c))
            rc, g, err = analyze('growth', db)
            if g is None:
                report(False, '%s: growth verdict' % name, 'gputrace growth exited %d: %s' % (rc, err))
                continue
            print('   %s growth: memory %s, %s; slope %s B/iteration; live at ends %s' % (
                name, g.get('memory'), g.get('iteration_detection'), g.get('slope_bytes_per_iteration'),
                g.get('live_bytes_at_iteration_end', [])[:8]))
            for s in g.get('sites', [])[:3]:
                print('      %s B/iteration  %s' % (s.get('bytes_per_iteration'), frames(s)))
            want = 'growing' if variant == 'leak' else 'stable'
            report(g['verdict'] == want, '%s: growth verdict %s' % (name, want),
                   'verdict %s over %s iterations (%s), level %s' % (g['verdict'], g['iterations'], g['iteration_source'], g.get('memory')))
            if variant == 'leak' and mode == 'default' and retained < (10 << 20):
                print('   %s slope not compared: a %d-byte tensor shares the default allocator\'s segments '
                      '(use --hidden >= %d)' % (name, retained, (10 << 20) // 128))
            elif variant == 'leak':
                slope = g['slope_bytes_per_iteration'] or 0
                report(abs(slope - want_slope) <= 0.01 * want_slope, '%s: slope within 1%% of the retained tensor' % name,
                       'slope %s, retained %d (%d as the allocator rounds it)' % (slope, retained, want_slope))
            rc, lk, err = analyze('leaks', db)
            if lk:
                # default allocator: what is live at os._exit is its segments,
                # labelled cached (the growth verdict names the leak); async
                # backend: tensors held at exit are leaks, by call site
                print('   %s leaks: total %s B in %s, cached %s B in %s' % (
                    name, lk.get('total_bytes'), lk.get('total_count'), lk.get('cached_bytes'), lk.get('cached_count')))
                for s in lk.get('sites', [])[:3]:
                    own = s['frames'][s.get('allocator_frames', 0):]
                    print('      %s B in %s  %s' % (s['bytes'], s['count'], ' <- '.join(own[:3])))
                if mode == 'async' and variant == 'leak':
                    top = lk['sites'][0] if lk.get('sites') else {'bytes': 0, 'count': 0}
                    # held to exit and not a leak: only memory outside the pool (a
                    # library handle's workspace: cuBLAS's 128 MiB); a pool
                    # allocation live at exit is a tensor held, never cached
                    pooled = [s for s in lk.get('cached_sites', []) if s.get('memory') == 'pool']
                    report(top['bytes'] >= (a.steps - 1) * want_slope and not pooled,
                           '%s: the retained tensors are the largest leak site, none of the pool called cached' % name,
                           'top site %d B in %d allocations, %d steps x %d retained; cached %s (of the pool: %s)' % (
                               top['bytes'], top['count'], a.steps, want_slope, lk.get('cached_bytes'), pooled))
            rc, pk, err = analyze('peak', db, '--memory', level)
            if pk is not None:
                other = outside(db, level, pk['peak_time_ns'])
                report(pk['peak_bytes'] - other == c[counter], '%s: peak %s bytes == %s() + other libraries\' device bytes' % (name, level, 'torch.cuda.' + counter.replace('max_', 'max_memory_')),
                       'trace %d - %d outside PyTorch\'s allocator = %d, torch %d (diff %d)' % (pk['peak_bytes'], other, pk['peak_bytes'] - other, c[counter], pk['peak_bytes'] - other - c[counter]))
            else:
                report(False, '%s: peak' % name, 'gputrace peak exited %d: %s' % (rc, err))

    # seed 000: the batch sequence, per-batch peaks against PyTorch's
    name = 'seed000-%s' % mode
    db, c = traced(name, ['python3', os.path.join(here, 'seed_000.py'), '--nvtx', '--hard-exit'], env)
    if db:
        print('   %s counters: %s' % (name, c))
        rc, pk, err = analyze('peak', db, '--memory', level)
        if pk is None:
            report(False, '%s: peak' % name, 'gputrace peak exited %d: %s' % (rc, err))
            continue
        its = pk['iterations']
        got = [(it['batch_size'], it['peak_bytes'] - outside(db, level, it['peak_time_ns'])) for it in its]
        torch_peaks = [(c['iter%d_bs' % k], c['iter%d_%s' % (k, counter)]) for k in range(4) if 'iter%d_bs' % k in c]
        print('   %s per batch (batch size, trace peak less bytes outside the allocator): %s' % (name, got))
        print('   %s per batch (batch size, torch %s): %s' % (name, counter, torch_peaks))
        print('   %s fit: %s; max batch size %s of %s device bytes' % (name, pk.get('fit'), pk.get('max_batch_size'), pk.get('device_total_bytes')))
        report(pk.get('iteration_source') == 'nvtx' and [b for b, _ in got] == [64, 8, 32, 4],
               '%s: 4 NVTX iterations with batch sizes 64 8 32 4' % name, '%s %s' % (pk.get('iteration_source'), [b for b, _ in got]))
        report(got == torch_peaks, '%s: per-batch peak %s bytes == torch per-batch %s()' % (name, level, counter.replace('max_', 'max_memory_')),
               'diffs %s' % [g[1] - t[1] for g, t in zip(got, torch_peaks)])
        report(pk['peak_bytes'] - outside(db, level, pk['peak_time_ns']) == max(p for _, p in torch_peaks) if torch_peaks else False,
               '%s: overall peak == max of the per-batch torch peaks' % name, 'trace %d' % pk['peak_bytes'])
        rc, sm, err = analyze('summary', db)
        if sm:
            print('   %s summary: iterations %s (%s), peaks %s' % (name, sm.get('iterations'), sm.get('iteration_source'),
                  [(p.get('memory'), p.get('peak_bytes')) for p in sm.get('peaks', [])]))
finish()
