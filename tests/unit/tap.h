/* tap.h - the unit tests' whole framework: TAP output for `meson test`
 * (protocol 'tap'), which tests/run_tests.py counts case by case.
 *
 * A test program is a list of cases, each a void function run by TAP_RUN:
 * it prints "ok N - name" or "not ok N - name". CHECK and CHECKF inside a
 * case record a failure with a "# file:line" diagnostic and carry on, so one
 * run shows every broken property. tap_done() prints the plan ("1..N") and
 * returns the exit status for main: 0 only when every case passed. A program
 * that crashes prints no plan, and the runner counts that as a failure. */
#ifndef GT_TAP_H
#define GT_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_cases, tap_failed_cases, tap_case_failures;

/* Records one failed check of the running case; diagnostics are capped so
 * that an exhaustive loop gone wrong stays readable. */
__attribute__((format(printf, 3, 4), unused))
static void tap_fail_at(const char *file, int line, const char *fmt, ...)
{
    if (++tap_case_failures > 20) {
        if (tap_case_failures == 21)
            printf("# (more failures in this case not shown)\n");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    printf("# %s:%d: ", file, line);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

#define CHECK(cond) \
    do { if (!(cond)) tap_fail_at(__FILE__, __LINE__, "CHECK failed: %s", #cond); } while (0)
/* CHECKF(cond, printf-format, ...): the message says what was seen */
#define CHECKF(cond, ...) \
    do { if (!(cond)) tap_fail_at(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_EQ_INT(a, b)                                                                          \
    do {                                                                                            \
        long long a_ = (long long)(a), b_ = (long long)(b);                                         \
        if (a_ != b_)                                                                               \
            tap_fail_at(__FILE__, __LINE__, "%s == %s failed: %lld != %lld", #a, #b, a_, b_);      \
    } while (0)

/* Runs one case; name is the function's name without its "test_" prefix. */
__attribute__((unused))
static void tap_run(const char *name, void (*fn)(void))
{
    if (!strncmp(name, "test_", 5))
        name += 5;
    tap_case_failures = 0;
    fflush(stdout);
    fn();
    tap_cases++;
    if (tap_case_failures)
        tap_failed_cases++;
    printf("%s %d - %s\n", tap_case_failures ? "not ok" : "ok", tap_cases, name);
    fflush(stdout);
}
#define TAP_RUN(fn) tap_run(#fn, fn)

__attribute__((unused))
static int tap_done(void)
{
    printf("1..%d\n", tap_cases);
    return tap_failed_cases ? 1 : 0;
}

#endif
