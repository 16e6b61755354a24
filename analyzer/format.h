/* format.h - human-readable numbers and aligned text tables for the reports,
 * and parsing of byte-size arguments. */
#ifndef GT_FORMAT_H
#define GT_FORMAT_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define GT_FMT_LEN 48

/* "512 B", "1.50 KiB", "3.25 GiB"; negative values keep their sign. */
const char *gt_fmt_bytes(int64_t bytes, char buf[GT_FMT_LEN]);
/* Like gt_fmt_bytes for a fractional rate ("1.00 MiB"), e.g. bytes/iteration. */
const char *gt_fmt_bytes_d(double bytes, char buf[GT_FMT_LEN]);
/* "s" unless n is 1: "%lld allocation%s", n, gt_s(n). Every count in text
 * agrees with its noun ("1 allocation", "2 allocations"). */
static inline const char *gt_s(long long n)
{
    return n == 1 ? "" : "s";
}
/* A duration in ns as "812 ns", "1.250 ms", "12.345 s". */
const char *gt_fmt_ns(int64_t ns, char buf[GT_FMT_LEN]);
/* s as it may stand in one line of text: s itself, or where it has a
 * control character (a path with a newline split the one-line error and the
 * section's header: a helper's probe) a copy with each as \n, \t or \xNN,
 * valid until 16 more such copies are made (use it in the line at hand). */
const char *gt_shown(const char *s);
/* The same written to f, nothing kept. */
void gt_fputs_shown(const char *s, FILE *f);
/* Last path component (pointer into s). */
const char *gt_basename(const char *s);
/* Parses "1234", "64K"/"64KiB" (x1024), "1M"/"1MiB", "2G"/"2GiB", "1T"/"1TiB",
 * "1KB"/"1MB"/"1GB"/"1TB" (decimal). Returns 0 on success, -1 if malformed,
 * negative or out of range. */
int gt_parse_bytes(const char *s, int64_t *out);

/* A text table: cells are copied; columns are sized to their widest cell.
 * right_mask bit i set: column i is right-aligned (numbers). */
struct gt_table {
    int ncols;
    unsigned right_mask;
    char **cells;        /* nrows * ncols */
    size_t nrows, cap;
};
void gt_table_init(struct gt_table *t, int ncols, unsigned right_mask);
/* Appends a row of exactly ncols strings (NULL prints as empty). */
void gt_table_row(struct gt_table *t, ...);
/* The same from an array of ncols strings (tables whose width is data). */
void gt_table_row_v(struct gt_table *t, char *const *row);
/* Prints the table, each line prefixed by indent spaces, then frees it. */
void gt_table_print(struct gt_table *t, FILE *f, int indent);

/* malloc that never returns NULL: the analyzer cannot report anything useful
 * without memory, so it exits with a message and GT_EXIT_NOMEM (70) instead. */
void *gt_xmalloc(size_t n);
/* open_memstream, or exit GT_EXIT_NOMEM like gt_xmalloc when memory runs out. */
FILE *gt_xmemstream(char **buf, size_t *len);
void *gt_xcalloc(size_t n, size_t sz);
void *gt_xrealloc(void *p, size_t n);
char *gt_xstrdup(const char *s);
/* qsort that accepts an empty array at NULL (qsort itself requires a valid
 * pointer even for 0 elements: undefined behaviour otherwise). */
static inline void gt_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

#endif
