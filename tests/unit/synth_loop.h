/* synth_loop.h - training loops as synthetic allocation traces for the
 * unit tests of automatic iterations (test_iterations_auto.c,
 * test_iterations_steps.c): a loop's allocations appended one call at a
 * time (synth_trace.h), the event where each step begins, the detection,
 * and the check that the iterations are exactly those steps. */
#ifndef GT_SYNTH_LOOP_H
#define GT_SYNTH_LOOP_H

#include "iterations.h"
#include "synth_trace.h"
#include "tap.h"

#define MIB (1 << 20)

struct loop {
    struct synth s;
    uint64_t next_addr;
    size_t *starts;   /* event index of each iteration's first allocation */
    size_t nstarts;
};

__attribute__((unused))
static void loop_init(struct loop *l)
{
    synth_init(&l->s);
    l->next_addr = 0x7f0000000000ull;
    l->starts = calloc(4096, sizeof *l->starts);
    l->nstarts = 0;
}

__attribute__((unused))
static uint64_t addr(struct loop *l)
{
    l->next_addr += 0x100000;
    return l->next_addr;
}

__attribute__((unused))
static size_t alloc(struct loop *l, int64_t size, int32_t site, uint64_t *ptr)
{
    *ptr = addr(l);
    return synth_alloc(&l->s, GT_API_cudaMalloc, *ptr, size, site);
}

__attribute__((unused))
static struct gt_iterations detect(struct loop *l)
{
    struct gt_pairs p;
    gt_pair_events(&l->s.t, &p);
    struct gt_sel sel = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = GT_ANY_DEVICE};
    struct gt_iterations it;
    memset(&it, 0, sizeof it);
    CHECK_EQ_INT(gt_iter_from_alloc_pattern(&l->s.t, &p, &sel, &it), GT_EXIT_OK);
    gt_pairs_free(&p);
    return it;
}

__attribute__((unused))
static void loop_done(struct loop *l, struct gt_iterations *it)
{
    gt_iterations_free(it);
    free(l->starts);
    synth_done(&l->s);
}

/* The iterations are exactly the steps starts[first .. first+n): each one
 * from its first allocation to the next step's, contiguous, indexed 0..;
 * the last ends at event last_end (the next allocation after the loop), or
 * with last_end 0, stays open to the end of the trace. */
__attribute__((unused))
static void check_steps(struct loop *l, const struct gt_iterations *it, size_t first, size_t n, size_t last_end)
{
    CHECK_EQ_INT(it->source, GT_ITER_AUTO);
    CHECK_EQ_INT(it->n, n);
    for (size_t k = 0; k < it->n && k < n; k++) {
        const struct gt_iteration *x = &it->it[k];
        CHECKF(x->first_ev == l->starts[first + k], "iteration %zu starts at event %zu, the step at %zu", k,
               x->first_ev, l->starts[first + k]);
        CHECK_EQ_INT(x->index, k);
        CHECK_EQ_INT(x->batch_size, -1);
        CHECK_EQ_INT(x->start, l->s.t.ev[x->first_ev].t);
        if (k + 1 < it->n) {
            CHECK_EQ_INT(x->end_ev, it->it[k + 1].first_ev);
            CHECK_EQ_INT(x->end, it->it[k + 1].start);
            CHECK(x->closed);
        }
    }
    if (it->n && it->n == n) {
        const struct gt_iteration *last = &it->it[it->n - 1];
        CHECK_EQ_INT(last->end_ev, last_end ? last_end : l->s.t.nev);
        CHECK_EQ_INT(last->closed, last_end != 0);
    }
}

/* A step of n allocations (sites 10.., sizes 1..n MiB), all freed at its
 * end; where `state` is set, it also keeps one allocation after every
 * second of them (an optimizer's first step making its state); `other`
 * sites >= 0 replace the allocations at those places with others (a first
 * step that runs other kernels for a few of its layers). */
__attribute__((unused))
static void big_step(struct loop *l, int n, int state, int other_from, int other_n)
{
    uint64_t p[64], kept;
    for (int k = 0; k < n; k++) {
        int32_t site = k >= other_from && k < other_from + other_n ? 300 + k : 10 + k;
        size_t ev = alloc(l, (int64_t)(k + 1) * MIB, site, &p[k]);
        if (k == 0)
            l->starts[l->nstarts++] = ev;
        if (state && k % 2)
            alloc(l, 7 * MIB, 400 + k, &kept);
    }
    for (int k = 0; k < n; k++)
        synth_free(&l->s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB);
}

/* A training step of 24 allocations: a forward pass (sites 10..21) and a
 * backward pass (sites 22..33, made inside backward() when the sites are
 * marked so: mark_backward), all freed at its end. */
__attribute__((unused))
static void train_step(struct loop *l)
{
    uint64_t p[24];
    for (int k = 0; k < 24; k++) {
        size_t ev = alloc(l, (int64_t)(k + 1) * MIB, 10 + k, &p[k]);
        if (k == 0)
            l->starts[l->nstarts++] = ev;
    }
    for (int k = 0; k < 24; k++)
        synth_free(&l->s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB);
}

/* n allocations of other work (sites from site0, made and freed in turn) */
__attribute__((unused))
static void other_work(struct loop *l, int n, int32_t site0)
{
    for (int k = 0; k < n; k++) {
        uint64_t p;
        alloc(l, (int64_t)(k + 1) * MIB / 2, site0 + k, &p);
        synth_free(&l->s, GT_API_cudaFree, p, (int64_t)(k + 1) * MIB / 2);
    }
}

__attribute__((unused))
static void mark_backward(struct loop *l, int optimizer_sites)
{
    unsigned char mark[600] = {0};
    for (int k = 22; k < 34; k++)
        mark[k] = 1;
    for (int k = 500; k < 500 + optimizer_sites; k++)
        mark[k] = 2;   /* made in torch/optim/ */
    synth_frames(&l->s, 600, mark);
}

#endif
