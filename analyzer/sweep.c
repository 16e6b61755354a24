/* sweep.c - `gputrace sweep [OPTIONS] -- CMD [ARG...]`: the largest batch
 * size that fits, found from a model and proven by real runs. Each run is
 * CMD in a fresh process under the shim at one batch size (sweep_run.c);
 * the plan (sweep_plan.c) says which batch size comes next: phase 1 fits
 * peak = fixed + per_sample x batch_size over a few small batch sizes,
 * phase 2 runs the prediction and searches until the largest batch that
 * runs and the smallest that fails are adjacent, then runs the largest
 * again. Out of memory is read from each run's trace, never from its
 * output. Progress goes to stderr, the result to stdout (text or --json). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "subprocess.h"
#include "sweep.h"
#include "sweep_run.h"

#define DEFAULT_MAX_RUNS 20
#define PREALLOC_SHARE 0.5   /* one allocation of this much of the device before the loop: a preallocating framework */
#define TAIL_LINES 10

/* gputrace sweep --help (the command table is in commands.c) */
const char gt_help_sweep[] =
    "usage: gputrace sweep [--batch-sizes A,B,C] [--max-runs N] [--repeat K] [--dir DIR]\n"
    "                      [--json] [--stack-depth N] [--quiet] -- CMD [ARG...]\n"
    "\n"
    "The largest batch size that fits, proven by real runs. Each run is CMD in a\n"
    "fresh process, traced, with every {bs} in its arguments replaced by the batch\n"
    "size and GPUTRACE_BATCH_SIZE set to it; CMD decides how many steps it runs\n"
    "(a few are enough: --steps 3), and each run repeats whatever CMD writes\n"
    "(checkpoints, logs).\n"
    "\n"
    "Phase 1 runs a few batch sizes (default 1, 2, 4; it stops at the first that\n"
    "runs out of memory) and fits peak = fixed + per_sample x batch_size, peaks at\n"
    "the level the program's allocator shows (pool bytes under cudaMallocAsync,\n"
    "else device bytes); when one line does not hold them all, the largest batch\n"
    "sizes that one line holds are fitted, and it says so. Phase 2 runs the largest\n"
    "batch size the fit predicts for the device (its total memory minus what the\n"
    "trace shows held outside the fitted level: the CUDA context is not in the\n"
    "trace, so a first prediction may be too high; a run that fails shows how much\n"
    "was held outside, and the model learns it), then searches until the largest\n"
    "batch that runs and the smallest that fails are adjacent, and runs the largest\n"
    "once more (libraries choose workspaces by free memory). The search uses every\n"
    "run: once a large run fits, the secant through it and the largest that fit\n"
    "below it; the model refitted on the largest runs while it foretells their\n"
    "peaks; a failed run's trace (what was live plus the request that failed) as a\n"
    "lower bound of its batch's need, to interpolate the boundary; bisection when\n"
    "neither can place a step.\n"
    "\n"
    "A run is out of memory when its trace ends on an out-of-memory request\n"
    "(gputrace oom: the program allocated nothing after it). A run that fails\n"
    "otherwise (non-zero exit, a crash) stops the sweep with its last lines on\n"
    "stderr. A program that allocates half the device or more before its first\n"
    "iteration (JAX's default preallocation) is detected, and the sweep says how\n"
    "to run it instead.\n"
    "\n"
    "  --batch-sizes A,B,C  phase 1's batch sizes (default 1,2,4; it stops at the\n"
    "                       first that runs out of memory)\n"
    "  --max-runs N         at most N runs in all (default 20); when reached, the\n"
    "                       sweep says what is proven and exits 14\n"
    "  --repeat K           the largest batch size is proven once it fit in K runs\n"
    "                       (default 2; 2 to 10): more where a batch size fits in\n"
    "                       some fresh runs and not in others (cudaMallocAsync)\n"
    "  --dir DIR            where the runs' traces, stdout and stderr go, one file\n"
    "                       each per run: bsB-runN.db (children that use CUDA:\n"
    "                       bsB-runN.PID.db), bsB-runN.stdout, bsB-runN.stderr.\n"
    "                       Created if missing (its parent must exist); must be\n"
    "                       empty. Default: gputrace-sweep-YYYYmmdd-HHMMSS\n"
    "  --json               the result as JSON on stdout\n"
    "  --stack-depth N      frames per call stack in the traces (default 0:\n"
    "                       none, so that each run's timing is the program's\n"
    "                       own, unless GPUTRACE_STACK_DEPTH is set; CUPTI\n"
    "                       activity is off too, GPUTRACE_CUPTI=0, unless\n"
    "                       GPUTRACE_CUPTI is set)\n"
    "  --quiet              no progress lines on stderr\n"
    "  -h, --help           this text\n"
    "\n"
    "Exit status: 0 when the largest batch size is proven; 12 when a run failed\n"
    "other than by running out of memory (or wrote no trace, or the peak does not\n"
    "change with the batch size); 13 for a preallocating program; 14 when\n"
    "--max-runs was reached first; 2 for a usage error or a directory that cannot\n"
    "be used.\n";

static const char *phase_name(enum gt_sweep_phase p)
{
    return p == GT_SWEEP_MODEL ? "model" : p == GT_SWEEP_SEARCH ? "search" : p == GT_SWEEP_MARGIN ? "margin" : "repeat";
}

/* Makes the sweep's directory (given, or named after the time) and puts its
 * absolute path in out. Returns 0, or -1 after one line on stderr. */
static int make_dir(const char *given, char *out, size_t cap)
{
    char name[PATH_MAX];
    if (given) {
        snprintf(name, sizeof name, "%s", given);
    } else {
        time_t now = time(NULL);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        snprintf(name, sizeof name, "gputrace-sweep-%s", stamp);
        struct stat st;
        for (int k = 2; stat(name, &st) == 0 && k < 100; k++)
            snprintf(name, sizeof name, "gputrace-sweep-%s-%d", stamp, k);
    }
    if (mkdir(name, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gputrace: --dir %s: cannot create it: %s%s\n", name, strerror(errno),
                errno == ENOENT ? " (create its parent first)" : "");
        return -1;
    }
    struct stat st;
    if (stat(name, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gputrace: --dir %s: exists and is not a directory; choose another\n", name);
        return -1;
    }
    DIR *d = opendir(name);
    int empty = d != NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = 0;
    if (d)
        closedir(d);
    if (!empty || access(name, W_OK) != 0) {
        fprintf(stderr, "gputrace: --dir %s: %s; choose another, or empty it first\n", name,
                !d ? "cannot be read" : !empty ? "is not empty (the traces of an earlier sweep?)" : "is not writable");
        return -1;
    }
    if (!realpath(name, out) || strlen(out) >= cap) {
        fprintf(stderr, "gputrace: --dir %s: cannot resolve its path\n", name);
        return -1;
    }
    return 0;
}

/* Everything one sweep knows. */
struct sweep {
    struct gt_args *a;
    char dir[PATH_MAX];
    struct gt_sweep_plan plan;
    struct gt_sweep_run *runs;
    size_t nruns, cap;
    int max_runs;
    double t0;
    char level[64];         /* the fitted level of the first run that had one */
    int64_t total;          /* the device's total bytes; -1 unknown */
    int64_t outside;        /* the most any run held outside the fitted level */
    int64_t unaccounted;    /* the most a failed run's request + live fell short of the total */
    struct gt_sweep_fit model;   /* phase 1's fit, which made the prediction */
    int modelled;
    int64_t predicted, available_predicted;   /* -1: none */
    const char *stopped;    /* NULL, or why the sweep stopped before its end */
    char why[600];          /* ... in words */
};

static int64_t available(const struct sweep *s)
{
    return s->total > 0 ? s->total - s->outside - s->unaccounted : -1;
}

/* The proof so far, in words. */
static void proof_text(const struct sweep *s, char *buf, size_t len)
{
    const struct gt_sweep_plan *p = &s->plan;
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

static void progress(const struct sweep *s, const struct gt_sweep_run *r)
{
    if (s->a->quiet)
        return;
    char b1[GT_FMT_LEN], what[64 + GT_FMT_LEN];
    if (r->oom && r->need_lb >= 0)
        snprintf(what, sizeof what, "out of memory (needed at least %s)", gt_fmt_bytes(r->need_lb, b1));
    else if (r->oom)
        snprintf(what, sizeof what, "out of memory");
    else if (r->exit_status)
        snprintf(what, sizeof what, "failed (exit status %d)", r->exit_status);
    else
        snprintf(what, sizeof what, "fits");
    char peak[2 * GT_FMT_LEN + 80] = "", b2[GT_FMT_LEN];
    if (r->peak >= 0 && !r->oom && r->in_use >= 0)
        snprintf(peak, sizeof peak, ", peak %s (%s %s; %s in use)", gt_fmt_bytes(r->peak, b1),
                 r->level[0] ? r->level : "pool", r->pool_unread ? "not read" : "reserved", gt_fmt_bytes(r->in_use, b2));
    else if (r->peak >= 0 && !r->oom)
        snprintf(peak, sizeof peak, ", peak %s (%s)", gt_fmt_bytes(r->peak, b1), r->level[0] ? r->level : "device");
    fprintf(stderr, "gputrace sweep: run %d, batch size %lld (%s): %s%s, %.2f s; %.1f s in all\n", r->number,
            (long long)r->batch_size, phase_name(r->phase), what, peak, r->seconds, gt_now() - s->t0);
}

/* Phase 1 is over: keep its fit and prediction. Returns 0, or -1 when the
 * peak does not change with the batch size (the sweep stops). */
static int keep_model(struct sweep *s)
{
    s->modelled = 1;
    gt_sweep_plan_fit(&s->plan, &s->model);
    s->available_predicted = available(s);
    s->predicted = gt_sweep_predict(&s->model, s->available_predicted);
    if (s->model.fit.ok && !(s->model.fit.slope > 0) && s->plan.hi == GT_SWEEP_NONE) {
        s->stopped = "batch-size-ignored";
        snprintf(s->why, sizeof s->why, "the peak does not grow with the batch size (%lld to %lld): does the command take "
                 "it? Put {bs} in its arguments, or read GPUTRACE_BATCH_SIZE", (long long)s->model.from_bs,
                 (long long)s->model.to_bs);
        return -1;
    }
    return 0;
}

/* Reads run r's result into the sweep. Returns 0 to go on, -1 to stop. */
static int take(struct sweep *s, struct gt_sweep_run *r, int measured)
{
    if (r->device_total > 0 && (s->total < 0 || r->device_total < s->total))
        s->total = r->device_total;
    if (!s->level[0] && r->level[0])
        snprintf(s->level, sizeof s->level, "%s", r->level);
    if (measured != GT_EXIT_OK && r->exit_status == 0) {
        s->stopped = "failed";
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld): its trace cannot be read: %.450s", r->number,
                 (long long)r->batch_size, r->error);
        return -1;
    }
    /* a run that ran out of memory at the CUDA level is not one a preallocating
     * framework makes: it fails inside its own arena (and a model of one huge
     * tensor that fails at batch size 1 is no preallocation) */
    if (r->number == 1 && !r->oom && r->device_total > 0 &&
        (double)r->largest_before_loop >= PREALLOC_SHARE * (double)r->device_total) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        s->stopped = "preallocation";
        snprintf(s->why, sizeof s->why,
                 "run 1 allocated %s of the device's %s at once before its first iteration: the program preallocates "
                 "the device, so its peak does not follow the batch size. JAX/XLA: run it with "
                 "XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform; TensorFlow: "
                 "TF_FORCE_GPU_ALLOW_GROWTH=true", gt_fmt_bytes(r->largest_before_loop, b1), gt_fmt_bytes(r->device_total, b2));
        return -1;
    }
    if (r->oom && measured == GT_EXIT_OK) {
        gt_sweep_plan_add(&s->plan, r->batch_size, 1, r->need_lb);
        if (r->unaccounted > s->unaccounted) {
            s->unaccounted = r->unaccounted;
            if (available(s) >= 0)
                gt_sweep_plan_lower_available(&s->plan, available(s));
        }
        return 0;
    }
    if (r->exit_status != 0) {
        s->stopped = "failed";
        char how[64];
        if (r->exit_status > 128 && r->exit_status < 128 + 65)
            snprintf(how, sizeof how, "was killed by signal %d (%s)", r->exit_status - 128, strsignal(r->exit_status - 128));
        else
            snprintf(how, sizeof how, "exited with status %d", r->exit_status);
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld) %s, and %s; its last lines on stderr (%s):", r->number,
                 (long long)r->batch_size, how,
                 measured != GT_EXIT_OK ? "its trace cannot be read"
                 : r->ntraces           ? "its trace does not end on an out-of-memory failure"
                                        : "wrote no trace",
                 r->stderr_path);
        return -1;
    }
    if (!r->ntraces) {
        s->stopped = "no-trace";
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld) wrote no trace: the command made no CUDA call the shim "
                 "saw (does it use the GPU? is LD_PRELOAD cleared on the way?); its last lines on stderr (%s):",
                 r->number, (long long)r->batch_size, r->stderr_path);
        return -1;
    }
    if (r->outside > s->outside)
        s->outside = r->outside;
    gt_sweep_plan_add(&s->plan, r->batch_size, 0, r->peak);
    return 0;
}

static void run_sweep(struct sweep *s)
{
    char **argv = s->a->files;
    for (;;) {
        s->plan.available = available(s);
        enum gt_sweep_phase ph;
        int model;
        int64_t bs = gt_sweep_plan_next(&s->plan, &ph, &model);
        if (!bs)
            return;
        if (ph != GT_SWEEP_MODEL && !s->modelled && keep_model(s) != 0)
            return;
        if ((int)s->nruns >= s->max_runs) {
            s->stopped = "max-runs";
            snprintf(s->why, sizeof s->why, "--max-runs %d reached", s->max_runs);
            return;
        }
        if (s->nruns == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 16;
            s->runs = gt_xrealloc(s->runs, s->cap * sizeof *s->runs);
        }
        struct gt_sweep_run *r = &s->runs[s->nruns++];
        memset(r, 0, sizeof *r);
        r->number = (int)s->nruns;
        r->batch_size = bs;
        r->phase = ph;
        r->from_model = model;
        /* no stacks unless asked: under a stream-ordered pool the boundary moves
         * with the program's timing (on an H100 a transformer traced with stacks
         * fit at batch 152 twice where untraced runs failed at 149 and 150) */
        int depth = s->a->stack_depth >= 0 ? s->a->stack_depth : getenv("GPUTRACE_STACK_DEPTH") ? -1 : 0;
        int measured = gt_sweep_run(r, argv, s->dir, depth, &s->a->base);
        progress(s, r);
        if (take(s, r, measured) != 0)
            return;
    }
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

/* The margin (sweep.h), when one was taken. */
static void print_margin_text(const struct sweep *s)
{
    const struct gt_sweep_plan *p = &s->plan;
    if (!p->marginal)
        return;
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
    printf("  margin: batch size %lld fit in all %d of its runs, but their peaks differed by %s, %.1f samples of %s:\n"
           "  whether a fresh run there fits is a matter of chance. ", (long long)p->marginal,
           gt_sweep_plan_fits_at(p, p->marginal), gt_fmt_bytes(p->spread, b1), (double)p->spread / p->per_sample,
           gt_fmt_bytes_d(p->per_sample, b2));
    if (p->settle)
        printf("The answer is %lld, which leaves that much room\n", (long long)p->settle);
    else
        printf("The size that left that much room ran out of memory, and the\n"
               "  search went on below it\n");
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

static void print_text(const struct sweep *s, double total_s)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
    printf("Sweep of:");
    for (char **arg = s->a->files; *arg; arg++)
        printf(" %s", *arg);
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
        gt_table_row(&tb, num, bs, phase_name(r->phase), r->peak >= 0 && !r->oom ? gt_fmt_bytes(r->peak, b1) : "-",
                     r->oom ? "OOM" : r->exit_status || !r->ntraces ? "failed" : "fits", ex, sec);
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
        if (s->unaccounted)
            printf("; held outside the trace when a run failed: %s", gt_fmt_bytes(s->unaccounted, b3));
        printf("\n  available to the fitted level: %s (the CUDA context and other processes are not in a trace: only\n"
               "  what a failed run shows of them is counted)\n", gt_fmt_bytes(available(s), b1));
    } else {
        printf("  device size unknown (no devices row): no prediction, the search doubles and bisects\n");
    }
    if (s->predicted >= 0)
        printf("  predicted largest batch size: %lld\n", (long long)s->predicted);
    else if (s->modelled)
        printf("  predicted largest batch size: none (needs a fit whose peak grows, and the device size)\n");
    print_unsteady_text(s);
    char proof[300];
    proof_text(s, proof, sizeof proof);
    printf("  largest batch size that fits: %s\n", proof);
    print_margin_text(s);
    if (!strcmp(s->level, "pool") && gt_sweep_plan_verified(&s->plan) && !s->plan.marginal)
        printf("  under a stream-ordered pool the boundary can move between fresh runs and machines (a transformer\n"
               "  on H100s: 148 fit in 3 of 4 fresh runs, 149 in 1 of 3 and 150 in 1 of 2 on one machine; untraced\n"
               "  boundaries 147 to 150 (2%%) on the machines tried): train a little below it\n");
    printf("  runs: %zu, %.1f s in all\n", s->nruns, total_s);
    if (s->stopped)
        printf("  stopped: %s\n", s->why);
}

static void print_json(const struct sweep *s, double total_s)
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
        gt_json_kstr(&j, "phase", phase_name(r->phase));
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
        gt_json_key(&j, "oom");
        gt_json_bool(&j, r->oom);
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
    gt_json_kint_or_null(&j, "available_bytes", available(s));
    gt_json_kint_or_null(&j, "predicted_max_batch_size", s->predicted);
    int64_t answer = gt_sweep_plan_answer(&s->plan);
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
        gt_json_kdouble(&j, "per_sample_bytes", s->plan.per_sample);
        gt_json_key(&j, "taken");   /* false: the margin's size failed and the search went below it */
        gt_json_bool(&j, s->plan.settle != 0);
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

int gt_cmd_sweep(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    struct sweep s;
    memset(&s, 0, sizeof s);
    s.a = a;
    s.max_runs = a->max_runs ? a->max_runs : DEFAULT_MAX_RUNS;
    s.total = -1;
    s.predicted = s.available_predicted = -1;
    if (gt_preload_shim("gputrace sweep") != 0)
        return GT_RUN_EXIT_FAILED;
    if (make_dir(a->dir, s.dir, sizeof s.dir) != 0)
        return GT_EXIT_USAGE;
    if (!gt_sweep_has_placeholder(a->files) && !a->quiet)
        fprintf(stderr, "gputrace sweep: no {bs} in the command: each run gets its batch size only through "
                        "GPUTRACE_BATCH_SIZE\n");
    gt_sweep_plan_init(&s.plan, a->nbatch_sizes ? a->batch_sizes : NULL, (size_t)a->nbatch_sizes);
    if (a->repeat)
        s.plan.fits_needed = a->repeat;
    s.t0 = gt_now();
    run_sweep(&s);
    double total_s = gt_now() - s.t0;
    if (!s.modelled && s.plan.n) {   /* the sweep ended in phase 1: show its fit all the same */
        gt_sweep_plan_fit(&s.plan, &s.model);
        s.modelled = 1;
    }
    if (s.stopped && strcmp(s.stopped, "max-runs")) {
        fprintf(stderr, "gputrace sweep: stopped: %s\n", s.why);
        const struct gt_sweep_run *r = s.nruns ? &s.runs[s.nruns - 1] : NULL;
        if (r && ((!strcmp(s.stopped, "failed") && r->exit_status) || !strcmp(s.stopped, "no-trace")))
            gt_sweep_print_tail(stderr, r->stderr_path, TAIL_LINES);
    }
    if (a->base.json)
        print_json(&s, total_s);
    else
        print_text(&s, total_s);
    fflush(stdout);
    int code = GT_EXIT_OK;
    if (s.stopped)
        code = !strcmp(s.stopped, "preallocation") ? GT_EXIT_SWEEP_PREALLOC
               : !strcmp(s.stopped, "max-runs")    ? GT_EXIT_SWEEP_UNPROVEN
                                                   : GT_EXIT_SWEEP_FAILED;
    for (size_t i = 0; i < s.nruns; i++)
        gt_sweep_run_free(&s.runs[i]);
    free(s.runs);
    gt_sweep_plan_free(&s.plan);
    return code;
}
