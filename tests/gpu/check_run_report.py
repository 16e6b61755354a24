"""GPU check of issue 16's launcher line and report opening view:
`gputrace run` prints one closing line for the whole command (the files of
every traced process, or that no process called CUDA) and the processes say
nothing themselves; a torch.compile loop (Inductor's compile workers are
subprocesses) gets one line naming exactly the files in the output directory.
The HTML report's timeline opens on the span with allocation calls: how much
of the run a PyTorch program spends before its first allocation is printed.
usage: check_run_report.py --build BUILD --out DIR   (about 2 minutes)"""
import argparse
import glob
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
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)


def gt_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith('gputrace')]


# 1. no CUDA at all, then torch imported but never given a tensor
for name, code in (('python without CUDA', 'print(1)'), ('torch imported, no CUDA call', 'import torch; print(1)')):
    d = os.path.join(a.out, re.sub(r'\W+', '-', name))
    os.makedirs(d, exist_ok=True)
    p = run([gputrace, 'run', '-o', d + '/', '--', 'python3', '-c', code])
    lines, files = gt_lines(p.stderr), glob.glob(os.path.join(d, '*.db'))
    said_none = lines == ['gputrace run: no process of the command that the preload reached made a CUDA call gputrace records (memory, graphs): nothing was traced']
    report(p.returncode == 0 and len(lines) == 1 and (said_none == (not files)),
           'run, %s: one closing line that matches the files' % name, '%s; files %s' % (lines, [os.path.basename(f) for f in files]))

# 2. torch.compile: the parent and its compile workers
d = os.path.join(a.out, 'compile')
os.makedirs(d, exist_ok=True)
p = run([gputrace, 'run', '-o', d + '/', '--', 'python3', os.path.join(here, 'compile_train.py'), '--steps', '20'])
lines, files = gt_lines(p.stderr), sorted(glob.glob(os.path.join(d, '*.db')))
report(p.returncode == 0, 'run torch.compile: exit status 0', 'rc %d, %.1f s' % (p.returncode, p.wall))
report(len(lines) == 1 and lines[0].startswith('gputrace run: wrote '), 'run torch.compile: one closing line, no per-process line',
       lines[0][:300] if len(lines) == 1 else str(lines)[:600])
named = re.findall(r'(\S+\.db) \(', lines[0]) if lines else []
report(sorted(os.path.abspath(os.path.join(os.getcwd(), n)) if not os.path.isabs(n) else n for n in named) == files,
       'run torch.compile: the line names exactly the files written', '%d named, %d files' % (len(named), len(files)))
for f in files:
    pid, events = rows(f, 'SELECT pid, events_recorded FROM processes')[0]
    report(('(pid %d, %d events' % (pid, events)) in (lines[0] if lines else '') or len(files) == 1,
           'run torch.compile: %s figures match its trace' % os.path.basename(f), 'pid %d, %d events' % (pid, events))

# 3. the report's opening view on the training process's trace
if files:
    db = max(files, key=lambda f: one(f, 'SELECT count(*) FROM events'))
    html = os.path.join(a.out, 'compile-report.html')
    r = subprocess.run([gputrace, 'report', db, '-o', html], capture_output=True, text=True)
    data = json.loads(re.search(r'id="gt-data">(.*?)</script>', open(html, encoding='utf-8').read(), re.S).group(1))
    tr = data['traces'][0]
    first, last = one(db, 'SELECT min(t_ns) FROM events'), one(db, 'SELECT max(t_ns) FROM events')
    report(r.returncode == 0 and (tr['allocations_from_ns'], tr['allocations_to_ns']) == (first, last),
           'report: the timeline opens on the span with allocations',
           'allocations %.3f s to %.3f s of a %.3f s run (%.0f%% of it before the first allocation)' % (
               first / 1e9, last / 1e9, tr['end_ns'] / 1e9, 100.0 * first / max(tr['end_ns'], 1)))
finish()
