/* A training loop whose memory is exactly known, for tests/test_sweep.py:
 *     peak = fixed + per_sample x batch_size
 * fixed is the model (fixed/2), the optimizer's state (fixed/4) and the
 * gradients (fixed/4, made by backward, freed by the next zero_grad); per
 * sample, the input batch and one activation, each per_sample/2. Each step
 * is zero_grad, forward, backward, step, marked with gputrace_iteration.
 * An allocation that fails ends the program like an uncaught
 * torch.OutOfMemoryError (a message, exit 1).
 * usage: sweep_train [--batch-size N] [--steps N] [--fixed B] [--per-sample B]
 *          [--knee N --per-sample-above B] [--async --workspace B]
 *          [--fail-above N] [--crash-above N] [--oom-at N] [--prealloc[-vmm] PERCENT] [--batch-sizes A,B,...]
 *   --batch-size: else GPUTRACE_BATCH_SIZE (as gputrace sweep sets it)
 *   --knee: above this batch size each sample costs --per-sample-above
 *   --async: tensors through cudaMallocAsync (pool memory), beside a
 *            cudaMalloc'ed library workspace of --workspace bytes
 *   --fail-above N: above batch size N, fail as a shape error would (exit 3)
 *   --crash-above N: above batch size N, abort (SIGABRT)
 *   --oom-at N: at batch size N (one size, not those above it) each step's
 *            forward also asks for 1 MiB more than the device has free,
 *            which fails just past its end, as a shape near the boundary
 *            that a pool cannot place (the conv net on an H200 fit at 277
 *            while 266-269 failed, their traces at the device's end)
 *   --prealloc P: take P% of the device in one allocation first (the
 *            driver's cuMemAlloc, reached by dlsym, in a function named as
 *            XLA's allocator) and carve every tensor from it, as JAX does by
 *            default
 *   --prealloc-vmm P: the same through the driver's virtual-memory API
 *            (one cuMemCreate of P%, mapped into a reserved range), reached
 *            by dlopen/dlsym, as JAX 0.11.2 on CUDA 13 preallocates
 *   --batch-sizes A,B,...: --steps steps of each batch size in turn in one
 *            process (iterations numbered on), as a batch-size finder runs
 *   --lazy-module B, --late-module B: the stand-in driver takes B bytes with
 *            no traced call (fake_cuda_charge) in the first step, as lazily
 *            loaded kernel modules do at a kernel's first launch, or at the
 *            start of the last step (an evaluation kernel first used late);
 *            each after a pause, so that the tracer's NVML samples (at the
 *            start, after the first iteration) fall between them
 *   --graph B: in the first step, a CUDA graph is captured holding a
 *            B-byte allocation node (freed inside the graph) and launched
 *            every step: the driver holds B for graphs, with no traced call
 *            (as torch.cuda.graph under backend:cudaMallocAsync)
 *   --graph-per-sample B: the node holds B more per sample, and the graph is
 *            captured again at each batch size (--batch-sizes)
 *   --zero-grad-late: the gradients are released after the forward instead
 *            of before it (optimizer.zero_grad() between forward and
 *            backward, as PyTorch's quickstart loop has it), so the previous
 *            step's gradients are live at the forward's end
 *   --refuse-past-device: a tensor larger than the device fails with XLA's
 *            own out-of-memory error, before any CUDA call (as JAX under its
 *            platform allocator refused 203 GiB on an H200)
 *   --refuse-above N: above batch size N, the first tensor of a step fails with
 *            PyTorch's own out-of-memory error before any CUDA call (as past
 *            torch.cuda.set_per_process_memory_fraction)
 *   --unmarked: no gputrace_iteration (the analyzer finds the steps itself)
 *   --step-ms N: each step lasts at least N ms (a pause at its end)
 *   --start-ms N: a pause of N ms between the model and the first step (a
 *     real job's data loading and set-up)
 *   --try-workspace B: every step first asks for B bytes more, and goes on
 *     without them when that fails (as cuDNN tries a larger workspace first):
 *     an out-of-memory failure the program recovers from
 *   --unsteady-at N --unsteady-file F [--unsteady-fits K]: batch size N fits
 *     the first K times (default 1; F counts the runs) and needs one sample
 *     more every later time, as a pool's fragmentation near the boundary
 *     differs from run to run
 *   --spread B --spread-file F: the first run of each batch size (a file
 *     F.<bs> marks it) holds B bytes more in its input batch through every
 *     step: two runs of one size peak B apart, as a pool's reservation near
 *     the device differs between fresh runs
 *   --grab-leave B --spread-file F: every run of a batch size but its first,
 *     the stand-in's pools reserve all the device has but B bytes at their
 *     first allocation (FAKE_CUDA_POOL_GRAB_LEAVE): the same bytes in use,
 *     a reservation at the device's end, as a fresh cudaMallocAsync run's
 *     pool sometimes takes what the device has
 *   --lib-alloc B: each step's forward ends with a B-byte cudaMalloc, freed
 *            at once, as a library's own allocation outside the pool
 *            (cublasCreate's); when it fails the run ends as cuBLAS's does
 *            (CUBLAS_STATUS_ALLOC_FAILED, exit 1): with --async and
 *            FAKE_CUDA_POOL_GRAB_LEAVE, a pool that kept the device
 *   --workspace-above N:B: above batch size N each step also takes a B-byte
 *     workspace after its forward, freed at once, as a library choosing
 *     another algorithm for a larger batch does: memory jumps by B there
 *   --clamp-above N: batch sizes above N take N's memory (a data set that
 *     caps the batch, a program that uses less than it is given)
 *   --host-oom-above N: above batch size N a step's pinned host buffer
 *     (cudaMallocHost of 2^50 bytes) fails, and the program ends on it as
 *     on an out-of-memory error (exit 1): the host's memory, not the device's
 *   --untraced-above N:B: above batch size N the stand-in driver takes B
 *     bytes at the start that no traced call made (another process, or a
 *     library's memory the trace does not see)
 *   --pool-slack-below N:P: at batch size N or below, the stand-in's pools
 *     hold P% more than their allocations (FAKE_CUDA_POOL_FRAGMENTATION,
 *     set here before the first CUDA call), as a fresh run under
 *     cudaMallocAsync draws a higher slack by chance */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gputrace.h"

static int use_async;
static size_t arena, arena_used;   /* --prealloc */
static size_t refuse_past;         /* --refuse-past-device: the device's total bytes */
static int refuse_all;             /* --refuse-above: this batch size is refused */

static void *tensor(size_t n)
{
    void *p = NULL;
    cudaError_t e;
    if (arena) {
        if (arena_used + n > arena) {
            fprintf(stderr, "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate %zu "
                    "bytes with allocator GPU_0_bfc\n", n);
            exit(1);
        }
        arena_used += n;
        return (void *)(uintptr_t)arena_used;
    }
    if (refuse_past && n > refuse_past) {   /* XLA's words; no CUDA call made */
        fprintf(stderr, "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate %zu "
                "bytes with allocator SE_0_space_0 on device 0.\n", n);
        exit(1);
    }
    if (refuse_all) {   /* PyTorch's words past its memory fraction; no CUDA call made */
        fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %zu bytes. This process is "
                "allowed to use no more of the device (set_per_process_memory_fraction)\n", n);
        exit(1);
    }
    e = use_async ? cudaMallocAsync(&p, n, 0) : cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %zu bytes\n", n);
        exit(1);
    }
    return p;
}

/* The current device's free bytes. */
static size_t free_bytes(void)
{
    size_t free = 0, total = 0;
    return cudaMemGetInfo(&free, &total) == cudaSuccess ? free : (size_t)1 << 40;
}

/* The stand-in driver takes n bytes on device 0 that no traced call made. */
static void untraced_charge(long long n)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*charge)(int, long long) = h ? (int (*)(int, long long))dlsym(h, "fake_cuda_charge") : NULL;
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    if (!charge || charge(0, n) != 0) {
        fprintf(stderr, "sweep_train: the stand-in driver cannot take %lld bytes\n", n);
        exit(1);
    }
}

/* One cuMemCreate of want bytes (rounded up to the granularity) mapped into a
 * reserved range, the driver reached through dlsym as XLA reaches it: the
 * arena's size, or 0 when any step failed. */
static size_t vmm_arena(size_t want)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return 0;
    __typeof__(&cuMemGetAllocationGranularity) gran = (__typeof__(gran))dlsym(h, "cuMemGetAllocationGranularity");
    __typeof__(&cuMemAddressReserve) reserve = (__typeof__(reserve))dlsym(h, "cuMemAddressReserve");
    __typeof__(&cuMemCreate) create = (__typeof__(create))dlsym(h, "cuMemCreate");
    __typeof__(&cuMemMap) map = (__typeof__(map))dlsym(h, "cuMemMap");
    __typeof__(&cuMemSetAccess) access = (__typeof__(access))dlsym(h, "cuMemSetAccess");
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t g = 0;
    CUdeviceptr va;
    CUmemGenericAllocationHandle mem;
    if (!gran || !reserve || !create || !map || !access || gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) || !g)
        return 0;
    want = (want + g - 1) / g * g;
    if (reserve(&va, want, 0, 0, 0) || create(&mem, want, &prop, 0) || map(va, want, 0, mem, 0) ||
        access(va, want, &rw, 1))
        return 0;
    return want;
}

/* The arena of --prealloc (the driver's cuMemAlloc) or --prealloc-vmm, named
 * as XLA's allocator is on a GPU (tsl::BFCAllocator::Extend): the frame by
 * which the analyzer tells a preallocating framework's pool. */
__attribute__((noinline, used)) size_t BFCAllocator_Extend(size_t want, int vmm)
{
    if (vmm)
        return vmm_arena(want);
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    __typeof__(&cuMemAlloc) alloc = h ? (__typeof__(alloc))dlsym(h, "cuMemAlloc_v2") : NULL;
    CUdeviceptr p;
    return alloc && alloc(&p, want) == CUDA_SUCCESS ? want : 0;
}

static void release(void *p, size_t n)
{
    if (arena)
        arena_used -= n;
    else if (use_async)
        cudaFreeAsync(p, 0);
    else
        cudaFree(p);
}

static char *arg_str(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return NULL;
}

static long long arg_ll(int argc, char **argv, const char *name, long long dflt)
{
    const char *v = arg_str(argc, argv, name);
    return v ? atoll(v) : dflt;
}

static int arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *env = getenv("GPUTRACE_BATCH_SIZE");
    long long bs = arg_ll(argc, argv, "--batch-size", env ? atoll(env) : 0);
    long long steps = arg_ll(argc, argv, "--steps", 3);
    size_t fixed = (size_t)arg_ll(argc, argv, "--fixed", 64 << 20);
    size_t per_sample = (size_t)arg_ll(argc, argv, "--per-sample", 3 << 20);
    long long knee = arg_ll(argc, argv, "--knee", 0);
    long long fail_above = arg_ll(argc, argv, "--fail-above", 0), crash_above = arg_ll(argc, argv, "--crash-above", 0);
    long long host_oom_above = arg_ll(argc, argv, "--host-oom-above", 0);
    long long clamp_above = arg_ll(argc, argv, "--clamp-above", 0);
    long long oom_at = arg_ll(argc, argv, "--oom-at", 0);
    long long prealloc = arg_ll(argc, argv, "--prealloc", 0);
    long long prealloc_vmm = arg_ll(argc, argv, "--prealloc-vmm", 0);
    size_t workspace = (size_t)arg_ll(argc, argv, "--workspace", 0);
    size_t try_workspace = (size_t)arg_ll(argc, argv, "--try-workspace", 0);
    size_t lib_alloc = (size_t)arg_ll(argc, argv, "--lib-alloc", 0);
    long long lazy_module = arg_ll(argc, argv, "--lazy-module", 0), late_module = arg_ll(argc, argv, "--late-module", 0);
    size_t graph_bytes = (size_t)arg_ll(argc, argv, "--graph", 0);
    size_t graph_per_sample = (size_t)arg_ll(argc, argv, "--graph-per-sample", 0);
    cudaStream_t graph_stream = NULL;
    cudaGraphExec_t graph = NULL;
    use_async = arg_flag(argc, argv, "--async");
    long long refuse_above = arg_ll(argc, argv, "--refuse-above", 0);
    if (arg_flag(argc, argv, "--refuse-past-device")) {
        size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) == cudaSuccess)
            refuse_past = total;
    }
    int unmarked = arg_flag(argc, argv, "--unmarked");
    int zero_grad_late = arg_flag(argc, argv, "--zero-grad-late");
    long long step_ms = arg_ll(argc, argv, "--step-ms", 0);
    long long start_ms = arg_ll(argc, argv, "--start-ms", 0);
    char *list = arg_str(argc, argv, "--batch-sizes");
    if (list)
        bs = atoll(list);
    if (bs < 1) {
        fprintf(stderr, "sweep_train: no batch size (--batch-size N or GPUTRACE_BATCH_SIZE)\n");
        return 2;
    }
    size_t unsteady_extra = 0;   /* bytes more than batch size bs needs */
    const char *ran_once = arg_str(argc, argv, "--unsteady-file");
    if (ran_once && arg_ll(argc, argv, "--unsteady-at", 0) == bs) {
        long long runs = 0;
        FILE *f = fopen(ran_once, "r");
        if (f) {
            if (fscanf(f, "%lld", &runs) != 1)
                runs = 1;   /* (an empty file, as the first version made: one run) */
            fclose(f);
        }
        if (runs >= arg_ll(argc, argv, "--unsteady-fits", 1))
            unsteady_extra = per_sample;
        if ((f = fopen(ran_once, "w"))) {
            fprintf(f, "%lld\n", runs + 1);
            fclose(f);
        }
    }
    const char *spread_file = arg_str(argc, argv, "--spread-file");
    if (spread_file) {
        char mark[4096];
        snprintf(mark, sizeof mark, "%s.%lld", spread_file, bs);
        FILE *f = fopen(mark, "r");
        const char *grab = arg_str(argc, argv, "--grab-leave");
        if (f) {
            fclose(f);
            if (grab)   /* before the first CUDA call: the stand-in reads it there */
                setenv("FAKE_CUDA_POOL_GRAB_LEAVE", grab, 1);
        } else {
            unsteady_extra += (size_t)arg_ll(argc, argv, "--spread", 0);
            if ((f = fopen(mark, "w")))
                fclose(f);
        }
    }
    if (knee && bs > knee)
        per_sample = (size_t)arg_ll(argc, argv, "--per-sample-above", (long long)per_sample);
    const char *ws_above = arg_str(argc, argv, "--workspace-above");
    size_t ws_above_bytes = ws_above && strchr(ws_above, ':') && bs > atoll(ws_above)
                                ? (size_t)atoll(strchr(ws_above, ':') + 1) : 0;
    const char *slack_below = arg_str(argc, argv, "--pool-slack-below");
    const char *share = slack_below ? strchr(slack_below, ':') : NULL;
    if (share && bs <= atoll(slack_below))   /* before the first CUDA call: the stand-in reads it there */
        setenv("FAKE_CUDA_POOL_FRAGMENTATION", share + 1, 1);
    printf("batch size %lld, %lld steps\n", bs, steps);

    void *ws = NULL;
    if (workspace && cudaMalloc(&ws, workspace) != cudaSuccess)
        return 1;
    if (prealloc || prealloc_vmm) {
        struct cudaDeviceProp prop;
        cudaGetDeviceProperties(&prop, 0);   /* (the runtime makes the context the driver calls need) */
        if (!(arena = BFCAllocator_Extend(prop.totalGlobalMem / 100 * (size_t)(prealloc ? prealloc : prealloc_vmm),
                                          prealloc_vmm != 0)))
            return 1;
    }
    void *model = tensor(fixed / 2);
    const char *untraced_above = arg_str(argc, argv, "--untraced-above");
    if (untraced_above && strchr(untraced_above, ':') && bs > atoll(untraced_above))
        untraced_charge(atoll(strchr(untraced_above, ':') + 1));
    if (lazy_module || start_ms) {   /* quiet while the tracer takes its first NVML sample */
        long long ms = start_ms > 200 ? start_ms : 200;
        struct timespec pause = {ms / 1000, ms % 1000 * 1000000};
        nanosleep(&pause, NULL);
    }
    void *optimizer = tensor(fixed / 4), *grads = NULL;
    long long index = 0;
    do {
        if (list) {
            char *end;
            bs = strtoll(list, &end, 10);
            list = *end == ',' ? end + 1 : NULL;
        }
        size_t half = (size_t)(clamp_above && bs > clamp_above ? clamp_above : bs) * (per_sample / 2);
        refuse_all = refuse_above && bs > refuse_above;   /* (the model is on the device by now) */
        for (long long step = 0; step < steps; step++, index++) {
            if (!unmarked)
                gputrace_iteration(index, bs);
            if (grads && !zero_grad_late)
                release(grads, fixed / 4);   /* zero_grad(set_to_none=True) */
            void *x = tensor(half + unsteady_extra);   /* the input batch */
            void *act = tensor(half);        /* forward */
            if (grads && zero_grad_late)
                release(grads, fixed / 4);
            if (ws_above_bytes)
                release(tensor(ws_above_bytes), ws_above_bytes);
            void *big;
            if (lib_alloc && cudaMalloc(&big, lib_alloc) != cudaSuccess) {
                fprintf(stderr, "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n");
                return 1;
            } else if (lib_alloc) {
                cudaFree(big);
            }
            if (try_workspace && cudaMalloc(&big, try_workspace) == cudaSuccess)
                cudaFree(big);
            else if (try_workspace)
                (void)cudaGetLastError();    /* recovered: the step runs without it */
            if (lazy_module && index == 0)
                untraced_charge(lazy_module);   /* the first kernel launch loads its module */
            if (late_module && index == steps - 1 && !list)
                untraced_charge(late_module);
            if (graph_bytes && (!graph || (graph_per_sample && step == 0))) {   /* captured once, then replayed */
                cudaGraph_t g;
                void *node;
                if ((!graph_stream && cudaStreamCreate(&graph_stream) != cudaSuccess) ||
                    cudaStreamBeginCapture(graph_stream, cudaStreamCaptureModeGlobal) != cudaSuccess ||
                    cudaMallocAsync(&node, graph_bytes + (size_t)bs * graph_per_sample, graph_stream) != cudaSuccess ||
                    cudaFreeAsync(node, graph_stream) != cudaSuccess ||
                    cudaStreamEndCapture(graph_stream, &g) != cudaSuccess || cudaGraphInstantiate(&graph, g, 0) != cudaSuccess)
                    return 4;
            }
            if (graph && (cudaGraphLaunch(graph, graph_stream) != cudaSuccess ||
                          cudaStreamSynchronize(graph_stream) != cudaSuccess))
                return 4;
            if (fail_above && bs > fail_above) {
                fprintf(stderr, "Traceback (most recent call last):\nValueError: shapes (%lld, 3) and (4, 5) not aligned\n", bs);
                return 3;
            }
            if (crash_above && bs > crash_above)
                abort();
            if (host_oom_above && bs > host_oom_above) {
                void *pinned;
                if (cudaMallocHost(&pinned, (size_t)1 << 50) != cudaSuccess) {
                    fprintf(stderr, "RuntimeError: out of pinned host memory\n");
                    return 1;
                }
            }
            if (oom_at && bs == oom_at)
                release(tensor(free_bytes() + ((size_t)1 << 20)), 0);   /* (exits: the device cannot hold it) */
            grads = tensor(fixed / 4);       /* backward */
            release(act, half);
            release(x, half + unsteady_extra);
            if (step_ms) {
                struct timespec pause = {step_ms / 1000, step_ms % 1000 * 1000000};
                nanosleep(&pause, NULL);
            }
        }
    } while (list);
    release(grads, fixed / 4);
    release(optimizer, fixed / 4);
    release(model, fixed / 2);
    if (ws)
        cudaFree(ws);
    printf("done\n");
    return 0;
}
