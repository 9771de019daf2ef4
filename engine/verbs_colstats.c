/*
 * verbs_colstats.c — ducklake_table_column_stats, written by the data verbs
 * as DuckLake's commit writes them (docs/verbs.md, "Table column statistics").
 *
 * DuckLake (src/storage/ducklake_transaction_state.cpp, GetNewDataFiles,
 * ApplyDroppedFileStats, RecomputeGlobalStatsAfterRewrite;
 * ducklake_metadata_manager.cpp, UpdateGlobalTableStatsSql) starts from the
 * table's committed rows (DuckLakeColumnStats::FromGlobalStats: columns that
 * still exist, in their current type, contains_null as a null count of 0 or
 * 1, no value count), merges every new file's stats into them
 * (DuckLakeColumnStats::MergeStats, ducklake_stats.cpp) and writes: a table
 * without a ducklake_table_stats row gets one INSERTed row per column its new
 * files have stats for; a table with one gets an UPDATE per column, which
 * changes only rows that exist (a column added after the table's first insert
 * never gets a row). Whole files dropped (delete_files): rows left in the
 * table delete every row of the table; none left reset every row to NULLs
 * (the same commit's new files are merged into the reset rows). A rewrite
 * (ducklake_rewrite_data_files) leaving no deletes recomputes every existing
 * row from the files live after it. DROP TABLE and DROP COLUMN leave the rows.
 *
 * The merge of this transaction's files is kept per table as the verbs run
 * (each file merged once, in verb order: MergeStats keeps the earliest of
 * equal values, so merging the files first and then into the committed row
 * gives what merging them one by one into it gives); the committed rows are
 * read once per table, and the rows written once per table at commit.
 *
 * Sets of statistics own their type texts; the committed rows (t->cst) and
 * a rewrite's recompute own their min / max / extra texts too, while the
 * merges of files (t->pend, t->rw_pend, a verb's v->cs) point at the verbs'
 * copies of the files, which live as long as the transaction: merging a
 * file allocates nothing. A checking model merges each add_data_files /
 * rewrite_files verb's files into the verb (v->cs), parsing every min/max
 * once for the check; the commit, applying the verb to the same snapshot
 * into a table whose merge has none of those columns yet, takes that merge
 * as is (what merging the same files in the same order from none gives)
 * instead of parsing and merging the files again.
 */
#include "verbs_internal.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Frees text @s of @c unless it lies in @c's pack (cs_push's one copy of
 * the texts it took), which goes with the entry (cs_clear). */
static void cs_text_free(const mv_cstat *c, char *s)
{
    if (s && !(c->pack && s >= c->pack && s < c->pack + c->packlen)) free(s);
}

/* Frees @c's texts: the type, and min / max / extra when @own (else they
 * point at a verb's files), and its pack. */
static void cs_clear(mv_cstat *c, int own)
{
    cs_text_free(c, c->type);
    if (own) {
        cs_text_free(c, c->min);
        cs_text_free(c, c->max);
        cs_text_free(c, c->extra);
    }
    free(c->pack);
    c->type = c->min = c->max = c->extra = c->pack = NULL;
    c->packlen = 0;
}

static void cs_free_all(mv_cstat *a, size_t n, int own)
{
    for (size_t i = 0; i < n; i++) cs_clear(&a[i], own);
    free(a);
}

void mv_cstats_free(tstate *t)
{
    cs_free_all(t->cst, t->ncst, 1);
    cs_free_all(t->pend, t->npend, 0);
    cs_free_all(t->rw_pend, t->nrw_pend, 0);
    free(t->rw_inputs);
    t->cst = t->pend = t->rw_pend = NULL;
    t->ncst = t->npend = t->nrw_pend = 0;
    t->rw_inputs = NULL;
    t->nrw_inputs = 0;
}

/* Text *dst of @c becomes @s: a copy when @own (the old text freed unless
 * it lies in @c's pack), else @s itself. ENOMEM. */
static int set_text(mv_cstat *c, char **dst, const char *s, int own)
{
    if (!own) {
        *dst = (char *)s;
        return 0;
    }
    char *d = s ? strdup(s) : NULL;
    if (s && !d) return mr_err(MORAINE_ENOMEM, "out of memory");
    cs_text_free(c, *dst);
    *dst = d;
    return 0;
}

/* Copies @s (NULL: none) to *at, returns the copy and moves *at past it. */
static char *pack_text(char **at, const char *s, size_t len)
{
    if (!s) return NULL;
    char *d = *at;
    memcpy(d, s, len + 1);
    *at += len + 1;
    return d;
}

/* The entry of column @id in @a, or NULL; @hint: where it usually is (a
 * file's i-th stat is the set's i-th column when every file names the
 * same columns in the same order). */
static mv_cstat *cs_find_at(mv_cstat *a, size_t n, int64_t id, size_t hint)
{
    if (hint < n && a[hint].column_id == id) return &a[hint];
    for (size_t i = 0; i < n; i++)
        if (a[i].column_id == id) return &a[i];
    return NULL;
}

static mv_cstat *cs_find(mv_cstat *a, size_t n, int64_t id) { return cs_find_at(a, n, id, 0); }

/* Appends a copy of @c with min and max parsed as *@kmin / *@kmax (c->kmin
 * / c->kmax are not read) and ord -1 to *arr: its type copied, its other
 * texts copied when @own, else pointed at. ENOMEM. */
static int cs_push(mv_cstat **arr, size_t *n, const mv_cstat *c, const mr_statkey *kmin, const mr_statkey *kmax, mv_cstat **out, int own)
{
    /* sets grow only here, from none: room for 8 entries, then doubled
     * whenever the count reaches a power of two (an array of n entries
     * always has room up to the next power of two) */
    if (*n == 0 || (*n >= 8 && (*n & (*n - 1)) == 0)) {
        size_t cap = *n < 8 ? 8 : *n * 2;
        if (cap > SIZE_MAX / sizeof **arr) return mr_err(MORAINE_ENOMEM, "out of memory");
        mv_cstat *p = realloc(*arr, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        *arr = p;
    }
    /* the texts copied into one allocation (the type; min / max / extra when @own) */
    const char *texts[4] = {c->type, own ? c->min : NULL, own ? c->max : NULL, own ? c->extra : NULL};
    size_t lens[4] = {0}, total = 0;
    for (int i = 0; i < 4; i++) total += texts[i] ? (lens[i] = strlen(texts[i])) + 1 : 0;
    char *pack = total ? malloc(total) : NULL;
    if (total && !pack) return mr_err(MORAINE_ENOMEM, "out of memory");
    mv_cstat *d = &(*arr)[*n];
    *d = *c;
    d->kmin = *kmin, d->kmax = *kmax;
    d->pack = pack, d->packlen = total;
    char *at = pack;
    d->type = pack_text(&at, texts[0], lens[0]);
    if (own) {
        d->min = pack_text(&at, texts[1], lens[1]);
        d->max = pack_text(&at, texts[2], lens[2]);
        d->extra = pack_text(&at, texts[3], lens[3]);
    }
    d->ord = -1;
    d->written = 0;
    (*n)++;
    if (out) *out = d;
    return 0;
}

/* DuckLakeColumnStats::AnyValid */
static int any_valid(const mv_cstat *c)
{
    if (c->has_num && c->has_nulls) return c->num_values > c->null_count;
    return c->any_valid;
}

static const char *table_name(tstate *t)
{
    const char *n = mv_orow_str(&t->row, "table_name");
    return n ? n : "";
}

/* DuckLakeColumnStats::MergeStats of @n, its min and max parsed as *@kmin
 * / *@kmax, into @c (@own: @c owns its min / max / extra texts, else it
 * points at @n's). */
static int cs_merge(mv_cstat *c, const mv_cstat *n, const mr_statkey *kmin, const mr_statkey *kmax, int own)
{
    int rc, differ = !c->type || !n->type || (c->type != n->type && strcmp(c->type, n->type) != 0);
    if (differ) {
        if ((rc = set_text(c, &c->type, n->type, 1))) return rc;
        c->k = n->k;
    }
    /* moraine's file stats carry no extra_stats: a merged geometry/variant bound is unknown */
    if (own) cs_text_free(c, c->extra);
    c->extra = NULL;
    if (!n->has_nulls) c->has_nulls = 0;
    else if (c->has_nulls) c->null_count += n->null_count;
    if (!n->has_num) c->has_num = 0;
    else if (c->has_num) c->num_values += n->num_values;
    if (!n->has_nan) c->has_nan = 0;
    else if (c->has_nan && n->nan) c->nan = 1;
    if (!any_valid(n)) {
        if (differ) c->has_min = c->has_max = 0;
        return 0;
    }
    if (!any_valid(c)) {
        if ((rc = set_text(c, &c->min, n->has_min ? n->min : NULL, own)) || (rc = set_text(c, &c->max, n->has_max ? n->max : NULL, own)))
            return rc;
        c->has_min = n->has_min, c->has_max = n->has_max;
        c->kmin = *kmin, c->kmax = *kmax;
        c->any_valid = 1;
        return 0;
    }
    if (differ) {
        c->has_min = c->has_max = 0; /* values of different types are not compared */
        return 0;
    }
    if (!n->has_min) c->has_min = 0;
    else if (c->has_min && mr_stat_cmp(&c->k, kmin, n->min, &c->kmin, c->min) < 0) {
        if ((rc = set_text(c, &c->min, n->min, own))) return rc;
        c->kmin = *kmin;
    }
    if (!n->has_max) c->has_max = 0;
    else if (c->has_max && mr_stat_cmp(&c->k, kmax, n->max, &c->kmax, c->max) > 0) {
        if ((rc = set_text(c, &c->max, n->max, own))) return rc;
        c->kmax = *kmax;
    }
    return 0;
}

/* Merges @n (min and max parsed as *@kmin / *@kmax) into the set *arr: a
 * column not in it yet gets a copy (DuckLakeTableStats::MergeStats). @own:
 * the set owns its texts. @hint: cs_find_at. ENOMEM. */
static int cs_merge_into(mv_cstat **arr, size_t *len, const mv_cstat *n, const mr_statkey *kmin, const mr_statkey *kmax, int own, size_t hint)
{
    mv_cstat *c = cs_find_at(*arr, *len, n->column_id, hint);
    return c ? cs_merge(c, n, kmin, kmax, own) : cs_push(arr, len, n, kmin, kmax, NULL, own);
}

/* cs_merge_into of a whole entry (its own parsed min and max). */
static int cs_merge_entry(mv_cstat **arr, size_t *len, const mv_cstat *n, int own)
{
    return cs_merge_into(arr, len, n, &n->kmin, &n->kmax, own, 0);
}

/* Resolves @c's comparison and parses its min/max; EINVAL naming the table,
 * column id and text when one is not a value of the type. */
static int cs_parse(tstate *t, mv_cstat *c)
{
    int rc = mr_stat_kind(c->type, &c->k);
    const char *bad = rc ? NULL : c->has_min && c->min && !mr_stat_parse(&c->k, c->min, &c->kmin) ? c->min
                                  : c->has_max && c->max && !mr_stat_parse(&c->k, c->max, &c->kmax) ? c->max
                                                                                                   : NULL;
    if (bad)
        return mr_err(MORAINE_EINVAL, "table \"%s\", column id %lld: the statistics value \"%s\" is not a value of the column's type %s", table_name(t),
                      (long long)c->column_id, bad, c->type);
    return rc;
}

/* The live column row of @t with id @id (a field too), or NULL. */
static const orow *column_by_id(tstate *t, int64_t id)
{
    const moraine_relation_info *rel = NULL;
    int ic = -1; /* column_id, resolved once per relation */
    for (size_t i = 0; i < t->ncols; i++) {
        const orow *c = &t->cols[i];
        if (c->rel != rel) ic = moraine_column_index(rel = c->rel, "column_id");
        if ((ic >= 0 && c->v[ic].type == MORAINE_INT ? c->v[ic].i : -1) == id) return c; /* mv_orow_int(c, "column_id", -1) */
    }
    return NULL;
}

static int col_int(const moraine_row *r, int i, int64_t *v)
{
    if (i < 0 || r->vals[i].type != MORAINE_INT) return 0;
    *v = r->vals[i].i;
    return 1;
}

/* A copy of text cell @i (the caller frees it), or NULL (NULL, or *oom set). */
static char *col_text(const moraine_row *r, int i, int *oom)
{
    if (i < 0 || r->vals[i].type != MORAINE_STR) return NULL;
    char *d = strndup(r->vals[i].s, r->vals[i].len);
    if (!d) *oom = 1;
    return d;
}

static int col_bool(const moraine_row *r, int i, int *has, int *v)
{
    *has = i >= 0 && (r->vals[i].type == MORAINE_BOOL || r->vals[i].type == MORAINE_INT);
    *v = *has && r->vals[i].i != 0;
    return *has;
}

void mv_cstats_free_set(mv_cstat *a, size_t n) { cs_free_all(a, n, 1); }

/* ducklake_table_column_stats' columns (-1: the catalog lacks one). */
typedef struct {
    int it, ic, inl, inan, imin, imax, ie;
} cst_cols;

static void cst_cols_of(cst_cols *x, const moraine_relation_info *rel)
{
    x->it = moraine_column_index(rel, "table_id"), x->ic = moraine_column_index(rel, "column_id");
    x->inl = moraine_column_index(rel, "contains_null"), x->inan = moraine_column_index(rel, "contains_nan");
    x->imin = moraine_column_index(rel, "min_value"), x->imax = moraine_column_index(rel, "max_value");
    x->ie = moraine_column_index(rel, "extra_stats");
}

/* A ducklake_table_column_stats row of column @cid as read (type NULL,
 * min/max unparsed, texts owned: what mv_loaded.cst keeps) into *s: the
 * one decoding of such a row, for the rows scanned and for the rows a
 * commit wrote (mv_cstats_refresh). ENOMEM (nothing left owned). */
static int cst_decode(const cst_cols *x, const moraine_row *row, int64_t cid, mv_cstat *s)
{
    *s = (mv_cstat){.column_id = cid, .ord = row->ord};
    int has_null_value;
    col_bool(row, x->inl, &s->has_nulls, &has_null_value);
    s->null_count = has_null_value ? 1 : 0;
    col_bool(row, x->inan, &s->has_nan, &s->nan);
    int oom = 0;
    s->min = col_text(row, x->imin, &oom);
    s->max = col_text(row, x->imax, &oom);
    s->extra = col_text(row, x->ie, &oom);
    s->has_min = s->min != NULL, s->has_max = s->max != NULL;
    s->any_valid = s->has_min || s->has_max || (x->ie >= 0 && row->vals[x->ie].type == MORAINE_STR);
    if (oom) {
        free(s->min), free(s->max), free(s->extra);
        s->min = s->max = s->extra = NULL;
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    return 0;
}

/* Takes committed row @raw (as read: min/max unparsed) into t->cst when
 * its column is live: in the column's current type, min/max parsed (EINVAL
 * naming the text when one is not a value of it). ENOMEM. A row kept for
 * the commit (@keep) remembers its parse: raw->type becomes a copy of the
 * type parsed in and raw->k / kmin / kmax what cs_parse gave, and a row
 * whose raw->type is the column's type takes them instead of parsing the
 * same texts in the same type again (the parse is a function of the two). */
static int cst_take(tstate *t, mv_cstat *raw, int keep)
{
    const orow *col = column_by_id(t, raw->column_id);
    if (!col) return 0; /* a dropped column: DuckLake no longer reads (or writes) its row */
    mv_cstat s = *raw;
    s.type = (char *)mv_orow_str(col, "column_type");
    mv_cstat *d;
    int rc = 0;
    if (raw->type && s.type && strcmp(raw->type, s.type) == 0) {
        s.k = raw->k, s.kmin = raw->kmin, s.kmax = raw->kmax;
    } else {
        rc = cs_parse(t, &s);
        char *ty = !rc && keep && s.type ? strdup(s.type) : NULL;
        if (ty) { /* no memory: only the parse is not remembered */
            free(raw->type);
            raw->type = ty;
            raw->k = s.k, raw->kmin = s.kmin, raw->kmax = s.kmax;
        }
    }
    if (!rc) rc = cs_push(&t->cst, &t->ncst, &s, &s.kmin, &s.kmax, &d, 1);
    if (!rc) d->ord = raw->ord;
    return rc;
}

int mv_cstats_load(model *m, tstate *t)
{
    if (t->cst_loaded) return 0;
    int rc = mv_load_stats(m, t);
    if (rc) return rc;
    t->cst_loaded = 1;
    t->cst_base_stats = t->stats_ord >= 0;
    t->cst_base_records = t->record_count;
    if (!mv_rel(m, "ducklake_table_column_stats") || t->created) return 0;
    mv_loaded *kept = mv_reads_use(m, t->table_id);
    if (kept && kept->has_cst) {
        for (size_t i = 0; !rc && i < kept->ncst; i++) rc = cst_take(t, &kept->cst[i], 1);
        return rc;
    }
    /* the table's rows as read, kept for the commit when this is a checking model */
    mv_loaded *keep = mv_reads_keep(m, t->table_id, &rc);
    if (rc) return rc;
    mv_cstat *raws = NULL;
    size_t nraws = 0;
    moraine_cursor *c;
    moraine_row row;
    if ((rc = moraine_scan_open(m->rd, "ducklake_table_column_stats", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c))) return rc;
    /* the relation's columns, resolved on the first row (every row is of the same relation) */
    cst_cols x = {0};
    const moraine_relation_info *rel = NULL;
    while (!rc && (rc = moraine_cursor_next(c, &row)) == 1) {
        rc = 0;
        if (row.rel != rel) cst_cols_of(&x, rel = row.rel);
        int64_t tid, cid;
        if (!col_int(&row, x.it, &tid) || tid != t->table_id) continue;
        if (!col_int(&row, x.ic, &cid)) continue;
        if (!keep && !column_by_id(t, cid)) continue; /* a dropped column (cst_take would skip it) */
        mv_cstat s;
        rc = cst_decode(&x, &row, cid, &s);
        if (!rc) rc = cst_take(t, &s, keep != NULL);
        if (!rc && keep) {
            mv_cstat *p = realloc(raws, (nraws + 1) * sizeof *p);
            if (!p) rc = mr_err(MORAINE_ENOMEM, "out of memory");
            else {
                raws = p;
                raws[nraws++] = s; /* its texts move into the list */
                continue;
            }
        }
        free(s.type), free(s.min), free(s.max), free(s.extra);
    }
    moraine_cursor_close(c);
    if (rc >= 0 && keep && !keep->has_cst) {
        keep->cst = raws, keep->ncst = nraws, keep->has_cst = 1;
        raws = NULL, nraws = 0;
    }
    cs_free_all(raws, nraws, 1);
    return rc < 0 ? rc : 0;
}

int mv_cstats_parse(tstate *t, const moraine_data_file *f, const char *const *types, const mr_statkind *kinds, mr_statkey *kmin, mr_statkey *kmax)
{
    for (size_t i = 0; i < f->nstats; i++) {
        const moraine_column_stats *s = &f->stats[i];
        const char *bad = s->min_value && !mr_stat_parse(&kinds[i], s->min_value, &kmin[i]) ? "min_value"
                          : s->max_value && !mr_stat_parse(&kinds[i], s->max_value, &kmax[i]) ? "max_value"
                                                                                                : NULL;
        if (bad)
            return mr_err(MORAINE_EINVAL, "data file %s: table \"%s\", column \"%s\": %s \"%s\" is not a value of the column's type %s", f->path,
                          table_name(t), s->column ? s->column : "", bad, *bad == 'm' && bad[1] == 'i' ? s->min_value : s->max_value, types[i]);
    }
    return 0;
}

int mv_cstats_add_file(mv_cstat **set, size_t *nset, const moraine_data_file *f, const int64_t *cids, const char *const *types,
                       const mr_statkind *kinds, const mr_statkey *kmin, const mr_statkey *kmax)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < f->nstats; i++) {
        const moraine_column_stats *s = &f->stats[i];
        /* a ducklake_file_column_stats row as DuckLake reads it back
         * (RecomputeGlobalStatsAfterRewrite); its parsed min and max stay in
         * @kmin / @kmax (n.kmin / n.kmax are not read) */
        mv_cstat n;
        n.column_id = cids[i], n.type = (char *)types[i], n.any_valid = 1, n.ord = -1, n.extra = NULL;
        int counts = s->value_count != INT64_MIN && s->null_count != INT64_MIN;
        n.has_num = n.has_nulls = counts;
        n.num_values = counts ? (uint64_t)s->value_count + (uint64_t)s->null_count : 0;
        n.null_count = counts ? (uint64_t)s->null_count : 0;
        n.has_nan = s->contains_nan >= 0, n.nan = s->contains_nan > 0;
        n.has_min = s->min_value != NULL, n.has_max = s->max_value != NULL;
        n.min = (char *)s->min_value, n.max = (char *)s->max_value;
        n.k = kinds[i];
        rc = cs_merge_into(set, nset, &n, &kmin[i], &kmax[i], 0, i);
    }
    return rc;
}

void mv_cstats_sum_free(verb *v)
{
    cs_free_all(v->cs, v->ncs, 0);
    v->cs = NULL;
    v->ncs = 0;
    v->cs_made = 0;
}

int mv_cstats_sum_usable(const model *m, const verb *v, const mv_cstat *set, size_t nset)
{
    /* the same snapshot and the same verbs before: the same columns, types and files */
    if (!v->cs_made || v->cs_base != m->base) return 0;
    for (size_t i = 0; i < v->ncs; i++)
        for (size_t j = 0; j < nset; j++)
            if (set[j].column_id == v->cs[i].column_id) return 0;
    return 1;
}

int mv_cstats_add_sum(mv_cstat **set, size_t *nset, const verb *v)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < v->ncs; i++) rc = cs_push(set, nset, &v->cs[i], &v->cs[i].kmin, &v->cs[i].kmax, NULL, 0);
    return rc;
}

/* RecomputeGlobalStatsAfterRewrite: when no deletes remain after the
 * rewrites, the stats of every file live after them (the base's files but
 * the rewrites' inputs, by data_file_id, then the outputs) into *out, one
 * entry per live column. *done 0: deletes remain, nothing recomputed. */
static int recompute(model *m, tstate *t, mv_cstat **out, size_t *nout, int *done)
{
    *done = 0;
    moraine_cursor *c = NULL;
    moraine_row row;
    int64_t total = 0, gross = 0, deleted = 0;
    int rc = moraine_scan_open(m->rd, "ducklake_data_file", t->table_id, m->base, &c);
    while (!rc) {
        int nx = moraine_cursor_next(c, &row);
        if (nx <= 0) {
            rc = nx;
            break;
        }
        int64_t id = -1, rcnt = 0;
        col_int(&row, moraine_column_index(row.rel, "data_file_id"), &id);
        col_int(&row, moraine_column_index(row.rel, "record_count"), &rcnt);
        total += rcnt;
        if (mv_id_in(t->rw_inputs, t->nrw_inputs, id)) continue;
        gross += rcnt;
        moraine_children it;
        moraine_row ch;
        moraine_row_children(m->rd, &row, &it);
        int r2;
        while ((r2 = moraine_children_next(&it, &ch)) == 1) {
            if (strcmp(ch.rel->name, "ducklake_file_column_stats") != 0) continue;
            int64_t cid, vc, nc;
            if (!col_int(&ch, moraine_column_index(ch.rel, "column_id"), &cid)) continue;
            const orow *col = column_by_id(t, cid);
            if (!col) continue;
            mv_cstat n = {.column_id = cid, .type = (char *)mv_orow_str(col, "column_type"), .any_valid = 1, .ord = -1};
            if (col_int(&ch, moraine_column_index(ch.rel, "value_count"), &vc) && col_int(&ch, moraine_column_index(ch.rel, "null_count"), &nc)) {
                n.has_num = n.has_nulls = 1;
                n.num_values = (uint64_t)vc + (uint64_t)nc;
                n.null_count = (uint64_t)nc;
            }
            col_bool(&ch, moraine_column_index(ch.rel, "contains_nan"), &n.has_nan, &n.nan);
            int oom = 0;
            n.min = col_text(&ch, moraine_column_index(ch.rel, "min_value"), &oom);
            n.max = col_text(&ch, moraine_column_index(ch.rel, "max_value"), &oom);
            n.has_min = n.min != NULL, n.has_max = n.max != NULL;
            r2 = oom ? mr_err(MORAINE_ENOMEM, "out of memory") : cs_parse(t, &n);
            if (!r2) r2 = cs_merge_entry(out, nout, &n, 1);
            free(n.min), free(n.max);
            if (r2) break;
        }
        moraine_children_free(&it);
        if (r2 < 0) rc = r2;
    }
    if (c) moraine_cursor_close(c);
    if (rc < 0) return rc;
    c = NULL;
    if (mv_rel(m, "ducklake_delete_file")) {
        rc = moraine_scan_open(m->rd, "ducklake_delete_file", t->table_id, m->base, &c);
        while (!rc) {
            int nx = moraine_cursor_next(c, &row);
            if (nx <= 0) {
                rc = nx;
                break;
            }
            int64_t dc = 0;
            col_int(&row, moraine_column_index(row.rel, "delete_count"), &dc);
            deleted += dc;
        }
        if (c) moraine_cursor_close(c);
        if (rc < 0) return rc;
    }
    for (size_t a = 0; a < t->nadded; a++) /* the rewrites' outputs (no row_id_start), still live */
        if (!t->added[a].row_ids && !t->added[a].ended) gross += t->added[a].f->record_count;
    if (gross != total - deleted) return 0;
    for (size_t i = 0; !rc && i < t->nrw_pend; i++) rc = cs_merge_entry(out, nout, &t->rw_pend[i], 1);
    for (size_t i = 0; !rc && i < t->ncols; i++) {
        int64_t cid = mv_orow_int(&t->cols[i], "column_id", -1);
        if (cs_find(*out, *nout, cid)) continue;
        mv_cstat e = {.column_id = cid, .type = (char *)mv_orow_str(&t->cols[i], "column_type"), .any_valid = 1, .ord = -1};
        rc = cs_parse(t, &e);
        if (!rc) rc = cs_push(out, nout, &e, &e.kmin, &e.kmax, NULL, 1);
    }
    if (!rc) *done = 1;
    return rc;
}

static int cs_cmp_id(const void *a, const void *b)
{
    const mv_cstat *x = a, *y = b;
    return x->column_id < y->column_id ? -1 : x->column_id > y->column_id;
}

/* Deletes every ducklake_table_column_stats row of @t (DuckLake's DELETE ... WHERE table_id). */
static int delete_rows(model *m, tstate *t)
{
    moraine_cursor *c;
    moraine_row row;
    int64_t *ords = NULL;
    size_t n = 0;
    int rc = moraine_scan_open(m->rd, "ducklake_table_column_stats", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c);
    if (rc) return rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        int64_t tid;
        rc = 0;
        if (col_int(&row, moraine_column_index(row.rel, "table_id"), &tid) && tid == t->table_id && (rc = mv_id_push(&ords, &n, row.ord))) break;
    }
    moraine_cursor_close(c);
    for (size_t i = 0; rc >= 0 && i < n; i++) rc = moraine_txn_delete_row(m->stx, "ducklake_table_column_stats", ords[i]);
    free(ords);
    return rc < 0 ? rc : 0;
}

/* The ducklake_table_column_stats row DuckLake writes for @c of @t into
 * @v (@r's ncols values; its texts point at @c's). */
static void cst_row(const cst_cols *x, const moraine_relation_info *r, const tstate *t, const mv_cstat *c, moraine_value *v)
{
    for (size_t k = 0; k < r->ncols; k++) v[k] = (moraine_value){.type = MORAINE_NULL};
    if (x->it >= 0) v[x->it] = (moraine_value){.type = MORAINE_INT, .i = t->table_id};
    if (x->ic >= 0) v[x->ic] = (moraine_value){.type = MORAINE_INT, .i = c->column_id};
    if (x->inl >= 0 && c->has_nulls) v[x->inl] = (moraine_value){.type = MORAINE_BOOL, .i = c->null_count > 0};
    if (x->inan >= 0 && c->has_nan) v[x->inan] = (moraine_value){.type = MORAINE_BOOL, .i = c->nan != 0};
    if (x->imin >= 0 && c->has_min && c->min) v[x->imin] = (moraine_value){.type = MORAINE_STR, .s = c->min, .len = strlen(c->min)};
    if (x->imax >= 0 && c->has_max && c->max) v[x->imax] = (moraine_value){.type = MORAINE_STR, .s = c->max, .len = strlen(c->max)};
    if (x->ie >= 0 && c->extra) v[x->ie] = (moraine_value){.type = MORAINE_STR, .s = c->extra, .len = strlen(c->extra)};
}

/* Text cell @i of @v against @text (NULL: the cell is not a text). */
static int same_text(const moraine_value *v, int i, const char *text)
{
    int has = i >= 0 && v[i].type == MORAINE_STR;
    if (!has || !text) return !has && !text;
    return strlen(text) == v[i].len && memcmp(text, v[i].s, v[i].len) == 0;
}

/* Boolean cell @i of @v against what cst_decode made of one (@has, @val). */
static int same_bool(const moraine_value *v, int i, int has, int val)
{
    int vh = i >= 0 && (v[i].type == MORAINE_BOOL || v[i].type == MORAINE_INT);
    return vh == has && (!vh || (v[i].i != 0) == (val != 0));
}

/* 1 when the row at @c's place is one this handle's last commit wrote
 * (@kept's row there was decoded from the very values written:
 * mv_cstats_refresh) and the values @v of @c (cst_row) decode to the same
 * row: cst_row's values are a function of what they decode to (booleans
 * are BOOL or NULL, texts STR or NULL, the ids the same), so @v are the
 * values written then and put_row would write the same bytes again. */
static int cst_unchanged(const cst_cols *x, const moraine_value *v, const mv_loaded *kept, const mv_cstat *c)
{
    const mv_cstat *old = NULL;
    for (size_t j = 0; j < kept->ncst && !old; j++)
        if (kept->cst[j].ord == c->ord) old = &kept->cst[j];
    if (!old || !old->written || old->column_id != c->column_id) return 0;
    return same_bool(v, x->inl, old->has_nulls, old->null_count > 0) && same_bool(v, x->inan, old->has_nan, old->nan) &&
           same_text(v, x->imin, old->min) && same_text(v, x->imax, old->max) && same_text(v, x->ie, old->extra);
}

int mv_cstats_emit(model *m, tstate *t)
{
    /* only a commit with data verbs on the table writes its rows (a type change alone loads them, writes none) */
    if (!t->cst_loaded || t->dropped || !m->stx || !(t->inserted || t->compacted || t->dropped_any)) return 0;
    int rc = 0;
    const moraine_relation_info *r = mv_rel(m, "ducklake_table_column_stats");
    if (!r) return 0;
    int remain = t->dropped_any && t->cst_base_records - t->dropped_rows > 0;
    if (t->dropped_any && !remain) /* ApplyDroppedFileStats: the table emptied, its rows reset */
        for (size_t i = 0; i < t->ncst; i++) {
            mv_cstat *c = &t->cst[i];
            cs_text_free(c, c->min), cs_text_free(c, c->max), cs_text_free(c, c->extra);
            c->min = c->max = c->extra = NULL;
            c->has_nulls = c->has_num = c->has_nan = c->nan = c->has_min = c->has_max = c->any_valid = 0;
            c->null_count = c->num_values = 0;
        }
    if (remain) return delete_rows(m, t);
    /* GetNewDataFiles: merged only when the table has a stats row (else the new rows are inserted) */
    for (size_t i = 0; !rc && i < t->npend; i++) rc = cs_merge_entry(&t->cst, &t->ncst, &t->pend[i], 1);
    if (!rc && t->compacted && t->cst_base_stats) {
        mv_cstat *n = NULL;
        size_t nn = 0;
        int done;
        rc = recompute(m, t, &n, &nn, &done);
        if (!rc && done) {
            for (size_t i = 0; i < nn; i++) {
                mv_cstat *old = cs_find(t->cst, t->ncst, n[i].column_id);
                n[i].ord = old ? old->ord : -1;
            }
            cs_free_all(t->cst, t->ncst, 1);
            t->cst = n, t->ncst = nn;
            n = NULL, nn = 0;
        }
        cs_free_all(n, nn, 1);
    }
    if (rc) return rc;
    if (t->ncst) qsort(t->cst, t->ncst, sizeof *t->cst, cs_cmp_id); /* qsort(NULL, 0, ...) is undefined (UBSan) */
    moraine_value *v = calloc(r->ncols ? r->ncols : 1, sizeof *v);
    if (!v) return mr_err(MORAINE_ENOMEM, "out of memory");
    cst_cols x;
    cst_cols_of(&x, r);
    /* the rows as this handle's last commit wrote them, when the commit reads through them */
    const mv_loaded *kept = mv_reads_use(m, t->table_id);
    if (kept && !kept->has_cst) kept = NULL;
    for (size_t i = 0; !rc && i < t->ncst; i++) {
        mv_cstat *c = &t->cst[i];
        /* UpdateGlobalTableStatsSql: an UPDATE changes existing rows only */
        if (t->cst_base_stats && c->ord < 0) continue;
        cst_row(&x, r, t, c, v);
        if (c->ord >= 0 && kept && cst_unchanged(&x, v, kept, c)) continue; /* the same bytes are there already */
        rc = c->ord >= 0 ? moraine_txn_put_row(m->stx, r->name, v, r->ncols, c->ord) : moraine_txn_insert(m->stx, r->name, v, r->ncols, -1);
    }
    free(v);
    return rc;
}

int mv_cstats_refresh(model *m, tstate *t, mv_loaded *l)
{
    const moraine_relation_info *r = mv_rel(m, "ducklake_table_column_stats");
    if (!r || !l->has_cst || !t->cst_base_stats) return 1;
    moraine_value *v = calloc(r->ncols ? r->ncols : 1, sizeof *v);
    if (!v) return 1;
    cst_cols x;
    cst_cols_of(&x, r);
    int bad = 0;
    for (size_t i = 0; !bad && i < t->ncst; i++) {
        const mv_cstat *c = &t->cst[i];
        if (c->ord < 0) continue; /* not written (an UPDATE changes existing rows only) */
        mv_cstat *old = NULL;
        for (size_t j = 0; j < l->ncst && !old; j++)
            if (l->cst[j].ord == c->ord) old = &l->cst[j];
        if (!old || old->column_id != c->column_id) {
            bad = 1;
            break;
        }
        cst_row(&x, r, t, c, v);
        moraine_row row = {.rel = r, .ncols = r->ncols, .vals = v, .ord = c->ord};
        mv_cstat s;
        if (cst_decode(&x, &row, c->column_id, &s)) {
            bad = 1;
            break;
        }
        /* c's parse is its texts' (each merge takes a text with its parse), in c's type */
        if (c->type && (s.type = strdup(c->type))) s.k = c->k, s.kmin = c->kmin, s.kmax = c->kmax;
        s.written = 1;
        cs_clear(old, 1);
        *old = s;
    }
    free(v);
    return bad;
}
