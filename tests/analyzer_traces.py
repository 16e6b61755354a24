"""Synthetic gputrace traces for the analyzer tests.

Each workload function writes one trace database and returns its path. The
database is created by executing the real schema text (schema/gputrace.sql)
and filled with the rows libgputrace.so writes: one processes row, a devices
row, events in recording order (a free carries the size it frees and the
device of its allocation, a failed call has ptr NULL and result != 0),
deduplicated stacks with their frames (level 0 = the code that called CUDA),
NVTX ranges and marker-API iterations.

The workloads follow the seeds' PyTorch examples (shared/seeds/): the numbers
the tests assert are the module constants below, computed from what each
workload plants, never read back from gputrace. When the shim and the C test
programs exist, a workload can be replaced by running its program under the
shim (same constants, same return value: the path of the trace).
"""
import json
import os
import random
import sqlite3
import subprocess

import gtlib

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_PATH = os.path.join(os.path.dirname(HERE), 'schema', 'gputrace.sql')

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

CUDA_ERROR_MEMORY_ALLOCATION = 2   # cudaErrorMemoryAllocation


def schema_sql():
    with open(SCHEMA_PATH, encoding='utf-8') as f:
        return f.read()


def api_ids():
    """{api name: id} from the schema's apis rows."""
    con = sqlite3.connect(':memory:')
    con.executescript(schema_sql())
    ids = dict((name, i) for i, name in con.execute('SELECT id, name FROM apis'))
    con.close()
    return ids


API = api_ids()
FREE_OF = {'cudaMalloc': 'cudaFree', 'cudaMallocAsync': 'cudaFreeAsync', 'cudaMallocHost': 'cudaFreeHost',
           'cudaMallocManaged': 'cudaFree', 'cuMemAlloc_v2': 'cuMemFree_v2', 'cuMemCreate': 'cuMemRelease'}


class Trace:
    """Writes one trace as the shim would. Time advances `tick_ns` per call."""

    def __init__(self, path, pid=4242, rank=None, device_total=80 * GiB, device_name='Fake GPU',
                 stack_depth=32, command_line='./workload', module='/opt/work/workload', tick_ns=1000):
        if os.path.exists(path):
            os.unlink(path)
        self.path = path
        self.con = sqlite3.connect(path)
        self.con.executescript(schema_sql())
        self.pid, self.rank, self.stack_depth = pid, rank, stack_depth
        self.command_line, self.module = command_line, module
        self.device_total, self.device_name = device_total, device_name
        self.tick = tick_ns
        self.t = 0
        self.events = []          # (t, api, ptr, size, device, stream, tid, result, stack_id)
        self.live = {}            # ptr -> (size, device)
        self.free_lists = {}      # size -> [ptr] (addresses come back, as with real allocators)
        self.next_addr = {'device': 0x7f0000000000, 'host': 0x200000000}
        self.stacks = {}          # tuple of functions -> stack id
        self.frames = {}          # function -> frame id
        self.ranges = []          # [source, domain, message, tid, start, end, depth, parent, batch_size]
        self.open_ranges = []
        self.iteration_rows = []
        self.kernels = []
        self.strings = {}
        self.tid = pid

    def now(self):
        self.t += self.tick
        return self.t

    def stack(self, functions):
        """Stack id for a call chain given innermost first (None: stacks off)."""
        if not functions or not self.stack_depth:
            return None
        key = tuple(functions)
        if key not in self.stacks:
            sid = len(self.stacks) + 1
            self.stacks[key] = sid
            self.con.execute('INSERT INTO stacks VALUES (?,?,?)', (sid, len(key), hash(key) & 0x7fffffffffff))
            for level, fn in enumerate(key):
                if fn not in self.frames:
                    fid = len(self.frames) + 1
                    self.frames[fn] = fid
                    self.con.execute('INSERT INTO frames (id, ip, module, module_offset, function, symbol_offset, file, line) '
                                     'VALUES (?,?,?,?,?,?,?,?)',
                                     (fid, 0x400000 + 64 * fid, self.module, 64 * fid, fn, 12, None, None))
                self.con.execute('INSERT INTO stack_frames VALUES (?,?,?)', (sid, level, self.frames[fn]))
        return self.stacks[key]

    def _address(self, size, kind):
        free = self.free_lists.get(size)
        if free:
            return free.pop()
        addr = self.next_addr[kind]
        self.next_addr[kind] += (size + 511) // 512 * 512 + 512
        return addr

    def alloc(self, size, where, api='cudaMalloc', device=0, stream=None, result=0):
        """One allocation call from the call chain `where`; returns its pointer (None if it failed)."""
        stream = stream if stream is not None or 'Async' not in api else 0x5000
        sid = self.stack(where)
        if result:
            self.events.append((self.now(), API[api], None, size, device, stream, self.tid, result, sid))
            return None
        ptr = self._address(size, 'host' if 'Host' in api else 'device')
        self.events.append((self.now(), API[api], ptr, size, device, stream, self.tid, 0, sid))
        self.live[ptr] = (size, device, api)
        return ptr

    def free(self, ptr, where=None, api=None):
        size, device, alloc_api = self.live.pop(ptr)
        api = api or FREE_OF[alloc_api]
        stream = 0x5000 if 'Async' in api else None
        self.events.append((self.now(), API[api], ptr, size, device, stream, self.tid, 0, self.stack(where)))
        self.free_lists.setdefault(size, []).append(ptr)

    def push(self, message, source='nvtx', batch_size=None, domain=None):
        depth = len(self.open_ranges)
        parent = self.open_ranges[-1] if self.open_ranges else None
        self.ranges.append([source, domain, message, self.tid, self.now(), None, depth, parent, batch_size])
        self.open_ranges.append(len(self.ranges) - 1)

    def pop(self):
        self.ranges[self.open_ranges.pop()][5] = self.now()

    def iteration(self, idx, batch_size=None):
        """gputrace_iteration(idx, batch_size): starts an iteration."""
        self.iteration_rows.append((idx, batch_size, self.now(), self.tid))

    def nvml_sample(self, outside, others=0, total=None):
        """An NVML sample now: the device's used bytes are everything live in the
        trace plus `outside` (context, modules, other processes' `others`)."""
        traced = sum(size for size, device, api in self.live.values() if device == 0 and 'Host' not in api)
        used = traced + outside
        self.con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) VALUES (?, 0, ?, ?, ?)',
                         (self.now(), used, total or self.device_total, used - others))

    def kernel(self, name, duration=500, device=0, start=None):
        sid = self.strings.setdefault(name, len(self.strings) + 1)
        start = self.now() if start is None else start
        self.kernels.append((start, start + duration, device, 7, len(self.kernels) + 1, sid))

    def close(self, end_reason='exit'):
        """Writes the buffered rows and the process row; returns the path."""
        c = self.con
        c.executemany('INSERT INTO events(t_ns, api, ptr, size, device, stream, tid, result, stack_id)'
                      ' VALUES (?,?,?,?,?,?,?,?,?)', self.events)
        for i, r in enumerate(self.ranges):
            c.execute('INSERT INTO ranges(id, source, domain, message, tid, start_ns, end_ns, depth, parent_id, batch_size)'
                      ' VALUES (?,?,?,?,?,?,?,?,?,?)',
                      (i + 1, r[0], r[1], r[2], r[3], r[4], r[5], r[6], None if r[7] is None else r[7] + 1, r[8]))
        c.executemany('INSERT INTO iterations(idx, batch_size, t_ns, tid) VALUES (?,?,?,?)', self.iteration_rows)
        for name, sid in self.strings.items():
            c.execute('INSERT INTO strings VALUES (?,?)', (sid, name))
        c.executemany('INSERT INTO kernels(start_ns, end_ns, device, stream_id, correlation_id, name_id)'
                      ' VALUES (?,?,?,?,?,?)', self.kernels)
        c.execute('INSERT INTO threads VALUES (?,?)', (self.tid, 'main'))
        c.execute('INSERT INTO devices(id, name, uuid, total_bytes, cc_major, cc_minor) VALUES (0,?,?,?,9,0)',
                  (self.device_name, 'GPU-00000000-fake', self.device_total))
        live = peak = 0
        for e in self.events:
            if e[7] == 0 and e[1] in (API['cudaMalloc'], API['cuMemAlloc_v2'], API['cuMemCreate']):
                live += e[3]
            elif e[7] == 0 and e[1] in (API['cudaFree'], API['cuMemFree_v2'], API['cuMemRelease']):
                live -= e[3]
            peak = max(peak, live)
        end_ns = self.now() if end_reason else None
        c.execute('INSERT INTO processes(pid, ppid, host, command_line, exe, rank, local_rank, start_unix_ns,'
                  ' start_mono_ns, end_ns, end_reason, library_version, schema_version, stack_depth,'
                  ' events_recorded, events_dropped, peak_device_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)',
                  (self.pid, 1, 'testhost', self.command_line, self.module, self.rank, self.rank,
                   1700000000 * 10**9, 5 * 10**9, end_ns, end_reason, '0.1.0', 1, self.stack_depth,
                   len(self.events), 0, peak))
        c.commit()
        c.close()
        return self.path


# ---- seed 001: the retained-tensor leak and its fix ---------------------------------
LEAK_ITERATIONS = 20
LEAK_BATCH, LEAK_IN, LEAK_HIDDEN = 32, 10, 2048
LEAK_RETAINED_BYTES = LEAK_BATCH * LEAK_HIDDEN * 4     # relu output kept in model.intermediate_tensors
LEAK_PLANTING_FUNCTION = 'ModelWithStoredTensor_forward_store'
LEAK_WEIGHTS = [LEAK_IN * LEAK_HIDDEN * 4, LEAK_HIDDEN * 4, LEAK_HIDDEN * 4, 4]   # linear1 W, b; linear2 W, b


def _leak_workload(path, iterations, fixed, markers=True, stack_depth=32, rank=None, pid=4242):
    t = Trace(path, pid=pid, rank=rank, stack_depth=stack_depth, command_line='./leak_retained%s' % (' --fixed' if fixed else ''),
              module='/opt/work/leak_retained')
    weights = [t.alloc(n, ['init_linear', 'ModelWithStoredTensor_init', 'main']) for n in LEAK_WEIGHTS]
    data = [t.alloc(LEAK_BATCH * LEAK_IN * 4, ['load_input', 'main']), t.alloc(LEAK_BATCH * 4, ['load_target', 'main'])]
    grads = []
    retained = []
    for i in range(iterations):
        if markers:
            t.push('train_step')
        h1 = t.alloc(LEAK_BATCH * LEAK_HIDDEN * 4, ['linear_forward', 'ModelWithStoredTensor_forward', 'train_step', 'main'])
        relu = t.alloc(LEAK_RETAINED_BYTES, ['relu_forward', LEAK_PLANTING_FUNCTION, 'ModelWithStoredTensor_forward', 'train_step', 'main'])
        t.free(h1)
        out = t.alloc(LEAK_BATCH * 4, ['linear_forward', 'ModelWithStoredTensor_forward', 'train_step', 'main'])
        loss = t.alloc(4, ['mse_loss', 'train_step', 'main'])
        if not grads:   # param.grad is created by the first backward and reused after
            grads = [t.alloc(n, ['accumulate_grad', 'backward', 'train_step', 'main']) for n in LEAK_WEIGHTS]
        g = t.alloc(LEAK_BATCH * LEAK_HIDDEN * 4, ['relu_backward', 'backward', 'train_step', 'main'])
        t.free(g)
        t.free(loss)
        t.free(out)
        retained.append(relu)
        if fixed:   # model.intermediate_tensors.clear()
            for p in retained:
                t.free(p)
            retained = []
        if markers:
            t.pop()
    for p in grads + data + weights:
        t.free(p)
    return t.close()


def leak_retained(dirpath, iterations=LEAK_ITERATIONS, **kw):
    """Seed 001, example 2: every iteration keeps its relu output alive."""
    return _leak_workload(os.path.join(dirpath, 'leak_retained.db'), iterations, fixed=False, **kw)


def leak_fixed(dirpath, iterations=LEAK_ITERATIONS, **kw):
    """Seed 001, example 3: the same loop, clearing the stored tensors each step."""
    return _leak_workload(os.path.join(dirpath, 'leak_fixed.db'), iterations, fixed=True, **kw)


# ---- an unmarked loop: automatic iteration detection -----------------------------------
UNMARKED_ITERATIONS = 37
UNMARKED_STEP = [(3 * MiB, 'copy_batch'), (8 * MiB, 'conv_forward'), (8 * MiB, 'conv_forward'),
                 (2 * MiB, 'pool_forward'), (64 * KiB, 'linear_forward'), (8 * MiB, 'conv_backward')]


def unmarked_loop(dirpath, iterations=UNMARKED_ITERATIONS, killed_in_last_step=False):
    """A training loop without NVTX or markers: setup, N identical steps, teardown
    (killed_in_last_step: the process ends in its last step, after 5 of its 6 allocations)."""
    t = Trace(os.path.join(dirpath, 'unmarked.db'), command_line='./unmarked_loop', module='/opt/work/unmarked_loop')
    model = [t.alloc(n, ['init_params', 'main']) for n in (40 * MiB, 40 * MiB, 4 * MiB)]
    grads = [t.alloc(n, ['zero_grad', 'main']) for n in (40 * MiB, 40 * MiB, 4 * MiB)]
    for i in range(iterations):
        if killed_in_last_step and i == iterations - 1:
            ptrs = [t.alloc(size, [fn, 'train_step', 'main']) for size, fn in UNMARKED_STEP[:4]]
            t.free(ptrs[1])
            t.alloc(UNMARKED_STEP[4][0], [UNMARKED_STEP[4][1], 'train_step', 'main'])
            return t.close(end_reason='signal SIGKILL')
        ptrs = [t.alloc(size, [fn, 'train_step', 'main']) for size, fn in UNMARKED_STEP[:4]]
        t.free(ptrs[1])
        ptrs[1] = None
        ptrs.append(t.alloc(UNMARKED_STEP[4][0], [UNMARKED_STEP[4][1], 'train_step', 'main']))
        ptrs.append(t.alloc(UNMARKED_STEP[5][0], [UNMARKED_STEP[5][1], 'train_step', 'main']))
        for p in reversed(ptrs):
            if p is not None:
                t.free(p)
    for p in grads + model:
        t.free(p)
    return t.close()


# ---- seed 000: batch sizes 64, 8, 32, 4 (tensor level, cudaMallocAsync) -------------------
SEQ_BATCHES = [64, 8, 32, 4]
SEQ_PARAMS = 896 + 18496 + 16010                       # SimpleConv: conv1, conv2, fc parameters
SEQ_PARAM_BYTES = SEQ_PARAMS * 4
SEQ_WORKSPACE = 4 * MiB                                 # cuDNN workspace, every step
SEQ_PER_SAMPLE_ALLOCS = [3 * 32 * 32 * 4, 32 * 30 * 30 * 4, 32 * 30 * 30 * 4, 32 * 15 * 15 * 4,
                         64 * 13 * 13 * 4, 64 * 13 * 13 * 4, 64 * 6 * 6 * 4, 10 * 4]
SEQ_PER_SAMPLE = sum(SEQ_PER_SAMPLE_ALLOCS)
# params, grads and Adam's two moments live throughout; the workspace during each step
SEQ_FIXED = 4 * SEQ_PARAM_BYTES + SEQ_WORKSPACE


def seq_peak(bs):
    return SEQ_FIXED + SEQ_PER_SAMPLE * bs


def _train_step_pool(t, bs, per_sample_allocs, workspace, api='cudaMallocAsync', fail_at=None):
    """Forward (activations live together), backward, free: peak = live + workspace + bs*sum."""
    ws = t.alloc(workspace, ['cudnn_workspace', 'conv_forward', 'train_step', 'main'], api=api) if workspace else None
    acts = []
    for k, n in enumerate(per_sample_allocs):
        if fail_at is not None and k == fail_at:
            t.alloc(bs * n, ['layer_forward_%d' % k, 'forward', 'train_step', 'main'], api=api,
                    result=CUDA_ERROR_MEMORY_ALLOCATION)
            return False
        acts.append(t.alloc(bs * n, ['layer_forward_%d' % k, 'forward', 'train_step', 'main'], api=api))
    for p in reversed(acts):
        t.free(p)
    if ws:
        t.free(ws)
    return True


def batch_sequence(dirpath, batches=SEQ_BATCHES):
    """Seed 000, example 3: one step per batch size, NVTX range 'train_step batch_size=N'."""
    t = Trace(os.path.join(dirpath, 'batch_sequence.db'), command_line='./batch_sequence', module='/opt/work/batch_sequence')
    state = [t.alloc(SEQ_PARAM_BYTES, [fn, 'main'], api='cudaMallocAsync')
             for fn in ('init_params', 'zero_grad', 'adam_init_exp_avg', 'adam_init_exp_avg_sq')]
    for i, bs in enumerate(batches):
        # the shim fills ranges.batch_size from the message; leave some NULL to test parsing
        t.push('train_step batch_size=%d' % bs, batch_size=bs if i % 2 else None)
        _train_step_pool(t, bs, SEQ_PER_SAMPLE_ALLOCS, SEQ_WORKSPACE)
        t.pop()
    for p in state:
        t.free(p)
    return t.close()


# PyTorch's default caching allocator at the device level: segments reserved
# with cudaMalloc when the pool runs short and never freed, so reserved memory
# stays at the largest batch's need (seed 000's "smaller batch, no less memory").
CACHING_FRAMES = ['c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc',
                  'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc',
                  'at::native::empty_cuda', 'train_step', 'main']
CACHING_SEGMENT = 20 * MiB


def caching_segments_for(peak):
    return -(-peak // CACHING_SEGMENT)


def batch_sequence_caching(dirpath, batches=SEQ_BATCHES, stack_depth=32):
    """The same steps seen at the device level under the default caching allocator."""
    t = Trace(os.path.join(dirpath, 'batch_sequence_caching.db'), stack_depth=stack_depth,
              command_line='python train.py', module='/usr/lib/python3/site-packages/torch/lib/libc10_cuda.so')
    segments = 0
    for bs in batches:
        t.push('train_step batch_size=%d' % bs)
        need = caching_segments_for(seq_peak(bs))
        while segments < need:
            t.alloc(CACHING_SEGMENT, CACHING_FRAMES)
            segments += 1
        t.pop()
    return t.close()


# ---- seed 002 / 004: the memory equation, marker API batch sizes ----------------------------
EQ_PARAMS = 3 * 2000 * 2000                  # three 2000x2000 layers
EQ_LAYERS, EQ_HIDDEN, EQ_INPUT = 5, 5000, 784
EQ_FIXED = EQ_PARAMS * 4 + 2 * EQ_PARAMS * 4  # model + Adam's two states
EQ_PER_SAMPLE_ALLOCS = [EQ_INPUT * 4] + [EQ_HIDDEN * 4] * EQ_LAYERS
EQ_PER_SAMPLE = sum(EQ_PER_SAMPLE_ALLOCS)     # B*D*4 + B*L*H*4 per sample
EQ_BATCHES = [16, 32, 48, 64, 96, 128, 16, 64]
EQ_DEVICE_TOTAL = 17071734784                 # "15.90 GiB total capacity" (seed 004)


# peak's rounding margin for the memory equation: 9 allocations live at the
# peak (3 of state, 6 per-sample), addresses 512-aligned: 511 bytes each
EQ_MARGIN = 9 * 511


def eq_max_batch(total=EQ_DEVICE_TOTAL, outside=0):
    return (total - outside - EQ_MARGIN - EQ_FIXED) // EQ_PER_SAMPLE


def memory_equation(dirpath, batches=EQ_BATCHES, outside=None):
    """outside: NVML samples at the start and the end with that much held
    outside the trace (none: no NVML in the trace)."""
    """Seed 002: Total = model + optimizer (fixed) + activations + batch (per sample)."""
    t = Trace(os.path.join(dirpath, 'memory_equation.db'), device_total=EQ_DEVICE_TOTAL, device_name='Tesla V100-PCIE-16GB',
              command_line='./memory_equation', module='/opt/work/memory_equation')
    state = [t.alloc(EQ_PARAMS * 4, [fn, 'main'], api='cudaMallocAsync') for fn in ('init_params', 'adam_m', 'adam_v')]
    if outside is not None:
        t.nvml_sample(outside)
    for i, bs in enumerate(batches):
        t.iteration(i, bs)
        _train_step_pool(t, bs, EQ_PER_SAMPLE_ALLOCS, 0)
    for p in state:
        t.free(p)
    if outside is not None:
        t.nvml_sample(outside)
    return t.close()


# ---- an OOM: growing batch sizes until an allocation fails --------------------------------
OOM_BATCHES = [1024, 4096, 16384, 65536, 262144]


def oom_failed_batch():
    for bs in OOM_BATCHES:
        if EQ_FIXED + bs * EQ_PER_SAMPLE > EQ_DEVICE_TOTAL:
            return bs
    raise AssertionError('no batch fails')


def oom_fail_layer():
    """Index of the first activation that does not fit any more."""
    bs, live = oom_failed_batch(), EQ_FIXED
    for k, n in enumerate(EQ_PER_SAMPLE_ALLOCS):
        if live + bs * n > EQ_DEVICE_TOTAL:
            return k
        live += bs * n
    raise AssertionError('nothing fails')


OOM_FAIL_LAYER = oom_fail_layer()
OOM_REQUESTED = oom_failed_batch() * EQ_PER_SAMPLE_ALLOCS[OOM_FAIL_LAYER]
OOM_LIVE = EQ_FIXED + oom_failed_batch() * sum(EQ_PER_SAMPLE_ALLOCS[:OOM_FAIL_LAYER])


def oom(dirpath):
    """Device-level allocations (PYTORCH_NO_CUDA_MEMORY_CACHING=1 style) with
    NVTX ranges "step bs=N"; the first batch that does not fit fails."""
    t = Trace(os.path.join(dirpath, 'oom.db'), device_total=EQ_DEVICE_TOTAL, device_name='Tesla V100-PCIE-16GB',
              command_line='./oom', module='/opt/work/oom')
    state = [t.alloc(EQ_PARAMS * 4, [fn, 'main']) for fn in ('init_params', 'adam_m', 'adam_v')]
    for bs in OOM_BATCHES:
        t.push('step bs=%d' % bs)
        fits = EQ_FIXED + bs * EQ_PER_SAMPLE <= EQ_DEVICE_TOTAL
        _train_step_pool(t, bs, EQ_PER_SAMPLE_ALLOCS, 0, api='cudaMalloc', fail_at=None if fits else OOM_FAIL_LAYER)
        if not fits:
            break   # RuntimeError: CUDA out of memory; the range is never popped
        t.pop()
    return t.close()


# ---- kernels only: automatic iterations from CUPTI kernel names ------------------------------
KERNEL_ITERATIONS = 12


def kernels_only(dirpath, iterations=KERNEL_ITERATIONS):
    """A caching allocator that reserved everything up front: no allocation
    pattern, but the kernel launches repeat every step."""
    t = Trace(os.path.join(dirpath, 'kernels.db'), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    t.kernel('init_weights_kernel')
    for i in range(iterations):
        for name in ('sgemm_128x64_nn', 'relu_kernel', 'sgemm_128x64_tn', 'relu_backward_kernel', 'adam_update_kernel'):
            t.kernel(name)
    t.kernel('checkpoint_copy_kernel')
    return t.close()


def kernels_two_devices(dirpath, iterations=KERNEL_ITERATIONS):
    """A model split across two GPUs in one process (no allocation pattern):
    each step runs its first layers on device 0 and the rest on device 1,
    each device's kernels in the same order every step, but how the two
    devices' kernels interleave in time differs from step to step, as the
    GPUs run side by side (on an H200 x2 host the kernels of both read as 6
    iterations for 20 steps)."""
    import random
    rng = random.Random(7)
    t = Trace(os.path.join(dirpath, 'two_devices.db'), command_line='python split.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    t.kernel('init_weights_kernel')
    for i in range(iterations):
        first = ['gemm_fwd_a', 'relu_fwd_a', 'gemm_bwd_a', 'relu_bwd_a', 'adam_a']
        second = ['gemm_fwd_b', 'relu_fwd_b', 'gemm_fwd_c', 'loss_fwd', 'loss_bwd', 'gemm_bwd_c', 'relu_bwd_b',
                  'gemm_bwd_b', 'adam_b']
        t0 = t.now()
        # each device's own order; the two merged at random (their start times side by side)
        starts = sorted(rng.sample(range(1, 40), len(first) + len(second)))
        order = rng.sample([0] * len(first) + [1] * len(second), len(first) + len(second))
        for when, d in zip(starts, order):
            t.kernel((first if d == 0 else second).pop(0), device=d, start=t0 + 100 * when)
        t.t = t0 + 100 * 41
    return t.close()


KERNEL_STEP = ['conv_fwd_%d' % i for i in range(8)] + ['conv_bwd_%d' % i for i in range(8)] + \
    ['adam_exp_avg', 'adam_exp_avg_sq', 'adam_update', 'adam_step_count']


def kernels_first_step(dirpath, iterations=KERNEL_ITERATIONS, first_extra=4, first_other=2, fill_at=16):
    """As kernels_only, with a ResNet-like step of 20 kernels whose first
    step (AdamW's first) launches first_extra zero fills for its state (at
    fill_at: 16, before the update; 3, inside the forward pass, as float16
    autocast's GradScaler does on its first step) and runs its last
    first_other update kernels under other names."""
    t = Trace(os.path.join(dirpath, 'kernels_first-%d-%d.db' % (fill_at, first_other)), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    t.kernel('init_weights_kernel')
    for i in range(iterations):
        step = list(KERNEL_STEP)
        if i == 0:
            step[fill_at:fill_at] = ['zero_fill_kernel'] * first_extra
            for k in range(first_other):
                step[-1 - k] = 'adam_first_step_%d' % k
        for name in step:
            t.kernel(name)
    return t.close()


ROTATED_STEP = ['randn_kernel'] + ['layer_fwd_%d' % i for i in range(20)] + ['layer_bwd_%d' % i for i in range(20)] + \
    ['adam_exp_avg', 'adam_exp_avg_sq', 'adam_update', 'adam_step_count']


def kernels_first_step_rotated(dirpath, iterations=KERNEL_ITERATIONS, cut_last=0):
    """Steps of 45 kernels, beginning with the batch's randn_kernel; the
    first step (AdamW's first) runs 6 kernels of its own in place of the
    update's first two, then the update's last two as every step does: the
    exact repetition begins 2 kernels before the first step's end, so the
    pattern's phase is not the steps' (as a ResNet-50's on an H200).
    cut_last: the last step lacks its last cut_last kernels (the job died)."""
    t = Trace(os.path.join(dirpath, 'kernels_rotated-%d.db' % cut_last), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    t.kernel('init_weights_kernel')
    for i in range(iterations):
        step = list(ROTATED_STEP)
        if i == 0:
            step[-4:-2] = ['adam_first_%d' % k for k in range(6)]
        if i == iterations - 1 and cut_last:
            step = step[:-cut_last]
        for name in step:
            t.kernel(name)
    return t.close()


def kernels_steps_that_differ(dirpath, iterations=KERNEL_ITERATIONS, evaluate_every=0):
    """Steps whose kernels differ (no allocation pattern, as under a caching
    allocator): a transformer trained on a new sequence length every step,
    whose GEMM kernels cuBLAS picks by shape (on an H200 a GPT-2 read as "a
    pattern of 1 kernel launch repeats 56 times" for 20 steps). Each step
    begins with the batch's randint_kernel. evaluate_every: an evaluation of
    one batch (15 kernels, shorter than a step's 32) after every that many
    steps."""
    import random
    rng = random.Random(11)
    t = Trace(os.path.join(dirpath, 'kernels_differ-%d.db' % evaluate_every), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    t.kernel('init_weights_kernel')
    for i in range(iterations):
        shape = lambda: rng.randrange(4) if not evaluate_every else 0   # noqa: E731
        step = ['randint_kernel', 'embedding_fwd'] + ['gemm_fwd_%d_tile%d' % (k, shape()) for k in range(8)] + \
            ['softmax_fwd', 'nll_fwd', 'nll_bwd', 'softmax_bwd'] + \
            ['gemm_bwd_%d_tile%d' % (k, shape()) for k in range(16)] + ['embedding_bwd', 'adam_update']
        for name in step:
            t.kernel(name)
        if evaluate_every and i % evaluate_every == evaluate_every - 1:
            for _ in range(1):
                for name in ['randn_kernel', 'embedding_fwd'] + ['gemm_fwd_%d_tile0' % k for k in range(8)] + \
                        ['softmax_fwd', 'argmax', 'eq', 'sum', 'item_copy']:
                    t.kernel(name)
    return t.close()


def _inference_batch(t, tile, layers):
    """One batch of a transformer's forward pass: its GEMMs named by tile."""
    t.kernel('embedding_fwd')
    for _ in range(layers):
        for name in ('layernorm', 'gemm_qkv_' + tile, 'attention', 'gemm_proj_' + tile, 'layernorm',
                     'gemm_fc1_' + tile, 'gelu', 'gemm_fc2_' + tile, 'add'):
            t.kernel(name)
    for name in ('layernorm', 'gemm_head_' + tile, 'argmax'):
        t.kernel(name)


def kernels_inference(dirpath, steps=10, layers=12, last_differs=True, tiles_vary=False):
    """An inference loop (no backward pass) of a 12-layer transformer: every
    layer launches the same kernels, two LayerNorms among them, so a
    LayerNorm recurs at regular gaps between batches too; the last batch is
    smaller and gets other GEMM tiles. (A review found 250 "iterations" for
    these 10 batches.) tiles_vary: every batch has a new length, and cuBLAS
    picks its GEMM tiles by it (on an H200 a 12-layer GPT-2 read as "a
    pattern of 20 kernel launches repeats 12 times", one batch's layers)."""
    import random
    rng = random.Random(3)
    t = Trace(os.path.join(dirpath, 'inference-%d-%d.db' % (steps, tiles_vary)), command_line='python serve.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for i in range(steps):
        tile = 'small' if last_differs and i == steps - 1 else 'big'
        if tiles_vary:
            tile = 't%d' % rng.randrange(5)
        _inference_batch(t, tile, layers)
    return t.close()


def pool_inference_varlen(dirpath, batches=20, layers=12):
    """An inference loop under a stream-ordered pool on a new sequence length
    every batch: each layer allocates at the same call sites as the others,
    sized by the batch's length, so the pattern by sizes is one batch's
    layers (a 12-layer GPT-2 on an H200: 12 "iterations" for 20 batches)."""
    import random
    rng = random.Random(5)
    t = Trace(os.path.join(dirpath, 'pool_infer.db'), command_line='python serve.py')
    t.alloc(256 * MiB, ['load_weights', 'main'])
    for i in range(batches):
        n = rng.randrange(16, 257)
        ids = t.alloc(8 * n * 8, ['embed', 'forward', 'main'], api='cudaMallocAsync')
        h = t.alloc(8 * n * 1024, ['embed', 'forward', 'main'], api='cudaMallocAsync')
        for _ in range(layers):
            a = t.alloc(8 * n * 3072, ['attention', 'block', 'forward', 'main'], api='cudaMallocAsync')
            m = t.alloc(8 * n * 4096, ['mlp', 'block', 'forward', 'main'], api='cudaMallocAsync')
            t.free(a)
            h2 = t.alloc(8 * n * 1024, ['residual', 'block', 'forward', 'main'], api='cudaMallocAsync')
            t.free(m)
            t.free(h)
            h = h2
        out = t.alloc(8 * n * 2048 * 4, ['head', 'forward', 'main'], api='cudaMallocAsync')
        t.free(h)
        t.free(out)
        t.free(ids)
    return t.close()


def one_site_loop(dirpath, stack_depth=32, api='cudaMalloc'):
    """30 weights of distinct sizes, then 20 steps of an activation and 3
    temporaries, every allocation through one allocator function (one call
    site; stack_depth 0: no call sites at all): the sizes are all that tell
    the allocations apart (a review found 110 "iterations" once they were set
    aside)."""
    t = Trace(os.path.join(dirpath, 'one_site-%d-%s.db' % (stack_depth, api)), command_line='./app',
              stack_depth=stack_depth)
    for i in range(30):
        t.alloc((i + 1) * 4096, ['pool_alloc', 'main'], api=api)
    for s in range(20):
        act = t.alloc(64 * MiB, ['pool_alloc', 'main'], api=api)
        for k in range(3):
            t.free(t.alloc((k + 1) * MiB, ['pool_alloc', 'main'], api=api))
        t.free(act)
    return t.close()


def kernels_inference_runs(dirpath, runs=3, batches=20):
    """An inference benchmark: 3 runs of 20 batches, one batch size each
    (other GEMM tiles), a statistics reset kernel at each run's start: the
    exact pattern is one run's batches; the reset recurs once per run, no
    step (a review found 3 "iterations")."""
    t = Trace(os.path.join(dirpath, 'inference_runs.db'), command_line='python bench.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for tile in ['bs1', 'bs8', 'bs32'][:runs]:
        t.kernel('fill_stats')
        for i in range(batches):
            _inference_batch(t, tile, 12)
    return t.close()


def kernels_long_evaluation_at_the_end(dirpath, steps=20, batches=64):
    """20 training steps of 71 kernels, then an evaluation of 64 batches of
    20 kernels that share the forward kernels: the evaluation's batches
    outnumber the steps, and a step is then under four of their gaps."""
    t = Trace(os.path.join(dirpath, 'long_eval.db'), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    fwd = ['randn_kernel'] + ['fwd_%d' % k for k in range(18)] + ['loss_fwd']
    for i in range(steps):
        for name in fwd + ['loss_bwd'] + ['bwd_%d' % k for k in range(36)] + ['adam_%d' % k for k in range(14)]:
            t.kernel(name)
    for i in range(batches):
        for name in fwd:
            t.kernel(name)
    return t.close()


def kernels_evaluation_every(dirpath, steps=20, every=5, batches=3, backward_names=True, once_after=-1):
    """A conv net's training steps (31 kernels, the same every step, under a
    caching allocator: no allocation pattern), evaluated on `batches` forward
    passes (15 kernels each: 45, longer than a step) after every `every`
    steps: the exact pattern is `every` steps and an evaluation (on an H200
    such a conv net read as 3 iterations for 20 steps). backward_names: the
    backward pass's kernels are named so, as PyTorch's and cuDNN's are
    (nll_loss_backward, dgrad, wgrad); else named as the forward's are.
    once_after >= 0: one evaluation only, after that step."""
    t = Trace(os.path.join(dirpath, 'eval_every-%d-%d-%d-%d.db' % (every, batches, backward_names, once_after)),
              command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    fwd = ['randn_kernel', 'conv1_fwd', 'relu', 'conv2_fwd', 'relu', 'pool_fwd', 'linear_fwd', 'log_softmax', 'nll_loss']
    bwd = ['nll_loss_backward', 'log_softmax_backward', 'linear_dgrad', 'linear_wgrad', 'pool_backward',
           'relu_backward', 'conv2_dgrad', 'conv2_wgrad', 'relu_backward', 'conv1_wgrad']
    if not backward_names:
        bwd = ['grad_kernel_%d' % k for k in range(len(bwd))]
    opt = ['adam_%d' % k for k in range(12)]
    for i in range(steps):
        for name in fwd + bwd + opt:
            t.kernel(name)
        if (once_after < 0 and i % every == every - 1) or i == once_after:
            for _ in range(batches):
                for name in ['randn_kernel', 'conv1_fwd', 'relu', 'conv2_fwd', 'relu', 'pool_fwd', 'linear_fwd',
                             'argmax', 'eq', 'sum', 'item_copy', 'bn_eval', 'copy', 'fill', 'add']:
                    t.kernel(name)
    return t.close()


_CONV_FWD = ['randn_kernel', 'conv1_fwd', 'relu', 'conv2_fwd', 'relu', 'pool_fwd', 'linear_fwd', 'log_softmax',
             'nll_loss']
_CONV_BWD = ['nll_loss_backward', 'log_softmax_backward', 'linear_dgrad', 'linear_wgrad', 'pool_backward',
             'relu_backward', 'conv2_dgrad', 'conv2_wgrad', 'relu_backward', 'conv1_wgrad']


def kernels_epochs(dirpath, epochs=3, per=7):
    """Epochs of `per` conv-net steps under a caching allocator, the last of
    each a smaller batch for which cuDNN picks other algorithms (another
    forward kernel, and two in place of a wgrad one, as on an H200): the
    exact kernel pattern is an epoch."""
    t = Trace(os.path.join(dirpath, 'epochs-%d-%d.db' % (epochs, per)), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for e in range(epochs):
        for b in range(per):
            last = b == per - 1
            for name in _CONV_FWD + _CONV_BWD + ['adam_%d' % k for k in range(12)]:
                if last and name == 'conv2_fwd':
                    t.kernel('conv2_fwd_small')
                elif last and name == 'conv2_wgrad':
                    t.kernel('cutlass_conv2d_wgrad_kernel')   # as on an H200: cutlass's wgrad and
                    t.kernel('reduce_split_k_kernel')         # a split-K reduction in its place
                else:
                    t.kernel(name)
    return t.close()


def kernels_multitask(dirpath, steps=20, heads=2):
    """Multi-task training under a caching allocator: a shared trunk and one
    backward() per task head (each head its own kernels), then one fused
    optimizer step: the step is all heads' passes."""
    t = Trace(os.path.join(dirpath, 'multitask-%d.db' % heads), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for i in range(steps):
        for h in range(heads):
            for name in _CONV_FWD[:7] + ['head%d_fwd' % h, 'head%d_loss' % h, 'head%d_loss_backward' % h,
                                         'head%d_dgrad' % h, 'head%d_wgrad' % h] + _CONV_BWD[4:]:
                t.kernel(name)
        t.kernel('fused_adam')
    return t.close()


def kernels_accumulation(dirpath, steps=20, accum=4, optimizer=('fused_adam',)):
    """Gradient accumulation under a caching allocator: `accum` micro-batches
    (a conv net's forward and backward passes), then the optimizer's kernels
    (one fused AdamW kernel by default): the optimizer steps are the loop's."""
    t = Trace(os.path.join(dirpath, 'accum-%d-%d.db' % (accum, len(optimizer))), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for i in range(steps):
        for m in range(accum):
            for name in _CONV_FWD + ['div'] + _CONV_BWD:
                t.kernel(name)
        for name in optimizer:
            t.kernel(name)
    return t.close()


def xla_compile_staging(dirpath, inside=True, compile_tid=None, kernel_steps=0, autotune=False, init_kernels=0,
                        pool_gib=100, keep_per_step=0, free_pool=False, init_shares=False, async_alloc=False):
    """A JAX program under preallocation: its one device allocation, then
    XLA's compilation of jit_step (an XlaCompile range in the TSL domain,
    as JAX pushes it) whose autotuner pins 4 host staging buffers of a few
    bytes 21 times over; the steps after it allocate nothing (on an H200 this
    read as 21 iterations). inside=False: the same staging after the
    compilation ends (a loop of the program's own that pins buffers).
    compile_tid: the compilation runs on that thread, beside the program's
    (a background compilation of another module while the loop runs).
    kernel_steps: that many steps after the compilation, each the same 5
    kernels (a later kernel window of a longer run shows them). autotune:
    XLA's autotuner runs two candidates named as the step's fusions, each
    between its buffer check and comparison, 100 times over, inside the
    compilations of jit_data and jit__normal before and of jit_step (on an
    H200 the first kernel window held only these). init_kernels: before
    jit_step's compilation, the program's initialisation runs 3 small
    functions' kernels that many times over (random parameters, one by one);
    init_shares: one of them has the name of one of the step's kernels (on
    the H200, 15 of the step's 29 kernel names ran before its compilation).
    async_alloc: a stream-ordered allocation kept from the start (a library's
    cudaMallocAsync: the commands then look at pool memory).
    pool_gib: the size of its one device allocation (the device has 128 GiB:
    100 of it is 78%, near JAX's 75% of an H200's 139.8).
    keep_per_step: each step also allocates that many bytes of device memory
    outside the pool and keeps them (at train.py:88). free_pool: the pool
    is given back at the end (as JAX does at exit).
    (cudaMallocHost stands for the driver's cuMemHostAlloc XLA calls.)"""
    t = Trace(os.path.join(dirpath, 'xla_compile-%d-%s-%d-%d-%d-%d-%d-%d-%d-%d.db' % (
        inside, compile_tid, kernel_steps, autotune, init_kernels, pool_gib, keep_per_step, free_pool, init_shares,
        async_alloc)),
              command_line='python train.py', device_total=128 * GiB)
    pool = t.alloc(pool_gib * GiB, ['BFCAllocator::AllocateRaw', 'main'], api='cuMemAlloc_v2')
    if async_alloc:
        t.alloc(MiB, ['library_workspace', 'main'], api='cudaMallocAsync')

    def autotuning(reps):
        for _ in range(reps):
            for name in ('RedzoneAllocatorKernel', 'gemm_fusion_dot', 'xla_fp_comparison', 'RedzoneAllocatorKernel',
                         'gemm_fusion_dot_1', 'xla_fp_comparison'):
                t.kernel(name)
            t.t += 20000

    for module in ('jit_data', 'jit__normal') if autotune else ():
        t.push('XlaCompile:#module=%s#' % module, domain='TSL')
        autotuning(30)
        t.pop()
        t.t += 100000
    for _ in range(init_kernels):
        for name in ('loop_dynamic_slice_fusion', 'loop_squeeze_fusion',
                     'loop_add_fusion' if init_shares else 'loop_multiply_fusion'):
            t.kernel(name)
        t.t += 30000
    main_tid = t.tid
    if compile_tid is not None:
        t.tid = compile_tid
    t.push('XlaCompile:#module=jit_step#', domain='TSL')
    if autotune:
        autotuning(40)
    t.tid = main_tid
    if not inside:
        t.pop()
    for i in range(21):
        for k, size in enumerate((8, 4, 8, 8)):
            t.free(t.alloc(size, ['stage_%d' % k, 'HostBuffer', 'main'], api='cudaMallocHost'))
    for k in range(30):   # the autotuner's other buffers
        t.free(t.alloc(4096 * (k + 1), ['autotune_%d' % k, 'HostBuffer', 'main'], api='cudaMallocHost'))
    if inside:
        t.pop()
    for i in range(kernel_steps):
        for name in ('input_fusion', 'gemm_fusion_dot', 'loop_tanh_fusion', 'gemm_fusion_dot_1', 'loop_add_fusion'):
            t.kernel(name)
        if keep_per_step:
            t.alloc(keep_per_step, ['keep', 'train.py:88', 'main'], api='cuMemAlloc_v2')
        t.t += 50000
    if free_pool:
        t.free(pool, api='cuMemFree_v2')
    return t.close()


def jax_recompiling(dirpath, steps=40):
    """A JAX job under preallocation that compiles its step again every step
    (a shape that changes): the main thread compiles step s+1 (an XlaCompile
    range, 30 ms) right after dispatching step s, so step s's 5 kernels run
    on the GPU while the host is inside the next compilation; the last step's
    run after every compilation."""
    t = Trace(os.path.join(dirpath, 'jax_recompiling.db'), command_line='python train.py')
    t.t = 10**9
    t.alloc(60 * GiB, ['BFCAllocator::AllocateRaw', 'main'], api='cuMemAlloc_v2')
    for s in range(steps):
        t.push('XlaCompile:#module=jit_step#', domain='TSL')
        t.t += 30 * 10**6
        t.pop()
        launch = t.t
        t.t += 1000
        for j, name in enumerate(('input_fusion', 'gemm_fusion_dot', 'loop_tanh_fusion', 'gemm_fusion_dot_1',
                                  'loop_add_fusion')):
            t.kernel(name, start=launch + 5000 + j * 4 * 10**6)
    return t.close()


def kernels_sampled_run(dirpath, steps=600, step_ms=100, keep_every=50, sampled=True, later='same', jump_at_s=None,
                        later_step_ms=None, setup_steps=0, churn_s=None, windows='random'):
    """A PyTorch job under the default allocator, warm from its first step (no
    allocation per step), 600 steps of 100 ms (60 s) of 20 kernels each; every
    keep_every-th step asks for one more 20 MiB segment (a cache that creeps
    up; None: it never does). sampled: the shim's default kernel sampling
    (every kernel for the first 5 s, then 1 s of every 20 s, as its 'kernels'
    notes say), else every kernel. later: what the later windows run: 'same'
    steps, or 'other' work (other kernels). jump_at_s: one 400 MiB segment
    then, held (a checkpoint loaded once). later_step_ms: the steps' length
    after the first 6 s. setup_steps: that many steps first launch set-up
    kernels that never repeat (so the first window holds few training steps
    and the iterations come from a later one), the cache taking 9 segments
    in the steps after them (warm-up), keep_every aside. churn_s: a segment
    of 2 to 40 MiB taken every 2 s, all of them given back every churn_s s.
    windows: after the first, each 1 s window at a 'random' moment of its
    20 s (the shim's; seeded here) or at its 'last' second (the shim's first
    schedule)."""
    t = Trace(os.path.join(dirpath, 'sampled-%s-%s-%s-%s-%s-%s-%s-%s.db' % (keep_every, sampled, later, jump_at_s,
                                                                         later_step_ms, setup_steps, churn_s, windows)),
              command_line='python train.py')
    rng = random.Random(38)
    opens, closed = [], 5 * 10**9   # the windows' starts after the first 5 s (relative)
    while closed < steps * max(step_ms, later_step_ms or 0) * 10**6:
        period = 5 * 10**9 + 20 * 10**9 * len(opens)
        at = period + (rng.randrange(19 * 10**9) if windows == 'random' else 19 * 10**9)
        opens.append(max(at, closed + 10**9))
        closed = opens[-1] + 10**9
    churned = []
    t.t = base = 10**9
    notes = [(base, 'sampled: every kernel for the first 5 s of GPU work, then during 1 s of every 20 s; recording')]
    for _ in range(4):
        t.alloc(20 * MiB, CACHING_FRAMES[:2] + ['train.py:42'])
    on, t0, jumped = True, base, False
    for s in range(steps):
        rel = t0 - base
        ms = later_step_ms if later_step_ms and rel >= 6 * 10**9 else step_ms
        rec = not sampled or rel < 5 * 10**9 or any(o <= rel < o + 10**9 for o in opens)
        if rec != on:
            notes.append((t0, 'recording' if rec else 'paused'))
            on = rec
        t.t = t0
        if keep_every and s and s % keep_every == 0:
            t.alloc(20 * MiB, CACHING_FRAMES[:2] + ['train.py:42'])
        if jump_at_s is not None and not jumped and rel >= jump_at_s * 10**9:
            t.alloc(400 * MiB, CACHING_FRAMES[:2] + ['train.py:30'])
            jumped = True
        if churn_s and rel // (2 * 10**9) > (rel - ms * 10**6) // (2 * 10**9):
            churned.append(t.alloc(2 * MiB * rng.randint(1, 20), CACHING_FRAMES[:2] + ['train.py:50']))
        if churn_s and rel // (churn_s * 10**9) > (rel - ms * 10**6) // (churn_s * 10**9):
            for ptr in churned:
                t.free(ptr)
            churned = []
        if setup_steps <= s < setup_steps + 9:
            t.alloc(20 * MiB, CACHING_FRAMES[:2] + ['train.py:40'])
        for j in range(20):
            if rec:
                other = later == 'other' and rel >= 6 * 10**9
                name = 'init_%d' % (20 * s + j) if s < setup_steps else ('eval_%d' if other else 'k%d') % j
                t.kernel(name, start=t0 + j * ms * 10**6 // 25)
        t.t = t0 + ms * 10**6 * 9 // 10
        t0 += ms * 10**6
    t.t = t0
    path = t.close()
    with sqlite3.connect(path) as con:
        con.executemany("INSERT INTO notes (t_ns, component, message) VALUES (?, 'kernels', ?)", notes)
    return path


def kernels_training_layers(dirpath, steps=20, layers=4):
    """A training loop of a 4-layer model whose backward pass launches one
    LayerNorm gradient kernel per layer, 8 kernels apart, while the step's
    rest (the loss's and the embedding's gradients, the update, the forward
    pass) is between 1.5 and 4 of those gaps: a layer's backward pass, not a
    step, whatever its kernels' names."""
    t = Trace(os.path.join(dirpath, 'training_layers.db'), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for i in range(steps):
        step = ['embedding_fwd'] + ['ln_fwd', 'gemm_fwd'] * layers + ['loss_fwd', 'loss_backward']
        for _ in range(layers):
            step += ['layer_norm_backward', 'gemm_dgrad', 'gemm_wgrad', 'gelu_backward', 'gemm_dgrad', 'gemm_wgrad',
                     'add_grad', 'copy_grad']
        step += ['embedding_backward', 'adam_update']
        for name in step:
            t.kernel(name)
    return t.close()


def kernels_after_set_up(dirpath, steps=20, set_up=300):
    """A sanity forward pass, set_up copy kernels, then steps identical
    steps of 59 kernels: the forward pass's first kernel is no step."""
    t = Trace(os.path.join(dirpath, 'set_up-%d.db' % set_up), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    step = ['randn_kernel'] + ['fwd_%d' % k for k in range(20)] + ['bwd_%d' % k for k in range(30)] + \
        ['adam_%d' % k for k in range(8)]
    for name in step[:21]:
        t.kernel(name)
    for k in range(set_up):
        t.kernel('copy_weights_%d' % (k % 7))
    for i in range(steps):
        for name in step:
            t.kernel(name)
    return t.close()


FILLED_STEP = ['gemm_a', 'relu', 'gemm_a', 'relu', 'gemm_b', 'splitk', 'softmax_fwd', 'nll_fwd', 'fill', 'fill',
               'nll_bwd', 'softmax_bwd', 'gemm_c', 'gemm_d', 'reduce_a', 'mul', 'gemm_e', 'splitk_b', 'gemm_f',
               'reduce_b', 'mul', 'gemm_g', 'reduce_b'] + ['adam_%d' % i for i in range(7)]


def kernels_first_step_filled(dirpath, iterations=KERNEL_ITERATIONS):
    """Steps of 30 kernels as a PyTorch MLP with Adam runs them under the
    default allocator (an H200, session 35); the first step (Adam's first)
    launches 12 zero fills for its state between the backward pass and the
    update, with the fill kernel the loss's backward launches too: the exact
    repetition begins at the first step's update, 7 kernels before its end,
    and no unique kernel marks where the steps begin."""
    t = Trace(os.path.join(dirpath, 'kernels_filled.db'), command_line='python train.py')
    t.alloc(512 * MiB, CACHING_FRAMES)
    for i in range(iterations):
        step = list(FILLED_STEP)
        if i == 0:
            step[23:23] = ['fill'] * 12
        for name in step:
            t.kernel(name)
    return t.close()


# ---- the memory ledger --------------------------------------------------------------
LEDGER_CONTEXT = 500 * MiB
LEDGER_TORCH = ['c10::cuda::CUDACachingAllocator::DeviceCachingAllocator::malloc', 'at::empty_cuda']


def ledger_job(dirpath, process_known=True, samples=True, unaccounted=1 * MiB, driver_reserved=None):
    """A framework segment, cuBLAS's workspace, the program's own buffer and
    a stream-ordered pool (reservation from CUPTI's records), with NVML samples
    at the first allocation and at the end: the context is LEDGER_CONTEXT,
    other processes hold 3 GiB, and NVML's figure at exit is the buckets plus
    unaccounted bytes. driver_reserved: what NVML's memory info v2 says the
    driver and firmware set aside (counted in the device's used bytes)."""
    t = Trace(os.path.join(dirpath, 'ledger.db'), device_total=80 * GiB)
    t.alloc(2 * GiB, LEDGER_TORCH + ['forward', 'main'])                                     # a segment
    first_t = t.now()
    t.alloc(128 * MiB, ['libcublas.so.13+0x5b45ee', 'cublasCreate_v2', 'main'], api='cuMemAlloc_v2')
    t.alloc(64 * MiB, ['upload_table', 'main'])                                              # the program's own
    for _ in range(3):
        t.alloc(100 * MiB, LEDGER_TORCH + ['forward', 'main'], api='cudaMallocAsync')
    t.free(t.alloc(200 * MiB, LEDGER_TORCH + ['forward', 'main'], api='cudaMallocAsync'))  # the pool's peak
    last_t = t.now() + 10
    db = t.close()
    con = sqlite3.connect(db)
    # the pool's reservation, as CUPTI's driver-memory records give it
    con.execute("INSERT INTO driver_memory(t_ns, op, memory_kind, bytes, device, is_async, pool_size, pool_used)"
                " VALUES (?, 'alloc', 'device', ?, 0, 1, ?, ?)", (first_t + 20, 100 * MiB, 512 * MiB, 300 * MiB))
    if samples:
        first_proc = LEDGER_CONTEXT + 2 * GiB
        last_proc = LEDGER_CONTEXT + 2 * GiB + 128 * MiB + 64 * MiB + 512 * MiB + unaccounted
        other = 3 * GiB + (driver_reserved or 0)
        for ts, proc in ((first_t, first_proc), (last_t, last_proc)):
            con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes, reserved_bytes)'
                        ' VALUES (?, 0, ?, ?, ?, ?)', (ts, proc + other, 80 * GiB, proc if process_known else None,
                                                       driver_reserved))
    con.commit()
    con.close()
    return db


# ---- several ranks ------------------------------------------------------------------
def two_ranks(dirpath):
    """A DDP job: rank 0 runs the fixed loop, rank 1 the leaking one."""
    r0 = _leak_workload(os.path.join(dirpath, 'rank0.db'), LEAK_ITERATIONS, fixed=True, rank=0, pid=5000)
    r1 = _leak_workload(os.path.join(dirpath, 'rank1.db'), LEAK_ITERATIONS, fixed=False, rank=1, pid=5001)
    return [r0, r1]


# ---- edge cases -----------------------------------------------------------------------
def empty_trace(dirpath):
    """A process that started tracing but made no CUDA allocation call."""
    return Trace(os.path.join(dirpath, 'empty.db'), command_line='./no_cuda').close()


def no_iterations(dirpath):
    """A few unrelated allocations: nothing repeats, no markers."""
    t = Trace(os.path.join(dirpath, 'no_iterations.db'), command_line='./once')
    a = t.alloc(1 * MiB, ['setup', 'main'])
    b = t.alloc(2 * MiB, ['compute', 'main'])
    t.free(a)
    c = t.alloc(3 * MiB, ['finish', 'main'])
    t.free(b)
    t.free(c)
    return t.close()


# ---- running gputrace in tests ----------------------------------------------------------
class AnalyzerTest(gtlib.TraceTest):
    """TraceTest (a fresh self.dir) plus helpers to run the analyzer."""

    def gputrace(self, *args, timeout=120):
        """Runs build/analyzer/gputrace ARGS; returns CompletedProcess (text)."""
        return subprocess.run([gtlib.GPUTRACE] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)

    def ok(self, *args):
        p = self.gputrace(*args)
        self.assertEqual(p.returncode, 0, 'gputrace %s exited %d\nstdout:\n%s\nstderr:\n%s' % (args, p.returncode, p.stdout, p.stderr))
        return p

    def json(self, *args, expect_rc=0):
        """Runs gputrace CMD --json ARGS and returns the parsed document."""
        p = self.gputrace(args[0], '--json', *args[1:])
        self.assertEqual(p.returncode, expect_rc, 'stdout:\n%s\nstderr:\n%s' % (p.stdout, p.stderr))
        return json.loads(p.stdout)

    def assertOneErrorLine(self, p, rc, path=None):
        """A failure: exit status rc, exactly one stderr line 'gputrace: ...' naming the file, no crash."""
        self.assertEqual(p.returncode, rc, 'stdout:\n%s\nstderr:\n%s' % (p.stdout, p.stderr))
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith('gputrace: '), lines[0])
        if path:
            self.assertIn(path, lines[0])
        return lines[0]

    def assertWithin(self, value, expected, rel=0.01):
        self.assertLessEqual(abs(value - expected), rel * abs(expected), '%r not within %g%% of %r' % (value, rel * 100, expected))
