/* sweep_out.c - gputrace sweep's result: the table of runs, the fit, the
 * prediction, the proof (with the margin and the unsteady sizes) in words,
 * or the same as JSON (README: the sweep's JSON). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "json.h"
#include "sweep_cmd.h"

int64_t gt_sweep_available(const struct sweep *s)
{
    /* a failure's shortfall and NVML's figure measure the same memory
     * (the context, modules, other processes): the larger of the two */
    int64_t beyond = s->untraced > s->unaccounted ? s->untraced : s->unaccounted;
    return s->total > 0 ? s->total - s->outside - beyond : -1;
}

const char *gt_sweep_phase_name(enum gt_sweep_phase p)
{
    return p == GT_SWEEP_MODEL ? "model" : p == GT_SWEEP_SEARCH ? "search" : p == GT_SWEEP_MARGIN ? "margin" : "repeat";
}

/* The proof so far, in words. */
/* The sweep stopped because the command's memory did not follow the batch
 * size: what ran proves nothing of a largest batch. */
static int batch_size_ignored(const struct sweep *s)
{
    return s->stopped && !strcmp(s->stopped, "batch-size-ignored");
}

static void proof_text(const struct sweep *s, char *buf, size_t len)
{
    const struct gt_sweep_plan *p = &s->plan;
    if (batch_size_ignored(s)) {
        snprintf(buf, len, "unknown: the runs' memory does not follow the batch size (up to %lld: see stopped, "
                 "below), so they prove no largest one", (long long)p->lo);
        return;
    }
    int fits = p->lo ? gt_sweep_plan_fits_at(p, p->lo) : 0;
    char times[80];
    if (fits >= p->fits_needed)
        snprintf(times, sizeof times, fits == 2 ? " twice" : " %d times", fits);
    else if (fits == 1 && p->fits_needed == 2)
        snprintf(times, sizeof times, " once, not yet repeated");
    else
        snprintf(times, sizeof times, " %d of the %d times asked (--repeat)", fits, p->fits_needed);
    if (p->settle && p->hi == p->lo + 1) {   /* the margin below a proven lo */
        int room = gt_sweep_plan_fits_at(p, p->settle);
        char ran[64];
        snprintf(ran, sizeof ran, room == 2 ? "twice" : "%d of the %d times needed", room, p->fits_needed);
        snprintf(buf, len, "%lld (%s with room: %lld ran %s; %lld ran%s, %lld ran out of memory; see margin)",
                 (long long)p->settle, room >= p->fits_needed ? "proven" : "not proven", (long long)p->settle, ran,
                 (long long)p->lo, times, (long long)p->hi);
        return;
    }
    if (p->lo && p->hi != GT_SWEEP_NONE && p->hi == p->lo + 1)
        snprintf(buf, len, "%lld (%s: %lld ran%s, %lld ran out of memory)", (long long)p->lo,
                 fits >= p->fits_needed ? "proven" : "not proven", (long long)p->lo, times, (long long)p->hi);
    else if (p->lo && p->hi != GT_SWEEP_NONE)
        snprintf(buf, len, "not proven: between %lld (ran) and %lld (%lld ran out of memory)", (long long)p->lo,
                 (long long)p->hi - 1, (long long)p->hi);
    else if (p->lo)
        snprintf(buf, len, "not proven: at least %lld (ran); no larger batch size ran out of memory", (long long)p->lo);
    else if (p->hi == 1)
        snprintf(buf, len, "none: batch size 1 ran out of memory");
    else if (p->hi != GT_SWEEP_NONE)
        snprintf(buf, len, "not proven: below %lld (ran out of memory); no smaller batch size ran", (long long)p->hi);
    else
        snprintf(buf, len, "unknown: no run finished");
}

/* Runs of batch size bs that the search took (a run whose trace could not be
 * read is not one): how many, and how many fit. */
static void tally(const struct sweep *s, int64_t bs, int *runs, int *fits)
{
    *runs = *fits = 0;
    for (size_t i = 0; i < s->plan.n; i++)
        if (s->plan.pts[i].batch_size == bs) {
            ++*runs;
            *fits += !s->plan.pts[i].oom;
        }
}

/* Is the search's i-th run the first of a batch size that both fit and ran
 * out of memory? (Memory near the boundary can differ from run to run: a
 * pool's fragmentation, the order of a library's lazy workspaces. The answer
 * is the largest batch size that fit every time it ran; these are said apart.) */
static int unsteady_first(const struct sweep *s, size_t i, int *runs, int *fits)
{
    for (size_t k = 0; k < i; k++)
        if (s->plan.pts[k].batch_size == s->plan.pts[i].batch_size)
            return 0;
    tally(s, s->plan.pts[i].batch_size, runs, fits);
    return *fits && *fits < *runs;
}

static void print_unsteady_text(const struct sweep *s)
{
    int n = 0, runs, fits;
    for (size_t i = 0; i < s->plan.n; i++)
        if (unsteady_first(s, i, &runs, &fits))
            printf("%s%lld (fit in %d of %d runs)", n++ ? ", " : "  unsteady: batch size ",
                   (long long)s->plan.pts[i].batch_size, fits, runs);
    if (n)
        printf("\n  memory near the boundary differs from run to run; the answer below is the largest batch size\n"
               "  that fit every time it ran, and one that fit only sometimes is not counted as fitting\n");
}

/* Runs that failed in an allocation outside a stream-ordered pool which held,
 * beyond its bytes in use, enough for it (gputrace oom's pool_unused_bytes):
 * the pool's keeping, not the batch's size, failed them. */
static void print_pool_kept_text(const struct sweep *s)
{
    char b1[GT_FMT_LEN];
    int n = 0;
    const struct gt_sweep_run *most = NULL;
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gt_sweep_run *r = &s->runs[i];
        if (!r->oom || r->pool_kept < 0)
            continue;
        printf("%s%d (batch size %lld, %s)", n++ ? ", " : "  failed outside the pool: run ", r->number,
               (long long)r->batch_size, r->kept_call);
        if (!most || r->pool_kept > most->pool_kept)
            most = r;
    }
    if (n)
        printf("\n  (each while the pool held beyond its bytes in use, as last read, more than it was short by: up to\n"
               "  %s in run %d. A pool that keeps what is freed in it, as PyTorch's backend:cudaMallocAsync does, gives none\n"
               "  of it to an allocation outside it, such as a library's handle or workspace made after the pool grew;\n"
               "  torch.cuda.empty_cache() before it gives the device back the chunks no allocation holds: gputrace oom %s)\n",
               gt_fmt_bytes(most->pool_kept, b1), most->number, most->kept_trace ? most->kept_trace : most->trace);
}

/* Runs whose pool's own request failed while the pool held at least as much
 * unused (gputrace oom's pool_split_bytes): how the pool's memory split, not
 * only the batch's size, failed them (16 of 17 such failures of a conv net
 * near its limit on an H200, tests/gpu/RESULTS.md session 32). */
static void print_pool_split_text(const struct sweep *s)
{
    char b1[GT_FMT_LEN];
    int n = 0;
    const struct gt_sweep_run *most = NULL;
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gt_sweep_run *r = &s->runs[i];
        if (!r->oom || r->pool_split < 0)
            continue;
        if (n < 6)
            printf("%s%d (batch size %lld)", n ? ", " : "  failed in the pool while it held enough unused: run ",
                   r->number, (long long)r->batch_size);
        n++;
        if (!most || r->pool_split > most->pool_split)
            most = r;
    }
    if (n > 6)
        printf(" and %d more", n - 6);
    if (n)
        printf("\n  (at least %s unused in run %d: the pool's free memory lay in pieces none large enough for the\n"
               "  request, or was freed on a stream the request did not wait for, and the device had too little left\n"
               "  to grow it. How a pool's memory splits is in no trace and can differ between runs: gputrace oom %s)\n",
               gt_fmt_bytes(most->pool_split, b1), most->number, most->split_trace ? most->split_trace : most->trace);
}

/* The margin (sweep.h), when one was taken. */
static void print_margin_text(const struct sweep *s)
{
    const struct gt_sweep_plan *p = &s->plan;
    if (!p->marginal)
        return;
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
    int fits = gt_sweep_plan_fits_at(p, p->marginal);
    if (p->room_why == GT_SWEEP_ROOM_DRAW) {
        char b3[GT_FMT_LEN], where[GT_FMT_LEN + 64];
        if (p->left > 0)
            snprintf(where, sizeof where, "%s short of the end of what was available at its peak",
                     gt_fmt_bytes(p->left, b3));
        else if (p->left == 0)
            snprintf(where, sizeof where, "at the end of what was available at its peak");
        else
            snprintf(where, sizeof where, "how far from the end at its peak not known");
        printf("  margin: batch size %lld fit in all %d of its runs, %s.\n"
               "  Under a stream-ordered pool the driver places the same calls differently from one fresh run to\n"
               "  the next, and a pool's reservation at one batch size has varied by up to %.1f%% of its bytes in\n"
               "  use (a conv net on an H200: 132.94 and 138.81 GiB for 116.20 in use; a size above it fit 4 of 8\n"
               "  runs), a draw a sweep's few runs seldom show. Drawing %s more, %lld would pass the end by\n"
               "  %s, %.1f samples of %s.\n  ",
               (long long)p->marginal, fits, where, 100.0 * GT_SWEEP_POOL_DRAW, gt_fmt_bytes(p->draw, b1),
               (long long)p->marginal, gt_fmt_bytes(p->room, b2), (double)p->room / p->per_sample,
               gt_fmt_bytes_d(p->per_sample, b3));
    } else if (p->room_why == GT_SWEEP_ROOM_SLACK)   /* the pool's slack asked for more than lo's spread */
        printf("  margin: batch size %lld fit in all %d of its runs, its pool holding %.1f%% of in use beyond a fixed\n"
               "  part at most, but a run of %lld held %.1f%%, and a fresh run draws its slack by chance: with that\n"
               "  much more and as much again, %lld would need %s more than it peaked at, %.1f samples of %s.\n  ",
               (long long)p->marginal, fits, 100.0 * p->slack_own, (long long)p->slack_max_bs, 100.0 * p->slack_max,
               (long long)p->marginal, gt_fmt_bytes(p->room, b1), (double)p->room / p->per_sample,
               gt_fmt_bytes_d(p->per_sample, b2));
    else
        printf("  margin: batch size %lld fit in all %d of its runs, but their peaks differed by %s, %.1f samples of %s:\n"
               "  whether a fresh run there fits is a matter of chance. ", (long long)p->marginal, fits,
               gt_fmt_bytes(p->spread, b1), (double)p->spread / p->per_sample, gt_fmt_bytes_d(p->per_sample, b2));
    if (p->settle)
        printf("The answer is %lld, which leaves that much room\n", (long long)p->settle);
    else
        printf("The size that left that much room ran out of memory, and the\n"
               "  search went on below it\n");
}

/* What the answer's runs left of the device at their peaks: the least of
 * them (-1 unknown), a sample's bytes at or below the answer (0 unknown),
 * and the batch size that would leave a sample at least, by that slope
 * (0: the answer already does, or none would). */
struct headroom {
    int64_t answer, bytes, below;
    double sample;
};

static void headroom_of(const struct sweep *s, struct headroom *h)
{
    memset(h, 0, sizeof *h);
    h->bytes = -1;
    h->answer = batch_size_ignored(s) ? 0 : gt_sweep_plan_answer(&s->plan);   /* (no answer: no headroom at one) */
    if (!h->answer)
        return;
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gt_sweep_run *r = &s->runs[i];
        if (r->batch_size != h->answer || r->oom || r->exit_status || r->headroom < 0)
            continue;
        if (h->bytes < 0 || r->headroom < h->bytes)
            h->bytes = r->headroom;
    }
    h->sample = gt_sweep_plan_sample(&s->plan, h->answer);
    if (h->bytes < 0 || !(h->sample > 0) || (double)h->bytes >= h->sample)
        return;
    int64_t k = (int64_t)ceil((h->sample - (double)h->bytes) / h->sample - 1e-9);
    h->below = h->answer - k >= 1 ? h->answer - k : 0;
}

static void print_headroom_text(const struct sweep *s, const struct headroom *h)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
    int pool = !strcmp(s->level, "pool");
    if (h->bytes < 0) {
        if (pool && gt_sweep_plan_verified(&s->plan) && !s->plan.marginal)
            printf("  under a stream-ordered pool the boundary can move between fresh runs and machines (a transformer\n"
                   "  on H100s: 148 fit in 3 of 4 fresh runs, 149 in 1 of 3 and 150 in 1 of 2 on one machine; untraced\n"
                   "  boundaries 147 to 150 (2%%) on the machines tried): train a little below it\n");
        return;
    }
    printf("  headroom: at its peak, the tightest run of %lld left %s of the device unused (NVML's total less\n"
           "  what the trace and NVML show held)", (long long)h->answer, gt_fmt_bytes(h->bytes, b1));
    if (h->sample > 0 && (double)h->bytes < h->sample)
        printf(", %.1f of a sample (%s)", (double)h->bytes / h->sample, gt_fmt_bytes_d(h->sample, b2));
    else if (h->sample > 0)
        printf(", %.1f samples of %s", (double)h->bytes / h->sample, gt_fmt_bytes_d(h->sample, b2));
    printf("\n");
    const struct gt_sweep_plan *p = &s->plan;
    if (h->sample > 0 && (double)h->bytes >= h->sample && !p->marginal && p->hi == h->answer + 1) {
        /* a sample's room, and the next size still failed: say what its trace showed */
        int64_t need = -1, top = -1;
        int said = 0;   /* a run of hi ended on the framework's own error */
        for (size_t i = 0; i < s->nruns; i++) {
            const struct gt_sweep_run *r = &s->runs[i];
            said |= r->batch_size == p->hi && r->oom_said;
            if (r->batch_size == p->hi && r->oom && r->need_lb > need)
                need = r->need_lb;
            if (r->batch_size == h->answer && !r->oom && r->peak > top)
                top = r->peak;
        }
        if (top >= 0 && need - top > h->bytes)
            printf("  yet %lld ran out of memory: its trace showed it needed at least %s, %s more than %lld's peak\n"
                   "  (%.1f samples): one more sample costs more than a sample there (a library's larger workspace or\n"
                   "  another algorithm for the larger batch, or the allocator's new segment)\n",
                   (long long)p->hi, gt_fmt_bytes(need, b1), gt_fmt_bytes(need - top, b2), (long long)h->answer,
                   (double)(need - top) / h->sample);
        else if (top >= 0 && need > top)
            printf("  yet %lld ran out of memory: its trace showed it needed at least %s more than %lld's peak, within\n"
                   "  the room left; the rest of what failed it is not in its trace\n",
                   (long long)p->hi, gt_fmt_bytes(need - top, b1), (long long)h->answer);
        else if (need < 0 && said)
            printf("  yet %lld ran out of memory by the program's own error, with no CUDA call failed: the framework\n"
                   "  refused it (a limit of its own, such as a memory fraction); its trace shows no need\n",
                   (long long)p->hi);
        else
            printf("  yet %lld ran out of memory: what was left at the peak is no room for one more sample here\n",
                   (long long)p->hi);
    }
    if (!pool || !h->below)
        return;
    printf("  less than a sample: under a stream-ordered pool the driver can place the same calls differently\n"
           "  in a fresh run (a transformer on an H200: identical runs' pools reserved 1.0 GiB apart, and its\n"
           "  largest, 0.15 GiB from the end, fit 10 of 11 fresh runs), so a run of %lld may fail; %lld leaves\n"
           "  %s by the sample's slope\n", (long long)h->answer, (long long)h->below,
           gt_fmt_bytes_d((double)h->bytes + (double)(h->answer - h->below) * h->sample, b3));
}

static void print_fit_text(const struct sweep *s)
{
    const struct gt_sweep_fit *f = &s->model;
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
    if (!f->fit.ok) {
        printf("  fit: none (%zu batch size%s ran in phase 1; 2 are needed)\n", f->points, f->points == 1 ? "" : "s");
        return;
    }
    printf("  fit: peak = %s + %s x batch_size (R^2 = %.4f, batch sizes %lld to %lld)\n", gt_fmt_bytes_d(f->fit.intercept, b1),
           gt_fmt_bytes_d(f->fit.slope, b2), f->fit.r2, (long long)f->from_bs, (long long)f->to_bs);
    if (f->linear)
        printf("       linear: one line holds every batch size of phase 1 (largest residual %s)\n",
               gt_fmt_bytes_d(f->max_residual, b3));
    else
        printf("       not linear: one line through all %zu batch sizes misses by up to %s; fitted over the largest %zu,\n"
               "       which one line holds\n", f->points, gt_fmt_bytes_d(f->max_residual, b3), f->used);
}

/* An argument as a shell would take it back: as it is where nothing in it
 * is special, else in single quotes (sh -c "echo hi; exit 0" read as four
 * words: a helper's probe). */
static void print_shell_word(const char *w)
{
    int plain = *w != 0;
    for (const char *c = w; *c && plain; c++)
        plain = isalnum((unsigned char)*c) || strchr("_@%+=:,./-{}", *c);
    if (plain) {
        fputs(w, stdout);
        return;
    }
    putchar('\'');
    for (const char *c = w; *c; c++) {
        if (*c == '\'')
            fputs("'\\''", stdout);
        else
            gt_fputs_shown((char[]){*c, 0}, stdout);   /* (a newline as \n: one line) */
    }
    putchar('\'');
}

void gt_sweep_print_text(const struct sweep *s, double total_s)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
    printf("Sweep of:");
    for (char **arg = s->a->files; *arg; arg++) {
        putchar(' ');
        print_shell_word(*arg);
    }
    printf("\n  traces in %s\n", s->dir);
    struct gt_table tb;
    gt_table_init(&tb, 7, 0x6b);
    gt_table_row(&tb, "run", "batch", "phase", "peak", "result", "exit", "seconds");
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gt_sweep_run *r = &s->runs[i];
        char num[16], bs[32], ex[16], sec[32];
        snprintf(num, sizeof num, "%d", r->number);
        snprintf(bs, sizeof bs, "%lld", (long long)r->batch_size);
        snprintf(ex, sizeof ex, "%d", r->exit_status);
        snprintf(sec, sizeof sec, "%.2f", r->seconds);
        gt_table_row(&tb, num, bs, gt_sweep_phase_name(r->phase), r->peak >= 0 && !r->oom ? gt_fmt_bytes(r->peak, b1) : "-",
                     r->timed_out ? "timeout" : r->oom ? "OOM" : r->exit_status || !r->ntraces ? "failed" : "fits", ex, sec);
    }
    gt_table_print(&tb, stdout, 2);
    printf("  peaks are %s bytes, the level the program's allocator shows\n", s->level[0] ? s->level : "device");
    int unread = 0, pooled = 0;
    for (size_t i = 0; i < s->nruns; i++) {
        unread += s->runs[i].pool_unread;
        pooled += s->runs[i].in_use >= 0;
    }
    if (unread)
        printf("  the pool's reservation was not read in %d of %d runs: their peaks are its bytes in use, without\n"
               "  the slack it reserves beyond them, so the model may predict too large a batch (trace with\n"
               "  a shim that reads pools: memory_pools)\n", unread, pooled);
    else if (pooled)
        printf("  a pool's peak is its reservation at its highest (the device gives it that, not what it uses)\n");
    print_fit_text(s);
    if (s->total > 0) {
        printf("  device: %s (devices table); held outside the fitted level: %s", gt_fmt_bytes(s->total, b1),
               gt_fmt_bytes(s->outside, b2));
        if (s->untraced >= 0 || s->unaccounted) {
            printf("\n  held outside the trace (the CUDA context, modules, other processes):");
            if (s->untraced >= 0)
                printf(" %s by NVML's readings%s", gt_fmt_bytes(s->untraced, b3), s->unaccounted ? "," : "");
            if (s->unaccounted)
                printf("%s%s when a run failed", s->untraced >= 0 ? "\n  " : " ", gt_fmt_bytes(s->unaccounted, b3));
        }
        printf("\n  available to the fitted level: %s", gt_fmt_bytes(gt_sweep_available(s), b1));
        if (s->untraced < 0)
            printf(" (the CUDA context and other processes are not in a trace, and NVML\n"
                   "  could not be read: only what a failed run shows of them is counted)");
        printf("\n");
    } else {
        printf("  device size unknown (no devices row): no prediction, the search doubles and bisects\n");
    }
    if (s->predicted >= 0)
        printf("  predicted largest batch size: %lld\n", (long long)s->predicted);
    else if (s->modelled)
        printf("  predicted largest batch size: none (%s)\n",
               s->model.fit.ok && !(s->model.fit.slope > 0) ? "the peak does not grow with the batch size"
               : s->modelled_after_stop ? "the sweep stopped in its model phase, before it predicts: see stopped"
               : s->total < 0           ? "needs the device size"
                                        : "needs a fit whose peak grows");
    print_unsteady_text(s);
    print_pool_kept_text(s);
    print_pool_split_text(s);
    char proof[300];
    proof_text(s, proof, sizeof proof);
    printf("  largest batch size that fits: %s\n", proof);
    print_margin_text(s);
    struct headroom h;
    headroom_of(s, &h);
    print_headroom_text(s, &h);
    printf("  runs: %zu, %.1f s in all\n", s->nruns, total_s);
    if (s->stopped)
        printf("  stopped: %s\n", s->why);
}

void gt_sweep_print_json(const struct sweep *s, double total_s)
{
    struct gt_json j;
    gt_json_init(&j, stdout);
    gt_json_obj(&j);
    gt_json_key(&j, "command");
    gt_json_arr_inline(&j);
    for (char **arg = s->a->files; *arg; arg++)
        gt_json_str(&j, *arg);
    gt_json_arr_end(&j);
    gt_json_kstr(&j, "dir", s->dir);
    gt_json_kstr(&j, "memory", s->level[0] ? s->level : NULL);
    gt_json_key(&j, "runs");
    gt_json_arr(&j);
    for (size_t i = 0; i < s->nruns; i++) {
        const struct gt_sweep_run *r = &s->runs[i];
        gt_json_obj(&j);
        gt_json_kint(&j, "run", r->number);
        gt_json_kint(&j, "batch_size", r->batch_size);
        gt_json_kstr(&j, "phase", gt_sweep_phase_name(r->phase));
        gt_json_key(&j, "from_model");
        gt_json_bool(&j, r->from_model);
        gt_json_kint_or_null(&j, "peak_bytes", r->oom ? -1 : r->peak);
        gt_json_kint_or_null(&j, "pool_in_use_bytes", r->oom ? -1 : r->in_use);
        gt_json_key(&j, "pool_read");
        if (r->in_use >= 0 && !r->oom)
            gt_json_bool(&j, !r->pool_unread);
        else
            gt_json_null(&j);
        gt_json_kint_or_null(&j, "needed_at_least_bytes", r->oom ? r->need_lb : -1);
        gt_json_kint_or_null(&j, "pool_unused_bytes", r->oom ? r->pool_kept : -1);
        gt_json_kint_or_null(&j, "pool_split_bytes", r->oom ? r->pool_split : -1);
        gt_json_key(&j, "timed_out");
        gt_json_bool(&j, r->timed_out);
        gt_json_key(&j, "oom");
        gt_json_bool(&j, r->oom);
        gt_json_kstr(&j, "oom_from", !r->oom ? NULL : r->oom_said ? "message" : "trace");
        gt_json_kint(&j, "exit_status", r->exit_status);
        gt_json_kdouble(&j, "seconds", r->seconds);
        gt_json_kstr(&j, "trace", r->trace);
        gt_json_kint(&j, "traces", r->ntraces);
        gt_json_kstr(&j, "stderr", r->stderr_path);
        gt_json_obj_end(&j);
    }
    gt_json_arr_end(&j);
    gt_json_key(&j, "fit");
    if (s->model.fit.ok) {
        gt_json_obj(&j);
        gt_json_kdouble(&j, "fixed_bytes", s->model.fit.intercept);
        gt_json_kdouble(&j, "per_sample_bytes", s->model.fit.slope);
        gt_json_kdouble(&j, "r2", s->model.fit.r2);
        gt_json_key(&j, "linear");
        gt_json_bool(&j, s->model.linear);
        gt_json_kdouble(&j, "max_residual_bytes", s->model.max_residual);
        gt_json_kint(&j, "from_batch_size", s->model.from_bs);
        gt_json_kint(&j, "to_batch_size", s->model.to_bs);
        gt_json_kint(&j, "batch_sizes_fitted", (int64_t)s->model.used);
        gt_json_obj_end(&j);
    } else {
        gt_json_null(&j);
    }
    gt_json_kint_or_null(&j, "device_total_bytes", s->total);
    gt_json_kint(&j, "outside_bytes", s->outside);
    gt_json_kint(&j, "unaccounted_bytes", s->unaccounted);
    gt_json_kint_or_null(&j, "untraced_bytes", s->untraced);
    gt_json_kint_or_null(&j, "available_bytes", gt_sweep_available(s));
    gt_json_kint_or_null(&j, "predicted_max_batch_size", s->predicted);
    int64_t answer = batch_size_ignored(s) ? 0 : gt_sweep_plan_answer(&s->plan);
    gt_json_kint_or_null(&j, "max_batch_size", answer ? answer : -1);
    gt_json_kint_or_null(&j, "min_failing_batch_size", s->plan.hi == GT_SWEEP_NONE ? -1 : s->plan.hi);
    gt_json_key(&j, "verified");
    gt_json_bool(&j, gt_sweep_plan_verified(&s->plan));
    gt_json_kint(&j, "fits_required", s->plan.fits_needed);
    gt_json_kint(&j, "max_batch_size_fits", answer ? gt_sweep_plan_fits_at(&s->plan, answer) : 0);
    gt_json_key(&j, "margin");
    if (s->plan.marginal) {
        gt_json_obj(&j);
        gt_json_kint(&j, "batch_size", s->plan.marginal);   /* fit in every run, its peaks spread */
        gt_json_kint(&j, "fits", gt_sweep_plan_fits_at(&s->plan, s->plan.marginal));
        gt_json_kint(&j, "spread_bytes", s->plan.spread);
        gt_json_kint(&j, "room_bytes", s->plan.room);   /* left above its highest peak: spread, slack or draw */
        gt_json_kstr(&j, "room_for", s->plan.room_why == GT_SWEEP_ROOM_DRAW    ? "pool_draw"
                                     : s->plan.room_why == GT_SWEEP_ROOM_SLACK ? "pool_slack"
                                                                               : "spread");
        gt_json_kint_or_null(&j, "pool_draw_bytes", s->plan.draw > 0 ? s->plan.draw : -1);
        gt_json_kint_or_null(&j, "left_bytes", s->plan.left);
        gt_json_kdouble(&j, "per_sample_bytes", s->plan.per_sample);
        gt_json_key(&j, "taken");   /* false: the margin's size failed and the search went below it */
        gt_json_bool(&j, s->plan.settle != 0);
        gt_json_obj_end(&j);
    } else {
        gt_json_null(&j);
    }
    struct headroom h;
    headroom_of(s, &h);
    gt_json_key(&j, "headroom");   /* what the answer's tightest run left of the device at its peak */
    if (h.bytes >= 0) {
        gt_json_obj(&j);
        gt_json_kint(&j, "batch_size", h.answer);
        gt_json_kint(&j, "bytes", h.bytes);
        if (h.sample > 0) {
            gt_json_kdouble(&j, "sample_bytes", h.sample);
            gt_json_kdouble(&j, "samples", (double)h.bytes / h.sample);
        } else {
            gt_json_kint_or_null(&j, "sample_bytes", -1);
            gt_json_kint_or_null(&j, "samples", -1);
        }
        gt_json_kint_or_null(&j, "one_sample_batch_size", h.below ? h.below : -1);
        gt_json_obj_end(&j);
    } else {
        gt_json_null(&j);
    }
    gt_json_key(&j, "pool_slack");   /* over the large runs that fit, once the largest is proven */
    if (s->plan.slack_runs >= 2) {
        gt_json_obj(&j);
        gt_json_kdouble(&j, "min_share", s->plan.slack_min);
        gt_json_kdouble(&j, "max_share", s->plan.slack_max);
        gt_json_kint(&j, "max_share_batch_size", s->plan.slack_max_bs);
        gt_json_kdouble(&j, "largest_share", s->plan.slack_own);   /* the highest of the largest's own runs */
        gt_json_kint(&j, "runs", s->plan.slack_runs);
        gt_json_obj_end(&j);
    } else {
        gt_json_null(&j);
    }
    gt_json_key(&j, "unsteady");
    gt_json_arr(&j);
    for (size_t i = 0; i < s->plan.n; i++) {
        int runs, fits;
        if (!unsteady_first(s, i, &runs, &fits))
            continue;
        gt_json_obj(&j);
        gt_json_kint(&j, "batch_size", s->plan.pts[i].batch_size);
        gt_json_kint(&j, "runs", runs);
        gt_json_kint(&j, "fits", fits);
        gt_json_obj_end(&j);
    }
    gt_json_arr_end(&j);
    gt_json_kint(&j, "runs_used", (int64_t)s->nruns);
    gt_json_kdouble(&j, "total_seconds", total_s);
    gt_json_kstr(&j, "stopped", s->stopped);
    gt_json_kstr(&j, "stopped_why", s->stopped ? s->why : NULL);
    gt_json_obj_end(&j);
    gt_json_done(&j);
}
