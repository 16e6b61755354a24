/* libunwind, loaded at the first CUDA call rather than linked: a process that
 * never calls CUDA (every shell, compiler and DataLoader worker inherits
 * LD_PRELOAD) then never maps libunwind and its own dependencies (liblzma).
 * The names to look up are the real symbols behind libunwind's macros
 * (unw_get_accessors -> _ULx86_64_get_accessors), spelled by stringifying the
 * macros themselves, so the code stays architecture-neutral. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#define PIPE_SCAN 512   /* where libunwind's pipe is looked for: fdlift.c puts it under 257 */

#include "shim.h"

#define GT_STR_(x) #x
#define GT_STR(x) GT_STR_(x)

/* The SONAME libunwind has had since 1.0; the shim's $ORIGIN runpath lets a
 * copy beside the shim win (the GPU recipe in tests/gpu relies on it). */
#define GT_LIBUNWIND "libunwind.so.8"

struct gt_unwind gt_unw;

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer builds only (tests/run_stages.py's thread stage): a stack
 * by unw_step instead of unw_backtrace. unw_backtrace keeps a per-thread
 * trace cache freed by a pthread key destructor in the last destructor
 * round, the round in which TSan's runtime tears the thread down first; the
 * cache's free then takes a mutex through a dead TSan thread and crashes
 * every exiting thread that captured a stack. unw_step keeps no such
 * cache. A normal build never compiles this. */
static int step_backtrace(void **buf, int size)
{
    unw_context_t uc;
    unw_cursor_t c;
    if (gt_unw.getcontext(&uc) || gt_unw.init_local(&c, &uc))
        return 0;
    int n = 0;
    while (n < size) {
        unw_word_t ip;
        if (gt_unw.get_reg(&c, UNW_REG_IP, &ip) || !ip)
            break;
        buf[n++] = (void *)ip;
        if (gt_unw.step(&c) <= 0)
            break;
    }
    return n;
}
#endif

/* Is a signal frame on the calling thread's stack, within 64 frames: is it
 * running a signal handler? For the ways out of the process (lifecycle.c,
 * cupti.c): a program's handler that calls _exit or exit must not run the
 * normal stop, whose CUPTI flush can wait forever on a lock the interrupted
 * code holds. libunwind recognises glibc's signal return trampoline (as it
 * must, to step through it). False when libunwind is not loaded (stacks off,
 * or missing). */
bool gt_unwind_in_signal_frame(void)
{
    /* stepping with gt_unw's step: no trace cache (unw_backtrace's per-thread
     * one, made at a thread's first use, breaks LeakSanitizer's check at exit
     * when made there on the main thread) */
    if (!gt_unw.step || !gt_unwind_usable())
        return false;
    unw_context_t uc;
    unw_cursor_t c;
    if (gt_unw.getcontext(&uc) || gt_unw.init_local(&c, &uc))
        return false;
    for (int i = 0; i < 64; i++) {
        if (gt_unw.is_signal_frame(&c) > 0)
            return true;
        if (gt_unw.step(&c) <= 0)
            return false;
    }
    return false;
}

static _Atomic bool pipe_lost;

bool gt_unwind_usable(void)
{
    if (GT_UNLIKELY(atomic_load_explicit(&pipe_lost, memory_order_relaxed)))
        return false;
    for (int i = 0; i < gt_unw.npipe; i++) {
        struct stat st;
        /* closed (libunwind opens another at its next check, on a free
         * number: harmless) or another file there: stop only for the latter */
        if (fstat(gt_unw.pipe[i].fd, &st) == 0 && (st.st_dev != gt_unw.pipe[i].dev || st.st_ino != gt_unw.pipe[i].ino)) {
            atomic_store(&pipe_lost, true);
            return false;
        }
    }
    return true;
}

bool gt_unwind_load(char *why, size_t cap)
{
    if (gt_unw.backtrace)
        return true;
    void *h = dlopen(GT_LIBUNWIND, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, cap, "cannot load %s (%s)", GT_LIBUNWIND, dlerror());
        return false;
    }
    gt_unw.getcontext = (int (*)(unw_context_t *))dlsym(h, GT_STR(unw_tdep_getcontext));
    gt_unw.init_local = (int (*)(unw_cursor_t *, unw_context_t *))dlsym(h, GT_STR(unw_init_local));
    gt_unw.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(h, GT_STR(unw_get_reg));
    gt_unw.is_signal_frame = (int (*)(unw_cursor_t *))dlsym(h, GT_STR(unw_is_signal_frame));
    int (*step)(unw_cursor_t *) = (int (*)(unw_cursor_t *))dlsym(h, GT_STR(unw_step));
    if (gt_unw.getcontext && gt_unw.init_local && gt_unw.get_reg && gt_unw.is_signal_frame && step)
        gt_unw.step = step;   /* set last: its being set means "all" */
    void *bt = dlsym(h, GT_STR(unw_backtrace));
    void *acc = dlsym(h, GT_STR(unw_get_accessors));
    void *pol = dlsym(h, GT_STR(unw_set_caching_policy));
    void *as = dlsym(h, GT_STR(unw_local_addr_space));
#if defined(__SANITIZE_THREAD__)
    bt = gt_unw.step ? (void *)step_backtrace : NULL;
#endif
    if (!bt || !acc || !pol || !as) {
        snprintf(why, cap, "%s lacks the functions the shim needs", GT_LIBUNWIND);
        return false;
    }
    gt_unw.get_accessors = (unw_accessors_t * (*)(unw_addr_space_t)) acc;
    gt_unw.local_addr_space = *(unw_addr_space_t *)as;
    /* libunwind opens its memory-check pipe here: kept off the low numbers
     * (fdlift.c), and noted, so that a program's file put there later is
     * seen before libunwind reads from it */
    struct gt_fd_lift lift;
    gt_fd_lift_begin(&lift, true);
    unsigned char before[PIPE_SCAN / 8] = {0};
    for (int fd = 0; fd < PIPE_SCAN; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            before[fd / 8] |= (unsigned char)(1u << (fd % 8));
    ((int (*)(unw_addr_space_t, unw_caching_policy_t))pol)(gt_unw.local_addr_space, UNW_CACHE_PER_THREAD);
    for (int fd = 0; fd < PIPE_SCAN && gt_unw.npipe < 2; fd++) {
        struct stat st;
        if (!(before[fd / 8] & (1u << (fd % 8))) && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
            gt_unw.pipe[gt_unw.npipe].fd = fd;
            gt_unw.pipe[gt_unw.npipe].dev = st.st_dev;
            gt_unw.pipe[gt_unw.npipe].ino = st.st_ino;
            gt_unw.npipe++;
        }
    }
    gt_fd_lift_end(&lift);
    gt_unw.backtrace = (int (*)(void **, int))bt;   /* last: its being set means "loaded" */
    return true;
}
