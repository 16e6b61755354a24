/* oom_frees.c - the frees CUDA refused, for gputrace oom: an address it did
 * not allocate, one freed already (a double free), one inside an allocation;
 * the memory stays as it was. Counted in summary's "failed calls" and listed
 * nowhere before (a helper's probe: double frees and bad pointers, common
 * CUDA bugs, were found only with SQL). Each with its call site when the
 * trace has stacks. */
#include <stdio.h>
#include <stdlib.h>

#include "format.h"
#include "oom.h"

int gt_oom_failed_frees(struct gt_ctx *c, struct gt_json *j)
{
    const struct gt_trace *t = &c->t;
    size_t *ev = NULL, n = 0, cap = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        /* a failed free has no device of its own (none was freed): listed under any --device */
        if (!e->failed || !a->known || a->op != GT_OP_FREE ||
            (c->o->device != GT_ANY_DEVICE && e->device != c->o->device &&
             e->device != GT_DEVICE_NULL))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ev = gt_xrealloc(ev, cap * sizeof *ev);
        }
        ev[n++] = i;
    }
    size_t shown = j ? n : n < (size_t)c->o->top ? n : (size_t)c->o->top;
    int32_t *sites = gt_xmalloc((shown + 1) * sizeof *sites);
    for (size_t k = 0; k < shown; k++)
        sites[k] = t->ev[ev[k]].site;
    char **texts = NULL;
    int code = shown ? gt_site_texts(c, sites, shown, &texts) : GT_EXIT_OK;
    if (!code && j) {
        gt_json_key(j, "failed_frees");
        gt_json_arr(j);
        for (size_t k = 0; k < shown; k++) {
            const struct gt_event *e = &t->ev[ev[k]];
            gt_json_obj(j);
            gt_json_kint(j, "time_ns", e->t);
            gt_json_kstr(j, "api", t->api[e->api].name);
            gt_json_kint(j, "result", e->u.result);
            gt_json_kstr(j, "result_name", gt_result_name(e->u.result));
            gt_json_kstr(j, "call_site", e->site >= 0 ? texts[k] : NULL);
            gt_json_obj_end(j);
        }
        gt_json_arr_end(j);
    } else if (!code && n) {
        char b1[GT_FMT_LEN];
        printf("Failed frees: %zu (a free CUDA refused: an address it did not allocate, one freed already, or one\n"
               "inside an allocation; nothing was freed)\n", n);
        for (size_t k = 0; k < shown; k++) {
            const struct gt_event *e = &t->ev[ev[k]];
            printf("  at %s: %s: %s (result %lld)%s%s\n", gt_fmt_ns(e->t, b1), t->api[e->api].name,
                   gt_result_name(e->u.result), (long long)e->u.result, e->site >= 0 ? ", from " : "",
                   e->site >= 0 ? texts[k] : "");
        }
        if (n > shown)
            printf("  ... %zu more (--top)\n", n - shown);
    }
    if (texts)
        gt_site_texts_free(texts, shown);
    free(sites);
    free(ev);
    return code;
}
