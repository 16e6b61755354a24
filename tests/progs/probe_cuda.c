/* "Is CUDA loaded?" the way programs ask it: dlsym(RTLD_DEFAULT, name) for a
 * few CUDA functions, before and after loading libcuda.so.1 globally. The
 * shim exports those names itself; the answers must be the ones the program
 * gets without it. Links no CUDA library. */
#include <dlfcn.h>
#include <stdio.h>

static void probe(const char *when)
{
    static const char *const names[] = {"cuGetProcAddress", "cuMemAlloc_v2", "cudaMalloc", "cuInit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        (void)dlerror();
        void *p = dlsym(RTLD_DEFAULT, names[i]);
        const char *err = dlerror();
        printf("%s %s: %s%s\n", when, names[i], p ? "found" : "not found", !p && err ? " (dlerror set)" : "");
    }
}

int main(void)
{
    probe("before");
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    probe("after");
    return 0;
}
