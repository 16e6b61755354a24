"""GPU check: PyTorch's operator ranges are not iterations (issue 11 part 4).
Under torch.autograd.profiler.emit_nvtx every operator call pushes an NVTX
range in the default domain ("aten::addmm, seq = 12, op_id = 40"); the most
repeated outermost kind of range would be an operator. train_mlp.py's loop
of --steps steps under the default allocator and cudaMallocAsync:
- without ranges of its own: the iterations do not come from NVTX, and the
  detection line says the operators' ranges were passed over; found
  automatically, they are the steps run;
- with its own "step N" ranges (--nvtx) around them: those are the loop;
- with each step in record_function('train_step'): the loop is the steps
  run (how that scope reaches NVTX under emit_nvtx is shown).
About 1 minute.
usage: check_emit_nvtx.py --build BUILD --out DIR [--steps 20]"""
import argparse
import os

from gpucheck import report_json, finish, fresh_db, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=20)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)


for alloc, conf in (('default', None), ('async', 'backend:cudaMallocAsync')):
    for own in (False, True, 'rf'):
        name = '%s-%s' % (alloc, 'record-function' if own == 'rf' else 'steps' if own else 'ops-only')
        db = fresh_db(a.out, name)
        env = {'GPUTRACE_QUIET': '1'}
        if conf:
            env['PYTORCH_CUDA_ALLOC_CONF'] = conf
        argv = ['python3', os.path.join(here, 'train_mlp.py'), '--steps', str(a.steps), '--emit-nvtx']
        p = run(argv + (['--record-function'] if own == 'rf' else ['--nvtx'] if own else []), shim=shim, db=db,
                env_extra=env)
        if p.returncode != 0 or not os.path.exists(db):
            report(False, '%s: runs' % name, 'rc %d: %s' % (p.returncode, p.stderr[-300:]))
            continue
        ops = one(db, "SELECT count(*) FROM ranges WHERE message LIKE 'aten::%'")
        s = report_json(gputrace, 'summary', db)
        how = s.get('iteration_detection') or ''
        print('   %s: %d aten:: ranges; iterations %s from %s (%s)' % (name, ops, s.get('iterations'),
                                                                      s.get('iteration_source'), how[:240]), flush=True)
        if own == 'rf':
            # how the program's own scope reaches NVTX under emit_nvtx (shown),
            # and what the tool makes of it: the loop, from the scope or found
            # automatically, never an operator
            scope = [(m[:70], d, n) for m, d, n in rows(
                db, "SELECT message, depth, count(*) FROM ranges WHERE message LIKE 'train_step%' OR message LIKE"
                    " 'profiler::%' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 8")]
            print('     train_step and profiler:: ranges: %s' % scope, flush=True)
            report(s.get('iterations') == a.steps and (s.get('iteration_source') != 'nvtx' or
                                                      'train_step' in how),
                   '%s: a record_function step scope: the loop is the steps run' % name,
                   '%s from %s' % (s.get('iterations'), s.get('iteration_source')))
        elif own:
            report(s.get('iteration_source') == 'nvtx' and s.get('iterations') == a.steps and '"step # bs=#"' in how,
                   '%s: the program\'s step ranges are the loop' % name, '%s from %s' % (
                       s.get('iterations'), s.get('iteration_source')))
        else:
            report(ops > 0 and s.get('iteration_source') != 'nvtx' and 'PyTorch operator ranges (emit_nvtx)' in how,
                   '%s: operator ranges are not iterations, and the report says they were passed over' % name,
                   '%d aten:: ranges; source %s' % (ops, s.get('iteration_source')))
            report(s.get('iterations') == a.steps, '%s: found automatically, the iterations are the '
                   'steps run' % name, 'found %s for %d steps' % (s.get('iterations'), a.steps))
finish()
