/* A stand-in for a cudart 12.0-12.4 (PyTorch cu121/cu124 wheels): it has
 * cudaGetDriverEntryPoint but not cudaGetDriverEntryPointByVersion, so the
 * shim's search for the latter misses every time it looks. */
#include <stddef.h>

int cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags, int *status)
{
    (void)symbol, (void)flags, (void)status;
    *fn = NULL;
    return 0;
}

/* lookup_race.c loads and unloads this library (named libleaf.so) in a loop:
 * a new object each time, so each dlopen takes the loader's locks. */
int leaf_function(void);
int leaf_function(void) { return 42; }
