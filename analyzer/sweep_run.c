/* sweep_run.c - one run of gputrace sweep: the user's command at one batch
 * size, in a fresh process under the shim ({bs} in its arguments replaced,
 * GPUTRACE_BATCH_SIZE set, trace, stdout and stderr in the sweep's
 * directory), then what its traces say, read with the analyzer's own code:
 * the peak at the level the program's allocator shows (gt_peak_compute),
 * what it held outside that level, whether it ended on an out-of-memory
 * request (gt_oom_ended_program) and whether it preallocated the device. */
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer.h"
#include "format.h"
#include "subprocess.h"
#include "sweep_run.h"

/* arg with every "{bs}" replaced by bs (malloc'ed) */
static char *substitute(const char *arg, int64_t bs)
{
    char num[32];
    int nl = snprintf(num, sizeof num, "%lld", (long long)bs);
    size_t n = 0;
    for (const char *s = arg; (s = strstr(s, "{bs}")); s += 4)
        n++;
    char *out = gt_xmalloc(strlen(arg) + n * (size_t)nl + 1), *o = out;
    for (const char *s = arg;;) {
        const char *hit = strstr(s, "{bs}");
        size_t len = hit ? (size_t)(hit - s) : strlen(s);
        memcpy(o, s, len);
        o += len;
        if (!hit)
            break;
        memcpy(o, num, (size_t)nl);
        o += nl;
        s = hit + 4;
    }
    *o = 0;
    return out;
}

int gt_sweep_has_placeholder(char *const *argv)
{
    for (; *argv; argv++)
        if (strstr(*argv, "{bs}"))
            return 1;
    return 0;
}

/* Is name one of this run's traces: STEM.db or STEM.PID.db (a child's)? */
static int is_trace_of(const char *name, const char *stem)
{
    size_t sl = strlen(stem), nl = strlen(name);
    if (strncmp(name, stem, sl) || nl < sl + 3 || strcmp(name + nl - 3, ".db"))
        return 0;
    if (nl == sl + 3)
        return 1;
    if (name[sl] != '.')
        return 0;
    for (size_t i = sl + 1; i < nl - 3; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return nl > sl + 4;
}

/* Bytes that count against the device's capacity but not at the fitted
 * level (device memory under cudaMallocAsync: libraries' own workspaces),
 * on the fitted level's device: the sum of their peaks, an upper bound. */
static int64_t held_outside(struct gt_ctx *c, const struct gt_sel *sel)
{
    struct gt_level *lv;
    size_t n = gt_levels(&c->t, &c->p, &lv);
    int64_t out = 0;
    for (size_t i = 0; i < n; i++)
        if ((lv[i].memory == GT_MEM_DEVICE || lv[i].memory == GT_MEM_POOL) && !(sel->mem_mask & GT_MASK(lv[i].memory)) &&
            (sel->device == GT_ANY_DEVICE || lv[i].device == sel->device))
            out += lv[i].peak;
    free(lv);
    return out;
}

/* A preallocating framework's pool made before the first iteration
 * (anywhere, when no iterations are found): its bytes, or 0 (prealloc.c:
 * one allocation of half the device or more, by XLA's, TensorFlow's or
 * RAPIDS' allocator, or through the driver where the run has no stacks: a
 * PyTorch job holding a dataset of 60% of the device through cudaMalloc is
 * swept; a growing pool's regions are too, its peaks following the batch
 * size at their granularity). */
static int64_t preallocated(struct gt_ctx *c)
{
    int found = c->iters_loaded && c->iters.n;
    size_t end = found ? c->iters.it[0].first_ev : c->t.nev;
    struct gt_sel s = {.mem_mask = GT_MASK(GT_MEM_DEVICE) | GT_MASK(GT_MEM_POOL), .device = GT_ANY_DEVICE};
    return gt_preallocated(c, &s, end, found ? end : 0, 1, NULL);
}

/* Reads one trace of the run into r (the one with the highest peak wins). */
static int measure_trace(struct gt_sweep_run *r, const char *path, const struct gt_opts *o)
{
    struct gt_ctx c;
    int code = gt_ctx_open(&c, path, o);
    if (code == GT_EXIT_EMPTY) {   /* used CUDA, allocated nothing */
        gt_ctx_close(&c);
        if (r->peak < 0)
            r->peak = 0;
        return GT_EXIT_OK;
    }
    struct gt_peak pk;
    memset(&pk, 0, sizeof pk);
    if (!code)
        code = gt_peak_compute(&c, &pk);
    if (code) {
        snprintf(r->error, sizeof r->error, "%.300s: %.300s", path, c.t.err[0] ? c.t.err : "cannot be read");
        gt_peak_free(&pk);
        gt_ctx_close(&c);
        return code;
    }
    /* under a pool, the peak is its reservation at its highest (the rest of
     * the ledger is held outside); in use where no reading exists, said */
    int pool = (pk.sel.mem_mask & GT_MASK(GT_MEM_POOL)) != 0;
    int64_t reserved = pool ? pk.room.pool_reserved_max : -1;   /* (room.c read it, as report.js takes it) */
    /* what the driver held for CUDA graphs' nodes is the run's too (a
     * captured step's nodes grow with its batch), in no level: added */
    int64_t level_peak = reserved > pk.overall_peak ? reserved : pk.overall_peak;
    int64_t peak = level_peak + gt_ledger_graph_memory_max(&c.t, pk.sel.device, NULL);
    if (peak > r->peak || !r->trace) {
        r->peak = peak;
        /* the room: the device less what NVML showed held outside the
         * trace, the other levels and the graphs' memory */
        r->headroom = pk.room.available < 0 ? -1   /* (a lower bound below nothing is 0: still known) */
                      : pk.room.available > level_peak ? pk.room.available - level_peak : 0;
        /* NVML's figure is against NVML's total; the sweep's bytes available
         * are against the devices table's: held outside it by their difference */
        r->untraced = pk.room.untraced.bytes;
        if (r->untraced >= 0 && pk.room.total > 0 && pk.device_total > 0 && pk.room.total_from &&
            !strcmp(pk.room.total_from, "NVML")) {
            r->untraced += pk.device_total - pk.room.total;
            if (r->untraced < 0)
                r->untraced = 0;
        }
        r->graph = peak - level_peak;
        r->in_use = pool ? pk.overall_peak : -1;
        r->pool_unread = pool && reserved < 0;
        free(r->trace);
        r->trace = gt_xstrdup(path);
        snprintf(r->level, sizeof r->level, "%s", c.sel_name);
        r->device_total = pk.device_total;
        r->outside = held_outside(&c, &pk.sel);
        r->preallocated = preallocated(&c);
    }
    struct gt_oom_end end;
    /* pinned host or managed memory running out is not the device's: the run
     * failed for another reason (its host request, counted as the batch's
     * device need, moved the search by terabytes) */
    int ended = gt_oom_ended_program(&c, &end);
    if (ended && (end.memory == GT_MEM_HOST || end.memory == GT_MEM_MANAGED))
        r->host_oom = 1;
    else if (ended) {
        r->oom = 1;
        r->oom_pid = c.t.proc.pid;
        if (end.pool_split > r->pool_split) {
            r->pool_split = end.pool_split;
            free(r->split_trace);
            r->split_trace = gt_xstrdup(path);
        }
        if (end.pool_unused > r->pool_kept) {
            r->pool_kept = end.pool_unused;
            snprintf(r->kept_call, sizeof r->kept_call, "%s", end.call ? end.call : "?");
            free(r->kept_trace);
            r->kept_trace = gt_xstrdup(path);
        }
        /* the pool's part of the need: in use plus the request, or what the
         * pool had reserved when it could not grow, the more. Where the pool
         * was read, what that falls short of the device is no memory held
         * outside the trace: the pool would have reserved more than the
         * request (its slack), by how much no record says; counted as
         * outside, each failure lowered the bytes available by its slack
         * (on an H100 the model then stepped down by one batch size per
         * failure, 20 runs without an end) */
        int64_t pool_need = end.requested >= 0 ? end.live_pool + end.requested : -1;
        int64_t pool_held = end.live_pool ? gt_room_pool_reserved_max(&c, end.device) : -1;
        if (pool_need >= 0 && pool_held > pool_need)
            pool_need = pool_held;
        /* held for CUDA graphs by then: the run's own, in no level (as its peak) */
        int64_t graph = gt_ledger_graph_memory_max(&c.t, end.device, NULL);
        if (end.device_total > 0 && pool_need >= 0 && pool_held < 0) {
            int64_t short_by = end.device_total - pool_need - end.live_device - graph;
            if (short_by > r->unaccounted)
                r->unaccounted = short_by;
        }
        if (pool_need >= 0) {
            /* the outside is a sum of peaks: what is left is a lower bound */
            int64_t need = pool_need + end.live_device + graph - held_outside(&c, &pk.sel);
            if (need > r->need_lb)
                r->need_lb = need;
        }
    }
    gt_peak_free(&pk);
    gt_ctx_close(&c);
    return GT_EXIT_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every trace of the run in dir (its own, then its children's by name). */
static void measure(struct gt_sweep_run *r, const char *dir, const char *stem, const struct gt_opts *o)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(r->error, sizeof r->error, "%s: cannot be read", dir);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (is_trace_of(e->d_name, stem)) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                names = gt_xrealloc(names, cap * sizeof *names);
            }
            names[n++] = gt_xstrdup(e->d_name);
        }
    closedir(d);
    gt_qsort(names, n, sizeof *names, by_name);
    r->ntraces = (int)n;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!r->error[0])
            measure_trace(r, path, o);
        free(names[i]);
    }
    free(names);
}

/* The last size - 1 bytes of path into buf, NUL-terminated (NULs within
 * read as newlines); their length, or -1 when it cannot be read. */
static long read_tail(const char *path, char *buf, size_t size)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return -1;
    fseek(in, 0, SEEK_END);
    long end = ftell(in);
    long from = end > (long)size - 1 ? end - (long)size + 1 : 0;
    fseek(in, from, SEEK_SET);
    size_t n = fread(buf, 1, size - 1, in);
    fclose(in);
    buf[n] = 0;
    for (size_t i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = '\n';
    return (long)n;
}

#define SAID_LINES 8   /* the run's last error: a traceback's exception line is its last */

/* Did the run end on a framework's own out-of-memory error, in the last
 * SAID_LINES non-empty lines of its stderr? XLA refuses a buffer larger
 * than the device before any CUDA call (on an H200, JAX under its platform
 * allocator: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate
 * 203.03GiB", session 33), as PyTorch does past
 * set_per_process_memory_fraction: no failed call in the trace, yet the
 * framework says the batch does not fit. Only its last lines: a warning of
 * memory early in a run that then fails otherwise is no such end. Messages
 * of device memory only. */
static int said_out_of_memory(const char *path)
{
    static const char *const said[] = {
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate",   /* XLA */
        "torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError", "CUDA out of memory",   /* PyTorch */
        "cupy.cuda.memory.OutOfMemoryError",   /* CuPy */
    };
    char buf[16384];
    long n = read_tail(path, buf, sizeof buf);
    if (n <= 0)
        return 0;
    char *from = buf + n;   /* back to the start of the SAID_LINES-th non-empty line from the end */
    for (int lines = 0; from > buf && lines < SAID_LINES;) {
        char *end = from;
        while (end > buf && end[-1] == '\n')
            end--;
        if (end == buf)
            break;
        from = end;
        while (from > buf && from[-1] != '\n')
            from--;
        lines++;
    }
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++)
        if (strstr(from, said[k]))
            return 1;
    return 0;
}

/* The command returned while a process it left running (sh -c "train &")
 * still writes one of the run's traces: its trace was read half written and
 * called a fit, and the next run started beside it on the GPU (a helper's
 * probe). Waits for every such writer, once said on stderr; past the run's
 * timeout (deadline > 0) it is stopped as the run would be: SIGTERM, then
 * SIGKILL 10 s later, and the run timed out. */
static void wait_for_writers(struct gt_sweep_run *r, const char *dir, const char *stem, double deadline)
{
    int said = 0, sent = 0;
    double kill_at = 0;
    for (;;) {
        long writer = 0;
        DIR *d = opendir(dir);
        for (struct dirent *e; d && !writer && (e = readdir(d));)
            if (is_trace_of(e->d_name, stem)) {
                char path[PATH_MAX + 256];
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                struct gt_trace t;
                if (gt_trace_open(&t, path) == GT_EXIT_OK)
                    writer = gt_trace_writer_pid(&t);
                gt_trace_close(&t);
            }
        if (d)
            closedir(d);
        if (!writer)
            return;
        if (!said++)
            fprintf(stderr, "gputrace sweep: run %d's command returned while process %ld, which it left running, still "
                    "writes its trace: waiting for it\n", r->number, writer);
        double now = gt_now();
        if (sent == 2 && now >= kill_at + 20)
            return;   /* (not gone 30 s after SIGKILL: stuck in the driver; its trace read as it is) */
        if (deadline > 0 && now >= deadline && sent < 2 && now >= kill_at) {
            kill((pid_t)writer, sent ? SIGKILL : SIGTERM);
            r->timed_out = 1;
            kill_at = now + 10;
            sent++;
        }
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

int gt_sweep_run(struct gt_sweep_run *r, char *const *argv, const char *dir, int stack_depth, double timeout_s,
                 const struct gt_opts *o)
{
    char stem[64], out[PATH_MAX + 96], err[PATH_MAX + 96], env_out[2 * PATH_MAX + 128], env_bs[64], env_depth[48];
    snprintf(stem, sizeof stem, "bs%lld-run%d", (long long)r->batch_size, r->number);
    snprintf(out, sizeof out, "%s/%s.stdout", dir, stem);
    snprintf(err, sizeof err, "%s/%s.stderr", dir, stem);
    /* GPUTRACE_OUTPUT expands %p and friends: a '%' of the directory's name is written %% */
    size_t l = (size_t)snprintf(env_out, sizeof env_out, "GPUTRACE_OUTPUT=");
    for (const char *c = dir; *c && l + 3 < sizeof env_out; c++) {
        if (*c == '%')
            env_out[l++] = '%';
        env_out[l++] = *c;
    }
    snprintf(env_out + l, sizeof env_out - l, "/%s.db", stem);
    snprintf(env_bs, sizeof env_bs, "GPUTRACE_BATCH_SIZE=%lld", (long long)r->batch_size);
    snprintf(env_depth, sizeof env_depth, "GPUTRACE_STACK_DEPTH=%d", stack_depth);
    /* CUPTI's activity (kernels, copies) is not needed to find a batch size
     * and slows each start: off unless the user set GPUTRACE_CUPTI */
    const char *env[6] = {env_out, env_bs, "GPUTRACE_QUIET=1"};
    size_t ne = 3;
    if (!getenv("GPUTRACE_CUPTI"))
        env[ne++] = "GPUTRACE_CUPTI=0";
    if (stack_depth >= 0)
        env[ne++] = env_depth;
    r->stderr_path = gt_xstrdup(err);
    r->peak = -1;
    r->device_total = -1;
    r->headroom = -1;
    r->untraced = -1;
    r->need_lb = r->pool_kept = r->pool_split = -1;
    r->in_use = -1;

    size_t argc = 0;
    while (argv[argc])
        argc++;
    char **args = gt_xcalloc(argc + 1, sizeof *args);
    for (size_t i = 0; i < argc; i++)
        args[i] = substitute(argv[i], r->batch_size);
    long pid = -1;
    struct gt_spawn how = {.env = env, .stdout_path = out, .stderr_path = err, .timeout_s = timeout_s,
                           .timed_out = &r->timed_out, .pid = &pid};
    double t0 = gt_now();
    r->exit_status = gt_spawn_wait(args, &how, "gputrace sweep");
    if (!r->timed_out)
        wait_for_writers(r, dir, stem, timeout_s > 0 ? t0 + timeout_s : 0);
    r->seconds = gt_now() - t0;
    for (size_t i = 0; i < argc; i++)
        free(args[i]);
    free(args);
    measure(r, dir, stem, o);
    /* The command's own process (no wrapper between: its trace's pid is the
     * one started) ended on a failed request and exited 0: it went on without
     * that memory (an optional cache tried and skipped), so the run fit (a
     * helper's probe: "batch size 1 ran out of memory" of a run that exited
     * 0). A wrapper's 0 says nothing of its program (sh -c "python t.py; true"). */
    if (r->oom && r->exit_status == 0 && pid > 0 && r->oom_pid == pid && !r->timed_out)
        r->oom = 0;
    if (!r->oom && r->exit_status != 0 && !r->timed_out && !r->error[0] && r->ntraces > 0 && said_out_of_memory(err))
        r->oom = r->oom_said = 1;   /* what it needed is not in the trace: need_lb stays unknown */
    if (r->timed_out) {   /* stopped, not ended by the program: what its trace shows is partial */
        r->oom = 0;
        r->peak = r->in_use = r->need_lb = r->pool_kept = r->pool_split = -1;
    }
    return r->error[0] ? GT_EXIT_SWEEP_FAILED : GT_EXIT_OK;
}

void gt_sweep_run_free(struct gt_sweep_run *r)
{
    free(r->trace);
    free(r->stderr_path);
    free(r->kept_trace);
    free(r->split_trace);
    r->trace = r->stderr_path = r->kept_trace = r->split_trace = NULL;
}

void gt_sweep_print_tail(FILE *f, const char *path, int lines)
{
    /* the last 64 KiB is plenty for the last lines */
    char buf[65536];
    long got = read_tail(path, buf, sizeof buf);
    if (got < 0)
        return;
    /* Each line as a terminal leaves it: after its last carriage return (a
     * progress bar redraws one line with \r: a helper's probe printed 1,288
     * frames of one as a 64 KiB line), and at most WIDE bytes of it */
    enum { WIDE = 300 };
    size_t n = 0;
    for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        while (len && line[len - 1] == '\r')
            len--;   /* (a line that ends with \r: what came before it) */
        char *from = line;
        for (size_t i = 0; i < len; i++)
            if (line[i] == '\r')
                from = line + i + 1;
        len -= (size_t)(from - line);
        /* (what is written never passes what was read: n <= from - buf, and
         * at most len bytes and the newline read go out) */
        int cut = len > WIDE;
        memmove(buf + n, from, cut ? WIDE - 3 : len);
        n += cut ? WIDE - 3 : len;
        if (cut) {
            memcpy(buf + n, "...", 3);
            n += 3;
        }
        if (nl)
            buf[n++] = '\n';
    }
    buf[n] = 0;
    while (n && buf[n - 1] == '\n')
        buf[--n] = 0;
    size_t start = n;
    for (int k = 0; start > 0 && k < lines;)
        if (buf[--start] == '\n' && ++k == lines)
            start++;
    if (!n) {
        fprintf(f, "    (nothing)\n");
        return;
    }
    for (char *line = buf + start, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        fprintf(f, "    %s\n", line);
    }
}
