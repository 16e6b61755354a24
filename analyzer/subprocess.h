/* subprocess.h - starting a command under the shim, shared by `gputrace run` and
 * `gputrace sweep`: finding libgputrace.so beside this executable, putting
 * it first in LD_PRELOAD, and running a command to its end with the exit
 * status a shell would report. */
#ifndef GT_SUBPROCESS_H
#define GT_SUBPROCESS_H

/* Finds libgputrace.so beside this executable (installed prefix or build
 * tree) and puts it in front of any LD_PRELOAD already set, in this
 * process's environment, so every command started after inherits it.
 * Returns 0, or -1 after one line on stderr starting with who. */
int gt_preload_shim(const char *who);

/* Is the flag named on in the environment, as the shim reads a flag
 * (shim/config.c): off for unset, empty, 0, false, no, off (any case). */
int gt_env_flag_on(const char *name);

/* How gt_spawn_wait runs a command. */
struct gt_spawn {
    const char *const *env;    /* "NAME=VALUE" strings set in the child only; NULL-terminated, or NULL */
    const char *stdout_path;   /* the child's stdout (created or truncated); NULL: ours */
    const char *stderr_path;   /* the child's stderr; NULL: ours */
    double timeout_s;          /* > 0: past it the child gets SIGTERM, and SIGKILL 10 s later */
    int *timed_out;            /* set to 1 when it did (not NULL with timeout_s) */
    int *term_signal;          /* set to N when a signal N ended it, else 0; may be NULL */
    long *pid;                 /* set to the child's pid once started; may be NULL */
};

/* Runs argv[0] (searched in PATH) with argv, in a child process, and waits
 * for it (or stops it past how->timeout_s); like a shell, ^C and ^\ go to the
 * child while we wait, and SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to us
 * alone are passed on to it (subprocess.c says how). Returns its
 * exit status: 128+N when killed by signal N, 127 when not found, 126 when
 * it could not be executed (after one line on the child's stderr, starting
 * with who), GT_RUN_EXIT_FAILED when no child could be started. how may be
 * NULL. */
int gt_spawn_wait(char *const *argv, const struct gt_spawn *how, const char *who);
/* A signal gt_spawn_wait received (and passed on) while it waited, or 0;
 * cleared by the call: ^C to a sweep, not a run that failed. */
int gt_spawn_interrupted(void);

#endif
