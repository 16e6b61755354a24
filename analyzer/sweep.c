/* sweep.c - `gputrace sweep [OPTIONS] -- CMD [ARG...]`: the largest batch
 * size that fits, found from a model and proven by real runs. Each run is
 * CMD in a fresh process under the shim at one batch size (sweep_run.c);
 * the plan (sweep_plan.c) says which batch size comes next: phase 1 fits
 * peak = fixed + per_sample x batch_size over a few small batch sizes,
 * phase 2 runs the prediction and searches until the largest batch that
 * runs and the smallest that fails are adjacent, then runs the largest
 * again (and, when its runs peaked apart, a margin below it). Out of memory is read from each run's trace, never from its
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
#include "sweep_cmd.h"
#include "sweep_run.h"

#define DEFAULT_MAX_RUNS 20
#define TAIL_LINES 10

/* gputrace sweep --help (the command table is in commands.c) */
const char gt_help_sweep[] =
    "usage: gputrace sweep [--batch-sizes A,B,C] [--max-runs N] [--repeat K]\n"
    "                      [--dir DIR] [--run-timeout T] [--json] [--stack-depth N]\n"
    "                      [--quiet] -- CMD [ARG...]\n"
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
    "(gputrace oom: the program allocated nothing after it), or when it exits\n"
    "non-zero on its framework's own out-of-memory error (XLA refuses a buffer\n"
    "past the device before calling CUDA). A run that fails otherwise (non-zero\n"
    "exit, a crash) stops the sweep with its last lines on stderr. A program\n"
    "that allocates half the device or more before its first iteration (JAX's\n"
    "default preallocation) is detected, and the sweep says how to run it\n"
    "instead.\n"
    "\n"
    "  --batch-sizes A,B,C  phase 1's batch sizes (default 1,2,4; it stops at the\n"
    "                       first that runs out of memory)\n"
    "  --run-timeout T      a run still going after T (600, 10m, 1.5h) is stopped\n"
    "                       (SIGTERM, SIGKILL 10 s later) and stops the sweep\n"
    "                       (exit 12); default none\n"
    "  --max-runs N         at most N runs in all (default 20); when reached, the\n"
    "                       sweep says what is proven and exits 14\n"
    "  --repeat K           the largest batch size is proven once it fit in K runs\n"
    "                       (default 2; 2 to 10): more where a batch size fits in\n"
    "                       some fresh runs and not in others (cudaMallocAsync);\n"
    "                       when its runs peak half a sample or more apart, the\n"
    "                       answer is that spread below it, proven by its own\n"
    "                       runs (a margin: README); under a pool, also when\n"
    "                       another large run held more slack than its runs\n"
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
    "--max-runs was reached first, or every size up to 2^31 fit; 15 when even\n"
    "batch size 1 ran out of memory; 2 for a usage error or a directory that\n"
    "cannot be used.\n";

/* Makes the sweep's directory (given, or named after the time) and puts its
 * absolute path in out. Returns 0, or -1 after one line on stderr. */
static int make_dir(const char *given, char *out, size_t cap)
{
    char name[PATH_MAX];
    int made = 0;
    if (given) {
        snprintf(name, sizeof name, "%s", given);
    } else {
        /* the directory this sweep makes itself: two sweeps started in one
         * second must not share one (each would read the other's traces) */
        time_t now = time(NULL);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        snprintf(name, sizeof name, "gputrace-sweep-%s", stamp);
        for (int k = 2; !(made = mkdir(name, 0777) == 0) && errno == EEXIST && k < 1000; k++)
            snprintf(name, sizeof name, "gputrace-sweep-%s-%d", stamp, k);
    }
    if (!made && mkdir(name, 0777) != 0 && (errno != EEXIST || !given)) {
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

static void progress(const struct sweep *s, const struct gt_sweep_run *r)
{
    if (s->a->quiet)
        return;
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], what[240 + 3 * GT_FMT_LEN];
    if (r->timed_out) {
        snprintf(what, sizeof what, "stopped: it ran past --run-timeout");
    } else if (r->oom) {
        /* what the trace says of the failure, in parentheses, parts joined by "; " */
        int n = snprintf(what, sizeof what, "out of memory");
        const char *sep = " (";
        if (r->need_lb >= 0) {
            n += snprintf(what + n, sizeof what - n, "%sneeded at least %s", sep, gt_fmt_bytes(r->need_lb, b1));
            sep = "; ";
        }
        if (r->pool_kept >= 0) {
            n += snprintf(what + n, sizeof what - n, "%sa %s outside the pool, which held %s unused", sep, r->kept_call,
                          gt_fmt_bytes(r->pool_kept, b2));
            sep = "; ";
        }
        if (r->oom_said) {
            n += snprintf(what + n, sizeof what - n, "%sthe program's own error: no CUDA call failed", sep);
            sep = "; ";
        }
        if (r->pool_split >= 0) {   /* (a run of several processes may show both) */
            n += snprintf(what + n, sizeof what - n, "%sin the pool, which held at least %s unused, not in one piece "
                          "it could serve", sep, gt_fmt_bytes(r->pool_split, b2));
            sep = "; ";
        }
        if (*sep == ';')
            snprintf(what + n, sizeof what - n, ")");
    } else if (r->exit_status) {
        snprintf(what, sizeof what, "failed (exit status %d)", r->exit_status);
    } else if (!r->ntraces) {   /* (the table says failed: a run is measured by its trace) */
        snprintf(what, sizeof what, "failed (wrote no trace)");
    } else {
        snprintf(what, sizeof what, "fits");
    }
    char peak[2 * GT_FMT_LEN + 80] = "";
    if (r->peak >= 0 && !r->oom && r->in_use >= 0)
        snprintf(peak, sizeof peak, ", peak %s (%s %s; %s in use)", gt_fmt_bytes(r->peak, b1),
                 r->level[0] ? r->level : "pool", r->pool_unread ? "not read" : "reserved", gt_fmt_bytes(r->in_use, b2));
    else if (r->peak >= 0 && !r->oom)
        snprintf(peak, sizeof peak, ", peak %s (%s)", gt_fmt_bytes(r->peak, b1), r->level[0] ? r->level : "device");
    fprintf(stderr, "gputrace sweep: run %d, batch size %lld (%s): %s%s, %.2f s; %.1f s in all\n", r->number,
            (long long)r->batch_size, gt_sweep_phase_name(r->phase), what, peak, r->seconds, gt_now() - s->t0);
}

/* A fit whose peak does not grow with the batch size. */
static int flat(const struct gt_sweep_fit *f)
{
    return f->fit.ok && !(f->fit.slope > 0);
}

/* Phase 1 is over: keep its fit and prediction. Returns 0, or -1 when the
 * peak does not change with the batch size (the sweep stops). */
static int keep_model(struct sweep *s)
{
    s->modelled = 1;
    gt_sweep_plan_fit(&s->plan, &s->model);
    s->available_predicted = gt_sweep_available(s);
    s->predicted = gt_sweep_predict(&s->model, s->available_predicted);
    if (flat(&s->model) && s->plan.hi == GT_SWEEP_NONE) {
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
    if (r->timed_out) {   /* whatever its trace says: it was stopped, not ended by the program */
        s->stopped = "run-timeout";
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld) did not end within --run-timeout %g s and was stopped "
                 "(SIGTERM; SIGKILL 10 s later if still running): raise --run-timeout if the runs need longer; its "
                 "stderr is in %s", r->number, (long long)r->batch_size, (double)s->a->run_timeout / 1e9,
                 r->stderr_path);
        return -1;
    }
    if (measured != GT_EXIT_OK && r->exit_status == 0) {
        s->stopped = "failed";
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld): its trace cannot be read: %.450s", r->number,
                 (long long)r->batch_size, r->error);
        return -1;
    }
    /* a run that ran out of memory at the CUDA level is not one a preallocating
     * framework makes: it fails inside its own arena, and says so only in its
     * own words (oom_said); a model of one huge tensor that fails at batch
     * size 1 is no preallocation */
    if (r->number == 1 && (!r->oom || r->oom_said) && r->device_total > 0 && r->preallocated > 0) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        s->stopped = "preallocation";
        snprintf(s->why, sizeof s->why,
                 "run 1 allocated %s of the device's %s at once before its first iteration: the program preallocates "
                 "the device, so its peak does not follow the batch size. JAX/XLA: run it with "
                 "XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform; TensorFlow: "
                 "TF_FORCE_GPU_ALLOW_GROWTH=true", gt_fmt_bytes(r->preallocated, b1), gt_fmt_bytes(r->device_total, b2));
        return -1;
    }
    if (r->oom && measured == GT_EXIT_OK) {
        gt_sweep_plan_add(&s->plan, r->batch_size, 1, r->need_lb);
        /* what NVML showed held outside the trace in this run counts as in a
         * run that fit (memory a library takes only at large sizes: the model
         * stepped down one failure at a time, 19 runs for 7) */
        int lower = 0;
        if (r->unaccounted > s->unaccounted) {
            s->unaccounted = r->unaccounted;
            lower = 1;
        }
        if (r->untraced > s->untraced) {
            s->untraced = r->untraced;
            lower = 1;
        }
        if (lower && gt_sweep_available(s) >= 0)
            gt_sweep_plan_lower_available(&s->plan, gt_sweep_available(s));
        return 0;
    }
    if (r->exit_status != 0) {
        s->stopped = "failed";
        char how[64];
        if (r->exit_status > 128 && r->exit_status < 128 + 65)
            snprintf(how, sizeof how, "was killed by signal %d (%s)", r->exit_status - 128, strsignal(r->exit_status - 128));
        else
            snprintf(how, sizeof how, "exited with status %d", r->exit_status);
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld) %s, and %s; its stderr is in %s", r->number,
                 (long long)r->batch_size, how,
                 measured != GT_EXIT_OK ? "its trace cannot be read"
                 : r->host_oom          ? "its trace ends on a failed pinned host (or managed) allocation, not the "
                                          "device's memory"
                 : r->ntraces           ? "its trace does not end on an out-of-memory failure"
                                        : "wrote no trace",
                 r->stderr_path);
        return -1;
    }
    if (!r->ntraces) {
        s->stopped = "no-trace";
        snprintf(s->why, sizeof s->why, "run %d (batch size %lld) wrote no trace: the command made no CUDA call the shim "
                 "saw (does it use the GPU? is LD_PRELOAD cleared on the way?); its stderr is in %s",
                 r->number, (long long)r->batch_size, r->stderr_path);
        return -1;
    }
    /* past phase 1 with nothing failed yet: a run at least twice as large
     * as one that fit, its peak no higher, says the memory stopped following
     * the batch size (a data set that clamps it, a program that catches its
     * out-of-memory error and exits 0): doubling on proves nothing (it ran
     * to 20,971,520 and called that the answer) */
    if (s->modelled && s->plan.hi == GT_SWEEP_NONE && r->peak >= 0)
        for (size_t k = 0; k < s->plan.n; k++) {
            const struct gt_sweep_point *q = &s->plan.pts[k];
            if (!q->oom && q->peak >= r->peak && q->batch_size > 0 && r->batch_size >= 2 * q->batch_size) {
                s->stopped = "batch-size-ignored";
                snprintf(s->why, sizeof s->why, "the peak at batch size %lld (%s) is no higher than at %lld: the "
                         "command's memory stopped following the batch size (does it cap it, or catch its out-of-"
                         "memory error and go on?); its stderr is in %s", (long long)r->batch_size,
                         gt_fmt_bytes(r->peak, (char[GT_FMT_LEN]){0}), (long long)q->batch_size, r->stderr_path);
                return -1;
            }
        }
    if (r->outside > s->outside)
        s->outside = r->outside;
    if (r->untraced > s->untraced)
        s->untraced = r->untraced;
    gt_sweep_plan_add(&s->plan, r->batch_size, 0, r->peak);
    if (r->in_use > 0 && !r->pool_unread)
        gt_sweep_plan_set_in_use(&s->plan, r->in_use + r->graph);   /* the pool's slack: the margin's
                                                                       * (the graphs' memory is in the peak) */
    return 0;
}

static void run_sweep(struct sweep *s)
{
    char **argv = s->a->files;
    for (;;) {
        s->plan.available = gt_sweep_available(s);
        if (!s->modelled && s->plan.next_model >= s->plan.n_model && s->plan.hi == GT_SWEEP_NONE) {
            struct gt_sweep_fit f;   /* phase 1's peaks did not grow: a larger size before "ignored" */
            gt_sweep_plan_fit(&s->plan, &f);
            if (flat(&f))
                gt_sweep_plan_widen(&s->plan);
        }
        enum gt_sweep_phase ph;
        int model;
        int64_t bs = gt_sweep_plan_next(&s->plan, &ph, &model);
        if (!bs) {
            if (s->plan.hi == GT_SWEEP_NONE && !gt_sweep_plan_verified(&s->plan)) {
                s->stopped = "max-batch-size";
                snprintf(s->why, sizeof s->why, "every batch size tried fit, up to %lld: none larger is tried (does the "
                         "command's memory grow with its batch size?)", (long long)s->plan.lo);
            }
            return;
        }
        if (ph != GT_SWEEP_MODEL && !s->modelled && keep_model(s) != 0)
            return;
        if ((int)s->nruns >= s->max_runs) {
            /* phase 1 ran its sizes flat and was widening: the batch size is ignored */
            if (!s->modelled && s->plan.widened && keep_model(s) != 0)
                return;
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
        gt_spawn_interrupted();   /* (cleared: a signal before this run is not this run's) */
        int measured = gt_sweep_run(r, argv, s->dir, depth, (double)s->a->run_timeout / 1e9, &s->a->base);
        int sig = gt_spawn_interrupted();
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
            /* ^C (or a scheduler's SIGTERM) to the sweep: the run it cut short
             * is no result; what is proven so far is said, then the sweep dies
             * of that signal as the command would (it exited 12, "a run
             * failed", with the cut run tabled as failed) */
            gt_sweep_run_free(r);
            s->nruns--;
            s->interrupted = sig;
            s->stopped = "interrupted";
            snprintf(s->why, sizeof s->why, "interrupted (%s) during the run of batch size %lld; what the runs before "
                     "it proved is below", strsignal(sig), (long long)bs);
            return;
        }
        progress(s, r);
        if (take(s, r, measured) != 0)
            return;
    }
}

int gt_cmd_sweep(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    struct sweep s;
    memset(&s, 0, sizeof s);
    s.a = a;
    s.max_runs = a->max_runs ? a->max_runs : DEFAULT_MAX_RUNS;
    s.total = -1;
    s.untraced = -1;
    s.predicted = s.available_predicted = -1;
    if (gt_preload_shim("gputrace sweep") != 0)
        return GT_RUN_EXIT_FAILED;
    if (make_dir(a->dir, s.dir, sizeof s.dir) != 0)
        return GT_EXIT_USAGE;
    if (!gt_sweep_has_placeholder(a->files) && !a->quiet)
        fprintf(stderr, "gputrace sweep: no {bs} in the command: each run gets its batch size only through "
                        "GPUTRACE_BATCH_SIZE\n");
    /* A flight recorder keeps a run's last seconds: a peak earlier in the run
     * was gone, and a run of 913 MiB read as the window's 11 MiB (a helper's
     * probe). Each run's peak is its whole life's: its runs are traced whole. */
    const char *window = getenv("GPUTRACE_WINDOW_S");
    if (window && *window) {
        if (!a->quiet)
            fprintf(stderr, "gputrace sweep: GPUTRACE_WINDOW_S=%s is not passed on: a run's peak is its whole "
                            "life's, which a flight recorder's window does not keep\n", window);
        unsetenv("GPUTRACE_WINDOW_S");
    }
    gt_sweep_plan_init(&s.plan, a->nbatch_sizes ? a->batch_sizes : NULL, (size_t)a->nbatch_sizes);
    if (a->repeat)
        s.plan.fits_needed = a->repeat;
    if (a->nbatch_sizes >= s.max_runs && !a->quiet)
        fprintf(stderr, "gputrace sweep: --batch-sizes names %d sizes and --max-runs is %d: the model phase "
                        "takes every run, and no run is left to predict and prove the boundary\n",
                a->nbatch_sizes, s.max_runs);
    s.t0 = gt_now();
    run_sweep(&s);
    double total_s = gt_now() - s.t0;
    if (!s.modelled && s.plan.n) {   /* the sweep ended in phase 1: show its fit all the same */
        gt_sweep_plan_fit(&s.plan, &s.model);
        s.modelled = s.modelled_after_stop = 1;
    }
    if (s.stopped && strcmp(s.stopped, "max-runs")) {
        fprintf(stderr, "gputrace sweep: stopped: %s\n", s.why);
        const struct gt_sweep_run *r = s.nruns ? &s.runs[s.nruns - 1] : NULL;
        if (r && ((!strcmp(s.stopped, "failed") && r->exit_status) || !strcmp(s.stopped, "no-trace") ||
                  (!strcmp(s.stopped, "batch-size-ignored") && strstr(s.why, "its stderr is in")) ||
                  !strcmp(s.stopped, "run-timeout"))) {
            fprintf(stderr, "gputrace sweep: run %d's last lines on stderr:\n", r->number);
            gt_sweep_print_tail(stderr, r->stderr_path, TAIL_LINES);
        }
    }
    if (a->base.json)
        gt_sweep_print_json(&s, total_s);
    else
        gt_sweep_print_text(&s, total_s);
    fflush(stdout);
    int code = GT_EXIT_OK;
    if (s.stopped)
        code = !strcmp(s.stopped, "preallocation")                                         ? GT_EXIT_SWEEP_PREALLOC
               : !strcmp(s.stopped, "max-runs") || !strcmp(s.stopped, "max-batch-size") ? GT_EXIT_SWEEP_UNPROVEN
                                                                                           : GT_EXIT_SWEEP_FAILED;
    else if (gt_sweep_plan_verified(&s.plan) && !gt_sweep_plan_answer(&s.plan))
        code = GT_EXIT_SWEEP_NONE_FITS;   /* proven, but a script must not read a null as a size */
    for (size_t i = 0; i < s.nruns; i++)
        gt_sweep_run_free(&s.runs[i]);
    free(s.runs);
    gt_sweep_plan_free(&s.plan);
    if (s.interrupted) {   /* die of it, as a shell's job does: a calling script stops too */
        fflush(stdout);
        fflush(stderr);
        signal(s.interrupted, SIG_DFL);
        raise(s.interrupted);
        code = 128 + s.interrupted;
    }
    return code;
}
