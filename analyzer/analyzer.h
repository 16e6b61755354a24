/* analyzer.h - what the reports share: command-line options, the per-file
 * analysis context (trace + pairing + default memory level + iterations
 * found on demand), and each report's entry point and computed results. */
#ifndef GT_ANALYZER_H
#define GT_ANALYZER_H
#include <stdbool.h>
#include <stdint.h>

#include "fit.h"
#include "iterations.h"
#include "json.h"
#include "live.h"
#include "trace.h"

struct gt_opts {
    int json;
    int frames;             /* frames shown per call site in text (--frames) */
    int allocator_frames;   /* text shows allocator-internal frames (--allocator-frames) */
    int top;                /* call sites listed (--top) */
    int warmup;             /* iterations growth skips (--warmup) */
    int64_t fail_above;     /* growth --fail-above, bytes/iteration; -1 none */
    int64_t threshold;      /* growth verdict: slope must exceed this (--threshold) */
    int64_t device_bytes;   /* --device-bytes; -1: devices table */
    int memory_set;         /* --memory given */
    unsigned mem_mask;
    int device;             /* --device N, or GT_ANY_DEVICE */
    int cached_as_leaks;    /* leaks --no-cache-heuristic */
    int all_iterations;     /* peak --all-iterations: text lists every iteration */
    int full_names;         /* --full-names: text keeps parameter lists and template arguments */
    int all_frames;         /* --all-frames: text folds and drops no frame */
    int native;             /* --native: a stack with Python frames shows its native frames too */
    struct gt_iter_opts iter;
};

struct gt_ctx {
    const char *path;
    const struct gt_opts *o;
    struct gt_trace t;
    struct gt_pairs p;
    struct gt_sel sel;        /* the level that growth, peak and oom report */
    char sel_name[64];        /* its name: "pool", "device", "device+pool", ... */
    int iters_loaded;
    struct gt_iterations iters;
    unsigned char *loop_of;   /* gt_ctx_event_loops' map, once read */
    int page;                 /* for the HTML report's page: per-iteration lists grouped past GT_PAGE_ITERATIONS */
    unsigned has_levels;      /* GT_MASK of each memory kind with a successful allocation (on --device N) */
    int unlined_sites;        /* a call site shown had only native frames, none with a source line */
};
/* Iterations a report's page lists one by one; past them, consecutive ones
 * are one entry at their highest peak (the chart draws about 1,000 bars: a
 * million iterations made a 251 MB page) */
#define GT_PAGE_ITERATIONS 2000

/* Opens, validates and loads path, pairs its events and picks the default
 * memory level: --memory, else the first of pool, device, managed and host
 * memory the trace has. Returns an exit status (message in c->t.err). */
int gt_ctx_open(struct gt_ctx *c, const char *path, const struct gt_opts *o);
/* A memory selection's name: "pool", "device", "device+pool", ... */
void gt_sel_name(unsigned mask, char *out, size_t cap);
/* Does the trace have a successful allocation of that memory (on that
 * device; GT_ANY_DEVICE: any)? */
int gt_ctx_has_memory(const struct gt_ctx *c, int memory, int device);
/* One line before a leaks or growth report when the record has gaps (dropped
 * events, allocations at an address still live). */
void gt_ctx_print_gaps(const struct gt_ctx *c);
/* After a text report that showed native call sites without source lines, in
 * a trace never symbolized: one line on how to add file:line. */
void gt_ctx_print_symbolize_hint(struct gt_ctx *c);
void gt_ctx_close(struct gt_ctx *c);
/* Iterations per the options, found once and cached. */
int gt_ctx_iterations(struct gt_ctx *c, const struct gt_iterations **out);
/* When the iterations' kind of range ran on several threads (iters.threads):
 * for each event, the loop of the thread that made it: k + 1 for
 * iters.threads[k], GT_OWN_LOOP for it[]'s own thread, 0 another thread
 * (autograd's, a loader's). *out NULL when the loop ran on one thread.
 * Read from the trace once. Returns an exit status. */
int gt_ctx_event_loops(struct gt_ctx *c, const unsigned char **out);
/* Device total memory for selection s: --device-bytes, else the devices table
 * for s's device (or the only device the selection touches); -1 unknown. */
int64_t gt_ctx_device_total(struct gt_ctx *c, const struct gt_sel *s);
/* Writes "file", "rank", "pid" keys of a per-file JSON object. */
void gt_ctx_json_head(struct gt_ctx *c, struct gt_json *j);
/* recorder.c: what a flight recorder's trace covers, for every report */
void gt_recorder_text(const struct gt_trace *t);
void gt_recorder_json(const struct gt_trace *t, struct gt_json *j);
/* ---- callsite.c: how each site of one listing reads (see there). Sets
 * *out to n malloc'ed strings (free with gt_site_texts_free). Returns an
 * exit status. */
int gt_site_texts(struct gt_ctx *c, const int32_t *sites, size_t n, char ***out);
void gt_site_texts_free(char **texts, size_t n);
/* A demangled C++ name without parameter lists, template arguments, return
 * type or qualifiers: "at::native::run_conv_plan". */
void gt_short_function(const char *full, char *out, size_t len);
/* The JSON keys "frames" (all, full names; a Python frame is
 * "FUNCTION (FILE:LINE)"), "allocator_frames" (how many lead),
 * "python_frames" (how many are Python), "frame_kinds" ("python" or
 * "native" per frame) and, given text, "call_site" (the site as text shows it). */
/* Is this frame (function and module text) inside a memory allocator's own
 * code (PyTorch's caching allocator, its empty_* factories, RMM, ...)? */
bool gt_frame_is_allocator(const char *frame);
int gt_json_frames(struct gt_ctx *c, struct gt_json *j, int32_t site, const char *text);
/* Writes a JSON array of call sites {bytes, count, memory, stack_id, frames}. */
int gt_json_sites(struct gt_ctx *c, struct gt_json *j, const struct gt_site_sum *s, size_t n, size_t limit);
/* Prints a text table of call sites (bytes, count, memory, frames). */
int gt_text_sites(struct gt_ctx *c, const struct gt_site_sum *s, size_t n, size_t limit, int indent);
/* Does selection s touch more than one device? Sets *dev to the device with
 * the highest peak. */
int gt_ctx_primary_device(struct gt_ctx *c, const struct gt_sel *s, int *dev);
/* The devices the selected levels span, the busiest (highest peak) first: how many, at most max in out. */
size_t gt_ctx_devices(struct gt_ctx *c, const struct gt_sel *s, int *out, size_t max);

/* Monotonic seconds, and a line "timing: WHAT SECONDS" on stderr when the
 * environment has GPUTRACE_TIMING (for the benchmark). */
double gt_now(void);
void gt_phase(const char *what, double since);

/* ---- leaks.c */
/* What is live at process end, in four parts. With at least 3 iterations:
 * sites = memory that accumulates (allocated in a middle iteration and never
 * freed: every live allocation of such a site); held = allocated before the
 * loop or in its first iteration and kept (parameters, optimizer state);
 * at_end = allocated in the last iteration or after the loop (what the
 * program was using when it ended). With 2, held and at_end (after the
 * first), and what accumulates is not told (told 0). With fewer everything
 * that is not cached is in sites (classified 0). */
/* a preallocating framework's pool (prealloc.c) */
struct gt_prealloc {
    int64_t bytes;
    int device, percent, count;   /* percent of the device's total (-1: unknown); allocations */
};

struct gt_leaks {
    struct gt_site_sum *sites, *cached, *held, *at_end, *steady;
    size_t nsites, ncached, nheld, nat_end, nsteady;
    int64_t bytes, count, cached_bytes, cached_count, held_bytes, held_count, at_end_bytes, at_end_count;
    int64_t cached_in_loop;   /* of cached_bytes, allocated during the loop after its first iteration */
    const struct gt_caching_allocator *cached_by;   /* the allocator of the site that made most of it (NULL: none known) */
    int64_t steady_bytes, steady_count;   /* kept by sites that stopped growing in the loop's first half */
    /* made by the loop iteration after iteration and freed only in its last
     * iteration or after it (leaks.c's freed_after_loop) */
    struct gt_site_sum *after;
    size_t nafter;
    int64_t after_bytes, after_count;
    /* kept by sites whose loop allocations live at exit all came from one
     * iteration, with two or more after it that kept nothing more: made once */
    struct gt_site_sum *once;
    size_t nonce;
    int64_t once_bytes, once_count;
    /* of at_end: made in a later loop (iterations.h's later_loops; the one
     * that left most) and live at exit: not judged; NULL none */
    const struct gt_later_loop *later;
    int64_t later_bytes, later_count;
    int classified;        /* 1: split by iterations (2 or more) */
    int told;              /* sites is what accumulated: 3 or more iterations, or nothing live */
    size_t iterations;     /* the trace's iterations */
    struct gt_prealloc prealloc;   /* a preallocating framework's pool (bytes 0: none): none not told */
};
int gt_leaks_compute(struct gt_ctx *c, struct gt_leaks *l);
void gt_later_loop_json(struct gt_json *j, const struct gt_leaks *l);   /* later: null or {name, ranges, bytes, count} */
/* allocators.c: a caching allocator known by its frames, and how to trace
 * its memory at tensor level (per_tensor: a setting or a call) */
struct gt_caching_allocator {
    const char *name;
    const char *const *frames;
    const char *per_tensor;
};
const struct gt_caching_allocator *gt_caching_allocator_of(char *const *frames, int n);
const struct gt_caching_allocator *gt_site_caching_allocator(struct gt_ctx *c, int32_t site, int *code);
void gt_leaks_free(struct gt_leaks *l);
int gt_report_leaks(struct gt_ctx *c, struct gt_json *j);

/* ---- growth.c */
struct gt_growth_site {
    int32_t site;
    double slope;
    int64_t first, last;   /* live bytes of the site at the first and last iteration used */
};
struct gt_growth {
    size_t n;              /* iterations found */
    size_t used;           /* points in the fit: after warm-up, closed */
    size_t warmup;
    int64_t *end_live;     /* live bytes at the end of each iteration (n) */
    double slope, intercept, noise;
    const char *verdict;   /* growing | stable | unknown */
    /* how the fitted points grew: the iterations whose end held more than the
     * point before (steps), how many of those peaked highest yet, and how
     * many points at the end held what the last did (steady_tail) */
    size_t steps, steps_at_new_highs, steady_tail;
    /* of the fitted points, steps seen in other spans of sampled kernels,
     * placed at step_ns a step from the iterations (0: none) */
    size_t later_used, later_seen;
    int64_t step_ns;
    /* then fitted over windows: their count (the iterations' one and the
     * later ones) and the gaps between them the level rose across */
    size_t windows, window_rises;
    int64_t one_off_step;   /* the slope was one step up between windows, of these bytes (0: not) */
    /* the fitted iterations a staircase Theil-Sen reads flat (growth.c's
     * held_steps): the rise from first to last, held (0: none), in how many
     * steps, the largest and where, whether one came in the span's second
     * half, and whether that is growth */
    struct {
        int64_t rise, largest;
        size_t steps;      /* rises past the scatter */
        size_t rises;      /* points that set a new high */
        int64_t late_rise;   /* of rise, over the span's second half */
        double fitted_slope; /* what Theil-Sen read before (held growing) */
        double since, since_slope;   /* held growing that began later: from which point, at what rate (0: not) */
        double largest_at;
        int late, growing;
        int under_threshold;   /* it would be growing, but its average is under --threshold */
    } held;
    int scatter_hides;      /* not growing, and the scatter could hide a tenth of the level: unknown */
    int64_t step_down;      /* the fitted points held, fell once by this much and held again: stable (0: not) */
    double step_down_at;
    size_t batch_rises;     /* the level rose only at iterations of the largest batch size yet, this many
                             * times, and held at each batch size: stable (0: not so) */
    struct gt_prealloc prealloc;    /* a preallocating framework's pool (bytes 0: none): stable not told */
    struct gt_growth_site *sites;
    size_t nsites;
    char memory[64];        /* the level it speaks of ("pool", "device", ...) */
    /* the level chosen by default (the pool) when device memory outside it
     * grew and the report follows that instead: its verdict and slope */
    const char *default_verdict;   /* NULL: the report is of the default level */
    double default_slope;
    const struct gt_iteration *loop;   /* the iterations fitted: n of them (the found ones, or a thread's loop) */
    /* the loop ran on several threads and the report is of one thread's own
     * allocations over its own loop (growth.c's thread_growth): that
     * thread, and what the whole process read over the found iterations */
    int64_t thread_tid;            /* 0: the whole process over the found iterations */
    const char *process_verdict;
    double process_slope;
    /* the memory was on several devices, none asked for, and the report is
     * of one device alone (growth.c's device_growth): it, how many there
     * were, and what they read together */
    int by_device, device;
    size_t devices;
    const char *devices_verdict;
    double devices_slope;
};
int gt_growth_compute(struct gt_ctx *c, struct gt_growth *g);
/* growth.c's fits, for growth_follow.c: over the iterations found, or over
 * its (one thread's loop of them), of c->sel's memory */
int gt_growth_on(struct gt_ctx *c, struct gt_growth *g);
int gt_growth_over(struct gt_ctx *c, const struct gt_iterations *its, struct gt_growth *g);
/* growth_shapes.c: the shapes the Theil-Sen verdict misreads, read after it (x, y: g->used points) */
void gt_growth_shapes(const struct gt_ctx *c, const struct gt_iterations *its, struct gt_growth *g, const double *x,
                      const double *y);
void gt_growth_free(struct gt_growth *g);
int gt_report_growth(struct gt_ctx *c, struct gt_json *j);
/* growth_out.c: device memory that did not grow, half or more of it a
 * caching allocator's cache at the last fitted iteration's end: the verdict
 * is the cache's (by: that allocator; NULL: not so) */
struct gt_cache_share {
    const struct gt_caching_allocator *by;
    int64_t cached, live;
};
int gt_growth_cache_share(struct gt_ctx *c, const struct gt_growth *g, struct gt_cache_share *cs);

/* ---- ledger.c (below): */
/* What NVML shows held on device d outside the trace (the CUDA context and
 * driver, kernel modules, other processes): used bytes minus all the trace
 * holds then (the pool at its reservation), at the last sample (at exit),
 * or the larger of the first and last when the last is not at the end. */
struct gt_untraced {
    int64_t bytes;     /* -1: no NVML samples */
    int64_t others;    /* of which other processes; -1 NVML cannot tell */
    int64_t no_ones;   /* of which no process's (the driver's and firmware's); -1 not told (then in others) */
    int64_t total;     /* NVML's total for the device (a MIG slice's own); -1 */
    int64_t t;
};

/* ---- prealloc.c: a preallocating framework's pool in selection s, made
 * before event before_ev and live at event live_at_ev (the loop's first; 0:
 * whenever freed, as JAX frees its pool at exit in a trace with no loop): the
 * allocations of a pooling allocator (its frames: XLA's or TensorFlow's BFC,
 * RAPIDS' pool or arena) holding half or more of the device memory then held,
 * or one allocation of half the device or more made through the driver in a
 * trace without stacks; one_only: only the latter's kind, one allocation of
 * half the device (the sweep's test). Its bytes (out: what, where), or 0. */
int64_t gt_preallocated(struct gt_ctx *c, const struct gt_sel *s, size_t before_ev, size_t live_at_ev, int one_only,
                        struct gt_prealloc *out);
/* its words: "one allocation of 100.00 GiB, 78% of device 0, was made" (or
 * "13 allocations of ... in all, ..., were made"); "its one allocation of 78%
 * of device 0" */
const char *gt_prealloc_made(const struct gt_prealloc *p, char *buf, size_t len);
const char *gt_prealloc_short(const struct gt_prealloc *p, char *buf, size_t len);
/* what to say to trace such a program at tensor level */
#define GT_PREALLOC_TO_DO "trace at tensor level: XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform (JAX)"

/* ---- room.c: what the process can really get for the level peak fits */
struct gt_room {
    int64_t total;              /* the device's (NVML, --device-bytes, devices table); -1 */
    const char *total_from;
    struct gt_untraced untraced; /* held outside the trace, per NVML */
    int64_t other_levels;       /* traced memory beside the fitted level (peaks summed) */
    int64_t graph_memory;       /* held for CUDA graphs' allocation nodes, at its highest; 0 none */
    int graph_memory_grew;      /* and it grew after its first reading (graphs captured per batch size?) */
    int64_t available;          /* total - untraced - other_levels - graph_memory; -1 not known */
    int64_t margin;             /* rounding and fragmentation; -1 no peak */
    int64_t pool_slack;         /* of it: the pool's slack at the batch size predicted (margin.c); -1 none */
    int device;                 /* the device measured */
    int pool_read;              /* the trace holds readings of the pool's reservation on the device */
    int64_t pool_reserved_max;  /* the fitted level is a pool: its reservation at its highest; -1 */
    int64_t granularity, pool_granularity;   /* address alignment the rounding bound uses, per level */
    int64_t rounded, rounded_pool;           /* live allocations at the peak given that bound, per level */
    /* the rounding bound grows with the batch: each sample adds live allocations (peak.c); its bytes a
     * sample over the batch sizes' own peaks (0: it does not grow), and the batch size margin was read at */
    double rounding_per_sample;
    int64_t rounding_from_batch_size;
};
int gt_room_compute(struct gt_ctx *c, const struct gt_sel *sel, uint32_t peak_ev, struct gt_room *r);
int64_t gt_room_rounding_of(const struct gt_trace *t, const struct gt_room *r, const struct gt_event *e);
int64_t gt_room_rounding_at(const struct gt_ctx *c, const struct gt_room *r, uint32_t at, int64_t *rounded,
                            int64_t *rounded_pool);
/* The highest reading of the stream-ordered pool's reservation on device d
 * (GT_ANY_DEVICE: any), -1 when the trace holds none. */
int64_t gt_room_pool_reserved_max(struct gt_ctx *c, int d);

/* ---- margin.c: the pool's slack per traced batch size, fitted like the peak */
struct gt_slack_bs {
    int64_t batch_size, in_use;   /* in_use: the batch size's max peak */
    int64_t reserved;             /* the pool's reservation read after that peak, before the next batch
                                     size started; -1 none */
};
struct gt_slack {
    int read_at_all;              /* the trace holds readings of the pool on the device */
    int pool_only;                /* the fitted level is the pool alone (else no slack is measured) */
    struct gt_slack_bs *bs;       /* per batch size, in gt_peak's order */
    size_t nbs, nread;            /* nread: batch sizes with a reading */
    struct gt_linfit fit;         /* slack = fixed + per_sample x batch_size over those read (3 or more) */
    double fixed, per_sample;     /* the line used: the fit's, or the largest slack read when its slope is < 0 */
    int slope_clamped;
    double deviation;             /* standard deviation of the reservation's residuals (peak + slack lines)
                                     beyond one step of the reservation (its rounding) */
    double xmean, sxx;            /* of the batch sizes read */
    int64_t granularity;          /* the reservation's step as its readings show it, 2 MiB at least */
    int64_t below;                /* -1, or a batch size whose reading is below its bytes in use */
    int usable;                   /* a slack line and a safety term can be given */
};
struct gt_peak;
int gt_slack_compute(struct gt_ctx *c, const struct gt_iterations *its, const struct gt_peak *pk, struct gt_slack *s);
/* The slack line at batch size n (never below 0), and the safety term there:
 * the reservation's rounding carried through the fit to n, and 2 residual
 * deviations widened with the distance from the sizes read (margin.c). */
double gt_slack_at(const struct gt_slack *s, double n);
double gt_slack_safety(const struct gt_slack *s, double n);
/* The largest n with use(n) + slack(n) + safety(n) <= room; 0 if none. */
int64_t gt_slack_largest(const struct gt_slack *s, const struct gt_linfit *use, double room);
void gt_slack_free(struct gt_slack *s);
/* The readings per batch size and the line: peak's text, and JSON "pool_slack". */
void gt_slack_print(const struct gt_slack *s);
void gt_slack_json(struct gt_json *j, const struct gt_slack *s);

/* ---- peak.c */
/* Per iteration, in order: did its peak pass every earlier one (a new high),
 * by how much, the allocations it made that outlived it (a caching
 * allocator's new segments), its failed allocations. */
struct gt_peak_high {
    int new_high;
    int64_t added;
    int64_t kept, failed;
};
struct gt_peak_bs {
    int64_t batch_size, max_peak;
    uint32_t peak_ev;           /* where max_peak was reached (GT_NO_EVENT: at an iteration's start) */
    double median_peak;
    size_t n;
};
/* Of several devices, each one's answer apart from the one given (peak.c). */
#define GT_PEAK_MAX_DEVICES 16
/* a failed allocation; the process died in it; the last, not closed, runs to the end of the record */
enum { GT_PEAK_CUT_BY_FAILURE = 1, GT_PEAK_CUT_BY_END = 2, GT_PEAK_NOT_CLOSED = 3 };
struct gt_peak_other {
    int device;
    int64_t largest;            /* its largest batch, given or withheld; -1 none */
    int given;
};
struct gt_peak {
    struct gt_sel sel;          /* the level and device the peaks are of */
    int multi_device;           /* the level spans this many devices (0: one); sel.device is the one told */
    int binding;                /* of them, told as the one that runs out first (else the busiest) */
    struct gt_peak_other others[GT_PEAK_MAX_DEVICES];
    size_t nothers;
    struct gt_window *w;        /* per iteration */
    unsigned char *incomplete;  /* per iteration: 0, or what cut it short (GT_PEAK_CUT_*): not fitted */
    size_t n;
    struct gt_peak_bs *bs;
    size_t nbs;
    struct gt_linfit fit;       /* fit.ok 0: no fit (fewer than 2 batch sizes) */
    int64_t device_total, max_batch_size;   /* -1 unknown, or withheld */
    int64_t withheld_max_batch_size;        /* >= 0: what a poor fit would have said; not given */
    const char *withheld_why;   /* why no largest batch is given (NULL: given, or no fit at all) */
    const char *what_to_do;     /* with it: what would give one */
    int history;                /* peaks follow history: a smaller batch after a larger one peaked as high, */
    int64_t carried_bytes;      /* or a peak held this much that other batch sizes allocated (-1: none), */
    int64_t carried_batch_size; /* at this batch size's peak */
    int preallocated;           /* a preallocating framework's pool (prealloc.c): no fit at all */
    struct gt_room room;
    struct gt_slack slack;      /* the pool's slack per batch size (a pool level only) */
    int64_t safety;             /* of the margin: the safety term at the batch size predicted; -1 none */
    int64_t held_through;       /* allocated before the loop and held through it: the least a fixed part can be */
    int64_t oom_batch_size;     /* the batch size of the iteration the program ended in, out of memory; -1 */
    char why_buf[256];          /* withheld_why, when it carries figures */
    int64_t other_grows_bs;     /* >= 0: device memory beside a pool fit rose at every batch size, up to
                                 * this one (from other_low to other_high): -1 not */
    int64_t other_low, other_high;
    char memory[64];            /* the level fitted ("pool", "device", ...) */
    int default_flat;           /* the default level (a pool) did not grow with the batch size and device
                                 * memory outside it did: this is the device level's answer */
    struct gt_peak_high *high;  /* per iteration */
    int64_t overall_peak;
    uint32_t overall_ev;
};
/* peak_history.c: new highs per iteration and whether peaks follow history (pk->high, pk->history);
 * memory carried between batch sizes' runs; bytes held from before the loop through every peak; traced
 * memory beside a pool that rose with the batch size (pk->other_*) */
void gt_peak_history(struct gt_ctx *c, const struct gt_iterations *its, struct gt_peak *pk);
void gt_peak_carried(struct gt_ctx *c, const struct gt_iterations *its, struct gt_peak *pk);
int64_t gt_peak_held_through(const struct gt_ctx *c, const struct gt_sel *sel, const struct gt_iterations *its,
                             const struct gt_peak *pk);
void gt_peak_other_levels(struct gt_ctx *c, const struct gt_iterations *its, struct gt_peak *pk);
/* peak_steps.c: the last iteration died in (killed, a signal) finished before the trace ended; the last,
 * not closed, ran past its step (work after the loop in it); the rounding margin a sample (room's
 * rounding_per_sample) */
int gt_peak_finished_before_the_end(struct gt_ctx *c, const struct gt_iterations *its);
int gt_peak_ran_past_its_step(const struct gt_ctx *c, const struct gt_iterations *its, const struct gt_sel *sel);
void gt_peak_rounding_per_sample(const struct gt_ctx *c, struct gt_peak *pk);
/* Below this R^2 the peaks do not follow fixed + per_sample x batch_size,
 * and a prediction from the fit is not worth acting on. */
#define GT_FIT_RELIABLE_R2 0.9
int gt_peak_compute(struct gt_ctx *c, struct gt_peak *pk);
void gt_peak_free(struct gt_peak *pk);
int gt_report_peak(struct gt_ctx *c, struct gt_json *j);

/* ---- oom.c, top.c, summary.c */
int gt_report_oom(struct gt_ctx *c, struct gt_json *j);
/* The out-of-memory request a program ended on (oom's ended_program: it
 * allocated nothing after it): bytes asked for (-1 unknown), device and pool
 * bytes live on its device when it failed, that device and its total (-1
 * unknown). */
struct gt_oom_end {
    int64_t requested, live_device, live_pool, device_total;
    int device;
    const char *call;       /* the failed call's name (the trace's, alive with it) */
    int64_t pool_unused;    /* a device request short by no more than the pool's reservation beyond its
                             * bytes in use (as last read; oom's pool_unused_bytes): that reserve; -1 */
    int64_t pool_split;     /* the pool's own request failed with at least as much unused in the pool
                             * (oom's pool_split_bytes): that unused; -1 */
    int memory;             /* the failed request's memory kind (GT_MEM_HOST, GT_MEM_MANAGED: not a device's) */
    size_t event;           /* its last failed attempt's event index */
};
/* Did the program end on an out-of-memory request? 1 (and *end filled when
 * not NULL) or 0. */
int gt_oom_ended_program(struct gt_ctx *c, struct gt_oom_end *end);
/* How many out-of-memory requests the program made (retries of one request
 * count once); *ended: it ended on the last of them. */
size_t gt_oom_requests(struct gt_ctx *c, int *ended);
int gt_report_top(struct gt_ctx *c, struct gt_json *j);
int gt_report_summary(struct gt_ctx *c, struct gt_json *j);
/* imported.c: memory of other processes still mapped at the end of the trace
 * (never counted as this process's): IPC-opened ranges, and mappings of
 * handles imported with cuMemImportFromShareableHandle. */
struct gt_imported {
    int64_t ipc_ranges, ipc_bytes, vmm_handles, vmm_bytes;
};
int gt_imported_at_end(struct gt_ctx *c, struct gt_imported *out);
/* ledger.c: the memory ledger, as summary's "ledger" key (j) or its text (NULL). */
int gt_report_ledger(struct gt_ctx *c, struct gt_json *j);
int gt_ledger_untraced(struct gt_ctx *c, int d, struct gt_untraced *u);
/* The same around time at (an out-of-memory failure): NVML's samples either side of it. */
int gt_ledger_untraced_near(struct gt_ctx *c, int d, int64_t at, struct gt_untraced *u);
/* What the trace shows device d holding just before time at, by the
 * ledger's buckets (framework allocator, program's direct allocations, each
 * library, the pool at its reservation with in_use beside it). Returns how
 * many were written (at most max), or minus an exit status. */
struct gt_bucket {
    const char *name, *kind;
    int64_t bytes, in_use;   /* in_use: the pool's bytes in use; -1 otherwise */
};
int gt_ledger_buckets(struct gt_ctx *c, int d, int64_t at, struct gt_bucket *out, int max);
/* The pool's reservation on device d at time at, from CUPTI's records; -1. */
int64_t gt_ledger_pool_reserved(struct gt_trace *t, int d, int64_t at);
int64_t gt_ledger_pool_reserved_after(struct gt_trace *t, int d, int64_t at);
/* The most the driver held for CUDA graphs' allocation nodes on device d
 * (GT_ANY_DEVICE: on any), from the shim's readings; 0 when none. least
 * (if not NULL): the smallest reading above 0, 0 when none. */
int64_t gt_ledger_graph_memory_max(struct gt_trace *t, int d, int64_t *least);

#endif
