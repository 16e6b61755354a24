/* launcher.c - `gputrace run [-o PATH] [--stack-depth N] -- CMD...`: runs CMD
 * with the shim preloaded (kept in front of any LD_PRELOAD the user already
 * has) and returns CMD's exit status, so it drops into scripts and CI jobs
 * unchanged. Its options are rows of the option table (cli_options.c). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* gputrace run --help (the command table is in commands.c) */
const char gt_help_run[] =
    "usage: gputrace run [-o PATH] [--stack-depth N] [--quiet] -- CMD [ARG...]\n"
    "\n"
    "Run CMD with libgputrace.so preloaded; every process of CMD that uses CUDA\n"
    "writes its own trace database. Exits with CMD's exit status: 128+N if CMD\n"
    "was killed by signal N, 127 if CMD was not found, 126 if it could not be\n"
    "run, 2 if gputrace itself could not start it.\n"
    "\n"
    "  -o, --output PATH    trace file (sets GPUTRACE_OUTPUT; %p pid, %h host,\n"
    "                       %r rank). An existing PATH is replaced. Child processes\n"
    "                       that also use CUDA write PATH's stem.PID.db beside it.\n"
    "                       Default: gputrace-%p.db in the current directory.\n"
    "  --stack-depth N      frames per call stack (GPUTRACE_STACK_DEPTH, default 32,\n"
    "                       0 = no stacks)\n"
    "  --quiet              no summary line on stderr (GPUTRACE_QUIET=1)\n"
    "  -h, --help           this text\n";

/* The shim installed beside us (PREFIX/bin/gputrace -> PREFIX/lib/libgputrace.so)
 * or in the build tree (build/analyzer/gputrace -> build/shim/libgputrace.so). */
static int find_shim(char *out, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = 0;
    const char *rel[] = {"../shim/libgputrace.so", "../lib/libgputrace.so", "../lib64/libgputrace.so",
                         "../lib/x86_64-linux-gnu/libgputrace.so", "libgputrace.so"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", self, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < cap)
            return 0;
    }
    return -1;
}

static void remove_old_trace(const char *path)
{
    if (strchr(path, '%'))
        return; /* a pattern names files per process: nothing to replace */
    char side[PATH_MAX + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

int gt_cmd_run(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    char **argv = a->files;   /* CMD [ARG...], NULL-terminated */
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) != 0) {
        fprintf(stderr, "gputrace run: cannot find libgputrace.so beside this executable; "
                        "run it from the build tree or an installed prefix\n");
        return GT_RUN_EXIT_FAILED;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(shim) + (old ? strlen(old) + 2 : 1);
    char *preload = malloc(len);
    if (!preload)
        return GT_EXIT_NOMEM;
    snprintf(preload, len, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    if (a->out) {
        remove_old_trace(a->out);
        setenv("GPUTRACE_OUTPUT", a->out, 1);
    }
    if (a->stack_depth >= 0) {
        char depth[16];
        snprintf(depth, sizeof depth, "%d", a->stack_depth);
        setenv("GPUTRACE_STACK_DEPTH", depth, 1);
    }
    if (a->quiet)
        setenv("GPUTRACE_QUIET", "1", 1);

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gputrace run: fork failed: %s\n", strerror(errno));
        return GT_RUN_EXIT_FAILED;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "gputrace run: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? GT_RUN_EXIT_NOT_FOUND : GT_RUN_EXIT_CANNOT_EXEC);
    }
    /* Like a shell: the child gets ^C, we wait for it and report its status. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return GT_RUN_EXIT_FAILED;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
