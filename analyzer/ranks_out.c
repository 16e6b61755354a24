/* ranks_out.c - what `gputrace ranks` prints: the text table and the --json
 * object over the ranks read by ranks.c (why a rank failed, ranks whose growth
 * differs, ranks missing from WORLD_SIZE, the per-iteration peaks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "format.h"
#include "ranks.h"

/* Why a rank failed, or NULL: it ended on an out-of-memory request, or its
 * trace was never closed (killed), or it ended other than by exit or exec. */
static const char *failure(const struct gt_rank_file *r, char *buf, size_t len)
{
    if (r->oom_ended)
        return "ended on an out-of-memory failure";
    if (!r->end_reason)
        return "trace not closed: the process was killed or crashed, or still runs";
    static const char *const clean[] = {"exit", "_exit", "exec", "fork-child"};
    for (size_t k = 0; k < sizeof clean / sizeof *clean; k++)
        if (!strcmp(r->end_reason, clean[k]))
            return NULL;
    snprintf(buf, len, "ended by %s", r->end_reason);
    return buf;
}

/* Is rank r's growth verdict other than most ranks'? */
static int outlier(const struct gt_ranks *R, const struct gt_rank_file *r)
{
    return R->majority && strcmp(r->verdict, "unknown") && strcmp(r->verdict, R->majority);
}

/* JSON: every missing rank up to MISSING_LISTED, then the count alone */
#define MISSING_LISTED 10000
struct missing_json {
    struct gt_json *j;
    int64_t listed;
};

static void missing_json_range(void *arg, int64_t from, int64_t to)
{
    struct missing_json *m = arg;
    for (int64_t k = from; k <= to && m->listed < MISSING_LISTED; k++, m->listed++)
        gt_json_int(m->j, k);
}

static void missing_text_range(void *arg, int64_t from, int64_t to)
{
    int *any = arg;
    const char *lead = (*any)++ ? ", " : "Missing (no trace given for): rank ";
    if (from == to)
        printf("%s%lld", lead, (long long)from);
    else
        printf("%s%lld-%lld", lead, (long long)from, (long long)to);
}

static void json_rank_list(struct gt_json *j, const char *key, const struct gt_ranks *R, int (*pick)(const struct gt_ranks *, const struct gt_rank_file *))
{
    gt_json_key(j, key);
    gt_json_arr_inline(j);
    for (size_t i = 0; i < R->nmains; i++)
        if (pick(R, R->mains[i])) {
            if (R->mains[i]->rank >= 0)
                gt_json_int(j, R->mains[i]->rank);
            else
                gt_json_str(j, R->mains[i]->path);
        }
    gt_json_arr_end(j);
}

static int is_growing(const struct gt_ranks *R, const struct gt_rank_file *r)
{
    (void)R;
    return !strcmp(r->verdict, "growing");
}

/* Traces with no rank (RANK not set): how many of the mains, and whether
 * any two of them ran at the same time (-1: a start or end not known). Two
 * runs of one script one after the other are no job's ranks. */
static size_t unranked(const struct gt_ranks *R, int *overlap)
{
    size_t n = 0;
    *overlap = 0;
    for (size_t i = 0; i < R->nmains; i++) {
        const struct gt_rank_file *a = R->mains[i];
        if (a->rank >= 0)
            continue;
        n++;
        for (size_t k = 0; k < i; k++) {
            const struct gt_rank_file *b = R->mains[k];
            if (b->rank >= 0 || *overlap)
                continue;
            if (a->start_unix_ns < 0 || b->start_unix_ns < 0 || !a->end_unix_ns || !b->end_unix_ns)
                *overlap = -1;
            else if (a->start_unix_ns < b->end_unix_ns && b->start_unix_ns < a->end_unix_ns)
                *overlap = 1;
        }
    }
    return n;
}

/* Matched iteration indexes that every rank has. */
static size_t iterations_in_all(const struct gt_ranks *R)
{
    size_t n = 0;
    for (size_t q = 0; q < R->niter; q++) {
        size_t i = 0;
        while (i < R->nmains && gt_ranks_iter_peak(R->mains[i], R->iter_index[q]) >= 0)
            i++;
        n += i == R->nmains;
    }
    return n;
}

void gt_ranks_json(const struct gt_ranks *R, struct gt_json *j)
{
    char fb[160];
    gt_json_obj(j);
    gt_json_kint_or_null(j, "world_size", R->world_size);
    gt_json_key(j, "world_sizes_disagree");   /* world_size is then the largest recorded */
    gt_json_bool(j, R->world_size > 0 && R->world_size_least != R->world_size);
    gt_json_kint(j, "hosts", (int64_t)R->hosts);
    gt_json_kint(j, "job_start_unix_ns", R->job_start);
    gt_json_key(j, "ranks");
    gt_json_arr(j);
    for (size_t i = 0; i < R->nmains; i++) {
        const struct gt_rank_file *r = R->mains[i];
        gt_json_obj(j);
        gt_json_kint_or_null(j, "rank", r->rank);
        gt_json_kint_or_null(j, "local_rank", r->local_rank);
        gt_json_kstr(j, "file", r->path);
        gt_json_kstr(j, "host", r->host);
        gt_json_kint_or_null(j, "pid", r->pid);
        gt_json_kint_or_null(j, "device", r->device);
        gt_json_kstr(j, "memory", r->memory);
        gt_json_kint(j, "peak_bytes", r->peak);
        gt_json_key(j, "windowed");   /* a flight recorder's trace: peak_bytes is the whole run's */
        gt_json_bool(j, r->windowed);
        gt_json_kint_or_null(j, "peak_time_ns", r->peak_t);
        gt_json_key(j, "peak_job_time_ns");
        if (r->peak_t >= 0 && r->start_unix_ns > 0)
            gt_json_int(j, r->start_unix_ns - R->job_start + r->peak_t);
        else
            gt_json_null(j);
        gt_json_kint(j, "start_offset_ns", r->start_unix_ns > 0 ? r->start_unix_ns - R->job_start : 0);
        gt_json_kint(j, "final_bytes", r->final);
        gt_json_kstr(j, "growth_verdict", r->verdict);
        gt_json_kstr(j, "growth_memory", r->growth_memory);
        gt_json_key(j, "slope_bytes_per_iteration");
        if (r->has_slope)
            gt_json_double(j, r->slope);
        else
            gt_json_null(j);
        gt_json_kint(j, "iterations", (int64_t)r->niter);
        gt_json_kint(j, "ooms", r->ooms);
        gt_json_kstr(j, "end_reason", r->end_reason);
        gt_json_kstr(j, "failed", failure(r, fb, sizeof fb));
        for (int earlier = 0; earlier < 2; earlier++) {
            gt_json_key(j, earlier ? "earlier_runs" : "children");
            gt_json_arr(j);
            for (size_t k = 0; k < R->nfiles; k++) {
                const struct gt_rank_file *ch = &R->files[k];
                if (ch->parent < 0 || &R->files[ch->parent] != r || ch->earlier_run != earlier)
                    continue;
                gt_json_obj(j);
                gt_json_kstr(j, "file", ch->path);
                gt_json_kint_or_null(j, "pid", ch->pid);
                gt_json_kint_or_null(j, "ppid", ch->ppid);
                gt_json_kint(j, "peak_bytes", ch->peak);
                gt_json_kint(j, "final_bytes", ch->final);
                if (earlier) {   /* it ran while the rank's main file did: the same rank given twice */
                    gt_json_key(j, "concurrent");
                    gt_json_bool(j, ch->concurrent);
                }
                gt_json_obj_end(j);
            }
            gt_json_arr_end(j);
        }
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_key(j, "max_peak_rank");
    if (R->max && R->max->rank >= 0)
        gt_json_int(j, R->max->rank);
    else
        gt_json_null(j);
    gt_json_kstr(j, "max_peak_file", R->max ? R->max->path : NULL);
    /* no rank read: no figure (null), not 0 */
    gt_json_kint_or_null(j, "max_peak_bytes", R->max ? R->max->peak : -1);
    gt_json_kdouble(j, "median_peak_bytes", R->max ? R->median : NAN);
    gt_json_kdouble(j, "peak_skew_bytes", R->max ? (double)R->max->peak - R->median : NAN);
    gt_json_kstr(j, "growth_majority", R->majority);
    json_rank_list(j, "growth_outliers", R, outlier);
    json_rank_list(j, "growing_ranks", R, is_growing);
    gt_json_key(j, "failed_ranks");
    gt_json_arr(j);
    for (size_t i = 0; i < R->nmains; i++) {
        const char *why = failure(R->mains[i], fb, sizeof fb);
        if (!why)
            continue;
        gt_json_obj(j);
        gt_json_kint_or_null(j, "rank", R->mains[i]->rank);
        gt_json_kstr(j, "file", R->mains[i]->path);
        gt_json_kstr(j, "reason", why);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_key(j, "missing_ranks");
    gt_json_arr_inline(j);
    struct missing_json mj = {j, 0};
    int64_t missing = gt_ranks_missing(R, missing_json_range, &mj);
    gt_json_arr_end(j);
    gt_json_kint(j, "missing_rank_count", missing);
    gt_json_kstr(j, "iterations_matched_by", R->by_position ? "position" : "index");
    gt_json_kint(j, "iterations_in_every_rank", (int64_t)iterations_in_all(R));
    int overlap;
    size_t none = unranked(R, &overlap);
    gt_json_key(j, "unranked_one_after_another");   /* no rank, and never at the same time: separate runs */
    gt_json_bool(j, none > 1 && none == R->nmains && overlap == 0);
    gt_json_key(j, "iterations");
    gt_json_arr(j);
    for (size_t q = 0; q < R->niter; q++) {
        gt_json_obj(j);
        gt_json_kint(j, "index", R->iter_index[q]);
        gt_json_key(j, "peak_bytes");   /* in the order of "ranks"; null: that rank has no such iteration */
        gt_json_arr_inline(j);
        for (size_t i = 0; i < R->nmains; i++) {
            int64_t pv = gt_ranks_iter_peak(R->mains[i], R->iter_index[q]);
            if (pv >= 0)
                gt_json_int(j, pv);
            else
                gt_json_null(j);
        }
        gt_json_arr_end(j);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_key(j, "unreadable");
    gt_json_arr(j);
    for (size_t i = 0; i < R->nfiles; i++) {
        if (!R->files[i].code)
            continue;
        gt_json_obj(j);
        gt_json_kstr(j, "file", R->files[i].path);
        gt_json_kint_or_null(j, "rank", R->files[i].rank);
        gt_json_kstr(j, "error", R->files[i].err);
        gt_json_kint(j, "exit_code", R->files[i].code);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_obj_end(j);
}

static const char *rank_name(const struct gt_rank_file *r, char *buf, size_t len)
{
    if (r->rank >= 0)
        snprintf(buf, len, "rank %lld", (long long)r->rank);
    else
        snprintf(buf, len, "%s", gt_basename(r->path));
    return buf;
}

static void text(const struct gt_ranks *R, const struct gt_opts *o)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN], n1[64], n2[64], fb[160];
    printf("%zu rank%s on %zu host%s", R->nmains, gt_s((long long)R->nmains), R->hosts, gt_s((long long)R->hosts));
    if (R->world_size > 0 && R->world_size_least != R->world_size)
        printf(" (the ranks disagree on the world size: %lld to %lld; the ranks missing are counted up to %lld)",
               (long long)R->world_size_least, (long long)R->world_size, (long long)R->world_size);
    else if (R->world_size > 0)
        printf(" (world size %lld)", (long long)R->world_size);
    printf("\n");
    int overlap;
    size_t none = unranked(R, &overlap);
    if (none > 1 && none == R->nmains)
        printf("(no trace has a rank: RANK was not set, so they are compared as processes%s)\n",
               overlap == 0 ? "; they ran one after another, never at the same time: separate runs, not one job's "
                              "ranks?" : "");
    size_t windowed = 0;
    for (size_t i = 0; i < R->nmains; i++)
        windowed += R->mains[i]->windowed != 0;
    if (windowed)
        printf("(flight recorder (GPUTRACE_WINDOW_S): %zu of these traces keep only their last seconds in full; their "
               "peaks are the whole run's, from the interval summaries; growth, iterations and OOMs are the "
               "window's)\n", windowed);
    struct gt_table tb;
    gt_table_init(&tb, 11, 0x7ec);
    gt_table_row(&tb, "rank", "host", "pid", "device", "memory", "peak", "at", "final", "growth", "iterations", "OOMs");
    for (size_t i = 0; i < R->nmains; i++) {
        const struct gt_rank_file *r = R->mains[i];
        char rk[32], pid[32], dev[32], at[GT_FMT_LEN + 8], growth[GT_FMT_LEN + 112], its[32], ooms[32];
        if (r->rank >= 0)
            snprintf(rk, sizeof rk, "%lld", (long long)r->rank);
        else
            snprintf(rk, sizeof rk, "?");
        snprintf(pid, sizeof pid, "%lld", (long long)r->pid);
        if (r->device >= 0)
            snprintf(dev, sizeof dev, "%d", r->device);
        else
            snprintf(dev, sizeof dev, "-");
        /* job time: comparable across ranks */
        if (r->peak_t >= 0)
            snprintf(at, sizeof at, "%s", gt_fmt_ns(r->start_unix_ns - R->job_start + r->peak_t, b2));
        else
            snprintf(at, sizeof at, "-");
        /* growth of another level than the row's (host memory growing beside flat device memory) says which */
        char other[80] = "";
        if (strcmp(r->growth_memory, r->memory))
            snprintf(other, sizeof other, " (%s)", r->growth_memory);
        if (r->has_slope)
            snprintf(growth, sizeof growth, "%s %s/it%s", r->verdict, gt_fmt_bytes_d(r->slope, b3), other);
        else
            snprintf(growth, sizeof growth, "%s%s", r->verdict, other);
        snprintf(its, sizeof its, "%zu", r->niter);
        snprintf(ooms, sizeof ooms, "%lld", (long long)r->ooms);
        gt_table_row(&tb, rk, r->host, pid, dev, r->memory, gt_fmt_bytes(r->peak, b1), at, gt_fmt_bytes(r->final, b3), growth,
                     its, ooms);
    }
    gt_table_print(&tb, stdout, 2);
    printf("  (at: time since the job's first trace started, by each trace's wall clock)\n");
    if (R->max) {
        printf("Highest peak: %s, %s, %s above the median of the ranks' peaks (%s)\n", rank_name(R->max, n1, sizeof n1),
               gt_fmt_bytes(R->max->peak, b1), gt_fmt_bytes_d((double)R->max->peak - R->median, b2), gt_fmt_bytes_d(R->median, b3));
    }
    int any = 0;
    for (size_t i = 0; i < R->nmains; i++)
        if (outlier(R, R->mains[i])) {
            const struct gt_rank_file *r = R->mains[i];
            printf("%s%s is %s (%s per iteration)", any++ ? "; " : "Growth: ", rank_name(r, n1, sizeof n1), r->verdict,
                   r->has_slope ? gt_fmt_bytes_d(r->slope, b1) : "?");
        }
    if (any)
        printf(" while most ranks are %s (gputrace growth FILE for the call sites)\n", R->majority);
    else if (R->majority)
        printf("Growth: every rank with a verdict is %s\n", R->majority);
    else {
        for (size_t i = 0; i < R->nmains; i++)
            if (is_growing(R, R->mains[i]))
                printf("%s%s", any++ ? ", " : "Growth: no verdict most ranks share; growing: ", rank_name(R->mains[i], n1, sizeof n1));
        printf(any ? "\n" : "Growth: no verdict most ranks share\n");
    }
    any = 0;
    for (size_t i = 0; i < R->nmains; i++) {
        const char *why = failure(R->mains[i], fb, sizeof fb);
        if (why)
            printf("%s%s: %s\n", any++ ? "        " : "Failed: ", rank_name(R->mains[i], n1, sizeof n1), why);
    }
    if (!any)
        printf("Failed: none\n");
    for (size_t i = 0, shown = 0; i < R->nfiles; i++) {   /* given, left out (said on stderr): not missing */
        const struct gt_rank_file *f = &R->files[i];
        if (!f->code)
            continue;
        printf("%s", shown++ ? "          " : "Not read: ");
        if (f->rank >= 0)
            printf("rank %lld: ", (long long)f->rank);
        printf("%s (%s)\n", f->path, f->err);
    }
    any = 0;
    gt_ranks_missing(R, missing_text_range, &any);
    if (any)
        printf("\n");
    for (size_t k = 0; k < R->nfiles; k++) {
        const struct gt_rank_file *ch = &R->files[k];
        if (ch->parent < 0)
            continue;
        printf("%s %s: pid %lld (%s), peak %s, final %s%s\n",
               ch->concurrent ? "Running at the same time as" : ch->earlier_run ? "Earlier run of" : "Child of",
               rank_name(&R->files[ch->parent], n2, sizeof n2), (long long)ch->pid, ch->path,
               gt_fmt_bytes(ch->peak, b1), gt_fmt_bytes(ch->final, b2),
               ch->concurrent ? " (the same rank recorded by two processes at once: a launcher that gave it twice?)"
                              : "");
    }
    if (!o->all_iterations) {
        size_t all = iterations_in_all(R);
        if (R->niter && all == R->niter)
            printf("%zu iteration%s matched by %s across ranks (--all-iterations lists their peaks)\n", R->niter,
                   gt_s((long long)R->niter), R->by_position ? "position (a rank's indices repeat)" : "index");
        else if (R->niter)
            printf("%zu iteration%s matched by %s across ranks, of %zu that any rank has (--all-iterations lists "
                   "their peaks)\n", all, gt_s((long long)all),
                   R->by_position ? "position (a rank's indices repeat)" : "index", R->niter);
        return;
    }
    struct gt_table it;
    int ncols = (int)R->nmains + 1;
    if (ncols > 32)
        ncols = 32;   /* wider than any screen: --json has them all */
    gt_table_init(&it, ncols, ~0u);
    char **cells = gt_xcalloc((size_t)ncols, sizeof *cells);
    for (int c = 0; c < ncols; c++)
        cells[c] = gt_xmalloc(64);
    snprintf(cells[0], 64, "iteration");
    for (int c = 1; c < ncols; c++)
        rank_name(R->mains[c - 1], cells[c], 64);
    gt_table_row_v(&it, cells);
    for (size_t q = 0; q < R->niter; q++) {
        snprintf(cells[0], 64, "%lld", (long long)R->iter_index[q]);
        for (int c = 1; c < ncols; c++) {
            int64_t pv = gt_ranks_iter_peak(R->mains[c - 1], R->iter_index[q]);
            snprintf(cells[c], 64, "%s", pv >= 0 ? gt_fmt_bytes(pv, b1) : "-");
        }
        gt_table_row_v(&it, cells);
    }
    printf("Peak of each iteration%s, rank by rank:\n", R->by_position ? " (by position: a rank's indices repeat)" : "");
    if ((size_t)ncols - 1 < R->nmains)
        printf("  (the first %d of %zu ranks: --json has every one)\n", ncols - 1, R->nmains);
    gt_table_print(&it, stdout, 2);
    for (int c = 0; c < ncols; c++)
        free(cells[c]);
    free(cells);
}

/* gputrace ranks */
int gt_cmd_ranks(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    const struct gt_opts *o = &a->base;
    struct gt_ranks R;
    int status = gt_ranks_read(&R, a->files, a->nfiles, o);
    for (size_t i = 0; i < R.nfiles; i++)
        if (R.files[i].code)
            fprintf(stderr, "gputrace: %s: %s (left out)\n", gt_shown(R.files[i].path), R.files[i].err);
    if (o->json) {
        struct gt_json j;
        gt_json_init(&j, stdout);
        gt_ranks_json(&R, &j);
        printf("\n");
    } else if (R.nmains) {
        text(&R, o);
    }
    gt_ranks_free(&R);
    return status;
}
