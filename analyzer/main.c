/* main.c - the gputrace command line: parses options, dispatches to one
 * report per command (or to the launcher for `gputrace run`), runs it over
 * each trace file given, and turns results into the documented exit status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"
#include "viz.h"

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

static const char usage_main[] =
    "usage: gputrace COMMAND [OPTIONS] TRACE.db...\n"
    "\n"
    "Reports on GPU memory traces written by libgputrace.so. Several files (one\n"
    "per process or rank) give one section each.\n"
    "\n"
    "Commands:\n"
    "  run       run a program with tracing on (gputrace run --help)\n"
    "  summary   process, devices, event counts and drops, peaks, iterations,\n"
    "            one-line verdicts on leaks and growth\n"
    "  leaks     allocations live at process end, by allocation stack; memory a\n"
    "            caching allocator keeps until exit is reported apart\n"
    "  growth    live bytes at the end of each iteration, slope per iteration,\n"
    "            growing or stable, and the call sites that grow\n"
    "  peak      peak per iteration and per batch size, the fit\n"
    "            peak = fixed + per_sample x batch_size, the largest batch that fits\n"
    "  oom       each failed allocation: request, live bytes, device total, who\n"
    "            held the memory, how much smaller the batch had to be\n"
    "  top       call sites by bytes allocated, by peak live bytes, by count\n"
    "  symbolize add source file:line to the recorded frames (addr2line)\n"
    "  export    Chrome trace-event JSON for Perfetto / chrome://tracing\n"
    "  report    one self-contained HTML page of charts and tables\n"
    "\n"
    "Options (all commands):\n"
    "  --json             machine-readable output: one object per file, an array\n"
    "                     of them when several files are given\n"
    "  --memory KIND      device | pool | managed | host | all, or a comma list.\n"
    "                     Default for growth, peak, oom: pool if the trace has pool\n"
    "                     (cudaMallocAsync) allocations, else device; leaks and top\n"
    "                     count every kind\n"
    "  --device N         only memory of device N\n"
    "  --device-bytes B   device memory size to fit batches into (default: the\n"
    "                     trace's devices table)\n"
    "  --iteration NAME   the NVTX or marker range that is one iteration\n"
    "  --iterations MODE  best (default: marker API, then the most repeated\n"
    "                     outermost range, then automatic) | marker | nvtx | auto | none\n"
    "  --frames N         frames shown per call site in text (default 4; JSON: all)\n"
    "  --allocator-frames also show a framework allocator's own innermost frames\n"
    "                     (PyTorch's CUDACachingAllocator, empty_cuda), which text\n"
    "                     folds into \"[N allocator frames]\" by default\n"
    "  --top N            call sites listed (default 10)\n"
    "  -h, --help         help; gputrace COMMAND --help for a command\n"
    "  --version\n"
    "Byte sizes take K/M/G/T suffixes (KiB, x1024) or KB/MB/GB/TB (x1000).\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  growth --fail-above: memory grows faster than the limit\n"
    "  2  usage error\n"
    "  3  a trace file is missing, unreadable or not a regular file\n"
    "  4  not a SQLite file, or a truncated, corrupt or incomplete trace\n"
    "  5  a SQLite file that is not a gputrace trace\n"
    "  6  a trace written by a newer gputrace (schema version)\n"
    "  7  an empty trace: no events recorded\n"
    "  8  growth, or export --iterations A:B: no iterations found\n"
    "  9  symbolize: addr2line could not be run\n"
    "  10 export, report: the output file could not be written\n"
    "  70 internal error: out of memory\n"
    "With several files the status is that of the first file that failed; each\n"
    "failure prints one line on stderr: \"gputrace: FILE: what happened; what to do\".\n";

static const char help_summary[] =
    "usage: gputrace summary [--json] [OPTIONS] TRACE.db...\n"
    "\n"
    "The process (pid, host, rank, command line), its devices, duration, event\n"
    "counts and drops, the peak of each memory level (device, pool, managed, host)\n"
    "per device and when it happened, the iterations found and how, and one-line\n"
    "verdicts on leaks and growth.\n";

static const char help_leaks[] =
    "usage: gputrace leaks [--json] [--no-cache-heuristic] [OPTIONS] TRACE.db...\n"
    "\n"
    "Allocations still live when the process ended (never freed), grouped by\n"
    "the call stack that allocated them, largest first: bytes, count, frames.\n"
    "\n"
    "Cached memory, held until exit by design, is reported apart, not as a leak:\n"
    "PyTorch's default CUDA caching allocator reserves segments with cudaMalloc\n"
    "and never frees them; a cuBLAS or cuDNN handle holds its workspace while it\n"
    "lives, and PyTorch keeps its handles until exit. An allocation that is not\n"
    "pool memory counts as cached when:\n"
    "  - its stack passes through such a frame: a function or module containing\n"
    "    CUDACachingAllocator, DeviceCachingAllocator, c10::cuda::, libc10_cuda.so,\n"
    "    BFCAllocator, cupy.cuda.memory, MemoryPool::malloc, rmm::mr::,\n"
    "    cublasCreate, cublasLtCreate or cudnnCreate; or\n"
    "  - it has no recorded frames, is device memory, the trace freed no device\n"
    "    memory at all, and the program ran iterations (the caching pattern).\n"
    "Pool memory (cudaMallocAsync) is never cached: PyTorch's cudaMallocAsync\n"
    "backend makes one allocation per tensor, and the cache there is the\n"
    "driver's pool, which is not a traced allocation.\n"
    "--no-cache-heuristic reports everything live at exit as a leak.\n"
    "If the process was killed, \"at process end\" means when the trace stops.\n";

static const char help_growth[] =
    "usage: gputrace growth [--json] [--fail-above B] [--threshold B] [--warmup N] [OPTIONS] TRACE.db...\n"
    "\n"
    "Live bytes at the end of each iteration; the slope in bytes per iteration\n"
    "from a Theil-Sen fit (median of pairwise slopes, robust to odd iterations)\n"
    "over the iterations after warm-up (default: the first is skipped) whose end\n"
    "is known; and the call sites whose live memory grows, ranked by their slope.\n"
    "\n"
    "Verdict: growing when the slope exceeds --threshold (default 0 bytes) and\n"
    "the growth it predicts over the fitted iterations is more than 3 times the\n"
    "scatter (1.4826 x median absolute residual); stable otherwise; unknown with\n"
    "fewer than 3 iterations after warm-up.\n"
    "\n"
    "  --fail-above B   exit 1 when the slope exceeds B bytes per iteration (CI)\n"
    "  --threshold B    smallest slope called growing (default 0)\n"
    "  --warmup N       iterations skipped at the start (default 1)\n"
    "Exit 8 when no iterations are found.\n";

static const char help_peak[] =
    "usage: gputrace peak [--json] [--device-bytes B] [OPTIONS] TRACE.db...\n"
    "\n"
    "Peak live bytes within each iteration and when; the batch size of each\n"
    "iteration (\"batch_size=N\" or \"bs=N\" in the range message, or the marker\n"
    "API); per batch size the max and median peak; the least-squares fit\n"
    "peak = fixed + per_sample x batch_size over the max peaks, with R^2; the\n"
    "largest batch size predicted to fit: floor((device total - fixed) / per_sample);\n"
    "and what was live at the overall peak, by call site. Iterations cut short\n"
    "by a failed allocation are listed but not fitted. When the memory spans\n"
    "several devices, the busiest device is reported (--device N picks one).\n"
    "Without iterations the overall peak is still reported (exit 0).\n";

static const char help_oom[] =
    "usage: gputrace oom [--json] [OPTIONS] TRACE.db...\n"
    "\n"
    "Each failed allocation (an out-of-memory error): the bytes requested, the\n"
    "bytes live at that moment (the chosen level, and device and pool levels),\n"
    "the device total, by how much request + live exceeded it, the largest live\n"
    "allocations by call site, and, when iterations carry batch sizes, how much\n"
    "smaller the batch would have had to be: batch size at the failure minus the\n"
    "largest batch the peak fit predicts to fit (see gputrace peak --help).\n";

static const char help_top[] =
    "usage: gputrace top [--json] [--top N] [OPTIONS] TRACE.db...\n"
    "\n"
    "Call sites (allocation stacks) ranked by bytes allocated over the run, by\n"
    "their own peak of live bytes, and by number of allocations.\n";

enum cmd { CMD_SUMMARY, CMD_LEAKS, CMD_GROWTH, CMD_PEAK, CMD_OOM, CMD_TOP };
static const struct {
    const char *name;
    const char *help;
    int (*report)(struct gt_ctx *, struct gt_json *);
} commands[] = {
    [CMD_SUMMARY] = {"summary", help_summary, gt_report_summary},
    [CMD_LEAKS] = {"leaks", help_leaks, gt_report_leaks},
    [CMD_GROWTH] = {"growth", help_growth, gt_report_growth},
    [CMD_PEAK] = {"peak", help_peak, gt_report_peak},
    [CMD_OOM] = {"oom", help_oom, gt_report_oom},
    [CMD_TOP] = {"top", help_top, gt_report_top},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "gputrace: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see gputrace --help\n");
    return GT_EXIT_USAGE;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 1000000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_memory(const char *s, unsigned *mask)
{
    *mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "all"))
            *mask |= GT_MASK_ALL;
        else if (!strcmp(tok, "device"))
            *mask |= GT_MASK(GT_MEM_DEVICE);
        else if (!strcmp(tok, "pool"))
            *mask |= GT_MASK(GT_MEM_POOL);
        else if (!strcmp(tok, "managed"))
            *mask |= GT_MASK(GT_MEM_MANAGED);
        else if (!strcmp(tok, "host"))
            *mask |= GT_MASK(GT_MEM_HOST);
        else
            return -1;
    }
    return *mask ? 0 : -1;
}

/* Parses options and files after the command name. Returns GT_EXIT_OK, or
 * GT_EXIT_USAGE after printing the one-line error; *help set for --help. */
static int parse_args(enum cmd cmd, int argc, char **argv, struct gt_opts *o, char ***files, int *nfiles, int *help)
{
    *files = gt_xmalloc((size_t)(argc + 1) * sizeof **files);
    *nfiles = 0;
    int only_files = 0;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_files || a[0] != '-' || !a[1]) {
            (*files)[(*nfiles)++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_files = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = 1;
            return GT_EXIT_OK;
        }
        char name[64];
        const char *val = NULL, *eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        static const char *const flags[] = {"--json", "--no-cache-heuristic", "--allocator-frames"};
        int is_flag = 0;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            is_flag |= !strcmp(name, flags[k]);
        if (is_flag) {
            if (val)
                return usage_error("option %s takes no value", name);
        } else if (!val) {
            if (i + 1 >= argc)
                return usage_error("option %s needs a value", name);
            val = argv[++i];
        }
        int64_t b;
        if (!strcmp(name, "--json")) {
            o->json = 1;
        } else if (!strcmp(name, "--no-cache-heuristic") && cmd == CMD_LEAKS) {
            o->cached_as_leaks = 1;
        } else if (!strcmp(name, "--allocator-frames")) {
            o->allocator_frames = 1;
        } else if (!strcmp(name, "--frames")) {
            if (parse_int(val, &o->frames) || o->frames < 1)
                return usage_error("--frames needs a positive number, not \"%s\"", val);
        } else if (!strcmp(name, "--top")) {
            if (parse_int(val, &o->top) || o->top < 1)
                return usage_error("--top needs a positive number, not \"%s\"", val);
        } else if (!strcmp(name, "--warmup")) {
            if (parse_int(val, &o->warmup))
                return usage_error("--warmup needs a number of iterations, not \"%s\"", val);
        } else if (!strcmp(name, "--memory")) {
            if (parse_memory(val, &o->mem_mask))
                return usage_error("--memory takes device, pool, managed, host or all, not \"%s\"", val);
            o->memory_set = 1;
        } else if (!strcmp(name, "--device")) {
            if (parse_int(val, &o->device))
                return usage_error("--device needs a device ordinal, not \"%s\"", val);
        } else if (!strcmp(name, "--device-bytes")) {
            if (gt_parse_bytes(val, &b) || b <= 0)
                return usage_error("--device-bytes needs a size in bytes (e.g. 80G), not \"%s\"", val);
            o->device_bytes = b;
        } else if (!strcmp(name, "--iteration")) {
            if (!*val)
                return usage_error("--iteration needs a range name%s", "");
            o->iter.name = val;
        } else if (!strcmp(name, "--iterations")) {
            if (!strcmp(val, "best"))
                o->iter.mode = GT_ITERMODE_BEST;
            else if (!strcmp(val, "none"))
                o->iter.mode = GT_ITERMODE_NONE;
            else if (!strcmp(val, "nvtx"))
                o->iter.mode = GT_ITERMODE_NVTX;
            else if (!strcmp(val, "marker"))
                o->iter.mode = GT_ITERMODE_MARKER;
            else if (!strcmp(val, "auto"))
                o->iter.mode = GT_ITERMODE_AUTO;
            else
                return usage_error("--iterations takes best, marker, nvtx, auto or none, not \"%s\"", val);
        } else if (!strcmp(name, "--fail-above") && cmd == CMD_GROWTH) {
            if (gt_parse_bytes(val, &b))
                return usage_error("--fail-above needs bytes per iteration (e.g. 1M), not \"%s\"", val);
            o->fail_above = b;
        } else if (!strcmp(name, "--threshold") && cmd == CMD_GROWTH) {
            if (gt_parse_bytes(val, &b))
                return usage_error("--threshold needs bytes per iteration, not \"%s\"", val);
            o->threshold = b;
        } else {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown option %%s for gputrace %s", commands[cmd].name);
            return usage_error(msg, name);
        }
    }
    return GT_EXIT_OK;
}

/* Runs the report over one file. JSON goes to a buffer first, so that a
 * failure half-way never leaves half an object on stdout. */
static int run_one(enum cmd cmd, const char *path, const struct gt_opts *o, int nfiles, int index)
{
    struct gt_ctx c;
    int code = gt_ctx_open(&c, path, o);
    char *buf = NULL;
    size_t len = 0;
    if (!code) {
        if (o->json) {
            FILE *mem = gt_xmemstream(&buf, &len);
            struct gt_json j;
            gt_json_init(&j, mem);
            j.depth = nfiles > 1 ? 1 : 0;   /* elements of the top-level array */
            j.count[1] = 0;
            double t0 = gt_now();
            code = commands[cmd].report(&c, &j);
            gt_phase("report", t0);
            fclose(mem);
        } else {
            if (nfiles > 1) {
                printf("%s== %s", index ? "\n" : "", path);
                if (c.t.proc.rank >= 0)
                    printf(" (rank %lld, pid %lld)", (long long)c.t.proc.rank, (long long)c.t.proc.pid);
                else if (c.t.proc.pid >= 0)
                    printf(" (pid %lld)", (long long)c.t.proc.pid);
                printf(" ==\n");
            }
            double t0 = gt_now();
            code = commands[cmd].report(&c, NULL);
            fflush(stdout);
            gt_phase("report", t0);
        }
    }
    if (code > GT_EXIT_FAIL_ABOVE)
        fprintf(stderr, "gputrace: %s: %s\n", path, c.t.err[0] ? c.t.err : "failed");
    if (o->json && nfiles > 1) {
        printf("%s\n  ", index ? "," : "");
        if (code > GT_EXIT_FAIL_ABOVE) {
            struct gt_json j;
            gt_json_init(&j, stdout);
            j.depth = 1;
            j.after_key = 1;   /* no separator: written above */
            gt_json_obj(&j);
            gt_json_kstr(&j, "file", path);
            gt_json_kstr(&j, "error", c.t.err);
            gt_json_kint(&j, "exit_code", code);
            gt_json_obj_end(&j);
        } else if (buf) {
            /* the buffer starts at a fresh element: drop its leading layout */
            const char *s = buf;
            while (*s == '\n' || *s == ' ' || *s == ',')
                s++;
            fputs(s, stdout);
        }
    } else if (o->json && code <= GT_EXIT_FAIL_ABOVE && buf) {
        fputs(buf, stdout);
        fputc('\n', stdout);
    }
    free(buf);
    gt_ctx_close(&c);
    return code;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return GT_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
        fputs(usage_main, stdout);
        return GT_EXIT_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("gputrace %s (trace schema %d)\n", GPUTRACE_VERSION, GT_SCHEMA_VERSION);
        return GT_EXIT_OK;
    }
    if (!strcmp(name, "run"))
        return gt_cmd_run(argc - 1, argv + 1);
    if (!strcmp(name, "symbolize"))
        return gt_cmd_symbolize(argc - 1, argv + 1);
    if (!strcmp(name, "export") || !strcmp(name, "report"))
        return (name[0] == 'e' ? gt_cmd_export : gt_cmd_report)(argc - 1, argv + 1);
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            fputs(usage_main, stdout);
            return GT_EXIT_OK;
        }
        name = argv[2];
        if (!strcmp(name, "run") || !strcmp(name, "symbolize")) {
            char *args[] = {argv[2], "--help", NULL};
            return !strcmp(name, "run") ? gt_cmd_run(2, args) : gt_cmd_symbolize(2, args);
        }
        if (!strcmp(name, "export") || !strcmp(name, "report")) {
            char *args[] = {argv[2], "--help", NULL};
            return (name[0] == 'e' ? gt_cmd_export : gt_cmd_report)(2, args);
        }
        for (size_t k = 0; k < NCOMMANDS; k++)
            if (!strcmp(name, commands[k].name)) {
                fputs(commands[k].help, stdout);
                return GT_EXIT_OK;
            }
        return usage_error("unknown command \"%s\"", name);
    }
    enum cmd cmd = NCOMMANDS;
    for (size_t k = 0; k < NCOMMANDS; k++)
        if (!strcmp(name, commands[k].name))
            cmd = (enum cmd)k;
    if (cmd == NCOMMANDS)
        return usage_error("unknown command \"%s\"", name);

    struct gt_opts o = {.frames = 4, .top = 10, .warmup = 1, .fail_above = -1, .device_bytes = -1, .device = GT_ANY_DEVICE};
    char **files;
    int nfiles, help = 0;
    int code = parse_args(cmd, argc - 2, argv + 2, &o, &files, &nfiles, &help);
    if (code || help) {
        if (help)
            fputs(commands[cmd].help, stdout);
        free(files);
        return code;
    }
    if (nfiles == 0) {
        free(files);
        return usage_error("%s needs at least one trace file (TRACE.db)", commands[cmd].name);
    }
    int status = GT_EXIT_OK, fail_above = 0;
    if (o.json && nfiles > 1)
        printf("[");
    for (int i = 0; i < nfiles; i++) {
        int c = run_one(cmd, files[i], &o, nfiles, i);
        if (c == GT_EXIT_FAIL_ABOVE)
            fail_above = 1;
        else if (c && !status)
            status = c;
    }
    if (o.json && nfiles > 1)
        printf("\n]\n");
    free(files);
    return status ? status : fail_above ? GT_EXIT_FAIL_ABOVE : GT_EXIT_OK;
}
