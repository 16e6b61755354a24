/* oom.c - `gputrace oom`: the context of every failed allocation: what was
 * asked for, what was live (allocated by the program, and at device level),
 * the device's capacity, who held the memory, and how much smaller the batch
 * would have had to be according to the peak-vs-batch-size fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* gputrace oom --help (the command table is in commands.c) */
const char gt_help_oom[] =
    "usage: gputrace oom [--json] [OPTIONS] TRACE.db...\n"
    "\n"
    "Each failed allocation (an out-of-memory error): the bytes requested, the\n"
    "bytes live at that moment (the chosen level, and device and pool levels),\n"
    "the device total, by how much request + live exceeded it, the largest live\n"
    "allocations by call site, and, when iterations carry batch sizes, how much\n"
    "smaller the batch would have had to be: batch size at the failure minus the\n"
    "largest batch the peak fit predicts to fit (see gputrace peak --help).\n";

#define MAX_DETAILED 32   /* failures with call sites; later ones get totals */

struct failure {
    size_t ev;
    int device;
    int64_t live_sel, live_device, live_pool;   /* live bytes on the failing device */
    long iteration;
};

/* One sweep: live bytes per (memory kind, device) at each failed allocation. */
static size_t collect(struct gt_ctx *c, struct failure **out)
{
    const struct gt_trace *t = &c->t;
    int64_t live[6][GT_HOST_SLOT + 1];   /* device -1 (host) at slot GT_HOST_SLOT */
    memset(live, 0, sizeof live);
    struct failure *f = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed && a->known && a->op == GT_OP_ALLOC) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                f = gt_xrealloc(f, cap * sizeof *f);
            }
            struct failure *x = &f[n++];
            memset(x, 0, sizeof *x);
            x->ev = i;
            x->device = c->o->device != GT_ANY_DEVICE ? c->o->device : e->device == GT_DEVICE_NULL ? GT_ANY_DEVICE : e->device;
            for (int d = 0; d <= GT_HOST_SLOT; d++) {
                int dev = d == GT_HOST_SLOT ? -1 : d;
                if (x->device != GT_ANY_DEVICE && x->device != dev)
                    continue;
                for (int m = 0; m < 6; m++)
                    if (c->sel.mem_mask & GT_MASK(m))
                        x->live_sel += live[m][d];
                x->live_device += live[GT_MEM_DEVICE][d];
                x->live_pool += live[GT_MEM_POOL][d];
            }
            continue;
        }
        int m, d;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &d);
        if (delta)
            live[m][d] += delta;
    }
    *out = f;
    return n;
}

int gt_report_oom(struct gt_ctx *c, struct gt_json *j)
{
    struct failure *f;
    size_t n = collect(c, &f);
    struct gt_peak pk;
    memset(&pk, 0, sizeof pk);
    pk.max_batch_size = -1;
    int code = GT_EXIT_OK;
    const struct gt_iterations *its = NULL;
    if (n) {
        code = gt_peak_compute(c, &pk);
        its = &c->iters;
    }
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_kstr(j, "memory", c->sel_name);
        gt_json_key(j, "failures");
        gt_json_arr(j);
    } else if (!code) {
        if (n == 0)
            printf("No failed allocations: the process never ran out of memory while traced.\n");
        else
            printf("Failed allocations: %zu\n", n);
    }
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN], b4[GT_FMT_LEN];
    for (size_t k = 0; k < n && !code; k++) {
        const struct gt_event *e = &c->t.ev[f[k].ev];
        struct gt_sel s = {c->sel.mem_mask, f[k].device};
        int64_t total = c->o->device_bytes >= 0 ? c->o->device_bytes : f[k].device == GT_ANY_DEVICE ? -1 : gt_trace_device_total(&c->t, f[k].device);
        int64_t bs = -1, reduction = -1, index = -1;
        int in_iteration = 0;
        for (size_t q = 0; its && q < its->n; q++)
            if (f[k].ev >= its->it[q].first_ev && f[k].ev < its->it[q].end_ev) {
                bs = its->it[q].batch_size;
                index = its->it[q].index;
                in_iteration = 1;
            }
        if (bs >= 0 && pk.max_batch_size >= 0)
            reduction = bs > pk.max_batch_size ? bs - pk.max_batch_size : 0;
        int64_t needed = total > 0 && e->size >= 0 ? e->size + f[k].live_device + f[k].live_pool - total : 0;
        struct gt_site_sum *sites = NULL;
        size_t ns = 0;
        if (k < MAX_DETAILED)
            ns = gt_live_sites_before(&c->t, &c->p, &s, f[k].ev, &sites, NULL, NULL);
        if (j) {
            gt_json_obj(j);
            gt_json_kint(j, "time_ns", e->t);
            gt_json_kint_or_null(j, "requested_bytes", e->size);
            gt_json_kint(j, "live_bytes", f[k].live_sel);
            gt_json_kint(j, "live_device_bytes", f[k].live_device);
            gt_json_kint(j, "live_pool_bytes", f[k].live_pool);
            gt_json_kint_or_null(j, "device_total_bytes", total);
            gt_json_key(j, "needed_bytes");
            if (total > 0 && e->size >= 0)
                gt_json_int(j, needed);
            else
                gt_json_null(j);
            gt_json_kstr(j, "api", c->t.api[e->api].name);
            gt_json_key(j, "device");
            if (f[k].device == GT_ANY_DEVICE)
                gt_json_null(j);
            else
                gt_json_int(j, f[k].device);
            gt_json_kint(j, "result", e->u.result);
            gt_json_key(j, "iteration");
            if (in_iteration)
                gt_json_int(j, index);
            else
                gt_json_null(j);
            gt_json_kint_or_null(j, "batch_size", bs);
            gt_json_kint_or_null(j, "max_batch_size", pk.max_batch_size);
            gt_json_kint_or_null(j, "batch_size_reduction", reduction);
            gt_json_key(j, "sites");
            code = gt_json_sites(c, j, sites, ns, ns);
            gt_json_obj_end(j);
        } else {
            char dev[32] = "";
            if (f[k].device != GT_ANY_DEVICE)
                snprintf(dev, sizeof dev, " on device %d", f[k].device);
            printf("  #%zu at %s: %s of %s failed (error %lld)%s\n", k + 1, gt_fmt_ns(e->t, b1), c->t.api[e->api].name,
                   e->size >= 0 ? gt_fmt_bytes(e->size, b2) : "? bytes", (long long)e->u.result, dev);
            printf("     live %s memory then: %s (device level %s, pool %s); device total: %s\n", c->sel_name,
                   gt_fmt_bytes(f[k].live_sel, b1), gt_fmt_bytes(f[k].live_device, b2), gt_fmt_bytes(f[k].live_pool, b3),
                   total > 0 ? gt_fmt_bytes(total, b4) : "unknown");
            if (total > 0 && e->size >= 0) {
                if (needed > 0)
                    printf("     request + live exceed the device by %s: that much had to go\n", gt_fmt_bytes(needed, b1));
                else
                    printf("     request + live fit in the device with %s to spare: the rest was held by the CUDA context, other processes or fragmentation\n",
                           gt_fmt_bytes(-needed, b1));
            }
            if (bs >= 0) {
                printf("     batch size %lld (iteration %lld)", (long long)bs, (long long)index);
                if (reduction > 0)
                    printf("; the fit predicts at most %lld fits: the batch had to be %lld smaller\n", (long long)pk.max_batch_size, (long long)reduction);
                else if (reduction == 0)
                    printf("; the fit predicts up to %lld fits: this failure is not explained by the batch size\n", (long long)pk.max_batch_size);
                else
                    printf("; no fit of peak vs batch size (needs iterations with 2 or more batch sizes)\n");
            }
            if (ns) {
                printf("     largest live allocations by call site:\n");
                code = gt_text_sites(c, sites, ns, (size_t)c->o->top, 6);
            }
        }
        free(sites);
    }
    if (j) {
        gt_json_arr_end(j);
        gt_json_kint_or_null(j, "max_batch_size", pk.max_batch_size);
        gt_json_obj_end(j);
    }
    gt_peak_free(&pk);
    free(f);
    return code;
}
