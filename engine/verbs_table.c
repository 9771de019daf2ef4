/*
 * verbs_table.c — the verbs on schemas, tables and views, applied to the
 * model: create_schema, create_table, rename_table, drop_table (with its
 * files and comments), set_comment (COMMENT ON a table or column),
 * create_view and drop_view.
 */
#include "verbs_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DuckLake's directory for a new schema or table: "name/" when every byte of
 * the name is an ASCII letter, digit, '_' or '-', else "<uuid>/" (corpus:
 * "My Col", "naïve col", "a\"b4", "my schema" get their uuid). */
static void object_path(char *out, size_t n, const char *name, const char *uuid)
{
    int plain = *name != 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) plain = 0;
    snprintf(out, n, "%s/", plain ? name : uuid);
}

int mv_do_create_schema(model *m, verb *v)
{
    if (!v->a || !*v->a) return mr_err(MORAINE_EINVAL, "create_schema: empty schema name");
    if (mv_find_schema(m, v->a)) return mr_err(MORAINE_EEXIST, "create_schema: schema \"%s\" already exists", v->a);
    orow r = {0};
    int rc = mv_new_row(m, "ducklake_schema", &r);
    char uuid[37], path[1024];
    mv_uuid7(uuid);
    object_path(path, sizeof path, v->a, uuid);
    int64_t id = m->next_catalog_id++;
    if (!rc) {
        mv_orow_set_int(&r, "schema_id", id);
        rc = mv_orow_set_str(&r, "schema_uuid", uuid);
    }
    if (!rc) rc = mv_orow_set_str(&r, "schema_name", v->a);
    if (!rc) rc = mv_orow_set_str(&r, "path", path);
    mv_orow_set_bool(&r, "path_is_relative", 1);
    if (!rc) rc = mv_emit_insert(m, &r);
    if (!rc) {
        sstate *p = realloc(m->schemas, (m->nschemas + 1) * sizeof *p);
        char **names = realloc(m->created_schema_names, (m->ncreated_schema_names + 1) * sizeof *names);
        if (p) m->schemas = p;
        if (names) m->created_schema_names = names;
        if (!p || !names || !(names[m->ncreated_schema_names] = strdup(v->a))) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        else {
            m->ncreated_schema_names++;
            m->schemas[m->nschemas++] = (sstate){.schema_id = id, .row = r, .live = 1, .created = 1};
            r.v = NULL;
        }
    }
    if (r.v) mv_orow_free(&r);
    m->schema_changed = 1;
    return rc;
}

static int load_views(model *m);
static orow *find_view(model *m, int64_t schema_id, const char *name);

/* EEXIST when schema @schema_id holds a live view named @name: DuckLake keeps
 * tables and views in one set of names per schema (DuckLakeSchemaEntry::
 * GetCatalogSet), so CREATE TABLE refuses it (HandleCreateConflict) and so
 * does a rename (DuckLakeSchemaEntry::Alter); a catalog with both could not
 * be loaded. @what names the verb. */
static int view_named(model *m, int64_t schema_id, const char *name, const char *what)
{
    int rc = load_views(m);
    if (rc) return rc;
    orow *w = find_view(m, schema_id, name);
    if (!w) return 0;
    return mr_err(MORAINE_EEXIST, "%s: a view \"%s\" already exists in that schema (tables and views share one set of names)", what,
                  mv_orow_str(w, "view_name"));
}

int mv_do_create_table(model *m, verb *v)
{
    sstate *s = mv_find_schema(m, v->schema);
    if (!s) return mr_err(MORAINE_ENOTFOUND, "create_table: no schema \"%s\"", v->schema ? v->schema : "main");
    if (!v->table || !*v->table) return mr_err(MORAINE_EINVAL, "create_table: empty table name");
    if (v->ncols == 0) return mr_err(MORAINE_EINVAL, "create_table \"%s\": a table needs at least one column", v->table);
    for (size_t i = 0; i < v->ncols; i++)
        for (size_t j = 0; j < i; j++)
            if (v->cols[i].name && v->cols[j].name && mr_ident_eq(v->cols[i].name, v->cols[j].name))
                return mr_err(MORAINE_EINVAL, "create_table \"%s\": column \"%s\" appears twice", v->table, v->cols[i].name);
    for (size_t i = 0; i < v->ncols; i++) {
        int rc = mv_reserved_column(m, v->cols[i].name);
        if (rc) return rc;
    }
    tstate *have;
    int rc = mv_find_table(m, v->schema, v->table, &have);
    if (rc == 0) return mr_err(MORAINE_EEXIST, "create_table: table \"%s\".\"%s\" already exists", v->schema ? v->schema : "main", v->table);
    if (rc != MORAINE_ENOTFOUND) return rc;
    if ((rc = view_named(m, s->schema_id, v->table, "create_table"))) return rc;
    orow r = {0};
    if ((rc = mv_new_row(m, "ducklake_table", &r))) return rc;
    char uuid[37], path[1024];
    mv_uuid7(uuid);
    object_path(path, sizeof path, v->table, uuid);
    int64_t id = m->next_catalog_id++;
    mv_orow_set_int(&r, "table_id", id);
    rc = mv_orow_set_str(&r, "table_uuid", uuid);
    mv_orow_set_int(&r, "schema_id", s->schema_id);
    if (!rc) rc = mv_orow_set_str(&r, "table_name", v->table);
    if (!rc) rc = mv_orow_set_str(&r, "path", path);
    mv_orow_set_bool(&r, "path_is_relative", 1);
    if (!rc) rc = mv_emit_insert(m, &r);
    if (rc) {
        mv_orow_free(&r);
        return rc;
    }
    tstate *p = realloc(m->tables, (m->ntables + 1) * sizeof *p);
    if (!p) {
        mv_orow_free(&r);
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    m->tables = p;
    tstate *t = &m->tables[m->ntables++];
    memset(t, 0, sizeof *t);
    t->row = r;
    t->table_id = id;
    t->schema_id = s->schema_id;
    t->live = 1;
    t->created = 1;
    t->schema_row = 1;
    t->stats_loaded = 1;
    t->stats_ord = -1;
    /* DuckLake: column ids from 1 in statement order, a nested column's
     * children right after it, depth first (DuckLakeFieldData::FromColumns,
     * DuckLakeFieldId::FieldIdFromType, ducklake_field_data.cpp);
     * column_order = column_id (ColumnToSQLRecursive) */
    int64_t next = 1;
    for (size_t i = 0; !rc && i < v->ncols; i++) rc = mv_column_rows(m, t, &v->cols[i], &next, -1, MV_COL_CREATE);
    m->schema_changed = 1;
    if (v->ids) v->ids[0] = id;
    return rc;
}

int mv_do_rename_table(model *m, verb *v)
{
    tstate *t, *other;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    if (!v->a || !*v->a) return mr_err(MORAINE_EINVAL, "rename_table: empty new name");
    rc = mv_find_table(m, v->schema, v->a, &other);
    if (rc == 0) return mr_err(MORAINE_EEXIST, "rename_table: table \"%s\" already exists", v->a);
    if (rc != MORAINE_ENOTFOUND) return rc;
    if ((rc = view_named(m, t->schema_id, v->a, "rename_table"))) return rc;
    orow r;
    if ((rc = mv_orow_from(&r, t->row.rel, t->row.v))) return rc;
    rc = mv_retire_row(m, &t->row);
    mv_orow_set_int(&r, "begin_snapshot", m->snap);
    mv_orow_set_null(&r, "end_snapshot");
    if (!rc) rc = mv_orow_set_str(&r, "table_name", v->a);
    if (!rc) rc = mv_emit_insert(m, &r);
    if (rc) {
        mv_orow_free(&r);
        return rc;
    }
    mv_orow_free(&t->row);
    t->row = r;
    t->renamed = t->schema_row = 1;
    m->schema_changed = 1;
    return 0;
}

/* Ends every live row of @relname for table @t (data files, delete files). */
static int end_all_of(model *m, tstate *t, const char *relname)
{
    if (!mv_rel(m, relname)) return 0;
    moraine_cursor *c;
    moraine_row row;
    int rc = moraine_scan_open(m->rd, relname, t->table_id, m->base, &c);
    if (rc) return rc;
    int is_data = strcmp(relname, "ducklake_data_file") == 0;
    int idc = -1;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        if (idc < 0) idc = moraine_column_index(row.rel, is_data ? "data_file_id" : "delete_file_id");
        if (idc >= 0 && row.vals[idc].type == MORAINE_INT && mv_id_in(is_data ? t->ended : t->ended_dels, is_data ? t->nended : t->nended_dels, row.vals[idc].i))
            continue; /* ended earlier in this transaction */
        if (m->stx && (rc = moraine_txn_end(m->stx, relname, row.vals, row.ncols))) break;
    }
    moraine_cursor_close(c);
    return rc < 0 ? rc : 0;
}

static int load_tags(model *m, tstate *t);

/* Takes back a row this transaction inserted (it is never written) and marks
 * it ended in the model. */
static int take_back(model *m, orow *r)
{
    int rc = m->stx ? mr_txn_discard(m->stx, r->rel->name, r->v, r->rel->ncols) : 0;
    if (!rc) mv_orow_set_int(r, "end_snapshot", m->snap);
    return rc;
}

int mv_do_drop_table(model *m, verb *v)
{
    tstate *t;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    if ((rc = mv_retire_row(m, &t->row))) return rc;
    for (size_t i = 0; !rc && i < t->ncols; i++) rc = mv_retire_row(m, &t->cols[i]);
    /* A table this transaction created leaves nothing: DuckLake drops the
     * transaction-local entry and cleans up its files (DuckLakeTransaction::
     * DropTable: DropEntry, CleanupFiles), so its specs, files and comments
     * are taken back, not ended (an ended row would name a table no row has). */
    if (!rc && t->part.rel) rc = t->created ? take_back(m, &t->part) : mv_end_row(m, &t->part);
    if (!rc && t->sort.rel) rc = t->created ? take_back(m, &t->sort) : mv_end_row(m, &t->sort);
    /* its files: those live at the base that this transaction has not ended, and those it added */
    if (!rc && !t->created) rc = end_all_of(m, t, "ducklake_data_file");
    if (!rc && !t->created) rc = end_all_of(m, t, "ducklake_delete_file");
    for (size_t i = 0; !rc && i < t->nadded; i++) {
        if (t->added[i].ended) continue;
        orow r = {0};
        rc = mv_added_row(m, t, &t->added[i], &r);
        if (!rc) rc = t->created ? take_back(m, &r) : mv_end_row(m, &r);
        if (!rc) t->added[i].ended = 1;
        if (r.v) mv_orow_free(&r);
    }
    for (size_t i = 0; !rc && i < t->nadded_dels; i++)
        rc = t->created ? take_back(m, &t->added_dels[i]) : mv_end_row(m, &t->added_dels[i]);
    /* DuckLake ends the table's and its columns' comments with it (corpus seed_0005, seed_0012);
     * those this transaction wrote are taken back */
    if (!rc) rc = mv_end_tags(m, t, -1);
    if (rc) return rc;
    t->live = 0;
    t->dropped = 1;
    m->schema_changed = 1;
    return 0;
}

/* The 'comment' rows of a table and its columns live at the base. */
static int load_tags(model *m, tstate *t)
{
    if (t->tags_loaded) return 0;
    static const char *const rels[2] = {"ducklake_tag", "ducklake_column_tag"};
    for (int k = 0; k < 2; k++) {
        if (!mv_rel(m, rels[k])) continue;
        moraine_cursor *c;
        moraine_row row;
        int rc = moraine_scan_open(m->rd, rels[k], MORAINE_ANY_SCOPE, m->base, &c);
        if (rc) return rc;
        while ((rc = moraine_cursor_next(c, &row)) == 1) {
            int io = moraine_column_index(row.rel, k == 0 ? "object_id" : "table_id"), ik = moraine_column_index(row.rel, "key");
            if (io < 0 || ik < 0 || row.vals[io].type != MORAINE_INT || row.vals[io].i != t->table_id) continue;
            if (row.vals[ik].type != MORAINE_STR || row.vals[ik].len != 7 || memcmp(row.vals[ik].s, "comment", 7) != 0) continue;
            if ((rc = mv_push_row(&t->tags, &t->ntags, row.rel, row.vals))) break;
        }
        moraine_cursor_close(c);
        if (rc < 0) return rc;
    }
    t->tags_loaded = 1;
    return 0;
}

int mv_end_tags(model *m, tstate *t, int64_t column_id)
{
    int rc = load_tags(m, t);
    for (size_t i = 0; !rc && i < t->ntags; i++) {
        orow *r = &t->tags[i];
        if (!mv_orow_is_null(r, "end_snapshot")) continue;
        if (column_id >= 0 && (strcmp(r->rel->name, "ducklake_column_tag") != 0 || mv_orow_int(r, "column_id", -1) != column_id))
            continue;
        if (mv_orow_int(r, "begin_snapshot", -1) == m->snap) { /* written by this transaction: taken back */
            rc = m->stx ? mr_txn_discard(m->stx, r->rel->name, r->v, r->rel->ncols) : 0;
            if (!rc) mv_orow_set_int(r, "end_snapshot", m->snap);
        } else {
            rc = mv_end_row(m, r);
        }
    }
    return rc;
}

int mv_do_set_comment(model *m, verb *v)
{
    tstate *t;
    int rc = mv_find_table(m, v->schema, v->table, &t);
    if (rc) return rc;
    int64_t cid = -1;
    if (v->a) {
        int ci = mv_find_column(t, v->a);
        if (ci < 0) return mr_err(MORAINE_ENOTFOUND, "set_comment: table \"%s\" has no column \"%s\"", v->table, v->a);
        cid = mv_orow_int(&t->cols[ci], "column_id", -1);
    }
    if ((rc = load_tags(m, t))) return rc;
    const char *relname = v->a ? "ducklake_column_tag" : "ducklake_tag";
    for (size_t i = 0; !rc && i < t->ntags; i++) {
        orow *r = &t->tags[i];
        if (strcmp(r->rel->name, relname) != 0 || !mv_orow_is_null(r, "end_snapshot")) continue;
        if (v->a && mv_orow_int(r, "column_id", -2) != cid) continue;
        if (mv_orow_int(r, "begin_snapshot", -1) == m->snap) { /* written by this transaction: taken back */
            rc = m->stx ? mr_txn_discard(m->stx, r->rel->name, r->v, r->rel->ncols) : 0;
            if (!rc) mv_orow_set_int(r, "end_snapshot", m->snap);
        } else {
            rc = mv_end_row(m, r);
        }
    }
    /* DuckLake (WriteNewTags / WriteNewColumnTags): the old row ended, a new one
     * always written, its value NULL for COMMENT ... IS NULL */
    if (!rc) {
        orow r = {0};
        rc = mv_new_row(m, relname, &r);
        if (!rc) {
            if (v->a) {
                mv_orow_set_int(&r, "table_id", t->table_id);
                mv_orow_set_int(&r, "column_id", cid);
            } else {
                mv_orow_set_int(&r, "object_id", t->table_id);
            }
            rc = mv_orow_set_str(&r, "key", "comment");
        }
        if (!rc) rc = mv_orow_set_str(&r, "value", v->b);
        if (!rc) rc = mv_emit_insert(m, &r);
        if (!rc) rc = mv_take_row(&t->tags, &t->ntags, &r);
        if (r.v) mv_orow_free(&r);
    }
    if (!rc) {
        t->altered = 1;
        m->schema_changed = 1; /* schema_version + 1; no ducklake_schema_versions row */
    }
    return rc;
}

static int load_views(model *m)
{
    if (m->views_loaded || !mv_rel(m, "ducklake_view")) return 0;
    moraine_cursor *c;
    moraine_row row;
    int rc = moraine_scan_open(m->rd, "ducklake_view", MORAINE_ANY_SCOPE, m->base, &c);
    if (rc) return rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1)
        if ((rc = mv_push_row(&m->views, &m->nviews, row.rel, row.vals))) break;
    moraine_cursor_close(c);
    if (rc < 0) return rc;
    m->views_loaded = 1;
    return 0;
}

static orow *find_view(model *m, int64_t schema_id, const char *name)
{
    for (size_t i = 0; i < m->nviews; i++) {
        orow *r = &m->views[i];
        const char *n = mv_orow_str(r, "view_name");
        if (mv_orow_is_null(r, "end_snapshot") && mv_orow_int(r, "schema_id", -1) == schema_id && n && mr_ident_eq(n, name)) return r;
    }
    return NULL;
}

int mv_do_view(model *m, verb *v)
{
    const char *what = v->kind == V_CREATE_VIEW ? "create_view" : "drop_view";
    if (!v->table || !*v->table) return mr_err(MORAINE_EINVAL, "%s: empty view name", what);
    sstate *s = mv_find_schema(m, v->schema);
    if (!s) return mr_err(MORAINE_ENOTFOUND, "%s: no schema \"%s\"", what, v->schema ? v->schema : "main");
    int rc = load_views(m);
    if (rc) return rc;
    orow *old = find_view(m, s->schema_id, v->table);
    int64_t *ids = v->kind == V_CREATE_VIEW ? m->created_views : m->dropped_views;
    size_t *nids = v->kind == V_CREATE_VIEW ? &m->ncreated_views : &m->ndropped_views;
    if (v->kind == V_DROP_VIEW) {
        if (!old) return mr_err(MORAINE_ENOTFOUND, "drop_view: no view \"%s\" in schema \"%s\"", v->table, mv_orow_str(&s->row, "schema_name"));
        int64_t id = mv_orow_int(old, "view_id", -1);
        if ((rc = mv_end_row(m, old))) return rc;
        if ((rc = mv_id_push(&ids, nids, id))) return rc;
        m->dropped_views = ids;
        m->schema_changed = 1;
        return 0;
    }
    if (!v->a || !*v->a) return mr_err(MORAINE_EINVAL, "create_view \"%s\": empty query", v->table);
    tstate *t;
    if (old || mv_find_table(m, v->schema, v->table, &t) == 0)
        return mr_err(MORAINE_EEXIST, "create_view: \"%s\" already exists in schema \"%s\"", v->table, mv_orow_str(&s->row, "schema_name"));
    orow r = {0};
    char uuid[37];
    mv_uuid7(uuid);
    rc = mv_new_row(m, "ducklake_view", &r);
    int64_t id = m->next_catalog_id;
    if (!rc) {
        mv_orow_set_int(&r, "view_id", id);
        rc = mv_orow_set_str(&r, "view_uuid", uuid);
    }
    if (!rc) {
        mv_orow_set_int(&r, "schema_id", s->schema_id);
        rc = mv_orow_set_str(&r, "view_name", v->table);
    }
    if (!rc) rc = mv_orow_set_str(&r, "dialect", "duckdb");
    if (!rc) rc = mv_orow_set_str(&r, "sql", v->a);
    if (!rc) rc = mv_orow_set_str(&r, "column_aliases", "");
    if (!rc) rc = mv_emit_insert(m, &r);
    if (!rc) rc = mv_id_push(&ids, nids, id);
    if (!rc) {
        m->created_views = ids;
        rc = mv_take_row(&m->views, &m->nviews, &r);
    }
    if (r.v) mv_orow_free(&r);
    if (!rc) {
        m->next_catalog_id++;
        m->schema_changed = 1;
    }
    return rc;
}

/* The names of the live tables (kind 0) or views (kind 1) of schema @sid, as
 * the model sees them, into a NULL-terminated array of copies (*out). ENOMEM,
 * read errors. */
static int schema_entries(model *m, sstate *s, int kind, char ***out)
{
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    *out = NULL;
    const char *sname = mv_orow_str(&s->row, "schema_name");
    if (kind == 0) {
        /* load every table of the schema live at the base into the model */
        moraine_cursor *c;
        moraine_row row;
        char **base = NULL;
        size_t nb = 0;
        if ((rc = moraine_scan_open(m->rd, "ducklake_table", MORAINE_ANY_SCOPE, m->base, &c))) return rc;
        while ((rc = moraine_cursor_next(c, &row)) == 1) {
            int in = moraine_column_index(row.rel, "table_name"), is = moraine_column_index(row.rel, "schema_id");
            if (in < 0 || is < 0 || row.vals[is].type != MORAINE_INT || row.vals[is].i != s->schema_id || row.vals[in].type != MORAINE_STR) continue;
            char **nb2 = realloc(base, (nb + 1) * sizeof *nb2);
            if (!nb2 || !(nb2[nb] = strndup(row.vals[in].s, row.vals[in].len))) {
                if (nb2) base = nb2;
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            base = nb2;
            nb++;
        }
        moraine_cursor_close(c);
        for (size_t i = 0; rc >= 0 && i < nb; i++) {
            tstate *t;
            int r2 = mv_find_table(m, sname, base[i], &t);
            if (r2 && r2 != MORAINE_ENOTFOUND) rc = r2;
        }
        for (size_t i = 0; i < nb; i++) free(base[i]);
        free(base);
        if (rc < 0) return rc;
        rc = 0;
    } else if ((rc = load_views(m))) {
        return rc;
    }
    size_t total = kind == 0 ? m->ntables : m->nviews;
    names = calloc(total + 1, sizeof *names);
    if (!names) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; i < total; i++) {
        const char *nm = NULL;
        if (kind == 0) {
            tstate *t = &m->tables[i];
            if (t->live && t->schema_id == s->schema_id) nm = mv_orow_str(&t->row, "table_name");
        } else {
            orow *r = &m->views[i];
            if (mv_orow_is_null(r, "end_snapshot") && mv_orow_int(r, "schema_id", -1) == s->schema_id) nm = mv_orow_str(r, "view_name");
        }
        if (nm && !(names[n++] = strdup(nm))) {
            rc = mr_err(MORAINE_ENOMEM, "out of memory");
            break;
        }
    }
    if (rc) {
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
        return rc;
    }
    *out = names;
    return 0;
}

/* Appends @str to @b (out of memory: the buffer stays short). */
static void buf_puts(mr_buf *b, const char *str)
{
    (void)mr_buf_put(b, str, strlen(str));
}

static void free_names(char **names)
{
    for (size_t i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

int mv_do_drop_schema(model *m, verb *v)
{
    if (!v->a || !*v->a) return mr_err(MORAINE_EINVAL, "drop_schema: empty schema name");
    sstate *s = mv_find_schema(m, v->a);
    if (!s) return mr_err(MORAINE_ENOTFOUND, "drop_schema: no schema \"%s\"", v->a);
    const char *sname = mv_orow_str(&s->row, "schema_name");
    if (sname && mr_ident_eq(sname, "main"))
        return mr_err(MORAINE_EINVAL, "drop_schema: schema \"main\" is the default schema of every DuckLake catalog; moraine does not drop it");
    if (s->created)
        return mr_err(MORAINE_EINVAL, "drop_schema \"%s\": the schema was created in this transaction; moraine does not take a schema back", v->a);
    int64_t sid = s->schema_id;
    char **tables = NULL, **views = NULL;
    int rc = schema_entries(m, s, 0, &tables);
    if (!rc) rc = schema_entries(m, s, 1, &views);
    s = mv_schema_by_id(m, sid); /* the model's arrays may have moved */
    sname = s ? mv_orow_str(&s->row, "schema_name") : v->a;
    if (!rc && !v->cascade && ((tables && tables[0]) || (views && views[0]))) {
        /* DuckLake: DuckLakeSchemaEntry::TryDropSchema without CASCADE */
        mr_buf b = {0};
        const char *parts[2] = {"table", "view"};
        char **lists[2] = {tables, views};
        buf_puts(&b, "Cannot drop schema \"");
        buf_puts(&b, sname);
        buf_puts(&b, "\" because there are entries that depend on it\n");
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; lists[k][i]; i++) {
                buf_puts(&b, parts[k]);
                buf_puts(&b, " \"");
                buf_puts(&b, lists[k][i]);
                buf_puts(&b, "\" depends on schema \"");
                buf_puts(&b, sname);
                buf_puts(&b, "\".\n");
            }
        buf_puts(&b, "Use DROP...CASCADE to drop all dependents.");
        int full = mr_buf_byte(&b, 0) == 0;
        rc = mr_err(MORAINE_EINVAL, "%s", full ? (const char *)b.p : "Cannot drop schema: out of memory");
        mr_buf_free(&b);
    }
    /* CASCADE: its tables and views dropped as DROP TABLE / DROP VIEW drop them */
    for (size_t i = 0; !rc && tables[i]; i++) {
        verb d = {.kind = V_DROP_TABLE, .schema = (char *)sname, .table = tables[i]};
        rc = mv_do_drop_table(m, &d);
        s = mv_schema_by_id(m, sid);
        sname = s ? mv_orow_str(&s->row, "schema_name") : v->a;
    }
    for (size_t i = 0; !rc && views[i]; i++) {
        verb d = {.kind = V_DROP_VIEW, .schema = (char *)sname, .table = views[i]};
        rc = mv_do_view(m, &d);
    }
    free_names(tables);
    free_names(views);
    if (rc) return rc;
    s = mv_schema_by_id(m, sid);
    if ((rc = mv_end_row(m, &s->row))) return rc;
    s->live = 0;
    if ((rc = mv_id_push(&m->dropped_schemas, &m->ndropped_schemas, sid))) return rc;
    m->schema_changed = 1;
    return 0;
}
