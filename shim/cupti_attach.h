/* CUPTI's attachment to the process while activity is sampled (cupti.c):
 * between windows CUPTI is detached (cuptiFinalize), since with it attached
 * every launch pays CUPTI's work, records enabled or not. Who moves the state:
 * - the writer (windows) and the flush thread (periodic flushes,
 *   cupti_flush.c): only from ATTACHED or DETACHED, through BUSY, never
 *   waiting;
 * - any thread's CUDA call (cupti_attach.c's API-exit callback): DETACH_ASKED
 *   -> FINALIZING -> DETACHED, the detach itself;
 * - the program's threads (stop, exit, a foreign activity client, a foreign
 *   subscriber): to a terminal state, or back from DETACH_ASKED, waiting
 *   (bounded) while another thread is BUSY or FINALIZING.
 * So CUPTI's finalize never runs beside any other CUPTI call of ours, and no
 * call of ours reaches CUPTI while it is detached but the writer's attach;
 * the one exception is cuptiActivityGetNextRecord (writer_cupti.c), which
 * walks a buffer already handed to us. */
#ifndef GPUTRACE_CUPTI_ATTACH_H
#define GPUTRACE_CUPTI_ATTACH_H

#include <stdatomic.h>
#include <stdbool.h>

#include <cupti.h>

struct gt_attach_api {
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
    CUptiResult (*finalize)(void);
    const _Atomic bool *call_left;   /* set once a longjmp left a CUDA call: no detach, no wait (NULL: never) */
};
void gt_attach_init(const struct gt_attach_api *api); /* once CUPTI is started; finalize may be NULL */

/* The writer: a section with CUPTI attached (false: it is not, or another
 * thread is at work: try at the next round). A window's section also takes
 * back a detach still waiting, or begins with CUPTI detached (the caller
 * attaches it again by registering anew). Each section is closed by
 * gt_attach_end (CUPTI attached) or gt_attach_end_detaching. */
enum { GT_ATTACH_LATER, GT_ATTACH_ATTACHED, GT_ATTACH_DETACHED };
bool gt_attach_begin(void);
bool gt_attach_begin_flush(void);   /* the flush thread's section: a flush (gt_attach_take_over_beside_flush) */
int gt_attach_begin_window(void);
void gt_attach_end(void);
/* The writer, inside a section: ask for the detach at the next CUDA call's
 * exit. False, with *why set: CUPTI stays attached (another subscriber holds
 * CUPTI's one slot, or the program subscribed: never again then). Closes the
 * section either way. */
bool gt_attach_end_detaching(const char **why);
bool gt_attach_attached(void);       /* CUPTI attached now (a read, for tests) */
bool gt_attach_may_hold_records(void);   /* not detached (nor detaching): CUPTI may hold records of ours */

/* The program's threads at stop, exit or when another CUPTI client takes over:
 * no more windows or detaches. True when CUPTI is attached (the caller may
 * flush); in a signal handler it only disarms a pending detach. */
bool gt_attach_take_over(bool in_signal_handler);
/* The same while the flush thread holds the section for a flush
 * (gt_attach_begin_flush: CUPTI is attached then): not waited for, that
 * flush's end leaves CUPTI attached and off; true (the caller's flush queues
 * behind it). Else as above. */
bool gt_attach_take_over_beside_flush(void);
void gt_attach_resume(void);           /* a failed exec: the trace goes on */
/* CUPTI must stay attached from now on, for the reason given (a static
 * string, said in the notes): a pending detach is taken back (CUPTI's
 * subscriber slot with it), and none is asked for again. The program's own
 * CUPTI session (cuptiFinalize would end it too); CUDA graphs (cupti.c). */
void gt_attach_keep_attached(const char *why);
void gt_attach_after_fork_child(void);

#endif
