/* iterations.c - where each iteration of the training loop begins and ends.
 * Sources, in the order tried: the marker API's iterations table (explicit),
 * the program's own ranges (NVTX or gputrace_range_*: iterations_ranges.c),
 * and, with no markers at all, the period of the allocation stream (or of
 * the kernels).
 * Every source ends as windows of event indices, so reports never care. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "iterations.h"

const char *gt_iter_source_name(enum gt_iter_source s)
{
    switch (s) {
    case GT_ITER_NVTX: return "nvtx";
    case GT_ITER_MARKER: return "marker";
    case GT_ITER_AUTO: return "auto";
    default: return "none";
    }
}

void gt_iterations_free(struct gt_iterations *it)
{
    free(it->it);
    free(it->later);
    for (size_t k = 0; k < it->nthreads; k++)
        free(it->threads[k].it);
    free(it->threads);
    memset(it, 0, sizeof *it);
}

int64_t gt_parse_batch_size(const char *msg)
{
    static const char *const keys[] = {"batch_size=", "bs="};
    for (int k = 0; msg && k < 2; k++) {
        size_t kl = strlen(keys[k]);
        for (const char *p = strstr(msg, keys[k]); p; p = strstr(p + 1, keys[k])) {
            if (p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
                continue;   /* "xbs=" or "max_bs=" is something else */
            const char *d = p + kl;
            if (!isdigit((unsigned char)*d))
                continue;
            int64_t v = 0;
            for (; isdigit((unsigned char)*d) && v < ((int64_t)1 << 50); d++)
                v = v * 10 + (*d - '0');
            if (isdigit((unsigned char)*d))
                continue;   /* past 2^50: not a batch size (its leading digits read as one were; a probe) */
            return v;
        }
    }
    return -1;
}

/* First event index with t >= x (strict=0) or t > x (strict=1). */
size_t gt_iter_bound(const struct gt_trace *t, int64_t x, int strict)
{
    size_t lo = 0, hi = t->nev;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strict ? t->ev[mid].t <= x : t->ev[mid].t < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t gt_iter_trace_end(const struct gt_trace *t, const struct gt_range *r, size_t nr)
{
    int64_t end = t->nev ? t->ev[t->nev - 1].t : 0;
    if (t->proc.end_ns > end)
        end = t->proc.end_ns;
    for (size_t i = 0; i < nr; i++)
        if (r[i].end > end)
            end = r[i].end;
    return end;
}

struct gt_iteration *gt_iter_push(struct gt_iterations *out, size_t *cap)
{
    if (out->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        out->it = gt_xrealloc(out->it, *cap * sizeof *out->it);
    }
    struct gt_iteration *it = &out->it[out->n++];
    memset(it, 0, sizeof *it);
    return it;
}

/* Iterations from the marker API: each row starts one, which ends where the
 * next starts; the last ends with the trace (and is marked open). */
static int from_marker_table(struct gt_trace *t, struct gt_iterations *out)
{
    struct gt_marker_iter *m;
    size_t nm, cap = 0;
    int code = gt_trace_marker_iterations(t, &m, &nm);
    if (code || nm == 0)
        return code;
    int64_t end = gt_iter_trace_end(t, NULL, 0);
    for (size_t k = 0; k < nm; k++) {
        struct gt_iteration *it = gt_iter_push(out, &cap);
        it->index = m[k].idx;
        it->batch_size = m[k].batch_size;
        it->start = m[k].t;
        it->end = k + 1 < nm ? m[k + 1].t : end;
        it->first_ev = gt_iter_bound(t, it->start, 0);
        it->end_ev = k + 1 < nm ? gt_iter_bound(t, it->end, 0) : t->nev;
        it->closed = k + 1 < nm;
    }
    out->source = GT_ITER_MARKER;
    snprintf(out->how, sizeof out->how, "marker API (gputrace_iteration): %zu iteration%s", nm, gt_s((long long)nm));
    free(m);
    return GT_EXIT_OK;
}

static int find(struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *sel, const struct gt_iter_opts *o,
                struct gt_iterations *out)
{
    int code = GT_EXIT_OK;
    enum gt_iter_mode m = o->mode;
    if (m == GT_ITERMODE_NONE) {
        snprintf(out->how, sizeof out->how, "iterations turned off (--iterations none)");
        return GT_EXIT_OK;
    }
    if (o->name) {
        code = gt_iter_from_ranges(t, o->name, m == GT_ITERMODE_NVTX ? 0 : m == GT_ITERMODE_MARKER ? 1 : -1, 0, out);
        if (!code && !out->n) {
            char hint[280];   /* (out->how holds the name's 200 and this) */
            gt_iter_range_names_hint(t, o->name, m == GT_ITERMODE_NVTX ? 0 : m == GT_ITERMODE_MARKER ? 1 : -1, hint,
                                     sizeof hint);
            snprintf(out->how, sizeof out->how, "no range named \"%.200s\" in the trace%.280s", o->name, hint);
        }
        return code;
    }
    int want = m == GT_ITERMODE_NVTX ? 0 : m == GT_ITERMODE_MARKER ? 1 : -1;
    if (m == GT_ITERMODE_BEST || m == GT_ITERMODE_MARKER) {
        if ((code = from_marker_table(t, out)) || out->n)
            return code;
        if ((code = gt_iter_from_ranges(t, NULL, want, 0, out)) || out->n)
            return code;
    }
    if (m == GT_ITERMODE_NVTX && ((code = gt_iter_from_ranges(t, NULL, 0, 0, out)) || out->n))
        return code;
    if (m == GT_ITERMODE_BEST || m == GT_ITERMODE_AUTO) {
        if (!(code = gt_iter_from_alloc_pattern(t, p, sel, out)) && !out->n)
            code = gt_iter_from_kernel_pattern(t, INT64_MIN, out);
        if (code)
            return code;
    }
    if (m != GT_ITERMODE_AUTO && (code = gt_iter_numbered_pair(t, want, out)))
        return code;
    if (m != GT_ITERMODE_AUTO && out->source == GT_ITER_AUTO && (code = gt_iter_one_step_range(t, want, out)))
        return code;
    if (out->n)
        return GT_EXIT_OK;
    snprintf(out->how, sizeof out->how, "no iterations found (%s)",
             m == GT_ITERMODE_NVTX ? "no repeated NVTX range" : m == GT_ITERMODE_MARKER ? "no marker API iterations or ranges"
             : m == GT_ITERMODE_AUTO ? "no repeating pattern of allocations or kernels"
                                     : "no markers, no repeated range, no repeating pattern of allocations");
    return GT_EXIT_OK;
}

/* Automatic iterations that all lie inside one of XLA's compilations (its
 * "XlaCompile:#module=NAME#" ranges, which JAX emits once an NVTX tool is
 * attached) are the compiler's autotuning, not the program's steps (a JAX
 * MLP under preallocation on an H200: "a pattern of 4 allocations repeats 21
 * times", host staging buffers of 4 and 8 bytes, all inside the compilation
 * of jit_step; its steps, after it, allocate nothing). The module's name
 * into module; returns 1, or 0. */
int gt_xla_compilation(const struct gt_trace *t, const struct gt_range *r)
{
    /* one the program waits for: on its main thread (jit compiles where it
     * is called; a compilation on another thread may run beside the loop, a
     * review found), and one that ended */
    return !strncmp(r->message, "XlaCompile:", 11) && r->tid == t->proc.pid && r->end >= 0 && r->end >= r->start;
}

static int inside_compilation(struct gt_trace *t, const struct gt_iterations *its, char *module, size_t len,
                              int64_t *ended)
{
    if (!its->n || !its->it[its->n - 1].closed)
        return 0;
    struct gt_range *r;
    size_t nr;
    if (gt_trace_ranges(t, &r, &nr))
        return 0;
    int64_t from = its->it[0].start, to = its->it[its->n - 1].end;
    int inside = 0;
    for (size_t i = 0; i < nr && !inside; i++) {
        if (!gt_xla_compilation(t, &r[i]) || r[i].start > from || r[i].end < to)
            continue;
        inside = 1;
        *ended = r[i].end;
        const char *name = strstr(r[i].message, "module=");
        snprintf(module, len, "%.*s", name ? (int)strcspn(name + 7, "#,") : 0, name ? name + 7 : "");
    }
    gt_ranges_free(r, nr);
    return inside;
}

int gt_find_iterations(struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *sel,
                       const struct gt_iter_opts *o, struct gt_iterations *out)
{
    memset(out, 0, sizeof *out);
    int code = find(t, p, sel, o, out);
    char module[128];
    int64_t compiled = 0;
    if (!code && out->source == GT_ITER_AUTO && inside_compilation(t, out, module, sizeof module, &compiled)) {
        char was[160];
        snprintf(was, sizeof was, "%.150s", out->how);
        char note[sizeof out->lib_note];
        memcpy(note, out->lib_note, sizeof note);
        gt_iterations_free(out);
        memset(out, 0, sizeof *out);
        /* the steps after the compilation may still show in their kernels,
         * looked for among the kernels after it only: before it lie the
         * random initialisation's small functions (they read "33 iterations"
         * for 20 steps on an H200) and the compiler's own kernels, and a
         * pattern over the whole trace found none (a JAX MLP, its 20 steps of
         * 210 kernels each recorded after the compilation, on an H200) */
        if ((code = gt_iter_from_kernel_pattern(t, compiled, out)) == GT_EXIT_OK && out->n) {
            size_t n = strlen(out->how);
            snprintf(out->how + n, sizeof out->how - n, " (a pattern of allocations inside XLA's compilation of %.60s"
                     " was passed over: the compiler's work)", *module ? module : "a module");
        } else if (!code) {
            gt_iterations_free(out);
            memset(out, 0, sizeof *out);
            snprintf(out->how, sizeof out->how,
                     "no iterations found: the repeating pattern found (%s) lies inside XLA's compilation of %.60s, the"
                     " compiler's work, not the program's steps; mark the steps (an NVTX range or the marker API) or"
                     " name a range with --iteration", was + (strncmp(was, "automatic: ", 11) ? 0 : 11),
                     *module ? module : "a module");
        }
        memcpy(out->lib_note, note, sizeof note);
    }
    if (!code && *out->lib_note) {
        size_t n = strlen(out->how);
        snprintf(out->how + n, sizeof out->how - n, "; %s", out->lib_note);
    }
    return code;
}

unsigned char *gt_iter_new_largest_batch(const struct gt_iterations *its)
{
    if (its->n < 3)
        return NULL;
    int64_t largest = -1;
    size_t distinct = 0, run = 0;
    for (size_t k = 0; k < its->n; k++) {
        int64_t bs = its->it[k].batch_size;
        if (bs < 0)
            return NULL;
        if (k && bs != its->it[k - 1].batch_size) {
            if (run < 2)
                return NULL;
            run = 0;
        }
        run++;
        distinct += !k || bs != its->it[k - 1].batch_size;
    }
    if (distinct < 2)
        return NULL;
    unsigned char *flag = gt_xcalloc(its->n, 1);
    for (size_t k = 0; k < its->n; k++)
        if (its->it[k].batch_size > largest) {
            flag[k] = 1;
            largest = its->it[k].batch_size;
        }
    return flag;
}
