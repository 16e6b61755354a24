/* Signal dispositions as a program sees them while a trace runs, for
 * tests/test_signals.py. A CUDA call first (the trace starts, and with it the
 * shim's fatal-signal handlers), then:
 *   vfork:  the program's SIGTERM handler; a vfork child resets SIGTERM to
 *           SIG_DFL before exec (as CPython's subprocess does for every
 *           handler); the parent then asks sigaction what SIGTERM's handler
 *           is, and raises SIGTERM (its handler prints and exits 3)
 *   sigerr: signal(SIGTERM, SIG_ERR) must fail with EINVAL, as glibc's does;
 *           then SIGTERM, still at its default, kills
 * usage: signal_views vfork|sigerr */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig)
{
    (void)sig;
    static const char msg[] = "handled\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(4);
    _exit(3);
}

int main(int argc, char **argv)
{
    void *p;
    if (argc < 2 || cudaMalloc(&p, 1 << 20) != cudaSuccess)
        return 2;
    cudaFree(p);
    if (!strcmp(argv[1], "vfork")) {
        struct sigaction h;
        memset(&h, 0, sizeof h);
        h.sa_handler = on_term;
        sigemptyset(&h.sa_mask);
        sigaction(SIGTERM, &h, NULL);
        pid_t child = vfork();
        if (child == 0) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigaction(SIGTERM, &dfl, NULL);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(child, NULL, 0);
        struct sigaction now;
        sigaction(SIGTERM, NULL, &now);
        printf("SIGTERM's handler: %s\n", now.sa_handler == on_term ? "the program's"
                                          : now.sa_handler == SIG_DFL ? "the default" : "another");
        fflush(stdout);
        raise(SIGTERM);
        return 0;
    }
    if (!strcmp(argv[1], "sigerr")) {
        errno = 0;
        __sighandler_t r = signal(SIGTERM, SIG_ERR);
        printf("signal(SIGTERM, SIG_ERR): %s, errno %s\n", r == SIG_ERR ? "SIG_ERR" : "accepted",
               errno == EINVAL ? "EINVAL" : "other");
        fflush(stdout);
        raise(SIGTERM);
        return 0;
    }
    return 2;
}
