/* The configuration table: every GPUTRACE_* variable (name, type, default,
 * range, help) and the one function that reads them, once, at load. The
 * README's Configuration table lists the same variables with the same
 * defaults (tests/test_config.py checks). Depends on libc only. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

/* lifecycle.c's (shim.h): weak, for config_table, which links this file alone */
bool gt_stderr_ok(void) __attribute__((weak));
void gt_eprint(const char *fmt, ...) __attribute__((weak));   /* errline.c's: SIGPIPE held off */

/* The storage; every other file sees it as const through gt_config. */
static struct gt_config cfg;
extern const struct gt_config gt_config __attribute__((alias("cfg")));

#define FIELD(f) offsetof(struct gt_config, f), sizeof(((struct gt_config *)0)->f)

const struct gt_config_var gt_config_vars[] = {
    {"GPUTRACE_OUTPUT", GT_CFG_STRING, FIELD(output_pattern), GT_OUTPUT_DEFAULT, 0, 0,
     "output path (a directory: the trace inside it): %p pid, %h host, %r rank, %% a percent sign"},
    {"GPUTRACE_STACK_DEPTH", GT_CFG_INT, FIELD(stack_depth), "32", 0, 128, "frames per call stack, 0 = no stacks"},
    {"GPUTRACE_STACK_DEPTH_PYTHON", GT_CFG_INT, FIELD(stack_depth_python), "16", 0, 128,
     "native frames per call stack on a thread whose Python frames are recorded (the Python frames follow; "
     "at most GPUTRACE_STACK_DEPTH)"},
    {"GPUTRACE_PYTHON", GT_CFG_BOOL, FIELD(python), "1", 0, 1,
     "0: no Python frames in call stacks (they need GPUTRACE_STACK_DEPTH > 0)"},
    {"GPUTRACE_FREE_STACKS", GT_CFG_BOOL, FIELD(free_stacks), "0", 0, 1,
     "1: a call stack on every free too (by default only a failed free has one: nothing reads a free's stack)"},
    {"GPUTRACE_UNWIND_CHECK", GT_CFG_BOOL, FIELD(unwind_check), "0", 0, 1,
     "1: every call stack taken from the per-thread stack memo is unwound by libunwind too, and a note says how "
     "many differed (slow: for testing the memo on a new platform)"},
    {"GPUTRACE_QUIET", GT_CFG_FLAG, FIELD(quiet), "off", 0, 0, "1: no summary line on stderr"},
    {"GPUTRACE_DISABLE", GT_CFG_FLAG, FIELD(disabled), "off", 0, 0, "1: pass every call through, record nothing"},
    {"GPUTRACE_QUEUE_EVENTS", GT_CFG_POW2, FIELD(queue_events), "65536", 1024, 1 << 24,
     "events buffered between the program's threads and the writer"},
    {"GPUTRACE_QUEUE_WAIT_MS", GT_CFG_INT, FIELD(queue_wait_ms), "1000", 0, 600000,
     "how long a full queue waits for a writer making no progress before an event is dropped"},
    {"GPUTRACE_CUPTI", GT_CFG_BOOL, FIELD(cupti), "1", 0, 1, "0: no CUPTI activity (kernels, copies, memsets)"},
    {"GPUTRACE_CUPTI_PATH", GT_CFG_STRING, FIELD(cupti_path), "", 0, 0, "this libcupti.so and no other"},
    {"GPUTRACE_CUPTI_KINDS", GT_CFG_STRING, FIELD(cupti_kinds), "kernel,memcpy,memset", 0, 0,
     "CUPTI activity kinds recorded: kernel, memcpy, memset, and off by default pool (memory-pool records) and memory "
     "(the driver's allocation records, which duplicate the hooks' events at a cost on every stream-ordered allocation)"},
    {"GPUTRACE_KERNELS_FULL_S", GT_CFG_INT, FIELD(kernels_full_s), "5", 0, 31536000,
     "every kernel, copy and memset for the first this many seconds of GPU work (seconds in which kernels or "
     "copies ran; a pause counts 1 s), and on until 3 s of busy GPU work passed with no kernel of a new name (a "
     "compiler's autotuning before the first step), 6 times this at most; then they are sampled "
     "(GPUTRACE_KERNELS_EVERY_S)"},
    {"GPUTRACE_KERNELS_EVERY_S", GT_CFG_INT, FIELD(kernels_every_s), "20", 0, 86400,
     "after GPUTRACE_KERNELS_FULL_S, kernels, copies and memsets during 1 s at a random moment of every this many "
     "seconds, CUPTI detached in between; 0 or 1: every one, all the run"},
    {"GPUTRACE_NVTX", GT_CFG_BOOL, FIELD(nvtx), "1", 0, 1, "0: NVTX ranges are not recorded"},
    {"GPUTRACE_BATCH_SIZE", GT_CFG_INT, FIELD(batch_size), "0", 0, 2147483647,
     "the batch size the process runs at (gputrace sweep sets it): the trace notes it, reports over a sweep draw it"},
    {"GPUTRACE_SAMPLE_MS", GT_CFG_INT, FIELD(sample_ms), "0", 0, 3600000,
     "sample each device's used memory through NVML every this many ms (0: off)"},
    {"GPUTRACE_WINDOW_S", GT_CFG_INT, FIELD(window_s), "0", 0, 604800,
     "flight recorder: keep the last this many seconds in full and a summary per interval of the whole run (0: off)"},
    {"GPUTRACE_CLOCK", GT_CFG_STRING, FIELD(clock_mode), "", 0, 0,
     "how allocations and frees are stamped: unset, the time-stamp counter where the kernel's clocksource is tsc "
     "(mapped to CLOCK_MONOTONIC by the writer), else clock_gettime; tsc: the counter on any invariant one; "
     "monotonic: clock_gettime"},
    {"GPUTRACE_DEBUG_HOOKS", GT_CFG_FLAG, FIELD(debug_hooks), "off", 0, 0,
     "1: one stderr line per driver entry-point lookup"},
    {"GPUTRACE_RUN_LOG", GT_CFG_STRING, FIELD(run_log), "", 0, 0,
     "set by gputrace run: where each traced process lists its trace, for run's closing line"},
};
const size_t gt_config_nvars = sizeof gt_config_vars / sizeof gt_config_vars[0];

static void store_int(const struct gt_config_var *v, long x)
{
    char *f = (char *)&cfg + v->offset;
    if (v->size == sizeof(bool)) {
        *(bool *)f = x != 0;
    } else if (v->size == sizeof(int32_t)) {
        int32_t i = (int32_t)x;
        memcpy(f, &i, sizeof i);
    }
}

/* Warnings about bad values, said by a process that traces, when its trace
 * starts (gt_config_warn): a child that never calls CUDA (sh, ls) inherits
 * the environment too and must say nothing. */
static char warnings[1024];

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    size_t n = strlen(warnings);
    va_list ap;
    va_start(ap, fmt);
    if (n + 1 < sizeof warnings && vsnprintf(warnings + n, sizeof warnings - n, fmt, ap) >= (int)(sizeof warnings - n))
        memcpy(warnings + sizeof warnings - 5, "...\n", 5);   /* cut: the line still ends */
    va_end(ap);
}

void gt_config_warn(void)
{
    if (*warnings && gt_eprint)
        gt_eprint("%s", warnings);
    else if (*warnings && (!gt_stderr_ok || gt_stderr_ok()))
        fputs(warnings, stderr);
    warnings[0] = 0;
}

/* Another copy of the shim traces this process: this one passes every call
 * through and says nothing (the other copy says the warnings). */
void gt_config_passive(void)
{
    cfg.disabled = true;
    warnings[0] = 0;
}

/* A disabled shim starts no trace, and so said nothing: a mistyped
 * GPUTRACE_DISABLE (read as on) turned tracing off in silence. Its first
 * CUDA call says the warnings, once. */
void gt_config_warn_once(void)
{
    static _Atomic int said;
    if (!atomic_load_explicit(&said, memory_order_relaxed) && !atomic_exchange(&said, 1))
        gt_config_warn();
}

static const char *const off_words[] = {"0", "false", "no", "off"}, *const on_words[] = {"1", "true", "yes", "on"};
#define WORDS "1, true, yes, on or 0, false, no, off"

/* 1 or 0 for the words above (any case), -1 for anything else */
static int read_word(const char *s)
{
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, off_words[i]))
            return 0;
        if (!strcasecmp(s, on_words[i]))
            return 1;
    }
    return -1;
}

/* A flag: on for 1, true, yes, on; off for unset, empty, 0, false, no, off
 * (GPUTRACE_DISABLE=false turned tracing off: any value but "0" was on);
 * anything else is on, as before, with a warning line. */
static bool read_flag(const struct gt_config_var *v, const char *s)
{
    if (!s || !*s)
        return false;
    int w = read_word(s);
    if (w >= 0)
        return w;
    warn("gputrace: %s=%.64s read as on (expected " WORDS ")\n", v->name, s);
    return true;
}

/* A setting that is on or off with a default of its own (GPUTRACE_CUPTI):
 * the same words as a flag (GPUTRACE_CUPTI=false was ignored, and CUPTI
 * stayed on: a helper's probe); unset, empty or another value keeps the
 * default, another value with one warning line. */
static long read_bool(const struct gt_config_var *v, const char *s)
{
    long def = strtol(v->def, NULL, 10);
    if (!s || !*s)
        return def;
    int w = read_word(s);
    if (w >= 0)
        return w;
    warn("gputrace: ignoring %s=%.64s (expected " WORDS "): %s, the default, is used\n", v->name, s,
         def ? "on" : "off");
    return def;
}

/* value of an integer variable, or its default with one warning line */
static long read_int(const struct gt_config_var *v, const char *s)
{
    long def = strtol(v->def, NULL, 10);
    if (!s || !*s)
        return def;
    char *end;
    long x = strtol(s, &end, 10);
    if (*end || x < v->lo || x > v->hi) {
        warn("gputrace: ignoring %s=%.64s (expected an integer from %ld to %ld): %ld, the default, is used\n",
             v->name, s, v->lo, v->hi, def);
        return def;
    }
    return x;
}

/* Names of the project's other tools, not settings of the shim: the
 * analyzer's phase timings, the test runner's build and stages. */
static const char *const not_settings[] = {"GPUTRACE_TIMING", "GPUTRACE_BUILD", "GPUTRACE_TEST_STAGES",
                                           "GPUTRACE_TEST_SANITIZER"};

/* Levenshtein distance of a[0..na) and b (both short: names), no allocation */
static size_t edit_distance(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b), row[64];
    if (na > 63 || nb > 63)
        return 64;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

static bool named(const char *name, size_t n, const char *known)
{
    return strlen(known) == n && !strncmp(name, known, n);
}

/* A GPUTRACE_ name that is no setting (GPUTRACE_STACKDEPTH=8, GPUTRACE_OUTPUT_DIR)
 * was ignored in silence: one warning line each, with the nearest setting. */
static void warn_unknown_names(void)
{
    extern char **environ;
    int said = 0, more = 0;
    for (char **e = environ; e && *e; e++) {
        const char *name = *e, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        if (strncmp(name, "GPUTRACE_", 9) != 0)
            continue;
        bool plain = n <= 64;   /* a name of letters, digits and _ is shown; another is counted only (no escapes to the terminal) */
        for (size_t i = 0; i < n && plain; i++)
            plain = (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') ||
                    (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
        bool known = false;
        for (size_t i = 0; i < gt_config_nvars && !known; i++)
            known = named(name, n, gt_config_vars[i].name);
        for (size_t i = 0; i < sizeof not_settings / sizeof not_settings[0] && !known; i++)
            known = named(name, n, not_settings[i]);
        if (known)
            continue;
        if (!plain || said == 3) {   /* three named at most: the buffer keeps room for the values' warnings */
            more++;
            continue;
        }
        said++;
        const char *nearest = NULL;
        size_t best = 4;   /* a typo or two, a missing or extra _S: past 3 edits it is a guess */
        for (size_t i = 0; i < gt_config_nvars; i++) {
            size_t d = edit_distance(name, n, gt_config_vars[i].name);
            if (d < best) {
                best = d;
                nearest = gt_config_vars[i].name;
            }
        }
        for (size_t i = 0; i < gt_config_nvars && !nearest; i++) {   /* GPUTRACE_OUTPUT_DIR, GPUTRACE_CUPTI_OFF */
            size_t k = strlen(gt_config_vars[i].name);
            if (k < n && name[k] == '_' && !strncmp(name, gt_config_vars[i].name, k))
                nearest = gt_config_vars[i].name;
        }
        if (nearest)
            warn("gputrace: ignoring %.*s: not a gputrace setting (did you mean %s?)\n", (int)n, name, nearest);
        else
            warn("gputrace: ignoring %.*s: not a gputrace setting (the README's Configuration table lists them)\n",
                 (int)n, name);   /* (plain: at most 64 bytes) */
    }
    if (more)
        warn("gputrace: ignoring %d more GPUTRACE_ name%s that %s no setting\n", more, more == 1 ? "" : "s",
             more == 1 ? "is" : "are");
}

void gt_config_load(void)
{
    for (size_t i = 0; i < gt_config_nvars; i++) {
        const struct gt_config_var *v = &gt_config_vars[i];
        const char *s = getenv(v->name);
        switch (v->type) {
        case GT_CFG_STRING:
            snprintf((char *)&cfg + v->offset, v->size, "%s", s && *s ? s : v->def);
            break;
        case GT_CFG_FLAG:
            store_int(v, read_flag(v, s));
            break;
        case GT_CFG_BOOL:
            store_int(v, read_bool(v, s));
            break;
        case GT_CFG_INT:
            store_int(v, read_int(v, s));
            break;
        case GT_CFG_POW2: {
            long x = read_int(v, s), p = v->lo;
            while (p < x)
                p <<= 1;
            store_int(v, p);
            break;
        }
        }
    }
    if (cfg.clock_mode[0] && strcmp(cfg.clock_mode, "tsc") != 0 && strcmp(cfg.clock_mode, "monotonic") != 0) {
        warn("gputrace: ignoring GPUTRACE_CLOCK=%.16s (expected tsc or monotonic)\n", cfg.clock_mode);
        cfg.clock_mode[0] = 0;
    }
    warn_unknown_names();   /* last: the values' warnings (GPUTRACE_DISABLE=maybe) come first in the buffer */
}
