/* oom.h - what gputrace oom's files share: one out-of-memory request (the
 * failed attempts grouped, oom.c) and the ledger at its failure (oom_ledger.c). */
#ifndef GT_OOM_H
#define GT_OOM_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer.h"
#include "json.h"

struct request {
    size_t first, last;      /* event indices of its first and last failed attempt */
    int attempts;
    int64_t requested;       /* bytes asked for; -1 unknown */
    int lower_bound;         /* requested is a lower bound: a rolled-back growth of chunks, or clamped */
    int clamped;             /* the size asked for was past INT64_MAX, which the trace stores it as */
    int64_t chunk;           /* that growth's chunk size */
    int chunks;              /* chunks mapped before the failed one */
    int recovered;           /* the program went on: allocated again, or made another request */
    int device;
    int64_t live_sel, live_device, live_pool;   /* at the last attempt, on its device */
    unsigned live_mask;      /* the levels live_sel sums */
};

#define MAX_BUCKETS 24

/* The ledger at one failure: who held the device, what was free, how much
 * the request was short by, and how many of the largest live call sites
 * would have covered that. */
struct at_failure {
    struct gt_bucket b[MAX_BUCKETS];
    int nb;                  /* 0: device unknown, no ledger */
    int64_t outside;         /* held outside the trace (NVML); -1 not measured */
    int64_t free;            /* -1 unknown (no total) */
    int64_t outside_t;       /* when NVML's sample for outside was taken (the trace's time); -1 none */
    int64_t outside_dt;      /* and from the failure (< 0: before) */
    int64_t short_by;        /* >= 0; -1 unknown (or, without NVML, no shortfall the trace shows) */
    int short_by_lower_bound;   /* without NVML: what is not measured could only add to it */
    long sites_to_free;      /* -1: none named */
    int no_stacks;           /* the trace was made with stack depth 0: no call site to name */
    int64_t pool_unused;     /* a request outside the pool, short by less than the pool's reservation beyond
                              * its bytes in use: that much; -1 otherwise */
    int64_t pool_split;      /* the pool's own request, failed with at least as much unused in the pool (its
                              * free memory in pieces, none large enough): that unused; -1 otherwise */
    int64_t pool_trim;       /* the pool's own request, failed with less unused than the request but at least
                              * the shortfall (trimming the pool gives the device that back): that unused; -1 */
    const char *call;        /* the failed call's name */
};

/* Nothing known yet (a request past the detailed ones stays so). */
void gt_oom_failure_unknown(struct at_failure *f);
/* The ledger on q's device at its last attempt: buckets, what NVML shows held
 * outside the trace, free, short by, the pool's part; s: the call sites live
 * then, largest first (NULL, 0: none named). 0, or an exit code. */
int gt_oom_ledger_at(struct gt_ctx *c, const struct request *q, int64_t total, const struct gt_site_sum *s, size_t ns,
                     struct at_failure *f);
void gt_oom_json_ledger(struct gt_json *j, const struct at_failure *f);
/* reduction: the batch-size reduction oom prints (> 0: it says what fits). */
void gt_oom_text_ledger(const struct at_failure *f, int64_t reduction, int64_t requested, const struct gt_site_sum *s);
/* A failed call's result by name ("out of memory", "invalid value", ...). */
const char *gt_result_name(int64_t r);
/* The frees CUDA refused (oom_frees.c): JSON "failed_frees", or text. */
int gt_oom_failed_frees(struct gt_ctx *c, struct gt_json *j);

#endif
