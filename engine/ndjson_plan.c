/*
 * ndjson_plan.c — the NDJSON import's checks and replay plan (ndjson.c reads
 * the files and replays the plan): every row is checked (keys unique per
 * version, children with their parent, ids that name rows, begin and end
 * snapshots that exist and are ordered) and ordered snapshot by snapshot: for
 * snapshot S, the versions that end at S, the snapshot row, the versions that
 * begin at S, and the children of those; non-temporal rows after.
 */
#include "ndjson_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void u64_sift(uint64_t *v, size_t n, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && v[c] < v[c + 1]) c++;
        if (v[i] >= v[c]) return;
        uint64_t t = v[i];
        v[i] = v[c];
        v[c] = t;
        i = c;
    }
}

/* Sorts @v in place: an introsort (quicksort with the median of three,
 * heapsort past @depth levels, insertion sort for short runs). In place:
 * qsort would allocate a copy of the whole plan for its merge sort. */
static void u64_sort(uint64_t *v, size_t n, int depth)
{
    while (n > 16) {
        if (depth-- <= 0) {
            for (size_t i = n / 2; i-- > 0;) u64_sift(v, n, i);
            for (size_t i = n - 1; i > 0; i--) {
                uint64_t t = v[0];
                v[0] = v[i];
                v[i] = t;
                u64_sift(v, i, 0);
            }
            return;
        }
        size_t m = n / 2;
        uint64_t t;
#define U64_ORDER(a, b) if (v[b] < v[a]) { t = v[a]; v[a] = v[b]; v[b] = t; }
        U64_ORDER(0, m)
        U64_ORDER(0, n - 1)
        U64_ORDER(m, n - 1)
#undef U64_ORDER
        uint64_t pivot = v[m];
        size_t i = 0, j = n - 1;
        for (;;) {
            while (v[i] < pivot) i++;
            while (pivot < v[j]) j--;
            if (i >= j) break;
            t = v[i];
            v[i] = v[j];
            v[j] = t;
            i++;
            j--;
        }
        /* [0, j] <= pivot <= [j + 1, n): recurse into the smaller side */
        size_t left = j + 1;
        if (left >= n) { /* (equal values only: none in a plan) */
            depth = 0;
            continue;
        }
        if (left < n - left) {
            u64_sort(v, left, depth);
            v += left;
            n -= left;
        } else {
            u64_sort(v + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        for (; j > 0 && x < v[j - 1]; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The steps of pass 1 (snapshot rows, versions), before the snapshots are
 * all known: the snapshot itself beside (phase, table, row). */
typedef struct {
    int64_t snap;
    uint32_t phase, table;
    uint64_t row;
} wide;

typedef struct {
    wide *v;
    size_t n, cap;
} wides;

static int push_wide(wides *o, int64_t snap, uint32_t phase, uint32_t tbl, uint64_t row)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 1024;
        wide *p = realloc(o->v, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        o->v = p;
        o->cap = cap;
    }
    o->v[o->n++] = (wide){snap, phase, tbl, row};
    return 0;
}

static unsigned nbits(uint64_t x)
{
    unsigned b = 0;
    while (x) {
        b++;
        x >>= 1;
    }
    return b;
}

/* the index of @snap in o->snaps (which has it) */
static uint64_t snap_index(const ops *o, int64_t snap)
{
    size_t lo = 0, hi = o->nsnaps;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->snaps[mid] <= snap) lo = mid;
        else hi = mid;
    }
    return lo;
}

static void push(ops *o, uint64_t snapi, uint32_t phase, uint32_t tbl, uint64_t row)
{
    /* (room for every step was made by start_plan) */
    o->v[o->n++] = snapi << (o->row_bits + o->table_bits + 3) | (uint64_t)phase << (o->row_bits + o->table_bits) |
                   (uint64_t)tbl << o->row_bits | row;
}

/* The plan's snapshots (those of pass 1's steps and @more), its widths and
 * room for @steps_more steps after pass 1's, which it takes. EINVAL (a plan
 * too large to number in 64 bits), ENOMEM. */
static int start_plan(tables *ts, wides *w, const int64_t *more, size_t nmore, size_t steps_more, ops *o)
{
    /* the snapshots, ascending and distinct: sorted as unsigned integers with the sign bit flipped */
    uint64_t *u = malloc((w->n + nmore ? w->n + nmore : 1) * sizeof *u);
    if (!u) return mr_err(MORAINE_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++) u[n++] = (uint64_t)w->v[i].snap ^ (1ULL << 63);
    for (size_t i = 0; i < nmore; i++) u[n++] = (uint64_t)more[i] ^ (1ULL << 63);
    u64_sort(u, n, 2 * 64);
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        if (d == 0 || u[i] != u[d - 1]) u[d++] = u[i];
    o->snaps = (int64_t *)u;
    for (size_t i = 0; i < d; i++) o->snaps[i] = (int64_t)(u[i] ^ (1ULL << 63));
    o->nsnaps = d;
    size_t maxrows = 0;
    for (size_t i = 0; i < ts->n; i++)
        if (ts->t[i].nrows > maxrows) maxrows = ts->t[i].nrows;
    o->row_bits = nbits(maxrows ? maxrows - 1 : 0);
    o->table_bits = nbits(ts->n ? ts->n - 1 : 0);
    unsigned snap_bits = nbits(d ? d - 1 : 0);
    if (o->row_bits + o->table_bits + 3 + (snap_bits ? snap_bits : 1) > 64)
        return mr_err(MORAINE_EINVAL, "the import is too large to plan: %zu tables, %zu rows in one, %zu snapshots",
                      ts->n, maxrows, d);
    o->cap = w->n + steps_more;
    if (!(o->v = malloc((o->cap ? o->cap : 1) * sizeof *o->v))) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n; i++) push(o, snap_index(o, w->v[i].snap), w->v[i].phase, w->v[i].table, w->v[i].row);
    free(w->v);
    w->v = NULL;
    w->n = w->cap = 0;
    return 0;
}

void mr_nd_ops_free(ops *o)
{
    free(o->v);
    free(o->snaps);
}

/* key bytes -> begin snapshot, for finding a child's parent */
typedef struct {
    mr_buf keys;
    size_t *off, *len;
    int64_t *begin;
    size_t n, cap;
    size_t *slots, nslots;
} keymap;

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static int keymap_add(keymap *m, const mr_buf *k, int64_t begin)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        size_t *o = realloc(m->off, cap * sizeof *o);
        if (o) m->off = o;
        size_t *l = o ? realloc(m->len, cap * sizeof *l) : NULL;
        if (l) m->len = l;
        int64_t *b = l ? realloc(m->begin, cap * sizeof *b) : NULL;
        if (b) m->begin = b;
        if (!b) return mr_err(MORAINE_ENOMEM, "out of memory");
        m->cap = cap;
    }
    m->off[m->n] = m->keys.len;
    m->len[m->n] = k->len;
    m->begin[m->n] = begin;
    m->n++;
    return mr_buf_put(&m->keys, k->p, k->len);
}

static int keymap_index(keymap *m)
{
    m->nslots = 1;
    while (m->nslots < m->n * 2 + 2) m->nslots *= 2;
    m->slots = malloc(m->nslots * sizeof *m->slots);
    if (!m->slots) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->nslots; i++) m->slots[i] = SIZE_MAX;
    for (size_t i = 0; i < m->n; i++) {
        size_t s = hash_bytes(m->keys.p + m->off[i], m->len[i]) & (m->nslots - 1);
        while (m->slots[s] != SIZE_MAX) s = (s + 1) & (m->nslots - 1);
        m->slots[s] = i; /* several versions of one key: the first inserted wins lookups */
    }
    return 0;
}

static int keymap_get(const keymap *m, const mr_buf *k, int64_t *begin)
{
    if (!m->slots) return 0;
    size_t s = hash_bytes(k->p, k->len) & (m->nslots - 1);
    for (; m->slots[s] != SIZE_MAX; s = (s + 1) & (m->nslots - 1)) {
        size_t i = m->slots[s];
        if (m->len[i] == k->len && memcmp(m->keys.p + m->off[i], k->p, k->len) == 0) {
            *begin = m->begin[i];
            return 1;
        }
    }
    return 0;
}

static void keymap_free(keymap *m)
{
    mr_buf_free(&m->keys);
    free(m->off);
    free(m->len);
    free(m->begin);
    free(m->slots);
}

table *mr_nd_find_table(tables *ts, const char *name)
{
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].name, name) == 0) return &ts->t[i];
    return NULL;
}

/* The parent key of a child row, or of a parent row: the tuple of key columns. */
static int key_of(mr_buf *b, const moraine_value *vals, const int *cols, int n)
{
    b->len = 0;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) rc = mr_key_value(b, &vals[cols[i]]);
    return rc;
}

/* Where row i of @t came from, for messages: "<table>.ndjson:<line>" for a
 * file, "<table> row <n>" (1-based) for rows given as values. */
static void row_where(const tables *ts, const table *t, size_t i, char *out, size_t n)
{
    if (ts->from_files) snprintf(out, n, "%s.ndjson:%zu", t->name, mr_nd_line(t, i));
    else snprintf(out, n, "%s row %zu", t->name, mr_nd_line(t, i));
}

/* Ids one table's rows name in another table, checked after the plan's first
 * pass: @cols of a row of @from (NULL values aside) must be the key of some
 * version of @to (a whole catalog without @to has none). DuckLake deletes (expires)
 * a row only with the rows that name it, so a dangling id is a damaged
 * catalog, or a table left out of an export. */
static const struct {
    const char *from, *to;
    const char *cols[2];
} references[] = {
    {"ducklake_data_file", "ducklake_table", {"table_id", NULL}},
    {"ducklake_delete_file", "ducklake_table", {"table_id", NULL}},
    {"ducklake_delete_file", "ducklake_data_file", {"table_id", "data_file_id"}},
    {"ducklake_column", "ducklake_table", {"table_id", NULL}},
    {"ducklake_table", "ducklake_schema", {"schema_id", NULL}},
};

static int col_index(const table *t, const char *name)
{
    for (size_t c = 0; c < t->ncols; c++)
        if (strcmp(t->cols[c], name) == 0) return (int)c;
    return -1;
}

/* Whether the import is a DuckLake catalog, which has every table DuckLake
 * defines: one with ducklake_metadata rows (DuckLake writes its version
 * there). Tables built by staged commits alone (tests, tools) need not be. */
static int whole_catalog(tables *ts)
{
    table *mt = mr_nd_find_table(ts, "ducklake_metadata");
    return mt && mt->nrows > 0;
}

/* Every table DuckLake defines has a column: in a whole catalog each
 * ducklake_table row's table_id is named by some ducklake_column row (a
 * catalog without ducklake_column has none). */
static int check_tables_have_columns(tables *ts, mr_buf *kb)
{
    table *tt = mr_nd_find_table(ts, "ducklake_table"), *ct = mr_nd_find_table(ts, "ducklake_column");
    if (!whole_catalog(ts)) return 0;
    if (!tt || !tt->rel || tt->nrows == 0 || (ct && !ct->rel)) return 0;
    int tcol = col_index(tt, "table_id"), ccol = ct ? col_index(ct, "table_id") : -1;
    if (tcol < 0 || (ct && ccol < 0)) return 0;
    keymap ids = {0};
    int rc = 0;
    for (size_t i = 0; ct && !rc && i < ct->nrows; i++) {
        moraine_value *v;
        int64_t ord;
        if (!(rc = mr_nd_row_at(ts, ct, i, &v, &ord)) && !(rc = key_of(kb, v, &ccol, 1))) rc = keymap_add(&ids, kb, 0);
    }
    if (!rc && ids.n) rc = keymap_index(&ids);
    for (size_t i = 0; !rc && i < tt->nrows; i++) {
        moraine_value *v;
        int64_t ord, unused;
        if ((rc = mr_nd_row_at(ts, tt, i, &v, &ord))) break;
        if (v[tcol].type == MORAINE_NULL) continue;
        if ((rc = key_of(kb, v, &tcol, 1))) break;
        if (!keymap_get(&ids, kb, &unused)) {
            char at[512];
            row_where(ts, tt, i, at, sizeof at);
            rc = ct ? mr_err(MORAINE_EINVAL, "%s: table_id=%lld has no ducklake_column row (a table has at least one "
                             "column): the catalog is damaged", at, (long long)v[tcol].i)
                    : mr_err(MORAINE_EINVAL, "%s: table_id=%lld has columns, but the catalog has no ducklake_column%s",
                             at, (long long)v[tcol].i, ts->from_files ? ".ndjson" : " table");
        }
    }
    keymap_free(&ids);
    return rc;
}

/* A whole catalog's tables have the columns DuckLake gives them in its
 * version (ducklake_metadata's 'version' row): a column moraine knows for a
 * table (engine/tables.c) that the table lacks is refused, unless DuckLake
 * added it in a later version than the catalog's (an old catalog is imported
 * as it is: docs/upgrade.md). A column left out of every row of an export, or
 * dropped from a SQLite table, would otherwise be read as NULL everywhere. */
static int check_columns_present(tables *ts)
{
    if (!whole_catalog(ts)) return 0;
    table *mt = mr_nd_find_table(ts, "ducklake_metadata");
    char version[64] = "";
    int kc = col_index(mt, "key"), vc = col_index(mt, "value"), sc = col_index(mt, "scope");
    for (size_t i = 0; mt->rel && kc >= 0 && vc >= 0 && i < mt->nrows; i++) {
        moraine_value *v;
        int64_t ord;
        int rc = mr_nd_row_at(ts, mt, i, &v, &ord);
        if (rc) return rc;
        if (v[kc].type == MORAINE_STR && v[kc].len == 7 && memcmp(v[kc].s, "version", 7) == 0 &&
            (sc < 0 || v[sc].type == MORAINE_NULL) && v[vc].type == MORAINE_STR && v[vc].len < sizeof version) {
            memcpy(version, v[vc].s, v[vc].len);
            version[v[vc].len] = 0;
        }
    }
    int release = mr_known_release(version[0] ? version : NULL);
    /* every table of the catalog's version has its file, empty or not: a
     * table left out of an export would read as holding nothing (no delete
     * files, no partition keys). (A SQLite or PostgreSQL source is checked
     * by sync, check_tables: its tables are the caller's to give here.) */
    const char *name;
    for (size_t i = 0; ts->whole_dir && (name = moraine_required_table(version[0] ? version : NULL, i)); i++) {
        if (!mr_nd_find_table(ts, name))
            return mr_err(MORAINE_EINVAL, "the catalog has no %s.ndjson: a DuckLake catalog of version %s has that table (an export "
                          "that left it out is incomplete; export the whole catalog again)",
                          name, version[0] ? version : "(unknown)");
    }
    for (size_t ti = 0; ti < ts->n; ti++) {
        table *t = &ts->t[ti];
        const mr_known_table *kt = mr_known(t->name);
        if (!kt || !t->ncols) continue; /* (an unknown table; an empty one moraine has no columns for) */
        char **cols;
        size_t n = mr_known_columns(kt, &cols);
        if (n == (size_t)-1) return mr_err(MORAINE_ENOMEM, "out of memory");
        int rc = 0;
        for (size_t c = 0; !rc && c < n; c++) {
            if (col_index(t, cols[c]) >= 0 || mr_known_column_since(t->name, cols[c]) > release) continue;
            rc = mr_err(MORAINE_EINVAL, "%s%s: column '%s' is missing (%s): a DuckLake catalog of version %s has it",
                        t->name, ts->from_files ? ".ndjson" : "", cols[c],
                        ts->from_files ? "no row has it" : "the table has no such column", version[0] ? version : "(unknown)");
        }
        for (size_t c = 0; c < n; c++) free(cols[c]);
        free(cols);
        if (rc) return rc;
    }
    return 0;
}

static int check_references(tables *ts, const keymap *maps, mr_buf *kb)
{
    int rc = check_tables_have_columns(ts, kb);
    for (size_t k = 0; !rc && k < sizeof references / sizeof references[0]; k++) {
        table *from = mr_nd_find_table(ts, references[k].from), *to = mr_nd_find_table(ts, references[k].to);
        if (!from || !from->rel || (to && !to->rel)) continue;
        if (!to && !whole_catalog(ts)) continue; /* tables built by staged commits alone need not be whole */
        int cols[2], n = 0, ok = 1;
        for (; n < 2 && references[k].cols[n]; n++) {
            /* the referring columns, in the order of the target's key */
            if ((cols[n] = col_index(from, references[k].cols[n])) < 0) ok = 0;
            if (to && (n >= to->rel->nkey || strcmp(to->rel->names[to->rel->keycols[n]], references[k].cols[n]) != 0)) ok = 0;
        }
        if (!ok || (to && n != to->rel->nkey)) continue;
        static const keymap none;
        const keymap *m = to ? &maps[to - ts->t] : &none;
        for (size_t i = 0; !rc && i < from->nrows; i++) {
            moraine_value *v;
            int64_t ord, begin;
            if ((rc = mr_nd_row_at(ts, from, i, &v, &ord))) break;
            int null = 0;
            for (int c = 0; c < n; c++) null |= v[cols[c]].type == MORAINE_NULL;
            if (null) continue;
            if ((rc = key_of(kb, v, cols, n))) break;
            if (!keymap_get(m, kb, &begin)) {
                char at[512], desc[256];
                row_where(ts, from, i, at, sizeof at);
                size_t o = 0;
                desc[0] = 0;
                for (int c = 0; c < n && o < sizeof desc; c++) {
                    const moraine_value *x = &v[cols[c]];
                    if (x->type == MORAINE_INT) o += (size_t)snprintf(desc + o, sizeof desc - o, "%s%s=%lld", c ? ", " : "", references[k].cols[c], (long long)x->i);
                    else o += (size_t)snprintf(desc + o, sizeof desc - o, "%s%s=(not an integer)", c ? ", " : "", references[k].cols[c]);
                }
                rc = to ? mr_err(MORAINE_EINVAL, "%s: %s names no %s row: the catalog is damaged", at, desc, to->name)
                        : mr_err(MORAINE_EINVAL, "%s: %s names a %s row, but the catalog has no %s%s", at, desc,
                                 references[k].to, references[k].to, ts->from_files ? ".ndjson" : " table");
            }
        }
    }
    return rc;
}

int mr_nd_plan(tables *ts, ops *o)
{
    int rc = 0;
    int64_t first = INT64_MAX, last = INT64_MIN;
    /* pass 1: snapshots and temporal rows; parents' key maps */
    keymap *maps = calloc(ts->n ? ts->n : 1, sizeof *maps);
    if (!maps) return mr_err(MORAINE_ENOMEM, "out of memory");
    wides w = {0};
    mr_buf kb = {0};
    char where[512];
    /* the last snapshot row: no version may begin or end after it (its
     * commit would have no ducklake_snapshot row, and a catalog's last
     * snapshot must have one) */
    int64_t snap_max = INT64_MAX;
    if ((rc = check_columns_present(ts))) {
        free(maps);
        return rc;
    }
    table *stab = mr_nd_find_table(ts, "ducklake_snapshot");
    if (stab && stab->nrows == 0) {
        /* a DuckLake catalog with rows has at least one snapshot: without one
         * every verb afterwards would find no snapshot to build on */
        size_t others = 0;
        for (size_t ti = 0; ti < ts->n; ti++) others += ts->t[ti].nrows;
        if (others) {
            free(maps);
            return mr_err(MORAINE_EINVAL, "%s has no rows but other tables have %zu: a DuckLake catalog with rows has "
                          "at least one snapshot", ts->from_files ? "ducklake_snapshot.ndjson" : "ducklake_snapshot", others);
        }
    }
    if (stab && stab->rel && stab->rel->info.placement == MORAINE_PLACE_SNAPSHOT && stab->nrows) {
        snap_max = INT64_MIN;
        for (size_t i = 0; !rc && i < stab->nrows; i++) {
            moraine_value *v;
            int64_t ord;
            if ((rc = mr_nd_row_at(ts, stab, i, &v, &ord))) break;
            const moraine_value *id = &v[stab->rel->keycols[0]];
            if (id->type == MORAINE_INT && id->i > snap_max) snap_max = id->i;
        }
    }
    for (size_t ti = 0; !rc && ti < ts->n; ti++) {
        table *t = &ts->t[ti];
        if (!t->rel) continue;
        mr_rel *r = t->rel;
        for (size_t i = 0; !rc && i < t->nrows; i++) {
            moraine_value *v;
            int64_t ord;
            if ((rc = mr_nd_row_at(ts, t, i, &v, &ord))) break;
            if (r->info.placement == MORAINE_PLACE_SNAPSHOT) {
                const moraine_value *id = &v[r->keycols[0]];
                if (id->type != MORAINE_INT || id->i < 0) {
                    row_where(ts, t, i, where, sizeof where);
                    rc = mr_err(MORAINE_EINVAL, "%s: column 'snapshot_id' must be an integer, not negative", where);
                    break;
                }
                if ((rc = push_wide(&w, id->i, PH_SNAPSHOT, (uint32_t)ti, i))) break;
                if ((rc = key_of(&kb, v, r->keycols, 1)) || (rc = keymap_add(&maps[ti], &kb, id->i))) break;
                if (id->i < first) first = id->i;
                if (id->i > last) last = id->i;
            } else if (r->info.placement == MORAINE_PLACE_TEMPORAL) {
                const moraine_value *b = &v[r->info.begin_col], *e = &v[r->info.end_col];
                if (b->type != MORAINE_INT || b->i < 0) {
                    row_where(ts, t, i, where, sizeof where);
                    rc = mr_err(MORAINE_EINVAL, "%s: column 'begin_snapshot' must be an integer, not negative", where);
                    break;
                }
                if (e->type != MORAINE_NULL && (e->type != MORAINE_INT || e->i < b->i)) {
                    row_where(ts, t, i, where, sizeof where);
                    rc = mr_err(MORAINE_EINVAL, "%s: column 'end_snapshot' must be NULL or not below begin_snapshot", where);
                    break;
                }
                if (b->i > snap_max || (e->type == MORAINE_INT && e->i > snap_max)) {
                    row_where(ts, t, i, where, sizeof where);
                    rc = mr_err(MORAINE_EINVAL, "%s: column '%s' names snapshot %lld, after the last snapshot of "
                                "ducklake_snapshot (%lld)", where, b->i > snap_max ? "begin_snapshot" : "end_snapshot",
                                (long long)(b->i > snap_max ? b->i : e->i), (long long)snap_max);
                    break;
                }
                if ((rc = push_wide(&w, b->i, PH_INSERT, (uint32_t)ti, i))) break;
                if (e->type == MORAINE_INT && e->i > b->i && (rc = push_wide(&w, e->i, PH_END, (uint32_t)ti, i))) break;
                if (r->nkey && ((rc = key_of(&kb, v, r->keycols, r->nkey)) || (rc = keymap_add(&maps[ti], &kb, b->i)))) break;
                if (b->i < first) first = b->i;
                if (b->i > last) last = b->i;
                if (e->type == MORAINE_INT && e->i > last) last = e->i;
            }
        }
    }
    for (size_t ti = 0; !rc && ti < ts->n; ti++)
        if (maps[ti].n) rc = keymap_index(&maps[ti]);
    if (!rc) rc = check_references(ts, maps, &kb);
    /* pass 2: children and non-temporal rows */
    int64_t rows_first = first == INT64_MAX ? MORAINE_NO_SNAPSHOT : first;
    int64_t rows_last = last == INT64_MIN ? MORAINE_NO_SNAPSHOT : last;
    if (!rc) {
        /* pass 2 adds a step per row of the non-temporal and child tables;
         * the maps' begin snapshots become indexes into the plan's */
        int64_t ends[2] = {rows_first, rows_last};
        size_t more = 0;
        for (size_t ti = 0; ti < ts->n; ti++)
            if (ts->t[ti].rel && (ts->t[ti].rel->info.placement == MORAINE_PLACE_ROWS || ts->t[ti].rel->info.placement == MORAINE_PLACE_CHILD))
                more += ts->t[ti].nrows;
        rc = start_plan(ts, &w, ends, 2, more, o);
        for (size_t ti = 0; !rc && ti < ts->n; ti++)
            for (size_t j = 0; j < maps[ti].n; j++) maps[ti].begin[j] = (int64_t)snap_index(o, maps[ti].begin[j]);
    }
    for (size_t ti = 0; !rc && ti < ts->n; ti++) {
        table *t = &ts->t[ti];
        if (!t->rel) continue;
        mr_rel *r = t->rel;
        if (r->info.placement == MORAINE_PLACE_ROWS) {
            uint64_t at = snap_index(o, strcmp(t->name, "ducklake_metadata") == 0 ? rows_first : rows_last);
            for (size_t i = 0; i < t->nrows; i++) push(o, at, PH_ROWS, (uint32_t)ti, i);
        } else if (r->info.placement == MORAINE_PLACE_CHILD) {
            table *pt = mr_nd_find_table(ts, r->info.parent);
            size_t pi = pt ? (size_t)(pt - ts->t) : 0;
            for (size_t i = 0; !rc && i < t->nrows; i++) {
                moraine_value *v;
                int64_t ord, begin;
                if ((rc = mr_nd_row_at(ts, t, i, &v, &ord))) break;
                int found = 0;
                if (pt && pt->rel && (rc = key_of(&kb, v, r->parentkey, r->nkey)) == 0) found = keymap_get(&maps[pi], &kb, &begin);
                if (rc) break;
                if (!found) {
                    /* DuckLake deletes a child row with its parent (expiry,
                     * merge, cleanup): one without is a damaged catalog */
                    char desc[256];
                    row_where(ts, t, i, where, sizeof where);
                    mr_describe_row(r, v, t->ncols, desc, sizeof desc);
                    rc = mr_err(MORAINE_EINVAL, "%s: no %s row has this row's %s: a child row needs its parent",
                                where, r->info.parent, desc);
                    break;
                }
                push(o, (uint64_t)begin, PH_CHILD, (uint32_t)ti, i); /* (begin: the parent's, as an index) */
            }
        }
    }
    for (size_t ti = 0; ti < ts->n; ti++) keymap_free(&maps[ti]);
    free(maps);
    free(w.v);
    mr_buf_free(&kb);
    if (!rc && o->n && !ts->slim) u64_sort(o->v, o->n, 2 * 64); /* (a check only needs no order) */
    return rc;
}

