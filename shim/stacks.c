/* Call stacks on the hot path: libunwind's fast backtrace (unwind.c), our own frames
 * skipped, the calling thread's Python frames (pyframes.c) put in place of the
 * native _PyEval_EvalFrameDefault frame that runs them (appended where the
 * native stack stops before reaching it; a thread with none of its own gets
 * those of the thread waiting in backward(), pybackward.c), then deduplicated by a 64-bit hash of
 * the whole list in a lock-free set. Only the first sighting of a stack
 * allocates (its record, handed to the writer through a lock-free list); every
 * event carries just the hash. */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "activity.h"
#include "shim.h"
#include "stack_hash.h"

#define SET_BITS 18 /* 262144 distinct stacks before the set is full */
#define SET_SIZE (1u << SET_BITS)
#define MAX_PROBE 64

static _Atomic uint64_t *seen;            /* open-addressing set of stack hashes */
/* A thread's last hashes found in the set, direct-mapped: a training step
 * repeats a few hundred stacks, and a probe of the shared 2-MiB set can miss
 * the CPU's cache (its L2 holds 1-2 MiB on the GPU hosts). Valid while the
 * thread's generation is the set's (a fork child's set starts empty). 1,024
 * in the thread's memo mapping (unwind_memo.c; 64 in thread-local storage
 * held a few hundred stacks poorly); a thread with no mapping (its stacks
 * never unwound, or no memory for one) probes the set every time. */
static _Atomic uint32_t set_generation = 1;
/* Frames unwound beyond the depth kept, for the shim's own frames at the top
 * (skipped): 4 on a hook's usual path; a thread raises its own when a deeper
 * path of ours took frames the stack needed (and unwinds that once again). */
#define EXTRA_MIN 5
#define EXTRA_MAX 9
static GT_TLS int extra;
static _Atomic(struct gt_stack_rec *) new_stacks;
static uintptr_t self_lo, self_hi;        /* our own text: frames there are skipped */
/* Frames per stack in use: GPUTRACE_STACK_DEPTH, or 0 once libunwind was
 * found missing (kept across fork: a child does not try, or say so, again). */
static int depth = -1;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t probe = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (probe >= lo && probe < hi) {
            self_lo = lo;
            self_hi = hi;
            return 1;
        }
    }
    return 0;
}

bool gt_stacks_init(void)
{
    if (depth < 0)
        depth = gt_config.stack_depth;
    if (depth <= 0)
        return true;
    /* the set first: without it (no memory) libunwind is not loaded either */
    void *mem = mmap(NULL, SET_SIZE * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return false;
    char why[600];
    if (!gt_unwind_load(why, sizeof why)) {
        /* a note: said on stderr only by a process whose trace file is really
         * written (under a tight ulimit -v the file may fail next: one line) */
        gt_note("stacks", true, "off: %s; allocations are still traced", why);
        munmap(mem, SET_SIZE * sizeof(uint64_t));
        depth = 0;   /* recorded as such in processes.stack_depth */
        return true;
    }
    seen = mem;
    dl_iterate_phdr(find_self, (void *)(uintptr_t)&gt_stacks_init);
    gt_py_init();
    return true;
}

int gt_stacks_depth(void)
{
    return depth < 0 ? gt_config.stack_depth : depth;
}

void gt_stacks_discard(void)
{
    if (seen)
        munmap((void *)seen, SET_SIZE * sizeof(uint64_t));
    seen = NULL;
    atomic_fetch_add(&set_generation, 1);
    gt_py_discard();
    gt_py_backward_after_fork();
    struct gt_stack_rec *r = atomic_exchange(&new_stacks, NULL);
    while (r) {
        struct gt_stack_rec *n = r->next;
        free(r);
        r = n;
    }
}

/* Returns true if h was not in the set (the caller publishes the stack). When
 * the set is full every stack counts as new: the writer dedups again, so only
 * the hot-path shortcut is lost, not data. */
static bool insert_new(uint64_t h)
{
    uint32_t i = (uint32_t)(h >> (64 - SET_BITS));
    for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (SET_SIZE - 1)) {
        uint64_t cur = atomic_load_explicit(&seen[i], memory_order_relaxed);
        if (cur == h)
            return false;
        if (cur == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong_explicit(&seen[i], &expected, h, memory_order_relaxed,
                                                        memory_order_relaxed))
                return true;
            if (expected == h)
                return false;
        }
    }
    return true;
}

/* Takes h out of the set again (its record could not be made): the next
 * sighting publishes it. A stack inserted after h in its probe chain may then
 * be taken for new once more: its record comes twice, and the writer keeps one. */
static void forget(uint64_t h)
{
    uint32_t i = (uint32_t)(h >> (64 - SET_BITS));
    for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (SET_SIZE - 1)) {
        uint64_t expected = h;
        if (atomic_compare_exchange_strong_explicit(&seen[i], &expected, 0, memory_order_relaxed,
                                                    memory_order_relaxed) ||
            expected == 0)
            break;
    }
    /* a thread that found h in the set before it was taken out keeps it in
     * its memo and would never publish it: every memo starts again, after
     * the removal (a malloc failed: rare) */
    atomic_fetch_add(&set_generation, 1);
}

/* Native frames [0, n) with each eval loop's frame replaced by its Python
 * frames (py segment k for the k-th such frame, innermost first); segments
 * left when the native frames run out (the depth limit, or an unwinder that
 * stopped early) follow them. Returns the length written to out. */
static int interleave(const uintptr_t *ips, int n, const struct gt_py_stack *py, bool in_place, uintptr_t *out)
{
    int o = 0, seg = 0;
    uintptr_t eval_lo = 0, eval_span = 0;   /* (read once: tested against every native frame) */
    if (in_place)
        gt_py_eval_range(&eval_lo, &eval_span);
    for (int i = 0; i < n; i++) {
        if (in_place && seg < py->nseg && ips[i] - eval_lo < eval_span) {
            for (int k = seg ? py->seg_end[seg - 1] : 0; k < py->seg_end[seg]; k++)
                out[o++] = (uintptr_t)py->ids[k];
            seg++;
        } else {
            out[o++] = ips[i];
        }
    }
    for (int k = seg ? py->seg_end[seg - 1] : 0; k < py->n; k++)
        out[o++] = (uintptr_t)py->ids[k];
    return o;
}

/* The first time a hash is seen, queues the frames for the writer. */
static uint64_t publish(const uintptr_t *ips, int kept)
{
    if (kept <= 0)
        return 0;
    uint64_t t = gt_cost_ticks();
    uint64_t h = gt_stack_hash(ips, kept);
    uint32_t gen = atomic_load_explicit(&set_generation, memory_order_relaxed);
    struct gt_stack_memo *memo = gt_unwind_memo_stack_hashes();
    uint64_t none = 0, *m = &none;
    if (GT_LIKELY(memo != NULL)) {
        if (GT_UNLIKELY(memo->generation != gen)) {
            memset(memo->hash, 0, sizeof memo->hash);
            memo->generation = gen;
        }
        m = &memo->hash[h & ((1u << GT_STACK_MEMO_BITS) - 1)];
    }
    bool fresh = *m != h && insert_new(h);
    *m = h;   /* (in the set now: found, or inserted and published below) */
    gt_cost_add(GT_COST_STACK_SET, t);
    if (!fresh)
        return h;
    struct gt_stack_rec *rec = malloc(sizeof(*rec) + (size_t)kept * sizeof(uintptr_t));
    if (!rec) {
        *m = 0;
        forget(h);
        gt_drop(GT_DROP_STACK_LOST);
        return 0;
    }
    rec->hash = h;
    rec->depth = kept;
    memcpy(rec->ips, ips, (size_t)kept * sizeof(uintptr_t));
    rec->next = atomic_load_explicit(&new_stacks, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&new_stacks, &rec->next, rec, memory_order_release,
                                                  memory_order_relaxed))
        ;
    return h;
}

/* How many of the innermost frames are the shim's own. */
static int own_frames(void *const *buf, int n)
{
    int skip = 0;
    while (skip < n && (uintptr_t)buf[skip] >= self_lo && (uintptr_t)buf[skip] < self_hi)
        skip++;
    return skip;
}

/* Captures the caller's stack (frames of the shim skipped), returns its hash.
 * The Python frames first: on a thread whose Python frames (or those of the
 * thread waiting in backward() for it) are recorded, fewer native frames are
 * unwound (GPUTRACE_STACK_DEPTH_PYTHON): the Python frames name the line, and
 * what lies between the allocator and the interpreter is PyTorch's
 * dispatcher, 20-30 frames deep. Unwinding is about 40 ns a frame (on an H100
 * host, 1.3 us for 32 frames, the largest part of the shim's time under
 * cudaMallocAsync) where a path is new; a path seen before at the same stack
 * depth is checked against the stack instead (unwind_memo.c). */
static __attribute__((noinline)) uint64_t capture(void);
/* this thread has taken a stack: libunwind's thread-local storage (it is
 * loaded by dlopen, so its storage is made at a thread's first use, by
 * malloc) and the stack's bounds (stack_room.c) are in place */
static GT_TLS bool captured_here;

uint64_t gt_stack_capture(void)
{
    if (depth <= 0 || !seen)
        return 0;
    /* a thread's first stack inside a signal handler: the handler may have interrupted malloc, on whose lock
     * libunwind's first use here (and the bounds' look-up) would wait forever (a handler's cudaMalloc on a
     * thread busy in malloc hung; a review). Counted; the thread's first stack outside one sets it up. */
    if (!captured_here) {
        int h = gt_stack_in_signal_handler();   /* (stack_room.c: small on the stack) */
        if (h < 0)
            h = gt_unwind_in_signal_frame();   /* not told so: libunwind's walk */
        if (h > 0) {
            gt_drop(GT_DROP_STACK_IN_HANDLER);
            return 0;
        }
    }
    /* before capture()'s frame, which is most of the 8 KiB it takes (its buffers), is entered: a thread
     * that would overflow its own stack gets no stack (stack_room.c) */
    if (gt_stack_room_low()) {
        gt_drop(GT_DROP_STACK_LOW);
        return 0;
    }
    captured_here = true;
    return capture();
}

static uint64_t capture(void)
{
    struct gt_py_stack py;
    uint64_t t = gt_cost_ticks();
    int own = gt_py_capture(&py), theirs = 0;
    gt_cost_add(GT_COST_PYTHON, t);
    if (own <= 0) {
        t = gt_cost_ticks();
        theirs = gt_py_capture_backward(&py);   /* a thread waiting in backward() on our behalf */
        gt_cost_add(GT_COST_BACKWARD, t);
        if (theirs > 0)
            gt_cost_count(GT_COST_BACKWARD_CALLS);
    }
    int want = (own > 0 || theirs > 0) && gt_config.stack_depth_python < depth ? gt_config.stack_depth_python : depth;
    void *buf[GT_MAX_STACK_DEPTH + EXTRA_MAX];
    int n = 0;
    int skip = 0;
    if (want > 0) {
        t = gt_cost_ticks();
        if (extra < EXTRA_MIN)
            extra = EXTRA_MIN;
        /* the memo's key: the Python frames tell apart paths at one stack depth */
        uint64_t hint = (uint64_t)py.n << 48 ^ (py.n > 0 ? py.ids[0] : 0) ^ (py.n > 1 ? py.ids[1] >> 1 : 0);
        n = gt_unwind_memo(buf, want + extra, hint);
        skip = own_frames(buf, n);
        if (n == want + extra && n - skip < want && extra < EXTRA_MAX) {
            /* our frames took some the stack needed: this thread unwinds more from now on */
            extra = skip + 1 < EXTRA_MAX ? skip + 1 : EXTRA_MAX;
            n = gt_unwind_memo(buf, want + extra, hint);
            skip = own_frames(buf, n);
        }
        gt_cost_add(GT_COST_UNWIND, t);
    }
    int kept = n - skip < want ? n - skip : want;
    uintptr_t *ips = (uintptr_t *)(buf + skip);
    uintptr_t merged[GT_MAX_STACK_DEPTH + GT_PY_MAX_FRAMES];
    if (own > 0 || theirs > 0) {
        kept = interleave(ips, kept > 0 ? kept : 0, &py, own > 0 && gt_py_interleaves(), merged);
        ips = merged;
    }
    return publish(ips, kept);
}

/* A call recorded without a stack (a free, by default): on a thread running
 * Python it still counts as one, for the backward-pass frames' check
 * (pybackward.c), at the cost of two reads instead of a walk. */
void gt_stack_skip(void)
{
    if (depth > 0 && seen)
        gt_py_count_call();
}

/* Writer: are there stacks to take? */
bool gt_stacks_pending(void)
{
    return atomic_load_explicit(&new_stacks, memory_order_acquire) != NULL;
}

/* Writer: takes every stack published so far, returned oldest first. */
struct gt_stack_rec *gt_stacks_take_new(void)
{
    struct gt_stack_rec *r = atomic_exchange_explicit(&new_stacks, NULL, memory_order_acquire), *rev = NULL;
    while (r) {
        struct gt_stack_rec *n = r->next;
        r->next = rev;
        rev = r;
        r = n;
    }
    return rev;
}
