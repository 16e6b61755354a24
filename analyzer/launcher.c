/* launcher.c - `gputrace run [-o PATH] [--stack-depth N] -- CMD...`: runs CMD
 * with the shim preloaded (kept in front of any LD_PRELOAD the user already
 * has) and returns CMD's exit status, so it drops into scripts and CI jobs
 * unchanged. Its options are rows of the option table (cli_options.c). */
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "run_log.h"
#include "schema_sql.h"
#include "subprocess.h"
#include "trace.h"
#include "viz.h"

/* gputrace run --help (the command table is in commands.c) */
const char gt_help_run[] =
    "usage: gputrace run [-o PATH] [--stack-depth N] [--quiet] -- CMD [ARG...]\n"
    "\n"
    "Run CMD with libgputrace.so preloaded; every process of CMD that uses CUDA\n"
    "writes its own trace database. Exits with CMD's exit status, or dies of the\n"
    "signal that killed CMD (a script that runs it stops on ^C as it would without\n"
    "gputrace); 127 if CMD was not found, 126 if it could not be run, 2 if gputrace\n"
    "itself could not start it. SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2\n"
    "and SIGALRM sent to gputrace alone (kill PID; Slurm's --signal) are passed on\n"
    "to CMD.\n"
    "\n"
    "  -o, --output PATH    trace file (sets GPUTRACE_OUTPUT; %p pid, %h host,\n"
    "                       %r rank). An existing PATH is replaced only if it is a\n"
    "                       finished gputrace trace; anything else is refused.\n"
    "                       A directory holds the trace as gputrace-PID.db. Child\n"
    "                       processes that also use CUDA write PATH's stem.PID.db\n"
    "                       beside it.\n"
    "                       Default: gputrace-%p.db in the current directory.\n"
    "  --stack-depth N      frames per call stack (GPUTRACE_STACK_DEPTH, default 32,\n"
    "                       0 = no stacks)\n"
    "  --quiet              no closing line on stderr (GPUTRACE_QUIET=1)\n"
    "\n"
    "At the end one line on stderr lists the trace files the command's processes\n"
    "wrote (parent, ranks, workers), or says that none made a call it records.\n"
    "  -h, --help           this text\n";

/* Is path a finished gputrace trace: a SQLite file with our application_id,
 * closed by the shim (rollback-journal mode; a trace being written, or left
 * by a killed process, is in WAL mode) with no -wal or -journal beside it? */
static int finished_trace(const char *path, const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return 0;
    unsigned char h[100];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    if (got != sizeof h || memcmp(h, "SQLite format 3", 16) != 0 || h[18] != 1 || h[19] != 1)
        return 0;
    uint32_t app = (uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71];
    if (app != GT_APPLICATION_ID)
        return 0;
    const char *sides[] = {"-wal", "-journal"};
    for (int i = 0; i < 2; i++) {
        char side[PATH_MAX + 16];
        struct stat ss;
        snprintf(side, sizeof side, "%s%s", path, sides[i]);
        if (lstat(side, &ss) == 0)
            return 0;
    }
    return 1;
}

/* The longest name the shim may open for out (absolute): its temporary
 * name NAME.creating-PID.N, a directory's gputrace-PID.db inside it, each
 * %h as a long host name and any other escape as a pid. SQLite opens no full
 * path over 504 bytes (shim/db.c): the command ran, and nothing was traced
 * (a helper's probe). -1 after one line on stderr. */
static int too_long_for_sqlite(const char *arg, const char *out)
{
    size_t len = 0;
    for (const char *c = out; *c; c++, len++)
        if (c[0] == '%' && c[1]) {
            len += c[1] == 'h' ? 63 : 6;
            c++;
        }
    struct stat st;
    size_t n = strlen(out);
    if ((n && out[n - 1] == '/') || (stat(out, &st) == 0 && S_ISDIR(st.st_mode)))
        len += 1 + strlen("gputrace-1234567.db");
    len += strlen(".creating-1234567.99");
    if (len <= GT_SQLITE_PATH_MAX)
        return 0;
    fprintf(stderr, "gputrace run: -o %s: the trace's full path would be up to %zu bytes, and SQLite opens none over "
                    "%d; choose a shorter path\n", arg, len, GT_SQLITE_PATH_MAX);
    return -1;
}

/* Where -o puts the trace. A directory (existing, or a path ending in '/')
 * holds it under the default name. An existing file is replaced only when it
 * is a finished gputrace trace; anything else (a script, another program's
 * database, a trace still being written) is refused, as is a path whose
 * directory does not exist: the command is not started then. Returns 0, or
 * -1 after one line on stderr. */
static int prepare_output(const char *arg, char *out, size_t cap, char *aside, size_t aside_cap)
{
    struct stat st;
    size_t n = strlen(arg);
    aside[0] = 0;
    /* -o - is stdout to export and report; a trace is a database, never a stream */
    if (!strcmp(arg, "-")) {
        fprintf(stderr, "gputrace run: -o -: a trace is a SQLite file, not a stream to stdout; name a file (-o "
                        "./- for a file named '-')\n");
        return -1;
    }
    /* the shim opens GPUTRACE_OUTPUT from the traced process's directory: a
     * command that changes directory first (a wrapper script's cd) would put
     * a relative path elsewhere than the place checked here */
    char cwd[PATH_MAX];
    if (arg[0] != '/' && getcwd(cwd, sizeof cwd)) {
        size_t m = strlen(cwd);
        if (m + 1 + n >= cap) {
            fprintf(stderr, "gputrace run: -o: the path is too long\n");
            return -1;
        }
        snprintf(out, cap, "%s/%s", strcmp(cwd, "/") ? cwd : "", arg);
    } else if ((size_t)snprintf(out, cap, "%s", arg) >= cap) {
        fprintf(stderr, "gputrace run: -o: the path is too long\n");
        return -1;
    }
    if (too_long_for_sqlite(arg, out) != 0)
        return -1;
    if ((n && arg[n - 1] == '/') || (stat(arg, &st) == 0 && S_ISDIR(st.st_mode))) {
        if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "gputrace run: -o %s: no such directory; create it first\n", arg);
            return -1;
        }
        size_t m = strlen(out);
        if (m + 20 >= cap) {
            fprintf(stderr, "gputrace run: -o: the path is too long\n");
            return -1;
        }
        snprintf(out + m, cap - m, "%sgputrace-%%p.db", n && arg[n - 1] == '/' ? "" : "/");
        return 0;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", arg);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    else
        snprintf(dir, sizeof dir, ".");
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gputrace run: -o %s: directory %s does not exist; create it first\n", arg, dir);
        return -1;
    }
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "gputrace run: -o %s: directory %s is not writable\n", arg, dir);
        return -1;
    }
    if (strchr(arg, '%'))
        return 0; /* a pattern names files per process: nothing to replace */
    /* a trace named NAME.db-wal beside a database NAME.db is that
     * database's write-ahead log to SQLite: the next writer to open NAME.db
     * (symbolize) removes it (a helper's probe) */
    if (gt_is_sqlite_companion(arg)) {
        fprintf(stderr, "gputrace run: -o %s: is the name of a SQLite database's write-ahead log, index or journal "
                        "(a trace's, beside it); choose another path\n", arg);
        return -1;
    }
    if (lstat(arg, &st) != 0) {
        /* SQLite's files of a trace removed without them: the shim would
         * not take the name beside them (SQLite would read them as the new
         * file's) and wrote NAME.PID.db, where no one looks */
        char left[3][PATH_MAX + 16];
        int nleft = 0;
        for (int k = 0; k < 3; k++) {
            snprintf(left[nleft], sizeof left[nleft], "%s%s", arg, (const char *[]){"-wal", "-shm", "-journal"}[k]);
            nleft += lstat(left[nleft], &st) == 0;
        }
        if (!nleft)
            return 0;
        fprintf(stderr, "gputrace run: -o %s: %s%s%s%s%s %s left of a trace removed without %s; remove %s too, or "
                        "choose another path\n", arg, left[0], nleft > 2 ? ", " : nleft > 1 ? " and " : "",
                nleft > 1 ? left[1] : "", nleft > 2 ? " and " : "", nleft > 2 ? left[2] : "",
                nleft > 1 ? "are" : "is", nleft > 1 ? "them" : "it", nleft > 1 ? "them" : "it");
        return -1;
    }
    if (!finished_trace(arg, &st)) {
        fprintf(stderr, "gputrace run: -o %s: exists and is not a finished gputrace trace (or a trace is still "
                        "being written to it); choose another path, or remove it (and its -wal and -shm) first\n",
                arg);
        return -1;
    }
    /* moved aside, not removed: the shim never replaces a file, and a
     * command that fails to start (a typo) must not cost the old trace */
    char side[PATH_MAX + 64];
    snprintf(aside, aside_cap, "%s.replaced-%d", out, (int)getpid());
    if (rename(out, aside) != 0) {
        fprintf(stderr, "gputrace run: -o %s: cannot move the old trace aside: %s\n", arg, strerror(errno));
        aside[0] = 0;
        return -1;
    }
    snprintf(side, sizeof side, "%s-shm", out);
    unlink(side);
    return 0;
}

/* Traces beside out named as its processes' (NAME.PID.db, NAME.PID.N.db:
 * shim/output.c), existing before the command ran: an earlier run's, which
 * `ranks NAME*.db` or `report` would mix with this run's. Counts them and
 * copies the first one's name into first. */
static size_t earlier_siblings(const char *out, char *first, size_t cap)
{
    size_t len = strlen(out), n = 0;
    const char *ext = len > 3 && strcmp(out + len - 3, ".db") == 0 ? ".db" : "";
    char pattern[PATH_MAX + 64];
    snprintf(pattern, sizeof pattern, "%.*s.[0-9]*%s", (int)(len - strlen(ext)), out, ext);
    glob_t g;
    first[0] = 0;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
        return 0;
    size_t stem = len - strlen(ext) + 1;   /* past "NAME." */
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *p = g.gl_pathv[i] + stem, *end = g.gl_pathv[i] + strlen(g.gl_pathv[i]) - strlen(ext);
        int digits = p < end;   /* PID or PID.N: digits and one dot between */
        for (const char *q = p; q < end && digits; q++)
            digits = isdigit((unsigned char)*q) || (*q == '.' && q > p && q + 1 < end && q[1] != '.');
        if (!digits)
            continue;
        if (!n++)
            snprintf(first, cap, "%s", g.gl_pathv[i]);
    }
    globfree(&g);
    return n;
}

/* After the command: the new trace replaces the old, or the old comes back
 * (returns 1: said after the closing line, which tells no new file there). */
static int settle_aside(const char *out, const char *aside)
{
    struct stat st;
    if (!aside[0])
        return 0;
    if (lstat(out, &st) == 0)
        unlink(aside);
    else if (rename(aside, out) != 0)
        fprintf(stderr, "gputrace run: the old trace is left at %s: %s\n", aside, strerror(errno));
    else
        return 1;
    return 0;
}

/* Ends this process as the command ended: by the same signal (a calling
 * shell stops its script on a child that died of SIGINT, and not on one that
 * exited 130), without a core of our own; status when that cannot be. */
static int end_as(int sig, int status)
{
    if (sig <= 0)
        return status;
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    fflush(NULL);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    return status;   /* a signal whose default is to go on (SIGCHLD, SIGWINCH...) */
}

int gt_cmd_run(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    if (gt_preload_shim("gputrace run") != 0)
        return GT_RUN_EXIT_FAILED;
    char out[PATH_MAX + 32], aside[PATH_MAX + 64] = "", sibling[PATH_MAX + 64] = "";
    size_t siblings = 0;
    if (a->out) {
        if (prepare_output(a->out, out, sizeof out, aside, sizeof aside) != 0)
            return GT_RUN_EXIT_FAILED;
        setenv("GPUTRACE_OUTPUT", out, 1);
        if (!strchr(out, '%'))
            siblings = earlier_siblings(out, sibling, sizeof sibling);
    }
    if (a->stack_depth >= 0) {
        char depth[16];
        snprintf(depth, sizeof depth, "%d", a->stack_depth);
        setenv("GPUTRACE_STACK_DEPTH", depth, 1);
    }
    int env_quiet = gt_env_flag_on("GPUTRACE_QUIET");
    if (a->quiet)
        setenv("GPUTRACE_QUIET", "1", 1);
    /* One closing line for the whole command, unless asked for none */
    int closing = !a->quiet && !env_quiet && gt_run_log_begin() == 0;
    int sig = 0;
    struct gt_spawn how = {.term_signal = &sig};
    int status = gt_spawn_wait(a->files, &how, "gputrace run");   /* CMD [ARG...], NULL-terminated */
    int restored = settle_aside(out, aside);
    if (closing)
        gt_run_log_end(status, sig);
    if (restored && closing && status != GT_RUN_EXIT_NOT_FOUND && status != GT_RUN_EXIT_CANNOT_EXEC)
        fprintf(stderr, "gputrace run: %s still holds the earlier trace: this run wrote none there\n", a->out);
    struct stat st;
    if (siblings && closing && lstat(sibling, &st) == 0)   /* (an earlier run's children: ranks over NAME*.db mixes them in) */
        fprintf(stderr, "gputrace run: %zu trace%s of an earlier run lie%s beside %s (%s%s): a wildcard over them "
                        "mixes the runs; give this run's files by name, or remove %s\n", siblings,
                siblings == 1 ? "" : "s", siblings == 1 ? "s" : "", gt_basename(out), gt_basename(sibling),
                siblings > 1 ? ", ..." : "", siblings == 1 ? "it" : "them");
    return end_as(sig, status);
}
