/*
 * test_read_snapshot — moraine_read_snapshot (one ducklake_snapshot row by
 * its key) on the s2_multi_table fixture:
 *
 *  - every snapshot row a scan of ducklake_snapshot returns (every version,
 *    MORAINE_ALL_VERSIONS) is what the lookup of its snapshot_id returns:
 *    the same columns with the same values, the same stored bytes and the
 *    same embedded ducklake_snapshot_changes; with moraine_read_last_snapshot
 *    it is the newest row, as DuckLake's ATTACH reads it;
 *  - ids with no row answer 0: above the newest, negative, INT64_MIN/MAX, and
 *    an id whose row was expired (moraine_txn_delete_snapshot) while the rows
 *    around it stay, any id in a catalog without the ducklake_snapshot table;
 *    NULL arguments are MORAINE_EINVAL;
 *  - a damaged value: one byte of a snapshot row's cells changed in the LMDB
 *    file (not through the engine) makes the lookup fail with
 *    MORAINE_ECORRUPT naming the checksum, as the scan does; the other
 *    snapshot rows still read.
 */
#include "check.h"
#include "internal.h"
#include <fcntl.h>
#include <string.h>

static int same_value(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case MORAINE_NULL: return 1;
    case MORAINE_INT:
    case MORAINE_BOOL: return a->i == b->i;
    case MORAINE_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    default: return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    }
}

/* The children of @row as "rel:ncols:cells..." text, for comparing two rows'
 * embedded children by value. */
static void children_text(moraine_read *rd, const moraine_row *row, char *out, size_t n)
{
    moraine_children it;
    moraine_row k;
    size_t len = 0;
    out[0] = 0;
    moraine_row_children(rd, row, &it);
    int rc;
    while ((rc = moraine_children_next(&it, &k)) == 1) {
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s:%zu", k.rel->name, k.ncols);
        for (size_t c = 0; c < k.ncols && len < n; c++) {
            const moraine_value *v = &k.vals[c];
            if (v->type == MORAINE_INT) len += (size_t)snprintf(out + len, n - len, ",%lld", (long long)v->i);
            else if (v->type == MORAINE_STR || v->type == MORAINE_JSON)
                len += (size_t)snprintf(out + len, n - len, ",'%.*s'", (int)v->len, v->s);
            else len += (size_t)snprintf(out + len, n - len, ",t%d", (int)v->type);
        }
        if (len < n) len += (size_t)snprintf(out + len, n - len, ";");
    }
    if (rc < 0) snprintf(out, n, "ERROR %d", rc);
    moraine_children_free(&it);
}

static int snap_id(const moraine_row *r)
{
    int c = moraine_column_index(r->rel, "snapshot_id");
    return c >= 0 && r->vals[c].type == MORAINE_INT ? (int)r->vals[c].i : -1;
}

int main(void)
{
    check_seed("test_read_snapshot");
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures/ducklake";
    char src[4096], tmpl[1024];
    snprintf(src, sizeof src, "%s/s2_multi_table/catalog", fx);
    char *dir = check_mkdtemp(tmpl, sizeof tmpl, "moraine-read-snapshot");
    CHECK(dir != NULL, "mkdtemp");
    if (!dir) return check_done();
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_RC(moraine_import_ndjson(db, src, NULL, NULL), 0);

    /* 1. the lookup agrees with the scan, row by row */
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    int64_t last = -1;
    CHECK_RC(moraine_read_last_snapshot(rd, &last), 1);
    moraine_cursor *cu;
    CHECK_RC(moraine_scan_open(rd, "ducklake_snapshot", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cu), 0);
    moraine_row s, l;
    int rc, rows = 0, agree = 0, with_changes = 0, saw_last = 0;
    static char ks[8192], kl[8192];
    while ((rc = moraine_cursor_next(cu, &s)) == 1) {
        rows++;
        int id = snap_id(&s);
        int got = moraine_read_snapshot(rd, id, &l);
        CHECK(got == 1, "snapshot %d: lookup returned %d (%s)", id, got, moraine_errmsg());
        if (got != 1) continue;
        int ok = l.rel == s.rel && l.ncols == s.ncols && l.ord == s.ord && l.raw_len == s.raw_len &&
                 memcmp(l.raw, s.raw, s.raw_len) == 0 && l.children_len == s.children_len;
        for (size_t c = 0; ok && c < s.ncols; c++) ok = same_value(&l.vals[c], &s.vals[c]);
        children_text(rd, &s, ks, sizeof ks);
        children_text(rd, &l, kl, sizeof kl);
        ok = ok && strcmp(ks, kl) == 0 && strncmp(ks, "ERROR", 5) != 0;
        if (strstr(kl, "ducklake_snapshot_changes")) with_changes++;
        CHECK(ok, "snapshot %d: the lookup's row differs from the scan's (children %s vs %s)", id, kl, ks);
        agree += ok;
        if (id == last) saw_last = 1;
    }
    CHECK_RC(rc, 0);
    moraine_cursor_close(cu);
    CHECK(rows == 26 && agree == rows, "%d of %d snapshot rows agree (the fixture has 26)", agree, rows);
    CHECK(with_changes > 0, "no snapshot row carried its changes: children not compared");
    CHECK(saw_last, "the scan never returned the newest snapshot %lld", (long long)last);
    /* the newest, as ATTACH reads it */
    CHECK_RC(moraine_read_snapshot(rd, last, &l), 1);
    CHECK_INT(snap_id(&l), last);
    int nc = moraine_column_index(l.rel, "next_catalog_id"), nf = moraine_column_index(l.rel, "next_file_id");
    CHECK(nc >= 0 && nf >= 0 && l.vals[nc].type == MORAINE_INT && l.vals[nf].type == MORAINE_INT, "counters of the newest row");

    /* 2. ids with no row; bad arguments */
    const int64_t none[] = {last + 1, last + 1000, -1, INT64_MIN, INT64_MAX};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        l.ncols = 99;
        CHECK_RC(moraine_read_snapshot(rd, none[i], &l), 0);
    }
    CHECK_RC(moraine_read_snapshot(NULL, last, &l), MORAINE_EINVAL);
    CHECK_RC(moraine_read_snapshot(rd, last, NULL), MORAINE_EINVAL);
    moraine_read_end(rd);

    /* an expired snapshot: its row is gone, the rows around it stay */
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), 0);
    CHECK_RC(moraine_txn_delete_snapshot(t, 3), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    CHECK_RC(moraine_read_snapshot(rd, 3, &l), 0);
    CHECK_RC(moraine_read_snapshot(rd, 2, &l), 1);
    CHECK_INT(snap_id(&l), 2);
    CHECK_RC(moraine_read_snapshot(rd, 4, &l), 1);
    CHECK_INT(snap_id(&l), 4);

    /* 3. damage: change one byte of snapshot 5's cells in the file */
    CHECK_RC(moraine_read_snapshot(rd, 5, &l), 1);
    CHECK(rd->bounds.map != NULL && l.raw_len > 2, "the row lies in the map");
    off_t at = (off_t)((const char *)l.raw + l.raw_len - 1 - rd->bounds.map);
    moraine_read_end(rd);
    moraine_close(db);
    char path[4200];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0, "open %s", path);
    unsigned char b = 0;
    CHECK(pread(fd, &b, 1, at) == 1, "pread");
    b ^= 0x01;
    CHECK(pwrite(fd, &b, 1, at) == 1, "pwrite");
    close(fd);

    moraine_options ro = {.read_only = 1};
    CHECK_RC(moraine_open(dir, &ro, &db), 0);
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    CHECK_RC(moraine_read_snapshot(rd, 5, &l), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "checksum") != NULL && strstr(moraine_errmsg(), "ducklake_snapshot") != NULL, "message: %s",
          moraine_errmsg());
    CHECK_RC(moraine_read_snapshot(rd, 6, &l), 1);
    CHECK_INT(snap_id(&l), 6);
    CHECK_RC(moraine_read_snapshot(rd, last, &l), 1);
    /* the scan reaches the same row and fails the same way */
    CHECK_RC(moraine_scan_open(rd, "ducklake_snapshot", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cu), 0);
    while ((rc = moraine_cursor_next(cu, &s)) == 1) {}
    CHECK_RC(rc, MORAINE_ECORRUPT);
    moraine_cursor_close(cu);
    moraine_read_end(rd);
    moraine_close(db);

    /* a catalog without the ducklake_snapshot table: 0, not an error */
    char tmpl2[1024];
    char *dir2 = check_mkdtemp(tmpl2, sizeof tmpl2, "moraine-read-snapshot-empty");
    CHECK(dir2 != NULL, "mkdtemp");
    if (dir2) {
        moraine_db *empty;
        CHECK_RC(moraine_open(dir2, &o, &empty), 0);
        CHECK_RC(moraine_read_begin(empty, &rd), 0);
        CHECK_RC(moraine_read_snapshot(rd, 0, &l), 0);
        moraine_read_end(rd);
        moraine_close(empty);
        char cmd2[1100];
        snprintf(cmd2, sizeof cmd2, "rm -rf '%s'", dir2);
        if (system(cmd2) != 0) check_note("could not remove %s", dir2);
    }

    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) check_note("could not remove %s", dir);
    return check_done();
}
