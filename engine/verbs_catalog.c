/*
 * verbs_catalog.c — the verbs' model of the catalog (docs/verbs.md): owned
 * rows, the model loaded at a snapshot (schemas, then each table on first
 * use: its columns, partition and sort specs), identifier lookups (schema,
 * table, column; DuckDB's case-insensitive names), and the rows a verb
 * emits into the staged commit (new, ended, taken back).
 */
#include "verbs_internal.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

/* ---- owned rows ---- */

/* An owned row is one block: its rel->ncols values, one more value (type
 * NULL) whose len is the block's size in bytes, then the texts
 * mv_orow_from copied. A text set later (mv_orow_set_str_at) is an
 * allocation of its own, freed when it is replaced or the row freed; the
 * texts in the block go with the block. */
static int is_text(const moraine_value *v) { return v->type == MORAINE_STR || v->type == MORAINE_JSON; }

/* Frees cell @i's text when it has an allocation of its own. */
static void text_free(orow *r, size_t i)
{
    if (!is_text(&r->v[i])) return;
    uintptr_t s = (uintptr_t)r->v[i].s, block = (uintptr_t)r->v;
    if (s < block || s - block >= r->v[r->rel->ncols].len) free((char *)r->v[i].s);
}

void mv_orow_free(orow *r)
{
    if (!r->v) return;
    for (size_t i = 0; i < r->rel->ncols; i++) text_free(r, i);
    free(r->v);
    r->v = NULL;
}

int mv_orow_from(orow *r, const moraine_relation_info *rel, const moraine_value *vals)
{
    size_t n = rel->ncols, size = (n + 1) * sizeof *r->v;
    for (size_t i = 0; vals && i < n; i++)
        if (is_text(&vals[i])) size += vals[i].len + 1;
    r->rel = rel;
    r->v = malloc(size);
    if (!r->v) return mr_err(MORAINE_ENOMEM, "out of memory");
    char *texts = (char *)(r->v + n + 1);
    for (size_t i = 0; i < n; i++) {
        r->v[i] = vals ? vals[i] : (moraine_value){.type = MORAINE_NULL};
        if (vals && is_text(&vals[i])) {
            if (vals[i].len) memcpy(texts, vals[i].s, vals[i].len);
            texts[vals[i].len] = 0;
            r->v[i].s = texts;
            texts += vals[i].len + 1;
        }
    }
    r->v[n] = (moraine_value){.type = MORAINE_NULL, .len = size};
    return 0;
}

static int col_of(const orow *r, const char *name)
{
    int i = moraine_column_index(r->rel, name);
    return i;
}

void mv_orow_set_int_at(orow *r, int i, int64_t v)
{
    if (i < 0) return; /* a catalog without the column: nothing to set */
    text_free(r, (size_t)i);
    r->v[i] = (moraine_value){.type = MORAINE_INT, .i = v};
}

void mv_orow_set_bool_at(orow *r, int i, int v)
{
    if (i < 0) return;
    text_free(r, (size_t)i);
    r->v[i] = (moraine_value){.type = MORAINE_BOOL, .i = v != 0};
}

void mv_orow_set_null_at(orow *r, int i)
{
    if (i < 0) return;
    text_free(r, (size_t)i);
    r->v[i] = (moraine_value){.type = MORAINE_NULL};
}

void mv_orow_set_int(orow *r, const char *name, int64_t v) { mv_orow_set_int_at(r, col_of(r, name), v); }
void mv_orow_set_bool(orow *r, const char *name, int v) { mv_orow_set_bool_at(r, col_of(r, name), v); }
void mv_orow_set_null(orow *r, const char *name) { mv_orow_set_null_at(r, col_of(r, name)); }

/* Every text a verb stores must be exportable: NDJSON, SQL and the HTTP
 * answers carry UTF-8 only (C strings hold no NUL; the Lua binding refuses
 * one). EINVAL naming column @name, else 0; *len_out: strlen(@s). */
int mv_text_check(const char *name, const char *s, size_t *len_out)
{
    size_t len = strlen(s);
    if (len_out) *len_out = len;
    /* ASCII (the usual path, value, name) is UTF-8: eight bytes at a time */
    uint64_t high = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        high |= w;
    }
    for (; i < len; i++) high |= (unsigned char)s[i];
    if (!(high & 0x8080808080808080ULL)) return 0;
    if (mr_utf8_valid(s, len)) return 0;
    char shown[200];
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 5 < sizeof shown && p - (const unsigned char *)s < 60; p++)
        o += (size_t)snprintf(shown + o, sizeof shown - o, *p >= 0x20 && *p < 0x7F && *p != '\\' ? "%c" : "\\x%02x", *p);
    shown[o] = 0;
    return mr_err(MORAINE_EINVAL, "%s '%s' is not valid UTF-8, which the catalog's exports (NDJSON, SQL, JSON) need: refused", name, shown);
}

int mv_orow_set_str_at(orow *r, int i, const char *s)
{
    if (!s) {
        mv_orow_set_null_at(r, i);
        return 0;
    }
    if (i < 0) return 0;
    size_t len;
    int rc = mv_text_check(r->rel->colnames[i], s, &len);
    if (rc) return rc;
    char *c = malloc(len + 1);
    if (!c) return mr_err(MORAINE_ENOMEM, "out of memory");
    memcpy(c, s, len + 1);
    text_free(r, (size_t)i);
    r->v[i] = (moraine_value){.type = MORAINE_STR, .s = c, .len = len};
    return 0;
}

int mv_orow_set_str(orow *r, const char *name, const char *s) { return mv_orow_set_str_at(r, col_of(r, name), s); }

int64_t mv_orow_int(const orow *r, const char *name, int64_t dflt)
{
    int i = col_of(r, name);
    return i >= 0 && r->v[i].type == MORAINE_INT ? r->v[i].i : dflt;
}

int mv_reserved_column(model *m, const char *name)
{
    if (!name || strncasecmp(name, "_ducklake_", 10) != 0) return 0;
    if (m->v11_metadata == 0) {
        m->v11_metadata = -1;
        if (mv_rel(m, "ducklake_metadata")) {
            moraine_cursor *c;
            moraine_row row;
            int rc = moraine_scan_open(m->rd, "ducklake_metadata", MORAINE_ANY_SCOPE, m->base, &c);
            if (rc) {
                m->v11_metadata = 0;
                return rc;
            }
            int ik = -1, iv = -1, is = -1;
            while ((rc = moraine_cursor_next(c, &row)) == 1) {
                if (ik < 0) {
                    ik = moraine_column_index(row.rel, "key"), iv = moraine_column_index(row.rel, "value");
                    is = moraine_column_index(row.rel, "scope");
                }
                if (ik < 0 || iv < 0) break;
                const moraine_value *k = &row.vals[ik], *v = &row.vals[iv];
                if (k->type == MORAINE_STR && k->len == 7 && memcmp(k->s, "version", 7) == 0 && (is < 0 || row.vals[is].type == MORAINE_NULL) &&
                    v->type == MORAINE_STR && v->len >= 3 && memcmp(v->s, "1.1", 3) == 0)
                    m->v11_metadata = 1;
            }
            moraine_cursor_close(c);
            if (rc < 0) {
                m->v11_metadata = 0;
                return rc;
            }
        }
    }
    if (m->v11_metadata < 0) return 0;
    return mr_err(MORAINE_EINVAL, "Column name \"%s\" is reserved by DuckLake for internal use: column names starting with \"_ducklake_\" are "
                  "not allowed.", name);
}

int mv_orow_bool(const orow *r, const char *name, int dflt)
{
    int i = col_of(r, name);
    return i >= 0 && r->v[i].type == MORAINE_BOOL ? r->v[i].i != 0 : dflt;
}

int mv_orow_is_null(const orow *r, const char *name)
{
    int i = col_of(r, name);
    return i < 0 || r->v[i].type == MORAINE_NULL;
}

const char *mv_orow_str(const orow *r, const char *name)
{
    int i = col_of(r, name);
    return i >= 0 && r->v[i].type == MORAINE_STR ? r->v[i].s : NULL;
}


/* ---- the model ---- */

int mv_id_in(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

int mv_id_push(int64_t **ids, size_t *n, int64_t id)
{
    int64_t *p = realloc(*ids, (*n + 1) * sizeof *p);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    *ids = p;
    p[(*n)++] = id;
    return 0;
}

const moraine_relation_info *mv_rel(model *m, const char *name)
{
    /* what moraine_relation finds (the open commit's definitions first), the
     * stored info itself (its pointers are stable) rather than a copy */
    pthread_mutex_lock(&m->db->mu);
    mr_rel *r = m->db->writer ? mr_txn_rel(m->db->writer, name) : NULL;
    if (!r) r = mr_rel_by_name(m->db, name);
    pthread_mutex_unlock(&m->db->mu);
    return r ? &r->info : NULL;
}

int mv_need_rel(model *m, const char *name, const moraine_relation_info **out)
{
    *out = mv_rel(m, name);
    if (*out && (*out)->ncols > 0) return 0;
    const moraine_relation_info *snap = mv_rel(m, "ducklake_snapshot");
    if (snap && snap->ncols > 0) /* a DuckLake catalog of a version before the table */
        return mr_err(MORAINE_ENOTFOUND, "the catalog has no table %s: it is a catalog of an older DuckLake version; "
                      "run 'moraine upgrade' first (docs/upgrade.md)", name);
    return mr_err(MORAINE_ENOTFOUND, "the catalog has no table %s (is it a DuckLake catalog? see moraine_init)", name);
}

static void tstate_free(tstate *t)
{
    if (t->row.rel) mv_orow_free(&t->row);
    for (size_t i = 0; i < t->ncols; i++) mv_orow_free(&t->cols[i]);
    free(t->cols);
    if (t->part.rel) mv_orow_free(&t->part);
    for (size_t i = 0; i < t->npcols; i++) mv_orow_free(&t->pcols[i]);
    free(t->pcols);
    if (t->sort.rel) mv_orow_free(&t->sort);
    for (size_t i = 0; i < t->nskeys; i++) mv_orow_free(&t->skeys[i]);
    free(t->skeys);
    if (t->base_sort.rel) mv_orow_free(&t->base_sort);
    for (size_t i = 0; i < t->nbase_skeys; i++) mv_orow_free(&t->base_skeys[i]);
    free(t->base_skeys);
    free(t->deleted_files);
    free(t->ended);
    free(t->ended_dels);
    free(t->added);
    for (size_t i = 0; i < t->nadded_dels; i++) mv_orow_free(&t->added_dels[i]);
    free(t->added_dels);
    for (size_t i = 0; i < t->ntags; i++) mv_orow_free(&t->tags[i]);
    free(t->tags);
    mv_cstats_free(t);
}

void mv_model_free(model *m)
{
    for (size_t i = 0; i < m->ntables; i++) tstate_free(&m->tables[i]);
    free(m->tables);
    for (size_t i = 0; i < m->nschemas; i++) mv_orow_free(&m->schemas[i].row);
    free(m->schemas);
    for (size_t i = 0; i < m->ncreated_schema_names; i++) free(m->created_schema_names[i]);
    free(m->created_schema_names);
    for (size_t i = 0; i < m->nviews; i++) mv_orow_free(&m->views[i]);
    free(m->views);
    free(m->dropped_views);
    free(m->dropped_schemas);
    free(m->created_views);
    if (m->snaprow.rel) mv_orow_free(&m->snaprow);
    if (m->rd) moraine_read_end(m->rd);
    memset(m, 0, sizeof *m);
}

/* Appends a copy of a row to an array of owned rows. */
/* Makes room for one more row in an array of @n owned rows. Arrays of rows
 * grow only here: 8 rows at first, then doubling whenever @n reaches a power
 * of two, so an array of n rows always has room for the next power of two
 * (taking rows out keeps it; a transaction adds thousands of files). ENOMEM. */
static int rows_room(orow **arr, size_t n)
{
    if (n != 0 && (n < 8 || (n & (n - 1)) != 0)) return 0;
    size_t cap = n < 8 ? 8 : n * 2;
    if (cap > SIZE_MAX / sizeof **arr) return mr_err(MORAINE_ENOMEM, "out of memory");
    orow *p = realloc(*arr, cap * sizeof *p);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    *arr = p;
    return 0;
}

int mv_push_row(orow **arr, size_t *n, const moraine_relation_info *r, const moraine_value *vals)
{
    if (rows_room(arr, *n)) return MORAINE_ENOMEM;
    orow *p = *arr;
    int rc = mv_orow_from(&p[*n], r, vals);
    if (!rc) (*n)++;
    return rc;
}

/* Moves owned row @r onto the end of an array of owned rows. */
int mv_take_row(orow **arr, size_t *n, orow *r)
{
    if (rows_room(arr, *n)) return MORAINE_ENOMEM;
    (*arr)[(*n)++] = *r;
    r->v = NULL;
    return 0;
}

/* Reads the model's start as of snapshot @at through its open read m->rd. */
static int model_read(model *m, int64_t at)
{
    int64_t last;
    int rc = moraine_read_last_snapshot(m->rd, &last);
    if (rc < 0) return rc;
    if (rc == 0) return mr_err(MORAINE_EINVAL, "the catalog holds no snapshot: initialise it first (moraine_init / moraine init)");
    if (at != MORAINE_ALL_VERSIONS && at < last) last = at; /* a transaction's own base, not what came after it */
    m->base = last;
    m->snap = last + 1;
    moraine_cursor *c;
    moraine_row row;
    /* the base's ducklake_snapshot row: its counters (one key lookup) */
    int found = mr_snapshot_row(m->rd, last, &row);
    if (found < 0) return found;
    if (found && (rc = mv_orow_from(&m->snaprow, row.rel, row.vals))) return rc;
    if (!found) return mr_err(MORAINE_ENOTFOUND, "the catalog has no ducklake_snapshot row for its last snapshot %lld", (long long)last);
    m->next_catalog_id = mv_orow_int(&m->snaprow, "next_catalog_id", 0);
    m->next_file_id = mv_orow_int(&m->snaprow, "next_file_id", 0);
    m->schema_version = mv_orow_int(&m->snaprow, "schema_version", 0);
    /* live schemas */
    if ((rc = moraine_scan_open(m->rd, "ducklake_schema", MORAINE_ANY_SCOPE, last, &c))) return rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        sstate *p = realloc(m->schemas, (m->nschemas + 1) * sizeof *p);
        if (!p) {
            rc = mr_err(MORAINE_ENOMEM, "out of memory");
            break;
        }
        m->schemas = p;
        sstate *s = &m->schemas[m->nschemas];
        memset(s, 0, sizeof *s);
        if ((rc = mv_orow_from(&s->row, row.rel, row.vals))) break;
        s->schema_id = mv_orow_int(&s->row, "schema_id", -1);
        s->live = 1;
        m->nschemas++;
    }
    moraine_cursor_close(c);
    return rc < 0 ? rc : 0;
}

/* Builds the model as of snapshot @at (MORAINE_ALL_VERSIONS: the newest). */
int mv_model_init_at(model *m, moraine_db *db, moraine_txn *stx, int64_t at)
{
    memset(m, 0, sizeof *m);
    m->db = db;
    m->stx = stx;
    int rc = moraine_read_begin(db, &m->rd);
    return rc ? rc : model_read(m, at);
}

int mv_model_init(model *m, moraine_db *db, moraine_txn *stx) { return mv_model_init_at(m, db, stx, MORAINE_ALL_VERSIONS); }

/* The LMDB snapshot the model reads, by its LMDB transaction id; 0: no read
 * open, or an id that may not name what the read reads. LMDB 0.9 takes a
 * read's id from the lock file and then copies the meta page of that id's
 * parity without checking it, so two commits in between give a read of the
 * newer state under the older id (int_cache.c). While the newest committed
 * id is still the read's, no commit came between, and the id is its state. */
static uint64_t read_txn(const model *m)
{
    if (!m->rd || !m->rd->txn) return 0;
    uint64_t id = (uint64_t)mdb_txn_id(m->rd->txn);
    MDB_envinfo ei;
    if (mdb_env_info(m->db->env, &ei) || (uint64_t)ei.me_last_txnid != id) return 0;
    return id;
}

/* Copies the model's start (its counters and live schemas, as read: no verb
 * has run) into @r, which then holds reads of the model's LMDB snapshot. */
static int keep_base(model *m, mv_reads *r, uint64_t txn)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < m->nschemas; i++) rc = mv_push_row(&r->schemas, &r->nschemas, m->schemas[i].row.rel, m->schemas[i].row.v);
    if (rc) {
        for (size_t i = 0; i < r->nschemas; i++) mv_orow_free(&r->schemas[i]);
        free(r->schemas);
        r->schemas = NULL, r->nschemas = 0;
        return rc;
    }
    r->txn = txn, r->base = m->base;
    r->next_catalog_id = m->next_catalog_id, r->next_file_id = m->next_file_id, r->schema_version = m->schema_version;
    r->has_base = 1;
    return 0;
}

int mv_model_init_reads(model *m, moraine_db *db, moraine_txn *stx, mv_reads *r)
{
    memset(m, 0, sizeof *m);
    m->db = db;
    m->stx = stx;
    int rc = moraine_read_begin(db, &m->rd);
    if (rc) return rc;
    uint64_t txn = read_txn(m);
    /* a transaction's first read: what this handle's last commit left, when nothing was written since */
    if (!stx && !r->n && !r->has_base && txn) mv_cache_take(db, r, txn);
    if (r->has_base && !r->off && txn && r->txn == txn && (stx || r->seeded)) {
        /* the newest snapshot is the one the reads kept were of: its counters and schemas as read then */
        m->base = r->base;
        m->snap = r->base + 1;
        m->next_catalog_id = r->next_catalog_id, m->next_file_id = r->next_file_id, m->schema_version = r->schema_version;
        m->reads = r;
        if (r->nschemas && !(m->schemas = calloc(r->nschemas, sizeof *m->schemas))) return mr_err(MORAINE_ENOMEM, "out of memory");
        for (size_t i = 0; i < r->nschemas; i++) {
            sstate *sc = &m->schemas[i];
            if ((rc = mv_orow_from(&sc->row, r->schemas[i].rel, r->schemas[i].v))) return rc;
            m->nschemas++;
            sc->schema_id = mv_orow_int(&sc->row, "schema_id", -1);
            sc->live = 1;
        }
        return 0;
    }
    /* read as mv_model_init does, through the read just begun */
    m->reads = r;
    if ((rc = model_read(m, MORAINE_ALL_VERSIONS))) return rc;
    /* a checking model keeps its start for the commit, as the first of its reads */
    if (!stx && !r->n && !r->has_base && !r->off && txn) rc = keep_base(m, r, txn);
    return rc;
}

sstate *mv_find_schema(model *m, const char *name)
{
    if (!name) name = "main";
    for (size_t i = 0; i < m->nschemas; i++) {
        const char *n = mv_orow_str(&m->schemas[i].row, "schema_name");
        if (m->schemas[i].live && n && mr_ident_eq(n, name)) return &m->schemas[i]; /* DuckDB: case-insensitive */
    }
    return NULL;
}

sstate *mv_schema_by_id(model *m, int64_t id)
{
    for (size_t i = 0; i < m->nschemas; i++)
        if (m->schemas[i].schema_id == id) return &m->schemas[i];
    return NULL;
}

/* ---- the reads a checking model kept for its commit ---- */

static void rows_free(orow *a, size_t n)
{
    for (size_t i = 0; i < n; i++) mv_orow_free(&a[i]);
    free(a);
}

static void loaded_free(mv_loaded *l)
{
    if (l->row.rel) mv_orow_free(&l->row);
    rows_free(l->cols, l->ncols);
    if (l->part.rel) mv_orow_free(&l->part);
    rows_free(l->pcols, l->npcols);
    if (l->sort.rel) mv_orow_free(&l->sort);
    rows_free(l->skeys, l->nskeys);
    mv_cstats_free_set(l->cst, l->ncst);
}

void mv_reads_free(mv_reads *r)
{
    for (size_t i = 0; i < r->n; i++) loaded_free(&r->t[i]);
    free(r->t);
    rows_free(r->schemas, r->nschemas);
    memset(r, 0, sizeof *r);
}

mv_loaded *mv_reads_use(model *m, int64_t table_id)
{
    mv_reads *r = m->reads;
    if (!r || r->off || (!m->stx && !r->seeded) || !r->n || r->txn != read_txn(m) || r->base != m->base) return NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->t[i].table_id == table_id) return &r->t[i];
    return NULL;
}

mv_loaded *mv_reads_keep(model *m, int64_t table_id, int *rc)
{
    mv_reads *r = m->reads;
    uint64_t txn = read_txn(m);
    if (!r || r->off || m->stx || !txn) return NULL;
    if ((r->n || r->has_base) && (r->txn != txn || r->base != m->base)) {
        r->off = 1; /* something was committed between two verbs' reads */
        return NULL;
    }
    r->txn = txn, r->base = m->base;
    for (size_t i = 0; i < r->n; i++)
        if (r->t[i].table_id == table_id) return &r->t[i];
    mv_loaded *p = realloc(r->t, (r->n + 1) * sizeof *p);
    if (!p) {
        *rc = mr_err(MORAINE_ENOMEM, "out of memory");
        return NULL;
    }
    r->t = p;
    mv_loaded *l = &p[r->n++];
    memset(l, 0, sizeof *l);
    l->table_id = table_id;
    return l;
}

/* Copies the @n rows @src onto the end of *dst. ENOMEM. */
static int rows_copy(orow **dst, size_t *nd, const orow *src, size_t n)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) rc = mv_push_row(dst, nd, src[i].rel, src[i].v);
    return rc;
}

/* A copy of @src into *dst (a row without rel: none). ENOMEM. */
static int row_copy(orow *dst, const orow *src) { return src->rel ? mv_orow_from(dst, src->rel, src->v) : 0; }

/* Keeps the table @t just loaded (columns, specs) for the commit. */
static int keep_table(model *m, const tstate *t)
{
    int rc = 0;
    mv_loaded *l = mv_reads_keep(m, t->table_id, &rc);
    if (!l || l->has_table) return rc;
    l->schema_id = t->schema_id;
    l->max_column_id = t->max_column_id, l->max_order = t->max_order;
    if (!(rc = row_copy(&l->row, &t->row)) && !(rc = rows_copy(&l->cols, &l->ncols, t->cols, t->ncols)) && !(rc = row_copy(&l->part, &t->part)) &&
        !(rc = rows_copy(&l->pcols, &l->npcols, t->pcols, t->npcols)) && !(rc = row_copy(&l->sort, &t->sort)))
        rc = rows_copy(&l->skeys, &l->nskeys, t->skeys, t->nskeys);
    if (rc) { /* nothing half kept */
        loaded_free(l);
        memset(l, 0, sizeof *l);
        l->table_id = t->table_id;
        return rc;
    }
    l->has_table = 1;
    return 0;
}

/* Loads table @t's columns and specs from the reads kept @l. */
static int table_from_kept(tstate *t, const mv_loaded *l)
{
    t->max_column_id = l->max_column_id, t->max_order = l->max_order;
    int rc = rows_copy(&t->cols, &t->ncols, l->cols, l->ncols);
    if (!rc) rc = row_copy(&t->part, &l->part);
    if (!rc) rc = rows_copy(&t->pcols, &t->npcols, l->pcols, l->npcols);
    if (!rc) rc = row_copy(&t->sort, &l->sort);
    if (!rc) rc = rows_copy(&t->skeys, &t->nskeys, l->skeys, l->nskeys);
    return rc;
}

/* Loads the state of table @table_id (live at the model's start) into the model. */
static int load_table(model *m, const orow *trow, tstate **out)
{
    tstate *p = realloc(m->tables, (m->ntables + 1) * sizeof *p);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    m->tables = p;
    tstate *t = &m->tables[m->ntables];
    memset(t, 0, sizeof *t);
    int rc = mv_orow_from(&t->row, trow->rel, trow->v);
    if (rc) return rc;
    m->ntables++;
    t->live = 1;
    t->table_id = mv_orow_int(&t->row, "table_id", -1);
    t->schema_id = mv_orow_int(&t->row, "schema_id", -1);
    t->stats_ord = -1;
    const mv_loaded *kept = mv_reads_use(m, t->table_id);
    if (kept && kept->has_table) {
        if ((rc = table_from_kept(t, kept))) return rc;
        *out = t;
        return 0;
    }
    moraine_cursor *c;
    moraine_row row;
    /* columns: live ones, and the largest column_id and column_order ever used */
    if ((rc = moraine_scan_open(m->rd, "ducklake_column", t->table_id, MORAINE_ALL_VERSIONS, &c))) return rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        int ic = moraine_column_index(row.rel, "column_id"), io = moraine_column_index(row.rel, "column_order");
        int ie = moraine_column_index(row.rel, "end_snapshot"), ib = moraine_column_index(row.rel, "begin_snapshot");
        if (ic >= 0 && row.vals[ic].type == MORAINE_INT && row.vals[ic].i > t->max_column_id) t->max_column_id = row.vals[ic].i;
        if (io >= 0 && row.vals[io].type == MORAINE_INT && row.vals[io].i > t->max_order) t->max_order = row.vals[io].i;
        if (ie >= 0 && row.vals[ie].type == MORAINE_NULL && ib >= 0 && row.vals[ib].type == MORAINE_INT && row.vals[ib].i <= m->base &&
            (rc = mv_push_row(&t->cols, &t->ncols, row.rel, row.vals)))
            break;
    }
    moraine_cursor_close(c);
    if (rc < 0) return rc;
    /* live partition spec and sort spec with their children */
    const char *specs[2] = {"ducklake_partition_info", "ducklake_sort_info"};
    for (int k = 0; k < 2; k++) {
        if (!mv_rel(m, specs[k])) continue;
        if ((rc = moraine_scan_open(m->rd, specs[k], t->table_id, m->base, &c))) return rc;
        while ((rc = moraine_cursor_next(c, &row)) == 1) {
            orow *spec = k == 0 ? &t->part : &t->sort;
            if (spec->rel) mv_orow_free(spec);
            if ((rc = mv_orow_from(spec, row.rel, row.vals))) break;
            moraine_children it;
            moraine_row child;
            moraine_row_children(m->rd, &row, &it);
            while ((rc = moraine_children_next(&it, &child)) == 1) {
                if (k == 0) rc = mv_push_row(&t->pcols, &t->npcols, child.rel, child.vals);
                else rc = mv_push_row(&t->skeys, &t->nskeys, child.rel, child.vals);
                if (rc) break;
            }
            moraine_children_free(&it);
            if (rc < 0) break;
        }
        moraine_cursor_close(c);
        if (rc < 0) return rc;
    }
    if ((rc = keep_table(m, t))) return rc;
    *out = t;
    return 0;
}

/* The first ducklake_table row live at the base of table @name in schema
 * @schema_id, copied into *found (rel NULL: none). Read errors, ENOMEM. */
static int scan_table_row(model *m, int64_t schema_id, const char *name, orow *found)
{
    moraine_cursor *c;
    moraine_row row;
    int rc = moraine_scan_open(m->rd, "ducklake_table", MORAINE_ANY_SCOPE, m->base, &c);
    if (rc) return rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        int in = moraine_column_index(row.rel, "table_name"), is = moraine_column_index(row.rel, "schema_id");
        if (in < 0 || is < 0) continue;
        if (row.vals[is].type == MORAINE_INT && row.vals[is].i == schema_id && row.vals[in].type == MORAINE_STR &&
            mr_ident_eqn(row.vals[in].s, row.vals[in].len, name)) {
            rc = mv_orow_from(found, row.rel, row.vals);
            break;
        }
    }
    moraine_cursor_close(c);
    return rc < 0 ? rc : 0;
}

/* The ducklake_table row live at the base of table @name in schema
 * @schema_id among the reads kept, copied into *found (rel NULL: not kept,
 * or kept more than once). ENOMEM. */
static int table_row_kept(model *m, int64_t schema_id, const char *name, orow *found)
{
    mv_reads *r = m->reads;
    if (!r || !r->n || !mv_reads_use(m, r->t[0].table_id)) return 0;
    const mv_loaded *hit = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const mv_loaded *l = &r->t[i];
        const char *n = l->has_table ? mv_orow_str(&l->row, "table_name") : NULL;
        if (!n || l->schema_id != schema_id || !mr_ident_eq(n, name)) continue;
        if (hit) return 0; /* two names equal but for case: read the store, in its order */
        hit = l;
    }
    return hit ? mv_orow_from(found, hit->row.rel, hit->row.v) : 0;
}

/* Finds table schema.name live in the model (loading it on first use). */
int mv_find_table(model *m, const char *schema, const char *name, tstate **out)
{
    if (!name) return mr_err(MORAINE_EINVAL, "no table name given");
    sstate *s = mv_find_schema(m, schema);
    if (!s) return mr_err(MORAINE_ENOTFOUND, "no schema \"%s\"", schema ? schema : "main");
    for (size_t i = 0; i < m->ntables; i++) {
        tstate *t = &m->tables[i];
        const char *n = t->row.rel ? mv_orow_str(&t->row, "table_name") : NULL;
        if (t->live && t->schema_id == s->schema_id && n && mr_ident_eq(n, name)) {
            *out = t;
            return 0;
        }
    }
    /* not in the model: among the tables the checking model read, or those live at the base */
    orow found = {0};
    int rc = table_row_kept(m, s->schema_id, name, &found);
    if (!rc && !found.rel) rc = scan_table_row(m, s->schema_id, name, &found);
    if (rc < 0) return rc;
    if (!found.rel) return mr_err(MORAINE_ENOTFOUND, "no table \"%s\".\"%s\"", schema ? schema : "main", name);
    /* a table the model knows as dropped or renamed in this transaction is not live */
    int64_t id = mv_orow_int(&found, "table_id", -1);
    for (size_t i = 0; i < m->ntables; i++) {
        if (m->tables[i].table_id == id) {
            mv_orow_free(&found);
            return mr_err(MORAINE_ENOTFOUND, "no table \"%s\".\"%s\" (dropped or renamed in this transaction)", schema ? schema : "main", name);
        }
    }
    rc = load_table(m, &found, out);
    mv_orow_free(&found);
    return rc;
}

int mv_find_column(tstate *t, const char *name)
{
    const moraine_relation_info *rel = NULL;
    int in = -1, ip = -1; /* column_name, parent_column: resolved once per relation */
    size_t len = name ? strlen(name) : 0;
    for (size_t i = 0; i < t->ncols; i++) {
        const orow *c = &t->cols[i];
        if (c->rel != rel) {
            rel = c->rel;
            in = moraine_column_index(rel, "column_name"), ip = moraine_column_index(rel, "parent_column");
        }
        const char *n = in >= 0 && c->v[in].type == MORAINE_STR ? c->v[in].s : NULL;
        if (ip >= 0 && c->v[ip].type != MORAINE_NULL) continue; /* a STRUCT's field, not a column */
        if (n && name && c->v[in].len == len && mr_ident_eqn(n, len, name)) return (int)i; /* DuckDB: case-insensitive */
    }
    return -1;
}

/* ---- emitting rows ---- */

int mv_emit_insert(model *m, const orow *r)
{
    if (!m->stx) return 0;
    return moraine_txn_insert(m->stx, r->rel->name, r->v, r->rel->ncols, -1);
}

static int emit_end(model *m, const orow *r)
{
    if (!m->stx) return 0;
    return moraine_txn_end(m->stx, r->rel->name, r->v, r->rel->ncols);
}

/* A new row of @relname with begin_snapshot = the snapshot being written. */
int mv_new_row(model *m, const char *relname, orow *out)
{
    const moraine_relation_info *r;
    int rc = mv_need_rel(m, relname, &r);
    if (!rc) rc = mv_orow_from(out, r, NULL);
    if (!rc) mv_orow_set_int(out, "begin_snapshot", m->snap);
    return rc;
}

void mv_uuid7(char out[37])
{
    uint8_t b[16];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(rand() & 0xFF);
    }
    for (int i = 0; i < 6; i++) b[i] = (uint8_t)(ms >> (40 - 8 * i));
    b[6] = (uint8_t)(0x70 | (b[6] & 0x0F));
    b[8] = (uint8_t)(0x80 | (b[8] & 0x3F));
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
             b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Ends a live row in the model and the store. */
int mv_end_row(model *m, orow *r)
{
    int rc = emit_end(m, r);
    if (!rc) mv_orow_set_int(r, "end_snapshot", m->snap);
    return rc;
}

/* Ends a live row; a column or table version this same transaction wrote is
 * taken back instead: DuckLake writes only the net change, and two such
 * versions would both begin and end at the new snapshot. */
int mv_retire_row(model *m, orow *r)
{
    if (mv_orow_int(r, "begin_snapshot", -1) == m->snap &&
        (strcmp(r->rel->name, "ducklake_column") == 0 || strcmp(r->rel->name, "ducklake_table") == 0)) {
        int rc = m->stx ? mr_txn_discard(m->stx, r->rel->name, r->v, r->rel->ncols) : 0;
        if (!rc) mv_orow_set_int(r, "end_snapshot", m->snap);
        return rc;
    }
    return mv_end_row(m, r);
}
