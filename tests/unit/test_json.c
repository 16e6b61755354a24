/* Unit tests of the analyzer's JSON writer (analyzer/json.c): whatever bytes a
 * trace holds (range names, kernel names, frames, paths), every string it
 * writes is valid JSON and valid UTF-8, and decodes to the input with each
 * byte that does not begin a well-formed UTF-8 sequence replaced by U+FFFD.
 * Checked exhaustively for every 1- and 2-byte string and every lead byte
 * followed by continuation bytes, and by random fuzzing; plus documents built
 * with the writer's API and numbers that read back exactly. The UTF-8
 * validator and the JSON parser here are the test's own, strict ones. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tap.h"

/* ---- a strict UTF-8 validator (RFC 3629), by decoding ----------------- */

/* Length of the well-formed sequence at p[0..n), or 0: a byte that is not a
 * lead, a missing or wrong continuation, an overlong encoding, a surrogate,
 * or a code point above U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static int utf8_valid(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* What the writer must keep of s: well-formed sequences as they are, every
 * other byte as U+FFFD. Returns the length written to out (cap >= 3 * len). */
static size_t expected_text(const unsigned char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    return o;
}

/* ---- a strict JSON parser (RFC 8259) ---------------------------------- */

struct parser {
    const unsigned char *p, *end;
    unsigned char *str;   /* the last string's decoded bytes */
    size_t len, cap;
    const char *err;
};

static void ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int fail(struct parser *ps, const char *why)
{
    if (!ps->err)
        ps->err = why;
    return 0;
}

static void put(struct parser *ps, const void *b, size_t n)
{
    if (ps->len + n > ps->cap) {
        ps->cap = (ps->len + n) * 2 + 64;
        ps->str = realloc(ps->str, ps->cap);
    }
    memcpy(ps->str + ps->len, b, n);
    ps->len += n;
}

static int hex4(struct parser *ps, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        if (ps->p >= ps->end)
            return fail(ps, "truncated \\u escape");
        unsigned c = *ps->p++;
        int d = c >= '0' && c <= '9' ? (int)c - '0' : c >= 'a' && c <= 'f' ? (int)c - 'a' + 10
              : c >= 'A' && c <= 'F' ? (int)c - 'A' + 10 : -1;
        if (d < 0)
            return fail(ps, "bad hex digit in \\u escape");
        *v = *v << 4 | (uint32_t)d;
    }
    return 1;
}

static void put_cp(struct parser *ps, uint32_t cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80)
        b[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800)
        b[0] = (unsigned char)(0xc0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        b[0] = (unsigned char)(0xe0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
        b[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
    else
        b[0] = (unsigned char)(0xf0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), b[3] = (unsigned char)(0x80 | (cp & 0x3f)), n = 4;
    put(ps, b, n);
}

static int string(struct parser *ps)
{
    ps->len = 0;
    if (ps->p >= ps->end || *ps->p != '"')
        return fail(ps, "expected a string");
    ps->p++;
    while (ps->p < ps->end) {
        unsigned c = *ps->p;
        if (c == '"') {
            ps->p++;
            return 1;
        }
        if (c < 0x20)
            return fail(ps, "raw control character in a string");
        if (c == '\\') {
            if (++ps->p >= ps->end)
                return fail(ps, "truncated escape");
            unsigned e = *ps->p++;
            const char *simple = strchr("\"\\/bfnrt", (int)e);
            if (e && simple) {
                static const char val[] = "\"\\/\b\f\n\r\t";
                put(ps, &val[simple - "\"\\/bfnrt"], 1);
                continue;
            }
            if (e != 'u')
                return fail(ps, "unknown escape");
            uint32_t cp, lo;
            if (!hex4(ps, &cp))
                return 0;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return fail(ps, "lone low surrogate escape");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
                    return fail(ps, "high surrogate escape without its low half");
                ps->p += 2;
                if (!hex4(ps, &lo))
                    return 0;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return fail(ps, "high surrogate escape without its low half");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            put_cp(ps, cp);
            continue;
        }
        size_t k = utf8_seq(ps->p, (size_t)(ps->end - ps->p));
        if (!k)
            return fail(ps, "invalid UTF-8 in a string");
        put(ps, ps->p, k);
        ps->p += k;
    }
    return fail(ps, "unterminated string");
}

static int digits(struct parser *ps)
{
    const unsigned char *s = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > s;
}

static int number(struct parser *ps)
{
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '0')
        ps->p++;
    else if (!digits(ps))
        return fail(ps, "bad number");
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!digits(ps))
            return fail(ps, "no digits after the decimal point");
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!digits(ps))
            return fail(ps, "no digits in the exponent");
    }
    return 1;
}

static int value(struct parser *ps, int depth);

static int container(struct parser *ps, int depth, int obj)
{
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
        ps->p++;
        return 1;
    }
    for (;;) {
        ws(ps);
        if (obj) {
            if (!string(ps))
                return 0;
            ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, "expected ':'");
            ps->p++;
        }
        if (!value(ps, depth + 1))
            return 0;
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
            ps->p++;
            return 1;
        }
        return fail(ps, "expected ',' or the container's end");
    }
}

static int value(struct parser *ps, int depth)
{
    if (depth > 100)
        return fail(ps, "too deep");
    ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "expected a value");
    switch (*ps->p) {
    case '{': return container(ps, depth, 1);
    case '[': return container(ps, depth, 0);
    case '"': return string(ps);
    case 't': case 'f': case 'n': {
        static const char *const lit[] = {"true", "false", "null"};
        for (int i = 0; i < 3; i++) {
            size_t l = strlen(lit[i]);
            if ((size_t)(ps->end - ps->p) >= l && !memcmp(ps->p, lit[i], l)) {
                ps->p += l;
                return 1;
            }
        }
        return fail(ps, "bad literal");
    }
    default: return number(ps);
    }
}

/* Is [p, p+n) one whole JSON document? */
static int parse_document(const char *p, size_t n, const char **err)
{
    struct parser ps = {(const unsigned char *)p, (const unsigned char *)p + n, NULL, 0, 0, NULL};
    int ok = value(&ps, 0);
    ws(&ps);
    if (ok && ps.p != ps.end)
        ok = fail(&ps, "text after the document");
    free(ps.str);
    *err = ps.err;
    return ok;
}

/* ---- checking strings written by the writer --------------------------- */

/* s for a diagnostic line: every byte as \xNN (all: 1), or only those
 * outside printable ASCII (all: 0). One buffer per slot. */
static const char *shown(int slot, const void *p, size_t n, int all)
{
    static char buf[2][4 * 200 + 1];
    const unsigned char *s = p;
    size_t o = 0;
    for (size_t i = 0; i < n && i < 200; i++)
        if (!all && s[i] >= 0x20 && s[i] < 0x7f)
            buf[slot][o++] = (char)s[i];
        else
            o += (size_t)snprintf(buf[slot] + o, sizeof buf[slot] - o, "\\x%02x", s[i]);
    buf[slot][o] = 0;
    return buf[slot];
}

/* A batch of inputs written one per line through gt_json_put_string (the
 * string writer behind gt_json_str and gt_json_key too), then each line
 * parsed and compared with the expected text. */
struct batch {
    char *buf;
    size_t len;
    FILE *f;
    unsigned char (*in)[32];
    size_t *inlen, n, cap;
};

static void batch_begin(struct batch *b)
{
    memset(b, 0, sizeof *b);
    b->f = open_memstream(&b->buf, &b->len);
}

static void batch_add(struct batch *b, const unsigned char *s, size_t n)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 4096;
        b->in = realloc(b->in, b->cap * sizeof *b->in);
        b->inlen = realloc(b->inlen, b->cap * sizeof *b->inlen);
    }
    memcpy(b->in[b->n], s, n);
    b->in[b->n][n] = 0;
    b->inlen[b->n++] = n;
    gt_json_put_string(b->f, (const char *)b->in[b->n - 1]);
    fputc('\n', b->f);
}

/* Parses every line; returns the number of bad ones (each reported, up to a cap). */
static size_t batch_check(struct batch *b, const char *what)
{
    fclose(b->f);
    size_t bad = 0;
    if (!utf8_valid((const unsigned char *)b->buf, b->len)) {
        CHECKF(0, "%s: the output is not valid UTF-8", what);
        bad++;
    }
    const char *line = b->buf;
    unsigned char want[32 * 3];
    for (size_t i = 0; i < b->n; i++) {
        const char *nl = memchr(line, '\n', (size_t)(b->buf + b->len - line));
        if (!nl) {
            CHECKF(0, "%s: output ends before input %zu (a raw newline in a string?)", what, i);
            bad++;
            break;
        }
        struct parser ps = {(const unsigned char *)line, (const unsigned char *)nl, NULL, 0, 0, NULL};
        int ok = string(&ps) && ps.p == ps.end;
        size_t wn = expected_text(b->in[i], b->inlen[i], want);
        if (!ok || ps.len != wn || (wn && memcmp(ps.str, want, wn))) { /* memcmp(NULL, .., 0) is UB */
            if (++bad <= 10)
                CHECKF(0, "%s: input \"%s\" written as %s: %s", what, shown(0, b->in[i], b->inlen[i], 1),
                       shown(1, line, (size_t)(nl - line), 0),
                       !ok ? (ps.err ? ps.err : "text after the string") : "decodes to other text");
        }
        free(ps.str);
        line = nl + 1;
    }
    free(b->buf);
    free(b->in);
    free(b->inlen);
    return bad;
}

static void test_every_one_byte_string(void)
{
    struct batch b;
    batch_begin(&b);
    for (unsigned c = 1; c < 256; c++) {
        unsigned char s[1] = {(unsigned char)c};
        batch_add(&b, s, 1);
    }
    CHECK_EQ_INT(batch_check(&b, "1 byte"), 0);
}

static void test_every_two_byte_string(void)
{
    struct batch b;
    batch_begin(&b);
    for (unsigned c = 1; c < 256; c++)
        for (unsigned d = 1; d < 256; d++) {
            unsigned char s[2] = {(unsigned char)c, (unsigned char)d};
            batch_add(&b, s, 2);
        }
    CHECK_EQ_INT(batch_check(&b, "2 bytes"), 0);
}

/* Every byte >= 0x80 followed by two continuation bytes (all values), and by
 * three (the first all values, the others at both ends of their range);
 * alone and between ASCII letters, so resynchronising is checked too. */
static void test_every_lead_byte_followed_by_continuation_bytes(void)
{
    struct batch b;
    batch_begin(&b);
    for (unsigned c = 0x80; c < 0x100; c++)
        for (unsigned c1 = 0x80; c1 < 0xc0; c1++) {
            for (unsigned c2 = 0x80; c2 < 0xc0; c2++) {
                unsigned char s[3] = {(unsigned char)c, (unsigned char)c1, (unsigned char)c2};
                batch_add(&b, s, 3);
            }
            static const unsigned char ends[2] = {0x80, 0xbf};
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    unsigned char s[4] = {(unsigned char)c, (unsigned char)c1, ends[i], ends[j]};
                    batch_add(&b, s, 4);
                    unsigned char t[6] = {'a', (unsigned char)c, (unsigned char)c1, ends[i], ends[j], 'z'};
                    batch_add(&b, t, 6);
                }
        }
    CHECK_EQ_INT(batch_check(&b, "lead + continuations"), 0);
}

/* The known bug's case, named: a range called "\xff\x80\x80". */
static void test_invalid_lead_bytes_f5_to_ff_are_replaced(void)
{
    struct batch b;
    batch_begin(&b);
    batch_add(&b, (const unsigned char *)"\xff\x80\x80", 3);
    batch_add(&b, (const unsigned char *)"\xf5\x80\x80\x80", 4);
    batch_add(&b, (const unsigned char *)"\xf8\x88\x80\x80\x80", 5);
    batch_add(&b, (const unsigned char *)"\xc0\xaf", 2);             /* overlong '/' */
    batch_add(&b, (const unsigned char *)"\xe0\x80\xaf", 3);         /* overlong '/' */
    batch_add(&b, (const unsigned char *)"\xf0\x80\x80\xaf", 4);     /* overlong '/' */
    batch_add(&b, (const unsigned char *)"\xed\xa0\x80", 3);         /* U+D800 */
    batch_add(&b, (const unsigned char *)"\xf4\x90\x80\x80", 4);     /* U+110000 */
    batch_add(&b, (const unsigned char *)"\xf4\x8f\xbf\xbf", 4);     /* U+10FFFF: valid */
    CHECK_EQ_INT(batch_check(&b, "named cases"), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gt_json_put_string(f, "\xff\x80\x80");
    fclose(f);
    CHECKF(!strcmp(buf, "\"\\ufffd\\ufffd\\ufffd\""), "\"\\xff\\x80\\x80\" written as %s", shown(0, buf, len, 0));
    free(buf);
}

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static void test_random_byte_strings(void)
{
    struct batch b;
    batch_begin(&b);
    for (int k = 0; k < 200000; k++) {
        unsigned char s[24];
        size_t n = (size_t)(rnd() % 24);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd(), kind = r % 10;
            r >>= 8;
            s[i] = kind < 2 ? (unsigned char)(0x20 + r % 0x5f)           /* printable ASCII */
                 : kind < 3 ? (unsigned char)(1 + r % 0x1f)              /* control */
                 : kind < 4 ? (unsigned char)("\"\\/\x7f"[r % 4])
                 : kind < 7 ? (unsigned char)(0x80 + r % 0x40)           /* continuation */
                            : (unsigned char)(0xc0 + r % 0x40);          /* lead or never-valid */
        }
        batch_add(&b, s, n);
    }
    CHECK_EQ_INT(batch_check(&b, "random bytes"), 0);
}

/* Well-formed text of random code points (all lengths, the edges of each
 * range) comes back byte for byte. */
static void test_random_valid_utf8_round_trips(void)
{
    static const uint32_t edges[] = {0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x10ffff};
    struct batch b;
    batch_begin(&b);
    for (int k = 0; k < 50000; k++) {
        struct parser ps = {0};
        size_t ncp = 1 + (size_t)(rnd() % 6);
        for (size_t i = 0; i < ncp; i++) {
            uint64_t r = rnd();
            uint32_t cp = r % 4 == 0 ? edges[(r >> 8) % 10] : (uint32_t)(1 + (r >> 8) % 0x10ffff);
            if (cp >= 0xd800 && cp <= 0xdfff)
                cp = 0xfffd;
            put_cp(&ps, cp);
        }
        CHECK(utf8_valid(ps.str, ps.len));
        batch_add(&b, ps.str, ps.len);
        free(ps.str);
    }
    CHECK_EQ_INT(batch_check(&b, "valid UTF-8"), 0);
}

/* ---- documents -------------------------------------------------------- */

static void test_documents_from_the_writer_parse(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct gt_json j;
    gt_json_init(&j, f);
    gt_json_obj(&j);
    gt_json_kstr(&j, "file", "trace\xff.db");
    gt_json_kstr(&j, "null", NULL);
    gt_json_kint(&j, "min", INT64_MIN);
    gt_json_kint(&j, "max", INT64_MAX);
    gt_json_kint_or_null(&j, "unknown", -1);
    gt_json_kdouble(&j, "nan", NAN);
    gt_json_kdouble(&j, "inf", -INFINITY);
    gt_json_key(&j, "\x80key\"\\\n");
    gt_json_bool(&j, 1);
    gt_json_key(&j, "empty");
    gt_json_arr(&j);
    gt_json_arr_end(&j);
    gt_json_key(&j, "frames");
    gt_json_arr_inline(&j);
    for (int i = 0; i < 300; i++) /* past the 255 the element counter saturates at */
        gt_json_str(&j, i % 2 ? "f\xed\xa0\x80()" : "g()");
    gt_json_arr_end(&j);
    gt_json_key(&j, "nested");
    gt_json_arr(&j);
    for (int i = 0; i < 3; i++) {
        gt_json_obj(&j);
        gt_json_kstr(&j, "name", "\xe2\x82\xac\xe2\x82");
        gt_json_key(&j, "points");
        gt_json_arr_inline(&j);
        gt_json_arr(&j); /* inside an inline array, inline too */
        gt_json_int(&j, i);
        gt_json_double(&j, 0.1 * i);
        gt_json_arr_end(&j);
        gt_json_null(&j);
        gt_json_arr_end(&j);
        gt_json_obj_end(&j);
    }
    gt_json_arr_end(&j);
    gt_json_obj_end(&j);
    gt_json_done(&j);
    fclose(f);
    const char *err = NULL;
    CHECKF(parse_document(buf, len, &err), "document does not parse (%s): %s", err, shown(0, buf, len, 0));
    CHECK(utf8_valid((const unsigned char *)buf, len));
    CHECK(len && buf[len - 1] == '\n');
    free(buf);
}

/* The documented limit (json.h): GT_JSON_MAX_DEPTH - 1 nested containers,
 * each holding a value before and after the next one. */
static void test_nesting_to_the_documented_depth_parses(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct gt_json j;
    gt_json_init(&j, f);
    for (int i = 0; i < GT_JSON_MAX_DEPTH - 1; i++) {
        if (i % 2) {
            gt_json_obj(&j);
            gt_json_kint(&j, "before", i);
            gt_json_key(&j, "inner");
        } else {
            gt_json_arr(&j);
            gt_json_int(&j, i);
        }
    }
    for (int i = GT_JSON_MAX_DEPTH - 2; i >= 0; i--) {
        if (i % 2) {
            gt_json_kint(&j, "after", i);
            gt_json_obj_end(&j);
        } else {
            gt_json_int(&j, i);
            gt_json_arr_end(&j);
        }
    }
    gt_json_done(&j);
    fclose(f);
    const char *err = NULL;
    CHECKF(parse_document(buf, len, &err), "document does not parse (%s): %s", err, shown(0, buf, len, 0));
    free(buf);
}

static void test_doubles_read_back_exactly(void)
{
    static const double fixed[] = {0, -0.0, 1, -1, 0.1, 1.0 / 3, 2.5e-7, 123456789.125, 9e15, 9.5e15, 1e300,
                                   -1e-300, 5e-324, 1.7976931348623157e308, 4503599627370497.0};
    double v[2000];
    size_t n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        v[n++] = fixed[i];
    while (n < 2000) { /* random finite bit patterns */
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isfinite(d))
            v[n++] = d;
    }
    for (size_t i = 0; i < n; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        struct gt_json j;
        gt_json_init(&j, f);
        gt_json_double(&j, v[i]);
        fclose(f);
        const char *err = NULL;
        CHECKF(parse_document(buf, len, &err), "%.17g written as \"%s\": %s", v[i], buf, err);
        CHECKF(strtod(buf, NULL) == v[i], "%.17g written as \"%s\"", v[i], buf);
        free(buf);
    }
}

int main(void)
{
    TAP_RUN(test_every_one_byte_string);
    TAP_RUN(test_every_two_byte_string);
    TAP_RUN(test_every_lead_byte_followed_by_continuation_bytes);
    TAP_RUN(test_invalid_lead_bytes_f5_to_ff_are_replaced);
    TAP_RUN(test_random_byte_strings);
    TAP_RUN(test_random_valid_utf8_round_trips);
    TAP_RUN(test_documents_from_the_writer_parse);
    TAP_RUN(test_nesting_to_the_documented_depth_parses);
    TAP_RUN(test_doubles_read_back_exactly);
    return tap_done();
}
