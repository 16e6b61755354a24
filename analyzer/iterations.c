/* iterations.c - where each iteration of the training loop begins and ends.
 * Sources, in the order tried: the marker API's iterations table (explicit),
 * the most repeated outermost range (NVTX or gputrace_range_*), and, with no
 * markers at all, the period of the allocation stream (or of the kernels).
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
            return v;
        }
    }
    return -1;
}

/* First event index with t >= x (strict=0) or t > x (strict=1). */
static size_t bound(const struct gt_trace *t, int64_t x, int strict)
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

static int64_t trace_end(const struct gt_trace *t, const struct gt_range *r, size_t nr)
{
    int64_t end = t->nev ? t->ev[t->nev - 1].t : 0;
    if (t->proc.end_ns > end)
        end = t->proc.end_ns;
    for (size_t i = 0; i < nr; i++)
        if (r[i].end > end)
            end = r[i].end;
    return end;
}

static struct gt_iteration *push(struct gt_iterations *out, size_t *cap)
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
    int64_t end = trace_end(t, NULL, 0);
    for (size_t k = 0; k < nm; k++) {
        struct gt_iteration *it = push(out, &cap);
        it->index = m[k].idx;
        it->batch_size = m[k].batch_size;
        it->start = m[k].t;
        it->end = k + 1 < nm ? m[k + 1].t : end;
        it->first_ev = bound(t, it->start, 0);
        it->end_ev = k + 1 < nm ? bound(t, it->end, 0) : t->nev;
        it->closed = k + 1 < nm;
    }
    out->source = GT_ITER_MARKER;
    snprintf(out->how, sizeof out->how, "marker API (gputrace_iteration): %zu iterations", nm);
    free(m);
    return GT_EXIT_OK;
}

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
    int64_t tid, depth;
    size_t idx;   /* into the ranges array (start order) */
};

static int rcand_cmp(const void *a, const void *b)
{
    const struct rcand *x = a, *y = b;
    int c = strcmp(x->norm, y->norm);
    if (c)
        return c;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Iterations from ranges: with a name, the matching ranges (any depth) on the
 * thread that has most of them; else the outermost kind of range that repeats
 * at least 3 times on one thread (the shallowest such; among equals the most
 * repeated, then the first). want_marker: -1 any source, 0 NVTX only, 1
 * marker ranges only. */
static int from_ranges(struct gt_trace *t, const char *name, int want_marker, struct gt_iterations *out)
{
    struct gt_range *r;
    size_t nr, cap = 0;
    int code = gt_trace_ranges(t, &r, &nr);
    if (code || nr == 0)
        return code;
    struct rcand *c = gt_xmalloc(nr * sizeof *c);
    size_t nc = 0;
    char *norm_name = name ? normalize(name) : NULL;
    for (size_t i = 0; i < nr; i++) {
        if (want_marker >= 0 && r[i].is_marker != want_marker)
            continue;
        if (name && !name_matches(r[i].message, name, norm_name))
            continue;
        c[nc].norm = name ? gt_xstrdup(norm_name) : normalize(r[i].message);
        c[nc].tid = r[i].tid;
        c[nc].depth = name ? 0 : r[i].depth;   /* a named range may nest at any depth */
        c[nc].idx = i;
        nc++;
    }
    qsort(c, nc, sizeof *c, rcand_cmp);
    size_t best = 0, best_n = 0, min_n = name ? 1 : 3;
    for (size_t g = 0; g < nc;) {
        size_t h = g + 1;
        while (h < nc && c[h].tid == c[g].tid && c[h].depth == c[g].depth && (name || !strcmp(c[h].norm, c[g].norm)))
            h++;
        size_t cnt = h - g;
        int better = cnt >= min_n &&
                     (!best_n || c[g].depth < c[best].depth ||
                      (c[g].depth == c[best].depth && (cnt > best_n || (cnt == best_n && c[g].idx < c[best].idx))));
        if (better) {
            best = g;
            best_n = cnt;
        }
        g = h;
    }
    if (best_n >= min_n) {
        int64_t end = trace_end(t, r, nr);
        size_t prev_end = 0;
        for (size_t k = 0; k < best_n; k++) {
            const struct gt_range *rr = &r[c[best + k].idx];
            struct gt_iteration *it = push(out, &cap);
            it->index = (int64_t)k;
            it->batch_size = rr->batch_size >= 0 ? rr->batch_size : gt_parse_batch_size(rr->message);
            it->start = rr->start;
            it->closed = rr->end >= 0;
            it->end = rr->end >= 0 ? rr->end : k + 1 < best_n ? r[c[best + k + 1].idx].start : end;
            it->first_ev = bound(t, it->start, 0);
            if (it->first_ev < prev_end)
                it->first_ev = prev_end;   /* overlapping ranges: never count an event twice */
            it->end_ev = bound(t, it->end, 1);
            if (it->end_ev < it->first_ev)
                it->end_ev = it->first_ev;
            prev_end = it->end_ev;
        }
        const struct gt_range *first = &r[c[best].idx];
        out->source = first->is_marker ? GT_ITER_MARKER : GT_ITER_NVTX;
        snprintf(out->how, sizeof out->how, "%s range \"%.200s\" on thread %lld: %zu iterations",
                 first->is_marker ? "marker" : "NVTX", name ? name : first->message, (long long)first->tid, best_n);
    }
    for (size_t i = 0; i < nc; i++)
        free(c[i].norm);
    free(c);
    free(norm_name);
    gt_ranges_free(r, nr);
    return GT_EXIT_OK;
}

/* ---- automatic detection ------------------------------------------------ */

/* Interns (api, size, site) triples as small integers. */
struct key3 {
    int64_t size;
    int32_t site;
    uint32_t api;
};
struct interner {
    struct key3 *keys;
    size_t nkeys, kcap;
    uint32_t *slots;   /* key id + 1, 0 empty */
    size_t cap;
};

static uint64_t key_hash(const struct key3 *k)
{
    uint64_t h = (uint64_t)k->size * 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uint32_t)k->site << 8 | k->api) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static uint32_t intern(struct interner *in, const struct key3 *k)
{
    if ((in->nkeys + 1) * 2 > in->cap) {
        size_t ncap = in->cap ? in->cap * 2 : 1024;
        uint32_t *ns = gt_xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < in->cap; i++)
            if (in->slots[i]) {
                size_t j = key_hash(&in->keys[in->slots[i] - 1]) & (ncap - 1);
                while (ns[j])
                    j = (j + 1) & (ncap - 1);
                ns[j] = in->slots[i];
            }
        free(in->slots);
        in->slots = ns;
        in->cap = ncap;
    }
    size_t j = key_hash(k) & (in->cap - 1);
    for (; in->slots[j]; j = (j + 1) & (in->cap - 1)) {
        const struct key3 *o = &in->keys[in->slots[j] - 1];
        if (o->size == k->size && o->site == k->site && o->api == k->api)
            return in->slots[j] - 1;
    }
    if (in->nkeys == in->kcap) {
        in->kcap = in->kcap ? in->kcap * 2 : 1024;
        in->keys = gt_xrealloc(in->keys, in->kcap * sizeof *in->keys);
    }
    in->keys[in->nkeys] = *k;
    in->slots[j] = (uint32_t)++in->nkeys;
    return (uint32_t)(in->nkeys - 1);
}

/* Longest run of i with s[i] == s[i+p]; its start in *start. */
static size_t match_run(const uint32_t *s, size_t n, size_t p, size_t *start)
{
    size_t best = 0, run = 0;
    *start = 0;
    for (size_t i = 0; i + p < n; i++) {
        if (s[i] == s[i + p]) {
            if (++run > best) {
                best = run;
                *start = i + 1 - run;
            }
        } else {
            run = 0;
        }
    }
    return best;
}

static void add_cand(size_t *cand, size_t *nc, size_t max, size_t p)
{
    for (size_t i = 0; i < *nc; i++)
        if (cand[i] == p)
            return;
    if (*nc < max)
        cand[(*nc)++] = p;
}

/* Finds the smallest period p such that s[a .. a+cover) is p-periodic with
 * at least 3 repetitions, maximising cover (the periodic stretch may follow a
 * warm-up prefix and precede a tail). Candidates: every p up to 64, and the
 * gaps between occurrences of the rarest repeated symbols (a symbol seen once
 * per iteration recurs exactly every p). Returns p, or 0 if none. */
static size_t find_period(const uint32_t *s, size_t n, size_t nsym, size_t *a_out, size_t *cover_out)
{
    if (n < 6)
        return 0;
    enum { MAXC = 512 };
    size_t cand[MAXC], nc = 0;
    for (size_t p = 1; p <= 64 && p * 3 <= n; p++)
        add_cand(cand, &nc, MAXC, p);
    uint32_t *count = gt_xcalloc(nsym, sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[s[i]]++;
    /* the 16 rarest symbols that occur at least 3 times */
    uint32_t rare[16];
    size_t nrare = 0;
    for (uint32_t id = 0; id < nsym; id++) {
        if (count[id] < 3)
            continue;
        if (nrare < 16) {
            rare[nrare++] = id;
            continue;
        }
        size_t worst = 0;
        for (size_t k = 1; k < nrare; k++)
            if (count[rare[k]] > count[rare[worst]])
                worst = k;
        if (count[id] < count[rare[worst]])
            rare[worst] = id;
    }
    for (size_t k = 0; k < nrare; k++) {
        size_t *pos = gt_xmalloc(count[rare[k]] * sizeof *pos), np = 0;
        for (size_t i = 0; i < n; i++)
            if (s[i] == rare[k])
                pos[np++] = i;
        /* gaps spanning 1..4 occurrences, at a few places through the run */
        for (size_t q = 0; q < 8 && np > 1; q++) {
            size_t j = q * (np - 1) / 8;
            for (size_t d = 1; d <= 4 && j + d < np; d++)
                if ((pos[j + d] - pos[j]) * 3 <= n)
                    add_cand(cand, &nc, MAXC, pos[j + d] - pos[j]);
        }
        free(pos);
    }
    free(count);
    size_t best_p = 0, best_cover = 0, best_a = 0;
    for (size_t k = 0; k < nc; k++) {
        size_t p = cand[k], a;
        size_t run = match_run(s, n, p, &a);
        if (run < 2 * p)
            continue;
        size_t cover = run + p;
        if (cover > best_cover || (cover == best_cover && p < best_p)) {
            best_cover = cover;
            best_p = p;
            best_a = a;
        }
    }
    *a_out = best_a;
    *cover_out = best_cover;
    return best_p;
}

/* Automatic iterations from the stream of successful allocations. */
static int from_alloc_pattern(struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel, struct gt_iterations *out)
{
    struct interner in = {0};
    uint32_t *seq = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *seq);
    uint32_t *seq_ev = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *seq_ev);
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = &t->api[e->api];
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || !(GT_MASK_ALL & GT_MASK(a->memory)))
            continue;
        struct key3 k = {e->size, e->site, e->api};
        seq[n] = intern(&in, &k);
        seq_ev[n++] = (uint32_t)i;
    }
    size_t a, cover, p = find_period(seq, n, in.nkeys, &a, &cover);
    if (p) {
        size_t reps = cover / p;
        /* phase: start iterations where live memory is lowest on average (an
         * iteration boundary is where its temporaries are all freed) */
        double *sum = gt_xcalloc(p, sizeof *sum);
        int64_t live = 0;
        size_t q = a, qend = a + reps * p;
        for (size_t i = 0; i < t->nev && q < qend; i++) {
            if (i == seq_ev[q]) {
                sum[(q - a) % p] += (double)live;
                q++;
            }
            live += gt_delta(t, pr, sel, i);
        }
        size_t o = 0;
        for (size_t k = 1; k < p; k++)
            if (sum[k] < sum[o])
                o = k;
        free(sum);
        size_t count = o <= cover - reps * p ? reps : reps - 1;
        size_t cap = 0;
        for (size_t k = 0; k < count; k++) {
            size_t b = a + o + k * p;
            struct gt_iteration *it = push(out, &cap);
            it->index = (int64_t)k;
            it->batch_size = -1;
            it->first_ev = seq_ev[b];
            it->start = t->ev[it->first_ev].t;
            if (b + p < n) {
                it->end_ev = seq_ev[b + p];
                it->end = t->ev[it->end_ev].t;
                it->closed = 1;
            } else {
                it->end_ev = t->nev;
                it->end = t->ev[t->nev - 1].t;
            }
        }
        if (count) {
            out->source = GT_ITER_AUTO;
            snprintf(out->how, sizeof out->how,
                     "automatic: a pattern of %zu allocations repeats %zu times (%zu allocations before it, %zu after)",
                     p, count, a + o, n - (a + o + count * p));
        }
    }
    free(in.keys);
    free(in.slots);
    free(seq);
    free(seq_ev);
    return GT_EXIT_OK;
}

/* Automatic iterations from CUPTI kernel names, when allocations repeat no
 * pattern (for example a caching allocator that stopped calling cudaMalloc). */
static int from_kernel_pattern(struct gt_trace *t, struct gt_iterations *out)
{
    struct gt_kernel *k;
    size_t nk;
    int code = gt_trace_kernels(t, &k, &nk);
    if (code || nk < 6) {
        free(k);
        return code;
    }
    struct interner in = {0};
    uint32_t *seq = gt_xmalloc(nk * sizeof *seq);
    for (size_t i = 0; i < nk; i++) {
        struct key3 key = {k[i].name_id, 0, 0};
        seq[i] = intern(&in, &key);
    }
    size_t a, cover, p = find_period(seq, nk, in.nkeys, &a, &cover);
    if (p) {
        size_t reps = cover / p, cap = 0;
        for (size_t r = 0; r < reps; r++) {
            size_t b = a + r * p;
            struct gt_iteration *it = push(out, &cap);
            it->index = (int64_t)r;
            it->batch_size = -1;
            it->start = k[b].start;
            it->first_ev = bound(t, it->start, 0);
            if (b + p < nk) {
                it->end = k[b + p].start;
                it->end_ev = bound(t, it->end, 0);
                it->closed = 1;
            } else {
                it->end = trace_end(t, NULL, 0);
                it->end_ev = t->nev;
            }
        }
        out->source = GT_ITER_AUTO;
        snprintf(out->how, sizeof out->how, "automatic: a pattern of %zu kernel launches repeats %zu times", p, reps);
    }
    free(in.keys);
    free(in.slots);
    free(seq);
    free(k);
    return GT_EXIT_OK;
}

int gt_find_iterations(struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *sel,
                       const struct gt_iter_opts *o, struct gt_iterations *out)
{
    memset(out, 0, sizeof *out);
    int code = GT_EXIT_OK;
    enum gt_iter_mode m = o->mode;
    if (m == GT_ITERMODE_NONE) {
        snprintf(out->how, sizeof out->how, "iterations turned off (--iterations none)");
        return GT_EXIT_OK;
    }
    if (o->name) {
        code = from_ranges(t, o->name, m == GT_ITERMODE_NVTX ? 0 : m == GT_ITERMODE_MARKER ? 1 : -1, out);
        if (!code && !out->n)
            snprintf(out->how, sizeof out->how, "no range named \"%.200s\" in the trace", o->name);
        return code;
    }
    if (m == GT_ITERMODE_BEST || m == GT_ITERMODE_MARKER) {
        if ((code = from_marker_table(t, out)) || out->n)
            return code;
        if ((code = from_ranges(t, NULL, m == GT_ITERMODE_MARKER ? 1 : -1, out)) || out->n)
            return code;
    }
    if (m == GT_ITERMODE_NVTX && ((code = from_ranges(t, NULL, 0, out)) || out->n))
        return code;
    if (m == GT_ITERMODE_BEST || m == GT_ITERMODE_AUTO) {
        if ((code = from_alloc_pattern(t, p, sel, out)) || out->n)
            return code;
        if ((code = from_kernel_pattern(t, out)) || out->n)
            return code;
    }
    snprintf(out->how, sizeof out->how, "no iterations found (%s)",
             m == GT_ITERMODE_NVTX ? "no repeated NVTX range" : m == GT_ITERMODE_MARKER ? "no marker API iterations or ranges"
             : m == GT_ITERMODE_AUTO ? "no repeating pattern of allocations or kernels"
                                     : "no markers, no repeated range, no repeating pattern of allocations");
    return GT_EXIT_OK;
}
