/* oom.c - `gputrace oom`: each time the program ran out of memory, and what
 * it would have taken to fit. Failed calls are first told apart by result:
 * only out-of-memory results are out-of-memory events (a cuMemCreate refused
 * with "not permitted" is a probe, listed apart). The attempts of one request
 * are grouped: a retry of the same size with nothing allocated in between
 * (PyTorch's allocator frees its cache and tries again), and a segment growth
 * rolled back (expandable segments map chunk after chunk; when one fails, the
 * chunks mapped for the request are released). A request after which the
 * program allocated nothing more is the one it ended on; the others it
 * recovered from (a library that tried a larger workspace first, a batch-size
 * finder). For each: what was asked for, what was live, the device's total,
 * who held the memory by the ledger's buckets, what was free and how much the
 * request was short by, and how much smaller the batch would have had to be
 * (from a sound fit only) or which call sites held enough to make it fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"
#include "ledger.h"
#include "oom.h"

/* gputrace oom --help (the command table is in commands.c) */
const char gt_help_oom[] =
    "usage: gputrace oom [--json] [OPTIONS] TRACE.db...\n"
    "\n"
    "Each time the program ran out of memory, the request it ended on first:\n"
    "failed calls are told apart by result (only out-of-memory results count;\n"
    "others, such as a refused cuMemCreate probe, are listed apart); the attempts\n"
    "of one request are grouped (a retry of the same size after the allocator\n"
    "freed its cache; a segment growth rolled back after a chunk failed, whose\n"
    "size is then a lower bound); a request the program went on after is marked\n"
    "recovered. For each: the bytes requested, the bytes live at that moment (the\n"
    "chosen level, and device and pool levels), the device total, by how much\n"
    "request + live exceeded it (or how much was held outside the trace), the\n"
    "largest live allocations by call site, and, when iterations carry batch\n"
    "sizes, how much smaller the batch would have had to be: batch size at the\n"
    "failure minus the largest batch the peak fit predicts to fit (see gputrace\n"
    "peak --help; only from a fit it gives a number for). With the memory ledger:\n"
    "who held the device then, what was held outside the trace (NVML), what was\n"
    "free, how much the request was short by (never negative), and when no batch\n"
    "reduction can be given, how many of the largest call sites held enough.\n"
    "Under a stream-ordered pool, when the failed request was made outside it\n"
    "and the pool held unused enough to cover the shortfall (pool_unused_bytes),\n"
    "or was the pool's own and the pool held unused more than the request\n"
    "(pool_split_bytes: its free memory in pieces none large enough), says so.\n";

#define MAX_DETAILED 32      /* requests with call sites; later ones get totals */
#define RESULT_OUT_OF_MEMORY 2   /* cudaErrorMemoryAllocation == CUDA_ERROR_OUT_OF_MEMORY */

/* Names of the results a failed allocation call returns (runtime and driver
 * share these numbers). */
const char *gt_result_name(int64_t r)
{
    switch (r) {
    case 1: return "invalid value";
    case 2: return "out of memory";
    case 3: return "not initialized";
    case 46: return "devices unavailable";
    case 100: return "no device";
    case 101: return "invalid device";
    case 201: return "invalid context";
    case 712: return "already registered";   /* cudaHostRegister of a page-locked range */
    case 713: return "not registered";
    case 800: return "not permitted";
    case 801: return "not supported";
    case 999: return "unknown error";
    default: return "error";
    }
}

static int is_memory(const struct gt_api_attr *a)
{
    return a->memory == GT_MEM_DEVICE || a->memory == GT_MEM_POOL || a->memory == GT_MEM_MANAGED ||
           a->memory == GT_MEM_HOST;
}

static int successful_alloc(const struct gt_trace *t, size_t i)
{
    const struct gt_event *e = &t->ev[i];
    const struct gt_api_attr *a = gt_attr(t, e);
    return !e->failed && a->known && a->op == GT_OP_ALLOC && is_memory(a);
}

/* Rolled-back growth ending in failed event f, a cuMemCreate (expandable
 * segments map a segment's growth chunk after chunk of physical memory): the
 * successful cuMemCreates of the same size just before it (other calls, such
 * as cuMemMap, may sit between), each freed after f before anything new is
 * allocated. Only cuMemCreate: a tensor of a pool or a cudaMalloc that fits,
 * a second of the same size that fails, and the first freed as the exception
 * unwinds are two requests, not one growth (on an H200 under cudaMallocAsync
 * a conv net's 8.38 GiB failure read as a 16.75 GiB growth, tests/gpu/
 * RESULTS.md session 33). One growth is one burst: each chunk made within
 * CHUNK_GAP_NS of the next (or of the failure); chunks made long before,
 * freed after it by a cleanup or an empty_cache() before a retry, are not the
 * request's. (The releases are not timed: hundreds of chunks of a large
 * request are released one by one after the failure.) Returns how many. */
#define CHUNK_GAP_NS 50000000   /* 50 ms */
static int rolled_back_chunks(const struct gt_ctx *c, size_t f)
{
    const struct gt_trace *t = &c->t;
    const struct gt_event *fe = &t->ev[f];
    if (strcmp(gt_attr(t, fe)->name, "cuMemCreate"))
        return 0;
    size_t next_alloc = t->nev;
    for (size_t i = f + 1; i < t->nev; i++)
        if (successful_alloc(t, i)) {
            next_alloc = i;
            break;
        }
    int n = 0;
    int64_t later = fe->t;   /* the next chunk's time, or the failure's */
    for (size_t i = f; i-- > 0;) {
        const struct gt_event *e = &t->ev[i];
        if (e->failed)
            break;
        if (!successful_alloc(t, i))
            continue;   /* a map, a free of something else */
        if (gt_api_base(e->api) != gt_api_base(fe->api) || e->size != fe->size || later - e->t > CHUNK_GAP_NS)
            break;
        uint32_t fr = c->p.partner[i];
        if (fr == GT_NO_EVENT || fr < f || fr > next_alloc)
            break;
        later = e->t;
        n++;
    }
    return n;
}

/* One sweep: group the out-of-memory failures into requests (with live bytes
 * per memory kind and device at each), and collect the other failed calls. */
static size_t collect(struct gt_ctx *c, struct request **out, size_t **others, size_t *nothers)
{
    const struct gt_trace *t = &c->t;
    int64_t live[GT_MEM_GRAPH + 1][GT_HOST_SLOT + 1];   /* every kind gt_slot_delta gives; host at GT_HOST_SLOT */
    memset(live, 0, sizeof live);
    struct request *r = NULL;
    size_t n = 0, cap = 0, ocap = 0;
    size_t last_success = 0;   /* index + 1 of the latest successful allocation */
    /* ...of device memory (device, pool, managed), by device: what shows the
     * program went on after a device's failure. A pin-memory thread's host
     * allocation after it does not (a helper's probe: a fatal OOM read
     * "recovered from", and sweep took the run for one that failed otherwise) */
    size_t last_device_success[GT_HOST_SLOT] = {0}, last_any_device_success = 0;
    *others = NULL;
    *nothers = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed && a->known && a->op == GT_OP_ALLOC && is_memory(a)) {
            if (e->u.result != RESULT_OUT_OF_MEMORY) {
                if (*nothers == ocap) {
                    ocap = ocap ? ocap * 2 : 8;
                    *others = gt_xrealloc(*others, ocap * sizeof **others);
                }
                (*others)[(*nothers)++] = i;
                continue;
            }
            if (c->o->device != GT_ANY_DEVICE && e->device != c->o->device)
                continue;   /* another device's failure: --device names the one to explain */
            struct request *x = n ? &r[n - 1] : NULL;
            /* a retry: the same call and size on the same device, nothing allocated since (two devices'
             * failures of one size are two requests) */
            int retry = x && last_success <= x->last && gt_api_base(t->ev[x->last].api) == gt_api_base(e->api) &&
                        t->ev[x->last].size == e->size && t->ev[x->last].device == e->device;
            if (!retry) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 16;
                    r = gt_xrealloc(r, cap * sizeof *r);
                }
                x = &r[n++];
                memset(x, 0, sizeof *x);
                x->first = i;
                x->requested = e->size;
                x->chunks = rolled_back_chunks(c, i);
                if (e->size == INT64_MAX) {   /* the shim stores a size_t past it as INT64_MAX */
                    x->clamped = x->lower_bound = 1;
                    x->chunks = 0;
                } else if (x->chunks && e->size > 0) {
                    x->chunk = e->size;
                    x->requested = e->size * (x->chunks + 1);
                    x->lower_bound = 1;
                }
            }
            x->last = i;
            x->attempts++;
            x->device = c->o->device != GT_ANY_DEVICE ? c->o->device : e->device == GT_DEVICE_NULL ? GT_ANY_DEVICE : e->device;
            x->live_sel = x->live_device = x->live_pool = 0;
            /* the level reports take, unless by default it is managed or pinned host memory (a trace with no
             * device memory that succeeded) and the request is for device or pool memory: then the request's
             * own (a review: "live host memory then: 0 B" beside 256 MiB pinned, for a failed cudaMalloc) */
            x->live_mask = c->sel.mem_mask;
            if (!c->o->memory_set && (a->memory == GT_MEM_DEVICE || a->memory == GT_MEM_POOL) &&
                !(c->sel.mem_mask & (GT_MASK(GT_MEM_DEVICE) | GT_MASK(GT_MEM_POOL))))
                x->live_mask = GT_MASK(a->memory);
            for (int d = 0; d <= GT_HOST_SLOT; d++) {
                int dev = d == GT_HOST_SLOT ? -1 : d;
                if (x->device != GT_ANY_DEVICE && x->device != dev)
                    continue;
                for (int m = 0; m <= GT_MEM_GRAPH; m++)
                    if (x->live_mask & GT_MASK(m))
                        x->live_sel += live[m][d];
                x->live_device += live[GT_MEM_DEVICE][d];
                x->live_pool += live[GT_MEM_POOL][d];
            }
            if (x->lower_bound) {
                /* the chunks of this growth are live now; the request counts them, so live does not */
                int64_t mine = x->chunk * x->chunks;
                x->live_device -= mine;
                if (x->live_mask & GT_MASK(GT_MEM_DEVICE))
                    x->live_sel -= mine;
            }
            continue;
        }
        if (successful_alloc(t, i)) {
            last_success = i + 1;
            int mem = a->memory;
            if (mem == GT_MEM_DEVICE || mem == GT_MEM_POOL || mem == GT_MEM_MANAGED) {
                last_any_device_success = i + 1;
                if (e->device >= 0 && e->device < GT_HOST_SLOT)
                    last_device_success[e->device] = i + 1;
            }
        }
        int m, d;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &d);
        if (delta && m >= 0 && m <= GT_MEM_GRAPH)
            live[m][d] += delta;
    }
    /* only the last request can have ended the program: the program went on past any earlier one */
    for (size_t k = 0; k < n; k++) {
        int dev = r[k].device;
        size_t went_on = dev == -1                      ? last_success   /* pinned host memory: any allocation */
                         : dev >= 0 && dev < GT_HOST_SLOT ? last_device_success[dev]
                                                          : last_any_device_success;
        r[k].recovered = k + 1 < n || went_on > r[k].last;
    }
    *out = r;
    return n;
}

size_t gt_oom_requests(struct gt_ctx *c, int *ended)
{
    struct request *r;
    size_t *others, nothers;
    size_t n = collect(c, &r, &others, &nothers);
    *ended = n && !r[n - 1].recovered;
    free(others);
    free(r);
    return n;
}

struct oom_ctx {
    struct gt_ctx *c;
    struct gt_peak pk;
    const struct gt_iterations *its;
};

int gt_oom_ended_program(struct gt_ctx *c, struct gt_oom_end *end)
{
    struct request *r;
    size_t *others, nothers;
    size_t n = collect(c, &r, &others, &nothers);
    int ended = n && !r[n - 1].recovered;
    if (ended && end) {
        const struct request *q = &r[n - 1];
        end->requested = q->requested;
        end->live_device = q->live_device;
        end->live_pool = q->live_pool;
        end->device = q->device;
        end->device_total = q->device == GT_ANY_DEVICE ? -1 : gt_trace_device_total(&c->t, q->device);
        end->call = gt_attr(&c->t, &c->t.ev[q->last])->name;
        end->memory = gt_attr(&c->t, &c->t.ev[q->last])->memory;
        end->event = q->last;
        /* the pool's part, judged as gputrace oom judges it (gt_oom_ledger_at) */
        struct at_failure f;
        int failed = gt_oom_ledger_at(c, q, end->device_total, NULL, 0, &f);
        end->pool_unused = failed ? -1 : f.pool_unused;
        end->pool_split = failed ? -1 : f.pool_split;
    }
    free(others);
    free(r);
    return ended;
}

/* More live than the device holds: the record missed frees (an address
 * allocated again while still live, dropped events); what had to go then
 * cannot be told from it (a helper's probe printed 120 GiB live on an
 * 80 GiB device, and 70 GiB "had to go"). */
static int live_exceeds(const struct request *q, int64_t total)
{
    int64_t live;
    return total > 0 && (__builtin_add_overflow(q->live_device, q->live_pool, &live) || live > total);
}

static void json_request(struct oom_ctx *o, struct gt_json *j, const struct request *q, int64_t total, int64_t needed,
                         int64_t bs, int64_t index, int in_it, int64_t reduction)
{
    struct gt_ctx *c = o->c;
    const struct gt_event *e = &c->t.ev[q->last];
    gt_json_kint(j, "time_ns", e->t);
    gt_json_kint(j, "first_time_ns", c->t.ev[q->first].t);
    gt_json_kint(j, "attempts", q->attempts);
    gt_json_kint_or_null(j, "requested_bytes", q->requested);
    gt_json_key(j, "requested_is_lower_bound");
    gt_json_bool(j, q->lower_bound);
    gt_json_kint_or_null(j, "failed_call_bytes", e->size);
    gt_json_kint(j, "chunks_rolled_back", q->chunks);
    gt_json_key(j, "ended_program");
    gt_json_bool(j, !q->recovered);
    gt_json_kint(j, "live_bytes", q->live_sel);
    gt_json_kint(j, "live_device_bytes", q->live_device);
    gt_json_kint(j, "live_pool_bytes", q->live_pool);
    gt_json_kint_or_null(j, "device_total_bytes", total);
    int over = live_exceeds(q, total);
    gt_json_key(j, "live_exceeds_device");
    gt_json_bool(j, over);
    gt_json_key(j, "needed_bytes");
    if (total > 0 && q->requested >= 0 && !over)
        gt_json_int(j, needed > 0 ? needed : 0);
    else
        gt_json_null(j);
    gt_json_key(j, "unaccounted_bytes");
    if (total > 0 && q->requested >= 0 && !over)
        gt_json_int(j, needed < 0 ? -needed : 0);
    else
        gt_json_null(j);
    gt_json_kstr(j, "api", c->t.api[e->api].name);
    gt_json_kstr(j, "memory_kind", gt_memory_name(gt_attr(&c->t, e)->memory));
    gt_json_key(j, "request_exceeds_device");
    gt_json_bool(j, total > 0 && q->requested > total);
    gt_json_key(j, "device");
    if (q->device == GT_ANY_DEVICE || q->device < 0)
        gt_json_null(j);
    else
        gt_json_int(j, q->device);
    gt_json_kint(j, "result", e->u.result);
    gt_json_key(j, "iteration");
    if (in_it)
        gt_json_int(j, index);
    else
        gt_json_null(j);
    gt_json_kint_or_null(j, "batch_size", bs);
    gt_json_kint_or_null(j, "max_batch_size", o->pk.max_batch_size);
    gt_json_kint_or_null(j, "batch_size_reduction", reduction);
    gt_json_kstr(j, "max_batch_size_withheld", o->pk.withheld_why);   /* peak's; null: given, or no fit */
}

static void text_request(struct oom_ctx *o, size_t k, const struct request *q, int64_t total, int64_t needed,
                         int64_t bs, int64_t index, int64_t reduction)
{
    struct gt_ctx *c = o->c;
    const struct gt_event *e = &c->t.ev[q->last];
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN], b4[GT_FMT_LEN];
    char dev[32] = "", att[48] = "";
    int kind = gt_attr(&c->t, e)->memory;
    if (kind == GT_MEM_HOST)
        snprintf(dev, sizeof dev, " (pinned host memory)");
    else if (q->device != GT_ANY_DEVICE && q->device >= 0)
        snprintf(dev, sizeof dev, " on device %d", q->device);
    if (q->attempts > 1)
        snprintf(att, sizeof att, ", %d attempts", q->attempts);
    printf("  #%zu at %s: %s %s%s%s failed: out of memory%s%s\n", k + 1, gt_fmt_ns(e->t, b1), c->t.api[e->api].name,
           q->requested < 0 ? "of ? bytes" : q->clamped ? "of at least" : q->lower_bound ? "growth of at least" : "of", q->requested >= 0 ? " " : "",
           q->requested >= 0 ? gt_fmt_bytes(q->requested, b2) : "", dev, att);
    if (q->clamped)
        printf("     the size asked for is 2^63 - 1 bytes or more, past what the trace stores (often a size the program computed"
               " below 0, such as n - 1 with n = 0, passed as size_t)\n");
    else if (q->lower_bound)
        printf("     a segment grew by %d chunk%s of %s, the next failed and all were released: the request was at "
               "least %d chunk%s (the trace holds no call with its exact size)\n",
               q->chunks, gt_s(q->chunks), gt_fmt_bytes(q->chunk, b1), q->chunks + 1, gt_s(q->chunks + 1));
    printf("     %s\n", q->recovered ? "recovered from: the program went on after it"
                                     : "the program allocated nothing after it: the failure it ended on");
    char level[64];
    gt_sel_name(q->live_mask, level, sizeof level);
    printf("     live %s memory then: %s (device level %s, pool %s); device total: %s\n", level,
           gt_fmt_bytes(q->live_sel, b1), gt_fmt_bytes(q->live_device, b2), gt_fmt_bytes(q->live_pool, b3),
           total > 0 ? gt_fmt_bytes(total, b4) : "unknown");
    if (kind == GT_MEM_HOST || kind == GT_MEM_MANAGED)
        printf("     %s memory is not bounded by a device's memory: the host's memory, its limits on locked\n"
               "     pages or the driver refused it\n", kind == GT_MEM_HOST ? "pinned host" : "managed");
    else if (total > 0 && q->requested > total)
        printf("     the request alone is %s more than the device total: no freeing makes it fit (a size computed\n"
               "     wrongly, or work that has to be split)\n", gt_fmt_bytes(q->requested - total, b1));
    else if (live_exceeds(q, total))
        printf("     more was live than the device holds: the record has gaps (frees not seen, or dropped events),\n"
               "     so what had to go cannot be told from it\n");
    else if (total > 0 && q->requested >= 0) {
        if (needed > 0)
            /* at least: what the device held beside the live bytes (the ledger's
             * "free then", below) had to be made up too */
            printf("     request + live exceed the device total by %s: at least that much had to go\n",
                   gt_fmt_bytes(needed, b1));
        else
            printf("     request + live stay %s under the device total: that much was held beside the live bytes "
                   "(%sthe CUDA context and driver, memory held for CUDA graphs, other processes) or lost to "
                   "fragmentation\n", gt_fmt_bytes(-needed, b1),
                   q->live_pool > 0 ? "a pool's reservation beyond its use, " : "");
    }
    if (bs >= 0) {
        printf("     batch size %lld (iteration %lld)", (long long)bs, (long long)index);
        if (reduction > 0)
            printf("; the fit predicts at most %lld fits: the batch had to be %lld smaller\n",
                   (long long)o->pk.max_batch_size, (long long)reduction);
        else if (reduction == 0)
            printf("; the fit predicts up to %lld fits: this failure is not explained by the batch size\n",
                   (long long)o->pk.max_batch_size);
        else if (o->pk.withheld_why)   /* peak's own reason, with what would give one */
            printf("; no largest batch size from the fit: %s%s%s\n", o->pk.withheld_why,
                   o->pk.what_to_do ? "; " : "", o->pk.what_to_do ? o->pk.what_to_do : "");
        else
            printf("; no fit of peak vs batch size (needs iterations with 2 or more batch sizes)\n");
    }
}

/* Order shown: the request the program ended on first, then the others in time order. */
static int ended_first(const struct request *r, size_t n, size_t k)
{
    size_t ended = n;
    for (size_t q = 0; q < n; q++)
        if (!r[q].recovered)
            ended = q;
    if (ended == n)
        return (int)k;
    return k == 0 ? (int)ended : (int)(k <= ended ? k - 1 : k);
}

int gt_report_oom(struct gt_ctx *c, struct gt_json *j)
{
    struct request *r;
    size_t *others, nothers;
    size_t n = collect(c, &r, &others, &nothers);
    struct oom_ctx o = {.c = c};
    o.pk.max_batch_size = -1;
    int code = GT_EXIT_OK;
    if (n) {
        code = gt_peak_compute(c, &o.pk);
        o.its = &c->iters;
    }
    size_t nrec = 0;
    for (size_t k = 0; k < n; k++)
        nrec += r[k].recovered;
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_kstr(j, "memory", c->sel_name);
        gt_json_key(j, "failures");
        gt_json_arr(j);
    } else if (!code) {
        if (n == 0 && c->t.recorder.on && c->t.recorder.failed_before > 0)
            printf("No %s in the window the trace keeps; %lld allocation call%s failed before it (the flight "
                   "recorder's interval summaries count them; their sizes and stacks are gone: trace without "
                   "GPUTRACE_WINDOW_S to keep them).\n", nothers ? "out-of-memory failures" : "failed allocations",
                   (long long)c->t.recorder.failed_before, gt_s(c->t.recorder.failed_before));
        else if (n == 0)
            printf("No %s: no CUDA allocation call failed%s while traced.\n(A framework may refuse before it "
                   "calls CUDA, as XLA does a buffer past the device and PyTorch\npast its memory fraction: its own "
                   "error then names the request.)\n", nothers ? "out-of-memory failures" : "failed allocations",
                   nothers ? " for want of memory" : "");
        else {
            printf("Out of memory: %zu request%s failed (%s%zu recovered from)\n", n, n == 1 ? "" : "s",
                   n > nrec ? "1 ended the program, " : "", nrec);
            gt_ctx_print_gaps(c);
        }
    }
    for (size_t k = 0; k < n && !code; k++) {
        const struct request *q = &r[ended_first(r, n, k)];
        struct gt_sel s = {.mem_mask = c->sel.mem_mask, .device = q->device};
        int kind = gt_attr(&c->t, &c->t.ev[q->last])->memory;
        int off_device = kind == GT_MEM_HOST || kind == GT_MEM_MANAGED;   /* not bounded by a device's memory */
        int64_t total = off_device ? -1
                        : c->o->device_bytes >= 0 ? c->o->device_bytes
                        : q->device == GT_ANY_DEVICE || q->device < 0 ? -1 : gt_trace_device_total(&c->t, q->device);
        int64_t bs = -1, reduction = -1, index = -1;
        int in_it = 0;
        for (size_t w = 0; o.its && w < o.its->n; w++)
            if (q->last >= o.its->it[w].first_ev && q->last < o.its->it[w].end_ev) {
                bs = o.its->it[w].batch_size;
                index = o.its->it[w].index;
                in_it = 1;
            }
        if (bs >= 0 && o.pk.max_batch_size >= 0)
            reduction = bs > o.pk.max_batch_size ? bs - o.pk.max_batch_size : 0;
        int64_t needed = 0;   /* a failed call may ask for anything: held at INT64_MAX rather than wrapping */
        if (total > 0 && q->requested >= 0 &&
            (__builtin_add_overflow(q->requested, q->live_device + q->live_pool, &needed) ||
             __builtin_sub_overflow(needed, total, &needed)))
            needed = INT64_MAX;
        struct gt_site_sum *sites = NULL;
        size_t ns = 0;
        struct at_failure f;
        gt_oom_failure_unknown(&f);
        if (k < MAX_DETAILED) {
            ns = gt_live_sites_before(&c->t, &c->p, &s, q->last, &sites, NULL, NULL);
            code = off_device || live_exceeds(q, total) ? GT_EXIT_OK : gt_oom_ledger_at(c, q, total, sites, ns, &f);
        }
        if (j && !code) {
            gt_json_obj(j);
            json_request(&o, j, q, total, needed, bs, index, in_it, reduction);
            gt_oom_json_ledger(j, &f);
            gt_json_key(j, "sites");
            code = gt_json_sites(c, j, sites, ns, ns);
            gt_json_obj_end(j);
        } else if (!code) {
            text_request(&o, k, q, total, needed, bs, index, reduction);
            gt_oom_text_ledger(&f, reduction, q->requested, sites);
            if (ns) {
                printf("     largest live allocations by call site:\n");
                code = gt_text_sites(c, sites, ns, (size_t)c->o->top, 6);
            }
        }
        free(sites);
    }
    if (j) {
        gt_json_arr_end(j);
        gt_json_key(j, "other_failures");
        gt_json_arr(j);
        for (size_t k = 0; k < nothers; k++) {
            const struct gt_event *e = &c->t.ev[others[k]];
            gt_json_obj(j);
            gt_json_kint(j, "time_ns", e->t);
            gt_json_kstr(j, "api", c->t.api[e->api].name);
            gt_json_kint_or_null(j, "requested_bytes", e->size);
            gt_json_kint(j, "result", e->u.result);
            gt_json_kstr(j, "result_name", gt_result_name(e->u.result));
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        if (!code)
            code = gt_oom_failed_frees(c, j);
        gt_json_kint_or_null(j, "max_batch_size", o.pk.max_batch_size);
        gt_json_obj_end(j);
    } else if (!code && nothers) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        printf("Other failed allocation calls (not out of memory): %zu\n", nothers);
        for (size_t k = 0; k < nothers && k < (size_t)c->o->top; k++) {
            const struct gt_event *e = &c->t.ev[others[k]];
            printf("  at %s: %s of %s: %s (result %lld)\n", gt_fmt_ns(e->t, b1), c->t.api[e->api].name,
                   e->size >= 0 ? gt_fmt_bytes(e->size, b2) : "? bytes", gt_result_name(e->u.result),
                   (long long)e->u.result);
        }
        if (nothers > (size_t)c->o->top)
            printf("  ... %zu more (--top)\n", nothers - (size_t)c->o->top);
    }
    if (!code && !j)
        code = gt_oom_failed_frees(c, NULL);
    gt_peak_free(&o.pk);
    free(others);
    free(r);
    return code;
}
