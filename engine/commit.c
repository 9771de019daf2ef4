/*
 * commit.c — staged commits: one DuckLake snapshot, one LMDB write
 * transaction (docs/semantics.md).
 *
 * Rows that carry children (a data file and its partition values and stats,
 * a spec and its columns, a snapshot and its changes) are collected in memory
 * while the commit is built ("pending" entries, txn.c and txn_rows.c) and
 * encoded once here, at commit. Ending a row turns its pending entry into a
 * history entry; the current key is deleted at commit. Nothing reaches the
 * store unless moraine_txn_commit succeeds: it checks that the commit is a
 * whole DuckLake snapshot, writes the entries, descriptors and counters, and
 * commits the LMDB transaction.
 */
#include "txn_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- commit ---- */

/* Dead readers (processes killed in a read) keep their LMDB reader slots
 * until someone clears them, and while they do, the pages of the snapshot
 * they read cannot be reused: a writer that stays open (it never reopens,
 * where moraine also clears them) would make the file grow with every
 * commit. So the writer clears them itself, cheaply: after every 32nd
 * commit, or after a commit a second or more after the last check. */
#define MR_READER_CHECK_COMMITS 32
#define MR_READER_CHECK_MS 1000
static void dead_reader_check(mr_env *sh)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    pthread_mutex_lock(&sh->mu);
    int due = ++sh->commits >= MR_READER_CHECK_COMMITS || now - sh->last_check_ms >= MR_READER_CHECK_MS;
    if (due) {
        sh->commits = 0;
        sh->last_check_ms = now;
    }
    pthread_mutex_unlock(&sh->mu);
    if (due) mdb_reader_check(sh->env, NULL);
}

/* Sorts an entry's child groups by relation id (one group per relation:
 * a few, so by insertion). */
static void sort_groups(group *g, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        group x = g[i];
        size_t j = i;
        for (; j > 0 && g[j - 1].rel_id > x.rel_id; j--) g[j] = g[j - 1];
        g[j] = x;
    }
}

static int encode_pending(pending *e, mr_buf *v)
{
    v->len = 0;
    int rc = mr_value_begin(v);
    if (!rc) rc = mr_encode_row(v, e->ord, e->vals, e->ncols);
    sort_groups(e->groups, e->ngroups);
    for (size_t i = 0; !rc && i < e->ngroups; i++) {
        group *g = &e->groups[i];
        rc = mr_put_uvarint(v, g->rel_id);
        if (!rc) rc = mr_put_uvarint(v, g->nrows);
        if (!rc) rc = mr_put_uvarint(v, g->bytes.len);
        if (!rc) rc = mr_buf_put(v, g->bytes.p, g->bytes.len);
    }
    if (!rc) mr_value_seal(v, 0, e->target.p, e->target.len);
    return rc;
}

static int flush(moraine_txn *txn)
{
    mr_buf v = {0};
    int rc = 0;
    MDB_dbi dbi = txn->db->dbi;
    mr_txn_wrote(txn);
    for (size_t i = 0; !rc && i < txn->nlist; i++) {
        pending *e = txn->list[i];
        if (e->discarded) continue;
        if (e->delete_current) {
            MDB_val k = {e->ident.len, e->ident.p};
            int mrc = mdb_del(txn->t, dbi, &k, NULL);
            if (mrc && mrc != MDB_NOTFOUND) rc = mr_lmdb_err(mrc, "moving a row to history");
            if (!mrc) rc = mr_txn_count_entry(txn, e->rel, k.mv_data, k.mv_size, -1);
        }
        if (!rc) rc = encode_pending(e, &v);
        if (!rc) {
            MDB_val k = {e->target.len, e->target.p}, val = {v.len, v.p};
            int mrc = mr_txn_put_counted(txn, e->rel, &k, &val, e->history_noover ? MDB_NOOVERWRITE : 0);
            if (mrc == MDB_KEYEXIST) {
                char desc[256];
                mr_describe_row(e->rel, e->vals, e->ncols, desc, sizeof desc);
                rc = mr_err(MORAINE_EEXIST, "%s row %s: a history version with the same key, begin and end already exists", e->rel->info.name, desc);
            } else if (mrc) {
                rc = mr_lmdb_err(mrc, "writing a row");
            }
        }
    }
    mr_buf_free(&v);
    /* descriptors, counters, last snapshot */
    for (size_t i = 0; !rc && i < txn->ndefs; i++) {
        mr_rel *r = txn->defs[i];
        mr_buf k = {0}, val = {0};
        rc = mr_meta_key(&k, "rel");
        if (!rc) rc = mr_key_int(&k, r->info.id);
        if (!rc) rc = mr_rel_encode(&val, r, &k);
        if (!rc) {
            MDB_val mk = {k.len, k.p}, mv = {val.len, val.p};
            int mrc = mdb_put(txn->t, dbi, &mk, &mv, 0);
            if (mrc) rc = mr_lmdb_err(mrc, "writing a table descriptor");
        }
        mr_buf_free(&k);
        mr_buf_free(&val);
    }
    if (!rc && txn->ndefs) {
        int64_t gen = 0;
        rc = mr_meta_get_int(txn->t, dbi, "rels_gen", &gen);
        if (rc >= 0) rc = mr_meta_put_int(txn->t, dbi, "rels_gen", gen + 1);
        txn->new_gen = gen + 1;
        if (!rc && txn->next_rel_id) rc = mr_meta_put_int(txn->t, dbi, "next_rel_id", txn->next_rel_id);
    }
    for (size_t id = 0; !rc && id < txn->nord; id++) {
        if (!txn->ord_dirty[id]) continue;
        char name[16];
        rc = mr_meta_put_int(txn->t, dbi, mr_ord_name(name, (uint32_t)id), txn->next_ord[id]);
    }
    if (!rc && txn->snapshot != MORAINE_NO_SNAPSHOT) rc = mr_meta_put_int(txn->t, dbi, "last_snapshot", txn->snapshot);
    if (!rc) rc = mr_counts_flush(txn->t, dbi, &txn->counts);
    if (!rc && txn->db->need_marker) {
        /* a handle that opened a new catalog without writing its format marker
         * (store.c, moraine_open): the marker, if the handle that did has not
         * committed it yet */
        int64_t fmt = 0;
        int have = mr_meta_get_int(txn->t, dbi, "format", &fmt);
        rc = have < 0 ? have : have ? 0 : mr_meta_put_int(txn->t, dbi, "format", MR_FORMAT_VERSION);
    }
    return rc;
}

/* A counter of the ducklake_snapshot row @vals (NULL when the column is
 * absent or not an integer). */
static const moraine_value *snap_counter(const mr_rel *r, const moraine_value *vals, const char *col)
{
    int i = moraine_column_index(&r->info, col);
    return i >= 0 && vals[i].type == MORAINE_INT ? &vals[i] : NULL;
}

/* A staged commit with a snapshot id is one whole DuckLake snapshot: in a
 * catalog that has the ducklake_snapshot table, the commit carries that
 * table's row for its own id, whose counters (schema_version,
 * next_catalog_id, next_file_id) are not negative and not below those of the
 * last committed snapshot's row. A commit without it would leave a last
 * snapshot no verb can build on. An import's intermediate commits may lack
 * the row (DuckLake expires snapshots: rows can begin at an expired one). */
static int whole_snapshot(moraine_txn *txn)
{
    if (txn->snapshot == MORAINE_NO_SNAPSHOT || txn->partial_snapshot) return 0;
    mr_rel *r = mr_txn_rel(txn, "ducklake_snapshot");
    if (!r || r->info.ncols == 0) return 0; /* not a DuckLake catalog: moraine's own tests, say */
    int rc = mr_snapshot_key(&txn->kb, txn->snapshot);
    if (rc) return rc;
    pending *p = mr_pending_lookup(txn, &txn->kb);
    if (!p || p->discarded)
        return mr_err(MORAINE_ESNAPSHOT,
                      "commit of snapshot %lld has no ducklake_snapshot row for it: a staged commit must be a whole DuckLake snapshot "
                      "(insert its ducklake_snapshot row, as the verbs do); nothing was written",
                      (long long)txn->snapshot);
    static const char *const counters[] = {"schema_version", "next_catalog_id", "next_file_id"};
    for (int i = 0; i < 3; i++) {
        const moraine_value *v = snap_counter(r, p->vals, counters[i]);
        if (v && v->i < 0)
            return mr_err(MORAINE_ESNAPSHOT, "ducklake_snapshot row of snapshot %lld: %s %lld is negative; nothing was written",
                          (long long)txn->snapshot, counters[i], (long long)v->i);
    }
    int64_t last = 0;
    int have = mr_meta_get_int(txn->t, txn->db->dbi, "last_snapshot", &last);
    if (have <= 0) return have;
    if ((rc = mr_snapshot_key(&txn->kb, last))) return rc;
    MDB_val k = {txn->kb.len, txn->kb.p}, v;
    int mrc = mdb_get(txn->t, txn->db->dbi, &k, &v);
    if (mrc == MDB_NOTFOUND) return 0; /* the last snapshot has no row (a catalog verify reports): nothing to compare */
    if (mrc) return mr_lmdb_err(mrc, "reading the last snapshot's row");
    if (!mr_value_ok(&txn->bounds, &v)) return mr_err(MORAINE_ECORRUPT, "the last snapshot's row runs past the end of the file");
    moraine_value *prev = calloc(r->info.ncols, sizeof *prev);
    if (!prev) return mr_err(MORAINE_ENOMEM, "out of memory");
    const uint8_t *vp = v.mv_data, *end = vp + v.mv_size;
    int64_t ord;
    size_t n = 0;
    if ((rc = mr_decode_header(&vp, end, k.mv_data, k.mv_size)) == 0) rc = mr_decode_row(&vp, end, &ord, prev, r->info.ncols, &n);
    if (!rc && n != r->info.ncols) rc = mr_err(MORAINE_ECORRUPT, "the last snapshot's row has %zu columns", n);
    if (rc) {
        char m[400];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        rc = mr_err(rc, "ducklake_snapshot row S(%lld) is damaged: %s", (long long)last, m);
    }
    for (int i = 0; !rc && i < 3; i++) {
        const moraine_value *now = snap_counter(r, p->vals, counters[i]), *before = snap_counter(r, prev, counters[i]);
        if (now && before && now->i < before->i)
            rc = mr_err(MORAINE_ESNAPSHOT, "ducklake_snapshot row of snapshot %lld: %s %lld is below %lld of the last snapshot %lld; nothing was written",
                        (long long)txn->snapshot, counters[i], (long long)now->i, (long long)before->i, (long long)last);
    }
    free(prev);
    return rc;
}

void mr_txn_partial_snapshot(moraine_txn *txn, int partial) { txn->partial_snapshot = partial; }

uint64_t mr_txn_lmdb_id(const moraine_txn *txn) { return txn && txn->t ? (uint64_t)mdb_txn_id(txn->t) : 0; }

int moraine_txn_partial(moraine_txn *txn, int partial)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "moraine_txn_partial: no transaction");
    mr_txn_partial_snapshot(txn, partial != 0);
    return 0;
}

int moraine_txn_commit(moraine_txn *txn)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "NULL transaction");
    moraine_db *db = txn->db;
    int prc = mr_same_process(db);
    if (prc) {
        mr_txn_forget(txn);
        return mr_err(prc, "%s", moraine_errmsg());
    }
    int rc = txn->failed ? mr_err(txn->failed, "%s", txn->failmsg) : 0;
    /* a catalog of an older format takes no commit: its records would be mixed with format-5 ones */
    if (!rc && (rc = mr_format_check(db, txn->t, "writes"))) rc = mr_err(rc, "%s; nothing was written", moraine_errmsg());
    if (!rc) rc = whole_snapshot(txn);
    if (!rc) rc = flush(txn);
    if (rc) {
        if (rc == MORAINE_EMAPFULL && db->opts.map_size < db->opts.max_map_size)
            rc = mr_err(MORAINE_EMAPFULL, "the commit does not fit in the catalog's map of %zu bytes (it doubles before a commit "
                        "while more than half is in use, up to max_map_size %zu): open the catalog with a larger map_size for a "
                        "commit this large, or commit in smaller parts; nothing was written", db->opts.map_size, db->opts.max_map_size);
        else if (rc == MORAINE_EMAPFULL)
            rc = mr_err(MORAINE_EMAPFULL, "the commit does not fit in the catalog's map (map size %zu bytes, max_map_size %zu): "
                        "raise max_map_size; nothing was written", db->opts.map_size, db->opts.max_map_size);
        mr_txn_cursor_close(txn);
        mr_int_cache_end(db->env, txn->ic_ticket, 0); /* before the abort: LMDB's writer lock still held */
        mdb_txn_abort(txn->t);
        mr_writer_done(db->sh);
        db->writer = NULL;
        mr_txn_free(txn);
        return rc;
    }
    mr_txn_cursor_close(txn);
    /* no transaction is taken for this one once LMDB's writer lock is free
     * (the next write transaction is the same MDB_txn object), and what it
     * wrote becomes the cache's only if no other registered since */
    mr_int_cache_detach(db->env, txn->ic_ticket);
    int mrc = mdb_txn_commit(txn->t);
    mr_int_cache_end(db->env, txn->ic_ticket, mrc == 0);
    mr_writer_done(db->sh);
    db->writer = NULL;
    /* the environment may have been opened no_sync by another handle */
    if (!mrc) db->need_marker = 0; /* the marker is in the store now */
    if (!mrc && db->sh->no_sync && !db->opts.no_sync) mrc = mdb_env_sync(db->env, 1);
    if (!mrc) dead_reader_check(db->sh);
    if (mrc) {
        mr_txn_free(txn);
        return mrc == MDB_MAP_FULL ? mr_err(MORAINE_EMAPFULL, "the commit does not fit in the catalog's map: raise max_map_size; nothing was written")
                                   : mr_lmdb_err(mrc, "committing");
    }
    /* descriptors become the handle's (they are in the store now) */
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < txn->ndefs; i++) {
        if (mr_rels_add(db, txn->defs[i]) == 0) txn->defs[i] = NULL;
    }
    size_t kept = 0;
    for (size_t i = 0; i < txn->ndefs; i++)
        if (txn->defs[i]) txn->defs[kept++] = txn->defs[i];
    /* the handle holds every descriptor of the generation this commit wrote
     * (it loaded the store's at begin, under the writer lock); if one could
     * not be added, the next read reloads them all */
    if (txn->ndefs && kept == 0) db->rels_gen = (uint64_t)txn->new_gen;
    txn->ndefs = kept;
    pthread_mutex_unlock(&db->mu);
    mr_txn_free(txn);
    return 0;
}
