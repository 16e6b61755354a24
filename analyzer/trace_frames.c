/* trace_frames.c - the frames of a call site, read from the trace once and
 * kept: each frame's text (function, module, file:line; a Python frame as
 * FUNCTION (FILE:LINE)), its kind, and which Python frames are the program's
 * own (not the standard library, not site-packages). trace.c opens the trace
 * and loads the events; this file reads the stacks behind them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "trace.h"

int64_t gt_trace_stack_id(const struct gt_trace *t, int32_t site)
{
    return site >= 0 && (size_t)site < t->nsites ? t->site_ids[site] : -1;
}

static void free_frames(char **out, struct gt_frame *info, int n)
{
    for (int i = 0; i < n; i++) {
        free(out[i]);
        free(info[i].function);
        free(info[i].module);
        free(info[i].file);
    }
    free(out);
    free(info);
}

int gt_trace_frame_info(struct gt_trace *t, int32_t site, const struct gt_frame **info, int *n)
{
    char **f;
    int code = gt_trace_frames(t, site, &f, n);
    *info = code || *n == 0 ? NULL : t->site_info[site];
    return code;
}

int gt_trace_frames(struct gt_trace *t, int32_t site, char ***frames, int *n)
{
    *frames = NULL;
    *n = 0;
    if (site < 0 || (size_t)site >= t->nsites)
        return GT_EXIT_OK;
    if (t->site_nframes[site] >= 0) {
        *frames = t->site_frames[site];
        *n = t->site_nframes[site];
        return GT_EXIT_OK;
    }
    int rc;
    if (!t->frames_stmt) {
        /* frames.kind came with schema 2: every frame of an older trace is native */
        rc = sqlite3_prepare_v2(t->db, t->schema_version >= 2
            ? "SELECT f.function, f.module, f.file, f.line, f.module_offset, f.ip, f.kind = 'python'"
              " FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"
              " WHERE sf.stack_id = ?1 ORDER BY sf.level"
            : "SELECT f.function, f.module, f.file, f.line, f.module_offset, f.ip, 0"
              " FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"
              " WHERE sf.stack_id = ?1 ORDER BY sf.level", -1, &t->frames_stmt, NULL);
        if (rc != SQLITE_OK)
            return gt_trace_sql_error(t, rc, "reading stack frames");
    }
    sqlite3_stmt *st = t->frames_stmt;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, t->site_ids[site]);
    char **out = NULL;
    struct gt_frame *info = NULL;
    int cnt = 0, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *fn = (const char *)sqlite3_column_text(st, 0);
        const char *mod = gt_basename((const char *)sqlite3_column_text(st, 1));
        const char *file = (const char *)sqlite3_column_text(st, 2);
        int python = sqlite3_column_int(st, 6) != 0;
        char buf[1024], where[300] = "";
        if (file && sqlite3_column_type(st, 3) != SQLITE_NULL)
            snprintf(where, sizeof where, " %s:%lld", gt_basename(file), (long long)sqlite3_column_int64(st, 3));
        if (python && !file)   /* the "<backward>" marker */
            snprintf(buf, sizeof buf, "%s", fn && *fn ? fn : "?");
        else if (python)   /* "train_step (/home/me/train.py:42)": the file as Python has it */
            snprintf(buf, sizeof buf, "%s (%s:%lld)", fn && *fn ? fn : "?", file,
                     (long long)sqlite3_column_int64(st, 3));
        else if (fn && *fn)
            snprintf(buf, sizeof buf, "%s (%s)%s", fn, *mod ? mod : "?", where);
        else if (*mod)
            snprintf(buf, sizeof buf, "%s+0x%llx%s", mod, (unsigned long long)sqlite3_column_int64(st, 4), where);
        else
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)sqlite3_column_int64(st, 5));
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            out = gt_xrealloc(out, (size_t)cap * sizeof *out);
            info = gt_xrealloc(info, (size_t)cap * sizeof *info);
        }
        info[cnt] = (struct gt_frame){
            .function = fn && *fn ? gt_xstrdup(fn) : NULL,
            .module = gt_xstrdup(mod),
            .file = file && sqlite3_column_type(st, 3) != SQLITE_NULL
                    ? gt_xstrdup(python ? file : gt_basename(file)) : NULL,
            .line = sqlite3_column_int64(st, 3),
            .offset = (uint64_t)sqlite3_column_int64(st, 4),
            .ip = (uint64_t)sqlite3_column_int64(st, 5),
            .python = python,
        };
        out[cnt++] = gt_xstrdup(buf);
    }
    if (rc != SQLITE_DONE) {
        free_frames(out, info, cnt);
        return gt_trace_sql_error(t, rc, "reading stack frames");
    }
    t->site_info[site] = info;
    t->site_frames[site] = out;
    t->site_nframes[site] = cnt;
    *frames = out;
    *n = cnt;
    return GT_EXIT_OK;
}

int gt_python_file_is_user(const char *file)
{
    if (!file || file[0] == '<')    /* <frozen importlib._bootstrap>, ... */
        return file && strncmp(file, "<frozen", 7) != 0;
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
        return 0;
    /* the standard library: .../lib/python3.11/threading.py */
    static const char *const libdirs[] = {"/lib/python", "/lib64/python"};
    for (size_t d = 0; d < sizeof libdirs / sizeof libdirs[0]; d++)
        for (const char *p = file; (p = strstr(p, libdirs[d])) != NULL;) {
            p += strlen(libdirs[d]);
            if (*p >= '0' && *p <= '9')
                return 0;
        }
    return 1;
}

int gt_frame_is_backward_mark(const struct gt_frame *f)
{
    return f->python && !f->file && f->function && !strcmp(f->function, "<backward>");
}

/* Code a library generated for the program's class: dataclasses' __init__
 * (compiled as "<string>" in __create_fn__), attrs' methods ("<attrs
 * generated init ...>"). A default_factory that allocates ran there, and the
 * site started at "<string>:4 in __create_fn__.<locals>.__init__" before the
 * program's line that made the object (a helper's probe). */
static int generated_for_the_program(const struct gt_frame *f)
{
    return f->file && ((!strcmp(f->file, "<string>") && f->function && !strncmp(f->function, "__create_fn__.", 14)) ||
                       !strncmp(f->file, "<attrs generated", 16));
}

int gt_frame_user_python(const struct gt_frame *fi, int n)
{
    int first = -1;
    for (int k = 0; k < n; k++) {
        if (!fi[k].python || gt_frame_is_backward_mark(&fi[k]))
            continue;
        if (first < 0)
            first = k;
        if (gt_python_file_is_user(fi[k].file) && !generated_for_the_program(&fi[k]))
            return k;
    }
    return first;
}

/* Everything read here for t's sites, and the statement that read it
 * (gt_trace_close: before the connection closes). */
void gt_trace_frames_free(struct gt_trace *t)
{
    if (t->frames_stmt)
        sqlite3_finalize(t->frames_stmt);
    t->frames_stmt = NULL;
    for (size_t i = 0; i < t->nsites && t->site_frames; i++)
        if (t->site_nframes[i] >= 0)
            free_frames(t->site_frames[i], t->site_info[i], t->site_nframes[i]);
    free(t->site_frames);
    free(t->site_info);
    free(t->site_nframes);
    t->site_frames = NULL;
    t->site_info = NULL;
    t->site_nframes = NULL;
}
