/* Python frames of the calling thread, read on the hot path without the GIL
 * and without linking libpython: stacks.c puts them in place of the native
 * _PyEval_EvalFrameDefault frames that run them. Known CPython versions
 * (3.11, 3.12: final releases, default builds) get their struct offsets from
 * the table below; any other version turns Python frames off with one note.
 *
 * Why reading without the GIL is safe: a thread reads only its own frame
 * chain, from inside a hooked CUDA call. Only the thread that runs a frame
 * pushes, pops or moves it (a generator's frame runs on one thread at a
 * time), and this thread is busy in the CUDA call, so its chain, the code
 * objects it references (each frame holds a strong reference) and their
 * strings cannot change or be freed while we read them, GIL released or not.
 * The thread state comes from PyGILState_GetThisThreadState, which reads a
 * pthread key (no GIL, no allocation); it is asked only while
 * Py_IsInitialized() and not _Py_IsFinalizing(): during finalization CPython
 * frees the states of daemon threads, so we stop reading before that begins.
 * (A daemon thread that is inside a CUDA call at the very instant finalization
 * starts is the one window left; it is microseconds wide.)
 * Nothing here calls into Python except PyCode_Addr2Line, which only reads
 * the code object's line table (no allocation, no GIL), and only on the first
 * sighting of a (code object, instruction) pair.
 *
 * Identity: a frame is (function, file, line). The hot path keys a cache by
 * the code object's address, size and first line, its name, file and line
 * table objects, the instruction offset, and what tells a code object from
 * an earlier one freed at its address (code_identity: 3.12's co_version, a
 * number no other code object has; in 3.11 the line table's length and
 * first bytes, since a program that exec()s generated functions
 * in a loop gets the name's, file's and line table's addresses back too);
 * the cache gives the frame's
 * id, a hash of the strings' contents and the line. The first sighting of an
 * id copies its strings (the code object is alive: it is running) into a
 * record for the writer; no Python object is kept. Another thread's frames
 * (pybackward.c) are named the same way, but every read of them goes through
 * pyobjects.c's process_vm_readv copies (remote). */
#include <dlfcn.h>
#include <stdarg.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "activity.h"
#include "shim.h"

_Static_assert(sizeof(void *) == 8, "the offsets below are those of 64-bit builds");

#include "pyframes.h"
#include "pyobjects.h"

static struct {
    _Atomic(const struct py_layout *) L; /* set last, once everything below is: Python frames are on */
    _Atomic bool deciding;
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    void *(*this_thread_state)(void);
    int (*addr2line)(void *code, int addr);
    void *(*interp_main)(void);
    void *(*thread_head)(void *interp);
    const void *code_type, *unicode_type;
    uintptr_t eval_lo, eval_hi;   /* _PyEval_EvalFrameDefault; 0: size unknown */
    bool decided;                 /* looked once (at the trace's start) */
} P;

#define CACHE_BITS 17
#define CACHE_SIZE (1u << CACHE_BITS)
#define SEEN_BITS 16
#define SEEN_SIZE (1u << SEEN_BITS)
#define MAX_PROBE 32
#define KEY_BUSY 1 /* a slot being filled */

/* (code, instruction) -> frame id; keys 0 (free) and 1 (busy) are never real keys */
static _Atomic uint64_t *cache_keys;
static uint64_t *cache_ids;
static _Atomic uint64_t *seen;     /* frame ids whose record was handed to the writer */
static _Atomic(struct gt_pyframe_rec *) new_frames;

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}


/* ---- finding a Python */

/* What decide() found, said once per trace: a forked child's trace says it again. */
static char said[300];
static bool say_again;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(said, sizeof said, fmt, ap);
    va_end(ap);
    gt_note("python", false, "%s", said);
}

static bool supported_build(unsigned long hex)
{
    /* final releases only: alphas and betas moved these structs */
    return (hex & 0xf0) == 0xf0;
}

static void decide(void)
{
    void *v = gt_dlsym_real(RTLD_DEFAULT, "Py_Version");
    const char *(*getver)(void) = (const char *(*)(void))gt_dlsym_real(RTLD_DEFAULT, "Py_GetVersion");
    if (!v && !getver)
        return; /* no Python: nothing to say */
    if (!gt_config.python) {
        say("off: GPUTRACE_PYTHON=0");
        return;
    }
    unsigned long hex = v ? *(const unsigned long *)v : 0;
    if (!v) {
        say("off: Python %.16s has no Py_Version (older than 3.11); Python frames are not recorded",
                getver());
        return;
    }
    const struct py_layout *L = NULL;
    for (size_t i = 0; i < sizeof gt_py_layouts / sizeof gt_py_layouts[0]; i++)
        if (gt_py_layouts[i].version == hex >> 16)
            L = &gt_py_layouts[i];
    /* Py_TRACE_REFS builds put two more pointers in every object */
    bool trace_refs = gt_dlsym_real(RTLD_DEFAULT, "_Py_PrintReferences") != NULL;
    P.is_initialized = (int (*)(void))gt_dlsym_real(RTLD_DEFAULT, "Py_IsInitialized");
    P.is_finalizing = (int (*)(void))gt_dlsym_real(RTLD_DEFAULT, "_Py_IsFinalizing");
    P.this_thread_state = (void *(*)(void))gt_dlsym_real(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    P.addr2line = (int (*)(void *, int))gt_dlsym_real(RTLD_DEFAULT, "PyCode_Addr2Line");
    P.interp_main = (void *(*)(void))gt_dlsym_real(RTLD_DEFAULT, "PyInterpreterState_Main");
    P.thread_head = (void *(*)(void *))gt_dlsym_real(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
    P.code_type = gt_dlsym_real(RTLD_DEFAULT, "PyCode_Type");
    P.unicode_type = gt_dlsym_real(RTLD_DEFAULT, "PyUnicode_Type");
    void *eval = gt_dlsym_real(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    unsigned maj = (unsigned)(hex >> 24), min = (unsigned)(hex >> 16 & 0xff), mic = (unsigned)(hex >> 8 & 0xff);
    if (!L || !supported_build(hex) || trace_refs) {
        say("off: Python %u.%u.%u (Py_Version 0x%08lx%s) is not a version gputrace knows the "
                "frame layout of (3.11, 3.12); Python frames are not recorded", maj, min, mic, hex,
                trace_refs ? ", Py_TRACE_REFS build" : "");
        return;
    }
    if (!P.is_initialized || !P.is_finalizing || !P.this_thread_state || !P.addr2line || !P.code_type ||
        !P.unicode_type || !eval) {
        say("off: Python %u.%u.%u lacks a function gputrace reads frames with; Python frames "
                "are not recorded", maj, min, mic);
        return;
    }
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        P.eval_lo = (uintptr_t)eval;
        P.eval_hi = P.eval_lo + sym->st_size;
    }
    void *c = mmap(NULL, CACHE_SIZE * 16 + SEEN_SIZE * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED) {
        say("off: no memory for the frame cache");
        return;
    }
    cache_keys = c;
    cache_ids = (uint64_t *)((char *)c + CACHE_SIZE * 8);
    seen = (_Atomic uint64_t *)((char *)c + CACHE_SIZE * 16);
    say("on: Python %u.%u.%u frames are recorded%s", maj, min, mic,
            P.eval_lo ? "" : " (after the native frames: the size of _PyEval_EvalFrameDefault is unknown)");
    atomic_store_explicit(&P.L, L, memory_order_release);
}

/* Trace start (the first CUDA call): is there a Python in the process? Asked
 * once: a Python loaded after the first CUDA call is not seen (asking again on
 * the hot path would take the loader's lock). */
void gt_py_init(void)
{
    bool idle = false;
    if (!P.decided && atomic_compare_exchange_strong(&P.deciding, &idle, true)) {
        decide();
        P.decided = true;
        atomic_store(&P.deciding, false);
    } else if (say_again && *said && !gt_note_queued("python")) {
        gt_note("python", false, "%s", said);
    }
    say_again = false;
}

const struct py_layout *gt_py_layout(void)
{
    return atomic_load_explicit(&P.L, memory_order_acquire);
}

bool gt_py_running(void)
{
    return P.is_initialized() && !P.is_finalizing();
}

const char *gt_py_this_thread_state(void)
{
    return P.this_thread_state();
}

/* Reads the interpreter's list head (the interpreter outlives the process's
 * use of it); the thread states themselves are the caller's to read safely. */
const char *gt_py_first_thread_state(void)
{
    void *interp = P.interp_main && P.thread_head ? P.interp_main() : NULL;
    return interp ? P.thread_head(interp) : NULL;
}

const void *gt_py_code_type(void)
{
    return P.code_type;
}

void gt_py_eval_range(uintptr_t *lo, uintptr_t *span)
{
    *lo = P.eval_lo;
    *span = P.eval_hi - P.eval_lo;
}

bool gt_py_interleaves(void)
{
    return P.eval_lo != 0;
}

static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return mix(h, 0);
}

/* ---- frames */

/* Does copy again, read after its strings and line table, show the code
 * object that c was read from? (The fields that make the cache key.) */
static bool same_code(const struct py_layout *L, const char *c, const char *again)
{
    const int ptrs[] = {8, 16, L->co_qualname, L->co_filename, L->co_linetable};
    for (size_t k = 0; k < sizeof ptrs / sizeof *ptrs; k++)
        if (RD(uint64_t, c, ptrs[k]) != RD(uint64_t, again, ptrs[k]))
            return false;
    if (L->co_version >= 0 && RD(uint32_t, c, L->co_version) != RD(uint32_t, again, L->co_version))
        return false;
    return RD(int32_t, c, L->co_firstlineno) == RD(int32_t, again, L->co_firstlineno);
}

/* First sighting of (code, addr): resolve function, file and line, hand the
 * writer a record if the frame is new, and return the frame's id. c: as for
 * gt_py_frame_id. remote: the code object is another thread's and may be
 * freed meanwhile: everything is read through gt_py_copy, the line from the
 * location table (PyCode_Addr2Line would read it in place), and the object is
 * read again at the end: 0 (no id) when a read failed or it changed. */
static uint64_t resolve(const char *code, const char *c, int addr, bool remote)
{
    const struct py_layout *L = atomic_load_explicit(&P.L, memory_order_relaxed);
    char fn[512], file[1024];
    _Alignas(8) char again[GT_PY_CODE_HEAD];
    int line;
    bool named = gt_py_str(L, P.unicode_type, RD(const void *, c, L->co_qualname), fn, sizeof fn, remote);
    bool filed = gt_py_str(L, P.unicode_type, RD(const void *, c, L->co_filename), file, sizeof file, remote);
    if (remote) {
        if (!named || !filed || !gt_py_remote_line(L, c, addr, &line) || !gt_py_copy(code, again, sizeof again) ||
            !same_code(L, c, again))
            return 0;
    } else {
        if (!named)
            snprintf(fn, sizeof fn, "?");
        if (!filed)
            snprintf(file, sizeof file, "?");
        line = P.addr2line((void *)code, addr);
    }
    uint64_t id = mix(hash_text(hash_text(0xcbf29ce484222325ull, fn), file), (uint64_t)(uint32_t)line);
    id = (id & ~GT_PYFRAME_TAG) | GT_PYFRAME_TAG;
    uint32_t i = (uint32_t)(id >> (63 - SEEN_BITS)) & (SEEN_SIZE - 1);
    for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (SEEN_SIZE - 1)) {
        uint64_t cur = atomic_load_explicit(&seen[i], memory_order_acquire);
        if (cur == id)
            return id;
        if (cur == 0)
            break;
    }
    size_t lf = strlen(fn) + 1, ll = strlen(file) + 1;
    struct gt_pyframe_rec *r = malloc(sizeof *r + lf + ll);
    if (!r)
        return id; /* the writer names it "?" */
    r->id = id;
    r->line = line;
    r->function = r->text;
    r->file = r->text + lf;
    memcpy(r->function, fn, lf);
    memcpy(r->file, file, ll);
    r->next = atomic_load_explicit(&new_frames, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&new_frames, &r->next, r, memory_order_release,
                                                  memory_order_relaxed))
        ;
    /* marked seen only once published: a thread that finds the id in the set
     * publishes its stack after the record (the writer takes records after
     * stacks). A full set only costs duplicate records, which the writer drops. */
    for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (SEEN_SIZE - 1)) {
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong_explicit(&seen[i], &expected, id, memory_order_release,
                                                    memory_order_relaxed) || expected == id)
            break;
    }
    return id;
}

/* What tells this code object from an earlier one freed at its address (with
 * its name, file and line table at theirs: a program that exec()s generated
 * functions in a loop gets all four addresses back from the allocator, and
 * the trace named the other function's line for half its allocations). 3.12:
 * co_version, a number each new code object takes from a counter. 3.11 has
 * none: the line table's length and its first 16 bytes (one more cache line
 * a frame; two tables of one length alike in those bytes still collide:
 * reading the last bytes too cost another line, 9 ns a frame on the stand-in). */
static uint64_t code_identity(const struct py_layout *L, const char *c, bool remote)
{
    if (L->co_version >= 0 && RD(uint32_t, c, L->co_version))
        return (uint64_t)RD(uint32_t, c, L->co_version) << 16;
    /* 3.11, or a 3.12 version of 0 (the counter ran out after 2^32 code
     * objects; every later one has 0): the line table, as 3.11 does.
     * PyBytesObject: ob_size at 16, the bytes from 32; never read past them */
    const char *table = RD(const char *, c, L->co_linetable);
    uint64_t first[2] = {0, 0};
    if (!table)
        return 0;
    int64_t size;
    if (!remote) {   /* this thread's own frame: its code object and line table are alive; read in place */
        size = RD(int64_t, table, 16);
        if (size >= 16)
            memcpy(first, table + 32, 16);   /* a constant size: two loads, no call */
        else if (size > 0)
            memcpy(first, table + 32, (size_t)size);
        return mix((uint64_t)size, first[0] ^ first[1] << 1);
    }
    _Alignas(8) char head[32];
    if (!gt_py_copy(table, head, sizeof head))
        return 0;
    size = RD(int64_t, head, 16);
    size_t n = size < 0 ? 0 : size < 16 ? (size_t)size : 16;
    if (!gt_py_copy(table + 32, first, n))
        return 0;
    return mix((uint64_t)size, first[0] ^ first[1] << 1);
}

/* The id of the frame running code at instr. c: where to read the code
 * object's fields: the object itself (this thread's own frame: alive), or a
 * copy of its first GT_PY_CODE_HEAD bytes (remote: another thread's, which
 * may be freed while we read: a first sighting then reads only through
 * gt_py_copy). 0: remote, and the object could not be read whole. */
uint64_t gt_py_frame_id(const char *code, const char *c, const char *instr, bool remote)
{
    const struct py_layout *L = atomic_load_explicit(&P.L, memory_order_relaxed);
    int64_t nbytes = RD(int64_t, c, 16) * 2;   /* ob_size: code units of 2 bytes */
    int64_t addr = instr - (code + L->co_code);
    if (addr < 0 || addr >= nbytes)
        addr = -1;   /* PyCode_Addr2Line answers the first line */
    /* two independent lanes, then one mix: the key is on every frame's path */
    uint64_t a = mix((uint64_t)(uintptr_t)code ^ (uint64_t)addr << 48,
                     (uint64_t)(uintptr_t)RD(const void *, c, L->co_qualname) ^
                     (uint64_t)RD(int32_t, c, L->co_firstlineno) << 48);
    uint64_t b = mix((uint64_t)(uintptr_t)RD(const void *, c, L->co_filename) ^ (uint64_t)nbytes << 48 ^
                     code_identity(L, c, remote),
                     (uint64_t)(uintptr_t)RD(const void *, c, L->co_linetable) ^ (uint64_t)addr);
    uint64_t key = mix(a, b);
    if (key <= KEY_BUSY)
        key += 2;
    uint32_t i = (uint32_t)(key >> (64 - CACHE_BITS));
    for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (CACHE_SIZE - 1)) {
        uint64_t cur = atomic_load_explicit(&cache_keys[i], memory_order_acquire);
        if (cur == key)
            return cache_ids[i];
        if (cur == KEY_BUSY)
            continue;
        if (cur == 0) {
            uint64_t expected = 0;
            if (!atomic_compare_exchange_strong_explicit(&cache_keys[i], &expected, KEY_BUSY,
                                                         memory_order_acquire, memory_order_relaxed)) {
                if (expected == key)
                    return cache_ids[i];
                continue;
            }
            uint64_t id = resolve(code, c, (int)addr, remote);
            cache_ids[i] = id;
            atomic_store_explicit(&cache_keys[i], id ? key : 0, memory_order_release); /* 0: ask again */
            return id;
        }
    }
    return resolve(code, c, (int)addr, remote); /* cache full here: correct, only slower */
}

/* This thread's ids, 3.12 only: co_version names a code object for good (a
 * new code object takes a new version from one process-wide counter,
 * _Py_next_func_version, so one made where a freed one was differs; 3.13
 * counts per interpreter, where two could repeat a version), and
 * (instruction, version) -> outcome (frame_own) spares a frame seen before
 * the shared table's key (six fields, three mixes) and its probe. In the
 * thread's memo mapping (unwind_memo.c), reached by gt_py_capture; emptied
 * when the shared table is (a fork child: its trace must get its frames'
 * records again), found out once per capture. */
static _Atomic uint32_t ids_generation = 1;   /* bumped by gt_py_discard; an empty table's 0 never matches */

/* Is the frame (f: its header, or a copy) still setting up (CPython's
 * _PyFrame_IsIncomplete: not yet at its first traceable instruction)?
 * code, c: as for gt_py_frame_id. */
static inline __attribute__((always_inline)) bool incomplete(const struct py_layout *L, const char *f,
                                                              const char *code, const char *c)
{
    if (RD(char, f, L->fr_owner) == L->owner_generator)
        return false;
    const char *first = code + L->co_code + 2 * (int64_t)RD(int32_t, c, L->co_firsttraceable);
    return RD(const char *, f, L->fr_instr) < first;
}

bool gt_py_incomplete(const struct py_layout *L, const char *f, const char *code, const char *c)
{
    return incomplete(L, f, code, c);
}

/* This thread's own frame f, running code (not an eval loop's entry), through
 * its table: OWN_ID and *id, OWN_SKIP (still setting up: not named), or
 * OWN_STOP (not a code object: not a frame of this layout). The table keeps
 * the outcome, keyed by the instruction's address and the code object's
 * version, so a frame seen before costs its key alone. Why that is enough:
 * the instruction lies inside its code object, and no two code objects
 * share a version (3.12 numbers each new one from one process-wide counter;
 * 0 when it ran out: such a code object is never kept here), so the code
 * object a key names is the one checked when its entry was made (a code
 * object at a freed one's address, or one whose instructions lie where a
 * freed one's did, has a new version). Whether a frame is still setting up
 * follows from its code object, its instruction, and whether a generator
 * owns it (the key's low bit). Empty slots never match: their instr is NULL. */
enum { OWN_ID, OWN_SKIP, OWN_STOP };
static inline __attribute__((always_inline)) int frame_own(struct gt_py_own *own, const struct py_layout *L,
                                                           const char *f, const char *code, char owner,
                                                           uint64_t *id)
{
    const char *instr = RD(const char *, f, L->fr_instr);
    uint32_t version = RD(uint32_t, code, L->co_version);
    uint64_t key = (uint64_t)version << 1 | (owner == L->owner_generator);
    /* the product's high bits: its low ones would follow the address's alone (even) */
    uint32_t slot = ((uint32_t)((uintptr_t)instr >> 1) * 0x9e3779b1u) >> (32 - GT_PY_OWN_BITS);
    struct gt_py_own_id *o = &own->ids[slot];
    if (GT_LIKELY(o->instr == instr && o->key == key)) {
        *id = o->id;
        return o->id ? OWN_ID : OWN_SKIP;
    }
    if (RD(const void *, code, 8) != P.code_type)
        return OWN_STOP;
    if (incomplete(L, f, code, code)) {
        if (version)
            *o = (struct gt_py_own_id){instr, key, 0};
        return OWN_SKIP;
    }
    *id = gt_py_frame_id(code, code, instr, false);
    if (*id && version)
        *o = (struct gt_py_own_id){instr, key, *id};
    return OWN_ID;
}

/* Changed by every recorded call of a thread running Python (pybackward.c:
 * a thread waiting in backward() that moved on makes one). Readers only ask
 * whether it changed, so each call stores a value no call stored before (a
 * number its thread took once, above the thread's own count) with a plain
 * store: a locked add on every call for the same answer was ~20 ns. (Not the
 * thread's id: a new thread may get a dead one's id, and count as it did.) */
static _Atomic uint64_t py_epoch;
static _Atomic uint64_t py_writers;
static GT_TLS uint64_t py_calls;   /* this thread's number << 40, plus its count */

static inline void epoch_changes(void)
{
    if (GT_UNLIKELY(!py_calls))
        py_calls = (atomic_fetch_add_explicit(&py_writers, 1, memory_order_relaxed) + 1) << 40;
    atomic_store_explicit(&py_epoch, ++py_calls, memory_order_relaxed);
}

/* The frames from f outwards into out. Always inlined: gt_py_capture calls it
 * with 3.12's row of gt_py_layouts, whose offsets then compile to constants
 * (every field read below is at one; ~15 instructions a frame fewer). */
static inline __attribute__((always_inline)) void walk(const struct py_layout *L, struct gt_py_own *own,
                                                       const char *f, struct gt_py_stack *out)
{
    int n = 0, nseg = 0;   /* out's counts, kept in registers: out->ids may alias anything RD reads */
    /* 1024 links at most: a chain is never that long before it reaches the
     * frames we keep, and a loop (which CPython never makes) cannot hang us */
    for (int links = 0; f && links < 1024 && n < GT_PY_MAX_FRAMES - 1; links++) {
        const char *code = RD(const char *, f, L->fr_code);
        char owner = RD(char, f, L->fr_owner);
        if ((unsigned char)owner > (L->owner_cstack >= 0 ? L->owner_cstack : 2))
            break;   /* not a frame of this layout: stop rather than guess */
        if (L->owner_cstack >= 0 && owner == L->owner_cstack) {
            out->seg_end[nseg++] = (uint16_t)n;   /* an eval loop's entry: its frames end here */
        } else if (!code) {
            break;
        } else {
            if (own) {
                uint64_t id = 0;
                int got = frame_own(own, L, f, code, owner, &id);
                if (got == OWN_STOP)
                    break;
                if (got == OWN_ID)
                    out->ids[n++] = id;
            } else {
                if (RD(const void *, code, 8) != P.code_type)
                    break;
                if (!incomplete(L, f, code, code))
                    out->ids[n++] = gt_py_frame_id(code, code, RD(const char *, f, L->fr_instr), false);
            }
            if (L->fr_is_entry >= 0 && RD(bool, f, L->fr_is_entry))
                out->seg_end[nseg++] = (uint16_t)n;
        }
        if (nseg >= GT_PY_MAX_FRAMES)
            break;
        f = RD(const char *, f, L->fr_previous);
    }
    if (GT_UNLIKELY(n == GT_PY_MAX_FRAMES - 1 && f))
        out->ids[n++] = GT_PY_CUT_MARK;   /* deeper than kept: say so, rather than end as if complete */
    out->n = n;
    out->nseg = nseg;
}

/* Does this thread have a Python thread state that may be read now? Then
 * *f: its innermost frame (NULL: none running). */
static inline bool this_thread_frame(const struct py_layout *L, const char **f)
{
    if (!P.is_initialized() || P.is_finalizing())
        return false;
    const char *ts = P.this_thread_state();
    if (!ts)
        return false;
    const char *cf = RD(const char *, ts, L->ts_cframe);
    *f = cf ? RD(const char *, cf, L->cf_current) : NULL;
    return true;
}

int gt_py_capture(struct gt_py_stack *out)
{
    out->n = out->nseg = 0;
    const struct py_layout *L = atomic_load_explicit(&P.L, memory_order_acquire);
    const char *f;
    if (GT_UNLIKELY(!L) || !this_thread_frame(L, &f))
        return 0;
    bool is_312 = L->version == gt_py_layouts[GT_PY_312].version;
    struct gt_py_own *own = is_312 ? gt_unwind_memo_py_ids() : NULL;
    if (own) {
        uint32_t generation = atomic_load_explicit(&ids_generation, memory_order_acquire);
        if (GT_UNLIKELY(own->generation != generation)) {
            memset(own->ids, 0, sizeof own->ids);
            own->generation = generation;
        }
    }
    if (is_312)   /* the same row's values, as constants */
        walk(&gt_py_layouts[GT_PY_312], own, f, out);
    else
        walk(L, own, f, out);
    if (out->nseg == 0 || out->seg_end[out->nseg - 1] != out->n)
        out->seg_end[out->nseg++] = (uint16_t)out->n;
    if (out->n)
        epoch_changes();
    return out->n;
}

void gt_py_count_call(void)
{
    const struct py_layout *L = atomic_load_explicit(&P.L, memory_order_acquire);
    const char *f;
    if (GT_LIKELY(L != NULL) && this_thread_frame(L, &f) && f)
        epoch_changes();
}

uint64_t gt_py_epoch(void)
{
    return atomic_load_explicit(&py_epoch, memory_order_acquire);
}

bool gt_py_pending(void)
{
    return atomic_load_explicit(&new_frames, memory_order_acquire) != NULL;
}

struct gt_pyframe_rec *gt_py_take_new(void)
{
    return atomic_exchange_explicit(&new_frames, NULL, memory_order_acquire);
}

/* Fork child: the new trace has none of these frames yet, so every frame is
 * seen for the first time again (the cache would skip that). */
void gt_py_discard(void)
{
    say_again = true;
    atomic_fetch_add_explicit(&ids_generation, 1, memory_order_release);
    if (cache_keys)
        madvise((void *)cache_keys, CACHE_SIZE * 16 + SEEN_SIZE * 8, MADV_DONTNEED);
    struct gt_pyframe_rec *r = atomic_exchange(&new_frames, NULL);
    while (r) {
        struct gt_pyframe_rec *n = r->next;
        free(r);
        r = n;
    }
}
