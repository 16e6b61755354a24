/* json.c - streaming JSON writer (see json.h). Strings are escaped per RFC
 * 8259: quote, backslash and all control characters; invalid UTF-8 bytes are
 * replaced by U+FFFD so the output always parses, whatever the trace holds. */
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

/* Writes s as a JSON string literal. */
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
            /* validate one UTF-8 sequence; copy it or write U+FFFD */
            int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
            int ok = n > 0;
            for (int i = 1; ok && i < n; i++)
                ok = (p[i] & 0xc0) == 0x80;
            if (ok && n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)))
                ok = 0;   /* overlong or surrogate */
            if (ok && n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)))
                ok = 0;
            if (ok) {
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
