/*
 * verbs_idorder.c — the order in which DuckLake walks a transaction's
 * transaction-local catalog entries at commit, which is the order in which
 * they take catalog ids (issue 16, item 5; corpus seed_0010 and seed_0014).
 *
 * DuckLake keeps a transaction's new and altered tables and views in
 * `new_tables`, a `case_insensitive_map_t` from schema name to a
 * `DuckLakeCatalogSet`, whose entries are again a `case_insensitive_map_t`
 * from entry name (DuckLakeTransaction::GetOrCreateTransactionLocalEntries,
 * DuckLakeCatalogSet::CreateEntry / DropEntry); new schemas live in one more
 * such set. At commit (DuckLakeTransactionState::GetNewSchemas, GetNewTables)
 * it walks them in iteration order, taking ids from next_catalog_id as it
 * goes. `case_insensitive_map_t` is a std::unordered_map hashed by DuckDB's
 * StringUtil::CIHash (Jenkins' one-at-a-time over the ASCII-lower-cased
 * bytes, each byte read as a signed char) and compared by StringUtil::CIEquals.
 * The corpus was written by an x86-64 Linux build, so the map is libstdc++'s
 * _Hashtable, whose iteration order this file reproduces:
 *
 *   - a map starts with one bucket; the first insertion makes 13 (the
 *     rehash policy starts at 11 buckets: _Prime_rehash_policy::_M_next_bkt);
 *     inserting past the bucket count (load factor 1) rehashes to the
 *     library's next prime at or above twice the count (29, 59, 127, 257, ...);
 *   - all nodes form one list; the nodes of one bucket are adjacent; a new
 *     node goes to the front of its bucket's run, or to the front of the
 *     list when its bucket is empty (_M_insert_bucket_begin);
 *   - a rehash takes the nodes in list order and puts each at the front of
 *     its new bucket's run, or at the front of the new list (_M_rehash_aux);
 *   - erasing a node leaves the others in place; assigning to an existing
 *     key keeps its node.
 *
 * tests/c/test_idorder.c checks this against the C++ library itself.
 */
#include "verbs_internal.h"
#include <stdlib.h>
#include <string.h>

/* libstdc++'s __prime_list from 17 up to the sizes a transaction reaches
 * (its lower_bound gives the next bucket count; the list is not every
 * prime). Above the last entry the count keeps doubling to the next odd
 * number that is prime, which may differ from libstdc++ for maps of more than
 * 1031 entries in one transaction: their ids are then still unique, only
 * possibly in another order than DuckLake's. */
static const size_t prime_list[] = {
    17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109, 113, 127, 137, 139,
    149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541,
    577, 619, 661, 709, 761, 823, 887, 953, 1031,
};

static int is_prime(size_t n)
{
    if (n < 2) return 0;
    for (size_t d = 2; d * d <= n; d++)
        if (n % d == 0) return 0;
    return 1;
}

/* _Prime_rehash_policy::_M_next_bkt: the bucket count for at least @n
 * buckets, and the element count that triggers the next rehash. */
static size_t next_bkt(size_t n, size_t *next_resize)
{
    static const unsigned char fast[] = {2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13};
    size_t b;
    if (n < sizeof fast) {
        b = n == 0 ? 1 : fast[n];
    } else {
        b = 0;
        for (size_t i = 0; i < sizeof prime_list / sizeof prime_list[0]; i++)
            if (prime_list[i] >= n) {
                b = prime_list[i];
                break;
            }
        if (!b)
            for (b = n | 1; !is_prime(b); b += 2) {}
    }
    if (n != 0) *next_resize = b;
    return b;
}

uint64_t mv_cihash(const char *s)
{
    uint32_t h = 0;
    for (; *s; s++) {
        signed char c = (signed char)*s;
        if (c >= 'A' && c <= 'Z') c = (signed char)(c - 'A' + 'a');
        h += (uint32_t)(int32_t)c;
        h += h << 10;
        h ^= h >> 6;
    }
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    return h;
}

/* StringUtil::CIEquals: equal after ASCII lower-casing. */
static int ci_equal(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y - 'A' + 'a');
        if (x != y) return 0;
    }
    return *a == *b;
}

static size_t bucket_of(const mv_hmap *m, const mv_hnode *n) { return (size_t)(n->hash % m->nbkt); }

/* Position of the first node of bucket @b in the list, or m->len. */
static size_t run_start(const mv_hnode *nodes, size_t len, const mv_hmap *m, size_t b)
{
    for (size_t i = 0; i < len; i++)
        if (bucket_of(m, &nodes[i]) == b) return i;
    return len;
}

/* Inserts @n into @nodes (of @len) at the front of its bucket's run, or at
 * the front of the list. */
static void place(mv_hnode *nodes, size_t len, const mv_hmap *m, const mv_hnode *n)
{
    size_t at = run_start(nodes, len, m, bucket_of(m, n));
    if (at == len) at = 0;
    memmove(&nodes[at + 1], &nodes[at], (len - at) * sizeof *nodes);
    nodes[at] = *n;
}

mv_hnode *mv_hmap_find(mv_hmap *m, const char *name)
{
    for (size_t i = 0; i < m->len; i++)
        if (ci_equal(m->n[i].name, name)) return &m->n[i];
    return NULL;
}

int mv_hmap_put(mv_hmap *m, const char *name, int64_t owner, mv_hnode **out)
{
    mv_hnode *f = mv_hmap_find(m, name);
    if (f) {
        f->owner = owner;
        if (out) *out = f;
        return 0;
    }
    if (m->len + 1 > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 8;
        mv_hnode *p = realloc(m->n, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        m->n = p;
        m->cap = cap;
    }
    if (m->nbkt == 0) m->nbkt = 1; /* a new map: one bucket, nothing allocated */
    /* _Prime_rehash_policy::_M_need_rehash(nbkt, len, 1) */
    if (m->len + 1 > m->next_resize) {
        size_t min_bkts = m->len + 1;
        if (!m->next_resize && min_bkts < 11) min_bkts = 11;
        if (min_bkts >= m->nbkt) {
            size_t want = min_bkts + 1 > 2 * m->nbkt ? min_bkts + 1 : 2 * m->nbkt;
            size_t nb = next_bkt(want, &m->next_resize);
            /* _M_rehash_aux: the nodes in list order, each to the front of its run or of the list */
            mv_hmap re = *m;
            re.nbkt = nb;
            mv_hnode *old = malloc((m->len ? m->len : 1) * sizeof *old);
            if (!old) return mr_err(MORAINE_ENOMEM, "out of memory");
            memcpy(old, m->n, m->len * sizeof *old);
            for (size_t i = 0; i < m->len; i++) place(m->n, i, &re, &old[i]);
            free(old);
            m->nbkt = nb;
        } else {
            m->next_resize = m->nbkt;
        }
    }
    mv_hnode n = {name, mv_cihash(name), owner, NULL};
    place(m->n, m->len, m, &n);
    m->len++;
    if (out) *out = mv_hmap_find(m, name);
    return 0;
}

void mv_hmap_erase(mv_hmap *m, const char *name)
{
    mv_hnode *f = mv_hmap_find(m, name);
    if (!f) return;
    size_t at = (size_t)(f - m->n);
    if (f->sub) {
        mv_hmap_free(f->sub);
        free(f->sub);
    }
    memmove(&m->n[at], &m->n[at + 1], (m->len - at - 1) * sizeof *m->n);
    m->len--;
}

void mv_hmap_free(mv_hmap *m)
{
    for (size_t i = 0; i < m->len; i++)
        if (m->n[i].sub) {
            mv_hmap_free(m->n[i].sub);
            free(m->n[i].sub);
        }
    free(m->n);
    memset(m, 0, sizeof *m);
}
