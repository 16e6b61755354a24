/* viz_cli.c - the command line of `gputrace export` and `gputrace report`,
 * and the all-or-nothing output file they write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "viz.h"

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "gputrace: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see gputrace %s --help\n", cmd);
    return GT_EXIT_USAGE;
}

/* "1.5" (seconds), "1.5s", "200ms", "40us", "1000ns" -> ns. */
static int parse_time(const char *s, int64_t *ns)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    double mult = 1e9;
    if (!strcmp(end, "ns"))
        mult = 1;
    else if (!strcmp(end, "us"))
        mult = 1e3;
    else if (!strcmp(end, "ms"))
        mult = 1e6;
    else if (*end && strcmp(end, "s"))
        return -1;
    if (v * mult > 9e18)
        return -1;
    *ns = (int64_t)(v * mult + 0.5);
    return 0;
}

static int parse_count(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* --memory: a comma list of device, pool, managed, host, all. */
static int parse_memory(const char *s, unsigned *mask)
{
    static const char *const names[] = {"device", "pool", "managed", "host"};
    static const unsigned masks[] = {GT_MASK(GT_MEM_DEVICE), GT_MASK(GT_MEM_POOL), GT_MASK(GT_MEM_MANAGED), GT_MASK(GT_MEM_HOST)};
    char buf[128], *save = NULL;
    snprintf(buf, sizeof buf, "%s", s);
    *mask = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t k = 0;
        while (k < 4 && strcmp(tok, names[k]))
            k++;
        if (k == 4 && strcmp(tok, "all"))
            return -1;
        *mask |= k == 4 ? GT_MASK_ALL : masks[k];
    }
    return *mask ? 0 : -1;
}

int gt_viz_parse(const char *cmd, int is_export, int argc, char **argv, struct gt_viz_opts *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->base = (struct gt_opts){.frames = 4, .top = 10, .warmup = 1, .fail_above = -1, .device_bytes = -1, .device = GT_ANY_DEVICE};
    o->from = o->to = -1;
    o->files = gt_xmalloc((size_t)(argc + 1) * sizeof *o->files);
    int only_files = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (only_files || a[0] != '-' || !a[1]) {
            o->files[o->nfiles++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_files = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = 1;
            return GT_EXIT_OK;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
        if (eq)
            val = eq + 1;
        int is_flag = !strcmp(name, "--no-kernels") || !strcmp(name, "--no-allocs");
        if (is_flag && val)
            return usage_error(cmd, "option %s takes no value", name);
        if (!is_flag && !val) {
            if (i + 1 >= argc)
                return usage_error(cmd, "option %s needs a value", name);
            val = argv[++i];
        }
        int64_t b;
        int n;
        if (!strcmp(name, "-o") || !strcmp(name, "--output")) {
            o->out = val;
        } else if (is_export && !strcmp(name, "--format")) {
            if (strcmp(val, "chrome"))
                return usage_error(cmd, "--format takes chrome (Chrome trace-event JSON, which Perfetto reads), not \"%s\"", val);
        } else if (is_export && (!strcmp(name, "--from") || !strcmp(name, "--to"))) {
            if (parse_time(val, name[2] == 'f' ? &o->from : &o->to))
                return usage_error(cmd, "--from/--to need a time since the process started (e.g. 1.5s, 200ms), not \"%s\"", val);
        } else if (is_export && !strcmp(name, "--no-kernels")) {
            o->no_kernels = 1;
        } else if (is_export && !strcmp(name, "--no-allocs")) {
            o->no_allocs = 1;
        } else if (!strcmp(name, "--iterations") && strchr(val, ':') && is_export) {
            char lo[32];
            const char *colon = strchr(val, ':');
            snprintf(lo, sizeof lo, "%.*s", (int)(colon - val), val);
            if (parse_count(lo, &o->iter_a) || parse_count(colon + 1, &o->iter_b) || o->iter_b < o->iter_a)
                return usage_error(cmd, "--iterations A:B needs iteration indices A <= B, not \"%s\"", val);
            o->iter_range = 1;
        } else if (!strcmp(name, "--iterations")) {
            static const char *const modes[] = {"best", "none", "nvtx", "marker", "auto"};
            static const enum gt_iter_mode mode_of[] = {GT_ITERMODE_BEST, GT_ITERMODE_NONE, GT_ITERMODE_NVTX, GT_ITERMODE_MARKER, GT_ITERMODE_AUTO};
            size_t k = 0;
            while (k < 5 && strcmp(val, modes[k]))
                k++;
            if (k == 5)
                return usage_error(cmd, is_export ? "--iterations takes A:B or best, marker, nvtx, auto, none, not \"%s\""
                                                  : "--iterations takes best, marker, nvtx, auto or none, not \"%s\"", val);
            o->base.iter.mode = mode_of[k];
        } else if (!strcmp(name, "--iteration")) {
            if (!*val)
                return usage_error(cmd, "--iteration needs a range name%s", "");
            o->base.iter.name = val;
        } else if (!is_export && !strcmp(name, "--memory")) {
            if (parse_memory(val, &o->base.mem_mask))
                return usage_error(cmd, "--memory takes device, pool, managed, host or all, not \"%s\"", val);
            o->base.memory_set = 1;
        } else if (!is_export && !strcmp(name, "--device")) {
            if (parse_count(val, &b) || b > 1000000)
                return usage_error(cmd, "--device needs a device ordinal, not \"%s\"", val);
            o->base.device = (int)b;
        } else if (!is_export && !strcmp(name, "--device-bytes")) {
            if (gt_parse_bytes(val, &b) || b <= 0)
                return usage_error(cmd, "--device-bytes needs a size in bytes (e.g. 80G), not \"%s\"", val);
            o->base.device_bytes = b;
        } else if (!is_export && (!strcmp(name, "--top") || !strcmp(name, "--frames"))) {
            if (parse_count(val, &b) || b < 1 || b > 1000000)
                return usage_error(cmd, "--top/--frames need a positive number, not \"%s\"", val);
            n = (int)b;
            *(name[2] == 't' ? &o->base.top : &o->base.frames) = n;
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown option %%s for gputrace %s", cmd);
            return usage_error(cmd, msg, name);
        }
    }
    if (o->from >= 0 && o->to >= 0 && o->to < o->from)
        return usage_error(cmd, "--to must not be before --from%s", "");
    if (o->nfiles == 0)
        return usage_error(cmd, "%s needs at least one trace file (TRACE.db)", cmd);
    return GT_EXIT_OK;
}

int gt_outfile_open(struct gt_outfile *of, const char *path)
{
    memset(of, 0, sizeof *of);
    of->path = path;
    if (!path || !strcmp(path, "-")) {
        of->f = stdout;
        return GT_EXIT_OK;
    }
    /* same directory: rename() is atomic only within one file system */
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    of->tmp = gt_xmalloc(strlen(path) + 16);
    sprintf(of->tmp, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
    int fd = mkstemp(of->tmp);
    if (fd < 0 || !(of->f = fdopen(fd, "w"))) {
        fprintf(stderr, "gputrace: %s: cannot create the output file (%s); check the directory exists and is writable\n", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(of->tmp);
        }
        free(of->tmp);
        of->tmp = NULL;
        return GT_EXIT_OUTPUT;
    }
    mode_t mask = umask(0);   /* mkstemp makes 0600; give the file the usual mode */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    return GT_EXIT_OK;
}

void gt_outfile_abort(struct gt_outfile *of)
{
    if (of->tmp) {
        fclose(of->f);
        unlink(of->tmp);
        free(of->tmp);
        of->tmp = NULL;
    }
}

int gt_outfile_commit(struct gt_outfile *of)
{
    int err = 0;
    if (fflush(of->f) || ferror(of->f))
        err = errno ? errno : EIO;
    if (!of->tmp) {
        if (err)
            fprintf(stderr, "gputrace: cannot write the output (%s)\n", strerror(err));
        return err ? GT_EXIT_OUTPUT : GT_EXIT_OK;
    }
    if (!err && fsync(fileno(of->f)))
        err = errno;
    if (fclose(of->f) && !err)
        err = errno ? errno : EIO;
    if (!err && rename(of->tmp, of->path))
        err = errno;
    if (err) {
        fprintf(stderr, "gputrace: %s: cannot write the output file (%s); nothing was written\n", of->path, strerror(err));
        unlink(of->tmp);
    }
    free(of->tmp);
    of->tmp = NULL;
    return err ? GT_EXIT_OUTPUT : GT_EXIT_OK;
}

void gt_viz_fail(const char *path, const struct gt_trace *t, int code)
{
    (void)code;
    fprintf(stderr, "gputrace: %s: %s\n", path, t->err[0] ? t->err : "failed");
}
