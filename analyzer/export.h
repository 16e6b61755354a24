/* export.h - what export.c's parts share (export.c: the parts of one
 * trace and the command; export_write.c: writing events, the window and the
 * nesting of slices on a track). */
#ifndef GT_EXPORT_H
#define GT_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "cli.h"

/* Synthetic tracks get tids above any Linux tid (pid_max is at most 2^22). */
#define TID_ITERATIONS (INT64_C(1) << 30)
#define TID_LANES (TID_ITERATIONS + 1)        /* start/end ranges: lane k */
#define MAX_LANES 4096
#define TID_STREAMS (TID_LANES + MAX_LANES)   /* GPU stream k */

/* Slices on one track must nest: the ends of the slices still open. */
struct track {
    int64_t tid;
    int64_t *ends;
    size_t n, cap;
};

struct stream_track {
    int64_t device, stream;
};

struct exporter {
    FILE *f;
    const struct gt_args *o;
    struct gt_ctx *c;
    size_t nout;          /* events written (all files) */
    int64_t pid, off_ns;  /* off_ns aligns processes on their wall-clock start */
    int64_t from, to;     /* window, ns since this process started */
    int64_t trace_end;
    struct track *tracks;
    size_t ntracks;
    int64_t lane_end[MAX_LANES];
    size_t nlanes;
    struct stream_track *streams;
    size_t nstreams;
};

/* Traces left out of the output, said in its otherData: JSON objects
 * {file, error, exit_status}, comma-separated, gathered in text */
struct missing {
    FILE *f;
    char *text;
    size_t len, n;
};

/* export_write.c */
int64_t ex_sat_sub(int64_t a, int64_t b);
void ex_begin(struct exporter *x, const char *ph, int64_t tid, int64_t t_ns);
void ex_kstr(struct exporter *x, const char *key, const char *val);
void ex_metadata(struct exporter *x, const char *what, int64_t tid, const char *key, const char *str, int64_t num);
int ex_in_window(const struct exporter *x, int64_t t);
int ex_nests(struct exporter *x, int64_t tid, int64_t s, int64_t e);
int ex_slice(struct exporter *x, int64_t tid, int64_t s, int64_t e, const char *cat, const char *name);
void ex_add_missing(struct missing *m, const char *path, const struct gt_trace *t, int code);
/* Writes ,"key":[...] if any were added, and frees them. */
void ex_put_missing(FILE *out, const char *key, struct missing *m);

#endif
