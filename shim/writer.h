/* Internal interface of the writer's parts, all on the writer thread, all
 * writing through db.c: writer.c (the thread, its loop and transactions)
 * calls writer_events.c (allocation events and their accounting, stacks,
 * threads, counters), writer_activity.c (ranges, marks, iterations, notes,
 * devices, samples; CUPTI through writer_cupti.c) and process.c (the
 * processes row). None of them calls writer.c. */
#ifndef GPUTRACE_WRITER_H
#define GPUTRACE_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim.h"

/* writer_open.c: the trace file opened (a new one when create, else path
 * again); *dev and *ino: the file as opened, 0 when unknown */
bool gt_writer_open(char *path, size_t path_size, uint64_t start_unix, uint64_t start_mono, bool create,
                    dev_t *dev, ino_t *ino);

/* writer_events.c */
void gt_events_begin(uint64_t start_mono);        /* a new trace: time 0 */
void gt_events_write(const struct gt_rec *rec);   /* an allocation call (its row, its accounting) */
void gt_events_free_result(const struct gt_rec *rec);   /* GT_REC_FREE_RESULT: a taken free's row corrected */
#define GT_TAKEN_ROWS_MAX 64   /* frees written while their call runs, kept track of at once */
void gt_events_write_thread(int32_t tid);         /* the threads row of tid, once */
void gt_events_write_stacks(struct gt_stack_rec *r); /* and frees them */
void gt_events_write_pyframes(struct gt_pyframe_rec *r); /* and frees them; before the stacks taken with them */
void gt_events_write_counters(void);              /* processes counters and drops, at each commit */
void gt_events_committed(bool ok);                /* the commit's result: its events written or lost */
void gt_events_summary(struct gt_writer_summary *s);   /* events, dropped and the peaks */
void gt_events_forget(void);                      /* fork child */
uint64_t gt_events_alloc_devices(void);            /* devices with device or pool allocations; any thread */
uint64_t gt_events_pool_devices(uint64_t *changes); /* devices (bit per ordinal < 64) with pool
                                                     allocations, any thread; *changes (writer
                                                     thread only; NULL elsewhere) counts pool events */

/* writer_activity.c */
void gt_activity_begin(uint64_t start_mono);
void gt_activity_tick(void);                       /* outside SQLite, each writer round */
void gt_activity_cuda_ready(bool (*wake)(void));   /* program thread, first successful CUDA call */
bool gt_activity_pending(void);                    /* anything for gt_activity_write? */
void gt_activity_write(void);                      /* inside the writer's transaction */
void gt_activity_stop_sample(void);                /* stopping: the ledger's last NVML sample */
void gt_activity_stop_pools(void);                 /* stopping: the pools' last reservation */
void gt_activity_record(struct gt_rec *rec);       /* a range, mark or iteration; released after */
void gt_activity_forget(void);                     /* fork child: the parent's state is not ours */

/* writer_cupti.c */
void gt_cupti_write_buffers(uint64_t start_mono);  /* every completed CUPTI buffer, freed */
void gt_cupti_writer_forget(void);                 /* fork child */

/* window.c: the flight recorder (GPUTRACE_WINDOW_S) */
bool gt_window_begin(uint64_t start_mono);         /* a new trace, in its creation transaction */
void gt_window_live(int memory, int device, int64_t delta, int what); /* what: 1 alloc, -1 free, 0 other */
void gt_window_failed(int memory, int device);     /* a failed call */
void gt_window_row(int space, uint64_t ptr, int64_t id); /* the alloc row of a live allocation; 0: freed */
int64_t gt_window_row_of(int space, uint64_t ptr);       /* that row now; 0: none */
bool gt_window_pin(int64_t id);    /* a free's row kept while its call runs (writer_events.c) */
void gt_window_unpin(int64_t id);
void gt_window_unfree(int memory, int device, int64_t size, bool failed); /* a free counted that failed after all */
void gt_window_row_clear(int space, uint64_t ptr, int64_t id); /* that row freed, unless ptr is another's now */
void gt_window_tick(uint64_t now);                 /* between transactions: summaries, prune */
void gt_window_stop(uint64_t now);                 /* in the last transaction */
void gt_window_forget(void);                       /* fork child */

/* process.c */
bool gt_process_row(uint64_t start_unix_ns, uint64_t start_mono_ns);
void gt_process_end(uint64_t end_ns, const char *reason);
void gt_process_reopen(void);                      /* resumed after a failed exec */

#endif
