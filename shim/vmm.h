/* vmm.c: physical memory of the CUDA virtual-memory API, for the writer. */
#ifndef GPUTRACE_VMM_H
#define GPUTRACE_VMM_H

#include "shim.h"

/* Each event's apis id as it should be stored (a cuMemRelease of a handle
 * that is still mapped becomes cuMemRelease_while_mapped). */
int gt_vmm_track(const struct gt_call *ev);
/* After gt_vmm_track of a cuMemUnmap: the handles whose memory it gave back,
 * one per call, false when there are no more. */
bool gt_vmm_take_freed(uint64_t *handle);
void gt_vmm_reset(void); /* fork child */

#endif
