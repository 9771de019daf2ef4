/*
 * test_adversarial — the faults of issue 12, each as a test with the right
 * answer (docs/reliability.md):
 *
 *  - flips: every byte of every key and of every value of a small catalog is
 *    changed in data.mdb, one at a time; a fresh process (fork before open)
 *    then reads everything at every snapshot. Each read must give the right
 *    answer or fail (ECORRUPT, mostly); a wrong answer fails the test. A
 *    child killed by a signal (damage LMDB's own cursor code trips on) is
 *    counted and reported, not failed: LMDB does not checksum its pages.
 *  - fork: a child that inherits an open handle is refused (MORAINE_EFORK)
 *    and its close leaves the parent's reader slot alone; the parent's open
 *    read still sees its snapshot after another process commits 60 times.
 *  - double open: two handles of one catalog in one process share one LMDB
 *    environment; closing one keeps the other's read (and the process's
 *    lock) valid while another process opens and commits.
 *  - dead reader: a reader killed with SIGKILL while one writer, open all
 *    along, commits 300 times; data.mdb stays small (the writer clears dead
 *    readers).
 *  - stale descriptors: a handle that read while an import was in progress
 *    (an import later cancelled) reads the next import's columns right.
 *  - verify isolated: moraine_verify_path over a catalog whose branch pages
 *    are damaged byte by byte: the walks that die of a signal are reported
 *    with the key they reached; the caller lives on.
 */
#include "check.h"
#include "internal.h"
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[256];

/* Every byte is changed by default; under AddressSanitizer a fork costs
 * tens of milliseconds (the shadow memory), so make asan changes every 8th
 * byte (a different offset each run, from the seed). MORAINE_FLIPS_STRIDE
 * overrides. */
static size_t stride, phase;
static void set_stride(void)
{
#ifdef __SANITIZE_ADDRESS__
    stride = 8;
#else
    stride = 1;
#endif
    const char *e = getenv("MORAINE_FLIPS_STRIDE");
    if (e && atol(e) > 0) stride = (size_t)atol(e);
    phase = stride > 1 ? (size_t)check_below(stride) : 0;
}

static void rmrf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) check_note("could not remove %s", dir);
}

/* ---- a small catalog built with verbs ---- */

static int commit_file(moraine_db *db, int64_t *snap)
{
    moraine_tx *tx;
    int rc = moraine_tx_begin(db, &tx);
    if (rc) return rc;
    static int n;
    char path[64], val[16];
    snprintf(path, sizeof path, "f%d.parquet", ++n);
    snprintf(val, sizeof val, "%d", n % 3);
    const char *vals[] = {val};
    moraine_read *rd;
    moraine_row spec;
    if ((rc = moraine_read_begin(db, &rd))) {
        moraine_tx_abort(tx);
        return rc;
    }
    int have = moraine_partition_spec_at(rd, 1, moraine_tx_base(tx), &spec);
    size_t nv = have == 1 ? 1 : 0;
    moraine_read_end(rd);
    moraine_data_file f = {path, 0, NULL, 10, 1000, 50, vals, nv, NULL, 0, 0};
    if ((rc = moraine_tx_add_data_files(tx, NULL, "t", &f, 1, NULL))) {
        moraine_tx_abort(tx);
        return rc;
    }
    return moraine_tx_commit(tx, snap);
}

/* init, a table, files over several snapshots, a partition spec, a sort
 * spec, a delete file and a deleted file: every subspace in use. */
static int build_small(const char *dir, int nfiles)
{
    moraine_options o = {.create = 1, .no_sync = 1, .map_size = 1 << 20};
    moraine_db *db;
    int rc = moraine_open(dir, &o, &db);
    if (rc) return rc;
    int64_t snap;
    moraine_tx *tx;
    moraine_column_def cols[] = {{.name = "k", .type = "int64"}, {.name = "ts", .type = "timestamp"}};
    if ((rc = moraine_init(db, "data/"))) goto out;
    if ((rc = moraine_tx_begin(db, &tx))) goto out;
    if ((rc = moraine_tx_create_table(tx, NULL, "t", cols, 2, NULL)) || (rc = moraine_tx_commit(tx, &snap))) goto out;
    for (int i = 0; i < nfiles && !rc; i++) {
        if (i == nfiles / 2) {
            moraine_partition_key pk[] = {{"k", "identity"}};
            moraine_sort_key sk[] = {{.expression = "ts", .sort_direction = "DESC"}};
            if ((rc = moraine_tx_begin(db, &tx))) break;
            if ((rc = moraine_tx_set_partitioning(tx, NULL, "t", pk, 1)) || (rc = moraine_tx_set_sorting(tx, NULL, "t", sk, 1)) ||
                (rc = moraine_tx_commit(tx, &snap)))
                break;
        }
        rc = commit_file(db, &snap);
    }
    if (rc) goto out;
    moraine_delete_file df = {2, "d2.parquet", NULL, 3, 100, 10, 0};
    if ((rc = moraine_tx_begin(db, &tx))) goto out;
    if ((rc = moraine_tx_add_delete_files(tx, NULL, "t", &df, 1)) || (rc = moraine_tx_commit(tx, &snap))) goto out;
    int64_t gone = 3;
    if ((rc = moraine_tx_begin(db, &tx))) goto out;
    if ((rc = moraine_tx_delete_files(tx, NULL, "t", &gone, 1)) || (rc = moraine_tx_commit(tx, &snap))) goto out;
out:
    moraine_close(db);
    return rc;
}

/* ---- the answers: everything a planner asks, at every snapshot ---- */

typedef struct {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (!t->p) abort();
    }
    memcpy(t->p + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

static void put_value(text *t, const moraine_value *v)
{
    switch (v->type) {
    case MORAINE_NULL: put(t, "N"); break;
    case MORAINE_INT: put(t, "%lld", (long long)v->i); break;
    case MORAINE_BOOL: put(t, "%s", v->i ? "T" : "F"); break;
    case MORAINE_REAL: put(t, "%g", v->d); break;
    default: put(t, "'%.*s'", (int)v->len, v->s);
    }
}

static void put_row(text *t, const moraine_row *row)
{
    put(t, "[");
    for (size_t i = 0; i < row->ncols; i++) {
        put(t, "%s=", row->rel->colnames[i]);
        put_value(t, &row->vals[i]);
        put(t, ",");
    }
    put(t, "]");
}

/* Every row of @name (one table's when @scope >= 0) visible at @s, with
 * embedded children. Returns 0 or the first error. */
static int put_scan(text *t, moraine_read *rd, const char *name, int64_t scope, int64_t s)
{
    moraine_cursor *c;
    int rc = moraine_scan_open(rd, name, scope, s, &c);
    if (rc) return rc;
    moraine_row row;
    put(t, "%s@%lld:", name, (long long)s);
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        put_row(t, &row);
        moraine_children kids;
        moraine_row kid;
        moraine_row_children(rd, &row, &kids);
        int k;
        while ((k = moraine_children_next(&kids, &kid)) == 1) put_row(t, &kid);
        moraine_children_free(&kids);
        if (k < 0) {
            rc = k;
            break;
        }
    }
    moraine_cursor_close(c);
    put(t, "\n");
    return rc < 0 ? rc : 0;
}

/* The whole answer of a catalog, as text; returns 0 or the first error. */
static int answers(const char *dir, text *t)
{
    moraine_options o = {.read_only = 1};
    moraine_db *db;
    int rc = moraine_open(dir, &o, &db);
    if (rc) return rc;
    moraine_read *rd;
    if ((rc = moraine_read_begin(db, &rd))) {
        moraine_close(db);
        return rc;
    }
    int64_t last = -1;
    rc = moraine_read_last_snapshot(rd, &last);
    if (rc == 1) rc = 0;
    else if (rc == 0) rc = MORAINE_ENOTFOUND; /* the catalog has snapshots: no last one is wrong, and counts as failing */
    put(t, "last %lld\n", (long long)last);
    for (int64_t s = 0; !rc && s <= last; s++) {
        moraine_row spec;
        int h = moraine_partition_spec_at(rd, 1, s, &spec);
        if (h < 0) rc = h;
        else {
            put(t, "pspec@%lld ", (long long)s);
            if (h) put_row(t, &spec);
            put(t, "\n");
        }
        if (!rc && (h = moraine_sort_spec_at(rd, 1, s, &spec)) < 0) rc = h;
        else if (!rc) {
            put(t, "sspec@%lld ", (long long)s);
            if (h) put_row(t, &spec);
            put(t, "\n");
        }
        if (!rc) rc = put_scan(t, rd, "ducklake_table", MORAINE_ANY_SCOPE, s);
        if (!rc) rc = put_scan(t, rd, "ducklake_column", 1, s);
        if (!rc) rc = put_scan(t, rd, "ducklake_data_file", 1, s);
        if (!rc) rc = put_scan(t, rd, "ducklake_delete_file", 1, s);
        if (!rc) rc = put_scan(t, rd, "ducklake_snapshot", MORAINE_ANY_SCOPE, s);
        if (!rc) rc = put_scan(t, rd, "ducklake_schema", MORAINE_ANY_SCOPE, s);
    }
    if (!rc) rc = put_scan(t, rd, "ducklake_metadata", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS);
    if (!rc) rc = put_scan(t, rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS);
    moraine_read_end(rd);
    moraine_close(db);
    return rc;
}

/* ---- flips of every key and value byte ---- */

typedef struct {
    size_t off, len;
} span;

/* The file offsets of every key and value (LMDB maps data.mdb read-only:
 * a pointer minus the map's base is the offset in the file). */
static int spans_of(const char *dir, span **out, size_t *n)
{
    moraine_options o = {.read_only = 1};
    moraine_db *db;
    int rc = moraine_open(dir, &o, &db);
    if (rc) return rc;
    moraine_read *rd;
    if ((rc = moraine_read_begin(db, &rd))) {
        moraine_close(db);
        return rc;
    }
    MDB_cursor *c;
    size_t cap = 0;
    *n = 0;
    *out = NULL;
    if (!rd->bounds.map || mdb_cursor_open(rd->txn, db->dbi, &c)) rc = MORAINE_ELMDB;
    else {
        MDB_val k, v;
        for (int mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
            for (int w = 0; w < 2; w++) {
                const MDB_val *x = w ? &v : &k;
                if (*n == cap) {
                    cap = cap ? cap * 2 : 256;
                    *out = realloc(*out, cap * sizeof **out);
                    if (!*out) abort();
                }
                (*out)[(*n)++] = (span){(size_t)((const char *)x->mv_data - rd->bounds.map), x->mv_size};
            }
        }
        mdb_cursor_close(c);
    }
    moraine_read_end(rd);
    moraine_close(db);
    return rc;
}

enum { OUT_RIGHT, OUT_ERROR, OUT_WRONG, OUT_CRASH }; /* crash: killed by a signal, a hang (10 s) or a runaway allocation (1 GiB) */

/* Reads everything in a fresh child process; the outcome against @right. */
static int outcome(const char *dir, const text *right, int *code)
{
    int fd[2];
    if (pipe(fd)) return OUT_CRASH;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        /* a read that loops or allocates without bound counts as a crash (RLIMIT_DATA: the map is a shared file mapping, not counted) */
        alarm(10);
#ifndef __SANITIZE_ADDRESS__
        struct rlimit lim = {1UL << 30, 1UL << 30};
        setrlimit(RLIMIT_DATA, &lim);
#endif
        text t = {0};
        int rc = answers(dir, &t);
        char r = rc ? 'E' : (t.len == right->len && memcmp(t.p, right->p, t.len) == 0) ? 'R' : 'W';
        int8_t c = (int8_t)rc;
        if (write(fd[1], &r, 1) != 1 || write(fd[1], &c, 1) != 1) _exit(3);
        _exit(0);
    }
    close(fd[1]);
    char r = 0;
    int8_t c = 0;
    ssize_t got = read(fd[0], &r, 1);
    if (got == 1 && read(fd[0], &c, 1) != 1) got = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    *code = c;
    if (got != 1 || WIFSIGNALED(st)) return OUT_CRASH;
    return r == 'R' ? OUT_RIGHT : r == 'E' ? OUT_ERROR : OUT_WRONG;
}

static void test_flips(void)
{
    char dir[300], file[320];
    snprintf(dir, sizeof dir, "%s/flips", base);
    CHECK_RC(build_small(dir, 6), 0);
    text right = {0};
    CHECK_RC(answers(dir, &right), 0);
    span *sp = NULL;
    size_t nsp = 0;
    CHECK_RC(spans_of(dir, &sp, &nsp), 0);
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    int fd = open(file, O_RDWR);
    CHECK(fd >= 0, "open %s", file);
    if (fd < 0) return;
    int n[4] = {0}, trials = 0, corrupt = 0;
    size_t key_bytes = 0;
    /* MORAINE_FLIPS_WHOLE_FILE=STEP: change every STEP-th byte of the whole
     * file instead (LMDB's page headers, branch pages and free space too),
     * the measurement docs/reliability.md records */
    const char *whole = getenv("MORAINE_FLIPS_WHOLE_FILE");
    if (whole && atol(whole) > 0) {
        struct stat st;
        if (fstat(fd, &st) == 0) {
            size_t step = (size_t)atol(whole), m = 0;
            free(sp);
            sp = calloc((size_t)st.st_size / step + 1, sizeof *sp);
            if (!sp) abort();
            for (size_t off = 0; off < (size_t)st.st_size; off += step) sp[m++] = (span){off, 1};
            nsp = m;
        }
    }
    for (size_t i = 0; i < nsp; i++) {
        if (i % 2 == 0) key_bytes += sp[i].len;
        for (size_t b = 0; b < sp[i].len; b++) {
            off_t at = (off_t)(sp[i].off + b);
            if (!whole && (size_t)at % stride != phase) continue;
            uint8_t was, now;
            if (pread(fd, &was, 1, at) != 1) continue;
            /* one bit (the high bit: a type byte 0x14 becomes 0x94) or a
             * whole-byte change, alternating */
            now = (uint8_t)((b + i / 2) % 2 ? was ^ 0x80 : was ^ 0xFF);
            if (pwrite(fd, &now, 1, at) != 1) continue;
            int code = 0;
            int o = outcome(dir, &right, &code);
            if (pwrite(fd, &was, 1, at) != 1) abort();
            n[o]++;
            trials++;
            if (o == OUT_ERROR && code == MORAINE_ECORRUPT) corrupt++;
            if (o == OUT_WRONG && n[OUT_WRONG] <= 5)
                check_note("a wrong answer after changing byte %zu of the %s at offset %zu", b, i % 2 ? "value" : "key", sp[i].off);
        }
    }
    close(fd);
    if (whole)
        check_note("flips: %d byte changes over the whole file: %d right, %d failed (%d ECORRUPT), %d wrong, %d crashed", trials,
                   n[OUT_RIGHT], n[OUT_ERROR], corrupt, n[OUT_WRONG], n[OUT_CRASH]);
    else
        check_note("flips: %d byte changes in %zu keys (%zu key bytes) and their values: %d right, %d failed (%d ECORRUPT), %d wrong, %d crashed",
                   trials, nsp / 2, key_bytes, n[OUT_RIGHT], n[OUT_ERROR], corrupt, n[OUT_WRONG], n[OUT_CRASH]);
    CHECK((size_t)trials * stride > 1000 || whole, "only %d flips", trials);
    /* over the whole file the figures are a measurement: damage to the newer
     * of LMDB's two meta pages makes LMDB open the previous commit, whole
     * (docs/reliability.md); keys and values must never give a wrong answer */
    if (!whole) CHECK(n[OUT_WRONG] == 0, "%d of %d byte changes gave a wrong answer without an error", n[OUT_WRONG], trials);
    /* the catalog is whole again */
    text again = {0};
    CHECK_RC(answers(dir, &again), 0);
    CHECK(again.len == right.len && memcmp(again.p, right.p, right.len) == 0, "restored catalog answers differently");
    free(again.p);
    free(right.p);
    free(sp);
}

/* ---- fork after open ---- */

static int64_t files_at(moraine_read *rd, int64_t s)
{
    moraine_cursor *c;
    if (moraine_scan_open(rd, "ducklake_data_file", 1, s, &c)) return -1;
    moraine_row row;
    int64_t n = 0;
    int rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1) n++;
    moraine_cursor_close(c);
    return rc < 0 ? -1 : n;
}

/* Another process opens the catalog (clearing dead readers, as every
 * writer's open does) and commits @n one-file snapshots. */
static int commit_elsewhere(const char *dir, int n)
{
    pid_t pid = fork();
    if (pid == 0) {
        moraine_options o = {.no_sync = 1};
        moraine_db *db;
        if (moraine_open(dir, &o, &db)) _exit(1);
        int64_t s;
        for (int i = 0; i < n; i++)
            if (commit_file(db, &s)) _exit(2);
        moraine_close(db);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

static void test_fork(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/fork", base);
    CHECK_RC(build_small(dir, 20), 0);
    moraine_options o = {.no_sync = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    int64_t at;
    CHECK(moraine_read_last_snapshot(rd, &at) == 1, "no last snapshot");
    int64_t before = files_at(rd, at);
    CHECK(before > 10, "%lld files", (long long)before);
    /* cursors the parent has begun walking, one plain and one projected */
    moraine_cursor *plain, *proj;
    moraine_row row;
    static const char *const pcols[] = {"data_file_id", "path"};
    static const char *const kcols[] = {"partition_value"};
    moraine_child_projection kid = {"ducklake_file_partition_value", kcols, 1, NULL, NULL, 0};
    moraine_projection pj = {pcols, 2, &kid, 1};
    CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", 1, at, &plain), 0);
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", 1, at, &pj, &proj), 0);
    CHECK_INT(moraine_cursor_next(plain, &row), 1);
    moraine_row prow = row; /* a file row the child renders and walks the children of (refused before either) */
    CHECK_INT(moraine_cursor_next(proj, &row), 1);
    /* the calls given a read check their arguments first */
    moraine_json nj = {0};
    CHECK_RC(moraine_row_json(NULL, &prow, 0, &nj), MORAINE_EINVAL);
    CHECK_RC(moraine_partition_spec_at(NULL, 1, at, &row), MORAINE_EINVAL);
    CHECK_RC(moraine_sort_spec_at(rd, 1, at, NULL), MORAINE_EINVAL);
    CHECK_RC(moraine_partition_spec_by_id(rd, 1, 0, NULL), MORAINE_EINVAL);

    pid_t pid = fork();
    if (pid == 0) {
        /* the inherited handle is refused, with the way out in the message */
        int bad = 0;
        /* so are the parent's read and its cursors: the snapshot they read
         * is held by the parent's reader slot, which the parent may release
         * (then a writer reuses the pages: a wrong answer, not an error) */
        int64_t got;
        moraine_cursor *c2;
        moraine_row r;
        size_t which, nr;
        const moraine_value *kv;
#define FORKED(call) ((call) == MORAINE_EFORK && strstr(moraine_errmsg(), "begun in process") && strstr(moraine_errmsg(), "after fork"))
        if (!FORKED(moraine_read_last_snapshot(rd, &got))) bad |= 32;
        if (!FORKED(moraine_scan_open(rd, "ducklake_data_file", 1, at, &c2))) bad |= 64;
        if (!FORKED(moraine_scan_project(rd, "ducklake_data_file", 1, at, &pj, &c2))) bad |= 128;
        if (!FORKED(moraine_cursor_next(plain, &r))) bad |= 256;
        if (!FORKED(moraine_cursor_next(proj, &r))) bad |= 512;
        if (!FORKED(moraine_cursor_child(proj, &which, &r))) bad |= 1024;
        if (!FORKED(moraine_cursor_child_rows(proj, 0, &kv, NULL, &nr))) bad |= 2048;
        if (!FORKED(moraine_read_snapshot(rd, at, &r))) bad |= 4096;
        if (!FORKED(moraine_partition_spec_at(rd, 1, at, &r)) || !FORKED(moraine_sort_spec_at(rd, 1, at, &r)) ||
            !FORKED(moraine_partition_spec_by_id(rd, 1, 0, &r)))
            bad |= 8192;
        if (!FORKED(moraine_table_id_at(rd, NULL, "t", at, &got))) bad |= 16384;
        uint64_t nsecret;
        if (!FORKED(moraine_secret_count(rd, &nsecret))) bad |= 32768;
        /* a row the parent read: its bytes are in the parent's read too */
        moraine_json j = {0};
        if (!FORKED(moraine_row_json(rd, &prow, MORAINE_JSON_CHILDREN, &j))) bad |= 65536;
        moraine_json_free(&j);
        moraine_children it;
        moraine_row_children(rd, &prow, &it);
        if (!FORKED(moraine_children_next(&it, &r))) bad |= 131072;
        moraine_children_free(&it);
#undef FORKED
        moraine_read *r2;
        moraine_txn *t2;
        int64_t last;
        if (moraine_read_begin(db, &r2) != MORAINE_EFORK || !strstr(moraine_errmsg(), "fork") || !strstr(moraine_errmsg(), "open"))
            bad |= 1;
        if (moraine_txn_begin(db, 999, &t2) != MORAINE_EFORK) bad |= 2;
        if (moraine_last_snapshot(db, &last) != MORAINE_EFORK) bad |= 4;
        /* the parent's read, inherited: ending it and closing the handle
         * must leave the parent's reader slot alone */
        moraine_read_end(rd);
        moraine_close(db);
        /* a fresh open in this process works */
        moraine_db *mine;
        moraine_options ro = {.read_only = 1};
        if (moraine_open(dir, &ro, &mine) || moraine_read_begin(mine, &r2)) bad |= 8;
        else {
            if (files_at(r2, at) != before) bad |= 16;
            moraine_read_end(r2);
            moraine_close(mine);
        }
        if (bad) fprintf(stderr, "test_fork child: checks failed, bits %#x\n", (unsigned)bad);
        _exit(bad > 255 ? 255 : bad); /* an exit status keeps 8 bits: never 0 for a failure */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child with an inherited handle: status %d", st);
    CHECK_INT(commit_elsewhere(dir, 60), 0);
    CHECK_INT(files_at(rd, at), before); /* the parent's read still holds its snapshot */
    /* and its cursors walk on in the parent */
    int64_t n = 1;
    int rc;
    while ((rc = moraine_cursor_next(plain, &row)) == 1) n++;
    CHECK_INT(rc, 0);
    CHECK_INT(n, before);
    size_t nr;
    const moraine_value *kv;
    CHECK_RC(moraine_cursor_child_rows(proj, 0, &kv, NULL, &nr), 0);
    for (n = 1; (rc = moraine_cursor_next(proj, &row)) == 1;) n++;
    CHECK_INT(rc, 0);
    CHECK_INT(n, before);
    moraine_cursor_close(plain);
    moraine_cursor_close(proj);
    moraine_read_end(rd);
    moraine_close(db);
}

/* A fork's child with its parent's pid number: the parent is the first
 * process of a pid namespace (a container's init, pid 1) and forks into a
 * new one, where the child is pid 1 too. The pid alone says "the same
 * process": the fork count must tell them apart, for the handle's calls
 * and for ending the inherited read, which must not release the parent's
 * LMDB reader slot. Needs CAP_SYS_ADMIN (unshare CLONE_NEWPID): skipped
 * without it, a failure under CI. */
enum { PIDNS_NO_UNSHARE = 77 };

static int pidns_parent(const char *dir)
{
    moraine_options o = {.no_sync = 1};
    moraine_db *db;
    if (moraine_open(dir, &o, &db)) return 50;
    moraine_read *rd;
    int64_t at = 0;
    if (moraine_read_begin(db, &rd) || moraine_read_last_snapshot(rd, &at) != 1) return 51;
    int64_t before = files_at(rd, at);
    if (before < 10) return 52;
    if (unshare(CLONE_NEWPID) != 0) return 53;
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        moraine_read *r2;
        int64_t last;
        if (getpid() != db->pid) bad |= 1; /* the premise: the same pid number */
        if (moraine_read_last_snapshot(rd, &last) != MORAINE_EFORK) bad |= 2;
        if (moraine_read_begin(db, &r2) != MORAINE_EFORK) bad |= 4;
        if (moraine_last_snapshot(db, &last) != MORAINE_EFORK) bad |= 8;
        moraine_read_end(rd); /* must leave the parent's reader slot */
        moraine_close(db);    /* and its environment */
        _exit(bad ? 60 + bad : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 54;
    if (WEXITSTATUS(st)) return WEXITSTATUS(st);
    if (commit_elsewhere(dir, 60)) return 55;
    if (files_at(rd, at) != before) return 56; /* the read, open all along, still sees its snapshot */
    moraine_read_end(rd);
    moraine_close(db);
    return 0;
}

static void test_fork_same_pid(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/forkpid", base);
    CHECK_RC(build_small(dir, 20), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* this process enters a new pid namespace's parent side; its first child is pid 1 there */
        if (unshare(CLONE_NEWPID) != 0) _exit(PIDNS_NO_UNSHARE);
        pid_t init = fork();
        if (init == 0) _exit(pidns_parent(dir));
        int st = 0;
        if (init < 0 || waitpid(init, &st, 0) != init) _exit(40);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 41);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st), "the pid namespace test's process: status %d", st);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code == PIDNS_NO_UNSHARE) {
        const char *ci = getenv("CI"), *strict = getenv("MORAINE_NO_SKIP");
        int must = (ci && strcmp(ci, "true") == 0) || (strict && strcmp(strict, "1") == 0);
        CHECK(!must, "cannot make a pid namespace (needs CAP_SYS_ADMIN)");
        if (!must) fprintf(stderr, "test_adversarial: a child with its parent's pid not tested: no pid namespace (needs CAP_SYS_ADMIN)\n");
        return;
    }
    /* 50-56: the parent's step that failed; 61-75: the child's checks (bits + 60) */
    CHECK_INT(code, 0);
}

/* ---- the same catalog opened twice in one process ---- */

static void test_double_open(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/twice", base);
    CHECK_RC(build_small(dir, 20), 0);
    moraine_options o = {.no_sync = 1};
    moraine_db *a, *b;
    CHECK_RC(moraine_open(dir, &o, &a), 0);
    CHECK_RC(moraine_open(dir, &o, &b), 0);
    CHECK(a->sh == b->sh, "two handles of one catalog have two LMDB environments");
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(b, &rd), 0);
    int64_t at = 0;
    moraine_read_last_snapshot(rd, &at);
    int64_t before = files_at(rd, at);
    CHECK(before > 10, "%lld files", (long long)before);
    moraine_close(a); /* must not drop the process's lock under b's read */
    CHECK_INT(commit_elsewhere(dir, 60), 0);
    CHECK_INT(files_at(rd, at), before);
    moraine_read_end(rd);
    /* one thread, two handles, two commits at once: refused, not a deadlock */
    moraine_txn *t1, *t2;
    CHECK_RC(moraine_open(dir, &o, &a), 0);
    CHECK_RC(moraine_txn_begin(a, MORAINE_NO_SNAPSHOT, &t1), 0);
    CHECK_RC(moraine_txn_begin(b, MORAINE_NO_SNAPSHOT, &t2), MORAINE_ETXN);
    moraine_txn_abort(t1);
    moraine_close(a);
    moraine_close(b);

    /* read-only first, then for writing: refused with the reason */
    moraine_options ro = {.read_only = 1};
    CHECK_RC(moraine_open(dir, &ro, &a), 0);
    CHECK_RC(moraine_open(dir, &o, &b), MORAINE_EREADONLY);
    CHECK(strstr(moraine_errmsg(), "already open read-only") != NULL, "message: %s", moraine_errmsg());
    moraine_close(a);
    /* for writing first, then read-only: shared, and the read-only one stays read-only */
    CHECK_RC(moraine_open(dir, &o, &a), 0);
    CHECK_RC(moraine_open(dir, &ro, &b), 0);
    CHECK_RC(moraine_txn_begin(b, MORAINE_NO_SNAPSHOT, &t2), MORAINE_EREADONLY);
    moraine_close(a);
    moraine_close(b);
}

/* ---- a dead reader beside a long-lived writer ---- */

static long file_size(const char *dir)
{
    char f[320];
    struct stat st;
    snprintf(f, sizeof f, "%s/data.mdb", dir);
    return stat(f, &st) == 0 ? (long)st.st_size : -1;
}

static long dead_reader_run(const char *dir, int with_dead_reader)
{
    if (build_small(dir, 6)) {
        check_note("build: %s", moraine_errmsg());
        return -1;
    }
    moraine_options o = {.no_sync = 1, .map_size = 64 << 20};
    moraine_db *w;
    if (moraine_open(dir, &o, &w)) return -1;
    pid_t pid = -1;
    if (with_dead_reader) {
        int fd[2];
        if (pipe(fd)) return -1;
        pid = fork();
        if (pid == 0) {
            moraine_options ro = {.read_only = 1};
            moraine_db *db;
            moraine_read *rd;
            if (moraine_open(dir, &ro, &db) || moraine_read_begin(db, &rd)) _exit(1);
            if (write(fd[1], "r", 1) != 1) _exit(1);
            for (;;) pause();
        }
        char c;
        if (read(fd[0], &c, 1) != 1) return -1;
        close(fd[0]);
        close(fd[1]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    int64_t s;
    for (int i = 0; i < 300; i++)
        if (commit_file(w, &s)) {
            check_note("commit %d: %s", i, moraine_errmsg());
            moraine_close(w);
            return -1;
        }
    moraine_close(w);
    return file_size(dir);
}

static void test_dead_reader(void)
{
    char d1[300], d2[300];
    snprintf(d1, sizeof d1, "%s/dead", base);
    snprintf(d2, sizeof d2, "%s/alive", base);
    long with = dead_reader_run(d1, 1), without = dead_reader_run(d2, 0);
    check_note("dead reader: data.mdb after 300 commits of one open writer: %ld bytes with a reader killed at the start, %ld without",
               with, without);
    CHECK(with > 0 && without > 0, "runs failed");
    CHECK(with <= 2 * without, "a dead reader made data.mdb grow to %ld bytes (%ld without)", with, without);
}

/* ---- stale table descriptors ---- */

typedef struct {
    moraine_db *reader;
    int read_rc;
    int seen_cols;
} cancel_ctx;

/* the progress callback of the import that is cancelled: the other handle
 * reads while the import's first commits are in the store */
static int read_then_cancel(void *ud, uint64_t done, uint64_t total)
{
    cancel_ctx *c = ud;
    if (done < total) return 0;
    moraine_read *rd;
    c->read_rc = moraine_read_begin(c->reader, &rd);
    if (!c->read_rc) {
        moraine_relation_info info;
        if (moraine_relation(c->reader, "x_files", &info) == 0) c->seen_cols = (int)info.ncols;
        moraine_read_end(rd);
    }
    return 1; /* cancel the import */
}

static moraine_value vi(int64_t i) { return (moraine_value){.type = MORAINE_INT, .i = i}; }
static moraine_value vs(const char *s) { return (moraine_value){.type = MORAINE_STR, .s = s, .len = strlen(s)}; }
static moraine_value vn(void) { return (moraine_value){.type = MORAINE_NULL}; }

static void test_stale_descriptors(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/stale", base);
    moraine_options o = {.create = 1, .no_sync = 1};
    moraine_db *importer, *reader;
    CHECK_RC(moraine_open(dir, &o, &importer), 0);
    CHECK_RC(moraine_open(dir, &o, &reader), 0);
    const char *snap_cols[] = {"snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id"};
    moraine_value snaps[] = {vi(0), vs("2025-01-01"), vi(0), vi(1), vi(0), vi(1), vs("2025-01-02"), vi(1), vi(1), vi(1)};
    /* the cancelled import: x_files(begin_snapshot, end_snapshot, record_count, file_size_bytes) */
    const char *cols1[] = {"begin_snapshot", "end_snapshot", "record_count", "file_size_bytes"};
    moraine_value rows1[] = {vi(0), vn(), vi(10), vi(1000), vi(1), vn(), vi(20), vi(2000)};
    moraine_import_table in1[] = {{"ducklake_snapshot", 5, snap_cols, 2, snaps}, {"x_files", 4, cols1, 2, rows1}};
    cancel_ctx ctx = {reader, -99, 0};
    int rc = moraine_import_rows(importer, in1, 2, read_then_cancel, &ctx);
    CHECK(rc != 0, "the cancelled import succeeded");
    CHECK_RC(ctx.read_rc, 0);
    CHECK_INT(ctx.seen_cols, 4); /* the reader did load the cancelled import's descriptors */
    /* the good import: the same table with its columns in another order */
    const char *cols2[] = {"begin_snapshot", "end_snapshot", "file_size_bytes", "record_count"};
    moraine_value rows2[] = {vi(0), vn(), vi(1000), vi(10), vi(1), vn(), vi(2000), vi(20)};
    moraine_import_table in2[] = {{"ducklake_snapshot", 5, snap_cols, 2, snaps}, {"x_files", 4, cols2, 2, rows2}};
    CHECK_RC(moraine_import_rows(importer, in2, 2, NULL, NULL), 0);
    /* the long-lived reader: names follow the stored descriptor */
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(reader, &rd), 0);
    moraine_cursor *c;
    CHECK_RC(moraine_scan_open(rd, "x_files", MORAINE_ANY_SCOPE, 1, &c), 0);
    moraine_row row;
    int n = 0, right = 0;
    while (moraine_cursor_next(c, &row) == 1) {
        n++;
        int rc_col = moraine_column_index(row.rel, "record_count"), sz_col = moraine_column_index(row.rel, "file_size_bytes");
        if (rc_col >= 0 && sz_col >= 0 && row.vals[rc_col].i * 100 == row.vals[sz_col].i) right++;
    }
    moraine_cursor_close(c);
    moraine_read_end(rd);
    CHECK_INT(n, 2);
    CHECK_INT(right, 2); /* record_count and file_size_bytes not swapped */
    moraine_close(reader);
    moraine_close(importer);
}

/* ---- verify survives damage to LMDB's branch pages ---- */

static int died;
static void count_died(void *ud, const char *key, const char *problem)
{
    (void)ud;
    if (strstr(problem, "the walk died") && strncmp(key, "(at ", 4) == 0) died++;
}

static void test_verify_isolated(void)
{
    char dir[300], file[320];
    snprintf(dir, sizeof dir, "%s/verify", base);
    moraine_options o = {.create = 1, .no_sync = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_RC(moraine_import_ndjson(db, "tests/fixtures/ducklake/s1_evolution/catalog", NULL, NULL), 0);
    moraine_close(db);
    CHECK_INT(moraine_verify_path(dir, NULL, NULL, NULL, NULL), 0);
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    int fd = open(file, O_RDWR);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", file);
    if (fd < 0) return;
    /* LMDB's leaf and branch pages: every byte of the array of node offsets
     * after a page's 16-byte header, changed one at a time: damage LMDB's
     * own cursor code trips on (it follows the offsets unchecked) */
    int flips = 0, pages = 0, failed = 0;
    for (off_t pg = 2; (pg + 1) * 4096 <= st.st_size; pg++) {
        uint8_t h[16];
        if (pread(fd, h, 16, pg * 4096) != 16 || !(h[10] & 3) || (h[10] & 0x08)) continue; /* P_BRANCH|P_LEAF, not P_META */
        pages++;
        unsigned lower = (unsigned)h[12] | (unsigned)h[13] << 8;
        for (unsigned b = 16; b < lower && b < 4096; b++) {
            off_t at = pg * 4096 + b;
            if ((size_t)at % stride != phase) continue;
            uint8_t was, now;
            if (pread(fd, &was, 1, at) != 1) continue;
            now = was ^ 0xFF;
            if (pwrite(fd, &now, 1, at) != 1) continue;
            if (moraine_verify_path(dir, count_died, NULL, NULL, NULL) < 0) failed++;
            if (pwrite(fd, &was, 1, at) != 1) abort();
            flips++;
        }
    }
    close(fd);
    check_note("verify in a child process: %d byte changes of node offsets in %d pages: %d walks died of a signal (each reported with "
               "its key, the caller unharmed), %d errors",
               flips, pages, died, failed);
    CHECK(pages > 0, "the s1 catalog has no leaf page");
    CHECK(died > 0, "no damage killed LMDB's walk: the isolation is not exercised");
    CHECK_INT(moraine_verify_path(dir, NULL, NULL, NULL, NULL), 0);
}

int main(void)
{
    check_seed("test_adversarial");
    set_stride();
    if (!check_mkdtemp(base, sizeof base, "moraine-adv")) {
        perror("check_mkdtemp");
        return 1;
    }
    test_stale_descriptors();
    test_fork();
    test_fork_same_pid();
    test_double_open();
    test_dead_reader();
    test_flips();
    test_verify_isolated();
    rmrf(base);
    return check_done();
}
