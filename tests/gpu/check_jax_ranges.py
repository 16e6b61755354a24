"""GPU check: XLA's own NVTX ranges are not a JAX program's iterations (issue
11 part 4). Once an NVTX tool is attached (the shim is one), XLA creates the
domain "TSL" and pushes a range for each executable it runs and each of its
annotations; those are the library's calls, not the program's loop.
sweep_frameworks.py's JAX MLP (two jitted calls a step: data and step), --steps
steps, under JAX's default (preallocation) and its platform allocator:
- the trace's ranges by domain (what XLA really pushes, shown);
- no iteration comes from a library domain; the detection line names the
  ranges passed over;
- under the platform allocator, found automatically, the iterations are the
  steps run, the first of which may stand apart (its execution's buffers come
  from another call path than the later ones'); under preallocation the
  device sees no per-step allocations: the steps come from their kernels,
  and the first window of kernels (sampled) must reach past XLA's
  compilation of the step (session 38: its pauses used the 5 s up, and the
  20 steps 4 s later were never recorded);
- under XLA_PYTHON_CLIENT_MEM_FRACTION=0.3, a pool of 30% of the device: growth
  unknown and leaks not told, as under the default's 75%; under
  XLA_PYTHON_CLIENT_PREALLOCATE=false alone, the BFC allocator's regions the
  same (its arrays lie inside them).
About 1 minute.
usage: check_jax_ranges.py --build BUILD --out DIR [--steps 20]"""
import argparse
import os

from gpucheck import report_json, finish, fresh_db, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=20)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)

MODES = (('prealloc', {}),
         # processes sharing a GPU: a pool of 30% (session 40: a pool was half the device or more)
         ('fraction', {'XLA_PYTHON_CLIENT_MEM_FRACTION': '0.3'}),
         # the BFC allocator growing by regions: its arrays inside them as well
         ('growing', {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}),
         ('platform', {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false', 'XLA_PYTHON_CLIENT_ALLOCATOR': 'platform'}))
for name, env in MODES:
    db = fresh_db(a.out, 'jax-' + name)
    env = dict(env, GPUTRACE_QUIET='1')
    argv = ['python3', os.path.join(here, 'sweep_frameworks.py'), '--framework', 'jax-mlp', '--batch-size', '64',
            '--steps', str(a.steps)]
    p = run(argv, shim=shim, db=db, env_extra=env)
    if p.returncode != 0 or not os.path.exists(db):
        report(False, '%s: runs' % name, 'rc %d: %s' % (p.returncode, p.stderr[-300:]))
        continue
    doms = rows(db, "SELECT coalesce(domain, '(default)'), count(*), count(DISTINCT message) FROM ranges"
                    " GROUP BY 1 ORDER BY 2 DESC")
    print('   %s: ranges by domain: %s' % (name, doms), flush=True)
    for dom, n, _ in doms[:3]:
        top = rows(db, "SELECT message, depth, count(*) FROM ranges WHERE coalesce(domain, '(default)') = ?"
                       " GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 6", (dom,))
        print('     %s: %s' % (dom, [(m[:90], d, c) for m, d, c in top]), flush=True)
    d = report_json(gputrace, 'summary', db)
    how = d.get('iteration_detection') or ''
    print('   %s: iterations %s from %s (%s)' % (name, d.get('iterations'), d.get('iteration_source'), how[:300]),
          flush=True)
    lib = [dom for dom, _, _ in doms if dom != '(default)']
    report(d.get('iteration_source') != 'nvtx' and (not lib or 'library NVTX domains' in how),
           '%s: no iteration from XLA\'s ranges, and the report says they were passed over' % name,
           'source %s; domains %s' % (d.get('iteration_source'), lib))
    if name == 'platform':
        # the first execution of a jitted step runs from another call path
        # than the later ones (its buffers' call sites differ) and holds fewer
        # buffers: it may stand before the pattern, with the compilation's
        # allocations, not as a step (session 35: 19 found for 20)
        report(d.get('iteration_source') == 'auto' and a.steps - 1 <= d.get('iterations', 0) <= a.steps,
               '%s: found automatically, the iterations are the steps run (the first may stand apart)' % name,
               'found %s from %s for %d steps' % (d.get('iterations'), d.get('iteration_source'), a.steps))
    if name == 'fraction':
        total = rows(db, 'SELECT total_bytes FROM devices WHERE id = 0')[0][0]
        pool = d.get('preallocated_bytes') or 0
        report(d.get('growth_verdict') == 'unknown' and d.get('leaks_told') is False and 0.25 * total < pool < 0.35 * total,
               'fraction: a pool of 30%% of the device hides its arrays as well: growth unknown, leaks not told',
               'verdict %s, leaks told %s, preallocated %s of %s' % (d.get('growth_verdict'), d.get('leaks_told'),
                                                                   pool, total))
    if name == 'growing':
        report(d.get('growth_verdict') in ('unknown', 'growing') and (d.get('preallocated_bytes') or 0) > 0,
               'growing: the BFC allocator\'s regions are taken for its pool: growth not "stable"',
               'verdict %s, preallocated %s' % (d.get('growth_verdict'), d.get('preallocated_bytes')))
    if name == 'prealloc':
        # the steps' kernels: after XLA's compilation of the step ended
        compiled = rows(db, "SELECT max(end_ns) FROM ranges WHERE message LIKE 'XlaCompile:#module=jit_step#%'")[0][0]
        after = rows(db, 'SELECT count(*) FROM kernels WHERE start_ns > ?', (compiled or 0,))[0][0]
        closed = rows(db, "SELECT min(t_ns) FROM notes WHERE component = 'kernels' AND message = 'paused'")[0][0]
        print('   prealloc: compilation of jit_step ended at %s ns; %d kernels after it; first window closed at %s ns'
              % (compiled, after, closed), flush=True)
        report(compiled is not None and after >= a.steps,
               'prealloc: the first kernel window reaches past the compilation: the steps\' kernels are recorded',
               '%d kernels after the compilation' % after)
        report(d.get('iteration_source') == 'auto' and a.steps - 2 <= d.get('iterations', 0) <= a.steps,
               'prealloc: iterations found from the steps\' kernels',
               'found %s from %s for %d steps' % (d.get('iterations'), d.get('iteration_source'), a.steps))
        report(d.get('growth_verdict') == 'unknown' and (d.get('preallocated_bytes') or 0) > 0,
               'prealloc: growth unknown inside the preallocated pool (not "stable")',
               'verdict %s, preallocated %s' % (d.get('growth_verdict'), d.get('preallocated_bytes')))
finish()
