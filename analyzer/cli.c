/* cli.c - the one option parser of gputrace: reads a command's arguments
 * against the option table (cli_options.c) and the command's row
 * (commands.c), stores each value where its row says, and turns every
 * mistake into one line on stderr and exit status 2, with the nearest
 * command or option suggested for a typo. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "format.h"

void gt_args_init(struct gt_args *a)
{
    memset(a, 0, sizeof *a);
    a->base = (struct gt_opts){.frames = 4, .top = 10, .warmup = 1, .fail_above = -1, .device_bytes = -1, .device = GT_ANY_DEVICE};
    a->from = a->to = -1;
    a->stack_depth = -1;
}

int gt_usage_error(const struct gt_command *cmd, const char *fmt, const char *arg)
{
    /* one line whatever was typed: a control character in an argument ($'1\n2') is shown as '?' */
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, arg);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    fprintf(stderr, "gputrace: %s", msg);
    if (cmd && cmd->help)
        fprintf(stderr, "; see gputrace %s --help\n", cmd->name);
    else
        fprintf(stderr, "; see gputrace --help\n");
    return GT_EXIT_USAGE;
}

/* "1.5" (seconds), "1.5s", "200ms", "40us", "1000ns" -> ns. */
static int parse_time(const char *s, int64_t *ns)
{
    char *end;
    /* decimal only: strtod also reads "0x10" (16 s), "inf" and "nan" */
    if (!isdigit((unsigned char)s[0]) && !(s[0] == '.' && isdigit((unsigned char)s[1])))
        return -1;
    if (strpbrk(s, "xXpP"))
        return -1;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || !isfinite(v))   /* (NaN fails v >= 0) */
        return -1;
    double mult = 1e9;
    if (!strcmp(end, "ns"))
        mult = 1;
    else if (!strcmp(end, "us"))
        mult = 1e3;
    else if (!strcmp(end, "ms"))
        mult = 1e6;
    else if (!strcmp(end, "m"))
        mult = 60e9;
    else if (!strcmp(end, "h"))
        mult = 3600e9;
    else if (*end && strcmp(end, "s"))
        return -1;
    if (v * mult > 9e18)
        return -1;
    *ns = (int64_t)(v * mult + 0.5);
    return 0;
}

static const struct gt_option *find_option(const char *name)
{
    for (size_t k = 0; k < gt_noptions; k++)
        if (!strcmp(name, gt_options[k].name) || (gt_options[k].alias && !strcmp(name, gt_options[k].alias)))
            return &gt_options[k];
    return NULL;
}

/* An option no row knows: suggest the nearest that cmd takes. */
static int unknown_option(const struct gt_command *cmd, const char *name)
{
    const char *names[2 * 64];
    size_t n = 0;
    for (size_t k = 0; k < gt_noptions && n + 2 <= sizeof names / sizeof names[0]; k++)
        if (gt_options[k].set & cmd->takes) {
            names[n++] = gt_options[k].name;
            if (gt_options[k].alias)
                names[n++] = gt_options[k].alias;
        }
    const char *near = gt_nearest(name, names, n);
    char msg[300];
    snprintf(msg, sizeof msg, "unknown option '%.100s' for gputrace %s%s%s%s", name, cmd->name, near ? " (did you mean '" : "",
             near ? near : "", near ? "'?)" : "");
    return gt_usage_error(cmd, "%s", msg);
}

/* An option of other commands (name as typed): say which. */
static int option_not_taken(const struct gt_command *cmd, const struct gt_option *opt, const char *name)
{
    char msg[400];
    int len = snprintf(msg, sizeof msg, "option '%s' is for ", name);
    const char *sep = "";
    for (size_t k = 0; k < gt_ncommands && len < 300; k++)
        if (gt_commands[k].takes & opt->set && gt_commands[k].summary) {
            len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", sep, gt_commands[k].name);
            sep = ", ";
        }
    snprintf(msg + len, sizeof msg - (size_t)len, ", not gputrace %s", cmd->name);
    return gt_usage_error(cmd, "%s", msg);
}

/* Reads val into a as opt's row says. Returns NULL or the error format. */
static const char *set_value(const struct gt_option *opt, const struct gt_command *cmd, struct gt_args *a, const char *val)
{
    char *field = (char *)a + opt->off, *end;
    int64_t v;
    switch (opt->kind) {
    case GT_OPT_FLAG:
        *(int *)field = 1;
        return NULL;
    case GT_OPT_INT: {
        long long x = strtoll(val, &end, 10);
        if (!*val || *end || x < opt->min || x > opt->max)
            return opt->bad;
        *(int *)field = (int)x;
        return NULL;
    }
    case GT_OPT_BYTES:
        if (gt_parse_bytes(val, &v) || v < opt->min || v > opt->max)
            return opt->bad;
        *(int64_t *)field = v;
        return NULL;
    case GT_OPT_TIME:   /* min: the least time it takes (--run-timeout: more than none) */
        return parse_time(val, (int64_t *)field) || *(int64_t *)field < opt->min ? opt->bad : NULL;
    case GT_OPT_STRING:
        if ((int64_t)strlen(val) < opt->min)
            return opt->bad;
        *(const char **)field = val;
        return NULL;
    case GT_OPT_CUSTOM:
        return opt->parse(a, cmd, val);
    }
    return opt->bad;
}

int gt_cli_parse(const struct gt_command *cmd, int argc, char **argv, struct gt_args *a)
{
    a->files = gt_xcalloc((size_t)argc + 1, sizeof *a->files);
    a->nfiles = 0;
    int only_operands = 0;
    /* each value-taking option's value given so far: a second, different one
     * is refused (run -o a.db -o b.db wrote b.db without a word) */
    const struct gt_option *given[64];
    const char *given_val[64];
    size_t ngiven = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (only_operands || arg[0] != '-' || !arg[1]) {
            a->files[a->nfiles++] = argv[i];
            only_operands |= cmd->options_first;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_operands = 1;
            continue;
        }
        /* --name=value, or --name value */
        char name[64];
        const char *eq = strchr(arg, '='), *val = eq ? eq + 1 : NULL;
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        const struct gt_option *opt = find_option(name);
        if (!opt)
            return unknown_option(cmd, name);
        if (!(opt->set & cmd->takes))
            return option_not_taken(cmd, opt, name);
        if (!opt->arg && val)
            return gt_usage_error(cmd, "option '%s' takes no value", name);
        if (opt->arg && !val) {
            if (i + 1 >= argc)
                return gt_usage_error(cmd, "option '%s' needs a value", name);
            val = argv[++i];
        }
        if (opt->arg) {
            size_t k = 0;
            while (k < ngiven && given[k] != opt)
                k++;
            if (k < ngiven && strcmp(given_val[k], val))
                return gt_usage_error(cmd, "option '%s' given twice, with two values: give it once", name);
            if (k == ngiven && ngiven < sizeof given / sizeof given[0]) {
                given[ngiven] = opt;
                given_val[ngiven++] = val;
            }
        }
        const char *bad = set_value(opt, cmd, a, val);
        if (bad)
            return gt_usage_error(cmd, bad, val);
        if (a->help)
            return GT_EXIT_OK;   /* what follows --help is not read */
    }
    return GT_EXIT_OK;
}

int gt_command_main(const struct gt_command *cmd, int argc, char **argv)
{
    struct gt_args a;
    gt_args_init(&a);
    int code = gt_cli_parse(cmd, argc, argv, &a);
    if (code == GT_EXIT_OK && a.help) {
        gt_command_help_print(cmd, stdout);
    } else if (code == GT_EXIT_OK && cmd->needs && a.nfiles == 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s needs %s", cmd->name, cmd->needs);
        code = gt_usage_error(cmd, "%s", msg);
    } else if (code == GT_EXIT_OK) {
        code = cmd->run(cmd, &a);
    }
    free(a.files);
    return code;
}
