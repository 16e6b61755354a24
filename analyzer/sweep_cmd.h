/* sweep_cmd.h - what one `gputrace sweep` knows (sweep.c runs it) and its
 * result in words or JSON (sweep_out.c). */
#ifndef GT_SWEEP_CMD_H
#define GT_SWEEP_CMD_H
#include <limits.h>
#include <stdint.h>

#include "cli.h"
#include "sweep.h"
#include "sweep_run.h"

/* Everything one sweep knows. */
struct sweep {
    struct gt_args *a;
    char dir[PATH_MAX];
    struct gt_sweep_plan plan;
    struct gt_sweep_run *runs;
    size_t nruns, cap;
    int max_runs;
    int interrupted;        /* the signal ^C or a scheduler sent the sweep; 0 none */
    double t0;
    char level[64];         /* the fitted level of the first run that had one */
    int64_t total;          /* the device's total bytes; -1 unknown */
    int64_t outside;        /* the most any run held outside the fitted level */
    int64_t unaccounted;    /* the most a failed run's request + live fell short of the total */
    int64_t untraced;       /* the most NVML showed held outside a run's trace that fit; -1 unknown */
    struct gt_sweep_fit model;   /* phase 1's fit, which made the prediction */
    int modelled;
    int modelled_after_stop;   /* the fit shown was made when the sweep stopped in its model phase */
    int64_t predicted, available_predicted;   /* -1: none */
    const char *stopped;    /* NULL, or why the sweep stopped before its end */
    char why[600];          /* ... in words */
};

/* The bytes the fitted level may use: the device less what was held
 * outside it; -1 unknown. */
int64_t gt_sweep_available(const struct sweep *s);
const char *gt_sweep_phase_name(enum gt_sweep_phase p);
void gt_sweep_print_text(const struct sweep *s, double total_s);
void gt_sweep_print_json(const struct sweep *s, double total_s);

#endif
