/*
 * test_nested_types.c — nested column types through the C API
 * (moraine_column_def.type "struct(...)", "list(T)", "map(K, V)";
 * engine/coltype.c): the ducklake_column rows create_table writes, and type
 * texts a caller could get wrong or craft (deep nesting, unclosed quotes,
 * trailing text) refused with EINVAL and nothing written. The rows follow
 * DuckLake's DuckLakeFieldId::FieldIdFromType and ConvertColumn
 * (docs/verbs.md; spec/nested_types_spec.lua checks the same through Lua).
 */
#include "check.h"
#include "moraine.h"

/* The row of ducklake_column with column_id @id visible at snapshot @snap,
 * as "name|type|parent|nulls_allowed|default_value_type" into @out; 0 when
 * there is none. */
static int column_shape(moraine_db *db, int64_t snap, int64_t id, char *out, size_t n)
{
    moraine_read *rd;
    moraine_cursor *c;
    moraine_row row;
    int found = 0;
    out[0] = 0;
    if (moraine_read_begin(db, &rd)) return 0;
    if (moraine_scan_open(rd, "ducklake_column", MORAINE_ANY_SCOPE, snap, &c) == 0) {
        while (!found && moraine_cursor_next(c, &row) == 1) {
            int ii = moraine_column_index(row.rel, "column_id"), in = moraine_column_index(row.rel, "column_name");
            int it = moraine_column_index(row.rel, "column_type"), ip = moraine_column_index(row.rel, "parent_column");
            int inl = moraine_column_index(row.rel, "nulls_allowed"), idt = moraine_column_index(row.rel, "default_value_type");
            if (row.vals[ii].i != id) continue;
            char parent[24] = "null";
            if (row.vals[ip].type == MORAINE_INT) snprintf(parent, sizeof parent, "%" PRId64, row.vals[ip].i);
            snprintf(out, n, "%.*s|%.*s|%s|%s|%.*s", (int)row.vals[in].len, row.vals[in].s, (int)row.vals[it].len, row.vals[it].s, parent,
                     row.vals[inl].type == MORAINE_BOOL && row.vals[inl].i ? "true" : "false", (int)row.vals[idt].len, row.vals[idt].s);
            found = 1;
        }
        moraine_cursor_close(c);
    }
    moraine_read_end(rd);
    return found;
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

static void shape_is(moraine_db *db, int64_t snap, int64_t id, const char *want)
{
    char got[512];
    column_shape(db, snap, id, got, sizeof got);
    CHECK(strcmp(got, want) == 0, "column %" PRId64 ": got \"%s\", want \"%s\"", id, got, want);
}

/* A type text of @depth nested lists around int32, or one whose innermost
 * part is @tail. The caller frees it. */
static char *deep_list(size_t depth, const char *tail)
{
    size_t n = depth * 6 + strlen(tail) + 1;
    char *s = malloc(n), *p = s;
    if (!s) return NULL;
    for (size_t i = 0; i < depth; i++) p += sprintf(p, "list(");
    p += sprintf(p, "%s", tail);
    for (size_t i = 0; i < depth; i++) *p++ = ')';
    *p = 0;
    return s;
}

int main(void)
{
    char dir[4096];
    CHECK(check_mkdtemp(dir, sizeof dir, "nested_types") != NULL, "mkdtemp");
    moraine_db *db;
    CHECK_RC(moraine_open(dir, NULL, &db), 0);
    CHECK_RC(moraine_init(db, "data/"), 0);

    /* CREATE TABLE t(s STRUCT(a INTEGER, "b c" VARCHAR), l BIGINT[] NOT NULL, m MAP(VARCHAR, INTEGER[])) */
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def cols[3] = {
        {.name = "s", .type = "struct(a int32, \"b \"\"c\"\"\" varchar)"},
        {.name = "l", .type = "list(int64)", .not_null = 1},
        {.name = "m", .type = " MAP ( varchar , list( int32 ) ) "},
    };
    CHECK_RC(moraine_tx_create_table(tx, NULL, "t", cols, 3, NULL), 0);
    int64_t snap = -1;
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    CHECK_INT(snap, 1);
    shape_is(db, snap, 1, "s|struct|null|true|");
    shape_is(db, snap, 2, "a|int32|1|true|literal");
    shape_is(db, snap, 3, "b \"c\"|varchar|1|true|literal");
    shape_is(db, snap, 4, "l|list|null|false|");
    shape_is(db, snap, 5, "element|int64|4|true|literal");
    shape_is(db, snap, 6, "m|map|null|true|");
    shape_is(db, snap, 7, "key|varchar|6|true|literal");
    shape_is(db, snap, 8, "value|list|6|true|");
    shape_is(db, snap, 9, "element|int32|8|true|literal");
    int64_t rows = count_columns(db);
    CHECK_INT(rows, 9);

    /* type texts refused: EINVAL, nothing written, the transaction usable */
    char *deep = deep_list(100000, "int32"), *open_deep = deep_list(1, "");
    char *long_name = malloc(70000);
    if (long_name) {
        memcpy(long_name, "struct(", 7);
        memset(long_name + 7, 'n', 65536);
        strcpy(long_name + 7 + 65536, " int32)");
    }
    const char *bad[] = {
        "struct()", "struct(a int32, A int32)", "struct", "list", "map(int32)", "list(int32, int32)", "struct(a int32",
        "struct(\"a int32)", "struct(\"\" int32)", "list(decimal(18,2)", "list(int32))", "list(int32) x", "struct(a)", "struct(1 int32)",
        deep ? deep : "list", open_deep ? open_deep : "list",
    };
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        moraine_column_def d = {.name = "x", .type = bad[i]};
        int rc = moraine_tx_add_column(tx, NULL, "t", &d);
        CHECK(rc == MORAINE_EINVAL, "add_column type %.40s: rc %d (%s)", bad[i], rc, moraine_errmsg());
        rc = moraine_tx_create_table(tx, NULL, "u", &d, 1, NULL);
        CHECK(rc == MORAINE_EINVAL, "create_table type %.40s: rc %d (%s)", bad[i], rc, moraine_errmsg());
    }
    moraine_column_def dflt = {.name = "x", .type = "map(int32, int32)", .default_value = "1"};
    CHECK_RC(moraine_tx_add_column(tx, NULL, "t", &dflt), MORAINE_EINVAL);
    CHECK(strstr(moraine_errmsg(), "Default value for MAP type not supported") != NULL, "%s", moraine_errmsg());
    /* a long field name is a name like any other */
    moraine_column_def longd = {.name = "y", .type = long_name ? long_name : "struct(n int32)"};
    CHECK_RC(moraine_tx_add_column(tx, NULL, "t", &longd), 0);
    /* a field of a nested type under s */
    const char *path[1] = {"S"};
    moraine_column_def f = {.name = "f", .type = "list(struct(p int32))"};
    CHECK_RC(moraine_tx_add_field(tx, NULL, "t", path, 1, &f), 0);
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    CHECK_INT(snap, 2);
    shape_is(db, snap, 10, "y|struct|null|true|");
    shape_is(db, snap, 12, "f|list|1|false|literal");
    shape_is(db, snap, 13, "element|struct|12|false|literal");
    shape_is(db, snap, 14, "p|int32|13|false|literal");
    CHECK_INT(count_columns(db), rows + 5);

    /* DROP COLUMN m: its rows end, the others stay */
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    CHECK_RC(moraine_tx_drop_column(tx, NULL, "t", "m"), 0);
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    char got[512];
    for (int64_t id = 6; id <= 9; id++) CHECK(!column_shape(db, snap, id, got, sizeof got), "column %" PRId64 " ended", id);
    shape_is(db, snap, 5, "element|int64|4|true|literal");

    free(deep);
    free(open_deep);
    free(long_name);
    moraine_close(db);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return check_done();
}
