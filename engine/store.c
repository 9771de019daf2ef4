/*
 * store.c — the catalog handle: opening LMDB, the meta subspace, and the
 * relation descriptors (which tables a catalog has, with which columns, in
 * which order, placed where). It calls nothing of the write transaction's
 * files (txn.c, txn_rows.c, commit.c); the two handle calls that go through
 * the open transaction, moraine_relation and moraine_close, are in txn.c.
 */
#include "internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DEFAULT_MAP (1ULL << 30)
#define MIN_MAP ((size_t)256 << 10) /* a smaller map_size is taken as this */
#define DEFAULT_MAX_MAP (64ULL << 30)

int mr_meta_key(mr_buf *b, const char *name)
{
    b->len = 0;
    int rc = mr_buf_byte(b, MR_SUB_META);
    return rc ? rc : mr_key_str(b, name, strlen(name));
}

/* The key of meta integer @name (mr_meta_key's bytes) into *key, *len: in
 * @stack for a short name (every name moraine uses: no allocation), else
 * in @heap (the caller frees it). 0 or MORAINE_ENOMEM. */
static int meta_key_of(const char *name, uint8_t stack[64], mr_buf *heap, const uint8_t **key, size_t *len)
{
    size_t n = strlen(name); /* a C string: no NUL inside to escape */
    if (n + 3 <= 64) {
        stack[0] = MR_SUB_META;
        stack[1] = MR_K_STR;
        memcpy(stack + 2, name, n);
        stack[2 + n] = 0x00;
        *key = stack, *len = n + 3;
        return 0;
    }
    int rc = mr_meta_key(heap, name);
    *key = heap->p, *len = heap->len;
    return rc;
}

char *mr_ord_name(char out[16], uint32_t id)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + id % 10);
        id /= 10;
    } while (id);
    memcpy(out, "ord:", 4);
    for (int i = 0; i < n; i++) out[4 + i] = digits[n - 1 - i];
    out[4 + n] = 0;
    return out;
}

enum meta_op { META_GET, META_GET_STORED, META_PUT };

/* @op on meta integer @name: get into *v (mr_int_get, or mr_int_get_stored),
 * or put *v (mr_int_put); what that returns. */
static int meta_int(MDB_txn *t, MDB_dbi dbi, const char *name, enum meta_op op, int64_t *v)
{
    uint8_t sk[64];
    mr_buf heap = {0};
    const uint8_t *k;
    size_t n;
    int rc = meta_key_of(name, sk, &heap, &k, &n);
    if (!rc) rc = op == META_PUT ? mr_int_put(t, dbi, k, n, *v) : op == META_GET ? mr_int_get(t, dbi, k, n, v) : mr_int_get_stored(t, dbi, k, n, v);
    mr_buf_free(&heap);
    return rc;
}

int mr_meta_get_int(MDB_txn *t, MDB_dbi dbi, const char *name, int64_t *out) { return meta_int(t, dbi, name, META_GET, out); }

int mr_meta_get_int_stored(MDB_txn *t, MDB_dbi dbi, const char *name, int64_t *out) { return meta_int(t, dbi, name, META_GET_STORED, out); }

int mr_format_check(moraine_db *db, MDB_txn *t, const char *does)
{
    if (__atomic_load_n(&db->format, __ATOMIC_RELAXED) == MR_FORMAT_VERSION) return 0;
    int64_t fmt = 0;
    int rc = mr_meta_get_int(t, db->dbi, "format", &fmt);
    if (rc < 0) return rc;
    if (rc == 1 && fmt == MR_FORMAT_VERSION) {
        __atomic_store_n(&db->format, MR_FORMAT_VERSION, __ATOMIC_RELAXED);
        return 0;
    }
    return mr_err(MORAINE_EFORMAT, "the catalog is in format %lld (written by an older moraine), this build %s %d: `moraine compact` "
                  "rewrites it in format %d", (long long)fmt, does, MR_FORMAT_VERSION, MR_FORMAT_VERSION);
}

int mr_meta_put_int(MDB_txn *t, MDB_dbi dbi, const char *name, int64_t v) { return meta_int(t, dbi, name, META_PUT, &v); }

/* ---- relation descriptors ---- */

void mr_rel_free(mr_rel *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->info.ncols; i++) free(r->names[i]);
    free(r->names);
    free(r->types);
    free(r->flags);
    free((char *)r->info.name);
    free((char *)r->info.parent);
    free(r);
}

static int find_col(char **names, size_t n, const char *col, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], col, len) == 0) return (int)i;
    return -1;
}

/* Resolves a comma-separated column list into indices. */
static int resolve_cols(mr_rel *r, const char *list, int *out, int *n)
{
    *n = 0;
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int idx = find_col(r->names, r->info.ncols, p, len);
        if (idx < 0)
            return mr_err(MORAINE_EINVAL, "%s: the catalog's table has no column '%.*s', which moraine keys it by",
                          r->info.name, (int)len, p);
        if (*n >= MR_MAX_KEYCOLS) return mr_err(MORAINE_EINVAL, "%s: too many key columns", r->info.name);
        out[(*n)++] = idx;
        p = comma ? comma + 1 : p + len;
    }
    return 0;
}

int mr_rel_build(moraine_db *db, const char *name, uint32_t id, size_t ncols, const char *const *colnames, mr_rel **out)
{
    (void)db;
    mr_rel *r = calloc(1, sizeof *r);
    if (!r) return mr_err(MORAINE_ENOMEM, "out of memory");
    r->info.name = strdup(name);
    r->namelen = strlen(name);
    r->info.id = id;
    r->info.ncols = ncols;
    r->names = calloc(ncols ? ncols : 1, sizeof *r->names);
    r->types = calloc(ncols ? ncols : 1, sizeof *r->types);
    r->flags = calloc(ncols ? ncols : 1, sizeof *r->flags);
    if (!r->info.name || !r->names || !r->types || !r->flags) {
        r->info.ncols = 0;
        mr_rel_free(r);
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    const mr_known_table *kt = mr_known(name);
    r->info.begin_col = r->info.end_col = -1;
    for (size_t i = 0; i < ncols; i++) {
        r->names[i] = strdup(colnames[i]);
        if (!r->names[i]) {
            r->info.ncols = i;
            mr_rel_free(r);
            return mr_err(MORAINE_ENOMEM, "out of memory");
        }
        if (find_col(r->names, i, colnames[i], strlen(colnames[i])) >= 0) {
            r->info.ncols = i + 1;
            mr_rel_free(r);
            return mr_err(MORAINE_EINVAL, "%s: column '%s' appears twice", name, colnames[i]);
        }
        r->types[i] = mr_known_coltype(kt, colnames[i]);
        r->flags[i] = mr_known_colflags(kt, colnames[i]);
        if (strcmp(colnames[i], "begin_snapshot") == 0) r->info.begin_col = (int)i;
        if (strcmp(colnames[i], "end_snapshot") == 0) r->info.end_col = (int)i;
    }
    r->info.colnames = (const char *const *)r->names;
    r->info.coltypes = r->types;
    r->info.colflags = r->flags;
    int rc = 0;
    if (kt) {
        r->info.placement = kt->placement;
        r->scoped = kt->scoped;
        if (kt->parent && !(r->info.parent = strdup(kt->parent))) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        if (!rc && ncols > 0 && kt->key) rc = resolve_cols(r, kt->key, kt->placement == MORAINE_PLACE_CHILD ? r->parentkey : r->keycols,
                                                           &r->nkey);
        if (!rc && ncols > 0 && kt->placement == MORAINE_PLACE_TEMPORAL && (r->info.begin_col < 0 || r->info.end_col < 0))
            rc = mr_err(MORAINE_EINVAL, "%s: a temporal table needs begin_snapshot and end_snapshot columns", name);
        if (!rc && kt->placement == MORAINE_PLACE_CHILD) {
            /* for children nkey counts parent key columns */
        }
    } else {
        /* A table moraine does not know: temporal when it has both snapshot
         * columns (inlined data tables), keyed by row position; else rows. */
        r->info.placement = (r->info.begin_col >= 0 && r->info.end_col >= 0) ? MORAINE_PLACE_TEMPORAL : MORAINE_PLACE_ROWS;
        r->nkey = 0;
    }
    if (rc) {
        mr_rel_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int mr_rel_encode(mr_buf *b, const mr_rel *r, const mr_buf *key)
{
    size_t n = r->info.ncols + 1;
    moraine_value *v = calloc(n, sizeof *v);
    if (!v) return mr_err(MORAINE_ENOMEM, "out of memory");
    v[0].type = MORAINE_STR;
    v[0].s = r->info.name;
    v[0].len = strlen(r->info.name);
    for (size_t i = 0; i < r->info.ncols; i++) {
        v[i + 1].type = MORAINE_STR;
        v[i + 1].s = r->names[i];
        v[i + 1].len = strlen(r->names[i]);
    }
    size_t start = b->len;
    int rc = mr_value_begin(b);
    if (!rc) rc = mr_encode_row(b, 0, v, n);
    if (!rc) mr_value_seal(b, start, key->p, key->len);
    free(v);
    return rc;
}

static void rels_clear(moraine_db *db)
{
    for (size_t i = 0; i < db->nrels; i++) mr_rel_free(db->rels[i]);
    for (size_t i = 0; i < db->nretired; i++) mr_rel_free(db->retired[i]);
    free(db->rels);
    free(db->byid);
    free(db->retired);
    db->rels = db->byid = db->retired = NULL;
    db->nrels = db->caprels = db->capid = db->nretired = 0;
}

/* Adds or replaces (same id) a descriptor in the in-memory tables. A replaced
 * descriptor is retired, not freed: readers may still point at it. */
int mr_rels_add(moraine_db *db, mr_rel *r)
{
    uint32_t id = r->info.id;
    if (id >= db->capid) {
        size_t cap = db->capid ? db->capid : 64;
        while (cap <= id) cap *= 2;
        mr_rel **p = realloc(db->byid, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        memset(p + db->capid, 0, (cap - db->capid) * sizeof *p);
        db->byid = p;
        db->capid = cap;
    }
    mr_rel *old = db->byid[id];
    if (old) {
        mr_rel **p = realloc(db->retired, (db->nretired + 1) * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        db->retired = p;
        db->retired[db->nretired++] = old;
        for (size_t i = 0; i < db->nrels; i++)
            if (db->rels[i] == old) db->rels[i] = r;
    } else {
        if (db->nrels == db->caprels) {
            size_t cap = db->caprels ? db->caprels * 2 : 32;
            mr_rel **p = realloc(db->rels, cap * sizeof *p);
            if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
            db->rels = p;
            db->caprels = cap;
        }
        db->rels[db->nrels++] = r;
    }
    db->byid[id] = r;
    return 0;
}

/* Whether the loaded descriptor @r is the stored one decoded into @vals
 * (table name, then every column name in order). */
static int same_descriptor(const mr_rel *r, const moraine_value *vals, size_t n)
{
    if (r->info.ncols != n - 1 || vals[0].type != MORAINE_STR || strlen(r->info.name) != vals[0].len ||
        memcmp(r->info.name, vals[0].s, vals[0].len) != 0)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (vals[i].type != MORAINE_STR || strlen(r->names[i - 1]) != vals[i].len || memcmp(r->names[i - 1], vals[i].s, vals[i].len) != 0)
            return 0;
    return 1;
}

/* Loads descriptors from the meta subspace when another writer (this or
 * another process) has defined relations since the last load. */
int mr_load_relations(moraine_db *db, MDB_txn *t)
{
    int64_t gen = 0;
    int rc = mr_meta_get_int(t, db->dbi, "rels_gen", &gen);
    if (rc < 0) return rc;
    if ((uint64_t)gen == db->rels_gen) return 0;
    mr_buf k = {0}, scratch = {0};
    if ((rc = mr_meta_key(&k, "rel"))) return rc;
    MDB_cursor *c;
    int mrc = mdb_cursor_open(t, db->dbi, &c);
    if (mrc) {
        mr_buf_free(&k);
        return mr_lmdb_err(mrc, "opening a cursor");
    }
    MDB_val key = {k.len, k.p}, val;
    moraine_value *vals = NULL;
    size_t cap = 0, nseen = 0, capseen = 0;
    uint8_t *seen = NULL; /* ids of the descriptors in the store */
    for (mrc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(c, &key, &val, MDB_NEXT)) {
        if (key.mv_size < k.len || memcmp(key.mv_data, k.p, k.len) != 0) break;
        const uint8_t *kp = (const uint8_t *)key.mv_data + k.len, *kend = (const uint8_t *)key.mv_data + key.mv_size;
        moraine_value idv;
        if ((rc = mr_key_next(&kp, kend, &idv, &scratch))) break;
        if (idv.type != MORAINE_INT || idv.i < 0 || idv.i > 1000000) {
            rc = mr_err(MORAINE_ECORRUPT, "relation descriptor with a bad id");
            break;
        }
        if (idv.i < (int64_t)db->capid && db->byid[idv.i] && (uint64_t)gen != db->rels_gen) {
            /* reloaded below only if its columns changed */
        }
        mr_bounds bnd;
        mr_bounds_get(db, &bnd);
        if (!mr_value_ok(&bnd, &val)) {
            rc = mr_err(MORAINE_ECORRUPT, "the catalog's table descriptor %lld runs past the end of the file: LMDB's pages are damaged", (long long)idv.i);
            break;
        }
        const uint8_t *p = val.mv_data, *end = p + val.mv_size;
        int ver; /* a descriptor is the same in formats 2 to 5: an older catalog opens for moraine_compact */
        if ((rc = mr_decode_header_any(&p, end, key.mv_data, key.mv_size, &ver))) {
            char m[400];
            snprintf(m, sizeof m, "%s", moraine_errmsg());
            rc = mr_err(rc, "the catalog's table descriptor M('rel',%lld) is damaged: %s", (long long)idv.i, m);
            break;
        }
        /* count cells first: descriptor rows are small */
        if (cap < 4096) {
            free(vals);
            cap = 4096;
            vals = calloc(cap, sizeof *vals);
            if (!vals) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
        }
        int64_t ord;
        size_t n;
        if ((rc = mr_decode_row(&p, end, &ord, vals, cap, &n))) break;
        if (n < 1 || vals[0].type != MORAINE_STR) {
            rc = mr_err(MORAINE_ECORRUPT, "relation descriptor %lld is malformed", (long long)idv.i);
            break;
        }
        nseen++;
        if ((size_t)idv.i >= capseen) {
            size_t nc = capseen ? capseen : 64;
            while (nc <= (size_t)idv.i) nc *= 2;
            uint8_t *ns = realloc(seen, nc);
            if (!ns) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            memset(ns + capseen, 0, nc - capseen);
            seen = ns;
            capseen = nc;
        }
        seen[idv.i] = 1;
        mr_rel *have = idv.i < (int64_t)db->capid ? db->byid[idv.i] : NULL;
        if (have && same_descriptor(have, vals, n)) continue; /* unchanged */
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)vals[0].len, vals[0].s);
        const char **cols = calloc(n, sizeof *cols);
        char **owned = calloc(n, sizeof *owned);
        if (!cols || !owned) {
            free(cols);
            free(owned);
            rc = mr_err(MORAINE_ENOMEM, "out of memory");
            break;
        }
        for (size_t i = 1; i < n && !rc; i++) {
            owned[i] = strndup(vals[i].s, vals[i].len);
            if (!owned[i]) rc = mr_err(MORAINE_ENOMEM, "out of memory");
            cols[i - 1] = owned[i];
        }
        mr_rel *r = NULL;
        if (!rc) rc = mr_rel_build(db, name, (uint32_t)idv.i, n - 1, cols, &r);
        for (size_t i = 1; i < n; i++) free(owned[i]);
        free(owned);
        free(cols);
        if (!rc) rc = mr_rels_add(db, r);
        if (rc) {
            mr_rel_free(r);
            break;
        }
    }
    mdb_cursor_close(c);
    free(vals);
    mr_buf_free(&k);
    mr_buf_free(&scratch);
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = mr_lmdb_err(mrc, "reading relation descriptors");
    /* ids are handed out 1, 2, ... and never taken back (a clear drops them
     * all): a descriptor missing below next_rel_id had its key damaged */
    int64_t next = 1;
    if (!rc && (rc = mr_meta_get_int(t, db->dbi, "next_rel_id", &next)) >= 0) {
        if (rc == 0) next = 1;
        rc = 0;
        if (next >= 1 && nseen != (size_t)(next - 1)) {
            int64_t missing = 1;
            while (missing < next && (size_t)missing < capseen && seen[missing]) missing++;
            rc = mr_err(MORAINE_ECORRUPT, "the catalog's table descriptor M('rel',%lld) is missing (%zu descriptors, %lld expected): "
                        "its key is damaged", (long long)missing, nseen, (long long)(next - 1));
        }
    }
    if (!rc) {
        /* descriptors no longer in the store (a catalog cleared and imported
         * again): retired, not freed, as readers may still point at them */
        size_t kept = 0;
        for (size_t i = 0; i < db->nrels; i++) {
            mr_rel *r = db->rels[i];
            if ((size_t)r->info.id < capseen && seen[r->info.id]) {
                db->rels[kept++] = r;
                continue;
            }
            mr_rel **p = realloc(db->retired, (db->nretired + 1) * sizeof *p);
            if (!p) {
                db->rels[kept++] = r;
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                continue;
            }
            db->retired = p;
            db->retired[db->nretired++] = r;
            db->byid[r->info.id] = NULL;
        }
        db->nrels = kept;
    }
    free(seen);
    if (rc) return rc;
    db->rels_gen = (uint64_t)gen;
    return 0;
}

mr_rel *mr_rel_by_name(moraine_db *db, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < db->nrels; i++)
        if (mr_rel_named(db->rels[i], name, len)) return db->rels[i];
    return NULL;
}

mr_rel *mr_rel_by_id(moraine_db *db, uint64_t id) { return id < db->capid ? db->byid[id] : NULL; }

int moraine_relation_at(moraine_db *db, size_t i, moraine_relation_info *out)
{
    pthread_mutex_lock(&db->mu);
    int found = i < db->nrels;
    if (found) *out = db->rels[i]->info;
    pthread_mutex_unlock(&db->mu);
    return found;
}

int moraine_column_index(const moraine_relation_info *rel, const char *col)
{
    /* the first byte first: most names differ there, and strcmp is a call */
    const char c0 = col[0];
    for (size_t i = 0; i < rel->ncols; i++)
        if (rel->colnames[i][0] == c0 && strcmp(rel->colnames[i], col) == 0) return (int)i;
    return -1;
}

/* ---- keys of rows ---- */

int mr_current_key(mr_buf *b, const mr_rel *r, const moraine_value *row, int64_t ord)
{
    b->len = 0;
    int rc = mr_buf_byte(b, MR_SUB_CURRENT);
    if (!rc) rc = mr_key_int(b, r->info.id);
    if (r->nkey == 0) return rc ? rc : mr_key_int(b, ord);
    for (int i = 0; !rc && i < r->nkey; i++) rc = mr_key_value(b, &row[r->keycols[i]]);
    return rc;
}

int mr_history_key(mr_buf *b, const mr_rel *r, const moraine_value *row, int64_t ord)
{
    b->len = 0;
    int rc = mr_buf_byte(b, MR_SUB_HISTORY);
    if (!rc) rc = mr_key_int(b, r->info.id);
    int k = 0;
    if (!rc && r->scoped) rc = mr_key_value(b, &row[r->keycols[k++]]);
    if (!rc) rc = mr_key_value(b, &row[r->info.end_col]);
    if (r->nkey == 0 && !rc) rc = mr_key_int(b, ord);
    for (; !rc && k < r->nkey; k++) rc = mr_key_value(b, &row[r->keycols[k]]);
    if (!rc) rc = mr_key_value(b, &row[r->info.begin_col]);
    return rc;
}

int mr_rows_key(mr_buf *b, const mr_rel *r, int64_t ord)
{
    b->len = 0;
    int rc = mr_buf_byte(b, MR_SUB_ROWS);
    if (!rc) rc = mr_key_int(b, r->info.id);
    return rc ? rc : mr_key_int(b, ord);
}

int mr_snapshot_key(mr_buf *b, int64_t id)
{
    b->len = 0;
    int rc = mr_buf_byte(b, MR_SUB_SNAPSHOT);
    return rc ? rc : mr_key_int(b, id);
}

static int describe_value(const moraine_value *v, char *out, size_t n)
{
    switch (v->type) {
    case MORAINE_NULL: return snprintf(out, n, "NULL");
    case MORAINE_INT: return snprintf(out, n, "%lld", (long long)v->i);
    case MORAINE_BOOL: return snprintf(out, n, "%s", v->i ? "true" : "false");
    case MORAINE_REAL: return snprintf(out, n, "%g", v->d);
    default: return snprintf(out, n, "'%.*s'", (int)(v->len > 40 ? 40 : v->len), v->s);
    }
}

/* Names a row by its key columns, e.g. "(table_id=1, data_file_id=7)"; rows
 * without key columns by their position. */
int mr_describe_row(const mr_rel *r, const moraine_value *row, size_t ncols, char *out, size_t outlen)
{
    const int *cols = r->info.placement == MORAINE_PLACE_CHILD ? r->parentkey : r->keycols;
    size_t o = (size_t)snprintf(out, outlen, "(");
    for (int i = 0; i < r->nkey && o < outlen; i++) {
        if ((size_t)cols[i] >= ncols) break;
        o += (size_t)snprintf(out + o, outlen - o, "%s%s=", i ? ", " : "", r->names[cols[i]]);
        if (o < outlen) o += (size_t)describe_value(&row[cols[i]], out + o, outlen - o);
    }
    if (r->nkey == 0 && o < outlen && ncols > 0) {
        o += (size_t)snprintf(out + o, outlen - o, "%s=", r->names[0]);
        if (o < outlen) o += (size_t)describe_value(&row[0], out + o, outlen - o);
    }
    if (o < outlen) snprintf(out + o, outlen - o, ")");
    return 0;
}

static const char *type_name(moraine_type t)
{
    switch (t) {
    case MORAINE_NULL: return "NULL";
    case MORAINE_INT: return "an integer";
    case MORAINE_STR: return "a string";
    case MORAINE_BOOL: return "a boolean";
    case MORAINE_REAL: return "a floating-point number (in JSON: one written with a fraction or an exponent, as 1.0 or 1e3)";
    case MORAINE_JSON: return "a nested JSON value";
    default: return "of unknown type";
    }
}

/* The row's cells against the declared types, one by one, naming the first
 * that is wrong (0 when none is). */
static int check_cells(const mr_rel *r, const moraine_value *row, size_t ncols)
{
    char desc[256];
    for (size_t i = 0; i < ncols; i++) {
        moraine_type t = row[i].type;
        if (t != MORAINE_NULL && t != MORAINE_INT && t != MORAINE_STR && t != MORAINE_BOOL && t != MORAINE_REAL && t != MORAINE_JSON) {
            mr_describe_row(r, row, ncols, desc, sizeof desc);
            return mr_err(MORAINE_EINVAL, "%s row %s: column '%s' holds a value of unknown type %d", r->info.name, desc,
                          r->names[i], (int)t);
        }
        if ((t == MORAINE_STR || t == MORAINE_JSON) && row[i].len && !row[i].s) {
            mr_describe_row(r, row, ncols, desc, sizeof desc);
            return mr_err(MORAINE_EINVAL, "%s row %s: column '%s' has a NULL string pointer", r->info.name, desc, r->names[i]);
        }
        moraine_coltype ct = r->types[i];
        const char *want = NULL;
        if (ct == MORAINE_COL_BIGINT && t != MORAINE_NULL && t != MORAINE_INT) want = "BIGINT";
        if (ct == MORAINE_COL_VARCHAR && t != MORAINE_NULL && t != MORAINE_STR) want = "VARCHAR";
        if (ct == MORAINE_COL_BOOLEAN && t != MORAINE_NULL && t != MORAINE_BOOL) want = "BOOLEAN";
        if (want) {
            mr_describe_row(r, row, ncols, desc, sizeof desc);
            return mr_err(MORAINE_EINVAL, "%s row %s: column '%s' is %s but the value is %s", r->info.name, desc, r->names[i],
                          want, type_name(t));
        }
    }
    return 0;
}

/* Checks a row against the descriptor: column count and declared types. A
 * bit per value type each column type takes; a cell outside it (or a string
 * without bytes) sends the row to check_cells, which names what is wrong. */
int mr_check_value(const mr_rel *r, const moraine_value *row, size_t ncols, int64_t ord)
{
    if (ncols != r->info.ncols)
        return mr_err(MORAINE_EINVAL, "%s: a row has %zu columns, the table has %zu", r->info.name, ncols, r->info.ncols);
    enum { N = 1u << MORAINE_NULL, I = 1u << MORAINE_INT, S = 1u << MORAINE_STR, B = 1u << MORAINE_BOOL, R = 1u << MORAINE_REAL, J = 1u << MORAINE_JSON };
    /* bit 8 * ct + t: column type ct (MORAINE_COL_*) takes value type t */
    static const uint32_t takes = (uint32_t)(N | I | S | B | R | J) << (8 * MORAINE_COL_ANY) | (uint32_t)(N | I) << (8 * MORAINE_COL_BIGINT) |
                                  (uint32_t)(N | S) << (8 * MORAINE_COL_VARCHAR) | (uint32_t)(N | B) << (8 * MORAINE_COL_BOOLEAN);
    for (size_t i = 0; i < ncols; i++) {
        unsigned t = (unsigned)row[i].type, ct = (unsigned)r->types[i];
        if (ct > MORAINE_COL_BOOLEAN) ct = MORAINE_COL_ANY; /* a type this build does not know: any value */
        if (t > MORAINE_JSON || !(takes >> (8 * ct + t) & 1u)) return check_cells(r, row, ncols);
        if (((S | J) >> t & 1u) && row[i].len && !row[i].s) return check_cells(r, row, ncols);
    }
    (void)ord;
    return 0;
}

/* ---- open / close ---- */

/* Whether the format marker is format 1's: 8 bytes holding 1 (format 2 adds
 * a checksum to every meta integer). */
static int old_format(MDB_txn *t, MDB_dbi dbi)
{
    mr_buf k = {0};
    if (mr_meta_key(&k, "format")) return 0;
    MDB_val key = {k.len, k.p}, v;
    int old = mdb_get(t, dbi, &key, &v) == 0 && v.mv_size == 8 && ((const uint8_t *)v.mv_data)[7] == 1 &&
              memcmp(v.mv_data, "\0\0\0\0\0\0\0", 7) == 0;
    mr_buf_free(&k);
    return old;
}

/* One LMDB environment per catalog file per process (LMDB: never open the
 * same environment twice in one process; closing one of two would drop the
 * process's locks and let another process reset the reader table under the
 * other). Handles of the same data.mdb (by device and inode) share it,
 * reference counted. Entries of another process (inherited across fork) are
 * never shared: they belong to the parent. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static mr_env *reg_head;

static mr_env *env_find(const char *path)
{
    char file[4096];
    struct stat st;
    snprintf(file, sizeof file, "%s/data.mdb", path);
    if (stat(file, &st) != 0) return NULL;
    pid_t me = getpid();
    unsigned forks = mr_forks_now();
    for (mr_env *e = reg_head; e; e = e->next)
        if (e->pid == me && e->forks == forks && e->dev == st.st_dev && e->ino == st.st_ino) return e;
    return NULL;
}

/* What one moraine_open call created, for its failure to remove (open_undo).
 * had_data, had_lock: data.mdb, lock.mdb were there before the call's
 * mdb_env_open. Both 1 (not the call's) unless env_open probed them just
 * before its mdb_env_open, and again when another handle shares the
 * environment by the time of the failure. */
typedef struct {
    int made_dir; /* the call made the directory (mkdir) */
    int had_data, had_lock;
    int foreign;  /* data.mdb is not an LMDB file (MDB_INVALID, MDB_VERSION_MISMATCH) or is cut short: no process can be using it */
} open_made;

/* Removes what a failed moraine_open created in @path (@m), reg_mu held and
 * the environment closed. lock.mdb goes when the call created it and made
 * the directory or found data.mdb foreign; data.mdb only when the call
 * created it in a directory it made (in one that was there, another process
 * may be creating the same catalog); the directory last (rmdir: only if
 * empty). A file or directory that was there before is never removed. */
static void open_undo(const char *path, const open_made *m)
{
    char f[4096];
    if (!m->had_lock && (m->made_dir || m->foreign) && snprintf(f, sizeof f, "%s/lock.mdb", path) < (int)sizeof f) (void)unlink(f);
    if (!m->had_data && m->made_dir && snprintf(f, sizeof f, "%s/data.mdb", path) < (int)sizeof f) (void)unlink(f);
    if (m->made_dir) (void)rmdir(path);
}

/* Opens a new environment for @path and registers it (reg_mu held). Sets
 * @m's had_data, had_lock before mdb_env_open runs, and foreign when
 * data.mdb is not a usable LMDB file; on a failure closes what it opened and
 * leaves the files to the caller (open_undo). */
static int env_open(const char *path, const moraine_options *o, open_made *m, mr_env **out)
{
    mr_env *e = calloc(1, sizeof *e);
    if (!e) return mr_err(MORAINE_ENOMEM, "out of memory");
    int rc = 0;
    int mrc = mdb_env_create(&e->env);
    if (!mrc) mrc = mdb_env_set_userctx(e->env, e); /* int_cache.c finds the cache from a transaction */
    if (!mrc) mrc = mdb_env_set_mapsize(e->env, o->map_size);
    if (!mrc) mrc = mdb_env_set_maxreaders(e->env, 512);
    unsigned flags = MDB_NOTLS | (o->read_only ? MDB_RDONLY : 0) | (o->no_sync ? MDB_NOSYNC : 0);
    if (!mrc && o->read_only) {
        /* A process that created the catalog was stopped before LMDB wrote
         * its first pages: data.mdb is empty. LMDB read-only says only "Bad
         * file descriptor"; say what it is (nothing was ever committed). */
        char dpath[4096];
        struct stat dst;
        if (snprintf(dpath, sizeof dpath, "%s/data.mdb", path) < (int)sizeof dpath && stat(dpath, &dst) == 0 &&
            dst.st_size == 0) {
            rc = mr_err(MORAINE_EIO, "%s: cannot open catalog read-only: its data.mdb is empty (the process that "
                        "created it stopped before anything was committed); a write (init, import, sync) sets it up",
                        path);
            goto fail;
        }
    }
    struct stat st;
    if (!mrc) {
        char probe[4096];
        m->had_data = snprintf(probe, sizeof probe, "%s/data.mdb", path) >= (int)sizeof probe || stat(probe, &st) == 0;
        m->had_lock = snprintf(probe, sizeof probe, "%s/lock.mdb", path) >= (int)sizeof probe || stat(probe, &st) == 0;
        mrc = mdb_env_open(e->env, path, flags, 0600); /* new data.mdb and lock.mdb: owner only (docs/security.md) */
    }
    int fd;
    if (!mrc && !(mrc = mdb_env_get_fd(e->env, &fd)) && fstat(fd, &st) != 0) mrc = errno;
    if (mrc) {
        m->foreign = mrc == MDB_INVALID || mrc == MDB_VERSION_MISMATCH;
        if (mrc == EACCES)
            /* LMDB opens lock.mdb for writing even to read, and data.mdb for writing to write */
            rc = mr_err(MORAINE_EIO, "%s: cannot open catalog: permission denied: %s needs %s/lock.mdb writable%s, and the "
                        "directory itself when they do not exist yet", path, o->read_only ? "reading" : "writing", path,
                        o->read_only ? " (LMDB's reader table) and data.mdb readable" : " and data.mdb writable");
        else
            rc = mrc == ENOENT ? mr_err(MORAINE_EIO, "%s: cannot open catalog: %s", path, mdb_strerror(mrc)) : mr_lmdb_err(mrc, path);
        goto fail;
    }
    /* A data.mdb shorter than the pages its meta page counts (an interrupted
     * copy, a truncated file): reading the missing pages through the map
     * would kill the process (SIGBUS). Refused here, before any page is read
     * (LMDB reads its two meta pages, the file's first 8 KB, with read(2)). */
    MDB_envinfo ei;
    MDB_stat ms;
    if (!mdb_env_info(e->env, &ei) && !mdb_env_stat(e->env, &ms) && ms.ms_psize &&
        (uint64_t)st.st_size < ((uint64_t)ei.me_last_pgno + 1) * ms.ms_psize) {
        rc = mr_err(MORAINE_ECORRUPT, "%s: data.mdb is %llu bytes, but its pages reach byte %llu: the file was cut short "
                    "(an interrupted copy?); restore it from a whole copy", path, (unsigned long long)st.st_size,
                    ((unsigned long long)ei.me_last_pgno + 1) * ms.ms_psize);
        m->foreign = 1; /* a lock.mdb this open made goes */
        goto fail;
    }
    /* Reader slots left by processes that died in a read: clear them. */
    if (!o->read_only) mdb_reader_check(e->env, NULL);
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->pid = getpid();
    e->forks = mr_forks_now();
    e->refs = 1;
    e->read_only = o->read_only;
    e->no_sync = o->no_sync;
    pthread_mutex_init(&e->mu, NULL);
    mr_int_cache_init(&e->ic);
    e->next = reg_head;
    reg_head = e;
    *out = e;
    return 0;
fail:
    if (e->env) mdb_env_close(e->env);
    free(e);
    return rc;
}

/* Drops one handle's share of @e (reg_mu held); the last one takes it out of
 * the registry and returns 1: the caller then closes it (env_free). */
static int env_unref(mr_env *e)
{
    if (--e->refs != 0) return 0;
    for (mr_env **pp = &reg_head; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    return 1;
}

/* Closes environment @e, out of the registry (env_unref returned 1). */
static void env_free(mr_env *e)
{
    mdb_env_close(e->env);
    pthread_mutex_destroy(&e->mu);
    mr_int_cache_free(&e->ic);
    free(e);
}

static void env_release(mr_env *e)
{
    pthread_mutex_lock(&reg_mu);
    int last = env_unref(e);
    pthread_mutex_unlock(&reg_mu);
    if (last) env_free(e);
}

/* Ends the write transaction moraine_open began with mr_write_txn_begin:
 * commits it (@commit) or aborts it, then clears the writer. Returns LMDB's
 * error code of the commit, or 0. */
static int open_write_end(moraine_db *db, MDB_txn *t, int commit)
{
    int mrc = 0;
    if (commit) mrc = mdb_txn_commit(t);
    else mdb_txn_abort(t);
    mr_writer_done(db->sh);
    return mrc;
}

int moraine_open(const char *path, const moraine_options *opts, moraine_db **out)
{
    moraine_options o = {0};
    if (opts) o = *opts;
    else o.create = 1;
    if (!path || !out) return mr_err(MORAINE_EINVAL, "moraine_open: NULL path or out");
    if (!o.map_size) o.map_size = DEFAULT_MAP;
    if (o.map_size < MIN_MAP) o.map_size = MIN_MAP; /* the least a catalog's first commits fit in */
    if (!o.max_map_size) o.max_map_size = DEFAULT_MAX_MAP;
    if (o.max_map_size < o.map_size) o.max_map_size = o.map_size;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (!exists && (o.read_only || !o.create)) return mr_err(MORAINE_EIO, "%s: no such catalog directory", path);
    if (exists && !S_ISDIR(st.st_mode)) return mr_err(MORAINE_EIO, "%s: not a directory (a moraine catalog is a directory)", path);
    moraine_db *db = calloc(1, sizeof *db);
    if (!db) return mr_err(MORAINE_ENOMEM, "out of memory");
    db->opts = o;
    mr_fork_watch(); /* before any read of this handle can begin, and before its count is taken */
    db->pid = getpid();
    db->forks = mr_forks_now();
    pthread_mutex_init(&db->mu, NULL);
    /* From here every failure goes through fail: what this call created
     * (made) goes, nothing that was there before (open_undo). */
    open_made made = {0, 1, 1, 0};
    int rc = 0, mrc;
    int writes = 0; /* this call writes a new catalog's format marker (below) */
    if (!exists) {
        /* private, as PostgreSQL's data directory: the store may hold encryption keys */
        /* another process may create it between stat and mkdir (two imports or
         * syncs started at once): a directory that exists now is fine */
        if (mkdir(path, 0700) == 0) made.made_dir = 1;
        else if (!(errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
            rc = mr_err(MORAINE_EIO, "%s: cannot create directory: %s", path, strerror(errno));
            goto fail;
        }
    }
    pthread_mutex_lock(&reg_mu);
    mr_env *sh = env_find(path);
    int created = 0; /* this call opened the environment: no other handle shares it yet */
    if (sh) {
        if (sh->read_only && !o.read_only) {
            rc = mr_err(MORAINE_EREADONLY, "%s: the catalog is already open read-only in this process; close that handle first, or open the "
                        "catalog for writing first (one process shares one LMDB environment per catalog)", path);
            goto fail_locked;
        }
        sh->refs++;
        sh->shared = 1;
    } else if ((rc = env_open(path, &o, &made, &sh))) {
        goto fail_locked;
    } else {
        created = 1;
    }
    db->sh = sh;
    db->env = sh->env;
    /* The handle that opened the environment writes the format marker of a
     * new catalog (decided here, under reg_mu: a handle that shared the
     * environment before the decision made both read, and nobody wrote the
     * marker). A handle sharing an open environment only reads (the thread
     * may hold a commit open on the other handle: a write transaction would
     * wait on it); if it finds a new catalog, its first commit writes the
     * marker too (need_marker), in case it commits before the handle that
     * opened the environment wrote it. reg_mu is not held across the write:
     * it may wait for another process's commit, which may wait for a commit
     * of this process whose thread then opens or closes a handle. */
    writes = !o.read_only && created;
    pthread_mutex_unlock(&reg_mu);
    /* A larger map may have been set by another process or handle: adopt it. */
    MDB_envinfo ei;
    if (mr_env_info(db, &ei) == 0 && ei.me_mapsize > db->opts.map_size) db->opts.map_size = ei.me_mapsize;

    MDB_txn *t;
    if (writes ? (rc = mr_write_txn_begin(db, 0, &t)) != 0 : (mrc = mr_read_txn_begin(db, &t, NULL)) != 0) {
        rc = writes ? mr_err(rc, "%s: %s", path, moraine_errmsg()) : mr_lmdb_err(mrc, path);
        goto fail;
    }
    if ((mrc = mdb_dbi_open(t, NULL, 0, &db->dbi))) {
        writes ? open_write_end(db, t, 0) : mr_read_txn_end(db, t);
        rc = mr_lmdb_err(mrc, path);
        goto fail;
    }
    int64_t fmt = 0;
    rc = old_format(t, db->dbi) ? (fmt = 1, 1) : mr_meta_get_int(t, db->dbi, "format", &fmt);
    if (rc == 0) {
        /* no format marker: a new catalog, or an LMDB file of something else */
        MDB_stat ms;
        mdb_stat(t, db->dbi, &ms);
        if (ms.ms_entries != 0) {
            rc = mr_err(MORAINE_ECORRUPT, "%s: holds an LMDB database that is not a moraine catalog", path);
        } else if (writes) {
            rc = mr_meta_put_int(t, db->dbi, "format", MR_FORMAT_VERSION);
        } else if (!o.read_only) {
            db->need_marker = 1;
        }
    } else if (rc == 1) {
        if (fmt == 1)
            rc = mr_err(MORAINE_EFORMAT, "%s: catalog format 1 (an older moraine: values not bound to their keys), this build reads %d: "
                        "export it with the build that wrote it and import the export into a new catalog", path, MR_FORMAT_VERSION);
        else if (fmt < MR_FORMAT_OLDEST || fmt > MR_FORMAT_VERSION) /* an older one opens: its descriptors load, and
                                                                       moraine_compact rewrites it; no read or commit */
            rc = mr_err(MORAINE_EFORMAT, "%s: catalog format %lld, this build reads %d", path, (long long)fmt, MR_FORMAT_VERSION);
        else
            rc = 0;
    }
    db->format = fmt ? (int)fmt : MR_FORMAT_VERSION;
    if (!rc) rc = mr_load_relations(db, t);
    if (rc) {
        writes ? open_write_end(db, t, 0) : mr_read_txn_end(db, t);
        goto fail;
    }
    if (!writes) mr_read_txn_end(db, t);
    else if ((mrc = open_write_end(db, t, 1))) {
        rc = mr_lmdb_err(mrc, path);
        goto fail;
    }
    *out = db;
    return 0;
fail:
    pthread_mutex_lock(&reg_mu);
fail_locked:
    /* reg_mu held from the environment's release to open_undo: no handle of
     * this process can open the files in between */
    if (db->sh) {
        /* another handle shares the environment now, or did (it may have
         * committed while this open wrote the marker): its files stay */
        if (db->sh->shared) made.had_data = made.had_lock = 1;
        if (env_unref(db->sh)) env_free(db->sh);
    }
    open_undo(path, &made);
    pthread_mutex_unlock(&reg_mu);
    rels_clear(db);
    pthread_mutex_destroy(&db->mu);
    free(db);
    return rc;
}

/* Frees handle @db: its share of the environment (@release_env; not for a
 * handle inherited across fork), its descriptors and itself. The handle's
 * open commit is the caller's to end first (moraine_close, txn.c). */
void mr_db_free(moraine_db *db, int release_env)
{
    mr_verbs_cache_free(db); /* its rows point at the descriptors */
    if (release_env) env_release(db->sh);
    rels_clear(db);
    pthread_mutex_destroy(&db->mu);
    free(db);
}

unsigned mr_forks;

/* The registry lock is taken by the forking thread before fork and released
 * on both sides after it: a child never starts with reg_mu locked by a
 * thread it does not have (another thread's moraine_open or moraine_close at
 * the moment of fork), where its own opens would wait forever. Nothing of
 * moraine forks with reg_mu held, and it is not held across a wait on
 * another process (moraine_open), so the fork waits at most for one
 * environment's open or close. */
static void fork_prepare(void) { pthread_mutex_lock(&reg_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&reg_mu); }
static void fork_child(void)
{
    __atomic_add_fetch(&mr_forks, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_mu);
}

static void fork_register(void)
{
    /* fails only for want of memory: reads then go unguarded after fork, as before */
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void mr_fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fork_register);
}

int mr_walk_forked(const char *what, pid_t pid)
{
    return mr_err(MORAINE_EFORK, "%s was begun in process %ld and used in process %ld (after fork): its LMDB snapshot is held by "
                  "the process that began it, which may end it at any time; begin a read in this process (open the catalog again here)",
                  what, (long)pid, (long)getpid());
}

int mr_read_forked(const moraine_read *rd) { return mr_walk_forked("the read", rd->db->pid); }

const unsigned *moraine_fork_count(void) { return &mr_forks; }

int mr_db_here(const moraine_db *db) { return db->pid == getpid() && db->forks == mr_forks_now(); }

int mr_same_process(moraine_db *db)
{
    if (mr_db_here(db)) return 0;
    return mr_err(MORAINE_EFORK, "the catalog handle was opened by process %ld and used in process %ld (after fork): LMDB environments do "
                  "not survive fork; close it and open the catalog again in this process", (long)db->pid, (long)getpid());
}

int moraine_last_snapshot(moraine_db *db, int64_t *out)
{
    int rc = mr_same_process(db);
    if (rc) return rc;
    MDB_txn *t;
    int mrc = mr_read_txn_begin(db, &t, NULL);
    if (mrc) return mr_lmdb_err(mrc, "reading the last snapshot");
    rc = mr_meta_get_int(t, db->dbi, "last_snapshot", out);
    mr_read_txn_end(db, t);
    return rc;
}

/* Where LMDB mapped data.mdb: LMDB reports it only for MDB_FIXEDMAP, so it is
 * read from /proc/self/maps (Linux) by the file's device and inode; NULL when
 * it cannot be found (then only a value's length is checked). */
static const char *find_map(MDB_env *env)
{
    int fd;
    struct stat st;
    if (mdb_env_get_fd(env, &fd) || fstat(fd, &st)) return NULL;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return NULL;
    char line[4096];
    const char *found = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off, ino;
        unsigned maj, min;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &maj, &min, &ino) == 7 && ino == (unsigned long)st.st_ino &&
            makedev(maj, min) == st.st_dev && off == 0 && ino != 0)
            found = (const char *)(uintptr_t)lo;
    }
    fclose(f);
    return found;
}

/* @b for @env, whose map is at *@base (found and stored there when NULL) */
static void env_bounds(MDB_env *env, const char **base, mr_bounds *b)
{
    MDB_envinfo ei;
    int fd;
    struct stat st;
    memset(b, 0, sizeof *b);
    if (mdb_env_info(env, &ei) || mdb_env_get_fd(env, &fd) || fstat(fd, &st)) return;
    if (!*base) *base = ei.me_mapaddr ? ei.me_mapaddr : find_map(env);
    b->map = *base;
    b->map_size = ei.me_mapsize;
    b->file_len = (size_t)st.st_size < ei.me_mapsize ? (size_t)st.st_size : ei.me_mapsize;
}

void mr_bounds_get(moraine_db *db, mr_bounds *b) { env_bounds(db->env, &db->sh->map_base, b); }

int mr_env_info(moraine_db *db, MDB_envinfo *ei)
{
    pthread_mutex_lock(&db->sh->mu);
    int mrc = mdb_env_info(db->env, ei);
    pthread_mutex_unlock(&db->sh->mu);
    return mrc;
}

void mr_bounds_env(MDB_env *env, mr_bounds *b)
{
    const char *base = NULL;
    env_bounds(env, &base, b);
}

int moraine_release_pages(moraine_db *db)
{
    if (!db) return mr_err(MORAINE_EINVAL, "moraine_release_pages: NULL catalog");
    int rc = mr_same_process(db);
    if (rc) return rc;
    /* under the environment's lock: the map is not moved (txn.c, its growth)
     * between finding it and releasing its pages */
    pthread_mutex_lock(&db->sh->mu);
    mr_bounds b;
    mr_bounds_get(db, &b);
    int err = 0;
    if (b.map && b.file_len) { /* else nothing mapped yet */
        long pg = sysconf(_SC_PAGESIZE);
        size_t len = b.file_len;
        if (pg > 0) len = (len + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
        if (len > b.map_size) len = b.map_size;
        /* LMDB maps data.mdb read-only and shared (no MDB_WRITEMAP): dropping the
         * mapping of a page never loses a byte; the next access maps it again
         * from the page cache or the file, the same bytes a live read
         * transaction was reading (LMDB does not reuse its pages). */
        if (madvise((void *)(uintptr_t)b.map, len, MADV_DONTNEED) != 0) err = errno;
    }
    pthread_mutex_unlock(&db->sh->mu);
    if (err) return mr_err(MORAINE_EIO, "releasing the mapped pages of the catalog: %s", strerror(err));
    return 0;
}

int moraine_reader_check(moraine_db *db, int *dead)
{
    int rc = mr_same_process(db);
    if (rc) return rc;
    int n = 0;
    int mrc = mdb_reader_check(db->env, &n);
    if (mrc) return mr_lmdb_err(mrc, "checking for dead readers");
    if (dead) *dead = n;
    return 0;
}

int mr_grow_map(moraine_db *db)
{
    MDB_envinfo ei;
    /* the environment is shared: another handle may have grown it already */
    if (mdb_env_info(db->env, &ei) == 0 && ei.me_mapsize > db->opts.map_size) db->opts.map_size = ei.me_mapsize;
    size_t cur = db->opts.map_size;
    if (cur >= db->opts.max_map_size) return -1;
    size_t next = cur * 2 > db->opts.max_map_size ? db->opts.max_map_size : cur * 2;
    if (mdb_env_set_mapsize(db->env, next)) return -1;
    db->sh->map_base = NULL; /* remapped */
    db->opts.map_size = next;
    return 0;
}
