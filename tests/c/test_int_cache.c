/*
 * test_int_cache — the process's cache of the catalog's stored integers
 * (engine/int_cache.c): row position counters, rels_gen, last_snapshot and
 * entry counts, which every commit reads. A stale value there would give two
 * rows one position, or a count that no longer matches its range: a damaged
 * catalog. So:
 *
 *  - white box, on one catalog's LMDB environment: a registered write
 *    transaction's reads see its own writes and deletions; after it commits,
 *    the next registered transaction is answered by the cache and a read is
 *    not (shown by planting a value only the cache holds); a write the cache
 *    did not see (another writer's commit, an unregistered transaction's), an
 *    abort, a failed write and a read of an older snapshot all read the store; a commit whose end
 *    runs after the next writer registered (the same MDB_txn object) changes
 *    nothing; deleting a key that is not there is not a write;
 *  - threads: three handles of one catalog in one process commit in turns
 *    while two more threads keep the CPUs busy; every row is there once and
 *    moraine_verify finds the counts right;
 *  - end to end: this process's handle commits data files while another
 *    process (crash_writer) commits in between, round after round; every
 *    snapshot id is the next one, every file is there, and moraine_verify
 *    finds the catalog sound (it recounts every range and checks every
 *    position against its counter).
 */
#include "check.h"
#include "internal.h"
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static MDB_env *env;
static MDB_dbi dbi;
static const uint8_t KEY[] = {MR_SUB_META, MR_K_STR, 't', 'e', 's', 't', 0};
#define KEYLEN sizeof KEY

/* The value under KEY as a new read transaction reads it: 1 (*v), 0 absent, <0 error. */
static int read_now(int64_t *v)
{
    MDB_txn *r;
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &r)) return -100;
    int rc = mr_int_get(r, dbi, KEY, KEYLEN, v);
    mdb_txn_abort(r);
    return rc;
}

static uint64_t ticket; /* the last registration's */

/* A write transaction registered as moraine_txn_begin registers its own. */
static MDB_txn *registered(void)
{
    MDB_txn *w;
    if (mdb_txn_begin(env, NULL, 0, &w)) return NULL;
    ticket = mr_int_cache_begin(env, w);
    return w;
}

/* Commits it as moraine_txn_commit does. */
static int commit_registered(MDB_txn *w)
{
    mr_int_cache_detach(env, ticket);
    int mrc = mdb_txn_commit(w);
    mr_int_cache_end(env, ticket, mrc == 0);
    return mrc;
}

/* Aborts it as moraine_txn_abort does. */
static void abort_registered(MDB_txn *w)
{
    mr_int_cache_end(env, ticket, 0);
    mdb_txn_abort(w);
}

/* Sets KEY to @v in a write transaction the cache does not see (as another
 * process's commit would be). */
static int put_unseen(int64_t v)
{
    MDB_txn *u;
    if (mdb_txn_begin(env, NULL, 0, &u)) return -1;
    int rc = mr_int_put(u, dbi, KEY, KEYLEN, v);
    return rc ? rc : mdb_txn_commit(u);
}

/* What the next registered transaction reads under KEY: @want (1 present,
 * 0 absent) and, when present, @value; the transaction is aborted. */
static void registered_reads(int want, int64_t value)
{
    MDB_txn *w = registered();
    int64_t v = -1;
    CHECK(w != NULL, "begin");
    if (!w) return;
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), want);
    if (want) CHECK_INT(v, value);
    abort_registered(w);
}

/* Sets KEY's value in the cache's base (only there) to @v; 1 when KEY was cached. */
static int plant(mr_int_cache *c, int64_t v)
{
    int found = 0;
    for (size_t i = 0; i < c->base.n; i++)
        if (c->base.v[i].len == KEYLEN && !memcmp(c->base.v[i].key, KEY, KEYLEN)) c->base.v[i].v = v, found = 1;
    return found;
}

static void test_white_box(const char *dir)
{
    moraine_options o = {.create = 1, .no_sync = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    env = db->env, dbi = db->dbi;
    mr_int_cache *c = &db->sh->ic;
    int64_t v = -1;

    /* a registered transaction reads its own write; its commit becomes the cache's state */
    MDB_txn *w = registered();
    CHECK(w != NULL, "begin");
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 0);
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 5), 0);
    v = -1;
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 5);
    uint64_t wid = (uint64_t)mdb_txn_id(w);
    CHECK_INT(commit_registered(w), 0);
    CHECK_INT(c->txnid, wid);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 5);

    /* the next registered transaction is answered by the cache, a read never
     * (LMDB 0.9 may label a read with an older id than the state it reads):
     * a value planted only in the cache is what the one reads, not the other */
    CHECK(plant(c, 6), "the committed value is not in the cache");
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 5);
    registered_reads(1, 6);
    plant(c, 5);

    /* a commit the cache did not see: the next registered transaction reads the store ... */
    CHECK_INT(put_unseen(7), 0);
    w = registered();
    v = -1;
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 7);
    abort_registered(w);
    /* ... and so does a read */
    CHECK_INT(put_unseen(8), 0);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 8);

    /* an abort drops what the transaction wrote, also when the next commit
     * (another writer's) takes the aborted transaction's LMDB id */
    w = registered();
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 9), 0);
    abort_registered(w);
    CHECK_INT(put_unseen(7), 0);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 7);
    w = registered();
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 7);

    /* a deletion is seen by the transaction itself, then by every read after its commit */
    CHECK_RC(mr_int_del(w, dbi, KEY, KEYLEN), 0);
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 0);
    CHECK_INT(commit_registered(w), 0);
    CHECK_INT(read_now(&v), 0);

    /* a read begun before a commit keeps reading its own snapshot */
    w = registered();
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 11), 0);
    CHECK_INT(commit_registered(w), 0);
    MDB_txn *old;
    CHECK_INT(mdb_txn_begin(env, NULL, MDB_RDONLY, &old), 0);
    w = registered();
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 12), 0);
    CHECK_INT(commit_registered(w), 0);
    CHECK_INT(mr_int_get(old, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 11);
    mdb_txn_abort(old);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 12);

    /* an unregistered write transaction reads its own writes from the store, and its abort leaves the cache right */
    MDB_txn *u;
    CHECK_INT(mdb_txn_begin(env, NULL, 0, &u), 0);
    CHECK_RC(mr_int_put(u, dbi, KEY, KEYLEN, 13), 0);
    CHECK_INT(mr_int_get(u, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 13);
    mdb_txn_abort(u);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 12);

    /* a write the cache could not record turns it off for the transaction and keeps the commit out of it */
    w = registered();
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 1);
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 14), 0);
    mr_int_cache_wrote(w, dbi, KEY, KEYLEN, 0, 1, 99); /* as a failed write reports itself */
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 14);
    uint64_t offid = (uint64_t)mdb_txn_id(w);
    CHECK_INT(commit_registered(w), 0);
    CHECK(c->txnid != offid, "a commit with an unrecorded write became the cache's state");
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 14);

    /* a commit's end that runs after the next writer registered (LMDB released
     * its lock at the commit; the next write transaction is the same MDB_txn):
     * the late end changes nothing, and the next writer's writes all count */
    w = registered();
    uint64_t first = ticket;
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 20), 0);
    mr_int_cache_detach(env, first);
    CHECK_INT(mdb_txn_commit(w), 0);
    MDB_txn *w2 = registered();
    CHECK(w2 == w, "LMDB gave the next write transaction another MDB_txn (the race this covers needs the same one)");
    CHECK_RC(mr_int_put(w2, dbi, KEY, KEYLEN, 21), 0);
    mr_int_cache_end(env, first, 1); /* late */
    CHECK_INT(mr_int_get(w2, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 21);
    CHECK_RC(mr_int_put(w2, dbi, KEY, KEYLEN, 22), 0);
    CHECK_INT(commit_registered(w2), 0);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 22);
    registered_reads(1, 22);

    /* deleting a key that is not there writes nothing: LMDB commits no new
     * transaction, and the next commit (another writer's) takes the id */
    static const uint8_t ABSENT[] = {MR_SUB_META, MR_K_STR, 'n', 'o', 'n', 'e', 0};
    w = registered();
    CHECK_RC(mr_int_del(w, dbi, ABSENT, sizeof ABSENT), 0);
    CHECK_INT(commit_registered(w), 0);
    CHECK_INT(put_unseen(23), 0);
    CHECK_INT(read_now(&v), 1);
    CHECK_INT(v, 23);

    /* more writes than the list holds (1024): the cache is off for the
     * transaction, its commit is not the cache's state, and the next one reads
     * the store */
    w = registered();
    uint64_t big = (uint64_t)mdb_txn_id(w);
    uint8_t many[16] = {MR_SUB_META, MR_K_STR, 'm'};
    int failed_puts = 0;
    for (int i = 0; i < 1100; i++) {
        snprintf((char *)many + 3, sizeof many - 3, "%04d", i);
        failed_puts += mr_int_put(w, dbi, many, 8, i) != 0;
    }
    CHECK_INT(failed_puts, 0);
    CHECK(c->woff, "1100 writes did not turn the cache off for the transaction");
    CHECK_RC(mr_int_put(w, dbi, KEY, KEYLEN, 31), 0);
    CHECK_INT(mr_int_get(w, dbi, KEY, KEYLEN, &v), 1);
    CHECK_INT(v, 31);
    CHECK_INT(commit_registered(w), 0);
    CHECK(c->txnid != big, "a commit whose writes overflowed became the cache's state");
    registered_reads(1, 31);

    /* the meta integers through their names: the short-key path and mr_meta_key agree */
    w = registered();
    CHECK_RC(mr_meta_put_int(w, dbi, "ord:4294967295", 21), 0);
    mr_buf k = {0};
    CHECK_RC(mr_meta_key(&k, "ord:4294967295"), 0);
    CHECK_INT(mr_int_get(w, dbi, k.p, k.len, &v), 1);
    CHECK_INT(v, 21);
    char name[16];
    CHECK(strcmp(mr_ord_name(name, 4294967295u), "ord:4294967295") == 0, "mr_ord_name gave %s", name);
    CHECK(strcmp(mr_ord_name(name, 0), "ord:0") == 0, "mr_ord_name gave %s", name);
    CHECK(strcmp(mr_ord_name(name, 70), "ord:70") == 0, "mr_ord_name gave %s", name);
    abort_registered(w);
    MDB_txn *r;
    CHECK_INT(mdb_txn_begin(env, NULL, MDB_RDONLY, &r), 0);
    CHECK_INT(mr_int_get(r, dbi, k.p, k.len, &v), 0);
    mdb_txn_abort(r);
    mr_buf_free(&k);
    moraine_close(db);
}

/* ---- threads: handles of one catalog in one process, committing in turns ---- */

static const char *stress_dir;
static volatile int stress_stop;
static long stress_commits, stress_errors, stress_running; /* stress_running: commits so far, atomic */
static pthread_mutex_t stress_mu = PTHREAD_MUTEX_INITIALIZER;

static void *stress_writer(void *ud)
{
    (void)ud;
    moraine_options o = {.no_sync = 1};
    moraine_db *db;
    if (moraine_open(stress_dir, &o, &db)) {
        pthread_mutex_lock(&stress_mu);
        stress_errors++;
        pthread_mutex_unlock(&stress_mu);
        return NULL;
    }
    long mine = 0, bad = 0;
    while (!stress_stop) {
        moraine_txn *t;
        if (moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t)) {
            bad++;
            break;
        }
        moraine_value r[1] = {{.type = MORAINE_INT, .i = mine}};
        if (moraine_txn_insert(t, "r", r, 1, -1) || moraine_txn_commit(t)) bad++;
        else mine++, __atomic_add_fetch(&stress_running, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&stress_mu);
    stress_commits += mine;
    stress_errors += bad;
    pthread_mutex_unlock(&stress_mu);
    moraine_close(db);
    return NULL;
}

static void *stress_spinner(void *ud)
{
    (void)ud;
    volatile unsigned long x = 0;
    while (!stress_stop) x++;
    return NULL;
}

/* Three threads, each with its own handle (one shared environment), commit a
 * row each in a loop for a while, two more threads keeping the CPUs busy so
 * that a committer is preempted between LMDB's commit and the cache's end of
 * it. Every commit must be there once and the counts right (a stale counter
 * or count from the cache shows as a range holding more or fewer entries
 * than counted). Found by review: before registrations had tickets, every
 * run of this failed. */
static void test_threads(const char *dir)
{
    moraine_options o = {.create = 1, .no_sync = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), 0);
    CHECK_RC(moraine_txn_define(t, "r", 1, (const char *const[]){"x"}), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
    stress_dir = dir;
    pthread_t th[5];
    for (int i = 0; i < 5; i++) pthread_create(&th[i], NULL, i < 3 ? stress_writer : stress_spinner, NULL);
    /* at least 1.5 s and 300 commits (under valgrind a commit is slow), at most 120 s */
    struct timespec ts = {0, 100000000};
    for (int tenth = 0; tenth < 1200 && (tenth < 15 || __atomic_load_n(&stress_running, __ATOMIC_RELAXED) < 300); tenth++) nanosleep(&ts, NULL);
    stress_stop = 1;
    for (int i = 0; i < 5; i++) pthread_join(th[i], NULL);
    CHECK_INT(stress_errors, 0);
    CHECK(stress_commits >= 300, "only %ld commits", stress_commits);
    moraine_read *rd;
    long rows = 0;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_cursor *cur;
    CHECK_RC(moraine_scan_open(rd, "r", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cur), 0);
    moraine_row row;
    while (moraine_cursor_next(cur, &row) == 1) rows++;
    moraine_cursor_close(cur);
    moraine_read_end(rd);
    CHECK_INT(rows, stress_commits);
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);
    moraine_close(db);
}

/* Data files of the table named @table at the newest snapshot. */
static long files_of(moraine_db *db, int64_t table_id)
{
    moraine_read *rd;
    if (moraine_read_begin(db, &rd)) return -1;
    int64_t last;
    long n = -1;
    moraine_cursor *cur;
    if (moraine_read_last_snapshot(rd, &last) == 1 && moraine_scan_open(rd, "ducklake_data_file", table_id, last, &cur) == 0) {
        moraine_row row;
        n = 0;
        while (moraine_cursor_next(cur, &row) == 1) n++;
        moraine_cursor_close(cur);
    }
    moraine_read_end(rd);
    return n;
}

static int64_t table_id_of(moraine_db *db, const char *name)
{
    moraine_read *rd;
    if (moraine_read_begin(db, &rd)) return -1;
    moraine_cursor *cur;
    int64_t id = -1, last;
    if (moraine_read_last_snapshot(rd, &last) == 1 && moraine_scan_open(rd, "ducklake_table", MORAINE_ANY_SCOPE, last, &cur) == 0) {
        moraine_row row;
        while (moraine_cursor_next(cur, &row) == 1) {
            int in = moraine_column_index(row.rel, "table_name"), ii = moraine_column_index(row.rel, "table_id");
            if (row.vals[in].type == MORAINE_STR && row.vals[in].len == strlen(name) && !memcmp(row.vals[in].s, name, row.vals[in].len))
                id = row.vals[ii].i;
        }
        moraine_cursor_close(cur);
    }
    moraine_read_end(rd);
    return id;
}

static int run_writer(const char *writer, const char *cat, const char *commits)
{
    pid_t p = fork();
    if (p == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execl(writer, writer, cat, commits, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_two_processes(const char *writer, const char *root)
{
    char cat[4200];
    snprintf(cat, sizeof cat, "%s/catalog", root);
    CHECK_INT(run_writer(writer, cat, "2"), 0);
    moraine_db *db;
    moraine_options o = {.no_sync = 1};
    CHECK_RC(moraine_open(cat, &o, &db), 0);
    moraine_tx *tx;
    int64_t snap = 0, last = 0;
    moraine_column_def cols[] = {{.name = "k", .type = "int64"}};
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    CHECK_RC(moraine_tx_create_table(tx, NULL, "u", cols, 1, NULL), 0);
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    int64_t t = table_id_of(db, "t"), u = table_id_of(db, "u");
    CHECK(t >= 0 && u >= 0 && t != u, "tables t %lld, u %lld", (long long)t, (long long)u);
    long mine = 0, bad_snapshots = 0;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 3; i++) {
            CHECK_RC(moraine_last_snapshot(db, &last), 1);
            char path[64];
            snprintf(path, sizeof path, "u-%d-%d.parquet", round, i);
            moraine_data_file f = {path, 0, NULL, 1, 100, 10, NULL, 0, NULL, 0, 0};
            CHECK_RC(moraine_tx_begin(db, &tx), 0);
            CHECK_RC(moraine_tx_add_data_files(tx, NULL, "u", &f, 1, NULL), 0);
            CHECK_RC(moraine_tx_commit(tx, &snap), 0);
            if (snap != last + 1) bad_snapshots++;
            mine++;
        }
        /* another process commits twice between this handle's commits */
        CHECK_INT(run_writer(writer, cat, "2"), 0);
    }
    CHECK_INT(bad_snapshots, 0);
    CHECK_INT(files_of(db, u), mine);
    CHECK_INT(files_of(db, t), 2 + 6 * 2);
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);

    /* a verb commit leaves the entry counts it wrote cached for the next one */
    moraine_data_file f = {"u-last.parquet", 0, NULL, 1, 100, 10, NULL, 0, NULL, 0, 0};
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    CHECK_RC(moraine_tx_add_data_files(tx, NULL, "u", &f, 1, NULL), 0);
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    mr_int_cache *c = &db->sh->ic;
    size_t counts = 0;
    for (size_t i = 0; i < c->base.n; i++) counts += c->base.v[i].key[0] == MR_SUB_COUNT && c->base.v[i].present;
    CHECK(counts > 0, "no entry count is cached after a commit");
    moraine_close(db);
}

int main(int argc, char **argv)
{
    char writer[4096];
    if (!check_crash_writer(writer, sizeof writer, argv[0])) return check_done();
    char tmpl[1024], cmd[1200];
    char *root = check_mkdtemp(tmpl, sizeof tmpl, "moraine-int-cache");
    CHECK(root != NULL, "mkdtemp");
    if (!root) return check_done();
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/white", root);
    test_white_box(dir);
    snprintf(dir, sizeof dir, "%s/threads", root);
    test_threads(dir);
    test_two_processes(writer, root);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0, "cleanup");
    return check_done();
}
