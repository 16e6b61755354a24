"""Memory mapped from other processes and retained handles (peer_memory.c
under the CUDA stand-in): what NCCL (cuMemImportFromShareableHandle, and
cuMemRetainAllocationHandle on its own buffers) and CUDA IPC leave in a
trace. Imported and IPC-opened memory is the other process's: never this
process's device bytes, shown apart in the ledger. A retained handle keeps
its memory until its last reference is released. Expected figures are those
the program planted (G = the stand-in's 2 MiB granularity) and what the
stand-in driver reports holding."""
import json
import subprocess

from gtlib import GPUTRACE, TraceTest, prog, query

MiB = 1 << 20
G = 2 * MiB


class PeerMemory(TraceTest):

    def setUp(self):
        super().setUp()
        p, self.db = self.trace([prog('peer_memory')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.held = {line.split()[0]: int(line.split()[-1]) for line in p.stdout.splitlines()}   # 'WHEN held BYTES'
        s = subprocess.run([GPUTRACE, 'summary', '--json', self.db], capture_output=True, text=True)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.summary = json.loads(s.stdout)

    def device_level(self):
        lv = [x for x in self.summary['peaks'] if x['memory'] == 'device']
        self.assertEqual(len(lv), 1)
        return lv[0]

    def test_retained_handle_keeps_its_memory_until_its_last_release(self):
        # h1 (4G) was released and unmapped while a retained reference held it;
        # h2 (2G) likewise: the driver held both, and so does the trace
        self.assertEqual(self.held['peak'], 1 * MiB + 4 * G + 2 * G)
        self.assertEqual(self.device_level()['peak_bytes'], self.held['peak'])
        self.assertEqual(query(self.db, 'SELECT peak_device_bytes FROM processes')[0][0], self.held['peak'])
        # each handle is freed by the cuMemRelease of its last reference, after its unmap
        pairs = query(self.db, "SELECT a.size, f.api, f.id > (SELECT MAX(id) FROM events_v WHERE api = 'cuMemUnmap')"
                               " FROM allocations a JOIN events_v f ON f.id = a.free_id WHERE a.api = 'cuMemCreate'"
                               " ORDER BY a.alloc_id")
        self.assertEqual(pairs, [(4 * G, 'cuMemRelease', 1), (2 * G, 'cuMemRelease', 1)])
        self.assertEqual(self.summary['events']['unmatched_frees'], 0)
        self.assertEqual(query(self.db, "SELECT COUNT(*) FROM events_v WHERE api = 'cuMemUnmap_last_mapping'")[0][0], 0)

    def test_imported_and_ipc_memory_is_never_this_process_device_bytes(self):
        # the driver held only the process's own 1 MiB while 8G were imported and 6G + 3G IPC-opened
        self.assertEqual(self.held['imported'], 1 * MiB)
        self.assertEqual(self.held['ipc'], 1 * MiB)
        self.assertEqual(self.device_level()['final_bytes'], 1 * MiB)
        self.assertEqual([x['memory'] for x in self.summary['peaks']], ['device'])
        rows = query(self.db, "SELECT api, memory, size FROM events_v WHERE memory = 'imported' ORDER BY id")
        self.assertEqual(rows, [('cuMemImportFromShareableHandle', 'imported', 0),
                                ('cuMemRelease_imported', 'imported', 0),
                                ('cudaIpcOpenMemHandle', 'imported', 6 * G),   # one event: the runtime's driver call inside is not another
                                ('cuIpcOpenMemHandle_v2', 'imported', 3 * G),
                                ('cudaIpcCloseMemHandle', 'imported', 6 * G)])

    def test_ledger_shows_memory_mapped_from_other_processes_apart(self):
        self.assertEqual(self.summary['imported_at_end'],
                         {'ipc_ranges': 1, 'ipc_bytes': 3 * G, 'vmm_handles': 1, 'vmm_mapped_bytes': 8 * G})
        buckets = [b for x in self.summary['ledger'] for i in x['instants'] for b in i['buckets']]
        self.assertTrue(buckets)
        self.assertTrue(all(b['bytes'] <= self.held['peak'] for b in buckets))
        text = subprocess.run([GPUTRACE, 'summary', self.db], capture_output=True, text=True).stdout
        self.assertIn('mapped from other processes at the end', text)
        self.assertIn('6.00 MiB in 1 IPC range, 16.00 MiB of 1 imported handle', text)
