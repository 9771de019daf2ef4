/*
 * test_compact — moraine_compact: a store grown by many commits, copied in key
 * order into a new directory, over more than one of its 64 MiB write
 * batches. The copy holds the same entries (every row's encoded bytes equal,
 * in the same order), verifies clean, is smaller, and takes commits; a
 * destination that exists is refused and left alone; a cancel leaves
 * nothing; moraine_last_txnid is the id the copy was read at until a commit;
 * moraine_open_elsewhere sees no other process.
 */
#include "check.h"
#include "moraine.h"
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *COLS[] = {"key", "value", "scope", "scope_id"};
#define ROWS 1300
#define LEN 56000 /* 1300 rows of 56 kB: about 70 MiB, two write batches */

static char big[LEN];

static int commit_row(moraine_db *db, int64_t snap, int i)
{
    moraine_txn *txn;
    int rc = moraine_txn_begin(db, snap, &txn);
    if (rc) return rc;
    char key[32];
    snprintf(key, sizeof key, "k%05d", i);
    memset(big, 'a' + i % 26, sizeof big);
    size_t len = LEN - (size_t)(i % 1000) * 7;
    moraine_value v[4] = {{.type = MORAINE_STR, .s = key, .len = strlen(key)}, {.type = MORAINE_STR, .s = big, .len = len},
                          {.type = MORAINE_NULL}, {.type = MORAINE_INT, .i = snap}};
    rc = moraine_txn_insert(txn, "ducklake_metadata", v, 4, -1);
    if (rc) {
        moraine_txn_abort(txn);
        return rc;
    }
    return moraine_txn_commit(txn);
}

/* Whether both catalogs hold the same rows, byte for byte, in the same order. */
static int same_rows(moraine_db *a, moraine_db *b, int64_t *n)
{
    moraine_read *ra, *rb;
    moraine_cursor *ca, *cb;
    moraine_row x, y;
    int same = 1;
    *n = 0;
    if (moraine_read_begin(a, &ra)) return 0;
    if (moraine_read_begin(b, &rb)) {
        moraine_read_end(ra);
        return 0;
    }
    if (moraine_scan_open(ra, "ducklake_metadata", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &ca) == 0 &&
        moraine_scan_open(rb, "ducklake_metadata", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cb) == 0) {
        for (;;) {
            int ga = moraine_cursor_next(ca, &x), gb = moraine_cursor_next(cb, &y);
            if (ga != gb) same = 0;
            if (ga != 1 || gb != 1) break;
            if (x.ord != y.ord || x.raw_len != y.raw_len || memcmp(x.raw, y.raw, x.raw_len) != 0) same = 0; /* raw: the cells alone */
            (*n)++;
        }
    } else {
        same = 0;
    }
    moraine_read_end(ra);
    moraine_read_end(rb);
    return same;
}

static int64_t file_size(const char *dir)
{
    char p[2048];
    struct stat st;
    snprintf(p, sizeof p, "%s/data.mdb", dir);
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

static int counted(void *ud, uint64_t done, uint64_t total)
{
    (void)total;
    *(uint64_t *)ud = done;
    return 0;
}

static int cancel(void *ud, uint64_t done, uint64_t total)
{
    (void)ud;
    (void)done;
    (void)total;
    return 1;
}

int main(void)
{
    check_seed("test_compact");
    char tmpl[1024], src[1200], dest[1200], other[1200], cmd[4096];
    char *dir = check_mkdtemp(tmpl, sizeof tmpl, "moraine-compact");
    snprintf(src, sizeof src, "%s/src", dir);
    snprintf(dest, sizeof dest, "%s/dest", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db, *cdb;
    CHECK_RC(moraine_open(src, &o, &db), 0);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_metadata", 4, COLS), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    int rc = 0;
    for (int i = 0; !rc && i < ROWS; i++) rc = commit_row(db, i, i);
    CHECK_RC(rc, 0);

    long pid = -1;
    CHECK_RC(moraine_open_elsewhere(db, &pid), 0);
    CHECK_INT(pid, 0);

    moraine_compact_info info;
    uint64_t seen = 0;
    CHECK_RC(moraine_compact(db, dest, &info, counted, &seen), 0);
    CHECK(info.entries > ROWS, "%llu entries copied", (unsigned long long)info.entries);
    CHECK_INT((int64_t)seen, (int64_t)info.entries);
    CHECK_INT((int64_t)info.src_bytes, file_size(src));
    CHECK_INT((int64_t)info.dest_bytes, file_size(dest));
    CHECK(info.dest_bytes < info.src_bytes, "copy %llu bytes, catalog %llu", (unsigned long long)info.dest_bytes,
          (unsigned long long)info.src_bytes);
    uint64_t id = 0;
    CHECK_RC(moraine_last_txnid(db, &id), 0);
    CHECK_INT((int64_t)id, (int64_t)info.txnid);

    CHECK_RC(moraine_open(dest, &o, &cdb), 0);
    int64_t n = 0;
    CHECK(same_rows(db, cdb, &n), "the copy's rows differ from the catalog's");
    CHECK_INT(n, ROWS);
    CHECK_RC(moraine_verify(cdb, NULL, NULL, NULL, NULL), 0);
    int64_t last = -1;
    CHECK_INT(moraine_last_snapshot(cdb, &last), 1);
    CHECK_INT(last, ROWS - 1);
    CHECK_RC(commit_row(cdb, ROWS, ROWS), 0); /* the copy takes commits */
    CHECK_RC(moraine_verify(cdb, NULL, NULL, NULL, NULL), 0);
    moraine_close(cdb);

    /* a commit moves the last transaction id on */
    CHECK_RC(commit_row(db, ROWS, ROWS), 0);
    CHECK_RC(moraine_last_txnid(db, &id), 0);
    CHECK(id > info.txnid, "last txnid %llu after a commit, copy read at %llu", (unsigned long long)id, (unsigned long long)info.txnid);

    /* refusals: an existing destination is left alone; a cancel leaves nothing */
    int64_t had = file_size(dest);
    CHECK_RC(moraine_compact(db, dest, NULL, NULL, NULL), MORAINE_EEXIST);
    CHECK_INT(file_size(dest), had);
    CHECK_RC(moraine_compact(db, other, NULL, cancel, NULL), MORAINE_EINVAL);
    CHECK(access(other, F_OK) != 0, "a cancelled copy left %s", other);
    CHECK_RC(moraine_compact(db, "", NULL, NULL, NULL), MORAINE_EINVAL);
    moraine_close(db);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cannot remove %s", dir);
    return check_done();
}
