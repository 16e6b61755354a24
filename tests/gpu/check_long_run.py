"""GPU check: growth over a job longer than the shim's first kernel window
(long_run.py: an MLP under PyTorch's default allocator, warm from its first
step, one step every 100 ms for 60 s, so its kernels are recorded for the
first 5 s and then 1 s of every 20 s):
- keeping a 24 MiB tensor every 50 steps (a segment each): `growth` says
  growing, fits steps seen in the later kernel windows, its slope is half to
  one and a half times what memory_reserved() grew a step over the run, and
  the top growing site is the line of long_run.py that keeps them;
- keeping nothing: `growth` says stable;
- a jitted JAX MLP step under JAX's preallocation (its steps allocate
  nothing; XLA's compilation takes seconds of the first kernel window), 45 s:
  the iterations are its steps, found in the kernels recorded after the
  compilation (at least 5, at most the steps run; on the trace of 20 steps
  of session 38 the compilation took the whole first window and none was
  found; the first window now lasts until the kernels' names settle);
  `growth` says unknown and `leaks` not told (its arrays lie inside XLA's one
  allocation of a large share of the device, out of the trace's sight).
Every trace must show at least two kernel spans (else the check proves
nothing: FAIL). About 3.5 minutes.
usage: check_long_run.py --build BUILD --out DIR [--seconds 60]"""
import argparse
import os

from gpucheck import counters, finish, fresh_db, kernel_spans, report, report_json, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--seconds', type=float, default=60)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)

for name, keep in (('creep', 50), ('hold', 0), ('jax', 0)):
    db = fresh_db(a.out, name)
    extra = ['--jax', '--seconds', str(min(a.seconds, 45))] if name == 'jax' else ['--seconds', str(a.seconds)]
    p = run(['python3', os.path.join(here, 'long_run.py'), '--keep-every', str(keep)] + extra,
            shim=shim, db=db, env_extra={'GPUTRACE_QUIET': '1'})
    c = counters(p.stdout)
    if p.returncode or 'steps' not in c:
        report(False, '%s: ran traced' % name, 'rc %d: %s' % (p.returncode, p.stderr[-600:]))
        continue
    spans = kernel_spans(db)
    report(len(spans) >= 2, '%s: the kernels were sampled in more than one span' % name,
           '%d spans: %s' % (len(spans), [(round(s / 1e9, 1), round(e / 1e9, 1)) for s, e in spans]))
    if name == 'jax':   # (summary: growth prints no JSON when there are no iterations)
        g = report_json(gputrace, 'summary', db)
        g['verdict'] = g.get('growth_verdict')
        print('   jax: %d steps; iterations %s from %s: %s; growth %s' % (
            c['steps'], g['iterations'], g['iteration_source'], g['iteration_detection'][:400], g['verdict']), flush=True)
        report(g['iteration_source'] == 'auto' and 5 <= g['iterations'] <= c['steps'] and
               'kernel launch' in g['iteration_detection'],
               'jax: the iterations are steps, from kernels recorded after XLA\'s compilation',
               '%s from %s' % (g['iterations'], g['iteration_source']))
        # its arrays lie inside XLA's one allocation of 75% of the device: not "stable"
        report(g['verdict'] == 'unknown' and (g.get('preallocated_bytes') or 0) > 0 and not g.get('leaks_told'),
               'jax: growth unknown and leaks not told, inside the preallocated pool',
               'verdict %s, preallocated %s, leaks told %s' % (g['verdict'], g.get('preallocated_bytes'),
                                                             g.get('leaks_told')))
        continue
    try:
        g = report_json(gputrace, 'growth', db)
    except ValueError:   # no JSON: growth found no iterations
        s = report_json(gputrace, 'summary', db)
        report(False, '%s: growth has iterations to read' % name, s.get('iteration_detection'))
        continue
    per_step = (c['reserved_end'] - c['reserved_first']) / max(1, c['steps'] - 1)
    site = (g.get('sites') or [{}])[0].get('call_site')
    print('   %s: %d steps, memory_reserved() %d -> %d (%.0f B a step); growth %s, slope %s over %d iterations '
          '+ %s later steps placed at %s ns, %s windows, rose across %s gaps; %s; top site %s' % (
              name, c['steps'], c['reserved_first'], c['reserved_end'], per_step, g['verdict'],
              g['slope_bytes_per_iteration'], g['iterations'], g.get('later_steps_fitted'),
              g.get('later_steps_placed_at_ns'), g.get('kernel_windows_fitted'), g.get('window_rises'),
              g['iteration_detection'][:200], site), flush=True)
    if keep:
        slope = g['slope_bytes_per_iteration'] or 0
        report(g['verdict'] == 'growing' and (g.get('later_steps_fitted') or 0) >= 5 and
               0.5 * per_step <= slope <= 1.5 * per_step,
               '%s: growth says growing over the whole run, at what memory_reserved() grew a step' % name,
               'verdict %s, slope %s, later steps %s, memory_reserved() %.0f B a step' % (
                   g['verdict'], slope, g.get('later_steps_fitted'), per_step))
        want = 'long_run.py:%d' % c['keep_line']
        report(bool(site) and site.startswith(want), '%s: the top growing site is the line that keeps' % name,
               'top site %s, want %s' % (site, want))
    else:
        report(g['verdict'] == 'stable', '%s: a job that keeps nothing reads stable' % name,
               'verdict %s, slope %s, memory_reserved() %.0f B a step' % (g['verdict'], g['slope_bytes_per_iteration'],
                                                                          per_step))
finish()
