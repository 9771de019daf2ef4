/*
 * verbs_tx.c — the verb transaction (moraine_tx, docs/verbs.md): verbs
 * recorded with copies of their arguments, each checked when it is called by
 * applying it to the checking model (apply dispatches a verb to its family:
 * verbs_table.c, verbs_column.c, verbs_spec.c, verbs_files.c), and the
 * public moraine_tx_* calls that record them. The commit is verbs_commit.c.
 */
#include "verbs_internal.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- verbs, recorded ---- */

static void *own(verb *v, void *p)
{
    if (!p) return NULL;
    if (v->nowned == v->capowned) {
        size_t cap = v->capowned ? v->capowned * 2 : 16;
        void **o = realloc(v->owned, cap * sizeof *o);
        if (!o) {
            free(p);
            return NULL;
        }
        v->owned = o;
        v->capowned = cap;
    }
    v->owned[v->nowned++] = p;
    return p;
}

/* Copies a string into the verb; *ok becomes 0 on allocation failure. */
static char *vdup(verb *v, const char *s, int *ok)
{
    if (!s) return NULL;
    char *c = own(v, strdup(s));
    if (!c) *ok = 0;
    return c;
}

static void *vcopy(verb *v, const void *src, size_t n, size_t size, int *ok)
{
    if (!n) return NULL;
    void *p = own(v, malloc(n * size));
    if (!p) {
        *ok = 0;
        return NULL;
    }
    memcpy(p, src, n * size);
    return p;
}

static void verb_free(verb *v)
{
    mv_cstats_sum_free(v);
    for (size_t i = 0; i < v->nowned; i++) free(v->owned[i]);
    free(v->owned);
    memset(v, 0, sizeof *v);
}

/* Sizes of a copy's two regions: arrays (each rounded up to the alignment of
 * any object) first, then strings. 0 on overflow. */
static int add_size(size_t *total, size_t n)
{
    if (n > SIZE_MAX - *total) return 0;
    *total += n;
    return 1;
}

static size_t aligned(size_t n)
{
    const size_t a = _Alignof(max_align_t);
    return n % a ? n + (a - n % a) : n;
}

static int add_array(size_t *arrays, size_t n, size_t size)
{
    return n <= (SIZE_MAX / 2) / size && add_size(arrays, aligned(n * size));
}

static int add_text(size_t *texts, const char *s) { return !s || add_size(texts, strlen(s) + 1); }

/* An array of @n bytes from the arrays region (stays aligned). */
static void *take_array(uint8_t **pa, size_t n)
{
    void *r = *pa;
    *pa += aligned(n);
    return r;
}

/* A copy of @s in the strings region (NULL: NULL). */
static const char *take_text(uint8_t **ps, const char *s)
{
    if (!s) return NULL;
    size_t len = strlen(s) + 1;
    char *c = (char *)*ps;
    memcpy(c, s, len);
    *ps += len;
    return c;
}

/* Copies the files and every array and string they point to into one block
 * the verb owns (a 10k-file verb holds some 200k strings): the arrays first,
 * aligned, then the strings. */
static int copy_files(verb *v, const moraine_data_file *files, size_t n, int *ok)
{
    v->files = NULL;
    v->nfiles = n;
    if (!n || !*ok) return 0;
    size_t arrays = 0, texts = 0;
    int fits = add_array(&arrays, n, sizeof *files);
    for (size_t i = 0; fits && i < n; i++) {
        const moraine_data_file *f = &files[i];
        fits = add_text(&texts, f->path) && add_text(&texts, f->file_format) && add_array(&arrays, f->npartition_values, sizeof(char *)) &&
               add_array(&arrays, f->nstats, sizeof *f->stats);
        for (size_t k = 0; fits && k < f->npartition_values; k++) fits = add_text(&texts, f->partition_values[k]);
        for (size_t k = 0; fits && k < f->nstats; k++)
            fits = add_text(&texts, f->stats[k].column) && add_text(&texts, f->stats[k].min_value) && add_text(&texts, f->stats[k].max_value);
    }
    size_t total = arrays;
    if (fits) fits = add_size(&total, texts);
    uint8_t *block = fits ? own(v, malloc(total ? total : 1)) : NULL;
    if (!block) {
        *ok = 0;
        return 0;
    }
    uint8_t *pa = block, *ps = block + arrays;
    v->files = take_array(&pa, n * sizeof *files);
    memcpy(v->files, files, n * sizeof *files);
    for (size_t i = 0; i < n; i++) {
        moraine_data_file *f = &v->files[i];
        f->path = take_text(&ps, files[i].path);
        f->file_format = take_text(&ps, files[i].file_format);
        if (files[i].npartition_values) {
            const char **pv = take_array(&pa, files[i].npartition_values * sizeof(char *));
            for (size_t k = 0; k < files[i].npartition_values; k++) pv[k] = take_text(&ps, files[i].partition_values[k]);
            f->partition_values = pv;
        } else {
            f->partition_values = NULL;
        }
        if (files[i].nstats) {
            moraine_column_stats *st = take_array(&pa, files[i].nstats * sizeof *st);
            memcpy(st, files[i].stats, files[i].nstats * sizeof *st);
            for (size_t k = 0; k < files[i].nstats; k++) {
                st[k].column = take_text(&ps, files[i].stats[k].column);
                st[k].min_value = take_text(&ps, files[i].stats[k].min_value);
                st[k].max_value = take_text(&ps, files[i].stats[k].max_value);
            }
            f->stats = st;
        } else {
            f->stats = NULL;
        }
    }
    return 0;
}

int mv_apply(model *m, verb *v)
{
    switch (v->kind) {
    case V_CREATE_SCHEMA: return mv_do_create_schema(m, v);
    case V_CREATE_TABLE: return mv_do_create_table(m, v);
    case V_ADD_COLUMN: return mv_do_add_column(m, v);
    case V_RENAME_COLUMN: return mv_do_rename_column(m, v);
    case V_DROP_COLUMN: return mv_do_drop_column(m, v);
    case V_RENAME_TABLE: return mv_do_rename_table(m, v);
    case V_DROP_TABLE: return mv_do_drop_table(m, v);
    case V_SET_PARTITIONING: return mv_do_set_partitioning(m, v);
    case V_SET_SORTING:
    case V_CLEAR_SORTING: return mv_do_set_sorting(m, v);
    case V_ADD_FILES: return mv_do_add_files(m, v);
    case V_ADD_DELETES: return mv_do_add_deletes(m, v);
    case V_DELETE_FILES: return mv_do_delete_files(m, v);
    case V_REWRITE: return mv_do_rewrite(m, v);
    case V_ALTER_COLUMN: return mv_do_alter_column(m, v);
    case V_SET_COMMENT: return mv_do_set_comment(m, v);
    case V_CREATE_VIEW:
    case V_DROP_VIEW: return mv_do_view(m, v);
    case V_DROP_SCHEMA: return mv_do_drop_schema(m, v);
    case V_ADD_FIELD: return mv_do_add_field(m, v);
    case V_RENAME_FIELD: return mv_do_rename_field(m, v);
    case V_DROP_FIELD: return mv_do_drop_field(m, v);
    }
    return mr_err(MORAINE_EINVAL, "unknown verb");
}

/* ---- the transaction ---- */

int moraine_tx_begin(moraine_db *db, moraine_tx **out)
{
    if (!db || !out) return mr_err(MORAINE_EINVAL, "moraine_tx_begin: NULL argument");
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    moraine_tx *tx = calloc(1, sizeof *tx);
    if (!tx) return mr_err(MORAINE_ENOMEM, "out of memory");
    tx->db = db;
    /* what the verbs read is kept for the commit (tx->reads), starting from
     * what this handle's last commit left, when nothing was written since */
    int rc = mv_model_init_reads(&tx->m, db, NULL, &tx->reads);
    if (rc) {
        mv_model_free(&tx->m);
        mv_reads_free(&tx->reads);
        free(tx);
        return rc;
    }
    /* the checking model does not hold its read open: reads are per verb */
    moraine_read_end(tx->m.rd);
    tx->m.rd = NULL;
    *out = tx;
    return 0;
}

int64_t moraine_tx_base(const moraine_tx *tx) { return tx->m.base; }

int moraine_tx_set_info(moraine_tx *tx, const char *author, const char *message, const char *extra_info)
{
    free(tx->author);
    free(tx->message);
    free(tx->extra);
    tx->author = author ? strdup(author) : NULL;
    tx->message = message ? strdup(message) : NULL;
    tx->extra = extra_info ? strdup(extra_info) : NULL;
    tx->has_info = 1;
    if ((author && !tx->author) || (message && !tx->message) || (extra_info && !tx->extra)) return mr_err(MORAINE_ENOMEM, "out of memory");
    return 0;
}

/* Checks a verb against the checking model (reading at the base) and keeps
 * it when it applies; a verb that fails leaves the model as it was only for
 * the checks done before any change, so the model is rebuilt on failure. */
static int record(moraine_tx *tx, verb *v)
{
    moraine_read *rd;
    int rc = moraine_read_begin(tx->db, &rd);
    if (rc) {
        verb_free(v);
        return rc;
    }
    tx->m.rd = rd;
    rc = mv_apply(&tx->m, v);
    if (!rc && (v->kind == V_ADD_FILES || v->kind == V_ADD_DELETES || v->kind == V_REWRITE)) {
        tstate *t;
        v->tkey = mv_find_table(&tx->m, v->schema, v->table, &t) == 0 ? t->table_id : INT64_MAX;
    }
    moraine_read_end(rd);
    tx->m.rd = NULL;
    if (rc) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", moraine_errmsg());
        verb_free(v);
        /* rebuild the model from the base and the verbs kept so far */
        int64_t base = tx->m.base;
        mv_model_free(&tx->m);
        int rc2 = mv_model_init_at(&tx->m, tx->db, NULL, base);
        tx->m.reads = &tx->reads;
        for (size_t i = 0; !rc2 && i < tx->nverbs; i++) rc2 = mv_apply(&tx->m, &tx->verbs[i]);
        if (tx->m.rd) {
            moraine_read_end(tx->m.rd);
            tx->m.rd = NULL;
        }
        return mr_err(rc, "%s", msg);
    }
    verb *p = realloc(tx->verbs, (tx->nverbs + 1) * sizeof *p);
    if (!p) {
        verb_free(v);
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    tx->verbs = p;
    tx->verbs[tx->nverbs++] = *v;
    return 0;
}

/* Records a verb whose first allocated id (a table_id, a data_file_id) is
 * reported back through @out (may be NULL) when the verb is kept. */
static int record_with_id(moraine_tx *tx, verb *v, int ok, int64_t *out)
{
    int64_t id = -1;
    v->ids = &id;
    if (!ok) {
        verb_free(v);
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    int rc = record(tx, v);
    if (!rc) tx->verbs[tx->nverbs - 1].ids = NULL;
    if (!rc && out) *out = id;
    return rc;
}

#define VERB_BEGIN(k)                                                                                                                      \
    if (!tx) return mr_err(MORAINE_EINVAL, "NULL transaction");                                                                            \
    verb v = {0};                                                                                                                           \
    int ok = 1;                                                                                                                             \
    v.kind = (k);                                                                                                                           \
    v.schema = vdup(&v, schema, &ok);                                                                                                       \
    v.table = vdup(&v, table, &ok)

#define VERB_END()                                                                                                                         \
    if (!ok) {                                                                                                                              \
        verb_free(&v);                                                                                                                      \
        return mr_err(MORAINE_ENOMEM, "out of memory");                                                                                    \
    }                                                                                                                                       \
    return record(tx, &v)

int moraine_tx_create_schema(moraine_tx *tx, const char *name)
{
    const char *schema = NULL, *table = NULL;
    VERB_BEGIN(V_CREATE_SCHEMA);
    v.a = vdup(&v, name, &ok);
    VERB_END();
}

static int copy_cols(verb *v, const moraine_column_def *cols, size_t n, int *ok)
{
    v->cols = vcopy(v, cols, n, sizeof *cols, ok);
    v->ncols = n;
    for (size_t i = 0; *ok && i < n; i++) {
        v->cols[i].name = vdup(v, cols[i].name, ok);
        v->cols[i].type = vdup(v, cols[i].type, ok);
        v->cols[i].default_value = vdup(v, cols[i].default_value, ok);
        v->cols[i].default_value_type = vdup(v, cols[i].default_value_type, ok);
    }
    return 0;
}

int moraine_tx_create_table(moraine_tx *tx, const char *schema, const char *table, const moraine_column_def *cols, size_t ncols, int64_t *table_id_out)
{
    if (ncols && !cols) return mr_err(MORAINE_EINVAL, "create_table: NULL columns");
    VERB_BEGIN(V_CREATE_TABLE);
    copy_cols(&v, cols, ncols, &ok);
    return record_with_id(tx, &v, ok, table_id_out);
}

int moraine_tx_add_column(moraine_tx *tx, const char *schema, const char *table, const moraine_column_def *col)
{
    if (!col) return mr_err(MORAINE_EINVAL, "add_column: NULL column");
    VERB_BEGIN(V_ADD_COLUMN);
    copy_cols(&v, col, 1, &ok);
    VERB_END();
}

static int copy_skeys(verb *v, const moraine_sort_key *keys, size_t n, int *ok)
{
    v->skeys = vcopy(v, keys, n, sizeof *keys, ok);
    v->nsk = n;
    for (size_t i = 0; *ok && i < n; i++) {
        v->skeys[i].expression = vdup(v, keys[i].expression, ok);
        v->skeys[i].dialect = vdup(v, keys[i].dialect, ok);
        v->skeys[i].sort_direction = vdup(v, keys[i].sort_direction, ok);
        v->skeys[i].null_order = vdup(v, keys[i].null_order, ok);
        if (keys[i].columns && keys[i].ncolumns) {
            /* left as given when NULL: mv_sort_key_check refuses a count without names */
            char **cs = vcopy(v, keys[i].columns, keys[i].ncolumns, sizeof *cs, ok);
            for (size_t j = 0; *ok && j < keys[i].ncolumns; j++) cs[j] = vdup(v, keys[i].columns[j], ok);
            v->skeys[i].columns = (const char *const *)cs;
        }
    }
    return 0;
}

int moraine_tx_rename_column(moraine_tx *tx, const char *schema, const char *table, const char *old_name, const char *new_name,
                             const moraine_sort_key *new_sort_keys, size_t n)
{
    VERB_BEGIN(V_RENAME_COLUMN);
    v.a = vdup(&v, old_name, &ok);
    v.b = vdup(&v, new_name, &ok);
    if (new_sort_keys) {
        v.has_skeys = 1;
        copy_skeys(&v, new_sort_keys, n, &ok);
    }
    VERB_END();
}

int moraine_tx_drop_column(moraine_tx *tx, const char *schema, const char *table, const char *name)
{
    VERB_BEGIN(V_DROP_COLUMN);
    v.a = vdup(&v, name, &ok);
    VERB_END();
}

/* Copies the @n names of @path into the verb; *ok becomes 0 on allocation
 * failure (the callers refuse a NULL path with n > 0 first). */
static void copy_path(verb *v, const char *const *path, size_t n, int *ok)
{
    v->path = vcopy(v, path, n, sizeof(char *), ok);
    v->npath = *ok ? n : 0;
    for (size_t i = 0; *ok && i < n; i++) v->path[i] = vdup(v, path[i], ok);
}

int moraine_tx_add_field(moraine_tx *tx, const char *schema, const char *table, const char *const *path, size_t npath,
                         const moraine_column_def *field)
{
    if (!field) return mr_err(MORAINE_EINVAL, "add_field: NULL field");
    if (npath && !path) return mr_err(MORAINE_EINVAL, "add_field: NULL path");
    VERB_BEGIN(V_ADD_FIELD);
    copy_path(&v, path, npath, &ok);
    copy_cols(&v, field, 1, &ok);
    VERB_END();
}

int moraine_tx_rename_field(moraine_tx *tx, const char *schema, const char *table, const char *const *path, size_t npath,
                            const char *new_name)
{
    if (npath && !path) return mr_err(MORAINE_EINVAL, "rename_field: NULL path");
    VERB_BEGIN(V_RENAME_FIELD);
    copy_path(&v, path, npath, &ok);
    v.b = vdup(&v, new_name, &ok);
    VERB_END();
}

int moraine_tx_drop_field(moraine_tx *tx, const char *schema, const char *table, const char *const *path, size_t npath)
{
    if (npath && !path) return mr_err(MORAINE_EINVAL, "drop_field: NULL path");
    VERB_BEGIN(V_DROP_FIELD);
    copy_path(&v, path, npath, &ok);
    VERB_END();
}

int moraine_tx_rename_table(moraine_tx *tx, const char *schema, const char *table, const char *new_name)
{
    VERB_BEGIN(V_RENAME_TABLE);
    v.a = vdup(&v, new_name, &ok);
    VERB_END();
}

int moraine_tx_drop_table(moraine_tx *tx, const char *schema, const char *table)
{
    VERB_BEGIN(V_DROP_TABLE);
    VERB_END();
}

int moraine_tx_alter_column(moraine_tx *tx, const char *schema, const char *table, const char *column, const moraine_column_alter *alt)
{
    if (!alt) return mr_err(MORAINE_EINVAL, "alter_column: NULL change");
    VERB_BEGIN(V_ALTER_COLUMN);
    v.a = vdup(&v, column, &ok);
    v.alt = *alt;
    v.alt.type = vdup(&v, alt->type, &ok);
    v.alt.default_value = vdup(&v, alt->default_value, &ok);
    v.alt.default_value_type = vdup(&v, alt->default_value_type, &ok);
    VERB_END();
}

int moraine_tx_set_comment(moraine_tx *tx, const char *schema, const char *table, const char *column, const char *comment)
{
    VERB_BEGIN(V_SET_COMMENT);
    v.a = vdup(&v, column, &ok);
    v.b = vdup(&v, comment, &ok);
    VERB_END();
}

int moraine_tx_create_view(moraine_tx *tx, const char *schema, const char *name, const char *sql)
{
    const char *table = name;
    VERB_BEGIN(V_CREATE_VIEW);
    v.a = vdup(&v, sql, &ok);
    VERB_END();
}

int moraine_tx_drop_schema(moraine_tx *tx, const char *name, int cascade)
{
    const char *schema = NULL, *table = NULL;
    VERB_BEGIN(V_DROP_SCHEMA);
    v.a = vdup(&v, name, &ok);
    v.cascade = cascade != 0;
    VERB_END();
}

int moraine_tx_drop_view(moraine_tx *tx, const char *schema, const char *name)
{
    const char *table = name;
    VERB_BEGIN(V_DROP_VIEW);
    VERB_END();
}

int moraine_tx_set_partitioning(moraine_tx *tx, const char *schema, const char *table, const moraine_partition_key *keys, size_t n)
{
    if (n && !keys) return mr_err(MORAINE_EINVAL, "set_partitioning: NULL keys");
    VERB_BEGIN(V_SET_PARTITIONING);
    v.pkeys = vcopy(&v, keys, n, sizeof *keys, &ok);
    v.npk = n;
    for (size_t i = 0; ok && i < n; i++) {
        v.pkeys[i].column = vdup(&v, keys[i].column, &ok);
        v.pkeys[i].transform = vdup(&v, keys[i].transform, &ok);
    }
    VERB_END();
}

int moraine_tx_clear_partitioning(moraine_tx *tx, const char *schema, const char *table)
{
    return moraine_tx_set_partitioning(tx, schema, table, NULL, 0);
}

int moraine_tx_set_sorting(moraine_tx *tx, const char *schema, const char *table, const moraine_sort_key *keys, size_t n)
{
    if (n && !keys) return mr_err(MORAINE_EINVAL, "set_sorting: NULL keys");
    VERB_BEGIN(V_SET_SORTING);
    copy_skeys(&v, keys, n, &ok);
    VERB_END();
}

int moraine_tx_clear_sorting(moraine_tx *tx, const char *schema, const char *table)
{
    VERB_BEGIN(V_CLEAR_SORTING);
    VERB_END();
}

int moraine_tx_add_data_files(moraine_tx *tx, const char *schema, const char *table, const moraine_data_file *files, size_t n, int64_t *first_id_out)
{
    if (n && !files) return mr_err(MORAINE_EINVAL, "add_data_files: NULL files");
    VERB_BEGIN(V_ADD_FILES);
    copy_files(&v, files, n, &ok);
    return record_with_id(tx, &v, ok, first_id_out);
}

int moraine_tx_add_delete_files(moraine_tx *tx, const char *schema, const char *table, const moraine_delete_file *files, size_t n)
{
    if (n && !files) return mr_err(MORAINE_EINVAL, "add_delete_files: NULL files");
    VERB_BEGIN(V_ADD_DELETES);
    v.dels = vcopy(&v, files, n, sizeof *files, &ok);
    v.ndels = n;
    for (size_t i = 0; ok && i < n; i++) {
        v.dels[i].path = vdup(&v, files[i].path, &ok);
        v.dels[i].format = vdup(&v, files[i].format, &ok);
    }
    VERB_END();
}

int moraine_tx_delete_files(moraine_tx *tx, const char *schema, const char *table, const int64_t *ids, size_t n)
{
    if (n && !ids) return mr_err(MORAINE_EINVAL, "delete_files: NULL ids");
    VERB_BEGIN(V_DELETE_FILES);
    v.ids = vcopy(&v, ids, n, sizeof *ids, &ok);
    v.nids = n;
    VERB_END();
}

int moraine_tx_rewrite_files(moraine_tx *tx, const char *schema, const char *table, const int64_t *inputs, size_t nin, const moraine_data_file *outputs,
                             size_t nout)
{
    if ((nin && !inputs) || (nout && !outputs)) return mr_err(MORAINE_EINVAL, "rewrite_files: NULL inputs or outputs");
    VERB_BEGIN(V_REWRITE);
    v.ids = vcopy(&v, inputs, nin, sizeof *inputs, &ok);
    v.nids = nin;
    copy_files(&v, outputs, nout, &ok);
    VERB_END();
}

void moraine_tx_abort(moraine_tx *tx)
{
    if (!tx) return;
    for (size_t i = 0; i < tx->nverbs; i++) verb_free(&tx->verbs[i]);
    free(tx->verbs);
    mv_model_free(&tx->m);
    mv_reads_free(&tx->reads);
    free(tx->author);
    free(tx->message);
    free(tx->extra);
    free(tx);
}
