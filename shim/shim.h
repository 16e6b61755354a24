/* Internal interface of the shim: the event record, the queue between hooks and
 * the writer thread, and the entry points each module offers the others.
 * Data flows one way: hooks -> record -> queue -> writer -> SQLite. */
#ifndef GPUTRACE_SHIM_H
#define GPUTRACE_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UNW_LOCAL_ONLY   /* headers only: libunwind itself is dlopen()ed (unwind.c) */
#include <libunwind.h>

#include "schema_sql.h"

#define GT_EXPORT __attribute__((visibility("default")))
#define GT_TLS __thread __attribute__((tls_model("initial-exec")))
#define GT_LIKELY(x) __builtin_expect(!!(x), 1)
#define GT_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define GT_DEVICE_HOST (-1)
#define GT_DEVICE_UNKNOWN (-2)
#define GT_MAX_STACK_DEPTH 128

enum gt_event_flags {
    GT_EV_HAS_STREAM = 1u << 0, /* stream field is meaningful */
    GT_EV_HAS_SIZE = 1u << 1,   /* size known at record time (allocs) */
    GT_EV_HAS_AUX = 1u << 2,    /* aux carries an extra argument (cuMemMap's handle) */
};

/* One traced call: 56 bytes, so a queue slot (with its sequence number) is
 * exactly one cache line and producers never share a line with the writer. */
struct gt_event {
    uint64_t t_ns;       /* CLOCK_MONOTONIC, absolute */
    uint64_t ptr;        /* address or handle; 0 if the call failed */
    uint64_t size;
    union {
        uint64_t stream; /* GT_EV_HAS_STREAM: stream-ordered calls */
        uint64_t aux;    /* GT_EV_HAS_AUX: cuMemMap's handle (no stream) */
    };
    uint64_t stack_hash; /* 0 = no stack */
    int32_t tid;
    int32_t result;
    uint16_t api;        /* enum gt_api */
    int16_t device;      /* ordinal, GT_DEVICE_HOST or GT_DEVICE_UNKNOWN */
    uint32_t flags;      /* enum gt_event_flags */
};
_Static_assert(sizeof(struct gt_event) == 56, "event + sequence number = one cache line");

/* Configuration, read once from the environment by the constructor. */
struct gt_config {
    char output_pattern[4096]; /* GPUTRACE_OUTPUT, default gputrace-%p.db */
    int stack_depth;           /* GPUTRACE_STACK_DEPTH, default 32, 0 = off */
    bool quiet;                /* GPUTRACE_QUIET=1 */
    bool disabled;             /* GPUTRACE_DISABLE=1: pass everything through */
    uint32_t queue_events;     /* GPUTRACE_QUEUE_EVENTS, power of two */
    uint32_t queue_wait_ms;    /* GPUTRACE_QUEUE_WAIT_MS: how long a stalled writer may block a full queue before events drop */
    bool nvtx;                 /* GPUTRACE_NVTX, default 1: arrange NVTX injection */
    bool cupti;                /* GPUTRACE_CUPTI, default 1: CUPTI activity records */
    char cupti_path[4096];     /* GPUTRACE_CUPTI_PATH: this libcupti and no other */
    uint32_t sample_ms;        /* GPUTRACE_SAMPLE_MS, default 0 = off: NVML used-memory samples */
};
extern struct gt_config gt_config;

/* Why an event could not be recorded. Each has a row in the drops table. */
enum gt_drop_reason { GT_DROP_QUEUE_FULL, GT_DROP_UNFINISHED_AT_EXIT, GT_DROP_STACK_LOST, GT_DROP_COUNT };
extern _Atomic uint64_t gt_drops[GT_DROP_COUNT];
extern const char *const gt_drop_names[GT_DROP_COUNT];
extern const char *const gt_drop_meanings[GT_DROP_COUNT];

/* clock.c */
uint64_t gt_now_ns(void);

/* queue.c: bounded multi-producer single-consumer ring of events. */
struct gt_slot;
bool gt_queue_init(uint32_t capacity);
void gt_queue_discard(void);                         /* fork child: forget everything */
struct gt_reservation { struct gt_slot *slot; uint64_t pos; };
bool gt_queue_reserve(struct gt_reservation *r);     /* false: dropped (counted) */
void gt_queue_publish(const struct gt_reservation *r, const struct gt_event *ev);
int gt_queue_pop(struct gt_event *out, int max);     /* writer only; returns count */
bool gt_queue_empty_upto(uint64_t pos);              /* writer only */
uint64_t gt_queue_head(void);
void gt_queue_skip_pending(void);                    /* writer: give up on it at exit */

/* unwind.c: libunwind, dlopen()ed at the first CUDA call (not linked). */
struct gt_unwind {
    int (*backtrace)(void **buf, int size);
    unw_accessors_t *(*get_accessors)(unw_addr_space_t as);
    unw_addr_space_t local_addr_space;
};
extern struct gt_unwind gt_unw;
bool gt_unwind_load(void); /* false (and one stderr line) when libunwind is missing */

/* stacks.c: capture on the hot path, dedup by hash, hand new stacks to the writer. */
struct gt_stack_rec {
    struct gt_stack_rec *next;
    uint64_t hash;
    int depth;
    uintptr_t ips[];
};
bool gt_stacks_init(void);
void gt_stacks_discard(void);
uint64_t gt_stack_capture(void);                     /* hot path; 0 if off */
struct gt_stack_rec *gt_stacks_take_new(void);       /* writer: all new stacks, oldest first */

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
bool gt_hook_enter(void);   /* false: nested, disabled or stopped -> just call through */
void gt_hook_leave(void);
void gt_record_alloc(int api, int result, uint64_t ptr, uint64_t size, int device,
                     uint64_t stream, uint32_t flags);
struct gt_pending_free { struct gt_reservation res; bool reserved; struct gt_event ev; };
void gt_record_free_begin(struct gt_pending_free *p, int api, uint64_t ptr, uint64_t size, int device,
                          uint64_t stream, uint32_t flags);
void gt_record_free_end(struct gt_pending_free *p, int result);
int32_t gt_tid(void);

/* real.c: the functions we interpose, as the program would have reached them. */
void *gt_real_symbol(const char *name, const char *lib_hint);
unsigned long long gt_loaded_generation(void); /* changes with every dlopen/dlclose */

/* Every function the shim defines in place of a CUDA one (hooks_runtime.c,
 * hooks_driver.c, entrypoints.c): what dlsym and the entry-point queries hand
 * out instead of the real function. */
struct gt_hook {
    const char *name;     /* exported name, e.g. "cuMemAlloc_v2" */
    void *wrapper;        /* our definition */
    const char *lib;      /* hint for gt_real_symbol: "libcudart.so", "libcuda.so" */
    _Atomic(void *) real; /* the real definition, once found */
    _Atomic(unsigned long long) missed_at; /* gt_loaded_generation() of the last failed search */
};
struct gt_hook_table { struct gt_hook *hooks; size_t n; };
extern const struct gt_hook_table gt_runtime_hooks, gt_driver_hooks, gt_entry_hooks;
void *gt_hook_real(struct gt_hook *h);            /* resolves once; NULL while not loaded (a miss is
                                                    searched again only after a library load) */
void *gt_dlsym_real(void *handle, const char *name); /* glibc's dlsym, never ours */

/* lifecycle.c */
enum gt_state { GT_UNINIT, GT_STARTING, GT_ACTIVE, GT_STOPPED, GT_FAILED };
extern _Atomic int gt_state;
void gt_ensure_started(void);
void gt_stop(const char *reason);          /* drain, finalize, close; idempotent; only in the owner */
bool gt_owns_trace(void);                  /* false in a vfork child of the traced process */
void gt_restart_after_failed_exec(void);

/* hooks_process.c */
void gt_process_hooks_resolve(void);       /* find the real exec/_exit functions now */

/* writer.c */
struct gt_writer_summary { char path[4200]; uint64_t events, dropped, peak_device, peak_pool; };
bool gt_writer_start(void);
bool gt_writer_stop(const char *reason, struct gt_writer_summary *out, bool reopen_later);
bool gt_writer_resume(void);
void gt_writer_forget(void);               /* fork child */
void gt_writer_fork_prepare(void);
void gt_writer_fork_parent(void);

/* output.c */
int gt_output_create(char *path_out, size_t cap, char *err, size_t errcap);

#endif
