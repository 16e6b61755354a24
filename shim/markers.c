/* The public marker API (gputrace.h): what a program calls to say more than
 * NVTX can, such as where each iteration starts and its batch size. Exported
 * from the preloaded shim; gputrace.h finds these with dlsym at run time, so
 * programs link nothing and the calls do nothing without the shim. */
#include <stdlib.h>
#include <string.h>

#define GPUTRACE_BUILDING_SHIM
#include "gputrace.h"

#include "activity.h"

static char *dup_name(const char *name)
{
    return gt_message_copy(name);
}

GT_EXPORT void gputrace_mark(const char *name)
{
    if (!gt_config.disabled)
        gt_mark(GT_SRC_MARKER, NULL, dup_name(name));
}

GT_EXPORT void gputrace_iteration(long index, long batch_size)
{
    if (!gt_config.disabled)
        gt_iteration(index, batch_size);
}

GT_EXPORT int gputrace_range_push(const char *name)
{
    return gt_config.disabled ? -1 : gt_range_push(GT_SRC_MARKER, NULL, dup_name(name));
}

GT_EXPORT int gputrace_range_pop(void)
{
    return gt_config.disabled ? -1 : gt_range_pop(GT_SRC_MARKER, NULL);
}

GT_EXPORT int gputrace_recording(void)
{
    return atomic_load(&gt_state) == GT_ACTIVE;
}
