/* Drop counters: every record that could not be recorded or written is
 * counted here, by reason, through gt_drop() (any thread, lock-free). The
 * writer stores the counts in the drops table; each reason's name and
 * meaning are the rows' text. */
#include "shim.h"

static _Atomic uint64_t counts[GT_DROP_COUNT];

static const struct gt_drop_info info[GT_DROP_COUNT] = {
    [GT_DROP_QUEUE_FULL] = {"queue_full", true,
        "event dropped: the queue to the writer was full and the writer made no progress for GPUTRACE_QUEUE_WAIT_MS"},
    [GT_DROP_UNFINISHED_AT_EXIT] = {"unfinished_at_exit", true,
        "event dropped: a thread was still inside a traced context reset or free of mapped memory (cuMemUnmap, "
        "cuMemRelease, cuMemAddressFree), or had taken its place in the queue and not yet filled it, when the process "
        "ended (a free still in its call is written, as one that worked)"},
    [GT_DROP_STACK_LOST] = {"stack_lost", false, "event recorded without its stack: no memory for the stack record"},
    [GT_DROP_WRITE_FAILED] = {"write_failed", true,
        "event not written: writing the trace file failed (a stderr line said why)"},
    [GT_DROP_NOT_WRITTEN] = {"activity_not_written", false,
        "range, mark, iteration, note, device, sample or CUPTI record not written: writing the trace file failed, "
        "or the process was ending by a fatal signal and the time allowed ran out; or the failure of a free the "
        "writer had written as one that worked, while it waited, lost on a full queue (its row reads as a free that "
        "worked)"},
    [GT_DROP_CUPTI_RECORDS] = {"cupti_records", false,
        "CUPTI activity records lost inside CUPTI (it had no buffer for them)"},
    [GT_DROP_UNWRITTEN_AT_SIGNAL] = {"unwritten_at_signal", true,
        "event not written: the process was ending by a fatal signal and the time allowed for writing (1 s) ran out"},
    [GT_DROP_WINDOW_CHECKPOINT] = {"window_checkpoint_skipped", false,
        "flight recorder (GPUTRACE_WINDOW_S): a checkpoint not taken for lack of memory; the trace keeps more than the "
        "window (nothing in it is wrong)"},
    [GT_DROP_RANGE_TOO_DEEP] = {"range_too_deep", false,
        "push/pop range not recorded: more than 128 ranges open on one thread (its pop is matched, the others kept)"},
    [GT_DROP_ARRAY_SIZE_UNKNOWN] = {"array_size_unknown", false,
        "CUDA array recorded with 0 bytes: its texel format is newer than this gputrace knows"},
    [GT_DROP_STACK_NOT_TAKEN] = {"stack_not_taken", false,
        "event recorded without its native stack: the program put its own file on a descriptor of libunwind's "
        "(its memory-check pipe), which libunwind would have read from and written into"},
    [GT_DROP_RANGE_NOT_KEPT] = {"range_not_kept", false,
        "start/end range opened before the trace started not recorded: 1024 such ranges were open then"},
    [GT_DROP_RANGE_QUEUE_FULL] = {"range_queue_full", false,
        "push/pop range, start/end range or mark dropped: the queue to the writer was full and the writer made no "
        "progress for GPUTRACE_QUEUE_WAIT_MS"},
    [GT_DROP_STACK_LOW] = {"stack_low", false,
        "event recorded without its call stack: the calling thread's own stack had less than 16 KiB left below the "
        "call (a thread started with a small stack), and taking it would have overflowed that stack"},
    [GT_DROP_STACK_IN_HANDLER] = {"stack_in_signal_handler", false,
        "event recorded without its call stack: the thread's first one came inside a signal handler, which may have "
        "interrupted malloc, whose lock the unwinder's first use on a thread takes"},
    [GT_DROP_LEFT_BY_JUMP] = {"left_by_longjmp", true,
        "event not recorded: the call was left by a longjmp before it returned (a signal handler's siglongjmp out "
        "of a CUDA call); the thread is traced again from its next call"},
    [GT_DROP_AFTER_END] = {"after_trace_end", true,
        "event not recorded: the call came while the trace was being finished (another thread's, as the process "
        "exited); calls made after the file was closed (in a library's destructor that runs after the shim's) "
        "cannot be counted"},
    [GT_DROP_CUPTI_NOT_FLUSHED] = {"cupti_last_flush_not_made", false,
        "CUPTI's last flush not made or not ended, so the kernels, copies and memsets it still held at the end are "
        "not recorded: the exit came from a signal handler (which may have interrupted CUPTI holding its lock), a "
        "longjmp had left a CUDA call, or the flush did not end within 1 s (a cupti note says which); counted once"},
    [GT_DROP_QUEUE_HELD] = {"queue_held", true,
        "event dropped: the queue to the writer was full because a thread held its place in it unfilled for "
        "GPUTRACE_QUEUE_WAIT_MS (a context reset or a free of mapped memory keeps its place until the real call "
        "returns; or a thread preempted between taking its place and filling it), not because the writer fell "
        "behind"},
    [GT_DROP_RANGE_QUEUE_HELD] = {"range_queue_held", false,
        "push/pop range, start/end range or mark dropped: the queue to the writer was full because a thread held its "
        "place in it unfilled (see queue_held)"},
    [GT_DROP_MESSAGE_CUT] = {"message_cut", false,
        "range or mark message kept to its first 1 KiB (\"...\" at the end): the rest of it not recorded"},
};

void gt_drop(enum gt_drop_reason r)
{
    atomic_fetch_add_explicit(&counts[r], 1, memory_order_relaxed);
}

void gt_drop_add(enum gt_drop_reason r, uint64_t n)
{
    atomic_fetch_add_explicit(&counts[r], n, memory_order_relaxed);
}

uint64_t gt_drop_count(enum gt_drop_reason r)
{
    return atomic_load_explicit(&counts[r], memory_order_relaxed);
}

/* Events (rows of the events table) lost, whatever the reason. */
uint64_t gt_drops_events(void)
{
    uint64_t n = 0;
    for (int r = 0; r < GT_DROP_COUNT; r++)
        if (info[r].is_event)
            n += gt_drop_count(r);
    return n;
}

const struct gt_drop_info *gt_drop_info(enum gt_drop_reason r)
{
    return &info[r];
}

/* Fork child: the parent's losses are the parent's. */
void gt_drops_reset(void)
{
    for (int r = 0; r < GT_DROP_COUNT; r++)
        atomic_store(&counts[r], 0);
}
