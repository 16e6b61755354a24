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
    char *chosen;        /* the default file chosen for a terminal (gt_outfile_default) */
    char *target;        /* path, or where the link at path points: the file replaced */
    int direct;          /* f is path itself, opened for writing: a device, a FIFO, a terminal */
};
int gt_outfile_open(struct gt_outfile *of, const char *path);
/* path is a SQLite database's -wal, -shm or -journal (NAME.db-wal beside a
 * database NAME.db), or starts as a write-ahead log does: writing a file
 * there (export, report, a trace of `run`) costs the database's data. */
int gt_is_sqlite_companion(const char *path);

/* What export and report write when no -o was given: stdout, unless stdout
 * is a terminal, where pages of HTML or JSON help nobody. Then the output
 * goes to a file beside the first trace: the trace's name without ".db",
 * plus suffix ("-report.html", ".json"). That file is replaced only if it is
 * one gputrace wrote (its first bytes start with `ours` and contain `mark`);
 * anything else there is refused. Sets *path to the file, or NULL for stdout
 * (malloc'ed into of->chosen). Returns an exit status (message printed). */
int gt_outfile_default(struct gt_outfile *of, const char *first_trace, const char *suffix, const char *ours,
                       const char *mark, const char **path);
/* Flushes and renames; on any write error removes the temporary file. Both
 * return an exit status and print the one-line message on failure. */
int gt_outfile_commit(struct gt_outfile *of);
/* After a commit: prints "gputrace: wrote FILE" if the file was a default. */
void gt_outfile_say_chosen(struct gt_outfile *of, int code);
void gt_outfile_abort(struct gt_outfile *of);

/* Prints "gputrace: FILE: message" for a failed trace. */
void gt_viz_fail(const char *path, const struct gt_trace *t, int code);

#endif
