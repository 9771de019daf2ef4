/*
 * history_rewrite.c — rewriting the past as DuckLake does (moraine.h,
 * "history rewrites"): delete a stored version or snapshot row, insert a
 * version at or below the catalog's last snapshot. Used by a sync to replay
 * ducklake_expire_snapshots, ducklake_merge_adjacent_files and the other
 * calls that change rows in place (docs/sync.md).
 *
 * These calls write straight into the staged commit's LMDB transaction, so
 * they must come before the commit collects staged rows (which are written at
 * commit and could otherwise meet or miss what these calls changed); counts
 * of key ranges are kept as every commit keeps them (count.c).
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int values_equal(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case MORAINE_NULL: return 1;
    case MORAINE_INT:
    case MORAINE_BOOL: return a->i == b->i;
    case MORAINE_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    default: return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
    }
}

/* Common checks: a usable commit with no staged rows yet, relation @name
 * defined with columns; *last receives the catalog's last snapshot. */
static int prelude(moraine_txn *txn, const char *name, mr_rel **rel, int64_t *last)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    if (mr_txn_staged(txn))
        return mr_err(MORAINE_ETXN, "history rewrites come first in a commit: this one already staged rows (insert, end)");
    if (name) {
        mr_rel *r = mr_txn_rel(txn, name);
        if (!r) return mr_err(MORAINE_ENOTFOUND, "table '%s' is not defined in this catalog", name);
        if (r->info.ncols == 0) return mr_err(MORAINE_EINVAL, "table '%s' was defined without columns", name);
        *rel = r;
    }
    int have = mr_meta_get_int(mr_txn_lmdb(txn), mr_txn_dbi(txn), "last_snapshot", last);
    if (have < 0) return have;
    if (!have) return mr_err(MORAINE_ESNAPSHOT, "the catalog has no snapshot yet: there is no history to rewrite");
    /* a rewinding commit of snapshot S rewrites up to S - 1 (moraine_txn_rewind); S > last (commit.c) */
    if (mr_txn_rewinding(txn)) *last = mr_txn_snapshot(txn) - 1;
    return 0;
}

int moraine_txn_rewind(moraine_txn *txn)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "moraine_txn_rewind: no transaction");
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    if (mr_txn_snapshot(txn) == MORAINE_NO_SNAPSHOT)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "a rewinding commit needs a snapshot id: it becomes the catalog's last"));
    if (mr_txn_staged(txn))
        return mr_txn_fail(txn, mr_err(MORAINE_ETXN, "history rewrites come first in a commit: this one already staged rows (insert, end)"));
    mr_txn_set_rewind(txn, 1);
    return 0;
}

/* An integer snapshot column at or below @last (and >= @lo). */
static int past_snapshot(const mr_rel *r, const moraine_value *row, int col, int64_t lo, int64_t last, const char *desc)
{
    const moraine_value *v = &row[col];
    if (v->type != MORAINE_INT)
        return mr_err(MORAINE_ESNAPSHOT, "%s row %s: column '%s' must be an integer snapshot id", r->info.name, desc, r->names[col]);
    if (v->i > last)
        return mr_err(MORAINE_ESNAPSHOT, "%s row %s: %s %lld is above the catalog's last snapshot %lld: only history at or below it "
                      "is rewritten", r->info.name, desc, r->names[col], (long long)v->i, (long long)last);
    if (v->i < lo)
        return mr_err(MORAINE_ESNAPSHOT, "%s row %s: %s %lld is below %lld", r->info.name, desc, r->names[col], (long long)v->i,
                      (long long)lo);
    return 0;
}

/* The key a version is stored under: the snapshot key, the current key (end
 * NULL) or the history key. */
static int version_key(const mr_rel *r, const moraine_value *row, int64_t ord, mr_buf *k)
{
    if (r->info.placement == MORAINE_PLACE_SNAPSHOT) return mr_snapshot_key(k, row[r->keycols[0]].i);
    if (row[r->info.end_col].type == MORAINE_NULL) return mr_current_key(k, r, row, ord);
    return mr_history_key(k, r, row, ord);
}

/* Deletes the entry under @k (counted). */
static int del_entry(moraine_txn *txn, const mr_rel *r, const mr_buf *k)
{
    MDB_val key = {k->len, k->p};
    int mrc = mdb_del(mr_txn_lmdb(txn), mr_txn_dbi(txn), &key, NULL);
    if (mrc) return mr_lmdb_err(mrc, "deleting a version");
    return mr_txn_count(txn, r, k->p, k->len, -1);
}

int moraine_txn_delete_version(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord)
{
    mr_rel *r = NULL;
    int64_t last = 0;
    int rc = prelude(txn, name, &r, &last);
    if (rc) return txn ? mr_txn_fail(txn, rc) : rc;
    if (!row) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: NULL row", name));
    if (r->info.placement != MORAINE_PLACE_TEMPORAL && r->info.placement != MORAINE_PLACE_SNAPSHOT)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s is not a temporal table: %s", name,
                                       r->info.placement == MORAINE_PLACE_CHILD ? "its rows go with their parent's version"
                                                                                : "delete its rows by position (delete_row)"));
    if ((rc = mr_check_value(r, row, ncols, ord))) return mr_txn_fail(txn, rc);
    char desc[256];
    mr_describe_row(r, row, ncols, desc, sizeof desc);
    if (r->info.placement == MORAINE_PLACE_SNAPSHOT) {
        if ((rc = past_snapshot(r, row, r->keycols[0], INT64_MIN, last, desc))) return mr_txn_fail(txn, rc);
        if (row[r->keycols[0]].i == last && !mr_txn_rewinding(txn))
            return mr_txn_fail(txn, mr_err(MORAINE_ESNAPSHOT, "ducklake_snapshot row %s: snapshot %lld is the catalog's last, which "
                                           "DuckLake never expires", desc, (long long)last));
    } else {
        if ((rc = past_snapshot(r, row, r->info.begin_col, INT64_MIN, last, desc))) return mr_txn_fail(txn, rc);
        if (row[r->info.end_col].type != MORAINE_NULL &&
            (rc = past_snapshot(r, row, r->info.end_col, row[r->info.begin_col].i, last, desc)))
            return mr_txn_fail(txn, rc);
    }
    mr_buf k = {0};
    moraine_value *stored = calloc(r->info.ncols, sizeof *stored);
    if (!stored) return mr_txn_fail(txn, mr_err(MORAINE_ENOMEM, "out of memory"));
    rc = version_key(r, row, ord, &k);
    MDB_val key = {k.len, k.p}, v;
    int mrc = rc ? 0 : mdb_get(mr_txn_lmdb(txn), mr_txn_dbi(txn), &key, &v);
    if (!rc && mrc == MDB_NOTFOUND)
        rc = mr_err(MORAINE_ENOTFOUND, "%s row %s: no such version in the catalog (its key, begin_snapshot and end_snapshot find "
                    "none)", name, desc);
    else if (!rc && mrc)
        rc = mr_lmdb_err(mrc, name);
    if (!rc && !mr_value_ok(mr_txn_bounds(txn), &v))
        rc = mr_err(MORAINE_ECORRUPT, "%s row %s: the stored value runs past the end of the file", name, desc);
    if (!rc) {
        const uint8_t *p = v.mv_data, *end = p + v.mv_size;
        int64_t sord = 0;
        size_t n = 0;
        rc = mr_decode_header(&p, end, k.p, k.len);
        if (!rc) rc = mr_decode_row(&p, end, &sord, stored, r->info.ncols, &n);
        if (!rc && n != r->info.ncols) rc = mr_err(MORAINE_ECORRUPT, "%s row %s: the stored version has %zu columns", name, desc, n);
        for (size_t i = 0; !rc && i < r->info.ncols; i++)
            if (!values_equal(&stored[i], &row[i]))
                rc = mr_err(MORAINE_EINVAL, "%s row %s: the stored version differs in column '%s': nothing deleted", name, desc,
                            r->names[i]);
    }
    free(stored);
    if (!rc) rc = del_entry(txn, r, &k);
    mr_buf_free(&k);
    return rc ? mr_txn_fail(txn, rc) : 0;
}

int moraine_txn_delete_snapshot(moraine_txn *txn, int64_t snapshot_id)
{
    mr_rel *r = NULL;
    int64_t last = 0;
    int rc = prelude(txn, "ducklake_snapshot", &r, &last);
    if (rc) return txn ? mr_txn_fail(txn, rc) : rc;
    if (snapshot_id > last || (snapshot_id == last && !mr_txn_rewinding(txn)))
        return mr_txn_fail(txn, mr_err(MORAINE_ESNAPSHOT, "snapshot %lld is %s the catalog's last snapshot %lld: %s", (long long)snapshot_id,
                                       snapshot_id == last ? "" : "above", (long long)last,
                                       snapshot_id == last ? "DuckLake never expires its newest snapshot" : "only history at or below it is rewritten"));
    mr_buf k = {0};
    rc = mr_snapshot_key(&k, snapshot_id);
    MDB_val key = {k.len, k.p}, v;
    int mrc = rc ? 0 : mdb_get(mr_txn_lmdb(txn), mr_txn_dbi(txn), &key, &v);
    if (!rc && mrc == MDB_NOTFOUND) rc = mr_err(MORAINE_ENOTFOUND, "the catalog has no ducklake_snapshot row for snapshot %lld", (long long)snapshot_id);
    else if (!rc && mrc) rc = mr_lmdb_err(mrc, "ducklake_snapshot");
    if (!rc) rc = del_entry(txn, r, &k);
    mr_buf_free(&k);
    return rc ? mr_txn_fail(txn, rc) : 0;
}

typedef struct {
    mr_rel *rel;
    uint64_t nrows;
    int64_t last_ord; /* the ord of the group's last row (a child row stores its ord as the difference) */
    mr_buf bytes;
} child_group;

static int cmp_child_group(const void *a, const void *b)
{
    const child_group *x = a, *y = b;
    return x->rel->info.id < y->rel->info.id ? -1 : x->rel->info.id > y->rel->info.id;
}

/* Encodes @children of parent @r (key in @row) into groups, one per child
 * relation, sorted by relation id as commits write them (codec.md). */
static int encode_children(moraine_txn *txn, mr_rel *r, const moraine_value *row, const char *desc, const moraine_child_row *children,
                           size_t nchildren, child_group **out, size_t *nout)
{
    child_group *g = NULL;
    size_t ng = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < nchildren; i++) {
        const moraine_child_row *c = &children[i];
        mr_rel *cr = c->name ? mr_txn_rel(txn, c->name) : NULL;
        if (!cr) {
            rc = mr_err(MORAINE_ENOTFOUND, "%s row %s: child table '%s' is not defined", r->info.name, desc, c->name ? c->name : "(NULL)");
            break;
        }
        if (cr->info.placement != MORAINE_PLACE_CHILD || !cr->info.parent || strcmp(cr->info.parent, r->info.name) != 0) {
            rc = mr_err(MORAINE_EINVAL, "%s row %s: '%s' is not a child table of %s", r->info.name, desc, c->name, r->info.name);
            break;
        }
        if (!c->row) {
            rc = mr_err(MORAINE_EINVAL, "%s row %s: a %s row is NULL", r->info.name, desc, c->name);
            break;
        }
        int64_t ord = c->ord;
        if ((rc = mr_check_value(cr, c->row, c->ncols, ord))) break;
        int nk = r->info.placement == MORAINE_PLACE_SNAPSHOT ? 1 : r->nkey;
        if (cr->nkey != nk) {
            rc = mr_err(MORAINE_EINVAL, "%s row %s: child table %s has %d key columns, its parent %d", r->info.name, desc, c->name, cr->nkey, nk);
            break;
        }
        for (int j = 0; !rc && j < nk; j++) {
            if (!values_equal(&c->row[cr->parentkey[j]], &row[r->keycols[j]])) {
                char cdesc[256];
                mr_describe_row(cr, c->row, c->ncols, cdesc, sizeof cdesc);
                rc = mr_err(MORAINE_EINVAL, "%s row %s: child %s row %s belongs to another %s row (column '%s')", r->info.name, desc,
                            c->name, cdesc, r->info.name, cr->names[cr->parentkey[j]]);
            }
        }
        if (rc) break;
        if ((rc = mr_txn_take_ord(txn, cr, ord, &ord))) break;
        child_group *grp = NULL;
        for (size_t j = 0; j < ng; j++)
            if (g[j].rel == cr) grp = &g[j];
        if (!grp) {
            child_group *ngp = realloc(g, (ng + 1) * sizeof *ngp);
            if (!ngp) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            g = ngp;
            grp = &g[ng++];
            memset(grp, 0, sizeof *grp);
            grp->rel = cr;
        }
        mr_keymap km;
        if ((rc = mr_child_keymap(cr, r, &km))) break;
        rc = mr_encode_child_row(&grp->bytes, grp->nrows ? grp->last_ord : 0, ord, c->row, c->ncols, &km);
        grp->nrows++;
        grp->last_ord = ord;
    }
    if (ng > 1) qsort(g, ng, sizeof *g, cmp_child_group);
    *out = g;
    *nout = ng;
    return rc;
}

int moraine_txn_insert_version(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord,
                               const moraine_child_row *children, size_t nchildren)
{
    mr_rel *r = NULL;
    int64_t last = 0;
    int rc = prelude(txn, name, &r, &last);
    if (rc) return txn ? mr_txn_fail(txn, rc) : rc;
    if (!row) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: NULL row", name));
    if (nchildren && !children) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: NULL children", name));
    if (r->info.placement != MORAINE_PLACE_TEMPORAL && r->info.placement != MORAINE_PLACE_SNAPSHOT)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s is not a temporal table: %s", name,
                                       r->info.placement == MORAINE_PLACE_CHILD ? "its rows come with their parent's version"
                                                                                : "put its rows by position (put_row)"));
    if ((rc = mr_check_value(r, row, ncols, ord))) return mr_txn_fail(txn, rc);
    char desc[256];
    mr_describe_row(r, row, ncols, desc, sizeof desc);
    if (r->info.placement == MORAINE_PLACE_SNAPSHOT) {
        rc = past_snapshot(r, row, r->keycols[0], 0, last, desc);
    } else {
        rc = past_snapshot(r, row, r->info.begin_col, 0, last, desc);
        if (!rc && row[r->info.end_col].type != MORAINE_NULL) rc = past_snapshot(r, row, r->info.end_col, row[r->info.begin_col].i, last, desc);
        for (int i = 0; !rc && i < r->nkey; i++) {
            moraine_type t = row[r->keycols[i]].type;
            if (t != MORAINE_INT && t != MORAINE_STR && t != MORAINE_NULL)
                rc = mr_err(MORAINE_EINVAL, "%s row %s: key column '%s' must be an integer, a string or NULL", name, desc, r->names[r->keycols[i]]);
        }
    }
    if (rc) return mr_txn_fail(txn, rc);
    if ((rc = mr_txn_take_ord(txn, r, ord, &ord))) return mr_txn_fail(txn, rc);
    mr_buf k = {0}, v = {0};
    child_group *groups = NULL;
    size_t ngroups = 0;
    rc = version_key(r, row, ord, &k);
    if (!rc && k.len > MR_MAX_KEY)
        rc = mr_err(MORAINE_EINVAL, "%s row %s: key of %zu bytes is longer than LMDB's %d", name, desc, k.len, MR_MAX_KEY);
    if (!rc && r->info.placement == MORAINE_PLACE_TEMPORAL && row[r->info.end_col].type == MORAINE_NULL) {
        /* a live version must fit in history too, or it could never be ended */
        moraine_value *tmp = malloc(r->info.ncols * sizeof *tmp);
        mr_buf hk = {0};
        if (!tmp) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        if (!rc) {
            memcpy(tmp, row, r->info.ncols * sizeof *tmp);
            tmp[r->info.end_col].type = MORAINE_INT;
            tmp[r->info.end_col].i = INT64_MAX;
            rc = mr_history_key(&hk, r, tmp, ord);
            if (!rc && hk.len > MR_MAX_KEY)
                rc = mr_err(MORAINE_EINVAL, "%s row %s: its key (%zu bytes in history) is longer than LMDB's %d", name, desc, hk.len, MR_MAX_KEY);
        }
        free(tmp);
        mr_buf_free(&hk);
    }
    if (!rc) rc = encode_children(txn, r, row, desc, children, nchildren, &groups, &ngroups);
    if (!rc) rc = mr_value_begin(&v);
    if (!rc) rc = mr_encode_row(&v, ord, row, ncols);
    for (size_t i = 0; !rc && i < ngroups; i++) {
        rc = mr_put_uvarint(&v, groups[i].rel->info.id);
        if (!rc) rc = mr_put_uvarint(&v, groups[i].nrows);
        if (!rc) rc = mr_put_uvarint(&v, groups[i].bytes.len);
        if (!rc) rc = mr_buf_put(&v, groups[i].bytes.p, groups[i].bytes.len);
    }
    if (!rc) {
        mr_value_seal(&v, 0, k.p, k.len);
        MDB_val key = {k.len, k.p}, val = {v.len, v.p};
        int mrc = mdb_put(mr_txn_lmdb(txn), mr_txn_dbi(txn), &key, &val, MDB_NOOVERWRITE);
        if (mrc == MDB_KEYEXIST)
            rc = mr_err(MORAINE_EEXIST, "%s row %s: %s", name, desc,
                        r->info.placement == MORAINE_PLACE_SNAPSHOT ? "the snapshot is already recorded"
                        : row[r->info.end_col].type == MORAINE_NULL ? "a live version with this key already exists"
                                                                     : "a version with the same key, begin and end already exists");
        else if (mrc)
            rc = mr_lmdb_err(mrc, name);
        else
            rc = mr_txn_count(txn, r, k.p, k.len, +1);
    }
    for (size_t i = 0; i < ngroups; i++) mr_buf_free(&groups[i].bytes);
    free(groups);
    mr_buf_free(&k);
    mr_buf_free(&v);
    return rc ? mr_txn_fail(txn, rc) : 0;
}
