/* Internal interface of the shim: the record on the queue, the queue between
 * the program's threads and the writer thread, and the entry points each
 * module offers the others. Data flows one way:
 *   hooks_*.c, entrypoints.c -> record.c -> queue.c -> writer*.c -> db.c -> SQLite
 *   nvtx.c, markers.c -> ranges.c -> queue.c
 * and calls go one way too (scripts/shim_callgraph.py checks: no cycle):
 *   top      hooks_runtime.c, hooks_driver.c, entrypoints.c, hooks_process.c, markers.c
 *   driver   lifecycle.c: the only file that starts, stops, forks and execs; it
 *            fans out to each module's start/stop/fork function, none calls back
 *            (the writer reports a file it cannot open through a callback)
 *   modules  record.c (hot path: calls lifecycle.c only through gt_start_lazily),
 *            ranges.c, nvtx.c, cupti.c, nvml.c, devices.c, pools.c, notes.c, stacks.c -> pybackward.c ->
 *            pyframes.c -> pyobjects.c,
 *            queue.c, writer.c -> writer_events.c, writer_activity.c, window.c ->
 *            writer_cupti.c, process.c (writer.h), all through db.c (db.h);
 *            runlog.c (lists the trace for `gputrace run`, no SQLite)
 *   base     config.c (config.h), state.c, drops.c, real.c, clock.c, unwind.c,
 *            symbols.c, vmm.c, u64map.c: they call nothing above them. */
#ifndef GPUTRACE_SHIM_H
#define GPUTRACE_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#define UNW_LOCAL_ONLY   /* headers only: libunwind itself is dlopen()ed (unwind.c) */
#include <libunwind.h>

#include "config.h"
#include "schema_sql.h"

#define GT_EXPORT __attribute__((visibility("default")))
#define GT_TLS __thread __attribute__((tls_model("initial-exec")))
#define GT_LIKELY(x) __builtin_expect(!!(x), 1)
#define GT_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A function a sanitizer's runtime may call during its own initialisation,
 * before it can take an instrumented call (ThreadSanitizer looks up its
 * interceptors with dlsym and installs its fatal-signal handlers with
 * sigaction): no sanitizer instrumentation at all, and it may call only
 * functions so marked, or libc. The attribute changes nothing in a normal
 * build. */
#if defined(__clang__) && __has_attribute(disable_sanitizer_instrumentation)
#define GT_UNINSTRUMENTED __attribute__((disable_sanitizer_instrumentation))
#else
/* GCC leaves such a function wholly uninstrumented, entry and exit too */
#define GT_UNINSTRUMENTED __attribute__((no_sanitize_thread, no_sanitize_address, no_sanitize_undefined))
#endif

#define GT_DEVICE_HOST (-1)
#define GT_DEVICE_UNKNOWN (-2)
/* An allocation hook's device, asked of CUDA inside the recording (so that
 * the cost note times it), through the runtime or through the driver as the
 * hook's own API: the current device (the current context's); a
 * stream-ordered allocation's stream's device (cudaMallocAsync takes memory
 * from the pool of the stream's device, whichever device is current); an
 * allocation from a given pool, the device the pointer is on. Never stored. */
#define GT_DEVICE_CURRENT_RUNTIME (-3)
#define GT_DEVICE_CURRENT_DRIVER (-4)
#define GT_DEVICE_OF_STREAM_RUNTIME (-5)
#define GT_DEVICE_OF_STREAM_DRIVER (-6)
#define GT_DEVICE_OF_POINTER_RUNTIME (-7)
#define GT_DEVICE_OF_POINTER_DRIVER (-8)
/* current_device.c: the device of an allocation just made (how: one of the
 * above; result: the call's; ptr: the allocation, 0 if it failed) */
int gt_allocation_device(int how, int result, uint64_t ptr, uint64_t stream);
/* the device a context reset names: dev itself (an argument), or the current
 * device (GT_DEVICE_CURRENT_RUNTIME), asked before the reset */
int gt_reset_device(int dev);
/* a host allocation succeeded: its context's device (the current one) is one
 * whose reset may free host memory; the devices so far, as a mask */
void gt_note_host_context(void);
uint64_t gt_host_context_devices(void);
/* CUDA graph capture (graphs.c): captures begun and not ended in the process;
 * while any is, a recorded call's flags come from gt_graph_call_flags. */
extern _Atomic int gt_captures_open;
void gt_graph_capture_begun(int result, uint64_t stream);
void gt_graph_capture_ended(int result, uint64_t stream);
void gt_graph_after_fork_child(void);
uint32_t gt_graph_call_flags(uint32_t flags, uint64_t stream);
void gt_graph_node_made(int device);         /* an allocation node was captured on device */
uint64_t gt_graph_node_devices(void);        /* those devices, a bit per ordinal < 64; any thread */
void gt_graph_used(void);                    /* a graph was instantiated or launched */
bool gt_graph_in_use(void);                  /* since then; any thread */
static inline uint32_t gt_graph_flags(uint32_t flags, uint64_t stream)
{
    if (GT_LIKELY(atomic_load_explicit(&gt_captures_open, memory_order_relaxed) == 0))
        return 0;
    return gt_graph_call_flags(flags, stream);
}
#define GT_MAX_STACK_DEPTH 128

/* ---- the record on the queue ---------------------------------------------
 * One tagged union per record, so that a queue slot (record + sequence
 * number) is exactly one 64-byte cache line and producers never share a line
 * with the writer. Each kind has its own struct; nothing is reinterpreted.
 * Strings: a domain is interned (never freed); a message is owned by the
 * record: whoever takes the record off the queue (or fails to queue it)
 * releases it with gt_rec_release. */
enum gt_rec_kind {
    GT_REC_ALLOC, GT_REC_FREE,             /* an allocation API call: .call */
    GT_REC_RANGE_PUSH, GT_REC_RANGE_START, /* a range opens: .open (push/pop or start/end) */
    GT_REC_RANGE_POP, GT_REC_RANGE_END,    /* a range closes: .close */
    GT_REC_MARK,                           /* .mark */
    GT_REC_ITERATION,                      /* .iteration */
    GT_REC_FREE_RESULT,                    /* a held free failed (or was left, GT_CALL_LEFT) after the
                                            * writer took it: .call, whose .size is the free's queue
                                            * position (record.c) */
};

/* An allocation call's record, written to the events table. */
static inline bool gt_rec_is_call(int kind)
{
    return kind == GT_REC_ALLOC || kind == GT_REC_FREE;
}

enum gt_call_flags {
    GT_CALL_HAS_STREAM = 1u << 0, /* .stream is meaningful (stream-ordered calls) */
    GT_CALL_HAS_SIZE = 1u << 1,   /* size known at record time (allocations, cuMemUnmap's range) */
    GT_CALL_HAS_HANDLE = 1u << 2, /* .handle is meaningful (cuMemMap's handle) */
    GT_CALL_IN_CAPTURE = 1u << 3, /* made while a CUDA graph was being captured, not captured (graphs.c) */
    GT_CALL_CAPTURED = 1u << 4,   /* captured into a graph: an allocation or free node (graphs.c) */
    GT_CALL_TAKEN = 1u << 5,      /* a held free the writer took before its call returned; .size is its
                                   * queue position (queue.c) */
    GT_CALL_LEFT = 1u << 6,       /* GT_REC_FREE_RESULT: that free was left by a longjmp: its row withdrawn */
};

struct gt_call {
    uint64_t ptr;        /* address or handle; 0 if the call failed */
    uint64_t size;
    union {              /* which one: flags */
        uint64_t stream; /* GT_CALL_HAS_STREAM */
        uint64_t handle; /* GT_CALL_HAS_HANDLE */
    };
    uint64_t stack_hash; /* 0 = no stack */
    int32_t result;
    uint16_t api;        /* enum gt_api */
    int16_t device;      /* ordinal, GT_DEVICE_HOST or GT_DEVICE_UNKNOWN */
};

enum gt_source { GT_SRC_NVTX, GT_SRC_MARKER };

struct gt_range_open {
    uint64_t id, parent_id; /* parent_id 0: none */
    const char *domain;     /* interned; NULL: the default domain */
    char *msg;              /* owned (malloc'd); NULL: none */
    int32_t depth;
    int8_t source;          /* enum gt_source */
};
struct gt_range_close { uint64_t id; };
struct gt_mark { const char *domain; char *msg; int8_t source; }; /* as in gt_range_open */
struct gt_iteration { int64_t index, batch_size; };              /* batch_size < 0: none */

struct gt_rec {
    uint64_t t_ns;       /* CLOCK_MONOTONIC, absolute */
    int32_t tid;
    uint8_t kind;        /* enum gt_rec_kind */
    uint8_t flags;       /* enum gt_call_flags, of a call */
    union {
        struct gt_call call;
        struct gt_range_open open;
        struct gt_range_close close;
        struct gt_mark mark;
        struct gt_iteration iteration;
    };
};
_Static_assert(sizeof(struct gt_rec) == 56, "record + sequence number = one cache line");

/* A GT_REC_FREE_RESULT that changes the row (a failure, or a call left by a
 * longjmp), not one that says the free worked as written. */
static inline bool gt_free_result_changes_row(const struct gt_rec *r)
{
    return (r->flags & GT_CALL_LEFT) || r->call.result != 0;
}

/* Frees what a record owns (its message). */
static inline void gt_rec_release(struct gt_rec *r)
{
    if (r->kind == GT_REC_RANGE_PUSH || r->kind == GT_REC_RANGE_START)
        free(r->open.msg);
    else if (r->kind == GT_REC_MARK)
        free(r->mark.msg);
}


/* drops.c: why a record could not be recorded or written; each reason with a
 * count has a row in the drops table. gt_drop() is the one way to count one. */
enum gt_drop_reason {
    GT_DROP_QUEUE_FULL, GT_DROP_UNFINISHED_AT_EXIT, GT_DROP_STACK_LOST, GT_DROP_WRITE_FAILED,
    GT_DROP_NOT_WRITTEN, GT_DROP_CUPTI_RECORDS, GT_DROP_UNWRITTEN_AT_SIGNAL, GT_DROP_WINDOW_CHECKPOINT,
    GT_DROP_RANGE_TOO_DEEP, GT_DROP_ARRAY_SIZE_UNKNOWN, GT_DROP_MESSAGE_CUT, GT_DROP_RANGE_NOT_KEPT, GT_DROP_STACK_NOT_TAKEN, GT_DROP_RANGE_QUEUE_FULL, GT_DROP_STACK_LOW, GT_DROP_STACK_IN_HANDLER, GT_DROP_AFTER_END, GT_DROP_LEFT_BY_JUMP, GT_DROP_CUPTI_NOT_FLUSHED,
    GT_DROP_QUEUE_HELD, GT_DROP_RANGE_QUEUE_HELD, GT_DROP_COUNT
};
struct gt_drop_info {
    const char *name;    /* drops.reason */
    bool is_event;       /* counts in processes.events_dropped */
    const char *meaning; /* drops.meaning */
};
void gt_drop(enum gt_drop_reason r);                 /* any thread, lock-free */
/* stack_room.c: the calling thread's stack has too little room left to take its call stack (asked
 * outside a signal handler first); is the thread running a signal handler (1, 0; -1 cannot tell) */
bool gt_stack_room_low(void);
void gt_stack_room_warm(void);   /* at the trace's start: binds what the bounds' first look-up calls */
int gt_stack_in_signal_handler(void);
void gt_drop_add(enum gt_drop_reason r, uint64_t n);
uint64_t gt_drop_count(enum gt_drop_reason r);
uint64_t gt_drops_events(void);                      /* events lost, every reason */
const struct gt_drop_info *gt_drop_info(enum gt_drop_reason r);
void gt_drops_reset(void);                           /* fork child */

/* state.c: what every thread asks on the hot path. gt_state is written by
 * lifecycle.c only; the rest of the shim reads it. */
enum gt_state { GT_UNINIT, GT_STARTING, GT_ACTIVE, GT_STOPPED, GT_FAILED };
extern _Atomic int gt_state;
extern _Atomic bool gt_cuda_ready;         /* the program initialised CUDA; CUPTI started or found unavailable */
extern _Atomic bool gt_cuda_ready_claimed; /* one thread has begun making CUDA ready (lifecycle.c) */
extern GT_TLS int gt_in_shim;              /* re-entry guard: set while this thread is inside the shim */
/* While this thread is inside a hook's real call, that hook's frame (0: not):
 * a hooked call at or above it finds the hook gone, left by a longjmp */
extern GT_TLS uintptr_t gt_hook_real_frame;
/* A free whose slot this thread reserved and has not yet published: its position + 1 (0: none) */
extern GT_TLS uint64_t gt_free_pending_pos;
/* A longjmp left a hooked CUDA call (record.c): CUDA's locks that call held
 * may stay held, CUPTI's among them; no CUPTI call of ours from then on */
extern _Atomic bool gt_cuda_call_left;
int32_t gt_tid(void);
void gt_thread_untraced(void);             /* this thread's CUDA calls are never recorded (writer) */
void gt_state_after_fork_child(void);

static inline bool gt_trace_active(void)
{
    return atomic_load_explicit(&gt_state, memory_order_acquire) == GT_ACTIVE;
}

/* clock.c */
uint64_t gt_now_ns(void);
/* stamp.c */
void gt_clock_start(void);                       /* the trace starts: chooses how gt_stamp reads */
void gt_clock_to_ns(struct gt_rec *recs, int n); /* writer: records just taken off the queue, to nanoseconds */
extern bool gt_stamp_ticks;                      /* set before the trace is active, then read only */
/* An allocation's or free's time stamp on the program's thread: the
 * time-stamp counter where clock.c chose it (mapped by the writer), else
 * CLOCK_MONOTONIC. */
static inline uint64_t gt_stamp(void)
{
#if defined(__x86_64__)
    if (gt_stamp_ticks) {   /* lfence first: the counter read after the real call's instructions, as the kernel's */
        __builtin_ia32_lfence();
        return __builtin_ia32_rdtsc();
    }
#endif
    return gt_now_ns();
}

/* queue.c: bounded multi-producer single-consumer ring of records. */
struct gt_slot;
bool gt_queue_init(uint32_t capacity);
void gt_queue_discard(void);                         /* fork child: forget everything */
struct gt_reservation { struct gt_slot *slot; uint64_t pos; };
bool gt_queue_reserve(struct gt_reservation *r, enum gt_drop_reason full); /* false: dropped (counted as full) */
bool gt_queue_reserve_now(struct gt_reservation *r, enum gt_drop_reason full); /* the same, never waiting */
void gt_queue_publish(const struct gt_reservation *r, const struct gt_rec *rec);
/* A free: its record in place before the real free (hold), its result after
 * (finish) unless the writer took the record first, as a free that worked
 * (queue.c). */
bool gt_queue_hold(const struct gt_reservation *r, const struct gt_rec *rec);   /* false: given up at a stop */
enum gt_held_end { GT_HELD_PUBLISHED, GT_HELD_TAKEN, GT_HELD_SKIPPED };
enum gt_held_end gt_queue_finish_held(const struct gt_reservation *r, int32_t result, uint64_t stack_hash);
/* writer only; returns count; a held free waiting take_held_after_ns is taken (0: at once) */
int gt_queue_pop(struct gt_rec *out, int max, uint64_t take_held_after_ns);
bool gt_queue_empty_upto(uint64_t pos);              /* writer only */
uint64_t gt_queue_head(void);
void gt_queue_skip_pending(void);                    /* writer: give up on it at exit */
bool gt_queue_abandon(uint64_t pos);                  /* producer: a reserved slot it will never publish */

/* unwind.c: libunwind, dlopen()ed at the first CUDA call (not linked). */
struct gt_unwind {
    int (*backtrace)(void **buf, int size);
    /* frame by frame (unwind_memo.c, and the signal-frame check); step set last */
    int (*getcontext)(unw_context_t *);
    int (*init_local)(unw_cursor_t *, unw_context_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*step)(unw_cursor_t *);
    int (*is_signal_frame)(unw_cursor_t *);
    unw_accessors_t *(*get_accessors)(unw_addr_space_t as);
    unw_addr_space_t local_addr_space;
    int npipe;                      /* libunwind's memory-check pipe, as opened (fdlift.c) */
    struct { int fd; dev_t dev; ino_t ino; } pipe[2];
};
extern struct gt_unwind gt_unw;
/* May libunwind be called: its pipe's descriptors still its own? (A program
 * that dup2'd its own file onto one had libunwind read from it and hang, or
 * write into it.) Once not, never again: stacks are then not taken, counted. */
bool gt_unwind_usable(void);
bool gt_unwind_load(char *why, size_t cap); /* false, with the reason in why, when libunwind is missing */
bool gt_unwind_in_signal_frame(void);       /* this thread runs a signal handler (false: cannot tell) */
/* unwind_memo.c: unw_backtrace(buf, max) from a per-thread memo of whole stacks */
int gt_unwind_memo(void **buf, int max, uint64_t hint);
void gt_unwind_memo_after_fork_child(void);
void gt_unwind_memo_note(void);   /* at stop: GPUTRACE_UNWIND_CHECK's tally */
/* This thread's Python frame ids (pyframes.c), kept in its memo's mapping
 * (zeroed when handed to another thread); NULL until the thread has a memo
 * (its first unwound stack makes it), or where it can have none. */
#define GT_PY_OWN_BITS 8
#define GT_PY_OWN_IDS (1 << GT_PY_OWN_BITS)
struct gt_py_own_id {
    const char *instr;     /* the frame's instruction: its code object's, at an offset */
    uint64_t key;          /* the code object's co_version << 1 | the frame is a generator's */
    uint64_t id;           /* 0: the frame is still setting up (not named) */
};
struct gt_py_own {
    uint32_t generation;   /* 0: never filled */
    struct gt_py_own_id ids[GT_PY_OWN_IDS];
};
struct gt_py_own *gt_unwind_memo_py_ids(void);
/* This thread's last stack hashes found in stacks.c's shared set, direct-mapped,
 * in the same mapping (NULL as above): valid while generation is the set's. */
#define GT_STACK_MEMO_BITS 10
struct gt_stack_memo {
    uint32_t generation;   /* 0: never filled */
    uint64_t hash[1u << GT_STACK_MEMO_BITS];
};
struct gt_stack_memo *gt_unwind_memo_stack_hashes(void);

/* stacks.c: capture on the hot path, dedup by hash, hand new stacks to the writer. */
struct gt_stack_rec {
    struct gt_stack_rec *next;
    uint64_t hash;
    int depth;
    uintptr_t ips[];
};
bool gt_stacks_init(void);
int gt_stacks_depth(void);                           /* frames per stack in use (0: off, or libunwind missing) */
void gt_stacks_discard(void);
uint64_t gt_stack_capture(void);                     /* hot path; 0 if off */
void gt_stack_skip(void);                             /* a call recorded without a stack (a free, by default) */
struct gt_stack_rec *gt_stacks_take_new(void);       /* writer: all new stacks, oldest first */
bool gt_stacks_pending(void);                        /* writer: any to take? */

/* pyframes.c: the Python frames of the calling thread (stacks.c puts them in
 * the stack). A stack's ips[] entry with GT_PYFRAME_TAG set is a Python
 * frame's id, not an address (user-space addresses never have bit 63 set). */
#define GT_PYFRAME_TAG (1ull << 63)
#define GT_PY_MAX_FRAMES 128
struct gt_py_stack {
    int n, nseg;                           /* frames; eval-loop entries (segments) */
    uint64_t ids[GT_PY_MAX_FRAMES];        /* innermost first, each with GT_PYFRAME_TAG */
    uint16_t seg_end[GT_PY_MAX_FRAMES + 1]; /* segment k is ids[seg_end[k-1] .. seg_end[k]) */
};
struct gt_pyframe_rec {                    /* a frame's first sighting, for the writer */
    struct gt_pyframe_rec *next;
    uint64_t id;
    int32_t line;
    char *function, *file;                 /* point into text */
    char text[];
};
void gt_py_init(void);                     /* trace start: find a Python in the process, once */
int gt_py_capture(struct gt_py_stack *out); /* hot path: 0 when no Python runs on this thread */
void gt_py_count_call(void);               /* hot path, a call recorded without frames: as gt_py_capture tells backward */
void gt_py_eval_range(uintptr_t *lo, uintptr_t *span); /* ip - lo < span: ip inside _PyEval_EvalFrameDefault */
bool gt_py_interleaves(void);              /* false: eval frames cannot be recognised (append) */
struct gt_pyframe_rec *gt_py_take_new(void); /* writer: new frames, any order (take after stacks) */
bool gt_py_pending(void);
void gt_py_discard(void);                  /* fork child */
/* pybackward.c: a thread with no Python frames of its own (PyTorch's autograd
 * threads) gets the frames of the one thread waiting in backward(), after
 * this marker id (the writer names it "<backward>"). */
#define GT_PY_BACKWARD_MARK (GT_PYFRAME_TAG | 1)
/* The last of GT_PY_MAX_FRAMES when the thread's Python stack is deeper: the
 * outer frames are not recorded (the writer names it "<more Python frames>"). */
#define GT_PY_CUT_MARK (GT_PYFRAME_TAG | 2)
int gt_py_capture_backward(struct gt_py_stack *out); /* one segment; 0: none */
void gt_py_backward_after_fork(void);

/* symbols.c: writer side, once per unique instruction pointer. */
struct gt_frame_info {
    char module[1024];
    uint64_t module_offset;
    char function[2048];
    uint64_t symbol_offset;
    bool has_module, has_function;
};
void gt_symbolize(uintptr_t ip, bool is_return_address, struct gt_frame_info *out);
void gt_demangle(const char *name, char *out, size_t cap); /* as is if it cannot */

/* record.c: what hooks call. */
bool gt_hook_enter_at(void *frame);   /* false: nested, disabled or stopped -> just call through */
void gt_hook_left_by_jump(uintptr_t target_sp);   /* hooks_process.c: a longjmp to target_sp is about to run */
#define gt_hook_enter() gt_hook_enter_at(__builtin_frame_address(0))   /* the hook's own frame */
/* around a hook's real call: the frame a later call compares with (gt_hook_real_frame) */
#define GT_REAL_BEGIN() (gt_hook_real_frame = (uintptr_t)__builtin_frame_address(0))
#define GT_REAL_END() (gt_hook_real_frame = 0)
void gt_hook_leave(void);
void gt_record_alloc(int api, int result, uint64_t ptr, uint64_t size, int device,
                     uint64_t stream, uint32_t flags);
struct gt_pending_free { struct gt_reservation res; bool reserved, held, whole_stack; struct gt_rec rec; };
void gt_record_free_begin(struct gt_pending_free *p, int api, uint64_t ptr, uint64_t size, int device,
                          uint64_t stream, uint32_t flags);
/* a device reset: recorded as a free is (its place taken before the call), with its stack */
void gt_record_reset_begin(struct gt_pending_free *p, int api, int device);
void gt_record_free_end(struct gt_pending_free *p, int result);

/* real.c: the functions we interpose (and the few we call), as the program
 * would have reached them. Every real function is found one way: a struct
 * gt_hook row, resolved once through gt_hook_real (gt_real_of on hot paths). */
void *gt_real_symbol(const char *name, const char *lib_hint);
unsigned long long gt_loaded_generation(void); /* changes with every dlopen/dlclose */
void *gt_dlsym_real(void *handle, const char *name); /* glibc's dlsym, never ours */

struct gt_hook {
    const char *name;     /* exported name, e.g. "cuMemAlloc_v2" */
    void *wrapper;        /* our definition; NULL: a function we only call */
    const char *lib;      /* hint for gt_real_symbol: "libcudart.so", "libcuda.so" */
    _Atomic(void *) real; /* the real definition, once found */
    _Atomic(unsigned long long) missed_at; /* gt_loaded_generation() of the last failed search */
};
void *gt_hook_real(struct gt_hook *h);            /* resolves once; NULL while not loaded (a miss is
                                                    searched again only after a library load) */
static inline void *gt_real_of(struct gt_hook *h)
{
    void *p = atomic_load_explicit(&h->real, memory_order_acquire);
    return GT_LIKELY(p != NULL) ? p : gt_hook_real(h);
}

/* The libc functions hooks_process.c interposes. Their rows live in real.c
 * and are all resolved when a trace starts (gt_libc_hooks_resolve), so that
 * a vfork child of a traced process only reads memory in those hooks. */
#define GT_LIBC_FUNCTIONS(X) \
    X(_exit) X(_Exit) X(quick_exit) X(pthread_exit) X(execve) X(execv) X(execvp) X(execvpe) X(fexecve) X(sigaction) X(signal) \
    X(sysv_signal) X(__sysv_signal) X(bsd_signal) X(sigset) X(longjmp) X(_longjmp) X(siglongjmp) X(__longjmp_chk)
#define GT_LIBC_ENUM(name) GT_LIBC_##name,
enum gt_libc_fn { GT_LIBC_FUNCTIONS(GT_LIBC_ENUM) GT_LIBC_N };
extern struct gt_hook gt_libc_hooks[GT_LIBC_N];
void gt_libc_hooks_resolve(void);
void *gt_libc_real_uninstrumented(enum gt_libc_fn fn); /* GT_UNINSTRUMENTED: the next definition after us */

/* selfcost.c: the hot path's own time, said in a `cost` note at the end.
 * One recorded call in GT_COST_SAMPLE is timed whole, another one in
 * GT_COST_SAMPLE part by part (gt_cost_timing; the others pay a counter):
 * the note scales the timed sums. */
enum gt_cost { GT_COST_HOOK, GT_COST_UNWIND, GT_COST_PYTHON, GT_COST_BACKWARD, GT_COST_CLOCK, GT_COST_QUEUE,
               GT_COST_STACK_SET, GT_COST_DEVICE, GT_COST_PARTS, /* the parts timed, then counts: */
               GT_COST_CALLS = GT_COST_PARTS, GT_COST_BACKWARD_CALLS, GT_COST_BACKWARD_CHECKS, GT_COST_BACKWARD_READS,
               GT_COST_OUTLIERS,
               GT_COST_MEMO_HITS, GT_COST_MEMO_FILLS, GT_COST_MEMO_UNPLAIN, /* unwind_memo.c: stacks by source */
               GT_COST_INTERVALS, /* GT_COST_INTERVALS + part: how many times that part was timed */
               GT_COST_N = GT_COST_INTERVALS + GT_COST_PARTS };
#define GT_COST_SAMPLE 16
/* A timed interval longer than this is left out, and counted: the thread was
 * preempted (or took a first sighting's slow path). 2^19 ticks is 0.1-0.3 ms
 * at the time-stamp counter's 2-5 GHz: a call this long, scaled by
 * GT_COST_SAMPLE, moved the note by half on an H100 host (0.95 and 1.49 us a
 * call in two runs of one program whose parts agreed within 10%). */
#define GT_COST_OUTLIER_TICKS (1ull << 19)
extern GT_TLS bool gt_cost_timing;                 /* this call's parts are timed */
extern GT_TLS uint64_t gt_cost_sums[GT_COST_N];    /* this thread's, not yet added to the shared sums */
uint64_t gt_cost_call(void);   /* a recorded call begins: counted; its tick reading if timed, else 0 */
static inline uint64_t gt_cost_read_ticks(void) /* the time-stamp counter (x86-64), else CLOCK_MONOTONIC */
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return gt_now_ns();
#endif
}
static inline uint64_t gt_cost_ticks(void)   /* a reading if this call is timed, else 0 */
{
    return gt_cost_timing ? gt_cost_read_ticks() : 0;
}
/* Adds the time since that reading (0: not timed, nothing added); returns a
 * new reading to time what comes next from (0 if not timed) */
static inline uint64_t gt_cost_add_since(enum gt_cost what, uint64_t since)
{
    if (!since)
        return 0;
    uint64_t now = gt_cost_read_ticks();
    if (GT_UNLIKELY(now - since > GT_COST_OUTLIER_TICKS)) {
        gt_cost_sums[GT_COST_OUTLIERS]++;
    } else {
        gt_cost_sums[what] += now - since;
        gt_cost_sums[GT_COST_INTERVALS + what]++;
    }
    return now;
}
static inline void gt_cost_add(enum gt_cost what, uint64_t since) /* the time since that reading, if timed */
{
    (void)gt_cost_add_since(what, since);
}
static inline void gt_cost_end(uint64_t t0) /* a recorded call ends: its whole time, if gt_cost_call timed it */
{
    gt_cost_add(GT_COST_HOOK, t0);
}
static inline void gt_cost_count(enum gt_cost what)
{
    gt_cost_sums[what]++;
}
void gt_cost_start(void);      /* the trace starts (the clock rate's first reading) */
void gt_cost_after_fork(void);
double gt_writer_cpu_s(void);  /* writer.c: its thread's CPU seconds so far, -1 if unknown */
void gt_cost_note(double writer_cpu_s);       /* at stop, before the writer's last drain */

/* Every function the shim defines in place of a CUDA or CUPTI one
 * (hooks_runtime.c, hooks_driver.c, entrypoints.c, cupti.c): what dlsym and the entry-point queries
 * (entrypoints.c) hand out instead of the real function. */
struct gt_hook_table { struct gt_hook *hooks; size_t n; };
/* cupti.c: the program captured, instantiated or launched a CUDA graph (the
 * GRAPH rows of the hook tables): CUPTI is never detached from then on. */
void gt_cupti_program_uses_graphs(void);
extern const struct gt_hook_table gt_runtime_hooks, gt_driver_hooks, gt_cupti_hooks;

/* hooks_driver.c: the size of the IPC-opened range at ptr (the driver's
 * answer), 0 unknown; after the program's own successful call only. */
uint64_t gt_ipc_range_size(uint64_t ptr);
/* arrays.c: the bytes a CUDA array's descriptor asks for (flags: the
 * runtime's cudaArray* or the driver's CUDA_ARRAY3D_*; levels 0 or 1: no mips) */
struct cudaChannelFormatDesc;
uint64_t gt_array_bytes_runtime(const struct cudaChannelFormatDesc *c, uint64_t w, uint64_t h, uint64_t d,
                                unsigned flags, unsigned levels);
uint64_t gt_array_bytes_driver(unsigned format, unsigned channels, uint64_t w, uint64_t h, uint64_t d,
                               unsigned flags, unsigned levels);

/* lifecycle.c: the only file that starts, stops, forks and execs the trace
 * (it fans out to each module's start/stop/fork function). */
enum gt_start { GT_START_TRACE, GT_START_CUDA };
/* The hot path's one way in, when behind: GT_START_TRACE at a hooked call while
 * no trace runs (one thread starts it, others wait); GT_START_CUDA after the
 * first successful call (CUDA is initialised: start CUPTI, let the writer
 * query devices). */
void gt_start_lazily(enum gt_start what) __attribute__((cold));
void gt_stop(const char *reason);          /* drain, finalize, close; idempotent; only in the owner */
bool gt_owns_trace(void);                  /* false in a vfork child of the traced process */
/* fdlift.c: while a library opens descriptors, the free numbers below a mark
 * held (0-2 when closed; high: up to near the limit, for libunwind's pipe) */
#define GT_FD_LIFT_MAX 1024
struct gt_fd_lift {
    int fd[GT_FD_LIFT_MAX];
    int n;
};
void gt_fd_lift_begin(struct gt_fd_lift *l, bool high);
void gt_fd_lift_end(struct gt_fd_lift *l);
/* Is fd 2 still the stderr the program was started with? A program started
 * with 2>&- that then opened its data file got fd 2, and the shim's line
 * went into it (a helper's probe). Async-signal-safe (fstat). Every shim
 * message goes through it: gt_eprintf. (errline.c; fd 2 noted at load) */
bool gt_stderr_ok(void);
void gt_stderr_remember(void);
void gt_eprint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define gt_eprintf(...) gt_eprint(__VA_ARGS__)
void gt_restart_after_failed_exec(void);

/* writer.c */
struct gt_writer_summary { char path[4200]; uint64_t events, dropped, peak_device, peak_pool, peak_managed, peak_host; bool write_failed, replaced; };
/* open_failed: called by the writer thread when the file cannot be opened
 * (tracing goes off); signal_stopped: by the writer thread when it finished
 * the file for a fatal signal (gt_writer_stop_from_signal). */
bool gt_writer_start(void (*open_failed)(void), void (*signal_stopped)(const struct gt_writer_summary *));
bool gt_writer_stop_from_signal(const char *signal_name, uint64_t budget_ns); /* async-signal-safe */
bool gt_writer_stop(const char *reason, struct gt_writer_summary *out, bool reopen_later);
bool gt_writer_wake(void);          /* a round now; false: no writer thread */
void gt_writer_main_exited(void);   /* the main thread leaves by pthread_exit (hooks_process.c) */
bool gt_only_thread_left(pid_t tid, pid_t also_ours);  /* lastthread.c: none but these two (0: none) and a zombie main */
bool gt_writer_resume(void);
void gt_writer_forget(void);               /* fork child */
void gt_writer_fork_prepare(void);
void gt_writer_fork_parent(void);

/* runlog.c: under `gputrace run`, each trace file is listed for the launcher */
void gt_runlog_process_started(void);                       /* load and fork child: this process began now */
void gt_runlog_creating(const char *tmp);                   /* writer thread, a new file about to be made */
void gt_runlog_creation_failed(void);                       /* writer thread, the new file could not be made */
void gt_runlog_opened(const char *path);                    /* writer thread, file just created */
bool gt_runlog_wrote(const struct gt_writer_summary *s);  /* true: the launcher says it, stay quiet */

/* signals.c: fatal signals while a trace runs (the program's own view of
 * each disposition kept behind the interposed sigaction and signal). */
#include <signal.h>
void gt_signals_install(void (*handler)(int, siginfo_t *, void *)); /* at trace start; idempotent */
void gt_signals_after_fork_child(void);   /* every fork child: the lock, the view's owner */
bool gt_signals_watching(int sig);
const char *gt_signals_end_reason(int sig);                       /* "signal SIGTERM" */
int gt_signals_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
__sighandler_t gt_signals_signal(int sig, __sighandler_t handler);
/* sysv_signal (one-shot, not blocked in its handler) and sigset (System V,
 * SIG_HOLD blocks) through the program's view (signals.c) */
__sighandler_t gt_signals_sysv_signal(int sig, __sighandler_t handler);
__sighandler_t gt_signals_sigset(int sig, __sighandler_t handler);
void gt_signals_die(int sig, const siginfo_t *info); /* in the handler: default action, same signal */
bool gt_signals_forward(int sig, siginfo_t *info, void *uc); /* in the handler: the program's own, if the view has one */

/* output.c: created as NAME.creating-PID, named once its schema is committed */
void gt_output_remember_dir(void);   /* at load: where a relative GPUTRACE_OUTPUT lives */
int gt_output_create(char *tmp_out, size_t cap, char *err, size_t errcap);
int gt_output_publish(const char *tmp, char *path_out, size_t cap, char *err, size_t errcap);
bool gt_output_discard(const char *tmp); /* could not be initialised: removed if still ours */

/* process.c */
long gt_rank(void); /* RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK; -1 if none */

#endif
