"""CUDA graph capture (tests/progs/graph_capture.c, as PyTorch's
torch.cuda.graph does under its two allocators): stream-ordered calls on a
capturing stream are the graph's allocation and free nodes, which take no
memory when they are made, so they are in no level of memory in use;
an allocation made while capturing (a graph's private pool) is real memory,
named in the ledger; a capture's end that fails leaves the count alone; a
trace made before graph_calls existed reads as before."""
import os
import sqlite3
import sys
import unittest

import analyzer_traces as T
import test_report
import gtlib
from gtlib import prog, query

MiB = 1 << 20


class Captured:
    def captured(self):
        p, db = self.trace([prog('graph_capture')], env_extra={'GPUTRACE_CUPTI': 0})
        self.assertEqual(p.returncode, 0, p.stderr)
        return db


class GraphCapture(Captured, T.AnalyzerTest):
    def test_captured_calls_are_marked_and_calls_made_meanwhile_too(self):
        db = self.captured()
        rows = query(db, 'SELECT a.name, e.size, g.captured FROM events e JOIN apis a ON a.id = e.api'
                         ' LEFT JOIN graph_calls g ON g.event_id = e.id ORDER BY e.id')
        self.assertEqual([(name, captured) for name, _, captured in rows], [
            ('cudaMalloc', None),         # weights, before the capture
            ('cudaMalloc', 0),            # the private pool's segment, while capturing
            ('cuMemAddressReserve', 0),   # addresses, while capturing
            ('cudaMallocAsync', 1),       # allocation nodes
            ('cudaMallocAsync', 1),
            ('cudaFreeAsync', 1),         # a free node
            ('cudaFreeAsync', None),      # the node's address freed outside the graph, after the capture
            ('cudaFreeAsync', None),      # again, after one more launch
            ('cudaMallocAsync', None),    # the pool, as usual
            ('cudaFreeAsync', None),
            ('cuMemAddressFree', None),
            ('cudaFree', None),
            ('cudaFree', None)])

    def test_graph_nodes_are_in_no_level_and_the_private_pool_is_in_the_ledger(self):
        d = self.json('summary', self.captured())
        # the address range reserved while capturing takes no memory: not counted as allocated
        self.assertEqual(d['graph_capture'], {'allocation_nodes': 2, 'allocation_node_bytes': 24 * MiB, 'free_nodes': 1,
                                              'allocations_during_capture': 1,
                                              'bytes_allocated_during_capture': 20 * MiB})
        peaks = {p['memory']: p['peak_bytes'] for p in d['peaks']}
        # the pool held only the 4 MiB allocated after the capture; the device level
        # the weights and the private pool's segment
        self.assertEqual(peaks, {'pool': 4 * MiB, 'device': 84 * MiB})
        self.assertEqual(d['leak_bytes'], 0)
        peak = [x for x in d['ledger'][0]['instants'] if x['instant'] == 'peak'][0]
        buckets = {b['name']: (b['kind'], b['bytes']) for b in peak['buckets']}
        self.assertEqual(buckets['CUDA graph capture (private pools)'], ('graph_capture', 20 * MiB))
        self.assertEqual(buckets["program's direct allocations"], ('direct', 64 * MiB))
        # the node's address freed twice outside the graph (it ran in between): no free of memory from
        # before the trace
        self.assertEqual(d['events']['unmatched_frees'], 0)
        db = self.captured()
        text = self.ok('summary', db).stdout
        self.assertIn('2 allocation nodes (24.00 MiB) and 1 free node captured into graphs', text)
        self.assertNotIn('allocated before tracing started', text)
        # every report reads such a trace (oom keeps live bytes per kind of memory)
        for cmd in ('oom', 'leaks', 'top', 'peak'):
            self.ok(cmd, db)
        self.ok('export', db, '-o', os.path.join(self.dir, 'x.json'))
        # SQL: the nodes are memory 'graph' in the views
        self.assertEqual(query(db, "SELECT memory, count(*), sum(size) FROM allocations GROUP BY memory ORDER BY memory"),
                         [('device', 2, 84 * MiB), ('graph', 2, 24 * MiB), ('pool', 1, 4 * MiB), ('reserve', 1, 1024 * MiB)])

    def test_a_trace_without_graph_calls_reads_as_before(self):
        db = self.captured()
        with sqlite3.connect(db) as con:
            con.execute('DROP TABLE graph_calls')
        d = self.json('summary', db)
        self.assertIsNone(d['graph_capture'])
        peaks = {p['memory']: p['peak_bytes'] for p in d['peaks']}
        self.assertEqual(peaks['pool'], 24 * MiB)   # the nodes counted as the pool's, as traces before it did

    def test_the_memory_the_driver_holds_for_the_graph_is_named_at_exit(self):
        # a launch takes the nodes' memory from the device (the stand-in: both
        # nodes, 24 MiB) with no call to trace; the shim reads it where nodes
        # were captured, and the ledger adds up with it (the stand-in's pool
        # keeps its reservation on the device, as a real one does)
        p, db = self.trace([prog('graph_capture'), '1', '300'],
                           env_extra={'GPUTRACE_CUPTI': 0, 'LD_LIBRARY_PATH': gtlib.WITH_NVML, 'FAKE_CUDA_POOL_KEEPS': 1})
        self.assertEqual(p.returncode, 0, p.stderr)
        # (a reading between the capture and the launch may be 0: the exit's is the figure)
        self.assertEqual(query(db, 'SELECT reserved_bytes FROM graph_memory ORDER BY t_ns DESC LIMIT 1'), [(24 * MiB,)])
        x = [i for i in self.json('summary', db)['ledger'][0]['instants'] if i['instant'] == 'exit'][0]
        buckets = {b['kind']: b['bytes'] for b in x['buckets']}
        self.assertEqual(buckets['graph_memory'], 24 * MiB)
        self.assertEqual(x['unaccounted_bytes'], 0)
        # without NVML too: read at exit, while CUDA is up (what peak and sweep use)
        p, db = self.trace([prog('graph_capture'), '1', '300'], name='no_nvml.db', env_extra={'GPUTRACE_CUPTI': 0})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM memory_samples'), [(0,)])
        self.assertEqual(query(db, 'SELECT reserved_bytes FROM graph_memory ORDER BY t_ns DESC LIMIT 1'), [(24 * MiB,)])

    def test_a_graph_built_node_by_node_has_its_memory_named_too(self):
        # no stream capture (a compiler's command buffer): nothing marks a
        # node, so once a graph is instantiated or launched the shim reads the
        # memory held for graphs on every device the program allocated on
        p, db = self.trace([prog('graph_alloc_node'), '1', '300'],
                           env_extra={'GPUTRACE_CUPTI': 0, 'LD_LIBRARY_PATH': gtlib.WITH_NVML, 'FAKE_CUDA_POOL_KEEPS': 1})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM graph_calls'), [(0,)])
        x = [i for i in self.json('summary', db)['ledger'][0]['instants'] if i['instant'] == 'exit'][0]
        buckets = {b['kind']: b['bytes'] for b in x['buckets']}
        self.assertEqual(buckets['graph_memory'], 48 * MiB)
        self.assertEqual(x['unaccounted_bytes'], 0)

    def test_no_capture_no_rows(self):
        p, db = self.trace([prog('exit_modes'), 'return', '50'])
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM graph_calls'), [(0,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM graph_memory'), [(0,)])
        self.assertIsNone(self.json('summary', db)['graph_capture'])


class GraphCaptureReport(Captured, test_report.ReportTest):
    def test_the_report_says_the_graph_nodes_are_in_no_level(self):
        dom, data, _ = self.report(self.captured())
        item = [e for e in dom.find('div', 'item', 0) if e.attrs.get('data-key') == 'graph_capture']
        self.assertEqual([int(e.attrs['data-value']) for e in item], [2])
        self.assertIn('2 allocation nodes (24.00 MiB) captured', item[0].text)
        self.assertIn('20.00 MiB allocated while capturing', item[0].text)
        drawn = {e.attrs['data-name']: int(e.attrs['data-bytes']) for e in dom.find('rect', 'ledger-bucket', 0)}
        self.assertEqual(drawn['CUDA graph capture (private pools)'], 20 * MiB)


# torch.compile(mode="reduce-overhead")'s CUDA graph trees, as torch 2.11 fills their pool (seen on an H200):
# segments taken by a warm-up run inside the trees' pool, with no capture open, from code whose Python stack
# passes through torch/_inductor/cudagraph_trees.py; the recording reuses them. The trees' manager also calls
# torch.cuda.graphs' capture_begin, which allocates the generator's state in the default pool first.
TREES = r'''
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
def segment(size):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), size) == 0
    return p.value
class CUDAWarmupNode:
    def run(self, sizes):
        return [segment(s) for s in sizes]
class CUDAGraphTreeManager:
    def __init__(self):
        from torch.cuda import graphs
        self.state = graphs.CUDAGraph().capture_begin()
'''
GRAPHS = r'''
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
class CUDAGraph:
    def capture_begin(self):   # the generator's graph state, in the default pool, before the capture opens
        p = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(p), 2 << 20) == 0
        return p.value
'''
PROGRAM = r'''
import ctypes, sys
sys.path.insert(0, sys.argv[1])
rt = ctypes.CDLL("libcudart.so.13")
weights = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(weights), 64 << 20) == 0    # the model, outside the trees
from torch._inductor import cudagraph_trees
manager = cudagraph_trees.CUDAGraphTreeManager()   # 2 MiB through torch.cuda.graphs: not the trees' pool
kept = cudagraph_trees.CUDAWarmupNode().run([2 << 20, 20 << 20, 32 << 20])
'''


@unittest.skipIf(gtlib.SANITIZER == 'thread', 'no Python program under the thread stage')
class CompiledGraphTrees(T.AnalyzerTest):
    def test_the_trees_pool_is_named_as_graph_memory_though_no_capture_was_open(self):
        torch = os.path.join(self.dir, 'site', 'torch')
        for sub, name, text in (('_inductor', 'cudagraph_trees.py', TREES), ('cuda', 'graphs.py', GRAPHS)):
            os.makedirs(os.path.join(torch, sub))
            open(os.path.join(torch, sub, '__init__.py'), 'w').close()
            with open(os.path.join(torch, sub, name), 'w') as f:
                f.write(text)
        open(os.path.join(torch, '__init__.py'), 'w').close()
        p, db = self.trace([sys.executable, '-c', PROGRAM, os.path.join(self.dir, 'site')],
                           env_extra={'GPUTRACE_CUPTI': 0})
        self.assertEqual(p.returncode, 0, p.stderr)
        d = self.json('summary', db)
        self.assertIsNone(d['graph_capture'])   # nothing was captured or allocated while capturing
        ex = [x for x in d['ledger'][0]['instants'] if x['instant'] == 'exit'][0]
        buckets = {b['name']: (b['kind'], b['bytes']) for b in ex['buckets']}
        self.assertEqual(buckets['CUDA graph capture (private pools)'], ('graph_capture', 54 * MiB))
        # the model and the generator's state (the stand-in's segments are no framework allocator's)
        self.assertEqual(buckets["program's direct allocations"], ('direct', 66 * MiB))
