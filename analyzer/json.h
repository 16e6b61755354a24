/* json.h - a tiny streaming JSON writer for --json output: objects, arrays,
 * correctly escaped strings, exact 64-bit integers; indentation for people,
 * "inline" arrays on one line for long lists of numbers or frames. */
#ifndef GT_JSON_H
#define GT_JSON_H
#include <stdint.h>
#include <stdio.h>

/* Containers nest at most GT_JSON_MAX_DEPTH - 1 deep (the reports nest a
 * handful); deeper, the writer loses track of separators. */
#define GT_JSON_MAX_DEPTH 32

struct gt_json {
    FILE *f;
    int depth;
    unsigned char count[GT_JSON_MAX_DEPTH];   /* elements so far (saturating) */
    unsigned char inl[GT_JSON_MAX_DEPTH];     /* container printed on one line */
    int after_key;
};

void gt_json_init(struct gt_json *j, FILE *f);
void gt_json_obj(struct gt_json *j);        /* { */
void gt_json_obj_end(struct gt_json *j);    /* } */
void gt_json_arr(struct gt_json *j);        /* [ */
void gt_json_arr_inline(struct gt_json *j); /* [ with its elements on one line */
void gt_json_arr_end(struct gt_json *j);    /* ] */
void gt_json_key(struct gt_json *j, const char *key);
void gt_json_str(struct gt_json *j, const char *s);   /* NULL writes null */
void gt_json_int(struct gt_json *j, int64_t v);
void gt_json_double(struct gt_json *j, double v);     /* non-finite writes null */
void gt_json_bool(struct gt_json *j, int v);
void gt_json_null(struct gt_json *j);
/* Writes s as an escaped string literal straight to f (for writers that lay
 * out their own JSON, like the Chrome-trace export). */
void gt_json_put_string(FILE *f, const char *s);
/* Length of the well-formed UTF-8 sequence at NUL-terminated p, 0 if none
 * begins there (json.c says which forms are refused). */
int gt_utf8_len(const unsigned char *p);
/* Ends the document (newline). */
void gt_json_done(struct gt_json *j);

/* key + value shorthands */
void gt_json_kstr(struct gt_json *j, const char *k, const char *s);
void gt_json_kint(struct gt_json *j, const char *k, int64_t v);
/* v < 0 writes null: for "unknown" counts and sizes */
void gt_json_kint_or_null(struct gt_json *j, const char *k, int64_t v);
void gt_json_kdouble(struct gt_json *j, const char *k, double v);

#endif
