/* context.c - one trace file's analysis context: loading, pairing, choosing
 * the memory level a report speaks of, finding iterations once, and the call
 * site printing every report shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer.h"
#include "format.h"
#include "trace_rows.h"

double gt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gt_phase(const char *what, double since)
{
    static int on = -1;
    if (on < 0)
        on = getenv("GPUTRACE_TIMING") != NULL;
    if (on)
        fprintf(stderr, "gputrace: timing: %-12s %.3f s\n", what, gt_now() - since);
}

/* --memory and --device are filters: one that matches no allocation (failed
 * ones included, for oom) would make every report print zeros, "no leaks" or
 * "stable" about memory the trace never had. Says so, and what it has. */
static int check_selection(struct gt_ctx *c, const struct gt_opts *o)
{
    struct gt_sel s = {.mem_mask = o->memory_set ? o->mem_mask : GT_MASK_ALL, .device = o->device};
    for (size_t i = 0; i < c->t.nev; i++) {
        const struct gt_event *e = &c->t.ev[i];
        const struct gt_api_attr *a = gt_attr(&c->t, e);
        if (a->known && a->op == GT_OP_ALLOC && gt_sel_has(&c->t, &s, e))
            return GT_EXIT_OK;
    }
    char what[96] = "", on[32] = "", has[400] = "", b[GT_FMT_LEN];
    if (o->memory_set)
        snprintf(what, sizeof what, "%s ", c->sel_name);
    if (o->device != GT_ANY_DEVICE)
        snprintf(on, sizeof on, " on device %d", o->device);
    struct gt_level *lv;
    size_t n = gt_levels(&c->t, &c->p, &lv), len = 0;
    for (size_t k = 0; k < n && len + 1 < sizeof has; k++) {
        char dev[32] = "";
        if (lv[k].device >= 0)
            snprintf(dev, sizeof dev, " on device %d", lv[k].device);
        len += (size_t)snprintf(has + len, sizeof has - len, "%s%s memory%s (%s peak)", k ? ", " : "",
                                gt_memory_name(lv[k].memory), dev, gt_fmt_bytes(lv[k].peak, b));
    }
    free(lv);
    snprintf(c->t.err, sizeof c->t.err, "no %smemory%s; the trace has %s", what, on, n ? has : "no successful allocations");
    return GT_EXIT_NO_MATCH;
}

void gt_sel_name(unsigned mask, char *out, size_t cap)
{
    out[0] = 0;
    for (int m = 0; m < 6; m++)
        if (mask & GT_MASK(m)) {
            size_t l = strlen(out);
            snprintf(out + l, cap - l, "%s%s", l ? "+" : "", gt_memory_name(m));
        }
}

/* The memory kinds with a successful allocation on device (any: GT_ANY_DEVICE), in one pass. */
static unsigned levels_allocated(const struct gt_ctx *c, int device)
{
    unsigned mask = 0;
    for (size_t i = 0; i < c->t.nev; i++) {
        const struct gt_event *e = &c->t.ev[i];
        const struct gt_api_attr *a = gt_attr(&c->t, e);
        if (!e->failed && a->known && a->op == GT_OP_ALLOC && (device == GT_ANY_DEVICE || e->device == device))
            mask |= GT_MASK(a->memory);
    }
    return mask;
}

int gt_ctx_has_memory(const struct gt_ctx *c, int memory, int device)
{
    unsigned mask = device == c->o->device ? c->has_levels : levels_allocated(c, device);
    return (mask & GT_MASK(memory)) != 0;
}

int gt_ctx_open(struct gt_ctx *c, const char *path, const struct gt_opts *o)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->o = o;
    double t0 = gt_now();
    int code = gt_trace_open(&c->t, path);
    if (!code) {
        gt_phase("open", t0);
        t0 = gt_now();
        code = gt_trace_load_events(&c->t);
        gt_phase("load events", t0);
    }
    if (code)
        return code;
    /* a trace never closed (WAL mode: the shim closes in rollback mode), no
     * -wal beside it: copied without it while being written, the events
     * since SQLite's last checkpoint are not there, and nothing else would
     * say so (or another program's connection checkpointed it all on
     * closing: it cannot be told apart, hence "if") */
    if (c->t.wal_missing && !c->t.proc.end_reason)
        fprintf(stderr, "gputrace: %s: note: never closed, and no -wal file beside it: if it was copied without its "
                "-wal, the events written since SQLite's last checkpoint are not read; copy %s-wal with it\n",
                gt_shown(path), gt_shown(path));
    if (c->t.wal_cut && !c->t.proc.end_reason && !gt_trace_writer_pid(&c->t))
        fprintf(stderr, "gputrace: %s: note: never closed, and its -wal file ends in a partial frame (cut short by a "
                "copy, or its process was killed while writing it): what was committed after its last whole frame "
                "is not read; copy %s-wal whole with it\n", gt_shown(path), gt_shown(path));
    t0 = gt_now();
    gt_pair_events(&c->t, &c->p);
    gt_phase("pair", t0);
    c->sel.device = o->device;
    c->has_levels = levels_allocated(c, o->device);
    if (o->memory_set) {
        c->sel.mem_mask = o->mem_mask;
    } else {
        /* pool if the trace has pool allocations (on --device N, if given),
         * else device memory; a program that allocates neither (managed
         * memory only, pinned host buffers only) gets the level it has: on
         * an empty device level every answer read "stable, 0 B" beside a
         * managed leak (a helper's probe) */
        static const int order[] = {GT_MEM_POOL, GT_MEM_DEVICE, GT_MEM_MANAGED, GT_MEM_HOST};
        int level = GT_MEM_DEVICE;
        for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
            if (gt_ctx_has_memory(c, order[k], o->device)) {
                level = order[k];
                break;
            }
        c->sel.mem_mask = GT_MASK(level);
    }
    gt_sel_name(c->sel.mem_mask, c->sel_name, sizeof c->sel_name);
    if (o->memory_set || o->device != GT_ANY_DEVICE)
        return check_selection(c, o);
    return GT_EXIT_OK;
}

void gt_ctx_close(struct gt_ctx *c)
{
    gt_iterations_free(&c->iters);
    free(c->loop_of);
    c->loop_of = NULL;
    gt_pairs_free(&c->p);
    gt_trace_close(&c->t);
}

int gt_ctx_iterations(struct gt_ctx *c, const struct gt_iterations **out)
{
    if (!c->iters_loaded) {
        double t0 = gt_now();
        int code = gt_find_iterations(&c->t, &c->p, &c->sel, &c->o->iter, &c->iters);
        gt_phase("iterations", t0);
        if (code)
            return code;
        c->iters_loaded = 1;
    }
    *out = &c->iters;
    return GT_EXIT_OK;
}

int gt_ctx_event_loops(struct gt_ctx *c, const unsigned char **out)
{
    const struct gt_iterations *it;
    int code = gt_ctx_iterations(c, &it);
    *out = NULL;
    if (code || !it->nthreads)
        return code;
    if (!c->loop_of) {
        struct gt_trace *t = &c->t;
        struct gt_rows r;
        if ((code = gt_rows_open(t, &r, GT_ROWS_EVENTS)) || !r.st)
            return code;
        unsigned char *loop_of = gt_xcalloc(t->nev ? t->nev : 1, 1);
        for (size_t i = 0; i < t->nev; i++) {
            if ((code = gt_rows_next_event(&r, i, "run it on")))
                break;
            int64_t tid = gt_rows_int(&r, 1, 0);
            if (tid == it->tid)
                loop_of[i] = GT_OWN_LOOP;
            for (size_t k = 0; k < it->nthreads && !loop_of[i]; k++)
                if (it->threads[k].tid == tid)
                    loop_of[i] = (unsigned char)(k + 1);
        }
        gt_rows_close(&r);
        if (code) {
            free(loop_of);
            return code;
        }
        c->loop_of = loop_of;
    }
    *out = c->loop_of;
    return GT_EXIT_OK;
}

size_t gt_ctx_devices(struct gt_ctx *c, const struct gt_sel *s, int *out, size_t max)
{
    struct gt_level *lv;
    size_t n = gt_levels(&c->t, &c->p, &lv), ndev = 0;
    int64_t *peak = gt_xmalloc((max + 1) * sizeof *peak);
    for (size_t i = 0; i < n; i++) {
        if (!(s->mem_mask & GT_MASK(lv[i].memory)))
            continue;
        size_t k = 0;
        while (k < ndev && out[k] != lv[i].device)
            k++;
        if (k == ndev) {
            if (ndev == max)
                continue;
            out[ndev] = lv[i].device;
            peak[ndev++] = lv[i].peak;
        } else if (lv[i].peak > peak[k]) {
            peak[k] = lv[i].peak;
        }
    }
    free(lv);
    /* the busiest first (insertion sort: a handful) */
    for (size_t i = 1; i < ndev; i++)
        for (size_t k = i; k > 0 && peak[k] > peak[k - 1]; k--) {
            int64_t tp = peak[k];
            peak[k] = peak[k - 1];
            peak[k - 1] = tp;
            int td = out[k];
            out[k] = out[k - 1];
            out[k - 1] = td;
        }
    free(peak);
    return ndev;
}

int gt_ctx_primary_device(struct gt_ctx *c, const struct gt_sel *s, int *dev)
{
    int devs[64];
    size_t ndev = gt_ctx_devices(c, s, devs, 64);
    *dev = ndev ? devs[0] : GT_ANY_DEVICE;
    return ndev > 1;
}

int64_t gt_ctx_device_total(struct gt_ctx *c, const struct gt_sel *s)
{
    if (c->o->device_bytes >= 0)
        return c->o->device_bytes;
    int dev = s->device;
    if (dev == GT_ANY_DEVICE && gt_ctx_primary_device(c, s, &dev))
        return -1;   /* several devices: no single capacity */
    if (dev == GT_ANY_DEVICE) {
        if (c->t.ndevices == 1)
            return c->t.devices[0].total_bytes;
        return -1;
    }
    return gt_trace_device_total(&c->t, dev);
}

void gt_ctx_json_head(struct gt_ctx *c, struct gt_json *j)
{
    gt_json_kstr(j, "file", c->path);
    gt_json_kint_or_null(j, "rank", c->t.proc.rank);
    gt_json_kint_or_null(j, "pid", c->t.proc.pid);
    gt_json_key(j, "wal_missing");   /* never closed, no -wal beside it (the note on stderr) */
    gt_json_bool(j, c->t.wal_missing && !c->t.proc.end_reason);
    gt_json_key(j, "wal_cut_short");   /* never closed, its -wal ends in a partial frame (the note on stderr) */
    gt_json_bool(j, c->t.wal_cut && !c->t.proc.end_reason && !gt_trace_writer_pid(&c->t));
    gt_json_key(j, "record_gaps");   /* null: none (gt_ctx_print_gaps) */
    if (c->t.proc.events_dropped > 0 || c->p.reallocated_unfreed) {
        gt_json_obj(j);
        gt_json_kint(j, "dropped", c->t.proc.events_dropped > 0 ? c->t.proc.events_dropped : 0);
        gt_json_kint(j, "reallocated_while_live", (int64_t)c->p.reallocated_unfreed);
        gt_json_obj_end(j);
    } else {
        gt_json_null(j);
    }
    gt_recorder_json(&c->t, j);
}

/* Events the trace lost (dropped, counted by reason) and allocations at an
 * address still live (a free not seen) make live memory look larger than it
 * was: said where a report's figures rest on what stayed live (leaks, growth),
 * not only in summary (a helper's probe: 5 dropped frees read as a 320 MiB
 * leak and growth, with no word in either report). */
void gt_ctx_print_gaps(const struct gt_ctx *c)
{
    long long dropped = c->t.proc.events_dropped > 0 ? c->t.proc.events_dropped : 0;
    size_t again = c->p.reallocated_unfreed;
    if (!dropped && !again)
        return;
    char what[160] = "";
    if (dropped)
        snprintf(what, sizeof what, "%lld event%s dropped", dropped, gt_s(dropped));
    if (again) {
        size_t l = strlen(what);
        snprintf(what + l, sizeof what - l, "%s%zu allocation%s at an address still live (a free not seen)",
                 dropped ? ", " : "", again, gt_s((long long)again));
    }
    printf("Note: the record has gaps (%s): memory below may have been freed; gputrace summary says more.\n", what);
}

void gt_ctx_print_symbolize_hint(struct gt_ctx *c)
{
    if (!c->unlined_sites)
        return;
    /* symbolized already (some native frame has a file): the rest has no debug info, and saying
     * "run symbolize" again would send the user in a circle */
    static const char *const ran[] = {
        "SELECT 1 FROM frames WHERE ip != 0 AND file IS NOT NULL LIMIT 1",
        "SELECT 1 FROM notes WHERE component = 'symbolize' LIMIT 1",   /* it ran and found nothing */
    };
    int symbolized = 0;
    for (size_t q = 0; q < sizeof ran / sizeof *ran && !symbolized; q++) {
        sqlite3_stmt *st;
        if (gt_trace_prepare_optional(&c->t, ran[q], &st, "reading frames") || !st)
            continue;
        symbolized = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    if (!symbolized)
        printf("(call sites without source lines: gputrace symbolize %s adds file:line where the binaries have "
               "debug info (-g))\n", c->path);
}

/* Name prefixes of functions that belong to a memory allocator's own code
 * rather than to the code that wanted the memory. Prefixes of the demangled
 * name, not substrings: "c10::cuda::" also appears in argument lists of
 * functions that are not allocators (at::cuda::setWorkspaceForHandle). */
static const char *const allocator_prefixes[] = {
    "c10::cuda::CUDACachingAllocator::", /* PyTorch, both backends */
    "at::detail::empty_",                /* its tensor factories down to the allocator */
    "at::detail::_empty_",
    "at::native::empty_",
    "at::empty",
    "tensorflow::BFCAllocator::",        /* TensorFlow, XLA/JAX */
    "tsl::BFCAllocator::",
    "rmm::mr::",                         /* RAPIDS memory manager */
};

bool gt_frame_is_allocator(const char *frame)
{
    /* a function template's name starts with its return type
     * ("at::TensorBase at::detail::_empty_strided_generic<...>(...)"):
     * its short name starts with the function */
    char name[512];
    gt_short_function(frame, name, sizeof name);
    for (size_t q = 0; q < sizeof allocator_prefixes / sizeof allocator_prefixes[0]; q++)
        if (!strncmp(frame, allocator_prefixes[q], strlen(allocator_prefixes[q])) ||
            !strncmp(name, allocator_prefixes[q], strlen(allocator_prefixes[q])))
            return true;
    return false;
}

static int leading_allocator_frames(char **f, int n)
{
    int skip = 0;
    while (skip + 1 < n && gt_frame_is_allocator(f[skip]))
        skip++;
    return skip;
}

int gt_json_frames(struct gt_ctx *c, struct gt_json *j, int32_t site, const char *text)
{
    char **f;
    int n;
    int code = gt_trace_frames(&c->t, site, &f, &n);
    if (code)
        return code;
    gt_json_key(j, "frames");
    gt_json_arr_inline(j);
    for (int k = 0; k < n; k++)
        gt_json_str(j, f[k]);
    gt_json_arr_end(j);
    gt_json_kint(j, "allocator_frames", leading_allocator_frames(f, n));
    const struct gt_frame *fi;
    if ((code = gt_trace_frame_info(&c->t, site, &fi, &n)))
        return code;
    int python = 0;
    for (int k = 0; k < n; k++)
        python += fi[k].python;
    gt_json_kint(j, "python_frames", python);
    gt_json_key(j, "frame_kinds");
    gt_json_arr_inline(j);
    for (int k = 0; k < n; k++)
        gt_json_str(j, fi[k].python ? "python" : "native");
    gt_json_arr_end(j);
    if (text)
        gt_json_kstr(j, "call_site", text);
    return GT_EXIT_OK;
}

/* The texts of the first n sites of s (gt_site_texts). */
static int sum_texts(struct gt_ctx *c, const struct gt_site_sum *s, size_t n, char ***texts)
{
    int32_t *ids = gt_xmalloc((n + 1) * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = s[i].site;
    int code = gt_site_texts(c, ids, n, texts);
    free(ids);
    return code;
}

int gt_json_sites(struct gt_ctx *c, struct gt_json *j, const struct gt_site_sum *s, size_t n, size_t limit)
{
    /* the page lists --top sites, as the text reports do (all 2,000 of a
     * trace's were drawn, --top ignored; a helper's probe) */
    if (c->page && limit > (size_t)c->o->top)
        limit = (size_t)c->o->top;
    size_t m = n < limit ? n : limit;
    char **texts;
    int code = sum_texts(c, s, m, &texts);
    gt_json_arr(j);
    for (size_t i = 0; i < m && !code; i++) {
        gt_json_obj(j);
        gt_json_kint(j, "bytes", s[i].bytes);
        gt_json_kint(j, "count", s[i].count);
        gt_json_kstr(j, "memory", gt_memory_name(s[i].memory));
        gt_json_kint_or_null(j, "stack_id", gt_trace_stack_id(&c->t, s[i].site));
        code = gt_json_frames(c, j, s[i].site, texts[i]);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_site_texts_free(texts, m);
    return code;
}

int gt_text_sites(struct gt_ctx *c, const struct gt_site_sum *s, size_t n, size_t limit, int indent)
{
    size_t m = n < limit ? n : limit;
    char **texts;
    int code = sum_texts(c, s, m, &texts);
    if (code)
        return code;
    struct gt_table tb;
    gt_table_init(&tb, 4, 0x3);
    gt_table_row(&tb, "bytes", "count", "memory", "call site (innermost first)");
    char b[GT_FMT_LEN], cnt[32];
    for (size_t i = 0; i < m; i++) {
        snprintf(cnt, sizeof cnt, "%lld", (long long)s[i].count);
        gt_table_row(&tb, gt_fmt_bytes(s[i].bytes, b), cnt, gt_memory_name(s[i].memory), texts[i]);
    }
    gt_table_print(&tb, stdout, indent);
    gt_site_texts_free(texts, m);
    if (n > limit)
        printf("%*s... %zu more call site%s (--top N shows more)\n", indent, "", n - limit, gt_s((long long)(n - limit)));
    return GT_EXIT_OK;
}
