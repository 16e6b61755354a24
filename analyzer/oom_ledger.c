/* oom_ledger.c - the memory ledger at one out-of-memory failure, for
 * gputrace oom (and the sweep's reading of a run's last failure): who held
 * the device by the ledger's buckets, what NVML showed held outside the
 * trace, what was free, how much the request was short by, how many of the
 * largest live call sites would have covered that, and what a stream-ordered
 * pool's unused reserve had to do with it. */
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "ledger.h"
#include "oom.h"

#define POOL_PAGE (2 << 20)

void gt_oom_failure_unknown(struct at_failure *f)
{
    memset(f, 0, sizeof *f);
    f->outside = f->free = f->short_by = f->sites_to_free = f->pool_unused = f->pool_split = f->pool_trim = -1;
}

/* The pool's own request (cudaMallocAsync, cuMemAllocAsync: the device's
 * current pool, the one the shim reads; not a FromPool call's) failed while
 * the pool held at least as much unused, as a lower bound: its reservation,
 * less its bytes in use, less 2 MiB for each live allocation (the driver maps
 * the pool in 2 MiB pages: what its rounding could have taken), less the
 * request rounded up to those pages (the failed call may have grown the pool
 * before it failed, and a reading stamped while it ran holds that: on an H200
 * the reading at exit was 8.4 GB above the last before an 8.99 GB request
 * that failed). The reservation: for a pool that keeps what is freed in it
 * (gt_ledger_pool_keeps), the last reading before the failure or, when the
 * program allocated nothing more, the first after it, the larger. On that
 * H200 under cudaMallocAsync 16 of 17 failures near a conv net's limit were
 * this: 8.34 GiB asked for with 30.7 GiB unused, the device 0.86 GiB short
 * (tests/gpu/RESULTS.md, session 32). That bound (any size: the caller
 * compares it with the request and the shortfall), or -1. */
static int64_t pool_split(struct gt_ctx *c, const struct request *q)
{
    struct gt_trace *t = &c->t;
    int64_t at = t->ev[q->last].t;
    const char *call = gt_attr(t, &t->ev[q->last])->name;
    if (q->requested <= 0 || (strncmp(call, "cudaMallocAsync", 15) && strncmp(call, "cuMemAllocAsync", 15)) ||
        !gt_ledger_pool_keeps(t, q->device, at))
        return -1;
    int64_t reserved = gt_ledger_pool_reserved(t, q->device, at);
    int64_t after = q->recovered ? -1 : gt_ledger_pool_reserved_after(t, q->device, at);
    if (after > reserved)
        reserved = after;
    if (reserved < 0)
        return -1;
    int64_t live = q->live_pool, count = 0;   /* (collect's bytes; the allocations' count here) */
    for (size_t i = 0; i < q->last; i++) {
        int m, slot;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &slot);
        if (delta && m == GT_MEM_POOL && slot == q->device)
            count += delta > 0 ? 1 : -1;
    }
    if (live < 0 || live > ((int64_t)1 << 62) || count < 0 || q->requested > ((int64_t)1 << 52))   /* fuzzed */
        return -1;
    int64_t own = (q->requested + POOL_PAGE - 1) / POOL_PAGE * POOL_PAGE;
    int64_t unused = reserved - live - count * POOL_PAGE - own;   /* no term past 2^62: no overflow */
    return unused > 0 ? unused : -1;
}

int gt_oom_ledger_at(struct gt_ctx *c, const struct request *q, int64_t total, const struct gt_site_sum *s, size_t ns,
                     struct at_failure *f)
{
    gt_oom_failure_unknown(f);
    if (q->device == GT_ANY_DEVICE || q->device < 0 || q->device >= GT_HOST_SLOT)
        return GT_EXIT_OK;
    int n = gt_ledger_buckets(c, q->device, c->t.ev[q->last].t, f->b, MAX_BUCKETS);
    if (n < 0)
        return -n;
    f->nb = n;
    struct gt_untraced u;
    int64_t at = c->t.ev[q->last].t;
    int code = gt_ledger_untraced_near(c, q->device, at, &u);
    if (code)
        return code;
    f->outside = u.bytes;
    f->outside_dt = u.bytes >= 0 ? u.t - at : 0;
    f->outside_t = u.bytes >= 0 ? u.t : -1;
    int64_t held = 0;
    for (int k = 0; k < n; k++)
        held += f->b[k].bytes;
    if (q->lower_bound)
        held -= q->chunk * q->chunks;   /* the growth's own chunks are in the request */
    if (total <= 0)
        return GT_EXIT_OK;
    f->free = total - held - (u.bytes > 0 ? u.bytes : 0);
    if (f->free < 0)
        f->free = 0;
    if (q->requested < 0)
        return GT_EXIT_OK;
    f->short_by = q->requested > f->free ? q->requested - f->free : 0;   /* never a negative need */
    if (f->outside < 0) {
        /* without NVML the context, the driver and other jobs are not measured: free is an upper
         * bound, a shortfall from it a lower bound, and "it fitted" is not known */
        if (!f->short_by)
            f->short_by = -1;
        f->short_by_lower_bound = f->short_by > 0;
    }
    /* A stream-ordered pool that keeps what its frees return (PyTorch's
     * backend:cudaMallocAsync sets its release threshold to UINT64_MAX; CUDA's
     * default, 0, releases at each synchronization) gives none of it to an
     * allocation made outside it (a library's handle or workspace: on
     * an H200 a plain run of a conv net under cudaMallocAsync failed in
     * cublasCreate, CUBLAS_STATUS_ALLOC_FAILED, tests/gpu/RESULTS.md session 29). */
    const struct gt_api_attr *a = gt_attr(&c->t, &c->t.ev[q->last]);
    f->call = a->name;
    for (int k = 0; k < n && f->short_by > 0 && a->memory == GT_MEM_DEVICE; k++)
        if (f->b[k].in_use >= 0 && f->b[k].bytes - f->b[k].in_use >= f->short_by)
            f->pool_unused = f->b[k].bytes - f->b[k].in_use;
    if (f->short_by > 0 && a->memory == GT_MEM_POOL) {
        int64_t unused = pool_split(c, q);
        if (unused >= q->requested)
            f->pool_split = unused;
        else if (unused >= f->short_by)
            f->pool_trim = unused;   /* less than the request, but what the device was short of */
    }
    int64_t sum = 0;
    /* a trace without stacks has one "site", all that was live: no advice */
    f->no_stacks = c->t.proc.stack_depth == 0;
    for (size_t k = 0; f->short_by > 0 && !f->no_stacks && k < ns; k++)
        if ((sum += s[k].bytes) >= f->short_by) {
            f->sites_to_free = (long)k + 1;
            break;
        }
    return GT_EXIT_OK;
}

void gt_oom_json_ledger(struct gt_json *j, const struct at_failure *f)
{
    gt_json_key(j, "ledger");
    gt_json_arr(j);
    for (int k = 0; k < f->nb; k++) {
        gt_json_obj(j);
        gt_json_kstr(j, "name", f->b[k].name);
        gt_json_kstr(j, "kind", f->b[k].kind);
        gt_json_kint(j, "bytes", f->b[k].bytes);
        if (f->b[k].in_use >= 0)
            gt_json_kint(j, "in_use_bytes", f->b[k].in_use);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_kint_or_null(j, "held_outside_trace_bytes", f->outside);
    gt_json_kint_or_null(j, "free_bytes", f->free);
    gt_json_key(j, "free_is_upper_bound");
    gt_json_bool(j, f->free >= 0 && f->outside < 0);
    gt_json_kint_or_null(j, "short_by_bytes", f->short_by);
    gt_json_key(j, "short_by_is_lower_bound");
    gt_json_bool(j, f->short_by_lower_bound);
    /* the trace's time of NVML's sample (no negative figure in a report: an offset before the failure would be) */
    gt_json_kint_or_null(j, "outside_sampled_at_ns", f->outside >= 0 ? f->outside_t : -1);
    gt_json_kint_or_null(j, "pool_unused_bytes", f->pool_unused);
    gt_json_kint_or_null(j, "pool_split_bytes", f->pool_split);
    gt_json_kint_or_null(j, "pool_trim_bytes", f->pool_trim);
    gt_json_kint_or_null(j, "sites_to_free", f->sites_to_free);
}

void gt_oom_text_ledger(const struct at_failure *f, int64_t reduction, int64_t requested, const struct gt_site_sum *s)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
    if (!f->nb && f->free < 0)
        return;
    printf("     held then:");
    for (int k = 0; k < f->nb; k++)
        printf("%s %s %s", k ? "," : "", f->b[k].name, gt_fmt_bytes(f->b[k].bytes, b1));
    if (f->outside >= 0)
        printf("%s outside the trace %s\n     (NVML %s %s it: the CUDA context and driver, kernel modules, rounding "
               "of what was live, other processes)\n", f->nb ? ";" : "",
               gt_fmt_bytes(f->outside, b1), gt_fmt_ns(f->outside_dt < 0 ? -f->outside_dt : f->outside_dt, b2),
               f->outside_dt < 0 ? "before" : "after");
    else
        printf("%s outside the trace: not measured (no NVML samples)\n", f->nb ? ";" : "");
    if (f->free < 0)
        return;
    printf("     free then: %s%s; requested %s: ", f->outside < 0 ? "at most " : "", gt_fmt_bytes(f->free, b1),
           gt_fmt_bytes(requested, b2));
    if (f->short_by < 0) {
        printf("not known whether it fitted:\n"
               "     the CUDA context, the driver and other processes are not measured without NVML (trace where\n"
               "     libnvidia-ml.so.1 loads)\n");
        return;
    }
    if (f->short_by == 0) {
        printf("by the ledger it fitted: the failure came from fragmentation or memory the trace and NVML's samples\n"
               "     around it do not show (no shortfall to name)\n");
        return;
    }
    printf("short by %s%s\n", f->short_by_lower_bound ? "at least " : "", gt_fmt_bytes(f->short_by, b1));
    if (f->pool_split >= 0) {
        printf("     the pool held at least %s unused (its reservation less its bytes in use, their rounding and\n"
               "     what the failed call may have grown it by), at least the request, and did not serve it from\n"
               "     that: its unused memory was in pieces none large enough, or freed on a stream this one did not\n"
               "     wait for; so it asked the device for more. How a pool's memory splits is not in the trace and\n"
               "     can differ between runs of the same program (on an H200 a conv net's batch sizes near its limit\n"
               "     fit in about half their fresh runs). To fit, leave room: gputrace sweep finds a size that fit\n"
               "     repeatedly with room\n",
               gt_fmt_bytes(f->pool_split, b1));
        return;
    }
    if (f->pool_trim >= 0) {
        printf("     the pool held at least %s unused (its reservation less its bytes in use, their rounding and\n"
               "     what the failed call may have grown it by): less than the request, more than the shortfall.\n"
               "     To fit: trim the pool before it (torch.cuda.empty_cache(), cudaMemPoolTrimTo: the device gets\n"
               "     back the chunks no allocation holds), or leave room\n", gt_fmt_bytes(f->pool_trim, b1));
        return;
    }
    if (f->pool_unused >= 0) {
        printf("     the pool held up to %s more than its bytes in use (as last read), which would have covered\n"
               "     it: a pool that keeps what is freed in it (PyTorch's backend:cudaMallocAsync keeps it all) gives\n"
               "     none to an allocation outside it, as this %s was.\n"
               "     To fit: trim the pool before it (torch.cuda.empty_cache(), cudaMemPoolTrimTo: the pool gives the\n"
               "     device back the chunks no allocation holds), or leave room\n",
               gt_fmt_bytes(f->pool_unused, b1), f->call);
        return;
    }
    if (reduction > 0)
        return;   /* the batch-size line says what would have fit */
    if (f->no_stacks && f->short_by > 0) {
        printf("     to fit: %s of what was live had to go; which call sites held it needs stacks (gputrace run\n"
               "     --stack-depth 32)\n", gt_fmt_bytes(f->short_by, b1));
    } else if (f->sites_to_free > 0) {
        int64_t sum = 0;
        for (long k = 0; k < f->sites_to_free; k++)
            sum += s[k].bytes;
        printf("     to fit: the %ld largest call site%s live then (below) held %s, enough to cover it\n", f->sites_to_free,
               f->sites_to_free == 1 ? "" : "s", gt_fmt_bytes(sum, b1));
    } else {
        int64_t beyond = -1;   /* a pool's reservation beyond its bytes in use, as last read */
        for (int k = 0; k < f->nb; k++)
            if (f->b[k].in_use >= 0 && f->b[k].bytes - f->b[k].in_use > beyond)
                beyond = f->b[k].bytes - f->b[k].in_use;
        if (beyond >= f->short_by)
            printf("     to fit: freeing live memory would not have done; the pool held up to %s beyond its bytes in\n"
                   "     use (as last read): trimming it before (torch.cuda.empty_cache(), cudaMemPoolTrimTo) gives the\n"
                   "     device back the chunks no allocation holds\n", gt_fmt_bytes(beyond, b1));
        else
            printf("     to fit: more than all the traced memory live then would have had to go\n");
    }
}
