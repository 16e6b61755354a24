/* sweep.h - gputrace sweep's model and search, apart from running anything
 * (sweep_fit.c, sweep_plan.c and sweep_margin.c; unit-tested in
 * tests/unit/test_sweep_plan.c): the fit of
 * peak = fixed + per_sample x batch_size over the runs that fit, the largest
 * batch it predicts, and the choice of the next batch size to run until the
 * largest that runs and the smallest that fails are adjacent. */
#ifndef GT_SWEEP_H
#define GT_SWEEP_H
#include <stddef.h>
#include <stdint.h>

#include "fit.h"

#define GT_SWEEP_NONE INT64_MAX   /* hi before any run failed */
#define GT_SWEEP_MAX_BS ((int64_t)INT32_MAX)   /* no batch size is tried beyond this: the shim takes GPUTRACE_BATCH_SIZE up to it */
/* Times phase 1 may go 16 times larger when its peaks were flat: a model's
 * bytes per sample can hide under what a step holds apart from them (an MLP
 * of 32 layers of 1024 in JAX on an H200 peaked at 340.17 MiB at batch sizes
 * 2 and 4 alike, at its update, session 33); a command that ignores the batch
 * size costs 3 runs more. */
#define GT_SWEEP_WIDEN 3

/* One run's result. */
struct gt_sweep_point {
    int64_t batch_size;
    int oom;            /* 1: it ran out of memory */
    int64_t peak;       /* bytes at the fitted level; for a run out of memory, a
                         * lower bound of what it needed there (live at the
                         * failure + the request that failed), -1 unknown */
    int64_t in_use;     /* a run that fit under a stream-ordered pool whose
                         * reservation was read: its bytes in use at their
                         * highest (peak less in_use is the pool's slack);
                         * -1 (or 0) unknown */
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
    GT_SWEEP_MARGIN,   /* below a largest whose runs' peaks varied by half a sample or more */
};

/* The whole plan of a sweep: which batch size to run next, given every
 * result so far. Phase 1 runs the model's batch sizes ascending and stops at
 * the first that runs out of memory; by default 1, 2, 4. Phase 2
 * searches: lo is the largest batch size that ran (0: none yet), hi the
 * smallest that ran out of memory (GT_SWEEP_NONE: none yet; a batch size
 * seen both fitting and failing counts as failed). Once a search run fits
 * with a peak (under a pool read, bytes in use) below 15/16 of the
 * available bytes, the model is the secant
 * through lo and the largest batch size that fit below it (the local slope
 * tells how far the boundary is; a fit the small batches dominate does
 * not); the first secant is followed even when the fit got lo's peak wrong.
 * - No failure yet: the first step, and each after a run whose peak the
 *   model foretold (within max(1 MiB, 1%)), is the model's prediction;
 *   after a run it got wrong, the step reaches at least half of
 *   lo further, then lo, 2 lo, ... (a model wrong about the peak is no
 *   guide to the boundary: under a caching allocator a peak near the device
 *   size shows what the allocator kept, not what the batch needed). With no
 *   model at all (no fit, peak not growing, device size unknown) the batch
 *   size doubles.
 * - A bracket: the secant's prediction (one below hi where it points at or
 *   past hi, also once after its own step failed, counting from the last
 *   run that fit); a model step one below a failure that failed allows no
 *   other such step until a model step fits: bisection instead (under cudaMallocAsync a failure's lower bound
 *   lies on the in-use line and each one lowered the model by one sample),
 *   unless a bisection has fit since, no failure lowered the bytes
 *   available since, and the secant through the new lo points at most an
 *   eighth of the bracket past hi.
 *   Without a secant: the model's prediction while it is consistent with every run
 *   (it says lo fits and hi does not), its last step was right and it
 *   foretold lo's peak. Where a step of it failed, the next steps walk down
 *   from hi, 1, 4, 16, ... batch sizes away (unless its trace showed a
 *   need past the available bytes), until a run fits or half the
 *   bracket is reached (a model a little off, as when the CUDA context, in
 *   no trace, takes what it predicted, costs a few runs), unless a failure
 *   showed a need far past the device; where a step of it fit past its
 *   prediction, they walk up from lo. Otherwise regula falsi on
 *   need(bs) - available, from lo's peak along the steepest line to a
 *   failure's lower bound (what its trace showed live at the failure plus
 *   the request), not believed in the last eighth of the bracket unless two
 *   failures agree on it (a request that failed just past the device's end
 *   says nothing of how far past its batch was); bisection when it cannot
 *   be told, or when two model or regula falsi steps running did not halve
 *   the bracket; and under a pool read, when lo's reservation lies in the
 *   last sixteenth of the bytes available, more than a point above the
 *   share of in use the run below it held, and the model sees no room past
 *   lo (the pool held what the device had left, not what lo needed).
 * Once lo and hi are adjacent, lo runs once more; if it fails then, it
 * counts as failed and the search goes on below it.
 * Once lo is proven, the margin: when lo's runs' peaks differed by half a
 * sample or more (the spread; a sample is the median slope between two
 * runs that fit at or below lo, Theil-Sen), whether a fresh
 * run at lo fits is a matter of chance (a transformer under cudaMallocAsync
 * on an H100: 150 fit twice with pool peaks 0.57 GiB apart, a sample 0.52
 * GiB, and plain runs fit at 150 in 4 of 6). The answer is then the batch
 * size ceil(spread / sample) below lo, which leaves the whole spread as
 * room, proven by its own runs; if one of them fails, the search goes on
 * below it as in a band. Once a sweep.
 * Under a pool whose reservation was read, the room is also what lo would
 * need if its slack (reservation beyond bytes in use and a fixed part, as a
 * share of them) were the highest seen in any large run that fit (in use at
 * least a quarter of lo's), and higher than lo's own by as much again (the
 * same allowance as the spread's), when that is above lo's own: the slack takes
 * a few values between fresh runs (the transformer at 140 on an H100: 3.4%,
 * 3.5%, 4.3% and 6.6% of 69.8 GiB in use, in 14 runs, traced or not), and
 * two runs of lo that drew the same low value say nothing of the others
 * (session 25: 152 fit twice at 3.4%, 83 had drawn 4.4%; plain runs of 152
 * failed 3 of 3). A smaller run that reserved as much as lo is no draw:
 * the pool held all the device gave it.
 * And under a pool whose reservation was read, the room is at least
 * GT_SWEEP_POOL_DRAW of lo's bytes in use, less what lo's runs left of the
 * bytes available at their peak: a sweep's few runs cannot show a draw that
 * comes once in ten (the H200 below), so the least room is the widest
 * spread measured between fresh runs of one batch size. A run that
 * reserved up to the device's end counts in that spread: the pool's draw
 * there is at least what it took (the conv net below). */
#define GT_SWEEP_POOL_DRAW 0.051   /* of bytes in use: the conv net at 265 on an H200 reserved
                                    * 132.94 and 138.81 GiB (0.17 short of the end) for the same
                                    * 116.20 GiB in use, 5.05% apart, in two fresh runs of two
                                    * sweeps (sessions 29 and 30); with 3.2% (the widest before: the
                                    * transformer at 140 on an H100, 3.41% to 6.59% in 14 runs) a
                                    * sweep answered 269, which 4 of 8 runs on three hosts failed
                                    * while 265 fit every run (session 30). On an H200 the
                                    * transformer's 268 reserved 137.84 to 138.84 GiB for 133.38 in
                                    * use, and its 269 fit 4 runs and failed the 5th (session 29) */

/* Why the margin leaves the room it does (struct gt_sweep_plan's room). */
enum gt_sweep_room {
    GT_SWEEP_ROOM_SPREAD,   /* lo's runs' peaks differed */
    GT_SWEEP_ROOM_SLACK,    /* another large run drew more of the pool's slack */
    GT_SWEEP_ROOM_DRAW,     /* the least room a pool's draw asks (GT_SWEEP_POOL_DRAW) */
};
struct gt_sweep_plan {
    int64_t *model_bs;     /* phase 1's batch sizes, ascending */
    int64_t model_top;     /* the largest batch size phase 1 ran */
    int last_sec;          /* the last search step was the secant's (see sweep_plan.c) */
    int model_fails;       /* model steps in a row that ran out of memory */
    int creep;             /* one of them was one below a failure: no other until one fits
                            * (2: a bisection fit since; see sweep_plan.c) */
    int creep_held;        /* ...and a failure since lowered the bytes available: 2 is not given */
    int64_t hi_before;     /* hi before the last run */
    size_t n_model, next_model;
    int widened;           /* sizes phase 1 added because its peaks were flat (gt_sweep_plan_widen) */
    struct gt_sweep_point *pts;
    size_t n, cap;
    int64_t lo, hi;
    int fits_needed;       /* runs of lo that must fit for it to be proven (--repeat; 2 by default) */
    int64_t available;     /* bytes the fitted level may use; -1 unknown (set by the caller) */
    int64_t proposed;      /* the batch size next() returned last */
    enum gt_sweep_phase proposed_phase;
    int64_t expected_peak; /* ...and the peak the model foretold for it; -1 none */
    int searched;          /* search runs so far */
    int trust;             /* the model's last step was right */
    int recalibrated;      /* available was lowered after a failure: the model gets one more step... */
    int recalibrations;    /* ...once per sweep (it was wrong about the device, not the batch) */
    int dir;               /* -1: walking down from hi (the model asked too much), 1: up from lo, 0: none */
    int64_t step;          /* the walk's next step */
    int last_kind;         /* the last search step: 1 the model, 2 regula falsi, 0 a walk, bisection, doubling */
    int prev_kind;         /* ...and the one before */
    int64_t last_pred;     /* the model's prediction at the last search step */
    int foretold;          /* the last search run fit with the peak the model foretold */
    int blind;             /* search runs in a row that fit, with no failure yet, the model wrong */
    int64_t width1, width2;/* the bracket's width before the last search step and before the one
                            * before it (0: no bracket then) */
    int64_t crept_to;      /* the last search step was the model's lo + 1 (it saw no room): that
                            * batch size; 0 none */
    int64_t band_step;     /* a batch size that had fit failed (an unsteady boundary): the walk's
                            * next step down from hi, doubling; 0 none (ended by a failure whose
                            * trace places the boundary below hi - 1: the device shrank) */
    int64_t marginal;      /* the lo whose runs' peaks varied by half a sample or more; 0 none */
    int64_t spread;        /* ...by this many bytes (peaks of lo's runs apart) */
    int64_t room;          /* ...the room the margin leaves above lo's highest peak: the
                            * spread, the pool's slack allowance or the draw's, the largest */
    double slack_min, slack_max;   /* the pool's slack over the large runs that fit, as a
                            * share of bytes in use beyond its fixed part; -1: not known
                            * (no pool read) */
    double slack_own;      /* ...the highest of lo's own runs */
    int64_t slack_max_bs;  /* ...the batch size of a run that drew slack_max */
    int slack_runs;        /* ...over this many runs */
    enum gt_sweep_room room_why;   /* ...and why that much */
    int64_t draw;          /* ...GT_SWEEP_POOL_DRAW of lo's bytes in use (0: no pool read) */
    int64_t left;          /* ...what lo's highest peak left of the bytes available (-1 unknown) */
    double per_sample;     /* ...against a sample of this many (Theil-Sen over the runs that fit) */
    int64_t settle;        /* the margin's batch size, until one of its runs fails; 0 none */
};
/* sizes: phase 1's batch sizes (sorted and made unique here), or NULL for
 * the default series 1, 2, 4. */
void gt_sweep_plan_init(struct gt_sweep_plan *s, const int64_t *sizes, size_t n);
void gt_sweep_plan_free(struct gt_sweep_plan *s);
/* Records the result of the run next() asked for (or of any run): peak as
 * in struct gt_sweep_point. */
void gt_sweep_plan_add(struct gt_sweep_plan *s, int64_t batch_size, int oom, int64_t peak);
/* The last run added fit under a pool whose reservation was read: its bytes
 * in use at their highest (see struct gt_sweep_point). */
void gt_sweep_plan_set_in_use(struct gt_sweep_plan *s, int64_t in_use);
/* Lowers the bytes available to the fitted level after an out-of-memory run
 * showed memory held outside the trace (never raises them); the first time,
 * the model gets one more step even if its last one was wrong. */
void gt_sweep_plan_lower_available(struct gt_sweep_plan *s, int64_t available);
/* The next batch size to run and why (*phase; *from_model: the model chose
 * it), or 0 when the sweep is over: lo and hi adjacent and lo run twice
 * (and the margin's batch size too, when one is taken), or nothing left to
 * try below GT_SWEEP_MAX_BS. */
int64_t gt_sweep_plan_next(struct gt_sweep_plan *s, enum gt_sweep_phase *phase, int *from_model);
/* Proven: hi is lo + 1 and lo ran twice (or batch size 1 failed), and
 * the margin's batch size, if one was taken, ran as often. */
int gt_sweep_plan_verified(const struct gt_sweep_plan *s);
/* The largest batch size the sweep answers: the margin's once it is
 * proven, else lo (0: none ran). */
int64_t gt_sweep_plan_answer(const struct gt_sweep_plan *s);
int gt_sweep_plan_fits_at(const struct gt_sweep_plan *s, int64_t bs);   /* runs of bs that fit */
/* lo is proven (and lo >= 2): takes the margin below it when its runs ask
 * for room (see struct gt_sweep_plan), once a sweep (sweep_margin.c). */
void gt_sweep_plan_take_margin(struct gt_sweep_plan *s);
/* A sample's bytes: the median slope between every two runs that fit at or
 * below batch size upto (Theil-Sen); 0 when fewer than two did. */
double gt_sweep_plan_sample(const struct gt_sweep_plan *s, int64_t upto);
/* Phase 1 ran its sizes and their peaks did not grow: adds one 16 times
 * the largest (at most GT_SWEEP_WIDEN times, none past GT_SWEEP_MAX_BS) and
 * returns 1; 0 when none is added. */
int gt_sweep_plan_widen(struct gt_sweep_plan *s);
/* The fit over the runs so far, as gt_sweep_fit_points. */
void gt_sweep_plan_fit(const struct gt_sweep_plan *s, struct gt_sweep_fit *f);

#endif
