/* Allocates N buffers (each followed by its free: 2N events), then ends by
 * the way argv[1] names: term | int | quit | hup (kill() of itself), abort,
 * segv (a store to address 0), fpe (an integer division by zero), bus (a
 * read past the end of a mapped file), pipe (a write to a pipe with no
 * reader), ill (__builtin_trap), alrm | usr1 (kill() of itself), segv-oneshot
 * (a SA_RESETHAND handler that reports and returns, then the fault again), run (no signal: return 0, after a
 * kill(SIGTERM) of itself, for a SIGTERM that is ignored) or forever
 * (allocates until killed, printing the count every 1024 allocations for
 * tests/test_signals.py's SIGKILL test; forever-paced: a pair every 200 us,
 * the count every 32), or worker-term (a second thread
 * allocates and frees, counting its completed calls in the file argv[2]
 * (8 bytes), until the main thread sends it SIGTERM after argv[3] us: the
 * signal lands anywhere in a hook), or term-in-cupti (SIGTERM raised while
 * this thread holds the CUPTI stand-in's lock, through its
 * fake_cupti_while_locked, found at GPUTRACE_CUPTI_PATH once the shim loaded
 * it; untraced, raised as is). Options in argv[3...]:
 *   handler-before / handler-after: a SIGTERM handler of the program's own,
 *     installed before the first CUDA call or after it, that writes
 *     "handled\n" and _exit(3)s;
 *   signal-after: the same handler installed with signal() after it.
 * It prints the dispositions sigaction() reports for the fatal signals after
 * the first CUDA call, so a test can see the shim does not show through. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void handled(int sig)
{
    (void)sig;
    static const char line[] = "handled\n";
    if (write(STDOUT_FILENO, line, sizeof line - 1) < 0)
        _exit(4);
    _exit(3);
}

static void own_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handled;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

static const char *disposition(int sig)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return "error";
    if (sa.sa_flags & SA_SIGINFO)
        return "siginfo-handler";
    return sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignored" : "handler";
}

static void raise_term(void)
{
    raise(SIGTERM);
}

static void raise_term_locked(void)
{
    printf("under the lock\n");
    fflush(stdout);
    raise(SIGTERM);
}

static volatile int zero = 0;
static volatile uint64_t *calls;

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        void *p;
        if (cudaMalloc(&p, 4096) != cudaSuccess)
            _exit(1);
        (*calls)++;
        if (cudaFree(p) != cudaSuccess)
            _exit(1);
        (*calls)++;
    }
    return NULL;
}

/* worker-term: see the header. */
static int worker_term(const char *count_path, long delay_us)
{
    int fd = open(count_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 8) != 0)
        return 2;
    calls = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (calls == MAP_FAILED)
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (*calls < 1000) /* the trace runs */
        usleep(100);
    usleep((useconds_t)delay_us);
    pthread_kill(t, SIGTERM);
    for (;;)
        pause();
}

static void reported(int sig)
{
    (void)sig;
    static const char line[] = "reported\n";
    (void)!write(1, line, sizeof line - 1);
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "run";
    if (!strcmp(how, "worker-term") && argc > 3)
        return worker_term(argv[2], atol(argv[3]));
    long n = argc > 2 ? atol(argv[2]) : 1000;
    int options = 0;
    for (int i = 3; i < argc; i++)
        options |= !strcmp(argv[i], "handler-before") ? 1 : !strcmp(argv[i], "handler-after") ? 2
                 : !strcmp(argv[i], "signal-after") ? 4 : 0;
    if (options & 1)
        own_handler();
    bool paced = !strcmp(how, "forever-paced"); /* a pair every 200 us, as a training loop allocates */
    bool forever = paced || !strcmp(how, "forever");
    for (long i = 0; forever || i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return 1;
        if (i == 0) {
            if (options & 2)
                own_handler();
            if (options & 4)
                signal(SIGTERM, handled);
            int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS, SIGFPE};
            printf("dispositions:");
            for (int s = 0; s < 8; s++)
                printf(" %d=%s", sigs[s], disposition(sigs[s]));
            printf("\n");
            fflush(stdout);
        }
        if (forever && (i & (paced ? 31 : 1023)) == 0) {
            printf("%ld\n", i);
            fflush(stdout);
        }
        if (paced)
            usleep(200);
    }
    printf("allocated %ld\n", n);
    fflush(stdout);
    if (!strcmp(how, "term") || !strcmp(how, "run"))
        kill(getpid(), SIGTERM);
    else if (!strcmp(how, "term-in-cupti")) {
        const char *path = getenv("GPUTRACE_CUPTI_PATH");
        void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
        void (*locked)(void (*)(void)) = h ? (void (*)(void (*)(void)))dlsym(h, "fake_cupti_while_locked") : NULL;
        if (locked)
            locked(raise_term_locked);
        else
            raise_term();
    }
    else if (!strcmp(how, "int"))
        kill(getpid(), SIGINT);
    else if (!strcmp(how, "quit"))
        kill(getpid(), SIGQUIT);
    else if (!strcmp(how, "hup"))
        kill(getpid(), SIGHUP);
    else if (!strcmp(how, "abort"))
        abort();
    else if (!strcmp(how, "segv"))
        *(volatile int *)(uintptr_t)zero = 1;
    else if (!strcmp(how, "fpe")) {
        volatile int one = 1;
        int q = one / zero; /* a divide error: the kernel's SIGFPE */
        printf("%d\n", q);
    }
    else if (!strcmp(how, "pipe")) {   /* a write to a pipe nobody reads: a program piped into head */
        int fds[2];
        if (pipe(fds) == 0) {
            close(fds[0]);
            (void)!write(fds[1], "x", 1);
        }
    }
    else if (!strcmp(how, "ill"))
        __builtin_trap();
    else if (!strcmp(how, "alrm"))
        kill(getpid(), SIGALRM);
    else if (!strcmp(how, "usr1"))
        kill(getpid(), SIGUSR1);
    else if (!strcmp(how, "segv-oneshot")) {
        /* a crash reporter's handler, installed one-shot (SA_RESETHAND) after
         * the trace started: it reports and returns, and the fault repeats
         * with the default action */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = reported;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGSEGV, &sa, NULL);
        *(volatile int *)(uintptr_t)zero = 1;
    }
    else if (!strcmp(how, "term-oneshot")) {
        /* a one-shot SIGTERM handler: after it ran, sigaction says the default */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = reported;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGTERM, &sa, NULL);
        kill(getpid(), SIGTERM);
        printf("after the handler: %s\n", disposition(SIGTERM));
        fflush(stdout);
        kill(getpid(), SIGTERM);
    }
    else if (!strcmp(how, "bus")) {
        char path[] = "/tmp/fatal_signal_busXXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        volatile char *m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
        printf("%d\n", m[4096]); /* the file is empty: SIGBUS */
    }
    return 0;
}
