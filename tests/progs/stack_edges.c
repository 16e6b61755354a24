/* Where taking a call stack could hurt the program (a review of the stack
 * guard, session 48), three modes; each prints "done" (fork: the child's end):
 *   handler N      N times: a thread busy in malloc/free gets SIGUSR1, whose
 *                  handler makes the thread's first cudaMalloc (libunwind's
 *                  first use on a thread allocates its storage: a handler that
 *                  interrupted malloc waited on malloc's lock forever)
 *   altstack SIZE  a SIGUSR1 handler on a SIZE-byte alternate stack (memory
 *                  from malloc) calls cudaMalloc, on a thread that took stacks
 *                  before (taking one overflowed the alternate stack)
 *   fork STACK USE a thread of STACK bytes that never called CUDA forks; the
 *                  child calls cudaMalloc USE deep (its thread has the pid of
 *                  the process, and read as the main thread, unchecked)
 *   fiber N        N threads each run a fiber (ucontext) on a stack from
 *                  malloc that calls cudaMalloc: the thread's first stack,
 *                  off the thread's own (the handler scan must not read its
 *                  way up through unmapped memory) */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static size_t size;

static void allocate_in_handler(int s)
{
    (void)s;
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
    got = 1;
}

static void *busy_in_malloc(void *a)
{
    (void)a;
    void *v[8];
    int d;
    cudaGetDevice(&d);   /* the runtime's per-thread state made here, not in the handler (as a real thread's) */
    cudaSetDevice(d);
    while (!got) {
        for (int i = 0; i < 8; i++)
            v[i] = malloc(4000 + i * 512);
        for (int i = 0; i < 8; i++)
            free(v[i]);
    }
    return NULL;
}

static void *on_alternate_stack(void *a)
{
    (void)a;
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)   /* a stack taken here first */
        cudaFree(p);
    stack_t ss = {.ss_sp = malloc(size), .ss_size = size};
    struct sigaction sa = {.sa_handler = allocate_in_handler, .sa_flags = SA_ONSTACK};
    if (!ss.ss_sp || sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
        exit(3);
    for (int i = 0; i < 3; i++)
        raise(SIGUSR1);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    free(ss.ss_sp);
    return NULL;
}

__attribute__((noinline)) static void allocate_deep(size_t n)
{
    volatile char pad[n];
    memset((char *)pad, 1, n);
    for (int i = 0; i < 10; i++) {
        void *p;
        if (cudaMalloc(&p, 1 << 20) == cudaSuccess)
            cudaFree(p);
    }
    __asm__ volatile("" ::"r"(pad) : "memory");
}

static void *fork_from_here(void *a)
{
    pid_t c = fork();
    if (c == 0) {
        allocate_deep((size_t)a);
        puts("done");
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    return NULL;
}

static ucontext_t thread_uc, fiber_uc;

static void in_fiber(void)
{
    for (int i = 0; i < 5; i++) {
        void *p;
        if (cudaMalloc(&p, 1 << 20) == cudaSuccess)
            cudaFree(p);
    }
}

static void *run_fiber(void *a)
{
    (void)a;
    size_t sz = 256 * 1024;
    char *st = malloc(sz);
    if (!st || getcontext(&fiber_uc))
        exit(3);
    fiber_uc.uc_stack.ss_sp = st;
    fiber_uc.uc_stack.ss_size = sz;
    fiber_uc.uc_link = &thread_uc;
    makecontext(&fiber_uc, in_fiber, 0);
    swapcontext(&thread_uc, &fiber_uc);
    free(st);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    void *p;
    if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 1;
    pthread_t t;
    if (!strcmp(argv[1], "handler")) {
        signal(SIGUSR1, allocate_in_handler);
        for (int k = atoi(argv[2]); k > 0; k--) {
            got = 0;
            pthread_create(&t, NULL, busy_in_malloc, NULL);
            usleep(200 + rand() % 300);
            pthread_kill(t, SIGUSR1);
            pthread_join(t, NULL);
        }
    } else if (!strcmp(argv[1], "altstack")) {
        size = strtoul(argv[2], NULL, 0);
        pthread_create(&t, NULL, on_alternate_stack, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(argv[1], "fork") && argc == 4) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, strtoul(argv[2], NULL, 0));
        pthread_create(&t, &a, fork_from_here, (void *)strtoul(argv[3], NULL, 0));
        pthread_join(t, NULL);
        return 0;
    } else if (!strcmp(argv[1], "fiber")) {
        for (int k = atoi(argv[2]); k > 0; k--) {   /* one at a time: the contexts are shared */
            pthread_create(&t, NULL, run_fiber, NULL);
            pthread_join(t, NULL);
        }
    } else {
        return 2;
    }
    puts("done");
    return 0;
}
