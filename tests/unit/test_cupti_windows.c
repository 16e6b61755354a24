/* Unit tests of the schedule of sampled CUPTI activity
 * (shim/cupti_windows.c), on simulated time: a writer that looks every
 * 10 ms, as the shim's does, and programs whose kernels begin when the
 * case says (a training loop, a compiler's autotuning before it, a pause
 * for imports), each record seen by the writer at once. */
#include <stdlib.h>

#include "cupti_windows.h"
#include "tap.h"

#define MS 1000000ull
#define S 1000000000ull
#define T0 (1000 * S) /* the process's clock when recording starts */

/* A program: each kernel's start (from T0) and length (0: 10 us), and
 * whether its name is new. */
struct kernel {
    uint64_t at;
    bool new_name;
    uint64_t len;
};

/* Records reach the writer at once, or (flush_ns) as CUPTI hands them over:
 * every flush_ns, a buffer's worth at a time, in the order of `order` (set:
 * each flush's records by stream, two streams of alternate kernels). */
static uint64_t flush_ns;
static bool by_stream;

static void tell(struct gt_windows *w, const struct kernel *k)
{
    gt_windows_work_at(w, T0 + k->at, T0 + k->at + (k->len ? k->len : 10000), k->new_name);
}

/* The writer: every 10 ms up to `until`, the kernels it has by then are
 * told, then the state changes when due. Returns the toggles' times
 * (open, close, ...) after T0, the first period's close first. */
static int run(struct gt_windows *w, const struct kernel *k, size_t nk, uint64_t until, uint64_t *toggles, int max)
{
    bool recording = true;
    int n = 0;
    size_t i = 0;
    for (uint64_t now = T0; now <= T0 + until && n < max; now += 10 * MS) {
        uint64_t seen = flush_ns ? (now - T0) / flush_ns * flush_ns : now - T0; /* records handed over by now */
        size_t from = i;
        for (; i < nk && k[i].at + (k[i].len ? k[i].len : 10000) <= seen; i++)
            ;
        for (int pass = 0; pass < (by_stream ? 2 : 1); pass++)
            for (size_t j = from; j < i; j++)
                if (recording && (!by_stream || (j & 1) == (size_t)pass))
                    tell(w, &k[j]);
        if (!gt_windows_due(w, recording, now))
            continue;
        toggles[n++] = now - T0;
        if (recording)
            gt_windows_closed(w, now);
        else
            gt_windows_opened(w, now);
        recording = !recording;
    }
    return n;
}

/* Kernels every `gap` from `from` for `len`; names new for the first `new_for`. */
static size_t loop(struct kernel *k, size_t n, uint64_t from, uint64_t len, uint64_t gap, uint64_t new_for)
{
    for (uint64_t t = from; t < from + len; t += gap)
        k[n++] = (struct kernel){t, t < from + new_for, 0};
    return n;
}

static void at_once(void)
{
    flush_ns = 0;
    by_stream = false;
}

static bool near(uint64_t got, uint64_t want)
{
    return got + 30 * MS >= want && got <= want + 30 * MS; /* the writer's round and a kernel's gap */
}

static struct kernel K[200000];

static void test_the_first_period_counts_gpu_work_and_a_pause_as_one_second(void)
{
    /* a step every 5 ms for 1 s, 10 s of imports, then the loop: 1 + 1 + 3 s of work */
    size_t n = loop(K, 0, 0, 1 * S, 5 * MS, 5 * MS);
    n = loop(K, n, 11 * S, 20 * S, 5 * MS, 0);
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    int got = run(&w, K, n, 30 * S, t, 1);
    CHECK_EQ_INT(got, 1);
    CHECKF(near(t[0], 14 * S), "closed at %.3f s", t[0] / 1e9);
}

static void test_a_compilers_autotuning_keeps_the_first_period_open_until_names_settle(void)
{
    /* 8 s of kernels never seen before (autotuning candidates), 2 s of compiling
     * on the CPU, then the step, whose kernels all ran in the autotuning: the
     * period closes 3 s of busy work after the last new name, the pause counted
     * 0.1 s, so 2.9 s of steps are recorded; by work alone it closed at 5 s */
    size_t n = loop(K, 0, 0, 8 * S, 10 * MS, 8 * S);
    n = loop(K, n, 10 * S, 20 * S, 5 * MS, 0);
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    CHECK_EQ_INT(run(&w, K, n, 30 * S, t, 1), 1);
    CHECKF(near(t[0], 12900 * MS), "closed at %.3f s", t[0] / 1e9);
}

static void test_pauses_for_compiling_after_the_last_new_name_do_not_close_it_before_the_steps(void)
{
    /* an H200 JAX job's first seconds: a few kernels now and then (start-up,
     * autotuning), their names new up to 3.7 s, kernels at 4.9 and 6.1 s, 3 s
     * of compiling, then 20 steps of 2 ms and the exit: by work (pauses 1 s
     * each) 5 s were done at 6.1 s; the steps must be in the period */
    static const uint64_t at_ms[] = {0, 290, 590, 2420, 2440, 2670, 2735, 3034, 3092, 3127, 3395, 3476, 3670, 3700, 3753,
                                     4864, 6117, 6170};
    size_t n = 0;
    for (size_t i = 0; i < sizeof at_ms / sizeof *at_ms; i++)
        K[n++] = (struct kernel){at_ms[i] * MS, at_ms[i] <= 3700, 0};
    n = loop(K, n, 9120 * MS, 40 * MS, 2 * MS, 0);
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    CHECKF(run(&w, K, n, 9300 * MS, t, 1) == 0, "closed at %.3f s", t[0] / 1e9);
}

static void test_a_loop_whose_names_are_new_only_in_its_first_steps_closes_at_the_period(void)
{
    size_t n = loop(K, 0, 0, 20 * S, 5 * MS, 200 * MS);
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    CHECK_EQ_INT(run(&w, K, n, 20 * S, t, 1), 1);
    CHECKF(near(t[0], 5 * S), "closed at %.3f s", t[0] / 1e9);
}

static void test_names_new_without_end_close_at_six_times_the_period(void)
{
    size_t n = loop(K, 0, 0, 60 * S, 5 * MS, 60 * S);
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    CHECK_EQ_INT(run(&w, K, n, 60 * S, t, 1), 1);
    CHECKF(near(t[0], 30 * S), "closed at %.3f s", t[0] / 1e9);
}

static void test_a_period_shorter_than_the_settling_waits_its_own_length(void)
{
    /* GPUTRACE_KERNELS_FULL_S=1: names new for 0.5 s, the period closes 1 s of work later */
    size_t n = loop(K, 0, 0, 10 * S, 5 * MS, 500 * MS);
    struct gt_windows w;
    gt_windows_start(&w, 1, 2, true, T0, 42);
    uint64_t t[8];
    CHECK(run(&w, K, n, 10 * S, t, 1) == 1);
    CHECKF(near(t[0], 1500 * MS), "closed at %.3f s", t[0] / 1e9);
}

static void test_windows_last_one_second_at_random_moments_of_their_periods(void)
{
    size_t n = loop(K, 0, 0, 1000 * S, 5 * MS, 5 * MS);
    uint64_t first[2][64];
    for (int seed = 0; seed < 2; seed++) {
        struct gt_windows w;
        gt_windows_start(&w, 1, 20, true, T0, 1234567 + 7654321ull * (uint64_t)seed);
        static uint64_t t[128];
        int got = run(&w, K, n, 1000 * S, t, 101);
        CHECKF(got == 101, "%d toggles", got);
        uint64_t closed = t[0];
        int at_end = 0;
        for (int i = 1; i + 1 < got; i += 2) {
            uint64_t period = t[0] + 20 * S * (uint64_t)(i / 2); /* periods follow the first one's close */
            CHECKF(t[i] >= period && t[i] <= period + 19 * S + 20 * MS, "window %d opened at %.2f s, period from %.2f",
                   i / 2, t[i] / 1e9, period / 1e9);
            CHECKF(t[i] >= closed + S, "window %d opened %.2f s after the last closed", i / 2, (t[i] - closed) / 1e9);
            CHECKF(near(t[i + 1] - t[i], S), "window %d lasted %.3f s", i / 2, (t[i + 1] - t[i]) / 1e9);
            closed = t[i + 1];
            at_end += t[i] > period + 18 * S;
            first[seed][i / 2] = t[i] - period;
        }
        CHECKF(at_end < 10, "%d of 50 windows in their period's last second", at_end);
    }
    int same = 0;
    for (int i = 0; i < 50; i++)
        same += first[0][i] / (100 * MS) == first[1][i] / (100 * MS);
    CHECKF(same < 10, "two seeds placed %d of 50 windows alike", same);
}

static void test_without_a_first_period_the_first_window_lies_in_the_first_period(void)
{
    size_t n = loop(K, 0, 0, 30 * S, 5 * MS, 5 * MS);
    struct gt_windows w;
    gt_windows_start(&w, 0, 20, true, T0, 99);
    uint64_t t[8];
    /* run() starts recording; here the first toggle is the window's opening: */
    bool due_at_start = gt_windows_due(&w, false, T0);
    CHECK(!due_at_start);
    uint64_t opened = 0;
    for (uint64_t now = T0; now <= T0 + 30 * S && !opened; now += 10 * MS)
        if (gt_windows_due(&w, false, now))
            opened = now - T0;
    CHECKF(opened >= S && opened <= 19 * S + 10 * MS, "first window at %.2f s", opened / 1e9);
    (void)n, (void)t;
    char words[160];
    gt_windows_first_period_words(&w, words, sizeof words);
    CHECK(!*words);
}

static void test_without_kinds_that_tell_gpu_work_the_first_period_goes_by_the_clock(void)
{
    struct gt_windows w;
    gt_windows_start(&w, 1, 20, false, T0, 5);
    CHECK(!gt_windows_due(&w, true, T0 + 990 * MS));
    CHECK(gt_windows_due(&w, true, T0 + 1000 * MS));
    char words[160];
    gt_windows_first_period_words(&w, words, sizeof words);
    CHECK(!*words);
}

static void test_the_notes_words_give_the_settling_and_the_most(void)
{
    struct gt_windows w;
    char words[160];
    gt_windows_start(&w, 5, 20, true, T0, 5);
    gt_windows_first_period_words(&w, words, sizeof words);
    CHECKF(!strcmp(words, " of GPU work (a pause counts 1 s) and until 3 s of busy GPU work passed with no kernel of "
                          "a new name (30 s at most)"), "%s", words);
    gt_windows_start(&w, 1, 20, true, T0, 5);
    gt_windows_first_period_words(&w, words, sizeof words);
    CHECKF(strstr(words, "until 1 s of busy GPU work passed with no kernel of a new name (6 s at most)") != NULL, "%s", words);
}

static void test_kernels_of_seconds_are_busy_work_not_pauses(void)
{
    /* a loop of one kernel of 1 s back to back (a large GEMM, a collective that
     * waits): busy all through; counted as pauses of 0.1 s it waited for the 30 s */
    size_t n = 0;
    for (uint64_t t = 0; t < 40 * S; t += S + 1 * MS)
        K[n++] = (struct kernel){t, t == 0, S};
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    CHECK_EQ_INT(run(&w, K, n, 40 * S, t, 1), 1);
    CHECKF(t[0] <= 6 * S + 30 * MS, "closed at %.3f s", t[0] / 1e9);
}

static void test_sparse_kernels_of_new_names_close_at_six_times_the_period_of_work(void)
{
    /* a kernel of a new name every 0.5 s: work counts each gap whole (0.5 s), busy
     * 0.1 s: the most is 30 s of work, 30 s here, not of busy work (150 s) */
    size_t n = loop(K, 0, 0, 200 * S, 500 * MS, 200 * S);
    struct gt_windows w;
    gt_windows_start(&w, 5, 20, true, T0, 42);
    uint64_t t[8];
    CHECK_EQ_INT(run(&w, K, n, 200 * S, t, 1), 1);
    CHECKF(near(t[0], 30 * S) || (t[0] > 30 * S && t[0] < 30500 * MS), "closed at %.3f s", t[0] / 1e9);
}

static void test_records_handed_over_a_buffer_at_a_time_by_stream_end_the_period_alike(void)
{
    /* the cases above, as CUPTI hands records over: every 500 ms, each buffer's
     * kernels of two streams one stream after the other; the period ends within
     * a flush of where it ended with every record told at once */
    struct {
        uint64_t full_ns, loop_from, tune_for, want, late;
        bool odd_only; /* the autotuning's new names all on the second stream, none the buffer's last record */
    } cases[] = {{5, 10 * S, 8 * S, 12900 * MS, 530 * MS, false},
                 {5, 10 * S, 8 * S, 12900 * MS, 530 * MS, true},
                 {5, 0, 200 * MS, 5 * S, 530 * MS, false},
                 {1, 0, 500 * MS, 1500 * MS, 530 * MS, false},
                 /* the time since the latest record counts as busy too (up to 0.1 s): the
                  * flush at 1 s ends it, not the next at 1.5 s */
                 {1, 0, 5 * MS, 1 * S, 30 * MS, false}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n = cases[c].loop_from ? loop(K, 0, 0, cases[c].tune_for, 10 * MS, cases[c].tune_for) : 0;
        for (size_t j = 0; cases[c].odd_only && j < n; j++)
            K[j].new_name = (j & 1) && j % 50 != 49; /* (50 records a buffer) */
        n = loop(K, n, cases[c].loop_from, 20 * S, 5 * MS, cases[c].loop_from ? 0 : cases[c].tune_for);
        flush_ns = 500 * MS;
        by_stream = true;
        struct gt_windows w;
        gt_windows_start(&w, (uint32_t)cases[c].full_ns, 20, true, T0, 42);
        uint64_t t[8];
        int got = run(&w, K, n, 30 * S, t, 1);
        at_once();
        CHECKF(got == 1 && t[0] + 30 * MS >= cases[c].want && t[0] <= cases[c].want + cases[c].late,
               "case %zu: closed at %.3f s, %.3f s at once", c, got ? t[0] / 1e9 : -1.0, cases[c].want / 1e9);
    }
}

int main(void)
{
    TAP_RUN(test_the_first_period_counts_gpu_work_and_a_pause_as_one_second);
    TAP_RUN(test_a_compilers_autotuning_keeps_the_first_period_open_until_names_settle);
    TAP_RUN(test_pauses_for_compiling_after_the_last_new_name_do_not_close_it_before_the_steps);
    TAP_RUN(test_a_loop_whose_names_are_new_only_in_its_first_steps_closes_at_the_period);
    TAP_RUN(test_names_new_without_end_close_at_six_times_the_period);
    TAP_RUN(test_a_period_shorter_than_the_settling_waits_its_own_length);
    TAP_RUN(test_kernels_of_seconds_are_busy_work_not_pauses);
    TAP_RUN(test_sparse_kernels_of_new_names_close_at_six_times_the_period_of_work);
    TAP_RUN(test_records_handed_over_a_buffer_at_a_time_by_stream_end_the_period_alike);
    TAP_RUN(test_windows_last_one_second_at_random_moments_of_their_periods);
    TAP_RUN(test_without_a_first_period_the_first_window_lies_in_the_first_period);
    TAP_RUN(test_without_kinds_that_tell_gpu_work_the_first_period_goes_by_the_clock);
    TAP_RUN(test_the_notes_words_give_the_settling_and_the_most);
    return tap_done();
}
