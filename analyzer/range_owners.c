/* range_owners.c - NVTX ranges that are not the program's own: those of
 * CUDA libraries' domains, and PyTorch's operator ranges under emit_nvtx.
 * Shown on the timeline; iterations only when --iteration names them. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exitcodes.h"
#include "format.h"
#include "hmap.h"
#include "iterations.h"
#include "trace.h"

/* NVTX domains that CUDA libraries register for themselves once NVTX
 * injection is on (CCCL's are compiled into whatever uses CUB or Thrust, such
 * as libtorch_cuda; XLA, in JAX and TensorFlow, creates "TSL" for its
 * executables and annotations). Their ranges are the library's calls, not the program's
 * loop: they are shown on the timeline, and become iterations only when
 * --iteration names them. Matched without case, as the whole name or its
 * first word ("NCCL", "cuDNN", "cuBLASLt API"). Returns the library's name
 * or NULL. */
const char *gt_nvtx_library_domain(const char *domain)
{
    static const char *const libs[] = {"CCCL", "CUB", "Thrust", "libcu++", "cuDNN", "cuBLAS", "cuBLASLt", "NCCL",
                                       "cuFFT", "cuSPARSE", "cuSPARSELt", "cuSOLVER", "cuRAND", "cuTENSOR", "nvJPEG",
                                       "NPP", "nvCOMP", "TensorRT", "cuDSS", "NVSHMEM", "CUTLASS", "cuDF", "RMM",
                                       "DALI", "UCX", "UCC", "TSL", "XLA"};
    if (!domain)
        return NULL;
    size_t n = strcspn(domain, " :_-/.");
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++)
        if (strlen(libs[i]) == n && !strncasecmp(domain, libs[i], n))
            return libs[i];
    return NULL;
}

/* ", seq = N, op_id = M": PyTorch gives a sequence number only to what
 * autograd records, operators and backward nodes ("AddmmBackward0, seq = 7,
 * op_id = 50" on the autograd thread, where it is outermost); a scope of the
 * program's has none ("train_step, op_id = 7"), and a range of its own that
 * says "seq = 512" carries no op_id. */
static int seq_and_op_id(const char *s)
{
    if (strncmp(s, ", seq = ", 8))
        return 0;
    s += 8;
    if (*s == '-')
        s++;
    if (!isdigit((unsigned char)*s))
        return 0;
    while (isdigit((unsigned char)*s))
        s++;
    return !strncmp(s, ", op_id = ", 10) && isdigit((unsigned char)s[10]);
}

/* PyTorch's operator ranges: under torch.autograd.profiler.emit_nvtx every
 * operator call pushes one in the default domain ("aten::addmm, seq = 12,
 * op_id = 40"; autograd's "autograd::engine::evaluate_function: ..." and
 * its backward nodes, "AddmmBackward0, seq = 7, op_id = 50";
 * record_function scopes of PyTorch's own, "Optimizer.step#AdamW.step,
 * op_id = 41"), so the most repeated outermost kind would be an operator,
 * not the loop. A name of the program's own keeps its place even with
 * emit_nvtx's suffix ("train_step, op_id = 7": a record_function scope of
 * the program's, which reaches NVTX only this way). Shown on the timeline;
 * iterations only when --iteration names them. */
enum { TORCH_NONE, TORCH_SCOPE, TORCH_OPERATOR };

/* TORCH_OPERATOR: an operator (or autograd's node); TORCH_SCOPE: one of
 * PyTorch's own record_function scopes ("Optimizer.step#SGD.step", inside
 * which the program's closure may run its own step); TORCH_NONE. */
int gt_torch_op_range(const char *msg)
{
    static const char *const ns[] = {"aten::", "autograd::", "prim::", "c10d::", "profiler::"};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        if (!strncmp(msg, ns[i], strlen(ns[i])))
            return TORCH_OPERATOR;
    size_t name = strcspn(msg, ",");   /* emit_nvtx's suffix follows the name: ", seq = N", ", op_id = N" */
    if (seq_and_op_id(msg + name))
        return TORCH_OPERATOR;
    if (strncmp(msg + name, ", seq = ", 8) && strncmp(msg + name, ", op_id = ", 10))
        return TORCH_NONE;
    for (size_t i = 0; i + 1 < name; i++) {
        if (msg[i] == ':' && msg[i + 1] == ':')
            return TORCH_OPERATOR;   /* a C++ scope: torch::autograd::AccumulateGrad */
        if (msg[i] == '#' && (isalpha((unsigned char)msg[i + 1]) || msg[i + 1] == '_'))
            return TORCH_SCOPE;      /* PyTorch's "Class.method#Impl.method" */
    }
    return TORCH_NONE;
}

/* Which default-domain ranges are PyTorch's operators or scopes, or lie
 * inside an operator (PyTorch's own calls recorded by name inside an
 * operator's range, "detach_, op_id = 140" inside "aten::detach_"; a loop is
 * never inside an operator). r is in start order; a range's parent is the last range before
 * it on its thread one level up. Returns a flag per range. */
unsigned char *gt_torch_op_flags(const struct gt_range *r, size_t nr)
{
    unsigned char *op = gt_xcalloc(nr ? nr : 1, 1);
    struct gt_hmap slot;   /* tid -> its mask's index */
    gt_hmap_init(&slot);
    uint64_t *mask = NULL;   /* bit d: the open range at depth d is (inside) an operator */
    size_t nmask = 0;
    for (size_t i = 0; i < nr; i++) {
        if (r[i].is_marker || r[i].domain || r[i].depth < 0)
            continue;
        uint32_t k = gt_hmap_get(&slot, (uint64_t)r[i].tid);
        if (k == GT_HMAP_NONE) {
            if (gt_hmap_put(&slot, (uint64_t)r[i].tid, (uint32_t)nmask) == GT_HMAP_OOM) {
                fprintf(stderr, "gputrace: out of memory\n");
                exit(GT_EXIT_NOMEM);
            }
            mask = gt_xrealloc(mask, (nmask + 1) * sizeof *mask);
            mask[nmask] = 0;
            k = (uint32_t)nmask++;
        }
        unsigned d = r[i].depth < 63 ? (unsigned)r[i].depth : 63;
        int kind = gt_torch_op_range(r[i].message), inside = d > 0 && (mask[k] >> (d - 1) & 1);
        op[i] = kind != TORCH_NONE || inside;
        /* what lies inside an operator is the operator's; inside one of
         * PyTorch's scopes it may be the program's (the optimizer's closure
         * runs Lightning's training_step inside "Optimizer.step#SGD.step") */
        uint64_t bit = kind == TORCH_OPERATOR || inside;
        mask[k] = (mask[k] & ~(UINT64_C(1) << d)) | (bit << d);
    }
    gt_hmap_free(&slot);
    free(mask);
    return op;
}
