"""Synthetic traces for the timeline views (gputrace export, gputrace report).

`timeline` plants one trace holding every kind of row the views draw: device
and pool allocations, a failed allocation, nested and never-closed NVTX
ranges, overlapping start/end ranges, a mark, kernels on one stream, copies
and memsets on another, NVML samples, two named threads, and frame names
that need escaping in JSON and HTML. It returns the path and a `Planted`
record; every expectation the tests assert is computed from that record
(the calls as planted), never read back from gputrace.
"""
import os
import sqlite3

import analyzer_traces as T

MiB = T.MiB
BATCHES = [8, 16, 32, 8, 16, 32]
PER_SAMPLE = 1 * MiB
WORKSPACE = 3 * MiB
WEIGHTS = 64 * MiB
POOL_STATE = 4 * MiB
FAILED_REQUEST = 200 * T.GiB
EVIL_FUNCTION = 'evil"fn</script><img src=x onerror=alert(1)>&amp;\u00e9\\n'
SECOND_TID = 4343
COPY_STREAM, KERNEL_STREAM = 9, 7
N_COPIES, N_MEMSETS, N_SAMPLES = 5, 2, 7

MEMORY_OF = {'cudaMalloc': 'device', 'cudaFree': 'device', 'cudaMallocAsync': 'pool', 'cudaFreeAsync': 'pool'}


class Planted:
    """What the workload did, as lists the tests compute expectations from."""

    def __init__(self, trace):
        ids = {v: k for k, v in T.API.items()}
        # (t, api name, size, device, tid, failed)
        self.calls = [(e[0], ids[e[1]], e[3], e[4], e[6], e[7] != 0) for e in trace.events]
        self.kernels = list(trace.kernels)          # (start, end, device, stream, corr, name id)
        self.ranges = [list(r) for r in trace.ranges]
        self.iterations = []                        # (start, end, batch size) of the outermost ranges
        self.copies, self.memsets, self.samples = [], [], []
        self.start_ranges = []                      # (start, end) of start/end ranges
        self.end_ns = None

    def levels(self):
        """{memory: [(t, live bytes after the call)]} replayed from the calls."""
        live, out = {}, {}
        for t, api, size, _dev, _tid, failed in self.calls:
            if failed:
                continue
            mem = MEMORY_OF[api]
            live[mem] = live.get(mem, 0) + (size if 'Free' not in api else -size)
            out.setdefault(mem, []).append((t, live[mem]))
        return out

    def live_at(self, memory, t):
        """Live bytes of memory just after time t."""
        v = 0
        for tt, b in self.levels().get(memory, []):
            if tt <= t:
                v = b
        return v


def timeline(dirpath, name='timeline.db', batches=BATCHES, pid=4242, rank=None, start_unix_ns=None, steps_per_iteration=1):
    t = T.Trace(os.path.join(dirpath, name), pid=pid, rank=rank, command_line='./timeline', module='/opt/work/timeline')
    weights = t.alloc(WEIGHTS, ['init_weights', 'main'])
    state = t.alloc(POOL_STATE, [EVIL_FUNCTION, 'main'], api='cudaMallocAsync')
    for bs in batches:
        t.push('train_step batch_size=%d' % bs)
        t.push('forward')
        acts = [t.alloc(bs * PER_SAMPLE, ['relu_forward', 'forward', 'train_step', 'main'], api='cudaMallocAsync')
                for _ in range(steps_per_iteration)]
        ws = t.alloc(WORKSPACE, ['cublas_workspace', 'train_step', 'main'], api='cudaMallocAsync')
        t.kernel('sgemm_128x64_nn')
        t.pop()
        for a in acts:
            t.free(a)
        t.free(ws)
        t.pop()
    t.alloc(FAILED_REQUEST, ['resize_buffer', 'main'], result=T.CUDA_ERROR_MEMORY_ALLOCATION)
    t.free(state)
    # a range opened on the main thread and never closed (the program was killed in it)
    t.push('shutdown')
    t.free(weights)
    p = Planted(t)
    top = [r for r in t.ranges if r[6] == 0 and r[2].startswith('train_step')]
    p.iterations = [(r[4], r[5], bs) for r, bs in zip(top, batches)]
    path = t.close()
    p.end_ns = t.t
    con = sqlite3.connect(path)
    span = p.end_ns
    for k in range(N_COPIES):
        s = span * (k + 1) // (N_COPIES + 2)
        p.copies.append((s, s + 300, 'HtoD', 4096 * (k + 1)))
        con.execute('INSERT INTO memcpys(start_ns, end_ns, device, stream_id, correlation_id, kind, bytes) VALUES (?,?,0,?,?,?,?)',
                    (s, s + 300, COPY_STREAM, 100 + k, 'HtoD', 4096 * (k + 1)))
    for k in range(N_MEMSETS):
        s = span * (2 * k + 1) // 5 + 400
        p.memsets.append((s, s + 100, 512))
        con.execute('INSERT INTO memsets(start_ns, end_ns, device, stream_id, correlation_id, bytes, value) VALUES (?,?,0,?,?,512,0)',
                    (s, s + 100, COPY_STREAM, 200 + k))
    for k in range(N_SAMPLES):
        ts = span * k // (N_SAMPLES - 1)
        used = 1000 * MiB + k * MiB
        p.samples.append((ts, used))
        con.execute('INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) VALUES (?,0,?,?,?)',
                    (ts, used, t.device_total, used - 500 * MiB))
    # two start/end ranges that overlap each other and the push ranges (any thread may end them)
    for k, (s, e) in enumerate([(span // 10, span // 2), (span // 4, span * 3 // 4)]):
        p.start_ranges.append((s, e))
        con.execute("INSERT INTO ranges(source, kind, message, tid, start_ns, end_ns, depth) VALUES ('nvtx','start',?,?,?,?,0)",
                    ('async load %d' % k, SECOND_TID, s, e))
    con.execute("INSERT INTO marks(source, message, tid, t_ns) VALUES ('nvtx', 'checkpoint <saved>', ?, ?)", (t.tid, span // 3))
    con.execute('INSERT INTO threads VALUES (?, ?)', (SECOND_TID, 'loader'))
    if start_unix_ns is not None:
        con.execute('UPDATE processes SET start_unix_ns = ?', (start_unix_ns,))
    con.commit()
    con.close()
    return path, p
