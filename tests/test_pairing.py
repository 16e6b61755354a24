"""The schema's allocations view (schema/gputrace.sql) and the analyzer's
pairing (analyzer/live.c, behind every report) pair a trace's allocations
with their frees identically, allocation by allocation: on the traces the
shim writes of tests/progs/pairing.c (failed double and unknown frees, a
size-0 allocation, addresses handed out again, cudaDeviceReset dropping live
allocations, pool, host, managed and driver memory, VMM handles released
while mapped and freed by their last unmap, and a fork child freeing what its
parent allocated), and on a copy holding rows no correct driver produces (a
second successful free of one address, a successful free of an address never
allocated, rows whose ids are out of time order, equal timestamps).
tests/unit/pairs_dump prints the analyzer's pairing."""
import glob
import os
import shutil
import sqlite3
import subprocess

import gtlib

PAIRS_DUMP = os.path.join(gtlib.BUILD, 'tests', 'unit', 'pairs_dump')


class PairingTest(gtlib.TraceTest):

    def traces(self):
        """Runs pairing (with a fork child) under the shim: {end_reason: db}."""
        env = gtlib.base_env(GPUTRACE_OUTPUT=os.path.join(self.dir, 'pairing-%p.db'), GPUTRACE_QUIET=1)
        p = gtlib.run([gtlib.prog('pairing'), 'fork'], env=env, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        dbs = {}
        for db in glob.glob(os.path.join(self.dir, 'pairing-*.db')):
            dbs[gtlib.query(db, 'SELECT end_reason FROM processes')[0][0]] = db
        self.assertEqual(sorted(dbs), ['_exit', 'exit'], dbs)
        return dbs['exit'], dbs['_exit']

    def analyzer(self, db):
        """The analyzer's pairing: ({alloc id: free id or None}, unmatched frees, reallocated unfreed)."""
        p = subprocess.run([PAIRS_DUMP, db], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        pairs, counts = {}, {}
        for line in p.stdout.splitlines():
            a, b = line.split()
            if a in ('unmatched_frees', 'reallocated_unfreed'):
                counts[a] = int(b)
            else:
                pairs[int(a)] = None if b == '-' else int(b)
        return pairs, counts['unmatched_frees'], counts['reallocated_unfreed']

    def view(self, db):
        """The allocations view: ({alloc id: free id or None}, successful frees it pairs with nothing)."""
        pairs = dict(gtlib.query(db, 'SELECT alloc_id, free_id FROM allocations'))
        frees = {r[0] for r in gtlib.query(db, "SELECT id FROM events_v WHERE op = 'free' AND result = 0")}
        return pairs, len(frees - set(pairs.values()))

    def assertSamePairing(self, db):
        pairs, unmatched, reallocated = self.analyzer(db)
        vpairs, vunmatched = self.view(db)
        differ = {a: (pairs.get(a, 'absent'), vpairs.get(a, 'absent'))
                  for a in set(pairs) | set(vpairs) if pairs.get(a, 'absent') != vpairs.get(a, 'absent')}
        self.assertEqual(differ, {}, 'allocation id: (analyzer free id, view free id)')
        self.assertEqual(unmatched, vunmatched, 'frees that end no allocation')
        return pairs, unmatched, reallocated

    def by_api(self, db, pairs, api):
        ids = [r[0] for r in gtlib.query(db, 'SELECT id FROM events_v WHERE api = ? AND result = 0 ORDER BY id', (api,))]
        return [pairs[i] for i in ids]

    def test_parent_trace_pairs_alike(self):
        db, _ = self.traces()
        pairs, unmatched, reallocated = self.assertSamePairing(db)
        self.assertEqual(unmatched, 0)
        self.assertEqual(reallocated, 0)   # the reset's frees are written: its address handed out again is free
        self.assertEqual([f is None for f in self.by_api(db, pairs, 'cudaMallocAsync')], [False, True])
        # the pitched allocation the reset gave back ends at the reset's free row; its address again, at cudaFree
        self.assertEqual([gtlib.query(db, 'SELECT api FROM events_v WHERE id = ?', (f,))[0][0] if f else None
                          for f in self.by_api(db, pairs, 'cudaMallocPitch')], ['reset_free', 'cudaFree'])
        # cudaMalloc: freed, b (given back by the reset), the address again (freed through the
        # driver), the size-0 NULL (nothing to pair), kept and a second b at exit (freed only by the child)
        self.assertEqual([f is None for f in self.by_api(db, pairs, 'cudaMalloc')],
                         [False, False, False, True, True, True])
        # handles: h1 and h2 freed by their last unmap, h3 by its release, the second h1 never
        self.assertEqual([gtlib.query(db, 'SELECT api FROM events_v WHERE id = ?', (f,))[0][0] if f else None
                          for f in self.by_api(db, pairs, 'cuMemCreate')],
                         ['cuMemUnmap_last_mapping', 'cuMemUnmap_last_mapping', 'cuMemRelease', None])
        self.assertEqual(self.by_api(db, pairs, 'cuMemCreate_host'), [None])
        self.assertEqual([f is None for f in self.by_api(db, pairs, 'cuMemAddressReserve')], [False, True])

    def test_fork_child_trace_pairs_alike(self):
        _, db = self.traces()
        pairs, unmatched, reallocated = self.assertSamePairing(db)
        self.assertEqual(unmatched, 2)     # the parent's kept buffer and b: allocated before this trace
        self.assertEqual(reallocated, 0)
        self.assertEqual(len(pairs), 1)
        self.assertIsNotNone(list(pairs.values())[0])

    def test_rows_no_driver_writes_pair_alike(self):
        parent, _ = self.traces()
        db = os.path.join(self.dir, 'edited.db')
        shutil.copy(parent, db)
        con = sqlite3.connect(db)
        ev = con.execute("SELECT id, t_ns, api, ptr, size, device FROM events WHERE result = 0 ORDER BY id").fetchall()
        api = dict(con.execute('SELECT name, id FROM apis'))
        first_free = next(e for e in ev if e[2] == api['cudaFree'])
        first_alloc = ev[0]
        last_t = ev[-1][1]
        rows = [
            # the first cudaFree again, successful, just after it: a double free
            (first_free[1] + 1, api['cudaFree'], first_free[3], first_free[4], 0),
            # a successful free of an address never allocated
            (first_free[1] + 2, api['cuMemFree_v2'], 0x7e0000000000, None, 0),
            # the first allocation's address freed at the very time of its allocation
            # (a later id: sorted after it), then allocated and freed again at the end
            (first_alloc[1], api['cudaFree'], first_alloc[3], first_alloc[4], 0),
            (last_t + 10, api['cudaMalloc'], first_alloc[3], 1024, 0),
            (last_t + 10, api['cuMemFree_v2'], first_alloc[3], 1024, 0),
            (last_t + 10, api['cuMemFree_v2'], first_alloc[3], 1024, 0),
            # a handle released twice, and its number freed in the address space too
            (last_t + 20, api['cuMemCreate'], 0x150000000000, 2 << 20, 0),
            (last_t + 21, api['cuMemRelease'], 0x150000000000, 2 << 20, 0),
            (last_t + 22, api['cuMemRelease'], 0x150000000000, 2 << 20, 0),
            (last_t + 23, api['cudaFree'], 0x150000000000, None, 0),
        ]
        con.executemany('INSERT INTO events(t_ns, api, ptr, size, device, stream, tid, result, stack_id)'
                        ' VALUES (?,?,?,?,?,NULL,1,0,NULL)', rows)
        con.commit()
        con.close()
        pairs, unmatched, reallocated = self.assertSamePairing(db)
        # the first free of the first address (its free came earlier), the double free, the
        # unknown address, the extra driver free, the second release, the cudaFree of a handle
        self.assertEqual(unmatched, 6)
        self.assertIsNotNone(pairs[first_alloc[0]])
