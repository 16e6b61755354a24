/* CUPTI's activity flushes run on a thread of their own, never the writer's
 * or a stopping thread's own call. A flush waits for CUPTI's worker, which
 * waits for the driver's lock that a thread inside a synchronizing CUDA call
 * holds (a cudaFree waiting for a kernel): seen on an H200, CUDA 13, driver
 * 580. A program whose signal handler siglongjmps out of such a call leaves
 * that lock held for good; untraced it runs on, but the writer's periodic
 * flush then never returned (the 2,000 calls after the jump not written, the
 * exit held 30 s) and the atexit flush hung the program's exit for ever
 * (tests/gpu/check_longjmp.py). Here the writer goes on, and a stop waits
 * for the flush a bounded while. */
#ifndef GPUTRACE_CUPTI_FLUSH_H
#define GPUTRACE_CUPTI_FLUSH_H

#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>

enum { GT_FLUSH_DONE, GT_FLUSH_ASKED, GT_FLUSH_BUSY, GT_FLUSH_LATE };
/* flush(flag) on the flush thread (started at the first call, signals
 * blocked), within gt_attach_begin/end when bracket (the caller holds no
 * section; none taken: no flush). wait_ns 0: returns ASKED at once; else
 * DONE, or LATE once wait_ns passed with the flush still running (it goes on
 * there). BUSY (wait_ns 0): the last flush asked is still running, nothing
 * asked; a caller that waits waits for that one first, within wait_ns. */
int gt_cupti_flush_on_thread(CUptiResult (*flush)(uint32_t), uint32_t flag, bool bracket, uint64_t wait_ns);
void gt_cupti_flush_after_fork_child(void);

#endif
