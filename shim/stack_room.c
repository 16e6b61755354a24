/* stack_room.c - the calling thread's own stack, on the hot path: is there room below the
 * caller to take its call stack? Unwinding and reading Python's frames use
 * about 8.4 KiB of the program's stack a call (measured on the dev machine:
 * 247 bytes below the caller for cudaMalloc untraced, 407 traced without
 * stacks, 8,775 with them), and a thread started with a small stack
 * (PTHREAD_STACK_MIN, 16 KiB) that called cudaMalloc 4 KiB deep died of
 * SIGSEGV under the shim only. Below STACK_ROOM the event is recorded
 * without its stack and counted (drops: stack_low).
 * The bounds come from pthread_getattr_np once per thread; the main thread
 * is left out (glibc reads /proc/self/maps for it, and its stack grows on
 * demand to the rlimit), as is a thread glibc does not know or a call on an
 * alternate signal stack (sp outside the thread's stack). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#define STACK_ROOM (16 * 1024)   /* twice what a stack capture was measured to take */

/* 0: not looked up yet; 1: no check on this thread; else its stack's lowest address */
static GT_TLS uintptr_t stack_lo, stack_hi;

static void look_up(void)
{
    stack_lo = 1;
    if (syscall(SYS_gettid) == getpid())
        return;
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

bool gt_stack_room_low(void)
{
    if (!stack_lo)
        look_up();
    if (stack_lo == 1)
        return false;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return sp >= stack_lo && sp < stack_hi && sp - stack_lo < STACK_ROOM;
}
