/* The writer's side of everything that is not an allocation event: ranges,
 * marks and iterations from the queue, notes, device facts, NVML samples and
 * (through writer_cupti.c) CUPTI activity, the stream-ordered pools'
 * reservation (pools.c) where the program allocates from them, and the
 * memory held for CUDA graphs where it uses them. writer.c calls in at each trace's
 * start, each round (tick outside SQLite, write inside its transaction) and
 * each range, mark or iteration record. Writer thread only, through db.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "activity.h"
#include "db.h"
#include "writer.h"

#define MAX_SAMPLES 4096
#define POOL_EVERY_NS (5 * 1000000ull) /* the pools' reservation, at most this often while they change */
#define GRAPH_EVERY_NS (100 * 1000000ull) /* graphs' memory: a graph's launch makes no call to see */
#define MAX_GRAPH_ROWS 64

static struct {
    uint64_t start_mono;
    enum { DEV_WAIT, DEV_READ, DEV_WRITTEN } dev_state;
    struct gt_devices devs;
    _Atomic bool nvml_on;
    bool start_sampled;
    _Atomic int end_taken;   /* 0, 1 being taken, 2 taken */
    int nend;
    struct gt_mem_sample end[GT_MAX_DEVICES];
    uint64_t next_sample, first_sample_t, cupti_dropped_seen;
    /* one more sample when the program's first iteration has ended (its
     * first outermost default-domain range closed, or its second marker
     * API iteration began): what lazily loaded kernel modules and library
     * start-up took by then, for the ledger. 0 waiting, 1 due, 2 taken. */
    int iteration_sample;
    uint64_t first_range_id;
    int64_t iterations_seen;
    int nsamples;
    struct gt_mem_sample samples[MAX_SAMPLES];
    uint64_t pool_changes_seen, next_pool;
    uint64_t pool_reserved[64];          /* last written per device; 0: none yet */
    uint64_t pool_read_t[64];            /* ...read at this time */
    int npools;
    struct gt_mem_sample pools[64];      /* .used: reserved, .total: in use */
    uint64_t next_graph;
    int64_t graph_reserved[64];          /* last written per device; -1: none yet */
    int ngraphs, nend_graphs;
    struct gt_mem_sample graphs[MAX_GRAPH_ROWS];   /* as pools */
    struct gt_mem_sample end_graphs[GT_MAX_DEVICES]; /* read with the exit sample (end_sample) */
    int nend_pools;
    struct gt_mem_sample end_pools[GT_MAX_DEVICES];  /* likewise the pools' reservation */
} A;
/* the devices are read and the ledger's first sample taken (or NVML is off):
 * what the exit waits for (before_cuda_teardown) */
static _Atomic bool devices_done;

static const char *const source_names[] = {"nvtx", "marker"};

static int64_t rel(uint64_t t)
{
    return (int64_t)(t - A.start_mono); /* negative: before the trace started */
}

void gt_activity_begin(uint64_t start_mono)
{
    A.start_mono = start_mono;
    for (int d = 0; d < 64; d++)
        A.graph_reserved[d] = -1;
}

/* "batch_size=N" or "bs=N" where the key starts a word; -1 if absent. */
static int64_t batch_size_in(const char *m)
{
    static const char *const keys[] = {"batch_size=", "bs="};
    for (int k = 0; m && k < 2; k++)
        for (const char *p = m; (p = strstr(p, keys[k])); p++) {
            if (p > m && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
                continue;
            const char *d = p + strlen(keys[k]);
            if (isdigit((unsigned char)*d))
                return strtoll(d, NULL, 10);
        }
    return -1;
}

/* A range, mark or iteration off the queue; its message is released here. */
void gt_activity_record(struct gt_rec *rec)
{
    switch (rec->kind) {
    case GT_REC_RANGE_PUSH:
    case GT_REC_RANGE_START: {
        const struct gt_range_open *o = &rec->open;
        if (!A.first_range_id && o->depth == 0 && !o->domain)
            A.first_range_id = o->id;
        int64_t bs = batch_size_in(o->msg);
        GT_BIND_INT(RANGE, id, o->id);
        GT_BIND_TEXT(RANGE, source, source_names[o->source == GT_SRC_MARKER]);
        GT_BIND_TEXT(RANGE, kind, rec->kind == GT_REC_RANGE_START ? "start" : "push");
        GT_BIND_TEXT(RANGE, domain, o->domain);
        GT_BIND_TEXT(RANGE, message, o->msg);
        GT_BIND_INT(RANGE, tid, rec->tid);
        GT_BIND_INT(RANGE, start_ns, rel(rec->t_ns));
        GT_BIND_INT(RANGE, depth, o->depth);
        GT_BIND_OPT(RANGE, parent_id, o->parent_id != 0, o->parent_id);
        GT_BIND_OPT(RANGE, batch_size, bs >= 0, bs);
        gt_db_run(GT_ST_RANGE, GT_DROP_NOT_WRITTEN);
        break;
    }
    case GT_REC_RANGE_POP:
    case GT_REC_RANGE_END:
        if (A.first_range_id && rec->close.id == A.first_range_id && !A.iteration_sample)
            A.iteration_sample = 1;
        GT_BIND_INT(RANGE_END, end_ns, rel(rec->t_ns));
        GT_BIND_INT(RANGE_END, id, rec->close.id);
        gt_db_run(GT_ST_RANGE_END, GT_DROP_NOT_WRITTEN);
        break;
    case GT_REC_MARK:
        GT_BIND_TEXT(MARK, source, source_names[rec->mark.source == GT_SRC_MARKER]);
        GT_BIND_TEXT(MARK, domain, rec->mark.domain);
        GT_BIND_TEXT(MARK, message, rec->mark.msg);
        GT_BIND_INT(MARK, tid, rec->tid);
        GT_BIND_INT(MARK, t_ns, rel(rec->t_ns));
        gt_db_run(GT_ST_MARK, GT_DROP_NOT_WRITTEN);
        break;
    case GT_REC_ITERATION:
        if (++A.iterations_seen == 2 && !A.iteration_sample)
            A.iteration_sample = 1;
        GT_BIND_INT(ITERATION, idx, rec->iteration.index);
        GT_BIND_OPT(ITERATION, batch_size, rec->iteration.batch_size >= 0, rec->iteration.batch_size);
        GT_BIND_INT(ITERATION, t_ns, rel(rec->t_ns));
        GT_BIND_INT(ITERATION, tid, rec->tid);
        gt_db_run(GT_ST_ITERATION, GT_DROP_NOT_WRITTEN);
        break;
    }
    gt_rec_release(rec);
}

static void end_sample(void);

/* The reservation of the pools of each device the program allocates from,
 * read when pool allocations happened since the last read (or at stop: force),
 * kept only when it changed: a pool that holds its memory costs no rows. */
static void pool_sample(uint64_t now, bool force)
{
    uint64_t changes, devs = gt_events_pool_devices(&changes);
    if (changes == A.pool_changes_seen || (!force && now < A.next_pool))
        return;
    A.pool_changes_seen = changes;
    A.next_pool = now + POOL_EVERY_NS;
    for (int d = 0; d < 64 && A.npools < 64; d++) {
        struct gt_mem_sample s = {.device = d};
        if (!(devs >> d & 1) || !gt_pool_read(d, &s) || s.used == A.pool_reserved[d])
            continue;
        A.pool_reserved[d] = s.used;
        A.pool_read_t[d] = s.t_ns = gt_now_ns();   /* (one stamp for both: the exit's reading is ordered by it) */
        A.pools[A.npools++] = s;
    }
}

/* reader's reading on each device of devs, into out (at most max); n
 * readings. Any thread. */
static int read_devices(uint64_t devs, bool (*reader)(int, struct gt_mem_sample *), struct gt_mem_sample *out,
                        int max)
{
    int n = 0;
    for (int d = 0; d < 64 && n < max; d++) {
        struct gt_mem_sample s = {.device = d};
        if ((devs >> d & 1) && reader(d, &s)) {
            s.t_ns = gt_now_ns();
            out[n++] = s;
        }
    }
    return n;
}

/* The reservation of the pools of each device the program allocated from. */
static int pool_read_all(struct gt_mem_sample *out, int max)
{
    return read_devices(gt_events_pool_devices(NULL), gt_pool_read, out, max);
}

/* Where the memory held for graphs is read: the devices where allocation
 * nodes were captured, and, once a graph was instantiated or launched, where
 * the program allocated (graphs.c). Any thread. */
static uint64_t graph_devices(void)
{
    return gt_graph_node_devices() | (gt_graph_in_use() ? gt_events_alloc_devices() : 0);
}

/* That memory on each of those devices. */
static int graph_read(struct gt_mem_sample *out, int max)
{
    return read_devices(graph_devices(), gt_graph_memory_read, out, max);
}

/* Readings kept when the reservation changed (always: the exit's, which may
 * be older than the writer's last reading and is the figure at the exit
 * sample). Writer thread. */
static void graph_keep(const struct gt_mem_sample *s, int n, bool always)
{
    for (int i = 0; i < n; i++) {
        if (!always && (int64_t)s[i].used == A.graph_reserved[s[i].device])
            continue;
        A.graph_reserved[s[i].device] = (int64_t)s[i].used;
        /* rows not yet written (the file locked): the newest takes the last place */
        A.graphs[A.ngraphs < MAX_GRAPH_ROWS ? A.ngraphs++ : MAX_GRAPH_ROWS - 1] = s[i];
    }
}

static void graph_sample(uint64_t now, bool force)
{
    if (!graph_devices() || (!force && now < A.next_graph))
        return;
    A.next_graph = now + GRAPH_EVERY_NS;
    struct gt_mem_sample s[GT_MAX_DEVICES];
    graph_keep(s, graph_read(s, GT_MAX_DEVICES), false);
}

/* Each writer round, outside SQLite: once CUDA is initialised, flush CUPTI,
 * read the devices and start NVML; then sample when due. */
void gt_activity_tick(void)
{
    if (!atomic_load_explicit(&gt_cuda_ready, memory_order_acquire))
        return;
    uint64_t now = gt_now_ns();
    gt_cupti_tick(now);
    if (A.dev_state == DEV_WAIT) {
        if (!gt_devices_read(&A.devs))
            gt_note("devices", false, "the devices could not be read (neither libcuda nor libcudart answered)");
        A.dev_state = DEV_READ;
        /* The ledger's samples: one now, right after the program's first
         * allocation call (the context exists; the analyzer measures it as
         * NVML's figure minus what the trace shows live), one at the end.
         * Sampling every GPUTRACE_SAMPLE_MS only when asked for. */
        bool on = gt_nvml_open(&A.devs, gt_config.sample_ms != 0);
        atomic_store(&A.nvml_on, on);
        A.next_sample = now;
    }
    if (atomic_load(&A.nvml_on) && now >= A.next_sample && A.nsamples < MAX_SAMPLES - GT_MAX_DEVICES) {
        if (A.start_sampled)
            pool_sample(now, true);   /* the pool at the same instant (see the first-iteration sample) */
        graph_sample(now, true);
        A.nsamples += gt_nvml_sample(A.samples + A.nsamples, MAX_SAMPLES - A.nsamples);
        A.start_sampled = true;
        /* Every GPUTRACE_SAMPLE_MS when asked for; else every 50 ms for the
         * first 16 s, then at 32, 64, 128 ... s (320 + about 12 samples a
         * day, each a few NVML calls on this thread): the ledger measures
         * kernel modules at the first sample after the program's first
         * iteration, which a program without ranges or markers does not
         * announce (the analyzer finds its iterations afterwards). A short
         * job's first iteration may end seconds after its first CUDA call
         * and a moment before its exit: train_mlp.py on an H100 trained 30
         * steps in 0.33 s, 5.8 s after its first call; samples 1, 2, 4 s
         * apart, and then 250 ms apart, had none in between. */
        if (!A.first_sample_t)
            A.first_sample_t = now;
        uint64_t since = now - A.first_sample_t;
        A.next_sample = now + (gt_config.sample_ms ? (uint64_t)gt_config.sample_ms * 1000000ull
                               : since < 16000000000ull ? 50000000ull : since);
    }
    if (A.iteration_sample == 1 && atomic_load(&A.nvml_on) && A.start_sampled &&
        A.nsamples < MAX_SAMPLES - GT_MAX_DEVICES) {
        /* the pool read at the same instant: the analyzer measures modules as
         * NVML's figure less everything traced, the pool at its reservation,
         * and a pool that grew since its last reading would pass for modules
         * (3.8 GB on an H100 conv net's first iteration) */
        pool_sample(now, true);
        graph_sample(now, true);
        A.nsamples += gt_nvml_sample(A.samples + A.nsamples, MAX_SAMPLES - A.nsamples);
        A.iteration_sample = 2;
    }
    pool_sample(now, false);
    graph_sample(now, false);
    if (!atomic_load_explicit(&devices_done, memory_order_relaxed) && (A.start_sampled || !atomic_load(&A.nvml_on)))
        atomic_store_explicit(&devices_done, true, memory_order_release);
}

/* At exit, before CUDA's own teardown (an atexit handler registered at the
 * program's first successful CUDA call, after CUDA registered its own): the
 * ledger's last sample, while the contexts are up. A statically linked
 * runtime tears the driver down in its atexit handler, and a program that
 * lives a few ms past its first call (an nvcc sample) exits before the
 * writer's next round: the writer is woken, and waited for (at most
 * 500 ms), to read the devices and take the first sample before they go;
 * once gone, every query failed and the trace had no devices and no ledger. */
static bool (*wake_writer)(void);   /* writer.c's, handed over by lifecycle.c (writer.c calls this file) */

static void before_cuda_teardown(void)
{
    if (!atomic_load_explicit(&gt_cuda_ready, memory_order_acquire))
        return;   /* a forked child that made no CUDA call: its parent's handler */
    /* while the trace is written: a writer that could not open the file is
     * gone (a review's probe: every exit waited the whole 500 ms then) */
    for (int i = 0; i < 500 && !atomic_load_explicit(&devices_done, memory_order_acquire) &&
                    atomic_load(&gt_state) == GT_ACTIVE && wake_writer && wake_writer();
         i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    end_sample();
}

/* The program's thread, at its first successful CUDA call (once a process):
 * wake is what wakes the writer for a round now. */
void gt_activity_cuda_ready(bool (*wake)(void))
{
    wake_writer = wake;
    atexit(before_cuda_teardown);
    if (wake)
        wake();   /* the devices now, not at the writer's next round */
}

/* Writer, stopping (after the last drain and the exit sample): the pools' and graphs' last change. */
void gt_activity_stop_pools(void)
{
    if (atomic_load_explicit(&gt_cuda_ready, memory_order_acquire)) {
        pool_sample(gt_now_ns(), true);
        graph_sample(gt_now_ns(), true);
    }
}

/* The ledger's last sample: at exit before CUDA tears its contexts down (an
 * atexit handler registered after CUDA's), or when the trace stops (_exit,
 * exec, a stop after atexit). Once; any thread. */
static void end_sample(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&A.end_taken, &expected, 1))
        return;
    A.nend_graphs = graph_read(A.end_graphs, GT_MAX_DEVICES);   /* graphs' memory at the same instant */
    A.nend_pools = pool_read_all(A.end_pools, GT_MAX_DEVICES);   /* and the pools': the writer's last
                                                                     * reading may be older than the sample */
    A.nend = atomic_load(&A.nvml_on) ? gt_nvml_sample(A.end, GT_MAX_DEVICES) : 0;
    atomic_store(&A.end_taken, 2);
}

/* Writer, stopping: the last sample joins those to write. */
void gt_activity_stop_sample(void)
{
    end_sample();
    if (atomic_load(&A.end_taken) != 2)
        return;
    for (int i = 0; i < A.nend && A.nsamples < MAX_SAMPLES; i++)
        A.samples[A.nsamples++] = A.end[i];
    A.nend = 0;
    graph_keep(A.end_graphs, A.nend_graphs, true);
    A.nend_graphs = 0;
    /* a reservation as last written, and read before the exit sample, needs no
     * row; one the writer read again after it (the program's last pool calls
     * drained between its atexit and the stop) does: the ledger takes the
     * reading at or before the sample */
    for (int i = 0; i < A.nend_pools; i++) {
        int d = A.end_pools[i].device;
        if (A.pool_reserved[d] == A.end_pools[i].used && A.pool_read_t[d] <= A.end_pools[i].t_ns)
            continue;
        if (A.pool_read_t[d] <= A.end_pools[i].t_ns) {   /* (a later reading stays the last written) */
            A.pool_reserved[d] = A.end_pools[i].used;
            A.pool_read_t[d] = A.end_pools[i].t_ns;
        }
        A.pools[A.npools < 64 ? A.npools++ : 63] = A.end_pools[i];   /* (the newest takes the last place) */
    }
    A.nend_pools = 0;
}

bool gt_activity_pending(void)
{
    return gt_notes_pending() || A.dev_state == DEV_READ || A.nsamples || A.npools || A.ngraphs || gt_cupti_pending() ||
           gt_cupti_dropped() != A.cupti_dropped_seen;
}

static void write_devices(void)
{
    for (int i = 0; i < A.devs.count; i++) {
        const struct gt_device_info *d = &A.devs.dev[i];
        GT_BIND_INT(DEVICE, id, i);
        GT_BIND_TEXT(DEVICE, name, d->name[0] ? d->name : NULL);
        GT_BIND_TEXT(DEVICE, uuid, d->has_uuid ? d->uuid : NULL);
        GT_BIND_OPT(DEVICE, total_bytes, d->has_total, d->total_bytes);
        GT_BIND_OPT(DEVICE, cc_major, d->has_cc, d->cc_major);
        GT_BIND_OPT(DEVICE, cc_minor, d->has_cc, d->cc_minor);
        GT_BIND_TEXT(DEVICE, pci_bus_id, d->has_pci ? d->pci_bus_id : NULL);
        GT_BIND_OPT(DEVICE, driver_version, A.devs.driver_version != 0, A.devs.driver_version);
        GT_BIND_OPT(DEVICE, runtime_version, A.devs.runtime_version != 0, A.devs.runtime_version);
        gt_db_run(GT_ST_DEVICE, GT_DROP_NOT_WRITTEN);
    }
}

/* Inside the writer's transaction. */
void gt_activity_write(void)
{
    for (struct gt_note_rec *n = gt_notes_take(), *next; n; n = next) {
        next = n->next;
        if (n->to_stderr && !gt_config.quiet)
            gt_eprintf("gputrace: %s %s\n", n->component, n->message);
        GT_BIND_INT(NOTE, t_ns, rel(n->t_ns));
        GT_BIND_TEXT(NOTE, component, n->component);
        GT_BIND_TEXT(NOTE, message, n->message);
        gt_db_run(GT_ST_NOTE, GT_DROP_NOT_WRITTEN);
        free(n);
    }
    if (A.dev_state == DEV_READ) {
        write_devices();
        A.dev_state = DEV_WRITTEN;
    }
    for (int i = 0; i < A.nsamples; i++) {
        const struct gt_mem_sample *s = &A.samples[i];
        GT_BIND_INT(SAMPLE, t_ns, rel(s->t_ns));
        GT_BIND_INT(SAMPLE, device, s->device);
        GT_BIND_INT(SAMPLE, used_bytes, s->used);
        GT_BIND_INT(SAMPLE, total_bytes, s->total);
        GT_BIND_OPT(SAMPLE, process_bytes, s->process >= 0, s->process);
        GT_BIND_OPT(SAMPLE, reserved_bytes, s->reserved >= 0, s->reserved);
        GT_BIND_OPT(SAMPLE, others_bytes, s->others >= 0, s->others);
        gt_db_run(GT_ST_SAMPLE, GT_DROP_NOT_WRITTEN);
    }
    A.nsamples = 0;
    for (int i = 0; i < A.npools; i++) { /* beside CUPTI's pool records, which the ledger reads alike */
        const struct gt_mem_sample *s = &A.pools[i];
        GT_BIND_INT(MEMORY_POOL, t_ns, rel(s->t_ns));
        GT_BIND_TEXT(MEMORY_POOL, op, "sampled");
        GT_BIND_TEXT(MEMORY_POOL, pool_type, NULL);
        GT_BIND_OPT(MEMORY_POOL, address, false, 0);
        GT_BIND_INT(MEMORY_POOL, size, s->used);
        GT_BIND_INT(MEMORY_POOL, utilized_size, s->total);
        GT_BIND_OPT(MEMORY_POOL, release_threshold, s->threshold >= 0, s->threshold);
        GT_BIND_OPT(MEMORY_POOL, min_bytes_to_keep, false, 0);
        GT_BIND_INT(MEMORY_POOL, device, s->device);
        GT_BIND_OPT(MEMORY_POOL, correlation_id, false, 0);
        gt_db_run(GT_ST_MEMORY_POOL, GT_DROP_NOT_WRITTEN);
    }
    A.npools = 0;
    for (int i = 0; i < A.ngraphs; i++) {
        const struct gt_mem_sample *s = &A.graphs[i];
        GT_BIND_INT(GRAPH_MEMORY, t_ns, rel(s->t_ns));
        GT_BIND_INT(GRAPH_MEMORY, device, s->device);
        GT_BIND_INT(GRAPH_MEMORY, reserved_bytes, s->used);
        GT_BIND_INT(GRAPH_MEMORY, used_bytes, s->total);
        gt_db_run(GT_ST_GRAPH_MEMORY, GT_DROP_NOT_WRITTEN);
    }
    A.ngraphs = 0;
    gt_cupti_write_buffers(A.start_mono);
    /* CUPTI's own count of records it lost: a drop like any other (written
     * with the others at the commit) */
    uint64_t lost = gt_cupti_dropped();
    if (lost > A.cupti_dropped_seen)
        gt_drop_add(GT_DROP_CUPTI_RECORDS, lost - A.cupti_dropped_seen);
    A.cupti_dropped_seen = lost;
}

/* Fork child (through gt_writer_forget): whatever the parent's writer held
 * is the parent's. */
void gt_activity_forget(void)
{
    gt_cupti_writer_forget();
    memset(&A, 0, sizeof A);
    atomic_store(&devices_done, false);
}
