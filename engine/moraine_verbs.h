/*
 * moraine_verbs.h — the verb path of moraine's public C API: verb
 * transactions (moraine_tx_*) and moraine_init. Part of the public contract;
 * included by moraine.h (include moraine.h, not this file), kept apart so
 * that each header holds one part of the API.
 */
#ifndef MORAINE_VERBS_H
#define MORAINE_VERBS_H
#ifndef MORAINE_H
#error "include moraine.h, which includes moraine_verbs.h"
#endif

/* ---- verb transactions (docs/verbs.md) ---------------------------------------
 * The verb path: moraine's own verbs produce exactly the rows DuckLake would
 * write for the same statements — ids from next_catalog_id / next_file_id,
 * the snapshot's schema_version, ducklake_schema_versions and
 * ducklake_snapshot_changes rows — and commit as one new snapshot in one
 * LMDB write transaction. Tables are named by schema and table name (schema
 * NULL means "main"). Each verb checks its input against the catalog as of
 * the transaction's base snapshot plus the verbs before it, and fails with
 * a message naming what was wrong; a failed verb changes nothing and the
 * transaction stays usable. Rows are produced at commit, against the newest
 * snapshot: when snapshots were committed after the base, DuckLake's
 * conflict rules decide (MORAINE_ECONFLICT) or the verbs are replayed on top.
 */
typedef struct moraine_tx moraine_tx;

/**
 * A column of create_table / add_column (or a field of add_field).
 *
 * @type is a column_type DuckLake's loader reads ("int64", "varchar",
 * "timestamp", "decimal(18,2)", ...: DuckLakeTypes::FromString, names without
 * regard to case), stored as DuckLake writes it (DuckLakeTypes::ToString:
 * "INT64" as "int64", "timestamp_us" as "timestamp"); a type its loader
 * cannot read ("int", "varchar(10)") is refused (EINVAL naming the column and
 * the type: "Failed to parse DuckLake type"), and so is "unknown", which its
 * loader reads but no DuckLake statement writes. A nested type names
 * its children, nested arbitrarily (engine/coltype.c):
 *
 *     struct(a int32, "b c" varchar)    STRUCT(a INTEGER, "b c" VARCHAR)
 *     list(int64)                       BIGINT[]
 *     map(varchar, list(int32))         MAP(VARCHAR, INTEGER[])
 *
 * struct, list and map are matched without regard to ASCII case; a field
 * name is bare (a letter or '_', then letters, digits, '_', '$'; bytes >=
 * 0x80 count as letters) or double-quoted with "" for a quote, stored as
 * written; blanks may separate the parts. Such a column is written as
 * DuckLake writes it (DuckLakeFieldId::FieldIdFromType,
 * ducklake_field_data.cpp; DuckLakeTableEntry::ConvertColumn,
 * ducklake_table_entry.cpp; ColumnToSQLRecursive,
 * ducklake_metadata_manager.cpp): one ducklake_column row per node, its
 * column_type "struct", "list", "map" or the leaf's type, a list's child
 * named "element", a map's "key" and "value", parent_column the enclosing
 * row's column_id; ids depth first (the column, then its first child and
 * that child's children, ...), column_order = column_id. Refused (EINVAL): a
 * text that begins with struct/list/map and does not read as above, a
 * struct without fields (DuckLake's "Failed to convert DuckDB type to
 * DuckLake - unsupported type STRUCT()"), two fields of one struct whose
 * names differ only in case (DuckDB's "Duplicate struct entry name "a""), a
 * default on a nested type (DuckLake's "Default value for STRUCT type not
 * supported", LIST, MAP). A decimal, at the top or nested, must be
 * DuckLake's decimal(W,S) (lower case, no blanks, no leading zeros) with
 * DuckDB's bounds (BindDecimalType, default_types.cpp): "DECIMAL type width
 * must be between 1 and 38", "DECIMAL type scale must be between 0 and 38"
 * (a scale above 255), "DECIMAL type scale cannot be greater than width",
 * each followed by the column and the text (EINVAL).
 */
typedef struct {
    const char *name;          /* column_name */
    const char *type;          /* column_type as DuckLake spells it, a nested type with its children (above) */
    int not_null;              /* nonzero: nulls_allowed = false (a nested column's children keep true) */
    const char *default_value; /* NULL: no default (DuckLake writes default_value 'NULL'); else the default's text */
    /* "literal" (NULL means this) or "expression", DuckLake's default_value_type. A literal is written as
     * default_value and as initial_default, the value files written before the column existed read
     * (DuckLake: ExtractInitialValue casts the constant to the column's type, so give the literal as the
     * column's type renders it: "1.5" for a float64, "3.25" for a decimal(18,2)); an expression, as DuckDB
     * renders it, gets no initial_default in CREATE TABLE and is refused by ADD COLUMN (DuckLake: "We cannot
     * add a column with a non-literal default value..."). */
    const char *default_value_type;
} moraine_column_def;

/**
 * One key of a partition spec: a source column and a transform, stored as
 * given once checked. The transform is one DuckLake's catalog loader reads
 * (DuckLakeCatalog's partition entries, ducklake_catalog.cpp) and its SET
 * PARTITIONED BY writes (GetPartitionField, ducklake_table_entry.cpp):
 * exactly "identity", "year", "month", "day", "hour", "epoch_year",
 * "epoch_month", "epoch_day", "epoch_hour" (DuckLake 1.1) or "bucket(N)" with
 * N written as DuckLake writes it (decimal, no sign, no leading zero) and
 * 1 <= N <= 2147483647 ("Bucket count must be positive", "Bucket count
 * cannot exceed 2147483647"). Anything else is refused (EINVAL).
 */
typedef struct {
    const char *column;        /* column name, resolved to its column_id */
    const char *transform;     /* "identity", "year" .. "hour", "epoch_year" .. "epoch_hour" or "bucket(N)" */
} moraine_partition_key;

/**
 * One key of a sort spec. The expression is stored as given (moraine does
 * not parse SQL in C): give it as DuckDB's ParsedExpression::ToString()
 * renders it, which is what DuckLake stores and compares. @columns, when
 * given, are the column names the expression references (unqualified); each
 * must be a live top-level column of the table, compared without regard to
 * ASCII case, or the verb is refused with DuckLake's words (ENOTFOUND:
 * "Columns in the SET SORTED BY statement were not found in the DuckLake
 * table. Unmatched columns were: x"; DuckLakeTableEntry::
 * ValidateSortExpressionColumns). The Lua binding fills it from
 * moraine.expr's parse of the expression; a C caller that leaves it NULL
 * gets no column check.
 */
typedef struct {
    const char *expression;    /* SQL expression text as DuckDB renders it, e.g. "amount" or "lower(\"name\")" */
    const char *dialect;       /* NULL: "duckdb" */
    const char *sort_direction;/* "ASC" or "DESC" (NULL: "ASC") */
    const char *null_order;    /* "NULLS_FIRST" or "NULLS_LAST" (NULL: DuckDB's default, stored "NULLS_LAST"; never equal to a stored spec, so set_sorting writes it anew) */
    const char *const *columns;/* the column names @expression references (NULL: not checked) */
    size_t ncolumns;
} moraine_sort_key;

/** Statistics of one column of a data file (ducklake_file_column_stats). */
typedef struct {
    const char *column;        /* column name, resolved to its column_id */
    int64_t column_size_bytes, value_count, null_count; /* INT64_MIN: NULL */
    const char *min_value, *max_value;                  /* verbatim; NULL: NULL */
    int contains_nan;          /* -1: NULL, 0 false, 1 true */
} moraine_column_stats;

/** A data file to register (ducklake_data_file and its embedded children). */
typedef struct {
    const char *path;          /* relative to the table's path unless path_is_absolute */
    int path_is_absolute;
    const char *file_format;   /* NULL: "parquet" */
    int64_t record_count, file_size_bytes, footer_size; /* footer_size INT64_MIN: NULL */
    const char *const *partition_values; /* one per key of the live partition spec; an entry NULL is SQL NULL */
    size_t npartition_values;
    const moraine_column_stats *stats;
    size_t nstats;
    int64_t row_group_count;   /* the file's row groups (DuckLake writes it); 0: NULL (unknown); < 0: EINVAL */
} moraine_data_file;

/** A delete file for one data file (ducklake_delete_file). */
typedef struct {
    int64_t data_file_id;
    const char *path;          /* relative to the table's path */
    const char *format;        /* NULL: "parquet" */
    int64_t delete_count, file_size_bytes, footer_size;
    int64_t row_group_count;   /* 0: NULL (unknown); < 0: EINVAL */
} moraine_delete_file;

/**
 * moraine_tx_begin - start a verb transaction on the newest snapshot (its base).
 * Returns 0, MORAINE_EINVAL (the catalog holds no snapshot: use moraine_init),
 * MORAINE_EREADONLY, MORAINE_ELMDB.
 */
int moraine_tx_begin(moraine_db *db, moraine_tx **out);

/** moraine_tx_base - the snapshot the transaction read (its base). */
int64_t moraine_tx_base(const moraine_tx *tx);

/**
 * moraine_tx_set_info - author, commit_message and commit_extra_info for the
 * ducklake_snapshot_changes row (each may be NULL for SQL NULL). Returns 0.
 */
int moraine_tx_set_info(moraine_tx *tx, const char *author, const char *message, const char *extra_info);

/** DuckLake: CREATE SCHEMA name. EEXIST if a live schema has that name. */
int moraine_tx_create_schema(moraine_tx *tx, const char *name);

/**
 * DuckLake: DROP SCHEMA name [CASCADE]. Ends the schema's ducklake_schema
 * row; change dropped_schema:ID (first in the change list), schema_version
 * + 1, no catalog id. Without @cascade a schema that still has a live table
 * or view is refused (EINVAL) with DuckLake's words
 * (DuckLakeSchemaEntry::TryDropSchema: "Cannot drop schema "s" because there
 * are entries that depend on it ... Use DROP...CASCADE to drop all
 * dependents."); with @cascade its tables are dropped as drop_table drops
 * them and its views as drop_view. ENOTFOUND (no live schema of that name,
 * compared case-insensitively), EINVAL (an empty name; "main", which every
 * DuckLake catalog has; a schema created in this same transaction, which
 * moraine does not take back).
 */
int moraine_tx_drop_schema(moraine_tx *tx, const char *name, int cascade);

/**
 * DuckLake: CREATE TABLE schema.name (columns). @table_id_out (may be NULL)
 * receives the id the table gets when it is the only entry of the
 * transaction that takes catalog ids and the transaction commits on its base
 * snapshot; with several, DuckLake's commit-time walk of its hash maps
 * decides (docs/verbs.md, "Catalog ids"): read the id back by name after the
 * commit.
 * Column ids: 1, 2, ... in statement order, a nested column's children
 * right after it (DuckLakeFieldData::FromColumns); column_order =
 * column_id. A nested column's rows: the column's own with
 * nulls_allowed = !not_null, its children's true; a nested row has
 * initial_default NULL, default_value 'NULL' and default_value_type ''
 * (ConvertColumn writes no default for it), a non-nested child NULL,
 * 'NULL', 'literal'.
 * Errors: ENOTFOUND (no such schema), EEXIST (a live table or view of that
 * name: DuckLake keeps tables and views in one set of names per schema),
 * EINVAL (no columns, duplicate column name, empty type, a nested type
 * moraine_column_def refuses; on a catalog of 1.1 metadata a column name
 * starting with "_ducklake_", any case: DuckLake reserves them for its
 * inlined data tables, ValidateNoInlinedSystemColumns; so do add_column and
 * rename_column's new name).
 */
int moraine_tx_create_table(moraine_tx *tx, const char *schema, const char *name, const moraine_column_def *cols, size_t ncols,
                            int64_t *table_id_out);

/**
 * DuckLake: ALTER TABLE ADD COLUMN. The column takes the table's largest
 * column_id ever + 1 (column_order the same), a nested column's children
 * the ids after it, depth first, with the values create_table writes for
 * them (DuckLakeTableEntry::GetAddColumnInfo). A default is initial_default
 * and default_value. ENOTFOUND (table), EEXIST (column name), EINVAL (no
 * name or type, a nested type moraine_column_def refuses; not_null set:
 * DuckDB's parser refuses a constraint on ADD COLUMN, "Adding columns with
 * constraints not yet supported").
 */
int moraine_tx_add_column(moraine_tx *tx, const char *schema, const char *table, const moraine_column_def *col);

/**
 * DuckLake: ALTER TABLE RENAME COLUMN old TO new. Partition specs name
 * columns by column_id and are untouched. A live sort spec whose expressions
 * name the column gets a new version with the name rewritten where an
 * expression is exactly the column (plain or double-quoted); if an
 * expression uses the column inside a larger expression, the rename is
 * refused (EINVAL) unless @new_sort_keys gives the new spec (n keys),
 * checked as moraine_tx_set_sorting checks keys, their `columns` against the
 * columns as they are after the rename.
 * Errors: ENOTFOUND (table or column; a key's column the table lacks after
 * the rename), EEXIST (new name taken), EINVAL.
 */
int moraine_tx_rename_column(moraine_tx *tx, const char *schema, const char *table, const char *old_name, const char *new_name,
                             const moraine_sort_key *new_sort_keys, size_t n);

/**
 * DuckLake: ALTER TABLE DROP COLUMN. Refused (EINVAL) when the live partition
 * spec partitions on the column ("the table is partitioned by this column")
 * or the live sort spec names it. A nested column's child rows (a struct's
 * fields, a list's element, a map's key and value, and theirs) end with it
 * (DuckLake's ColumnChangeInfo::DropField). ENOTFOUND (table or column).
 */
int moraine_tx_drop_column(moraine_tx *tx, const char *schema, const char *table, const char *name);

/*
 * STRUCT fields. DuckLake stores a STRUCT column as a ducklake_column row of
 * column_type "struct" and one row per field whose parent_column is the
 * struct's column_id (a field may be a struct itself). A path names a
 * column and then a field of it, and so on: {"s", "f"} is s.f; names are
 * compared as DuckDB does, ASCII case-insensitively. The struct's own row is
 * never rewritten (its column_type stays "struct"). Each verb alters the
 * table: change altered_table:T, schema_version + 1, a schema_versions row.
 * DuckLake's code: DuckLakeTableEntry::AlterTable(AddFieldInfo /
 * RenameFieldInfo / RemoveFieldInfo) in ducklake_table_entry.cpp, the rows
 * written by HandleChangedFields (ducklake_transaction_state.cpp) and
 * ColumnToSQLRecursive (ducklake_metadata_manager.cpp); docs/verbs.md.
 */

/**
 * DuckLake: ALTER TABLE ADD COLUMN s.f TYPE [DEFAULT lit] (AddFieldInfo).
 * @path (@npath >= 1 names) is the struct; @field the new field (its
 * not_null must be 0; a nested type as moraine_column_def gives it). The
 * row: column_id = column_order = the table's largest column_id ever + 1,
 * parent_column the struct's id, nulls_allowed false, initial_default and
 * default_value the default (none: NULL and 'NULL'), default_value_type
 * 'literal'; a nested field's children take the ids after it, depth first,
 * with the same values and no default (AddNewColumns writes every row of
 * the new field through ExtractDefaultValue).
 * Errors: ENOTFOUND (table; "Column "s" does not exist"), EEXIST ("Failed to
 * add field - field "f" already exists in column "s""), EINVAL (empty path,
 * "Fields can only be added to structs - s is a INTEGER", empty name or
 * type, a nested type moraine_column_def refuses, not_null).
 */
int moraine_tx_add_field(moraine_tx *tx, const char *schema, const char *table, const char *const *path, size_t npath,
                         const moraine_column_def *field);

/**
 * DuckLake: ALTER TABLE RENAME COLUMN s.f TO g (RenameFieldInfo). @path
 * (@npath >= 2) is the field. Its row is ended and a new one written with
 * the same column_id, column_order, column_type and parent_column and the
 * new name; as DuckLake's RenameField builds it, nothing else is carried
 * over: initial_default NULL, default_value 'NULL', default_value_type ''
 * (empty), nulls_allowed false. A nested field's own fields are untouched.
 * Errors: ENOTFOUND (table, path), EEXIST ("Failed to rename field "f" to
 * "g" - field with this name already exists in column "s"", also for the
 * field's own name), EINVAL (a path of fewer than 2 names, an empty new
 * name, a parent that is not a struct: "Only rename on top-level struct
 * fields is supported currently").
 */
int moraine_tx_rename_field(moraine_tx *tx, const char *schema, const char *table, const char *const *path, size_t npath,
                            const char *new_name);

/**
 * DuckLake: ALTER TABLE DROP COLUMN s.f (RemoveFieldInfo). @path (@npath >=
 * 2) is the field. Its row and the rows of its own fields are ended.
 * Errors: ENOTFOUND (table, path), EINVAL (a path of fewer than 2 names;
 * "Cannot drop field 'f' from column 'l' - it's not a struct"; the struct's
 * last field: "Failed to convert DuckDB type to DuckLake - unsupported type
 * STRUCT()", DuckLake's refusal of an empty struct).
 */
int moraine_tx_drop_field(moraine_tx *tx, const char *schema, const char *table, const char *const *path, size_t npath);

/** DuckLake: ALTER TABLE RENAME TO. The table keeps its id and path. ENOTFOUND, EEXIST (a table or a view
 * of the new name in the schema: DuckLakeSchemaEntry::Alter). */
int moraine_tx_rename_table(moraine_tx *tx, const char *schema, const char *table, const char *new_name);

/** DuckLake: DROP TABLE. Ends the table, its columns, specs, data and delete files. ENOTFOUND. */
int moraine_tx_drop_table(moraine_tx *tx, const char *schema, const char *table);

/**
 * DuckLake: ALTER TABLE SET PARTITIONED BY. Ends the live spec and inserts
 * the new one; setting the spec the table already has does nothing. n == 0
 * is RESET PARTITIONED BY (a zero-column spec goes live). Each key is checked
 * as DuckLake's GetPartitionField reads it (ducklake_table_entry.cpp): the
 * transform first (moraine_partition_key: EINVAL for an empty or unknown
 * transform, "Unsupported partition transform"; a bucket count that is not
 * an integer, "Bucket count must be an integer", not positive, "Bucket count
 * must be positive", above 2147483647, "Bucket count cannot exceed
 * 2147483647", or not written as DuckLake writes it, e.g. "bucket(04)"),
 * then the column (ENOTFOUND: "Unexpected partition key - column "x" does
 * not exist"). ENOTFOUND (table).
 */
int moraine_tx_set_partitioning(moraine_tx *tx, const char *schema, const char *table, const moraine_partition_key *keys, size_t n);

/** DuckLake: ALTER TABLE RESET PARTITIONED BY (a set to the empty spec). */
int moraine_tx_clear_partitioning(moraine_tx *tx, const char *schema, const char *table);

/**
 * DuckLake: ALTER TABLE SET SORTED BY. Ends the live sort spec (if any) and
 * inserts the new one, even when equal. EINVAL: no keys, a direction other
 * than ASC/DESC, a null order other than NULLS_FIRST/NULLS_LAST, an empty
 * expression, a column count without names. ENOTFOUND (table; a column a
 * key's `columns` names that the table lacks, in DuckLake's words, the
 * missing names listed once each). The expression itself is not parsed
 * (moraine_sort_key).
 */
int moraine_tx_set_sorting(moraine_tx *tx, const char *schema, const char *table, const moraine_sort_key *keys, size_t n);

/** DuckLake: ALTER TABLE RESET SORTED BY: ends the live spec, inserts none; on a table with no sort spec it
 * still alters the table (snapshot, schema_version + 1, altered_table) and writes no sort rows. ENOTFOUND. */
int moraine_tx_clear_sorting(moraine_tx *tx, const char *schema, const char *table);

/** What ALTER TABLE ... ALTER COLUMN changes (moraine_tx_alter_column); several may be set at once. */
typedef struct {
    const char *type;               /* non-NULL: the new column_type (ALTER COLUMN ... TYPE), as DuckLake spells it */
    int set_default;                /* nonzero: SET DEFAULT default_value, or DROP DEFAULT when default_value is NULL */
    const char *default_value;      /* the default's text: a literal's value, or an expression as DuckDB renders it */
    const char *default_value_type; /* "literal" (NULL means this) or "expression" */
    int nulls_allowed;              /* -1: unchanged; 0: SET NOT NULL; 1: DROP NOT NULL */
} moraine_column_alter;

/**
 * DuckLake: ALTER TABLE t ALTER COLUMN c SET DEFAULT / DROP DEFAULT / SET NOT
 * NULL / DROP NOT NULL / TYPE. The column's live row is ended and a new
 * version begins with the same column_id and order and the changed fields
 * (DROP DEFAULT writes default_value 'NULL', literal); DuckLake does this even
 * when nothing changes (corpus seed_0010 step 2). altered_table, schema_version
 * + 1, a ducklake_schema_versions row. ENOTFOUND (table or column), EINVAL
 * (empty type, default_value_type other than literal/expression,
 * nulls_allowed outside -1..1, nothing to change, a type change from or to
 * a nested type: DuckLake's TypePromotion rewrites child rows, which moraine
 * does not write; a decimal type as create_table refuses it).
 *
 * nulls_allowed 0 (SET NOT NULL) and 1 (DROP NOT NULL) are checked as
 * DuckLake checks them (DuckLakeTableEntry::AlterTable(SetNotNullInfo /
 * DropNotNullInfo)), each EINVAL in its words: "Cannot DROP NULL on column a
 * - it has no NOT NULL constraint defined"; "Cannot SET NOT NULL on column a
 * - it already has a NOT NULL constraint"; "... on table t - the table has
 * transaction-local changes or no stats are available" (no
 * ducklake_table_stats row, a table created in this transaction, or files
 * added to it before in this transaction: DuckLake then scans the new data,
 * which moraine cannot); "... on table t - no column stats are available"
 * (no ducklake_table_column_stats row for the column); "... on column a -
 * the column has NULL values" (its contains_null: DuckLake then scans the
 * files, as a delete may have removed the NULLs; moraine refuses).
 *
 * A type change is DuckLake's TypePromotion (ducklake_table_entry.cpp):
 * allowed only when DuckDB's max of the old and the new type is the new
 * type (TypePromotionIsAllowed: LogicalType::DefaultTryGetMaxLogicalTypeUnchecked),
 * so int8 -> int16 -> int32 -> int64 -> int128, uint8 -> int16, ints ->
 * float32/float64/a decimal wide enough, float32 -> float64, decimal(W,S) ->
 * a decimal with at least as many integer digits and as much scale, date ->
 * timestamps, timestamp -> timestamptz / timestamp_ns, boolean -> ints, any
 * type -> json; everything else is refused with DuckLake's "Cannot change
 * type of column c from INTEGER to SMALLINT - only widening type promotions
 * are allowed" (EINVAL), as is a type moraine does not know (not one of
 * DuckLakeTypes' names). The same type again (also as DuckLake reads it:
 * "INT32", "timestamp_us" for "timestamp") changes nothing: DuckLake alters
 * the table (snapshot, schema_version + 1, altered_table) and writes no
 * column row; with another change in @alt only that change is written.
 */
int moraine_tx_alter_column(moraine_tx *tx, const char *schema, const char *table, const char *column, const moraine_column_alter *alt);

/**
 * DuckLake: COMMENT ON TABLE t / COMMENT ON COLUMN t.c IS 'text' (NULL: IS
 * NULL). Ends the live 'comment' row of ducklake_tag (object_id = table_id) or
 * ducklake_column_tag (table_id, column_id) and inserts one with the new
 * value, NULL for IS NULL (DuckLake's WriteNewTags writes the row whatever
 * the value). altered_table, schema_version + 1, no
 * schema_versions row, no catalog id (corpus seed_0005 step 5). @column NULL:
 * the table. ENOTFOUND (table or column).
 */
int moraine_tx_set_comment(moraine_tx *tx, const char *schema, const char *table, const char *column, const char *comment);

/**
 * DuckLake: CREATE VIEW name AS sql. A ducklake_view row: view_id from
 * next_catalog_id, a new view_uuid, dialect 'duckdb', the query text as given,
 * column_aliases ''. Change created_view:"schema"."name", schema_version + 1
 * (corpus seed_0001 step 15). ENOTFOUND (schema), EEXIST (a live view or
 * table of that name), EINVAL (empty name or query).
 */
int moraine_tx_create_view(moraine_tx *tx, const char *schema, const char *name, const char *sql);

/** DuckLake: DROP VIEW name: ends the view's row; change dropped_view:ID, schema_version + 1. ENOTFOUND. */
int moraine_tx_drop_view(moraine_tx *tx, const char *schema, const char *name);

/**
 * DuckLake: INSERT (the files it wrote). Each file gets data_file_id from
 * next_file_id, row_id_start from the table's next_row_id, the live spec's
 * partition_id (NULL when the spec has no columns or there is none) and its
 * partition values, which must be one per key of the live spec (EINVAL),
 * each NULL or a value DuckLake writes for its key (EINVAL otherwise, naming
 * the file, key and value): for bucket(N) an integer 0..N-1 (DuckLake's
 * IsValidTransformedHivePartitionValue; its bucket pruning compares the
 * texts, so "03" is refused), for year .. hour and epoch_year .. epoch_hour
 * an integer (an optional '-', no leading zero), for identity a value of the
 * column's type in DuckDB's rendering (moraine_stat_check). A live spec whose
 * transform DuckLake could not load (an imported catalog's) takes no files (EINVAL).
 * @first_id_out (may be NULL) receives the first data_file_id on the base,
 * as the verbs stand now: the commit gives file ids in DuckLake's order (the
 * transaction's new data files table by table in table-id order, then its
 * delete files, then rewrite outputs: docs/verbs.md), so a later verb adding
 * files to a table of lower id moves these.
 * ENOTFOUND (table, or a column named in stats).
 */
int moraine_tx_add_data_files(moraine_tx *tx, const char *schema, const char *table, const moraine_data_file *files, size_t n,
                              int64_t *first_id_out);

/**
 * DuckLake: DELETE (the delete files it wrote). A data file's live delete
 * file, if any, is ended and replaced. ENOTFOUND (table, or a data file not
 * live in the table).
 */
int moraine_tx_add_delete_files(moraine_tx *tx, const char *schema, const char *table, const moraine_delete_file *files, size_t n);

/** DuckLake: DELETE of whole files: ends data files and their delete files. ENOTFOUND. */
int moraine_tx_delete_files(moraine_tx *tx, const char *schema, const char *table, const int64_t *data_file_ids, size_t n);

/**
 * DuckLake: compaction (merge_adjacent_files / rewrite_data_files): ends the
 * input files (and their delete files), registers the outputs. Refused
 * (EINVAL) when the inputs differ in partition_id or partition values (RFC
 * 0013 on RFC 0008: a merge must not cross partitions); outputs are written
 * under the inputs' spec and values; an output that gives its own values
 * must give the inputs' (EINVAL otherwise).
 */
int moraine_tx_rewrite_files(moraine_tx *tx, const char *schema, const char *table, const int64_t *inputs, size_t nin,
                             const moraine_data_file *outputs, size_t nout);

/**
 * moraine_tx_commit - produce the rows and commit them as one new snapshot,
 * then free @tx. *snapshot_out (may be NULL) receives the new snapshot id,
 * or -1 when the verbs changed nothing (DuckLake commits no snapshot then).
 * Returns 0; MORAINE_ECONFLICT (a snapshot after the base made a
 * conflicting change: the message names the table and the snapshot; nothing
 * written); any verb error found on replay; MORAINE_EMAPFULL, MORAINE_ELMDB.
 */
int moraine_tx_commit(moraine_tx *tx, int64_t *snapshot_out);

/** moraine_tx_abort - discard the transaction; NULL is a no-op. */
void moraine_tx_abort(moraine_tx *tx);

/**
 * moraine_init - make an empty catalog a DuckLake catalog, as DuckLake's
 * ATTACH does: every ducklake_* table of catalog version 1.1-dev1 defined,
 * ducklake_metadata (version, created_by, data_path, encrypted) and
 * snapshot 0 with schema "main" (created_schema:"main").
 * @data_path: the lake's DATA_PATH, e.g. "data/", stored as DuckLake stores
 * it (DuckLakeInitializer::InitializeDataPath): trailing '/' and '\\'
 * dropped and one '/' added, so "data", "data/" and "data//" are all
 * "data/" (file paths join it as text). Returns 0, MORAINE_EEXIST (not
 * empty), MORAINE_EINVAL, MORAINE_ENOMEM.
 */
int moraine_init(moraine_db *db, const char *data_path);

#endif /* MORAINE_VERBS_H */
