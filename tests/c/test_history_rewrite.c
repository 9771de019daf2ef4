/*
 * test_history_rewrite.c — moraine_txn_delete_version, moraine_txn_delete_snapshot
 * and moraine_txn_insert_version (engine/history_rewrite.c): DuckLake's
 * merge_adjacent_files and expire_snapshots replayed on a small catalog, read
 * back at every snapshot, moraine_verify clean; and every refusal leaves the
 * catalog byte for byte as it was.
 */
#include "check.h"
#include "moraine.h"
#include <ftw.h>
#include <sys/stat.h>

static const char *const SNAP_COLS[] = {"snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id"};
static const char *const CHG_COLS[] = {"snapshot_id", "changes_made"};
static const char *const DF_COLS[] = {"data_file_id", "table_id", "begin_snapshot", "end_snapshot", "path"};
static const char *const ST_COLS[] = {"data_file_id", "table_id", "column_id", "min_value"};

static moraine_value vint(int64_t i) { return (moraine_value){.type = MORAINE_INT, .i = i}; }
static moraine_value vnull(void) { return (moraine_value){.type = MORAINE_NULL}; }
static moraine_value vstr(const char *s) { return (moraine_value){.type = MORAINE_STR, .s = s, .len = strlen(s)}; }

#define NO_END INT64_MIN

static void df_row(moraine_value r[5], int64_t id, int64_t begin, int64_t end, const char *path)
{
    r[0] = vint(id);
    r[1] = vint(1);
    r[2] = vint(begin);
    r[3] = end == NO_END ? vnull() : vint(end);
    r[4] = vstr(path);
}

static void st_row(moraine_value r[4], int64_t id, int64_t col, const char *min)
{
    r[0] = vint(id);
    r[1] = vint(1);
    r[2] = vint(col);
    r[3] = vstr(min);
}

static int snap(moraine_txn *t, int64_t id)
{
    moraine_value r[5] = {vint(id), vstr("2026-01-01 00:00:00+00"), vint(0), vint(1), vint(id * 10)};
    moraine_value c[2] = {vint(id), vstr("inserted_into_table:1")};
    int rc = moraine_txn_insert(t, "ducklake_snapshot", r, 5, -1);
    return rc ? rc : moraine_txn_insert(t, "ducklake_snapshot_changes", c, 2, -1);
}

static int add_file(moraine_txn *t, int64_t id, int64_t begin, const char *path)
{
    moraine_value r[5], s[4];
    df_row(r, id, begin, NO_END, path);
    int rc = moraine_txn_insert(t, "ducklake_data_file", r, 5, -1);
    st_row(s, id, 1, path);
    return rc ? rc : moraine_txn_insert(t, "ducklake_file_column_stats", s, 4, -1);
}

static int end_file(moraine_txn *t, int64_t id, int64_t begin)
{
    moraine_value r[5];
    df_row(r, id, begin, NO_END, "");
    return moraine_txn_end(t, "ducklake_data_file", r, 5);
}

/* Every version of every table, with its children, as text. */
static void dump(moraine_db *db, char *out, size_t n)
{
    size_t off = 0;
    out[0] = 0;
    moraine_read *rd;
    if (moraine_read_begin(db, &rd)) return;
    moraine_relation_info info;
    for (size_t i = 0; moraine_relation_at(db, i, &info) == 1 && off < n; i++) {
        moraine_cursor *cur;
        if (moraine_scan_open(rd, info.name, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cur)) continue;
        moraine_row row;
        while (moraine_cursor_next(cur, &row) == 1 && off < n) {
            off += (size_t)snprintf(out + off, n - off, "%s@%lld:", info.name, (long long)row.ord);
            for (size_t c = 0; c < row.ncols && off < n; c++) {
                const moraine_value *v = &row.vals[c];
                if (v->type == MORAINE_INT) off += (size_t)snprintf(out + off, n - off, "%lld,", (long long)v->i);
                else if (v->type == MORAINE_STR) off += (size_t)snprintf(out + off, n - off, "%.*s,", (int)v->len, v->s);
                else off += (size_t)snprintf(out + off, n - off, "-,");
            }
            moraine_children it;
            moraine_row_children(rd, &row, &it);
            moraine_row ch;
            while (moraine_children_next(&it, &ch) == 1 && off < n)
                off += (size_t)snprintf(out + off, n - off, "[%s %lld]", ch.rel->name,
                                        (long long)(ch.ncols > 2 ? ch.vals[2].i : ch.vals[0].i));
            moraine_children_free(&it);
            if (off < n) off += (size_t)snprintf(out + off, n - off, "\n");
        }
        moraine_cursor_close(cur);
    }
    moraine_read_end(rd);
}

/* The data file ids visible at @s, as "10,14," */
static void files_at(moraine_db *db, int64_t s, char *out, size_t n)
{
    size_t off = 0;
    out[0] = 0;
    moraine_read *rd;
    if (moraine_read_begin(db, &rd)) return;
    moraine_cursor *cur;
    if (moraine_scan_open(rd, "ducklake_data_file", 1, s, &cur) == 0) {
        moraine_row row;
        while (moraine_cursor_next(cur, &row) == 1 && off < n)
            off += (size_t)snprintf(out + off, n - off, "%lld,", (long long)row.vals[0].i);
    }
    moraine_read_end(rd);
}

static int snapshot_ids(moraine_db *db, char *out, size_t n)
{
    size_t off = 0;
    out[0] = 0;
    moraine_read *rd;
    int rc = moraine_read_begin(db, &rd);
    if (rc) return rc;
    moraine_cursor *cur;
    if ((rc = moraine_scan_open(rd, "ducklake_snapshot", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cur)) == 0) {
        moraine_row row;
        while (moraine_cursor_next(cur, &row) == 1 && off < n)
            off += (size_t)snprintf(out + off, n - off, "%lld,", (long long)row.vals[0].i);
    }
    moraine_read_end(rd);
    return rc;
}

static void report(void *ud, const char *key, const char *problem)
{
    (void)ud;
    check_note("verify: %s: %s", key, problem);
}

static char root[1024];
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Snapshots 1..4: files 10, 11 at 1; 11 ended and 12 added at 2; 13 at 3; 4 empty. */
static moraine_db *build(const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", root, name);
    moraine_db *db = NULL;
    moraine_options o = {.create = 1, .no_sync = 1};
    if (moraine_open(path, &o, &db)) return NULL;
    moraine_txn *t;
    int rc = moraine_txn_begin(db, 1, &t);
    if (!rc) rc = moraine_txn_define(t, "ducklake_snapshot", 5, SNAP_COLS);
    if (!rc) rc = moraine_txn_define(t, "ducklake_snapshot_changes", 2, CHG_COLS);
    if (!rc) rc = moraine_txn_define(t, "ducklake_data_file", 5, DF_COLS);
    if (!rc) rc = moraine_txn_define(t, "ducklake_file_column_stats", 4, ST_COLS);
    if (!rc) rc = snap(t, 1);
    if (!rc) rc = add_file(t, 10, 1, "f10");
    if (!rc) rc = add_file(t, 11, 1, "f11");
    if (!rc) rc = moraine_txn_commit(t);
    if (!rc && !(rc = moraine_txn_begin(db, 2, &t))) {
        rc = snap(t, 2);
        if (!rc) rc = end_file(t, 11, 1);
        if (!rc) rc = add_file(t, 12, 2, "f12");
        rc = rc ? rc : moraine_txn_commit(t);
    }
    if (!rc && !(rc = moraine_txn_begin(db, 3, &t))) {
        rc = snap(t, 3);
        if (!rc) rc = add_file(t, 13, 3, "f13");
        rc = rc ? rc : moraine_txn_commit(t);
    }
    if (!rc && !(rc = moraine_txn_begin(db, 4, &t))) {
        rc = snap(t, 4);
        rc = rc ? rc : moraine_txn_commit(t);
    }
    if (rc) {
        check_note("build: %s", moraine_errmsg());
        moraine_close(db);
        return NULL;
    }
    return db;
}

static char before[65536], after[65536];

/* @fn fails with @code inside a commit of @snapshot; the commit then fails
 * and the catalog is unchanged. */
typedef int (*op_fn)(moraine_txn *t);
static void refused(moraine_db *db, int64_t snapshot, op_fn fn, int code, const char *what)
{
    dump(db, before, sizeof before);
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, snapshot, &t), 0);
    int rc = fn(t);
    CHECK(rc == code, "%s: returned %s, expected %s (%s)", what, moraine_strerror(rc), moraine_strerror(code), moraine_errmsg());
    if (snapshot != MORAINE_NO_SNAPSHOT) snap(t, snapshot);
    CHECK(moraine_txn_commit(t) == code, "%s: the commit must fail with the call's error", what);
    dump(db, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "%s: the catalog changed", what);
}

static int op_delete_missing(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 99, 1, NO_END, "f99");
    return moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1);
}
static int op_delete_wrong_begin(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 12, 1, NO_END, "f12"); /* stored begin is 2 */
    return moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1);
}
static int op_delete_differs(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 12, 2, NO_END, "elsewhere");
    return moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1);
}
static int op_delete_wrong_end(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 11, 1, 3, "f11"); /* ended at 2 */
    return moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1);
}
static int op_delete_future(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 12, 7, NO_END, "f12");
    return moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1);
}
static int op_delete_child(moraine_txn *t)
{
    moraine_value s[4];
    st_row(s, 10, 1, "f10");
    return moraine_txn_delete_version(t, "ducklake_file_column_stats", s, 4, -1);
}
static int op_insert_future(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 20, 5, NO_END, "f20"); /* above the last snapshot 4 */
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, NULL, 0);
}
static int op_insert_end_future(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 20, 2, 6, "f20");
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, NULL, 0);
}
static int op_insert_end_before_begin(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 20, 3, 2, "f20");
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, NULL, 0);
}
static int op_insert_live_taken(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 10, 2, NO_END, "again");
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, NULL, 0);
}
static int op_insert_history_taken(moraine_txn *t)
{
    moraine_value r[5];
    df_row(r, 11, 1, 2, "f11");
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, NULL, 0);
}
static int op_insert_foreign_child(moraine_txn *t)
{
    moraine_value r[5], s[4];
    df_row(r, 20, 2, NO_END, "f20");
    st_row(s, 21, 1, "x"); /* the stats of file 21 */
    moraine_child_row c = {"ducklake_file_column_stats", s, 4, -1};
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, &c, 1);
}
static int op_insert_not_child(moraine_txn *t)
{
    moraine_value r[5], s[5];
    df_row(r, 20, 2, NO_END, "f20");
    df_row(s, 20, 2, NO_END, "f20");
    moraine_child_row c = {"ducklake_data_file", s, 5, -1};
    return moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, &c, 1);
}
static int op_snapshot_last(moraine_txn *t) { return moraine_txn_delete_snapshot(t, 4); }
static int op_snapshot_above(moraine_txn *t) { return moraine_txn_delete_snapshot(t, 9); }
static int op_snapshot_missing(moraine_txn *t)
{
    int rc = moraine_txn_delete_snapshot(t, 1);
    return rc ? rc : moraine_txn_delete_snapshot(t, 1); /* gone already */
}
static int op_after_staged(moraine_txn *t)
{
    int rc = add_file(t, 30, 5, "f30");
    if (rc) return rc;
    moraine_value r[5];
    df_row(r, 12, 2, NO_END, "f12");
    return moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1);
}

static void refusals(void)
{
    moraine_db *db = build("refusals");
    CHECK(db != NULL, "catalog built");
    if (!db) return;
    refused(db, 5, op_delete_missing, MORAINE_ENOTFOUND, "delete a file that does not exist");
    refused(db, 5, op_delete_wrong_begin, MORAINE_EINVAL, "delete with another begin_snapshot");
    refused(db, MORAINE_NO_SNAPSHOT, op_delete_differs, MORAINE_EINVAL, "delete a row differing from the stored one");
    refused(db, 5, op_delete_wrong_end, MORAINE_ENOTFOUND, "delete with another end_snapshot");
    refused(db, 5, op_delete_future, MORAINE_ESNAPSHOT, "delete with begin above the last snapshot");
    refused(db, 5, op_delete_child, MORAINE_EINVAL, "delete a child row on its own");
    refused(db, 5, op_insert_future, MORAINE_ESNAPSHOT, "insert with begin above the last snapshot");
    refused(db, MORAINE_NO_SNAPSHOT, op_insert_end_future, MORAINE_ESNAPSHOT, "insert with end above the last snapshot");
    refused(db, 5, op_insert_end_before_begin, MORAINE_ESNAPSHOT, "insert with end below begin");
    refused(db, 5, op_insert_live_taken, MORAINE_EEXIST, "insert a second live version of a key");
    refused(db, 5, op_insert_history_taken, MORAINE_EEXIST, "insert an ended version that exists");
    refused(db, 5, op_insert_foreign_child, MORAINE_EINVAL, "insert with a child of another file");
    refused(db, 5, op_insert_not_child, MORAINE_EINVAL, "insert with a child of another table");
    refused(db, 5, op_snapshot_last, MORAINE_ESNAPSHOT, "expire the last snapshot");
    refused(db, 5, op_snapshot_above, MORAINE_ESNAPSHOT, "expire a snapshot above the last");
    refused(db, MORAINE_NO_SNAPSHOT, op_snapshot_missing, MORAINE_ENOTFOUND, "expire a snapshot twice");
    refused(db, 5, op_after_staged, MORAINE_ETXN, "a rewrite after staged rows");
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);
    moraine_close(db);

    /* an empty catalog has no history */
    char path[1200];
    snprintf(path, sizeof path, "%s/empty", root);
    moraine_options o = {.create = 1, .no_sync = 1};
    CHECK_RC(moraine_open(path, &o, &db), 0);
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), 0);
    CHECK_RC(moraine_txn_define(t, "ducklake_snapshot", 5, SNAP_COLS), 0);
    CHECK_RC(moraine_txn_delete_snapshot(t, 0), MORAINE_ESNAPSHOT);
    moraine_txn_abort(t);
    moraine_close(db);
}

/* ducklake_merge_adjacent_files at snapshot 5: files 12 (begin 2) and 13
 * (begin 3) deleted outright, file 14 inserted with begin 2 and its stats. */
static void merge_adjacent(void)
{
    moraine_db *db = build("merge");
    CHECK(db != NULL, "catalog built");
    if (!db) return;
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, 5, &t), 0);
    moraine_value r[5], s[4], s2[4];
    df_row(r, 12, 2, NO_END, "f12");
    CHECK_RC(moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1), 0);
    df_row(r, 13, 3, NO_END, "f13");
    CHECK_RC(moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1), 0);
    df_row(r, 14, 2, NO_END, "f14");
    st_row(s, 14, 1, "m1");
    st_row(s2, 14, 2, "m2");
    moraine_child_row kids[2] = {{"ducklake_file_column_stats", s, 4, -1}, {"ducklake_file_column_stats", s2, 4, -1}};
    CHECK_RC(moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, kids, 2), 0);
    CHECK_RC(snap(t, 5), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    char got[256];
    static const char *const want[] = {"", "10,11,", "10,14,", "10,14,", "10,14,", "10,14,"};
    for (int64_t sid = 1; sid <= 5; sid++) {
        files_at(db, sid, got, sizeof got);
        CHECK(strcmp(got, want[sid]) == 0, "files at %lld: %s, expected %s", (long long)sid, got, want[sid]);
    }
    dump(db, after, sizeof after);
    CHECK(strstr(after, "ducklake_data_file@4:14,1,2,-,f14,[ducklake_file_column_stats 1][ducklake_file_column_stats 2]") != NULL,
          "file 14 with its two stats rows: %s", after);
    CHECK(strstr(after, "f12") == NULL && strstr(after, "f13") == NULL, "files 12 and 13 are gone");
    /* a later staged commit ends the inserted file as any live row */
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(snap(t, 6), 0);
    CHECK_RC(end_file(t, 14, 2), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    files_at(db, 6, got, sizeof got);
    CHECK(strcmp(got, "10,") == 0, "files at 6: %s", got);
    files_at(db, 5, got, sizeof got);
    CHECK(strcmp(got, "10,14,") == 0, "files at 5 after the end: %s", got);
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);
    moraine_close(db);
}

/* ducklake_expire_snapshots of snapshot 1, in a commit without a snapshot:
 * its row goes (with its changes), and file 11 (1..2), which only snapshot 1
 * saw, is deleted; an ended version is put back into history. */
static void expire(void)
{
    moraine_db *db = build("expire");
    CHECK(db != NULL, "catalog built");
    if (!db) return;
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), 0);
    CHECK_RC(moraine_txn_delete_snapshot(t, 1), 0);
    moraine_value r[5];
    df_row(r, 11, 1, 2, "f11");
    CHECK_RC(moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    char got[256];
    CHECK_RC(snapshot_ids(db, got, sizeof got), 0);
    CHECK(strcmp(got, "2,3,4,") == 0, "snapshots %s", got);
    files_at(db, 1, got, sizeof got);
    CHECK(strcmp(got, "10,") == 0, "files at 1: %s", got);
    dump(db, after, sizeof after);
    CHECK(strstr(after, "f11") == NULL, "file 11 is gone");
    CHECK(strstr(after, "inserted_into_table") != NULL, "the other snapshots keep their changes");
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);

    /* the reverse: the ended version and the snapshot row inserted back */
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), 0);
    df_row(r, 11, 1, 2, "f11");
    moraine_value s[4];
    st_row(s, 11, 1, "f11");
    moraine_child_row kid = {"ducklake_file_column_stats", s, 4, -1};
    CHECK_RC(moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, &kid, 1), 0);
    moraine_value sr[5] = {vint(1), vstr("2026-01-01 00:00:00+00"), vint(0), vint(1), vint(10)};
    moraine_value cr[2] = {vint(1), vstr("inserted_into_table:1")};
    moraine_child_row ck = {"ducklake_snapshot_changes", cr, 2, -1};
    CHECK_RC(moraine_txn_insert_version(t, "ducklake_snapshot", sr, 5, -1, &ck, 1), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    files_at(db, 1, got, sizeof got);
    CHECK(strcmp(got, "10,11,") == 0, "files at 1 again: %s", got);
    files_at(db, 2, got, sizeof got);
    CHECK(strcmp(got, "10,12,") == 0, "files at 2: %s", got);
    CHECK_RC(snapshot_ids(db, got, sizeof got), 0);
    CHECK(strcmp(got, "1,2,3,4,") == 0, "snapshots %s", got);
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);
    moraine_close(db);
}

/* A rewinding commit (moraine_txn_rewind), as moraine.push replaces its rebased
 * snapshots: at snapshot 7 over last 4, snapshots 3 and 4 (the last) are
 * deleted with file 13, snapshots 5 and 6 inserted below 7 with file 20
 * (begin 5, end 6), and 7 committed: snapshots 1,2,5,6,7 and a sound catalog. */
static void rewind_commit(void)
{
    moraine_db *db = build("rewind");
    CHECK(db != NULL, "catalog built");
    if (!db) return;
    moraine_txn *t;
    /* without a snapshot id there is nothing to rewind to */
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), 0);
    CHECK_RC(moraine_txn_rewind(t), MORAINE_EINVAL);
    moraine_txn_abort(t);
    /* after staged rows: too late */
    CHECK_RC(moraine_txn_begin(db, 7, &t), 0);
    CHECK_RC(snap(t, 7), 0);
    CHECK_RC(moraine_txn_rewind(t), MORAINE_ETXN);
    moraine_txn_abort(t);
    /* a rewind still cannot reach its own snapshot */
    CHECK_RC(moraine_txn_begin(db, 7, &t), 0);
    CHECK_RC(moraine_txn_rewind(t), 0);
    CHECK_RC(moraine_txn_delete_snapshot(t, 7), MORAINE_ESNAPSHOT);
    moraine_txn_abort(t);
    char ids[256];
    CHECK_RC(snapshot_ids(db, ids, sizeof ids), 0);
    CHECK(strcmp(ids, "1,2,3,4,") == 0, "%s, expected %s", ids, "1,2,3,4,");

    CHECK_RC(moraine_txn_begin(db, 7, &t), 0);
    CHECK_RC(moraine_txn_rewind(t), 0);
    moraine_value r[5], s[4], sn[5], ch[2];
    df_row(r, 13, 3, NO_END, "f13");
    CHECK_RC(moraine_txn_delete_version(t, "ducklake_data_file", r, 5, -1), 0);
    CHECK_RC(moraine_txn_delete_snapshot(t, 3), 0);
    CHECK_RC(moraine_txn_delete_snapshot(t, 4), 0);
    for (int64_t id = 5; id <= 6; id++) {
        sn[0] = vint(id), sn[1] = vstr("2026-01-02 00:00:00+00"), sn[2] = vint(0), sn[3] = vint(1), sn[4] = vint(id * 10);
        ch[0] = vint(id), ch[1] = vstr("inserted_into_table:1");
        moraine_child_row c = {"ducklake_snapshot_changes", ch, 2, -1};
        CHECK_RC(moraine_txn_insert_version(t, "ducklake_snapshot", sn, 5, -1, &c, 1), 0);
    }
    df_row(r, 20, 5, 6, "f20");
    st_row(s, 20, 1, "f20");
    moraine_child_row c = {"ducklake_file_column_stats", s, 4, -1};
    CHECK_RC(moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, &c, 1), 0);
    CHECK_RC(snap(t, 7), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    CHECK_RC(snapshot_ids(db, ids, sizeof ids), 0);
    CHECK(strcmp(ids, "1,2,5,6,7,") == 0, "%s, expected %s", ids, "1,2,5,6,7,");
    int64_t last = 0;
    CHECK(moraine_last_snapshot(db, &last) == 1, "the catalog has a last snapshot");
    CHECK_INT(last, 7);
    char files[256];
    files_at(db, 5, files, sizeof files);
    CHECK(strcmp(files, "10,12,20,") == 0, "%s, expected %s", files, "10,12,20,");
    files_at(db, 7, files, sizeof files);
    CHECK(strcmp(files, "10,12,") == 0, "%s, expected %s", files, "10,12,");
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);
    moraine_close(db);
}

/* A new row's key lookup remembers the gap of stored keys after it
 * (mr_txn_has_key), so the next new rows of the commit need no lookup. The
 * gap ends at the next stored key: with a live file 31 put by a history
 * rewrite (which comes first in a commit), inserting file 30 and then another
 * live file 31 is EEXIST, not an overwrite; keys before the gap are looked up. */
static void gap_after_rewrite(void)
{
    moraine_db *db = build("gap");
    CHECK(db != NULL, "catalog built");
    if (!db) return;
    dump(db, before, sizeof before);
    moraine_txn *t;
    moraine_value r[5];
    CHECK_RC(moraine_txn_begin(db, 5, &t), 0);
    df_row(r, 31, 4, NO_END, "f31-version");
    CHECK_RC(moraine_txn_insert_version(t, "ducklake_data_file", r, 5, -1, NULL, 0), 0);
    CHECK_RC(snap(t, 5), 0);
    df_row(r, 30, 5, NO_END, "f30");
    CHECK_RC(moraine_txn_insert(t, "ducklake_data_file", r, 5, -1), 0);
    df_row(r, 31, 5, NO_END, "f31");
    CHECK_RC(moraine_txn_insert(t, "ducklake_data_file", r, 5, -1), MORAINE_EEXIST);
    moraine_txn_abort(t);
    dump(db, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "the refused commit left the catalog as it was");
    /* and with no rewrite between, the rows after the first take the gap */
    CHECK_RC(moraine_txn_begin(db, 5, &t), 0);
    CHECK_RC(snap(t, 5), 0);
    for (int64_t id = 30; id < 40; id++) {
        df_row(r, id, 5, NO_END, "f3x");
        CHECK_RC(moraine_txn_insert(t, "ducklake_data_file", r, 5, -1), 0);
    }
    df_row(r, 12, 5, NO_END, "f12 again"); /* stored and live: before the gap */
    CHECK_RC(moraine_txn_insert(t, "ducklake_data_file", r, 5, -1), MORAINE_EEXIST);
    moraine_txn_abort(t);
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);
    moraine_close(db);
}

/* Randomized, the same rule: tables 1 and 2 hold live files at random ids
 * among 100..299 (a quarter of them ended again, so only history has their
 * key), then commits insert runs of ids in random order, mostly ascending as
 * a commit's new files are: each insert is EEXIST exactly when the id is live
 * in its table (stored, or inserted before in the same commit), else 0. The
 * gap of mr_txn_has_key must never answer absent for a stored live key. */
static void gap_random(void)
{
    enum { LO = 100, N = 200 };
    moraine_db *db = build("gaprandom");
    CHECK(db != NULL, "catalog built");
    if (!db) return;
    static unsigned char live[3][N];
    memset(live, 0, sizeof live);
    moraine_txn *t;
    moraine_value r[5];
    int rc = moraine_txn_begin(db, 5, &t);
    if (!rc) rc = snap(t, 5);
    for (int64_t tb = 1; tb <= 2 && !rc; tb++)
        for (int i = 0; i < N && !rc; i++)
            if (check_below(3) == 0) {
                df_row(r, LO + i, 5, NO_END, "stored");
                r[1] = vint(tb);
                rc = moraine_txn_insert(t, "ducklake_data_file", r, 5, -1);
                live[tb][i] = 1;
            }
    if (!rc) rc = moraine_txn_commit(t);
    CHECK_RC(rc, 0);
    rc = moraine_txn_begin(db, 6, &t);
    if (!rc) rc = snap(t, 6);
    for (int64_t tb = 1; tb <= 2 && !rc; tb++)
        for (int i = 0; i < N && !rc; i++)
            if (live[tb][i] && check_below(4) == 0) {
                df_row(r, LO + i, 5, NO_END, "stored");
                r[1] = vint(tb);
                rc = moraine_txn_end(t, "ducklake_data_file", r, 5);
                live[tb][i] = 0;
            }
    if (!rc) rc = moraine_txn_commit(t);
    CHECK_RC(rc, 0);
    int inserts = 0, refused = 0;
    for (int round = 0; round < 300; round++) {
        unsigned char pending[3][N];
        memset(pending, 0, sizeof pending);
        CHECK_RC(moraine_txn_begin(db, 7, &t), 0);
        CHECK_RC(snap(t, 7), 0);
        int64_t tb = 1 + (int64_t)check_below(2);
        int i = (int)check_below(N);
        for (int step = 0; step < 60; step++) {
            if (check_below(8) == 0) { /* a jump: another table or place */
                tb = 1 + (int64_t)check_below(2);
                i = (int)check_below(N);
            }
            int expect = live[tb][i] || pending[tb][i];
            df_row(r, LO + i, 7, NO_END, "new");
            r[1] = vint(tb);
            rc = moraine_txn_insert(t, "ducklake_data_file", r, 5, -1);
            inserts++;
            if (expect) {
                CHECK(rc == MORAINE_EEXIST, "round %d: file %d of table %lld is live: EEXIST, got %d", round, LO + i, (long long)tb, rc);
                refused++;
                break;
            }
            CHECK(rc == 0, "round %d: file %d of table %lld is not live: 0, got %d (%s)", round, LO + i, (long long)tb, rc, moraine_errmsg());
            if (rc) break;
            pending[tb][i] = 1;
            i += 1 + (int)check_below(3);
            if (i >= N) i = (int)check_below(N);
        }
        moraine_txn_abort(t);
    }
    check_note("gap_random: %d inserts, %d refused as live", inserts, refused);
    CHECK(refused > 50, "the rounds met live keys (%d)", refused);
    CHECK_INT(moraine_verify(db, report, NULL, NULL, NULL), 0);
    moraine_close(db);
}

int main(void)
{
    if (!check_mkdtemp(root, sizeof root, "moraine_history_rewrite")) {
        perror("mkdtemp");
        return 1;
    }
    refusals();
    merge_adjacent();
    expire();
    rewind_commit();
    gap_after_rewrite();
    check_seed("test_history_rewrite");
    gap_random();
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_done();
}
