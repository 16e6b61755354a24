/* Unit tests of CUPTI's attachment while activity is sampled
 * (shim/cupti_attach.c), against a CUPTI of counters: which calls reach
 * CUPTI in which state, and that the program's threads (stop, exit, a
 * subscriber of its own, a signal handler's exit) always end with no detach
 * of ours left to run and our subscriber out of CUPTI's one slot, whatever
 * the writer was doing. Each case starts from a fresh state
 * (gt_attach_after_fork_child, as a fork child does). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cupti_attach.h"
#include "tap.h"

static _Atomic int subscribed, finalized, slot_busy;
static _Atomic bool call_left;   /* record.c's flag: a longjmp left a CUDA call */
static _Atomic(CUpti_CallbackFunc) cb;

static CUptiResult fake_subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc f, void *u)
{
    (void)u;
    if (slot_busy || subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscribed = 1;
    cb = f;
    *h = (CUpti_SubscriberHandle)&subscribed;
    return CUPTI_SUCCESS;
}

static CUptiResult fake_unsubscribe(CUpti_SubscriberHandle h)
{
    (void)h;
    subscribed = 0;
    return CUPTI_SUCCESS;
}

static CUptiResult fake_enable_domain(uint32_t e, CUpti_SubscriberHandle h, CUpti_CallbackDomain d)
{
    (void)e, (void)h, (void)d;
    return CUPTI_SUCCESS;
}

static CUptiResult fake_finalize(void)
{
    finalized++;
    subscribed = 0;
    return CUPTI_SUCCESS;
}

/* A CUDA call of the program returns: CUPTI calls its subscriber there. */
static void api_exit(void)
{
    CUpti_CallbackData d = {.callbackSite = CUPTI_API_EXIT};
    if (subscribed && cb)
        cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, 0, &d);
}

static void fresh(void)
{
    static const struct gt_attach_api api = {fake_subscribe, fake_unsubscribe, fake_enable_domain, fake_finalize,
                                             &call_left};
    gt_attach_after_fork_child();
    gt_attach_init(&api);
    subscribed = finalized = slot_busy = 0;
    call_left = false;
    cb = NULL;
}

/* The writer closes a window: claims CUPTI and asks for the detach. */
static int ask(const char **why)
{
    if (!gt_attach_begin())
        return -1;
    return gt_attach_end_detaching(why);
}

static void detach_at_the_next_api_exit_then_attach_again_for_a_window(void)
{
    fresh();
    const char *why;
    CHECK(ask(&why) == 1 && subscribed && !finalized);
    CHECK(!gt_attach_begin());               /* nothing of the writer's while a detach waits */
    api_exit();
    CHECK(finalized == 1 && !subscribed && !gt_attach_attached());
    api_exit();
    CHECK(finalized == 1);                   /* once */
    CHECK(!gt_attach_begin());               /* detached: no flush, which would attach it */
    CHECK(gt_attach_begin_window() == GT_ATTACH_DETACHED);
    gt_attach_end();
    CHECK(gt_attach_attached() && gt_attach_begin());
    gt_attach_end();
}

static void a_window_takes_back_a_detach_no_call_came_for(void)
{
    fresh();
    const char *why;
    CHECK(ask(&why) == 1 && subscribed);
    CHECK(gt_attach_begin_window() == GT_ATTACH_ATTACHED && !subscribed);
    gt_attach_end();
    api_exit();
    CHECK(!finalized);
}

static void stop_takes_back_a_waiting_detach_and_ends_the_windows(void)
{
    fresh();
    const char *why;
    CHECK(ask(&why) == 1);
    CHECK(gt_attach_take_over(false) == 1 && !subscribed);  /* attached: the caller flushes */
    api_exit();
    CHECK(!finalized);
    CHECK(!gt_attach_begin() && gt_attach_begin_window() == GT_ATTACH_LATER);
    CHECK(gt_attach_take_over(false) == 1);                 /* exit after stop: flushes again */
}

static void stop_when_detached_touches_nothing_and_a_failed_exec_resumes(void)
{
    fresh();
    const char *why;
    ask(&why);
    api_exit();
    CHECK(gt_attach_take_over(false) == 0);
    CHECK(gt_attach_begin_window() == GT_ATTACH_LATER);     /* no re-attach during exit */
    gt_attach_resume();
    CHECK(gt_attach_begin_window() == GT_ATTACH_DETACHED);
    gt_attach_end();
}

static void a_signal_handlers_exit_disarms_without_calling_cupti(void)
{
    fresh();
    const char *why;
    ask(&why);
    CHECK(gt_attach_take_over(true) == 0);
    CHECK(subscribed);                       /* no CUPTI call from the handler ... */
    api_exit();
    CHECK(!finalized);                       /* ... and no detach after it */
    fresh();
    ask(&why);
    api_exit();
    gt_attach_take_over(true);
    CHECK(gt_attach_begin_window() == GT_ATTACH_LATER);
}

static void a_programs_subscriber_gets_the_slot_and_no_detach_follows(void)
{
    fresh();
    const char *why;
    ask(&why);
    gt_attach_keep_attached("the program uses CUPTI itself");
    CHECK(!subscribed && gt_attach_attached());
    CHECK(ask(&why) == 0 && why && !subscribed);
    api_exit();
    CHECK(!finalized);
}

static void another_subscriber_in_the_slot_keeps_cupti_attached(void)
{
    fresh();
    slot_busy = 1;
    const char *why;
    CHECK(ask(&why) == 0 && why && gt_attach_attached() && gt_attach_begin());
    gt_attach_end();
}

/* The writer is inside a section when the program stops: the stop waits
 * for it and no detach is left armed. */
static void *writer_asks_late(void *arg)
{
    (void)arg;
    struct timespec ms = {0, 20000000};
    nanosleep(&ms, NULL);
    const char *why;
    gt_attach_end_detaching(&why); /* the section began before the stop */
    return NULL;
}

static void a_stop_during_the_writers_section_leaves_no_detach(void)
{
    fresh();
    CHECK(gt_attach_begin());
    pthread_t t;
    pthread_create(&t, NULL, writer_asks_late, NULL);
    int attached = gt_attach_take_over(false);
    pthread_join(t, NULL);
    CHECK(!subscribed);
    api_exit();
    CHECK(!finalized);
    CHECKF(attached == 1, "take_over said %d", attached);
}

/* After a longjmp left a CUDA call the driver may hold, for good, a lock that
 * CUPTI waits for (an H200, CUDA 13): a flush in the section never returns,
 * and cuptiFinalize at a program's API exit could hang that call. A graph
 * launch's keep_attached then waited 2 s on the section, every launch. */
static void after_a_call_left_no_detach_runs_and_no_graph_launch_waits(void)
{
    fresh();
    const char *why;
    CHECK(ask(&why) == 1 && subscribed);
    call_left = true;
    api_exit();
    CHECK(!finalized);                       /* the program's call is not held by a finalize */
    fresh();
    CHECK(gt_attach_begin());                /* the flush thread's section, never ended */
    call_left = true;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gt_attach_keep_attached("graphs");
    gt_attach_keep_attached("graphs");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(s < 0.5, "two graph launches took %.2f s", s);
    CHECK(gt_attach_take_over(true) == 0);   /* the stop after the jump: no wait, no flush */
}

/* ...but a detach still asked then is taken back: our subscriber kept CUPTI's
 * one slot from the program's own profiler for good (a review) */
static void after_a_call_left_a_pending_detach_gives_the_slot_back(void)
{
    fresh();
    const char *why;
    CHECK(ask(&why) == 1 && subscribed);
    call_left = true;
    gt_attach_keep_attached("graphs");
    CHECK(!subscribed && !finalized);
    CHECK(fake_subscribe(&(CUpti_SubscriberHandle){0}, NULL, NULL) == CUPTI_SUCCESS);   /* the program's */
}

/* A stop beside the flush thread's section does not wait for it (a flush
 * waiting on a hung call held the exit 2 s); beside the writer's, which may
 * be asking a detach or attaching CUPTI anew, it is not taken for a flush's */
static void a_stop_goes_on_beside_a_flush_not_beside_the_writers_section(void)
{
    fresh();
    CHECK(gt_attach_begin_flush());
    CHECK(gt_attach_take_over_beside_flush() == 1);   /* at once: attached, the caller's flush queues */
    gt_attach_end();                                  /* the flush ends: attached, off */
    CHECK(gt_attach_attached() && !gt_attach_begin());
    fresh();
    CHECK(gt_attach_begin());                          /* the writer's */
    CHECK(gt_attach_take_over_beside_flush() == 0);    /* waited it out (2 s), not taken for attached */
    gt_attach_end();
    CHECK(gt_attach_attached());
}

int main(void)
{
    TAP_RUN(detach_at_the_next_api_exit_then_attach_again_for_a_window);
    TAP_RUN(a_window_takes_back_a_detach_no_call_came_for);
    TAP_RUN(stop_takes_back_a_waiting_detach_and_ends_the_windows);
    TAP_RUN(stop_when_detached_touches_nothing_and_a_failed_exec_resumes);
    TAP_RUN(a_signal_handlers_exit_disarms_without_calling_cupti);
    TAP_RUN(a_programs_subscriber_gets_the_slot_and_no_detach_follows);
    TAP_RUN(another_subscriber_in_the_slot_keeps_cupti_attached);
    TAP_RUN(a_stop_during_the_writers_section_leaves_no_detach);
    TAP_RUN(after_a_call_left_no_detach_runs_and_no_graph_launch_waits);
    TAP_RUN(after_a_call_left_a_pending_detach_gives_the_slot_back);
    TAP_RUN(a_stop_goes_on_beside_a_flush_not_beside_the_writers_section);
    return tap_done();
}
