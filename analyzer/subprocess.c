/* subprocess.c - starting a command under the shim (see subprocess.h): where the shim
 * is, LD_PRELOAD, and fork/exec/wait with a shell's exit statuses. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcodes.h"
#include "subprocess.h"

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

int gt_env_flag_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") && strcasecmp(v, "false") && strcasecmp(v, "no") && strcasecmp(v, "off");
}

int gt_preload_shim(const char *who)
{
    char shim[PATH_MAX];
    /* a GPUTRACE_DISABLE left in the environment turned tracing off, and run
     * and sweep then blamed the command ("no CUDA call"; a helper's probe) */
    if (gt_env_flag_on("GPUTRACE_DISABLE")) {
        fprintf(stderr, "%s: GPUTRACE_DISABLE=%.64s is set, which turns tracing off in every process: unset it "
                        "(env -u GPUTRACE_DISABLE %s ...)\n", who, getenv("GPUTRACE_DISABLE"), who);
        return -1;
    }
    if (find_shim(shim, sizeof shim) != 0) {
        fprintf(stderr, "%s: cannot find libgputrace.so beside this executable (looked in ../shim, ../lib, ../lib64, "
                        "../lib/x86_64-linux-gnu and its own directory); run it from the build tree or an installed "
                        "prefix, or as a symbolic link to one\n", who);
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(shim) + (old ? strlen(old) + 2 : 1);
    char *preload = malloc(len);
    if (!preload) {
        fprintf(stderr, "%s: out of memory\n", who);
        return -1;
    }
    snprintf(preload, len, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    return 0;
}

/* Opens path for the child's output, above 0-2 (a sweep started with its
 * stdout closed would get 1 here, and the child's dup2 onto 1 would then keep
 * the close-on-exec flag: the run's prints went into its own data file); -1
 * after one line on stderr. */
static int open_output(const char *path, const char *who)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0 && fd <= STDERR_FILENO) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
        close(fd);
        fd = high;
    }
    if (fd < 0)
        fprintf(stderr, "%s: cannot create %s: %s\n", who, path, strerror(errno));
    return fd;
}

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define KILL_GRACE_S 10.0     /* between SIGTERM and SIGKILL: time for the shim to close its trace */
#define REAP_GRACE_S 30.0     /* after SIGKILL: a process stuck in the driver may never be reaped */

/* Signals for the child while we wait. Without a timeout it shares our
 * process group: the terminal's ^C, ^\\ and hangup reach it as they reach us,
 * and we pass on only what kill() sent to us alone (a job scheduler's or an
 * orchestrator's SIGTERM), so that it is not orphaned. With a timeout it
 * leads its own group, so that a wrapper's children (a shell script, a
 * launcher) are stopped with it; then every one of these reaches that group
 * through us (and, when our stdin is the terminal, the terminal is handed to
 * its group for the run, as a shell does for a job). */
/* SIGUSR1/SIGUSR2/SIGALRM too: Slurm's --signal and Lightning's requeue send
 * SIGUSR1 to the job, and run, killed by it, orphaned the command (a
 * helper's probe: exit 138, the command ran on with no closing line) */
static const int passed_on[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM};
#define NPASSED ((int)(sizeof passed_on / sizeof *passed_on))
static volatile sig_atomic_t target;   /* the child's pid, or minus its group; 0 none */
static volatile sig_atomic_t interrupted;   /* the last of these we received while waiting */

int gt_spawn_interrupted(void)
{
    int sig = (int)interrupted;
    interrupted = 0;
    return sig;
}

static void pass_on(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    interrupted = sig;
    pid_t to = (pid_t)target;
    if (to < 0 || (to > 0 && (info->si_code == SI_USER || info->si_code == SI_QUEUE)))
        kill(to, sig);
}

/* Whether any process of group g is left (a zombie that another init does
 * not reap counts too: REAP_GRACE_S bounds that wait). */
static int group_left(pid_t g)
{
    return kill(-g, 0) == 0 || errno != ESRCH;
}

/* Waits for pid; past timeout_s (> 0) sends its group SIGTERM, then SIGKILL
 * after KILL_GRACE_S, setting *timed_out, and gives up REAP_GRACE_S after
 * that (-2: not all reaped). A stopped run has ended when its whole group
 * has, not its leader: a wrapper shell dies of SIGTERM at once while the job
 * it started may ignore it and hold the GPU on (on an H200 a PyTorch job that
 * ignored SIGTERM outlived a sweep that had stopped at its wrapper's end,
 * tests/gpu/RESULTS.md session 33). Polls every 20 ms: a run lasts seconds. */
static pid_t wait_child(pid_t pid, int *status, double timeout_s, int *timed_out)
{
    pid_t w;
    if (timeout_s <= 0) {
        while ((w = waitpid(pid, status, 0)) < 0 && errno == EINTR)
            ;
        return w;
    }
    double deadline = monotonic_s() + timeout_s;
    int sent = 0;
    pid_t leader = 0;   /* the child, once reaped */
    for (;;) {
        if (!leader) {
            w = waitpid(pid, status, WNOHANG);
            if (w < 0 && errno == EINTR)
                continue;
            if (w != 0 && !sent)
                return w;   /* ended on its own: what its group does after is the program's */
            if (w < 0)
                return w;
            leader = w;
        }
        if (leader) {
            /* members re-parented to us (we are PID 1 in a container, or a
             * subreaper) are ours to reap, else they stay zombies in the group */
            while (waitpid(-pid, NULL, WNOHANG) > 0)
                ;
            if (!group_left(pid))
                return leader;
        }
        if (monotonic_s() >= deadline) {
            if (sent == 2)
                return -2;
            kill(-pid, sent ? SIGKILL : SIGTERM);
            *timed_out = 1;
            deadline = monotonic_s() + (sent ? REAP_GRACE_S : KILL_GRACE_S);
            sent++;
        }
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

int gt_spawn_wait(char *const *argv, const struct gt_spawn *how, const char *who)
{
    int out = -1, err = -1;
    if (how && how->term_signal)
        *how->term_signal = 0;
    if (how && how->stdout_path && (out = open_output(how->stdout_path, who)) < 0)
        return GT_RUN_EXIT_FAILED;
    if (how && how->stderr_path && (err = open_output(how->stderr_path, who)) < 0) {
        if (out >= 0)
            close(out);
        return GT_RUN_EXIT_FAILED;
    }
    /* SIGCHLD inherited as ignored makes the kernel reap the child itself and
     * waitpid fail (a launcher or daemon may leave it so): the default while
     * we wait; the child gets what we were given */
    struct sigaction chld_dfl = {.sa_handler = SIG_DFL}, old_chld;
    sigemptyset(&chld_dfl.sa_mask);
    sigaction(SIGCHLD, &chld_dfl, &old_chld);
    double timeout_s = how ? how->timeout_s : 0;
    int tty = timeout_s > 0 && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp() ? STDIN_FILENO : -1;
    fflush(NULL);   /* nothing buffered here may be written twice by the child */
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork failed: %s\n", who, strerror(errno));
        sigaction(SIGCHLD, &old_chld, NULL);
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        return GT_RUN_EXIT_FAILED;
    }
    if (pid == 0) {
        sigaction(SIGCHLD, &old_chld, NULL);
        if (timeout_s > 0)
            setpgid(0, 0);
        if ((out >= 0 && dup2(out, STDOUT_FILENO) < 0) || (err >= 0 && dup2(err, STDERR_FILENO) < 0))
            _exit(GT_RUN_EXIT_FAILED);
        for (const char *const *e = how ? how->env : NULL; e && *e; e++)
            putenv((char *)*e);   /* the child's own copy of the environment */
        execvp(argv[0], argv);
        fprintf(stderr, "%s: cannot run '%s': %s\n", who, argv[0], strerror(errno));
        _exit(errno == ENOENT ? GT_RUN_EXIT_NOT_FOUND : GT_RUN_EXIT_CANNOT_EXEC);
    }
    if (out >= 0)
        close(out);
    if (err >= 0)
        close(err);
    if (how && how->pid)
        *how->pid = (long)pid;
    void (*old_ttou)(int) = SIG_DFL;
    if (timeout_s > 0) {
        setpgid(pid, pid);   /* (either side may run first) */
        if (tty >= 0) {
            old_ttou = signal(SIGTTOU, SIG_IGN);   /* a background group may not set the terminal's group */
            if (tcsetpgrp(tty, pid) != 0)
                tty = -1;
        }
    }
    target = timeout_s > 0 ? -pid : pid;
    struct sigaction act = {.sa_sigaction = pass_on, .sa_flags = SA_SIGINFO | SA_RESTART}, old[NPASSED];
    sigemptyset(&act.sa_mask);
    for (int k = 0; k < NPASSED; k++)
        sigaction(passed_on[k], &act, &old[k]);
    int status = 0, code, late = 0;
    pid_t w = wait_child(pid, &status, timeout_s, &late);
    int wait_errno = errno;
    target = 0;
    for (int k = 0; k < NPASSED; k++)
        sigaction(passed_on[k], &old[k], NULL);
    if (tty >= 0) {
        tcsetpgrp(tty, getpgrp());
        signal(SIGTTOU, old_ttou);
    }
    sigaction(SIGCHLD, &old_chld, NULL);
    if (late && how->timed_out)
        *how->timed_out = 1;
    if (w == -2) {
        fprintf(stderr, "%s: processes of group %d did not end %.0f s after SIGKILL (stuck in the driver?): left behind\n",
                who, (int)pid, REAP_GRACE_S);
        code = 128 + SIGKILL;
    } else if (w < 0) {
        fprintf(stderr, "%s: cannot wait for the command (pid %d): %s\n", who, (int)pid, strerror(wait_errno));
        code = GT_RUN_EXIT_FAILED;
    } else if (WIFSIGNALED(status)) {
        code = 128 + WTERMSIG(status);
        if (how && how->term_signal)
            *how->term_signal = WTERMSIG(status);
    } else {
        code = WEXITSTATUS(status);
    }
    return code;
}
