/*
 * txn.c — the staged write transaction (moraine_txn, docs/semantics.md): its
 * state, begin and abort; its pending entries (rows collected in memory
 * while the commit is built, found by their identity: the current-subspace
 * key); the relations it defines; the failure that makes it unusable. Its
 * row operations are txn_rows.c, its commit commit.c.
 *
 * The handle's calls that go through its open transaction live here too,
 * so that store.c (the handle) makes no call into the transaction:
 * moraine_relation (the open commit's definitions first) and moraine_close
 * (which aborts it).
 */
#include "txn_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Counts an entry written (+1) or deleted (-1) under key @k of relation @r. */
int mr_txn_count_entry(moraine_txn *txn, const mr_rel *r, const uint8_t *k, size_t n, int delta)
{
    size_t pl = mr_count_prefix(r ? r->scoped : 0, k, n);
    return pl ? mr_counts_add(&txn->counts, k, pl, delta) : 0;
}

/* mdb_put that counts a new entry: with @flags 0 an existing entry is
 * replaced (not counted again), with MDB_NOOVERWRITE it is MDB_KEYEXIST. */
int mr_txn_cursor(moraine_txn *txn, MDB_cursor **out)
{
    if (!txn->cur) {
        int mrc = mdb_cursor_open(txn->t, txn->db->dbi, &txn->cur);
        if (mrc) {
            txn->cur = NULL;
            return mrc;
        }
    }
    *out = txn->cur;
    return 0;
}

void mr_txn_wrote(moraine_txn *txn) { txn->gap_valid = 0; }

int mr_txn_has_key(moraine_txn *txn, const MDB_val *k)
{
    if (txn->gap_valid) { /* compared in the database's own key order (mdb_cmp) */
        MDB_val lo = {txn->gap_lo.len, txn->gap_lo.p}, hi = {txn->gap_hi.len, txn->gap_hi.p};
        if (mdb_cmp(txn->t, txn->db->dbi, &lo, k) <= 0 && (txn->gap_end || mdb_cmp(txn->t, txn->db->dbi, k, &hi) < 0)) return MDB_NOTFOUND;
    }
    MDB_cursor *c;
    int mrc = mr_txn_cursor(txn, &c);
    if (mrc) return mrc;
    MDB_val at = *k, v;
    mrc = mdb_cursor_get(c, &at, &v, MDB_SET_RANGE);
    if (mrc && mrc != MDB_NOTFOUND) return mrc;
    if (!mrc && at.mv_size == k->mv_size && memcmp(at.mv_data, k->mv_data, k->mv_size) == 0) return 0;
    /* absent: no key from @k up to the next stored one (or the end) */
    txn->gap_valid = 0;
    txn->gap_lo.len = txn->gap_hi.len = 0;
    txn->gap_end = mrc == MDB_NOTFOUND;
    if (mr_buf_put(&txn->gap_lo, k->mv_data, k->mv_size) || (!txn->gap_end && mr_buf_put(&txn->gap_hi, at.mv_data, at.mv_size)))
        return MDB_PANIC;
    txn->gap_valid = 1;
    return MDB_NOTFOUND;
}

void mr_txn_cursor_close(moraine_txn *txn)
{
    if (txn->cur) mdb_cursor_close(txn->cur);
    txn->cur = NULL;
}

int mr_txn_put_counted(moraine_txn *txn, const mr_rel *r, MDB_val *k, MDB_val *v, unsigned flags)
{
    MDB_cursor *c;
    int mrc = mr_txn_cursor(txn, &c);
    if (mrc) return mrc;
    mr_txn_wrote(txn);
    MDB_val mine = *v; /* MDB_KEYEXIST points v at the stored value */
    mrc = mdb_cursor_put(c, k, v, MDB_NOOVERWRITE);
    if (mrc == MDB_KEYEXIST && !(flags & MDB_NOOVERWRITE)) {
        *v = mine;
        return mdb_cursor_put(c, k, v, 0);
    }
    if (mrc) return mrc;
    int rc = mr_txn_count_entry(txn, r, k->mv_data, k->mv_size, +1);
    return rc ? MDB_PANIC : 0; /* only ENOMEM or an over-long range: reported as a failed write */
}

/* ---- failure bookkeeping ---- */

int mr_txn_fail(moraine_txn *txn, int rc)
{
    if (!txn->failed) {
        txn->failed = rc;
        snprintf(txn->failmsg, sizeof txn->failmsg, "%s", moraine_errmsg());
    }
    return rc;
}

int mr_txn_usable(moraine_txn *txn)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "NULL transaction");
    if (txn->failed) return mr_err(MORAINE_ETXN, "the commit already failed and must be aborted: %s", txn->failmsg);
    return 0;
}

/* ---- pending entries ---- */

/* The hash of an identity key: eight bytes at a time (keys are mostly
 * 9-byte integer elements), each word mixed in by a multiply, the result
 * folded so that the low bits (the slot) depend on every byte. */
static uint64_t key_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (n * 0x9E3779B97F4A7C15ULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    for (size_t k = 0; i < n; i++, k += 8) w |= (uint64_t)p[i] << k;
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

pending **mr_pending_slot(moraine_txn *txn, const uint8_t *k, size_t n)
{
    size_t mask = txn->nslots - 1;
    for (size_t i = key_hash(k, n) & mask;; i = (i + 1) & mask) {
        pending *e = txn->slots[i];
        if (!e || (e->ident.len == n && memcmp(e->ident.p, k, n) == 0)) return &txn->slots[i];
    }
}

/* The newest entry with identity @k (children attach to it), or NULL. */
pending *mr_pending_lookup(moraine_txn *txn, const mr_buf *k) { return *mr_pending_slot(txn, k->p, k->len); }

/* The live entry among those with the same identity as @head, or NULL. */
pending *mr_pending_live(pending *head)
{
    for (pending *e = head; e; e = e->prev)
        if (!e->ended) return e;
    return NULL;
}

/* Whether the stored row under this identity was loaded into the commit. */
int mr_pending_store_seen(pending *head)
{
    for (pending *e = head; e; e = e->prev)
        if (e->from_store) return 1;
    return 0;
}

/* Doubles the identity table (64 slots to begin with: a one-file commit
 * pends about a dozen entries, and zeroing a larger first table was a
 * seventieth of its cost). ENOMEM. */
static int grow_slots(moraine_txn *txn)
{
    size_t n = txn->nslots ? txn->nslots * 2 : 64;
    pending **old = txn->slots;
    size_t oldn = txn->nslots;
    txn->slots = calloc(n, sizeof *txn->slots);
    if (!txn->slots) {
        txn->slots = old;
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    txn->nslots = n;
    for (size_t i = 0; i < oldn; i++)
        if (old[i]) *mr_pending_slot(txn, old[i]->ident.p, old[i]->ident.len) = old[i];
    free(old);
    return 0;
}

void mr_pending_free(pending *e)
{
    if (!e) return;
    if (!(e->arena & MR_PA_IDENT)) mr_buf_free(&e->ident);
    if (!(e->arena & MR_PA_TARGET)) mr_buf_free(&e->target);
    if (!(e->arena & MR_PA_VALS)) free(e->vals);
    free(e->store);
    for (size_t i = 0; i < e->ngroups; i++) mr_buf_free(&e->groups[i].bytes);
    free(e->groups);
    if (!(e->arena & MR_PA_STRUCT)) free(e);
}

void *mr_txn_alloc(moraine_txn *txn, size_t n)
{
    const size_t a = _Alignof(max_align_t);
    if (n > SIZE_MAX / 2) return NULL;
    n = (n + a - 1) / a * a;
    mr_chunk *c = txn->arena;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ((size_t)64 << 10) ? n : (size_t)64 << 10;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = txn->arena;
        c->used = 0;
        c->cap = cap;
        txn->arena = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

int mr_pending_set_ident(moraine_txn *txn, pending *e, const uint8_t *k, size_t n)
{
    uint8_t *p = mr_txn_alloc(txn, n ? n : 1);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    if (!(e->arena & MR_PA_IDENT)) mr_buf_free(&e->ident);
    memcpy(p, k, n);
    e->ident = (mr_buf){.p = p, .len = n, .cap = n};
    e->arena |= MR_PA_IDENT;
    return 0;
}

/* Registers a new pending entry under identity key @k (newest wins). */
int mr_pending_add(moraine_txn *txn, pending *e)
{
    int rc = 0;
    if ((txn->used + 1) * 2 > txn->nslots && (rc = grow_slots(txn))) return rc;
    if (txn->nlist == txn->caplist) {
        size_t cap = txn->caplist ? txn->caplist * 2 : 256;
        pending **p = realloc(txn->list, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        txn->list = p;
        txn->caplist = cap;
    }
    pending **s = mr_pending_slot(txn, e->ident.p, e->ident.len);
    if (!*s) txn->used++;
    e->prev = *s;
    *s = e;
    txn->list[txn->nlist++] = e;
    return 0;
}

pending *mr_pending_new(moraine_txn *txn, mr_rel *r, int64_t ord)
{
    pending *e = mr_txn_alloc(txn, sizeof *e);
    if (e) {
        memset(e, 0, sizeof *e);
        e->rel = r;
        e->ord = ord;
        e->arena = MR_PA_STRUCT;
    }
    return e;
}

/* ---- relations ---- */

mr_rel *mr_txn_rel(moraine_txn *txn, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = txn->ndefs; i-- > 0;)
        if (mr_rel_named(txn->defs[i], name, len)) return txn->defs[i];
    return mr_rel_by_name(txn->db, name);
}

int moraine_relation(moraine_db *db, const char *name, moraine_relation_info *out)
{
    if (!db || !name || !out) return mr_err(MORAINE_EINVAL, "moraine_relation: NULL argument");
    pthread_mutex_lock(&db->mu);
    mr_rel *r = db->writer ? mr_txn_rel(db->writer, name) : NULL;
    if (!r) r = mr_rel_by_name(db, name);
    if (r) *out = r->info;
    pthread_mutex_unlock(&db->mu);
    return r ? 0 : mr_err(MORAINE_ENOTFOUND, "the catalog has no table '%s'", name);
}

int moraine_txn_define(moraine_txn *txn, const char *name, size_t ncols, const char *const *colnames)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    if (!name || !*name) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "moraine_txn_define: empty table name"));
    if (strlen(name) > 400) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "table name of %zu bytes is too long", strlen(name)));
    for (size_t i = 0; i < ncols; i++)
        if (!colnames || !colnames[i]) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: NULL column name %zu", name, i));
    mr_rel *have = mr_txn_rel(txn, name);
    if (have) {
        if (ncols == 0) return 0;
        if (have->info.ncols == ncols) {
            size_t i = 0;
            while (i < ncols && strcmp(have->names[i], colnames[i]) == 0) i++;
            if (i == ncols) return 0;
        }
        if (have->info.ncols != 0)
            return mr_txn_fail(txn, mr_err(MORAINE_EEXIST, "table '%s' is already defined with other columns (%zu columns)", name, have->info.ncols));
    }
    uint32_t id;
    if (have) {
        id = have->info.id;
    } else {
        if (txn->next_rel_id == 0) {
            int64_t v = 1;
            if ((rc = mr_meta_get_int(txn->t, txn->db->dbi, "next_rel_id", &v)) < 0) return mr_txn_fail(txn, rc);
            txn->next_rel_id = rc ? v : 1;
        }
        id = (uint32_t)txn->next_rel_id++;
    }
    mr_rel *r;
    if ((rc = mr_rel_build(txn->db, name, id, ncols, colnames, &r))) return mr_txn_fail(txn, rc);
    mr_rel **d = realloc(txn->defs, (txn->ndefs + 1) * sizeof *d);
    if (!d) {
        mr_rel_free(r);
        return mr_txn_fail(txn, mr_err(MORAINE_ENOMEM, "out of memory"));
    }
    txn->defs = d;
    txn->defs[txn->ndefs++] = r;
    memset(txn->relcache, 0, sizeof txn->relcache); /* the new definition comes first */
    memset(txn->relbyptr, 0, sizeof txn->relbyptr);
    txn->pc_child = NULL;
    return 0;
}

/* ---- begin ---- */

void mr_writer_done(mr_env *sh)
{
    pthread_mutex_lock(&sh->mu);
    sh->writer = 0;
    pthread_mutex_unlock(&sh->mu);
}

int mr_adopt_map_locked(mr_env *sh)
{
    if (sh->writer || sh->starting || __atomic_load_n(&sh->nreaders, __ATOMIC_SEQ_CST)) return 0;
    mdb_env_set_mapsize(sh->env, 0);
    sh->map_base = NULL; /* remapped */
    return 1;
}

int mr_adopt_wait(unsigned *waited_us)
{
    if (*waited_us >= MR_ADOPT_WAIT_US) return 0;
    unsigned step = *waited_us < 50 ? 50 : *waited_us > 5000 ? 5000 : *waited_us; /* 50 µs, doubling to 5 ms */
    usleep(step);
    *waited_us += step;
    return 1;
}

int mr_write_txn_begin(moraine_db *db, int grow, MDB_txn **t)
{
    mr_env *sh = db->sh;
    pthread_mutex_lock(&sh->mu);
    /* another handle of the same catalog in this thread: LMDB's writer lock
     * would wait for ourselves (another thread's commit is simply waited for) */
    if (sh->writer && pthread_equal(sh->writer_thread, pthread_self())) {
        pthread_mutex_unlock(&sh->mu);
        return mr_err(MORAINE_ETXN, "a commit is already open on this catalog in this thread, through another handle of it");
    }
    /* Grow the map ahead of need while no transaction of ours is open or
     * being begun (LMDB allows resizing only then, and a write transaction
     * reads its meta page through the map before LMDB counts it): when more
     * than half is in use. Under the lock a read transaction takes to begin
     * and be counted (read.c, mr_read_txn_begin) and a write transaction to
     * be counted as starting, so none begins between the check and the remap. */
    if (grow && !sh->writer && !sh->starting && __atomic_load_n(&sh->nreaders, __ATOMIC_SEQ_CST) == 0) {
        MDB_envinfo ei;
        MDB_stat st;
        if (mdb_env_info(db->env, &ei) == 0 && mdb_env_stat(db->env, &st) == 0) {
            size_t used = (ei.me_last_pgno + 1) * (size_t)st.ms_psize;
            if (ei.me_mapsize > db->opts.map_size) db->opts.map_size = ei.me_mapsize;
            while (used * 2 > db->opts.map_size && mr_grow_map(db) == 0) {
            }
        }
    }
    sh->starting++; /* until it is the writer, or the begin failed */
    pthread_mutex_unlock(&sh->mu);
    int mrc, adoptions = 0;
    unsigned waited = 0;
    for (;;) {
        mrc = mdb_txn_begin(db->env, NULL, 0, t);
        pthread_mutex_lock(&sh->mu);
        sh->starting--;
        if (!mrc) {
            sh->writer = 1;
            sh->writer_thread = pthread_self();
        }
        /* another process grew the map (LMDB released its writer lock as the
         * begin failed): adopt it once nothing else of the process is open
         * or being begun, waiting a while for that, uncounted while it waits */
        const int adopted = mrc == MDB_MAP_RESIZED && adoptions < 8 && mr_adopt_map_locked(sh);
        if (adopted) sh->starting++;
        pthread_mutex_unlock(&sh->mu);
        if (adopted) {
            adoptions++;
            continue;
        }
        if (mrc != MDB_MAP_RESIZED || !mr_adopt_wait(&waited)) break;
        pthread_mutex_lock(&sh->mu);
        sh->starting++;
        pthread_mutex_unlock(&sh->mu);
    }
    return mrc ? mr_lmdb_err(mrc, "starting a commit") : 0;
}

int moraine_txn_begin(moraine_db *db, int64_t snapshot_id, moraine_txn **out)
{
    if (!db || !out) return mr_err(MORAINE_EINVAL, "moraine_txn_begin: NULL argument");
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    int prc = mr_same_process(db);
    if (prc) return prc;
    if (db->writer) return mr_err(MORAINE_ETXN, "a commit is already open on this catalog handle");
    mr_env *sh = db->sh;
    moraine_txn *txn = calloc(1, sizeof *txn);
    if (!txn) return mr_err(MORAINE_ENOMEM, "out of memory");
    int rc = mr_write_txn_begin(db, 1, &txn->t);
    if (rc) {
        free(txn);
        return rc;
    }
    txn->db = db;
    txn->snapshot = snapshot_id;
    txn->ic_ticket = mr_int_cache_begin(db->env, txn->t);
    mr_bounds_get(db, &txn->bounds);
    pthread_mutex_lock(&db->mu);
    rc = mr_load_relations(db, txn->t);
    pthread_mutex_unlock(&db->mu);
    if (!rc && snapshot_id != MORAINE_NO_SNAPSHOT) {
        int64_t last = 0;
        int have = mr_meta_get_int(txn->t, db->dbi, "last_snapshot", &last);
        if (have < 0) rc = have;
        else if (snapshot_id < 0) rc = mr_err(MORAINE_ESNAPSHOT, "snapshot id %lld is negative", (long long)snapshot_id);
        else if (have && snapshot_id <= last)
            rc = mr_err(MORAINE_ESNAPSHOT, "snapshot %lld is not above the last committed snapshot %lld", (long long)snapshot_id,
                        (long long)last);
    }
    if (!rc) rc = grow_slots(txn);
    if (rc) {
        mr_int_cache_end(db->env, txn->ic_ticket, 0); /* before the abort: LMDB's writer lock still held */
        mdb_txn_abort(txn->t);
        mr_writer_done(sh);
        free(txn->slots);
        free(txn);
        return rc;
    }
    db->writer = txn;
    *out = txn;
    return 0;
}

/* ---- abort ---- */

void mr_txn_free(moraine_txn *txn)
{
    for (size_t i = 0; i < txn->nlist; i++) mr_pending_free(txn->list[i]);
    free(txn->list);
    free(txn->slots);
    for (size_t i = 0; i < txn->ndefs; i++) mr_rel_free(txn->defs[i]);
    free(txn->defs);
    free(txn->next_ord);
    free(txn->ord_dirty);
    mr_buf_free(&txn->kb);
    mr_buf_free(&txn->kb2);
    mr_buf_free(&txn->gap_lo);
    mr_buf_free(&txn->gap_hi);
    mr_counts_free(&txn->counts);
    for (mr_chunk *c = txn->arena, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(txn);
}

void moraine_txn_abort(moraine_txn *txn)
{
    if (!txn) return;
    if (!mr_db_here(txn->db)) {
        mr_txn_forget(txn);
        return;
    }
    mr_txn_cursor_close(txn);
    mr_int_cache_end(txn->db->env, txn->ic_ticket, 0); /* before the abort: LMDB's writer lock still held */
    mdb_txn_abort(txn->t);
    mr_writer_done(txn->db->sh);
    txn->db->writer = NULL;
    mr_txn_free(txn);
}

/* A transaction inherited across fork: its LMDB state (the writer lock, the
 * dirty pages' bookkeeping) is the parent's, so only this process's memory
 * is freed; LMDB's transaction object stays allocated. */
void mr_txn_forget(moraine_txn *txn)
{
    txn->db->writer = NULL;
    mr_txn_free(txn);
}

/* ---- closing the handle ---- */

void moraine_close(moraine_db *db)
{
    if (!db) return;
    if (!mr_db_here(db)) {
        /* A handle inherited across fork: LMDB's environment belongs to the
         * process that opened it (its reader slots, its locks). Closing it
         * here would release the parent's reader slot, so only this
         * process's memory of the handle is freed; the environment's own
         * memory and file descriptors stay with this process until it ends. */
        if (db->writer) mr_txn_forget(db->writer);
        mr_db_free(db, 0);
        return;
    }
    if (db->writer) moraine_txn_abort(db->writer);
    mr_db_free(db, 1);
}

/* ---- for engine/history_rewrite.c (the transaction's internals stay in txn_internal.h) ---- */

MDB_txn *mr_txn_lmdb(moraine_txn *txn)
{
    mr_txn_wrote(txn); /* its taker may write */
    return txn->t;
}
MDB_dbi mr_txn_dbi(moraine_txn *txn) { return txn->db->dbi; }
const mr_bounds *mr_txn_bounds(moraine_txn *txn) { return &txn->bounds; }
int64_t mr_txn_snapshot(moraine_txn *txn) { return txn->snapshot; }
size_t mr_txn_staged(moraine_txn *txn) { return txn->nlist; }
int mr_txn_rewinding(moraine_txn *txn) { return txn->rewind; }
void mr_txn_set_rewind(moraine_txn *txn, int on) { txn->rewind = on; }
int mr_txn_count(moraine_txn *txn, const mr_rel *r, const uint8_t *k, size_t n, int delta)
{
    return mr_txn_count_entry(txn, r, k, n, delta);
}
