/* recorder.c - what a trace leaves out, so that every report says what it
 * covers: a flight recorder's trace (GPUTRACE_WINDOW_S) holds its window in
 * full, from when, and each memory level's peak over the whole run from the
 * interval summaries (a window's peak is never shown as the run's); a trace
 * whose kernels were sampled (GPUTRACE_KERNELS_EVERY_S) holds every kernel
 * until the first pause, then those of the spans the "kernels" notes give. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

static void push_span(struct gt_kernel_sampling *k, int64_t from, int64_t to)
{
    k->spans = gt_xrealloc(k->spans, (k->nspans + 1) * sizeof *k->spans);
    k->spans[k->nspans][0] = from;
    k->spans[k->nspans++][1] = to;
}

/* The "kernels" notes: a message ending in "recording" starts a span with
 * kernel records on, one ending in "paused" ends it. */
static int kernel_sampling(struct gt_trace *t)
{
    sqlite3_stmt *st;
    struct gt_kernel_sampling *k = &t->kernels;
    int code = gt_trace_prepare_optional(t, "SELECT t_ns, message FROM notes WHERE component = 'kernels' ORDER BY t_ns, id",
                                         &st, "reading the kernels' notes");
    if (code || !st)
        return code;
    int rc, on = 0;
    int64_t since = 0, end = t->proc.end_ns;
    k->full_until_ns = -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t at = sqlite3_column_int64(st, 0);
        const char *m = (const char *)sqlite3_column_text(st, 1);
        size_t n = m ? strlen(m) : 0;
        if (m && !strncmp(m, "sampled:", 8)) {
            k->on = 1;
            k->since_ns = at;
            snprintf(k->how, sizeof k->how, "%s", m + 9);
            char *semi = strrchr(k->how, ';');
            if (semi)
                *semi = 0;
        }
        int rec = n >= 9 && !strcmp(m + n - 9, "recording"), paused = n >= 6 && !strcmp(m + n - 6, "paused");
        if (rec && !on)
            since = at, on = 1;
        else if (paused && on) {
            k->recorded_ns += at - since;
            push_span(k, since, at);
            on = 0;
        }
        if (paused && k->full_until_ns < 0)
            k->full_until_ns = at;
        if (at > end)
            end = at;
    }
    sqlite3_finalize(st);
    if (on) {
        k->recorded_ns += end - since;
        push_span(k, since, end);
    }
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading the kernels' notes");
}

/* The "sweep" note: the shim saw GPUTRACE_BATCH_SIZE (gputrace sweep's runs). */
static int run_batch_size(struct gt_trace *t)
{
    sqlite3_stmt *st;
    t->run_batch_size = -1;
    int code = gt_trace_prepare_optional(t, "SELECT message FROM notes WHERE component = 'sweep' ORDER BY id LIMIT 1",
                                         &st, "reading the sweep's note");
    if (code || !st)
        return code;
    int rc = sqlite3_step(st);
    long long bs;
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0) &&
        sscanf((const char *)sqlite3_column_text(st, 0), "batch size %lld", &bs) == 1 && bs > 0)
        t->run_batch_size = bs;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading the sweep's note");
}

int gt_trace_recorder(struct gt_trace *t)
{
    int code0 = kernel_sampling(t);
    if (!code0)
        code0 = run_batch_size(t);
    if (code0)
        return code0;
    sqlite3_stmt *st;
    struct gt_recorder *w = &t->recorder;
    int code = gt_trace_prepare_optional(t, "SELECT window_ns, interval_ns, complete_from_ns FROM flight_recorder",
                                         &st, "reading the flight recorder's row");
    if (code || !st)
        return code;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        w->on = 1;
        w->window_ns = sqlite3_column_int64(st, 0);
        w->interval_ns = sqlite3_column_int64(st, 1);
        w->complete_from_ns = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return gt_trace_sql_error(t, rc, "reading the flight recorder's row");
    if (!w->on)
        return GT_EXIT_OK;
    /* failed calls (out-of-memory ones among them) before the window: their
     * events are gone, the summaries' counts are not (oom says so) */
    code = gt_trace_prepare_optional(t, "SELECT coalesce(sum(failed), 0) FROM interval_summaries WHERE end_ns <= ?",
                                     &st, "reading the interval summaries");
    if (code)
        return code;
    if (st) {
        sqlite3_bind_int64(st, 1, w->complete_from_ns);
        if ((rc = sqlite3_step(st)) == SQLITE_ROW)
            w->failed_before = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW)
            return gt_trace_sql_error(t, rc, "reading the interval summaries");
    }
    /* the interval that held each level's highest peak (the earliest of equals) */
    code = gt_trace_prepare_optional(t,
        "SELECT memory, coalesce(device, -1), peak_bytes, start_ns, end_ns FROM interval_summaries s"
        " WHERE NOT EXISTS (SELECT 1 FROM interval_summaries o WHERE o.memory = s.memory"
        " AND coalesce(o.device, -1) = coalesce(s.device, -1) AND (o.peak_bytes > s.peak_bytes"
        " OR (o.peak_bytes = s.peak_bytes AND o.start_ns < s.start_ns)))",
        &st, "reading the interval summaries");
    if (code || !st)
        return code;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0);
        int memory = -1;
        for (int k = 0; k < 6 && m; k++)
            if (!strcmp(m, gt_memory_name(k)))
                memory = k;
        if (memory < 0)
            continue;
        if (w->npeaks == cap) {
            cap = cap ? cap * 2 : 8;
            w->peaks = gt_xrealloc(w->peaks, cap * sizeof *w->peaks);
        }
        w->peaks[w->npeaks++] = (struct gt_run_peak){memory, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                                                      sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading the interval summaries");
}

void gt_trace_recorder_free(struct gt_trace *t)
{
    free(t->kernels.spans);
    t->kernels.spans = NULL;
    t->kernels.nspans = 0;
    free(t->recorder.peaks);
    t->recorder.peaks = NULL;
    t->recorder.npeaks = 0;
}

int64_t gt_recorder_run_peak(const struct gt_trace *t, int memory, int64_t device)
{
    for (size_t i = 0; t->recorder.on && i < t->recorder.npeaks; i++)
        if (t->recorder.peaks[i].memory == memory && t->recorder.peaks[i].device == device)
            return t->recorder.peaks[i].peak;
    return -1;
}

/* Every report over a flight recorder's trace, text: one line first, saying
 * what the figures below cover and the whole run's peaks beside them. */
void gt_recorder_text(const struct gt_trace *t)
{
    const struct gt_recorder *w = &t->recorder;
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN];
    const struct gt_kernel_sampling *k = &t->kernels;
    if (k->on && k->full_until_ns > k->since_ns)
        printf("kernels sampled (%s): every kernel until %s, then kernels during %s of the %s after it; kernel "
               "timelines and iterations found from kernels cover those spans only\n", k->how, gt_fmt_ns(k->full_until_ns, b1),
               gt_fmt_ns(k->recorded_ns - (k->full_until_ns - k->since_ns), b2),
               gt_fmt_ns(t->proc.end_ns >= 0 ? t->proc.end_ns - k->full_until_ns : -1, b3));
    else if (k->on && k->full_until_ns >= 0)
        printf("kernels sampled (%s): kernels, copies and memsets recorded during %s of the %s from %s on; kernel "
               "timelines and iterations found from kernels cover those spans only\n", k->how,
               gt_fmt_ns(k->recorded_ns, b1), gt_fmt_ns(t->proc.end_ns >= 0 ? t->proc.end_ns - k->since_ns : -1, b2),
               gt_fmt_ns(k->since_ns, b3));
    if (!w->on)
        return;
    if (w->complete_from_ns <= 0) {   /* nothing was cut: a run shorter than its window (said "not the whole run") */
        printf("flight recorder (GPUTRACE_WINDOW_S): the last %s are kept in full, and the run was shorter: all of it"
               " is here\n", gt_fmt_ns(w->window_ns, b1));
        return;
    }
    printf("flight recorder (GPUTRACE_WINDOW_S): only the last %s are kept in full; everything below covers %s to the "
           "end (allocations live at its start are kept), not the whole run\n",
           gt_fmt_ns(w->window_ns, b1), gt_fmt_ns(w->complete_from_ns, b2));
    for (size_t i = 0; i < w->npeaks; i++) {
        char dev[32] = "";
        if (w->peaks[i].device >= 0)
            snprintf(dev, sizeof dev, " on device %lld", (long long)w->peaks[i].device);
        printf("  whole run (interval summaries): peak of %s memory%s %s, between %s and %s\n",
               gt_memory_name(w->peaks[i].memory), dev, gt_fmt_bytes(w->peaks[i].peak, b1),
               gt_fmt_ns(w->peaks[i].start_ns, b2), gt_fmt_ns(w->peaks[i].end_ns, b3));
    }
}

/* JSON: the "flight_recorder" key of every report's per-file object (absent
 * for a trace of the whole run), "kernel_sampling" likewise, and
 * "run_batch_size" for a run of gputrace sweep. */
void gt_recorder_json(const struct gt_trace *t, struct gt_json *j)
{
    const struct gt_recorder *w = &t->recorder;
    if (t->run_batch_size > 0)
        gt_json_kint(j, "run_batch_size", t->run_batch_size);
    if (t->kernels.on && t->kernels.full_until_ns >= 0) { /* some kernels were left out */
        gt_json_key(j, "kernel_sampling");
        gt_json_obj(j);
        gt_json_kstr(j, "how", t->kernels.how);
        gt_json_kint_or_null(j, "every_kernel_until_ns",
                             t->kernels.full_until_ns > t->kernels.since_ns ? t->kernels.full_until_ns : -1);
        gt_json_kint(j, "sampled_since_ns", t->kernels.since_ns);
        gt_json_kint(j, "recorded_ns", t->kernels.recorded_ns);
        gt_json_obj_end(j);
    }
    if (!w->on)
        return;
    gt_json_key(j, "flight_recorder");
    gt_json_obj(j);
    gt_json_kint(j, "window_ns", w->window_ns);
    gt_json_kint(j, "interval_ns", w->interval_ns);
    gt_json_kint(j, "complete_from_ns", w->complete_from_ns);
    gt_json_kstr(j, "covers", w->complete_from_ns > 0
                                  ? "the report's figures cover complete_from_ns to the end; whole_run_peaks the whole run"
                                  : "nothing was cut: the report's figures cover the whole run");
    gt_json_kint(j, "failed_calls_before", w->failed_before);   /* counted by the interval summaries */
    gt_json_key(j, "whole_run_peaks");
    gt_json_arr(j);
    for (size_t i = 0; i < w->npeaks; i++) {
        gt_json_obj(j);
        gt_json_kstr(j, "memory", gt_memory_name(w->peaks[i].memory));
        gt_json_kint(j, "device", w->peaks[i].device);
        gt_json_kint(j, "peak_bytes", w->peaks[i].peak);
        gt_json_kint(j, "interval_start_ns", w->peaks[i].start_ns);
        gt_json_kint(j, "interval_end_ns", w->peaks[i].end_ns);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_obj_end(j);
}
