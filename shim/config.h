/* The shim's configuration: every GPUTRACE_* environment variable, read once
 * by the constructor (gt_config_load) from one table (config.c), into one
 * struct that nothing writes afterwards. Nothing else reads the environment
 * for GPUTRACE_* variables. config.c depends on libc only, so a test program
 * can print the table (tests/progs/config_table.c) to check the README. */
#ifndef GPUTRACE_CONFIG_H
#define GPUTRACE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GPUTRACE_OUTPUT's default, also the name of a trace put in a directory (output.c) */
#define GT_OUTPUT_DEFAULT "gputrace-%p.db"

struct gt_config {
    char output_pattern[4096]; /* GPUTRACE_OUTPUT */
    int stack_depth;           /* GPUTRACE_STACK_DEPTH, 0 = off (what stacks.c may use; see gt_stacks_depth) */
    int stack_depth_python;    /* GPUTRACE_STACK_DEPTH_PYTHON: native frames where Python frames follow */
    int batch_size;            /* GPUTRACE_BATCH_SIZE (gputrace sweep's runs), 0: not set */
    bool quiet;                /* GPUTRACE_QUIET */
    bool disabled;             /* GPUTRACE_DISABLE: pass everything through */
    uint32_t queue_events;     /* GPUTRACE_QUEUE_EVENTS, rounded up to a power of two */
    uint32_t queue_wait_ms;    /* GPUTRACE_QUEUE_WAIT_MS */
    bool cupti;                /* GPUTRACE_CUPTI */
    char cupti_path[4096];     /* GPUTRACE_CUPTI_PATH: this libcupti and no other */
    char cupti_kinds[256];     /* GPUTRACE_CUPTI_KINDS: activity kinds, comma-separated (cupti.c parses) */
    bool nvtx;                 /* GPUTRACE_NVTX: arrange NVTX injection */
    uint32_t sample_ms;        /* GPUTRACE_SAMPLE_MS, 0 = off: NVML used-memory samples */
    bool python;               /* GPUTRACE_PYTHON: Python frames in call stacks */
    bool free_stacks;          /* GPUTRACE_FREE_STACKS: a stack on every free, not only on failed ones */
    bool unwind_check;         /* GPUTRACE_UNWIND_CHECK: memo stacks checked against libunwind's (unwind_memo.c) */
    bool debug_hooks;          /* GPUTRACE_DEBUG_HOOKS: one stderr line per entry-point lookup */
    char clock_mode[16];       /* GPUTRACE_CLOCK: "", "tsc" or "monotonic" (stamp.c) */
    char run_log[4096];        /* GPUTRACE_RUN_LOG: set by `gputrace run` (runlog.c) */
    uint32_t window_s;         /* GPUTRACE_WINDOW_S, 0 = off: the flight recorder's window (window.c) */
    uint32_t kernels_full_s;   /* GPUTRACE_KERNELS_FULL_S: every kernel for this long (cupti.c) */
    uint32_t kernels_every_s;  /* GPUTRACE_KERNELS_EVERY_S: then 1 s of every this many; 0, 1: every kernel */
};

/* Read-only for every file but config.c, which fills it once at load. */
extern const struct gt_config gt_config;

enum gt_config_type {
    GT_CFG_STRING, /* copied as is; empty or unset: the default */
    GT_CFG_FLAG,   /* set, non-empty and not "0": on */
    GT_CFG_BOOL,   /* 0 or 1; anything else: a warning and the default */
    GT_CFG_INT,    /* an integer from lo to hi; anything else: a warning and the default */
    GT_CFG_POW2,   /* GT_CFG_INT, rounded up to a power of two */
};

/* One row per variable: the whole configuration surface of the shim. */
struct gt_config_var {
    const char *name;        /* GPUTRACE_... */
    enum gt_config_type type;
    size_t offset, size;     /* the field of struct gt_config */
    const char *def;         /* default, as the README's table writes it ("off" for flags) */
    long lo, hi;             /* range of GT_CFG_INT / GT_CFG_POW2 */
    const char *help;
};
extern const struct gt_config_var gt_config_vars[];
extern const size_t gt_config_nvars;

void gt_config_load(void); /* constructor only: reads the environment, keeps warnings about bad values */
void gt_config_warn(void); /* a trace starts: says those warnings on stderr, once */
void gt_config_warn_once(void); /* a disabled shim's first CUDA call: the same, once */
void gt_config_passive(void);   /* another copy of the shim traces the process: pass through, silent */

#endif
