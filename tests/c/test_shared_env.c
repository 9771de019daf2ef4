/*
 * test_shared_env — handles of one catalog in several threads of a process,
 * beside another process that commits to it (docs/reliability.md):
 *
 * - map_grown_elsewhere: another process commits enough to grow the file past
 *   this process's map while two of this process's threads wait to begin
 *   commits and a third reads in a loop. Each begin meets MDB_MAP_RESIZED;
 *   the map is adopted once nothing of the process is open or being begun, so
 *   every commit and every read goes through (one begin used to give up when
 *   another was counted as starting).
 * - open_not_blocked: the first handle of a catalog in this process writes its
 *   format marker, which waits while another process holds the catalog's
 *   writer lock; meanwhile another thread's open and close of another catalog
 *   must not wait for it (an open that held the process's registry lock
 *   across that wait closed a deadlock with a commit of this process that the
 *   other process waits for).
 * - fork_while_opening: a child forked while another thread of the parent is
 *   inside moraine_open opens a catalog of its own (it waited forever on the
 *   process's registry lock, copied locked by a thread the child does not have).
 * - marker_by_commit: a handle that opened a new catalog without writing its
 *   format marker (another handle's open writes it) writes the marker with
 *   its first commit if it is still missing, so a catalog committed to always
 *   carries one and reopens.
 */
#include "check.h"
#include "internal.h"
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *COLS[] = {"key", "value", "scope", "scope_id"};
static char root[1024];

static int define_table(moraine_db *db)
{
    moraine_txn *t;
    int rc = moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t);
    if (rc) return rc;
    if ((rc = moraine_txn_define(t, "ducklake_metadata", 4, COLS))) {
        moraine_txn_abort(t);
        return rc;
    }
    return moraine_txn_commit(t);
}

/* one row of @len bytes of 'x' per call, in its own commit unless @keep */
static int insert_row(moraine_txn *t, const char *key, size_t len)
{
    static char big[1 << 16];
    memset(big, 'x', sizeof big);
    moraine_value v[4] = {{.type = MORAINE_STR, .s = key, .len = strlen(key)}, {.type = MORAINE_STR, .s = big, .len = len}, {.type = MORAINE_NULL},
                          {.type = MORAINE_INT, .i = 0}};
    return moraine_txn_insert(t, "ducklake_metadata", v, 4, -1);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A child process: opens @dir with a large map, begins a commit (taking the
 * catalog's writer lock), writes one byte to @fd, adds @rows rows of 60 KiB,
 * holds the lock @hold_ms more, commits, and exits 0 (or 1..4 on failure). */
static void lock_holder(const char *dir, int fd, int rows, int hold_ms)
{
    moraine_options o = {.map_size = 256 << 20, .max_map_size = 1u << 30, .no_sync = 1};
    moraine_db *db;
    if (moraine_open(dir, &o, &db)) _exit(1);
    moraine_txn *t;
    if (moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t)) _exit(2);
    if (write(fd, "L", 1) != 1) _exit(3);
    for (int i = 0; i < rows; i++)
        if (insert_row(t, "child", 60 << 10)) _exit(4);
    usleep((useconds_t)hold_ms * 1000);
    if (moraine_txn_commit(t)) _exit(4);
    moraine_close(db);
    _exit(0);
}

/* ---- map_grown_elsewhere ---- */

static const char *grown_dir;
static volatile int grown_stop;

static void *grown_writer(void *arg)
{
    moraine_db *db = arg;
    moraine_txn *t;
    int rc = moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t);
    if (!rc && (rc = insert_row(t, "parent", 100))) moraine_txn_abort(t);
    else if (!rc) rc = moraine_txn_commit(t);
    if (rc) check_note("writer: %s", moraine_errmsg());
    return (void *)(intptr_t)rc;
}

static void *grown_reader(void *arg)
{
    moraine_db *db = arg;
    intptr_t failed = 0;
    while (!__atomic_load_n(&grown_stop, __ATOMIC_SEQ_CST)) {
        moraine_read *rd;
        if (moraine_read_begin(db, &rd)) {
            if (!failed++) check_note("reader: %s", moraine_errmsg());
            continue;
        }
        moraine_read_end(rd);
        usleep(200);
    }
    return (void *)failed;
}

static void map_grown_elsewhere(void)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/grown", root);
    grown_dir = dir;
    moraine_options o = {.map_size = 1 << 20, .max_map_size = 1 << 20, .no_sync = 1, .create = 1};
    moraine_db *a, *b, *r;
    CHECK_RC(moraine_open(dir, &o, &a), 0);
    CHECK_RC(define_table(a), 0);
    CHECK_RC(moraine_open(dir, &o, &b), 0);
    CHECK_RC(moraine_open(dir, &o, &r), 0);
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        lock_holder(dir, pfd[1], 80, 300); /* 80 x 60 KiB: the file grows to about 5 MiB, past this process's 1 MiB map */
    }
    close(pfd[1]);
    char c;
    CHECK(read(pfd[0], &c, 1) == 1, "the other process took the writer lock");
    close(pfd[0]);
    pthread_t w1, w2, rt;
    CHECK_RC(pthread_create(&rt, NULL, grown_reader, r), 0);
    CHECK_RC(pthread_create(&w1, NULL, grown_writer, a), 0);
    CHECK_RC(pthread_create(&w2, NULL, grown_writer, b), 0);
    void *r1, *r2, *rr;
    pthread_join(w1, &r1);
    pthread_join(w2, &r2);
    __atomic_store_n(&grown_stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(rt, &rr);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other process's commit (status %d)", st);
    CHECK((intptr_t)r1 == 0 && (intptr_t)r2 == 0, "a commit begun while another process grew the map failed (%d, %d)", (int)(intptr_t)r1,
          (int)(intptr_t)r2);
    CHECK((intptr_t)rr == 0, "%d reads failed while another process grew the map", (int)(intptr_t)rr);
    CHECK_INT(count_rows(a), 80 + 2);
    CHECK(moraine_verify(a, NULL, NULL, NULL, NULL) == 0, "verify: %s", moraine_errmsg());
    CHECK_INT(a->sh->starting, 0);
    CHECK_INT(a->sh->writer, 0);
    moraine_close(r);
    moraine_close(b);
    moraine_close(a);
}

/* ---- open_not_blocked ---- */

static volatile double opened_at;
static void *first_open(void *arg)
{
    moraine_options o = {.no_sync = 1};
    moraine_db *db;
    int rc = moraine_open((const char *)arg, &o, &db);
    opened_at = now_s();
    if (!rc) moraine_close(db);
    return (void *)(intptr_t)rc;
}

static void open_not_blocked(void)
{
    char dir[1100], other[1100];
    snprintf(dir, sizeof dir, "%s/held", root);
    snprintf(other, sizeof other, "%s/other", root);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_RC(define_table(db), 0);
    moraine_close(db); /* no handle of it left in this process: the next open opens the environment */
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        lock_holder(dir, pfd[1], 1, 1500);
    }
    close(pfd[1]);
    char c;
    CHECK(read(pfd[0], &c, 1) == 1, "the other process took the writer lock");
    close(pfd[0]);
    opened_at = 0;
    pthread_t th;
    CHECK_RC(pthread_create(&th, NULL, first_open, dir), 0);
    usleep(200 * 1000); /* the first open is now waiting for the writer lock */
    double t0 = now_s();
    moraine_db *z;
    CHECK_RC(moraine_open(other, &o, &z), 0);
    moraine_close(z);
    double done = now_s();
    void *rc;
    pthread_join(th, &rc);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other process's commit (status %d)", st);
    CHECK((intptr_t)rc == 0, "the first open of the held catalog failed: %d", (int)(intptr_t)rc);
    CHECK(done - t0 < 1.0 && opened_at > done, "an open of another catalog waited %.3f s for an open waiting on another process's commit", done - t0);
}

/* ---- fork_while_opening ---- */

#define FORKS 300
static volatile int opener_stop;
static void *opener(void *arg)
{
    char dir[1200];
    moraine_options o = {.no_sync = 1, .create = 1};
    for (int i = 0; !__atomic_load_n(&opener_stop, __ATOMIC_SEQ_CST); i++) {
        snprintf(dir, sizeof dir, "%s/opener-%d", (const char *)arg, i % 4);
        moraine_db *db;
        if (moraine_open(dir, &o, &db) == 0) moraine_close(db);
    }
    return NULL;
}

static void fork_while_opening(void)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/forks", root);
    if (mkdir(dir, 0700) != 0) {
        CHECK(0, "mkdir %s", dir);
        return;
    }
    opener_stop = 0;
    pthread_t th;
    CHECK_RC(pthread_create(&th, NULL, opener, dir), 0);
    int hung = 0, failed = 0;
    for (int i = 0; i < FORKS && !hung; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a child that waits on a lock no thread of it holds: killed, and counted below */
            char own[1200];
            snprintf(own, sizeof own, "%s/child-%d", dir, i);
            moraine_options o = {.no_sync = 1, .create = 1};
            moraine_db *db;
            int rc = moraine_open(own, &o, &db);
            if (!rc) rc = define_table(db);
            if (!rc) moraine_close(db);
            _exit(rc ? 1 : 0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) hung++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    }
    __atomic_store_n(&opener_stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(th, NULL);
    CHECK(hung == 0, "a child forked while another thread opened a catalog hung in its own moraine_open");
    CHECK_INT(failed, 0);
}

/* ---- marker_by_commit ---- */

static void marker_by_commit(void)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/marker", root);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_INT(db->need_marker, 0); /* it opened the environment: it wrote the marker */
    /* as if another handle had opened the environment and not yet committed
     * the marker: remove it, and mark this handle as one that found none */
    MDB_txn *t;
    CHECK_RC(mr_write_txn_begin(db, 0, &t), 0);
    mr_buf k = {0};
    CHECK_RC(mr_meta_key(&k, "format"), 0);
    MDB_val mk = {k.len, k.p};
    CHECK_RC(mdb_del(t, db->dbi, &mk, NULL), 0);
    CHECK_RC(mdb_txn_commit(t), 0);
    mr_writer_done(db->sh);
    mr_buf_free(&k);
    db->need_marker = 1;
    CHECK_RC(define_table(db), 0);
    CHECK_INT(db->need_marker, 0);
    moraine_close(db);
    moraine_options ro = {.no_sync = 1};
    db = NULL;
    CHECK_RC(moraine_open(dir, &ro, &db), 0);
    CHECK(db && moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify: %s", moraine_errmsg());
    moraine_close(db);
}

int main(void)
{
    check_seed("test_shared_env");
    if (!check_mkdtemp(root, sizeof root, "moraine-shared-env")) {
        CHECK(0, "a temporary directory");
        return check_done();
    }
    map_grown_elsewhere();
    open_not_blocked();
    fork_while_opening();
    marker_by_commit();
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) check_note("could not remove %s", root);
    return check_done();
}
