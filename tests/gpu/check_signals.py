"""GPU check of issue 15 (fatal signals, kills): a PyTorch training loop under
the shim (cudaMallocAsync backend: one event per tensor, hundreds per step)
ended by SIGTERM, SIGINT (Python's own handler: KeyboardInterrupt, its
traceback), abort() and SIGKILL at random times. Each traced run must end as
the untraced one does (exit status, signal, traceback), its trace must open
in the analyzer, and the fatal signals must leave every queued event written
(or counted as dropped) with end_reason 'signal NAME', the death delayed by
less than about 1 s.
usage: check_signals.py --build BUILD --out DIR   (about 2-3 minutes)"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time

from gpucheck import finish, one, report, rows

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
a = ap.parse_args()
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)

LOOP = r'''
import os, sys, torch
mode = sys.argv[1]
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512)).cuda()
opt = torch.optim.AdamW(m.parameters())
step = 0
while True:
    x = torch.randn(256, 512, device='cuda')
    loss = m(x).square().mean()
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    step += 1
    if step == 5:
        print('ready', flush=True)
    if mode == 'abort' and step == 50:
        os.abort()
'''
ENV = {'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'}


def start(mode, db):
    env = dict(os.environ, **ENV)
    if db:
        env.update(LD_PRELOAD=shim, GPUTRACE_OUTPUT=db)
    p = subprocess.Popen([sys.executable, '-c', LOOP, mode], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    return p, line == 'ready\n'


def end(p, sig, after):
    time.sleep(after)
    t = time.monotonic()
    if sig:
        p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    return p.returncode, err, time.monotonic() - t


def summary(db):
    r = subprocess.run([gputrace, 'summary', db], capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


for name, mode, sig in (('SIGTERM', 'loop', signal.SIGTERM), ('SIGINT', 'loop', signal.SIGINT),
                        ('abort', 'abort', None)):
    db = os.path.join(a.out, '%s.db' % name)
    results = []
    for traced in (False, True):
        p, ready = start(mode, db if traced else None)
        rc, err, died_after = end(p, sig, 2.0 if sig else 0)
        results.append((rc, err, died_after, ready))
    (brc, berr, _, bready), (trc, terr, tdied, tready) = results
    tb = lambda e: 'KeyboardInterrupt' in e
    report(bready and tready and brc == trc and tb(berr) == tb(terr), '%s: same end traced and untraced' % name,
           'exit %s / %s, traceback %s / %s' % (brc, trc, tb(berr), tb(terr)))
    if not os.path.exists(db):
        report(False, '%s: trace written' % name, 'no file; stderr: %s' % terr[-800:])
        continue
    rec, dropped, reason = rows(db, 'SELECT events_recorded, events_dropped, end_reason FROM processes')[0]
    n = one(db, 'SELECT count(*) FROM events')
    src, serr = summary(db)
    expected = {'SIGTERM': 'signal SIGTERM', 'abort': 'signal SIGABRT'}.get(name)
    ok = src == 0 and n == rec and rec > 0 and (expected is None or reason == expected)
    if name == 'SIGTERM':  # abort() comes from the program itself, SIGINT's end is Python's own
        ok = ok and tdied < 1.5
    report(ok, '%s: every queued event written or counted, the trace opens' % name,
           '%d events, %d dropped, end_reason %s, death %.2f s after the signal, summary exit %d %s'
           % (rec, dropped, reason, tdied, src, serr))

rnd = random.Random(15)
for i in range(4):
    db = os.path.join(a.out, 'kill%d.db' % i)
    p, ready = start('loop', db)
    delay = rnd.uniform(0.0, 2.0)
    rc, _, _ = end(p, signal.SIGKILL, delay)
    files = sorted(f for f in os.listdir(a.out) if f.startswith('kill%d.db' % i))
    src, serr = summary(db)
    n = one(db, 'SELECT count(*) FROM events') if src in (0, 7) and os.path.exists(db) else 0
    report(rc == -9 and (src == 0 or (src in (3, 4, 7) and 'killed' in serr)),
           'SIGKILL %.2f s after step 5: the analyzer opens or names the file' % delay,
           'files %s, summary exit %d %s, %d events' % (files, src, serr[:160], n))

finish()
