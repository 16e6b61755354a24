/* report.c - `gputrace report`: one self-contained HTML page per run of
 * traces. The page holds the data as JSON (the documented --json output of
 * summary, peak, growth, leaks and oom, plus the memory timeline) and a
 * small script of our own (report.js, embedded at build time) that draws it
 * as inline SVG. A Content-Security-Policy forbids every network fetch. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "format.h"
#include "ranks.h"
#include "report.h"
#include "report_assets.h"
#include "sweep.h"
#include "viz.h"

/* gputrace report --help (the command table is in commands.c) */
const char gt_help_report[] =
    "usage: gputrace report [-o FILE] [OPTIONS] TRACE.db...\n"
    "\n"
    "Writes one self-contained HTML page (no network: script, style and data\n"
    "inline) with, per trace file: an overview card (program, devices, duration,\n"
    "events, what the trace leaves out (sampled kernels, a flight recorder's\n"
    "window), peaks, the verdicts, each linking to its section); memory over time\n"
    "(device, pool and NVML used bytes) with iteration bands, each peak and each\n"
    "out-of-memory failure marked, opening on the span with allocations,\n"
    "zoomable; the memory ledger (who held the memory at the peak and at exit,\n"
    "beside NVML's figure, other processes and free); the peak of each\n"
    "iteration coloured by batch size; peak vs batch size with the fitted line\n"
    "and the device limit; the growth verdict and the call sites that grow; the\n"
    "leak table; the out-of-memory events. Long series are drawn from per-bucket\n"
    "minimum and maximum, so every peak stays exact.\n"
    "\n"
    "  -o FILE   write FILE (default: stdout, -o - too); FILE appears only when\n"
    "            complete. When stdout is a terminal, the default is\n"
    "            TRACE-report.html beside the first TRACE.db, replaced only if\n"
    "            gputrace report wrote it (anything else is refused)\n"
    "  --memory, --device, --device-bytes, --iteration, --iterations, --top,\n"
    "  --frames  as for the reports (gputrace --help)\n"
    "Several traces of one job (one per rank) get a first panel comparing the\n"
    "ranks, as gputrace ranks: the peak of each iteration, one line per rank.\n"
    "A trace that cannot be read gets a panel saying why; the others are\n"
    "reported. Exit status as for the reports (the first failure's); 10: the\n"
    "output could not be written.\n";

/* In the page's head: also how a page that report wrote is recognised. */
#define REPORT_TITLE "<title>gputrace report</title>"

/* Runs one of the JSON reports into a string; on failure writes
 * {"error": message} instead (growth without iterations is not fatal). */
static char *report_json(struct gt_ctx *c, int (*report)(struct gt_ctx *, struct gt_json *), int *code)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = gt_xmemstream(&buf, &len);
    struct gt_json j;
    gt_json_init(&j, mem);
    c->t.err[0] = 0;
    *code = report(c, &j);
    fclose(mem);
    if (*code > GT_EXIT_FAIL_ABOVE) {
        free(buf);
        buf = NULL;
        len = 0;
        mem = gt_xmemstream(&buf, &len);
        gt_json_init(&j, mem);
        gt_json_obj(&j);
        gt_json_kstr(&j, "error", c->t.err[0] ? c->t.err : "failed");
        gt_json_obj_end(&j);
        fclose(mem);
    } else {
        *code = GT_EXIT_OK;
    }
    return buf;
}

/* One trace's object of the page's data. Returns an exit status. */
static int trace_data(struct gt_ctx *c, FILE *f)
{
    struct gt_json j;
    gt_json_init(&j, f);
    gt_json_obj(&j);
    gt_json_kstr(&j, "file", gt_basename(c->path));
    gt_json_kstr(&j, "memory", c->sel_name);
    int64_t end = 0;
    int code = gt_report_timeline(c, &j, &end);
    if (code)
        return code;
    gt_json_kint(&j, "end_ns", end);
    static const struct {
        const char *key;
        int (*report)(struct gt_ctx *, struct gt_json *);
    } parts[] = {{"summary", gt_report_summary}, {"peak", gt_report_peak}, {"growth", gt_report_growth},
                 {"leaks", gt_report_leaks}, {"oom", gt_report_oom}};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        char *js = report_json(c, parts[k].report, &code);
        /* the writer's object is open: add the report's JSON text as a value */
        fprintf(f, ",\n\"%s\": %s", parts[k].key, js);
        free(js);
        if (code == GT_EXIT_CORRUPT || code == GT_EXIT_MISSING)
            return code;   /* the file itself failed, not the report's question */
        code = GT_EXIT_OK;
    }
    gt_json_obj_end(&j);
    return GT_EXIT_OK;
}

/* JSON inside <script>: escape what could end the element or open a comment.
 * These characters only occur inside JSON strings, where \uXXXX is valid. */
static void put_script_json(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<')
            fputs("\\u003c", f);
        else if (s[i] == '>')
            fputs("\\u003e", f);
        else if (s[i] == '&')
            fputs("\\u0026", f);
        else
            fputc(s[i], f);
    }
}

/* A trace that could not be read: its place in the page says why. */
static void trace_error(FILE *f, const char *path, const char *err, int code)
{
    struct gt_json j;
    gt_json_init(&j, f);
    gt_json_obj(&j);
    gt_json_kstr(&j, "file", gt_basename(path));
    gt_json_kstr(&j, "error", err[0] ? err : "failed");
    gt_json_kint(&j, "exit_code", code);
    gt_json_obj_end(&j);
}

int gt_cmd_report(const struct gt_command *cmd, struct gt_args *o)
{
    (void)cmd;
    /* The data of all traces is gathered first (it is small: series are
     * bucketed). A trace that fails gets an error panel in its place, as the
     * other reports print what they can and say what they could not; the
     * exit status is the first failure's, and with no trace read at all
     * there is no page. */
    int code = GT_EXIT_OK, good = 0;
    char *data = NULL;
    size_t len = 0;
    FILE *mem = gt_xmemstream(&data, &len);
    /* pool_draw: the share of bytes in use a fresh run's pool reservation
     * may vary by (sweep.h), for the sweep panel */
    fprintf(mem, "{\"generator\": \"gputrace %s\", \"pool_draw\": %.4f, \"traces\": [", GPUTRACE_VERSION,
            GT_SWEEP_POOL_DRAW);
    for (int i = 0; i < o->nfiles; i++) {
        struct gt_ctx c;
        char *one = NULL;
        size_t one_len = 0;
        FILE *part = gt_xmemstream(&one, &one_len);   /* a trace failing half-way leaves no half object */
        int fc = gt_ctx_open(&c, o->files[i], &o->base);
        if (!fc) {
            double t0 = gt_now();
            c.page = 1;
            fc = trace_data(&c, part);
            gt_phase("report", t0);
        }
        fclose(part);
        fputs(i ? ",\n" : "\n", mem);
        if (fc) {
            gt_viz_fail(o->files[i], &c.t, fc);
            trace_error(mem, o->files[i], c.t.err, fc);
            if (!code)
                code = fc;
        } else {
            fwrite(one, 1, one_len, mem);
            good++;
        }
        free(one);
        gt_ctx_close(&c);
    }
    fputs("\n]", mem);
    if (good > 1) {   /* several ranks of a job: the cross-rank chart's data (gputrace ranks --json) */
        struct gt_ranks R;
        gt_ranks_read(&R, o->files, o->nfiles, &o->base);
        fputs(",\n\"ranks\": ", mem);
        struct gt_json j;
        gt_json_init(&j, mem);
        gt_ranks_json(&R, &j);
        gt_ranks_free(&R);
    }
    fputs("}", mem);
    fclose(mem);
    if (!good) {
        free(data);
        return code;
    }
    int failed = code;
    code = GT_EXIT_OK;
    struct gt_outfile of = {0};
    const char *out = o->out;
    if (!code && !out)
        code = gt_outfile_default(&of, o->files[0], "-report.html", "<!DOCTYPE html>", REPORT_TITLE, &out);
    if (!code)
        code = gt_outfile_open(&of, out);
    if (!code) {
        FILE *f = of.f;
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
              "style-src 'unsafe-inline'; img-src data:\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
              REPORT_TITLE "\n<style>\n", f);
        fputs(gt_report_css, f);
        fputs("</style>\n</head>\n<body data-rendered=\"no\">\n<header><h1>gputrace report</h1></header>\n"
              "<pre id=\"errors\" hidden></pre>\n<main id=\"app\"></main>\n"
              "<noscript>This report draws its charts with JavaScript; the data is in the gt-data block of the page source.</noscript>\n"
              "<script type=\"application/json\" id=\"gt-data\">\n", f);
        put_script_json(f, data, len);
        fputs("\n</script>\n<script>\n", f);
        fputs(gt_report_ledger_js, f);   /* panels report.js calls */
        fputs(gt_report_timeline_js, f);
        fputs(gt_report_js, f);
        fputs("</script>\n</body>\n</html>\n", f);
        code = gt_outfile_commit(&of);
    }
    gt_outfile_say_chosen(&of, code);
    free(data);
    return failed ? failed : code;
}
