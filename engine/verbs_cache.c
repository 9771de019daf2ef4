/*
 * verbs_cache.c — the handle's cache of the tables its last verb commit
 * wrote (issue 18, target (e): one-file commits).
 *
 * A verb transaction's checking model reads, for each table a verb names,
 * its ducklake_table row, live columns, partition and sort specs,
 * ducklake_table_stats row and ducklake_table_column_stats rows, and keeps
 * them (mv_reads, verbs_catalog.c) for the commit, which copies them when it
 * reads the same LMDB snapshot. After a commit, the committing handle knows
 * what a read of the new snapshot gives for those tables: the same rows but
 * for the stats rows the commit updated in place. So when a commit only
 * added data files (add_data_files, on tables that already had a
 * ducklake_table_stats row, so every stats row it wrote is an UPDATE at a
 * known place), the kept reads are brought up to date (the stats as written,
 * each column stats row decoded from the values written: mv_cstats_refresh)
 * and kept on the handle (db->vcache) with the LMDB transaction id of the
 * commit. The next moraine_tx_begin on the handle takes them when its read
 * is of that very LMDB transaction (mdb_txn_id: no other write since, by any
 * handle or process; LMDB's ids only grow) and of the same catalog snapshot;
 * otherwise the cache is dropped. The model's start (the newest snapshot's
 * counters, its live schemas) is kept alike. Anything else (a catalog verb, a table
 * created, deleted from, compacted, a first insert, reads made on another
 * snapshot) caches nothing.
 */
#include "verbs_internal.h"
#include <stdlib.h>
#include <string.h>

void mr_verbs_cache_free(moraine_db *db)
{
    if (!db->vcache) return;
    mv_reads_free(db->vcache);
    free(db->vcache);
    db->vcache = NULL;
}

void mv_cache_take(moraine_db *db, mv_reads *r, uint64_t txn)
{
    pthread_mutex_lock(&db->mu);
    mv_reads *c = db->vcache;
    db->vcache = NULL;
    pthread_mutex_unlock(&db->mu);
    if (!c) return;
    if (txn && c->txn == txn && c->has_base && !c->off && c->n && !r->n && !r->has_base) {
        *r = *c;
        r->seeded = 1;
        free(c);
        return;
    }
    mv_reads_free(c); /* of another snapshot: something was written since */
    free(c);
}

/* The commit model's table of id @id, or NULL. */
static tstate *table_of(model *m, int64_t id)
{
    for (size_t i = 0; i < m->ntables; i++)
        if (m->tables[i].table_id == id) return &m->tables[i];
    return NULL;
}

int mv_cache_prepare(moraine_tx *tx, model *m)
{
    mv_reads *r = &tx->reads;
    /* the commit used the kept reads: the same LMDB snapshot and catalog snapshot */
    if (!tx->nverbs || !r->n || !r->has_base || !m->wrote_snapshot || r->off || !m->rd || !m->rd->txn || r->txn != (uint64_t)mdb_txn_id(m->rd->txn) || r->base != m->base) return 0;
    if (m->schema_changed || m->ncreated_schema_names || m->ndropped_schemas || m->ndropped_views || m->ncreated_views) return 0;
    for (size_t i = 0; i < tx->nverbs; i++)
        if (tx->verbs[i].kind != V_ADD_FILES) return 0;
    if (m->ntables != r->n) return 0;
    for (size_t i = 0; i < r->n; i++) {
        mv_loaded *l = &r->t[i];
        tstate *t = table_of(m, l->table_id);
        if (!t || !l->has_table || !l->has_stats || !l->has_cst || l->stats_ord < 0) return 0;
        if (!t->live || t->created || t->deleted || t->altered || t->dropped || t->compacted || t->renamed || t->schema_row || t->dropped_any ||
            t->stats_dirty || !t->inserted || !t->cst_loaded || !t->cst_base_stats || t->stats_ord != l->stats_ord)
            return 0;
    }
    /* every check passed: bring each table's reads to what the commit wrote */
    for (size_t i = 0; i < r->n; i++) {
        mv_loaded *l = &r->t[i];
        tstate *t = table_of(m, l->table_id);
        if (mv_cstats_refresh(m, t, l)) return 0; /* half refreshed: mv_cache_put is not called, the reads go with the transaction */
        /* ducklake_table_stats, as emit_snapshot wrote it in place */
        l->record_count = t->record_count, l->next_row_id = t->next_row_id, l->file_size_bytes = t->file_size_bytes;
    }
    /* the new snapshot's counters; its live schemas are the base's (no verb changed one) */
    r->next_catalog_id = m->wrote_catalog_id, r->next_file_id = m->wrote_file_id, r->schema_version = m->wrote_schema_version;
    return 1;
}

void mv_cache_put(moraine_tx *tx, uint64_t txnid, int64_t snap)
{
    moraine_db *db = tx->db;
    mv_reads *c = malloc(sizeof *c);
    if (!c) return; /* nothing cached: the next transaction reads the store */
    *c = tx->reads;
    c->txn = txnid, c->base = snap, c->seeded = 0, c->off = 0;
    memset(&tx->reads, 0, sizeof tx->reads);
    pthread_mutex_lock(&db->mu);
    mv_reads *old = db->vcache;
    db->vcache = c;
    pthread_mutex_unlock(&db->mu);
    if (old) {
        mv_reads_free(old);
        free(old);
    }
}
