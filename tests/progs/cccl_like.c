/* A stand-in for a CUDA library that marks its own calls with NVTX, as CCCL
 * (CUB, Thrust) does once NVTX injection is on: a domain "CCCL" of its own,
 * created inside the library, one range per call, no allocation. */
#include <nvtx3/nvToolsExt.h>
#include <string.h>

void cccl_like_sort(void)
{
    static nvtxDomainHandle_t d;
    if (!d)
        d = nvtxDomainCreateA("CCCL");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "cub::DeviceRadixSort::SortPairs";
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
}
