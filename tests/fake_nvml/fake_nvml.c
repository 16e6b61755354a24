/* fake_nvml.c: deterministic stand-in for libnvidia-ml.so.1 (test double).
 * Reports the fake driver's devices as NVML does: total = FAKE_CUDA_DEVICE_BYTES,
 * used = what the fake driver holds (the context and other processes' bytes
 * it plants included), this process's bytes = used minus FAKE_CUDA_OTHER_BYTES.
 * FAKE_CUDA_OTHER_BYTES is listed as one other process's, less
 * FAKE_NVML_UNLISTED_BYTES (memory in use that no listed process holds, as
 * the driver's bookkeeping is). FAKE_NVML_RESERVED_BYTES: what the driver and
 * firmware set aside, counted in
 * v1's used and told apart by nvmlDeviceGetMemoryInfo_v2 (as real drivers do
 * since R510); FAKE_NVML_NO_V2=1 leaves v2 out, as an older driver does.
 * In a directory of its own: only the tests that put it on LD_LIBRARY_PATH
 * get NVML samples in their traces. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, INVALID_ARGUMENT = 2, NOT_FOUND = 6, INSUFFICIENT_SIZE = 7, UNKNOWN = 999 };

static unsigned long long (*device_used)(int);
static unsigned long long (*other_bytes)(void);

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    /* the fake driver the program already loaded (found the same way) */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return UNKNOWN;
    device_used = (unsigned long long (*)(int))dlsym(h, "fake_cuda_device_used");
    other_bytes = (unsigned long long (*)(void))dlsym(h, "fake_cuda_other_bytes");
    return device_used && other_bytes ? OK : UNKNOWN;
}

EXPORT nvmlReturn_t nvmlShutdown(void) { return OK; }

EXPORT const char *nvmlErrorString(nvmlReturn_t r) { return r == OK ? "Success" : "fake NVML error"; }

/* The fake runtime's UUID of device d ends in the byte d: "GPU-...-0000000000dd". */
EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    size_t n = uuid ? strlen(uuid) : 0;
    if (n < 4 || !dev)
        return INVALID_ARGUMENT;
    *dev = (nvmlDevice_t)(uintptr_t)(strtoul(uuid + n - 2, NULL, 16) + 1);
    return OK;
}

static unsigned long long total_bytes(void)
{
    const char *s = getenv("FAKE_CUDA_DEVICE_BYTES");
    return s && *s ? strtoull(s, NULL, 10) : 17179869184ULL;
}

static unsigned long long reserved_bytes(void)
{
    const char *s = getenv("FAKE_NVML_RESERVED_BYTES");
    return s && *s ? strtoull(s, NULL, 10) : 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
    if (!dev || !m || !device_used)
        return INVALID_ARGUMENT;
    m->total = total_bytes();
    m->used = device_used((int)((uintptr_t)dev - 1)) + reserved_bytes();
    m->free = m->total - m->used;
    return OK;
}

/* NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, 2 in the top byte */
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m)
{
    const char *no = getenv("FAKE_NVML_NO_V2");
    if (no && *no == '1')
        return 13;   /* NVML_ERROR_FUNCTION_NOT_FOUND */
    if (!dev || !m || !device_used || m->version != (unsigned int)(sizeof *m | 2u << 24))
        return INVALID_ARGUMENT;
    m->total = total_bytes();
    m->reserved = reserved_bytes();
    m->used = device_used((int)((uintptr_t)dev - 1));
    m->free = m->total - m->used - m->reserved;
    return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *p)
{
    if (!dev || !count || !device_used)
        return INVALID_ARGUMENT;
    const char *s = getenv("FAKE_NVML_UNLISTED_BYTES");
    unsigned long long unlisted = s && *s ? strtoull(s, NULL, 10) : 0;
    unsigned int n = other_bytes() > unlisted ? 2 : 1;
    if (*count < n) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    memset(p, 0, n * sizeof *p);
    p[0].pid = (unsigned int)getpid();
    p[0].usedGpuMemory = device_used((int)((uintptr_t)dev - 1)) - other_bytes();
    if (n == 2) {
        p[1].pid = (unsigned int)getpid() + 1;
        p[1].usedGpuMemory = other_bytes() - unlisted;
    }
    *count = n;
    return OK;
}
