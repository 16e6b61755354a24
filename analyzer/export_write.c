/* export_write.c - writing gputrace export's trace events: timestamps in
 * microseconds, metadata, the window an event must fall in, and slices kept
 * nested on their track as the format requires. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "format.h"
#include "json.h"

/* ---- writing events */

static void put_ts(FILE *f, int64_t ns)
{
    uint64_t m = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;   /* INT64_MIN too */
    fprintf(f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(m / 1000), (unsigned long long)(m % 1000));
}

/* a + b, held at the ends of int64 instead of wrapping (times from a hostile trace) */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

int64_t ex_sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

/* Opens an event object: ph, pid, tid, ts (t_ns of this process). */
void ex_begin(struct exporter *x, const char *ph, int64_t tid, int64_t t_ns)
{
    fputs(x->nout++ ? ",\n{" : "\n{", x->f);
    fprintf(x->f, "\"ph\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"ts\":", ph, (long long)x->pid, (long long)tid);
    put_ts(x->f, sat_add(t_ns, x->off_ns));
}

void ex_kstr(struct exporter *x, const char *key, const char *val)
{
    fprintf(x->f, ",\"%s\":", key);
    gt_json_put_string(x->f, val ? val : "");
}

void ex_metadata(struct exporter *x, const char *what, int64_t tid, const char *key, const char *str, int64_t num)
{
    ex_begin(x, "M", tid, ex_sat_sub(0, x->off_ns));
    ex_kstr(x, "name", what);
    fprintf(x->f, ",\"args\":{\"%s\":", key);
    if (str)
        gt_json_put_string(x->f, str);
    else
        fprintf(x->f, "%lld", (long long)num);
    fputs("}}", x->f);
}

int ex_in_window(const struct exporter *x, int64_t t)
{
    return t >= x->from && t <= x->to;
}

/* tid's track of open slices; NULL when it has none and create is 0. */
static struct track *track_of(struct exporter *x, int64_t tid, int create)
{
    for (size_t i = 0; i < x->ntracks; i++)
        if (x->tracks[i].tid == tid)
            return &x->tracks[i];
    if (!create)
        return NULL;
    x->tracks = gt_xrealloc(x->tracks, (x->ntracks + 1) * sizeof *x->tracks);
    struct track *k = &x->tracks[x->ntracks++];
    memset(k, 0, sizeof *k);
    k->tid = tid;
    return k;
}

/* How many of k's slices are still open at time s (the others ended by then). */
static size_t open_at(const struct track *k, int64_t s)
{
    size_t n = k->n;
    while (n && k->ends[n - 1] <= s)
        n--;
    return n;
}

/* Clips [*s, *e] to the window and to the slices still open on tid, so that
 * slices nest as the format requires. Returns 0 if nothing is left. */
static int place_slice(struct exporter *x, int64_t tid, int64_t *s, int64_t *e)
{
    if (*e < *s)
        *e = *s;
    if (*e < x->from || *s > x->to)
        return 0;
    /* one that only touches the window's edge from outside (the next iteration, starting where
     * the last one asked for ends) is not in it; a zero-length one at the edge is */
    if ((*s == x->to && *e > *s && x->to != INT64_MAX) || (*e == x->from && *s < *e && x->from != INT64_MIN))
        return 0;
    *s = *s < x->from ? x->from : *s;
    *e = *e > x->to ? x->to : *e;
    struct track *k = track_of(x, tid, 1);
    k->n = open_at(k, *s);
    if (k->n && *e > k->ends[k->n - 1])
        *e = k->ends[k->n - 1];
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 16;
        k->ends = gt_xrealloc(k->ends, k->cap * sizeof *k->ends);
    }
    k->ends[k->n++] = *e;
    return 1;
}

/* Would a slice [s, e] nest on tid's track as it stands? Push/pop ranges
 * nest within their own NVTX domain only: a library's range that a program's
 * range ends inside would be cut to it (its length lost). */
int ex_nests(struct exporter *x, int64_t tid, int64_t s, int64_t e)
{
    const struct track *k = track_of(x, tid, 0);
    size_t n = k ? open_at(k, s) : 0;
    return !n || e <= k->ends[n - 1];
}

/* A complete slice; returns 0 if it fell outside the window. The caller
 * writes extra fields and closes the object. */
int ex_slice(struct exporter *x, int64_t tid, int64_t s, int64_t e, const char *cat, const char *name)
{
    if (!place_slice(x, tid, &s, &e))
        return 0;
    ex_begin(x, "X", tid, s);
    fputs(",\"dur\":", x->f);
    put_ts(x->f, ex_sat_sub(e, s));
    ex_kstr(x, "cat", cat);
    ex_kstr(x, "name", name);
    return 1;
}

/* ---- traces left out of the output, said in its otherData */

void ex_add_missing(struct missing *m, const char *path, const struct gt_trace *t, int code)
{
    if (!m->f)
        m->f = gt_xmemstream(&m->text, &m->len);
    fputs(m->n++ ? ",{\"file\":" : "{\"file\":", m->f);
    gt_json_put_string(m->f, path);
    fputs(",\"error\":", m->f);
    gt_json_put_string(m->f, t->err[0] ? t->err : "failed");
    fprintf(m->f, ",\"exit_status\":%d}", code);
}

void ex_put_missing(FILE *out, const char *key, struct missing *m)
{
    if (!m->f)
        return;
    fclose(m->f);
    fprintf(out, ",\"%s\":[%s]", key, m->text);
    free(m->text);
}
