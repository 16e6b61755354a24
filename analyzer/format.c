/* format.c - human sizes, durations and aligned tables for text output; byte
 * arguments on the command line. All text reports go through these so that
 * units and alignment are the same everywhere. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "exitcodes.h"
#include "format.h"

void *gt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "gputrace: out of memory (%zu bytes)\n", n);
        exit(GT_EXIT_NOMEM);
    }
    return p;
}

FILE *gt_xmemstream(char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (!f) {
        fprintf(stderr, "gputrace: out of memory\n");
        exit(GT_EXIT_NOMEM);
    }
    return f;
}

void *gt_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fprintf(stderr, "gputrace: out of memory (%zu x %zu bytes)\n", n, sz);
        exit(GT_EXIT_NOMEM);
    }
    return p;
}

void *gt_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "gputrace: out of memory (%zu bytes)\n", n);
        exit(GT_EXIT_NOMEM);
    }
    return q;
}

char *gt_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(gt_xmalloc(n), s, n);
}

/* Halves round away from zero, as people (and report.js's fmtBytes, which
 * does the same arithmetic) round: 81395712 bytes, 77.625 MiB exactly, is
 * "77.63 MiB" (printf alone rounds that half to even, "77.62"). */
static double round_to(double a, double scale)
{
    return floor(a * scale + 0.5) / scale;
}

const char *gt_fmt_bytes_d(double b, char buf[GT_FMT_LEN])
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double a = b < 0 ? -b : b;
    int u = 0;
    while (a >= 1024.0 && u < 5) {
        a /= 1024.0;
        u++;
    }
    double r = round_to(a, u ? 100 : 1);
    if (r >= 1024.0 && u < 5) {   /* 1023.999 KiB is 1.00 MiB, not 1024.00 KiB */
        a /= 1024.0;
        u++;
        r = round_to(a, 100);
    }
    const char *sign = b < 0 && r > 0 ? "-" : "";
    double hundredths = round_to(a, 100);
    if (u == 0 && a < 10 && hundredths != round_to(a, 1))   /* 0.32 B an iteration is not "0 B" */
        snprintf(buf, GT_FMT_LEN, "%s%.2f B", b < 0 && hundredths > 0 ? "-" : "", hundredths);
    else if (u == 0)
        snprintf(buf, GT_FMT_LEN, "%s%.0f B", sign, r);
    else
        snprintf(buf, GT_FMT_LEN, "%s%.2f %s", sign, r, units[u]);
    return buf;
}

const char *gt_fmt_bytes(int64_t b, char buf[GT_FMT_LEN])
{
    if (b > -1024 && b < 1024) {
        snprintf(buf, GT_FMT_LEN, "%lld B", (long long)b);
        return buf;
    }
    return gt_fmt_bytes_d((double)b, buf);
}

const char *gt_fmt_ns(int64_t ns, char buf[GT_FMT_LEN])
{
    if (ns < 0)
        snprintf(buf, GT_FMT_LEN, "?");
    else if (ns < 1000)
        snprintf(buf, GT_FMT_LEN, "%lld ns", (long long)ns);
    else if (ns < 1000000)
        snprintf(buf, GT_FMT_LEN, "%.3f us", ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, GT_FMT_LEN, "%.3f ms", ns / 1e6);
    else
        snprintf(buf, GT_FMT_LEN, "%.3f s", ns / 1e9);
    return buf;
}

void gt_fputs_shown(const char *s, FILE *f)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            putc(*p, f);
    }
}

const char *gt_shown(const char *s)
{
    size_t ctl = 0;
    for (const char *c = s; c && *c; c++)
        ctl += (unsigned char)*c < 0x20 || *c == 0x7f;
    if (!ctl)
        return s ? s : "";
    char *out = NULL;
    size_t len = 0;
    FILE *m = gt_xmemstream(&out, &len);
    gt_fputs_shown(s, m);
    fclose(m);
    /* kept where LeakSanitizer sees them: the last few, the oldest freed */
    static char *kept[16];
    static size_t next;
    free(kept[next % 16]);
    kept[next++ % 16] = out;
    return out;
}

const char *gt_basename(const char *s)
{
    if (!s)
        return "";
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

int gt_parse_bytes(const char *s, int64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned long long mul = 1;
    char u = (char)toupper((unsigned char)*end);
    if (*end) {
        int decimal = 0;
        const char *rest = end + 1;
        if (!strcmp(rest, "") || !strcmp(rest, "iB") || !strcmp(rest, "ib"))
            decimal = 0;
        else if (!strcmp(rest, "B") || !strcmp(rest, "b"))
            decimal = 1;
        else
            return -1;
        unsigned long long k = decimal ? 1000 : 1024;
        switch (u) {
        case 'K': mul = k; break;
        case 'M': mul = k * k; break;
        case 'G': mul = k * k * k; break;
        case 'T': mul = k * k * k * k; break;
        case 'B': if (!*rest) { mul = 1; break; } return -1;
        default: return -1;
        }
    }
    if (v > (unsigned long long)INT64_MAX / mul)
        return -1;
    *out = (int64_t)(v * mul);
    return 0;
}

void gt_table_init(struct gt_table *t, int ncols, unsigned right_mask)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->right_mask = right_mask;
}

void gt_table_row(struct gt_table *t, ...)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = gt_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    va_list ap;
    va_start(ap, t);
    for (int c = 0; c < t->ncols; c++) {
        const char *s = va_arg(ap, const char *);
        t->cells[t->nrows * t->ncols + c] = gt_xstrdup(s ? s : "");
    }
    va_end(ap);
    t->nrows++;
}

void gt_table_row_v(struct gt_table *t, char *const *row)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = gt_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    for (int c = 0; c < t->ncols; c++)
        t->cells[t->nrows * t->ncols + c] = gt_xstrdup(row[c] ? row[c] : "");
    t->nrows++;
}

/* Display width of a UTF-8 string: counts code points, not bytes. */
static int width_of(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

void gt_table_print(struct gt_table *t, FILE *f, int indent)
{
    int widths[32] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols && c < 32; c++) {
            int w = width_of(t->cells[r * t->ncols + c]);
            if (w > widths[c])
                widths[c] = w;
        }
    /* trailing empty cells would leave blanks at the end of lines */
    int used = 0;
    for (int c = 0; c < t->ncols && c < 32; c++)
        if (widths[c])
            used = c + 1;
    for (size_t r = 0; r < t->nrows; r++) {
        fprintf(f, "%*s", indent, "");
        for (int c = 0; c < used; c++) {
            const char *s = t->cells[r * t->ncols + c];
            int pad = (c < 32 ? widths[c] : 0) - width_of(s);
            int last = c == used - 1;
            if (t->right_mask & (1u << c))
                fprintf(f, "%*s%s", pad, "", s);
            else if (last)
                fputs(s, f);
            else
                fprintf(f, "%s%*s", s, pad, "");
            if (!last)
                fputs("  ", f);
        }
        fputc('\n', f);
    }
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
