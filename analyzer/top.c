/* top.c - `gputrace top`: call sites ranked three ways: by bytes allocated
 * over the whole run (churn), by their own peak of live bytes (footprint),
 * and by number of allocations (call overhead: ~75 us per cudaMalloc pair). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* gputrace top --help (the command table is in commands.c) */
const char gt_help_top[] =
    "usage: gputrace top [--json] [--top N] [OPTIONS] TRACE.db...\n"
    "\n"
    "Call sites (allocation stacks) ranked by bytes allocated over the run, by\n"
    "their own peak of live bytes, and by number of allocations.\n";

struct site_stat {
    int32_t site;
    int memory;     /* -1 mixed, -2 none yet */
    int64_t bytes, count, live, peak;
};

static int by_bytes(const void *a, const void *b)
{
    const struct site_stat *x = a, *y = b;
    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : (x->site > y->site) - (x->site < y->site);
}

static int by_peak(const void *a, const void *b)
{
    const struct site_stat *x = a, *y = b;
    return x->peak != y->peak ? (x->peak < y->peak ? 1 : -1) : by_bytes(a, b);
}

static int by_count(const void *a, const void *b)
{
    const struct site_stat *x = a, *y = b;
    return x->count != y->count ? (x->count < y->count ? 1 : -1) : by_bytes(a, b);
}

static int print_list(struct gt_ctx *c, struct gt_json *j, const char *key, const char *title,
                      struct site_stat *s, size_t n, int (*cmp)(const void *, const void *))
{
    gt_qsort(s, n, sizeof *s, cmp);
    size_t limit = n < (size_t)c->o->top ? n : (size_t)c->o->top;
    int32_t *ids = gt_xmalloc((limit + 1) * sizeof *ids);
    for (size_t i = 0; i < limit; i++)
        ids[i] = s[i].site;
    char **texts;
    int code = gt_site_texts(c, ids, limit, &texts);
    free(ids);
    if (code)
        return code;
    if (j) {
        gt_json_key(j, key);
        gt_json_arr(j);
        for (size_t i = 0; i < limit && !code; i++) {
            gt_json_obj(j);
            gt_json_kint(j, "bytes", s[i].bytes);
            gt_json_kint(j, "count", s[i].count);
            gt_json_kint(j, "peak_live_bytes", s[i].peak);
            gt_json_kstr(j, "memory", gt_memory_name(s[i].memory));
            gt_json_kint_or_null(j, "stack_id", gt_trace_stack_id(&c->t, s[i].site));
            code = gt_json_frames(c, j, s[i].site, texts[i]);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
        gt_site_texts_free(texts, limit);
        return code;
    }
    printf("  %s:\n", title);
    struct gt_table tb;
    gt_table_init(&tb, 5, 0x7);
    gt_table_row(&tb, "allocated", "count", "peak live", "memory", "call site (innermost first)");
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], cnt[32];
    for (size_t i = 0; i < limit; i++) {
        snprintf(cnt, sizeof cnt, "%lld", (long long)s[i].count);
        gt_table_row(&tb, gt_fmt_bytes(s[i].bytes, b1), cnt, gt_fmt_bytes(s[i].peak, b2), gt_memory_name(s[i].memory), texts[i]);
    }
    gt_table_print(&tb, stdout, 4);
    gt_site_texts_free(texts, limit);
    return code;
}

int gt_report_top(struct gt_ctx *c, struct gt_json *j)
{
    const struct gt_trace *t = &c->t;
    struct gt_sel sel = {.mem_mask = c->o->memory_set ? c->o->mem_mask : GT_MASK_ALL, .device = c->o->device};
    size_t ns = t->nsites + 1;
    struct site_stat *st = gt_xcalloc(ns, sizeof *st);
    for (size_t k = 0; k < ns; k++) {
        st[k].site = k == t->nsites ? -1 : (int32_t)k;
        st[k].memory = -2;
    }
    for (size_t i = 0; i < t->nev; i++) {
        uint32_t a = gt_alloc_of(t, &c->p, i);
        if (a == GT_NO_EVENT)
            continue;
        const struct gt_event *ae = &t->ev[a];
        if (!gt_sel_has(t, &sel, ae))
            continue;
        struct site_stat *s = &st[ae->site >= 0 ? (size_t)ae->site : t->nsites];
        int64_t sz = ae->size > 0 ? ae->size : 0;
        if (a == i) {
            int mem = t->api[ae->api].memory;
            s->memory = s->memory == -2 || s->memory == mem ? mem : -1;
            s->bytes += sz;
            s->count++;
            s->live += sz;
            if (s->live > s->peak)
                s->peak = s->live;
        } else {
            s->live -= sz;
        }
    }
    size_t n = 0;
    for (size_t k = 0; k < ns; k++)
        if (st[k].count)
            st[n++] = st[k];
    int code;
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_kint(j, "sites_total", (int64_t)n);
    } else {
        char mem[96] = "all memory kinds";
        if (c->o->memory_set)
            snprintf(mem, sizeof mem, "%s memory", c->sel_name);
        printf("Top call sites (%s, %zu site%s):\n", mem, n, gt_s((long long)n));
    }
    code = print_list(c, j, "by_bytes", "by bytes allocated", st, n, by_bytes);
    if (!code)
        code = print_list(c, j, "by_peak", "by peak live bytes", st, n, by_peak);
    if (!code)
        code = print_list(c, j, "by_count", "by allocation count", st, n, by_count);
    if (j)
        gt_json_obj_end(j);
    free(st);
    return code;
}
