/*
 * test_ident.c — DuckDB's identifier rules (engine/ident.c): case-insensitive
 * equality, the quoting DuckDB's KeywordHelper::WriteOptionallyQuoted applies
 * (the expected texts are what DuckLake stored in the corpus,
 * tests/fixtures/ducklake/corpus: "day", "year", "select", "1st", "a""b",
 * "naïve col", "x-y5", camelCase, Group38), and the verbs' lookups.
 */
#include "moraine.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static void render_is(const char *name, const char *want)
{
    char buf[64];
    size_t need = moraine_ident_render(name, buf, sizeof buf);
    CHECK(strcmp(buf, want) == 0, "render(%s) = %s, want %s", name, buf, want);
    CHECK_INT((long long)need, (long long)strlen(want));
}

int main(void)
{
    render_is("camelCase", "camelCase");
    render_is("Group38", "Group38");
    render_is("day", "\"day\"");
    render_is("YEAR", "\"YEAR\"");
    render_is("select", "\"select\"");
    render_is("1st", "\"1st\"");
    render_is("a\"b", "\"a\"\"b\"");
    render_is("na\xc3\xafve col", "\"na\xc3\xafve col\"");
    render_is("x-y5", "\"x-y5\"");
    render_is("", "\"\"");
    CHECK(moraine_ident_is_keyword("Coalesce"), "COALESCE is a column-name keyword");
    CHECK(!moraine_ident_is_keyword("abs"), "abs is no keyword");
    char tiny[4];
    CHECK_INT((long long)moraine_ident_render("My Col", tiny, sizeof tiny), 8);
    CHECK(strcmp(tiny, "\"My") == 0, "truncated and NUL-terminated: %s", tiny);

    /* the verbs look names up as DuckDB does */
    char dir[4096];
    CHECK(check_mkdtemp(dir, sizeof dir, "ident") != NULL, "mkdtemp");
    moraine_db *db;
    CHECK_RC(moraine_open(dir, NULL, &db), 0);
    CHECK_RC(moraine_init(db, "data/"), 0);
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def cols[2] = {{.name = "MyCase", .type = "int64"}, {.name = "My Col", .type = "int32"}};
    CHECK_RC(moraine_tx_create_table(tx, NULL, "Events", cols, 2, NULL), 0);
    moraine_column_def dup[2] = {{.name = "X", .type = "int64"}, {.name = "x", .type = "int64"}};
    CHECK_RC(moraine_tx_create_table(tx, NULL, "other", dup, 2, NULL), MORAINE_EINVAL);
    CHECK_RC(moraine_tx_create_table(tx, NULL, "EVENTS", cols, 1, NULL), MORAINE_EEXIST);
    moraine_column_def nc = {.name = "MYCASE", .type = "int64"};
    CHECK_RC(moraine_tx_add_column(tx, NULL, "events", &nc), MORAINE_EEXIST);
    moraine_sort_key key = {.expression = "\"My Col\""};
    CHECK_RC(moraine_tx_set_sorting(tx, NULL, "events", &key, 1), 0);
    CHECK_RC(moraine_tx_drop_column(tx, NULL, "events", "my col"), MORAINE_EINVAL);
    CHECK_RC(moraine_tx_rename_column(tx, NULL, "events", "my col", "Your Col", NULL, 0), 0);
    CHECK_RC(moraine_tx_rename_column(tx, NULL, "EVENTS", "mycase", "MyCase2", NULL, 0), 0);
    int64_t snap = -1;
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    CHECK_INT(snap, 1);
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_cursor *c;
    moraine_row row;
    CHECK_RC(moraine_scan_open(rd, "ducklake_sort_expression", MORAINE_ANY_SCOPE, 1, &c), 0);
    int n = 0;
    while (moraine_cursor_next(c, &row) == 1) {
        int ie = moraine_column_index(row.rel, "expression");
        CHECK(ie >= 0 && row.vals[ie].type == MORAINE_STR && row.vals[ie].len == 10 && memcmp(row.vals[ie].s, "\"Your Col\"", 10) == 0,
              "the renamed sort key is written as DuckDB renders it");
        n++;
    }
    moraine_cursor_close(c);
    CHECK_INT(n, 1);
    moraine_read_end(rd);
    moraine_close(db);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return check_done();
}
