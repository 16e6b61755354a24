/* export.c - `gputrace export --format chrome`: traces as Chrome trace-event
 * JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open. One
 * process per trace file; counters for live bytes per memory level and
 * device and for NVML's used bytes; iterations and NVTX ranges as slices;
 * kernels, copies and memsets on one track per stream; allocations and frees
 * as instant events. Written as it is read: memory stays that of the
 * analyzer's event arrays whatever the size of the output. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "format.h"
#include "trace_rows.h"
#include "viz.h"

/* How the output starts: also how a file that export wrote is recognised. */
#define EXPORT_HEAD "{\"displayTimeUnit\":\"ms\",\"traceEvents\":["

/* ---- the parts of one trace */

static int export_iterations(struct exporter *x)
{
    const struct gt_iterations *its;
    int code = gt_ctx_iterations(x->c, &its);
    if (code || !its->n)
        return code;
    ex_metadata(x, "thread_name", TID_ITERATIONS, "name", "iterations", 0);
    ex_metadata(x, "thread_sort_index", TID_ITERATIONS, "sort_index", NULL, -2);
    for (size_t k = 0; k < its->n; k++) {
        const struct gt_iteration *it = &its->it[k];
        char name[64];
        snprintf(name, sizeof name, "iteration %lld", (long long)it->index);
        if (!ex_slice(x, TID_ITERATIONS, it->start, it->end, "iteration", name))
            continue;
        fprintf(x->f, ",\"args\":{\"index\":%lld,\"source\":\"%s\"", (long long)it->index, gt_iter_source_name(its->source));
        if (it->batch_size >= 0)
            fprintf(x->f, ",\"batch_size\":%lld", (long long)it->batch_size);
        fputs("}}", x->f);
    }
    return GT_EXIT_OK;
}

/* Push/pop ranges nest on their thread; start/end ranges may overlap
 * anything, so they go on lanes where each lane holds non-overlapping ones. */
static int export_ranges(struct exporter *x)
{
    struct gt_rows r;
    int code = gt_rows_open(&x->c->t, &r, GT_ROWS_RANGES), more;
    while (!code && (more = gt_rows_next(&r)) > 0) {
        const char *kind = gt_rows_text(&r, 2);
        int64_t tid = gt_rows_int(&r, 5, -1), s = gt_rows_int(&r, 6, 0), e = gt_rows_int(&r, 7, -1);
        if (e < 0)
            e = x->trace_end > s ? x->trace_end : s;   /* never closed: lasts until the trace ends */
        int64_t cs = s < x->from ? x->from : s, ce = e > x->to ? x->to : e;   /* as place_slice will cut it */
        if (tid < 0 || (kind && !strcmp(kind, "start")) || !ex_nests(x, tid, cs, ce)) {
            size_t k = 0;
            while (k < x->nlanes && x->lane_end[k] > s)
                k++;
            if (k == MAX_LANES)
                k = MAX_LANES - 1;   /* nesting clips what no lane can hold */
            if (k == x->nlanes) {
                char name[48];
                snprintf(name, sizeof name, "ranges (start/end) %zu", k);
                ex_metadata(x, "thread_name", TID_LANES + (int64_t)k, "name", name, 0);
                x->nlanes++;
            }
            x->lane_end[k] = e;
            tid = TID_LANES + (int64_t)k;
        }
        const char *msg = gt_rows_text(&r, 4);
        if (!ex_slice(x, tid, s, e, gt_rows_text(&r, 1), msg && *msg ? msg : "(unnamed range)"))
            continue;
        fprintf(x->f, ",\"args\":{\"depth\":%lld", (long long)gt_rows_int(&r, 8, 0));
        if (gt_rows_text(&r, 3))
            ex_kstr(x, "domain", gt_rows_text(&r, 3));
        if (gt_rows_int(&r, 9, -1) >= 0)
            fprintf(x->f, ",\"batch_size\":%lld", (long long)gt_rows_int(&r, 9, -1));
        fputs(gt_rows_int(&r, 7, -1) < 0 ? ",\"closed\":false}}" : "}}", x->f);
    }
    if (!code && more < 0)
        code = -more;
    gt_rows_close(&r);
    if (code)
        return code;
    code = gt_rows_open(&x->c->t, &r, GT_ROWS_MARKS);
    while (!code && (more = gt_rows_next(&r)) > 0) {
        int64_t t = gt_rows_int(&r, 3, 0);
        if (!ex_in_window(x, t))
            continue;
        ex_begin(x, "i", gt_rows_int(&r, 2, TID_ITERATIONS), t);
        fputs(",\"s\":\"t\"", x->f);
        ex_kstr(x, "cat", gt_rows_text(&r, 0));
        ex_kstr(x, "name", gt_rows_text(&r, 1) ? gt_rows_text(&r, 1) : "(mark)");
        fputs("}", x->f);
    }
    if (!code && more < 0)
        code = -more;
    gt_rows_close(&r);
    return code;
}

static void counter(struct exporter *x, int memory, int slot, int64_t t, int64_t bytes)
{
    char name[64];
    if (slot == GT_HOST_SLOT)
        snprintf(name, sizeof name, "%s bytes (host)", gt_memory_name(memory));
    else
        snprintf(name, sizeof name, "%s bytes (GPU %d)", gt_memory_name(memory), slot);
    ex_begin(x, "C", 0, t);
    fprintf(x->f, ",\"name\":\"%s\",\"args\":{\"bytes\":%lld}}", name, (long long)bytes);
}

/* An allocation, free or failed allocation as an instant event on the
 * calling thread, with its size and the innermost frame of its stack. */
static int alloc_instant(struct exporter *x, size_t i, uint32_t al, int64_t tid, int64_t stream)
{
    struct gt_trace *t = &x->c->t;
    const struct gt_event *e = &t->ev[i];
    const struct gt_api_attr *a = gt_attr(t, e);
    char name[48];
    snprintf(name, sizeof name, "%s%s", a->name, e->failed ? " failed" : "");
    ex_begin(x, "i", tid, e->t);
    fputs(",\"s\":\"t\"", x->f);
    ex_kstr(x, "cat", e->failed ? "failed" : a->op == GT_OP_FREE ? "free" : "alloc");
    ex_kstr(x, "name", name);
    int64_t size = al != GT_NO_EVENT ? t->ev[al].size : e->size;
    fprintf(x->f, ",\"args\":{\"bytes\":%lld,\"memory\":\"%s\"", (long long)size, gt_memory_name(a->memory));
    if (e->device != GT_DEVICE_NULL)
        fprintf(x->f, ",\"device\":%d", e->device);
    if (e->failed)
        fprintf(x->f, ",\"error\":%lld", (long long)e->u.result);
    else
        fprintf(x->f, ",\"ptr\":\"0x%llx\"", (unsigned long long)e->u.ptr);
    if (stream >= 0)
        fprintf(x->f, ",\"stream\":\"0x%llx\"", (unsigned long long)stream);
    char **frames;
    int nframes;
    if (e->site >= 0) {
        int code = gt_trace_frames(t, e->site, &frames, &nframes);
        if (code) {
            fputs("}}", x->f);   /* the object closed: the export ends here, and its JSON parses */
            return code;
        }
        if (nframes)
            ex_kstr(x, "frame", frames[0]);
        const struct gt_frame *fi;   /* and the program's own line, where Python ran it */
        if ((code = gt_trace_frame_info(t, e->site, &fi, &nframes))) {
            fputs("}}", x->f);
            return code;
        }
        int u = gt_frame_user_python(fi, nframes), marked = 0;
        for (int k = 0; k < u; k++)
            marked |= gt_frame_is_backward_mark(&fi[k]);
        if (u >= 0) {   /* "backward: train_step (train.py:57)" for the autograd thread's */
            char buf[1100];
            snprintf(buf, sizeof buf, "%s%s", marked ? "backward: " : "", frames[u]);
            ex_kstr(x, "python_frame", buf);
        }
    }
    fputs("}}", x->f);
    return GT_EXIT_OK;
}

/* Live bytes per memory level and device as counters (with their values at
 * the window's start), and each call as an instant event. */
static int export_events(struct exporter *x)
{
    struct gt_trace *t = &x->c->t;
    static int64_t live[GT_MEM_HOST + 1][GT_HOST_SLOT + 1];
    static unsigned char seen[GT_MEM_HOST + 1][GT_HOST_SLOT + 1];
    memset(live, 0, sizeof live);
    memset(seen, 0, sizeof seen);
    struct gt_rows r = {0};
    int code = x->o->no_allocs ? GT_EXIT_OK : gt_rows_open(t, &r, GT_ROWS_EVENTS);
    int started = x->from <= 0;   /* counters start at 0 with the trace */
    for (size_t i = 0; !code && i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        int64_t tid = 0, stream = -1;
        if (r.st) {
            if ((code = gt_rows_next_event(&r, i, "export")))
                break;
            tid = gt_rows_int(&r, 1, 0);
            stream = gt_rows_int(&r, 2, -1);
        }
        if (e->t > x->to)
            break;
        if (!started && e->t >= x->from) {
            for (int m = 0; m <= GT_MEM_HOST; m++)
                for (int d = 0; d <= GT_HOST_SLOT; d++)
                    if (seen[m][d])
                        counter(x, m, d, x->from, live[m][d]);
            started = 1;
        }
        uint32_t al = gt_alloc_of(t, &x->c->p, i);
        const struct gt_api_attr *a = gt_attr(t, e);
        if (!x->o->no_allocs && ex_in_window(x, e->t) && a->known && (a->op == GT_OP_ALLOC || a->op == GT_OP_FREE))
            code = alloc_instant(x, i, al, tid, stream);
        if (code)
            break;
        int m, d;
        int64_t delta = gt_slot_delta(t, &x->c->p, i, &m, &d);
        if (!delta || m > GT_MEM_HOST)
            continue;
        live[m][d] += delta;
        seen[m][d] = 1;
        if (ex_in_window(x, e->t))
            counter(x, m, d, e->t, live[m][d]);
    }
    if (!code && !started)
        for (int m = 0; m <= GT_MEM_HOST; m++)
            for (int d = 0; d <= GT_HOST_SLOT; d++)
                if (seen[m][d])
                    counter(x, m, d, x->from, live[m][d]);
    gt_rows_close(&r);
    return code;
}

static void sample(struct exporter *x, int64_t t, int64_t dev, int64_t used, int64_t proc)
{
    ex_begin(x, "C", 0, t);
    fprintf(x->f, ",\"name\":\"NVML used bytes (GPU %lld)\",\"args\":{\"bytes\":%lld}}", (long long)dev, (long long)used);
    if (proc >= 0) {
        ex_begin(x, "C", 0, t);
        fprintf(x->f, ",\"name\":\"NVML process bytes (GPU %lld)\",\"args\":{\"bytes\":%lld}}", (long long)dev, (long long)proc);
    }
}

/* NVML's samples in the window; as the live-bytes counters do, each device's
 * last reading before the window is given at its start (samples are sparse
 * after the first seconds: a window between two had no NVML track at all) */
#define SAMPLE_DEVICES 64
static int export_samples(struct exporter *x)
{
    struct gt_rows r;
    int64_t before_used[SAMPLE_DEVICES], before_proc[SAMPLE_DEVICES];
    unsigned char before[SAMPLE_DEVICES] = {0};
    int carried = x->from == INT64_MIN;   /* (no window start: nothing to carry) */
    int code = gt_rows_open(&x->c->t, &r, GT_ROWS_SAMPLES), more;
    while (!code && (more = gt_rows_next(&r)) > 0) {
        int64_t t = gt_rows_int(&r, 0, 0), dev = gt_rows_int(&r, 1, 0), proc = gt_rows_int(&r, 3, -1);
        int64_t used = gt_rows_int(&r, 2, 0);
        if (t < x->from && dev >= 0 && dev < SAMPLE_DEVICES) {
            before[dev] = 1;
            before_used[dev] = used;
            before_proc[dev] = proc;
            continue;
        }
        if (!ex_in_window(x, t))
            continue;
        if (!carried) {
            for (int d = 0; d < SAMPLE_DEVICES; d++)
                if (before[d])
                    sample(x, x->from, d, before_used[d], before_proc[d]);
            carried = 1;
        }
        sample(x, t, dev, used, proc);
    }
    if (!code && more < 0)
        code = -more;
    for (int d = 0; !code && !carried && d < SAMPLE_DEVICES && x->from <= x->trace_end; d++)
        if (before[d])   /* no sample inside the window: the last before it holds through it */
            sample(x, x->from, d, before_used[d], before_proc[d]);
    gt_rows_close(&r);
    return code;
}

static int64_t stream_tid(struct exporter *x, int64_t device, int64_t stream)
{
    size_t k = 0;
    while (k < x->nstreams && (x->streams[k].device != device || x->streams[k].stream != stream))
        k++;
    if (k == x->nstreams) {
        x->streams = gt_xrealloc(x->streams, (k + 1) * sizeof *x->streams);
        x->streams[k] = (struct stream_track){device, stream};
        x->nstreams++;
        char name[80];
        snprintf(name, sizeof name, "GPU %lld stream %lld", (long long)device, (long long)stream);
        ex_metadata(x, "thread_name", TID_STREAMS + (int64_t)k, "name", name, 0);
        ex_metadata(x, "thread_sort_index", TID_STREAMS + (int64_t)k, "sort_index", NULL, 1000000 + (int64_t)k);
    }
    return TID_STREAMS + (int64_t)k;
}

static int export_gpu(struct exporter *x)
{
    static const char *const cats[] = {"kernel", "memcpy", "memset"};
    struct gt_rows r;
    int code = gt_rows_open(&x->c->t, &r, GT_ROWS_GPU), more;
    while (!code && (more = gt_rows_next(&r)) > 0) {
        int what = (int)gt_rows_int(&r, 0, 0) % 3;
        int64_t s = gt_rows_int(&r, 1, 0), e = gt_rows_int(&r, 2, 0);
        if (e < x->from || s > x->to)
            continue;
        int64_t tid = stream_tid(x, gt_rows_int(&r, 3, -1), gt_rows_int(&r, 4, -1));
        char name[64];
        const char *text = gt_rows_text(&r, 5);
        if (what) {
            snprintf(name, sizeof name, "%s%s%s", cats[what], text ? " " : "", text ? text : "");
            text = name;
        }
        if (!ex_slice(x, tid, s, e, cats[what], text ? text : "(unnamed kernel)"))
            continue;
        fprintf(x->f, ",\"args\":{\"correlation_id\":%lld", (long long)gt_rows_int(&r, 7, -1));
        if (what)
            fprintf(x->f, ",\"bytes\":%lld", (long long)gt_rows_int(&r, 6, 0));
        fputs("}}", x->f);
    }
    if (!code && more < 0)
        code = -more;
    gt_rows_close(&r);
    return code;
}

static int export_threads(struct exporter *x)
{
    struct gt_rows r;
    int code = gt_rows_open(&x->c->t, &r, GT_ROWS_THREADS), more;
    while (!code && (more = gt_rows_next(&r)) > 0)
        if (gt_rows_text(&r, 1))
            ex_metadata(x, "thread_name", gt_rows_int(&r, 0, 0), "name", gt_rows_text(&r, 1), 0);
    if (!code && more < 0)
        code = -more;
    gt_rows_close(&r);
    return code;
}

/* The window of this trace: --from/--to, or --iterations A:B. */
static int set_window(struct exporter *x)
{
    x->from = x->o->from >= 0 ? x->o->from : INT64_MIN;
    x->to = x->o->to >= 0 ? x->o->to : INT64_MAX;
    if (!x->o->iter_range)
        return GT_EXIT_OK;
    const struct gt_iterations *its;
    int code = gt_ctx_iterations(x->c, &its);
    if (code)
        return code;
    /* the first iteration A, and the first B from it on: indexes that
     * restart each epoch (0..4, 0..4) give the first epoch's, not the last
     * A and the last B (a window that mixed epochs) */
    /* (found or not by flags: an iteration marked before the first CUDA call starts before time 0) */
    int64_t s = 0, e = 0;
    int has_s = 0, has_e = 0;
    size_t k = 0, a_at = its->n;
    for (; k < its->n && !has_s; k++)
        if (its->it[k].index == x->o->iter_a) {
            s = its->it[k].start;
            has_s = 1;
            a_at = k;
        }
    for (k = a_at; k < its->n && !has_e; k++)
        if (its->it[k].index == x->o->iter_b) {
            e = its->it[k].end;
            has_e = 1;
        }
    if (has_s && !has_e) {
        for (k = 0; k < a_at && !has_e; k++)
            if (its->it[k].index == x->o->iter_b) {
                e = its->it[k].end;
                has_e = 1;
            }
        if (has_e) {   /* B only before A: the window would be empty */
            snprintf(x->c->t.err, sizeof x->c->t.err, "--iterations %lld:%lld: iteration %lld ends before iteration"
                     " %lld starts in this trace (its indexes are not in time order); give the first in time first",
                     (long long)x->o->iter_a, (long long)x->o->iter_b, (long long)x->o->iter_b,
                     (long long)x->o->iter_a);
            return GT_EXIT_USAGE;
        }
    }
    if (!has_s || !has_e) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (k = 0; k < its->n; k++) {
            lo = its->it[k].index < lo ? its->it[k].index : lo;
            hi = its->it[k].index > hi ? its->it[k].index : hi;
        }
        if (its->n)
            snprintf(x->c->t.err, sizeof x->c->t.err, "--iterations %lld:%lld: no such iterations in this trace (%.400s);"
                     " give indexes it has: %lld to %lld", (long long)x->o->iter_a, (long long)x->o->iter_b, its->how,
                     (long long)lo, (long long)hi);
        else
            snprintf(x->c->t.err, sizeof x->c->t.err, "--iterations %lld:%lld: %.400s; mark the loop (an NVTX range,"
                     " gputrace_iteration()) or export without --iterations", (long long)x->o->iter_a,
                     (long long)x->o->iter_b, its->how);
        return GT_EXIT_NO_ITERATIONS;
    }
    x->from = s > x->from ? s : x->from;
    x->to = e < x->to ? e : x->to;
    return GT_EXIT_OK;
}

static int export_one(struct exporter *x, int index)
{
    struct gt_trace *t = &x->c->t;
    x->trace_end = gt_trace_end_ns(t);
    if (t->nev && t->ev[t->nev - 1].t > x->trace_end)
        x->trace_end = t->ev[t->nev - 1].t;
    int code = set_window(x);
    if (code)
        return code;
    if (x->o->from >= 0 && x->o->from > x->trace_end) {   /* (not an error: another trace given may reach it) */
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        fprintf(stderr, "gputrace export: %s: --from %s is after the trace's end (%s): none of it is exported\n",
                x->c->path, gt_fmt_ns(x->o->from, b1), gt_fmt_ns(x->trace_end, b2));
    }
    char name[400];
    const char *file = gt_basename(x->c->path);
    if (t->proc.rank >= 0)
        snprintf(name, sizeof name, "rank %lld (pid %lld) %s", (long long)t->proc.rank, (long long)t->proc.pid, file);
    else
        snprintf(name, sizeof name, "pid %lld %s", (long long)t->proc.pid, file);
    ex_metadata(x, "process_name", 0, "name", name, 0);
    ex_metadata(x, "process_sort_index", 0, "sort_index", NULL, t->proc.rank >= 0 ? t->proc.rank : index);
    if (t->proc.command_line)
        ex_metadata(x, "process_labels", 0, "labels", t->proc.command_line, 0);
    if (t->recorder.on && ex_in_window(x, t->recorder.complete_from_ns)) {
        /* a flight recorder's trace: before this only what was live at the cut is kept, so the
         * counters there are not the run's (its peak is, from the interval summaries) */
        char what[400], b[GT_FMT_LEN];
        size_t o = (size_t)snprintf(what, sizeof what, "flight recorder: complete from here");
        for (size_t k = 0; k < t->recorder.npeaks && o < sizeof what; k++) {
            char dev[32] = "";
            if (t->recorder.peaks[k].device >= 0)
                snprintf(dev, sizeof dev, " on GPU %lld", (long long)t->recorder.peaks[k].device);
            o += (size_t)snprintf(what + o, sizeof what - o, "%s %s memory%s: %s", k ? "," : "; the whole run's peak:",
                                  gt_memory_name(t->recorder.peaks[k].memory), dev,
                                  gt_fmt_bytes(t->recorder.peaks[k].peak, b));
        }
        ex_begin(x, "i", 0, t->recorder.complete_from_ns);
        ex_kstr(x, "name", what);
        fputs(",\"s\":\"p\",\"cat\":\"flight_recorder\"}", x->f);
    }
    code = export_threads(x);
    if (!code)
        code = export_iterations(x);
    if (!code)
        code = export_ranges(x);
    if (!code)
        code = export_events(x);
    if (!code)
        code = export_samples(x);
    if (!code && !x->o->no_kernels)
        code = export_gpu(x);
    for (size_t k = 0; k < x->ntracks; k++)
        free(x->tracks[k].ends);
    free(x->tracks);
    free(x->streams);
    x->tracks = NULL;
    x->streams = NULL;
    x->ntracks = x->nstreams = x->nlanes = 0;
    return code;
}

/* gputrace export --help (the command table is in commands.c) */
const char gt_help_export[] =
    "usage: gputrace export [--format chrome] [-o FILE] [LIMITS] [OPTIONS] TRACE.db...\n"
    "\n"
    "Writes the traces as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev)\n"
    "and chrome://tracing open: one process per trace file (ranks side by side,\n"
    "aligned on their wall-clock start); counter tracks of live bytes per memory\n"
    "level and device (device, pool, managed, host) and of NVML used bytes;\n"
    "iterations and NVTX/marker ranges as slices; kernels, copies and memsets on\n"
    "one track per GPU stream; allocations, frees and failed allocations as\n"
    "instant events on the calling thread, with size and innermost frame.\n"
    "\n"
    "  -o FILE            write FILE (default: stdout, -o - too). FILE appears\n"
    "                     only when complete; on stdout a trace that fails\n"
    "                     part-way ends the JSON there, closed, and named in\n"
    "                     otherData.incomplete, with a non-zero exit status.\n"
    "                     When stdout is a terminal, the default is\n"
    "                     TRACE.json beside the first TRACE.db, replaced only if\n"
    "                     gputrace export wrote it (anything else is refused)\n"
    "  --from T, --to T   only this time window, T since the trace started (the\n"
    "                     process's first traced CUDA call, as in every report):\n"
    "                     1.5 or 1.5s, 200ms, 40us, 1000ns\n"
    "  --iterations A:B   only iterations A to B (indices as gputrace growth shows)\n"
    "  --no-kernels       leave out kernels, copies and memsets\n"
    "  --no-allocs        leave out the instant events (counters stay)\n"
    "  --iteration NAME   the NVTX or marker range that is one iteration (default:\n"
    "                     found as by the reports, gputrace --help)\n"
    "Counters keep their value at the window's start. A 1 M-event trace gives\n"
    "about 320 MiB of JSON (tests/bench/RESULTS.md): limit big traces (above\n"
    "512 MiB a line on stderr says so).\n"
    "A trace that cannot be exported (empty, no such iterations, --memory selects\n"
    "nothing in it) is left out, with a line on stderr, and named in\n"
    "otherData.skipped; the others are written, and the exit status is its\n"
    "error's. Exit status as for the reports; 10: the output could not be\n"
    "written.\n";

/* Output above this is said to be large (a 1 M-event trace gives ~320 MiB) */
#define BIG_EXPORT ((off_t)512 << 20)

int gt_cmd_export(const struct gt_command *cmd, struct gt_args *o)
{
    int code = GT_EXIT_OK, committed = 0;
    if (o->from >= 0 && o->to >= 0 && o->to < o->from)
        return gt_usage_error(cmd, "--to must not be before --from%s", "");
    /* Validate every file first, so that a bad one fails before any output
     * and so that all processes share one time origin (earliest start). */
    int64_t origin = INT64_MAX, *starts = gt_xcalloc((size_t)o->nfiles, sizeof *starts);
    int64_t *pids = gt_xcalloc((size_t)o->nfiles, sizeof *pids);
    for (int i = 0; i < o->nfiles && !code; i++) {
        struct gt_trace t;
        memset(&t, 0, sizeof t);
        code = gt_trace_open(&t, o->files[i]);
        if (code) {
            gt_viz_fail(o->files[i], &t, code);
        } else {
            starts[i] = t.proc.start_unix_ns;
            origin = starts[i] < origin ? starts[i] : origin;
            /* one process per file, even if pids repeat across hosts */
            pids[i] = t.proc.pid;
            int taken = pids[i] <= 0;
            int64_t highest = 0;
            for (int k = 0; k < i; k++) {
                taken |= pids[k] == pids[i];
                highest = pids[k] > highest ? pids[k] : highest;
            }
            if (taken)
                pids[i] = highest + 1;
        }
        gt_trace_close(&t);
    }
    struct gt_outfile of = {0};
    const char *out = o->out;
    if (!code && !out)
        code = gt_outfile_default(&of, o->files[0], ".json", EXPORT_HEAD, "\"traceEvents\"", &out);
    if (!code)
        code = gt_outfile_open(&of, out);
    if (!code) {
        struct exporter x;
        memset(&x, 0, sizeof x);
        x.f = of.f;
        x.o = o;
        fputs(EXPORT_HEAD, x.f);
        /* A trace that fails before any of it is written (empty, no such
         * iterations, --memory selects nothing) is left out and the others
         * go on: one empty rank must not sink a job's export. One that fails
         * part-way ends the export; either way the JSON is closed, so that it
         * parses, and otherData says what is missing (the exit status too). */
        int failed = GT_EXIT_OK, exported = 0;
        struct missing skipped = {0}, incomplete = {0};
        for (int i = 0; i < o->nfiles; i++) {
            struct gt_ctx c;
            size_t before = x.nout;
            code = gt_ctx_open(&c, o->files[i], &o->base);
            if (!code) {
                x.c = &c;
                x.pid = pids[i];
                x.off_ns = ex_sat_sub(starts[i], origin);
                double t0 = gt_now();
                code = export_one(&x, i);
                gt_phase("export", t0);
            }
            if (code) {
                gt_viz_fail(o->files[i], &c.t, code);
                failed = failed ? failed : code;
                int partial = x.nout != before;
                ex_add_missing(partial ? &incomplete : &skipped, o->files[i], &c.t, code);
                gt_ctx_close(&c);
                if (partial || code == GT_EXIT_OUTPUT || code == GT_EXIT_NOMEM) {
                    /* the files after it are named too: a list that stops at the failure read as complete */
                    struct gt_trace unread;
                    memset(&unread, 0, sizeof unread);
                    snprintf(unread.err, sizeof unread.err, "not read: the export stopped at the failure of %s",
                             o->files[i]);
                    for (int k = i + 1; k < o->nfiles; k++)
                        ex_add_missing(&incomplete, o->files[k], &unread, code);
                    break;
                }
                continue;
            }
            exported++;
            gt_ctx_close(&c);
        }
        fprintf(x.f, "\n],\"otherData\":{\"generator\":\"gputrace %s\",\"time_origin_unix_ns\":%lld", GPUTRACE_VERSION,
                (long long)origin);
        ex_put_missing(x.f, "skipped", &skipped);
        ex_put_missing(x.f, "incomplete", &incomplete);
        fputs("}}\n", x.f);
        if (exported && !incomplete.n) {
            off_t bytes = ftello(x.f);   /* (-1 on a pipe: nothing said) */
            code = gt_outfile_commit(&of);
            committed = !code;
            if (!code && bytes > BIG_EXPORT) {
                char b[GT_FMT_LEN];
                fprintf(stderr, "gputrace export: %s of JSON: a trace viewer in a browser may open a file this large "
                                "slowly or not at all; --iterations A:B, --from/--to, --no-allocs or --no-kernels "
                                "make it smaller\n", gt_fmt_bytes((int64_t)bytes, b));
            }
        } else if (of.tmp) {   /* a file appears only when whole */
            gt_outfile_abort(&of);
            code = GT_EXIT_OK;
        } else {   /* stdout: what is there, closed */
            code = gt_outfile_commit(&of);
        }
        code = failed && code != GT_EXIT_OUTPUT ? failed : code;
    }
    /* a default file written beside traces left out is still said: it exists */
    gt_outfile_say_chosen(&of, committed ? GT_EXIT_OK : code);
    free(starts);
    free(pids);
    return code;
}
