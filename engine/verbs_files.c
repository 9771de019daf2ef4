/*
 * verbs_files.c — the verbs on a table's data and delete files, applied to
 * the model: add_data_files (with partition values, column stats and the
 * table's stats), add_delete_files, delete_files and rewrite_files
 * (compaction), over the files live at the base and those this transaction
 * added or ended before.
 */
#include "verbs_internal.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int mv_load_stats(model *m, tstate *t)
{
    if (t->stats_loaded) return 0;
    t->stats_loaded = 1;
    const mv_loaded *kept = t->created ? NULL : mv_reads_use(m, t->table_id);
    if (kept && kept->has_stats) {
        t->record_count = kept->record_count, t->next_row_id = kept->next_row_id, t->file_size_bytes = kept->file_size_bytes;
        t->stats_ord = kept->stats_ord;
        return 0;
    }
    if (!mv_rel(m, "ducklake_table_stats")) return 0;
    moraine_cursor *c;
    moraine_row row;
    int rc = moraine_scan_open(m->rd, "ducklake_table_stats", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c);
    if (rc) return rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        int it = moraine_column_index(row.rel, "table_id");
        if (it >= 0 && row.vals[it].type == MORAINE_INT && row.vals[it].i == t->table_id) {
            int ir = moraine_column_index(row.rel, "record_count"), in = moraine_column_index(row.rel, "next_row_id"),
                isz = moraine_column_index(row.rel, "file_size_bytes");
            t->record_count = ir >= 0 && row.vals[ir].type == MORAINE_INT ? row.vals[ir].i : 0;
            t->next_row_id = in >= 0 && row.vals[in].type == MORAINE_INT ? row.vals[in].i : 0;
            t->file_size_bytes = isz >= 0 && row.vals[isz].type == MORAINE_INT ? row.vals[isz].i : 0;
            t->stats_ord = row.ord;
        }
    }
    moraine_cursor_close(c);
    if (rc < 0) return rc;
    /* kept for the commit (a table created here has no row to read) */
    mv_loaded *l = t->created ? NULL : mv_reads_keep(m, t->table_id, &rc);
    if (l && !l->has_stats) {
        l->record_count = t->record_count, l->next_row_id = t->next_row_id, l->file_size_bytes = t->file_size_bytes;
        l->stats_ord = t->stats_ord;
        l->has_stats = 1;
    }
    return rc;
}

/* The file relations of one add_data_files / rewrite_files verb, their
 * columns resolved once by name (-1: the catalog lacks the column, which is
 * then not set, as mv_orow_set_* does), scratch rows for the data file row
 * and its child rows (emitted, not kept: their strings point at the verb's)
 * and the stats columns of the last file, reused while the next names the
 * same ones. */
typedef struct {
    int resolved;
    const moraine_relation_info *df, *pv, *st; /* NULL: missing (mv_need_rel says why when one is needed) */
    int df_id, df_table, df_begin, df_order, df_path, df_relative, df_format, df_records, df_size, df_footer, df_row_id, df_pid, df_groups;
    int pv_id, pv_table, pv_begin, pv_index, pv_value;
    int st_id, st_table, st_begin, st_column, st_size, st_values, st_nulls, st_min, st_max, st_nan;
    moraine_value *dfrow, *pvrow, *strow;
    const char **snames; /* the last file's stats column names (the verb's strings) */
    int64_t *scids;      /* and their column ids */
    const char **stypes; /* and types (the live column rows' strings) */
    mr_statkind *skinds; /* and how they compare */
    mr_statkey *kmin, *kmax; /* the current file's min/max parsed */
    size_t nsnames, capsnames;
} filecols;

static void filecols_free(filecols *fc)
{
    free(fc->dfrow);
    free(fc->pvrow);
    free(fc->strow);
    free(fc->snames);
    free(fc->scids);
    free(fc->stypes);
    free(fc->skinds);
    free(fc->kmin);
    free(fc->kmax);
}

static const moraine_relation_info *resolve_rel(model *m, const char *name)
{
    const moraine_relation_info *r = mv_rel(m, name);
    return r && r->ncols ? r : NULL;
}

static int colx(const moraine_relation_info *r, const char *name) { return r ? moraine_column_index(r, name) : -1; }

static int filecols_resolve(model *m, filecols *fc)
{
    if (fc->resolved) return 0;
    fc->resolved = 1;
    const moraine_relation_info *d = fc->df = resolve_rel(m, "ducklake_data_file");
    fc->df_id = colx(d, "data_file_id"), fc->df_table = colx(d, "table_id"), fc->df_begin = colx(d, "begin_snapshot");
    fc->df_order = colx(d, "file_order"), fc->df_path = colx(d, "path"), fc->df_relative = colx(d, "path_is_relative");
    fc->df_format = colx(d, "file_format"), fc->df_records = colx(d, "record_count"), fc->df_size = colx(d, "file_size_bytes");
    fc->df_footer = colx(d, "footer_size"), fc->df_row_id = colx(d, "row_id_start"), fc->df_pid = colx(d, "partition_id");
    fc->df_groups = colx(d, "row_group_count");
    const moraine_relation_info *p = fc->pv = resolve_rel(m, "ducklake_file_partition_value");
    fc->pv_id = colx(p, "data_file_id"), fc->pv_table = colx(p, "table_id"), fc->pv_begin = colx(p, "begin_snapshot");
    fc->pv_index = colx(p, "partition_key_index"), fc->pv_value = colx(p, "partition_value");
    const moraine_relation_info *s = fc->st = resolve_rel(m, "ducklake_file_column_stats");
    fc->st_id = colx(s, "data_file_id"), fc->st_table = colx(s, "table_id"), fc->st_begin = colx(s, "begin_snapshot");
    fc->st_column = colx(s, "column_id"), fc->st_size = colx(s, "column_size_bytes"), fc->st_values = colx(s, "value_count");
    fc->st_nulls = colx(s, "null_count"), fc->st_min = colx(s, "min_value"), fc->st_max = colx(s, "max_value");
    fc->st_nan = colx(s, "contains_nan");
    if ((d && !(fc->dfrow = calloc(d->ncols, sizeof *fc->dfrow))) || (p && !(fc->pvrow = calloc(p->ncols, sizeof *fc->pvrow))) ||
        (s && !(fc->strow = calloc(s->ncols, sizeof *fc->strow))))
        return mr_err(MORAINE_ENOMEM, "out of memory");
    return 0;
}

/* Whether every text column add_file stores is in the catalog, so that
 * applying a verb to a checking model checked every text it stores. */
static int texts_all_checked(const filecols *fc)
{
    return fc->df_path >= 0 && fc->df_format >= 0 && fc->pv_value >= 0 && fc->st_min >= 0 && fc->st_max >= 0;
}

/* Sets cell @i of scratch row @row (i < 0: the catalog lacks the column). */
static void cell_int(moraine_value *row, int i, int64_t v)
{
    if (i >= 0) row[i] = (moraine_value){.type = MORAINE_INT, .i = v};
}

/* A text cell pointing at @s (no copy: the row is emitted before @s goes),
 * checked as mv_orow_set_str checks it unless @checked (the same bytes
 * passed that check when the verb was recorded); NULL: NULL. @row NULL:
 * only the check. */
static int cell_str(const moraine_relation_info *r, moraine_value *row, int i, const char *s, int checked)
{
    if (i < 0) return 0;
    if (!s) {
        if (row) row[i] = (moraine_value){.type = MORAINE_NULL};
        return 0;
    }
    size_t len = 0;
    int rc = 0;
    if (checked) len = strlen(s);
    else rc = mv_text_check(r->colnames[i], s, &len);
    if (!rc && row) row[i] = (moraine_value){.type = MORAINE_STR, .s = s, .len = len};
    return rc;
}

/* A fresh scratch row of @r: every cell NULL, begin_snapshot the snapshot being written. */
static void scratch_row(model *m, const moraine_relation_info *r, moraine_value *row, int begin)
{
    for (size_t i = 0; i < r->ncols; i++) row[i] = (moraine_value){.type = MORAINE_NULL};
    cell_int(row, begin, m->snap);
}

static int emit_scratch(model *m, const moraine_relation_info *r, const moraine_value *row)
{
    return m->stx ? moraine_txn_insert(m->stx, r->name, row, r->ncols, -1) : 0;
}

/* The column ids named by @f's stats into fc->scids (the last file's, when it
 * named the same columns: the same lookup would give the same ids). */
static int stats_columns(tstate *t, filecols *fc, const moraine_data_file *f)
{
    if (f->nstats > fc->capsnames) {
        size_t cap = f->nstats < 8 ? 8 : f->nstats;
        const char **n = realloc(fc->snames, cap * sizeof *n);
        if (n) fc->snames = n;
        int64_t *c = n ? realloc(fc->scids, cap * sizeof *c) : NULL;
        if (c) fc->scids = c;
        const char **ty = c ? realloc(fc->stypes, cap * sizeof *ty) : NULL;
        if (ty) fc->stypes = ty;
        mr_statkind *k = ty ? realloc(fc->skinds, cap * sizeof *k) : NULL;
        if (k) fc->skinds = k;
        mr_statkey *k1 = k ? realloc(fc->kmin, cap * sizeof *k1) : NULL;
        if (k1) fc->kmin = k1;
        mr_statkey *k2 = k1 ? realloc(fc->kmax, cap * sizeof *k2) : NULL;
        if (k2) fc->kmax = k2;
        if (!n || !c || !ty || !k || !k1 || !k2) return mr_err(MORAINE_ENOMEM, "out of memory");
        fc->capsnames = cap;
    }
    for (size_t i = 0; i < f->nstats; i++) {
        const char *col = f->stats[i].column;
        if (col && i < fc->nsnames && fc->snames[i] && strcmp(fc->snames[i], col) == 0) continue;
        int ci = mv_find_column(t, col);
        if (ci < 0) {
            fc->nsnames = 0;
            return mr_err(MORAINE_ENOTFOUND, "data file %s: statistics name column \"%s\", which table \"%s\" does not have", f->path,
                          col ? col : "", mv_orow_str(&t->row, "table_name"));
        }
        fc->snames[i] = col;
        fc->scids[i] = mv_orow_int(&t->cols[ci], "column_id", -1);
        fc->stypes[i] = mv_orow_str(&t->cols[ci], "column_type");
        int rk = mr_stat_kind(fc->stypes[i], &fc->skinds[i]);
        if (rk) {
            fc->nsnames = 0;
            return rk;
        }
        if (i >= fc->nsnames) fc->nsnames = i + 1;
    }
    if (fc->nsnames > f->nstats) fc->nsnames = f->nstats;
    return 0;
}

/* The ducklake_data_file row of added file @a of @t into scratch row
 * fc->dfrow (its text cells point at the file's strings; @checked: see
 * cell_str). The one builder of the row: add_file inserts it, mv_added_row
 * rebuilds it for drop_table. */
static int file_row(model *m, tstate *t, filecols *fc, const added_file *a, int checked)
{
    const moraine_relation_info *r = fc->df;
    const moraine_data_file *f = a->f;
    moraine_value *d = fc->dfrow;
    scratch_row(m, r, d, fc->df_begin);
    cell_int(d, fc->df_id, a->id);
    cell_int(d, fc->df_table, t->table_id);
    int rc = cell_str(r, d, fc->df_path, f->path, checked);
    if (fc->df_relative >= 0) d[fc->df_relative] = (moraine_value){.type = MORAINE_BOOL, .i = !f->path_is_absolute};
    if (!rc) rc = cell_str(r, d, fc->df_format, f->file_format ? f->file_format : "parquet", checked);
    cell_int(d, fc->df_records, f->record_count);
    cell_int(d, fc->df_size, f->file_size_bytes);
    if (f->footer_size != INT64_MIN) cell_int(d, fc->df_footer, f->footer_size);
    if (a->row_ids) cell_int(d, fc->df_row_id, a->row_id_start);
    if (a->has_pid) cell_int(d, fc->df_pid, a->partition_id);
    if (f->row_group_count > 0) cell_int(d, fc->df_groups, f->row_group_count);
    return rc;
}

int mv_added_row(model *m, tstate *t, const added_file *a, orow *out)
{
    filecols fc = {0};
    const moraine_relation_info *dr;
    int rc = filecols_resolve(m, &fc);
    if (!rc && !fc.df) rc = mv_need_rel(m, "ducklake_data_file", &dr);
    if (!rc) rc = file_row(m, t, &fc, a, 1); /* its texts were checked when it was added */
    if (!rc) rc = mv_orow_from(out, fc.df, fc.dfrow);
    filecols_free(&fc);
    return rc;
}

/* Appends @a to t->added (growing by doubling). ENOMEM. */
static int push_added(tstate *t, const added_file *a)
{
    if (t->nadded == t->capadded) {
        size_t cap = t->capadded ? t->capadded * 2 : 16;
        added_file *p = realloc(t->added, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        t->added = p;
        t->capadded = cap;
    }
    t->added[t->nadded++] = *a;
    return 0;
}

/* Inserts one data file with its partition values and stats (a checking
 * model: checks them only). @checked: the file's texts passed their checks
 * when the verb was recorded (@values_checked: the partition values too).
 * The file's column statistics are parsed (checked) and merged into the set
 * *set of *nset (verbs_colstats.c); @set NULL: the commit takes the verb's
 * own merge of its files (mv_cstats_sum_usable), whose min/max a checking
 * model parsed at the same snapshot, and they are neither parsed nor merged
 * here. */
static int add_file(model *m, tstate *t, filecols *fc, const moraine_data_file *f, int64_t partition_id, int has_pid, const char *const *values,
                    size_t nvalues, int checked, int values_checked, int row_ids, int64_t *id_out, mv_cstat **set, size_t *nset)
{
    if (!f->path || !*f->path) return mr_err(MORAINE_EINVAL, "a data file needs a path");
    if (f->record_count < 0) return mr_err(MORAINE_EINVAL, "data file %s: record_count is negative", f->path);
    if (f->file_size_bytes < 0)
        return mr_err(MORAINE_EINVAL, "data file %s: file_size_bytes %lld is negative", f->path, (long long)f->file_size_bytes);
    if (f->footer_size < 0 && f->footer_size != INT64_MIN)
        return mr_err(MORAINE_EINVAL, "data file %s: footer_size %lld is negative", f->path, (long long)f->footer_size);
    if (f->row_group_count < 0)
        return mr_err(MORAINE_EINVAL, "data file %s: row_group_count %lld is negative", f->path, (long long)f->row_group_count);
    /* the table's stats (ducklake_table_stats) must stay within int64 */
    int64_t sum;
    if (__builtin_add_overflow(t->record_count, f->record_count, &sum) ||
        (row_ids && __builtin_add_overflow(t->next_row_id, f->record_count, &sum)))
        return mr_err(MORAINE_EINVAL, "data file %s: record_count %lld would take table %lld's record_count or next_row_id past 2^63-1",
                      f->path, (long long)f->record_count, (long long)t->table_id);
    if (__builtin_add_overflow(t->file_size_bytes, f->file_size_bytes, &sum))
        return mr_err(MORAINE_EINVAL, "data file %s: file_size_bytes %lld would take table %lld's file_size_bytes past 2^63-1", f->path,
                      (long long)f->file_size_bytes, (long long)t->table_id);
    for (size_t i = 0; i < f->nstats; i++) {
        const moraine_column_stats *st = &f->stats[i];
        const char *bad = st->column_size_bytes < 0 && st->column_size_bytes != INT64_MIN ? "column_size_bytes"
                          : st->value_count < 0 && st->value_count != INT64_MIN       ? "value_count"
                          : st->null_count < 0 && st->null_count != INT64_MIN         ? "null_count"
                                                                                      : NULL;
        if (bad) return mr_err(MORAINE_EINVAL, "data file %s: statistics of column \"%s\": %s is negative", f->path, st->column ? st->column : "", bad);
    }
    int rc = filecols_resolve(m, fc);
    if (!rc) rc = stats_columns(t, fc, f);
    if (!rc && set) rc = mv_cstats_parse(t, f, fc->stypes, fc->skinds, fc->kmin, fc->kmax);
    if (rc) return rc;
    const moraine_relation_info *dr;
    if (!fc->df) return mv_need_rel(m, "ducklake_data_file", &dr);
    int64_t id = m->next_file_id++;
    added_file a = {.f = f, .id = fc->df_id >= 0 ? id : -1, .partition_id = partition_id, .has_pid = has_pid && fc->df_pid >= 0,
                    .row_id_start = t->next_row_id, .row_ids = row_ids};
    if (row_ids) t->next_row_id += f->record_count;
    t->record_count += f->record_count;
    t->file_size_bytes += f->file_size_bytes;
    rc = file_row(m, t, fc, &a, checked);
    if (!rc) rc = emit_scratch(m, fc->df, fc->dfrow);
    for (size_t i = 0; !rc && i < nvalues; i++) {
        const moraine_relation_info *r = fc->pv;
        if (!r) {
            rc = mv_need_rel(m, "ducklake_file_partition_value", &r);
            break;
        }
        if (!m->stx) { /* checking: only the text */
            rc = cell_str(r, NULL, fc->pv_value, values[i], 0);
            continue;
        }
        moraine_value *pv = fc->pvrow;
        scratch_row(m, r, pv, fc->pv_begin);
        cell_int(pv, fc->pv_id, id);
        cell_int(pv, fc->pv_table, t->table_id);
        cell_int(pv, fc->pv_index, (int64_t)i);
        rc = cell_str(r, pv, fc->pv_value, values[i], values_checked);
        if (!rc) rc = emit_scratch(m, r, pv);
    }
    for (size_t i = 0; !rc && i < f->nstats; i++) {
        const moraine_column_stats *s = &f->stats[i];
        const moraine_relation_info *r = fc->st;
        if (!r) {
            rc = mv_need_rel(m, "ducklake_file_column_stats", &r);
            break;
        }
        if (!m->stx) { /* checking: only the texts */
            rc = cell_str(r, NULL, fc->st_min, s->min_value, 0);
            if (!rc) rc = cell_str(r, NULL, fc->st_max, s->max_value, 0);
            continue;
        }
        moraine_value *st = fc->strow;
        scratch_row(m, r, st, fc->st_begin);
        cell_int(st, fc->st_id, id);
        cell_int(st, fc->st_table, t->table_id);
        cell_int(st, fc->st_column, fc->scids[i]);
        if (s->column_size_bytes != INT64_MIN) cell_int(st, fc->st_size, s->column_size_bytes);
        if (s->value_count != INT64_MIN) cell_int(st, fc->st_values, s->value_count);
        if (s->null_count != INT64_MIN) cell_int(st, fc->st_nulls, s->null_count);
        rc = cell_str(r, st, fc->st_min, s->min_value, checked);
        if (!rc) rc = cell_str(r, st, fc->st_max, s->max_value, checked);
        if (s->contains_nan >= 0 && fc->st_nan >= 0) st[fc->st_nan] = (moraine_value){.type = MORAINE_BOOL, .i = s->contains_nan != 0};
        if (!rc) rc = emit_scratch(m, r, st);
    }
    /* the table's column statistics (verbs_colstats.c) */
    if (!rc && set) rc = mv_cstats_add_file(set, nset, f, fc->scids, fc->stypes, fc->skinds, fc->kmin, fc->kmax);
    /* keep it: later verbs of this transaction see it (drop_table ends it) */
    if (!rc) rc = push_added(t, &a);
    if (id_out) *id_out = id;
    return rc;
}

/* Where verb @v's files merge their column statistics (add_file's @set):
 * a checking model merges them into the verb (v->cs, made anew); the commit
 * into the table's set *tset of *ntset, or nowhere when the verb's merge
 * stands for them (mv_cstats_sum_usable; then 1 is returned and sum_done
 * appends it). */
static int sum_target(model *m, verb *v, mv_cstat **tset, size_t *ntset, mv_cstat ***set, size_t **nset)
{
    if (!m->stx) {
        mv_cstats_sum_free(v);
        *set = &v->cs, *nset = &v->ncs;
        return 0;
    }
    if (mv_cstats_sum_usable(m, v, *tset, *ntset)) {
        *set = NULL, *nset = NULL;
        return 1;
    }
    *set = tset, *nset = ntset;
    return 0;
}

/* After the verb's files: a checking model marks the verb's merge made at
 * its snapshot; the commit appends it to the table's set when @sum. ENOMEM. */
static int sum_done(model *m, verb *v, int sum, mv_cstat **tset, size_t *ntset)
{
    if (!m->stx) {
        v->cs_made = 1;
        v->cs_base = m->base;
        return 0;
    }
    return sum ? mv_cstats_add_sum(tset, ntset, v) : 0;
}

/* Each file's partition values against the live spec's keys of @t: the
 * transform (mv_transform_parse) and the key column's type
 * (mv_partition_value_check). EINVAL naming the file, the key and the value. */
static int check_partition_values(tstate *t, const verb *v)
{
    for (size_t k = 0; k < t->npcols; k++) {
        const orow *pc = NULL;
        for (size_t j = 0; j < t->npcols && !pc; j++)
            if (mv_orow_int(&t->pcols[j], "partition_key_index", -1) == (int64_t)k) pc = &t->pcols[j];
        if (!pc) return mr_err(MORAINE_ECORRUPT, "add_data_files: the live partition spec of \"%s\" has no key %zu", v->table, k);
        int64_t cid = mv_orow_int(pc, "column_id", -1);
        const char *type = NULL, *cname = NULL;
        for (size_t c = 0; c < t->ncols && !type; c++)
            if (mv_orow_int(&t->cols[c], "column_id", -2) == cid) {
                type = mv_orow_str(&t->cols[c], "column_type");
                cname = mv_orow_str(&t->cols[c], "column_name");
            }
        mv_transform tr;
        /* a spec DuckLake could not load (an imported catalog's) takes no files; the message's
         * context (each message is "CONTEXT: ...") is written only then */
        int rc = mv_transform_parse(mv_orow_str(pc, "transform"), &tr, "");
        if (rc) {
            char ctx[256];
            snprintf(ctx, sizeof ctx, "add_data_files: the live partition spec of \"%s\", key %zu (%s)", v->table, k, cname ? cname : "?");
            return mr_err(rc, "%s%s", ctx, moraine_errmsg());
        }
        for (size_t i = 0; i < v->nfiles; i++) {
            const moraine_data_file *f = &v->files[i];
            if ((rc = mv_partition_value_check(&tr, type, f->partition_values[k])))
                return mr_err(rc, "add_data_files: file %zu of %zu (%s), key %zu (%s of %s): %s", i + 1, v->nfiles, f->path ? f->path : "", k,
                              mv_orow_str(pc, "transform"), cname ? cname : "?", moraine_errmsg());
        }
    }
    return 0;
}

int mv_do_add_files(model *m, verb *v)
{
    tstate *t;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    if ((rc = mv_cstats_load(m, t))) return rc;
    int has_pid = t->part.rel && t->npcols > 0;
    int64_t pid = has_pid ? mv_orow_int(&t->part, "partition_id", -1) : 0;
    size_t want = has_pid ? t->npcols : 0;
    for (size_t i = 0; i < v->nfiles; i++)
        if (v->files[i].npartition_values != want)
            return mr_err(MORAINE_EINVAL, "add_data_files: file %zu of %zu (%s) has %zu partition values; the live partition spec of \"%s\" has %zu keys",
                          i + 1, v->nfiles, v->files[i].path ? v->files[i].path : "", v->files[i].npartition_values, v->table, want);
    filecols fc = {0};
    int checked = m->stx && v->texts_checked;
    mv_cstat **set;
    size_t *nset;
    int sum = sum_target(m, v, &t->pend, &t->npend, &set, &nset);
    if (!checked && want) rc = check_partition_values(t, v);
    for (size_t i = 0; !rc && i < v->nfiles; i++) {
        int64_t id;
        rc = add_file(m, t, &fc, &v->files[i], pid, has_pid, v->files[i].partition_values, v->files[i].npartition_values, checked, checked, 1, &id,
                      set, nset);
        if (!rc && i == 0 && v->ids) v->ids[0] = id;
    }
    if (!rc) rc = sum_done(m, v, sum, &t->pend, &t->npend);
    if (!rc && !m->stx && v->nfiles) v->texts_checked = texts_all_checked(&fc);
    filecols_free(&fc);
    if (!rc && v->nfiles) t->inserted = 1;
    return rc;
}

/* The live data files (and their live delete files) of @t with the given ids. */
typedef struct {
    orow file;
    orow del;
    char **values;
    size_t nvalues;
} live_file;

static void live_files_free(live_file *lf, size_t n)
{
    for (size_t i = 0; lf && i < n; i++) {
        if (lf[i].file.rel) mv_orow_free(&lf[i].file);
        if (lf[i].del.rel) mv_orow_free(&lf[i].del);
        for (size_t k = 0; k < lf[i].nvalues; k++) free(lf[i].values[k]);
        free(lf[i].values);
    }
    free(lf);
}

static int live_files(model *m, tstate *t, const int64_t *ids, size_t n, live_file **out)
{
    live_file *lf = calloc(n ? n : 1, sizeof *lf);
    if (!lf) return mr_err(MORAINE_ENOMEM, "out of memory");
    moraine_cursor *c = NULL;
    moraine_row row;
    int rc = moraine_scan_open(m->rd, "ducklake_data_file", t->table_id, m->base, &c);
    while (!rc) {
        int nx = moraine_cursor_next(c, &row);
        if (nx <= 0) {
            rc = nx;
            break;
        }
        int ic = moraine_column_index(row.rel, "data_file_id");
        for (size_t i = 0; !rc && i < n; i++) {
            if (row.vals[ic].type != MORAINE_INT || row.vals[ic].i != ids[i] || lf[i].file.rel) continue;
            if ((rc = mv_orow_from(&lf[i].file, row.rel, row.vals))) break;
            moraine_children it;
            moraine_row ch;
            moraine_row_children(m->rd, &row, &it);
            int r2;
            while ((r2 = moraine_children_next(&it, &ch)) == 1) {
                if (strcmp(ch.rel->name, "ducklake_file_partition_value") != 0) continue;
                int iv = moraine_column_index(ch.rel, "partition_value");
                char **vs = realloc(lf[i].values, (lf[i].nvalues + 1) * sizeof *vs);
                if (!vs) {
                    r2 = mr_err(MORAINE_ENOMEM, "out of memory");
                    break;
                }
                lf[i].values = vs;
                vs[lf[i].nvalues++] = ch.vals[iv].type == MORAINE_STR ? strndup(ch.vals[iv].s, ch.vals[iv].len) : NULL;
            }
            moraine_children_free(&it);
            if (r2 < 0) rc = r2;
        }
    }
    if (c) moraine_cursor_close(c);
    if (rc < 0) {
        live_files_free(lf, n);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; !lf[i].file.rel && a < t->nadded; a++)
            if (t->added[a].id == ids[i] && !t->added[a].ended) {
                live_files_free(lf, n);
                return mr_err(MORAINE_EINVAL, "data file %lld was added by this transaction: delete or rewrite it in a later one", (long long)ids[i]);
            }
        if (lf[i].file.rel && mv_id_in(t->ended, t->nended, ids[i])) {
            live_files_free(lf, n);
            return mr_err(MORAINE_ENOTFOUND, "data file %lld is no longer live: this transaction ended it", (long long)ids[i]);
        }
        if (!lf[i].file.rel) {
            live_files_free(lf, n);
            return mr_err(MORAINE_ENOTFOUND, "data file %lld is not a live file of table \"%s\"", (long long)ids[i], mv_orow_str(&t->row, "table_name"));
        }
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i]) {
                live_files_free(lf, n);
                return mr_err(MORAINE_EINVAL, "data file %lld is named twice", (long long)ids[i]);
            }
    }
    if (mv_rel(m, "ducklake_delete_file")) {
        c = NULL;
        rc = moraine_scan_open(m->rd, "ducklake_delete_file", t->table_id, m->base, &c);
        while (!rc) {
            int nx = moraine_cursor_next(c, &row);
            if (nx <= 0) {
                rc = nx;
                break;
            }
            int id = moraine_column_index(row.rel, "data_file_id"), idd = moraine_column_index(row.rel, "delete_file_id");
            if (idd >= 0 && row.vals[idd].type == MORAINE_INT && mv_id_in(t->ended_dels, t->nended_dels, row.vals[idd].i)) continue;
            for (size_t i = 0; !rc && i < n; i++)
                if (row.vals[id].type == MORAINE_INT && row.vals[id].i == ids[i] && !lf[i].del.rel) rc = mv_orow_from(&lf[i].del, row.rel, row.vals);
        }
        /* a delete file this transaction added replaces the base's */
        for (size_t i = 0; !rc && i < n; i++)
            for (size_t a = 0; !rc && a < t->nadded_dels; a++)
                if (mv_orow_int(&t->added_dels[a], "data_file_id", -1) == ids[i]) {
                    if (lf[i].del.rel) mv_orow_free(&lf[i].del);
                    rc = mv_orow_from(&lf[i].del, t->added_dels[a].rel, t->added_dels[a].v);
                }
        if (c) moraine_cursor_close(c);
        if (rc < 0) {
            live_files_free(lf, n);
            return rc;
        }
    }
    *out = lf;
    return 0;
}

/* Ends a file's live delete file @del, whether the base's or one this transaction added. */
static int end_delete_file(model *m, tstate *t, orow *del)
{
    int64_t id = mv_orow_int(del, "delete_file_id", -1);
    for (size_t a = 0; a < t->nadded_dels; a++) {
        if (mv_orow_int(&t->added_dels[a], "delete_file_id", -2) == id) {
            int rc = mv_end_row(m, &t->added_dels[a]);
            mv_orow_free(&t->added_dels[a]);
            t->added_dels[a] = t->added_dels[--t->nadded_dels];
            return rc;
        }
    }
    int rc = mv_end_row(m, del);
    return rc ? rc : mv_id_push(&t->ended_dels, &t->nended_dels, id);
}

static int note_deleted(tstate *t, int64_t id)
{
    int64_t *p = realloc(t->deleted_files, (t->ndeleted_files + 1) * sizeof *p);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    t->deleted_files = p;
    p[t->ndeleted_files++] = id;
    return 0;
}

int mv_do_add_deletes(model *m, verb *v)
{
    tstate *t;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    int64_t *ids = calloc(v->ndels ? v->ndels : 1, sizeof *ids);
    if (!ids) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; i < v->ndels; i++) ids[i] = v->dels[i].data_file_id;
    live_file *lf = NULL;
    rc = live_files(m, t, ids, v->ndels, &lf);
    free(ids);
    if (rc) return rc;
    for (size_t i = 0; !rc && i < v->ndels; i++) {
        const moraine_delete_file *d = &v->dels[i];
        if (!d->path || !*d->path) rc = mr_err(MORAINE_EINVAL, "a delete file needs a path");
        else if (d->delete_count < 0) rc = mr_err(MORAINE_EINVAL, "delete file %s: delete_count %lld is negative", d->path, (long long)d->delete_count);
        else if (d->file_size_bytes < 0)
            rc = mr_err(MORAINE_EINVAL, "delete file %s: file_size_bytes %lld is negative", d->path, (long long)d->file_size_bytes);
        else if (d->footer_size < 0 && d->footer_size != INT64_MIN)
            rc = mr_err(MORAINE_EINVAL, "delete file %s: footer_size %lld is negative", d->path, (long long)d->footer_size);
        else if (d->row_group_count < 0)
            rc = mr_err(MORAINE_EINVAL, "delete file %s: row_group_count %lld is negative", d->path, (long long)d->row_group_count);
        if (!rc && lf[i].del.rel) rc = end_delete_file(m, t, &lf[i].del); /* replaced by the new delete file */
        orow r = {0};
        if (!rc) rc = mv_new_row(m, "ducklake_delete_file", &r);
        if (!rc) {
            mv_orow_set_int(&r, "delete_file_id", m->next_file_id++);
            mv_orow_set_int(&r, "table_id", t->table_id);
            mv_orow_set_int(&r, "data_file_id", d->data_file_id);
            rc = mv_orow_set_str(&r, "path", d->path);
            mv_orow_set_bool(&r, "path_is_relative", 1);
            if (!rc) rc = mv_orow_set_str(&r, "format", d->format ? d->format : "parquet");
            mv_orow_set_int(&r, "delete_count", d->delete_count);
            mv_orow_set_int(&r, "file_size_bytes", d->file_size_bytes);
            mv_orow_set_int(&r, "footer_size", d->footer_size);
            if (d->row_group_count > 0) mv_orow_set_int(&r, "row_group_count", d->row_group_count);
            if (!rc) rc = mv_emit_insert(m, &r);
        }
        if (!rc) rc = mv_take_row(&t->added_dels, &t->nadded_dels, &r);
        if (r.v) mv_orow_free(&r);
        if (!rc) rc = note_deleted(t, d->data_file_id);
    }
    live_files_free(lf, v->ndels);
    if (!rc && v->ndels) t->deleted = 1;
    return rc;
}

int mv_do_delete_files(model *m, verb *v)
{
    tstate *t;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    live_file *lf = NULL;
    if ((rc = live_files(m, t, v->ids, v->nids, &lf))) return rc;
    if ((rc = mv_cstats_load(m, t))) {
        live_files_free(lf, v->nids);
        return rc;
    }
    for (size_t i = 0; !rc && i < v->nids; i++) {
        /* DuckLake: ending whole files takes their rows and bytes out of the table stats */
        t->record_count -= mv_orow_int(&lf[i].file, "record_count", 0);
        t->file_size_bytes -= mv_orow_int(&lf[i].file, "file_size_bytes", 0);
        t->stats_dirty = 1;
        /* DuckLake's DropFile: the table's column statistics are reset or deleted at commit (verbs_colstats.c) */
        t->dropped_any = 1;
        t->dropped_rows += mv_orow_int(&lf[i].file, "record_count", 0);
        rc = mv_end_row(m, &lf[i].file);
        if (!rc) rc = mv_id_push(&t->ended, &t->nended, v->ids[i]);
        if (!rc && lf[i].del.rel) rc = end_delete_file(m, t, &lf[i].del);
        if (!rc) rc = note_deleted(t, v->ids[i]);
    }
    live_files_free(lf, v->nids);
    if (!rc && v->nids) t->deleted = 1;
    return rc;
}

static int same_values(const live_file *a, const live_file *b)
{
    if (a->nvalues != b->nvalues) return 0;
    for (size_t i = 0; i < a->nvalues; i++) {
        if (!a->values[i] || !b->values[i]) {
            if (a->values[i] != b->values[i]) return 0;
        } else if (strcmp(a->values[i], b->values[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

int mv_do_rewrite(model *m, verb *v)
{
    tstate *t;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    if (v->nids == 0) return mr_err(MORAINE_EINVAL, "rewrite_files: no input files");
    live_file *lf = NULL;
    if ((rc = live_files(m, t, v->ids, v->nids, &lf))) return rc;
    int64_t pid = mv_orow_int(&lf[0].file, "partition_id", INT64_MIN);
    int has_pid = !mv_orow_is_null(&lf[0].file, "partition_id");
    for (size_t i = 1; !rc && i < v->nids; i++) {
        int hp = !mv_orow_is_null(&lf[i].file, "partition_id");
        if (hp != has_pid || (hp && mv_orow_int(&lf[i].file, "partition_id", INT64_MIN) != pid))
            rc = mr_err(MORAINE_EINVAL, "rewrite_files: data files %lld and %lld were written under different partition specs; a merge must not cross "
                        "partitions", (long long)v->ids[0], (long long)v->ids[i]);
        else if (!same_values(&lf[0], &lf[i]))
            rc = mr_err(MORAINE_EINVAL, "rewrite_files: data files %lld and %lld have different partition values; a merge must not cross partitions",
                        (long long)v->ids[0], (long long)v->ids[i]);
    }
    for (size_t i = 0; !rc && i < v->nfiles; i++) {
        const moraine_data_file *f = &v->files[i];
        if (f->npartition_values && f->npartition_values != lf[0].nvalues)
            rc = mr_err(MORAINE_EINVAL, "rewrite_files: output %zu has %zu partition values, the inputs' spec has %zu", i, f->npartition_values,
                        lf[0].nvalues);
        /* a rewrite keeps its inputs' partition (RFC 0013: a merge never crosses partitions) */
        for (size_t k = 0; !rc && k < f->npartition_values; k++) {
            const char *a = f->partition_values[k], *b = lf[0].values[k];
            if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
                rc = mr_err(MORAINE_EINVAL, "rewrite_files: output %zu (%s) has partition value %zu %s%s%s, its inputs %s%s%s; a rewrite keeps its "
                            "inputs' partition", i, f->path ? f->path : "", k, a ? "\"" : "", a ? a : "NULL", a ? "\"" : "", b ? "\"" : "",
                            b ? b : "NULL", b ? "\"" : "");
        }
    }
    if (!rc) rc = mv_cstats_load(m, t);
    for (size_t i = 0; !rc && i < v->nids; i++) {
        /* DuckLake recomputes the table stats: the inputs' rows and bytes leave, the outputs' come in */
        t->record_count -= mv_orow_int(&lf[i].file, "record_count", 0);
        t->file_size_bytes -= mv_orow_int(&lf[i].file, "file_size_bytes", 0);
        rc = mv_end_row(m, &lf[i].file);
        if (!rc) rc = mv_id_push(&t->ended, &t->nended, v->ids[i]);
        if (!rc) rc = mv_id_push(&t->rw_inputs, &t->nrw_inputs, v->ids[i]);
        if (!rc && lf[i].del.rel) rc = end_delete_file(m, t, &lf[i].del);
    }
    filecols fc = {0};
    int checked = m->stx && v->texts_checked;
    mv_cstat **set = NULL;
    size_t *nset = NULL;
    int sum = rc ? 0 : sum_target(m, v, &t->rw_pend, &t->nrw_pend, &set, &nset);
    for (size_t i = 0; !rc && i < v->nfiles; i++) {
        const moraine_data_file *f = &v->files[i];
        /* outputs without partition values take the inputs' (read from the store, checked here) */
        const char *const *vals = f->npartition_values ? f->partition_values : (const char *const *)lf[0].values;
        /* DuckLake: compaction outputs carry no row_id_start */
        rc = add_file(m, t, &fc, f, pid, has_pid, vals, lf[0].nvalues, checked, checked && f->npartition_values, 0, NULL, set, nset);
    }
    if (!rc) rc = sum_done(m, v, sum, &t->rw_pend, &t->nrw_pend);
    if (!rc && !m->stx && v->nfiles) v->texts_checked = texts_all_checked(&fc);
    filecols_free(&fc);
    live_files_free(lf, v->nids);
    if (!rc) t->compacted = 1;
    return rc;
}
