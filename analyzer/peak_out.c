/* peak_out.c - `gputrace peak`'s help, text and JSON: each iteration's
 * peak, the fit and the largest batch (or why none), the room and margin
 * behind it, the allocator's history, and what was live at the overall peak
 * (computed in peak.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* Text lists every iteration up to this many; of more, a summary. */
#define PEAK_ALL_UP_TO 12
#define GT_STR_(x) #x
#define GT_STR(x) GT_STR_(x)

/* gputrace peak --help (the command table is in commands.c) */
const char gt_help_peak[] =
    "usage: gputrace peak [--json] [--device-bytes B] [--all-iterations] [OPTIONS] TRACE.db...\n"
    "\n"
    "Peak live bytes within each iteration and when; the batch size of each\n"
    "iteration (\"batch_size=N\" or \"bs=N\" in the range message, or the marker\n"
    "API); per batch size the max and median peak; the least-squares fit\n"
    "peak = fixed + per_sample x batch_size over the max peaks, with R^2; the\n"
    "largest batch size predicted to fit: the largest n with fixed + per_sample x n\n"
    "+ margin <= available, where available is the device total less what NVML\n"
    "shows held outside the trace (CUDA context, kernel modules, other processes)\n"
    "and the traced memory beside the fitted level, and the margin is the\n"
    "allocators' rounding and, for a pool, its slack (reservation beyond use) read\n"
    "at each batch size and fitted as fixed + per_sample x n, plus a safety term.\n"
    "It is given only when the data supports it (3+ batch sizes, R^2 >= 0.9,\n"
    "peaks that follow the batch size rather than the allocator's history, NVML\n"
    "samples or --device-bytes B, no preallocation, a pool read at 3+ batch\n"
    "sizes); else one line says why and what would.\n"
    "For a caching allocator: the iterations that reached a new high, what each\n"
    "kept, the failed allocations. And what was live at the overall peak, by\n"
    "call site. Iterations cut short by a failed allocation are listed but not\n"
    "fitted. --device-bytes B: the device total to use. When the memory spans\n"
    "several devices, the one that runs out first is reported (--device N picks\n"
    "one).\n"
    "Without iterations the overall peak is still reported (exit 0).\n"
    "\n"
    "Text lists up to " GT_STR(PEAK_ALL_UP_TO) " iterations; of more, the first, the last, the one\n"
    "with the highest peak and those cut short by a failed allocation (JSON has\n"
    "every one).\n"
    "  --all-iterations   list every iteration\n";

static int fit_reliable(const struct gt_peak *pk)
{
    return pk->fit.ok && pk->fit.r2 >= GT_FIT_RELIABLE_R2 && !pk->history;
}

static long iteration_of(const struct gt_iterations *its, uint32_t ev)
{
    for (size_t k = 0; k < its->n && ev != GT_NO_EVENT; k++)
        if (ev >= its->it[k].first_ev && ev < its->it[k].end_ev)
            return (long)k;
    return -1;
}

/* How the room and the margin were measured, under the prediction. */
static void print_room(const struct gt_peak *pk)
{
    const struct gt_room *r = &pk->room;
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
    printf("    available = %s total (%s)", gt_fmt_bytes(r->total, b1), r->total_from);
    if (r->untraced.bytes >= 0) {
        printf(" - %s held outside the trace (NVML at exit: the CUDA context and driver, kernel modules", gt_fmt_bytes(r->untraced.bytes, b1));
        if (r->untraced.others >= 0)
            printf(", other processes' %s", gt_fmt_bytes(r->untraced.others, b2));
        if (r->untraced.no_ones >= 0)
            printf(", the driver's and firmware's own %s", gt_fmt_bytes(r->untraced.no_ones, b2));
        printf(")");
    } else {
        printf(" (no NVML samples: taken as what the traced memory may use)");
    }
    if (r->other_levels)
        printf(" - %s traced beside the fitted level (its peak)", gt_fmt_bytes(r->other_levels, b1));
    if (r->graph_memory)
        printf(" - %s held for CUDA graphs (the driver's, at its highest)", gt_fmt_bytes(r->graph_memory, b1));
    printf("\n    margin = ");
    const char *sep = "";
    if (pk->safety >= 0) {
        printf("%s the pool's slack at batch size %lld (the slack fit) + %s safety (the reservation's %s step"
               " carried through the fit to that batch size, + 2 deviations of the residuals beyond it, widened"
               " with the distance from the batch sizes read)",
               gt_fmt_bytes(r->pool_slack, b1), (long long)pk->max_batch_size, gt_fmt_bytes(pk->safety, b2),
               gt_fmt_bytes(pk->slack.granularity, b3));
        sep = " + ";
    }
    if (r->rounded) {
        printf("%srounding: up to %s for each of %lld device allocation%s live at the peak", sep,
               gt_fmt_bytes(r->granularity - 1, b1), (long long)r->rounded, gt_s((long long)r->rounded));
        sep = " + ";
    }
    if (r->rounding_per_sample > 0 && pk->max_batch_size > r->rounding_from_batch_size)
        printf("%s%s a sample past batch size %lld for the allocations each sample adds (the rounding bound at"
               " each batch size's peak, fitted)", sep, gt_fmt_bytes_d(r->rounding_per_sample, b3),
               (long long)r->rounding_from_batch_size);
    if (r->rounded_pool)
        printf("%srounding: up to %s for each of %lld pool allocation%s live at the peak (the pool's reservation was"
               " never read: its fragmentation is not in this margin)", sep, gt_fmt_bytes(r->pool_granularity - 1, b2),
               (long long)r->rounded_pool, gt_s((long long)r->rounded_pool));
    if (!*sep && !r->rounded_pool)
        printf("0");
    printf("\n    (rounding per allocation: the granularity its level's addresses show, at most 2 MiB, less a byte)\n");
}

/* A caching allocator's peaks: what the trace does know. */
/* The index of batch size bs in pk->bs (sorted), or pk->nbs */
static size_t bs_index(const struct gt_peak *pk, int64_t bs)
{
    size_t lo = 0, hi = pk->nbs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pk->bs[mid].batch_size < bs)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < pk->nbs && pk->bs[lo].batch_size == bs ? lo : pk->nbs;
}

static void print_history(const struct gt_iterations *its, const struct gt_peak *pk)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
    int64_t failed = 0;
    printf("  new highs (the allocator's memory follows them, not the batch size):\n");
    for (size_t k = 0; k < pk->n; k++) {
        failed += pk->high[k].failed;
        if (!pk->high[k].new_high)
            continue;
        char bs[32] = "?";
        if (its->it[k].batch_size >= 0)
            snprintf(bs, sizeof bs, "%lld", (long long)its->it[k].batch_size);
        printf("    iteration %lld, batch %s: %s, +%s, %lld allocation%s kept past the iteration (new segments)\n",
               (long long)its->it[k].index, bs, gt_fmt_bytes(pk->w[k].peak, b1), gt_fmt_bytes(pk->high[k].added, b2),
               (long long)pk->high[k].kept, gt_s((long long)pk->high[k].kept));
    }
    /* each batch size once, in the order first run: one with a new high in
     * any of its iterations is not listed (20 iterations of one batch size
     * printed it 20 times) */
    printf("  batch sizes with no new high:");
    size_t *first = gt_xmalloc((pk->nbs + 1) * sizeof *first);
    char *high = gt_xcalloc(pk->nbs + 1, 1);
    for (size_t b = 0; b < pk->nbs; b++)
        first[b] = pk->n;
    for (size_t k = 0; k < pk->n; k++) {
        size_t b = bs_index(pk, its->it[k].batch_size);
        if (b < pk->nbs) {
            first[b] = k < first[b] ? k : first[b];
            high[b] |= pk->high[k].new_high;
        }
    }
    int none = 1;
    for (size_t k = 0; k < pk->n; k++) {
        size_t b = bs_index(pk, its->it[k].batch_size);
        if (b < pk->nbs && first[b] == k && !high[b]) {
            printf("%s %lld", none ? "" : ",", (long long)its->it[k].batch_size);
            none = 0;
        }
    }
    free(first);
    free(high);
    printf("%s\n", none ? " none" : " (they ran inside what earlier batches had reserved)");
    printf("  failed allocations in iterations: %lld\n", (long long)failed);
}

/* Of several devices, what each other one alone would give (the one told
 * runs out first, or is the busiest; --device N tells any one). */
static void print_others(const struct gt_peak *pk)
{
    if (!pk->nothers)
        return;
    printf("  other devices (each fitted alone; --device N shows one):");
    for (size_t i = 0; i < pk->nothers; i++) {
        const struct gt_peak_other *o = &pk->others[i];
        if (o->largest < 0)
            printf("%s device %d: no largest batch size", i ? ";" : "", o->device);
        else
            printf("%s device %d: %lld%s", i ? ";" : "", o->device, (long long)o->largest,
                   o->given ? "" : " (withheld there)");
    }
    printf("\n");
}

/* Why the last iteration is cut by the end of the record: a signal, or a
 * trace not closed (killed, or still written: a trace read while its
 * program runs is not a dead process's). */
static const char *cut_by_end_why(struct gt_ctx *c)
{
    if (c->t.proc.end_reason)
        return "the process died in it: incomplete, not fitted";
    if (gt_trace_writer_pid(&c->t))
        return "the process still runs in it (the trace is being written): incomplete, not fitted";
    return "the record ends in it (the process was killed?): incomplete, not fitted";
}

static int print_text(struct gt_ctx *c, const struct gt_iterations *its, const struct gt_peak *pk,
                      const struct gt_site_sum *s, size_t ns)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], dev[96] = "";
    const char *cut_by_end = cut_by_end_why(c);
    if (pk->sel.device != GT_ANY_DEVICE && pk->multi_device)
        snprintf(dev, sizeof dev, " on device %d (of %d devices, %s)", pk->sel.device, pk->multi_device,
                 pk->binding ? "the first to run out" : "the busiest");
    else if (pk->sel.device != GT_ANY_DEVICE)
        snprintf(dev, sizeof dev, " on device %d", pk->sel.device);
    if (pk->device_total > 0)
        printf("Peak of %s memory%s (device size %s)\n", pk->memory, dev, gt_fmt_bytes(pk->device_total, b1));
    else
        printf("Peak of %s memory%s (device size unknown: --device-bytes N gives it)\n", pk->memory, dev);
    gt_ctx_print_gaps(c);   /* a peak over frees the record missed is no peak the device held */
    if (pk->default_flat)
        printf("  (the level reports take by default, %s memory, does not grow with the batch size; device memory"
               " outside it does: this answer follows it, --memory %s gives the default's)\n", c->sel_name, c->sel_name);
    printf("  iterations: %s\n", its->how);
    if (pk->n) {
        /* thousands of iterations make thousands of lines: of many, the
         * first, the last, the highest peak and the incomplete ones */
        int all = c->o->all_iterations || pk->n <= PEAK_ALL_UP_TO;
        size_t highest = 0, shown = 0;
        for (size_t k = 1; k < pk->n; k++)
            if (pk->w[k].peak > pk->w[highest].peak)
                highest = k;
        struct gt_table tb;
        gt_table_init(&tb, 5, 0x7);
        gt_table_row(&tb, "iteration", "batch", "peak", "at", "");
        for (size_t k = 0; k < pk->n; k++) {
            if (!all && k && k != pk->n - 1 && k != highest && !pk->incomplete[k])
                continue;
            char idx[32], bs[32], note[96];
            snprintf(idx, sizeof idx, "%lld", (long long)its->it[k].index);
            snprintf(bs, sizeof bs, "%lld", (long long)its->it[k].batch_size);
            int64_t at = pk->w[k].peak_ev == GT_NO_EVENT ? its->it[k].start : c->t.ev[pk->w[k].peak_ev].t;
            const char *why[4] = {NULL, NULL, NULL, NULL};
            size_t nwhy = 0, len = 0;
            if (!all && k == 0)
                why[nwhy++] = "the first";
            if (!all && k == pk->n - 1)
                why[nwhy++] = "the last";
            if (!all && k == highest)
                why[nwhy++] = "the highest peak";
            if (pk->incomplete[k])
                why[nwhy++] = pk->incomplete[k] == GT_PEAK_CUT_BY_END ? cut_by_end
                              : pk->incomplete[k] == GT_PEAK_NOT_CLOSED
                                  ? "not closed: runs to the end of the record, with what ran after the loop: not fitted"
                                  : "allocation failed: incomplete, not fitted";
            note[0] = 0;
            for (size_t q = 0; q < nwhy; q++)
                len += (size_t)snprintf(note + len, sizeof note - len, "%s%s", q ? "; " : "", why[q]);
            gt_table_row(&tb, idx, its->it[k].batch_size >= 0 ? bs : "?", gt_fmt_bytes(pk->w[k].peak, b1), gt_fmt_ns(at, b2), note);
            shown++;
        }
        gt_table_print(&tb, stdout, 4);
        if (shown < pk->n)
            printf("    ... %zu more iteration%s not shown (--all-iterations lists every one)\n", pk->n - shown,
                   gt_s((long long)(pk->n - shown)));
    }
    if (pk->nbs) {
        printf("  by batch size:\n");
        struct gt_table tb;
        gt_table_init(&tb, 4, 0xf);
        gt_table_row(&tb, "batch", "max peak", "median peak", "iterations");
        for (size_t i = 0; i < pk->nbs; i++) {
            char bs[32], n[32];
            snprintf(bs, sizeof bs, "%lld", (long long)pk->bs[i].batch_size);
            snprintf(n, sizeof n, "%zu", pk->bs[i].n);
            gt_table_row(&tb, bs, gt_fmt_bytes(pk->bs[i].max_peak, b1), gt_fmt_bytes_d(pk->bs[i].median_peak, b2), n);
        }
        gt_table_print(&tb, stdout, 4);
    } else if (pk->n) {
        int told = 0;   /* iterations that carry a batch size, all cut short: not unknown */
        for (size_t k = 0; k < pk->n && !told; k++)
            told = its->it[k].batch_size >= 0;
        if (told)
            printf("  no batch size has a complete iteration: every iteration that carries one was cut short\n");
        else if (c->t.run_batch_size >= 0)   /* the sweep's, for the whole run: no iteration says its own */
            printf("  one run of a sweep (batch size %lld): the fit over its runs is the sweep's own, and gputrace"
                   " report DIR/*.db -o sweep.html draws them\n", (long long)c->t.run_batch_size);
        else
            printf("  batch sizes unknown: put \"batch_size=N\" in the iteration range's message or pass it to"
                   " gputrace_iteration()\n");
    }
    if (pk->fit.ok) {
        printf("  fit: peak = %s + %s x batch_size  (R^2 = %.4f over %zu batch sizes)\n", gt_fmt_bytes_d(pk->fit.intercept, b1),
               gt_fmt_bytes_d(pk->fit.slope, b2), pk->fit.r2, pk->nbs);
        gt_slack_print(&pk->slack);
        if (pk->max_batch_size == 0) {   /* (--device-bytes below what batch size 1 needs) */
            printf("  largest batch size predicted to fit: none: batch size 1 needs more than the %s available, "
                   "less a margin of %s\n", gt_fmt_bytes(pk->room.available, b1), gt_fmt_bytes(pk->room.margin, b2));
            print_room(pk);
        } else if (pk->max_batch_size > 0) {
            printf("  largest batch size predicted to fit: %lld (in %s available, less a margin of %s)\n",
                   (long long)pk->max_batch_size, gt_fmt_bytes(pk->room.available, b1), gt_fmt_bytes(pk->room.margin, b2));
            print_room(pk);
            printf("  (a prediction from the batch sizes traced, its margin chosen to err low: the exact largest batch\n"
                   "  size comes from runs at the boundary: gputrace sweep -- CMD)\n");
        } else if (pk->fit.slope <= 0 && !pk->history) {
            printf("  peak does not grow with batch size: no batch size limit can be predicted\n");
        }
        if (pk->fit.r2 < GT_FIT_RELIABLE_R2)
            printf("  the fit is poor (R^2 < %.2f): these peaks do not follow batch size\n", GT_FIT_RELIABLE_R2);
    } else if (pk->nbs == 1 && c->t.run_batch_size >= 0) {
        /* one run of a sweep: its fit is the sweep's (gputrace sweep --json, report over the runs) */
        printf("  one run of a sweep (batch size %lld): the fit over its runs is the sweep's own, and gputrace report"
               " DIR/*.db -o sweep.html draws them\n", (long long)c->t.run_batch_size);
    } else if (pk->nbs == 1) {
        printf("  one batch size only: run several batch sizes to fit peak = fixed + per_sample x batch_size\n");
    } else if (pk->history) {
        printf("  fit: none (a line through these peaks would model the allocator's history, not the batch)\n");
    }
    if (pk->withheld_why)
        printf("  no largest batch size: %s;\n    what would give one: %s\n", pk->withheld_why, pk->what_to_do);
    print_others(pk);
    if (pk->history)
        print_history(its, pk);
    if (pk->overall_ev == GT_NO_EVENT) {
        printf("  no %s memory was ever live\n", pk->memory);
        return GT_EXIT_OK;
    }
    long k = iteration_of(its, pk->overall_ev);
    char in[64] = "";
    if (k >= 0)
        snprintf(in, sizeof in, " (iteration %lld)", (long long)its->it[k].index);
    printf("  overall peak: %s at %s%s; live then, by call site:\n", gt_fmt_bytes(pk->overall_peak, b1),
           gt_fmt_ns(c->t.ev[pk->overall_ev].t, b2), in);
    return gt_text_sites(c, s, ns, (size_t)c->o->top, 4);
}

int gt_report_peak(struct gt_ctx *c, struct gt_json *j)
{
    struct gt_peak pk;
    int code = gt_peak_compute(c, &pk);
    if (code) {
        gt_peak_free(&pk);
        return code;
    }
    const struct gt_iterations *its = &c->iters;
    struct gt_site_sum *s = NULL;
    size_t ns = 0;
    if (pk.overall_ev != GT_NO_EVENT)
        ns = gt_live_sites_before(&c->t, &c->p, &pk.sel, (size_t)pk.overall_ev + 1, &s, NULL, NULL);
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_kstr(j, "memory", pk.memory);
        gt_json_key(j, "default_level_flat");
        gt_json_bool(j, pk.default_flat);
        gt_json_key(j, "device");   /* the device told: of one, the room's (null: no memory at all) */
        if (pk.sel.device != GT_ANY_DEVICE)
            gt_json_int(j, pk.sel.device);
        else if (pk.overall_ev != GT_NO_EVENT && c->t.ev[pk.overall_ev].device >= 0)
            gt_json_int(j, c->t.ev[pk.overall_ev].device);
        else
            gt_json_null(j);
        gt_json_key(j, "other_devices");
        gt_json_arr(j);
        for (size_t i = 0; i < pk.nothers; i++) {
            gt_json_obj(j);
            gt_json_kint(j, "device", pk.others[i].device);
            gt_json_kint_or_null(j, "largest_batch_size", pk.others[i].largest);
            gt_json_key(j, "given");
            gt_json_bool(j, pk.others[i].given);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_kstr(j, "iteration_source", gt_iter_source_name(its->source));
        gt_json_kstr(j, "iteration_detection", its->how);
        size_t group = c->page && pk.n > GT_PAGE_ITERATIONS ? (pk.n + GT_PAGE_ITERATIONS / 2 - 1) / (GT_PAGE_ITERATIONS / 2) : 1;
        gt_json_kint(j, "iteration_count", (int64_t)pk.n);
        gt_json_kint(j, "iterations_grouped_by", (int64_t)group);
        gt_json_key(j, "iterations");
        gt_json_arr(j);
        for (size_t k = 0; k < pk.n && group > 1;) {
            /* the page's: `group` consecutive iterations at their highest peak (and its batch size), as
             * the chart draws a long job's */
            size_t end = k + 1, top = k;
            int failed = pk.incomplete[k] == GT_PEAK_CUT_BY_FAILURE, died = pk.incomplete[k] == GT_PEAK_CUT_BY_END;
            while (end < pk.n && end - k < group) {
                if (pk.w[end].peak > pk.w[top].peak)
                    top = end;
                failed |= pk.incomplete[end] == GT_PEAK_CUT_BY_FAILURE;
                died |= pk.incomplete[end] == GT_PEAK_CUT_BY_END;
                end++;
            }
            gt_json_obj(j);
            gt_json_kint(j, "index", its->it[k].index);
            gt_json_kint(j, "last_index", its->it[end - 1].index);
            gt_json_kint_or_null(j, "batch_size", its->it[top].batch_size);
            gt_json_kint(j, "peak_bytes", pk.w[top].peak);
            gt_json_kint(j, "peak_time_ns", pk.w[top].peak_ev == GT_NO_EVENT ? its->it[top].start : c->t.ev[pk.w[top].peak_ev].t);
            gt_json_kint(j, "start_ns", its->it[k].start);
            gt_json_kint(j, "end_ns", its->it[end - 1].end);
            gt_json_key(j, "failed_allocation");
            gt_json_bool(j, failed);
            gt_json_key(j, "process_died_in_it");
            gt_json_bool(j, died);
            gt_json_obj_end(j);
            k = end;
        }
        for (size_t k = 0; k < pk.n && group == 1; k++) {
            gt_json_obj(j);
            gt_json_kint(j, "index", its->it[k].index);
            gt_json_kint_or_null(j, "batch_size", its->it[k].batch_size);
            gt_json_kint(j, "peak_bytes", pk.w[k].peak);
            gt_json_kint(j, "peak_time_ns", pk.w[k].peak_ev == GT_NO_EVENT ? its->it[k].start : c->t.ev[pk.w[k].peak_ev].t);
            gt_json_kint(j, "start_ns", its->it[k].start);
            gt_json_kint(j, "end_ns", its->it[k].end);
            gt_json_key(j, "failed_allocation");
            gt_json_bool(j, pk.incomplete[k] == GT_PEAK_CUT_BY_FAILURE);
            gt_json_key(j, "process_died_in_it");
            gt_json_bool(j, pk.incomplete[k] == GT_PEAK_CUT_BY_END);
            gt_json_key(j, "not_closed");   /* the last, running to the end of the record: not fitted */
            gt_json_bool(j, pk.incomplete[k] == GT_PEAK_NOT_CLOSED);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_key(j, "by_batch_size");
        gt_json_arr(j);
        for (size_t i = 0; i < pk.nbs; i++) {
            gt_json_obj(j);
            gt_json_kint(j, "batch_size", pk.bs[i].batch_size);
            gt_json_kint(j, "peak_bytes", pk.bs[i].max_peak);
            gt_json_kdouble(j, "median_peak_bytes", pk.bs[i].median_peak);
            gt_json_kint(j, "iterations", (int64_t)pk.bs[i].n);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_key(j, "fit");
        if (pk.fit.ok) {
            gt_json_obj(j);
            gt_json_kdouble(j, "fixed_bytes", pk.fit.intercept);
            gt_json_kdouble(j, "per_sample_bytes", pk.fit.slope);
            gt_json_kdouble(j, "r2", pk.fit.r2);
            gt_json_key(j, "reliable");
            gt_json_bool(j, fit_reliable(&pk));
            gt_json_obj_end(j);
        } else {
            gt_json_null(j);
        }
        gt_json_kint_or_null(j, "device_total_bytes", pk.device_total);
        /* never a number the data does not support: a poor fit gives none */
        gt_json_kint_or_null(j, "max_batch_size", pk.max_batch_size);
        gt_json_kint_or_null(j, "available_bytes", pk.room.available);
        gt_json_kint_or_null(j, "margin_bytes", pk.room.margin);
        gt_json_key(j, "max_batch_size_withheld");
        if (pk.withheld_why)
            gt_json_str(j, pk.withheld_why);
        else
            gt_json_null(j);
        gt_json_key(j, "what_would_give_one");
        if (pk.what_to_do)
            gt_json_str(j, pk.what_to_do);
        else
            gt_json_null(j);
        gt_json_key(j, "room");
        gt_json_obj(j);
        gt_json_kint_or_null(j, "total_bytes", pk.room.total);
        gt_json_key(j, "total_from");
        if (pk.room.total > 0)
            gt_json_str(j, pk.room.total_from);
        else
            gt_json_null(j);
        gt_json_kint_or_null(j, "held_outside_trace_bytes", pk.room.untraced.bytes);
        gt_json_kint_or_null(j, "other_processes_bytes", pk.room.untraced.others);
        gt_json_kint_or_null(j, "driver_bytes", pk.room.untraced.no_ones);
        gt_json_kint(j, "beside_level_bytes", pk.room.other_levels);
        gt_json_kint(j, "graph_memory_bytes", pk.room.graph_memory);
        gt_json_kint_or_null(j, "pool_reserved_max_bytes", pk.room.pool_reserved_max);
        gt_json_kint_or_null(j, "pool_slack_bytes", pk.room.pool_slack);
        gt_json_kint_or_null(j, "safety_bytes", pk.safety);
        gt_json_kint(j, "held_through_loop_bytes", pk.held_through);
        gt_json_kint(j, "device_granularity_bytes", pk.room.granularity);
        gt_json_kint(j, "pool_granularity_bytes", pk.room.pool_granularity);
        gt_json_kint(j, "rounded_device_allocations", pk.room.rounded);
        gt_json_kint(j, "rounded_pool_allocations", pk.room.rounded_pool);
        gt_json_key(j, "rounding_per_sample_bytes");   /* the rounding bound's growth a sample (0: none) */
        gt_json_double(j, pk.room.rounding_per_sample);
        gt_json_key(j, "pool_read");
        gt_json_bool(j, pk.room.pool_read);
        gt_json_obj_end(j);
        gt_slack_json(j, &pk.slack);
        gt_json_key(j, "preallocated");
        gt_json_bool(j, pk.preallocated);
        gt_json_key(j, "peaks_follow_history");
        gt_json_bool(j, pk.history);
        gt_json_kint_or_null(j, "carried_bytes", pk.carried_bytes);
        gt_json_kint_or_null(j, "carried_batch_size", pk.carried_batch_size);
        /* the page's: the first and last GT_PAGE_ITERATIONS / 2 (a long leaking run's every iteration is a
         * new high: 600,000 made a 105 MB page that drew none of them; a helper's probe) */
        size_t highs = 0, seen = 0;
        for (size_t k = 0; k < pk.n; k++)
            highs += pk.high[k].new_high;
        size_t keep = c->page && highs > GT_PAGE_ITERATIONS ? GT_PAGE_ITERATIONS / 2 : highs;
        gt_json_kint(j, "new_high_count", (int64_t)highs);
        gt_json_key(j, "new_highs");
        gt_json_arr(j);
        int64_t failed = 0;
        for (size_t k = 0; k < pk.n; k++) {
            failed += pk.high[k].failed;
            if (!pk.high[k].new_high)
                continue;
            seen++;
            if (seen > keep && seen <= highs - keep)
                continue;
            gt_json_obj(j);
            gt_json_kint(j, "index", its->it[k].index);
            gt_json_kint_or_null(j, "batch_size", its->it[k].batch_size);
            gt_json_kint(j, "peak_bytes", pk.w[k].peak);
            gt_json_kint(j, "added_bytes", pk.high[k].added);
            gt_json_kint(j, "kept_allocations", pk.high[k].kept);
            gt_json_kint(j, "failed_allocations", pk.high[k].failed);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_kint(j, "failed_allocations", failed);
        gt_json_kint(j, "peak_bytes", pk.overall_peak);
        gt_json_key(j, "peak_time_ns");
        if (pk.overall_ev == GT_NO_EVENT)
            gt_json_null(j);
        else
            gt_json_int(j, c->t.ev[pk.overall_ev].t);
        gt_json_key(j, "peak_sites");
        code = gt_json_sites(c, j, s, ns, ns);
        gt_json_obj_end(j);
    } else {
        code = print_text(c, its, &pk, s, ns);
    }
    free(s);
    gt_peak_free(&pk);
    return code;
}
