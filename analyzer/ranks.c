/* ranks.c - `gputrace ranks`: one answer for a job of several ranks (one trace
 * per rank, from torchrun, srun, mpirun): per rank its peak and when, final
 * bytes, growth verdict, iterations and out-of-memory failures, computed by
 * the per-file reports' own code (peak.c, growth.c, oom.c); then the job's
 * view: the rank with the highest peak and how far above the median it is,
 * ranks whose growth differs from the rest, ranks that failed, and the
 * per-iteration peaks side by side. Also what `gputrace report` draws; the
 * text and JSON are in ranks_out.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "format.h"
#include "ranks.h"

const char gt_help_ranks[] =
    "usage: gputrace ranks [--json] [OPTIONS] TRACE.db...\n"
    "\n"
    "The traces of one job, one file per rank (GPUTRACE_OUTPUT with %r), read\n"
    "together: per rank its host, pid, device, peak and when, final bytes,\n"
    "growth verdict and slope, iterations and out-of-memory failures; then the\n"
    "rank with the highest peak and how far it is above the median of the\n"
    "ranks' peaks (with an even count, the mean of the middle two), ranks whose\n"
    "growth verdict differs from most, ranks that failed (out of memory, killed\n"
    "or not closed) and ranks missing from WORLD_SIZE.\n"
    "\n"
    "A rank with several files (DataLoader or compile workers inherit RANK) is\n"
    "its main process's file: the latest started of those whose parent is no\n"
    "other file of that rank on the same host; the files that descend from it\n"
    "are listed as its children, any other as an earlier run of the rank (the\n"
    "job run again with the same names, a restart, a rank's exec). Times are\n"
    "each trace's own (peak_time_ns) and the job's (peak_job_time_ns: from the\n"
    "earliest rank's start, by the wall clock each trace recorded at its start,\n"
    "so ranks on different hosts line up as far as the hosts' clocks agree).\n"
    "Iterations are matched across ranks by index (by position where a rank's\n"
    "indices repeat, as a marker index restarting each epoch).\n"
    "\n"
    "  --all-iterations  text adds the peak of each iteration, rank by rank\n"
    "                    (--json always has it)\n"
    "  --memory, --device, --iteration, --iterations, --warmup\n"
    "                    as for the reports (gputrace --help; --warmup: gputrace growth --help)\n"
    "A file that cannot be read is named on stderr and left out; the exit status\n"
    "is then the first such file's.\n";

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_main(const void *a, const void *b)
{
    const struct gt_rank_file *x = *(struct gt_rank_file *const *)a, *y = *(struct gt_rank_file *const *)b;
    int64_t rx = x->rank < 0 ? INT64_MAX : x->rank, ry = y->rank < 0 ? INT64_MAX : y->rank;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* What one trace says, through the per-file reports. */
static int read_one(struct gt_rank_file *r, const char *path, const struct gt_opts *o)
{
    struct gt_ctx c;
    r->path = path;
    r->rank = r->local_rank = r->world_size = r->pid = r->ppid = -1;
    r->code = gt_ctx_open(&c, path, o);
    /* who it was, also of a file left out (its rank was given: not missing) */
    const struct gt_process *p = &c.t.proc;
    if (p->present) {
        r->rank = p->rank;
        r->local_rank = p->local_rank;
        r->world_size = p->world_size;
        r->pid = p->pid;
        r->ppid = p->ppid;
        r->start_unix_ns = p->start_unix_ns;
        r->end_reason = p->end_reason ? gt_xstrdup(p->end_reason) : NULL;
        int64_t end = gt_trace_end_ns(&c.t);
        r->end_unix_ns = p->start_unix_ns > 0 && end > 0 && end < INT64_MAX - p->start_unix_ns ? p->start_unix_ns + end : 0;
    }
    r->host = gt_xstrdup(p->present && p->host ? p->host : "");
    if (r->code) {
        snprintf(r->err, sizeof r->err, "%s", c.t.err[0] ? c.t.err : "cannot be read");
        gt_ctx_close(&c);
        return r->code;
    }
    snprintf(r->memory, sizeof r->memory, "%s", c.sel_name);
    snprintf(r->growth_memory, sizeof r->growth_memory, "%s", c.sel_name);

    struct gt_peak pk;
    int code = gt_peak_compute(&c, &pk);
    if (!code) {
        int dev = pk.sel.device;   /* of several, the one peak told (its peak below) */
        if (dev == GT_ANY_DEVICE)
            gt_ctx_primary_device(&c, &pk.sel, &dev);
        r->device = dev == GT_ANY_DEVICE ? -1 : dev;
        r->peak = pk.overall_peak;
        r->peak_t = pk.overall_ev == GT_NO_EVENT ? -1 : c.t.ev[pk.overall_ev].t;
        /* a flight recorder keeps the last seconds: the ranks' peaks are the
         * whole run's, from its interval summaries (the window's were
         * compared: 11 MiB for ranks that had peaked at 110 and 610) */
        const struct gt_recorder *w = &c.t.recorder;
        for (size_t i = 0; w->on && i < w->npeaks; i++)
            if ((pk.sel.mem_mask & GT_MASK(w->peaks[i].memory)) && w->peaks[i].device == r->device &&
                w->peaks[i].peak > r->peak) {
                r->peak = w->peaks[i].peak;
                r->peak_t = w->peaks[i].start_ns;   /* the interval that held it */
            }
        r->windowed = w->on;
        r->final = 0;
        for (size_t i = 0; i < c.t.nev; i++)
            r->final += gt_delta(&c.t, &c.p, &pk.sel, i);
        const struct gt_iterations *its = &c.iters;
        r->niter = pk.n;
        r->iter_index = gt_xmalloc((pk.n + 1) * sizeof *r->iter_index);
        r->iter_peak = gt_xmalloc((pk.n + 1) * sizeof *r->iter_peak);
        for (size_t k = 0; k < pk.n; k++) {
            r->iter_index[k] = its->it[k].index;
            r->iter_peak[k] = pk.w[k].peak;
        }
        snprintf(r->iter_how, sizeof r->iter_how, "%s", its->how);
    }
    gt_peak_free(&pk);
    r->verdict = "unknown";
    if (!code && r->niter) {
        struct gt_growth g;
        memset(&g, 0, sizeof g);
        code = gt_growth_compute(&c, &g);
        if (!code && g.verdict) {
            r->verdict = g.verdict;   /* a string constant of growth.c */
            snprintf(r->growth_memory, sizeof r->growth_memory, "%s", g.memory);
            r->has_slope = g.used >= 2;
            r->slope = g.slope;
        }
        gt_growth_free(&g);
    }
    if (!code)
        r->ooms = gt_oom_requests(&c, &r->oom_ended);
    if (code) {
        r->code = code;
        snprintf(r->err, sizeof r->err, "%s", c.t.err[0] ? c.t.err : "cannot be analysed");
    }
    gt_ctx_close(&c);
    return code;
}


/* The file of rank's whose process is b's parent (same host, started no
 * later), or -1. */
static long parent_of(const struct gt_ranks *R, size_t b)
{
    const struct gt_rank_file *f = &R->files[b];
    for (size_t q = 0; q < R->nfiles; q++) {
        const struct gt_rank_file *p = &R->files[q];
        if (q != b && !p->code && p->rank == f->rank && p->pid == f->ppid && !strcmp(p->host, f->host) &&
            p->start_unix_ns <= f->start_unix_ns)
            return (long)q;
    }
    return -1;
}

/* Groups files by rank. A root is a file whose parent is no other file of
 * the rank on the same host; the rank's main file is its latest-started
 * root, and the files that descend from it are its children (DataLoader or
 * compile workers, which inherit RANK). Other roots, and what descends from
 * them, are earlier runs of the rank (a job run again with the same names,
 * a restart, the image a rank replaced by exec): they point to the main
 * file marked earlier_run, never as its children (a helper's probe: the
 * earliest root was taken, and a re-run's growing rank was listed as a
 * child of the stale run's). Files without a rank are each their own main. */
static void group(struct gt_ranks *R)
{
    for (size_t i = 0; i < R->nfiles; i++) {
        R->files[i].parent = -1;
        R->files[i].earlier_run = R->files[i].concurrent = 0;
    }
    for (size_t i = 0; i < R->nfiles; i++) {
        struct gt_rank_file *a = &R->files[i];
        if (a->code || a->rank < 0 || a->parent >= 0)
            continue;
        long best = -1;
        for (size_t k = 0; k < R->nfiles; k++) {
            struct gt_rank_file *b = &R->files[k];
            if (!b->code && b->rank == a->rank && parent_of(R, k) < 0 &&
                (best < 0 || b->start_unix_ns > R->files[best].start_unix_ns ||
                 (b->start_unix_ns == R->files[best].start_unix_ns && b->order > R->files[best].order)))
                best = (long)k;
        }
        for (size_t k = 0; k < R->nfiles; k++) {
            if (R->files[k].code || R->files[k].rank != a->rank || (long)k == best)
                continue;
            long up = (long)k;   /* up the parents to a root (a cycle of pids ends the walk) */
            for (size_t steps = 0; steps < R->nfiles && parent_of(R, (size_t)up) >= 0; steps++)
                up = parent_of(R, (size_t)up);
            R->files[k].parent = best;
            R->files[k].earlier_run = up != best;
            /* a root that ran while the main one did is no earlier run */
            const struct gt_rank_file *m = &R->files[best], *root = &R->files[up];
            R->files[k].concurrent = up != best && root->end_unix_ns > 0 && m->start_unix_ns > 0 &&
                                     root->end_unix_ns > m->start_unix_ns && !strcmp(root->host, m->host);
        }
    }
    /* a file without a rank whose parent process is a rank's (a worker
     * started with a clean environment) is that rank's child, not a rank of
     * its own (a helper's probe: it was counted, and had the highest peak) */
    for (size_t k = 0; k < R->nfiles; k++) {
        struct gt_rank_file *f = &R->files[k];
        if (f->code || f->rank >= 0)
            continue;
        for (size_t q = 0; q < R->nfiles; q++) {
            const struct gt_rank_file *p = &R->files[q];
            if (!p->code && p->rank >= 0 && p->pid == f->ppid && !strcmp(p->host, f->host) &&
                p->start_unix_ns <= f->start_unix_ns) {
                f->parent = p->parent >= 0 ? p->parent : (long)q;
                f->earlier_run = p->earlier_run;
                break;
            }
        }
    }
}

/* The job's view over the main files. */
static void job_view(struct gt_ranks *R)
{
    R->mains = gt_xmalloc((R->nfiles + 1) * sizeof *R->mains);
    R->nmains = 0;
    for (size_t i = 0; i < R->nfiles; i++)
        if (!R->files[i].code && R->files[i].parent < 0)
            R->mains[R->nmains++] = &R->files[i];
    gt_qsort(R->mains, R->nmains, sizeof *R->mains, cmp_main);
    R->max = NULL;
    R->job_start = INT64_MAX;
    R->world_size = R->world_size_least = -1;
    double *v = gt_xmalloc((R->nmains + 1) * sizeof *v);
    for (size_t i = 0; i < R->nmains; i++) {
        struct gt_rank_file *r = R->mains[i];
        v[i] = (double)r->peak;
        if (!R->max || r->peak > R->max->peak)
            R->max = r;
        if (r->start_unix_ns > 0 && r->start_unix_ns < R->job_start)
            R->job_start = r->start_unix_ns;
        if (r->world_size > R->world_size)
            R->world_size = r->world_size;
        if (r->world_size > 0 && (R->world_size_least <= 0 || r->world_size < R->world_size_least))
            R->world_size_least = r->world_size;
    }
    gt_qsort(v, R->nmains, sizeof *v, cmp_double);
    R->median = R->nmains ? gt_median(v, R->nmains) : 0;
    free(v);
    if (R->job_start == INT64_MAX)
        R->job_start = 0;
    /* the verdict most ranks share, if more than half of those with one do */
    static const char *const verdicts[] = {"growing", "stable"};
    size_t known = 0, count[2] = {0, 0};
    for (size_t i = 0; i < R->nmains; i++)
        for (int k = 0; k < 2; k++)
            if (!strcmp(R->mains[i]->verdict, verdicts[k])) {
                count[k]++;
                known++;
            }
    R->majority = NULL;
    for (int k = 0; k < 2; k++)
        if (2 * count[k] > known)
            R->majority = verdicts[k];
    R->hosts = 0;
    for (size_t i = 0; i < R->nmains; i++) {
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(R->mains[k]->host, R->mains[i]->host);
        R->hosts += !seen;
    }
}

static int rank_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The ranks of the world size no trace was given for, as ranges [from, to]
 * (a trace's WORLD_SIZE is the program's word: 2,000,000,000 listed one by
 * one printed gigabytes). Calls back once per range; returns how many. */
int64_t gt_ranks_missing(const struct gt_ranks *R, void (*range)(void *, int64_t, int64_t), void *arg)
{
    /* a rank whose file was given but not read is not missing: it is said apart */
    int64_t *have = gt_xmalloc((R->nmains + R->nfiles + 1) * sizeof *have), next = 0, count = 0;
    size_t n = 0;
    for (size_t i = 0; i < R->nmains; i++)
        if (R->mains[i]->rank >= 0 && R->mains[i]->rank < R->world_size)
            have[n++] = R->mains[i]->rank;
    for (size_t i = 0; i < R->nfiles; i++)
        if (R->files[i].code && R->files[i].rank >= 0 && R->files[i].rank < R->world_size)
            have[n++] = R->files[i].rank;
    qsort(have, n, sizeof *have, rank_cmp);
    have[n] = R->world_size > 0 ? R->world_size : 0;   /* the end, as one more rank present */
    for (size_t i = 0; i <= n; i++) {
        if (have[i] > next) {
            range(arg, next, have[i] - 1);
            count += have[i] - next;
        }
        if (have[i] + 1 > next)
            next = have[i] + 1;
    }
    free(have);
    return count;
}

int gt_ranks_read(struct gt_ranks *R, char **paths, int n, const struct gt_opts *o)
{
    memset(R, 0, sizeof *R);
    R->files = gt_xcalloc((size_t)n + 1, sizeof *R->files);
    dev_t *dev = gt_xcalloc((size_t)n + 1, sizeof *dev);
    ino_t *ino = gt_xcalloc((size_t)n + 1, sizeof *ino);
    int status = GT_EXIT_OK;
    for (int i = 0; i < n; i++) {
        /* a file given twice (a glob and its name) would count as two ranks */
        struct stat st;
        int known = stat(paths[i], &st) == 0, twice = -1;
        for (size_t k = 0; known && k < R->nfiles && twice < 0; k++)
            if (dev[k] == st.st_dev && ino[k] == st.st_ino)
                twice = (int)k;
        if (twice >= 0) {
            fprintf(stderr, "gputrace: %s: the same file as %s, given twice: read once\n", gt_shown(paths[i]),
                    gt_shown(R->files[twice].path));
            continue;
        }
        size_t m = R->nfiles++;
        dev[m] = known ? st.st_dev : 0;
        ino[m] = known ? st.st_ino : 0;
        R->files[m].order = (int)m;
        int code = read_one(&R->files[m], paths[i], o);
        if (code && !status)
            status = code;
    }
    free(dev);
    free(ino);
    group(R);
    job_view(R);
    /* iterations matched by index: the union of the mains' indices; where a
     * rank's indices repeat (a marker index restarting each epoch), by
     * position instead: by index only each index's first iteration was
     * kept, and the later epochs' peaks went unseen (a helper's probe) */
    for (size_t i = 0; i < R->nmains && !R->by_position; i++)
        for (size_t k = 1; k < R->mains[i]->niter && !R->by_position; k++)
            R->by_position = R->mains[i]->iter_index[k] <= R->mains[i]->iter_index[k - 1];
    for (size_t i = 0; R->by_position && i < R->nmains; i++)
        for (size_t k = 0; k < R->mains[i]->niter; k++)
            R->mains[i]->iter_index[k] = (int64_t)k;
    size_t cap = 0;
    for (size_t i = 0; i < R->nmains; i++)
        cap += R->mains[i]->niter;
    R->iter_index = gt_xmalloc((cap + 1) * sizeof *R->iter_index);
    for (size_t i = 0; i < R->nmains; i++)
        for (size_t k = 0; k < R->mains[i]->niter; k++) {
            int64_t x = R->mains[i]->iter_index[k];
            size_t q = 0;
            while (q < R->niter && R->iter_index[q] != x)
                q++;
            if (q == R->niter)
                R->iter_index[R->niter++] = x;
        }
    for (size_t a = 1; a < R->niter; a++)   /* few: insertion sort */
        for (size_t b = a; b > 0 && R->iter_index[b - 1] > R->iter_index[b]; b--) {
            int64_t t = R->iter_index[b];
            R->iter_index[b] = R->iter_index[b - 1];
            R->iter_index[b - 1] = t;
        }
    return status;
}

int64_t gt_ranks_iter_peak(const struct gt_rank_file *r, int64_t index)
{
    for (size_t k = 0; k < r->niter; k++)
        if (r->iter_index[k] == index)
            return r->iter_peak[k];
    return -1;
}

void gt_ranks_free(struct gt_ranks *R)
{
    for (size_t i = 0; i < R->nfiles; i++) {
        free(R->files[i].host);
        free(R->files[i].end_reason);
        free(R->files[i].iter_index);
        free(R->files[i].iter_peak);
    }
    free(R->files);
    free(R->mains);
    free(R->iter_index);
    memset(R, 0, sizeof *R);
}
