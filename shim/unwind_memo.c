/* Native unwinding with a per-thread memo of whole stacks, checked against
 * the stack itself. A training step repeats a few hundred allocation paths;
 * libunwind's backtrace re-derives every frame of each one (about 37 ns a
 * frame on an H100 host: half the shim's time under cudaMallocAsync).
 *
 * The first time a path is seen from a given stack position, it is unwound
 * frame by frame and for every frame k we keep its return address ip[k] and
 * where on the stack that address lay (the slot just below the callee's
 * canonical frame address, as an offset from this function's frame). Next
 * time, at the same position, the stack is the same path if every kept slot
 * still holds its address; one load and compare a frame, no unwinding.
 *
 * Why a match means the same frames: induction from the innermost. The slots
 * of our own frames are fixed. If slot k holds ip[k], the frame above is the
 * function containing ip[k], stopped at ip[k]; its frame size at that
 * instruction is fixed by its unwind rule, so its caller's return address was
 * written by this very call at slot k+1 (not left over from an earlier one),
 * and checking it proves frame k+1 in turn. The argument needs each frame's
 * size to be fixed at its instruction, which holds for every frame except
 * those that allocate a variable amount of stack (alloca, VLAs, stack
 * realignment); there a stale copy of an address at the old slot could pass.
 * Such a false match needs every later slot to hold a stale match too, while
 * the frames really there overlap those slots, shifted. A path through a
 * signal frame (whose slot above holds what the interrupted code last popped,
 * which can pass the check) or through a frame whose return address is not
 * just below its callee's frame is marked when first unwound, and is always
 * unwound by libunwind's backtrace instead.
 * Reads stay inside the thread's stack: each checked slot is, by the same
 * induction, inside a live frame of this call.
 *
 * The memo: 128 sets of 16 stacks, keyed by this function's frame address
 * (the stack depth) mixed with the caller's hint (the Python frames' first
 * ids), sized for the default depth; 1.2 MB of address space a thread,
 * touched as used, mapped at a thread's first stack and handed to the next
 * thread when it exits. The same mapping holds the thread's Python frame ids
 * (pyframes.c) and its stack hashes known to be recorded (stacks.c), so that
 * they need no thread-local storage of their own. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "activity.h"
#include "shim.h"

/* Many paths share one key where the hint says nothing: PyTorch's autograd
 * thread runs no Python, and its backward functions reach the allocator at
 * the same depths. A set holds 16, and a wrong one fails its check within
 * the first frames where the paths part. */
#define SETS 128
#define WAYS 16
#define FRAMES 48                 /* GPUTRACE_STACK_DEPTH's default 32, 9 of ours, and some */
#define MAX_OFFSET (64u << 20)    /* a frame farther up than this: not a plain stack */

struct entry {
    uintptr_t base;               /* the frame address it was unwound from: keys can collide, offsets must not */
    int16_t n;                    /* frames; -1: not a plain call chain, always unwound */
    int16_t max;                  /* the frame count it was unwound for */
    uint32_t off[FRAMES];         /* each return address's slot, from the frame address */
    void *ip[FRAMES];
};

struct set {
    uint64_t key[WAYS];           /* 0: empty */
    uint8_t victim;               /* round-robin replacement */
};

struct memo {
    struct memo *next;            /* registry, push-only */
    _Atomic int in_use;
    struct set set[SETS];
    struct entry e[SETS][WAYS];
    struct gt_py_own py;          /* the thread's Python frame ids (pyframes.c) */
    struct gt_stack_memo stacks;  /* the thread's stack hashes known to be in the set (stacks.c) */
};

static _Atomic(struct memo *) registry;
static _Atomic uint64_t checked, differed;   /* GPUTRACE_UNWIND_CHECK's tally */
static GT_TLS struct memo *mine;
static GT_TLS bool no_memo;       /* no memory for one: unwind every time */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* A thread's memo goes to the next thread that needs one. The exiting thread
 * forgets it first: a destructor of another library that frees CUDA memory
 * after this one gets a memo of its own, never one another thread now uses. */
static void thread_exit(void *arg)
{
    mine = NULL;
    atomic_store_explicit(&((struct memo *)arg)->in_use, 0, memory_order_release);
}

static bool have_key;

static void make_key(void)
{
    have_key = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* This thread's memo: a free one of an exited thread (emptied: its entries
 * name another stack), else a new mapping. */
static struct memo *memo(void)
{
    if (GT_LIKELY(mine != NULL) || no_memo)
        return mine;
    pthread_once(&key_once, make_key);
    if (!have_key) {   /* no way to hand it on at exit: a memo a thread would leak */
        no_memo = true;
        return NULL;
    }
    struct memo *m;
    for (m = atomic_load(&registry); m; m = m->next) {
        int idle = 0;
        if (atomic_compare_exchange_strong(&m->in_use, &idle, 1))
            break;
    }
    if (m) {
        memset(m->set, 0, sizeof m->set);
        memset(&m->py, 0, sizeof m->py);
        m->stacks.generation = 0;   /* matches no set's: stacks.c empties it at its first use */
    } else {
        void *p = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            no_memo = true;
            return NULL;
        }
        m = p;
        atomic_store(&m->in_use, 1);
        m->next = atomic_load(&registry);
        while (!atomic_compare_exchange_weak(&registry, &m->next, m))
            ;
    }
    pthread_setspecific(exit_key, m);
    mine = m;
    return m;
}

/* Only a memo this thread already has (gt_unwind_memo makes it): a thread
 * that only frees, or whose stacks bypass the memo, maps nothing for it. */
struct gt_py_own *gt_unwind_memo_py_ids(void)
{
    return mine ? &mine->py : NULL;
}

struct gt_stack_memo *gt_unwind_memo_stack_hashes(void)
{
    return mine ? &mine->stacks : NULL;
}

/* Fork child: the registry's other memos belong to threads the child lacks. */
void gt_unwind_memo_after_fork_child(void)
{
    for (struct memo *m = atomic_load(&registry); m; m = m->next)
        if (m != mine)
            atomic_store(&m->in_use, 0);
    atomic_store(&checked, 0);   /* the child's note counts its own */
    atomic_store(&differed, 0);
}

static bool matches(const struct entry *e, uintptr_t base, int max)
{
    if (e->max != max || e->base != base)
        return false;
    for (int k = 1; k < e->n; k++)   /* frame 0: our own return address, the same every time */
        if (*(void *const *)(base + e->off[k]) != e->ip[k])
            return false;
    return true;
}

/* Unwinds frame by frame into buf, noting each return address's slot in e;
 * *plain false if some frame is not a plain call whose return address lies
 * just below its callee's frame. Not inlined: its frame is the first one
 * stepped over, as unw_backtrace's own is, so both give the same frames. */
__attribute__((noinline)) static int unwind_noting_slots(void **buf, int max, uintptr_t base, struct entry *e,
                                                         bool *plain)
{
    unw_context_t uc;
    unw_cursor_t c;
    *plain = true;
    if (gt_unw.getcontext(&uc) || gt_unw.init_local(&c, &uc)) {
        *plain = false;
        return 0;
    }
    int n = 0;
    while (n < max && gt_unw.step(&c) > 0) {
        unw_word_t ip, sp;
        /* a signal frame leaves the slot above it holding whatever the
         * interrupted code last popped: it could pass the check below */
        if (gt_unw.is_signal_frame(&c) > 0)
            *plain = false;
        if (gt_unw.get_reg(&c, UNW_REG_IP, &ip) || !ip || gt_unw.get_reg(&c, UNW_REG_SP, &sp))
            break;
        buf[n] = (void *)ip;
        uintptr_t slot = (uintptr_t)sp - sizeof(void *);
        if (n > 0 && (slot < base || slot - base >= MAX_OFFSET || *(void *const *)slot != (void *)ip))
            *plain = false;
        else if (n < FRAMES)
            e->off[n] = n > 0 ? (uint32_t)(slot - base) : 0;
        n++;
    }
    return n;
}

/* GPUTRACE_UNWIND_CHECK: does libunwind's own walk, from here, give the
 * memo's frames? The walk starts inside check() (and, in a ThreadSanitizer
 * build, inside its own stepping function): its frames are compared from the
 * return address into our caller on, as the memo's are from its frame 1. */
__attribute__((noinline)) static void check(const struct entry *e, int max)
{
    void *b[FRAMES + 4];
    int n = gt_unw.backtrace(b, max + 4), j = -1;
    for (int k = 0; k < 4 && k < n && e->n > 1; k++)
        if (b[k] == e->ip[1]) {
            j = k;
            break;
        }
    bool same = e->n <= 1 || (j >= 0 && n - j >= e->n - 1 && (e->n == max || n - j == e->n - 1) &&
                              !memcmp(b + j, e->ip + 1, (size_t)(e->n - 1) * sizeof *b));
    atomic_fetch_add_explicit(&checked, 1, memory_order_relaxed);
    if (!same)
        atomic_fetch_add_explicit(&differed, 1, memory_order_relaxed);
}

void gt_unwind_memo_note(void)
{
    uint64_t c = atomic_load(&checked);
    if (gt_config.unwind_check && gt_unw.backtrace)   /* 0 from the memo is said too: nothing was checked */
        gt_note("stacks", false, "unwind check: %llu stacks taken from the memo, %llu differed from libunwind's own",
                (unsigned long long)c, (unsigned long long)atomic_load(&differed));
}

/* libunwind's own walk, while its descriptors are its own (gt_unwind_usable) */
static inline int libunwind_backtrace(void **buf, int max)
{
    if (!gt_unwind_usable()) {
        gt_drop(GT_DROP_STACK_NOT_TAKEN);
        return 0;
    }
    return gt_unw.backtrace(buf, max);
}

/* unw_backtrace(buf, max), from the memo when this stack position last
 * unwound the same frames; hint: whatever else tells paths apart (0: none). */
__attribute__((noinline)) int gt_unwind_memo(void **buf, int max, uint64_t hint)
{
    uintptr_t base = (uintptr_t)__builtin_frame_address(0);
    struct memo *m = max <= FRAMES && gt_unw.step ? memo() : NULL;
    if (!m)
        return libunwind_backtrace(buf, max);
    uint64_t key = ((uint64_t)base ^ hint) * 0x9e3779b97f4a7c15ull;
    key = key ? key : 1;
    struct set *set = &m->set[key >> 57];
    struct entry *row = m->e[key >> 57];
    bool unplain = false;   /* a path here is unwound by libunwind alone: after the plain ones are tried */
    for (int w = 0; w < WAYS; w++) {
        if (set->key[w] != key)
            continue;
        struct entry *e = &row[w];
        if (e->n < 0) {
            unplain |= e->max == max && e->base == base;
        } else if (matches(e, base, max)) {
            gt_cost_count(GT_COST_MEMO_HITS);
            if (GT_UNLIKELY(gt_config.unwind_check))
                check(e, max);
            memcpy(buf, e->ip, (size_t)e->n * sizeof *buf);
            return e->n;
        }
    }
    if (unplain) {
        gt_cost_count(GT_COST_MEMO_UNPLAIN);
        return libunwind_backtrace(buf, max);
    }
    if (!gt_unwind_usable()) {   /* a new path needs libunwind's walk */
        gt_drop(GT_DROP_STACK_NOT_TAKEN);
        return 0;
    }
    int w = set->victim++ % WAYS;
    struct entry *e = &row[w];
    bool plain;
    int n = unwind_noting_slots(buf, max, base, e, &plain);
    e->max = (int16_t)max;
    e->base = base;
    set->key[w] = key;
    if (!plain) {   /* libunwind's own backtrace for this path, now and from now on (checked usable above) */
        gt_cost_count(GT_COST_MEMO_UNPLAIN);
        e->n = -1;
        return gt_unw.backtrace(buf, max);
    }
    memcpy(e->ip, buf, (size_t)n * sizeof *buf);
    e->n = (int16_t)n;
    gt_cost_count(GT_COST_MEMO_FILLS);
    return n;
}
