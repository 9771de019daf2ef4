/*
 * verbs_internal.h — shared by the verb path's files only (not installed,
 * not part of moraine.h); docs/verbs.md and docs/ducklake-behaviour.md
 * describe the path:
 *
 *   verbs_catalog.c  the model: owned rows, the catalog loaded at a
 *                    snapshot, identifier lookups, rows emitted
 *   verbs_table.c    schemas, tables, views, comments
 *   verbs_column.c   columns
 *   verbs_spec.c     partition and sort specs
 *   verbs_files.c    data and delete files
 *   verbs_colstats.c ducklake_table_column_stats of the data verbs
 *   verbs_tx.c       the transaction: verbs recorded and checked (moraine_tx_*)
 *   verbs_commit.c   the commit: conflicts, catalog ids, the snapshot
 *   verbs_cache.c    the handle's cache of the tables its last commit wrote
 *   verbs_init.c     moraine_init
 *
 * A verb transaction records logical verbs. Each verb is checked when it is
 * called, by applying it to a model of the catalog (the tables it touches, as
 * of the base snapshot plus the verbs before it); the commit applies them
 * again to a model of the newest snapshot, emitting DuckLake's rows.
 *
 * The names these files share begin with mv_; everything used by one file
 * only is static there. Errors: every int-returning function returns 0 or a
 * MORAINE_E* code with the message set (mr_err), unless it says otherwise.
 */
#ifndef MORAINE_VERBS_INTERNAL_H
#define MORAINE_VERBS_INTERNAL_H

#include "internal.h"

/* ---- owned rows (verbs_catalog.c) ---- */

/* A row of relation @rel whose values (and strings) the row owns; v NULL: none. */
typedef struct {
    const moraine_relation_info *rel;
    moraine_value *v;
} orow;

/* Frees the row's values (a row without values: nothing). */
void mv_orow_free(orow *r);
/* Copies @vals (rel->ncols values; NULL: all NULL) into @r. ENOMEM. */
int mv_orow_from(orow *r, const moraine_relation_info *rel, const moraine_value *vals);
/* Set column @name (a column the catalog lacks: nothing is set). */
void mv_orow_set_int(orow *r, const char *name, int64_t v);
void mv_orow_set_bool(orow *r, const char *name, int v);
void mv_orow_set_null(orow *r, const char *name);
/* Sets column @name to a copy of @s (NULL: NULL). EINVAL when @s is not
 * valid UTF-8, ENOMEM. */
int mv_orow_set_str(orow *r, const char *name, const char *s);
/* The same by column index @i (resolved once, moraine_column_index; -1: the
 * catalog lacks the column, nothing is set). */
void mv_orow_set_int_at(orow *r, int i, int64_t v);
void mv_orow_set_bool_at(orow *r, int i, int v);
void mv_orow_set_null_at(orow *r, int i);
int mv_orow_set_str_at(orow *r, int i, const char *s);
/* Checks that text @s for column @name is valid UTF-8 (what every text a verb
 * stores must be); EINVAL naming the column. *len_out (NULL: not wanted): strlen(@s). */
int mv_text_check(const char *name, const char *s, size_t *len_out);
/* Column @name's integer, or @dflt when absent or not an integer. */
int64_t mv_orow_int(const orow *r, const char *name, int64_t dflt);
/* Column @name's boolean (0 or 1), or @dflt when absent or not a boolean. */
int mv_orow_bool(const orow *r, const char *name, int dflt);
/* 1 when column @name is NULL or absent. */
int mv_orow_is_null(const orow *r, const char *name);
/* Column @name's string (owned by the row), or NULL when absent or not a string. */
const char *mv_orow_str(const orow *r, const char *name);

/* ---- verbs, recorded (verbs_tx.c) ---- */

/* A column's table-wide statistics as DuckLake keeps them in memory
 * (DuckLakeColumnStats, src/include/storage/ducklake_stats.hpp): one row of
 * ducklake_table_column_stats, or the merge of this transaction's files. */
typedef struct {
    int64_t column_id;
    char *type;            /* DuckLake type the min/max texts are compared in */
    int has_nulls, has_num, has_nan, nan, has_min, has_max, any_valid;
    uint64_t null_count, num_values;
    char *min, *max;
    char *extra;           /* extra_stats as read (geometry, variant); NULL once new files merge in */
    mr_statkind k;         /* how @type compares; kmin / kmax: min and max parsed */
    mr_statkey kmin, kmax;
    int64_t ord;           /* the row's place in ducklake_table_column_stats, -1: none */
    int written;           /* a kept row (mv_loaded.cst) decoded from the values this handle's commit wrote at @ord (mv_cstats_refresh) */
    char *pack;            /* one allocation holding the texts cs_push copied (NULL: none); a text inside it is not freed alone */
    size_t packlen;
} mv_cstat;


enum {
    V_CREATE_SCHEMA, V_CREATE_TABLE, V_ADD_COLUMN, V_RENAME_COLUMN, V_DROP_COLUMN, V_RENAME_TABLE, V_DROP_TABLE,
    V_SET_PARTITIONING, V_SET_SORTING, V_CLEAR_SORTING, V_ADD_FILES, V_ADD_DELETES, V_DELETE_FILES, V_REWRITE,
    V_ALTER_COLUMN, V_SET_COMMENT, V_CREATE_VIEW, V_DROP_VIEW, V_DROP_SCHEMA, V_ADD_FIELD, V_RENAME_FIELD, V_DROP_FIELD
};

typedef struct {
    int kind;
    char *schema, *table, *a, *b;
    moraine_column_def *cols;
    size_t ncols;
    moraine_partition_key *pkeys;
    size_t npk;
    moraine_sort_key *skeys;
    size_t nsk;
    int has_skeys;
    moraine_data_file *files;
    size_t nfiles;
    moraine_delete_file *dels;
    size_t ndels;
    int64_t *ids;
    size_t nids;
    moraine_column_alter alt; /* V_ALTER_COLUMN */
    int cascade;              /* V_DROP_SCHEMA */
    char **path;              /* V_ADD_FIELD (the struct), V_RENAME_FIELD and V_DROP_FIELD (the field) */
    size_t npath;
    /* V_ADD_FILES, V_REWRITE: applied to a checking model, every text of its
     * files (path, format, partition values, stats min and max) was checked
     * (mv_text_check): the commit measures them without checking again */
    int texts_checked;
    /* V_ADD_FILES, V_REWRITE: the files' column statistics merged in file
     * order from none (verbs_colstats.c), made by the last checking model
     * that applied the verb (cs_made) at snapshot cs_base; min / max point at
     * the verb's files, type is owned. The commit, applying the verb to the
     * same snapshot, takes this merge instead of parsing and merging every
     * file again (mv_cstats_sum_usable). */
    mv_cstat *cs;
    size_t ncs;
    int cs_made;
    int64_t cs_base;
    /* V_ADD_FILES, V_ADD_DELETES, V_REWRITE: the table's id when the verb was
     * recorded, the key of DuckLake's file-id order at commit (plan_file_ids) */
    int64_t tkey;
    void **owned;
    size_t nowned, capowned;
} verb;

/* ---- the model (verbs_catalog.c) ---- */


/* A data file this transaction added (add_data_files, rewrite_files): what
 * later verbs ask of it (its id, its partition_id, whether drop_table ended
 * it) and what rebuilds its ducklake_data_file row (mv_added_row) when
 * drop_table ends it. @f is the verb's copy of the file, which lives as long
 * as the transaction; the row itself is not kept. */
typedef struct {
    const moraine_data_file *f;
    int64_t id;           /* data_file_id (-1: the catalog lacks the column) */
    int64_t partition_id; /* valid when has_pid */
    int64_t row_id_start; /* valid when row_ids */
    int has_pid;          /* the row's partition_id is set (not NULL) */
    int row_ids;          /* the row's row_id_start is set (add_data_files; compaction outputs have none) */
    int ended;            /* drop_table ended it */
} added_file;

/* A table the model has loaded or created: its live rows and what this
 * transaction did to it. */
typedef struct {
    int64_t table_id, schema_id;
    orow row;              /* live ducklake_table row (rel NULL when none) */
    int live;
    orow *cols;            /* live column rows */
    size_t ncols;
    int64_t max_column_id, max_order;
    orow part;             /* live partition spec (rel NULL when none) */
    orow *pcols;
    size_t npcols;
    orow sort;
    orow *skeys;
    size_t nskeys;
    orow base_sort;        /* the committed sort spec, once this transaction replaced it (rel NULL otherwise) */
    orow *base_skeys;
    size_t nbase_skeys;
    int stats_loaded, stats_dirty;
    int64_t record_count, next_row_id, file_size_bytes, stats_ord;
    int created, inserted, deleted, altered, dropped, compacted, renamed, schema_row;
    int64_t *deleted_files; /* data files this transaction deletes from */
    size_t ndeleted_files;
    /* what this transaction did to files, so later verbs see it (docs/verbs.md) */
    int64_t *ended, *ended_dels; /* data / delete file ids live at the base, ended here */
    size_t nended, nended_dels;
    added_file *added;           /* data files added here (ended only when drop_table ends them) */
    size_t nadded, capadded;
    orow *added_dels;            /* delete files added here and still live */
    size_t nadded_dels;
    /* ducklake_table_column_stats (verbs_colstats.c): the committed rows of
     * live columns (loaded on the first data verb or type change; owned
     * texts), the merge of the files this transaction added, and of the
     * outputs of its rewrites (min / max pointing at the verbs' files) */
    mv_cstat *cst, *pend, *rw_pend;
    size_t ncst, npend, nrw_pend;
    int cst_loaded, cst_base_stats; /* cst_base_stats: a ducklake_table_stats row at the model's snapshot */
    int64_t cst_base_records, dropped_rows;
    int dropped_any;
    int64_t *rw_inputs;          /* data files the rewrites of this transaction replaced */
    size_t nrw_inputs;
    orow *tags;                  /* 'comment' rows of ducklake_tag / ducklake_column_tag (loaded on first use) */
    size_t ntags;
    int tags_loaded;
} tstate;

typedef struct {
    int64_t schema_id;
    orow row;
    int live, created;
} sstate;

/* What a checking model read of one table live at its snapshot, as read,
 * before any verb changed it (verbs_catalog.c): its ducklake_table row, its
 * live columns and specs (load_table), its ducklake_table_stats row
 * (mv_load_stats) and its ducklake_table_column_stats rows (mv_cstats_load:
 * every row of the table, texts owned; type: NULL, or the column type the
 * row's min/max were parsed in, k / kmin / kmax holding that parse). */
typedef struct {
    int64_t table_id, schema_id;
    orow row;
    int has_table;
    orow *cols;
    size_t ncols;
    int64_t max_column_id, max_order;
    orow part, sort;
    orow *pcols, *skeys;
    size_t npcols, nskeys;
    int has_stats;
    int64_t record_count, next_row_id, file_size_bytes, stats_ord;
    int has_cst;
    mv_cstat *cst;
    size_t ncst;
} mv_loaded;

/* The reads a transaction's checking model made, kept for its commit: a
 * commit whose read is of the same LMDB snapshot (the same write
 * transaction id: nothing was written in between) and whose model starts
 * from the same catalog snapshot (@base) copies them instead of reading the
 * store again. Every read kept is of LMDB snapshot @txn; once a verb reads
 * another one (something was committed between two verbs), nothing more is
 * kept or used (@off). */
typedef struct mv_reads_s {
    uint64_t txn;
    int64_t base; /* the catalog snapshot the reads kept were of (the model's base) */
    int off;
    /* taken from the handle's cache (verbs_cache.c): the checking model
     * uses them too (the rows a read of LMDB snapshot @txn gives) */
    int seeded;
    mv_loaded *t;
    size_t n;
    /* the model's start at @base (mv_model_init_reads): the ducklake_snapshot
     * row's counters and the live ducklake_schema rows */
    int has_base;
    int64_t next_catalog_id, next_file_id, schema_version;
    orow *schemas;
    size_t nschemas;
} mv_reads;

typedef struct {
    moraine_db *db;
    moraine_read *rd;      /* the snapshot the model starts from */
    moraine_txn *stx;      /* emitting rows (commit), or NULL (checking) */
    int64_t base, snap;    /* snapshot read; snapshot being written */
    orow snaprow;          /* the base snapshot's ducklake_snapshot row */
    int64_t next_catalog_id, next_file_id, schema_version;
    int schema_changed;
    sstate *schemas;
    size_t nschemas;
    tstate *tables;
    size_t ntables;
    char **created_schema_names;
    size_t ncreated_schema_names;
    orow *views;           /* ducklake_view rows live at the base or written here (loaded on first use) */
    size_t nviews;
    int views_loaded;
    int v11_metadata;      /* mv_reserved_column: 0 not read yet, 1 a catalog of 1.1 metadata, -1 older */
    int64_t *dropped_views, *created_views; /* view_ids, for the change list */
    size_t ndropped_views, ncreated_views;
    int64_t *dropped_schemas; /* schema_ids, for the change list */
    size_t ndropped_schemas;
    mv_reads *reads;          /* the transaction's reads kept (the checking model keeps, the commit uses), or NULL */
    /* the counters of the ducklake_snapshot row the commit wrote (emit_snapshot), as a read of it gives them */
    int wrote_snapshot;
    int64_t wrote_catalog_id, wrote_file_id, wrote_schema_version;
} model;

/* Frees the reads kept (the struct is zeroed). */
void mv_reads_free(mv_reads *r);
/* The reads kept of table @table_id that model @m may use (the commit, or
 * a checking model whose reads came from the handle's cache, on the same
 * LMDB snapshot and catalog snapshot), or NULL. */
mv_loaded *mv_reads_use(model *m, int64_t table_id);
/* The entry in which checking model @m keeps what it reads of table
 * @table_id (created empty), or NULL: @m keeps nothing (not a checking
 * model, or its reads are of another snapshot than those kept). ENOMEM
 * through *rc. */
mv_loaded *mv_reads_keep(model *m, int64_t table_id, int *rc);

/* EINVAL when @name (a new top-level column's name, or a column's new name)
 * is reserved: on a catalog of DuckLake 1.1 metadata (ducklake_metadata
 * 'version' 1.1-dev1, what moraine_init writes) DuckLake refuses every name
 * starting with "_ducklake_", without regard to case (its inlined data
 * tables' system columns: DuckLakeUtil::ValidateInlinedSystemColumn, from
 * CreateTableExtended, ADD COLUMN and RENAME COLUMN), in its words. An older
 * catalog's rule depends on its data inlining limit, which moraine does not
 * read: no check there. */
int mv_reserved_column(model *m, const char *name);
/* 1 when @id is among the @n @ids. */
int mv_id_in(const int64_t *ids, size_t n, int64_t id);
/* Appends @id to the array *ids of *n ids. ENOMEM. */
int mv_id_push(int64_t **ids, size_t *n, int64_t id);
/* The catalog's relation @name (the open commit's definitions first), or NULL. */
const moraine_relation_info *mv_rel(model *m, const char *name);
/* mv_rel, ENOTFOUND (a catalog that is not DuckLake's) when it is missing. */
int mv_need_rel(model *m, const char *name, const moraine_relation_info **out);
/* Frees the model and ends its read; the model is zeroed. */
void mv_model_free(model *m);
/* Appends a copy of a row to an array of owned rows. ENOMEM. */
int mv_push_row(orow **arr, size_t *n, const moraine_relation_info *r, const moraine_value *vals);
/* Moves owned row @r onto the end of an array of owned rows (r->v becomes
 * NULL: the array owns it). ENOMEM (then @r is still the caller's). */
int mv_take_row(orow **arr, size_t *n, orow *r);
/* Builds the model as of snapshot @at (MORAINE_ALL_VERSIONS: the newest),
 * emitting into @stx (NULL: checking only). EINVAL when the catalog holds no
 * snapshot, ENOTFOUND without its ducklake_snapshot row, read errors. The
 * caller frees the model (mv_model_free) on failure too. */
int mv_model_init_at(model *m, moraine_db *db, moraine_txn *stx, int64_t at);
/* mv_model_init_at of the newest snapshot. */
int mv_model_init(model *m, moraine_db *db, moraine_txn *stx);
/* mv_model_init of a model that keeps its reads in @r (m->reads = @r): a
 * checking model (@stx NULL) first takes the handle's cache into an empty
 * @r (mv_cache_take); a model whose LMDB snapshot is the one @r's reads are
 * of (a commit's, or a checking model's when @r came from the cache) starts
 * from @r's counters and schemas instead of reading them; a checking model
 * that read them keeps them in @r. Errors: those of mv_model_init_at. */
int mv_model_init_reads(model *m, moraine_db *db, moraine_txn *stx, mv_reads *r);
/* The live schema @name (NULL: "main"), or NULL. */
sstate *mv_find_schema(model *m, const char *name);
/* The schema with id @id (live or not), or NULL. */
sstate *mv_schema_by_id(model *m, int64_t id);
/* Finds table schema.name live in the model (loading it on first use) into
 * *out. EINVAL without a name, ENOTFOUND, read errors. */
int mv_find_table(model *m, const char *schema, const char *name, tstate **out);
/* The index of @t's live top-level column @name (parent_column NULL; a
 * STRUCT's fields are rows of t->cols too, found by path in verbs_column.c)
 * in t->cols, or -1. */
int mv_find_column(tstate *t, const char *name);

/* ---- emitting rows (verbs_catalog.c) ---- */

/* Inserts row @r into the staged commit (checking model: nothing). */
int mv_emit_insert(model *m, const orow *r);
/* A new row of @relname with begin_snapshot = the snapshot being written.
 * ENOTFOUND when the catalog lacks the table, ENOMEM. */
int mv_new_row(model *m, const char *relname, orow *out);
/* A UUIDv7 as 36 characters and a NUL. */
void mv_uuid7(char out[37]);
/* Ends a live row in the model and the store. */
int mv_end_row(model *m, orow *r);
/* Ends a live row; a column or table version this same transaction wrote is
 * taken back instead. */
int mv_retire_row(model *m, orow *r);

/* ---- verbs applied to the model ----
 * Each checks verb @v against the model and applies it (emitting rows when
 * the model has a staged commit). Errors: EINVAL (bad arguments), ENOTFOUND
 * (no such schema, table, column, view or file), EEXIST (the name is taken),
 * ENOMEM, read and staged-commit errors. */

/* verbs_table.c */
int mv_do_create_schema(model *m, verb *v);
int mv_do_create_table(model *m, verb *v);
int mv_do_rename_table(model *m, verb *v);
int mv_do_drop_table(model *m, verb *v);
int mv_do_set_comment(model *m, verb *v);
/* Ends the live 'comment' rows of table @t (@column_id < 0: the table's and
 * every column's, as DuckLake's DropTables; else that column's
 * ducklake_column_tag rows, as DuckLake's WriteExpiredColumnTags for a dropped
 * column or field); rows this transaction wrote are taken back. Read errors. */
int mv_end_tags(model *m, tstate *t, int64_t column_id);
int mv_do_view(model *m, verb *v); /* V_CREATE_VIEW and V_DROP_VIEW */
int mv_do_drop_schema(model *m, verb *v);

/* coltype.c: a column's type (moraine_column_def.type) read into the tree
 * of rows DuckLake writes for it. */
typedef struct mv_type {
    char *name;           /* a child's name: a struct field's, "element", "key", "value"; NULL at the root */
    char *type;           /* column_type: "struct", "list", "map", or a non-nested type as given */
    struct mv_type *kids; /* the children, in DuckLake's order (a struct's fields as written; key, value) */
    size_t nkids;
} mv_type;
/* Reads @text, the type of column @col (for messages), into *out (free with
 * mv_type_free). A text that does not begin with struct, list or map is a
 * non-nested type, kept as given. EINVAL (empty, a nested type that cannot
 * be read, a STRUCT without fields: DuckLake's "Failed to convert DuckDB
 * type to DuckLake - unsupported type STRUCT()", two fields of a struct
 * whose names differ only in case: DuckDB's "Duplicate struct entry name"),
 * ENOMEM. */
int mv_type_parse(const char *col, const char *text, mv_type *out);
void mv_type_free(mv_type *t);
/* 1 when @t has children (struct, list, map). */
int mv_type_nested(const mv_type *t);
/* DuckDB's word for nested @t ("STRUCT", "LIST", "MAP"), NULL when not nested. */
const char *mv_type_duckdb_kind(const mv_type *t);
/* Checks a non-nested type @text of column @col that begins with the word
 * "decimal": DuckLake writes decimal(W,S) (DuckLakeTypes::ToString), W and S
 * as DuckDB's BindDecimalType allows them (default_types.cpp). 0 for any
 * other text and for a good decimal; EINVAL with DuckDB's words ("DECIMAL
 * type width must be between 1 and 38", "DECIMAL type scale must be between
 * 0 and 38", "DECIMAL type scale cannot be greater than width", followed by
 * the column and the text), or naming the text when it is not
 * decimal(digits,digits) in DuckLake's spelling (lower case, no blanks or
 * leading zeros). */
int mv_decimal_check(const char *col, const char *text);
/* A non-nested type @text of column @col as DuckLake writes it
 * (DuckLakeTypes::ToString: "int64" for "INT64", "timestamp" for
 * "timestamp_us"): *canon a static string, or @text itself for a decimal
 * (mv_decimal_check's spelling). EINVAL naming the column and the text when
 * DuckLake's loader cannot read it (DuckLakeTypes::FromString: "Failed to
 * parse DuckLake type - unsupported type 'bogus'"), or as mv_decimal_check. */
int mv_leaf_type(const char *col, const char *text, const char **canon);
/* ALTER COLUMN @col TYPE: the change of a non-nested column from DuckLake
 * type @from to @to, as DuckLake's TypePromotion decides it
 * (ducklake_table_entry.cpp: TypePromotionIsAllowed, DuckDB's
 * DefaultTryGetMaxLogicalTypeUnchecked must give @to). *same = 1 when both
 * read as one DuckDB type ("int32" and "INT32", "timestamp" and
 * "timestamp_us"): DuckLake changes nothing then. 0 when allowed; EINVAL
 * with DuckLake's "Cannot change type of column c from INTEGER to SMALLINT -
 * only widening type promotions are allowed", or naming a type moraine does
 * not know (not one of DuckLakeTypes' names or a valid decimal(W,S)). */
int mv_type_change(const char *col, const char *from, const char *to, int *same);

/* verbs_column.c */
/* The ducklake_column row of column @d of @t with column_id @id and
 * column_order @order into *out: a literal default is initial_default too,
 * an expression default none (DuckLake's ExtractInitialValue). EINVAL
 * without a name or type, or with a default_value_type other than
 * "literal" / "expression" (or "expression" without a default). */
int mv_column_row(model *m, tstate *t, const moraine_column_def *d, int64_t id, int64_t order, orow *out);
/* How a column's rows are written (mv_column_rows). */
enum { MV_COL_CREATE, MV_COL_ADD, MV_COL_FIELD };
/* Writes column @d of @t and, for a nested type, its children's rows, ids
 * from *next_id (preorder, column_order = column_id) under @parent (-1:
 * top-level); the rows join t->cols and t->max_column_id / max_order follow.
 * @how: MV_COL_CREATE (CREATE TABLE), MV_COL_ADD (ADD COLUMN), MV_COL_FIELD
 * (ADD COLUMN s.f). EINVAL (no name, a type mv_type_parse refuses, a default
 * on a nested type), ENOMEM, staged-commit errors. */
int mv_column_rows(model *m, tstate *t, const moraine_column_def *d, int64_t *next_id, int64_t parent, int how);
int mv_do_add_column(model *m, verb *v);
int mv_do_rename_column(model *m, verb *v);
int mv_do_drop_column(model *m, verb *v);
int mv_do_alter_column(model *m, verb *v);
/* STRUCT fields (ALTER TABLE ADD / RENAME / DROP COLUMN s.f; docs/verbs.md) */
int mv_do_add_field(model *m, verb *v);
int mv_do_rename_field(model *m, verb *v);
int mv_do_drop_field(model *m, verb *v);

/* verbs_spec.c */
/* Checks sort key @k (the @i-th): EINVAL for an empty expression, a
 * direction other than ASC/DESC, a null order other than NULLS_FIRST/NULLS_LAST. */
int mv_sort_key_check(const moraine_sort_key *k, size_t i);
/* ENOTFOUND, in DuckLake's words, when a column named in @keys' columns is not
 * a live top-level column of @t (DuckLakeTableEntry::ValidateSortExpressionColumns). */
int mv_sort_keys_columns(const tstate *t, const moraine_sort_key *keys, size_t n);

/* A partition transform DuckLake reads (DuckLakeCatalog's partition entries). */
enum { MV_TR_IDENTITY, MV_TR_YEAR, MV_TR_MONTH, MV_TR_DAY, MV_TR_HOUR, MV_TR_EPOCH_YEAR, MV_TR_EPOCH_MONTH, MV_TR_EPOCH_DAY, MV_TR_EPOCH_HOUR,
       MV_TR_BUCKET };
typedef struct {
    int kind;        /* MV_TR_* */
    int64_t buckets; /* MV_TR_BUCKET: the count, 1 .. INT32_MAX */
} mv_transform;
/* Reads transform text @text (moraine_partition_key's rule, moraine_verbs.h)
 * into *out; EINVAL naming @ctx and the text otherwise. */
int mv_transform_parse(const char *text, mv_transform *out, const char *ctx);
/* 0 when partition value @value (NULL: SQL NULL) is one DuckLake writes for
 * a key with transform @tr on a column of type @column_type: bucket(N) an
 * integer 0..N-1, year .. hour and epoch_year .. epoch_hour an integer, identity a value of the
 * type (moraine_stat_check), each in DuckDB's rendering; EINVAL naming the value. */
int mv_partition_value_check(const mv_transform *tr, const char *column_type, const char *value);
/* Ends the live sort spec of @t and, when keys are given, inserts a new one. */
int mv_replace_sort(model *m, tstate *t, const moraine_sort_key *keys, size_t n);
int mv_do_set_partitioning(model *m, verb *v);
int mv_do_set_sorting(model *m, verb *v); /* V_SET_SORTING and V_CLEAR_SORTING */

/* verbs_colstats.c: ducklake_table_column_stats as DuckLake's commit writes
 * them (docs/verbs.md, "Table column statistics") */
/* Loads @t's committed rows (live columns only, in their current types) once. */
int mv_cstats_load(model *m, tstate *t);
/* Frees a set of statistics that owns its texts (mv_loaded.cst). */
void mv_cstats_free_set(mv_cstat *a, size_t n);
/* Parses the min/max of file @f's stats (@types / @kinds: each stat's
 * column type and its comparison, in order) into @kmin / @kmax; EINVAL,
 * naming the file, table, column and text, when one is not a value of its
 * column's type (DuckLake's cast would throw at commit). */
int mv_cstats_parse(tstate *t, const moraine_data_file *f, const char *const *types, const mr_statkind *kinds, mr_statkey *kmin, mr_statkey *kmax);
/* Merges file @f's stats (@cids, @types, @kinds: each stat's column id, type
 * and comparison; @kmin / @kmax from mv_cstats_parse) into the set *set of
 * *nset (t->pend: the transaction's added files; t->rw_pend: its rewrites'
 * outputs; v->cs: one verb's files), in DuckLake's MergeStats. The set's
 * min / max point at @f's texts (the verb's copy, which outlives the model);
 * its types are copied once per column. ENOMEM. */
int mv_cstats_add_file(mv_cstat **set, size_t *nset, const moraine_data_file *f, const int64_t *cids, const char *const *types,
                       const mr_statkind *kinds, const mr_statkey *kmin, const mr_statkey *kmax);
/* 1 when verb @v's merge of its files (v->cs) is what merging its files one
 * by one into the set @set (@nset entries) would give at the commit of model
 * @m: it was made at @m's snapshot (the same verbs before it, so the same
 * columns and types) and the set has none of its columns yet; else 0. */
int mv_cstats_sum_usable(const model *m, const verb *v, const mv_cstat *set, size_t nset);
/* Appends v->cs's entries to the set (texts as mv_cstats_add_file). ENOMEM. */
int mv_cstats_add_sum(mv_cstat **set, size_t *nset, const verb *v);
/* Frees v->cs (cs_made 0). */
void mv_cstats_sum_free(verb *v);
/* Writes @t's ducklake_table_column_stats rows at commit. Read and staged-commit errors. */
int mv_cstats_emit(model *m, tstate *t);
/* After mv_cstats_emit wrote @t's rows in place (the table had a
 * ducklake_table_stats row), sets the rows kept in @l (@t's rows as read
 * before the commit) to what a read of the commit's LMDB snapshot gives:
 * each row written is decoded from the very values written, at its place.
 * 0 when done; 1 when @l cannot be brought up to date (no rows kept, a row
 * written that is not among them, no memory): the caller drops @l. */
int mv_cstats_refresh(model *m, tstate *t, mv_loaded *l);
/* Frees @t's statistics. */
void mv_cstats_free(tstate *t);

/* verbs_files.c */
/* Loads @t's ducklake_table_stats row (record_count, next_row_id,
 * file_size_bytes and its place) once. Read errors. */
int mv_load_stats(model *m, tstate *t);
/* The ducklake_data_file row of added file @a of @t (the row add_data_files
 * or rewrite_files inserted, end_snapshot NULL) into *out, owned. ENOTFOUND
 * when the catalog lacks the table, ENOMEM. */
int mv_added_row(model *m, tstate *t, const added_file *a, orow *out);
int mv_do_add_files(model *m, verb *v);
int mv_do_add_deletes(model *m, verb *v);
int mv_do_delete_files(model *m, verb *v);
int mv_do_rewrite(model *m, verb *v);

/* ---- the transaction (verbs_tx.c) ---- */

struct moraine_tx {
    moraine_db *db;
    model m;            /* the checking model */
    mv_reads reads;     /* what it read, for the commit (m.reads points here) */
    verb *verbs;
    size_t nverbs;
    char *author, *message, *extra;
    int has_info;
};

/* Applies verb @v to model @m: the verb's family function. EINVAL for an
 * unknown kind, else what that function returns. */
int mv_apply(model *m, verb *v);

/* ---- the handle's cache of tables (verbs_cache.c) ---- */

/* At moraine_tx_begin, the checking model's read of LMDB snapshot @txn
 * just begun: moves the handle's cache into the empty reads @r (seeded)
 * when it is of that very LMDB snapshot; a cache of any other is freed. */
void mv_cache_take(moraine_db *db, mv_reads *r, uint64_t txn);
/* At commit, after the rows were emitted and before model @m is freed:
 * 1 when the commit leaves every table it read in a state the kept reads
 * can be brought to exactly (only add_data_files verbs, on tables that had
 * a ducklake_table_stats row, read through the kept reads), which it then
 * does (stats and column stats rows as written, the counters of the
 * snapshot written); else 0 (nothing cached). */
int mv_cache_prepare(moraine_tx *tx, model *m);
/* After the LMDB commit @txnid of snapshot @snap succeeded: moves tx->reads
 * (brought up to date by mv_cache_prepare) into the handle's cache. */
void mv_cache_put(moraine_tx *tx, uint64_t txnid, int64_t snap);

/* ---- the commit (verbs_commit.c) ---- */

/* The current time as DuckLake writes snapshot_time: "YYYY-MM-DD HH:MM:SS.ffffff+00". */
void mv_now_text(char *out, size_t n);

/* ---- DuckLake's transaction-local maps, for the catalog-id order (verbs_idorder.c) ---- */

/* A node of a simulated case_insensitive_map_t: the entry's name (borrowed,
 * it must outlive the map), its CIHash, its owner (the caller's key) and, for
 * the schema-level map, the entries' map of that schema (owned). */
typedef struct mv_hmap mv_hmap;
typedef struct {
    const char *name;
    uint64_t hash;
    int64_t owner;
    mv_hmap *sub;
} mv_hnode;
/* A std::unordered_map (libstdc++) keyed case-insensitively: its nodes in
 * iteration order. Zero-initialised is empty. */
struct mv_hmap {
    mv_hnode *n;
    size_t len, cap, nbkt, next_resize;
};
/* DuckDB's StringUtil::CIHash of a NUL-terminated name. */
uint64_t mv_cihash(const char *s);
/* The node of @name (case-insensitive, as StringUtil::CIEquals), or NULL. */
mv_hnode *mv_hmap_find(mv_hmap *m, const char *name);
/* map[name] = owner: an existing node keeps its place (its owner changes), a
 * new one takes the place libstdc++ gives it, rehashing as libstdc++ does.
 * *out (may be NULL) gets the node. ENOMEM. */
int mv_hmap_put(mv_hmap *m, const char *name, int64_t owner, mv_hnode **out);
/* Erases @name's node (and its sub-map), when present. */
void mv_hmap_erase(mv_hmap *m, const char *name);
/* Frees the nodes and sub-maps; the map is empty again. */
void mv_hmap_free(mv_hmap *m);

#endif
