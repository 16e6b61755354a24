/* sweep.h - gputrace sweep's model and search, apart from running anything
 * (sweep_plan.c; unit-tested in tests/unit/test_sweep_plan.c): the fit of
 * peak = fixed + per_sample x batch_size over the runs that fit, the largest
 * batch it predicts, and the choice of the next batch size to run until the
 * largest that runs and the smallest that fails are adjacent. */
#ifndef GT_SWEEP_H
#define GT_SWEEP_H
#include <stddef.h>
#include <stdint.h>

#include "fit.h"

#define GT_SWEEP_NONE INT64_MAX   /* hi before any run failed */
#define GT_SWEEP_MAX_BS ((int64_t)1 << 31)   /* no batch size is tried beyond this */

/* One run's result. */
struct gt_sweep_point {
    int64_t batch_size;
    int oom;            /* 1: it ran out of memory; peak is not a full peak then */
    int64_t peak;       /* bytes at the fitted level */
};

/* peak = fixed + per_sample x batch_size, "fitting what fits": least squares
 * over the runs that fit (the highest peak per batch size); when one line
 * does not hold every point (a residual beyond max(1 MiB, 1% of the
 * largest peak)), the smallest batch sizes are dropped until one holds the
 * rest (at least two points), since the largest batches are the ones the
 * prediction extrapolates from. */
struct gt_sweep_fit {
    struct gt_linfit fit;   /* fit.ok 0: fewer than 2 batch sizes ran */
    int linear;             /* one line holds every run that fit */
    double max_residual;    /* of the line over every run that fit, bytes */
    size_t used, points;    /* batch sizes in the fit, of those that ran */
    int64_t from_bs, to_bs; /* smallest and largest batch size in the fit */
};
void gt_sweep_fit_points(const struct gt_sweep_point *p, size_t n, struct gt_sweep_fit *f);

/* The largest batch size whose predicted peak is at most available bytes;
 * -1 when it cannot be told (no fit, peak not growing, available unknown),
 * 0 when not even batch size 1 is predicted to fit. */
int64_t gt_sweep_predict(const struct gt_sweep_fit *f, int64_t available);

/* What a run is for. */
enum gt_sweep_phase {
    GT_SWEEP_MODEL,    /* phase 1: the given batch sizes, ascending, to fit the model */
    GT_SWEEP_SEARCH,   /* phase 2: the prediction, then the boundary */
    GT_SWEEP_REPEAT,   /* the largest batch that ran, once more */
};

/* The whole plan of a sweep: which batch size to run next, given every
 * result so far. Phase 1 runs the model's batch sizes (default 1, 2, 4, 8)
 * ascending and stops at the first that runs out of memory. Phase 2
 * searches: lo is the largest batch size that ran (0: none yet), hi the
 * smallest that ran out of memory (GT_SWEEP_NONE: none yet). Each step runs
 * the model's prediction while no run refutes it (it says lo fits and hi
 * does not) and its last step was right. A step where it was wrong is
 * followed by steps without it that walk from the side it got wrong, 1, 2,
 * 4, ... batch sizes away, until a run lands on the other side, then bisect
 * (with the refitted model getting a step between), so a model a little off
 * costs a few runs and a useless one about twice plain bisection's. With no
 * model at all (no fit, peak not growing, device size unknown) the batch
 * size doubles until a run fails, then [lo, hi] is bisected. Once lo and hi are adjacent, lo
 * runs once more; if it fails then, it counts as failed and the search goes
 * on below it. */
struct gt_sweep_plan {
    int64_t *model_bs;     /* phase 1's batch sizes, ascending */
    size_t n_model, next_model;
    struct gt_sweep_point *pts;
    size_t n, cap;
    int64_t lo, hi;
    int64_t repeated;      /* the batch size whose second run fit (lo is proven when it is this) */
    int64_t available;     /* bytes the fitted level may use; -1 unknown (set by the caller) */
    int trust;             /* the next step may follow the model */
    int recalibrated;      /* available was lowered after an out-of-memory run: the model gets one more step */
    int recalibrations;    /* ...once per sweep */
    int dir;               /* -1: walking down from hi (the model asked too much), 1: up from lo, 0: bisect */
    int64_t step;          /* the walk's next step */
    int64_t proposed;      /* the batch size next() returned last */
    enum gt_sweep_phase proposed_phase;
    int last_model;        /* the last search step came from the model... */
    int64_t last_pred;     /* ...which predicted this largest batch */
};
/* sizes: phase 1's batch sizes (sorted and made unique here), or NULL for
 * the default 1, 2, 4, 8. */
void gt_sweep_plan_init(struct gt_sweep_plan *s, const int64_t *sizes, size_t n);
void gt_sweep_plan_free(struct gt_sweep_plan *s);
/* Records the result of the run next() asked for (or of any run). */
void gt_sweep_plan_add(struct gt_sweep_plan *s, int64_t batch_size, int oom, int64_t peak);
/* Lowers the bytes available to the fitted level after an out-of-memory run
 * showed memory held outside the trace; the first time, the model gets one
 * more step even if its last one was wrong (it was wrong about the device,
 * not about the batch). */
void gt_sweep_plan_lower_available(struct gt_sweep_plan *s, int64_t available);
/* The next batch size to run and why (*phase; *from_model: the model chose
 * it), or 0 when the sweep is over: lo and hi adjacent and lo run twice, or
 * nothing left to try below GT_SWEEP_MAX_BS. */
int64_t gt_sweep_plan_next(struct gt_sweep_plan *s, enum gt_sweep_phase *phase, int *from_model);
/* Proven: hi is lo + 1 and lo ran twice (or batch size 1 failed). */
int gt_sweep_plan_verified(const struct gt_sweep_plan *s);
/* The fit over the runs so far, as gt_sweep_fit_points. */
void gt_sweep_plan_fit(const struct gt_sweep_plan *s, struct gt_sweep_fit *f);

#endif
