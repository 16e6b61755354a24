/* json.c - streaming JSON writer (see json.h). Strings are escaped per RFC
 * 8259: quote, backslash and all control characters; bytes that are not
 * well-formed UTF-8 are replaced by U+FFFD so the output always parses and is
 * valid UTF-8, whatever the trace holds (tests/unit/test_json.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void gt_json_init(struct gt_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

static void newline(struct gt_json *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

/* Called before every value or key: separator and layout. */
static void before(struct gt_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth == 0)
        return;
    if (j->count[j->depth])
        fputc(',', j->f);
    if (j->inl[j->depth]) {
        if (j->count[j->depth])
            fputc(' ', j->f);
    } else {
        newline(j);
    }
    if (j->count[j->depth] < 255)
        j->count[j->depth]++;
}

static void open_container(struct gt_json *j, char c, int inl)
{
    before(j);
    fputc(c, j->f);
    if (j->depth + 1 < GT_JSON_MAX_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
    j->inl[j->depth] = (unsigned char)(inl || (j->depth > 1 && j->inl[j->depth - 1]));
}

static void close_container(struct gt_json *j, char c)
{
    int had = j->count[j->depth], inl = j->inl[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had && !inl)
        newline(j);
    fputc(c, j->f);
}

void gt_json_obj(struct gt_json *j) { open_container(j, '{', 0); }
void gt_json_obj_end(struct gt_json *j) { close_container(j, '}'); }
void gt_json_arr(struct gt_json *j) { open_container(j, '[', 0); }
void gt_json_arr_inline(struct gt_json *j) { open_container(j, '[', 1); }
void gt_json_arr_end(struct gt_json *j) { close_container(j, ']'); }

/* Length of the well-formed UTF-8 sequence at p (Unicode's table of
 * well-formed byte sequences, RFC 3629), or 0 when p does not start one: a
 * byte that is no lead (80..C1, F5..FF), a missing continuation, an overlong
 * form (E0 80..9F, F0 80..8F), a surrogate (ED A0..BF) or a code point above
 * U+10FFFF (F4 90..BF). p is NUL-terminated: a NUL is never a continuation,
 * so nothing past it is read. */
int gt_utf8_len(const unsigned char *p)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    int n;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Writes s as a JSON string literal. Well-formed UTF-8 is copied as is; each
 * byte that does not begin a well-formed sequence is written as the escape
 * \ufffd (U+FFFD, the replacement character), so the output stays ASCII
 * there and the next byte is looked at afresh. */
static void write_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            case '\b': fputs("\\b", f); break;
            case '\f': fputs("\\f", f); break;
            default: fprintf(f, "\\u%04x", c);
            }
            p++;
        } else if (c < 0x80) {
            fputc(c, f);
            p++;
        } else {
            int n = gt_utf8_len(p);
            if (n) {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            } else {
                fputs("\\ufffd", f);
                p++;
            }
        }
    }
    fputc('"', f);
}

void gt_json_key(struct gt_json *j, const char *key)
{
    before(j);
    write_string(j->f, key);
    fputs(": ", j->f);
    j->after_key = 1;
}

void gt_json_str(struct gt_json *j, const char *s)
{
    before(j);
    if (s)
        write_string(j->f, s);
    else
        fputs("null", j->f);
}

void gt_json_int(struct gt_json *j, int64_t v)
{
    before(j);
    fprintf(j->f, "%lld", (long long)v);
}

void gt_json_double(struct gt_json *j, double v)
{
    before(j);
    if (!isfinite(v)) {
        fputs("null", j->f);
        return;
    }
    if (v == floor(v) && fabs(v) < 9e15) {
        fprintf(j->f, "%.0f", v);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, j->f);
}

void gt_json_bool(struct gt_json *j, int v)
{
    before(j);
    fputs(v ? "true" : "false", j->f);
}

void gt_json_null(struct gt_json *j)
{
    before(j);
    fputs("null", j->f);
}

void gt_json_done(struct gt_json *j)
{
    fputc('\n', j->f);
}

void gt_json_kstr(struct gt_json *j, const char *k, const char *s)
{
    gt_json_key(j, k);
    gt_json_str(j, s);
}

void gt_json_kint(struct gt_json *j, const char *k, int64_t v)
{
    gt_json_key(j, k);
    gt_json_int(j, v);
}

void gt_json_kint_or_null(struct gt_json *j, const char *k, int64_t v)
{
    gt_json_key(j, k);
    if (v < 0)
        gt_json_null(j);
    else
        gt_json_int(j, v);
}

void gt_json_kdouble(struct gt_json *j, const char *k, double v)
{
    gt_json_key(j, k);
    gt_json_double(j, v);
}

void gt_json_put_string(FILE *f, const char *s)
{
    write_string(f, s);
}
