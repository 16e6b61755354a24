/* The CPython objects a frame names, read without calling Python: a str's
 * text, and a line number from a code object's location table. The calling
 * thread's own objects are read in place (its running frames keep them
 * alive); another thread's (pybackward.c) only through process_vm_readv on
 * our own pid, because the frame that referenced them may have returned and
 * the objects been freed and their memory unmapped meanwhile: a read of
 * memory that is gone answers EFAULT instead of faulting, and nothing read is
 * followed before it has been copied. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pyobjects.h"

#define RD(type, base, off) (*(type const *)((const char *)(base) + (off)))

static _Atomic pid_t self_pid;   /* 0: not asked yet (any thread may ask: the same answer) */

bool gt_py_copy(const void *src, void *dst, size_t n)
{
    pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
    if (!pid)
        atomic_store_explicit(&self_pid, pid = getpid(), memory_order_relaxed);
    struct iovec local = {dst, n}, remote = {(void *)src, n};
    return n == 0 || process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n;
}

void gt_py_copy_after_fork(void)
{
    atomic_store(&self_pid, 0);
}

bool gt_py_fetch(const void *src, void *dst, size_t n, bool remote)
{
    if (remote)
        return gt_py_copy(src, dst, n);
    memcpy(dst, src, n);
    return true;
}

static size_t put_utf8(char *out, size_t o, size_t cap, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp >= 0xdc80 && cp <= 0xdcff) {
        /* a byte the file system's name had that is not UTF-8, as Python's
         * surrogateescape keeps it: as text "\xNN" (a lone surrogate written
         * as UTF-8 is not valid UTF-8, and the trace's TEXT could not be read
         * by Python's sqlite3 at all: a helper's probe) */
        static const char hex[] = "0123456789abcdef";
        char e[4] = {'\\', 'x', hex[cp >> 4 & 0xf], hex[cp & 0xf]};
        if (o + 4 >= cap)
            return o;
        memcpy(out + o, e, 4);
        return o + 4;
    }
    if (cp >= 0xd800 && cp <= 0xdfff)
        cp = 0xfffd;   /* another lone surrogate: the replacement character */
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    if (o + n >= cap)
        return o;
    memcpy(out + o, b, n);
    return o + n;
}

/* A compact str's code points (kind 1, 2 or 4 bytes each) at d as UTF-8,
 * copied a chunk at a time; *whole: all of them fitted. */
static bool put_code_points(const char *d, int64_t len, unsigned kind, char *out, size_t cap, size_t *o,
                            bool remote, bool *whole)
{
    *whole = false;
    _Alignas(8) uint8_t chunk[512];
    int64_t per = (int64_t)(sizeof chunk / kind);
    for (int64_t i = 0; i < len; i += per) {
        int64_t n = len - i < per ? len - i : per;
        if (!gt_py_fetch(d + i * kind, chunk, (size_t)n * kind, remote))
            return false;
        for (int64_t k = 0; k < n; k++) {
            uint32_t cp = kind == 1 ? chunk[k] : kind == 2 ? ((const uint16_t *)chunk)[k] : ((const uint32_t *)chunk)[k];
            size_t before = *o;
            *o = put_utf8(out, *o, cap, cp);
            if (*o == before)
                return true;   /* out is full */
        }
    }
    *whole = true;
    return true;
}

/* put_utf8's length for code point cp */
static size_t utf8_len(uint32_t cp)
{
    return cp >= 0xdc80 && cp <= 0xdcff ? 4 : cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* The first of the last code points of d[0, len) whose UTF-8 fits in budget
 * bytes, read backwards a chunk at a time; -1 unreadable. */
static int64_t tail_from(const char *d, int64_t len, unsigned kind, size_t budget, bool remote)
{
    _Alignas(8) uint8_t chunk[512];
    int64_t per = (int64_t)(sizeof chunk / kind);
    size_t bytes = 0;
    for (int64_t end = len; end > 0;) {
        int64_t n = end < per ? end : per;
        if (!gt_py_fetch(d + (end - n) * kind, chunk, (size_t)n * kind, remote))
            return -1;
        for (int64_t k = n - 1; k >= 0; k--) {
            uint32_t cp = kind == 1 ? chunk[k] : kind == 2 ? ((const uint16_t *)chunk)[k] : ((const uint32_t *)chunk)[k];
            if ((bytes += utf8_len(cp)) > budget)
                return end - n + k + 1;
        }
        end -= n;
    }
    return 0;
}

bool gt_py_str(const struct py_layout *L, const void *unicode_type, const void *s, char *out, size_t cap,
               bool remote)
{
    _Alignas(8) char h[128];   /* PyCompactUnicodeObject: str_compact_data bytes (72 at most) */
    out[0] = 0;
    if (!s || (size_t)L->str_compact_data > sizeof h || !gt_py_fetch(s, h, (size_t)L->str_ascii_data, remote) ||
        RD(const void *, h, 8) != unicode_type)
        return false;
    int64_t len = RD(int64_t, h, 16);
    uint32_t state = RD(uint32_t, h, 32);
    unsigned kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;
    if (!compact || len < 0 || (!ascii && kind != 1 && kind != 2 && kind != 4)) {
        snprintf(out, cap, "?");   /* 3.11's legacy strings: never a code object's */
        return true;
    }
    /* A text longer than out keeps its end after "...", from a character's
     * first byte: a file's path its file name (two long paths cut at the
     * same length were one file, and the report named a directory: a
     * helper's probe). */
    size_t o = 0;
    if (ascii) {
        size_t n = (size_t)len, from = 0;
        if (n > cap - 1) {
            from = n - (cap - 4);
            memcpy(out, "...", 3);
            o = 3;
        }
        if (!gt_py_fetch((const char *)s + L->str_ascii_data + from, out + o, n - from, remote))
            return false;
        o += n - from;
    } else {
        if (!gt_py_fetch(s, h, (size_t)L->str_compact_data, remote))
            return false;
        const char *utf8 = RD(const char *, h, L->str_utf8);
        int64_t n = utf8 ? RD(int64_t, h, L->str_utf8_length) : 0;
        if (utf8 && n >= 0 && (size_t)n < cap) {
            o = (size_t)n;
            if (!gt_py_fetch(utf8, out, o, remote))
                return false;
        } else if (utf8 && n >= 0) {
            size_t want = cap - 4, skip = 0;
            if (!gt_py_fetch(utf8 + (n - (int64_t)want), out + 3, want, remote))
                return false;
            while (skip < want && (out[3 + skip] & 0xc0) == 0x80)
                skip++;   /* (inside a character: from the next) */
            memmove(out + 3, out + 3 + skip, want - skip);
            memcpy(out, "...", 3);
            o = 3 + want - skip;
        } else {
            bool whole;
            const char *d = (const char *)s + L->str_compact_data;
            if (!put_code_points(d, len, kind, out, cap, &o, remote, &whole))
                return false;
            if (!whole) {   /* again from the last code points that fit */
                int64_t from = tail_from(d, len, kind, cap - 4, remote);
                if (from < 0)
                    return false;
                memcpy(out, "...", 3);
                o = 3;
                if (!put_code_points(d + from * kind, len - from, kind, out, cap, &o, remote, &whole))
                    return false;
            }
        }
    }
    out[o] = 0;
    return true;
}

/* ---- the location table (CPython's InternalDocs/locations.md, 3.11 and
 * 3.12): a sequence of entries, each a first byte with bit 7 set (bits 3-6:
 * a code, bits 0-2: code units covered, minus one) and bytes with bit 7
 * clear. The line changes by 0 (codes 0-9 and 15), code - 10 (codes 10-12),
 * or a signed varint right after the first byte (codes 13, 14); code 15: the
 * instruction has no line. Read a chunk at a time. */

#define MAX_TABLE (4 << 20)   /* larger is not a real function's: refuse */
#define BYTES_HEAD 32         /* PyBytesObject: PyObject_VAR_HEAD, ob_shash; then ob_sval */

struct table { const char *data; int64_t size, pos, at; int n; uint8_t buf[1024]; };

static int next_byte(struct table *t)
{
    if (t->pos >= t->size)
        return -1;
    if (t->pos < t->at || t->pos >= t->at + t->n) {
        int64_t n = t->size - t->pos < (int64_t)sizeof t->buf ? t->size - t->pos : (int64_t)sizeof t->buf;
        if (!gt_py_copy(t->data + t->pos, t->buf, (size_t)n))
            return -1;
        t->at = t->pos;
        t->n = (int)n;
    }
    return t->buf[t->pos++ - t->at];
}

/* bits 0-5 of each byte, least significant first; bit 6: more follow */
static bool varint(struct table *t, uint32_t *v)
{
    *v = 0;
    for (int shift = 0, b = 0x40; b & 0x40; shift += 6) {
        if ((b = next_byte(t)) < 0 || (b & 0x80) || shift > 30)
            return false;
        *v |= (uint32_t)(b & 0x3f) << shift;
    }
    return true;
}

bool gt_py_remote_line(const struct py_layout *L, const char *c, int addr, int *line)
{
    int32_t first = RD(int32_t, c, L->co_firstlineno);
    if (addr < 0) {
        *line = first;
        return true;
    }
    const char *bytes = RD(const char *, c, L->co_linetable);
    _Alignas(8) char h[BYTES_HEAD];
    if (!bytes || !gt_py_copy(bytes, h, sizeof h))
        return false;
    struct table t = {.data = bytes + BYTES_HEAD, .size = RD(int64_t, h, 16), .at = 0, .n = 0};
    if (t.size < 0 || t.size > MAX_TABLE)
        return false;
    int64_t computed = first, end = 0;
    int b = next_byte(&t);
    while (b >= 0) {
        if (!(b & 0x80))
            return false;   /* not the first byte of an entry */
        int code = b >> 3 & 15;
        end += 2 * ((b & 7) + 1);
        if (code == 13 || code == 14) {
            uint32_t v;
            if (!varint(&t, &v))
                return false;
            computed += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
        } else if (code >= 10 && code <= 12) {
            computed += code - 10;
        }
        if (addr < end) {
            *line = code == 15 ? -1 : (int)computed;
            return true;
        }
        while ((b = next_byte(&t)) >= 0 && !(b & 0x80))
            ;   /* the entry's columns */
    }
    if (t.pos < t.size)
        return false;   /* a read failed */
    *line = -1;         /* past the table: CPython answers -1 too */
    return true;
}
