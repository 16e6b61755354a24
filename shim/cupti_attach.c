/* CUPTI's attachment while activity is sampled: the state machine of
 * cupti_attach.h. CUPTI's header says cuptiFinalize is safe at the exit of a
 * CUDA runtime or driver call: the detach subscribes a callback and runs
 * there, on whichever thread returns from CUDA first (the program's, or the
 * writer's own device queries). */
#include <stdatomic.h>
#include <time.h>

#include "cupti_attach.h"

enum {
    A_ATTACHED,
    A_BUSY,          /* one thread works on CUPTI; only it leaves this state */
    A_DETACH_ASKED,  /* our subscriber waits for an API exit */
    A_FINALIZING,    /* that exit's thread detaches CUPTI */
    A_DETACHED,
    A_OFF_ATTACHED,  /* terminal: taken over or stopped, CUPTI attached */
    A_OFF_DETACHED,  /* terminal, CUPTI detached */
};
static _Atomic int st = A_ATTACHED;
/* Why CUPTI must never be detached again (the program has CUPTI sessions of
 * its own, or CUDA graphs); NULL while it may be. */
static _Atomic(const char *) keep_attached;
/* ...and no detach can come any more: a caller saw a state with no detach
 * asked or in reach after storing the reason (graph launches then pay one load) */
static _Atomic bool kept;
/* Set first by whoever takes over (stop, exit, a foreign client): a thread
 * leaving BUSY or FINALIZING after the take-over gave up waiting for it
 * reads it after its own store and moves to the terminal state itself
 * (each side stores, then reads the other's: one of them sees it). */
static _Atomic bool off;
/* The section BUSY stands for is a flush's (gt_attach_begin_flush): CUPTI is
 * attached and stays so through it */
static _Atomic bool flush_section;
static struct gt_attach_api api;
static CUpti_SubscriberHandle sub;

void gt_attach_init(const struct gt_attach_api *a)
{
    api = *a;
}

/* a longjmp left a CUDA call (record.c's flag, through the api) */
static bool call_left(void)
{
    return api.call_left && atomic_load(api.call_left);
}

static bool move(int from, int to)
{
    return atomic_compare_exchange_strong(&st, &from, to);
}

static void CUPTIAPI detach_on_api_exit(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *info)
{
    (void)u, (void)id;
    const CUpti_CallbackData *cb = info;
    if ((d != CUPTI_CB_DOMAIN_RUNTIME_API && d != CUPTI_CB_DOMAIN_DRIVER_API) || !cb ||
        cb->callbackSite != CUPTI_API_EXIT || call_left() || /* (cuptiFinalize could wait for ever) */
        atomic_load(&off) ||   /* a stop: the taker-over takes the detach back, none runs beside its flush */
        !move(A_DETACH_ASKED, A_FINALIZING))
        return;
    if (atomic_load(&keep_attached)) { /* a reason came after the detach was asked: its caller takes it back */
        atomic_store(&st, A_DETACH_ASKED);
        return;
    }
    api.finalize(); /* our subscription goes with CUPTI's state */
    atomic_store(&st, A_DETACHED);
    if (atomic_load(&off))
        move(A_DETACHED, A_OFF_DETACHED);
}

bool gt_attach_begin(void)
{
    return !atomic_load(&off) && move(A_ATTACHED, A_BUSY);
}

bool gt_attach_begin_flush(void)
{
    if (!gt_attach_begin())
        return false;
    atomic_store(&flush_section, true);
    return true;
}

int gt_attach_begin_window(void)
{
    if (atomic_load(&off))
        return GT_ATTACH_LATER;
    if (move(A_ATTACHED, A_BUSY))
        return GT_ATTACH_ATTACHED;
    if (move(A_DETACH_ASKED, A_BUSY)) { /* no CUDA call came since: our detach is taken back */
        api.unsubscribe(sub);
        return GT_ATTACH_ATTACHED;
    }
    return move(A_DETACHED, A_BUSY) ? GT_ATTACH_DETACHED : GT_ATTACH_LATER;
}

void gt_attach_end(void)
{
    atomic_store(&flush_section, false);
    atomic_store(&st, A_ATTACHED);
    /* a resume (a failed exec) between the read of off and the move finds
     * ATTACHED and leaves it: read off again after the move (a review) */
    if (atomic_load(&off) && move(A_ATTACHED, A_OFF_ATTACHED) && !atomic_load(&off))
        move(A_OFF_ATTACHED, A_ATTACHED);
}

/* Our detach still waiting is taken back (from BUSY, claimed by the caller). */
static void unsubscribe_to(int to)
{
    api.unsubscribe(sub);
    atomic_store(&st, to);
}

bool gt_attach_end_detaching(const char **why)
{
    *why = NULL;
    if (!api.finalize || !api.enable_domain)
        *why = "this CUPTI has no cuptiFinalize";
    else if (atomic_load(&keep_attached))
        *why = atomic_load(&keep_attached);
    else {
        CUptiResult r = api.subscribe(&sub, detach_on_api_exit, NULL);
        if (r == CUPTI_SUCCESS && api.enable_domain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
            api.enable_domain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS) {
            atomic_store(&st, A_DETACH_ASKED);
            if (atomic_load(&off) && move(A_DETACH_ASKED, A_BUSY))
                unsubscribe_to(A_OFF_ATTACHED);
            else if (atomic_load(&keep_attached) && move(A_DETACH_ASKED, A_BUSY))
                unsubscribe_to(A_ATTACHED);   /* a reason came while we subscribed: no detach after all */
            return true;
        }
        if (r == CUPTI_SUCCESS)
            api.unsubscribe(sub);
        *why = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "another subscriber holds CUPTI's one slot"
                                                                   : "subscribing to CUPTI's callbacks failed";
    }
    gt_attach_end();
    return false;
}

bool gt_attach_may_hold_records(void)
{
    int s = atomic_load(&st);
    return s != A_DETACHED && s != A_OFF_DETACHED && s != A_FINALIZING;
}

bool gt_attach_attached(void)
{
    int s = atomic_load(&st);
    return s == A_ATTACHED || s == A_OFF_ATTACHED;
}

/* The state once no other thread is at work (BUSY and FINALIZING last a few
 * CUPTI calls); after 2 s, whatever it is. */
static int settled(void)
{
    int s = atomic_load(&st);
    for (int i = 0; i < 2000 && (s == A_BUSY || s == A_FINALIZING); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        s = atomic_load(&st);
    }
    return s;
}

bool gt_attach_take_over(bool in_signal_handler)
{
    atomic_store(&off, true);
    if (in_signal_handler) { /* CUPTI's lock may be held by the interrupted code: no CUPTI call, no wait */
        if (!move(A_DETACH_ASKED, A_OFF_ATTACHED) && !move(A_ATTACHED, A_OFF_ATTACHED))
            move(A_DETACHED, A_OFF_DETACHED);
        return false;
    }
    for (;;) {
        switch (settled()) {
        case A_ATTACHED:
            if (move(A_ATTACHED, A_OFF_ATTACHED))
                return true;
            break;
        case A_DETACH_ASKED:
            if (move(A_DETACH_ASKED, A_BUSY)) {
                unsubscribe_to(A_OFF_ATTACHED);
                return true;
            }
            break;
        case A_DETACHED:
            if (move(A_DETACHED, A_OFF_DETACHED))
                return false;
            break;
        case A_OFF_ATTACHED:
            return true;
        default: /* detached; or another thread still at work after 2 s, which goes off itself (off) */
            return false;
        }
    }
}

bool gt_attach_take_over_beside_flush(void)
{
    atomic_store(&off, true);
    /* the flush thread's section (not the writer's, which may be asking a
     * detach or attaching CUPTI again): its end reads off (gt_attach_end) */
    if (atomic_load(&st) == A_BUSY && atomic_load(&flush_section))
        return true;
    return gt_attach_take_over(false);
}

void gt_attach_resume(void)
{
    atomic_store(&off, false);
    if (!move(A_OFF_ATTACHED, A_ATTACHED))
        move(A_OFF_DETACHED, A_DETACHED);
}

void gt_attach_keep_attached(const char *why)
{
    if (atomic_load_explicit(&kept, memory_order_acquire))
        return;   /* every graph launch comes here: one load */
    const char *none = NULL;
    if (!atomic_load(&keep_attached)) /* the first reason is the one said */
        atomic_compare_exchange_strong(&keep_attached, &none, why);
    /* A writer in BUSY may have read no reason yet and be about to ask for
     * a detach: wait for it, and take the detach back. (If it outlasts the
     * wait, the writer sees the reason after asking and takes it back
     * itself, and the API-exit callback declines to detach: see above.) */
    /* After a longjmp left a CUDA call (record.c) the section may be held for
     * good by a flush that waits on the lock the call left held, and no
     * detach comes any more (the callback declines it): no wait; a detach
     * still asked is taken back once, or our subscriber would keep CUPTI's
     * one slot from the program's profiler for good (a review) */
    int s = atomic_load(&st);
    if (call_left()) {
        if (move(A_DETACH_ASKED, A_BUSY)) {
            api.unsubscribe(sub);
            gt_attach_end();
        }
        atomic_store_explicit(&kept, true, memory_order_release);
        return;
    }
    if (s != A_BUSY && s != A_DETACH_ASKED && s != A_FINALIZING) {
        atomic_store_explicit(&kept, true, memory_order_release);
        return;
    }
    while (settled() == A_DETACH_ASKED)
        if (move(A_DETACH_ASKED, A_BUSY)) {
            api.unsubscribe(sub);
            gt_attach_end(); /* off may have come meanwhile */
            atomic_store_explicit(&kept, true, memory_order_release);
            return;
        }
}

void gt_attach_after_fork_child(void)
{
    /* the parent's CUPTI is not the child's to touch: a child that starts
     * CUDA (and CUPTI) of its own begins afresh */
    atomic_store(&st, A_ATTACHED);
    atomic_store(&off, false);
    atomic_store(&flush_section, false);
    atomic_store(&keep_attached, NULL);
    atomic_store(&kept, false);
}
