/* commands.c - the table of gputrace's commands, one row each (name, the
 * line gputrace --help lists, the full help, the option sets it takes, what
 * must follow, the function that runs it), and gputrace --help itself,
 * built from this table, the option table and the exit statuses. */
#include <ctype.h>
#include <string.h>

#include "cli.h"
#include "live.h"

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "unknown"
#endif

static int cmd_help(const struct gt_command *cmd, struct gt_args *a);
static int cmd_version(const struct gt_command *cmd, struct gt_args *a);

#define REPORT_OPTS (GT_OPTS_HELP | GT_OPTS_JSON | GT_OPTS_REPORT | GT_OPTS_SELECT | GT_OPTS_ITER)
#define TRACES "at least one trace file (TRACE.db)"

const struct gt_command gt_commands[] = {
    {.name = "run", .summary = "run a program with tracing on (gputrace run --help)", .help = gt_help_run,
     .takes = GT_OPTS_HELP | GT_OPTS_OUTPUT | GT_OPTS_RUN, .needs = "a command to run: gputrace run [OPTIONS] -- CMD [ARG...]",
     .options_first = 1, .run = gt_cmd_run},
    {.name = "sweep",
     .summary = "run a command at several batch sizes, traced, and prove the largest\n"
                "that fits: a fit of peak vs batch size predicts it, real runs prove it",
     .help = gt_help_sweep, .takes = GT_OPTS_HELP | GT_OPTS_JSON | GT_OPTS_RUN | GT_OPTS_SWEEP,
     .needs = "a command to run: gputrace sweep [OPTIONS] -- CMD [ARG...] ({bs} in ARGs is the batch size)",
     .options_first = 1, .run = gt_cmd_sweep},
    {.name = "summary",
     .summary = "process, devices, event counts and drops, peaks, iterations,\none-line verdicts on leaks and growth",
     .help = gt_help_summary, .takes = REPORT_OPTS, .needs = TRACES, .run = gt_run_reports, .report = gt_report_summary},
    {.name = "leaks",
     .summary = "allocations live at process end, by allocation stack; memory a\n"
                "caching allocator keeps until exit is reported apart",
     .help = gt_help_leaks, .takes = REPORT_OPTS | GT_OPTS_LEAKS, .needs = TRACES, .run = gt_run_reports,
     .report = gt_report_leaks},
    {.name = "growth",
     .summary = "live bytes at the end of each iteration, slope per iteration,\n"
                "growing or stable, and the call sites that grow",
     .help = gt_help_growth, .takes = REPORT_OPTS | GT_OPTS_GROWTH, .needs = TRACES, .run = gt_run_reports,
     .report = gt_report_growth},
    {.name = "peak",
     .summary = "peak per iteration and per batch size, the fit\n"
                "peak = fixed + per_sample x batch_size, the largest batch that fits",
     .help = gt_help_peak, .takes = REPORT_OPTS | GT_OPTS_PEAK, .needs = TRACES, .run = gt_run_reports, .report = gt_report_peak},
    {.name = "oom",
     .summary = "each failed allocation: request, live bytes, device total, who\n"
                "held the memory, how much smaller the batch had to be",
     .help = gt_help_oom, .takes = REPORT_OPTS, .needs = TRACES, .run = gt_run_reports, .report = gt_report_oom},
    {.name = "top", .summary = "call sites by bytes allocated, by peak live bytes, by count", .help = gt_help_top,
     .takes = REPORT_OPTS, .needs = TRACES, .run = gt_run_reports, .report = gt_report_top},
    {.name = "ranks",
     .summary = "one job's traces, one per rank: each rank's peak, growth and failures,\n"
                "the rank that peaks highest and by how much, ranks that differ",
     .help = gt_help_ranks, .takes = REPORT_OPTS | GT_OPTS_PEAK, .needs = TRACES, .run = gt_cmd_ranks},
    {.name = "symbolize", .summary = "add source file:line to the recorded frames (addr2line)", .help = gt_help_symbolize,
     .takes = GT_OPTS_HELP | GT_OPTS_SYMBOLIZE, .needs = TRACES, .run = gt_cmd_symbolize},
    {.name = "export", .summary = "Chrome trace-event JSON for Perfetto / chrome://tracing", .help = gt_help_export,
     .takes = GT_OPTS_HELP | GT_OPTS_OUTPUT | GT_OPTS_ITER | GT_OPTS_EXPORT, .needs = TRACES, .run = gt_cmd_export},
    {.name = "report", .summary = "one self-contained HTML page of charts and tables", .help = gt_help_report,
     .takes = GT_OPTS_HELP | GT_OPTS_OUTPUT | GT_OPTS_SELECT | GT_OPTS_ITER, .needs = TRACES, .run = gt_cmd_report},
    /* not listed: gputrace --help and --version say what they do */
    {.name = "help", .aliases = {"--help", "-h"}, .takes = GT_OPTS_HELP, .run = cmd_help},
    {.name = "version", .aliases = {"--version", "-V"}, .takes = GT_OPTS_HELP, .run = cmd_version},
};
const size_t gt_ncommands = sizeof gt_commands / sizeof gt_commands[0];

const struct gt_command *gt_command_find(const char *name)
{
    for (size_t k = 0; k < gt_ncommands; k++) {
        const struct gt_command *c = &gt_commands[k];
        if (!strcmp(name, c->name))
            return c;
        for (size_t i = 0; i < sizeof c->aliases / sizeof c->aliases[0] && c->aliases[i]; i++)
            if (!strcmp(name, c->aliases[i]))
                return c;
    }
    return NULL;
}

int gt_unknown_command(const char *name)
{
    const char *names[sizeof gt_commands / sizeof gt_commands[0]];
    for (size_t k = 0; k < gt_ncommands; k++)
        names[k] = gt_commands[k].name;
    if (name[0] == '-') {   /* gputrace --json summary x.db: an option before the command */
        char opt[400];
        snprintf(opt, sizeof opt, "'%.60s' is an option: it goes after the command (gputrace COMMAND %.60s TRACE.db)",
                 name, name);
        return gt_usage_error(NULL, "%s", opt);
    }
    const char *near = gt_nearest(name, names, gt_ncommands);
    char msg[300];
    snprintf(msg, sizeof msg, "unknown command '%.100s'%s%s%s", name, near ? " (did you mean '" : "", near ? near : "",
             near ? "'?)" : "");
    return gt_usage_error(NULL, "%s", msg);
}

/* text, '\n' between its lines, after a first column of width col */
static void put_column(FILE *f, const char *first, int col, const char *text)
{
    fprintf(f, "  %-*s ", col, first);
    for (const char *s = text; *s; s++) {
        fputc(*s, f);
        if (*s == '\n')
            fprintf(f, "  %-*s ", col, "");
    }
    fputc('\n', f);
}

void gt_usage_print(FILE *f)
{
    fputs("usage: gputrace COMMAND [OPTIONS] TRACE.db...\n"
          "\n"
          "Reports on GPU memory traces written by libgputrace.so. Several files (one\n"
          "per process or rank) give one section each.\n"
          "\n"
          "Commands:\n",
          f);
    for (size_t k = 0; k < gt_ncommands; k++)
        if (gt_commands[k].summary)
            put_column(f, gt_commands[k].name, 9, gt_commands[k].summary);
    fputs("\n"
          "Options (the reports: summary, leaks, growth, peak, oom, top; report takes\n"
          "all but --json and --allocator-frames; gputrace COMMAND --help for the rest):\n",
          f);
    for (size_t k = 0; k < gt_noptions; k++) {
        const struct gt_option *o = &gt_options[k];
        if (!o->help)
            continue;
        char first[64];
        snprintf(first, sizeof first, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        put_column(f, first, 18, o->help);
    }
    put_column(f, "-h, --help", 18, "help; gputrace COMMAND --help for a command");
    put_column(f, "-V, --version", 18, "gputrace's version and the trace schema it reads");
    fputs("Byte sizes take K/M/G/T suffixes (KiB, x1024) or KB/MB/GB/TB (x1000).\n"
          "\n"
          "Exit status:\n",
          f);
#define GT_EXIT_LINE(name, status, text) fprintf(f, "  %-2d %s\n", status, text);
    GT_EXIT_LIST(GT_EXIT_LINE)
#undef GT_EXIT_LINE
    fputs("With several files the status is that of the first file that failed; each\n"
          "failure prints one line on stderr: \"gputrace: FILE: what happened; what to do\".\n",
          f);
}

/* Does text name option (a whole word: "--iteration" is not in "--iterations")? */
static int names_option(const char *text, const char *option)
{
    size_t n = strlen(option);
    for (const char *p = strstr(text, option); p; p = strstr(p + 1, option))
        if (!isalnum((unsigned char)p[n]) && p[n] != '-' && p[n] != '_')
            return 1;
    return 0;
}

/* gputrace COMMAND --help: its own text, then the shared options it takes
 * that the text does not describe (gputrace --help's lines for them) */
void gt_command_help_print(const struct gt_command *c, FILE *f)
{
    if (!c->help) {
        gt_usage_print(f);
        return;
    }
    fputs(c->help, f);
    /* (an option its usage line alone names is described here: top's --top N, --json) */
    const char *body = strchr(c->help, '\n') ? strchr(c->help, '\n') : c->help;
    int first = 1;
    for (size_t k = 0; k < gt_noptions; k++) {
        const struct gt_option *o = &gt_options[k];
        if (!o->help || !(o->set & c->takes) || names_option(body, o->name))
            continue;
        if (first)
            fputs("\nOptions it shares with other commands:\n", f);
        first = 0;
        char name[64];
        snprintf(name, sizeof name, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        put_column(f, name, 18, o->help);
    }
}

/* gputrace help [COMMAND], gputrace --help */
static int cmd_help(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    if (a->nfiles == 0) {
        gt_usage_print(stdout);
        return GT_EXIT_OK;
    }
    const struct gt_command *c = gt_command_find(a->files[0]);
    if (!c)
        return gt_unknown_command(a->files[0]);
    gt_command_help_print(c, stdout);
    return GT_EXIT_OK;
}

/* gputrace --version, -V, version */
static int cmd_version(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    (void)a;
    printf("gputrace %s (trace schema %d)\n", GPUTRACE_VERSION, GT_SCHEMA_VERSION);
    return GT_EXIT_OK;
}
