/* shim/pyobjects.c: what backward-pass attribution (pybackward.c) reads of
 * another thread's Python objects. A str or line table that is gone (its
 * memory unmapped) is refused, never a fault; text and line numbers read
 * through the safe path are the objects' own (3.11 layout row, objects built
 * by hand; tests/test_pystacks.py checks real ones end to end). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pylayout.h"
#include "pyobjects.h"
#include "tap.h"

static const struct py_layout *L = &gt_py_layouts[0];   /* 3.11 */
static const char unicode_type[1] = {0};              /* stands for &PyUnicode_Type */

/* A page that was mapped and is not any more: what a freed object's memory
 * can become (a frame-stack chunk, an arena returned to the system). */
static char *gone_page(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p, (size_t)page);
    return p;
}

/* A compact ASCII str of the 3.11 layout in buf: header, then the text. */
static void *ascii_str(void *buf, const char *text)
{
    char *s = buf;
    memset(s, 0, 128);
    *(const void **)(s + 8) = unicode_type;
    *(int64_t *)(s + 16) = (int64_t)strlen(text);
    *(uint32_t *)(s + 32) = 1u << 2 | 1u << 5 | 1u << 6;   /* kind 1, compact, ascii */
    strcpy(s + L->str_ascii_data, text);
    return s;
}

static void test_copy_of_unmapped_memory_fails_instead_of_faulting(void)
{
    char out[64];
    errno = 0;
    CHECK(!gt_py_copy(gone_page(), out, sizeof out));
    CHECKF(errno == EFAULT, "errno %d", errno);
    char here[64] = "alive";
    CHECK(gt_py_copy(here, out, sizeof here) && strcmp(out, "alive") == 0);
}

static void test_str_in_unmapped_memory_is_refused(void)
{
    char out[64] = "untouched";
    CHECK(!gt_py_str(L, unicode_type, gone_page(), out, sizeof out, true));
    /* a live header whose text runs into memory that is gone */
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(two + page, (size_t)page);
    char *s = two + page - L->str_ascii_data - 8;   /* 8 bytes of its 40 mapped */
    memset(s, 0, (size_t)L->str_ascii_data);
    *(const void **)(s + 8) = unicode_type;
    *(int64_t *)(s + 16) = 40;
    *(uint32_t *)(s + 32) = 1u << 2 | 1u << 5 | 1u << 6;
    CHECK(!gt_py_str(L, unicode_type, s, out, sizeof out, true));
    munmap(two, (size_t)page);
}

static void test_str_of_another_type_is_refused(void)
{
    _Alignas(16) char buf[128];
    char out[64];
    char *s = ascii_str(buf, "train_step");
    *(const void **)(s + 8) = out;   /* memory reused by another object */
    CHECK(!gt_py_str(L, unicode_type, s, out, sizeof out, true));
}

static void test_str_text_through_the_safe_path(void)
{
    _Alignas(16) char buf[128];
    char out[64];
    CHECK(gt_py_str(L, unicode_type, ascii_str(buf, "Model.forward"), out, sizeof out, true));
    CHECKF(strcmp(out, "Model.forward") == 0, "got %s", out);
    char small[9];   /* longer than out: its end kept, after "..." */
    CHECK(gt_py_str(L, unicode_type, ascii_str(buf, "Model.forward"), small, sizeof small, true));
    CHECKF(strcmp(small, "...rward") == 0, "got %s", small);
    /* a two-byte str without its UTF-8 cached: "é→x" */
    _Alignas(16) char w[128] = {0};
    *(const void **)(w + 8) = unicode_type;
    *(int64_t *)(w + 16) = 3;
    *(uint32_t *)(w + 32) = 2u << 2 | 1u << 5;   /* kind 2, compact, not ascii */
    uint16_t cps[3] = {0xe9, 0x2192, 'x'};
    memcpy(w + L->str_compact_data, cps, sizeof cps);
    CHECK(gt_py_str(L, unicode_type, w, out, sizeof out, true));
    CHECKF(strcmp(out, "\xc3\xa9\xe2\x86\x92x") == 0, "got %s", out);
}

/* A compact str of kind 2 (code points cps[0, n)) in buf, its UTF-8 cached
 * at utf8 if given. */
static void *wide_str(void *buf, const uint16_t *cps, int64_t n, const char *utf8)
{
    char *w = buf;
    memset(w, 0, (size_t)L->str_compact_data);
    *(const void **)(w + 8) = unicode_type;
    *(int64_t *)(w + 16) = n;
    *(uint32_t *)(w + 32) = 2u << 2 | 1u << 5;   /* kind 2, compact, not ascii */
    *(const char **)(w + L->str_utf8) = utf8;
    *(int64_t *)(w + L->str_utf8_length) = utf8 ? (int64_t)strlen(utf8) : 0;
    memcpy(w + L->str_compact_data, cps, (size_t)n * 2);
    return w;
}

static void test_a_long_path_keeps_its_file_name(void)
{
    /* two paths of 1,100 bytes that differ in their file names alone were one
     * file, cut at 1,023 bytes (a helper's probe): the end is what is kept */
    static char text[1200];
    memset(text, 'd', 1100);
    memcpy(text, "/tmp/", 5);
    strcpy(text + 1090, "/model_a.py");
    static _Alignas(16) char buf[1400];
    char out[64];
    CHECK(gt_py_str(L, unicode_type, ascii_str(buf, text), out, sizeof out, true));
    CHECKF(strlen(out) == 63 && !strncmp(out, "...", 3) && strstr(out, "dd/model_a.py"), "got %s", out);
    /* non-ASCII, its UTF-8 cached: cut at a character's first byte */
    uint16_t cps[400];
    static char utf8[1200];
    size_t u = 0;
    for (int i = 0; i < 390; i++) {
        cps[i] = 0xe9;   /* é: 2 bytes */
        utf8[u++] = (char)0xc3;
        utf8[u++] = (char)0xa9;
    }
    memcpy(cps + 390, (const uint16_t[]){'/', 'b', '.', 'p', 'y'}, 10);
    memcpy(utf8 + u, "/b.py", 6);
    for (int cached = 0; cached < 2; cached++) {
        CHECK(gt_py_str(L, unicode_type, wide_str(buf, cps, 395, cached ? utf8 : NULL), out, 12, true));
        size_t n = strlen(out);
        CHECKF(n <= 11 && !strncmp(out, "...", 3) && !strcmp(out + n - 5, "/b.py"), "cached %d: got %s", cached, out);
        CHECKF(((unsigned char)out[3] & 0xc0) != 0x80, "cached %d: starts inside a character: %s", cached, out);
    }
}

static void test_bytes_a_file_name_had_that_are_not_utf8_are_written_as_hex(void)
{
    /* surrogateescape: byte 0xe9 is U+DCE9 in Python's str; written as UTF-8
     * it was no valid UTF-8 and Python's sqlite3 could not read the trace */
    uint16_t cps[] = {'c', 'a', 'f', 0xdce9, '.', 'p', 'y', 0xd800};
    _Alignas(16) char buf[256];
    char out[64];
    CHECK(gt_py_str(L, unicode_type, wide_str(buf, cps, 8, NULL), out, sizeof out, true));
    CHECKF(!strcmp(out, "caf\\xe9.py\xef\xbf\xbd"), "got %s", out);
}

/* A code object's head (3.11) whose co_linetable is the bytes object in
 * table (PyBytesObject: 32 bytes of header, then the bytes). */
static void code_with_table(char *c, char *table, const uint8_t *bytes, size_t n, int first)
{
    memset(c, 0, 192);
    memset(table, 0, 32);
    *(int64_t *)(table + 16) = (int64_t)n;
    memcpy(table + 32, bytes, n);
    *(int32_t *)(c + L->co_firstlineno) = first;
    *(char **)(c + L->co_linetable) = table;
}

static void test_line_table_entries_of_every_form(void)
{
    /* first line 10; each entry: first byte 1 CODE LEN-1, then its bytes */
    static const uint8_t t[] = {
        0xe9, 0x02,             /* 13 (no columns), 2 units, line +1: 11 */
        0x80, 0x05,             /* 0 (short form), 1 unit, same line: 11 */
        0xe2, 0x01, 0x07,       /* 12 (one line, +2), 3 units: 13 */
        0xf8,                   /* 15 (no location), 1 unit: none */
        0xf0, 0x07, 0x00, 0x01, 0x02, /* 14 (long form), 1 unit, line -3: 10 */
        0xe8, 0x48, 0x03,       /* 13, 1 unit, line +200/2 (a two-byte varint): 110 */
    };
    _Alignas(16) char c[192], table[64];
    code_with_table(c, table, t, sizeof t, 10);
    static const int want[][2] = {{-1, 10}, {0, 11}, {2, 11}, {4, 11}, {6, 13}, {10, 13},
                                  {12, -1}, {14, 10}, {16, 110}, {18, -1}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int line = -99;
        CHECK(gt_py_remote_line(L, c, want[i][0], &line));
        CHECKF(line == want[i][1], "offset %d: line %d, want %d", want[i][0], line, want[i][1]);
    }
}

static void test_line_table_in_unmapped_memory_or_malformed_is_refused(void)
{
    static const uint8_t t[] = {0xe9, 0x02};
    _Alignas(16) char c[192], table[64];
    code_with_table(c, table, t, sizeof t, 10);
    *(char **)(c + L->co_linetable) = gone_page();
    int line;
    CHECK(!gt_py_remote_line(L, c, 0, &line));
    static const uint8_t bad[] = {0x02, 0xe9};   /* starts inside an entry */
    code_with_table(c, table, bad, sizeof bad, 10);
    CHECK(!gt_py_remote_line(L, c, 0, &line));
    code_with_table(c, table, t, sizeof t, 10);
    *(int64_t *)(table + 16) = -5;   /* not a bytes object's size */
    CHECK(!gt_py_remote_line(L, c, 0, &line));
}

int main(void)
{
    TAP_RUN(test_copy_of_unmapped_memory_fails_instead_of_faulting);
    TAP_RUN(test_str_in_unmapped_memory_is_refused);
    TAP_RUN(test_str_of_another_type_is_refused);
    TAP_RUN(test_str_text_through_the_safe_path);
    TAP_RUN(test_a_long_path_keeps_its_file_name);
    TAP_RUN(test_bytes_a_file_name_had_that_are_not_utf8_are_written_as_hex);
    TAP_RUN(test_line_table_entries_of_every_form);
    TAP_RUN(test_line_table_in_unmapped_memory_or_malformed_is_refused);
    return tap_done();
}
