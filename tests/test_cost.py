"""What the tracer's default costs the traced program, and what it keeps in
exchange: the default CUPTI kinds leave out the driver's per-allocation records
(MEMORY2: a duplicate of the hooks' events, paid on every cudaMallocAsync),
and the stream-ordered pool's reservation that the ledger needed them for is
read by the writer thread from the pool itself (tests/progs/pool_phases.c
against the stand-in's pools)."""
import json
import os

from gtlib import GPUTRACE, TraceTest, base_env, prog, query, run
from test_nvtx import FAKE_CUPTI

MiB = 1 << 20


class PoolReservation(TraceTest):
    def test_pool_reservation_sampled_by_the_writer_at_each_change_only(self):
        p, db = self.trace([prog('pool_phases')])
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = query(db, "SELECT size, utilized_size, device FROM memory_pools WHERE op = 'sampled' ORDER BY t_ns")
        # 3 MiB reserve 4 MiB, 13 MiB reserve 14 MiB; the frees change no reservation: no third row
        self.assertEqual([(r[0], r[2]) for r in rows], [(4 * MiB, 0), (14 * MiB, 0)])
        self.assertEqual([r[1] for r in rows], [3 * MiB, 13 * MiB])
        # each reading follows the allocation that grew the pool
        t_alloc = [r[0] for r in query(db, "SELECT t_ns FROM events_v WHERE op = 'alloc' ORDER BY t_ns")]
        t_rows = [r[0] for r in query(db, "SELECT t_ns FROM memory_pools WHERE op = 'sampled' ORDER BY t_ns")]
        self.assertTrue(t_alloc[0] < t_rows[0] < t_alloc[1] < t_rows[1], (t_alloc, t_rows))

    def test_ledger_shows_the_sampled_reservation_not_the_bytes_in_use(self):
        p, db = self.trace([prog('pool_phases')])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = run([GPUTRACE, 'summary', '--json', db], preload=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        led = json.loads(out.stdout)['ledger'][0]
        at = {x['instant']: x for x in led['instants']}
        pool = [b for b in at['exit']['buckets'] if b['kind'] == 'pool'][0]
        self.assertEqual((pool['bytes'], pool['reservation_known']), (14 * MiB, True))

    def test_default_cupti_kinds_leave_out_the_drivers_allocation_records(self):
        db = os.path.join(self.dir, 'kinds.db')
        p = run([prog('cupti_activity'), 'plant'], cwd=self.dir,
                env=base_env(GPUTRACE_OUTPUT=db, GPUTRACE_CUPTI_PATH=FAKE_CUPTI))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM driver_memory'), [(0,)])
        self.assertEqual(query(db, 'SELECT count(*) FROM kernels'), [(200,)])
        self.assertEqual(query(db, "SELECT op FROM memory_pools WHERE op <> 'sampled'"), [('created',)])
        note = query(db, "SELECT message FROM notes WHERE component = 'cupti'")[0][0]
        self.assertRegex(note, r'^on: .*: kernels, memcpy, memset, memory pools$')
