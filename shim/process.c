/* The trace's processes row: who was traced (pid, host, command line, rank
 * variables) and with which library and schema, written once when the file
 * is created, and its end. Writer thread, through db.c (the counters are
 * writer_events.c's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "writer.h"

static void read_cmdline(char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/cmdline", "re");
    if (!f)
        return;
    size_t n = fread(out, 1, cap - 1, f);
    fclose(f);
    while (n > 0 && out[n - 1] == 0)
        n--;
    for (size_t i = 0; i < n; i++)
        if (out[i] == 0)
            out[i] = ' ';
    out[n] = 0;
}

/* First of the named variables that holds an integer, or -1. */
static long env_rank(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (*end == 0 && r >= 0)
                return r;
        }
    }
    return -1;
}

long gt_rank(void)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", NULL};
    return env_rank(names);
}

static long local_rank(void)
{
    static const char *const names[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", NULL};
    return env_rank(names);
}

/* How many ranks the launcher started: with rank and host, what lets the
 * analyzer tell a whole job from a part of one. */
static long world_size(void)
{
    static const char *const names[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE", NULL};
    return env_rank(names);
}

bool gt_process_row(uint64_t start_unix_ns, uint64_t start_mono_ns)
{
    static char cmdline[16384], exe[4096], host[256];
    read_cmdline(cmdline, sizeof cmdline);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (gethostname(host, sizeof host) != 0)
        host[0] = 0;
    host[sizeof host - 1] = 0;
    long rank = gt_rank(), lrank = local_rank(), wsize = world_size();
    GT_BIND_INT(PROCESS, id, 1);
    GT_BIND_INT(PROCESS, pid, getpid());
    GT_BIND_INT(PROCESS, ppid, getppid());
    GT_BIND_TEXT(PROCESS, host, host);
    GT_BIND_TEXT(PROCESS, command_line, cmdline);
    GT_BIND_TEXT(PROCESS, exe, exe);
    GT_BIND_OPT(PROCESS, rank, rank >= 0, rank);
    GT_BIND_OPT(PROCESS, local_rank, lrank >= 0, lrank);
    GT_BIND_OPT(PROCESS, world_size, wsize > 0, wsize);
    GT_BIND_INT(PROCESS, start_unix_ns, start_unix_ns);
    GT_BIND_INT(PROCESS, start_mono_ns, start_mono_ns);
    GT_BIND_TEXT(PROCESS, library_version, GPUTRACE_VERSION);
    GT_BIND_INT(PROCESS, schema_version, GT_SCHEMA_VERSION);
    GT_BIND_INT(PROCESS, stack_depth, gt_stacks_depth());
    return gt_db_run(GT_ST_PROCESS, GT_NOT_A_RECORD);
}

/* The end of the trace: when (relative to its start) and why. */
void gt_process_end(uint64_t end_ns, const char *reason)
{
    GT_BIND_INT(PROCESS_END, end_ns, end_ns);
    GT_BIND_TEXT(PROCESS_END, end_reason, reason);
    gt_db_run(GT_ST_PROCESS_END, GT_NOT_A_RECORD);
}

/* exec failed and the trace goes on in the same file: not ended after all. */
void gt_process_reopen(void)
{
    gt_db_run(GT_ST_PROCESS_REOPEN, GT_NOT_A_RECORD);
}
