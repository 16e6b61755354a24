/* exitcodes.h - every exit status of the gputrace analyzer, in one list.
 *
 * The list is the documentation: `gputrace --help` prints it as it stands
 * here, and tests/test_cli.py checks that README.md's "Exit status" table
 * says the same (status and text). Add a status here, then to the README
 * table and to CHANGELOG.md; never reuse or renumber one, scripts test them. */
#ifndef GT_EXITCODES_H
#define GT_EXITCODES_H

/* X(NAME, STATUS, "what it means"): the meaning is each status's comment,
 * one line as --help and the README print it. 70 is sysexits.h's EX_SOFTWARE,
 * an internal error: gt_xmalloc and friends exit with it (format.h). */
#define GT_EXIT_LIST(X)                                                                              \
    X(GT_EXIT_OK, 0, "success")                                                                      \
    X(GT_EXIT_FAIL_ABOVE, 1, "growth --fail-above: memory grows (verdict growing) faster than the limit")   \
    X(GT_EXIT_USAGE, 2, "usage error")                                                               \
    X(GT_EXIT_MISSING, 3, "a trace file is missing, unreadable or not a regular file")               \
    X(GT_EXIT_CORRUPT, 4, "not a SQLite file, or a truncated, corrupt or incomplete trace")          \
    X(GT_EXIT_NOT_TRACE, 5, "a SQLite file that is not a gputrace trace")                            \
    X(GT_EXIT_NEWER, 6, "a trace written by a newer gputrace (schema version)")                      \
    X(GT_EXIT_EMPTY, 7, "an empty trace: no events recorded")                                        \
    X(GT_EXIT_NO_ITERATIONS, 8, "growth, or export --iterations A:B: no iterations found")           \
    X(GT_EXIT_ADDR2LINE, 9, "symbolize: addr2line could not be run")                                 \
    X(GT_EXIT_OUTPUT, 10, "the output could not be written (a file of export, report; stdout)")                    \
    X(GT_EXIT_NO_MATCH, 11, "--memory or --device selects no memory in the trace")                     \
    X(GT_EXIT_SWEEP_FAILED, 12, "sweep: a run failed other than by running out of memory, or cannot be measured") \
    X(GT_EXIT_SWEEP_PREALLOC, 13, "sweep: the program preallocates the device; run it as the message says") \
    X(GT_EXIT_SWEEP_UNPROVEN, 14, "sweep: --max-runs reached, or every size up to 2^31 fit: the largest not proven") \
    X(GT_EXIT_SWEEP_NONE_FITS, 15, "sweep: even batch size 1 runs out of memory")                   \
    X(GT_EXIT_NOMEM, 70, "internal error: out of memory")

enum gt_exit {
#define GT_EXIT_ENUM(name, status, text) name = status,
    GT_EXIT_LIST(GT_EXIT_ENUM)
#undef GT_EXIT_ENUM
};

/* `gputrace run` exits with its command's status, as a shell would: 128+N
 * when the command was killed by signal N, and these when it never ran. */
#define GT_RUN_EXIT_FAILED 2          /* gputrace could not start it (no shim beside it, fork failed) */
#define GT_RUN_EXIT_CANNOT_EXEC 126   /* found but could not be executed */
#define GT_RUN_EXIT_NOT_FOUND 127     /* no such command */

#endif
