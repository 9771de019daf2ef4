/*
 * test_mapfull — a catalog whose map fills up. moraine grows the map on its
 * own (doubling, up to max_map_size) before a commit; a commit that still
 * does not fit fails with MORAINE_EMAPFULL and a message naming the setting,
 * nothing of it is written, and the catalog stays usable: it reads, verifies,
 * and takes more commits once reopened with a larger max_map_size (or, for
 * one commit larger than the free half of a small map, a larger map_size).
 */
#include "check.h"
#include "internal.h" /* the environment's map size and its count of write transactions being begun (grow_rule) */
#include "moraine.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static const char *COLS[] = {"key", "value", "scope", "scope_id"};

static int commit_rows(moraine_db *db, int64_t snap, int rows, size_t len)
{
    static char big[65536];
    memset(big, 'x', sizeof big);
    moraine_txn *txn;
    int rc = moraine_txn_begin(db, snap, &txn);
    if (rc) return rc;
    for (int i = 0; !rc && i < rows; i++) {
        moraine_value v[4] = {{.type = MORAINE_STR, .s = "k", .len = 1}, {.type = MORAINE_STR, .s = big, .len = len}, {.type = MORAINE_NULL},
                              {.type = MORAINE_INT, .i = snap}};
        rc = moraine_txn_insert(txn, "ducklake_metadata", v, 4, -1);
    }
    if (rc) {
        moraine_txn_abort(txn);
        return rc;
    }
    return moraine_txn_commit(txn);
}

static int64_t count_rows(moraine_db *db)
{
    moraine_read *rd;
    moraine_cursor *c;
    moraine_row row;
    int64_t n = 0;
    if (moraine_read_begin(db, &rd)) return -1;
    if (moraine_scan_open(rd, "ducklake_metadata", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c) == 0)
        while (moraine_cursor_next(c, &row) == 1) n++;
    moraine_read_end(rd);
    return n;
}

/* Defines the test's one table in catalog @db, in its own commit. */
static void define_table(moraine_db *db)
{
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_metadata", 4, COLS), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
}

/* Commits @n snapshots of 8 rows of 4 KiB from snapshot 0 while other
 * threads use the catalog: a commit that meets a full map (the others left
 * no gap to grow it in) writes nothing and is tried again. 1 when all went
 * through. */
static int commit_while_shared(moraine_db *db, int64_t n)
{
    int full = 0;
    for (int64_t snap = 0; snap < n; snap++) {
        int rc;
        while ((rc = commit_rows(db, snap, 8, 4096)) == MORAINE_EMAPFULL && full < 100000) {
            full++;
            usleep(50);
        }
        if (rc) return 0;
    }
    return 1;
}

/* ---- the map grown while other threads read ----
 *
 * The map grows only while no transaction of the process is open (LMDB
 * remaps it), so a read must not begin between the writer's check that none
 * is open and the remap (engine/read.c, mr_read_begin; engine/txn.c,
 * moraine_txn_begin). Readers on their own handles of the catalog read in a
 * loop while a writer commits enough to double the map several times; every
 * read must see whole commits (a multiple of 8 rows, never fewer than the
 * read before) and end without error. */
#define GROW_COMMITS 240
static const char *grow_dir;
static volatile int grow_done;

static void *grow_reader(void *arg)
{
    (void)arg;
    moraine_db *db;
    moraine_options o = {.no_sync = 1};
    if (moraine_open(grow_dir, &o, &db)) return (void *)1;
    intptr_t bad = 0;
    int64_t prev = 0;
    while (!__atomic_load_n(&grow_done, __ATOMIC_SEQ_CST) && !bad) {
        moraine_read *rd;
        moraine_cursor *c;
        moraine_row row;
        int64_t n = 0;
        int rc;
        if (moraine_read_begin(db, &rd)) {
            bad = 2;
            break;
        }
        if (moraine_scan_open(rd, "ducklake_metadata", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c) == 0) {
            while ((rc = moraine_cursor_next(c, &row)) == 1) {
                n++;
                if (row.vals[1].type != MORAINE_STR || row.vals[1].len != 4096 || row.vals[1].s[4095] != 'x') bad = 3;
            }
            if (rc < 0) bad = 4;
        } else {
            bad = 5;
        }
        moraine_read_end(rd);
        if (n % 8 || n < prev) bad = 6;
        prev = n;
        usleep(100); /* gaps with no read open, where the map may grow */
    }
    moraine_close(db);
    return (void *)bad;
}

static void grow_while_reading(const char *root)
{
    static char dir[1100];
    snprintf(dir, sizeof dir, "%s/grow", root);
    grow_dir = dir;
    moraine_options o = {.map_size = 256 << 10, .max_map_size = 256 << 20, .no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    define_table(db);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK_RC(pthread_create(&th[i], NULL, grow_reader, NULL), 0);
    const int failed = !commit_while_shared(db, GROW_COMMITS);
    __atomic_store_n(&grow_done, 1, __ATOMIC_SEQ_CST);
    CHECK(!failed, "a commit failed while others read: %s", moraine_errmsg());
    for (int i = 0; i < 2; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        CHECK((intptr_t)bad == 0, "reader %d saw a damaged or partial read while the map grew (code %d)", i, (int)(intptr_t)bad);
    }
    CHECK_INT(count_rows(db), GROW_COMMITS * 8);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify after growing under readers: %s", moraine_errmsg());
    moraine_close(db);
}

/* ---- the map grown while other threads begin commits ----
 *
 * LMDB reads a write transaction's meta page through the map before it
 * counts the transaction as open, so the map must not be remapped while
 * another thread of the process is inside mdb_txn_begin (engine/txn.c:
 * sh->starting). grow_rule checks the rule itself: with a write transaction
 * counted as being begun, a begin that would grow the map does not, and
 * does once none is; every begin leaves the count as it found it.
 * grow_while_writing runs it: a thread commits on its own handle (whose
 * map_size is large, so it never grows the map itself) while the main
 * thread's commits double the map several times; every commit of both must
 * go through, whole. */
static size_t map_size_of(moraine_db *db)
{
    MDB_envinfo ei;
    return mdb_env_info(db->sh->env, &ei) == 0 ? ei.me_mapsize : 0;
}

static size_t used_of(moraine_db *db)
{
    MDB_envinfo ei;
    MDB_stat st;
    if (mdb_env_info(db->sh->env, &ei) || mdb_env_stat(db->sh->env, &st)) return 0;
    return (ei.me_last_pgno + 1) * (size_t)st.ms_psize;
}

static void grow_rule(const char *root)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/rule", root);
    moraine_options o = {.map_size = 256 << 10, .max_map_size = 64 << 20, .no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    define_table(db);
    /* commit until more than half the map is used: each begin grows the map
     * when more than half was used before it, so the commit that crosses
     * half leaves it as it was, and the next begin would grow it */
    int64_t snap = 0;
    size_t full = map_size_of(db);
    while (snap < 1000 && used_of(db) * 2 <= (full = map_size_of(db))) CHECK_RC(commit_rows(db, snap++, 1, 4096), 0);
    CHECK(used_of(db) * 2 > full, "the test did not fill the map past half (its premise)");
    pthread_mutex_lock(&db->sh->mu);
    db->sh->starting++; /* as another thread inside mdb_txn_begin */
    pthread_mutex_unlock(&db->sh->mu);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &txn), 0);
    CHECK(map_size_of(db) == full, "the map was remapped (%zu -> %zu bytes) while a write transaction was being begun", full, map_size_of(db));
    CHECK_INT(db->sh->starting, 1);
    moraine_txn_abort(txn);
    pthread_mutex_lock(&db->sh->mu);
    db->sh->starting--;
    pthread_mutex_unlock(&db->sh->mu);
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &txn), 0);
    CHECK(map_size_of(db) > full, "the map did not grow once no write transaction was being begun (%zu bytes)", map_size_of(db));
    CHECK_INT(db->sh->starting, 0);
    /* a second begin in the same thread through another handle is refused before it is counted */
    moraine_db *other;
    CHECK_RC(moraine_open(dir, &o, &other), 0);
    moraine_txn *t2;
    CHECK_RC(moraine_txn_begin(other, MORAINE_NO_SNAPSHOT, &t2), MORAINE_ETXN);
    CHECK_INT(db->sh->starting, 0);
    moraine_txn_abort(txn);
    moraine_close(other);
    moraine_close(db);
}

#define WRITE_COMMITS 240
static volatile int write_done;
static void *grow_writer(void *arg)
{
    moraine_db *db;
    moraine_options o = {.map_size = 128 << 20, .max_map_size = 256 << 20, .no_sync = 1};
    if (moraine_open((const char *)arg, &o, &db)) return (void *)1;
    intptr_t bad = 0;
    int64_t n = 0;
    while (!__atomic_load_n(&write_done, __ATOMIC_SEQ_CST) && !bad) {
        moraine_txn *txn;
        int rc = moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &txn);
        if (rc) {
            bad = 2;
            break;
        }
        moraine_value v[4] = {{.type = MORAINE_STR, .s = "w", .len = 1}, {.type = MORAINE_STR, .s = "small", .len = 5}, {.type = MORAINE_NULL},
                              {.type = MORAINE_INT, .i = n}};
        rc = moraine_txn_insert(txn, "ducklake_metadata", v, 4, -1);
        if (!rc) rc = moraine_txn_commit(txn);
        else moraine_txn_abort(txn);
        if (rc == MORAINE_EMAPFULL) continue; /* the map filled before the other thread grew it: nothing written */
        if (rc) bad = 3;
        else n++;
    }
    moraine_close(db);
    return bad ? (void *)bad : (void *)(intptr_t)(-n - 1); /* -(commits) - 1: never 0 or a small code */
}

static void grow_while_writing(const char *root)
{
    static char dir[1100];
    snprintf(dir, sizeof dir, "%s/grow-w", root);
    moraine_options o = {.map_size = 256 << 10, .max_map_size = 256 << 20, .no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    define_table(db);
    const size_t first = map_size_of(db);
    pthread_t th;
    CHECK_RC(pthread_create(&th, NULL, grow_writer, dir), 0);
    const int failed = !commit_while_shared(db, WRITE_COMMITS);
    __atomic_store_n(&write_done, 1, __ATOMIC_SEQ_CST);
    CHECK(!failed, "a commit failed while another thread committed: %s", moraine_errmsg());
    void *res;
    pthread_join(th, &res);
    intptr_t r = (intptr_t)res;
    CHECK(r < 0, "the other thread's commits failed while the map grew (code %d)", (int)r);
    int64_t theirs = r < 0 ? -(int64_t)r - 1 : 0;
    CHECK(theirs > 0, "the other thread committed nothing");
    CHECK(map_size_of(db) >= 8 * first, "the map grew from %zu to only %zu bytes", first, map_size_of(db));
    CHECK_INT(db->sh->starting, 0);
    CHECK_INT(count_rows(db), WRITE_COMMITS * 8 + theirs);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify after growing under another writer: %s", moraine_errmsg());
    moraine_close(db);
}

int main(void)
{
    check_seed("test_mapfull");
    char tmpl[1024];
    char *dir = check_mkdtemp(tmpl, sizeof tmpl, "moraine-mapfull");
    moraine_options o = {.map_size = 256 << 10, .max_map_size = 2 << 20, .no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    define_table(db);

    /* 32 KiB per commit until the map is full */
    int64_t snap = 0, committed = 0;
    int rc = 0;
    for (; snap < 1000; snap++) {
        rc = commit_rows(db, snap, 8, 4096);
        if (rc) break;
        committed++;
    }
    CHECK(rc == MORAINE_EMAPFULL, "filling the map ended with %d (%s), expected MORAINE_EMAPFULL", rc, moraine_errmsg());
    CHECK(strstr(moraine_errmsg(), "max_map_size") != NULL, "the message does not name the setting: %s", moraine_errmsg());
    CHECK(committed * 32768 > (256 << 10), "the map did not grow past its first size (%lld commits of 32 KiB)", (long long)committed);
    int64_t last = -1;
    CHECK_RC(moraine_last_snapshot(db, &last) == 1 ? 0 : -1, 0);
    CHECK_INT(last, snap - 1);
    CHECK_INT(count_rows(db), committed * 8);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify after the full map: %s", moraine_errmsg());
    moraine_close(db);

    /* reopened with a larger limit, the same commit goes through */
    moraine_options big = {.map_size = 256 << 10, .max_map_size = 64 << 20, .no_sync = 1};
    CHECK_RC(moraine_open(dir, &big, &db), 0);
    CHECK_RC(commit_rows(db, snap, 8, 4096), 0);
    CHECK_INT(count_rows(db), committed * 8 + 8);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify after growing: %s", moraine_errmsg());
    moraine_close(db);

    /* a map_size below 256 KiB is taken as 256 KiB (a map of 1 byte would
     * hold no commit at all); one commit larger than the free half of the map,
     * well below max_map_size, names map_size, writes nothing, and goes through
     * once the catalog is opened with a larger map_size */
    char dir2[1100];
    snprintf(dir2, sizeof dir2, "%s/small", dir);
    moraine_options tiny = {.map_size = 1, .max_map_size = 64 << 20, .no_sync = 1, .create = 1};
    CHECK_RC(moraine_open(dir2, &tiny, &db), 0);
    define_table(db);
    CHECK_RC(commit_rows(db, 1, 2, 1000), 0);
    CHECK_RC(commit_rows(db, 2, 20, 32768), MORAINE_EMAPFULL);
    CHECK(strstr(moraine_errmsg(), "larger map_size") != NULL, "the message does not name map_size: %s", moraine_errmsg());
    CHECK_INT(count_rows(db), 2);
    moraine_close(db);
    moraine_options roomy = {.map_size = 4 << 20, .max_map_size = 64 << 20, .no_sync = 1};
    CHECK_RC(moraine_open(dir2, &roomy, &db), 0);
    CHECK_RC(commit_rows(db, 2, 20, 32768), 0);
    CHECK_INT(count_rows(db), 22);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify after the larger map: %s", moraine_errmsg());
    moraine_close(db);
    grow_while_reading(dir);
    grow_rule(dir);
    grow_while_writing(dir);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) check_note("could not remove %s", dir);
    return check_done();
}
