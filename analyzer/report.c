/* report.c - `gputrace report`: one self-contained HTML page per run of
 * traces. The page holds the data as JSON (the documented --json output of
 * summary, peak, growth, leaks and oom, plus the memory timeline) and a
 * small script of our own (report.js, embedded at build time) that draws it
 * as inline SVG. A Content-Security-Policy forbids every network fetch. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "format.h"
#include "report.h"
#include "report_assets.h"
#include "viz.h"

/* gputrace report --help (the command table is in commands.c) */
const char gt_help_report[] =
    "usage: gputrace report [-o FILE] [OPTIONS] TRACE.db...\n"
    "\n"
    "Writes one self-contained HTML page (no network: script, style and data\n"
    "inline) with, per trace file: memory over time (device, pool and NVML used\n"
    "bytes) with iteration bands and each peak marked, zoomable; the peak of each\n"
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
    "Exit status as for the reports; 10: the output could not be written.\n";

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

int gt_cmd_report(const struct gt_command *cmd, struct gt_args *o)
{
    (void)cmd;
    int code = GT_EXIT_OK;
    /* The data of all traces is gathered first (it is small: series are
     * bucketed), so that a failing trace leaves no output at all. */
    char *data = NULL;
    size_t len = 0;
    FILE *mem = gt_xmemstream(&data, &len);
    fprintf(mem, "{\"generator\": \"gputrace %s\", \"traces\": [", GPUTRACE_VERSION);
    for (int i = 0; i < o->nfiles && !code; i++) {
        struct gt_ctx c;
        code = gt_ctx_open(&c, o->files[i], &o->base);
        if (!code) {
            fputs(i ? ",\n" : "\n", mem);
            double t0 = gt_now();
            code = trace_data(&c, mem);
            gt_phase("report", t0);
        }
        if (code)
            gt_viz_fail(o->files[i], &c.t, code);
        gt_ctx_close(&c);
    }
    fputs("\n]}", mem);
    fclose(mem);
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
        fputs(gt_report_js, f);
        fputs("</script>\n</body>\n</html>\n", f);
        code = gt_outfile_commit(&of);
    }
    gt_outfile_say_chosen(&of, code);
    free(data);
    return code;
}
