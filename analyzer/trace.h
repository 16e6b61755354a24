/* trace.h - reading a gputrace trace: open and validate a database read-only,
 * load its events into compact arrays, and fetch the rest (process, devices,
 * ranges, marker iterations, kernels, stack frames) on demand. trace.c (and its
 * row readers in trace_rows.c) is where the analyzer's SQL lives. */
#ifndef GT_TRACE_H
#define GT_TRACE_H
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "exitcodes.h"

/* What an apis row says about its calls (enums from schema_sql.h). */
struct gt_api_attr {
    unsigned char known, op, memory, space;
    char name[32];
};
/* Api slots of the calls made during a CUDA graph's capture (graph_calls):
 * the API's id with one of these bits (apis ids are below 64). */
#define GT_API_GRAPH_IN_CAPTURE 0x40   /* made meanwhile: the API's own row */
#define GT_API_GRAPH_NODE 0x80         /* captured: memory GT_MEM_GRAPH */
static inline int gt_api_base(int api)          /* the API itself, whichever slot */
{
    return api & ~(GT_API_GRAPH_IN_CAPTURE | GT_API_GRAPH_NODE);
}

/* One traced call, 32 bytes. Events are kept in (t_ns, id) order. */
/* SQLite's unix files open by a full path of at most 512 bytes, the
 * -journal's name included: no trace path over this opens (the shim's
 * shim/db.c says so of the file it makes) */
#define GT_SQLITE_PATH_MAX 504

struct gt_event {
    int64_t t;          /* ns since process start */
    union {
        uint64_t ptr;   /* successful call: address or VMM handle (0 if NULL) */
        int64_t result; /* failed call (failed != 0): its error code */
    } u;
    int64_t size;       /* bytes; -1 if NULL (unknown) */
    int32_t site;       /* dense index of its stack (see gt_trace.site_ids), -1: none */
    int16_t device;     /* device ordinal; -1 host; INT16_MIN if NULL */
    uint8_t api;        /* apis.id; 0 if out of range */
    uint8_t failed;     /* result != 0 */
};
#define GT_DEVICE_NULL INT16_MIN

struct gt_process {
    int present;
    int64_t pid, ppid, rank, local_rank, world_size;   /* -1 when NULL (world_size: also before schema 3) */
    char *host, *command_line, *exe, *end_reason, *library_version;
    int64_t start_unix_ns, end_ns;        /* end_ns -1: NULL (killed) */
    int64_t stack_depth, events_recorded, events_dropped, peak_device_bytes;
};

struct gt_device {
    int64_t id;
    char *name;
    int64_t total_bytes;   /* -1 unknown */
};

struct gt_drop {
    char *reason;
    int64_t count;
};

/* An NVTX range or gputrace_range_* marker range. */
struct gt_range {
    int64_t start, end;    /* end -1: never closed */
    int64_t tid, depth;
    int64_t batch_size;    /* -1: NULL */
    char *message;         /* never NULL ("" for NULL) */
    char *domain;          /* NVTX domain; NULL: the default domain (and marker ranges) */
    int is_marker;         /* source = 'marker' */
};

/* A row of the marker API's iterations table. */
struct gt_marker_iter {
    int64_t idx, batch_size, t;   /* batch_size -1: not given */
};

/* A CUPTI kernel: start time and interned name. */
struct gt_kernel {
    int64_t start;
    int64_t name_id;
    int backward;    /* its name says it computes gradients: backward, bwd, dgrad, wgrad */
};

/* One frame of a stack as recorded (what gt_trace_frames' strings are made
 * of), for the call-site text that tells sites apart (callsite.c). */
struct gt_frame {
    char *function;        /* demangled; a Python frame's qualified name; NULL: not resolved */
    char *module;          /* basename; "" unknown (and for a Python frame) */
    char *file;            /* basename of the source file; a Python frame's file as Python has it;
                              NULL: not symbolized */
    int64_t line;
    uint64_t offset;       /* module_offset (0 unknown) */
    uint64_t ip;
    int python;            /* frames.kind = 'python' */
};
/* Index of the innermost frame of the program's own Python code (not the
 * standard library, not site-packages or dist-packages, not frozen modules),
 * else of the innermost Python frame; -1 if there is no Python frame. */
int gt_frame_user_python(const struct gt_frame *fi, int n);
/* The shim's marker before the frames of the thread waiting in backward()
 * (a Python frame "<backward>" with no file): the frames after it are that
 * thread's, not the allocating one's. */
int gt_frame_is_backward_mark(const struct gt_frame *f);
/* Is this Python file the program's own (see gt_frame_user_python)? */
int gt_python_file_is_user(const char *file);

/* A flight recorder's trace (GPUTRACE_WINDOW_S): only its last window is
 * complete; interval summaries give each level's peak over the whole run. */
struct gt_run_peak {
    int memory;            /* enum gt_memory */
    int64_t device;        /* -1 host */
    int64_t peak, start_ns, end_ns;   /* the highest, and the interval that held it */
};
struct gt_recorder {
    int on;
    int64_t window_ns, interval_ns, complete_from_ns;
    int64_t failed_before;   /* failed calls the interval summaries counted before complete_from_ns */
    struct gt_run_peak *peaks;
    size_t npeaks;
};

struct gt_trace {
    const char *path;
    sqlite3 *db;
    int64_t schema_version;
    struct gt_api_attr api[256];
    struct gt_process proc;
    struct gt_device *devices;
    size_t ndevices;
    struct gt_drop *drops;
    size_t ndrops;

    struct gt_event *ev;   /* nev events in (t_ns, id) order */
    size_t nev;
    int resorted;          /* ids were not in time order; a stable sort fixed it */
    int wal_missing;       /* the file is in WAL mode (never closed) and has no -wal beside it */
    int wal_cut;           /* its -wal ends in a partial frame (cut short): commits after its last whole frame are not read */
    long writer_pid;       /* gt_trace_writer_pid's answer: 0 not asked yet, -1 none */

    int64_t *site_ids;     /* dense site index -> stacks.id */
    size_t nsites;
    char ***site_frames;   /* lazily loaded frame strings per site */
    struct gt_frame **site_info;   /* the same frames, field by field */
    int *site_nframes;     /* -1: not loaded yet */
    sqlite3_stmt *frames_stmt;

    int64_t run_batch_size;      /* the batch size gputrace sweep ran this process at ("sweep" note); -1 */
    struct gt_recorder recorder; /* recorder.on 0: the whole run is in the trace */
    struct gt_kernel_sampling {  /* "kernels" notes: kernel records on at times only (cupti.c) */
        int on;
        int64_t full_until_ns;   /* every kernel until then (the first pause) */
        int64_t since_ns;        /* the schedule's start (CUPTI's); == full_until_ns: no full period */
        int64_t recorded_ns;     /* time with kernel records on, over the trace */
        int64_t (*spans)[2];     /* [start, end] of each span with records on, in order */
        size_t nspans;
        char how[512];           /* the shim's note */
    } kernels;

    char err[600];         /* message of the last error (without the path) */
};

/* Opens and validates path; loads process, devices, drops and the apis table.
 * Returns GT_EXIT_OK or an exit status with t->err set. */
int gt_trace_open(struct gt_trace *t, const char *path);
/* The name to give sqlite3_open_v2 for a file's path: SQLite reads a name
 * beginning with "file:" as a URI where its build turns URIs on (Debian's),
 * another file or none; such a (relative) path is given as ./PATH, in buf. */
const char *gt_sqlite_name(const char *path, char *buf, size_t n);
/* Loads all events in (t_ns, id) order. GT_EXIT_EMPTY if there are none. */
int gt_trace_load_events(struct gt_trace *t);
void gt_trace_close(struct gt_trace *t);

/* Frames of a site, innermost first, formatted "function (module)" (plus
 * " file:line" where known); a Python frame "function (file:line)". *frames stays owned by the trace. Returns an exit
 * status; a site without frames gives n = 0. */
void gt_trace_frames_free(struct gt_trace *t);   /* trace_frames.c */
int gt_trace_frames(struct gt_trace *t, int32_t site, char ***frames, int *n);
/* The same frames field by field (n as gt_trace_frames gives). */
int gt_trace_frame_info(struct gt_trace *t, int32_t site, const struct gt_frame **info, int *n);
/* stacks.id of a dense site index (-1 for none) */
int64_t gt_trace_stack_id(const struct gt_trace *t, int32_t site);

/* Ranges (all sources), marker iterations and kernels, in start-time order.
 * Arrays are malloc'ed; the caller frees them (and range messages). Missing
 * tables (older traces) give 0 rows. */
int gt_trace_ranges(struct gt_trace *t, struct gt_range **out, size_t *n);
int gt_trace_marker_iterations(struct gt_trace *t, struct gt_marker_iter **out, size_t *n);
int gt_trace_kernels(struct gt_trace *t, struct gt_kernel **out, size_t *n);   /* of the busiest device */
void gt_ranges_free(struct gt_range *r, size_t n);

/* For the row readers (trace_rows.c): prepares sql, a missing table giving
 * *st NULL and GT_EXIT_OK; and maps a SQLite error met while doing `what` to
 * an exit status with t->err set. */
int gt_trace_prepare_optional(struct gt_trace *t, const char *sql, sqlite3_stmt **st, const char *what);
int gt_trace_has_rows(struct gt_trace *t, const char *table);   /* 1 yes; 0 none, no such table, unreadable */
int gt_trace_sql_error(struct gt_trace *t, int rc, const char *what);
/* site_merge.c: sites whose stacks differ only in the Python interpreter's
 * own native frames made one (the first keeps its stack); after the sites
 * are interned. */
int gt_trace_merge_interpreter_sites(struct gt_trace *t);
/* For trace.c and trace_events.c: an exit status with t->err set to one
 * line (printf-style; a SQLite error's message raw, made fit for one line);
 * a one-integer query into *out. */
int gt_trace_fail(struct gt_trace *t, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int gt_trace_sql_fail_msg(struct gt_trace *t, int rc, const char *raw, const char *what);
int gt_trace_pragma_int(struct gt_trace *t, const char *sql, int64_t *out);
/* Column i as a malloc'ed string (NULL for SQL NULL) / as an integer or dflt. */
char *gt_col_text(sqlite3_stmt *st, int i);
int64_t gt_col_int_or(sqlite3_stmt *st, int i, int64_t dflt);

/* recorder.c: what a trace leaves out. Reads the flight recorder's row and
 * summaries (none: recorder.on 0) and the kernels' sampling (kernels.on);
 * the whole-run peak of a memory level on a device, -1 when not windowed. */
int gt_trace_recorder(struct gt_trace *t);
void gt_trace_recorder_free(struct gt_trace *t);
int64_t gt_recorder_run_peak(const struct gt_trace *t, int memory, int64_t device);

/* Total memory of a device ordinal from the devices table; -1 unknown. */
int64_t gt_trace_device_total(const struct gt_trace *t, int device);
/* When the trace ends: the process's end where it was closed, else (killed)
 * the last time anything in it was recorded: events, ranges, marks,
 * kernels, copies, samples. */
int64_t gt_trace_end_ns(struct gt_trace *t);

/* Shortcuts over t->api[e->api]. */
static inline const struct gt_api_attr *gt_attr(const struct gt_trace *t, const struct gt_event *e)
{
    return &t->api[e->api];
}

/* still_written.c: pid, if it runs on this host, is traced and holds the
 * file open for writing (still writing it), or -1; reads /proc, so only
 * where a trace looks unfinished. gt_trace_writer_pid: the same for a trace
 * not closed and the process it names, asked once (0: closed, or not so). */
long gt_file_writer_pid(const char *path, long pid);   /* pid <= 0: any traced process (the pid not known) */
long gt_trace_writer_pid(struct gt_trace *t);

#endif
