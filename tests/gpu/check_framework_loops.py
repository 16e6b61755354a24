"""GPU check: `leaks` and `growth` beyond PyTorch (framework_loops.py): a CuPy
loop (its memory pool) and a JAX loop (platform allocator: a buffer per
allocation; and as JAX starts: 75% preallocated), each keeping 1 MiB a step
at a line marked KEEP, or nothing; unmarked, and CuPy/JAX with NVTX ranges.
What each must say:
- the program runs as untraced (exit code and output);
- the iterations are the steps run;
- JAX keeping: growth is growing at the kept array's device memory a step
  (2 MiB pages of cuMemCreate) with the KEEP line as its top site; leaks names
  the KEEP line (JAX frees every buffer at teardown: as freed only after the
  loop);
- CuPy keeping: its pool holds the arrays in blocks; growth is growing at the
  kept bytes with its sites told as the pool's segments, or not growing and
  told as the pool's verdict; leaks calls the blocks cached, naming the pool;
- keeping nothing: growth is not growing and leaks lists nothing;
- JAX preallocated: no verdict of growth ("unknown", its pool out of sight)
  and leaks says the pool hides what it keeps.
About 3 minutes.
usage: check_framework_loops.py --build BUILD --out DIR [--steps 20] [--cases a,b]"""
import argparse
import os

from gpucheck import counters, finish, fresh_db, report, report_json, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=20)
ap.add_argument('--cases', default='')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)
PLATFORM = {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false', 'XLA_PYTHON_CLIENT_ALLOCATOR': 'platform'}
MIB = 1 << 20

BFC = {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}   # XLA's BFC allocator, growing as needed
CASES = [   # name, framework, env, keep MiB, nvtx, preallocated
    ('cupy-keep', 'cupy', {}, 1, False, False),
    ('cupy-none-keep', 'cupy:none', {}, 1, False, False),
    ('cupy-async-keep', 'cupy:async', {}, 1, False, False),
    ('jax-bfc-keep', 'jax:bfc', BFC, 1, False, False),
    ('jax-bfc-clean', 'jax:bfc', BFC, 0, False, False),
    ('cupy-clean', 'cupy', {}, 0, False, False),
    ('cupy-keep-nvtx', 'cupy', {}, 1, True, False),
    ('cupy-keep4', 'cupy', {}, 4, False, False),
    ('jax-platform-keep', 'jax', PLATFORM, 1, False, False),
    ('jax-platform-clean', 'jax', PLATFORM, 0, False, False),
    ('jax-platform-keep-nvtx', 'jax', PLATFORM, 1, True, False),
    ('jax-prealloc-keep', 'jax', {}, 1, False, True),
]
only = set(c for c in a.cases.split(',') if c)


def site_text(s):
    """the site's folded text, then every frame (a line folded away is still found)"""
    return (s.get('call_site') or '') + ' | ' + ' <- '.join(str(f) for f in (s.get('frames') or []))


for name, fw, env, keep, nvtx, prealloc in CASES:
    if only and name not in only:
        continue
    fw, _, how = fw.partition(':')   # cupy:none, cupy:async: CuPy's allocator; jax:bfc: XLA's BFC
    argv = ['python3', os.path.join(here, 'framework_loops.py'), '--framework', fw, '--steps', str(a.steps),
            '--keep-mib', str(keep)] + (['--nvtx'] if nvtx else []) + (
                ['--cupy-allocator', how] if fw == 'cupy' and how else [])
    bare = run(argv, env_extra=env)
    db = fresh_db(a.out, name)
    p = run(argv, shim=shim, db=db, env_extra=dict(env, GPUTRACE_QUIET='1'))
    report(p.returncode == bare.returncode == 0 and p.stdout == bare.stdout,
           '%s: output and exit code as untraced' % name,
           'rc %d/%d %s' % (p.returncode, bare.returncode, (p.stderr if p.returncode else '')[-300:]))
    if p.returncode or not os.path.exists(db):
        continue
    k = counters(p.stdout)
    line = 'framework_loops.py:%d' % k['keep_line']
    kept = k['kept_bytes']
    s = report_json(gputrace, 'summary', db)
    g = report_json(gputrace, 'growth', db)
    lk = report_json(gputrace, 'leaks', db)
    gs = g.get('sites') or []
    top = site_text(gs[0]) if gs else ''
    print('   %s: kept %d B; iterations %s from %s; growth %s %s B/it (%s), top %s; leaks %s B in %s (cached %s, '
          'cached in loop %s, held for run %s, at end %s, preallocated %s)' % (
              name, kept, s.get('iterations'), s.get('iteration_source'), g.get('verdict'),
              g.get('slope_bytes_per_iteration'), g.get('memory'), top[:120], lk.get('total_bytes'),
              lk.get('total_count'), lk.get('cached_bytes'), lk.get('cached_in_loop_bytes'),
              lk.get('held_for_run_bytes'), lk.get('at_end_bytes'), lk.get('preallocated_bytes')), flush=True)
    for kind in ('sites', 'cached_sites'):
        for x in (lk.get(kind) or [])[:2]:
            print('      %s %s B x %s: %s' % (kind, x.get('bytes'), x.get('count'), site_text(x)[:160]), flush=True)
    # JAX's first call of the jitted step compiles it: the compiler's allocations and autotuning
    # kernels interleave with that step's own, and the pattern found is of the steps after it
    first_compiles = fw == 'jax'
    report(s.get('iterations') == a.steps or (first_compiles and s.get('iterations') == a.steps - 1),
           '%s: the iterations are the steps run%s' % (name, ' (or all but the compiling first)' if first_compiles else ''),
           '%s from %s for %d steps: %s' % (s.get('iterations'), s.get('iteration_source'), a.steps,
                                            (s.get('iteration_detection') or '')[:200]))
    if prealloc:
        report(g.get('verdict') == 'unknown' and (g.get('preallocated_bytes') or 0) > 0,
               '%s: growth gives no verdict inside the preallocated pool' % name,
               'verdict %s, preallocated %s' % (g.get('verdict'), g.get('preallocated_bytes')))
        report((lk.get('preallocated_bytes') or 0) > 0 and not lk.get('total_bytes'),
               '%s: leaks says the pool hides what it keeps, and calls nothing a leak' % name,
               'preallocated %s, leaks %s' % (lk.get('preallocated_bytes'), lk.get('total_bytes')))
        continue
    cache = g.get('verdict_of_cache') or {}
    slope = g.get('slope_bytes_per_iteration') or 0
    if keep and (fw == 'cupy' and how or how == 'bfc'):
        # a trace per array (CuPy without its pool, or its async pool), or XLA's BFC allocator growing
        # as needed: what each says is printed (INFO); a per-array trace must name the KEEP line
        lines = [site_text(x) for k in ('sites', 'freed_after_loop_sites', 'cached_sites') for x in (lk.get(k) or [])]
        print('   INFO %s: growth %s %s B an iteration of %s, segments %s, verdict of cache %s; leaks %s B, freed after '
              'the loop %s B, cached in loop %s B by %s' % (
                  name, g.get('verdict'), slope, g.get('memory'), g.get('sites_are_segments'), cache.get('allocator'),
                  lk.get('total_bytes'), lk.get('freed_after_loop_bytes'), lk.get('cached_in_loop_bytes'),
                  lk.get('cached_in_loop_by')), flush=True)
        if how != 'bfc':
            report(g.get('verdict') == 'growing' and line in top,
                   '%s: growth per array (the setting growth names) is growing at %s' % (name, line),
                   '%s %s B an iteration, top %s' % (g.get('verdict'), slope, top[:160]))
            report(any(line in x for x in lines), '%s: leaks names %s' % (name, line),
                   'leaks %s B, freed after the loop %s B' % (lk.get('total_bytes'), lk.get('freed_after_loop_bytes')))
        else:
            # its regions made before the loop are told as a preallocating framework's pool (no verdict),
            # a verdict over them as the BFC allocator's, or growth as its segments
            report(g.get('verdict') == 'growing' and g.get('sites_are_segments') or
                   g.get('verdict') == 'unknown' and (g.get('preallocated_bytes') or 0) > 0 or
                   g.get('verdict') != 'growing' and cache.get('allocator', '').startswith('a BFC allocator'),
                   '%s: growth is the BFC allocator\'s, said so' % name,
                   '%s, segments %s, preallocated %s, verdict of cache %s' % (
                       g.get('verdict'), g.get('sites_are_segments'), g.get('preallocated_bytes'),
                       cache.get('allocator')))
    elif keep and fw == 'cupy':
        # CuPy's pool: arrays live in blocks it holds; device memory grows only when it needs
        # a new block, whose request may be another array's. Growing there is told as the pool's
        # segments; not growing, as the pool's verdict, with its setting for a trace per array
        ok = ((g.get('verdict') == 'growing' and abs(slope - keep * MIB) <= 0.1 * keep * MIB and
               g.get('sites_are_segments')) or
              (g.get('verdict') != 'growing' and cache.get('allocator') == "CuPy's memory pool"))
        report(ok, '%s: growth is the pool\'s, said so (growing at %d MiB an iteration as segments, or the '
               'pool\'s stable verdict)' % (name, keep),
               '%s %s B an iteration, segments %s, verdict of cache %s' % (
                   g.get('verdict'), slope, g.get('sites_are_segments'), cache.get('allocator')))
        made = lk.get('cached_in_loop_bytes') or 0
        report(not lk.get('total_bytes') and (made == 0 or lk.get('cached_in_loop_by') == "CuPy's memory pool"),
               '%s: leaks calls the pool\'s blocks cached, not leaks, and names the pool' % name,
               'leaks %s B, cached in loop %s B by %s' % (lk.get('total_bytes'), made, lk.get('cached_in_loop_by')))
    elif keep:
        # what device memory a kept array costs: JAX's platform allocator maps each buffer
        # with cuMemCreate, whose physical allocations are whole 2 MiB pages
        want = -(-keep * MIB // (2 * MIB)) * 2 * MIB
        report(g.get('verdict') == 'growing' and abs(slope - want) <= 0.1 * want and line in top,
               '%s: growth is growing %.1f MiB an iteration at %s' % (name, want / MIB, line),
               '%s %s B an iteration, top %s' % (g.get('verdict'), slope, top[:200]))
        # JAX frees every buffer at the interpreter's teardown: what the loop kept is told as
        # freed only after the loop (or, live at exit, as a leak), at the KEEP line
        named = sum(x.get('bytes') or 0 for k in ('sites', 'freed_after_loop_sites') for x in (lk.get(k) or [])
                    if line in site_text(x))
        least = (a.steps - 3) * want
        report(named >= least, '%s: leaks names %s for what the loop kept (a leak, or freed only after the loop)'
               % (name, line), 'at the line %d B (at least %d), leaks %s B, freed after the loop %s B' % (
                   named, least, lk.get('total_bytes'), lk.get('freed_after_loop_bytes')))
    else:
        report(g.get('verdict') != 'growing', '%s: growth is not growing' % name,
               '%s %s B an iteration' % (g.get('verdict'), slope))
        report(not lk.get('total_bytes') and not lk.get('freed_after_loop_bytes'), '%s: no leak' % name,
               'leaks %s B, freed after the loop %s B' % (lk.get('total_bytes'), lk.get('freed_after_loop_bytes')))
finish()
