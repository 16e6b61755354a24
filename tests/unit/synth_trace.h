/* synth_trace.h - an analyzer trace (struct gt_trace) built in memory for the
 * unit tests of live.c and iterations_auto.c: the apis table as the schema
 * declares it (schema_sql.h), and events appended one call at a time, 1 us
 * apart, in the order the analyzer keeps them. No database. */
#ifndef GT_SYNTH_TRACE_H
#define GT_SYNTH_TRACE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "trace.h"

struct synth {
    struct gt_trace t;
    size_t cap;
};

__attribute__((unused))
static void synth_init(struct synth *s)
{
    memset(s, 0, sizeof *s);
    s->t.path = "synthetic";
    for (size_t i = 0; i < sizeof gt_api_table / sizeof gt_api_table[0]; i++) {
        const struct gt_api_info *a = &gt_api_table[i];
        struct gt_api_attr *at = &s->t.api[a->id];
        at->known = 1;
        at->op = a->op;
        at->memory = a->memory;
        at->space = a->space;
        snprintf(at->name, sizeof at->name, "%s", a->name);
    }
}

/* Appends one successful call (result 0) or a failed one; returns its index.
 * A free's size and device are its allocation's, as the shim writes them. */
__attribute__((unused))
static size_t synth_call(struct synth *s, int api, uint64_t ptr, int64_t size, int device, int32_t site, int64_t result)
{
    if (s->t.nev == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->t.ev = realloc(s->t.ev, s->cap * sizeof *s->t.ev);
    }
    struct gt_event *e = &s->t.ev[s->t.nev];
    memset(e, 0, sizeof *e);
    e->t = (int64_t)(s->t.nev + 1) * 1000;
    e->api = (uint8_t)api;
    e->failed = result != 0;
    if (result)
        e->u.result = result;
    else
        e->u.ptr = ptr;
    e->size = size;
    e->device = (int16_t)device;
    e->site = site;
    if (site >= 0 && (size_t)site >= s->t.nsites)
        s->t.nsites = (size_t)site + 1;
    return s->t.nev++;
}

__attribute__((unused))
static size_t synth_alloc(struct synth *s, int api, uint64_t ptr, int64_t size, int32_t site)
{
    return synth_call(s, api, ptr, size, 0, site, 0);
}

__attribute__((unused))
static size_t synth_free(struct synth *s, int api, uint64_t ptr, int64_t size)
{
    return synth_call(s, api, ptr, size, 0, -1, 0);
}

/* Frames for sites 0..nsites-1, as if read from the trace: none, except
 * that each site marked 1 in mark[] gets the shim's one-frame marker of the
 * thread waiting in backward() (a Python frame "<backward>", no file), and
 * each marked 2 a Python frame of PyTorch's AdamW (torch/optim/adamw.py). */
static struct gt_frame synth_backward_frame = {.function = "<backward>", .module = "", .python = 1};
static char *synth_backward_text[] = {"<backward>"};
static struct gt_frame synth_optim_frame = {.function = "_multi_tensor_adamw", .module = "",
                                            .file = "/usr/lib/python3/dist-packages/torch/optim/adamw.py",
                                            .line = 480, .python = 1};
static char *synth_optim_text[] = {"_multi_tensor_adamw (adamw.py:480)"};

__attribute__((unused))
static void synth_frames(struct synth *s, size_t nsites, const unsigned char *mark)
{
    if (nsites < s->t.nsites)
        nsites = s->t.nsites;
    s->t.nsites = nsites;
    s->t.site_frames = calloc(nsites + 1, sizeof *s->t.site_frames);
    s->t.site_info = calloc(nsites + 1, sizeof *s->t.site_info);
    s->t.site_nframes = calloc(nsites + 1, sizeof *s->t.site_nframes);
    for (size_t i = 0; i < nsites; i++)
        if (mark[i]) {
            s->t.site_nframes[i] = 1;
            s->t.site_info[i] = mark[i] == 1 ? &synth_backward_frame : &synth_optim_frame;
            s->t.site_frames[i] = mark[i] == 1 ? synth_backward_text : synth_optim_text;
        }
}

__attribute__((unused))
static void synth_done(struct synth *s)
{
    free(s->t.ev);
    free(s->t.site_frames);
    free(s->t.site_info);
    free(s->t.site_nframes);
    memset(s, 0, sizeof *s);
}

#endif
