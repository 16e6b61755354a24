/* bench_analyzer_gen.c - writes a large synthetic trace for the analyzer
 * benchmark: a training loop of cudaMallocAsync/cudaFreeAsync calls (one
 * per tensor, as PyTorch's cudaMallocAsync backend makes them) from 64 call
 * stacks, one NVTX range "train_step batch_size=N" per iteration, and one
 * retained allocation per iteration (a slow leak for growth to find).
 * MARKING "none": no ranges, and every iteration repeats the same sequence
 * of sizes and sites at batch size 32, so the analyzer must find the
 * iterations automatically from the allocation pattern.
 *
 * usage: bench_analyzer_gen OUT.db SCHEMA.sql [EVENTS] [EVENTS_PER_ITERATION] [nvtx|none]
 * Built and run by tests/bench/bench_analyzer.sh; needs only SQLite. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTACKS 64
#define API_MALLOC_ASYNC 3
#define API_FREE_ASYNC 4

static sqlite3 *db;

static void die(const char *what)
{
    fprintf(stderr, "bench_analyzer_gen: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
    exit(1);
}

static void exec(const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        die(sql);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n)
        die("read schema");
    s[n] = 0;
    fclose(f);
    return s;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT.db SCHEMA.sql [EVENTS] [EVENTS_PER_ITERATION]\n", argv[0]);
        return 2;
    }
    long long nevents = argc > 3 ? atoll(argv[3]) : 10000000;
    long long per_iter = argc > 4 ? atoll(argv[4]) : 1000;
    int unmarked = argc > 5 && !strcmp(argv[5], "none");
    remove(argv[1]);
    if (sqlite3_open(argv[1], &db) != SQLITE_OK)
        die("open");
    exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 4096");
    exec(read_file(argv[2]));
    exec("BEGIN");

    /* 64 stacks of 6 frames; frame names like a PyTorch model's */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT INTO frames(id, ip, module, module_offset, function, symbol_offset) VALUES (?,?,?,?,?,?)", -1, &st, NULL))
        die("prepare frames");
    for (int f = 1; f <= NSTACKS + 3; f++) {
        char name[64];
        snprintf(name, sizeof name, f <= NSTACKS ? "at::native::op_%d" : f == NSTACKS + 1 ? "train_step" : f == NSTACKS + 2 ? "main" : "retain_for_logging", f);
        sqlite3_bind_int(st, 1, f);
        sqlite3_bind_int64(st, 2, 0x400000 + 16 * f);
        sqlite3_bind_text(st, 3, "/usr/lib/libtorch_cuda.so", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, 16 * f);
        sqlite3_bind_text(st, 5, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 6, 4);
        if (sqlite3_step(st) != SQLITE_DONE)
            die("insert frame");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    for (int s = 1; s <= NSTACKS + 1; s++) {
        char sql[256];
        int inner = s <= NSTACKS ? s : NSTACKS + 3;
        snprintf(sql, sizeof sql, "INSERT INTO stacks VALUES (%d, 3, %d); INSERT INTO stack_frames VALUES (%d,0,%d),(%d,1,%d),(%d,2,%d)",
                 s, s * 7919, s, inner, s, NSTACKS + 1, s, NSTACKS + 2);
        exec(sql);
    }

    if (sqlite3_prepare_v2(db, "INSERT INTO events(t_ns, api, ptr, size, device, stream, tid, result, stack_id) VALUES (?,?,?,?,0,4096,777,0,?)", -1, &st, NULL))
        die("prepare events");
    sqlite3_stmt *rg;
    if (sqlite3_prepare_v2(db, "INSERT INTO ranges(source, message, tid, start_ns, end_ns, depth, batch_size) VALUES ('nvtx',?,777,?,?,0,?)", -1, &rg, NULL))
        die("prepare ranges");

    int64_t t = 1000, next_addr = 0x7f0000000000;
    long long written = 0;
    /* per iteration: pairs of alloc/free from the 64 sites, with up to 64 live at once */
    int64_t live_ptr[NSTACKS];
    int64_t live_size[NSTACKS];
    int nlive = 0;
    int64_t *free_list = malloc(sizeof(int64_t) * 1000000);
    long long nfree = 0;
    long long iter = 0;
    while (written < nevents) {
        int bs = unmarked ? 32 : iter % 3 == 0 ? 16 : iter % 3 == 1 ? 32 : 64;
        if (unmarked)
            rng = 88172645463325252ull;   /* the same step every time */
        int64_t start = t;
        long long budget = per_iter < nevents - written ? per_iter : nevents - written;
        long long done = 0;
        while (done + 2 < budget || (done < budget && nlive)) {
            int do_alloc = nlive == 0 || (nlive < NSTACKS && done + nlive + 2 < budget && (next_rand() & 1));
            t += 50 + (int64_t)(next_rand() % 100);
            if (do_alloc) {
                int site = (int)(next_rand() % NSTACKS) + 1;
                int64_t size = (int64_t)(site * 4096) * bs;
                int64_t ptr = nfree ? free_list[--nfree] : (next_addr += 1 << 24);
                sqlite3_bind_int64(st, 1, t);
                sqlite3_bind_int(st, 2, API_MALLOC_ASYNC);
                sqlite3_bind_int64(st, 3, ptr);
                sqlite3_bind_int64(st, 4, size);
                sqlite3_bind_int(st, 5, site);
                live_ptr[nlive] = ptr;
                live_size[nlive++] = size;
            } else {
                int k = (int)(next_rand() % (uint64_t)nlive);
                sqlite3_bind_int64(st, 1, t);
                sqlite3_bind_int(st, 2, API_FREE_ASYNC);
                sqlite3_bind_int64(st, 3, live_ptr[k]);
                sqlite3_bind_int64(st, 4, live_size[k]);
                sqlite3_bind_null(st, 5);
                if (nfree < 1000000)
                    free_list[nfree++] = live_ptr[k];
                live_ptr[k] = live_ptr[--nlive];
                live_size[k] = live_size[nlive];
            }
            if (sqlite3_step(st) != SQLITE_DONE)
                die("insert event");
            sqlite3_reset(st);
            done++;
        }
        if (done < budget) {   /* the retained allocation: 64 KiB per iteration, never freed */
            t += 50;
            sqlite3_bind_int64(st, 1, t);
            sqlite3_bind_int(st, 2, API_MALLOC_ASYNC);
            sqlite3_bind_int64(st, 3, next_addr += 1 << 24);
            sqlite3_bind_int64(st, 4, 65536);
            sqlite3_bind_int(st, 5, NSTACKS + 1);
            if (sqlite3_step(st) != SQLITE_DONE)
                die("insert event");
            sqlite3_reset(st);
            done++;
        }
        char msg[64];
        snprintf(msg, sizeof msg, "train_step batch_size=%d", bs);
        if (unmarked)
            goto next;
        sqlite3_bind_text(rg, 1, msg, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(rg, 2, start);
        sqlite3_bind_int64(rg, 3, t + 10);
        sqlite3_bind_int(rg, 4, bs);
        if (sqlite3_step(rg) != SQLITE_DONE)
            die("insert range");
        sqlite3_reset(rg);
    next:
        t += 100;
        written += done;
        iter++;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(rg);
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO devices(id, name, total_bytes) VALUES (0, 'Bench GPU', %lld);"
             "INSERT INTO processes(pid, host, command_line, start_unix_ns, start_mono_ns, end_ns, end_reason, library_version,"
             " schema_version, stack_depth, events_recorded) VALUES (1, 'bench', 'bench_analyzer_gen', 0, 0, %lld, 'exit', 'bench', 1, 3, %lld)",
             80LL << 30, (long long)t + 1000, written);
    exec(sql);
    exec("COMMIT");
    sqlite3_close(db);
    printf("%lld events, %lld iterations\n", written, iter);
    return 0;
}
