/* growth_out.c - `gputrace growth`'s text and JSON: live bytes at each
 * iteration's end, the slope and verdict (and how the memory grew), and the
 * call sites that grow (computed in growth.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* How the first m growing sites read (gt_site_texts). */
static int site_texts(struct gt_ctx *c, const struct gt_growth *g, size_t m, char ***texts)
{
    int32_t *ids = gt_xmalloc((m + 1) * sizeof *ids);
    for (size_t i = 0; i < m; i++)
        ids[i] = g->sites[i].site;
    int code = gt_site_texts(c, ids, m, texts);
    free(ids);
    return code;
}

/* Are the growing sites segments of a caching allocator (device memory
 * whose top site passes through one)? Then a site is where the allocator
 * asked for more, not necessarily the allocation that is kept (seed 001 under
 * PyTorch's default allocator on an H100: the segment is requested in the
 * backward pass, the kept tensor is the forward's output). */
static const struct gt_caching_allocator *segment_level(struct gt_ctx *c, const struct gt_growth *g, int *code)
{
    *code = GT_EXIT_OK;
    if (!g->nsites || strcmp(g->memory, "device") != 0)
        return NULL;
    return gt_site_caching_allocator(c, g->sites[0].site, code);
}

/* Of device memory that did not grow: how much of what was live at the
 * last fitted iteration's end a caching allocator held (its cache: blocks or
 * segments). A verdict over it says the allocator asked CUDA for no more,
 * not that the program's tensors stopped growing: CuPy's pool kept 1 MiB
 * arrays a step inside blocks it held and device memory read flat (an H200,
 * session 48). cs->by NULL: not so (or under half of it). */
int gt_growth_cache_share(struct gt_ctx *c, const struct gt_growth *g, struct gt_cache_share *cs)
{
    memset(cs, 0, sizeof *cs);
    /* stable alone ("unknown" says nothing of what the cache asked for: a review); a preallocated pool:
     * growth says so already */
    if (strcmp(g->verdict, "stable") != 0 || strcmp(g->memory, "device") != 0 || g->used < 2 || g->prealloc.bytes)
        return GT_EXIT_OK;
    size_t k = g->n;
    while (k > 0 && !g->loop[k - 1].closed)
        k--;
    if (k <= g->warmup)
        return GT_EXIT_OK;
    struct gt_sel s = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = g->by_device ? g->device : c->sel.device};
    /* the loop's own memory out of sight: fewer allocations outside a cache during the fitted iterations
     * than there are iterations (a program that allocates its arrays one by one beside an idle cache, a
     * cuBLAS workspace made once, is seen: a review) */
    const struct gt_trace *t = &c->t;
    unsigned char *kind = gt_xcalloc(t->nsites + 1, 1);   /* 0 not looked up, 1 a cache's, 2 not */
    size_t outside = 0;
    int code = GT_EXIT_OK;
    for (size_t a = g->loop[g->warmup].first_ev; a < g->loop[k - 1].end_ev && !code; a++) {
        const struct gt_event *e = &t->ev[a];
        if (e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC || !gt_sel_has(t, &s, e))
            continue;
        size_t site = e->site >= 0 ? (size_t)e->site : t->nsites;
        if (!kind[site])
            kind[site] = e->site >= 0 && gt_site_caching_allocator(c, e->site, &code) ? 1 : 2;
        outside += kind[site] == 2;
    }
    free(kind);
    if (code || outside >= k - g->warmup)
        return code;
    struct gt_site_sum *sites;
    size_t n = gt_live_sites_before(&c->t, &c->p, &s, g->loop[k - 1].end_ev, &sites, &cs->live, NULL);
    int64_t most = 0;
    for (size_t i = 0; i < n && !code; i++) {
        const struct gt_caching_allocator *a = gt_site_caching_allocator(c, sites[i].site, &code);
        if (!a)
            continue;
        cs->cached += sites[i].bytes;
        if (sites[i].bytes > most) {
            most = sites[i].bytes;
            cs->by = a;
        }
    }
    free(sites);
    if (code || 2 * cs->cached < cs->live)
        cs->by = NULL;
    return code;
}

/* Iterations at the end holding the same bytes, from which a step pattern
 * is worth a word under a caching allocator. */
#define STEADY_TAIL 3

static int print_text(struct gt_ctx *c, const struct gt_iterations *its, const struct gt_growth *g)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
    gt_ctx_print_gaps(c);
    printf("Growth of %s memory: %s; first %zu skipped as warm-up\n", g->memory, its->how, g->warmup);
    if (g->default_verdict)
        printf("  (the level reports take by default, %s memory, is %s (%s per iteration); %s memory outside it"
               " grows: this report follows it, --memory %s gives the default's)\n", c->sel_name, g->default_verdict,
               gt_fmt_bytes_d(g->default_slope, b1), g->memory, c->sel_name);
    if (g->by_device)
        printf("  (the %zu devices' %s memory together is %s (%s per iteration); device %d's alone grows: this\n"
               "   report is of it, --device %d gives the same)\n", g->devices, g->memory, g->devices_verdict,
               gt_fmt_bytes_d(g->devices_slope, b1), g->device, g->device);
    if (g->thread_tid)
        printf("  (the whole process's %s memory over these iterations is %s (%s per iteration), the loops on the\n"
               "   other threads running beside or after them; the %zu iterations of the loop on thread %lld, counting\n"
               "   the allocations made on that thread, grow: this report is of them)\n", g->memory,
               g->process_verdict, gt_fmt_bytes_d(g->process_slope, b1), g->n, (long long)g->thread_tid);
    if (g->used < 2 && g->warmup >= g->n && g->n >= 2) {
        printf("  verdict: unknown (--warmup %zu skips all %zu iterations the trace has: give a smaller --warmup; the"
               " default, 1, skips the first)\n", g->warmup, g->n);
        return GT_EXIT_OK;
    }
    if (g->used < 2) {
        printf("  verdict: unknown (only %zu complete iteration%s after warm-up; need at least 3)\n", g->used, gt_s((long long)g->used));
        return GT_EXIT_OK;
    }
    printf("  live at iteration end:");
    for (size_t k = 0; k < g->n; k++) {
        if (g->n > 12 && k == 6) {
            printf(" ... (%zu more)", g->n - 12);
            k = g->n - 6;
        }
        printf(" %s", gt_fmt_bytes(g->end_live[k], b1));
    }
    if (g->n && !g->loop[g->n - 1].closed)
        printf(" (the last, not closed, runs to the end of the record: not fitted)");
    if (g->later_used) {
        char b3[GT_FMT_LEN], b4[GT_FMT_LEN];
        printf("\n  slope: %s per iteration (Theil-Sen over the medians of %zu kernel windows: %zu iterations and %zu\n"
               "         steps seen in %zu later windows, placed at about %s a step, the iterations' median; scatter %s)\n"
               "         -> %s: the level rose across %zu of the %zu gaps between windows%s%s\n",
               gt_fmt_bytes_d(g->slope, b1), g->windows, g->used - g->later_used, g->later_used, g->windows - 1,
               gt_fmt_ns(g->step_ns, b3), gt_fmt_bytes_d(g->noise, b2), g->verdict, g->window_rises, g->windows - 1,
               g->one_off_step ? ", once by " : "", g->one_off_step ? gt_fmt_bytes(g->one_off_step, b4) : "");
        if (g->one_off_step)
            printf("         (without that one step up no slope is left: a one-off step, not growth)\n");
    } else if (g->held.growing) {
        char b3[GT_FMT_LEN], b4[GT_FMT_LEN], b5[GT_FMT_LEN];
        printf("\n  slope: %s per iteration on average: the level rose %s over %zu iterations, %s in their second\n"
               "         half, in %zu rises, each held to the end (Theil-Sen, which the iterations holding one level\n"
               "         outvote, reads %s; scatter %s) -> %s\n",
               gt_fmt_bytes_d(g->slope, b1), gt_fmt_bytes(g->held.rise, b3), g->used,
               gt_fmt_bytes(g->held.late_rise, b4), g->held.rises, gt_fmt_bytes_d(g->held.fitted_slope, b5),
               gt_fmt_bytes_d(g->noise, b2), g->verdict);
        if (g->held.since_slope > 0)
            printf("  (it began to rise after iteration %lld: %s per iteration since then)\n",
                   (long long)g->loop[(size_t)g->held.since].index, gt_fmt_bytes_d(g->held.since_slope, b1));
    } else {
        printf("\n  slope: %s per iteration (Theil-Sen over %zu iterations; scatter %s) -> %s\n",
               gt_fmt_bytes_d(g->slope, b1), g->used, gt_fmt_bytes_d(g->noise, b2), g->verdict);
        if (g->held.since_slope > 0)   /* a rise after a flat stretch (growth.c's rose_late) */
            printf("  (the level held until iteration %lld, then rose %s per iteration: the rate --fail-above "
                   "judges)\n", (long long)g->loop[(size_t)g->held.since].index, gt_fmt_bytes_d(g->held.since_slope, b1));
        char b3[GT_FMT_LEN];
        if (g->step_down)
            printf("  (one step down of %s at iteration %lld, held to the end: memory given back once (a cache\n"
                   "   freed), not a trend)\n", gt_fmt_bytes(g->step_down, b3),
                   (long long)g->loop[(size_t)g->step_down_at].index);
        else if (g->batch_rises)
            printf("  (the level rose only at iterations of the largest batch size yet, %zu time%s, and held at each\n"
                   "   batch size: memory that follows the batch size (a cache reserving for the larger batch), not\n"
                   "   the iterations; read per iteration it was %s. gputrace peak tells the batch's cost)\n",
                   g->batch_rises, gt_s((long long)g->batch_rises), gt_fmt_bytes_d(g->held.fitted_slope, b3));
        else if (g->scatter_hides && its->source != GT_ITER_NVTX && its->source != GT_ITER_MARKER)
            printf("  (not told: the live bytes at iteration ends scatter by %s, so a growth of up to %s over\n"
                   "   these iterations would not show, over a tenth of their level; iterations that end at the\n"
                   "   same point of each step would tell: mark the step (an NVTX range, or gputrace_iteration()))\n",
                   gt_fmt_bytes_d(g->noise, b2), gt_fmt_bytes_d(3 * g->noise, b3));
        else if (g->scatter_hides)   /* the steps are marked already: what they hold at their ends varies */
            printf("  (not told: the live bytes at iteration ends scatter by %s, so a growth of up to %s over\n"
                   "   these iterations would not show, over a tenth of their level; the iterations are the\n"
                   "   program's own marks, which end holding different amounts (a batch prefetched, a buffer\n"
                   "   freed after the mark ends): marks that end after each step's last free would tell%s)\n",
                   gt_fmt_bytes_d(g->noise, b2), gt_fmt_bytes_d(3 * g->noise, b3),
                   c->sel.device == GT_ANY_DEVICE && c->t.ndevices > 1 ? ", or --device N for one device's memory" : "");
        else if (g->held.rise && g->held.steps == 1 && g->held.rise - g->held.largest <= 3 * g->noise)
            printf("  (one step up of %s at iteration %lld, held to the end: a one-off (a checkpoint loaded, a\n"
                   "   cache reserving for a larger batch once), not growth per iteration; a second step would be)\n",
                   gt_fmt_bytes(g->held.largest, b3), (long long)g->loop[(size_t)g->held.largest_at].index);
        else if (g->held.under_threshold) {
            char b4[GT_FMT_LEN];
            printf("  (the level rose %s in %zu rises, each held to the end: %s per iteration on average, not above\n"
                   "   --threshold %s)\n", gt_fmt_bytes(g->held.rise, b3), g->held.rises,
                   gt_fmt_bytes_d((double)g->held.rise / (double)(g->used - 1), b2),
                   gt_fmt_bytes(c->o->threshold, b4));
        } else if (g->held.rise)
            printf("  (the level rose %s in %zu rises, %s, and held: %s)\n", gt_fmt_bytes(g->held.rise, b3),
                   g->held.rises, g->held.late ? "one of them far larger than the rest" : "all in the first half of these iterations",
                   g->held.late ? "one step up and small ones, not growth per iteration"
                                : "a cache settling, not growth per iteration");
    }
    struct gt_cache_share cs;
    int code = gt_growth_cache_share(c, g, &cs);
    if (code)
        return code;
    if (cs.by) {
        char b3[GT_FMT_LEN];
        printf("  (of the %s live at the last fitted iteration's end, %s is %s's cache: %s\n"
               "   says it asked CUDA for no more, not that the program's tensors stopped growing: a tensor kept\n"
               "   inside what the cache holds shows only when it needs more. Every tensor is seen with:\n"
               "   %s)\n", gt_fmt_bytes(cs.live, b1), gt_fmt_bytes(cs.cached, b3), cs.by->name,
               g->verdict, cs.by->per_tensor);
    }
    if (g->prealloc.bytes) {
        char made[160];
        printf("  (not told: %s before the loop and held: a\n"
               "   preallocating framework (JAX's default) carves its arrays inside %s, out of the trace's sight;\n"
               "   %s)\n", gt_prealloc_made(&g->prealloc, made, sizeof made), g->prealloc.count == 1 ? "it" : "them",
               GT_PREALLOC_TO_DO);
    }
    if (g->later_seen && !g->later_used)
        printf("  (%zu steps seen in later kernel windows are not fitted: they run at another pace than the\n"
               "   iterations, or in fewer than 2 windows after them; the verdict is the iterations' own)\n",
               g->later_seen);
    if (!strcmp(g->verdict, "growing")) {
        printf("  how it grew: at %zu of %zu %s (", g->steps, g->used - 1, g->later_used ? "points" : "iterations");
        if (g->steps_at_new_highs == g->steps)
            printf("each one whose peak was the highest yet");
        else
            printf("%zu of them with the highest peak yet", g->steps_at_new_highs);
        if (g->steady_tail >= 2)
            printf("); the last %zu ended holding the same bytes", g->steady_tail);
        else
            printf(")");
        printf("\n");
    }
    if (!g->nsites) {
        printf("  no call site holds more memory at the end of later iterations\n");
        return GT_EXIT_OK;
    }
    printf(g->batch_rises ? "  call sites that held more as the batch size grew:\n"
                          : "  call sites whose live memory grows per iteration:\n");
    size_t m = g->nsites < (size_t)c->o->top ? g->nsites : (size_t)c->o->top;
    char **texts;
    code = site_texts(c, g, m, &texts);
    if (code)
        return code;
    struct gt_table tb;
    gt_table_init(&tb, 3, 0x3);
    /* live at the last fitted iteration's end, not at exit (leaks' figure): said so (a helper's probe read the two as
     * disagreeing, 29 MiB here against 30 MiB there) */
    gt_table_row(&tb, "per iteration", "live, last fitted iteration", "call site (innermost first)");
    for (size_t i = 0; i < m; i++)
        gt_table_row(&tb, gt_fmt_bytes_d(g->sites[i].slope, b1), gt_fmt_bytes(g->sites[i].last, b2), texts[i]);
    gt_table_print(&tb, stdout, 4);
    gt_site_texts_free(texts, m);
    const struct gt_caching_allocator *in_cache = segment_level(c, g, &code);
    if (in_cache)
        printf("  (device memory of %s: a site above is the request that needed a new segment,\n"
               "   which can be another tensor than the one kept. Every tensor is seen, and the site that grows\n"
               "   is the one that keeps it, with: %s)\n", in_cache->name, in_cache->per_tensor);
    if (in_cache && !strcmp(g->verdict, "growing") && g->steps && g->steps_at_new_highs == g->steps &&
        g->steady_tail >= STEADY_TAIL)
        printf("  (growth in steps, each at an iteration that peaked highest yet, then steady: a caching allocator\n"
               "   reserving for the largest batch or shape yet grows so, and so does a leak that fills its cached\n"
               "   segments before it needs a new one; only a tensor-level trace tells them apart)\n");
    return code;
}

int gt_report_growth(struct gt_ctx *c, struct gt_json *j)
{
    struct gt_growth g;
    int code = gt_growth_compute(c, &g);
    if (code) {
        gt_growth_free(&g);
        return code;
    }
    const struct gt_iterations *its = &c->iters;
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_kstr(j, "memory", g.memory);
        gt_json_key(j, "default_level");
        if (g.default_verdict) {
            gt_json_obj(j);
            gt_json_kstr(j, "memory", c->sel_name);
            gt_json_kstr(j, "verdict", g.default_verdict);
            gt_json_kdouble(j, "slope_bytes_per_iteration", g.default_slope);
            gt_json_obj_end(j);
        } else {
            gt_json_null(j);
        }
        /* the loop ran on several threads and this is one thread's own allocations over its own loop */
        gt_json_key(j, "thread_loop");
        if (g.thread_tid) {
            gt_json_obj(j);
            gt_json_kint(j, "tid", g.thread_tid);
            gt_json_kstr(j, "process_verdict", g.process_verdict);
            gt_json_kdouble(j, "process_slope_bytes_per_iteration", g.process_slope);
            gt_json_obj_end(j);
        } else {
            gt_json_null(j);
        }
        /* the memory was on several devices and this is one device's alone */
        gt_json_key(j, "device_followed");
        if (g.by_device) {
            gt_json_obj(j);
            gt_json_kint(j, "device", g.device);
            gt_json_kint(j, "devices", (int64_t)g.devices);
            gt_json_kstr(j, "devices_verdict", g.devices_verdict);
            gt_json_kdouble(j, "devices_slope_bytes_per_iteration", g.devices_slope);
            gt_json_obj_end(j);
        } else {
            gt_json_null(j);
        }
        gt_json_kint(j, "iterations", (int64_t)g.n);
        gt_json_kstr(j, "iteration_source", gt_iter_source_name(its->source));
        gt_json_kstr(j, "iteration_detection", its->how);
        gt_json_kint(j, "warmup", (int64_t)g.warmup);
        gt_json_kint(j, "iterations_fitted", (int64_t)g.used);
        /* of them, steps seen in later spans of sampled kernels, placed at step_ns a step */
        gt_json_kint(j, "later_steps_seen", (int64_t)g.later_seen);
        gt_json_kint(j, "later_steps_fitted", (int64_t)g.later_used);
        gt_json_kint_or_null(j, "later_steps_placed_at_ns", g.later_used ? g.step_ns : -1);
        /* then fitted over the kernel windows' medians: how many, and the gaps the level rose across */
        gt_json_kint(j, "kernel_windows_fitted", (int64_t)g.windows);
        gt_json_kint(j, "window_rises", (int64_t)g.window_rises);
        gt_json_kint_or_null(j, "one_off_step_bytes", g.one_off_step ? g.one_off_step : -1);
        gt_json_key(j, "slope_bytes_per_iteration");
        if (g.used >= 2)
            gt_json_double(j, g.slope);
        else
            gt_json_null(j);
        gt_json_kdouble(j, "scatter_bytes", g.noise);
        gt_json_kstr(j, "verdict", g.verdict);
        gt_json_kint_or_null(j, "preallocated_bytes", g.prealloc.bytes ? g.prealloc.bytes : -1);
        gt_json_kint(j, "growth_steps", (int64_t)g.steps);
        gt_json_kint(j, "growth_steps_at_new_highs", (int64_t)g.steps_at_new_highs);
        gt_json_kint(j, "steady_tail_iterations", (int64_t)g.steady_tail);
        /* a staircase of held steps (held_steps): its rise and steps; growing by it or not */
        gt_json_kint_or_null(j, "held_rise_bytes", g.held.rise ? g.held.rise : -1);
        gt_json_kint(j, "held_rise_steps", (int64_t)(g.held.rise ? g.held.steps : 0));
        gt_json_kint(j, "held_rises", (int64_t)(g.held.rise ? g.held.rises : 0));   /* points at a new high */
        gt_json_kint_or_null(j, "held_rise_second_half_bytes", g.held.rise ? g.held.late_rise : -1);
        /* held growth that began later: the iteration it began after, and the rate since */
        gt_json_kint_or_null(j, "held_rise_began_after_iteration",
                             g.held.since_slope > 0 ? g.loop[(size_t)g.held.since].index : -1);
        gt_json_key(j, "held_rise_slope_since_bytes_per_iteration");
        if (g.held.since_slope > 0)
            gt_json_double(j, g.held.since_slope);
        else
            gt_json_null(j);
        gt_json_key(j, "growing_in_held_steps");
        gt_json_bool(j, g.held.growing);
        gt_json_kint(j, "batch_size_rises", (int64_t)g.batch_rises);
        gt_json_kint_or_null(j, "step_down_bytes", g.step_down ? g.step_down : -1);
        gt_json_key(j, "scatter_hides_growth");
        gt_json_bool(j, g.scatter_hides);
        if (!c->page) {   /* (the page draws none of it: a long job's made most of its size) */
            gt_json_key(j, "live_bytes_at_iteration_end");
            gt_json_arr_inline(j);
            for (size_t k = 0; k < g.n; k++)
                gt_json_int(j, g.end_live[k]);
            gt_json_arr_end(j);
        }
        char **texts = NULL;
        size_t listed = c->page && g.nsites > (size_t)c->o->top ? (size_t)c->o->top : g.nsites;   /* (as gt_json_sites) */
        code = site_texts(c, &g, listed, &texts);
        gt_json_key(j, "sites");
        gt_json_arr(j);
        for (size_t i = 0; i < listed && !code; i++) {
            gt_json_obj(j);
            gt_json_kdouble(j, "bytes_per_iteration", g.sites[i].slope);
            gt_json_kint(j, "live_bytes_first", g.sites[i].first);
            gt_json_kint(j, "live_bytes_last", g.sites[i].last);
            gt_json_kint_or_null(j, "stack_id", gt_trace_stack_id(&c->t, g.sites[i].site));
            code = gt_json_frames(c, j, g.sites[i].site, texts[i]);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_site_texts_free(texts, listed);
        if (!code) {
            int seg = segment_level(c, &g, &code) != NULL;
            gt_json_key(j, "sites_are_segments");
            gt_json_bool(j, seg);
        }
        struct gt_cache_share cs;
        if (!code && !(code = gt_growth_cache_share(c, &g, &cs))) {
            /* not growing, and most of the level is a caching allocator's cache: the verdict is its */
            gt_json_key(j, "verdict_of_cache");
            if (cs.by) {
                gt_json_obj(j);
                gt_json_kstr(j, "allocator", cs.by->name);
                gt_json_kint(j, "cached_bytes", cs.cached);
                gt_json_kint(j, "live_bytes", cs.live);
                gt_json_kstr(j, "per_tensor", cs.by->per_tensor);
                gt_json_obj_end(j);
            } else {
                gt_json_null(j);
            }
        }
        gt_json_obj_end(j);
    } else {
        code = print_text(c, its, &g);
    }
    /* the gate follows the verdict: a slope the verdict calls noise ("stable") or too few
     * iterations to judge ("unknown") failed CI beside a report that said otherwise */
    /* (held growth that began later: its rate since, which the span's average understates) */
    if (g.held.since_slope > g.slope)
        g.slope = g.held.since_slope;
    if (!code && c->o->fail_above >= 0 && g.used >= 2 && g.slope > (double)c->o->fail_above) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
        if (!strcmp(g.verdict, "growing")) {
            fprintf(stderr, "gputrace: %s: live %s memory grows %s per iteration, above --fail-above %s\n", gt_shown(c->path),
                    g.memory, gt_fmt_bytes_d(g.slope, b1), gt_fmt_bytes(c->o->fail_above, b2));
            code = GT_EXIT_FAIL_ABOVE;
        } else if (!strcmp(g.verdict, "unknown")) {
            /* (each line says what made the verdict: --threshold, not noise, made a slope stable; a
             * scatter or a preallocated pool, not few iterations, left it unknown: a helper's probe) */
            fprintf(stderr, "gputrace: %s: --fail-above not judged: growth is unknown (%s)\n", gt_shown(c->path),
                    g.prealloc.bytes > 0 ? "a preallocated pool holds the arrays out of the trace's sight; trace "
                                           "at tensor level"
                    : g.scatter_hides    ? "the iterations' live memory scatters enough to hide it; trace more "
                                           "iterations, or mark them where each step ends"
                                         : "too few iterations to tell; trace more iterations");
        } else if (g.batch_rises) {
            fprintf(stderr, "gputrace: %s: --fail-above not failed: the level rose only with each larger batch "
                    "size (verdict %s): `gputrace peak` tells the batch's cost\n", gt_shown(c->path), g.verdict);
        } else if (g.slope <= (double)c->o->threshold) {
            fprintf(stderr, "gputrace: %s: --fail-above not failed: the fitted slope, %s per iteration, is above %s "
                    "but not above --threshold %s (verdict %s); lower --threshold to judge it\n", gt_shown(c->path),
                    gt_fmt_bytes_d(g.slope, b1), gt_fmt_bytes(c->o->fail_above, b2),
                    gt_fmt_bytes(c->o->threshold, b3), g.verdict);
        } else {
            fprintf(stderr, "gputrace: %s: --fail-above not failed: the fitted slope, %s per iteration, is above %s "
                    "but within what the iterations vary by (verdict %s); more iterations tell a small growth from "
                    "noise\n", gt_shown(c->path), gt_fmt_bytes_d(g.slope, b1), gt_fmt_bytes(c->o->fail_above, b2),
                    g.verdict);
        }
    }
    gt_growth_free(&g);
    return code;
}
