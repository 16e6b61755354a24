/* `gputrace run [-o PATH] [--stack-depth N] -- CMD...`: runs CMD with the shim
 * preloaded (kept in front of any LD_PRELOAD the user already has) and returns
 * CMD's exit status, so it drops into scripts and CI jobs unchanged. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int gt_cmd_run(int argc, char **argv);

static const char usage[] =
    "usage: gputrace run [-o PATH] [--stack-depth N] [--quiet] -- CMD [ARG...]\n"
    "\n"
    "Run CMD with libgputrace.so preloaded; every process of CMD that uses CUDA\n"
    "writes its own trace database. Exits with CMD's exit status (128+N if CMD\n"
    "was killed by signal N).\n"
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

int gt_cmd_run(int argc, char **argv)
{
    const char *output = NULL, *depth = NULL;
    int quiet = 0, i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            output = argv[++i];
        } else if (!strcmp(a, "--stack-depth") && i + 1 < argc) {
            depth = argv[++i];
            char *end;
            long d = strtol(depth, &end, 10);
            if (*end || d < 0 || d > 128) {
                fprintf(stderr, "gputrace run: --stack-depth takes 0 to 128, not '%s'\n", depth);
                return 2;
            }
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "gputrace run: unknown option '%s' (see gputrace run --help)\n", a);
            return 2;
        } else {
            break; /* the command itself, without a "--" */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "gputrace run: no command given (usage: gputrace run [-o PATH] -- CMD...)\n");
        return 2;
    }
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) != 0) {
        fprintf(stderr, "gputrace run: cannot find libgputrace.so beside this executable; "
                        "run it from the build tree or an installed prefix\n");
        return 2;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(shim) + (old ? strlen(old) + 2 : 1);
    char *preload = malloc(len);
    if (!preload)
        return 2;
    snprintf(preload, len, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    if (output) {
        remove_old_trace(output);
        setenv("GPUTRACE_OUTPUT", output, 1);
    }
    if (depth)
        setenv("GPUTRACE_STACK_DEPTH", depth, 1);
    if (quiet)
        setenv("GPUTRACE_QUIET", "1", 1);

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gputrace run: fork failed: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execvp(argv[i], argv + i);
        fprintf(stderr, "gputrace run: cannot run '%s': %s\n", argv[i], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    /* Like a shell: the child gets ^C, we wait for it and report its status. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 2;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
