/* Used device memory as nvidia-smi shows it, sampled through NVML (loaded at
 * run time, never linked) every GPUTRACE_SAMPLE_MS by the writer thread. CUDA
 * ordinals are matched to NVML devices by UUID, so CUDA_VISIBLE_DEVICES and
 * ordering differences do not matter. Without NVML: one note, no samples. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"

/* The few NVML types used, as in nvml.h (stable ABI). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
/* v2 (drivers from R510) says what the driver and firmware set aside: v1's
 * used counts it, so an idle GPU shows ~600 MiB used by no process */
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
#define NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | 2u << 24))
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_PROCS 256

static struct {
    void *h;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    const char *(*error)(nvmlReturn_t);
    int n;
    int ordinal[GT_MAX_DEVICES];
    nvmlDevice_t dev[GT_MAX_DEVICES];
} N;

/* Loads NVML and finds each CUDA device in it; false (with a note) if not. */
bool gt_nvml_open(const struct gt_devices *devs, bool asked)
{
    const char *why = NULL;
    N.h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!N.h) {
        gt_note("nvml", asked, "unavailable: libnvidia-ml.so.1 cannot be loaded (%s); %s", dlerror(),
                asked ? "GPUTRACE_SAMPLE_MS is ignored" : "no ledger samples");
        return false;
    }
    N.init = (nvmlReturn_t(*)(void))dlsym(N.h, "nvmlInit_v2");
    N.by_uuid = (nvmlReturn_t(*)(const char *, nvmlDevice_t *))dlsym(N.h, "nvmlDeviceGetHandleByUUID");
    N.memory = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(N.h, "nvmlDeviceGetMemoryInfo");
    N.memory_v2 = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(N.h, "nvmlDeviceGetMemoryInfo_v2");
    N.procs = (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))dlsym(
        N.h, "nvmlDeviceGetComputeRunningProcesses_v3");
    N.error = (const char *(*)(nvmlReturn_t))dlsym(N.h, "nvmlErrorString");
    nvmlReturn_t r;
    if (!N.init || !N.by_uuid || !N.memory)
        why = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByUUID or nvmlDeviceGetMemoryInfo";
    else if ((r = N.init()) != NVML_SUCCESS)
        why = N.error ? N.error(r) : "nvmlInit_v2 failed";
    for (int i = 0; !why && devs && i < devs->count; i++)
        if (devs->dev[i].has_uuid && N.by_uuid(devs->dev[i].uuid, &N.dev[N.n]) == NVML_SUCCESS)
            N.ordinal[N.n++] = i;
    if (!why && !N.n)
        why = "no CUDA device of this process was found in NVML";
    if (why) {
        gt_note("nvml", asked, "unavailable: %s; %s", why, asked ? "GPUTRACE_SAMPLE_MS is ignored" : "no ledger samples");
        return false;
    }
    if (asked)
        gt_note("nvml", false, "on: used memory of %d device(s) every %u ms", N.n, gt_config.sample_ms);
    else
        gt_note("nvml", false, "on: used memory of %d device(s) after the first allocation, every 50 ms for 16 s, "
                "then at 32, 64, 128 ... s, and at the end (the ledger)", N.n);
    return true;
}

/* This process's bytes on one device and the other listed processes' (*others),
 * each -1 where NVML cannot tell (another PID namespace: this process is not
 * in the list, so which are others is not known either; a driver without the
 * _v3 query; a list longer than MAX_PROCS leaves others unknown). */
static int64_t process_bytes(nvmlDevice_t dev, uint64_t total, int64_t *others)
{
    *others = -1;
    if (!N.procs)
        return -1;
    nvmlProcessInfo_t proc[MAX_PROCS]; /* on the caller's stack: the writer and an atexit sample may overlap */
    unsigned int n = MAX_PROCS;
    if (N.procs(dev, &n, proc) != NVML_SUCCESS)
        return -1;
    unsigned int pid = (unsigned int)getpid();
    int64_t mine = -1;
    uint64_t rest = 0;
    bool known = true;
    for (unsigned int i = 0; i < n && i < MAX_PROCS; i++) {
        if (proc[i].usedGpuMemory > total)   /* NVML_VALUE_NOT_AVAILABLE (all ones) */
            known = known && proc[i].pid == pid;
        else if (proc[i].pid == pid)
            mine = (int64_t)proc[i].usedGpuMemory;
        else
            rest += proc[i].usedGpuMemory;
    }
    if (mine >= 0 && known && rest <= total)
        *others = (int64_t)rest;
    return mine;
}

int gt_nvml_sample(struct gt_mem_sample *out, int max)
{
    int k = 0;
    for (int i = 0; i < N.n && k < max; i++) {
        nvmlMemory_v2_t m2 = {.version = NVML_MEMORY_V2};
        nvmlMemory_t m;
        int64_t reserved = -1;
        if (N.memory_v2 && N.memory_v2(N.dev[i], &m2) == NVML_SUCCESS && m2.free <= m2.total &&
            m2.reserved <= m2.total - m2.free) {
            /* used as v1 and nvidia-smi count it (everything not free), and the reservation beside it */
            m = (nvmlMemory_t){m2.total, m2.free, m2.total - m2.free};
            reserved = (int64_t)m2.reserved;
        } else if (N.memory(N.dev[i], &m) != NVML_SUCCESS) {
            continue;
        }
        int64_t others;
        int64_t mine = process_bytes(N.dev[i], m.total, &others);
        out[k] = (struct gt_mem_sample){gt_now_ns(), N.ordinal[i], m.used, m.total, mine, -1, reserved, others};
        k++;
    }
    return k;
}

/* Fork child: the parent's NVML session is not ours to use. */
void gt_nvml_after_fork_child(void)
{
    N.n = 0;
}
