/* Driver entry-point lookups on one thread while another dlopens and
 * dlcloses a library, with a runtime loaded that lacks a function the shim
 * hooks (libcudart.so.12 from old_cudart.c). The shim's search for the
 * missing function once ran dlopen inside dl_iterate_phdr, which deadlocks
 * against a concurrent dlopen. Also checks that a successful lookup leaves no
 * dlerror() message. The lookups ask for cuInit, which the shim does not
 * hook, so each one compares the answer with every hooked function.
 * Exits 3 if either thread stops making progress.
 * usage: lookup_race OLD_CUDART LIBRARY_TO_LOAD SECONDS */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static proc_fn get_proc;
static const char *library;
static atomic_long lookups, loads;
static atomic_int stop;

static void *lookup_loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        void *fn;
        CUdriverProcAddressQueryResult st;
        get_proc("cuInit", &fn, 12000, 0, &st);
        atomic_fetch_add(&lookups, 1);
    }
    return NULL;
}

static void *load_loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
        if (h)
            dlclose(h);
        atomic_fetch_add(&loads, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    library = argv[2];
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) || !dlopen(library, RTLD_NOW | RTLD_LOCAL)) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    get_proc = cuda ? (proc_fn)dlsym(cuda, "cuGetProcAddress_v2") : NULL;
    if (!get_proc || cuInit(0) != CUDA_SUCCESS)
        return 2;
    (void)dlerror();
    void *fn;
    CUdriverProcAddressQueryResult st;
    CUresult r = get_proc("cuInit", &fn, 12000, 0, &st);
    const char *err = dlerror();
    printf("lookup %d, dlerror after it: %s\n", (int)r, err ? err : "none");
    fflush(stdout);
    pthread_t a, b;
    pthread_create(&a, NULL, lookup_loop, NULL);
    pthread_create(&b, NULL, load_loop, NULL);
    /* A deadlock never moves again; a thread the scheduler left out for a
     * quarter second (ThreadSanitizer on two cores, with the loader's lock
     * taken in turns) moves on: a thread stuck for a whole second fails. */
    long last_lookups = -1, last_loads = -1;
    int still_lookups = 0, still_loads = 0;
    for (int s = atoi(argv[3]) * 4; s > 0; s--) {
        struct timespec quarter = {0, 250000000};
        nanosleep(&quarter, NULL);
        long l = atomic_load(&lookups), d = atomic_load(&loads);
        still_lookups = l == last_lookups ? still_lookups + 1 : 0;
        still_loads = d == last_loads ? still_loads + 1 : 0;
        if (still_lookups >= 4 || still_loads >= 4) {
            printf("no progress for a second: %ld lookups, %ld loads\n", l, d);
            fflush(stdout);
            _exit(3);
        }
        last_lookups = l, last_loads = d;
    }
    atomic_store(&stop, 1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("progress on both threads\n");
    return 0;
}
