/* site_merge.c - one call site for stacks that differ only inside the
 * Python interpreter. CPython reaches the same Python line through different
 * C paths as it warms up: the first calls of a builtin that calls back into
 * Python (sorted(key=f), map(f, ...)) go through its generic call machinery
 * (PyObject_Vectorcall, cfunction_vectorcall_*), later ones, specialized,
 * call the builtin directly. The stacks differ in those native frames alone,
 * and one leaking line was two sites, 13 and 7 allocations, growth's figure
 * for it short by the second (a helper's probe). A stack with Python frames
 * is here the sequence of its frames less the native ones of the
 * interpreter's module (libpython, or a python executable it is linked
 * into), told by its name. Native frames of every other module (an
 * extension, libtorch's operators, the allocator) still tell sites apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "hmap.h"
#include "trace.h"

/* Is this module the interpreter: libpython3.12.so.1.0, python3.11, python?
 * Not an extension (_ctypes.cpython-312-...so, a pybind11 module) nor
 * libtorch_python.so: their frames tell sites apart (a review: "python"
 * anywhere in the name took an extension for the interpreter, and two
 * operators' sites were one). */
static int is_interpreter(const char *module)
{
    const char *b = gt_basename(module);
    if (!strncmp(b, "lib", 3))
        b += 3;
    if (strncmp(b, "python", 6))
        return 0;
    b += 6;   /* then a version (3.12, 3), an ABI flag (d, t), ".so..." or nothing */
    while ((*b >= '0' && *b <= '9') || (*b == '.' && b[1] >= '0' && b[1] <= '9'))
        b++;
    if (*b == 'd' || *b == 't' || *b == 'm')
        b++;
    return *b == 0 || !strncmp(b, ".so", 3);
}

enum { FRAME_OTHER = 1, FRAME_PYTHON, FRAME_INTERPRETER };   /* (a frame not in the map: GT_HMAP_NONE, kept) */

/* Each frame's class by its id (a small table: one row per distinct
 * address); returns how many are the interpreter's, 0 where the trace has
 * no Python frame (nothing to merge), or minus an exit status. */
static long frame_classes(struct gt_trace *t, struct gt_hmap *cls)
{
    sqlite3_stmt *st;
    int code = gt_trace_prepare_optional(t, "SELECT id, kind = 'python', module FROM frames", &st,
                                         "reading the interpreter's frames");
    if (code || !st)
        return -code;   /* (a trace from before Python frames: no kind column) */
    long interpreter = 0, python = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *module = (const char *)sqlite3_column_text(st, 2);
        int c = sqlite3_column_int(st, 1) ? FRAME_PYTHON : module && is_interpreter(module) ? FRAME_INTERPRETER
                                                                                            : FRAME_OTHER;
        interpreter += c == FRAME_INTERPRETER;
        python += c == FRAME_PYTHON;
        if (gt_hmap_put(cls, (uint64_t)sqlite3_column_int64(st, 0), (uint32_t)c) == GT_HMAP_OOM) {
            fprintf(stderr, "gputrace: out of memory\n");
            exit(GT_EXIT_NOMEM);
        }
    }
    sqlite3_finalize(st);
    return python ? interpreter : 0;
}

struct key {
    int64_t *id;
    size_t n, cap;
    int python;   /* it has Python frames */
};

static uint64_t key_hash(const struct key *k)
{
    uint64_t h = 0xcbf29ce484222325ull ^ k->n;
    for (size_t i = 0; i < k->n; i++)
        h = (h ^ (uint64_t)k->id[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

int gt_trace_merge_interpreter_sites(struct gt_trace *t)
{
    if (!t->nsites || t->schema_version < 2)
        return GT_EXIT_OK;   /* (schema 1 had no Python frames) */
    struct gt_hmap cls;
    gt_hmap_init(&cls);
    long interpreter = frame_classes(t, &cls);
    if (interpreter <= 0) {
        gt_hmap_free(&cls);
        return (int)-interpreter;
    }
    /* stacks.id -> dense site */
    struct gt_hmap dense;
    gt_hmap_init(&dense);
    for (size_t s = 0; s < t->nsites; s++)
        if (gt_hmap_put(&dense, (uint64_t)t->site_ids[s], (uint32_t)s) == GT_HMAP_OOM) {
            fprintf(stderr, "gputrace: out of memory\n");
            exit(GT_EXIT_NOMEM);
        }
    size_t nsites = t->nsites;   /* (t->nsites shrinks below) */
    struct key *keys = gt_xcalloc(nsites + 1, sizeof *keys);
    sqlite3_stmt *st;
    /* in its key's order (a table without rowid: no sort), no join: each
     * frame's class from the map (a join per row was 1.6 s on 9.2 million) */
    int code = gt_trace_prepare_optional(t, "SELECT stack_id, frame_id FROM stack_frames ORDER BY stack_id, level", &st,
                                         "reading stacks");
    if (!code && !st)
        code = -1;   /* (no such table: nothing to merge) */
    int rc = SQLITE_ROW;
    int64_t last_stack = INT64_MIN;
    uint32_t s = GT_HMAP_NONE;
    while (!code && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t stack = sqlite3_column_int64(st, 0);
        if (stack != last_stack) {
            s = gt_hmap_get(&dense, (uint64_t)stack);
            last_stack = stack;
        }
        if (s == GT_HMAP_NONE)
            continue;
        struct key *k = &keys[s];
        int64_t frame = sqlite3_column_int64(st, 1);
        uint32_t c = gt_hmap_get(&cls, (uint64_t)frame);
        k->python |= c == FRAME_PYTHON;
        if (c == FRAME_INTERPRETER)
            continue;
        if (k->n == k->cap)
            k->id = gt_xrealloc(k->id, (k->cap = k->cap ? 2 * k->cap : 16) * sizeof *k->id);
        k->id[k->n++] = frame;
    }
    if (!code && rc != SQLITE_DONE)
        code = gt_trace_sql_error(t, rc, "reading stacks");
    if (st)
        sqlite3_finalize(st);
    /* the first site of each reading keeps it; sites renumbered densely */
    int32_t *to = gt_xmalloc((t->nsites + 1) * sizeof *to);
    size_t kept = 0;
    struct gt_hmap first;
    gt_hmap_init(&first);
    for (size_t s = 0; s < t->nsites && !code; s++) {
        to[s] = -1;
        if (keys[s].python) {
            uint64_t h = key_hash(&keys[s]);
            uint32_t f = gt_hmap_get(&first, h);
            const struct key *a = f == GT_HMAP_NONE ? NULL : &keys[f];
            if (a && a->n == keys[s].n && !memcmp(a->id, keys[s].id, a->n * sizeof *a->id))
                to[s] = to[f];
            else if (!a && gt_hmap_put(&first, h, (uint32_t)s) == GT_HMAP_OOM) {
                fprintf(stderr, "gputrace: out of memory\n");
                exit(GT_EXIT_NOMEM);
            }
        }
        if (to[s] < 0) {
            to[s] = (int32_t)kept;
            t->site_ids[kept++] = t->site_ids[s];
        }
    }
    if (!code && kept < t->nsites) {
        for (size_t i = 0; i < t->nev; i++)
            if (t->ev[i].site >= 0)
                t->ev[i].site = to[t->ev[i].site];
        t->nsites = kept;
    }
    for (size_t s = 0; s < nsites + 1; s++)
        free(keys[s].id);
    free(keys);
    free(to);
    gt_hmap_free(&first);
    gt_hmap_free(&dense);
    gt_hmap_free(&cls);
    return code < 0 ? GT_EXIT_OK : code;
}
