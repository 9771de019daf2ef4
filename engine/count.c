/*
 * count.c — entry counts per key range (docs/keyspace.md, "Count subspace").
 *
 * A value's checksum covers its key, so a read that meets a damaged key
 * fails. A damaged key can also move its entry out of the range a read
 * walks (a flipped relation id, table id or end_snapshot byte), and then the
 * read would silently miss a row. So the catalog keeps, under
 * N + range prefix, the number of entries of every range a read walks:
 *
 *   C rel [table_id]        live versions of a relation (of one table when scoped)
 *   H rel [table_id] end    ended versions, per end_snapshot
 *   S                       snapshot rows
 *   R rel                   rows of a non-temporal table, and loose child rows
 *
 * Commits keep them (count_add, mr_counts_flush); a read that walked a whole
 * range compares what it met with the stored sum (mr_count_sum), and
 * moraine_verify recounts every range. Counts and meta integers are stored
 * as 8 bytes big-endian and a CRC-32C of key and value (mr_int_get/put).
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the key element at p (p < end), 0 when malformed. */
size_t mr_elem_len(const uint8_t *p, const uint8_t *end)
{
    if (p >= end) return 0;
    if (*p == MR_K_NULL) return 1;
    if (*p == MR_K_INT) return end - p >= MR_KEY_INT_LEN ? MR_KEY_INT_LEN : 0;
    if (*p == MR_K_STR) {
        const uint8_t *q = p + 1;
        while (q < end) {
            if (*q == 0) {
                if (q + 1 < end && q[1] == 0xFF) {
                    q += 2;
                    continue;
                }
                return (size_t)(q + 1 - p);
            }
            q++;
        }
    }
    return 0;
}

size_t mr_count_prefix(int scoped, const uint8_t *k, size_t n)
{
    const uint8_t *end = k + n;
    if (n == 0) return 0;
    switch (k[0]) {
    case MR_SUB_SNAPSHOT: return 1;
    case MR_SUB_ROWS: return n >= 1 + MR_KEY_INT_LEN ? 1 + MR_KEY_INT_LEN : 0;
    case MR_SUB_CURRENT:
    case MR_SUB_HISTORY: {
        if (n < 1 + MR_KEY_INT_LEN) return 0;
        const uint8_t *p = k + 1 + MR_KEY_INT_LEN;
        if (scoped) {
            size_t l = mr_elem_len(p, end);
            if (!l) return 0;
            p += l;
        }
        if (k[0] == MR_SUB_HISTORY) {
            size_t l = mr_elem_len(p, end);
            if (!l) return 0;
            p += l;
        }
        return (size_t)(p - k);
    }
    default: return 0;
    }
}

/* ---- integers with a checksum ---- */

/* Decodes the stored integer @v of @key; 1, or MORAINE_ECORRUPT. */
static int int_decode(const uint8_t *key, size_t keylen, const MDB_val *vv, int64_t *out)
{
    MDB_val v = *vv;
    char desc[200];
    if (v.mv_size != 12) {
        mr_key_describe(key, keylen, desc, sizeof desc);
        return mr_err(MORAINE_ECORRUPT, "catalog metadata %s is %zu bytes, expected 12: it is damaged", desc, v.mv_size);
    }
    const uint8_t *b = v.mv_data;
    uint32_t want = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
    if (mr_crc32c_update(mr_crc32c(key, keylen), b, 8) != want) {
        mr_key_describe(key, keylen, desc, sizeof desc);
        return mr_err(MORAINE_ECORRUPT, "catalog metadata %s fails its checksum: its key or value is damaged", desc);
    }
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | b[i];
    *out = (int64_t)u;
    return 1;
}

int mr_int_get_stored(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen, int64_t *out)
{
    MDB_val k = {keylen, (void *)key}, v;
    int mrc = mdb_get(t, dbi, &k, &v);
    if (mrc == MDB_NOTFOUND) return 0;
    if (mrc) return mr_lmdb_err(mrc, "reading catalog metadata");
    return int_decode(key, keylen, &v, out);
}

int mr_int_get(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen, int64_t *out)
{
    int known = mr_int_cache_get(t, dbi, key, keylen, out);
    if (known >= 0) return known;
    int rc = mr_int_get_stored(t, dbi, key, keylen, out);
    if (rc >= 0) mr_int_cache_read(t, dbi, key, keylen, rc, rc ? *out : 0); /* a value only once its checksum passed */
    return rc;
}

void mr_int_encode(uint8_t b[12], const uint8_t *key, size_t keylen, int64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
    uint32_t c = mr_crc32c_update(mr_crc32c(key, keylen), b, 8);
    for (int i = 0; i < 4; i++) b[8 + i] = (uint8_t)(c >> (8 * i));
}

int mr_int_put(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen, int64_t v)
{
    uint8_t b[12];
    mr_int_encode(b, key, keylen, v);
    MDB_val k = {keylen, (void *)key}, val = {12, b};
    int mrc = mdb_put(t, dbi, &k, &val, 0);
    mr_int_cache_wrote(t, dbi, key, keylen, mrc == 0, 1, v);
    return mrc ? mr_lmdb_err(mrc, "writing catalog metadata") : 0;
}

int mr_int_del(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen)
{
    MDB_val k = {keylen, (void *)key};
    int mrc = mdb_del(t, dbi, &k, NULL);
    if (mrc == MDB_NOTFOUND) return 0; /* nothing changed: not a write (LMDB may then commit nothing, under no id) */
    mr_int_cache_wrote(t, dbi, key, keylen, mrc == 0, 0, 0);
    return mrc ? mr_lmdb_err(mrc, "deleting catalog metadata") : 0;
}

/* ---- count maps: sorted (key, number) pairs ---- */

static int ent_cmp(const mr_count_ent *e, const uint8_t *k, size_t n)
{
    size_t m = e->len < n ? e->len : n;
    int c = memcmp(e->key, k, m);
    return c ? c : (e->len > n) - (e->len < n);
}

int mr_counts_add(mr_counts *m, const uint8_t *k, size_t n, int64_t delta)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = ent_cmp(&m->v[mid], k, n);
        if (c == 0) {
            m->v[mid].n += delta;
            return 0;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    if (n > sizeof m->v[0].key) return mr_err(MORAINE_EINVAL, "key range of %zu bytes is too long to count", n);
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        mr_count_ent *p = realloc(m->v, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        m->v = p;
        m->cap = cap;
    }
    memmove(m->v + lo + 1, m->v + lo, (m->n - lo) * sizeof *m->v);
    m->v[lo].len = n;
    memcpy(m->v[lo].key, k, n);
    m->v[lo].n = delta;
    m->v[lo].stored = 0;
    m->n++;
    return 0;
}

void mr_counts_free(mr_counts *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* Adds @delta to the stored counts of the ranges in @m (keys without the N
 * byte), in write transaction @t. */
int mr_counts_flush(MDB_txn *t, MDB_dbi dbi, const mr_counts *m)
{
    uint8_t key[MR_MAX_KEY + 1];
    for (size_t i = 0; i < m->n; i++) {
        const mr_count_ent *e = &m->v[i];
        if (e->n == 0) continue;
        key[0] = MR_SUB_COUNT;
        memcpy(key + 1, e->key, e->len);
        int64_t have = 0;
        int rc = mr_int_get(t, dbi, key, e->len + 1, &have);
        if (rc < 0) return rc;
        int64_t now = have + e->n;
        if (now < 0) {
            char desc[200];
            mr_key_describe(e->key, e->len, desc, sizeof desc);
            return mr_err(MORAINE_ECORRUPT, "the entry count of range %s would go below zero (%lld %+lld): the catalog is damaged", desc,
                          (long long)have, (long long)e->n);
        }
        if (now == 0) {
            if ((rc = mr_int_del(t, dbi, key, e->len + 1))) return rc;
        } else if ((rc = mr_int_put(t, dbi, key, e->len + 1, now))) {
            return rc;
        }
    }
    return 0;
}

int mr_count_sum(MDB_txn *t, MDB_dbi dbi, const uint8_t *prefix, size_t plen, const uint8_t *from, size_t flen, int64_t *sum)
{
    uint8_t pk[MR_MAX_KEY + 1], fk[MR_MAX_KEY + 1];
    if (plen > MR_MAX_KEY || flen > MR_MAX_KEY) return mr_err(MORAINE_EINVAL, "range prefix too long");
    pk[0] = fk[0] = MR_SUB_COUNT;
    memcpy(pk + 1, prefix, plen);
    if (!from) {
        from = prefix;
        flen = plen;
    }
    memcpy(fk + 1, from, flen);
    MDB_cursor *c;
    int mrc = mdb_cursor_open(t, dbi, &c);
    if (mrc) return mr_lmdb_err(mrc, "opening a cursor");
    MDB_val k = {flen + 1, fk}, v;
    int64_t total = 0;
    int rc = 0;
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen + 1 || memcmp(k.mv_data, pk, plen + 1) != 0) break;
        int64_t n = 0;
        if ((rc = int_decode(k.mv_data, k.mv_size, &v, &n)) < 0) break;
        rc = 0;
        total += n;
    }
    mdb_cursor_close(c);
    if (rc) return rc;
    if (mrc && mrc != MDB_NOTFOUND) return mr_lmdb_err(mrc, "reading entry counts");
    *sum = total;
    return 0;
}

int mr_count_mismatch(const uint8_t *prefix, size_t plen, int64_t met, int64_t counted)
{
    char desc[200];
    mr_key_describe(prefix, plen, desc, sizeof desc);
    return mr_err(MORAINE_ECORRUPT, "key range %s holds %lld entries where the catalog counted %lld: a key in or near it is damaged", desc,
                  (long long)met, (long long)counted);
}
