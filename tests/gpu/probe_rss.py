"""Where a traced training run's resident memory goes (check_attach's rss
case failed in session 40: +129 MB in the second half with kernel windows
against +19 MB with CUPTI off). Runs transformer_step.py under several
configurations, samples /proc/PID/status and smaps_rollup every 0.5 s, and
prints the second half's growth split into anonymous and file-backed pages,
with the thread count."""
import argparse, os, subprocess, sys, threading, time

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=1600)
ap.add_argument('--configs', default='cupti0,windows,every')
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
os.makedirs(a.out, exist_ok=True)
CONFIGS = {
    'cupti0': {'GPUTRACE_CUPTI': '0'},
    'windows': {'GPUTRACE_KERNELS_FULL_S': '1', 'GPUTRACE_KERNELS_EVERY_S': '2'},
    'every': {'GPUTRACE_KERNELS_EVERY_S': '0'},
    'untraced': None,
}


def sample(pid):
    v = {}
    for name in ('status', 'smaps_rollup'):
        with open('/proc/%d/%s' % (pid, name)) as f:
            for line in f:
                k, _, rest = line.partition(':')
                if k in ('VmRSS', 'RssAnon', 'RssFile', 'RssShmem', 'Threads', 'Anonymous'):
                    v[k] = int(rest.split()[0])
    return v


for name in a.configs.split(','):
    env = dict(os.environ)
    if CONFIGS[name] is not None:
        env.update(LD_PRELOAD=shim, GPUTRACE_OUTPUT=os.path.join(a.out, name + '.db'), GPUTRACE_QUIET='1',
                   **CONFIGS[name])
    p = subprocess.Popen([sys.executable, os.path.join(here, 'transformer_step.py'), '--steps', str(a.steps)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples, t0 = [], time.monotonic()

    def watch():
        while p.poll() is None:
            try:
                s = sample(p.pid)
                if s.get('VmRSS'):
                    samples.append((time.monotonic() - t0, s))
            except (OSError, ValueError):
                break
            time.sleep(0.5)
    th = threading.Thread(target=watch)
    th.start()
    out, err = p.communicate()
    th.join()
    half = samples[len(samples) // 2:]
    line = '%-9s rc %d, %d samples, %.0f s:' % (name, p.returncode, len(samples), samples[-1][0] if samples else 0)
    for k in ('VmRSS', 'RssAnon', 'RssFile', 'RssShmem', 'Threads'):
        if half and k in half[0][1]:
            line += ' %s %d -> %d (%+d);' % (k, half[0][1][k], half[-1][1][k], half[-1][1][k] - half[0][1][k])
    print(line, flush=True)
    # the trajectory, every 4th sample, to see steps (per window) or a ramp
    print('   ', ' '.join('%.0f:%d' % (t, s['RssAnon'] // 1024) for t, s in samples[::4]), flush=True)
    if p.returncode:
        print(err[-500:])
