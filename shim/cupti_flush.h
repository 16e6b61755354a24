/* CUPTI's activity flushes run on a thread of their own, not the writer's
 * nor a stopping thread's (but yield's in cupti.c, a foreign client's
 * registration on the program's thread, and a periodic one made in place
 * while no thread can be started). A flush waits for CUPTI's worker,
 * which waits for the driver's lock that a thread inside a synchronizing
 * memory call holds (a cudaFree waiting for a kernel): seen on an H200,
 * CUDA 13, driver 580. A program whose signal handler siglongjmps out of
 * such a call leaves that lock held for good; untraced it runs on, but the
 * writer's periodic flush then never returned (the 2,000 calls after the
 * jump not written, the exit held 30 s) and the atexit flush hung the exit
 * for ever (tests/gpu/check_longjmp.py). Here the writer goes on, and a stop
 * waits for the flush a bounded while. */
#ifndef GPUTRACE_CUPTI_FLUSH_H
#define GPUTRACE_CUPTI_FLUSH_H

#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>

enum { GT_FLUSH_DONE, GT_FLUSH_ASKED, GT_FLUSH_BUSY, GT_FLUSH_LATE, GT_FLUSH_SKIPPED, GT_FLUSH_RUNNING };
/* flush(flag) on the flush thread (started at the first call, signals
 * blocked), within gt_attach_begin/end when bracket (the caller holds no
 * section). wait_ns 0: ASKED at once (*gen_out: its generation, for
 * gt_cupti_flush_result), or BUSY: the last flush asked still runs, nothing
 * asked. wait_ns > 0: waits for one in flight first, then for its own:
 * DONE; LATE once wait_ns passed (the flush goes on there); SKIPPED: not
 * made (a fork was pending; the section was not free; for a stop, no thread
 * could be started: in place it could wait for ever). With no thread (a
 * thread limit reached) a periodic flush is made in place, as before. */
int gt_cupti_flush_on_thread(CUptiResult (*flush)(uint32_t), uint32_t flag, bool bracket, uint64_t wait_ns,
                             uint64_t *gen_out);
int gt_cupti_flush_result(uint64_t gen);   /* RUNNING, DONE or SKIPPED */
void gt_cupti_flush_after_fork_child(void);

#endif
