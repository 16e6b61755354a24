/* The run log: under `gputrace run` (GPUTRACE_RUN_LOG names a file the launcher
 * made in a private directory) each traced process appends one line when its
 * trace file is created and one when it is finished, so the launcher can print
 * one closing line for the whole command instead of one line per process. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

static char abs_path[PATH_MAX]; /* this process's trace, as the launcher will name it */
static char log_path[2 * PATH_MAX]; /* abs_path as the log's lines hold it: \\, \t and \n escaped */

/* A tab or newline in the path would break the log's lines: escaped, as the
 * launcher reads them back (run_log.c). */
static void escape_path(void)
{
    char *o = log_path;
    for (const char *c = abs_path; *c && o < log_path + sizeof log_path - 3; c++) {
        if (*c == '\\' || *c == '\t' || *c == '\n') {
            *o++ = '\\';
            *o++ = *c == '\t' ? 't' : *c == '\n' ? 'n' : '\\';
        } else {
            *o++ = *c;
        }
    }
    *o = 0;
}
static uint64_t started_ns;     /* when this process began (CLOCK_MONOTONIC, shared by all processes) */

/* The launcher lists a parent before its children by this, not by pid:
 * pids wrap around (at 32768 on many hosts) and a child's can be lower. */
void gt_runlog_process_started(void)
{
    started_ns = gt_now_ns();
}

/* The run log's first line, which the launcher writes (analyzer/run_log.c):
 * a file without it is not a run log, and is never written (a stray
 * GPUTRACE_RUN_LOG=/etc/passwd had three lines appended to it; a helper's
 * probe) */
#define RUN_LOG_HEADER "gputrace run log 1\n"

/* Appends line to the run log in one write (O_APPEND: lines of several
 * processes never interleave). False when there is no run log, or it is gone
 * (the launcher ended before this process), or it is not one, or the write
 * failed. */
static bool append(const char *line, size_t n)
{
    if (!*gt_config.run_log)
        return false;
    /* never blocks: a FIFO named here held the writer 30 s at the exit */
    int fd = open(gt_config.run_log, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    char head[sizeof RUN_LOG_HEADER - 1];
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
              memcmp(head, RUN_LOG_HEADER, sizeof head) == 0 && write(fd, line, n) == (ssize_t)n;
    close(fd);
    return ok;
}

/* Writer thread, before a new trace is made under its temporary name tmp:
 * "creating PID PATH". A process killed before its "open" line (a few ms
 * after its first recorded call: the schema and the processes row are being
 * written) is then told by the launcher, and its temporary file named,
 * instead of "nothing was traced". */
void gt_runlog_creating(const char *tmp)
{
    if (!*gt_config.run_log)
        return;
    char path[PATH_MAX];
    if (!realpath(tmp, path))
        snprintf(path, sizeof path, "%s", tmp);
    snprintf(abs_path, sizeof abs_path, "%s", path);
    escape_path();
    char line[sizeof log_path + 64];
    int n = snprintf(line, sizeof line, "creating\t%d\t%s\n", (int)getpid(), log_path);
    abs_path[0] = log_path[0] = 0;   /* (the trace's own path is said at "open") */
    if (n > 0 && (size_t)n < sizeof line)
        append(line, (size_t)n);
}

/* Writer thread: the new trace could not be made (the shim said why on
 * stderr): "failed PID", so that the launcher does not take its "creating"
 * for a process killed meanwhile. */
void gt_runlog_creation_failed(void)
{
    char line[64];
    int n = snprintf(line, sizeof line, "failed\t%d\n", (int)getpid());
    if (*gt_config.run_log && n > 0 && (size_t)n < sizeof line)
        append(line, (size_t)n);
}

/* Writer thread, when path has just been created: "open PID RANK STARTED_NS PATH". */
void gt_runlog_opened(const char *path)
{
    if (!*gt_config.run_log)
        return;
    if (!realpath(path, abs_path))
        snprintf(abs_path, sizeof abs_path, "%s", path);
    escape_path();
    char line[sizeof log_path + 64];
    int n = snprintf(line, sizeof line, "open\t%d\t%ld\t%llu\t%s\n", (int)getpid(), gt_rank(),
                     (unsigned long long)started_ns, log_path);
    if (n > 0 && (size_t)n < sizeof line)
        append(line, (size_t)n);
}

/* The trace is finished: "wrote PID EVENTS DROPPED PEAK_DEVICE PEAK_POOL PEAK_MANAGED PEAK_HOST PATH".
 * True when the launcher will say it; false: the caller says it itself. */
bool gt_runlog_wrote(const struct gt_writer_summary *s)
{
    if (!*gt_config.run_log || !*abs_path)
        return false;
    char line[sizeof log_path + 128];
    int n = snprintf(line, sizeof line, "wrote\t%d\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%s\n", (int)getpid(),
                     (unsigned long long)s->events, (unsigned long long)s->dropped,
                     (unsigned long long)s->peak_device, (unsigned long long)s->peak_pool,
                     (unsigned long long)s->peak_managed, (unsigned long long)s->peak_host, log_path);
    return n > 0 && (size_t)n < sizeof line && append(line, (size_t)n);
}
