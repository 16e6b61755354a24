/* cli.h - the gputrace command line as data: one table of commands
 * (commands.c) and one table of options (cli_options.c), read by one parser
 * (cli.c). A command is a row: its name, help, the option sets it takes and
 * the function that runs it; an option is a row: its name, whether it takes
 * a value, how the value is read and where it goes, and which option set it
 * belongs to. main() looks up the row and calls gt_command_main(). */
#ifndef GT_CLI_H
#define GT_CLI_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"

/* Everything any command's options set; a command reads the fields of the
 * option sets it takes. gt_args_init gives the defaults. */
struct gt_args {
    struct gt_opts base;       /* the reports' options (analyzer.h) */
    int help;                  /* -h, --help */
    const char *out;           /* -o FILE (export, report) or trace path (run); NULL: default */
    int64_t from, to;          /* export --from/--to, ns since each process started; -1: open */
    int iter_range;            /* export --iterations A:B given */
    int64_t iter_a, iter_b;
    int no_kernels, no_allocs; /* export --no-kernels, --no-allocs */
    const char *addr2line;     /* symbolize --addr2line */
    int stack_depth;           /* run --stack-depth; -1: the shim's default */
    int quiet;                 /* run --quiet; sweep --quiet */
    int64_t batch_sizes[64];   /* sweep --batch-sizes A,B,C */
    int nbatch_sizes;
    int max_runs;              /* sweep --max-runs; 0: its default */
    int repeat;                /* sweep --repeat: runs the largest must fit in; 0: its default (2) */
    int64_t run_timeout;       /* sweep --run-timeout, ns; 0: none */
    const char *dir;           /* sweep --dir; NULL: gputrace-sweep-<time> */
    char **files;              /* operands: trace files, or run's CMD [ARG...]; NULL-terminated */
    int nfiles;
};

/* Option sets: a command takes some, an option belongs to one. */
enum {
    GT_OPTS_HELP = 1u << 0,      /* -h, --help: every command */
    GT_OPTS_REPORT = 1u << 1,    /* the six text/JSON reports: --allocator-frames, --warmup */
    GT_OPTS_SELECT = 1u << 2,    /* --memory, --device, --device-bytes, --top, --frames: reports and report */
    GT_OPTS_ITER = 1u << 3,      /* --iteration, --iterations: reports, export, report */
    GT_OPTS_LEAKS = 1u << 4,     /* leaks --no-cache-heuristic */
    GT_OPTS_GROWTH = 1u << 5,    /* growth --fail-above, --threshold */
    GT_OPTS_OUTPUT = 1u << 6,    /* -o, --output: export, report, run */
    GT_OPTS_EXPORT = 1u << 7,    /* --format, --from, --to, --no-kernels, --no-allocs, --iterations A:B */
    GT_OPTS_SYMBOLIZE = 1u << 8, /* --addr2line */
    GT_OPTS_RUN = 1u << 9,       /* --stack-depth, --quiet: run, sweep */
    GT_OPTS_JSON = 1u << 10,     /* --json: the six reports, sweep */
    GT_OPTS_SWEEP = 1u << 11,    /* --batch-sizes, --max-runs, --repeat, --dir */
    GT_OPTS_PEAK = 1u << 12,     /* peak --all-iterations */
};

struct gt_command {
    const char *name;
    const char *aliases[3];    /* other names that run this row ("--help", "-V") */
    const char *summary;       /* gputrace --help's line(s), '\n' between lines; NULL: not listed */
    const char *help;          /* gputrace NAME --help; NULL: gputrace --help */
    unsigned takes;            /* option sets (GT_OPTS_*) */
    const char *needs;         /* what must follow the options, for the usage error; NULL: nothing */
    int options_first;         /* the first operand ends the options (run: CMD's own options follow) */
    int (*run)(const struct gt_command *cmd, struct gt_args *a);
    int (*report)(struct gt_ctx *c, struct gt_json *j);   /* the six reports: what run_reports runs */
};

/* How an option's value is read (struct gt_option.kind). */
enum gt_opt_kind {
    GT_OPT_FLAG,     /* no value; sets the int at off to 1 */
    GT_OPT_INT,      /* a decimal integer in [min, max] into the int at off */
    GT_OPT_BYTES,    /* a size (gt_parse_bytes) in [min, max] into the int64_t at off */
    GT_OPT_TIME,     /* 1.5 / 1.5s / 200ms / 40us / 1000ns into the int64_t (ns) at off */
    GT_OPT_STRING,   /* the text itself (at least min characters) into the const char * at off */
    GT_OPT_CUSTOM,   /* parse() reads it */
};

struct gt_option {
    const char *name;          /* "--frames" */
    const char *alias;         /* "-o"; NULL: none */
    const char *arg;           /* the value's name in help ("N"); NULL: a flag, takes no value */
    unsigned set;              /* the option set it belongs to (GT_OPTS_*) */
    enum gt_opt_kind kind;
    size_t off;                /* offsetof(struct gt_args, ...) */
    int64_t min, max;
    /* GT_OPT_CUSTOM: reads val into a; returns NULL, or the error (a format
     * with one %s for val) */
    const char *(*parse)(struct gt_args *a, const struct gt_command *cmd, const char *val);
    const char *bad;           /* error for a bad value, a format with one %s for it */
    const char *help;          /* gputrace --help's text, '\n' between lines; NULL: in a command's help */
};

extern const struct gt_command gt_commands[];
extern const size_t gt_ncommands;
extern const struct gt_option gt_options[];
extern const size_t gt_noptions;

/* The row named name (or one of its aliases); NULL if none. */
const struct gt_command *gt_command_find(const char *name);
/* Parses the arguments after the command name and runs the command.
 * Returns the exit status. */
int gt_command_main(const struct gt_command *cmd, int argc, char **argv);
/* terminal.c: when stdout is a terminal, or a report prints text, control
 * characters from the trace's strings print as '?' (a trace's text must not
 * drive the terminal). */
void gt_terminal_guard(const struct gt_command *cmd, int argc, char **argv);
/* Prints gputrace --help (built from the tables) on f. */
void gt_usage_print(FILE *f);
/* COMMAND --help: its text and the shared options it takes */
void gt_command_help_print(const struct gt_command *c, FILE *f);

/* Defaults of every option. */
void gt_args_init(struct gt_args *a);
/* Parses argv (after the command name) into a, per cmd's option sets.
 * Returns GT_EXIT_OK (a->help set for --help: the rest is not read) or
 * GT_EXIT_USAGE after the one-line message. a->files is malloc'ed. */
int gt_cli_parse(const struct gt_command *cmd, int argc, char **argv, struct gt_args *a);
/* Prints "gputrace: " fmt (with arg) "; see gputrace CMD --help" on stderr
 * (cmd NULL: gputrace --help) and returns GT_EXIT_USAGE. */
int gt_usage_error(const struct gt_command *cmd, const char *fmt, const char *arg);
/* The candidate nearest to word by edit distance, if near enough to be a
 * typo (at most 2 edits, and fewer than half the candidate); else NULL. */
const char *gt_nearest(const char *word, const char *const *candidates, size_t n);
/* "unknown command 'NAME'" with the nearest command suggested. */
int gt_unknown_command(const char *name);

/* The run functions of the table's rows. */
int gt_run_reports(const struct gt_command *cmd, struct gt_args *a);   /* run_reports.c */
int gt_cmd_symbolize(const struct gt_command *cmd, struct gt_args *a); /* symbolize.c */
int gt_cmd_export(const struct gt_command *cmd, struct gt_args *a);    /* export.c */
int gt_cmd_report(const struct gt_command *cmd, struct gt_args *a);    /* report.c */
int gt_cmd_ranks(const struct gt_command *cmd, struct gt_args *a);     /* ranks.c */
int gt_cmd_run(const struct gt_command *cmd, struct gt_args *a);       /* launcher.c */
int gt_cmd_sweep(const struct gt_command *cmd, struct gt_args *a);     /* sweep.c */

/* Each command's gputrace NAME --help, beside the code it describes. */
extern const char gt_help_summary[], gt_help_leaks[], gt_help_growth[], gt_help_peak[], gt_help_oom[], gt_help_top[];
extern const char gt_help_ranks[];
extern const char gt_help_symbolize[], gt_help_export[], gt_help_report[], gt_help_run[], gt_help_sweep[];

#endif
