/* Backward-pass attribution. PyTorch runs a backward pass on its autograd
 * device threads, which run no Python, while the thread that called
 * backward() waits inside torch.autograd.graph._engine_run_backward, GIL
 * released, until the graph task completes. An allocation made on a thread
 * with no Python frames of its own gets the frames of that waiting thread,
 * after a marker frame (GT_PY_BACKWARD_MARK), so that reports say
 * "backward: train.py:57 in train_step".
 *
 * Why reading another thread is safe here: its thread state may be freed
 * (the thread exits) and its frames unmapped (a frame-stack chunk is
 * munmap()ed when popped) while we read, so every read of that memory goes
 * through process_vm_readv on our own pid, which answers EFAULT instead of
 * faulting; a value read from memory reused meanwhile is only taken if it
 * leads to a code object (its type checked the same way). The code objects,
 * and the strings and line tables they point to, are read the same way
 * (pyobjects.c): the waiting frames hold references to them, but a frame may
 * return between our read of it and our read of its code, and the code
 * object be freed then. A frame's first sighting, which names it, reads the
 * code object again at the end and is dropped (the frames are read again
 * later) when it changed; a cache hit reads nothing but copies.
 * Which thread: one whose innermost frame runs _engine_run_backward, the only
 * one; with two, whose graph task this allocation serves cannot be told and
 * nothing is attributed. A native thread that allocates during a backward
 * pass for another reason (rare) is attributed too: the marker says the frames
 * are inferred, not the allocating thread's own.
 * Cost: the waiting thread's frames cannot change while it waits, so each
 * autograd thread keeps them with the addresses and headers they were read
 * from, and checks them with one process_vm_readv (one iovec per frame)
 * before using them again; a full read costs two per frame. That check
 * costs ~2.3 us (measured on an H100 host, 101,392 backward allocations of a
 * transformer under cudaMallocAsync: 236 ms, a third of the shim's time), so
 * it is made only when a thread running Python recorded a call since the
 * last one (gt_py_epoch), or after REVALIDATE_EVERY uses or REVALIDATE_TICKS
 * (under a caching allocator hooked calls are rare): a waiting thread
 * that returned from backward() and entered it again made a CUDA call in
 * between in any real step (backward() itself allocates the ones its
 * gradient starts from, under a per-tensor allocator, the only one under
 * which this path is hot), and without one at most REVALIDATE_EVERY
 * allocations keep the previous pass's lines (still that thread's backward).
 * A search that finds no waiting thread is not repeated for RETRY_NS, so
 * native threads outside backward passes (XLA's, a data loader's) pay
 * almost nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "activity.h"
#include "pyframes.h"
#include "pyobjects.h"

#define MAX_FRAMES (GT_PY_MAX_FRAMES - 1)  /* one slot for the marker */
#define MAX_THREADS 256
#define RETRY_NS 5000000ull
/* The uses bound is the last guard, after the epoch and the ticks. With 64,
 * a transformer step under cudaMallocAsync (~330 autograd-thread calls) made
 * at least 5 checks, and the path cost 0.17 us a call on an H200 host where
 * its fast path's ~70 instructions take a few ns; the cost note now counts
 * the checks. */
#define REVALIDATE_EVERY 1024
/* ...or after 50 ms, counted on the time-stamp counter (a clock reading is
 * ~50 ns on an H100 host, a sixth of this path): 50 ms at 1 GHz, less at any
 * faster counter; where the counter is CLOCK_MONOTONIC, exactly 50 ms */
#define REVALIDATE_TICKS 50000000ull
/* ...or when this thread's last backward allocation is older than this
 * (0.2 ms at 1 GHz, less at a faster counter): a pass's allocations come
 * close together, and between two passes the waiting thread ran Python,
 * which under a caching allocator makes no CUDA call that would move the
 * epoch (a GAN's discriminator and generator passes: the generator's
 * allocations were named by the discriminator's line, a helper's probe) */
#define REUSE_GAP_TICKS 200000ull

/* The frames of the waiting thread as last read by this thread, and the
 * spans of memory to read again to check them: frames that lie close
 * together (a frame stack chunk) are read as one span, each other on its own. */
#define SPAN_GAP 4096
#define SPAN_BYTES (64 << 10)
struct waiting {
    bool valid;                     /* false: read again */
    uint64_t epoch;                 /* gt_py_epoch() before the last read or check */
    uint64_t checked_ticks;         /* ...and when (gt_cost_read_ticks) */
    uint64_t used_ticks;            /* when its frames were last given to an allocation */
    int uses;                       /* uses since then */
    const char *ts, *cframe;        /* its thread state, and its _PyCFrame (on its C stack) */
    int n;                          /* frames read, innermost first */
    const char *addr[MAX_FRAMES];
    char head[MAX_FRAMES][GT_PY_FRAME_HEAD]; /* each frame's header as read */
    size_t off[MAX_FRAMES];         /* where each header lands in buf when the spans are read */
    int nspan;
    struct iovec remote[MAX_FRAMES + 2], local[MAX_FRAMES + 2];
    size_t want;
    const char *cf_now, *top_now;
    int nids;
    uint64_t ids[MAX_FRAMES];
    char buf[SPAN_BYTES];
};

static GT_TLS struct waiting *mine;
static _Atomic(const void *) backward_code;  /* _engine_run_backward's code object, once seen */
static _Atomic uint64_t retry_after;         /* no waiting thread was found: not before this */
static _Atomic bool refused;                 /* process_vm_readv is not allowed here */
static pid_t self_pid;

static bool safe_read(const void *addr, void *out, size_t len)
{
    if (gt_py_copy(addr, out, len))
        return true;
    if ((errno == EPERM || errno == ENOSYS) && !atomic_exchange(&refused, true))
        gt_note("python", false, "process_vm_readv is refused (%s): backward-pass allocations are not attributed "
                "to the thread that called backward()", strerror(errno));
    return false;
}

static const char *safe_ptr(const char *base, int off)
{
    const char *p = NULL;
    return base && safe_read(base + off, &p, sizeof p) ? p : NULL;
}

/* A code object's first bytes into c, its type checked. */
static bool read_code(const char *code, char *c)
{
    return code && safe_read(code, c, GT_PY_CODE_HEAD) && RD(const void *, c, 8) == gt_py_code_type();
}

static bool is_backward_code(const struct py_layout *L, const char *code)
{
    const void *known = atomic_load_explicit(&backward_code, memory_order_relaxed);
    if (known)
        return code == known;
    char c[GT_PY_CODE_HEAD], s[96];
    static const char name[] = "_engine_run_backward";
    const char *str = read_code(code, c) ? RD(const char *, c, L->co_qualname) : NULL;
    if (!str || !safe_read(str, s, sizeof s))
        return false;
    uint32_t state = RD(uint32_t, s, 32);
    bool compact_ascii = (state >> 5 & 1) && (state >> 6 & 1);
    if (!compact_ascii || RD(int64_t, s, 16) != (int64_t)sizeof name - 1 ||
        L->str_ascii_data + sizeof name > sizeof s || memcmp(s + L->str_ascii_data, name, sizeof name - 1))
        return false;
    atomic_store_explicit(&backward_code, code, memory_order_relaxed);
    return true;
}

/* The thread state of the one thread waiting in backward(), and its
 * _PyCFrame and innermost frame; NULL if none or several. */
static const char *find_waiting(const struct py_layout *L, const char *self, const char **cframe, const char **top)
{
    const char *found = NULL;
    const char *ts = gt_py_first_thread_state();
    for (int i = 0; ts && i < MAX_THREADS; i++, ts = safe_ptr(ts, 8)) {   /* PyThreadState.next */
        if (ts == self)
            continue;
        const char *cf = safe_ptr(ts, L->ts_cframe), *f = safe_ptr(cf, L->cf_current);
        if (f && is_backward_code(L, safe_ptr(f, L->fr_code))) {
            if (found)
                return NULL;
            found = ts;
            *cframe = cf;
            *top = f;
        }
    }
    return found;
}

/* Reads the waiting thread's frames from top into w (ids included). */
static bool read_frames(const struct py_layout *L, struct waiting *w, const char *top)
{
    w->n = w->nids = 0;
    char c[GT_PY_CODE_HEAD];
    for (const char *f = top; f && w->n < MAX_FRAMES;) {
        char *h = w->head[w->n];
        if (!safe_read(f, h, GT_PY_FRAME_HEAD))
            return false;
        w->addr[w->n++] = f;
        const char *code = RD(const char *, h, L->fr_code);
        char owner = RD(char, h, L->fr_owner);
        if (owner < 0 || owner > (L->owner_cstack >= 0 ? L->owner_cstack : 2))
            return false;   /* not a frame: the thread moved on while we read */
        if (L->owner_cstack < 0 || owner != L->owner_cstack) {
            if (!read_code(code, c))
                return false;
            if (!gt_py_incomplete(L, h, code, c) &&
                !(w->ids[w->nids++] = gt_py_frame_id(code, c, RD(const char *, h, L->fr_instr), true)))
                return false;   /* its code object went away while we named it */
        }
        f = RD(const char *, h, L->fr_previous);
    }
    return true;
}

static GT_TLS const char *const *tls_sort_addr;   /* qsort has no context argument */

static int by_addr(const void *x, const void *y)
{
    const char *a = tls_sort_addr[*(const int *)x], *b = tls_sort_addr[*(const int *)y];
    return (a > b) - (a < b);
}

/* The reads that check w: its cframe's current frame, then its frames, as
 * spans (separate: one iovec per frame). */
static void plan_spans(const struct py_layout *L, struct waiting *w, bool separate)
{
    int order[MAX_FRAMES];
    for (int k = 0; k < w->n; k++)
        order[k] = k;
    tls_sort_addr = w->addr;
    qsort(order, (size_t)w->n, sizeof order[0], by_addr);
    w->remote[0] = (struct iovec){(void *)(w->ts + L->ts_cframe), sizeof(void *)};
    w->local[0] = (struct iovec){&w->cf_now, sizeof(void *)};
    w->remote[1] = (struct iovec){(void *)(w->cframe + L->cf_current), sizeof(void *)};
    w->local[1] = (struct iovec){&w->top_now, sizeof(void *)};
    int ns = 2;
    size_t used = 0;
    for (int i = 0; i < w->n; i++) {
        const char *a = w->addr[order[i]];
        struct iovec *r = &w->remote[ns - 1];
        const char *end = (const char *)r->iov_base + r->iov_len;
        if (!separate && ns > 2 && a >= (const char *)r->iov_base && a <= end + SPAN_GAP &&
            used + (size_t)(a + GT_PY_FRAME_HEAD - end) <= SPAN_BYTES) {
            if (a + GT_PY_FRAME_HEAD > end) {   /* grow the span */
                size_t more = (size_t)(a + GT_PY_FRAME_HEAD - end);
                r->iov_len += more;
                w->local[ns - 1].iov_len += more;
                used += more;
            }
        } else {
            w->remote[ns] = (struct iovec){(void *)a, GT_PY_FRAME_HEAD};
            w->local[ns] = (struct iovec){w->buf + used, GT_PY_FRAME_HEAD};
            used += GT_PY_FRAME_HEAD;
            ns++;
        }
        struct iovec *span = &w->remote[ns - 1];
        w->off[order[i]] = (size_t)((char *)w->local[ns - 1].iov_base - w->buf) + (size_t)(a - (const char *)span->iov_base);
    }
    w->nspan = ns;
    w->want = used + 2 * sizeof(void *);
}

/* Are w's frames still what the waiting thread runs? One read for all. */
static bool still_waiting(struct waiting *w)
{
    if (!w->valid)
        return false;
    gt_cost_count(GT_COST_BACKWARD_CHECKS);
    if (process_vm_readv(self_pid, w->local, (unsigned long)w->nspan, w->remote, (unsigned long)w->nspan, 0) !=
        (ssize_t)w->want)
        return false;
    if (w->cf_now != w->cframe || (w->n && w->top_now != w->addr[0]))
        return false;
    for (int k = 0; k < w->n; k++)
        if (memcmp(w->buf + w->off[k], w->head[k], GT_PY_FRAME_HEAD))
            return false;
    return true;
}

int gt_py_capture_backward(struct gt_py_stack *out)
{
    out->n = out->nseg = 0;
    const struct py_layout *L = gt_py_layout();
    if (!L || atomic_load_explicit(&refused, memory_order_relaxed) || !gt_py_running())
        return 0;
    struct waiting *w = mine;
    uint64_t epoch = gt_py_epoch();
    uint64_t ticks = gt_cost_read_ticks();
    if (w && w->valid && w->epoch == epoch && w->uses < REVALIDATE_EVERY &&
        ticks - w->checked_ticks < REVALIDATE_TICKS && ticks - w->used_ticks < REUSE_GAP_TICKS) {
        w->uses++;   /* no Python thread recorded a call since the last check: the same frames */
    } else if (!w || !still_waiting(w)) {
        if (w)
            w->valid = false;   /* checked no more until found again: a thread no longer waits */
        uint64_t now = gt_now_ns();
        if (now < atomic_load_explicit(&retry_after, memory_order_relaxed))
            return 0;
        if (!self_pid)
            self_pid = getpid();
        const char *cframe = NULL, *top = NULL;
        const char *ts = find_waiting(L, gt_py_this_thread_state(), &cframe, &top);
        if (!ts) {
            atomic_store_explicit(&retry_after, now + RETRY_NS, memory_order_relaxed);
            return 0;
        }
        if (!w && !(w = mine = malloc(sizeof *w)))
            return 0;
        w->ts = ts;
        w->cframe = cframe;
        gt_cost_count(GT_COST_BACKWARD_READS);
        w->valid = read_frames(L, w, top);
        if (!w->valid)
            return 0;
        plan_spans(L, w, false);
        if (!still_waiting(w)) {   /* a span crosses memory that is not mapped: a read per frame */
            plan_spans(L, w, true);
            w->valid = still_waiting(w);
        }
        w->epoch = epoch;
        w->checked_ticks = ticks;
        w->uses = 0;
    } else {
        w->epoch = epoch;   /* checked: still the same frames */
        w->checked_ticks = ticks;
        w->uses = 0;
    }
    w->used_ticks = ticks;
    if (w->nids == 0)
        return 0;
    out->ids[0] = GT_PY_BACKWARD_MARK;
    memcpy(out->ids + 1, w->ids, (size_t)w->nids * sizeof w->ids[0]);
    out->n = w->nids + 1;
    out->seg_end[0] = (uint16_t)out->n;
    out->nseg = 1;
    return out->n;
}

/* Fork child: a new pid; the parent's threads are gone. */
void gt_py_backward_after_fork(void)
{
    self_pid = getpid();
    gt_py_copy_after_fork();
    free(mine);
    mine = NULL;
    atomic_store(&retry_after, 0);
}
