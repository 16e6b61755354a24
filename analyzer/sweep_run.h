/* sweep_run.h - one run of gputrace sweep (sweep_run.c): the command at one
 * batch size, traced in a fresh process, and what its traces say. */
#ifndef GT_SWEEP_RUN_H
#define GT_SWEEP_RUN_H
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"
#include "sweep.h"

struct gt_sweep_run {
    int number;                  /* 1, 2, ...: in the file names */
    int64_t batch_size;
    enum gt_sweep_phase phase;
    int from_model;              /* the model chose this batch size */
    int exit_status;             /* as a shell reports it: 128+N for signal N */
    double seconds;              /* the command's wall time */
    int ntraces;                 /* trace files it wrote (its own and its children's) */
    char *trace;                 /* the one with the highest peak; NULL: none */
    char *stderr_path;
    char level[64];              /* the fitted level in that trace: "device", "pool" */
    int64_t peak;                /* bytes at that level; -1: no trace */
    int64_t device_total;        /* the device's total bytes; -1 unknown */
    int64_t outside;             /* bytes held at other levels that count against the device */
    int oom;                     /* a trace ended on an out-of-memory request, or (oom_said) */
    int oom_said;                /* no trace did, but the run's stderr ended on the framework's own
                                  * out-of-memory error (XLA refuses a buffer past the device) */
    int host_oom;                /* a trace ended on a failed pinned host or managed request: not the device's */
    long oom_pid;                /* the process whose trace ended on it */
    int timed_out;               /* it ran past --run-timeout and was stopped */
    int64_t unaccounted;         /* that request + what was live fell short of the total by this */
    int64_t need_lb;             /* that request + what was live, less what was held outside the
                                  * fitted level: the least the run needed there; -1 unknown */
    int64_t pool_kept;           /* it failed outside the pool while the pool's reserve beyond its
                                  * bytes in use covered the shortfall: that reserve; -1 not so */
    char kept_call[48];          /* then the call that failed, */
    char *kept_trace;            /* in this trace (malloc'ed) */
    int64_t pool_split;          /* it failed in the pool's own request while the pool held at least
                                  * as much unused (oom's pool_split_bytes): that unused; -1 not so, */
    char *split_trace;           /* in this trace (malloc'ed) */
    int64_t preallocated;  /* a preallocating framework's pool before the first iteration (prealloc.c), or 0 */
    int64_t in_use;              /* under a stream-ordered pool: its bytes in use at their peak
                                  * (peak is then the pool's highest reservation read); -1 none */
    int pool_unread;             /* the fitted level is a pool the trace holds no reading of:
                                  * peak is bytes in use, without the pool's slack */
    int64_t untraced;            /* held on the device outside the trace by NVML's readings (the
                                  * CUDA context, kernel modules, other processes); -1 unknown */
    int64_t headroom;            /* a run that fit: the device's bytes it left unused at its peak
                                  * (room.c's available less its peak at the fitted level; a
                                  * lower bound, the other levels counted at their peaks, 0
                                  * where that falls below nothing); -1 unknown (no NVML
                                  * readings) */
    int64_t graph;               /* of peak: what the driver held for CUDA graphs */
    char error[700];             /* a trace that could not be read */
};

/* Runs argv at r->batch_size (r->number set) with its files in dir (an
 * absolute path) and measures it. Returns GT_EXIT_OK, or
 * GT_EXIT_SWEEP_FAILED when a trace could not be read (r->error says). */
int gt_sweep_run(struct gt_sweep_run *r, char *const *argv, const char *dir, int stack_depth, double timeout_s,
                 const struct gt_opts *o);
void gt_sweep_run_free(struct gt_sweep_run *r);
/* Does some argument hold "{bs}"? */
int gt_sweep_has_placeholder(char *const *argv);
/* The last lines of a file, indented, on f. */
void gt_sweep_print_tail(FILE *f, const char *path, int lines);

#endif
