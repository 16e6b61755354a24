/* nearest.c - the nearest of some names to a word typed wrongly: commands,
 * options (cli.c, commands.c) and the range --iteration names
 * (iterations_ranges.c). */
#include <string.h>

#include "cli.h"

/* Edit distance counting an adjacent transposition as one edit (optimal
 * string alignment), on the first 63 bytes of each string. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strnlen(a, 63), m = strnlen(b, 63);
    size_t d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *gt_nearest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t k = 0; k < n; k++) {
        size_t d = edit_distance(word, candidates[k]);
        size_t len = strlen(candidates[k] + strspn(candidates[k], "-"));   /* "--json": 4 */
        if (d < best_d && 2 * d < len) {
            best = candidates[k];
            best_d = d;
        }
    }
    return best;
}
