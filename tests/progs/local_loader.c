/* dlopen(argv[1], RTLD_NOW | RTLD_LOCAL), as Python loads an extension, and
 * calls its ext_work(); exits with its result. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 2;
    }
    int (*work)(void) = (int (*)(void))dlsym(h, "ext_work");
    return work ? work() != 0 : 3;
}
