"""Every allocation of a trace with its Python stack (innermost first), then
the trace's graph_calls count and its calls by API: what session 27 read to
find where torch.compile's CUDA graph trees fill their private pool.
usage: probe_alloc_stacks.py TRACE.db"""
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
q = """SELECT e.id, e.api, e.size, e.result,
  (SELECT group_concat(coalesce(f.file,'?') || ':' || coalesce(f.line,0) || ' ' || coalesce(f.function,'?'), ' <- ')
     FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id WHERE sf.stack_id = e.stack_id AND
     (f.file LIKE '%.py' ) ) AS py
FROM events_v e WHERE e.op = 'alloc' ORDER BY e.id"""
for r in c.execute(q):
    print(r[0], r[1], r[2], r[3], (r[4] or '')[:900])
print('graph_calls', c.execute('SELECT count(*) FROM graph_calls').fetchone())
for r in c.execute("SELECT a.name, count(*) FROM events e JOIN apis a ON a.id = e.api GROUP BY a.name"):
    print(r)
