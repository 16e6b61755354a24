/* run_reports.c - how the six reports (summary, leaks, growth, peak, oom,
 * top) run over the trace files given: one text section or one JSON object
 * per file (an array of them for several files), a failing file reported
 * in its place, and the exit status of the whole run. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "format.h"

/* Runs the report over one file. JSON goes to a buffer first, so that a
 * failure half-way never leaves half an object on stdout. */
static int run_one(const struct gt_command *cmd, const char *path, const struct gt_opts *o, int nfiles, int index)
{
    struct gt_ctx c;
    int code = gt_ctx_open(&c, path, o);
    char *buf = NULL;
    size_t len = 0;
    if (!code) {
        if (o->json) {
            FILE *mem = gt_xmemstream(&buf, &len);
            struct gt_json j;
            gt_json_init(&j, mem);
            j.depth = nfiles > 1 ? 1 : 0;   /* elements of the top-level array */
            j.count[1] = 0;
            double t0 = gt_now();
            code = cmd->report(&c, &j);
            gt_phase("report", t0);
            fclose(mem);
        } else {
            if (nfiles > 1) {
                printf("%s== %s", index ? "\n" : "", gt_shown(path));
                if (c.t.proc.rank >= 0)
                    printf(" (rank %lld, pid %lld)", (long long)c.t.proc.rank, (long long)c.t.proc.pid);
                else if (c.t.proc.pid >= 0)
                    printf(" (pid %lld)", (long long)c.t.proc.pid);
                printf(" ==\n");
            }
            gt_recorder_text(&c.t);
            double t0 = gt_now();
            code = cmd->report(&c, NULL);
            if (!code || code == GT_EXIT_FAIL_ABOVE)   /* (growth --fail-above's failure shows its sites) */
                gt_ctx_print_symbolize_hint(&c);
            fflush(stdout);
            gt_phase("report", t0);
        }
    }
    if (code > GT_EXIT_FAIL_ABOVE)
        fprintf(stderr, "gputrace: %s: %s\n", gt_shown(path), c.t.err[0] ? c.t.err : "failed");
    if (o->json && nfiles > 1) {
        printf("%s\n  ", index ? "," : "");
        if (code > GT_EXIT_FAIL_ABOVE) {
            struct gt_json j;
            gt_json_init(&j, stdout);
            j.depth = 1;
            j.after_key = 1;   /* no separator: written above */
            gt_json_obj(&j);
            gt_json_kstr(&j, "file", path);
            gt_json_kstr(&j, "error", c.t.err);
            gt_json_kint(&j, "exit_code", code);
            gt_json_obj_end(&j);
        } else if (buf) {
            /* the buffer starts at a fresh element: drop its leading layout */
            const char *s = buf;
            while (*s == '\n' || *s == ' ' || *s == ',')
                s++;
            fputs(s, stdout);
        }
    } else if (o->json && code <= GT_EXIT_FAIL_ABOVE && buf) {
        fputs(buf, stdout);
        fputc('\n', stdout);
    }
    free(buf);
    gt_ctx_close(&c);
    return code;
}

int gt_run_reports(const struct gt_command *cmd, struct gt_args *a)
{
    const struct gt_opts *o = &a->base;
    int status = GT_EXIT_OK, fail_above = 0;
    if (o->json && a->nfiles > 1)
        printf("[");
    for (int i = 0; i < a->nfiles; i++) {
        int c = run_one(cmd, a->files[i], o, a->nfiles, i);
        if (c == GT_EXIT_FAIL_ABOVE)
            fail_above = 1;
        else if (c && !status)
            status = c;
    }
    if (o->json && a->nfiles > 1)
        printf("\n]\n");
    return status ? status : fail_above ? GT_EXIT_FAIL_ABOVE : GT_EXIT_OK;
}
