"""Step-time cost of tracing (issue 14), measured as the issue asks: each
configuration runs --runs times, every run a fresh process, the order of
configurations shuffled in every round; per configuration the median of the
runs' median step times; the ratio of medians to the untraced run with a 95%
bootstrap interval (rounds resampled with replacement, 2000 times, each
round's runs kept together) and the
spread (min-max of the runs); beside it the median of each round's own ratio
to its untraced run (paired), with its interval; and (transformer) the same
ratio of medians over each run's step time divided by its own CPU probe
(`probed`: a fixed Python loop timed after every step, which the tracer does
not touch: the host's speed in that run), with its interval. A target is met when the interval's upper end
is at or under it. Beside each traced configuration: the trace's bytes per
training step (rows written during the steps measured, times each table's
bytes per row) and per hour of training at that step time, and the CPU
seconds of the whole run (every thread: the writer's and CUPTI's beside the
program's) against the untraced run's.

Fresh processes cheaply: a process start with torch costs ~16 s on the GPU
machine, so by default each configuration gets a server process (started
with that configuration's environment: LD_PRELOAD, GPUTRACE_*) that imports
torch once and forks the round's child; the child is the fresh process (CUDA,
the context, the shim's trace and CUPTI start in it); every server, and so
every run, is pinned to the same cores (--cpus). Every round has new servers:
a forked child inherits its server's memory layout (where ASLR put the
libraries, the heap Python and torch built while importing), and a layout is
worth a few percent of a step by itself (session 23, four H200s: an untraced
control ran 3.3% slower than the untraced baseline in 17 of 21 rounds with one
server each for the whole call, 1.8% faster in session 22), a bias that no
number of rounds averages out while the servers live for the whole call. With
--concurrent the next round's servers import torch during the round, on the
cores no slot uses. --exec runs every configuration by plain exec instead.
Results are written after every round, and no round starts that would end
past --budget-s.

--concurrent: a round runs every configuration at once, each on a GPU and a
set of cores of its own (the host's GPUs and cores split in slots; a
configuration moves to the next slot every round, so each visits every
card alike), and the runs measure the same seconds (they step unmeasured
until all are ready: transformer_step.py --barrier). The host's speed drifts
by more than the cost measured (an untraced step 15-28 ms within one call);
runs side by side share it, so their paired ratio no longer carries it.
What they do not cancel: one run's threads competing with its neighbours'
for the host's memory and caches (a traced neighbour slows an untraced run
a little, so the ratio can under-state); bare:NAME shows the method's floor.

usage: bench_cost.py --build BUILD --out DIR [--runs N] [--alloc default|async]
                     [--configs NAME,...] [--steps N] [--budget-s S] [--exec]
Configurations: bare, bare:NAME (untraced again, a control: its ratio to
bare is the method's own spread; a zero-cost tool measures no better),
defaults, cupti0, history (torch's own recorder with stacks='all'; not under cudaMallocAsync), history_py (stacks='python'), kinds:K1+K2 (CUPTI with only those activity kinds),
window:S (defaults with the flight recorder, GPUTRACE_WINDOW_S=S), and
env:NAME=VALUE+NAME=VALUE (defaults with those settings); any of them
with @base (cupti0@base) traced by --base-build's shim instead: two builds
side by side in one call."""
import argparse
import json
import math
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))

if len(sys.argv) > 1 and sys.argv[1] == '--serve':
    # A configuration's server: torch imported once, a forked child per run.
    cpus = os.environ.pop('BENCH_COST_CPUS', '')
    if cpus:   # every configuration on the same cores: which core a run lands on is noise, not cost
        os.sched_setaffinity(0, {int(c) for c in cpus.split(',')})
    sys.path.insert(0, here)
    import importlib
    workload = importlib.import_module(os.environ.pop('BENCH_COST_WORKLOAD', 'transformer_step'))
    print('ready', flush=True)
    for line in sys.stdin:
        job = json.loads(line)   # {'argv': [...], 'gpu': index or None, 'cpus': [cores] or None}
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            print('pid=%d' % os.getpid())
            if job['gpu'] is not None:   # read at the child's first CUDA call (the server never made one)
                os.environ['CUDA_VISIBLE_DEVICES'] = str(job['gpu'])
            if job['cpus']:
                os.sched_setaffinity(0, set(job['cpus']))
            argv = job['argv']
            workload.main(argv)
            sys.stdout.flush()
            raise SystemExit(0)  # a normal exit: Python's and the C library's exit handlers run
        _, status, ru = os.wait4(pid, 0)
        print('cpu_s=%.3f' % (ru.ru_utime + ru.ru_stime))  # every thread of the run: the writer's and CUPTI's too
        print('done=%d' % status, flush=True)
    raise SystemExit(0)

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--base-build', help='the build that configurations named NAME@base are traced with')
ap.add_argument('--out', required=True)
ap.add_argument('--runs', type=int, default=10)
ap.add_argument('--alloc', default='default', choices=('default', 'async'))
ap.add_argument('--configs', default='bare,defaults,cupti0,history')
ap.add_argument('--steps', type=int, default=80)
ap.add_argument('--workload', default='transformer', choices=('transformer', 'launch'),
                help='launch: launch_step.py, small kernels only (CUPTI per launch, undiluted)')
ap.add_argument('--first', type=int, default=10, help='steps before this one are warm-up')
ap.add_argument('--settle-s', type=float, default=0,
                help='the workload warms up this many seconds first (past the default first period of full CUPTI '
                     'records: the steady state of a long job)')
ap.add_argument('--budget-s', type=float, default=530)
ap.add_argument('--exec', action='store_true', help='a plain exec per run instead of forked children')
ap.add_argument('--seed', type=int, default=1)
ap.add_argument('--concurrent', action='store_true',
                help='every configuration of a round at once, each on its own GPU and cores (needs as many GPUs)')
ap.add_argument('--cpus', default='auto',
                help="cores every run is pinned to (comma list; 'auto': with 10 cores or more, the step's thread "
                     "alone on core 1 once CUDA is up and every other thread on 2..9; 'none': not pinned)")
a = ap.parse_args()
configs = a.configs.split(',')
if a.alloc == 'async':   # PyTorch refuses to record history under cudaMallocAsync
    configs = [c for c in configs if not c.startswith('history')]


def siblings_of(core):
    """The hyperthreads that share core's physical core (itself included)."""
    try:
        with open('/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list' % core) as f:
            out = set()
            for part in f.read().strip().split(','):
                lo, _, hi = part.partition('-')
                out.update(range(int(lo), int(hi or lo) + 1))
            return out
    except (OSError, ValueError):
        return {core}


main_cpu = -1
slots = []   # --concurrent: per slot (gpu index, the step's core, the other threads' cores)
try:   # the host's CPU, for reading the figures (a virtual machine may hide which cores share a physical one)
    fields = dict(tuple(part.strip() for part in l.split(':', 1))
                  for l in subprocess.run(['lscpu'], capture_output=True, text=True).stdout.splitlines() if ':' in l)
    print('host: ' + '; '.join('%s %s' % (k, fields[k]) for k in ('Model name', 'Thread(s) per core',
                                                                  'Core(s) per socket', 'Socket(s)', 'L2 cache',
                                                                  'L3 cache', 'Hypervisor vendor') if k in fields),
          flush=True)
except OSError:
    pass
if a.concurrent:
    if a.exec:
        sys.exit('bench_cost: --concurrent runs forked children; leave out --exec')
    gpus = len([l for l in subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True).stdout.splitlines()
                if l.startswith('GPU ')])
    n = len(configs)
    if gpus < n:
        sys.exit('bench_cost: --concurrent needs a GPU per configuration: %d configurations, %d GPUs' % (n, gpus))
    have = sorted(os.sched_getaffinity(0))[1:]   # core 0 left to the system
    per = len(have) // n
    if per < 3:
        sys.exit('bench_cost: --concurrent needs 3 cores per configuration: %d cores' % (len(have) + 1))
    for k in range(n):   # the step's thread alone on the slot's first core, every other thread on the rest
        part = have[k * per:(k + 1) * per]
        slots.append((k, part[0], part[1:9]))
    main_cpu = slots[0][1]   # (>= 0: each run's step has a core of its own, so `probed` is given)
    a.cpus = ''
elif a.cpus == 'auto':
    have = sorted(os.sched_getaffinity(0))
    if len(have) >= 10:   # core 0 left to the system, 1 to the step's thread, 2..9 to every other thread
        main_cpu = have[1]
        siblings = siblings_of(main_cpu)   # not for the tracer's threads (nor the probe's)
        a.cpus = ','.join(str(c) for c in [c for c in have[2:] if c not in siblings][:8])
    else:
        a.cpus = ','.join(str(c) for c in have)
elif a.cpus == 'none':
    a.cpus = ''
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
base_shim = os.path.abspath(os.path.join(a.base_build, 'shim', 'libgputrace.so')) if a.base_build else None
for path in (shim, base_shim):
    if path and not os.path.exists(path):   # else ld.so ignores LD_PRELOAD and every "traced" run is an untraced one
        sys.exit('bench_cost: no shim at %s: build it (tests/gpu/prepare.sh) and carry the build' % path)
if any(c.endswith('@base') for c in a.configs.split(',')) and not base_shim:
    sys.exit('bench_cost: a configuration NAME@base needs --base-build')
os.makedirs(a.out, exist_ok=True)
dbdir = tempfile.mkdtemp(prefix='bench-cost-')   # traces stay on the machine: only the table comes back
WORKLOAD = {'transformer': 'transformer_step', 'launch': 'launch_step'}[a.workload]
t_start = time.monotonic()


def environment(name):
    cfg, _, which = name.partition('@')
    env = dict(os.environ)
    env['BENCH_COST_WORKLOAD'] = WORKLOAD
    if a.cpus:
        env['BENCH_COST_CPUS'] = a.cpus
    if a.alloc == 'async':
        env['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'
    if cfg.startswith(('bare', 'history')):   # 'bare:aa' too: untraced, a control for the method's own spread
        return env
    env['LD_PRELOAD'] = base_shim if which == 'base' else shim
    env['GPUTRACE_OUTPUT'] = os.path.join(dbdir, '%s-%s-%%p.db' % (a.alloc, ''.join(
        ch if ch.isalnum() else '_' for ch in name)))
    env['GPUTRACE_QUIET'] = '1'
    if cfg == 'cupti0':
        env['GPUTRACE_CUPTI'] = '0'
    elif cfg.startswith('kinds:'):
        env['GPUTRACE_CUPTI_KINDS'] = cfg[6:].replace('+', ',')
    elif cfg.startswith('window:'):
        env['GPUTRACE_WINDOW_S'] = cfg[7:]
    elif cfg.startswith('env:'):
        for kv in cfg[4:].split('+'):
            k, _, v = kv.partition('=')
            env[k] = v
    return env


def workload_args(cfg, pin_main=None, barrier=''):
    argv = ['--steps', str(a.steps), '--from', str(a.first), '--pin-main', str(main_cpu if pin_main is None else pin_main)]
    if barrier:
        argv += ['--barrier', barrier]
    if a.workload == 'transformer':
        argv += ['--probe']
    if a.settle_s:
        argv += ['--settle-s', str(a.settle_s)]
    # history: torch's recorder with stacks='all' (issue 14's row); history_py: stacks='python' (issue 12's)
    return argv + ['--history', 'python' if cfg == 'history_py' else 'all'] if cfg.startswith('history') else argv


servers = {}        # the round's server of each configuration
next_servers = {}   # --concurrent: the next round's, importing torch meanwhile
spare_cpus = ''     # --concurrent: cores no slot uses (the next round's servers import there)


if a.concurrent:   # not a slot's core, nor a hyperthread of one, nor the core left to the system
    used = set()
    for _, main, others in slots:
        for c in [main] + list(others):
            used |= siblings_of(c)
    system_core = sorted(os.sched_getaffinity(0))[0]
    spare_cpus = ','.join(str(c) for c in sorted(os.sched_getaffinity(0)) if c not in used and c != system_core)


def spawn_servers():
    """A new server per configuration (see the docstring: a layout per round)."""
    out = {}
    for cfg in configs:
        env = environment(cfg)
        if a.concurrent and spare_cpus:
            env['BENCH_COST_CPUS'] = spare_cpus   # (each child moves to its slot's cores)
        out[cfg] = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--serve'], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return out


def wait_ready(group):
    for cfg, s in group.items():
        for line in s.stdout:
            if line.strip() == 'ready':
                break
        else:
            sys.exit('bench_cost: the server of %s ended before it was ready' % cfg)


def end_servers(group):
    for s in group.values():
        s.stdin.close()
        s.wait()
        s.stdout.close()


def run_once(cfg, i):
    """Runs the workload once in a fresh process; returns its output lines."""
    if a.exec:
        p = subprocess.run([sys.executable, os.path.join(here, WORKLOAD + '.py')] + workload_args(cfg),
                           env=environment(cfg), capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout.splitlines() + ['pid=%d' % p.pid], p.stderr  # (no cpu_s by exec)
    start_run(cfg, {'argv': workload_args(cfg), 'gpu': None, 'cpus': None})
    return finish_run(cfg)


def start_run(cfg, job):
    """Has the configuration's server fork a fresh child for the job."""
    s = servers[cfg]
    s.stdin.write(json.dumps(job) + '\n')
    s.stdin.flush()


def finish_run(cfg):
    """(status, output lines, error) of the run start_run began."""
    s = servers[cfg]
    lines = []
    for line in s.stdout:
        line = line.strip()
        if line.startswith('done='):
            return int(line[5:]), lines, ''
        lines.append(line)
    return -1, lines, 'the server of %s ended' % cfg


# rows of the tables that grow with the steps, by their time column
TIMED = {'events': 't_ns', 'kernels': 'start_ns', 'memcpys': 'start_ns', 'memsets': 'start_ns',
         'driver_memory': 't_ns', 'memory_pools': 't_ns', 'ranges': 'start_ns', 'marks': 't_ns',
         'iterations': 't_ns', 'memory_samples': 't_ns', 'interval_summaries': 'end_ns'}


def trace_bytes(db, steady, steps):
    """(file bytes, bytes per step) of a run's trace: per table, the rows of
    the steps measured times the table's bytes per row (SQLite's dbstat where
    compiled in, else the file's bytes shared by rows). Stacks and frames new
    in those steps are not counted (few: a training step repeats its stacks)."""
    size = sum(os.path.getsize(db + x) for x in ('', '-wal') if os.path.exists(db + x))
    con = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    try:
        start = con.execute('SELECT start_mono_ns FROM processes').fetchone()[0]
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows, in_steps = {}, {}
        for t, col in TIMED.items():
            if t in tables:
                rows[t] = con.execute('SELECT count(*) FROM %s' % t).fetchone()[0]
                in_steps[t] = con.execute('SELECT count(*) FROM %s WHERE %s BETWEEN ? AND ?' % (t, col),
                                          (steady[0] - start, steady[1] - start)).fetchone()[0]
        try:
            per_table = dict(con.execute('SELECT name, sum(pgsize) FROM dbstat GROUP BY name').fetchall())
        except sqlite3.Error:
            total = sum(rows.values()) or 1
            per_table = {t: size * n / total for t, n in rows.items()}
        per_step = sum(per_table.get(t, 0) / rows[t] * in_steps[t] for t in rows if rows[t]) / steps
        note = con.execute("SELECT message FROM notes WHERE component = 'cupti' ORDER BY id").fetchone()
        # what CUPTI did while the steps were measured: a slow run of the defaults says why
        during = 'kernel rows in the measured steps: %d; notes: %s' % (
            in_steps.get('kernels', 0),
            ' | '.join(m[:160] for (m,) in con.execute(
                "SELECT message FROM notes WHERE component IN ('cupti', 'kernels') ORDER BY id")))
        # the stacks of the steps measured: how many distinct, how deep (what the per-thread memos and the
        # Python walk see; a weighted median over the events)
        stacks = con.execute(
            "SELECT count(*), (SELECT sum(f.kind = 'python') FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"
            " WHERE sf.stack_id = e.stack_id), (SELECT sum(f.kind = 'native') FROM stack_frames sf JOIN frames f"
            " ON f.id = sf.frame_id WHERE sf.stack_id = e.stack_id) FROM events e WHERE e.t_ns BETWEEN ? AND ?"
            " AND e.stack_id IS NOT NULL GROUP BY e.stack_id", (steady[0] - start, steady[1] - start)).fetchall()
        if stacks:
            py = sorted(x for n, p, _ in stacks for x in [p or 0] * n)
            nat = sorted(x for n, _, q in stacks for x in [q or 0] * n)
            during += '; stacks in the measured steps: %d distinct for %d events, %d Python and %d native frames ' \
                'a stack (median)' % (len(stacks), len(py), py[len(py) // 2], nat[len(nat) // 2])
        # the shim's own time a call, by part (the `cost` note): a slow run says whether the hot path grew
        during += ' | cost: ' + ' | '.join(m for (m,) in con.execute(
            "SELECT message FROM notes WHERE component = 'cost' ORDER BY id"))
        return size, per_step, note[0] if note else 'no cupti note', during
    finally:
        con.close()


def summarize():
    base = samples.get('bare') or []
    rows = []
    how = ('plain exec per run' if a.exec else 'forked fresh children, side by side on %d GPUs' % len(slots)
           if a.concurrent else 'forked fresh children')
    out = ['%s, %s allocator, %d steps (median of steps %d..%d), %s, %.0f s' % (
        a.workload, a.alloc, a.steps, a.first, a.steps, how, time.monotonic() - t_start),
        '%-28s %4s %8s %15s %7s %17s %7s %17s %7s %17s %9s %11s %9s %7s' % (
            'configuration', 'runs', 'median', 'spread (ms)', 'ratio', '95% interval', 'paired', '95% interval',
            'probed', '95% interval', 'file MB', 'bytes/step', 'MB/hour', 'CPU s')]
    for cfg in configs:
        s = samples[cfg]
        if not s:
            out.append('%-28s no runs' % cfg)
            continue
        med = statistics.median(s)
        r = lo = hi = pr = plo = phi = nr = nlo = nhi = float('nan')
        pmed = statistics.median(probes[cfg]) if probes[cfg] else float('nan')
        norm = [x[cfg] for x in norm_by_round if cfg in x]
        norm_base = [x['bare'] for x in norm_by_round if 'bare' in x]
        if base and cfg != 'bare':
            r = med / statistics.median(base)
            lo, hi = ratio_ci(cfg)
            pr, plo, phi = paired_ci(cfg)
            if norm and norm_base and main_cpu >= 0:   # each run's step over its own CPU probe (on a core of its own)
                nr = statistics.median(norm) / statistics.median(norm_base)
                nlo, nhi = ratio_ci(cfg, table=norm_by_round)
        elif cfg == 'bare':
            r = lo = hi = pr = plo = phi = 1.0
            nr = nlo = nhi = 1.0 if norm and main_cpu >= 0 else float('nan')
        size = statistics.median(sizes[cfg]) if sizes[cfg] else float('nan')
        bps = statistics.median(per_step[cfg]) if per_step[cfg] else float('nan')
        mbh = bps * 3.6e6 / med / 1e6
        cpu_s = statistics.median(cpu[cfg]) if cpu[cfg] else float('nan')
        out.append('%-28s %4d %8.3f %7.3f-%-7.3f %7.3f %8.3f-%-8.3f %7.3f %8.3f-%-8.3f %7.3f %8.3f-%-8.3f %9.2f %11.0f '
                   '%9.1f %7.2f' % (cfg, len(s), med, min(s), max(s), r, lo, hi, pr, plo, phi, nr, nlo, nhi,
                                    size / 1e6, bps, mbh, cpu_s))
        rows.append({'config': cfg, 'median_ms': med, 'runs_ms': s, 'ratio': r, 'ci95': [lo, hi],
                     'paired_ratio': pr, 'paired_ci95': [plo, phi],
                     'probe_ms': probes[cfg], 'probe_median_ms': pmed, 'probed_ratio': nr, 'probed_ci95': [nlo, nhi],
                     'file_bytes': size, 'bytes_per_step': bps, 'mb_per_hour': mbh, 'cpu_s': cpu_s})
    out += probe_checks()
    out += cost_lines()
    if min(len(samples[c]) for c in configs) < 10:
        out.append('fewer than 10 runs of some configuration (--runs, failures or --budget-s): the issue asks for 10')
    with open(os.path.join(a.out, 'bench_cost_%s_%s.json' % (a.workload, a.alloc)), 'w') as f:
        json.dump({'alloc': a.alloc, 'runs': a.runs, 'steps': a.steps, 'fork': not a.exec, 'cpus': a.cpus,
                   'concurrent_slots': slots,
                   'main_cpu': main_cpu,
                   'rows': rows, 'rounds': by_round, 'rounds_probed': norm_by_round}, f, indent=1)
    return '\n'.join(out)


# the parts of the shim's `cost` note (shim/selfcost.c), each a time in ms over the run's calls
COST_PARTS = (('unwinding', r'native unwinding ([\d.]+) ms'), ('Python', r"the calling thread's Python frames ([\d.]+) ms"),
              ('backward', r'frames of a thread waiting in backward\(\) ([\d.]+) ms'),
              ('clock', r'time stamps ([\d.]+) ms'), ('queue', r'the queue ([\d.]+) ms'),
              ('stack set', r'the stack set ([\d.]+) ms'), ('device', r'the device asked of CUDA ([\d.]+) ms'))


def cost_per_call(note):
    """{part: ns a call} of one run's cost note ('whole' included), or None."""
    m = re.search(r'(\d+) calls recorded, ([\d.]+) ms in the shim', note)
    if not m or not int(m.group(1)):
        return None
    calls = int(m.group(1))
    out = {'whole': float(m.group(2)) * 1e6 / calls}
    for part, pattern in COST_PARTS:
        mm = re.search(pattern, note)
        if mm:
            out[part] = float(mm.group(1)) * 1e6 / calls
    return out


def cost_lines():
    """Per traced configuration, the median over its runs of each part of the
    shim's own cost note, in ns a call: exact per run where step times are not,
    so two builds side by side compare here even on a noisy host."""
    out = []
    for cfg in configs:
        rows = costs[cfg]
        if rows:
            keys = [k for k in rows[0] if all(k in r for r in rows)]
            out.append('cost note, %s (median of %d runs, ns a call): %s' % (
                cfg, len(rows), ', '.join('%s %.0f' % (k, statistics.median(r[k] for r in rows)) for k in keys)))
    return out


def probe_checks():
    """What says whether `probed` can be trusted: the probe's median per
    configuration against the untraced runs' (a tracer that slowed the probe
    would hide part of its own cost), and over the untraced runs the slope of
    log(step) on log(probe) with its correlation (a step that follows the
    host's speed one for one has slope 1; a part bound by the GPU, by memory
    or by the driver does not follow an L1-resident loop)."""
    out = []
    if main_cpu < 0:
        return ['probed: not given (the step\'s thread had no core of its own: --cpus auto on 10+ cores)'] \
            if any(probes.values()) else []
    base = probes.get('bare') or []
    if not base:
        return out
    out.append('CPU probe, median ms (ratio to untraced): ' + ', '.join(
        '%s %.4f (%.3f)' % (c, statistics.median(probes[c]), statistics.median(probes[c]) / statistics.median(base))
        for c in configs if probes[c]))
    pairs = [(r['bare'], n['bare']) for r, n in zip(by_round, norm_by_round) if 'bare' in r and 'bare' in n]
    if len(pairs) >= 3:
        xs = [math.log(step / norm) for step, norm in pairs]   # log(probe)
        ys = [math.log(step) for step, _ in pairs]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        syy = sum((y - my) ** 2 for y in ys)
        sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        if sxx > 0 and syy > 0:
            out.append('untraced runs: log(step) = %.2f x log(probe) + c, correlation %.2f (%d runs; 1 and near 1: '
                       'the step follows the host\'s speed and `probed` removes it)' % (
                           sxy / sxx, sxy / math.sqrt(sxx * syy), len(pairs)))
    return out


def ratio_ci(cfg, n=2000, table=None):
    """95% bootstrap interval of the ratio of medians, resampling rounds: a
    round's runs of every configuration are kept together, so that what
    drifts between rounds (the GPU's clocks, another tenant) moves both sides
    of the ratio alike instead of widening it."""
    rounds = [r for r in (by_round if table is None else table) if cfg in r and 'bare' in r]
    if len(rounds) < 2:
        return float('nan'), float('nan')
    rng = random.Random(7)
    rs = []
    for _ in range(n):
        pick = rng.choices(rounds, k=len(rounds))
        rs.append(statistics.median(r[cfg] for r in pick) / statistics.median(r['bare'] for r in pick))
    rs.sort()
    return rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def paired_ci(cfg, n=2000):
    """The median of each round's own ratio (this configuration's run over the
    untraced run of the same round), with its 95% bootstrap interval: beside
    the ratio of medians the issue asks for, since the host's speed drifts
    between rounds by more than the cost measured (an untraced step of 14 to
    24 ms within one call) and a round's two runs share its speed."""
    ratios = [r[cfg] / r['bare'] for r in by_round if cfg in r and 'bare' in r]
    if len(ratios) < 2:
        return float('nan'), float('nan'), float('nan')
    rng = random.Random(7)
    ms = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return statistics.median(ratios), ms[int(0.025 * n)], ms[int(0.975 * n) - 1]


def record(cfg, i, rc, lines, err):
    """Takes one run's output into the tables (and its trace's figures)."""
    ms = [float(l.split('=')[1]) for l in lines if l.startswith('step_ms=')]
    if rc != 0 or not ms:
        print('run %d %s failed (status %d): %s %s' % (i, cfg, rc, lines[-5:], err[-800:]), flush=True)
        return
    samples[cfg].append(ms[0])
    by_round[-1][cfg] = ms[0]
    pr = [float(l.split('=')[1]) for l in lines if l.startswith('probe_ms=')]
    if pr:
        norm_by_round[-1][cfg] = ms[0] / pr[0]
        probes[cfg].append(pr[0])
    side = ''.join(' ' + l for l in lines if l.startswith(('gpu=', 'barrier_wait_s=', 'barrier_timeout=')))
    print('  round %d %-28s %.3f ms%s%s' % (i + 1, cfg, ms[0], ' (CPU probe %.4f ms)' % pr[0] if pr else '', side),
          flush=True)
    cpu[cfg] += [float(l[6:]) for l in lines if l.startswith('cpu_s=')]
    pid = [l[4:] for l in lines if l.startswith('pid=')]
    steady = [int(l.split('=')[1]) for l in lines if l.startswith(('steady_start_ns=', 'steady_end_ns='))]
    db = environment(cfg).get('GPUTRACE_OUTPUT', '').replace('%p', pid[0] if pid else '?')
    if db and not os.path.exists(db):
        # a traced configuration that left no trace ran untraced (the shim not preloaded, or its file not
        # opened): its time would pass for the tracer's; stop, the tables printed so far stand
        sys.exit('bench_cost: run %d %s left no trace at %s: it was not traced (%s); stopping' % (
            i, cfg, db, err[-300:] or 'see the child\'s stderr above'))
    if db and len(steady) == 2:
        try:
            size, bps, note, during = trace_bytes(db, steady, a.steps - a.first)
            parts = cost_per_call(during.partition(' | cost: ')[2])
            if parts:
                costs[cfg].append(parts)
            print('    %s round %d: %s' % (cfg, i + 1, during), flush=True)
            sizes[cfg].append(size)
            per_step[cfg].append(bps)
            if cfg.partition('@')[0] != 'cupti0' and not note.startswith('on:') and cfg not in warned:
                warned.add(cfg)  # the run did not measure what its name says
                print('run %d %s: CUPTI was not on in the traced child: %s' % (i, cfg, note), flush=True)
        except (sqlite3.Error, OSError, TypeError) as e:
            print('run %d %s: trace %s not read: %s' % (i, cfg, db, e), flush=True)
        for x in ('', '-wal', '-journal'):
            if os.path.exists(db + x):
                os.remove(db + x)


random.seed(a.seed)
samples = {c: [] for c in configs}
sizes = {c: [] for c in configs}
per_step = {c: [] for c in configs}
by_round = []   # per round: configuration -> its run's median step (ms)
norm_by_round = []   # the same over the run's CPU probe (--probe): the step in units of the host's speed
probes = {c: [] for c in configs}
cpu = {c: [] for c in configs}
costs = {c: [] for c in configs}   # per traced run, the cost note's parts in ns a call   # CPU seconds of the whole run, every thread (forked children only)
warned = set()
round_s = 0.0
for i in range(a.runs):
    if time.monotonic() - t_start + 1.1 * round_s > a.budget_s:
        print('budget: no time for round %d' % (i + 1), flush=True)
        break
    t_round = time.monotonic()
    if a.concurrent and spare_cpus:
        servers = next_servers or spawn_servers()
        wait_ready(servers)
        next_servers = spawn_servers() if i + 1 < a.runs else {}
    elif not a.exec:   # (no spare cores: a server importing torch would compete with the measured runs)
        servers = spawn_servers()
        wait_ready(servers)
    by_round.append({})
    norm_by_round.append({})
    if a.concurrent:   # all at once, configuration j in slot (j + round) of the GPUs and cores
        barrier = tempfile.mkdtemp(prefix='barrier-', dir=dbdir)
        for j, cfg in enumerate(configs):
            gpu, step_core, others = slots[(j + i) % len(configs)]
            start_run(cfg, {'argv': workload_args(cfg, step_core, '%s:%d' % (barrier, len(configs))),
                            'gpu': gpu, 'cpus': others})
        for cfg in configs:
            record(cfg, i, *finish_run(cfg))
    else:
        order = configs[:]
        random.shuffle(order)
        for cfg in order:
            record(cfg, i, *run_once(cfg, i))
    end_servers(servers)
    servers = {}
    round_s = time.monotonic() - t_round
    print('round %d done at %.0f s (%.1f s per run)' % (i + 1, time.monotonic() - t_start, round_s / len(configs)),
          flush=True)
    print(summarize() + '\n', flush=True)  # after every round: a call cut off by its time limit still has its table
end_servers(next_servers)   # (a round the budget left out)
print('\nfinal:\n' + summarize())
