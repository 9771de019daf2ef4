/*
 * test_column_types.c — the column types the verbs take, checked as DuckDB
 * and DuckLake check them (engine/coltype.c), through the C API:
 *
 *   - ALTER COLUMN ... TYPE (moraine_tx_alter_column): DuckLake allows only
 *     its widening promotions (ducklake_table_entry.cpp, TypePromotion:
 *     "Cannot change type of column c from A to B - only widening type
 *     promotions are allowed"); the cases of DuckLake's own
 *     test/sql/alter/promote_type_all.test and promote_type.test, and some
 *     that follow from DuckDB's rules (DefaultTryGetMaxLogicalTypeUnchecked).
 *     The same type again changes nothing: no column row is written.
 *   - decimal(W,S) in create_table, add_column, add_field and alter_column,
 *     nested too: DuckDB's BindDecimalType (default_types.cpp) refuses a
 *     width outside 1..38 and a scale above the width; a text that is not
 *     DuckLake's spelling decimal(W,S) is refused.
 *
 * Every refusal is EINVAL with nothing written (the snapshot count and the
 * column rows are unchanged). spec/ddl_validate_spec.lua checks the same
 * through db:exec and tx:alter_column.
 */
#include "check.h"
#include "moraine.h"

static int64_t last_snap(moraine_db *db)
{
    int64_t s = -1;
    CHECK(moraine_last_snapshot(db, &s) == 1, "last snapshot: %s", moraine_errmsg());
    return s;
}

/* The live column_type of column @col of table @table, into @out ("" when none). */
static void live_type(moraine_db *db, const char *table, const char *col, char *out, size_t n)
{
    moraine_read *rd;
    moraine_cursor *c;
    moraine_row row;
    int64_t tid = -1, snap = -1;
    out[0] = 0;
    if (moraine_last_snapshot(db, &snap) != 1 || moraine_read_begin(db, &rd)) return;
    if (moraine_scan_open(rd, "ducklake_table", MORAINE_ANY_SCOPE, snap, &c) == 0) {
        while (moraine_cursor_next(c, &row) == 1) {
            int in = moraine_column_index(row.rel, "table_name"), ii = moraine_column_index(row.rel, "table_id");
            if (row.vals[in].len == strlen(table) && memcmp(row.vals[in].s, table, row.vals[in].len) == 0) tid = row.vals[ii].i;
        }
        moraine_cursor_close(c);
    }
    if (tid >= 0 && moraine_scan_open(rd, "ducklake_column", tid, snap, &c) == 0) {
        while (moraine_cursor_next(c, &row) == 1) {
            int in = moraine_column_index(row.rel, "column_name"), it = moraine_column_index(row.rel, "column_type");
            if (row.vals[in].len == strlen(col) && memcmp(row.vals[in].s, col, row.vals[in].len) == 0)
                snprintf(out, n, "%.*s", (int)row.vals[it].len, row.vals[it].s);
        }
        moraine_cursor_close(c);
    }
    moraine_read_end(rd);
}

static int64_t count_columns(moraine_db *db)
{
    moraine_read *rd;
    moraine_cursor *c;
    moraine_row row;
    int64_t n = 0;
    if (moraine_read_begin(db, &rd)) return -1;
    if (moraine_scan_open(rd, "ducklake_column", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c) == 0) {
        while (moraine_cursor_next(c, &row) == 1) n++;
        moraine_cursor_close(c);
    }
    moraine_read_end(rd);
    return n;
}

static int ntables;

/* A new table with one column x of type @from; its name into @name. */
static void table_of(moraine_db *db, const char *from, char *name, size_t n)
{
    snprintf(name, n, "t%d", ntables++);
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def d = {.name = "x", .type = from};
    CHECK_RC(moraine_tx_create_table(tx, NULL, name, &d, 1, NULL), 0);
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
}

/* ALTER COLUMN x TYPE @to on a new column of type @from: allowed or refused with DuckLake's message naming
 * @from_sql and @to_sql as DuckDB spells them. */
static void promote(moraine_db *db, const char *from, const char *to, int allowed, const char *from_sql, const char *to_sql)
{
    char name[32], got[64];
    table_of(db, from, name, sizeof name);
    int64_t before = last_snap(db), cols = count_columns(db);
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_alter a = {.type = to, .nulls_allowed = -1};
    int rc = moraine_tx_alter_column(tx, NULL, name, "x", &a);
    if (allowed) {
        CHECK(rc == 0, "%s -> %s: allowed by DuckLake, got rc %d (%s)", from, to, rc, moraine_errmsg());
        CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        live_type(db, name, "x", got, sizeof got);
        CHECK(strcmp(got, to) == 0, "%s -> %s: column_type %s", from, to, got);
        CHECK_INT(last_snap(db), before + 1);
        CHECK_INT(count_columns(db), cols + 1);
        return;
    }
    CHECK(rc == MORAINE_EINVAL, "%s -> %s: refused by DuckLake, got rc %d", from, to, rc);
    char want[256];
    snprintf(want, sizeof want, "Cannot change type of column x from %s to %s - only widening type promotions are allowed", from_sql, to_sql);
    CHECK(strcmp(moraine_errmsg(), want) == 0, "%s -> %s: message \"%s\", want \"%s\"", from, to, moraine_errmsg(), want);
    /* the transaction stays usable and writes nothing */
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
    CHECK_INT(last_snap(db), before);
    CHECK_INT(count_columns(db), cols);
    live_type(db, name, "x", got, sizeof got);
    CHECK(strcmp(got, from) == 0, "%s -> %s refused: column_type %s", from, to, got);
}

/* Every verb taking a column type refuses @type with a message containing @want; nothing written. */
static void type_refused(moraine_db *db, const char *type, const char *want)
{
    int64_t before = last_snap(db), cols = count_columns(db);
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def d = {.name = "y", .type = type};
    const char *path[1] = {"s"};
    moraine_column_alter a = {.type = type, .nulls_allowed = -1};
    int rc[4] = {moraine_tx_create_table(tx, NULL, "fresh", &d, 1, NULL), 0, 0, 0};
    const char *msg0 = strstr(moraine_errmsg(), want);
    rc[1] = moraine_tx_add_column(tx, NULL, "base", &d);
    const char *msg1 = strstr(moraine_errmsg(), want);
    rc[2] = moraine_tx_add_field(tx, NULL, "base", path, 1, &d);
    const char *msg2 = strstr(moraine_errmsg(), want);
    rc[3] = moraine_tx_alter_column(tx, NULL, "base", "d", &a);
    const char *msg3 = strstr(moraine_errmsg(), want);
    for (int i = 0; i < 4; i++) CHECK(rc[i] == MORAINE_EINVAL, "type %s: verb %d rc %d", type, i, rc[i]);
    CHECK(msg0 && msg1 && msg2 && msg3, "type %s: every message names \"%s\" (last: %s)", type, want, moraine_errmsg());
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
    CHECK_INT(last_snap(db), before);
    CHECK_INT(count_columns(db), cols);
}

int main(void)
{
    char dir[4096];
    CHECK(check_mkdtemp(dir, sizeof dir, "column_types") != NULL, "mkdtemp");
    moraine_db *db;
    CHECK_RC(moraine_open(dir, NULL, &db), 0);
    CHECK_RC(moraine_init(db, "data/"), 0);

    /* DuckLake's test/sql/alter/promote_type_all.test and promote_type.test */
    static const struct {
        const char *from, *to;
        int allowed;
        const char *from_sql, *to_sql;
    } cases[] = {
        {"int8", "int16", 1, 0, 0},
        {"int16", "int32", 1, 0, 0},
        {"int32", "int64", 1, 0, 0},
        {"int64", "int128", 1, 0, 0},
        {"int128", "int64", 0, "HUGEINT", "BIGINT"},
        {"int128", "int32", 0, "HUGEINT", "INTEGER"},
        {"int32", "int16", 0, "INTEGER", "SMALLINT"},
        {"int8", "float32", 1, 0, 0},
        {"float32", "float64", 1, 0, 0},
        {"float64", "float32", 0, "DOUBLE", "FLOAT"},
        {"uint8", "uint16", 1, 0, 0},
        {"uint16", "uint32", 1, 0, 0},
        {"uint32", "uint64", 1, 0, 0},
        {"uint64", "uint32", 0, "UBIGINT", "UINTEGER"},
        {"uint8", "int16", 1, 0, 0},
        {"timestamp", "timestamptz", 1, 0, 0},
        {"timestamptz", "timestamp", 0, "TIMESTAMP WITH TIME ZONE", "TIMESTAMP"},
        {"int32", "varchar", 0, "INTEGER", "VARCHAR"},
        {"int32", "boolean", 0, "INTEGER", "BOOLEAN"},
        /* DuckDB's rules: the max of the two types must be the target */
        {"varchar", "int32", 0, "VARCHAR", "INTEGER"},
        {"int64", "int16", 0, "BIGINT", "SMALLINT"},
        {"uint32", "int32", 0, "UINTEGER", "INTEGER"}, /* CombineNumericTypes gives BIGINT */
        {"int32", "uint64", 0, "INTEGER", "UBIGINT"},
        {"decimal(10,2)", "decimal(12,2)", 1, 0, 0},
        {"decimal(10,2)", "decimal(12,1)", 0, "DECIMAL(10,2)", "DECIMAL(12,1)"},
        {"decimal(10,2)", "decimal(10,3)", 0, "DECIMAL(10,2)", "DECIMAL(10,3)"},
        {"decimal(10,2)", "float64", 1, 0, 0},
        {"float64", "decimal(38,10)", 0, "DOUBLE", "DECIMAL(38,10)"},
        {"int32", "decimal(10,0)", 1, 0, 0},
        {"int32", "decimal(12,3)", 0, "INTEGER", "DECIMAL(12,3)"},
        {"int32", "decimal(38,30)", 1, 0, 0}, /* DecimalSizeCheck caps the width at 38 */
        {"boolean", "int32", 1, 0, 0},
        {"date", "timestamp", 1, 0, 0},
        {"date", "timestamp_s", 1, 0, 0},
        {"timestamp", "date", 0, "TIMESTAMP", "DATE"},
        {"timestamp_s", "timestamp_ms", 1, 0, 0},
        {"timestamp_ms", "timestamp_s", 0, "TIMESTAMP_MS", "TIMESTAMP_S"},
        {"timestamp", "timestamp_ns", 1, 0, 0},
        {"timestamp_ns", "timestamp", 0, "TIMESTAMP_NS", "TIMESTAMP"},
        {"timestamp_s", "timestamptz", 0, "TIMESTAMP_S", "TIMESTAMP WITH TIME ZONE"},
        {"time", "timetz", 0, "TIME", "TIME WITH TIME ZONE"},
        {"uuid", "varchar", 0, "UUID", "VARCHAR"},
        {"blob", "varchar", 0, "BLOB", "VARCHAR"},
        {"json", "varchar", 0, "JSON", "VARCHAR"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        promote(db, cases[i].from, cases[i].to, cases[i].allowed, cases[i].from_sql, cases[i].to_sql);

    /* the same type (also as DuckLake reads it: case, timestamp_us) changes nothing: the table is altered, no column row */
    static const char *const same[][2] = {{"int32", "int32"}, {"decimal(18,2)", "decimal(18,2)"}, {"int32", "INT32"}, {"timestamp", "timestamp_us"}};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char name[32], got[64];
        table_of(db, same[i][0], name, sizeof name);
        int64_t before = last_snap(db), cols = count_columns(db);
        moraine_tx *tx;
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        moraine_column_alter a = {.type = same[i][1], .nulls_allowed = -1};
        CHECK_RC(moraine_tx_alter_column(tx, NULL, name, "x", &a), 0);
        CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        CHECK_INT(last_snap(db), before + 1);
        CHECK_INT(count_columns(db), cols);
        live_type(db, name, "x", got, sizeof got);
        CHECK(strcmp(got, same[i][0]) == 0, "%s as %s: column_type %s", same[i][0], same[i][1], got);
    }
    /* the same type with another change: only that change is written */
    {
        char name[32], got[64];
        table_of(db, "int32", name, sizeof name);
        int64_t cols = count_columns(db);
        moraine_tx *tx;
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        moraine_column_alter a = {.type = "INT32", .set_default = 1, .default_value = "7", .nulls_allowed = -1};
        CHECK_RC(moraine_tx_alter_column(tx, NULL, name, "x", &a), 0);
        CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        CHECK_INT(count_columns(db), cols + 1);
        live_type(db, name, "x", got, sizeof got);
        CHECK(strcmp(got, "int32") == 0, "column_type %s", got);
    }
    /* a type moraine does not know: refused, naming it */
    {
        char name[32];
        table_of(db, "int32", name, sizeof name);
        moraine_tx *tx;
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        moraine_column_alter a = {.type = "int", .nulls_allowed = -1};
        CHECK_RC(moraine_tx_alter_column(tx, NULL, name, "x", &a), MORAINE_EINVAL);
        CHECK(strstr(moraine_errmsg(), "DuckLake cannot load the type \"int\"") != NULL, "%s", moraine_errmsg());
        moraine_tx_abort(tx);
    }
    /* types as DuckLake writes them (DuckLakeTypes::ToString): any spelling its
     * loader reads is stored in DuckLake's (lower case; timestamp_us is
     * timestamp), by create_table, add_column and alter_column, nested leaves
     * too; one its loader cannot read is refused and nothing is committed */
    {
        static const char *const spelt[][2] = {{"INT64", "int64"}, {"timestamp_us", "timestamp"}, {"VarChar", "varchar"},
                                               {"TIMESTAMPTZ", "timestamptz"}, {"Json", "json"}};
        for (size_t i = 0; i < sizeof spelt / sizeof spelt[0]; i++) {
            char name[32], got[64];
            table_of(db, spelt[i][0], name, sizeof name);
            live_type(db, name, "x", got, sizeof got);
            CHECK(strcmp(got, spelt[i][1]) == 0, "create_table %s: column_type %s, DuckLake writes %s", spelt[i][0], got, spelt[i][1]);
        }
        char name[32], got[64];
        table_of(db, "int16", name, sizeof name);
        moraine_tx *tx;
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        moraine_column_alter a = {.type = "INT32", .nulls_allowed = -1};
        CHECK_RC(moraine_tx_alter_column(tx, NULL, name, "x", &a), 0);
        moraine_column_def add[2] = {{.name = "y", .type = "FLOAT64"}, {.name = "z", .type = "list(UINT8)"}};
        CHECK_RC(moraine_tx_add_column(tx, NULL, name, &add[0]), 0);
        CHECK_RC(moraine_tx_add_column(tx, NULL, name, &add[1]), 0);
        CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        live_type(db, name, "x", got, sizeof got);
        CHECK(strcmp(got, "int32") == 0, "alter_column to INT32: column_type %s", got);
        live_type(db, name, "y", got, sizeof got);
        CHECK(strcmp(got, "float64") == 0, "add_column FLOAT64: column_type %s", got);
        live_type(db, name, "element", got, sizeof got);
        CHECK(strcmp(got, "uint8") == 0, "list(UINT8)'s element: column_type %s", got);
        static const char *const bad[] = {"bogus", "unknown", "varchar(10)", "list(int)", "struct(a bogus)", "decimal"};
        int64_t before = last_snap(db), cols = count_columns(db);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            CHECK_RC(moraine_tx_begin(db, &tx), 0);
            moraine_column_def d = {.name = "w", .type = bad[i]};
            int rc = moraine_tx_create_table(tx, NULL, "never", &d, 1, NULL);
            if (rc == 0) rc = moraine_tx_commit(tx, NULL);
            else moraine_tx_abort(tx);
            CHECK(rc == MORAINE_EINVAL, "create_table with type %s: rc %d (%s)", bad[i], rc, moraine_errmsg());
        }
        CHECK_INT(last_snap(db), before);
        CHECK_INT(count_columns(db), cols);
    }

    /* decimal(W,S): DuckDB's BindDecimalType, in every verb that takes a type */
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def base[2] = {{.name = "s", .type = "struct(a int32)"}, {.name = "d", .type = "decimal(18,2)"}};
    CHECK_RC(moraine_tx_create_table(tx, NULL, "base", base, 2, NULL), 0);
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
    type_refused(db, "decimal(40,2)", "DECIMAL type width must be between 1 and 38");
    type_refused(db, "decimal(0,0)", "DECIMAL type width must be between 1 and 38");
    type_refused(db, "decimal(99999999999999999999,2)", "DECIMAL type width must be between 1 and 38");
    type_refused(db, "decimal(-1,2)", "DECIMAL type width must be between 1 and 38");
    type_refused(db, "decimal(3,5)", "DECIMAL type scale cannot be greater than width");
    type_refused(db, "decimal(18,300)", "DECIMAL type scale must be between 0 and 38");
    type_refused(db, "list(decimal(40,2))", "DECIMAL type width must be between 1 and 38");
    type_refused(db, "struct(a decimal(3,5))", "DECIMAL type scale cannot be greater than width");
    type_refused(db, "map(varchar, decimal(0,0))", "DECIMAL type width must be between 1 and 38");
    /* not DuckLake's spelling (DuckLakeTypes::FromString reads "decimal(W,S)" only) */
    type_refused(db, "DECIMAL(18,2)", "not spelled as DuckLake writes it: decimal(18,2)");
    type_refused(db, "decimal(018,2)", "not spelled as DuckLake writes it: decimal(18,2)");
    type_refused(db, "decimal(18, 2)", "is not DuckLake's decimal(width,scale)");
    type_refused(db, "decimal(18)", "is not DuckLake's decimal(width,scale)");
    type_refused(db, "decimal", "is not DuckLake's decimal(width,scale)");
    /* the bounds themselves are DuckDB's: decimal(1,0), decimal(38,38) */
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def ok[2] = {{.name = "p", .type = "decimal(1,0)"}, {.name = "q", .type = "list(decimal(38,38))"}};
    CHECK_RC(moraine_tx_create_table(tx, NULL, "edges", ok, 2, NULL), 0);
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);

    moraine_close(db);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return check_done();
}
