/*
 * test_store.c — the catalog through its public contract (moraine.h) only:
 * open/close, staged commits of partition specs, temporal reads, the refusals
 * (each must leave the store exactly as it was), read-only handles, NDJSON
 * import errors, a value damaged on disk, and opens that fail on a full disk
 * (a small tmpfs mounted in a child process's own mount namespace).
 *
 * The one place that goes around moraine is the damage: the catalog is closed,
 * its LMDB environment opened directly, and a live row's value overwritten with
 * bad bytes (docs/keyspace.md: live rows sit under keys starting with 'C').
 *
 * "Unchanged" is checked by reading everything back: every relation's every
 * version (MORAINE_ALL_VERSIONS), with its stored bytes and embedded children,
 * plus the last snapshot, compared byte for byte with the state before.
 */
#include "check.h"
#include "moraine.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <lmdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NO_END INT64_MIN /* end_snapshot NULL in the row helpers */
#define PI "ducklake_partition_info"
#define PC "ducklake_partition_column"

static const char *const PI_COLS[] = {"partition_id", "table_id", "begin_snapshot", "end_snapshot"};
static const char *const PC_COLS[] = {"partition_id", "table_id", "partition_key_index", "column_id", "transform"};

static char root[1024];

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", root, name); }

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[4096];
    mkdir(dir, 0775);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", p, strerror(errno));
        abort();
    }
    fputs(text, f);
    fclose(f);
}

/* ---- rows ------------------------------------------------------------------------ */

static moraine_value vint(int64_t i) { return (moraine_value){.type = MORAINE_INT, .i = i}; }
static moraine_value vnull(void) { return (moraine_value){.type = MORAINE_NULL}; }
static moraine_value vstr(const char *s) { return (moraine_value){.type = MORAINE_STR, .s = s, .len = strlen(s)}; }

static void pi_row(moraine_value r[4], int64_t pid, int64_t tid, int64_t begin, int64_t end)
{
    r[0] = vint(pid);
    r[1] = vint(tid);
    r[2] = vint(begin);
    r[3] = end == NO_END ? vnull() : vint(end);
}

static void pc_row(moraine_value r[5], int64_t pid, int64_t tid, int64_t idx, int64_t col, const char *transform)
{
    r[0] = vint(pid);
    r[1] = vint(tid);
    r[2] = vint(idx);
    r[3] = vint(col);
    r[4] = vstr(transform);
}

static int insert_pi(moraine_txn *t, int64_t pid, int64_t tid, int64_t begin, int64_t end)
{
    moraine_value r[4];
    pi_row(r, pid, tid, begin, end);
    return moraine_txn_insert(t, PI, r, 4, -1);
}

static int insert_pc(moraine_txn *t, int64_t pid, int64_t tid, int64_t idx, int64_t col, const char *transform)
{
    moraine_value r[5];
    pc_row(r, pid, tid, idx, col, transform);
    return moraine_txn_insert(t, PC, r, 5, -1);
}

static int end_pi(moraine_txn *t, int64_t pid, int64_t tid, int64_t begin)
{
    moraine_value r[4];
    pi_row(r, pid, tid, begin, NO_END);
    return moraine_txn_end(t, PI, r, 4);
}

static int is_int(const moraine_value *v, int64_t i) { return v->type == MORAINE_INT && v->i == i; }

/* end_snapshot as expected: NO_END means NULL */
static int is_end(const moraine_value *v, int64_t end) { return end == NO_END ? v->type == MORAINE_NULL : is_int(v, end); }

/* ---- a whole-catalog dump, to prove refusals change nothing --------------------- */

typedef struct {
    uint8_t *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void sb_int(sbuf *b, int64_t v) { sb_put(b, &v, sizeof v); }
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s) + 1); }

/* Everything a reader can see, in a canonical byte form. Returns 0 or the
 * first error. */
static int dump(moraine_db *db, sbuf *out)
{
    out->len = 0;
    int64_t last = -1;
    int rc = moraine_last_snapshot(db, &last);
    if (rc < 0) return rc;
    sb_int(out, rc);
    sb_int(out, rc ? last : 0);
    moraine_read *rd;
    if ((rc = moraine_read_begin(db, &rd))) return rc;
    moraine_relation_info info;
    for (size_t i = 0; moraine_relation_at(db, i, &info) == 1; i++) {
        sb_str(out, info.name);
        sb_int(out, (int64_t)info.ncols);
        sb_int(out, info.placement);
        for (size_t c = 0; c < info.ncols; c++) sb_str(out, info.colnames[c]);
        moraine_cursor *cur;
        if ((rc = moraine_scan_open(rd, info.name, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &cur))) break;
        moraine_row row;
        while ((rc = moraine_cursor_next(cur, &row)) == 1) {
            sb_int(out, row.ord);
            sb_int(out, (int64_t)row.raw_len);
            sb_put(out, row.raw, row.raw_len);
            sb_int(out, (int64_t)row.children_len);
            sb_put(out, row.children, row.children_len);
        }
        moraine_cursor_close(cur);
        if (rc < 0) break;
        rc = 0;
    }
    moraine_read_end(rd);
    return rc;
}

static int same_dump(const sbuf *a, const sbuf *b) { return a->len == b->len && memcmp(a->p, b->p, a->len) == 0; }

/* Checks that @db reads back exactly as @before. */
#define CHECK_UNCHANGED(db, before, what)                                                                               \
    do {                                                                                                                \
        sbuf after_ = {0};                                                                                              \
        int drc_ = dump((db), &after_);                                                                                 \
        CHECK(drc_ == 0, "%s: reading the catalog back failed: %s", (what), moraine_errmsg());                        \
        CHECK(same_dump((before), &after_), "%s: the catalog changed", (what));                                        \
        free(after_.p);                                                                                                 \
    } while (0)

/* ---- reading helpers ------------------------------------------------------------- */

typedef struct {
    int64_t pid, tid, idx, col;
    char transform[32];
} pcol;

/* The partition columns embedded in @row; -1 on a walk error. */
static int children_of(moraine_read *rd, const moraine_row *row, pcol *out, int max)
{
    moraine_children it;
    moraine_row ch;
    int n = 0, rc;
    moraine_row_children(rd, row, &it);
    while ((rc = moraine_children_next(&it, &ch)) == 1) {
        if (strcmp(ch.rel->name, PC) != 0 || ch.ncols != 5 || n >= max) {
            rc = -100;
            break;
        }
        pcol *c = &out[n++];
        c->pid = ch.vals[0].i;
        c->tid = ch.vals[1].i;
        c->idx = ch.vals[2].i;
        c->col = ch.vals[3].i;
        snprintf(c->transform, sizeof c->transform, "%.*s", (int)ch.vals[4].len, ch.vals[4].s);
        if (ch.vals[0].type != MORAINE_INT || ch.vals[3].type != MORAINE_INT || ch.vals[4].type != MORAINE_STR) rc = -101;
    }
    moraine_children_free(&it);
    return rc < 0 ? rc : n;
}

/* Expected spec: pid (or -1 for none), begin, end, and its columns. */
typedef struct {
    int64_t pid, begin, end;
    int ncols;
    int64_t col[3];
    const char *transform[3];
} spec;

static const spec P0 = {0, 1, 2, 2, {100, 101}, {"identity", "year"}};
static const spec P1 = {1, 2, 5, 1, {102}, {"month"}};
static const spec P2 = {2, 2, 2, 1, {103}, {"day"}}; /* begin == end: never visible */
static const spec P3 = {3, 5, NO_END, 2, {104, 105}, {"bucket(4)", "identity"}};
static const spec P5 = {5, 2, NO_END, 0, {0}, {NULL}}; /* table 20, no columns */

static void check_spec_row(moraine_read *rd, const moraine_row *row, int64_t tid, const spec *want, const char *what)
{
    CHECK(row->ncols == 4 && strcmp(row->rel->name, PI) == 0, "%s: not a 4-column %s row", what, PI);
    if (row->ncols != 4) return;
    CHECK(is_int(&row->vals[0], want->pid) && is_int(&row->vals[1], tid) && is_int(&row->vals[2], want->begin) &&
              is_end(&row->vals[3], want->end),
          "%s: got spec (pid %lld, table %lld, begin %lld, end %s%lld), want pid %lld", what, (long long)row->vals[0].i,
          (long long)row->vals[1].i, (long long)row->vals[2].i, row->vals[3].type == MORAINE_NULL ? "NULL/" : "", (long long)row->vals[3].i,
          (long long)want->pid);
    pcol cols[8];
    int n = children_of(rd, row, cols, 8);
    CHECK(n == want->ncols, "%s: spec %lld has %d partition columns, want %d", what, (long long)want->pid, n, want->ncols);
    for (int i = 0; i < n && i < want->ncols; i++) {
        CHECK(cols[i].pid == want->pid && cols[i].tid == tid && cols[i].idx == i && cols[i].col == want->col[i] &&
                  strcmp(cols[i].transform, want->transform[i]) == 0,
              "%s: partition column %d is (%lld,%lld,%lld,%lld,'%s')", what, i, (long long)cols[i].pid, (long long)cols[i].tid,
              (long long)cols[i].idx, (long long)cols[i].col, cols[i].transform);
    }
}

/* The (table_id, partition_id) pairs a scan yields, as "t:p,t:p". */
static int scan_pairs(moraine_read *rd, int64_t scope, int64_t snap, char *out, size_t n)
{
    moraine_cursor *c;
    int rc = moraine_scan_open(rd, PI, scope, snap, &c);
    if (rc) return rc;
    moraine_row row;
    size_t o = 0;
    out[0] = 0;
    while ((rc = moraine_cursor_next(c, &row)) == 1 && o < n)
        o += (size_t)snprintf(out + o, n - o, "%s%lld:%lld", o ? "," : "", (long long)row.vals[1].i, (long long)row.vals[0].i);
    moraine_cursor_close(c);
    return rc < 0 ? rc : 0;
}

/* The column_id of every partition column a child scan yields, "100,101". */
static int scan_child_cols(moraine_read *rd, int64_t scope, int64_t snap, char *out, size_t n)
{
    moraine_cursor *c;
    int rc = moraine_scan_open(rd, PC, scope, snap, &c);
    if (rc) return rc;
    moraine_row row;
    size_t o = 0;
    out[0] = 0;
    while ((rc = moraine_cursor_next(c, &row)) == 1 && o < n) {
        if (strcmp(row.rel->name, PC) != 0) return -100;
        o += (size_t)snprintf(out + o, n - o, "%s%lld", o ? "," : "", (long long)row.vals[3].i);
    }
    moraine_cursor_close(c);
    return rc < 0 ? rc : 0;
}

/* ---- open / close -------------------------------------------------------------------- */

static void test_open_close(void)
{
    char p[4096];
    moraine_db *db = NULL;
    moraine_options o;

    path_of(p, sizeof p, "missing");
    memset(&o, 0, sizeof o);
    CHECK_RC(moraine_open(p, &o, &db), MORAINE_EIO);
    CHECK(strstr(moraine_errmsg(), p) != NULL, "message '%s' does not name the path", moraine_errmsg());
    o.read_only = 1;
    o.create = 1;
    CHECK_RC(moraine_open(p, &o, &db), MORAINE_EIO);
    struct stat st;
    CHECK(stat(p, &st) != 0, "a failed read-only open created %s", p);

    path_of(p, sizeof p, "plainfile");
    write_file(root, "plainfile", "not a directory\n");
    CHECK_RC(moraine_open(p, NULL, &db), MORAINE_EIO);

    path_of(p, sizeof p, "fresh");
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    int64_t last = 12345;
    CHECK_RC(moraine_last_snapshot(db, &last), 0);
    moraine_relation_info info;
    CHECK_RC(moraine_relation_at(db, 0, &info), 0);
    CHECK_RC(moraine_relation(db, PI, &info), MORAINE_ENOTFOUND);
    moraine_close(db);
    moraine_close(NULL);

    memset(&o, 0, sizeof o); /* reopen without create */
    db = NULL;
    CHECK_RC(moraine_open(p, &o, &db), 0);
    CHECK_RC(moraine_last_snapshot(db, &last), 0);
    moraine_close(db);

    /* an LMDB environment that is not a moraine catalog */
    char q[4096];
    path_of(q, sizeof q, "foreign");
    mkdir(q, 0775);
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    int ok = mdb_env_create(&env) == 0 && mdb_env_open(env, q, 0, 0664) == 0 && mdb_txn_begin(env, NULL, 0, &t) == 0 &&
             mdb_dbi_open(t, NULL, 0, &dbi) == 0;
    if (ok) {
        MDB_val k = {3, "abc"}, v = {3, "xyz"};
        ok = mdb_put(t, dbi, &k, &v, 0) == 0 && mdb_txn_commit(t) == 0;
    }
    mdb_env_close(env);
    CHECK(ok, "setting up a foreign LMDB environment");
    CHECK_RC(moraine_open(q, NULL, &db), MORAINE_ECORRUPT);

    /* a data.mdb that is not LMDB: opening it (read-only or not) fails and
     * leaves nothing behind (LMDB creates lock.mdb first); a lock.mdb that
     * was there stays */
    char f[4200];
    path_of(q, sizeof q, "notlmdb");
    static const char foreign[] = "this is not an LMDB file, only text long enough to be read as one\n";
    write_file(q, "data.mdb", foreign);
    for (int ro = 1; ro >= 0; ro--) {
        memset(&o, 0, sizeof o);
        o.read_only = ro;
        CHECK(moraine_open(q, &o, &db) != 0, "a data.mdb that is not LMDB was opened (read_only %d)", ro);
        snprintf(f, sizeof f, "%s/lock.mdb", q);
        CHECK(stat(f, &st) != 0, "a failed open (read_only %d) of a foreign data.mdb left %s", ro, f);
        snprintf(f, sizeof f, "%s/data.mdb", q);
        CHECK(stat(f, &st) == 0 && (size_t)st.st_size == strlen(foreign), "a failed open (read_only %d) changed or removed %s", ro, f);
    }
    write_file(q, "lock.mdb", "mine\n");
    CHECK(moraine_open(q, NULL, &db) != 0, "a data.mdb that is not LMDB was opened");
    snprintf(f, sizeof f, "%s/lock.mdb", q);
    CHECK(stat(f, &st) == 0, "a failed open removed the lock.mdb that was there before");

    /* a map LMDB cannot have (ENOMEM): a directory the open created is
     * removed with what it put in it; one that was there stays, with what it
     * held */
    path_of(q, sizeof q, "hugemap");
    memset(&o, 0, sizeof o);
    o.create = 1;
    o.map_size = (size_t)1 << 62;
    o.max_map_size = o.map_size;
    CHECK(moraine_open(q, &o, &db) != 0, "a map of 2^62 bytes was opened");
    CHECK(stat(q, &st) != 0, "a failed open left the directory %s it created", q);
    write_file(q, "notes.txt", "mine\n");
    CHECK(moraine_open(q, &o, &db) != 0, "a map of 2^62 bytes was opened");
    snprintf(f, sizeof f, "%s/notes.txt", q);
    CHECK(stat(q, &st) == 0 && stat(f, &st) == 0, "a failed open removed a directory, or a file, that was there");
}

/* The first @n bytes of @src/data.mdb as @dst/data.mdb (@dst created). */
static int copy_prefix(const char *src, const char *dst, long n)
{
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/data.mdb", src);
    snprintf(b, sizeof b, "%s/data.mdb", dst);
    mkdir(dst, 0700);
    FILE *in = fopen(a, "rb"), *out = fopen(b, "wb");
    int ok = in && out;
    for (long i = 0; ok && i < n; i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        ok = fputc(c, out) != EOF;
    }
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

/* A data.mdb cut short (an interrupted copy) is refused at open, ECORRUPT
 * naming both sizes, before a page past its end is read through the map
 * (which killed the process with SIGBUS: a user's report). */
static void test_truncated_store(void)
{
    char p[4096], q[4096], f[4200];
    path_of(p, sizeof p, "whole");
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    for (int64_t s = 1; s <= 60; s++) { /* enough commits for the store to hold many pages */
        moraine_txn *t;
        CHECK_RC(moraine_txn_begin(db, s, &t), 0);
        CHECK_RC(moraine_txn_define(t, PI, 4, PI_COLS), 0);
        for (int64_t k = 0; k < 40; k++) CHECK_RC(insert_pi(t, s * 100 + k, s * 100 + k, s, NO_END), 0);
        CHECK_RC(moraine_txn_commit(t), 0);
    }
    moraine_close(db);
    snprintf(f, sizeof f, "%s/data.mdb", p);
    struct stat st;
    CHECK(stat(f, &st) == 0 && st.st_size > 8 * 4096, "the store is %lld bytes", (long long)st.st_size);
    const long cuts[] = {4097, 5000, 8192, 12288, (long)st.st_size / 2, (long)st.st_size - 4096, (long)st.st_size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char name[64];
        snprintf(name, sizeof name, "cut-%ld", cuts[i]);
        path_of(q, sizeof q, name);
        CHECK(copy_prefix(p, q, cuts[i]), "copying %ld bytes", cuts[i]);
        for (int ro = 0; ro < 2; ro++) {
            moraine_options o = {0};
            o.read_only = ro;
            db = NULL;
            int rc = moraine_open(q, &o, &db);
            /* under 8 KB the second meta page is cut: LMDB itself may refuse the file (MDB_INVALID) */
            int lmdb_refused = cuts[i] < 8192 && rc == MORAINE_ELMDB && strstr(moraine_errmsg(), "not an LMDB file");
            CHECK(lmdb_refused || (rc == MORAINE_ECORRUPT && strstr(moraine_errmsg(), "cut short")), "%ld bytes, read_only %d: %d '%s'",
                  cuts[i], ro, rc, moraine_errmsg());
            CHECK(db == NULL, "a handle was returned");
        }
        snprintf(f, sizeof f, "%s/data.mdb", q);
        struct stat cst;
        CHECK(stat(f, &cst) == 0 && cst.st_size == cuts[i], "the open changed the cut file (%lld bytes)", (long long)cst.st_size);
        snprintf(f, sizeof f, "%s/lock.mdb", q);
        CHECK(stat(f, &cst) != 0, "the refused open left %s", f);
    }
    /* the whole file still opens */
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    int64_t last = 0;
    CHECK_RC(moraine_last_snapshot(db, &last), 1);
    CHECK_INT(last, 60);
    moraine_close(db);
}

/* ---- a full disk ------------------------------------------------------------------ */

/* Writes @text to the file @path (of /proc); 0 or -1. */
static int write_proc(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Mounts a tmpfs of @pages pages at @mnt in a mount namespace of this
 * (child) process's own: no other process sees it, and it goes when the
 * process ends. As root, CLONE_NEWNS; else an unprivileged user namespace
 * (the caller mapped to root in it). Returns 0, or -1 when this machine
 * allows neither. */
static int mount_small_tmpfs(const char *mnt, long pages)
{
    if (unshare(CLONE_NEWNS) != 0) {
        char map[64];
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return -1;
        snprintf(map, sizeof map, "0 %lu 1", (unsigned long)uid);
        if (write_proc("/proc/self/uid_map", map) != 0) return -1;
        snprintf(map, sizeof map, "0 %lu 1", (unsigned long)gid);
        if (write_proc("/proc/self/setgroups", "deny") != 0 || write_proc("/proc/self/gid_map", map) != 0) return -1;
    }
    /* the mount must not reach the machine's own mounts (a shared / propagates) */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
    char opt[64];
    snprintf(opt, sizeof opt, "size=%ld,mode=0700", pages * sysconf(_SC_PAGESIZE));
    return mount("tmpfs", mnt, "tmpfs", 0, opt);
}

enum { FULL_REFUSED, FULL_OPENED, FULL_CHECK_FAILED, FULL_NO_MOUNT };

/* Run in a child: moraine_open of a new catalog directory in a tmpfs of
 * @pages pages at @mnt (@existing: of a directory that was there, holding a
 * file, in @pages more). Returns FULL_REFUSED (the open failed, ENOSPC, and
 * left what it should), FULL_OPENED, FULL_CHECK_FAILED (printed) or
 * FULL_NO_MOUNT. */
static int full_disk_open(const char *mnt, long pages, int existing)
{
    if (mount_small_tmpfs(mnt, pages + existing) != 0) return FULL_NO_MOUNT;
    char p[4200], f[4300];
    snprintf(p, sizeof p, "%s/%s", mnt, existing ? "keep" : "new");
    snprintf(f, sizeof f, "%s/notes.txt", p);
    if (existing) write_file(p, "notes.txt", "mine\n");
    moraine_db *db = NULL;
    int rc = moraine_open(p, NULL, &db);
    struct stat st;
    int ok = 1;
    if (rc == 0) {
        moraine_close(db);
    } else if (!strstr(moraine_errmsg(), strerror(ENOSPC))) {
        fprintf(stderr, "a tmpfs of %ld pages: the open failed, but not for want of space: %d '%s'\n", pages, rc, moraine_errmsg());
        ok = 0;
    } else if (!existing && stat(p, &st) == 0) {
        fprintf(stderr, "a tmpfs of %ld pages: the failed open left the directory %s it created\n", pages, p);
        ok = 0;
    }
    if (existing && (stat(p, &st) != 0 || stat(f, &st) != 0 || st.st_size != 5)) {
        fprintf(stderr, "a tmpfs of %ld pages: the open (rc %d) removed the directory %s that was there, or its file\n", pages, rc, p);
        ok = 0;
    }
    return !ok ? FULL_CHECK_FAILED : rc == 0 ? FULL_OPENED : FULL_REFUSED;
}

/* A new catalog on a full disk: every open that fails removes the directory
 * it created, with what LMDB put in it, whichever step failed; a directory
 * that was there stays with its file. A tmpfs of 1, 2, 3, ... pages until
 * the open succeeds: with LMDB 0.9 (pages of the OS page size) 1 and 2 pages
 * fail in mdb_env_open (the two meta pages of data.mdb do not fit beside
 * lock.mdb's first page), 3 at the first commit (the page of the format
 * marker: it left data.mdb and lock.mdb in the directory), 4 opens. */
static void test_open_full_disk(void)
{
    char mnt[4096];
    path_of(mnt, sizeof mnt, "full");
    mkdir(mnt, 0700);
    for (int existing = 0; existing < 2; existing++) {
        int refused = 0, opened = 0;
        for (long pages = 1; pages <= 32 && !opened; pages++) {
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid == 0) _exit(full_disk_open(mnt, pages, existing));
            int status = 0;
            int waited = pid > 0 && waitpid(pid, &status, 0) == pid;
            CHECK(waited, "fork: %s", strerror(errno));
            CHECK(!waited || WIFEXITED(status), "a tmpfs of %ld pages: the process opening the catalog died (signal %d)", pages,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            if (!waited || !WIFEXITED(status)) break;
            int code = WEXITSTATUS(status);
            if (code == FULL_NO_MOUNT) {
                /* neither root nor a user namespace: a skip, a failure where the setup should allow it */
                const char *ci = getenv("CI"), *strict = getenv("MORAINE_NO_SKIP");
                int must = (ci && strcmp(ci, "true") == 0) || (strict && strcmp(strict, "1") == 0);
                CHECK(!must, "cannot mount a small tmpfs (needs root or user namespaces)");
                if (!must) fprintf(stderr, "test_store: a full disk not tested: cannot mount a small tmpfs (needs root or user namespaces)\n");
                rmdir(mnt);
                return;
            }
            CHECK(code == FULL_REFUSED || code == FULL_OPENED, "a tmpfs of %ld pages (%s directory): see above", pages,
                  existing ? "an existing" : "a new");
            refused += code == FULL_REFUSED;
            opened = code == FULL_OPENED;
        }
        CHECK(refused > 0 && opened, "%s directory: %d sizes refused, then %s", existing ? "an existing" : "a new", refused,
              opened ? "one opened" : "none of up to 32 pages opened");
    }
    CHECK(rmdir(mnt) == 0, "the mount point %s: %s", mnt, strerror(errno));
}

/* ---- commits and reads ------------------------------------------------------------- */

/* S1: spec 0 of table 10 (identity, year). S2: spec 0 ends; spec 1 (month);
 * spec 2 (day) begins and ends at 2; table 20 gets spec 5 without columns.
 * S5: spec 1 ends; spec 3 (bucket(4), identity). */
static void build_history(moraine_db *db)
{
    moraine_txn *t;
    CHECK_RC(moraine_txn_begin(db, 1, &t), 0);
    CHECK_RC(moraine_txn_define(t, PI, 4, PI_COLS), 0);
    CHECK_RC(moraine_txn_define(t, PC, 5, PC_COLS), 0);
    CHECK_RC(moraine_txn_define(t, PI, 4, PI_COLS), 0); /* the same again: no-op */
    CHECK_RC(insert_pi(t, 0, 10, 1, NO_END), 0);
    CHECK_RC(insert_pc(t, 0, 10, 0, 100, "identity"), 0);
    CHECK_RC(insert_pc(t, 0, 10, 1, 101, "year"), 0);
    CHECK_RC(moraine_txn_commit(t), 0);

    CHECK_RC(moraine_txn_begin(db, 2, &t), 0);
    CHECK_RC(end_pi(t, 0, 10, 1), 0);
    CHECK_RC(insert_pi(t, 1, 10, 2, NO_END), 0);
    CHECK_RC(insert_pc(t, 1, 10, 0, 102, "month"), 0);
    CHECK_RC(insert_pi(t, 2, 10, 2, 2), 0); /* begin == end: an intermediate spec */
    CHECK_RC(insert_pc(t, 2, 10, 0, 103, "day"), 0);
    CHECK_RC(insert_pi(t, 5, 20, 2, NO_END), 0);
    CHECK_RC(moraine_txn_commit(t), 0);

    CHECK_RC(moraine_txn_begin(db, 5, &t), 0); /* a gap in snapshot ids */
    CHECK_RC(end_pi(t, 1, 10, 2), 0);
    CHECK_RC(insert_pi(t, 3, 10, 5, NO_END), 0);
    CHECK_RC(insert_pc(t, 3, 10, 0, 104, "bucket(4)"), 0);
    CHECK_RC(insert_pc(t, 3, 10, 1, 105, "identity"), 0);
    CHECK_RC(moraine_txn_commit(t), 0);
}

static void check_relations(moraine_db *db)
{
    moraine_relation_info pi, pc;
    CHECK_RC(moraine_relation(db, PI, &pi), 0);
    CHECK_RC(moraine_relation(db, PC, &pc), 0);
    CHECK(pi.placement == MORAINE_PLACE_TEMPORAL && pi.ncols == 4 && pi.begin_col == 2 && pi.end_col == 3 && pi.parent == NULL,
          "%s descriptor: placement %d, %zu columns, begin %d, end %d", PI, (int)pi.placement, pi.ncols, pi.begin_col, pi.end_col);
    int types_ok = 1;
    for (size_t i = 0; i < pi.ncols; i++) types_ok &= pi.coltypes[i] == MORAINE_COL_BIGINT && strcmp(pi.colnames[i], PI_COLS[i]) == 0;
    CHECK(types_ok, "%s columns are not the four BIGINTs in order", PI);
    CHECK(pc.placement == MORAINE_PLACE_CHILD && pc.ncols == 5 && pc.parent && strcmp(pc.parent, PI) == 0 && pc.begin_col == -1,
          "%s descriptor: placement %d, parent %s", PC, (int)pc.placement, pc.parent ? pc.parent : "NULL");
    CHECK(pc.coltypes[4] == MORAINE_COL_VARCHAR && pc.coltypes[3] == MORAINE_COL_BIGINT, "%s column types", PC);
    CHECK(moraine_column_index(&pc, "transform") == 4 && moraine_column_index(&pc, "nope") == -1, "moraine_column_index");
    moraine_relation_info first;
    CHECK(moraine_relation_at(db, 0, &first) == 1 && strcmp(first.name, PI) == 0, "relation 0 is not %s", PI);
    CHECK(moraine_relation_at(db, 1, &first) == 1 && strcmp(first.name, PC) == 0, "relation 1 is not %s", PC);
    CHECK(moraine_relation_at(db, 2, &first) == 0, "a third relation");
    /* moraine_known_column_type: a defined relation's types, without a catalog */
    const moraine_relation_info *rels[] = {&pi, &pc};
    int same = 1;
    for (size_t r = 0; r < 2; r++)
        for (size_t i = 0; i < rels[r]->ncols; i++) same &= moraine_known_column_type(rels[r]->name, rels[r]->colnames[i]) == rels[r]->coltypes[i];
    CHECK(same, "moraine_known_column_type differs from a defined relation's coltypes");
    CHECK(moraine_known_column_type("ducklake_data_file", "path") == MORAINE_COL_VARCHAR &&
              moraine_known_column_type("ducklake_data_file", "encryption_key") == MORAINE_COL_VARCHAR &&
              moraine_known_column_type("ducklake_data_file", "path_is_relative") == MORAINE_COL_BOOLEAN &&
              moraine_known_column_type("ducklake_data_file", "data_file_id") == MORAINE_COL_BIGINT &&
              moraine_known_column_type("ducklake_snapshot", "snapshot_time") == MORAINE_COL_VARCHAR,
          "moraine_known_column_type of known columns");
    CHECK(moraine_known_column_type("ducklake_data_file", "no_such_column") == MORAINE_COL_ANY &&
              moraine_known_column_type("ducklake_inlined_data_1_1", "x") == MORAINE_COL_ANY &&
              moraine_known_column_type(NULL, "path") == MORAINE_COL_ANY &&
              moraine_known_column_type("ducklake_data_file", NULL) == MORAINE_COL_ANY,
          "moraine_known_column_type of what moraine does not know");
}

static void check_reads(moraine_db *db)
{
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    int64_t last = 0;
    CHECK(moraine_read_last_snapshot(rd, &last) == 1 && last == 5, "read's last snapshot %lld", (long long)last);
    CHECK(moraine_last_snapshot(db, &last) == 1 && last == 5, "last snapshot %lld", (long long)last);

    /* the spec in force, snapshot by snapshot */
    const spec *want10[] = {NULL, &P0, &P1, &P1, &P1, &P3, &P3, &P3};
    moraine_row row;
    char what[64];
    for (int s = 0; s < 8; s++) {
        snprintf(what, sizeof what, "table 10 at snapshot %d", s);
        int rc = moraine_partition_spec_at(rd, 10, s, &row);
        if (!want10[s]) CHECK(rc == 0, "%s: a spec where there is none (rc %d)", what, rc);
        else {
            CHECK(rc == 1, "%s: rc %d: %s", what, rc, moraine_errmsg());
            if (rc == 1) check_spec_row(rd, &row, 10, want10[s], what);
        }
        snprintf(what, sizeof what, "table 20 at snapshot %d", s);
        rc = moraine_partition_spec_at(rd, 20, s, &row);
        if (s < 2) CHECK(rc == 0, "%s: a spec before it began (rc %d)", what, rc);
        else {
            CHECK(rc == 1, "%s: rc %d", what, rc);
            if (rc == 1) check_spec_row(rd, &row, 20, &P5, what);
        }
    }
    CHECK_RC(moraine_partition_spec_at(rd, 99, 5, &row), 0);
    CHECK_RC(moraine_partition_spec_at(rd, 10, INT64_MAX, &row), 1);

    /* by id, whatever the lifetime: the begin == end spec included */
    const spec *all10[] = {&P0, &P1, &P2, &P3};
    for (int i = 0; i < 4; i++) {
        snprintf(what, sizeof what, "spec %lld of table 10 by id", (long long)all10[i]->pid);
        int rc = moraine_partition_spec_by_id(rd, 10, all10[i]->pid, &row);
        CHECK(rc == 1, "%s: rc %d: %s", what, rc, moraine_errmsg());
        if (rc == 1) check_spec_row(rd, &row, 10, all10[i], what);
    }
    CHECK(moraine_partition_spec_by_id(rd, 20, 5, &row) == 1, "spec 5 of table 20 by id");
    CHECK_RC(moraine_partition_spec_by_id(rd, 10, 4, &row), 0);
    CHECK_RC(moraine_partition_spec_by_id(rd, 10, 5, &row), 0); /* spec 5 is table 20's */
    CHECK_RC(moraine_partition_spec_by_id(rd, 11, 0, &row), 0);

    /* scans: visible versions in key order (table_id, partition_id) */
    static const struct {
        int64_t scope, snap;
        const char *want;
    } scans[] = {
        {MORAINE_ANY_SCOPE, 0, ""},
        {MORAINE_ANY_SCOPE, 1, "10:0"},
        {MORAINE_ANY_SCOPE, 2, "10:1,20:5"},
        {MORAINE_ANY_SCOPE, 4, "10:1,20:5"},
        {MORAINE_ANY_SCOPE, 5, "10:3,20:5"},
        {MORAINE_ANY_SCOPE, 1000, "10:3,20:5"},
        {MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, "10:0,10:1,10:2,10:3,20:5"},
        {10, MORAINE_ALL_VERSIONS, "10:0,10:1,10:2,10:3"},
        {10, 1, "10:0"},
        {10, 3, "10:1"},
        {10, 5, "10:3"},
        {20, 1, ""},
        {20, 2, "20:5"},
        {30, MORAINE_ALL_VERSIONS, ""},
    };
    char got[256];
    for (size_t i = 0; i < sizeof scans / sizeof scans[0]; i++) {
        int rc = scan_pairs(rd, scans[i].scope, scans[i].snap, got, sizeof got);
        CHECK(rc == 0 && strcmp(got, scans[i].want) == 0, "scan scope %lld snapshot %lld: got '%s' (rc %d), want '%s'",
              (long long)scans[i].scope, (long long)scans[i].snap, got, rc, scans[i].want);
    }

    /* every version with its own begin/end and row position */
    moraine_cursor *c;
    CHECK_RC(moraine_scan_open(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    const spec *order[] = {&P0, &P1, &P2, &P3, &P5};
    const int64_t tids[] = {10, 10, 10, 10, 20}, ords[] = {0, 1, 2, 4, 3};
    int i = 0, rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1 && i < 5) {
        snprintf(what, sizeof what, "version %d of all", i);
        check_spec_row(rd, &row, tids[i], order[i], what);
        CHECK(row.ord == ords[i], "%s: ord %lld, want %lld", what, (long long)row.ord, (long long)ords[i]);
        i++;
    }
    CHECK(rc == 0 && i == 5, "all versions: %d rows, last rc %d", i, rc);
    moraine_cursor_close(c);

    /* the child relation, parent by parent */
    static const struct {
        int64_t scope, snap;
        const char *want;
    } kids[] = {
        {MORAINE_ANY_SCOPE, 0, ""},
        {MORAINE_ANY_SCOPE, 1, "100,101"},
        {MORAINE_ANY_SCOPE, 2, "102"},
        {MORAINE_ANY_SCOPE, 5, "104,105"},
        {MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, "100,101,102,103,104,105"},
        {10, 5, "104,105"},
        {20, 5, ""},
    };
    for (size_t k = 0; k < sizeof kids / sizeof kids[0]; k++) {
        rc = scan_child_cols(rd, kids[k].scope, kids[k].snap, got, sizeof got);
        CHECK(rc == 0 && strcmp(got, kids[k].want) == 0, "child scan scope %lld snapshot %lld: got '%s' (rc %d), want '%s'",
              (long long)kids[k].scope, (long long)kids[k].snap, got, rc, kids[k].want);
    }

    CHECK_RC(moraine_scan_open(rd, "ducklake_nothing", MORAINE_ANY_SCOPE, 1, &c), MORAINE_ENOTFOUND);
    moraine_read_end(rd);
}

/* ---- refusals ---------------------------------------------------------------------- */

static void test_refusals(moraine_db *db)
{
    sbuf before = {0};
    CHECK_RC(dump(db, &before), 0);
    moraine_txn *t = NULL;
    moraine_value r[5];

    /* snapshot ids not above the last */
    CHECK_RC(moraine_txn_begin(db, 5, &t), MORAINE_ESNAPSHOT);
    CHECK(strstr(moraine_errmsg(), "5") != NULL, "ESNAPSHOT message '%s' does not name the snapshot", moraine_errmsg());
    CHECK_RC(moraine_txn_begin(db, 4, &t), MORAINE_ESNAPSHOT);
    CHECK_RC(moraine_txn_begin(db, 0, &t), MORAINE_ESNAPSHOT);
    CHECK_RC(moraine_txn_begin(db, -3, &t), MORAINE_ESNAPSHOT);
    CHECK_UNCHANGED(db, &before, "ESNAPSHOT");

    /* ending rows that are not live: already ended, begin == end, never there */
    static const struct {
        int64_t pid, tid, begin;
        const char *what;
    } notlive[] = {{0, 10, 1, "an ended row"}, {2, 10, 2, "a begin == end row"}, {77, 10, 1, "a row never inserted"}, {5, 30, 2, "another table's key"}};
    for (size_t i = 0; i < sizeof notlive / sizeof notlive[0]; i++) {
        CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
        CHECK_RC(end_pi(t, notlive[i].pid, notlive[i].tid, notlive[i].begin), MORAINE_ENOTLIVE);
        CHECK(strstr(moraine_errmsg(), PI) != NULL, "ENOTLIVE (%s) message '%s' does not name the table", notlive[i].what, moraine_errmsg());
        CHECK_RC(moraine_txn_commit(t), MORAINE_ENOTLIVE);
        CHECK_UNCHANGED(db, &before, notlive[i].what);
    }

    /* a row ended twice in one commit */
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(end_pi(t, 3, 10, 5), 0);
    CHECK_RC(end_pi(t, 3, 10, 5), MORAINE_ENOTLIVE);
    CHECK_RC(moraine_txn_commit(t), MORAINE_ENOTLIVE);
    CHECK_UNCHANGED(db, &before, "ending a row twice");

    /* a duplicate live key: against the store, and within one commit */
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(insert_pi(t, 3, 10, 6, NO_END), MORAINE_EEXIST);
    CHECK(strstr(moraine_errmsg(), PI) != NULL, "EEXIST message '%s' does not name the table", moraine_errmsg());
    CHECK_RC(moraine_txn_commit(t), MORAINE_EEXIST);
    CHECK_UNCHANGED(db, &before, "duplicate live key");
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(insert_pi(t, 7, 30, 6, NO_END), 0); /* table 30 has no live spec yet */
    CHECK_RC(insert_pi(t, 7, 30, 6, NO_END), MORAINE_EEXIST);
    CHECK_RC(moraine_txn_commit(t), MORAINE_EEXIST);
    CHECK_UNCHANGED(db, &before, "duplicate live key within a commit");

    /* a second live spec for one table (each table has at most one) */
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(insert_pi(t, 8, 10, 6, NO_END), MORAINE_EEXIST);
    CHECK(strstr(moraine_errmsg(), "already has a live spec") != NULL, "message '%s'", moraine_errmsg());
    CHECK_RC(moraine_txn_commit(t), MORAINE_EEXIST);
    CHECK_UNCHANGED(db, &before, "a second live spec");

    /* wrong value types: the message names table and column */
    static const struct {
        const char *table;
        int col;
        const char *colname;
        moraine_value bad;
    } types[] = {
        {PI, 1, "'table_id'", {.type = MORAINE_STR, .s = "ten", .len = 3}},
        {PI, 0, "'partition_id'", {.type = MORAINE_REAL, .d = 1.5}},
        {PI, 3, "'end_snapshot'", {.type = MORAINE_BOOL, .i = 1}},
        {PI, 2, "'begin_snapshot'", {.type = MORAINE_JSON, .s = "6", .len = 1}},
        {PC, 3, "'column_id'", {.type = MORAINE_STR, .s = "", .len = 0}},
        {PC, 4, "'transform'", {.type = MORAINE_INT, .i = 1}},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t n = strcmp(types[i].table, PI) == 0 ? 4 : 5;
        if (n == 4) pi_row(r, 8, 10, 6, NO_END);
        else pc_row(r, 3, 10, 2, 106, "identity");
        r[types[i].col] = types[i].bad;
        CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
        CHECK_RC(moraine_txn_insert(t, types[i].table, r, n, -1), MORAINE_EINVAL);
        const char *m = moraine_errmsg();
        CHECK(strstr(m, types[i].table) != NULL && strstr(m, types[i].colname) != NULL, "wrong type for %s %s: message '%s'",
              types[i].table, types[i].colname, m);
        CHECK_RC(moraine_txn_commit(t), MORAINE_EINVAL);
        CHECK_UNCHANGED(db, &before, "wrong value type");
    }

    /* other bad inserts */
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    pi_row(r, 8, 10, 6, NO_END);
    CHECK_RC(moraine_txn_insert(t, PI, r, 3, -1), MORAINE_EINVAL); /* column count */
    moraine_txn_abort(t);
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(moraine_txn_insert(t, "ducklake_nothing", r, 4, -1), MORAINE_ENOTFOUND);
    moraine_txn_abort(t);
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    pi_row(r, 8, 10, 5, NO_END); /* begin_snapshot is not the commit's snapshot */
    CHECK_RC(moraine_txn_insert(t, PI, r, 4, -1), MORAINE_EINVAL);
    CHECK(strstr(moraine_errmsg(), "begin_snapshot") != NULL, "message '%s'", moraine_errmsg());
    moraine_txn_abort(t);
    CHECK_UNCHANGED(db, &before, "bad inserts, aborted");

    /* a commit after a failed call: the first error, nothing written (the
     * good insert before the failure included), later calls refused */
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(insert_pi(t, 4, 30, 6, NO_END), 0);
    CHECK_RC(insert_pc(t, 4, 30, 0, 106, "identity"), 0);
    CHECK_RC(end_pi(t, 0, 10, 1), MORAINE_ENOTLIVE);
    char first[1024];
    snprintf(first, sizeof first, "%s", moraine_errmsg());
    pi_row(r, 8, 10, 6, NO_END);
    r[1] = vstr("ten");
    int rc = moraine_txn_insert(t, PI, r, 4, -1);
    CHECK(rc < 0, "a call after a failure succeeded");
    CHECK_RC(insert_pi(t, 9, 10, 6, NO_END), MORAINE_ETXN);
    CHECK_RC(moraine_txn_commit(t), MORAINE_ENOTLIVE);
    CHECK(strstr(moraine_errmsg(), first) != NULL || strstr(first, moraine_errmsg()) != NULL,
          "commit's message '%s' is not the first failure's '%s'", moraine_errmsg(), first);
    CHECK_UNCHANGED(db, &before, "commit after a failed call");
    int64_t last = 0;
    CHECK(moraine_last_snapshot(db, &last) == 1 && last == 5, "last snapshot %lld after a failed commit", (long long)last);

    /* one commit at a time; the failed ones did not hold the writer */
    moraine_txn *t2 = NULL;
    CHECK_RC(moraine_txn_begin(db, 6, &t), 0);
    CHECK_RC(moraine_txn_begin(db, 7, &t2), MORAINE_ETXN);
    moraine_txn_abort(t);
    CHECK_UNCHANGED(db, &before, "aborted commit");
    free(before.p);
}

/* ---- persistence and read-only handles ---------------------------------------------- */

static moraine_db *test_reopen_and_read_only(moraine_db *db, const char *path)
{
    sbuf before = {0};
    CHECK_RC(dump(db, &before), 0);
    moraine_close(db);

    db = NULL;
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    if (!db) return NULL;
    CHECK_UNCHANGED(db, &before, "close and reopen");
    moraine_close(db);

    moraine_options o;
    memset(&o, 0, sizeof o);
    o.read_only = 1;
    db = NULL;
    CHECK_RC(moraine_open(path, &o, &db), 0);
    if (db) {
        moraine_txn *t = NULL;
        CHECK_RC(moraine_txn_begin(db, 6, &t), MORAINE_EREADONLY);
        CHECK_RC(moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t), MORAINE_EREADONLY);
        char dir[4096];
        path_of(dir, sizeof dir, "import_good");
        CHECK_RC(moraine_import_ndjson(db, dir, NULL, NULL), MORAINE_EREADONLY);
        CHECK_UNCHANGED(db, &before, "read-only handle");
        moraine_read *rd;
        moraine_row row;
        CHECK_RC(moraine_read_begin(db, &rd), 0);
        CHECK_RC(moraine_partition_spec_at(rd, 10, 5, &row), 1);
        moraine_read_end(rd);
        moraine_close(db);
    }
    free(before.p);
    db = NULL;
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    return db;
}

/* ---- import ----------------------------------------------------------------------------- */

static void check_empty(moraine_db *db, const char *what)
{
    int64_t last = -1;
    CHECK(moraine_last_snapshot(db, &last) == 0, "%s: the catalog has snapshot %lld", what, (long long)last);
    moraine_relation_info info;
    CHECK(moraine_relation_at(db, 0, &info) == 0, "%s: the catalog has relation %s", what, info.name);
}

#define PI_LINE(pid, tid, b, e) "{\"partition_id\":" #pid ",\"table_id\":" #tid ",\"begin_snapshot\":" #b ",\"end_snapshot\":" #e "}\n"
#define PC_LINE(pid, tid, i, c, tr)                                                                                     \
    "{\"partition_id\":" #pid ",\"table_id\":" #tid ",\"partition_key_index\":" #i ",\"column_id\":" #c ",\"transform\":\"" tr "\"}\n"
#define SNAP_LINE(id)                                                                                                   \
    "{\"snapshot_id\":" #id ",\"snapshot_time\":\"2026-01-01 00:00:0" #id "+00\",\"schema_version\":" #id                 \
    ",\"next_catalog_id\":1,\"next_file_id\":0}\n"

static void make_import_dirs(void)
{
    char d[4096];
    path_of(d, sizeof d, "import_good");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(0) SNAP_LINE(1) SNAP_LINE(2));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, 2) PI_LINE(2, 1, 2, null) PI_LINE(3, 1, 2, 2));
    write_file(d, "ducklake_partition_column.ndjson",
               PC_LINE(1, 1, 0, 7, "year") PC_LINE(1, 1, 1, 7, "month") PC_LINE(2, 1, 0, 8, "identity") PC_LINE(3, 1, 0, 9, "day"));

    path_of(d, sizeof d, "import_bad_json");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, null) "{\"partition_id\":2,\"table_id\":1,\"begin_snapshot\":\n");

    path_of(d, sizeof d, "import_bad_type");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    write_file(d, "ducklake_partition_info.ndjson",
               PI_LINE(1, 1, 1, null) PI_LINE(2, 2, 1, null) "{\"partition_id\":3,\"table_id\":\"one\",\"begin_snapshot\":1,\"end_snapshot\":null}\n");

    path_of(d, sizeof d, "import_missing_col");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, null) "{\"partition_id\":2,\"table_id\":1,\"begin_snapshot\":1}\n");

    /* passes every check, then fails while replaying: two live rows, one key */
    path_of(d, sizeof d, "import_dup");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1) SNAP_LINE(2));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, null) PI_LINE(1, 1, 2, null));

    /* the same with blank lines, CRLF ends and leading blanks: the replay
     * (which parses the rows again from the file) names line 5 */
    path_of(d, sizeof d, "import_dup_lines");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1) SNAP_LINE(2));
    write_file(d, "ducklake_partition_info.ndjson",
               "\r\n   \n{\"partition_id\":1,\"table_id\":1,\"begin_snapshot\":1,\"end_snapshot\":null}\r\n\t\n"
               "  {\"partition_id\":1,\"table_id\":1,\"begin_snapshot\":2,\"end_snapshot\":null}\r\n");

    /* a child without its parent on line 4 (after a blank line, one row
     * through jansson: an escaped key): the plan's check names it */
    path_of(d, sizeof d, "import_orphan_lines");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, null));
    write_file(d, "ducklake_partition_column.ndjson",
               PC_LINE(1, 1, 0, 7, "year") "\n{\"partition_id\":1,\"table_id\":1,\"partition_key_index\":1,\"column_id\":7,"
               "\"tr\\u0061nsform\":\"month\"}\n" PC_LINE(2, 1, 0, 8, "identity"));

    /* rows that only jansson reads (escapes), read again at the replay */
    path_of(d, sizeof d, "import_escaped");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, null));
    write_file(d, "ducklake_partition_column.ndjson",
               "{\"partition_id\":1,\"table_id\":1,\"partition_key_index\":0,\"column_id\":7,\"transform\":\"ye\\u0061r\"}\n"
               "{\"partition_id\":1,\"table_id\":1,\"partition_key_index\":1,\"column_id\":7,\"transform\":\"mo\\u006eth\"}\n");
}

/* A progress callback that appends a blank line to the file @ud names the
 * first time it is called (the read phase's last report, before the plan). */
static int change_file(void *ud, uint64_t done, uint64_t total)
{
    static int changed;
    if (!changed++) {
        FILE *f = fopen((const char *)ud, "ab");
        if (f) {
            fputs("\n", f);
            fclose(f);
        }
    }
    return 0;
}

static void test_import(moraine_db *main_db)
{
    char p[4096], d[4096];
    make_import_dirs();
    path_of(p, sizeof p, "imported");
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    if (!db) return;

    static const struct {
        const char *dir;
        int rc;
        const char *file_line, *column;
    } bad[] = {
        {"import_bad_json", MORAINE_EJSON, "ducklake_partition_info.ndjson:2", NULL},
        {"import_bad_type", MORAINE_EINVAL, "ducklake_partition_info.ndjson:3", "table_id"},
        {"import_missing_col", MORAINE_EINVAL, "ducklake_partition_info.ndjson:2", "end_snapshot"},
        {"import_dup", MORAINE_EEXIST, "ducklake_partition_info.ndjson:2", NULL},
        {"import_dup_lines", MORAINE_EEXIST, "ducklake_partition_info.ndjson:5:", NULL},
        {"import_orphan_lines", MORAINE_EINVAL, "ducklake_partition_column.ndjson:4:", "no ducklake_partition_info row"},
        {"no_such_dir", MORAINE_EIO, "no_such_dir", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path_of(d, sizeof d, bad[i].dir);
        CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), bad[i].rc);
        const char *m = moraine_errmsg();
        CHECK(strstr(m, bad[i].file_line) != NULL, "%s: message '%s' does not name '%s'", bad[i].dir, m, bad[i].file_line);
        if (bad[i].column) CHECK(strstr(m, bad[i].column) != NULL, "%s: message '%s' does not name column %s", bad[i].dir, m, bad[i].column);
        check_empty(db, bad[i].dir);
    }

    /* a file changed after it was read and checked: refused before anything is written, since the
     * replay reads the rows again from the files */
    path_of(d, sizeof d, "import_changed");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    write_file(d, "ducklake_partition_info.ndjson", PI_LINE(1, 1, 1, null));
    char f[4200];
    snprintf(f, sizeof f, "%s/ducklake_partition_info.ndjson", d);
    CHECK_RC(moraine_import_ndjson(db, d, change_file, f), MORAINE_EIO);
    CHECK(strstr(moraine_errmsg(), "ducklake_partition_info.ndjson: the file changed since it was checked "
                                    "(another file, size or modification time)") != NULL,
          "changed file: '%s'", moraine_errmsg());
    check_empty(db, "import_changed");

    /* an import that fails and cannot be undone says so: here the thread holds a commit open on
     * another handle of the catalog, so the replay's first commit and the undo are both refused
     * (the undo's write used to wait for that commit forever, and a failed undo was reported as
     * done); nothing is written */
    moraine_db *other = NULL;
    CHECK_RC(moraine_open(p, NULL, &other), 0);
    moraine_txn *held = NULL;
    if (other) CHECK_RC(moraine_txn_begin(other, MORAINE_NO_SNAPSHOT, &held), 0);
    path_of(d, sizeof d, "import_good");
    CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), MORAINE_ETXN);
    CHECK(strstr(moraine_errmsg(), "the import could not be undone") != NULL && strstr(moraine_errmsg(), "import undone") == NULL,
          "an undo that failed reported as: '%s'", moraine_errmsg());
    if (held) moraine_txn_abort(held);
    moraine_close(other);
    check_empty(db, "import under a commit of the same thread");

    /* after all those failures the same handle imports a good export */
    path_of(d, sizeof d, "import_good");
    CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), 0);
    int64_t last = 0;
    CHECK(moraine_last_snapshot(db, &last) == 1 && last == 2, "imported catalog: last snapshot %lld", (long long)last);
    moraine_read *rd;
    moraine_row row;
    if (moraine_read_begin(db, &rd) == 0) {
        pcol cols[4];
        CHECK_RC(moraine_partition_spec_at(rd, 1, 0, &row), 0);
        CHECK(moraine_partition_spec_at(rd, 1, 1, &row) == 1 && is_int(&row.vals[0], 1) && children_of(rd, &row, cols, 4) == 2,
              "imported spec 1 at snapshot 1");
        CHECK(moraine_partition_spec_at(rd, 1, 2, &row) == 1 && is_int(&row.vals[0], 2) && children_of(rd, &row, cols, 4) == 1 &&
                  cols[0].col == 8,
              "imported spec 2 at snapshot 2");
        CHECK(moraine_partition_spec_by_id(rd, 1, 3, &row) == 1 && is_int(&row.vals[2], 2) && is_end(&row.vals[3], 2) &&
                  children_of(rd, &row, cols, 4) == 1 && strcmp(cols[0].transform, "day") == 0,
              "imported begin == end spec 3 by id");
        moraine_read_end(rd);
    }
    sbuf before = {0};
    CHECK_RC(dump(db, &before), 0);
    CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), MORAINE_EEXIST);
    CHECK_UNCHANGED(db, &before, "import into an imported catalog");
    moraine_close(db);

    /* the main catalog is not empty either */
    CHECK_RC(dump(main_db, &before), 0);
    CHECK_RC(moraine_import_ndjson(main_db, d, NULL, NULL), MORAINE_EEXIST);
    CHECK_UNCHANGED(main_db, &before, "import into a non-empty catalog");
    free(before.p);

    /* escaped rows: the values jansson gives, both when checked and when replayed */
    path_of(p, sizeof p, "imported_escaped");
    path_of(d, sizeof d, "import_escaped");
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    if (!db) return;
    CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), 0);
    if (moraine_read_begin(db, &rd) == 0) {
        pcol cols[4];
        CHECK(moraine_partition_spec_at(rd, 1, 1, &row) == 1 && children_of(rd, &row, cols, 4) == 2 &&
                  strcmp(cols[0].transform, "year") == 0 && strcmp(cols[1].transform, "month") == 0,
              "escaped rows imported as jansson reads them");
        moraine_read_end(rd);
    }
    moraine_close(db);
}

/* ---- a value damaged on disk ----------------------------------------------------------------- */

typedef struct {
    uint8_t key[64];
    size_t klen;
    uint8_t *val;
    size_t vlen;
} raw_entry;

/* Opens @path with LMDB directly; finds the first live-row key ('C') of
 * relation @rel_id; stores its key and value in @e and, when @bytes is not
 * NULL, overwrites the value with @bytes/@n. Returns 0 on success. */
static int raw_poke(const char *path, uint32_t rel_id, raw_entry *e, const uint8_t *bytes, size_t n)
{
    uint8_t prefix[10];
    uint64_t u = (uint64_t)rel_id ^ 0x8000000000000000ULL; /* docs/keyspace.md: 'C', then the relation id as a key int */
    prefix[0] = 'C';
    prefix[1] = 0x14;
    for (int i = 0; i < 8; i++) prefix[2 + i] = (uint8_t)(u >> (56 - 8 * i));
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_cursor *c;
    int rc = mdb_env_create(&env);
    if (!rc) rc = mdb_env_set_mapsize(env, 1ULL << 30);
    if (!rc) rc = mdb_env_open(env, path, 0, 0664);
    if (!rc) rc = mdb_txn_begin(env, NULL, 0, &t);
    if (rc) {
        mdb_env_close(env);
        return rc;
    }
    rc = mdb_dbi_open(t, NULL, 0, &dbi);
    if (!rc) rc = mdb_cursor_open(t, dbi, &c);
    MDB_val k = {sizeof prefix, prefix}, v;
    if (!rc) {
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (!rc && (k.mv_size < sizeof prefix || k.mv_size > sizeof e->key || memcmp(k.mv_data, prefix, sizeof prefix) != 0)) rc = -1;
        if (!rc) {
            e->klen = k.mv_size;
            memcpy(e->key, k.mv_data, k.mv_size);
            e->vlen = v.mv_size;
            e->val = malloc(v.mv_size ? v.mv_size : 1);
            memcpy(e->val, v.mv_data, v.mv_size);
        }
        mdb_cursor_close(c);
    }
    if (!rc && bytes) {
        MDB_val nk = {e->klen, e->key}, nv = {n, (void *)bytes};
        rc = mdb_put(t, dbi, &nk, &nv, 0);
    }
    if (rc) mdb_txn_abort(t);
    else rc = mdb_txn_commit(t);
    mdb_env_close(env);
    return rc;
}

/* "C(1,10,3)" for a key of key ints, the way messages name keys. */
static void render_key(const raw_entry *e, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, "%c(", e->key[0]);
    for (size_t at = 1; at + 9 <= e->klen && o < n; at += 9) {
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = (u << 8) | e->key[at + 1 + i];
        o += (size_t)snprintf(out + o, n - o, "%s%lld", at > 1 ? "," : "", (long long)(int64_t)(u ^ 0x8000000000000000ULL));
    }
    if (o < n) snprintf(out + o, n - o, ")");
}

/* Reads every row of @rel (and with @walk_children their embedded children);
 * returns 1 when all were read, or the first negative code, whose message is
 * kept in @msg. After an error the cursor is called once more: no crash. */
static int read_all(moraine_db *db, const char *rel, int64_t scope, int64_t snap, int walk_children, char *msg, size_t msglen)
{
    moraine_read *rd;
    msg[0] = 0;
    int rc = moraine_read_begin(db, &rd);
    if (rc) {
        snprintf(msg, msglen, "%s", moraine_errmsg());
        return rc;
    }
    moraine_cursor *c;
    if ((rc = moraine_scan_open(rd, rel, scope, snap, &c)) == 0) {
        moraine_row row;
        while ((rc = moraine_cursor_next(c, &row)) == 1) {
            if (!walk_children) continue;
            pcol cols[8];
            int n = children_of(rd, &row, cols, 8);
            if (n < 0) {
                rc = n;
                break;
            }
        }
        if (rc < 0) {
            snprintf(msg, msglen, "%s", moraine_errmsg());
            int again = moraine_cursor_next(c, &row);
            CHECK(again <= 1, "cursor_next after an error returned %d", again);
        } else {
            rc = 1;
        }
    } else {
        snprintf(msg, msglen, "%s", moraine_errmsg());
    }
    moraine_read_end(rd);
    return rc;
}

/* Overwrites the value of table 10's live spec with damaged bytes, one way
 * after another, and reads through moraine each time. */
static moraine_db *test_corruption(moraine_db *db, const char *path)
{
    moraine_relation_info pi;
    CHECK_RC(moraine_relation(db, PI, &pi), 0);
    uint32_t id = pi.id;
    moraine_close(db);

    raw_entry orig;
    memset(&orig, 0, sizeof orig);
    int rc = raw_poke(path, id, &orig, NULL, 0);
    CHECK(rc == 0 && orig.klen == 28 && orig.vlen > 12, "finding the live row of %s with LMDB (rc %d, key %zu bytes)", PI, rc, orig.klen);
    if (rc || orig.klen != 28 || orig.vlen <= 12) {
        free(orig.val);
        db = NULL;
        moraine_open(path, NULL, &db);
        return db;
    }
    char key[128];
    render_key(&orig, key, sizeof key);
    CHECK(strstr(key, ",10,3)") != NULL, "the first live spec key is %s, expected table 10 spec 3", key);

    /* the value: version, ord, ncols, 4 cells (the row is 11 bytes), then
     * the children group */
    uint8_t badver[64];
    memcpy(badver, orig.val, orig.vlen < sizeof badver ? orig.vlen : sizeof badver);
    badver[0] = 0x7F;
    uint8_t badtag[64];
    memcpy(badtag, orig.val, orig.vlen < sizeof badtag ? orig.vlen : sizeof badtag);
    badtag[3] = 0xEE; /* first cell's tag */
    static const struct {
        const char *what;
        size_t len;  /* bytes of the damaged value */
        int src;     /* 0 original prefix, 1 bad version, 2 bad tag */
        int in_row;  /* the row itself fails (else only its children) */
    } damage[] = {
        {"empty value", 0, 0, 1},
        {"version byte only", 1, 0, 1},
        {"cut in the cells", 5, 0, 1},
        {"cut before the last cell", 9, 0, 1},
        {"unknown format version", 0, 1, 1},
        {"unknown cell tag", 0, 2, 1},
        {"cut in the children", 0, 0, 0},
    };
    char msg[1024];
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        size_t len = damage[i].len;
        const uint8_t *src = damage[i].src == 1 ? badver : damage[i].src == 2 ? badtag : orig.val;
        if (damage[i].src) len = orig.vlen < 64 ? orig.vlen : 64;
        if (!damage[i].in_row) len = orig.vlen - 3;
        raw_entry e;
        memset(&e, 0, sizeof e);
        rc = raw_poke(path, id, &e, src, len);
        free(e.val);
        CHECK(rc == 0, "%s: writing with LMDB failed (%d)", damage[i].what, rc);
        db = NULL;
        CHECK_RC(moraine_open(path, NULL, &db), 0);
        if (!db) break;

        if (damage[i].in_row) {
            rc = read_all(db, PI, MORAINE_ANY_SCOPE, 5, 0, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s: scan gave %d (%s)", damage[i].what, rc, msg);
            CHECK(strstr(msg, key) != NULL, "%s: message '%s' does not name key %s", damage[i].what, msg, key);
            rc = read_all(db, PI, 10, MORAINE_ALL_VERSIONS, 0, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s: scoped scan of all versions gave %d", damage[i].what, rc);
            rc = read_all(db, PC, MORAINE_ANY_SCOPE, 5, 0, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s: child scan gave %d", damage[i].what, rc);
            moraine_read *rd;
            moraine_row row;
            if (moraine_read_begin(db, &rd) == 0) {
                CHECK_RC(moraine_partition_spec_at(rd, 10, 5, &row), MORAINE_ECORRUPT);
                CHECK_RC(moraine_partition_spec_by_id(rd, 10, 3, &row), MORAINE_ECORRUPT);
                moraine_read_end(rd);
            }
        } else {
            /* the value's checksum covers its embedded children: the row is refused whole */
            rc = read_all(db, PI, MORAINE_ANY_SCOPE, 5, 0, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s: damage in the children should fail the row's checksum (%d: %s)", damage[i].what, rc, msg);
            CHECK(strstr(msg, key) != NULL, "%s: message '%s' does not name key %s", damage[i].what, msg, key);
            rc = read_all(db, PI, MORAINE_ANY_SCOPE, 5, 1, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s: walking its children gave %d", damage[i].what, rc);
            rc = read_all(db, PC, MORAINE_ANY_SCOPE, 5, 0, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s: child scan gave %d", damage[i].what, rc);
        }
        /* the rest of the catalog still reads */
        rc = read_all(db, PI, 20, MORAINE_ALL_VERSIONS, 1, msg, sizeof msg);
        CHECK(rc == 1, "%s: table 20 no longer reads (%d: %s)", damage[i].what, rc, msg);
        moraine_close(db);
    }

    /* put the original back: everything reads again */
    raw_entry e;
    memset(&e, 0, sizeof e);
    CHECK(raw_poke(path, id, &e, orig.val, orig.vlen) == 0, "restoring the value");
    free(e.val);
    free(orig.val);
    db = NULL;
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    if (db) {
        rc = read_all(db, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, 1, msg, sizeof msg);
        CHECK(rc == 1, "restored catalog: %d (%s)", rc, msg);
    }
    return db;
}

/* ---- a source file changed while it is imported ----------------------------------------- */

enum { CH_TRUNCATE, CH_GROW, CH_REWRITE };

/* What change_during does, once: to the file @path, when @replay (the
 * progress of the replay: total known) or not (of the read: total 0). */
typedef struct {
    const char *path;
    int replay, how, done;
} change;

/* A progress callback that changes a source file the first time it is
 * called in the phase asked for: cut to half its size (the rows still to
 * be read are past the new end: through a map, SIGBUS), one more row
 * appended, or the same length rewritten (one byte of the first line). */
static int change_during(void *ud, uint64_t done, uint64_t total)
{
    change *c = ud;
    (void)done;
    if (c->done || (total != 0) != c->replay) return 0;
    c->done = 1;
    struct stat st;
    if (stat(c->path, &st) != 0) abort();
    if (c->how == CH_TRUNCATE) {
        if (truncate(c->path, st.st_size / 2) != 0) abort();
        return 0;
    }
    FILE *f = fopen(c->path, c->how == CH_GROW ? "ab" : "r+b");
    if (!f) abort();
    if (c->how == CH_GROW) fputs(PI_LINE(999999, 999999, 1, null), f);
    else fputs("{\"snapshot_id\":1,\"snapshot_time\":\"2027", f); /* was 2026: the same length */
    fclose(f);
    return 0;
}

/* The process's open descriptors. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own */
}

/* A progress callback keeping the most descriptors open seen (in *ud). */
static int count_fds(void *ud, uint64_t done, uint64_t total)
{
    (void)done;
    (void)total;
    int n = open_fds(), *most = ud;
    if (n > *most) *most = n;
    return 0;
}

/* moraine_stats' callback: the rows of the zz_extra_* tables, added into *ud. */
static void sum_extra_rows(void *ud, const moraine_stat *st)
{
    if (st->subspace == 'R' && st->relation && strncmp(st->relation, "zz_extra_", 9) == 0) *(uint64_t *)ud += st->entries;
}

/* A catalog of 40,000 partitions (4.4 MB of rows: more than the import's
 * window of a file), every file's modification time set in the past (a
 * rewrite then changes it, whatever the clock's grain). */
static void make_big_dir(const char *d)
{
    char p[4200];
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1));
    snprintf(p, sizeof p, "%s/ducklake_partition_info.ndjson", d);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    for (int i = 1; i <= 40000; i++)
        fprintf(f, "{\"partition_id\":%d,\"table_id\":%d,\"begin_snapshot\":1,\"end_snapshot\":null,\"pad\":\"%s\"}\n", i, i,
                "................................");
    fclose(f);
    const char *names[] = {"ducklake_snapshot.ndjson", "ducklake_partition_info.ndjson"};
    for (int i = 0; i < 2; i++) {
        struct timespec past[2] = {{1000000000, 0}, {1000000000, 0}};
        snprintf(p, sizeof p, "%s/%s", d, names[i]);
        if (utimensat(AT_FDCWD, p, past, 0) != 0) abort();
    }
}

/* A file of the source cut shorter, grown or rewritten while the import reads
 * it (by another process, say): the rows are read with pread, never through
 * a map, so no SIGBUS; the import stops with MORAINE_EIO naming the file and
 * the catalog stays empty. Cut shorter: seen at the read of a row past the
 * new end (during the first read and during the replay). Grown or rewritten:
 * seen by the check of the file's size and modification time when a window of
 * it is read again, or at the latest before the replay's last commit (the
 * rewritten file here is small: read once, never again). */
static void test_import_changing(void)
{
    char p[4096], d[4096], pi[4200], snap[4200];
    path_of(p, sizeof p, "imported_changing");
    path_of(d, sizeof d, "import_changing");
    snprintf(pi, sizeof pi, "%s/ducklake_partition_info.ndjson", d);
    snprintf(snap, sizeof snap, "%s/ducklake_snapshot.ndjson", d);
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    if (!db) return;
    static const struct {
        int replay, how, snapshot_file;
        const char *what, *says;
    } cases[] = {
        {0, CH_TRUNCATE, 0, "cut shorter while it is read", "it is shorter than it was"},
        {1, CH_TRUNCATE, 0, "cut shorter while it is replayed", "it is shorter than it was"},
        {1, CH_GROW, 0, "grown while it is replayed", "another size or modification time"},
        {1, CH_REWRITE, 1, "rewritten (same length) while it is replayed", "another size or modification time"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_big_dir(d);
        const char *file = cases[i].snapshot_file ? snap : pi;
        change c = {file, cases[i].replay, cases[i].how, 0};
        CHECK_RC(moraine_import_ndjson(db, d, change_during, &c), MORAINE_EIO);
        const char *m = moraine_errmsg();
        CHECK(c.done, "%s: the file was changed", cases[i].what);
        CHECK(strstr(m, file) && strstr(m, "changed since it was checked") && strstr(m, cases[i].says), "%s: '%s'", cases[i].what, m);
        check_empty(db, cases[i].what);
    }
    /* the check alone: the same refusal for a file cut shorter while it is read */
    make_big_dir(d);
    change c = {pi, 0, CH_TRUNCATE, 0};
    CHECK_RC(moraine_import_ndjson_check(d, change_during, &c), MORAINE_EIO);
    CHECK(strstr(moraine_errmsg(), pi) && strstr(moraine_errmsg(), "it is shorter than it was"), "check: '%s'", moraine_errmsg());
    /* and after all that the handle imports the same source left alone */
    make_big_dir(d);
    CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), 0);
    int64_t last = 0;
    CHECK(moraine_last_snapshot(db, &last) == 1 && last == 1, "the source left alone: last snapshot %lld", (long long)last);
    moraine_close(db);

    /* a source of 80 files of 5,000 rows each (an export with a file per
     * inlined data table, say): at most 64 stay open at a time, the others
     * are opened again by name, so the import holds no more than that many
     * descriptors; every row is imported */
    path_of(p, sizeof p, "imported_many");
    path_of(d, sizeof d, "import_many");
    char extra0[4200];
    snprintf(extra0, sizeof extra0, "%s/zz_extra_00.ndjson", d);
    db = NULL;
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    for (int round = 0; round < 2; round++) {
        make_big_dir(d);
        for (int i = 0; i < 80; i++) {
            char file[4200];
            snprintf(file, sizeof file, "%s/zz_extra_%02d.ndjson", d, i);
            FILE *f = fopen(file, "wb");
            if (!f) abort();
            for (int r = 0; r < 5000; r++) fprintf(f, "{\"a\":%d,\"b\":\"%0200d\"}\n", r, i);
            fclose(f);
        }
        if (round == 1 || !db) break;
        /* the first file (closed and opened again by name as the import goes on) cut
         * shorter while the replay runs */
        change cut = {extra0, 1, CH_TRUNCATE, 0};
        CHECK_RC(moraine_import_ndjson(db, d, change_during, &cut), MORAINE_EIO);
        CHECK(strstr(moraine_errmsg(), extra0) && strstr(moraine_errmsg(), "it is shorter than it was"), "80 files: '%s'",
              moraine_errmsg());
        check_empty(db, "80 files, one cut shorter");
    }
    if (db) {
        int base = open_fds(), most = 0;
        CHECK_RC(moraine_import_ndjson(db, d, count_fds, &most), 0);
        CHECK(base > 0 && most > base && most - base <= 64, "80 files: %d descriptors open during the import (%d before)", most, base);
        size_t nrel = 0;
        moraine_relation_info info;
        while (moraine_relation_at(db, nrel, &info) == 1) nrel++;
        CHECK(nrel == 82, "80 files: %zu relations", nrel);
        uint64_t extra = 0;
        CHECK_RC(moraine_stats(db, sum_extra_rows, &extra), 0);
        CHECK(extra == 80 * 5000, "80 files: %llu rows of the zz_extra tables", (unsigned long long)extra);
        moraine_close(db);
    }

    /* a source file that is a pipe is read whole into memory (there is no
     * reading it twice): its rows are checked and replayed from there */
    path_of(p, sizeof p, "imported_pipe");
    path_of(d, sizeof d, "import_pipe");
    write_file(d, "ducklake_snapshot.ndjson", SNAP_LINE(1) SNAP_LINE(2));
    snprintf(pi, sizeof pi, "%s/ducklake_partition_info.ndjson", d);
    CHECK(mkfifo(pi, 0600) == 0, "mkfifo %s: %s", pi, strerror(errno));
    pid_t child = fork();
    if (child == 0) {
        static const char rows[] = "\n  " PI_LINE(1, 1, 1, 2) PI_LINE(2, 1, 2, null) "\n" PI_LINE(3, 2, 2, null);
        int fd = open(pi, O_WRONLY);
        _exit(fd >= 0 && write(fd, rows, sizeof rows - 1) == (ssize_t)(sizeof rows - 1) && close(fd) == 0 ? 0 : 1);
    }
    CHECK(child > 0, "fork: %s", strerror(errno));
    db = NULL;
    CHECK_RC(moraine_open(p, NULL, &db), 0);
    if (db && child > 0) {
        CHECK_RC(moraine_import_ndjson(db, d, NULL, NULL), 0);
        moraine_read *rd;
        moraine_row row;
        if (moraine_read_begin(db, &rd) == 0) {
            CHECK(moraine_partition_spec_at(rd, 1, 1, &row) == 1 && is_int(&row.vals[0], 1), "pipe: spec 1 at snapshot 1");
            CHECK(moraine_partition_spec_at(rd, 1, 2, &row) == 1 && is_int(&row.vals[0], 2), "pipe: spec 2 at snapshot 2");
            CHECK(moraine_partition_spec_at(rd, 2, 2, &row) == 1 && is_int(&row.vals[0], 3), "pipe: spec 3 (line 5) at snapshot 2");
            moraine_read_end(rd);
        }
    }
    int status = -1;
    if (child > 0) CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the pipe's writer");
    moraine_close(db);
}

/* ---- a new catalog opened by two threads at once ----
 *
 * The handle that opens a catalog's LMDB environment writes the format
 * marker of a new catalog; one sharing it only reads. Two threads opening the
 * same new directory at once: whichever shares the other's environment must
 * not leave the marker unwritten (it did when the second attached between the
 * first's open of the environment and its decision to write: both read, and
 * the catalog, committed to, could never be opened again: "not a moraine
 * catalog"). Each round: both open at a barrier, one defines a table and
 * commits, both close; the catalog must reopen and verify. */
#define TWIN_ROUNDS 5000
static pthread_barrier_t twin_bar;
static char twin_dir[4200];
static void *twin_open(void *arg)
{
    moraine_options o = {.create = 1, .no_sync = 1};
    moraine_db *db = NULL;
    pthread_barrier_wait(&twin_bar);
    int rc = moraine_open(twin_dir, &o, &db);
    pthread_barrier_wait(&twin_bar); /* both handles open before either commits */
    if (!rc && arg) {
        static const char *const cols[] = {"key", "value", "scope", "scope_id"};
        moraine_txn *t;
        rc = moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &t);
        if (!rc && (rc = moraine_txn_define(t, "ducklake_metadata", 4, cols))) moraine_txn_abort(t);
        if (!rc) rc = moraine_txn_commit(t);
    }
    pthread_barrier_wait(&twin_bar);
    moraine_close(db);
    return (void *)(intptr_t)rc;
}

static void test_new_catalog_opened_twice(void)
{
    int open_failed = 0, reopen_failed = 0;
    char first[512] = "";
    pthread_barrier_init(&twin_bar, NULL, 2);
    for (int i = 0; i < TWIN_ROUNDS; i++) {
        snprintf(twin_dir, sizeof twin_dir, "%s/twin-%d", root, i);
        pthread_t a, b;
        void *ra, *rb;
        if (pthread_create(&a, NULL, twin_open, (void *)1) || pthread_create(&b, NULL, twin_open, NULL)) {
            CHECK(0, "pthread_create");
            break;
        }
        pthread_join(a, &ra);
        pthread_join(b, &rb);
        if (ra || rb) {
            open_failed++;
            continue;
        }
        moraine_db *db = NULL;
        moraine_options o = {.no_sync = 1};
        int rc = moraine_open(twin_dir, &o, &db);
        if (!rc) rc = moraine_verify(db, NULL, NULL, NULL, NULL);
        if (rc && !reopen_failed++) snprintf(first, sizeof first, "round %d: %s", i, moraine_errmsg());
        moraine_close(db);
        nftw(twin_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    pthread_barrier_destroy(&twin_bar);
    CHECK_INT(open_failed, 0);
    CHECK(reopen_failed == 0, "%d of %d catalogs opened by two threads at once could not be reopened, first %s", reopen_failed, TWIN_ROUNDS,
          first);
}

int main(void)
{
    if (!check_mkdtemp(root, sizeof root, "moraine-test-store")) {
        perror("mkdtemp");
        CHECK(0, "a temporary directory");
        return check_done();
    }
    char path[4096];
    path_of(path, sizeof path, "catalog");

    test_open_close();
    test_new_catalog_opened_twice();
    test_truncated_store();
    test_open_full_disk();

    moraine_db *db = NULL;
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    if (db) {
        build_history(db);
        check_relations(db);
        check_reads(db);
        test_refusals(db);
        check_reads(db);
        db = test_reopen_and_read_only(db, path);
    }
    if (db) {
        check_reads(db);
        test_import(db);
        test_import_changing();
        db = test_corruption(db, path);
    }
    moraine_close(db);

    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_done();
}
