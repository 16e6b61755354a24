/* The device an allocation went to, asked of CUDA after the program's own
 * call succeeded (record.c, inside the recording, so the cost note times it):
 * the runtime's current device, or the driver's current context's device.
 * Called, not interposed: each row's pointer is atomic, as every row's. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "shim.h"

static struct gt_hook get_device = {"cudaGetDevice", NULL, "libcudart.so", NULL, 0};
int gt_runtime_current_device(void)
{
    __typeof__(&cudaGetDevice) get = (__typeof__(&cudaGetDevice))gt_real_of(&get_device);
    int d = GT_DEVICE_UNKNOWN;
    if (!get || get(&d) != cudaSuccess)
        return GT_DEVICE_UNKNOWN;
    return d;
}

static struct gt_hook get_ctx_device = {"cuCtxGetDevice", NULL, "libcuda.so", NULL, 0};
int gt_driver_current_device(void)
{
    __typeof__(&cuCtxGetDevice) get = (__typeof__(&cuCtxGetDevice))gt_real_of(&get_ctx_device);
    CUdevice d;
    if (!get || get(&d) != CUDA_SUCCESS)
        return GT_DEVICE_UNKNOWN;
    return (int)d;
}
