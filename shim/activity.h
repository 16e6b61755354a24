/* Internal interface of everything around the allocation timeline: NVTX and
 * marker ranges, CUPTI activity, device facts, NVML samples and notes. Hooks
 * for these run on the program's threads and only queue records (struct
 * gt_rec, shim.h); the writer (writer_activity.c, writer_cupti.c: writer.h)
 * turns them into rows. */
#ifndef GPUTRACE_ACTIVITY_H
#define GPUTRACE_ACTIVITY_H

#include <stdbool.h>
#include <stdint.h>

#include "shim.h"

/* ranges.c: recording of ranges, marks and iterations (program threads). */
typedef const char *gt_domain; /* interned domain name; NULL = default domain */
char *gt_message_copy(const char *s);   /* a message as kept: malloc'd, capped, valid UTF-8 (ranges.c) */
int gt_range_push(int source, gt_domain dom, char *msg);  /* takes msg (malloc'd or NULL); returns depth */
int gt_range_pop(int source, gt_domain dom);              /* returns the depth popped, < 0 if none */
uint64_t gt_range_start(int source, gt_domain dom, char *msg); /* returns the range id */
void gt_range_end(uint64_t id);
void gt_mark(int source, gt_domain dom, char *msg);
void gt_iteration(long index, long batch_size);
void gt_ranges_trace_started(void);  /* lifecycle: emit what was opened before the trace */
void gt_ranges_after_fork_child(void);

/* nvtx.c */
void gt_nvtx_setup(void);            /* constructor: arrange NVTX injection */
gt_domain gt_domain_intern(const char *name);

/* notes.c: any thread, any time; written by the writer once a trace exists. */
void gt_note(const char *component, bool to_stderr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct gt_note_rec { struct gt_note_rec *next; uint64_t t_ns; bool to_stderr; char component[16]; char message[]; };
struct gt_note_rec *gt_notes_take(void);   /* writer: oldest first; caller frees */
bool gt_notes_pending(void);
bool gt_note_queued(const char *component);   /* one of this component is still to be written */
void gt_notes_after_fork_child(bool cupti_ran);   /* cupti_ran: gt_cupti_ran(), before cupti.c's fork handling */

/* cupti.c */
void gt_cupti_start(void);           /* once, in the hook of the first successful CUDA call */
void gt_cupti_tick(uint64_t now);    /* writer, outside SQLite: periodic flush */
void gt_cupti_work_at(uint64_t start_ns, uint64_t end_ns, bool new_name); /* writer: a kernel (of a new name), copy or memset */
void gt_cupti_flush_for_stop(void);  /* any thread at stop: hand every buffer to the writer */
void gt_cupti_not_flushed_at_signal(void);   /* a fatal signal's stop: CUPTI's last records counted lost */
void gt_cupti_after_fork_child(void);
/* cupti_flush.c, for a fork: no flush starts while one is pending, and the
 * fork waits a bounded while for one in flight */
void gt_cupti_flush_fork_prepare(void);
uint64_t gt_cupti_flush_in_flight(void);   /* the flush's generation, 0: none */
/* the writer, the process's last thread but this one: it ends (a wait of
 * wait_ns at most; false: it did not, stuck inside CUPTI) */
bool gt_cupti_flush_end(uint64_t wait_ns);
pid_t gt_cupti_flush_tid(void);   /* the flush thread's (0: none): the writer's test of the last thread */
void gt_cupti_flush_fork_parent(void);
bool gt_cupti_ran(void);   /* CUPTI is on (or yielded): what a fork child's inherited notes then misdescribe */
void gt_cupti_resume_after_failed_exec(void);
struct gt_cupti_buf { struct gt_cupti_buf *next; uint8_t *data; size_t valid; };
struct gt_cupti_buf *gt_cupti_take(void);  /* writer: completed buffers, oldest first */
bool gt_cupti_pending(void);
bool gt_cupti_next_record(uint8_t *data, size_t valid, void **rec);
uint64_t gt_cupti_dropped(void);

/* devices.c: filled once by the writer's tick after CUDA is ready. */
struct gt_device_info {
    char name[256];
    char uuid[64];           /* GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi */
    char pci_bus_id[32];
    uint64_t total_bytes;
    int cc_major, cc_minor;
    bool has_uuid, has_total, has_cc, has_pci;
};
#define GT_MAX_DEVICES 64
struct gt_devices {
    int count;               /* -1: could not be read */
    int driver_version, runtime_version; /* 0: unknown */
    struct gt_device_info dev[GT_MAX_DEVICES];
};
bool gt_devices_read(struct gt_devices *out);

/* nvml.c: sampling of used memory, GPUTRACE_SAMPLE_MS. */
struct gt_mem_sample {
    uint64_t t_ns;
    int device;
    uint64_t used, total;
    int64_t process;     /* < 0: unknown */
    int64_t threshold;   /* a pool's release threshold (INT64_MAX for more); < 0 unknown */
    int64_t reserved;    /* NVML: of used, the driver's and firmware's own; < 0 unknown */
    int64_t others;      /* NVML: of used, the other processes it lists; < 0 unknown */
};
bool gt_nvml_open(const struct gt_devices *devs, bool asked); /* false: unavailable (noted; on stderr if asked) */
int gt_nvml_sample(struct gt_mem_sample *out, int max);  /* one sample per device */
void gt_nvml_after_fork_child(void);

/* pools.c: the stream-ordered pool's reservation, read by the writer. */
/* Each fills out's used (reserved), total (in use) and threshold; t_ns and device are the caller's. */
bool gt_pool_read(int device, struct gt_mem_sample *out);         /* the device's current pool */
bool gt_graph_memory_read(int device, struct gt_mem_sample *out); /* graphs' allocation nodes */

#endif
