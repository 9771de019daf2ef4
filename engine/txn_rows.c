/*
 * txn_rows.c — the row operations of a staged write transaction: insert
 * (temporal rows, snapshots, children attached to their parent's pending
 * entry, non-temporal rows), end (a live row becomes a history version),
 * discard (a row this commit inserted is taken back), put_row and
 * delete_row (non-temporal tables), and the per-table row positions (ord).
 * Rows of non-temporal tables are written straight into the LMDB
 * transaction; the rest wait in pending entries for the commit (commit.c).
 */
#include "txn_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pending entries ---- */

/* Copies a row: the values and every string they point to, in one block of
 * the commit's arena (e->vals; e->store stays NULL). */
static int copy_row(moraine_txn *txn, pending *e, const moraine_value *row, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (row[i].type == MORAINE_STR || row[i].type == MORAINE_JSON) bytes += row[i].len;
    size_t head = (n ? n : 1) * sizeof *e->vals;
    if (bytes > SIZE_MAX - head) return mr_err(MORAINE_ENOMEM, "out of memory");
    e->vals = mr_txn_alloc(txn, head + bytes);
    if (!e->vals) return mr_err(MORAINE_ENOMEM, "out of memory");
    e->arena |= MR_PA_VALS;
    char *store = (char *)e->vals + head;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        e->vals[i] = row[i];
        if (row[i].type == MORAINE_STR || row[i].type == MORAINE_JSON) {
            if (row[i].len) memcpy(store + off, row[i].s, row[i].len);
            e->vals[i].s = store + off;
            off += row[i].len;
        }
    }
    e->ncols = n;
    return 0;
}

/* A new, zeroed child group of @e. Groups grow only here: 4 at first, then
 * doubling whenever their number reaches a power of two. NULL: out of memory. */
static group *group_add(pending *e)
{
    size_t n = e->ngroups;
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        size_t cap = n == 0 ? 4 : n * 2;
        group *gs = realloc(e->groups, cap * sizeof *gs);
        if (!gs) return NULL;
        e->groups = gs;
    }
    group *g = &e->groups[e->ngroups++];
    memset(g, 0, sizeof *g);
    return g;
}

/* A live row's target is its identity: the same bytes (in the arena), not a copy. */
static void target_is_ident(pending *e)
{
    if (!(e->arena & MR_PA_TARGET)) mr_buf_free(&e->target);
    e->target = (mr_buf){.p = e->ident.p, .len = e->ident.len, .cap = e->ident.len};
    e->arena |= MR_PA_TARGET;
}

/* Makes @e's target its own buffer again (before it is rewritten). */
static void target_detach(pending *e)
{
    if (e->arena & MR_PA_TARGET) {
        e->target = (mr_buf){0};
        e->arena &= ~MR_PA_TARGET;
    }
}

/* Names row @row of @r for a message (built only when a message needs it). */
static const char *describe(char *out, size_t outlen, const mr_rel *r, const moraine_value *row, size_t n)
{
    mr_describe_row(r, row, n, out, outlen);
    return out;
}

/* The ord of the last of the @nrows child rows between @p and @gend (a
 * stored group, its checksum verified), which the next row appended to the
 * group stores its ord against (docs/codec.md); 0 for no row.
 * MORAINE_ECORRUPT when a row's length or ord does not read. */
static int last_child_ord(const uint8_t *p, const uint8_t *gend, uint64_t nrows, int64_t *last)
{
    int64_t ord = 0;
    for (uint64_t i = 0; i < nrows; i++) {
        const uint8_t *rend, *q;
        uint64_t d;
        int rc = mr_child_row_span(&p, gend, &rend);
        if (rc) return rc;
        q = p;
        if ((rc = mr_uvarint(&q, rend, &d))) return rc;
        ord = mr_child_ord(ord, d);
        p = rend;
    }
    if (p != gend) return mr_err(MORAINE_ECORRUPT, "value: child group has %lld bytes after its %llu rows", (long long)(gend - p), (unsigned long long)nrows);
    *last = ord;
    return 0;
}

/* Loads the stored value at @key (a live row or a snapshot) into a pending
 * entry so it can gain children or be ended. Returns 1 when found, 0 when not. */
static int load_pending(moraine_txn *txn, const mr_buf *key, pending **out)
{
    MDB_val k = {key->len, key->p}, v;
    int mrc = mdb_get(txn->t, txn->db->dbi, &k, &v);
    if (mrc == MDB_NOTFOUND) return 0;
    if (mrc) return mr_lmdb_err(mrc, "reading a stored row");
    if (!mr_value_ok(&txn->bounds, &v)) return mr_err(MORAINE_ECORRUPT, "a stored value runs past the end of the file: LMDB's pages are damaged");
    /* the relation id is the element after the subspace byte for C keys; snapshots are ducklake_snapshot */
    mr_rel *r = NULL;
    const uint8_t *kp = key->p + 1, *kend = key->p + key->len;
    if (key->p[0] == MR_SUB_SNAPSHOT) {
        r = mr_txn_rel(txn, "ducklake_snapshot");
    } else {
        moraine_value idv;
        mr_buf scratch = {0};
        int rc = mr_key_next(&kp, kend, &idv, &scratch);
        mr_buf_free(&scratch);
        if (rc) return rc;
        r = idv.type == MORAINE_INT ? mr_rel_by_id(txn->db, (uint64_t)idv.i) : NULL;
    }
    char desc[200];
    if (!r) {
        mr_key_describe(key->p, key->len, desc, sizeof desc);
        return mr_err(MORAINE_ECORRUPT, "stored row %s names an unknown table", desc);
    }
    pending *e = mr_pending_new(txn, r, 0);
    if (!e) return mr_err(MORAINE_ENOMEM, "out of memory");
    int rc = 0;
    e->store = malloc(v.mv_size ? v.mv_size : 1);
    e->vals = calloc(r->info.ncols ? r->info.ncols : 1, sizeof *e->vals);
    if (!e->store || !e->vals) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    if (!rc) {
        memcpy(e->store, v.mv_data, v.mv_size);
        const uint8_t *p = e->store, *end = p + v.mv_size;
        rc = mr_decode_header(&p, end, key->p, key->len);
        if (!rc) rc = mr_decode_row(&p, end, &e->ord, e->vals, r->info.ncols, &e->ncols);
        if (!rc && e->ncols != r->info.ncols) rc = mr_err(MORAINE_ECORRUPT, "stored row has %zu columns, table %s has %zu", e->ncols, r->info.name, r->info.ncols);
        while (!rc && p < end) {
            uint64_t id, nrows;
            const uint8_t *gend;
            if ((rc = mr_group_head(&p, end, &id, &nrows, &gend))) break;
            group *g = group_add(e);
            if (!g) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            g->rel_id = (uint32_t)id;
            g->nrows = nrows;
            if (!(rc = mr_buf_put(&g->bytes, p, (size_t)(gend - p)))) rc = last_child_ord(p, gend, nrows, &g->last_ord);
            p = gend;
        }
        if (rc == MORAINE_ECORRUPT) {
            char m[512];
            snprintf(m, sizeof m, "%s", moraine_errmsg());
            mr_key_describe(key->p, key->len, desc, sizeof desc);
            rc = mr_err(MORAINE_ECORRUPT, "stored row %s of %s: %s", desc, r->info.name, m);
        }
    }
    e->from_store = 1;
    if (!rc) rc = mr_pending_set_ident(txn, e, key->p, key->len);
    if (!rc) target_is_ident(e);
    if (!rc) rc = mr_pending_add(txn, e);
    if (rc) {
        mr_pending_free(e);
        return rc;
    }
    *out = e;
    return 1;
}

/* ---- relations ---- */

/* The relation @name as this commit sees it (mr_txn_rel), through a small
 * cache of the last relations named (slot by length and two characters,
 * confirmed by comparing the whole name); moraine_txn_define empties it.
 * A @name that is a found relation's own name (the same pointer, as the
 * verbs pass their relation's info.name) is that relation, uncompared. */
static mr_rel *cached_rel(moraine_txn *txn, const char *name)
{
    size_t pslot = ((uintptr_t)name >> 3) % MR_TXN_RELCACHE;
    mr_rel *known = txn->relbyptr[pslot];
    if (known && name == known->info.name) return known;
    size_t len = strlen(name);
    size_t slot = len ? (len * 31u + (unsigned char)name[len - 1] + 7u * (unsigned char)name[len / 2]) % MR_TXN_RELCACHE : 0;
    mr_rel *r = txn->relcache[slot];
    if (!r || strcmp(r->info.name, name) != 0) {
        r = mr_txn_rel(txn, name);
        if (r) txn->relcache[slot] = r;
    }
    if (r) txn->relbyptr[((uintptr_t)r->info.name >> 3) % MR_TXN_RELCACHE] = r;
    return r;
}

static int rel_of(moraine_txn *txn, const char *name, mr_rel **out)
{
    if (!name) return mr_err(MORAINE_EINVAL, "NULL table name");
    mr_rel *r = cached_rel(txn, name);
    if (!r) return mr_err(MORAINE_ENOTFOUND, "table '%s' is not defined in this catalog (define it first)", name);
    if (r->info.ncols == 0) return mr_err(MORAINE_EINVAL, "table '%s' was defined without columns; define its columns first", name);
    *out = r;
    return 0;
}

/* ---- ord counters ---- */

static int ord_slot(moraine_txn *txn, mr_rel *r, int64_t **slot)
{
    uint32_t id = r->info.id;
    if (id >= txn->nord) {
        size_t n = id + 64;
        int64_t *p = realloc(txn->next_ord, n * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        txn->next_ord = p;
        int *d = realloc(txn->ord_dirty, n * sizeof *d);
        if (!d) return mr_err(MORAINE_ENOMEM, "out of memory");
        txn->ord_dirty = d;
        for (size_t i = txn->nord; i < n; i++) {
            txn->next_ord[i] = -1;
            txn->ord_dirty[i] = 0;
        }
        txn->nord = n;
    }
    if (txn->next_ord[id] < 0) {
        char name[16];
        int64_t v = 0;
        int rc = mr_meta_get_int(txn->t, txn->db->dbi, mr_ord_name(name, id), &v);
        if (rc < 0) return rc;
        txn->next_ord[id] = rc ? v : 0;
    }
    *slot = &txn->next_ord[id];
    return 0;
}

static int take_ord(moraine_txn *txn, mr_rel *r, int64_t ord, int64_t *out)
{
    int64_t *slot = NULL;
    int rc = ord_slot(txn, r, &slot);
    if (rc) return rc;
    if (ord < -1) return mr_err(MORAINE_EINVAL, "%s: row position %lld is negative", r->info.name, (long long)ord);
    if (ord == -1) ord = *slot;
    if (ord == INT64_MAX) return mr_err(MORAINE_EINVAL, "%s: row position overflows", r->info.name);
    if (ord + 1 > *slot) {
        *slot = ord + 1;
        txn->ord_dirty[r->info.id] = 1;
    }
    *out = ord;
    return 0;
}

/* ---- insert ---- */

static int parent_ident(moraine_txn *txn, mr_rel *child, const moraine_value *row, mr_rel **parent, mr_buf *out)
{
    mr_rel *p = cached_rel(txn, child->info.parent);
    if (!p || p->info.ncols == 0) return 0;
    *parent = p;
    out->len = 0;
    int rc;
    if (p->info.placement == MORAINE_PLACE_SNAPSHOT) {
        if (row[child->parentkey[0]].type != MORAINE_INT) return 0;
        rc = mr_snapshot_key(out, row[child->parentkey[0]].i);
    } else {
        if (p->nkey != child->nkey) return 0;
        rc = mr_buf_byte(out, MR_SUB_CURRENT);
        if (!rc) rc = mr_key_int(out, p->info.id);
        for (int i = 0; !rc && i < child->nkey; i++) rc = mr_key_value(out, &row[child->parentkey[i]]);
    }
    return rc ? rc : 1;
}

/* Whether child row @row of @child names by integers the parent the last
 * child attached to (txn->pc_*): that entry, else NULL. */
static pending *parent_cached(moraine_txn *txn, const mr_rel *child, const moraine_value *row)
{
    if (txn->pc_child != child || txn->pc_nlist != txn->nlist) return NULL;
    for (int i = 0; i < child->nkey; i++) {
        const moraine_value *v = &row[child->parentkey[i]];
        if (v->type != MORAINE_INT || v->i != txn->pc_key[i]) return NULL;
    }
    return txn->pc_parent;
}

/* Remembers @pe as the parent of child row @row (only for integer parent keys:
 * strings would have to be copied to be compared later). */
static void parent_remember(moraine_txn *txn, const mr_rel *child, const moraine_value *row, pending *pe)
{
    txn->pc_child = NULL;
    if (child->nkey < 1 || child->nkey > MR_MAX_KEYCOLS) return;
    for (int i = 0; i < child->nkey; i++) {
        const moraine_value *v = &row[child->parentkey[i]];
        if (v->type != MORAINE_INT) return;
        txn->pc_key[i] = v->i;
    }
    txn->pc_child = child;
    txn->pc_parent = pe;
    txn->pc_nlist = txn->nlist;
}

static int values_equal(const moraine_value *a, const moraine_value *b);

/* Appends child row @row (@n values, position @ord) to @parent's group of
 * @child, without its parent-key cells (format 5, docs/codec.md), which must
 * equal the parent's key cells: they are how the parent was found, so a
 * difference is a fault of this build, refused (MORAINE_EINVAL) rather than
 * stored as a row it would read back changed. */
static int append_child(pending *parent, mr_rel *child, const moraine_value *row, size_t n, int64_t ord)
{
    int rc;
    group *g = NULL;
    for (size_t i = 0; i < parent->ngroups; i++)
        if (parent->groups[i].rel_id == child->info.id) g = &parent->groups[i];
    if (!g) {
        if (!(g = group_add(parent))) return mr_err(MORAINE_ENOMEM, "out of memory");
        g->rel_id = child->info.id;
        rc = mr_buf_reserve(&g->bytes, 256); /* a file's partition values or stats at once */
        if (rc) return rc;
    }
    if (!g->has_km) { /* once a group (a stored group loaded has none yet) */
        if ((rc = mr_child_keymap(child, parent->rel, &g->km))) return rc;
        g->has_km = 1;
    }
    const mr_keymap *km = &g->km;
    for (int j = 0; j < km->n; j++)
        if ((size_t)km->ccol[j] >= n || (size_t)km->pcol[j] >= parent->ncols || !values_equal(&row[km->ccol[j]], &parent->vals[km->pcol[j]]))
            return mr_err(MORAINE_EINVAL, "%s: a row embedded in a %s row of another key (column '%s')", child->info.name,
                          parent->rel->info.name, child->names[km->ccol[j]]);
    rc = mr_encode_child_row(&g->bytes, g->nrows ? g->last_ord : 0, ord, row, n, km);
    if (rc) return rc;
    g->nrows++;
    g->last_ord = ord;
    return 0;
}

static int put_rows_value(moraine_txn *txn, mr_rel *r, const moraine_value *row, size_t n, int64_t ord, unsigned flags)
{
    mr_buf v = {0};
    int rc = mr_rows_key(&txn->kb, r, ord);
    if (!rc) rc = mr_value_begin(&v);
    if (!rc) rc = mr_encode_row(&v, ord, row, n);
    if (!rc) mr_value_seal(&v, 0, txn->kb.p, txn->kb.len);
    if (!rc) {
        if (txn->kb.len > MR_MAX_KEY) rc = mr_err(MORAINE_EINVAL, "%s: key too long", r->info.name);
    }
    if (!rc) {
        MDB_val k = {txn->kb.len, txn->kb.p}, val = {v.len, v.p};
        int mrc = mr_txn_put_counted(txn, r, &k, &val, flags);
        if (mrc == MDB_KEYEXIST) rc = mr_err(MORAINE_EEXIST, "%s: a row already sits at position %lld", r->info.name, (long long)ord);
        else if (mrc) rc = mr_lmdb_err(mrc, r->info.name);
    }
    mr_buf_free(&v);
    return rc;
}

/* A table has at most one live partition spec and one live sort spec
 * (DuckLake ends the old one when it sets a new one; moraine_verify checks
 * it): a second live ducklake_partition_info / ducklake_sort_info row for the
 * same table is refused, whether the first is stored or inserted by this commit. */
static int one_live_spec(moraine_txn *txn, mr_rel *r, const moraine_value *row, size_t n)
{
    char desc[256];
    if (strcmp(r->info.name, "ducklake_partition_info") != 0 && strcmp(r->info.name, "ducklake_sort_info") != 0) return 0;
    const moraine_value *tid = &row[r->keycols[0]];
    for (size_t i = 0; i < txn->nlist; i++) {
        pending *e = txn->list[i];
        if (e->rel->info.id != r->info.id || e->ended || e->discarded || e->from_store) continue;
        if (e->vals[r->keycols[0]].type == tid->type && e->vals[r->keycols[0]].i == tid->i)
            return mr_err(MORAINE_EEXIST, "%s row %s: the table already has a live spec (inserted by this commit); end it first", r->info.name,
                          describe(desc, sizeof desc, r, row, n));
    }
    mr_buf prefix = {0};
    int rc = mr_buf_byte(&prefix, MR_SUB_CURRENT);
    if (!rc) rc = mr_key_int(&prefix, r->info.id);
    if (!rc) rc = mr_key_value(&prefix, tid);
    MDB_cursor *c = NULL;
    int mrc = rc ? 0 : mdb_cursor_open(txn->t, txn->db->dbi, &c);
    if (mrc) rc = mr_lmdb_err(mrc, "opening a cursor");
    MDB_val k = {prefix.len, prefix.p}, v;
    for (mrc = rc ? MDB_NOTFOUND : mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); !rc && mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < prefix.len || memcmp(k.mv_data, prefix.p, prefix.len) != 0) break;
        pending *head = *mr_pending_slot(txn, k.mv_data, k.mv_size);
        if (mr_pending_store_seen(head) && !mr_pending_live(head)) continue; /* ended by this commit */
        char other[200];
        mr_key_describe(k.mv_data, k.mv_size, other, sizeof other);
        rc = mr_err(MORAINE_EEXIST, "%s row %s: the table already has a live spec (%s); end it first", r->info.name,
                    describe(desc, sizeof desc, r, row, n), other);
    }
    if (c) mdb_cursor_close(c);
    mr_buf_free(&prefix);
    return rc;
}

static int insert_temporal(moraine_txn *txn, mr_rel *r, const moraine_value *row, size_t n, int64_t ord)
{
    char desc_[256];
#define desc describe(desc_, sizeof desc_, r, row, n)
    const moraine_value *b = &row[r->info.begin_col], *e = &row[r->info.end_col];
    if (txn->snapshot == MORAINE_NO_SNAPSHOT)
        return mr_err(MORAINE_EINVAL, "%s row %s: temporal rows need a commit with a snapshot id", r->info.name, desc);
    if (b->type != MORAINE_INT || b->i != txn->snapshot)
        return mr_err(MORAINE_EINVAL, "%s row %s: column 'begin_snapshot' must be this commit's snapshot %lld", r->info.name, desc,
                      (long long)txn->snapshot);
    if (e->type != MORAINE_NULL && (e->type != MORAINE_INT || e->i != txn->snapshot))
        return mr_err(MORAINE_EINVAL, "%s row %s: column 'end_snapshot' must be NULL, or this commit's snapshot %lld for a version "
                      "no snapshot sees", r->info.name, desc, (long long)txn->snapshot);
    for (int i = 0; i < r->nkey; i++)
        if (row[r->keycols[i]].type != MORAINE_INT && row[r->keycols[i]].type != MORAINE_STR && row[r->keycols[i]].type != MORAINE_NULL)
            return mr_err(MORAINE_EINVAL, "%s row %s: key column '%s' must be an integer, a string or NULL", r->info.name, desc,
                          r->names[r->keycols[i]]);
    int rc = mr_current_key(&txn->kb, r, row, ord);
    if (rc) return rc;
    if (txn->kb.len > MR_MAX_KEY)
        return mr_err(MORAINE_EINVAL, "%s row %s: key of %zu bytes is longer than LMDB's %d", r->info.name, desc, txn->kb.len, MR_MAX_KEY);
    pending *have = mr_pending_lookup(txn, &txn->kb);
    int live_elsewhere = mr_pending_live(have) != NULL;
    if (!live_elsewhere && !mr_pending_store_seen(have)) {
        MDB_val k = {txn->kb.len, txn->kb.p};
        int mrc = mr_txn_has_key(txn, &k);
        if (mrc == 0) live_elsewhere = 1;
        else if (mrc == MDB_PANIC) return mr_err(MORAINE_ENOMEM, "out of memory");
        else if (mrc != MDB_NOTFOUND) return mr_lmdb_err(mrc, r->info.name);
    }
    if (live_elsewhere && e->type == MORAINE_NULL)
        return mr_err(MORAINE_EEXIST, "%s row %s: a live row with this key already exists", r->info.name, desc);
    if (e->type == MORAINE_NULL && (rc = one_live_spec(txn, r, row, n))) return rc;
    pending *p = mr_pending_new(txn, r, ord);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    rc = copy_row(txn, p, row, n);
    if (!rc) rc = mr_pending_set_ident(txn, p, txn->kb.p, txn->kb.len);
    if (!rc && e->type == MORAINE_NULL) target_is_ident(p);
    if (!rc && e->type != MORAINE_NULL) {
        /* a version no snapshot sees goes straight to history */
        rc = mr_history_key(&p->target, r, p->vals, ord);
        p->ended = 1;
        p->history_noover = 1;
    }
    if (!rc) {
        /* a live row must fit in history too, or it could never be ended */
        mr_buf *hk = &txn->kb2;
        moraine_value saved = p->vals[r->info.end_col];
        p->vals[r->info.end_col].type = MORAINE_INT;
        p->vals[r->info.end_col].i = INT64_MAX;
        rc = mr_history_key(hk, r, p->vals, ord);
        p->vals[r->info.end_col] = saved;
        if (!rc && hk->len > MR_MAX_KEY)
            rc = mr_err(MORAINE_EINVAL, "%s row %s: its key (%zu bytes in history) is longer than LMDB's %d", r->info.name, desc, hk->len, MR_MAX_KEY);
    }
    if (!rc) rc = mr_pending_add(txn, p); /* newest: its children follow it */
    if (rc) mr_pending_free(p);
    return rc;
#undef desc
}

int moraine_txn_insert(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return mr_txn_fail(txn, rc);
    if ((rc = mr_check_value(r, row, ncols, ord))) return mr_txn_fail(txn, rc);
    if ((rc = take_ord(txn, r, ord, &ord))) return mr_txn_fail(txn, rc);
    char desc[256];
    switch (r->info.placement) {
    case MORAINE_PLACE_TEMPORAL:
        rc = insert_temporal(txn, r, row, ncols, ord);
        break;
    case MORAINE_PLACE_SNAPSHOT: {
        const moraine_value *id = &row[r->keycols[0]];
        if (id->type != MORAINE_INT || id->i != txn->snapshot) {
            rc = mr_err(MORAINE_EINVAL, "ducklake_snapshot row %s: column 'snapshot_id' must be this commit's snapshot %lld",
                        describe(desc, sizeof desc, r, row, ncols), (long long)txn->snapshot);
            break;
        }
        if ((rc = mr_snapshot_key(&txn->kb, id->i))) break;
        MDB_val k = {txn->kb.len, txn->kb.p}, v;
        if (mr_pending_lookup(txn, &txn->kb) || mdb_get(txn->t, txn->db->dbi, &k, &v) == 0) {
            rc = mr_err(MORAINE_EEXIST, "ducklake_snapshot row %s: snapshot already recorded", describe(desc, sizeof desc, r, row, ncols));
            break;
        }
        pending *p = mr_pending_new(txn, r, ord);
        if (!p) {
            rc = mr_err(MORAINE_ENOMEM, "out of memory");
            break;
        }
        rc = copy_row(txn, p, row, ncols);
        if (!rc) rc = mr_pending_set_ident(txn, p, txn->kb.p, txn->kb.len);
        if (!rc) target_is_ident(p);
        if (!rc) rc = mr_pending_add(txn, p);
        if (rc) mr_pending_free(p);
        break;
    }
    case MORAINE_PLACE_CHILD: {
        pending *pe = parent_cached(txn, r, row);
        if (pe) {
            rc = append_child(pe, r, row, ncols, ord);
            break;
        }
        mr_rel *parent = NULL;
        mr_buf *pk = &txn->kb2; /* scratch: the parent's identity */
        int found = parent_ident(txn, r, row, &parent, pk);
        if (found > 0) {
            pe = mr_pending_lookup(txn, pk);
            if (!pe) {
                found = load_pending(txn, pk, &pe);
                if (found < 0) rc = found;
            }
        } else if (found < 0) {
            rc = found;
        }
        if (rc) break;
        if (pe) parent_remember(txn, r, row, pe);
        if (pe) rc = append_child(pe, r, row, ncols, ord);
        else rc = put_rows_value(txn, r, row, ncols, ord, MDB_NOOVERWRITE); /* no live parent: kept as a loose row */
        break;
    }
    case MORAINE_PLACE_ROWS:
        rc = put_rows_value(txn, r, row, ncols, ord, MDB_NOOVERWRITE);
        break;
    }
    return rc ? mr_txn_fail(txn, rc) : 0;
}

/* ---- end ---- */

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

static int content_matches(const mr_rel *r, const moraine_value *a, const moraine_value *b)
{
    for (size_t i = 0; i < r->info.ncols; i++) {
        if ((int)i == r->info.begin_col || (int)i == r->info.end_col) continue;
        if (!values_equal(&a[i], &b[i])) return 0;
    }
    return 1;
}

/* For relations keyed by row position: find the live row with these values. */
static int find_by_content(moraine_txn *txn, mr_rel *r, const moraine_value *row, int64_t *ord)
{
    for (size_t i = 0; i < txn->nlist; i++) {
        pending *e = txn->list[i];
        if (e->rel->info.id == r->info.id && !e->ended && e->ident.p[0] == MR_SUB_CURRENT && content_matches(r, e->vals, row)) {
            *ord = e->ord;
            return 1;
        }
    }
    mr_buf prefix = {0};
    int rc = mr_buf_byte(&prefix, MR_SUB_CURRENT);
    if (!rc) rc = mr_key_int(&prefix, r->info.id);
    if (rc) return rc;
    MDB_cursor *c;
    int mrc = mdb_cursor_open(txn->t, txn->db->dbi, &c);
    if (mrc) {
        mr_buf_free(&prefix);
        return mr_lmdb_err(mrc, "opening a cursor");
    }
    moraine_value *vals = calloc(r->info.ncols, sizeof *vals);
    int found = vals ? 0 : mr_err(MORAINE_ENOMEM, "out of memory");
    MDB_val k = {prefix.len, prefix.p}, v;
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); !found && mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < prefix.len || memcmp(k.mv_data, prefix.p, prefix.len) != 0) break;
        const uint8_t *p = v.mv_data, *end = p + v.mv_size;
        int64_t o;
        size_t n;
        if ((rc = mr_decode_header(&p, end, k.mv_data, k.mv_size)) || (rc = mr_decode_row(&p, end, &o, vals, r->info.ncols, &n))) {
            found = rc;
            break;
        }
        mr_buf kb = {0};
        if (mr_current_key(&kb, r, vals, o) == 0) {
            pending *pe = mr_pending_lookup(txn, &kb);
            if (!mr_pending_store_seen(pe) && n == r->info.ncols && content_matches(r, vals, row)) {
                *ord = o;
                found = 1;
            }
        }
        mr_buf_free(&kb);
    }
    free(vals);
    mdb_cursor_close(c);
    mr_buf_free(&prefix);
    return found;
}

int moraine_txn_end(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols)
{
    return mr_txn_end_at(txn, name, row, ncols, -1);
}

/* moraine_txn_end, and for tables keyed by row position, @ord (>= 0) names the
 * row directly (the importer knows it) instead of a search by content. */
int mr_txn_end_at(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord_hint)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return mr_txn_fail(txn, rc);
    char desc[256];
    if (r->info.placement != MORAINE_PLACE_TEMPORAL)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s is not a temporal table: its rows are never ended", name));
    if (ncols != r->info.ncols)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: a row has %zu columns, the table has %zu", name, ncols, r->info.ncols));
    if (txn->snapshot == MORAINE_NO_SNAPSHOT)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: ending a row needs a commit with a snapshot id", name));
    mr_describe_row(r, row, ncols, desc, sizeof desc);
    int64_t ord = ord_hint;
    if (r->nkey == 0 && ord_hint < 0) {
        int f = find_by_content(txn, r, row, &ord);
        if (f < 0) return mr_txn_fail(txn, f);
        if (f == 0) return mr_txn_fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: no live row with these values to end", name, desc));
    }
    if ((rc = mr_current_key(&txn->kb, r, row, ord))) return mr_txn_fail(txn, rc);
    pending *head = mr_pending_lookup(txn, &txn->kb);
    pending *e = mr_pending_live(head);
    if (!e && mr_pending_store_seen(head)) return mr_txn_fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: the row is not live (already ended)", name, desc));
    if (!e) {
        int f = load_pending(txn, &txn->kb, &e);
        if (f < 0) return mr_txn_fail(txn, f);
        if (f == 0) return mr_txn_fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: no live row with this key to end", name, desc));
        e->delete_current = 1;
    }
    const moraine_value *b = &e->vals[r->info.begin_col];
    if (b->type != MORAINE_INT || b->i > txn->snapshot)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s row %s: its begin_snapshot is above snapshot %lld", name, desc, (long long)txn->snapshot));
    e->vals[r->info.end_col].type = MORAINE_INT;
    e->vals[r->info.end_col].i = txn->snapshot;
    e->ended = 1;
    e->history_noover = 1;
    if (e->from_store) e->delete_current = 1; /* also when it was loaded to gain children */
    target_detach(e);
    if ((rc = mr_history_key(&e->target, r, e->vals, e->ord))) return mr_txn_fail(txn, rc);
    if (e->target.len > MR_MAX_KEY)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s row %s: its history key of %zu bytes is longer than LMDB's %d", name, desc, e->target.len, MR_MAX_KEY));
    return 0;
}

/* The newest entry of this commit for the key of @row in keyed temporal
 * table @name (NULL when none), for the take-back calls below; *r gets the
 * table. Errors fail the commit. */
static int take_back_entry(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, mr_rel **r, pending **out)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    if ((rc = rel_of(txn, name, r))) return mr_txn_fail(txn, rc);
    if ((*r)->info.placement != MORAINE_PLACE_TEMPORAL || ncols != (*r)->info.ncols || (*r)->nkey == 0)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: only rows of keyed temporal tables can be taken back", name));
    if ((rc = mr_current_key(&txn->kb, *r, row, 0))) return mr_txn_fail(txn, rc);
    *out = mr_pending_lookup(txn, &txn->kb);
    return 0;
}

static int not_taken_back(moraine_txn *txn, const mr_rel *r, const char *name, const moraine_value *row, size_t ncols, const char *what)
{
    char desc[256];
    mr_describe_row(r, row, ncols, desc, sizeof desc);
    return mr_txn_fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: not a row this commit %s", name, desc, what));
}

/* Takes back a live row this commit inserted (the verb path: a column renamed
 * twice in one transaction keeps only its last version, as DuckLake writes
 * only the net change). Returns 0, MORAINE_ENOTLIVE when no such row was
 * inserted by this commit. */
int mr_txn_discard(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols)
{
    mr_rel *r;
    pending *e;
    int rc = take_back_entry(txn, name, row, ncols, &r, &e);
    if (rc) return rc;
    e = mr_pending_live(e);
    if (!e || e->from_store) return not_taken_back(txn, r, name, row, ncols, "inserted");
    e->discarded = 1;
    e->ended = 1; /* no longer live: a later insert of the key is allowed */
    return 0;
}

/* Takes back this commit's end of a row: the row is live again where it was
 * (the verb path: DuckLake compares a table's final sort spec with the
 * committed one only, so a committed spec that an earlier verb of the
 * transaction replaced, and that is set again, is never ended). @row: the
 * row's values, its key columns at least. Returns 0; MORAINE_ENOTLIVE when
 * the newest version of that key in this commit is not one it ended. */
int mr_txn_unend(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols)
{
    mr_rel *r;
    pending *e;
    int rc = take_back_entry(txn, name, row, ncols, &r, &e);
    if (rc) return rc;
    if (!e || !e->ended || e->discarded) return not_taken_back(txn, r, name, row, ncols, "ended");
    e->vals[r->info.end_col].type = MORAINE_NULL;
    e->ended = 0;
    e->history_noover = 0;
    if (e->from_store) e->delete_current = 0; /* written back where it is */
    target_is_ident(e);
    return 0;
}

/* ---- non-temporal rows ---- */

int moraine_txn_put_row(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return mr_txn_fail(txn, rc);
    if (r->info.placement != MORAINE_PLACE_ROWS)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s is not a non-temporal table: use insert/end", name));
    if (ord < 0) return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s: put_row needs a row position >= 0", name));
    if ((rc = mr_check_value(r, row, ncols, ord))) return mr_txn_fail(txn, rc);
    if ((rc = take_ord(txn, r, ord, &ord))) return mr_txn_fail(txn, rc);
    rc = put_rows_value(txn, r, row, ncols, ord, 0);
    return rc ? mr_txn_fail(txn, rc) : 0;
}

int moraine_txn_delete_row(moraine_txn *txn, const char *name, int64_t ord)
{
    int rc = mr_txn_usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return mr_txn_fail(txn, rc);
    if (r->info.placement != MORAINE_PLACE_ROWS)
        return mr_txn_fail(txn, mr_err(MORAINE_EINVAL, "%s is not a non-temporal table: its rows are ended, not deleted", name));
    if ((rc = mr_rows_key(&txn->kb, r, ord))) return mr_txn_fail(txn, rc);
    MDB_val k = {txn->kb.len, txn->kb.p};
    mr_txn_wrote(txn);
    int mrc = mdb_del(txn->t, txn->db->dbi, &k, NULL);
    if (mrc == MDB_NOTFOUND) return mr_txn_fail(txn, mr_err(MORAINE_ENOTFOUND, "%s: no row at position %lld", name, (long long)ord));
    if (mrc) return mr_txn_fail(txn, mr_lmdb_err(mrc, name));
    if ((rc = mr_txn_count_entry(txn, r, txn->kb.p, txn->kb.len, -1))) return mr_txn_fail(txn, rc);
    return 0;
}

/* for engine/history_rewrite.c: take_ord (ord -1: the next free position) */
int mr_txn_take_ord(moraine_txn *txn, mr_rel *r, int64_t ord, int64_t *out) { return take_ord(txn, r, ord, out); }
