/*
 * read.c — temporal reads (docs/semantics.md).
 *
 * A version is visible at snapshot S when begin_snapshot <= S and
 * (end_snapshot IS NULL or S < end_snapshot). Live versions sit in the
 * current subspace, so a read at S walks the relation's (or one table's)
 * current range once, keeping begin <= S. Ended versions sit in history keyed
 * (table_id, end_snapshot, rest of key, begin_snapshot), so the versions still
 * visible at S are exactly those with end > S: one seek to (table_id, S+1)
 * and a walk to the end of the table's range. Those few are sorted by key and
 * merged into the current stream, so rows come in key order either way.
 * Values are decoded in place: strings point into LMDB's map.
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const uint8_t *scope; /* scope element(s) of the key, may be empty */
    size_t scope_len;
    const uint8_t *rest;  /* the key after the end_snapshot element */
    size_t rest_len;
    MDB_val key, val;
} hist_ent;

struct moraine_cursor {
    moraine_read *rd;
    mr_rel *rel;
    int64_t snapshot, scope;
    moraine_cursor *next_open;
    int closed;
    /* the main range (current, snapshot or rows subspace) */
    MDB_cursor *mc;
    mr_buf prefix;
    int started, done;
    MDB_val ck, cv;
    MDB_val lastk;      /* key of the last row returned (for error messages) */
    int64_t met;        /* entries met in the main range, checked against its count at the end */
    int have_c;
    size_t c_scope_off; /* offset in current keys where the scope element starts */
    /* history versions visible at S, sorted */
    hist_ent *hist;
    size_t nhist, hpos;
    /* child relations: walk the parent's rows, then loose rows */
    moraine_cursor *parent;
    moraine_row prow;
    moraine_children kids;
    int in_kids;
    moraine_cursor *loose;
    /* decode buffer */
    moraine_value *vals;
    size_t cap;
    /* moraine_scan_project: what to decode, and whether a row was returned */
    mr_proj *proj;
    int have_row;
    uintptr_t pf_page; /* the 4 KB block of the last value prefetched (prefetch_value) */
    uintptr_t pf_end;  /* the end of the blocks asked for so far (prefetch_value) */
    unsigned pf_run;   /* blocks entered in a row, each the one after the last (prefetch_value) */
};

/* ---- read transactions ---- */

int moraine_read_begin(moraine_db *db, moraine_read **out)
{
    if (!db || !out) return mr_err(MORAINE_EINVAL, "moraine_read_begin: NULL argument");
    int rc = mr_read_begin(db, out);
    /* a catalog of an older format: its records would each fail, so say why once */
    if (!rc && (rc = mr_format_check(db, (*out)->txn, "reads"))) {
        moraine_read_end(*out);
        *out = NULL;
    }
    return rc;
}

int mr_read_txn_begin(moraine_db *db, MDB_txn **t, mr_bounds *b)
{
    mr_env *sh = db->sh;
    pthread_mutex_lock(&sh->mu);
    int mrc = mdb_txn_begin(db->env, NULL, MDB_RDONLY, t), adoptions = 0;
    unsigned waited = 0;
    while (mrc == MDB_MAP_RESIZED) {
        /* another process grew the map: adopt it once no transaction of
         * ours is open or being begun, waiting a while for that (unlocked) */
        if (mr_adopt_map_locked(sh)) {
            if (++adoptions > 8) break;
        } else {
            pthread_mutex_unlock(&sh->mu);
            const int again = mr_adopt_wait(&waited);
            pthread_mutex_lock(&sh->mu);
            if (!again) break;
        }
        mrc = mdb_txn_begin(db->env, NULL, MDB_RDONLY, t);
    }
    if (!mrc) {
        __atomic_add_fetch(&sh->nreaders, 1, __ATOMIC_SEQ_CST);
        if (b) mr_bounds_get(db, b);
    }
    pthread_mutex_unlock(&sh->mu);
    return mrc;
}

void mr_read_txn_end(moraine_db *db, MDB_txn *t)
{
    mdb_txn_abort(t);
    __atomic_sub_fetch(&db->sh->nreaders, 1, __ATOMIC_SEQ_CST);
}

int mr_read_begin(moraine_db *db, moraine_read **out)
{
    int prc = mr_same_process(db);
    if (prc) return prc;
    moraine_read *rd = calloc(1, sizeof *rd);
    if (!rd) return mr_err(MORAINE_ENOMEM, "out of memory");
    rd->db = db;
    int mrc = mr_read_txn_begin(db, &rd->txn, &rd->bounds);
    if (mrc) {
        free(rd);
        return mr_lmdb_err(mrc, "starting a read");
    }
    pthread_mutex_lock(&db->mu);
    int rc = mr_load_relations(db, rd->txn);
    pthread_mutex_unlock(&db->mu);
    if (rc) {
        mr_read_txn_end(db, rd->txn);
        free(rd);
        return rc;
    }
    *out = rd;
    return 0;
}

static void cursor_release(moraine_cursor *c);

void moraine_read_end(moraine_read *rd)
{
    if (!rd) return;
    for (moraine_cursor *c = rd->cursors, *n; c; c = n) {
        n = c->next_open;
        cursor_release(c);
        free(c);
    }
    /* after fork the read's LMDB reader slot is the parent's: leave it (a
     * fork's child may have its parent's pid number, in a new pid namespace:
     * mr_db_here's fork count tells them apart) */
    if (mr_db_here(rd->db)) mr_read_txn_end(rd->db, rd->txn);
    free(rd->spec_vals);
    free(rd);
}

int moraine_read_last_snapshot(moraine_read *rd, int64_t *out)
{
    int rc = MR_READ_HERE(rd);
    return rc ? rc : mr_meta_get_int(rd->txn, rd->db->dbi, "last_snapshot", out);
}

/* ---- decoding ---- */

static int grow_vals(moraine_value **vals, size_t *cap, size_t n);
/* room for @n values in *vals (*cap of them): the check inline, the growth out of line */
static inline int ensure_vals(moraine_value **vals, size_t *cap, size_t n)
{
    if (__builtin_expect(*cap >= n && *vals != NULL, 1)) return 0;
    return grow_vals(vals, cap, n);
}

static int grow_vals(moraine_value **vals, size_t *cap, size_t n)
{
    moraine_value *v = realloc(*vals, (n ? n : 1) * sizeof *v);
    if (!v) return mr_err(MORAINE_ENOMEM, "out of memory");
    *vals = v;
    *cap = n ? n : 1;
    return 0;
}

static int corrupt_at(const MDB_val *k, const mr_rel *r)
{
    char m[512], desc[200];
    snprintf(m, sizeof m, "%s", moraine_errmsg());
    mr_key_describe(k->mv_data, k->mv_size, desc, sizeof desc);
    return mr_err(MORAINE_ECORRUPT, "stored value at key %s (%s) is damaged: %s", desc, r ? r->info.name : "?", m);
}

/* Decodes a stored value into @row; children stay undecoded. */
static int decode_value(const mr_bounds *b, const MDB_val *k, const MDB_val *v, mr_rel *r, moraine_value **vals, size_t *cap,
                        moraine_row *row)
{
    int rc = ensure_vals(vals, cap, r->info.ncols);
    if (rc) return rc;
    if (!mr_value_ok(b, v) || !mr_value_ok(b, k)) {
        return mr_err(MORAINE_ECORRUPT, "%s: a key or value of %zu bytes runs past the end of the file: LMDB's pages are damaged",
                      r->info.name, v->mv_size);
    }
    const uint8_t *p = v->mv_data, *end = p + v->mv_size;
    size_t n;
    if ((rc = mr_decode_header(&p, end, k->mv_data, k->mv_size))) return corrupt_at(k, r);
    const uint8_t *start = p;
    if ((rc = mr_decode_row(&p, end, &row->ord, *vals, r->info.ncols, &n))) return corrupt_at(k, r);
    row->raw = mr_row_cells(start);
    row->raw_len = (size_t)(p - row->raw);
    if (n != r->info.ncols) {
        mr_err(MORAINE_ECORRUPT, "%zu columns where the table has %zu", n, r->info.ncols);
        return corrupt_at(k, r);
    }
    row->rel = &r->info;
    row->ncols = n;
    row->vals = *vals;
    row->children = p;
    row->children_len = (size_t)(end - p);
    row->parent_raw = NULL;
    row->parent_raw_len = 0;
    return 0;
}

/* On the first value met in a 4 KB block of the map (an LMDB page of this
 * size, the usual one), asks the CPU for the blocks the next values are
 * likely in (64-byte lines, __builtin_prefetch, which never faults), so the
 * checksum and the decode find them in the cache instead of waiting on
 * memory value by value, and reads one byte of the block just past those
 * asked for (see below). After a jump (the first value, or a store written
 * by many commits, whose leaves are scattered) it asks for the block and the
 * next. While each block entered is the one after the last (a store written
 * in key order: an import, `moraine compact`), the read runs further ahead of
 * itself, one block more each time up to MR_PREFETCH_PAGES, each block asked
 * for once: in a scattered store a run of two blocks is common and asks for no
 * more than the jump did, in a store in key order the read soon waits on
 * nothing. The lines go to the L2 cache, not L1 (__builtin_prefetch's
 * locality 2, prefetcht1): the blocks ahead are 4 KB apart and so land in
 * the same L1 sets, where they likely took the ways the row being decoded
 * needs (measured: 1col read 19% faster, pv 12%).
 * The one byte read: a prefetch whose address misses the TLB brought
 * nothing on the hosts measured (as if dropped), so with caches and TLB
 * cold (a read after other work) most of the lines asked for never came
 * and the checksum waited on them.
 * Reading the first byte of the block past the window (its LMDB page header)
 * walks the page table for it a step before its lines are asked for. It is
 * read only in a run of blocks in key order, where the read will reach that
 * block soon (unlike a prefetch, a load can wait on the disk when the page
 * is not in the page cache: after a jump the block ahead is often one the
 * read never uses), and only when that whole block lies inside the file as
 * the read transaction began (mr_bounds: past the end of the file the map
 * would SIGBUS); the byte is discarded. Measured: cold reads 10-19% faster,
 * warm ones unchanged; with the lines now arriving, running 8 blocks ahead
 * instead of 3 took another 10% off cold reads (6 to 12 read alike).
 * Measured in bench/README.md ("prefetching a value's page", "a new host,
 * and prefetching further ahead", "prefetching into L2", and "the page table
 * walk a prefetch needs"). */
static inline void prefetch_value(moraine_cursor *c, const void *p)
{
    uintptr_t pg = (uintptr_t)p & ~(uintptr_t)4095, from = pg, to = pg + 8192;
    if (pg == c->pf_page) return;
    if (pg == c->pf_page + 4096) { /* the next block: run further ahead */
        if (c->pf_run < MR_PREFETCH_PAGES) c->pf_run++;
        to = pg + 4096 * (1 + (uintptr_t)c->pf_run);
        from = c->pf_end > pg + 4096 && c->pf_end <= to ? c->pf_end : pg + 4096;
    } else {
        c->pf_run = 0;
    }
    c->pf_page = pg;
    c->pf_end = to;
    for (uintptr_t a = from; a < to; a += 64) __builtin_prefetch((const void *)a, 0, 2);
    if (c->pf_run && mr_block_in_file(&c->rd->bounds, to)) (void)*(const volatile uint8_t *)to;
}

/* decode_value for a projected cursor: the same checks (bounds, checksum of
 * key and value, column count), then only the projected cells. *visible
 * says whether the row is visible at @s (begin_snapshot, or snapshot_id for
 * the snapshot relation, decided in the same pass). */
static int decode_projected(const mr_bounds *b, const MDB_val *k, const MDB_val *v, mr_rel *r, mr_proj *pj, moraine_value **vals,
                            size_t *cap, int64_t s, moraine_row *row, int *visible)
{
    int rc = ensure_vals(vals, cap, pj->row.nout + 1); /* and the spare slot of mr_proj_row */
    if (rc) return rc;
    if (!mr_value_ok(b, v) || !mr_value_ok(b, k)) {
        return mr_err(MORAINE_ECORRUPT, "%s: a key or value of %zu bytes runs past the end of the file: LMDB's pages are damaged",
                      r->info.name, v->mv_size);
    }
    const uint8_t *p = v->mv_data, *end = p + v->mv_size;
    if ((rc = mr_decode_header(&p, end, k->mv_data, k->mv_size))) return corrupt_at(k, r);
    moraine_value bv;
    const uint8_t *start = p;
    if ((rc = mr_proj_decode_row(&pj->row, &p, end, &row->ord, *vals, &bv))) return corrupt_at(k, r);
    row->raw = mr_row_cells(start);
    row->raw_len = (size_t)(p - row->raw);
    *visible = s == MORAINE_ALL_VERSIONS || pj->row.extra_col < 0 || (bv.type == MORAINE_INT && bv.i <= s);
    row->rel = &r->info;
    row->ncols = pj->row.nout;
    row->vals = *vals;
    row->children = p;
    row->children_len = (size_t)(end - p);
    row->parent_raw = NULL;
    row->parent_raw_len = 0;
    return 0;
}

/* ---- children ---- */

void moraine_row_children(moraine_read *rd, const moraine_row *row, moraine_children *it)
{
    memset(it, 0, sizeof *it);
    it->p = row->children;
    it->end = row->children + row->children_len;
    it->db = rd->db;
    it->praw = row->raw;
    it->praw_len = row->raw_len;
    it->prel_id = row->rel ? row->rel->id : UINT32_MAX;
}

/* The head of the group at it->p: its relation, rows, and the parent's key
 * cells its rows leave out (store format 5). 0 or MORAINE_ECORRUPT. */
static int children_group(moraine_children *it)
{
    uint64_t id, nrows;
    int rc;
    if ((rc = mr_group_head(&it->p, it->end, &id, &nrows, &it->gend))) return rc;
    mr_rel *r = mr_rel_by_id(it->db, id);
    if (!r) return mr_err(MORAINE_ECORRUPT, "value: child group of unknown table id %llu", (unsigned long long)id);
    if ((rc = mr_child_keymap(r, mr_rel_by_id(it->db, it->prel_id), &it->keys))) return rc;
    if (it->keys.n && (rc = mr_pick_cells(it->praw, it->praw_len, it->keys.pcol, it->keys.n, it->pkey))) return rc;
    it->rel = &r->info;
    it->left = nrows;
    it->prev_ord = 0;
    if (nrows == 0 && it->p != it->gend) return mr_err(MORAINE_ECORRUPT, "value: child group of %s has bytes after its 0 rows", it->rel->name);
    return 0;
}

int moraine_children_next(moraine_children *it, moraine_row *child)
{
    if (__builtin_expect(mr_forks_now() != it->db->forks, 0)) return mr_walk_forked("the walk of a row's children", it->db->pid);
    int rc;
    while (it->left == 0) {
        if (it->p >= it->end) return 0;
        if ((rc = children_group(it))) return rc;
    }
    if ((rc = ensure_vals(&it->vals, &it->cap, it->rel->ncols))) return rc;
    const uint8_t *rend;
    /* a row is held within its group, as a projected read holds it */
    if (it->p >= it->gend)
        return mr_err(MORAINE_ECORRUPT, "value: child group of %s ends before its %llu rows", it->rel->name, (unsigned long long)it->left);
    if ((rc = mr_child_row_span(&it->p, it->gend, &rend))) return rc;
    if ((rc = mr_decode_child_row(&it->p, rend, it->rel->name, it->prev_ord, &child->ord, it->vals, it->rel->ncols, &it->keys, it->pkey,
                                  &child->raw)))
        return rc;
    child->raw_len = (size_t)(it->p - child->raw);
    it->prev_ord = child->ord;
    /* the group's last row must end where its nbytes say, or the bytes after
     * it would be read as the next group's head */
    if (--it->left == 0 && it->p != it->gend)
        return mr_err(MORAINE_ECORRUPT, "value: child group of %s has bytes after its rows", it->rel->name);
    child->rel = it->rel;
    child->ncols = it->rel->ncols;
    child->vals = it->vals;
    child->children = NULL;
    child->children_len = 0;
    child->parent_raw = it->praw;
    child->parent_raw_len = it->praw_len;
    return 1;
}

void moraine_children_free(moraine_children *it)
{
    free(it->vals);
    it->vals = NULL;
    it->cap = 0;
}

/* ---- cursors ---- */

static int has_prefix(const MDB_val *k, const mr_buf *p) { return k->mv_size >= p->len && memcmp(k->mv_data, p->p, p->len) == 0; }

static int seg_cmp(const uint8_t *a1, size_t n1, const uint8_t *a2, size_t n2, const uint8_t *b1, size_t m1, const uint8_t *b2, size_t m2)
{
    /* compares the concatenations a1.a2 and b1.b2 */
    size_t i = 0, j = 0, la = n1 + n2, lb = m1 + m2;
    while (i < la && j < lb) {
        uint8_t x = i < n1 ? a1[i] : a2[i - n1];
        uint8_t y = j < m1 ? b1[j] : b2[j - m1];
        if (x != y) return x < y ? -1 : 1;
        i++;
        j++;
    }
    return (la > lb) - (la < lb);
}

static int hist_cmp(const void *a, const void *b)
{
    const hist_ent *x = a, *y = b;
    return seg_cmp(x->scope, x->scope_len, x->rest, x->rest_len, y->scope, y->scope_len, y->rest, y->rest_len);
}

/* Length of the key element starting at p (p < end); 0 if malformed. */
static size_t elem_len(const uint8_t *p, const uint8_t *end)
{
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

static int begin_visible(const moraine_value *vals, const mr_rel *r, int64_t s)
{
    if (s == MORAINE_ALL_VERSIONS || r->info.begin_col < 0) return 1;
    const moraine_value *b = &vals[r->info.begin_col];
    return b->type == MORAINE_INT && b->i <= s;
}

/* Collects the history versions visible at the cursor's snapshot. */
static int collect_history(moraine_cursor *c)
{
    mr_rel *r = c->rel;
    mr_buf hp = {0}, seek = {0};
    int rc = mr_buf_byte(&hp, MR_SUB_HISTORY);
    if (!rc) rc = mr_key_int(&hp, r->info.id);
    if (!rc && c->scope != MORAINE_ANY_SCOPE) rc = mr_key_int(&hp, c->scope);
    if (!rc) rc = mr_buf_put(&seek, hp.p, hp.len);
    int bounded = c->scope != MORAINE_ANY_SCOPE || !r->scoped;
    if (!rc && bounded && c->snapshot != MORAINE_ALL_VERSIONS && c->snapshot != INT64_MAX) rc = mr_key_int(&seek, c->snapshot + 1);
    if (rc) goto out;
    MDB_cursor *hc;
    int mrc = mdb_cursor_open(c->rd->txn, c->rd->db->dbi, &hc);
    if (mrc) {
        rc = mr_lmdb_err(mrc, "opening a cursor");
        goto out;
    }
    size_t cap = 0;
    int64_t met = 0;
    MDB_val k = {seek.len, seek.p}, v;
    moraine_value bv, ev;
    mr_buf scratch = {0};
    for (mrc = mdb_cursor_get(hc, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(hc, &k, &v, MDB_NEXT)) {
        if (!has_prefix(&k, &hp)) break;
        const uint8_t *p = (const uint8_t *)k.mv_data + hp.len, *end = (const uint8_t *)k.mv_data + k.mv_size;
        const uint8_t *scope = p;
        size_t scope_len = 0;
        if (r->scoped && c->scope == MORAINE_ANY_SCOPE) {
            scope_len = p < end ? elem_len(p, end) : 0;
            if (!scope_len) {
                rc = corrupt_at(&k, r);
                break;
            }
            p += scope_len;
        }
        if ((rc = mr_key_next(&p, end, &ev, &scratch))) {
            rc = corrupt_at(&k, r);
            break;
        }
        const uint8_t *rest = p;
        /* begin is the last element */
        if (end - p < MR_KEY_INT_LEN) {
            mr_err(MORAINE_ECORRUPT, "history key too short");
            rc = corrupt_at(&k, r);
            break;
        }
        const uint8_t *bp = end - MR_KEY_INT_LEN;
        if ((rc = mr_key_next(&bp, end, &bv, &scratch))) {
            rc = corrupt_at(&k, r);
            break;
        }
        met++;
        if (c->snapshot != MORAINE_ALL_VERSIONS &&
            (ev.type != MORAINE_INT || bv.type != MORAINE_INT || !(bv.i <= c->snapshot && c->snapshot < ev.i))) {
            /* not returned, but its key decides that: the key must be the
             * one its value was stored under */
            const uint8_t *vp = v.mv_data;
            if (!mr_value_ok(&c->rd->bounds, &v) || mr_decode_header(&vp, vp + v.mv_size, k.mv_data, k.mv_size)) {
                rc = corrupt_at(&k, r);
                break;
            }
            continue;
        }
        if (c->nhist == cap) {
            cap = cap ? cap * 2 : 64;
            hist_ent *h = realloc(c->hist, cap * sizeof *h);
            if (!h) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            c->hist = h;
        }
        hist_ent *h = &c->hist[c->nhist++];
        h->scope = scope;
        h->scope_len = scope_len;
        h->rest = rest;
        h->rest_len = (size_t)(end - rest);
        h->key = k;
        h->val = v;
    }
    mr_buf_free(&scratch);
    mdb_cursor_close(hc);
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = mr_lmdb_err(mrc, "reading history");
    /* every history entry of the walked range was met: none moved away */
    int64_t counted = 0;
    if (!rc) rc = mr_count_sum(c->rd->txn, c->rd->db->dbi, hp.p, hp.len, seek.p, seek.len, &counted);
    if (!rc && counted != met) rc = mr_count_mismatch(seek.p, seek.len, met, counted);
    if (!rc && c->nhist > 1) qsort(c->hist, c->nhist, sizeof *c->hist, hist_cmp);
out:
    mr_buf_free(&hp);
    mr_buf_free(&seek);
    return rc;
}

static void cursor_release(moraine_cursor *c)
{
    if (c->closed) return;
    c->closed = 1;
    if (c->mc) mdb_cursor_close(c->mc);
    c->mc = NULL;
    mr_buf_free(&c->prefix);
    free(c->hist);
    c->hist = NULL;
    free(c->vals);
    c->vals = NULL;
    mr_proj_free(c->proj);
    c->proj = NULL;
    moraine_children_free(&c->kids);
    if (c->parent) {
        cursor_release(c->parent);
        free(c->parent);
        c->parent = NULL;
    }
    if (c->loose) {
        cursor_release(c->loose);
        free(c->loose);
        c->loose = NULL;
    }
}

static int open_range(moraine_cursor *c, uint8_t sub)
{
    mr_rel *r = c->rel;
    int rc = mr_buf_byte(&c->prefix, sub);
    if (!rc && sub != MR_SUB_SNAPSHOT) rc = mr_key_int(&c->prefix, r->info.id);
    c->c_scope_off = c->prefix.len;
    if (!rc && sub == MR_SUB_CURRENT && c->scope != MORAINE_ANY_SCOPE) rc = mr_key_int(&c->prefix, c->scope);
    if (rc) return rc;
    int mrc = mdb_cursor_open(c->rd->txn, c->rd->db->dbi, &c->mc);
    return mrc ? mr_lmdb_err(mrc, "opening a cursor") : 0;
}

static int cursor_init(moraine_read *rd, mr_rel *r, int64_t scope, int64_t snapshot, moraine_cursor *c)
{
    memset(c, 0, sizeof *c);
    c->rd = rd;
    c->rel = r;
    c->scope = scope;
    c->snapshot = snapshot;
    switch (r->info.placement) {
    case MORAINE_PLACE_TEMPORAL: {
        int rc = open_range(c, MR_SUB_CURRENT);
        return rc ? rc : collect_history(c);
    }
    case MORAINE_PLACE_SNAPSHOT: return open_range(c, MR_SUB_SNAPSHOT);
    case MORAINE_PLACE_ROWS: return open_range(c, MR_SUB_ROWS);
    case MORAINE_PLACE_CHILD: {
        mr_rel *p = mr_rel_by_name(rd->db, r->info.parent);
        if (p && p->info.ncols > 0) {
            c->parent = calloc(1, sizeof *c->parent);
            if (!c->parent) return mr_err(MORAINE_ENOMEM, "out of memory");
            int rc = cursor_init(rd, p, p->info.placement == MORAINE_PLACE_SNAPSHOT ? MORAINE_ANY_SCOPE : scope, snapshot, c->parent);
            if (rc) return rc;
        }
        if (snapshot == MORAINE_ALL_VERSIONS && scope == MORAINE_ANY_SCOPE) {
            c->loose = calloc(1, sizeof *c->loose);
            if (!c->loose) return mr_err(MORAINE_ENOMEM, "out of memory");
            memset(c->loose, 0, sizeof *c->loose);
            c->loose->rd = rd;
            c->loose->rel = r;
            c->loose->scope = MORAINE_ANY_SCOPE;
            c->loose->snapshot = MORAINE_ALL_VERSIONS;
            return open_range(c->loose, MR_SUB_ROWS);
        }
        return 0;
    }
    }
    return mr_err(MORAINE_EINVAL, "%s: unknown placement", r->info.name);
}

int moraine_scan_open(moraine_read *rd, const char *name, int64_t scope, int64_t snapshot, moraine_cursor **out)
{
    if (!rd || !name || !out) return mr_err(MORAINE_EINVAL, "moraine_scan_open: NULL argument");
    int rc = MR_READ_HERE(rd);
    if (rc) return rc;
    pthread_mutex_lock(&rd->db->mu);
    mr_rel *r = mr_rel_by_name(rd->db, name);
    pthread_mutex_unlock(&rd->db->mu);
    if (!r) return mr_err(MORAINE_ENOTFOUND, "the catalog has no table '%s'", name);
    if (scope != MORAINE_ANY_SCOPE && !r->scoped)
        return mr_err(MORAINE_EINVAL, "%s is not keyed by table_id: it cannot be read for one table", name);
    moraine_cursor *c = calloc(1, sizeof *c);
    if (!c) return mr_err(MORAINE_ENOMEM, "out of memory");
    rc = r->info.ncols == 0 ? 0 : cursor_init(rd, r, scope, snapshot, c);
    if (r->info.ncols == 0) {
        c->rd = rd;
        c->rel = r;
        c->done = 1;
    }
    if (rc) {
        cursor_release(c);
        free(c);
        return rc;
    }
    c->next_open = rd->cursors;
    rd->cursors = c;
    *out = c;
    return 0;
}

int moraine_scan_project(moraine_read *rd, const char *name, int64_t scope, int64_t snapshot, const moraine_projection *proj,
                         moraine_cursor **out)
{
    if (!rd || !name || !proj || !out) return mr_err(MORAINE_EINVAL, "moraine_scan_project: NULL argument");
    int rc = MR_READ_HERE(rd);
    if (rc) return rc;
    pthread_mutex_lock(&rd->db->mu);
    mr_rel *r = mr_rel_by_name(rd->db, name);
    pthread_mutex_unlock(&rd->db->mu);
    if (!r) return mr_err(MORAINE_ENOTFOUND, "the catalog has no table '%s'", name);
    if (r->info.placement == MORAINE_PLACE_CHILD)
        return mr_err(MORAINE_EINVAL, "%s is a child relation: project its parent (%s) and name it among the children", name,
                      r->info.parent ? r->info.parent : "?");
    mr_proj *pj;
    rc = mr_proj_build(rd->db, r, proj, &pj);
    if (rc) return rc;
    moraine_cursor *c;
    if ((rc = moraine_scan_open(rd, name, scope, snapshot, &c))) {
        mr_proj_free(pj);
        return rc;
    }
    c->proj = pj;
    *out = c;
    return 0;
}

int moraine_cursor_child(moraine_cursor *c, size_t *which, moraine_row *child)
{
    if (!c || !which || !child) return mr_err(MORAINE_EINVAL, "moraine_cursor_child: NULL argument");
    if (c->closed) return mr_err(MORAINE_ETXN, "the cursor is closed");
    if (!c->proj) return mr_err(MORAINE_EINVAL, "moraine_cursor_child: the cursor was not opened by moraine_scan_project");
    if (!c->have_row) return mr_err(MORAINE_EINVAL, "moraine_cursor_child: no row returned yet");
    int rc = MR_READ_HERE(c->rd);
    if (rc) return rc;
    rc = mr_proj_children_next(c->proj, c->rd->db, which, child);
    if (rc < 0) return corrupt_at(&c->lastk, c->rel);
    return rc;
}

int moraine_cursor_child_rows(moraine_cursor *c, size_t which, const moraine_value **vals, const int64_t **ords, size_t *nrows)
{
    if (!c || !vals || !nrows) return mr_err(MORAINE_EINVAL, "moraine_cursor_child_rows: NULL argument");
    if (c->closed) return mr_err(MORAINE_ETXN, "the cursor is closed");
    if (!c->proj) return mr_err(MORAINE_EINVAL, "moraine_cursor_child_rows: the cursor was not opened by moraine_scan_project");
    if (!c->have_row) return mr_err(MORAINE_EINVAL, "moraine_cursor_child_rows: no row returned yet");
    if (which >= c->proj->nkids)
        return mr_err(MORAINE_EINVAL, "moraine_cursor_child_rows: child projection %zu of %zu", which, c->proj->nkids);
    int frc = MR_READ_HERE(c->rd);
    if (frc) return frc;
    mr_proj *p = c->proj;
    int rc = mr_proj_group_rows(p, c->rd->db, which, nrows);
    if (rc < 0) {
        *nrows = 0;
        return rc == MORAINE_ENOMEM ? rc : corrupt_at(&c->lastk, c->rel);
    }
    *vals = p->gvals;
    if (ords) *ords = p->gords;
    return 0;
}

/* Next entry of the main range (current/snapshot/rows), peeked into c->ck/cv. */
static int peek_main(moraine_cursor *c)
{
    if (c->have_c || c->done || !c->mc) return 0;
    int mrc;
    if (!c->started) {
        c->started = 1;
        c->ck.mv_size = c->prefix.len;
        c->ck.mv_data = c->prefix.p;
        mrc = mdb_cursor_get(c->mc, &c->ck, &c->cv, MDB_SET_RANGE);
    } else {
        mrc = mdb_cursor_get(c->mc, &c->ck, &c->cv, MDB_NEXT);
    }
    if (mrc == MDB_NOTFOUND || (mrc == 0 && !has_prefix(&c->ck, &c->prefix))) {
        c->done = 1;
        /* the whole range was walked: it must hold what the catalog counted */
        int64_t counted = 0;
        int rc = mr_count_sum(c->rd->txn, c->rd->db->dbi, c->prefix.p, c->prefix.len, NULL, 0, &counted);
        if (!rc && counted != c->met) rc = mr_count_mismatch(c->prefix.p, c->prefix.len, c->met, counted);
        return rc;
    }
    if (mrc) return mr_lmdb_err(mrc, "reading");
    c->have_c = 1;
    c->met++;
    return 0;
}

/* Next visible version of a temporal, snapshot or rows relation. */
static int next_plain(moraine_cursor *c, moraine_row *row)
{
    mr_rel *r = c->rel;
    for (;;) {
        int rc = peek_main(c);
        if (rc) return rc;
        int use_hist = 0;
        if (c->hpos < c->nhist) {
            if (!c->have_c) use_hist = 1;
            else {
                const hist_ent *h = &c->hist[c->hpos];
                const uint8_t *k = c->ck.mv_data;
                /* the current key after the relation prefix: scope and rest */
                size_t off = c->c_scope_off;
                use_hist = seg_cmp(h->scope, h->scope_len, h->rest, h->rest_len, k + off, c->ck.mv_size - off, NULL, 0) < 0;
                if (c->scope != MORAINE_ANY_SCOPE || !r->scoped) {
                    /* history entries carry no scope bytes here: compare the rest only */
                    size_t o2 = c->prefix.len;
                    use_hist = seg_cmp(h->rest, h->rest_len, NULL, 0, k + o2, c->ck.mv_size - o2, NULL, 0) < 0;
                }
            }
        }
        if (!use_hist && !c->have_c) return 0;
        MDB_val k, v;
        if (use_hist) {
            k = c->hist[c->hpos].key;
            v = c->hist[c->hpos++].val;
        } else {
            k = c->ck;
            v = c->cv;
            c->have_c = 0;
        }
        c->lastk = k;
        prefetch_value(c, v.mv_data);
        if (c->proj) {
            int visible = 0;
            if ((rc = decode_projected(&c->rd->bounds, &k, &v, r, c->proj, &c->vals, &c->cap, c->snapshot, row, &visible))) return rc;
            if (!use_hist && !visible) continue;
            mr_proj_children_start(c->proj, row);
            c->have_row = 1;
            return 1;
        }
        if ((rc = decode_value(&c->rd->bounds, &k, &v, r, &c->vals, &c->cap, row))) return rc;
        if (use_hist) return 1; /* filtered when collected */
        if (r->info.placement == MORAINE_PLACE_SNAPSHOT) {
            const moraine_value *id = &row->vals[0];
            int idc = moraine_column_index(&r->info, "snapshot_id");
            if (idc >= 0) id = &row->vals[idc];
            if (c->snapshot != MORAINE_ALL_VERSIONS && !(id->type == MORAINE_INT && id->i <= c->snapshot)) continue;
            return 1;
        }
        if (begin_visible(row->vals, r, c->snapshot)) return 1;
    }
}

int moraine_cursor_next(moraine_cursor *c, moraine_row *row)
{
    if (!c || !row) return mr_err(MORAINE_EINVAL, "moraine_cursor_next: NULL argument");
    if (c->closed) return mr_err(MORAINE_ETXN, "the cursor is closed");
    int frc = MR_READ_HERE(c->rd);
    if (frc) return frc;
    if (c->rel->info.placement != MORAINE_PLACE_CHILD) return c->done && !c->have_c && c->hpos >= c->nhist ? 0 : next_plain(c, row);
    /* children: walk parents, yield their children of this relation */
    for (;;) {
        if (c->in_kids) {
            int rc = moraine_children_next(&c->kids, row);
            if (rc < 0) return corrupt_at(&c->parent->lastk, c->parent->rel);
            if (rc == 1) {
                if (row->rel == &c->rel->info || strcmp(row->rel->name, c->rel->info.name) == 0) return 1;
                continue;
            }
            c->in_kids = 0;
        }
        if (c->parent) {
            int rc = moraine_cursor_next(c->parent, &c->prow);
            if (rc < 0) return rc;
            if (rc == 1) {
                moraine_children_free(&c->kids);
                moraine_row_children(c->rd, &c->prow, &c->kids);
                c->in_kids = 1;
                continue;
            }
            cursor_release(c->parent);
            free(c->parent);
            c->parent = NULL;
        }
        if (c->loose) return next_plain(c->loose, row);
        return 0;
    }
}

void moraine_cursor_close(moraine_cursor *c)
{
    if (!c) return;
    moraine_read *rd = c->rd;
    for (moraine_cursor **pp = &rd->cursors; *pp; pp = &(*pp)->next_open) {
        if (*pp == c) {
            *pp = c->next_open;
            break;
        }
    }
    cursor_release(c);
    free(c);
}

/* The ducklake_snapshot row of snapshot @id, by one key lookup: the body of
 * moraine_read_snapshot (moraine.h), also how the verb path reads its base's
 * counters. Returns 1, 0 if there is no such row, or an error. The row is
 * valid like a spec lookup's. */
int mr_snapshot_row(moraine_read *rd, int64_t id, moraine_row *row)
{
    pthread_mutex_lock(&rd->db->mu);
    mr_rel *r = mr_rel_by_name(rd->db, "ducklake_snapshot");
    pthread_mutex_unlock(&rd->db->mu);
    if (!r || r->info.ncols == 0) return 0;
    mr_buf k = {0};
    int rc = mr_snapshot_key(&k, id);
    if (rc) return rc;
    MDB_val key = {k.len, k.p}, v;
    int mrc = mdb_get(rd->txn, rd->db->dbi, &key, &v);
    if (mrc == MDB_NOTFOUND) rc = 0;
    else if (mrc) rc = mr_lmdb_err(mrc, "reading a snapshot");
    else {
        rc = decode_value(&rd->bounds, &key, &v, r, &rd->spec_vals, &rd->spec_cap, row);
        if (!rc) rc = 1;
    }
    mr_buf_free(&k);
    return rc;
}

int moraine_read_snapshot(moraine_read *rd, int64_t snapshot_id, moraine_row *row)
{
    if (!rd || !row) return mr_err(MORAINE_EINVAL, "moraine_read_snapshot: NULL argument");
    int rc = MR_READ_HERE(rd);
    return rc ? rc : mr_snapshot_row(rd, snapshot_id, row);
}

/* ---- spec lookups ---- */

static int keep_row(moraine_read *rd, moraine_row *row)
{
    int rc = ensure_vals(&rd->spec_vals, &rd->spec_cap, row->ncols);
    if (rc) return rc;
    memcpy(rd->spec_vals, row->vals, row->ncols * sizeof *row->vals);
    row->vals = rd->spec_vals;
    return 1;
}

static int spec_at(moraine_read *rd, const char *rel, int64_t table_id, int64_t snapshot, moraine_row *row)
{
    if (!rd || !row) return mr_err(MORAINE_EINVAL, "%s lookup: NULL argument", rel);
    int frc = MR_READ_HERE(rd);
    if (frc) return frc;
    pthread_mutex_lock(&rd->db->mu);
    mr_rel *r = mr_rel_by_name(rd->db, rel);
    pthread_mutex_unlock(&rd->db->mu);
    if (!r) return 0; /* a catalog without the table has no spec */
    moraine_cursor *c;
    int rc = moraine_scan_open(rd, rel, table_id, snapshot, &c);
    if (rc) return rc;
    rc = moraine_cursor_next(c, row);
    if (rc == 1) rc = keep_row(rd, row);
    /* walk the (short) rest, so the range's entry count is checked: a spec
     * whose key was damaged away must not read as "no spec" */
    if (rc >= 0) {
        moraine_row more;
        int more_rc;
        while ((more_rc = moraine_cursor_next(c, &more)) == 1) {
        }
        if (more_rc < 0) rc = more_rc;
    }
    moraine_cursor_close(c);
    return rc;
}

int moraine_partition_spec_at(moraine_read *rd, int64_t table_id, int64_t snapshot, moraine_row *row)
{
    return spec_at(rd, "ducklake_partition_info", table_id, snapshot, row);
}

int moraine_sort_spec_at(moraine_read *rd, int64_t table_id, int64_t snapshot, moraine_row *row)
{
    return spec_at(rd, "ducklake_sort_info", table_id, snapshot, row);
}

int moraine_partition_spec_by_id(moraine_read *rd, int64_t table_id, int64_t partition_id, moraine_row *row)
{
    if (!rd || !row) return mr_err(MORAINE_EINVAL, "moraine_partition_spec_by_id: NULL argument");
    int frc = MR_READ_HERE(rd);
    if (frc) return frc;
    pthread_mutex_lock(&rd->db->mu);
    mr_rel *r = mr_rel_by_name(rd->db, "ducklake_partition_info");
    pthread_mutex_unlock(&rd->db->mu);
    if (!r || r->info.ncols == 0) return 0;
    int pcol = moraine_column_index(&r->info, "partition_id");
    moraine_cursor *c;
    int rc = moraine_scan_open(rd, "ducklake_partition_info", table_id, MORAINE_ALL_VERSIONS, &c);
    if (rc) return rc;
    while ((rc = moraine_cursor_next(c, row)) == 1) {
        const moraine_value *v = &row->vals[pcol];
        if (v->type == MORAINE_INT && v->i == partition_id) {
            rc = keep_row(rd, row);
            break;
        }
    }
    moraine_cursor_close(c);
    return rc;
}

/* ---- tables by name ---- */

/* Column @col of @row as a string equal to @s (NUL-free compare on length). */
static int str_is(const moraine_row *row, int col, const char *s)
{
    if (col < 0) return 0;
    const moraine_value *v = &row->vals[col];
    size_t n = strlen(s);
    return v->type == MORAINE_STR && v->len == n && memcmp(v->s, s, n) == 0;
}

int moraine_table_id_at(moraine_read *rd, const char *schema, const char *table, int64_t snapshot, int64_t *table_id)
{
    if (!rd || !table || !table_id) return mr_err(MORAINE_EINVAL, "moraine_table_id_at: NULL argument");
    if (snapshot == MORAINE_ALL_VERSIONS)
        return mr_err(MORAINE_EINVAL, "moraine_table_id_at: a snapshot id is needed, not MORAINE_ALL_VERSIONS");
    if (!schema) schema = "main";
    /* the schema's id at S (schemas are few: one scan of ducklake_schema);
     * column positions come from the rows' own descriptor */
    moraine_cursor *c;
    moraine_row row;
    int rc = moraine_scan_open(rd, "ducklake_schema", MORAINE_ANY_SCOPE, snapshot, &c);
    if (rc == MORAINE_ENOTFOUND)
        return mr_err(MORAINE_ENOTFOUND, "no schema \"%s\" at snapshot %lld (looking up table \"%s\"): the catalog has no schemas",
                      schema, (long long)snapshot, table);
    if (rc) return rc;
    int found = 0;
    int64_t schema_id = 0;
    while (!found && (rc = moraine_cursor_next(c, &row)) == 1) {
        int s_id = moraine_column_index(row.rel, "schema_id"), s_name = moraine_column_index(row.rel, "schema_name");
        if (s_id >= 0 && str_is(&row, s_name, schema) && row.vals[s_id].type == MORAINE_INT) {
            schema_id = row.vals[s_id].i;
            found = 1;
        }
    }
    moraine_cursor_close(c);
    if (rc < 0) return rc;
    if (!found)
        return mr_err(MORAINE_ENOTFOUND, "no schema \"%s\" at snapshot %lld (looking up table \"%s\")", schema, (long long)snapshot, table);
    /* the table: one range scan of ducklake_table's versions visible at S */
    rc = moraine_scan_open(rd, "ducklake_table", MORAINE_ANY_SCOPE, snapshot, &c);
    if (rc == MORAINE_ENOTFOUND)
        return mr_err(MORAINE_ENOTFOUND, "no table \"%s\".\"%s\" at snapshot %lld: the catalog has no tables", schema, table, (long long)snapshot);
    if (rc) return rc;
    found = 0;
    while (!found && (rc = moraine_cursor_next(c, &row)) == 1) {
        int t_id = moraine_column_index(row.rel, "table_id"), t_schema = moraine_column_index(row.rel, "schema_id");
        int t_name = moraine_column_index(row.rel, "table_name");
        if (t_id < 0 || t_schema < 0) continue;
        if (row.vals[t_schema].type == MORAINE_INT && row.vals[t_schema].i == schema_id && str_is(&row, t_name, table) &&
            row.vals[t_id].type == MORAINE_INT) {
            *table_id = row.vals[t_id].i;
            found = 1;
        }
    }
    moraine_cursor_close(c);
    if (rc < 0) return rc;
    if (!found) return mr_err(MORAINE_ENOTFOUND, "no table \"%s\".\"%s\" at snapshot %lld", schema, table, (long long)snapshot);
    return 0;
}
