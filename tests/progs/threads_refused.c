/* Preloaded before the shim (test_signals.py): pthread_create fails with
 * EAGAIN, as at a thread limit (RLIMIT_NPROC), from THREADS_REFUSED_FROM_MS
 * to THREADS_REFUSED_UNTIL_MS after this library loaded; the process's
 * threads, the shim's included, are refused for that while and no other. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double loaded_s, from_s, until_s;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((constructor)) static void init(void)
{
    loaded_s = now_s();
    const char *f = getenv("THREADS_REFUSED_FROM_MS"), *u = getenv("THREADS_REFUSED_UNTIL_MS");
    from_s = f ? atof(f) / 1000 : 0;
    until_s = u ? atof(u) / 1000 : 0;
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT,
                                                                                               "pthread_create");
    double at = now_s() - loaded_s;
    if (at >= from_s && at < until_s)
        return EAGAIN;
    return real(t, a, fn, arg);
}
