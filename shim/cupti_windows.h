/* When sampled CUPTI activity is recorded (GPUTRACE_KERNELS_FULL_S and
 * GPUTRACE_KERNELS_EVERY_S): the schedule of the windows alone, with no
 * CUPTI call in it, so that it is tested on its own (tests/unit). cupti.c
 * asks it, each writer round, whether the window's state is due to change,
 * and tells it when it did. Writer thread only. */
#ifndef GPUTRACE_CUPTI_WINDOWS_H
#define GPUTRACE_CUPTI_WINDOWS_H

#include <stdbool.h>
#include <stdint.h>

struct gt_windows {
    uint64_t full_ns, every_ns; /* the settings, in ns */
    bool full;                  /* in the first period, which counts GPU work, not wall time */
    uint64_t work_ns, last_work; /* that work so far, and the start of the latest record of it */
    uint64_t busy_ns;           /* the records' time, with each pause between them counted BUSY_GAP_NS at most */
    uint64_t busy_to;           /* busy_ns counts up to here: the latest end of a record */
    uint64_t busy_at_new_name;  /* busy_ns when a kernel of a name not seen before began last */
    uint64_t next_toggle;       /* after the first period: when the window opens or closes */
    uint64_t period_end;        /* of the period the next window lies in */
    uint64_t rng;               /* where in its period each window lies (xorshift; never rand(): the program's) */
};

/* Recording from `now`: the first period when full_s > 0 (counted in GPU
 * work when work_kinds: kernels, copies or memsets are recorded to tell
 * it; else by the clock), else the first window at a random moment of the
 * first period. seed: any value, different between processes. */
void gt_windows_start(struct gt_windows *w, uint32_t full_s, uint32_t every_s, bool work_kinds, uint64_t now,
                      uint64_t seed);

/* A kernel (new_name: of a name no record had before), copy or memset of
 * ours ran from start_ns to end_ns. */
void gt_windows_work_at(struct gt_windows *w, uint64_t start_ns, uint64_t end_ns, bool new_name);

/* The window now open (recording) is due to close, or the one to come
 * (!recording) to open. */
bool gt_windows_due(const struct gt_windows *w, bool recording, uint64_t now);

void gt_windows_opened(struct gt_windows *w, uint64_t now); /* it lasts 1 s */
void gt_windows_closed(struct gt_windows *w, uint64_t now); /* the next lies in the next period */

/* The rule that ends the first period, in words for the trace's note
 * (empty when the first period goes by the clock). */
void gt_windows_first_period_words(const struct gt_windows *w, char *out, unsigned size);

#endif
