/* viz.h - what `gputrace export` and `gputrace report` share: their command
 * line, and an output file that appears whole or not at all. */
#ifndef GT_VIZ_H
#define GT_VIZ_H
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"

struct gt_viz_opts {
    struct gt_opts base;       /* --memory, --device, --iteration(s), --device-bytes, --top, --frames */
    const char *out;           /* -o FILE; NULL or "-": stdout */
    int64_t from, to;          /* --from/--to, ns since each process started; -1: open */
    int iter_range;            /* --iterations A:B given */
    int64_t iter_a, iter_b;
    int no_kernels, no_allocs;
    char **files;
    int nfiles;
};

/* Parses the arguments after the command name. Returns GT_EXIT_OK (with
 * *help set for --help) or GT_EXIT_USAGE after the one-line message. */
int gt_viz_parse(const char *cmd, int is_export, int argc, char **argv, struct gt_viz_opts *o, int *help);

/* -o FILE is written as a temporary file in FILE's directory and renamed over
 * FILE only when complete, so a failure never leaves a partial FILE. */
struct gt_outfile {
    FILE *f;
    char *tmp;           /* NULL: stdout */
    const char *path;
};
int gt_outfile_open(struct gt_outfile *of, const char *path);
/* Flushes and renames; on any write error removes the temporary file. Both
 * return an exit status and print the one-line message on failure. */
int gt_outfile_commit(struct gt_outfile *of);
void gt_outfile_abort(struct gt_outfile *of);

/* Prints "gputrace: FILE: message" for a failed trace. */
void gt_viz_fail(const char *path, const struct gt_trace *t, int code);

int gt_cmd_export(int argc, char **argv);
int gt_cmd_report(int argc, char **argv);

#endif
