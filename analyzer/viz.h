/* viz.h - what `gputrace export` and `gputrace report` share: an output
 * file that appears whole or not at all (outfile.c), and how a failed trace
 * is reported. Their options are rows of the option table (cli_options.c). */
#ifndef GT_VIZ_H
#define GT_VIZ_H
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"

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

#endif
