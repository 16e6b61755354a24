/* iterations_ranges.c - iterations from the program's own ranges (NVTX,
 * gputrace_range_*): which repeating kind of range is the loop, a numbered
 * pair of steps, a single step range around a pattern found inside it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "format.h"
#include "cli.h"
#include "iterations.h"

/* A range message with every run of digits replaced by '#', so "step 12" and
 * "step 13" (or "fwd bs=64" and "fwd bs=8") are one kind of range. */
static char *normalize(const char *s)
{
    char *out = gt_xmalloc(strlen(s) + 1), *o = out;
    while (*s) {
        if (isdigit((unsigned char)*s)) {
            *o++ = '#';
            while (isdigit((unsigned char)*s))
                s++;
        } else {
            *o++ = *s++;
        }
    }
    *o = 0;
    return out;
}

/* Does a range message name the iteration range NAME? Exact, equal once
 * digits are normalized, or NAME followed by a non-identifier character. */
static int name_matches(const char *msg, const char *name, const char *norm_name)
{
    if (!strcmp(msg, name))
        return 1;
    size_t nl = strlen(name);
    if (nl && !strncmp(msg, name, nl) && !isalnum((unsigned char)msg[nl]) && msg[nl] != '_')
        return 1;
    char *nm = normalize(msg);
    int eq = !strcmp(nm, norm_name);
    free(nm);
    return eq;
}

struct rcand {
    char *norm;
    const char *domain;   /* NULL: default domain or marker */
    int tier;             /* 0: the program's default domain or marker ranges, 1: a domain it registered */
    int64_t tid, depth;
    size_t idx;   /* into the ranges array (start order) */
};

static int domain_cmp(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) : (a != NULL) - (b != NULL);
}

static int rcand_cmp(const void *a, const void *b)
{
    const struct rcand *x = a, *y = b;
    int c = domain_cmp(x->domain, y->domain);
    if (c)
        return c;
    c = strcmp(x->norm, y->norm);
    if (c)
        return c;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A push never popped (an exception skipped the pop: a caught out-of-memory
 * that skipped its batch) puts every later range of its thread and domain
 * one level deeper, inside it: a loop of 20 steps read as 6, the last
 * running to the end, and its leak as "stable" (a helper's probe). Such a
 * range is recognised by the next range of its thread, source and domain
 * one level down being of its own kind ("step 6" inside "step 5", never
 * closed); it is taken to end there, and the ranges after it go back up a
 * level. The first 64 such ranges; r in start order. */
static void repair_unpopped(struct gt_range *r, size_t nr)
{
    int fixed = 0;
    for (size_t i = 0; i < nr && fixed < 64; i++) {
        if (r[i].end >= 0)
            continue;
        size_t j = i + 1;
        for (; j < nr; j++)
            if (r[j].tid == r[i].tid && r[j].is_marker == r[i].is_marker && !domain_cmp(r[j].domain, r[i].domain))
                break;
        if (j == nr || r[j].depth != r[i].depth + 1)
            continue;
        char *a = normalize(r[i].message), *b = normalize(r[j].message);
        int same = !strcmp(a, b);
        free(a);
        free(b);
        if (!same)
            continue;
        r[i].end = r[j].start;
        for (size_t k = j; k < nr; k++)
            if (r[k].tid == r[i].tid && r[k].is_marker == r[i].is_marker && !domain_cmp(r[k].domain, r[i].domain) &&
                r[k].depth > r[i].depth)
                r[k].depth--;
        fixed++;
    }
}

/* A kind of range: its candidates c[at .. at + n), in start order. */
struct kind {
    size_t at, n;
    int64_t cover;   /* ns its ranges cover (covered(): their median's length times their number) */
};

static int64_t range_end(const struct gt_range *r, const struct rcand *c, size_t n, size_t k, int64_t end)
{
    const struct gt_range *x = &r[c[k].idx];
    return x->end >= 0 ? x->end : k + 1 < n ? r[c[k + 1].idx].start : end;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The time a kind's ranges cover, robustly: its median range's length
 * times their number. The first range of a program's first CUDA call holds
 * the context's creation (3.5 ms of a stand-in's "init layer 0" against
 * 10 us steps; hundreds of ms on a GPU): a sum made that one range count
 * more than the loop. */
static int64_t covered(const struct gt_range *r, const struct rcand *c, size_t n, int64_t end)
{
    int64_t *len = gt_xmalloc((n ? n : 1) * sizeof *len);
    for (size_t k = 0; k < n; k++) {
        int64_t e = range_end(r, c, n, k, end), s0 = r[c[k].idx].start;
        len[k] = e > s0 ? e - s0 : 0;
    }
    gt_qsort(len, n, sizeof *len, cmp_i64);
    int64_t median = n ? len[n / 2] : 0;
    free(len);
    return median > INT64_MAX / (int64_t)(n ? n : 1) ? INT64_MAX : median * (int64_t)n;
}

/* Does every range of a lie inside a range of b (in time, whatever the
 * thread)? Both in start order. */
static int inside(const struct gt_range *r, const struct rcand *a, size_t na, const struct rcand *b, size_t nb,
                  int64_t end)
{
    size_t j = 0;
    for (size_t i = 0; i < na; i++) {
        int64_t s0 = r[a[i].idx].start, e0 = range_end(r, a, na, i, end);
        while (j < nb && range_end(r, b, nb, j, end) < e0)
            j++;
        if (j == nb || r[b[j].idx].start > s0)
            return 0;
    }
    return na > 0;
}

static int step_word(const char *msg, int any_number);
static int step_named(const char *msg);

/* Does a range's name say it is an epoch ("epoch 0", "Epoch 3/10")? */
static int epoch_named(const char *msg)
{
    for (const char *q = msg; *q; q++)
        if (!strncasecmp(q, "epoch", 5) && (q == msg || !isalpha((unsigned char)q[-1])) && !isalpha((unsigned char)q[5]))
            return 1;
    return 0;
}

/* The ranges c[0..n) (one kind on one thread, in start order) as iterations
 * in out, each over the events of its time, none counted twice. */
static void to_iterations(struct gt_trace *t, const struct gt_range *r, const struct rcand *c, size_t n, int64_t end,
                          struct gt_iterations *out)
{
    size_t prev_end = 0, cap = out->n;
    for (size_t k = 0; k < n; k++) {
        const struct gt_range *rr = &r[c[k].idx];
        struct gt_iteration *it = gt_iter_push(out, &cap);
        it->index = (int64_t)k;
        it->batch_size = rr->batch_size >= 0 ? rr->batch_size : gt_parse_batch_size(rr->message);
        it->start = rr->start;
        it->closed = rr->end >= 0;
        it->end = rr->end >= 0 ? rr->end : k + 1 < n ? r[c[k + 1].idx].start : end;
        it->first_ev = gt_iter_bound(t, it->start, 0);
        if (it->first_ev < prev_end)
            it->first_ev = prev_end;   /* overlapping ranges: never count an event twice */
        it->end_ev = gt_iter_bound(t, it->end, 1);
        if (it->end_ev < it->first_ev)
            it->end_ev = it->first_ev;
        prev_end = it->end_ev;
    }
}

/* Iterations from ranges: with a name, the matching ranges (any depth, any
 * domain) on the thread that has most of them; else the outermost kind of
 * range that repeats at least 3 times on one thread (numbered: a kind with a
 * number in its name, "step 0", that repeats at least twice), from the program's own
 * ranges, never a CUDA library's domain; which kind is said where the
 * choice is made below. want_marker: -1 any source, 0 NVTX only, 1 marker
 * ranges only. */
int gt_iter_from_ranges(struct gt_trace *t, const char *name, int want_marker, int numbered, struct gt_iterations *out)
{
    struct gt_range *r;
    size_t nr;
    int code = gt_trace_ranges(t, &r, &nr);
    if (code || nr == 0)
        return code;
    repair_unpopped(r, nr);
    struct rcand *c = gt_xmalloc(nr * sizeof *c);
    size_t nc = 0;
    char *norm_name = name ? normalize(name) : NULL;
    unsigned char *op = gt_torch_op_flags(r, nr);
    size_t lib_ranges = 0, op_ranges = 0;
    char lib_names[128] = "";
    for (size_t i = 0; i < nr; i++) {
        if (want_marker >= 0 && r[i].is_marker != want_marker)
            continue;
        if (name && !name_matches(r[i].message, name, norm_name))
            continue;
        if (!name && op[i]) {
            op_ranges++;
            continue;
        }
        const char *lib = name ? NULL : gt_nvtx_library_domain(r[i].domain);
        if (lib) {
            if (!lib_ranges++ || !strstr(lib_names, r[i].domain))
                snprintf(lib_names + strlen(lib_names), sizeof lib_names - strlen(lib_names), "%s%.40s",
                         *lib_names ? ", " : "", r[i].domain);
            continue;
        }
        c[nc].domain = name ? NULL : r[i].domain;
        c[nc].tier = !name && r[i].domain && !r[i].is_marker;
        c[nc].norm = name ? gt_xstrdup(norm_name) : normalize(r[i].message);
        c[nc].tid = r[i].tid;
        c[nc].depth = name ? 0 : r[i].depth;   /* a named range may nest at any depth */
        c[nc].idx = i;
        nc++;
    }
    gt_qsort(c, nc, sizeof *c, rcand_cmp);
    size_t best = 0, best_n = 0, min_n = name ? 1 : numbered ? 2 : 3;
    int64_t end = gt_iter_trace_end(t, r, nr);
    /* The kinds that qualify, each with the time its ranges cover. */
    struct kind *k = gt_xmalloc((nc ? nc : 1) * sizeof *k);
    size_t nk = 0;
    int64_t max_cover = 0;
    for (size_t g = 0; g < nc;) {
        size_t h = g + 1;
        while (h < nc && c[h].tid == c[g].tid && c[h].depth == c[g].depth &&
               !domain_cmp(c[h].domain, c[g].domain) && (name || !strcmp(c[h].norm, c[g].norm)))
            h++;
        if (h - g >= min_n && (!numbered || strchr(c[g].norm, '#'))) {
            k[nk] = (struct kind){g, h - g, covered(r, c + g, h - g, end)};
            max_cover = k[nk].cover > max_cover ? k[nk].cover : max_cover;
            nk++;
        }
        g = h;
    }
    /* A kind covering under a third of the time the widest covers is not
     * the loop, however often it repeats: twelve "init layer" ranges around
     * the parameters' allocations beat ten "step" ranges by their count, and
     * the parameters read as 10 MiB of growth an iteration (a helper's
     * probe). Among the rest: the program's own default domain and marker
     * ranges before a domain it registered; a kind whose ranges lie inside
     * another's (a marker "forward" inside NVTX steps, whose depths are
     * counted apart) after it; the main thread's before another's (a loader
     * thread prefetching 14 batches for 10 steps); the shallowest; the most
     * repeated; the first. */
    for (size_t i = 0; i < nk; i++) {
        const struct kind *kx = &k[i];
        if (!name && kx->cover < max_cover / 3)
            continue;
        const struct rcand *x = &c[kx->at], *b = &c[best];
        int better;
        if (!best_n)
            better = 1;
        else if (x->tier != b->tier)
            better = x->tier < b->tier;
        else if (inside(r, c + best, best_n, c + kx->at, kx->n, end))
            /* the current best lies inside x; steps inside epochs are the loop (an epoch's 3 iterations told
             * nothing of 30 steps' growth, and its name no batch size; a helper's probe) */
            better = !(epoch_named(r[x->idx].message) && step_word(r[b->idx].message, 1));
        else if (inside(r, c + kx->at, kx->n, c + best, best_n, end))
            better = epoch_named(r[b->idx].message) && step_word(r[x->idx].message, 1);
        else if ((x->tid == t->proc.pid) != (b->tid == t->proc.pid))
            better = x->tid == t->proc.pid;   /* the main thread's loop, not a loader thread's prefetching */
        else
            better = x->depth < b->depth ||
                     (x->depth == b->depth && (kx->n > best_n || (kx->n == best_n && x->idx < b->idx)));
        if (better) {
            best = kx->at;
            best_n = kx->n;
        }
    }
    if (best_n >= min_n) {
        to_iterations(t, r, c + best, best_n, end, out);
        /* the same kind on other threads: their own loops */
        for (size_t i = 0; i < nk && out->nthreads < GT_MAX_THREAD_LOOPS; i++) {
            const struct rcand *x = &c[k[i].at], *b = &c[best];
            if (x->tid == b->tid || k[i].n < min_n ||
                (!name && (x->depth != b->depth || domain_cmp(x->domain, b->domain) || strcmp(x->norm, b->norm))))
                continue;
            struct gt_iterations own;
            memset(&own, 0, sizeof own);
            to_iterations(t, r, x, k[i].n, end, &own);
            out->threads = gt_xrealloc(out->threads, (out->nthreads + 1) * sizeof *out->threads);
            out->threads[out->nthreads++] = (struct gt_thread_loop){x->tid, own.it, own.n};
        }
        /* kinds that repeat after the loop's last range ended, on its thread, no deeper: later loops */
        int64_t loop_end = range_end(r, c + best, best_n, best_n - 1, end);
        for (size_t i = 0; !name && i < nk && out->nlater_loops < GT_MAX_LATER_LOOPS; i++) {
            const struct rcand *x = &c[k[i].at], *b = &c[best];
            if (k[i].at == best || x->tid != b->tid || x->depth > b->depth || r[x->idx].start < loop_end)
                continue;
            struct gt_later_loop *ll = &out->later_loops[out->nlater_loops++];
            snprintf(ll->name, sizeof ll->name, "%s", r[x->idx].message);
            ll->n = k[i].n;
            ll->start = r[x->idx].start;
            ll->end = range_end(r, x, k[i].n, k[i].n - 1, end);
        }
        const struct gt_range *first = &r[c[best].idx];
        out->tid = first->tid;
        out->source = first->is_marker ? GT_ITER_MARKER : GT_ITER_NVTX;
        snprintf(out->range, sizeof out->range, "%s", first->message);
        char dom[80] = "";
        if (first->domain && !first->is_marker)
            snprintf(dom, sizeof dom, " (domain %.60s)", first->domain);
        /* ranges whose messages differ in their numbers ("step 12", "train_step
         * batch_size=16" and "=32") are named with '#' for the numbers: the first's
         * name alone read as if every iteration were its (a helper's probe) */
        const char *label = name ? name : first->message;
        for (size_t j = 1; !name && j < best_n && label == first->message; j++)
            if (strcmp(r[c[best + j].idx].message, first->message))
                label = c[best].norm;
        snprintf(out->how, sizeof out->how, "%s range \"%.200s\"%s on thread %lld: %zu iteration%s",
                 first->is_marker ? "marker" : "NVTX", label, dom, (long long)first->tid, best_n,
                 gt_s((long long)best_n));
        if (out->nthreads) {
            size_t n = strlen(out->how);
            snprintf(out->how + n, sizeof out->how - n, " (the same range on %zu other thread%s: leaks places each"
                     " thread's allocations in its own loop)", out->nthreads, gt_s((long long)out->nthreads));
        }
    }
    free(k);
    if ((lib_ranges || op_ranges) && !out->n) {  /* said where the search goes on (pattern): they were seen */
        int n = 0;
        if (lib_ranges)
            n = snprintf(out->lib_note, sizeof out->lib_note, "%zu range%s of library NVTX domains (%s) %s not "
                         "iterations", lib_ranges, gt_s((long long)lib_ranges), lib_names, lib_ranges == 1 ? "is" : "are");
        if (op_ranges && n >= 0 && (size_t)n < sizeof out->lib_note)
            snprintf(out->lib_note + n, sizeof out->lib_note - (size_t)n, "%s%zu PyTorch operator range%s "
                     "(emit_nvtx) %s not iterations", n ? "; " : "", op_ranges, gt_s((long long)op_ranges),
                     op_ranges == 1 ? "is" : "are");
    }
    for (size_t i = 0; i < nc; i++)
        free(c[i].norm);
    free(c);
    free(norm_name);
    free(op);
    gt_ranges_free(r, nr);
    return GT_EXIT_OK;
}

/* Does one iteration of pair hold every iteration of a? */
static int inside_one(const struct gt_iterations *a, const struct gt_iterations *pair)
{
    for (size_t j = 0; j < pair->n; j++) {
        size_t k = 0;
        while (k < a->n && a->it[k].first_ev >= pair->it[j].first_ev && a->it[k].end_ev <= pair->it[j].end_ev)
            k++;
        if (k == a->n)
            return 1;
    }
    return 0;
}

static int ended_inside(const struct gt_trace *t, const struct gt_range *r);

/* Are the pair's ranges steps around the whole pattern a, the run ending in
 * the second: named as steps, a from within the first's start to within the
 * second's end, and the second never closed or holding a failed allocation
 * (a pattern of layers that runs on from one step into the next, out of
 * memory in the second)? */
static int steps_around(const struct gt_trace *t, const struct gt_iterations *a, const struct gt_iterations *pair)
{
    if (pair->n != 2 || !step_named(pair->range) || a->it[0].first_ev < pair->it[0].first_ev ||
        a->it[a->n - 1].end_ev > pair->it[1].end_ev)
        return 0;
    struct gt_range second = {.start = pair->it[1].start, .end = pair->it[1].closed ? pair->it[1].end : -1};
    return ended_inside(t, &second);
}

/* A numbered kind of the program's ranges that repeats only twice ("step 0",
 * "step 1": a run that died in its second step) is the loop when no pattern
 * was found (out empty), when the pattern lies inside one of the two (on an
 * H200 a conv net out of memory in step 1 gave a pattern of its layers
 * inside that step, 6 "iterations" whose activations read as 92 GiB of
 * leaks; tests/gpu/RESULTS.md, session 33), or when they are steps around
 * the whole pattern, the run ending in the second (steps_around: a pattern
 * of layers that runs on from one step into the next). A pattern that spans
 * both ranges otherwise (steps inside "epoch 0" and "epoch 1") is the loop,
 * and stays. */
int gt_iter_numbered_pair(struct gt_trace *t, int want_marker, struct gt_iterations *out)
{
    struct gt_iterations pair;
    memset(&pair, 0, sizeof pair);
    int code = gt_iter_from_ranges(t, NULL, want_marker, 1, &pair);
    if (code || !pair.n || (out->n && !inside_one(out, &pair) && !steps_around(t, out, &pair))) {
        gt_iterations_free(&pair);
        return code;
    }
    if (out->n) {
        size_t n = strlen(pair.how);
        int in_one = inside_one(out, &pair);
        snprintf(pair.how + n, sizeof pair.how - n, " (a repeating pattern of %zu found %s is %s, not the loop)",
                 out->n, in_one ? "inside one of them" : "across them", in_one ? "that step's own" : "the steps' own");
    }
    memcpy(pair.lib_note, out->lib_note, sizeof pair.lib_note);
    gt_iterations_free(out);
    *out = pair;
    return GT_EXIT_OK;
}

/* Does a range's name say it is one step: a number, and a word "step",
 * "iter" or "iteration" ("step 0", "train_step 3", "Iteration 4"; not
 * "train_steps", "epoch 0", "DataLoaderIter", "SummaryWriter")? With
 * any_number, a number is not needed ("train_step", "step bs=16"). */
static int step_word(const char *msg, int any_number)
{
    int word = 0, number = any_number;
    for (const char *q = msg; *q;) {
        if (isdigit((unsigned char)*q))
            number = 1;
        if (!isalpha((unsigned char)*q)) {
            q++;
            continue;
        }
        const char *w = q;
        while (isalpha((unsigned char)*q))
            q++;
        size_t n = (size_t)(q - w);
        word |= (n == 4 && !strncasecmp(w, "step", 4)) || (n == 4 && !strncasecmp(w, "iter", 4)) ||
                (n == 9 && !strncasecmp(w, "iteration", 9));
    }
    return word && number;
}

static int step_named(const char *msg) { return step_word(msg, 0); }

/* Did the run end inside range r: r never closed, or an allocation failed
 * within it (the run's out-of-memory error)? */
static int ended_inside(const struct gt_trace *t, const struct gt_range *r)
{
    if (r->end < 0)
        return 1;
    for (size_t i = gt_iter_bound(t, r->start, 0); i < t->nev && t->ev[i].t <= r->end; i++)
        if (t->ev[i].failed && t->api[t->ev[i].api].known && t->api[t->ev[i].api].op == GT_OP_ALLOC)
            return 1;
    return 0;
}

/* One range of the program's, named as a step and the only one of its kind
 * ("step 0"), in which the run ended (never closed, or an allocation failed
 * in it: a run out of memory in its first step), around a whole pattern:
 * the pattern is that step's own (its layers), and the step the one
 * iteration (a conv net's layers read as iterations called its activations
 * leaks; session 33). A range named otherwise ("epoch 0", "train_steps")
 * around the pattern is an outer loop's, and so is one the run went on
 * after: the pattern stays (a leak found over its iterations stays told). */
int gt_iter_one_step_range(struct gt_trace *t, int want_marker, struct gt_iterations *out)
{
    if (!out->n)
        return GT_EXIT_OK;
    struct gt_range *r;
    size_t nr;
    int code = gt_trace_ranges(t, &r, &nr);
    if (code || !nr)
        return code;
    /* the step-named ranges, by kind (thread, domain, name with its numbers
     * as '#'), to find the kinds seen once */
    struct rcand *c = gt_xmalloc(nr * sizeof *c);
    size_t nc = 0;
    for (size_t i = 0; i < nr; i++) {
        if ((want_marker >= 0 && r[i].is_marker != want_marker) || gt_nvtx_library_domain(r[i].domain) ||
            (!r[i].is_marker && !r[i].domain && gt_torch_op_range(r[i].message)) || !step_named(r[i].message))
            continue;
        c[nc] = (struct rcand){normalize(r[i].message), r[i].domain, 0, r[i].tid, 0, i};
        nc++;
    }
    gt_qsort(c, nc, sizeof *c, rcand_cmp);
    const struct gt_range *step = NULL;
    size_t singles = 0;
    for (size_t g = 0; g < nc;) {
        size_t h = g + 1;
        while (h < nc && c[h].tid == c[g].tid && !domain_cmp(c[h].domain, c[g].domain) && !strcmp(c[h].norm, c[g].norm))
            h++;
        if (h - g == 1 && !singles++)
            step = &r[c[g].idx];
        g = h;
    }
    struct gt_iterations one;
    memset(&one, 0, sizeof one);
    if (singles == 1 && ended_inside(t, step))
        code = gt_iter_from_ranges(t, step->message, want_marker, 0, &one);
    if (!code && one.n == 1 && inside_one(out, &one)) {
        size_t n = strlen(one.how);
        snprintf(one.how + n, sizeof one.how - n, " (a repeating pattern of %zu found inside it is that step's own, "
                 "not the loop)", out->n);
        memcpy(one.lib_note, out->lib_note, sizeof one.lib_note);
        gt_iterations_free(out);
        *out = one;
    } else {
        gt_iterations_free(&one);
    }
    for (size_t i = 0; i < nc; i++)
        free(c[i].norm);
    free(c);
    gt_ranges_free(r, nr);
    return code;
}

/* --iteration NAME named no range: the nearest range name the trace has
 * (each message up to its first character that is not part of a name, as
 * name_matches takes a prefix), or a few of its names. */
void gt_iter_range_names_hint(struct gt_trace *t, const char *name, int want_marker, char *buf, size_t len)
{
    struct gt_range *r;
    size_t nr;
    buf[0] = 0;
    if (gt_trace_ranges(t, &r, &nr))
        return;
    const char **names = gt_xmalloc(nr * sizeof *names);
    char **own = gt_xmalloc(nr * sizeof *own);
    size_t n = 0;
    for (size_t i = 0; i < nr; i++) {
        if (want_marker >= 0 && r[i].is_marker != want_marker)   /* as gt_iter_from_ranges takes them */
            continue;
        size_t k = 0;
        while (r[i].message[k] && (isalnum((unsigned char)r[i].message[k]) || strchr("_.:-/", r[i].message[k])))
            k++;
        if (!k)
            continue;
        char *stem = gt_xmalloc(k + 1);
        memcpy(stem, r[i].message, k);
        stem[k] = 0;
        size_t j = 0;
        while (j < n && strcmp(names[j], stem))
            j++;
        if (j < n) {
            free(stem);
            continue;
        }
        own[n] = stem;
        names[n++] = stem;
    }
    const char *near = gt_nearest(name, names, n);
    if (near && !strcmp(near, name)) {
        /* (named, but not as an iteration range: the next source down says why, not a typo) */
    } else if (near) {
        snprintf(buf, len, " (did you mean \"%.200s\"?)", near);
    } else if (n) {
        size_t o = (size_t)snprintf(buf, len, "; its ranges: ");
        for (size_t j = 0; j < n && j < 8 && o < len; j++)
            o += (size_t)snprintf(buf + o, len - o, "%s\"%.60s\"", j ? ", " : "", names[j]);
        if (n > 8 && o < len)
            snprintf(buf + o, len - o, " and %zu more", n - 8);
    }
    for (size_t j = 0; j < n; j++)
        free(own[j]);
    free(own);
    free(names);
    gt_ranges_free(r, nr);
}
