/* summary.c - `gputrace summary`: one screen about a trace: the process, its
 * devices, how long and how much was recorded (and dropped), the peak of
 * each memory level, the iterations found, and one-line verdicts on leaks
 * and growth that point to the command with the details. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* gputrace summary --help (the command table is in commands.c) */
const char gt_help_summary[] =
    "usage: gputrace summary [--json] [OPTIONS] TRACE.db...\n"
    "\n"
    "The process (pid, host, rank, command line), its devices, duration, event\n"
    "counts and drops, the peak of each memory level (device, pool, managed, host)\n"
    "per device and when it happened, the iterations found and how, and one-line\n"
    "verdicts on leaks and growth; then the memory ledger: per device, at the end\n"
    "and at the peak, what the process held by who holds it (the framework's\n"
    "allocator, the stream-ordered pool's reservation, each CUDA library, the\n"
    "program's direct allocations, the CUDA context and driver as measured by\n"
    "NVML at the start), beside NVML's figure for the process (what does not\n"
    "add up is shown as unaccounted), other processes and free memory.\n";

struct counts {
    int64_t allocs, frees, failed, other;
};

static struct counts count_events(const struct gt_trace *t)
{
    struct counts n = {0, 0, 0, 0};
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed)
            n.failed++;
        else if (a->known && a->op == GT_OP_ALLOC)
            n.allocs++;
        else if (a->known && a->op == GT_OP_FREE)
            n.frees++;
        else
            n.other++;
    }
    return n;
}

/* Calls of a CUDA graph's capture (graph_calls): its allocation and free
 * nodes, and what was allocated meanwhile. */
struct capture {
    int64_t nodes, node_bytes, free_nodes, during, during_bytes;
};

static struct capture count_capture(const struct gt_trace *t)
{
    struct capture k = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed || !a->known || !(e->api & (GT_API_GRAPH_NODE | GT_API_GRAPH_IN_CAPTURE)))
            continue;
        int64_t size = e->size > 0 ? e->size : 0;
        if ((e->api & GT_API_GRAPH_NODE) && a->op == GT_OP_ALLOC) {
            k.nodes++;
            k.node_bytes += size;
        } else if (e->api & GT_API_GRAPH_NODE) {
            k.free_nodes += a->op == GT_OP_FREE;
        } else if (a->op == GT_OP_ALLOC && a->memory == GT_MEM_DEVICE) {   /* device memory (an address range takes none) */
            k.during++;
            k.during_bytes += size;
        }
    }
    return k;
}

static void capture_json(struct gt_json *j, const struct capture *k)
{
    gt_json_key(j, "graph_capture");
    if (!k->nodes && !k->free_nodes && !k->during) {
        gt_json_null(j);
        return;
    }
    gt_json_obj(j);
    gt_json_kint(j, "allocation_nodes", k->nodes);
    gt_json_kint(j, "allocation_node_bytes", k->node_bytes);
    gt_json_kint(j, "free_nodes", k->free_nodes);
    gt_json_kint(j, "allocations_during_capture", k->during);
    gt_json_kint(j, "bytes_allocated_during_capture", k->during_bytes);
    gt_json_obj_end(j);
}

static void capture_text(const struct capture *k)
{
    char b[GT_FMT_LEN];
    if (!k->nodes && !k->free_nodes && !k->during)
        return;
    printf("  CUDA graph capture:");
    if (k->nodes || k->free_nodes)
        printf(" %lld allocation node%s (%s) and %lld free node%s captured into graphs: the graph's memory, taken each "
               "time it runs, in no level below%s", (long long)k->nodes, gt_s(k->nodes), gt_fmt_bytes(k->node_bytes, b),
               (long long)k->free_nodes, gt_s(k->free_nodes), k->during ? ";" : "");
    if (k->during)
        printf(" %lld allocation%s (%s) made while capturing (a graph's private pool): in the levels below", (long long)k->during,
               gt_s(k->during), gt_fmt_bytes(k->during_bytes, b));
    printf("\n");
}

/* The out-of-memory verdict: requests that failed for want of memory (a
 * retry of one counts once), and whether the program ended on the last. */
struct oom_verdict {
    size_t requests;
    int ended;
    struct gt_oom_end end;
};

static void oom_verdict(struct gt_ctx *c, struct oom_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->requests = gt_oom_requests(c, &v->ended);
    if (v->ended)
        v->ended = gt_oom_ended_program(c, &v->end);
}

static void oom_json(struct gt_json *j, const struct oom_verdict *v)
{
    gt_json_key(j, "out_of_memory");
    gt_json_obj(j);
    gt_json_kint(j, "requests", (int64_t)v->requests);
    gt_json_key(j, "ended_program");
    gt_json_bool(j, v->ended);
    if (v->ended) {
        gt_json_kstr(j, "api", v->end.call);
        gt_json_kint_or_null(j, "requested_bytes", v->end.requested);
        gt_json_kint_or_null(j, "device", v->end.device == GT_ANY_DEVICE ? -1 : v->end.device);
    }
    gt_json_obj_end(j);
}

static void oom_text(const struct oom_verdict *v)
{
    char b[GT_FMT_LEN];
    if (!v->requests)
        return;
    if (v->ended) {
        printf("  out of memory: the program ended on a failed %s", v->end.call ? v->end.call : "request");
        if (v->end.requested >= 0)
            printf(" of %s", gt_fmt_bytes(v->end.requested, b));
        if (v->end.device != GT_ANY_DEVICE && v->end.memory != GT_MEM_HOST && v->end.memory != GT_MEM_MANAGED)
            printf(" on device %d", v->end.device);
        if (v->requests > 1)
            printf(", after %zu earlier one%s it went on from", v->requests - 1, gt_s((long long)(v->requests - 1)));
        printf(" (gputrace oom)\n");
    } else {
        printf("  out of memory: %zu request%s failed; the program went on after %s (gputrace oom)\n", v->requests,
               gt_s((long long)v->requests), v->requests == 1 ? "it" : "them");
    }
}

int gt_report_summary(struct gt_ctx *c, struct gt_json *j)
{
    const struct gt_trace *t = &c->t;
    const struct gt_process *p = &t->proc;
    struct counts n = count_events(t);
    int64_t duration = gt_trace_end_ns(&c->t);
    struct gt_level *lv;
    size_t nlv = gt_levels(t, &c->p, &lv);
    /* --memory and --device given choose the peaks shown, as they choose the leaks */
    size_t kept = 0;
    for (size_t i = 0; i < nlv; i++)
        if ((!c->o->memory_set || (c->o->mem_mask & GT_MASK(lv[i].memory))) &&
            (c->o->device == GT_ANY_DEVICE || lv[i].device == c->o->device))
            lv[kept++] = lv[i];
    nlv = kept;
    const struct gt_iterations *its;
    int code = gt_ctx_iterations(c, &its);
    struct gt_leaks l;
    memset(&l, 0, sizeof l);
    if (!code)
        code = gt_leaks_compute(c, &l);
    struct gt_growth g;
    memset(&g, 0, sizeof g);
    g.verdict = "unknown";
    snprintf(g.memory, sizeof g.memory, "%s", c->sel_name);   /* (no iterations: the level chosen) */
    if (!code && its->n)
        code = gt_growth_compute(c, &g);
    if (code)
        goto out;
    struct gt_cache_share cache = {0};
    if (its->n && (code = gt_growth_cache_share(c, &g, &cache)))
        goto out;
    struct oom_verdict oomv;
    oom_verdict(c, &oomv);
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_key(j, "process");
        gt_json_obj(j);
        gt_json_kint_or_null(j, "pid", p->pid);
        gt_json_kint_or_null(j, "ppid", p->ppid);
        gt_json_kstr(j, "host", p->host);
        gt_json_kstr(j, "command_line", p->command_line);
        gt_json_kstr(j, "exe", p->exe);
        gt_json_kint_or_null(j, "rank", p->rank);
        gt_json_kint_or_null(j, "local_rank", p->local_rank);
        gt_json_kint_or_null(j, "world_size", p->world_size);
        gt_json_kint(j, "start_unix_ns", p->start_unix_ns);
        gt_json_kstr(j, "end_reason", p->end_reason);
        gt_json_kstr(j, "library_version", p->library_version);
        gt_json_kint(j, "stack_depth", p->stack_depth);
        gt_json_obj_end(j);
        gt_json_kint(j, "schema_version", t->schema_version);
        gt_json_kint(j, "duration_ns", duration);
        gt_json_key(j, "devices");
        gt_json_arr(j);
        for (size_t i = 0; i < t->ndevices; i++) {
            gt_json_obj(j);
            gt_json_kint(j, "id", t->devices[i].id);
            gt_json_kstr(j, "name", t->devices[i].name);
            gt_json_kint_or_null(j, "total_bytes", t->devices[i].total_bytes);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_key(j, "events");
        gt_json_obj(j);
        gt_json_kint(j, "total", (int64_t)t->nev);
        gt_json_kint(j, "allocs", n.allocs);
        gt_json_kint(j, "frees", n.frees);
        gt_json_kint(j, "failed", n.failed);
        gt_json_kint(j, "other", n.other);
        gt_json_kint(j, "unmatched_frees", (int64_t)c->p.unmatched_frees);
        gt_json_kint(j, "reallocated_while_live", (int64_t)c->p.reallocated_unfreed);
        gt_json_kint(j, "recorded", p->events_recorded);
        gt_json_kint(j, "dropped", p->events_dropped);
        gt_json_obj_end(j);
        struct capture k = count_capture(t);
        capture_json(j, &k);
        gt_json_key(j, "drops");
        gt_json_arr(j);
        for (size_t i = 0; i < t->ndrops; i++) {
            gt_json_obj(j);
            gt_json_kstr(j, "reason", t->drops[i].reason);
            gt_json_kint(j, "count", t->drops[i].count);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_key(j, "peaks");
        gt_json_arr(j);
        for (size_t i = 0; i < nlv; i++) {
            gt_json_obj(j);
            gt_json_kstr(j, "memory", gt_memory_name(lv[i].memory));
            gt_json_kint(j, "device", lv[i].device);
            gt_json_kint(j, "peak_bytes", lv[i].peak);
            gt_json_kint(j, "peak_time_ns", lv[i].peak_t);
            gt_json_kint(j, "final_bytes", lv[i].final);
            gt_json_kint(j, "allocs", lv[i].allocs);
            gt_json_kint(j, "frees", lv[i].frees);
            if (t->recorder.on) /* the peak above is the window's */
                gt_json_kint_or_null(j, "whole_run_peak_bytes", gt_recorder_run_peak(t, lv[i].memory, lv[i].device));
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_json_kstr(j, "memory", c->sel_name);
        gt_json_kint(j, "iterations", (int64_t)its->n);
        gt_json_kstr(j, "iteration_source", gt_iter_source_name(its->source));
        gt_json_kstr(j, "iteration_detection", its->how);
        gt_json_kint(j, "leak_bytes", l.bytes);
        gt_json_kint(j, "leak_count", l.count);
        gt_json_kint(j, "leak_sites", (int64_t)l.nsites);
        gt_json_key(j, "leaks_told");   /* false: under 3 iterations leak_bytes says nothing of accumulation */
        gt_json_bool(j, l.told);
        gt_json_kint(j, "cached_bytes", l.cached_bytes);
        gt_json_kint(j, "freed_after_loop_bytes", l.after_bytes);   /* accumulated, freed only when the loop ended */
        gt_json_kint(j, "made_once_bytes", l.once_bytes);   /* made in one iteration of the loop and kept */
        gt_json_key(j, "leaks_later_loop");   /* live at exit, made in a later loop: not judged (leaks' later_loop) */
        gt_later_loop_json(j, &l);
        gt_json_kstr(j, "growth_verdict", g.verdict);
        gt_json_kstr(j, "growth_memory", g.memory);
        gt_json_kstr(j, "growth_verdict_of_cache", cache.by ? cache.by->name : NULL);   /* the caching allocator's */
        gt_json_kint_or_null(j, "growth_thread", g.thread_tid ? g.thread_tid : -1);   /* one thread's own loop */
        gt_json_kint_or_null(j, "growth_device", g.by_device ? g.device : -1);   /* one device alone */
        gt_json_kint_or_null(j, "preallocated_bytes", g.prealloc.bytes ? g.prealloc.bytes : l.prealloc.bytes ? l.prealloc.bytes : -1);
        gt_json_key(j, "slope_bytes_per_iteration");
        if (g.used >= 2)
            gt_json_double(j, g.slope);
        else
            gt_json_null(j);
        gt_json_key(j, "slope_since_bytes_per_iteration");   /* a rise that began late: its rate since (growth's) */
        if (g.held.since_slope > 0 && !strcmp(g.verdict, "growing"))
            gt_json_double(j, g.held.since_slope);
        else
            gt_json_null(j);
        oom_json(j, &oomv);
        if (!code)
            code = gt_report_ledger(c, j);
        gt_json_obj_end(j);
        goto out;
    }
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN], pool[96];
    printf("Process %lld", (long long)p->pid);
    if (p->host)
        printf(" on %s", p->host);
    if (p->rank >= 0)
        printf(", rank %lld", (long long)p->rank);
    const char *cmd = p->command_line ? p->command_line : p->exe ? p->exe : "(command line unknown)";
    /* a program given inline (python -c "...") is its whole text: the command
     * and the program's first line say which, the rest is in the trace's
     * processes table */
    size_t head = strcspn(cmd, "\n");
    if (!cmd[head]) {
        printf(": %s\n", cmd);
    } else {
        const char *line = cmd + head;
        while (*line == '\n')
            line++;
        size_t len = strcspn(line, "\n"), more = 0;
        for (const char *q = line + len; *q; q++)
            more += *q == '\n' && q[1] && q[1] != '\n';
        printf(": %.*s %.*s%s", (int)head, cmd, (int)len, line, more ? " ..." : "");
        if (more)
            printf(" (%zu more line%s)", more, gt_s((long long)more));
        printf("\n");
    }
    char open_by[96] = "not closed (the process was killed or crashed, or still runs)";
    if (!p->end_reason && gt_trace_writer_pid(&c->t))
        snprintf(open_by, sizeof open_by, "not closed: process %ld still writes it", gt_trace_writer_pid(&c->t));
    printf("  trace: schema %lld, libgputrace %s, %s after %s\n", (long long)t->schema_version,
           p->library_version ? p->library_version : "?", p->end_reason ? p->end_reason : open_by, gt_fmt_ns(duration, b1));
    for (size_t i = 0; i < t->ndevices; i++)
        printf("  device %lld: %s, %s\n", (long long)t->devices[i].id, t->devices[i].name ? t->devices[i].name : "?",
               t->devices[i].total_bytes >= 0 ? gt_fmt_bytes(t->devices[i].total_bytes, b1) : "size unknown");
    printf("  events: %zu (%lld allocation%s, %lld free%s, %lld failed call%s%s, %lld other)", t->nev,
           (long long)n.allocs, gt_s(n.allocs), (long long)n.frees, gt_s(n.frees), (long long)n.failed, gt_s(n.failed),
           n.failed ? ": gputrace oom lists them" : "", (long long)n.other);
    printf("; dropped: %lld%s\n", (long long)p->events_dropped, p->events_dropped ? " (numbers below may be incomplete)" : "");
    for (size_t i = 0; i < t->ndrops; i++)
        if (t->drops[i].count)
            printf("    dropped %lld: %s\n", (long long)t->drops[i].count, t->drops[i].reason);
    if (c->p.reallocated_unfreed)
        printf("  %zu allocation%s at an address still live: a free the trace did not see (a context destroyed\n"
               "  with cuCtxDestroy frees its allocations without a free call); the older %s counted live to the end\n",
               c->p.reallocated_unfreed, gt_s((long long)c->p.reallocated_unfreed),
               c->p.reallocated_unfreed == 1 ? "one is" : "ones are");
    if (c->p.unmatched_frees)
        printf("  %zu free%s of memory allocated before tracing started (not counted)\n", c->p.unmatched_frees,
               gt_s((long long)c->p.unmatched_frees));
    struct capture k = count_capture(t);
    capture_text(&k);
    for (size_t i = 0; i < nlv; i++) {
        char dev[32] = "";
        if (lv[i].device >= 0)
            snprintf(dev, sizeof dev, " on device %d", lv[i].device);
        printf("  peak of %s memory%s%s: %s at %s (%lld allocation%s, %lld free%s, %s live at end)", gt_memory_name(lv[i].memory),
               dev, t->recorder.on && t->recorder.complete_from_ns > 0 ? " in the window" : "", gt_fmt_bytes(lv[i].peak, b1),
               gt_fmt_ns(lv[i].peak_t, b2),
               (long long)lv[i].allocs, gt_s(lv[i].allocs), (long long)lv[i].frees, gt_s(lv[i].frees),
               gt_fmt_bytes(lv[i].final, b3));
        int64_t run_peak = gt_recorder_run_peak(t, lv[i].memory, lv[i].device);
        if (run_peak >= 0 && t->recorder.complete_from_ns > 0)
            printf("; whole run: %s", gt_fmt_bytes(run_peak, b1));
        printf("\n");
    }
    printf("  iterations: %s\n", its->how);
    if (l.nsites)
        printf("  leaks: %s in %lld allocation%s at %zu call site%s%s (gputrace leaks)", gt_fmt_bytes(l.bytes, b1),
               (long long)l.count, gt_s(l.count), l.nsites, gt_s((long long)l.nsites),
               l.classified ? "" : " live at exit, not told from memory held for the run (fewer than 2 iterations to "
                                   "split it by)");
    else if (l.prealloc.bytes)
        printf("  leaks: not told (a preallocating framework's arrays lie inside %s; gputrace leaks)",
               gt_prealloc_short(&l.prealloc, pool, sizeof pool));
    else if (l.classified && l.iterations == 2)
        printf("  leaks: not told (2 iterations: what accumulates shows from 3; gputrace leaks)");
    else
        printf("  leaks: none%s%s", l.nafter ? " live at exit" : "", l.later ? " in the loop" : "");
    if (l.later)
        printf("; %s live at exit was made in a later loop (%zu ranges \"%s\"), not judged: gputrace leaks "
               "--iteration '%s'", gt_fmt_bytes(l.later_bytes, b1), l.later->n, l.later->name, l.later->name);
    if (l.nafter)
        printf("; %s accumulated over the loop and was freed only after it", gt_fmt_bytes(l.after_bytes, b1));
    if (l.nonce)
        printf("; %s made once during the loop and kept (not accumulating)", gt_fmt_bytes(l.once_bytes, b1));
    if (l.ncached)
        printf("; %s held until exit by a caching allocator or a library handle (not counted as leaks%s%s)", gt_fmt_bytes(l.cached_bytes, b1),
               l.cached_in_loop ? "; made during the loop: " : "", l.cached_in_loop ? gt_fmt_bytes(l.cached_in_loop, b2) : "");
    printf("\n");
    /* what the verdict is of where the whole did not grow: one device alone, one thread's own loop */
    char whose[160] = "";
    if (g.by_device)
        snprintf(whose, sizeof whose, " on device %d (the %zu devices together read %s)", g.device, g.devices,
                 g.devices_verdict);
    else if (g.thread_tid)
        snprintf(whose, sizeof whose, " made on thread %lld, over its own loop (the whole process read %s)",
                 (long long)g.thread_tid, g.process_verdict);
    if (g.held.since_slope > 0 && !strcmp(g.verdict, "growing")) {   /* a rise that began late: its own rate */
        size_t w = strlen(whose);
        snprintf(whose + w, sizeof whose - w, ", %s per iteration since iteration %lld",
                 gt_fmt_bytes_d(g.held.since_slope, b2), (long long)g.loop[(size_t)g.held.since].index);
    }
    if (g.used >= 2 && !strcmp(g.verdict, "growing") && g.steady_tail > 1)
        printf("  growth: %s, %s per iteration of %s memory%s, in %zu step%s; the last %zu %s ended holding the"
               " same bytes%s (gputrace growth)\n", g.verdict, gt_fmt_bytes_d(g.slope, b1), g.memory, whose, g.steps,
               gt_s((long long)g.steps), g.steady_tail, g.later_used ? "points" : "iterations",
               g.later_used ? "; with steps seen in later kernel windows" : "");
    else if (g.prealloc.bytes)
        printf("  growth: unknown (a preallocating framework's arrays lie inside %s, out of sight; gputrace growth)\n",
               gt_prealloc_short(&g.prealloc, pool, sizeof pool));
    else if (g.used >= 2 && g.scatter_hides)   /* (no slope beside unknown: -80 MiB was shown for one step down) */
        printf("  growth: unknown, %s memory: its live bytes at iteration ends scatter too widely to tell (gputrace "
               "growth)\n", g.memory);
    else if (g.used >= 2 && *whose)
        printf("  growth: %s, %s per iteration of %s memory%s (gputrace growth)\n", g.verdict,
               gt_fmt_bytes_d(g.slope, b1), g.memory, whose);
    else if (g.used >= 2 && cache.by)
        printf("  growth: %s, %s per iteration of %s memory, %s of its %s is %s's cache, which asked CUDA for no\n"
               "    more (a tensor kept inside what it holds does not show; gputrace growth)\n", g.verdict,
               gt_fmt_bytes_d(g.slope, b1), g.memory, gt_fmt_bytes(cache.cached, b2), gt_fmt_bytes(cache.live, b3),
               cache.by->name);
    else if (g.used >= 2)
        printf("  growth: %s, %s per iteration of %s memory%s (gputrace growth)\n", g.verdict, gt_fmt_bytes_d(g.slope, b1),
               g.memory, g.later_used ? ", with steps seen in later kernel windows" : "");
    else
        printf("  growth: unknown (%s)\n", its->n ? "fewer than 3 iterations after warm-up" : "no iterations");
    oom_text(&oomv);
    if (!code)
        code = gt_report_ledger(c, NULL);
out:
    free(lv);
    gt_leaks_free(&l);
    gt_growth_free(&g);
    return code;
}
