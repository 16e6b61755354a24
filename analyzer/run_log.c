/* run_log.c - `gputrace run`'s closing line: the launcher makes a run log in a
 * private directory and names it in GPUTRACE_RUN_LOG; every traced process of
 * the command appends a line when it creates its trace and one when it
 * finishes it (shim/runlog.c) and stays quiet; at the end the launcher says,
 * in one line, the files written, or that no process made a call it records. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "exitcodes.h"
#include "format.h"
#include "run_log.h"

static char log_dir[PATH_MAX], log_path[PATH_MAX + 16];

int gt_run_log_begin(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(log_dir, sizeof log_dir, "%s/gputrace-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(log_dir)) {
        snprintf(log_dir, sizeof log_dir, "/tmp/gputrace-run-XXXXXX");
        if (!mkdtemp(log_dir)) {
            log_dir[0] = 0;
            return -1; /* the processes then say their own lines: nothing is lost */
        }
    }
    snprintf(log_path, sizeof log_path, "%s/traces", log_dir);
    FILE *f = fopen(log_path, "w");
    /* the shim writes only into a file that starts so (shim/runlog.c) */
    if (f && fputs("gputrace run log 1\n", f) == EOF) {
        fclose(f);
        f = NULL;
        unlink(log_path);
    }
    if (!f) {
        rmdir(log_dir);
        log_dir[0] = 0;
        return -1;
    }
    fclose(f);
    setenv("GPUTRACE_RUN_LOG", log_path, 1);
    return 0;
}

/* One trace file of the run, in the order the files were created. */
struct trace_file {
    char *path;
    int pid;
    unsigned long long started_ns; /* when the process began; 0: not said (an older shim) */
    long rank;
    int done;
    unsigned long long events, dropped, peak_device, peak_pool, peak_managed, peak_host;
};

static struct trace_file *find(struct trace_file *t, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].path, path) == 0)
            return &t[i];
    return NULL;
}

/* path as the user would type it: relative to the current directory when inside it */
static const char *shown(const char *path, const char *cwd)
{
    size_t n = strlen(cwd);
    if (n > 1 && strncmp(path, cwd, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

static void say_one(FILE *out, const struct trace_file *t, const char *cwd, int with_pid)
{
    char a[GT_FMT_LEN], b[GT_FMT_LEN];
    for (const char *c = shown(t->path, cwd); *c; c++)   /* one line: a control character in the name escaped */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\x%02x", (unsigned char)*c);
        else
            fputc(*c, out);
    fputs(" (", out);
    if (with_pid)   /* each part ends ", ", which the next part follows */
        fprintf(out, "pid %d, ", t->pid);
    if (with_pid && t->rank >= 0)
        fprintf(out, "rank %ld, ", t->rank);
    if (!t->done) {
        fputs("not finished: its process was killed, or still runs)", out);
        return;
    }
    fprintf(out, "%llu event%s, %llu dropped, peak device memory %s", t->events, gt_s((long long)t->events),
            t->dropped, gt_fmt_bytes((int64_t)t->peak_device, a));
    if (t->peak_pool)
        fprintf(out, ", pool %s", gt_fmt_bytes((int64_t)t->peak_pool, b));
    if (t->peak_managed)
        fprintf(out, ", managed %s", gt_fmt_bytes((int64_t)t->peak_managed, b));
    if (t->peak_host)
        fprintf(out, ", pinned host %s", gt_fmt_bytes((int64_t)t->peak_host, b));
    fputc(')', out);
}

/* parent before its children: by when each process began (pids wrap around,
 * at 32768 on many hosts), by pid where that is not known or the same */
static int by_start(const void *a, const void *b)
{
    const struct trace_file *x = a, *y = b;
    if (x->started_ns && y->started_ns && x->started_ns != y->started_ns)
        return x->started_ns > y->started_ns ? 1 : -1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

void gt_run_log_end(int status, int sig)
{
    if (!log_dir[0])
        return;
    struct trace_file *t = NULL;
    size_t n = 0, cap = 0;
    /* files being created: told if neither opened after nor given up ("failed": the shim said why) */
    struct { char *path; int pid, resolved; } creating[64];
    size_t nc = 0, failed = 0;   /* failed: processes whose trace could not be made (the shim said why) */
    FILE *f = fopen(log_path, "r");
    char line[PATH_MAX + 256];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *field[9];
        int nf = 0;
        for (char *s = line, *tab; nf < 9; s = tab + 1) {
            field[nf++] = s;
            if (!(tab = strchr(s, '\t')))
                break;
            if (nf < 9)
                *tab = 0;
        }
        int open_rec = (nf == 4 || nf == 5) && strcmp(field[0], "open") == 0; /* 4: an older shim's, no start */
        int wrote_rec = (nf == 7 || nf == 9) && strcmp(field[0], "wrote") == 0;   /* 7: an older shim's */
        int creating_rec = nf == 3 && strcmp(field[0], "creating") == 0;
        int failed_rec = nf == 2 && strcmp(field[0], "failed") == 0;
        failed += failed_rec;
        if (open_rec || failed_rec) {   /* the last creation of that process is over (in the log's order:
                                         * an exec'ed image creates its own after its predecessor's) */
            int pid = atoi(field[1]);
            for (size_t k = nc; k-- > 0;)
                if (creating[k].pid == pid && !creating[k].resolved) {
                    creating[k].resolved = 1;
                    break;
                }
        }
        if (!open_rec && !wrote_rec && !creating_rec)
            continue;
        char *path = field[nf - 1];   /* \\, \t and \n escaped by the shim (runlog.c) */
        char *o = path;
        for (const char *c = path; *c; c++)
            if (*c == '\\' && (c[1] == 't' || c[1] == 'n' || c[1] == '\\')) {
                c++;
                *o++ = *c == 't' ? '\t' : *c == 'n' ? '\n' : '\\';
            } else {
                *o++ = *c;
            }
        *o = 0;
        if (creating_rec) {
            if (nc < sizeof creating / sizeof *creating && (creating[nc].path = strdup(path))) {
                creating[nc].resolved = 0;
                creating[nc++].pid = atoi(field[1]);
            }
            continue;
        }
        struct trace_file *e = find(t, n, path);
        if (!e) {
            if (n == cap) {
                size_t ncap = cap ? 2 * cap : 8;
                struct trace_file *g = realloc(t, ncap * sizeof *t);
                if (!g)
                    break;
                t = g;
                cap = ncap;
            }
            e = &t[n++];
            memset(e, 0, sizeof *e);
            e->rank = -1;
            if (!(e->path = strdup(path))) {
                n--;
                break;
            }
        }
        e->pid = atoi(field[1]);
        if (open_rec) {
            e->rank = strtol(field[2], NULL, 10);
            e->started_ns = nf == 5 ? strtoull(field[3], NULL, 10) : 0;
        } else { /* the last word on a file: a failed exec resumes the same file */
            e->done = 1;
            e->events = strtoull(field[2], NULL, 10);
            e->dropped = strtoull(field[3], NULL, 10);
            e->peak_device = strtoull(field[4], NULL, 10);
            e->peak_pool = strtoull(field[5], NULL, 10);
            e->peak_managed = nf == 9 ? strtoull(field[6], NULL, 10) : 0;
            e->peak_host = nf == 9 ? strtoull(field[7], NULL, 10) : 0;
        }
    }
    if (f)
        fclose(f);
    unlink(log_path);
    rmdir(log_dir);
    unsetenv("GPUTRACE_RUN_LOG");

    if (n > 1)
        qsort(t, n, sizeof *t, by_start);
    size_t unopened = 0;
    for (size_t k = 0; k < nc; k++) {
        if (creating[k].resolved)
            free(creating[k].path);
        else
            creating[unopened++] = creating[k];
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    if (n == 0 && (status == GT_RUN_EXIT_NOT_FOUND || status == GT_RUN_EXIT_CANNOT_EXEC)) {
        /* (it was never run, or ended as one: "cannot run" said why) */
    } else if (n == 0 && unopened) {
        /* (said below, process by process) */
    } else if (n == 0 && failed) {
        /* the shim's line above says why (an unwritable directory); "no CUDA call" contradicted it (a helper's
         * probe) */
        fprintf(stderr, "gputrace run: nothing was traced: %zu process%s of the command could not create %s trace file "
                        "(see the line%s above; -o names a writable place)\n", failed, failed == 1 ? "" : "es",
                failed == 1 ? "its" : "their", failed == 1 ? "" : "s");
    } else if (n == 0) {
        /* the shim starts a trace at the first call it records: a program
         * that only asked for devices or synchronized made none */
        if (sig > 0)   /* a process killed in the moment after its first call has no trace yet */
            fprintf(stderr, "gputrace run: nothing was traced: the command died of signal %d (%s) before any of its "
                            "processes had a trace file (it may have made no CUDA call; one killed within a few ms "
                            "of its first leaves none too)\n", sig, strsignal(sig));
        else
            fprintf(stderr, "gputrace run: no process of the command that the preload reached made a CUDA call gputrace "
                            "records (memory, graphs): nothing was traced\n");
    } else if (n == 1) {
        fprintf(stderr, "gputrace run: wrote ");
        say_one(stderr, &t[0], cwd, !t[0].done);
        fputc('\n', stderr);
    } else {
        fprintf(stderr, "gputrace run: wrote %zu traces, one per process that called CUDA: ", n);
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputs(", ", stderr);
            say_one(stderr, &t[i], cwd, 1);
        }
        fputc('\n', stderr);
    }
    /* a process that ended while its trace was being made (killed a few ms
     * after its first recorded call): what it left under the temporary name
     * holds the schema at most, never an event */
    for (size_t k = 0; k < unopened; k++) {
        if (kill(creating[k].pid, 0) == 0 || errno == EPERM) {   /* (a process of the command that outlived it) */
            fprintf(stderr, "gputrace run: process %d still runs, its trace still being created (%s)\n",
                    creating[k].pid, shown(creating[k].path, cwd));
            continue;
        }
        /* the shim's own file under its temporary name and SQLite's beside
         * it: no event in them, and no process left to finish them */
        int removed = unlink(creating[k].path) == 0;
        for (int s = 0; s < 3; s++) {
            char side[PATH_MAX + 16];
            snprintf(side, sizeof side, "%s%s", creating[k].path, (const char *[]){"-journal", "-wal", "-shm"}[s]);
            removed |= unlink(side) == 0;
        }
        fprintf(stderr, "gputrace run: process %d ended while its trace was being created, a moment after its first "
                        "CUDA call: nothing of it was recorded%s\n", creating[k].pid,
                removed ? " (its unfinished file was removed)" : "");
    }
    for (size_t k = 0; k < unopened; k++)
        free(creating[k].path);
    for (size_t i = 0; i < n; i++)
        free(t[i].path);
    free(t);
}
