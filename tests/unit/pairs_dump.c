/* pairs_dump TRACE.db: the analyzer's pairing of allocations with frees
 * (analyzer/live.c, as every report uses it) written out, for
 * tests/test_pairing.py to compare with the schema's allocations view. One
 * line per successful allocation: "ALLOC_ID FREE_ID" (FREE_ID "-": live at
 * the end of the trace), then "unmatched_frees N" and "reallocated_unfreed N".
 * Ids are events.id; the analyzer holds events in (t_ns, id) order. */
#include <stdio.h>
#include <stdlib.h>

#include "live.h"
#include "trace.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pairs_dump TRACE.db\n");
        return 2;
    }
    struct gt_trace t;
    int code = gt_trace_open(&t, argv[1]);
    if (!code)
        code = gt_trace_load_events(&t);
    if (code) {
        fprintf(stderr, "pairs_dump: %s: %s\n", argv[1], t.err);
        return code;
    }
    int64_t *id = malloc(t.nev * sizeof *id);
    size_t n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(t.db, "SELECT id FROM events ORDER BY t_ns, id", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "pairs_dump: %s\n", sqlite3_errmsg(t.db));
        return 1;
    }
    while (sqlite3_step(st) == SQLITE_ROW && n < t.nev)
        id[n++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (n != t.nev) {
        fprintf(stderr, "pairs_dump: %zu event ids for %zu events\n", n, t.nev);
        return 1;
    }
    struct gt_pairs p;
    gt_pair_events(&t, &p);
    for (size_t i = 0; i < t.nev; i++) {
        const struct gt_event *e = &t.ev[i];
        if (e->failed || !t.api[e->api].known || t.api[e->api].op != GT_OP_ALLOC)
            continue;
        if (p.partner[i] == GT_NO_EVENT)
            printf("%lld -\n", (long long)id[i]);
        else
            printf("%lld %lld\n", (long long)id[i], (long long)id[p.partner[i]]);
    }
    printf("unmatched_frees %zu\nreallocated_unfreed %zu\n", p.unmatched_frees, p.reallocated_unfreed);
    gt_pairs_free(&p);
    free(id);
    gt_trace_close(&t);
    return 0;
}
