/* iterations.h - finding the training loop's iterations in a trace: from the
 * marker API (gputrace_iteration), from a repeated NVTX or marker range, or
 * automatically from the periodic pattern of allocations (or kernels). */
#ifndef GT_ITERATIONS_H
#define GT_ITERATIONS_H
#include <stddef.h>
#include <stdint.h>

#include "live.h"
#include "trace.h"

enum gt_iter_source { GT_ITER_NONE, GT_ITER_NVTX, GT_ITER_MARKER, GT_ITER_AUTO };

/* --iterations: best (marker API, then ranges, then automatic), or one source */
enum gt_iter_mode { GT_ITERMODE_BEST, GT_ITERMODE_NONE, GT_ITERMODE_NVTX, GT_ITERMODE_MARKER, GT_ITERMODE_AUTO };

struct gt_iter_opts {
    enum gt_iter_mode mode;
    const char *name;    /* --iteration NAME: the range that is one iteration */
};

struct gt_iteration {
    int64_t index;        /* marker API index, else 0, 1, 2, ... */
    int64_t batch_size;   /* -1: unknown */
    int64_t start, end;   /* ns */
    size_t first_ev, end_ev;   /* events [first_ev, end_ev) belong to it */
    int closed;           /* 0: its end is only where the trace ends (last marker or pattern iteration) */
};

/* The loop's kind of range run on another thread too (a thread per device
 * or per worker, each with its own loop): that thread's own iterations. */
struct gt_thread_loop {
    int64_t tid;
    struct gt_iteration *it;
    size_t n;
};

#define GT_MAX_LATER_LOOPS 4
struct gt_iterations {
    enum gt_iter_source source;
    char how[512];        /* one line for people: what was found and how */
    char lib_note[256];   /* "" or: library NVTX ranges were seen and passed over */
    char range[96];       /* ranges: the first one's message (cut), else "" */
    struct gt_iteration *it;
    size_t n;
    /* Kernels sampled (GPUTRACE_KERNELS_*) and the iterations from one span
     * of them: the steps seen in the other spans (iterations_spans.c), in
     * time order and closed, their index the span's (the steps between
     * spans were not seen: no step number), for growth over the whole run;
     * step_ns is the iterations' median step then (0: none seen). */
    struct gt_iteration *later;
    size_t nlater;
    int64_t step_ns;
    int from_kernels;     /* automatic, from kernels (not allocations) */
    /* Iterations from ranges whose kind ran on other threads as well: each
     * such thread's own loop (at most GT_MAX_THREAD_LOOPS), by which leaks
     * places that thread's allocations (it[] is one thread's loop: another
     * thread's leak made after it ended read as "after the loop", and
     * "leaks: none"; a helper's probe). */
    struct gt_thread_loop *threads;
    size_t nthreads;
    int64_t tid;          /* ranges: the thread whose loop it[] is (0: not told) */
    /* Ranges of other kinds, on the loop's thread and no deeper, that repeat
     * after the loop ended: a second loop (an evaluation after training),
     * which leaks and growth do not judge (what it left live was told as
     * "none": a helper's probe); each its first message, count and span. */
    struct gt_later_loop {
        char name[96];
        size_t n;
        int64_t start, end;
    } later_loops[GT_MAX_LATER_LOOPS];
    size_t nlater_loops;
};
#define GT_MAX_THREAD_LOOPS 254
/* gt_ctx_event_loops' mark of the events of it[]'s own thread */
#define GT_OWN_LOOP (GT_MAX_THREAD_LOOPS + 1)

/* Finds iterations per opts. sel is the memory the automatic detector uses to
 * place iteration boundaries where live memory is lowest. No iterations is
 * not an error (source GT_ITER_NONE, n 0). Returns an exit status. */
int gt_find_iterations(struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *sel,
                       const struct gt_iter_opts *o, struct gt_iterations *out);
void gt_iterations_free(struct gt_iterations *it);
const char *gt_iter_source_name(enum gt_iter_source s);
/* Nonzero: one of XLA's compilations ("XlaCompile:" ranges) that the
 * program waited for: on its main thread, and ended. */
int gt_xla_compilation(const struct gt_trace *t, const struct gt_range *r);
/* The CUDA library whose NVTX domain this is ("CCCL", "NCCL", ...), or NULL. */
const char *gt_nvtx_library_domain(const char *domain);
/* A flag per range (r in start order): PyTorch's operator or scope under
 * emit_nvtx, or inside an operator's range (range_owners.c). */
unsigned char *gt_torch_op_flags(const struct gt_range *r, size_t nr);
/* Nonzero: a name PyTorch's emit_nvtx gives an operator or a scope of its own. */
int gt_torch_op_range(const char *msg);
/* batch size from "batch_size=N" or "bs=N" in a message; -1 if none */
int64_t gt_parse_batch_size(const char *msg);
/* Per iteration, 1 where its batch size is above every earlier one's (the
 * first iteration's too); NULL (nothing to free) when that cannot tell
 * growth with the batch from growth per iteration: a batch size unknown,
 * one batch size only, or a batch size run for a single iteration before
 * the next (each needs a second iteration that would show a leak). */
unsigned char *gt_iter_new_largest_batch(const struct gt_iterations *its);

/* Shared by iterations.c, iterations_auto.c and iterations_kernels.c. */
/* First event index with t >= x (strict 0) or t > x (strict 1). */
size_t gt_iter_bound(const struct gt_trace *t, int64_t x, int strict);
/* The last time the trace knows of: last event, process end, range ends. */
int64_t gt_iter_trace_end(const struct gt_trace *t, const struct gt_range *r, size_t nr);
/* Appends a zeroed iteration to out (capacity in *cap). */
struct gt_iteration *gt_iter_push(struct gt_iterations *out, size_t *cap);
/* iterations_ranges.c: from the program's ranges (want_marker -1 any source,
 * 0 NVTX, 1 marker ranges; name: ranges of that name only; numbered: a kind
 * with a number in its name that repeats twice is enough); a numbered pair
 * of steps around the pattern found; one step range around it */
int gt_iter_from_ranges(struct gt_trace *t, const char *name, int want_marker, int numbered, struct gt_iterations *out);
/* After --iteration NAME named no range: " (did you mean ...?)" or "; its ranges: ..." into buf ("": none) */
void gt_iter_range_names_hint(struct gt_trace *t, const char *name, int want_marker, char *buf, size_t len);
int gt_iter_numbered_pair(struct gt_trace *t, int want_marker, struct gt_iterations *out);
int gt_iter_one_step_range(struct gt_trace *t, int want_marker, struct gt_iterations *out);
/* Automatic detection (iterations_auto.c, iterations_kernels.c): out stays
 * empty if no pattern. */
int gt_iter_from_alloc_pattern(struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *sel,
                               struct gt_iterations *out);
/* kernels starting before `after` are left out (INT64_MIN: none): the steps
 * after a compilation, whose kernels before it are the compiler's */
int gt_iter_from_kernel_pattern(struct gt_trace *t, int64_t after, struct gt_iterations *out);
/* The spans kernels were recorded in (iterations_spans.c): 1 when kernels
 * are not sampled (the whole trace); span s's kernels k[*lo .. *hi) (*lo:
 * where the previous span ended) and its end (-1: the trace's). */
size_t gt_kernel_span_count(const struct gt_trace *t);
void gt_kernel_span(const struct gt_trace *t, const struct gt_kernel *k, size_t nk, size_t s, size_t *lo, size_t *hi,
                    int64_t *end);
/* With the iterations in out from one span of sampled kernels: the steps
 * the other spans show, by the kernels every step begins with (out->later). */
void gt_iter_steps_in_other_spans(struct gt_trace *t, const struct gt_kernel *k, const uint32_t *seq, size_t nk,
                                  struct gt_iterations *out);
/* Is an (an allocation once per step's iterations, its allocations' events
 * seq_ev[0..n)) the loop's steps where the exact pattern's iterations
 * (exact) are coarser (finer: an is finer than exact; else at its scale and
 * spanning more)? Each step begins one backward pass, other work runs
 * between some, and the optimizer runs in all or none (iterations_passes.c). */
int gt_iter_one_pass_each(struct gt_trace *t, const uint32_t *seq_ev, size_t n, const struct gt_iterations *exact,
                          const struct gt_iterations *an, int finer);

#endif
