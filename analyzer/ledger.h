/* ledger.h - what the ledger (ledger.c) reads beside the trace's events
 * (ledger_readings.c): NVML's samples, the pools' reservation and the memory
 * held for graphs at a given time, and what NVML shows held outside the
 * trace. Internal to the analyzer. */
#ifndef GT_LEDGER_H
#define GT_LEDGER_H
#include <stdint.h>

#include "analyzer.h"

struct gt_nvml_sample {
    int64_t t, used, process, total;   /* process -1: NVML cannot tell */
    int64_t reserved;                   /* of used, the driver's and firmware's own; -1: not told (before
                                         * schema 4, or NVML without memory info v2) */
    int64_t others;                     /* of used, the other processes NVML lists; -1: not told */
};

/* Of a sample's used bytes, the other processes' (the listed ones where told;
 * else all but this process and the driver's reservation, when told), and
 * what is no process's (the driver's reservation and its bookkeeping); -1
 * each where not known (no per-process figure; no_ones also when neither
 * figure was told apart: then it is inside others). */
void gt_nvml_split(const struct gt_nvml_sample *s, int64_t *others, int64_t *no_ones);
/* The first and last NVML samples of device d; 0 if it has none. */
int gt_ledger_samples(struct gt_trace *t, int d, struct gt_nvml_sample *first, struct gt_nvml_sample *last, int *code);
/* The first sample of device d at or after time at and before time before; 0 if none. */
int gt_ledger_sample_between(struct gt_trace *t, int d, int64_t at, int64_t before, struct gt_nvml_sample *out,
                             int *code);
/* The memory the driver held for graphs' allocation nodes on device d at time at; 0 none. */
int64_t gt_ledger_graph_memory_at(struct gt_trace *t, int d, int64_t at);
/* The pool's reservation on device d at time at (see ledger_readings.c); -1 none. */
int64_t gt_ledger_pool_reserved_at(struct gt_ctx *c, int d, int64_t at);
/* Does device d's pool keep what is freed in it, by its readings up to time at? 1 or 0. */
int gt_ledger_pool_keeps(struct gt_trace *t, int d, int64_t at);

#endif
