/* Open-addressing (linear probing, backward-shift deletion) map; see u64map.h. */
#include <stdlib.h>

#include "u64map.h"

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static bool grow(struct u64map *m)
{
    uint64_t ncap = m->cap ? m->cap * 2 : 1024;
    struct u64map_entry *ne = calloc(ncap, sizeof *ne);
    if (!ne)
        return false;
    for (uint64_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key)
            continue;
        uint64_t j = mix(m->e[i].key) & (ncap - 1);
        while (ne[j].key)
            j = (j + 1) & (ncap - 1);
        ne[j] = m->e[i];
    }
    free(m->e);
    m->e = ne;
    m->cap = ncap;
    return true;
}

bool u64map_put(struct u64map *m, uint64_t key, uint64_t a, uint64_t b)
{
    if ((m->len + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    uint64_t i = mix(key) & (m->cap - 1);
    while (m->e[i].key && m->e[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->e[i].key)
        m->len++;
    m->e[i] = (struct u64map_entry){key, a, b};
    return true;
}

struct u64map_entry *u64map_get(struct u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    uint64_t i = mix(key) & (m->cap - 1);
    while (m->e[i].key) {
        if (m->e[i].key == key)
            return &m->e[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

bool u64map_del(struct u64map *m, uint64_t key, uint64_t *a, uint64_t *b)
{
    struct u64map_entry *hit = u64map_get(m, key);
    if (!hit)
        return false;
    if (a)
        *a = hit->a;
    if (b)
        *b = hit->b;
    uint64_t mask = m->cap - 1, i = (uint64_t)(hit - m->e), j = i;
    for (;;) { /* backward-shift so probes stay unbroken */
        j = (j + 1) & mask;
        if (!m->e[j].key)
            break;
        uint64_t home = mix(m->e[j].key) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->e[i] = m->e[j];
            i = j;
        }
    }
    m->e[i].key = 0;
    m->len--;
    return true;
}

void u64map_free(struct u64map *m)
{
    free(m->e);
    m->e = NULL;
    m->cap = m->len = 0;
}
