/* Macros that turn one row of a hook table into one interposer, shared by
 * hooks_runtime.c and hooks_driver.c. A file defines GT_HOOK_RESULT (its
 * error type), GT_HOOK_OK, GT_HOOK_NOT_FOUND, GT_HOOK_LIB and GT_HOOK_TABLE
 * (its struct gt_hook array), lists its rows as
 *   X(KIND, symbol, api, (params), (args), PTR, SIZE, DEVICE, STREAM)
 * with KIND ALLOC, FREE, GRAPH, BEGIN or END, and expands the list three times: GT_HOOK_ENUM
 * (indices), GT_HOOK_DEFINE (the functions), GT_HOOK_ROW (the table). */
#ifndef GPUTRACE_HOOKS_H
#define GPUTRACE_HOOKS_H

#include "shim.h"

#define GT_HOOK_ENUM(kind, sym, ...) GT_H_##sym,
#define GT_HOOK_ROW(kind, sym, ...) {#sym, (void *)sym, GT_HOOK_LIB, NULL, 0},
/* the indirection expands STREAM(s) / NOSTREAM into their two arguments */
#define GT_HOOK_DEFINE(kind, sym, ...) GT_HOOK_##kind(sym, __VA_ARGS__)

/* The real function, found once through the table (so that dlsym and the
 * entry-point queries know it too), with the type of the CUDA header's
 * declaration: a row whose params disagree with the header does not compile
 * (the _ptsz variants are declared with __typeof__ of the plain name). */
#define GT_RESOLVE(sym, params) \
    __typeof__(&sym) real = (__typeof__(&sym))gt_real_of(&GT_HOOK_TABLE[GT_H_##sym]); \
    if (GT_UNLIKELY(!real)) \
        return GT_HOOK_NOT_FOUND;

/* An allocation: PTR, SIZE, DEVICE and STREAM are expressions over the
 * arguments and rc, evaluated after the real call returned. SIZE is recorded
 * for failed calls too (what an OOM asked for): it must not read an output
 * argument the failed call never set (a pitch). */
/* width x height (x depth) of a pitched request, saturated: a product past
 * 2^64 wrapped to a small number (0 for 2^33 x 2^31), and an out-of-memory
 * report then said 0 bytes were asked for */
static inline uint64_t gt_size_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#define GT_HOOK_ALLOC(sym, api, params, args, PTR, SIZE, DEVICE, STREAM, FLAGS) \
    GT_EXPORT GT_HOOK_RESULT sym params \
    { \
        GT_RESOLVE(sym, params) \
        if (!gt_hook_enter()) \
            return real args; \
        GT_REAL_BEGIN(); \
        GT_HOOK_RESULT rc = real args; \
        GT_REAL_END(); \
        gt_record_alloc(GT_API_##api, (int)rc, rc == GT_HOOK_OK ? (uint64_t)(uintptr_t)(PTR) : 0, (SIZE), \
                        (DEVICE), (STREAM), (FLAGS)); \
        gt_hook_leave(); \
        return rc; \
    }

/* A free: recorded (its place in the order taken) before the real free runs.
 * SIZE counts only with GT_CALL_HAS_SIZE in FLAGS; otherwise the writer takes
 * the size of the allocation it frees. */
#define GT_HOOK_FREE(sym, api, params, args, PTR, SIZE, DEVICE, STREAM, FLAGS) \
    GT_EXPORT GT_HOOK_RESULT sym params \
    { \
        GT_RESOLVE(sym, params) \
        if ((PTR) == 0 || !gt_hook_enter()) \
            return real args; \
        struct gt_pending_free pf; \
        gt_record_free_begin(&pf, GT_API_##api, (uint64_t)(uintptr_t)(PTR), (SIZE), (DEVICE), (STREAM), (FLAGS)); \
        GT_REAL_BEGIN(); \
        GT_HOOK_RESULT rc = real args; \
        GT_REAL_END(); \
        gt_record_free_end(&pf, (int)rc); \
        gt_hook_leave(); \
        return rc; \
    }

/* A device's primary context reset: its device (DEVICE: the runtime's
 * current one, or the argument), stamp and place in the order taken before
 * the call, as a free's (an allocation another thread makes in the new
 * context as the reset returns is after it, not freed by it: a review), its
 * result after; the writer frees what the reset gave back. */
#define GT_HOOK_RESET(sym, api, params, args, PTR, SIZE, DEVICE, STREAM, FLAGS) \
    GT_EXPORT GT_HOOK_RESULT sym params \
    { \
        GT_RESOLVE(sym, params) \
        if (!gt_hook_enter()) \
            return real args; \
        struct gt_pending_free pf; \
        gt_record_reset_begin(&pf, GT_API_##api, gt_reset_device(DEVICE)); \
        GT_REAL_BEGIN(); \
        GT_HOOK_RESULT rc = real args; \
        GT_REAL_END(); \
        gt_record_free_end(&pf, (int)rc); \
        gt_hook_leave(); \
        return rc; \
    }

/* A call that instantiates or launches a CUDA graph: nothing is recorded,
 * but from the first one on CUPTI is never detached again (cupti.c says
 * why), and the memory held for graphs is read (graphs.c). The row's other
 * columns are unused. */
#define GT_HOOK_GRAPH(sym, api, params, args) \
    GT_EXPORT GT_HOOK_RESULT sym params \
    { \
        GT_RESOLVE(sym, params) \
        gt_cupti_program_uses_graphs(); \
        gt_graph_used(); \
        return real args; \
    }

/* The beginning and the end of a stream capture (graphs.c keeps the open
 * ones); CUPTI stays attached as for GRAPH (a capture alone runs no graph,
 * so graph memory is not read for it); the row's second column is the stream (PTSZ(s)
 * for a per-thread-default-stream variant). Counted only outside the shim's
 * re-entry guard: the runtime's call runs the driver's. */
#define GT_HOOK_CAPTURE(sym, stream, params, args, COUNT) \
    GT_EXPORT GT_HOOK_RESULT sym params \
    { \
        GT_RESOLVE(sym, params) \
        gt_cupti_program_uses_graphs(); \
        if (!gt_hook_enter()) \
            return real args; \
        GT_REAL_BEGIN(); \
        GT_HOOK_RESULT rc = real args; \
        GT_REAL_END(); \
        COUNT((int)rc, (uint64_t)(uintptr_t)(stream)); \
        gt_hook_leave(); \
        return rc; \
    }
#define GT_HOOK_BEGIN(sym, stream, params, args) GT_HOOK_CAPTURE(sym, stream, params, args, gt_graph_capture_begun)
#define GT_HOOK_END(sym, stream, params, args) GT_HOOK_CAPTURE(sym, stream, params, args, gt_graph_capture_ended)

#define HOST GT_DEVICE_HOST
#define ANY GT_DEVICE_UNKNOWN /* a free's device comes from its allocation */
#define NOSTREAM 0, 0
#define STREAM(s) (uint64_t)(uintptr_t)(s), GT_CALL_HAS_STREAM
/* a per-thread-default-stream variant: its stream 0 is the thread's own stream */
#define PTSZ(s) ((s) ? (uint64_t)(uintptr_t)(s) : (uint64_t)0x2 /* CU_STREAM_PER_THREAD, cudaStreamPerThread */)
#define STREAM_PTSZ(s) PTSZ(s), GT_CALL_HAS_STREAM

#endif
