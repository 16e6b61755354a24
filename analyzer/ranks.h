/* ranks.h - the traces of one job read together (ranks.c): what each rank's
 * trace says, which files belong to which rank, and the job's view; used by
 * `gputrace ranks` and by `gputrace report`'s cross-rank chart. */
#ifndef GT_RANKS_H
#define GT_RANKS_H
#include <stddef.h>
#include <stdint.h>

#include "analyzer.h"

struct gt_rank_file {
    const char *path;
    int order;                  /* position on the command line */
    int code;                   /* exit status of reading it; 0: read */
    char err[600];
    int64_t rank, local_rank, world_size, pid, ppid, start_unix_ns;   /* -1 unknown */
    char *host, *end_reason;    /* end_reason NULL: not closed */
    char memory[64];            /* the level reported (as the reports choose it) */
    char growth_memory[64];     /* the level growth followed: memory, or another that grew where it did not */
    int device;                 /* the device of the peak; -1 unknown */
    int64_t peak, peak_t, final;   /* peak_t -1: nothing was ever live */
    int windowed;               /* a flight recorder's trace: peak and peak_t are the whole run's (its interval
                                   summaries'), the rest the window's */
    const char *verdict;        /* growing | stable | unknown */
    int has_slope;
    double slope;
    size_t niter;
    int64_t *iter_index, *iter_peak;
    char iter_how[512];
    int64_t ooms;
    int oom_ended;
    long parent;                /* index of its rank's main file; -1: a main file */
    int concurrent;             /* an "earlier run" that ran while the main file's process did: the same rank given
                                   to two processes at once (a launcher's misconfiguration) */
    int64_t end_unix_ns;        /* when its record ends (the process's end, or its last event); 0 unknown */
    int earlier_run;            /* with parent: not its child but a file of an earlier run of that rank (a job run
                                 * again with the same names, a restart, the image before an exec) */
};

struct gt_ranks {
    struct gt_rank_file *files;
    size_t nfiles;
    struct gt_rank_file **mains;   /* one per rank, by rank (files without one last) */
    size_t nmains;
    struct gt_rank_file *max;      /* highest peak; NULL: no rank */
    double median;                 /* of the mains' peaks */
    const char *majority;          /* growth verdict of more than half the ranks with one; NULL: none */
    size_t hosts;
    int64_t world_size;            /* largest WORLD_SIZE recorded; -1 none */
    int64_t world_size_least;      /* smallest recorded: differs from world_size when the ranks disagree */
    int64_t job_start;             /* earliest start_unix_ns of the mains */
    int64_t *iter_index;           /* iteration indices of any rank, sorted */
    size_t niter;
    int by_position;               /* a rank's indices repeat (an epoch restarting them): every rank's
                                    * iterations are numbered by position, 0, 1, ..., and matched so */
};

/* Reads every file (one that cannot be read is kept with its code and err).
 * Returns the first failure's exit status, or 0. */
int gt_ranks_read(struct gt_ranks *R, char **paths, int n, const struct gt_opts *o);
void gt_ranks_free(struct gt_ranks *R);
/* The peak of r's iteration of this index; -1 if r has none. */
int64_t gt_ranks_iter_peak(const struct gt_rank_file *r, int64_t index);
/* The ranks of the world size no trace was given for, as ranges [from, to]:
 * calls range once per range; returns how many ranks are missing. */
int64_t gt_ranks_missing(const struct gt_ranks *R, void (*range)(void *, int64_t, int64_t), void *arg);
/* The --json object of gputrace ranks (ranks_out.c). */
void gt_ranks_json(const struct gt_ranks *R, struct gt_json *j);

#endif
