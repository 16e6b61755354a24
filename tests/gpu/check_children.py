"""GPU check of issue 18: a program that starts subprocesses after CUDA is up
stays traced to the end. A torch.compile(mode='reduce-overhead') training loop
(Inductor's compile workers are subprocesses; CUDA graphs; an nvidia-smi run
after training) traced with LD_PRELOAD alone: the trace ends at the program's
own os._exit, not at a child's exec; its live cudaMalloc bytes equal
memory_reserved(), every other live device byte is a library's (named by the
module on its stack), one summary line per traced process.
usage: check_children.py --build BUILD --out DIR"""
import argparse
import glob
import os
import re

from gpucheck import counters, finish, one, report, rows, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
train = ['python3', os.path.join(here, 'compile_train.py'), '--steps', '40', '--hard-exit']

bare = run(train)
traced = run(train, shim=shim, db=os.path.join(a.out, 'compile-%p.db'))
loss = lambda s: [l for l in s.splitlines() if l.startswith('step ')]
report(bare.returncode == traced.returncode == 0 and loss(bare.stdout) == loss(traced.stdout),
       'torch.compile: output and exit code identical', 'rc %d/%d, %s' % (bare.returncode, traced.returncode,
                                                                      loss(traced.stdout)[-1:]))
if traced.returncode != 0:
    print(traced.stderr[-4000:])
    finish()
c = counters(traced.stdout)
print('   counters: %s; wall bare %.1f s, traced %.1f s' % (c, bare.wall, traced.wall))
files = sorted(glob.glob(os.path.join(a.out, 'compile-*.db')))
wrote = re.findall(r'^gputrace: wrote (\S+) ', traced.stderr, re.M)
print('   files: %s' % [(os.path.basename(f), one(f, 'SELECT count(*) FROM events')) for f in files])
report(sorted(wrote) == files, 'one summary line per traced process',
       '%d lines, %d files; child processes %d' % (len(wrote), len(files), c['workers']))
mains = [f for f in files if rows(f, "SELECT 1 FROM events_v WHERE api = 'cudaMalloc' LIMIT 1")]
report(len(mains) >= 1, 'the training process has a trace', str([os.path.basename(f) for f in mains]))
if not mains:
    finish()
db = max(mains, key=lambda f: one(f, 'SELECT count(*) FROM events'))
end = rows(db, 'SELECT end_reason, events_recorded, events_dropped FROM processes')[0]
report(end[0] == '_exit' and end[2] == 0, 'trace ends at the program\'s os._exit, not at a child\'s exec',
       'end_reason %s, %d events, %d dropped' % end)
tail = rows(db, "SELECT size FROM events_v WHERE api = 'cudaMalloc' AND op = 'alloc' AND result = 0 "
                "AND size >= ? ORDER BY id DESC LIMIT 1", (100 * 2**20,))
report(bool(tail), 'the allocation made after the compile workers and nvidia-smi is in the trace',
       'cudaMalloc %s' % (tail[0][0] if tail else 'missing'))
own_live = one(db, "SELECT coalesce(sum(size), 0) FROM live_at_exit WHERE api = 'cudaMalloc'")
own_peak = one(db, """SELECT coalesce(max(live), 0) FROM (SELECT sum(d) OVER (ORDER BY t, id ROWS UNBOUNDED PRECEDING)
                      AS live FROM (SELECT alloc_ns AS t, alloc_id AS id, size AS d FROM allocations WHERE api = 'cudaMalloc'
                      UNION ALL SELECT free_ns, free_id, -size FROM allocations WHERE free_id IS NOT NULL
                      AND api = 'cudaMalloc'))""")
report(own_live == c['reserved'], 'live cudaMalloc bytes at exit == memory_reserved()',
       'trace %d, torch %d' % (own_live, c['reserved']))
report(own_peak == c['max_reserved'], 'peak cudaMalloc bytes == max_memory_reserved()',
       'trace %d, torch %d' % (own_peak, c['max_reserved']))
# every other live device byte, by the library module on its stack
other = rows(db, """SELECT l.api, l.size, (SELECT group_concat(DISTINCT replace(f.module, rtrim(f.module,
                    replace(f.module, '/', '')), '')) FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                    WHERE sf.stack_id = l.alloc_stack_id AND f.module GLOB '*lib*' AND f.module NOT GLOB '*libgputrace*'
                    AND f.module NOT GLOB '*libcuda.so*' AND f.module NOT GLOB '*libcudart*'
                    AND f.module NOT GLOB '*libc.so*' AND f.module NOT GLOB '*libpython*')
                    FROM live_at_exit l WHERE l.memory = 'device' AND l.api != 'cudaMalloc'""")
libs = {}
for api, size, mods in other:
    lib = next((m for m in (mods or '').split(',') if re.match(r'lib(cublas|cublasLt|cudnn|nccl|cufft|curand|cusparse|'
                                                                r'cusolver|nvrtc|nvJitLink|torch_cuda|c10_cuda)', m)), None)
    libs[lib] = libs.get(lib, 0) + size
total_dev = one(db, "SELECT coalesce(sum(size), 0) FROM live_at_exit WHERE memory = 'device'")
report(None not in libs and total_dev == c['reserved'] + sum(libs.values()),
       'live device bytes == memory_reserved() + named library memory',
       'trace %d = %d + %s' % (total_dev, c['reserved'], libs))
report(one(db, 'PRAGMA integrity_check') == 'ok', 'integrity ok', '%d events, CUDA graph kernels %s' % (
    one(db, 'SELECT count(*) FROM events'), rows(db, 'SELECT count(*) FROM kernels')[0][0]))
finish()
