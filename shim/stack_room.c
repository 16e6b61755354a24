/* stack_room.c - the calling thread's own stack, on the hot path: is there
 * room below the caller to take its call stack? Unwinding and reading
 * Python's frames use about 8.4 KiB of the program's stack a call (measured
 * on the dev machine: 247 bytes below the caller for cudaMalloc untraced,
 * 407 traced without stacks, 8,775 with them), and a thread started with a
 * small stack that called cudaMalloc deep in it died of SIGSEGV under the
 * shim only. Below STACK_ROOM the event is recorded without its stack and
 * counted (drops: stack_low).
 * The bounds, once per thread: a thread's from pthread_getattr_np; the main
 * thread's from __libc_stack_end and RLIMIT_STACK (glibc reads
 * /proc/self/maps for it). Never from a signal handler: pthread_getattr_np
 * allocates, and a handler that interrupted malloc would wait on malloc's lock
 * forever (a review); stacks.c asks first (gt_stack_in_signal_handler: a
 * scan of the thread's stack for the kernel's signal frame, which needs none
 * of libunwind's stack-hungry steps). A call off the
 * thread's stack (a handler on an alternate signal stack, often memory the
 * program allocated) is checked against that stack (sigaltstack, on that
 * path only). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim.h"

#define STACK_ROOM (16 * 1024)   /* twice what a stack capture was measured to take */

extern void *__libc_stack_end;   /* glibc: near the top of the main thread's stack */

/* 0: not looked up yet; 1: no check on this thread (not known); else its stack's lowest address */
static GT_TLS uintptr_t stack_lo, stack_hi;
/* The main thread, noted at load: a fork child's thread has the pid of its
 * process whichever thread forked, and its stack is the forking thread's. */
static pthread_t main_thread;
static bool main_noted;

__attribute__((constructor)) static void note_main_thread(void)
{
    main_thread = pthread_self();
    main_noted = true;
}

/* At the trace's start: glibc's pthread_getattr_np calls realloc through
 * libc's own lazily bound PLT, and the loader's first binding saves the CPU's
 * vector state on the caller's stack (several KiB with AVX-512): a thread with
 * a small stack overflowed inside its first look_up. One call here binds it
 * for every thread (the shim itself is linked -z now). */
void gt_stack_room_warm(void)
{
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0)
        pthread_attr_destroy(&a);
}

/* Looks up the thread's bounds (outside a signal handler: stacks.c). */
static void look_up(void)
{
    stack_lo = 1;
    if (!main_noted)
        return;
    if (pthread_equal(pthread_self(), main_thread)) {
        struct rlimit r;
        uintptr_t top = (uintptr_t)__libc_stack_end;
        if (top && getrlimit(RLIMIT_STACK, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < top) {
            stack_hi = (top + 4095) & ~(uintptr_t)4095;
            stack_lo = stack_hi - (uintptr_t)r.rlim_cur;
        }
        return;
    }
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&a, &addr, &size) == 0 && addr && size) {
        stack_lo = (uintptr_t)addr;
        stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

/* The kernel's return path out of a signal handler: glibc's __restore_rt,
 * which it gives every handler it installs (sa_restorer); read from one of
 * the fatal signals the trace's own handler watches (signals.c), or any
 * signal with a handler. 0: not known (yet). */
static _Atomic uintptr_t restorer;   /* (threads look it up at once: the same value) */

static uintptr_t signal_restorer(void)
{
    uintptr_t r = atomic_load_explicit(&restorer, memory_order_relaxed);
    if (r)
        return r;
    int (*real)(int, const struct sigaction *, struct sigaction *) =
        (int (*)(int, const struct sigaction *, struct sigaction *))gt_libc_real_uninstrumented(GT_LIBC_sigaction);
    for (int sig = 1; real && sig < 32 && !r; sig++) {
        struct sigaction old;
        if (real(sig, NULL, &old) == 0 && old.sa_restorer && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
            r = (uintptr_t)old.sa_restorer;
    }
    atomic_store_explicit(&restorer, r, memory_order_relaxed);
    return r;
}

GT_UNINSTRUMENTED int gt_stack_in_signal_handler(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
        return 1;   /* running on the alternate signal stack: a handler */
    uintptr_t ret = signal_restorer();
    /* the top of the thread's own stack: glibc puts a thread's descriptor (pthread_self()) just above it;
     * the main thread's began below __libc_stack_end */
    uintptr_t top = main_noted && pthread_equal(pthread_self(), main_thread) ? (uintptr_t)__libc_stack_end
                                                                             : (uintptr_t)pthread_self();
    if (!ret || top <= sp || top - sp > ((uintptr_t)64 << 20))
        return -1;
    /* a handler's frame on this stack begins with the return address into the restorer: the kernel's
     * signal frame; one word of it, scanned for from here to the top (a stack of 100 KiB in use: 12,800
     * words, once per thread). Each page is read only once the kernel said it can be (a program running
     * on a stack of its own, a fiber's, is not below its thread's descriptor: the way up may cross memory
     * that is not mapped, or a guard page); the first unreadable one ends the scan. */
    pid_t self = getpid();
    uintptr_t page = 0;
    for (const uintptr_t *w = (const uintptr_t *)(sp & ~(uintptr_t)7); (uintptr_t)w < top; w++) {
        if (((uintptr_t)w & ~(uintptr_t)4095) != page) {
            page = (uintptr_t)w & ~(uintptr_t)4095;
            char b;
            struct iovec here = {&b, 1}, there = {(void *)page, 1};
            if (process_vm_readv(self, &here, 1, &there, 1, 0) != 1)
                return (uintptr_t)w <= (sp | 4095) ? -1 : 0;   /* its own page unreadable: cannot tell */
        }
        if (*w == ret)
            return 1;
    }
    return 0;
}

/* sp lies on the alternate signal stack in use: is it short of room there? */
static bool altstack_low(uintptr_t sp)
{
    stack_t ss;
    if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK) || !ss.ss_sp)
        return false;
    uintptr_t lo = (uintptr_t)ss.ss_sp;
    return sp >= lo && sp < lo + ss.ss_size && sp - lo < STACK_ROOM;
}

bool gt_stack_room_low(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (!stack_lo)
        look_up();
    if (stack_lo == 1)
        return false;
    if (sp >= stack_lo && sp < stack_hi)
        return sp - stack_lo < STACK_ROOM;
    return altstack_low(sp);
}
