/*
 * int_cache.c — the process's cache of the catalog's stored integers (meta
 * integers such as the row position counters `ord:N`, `rels_gen`,
 * `last_snapshot`, and the entry counts of count.c) for one LMDB
 * environment (issue 18, target (e): one-file commits read some 14 of them,
 * each an LMDB descent of about 2,000 instructions).
 *
 * Why a cached value is right: what a committed LMDB transaction wrote never
 * changes, LMDB's transaction ids only grow, and a write transaction's id,
 * taken under LMDB's writer lock, is exactly the last committed one + 1. So
 * the cache holds values as of one committed transaction id (`txnid`) and
 * answers only the staged write transaction (moraine_txn, begun by txn.c,
 * which registers it: mr_int_cache_begin) whose id is `txnid` + 1: from the
 * base for keys it has not written, from its own list (`wrote`, values or
 * deletions) for those it has. Its reads of keys it has not written fill
 * the base (they are the values of `txnid`).
 *
 * Read transactions are never answered, and never fill or move the cache:
 * in LMDB 0.9 a read transaction's id does not always name the state it
 * reads (mdb_txn_renew0 takes the id from the lock file, then copies the
 * meta page of that id's parity without checking it; two commits in
 * between give a read of the newer state under the older id; a review
 * measured 183 such reads in 96M with 8 reader threads beside one writer).
 *
 * A registered transaction is known by its MDB_txn and its id, and only
 * while it holds LMDB's writer lock: every top-level write transaction of an
 * environment is the same MDB_txn object (LMDB reuses it), and an aborted
 * transaction's id is the next one's. So an abort ends the registration
 * before mdb_txn_abort, and a commit detaches it before mdb_txn_commit
 * (mr_int_cache_detach); each registration has a ticket, and the commit's
 * mr_int_cache_end, which runs after LMDB released the lock, acts only if no
 * other transaction registered since.
 *
 * After the registered transaction commits, having written at least one
 * integer (a put, or a deletion of a key that was there: LMDB then wrote
 * its meta page with its id), the cache becomes its state: the base's values
 * it did not write, and what it wrote. When it aborts, what it wrote is
 * dropped. Any other commit (another process's, a write transaction not
 * registered) gives the next write transaction a larger id than `txnid` + 1:
 * its begin empties the base and starts again at its own base. The base is
 * always the values of exactly transaction `txnid`, or empty.
 *
 * This holds only while every integer a registered transaction writes goes
 * through mr_int_put or mr_int_del (which record it). A write that could not
 * be recorded (its list full, an LMDB error) turns the cache off for the
 * rest of that transaction and keeps its writes out of the cache. Values are
 * cached only after they decoded with their checksum; keys longer than
 * MR_IC_KEYMAX bytes are never cached. One mutex guards it all.
 * tests/c/test_int_cache.c; docs/reliability.md, "Cached integers".
 */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

enum { MR_IC_MAXBASE = 1024, MR_IC_MAXWROTE = 1024 };

void mr_int_cache_init(mr_int_cache *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}

void mr_int_cache_free(mr_int_cache *c)
{
    free(c->base.v);
    free(c->wrote.v);
    pthread_mutex_destroy(&c->mu);
    memset(c, 0, sizeof *c);
}

/* The cache of the environment @t belongs to when @t is its registered
 * write transaction; else NULL (any other transaction, or an environment
 * moraine's registry did not open, such as moraine_compact's destination).
 * The first test takes no lock: a read never takes the mutex (nor hangs on
 * one a fork copied locked), and callers check again under it. */
static mr_int_cache *cache_of(MDB_txn *t)
{
    mr_env *e = mdb_env_get_userctx(mdb_txn_env(t));
    if (!e || __atomic_load_n(&e->ic.w, __ATOMIC_ACQUIRE) != t) return NULL;
    return &e->ic;
}

static int ent_cmp(const mr_ic_ent *e, const uint8_t *k, size_t n)
{
    size_t m = e->len < n ? e->len : n;
    int c = memcmp(e->key, k, m);
    return c ? c : (e->len > n) - (e->len < n);
}

/* The position of key @k in @m, or where it would go; *found set. */
static size_t find(const mr_ic_map *m, const uint8_t *k, size_t n, int *found)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = ent_cmp(&m->v[mid], k, n);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = 0;
    return lo;
}

/* Sets @k in @m (at most @max entries): 0, or -1 when it could not (full, out of memory). */
static int set(mr_ic_map *m, size_t max, const uint8_t *k, size_t n, int present, int64_t v)
{
    int found;
    size_t at = find(m, k, n, &found);
    if (!found) {
        if (m->n >= max) return -1;
        if (m->n == m->cap) {
            size_t cap = m->cap ? m->cap * 2 : 32;
            mr_ic_ent *p = realloc(m->v, cap * sizeof *p);
            if (!p) return -1;
            m->v = p;
            m->cap = cap;
        }
        memmove(m->v + at + 1, m->v + at, (m->n - at) * sizeof *m->v);
        m->n++;
        m->v[at].len = (uint8_t)n;
        memcpy(m->v[at].key, k, n);
    }
    m->v[at].present = (uint8_t)(present != 0);
    m->v[at].v = present ? v : 0;
    return 0;
}

static int usable(mr_int_cache *c, MDB_dbi dbi, size_t n)
{
    if (n == 0 || n > MR_IC_KEYMAX) return 0;
    if (!c->has_dbi) {
        c->dbi = dbi;
        c->has_dbi = 1;
    }
    return c->dbi == dbi;
}

/* What the cache knows for transaction @t: 1 answered (from what @t wrote,
 * else from the base), 0 not; *ent set when answered. Which map a miss fills:
 * *fill (NULL: none). c->mu held. */
static int lookup(mr_int_cache *c, MDB_txn *t, const uint8_t *k, size_t n, const mr_ic_ent **ent, mr_ic_map **fill)
{
    uint64_t id = (uint64_t)mdb_txn_id(t);
    int found;
    size_t at;
    *fill = NULL;
    if (c->w != t || id != c->wid || c->woff) return 0; /* only the registered writer is answered */
    at = find(&c->wrote, k, n, &found);
    if (found) {
        *ent = &c->wrote.v[at];
        return 1;
    }
    if (c->txnid == 0 || id != c->txnid + 1) return 0;
    at = find(&c->base, k, n, &found);
    if (found) {
        *ent = &c->base.v[at];
        return 1;
    }
    *fill = &c->base;
    return 0;
}

int mr_int_cache_get(MDB_txn *t, MDB_dbi dbi, const uint8_t *k, size_t n, int64_t *out)
{
    mr_int_cache *c = cache_of(t);
    if (!c) return -1;
    int r = -1;
    pthread_mutex_lock(&c->mu);
    const mr_ic_ent *e;
    mr_ic_map *fill;
    if (usable(c, dbi, n) && lookup(c, t, k, n, &e, &fill)) {
        if (e->present) *out = e->v;
        r = e->present;
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

void mr_int_cache_read(MDB_txn *t, MDB_dbi dbi, const uint8_t *k, size_t n, int present, int64_t v)
{
    mr_int_cache *c = cache_of(t);
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    const mr_ic_ent *e;
    mr_ic_map *fill;
    if (usable(c, dbi, n) && !lookup(c, t, k, n, &e, &fill) && fill) (void)set(fill, MR_IC_MAXBASE, k, n, present, v);
    pthread_mutex_unlock(&c->mu);
}

void mr_int_cache_wrote(MDB_txn *t, MDB_dbi dbi, const uint8_t *k, size_t n, int ok, int present, int64_t v)
{
    mr_int_cache *c = cache_of(t);
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    if (c->w == t && (uint64_t)mdb_txn_id(t) == c->wid && !c->woff) {
        if (!ok || (c->has_dbi && c->dbi != dbi)) c->woff = 1;
        else if (n > MR_IC_KEYMAX) {
            /* never cached, never looked up: nothing to keep */
        } else if (!usable(c, dbi, n) || set(&c->wrote, MR_IC_MAXWROTE, k, n, present, v)) {
            c->woff = 1;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

uint64_t mr_int_cache_begin(MDB_env *env, MDB_txn *w)
{
    mr_env *e = mdb_env_get_userctx(env);
    if (!e) return 0;
    mr_int_cache *c = &e->ic;
    uint64_t id = (uint64_t)mdb_txn_id(w);
    pthread_mutex_lock(&c->mu);
    uint64_t ticket = ++c->gen;
    __atomic_store_n(&c->w, w, __ATOMIC_RELEASE);
    c->wid = id;
    c->woff = 0;
    c->wrote.n = 0;
    if (c->txnid + 1 != id) {
        c->base.n = 0; /* something committed since: start again at this transaction's base */
        c->txnid = id - 1;
    }
    pthread_mutex_unlock(&c->mu);
    return ticket;
}

void mr_int_cache_detach(MDB_env *env, uint64_t ticket)
{
    mr_env *e = mdb_env_get_userctx(env);
    if (!e) return;
    mr_int_cache *c = &e->ic;
    pthread_mutex_lock(&c->mu);
    if (c->gen == ticket) __atomic_store_n(&c->w, NULL, __ATOMIC_RELEASE); /* wid, woff and wrote stay for mr_int_cache_end */
    pthread_mutex_unlock(&c->mu);
}

void mr_int_cache_end(MDB_env *env, uint64_t ticket, int committed)
{
    mr_env *e = mdb_env_get_userctx(env);
    if (!e) return;
    mr_int_cache *c = &e->ic;
    pthread_mutex_lock(&c->mu);
    if (c->gen == ticket && c->wid) {
        /* the base is as of wid - 1: its begin left it so, and only a
         * registration (begin, end) moves it */
        if (committed && !c->woff && c->wrote.n) {
            /* LMDB committed it as transaction wid (it wrote): the base as of wid */
            int ok = 1;
            for (size_t i = 0; ok && i < c->wrote.n; i++) {
                const mr_ic_ent *x = &c->wrote.v[i];
                ok = set(&c->base, MR_IC_MAXBASE, x->key, x->len, x->present, x->v) == 0;
            }
            if (ok) {
                c->txnid = c->wid;
            } else { /* half merged: no longer the state of any one transaction */
                c->base.n = 0;
                c->txnid = 0;
            }
        }
        /* otherwise the base stays what it is: the values of transaction txnid */
        __atomic_store_n(&c->w, NULL, __ATOMIC_RELEASE);
        c->wid = 0;
        c->woff = 0;
        c->wrote.n = 0;
    }
    pthread_mutex_unlock(&c->mu);
}
