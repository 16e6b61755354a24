/* dlopen(each argument, RTLD_NOW | RTLD_LOCAL), as Python loads extensions,
 * and calls each one's ext_work() in turn; exits with the first failure. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    for (int i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("dlopen: %s\n", dlerror());
            return 2;
        }
        int (*work)(void) = (int (*)(void))dlsym(h, "ext_work");
        if (!work)
            return 3;
        if (work() != 0)
            return 1;
    }
    return 0;
}
