/* The device an allocation went to, asked of CUDA after the program's own
 * call (record.c, inside the recording, so the cost note times it): the
 * current context's device. After a successful runtime allocation the
 * context the runtime used is current on this thread, so the driver's
 * cuCtxGetDevice answers as cudaGetDevice does, for less: 18 against 44 ns
 * a call on an H200 host (tests/gpu/check_device_lookup.py: both agree after
 * cudaMalloc and cudaMallocAsync on each device, with a context the driver
 * made current, and with none current before the call). A failed runtime
 * call may have made no context current: cudaGetDevice answers it.
 * Called, not interposed: each row's pointer is atomic, as every row's. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "shim.h"

static struct gt_hook get_device = {"cudaGetDevice", NULL, "libcudart.so", NULL, 0};
static int runtime_current_device(void)
{
    __typeof__(&cudaGetDevice) get = (__typeof__(&cudaGetDevice))gt_real_of(&get_device);
    int d = GT_DEVICE_UNKNOWN;
    if (!get || get(&d) != cudaSuccess)
        return GT_DEVICE_UNKNOWN;
    return d;
}

static struct gt_hook get_ctx_device = {"cuCtxGetDevice", NULL, "libcuda.so", NULL, 0};
static int driver_current_device(void)
{
    __typeof__(&cuCtxGetDevice) get = (__typeof__(&cuCtxGetDevice))gt_real_of(&get_ctx_device);
    CUdevice d;
    if (!get || get(&d) != CUDA_SUCCESS)
        return GT_DEVICE_UNKNOWN;
    return (int)d;
}

int gt_allocation_device(int how, int result)
{
    if (how == GT_DEVICE_CURRENT_DRIVER)
        return driver_current_device();
    int d = result == 0 ? driver_current_device() : GT_DEVICE_UNKNOWN;
    return d != GT_DEVICE_UNKNOWN ? d : runtime_current_device();
}
