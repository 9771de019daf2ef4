/*
 * test_sqlite_import.c — moraine_import_sqlite through moraine.h: a small
 * DuckLake catalog made in SQLite with the sqlite3 C API, imported; the
 * values as moraine.sync reads them (int64 limits, NULL and '', BOOLEAN 0/1,
 * REALs, a BLOB, a NUL byte), every row at position rowid - 1 (gaps left by
 * DELETEs kept), an empty table defined with its columns, the temporary
 * directory gone; what it does not take (1: tables other than the ones given,
 * a string that is not UTF-8, an infinite REAL, a file that is not SQLite)
 * leaving the catalog empty; cancellation; refusals (NULL arguments, a
 * catalog that is not empty, a temporary directory that exists).
 * spec/sqlite_fast_spec.lua compares whole fixtures with moraine.sync's import.
 */
#include "check.h"
#include "moraine.h"

#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[1024];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static const char *SCHEMA =
    "CREATE TABLE ducklake_metadata(key VARCHAR NOT NULL, value VARCHAR NOT NULL, scope VARCHAR, scope_id BIGINT);"
    "CREATE TABLE ducklake_snapshot(snapshot_id BIGINT PRIMARY KEY, snapshot_time TIMESTAMPTZ, schema_version BIGINT,"
    " next_catalog_id BIGINT, next_file_id BIGINT);"
    "CREATE TABLE ducklake_schema(schema_id BIGINT PRIMARY KEY, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT,"
    " schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN);"
    "CREATE TABLE ducklake_tag(object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR);"
    "CREATE TABLE ducklake_x_empty(a BIGINT, b VARCHAR);"
    "INSERT INTO ducklake_metadata VALUES ('version', '1.1-dev1', NULL, NULL);"
    "INSERT INTO ducklake_snapshot VALUES (0, '2025-01-01', 0, 1, 0), (2, '2025-01-02', 1, 1, 0);"
    "INSERT INTO ducklake_schema VALUES (0, 'u', 0, NULL, 'main', 'main/', 1);"
    "INSERT INTO ducklake_tag VALUES (1, 0, NULL, 'gone', 'x');"
    "INSERT INTO ducklake_tag VALUES (9223372036854775807, 0, 2, '', NULL), (-9223372036854775808, 2, NULL, 'k', 'nul' || char(0) || 'b');"
    "DELETE FROM ducklake_tag WHERE rowid = 1;"
    "INSERT INTO ducklake_tag VALUES (3, 2, NULL, 'blob', X'616263');";

static const char *const C_META[] = {"key", "value", "scope", "scope_id"};
static const char *const C_SNAP[] = {"snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id"};
static const char *const C_SCHEMA[] = {"schema_id", "schema_uuid", "begin_snapshot", "end_snapshot", "schema_name", "path", "path_is_relative"};
static const char *const C_TAG[] = {"object_id", "begin_snapshot", "end_snapshot", "key", "value"};
static const char *const C_EMPTY[] = {"a", "b"};
static const unsigned char B_SCHEMA[] = {0, 0, 0, 0, 0, 0, 1};

/* the file's tables, in name order */
static const moraine_sqlite_table TABLES[] = {
    {"ducklake_metadata", 4, C_META, NULL},  {"ducklake_schema", 7, C_SCHEMA, B_SCHEMA}, {"ducklake_snapshot", 5, C_SNAP, NULL},
    {"ducklake_tag", 5, C_TAG, NULL},        {"ducklake_x_empty", 2, C_EMPTY, NULL},
};
#define NTABLES (sizeof TABLES / sizeof TABLES[0])

static void make_file(const char *path, const char *extra)
{
    sqlite3 *sq;
    unlink(path);
    CHECK_INT(sqlite3_open(path, &sq), SQLITE_OK);
    char *err = NULL;
    CHECK(sqlite3_exec(sq, SCHEMA, NULL, NULL, &err) == SQLITE_OK, "%s", err ? err : "");
    sqlite3_free(err);
    if (extra) CHECK(sqlite3_exec(sq, extra, NULL, NULL, NULL) == SQLITE_OK, "extra SQL");
    sqlite3_close(sq);
}

static moraine_db *open_new(const char *name)
{
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", root, name);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(p, &o, &db), 0);
    return db;
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* the catalog has no snapshot and no relation */
static int empty(moraine_db *db)
{
    int64_t last;
    moraine_relation_info ri;
    return moraine_last_snapshot(db, &last) == 0 && moraine_relation_at(db, 0, &ri) == 0;
}

static int cancel_at(void *ud, uint64_t done, uint64_t total)
{
    (void)done;
    int phase = *(int *)ud;
    return phase == 1 ? 1 : total != 0;
}

int main(void)
{
    check_seed("test_sqlite_import");
    if (!check_mkdtemp(root, sizeof root, "moraine-sqlite-import")) return 1;
    char file[2048], tmp[2048];
    snprintf(file, sizeof file, "%s/cat.sqlite", root);
    snprintf(tmp, sizeof tmp, "%s/tmp", root);
    make_file(file, NULL);

    /* the import, and what it holds */
    moraine_db *db = open_new("a");
    uint64_t commits = 0;
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, NULL, NULL, &commits), 0);
    CHECK_INT(commits, 2);
    CHECK(!exists(tmp), "the temporary directory is removed");
    int64_t last = -1;
    CHECK_RC(moraine_last_snapshot(db, &last), 1);
    CHECK_INT(last, 2);
    /* every table defined in the file's order, with its columns (the empty one too) */
    size_t nrels = 0;
    moraine_relation_info ri;
    while (moraine_relation_at(db, nrels, &ri) == 1) {
        if (nrels < NTABLES) {
            CHECK(strcmp(ri.name, TABLES[nrels].name) == 0, "relation %zu is %s, not %s", nrels, ri.name, TABLES[nrels].name);
            CHECK_INT(ri.ncols, TABLES[nrels].ncols);
        }
        nrels++;
    }
    CHECK_INT(nrels, NTABLES);
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_cursor *c;
    moraine_row row;
    int n = 0, seen_max = 0, seen_min = 0, seen_blob = 0;
    CHECK_RC(moraine_scan_open(rd, "ducklake_tag", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    while (moraine_cursor_next(c, &row) == 1) {
        n++;
        int64_t id = row.vals[0].i;
        if (id == INT64_MAX) {
            seen_max = 1;
            CHECK_INT(row.ord, 1); /* rowid 2: the DELETE of rowid 1 leaves its gap */
            CHECK(row.vals[3].type == MORAINE_STR && row.vals[3].len == 0, "'' stays an empty string");
            CHECK(row.vals[4].type == MORAINE_NULL, "NULL stays NULL");
            CHECK(row.vals[2].type == MORAINE_INT && row.vals[2].i == 2, "ended at 2");
        } else if (id == INT64_MIN) {
            seen_min = 1;
            CHECK_INT(row.ord, 2);
            CHECK(row.vals[4].type == MORAINE_STR && row.vals[4].len == 5 && memcmp(row.vals[4].s, "nul\0b", 5) == 0, "a NUL byte kept");
        } else if (id == 3) {
            seen_blob = 1;
            CHECK_INT(row.ord, 3);
            CHECK(row.vals[4].type == MORAINE_STR && row.vals[4].len == 3 && memcmp(row.vals[4].s, "abc", 3) == 0, "a BLOB is its bytes");
        }
    }
    moraine_cursor_close(c);
    CHECK_INT(n, 3);
    CHECK(seen_max && seen_min && seen_blob, "the three tags");
    CHECK_RC(moraine_scan_open(rd, "ducklake_schema", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    CHECK(row.vals[6].type == MORAINE_BOOL && row.vals[6].i == 1, "a BOOLEAN column's 1 is true");
    moraine_cursor_close(c);
    moraine_read_end(rd);
    /* not empty now */
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), MORAINE_EEXIST);
    CHECK_RC(moraine_import_sqlite(NULL, file, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), MORAINE_EINVAL);
    CHECK_RC(moraine_import_sqlite(db, file, NULL, TABLES, NTABLES, 0, NULL, NULL, NULL), MORAINE_EINVAL);
    moraine_close(db);

    /* not taken: 1, nothing written, no temporary directory */
    db = open_new("b");
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES - 1, 0, NULL, NULL, NULL), 1); /* a table left out */
    CHECK(empty(db) && !exists(tmp), "nothing of it");
    char notdb[2048];
    snprintf(notdb, sizeof notdb, "%s/not.sqlite", root);
    FILE *f = fopen(notdb, "wb");
    if (f) {
        fputs("hello, this is not a database file at all, not even close", f);
        fclose(f);
    }
    CHECK_RC(moraine_import_sqlite(db, notdb, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), 1);
    CHECK(empty(db) && !exists(tmp), "nothing of it");
    make_file(file, "INSERT INTO ducklake_tag VALUES (4, 2, NULL, 'bad', CAST(X'ff' AS TEXT));");
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), 1);
    CHECK(empty(db) && !exists(tmp), "nothing of it");
    /* (a REAL in a column of TEXT affinity would be stored as the text "Inf") */
    make_file(file, "INSERT INTO ducklake_tag VALUES (9e999, 2, NULL, 'inf', 'x');");
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), 1);
    CHECK(empty(db) && !exists(tmp), "nothing of it");

    /* a temporary directory that exists is refused, and kept */
    make_file(file, NULL);
    mkdir(tmp, 0700);
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), MORAINE_EIO);
    CHECK(empty(db) && exists(tmp), "refused, the directory kept");
    rmdir(tmp);

    /* cancelled while reading, then while replaying */
    for (int phase = 1; phase <= 2; phase++) {
        CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, cancel_at, &phase, NULL), MORAINE_EINVAL);
        CHECK(strstr(moraine_errmsg(), "import cancelled") != NULL, "%s", moraine_errmsg());
        CHECK(empty(db) && !exists(tmp), "nothing of it (phase %d)", phase);
    }
    /* and it imports afterwards */
    CHECK_RC(moraine_import_sqlite(db, file, tmp, TABLES, NTABLES, 0, NULL, NULL, NULL), 0);
    moraine_close(db);

    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_done();
}
