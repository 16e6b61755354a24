/* gputrace.h: tell a gputrace trace where iterations begin, what their batch
 * size is, and name ranges and moments of your program. Header-only: include
 * it and call; there is nothing to link (on glibc older than 2.34 add -ldl).
 * Under LD_PRELOAD=libgputrace.so the calls reach the shim; without it every
 * call does nothing and costs one predictable branch.
 *
 *   #include <gputrace.h>
 *   for (long i = 0; i < steps; i++) {
 *       gputrace_iteration(i, batch_size);   // iteration i starts now
 *       gputrace_range_push("forward");
 *       ...
 *       gputrace_range_pop();
 *   }
 *
 * Functions (all thread-safe; names are copied, so they may be freed after):
 *   void gputrace_iteration(long index, long batch_size)
 *       Iteration `index` starts now (an iterations row). batch_size < 0: unknown.
 *       If the trace has not started yet (it starts at the first CUDA call),
 *       the last such call is kept and recorded when it does.
 *   void gputrace_mark(const char *name)       An instant (a marks row).
 *   int  gputrace_range_push(const char *name) Opens a range on this thread
 *       (a ranges row, source 'marker'); returns its depth, 0 = outermost.
 *       A name holding "batch_size=N" or "bs=N" sets the range's batch_size.
 *   int  gputrace_range_pop(void)              Closes this thread's innermost
 *       marker range; returns its depth, or -1 if none is open.
 *   int  gputrace_recording(void)              1 while a trace is being written.
 * NVTX ranges (nvtxRangePush, torch.cuda.nvtx.range_push) are recorded too,
 * without this header; these calls are for code that does not use NVTX.
 *
 * Python (ctypes), no package needed; does nothing when not preloaded:
 *
 *   import ctypes
 *   _gt = ctypes.CDLL(None)                # the process's global symbols
 *   if hasattr(_gt, "gputrace_iteration"):
 *       _gt.gputrace_iteration.argtypes = [ctypes.c_long, ctypes.c_long]
 *       _gt.gputrace_mark.argtypes = [ctypes.c_char_p]
 *       iteration = lambda index, batch_size=-1: _gt.gputrace_iteration(index, batch_size)
 *       mark = lambda name: _gt.gputrace_mark(name.encode())
 *   else:
 *       iteration = lambda index, batch_size=-1: None
 *       mark = lambda name: None
 *
 * README.md ("Marking iterations") has the whole Python example. */
#ifndef GPUTRACE_H
#define GPUTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef GPUTRACE_BUILDING_SHIM /* the definitions, inside libgputrace.so */
void gputrace_mark(const char *name);
void gputrace_iteration(long index, long batch_size);
int gputrace_range_push(const char *name);
int gputrace_range_pop(void);
int gputrace_recording(void);
#else

#include <dlfcn.h>

/* Resolves NAME in the process's global scope once per translation unit and
 * function, and remembers absence too. (void *)0 is RTLD_DEFAULT on glibc and
 * musl (spelled out: RTLD_DEFAULT needs _GNU_SOURCE). */
static char gputrace_absent_;
static inline void *gputrace_lookup_(void **slot, const char *name)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!p) {
        p = dlsym((void *)0, name);
        if (!p)
            p = &gputrace_absent_;
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    }
    return p == (void *)&gputrace_absent_ ? (void *)0 : p;
}
/* Declares F, the shim's NAME as a pointer of type TYPE, or NULL. */
#define GPUTRACE_FN_(TYPE, NAME) \
    static void *gputrace_slot_; \
    TYPE F = __extension__(TYPE) gputrace_lookup_(&gputrace_slot_, NAME)

typedef void (*gputrace_mark_fn_)(const char *);
typedef void (*gputrace_iteration_fn_)(long, long);
typedef int (*gputrace_push_fn_)(const char *);
typedef int (*gputrace_int_fn_)(void);

static inline void gputrace_mark(const char *name)
{
    GPUTRACE_FN_(gputrace_mark_fn_, "gputrace_mark");
    if (F)
        F(name);
}

static inline void gputrace_iteration(long index, long batch_size)
{
    GPUTRACE_FN_(gputrace_iteration_fn_, "gputrace_iteration");
    if (F)
        F(index, batch_size);
}

static inline int gputrace_range_push(const char *name)
{
    GPUTRACE_FN_(gputrace_push_fn_, "gputrace_range_push");
    return F ? F(name) : -1;
}

static inline int gputrace_range_pop(void)
{
    GPUTRACE_FN_(gputrace_int_fn_, "gputrace_range_pop");
    return F ? F() : -1;
}

static inline int gputrace_recording(void)
{
    GPUTRACE_FN_(gputrace_int_fn_, "gputrace_recording");
    return F ? F() : 0;
}
#undef GPUTRACE_FN_
#endif

#ifdef __cplusplus
}
#endif
#endif
