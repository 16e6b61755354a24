/* Facts about each visible GPU (name, UUID, memory, compute capability, PCI
 * bus, driver and runtime versions), read once by the writer after the
 * program's first successful CUDA call. Only query functions of the libcuda
 * the program already loaded are used: no cuInit, no context of our own.
 * Where no libcuda is loaded (a stand-in runtime) the runtime's queries serve. */
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "activity.h"

static void format_uuid(const unsigned char b[16], char *out, size_t cap)
{
    snprintf(out, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

#define DRV(ret, name, params) ret(*name) params = (ret(*) params)gt_real_symbol(#name, "libcuda.so")

static bool read_driver(struct gt_devices *out)
{
    DRV(CUresult, cuDeviceGetCount, (int *));
    DRV(CUresult, cuDeviceGet, (CUdevice *, int));
    DRV(CUresult, cuDeviceGetName, (char *, int, CUdevice));
    DRV(CUresult, cuDeviceTotalMem_v2, (size_t *, CUdevice));
    DRV(CUresult, cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice));
    DRV(CUresult, cuDeviceGetPCIBusId, (char *, int, CUdevice));
    DRV(CUresult, cuDriverGetVersion, (int *));
    CUresult (*get_uuid)(CUuuid *, CUdevice) = (CUresult(*)(CUuuid *, CUdevice))gt_real_symbol("cuDeviceGetUuid_v2", "libcuda.so");
    if (!get_uuid)
        get_uuid = (CUresult(*)(CUuuid *, CUdevice))gt_real_symbol("cuDeviceGetUuid", "libcuda.so");
    int n = 0;
    if (!cuDeviceGetCount || !cuDeviceGet || cuDeviceGetCount(&n) != CUDA_SUCCESS)
        return false;
    out->count = n < GT_MAX_DEVICES ? n : GT_MAX_DEVICES;
    if (cuDriverGetVersion)
        cuDriverGetVersion(&out->driver_version);
    for (int i = 0; i < out->count; i++) {
        struct gt_device_info *d = &out->dev[i];
        CUdevice dev;
        if (cuDeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        if (cuDeviceGetName && cuDeviceGetName(d->name, sizeof d->name, dev) != CUDA_SUCCESS)
            d->name[0] = 0;
        size_t total;
        if (cuDeviceTotalMem_v2 && cuDeviceTotalMem_v2(&total, dev) == CUDA_SUCCESS) {
            d->total_bytes = total;
            d->has_total = true;
        }
        CUuuid u;
        if (get_uuid && get_uuid(&u, dev) == CUDA_SUCCESS) {
            format_uuid((const unsigned char *)u.bytes, d->uuid, sizeof d->uuid);
            d->has_uuid = true;
        }
        d->has_cc = cuDeviceGetAttribute &&
                    cuDeviceGetAttribute(&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
                    cuDeviceGetAttribute(&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS;
        d->has_pci = cuDeviceGetPCIBusId && cuDeviceGetPCIBusId(d->pci_bus_id, sizeof d->pci_bus_id, dev) == CUDA_SUCCESS;
    }
    return true;
}

#define RT(ret, name, params) ret(*name) params = (ret(*) params)gt_real_symbol(#name, "libcudart.so")

static bool read_runtime(struct gt_devices *out)
{
    RT(cudaError_t, cudaGetDeviceCount, (int *));
    RT(cudaError_t, cudaGetDeviceProperties, (struct cudaDeviceProp *, int));
    RT(cudaError_t, cudaDriverGetVersion, (int *));
    int n = 0;
    if (!cudaGetDeviceCount || !cudaGetDeviceProperties || cudaGetDeviceCount(&n) != cudaSuccess)
        return false;
    out->count = n < GT_MAX_DEVICES ? n : GT_MAX_DEVICES;
    if (cudaDriverGetVersion)
        cudaDriverGetVersion(&out->driver_version);
    for (int i = 0; i < out->count; i++) {
        struct gt_device_info *d = &out->dev[i];
        /* Another runtime's struct may be larger than these headers' (it
         * grew in CUDA 12): room to spare, so it never writes past ours. */
        union {
            struct cudaDeviceProp p;
            char room[4 * sizeof(struct cudaDeviceProp)];
        } u;
        struct cudaDeviceProp *pp = &u.p;
        if (cudaGetDeviceProperties(pp, i) != cudaSuccess)
            continue;
        const struct cudaDeviceProp p = *pp;
        snprintf(d->name, sizeof d->name, "%s", p.name);
        d->total_bytes = p.totalGlobalMem;
        d->has_total = true;
        format_uuid((const unsigned char *)p.uuid.bytes, d->uuid, sizeof d->uuid);
        d->has_uuid = true;
        d->cc_major = p.major;
        d->cc_minor = p.minor;
        d->has_cc = true;
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%08x:%02x:%02x.0", (unsigned)p.pciDomainID,
                 (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
        d->has_pci = true;
    }
    return true;
}

/* Fills *out; count = -1 when neither libcuda nor libcudart answers. */
bool gt_devices_read(struct gt_devices *out)
{
    memset(out, 0, sizeof *out);
    RT(cudaError_t, cudaRuntimeGetVersion, (int *));
    if (!read_driver(out) && !read_runtime(out)) {
        out->count = -1;
        return false;
    }
    if (cudaRuntimeGetVersion)
        cudaRuntimeGetVersion(&out->runtime_version);
    return true;
}
