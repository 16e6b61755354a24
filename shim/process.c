/* The trace's processes row: who was traced (pid, host, command line, rank
 * variables) and with which library and schema. Written once, by the writer. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

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

bool gt_process_row(sqlite3 *db, uint64_t start_unix_ns, uint64_t start_mono_ns)
{
    static char cmdline[16384], exe[4096], host[256];
    read_cmdline(cmdline, sizeof cmdline);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (gethostname(host, sizeof host) != 0)
        host[0] = 0;
    host[sizeof host - 1] = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO processes(id, pid, ppid, host, command_line, exe, rank, local_rank, "
                           "start_unix_ns, start_mono_ns, library_version, schema_version, stack_depth) "
                           "VALUES (1,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    long rank = gt_rank(), lrank = local_rank();
    sqlite3_bind_int(st, 1, getpid());
    sqlite3_bind_int(st, 2, getppid());
    sqlite3_bind_text(st, 3, host, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, cmdline, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, exe, -1, SQLITE_STATIC);
    if (rank >= 0)
        sqlite3_bind_int64(st, 6, rank);
    if (lrank >= 0)
        sqlite3_bind_int64(st, 7, lrank);
    sqlite3_bind_int64(st, 8, (int64_t)start_unix_ns);
    sqlite3_bind_int64(st, 9, (int64_t)start_mono_ns);
    sqlite3_bind_text(st, 10, GPUTRACE_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 11, GT_SCHEMA_VERSION);
    sqlite3_bind_int(st, 12, gt_stacks_depth());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE;
}
