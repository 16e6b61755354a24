-- gputrace trace database schema: the single source of truth.
-- The shim runs this file to create each trace; the analyzer embeds it to know
-- the version it understands. scripts/embed_schema.py also generates the C enum
-- of API ids from the `INSERT INTO apis` rows below, so C code cannot drift.
-- Times are nanoseconds on CLOCK_MONOTONIC, relative to processes.start_mono_ns.
-- Documentation of every table and column: schema/README.md.

PRAGMA application_id = 1196446802;  -- 0x47505452, 'GPTR': marks a gputrace trace
PRAGMA user_version = 5;             -- schema version; the analyzer refuses newer ones
                                     -- (2: frames.kind; 3: processes.world_size, apis rows 39-46;
                                     -- 5: CUDA arrays, apis rows 47-56 in space 'array')

-- One row: the traced process.
CREATE TABLE processes (
  id              INTEGER PRIMARY KEY,
  pid             INTEGER NOT NULL,
  ppid            INTEGER,
  host            TEXT,
  command_line    TEXT,
  exe             TEXT,
  rank            INTEGER,            -- RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID / PMI_RANK
  local_rank      INTEGER,            -- LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID
  world_size      INTEGER,            -- WORLD_SIZE / OMPI_COMM_WORLD_SIZE / SLURM_NTASKS / PMI_SIZE (schema 3)
  start_unix_ns   INTEGER NOT NULL,   -- wall clock when the trace started
  start_mono_ns   INTEGER NOT NULL,   -- CLOCK_MONOTONIC when the trace started (time 0 of t_ns)
  end_ns          INTEGER,            -- last flush, relative; NULL if the process was killed first
  end_reason      TEXT,               -- exit | _exit | exec | fork-child | signal SIGTERM (a fatal signal: its name) | NULL (killed)
  library_version TEXT NOT NULL,
  schema_version  INTEGER NOT NULL,
  stack_depth     INTEGER NOT NULL,   -- GPUTRACE_STACK_DEPTH in force (0 = no stacks)
  events_recorded INTEGER NOT NULL DEFAULT 0,
  events_dropped  INTEGER NOT NULL DEFAULT 0,   -- sum of drops.count
  peak_device_bytes INTEGER NOT NULL DEFAULT 0  -- max live bytes with apis.memory = 'device'
);

-- Events that could not be recorded, by reason. Nothing is lost silently.
CREATE TABLE drops (
  reason  TEXT PRIMARY KEY,           -- queue_full | stack_table_full | ...
  count   INTEGER NOT NULL,
  meaning TEXT NOT NULL
);

-- Things the shim wants the reader to know (CUPTI unavailable, ...).
-- For component 'cupti' the message starts with the state of activity capture:
-- 'on:' (kernels, copies and memsets are recorded), 'off:' (GPUTRACE_CUPTI=0),
-- 'unavailable:' (missing, too old, no driver, or held by another tool: no
-- activity rows at all), 'taken over:' (another CUPTI client such as
-- torch.profiler took the activity buffers at t_ns: no activity rows after it).
-- For 'nvml': 'on:' or 'unavailable:'; for 'nvtx': why NVTX is not captured.
-- For 'python' (only in a process with a Python): 'on:' (Python frames are in
-- the stacks) or 'off:' (GPUTRACE_PYTHON=0, or a version or build whose frame
-- layout gputrace does not know: no Python frames, nothing guessed).
CREATE TABLE notes (
  id        INTEGER PRIMARY KEY,
  t_ns      INTEGER NOT NULL,          -- when it was noted (negative: before the trace started)
  component TEXT NOT NULL,            -- writer | cupti | nvtx | nvml | hooks | clock | ...: the part that says it
  message   TEXT NOT NULL
);

-- Each GPU visible to the process, read once after the program's first
-- successful CUDA call (the shim never initialises CUDA or creates a context).
CREATE TABLE devices (
  id              INTEGER PRIMARY KEY, -- CUDA device ordinal in this process
  name            TEXT,
  uuid            TEXT,
  total_bytes     INTEGER,
  cc_major        INTEGER,
  cc_minor        INTEGER,
  pci_bus_id      TEXT,
  driver_version  INTEGER,            -- e.g. 13000 for CUDA 13.0 (cuDriverGetVersion)
  runtime_version INTEGER             -- of the libcudart the program loaded; NULL if none
);

-- The traced API functions. `op`: alloc | free | map | unmap | defer.
-- `memory`: what a successful alloc holds: device (physical device memory),
-- pool (stream-ordered pool allocation), managed, host (pinned host),
-- reserve (virtual address range, no memory), mapping (VA mapped to a handle),
-- imported (memory of another process mapped here: not this process's).
-- `space`: addresses live in one space per kind of handle (addr: device or
-- host addresses; handle: VMM handles; va: reserved ranges; map: mappings;
-- array: CUDA array handles); an alloc and its
-- free pair up by (space, ptr); a free's memory and device are its alloc's.
-- Virtual memory (VMM): physical memory is held from cuMemCreate until
-- cuMemRelease, or, when the handle is still mapped then, until its last
-- cuMemUnmap. The writer stores such a release as 'cuMemRelease_while_mapped'
-- (op defer: nothing freed yet) and adds a 'cuMemUnmap_last_mapping' row (op
-- free, ptr = the handle) right after the cuMemUnmap that removed the last
-- mapping, so every physical allocation pairs with exactly one free and is
-- counted once, whatever its number of mappings.
CREATE TABLE apis (
  id     INTEGER PRIMARY KEY,
  name   TEXT NOT NULL UNIQUE,
  layer  TEXT NOT NULL,               -- runtime | driver
  op     TEXT NOT NULL,
  memory TEXT NOT NULL,
  space  TEXT NOT NULL                -- addr | handle | va | map | array
);
INSERT INTO apis VALUES (1,  'cudaMalloc',              'runtime', 'alloc', 'device',  'addr');
INSERT INTO apis VALUES (2,  'cudaFree',                'runtime', 'free',  'device',  'addr');
INSERT INTO apis VALUES (3,  'cudaMallocAsync',         'runtime', 'alloc', 'pool',    'addr');
INSERT INTO apis VALUES (4,  'cudaFreeAsync',           'runtime', 'free',  'pool',    'addr');
INSERT INTO apis VALUES (5,  'cudaMallocFromPoolAsync', 'runtime', 'alloc', 'pool',    'addr');
INSERT INTO apis VALUES (6,  'cudaMallocManaged',       'runtime', 'alloc', 'managed', 'addr');
INSERT INTO apis VALUES (7,  'cudaMallocHost',          'runtime', 'alloc', 'host',    'addr');
INSERT INTO apis VALUES (8,  'cudaHostAlloc',           'runtime', 'alloc', 'host',    'addr');
INSERT INTO apis VALUES (9,  'cudaFreeHost',            'runtime', 'free',  'host',    'addr');
INSERT INTO apis VALUES (10, 'cudaMallocPitch',         'runtime', 'alloc', 'device',  'addr');
INSERT INTO apis VALUES (11, 'cudaMalloc3D',            'runtime', 'alloc', 'device',  'addr');
INSERT INTO apis VALUES (20, 'cuMemAlloc_v2',           'driver',  'alloc', 'device',  'addr');
INSERT INTO apis VALUES (21, 'cuMemFree_v2',            'driver',  'free',  'device',  'addr');
INSERT INTO apis VALUES (22, 'cuMemAllocPitch_v2',      'driver',  'alloc', 'device',  'addr');
INSERT INTO apis VALUES (23, 'cuMemAllocManaged',       'driver',  'alloc', 'managed', 'addr');
INSERT INTO apis VALUES (24, 'cuMemAllocHost_v2',       'driver',  'alloc', 'host',    'addr');
INSERT INTO apis VALUES (25, 'cuMemHostAlloc',          'driver',  'alloc', 'host',    'addr');
INSERT INTO apis VALUES (26, 'cuMemFreeHost',           'driver',  'free',  'host',    'addr');
INSERT INTO apis VALUES (27, 'cuMemAllocAsync',         'driver',  'alloc', 'pool',    'addr');
INSERT INTO apis VALUES (28, 'cuMemFreeAsync',          'driver',  'free',  'pool',    'addr');
INSERT INTO apis VALUES (29, 'cuMemAllocFromPoolAsync', 'driver',  'alloc', 'pool',    'addr');
INSERT INTO apis VALUES (30, 'cuMemCreate',             'driver',  'alloc', 'device',  'handle');
INSERT INTO apis VALUES (31, 'cuMemRelease',            'driver',  'free',  'device',  'handle');
INSERT INTO apis VALUES (32, 'cuMemMap',                'driver',  'map',   'mapping', 'map');
INSERT INTO apis VALUES (33, 'cuMemUnmap',              'driver',  'unmap', 'mapping', 'map');
INSERT INTO apis VALUES (34, 'cuMemAddressReserve',     'driver',  'alloc', 'reserve', 'va');
INSERT INTO apis VALUES (35, 'cuMemAddressFree',        'driver',  'free',  'reserve', 'va');
INSERT INTO apis VALUES (36, 'cuMemCreate_host',        'driver',  'alloc', 'host',    'handle'); -- cuMemCreate at a host location
INSERT INTO apis VALUES (37, 'cuMemRelease_while_mapped', 'driver', 'defer', 'device', 'handle'); -- cuMemRelease of a mapped handle
INSERT INTO apis VALUES (38, 'cuMemUnmap_last_mapping', 'driver',  'free',  'device',  'handle'); -- not a call: see above
-- Memory another process owns, mapped into this one (NCCL's peer buffers,
-- CUDA IPC): memory 'imported', never this process's device bytes. An
-- imported handle's size is that of its mappings (cuMemImportFromShareableHandle
-- does not say it); an IPC-opened range's is the driver's answer for it. The
-- writer stores a cuMemRelease of an imported handle as 'cuMemRelease_imported'.
INSERT INTO apis VALUES (39, 'cuMemImportFromShareableHandle', 'driver', 'alloc', 'imported', 'handle');
INSERT INTO apis VALUES (40, 'cuMemRelease_imported',   'driver',  'free',  'imported', 'handle'); -- cuMemRelease of an imported handle
INSERT INTO apis VALUES (41, 'cudaIpcOpenMemHandle',    'runtime', 'alloc', 'imported', 'addr');
INSERT INTO apis VALUES (42, 'cudaIpcCloseMemHandle',   'runtime', 'free',  'imported', 'addr');
INSERT INTO apis VALUES (43, 'cuIpcOpenMemHandle_v2',   'driver',  'alloc', 'imported', 'addr');
INSERT INTO apis VALUES (44, 'cuIpcCloseMemHandle',     'driver',  'free',  'imported', 'addr');
-- cuMemRetainAllocationHandle: one more reference to a mapped handle (the
-- same handle value), released by one more cuMemRelease. The handle's memory
-- is held until every reference is released and it is unmapped: a release
-- that leaves a reference is stored as 'cuMemRelease_while_retained' (op defer).
INSERT INTO apis VALUES (45, 'cuMemRetainAllocationHandle', 'driver', 'defer', 'device', 'handle');
INSERT INTO apis VALUES (46, 'cuMemRelease_while_retained', 'driver', 'defer', 'device', 'handle');
-- CUDA arrays and mipmapped arrays (textures, surfaces): device memory named
-- by a handle of their own (space 'array'); size is what the descriptor asks
-- for (texels x bytes a texel, summed over mip levels; the driver's tiling
-- adds to it), 0 for a sparse or deferred-mapping array, whose memory is
-- mapped from cuMemCreate's.
INSERT INTO apis VALUES (47, 'cudaMallocArray',         'runtime', 'alloc', 'device',  'array');
INSERT INTO apis VALUES (48, 'cudaMalloc3DArray',       'runtime', 'alloc', 'device',  'array');
INSERT INTO apis VALUES (49, 'cudaMallocMipmappedArray', 'runtime', 'alloc', 'device', 'array');
INSERT INTO apis VALUES (50, 'cudaFreeArray',           'runtime', 'free',  'device',  'array');
INSERT INTO apis VALUES (51, 'cudaFreeMipmappedArray',  'runtime', 'free',  'device',  'array');
INSERT INTO apis VALUES (52, 'cuArrayCreate_v2',        'driver',  'alloc', 'device',  'array');
INSERT INTO apis VALUES (53, 'cuArray3DCreate_v2',      'driver',  'alloc', 'device',  'array');
INSERT INTO apis VALUES (54, 'cuMipmappedArrayCreate',  'driver',  'alloc', 'device',  'array');
INSERT INTO apis VALUES (55, 'cuArrayDestroy',          'driver',  'free',  'device',  'array');
INSERT INTO apis VALUES (56, 'cuMipmappedArrayDestroy', 'driver',  'free',  'device',  'array');
-- The program's own host memory page-locked (pinned) and mapped for the
-- device: pinned host memory from registration until its unregistration,
-- by the address registered (the memory itself is the program's; its free()
-- is not a CUDA call).
INSERT INTO apis VALUES (57, 'cudaHostRegister',        'runtime', 'alloc', 'host',    'addr');
INSERT INTO apis VALUES (58, 'cudaHostUnregister',      'runtime', 'free',  'host',    'addr');
INSERT INTO apis VALUES (59, 'cuMemHostRegister_v2',    'driver',  'alloc', 'host',    'addr');
INSERT INTO apis VALUES (60, 'cuMemHostUnregister',     'driver',  'free',  'host',    'addr');
-- A device's primary context reset (cudaDeviceReset, cuDevicePrimaryCtxReset):
-- the call (op 'reset', no memory of its own: reports count it as another
-- call), then one 'not a call' free row per allocation it gave back, at the
-- same time: device and managed memory and CUDA arrays made on that device,
-- and pinned host memory when the process allocated on no other device (the
-- host memory's context is not recorded). Memory of stream-ordered pools
-- outlives the reset (measured on an H200, driver 580: a cudaMallocAsync
-- allocation was still device memory after it, and cudaFree took it), and
-- so do VMM handles here. (Ids 12-15: the analyzer keeps ids below 64.)
INSERT INTO apis VALUES (12, 'cudaDeviceReset',         'runtime', 'reset', 'device',  'addr');
INSERT INTO apis VALUES (13, 'cuDevicePrimaryCtxReset_v2', 'driver', 'reset', 'device', 'addr');
INSERT INTO apis VALUES (14, 'reset_free',              'runtime', 'free',  'device',  'addr');  -- not a call: see above
INSERT INTO apis VALUES (15, 'reset_free_array',        'runtime', 'free',  'device',  'array'); -- not a call: see above
INSERT INTO apis VALUES (16, 'cuDevicePrimaryCtxReset', 'driver',  'reset', 'device',  'addr');  -- the unversioned export (CUDA 7)

-- The timeline: one row per traced call, successful or not (an OOM is a
-- failed alloc), plus the 'cuMemUnmap_last_mapping' rows described above. Rows are in recording order (each batch the writer drains in time order); a free is recorded before the
-- real free runs and an alloc after it returns, so ordering by (t_ns, id)
-- never shows one address live twice.
CREATE TABLE events (
  id       INTEGER PRIMARY KEY,
  t_ns     INTEGER NOT NULL,          -- ns since processes.start_mono_ns
  api      INTEGER NOT NULL,          -- apis.id
  ptr      INTEGER,                   -- address (or VMM handle); NULL if the call failed
  size     INTEGER,                   -- bytes asked for; for a free, the size of what it frees (NULL if unknown)
  device   INTEGER,                   -- device ordinal; -1 for host memory
  stream   INTEGER,                   -- stream handle for stream-ordered calls, else NULL
  tid      INTEGER NOT NULL,          -- OS thread id
  result   INTEGER NOT NULL,          -- cudaError_t / CUresult; 0 = success
  stack_id INTEGER                    -- stacks.id; NULL when stacks are off; a successful free: NULL unless GPUTRACE_FREE_STACKS=1
);

-- Extra argument of a cuMemMap event: the physical allocation mapped.
CREATE TABLE mappings (
  event_id INTEGER PRIMARY KEY,       -- events.id of the cuMemMap
  handle   INTEGER NOT NULL           -- CUmemGenericAllocationHandle (cuMemCreate's ptr)
);

-- Calls made while a CUDA graph was being captured (stream capture): one row
-- per such events row. captured 1: the call was itself captured, a
-- stream-ordered allocation or free on a capturing stream, which makes an
-- allocation (free) node of the graph: it takes no memory when it is made
-- (the graph owns the address; memory is taken from the device's graph
-- memory pool when the graph runs), so it is in no level of memory in use.
-- captured 0: any other call made meanwhile, real memory taken now, as a
-- framework filling a graph's private pool (PyTorch's torch.cuda.graph).
-- Absent in traces made before it: their captured calls count as ordinary.
CREATE TABLE graph_calls (
  event_id INTEGER PRIMARY KEY,       -- events.id
  captured INTEGER NOT NULL           -- 1 a graph's allocation or free node; 0 made meanwhile
);

CREATE TABLE threads (
  tid  INTEGER PRIMARY KEY,
  name TEXT
);

-- Call stacks, deduplicated: one row per distinct list of frames.
CREATE TABLE stacks (
  id    INTEGER PRIMARY KEY,
  depth INTEGER NOT NULL,
  hash  INTEGER NOT NULL
);
-- level 0 is the innermost frame: the code that called the CUDA API. Python
-- frames (frames.kind = 'python') stand where the interpreter's native frame
-- that ran them was, or follow the native frames when those stop first.
CREATE TABLE stack_frames (
  stack_id INTEGER NOT NULL,
  level    INTEGER NOT NULL,
  frame_id INTEGER NOT NULL,
  PRIMARY KEY (stack_id, level)
) WITHOUT ROWID;
-- One row per distinct instruction pointer (kind 'native'), or per distinct
-- Python function, file and line (kind 'python'), resolved once.
CREATE TABLE frames (
  id            INTEGER PRIMARY KEY,
  ip            INTEGER NOT NULL,     -- python: 0
  module        TEXT,                 -- path of the shared object or executable; python: NULL
  module_offset INTEGER,              -- ip - module load address (what addr2line takes)
  function      TEXT,                 -- demangled where possible; python: the qualified name (Class.method)
  symbol_offset INTEGER,              -- ip - function start
  file          TEXT,                 -- source file, where debug info allows; python: co_filename as Python has it
  line          INTEGER,
  kind          TEXT NOT NULL DEFAULT 'native'  -- native | python (schema 2; absent in version 1 traces)
);

-- NVTX ranges (push/pop, start/end) and gputrace_range_* markers. A range
-- still open when the trace started (pushed before the first CUDA call) has a
-- negative start_ns; ranges that ended before the trace started are not kept.
CREATE TABLE ranges (
  id         INTEGER PRIMARY KEY,     -- also the nvtxRangeId_t that nvtxRangeStart* returned
  source     TEXT NOT NULL,           -- nvtx | marker
  kind       TEXT NOT NULL DEFAULT 'push', -- push (push/pop, nested per thread) | start (start/end, any thread)
  domain     TEXT,                    -- NVTX domain name; NULL = default domain
  message    TEXT,
  tid        INTEGER,                 -- thread that opened it
  start_ns   INTEGER NOT NULL,
  end_ns     INTEGER,                 -- NULL if never closed
  depth      INTEGER NOT NULL,        -- push: nesting on its thread within its domain, 0 = outermost; start: 0
  parent_id  INTEGER,                 -- push: the enclosing range of the same thread and domain
  batch_size INTEGER                  -- from 'batch_size=N' or 'bs=N' in the message
);
-- Instant marks: nvtxMark and gputrace_mark (marks before the trace started are not kept).
CREATE TABLE marks (
  id      INTEGER PRIMARY KEY,
  source  TEXT NOT NULL,              -- nvtx | marker
  domain  TEXT,
  message TEXT,
  tid     INTEGER,
  t_ns    INTEGER NOT NULL
);
-- gputrace_iteration(index, batch_size): each call starts an iteration. The
-- last call made before the trace started is kept (negative t_ns).
CREATE TABLE iterations (
  id         INTEGER PRIMARY KEY,
  idx        INTEGER NOT NULL,
  batch_size INTEGER,                 -- NULL if not given (< 0)
  t_ns       INTEGER NOT NULL,
  tid        INTEGER
);

-- Interned strings (kernel names) shared by CUPTI rows.
CREATE TABLE strings (
  id   INTEGER PRIMARY KEY,
  text TEXT NOT NULL UNIQUE
);
-- CUPTI activity: GPU-side start/end, converted by CUPTI to the shim's clock
-- (CLOCK_MONOTONIC), relative to processes.start_mono_ns like every t_ns.
-- stream_id is CUPTI's stream id, not the cudaStream_t handle of events.stream.
CREATE TABLE kernels (
  id             INTEGER PRIMARY KEY,
  start_ns       INTEGER NOT NULL,
  end_ns         INTEGER NOT NULL,
  device         INTEGER,
  stream_id      INTEGER,
  correlation_id INTEGER,
  name_id        INTEGER,             -- strings.id, demangled name
  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER,
  shared_bytes   INTEGER,
  registers      INTEGER
);
CREATE TABLE memcpys (
  id             INTEGER PRIMARY KEY,
  start_ns       INTEGER NOT NULL,
  end_ns         INTEGER NOT NULL,
  device         INTEGER,
  stream_id      INTEGER,
  correlation_id INTEGER,
  kind           TEXT,                -- HtoD | DtoH | DtoD | HtoH | PtoP | ...
  bytes          INTEGER NOT NULL
);
CREATE TABLE memsets (
  id             INTEGER PRIMARY KEY,
  start_ns       INTEGER NOT NULL,
  end_ns         INTEGER NOT NULL,
  device         INTEGER,
  stream_id      INTEGER,
  correlation_id INTEGER,
  bytes          INTEGER NOT NULL,
  value          INTEGER
);
-- The driver's own record of each allocation and release (CUPTI MEMORY2):
-- it also sees memory the hooks cannot (libraries calling the driver
-- directly, statically linked runtimes, allocations inside CUDA graphs).
CREATE TABLE driver_memory (
  id             INTEGER PRIMARY KEY,
  t_ns           INTEGER NOT NULL,
  op             TEXT NOT NULL,       -- alloc | release
  memory_kind    TEXT,                -- device | pinned | pageable | managed | array | device_static | managed_static
  address        INTEGER,
  bytes          INTEGER,
  device         INTEGER,
  stream_id      INTEGER,             -- CUPTI stream id (stream-ordered allocations)
  correlation_id INTEGER,
  is_async       INTEGER,             -- 1: stream-ordered (from a memory pool)
  pool_address   INTEGER,             -- the pool's address, for pool allocations
  pool_size      INTEGER,             -- bytes the pool holds from the device at that moment
  pool_used      INTEGER              -- bytes of the pool in use at that moment
);
-- Memory pools created, destroyed or trimmed (CUPTI MEMORY_POOL), and 'sampled'
-- rows: the device's current pool read by the writer when its reservation
-- changed. The device memory a stream-ordered pool holds, which
-- per-allocation hooks do not show.
CREATE TABLE memory_pools (
  id                INTEGER PRIMARY KEY,
  t_ns              INTEGER NOT NULL,
  op                TEXT NOT NULL,    -- created | destroyed | trimmed | sampled
  pool_type         TEXT,             -- local | imported
  address           INTEGER,
  size              INTEGER,          -- bytes held from the device
  utilized_size     INTEGER,
  release_threshold INTEGER,
  min_bytes_to_keep INTEGER,          -- trimmed: cudaMemPoolTrimTo's argument
  device            INTEGER,
  correlation_id    INTEGER
);
-- The memory the driver holds for CUDA graphs' allocation nodes on a device
-- (cuDeviceGetGraphMemAttribute), taken when a graph runs and kept until
-- trimmed, which no call of the program's shows: read by the writer on the
-- devices where allocation nodes were captured (graph_calls) and, once any
-- graph was instantiated or launched, where the program allocated; at most
-- every 100 ms, at each NVML sample and at exit; a row when it changed.
CREATE TABLE graph_memory (
  t_ns           INTEGER NOT NULL,
  device         INTEGER NOT NULL,
  reserved_bytes INTEGER NOT NULL,    -- held from the device for graphs (the ledger's figure)
  used_bytes     INTEGER NOT NULL     -- of that, associated with graphs now
);
-- Samples of device memory in use, as nvidia-smi shows it (NVML): one right
-- after the program's first allocation and one at exit (summary's ledger), and
-- every GPUTRACE_SAMPLE_MS when set.
CREATE TABLE memory_samples (
  t_ns          INTEGER NOT NULL,
  device        INTEGER NOT NULL,     -- CUDA ordinal (matched to NVML by UUID)
  used_bytes    INTEGER NOT NULL,     -- whole device, every process (nvidia-smi memory.used)
  total_bytes   INTEGER,
  process_bytes INTEGER,              -- this process only; NULL where NVML cannot tell
  reserved_bytes INTEGER,             -- (schema 4) of used_bytes, what the driver and firmware set aside
                                      -- for themselves (NVML's memory info v2); NULL where NVML cannot tell
  others_bytes  INTEGER               -- (schema 4) of used_bytes, the other processes NVML lists; NULL where
                                      -- it cannot tell (this process not among them: another PID namespace)
);

-- The flight recorder (GPUTRACE_WINDOW_S): one row when it is on. The writer
-- deletes, every interval_ns, the rows older than the window (events, kernels,
-- memcpys, memsets, driver_memory, marks, closed ranges, NVML samples,
-- iterations but the one running then), keeping the alloc row of every
-- allocation still live at complete_from_ns and every VMM map/unmap row;
-- stacks, frames, strings, notes, memory_pools and graph_memory are kept whole.
CREATE TABLE flight_recorder (
  window_ns        INTEGER NOT NULL,   -- the span kept in full, before the end
  interval_ns      INTEGER NOT NULL,   -- of interval_summaries
  complete_from_ns INTEGER NOT NULL    -- from here on every row is there (0: nothing deleted yet)
);
-- One row per interval, memory level and device of the whole run (flight
-- recorder only), from the writer's own accounting as it wrote the events.
CREATE TABLE interval_summaries (
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  memory      TEXT NOT NULL,           -- apis.memory
  device      INTEGER,                 -- -1 host
  peak_bytes  INTEGER NOT NULL,        -- highest live bytes within the interval
  end_bytes   INTEGER NOT NULL,        -- live bytes at its end
  allocs      INTEGER NOT NULL,        -- successful allocation calls
  frees       INTEGER NOT NULL,        -- successful frees
  failed      INTEGER NOT NULL         -- failed calls (an OOM is one)
);

-- Readable events.
CREATE VIEW events_v AS
SELECT e.id, e.t_ns, a.name AS api, a.layer, a.op, a.memory, e.ptr, e.size,
       e.device, e.stream, e.tid, e.result, e.stack_id
FROM events e JOIN apis a ON a.id = e.api;

-- Each successful allocation with the free that ended it (free_ns NULL: live
-- at the end of the trace). Pairs are the next event on the same address.
-- memory is the API's, but 'graph' for a CUDA graph's allocation node
-- (graph_calls.captured): no memory taken when it was made.
CREATE VIEW allocations AS
SELECT id AS alloc_id, t_ns AS alloc_ns, api, memory, ptr, size, device,
       stack_id AS alloc_stack_id,
       CASE WHEN next_op = 'free' THEN next_ns END AS free_ns,
       CASE WHEN next_op = 'free' THEN next_stack END AS free_stack_id,
       CASE WHEN next_op = 'free' THEN next_id END AS free_id
FROM (
  SELECT e.id, e.t_ns, a.name AS api, a.op,
         CASE WHEN EXISTS (SELECT 1 FROM graph_calls g WHERE g.event_id = e.id AND g.captured) THEN 'graph'
              ELSE a.memory END AS memory,   -- a CUDA graph's allocation node: its own kind
         e.ptr, e.size, e.device, e.stack_id,
         LEAD(a.op)       OVER w AS next_op,
         LEAD(e.t_ns)     OVER w AS next_ns,
         LEAD(e.stack_id) OVER w AS next_stack,
         LEAD(e.id)       OVER w AS next_id
  FROM events e JOIN apis a ON a.id = e.api
  WHERE e.result = 0 AND a.op IN ('alloc', 'free')
  WINDOW w AS (PARTITION BY a.space, e.ptr ORDER BY e.t_ns, e.id)
) WHERE op = 'alloc';

CREATE VIEW live_at_exit AS
SELECT * FROM allocations WHERE free_ns IS NULL;

-- Live bytes over time per kind of memory and device: one row per allocation
-- and one per free that ends one; a free counts in its allocation's memory
-- and device (a cuMemRelease of a host-located handle frees host memory).
CREATE VIEW memory_timeline AS
WITH pairs AS (SELECT * FROM allocations WHERE size IS NOT NULL)
SELECT t_ns, memory, device, delta,
       SUM(delta) OVER (PARTITION BY memory, device ORDER BY t_ns, id
                        ROWS UNBOUNDED PRECEDING) AS live_bytes
FROM (
  SELECT alloc_id AS id, alloc_ns AS t_ns, memory, device, size AS delta FROM pairs
  UNION ALL
  SELECT free_id, free_ns, memory, device, -size FROM pairs WHERE free_id IS NOT NULL
);

-- Failed calls (an OOM is a failed alloc with result 2 / cudaErrorMemoryAllocation).
CREATE VIEW failures AS
SELECT * FROM events_v WHERE result <> 0;

-- Frames of each stack, innermost first, readable.
CREATE VIEW stack_text AS
SELECT sf.stack_id, sf.level, f.kind, f.function, f.module, f.module_offset, f.file, f.line
FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id;
