/* cli_options.c - every option of every gputrace command, one row each: its
 * name, the value it takes, how that value is read and where it goes, the
 * option set it belongs to (which commands take it: see commands.c), and
 * the text gputrace --help shows for it. cli.c reads the rows. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* --memory: a comma list of device, pool, managed, host, all. */
static const char *parse_memory(struct gt_args *a, const struct gt_command *cmd, const char *val)
{
    (void)cmd;
    static const char *const names[] = {"device", "pool", "managed", "host", "all"};
    static const unsigned masks[] = {GT_MASK(GT_MEM_DEVICE), GT_MASK(GT_MEM_POOL), GT_MASK(GT_MEM_MANAGED),
                                     GT_MASK(GT_MEM_HOST), GT_MASK_ALL};
    const char *bad = "--memory takes device, pool, managed, host or all, not \"%s\"";
    unsigned mask = 0;
    for (const char *s = val; *s; s += *s == ',') {   /* empty items are skipped */
        size_t len = strcspn(s, ","), k = 0;
        while (len && k < 5 && (strlen(names[k]) != len || strncmp(s, names[k], len)))
            k++;
        if (k == 5)
            return bad;
        if (len)
            mask |= masks[k];
        s += len;
    }
    if (!mask)
        return bad;
    a->base.mem_mask = mask;
    a->base.memory_set = 1;
    return NULL;
}

/* --iterations MODE for the reports; for export, A:B, a range of iteration
 * indices, and only that: one option meaning two things there let
 * `export --iterations auto` pass as a range that limits nothing. */
static const char *parse_iterations(struct gt_args *a, const struct gt_command *cmd, const char *val)
{
    int ranges = (cmd->takes & GT_OPTS_EXPORT) != 0;
    const char *colon = strchr(val, ':');
    if (ranges && !colon)
        return "export --iterations takes a range of iteration indices A:B (e.g. 2:5), not \"%s\"; "
               "--iteration NAME picks the range that is one iteration";
    if (ranges) {
        char *end;
        errno = 0;   /* (an index past int64 was taken as its largest, silently) */
        long long lo = strtoll(val, &end, 10), hi;
        if (end != colon || colon == val || *val == '-' || errno)
            return "--iterations A:B needs iteration indices A <= B, not \"%s\"";
        hi = strtoll(colon + 1, &end, 10);
        if (*end || !colon[1] || colon[1] == '-' || hi < lo || errno)
            return "--iterations A:B needs iteration indices A <= B, not \"%s\"";
        a->iter_a = lo;
        a->iter_b = hi;
        a->iter_range = 1;
        return NULL;
    }
    static const char *const modes[] = {"best", "none", "nvtx", "marker", "auto"};
    static const enum gt_iter_mode mode_of[] = {GT_ITERMODE_BEST, GT_ITERMODE_NONE, GT_ITERMODE_NVTX, GT_ITERMODE_MARKER,
                                                GT_ITERMODE_AUTO};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
        if (!strcmp(val, modes[k])) {
            a->base.iter.mode = mode_of[k];
            return NULL;
        }
    return "--iterations takes best, marker, nvtx, auto or none, not \"%s\"";
}

/* export --format: Chrome trace-event JSON is the one format. */
static const char *parse_format(struct gt_args *a, const struct gt_command *cmd, const char *val)
{
    (void)a;
    (void)cmd;
    return strcmp(val, "chrome") ? "--format takes chrome (Chrome trace-event JSON, which Perfetto reads), not \"%s\"" : NULL;
}

/* sweep --batch-sizes: a comma list of positive batch sizes. */
static const char *parse_batch_sizes(struct gt_args *a, const struct gt_command *cmd, const char *val)
{
    (void)cmd;
    const char *bad = "--batch-sizes takes a comma list of batch sizes from 1 to 2147483647 (e.g. 1,2,4,8), not \"%s\"";
    int n = 0;
    for (const char *s = val;; s++) {
        char *end;
        if (*s < '0' || *s > '9')
            return bad;
        long long v = strtoll(s, &end, 10);
        if (v < 1 || v > 2147483647LL || n == (int)(sizeof a->batch_sizes / sizeof a->batch_sizes[0]))
            return bad;
        a->batch_sizes[n++] = v;
        s = end;
        if (!*s)
            break;
        if (*s != ',')
            return bad;
    }
    a->nbatch_sizes = n;
    return NULL;
}

#define AT(field) offsetof(struct gt_args, field)
#define BIG 1000000000   /* beyond any sensible count of frames, sites, iterations or devices */

/* In gputrace --help's order: the rows with help text come first. */
const struct gt_option gt_options[] = {
    {"--json", NULL, NULL, GT_OPTS_JSON, GT_OPT_FLAG, AT(base.json), 0, 0, NULL, NULL,
     "machine-readable output: one object per file, an array\nof them when several files are given"},
    {"--memory", NULL, "KIND", GT_OPTS_SELECT, GT_OPT_CUSTOM, 0, 0, 0, parse_memory, NULL,
     "device | pool | managed | host | all, or a comma list.\n"
     "Default for growth, peak, oom: pool if the trace has pool\n"
     "(cudaMallocAsync) allocations, else device; leaks and top\ncount every kind. "
     "--memory or --device matching no memory\nof the trace is an error (exit 11)"},
    {"--device", NULL, "N", GT_OPTS_SELECT, GT_OPT_INT, AT(base.device), 0, BIG, NULL,
     "--device needs a device ordinal, not \"%s\"", "only memory of device N"},
    {"--device-bytes", NULL, "B", GT_OPTS_SELECT, GT_OPT_BYTES, AT(base.device_bytes), 1, INT64_MAX, NULL,
     "--device-bytes needs a size in bytes (e.g. 80G), not \"%s\"",
     "device memory size to fit batches into (default: the\ntrace's devices table)"},
    {"--iteration", NULL, "NAME", GT_OPTS_ITER, GT_OPT_STRING, AT(base.iter.name), 1, 0, NULL,
     "--iteration needs a range name%.0s", "the NVTX or marker range that is one iteration"},
    {"--iterations", NULL, "MODE", GT_OPTS_ITER, GT_OPT_CUSTOM, 0, 0, 0, parse_iterations, NULL,
     "best (default: marker API, then the most repeated\n"
     "outermost range, then automatic) | marker | nvtx | auto | none"},
    {"--frames", NULL, "N", GT_OPTS_SELECT, GT_OPT_INT, AT(base.frames), 1, BIG, NULL,
     "--frames needs a number from 1 to 1000000000, not \"%s\"", "frames shown per call site in text (default 4; JSON: all)"},
    {"--allocator-frames", NULL, NULL, GT_OPTS_REPORT, GT_OPT_FLAG, AT(base.allocator_frames), 0, 0, NULL, NULL,
     "also show a framework allocator's own innermost frames\n"
     "(PyTorch's CUDACachingAllocator, empty_cuda), which text\n"
     "folds into \"[N allocator frames]\" by default"},
    {"--full-names", NULL, NULL, GT_OPTS_SELECT, GT_OPT_FLAG, AT(base.full_names), 0, 0, NULL, NULL,
     "function names with their parameter lists and template\n"
     "arguments (text folds them: at::native::run_conv_plan)"},
    {"--all-frames", NULL, NULL, GT_OPTS_SELECT, GT_OPT_FLAG, AT(base.all_frames), 0, 0, NULL, NULL,
     "every frame: fold neither the allocator's, nor the\n"
     "dispatcher's (\"[9 dispatcher frames]\"), nor frames shared\n"
     "with other sites, and keep the C library's start-up"},
    {"--native", NULL, NULL, GT_OPTS_SELECT, GT_OPT_FLAG, AT(base.native), 0, 0, NULL, NULL,
     "a stack with Python frames: show its native frames too\n"
     "(text starts it at the program's own innermost Python\nline: train.py:42 in train_step)"},
    {"--top", NULL, "N", GT_OPTS_SELECT, GT_OPT_INT, AT(base.top), 1, BIG, NULL,
     "--top needs a number from 1 to 1000000000, not \"%s\"", "call sites listed (default 10)"},

    /* documented in their commands' help */
    {"--help", "-h", NULL, GT_OPTS_HELP, GT_OPT_FLAG, AT(help), 0, 0, NULL, NULL, NULL},
    {"--warmup", NULL, "N", GT_OPTS_REPORT, GT_OPT_INT, AT(base.warmup), 0, BIG, NULL,
     "--warmup needs a number of iterations, not \"%s\"", NULL},
    {"--all-iterations", NULL, NULL, GT_OPTS_PEAK, GT_OPT_FLAG, AT(base.all_iterations), 0, 0, NULL, NULL, NULL},
    {"--no-cache-heuristic", NULL, NULL, GT_OPTS_LEAKS, GT_OPT_FLAG, AT(base.cached_as_leaks), 0, 0, NULL, NULL, NULL},
    {"--fail-above", NULL, "B", GT_OPTS_GROWTH, GT_OPT_BYTES, AT(base.fail_above), 0, INT64_MAX, NULL,
     "--fail-above needs bytes per iteration (e.g. 1M), not \"%s\"", NULL},
    {"--threshold", NULL, "B", GT_OPTS_GROWTH, GT_OPT_BYTES, AT(base.threshold), 0, INT64_MAX, NULL,
     "--threshold needs bytes per iteration, not \"%s\"", NULL},
    {"--output", "-o", "FILE", GT_OPTS_OUTPUT, GT_OPT_STRING, AT(out), 1, 0, NULL,
     "-o needs a file name (to export and report, -o - is stdout)%.0s", NULL},
    {"--format", NULL, "FORMAT", GT_OPTS_EXPORT, GT_OPT_CUSTOM, 0, 0, 0, parse_format, NULL, NULL},
    {"--from", NULL, "T", GT_OPTS_EXPORT, GT_OPT_TIME, AT(from), 0, 0, NULL,
     "--from/--to need a time since the trace started (e.g. 1.5s, 200ms), not \"%s\"", NULL},
    {"--to", NULL, "T", GT_OPTS_EXPORT, GT_OPT_TIME, AT(to), 0, 0, NULL,
     "--from/--to need a time since the trace started (e.g. 1.5s, 200ms), not \"%s\"", NULL},
    {"--no-kernels", NULL, NULL, GT_OPTS_EXPORT, GT_OPT_FLAG, AT(no_kernels), 0, 0, NULL, NULL, NULL},
    {"--no-allocs", NULL, NULL, GT_OPTS_EXPORT, GT_OPT_FLAG, AT(no_allocs), 0, 0, NULL, NULL, NULL},
    {"--addr2line", NULL, "PATH", GT_OPTS_SYMBOLIZE, GT_OPT_STRING, AT(addr2line), 0, 0, NULL, NULL, NULL},
    {"--stack-depth", NULL, "N", GT_OPTS_RUN, GT_OPT_INT, AT(stack_depth), 0, 128, NULL,
     "--stack-depth takes 0 to 128, not \"%s\"", NULL},
    {"--quiet", NULL, NULL, GT_OPTS_RUN, GT_OPT_FLAG, AT(quiet), 0, 0, NULL, NULL, NULL},
    {"--batch-sizes", NULL, "A,B,C", GT_OPTS_SWEEP, GT_OPT_CUSTOM, 0, 0, 0, parse_batch_sizes, NULL, NULL},
    {"--max-runs", NULL, "N", GT_OPTS_SWEEP, GT_OPT_INT, AT(max_runs), 1, 1000, NULL,
     "--max-runs takes 1 to 1000 runs, not \"%s\"", NULL},
    {"--repeat", NULL, "K", GT_OPTS_SWEEP, GT_OPT_INT, AT(repeat), 2, 10, NULL,
     "--repeat takes 2 to 10 runs, not \"%s\"", NULL},
    {"--run-timeout", NULL, "T", GT_OPTS_SWEEP, GT_OPT_TIME, AT(run_timeout), 1000000, 0, NULL,
     "--run-timeout needs a time (e.g. 600, 10m, 1.5h), not \"%s\"", NULL},
    {"--dir", NULL, "DIR", GT_OPTS_SWEEP, GT_OPT_STRING, AT(dir), 1, 0, NULL, "--dir needs a directory%.0s", NULL},
};
const size_t gt_noptions = sizeof gt_options / sizeof gt_options[0];
