/* CUPTI activity (kernels, copies, memsets, the driver's memory records),
 * loaded at run time and started (lifecycle.c, gt_start_lazily) inside the
 * hook of the program's own first successful CUDA call. CUPTI stamps records with our
 * clock (CLOCK_MONOTONIC), so they share the events' timeline. Buffers filled
 * by CUPTI are pushed on a lock-free list that the writer drains.
 * Sampled activity (the default): records only in windows; between them CUPTI
 * is detached from the process (cuptiFinalize), since merely disabling the
 * kinds leaves CUPTI's per-launch work in place (measured on an H100: a launch
 * loop cost the same 1.10 with kernel records enabled as after disabling them;
 * tests/bench/RESULTS.md). The window's end, the detach and the next window's
 * re-attach are the writer's; the detach itself runs where CUPTI says it is
 * safe, at the exit of the next CUDA call of any thread (cupti_attach.c).
 * Only one client can own CUPTI's activity buffers: if another (torch.profiler,
 * Nsight) holds CUPTI we step aside with one stderr line and a note; if one
 * takes it later (we interpose cuptiActivityRegisterCallbacks) we flush, hand
 * it over cleanly and note when. Allocation capture never depends on CUPTI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "activity.h"
#include "cupti_attach.h"
#include "cupti_flush.h"
#include "cupti_load.h"
#include "cupti_windows.h"

#define BUF_BYTES (4u << 20)
#define FLUSH_EVERY_NS (500 * 1000000ull) /* hand over partly filled buffers this often */
#define DETACH_AFTER_NS (200 * 1000000ull)  /* a closed window's last kernels end before CUPTI detaches */
#define FLUSH_AT_STOP_WAIT_NS (1000 * 1000000ull) /* a stop's last flush: longer is a wedged CUPTI (cupti_flush.h) */
#define FLUSH_THREAD_END_WAIT_NS (100 * 1000000ull)

enum { C_IDLE, C_ON, C_YIELDED, C_UNAVAILABLE };
static bool ran_in_parent;   /* a fork child: CUPTI ran in the parent (its notes are not the child's) */

static struct {
    void *h;
    char path[4096];
    uint32_t version;
    CUptiResult (*get_version)(uint32_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*num_dropped)(CUcontext, uint32_t, size_t *);
    uint64_t next_flush;
    CUpti_ActivityKind enabled[8]; /* the kinds a window records */
    int n_enabled;
    bool sampling, recording;  /* activity recorded only in windows (gt_cupti_tick) */
    bool can_detach;           /* false once a detach could not be asked for: never again */
    uint64_t detach_due;
    uint64_t detach_flush;     /* the flush asked before a detach: its generation (cupti_flush.h), 0: none */
    struct gt_windows win;     /* when windows open and close (cupti_windows.c) */
} C;
static _Atomic int state = C_IDLE;
static _Atomic bool foreign;    /* someone else registered activity buffers */
static _Atomic bool realtime;   /* after handing CUPTI over: CUPTI's own default clock */
static _Atomic bool exiting;    /* a stop's flush was made (atexit's or the stop's): CUPTI may be torn down after it */
static _Atomic bool left_said;  /* call_left's note */
static _Atomic(struct gt_cupti_buf *) done; /* completed buffers, newest first */
static _Atomic uint64_t dropped;

static const char *errstr(CUptiResult r)
{
    const char *s = NULL;
    if (C.result_string && C.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* ---- callbacks CUPTI calls, on its threads or the program's ---- */

static uint64_t CUPTIAPI timestamp(void)
{
    if (GT_UNLIKELY(atomic_load_explicit(&realtime, memory_order_relaxed))) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    return gt_now_ns();
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    void *p = NULL;
    if (posix_memalign(&p, 8, BUF_BYTES) != 0)
        p = NULL; /* CUPTI drops the records and counts them */
    *buf = p;
    *size = p ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    size_t lost = 0;
    if (C.num_dropped && C.num_dropped(ctx, stream, &lost) == CUPTI_SUCCESS && lost)
        atomic_fetch_add(&dropped, lost);
    struct gt_cupti_buf *b = valid ? malloc(sizeof *b) : NULL;
    if (!b) {
        free(buf);
        return;
    }
    b->data = buf;
    b->valid = valid;
    b->next = atomic_load(&done);
    while (!atomic_compare_exchange_weak(&done, &b->next, b))
        ;
}

static void CUPTIAPI no_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *info)
{
    (void)u, (void)d, (void)id, (void)info;
}

static bool resolve(char *why, size_t cap)
{
    struct { void **fn; const char *name; } t[] = {
        {(void **)&C.get_version, "cuptiGetVersion"},
        {(void **)&C.result_string, "cuptiGetResultString"},
        {(void **)&C.subscribe, "cuptiSubscribe"},
        {(void **)&C.unsubscribe, "cuptiUnsubscribe"},
        {(void **)&C.register_callbacks, "cuptiActivityRegisterCallbacks"},
        {(void **)&C.register_timestamp, "cuptiActivityRegisterTimestampCallback"},
        {(void **)&C.enable, "cuptiActivityEnable"},
        {(void **)&C.disable, "cuptiActivityDisable"},
        {(void **)&C.flush_all, "cuptiActivityFlushAll"},
        {(void **)&C.next_record, "cuptiActivityGetNextRecord"},
        {(void **)&C.num_dropped, "cuptiActivityGetNumDroppedRecords"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!(*t[i].fn = gt_dlsym_real(C.h, t[i].name))) { /* glibc's: ours would hand back our wrappers */
            snprintf(why, cap, "%.512s lacks %s (too old)", C.path, t[i].name);
            return false;
        }
    struct gt_attach_api api = {C.subscribe, C.unsubscribe, NULL, NULL, &gt_cuda_call_left};
    *(void **)&api.enable_domain = gt_dlsym_real(C.h, "cuptiEnableDomain"); /* the detach's; none: CUPTI stays attached */
    *(void **)&api.finalize = gt_dlsym_real(C.h, "cuptiFinalize");
    gt_attach_init(&api);
    C.can_detach = true;
    return true;
}

/* Every kind a window records, off (records of work already launched still come). */
static void disable_kinds(void)
{
    for (int i = 0; i < C.n_enabled; i++)
        C.disable(C.enabled[i]);
}

/* Writer: a window opens. CUPTI attaches again where it was detached (any
 * CUPTI call does that; our clock and buffers are registered anew). False:
 * another thread is at work on CUPTI: the next round. A kind that would not
 * enable ends the sampling (what did enable records from then on). */
static bool window_open(void)
{
    int how = gt_attach_begin_window();
    if (how == GT_ATTACH_LATER)
        return false;
    if (how == GT_ATTACH_DETACHED) {
        C.register_timestamp(timestamp);
        C.register_callbacks(buffer_requested, buffer_completed);
    }
    bool ok = true;
    for (int i = 0; i < C.n_enabled; i++)
        ok = C.enable(C.enabled[i]) == CUPTI_SUCCESS && ok;
    gt_attach_end();
    if (!ok) { /* what enabled records from now on, CUPTI attached: no more windows */
        C.sampling = false;
        gt_note("kernels", false, "recording: a window's activity kinds would not all enable again; sampling stops "
                "here, CUPTI stays attached");
    }
    return true;
}

/* Writer, a moment after a window closed (its last records completed): what
 * CUPTI still holds is flushed, then the detach is asked for at the next CUDA
 * call's exit. If CUPTI's one subscriber slot is taken (torch.profiler's
 * callbacks, a tool) CUPTI stays attached with nothing enabled, and the notes
 * say so once. */
/* (false: not yet, at a later round: the flush asked first is still running
 * or was not made, or another thread works on CUPTI. The writer never
 * waits for it: a slow flush would hold every round) */
static bool ask_detach(void)
{
    if (!C.can_detach)
        return true;
    int r;
    if (!C.detach_flush) {
        r = gt_cupti_flush_on_thread(C.flush_all, 0, true, 0, &C.detach_flush);
        if (r != GT_FLUSH_DONE)   /* asked (seen at a later round), or busy */
            return false;
    } else {
        r = gt_cupti_flush_result(C.detach_flush);
        if (r == GT_FLUSH_RUNNING)
            return false;
        C.detach_flush = 0;
        if (r != GT_FLUSH_DONE)
            return false;   /* not made: asked again */
    }
    if (!gt_attach_begin())
        return false;
    const char *why;
    if (gt_attach_end_detaching(&why))
        return true;
    C.can_detach = false;
    gt_note("cupti", false, "between windows CUPTI stays attached with no activity enabled (%s): its cost per "
            "launch stays too", why);
    return true;
}

/* A longjmp left a CUDA call (record.c): the lock it held may stay held, and
 * a CUPTI call of ours would then wait for ever (cupti_flush.h). Said once. */
static bool call_left(void)
{
    if (GT_LIKELY(!atomic_load(&gt_cuda_call_left)))
        return false;
    if (atomic_load(&state) == C_ON && !atomic_exchange(&left_said, true))
        gt_note("cupti", true, "stopped: a longjmp left a CUDA call (drops: left_by_longjmp), and CUDA may still "
                "hold the lock that call took, which CUPTI's flush waits for; CUPTI is flushed no more, so the "
                "kernels, copies and memsets it still held are not recorded, nor any after but those of buffers "
                "it fills (allocation tracing goes on)");
    return true;
}

/* A stop takes CUPTI over (no more windows or detaches); true: the caller
 * flushes. Not waiting for the flush thread's section: a flush that waits on
 * a thread inside a long memory call held the exit 2 s, then was dropped
 * (a helper's probe); flush_at_stop waits for it 1 s, and says so. No call
 * (a signal handler's exit, or a CUDA call left): what CUPTI may hold is
 * counted lost (atomics only: a handler may have interrupted malloc). */
static bool take_over_at_stop(bool no_call)
{
    if (no_call) {
        gt_attach_take_over(true);
        if (gt_attach_may_hold_records())
            gt_drop(GT_DROP_CUPTI_NOT_FLUSHED);
        return false;
    }
    return gt_cupti_flush_in_flight() ? gt_attach_take_over_beside_flush() : gt_attach_take_over(false);
}

/* A stop's last flush, on the flush thread: the exit waits for it a second at
 * most. The thread then ends (a failed exec's next flush starts it again):
 * one left idle at the exit made ThreadSanitizer's atexit wait its 1 s for
 * other threads in every traced process of the thread stage. */
static void flush_at_stop(void)
{
    int r = gt_cupti_flush_on_thread(C.flush_all, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, false, FLUSH_AT_STOP_WAIT_NS,
                                     NULL);
    gt_cupti_flush_end(r == GT_FLUSH_DONE ? FLUSH_THREAD_END_WAIT_NS : 0);
    if (r == GT_FLUSH_DONE)
        return;
    gt_drop(GT_DROP_CUPTI_NOT_FLUSHED);
    gt_note("cupti", true, "the last flush %s: the kernels, copies and memsets CUPTI still held then may be "
            "missing", r == GT_FLUSH_SKIPPED ? "was not made (a fork was under way, or no thread could be started)"
                                             : "did not end within 1 s (CUDA may hold a lock CUPTI waits for)");
}

static void yield(void);

static void at_exit_flush(void)
{
    /* exit() from a signal handler: the interrupted code may hold CUPTI's lock */
    bool in_handler = gt_unwind_in_signal_frame(), no_call = in_handler || call_left();
    /* (exiting already: the writer, the last thread, made the stop's flush) */
    if (atomic_load(&state) == C_ON && !atomic_load(&exiting) && take_over_at_stop(no_call))
        flush_at_stop();
    atomic_store(&exiting, true);
}

/* Takes CUPTI if it is there and free; else says why, once. Called once,
 * by the thread whose CUDA call first succeeded, inside its hook after the
 * real call returned (so the program holds no CUDA lock of ours and CUDA is
 * initialised); its own CUDA calls pass through untraced. */
void gt_cupti_start(void)
{
    char why[1024] = "";
    if (atomic_load(&state) != C_IDLE) { /* a fork child */
        if (ran_in_parent)
            gt_note("cupti", false, "unavailable: CUPTI was started by the parent process before fork");
        else if (!gt_note_queued("cupti"))   /* (the parent's own note, if still queued, says why) */
            gt_note("cupti", false, "unavailable: as in the parent process, where it was off or unavailable");
        return;
    }
    if (!gt_config.cupti) {
        gt_note("cupti", false, "off: GPUTRACE_CUPTI=0");
        atomic_store(&state, C_UNAVAILABLE);
        return;
    }
    CUptiResult r;
    if (!(C.h = gt_cupti_load(C.path, sizeof C.path, why, sizeof why)) || !resolve(why, sizeof why))
        goto unavailable;
    if ((r = C.get_version(&C.version)) != CUPTI_SUCCESS || C.version < 130000 || C.version >= 140000) {
        snprintf(why, sizeof why, "%.512s has CUPTI API version %u; this gputrace reads CUDA 13's (130000 to 139999)",
                 C.path, C.version);
        goto unavailable;
    }
    /* Another client registered its buffers through our interposer below, or a
     * tool holds the one subscriber slot (Nsight Systems/Compute, cuda-gdb).
     * Not a usable test: cuptiActivityFlushAll, which the docs say fails until
     * buffers are registered; CUPTI 13 returns success anyway (seen on an H100). */
    if (atomic_load(&foreign)) {
        snprintf(why, sizeof why, "another CUPTI client in this process (torch.profiler?) already owns activity records");
        goto unavailable;
    }
    CUpti_SubscriberHandle sub;
    r = C.subscribe(&sub, no_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(why, sizeof why, "CUPTI is held by another tool (Nsight Systems, Nsight Compute, cuda-gdb, ...)");
        goto unavailable;
    }
    if (r != CUPTI_SUCCESS) {
        snprintf(why, sizeof why, "%.512s: cuptiSubscribe failed: %s (no usable CUDA driver?)", C.path, errstr(r));
        goto unavailable;
    }
    C.unsubscribe(sub); /* we need no callbacks: leave the slot to the program's own profiler */
    if ((r = C.register_timestamp(timestamp)) != CUPTI_SUCCESS ||
        (r = C.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        snprintf(why, sizeof why, "%.512s: registering with CUPTI failed: %s", C.path, errstr(r));
        goto unavailable;
    }
    /* The kinds GPUTRACE_CUPTI_KINDS names (kernels, copies and memsets by
     * default: MEMORY2 records duplicate the hooks' events, and CUPTI works for
     * them on every stream-ordered allocation; MEMORY_POOL records give a
     * pool's size only at its creation or trim; the pool's reservation the
     * ledger took from them is read from the pool instead, pools.c); kernels, copies
     * and memsets must enable, the driver's memory and pool records may not
     * exist in an older CUPTI. */
    static const struct { const char *key, *name; CUpti_ActivityKind k; bool required; } kinds[] = {
        {"kernel", "kernels", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true},
        {"memcpy", "memcpy", CUPTI_ACTIVITY_KIND_MEMCPY, true},
        {"memset", "memset", CUPTI_ACTIVITY_KIND_MEMSET, true},
        {"memory", "driver memory", CUPTI_ACTIVITY_KIND_MEMORY2, false},
        {"pool", "memory pools", CUPTI_ACTIVITY_KIND_MEMORY_POOL, false},
    };
    char list[256], extra[256] = "", unknown[128] = "";
    snprintf(list, sizeof list, "%s", gt_config.cupti_kinds);
    bool want[sizeof kinds / sizeof *kinds] = {false};
    for (char *save = NULL, *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
        size_t q = 0;
        while (q < sizeof kinds / sizeof *kinds && strcmp(w, kinds[q].key))
            q++;
        if (q < sizeof kinds / sizeof *kinds)
            want[q] = true;
        else if (strlen(unknown) + strlen(w) + 3 < sizeof unknown)
            snprintf(unknown + strlen(unknown), sizeof unknown - strlen(unknown), "%s'%.40s'", *unknown ? ", " : "", w);
    }
    if (*unknown)
        gt_note("cupti", true, "GPUTRACE_CUPTI_KINDS: ignoring %s (kinds: kernel, memcpy, memset, memory, pool)",
                unknown);
    /* Activity costs the program CUPTI's work on every launch, even with no
     * kind enabled, until CUPTI is detached: by default records come only in
     * windows, every one for GPUTRACE_KERNELS_FULL_S (and until the kernels'
     * names settle), then 1 s at a random moment of every
     * GPUTRACE_KERNELS_EVERY_S (cupti_windows.c; "kernels" notes say when).
     * Every kind is enabled once here, so that one CUPTI cannot give fails now. */
    uint64_t now = gt_now_ns();
    for (size_t q = 0; q < sizeof kinds / sizeof *kinds; q++) {
        if (!want[q])
            continue;
        if ((r = C.enable(kinds[q].k)) != CUPTI_SUCCESS) {
            if (!kinds[q].required)
                continue;
            disable_kinds();
            C.n_enabled = 0;
            snprintf(why, sizeof why, "%.512s: cuptiActivityEnable(%d) failed: %s", C.path, (int)kinds[q].k, errstr(r));
            goto unavailable;
        }
        C.enabled[C.n_enabled++] = kinds[q].k;
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "%s%s", *extra ? ", " : "", kinds[q].name);
    }
    C.sampling = C.n_enabled > 0 && gt_config.kernels_every_s > 1;
    C.recording = true;
    /* the first period counts GPU work where kernels, copies or memsets are
     * recorded (they tell it); with only pool or driver-memory records, the clock */
    bool work_kinds = false;
    for (int i = 0; i < C.n_enabled; i++)
        work_kinds |= C.enabled[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || C.enabled[i] == CUPTI_ACTIVITY_KIND_KERNEL ||
                      C.enabled[i] == CUPTI_ACTIVITY_KIND_MEMCPY || C.enabled[i] == CUPTI_ACTIVITY_KIND_MEMSET;
    gt_windows_start(&C.win, gt_config.kernels_full_s, gt_config.kernels_every_s, work_kinds, now,
                     now ^ ((uint64_t)getpid() << 32));
    if (C.sampling && !gt_config.kernels_full_s) { /* the first window comes later: detach now */
        disable_kinds();
        C.recording = false;
        C.detach_due = now;
    }
    atexit(at_exit_flush); /* runs before cudart's own teardown, registered earlier */
    C.next_flush = now + FLUSH_EVERY_NS;
    atomic_store(&state, C_ON);
    if (atomic_load(&foreign)) /* a client registered its buffers while we started: theirs */
        yield();
    gt_note("cupti", false, "on: %s (CUPTI %u): %s", C.path, C.version, *extra ? extra : "no activity kinds");
    if (C.sampling) {
        char full_s[24], rule[160];
        snprintf(full_s, sizeof full_s, "%u s", gt_config.kernels_full_s);
        gt_windows_first_period_words(&C.win, rule, sizeof rule);
        gt_note("kernels", false, "sampled: %s%s%s, then during 1 s at a random moment of every %u s; kernels, "
                "copies and memsets alike, CUPTI detached between (GPUTRACE_KERNELS_EVERY_S=0 records every kernel)%s",
                gt_config.kernels_full_s ? "every kernel for the first " : "no kernel before the first window",
                gt_config.kernels_full_s ? full_s : "", rule, gt_config.kernels_every_s,
                C.recording ? "; recording" : "; paused");
    }
    return;
unavailable:
    atomic_store(&state, C_UNAVAILABLE);
    gt_note("cupti", true, "unavailable: %s; kernels and copies are not recorded, allocation tracing goes on "
            "(GPUTRACE_CUPTI=0 turns CUPTI off)", why);
}

/* Writer thread: each kernel, copy and memset record of ours; new_name: a
 * kernel whose name no record had before. */
void gt_cupti_work_at(uint64_t start_ns, uint64_t end_ns, bool new_name)
{
    gt_windows_work_at(&C.win, start_ns, end_ns, new_name);
}

/* Writer thread, each round, outside SQLite: completed records reach us at
 * least every FLUSH_EVERY_NS even when a buffer is far from full; windows
 * open and close. No CUPTI call while it is detached: any would attach it. */
void gt_cupti_tick(uint64_t now)
{
    if (atomic_load(&state) != C_ON || atomic_load(&exiting) || call_left())
        return;
    /* completed records, even in partly filled buffers; only while attached
     * (the flush thread's section): a flush would attach it */
    if (now >= C.next_flush) {
        gt_cupti_flush_on_thread(C.flush_all, 0, true, 0, NULL);
        C.next_flush = now + FLUSH_EVERY_NS;
    }
    if (!C.sampling)
        return;
    if (C.detach_due && now >= C.detach_due && ask_detach())
        C.detach_due = 0;
    if (!gt_windows_due(&C.win, C.recording, now))
        return;
    if (!C.recording) {
        if (!window_open()) /* another thread is at work on CUPTI: the next round */
            return;
        C.detach_due = C.detach_flush = 0;
        C.recording = true;
        gt_windows_opened(&C.win, now);
        gt_note("kernels", false, "recording");
        return;
    }
    /* Kernels already launched complete on their own: their records are
     * flushed, and CUPTI detached, DETACH_AFTER_NS later. */
    if (!gt_attach_begin())
        return;
    disable_kinds();
    gt_attach_end();
    C.recording = false;
    C.detach_due = now + DETACH_AFTER_NS;
    gt_windows_closed(&C.win, now);
    gt_note("kernels", false, "paused");
}

/* At stop (exit, _exit, exec, the writer as the last thread): everything
 * CUPTI holds goes to the writer. After our atexit flush CUPTI may already be
 * torn down: nothing then; nor a second time at the exit glibc makes after
 * the last thread's stop (a failed exec's resume clears it). */
void gt_cupti_flush_for_stop(void)
{
    if (atomic_load(&state) != C_ON || atomic_exchange(&exiting, true))
        return;
    if (take_over_at_stop(call_left()))
        flush_at_stop();
}

/* A fatal signal's stop (lifecycle.c): no CUPTI call there (the signalled
 * thread may hold its lock); what CUPTI held is counted lost. Signal-safe. */
void gt_cupti_not_flushed_at_signal(void)
{
    if (atomic_load(&state) == C_ON && !atomic_exchange(&exiting, true))
        take_over_at_stop(true);
}

/* Another client registers its activity buffers: ours would go to it and its
 * timestamps would be ours. Flush ours, turn our kinds off, give CUPTI its
 * default clock back, and note when, before letting the call through. */
static void yield(void)
{
    int on = C_ON;
    if (!atomic_compare_exchange_strong(&state, &on, C_YIELDED))
        return;
    bool left = call_left();
    if (gt_attach_take_over(left) && !left) { /* detached: nothing of ours is left in CUPTI */
        C.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        disable_kinds(); /* the writer's window bookkeeping is the writer's */
    }
    atomic_store(&realtime, true);
    gt_note("cupti", true, "taken over: another CUPTI client (torch.profiler?) registered its own activity buffers; "
            "kernels and copies after this moment are not recorded, allocation tracing goes on");
}

/* CUPTI's entry points we stand in for, in a table (filled in below the
 * definitions) so that dlsym on a handle of libcupti hands them out too, as
 * it does the CUDA hooks: a program that dlopens CUPTI (JAX's profiler
 * does) reaches us as one that links it does. */
enum { H_REGISTER, H_SUBSCRIBE, H_SUBSCRIBE_V2, H_cuptiProfilerInitialize, H_cuptiPCSamplingEnable,
       H_cuptiPmSamplingEnable, H_cuptiSassMetricsEnable, N_CUPTI_HOOKS };
static struct gt_hook cupti_hooks[N_CUPTI_HOOKS];

GT_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                     CUpti_BuffersCallbackCompleteFunc comp)
{
    __typeof__(&cuptiActivityRegisterCallbacks) real =
        C.register_callbacks ? C.register_callbacks
                             : (__typeof__(&cuptiActivityRegisterCallbacks))gt_real_of(&cupti_hooks[H_REGISTER]);
    if (!real)
        return CUPTI_ERROR_NOT_INITIALIZED;
    if (req != buffer_requested) {
        atomic_store(&foreign, true);
        yield();
    }
    return real(req, comp);
}

/* A subscriber of the program's own (torch.profiler, a tool): CUPTI has one
 * subscriber slot, so a detach of ours still waiting for its API exit gives
 * it up first, and no detach is asked for after (windows then pause with
 * CUPTI attached, and the notes say so). Both entry points of CUDA 13. */
static void program_uses_cupti(void)
{
    if (atomic_load(&state) == C_ON)
        gt_attach_keep_attached("the program uses CUPTI itself: a subscriber or a profiling session of its own");
}

/* CUDA graphs: a graph launched while CUPTI was attached fails once CUPTI is
 * detached (cuptiFinalize), on later launches of the same graph exec: on an
 * H100 (CUDA 13, driver 580) a graph instantiated with CUPTI attached, or
 * instantiated detached and launched during a window, replayed after the
 * next detach with "unspecified launch failure", and the context was lost
 * (tests/gpu/check_attach.py). With CUPTI kept attached and the kinds only
 * disabled between windows, 26,000 replays across windows were exact. So the
 * first capture, instantiation or launch of a graph ends the detaching for
 * good, before the call runs (a detach waiting for this call's exit is taken
 * back); windows go on with CUPTI attached. Any state: CUPTI may not have
 * started yet, and a fork child's graphs are its own. */
void gt_cupti_program_uses_graphs(void)
{
    gt_attach_keep_attached("the program uses CUDA graphs, and a graph launched while CUPTI was attached fails "
                            "once CUPTI detaches");
}

GT_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user)
{
    __typeof__(&cuptiSubscribe) real =
        C.subscribe ? C.subscribe : (__typeof__(&cuptiSubscribe))gt_real_of(&cupti_hooks[H_SUBSCRIBE]);
    if (!real)
        return CUPTI_ERROR_NOT_INITIALIZED;
    program_uses_cupti();
    return real(sub, cb, user);
}

GT_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user,
                                        CUpti_SubscriberParams *params)
{
    __typeof__(&cuptiSubscribe_v2) real = (__typeof__(&cuptiSubscribe_v2))gt_real_of(&cupti_hooks[H_SUBSCRIBE_V2]);
    if (!real)
        return CUPTI_ERROR_NOT_INITIALIZED;
    program_uses_cupti();
    return real(sub, cb, user, params);
}

/* The program's own sessions of CUPTI's other APIs (profiler, PC, PM and SASS
 * sampling): cuptiFinalize would end them too, so no detach from then on.
 * Their parameter blocks pass through untouched. */
#define PROGRAM_SESSION(name)                                                    \
    GT_EXPORT CUptiResult name(void *params)                                     \
    {                                                                            \
        CUptiResult (*real)(void *) =                                            \
            (CUptiResult(*)(void *))gt_real_of(&cupti_hooks[H_##name]);           \
        if (!real)                                                               \
            return CUPTI_ERROR_NOT_INITIALIZED;                                  \
        program_uses_cupti();                                                    \
        return real(params);                                                     \
    }
PROGRAM_SESSION(cuptiProfilerInitialize)
PROGRAM_SESSION(cuptiPCSamplingEnable)
PROGRAM_SESSION(cuptiPmSamplingEnable)
PROGRAM_SESSION(cuptiSassMetricsEnable)

#define CUPTI_ROW(sym) {#sym, (void *)sym, "libcupti.so", NULL, 0}
static struct gt_hook cupti_hooks[N_CUPTI_HOOKS] = {
    [H_REGISTER] = CUPTI_ROW(cuptiActivityRegisterCallbacks),
    [H_SUBSCRIBE] = CUPTI_ROW(cuptiSubscribe),
    [H_SUBSCRIBE_V2] = CUPTI_ROW(cuptiSubscribe_v2),
    [H_cuptiProfilerInitialize] = CUPTI_ROW(cuptiProfilerInitialize),
    [H_cuptiPCSamplingEnable] = CUPTI_ROW(cuptiPCSamplingEnable),
    [H_cuptiPmSamplingEnable] = CUPTI_ROW(cuptiPmSamplingEnable),
    [H_cuptiSassMetricsEnable] = CUPTI_ROW(cuptiSassMetricsEnable),
};
const struct gt_hook_table gt_cupti_hooks = {cupti_hooks, N_CUPTI_HOOKS};

/* exec failed: the trace goes on, and so do the windows. */
void gt_cupti_resume_after_failed_exec(void)
{
    atomic_store(&exiting, false);
    if (atomic_load(&state) == C_ON)
        gt_attach_resume();
}

/* ---- the writer's side ---- */

bool gt_cupti_pending(void)
{
    return atomic_load_explicit(&done, memory_order_relaxed) != NULL;
}

struct gt_cupti_buf *gt_cupti_take(void)
{
    struct gt_cupti_buf *b = atomic_exchange(&done, NULL), *rev = NULL;
    while (b) {
        struct gt_cupti_buf *next = b->next;
        b->next = rev;
        rev = b;
        b = next;
    }
    return rev;
}

bool gt_cupti_next_record(uint8_t *data, size_t valid, void **rec)
{
    CUpti_Activity *r = *rec;
    bool ok = C.next_record(data, valid, &r) == CUPTI_SUCCESS;
    *rec = r;
    return ok;
}

uint64_t gt_cupti_dropped(void)
{
    return atomic_load(&dropped);
}

bool gt_cupti_ran(void)
{
    int s = atomic_load(&state);
    return s == C_ON || s == C_YIELDED;
}

/* Fork child: CUDA (and CUPTI) of the parent are not usable here; the
 * parent's buffers are the parent's to write. */
void gt_cupti_after_fork_child(void)
{
    atomic_store(&done, NULL);
    atomic_store(&dropped, 0);
    int s = atomic_load(&state);
    ran_in_parent = s == C_ON || s == C_YIELDED;
    if (ran_in_parent)
        atomic_store(&state, C_UNAVAILABLE);
    atomic_store(&exiting, false);
    atomic_store(&left_said, false);
    C.detach_flush = 0;
    gt_attach_after_fork_child();
    gt_cupti_flush_after_fork_child();
}
