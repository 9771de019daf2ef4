/*
 * bench.c — the in-process timings of moraine (C API), the raw LMDB floor
 * and SQLite, on the catalog bench/gen.c wrote.
 *
 *   bench moraine WORK          import (f), workloads a-d, commits (e)
 *   bench floor WORK            the same key ranges walked with raw LMDB cursors, no decoding
 *   bench sqlite WORK plain     SQLite with DuckLake's schema exactly as DuckLake creates it
 *   bench sqlite WORK indexed   the same plus the indexes a tuned deployment adds (table_id first)
 *   bench interleave WORK       the shapes of (a) and (d) by moraine C, the floor and indexed SQLite, interleaved
 *   bench commit WORK [R [N [verb|staged]]]  R rounds of one N-file verb commit and one staged commit (files/s)
 *   bench commit1 WORK [R [N]]  R rounds of N one-file commits by moraine and by SQLite (plain, indexed), interleaved
 *                               (results/commit1.json: bench/report.mjs's one-file commit verdict)
 *   bench sqlite-load WORK [plain|indexed]  only the SQLite store's load (one, timed): WORK/stores/sqlite[-indexed].db,
 *                               a DuckLake SQLite catalog of the generated rows (a source for `moraine import`)
 *
 * WORK holds meta.json, catalog/ and sql/ (bench/sql.mjs); stores go to
 * WORK/stores/, results to WORK/results/<peer>.json. Every workload is timed
 * inside the process with CLOCK_MONOTONIC: one warm-up run, then
 * BENCH_RUNS runs (default 5, at least 5); the median is reported. Imports
 * run in a forked child each (so the load's peak memory is the child's and
 * the serving peak the parent's). Any failure exits non-zero with the reason.
 */
#include "moraine.h"
#include "internal.h" /* struct moraine_db: the floors walk moraine's own LMDB environment */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <lmdb.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

/* ---- helpers ---- */

static const char *peer_name = "bench";

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench %s: FAILED: ", peer_name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double *c = malloc((size_t)n * sizeof *c);
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, dcmp);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

static int RUNS = 5, IMPORT_RUNS = 5;

static void rm_rf(const char *p)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    if (system(cmd) != 0) die("cannot remove %s", p);
}

static uint64_t file_bytes(const char *p)
{
    struct stat st;
    if (stat(p, &st)) return 0;
    return (uint64_t)st.st_size;
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* ---- meta ---- */

typedef struct {
    json_t *j;
    int64_t T, last, old, tables, stats, pkeys, files;
    int64_t *table_ids;
    const char **columns, **column_types; /* column_types: NULL when meta.json has none */
    const char **pk_col, **pk_tr;
    const char *bench_table;
    uint64_t total_rows;
} meta_t;

static meta_t M;
static char WORK[4096];
static json_t *RESULTS;

static int64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) die("meta.json: %s missing", k);
    return json_integer_value(v);
}

static void load_meta(void)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/meta.json", WORK);
    json_error_t e;
    M.j = json_load_file(p, 0, &e);
    if (!M.j) die("%s: %s", p, e.text);
    M.T = jint(M.j, "bench_table_id");
    M.last = jint(M.j, "last_snapshot");
    M.old = jint(M.j, "old_snapshot");
    M.tables = jint(M.j, "tables");
    M.stats = jint(M.j, "stats");
    M.pkeys = jint(M.j, "pkeys");
    M.files = jint(M.j, "files");
    M.total_rows = (uint64_t)jint(M.j, "total_rows");
    M.bench_table = json_string_value(json_object_get(M.j, "bench_table"));
    json_t *a = json_object_get(M.j, "table_ids");
    M.table_ids = calloc(json_array_size(a), sizeof(int64_t));
    for (size_t i = 0; i < json_array_size(a); i++) M.table_ids[i] = json_integer_value(json_array_get(a, i));
    a = json_object_get(M.j, "columns");
    M.columns = calloc(json_array_size(a), sizeof(char *));
    for (size_t i = 0; i < json_array_size(a); i++) M.columns[i] = json_string_value(json_array_get(a, i));
    a = json_object_get(M.j, "column_types");
    if (json_is_array(a)) {
        M.column_types = calloc(json_array_size(a) + 1, sizeof(char *));
        for (size_t i = 0; i < json_array_size(a); i++) M.column_types[i] = json_string_value(json_array_get(a, i));
    }
    a = json_object_get(M.j, "bench_partition_keys");
    M.pk_col = calloc(json_array_size(a) + 1, sizeof(char *));
    M.pk_tr = calloc(json_array_size(a) + 1, sizeof(char *));
    for (size_t i = 0; i < json_array_size(a); i++) {
        M.pk_col[i] = json_string_value(json_object_get(json_array_get(a, i), "column"));
        M.pk_tr[i] = json_string_value(json_object_get(json_array_get(a, i), "transform"));
    }
}

/* ---- results ---- */

static json_t *wl_json(const double *runs, int n, double m)
{
    json_t *o = json_object(), *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_real(runs[i]));
    json_object_set_new(o, "runs", a);
    json_object_set_new(o, "median", json_real(m));
    return o;
}

/* a latency workload: warm-up, RUNS runs, median seconds; check = what the run returned */
typedef uint64_t (*work_fn)(void *ctx);
static void latency(const char *name, work_fn fn, void *ctx)
{
    uint64_t check = fn(ctx); /* warm-up */
    double *r = malloc((size_t)RUNS * sizeof *r);
    for (int i = 0; i < RUNS; i++) {
        double t = now();
        uint64_t c = fn(ctx);
        r[i] = now() - t;
        if (c != check) die("%s: run %d answered %" PRIu64 " rows, the warm-up %" PRIu64, name, i, c, check);
    }
    json_t *o = wl_json(r, RUNS, median(r, RUNS));
    json_object_set_new(o, "unit", json_string("s"));
    json_object_set_new(o, "rows", json_integer((json_int_t)check));
    json_object_set_new(json_object_get(RESULTS, "workloads"), name, o);
    fprintf(stderr, "  %-14s %10.6f s median (%" PRIu64 " rows)\n", name, median(r, RUNS), check);
    free(r);
}

/* a throughput workload: each run does @units units of work; rate = units / s */
typedef void (*batch_fn)(void *ctx, int run);
static void throughput(const char *name, const char *unit, double units, batch_fn fn, void *ctx)
{
    fn(ctx, -1); /* warm-up */
    double *r = malloc((size_t)RUNS * sizeof *r);
    for (int i = 0; i < RUNS; i++) {
        double t = now();
        fn(ctx, i);
        r[i] = units / (now() - t);
    }
    json_t *o = wl_json(r, RUNS, median(r, RUNS));
    json_object_set_new(o, "unit", json_string(unit));
    json_object_set_new(json_object_get(RESULTS, "workloads"), name, o);
    fprintf(stderr, "  %-14s %12.1f %s median\n", name, median(r, RUNS), unit);
    free(r);
}

/* Writes @o as WORK/results/@name.json (the folder made if missing); dies on failure. */
static void write_result(const char *name, json_t *o)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/results", WORK);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/results/%s.json", WORK, name);
    if (json_dump_file(o, p, JSON_INDENT(1))) die("cannot write %s", p);
}

static void save_results(void) { write_result(peer_name, RESULTS); }

/* Runs @fn in a forked child @IMPORT_RUNS+1 times (the first a warm-up);
 * the child writes its elapsed seconds to the pipe. Records the import
 * workload and the children's peak RSS. */
typedef double (*import_fn)(int run);
static void import_runs(const char *name, import_fn fn)
{
    double *r = malloc((size_t)(IMPORT_RUNS + 1) * sizeof *r);
    long peak = 0;
    for (int i = 0; i <= IMPORT_RUNS; i++) {
        int fd[2];
        if (pipe(fd)) die("pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0) die("fork: %s", strerror(errno));
        if (pid == 0) {
            close(fd[0]);
            double t = fn(i);
            if (write(fd[1], &t, sizeof t) != sizeof t) _exit(3);
            _exit(0);
        }
        close(fd[1]);
        double t = -1;
        ssize_t got = read(fd[0], &t, sizeof t);
        close(fd[0]);
        int st;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) < 0) die("wait: %s", strerror(errno));
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got != sizeof t) die("%s: the import child failed (status %d)", name, st);
        if (ru.ru_maxrss > peak) peak = ru.ru_maxrss;
        r[i] = (double)M.total_rows / t;
        fprintf(stderr, "  %-14s run %d: %.2f s, %.0f rows/s\n", name, i, t, r[i]);
    }
    json_t *o = wl_json(r + 1, IMPORT_RUNS, median(r + 1, IMPORT_RUNS));
    json_object_set_new(o, "unit", json_string("rows/s"));
    json_object_set_new(o, "rows", json_integer((json_int_t)M.total_rows));
    json_object_set_new(json_object_get(RESULTS, "workloads"), name, o);
    json_object_set_new(RESULTS, "peak_rss_load_kb", json_integer(peak));
    free(r);
}

/* ---- moraine (C API) ---- */

static uint64_t touch(const moraine_value *v, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        switch (v[i].type) {
        case MORAINE_INT:
        case MORAINE_BOOL: h += (uint64_t)v[i].i; break;
        case MORAINE_STR:
        case MORAINE_JSON: h += v[i].len + (v[i].len ? (uint8_t)v[i].s[0] : 0); break;
        case MORAINE_REAL: h += (uint64_t)v[i].d; break;
        default: h++;
        }
    }
    return h;
}

static void mcheck(int rc, const char *what)
{
    if (rc < 0) die("%s: %s: %s", what, moraine_strerror(rc), moraine_errmsg());
}

typedef struct {
    moraine_db *db;
    int64_t S;
    uint64_t sink, children, deletes;
} mctx;

static int col_of(moraine_db *db, const char *rel, const char *col)
{
    moraine_relation_info ri;
    mcheck(moraine_relation(db, rel, &ri), rel);
    int c = moraine_column_index(&ri, col);
    if (c < 0) die("%s has no column %s", rel, col);
    return c;
}

/* (a), (b): the files of one table at S with partition values and column
 * stats (embedded children) and their delete files (merged by data_file_id) */
static uint64_t m_files(void *p)
{
    mctx *c = p;
    static int dcol = -1, fcol = -1;
    if (dcol < 0) {
        fcol = col_of(c->db, "ducklake_data_file", "data_file_id");
        dcol = col_of(c->db, "ducklake_delete_file", "data_file_id");
    }
    moraine_read *rd;
    moraine_cursor *df, *del;
    mcheck(moraine_read_begin(c->db, &rd), "read_begin");
    mcheck(moraine_scan_open(rd, "ducklake_data_file", M.T, c->S, &df), "scan data files");
    mcheck(moraine_scan_open(rd, "ducklake_delete_file", M.T, c->S, &del), "scan delete files");
    moraine_row r, d, k;
    uint64_t n = 0, h = 0, kids = 0, dels = 0;
    int hd = moraine_cursor_next(del, &d);
    mcheck(hd, "next delete file");
    int rc;
    while ((rc = moraine_cursor_next(df, &r)) == 1) {
        n++;
        h += touch(r.vals, r.ncols);
        moraine_children ch;
        moraine_row_children(rd, &r, &ch);
        int kr;
        while ((kr = moraine_children_next(&ch, &k)) == 1) {
            h += touch(k.vals, k.ncols);
            kids++;
        }
        mcheck(kr, "children");
        moraine_children_free(&ch);
        int64_t id = r.vals[fcol].i;
        while (hd == 1 && d.vals[dcol].i < id) hd = moraine_cursor_next(del, &d);
        while (hd == 1 && d.vals[dcol].i == id) {
            h += touch(d.vals, d.ncols);
            dels++;
            hd = moraine_cursor_next(del, &d);
        }
        mcheck(hd, "next delete file");
    }
    mcheck(rc, "next data file");
    moraine_read_end(rd);
    c->sink += h;
    c->children = kids;
    c->deletes = dels;
    return n;
}

/* (a) through a projection: what DuckLake's file-list query selects of a
 * data file and of its delete file, the partition values, and the min/max
 * of the stats of the columns in c->stats_ids (none: the independent
 * shape; NULL: every column) */
static const char *const PROJ_FILE_COLS[] = {"data_file_id", "path",         "path_is_relative", "file_size_bytes", "footer_size", "row_id_start",
                                             "begin_snapshot", "partial_max", "mapping_id",      "record_count",    "partition_id"};
static const char *const PROJ_DEL_COLS[] = {"data_file_id", "path", "path_is_relative", "file_size_bytes", "footer_size", "format"};
static const char *const PROJ_PV_COLS[] = {"partition_key_index", "partition_value"};
static const char *const PROJ_ST_COLS[] = {"column_id", "min_value", "max_value"};
typedef struct {
    moraine_db *db;
    int64_t S;
    const int64_t *stats_ids; /* NULL: every column's stats */
    size_t nstats;            /* 0 with stats_ids set: no stats */
    uint64_t sink, children, deletes;
    int group_rows; /* the child rows by moraine_cursor_child_rows, a group a call */
} pctx;

static uint64_t m_files_proj(void *p)
{
    pctx *c = p;
    moraine_read *rd;
    moraine_cursor *df, *del;
    mcheck(moraine_read_begin(c->db, &rd), "read_begin");
    moraine_child_projection kids[2] = {{"ducklake_file_partition_value", PROJ_PV_COLS, 2, NULL, NULL, 0},
                                        {"ducklake_file_column_stats", PROJ_ST_COLS, 3, c->stats_ids ? "column_id" : NULL, c->stats_ids, c->nstats}};
    size_t nkids = c->stats_ids && c->nstats == 0 ? 1 : 2;
    moraine_projection fp = {PROJ_FILE_COLS, sizeof PROJ_FILE_COLS / sizeof *PROJ_FILE_COLS, kids, nkids};
    moraine_projection dp = {PROJ_DEL_COLS, sizeof PROJ_DEL_COLS / sizeof *PROJ_DEL_COLS, NULL, 0};
    mcheck(moraine_scan_project(rd, "ducklake_data_file", M.T, c->S, &fp, &df), "project data files");
    mcheck(moraine_scan_project(rd, "ducklake_delete_file", M.T, c->S, &dp, &del), "project delete files");
    moraine_row r, d, k;
    uint64_t n = 0, h = 0, kids_n = 0, dels = 0;
    int hd = moraine_cursor_next(del, &d);
    mcheck(hd, "next delete file");
    int rc;
    while ((rc = moraine_cursor_next(df, &r)) == 1) {
        n++;
        h += touch(r.vals, r.ncols);
        if (c->group_rows) {
            for (size_t g = 0; g < nkids; g++) {
                const moraine_value *kv;
                size_t nr;
                mcheck(moraine_cursor_child_rows(df, g, &kv, NULL, &nr), "child rows");
                h += touch(kv, nr * kids[g].ncolumns) + g * nr;
                kids_n += nr;
            }
        } else {
            size_t which;
            int kr;
            while ((kr = moraine_cursor_child(df, &which, &k)) == 1) {
                h += touch(k.vals, k.ncols) + which;
                kids_n++;
            }
            mcheck(kr, "children");
        }
        int64_t id = r.vals[0].i;
        while (hd == 1 && d.vals[0].i < id) hd = moraine_cursor_next(del, &d);
        while (hd == 1 && d.vals[0].i == id) {
            h += touch(d.vals, d.ncols);
            dels++;
            hd = moraine_cursor_next(del, &d);
        }
        mcheck(hd, "next delete file");
    }
    mcheck(rc, "next data file");
    moraine_read_end(rd);
    c->sink += h;
    c->children = kids_n;
    c->deletes = dels;
    return n;
}

/* (c): the partition spec and sort spec in force for every table at S */
static uint64_t m_specs(void *p)
{
    mctx *c = p;
    moraine_read *rd;
    mcheck(moraine_read_begin(c->db, &rd), "read_begin");
    static int tcol = -1;
    if (tcol < 0) tcol = col_of(c->db, "ducklake_table", "table_id");
    moraine_cursor *tc;
    mcheck(moraine_scan_open(rd, "ducklake_table", MORAINE_ANY_SCOPE, c->S, &tc), "scan tables");
    int64_t ids[4096];
    size_t nt = 0;
    moraine_row r, k;
    int rc;
    while ((rc = moraine_cursor_next(tc, &r)) == 1)
        if (nt < 4096) ids[nt++] = r.vals[tcol].i;
    mcheck(rc, "next table");
    uint64_t keys = 0, h = 0;
    for (size_t i = 0; i < nt; i++) {
        for (int s = 0; s < 2; s++) {
            rc = s == 0 ? moraine_partition_spec_at(rd, ids[i], c->S, &r) : moraine_sort_spec_at(rd, ids[i], c->S, &r);
            mcheck(rc, "spec_at");
            if (rc == 0) continue;
            h += touch(r.vals, r.ncols);
            moraine_children ch;
            moraine_row_children(rd, &r, &ch);
            while ((rc = moraine_children_next(&ch, &k)) == 1) {
                h += touch(k.vals, k.ncols);
                keys++;
            }
            mcheck(rc, "spec children");
            moraine_children_free(&ch);
        }
    }
    moraine_read_end(rd);
    c->sink += h;
    return keys;
}

/* (d): what ATTACH reads, every relation at S */
static const char *ATTACH_RELS[] = {"ducklake_metadata",   "ducklake_snapshot",          "ducklake_schema",           "ducklake_table",
                                    "ducklake_tag",        "ducklake_inlined_data_tables", "ducklake_column",         "ducklake_column_tag",
                                    "ducklake_view",       "ducklake_view_column_tag",   "ducklake_macro",            "ducklake_macro_impl",
                                    "ducklake_macro_parameters", "ducklake_partition_info", "ducklake_sort_info",      "ducklake_table_stats",
                                    "ducklake_table_column_stats"};
#define NATTACH (sizeof ATTACH_RELS / sizeof *ATTACH_RELS)

/* @by_key: the newest ducklake_snapshot row read by its key, as DuckLake's
 * LoadDuckLake reads it (`WHERE snapshot_id = (SELECT MAX(snapshot_id) ...)`:
 * moraine_read_last_snapshot, then moraine_read_snapshot); else every
 * snapshot row up to S scanned (the read before moraine_read_snapshot).
 * Every other relation is scanned at S with its children. Returns the rows
 * and child rows read. */
static uint64_t attach_read(mctx *c, int by_key)
{
    moraine_read *rd;
    mcheck(moraine_read_begin(c->db, &rd), "read_begin");
    uint64_t n = 0, h = 0;
    for (size_t i = 0; i < NATTACH; i++) {
        moraine_relation_info ri;
        if (moraine_relation(c->db, ATTACH_RELS[i], &ri)) continue;
        moraine_row r, k;
        int rc;
        if (by_key && ri.placement == MORAINE_PLACE_SNAPSHOT) {
            int64_t last;
            if (moraine_read_last_snapshot(rd, &last) != 1 || last != c->S) die("(d): the newest snapshot is not %" PRId64, c->S);
            rc = moraine_read_snapshot(rd, last, &r);
            if (rc != 1) die("(d): no snapshot row %" PRId64 " (%d: %s)", last, rc, moraine_errmsg());
            h += touch(r.vals, r.ncols);
            n++;
            continue;
        }
        moraine_cursor *cu;
        mcheck(moraine_scan_open(rd, ATTACH_RELS[i], MORAINE_ANY_SCOPE, c->S, &cu), ATTACH_RELS[i]);
        while ((rc = moraine_cursor_next(cu, &r)) == 1) {
            n++;
            h += touch(r.vals, r.ncols);
            if (r.children_len && ri.placement != MORAINE_PLACE_SNAPSHOT) {
                moraine_children ch;
                moraine_row_children(rd, &r, &ch);
                while ((rc = moraine_children_next(&ch, &k)) == 1) {
                    h += touch(k.vals, k.ncols);
                    n++;
                }
                mcheck(rc, "children");
                moraine_children_free(&ch);
            }
        }
        mcheck(rc, ATTACH_RELS[i]);
        moraine_cursor_close(cu);
    }
    moraine_read_end(rd);
    c->sink += h;
    return n;
}

static uint64_t m_attach(void *p) { return attach_read(p, 1); }
static uint64_t m_attach_walk(void *p) { return attach_read(p, 0); }

/* (e): verb commits adding files to the bench table */
typedef struct {
    moraine_db *db;
    int nfiles, ncommits;
    moraine_data_file *files; /* ncommits*nfiles per run, prebuilt */
    int64_t seq;
} commit_ctx;

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d) die("out of memory");
    return d;
}

static moraine_data_file *make_files(int n, int64_t seq0)
{
    moraine_data_file *fs = calloc((size_t)n, sizeof *fs);
    if (!fs) die("out of memory");
    for (int i = 0; i < n; i++) {
        char b[256];
        moraine_data_file *f = &fs[i];
        snprintf(b, sizeof b, "bench/commit-%" PRId64 "-%d/ducklake-0197aaaa-bbbb-7ccc-8ddd-%012d.parquet", seq0, i, i);
        f->path = xstrdup(b);
        f->record_count = 100000 + i;
        f->file_size_bytes = 1800000 + i;
        f->footer_size = 2048;
        const char **pv = calloc((size_t)M.pkeys + 1, sizeof(char *));
        for (int k = 0; k < M.pkeys; k++) {
            snprintf(b, sizeof b, "%d", (i + k) % 16);
            pv[k] = xstrdup(b);
        }
        f->partition_values = pv;
        f->npartition_values = (size_t)M.pkeys;
        moraine_column_stats *st = calloc((size_t)M.stats, sizeof *st);
        for (int c = 0; c < M.stats; c++) {
            st[c].column = M.columns[c];
            st[c].column_size_bytes = 200000 + c;
            st[c].value_count = f->record_count;
            st[c].null_count = c;
            /* min/max are values of the column's type (the verbs refuse others: engine/statval.c) */
            const char *ty = M.column_types && M.column_types[c] ? M.column_types[c] : "int64";
            if (!strncmp(ty, "timestamp", 9) || !strcmp(ty, "date")) {
                int date = !strcmp(ty, "date");
                snprintf(b, sizeof b, date ? "2025-01-%02d" : "2025-01-%02d 00:%02d:%02d", 1 + i % 28, i / 60 % 60, i % 60);
                st[c].min_value = xstrdup(b);
                snprintf(b, sizeof b, date ? "2026-02-%02d" : "2026-02-%02d 12:%02d:%02d", 1 + i % 28, i / 60 % 60, i % 60);
                st[c].max_value = xstrdup(b);
            } else {
                snprintf(b, sizeof b, "%d", i);
                st[c].min_value = xstrdup(b);
                snprintf(b, sizeof b, "%d", i + 100000);
                st[c].max_value = xstrdup(b);
            }
            st[c].contains_nan = -1;
        }
        f->stats = st;
        f->nstats = (size_t)M.stats;
    }
    return fs;
}

static void m_commit_batch(void *p, int run)
{
    commit_ctx *c = p;
    (void)run;
    for (int i = 0; i < c->ncommits; i++) {
        moraine_tx *tx;
        mcheck(moraine_tx_begin(c->db, &tx), "tx_begin");
        mcheck(moraine_tx_add_data_files(tx, NULL, M.bench_table, c->files + (size_t)i * (size_t)c->nfiles, (size_t)c->nfiles, NULL), "add_data_files");
        int64_t snap;
        mcheck(moraine_tx_commit(tx, &snap), "tx_commit");
    }
}

static char *store_dir(const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/stores/%s", WORK, name);
    return p;
}

static double m_import_one(int run)
{
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/stores/moraine-import", WORK);
    rm_rf(dir);
    moraine_options o = {0};
    o.no_sync = 1;
    o.create = 1;
    moraine_db *db;
    char cat[4200];
    snprintf(cat, sizeof cat, "%s/catalog", WORK);
    mcheck(moraine_open(dir, &o, &db), "open");
    double t = now();
    mcheck(moraine_import_ndjson(db, cat, NULL, NULL), "import_ndjson");
    t = now() - t;
    moraine_close(db);
    (void)run;
    return t;
}

/* WORK/stores/moraine from what m_import_one left in moraine-import,
 * rewritten by moraine_compact as `moraine import` leaves a new catalog (one
 * LMDB commit per snapshot leaves pages part full; the compacted copy is the
 * store every read workload and the floor walk). Records data.mdb's bytes
 * before and after in disk_bytes_imported and disk_bytes. */
static void compact_import(void)
{
    char from[4300];
    snprintf(from, sizeof from, "%s/stores/moraine-import", WORK);
    rm_rf(store_dir("moraine"));
    moraine_options o = {0};
    o.no_sync = 1;
    moraine_db *db;
    mcheck(moraine_open(from, &o, &db), "open the imported store");
    moraine_compact_info ci;
    mcheck(moraine_compact(db, store_dir("moraine"), &ci, NULL, NULL), "compact the imported store");
    moraine_close(db);
    rm_rf(from);
    if (RESULTS) {
        json_object_set_new(RESULTS, "disk_bytes_imported", json_integer((json_int_t)ci.src_bytes));
        json_object_set_new(RESULTS, "disk_bytes", json_integer((json_int_t)ci.dest_bytes));
    }
    fprintf(stderr, "  compacted the imported store: data.mdb %.1f MiB -> %.1f MiB\n", (double)ci.src_bytes / 1048576.0,
            (double)ci.dest_bytes / 1048576.0);
}

static void commits(const char *prefix, moraine_db *(*reopen)(int sync), batch_fn fn, void *(*mk)(moraine_db *, int nfiles, int ncommits))
{
    static const struct {
        int sync, nfiles, ncommits;
        const char *name, *unit;
    } plan[] = {
        {0, 1, 200, "e_1file", "snapshots/s"},
        {1, 1, 20, "e_1file_fsync", "snapshots/s"},
        {0, 10000, 1, "e_10k", "files/s"},
        {1, 10000, 1, "e_10k_fsync", "files/s"},
    };
    (void)prefix;
    for (size_t i = 0; i < sizeof plan / sizeof *plan; i++) {
        moraine_db *db = reopen(plan[i].sync);
        void *ctx = mk(db, plan[i].nfiles, plan[i].ncommits);
        double units = plan[i].nfiles == 1 ? plan[i].ncommits : (double)plan[i].nfiles * plan[i].ncommits;
        throughput(plan[i].name, plan[i].unit, units, fn, ctx);
        reopen(-1);
    }
}

static moraine_db *m_db;
static moraine_db *m_reopen(int sync)
{
    if (m_db) moraine_close(m_db);
    m_db = NULL;
    if (sync < 0) return NULL;
    moraine_options o = {0};
    o.no_sync = !sync;
    mcheck(moraine_open(store_dir("moraine-commits"), &o, &m_db), "open");
    return m_db;
}

static void *m_mk(moraine_db *db, int nfiles, int ncommits)
{
    commit_ctx *c = calloc(1, sizeof *c);
    static int64_t seq;
    c->db = db;
    c->nfiles = nfiles;
    c->ncommits = ncommits;
    c->files = make_files(nfiles * ncommits, ++seq);
    return c;
}

static void run_moraine(void)
{
    import_runs("f_import", m_import_one);
    compact_import();
    moraine_options o = {0};
    o.no_sync = 1;
    moraine_db *db;
    mcheck(moraine_open(store_dir("moraine"), &o, &db), "open");

    mctx c = {db, M.last, 0, 0, 0};
    latency("a_files_latest", m_files, &c);
    json_object_set_new(RESULTS, "a_children", json_integer((json_int_t)c.children));
    json_object_set_new(RESULTS, "a_deletes", json_integer((json_int_t)c.deletes));
    c.S = M.old;
    latency("b_files_old", m_files, &c);
    json_object_set_new(RESULTS, "b_children", json_integer((json_int_t)c.children));
    json_object_set_new(RESULTS, "b_deletes", json_integer((json_int_t)c.deletes));
    latency("c_specs", m_specs, &c);
    c.S = M.last;
    latency("d_attach", m_attach, &c);
    moraine_close(db);
    json_object_set_new(RESULTS, "peak_rss_serve_kb", json_integer(maxrss_kb()));
    /* commits go to a copy: the other peers read the store as imported */
    char cmd[12800]; /* three WORK paths of up to 4095 bytes each */
    snprintf(cmd, sizeof cmd, "rm -rf '%s/stores/moraine-commits' && cp -r '%s/stores/moraine' '%s/stores/moraine-commits'", WORK, WORK, WORK);
    if (system(cmd)) die("cannot copy the store");
    commits("moraine", m_reopen, m_commit_batch, m_mk);
    rm_rf(store_dir("moraine-commits"));
}

/* ---- floor: raw LMDB cursor walks over the same entries, no decoding ---- */

typedef struct {
    MDB_env *env;
    MDB_dbi dbi;
    uint32_t rel_df, rel_del, rel_tab, rel_pi, rel_si;
    uint32_t attach_rel[NATTACH];
    moraine_placement attach_place[NATTACH];
    int attach_scoped[NATTACH];
    int64_t S;
    uint64_t sink;
    mr_bounds bounds; /* the mapped file, for floor_prefetch */
} fctx;

static size_t kint(uint8_t *p, int64_t v)
{
    uint64_t u = (uint64_t)v ^ 0x8000000000000000ull;
    p[0] = 0x14;
    for (int i = 0; i < 8; i++) p[1 + i] = (uint8_t)(u >> (56 - 8 * i));
    return 9;
}

/* walks keys starting at @seek while they start with @pre; touches each entry */
static uint64_t walk(MDB_cursor *cu, const uint8_t *pre, size_t npre, const uint8_t *seek, size_t nseek, uint64_t *sink)
{
    MDB_val k = {nseek, (void *)seek}, v;
    uint64_t n = 0, h = 0;
    int rc = mdb_cursor_get(cu, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size >= npre && memcmp(k.mv_data, pre, npre) == 0) {
        const uint8_t *vb = v.mv_data;
        h += k.mv_size + v.mv_size + vb[0] + vb[v.mv_size - 1];
        n++;
        rc = mdb_cursor_get(cu, &k, &v, MDB_NEXT);
    }
    if (rc && rc != MDB_NOTFOUND) die("lmdb: %s", mdb_strerror(rc));
    *sink += h;
    return n;
}

/* current range of (rel[, scope]) and the history tail a read at S walks */
static uint64_t walk_rel(MDB_cursor *cu, char sub, uint32_t rel, int64_t scope, int has_scope, int64_t hist_from, int has_hist_from, uint64_t *sink)
{
    uint8_t pre[32], seek[40];
    size_t n = 0;
    pre[n++] = (uint8_t)sub;
    if (sub != 'S') n += kint(pre + n, rel);
    if (has_scope) n += kint(pre + n, scope);
    memcpy(seek, pre, n);
    size_t ns = n;
    if (has_hist_from) ns += kint(seek + n, hist_from);
    return walk(cu, pre, n, seek, ns, sink);
}

static uint64_t f_files(void *p)
{
    fctx *c = p;
    MDB_txn *txn;
    MDB_cursor *cu;
    if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn)) die("txn");
    mdb_cursor_open(txn, c->dbi, &cu);
    uint64_t n = walk_rel(cu, 'C', c->rel_df, M.T, 1, 0, 0, &c->sink);
    n += walk_rel(cu, 'H', c->rel_df, M.T, 1, c->S + 1, 1, &c->sink);
    walk_rel(cu, 'C', c->rel_del, M.T, 1, 0, 0, &c->sink);
    walk_rel(cu, 'H', c->rel_del, M.T, 1, c->S + 1, 1, &c->sink);
    mdb_cursor_close(cu);
    mdb_txn_abort(txn);
    return n;
}

/* CRC-32C of key @k, then of the @n bytes at @p: what moraine's checksum of a
 * value covers (engine/codec.c, value_crc) when @p follows the header */
static uint32_t key_crc(const MDB_val *k, const uint8_t *p, size_t n) { return mr_crc32c_update(mr_crc32c(k->mv_data, k->mv_size), p, n); }

/* The prefetch of moraine's cursor (engine/read.c, prefetch_value) in its
 * steady state: on the first value @vb in a 4 KB block, the MR_PREFETCH_PAGES
 * blocks after it asked for into L2 (those not asked for already: *@pf_end,
 * the end of the blocks asked for so far) and one byte of the block after
 * those read (its page table walked ahead) when the block entered follows
 * the last and that one lies inside the file @b; *@pf the block last entered. */
static inline void floor_prefetch(uintptr_t *pf, uintptr_t *pf_end, const void *vb, const mr_bounds *b)
{
    uintptr_t pg = (uintptr_t)vb & ~(uintptr_t)4095, from = pg + 4096, to = pg + 4096 * (1 + MR_PREFETCH_PAGES);
    if (pg == *pf) return;
    const int run = pg == *pf + 4096; /* the block after the last: the byte is read in a run only */
    if (*pf_end > from && *pf_end <= to) from = *pf_end;
    *pf = pg;
    *pf_end = to;
    for (uintptr_t a = from; a < to; a += 64) __builtin_prefetch((const void *)a, 0, 2);
    if (run && mr_block_in_file(b, to)) (void)*(const volatile uint8_t *)to;
}

/* the floor plus one pass over every value byte, the CRC-32C moraine checks
 * (of the key, then the value after its 5-byte header): the least a reader
 * that verifies what it reads must do. It prefetches as moraine's cursor
 * does (floor_prefetch), so it stays below what moraine can reach. */
static uint64_t walk_crc(MDB_cursor *cu, const mr_bounds *b, const uint8_t *pre, size_t npre, const uint8_t *seek, size_t nseek, uint64_t *sink)
{
    MDB_val k = {nseek, (void *)seek}, v;
    uint64_t n = 0, h = 0;
    uintptr_t pf = 0, pf_end = 0;
    int rc = mdb_cursor_get(cu, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size >= npre && memcmp(k.mv_data, pre, npre) == 0) {
        const uint8_t *vb = v.mv_data;
        floor_prefetch(&pf, &pf_end, vb, b);
        if (v.mv_size >= 5) h += key_crc(&k, vb + 5, v.mv_size - 5);
        n++;
        rc = mdb_cursor_get(cu, &k, &v, MDB_NEXT);
    }
    if (rc && rc != MDB_NOTFOUND) die("lmdb: %s", mdb_strerror(rc));
    *sink += h;
    return n;
}

/* One range walk of bench's floors: the entries with key prefix @pre
 * starting at @seek (docs/keyspace.md); @files: the range holds data files
 * (not delete files). Returns the entries it counts. */
typedef uint64_t (*range_walk)(void *ctx, MDB_cursor *cu, const uint8_t *pre, size_t npre, const uint8_t *seek, size_t nseek, int files);

/* The key ranges a read of table M.T's files at S walks, each through @w:
 * the current data files and the history tail ending after S, then the
 * same of the delete files. Returns the data files @w counted. */
static uint64_t files_ranges(fctx *f, range_walk w, void *ctx)
{
    MDB_txn *txn;
    MDB_cursor *cu;
    if (mdb_txn_begin(f->env, NULL, MDB_RDONLY, &txn)) die("txn");
    mdb_cursor_open(txn, f->dbi, &cu);
    uint64_t n = 0;
    uint32_t rels[2] = {f->rel_df, f->rel_del};
    for (int r = 0; r < 2; r++) {
        uint8_t pre[32], seek[40];
        size_t np = 0;
        pre[np++] = 'C';
        np += kint(pre + np, rels[r]);
        np += kint(pre + np, M.T);
        uint64_t m = w(ctx, cu, pre, np, pre, np, r == 0);
        pre[0] = 'H';
        memcpy(seek, pre, np);
        size_t ns = np + kint(seek + np, f->S + 1);
        m += w(ctx, cu, pre, np, seek, ns, r == 0);
        if (r == 0) n = m;
    }
    mdb_cursor_close(cu);
    mdb_txn_abort(txn);
    return n;
}

static uint64_t walk_crc_range(void *ctx, MDB_cursor *cu, const uint8_t *pre, size_t npre, const uint8_t *seek, size_t nseek, int files)
{
    (void)files;
    return walk_crc(cu, &((fctx *)ctx)->bounds, pre, npre, seek, nseek, &((fctx *)ctx)->sink);
}

static uint64_t f_files_crc(void *p) { return files_ranges(p, walk_crc_range, p); }

/* The floor with CRC plus the least a reader of moraine's value format
 * (docs/codec.md) must do to hand out what a shape asks for: every cell of
 * the row walked and summed (as `touch` sums what moraine hands out),
 * begin_snapshot compared with S, the partition-value group's rows walked,
 * the stats group skipped by its length (pv), filtered on column_id (1col)
 * or walked whole (all). No API, no projection map, no bounds checks and no
 * shortest-form checks (it trusts the bytes once their CRC matched): a lower
 * bound for the format, not a reader moraine could ship. */
typedef enum {
    FF_VALUE_CRC, /* one CRC over the key and the whole value, as moraine stores it (format 5) */
    FF_GROUP_CRC, /* a CRC over the key and the row, and one over each child group walked: what a
                   * format with a checksum a group would let a reader verify, stats group unread (pv) */
    FF_NO_CRC     /* no CRC: the cells alone, a reader that verifies nothing */
} ff_crc;

typedef struct {
    fctx *f;
    uint32_t rel_pv, rel_st;
    int stats;       /* 0: none, 1: column_id 1 only, 2: every column */
    int st_col;      /* index of column_id in a stats row */
    int begin_col;   /* index of begin_snapshot in the data file row */
    ff_crc crc;      /* which bytes it verifies */
    uint64_t sink;
} cfctx;

static inline const uint8_t *fmt_uv(const uint8_t *p, uint64_t *out)
{
    uint64_t u = 0;
    unsigned sh = 0;
    while (*p & 0x80) {
        u |= (uint64_t)(*p++ & 0x7F) << sh;
        sh += 7;
    }
    *out = u | (uint64_t)*p++ << sh;
    return p;
}

static inline const uint8_t *fmt_cell(const uint8_t *p, uint64_t *h, int64_t *iv)
{
    uint8_t t = *p++;
    uint64_t u;
    if (t == 1) {
        p = fmt_uv(p, &u);
        *iv = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        *h += (uint64_t)*iv;
    } else if (t == 2 || t == 6) {
        p = fmt_uv(p, &u);
        *h += u + (u ? p[0] : 0);
        p += u;
    } else if (t == 5) {
        *h += p[7];
        p += 8;
    } else {
        *h += t == 4;
    }
    return p;
}

/* The stored cell of column @name in a row of the data-file child table
 * @rel: its index less the parent-key columns (data_file_id, table_id)
 * before it, which an embedded child row leaves out (store format 5,
 * docs/codec.md); -1 when there is no such column. */
static int child_cell(const moraine_relation_info *rel, const char *name)
{
    int c = moraine_column_index(rel, name), k1 = moraine_column_index(rel, "data_file_id"), k2 = moraine_column_index(rel, "table_id");
    return c < 0 ? -1 : c - (k1 >= 0 && k1 < c) - (k2 >= 0 && k2 < c);
}

static uint64_t walk_cells(void *ctx, MDB_cursor *cu, const uint8_t *pre, size_t npre, const uint8_t *seek, size_t nseek, int files)
{
    cfctx *c = ctx;
    MDB_val k = {nseek, (void *)seek}, v;
    uint64_t n = 0, h = 0;
    uintptr_t pf = 0, pf_end = 0;
    int rc = mdb_cursor_get(cu, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size >= npre && memcmp(k.mv_data, pre, npre) == 0) {
        const uint8_t *vb = v.mv_data, *end = vb + v.mv_size;
        floor_prefetch(&pf, &pf_end, vb, &c->f->bounds);
        const uint8_t *p = vb;
        if (c->crc == FF_VALUE_CRC && mr_decode_header(&p, end, k.mv_data, k.mv_size)) die("format floor: %s", moraine_errmsg());
        p = vb + MR_HEADER_LEN;
        uint64_t ord, nc;
        int64_t iv = 0, begin = 0;
        p = fmt_uv(fmt_uv(p, &ord), &nc);
        for (uint64_t i = 0; i < nc; i++) {
            p = fmt_cell(p, &h, &iv);
            if ((int)i == c->begin_col) begin = iv;
        }
        if (c->crc == FF_GROUP_CRC) /* no stored checksum of this shape to compare with: summed, so it is computed */
            h += key_crc(&k, vb + MR_HEADER_LEN, (size_t)(p - (vb + MR_HEADER_LEN)));
        rc = mdb_cursor_get(cu, &k, &v, MDB_NEXT);
        if (files && begin > c->f->S) continue;
        n++;
        while (p < end) { /* child groups */
            uint64_t id, nrows, nbytes;
            const uint8_t *ghead = p;
            p = fmt_uv(fmt_uv(fmt_uv(p, &id), &nrows), &nbytes);
            const uint8_t *gend = p + nbytes;
            if (id == c->rel_pv || (id == c->rel_st && c->stats)) {
                if (c->crc == FF_GROUP_CRC) h += mr_crc32c_update(0, ghead, (size_t)(gend - ghead));
                int one = id == c->rel_st && c->stats == 1;
                for (uint64_t r = 0; r < nrows; r++) {
                    uint64_t len, d;
                    p = fmt_uv(p, &len);
                    const uint8_t *rend = p + len;
                    p = fmt_uv(p, &d);
                    h += d;
                    for (int i = 0; p < rend; i++) {
                        p = fmt_cell(p, &h, &iv);
                        if (one && i == c->st_col && iv != 1) p = rend;
                    }
                }
            }
            p = gend;
        }
    }
    if (rc && rc != MDB_NOTFOUND) die("lmdb: %s", mdb_strerror(rc));
    c->sink += h;
    return n;
}

static uint64_t f_files_cells(void *p) { return files_ranges(((cfctx *)p)->f, walk_cells, p); }

static uint64_t f_specs(void *p)
{
    fctx *c = p;
    MDB_txn *txn;
    MDB_cursor *cu;
    if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn)) die("txn");
    mdb_cursor_open(txn, c->dbi, &cu);
    uint64_t n = walk_rel(cu, 'C', c->rel_tab, 0, 0, 0, 0, &c->sink);
    n += walk_rel(cu, 'H', c->rel_tab, 0, 0, 0, 0, &c->sink);
    for (int64_t i = 0; i < M.tables; i++) {
        int64_t t = M.table_ids[i];
        n += walk_rel(cu, 'C', c->rel_pi, t, 1, 0, 0, &c->sink);
        n += walk_rel(cu, 'H', c->rel_pi, t, 1, c->S + 1, 1, &c->sink);
        n += walk_rel(cu, 'C', c->rel_si, t, 1, 0, 0, &c->sink);
        n += walk_rel(cu, 'H', c->rel_si, t, 1, c->S + 1, 1, &c->sink);
    }
    mdb_cursor_close(cu);
    mdb_txn_abort(txn);
    return n;
}

static uint64_t f_attach(void *p)
{
    fctx *c = p;
    MDB_txn *txn;
    MDB_cursor *cu;
    if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn)) die("txn");
    mdb_cursor_open(txn, c->dbi, &cu);
    uint64_t n = 0;
    for (size_t i = 0; i < NATTACH; i++) {
        uint32_t r = c->attach_rel[i];
        if (!r) continue;
        switch (c->attach_place[i]) {
        case MORAINE_PLACE_TEMPORAL:
            n += walk_rel(cu, 'C', r, 0, 0, 0, 0, &c->sink);
            n += walk_rel(cu, 'H', r, 0, 0, c->S + 1, !c->attach_scoped[i], &c->sink);
            break;
        case MORAINE_PLACE_SNAPSHOT: {
            /* the newest snapshot row by its key, as moraine's (d) reads it */
            uint8_t key[16];
            key[0] = 'S';
            MDB_val k = {1 + kint(key + 1, c->S), key}, v;
            int rc = mdb_get(txn, c->dbi, &k, &v);
            if (rc) die("floor (d): snapshot %" PRId64 ": %s", c->S, mdb_strerror(rc));
            const uint8_t *vb = v.mv_data;
            c->sink += k.mv_size + v.mv_size + vb[0] + vb[v.mv_size - 1];
            n++;
            break;
        }
        default: n += walk_rel(cu, 'R', r, 0, 0, 0, 0, &c->sink); break;
        }
    }
    mdb_cursor_close(cu);
    mdb_txn_abort(txn);
    return n;
}

static void lmdb_check(int rc, const char *what)
{
    if (rc) die("%s: %s", what, mdb_strerror(rc));
}

typedef struct {
    MDB_env *env;
    MDB_dbi dbi;
    int nfiles, ncommits;
    MDB_val sample;
    int64_t next_id;
} fcommit;

static MDB_env *f_env;
static fcommit *f_cc;

/* the floor of a commit: one write transaction putting as many entries (of
 * a stored file value's size) as the commit writes files, plus the snapshot */
static void f_commit_batch(void *p, int run)
{
    fcommit *c = p;
    (void)run;
    for (int i = 0; i < c->ncommits; i++) {
        MDB_txn *txn;
        lmdb_check(mdb_txn_begin(c->env, NULL, 0, &txn), "txn");
        uint8_t key[40];
        size_t n = 0;
        key[n++] = 'S';
        n += kint(key + n, c->next_id);
        MDB_val k = {n, key};
        lmdb_check(mdb_put(txn, c->dbi, &k, &c->sample, 0), "put");
        for (int f = 0; f < c->nfiles; f++) {
            n = 0;
            key[n++] = 'C';
            n += kint(key + n, 9);
            n += kint(key + n, M.T);
            n += kint(key + n, c->next_id++);
            k.mv_size = n;
            lmdb_check(mdb_put(txn, c->dbi, &k, &c->sample, 0), "put");
        }
        lmdb_check(mdb_txn_commit(txn), "commit");
    }
}

static moraine_db *f_reopen(int sync)
{
    if (f_env) mdb_env_close(f_env);
    f_env = NULL;
    if (sync < 0) return NULL;
    char d[4300];
    snprintf(d, sizeof d, "%s", store_dir("floor-commits"));
    mkdir(d, 0755);
    lmdb_check(mdb_env_create(&f_env), "env");
    mdb_env_set_mapsize(f_env, (size_t)64 << 30);
    lmdb_check(mdb_env_open(f_env, d, sync ? 0 : MDB_NOSYNC, 0644), "env_open");
    return (moraine_db *)f_env;
}

static void *f_mk(moraine_db *db, int nfiles, int ncommits)
{
    fcommit *c = f_cc;
    c->env = (MDB_env *)db;
    MDB_txn *txn;
    lmdb_check(mdb_txn_begin(c->env, NULL, 0, &txn), "txn");
    lmdb_check(mdb_dbi_open(txn, NULL, 0, &c->dbi), "dbi");
    mdb_txn_commit(txn);
    c->nfiles = nfiles;
    c->ncommits = ncommits;
    return c;
}

static double f_import_one(int run)
{
    /* the floor of an import: every entry of the moraine store written in key order into a new env */
    (void)run;
    char dst[4300], srcdir[4300];
    snprintf(dst, sizeof dst, "%s", store_dir("floor-import"));
    snprintf(srcdir, sizeof srcdir, "%s", store_dir("moraine"));
    rm_rf(dst);
    mkdir(dst, 0755);
    MDB_env *src, *out;
    lmdb_check(mdb_env_create(&src), "env");
    mdb_env_set_mapsize(src, (size_t)64 << 30);
    lmdb_check(mdb_env_open(src, srcdir, MDB_RDONLY, 0644), "open moraine store");
    lmdb_check(mdb_env_create(&out), "env");
    mdb_env_set_mapsize(out, (size_t)64 << 30);
    lmdb_check(mdb_env_open(out, dst, MDB_NOSYNC, 0644), "open floor store");
    double t = now();
    MDB_txn *rt, *wt;
    MDB_dbi rd, wd;
    lmdb_check(mdb_txn_begin(src, NULL, MDB_RDONLY, &rt), "txn");
    lmdb_check(mdb_dbi_open(rt, NULL, 0, &rd), "dbi");
    lmdb_check(mdb_txn_begin(out, NULL, 0, &wt), "txn");
    lmdb_check(mdb_dbi_open(wt, NULL, 0, &wd), "dbi");
    MDB_cursor *cu;
    mdb_cursor_open(rt, rd, &cu);
    MDB_val k, v;
    int rc = mdb_cursor_get(cu, &k, &v, MDB_FIRST);
    while (rc == 0) {
        lmdb_check(mdb_put(wt, wd, &k, &v, MDB_APPEND), "put");
        rc = mdb_cursor_get(cu, &k, &v, MDB_NEXT);
    }
    lmdb_check(mdb_txn_commit(wt), "commit");
    t = now() - t;
    mdb_txn_abort(rt);
    mdb_env_close(src);
    mdb_env_close(out);
    return t;
}

/* the relation ids, placements and scoping of what (d) reads, for f_attach */
static void attach_rels(moraine_db *db, fctx *c)
{
    static const char *scoped[] = {"ducklake_table", "ducklake_column", "ducklake_data_file", "ducklake_delete_file", "ducklake_partition_info", "ducklake_sort_info", "ducklake_column_tag"};
    moraine_relation_info ri;
    for (size_t i = 0; i < NATTACH; i++) {
        if (moraine_relation(db, ATTACH_RELS[i], &ri) || ri.ncols == 0) continue;
        c->attach_rel[i] = ri.id;
        c->attach_place[i] = ri.placement;
        for (size_t s = 0; s < sizeof scoped / sizeof *scoped; s++)
            if (!strcmp(scoped[s], ATTACH_RELS[i])) c->attach_scoped[i] = 1;
    }
}

static void run_floor(void)
{
    fctx c;
    memset(&c, 0, sizeof c);
    moraine_db *db;
    moraine_options o = {0};
    o.read_only = 1;
    mcheck(moraine_open(store_dir("moraine"), &o, &db), "open moraine store (run `bench moraine` first)");
    moraine_relation_info ri;
    mcheck(moraine_relation(db, "ducklake_data_file", &ri), "rel");
    c.rel_df = ri.id;
    mcheck(moraine_relation(db, "ducklake_delete_file", &ri), "rel");
    c.rel_del = ri.id;
    mcheck(moraine_relation(db, "ducklake_table", &ri), "rel");
    c.rel_tab = ri.id;
    mcheck(moraine_relation(db, "ducklake_partition_info", &ri), "rel");
    c.rel_pi = ri.id;
    mcheck(moraine_relation(db, "ducklake_sort_info", &ri), "rel");
    c.rel_si = ri.id;
    attach_rels(db, &c);
    moraine_close(db);

    import_runs("f_import", f_import_one);

    lmdb_check(mdb_env_create(&c.env), "env");
    mdb_env_set_mapsize(c.env, (size_t)64 << 30);
    lmdb_check(mdb_env_open(c.env, store_dir("moraine"), MDB_RDONLY, 0644), "open moraine store");
    mr_bounds_env(c.env, &c.bounds);
    MDB_txn *txn;
    lmdb_check(mdb_txn_begin(c.env, NULL, MDB_RDONLY, &txn), "txn");
    lmdb_check(mdb_dbi_open(txn, NULL, 0, &c.dbi), "dbi");
    /* a stored data-file value, the payload of the commit floor */
    MDB_cursor *cu;
    mdb_cursor_open(txn, c.dbi, &cu);
    uint8_t pre[16];
    size_t n = 0;
    pre[n++] = 'C';
    n += kint(pre + n, c.rel_df);
    MDB_val k = {n, pre}, v;
    lmdb_check(mdb_cursor_get(cu, &k, &v, MDB_SET_RANGE), "sample value");
    fcommit *fc = calloc(1, sizeof *fc);
    fc->sample.mv_size = v.mv_size;
    fc->sample.mv_data = malloc(v.mv_size);
    memcpy(fc->sample.mv_data, v.mv_data, v.mv_size);
    fc->next_id = 1;
    mdb_cursor_close(cu);
    mdb_txn_abort(txn);

    c.S = M.last;
    latency("a_files_latest", f_files, &c);
    c.S = M.old;
    latency("b_files_old", f_files, &c);
    latency("c_specs", f_specs, &c);
    c.S = M.last;
    latency("d_attach", f_attach, &c);
    mdb_env_close(c.env);
    json_object_set_new(RESULTS, "peak_rss_serve_kb", json_integer(maxrss_kb()));
    char p[4400];
    snprintf(p, sizeof p, "%s/data.mdb", store_dir("floor-import"));
    json_object_set_new(RESULTS, "disk_bytes", json_integer((json_int_t)file_bytes(p)));
    rm_rf(store_dir("floor-commits"));
    f_cc = fc;
    commits("floor", f_reopen, f_commit_batch, f_mk);
    rm_rf(store_dir("floor-commits"));
    rm_rf(store_dir("floor-import"));
}

/* ---- SQLite ---- */

static int sq_indexed;

static void sqcheck(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) die("%s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f) die("%s: %s", p, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) die("%s: read failed", p);
    b[n] = 0;
    fclose(f);
    return b;
}

/* statements of a bench/sql.mjs file: split at "-- next" lines */
static char **sql_file(const char *dialect, const char *name, int *n)
{
    char p[4300];
    snprintf(p, sizeof p, "%s/sql/%s/%s.sql", WORK, dialect, name);
    char *s = slurp(p);
    char **v = NULL;
    *n = 0;
    char *cur = s;
    for (;;) {
        char *sep = strstr(cur, "\n-- next\n");
        if (sep) *sep = 0;
        v = realloc(v, (size_t)(*n + 1) * sizeof *v);
        v[(*n)++] = cur;
        if (!sep) break;
        cur = sep + 9;
    }
    return v;
}

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) die("%.120s: %s", sql, err);
}

static const char *sq_path(void) { return store_dir(sq_indexed ? "sqlite-indexed.db" : "sqlite.db"); }

static void sq_pragmas(sqlite3 *db, int sync)
{
    /* plain: DuckLake's SQLite as created (rollback journal); indexed: WAL, as a tuned deployment runs it */
    if (sq_indexed) sq_exec(db, "PRAGMA journal_mode=WAL");
    sq_exec(db, sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF");
}

static double sq_import_one(int run)
{
    (void)run;
    char p[4300];
    snprintf(p, sizeof p, "%s", sq_path());
    unlink(p);
    char w[4400];
    snprintf(w, sizeof w, "%s-wal", p);
    unlink(w);
    snprintf(w, sizeof w, "%s-shm", p);
    unlink(w);
    sqlite3 *db;
    sqcheck(NULL, sqlite3_open(p, &db), "open");
    sq_pragmas(db, 0);
    int n;
    char **st = sql_file("sqlite", "schema", &n);
    for (int i = 0; i < n; i++) sq_exec(db, st[i]);
    if (sq_indexed) {
        st = sql_file("sqlite", "indexes", &n);
        for (int i = 0; i < n; i++) sq_exec(db, st[i]);
    }
    double t = now();
    sq_exec(db, "BEGIN");
    char cat[4300];
    snprintf(cat, sizeof cat, "%s/catalog", WORK);
    DIR *d = opendir(cat);
    if (!d) die("%s: %s", cat, strerror(errno));
    struct dirent *e;
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 7, ".ndjson")) continue;
        char tbl[256];
        snprintf(tbl, sizeof tbl, "%.*s", (int)(len - 7), e->d_name);
        char fp[4600];
        snprintf(fp, sizeof fp, "%s/%s", cat, e->d_name);
        FILE *f = fopen(fp, "rb");
        if (!f) die("%s: %s", fp, strerror(errno));
        sqlite3_stmt *ins = NULL;
        size_t ncols = 0;
        const char **cols = NULL;
        ssize_t got;
        while ((got = getline(&line, &cap, f)) > 0) {
            if (got <= 1) continue;
            json_error_t je;
            json_t *o = json_loadb(line, (size_t)got, 0, &je);
            if (!o) die("%s: %s", fp, je.text);
            if (!ins) {
                ncols = json_object_size(o);
                cols = calloc(ncols, sizeof *cols);
                char *sql = malloc(64 + ncols * 64), *q = sql;
                q += sprintf(q, "INSERT INTO %s(", tbl);
                size_t i = 0;
                const char *k;
                json_t *v;
                json_object_foreach(o, k, v)
                {
                    cols[i] = strdup(k);
                    q += sprintf(q, "%s%s", i ? "," : "", k);
                    i++;
                }
                q += sprintf(q, ") VALUES (");
                for (i = 0; i < ncols; i++) q += sprintf(q, "%s?", i ? "," : "");
                sprintf(q, ")");
                sqcheck(db, sqlite3_prepare_v2(db, sql, -1, &ins, NULL), sql);
                free(sql);
            }
            for (size_t i = 0; i < ncols; i++) {
                json_t *v = json_object_get(o, cols[i]);
                int c = (int)i + 1;
                if (!v || json_is_null(v)) sqlite3_bind_null(ins, c);
                else if (json_is_integer(v)) sqlite3_bind_int64(ins, c, json_integer_value(v));
                else if (json_is_boolean(v)) sqlite3_bind_int(ins, c, json_is_true(v));
                else if (json_is_real(v)) sqlite3_bind_double(ins, c, json_real_value(v));
                else if (json_is_string(v)) sqlite3_bind_text(ins, c, json_string_value(v), (int)json_string_length(v), SQLITE_TRANSIENT);
                else {
                    char *s = json_dumps(v, JSON_COMPACT);
                    sqlite3_bind_text(ins, c, s, -1, free);
                }
            }
            sqcheck(db, sqlite3_step(ins), tbl);
            sqlite3_reset(ins);
            json_decref(o);
        }
        fclose(f);
        if (ins) sqlite3_finalize(ins);
    }
    closedir(d);
    sq_exec(db, "COMMIT");
    t = now() - t;
    sqlite3_close(db);
    return t;
}

typedef struct {
    sqlite3 *db;
    char **st;
    int n;
    uint64_t sink, deletes;
} sqctx;

/* runs every statement, steps every row and reads every column; returns the first statement's rows */
static uint64_t sq_query(void *p)
{
    sqctx *c = p;
    uint64_t first = 0, h = 0, dels = 0;
    for (int i = 0; i < c->n; i++) {
        sqlite3_stmt *s;
        sqcheck(c->db, sqlite3_prepare_v2(c->db, c->st[i], -1, &s, NULL), c->st[i]);
        int nc = sqlite3_column_count(s), rc;
        int delcol = -1;
        for (int k = 0; k < nc; k++)
            if (!strcmp(sqlite3_column_name(s, k), "del_path")) delcol = k;
        uint64_t rows = 0;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            rows++;
            for (int k = 0; k < nc; k++) {
                switch (sqlite3_column_type(s, k)) {
                case SQLITE_INTEGER: h += (uint64_t)sqlite3_column_int64(s, k); break;
                case SQLITE_FLOAT: h += (uint64_t)sqlite3_column_double(s, k); break;
                case SQLITE_TEXT: {
                    const unsigned char *t = sqlite3_column_text(s, k);
                    int n = sqlite3_column_bytes(s, k);
                    h += (uint64_t)n + (n ? t[0] : 0);
                    break;
                }
                case SQLITE_NULL: h++; break;
                default: h += (uint64_t)sqlite3_column_bytes(s, k);
                }
            }
            if (delcol >= 0 && sqlite3_column_type(s, delcol) != SQLITE_NULL) dels++;
        }
        sqcheck(c->db, rc, c->st[i]);
        sqlite3_finalize(s);
        first += rows;
    }
    c->sink += h;
    c->deletes = dels;
    return first;
}

typedef struct {
    sqlite3 *db;
    int nfiles, ncommits;
    int64_t seq;
    size_t cap;
    char *sql;
} sqcommit;

static void ap(sqcommit *c, size_t *len, const char *fmt, ...)
{
    va_list a;
    for (;;) {
        va_start(a, fmt);
        int n = vsnprintf(c->sql + *len, c->cap - *len, fmt, a);
        va_end(a);
        if ((size_t)n < c->cap - *len) {
            *len += (size_t)n;
            return;
        }
        c->cap = c->cap * 2 + (size_t)n;
        c->sql = realloc(c->sql, c->cap);
    }
}

static int64_t sq_one_int(sqlite3 *db, const char *sql, int col, sqlite3_stmt **keep)
{
    sqlite3_stmt *s;
    sqcheck(db, sqlite3_prepare_v2(db, sql, -1, &s, NULL), sql);
    if (sqlite3_step(s) != SQLITE_ROW) die("%s: no row", sql);
    int64_t v = sqlite3_column_int64(s, col);
    if (keep) *keep = s;
    else sqlite3_finalize(s);
    return v;
}

/* the statements DuckLake's commit of an INSERT issues, as SQL text */
static void sq_commit_batch(void *p, int run)
{
    sqcommit *c = p;
    (void)run;
    for (int i = 0; i < c->ncommits; i++) {
        sq_exec(c->db, "BEGIN");
        sqlite3_stmt *s;
        sq_one_int(c->db, "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)", 0, &s);
        int64_t snap = sqlite3_column_int64(s, 0) + 1, sv = sqlite3_column_int64(s, 1), cat = sqlite3_column_int64(s, 2), fid = sqlite3_column_int64(s, 3);
        sqlite3_finalize(s);
        char q[256];
        snprintf(q, sizeof q, "SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats WHERE table_id = %" PRId64, M.T);
        sq_one_int(c->db, q, 0, &s);
        int64_t rc0 = sqlite3_column_int64(s, 0), row = sqlite3_column_int64(s, 1), size = sqlite3_column_int64(s, 2);
        sqlite3_finalize(s);
        size_t len = 0;
        c->seq++;
        ap(c, &len, "INSERT INTO ducklake_snapshot VALUES (%" PRId64 ", '2026-02-01 00:00:00+00', %" PRId64 ", %" PRId64 ", %" PRId64 ");\n", snap, sv, cat, fid + c->nfiles);
        ap(c, &len, "INSERT INTO ducklake_snapshot_changes VALUES (%" PRId64 ", 'inserted_into_table:%" PRId64 "', NULL, NULL, NULL);\n", snap, M.T);
        ap(c, &len, "INSERT INTO ducklake_data_file VALUES ");
        int64_t r = row;
        for (int f = 0; f < c->nfiles; f++) {
            ap(c, &len, "%s(%" PRId64 ", %" PRId64 ", %" PRId64 ", NULL, NULL, 'bench/commit-%" PRId64 "-%d/ducklake-0197aaaa-bbbb-7ccc-8ddd-%012d.parquet', true, 'parquet', %d, %d, 2048, %" PRId64 ", NULL, NULL, NULL, NULL, NULL)",
               f ? ", " : "", fid + f, M.T, snap, c->seq, f, f, 100000 + f, 1800000 + f, r);
            r += 100000 + f;
        }
        ap(c, &len, ";\nINSERT INTO ducklake_file_column_stats VALUES ");
        for (int f = 0; f < c->nfiles; f++)
            for (int k = 0; k < M.stats; k++)
                ap(c, &len, "%s(%" PRId64 ", %" PRId64 ", %d, %d, %d, %d, '%d', '%d', NULL, NULL)", f || k ? ", " : "", fid + f, M.T, k + 1, 200000 + k, 100000 + f, k, f, f + 100000);
        if (M.pkeys) {
            ap(c, &len, ";\nINSERT INTO ducklake_file_partition_value VALUES ");
            for (int f = 0; f < c->nfiles; f++)
                for (int k = 0; k < M.pkeys; k++) ap(c, &len, "%s(%" PRId64 ", %" PRId64 ", %d, '%d')", f || k ? ", " : "", fid + f, M.T, k, (f + k) % 16);
        }
        ap(c, &len, ";\nUPDATE ducklake_table_stats SET record_count = %" PRId64 ", next_row_id = %" PRId64 ", file_size_bytes = %" PRId64 " WHERE table_id = %" PRId64 ";\n",
           rc0 + (r - row), r, size + 1800000 * (int64_t)c->nfiles, M.T);
        for (int k = 0; k < M.stats; k++)
            ap(c, &len, "UPDATE ducklake_table_column_stats SET contains_null = (contains_null OR true), min_value = min(min_value, '0'), max_value = max(max_value, '%d') WHERE table_id = %" PRId64 " AND column_id = %d;\n",
               100000 + c->nfiles, M.T, k + 1);
        sq_exec(c->db, c->sql);
        sq_exec(c->db, "COMMIT");
    }
}

static sqlite3 *sq_db;
/* commits go to a copy (as moraine's do): the store stays as loaded for
 * `bench interleave` and the Lua interleaved runs */
static const char *sq_commit_path(void) { return store_dir(sq_indexed ? "sqlite-indexed-commits.db" : "sqlite-commits.db"); }
static moraine_db *sq_reopen(int sync)
{
    if (sq_db) sqlite3_close(sq_db);
    sq_db = NULL;
    if (sync < 0) return NULL;
    sqcheck(NULL, sqlite3_open(sq_commit_path(), &sq_db), "open");
    sq_pragmas(sq_db, sync);
    return (moraine_db *)sq_db;
}

static void *sq_mk(moraine_db *db, int nfiles, int ncommits)
{
    sqcommit *c = calloc(1, sizeof *c);
    static int64_t seq = 1000;
    c->db = (sqlite3 *)db;
    c->nfiles = nfiles;
    c->ncommits = ncommits;
    c->seq = seq += 1000;
    c->cap = 1 << 20;
    c->sql = malloc(c->cap);
    return c;
}

static void run_sqlite(void)
{
    import_runs("f_import", sq_import_one);
    json_object_set_new(RESULTS, "disk_bytes", json_integer((json_int_t)file_bytes(sq_path())));
    sqlite3 *db;
    sqcheck(NULL, sqlite3_open(sq_path(), &db), "open");
    sqctx c = {db, NULL, 0, 0, 0};
    c.st = sql_file("sqlite", "a", &c.n);
    latency("a_files_latest", sq_query, &c);
    json_object_set_new(RESULTS, "a_deletes", json_integer((json_int_t)c.deletes));
    c.st = sql_file("sqlite", "b", &c.n);
    latency("b_files_old", sq_query, &c);
    json_object_set_new(RESULTS, "b_deletes", json_integer((json_int_t)c.deletes));
    c.st = sql_file("sqlite", "c", &c.n);
    latency("c_specs", sq_query, &c);
    c.st = sql_file("sqlite", "d", &c.n);
    latency("d_attach", sq_query, &c);
    sqlite3_close(db);
    json_object_set_new(RESULTS, "peak_rss_serve_kb", json_integer(maxrss_kb()));
    char cmd[9000], from[4300];
    snprintf(from, sizeof from, "%s", sq_path()); /* store_dir's buffer is static */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, sq_commit_path());
    if (system(cmd)) die("cannot copy the store");
    commits("sqlite", sq_reopen, sq_commit_batch, sq_mk);
    char p[4400];
    snprintf(p, sizeof p, "%s", sq_commit_path());
    unlink(p);
    snprintf(p, sizeof p, "%s-wal", sq_commit_path());
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", sq_commit_path());
    unlink(p);
}

/* ---- interleaved: the (a) shapes and (d) of every in-process peer, A B C A B C ... ---- */

typedef struct {
    const char *peer, *shape;
    work_fn fn;
    void *ctx;
    double *t;
    uint64_t rows;
} ient;

/* The entry of @peer and @shape among @E[0 .. @ne - 1], or NULL. */
static const ient *find_entry(const ient *E, size_t ne, const char *peer, const char *shape)
{
    for (size_t i = 0; i < ne; i++)
        if (!strcmp(E[i].peer, peer) && !strcmp(E[i].shape, shape)) return &E[i];
    return NULL;
}

static double minv(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

static void fmt_s(char *b, size_t n, double s)
{
    if (s >= 1) snprintf(b, n, "%.2f s", s);
    else if (s >= 1e-3) snprintf(b, n, "%.2f ms", s * 1e3);
    else snprintf(b, n, "%.0f µs", s * 1e6);
}

/* @order[0 .. n - 1] := a random permutation of 0 .. n - 1 (Fisher-Yates,
 * splitmix64 from *@seed, which it advances). */
static void shuffle(size_t *order, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n; i > 1; i--) {
        uint64_t z = (*seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        size_t j = (size_t)(z % i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* Every shape of workload (a) by moraine C (row at a time and projected), the
 * raw LMDB floor (walking moraine's own environment, the pages moraine reads)
 * and indexed SQLite, and workload (d) by the same peers (moraine C reading
 * the newest snapshot row by its key, and walking every snapshot row as
 * before moraine_read_snapshot), in rounds: each round runs every entry once,
 * in an order drawn afresh each round (a fixed seed), so every ratio is
 * measured under the same load and no entry always follows the same one.
 * (A fixed order let each floor follow another walk of the same bytes, so
 * it always found them in the CPU's caches, while moraine's read followed a
 * walk of a copy of the store.) Min and median of BENCH_INTERLEAVE_ROUNDS
 * rounds (21). Needs the stores of `bench moraine` and `bench sqlite WORK
 * indexed`. Writes results/interleave.json and results/interleave.md. */
static void run_interleave(void)
{
    int R = 21;
    const char *e = getenv("BENCH_INTERLEAVE_ROUNDS");
    if (e && atoi(e) >= 5) R = atoi(e);
    moraine_options o = {0};
    o.read_only = 1;
    moraine_db *db;
    mcheck(moraine_open(store_dir("moraine"), &o, &db), "open moraine store (run `bench moraine` first)");
    fctx fc;
    memset(&fc, 0, sizeof fc);
    moraine_relation_info ri;
    mcheck(moraine_relation(db, "ducklake_data_file", &ri), "rel");
    fc.rel_df = ri.id;
    mcheck(moraine_relation(db, "ducklake_delete_file", &ri), "rel");
    fc.rel_del = ri.id;
    /* the floors walk moraine's own LMDB environment (engine/internal.h):
     * the same mapped pages moraine reads, so a floor and moraine find the
     * store's lines in the CPU's caches on the same terms */
    fc.env = db->env;
    fc.dbi = db->dbi;
    mr_bounds_get(db, &fc.bounds);
    fc.S = M.last;
    attach_rels(db, &fc);
    sq_indexed = 1;
    sqlite3 *sdb;
    sqcheck(NULL, sqlite3_open_v2(sq_path(), &sdb, SQLITE_OPEN_READONLY, NULL), "open indexed SQLite (run `bench sqlite WORK indexed` first)");
    static const int64_t one[] = {1};
    mctx mc = {db, M.last, 0, 0, 0};
    pctx p_all = {db, M.last, NULL, 0, 0, 0, 0, 0}, p_pv = {db, M.last, one, 0, 0, 0, 0, 0}, p_1 = {db, M.last, one, 1, 0, 0, 0, 0};
    pctx g_all = p_all, g_pv = p_pv, g_1 = p_1;
    g_all.group_rows = g_pv.group_rows = g_1.group_rows = 1;
    sqctx s_all = {sdb, NULL, 0, 0, 0}, s_pv = s_all, s_1 = s_all, s_d = s_all;
    s_d.st = sql_file("sqlite", "d", &s_d.n);
    s_all.st = sql_file("sqlite", "a", &s_all.n);
    s_pv.st = sql_file("sqlite", "a_pv", &s_pv.n);
    s_1.st = sql_file("sqlite", "a_1col", &s_1.n);
    cfctx cf[9]; /* shape i (pv, 1col, all) with CRC mode m at cf[3 * m + i] */
    {
        moraine_relation_info pvi, sti, dfi;
        mcheck(moraine_relation(db, "ducklake_file_partition_value", &pvi), "rel");
        mcheck(moraine_relation(db, "ducklake_file_column_stats", &sti), "rel");
        mcheck(moraine_relation(db, "ducklake_data_file", &dfi), "rel");
        for (int i = 0; i < 9; i++) {
            cf[i] = (cfctx){&fc, pvi.id, sti.id, i % 3, child_cell(&sti, "column_id"), dfi.begin_col, (ff_crc)(i / 3), 0};
            if (cf[i].st_col < 0 || cf[i].begin_col < 0) die("format floor: no column_id or begin_snapshot");
        }
    }
    ient E[] = {
        {"floor", "walk", f_files, &fc, NULL, 0},
        {"floor_crc", "walk", f_files_crc, &fc, NULL, 0},
        {"floor_format", "pv", f_files_cells, &cf[0], NULL, 0},
        {"floor_format", "1col", f_files_cells, &cf[1], NULL, 0},
        {"floor_format", "all", f_files_cells, &cf[2], NULL, 0},
        {"floor_format_group_crc", "pv", f_files_cells, &cf[3], NULL, 0},
        {"floor_format_group_crc", "1col", f_files_cells, &cf[4], NULL, 0},
        {"floor_format_group_crc", "all", f_files_cells, &cf[5], NULL, 0},
        {"floor_format_no_crc", "pv", f_files_cells, &cf[6], NULL, 0},
        {"floor_format_no_crc", "1col", f_files_cells, &cf[7], NULL, 0},
        {"floor_format_no_crc", "all", f_files_cells, &cf[8], NULL, 0},
        {"moraine_c_proj", "pv", m_files_proj, &p_pv, NULL, 0},
        {"moraine_c_groups", "pv", m_files_proj, &g_pv, NULL, 0},
        {"moraine_c_groups", "1col", m_files_proj, &g_1, NULL, 0},
        {"moraine_c_groups", "all", m_files_proj, &g_all, NULL, 0},
        {"sqlite_indexed", "pv", sq_query, &s_pv, NULL, 0},
        {"moraine_c_proj", "1col", m_files_proj, &p_1, NULL, 0},
        {"sqlite_indexed", "1col", sq_query, &s_1, NULL, 0},
        {"moraine_c_proj", "all", m_files_proj, &p_all, NULL, 0},
        {"moraine_c_rows", "all", m_files, &mc, NULL, 0},
        {"sqlite_indexed", "all", sq_query, &s_all, NULL, 0},
        {"floor", "d", f_attach, &fc, NULL, 0},
        {"moraine_c", "d", m_attach, &mc, NULL, 0},
        {"moraine_c_walk", "d", m_attach_walk, &mc, NULL, 0},
        {"sqlite_indexed", "d", sq_query, &s_d, NULL, 0},
    };
    size_t ne = sizeof E / sizeof *E;
    for (size_t i = 0; i < ne; i++) {
        E[i].t = calloc((size_t)R, sizeof(double));
        E[i].rows = E[i].fn(E[i].ctx); /* warm-up */
        if (i && strcmp(E[i].shape, "d") && E[i].rows != E[0].rows) die("interleave: %s/%s answered %" PRIu64 " files, the floor walked %" PRIu64, E[i].peer, E[i].shape, E[i].rows, E[0].rows);
    }
    size_t *order = malloc(ne * sizeof *order);
    if (!order) die("out of memory");
    uint64_t seed = 0x6d6f7261696e65ULL; /* fixed: the same orders every run */
    for (int r = 0; r < R; r++) {
        shuffle(order, ne, &seed);
        for (size_t j = 0; j < ne; j++) {
            ient *x = &E[order[j]];
            double t = now();
            uint64_t n = x->fn(x->ctx);
            x->t[r] = now() - t;
            if (n != x->rows) die("interleave: %s/%s run %d answered %" PRIu64 " rows, the warm-up %" PRIu64, x->peer, x->shape, r, n, x->rows);
        }
    }
    free(order);
    json_t *out = json_object();
    json_object_set_new(out, "rounds", json_integer(R));
    json_object_set_new(out, "files", json_integer((json_int_t)E[0].rows));
    json_t *ents = json_array();
    for (size_t i = 0; i < ne; i++) {
        json_t *o = wl_json(E[i].t, R, median(E[i].t, R));
        json_object_set_new(o, "min", json_real(minv(E[i].t, R)));
        json_object_set_new(o, "peer", json_string(E[i].peer));
        json_object_set_new(o, "shape", json_string(E[i].shape));
        json_array_append_new(ents, o);
    }
    json_object_set_new(out, "entries", ents);
    write_result("interleave", out);
    json_decref(out);
    char path[4400];
    /* the table: per shape, min / median of each peer; ratios of medians */
    snprintf(path, sizeof path, "%s/results/interleave.md", WORK);
    FILE *f = fopen(path, "w");
    if (!f) die("%s: %s", path, strerror(errno));
    fprintf(f, "(a) files of table %" PRId64 " at snapshot %" PRId64 " (%" PRIu64 " files), %d interleaved rounds, each in a fresh order; min / median\n\n", M.T, M.last,
            E[0].rows, R);
    {
        char a[32], b[32];
        fmt_s(a, sizeof a, minv(E[1].t, R));
        fmt_s(b, sizeof b, median(E[1].t, R));
        fprintf(f, "The floor walks the keys and touches each value's first and last byte; the floor with CRC also runs the CRC-32C\n"
                   "moraine verifies over every key and value, prefetching each page as moraine's cursor does (%s / %s, %.2f× the floor):\n"
                   "the least a verifying reader does. The format floor adds the least a reader of moraine's value format\n"
                   "does to hand out what the shape asks (bench.c, walk_cells: every cell walked and summed, the stats group\n"
                   "skipped, filtered or walked; no API, no checks past the CRC): a lower bound for this format.\n\n",
                a, b, median(E[1].t, R) / median(E[0].t, R));
    }
    fprintf(f, "moraine C, projected: moraine_scan_project, the child rows a group a call (moraine_cursor_child_rows); child by child:\n"
               "the same with moraine_cursor_child, a call a child row; row at a time: moraine_scan_open, every column and child row.\n\n");
    fprintf(f, "| shape | floor (raw LMDB) | format floor | moraine C, projected | moraine C, projected, child by child | moraine C, row at a time | SQLite indexed | "
               "C proj ÷ floor | C proj ÷ floor with CRC | C proj ÷ format floor | SQLite idx ÷ C proj | SQLite idx ÷ C child by child |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    static const char *shapes[] = {"pv", "1col", "all"};
    static const char *shape_names[] = {"partition values, no stats", "partition values + min/max of one column",
                                        "partition values + min/max of every column"};
    double fl = median(E[0].t, R);
    for (size_t s = 0; s < 3; s++) {
        const ient *pj = find_entry(E, ne, "moraine_c_groups", shapes[s]), *kc = find_entry(E, ne, "moraine_c_proj", shapes[s]),
                   *rows = find_entry(E, ne, "moraine_c_rows", shapes[s]), *sq = find_entry(E, ne, "sqlite_indexed", shapes[s]),
                   *ff = find_entry(E, ne, "floor_format", shapes[s]);
        char a[32], b[32], c1[32], c2[32], d1[32], d2[32], g1[32], g2[32];
        fmt_s(a, sizeof a, minv(E[0].t, R));
        fmt_s(b, sizeof b, fl);
        fmt_s(c1, sizeof c1, minv(pj->t, R));
        fmt_s(c2, sizeof c2, median(pj->t, R));
        fmt_s(g1, sizeof g1, rows ? minv(rows->t, R) : 0);
        fmt_s(g2, sizeof g2, rows ? median(rows->t, R) : 0);
        fmt_s(d1, sizeof d1, minv(sq->t, R));
        fmt_s(d2, sizeof d2, median(sq->t, R));
        char h1[32], h2[32], k1[32], k2[32];
        fmt_s(h1, sizeof h1, minv(ff->t, R));
        fmt_s(h2, sizeof h2, median(ff->t, R));
        fmt_s(k1, sizeof k1, minv(kc->t, R));
        fmt_s(k2, sizeof k2, median(kc->t, R));
        fprintf(f, "| %s | %s / %s | %s / %s | %s / %s | %s / %s | %s%s%s%s | %s / %s | %.2f× | %.2f× | %.2f× | %.1f× | %.1f× |\n", shape_names[s], a, b, h1,
                h2, c1, c2, k1, k2, rows ? g1 : "—", rows ? " / " : "", rows ? g2 : "", "", d1, d2, median(pj->t, R) / fl,
                median(pj->t, R) / median(E[1].t, R), median(pj->t, R) / median(ff->t, R), median(sq->t, R) / median(pj->t, R),
                median(sq->t, R) / median(kc->t, R));
    }
    {
        /* the format floors by the bytes they verify, beside moraine: each
         * ÷ the floor, of the minimums and of the medians */
        fprintf(f, "\nThe format floor by the bytes it verifies (bench.c, ff_crc): the whole value under one CRC as stored (format 5); a CRC over\n"
                   "the key and row and one over each child group it walks (what a checksum a group would let a reader verify: the stats\n"
                   "group left unread in pv); no CRC at all (the cells alone). Each cell: min / median, then ÷ the floor (min ÷ min, median ÷ median).\n\n");
        fprintf(f, "| shape | floor (raw LMDB) | format floor, value CRC | format floor, group CRCs | format floor, no CRC | moraine C, projected |\n");
        fprintf(f, "|---|---:|---:|---:|---:|---:|\n");
        static const char *const ffp[] = {"floor_format", "floor_format_group_crc", "floor_format_no_crc", "moraine_c_groups"};
        double fmin = minv(E[0].t, R);
        for (size_t s = 0; s < 3; s++) {
            char a[32], b[32];
            fmt_s(a, sizeof a, fmin);
            fmt_s(b, sizeof b, fl);
            fprintf(f, "| %s | %s / %s |", shape_names[s], a, b);
            for (size_t j = 0; j < 4; j++) {
                const ient *x = find_entry(E, ne, ffp[j], shapes[s]);
                if (!x) die("interleave: no %s/%s", ffp[j], shapes[s]);
                double mn = minv(x->t, R), md = median(x->t, R);
                fmt_s(a, sizeof a, mn);
                fmt_s(b, sizeof b, md);
                fprintf(f, " %s / %s (%.2f× / %.2f×) |", a, b, mn / fmin, md / fl);
            }
            fprintf(f, "\n");
        }
    }
    {
        /* (d): the whole catalog at S, as ATTACH reads it */
        const ient *fd = find_entry(E, ne, "floor", "d"), *md = find_entry(E, ne, "moraine_c", "d"), *mw = find_entry(E, ne, "moraine_c_walk", "d"),
                   *sd = find_entry(E, ne, "sqlite_indexed", "d");
        const ient *col[4] = {fd, md, mw, sd};
        char t[4][2][32];
        for (int i = 0; i < 4; i++) {
            fmt_s(t[i][0], sizeof t[i][0], minv(col[i]->t, R));
            fmt_s(t[i][1], sizeof t[i][1], median(col[i]->t, R));
        }
        fprintf(f, "\n(d) the whole catalog at snapshot %" PRId64 " as ATTACH reads it, %d interleaved rounds; min / median (rows read: moraine %" PRIu64
                   ", walking the snapshot rows %" PRIu64 ")\n\n",
                M.last, R, md->rows, mw->rows);
        fprintf(f, "| floor (raw LMDB) | moraine C, snapshot row by key | moraine C, snapshot rows walked | SQLite indexed | SQLite idx ÷ C | SQLite idx ÷ C walked | C ÷ floor |\n");
        fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|\n");
        fprintf(f, "| %s / %s | %s / %s | %s / %s | %s / %s | %.2f× | %.2f× | %.2f× |\n", t[0][0], t[0][1], t[1][0], t[1][1], t[2][0], t[2][1], t[3][0],
                t[3][1], median(sd->t, R) / median(md->t, R), median(sd->t, R) / median(mw->t, R), median(md->t, R) / median(fd->t, R));
    }
    fclose(f);
    fprintf(stderr, "%s", slurp(path));
    sqlite3_close(sdb);
    moraine_close(db);
}

/* With BENCH_LOOP_COLD=MiB set, `bench loop` writes a buffer of that many
 * MiB between runs (untimed), so each run starts with the store's lines out
 * of the CPU's caches, as a read does on a server between other work; the
 * times printed are then the runs' alone. Unset: the runs follow each other
 * with the store in the cache. */
static unsigned char *cold_buf;
static size_t cold_len;

static void cold_init(void)
{
    const char *e = getenv("BENCH_LOOP_COLD");
    if (!e || atoi(e) <= 0) return;
    cold_len = (size_t)atoi(e) << 20;
    if (!(cold_buf = malloc(cold_len))) die("BENCH_LOOP_COLD: out of memory");
}

/* Evicts the caches (cold_init); the time it took is not counted: *t0 and
 * *c0 (wall and CPU clocks of the run about to start) are taken after. */
static void cold_evict(double *t0, struct timespec *c0)
{
    if (!cold_buf) return;
    static unsigned char k;
    k++;
    for (size_t i = 0; i < cold_len; i += 64) cold_buf[i] = (unsigned char)(k + i);
    *t0 = now();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, c0);
}

static double cpu_since(const struct timespec *c0)
{
    struct timespec c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    return (double)(c1.tv_sec - c0->tv_sec) + (double)(c1.tv_nsec - c0->tv_nsec) * 1e-9;
}

/* `bench loop WORK SHAPE N`: one (a) shape of moraine C, N times, for a
 * profiler (perf record, valgrind --tool=callgrind): pv, 1col, all (the
 * projected reads), rows (row at a time), floor (the raw LMDB walk) or
 * format-pv, format-1col, format-all (the format floor, walk_cells;
 * format-groupcrc-pv … with a CRC a child group, format-nocrc-pv … with
 * none: ff_crc).
 * BENCH_LOOP_COLD (above) runs each with the caches emptied first. */
static void run_loop(const char *shape, int n)
{
    cold_init();
    int format = !strncmp(shape, "format-", 7); /* the format floor (walk_cells) of shape pv, 1col or all */
    if (!strcmp(shape, "floor") || format) { /* the raw LMDB walk, no moraine handle (one env per file per process) */
        fctx fc;
        memset(&fc, 0, sizeof fc);
        moraine_options o = {0};
        o.read_only = 1;
        moraine_db *db;
        mcheck(moraine_open(store_dir("moraine"), &o, &db), "open moraine store");
        moraine_relation_info ri, pvi, sti;
        mcheck(moraine_relation(db, "ducklake_data_file", &ri), "rel");
        fc.rel_df = ri.id;
        cfctx cf = {&fc, 0, 0, 0, 0, ri.begin_col, FF_VALUE_CRC, 0};
        mcheck(moraine_relation(db, "ducklake_delete_file", &ri), "rel");
        fc.rel_del = ri.id;
        mcheck(moraine_relation(db, "ducklake_file_partition_value", &pvi), "rel");
        mcheck(moraine_relation(db, "ducklake_file_column_stats", &sti), "rel");
        cf.rel_pv = pvi.id;
        cf.rel_st = sti.id;
        cf.st_col = child_cell(&sti, "column_id");
        const char *fs = shape + 7; /* after "format-": [groupcrc-|nocrc-](pv|1col|all) */
        if (format && !strncmp(fs, "groupcrc-", 9)) cf.crc = FF_GROUP_CRC, fs += 9;
        else if (format && !strncmp(fs, "nocrc-", 6)) cf.crc = FF_NO_CRC, fs += 6;
        if (format && !strcmp(fs, "pv")) cf.stats = 0;
        else if (format && !strcmp(fs, "1col")) cf.stats = 1;
        else if (format && !strcmp(fs, "all")) cf.stats = 2;
        else if (format) die("loop: unknown shape %s (format-pv, format-1col, format-all, each also as format-groupcrc-… or format-nocrc-…)", shape);
        moraine_close(db);
        lmdb_check(mdb_env_create(&fc.env), "env");
        /* the map size the store was written with (its meta page): one that valgrind can map */
        lmdb_check(mdb_env_open(fc.env, store_dir("moraine"), MDB_RDONLY, 0644), "open store");
        mr_bounds_env(fc.env, &fc.bounds);
        MDB_txn *txn;
        lmdb_check(mdb_txn_begin(fc.env, NULL, MDB_RDONLY, &txn), "txn");
        lmdb_check(mdb_dbi_open(txn, NULL, 0, &fc.dbi), "dbi");
        mdb_txn_abort(txn);
        fc.S = M.last;
        double t = 0, cpu = 0;
        uint64_t files = 0;
        for (int i = 0; i < n; i++) {
            struct timespec c0;
            double t0 = now();
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
            cold_evict(&t0, &c0);
            files += format ? f_files_cells(&cf) : f_files(&fc);
            t += now() - t0;
            cpu += cpu_since(&c0);
        }
        if (n < 1) n = 1;
        fprintf(stderr, "loop %s: %d runs, %" PRIu64 " files each, %.3f ms per run (%.3f ms of CPU time)\n", shape, n, files / (uint64_t)n, t * 1e3 / n,
                cpu * 1e3 / n);
        mdb_env_close(fc.env);
        return;
    }
    moraine_options o = {0};
    o.read_only = 1;
    moraine_db *db;
    mcheck(moraine_open(store_dir("moraine"), &o, &db), "open moraine store (run `bench moraine` first)");
    static const int64_t one[] = {1};
    mctx mc = {db, M.last, 0, 0, 0};
    pctx pc = {db, M.last, NULL, 0, 0, 0, 0, 0};
    pc.group_rows = getenv("BENCH_LOOP_GROUPS") && atoi(getenv("BENCH_LOOP_GROUPS")); /* moraine_cursor_child_rows */
    if (!strcmp(shape, "pv")) pc.stats_ids = one;
    else if (!strcmp(shape, "1col")) pc.stats_ids = one, pc.nstats = 1;
    else if (strcmp(shape, "all") && strcmp(shape, "rows")) die("loop: unknown shape %s (pv, 1col, all, rows)", shape);
    uint64_t files = 0;
    double t = 0, cpu = 0;
    for (int i = 0; i < n; i++) {
        struct timespec c0;
        double t0 = now();
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        cold_evict(&t0, &c0);
        files += !strcmp(shape, "rows") ? m_files(&mc) : m_files_proj(&pc);
        t += now() - t0;
        cpu += cpu_since(&c0);
    }
    if (n < 1) n = 1;
    fprintf(stderr, "loop %s: %d runs, %" PRIu64 " files each, %.3f ms per run (%.3f ms of CPU time)\n", shape, n, files / (uint64_t)n,
            t * 1e3 / n, cpu * 1e3 / n);
    moraine_close(db);
}

/* ---- `bench commit WORK [ROUNDS]`: the two commit paths of (e), 10k files each ----
 *
 * verb: moraine_tx_begin + moraine_tx_add_data_files(10k files, 3 partition
 * values and BENCH_STATS stats each) + moraine_tx_commit, as (e) e_10k.
 * staged: moraine_txn_begin + moraine_txn_insert of the snapshot row, its
 * change list and 10k ducklake_data_file rows with the same children (3
 * partition values, BENCH_STATS stats) + moraine_txn_commit: the rows the
 * verb commit writes, given directly. Inputs are built before the clock
 * starts; each round times one commit of each path (no fsync) on a copy of
 * the imported store. Prints every round and the medians, in files/s. For
 * before/after comparisons, run two builds of this program alternately
 * (bench/commit_ab.sh). */


static int ci(const moraine_relation_info *r, const char *n)
{
    int i = moraine_column_index(r, n);
    if (i < 0) die("commit: %s has no column %s", r->name, n);
    return i;
}

/* one staged commit of @nfiles files at snapshot last+1; *secs: its time (begin to commit) */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void staged_commit(moraine_db *db, const moraine_data_file *fs, int nfiles, double *secs, double *cpu)
{
    moraine_relation_info sn, ch, df, pv, st;
    mcheck(moraine_relation(db, "ducklake_snapshot", &sn), "rel");
    mcheck(moraine_relation(db, "ducklake_snapshot_changes", &ch), "rel");
    mcheck(moraine_relation(db, "ducklake_data_file", &df), "rel");
    mcheck(moraine_relation(db, "ducklake_file_partition_value", &pv), "rel");
    mcheck(moraine_relation(db, "ducklake_file_column_stats", &st), "rel");
    /* the last snapshot's row: its counters */
    moraine_read *rd;
    mcheck(moraine_read_begin(db, &rd), "read_begin");
    int64_t last;
    if (moraine_read_last_snapshot(rd, &last) != 1) die("commit: no snapshot");
    moraine_cursor *c;
    moraine_row row;
    mcheck(moraine_scan_open(rd, "ducklake_snapshot", MORAINE_ANY_SCOPE, last, &c), "scan");
    int64_t schema_version = -1, next_cat = -1, next_file = -1;
    int rc;
    while ((rc = moraine_cursor_next(c, &row)) == 1)
        if (row.vals[ci(&sn, "snapshot_id")].i == last) {
            schema_version = row.vals[ci(&sn, "schema_version")].i;
            next_cat = row.vals[ci(&sn, "next_catalog_id")].i;
            next_file = row.vals[ci(&sn, "next_file_id")].i;
        }
    mcheck(rc, "cursor");
    moraine_cursor_close(c);
    moraine_read_end(rd);
    if (next_file < 0) die("commit: no row for snapshot %" PRId64, last);
    int64_t S = last + 1;
    /* inputs: every row built before the clock starts */
    moraine_value *snap = calloc(sn.ncols, sizeof *snap), *chg = calloc(ch.ncols, sizeof *chg);
    size_t npk = (size_t)M.pkeys, nstat = (size_t)M.stats;
    moraine_value *dfr = calloc((size_t)nfiles * df.ncols, sizeof *dfr);
    moraine_value *pvr = calloc((size_t)nfiles * npk * pv.ncols, sizeof *pvr);
    moraine_value *str = calloc((size_t)nfiles * nstat * st.ncols, sizeof *str);
    if (!snap || !chg || !dfr || !pvr || !str) die("out of memory");
    static const char tm[] = "2026-12-01 00:00:00.000000+00";
    snap[ci(&sn, "snapshot_id")] = (moraine_value){.type = MORAINE_INT, .i = S};
    snap[ci(&sn, "snapshot_time")] = (moraine_value){.type = MORAINE_STR, .s = tm, .len = strlen(tm)};
    snap[ci(&sn, "schema_version")] = (moraine_value){.type = MORAINE_INT, .i = schema_version};
    snap[ci(&sn, "next_catalog_id")] = (moraine_value){.type = MORAINE_INT, .i = next_cat};
    snap[ci(&sn, "next_file_id")] = (moraine_value){.type = MORAINE_INT, .i = next_file + nfiles};
    char changes[64];
    snprintf(changes, sizeof changes, "inserted_into_table:%" PRId64, M.T);
    chg[ci(&ch, "snapshot_id")] = (moraine_value){.type = MORAINE_INT, .i = S};
    chg[ci(&ch, "changes_made")] = (moraine_value){.type = MORAINE_STR, .s = changes, .len = strlen(changes)};
    static const char parquet[] = "parquet";
    /* column positions resolved once (the bench's own cost stays out of the profile) */
    const int d_id = ci(&df, "data_file_id"), d_tab = ci(&df, "table_id"), d_begin = ci(&df, "begin_snapshot"), d_path = ci(&df, "path"),
              d_rel = ci(&df, "path_is_relative"), d_fmt = ci(&df, "file_format"), d_rc = ci(&df, "record_count"),
              d_size = ci(&df, "file_size_bytes"), d_foot = ci(&df, "footer_size"), d_row = ci(&df, "row_id_start");
    const int p_id = ci(&pv, "data_file_id"), p_tab = ci(&pv, "table_id"), p_k = ci(&pv, "partition_key_index"), p_v = ci(&pv, "partition_value");
    const int s_id = ci(&st, "data_file_id"), s_tab = ci(&st, "table_id"), s_col = ci(&st, "column_id"), s_sz = ci(&st, "column_size_bytes"),
              s_vc = ci(&st, "value_count"), s_nc = ci(&st, "null_count"), s_min = ci(&st, "min_value"), s_max = ci(&st, "max_value");
#define SETI(arr, col, v) (arr)[col] = (moraine_value){.type = MORAINE_INT, .i = (v)}
#define SETS(arr, col, str_) (arr)[col] = (moraine_value){.type = MORAINE_STR, .s = (str_), .len = strlen(str_)}
    for (int i = 0; i < nfiles; i++) {
        const moraine_data_file *f = &fs[i];
        int64_t id = next_file + i;
        moraine_value *d = dfr + (size_t)i * df.ncols;
        SETI(d, d_id, id);
        SETI(d, d_tab, M.T);
        SETI(d, d_begin, S);
        SETS(d, d_path, f->path);
        d[d_rel] = (moraine_value){.type = MORAINE_BOOL, .i = 1};
        SETS(d, d_fmt, parquet);
        SETI(d, d_rc, f->record_count);
        SETI(d, d_size, f->file_size_bytes);
        SETI(d, d_foot, f->footer_size);
        SETI(d, d_row, (int64_t)i * 1000000);
        for (size_t k = 0; k < npk; k++) {
            moraine_value *p = pvr + ((size_t)i * npk + k) * pv.ncols;
            SETI(p, p_id, id);
            SETI(p, p_tab, M.T);
            SETI(p, p_k, (int64_t)k);
            SETS(p, p_v, f->partition_values[k]);
        }
        for (size_t k = 0; k < nstat; k++) {
            const moraine_column_stats *s = &f->stats[k];
            moraine_value *p = str + ((size_t)i * nstat + k) * st.ncols;
            SETI(p, s_id, id);
            SETI(p, s_tab, M.T);
            SETI(p, s_col, (int64_t)k + 1);
            SETI(p, s_sz, s->column_size_bytes);
            SETI(p, s_vc, s->value_count);
            SETI(p, s_nc, s->null_count);
            SETS(p, s_min, s->min_value);
            SETS(p, s_max, s->max_value);
        }
    }
#undef SETI
#undef SETS
    double t = now(), c0 = cpu_now();
    moraine_txn *tx;
    mcheck(moraine_txn_begin(db, S, &tx), "txn_begin");
    mcheck(moraine_txn_insert(tx, "ducklake_snapshot", snap, sn.ncols, -1), "insert snapshot");
    mcheck(moraine_txn_insert(tx, "ducklake_snapshot_changes", chg, ch.ncols, -1), "insert changes");
    for (int i = 0; i < nfiles; i++) {
        mcheck(moraine_txn_insert(tx, "ducklake_data_file", dfr + (size_t)i * df.ncols, df.ncols, -1), "insert data file");
        for (size_t k = 0; k < npk; k++)
            mcheck(moraine_txn_insert(tx, "ducklake_file_partition_value", pvr + ((size_t)i * npk + k) * pv.ncols, pv.ncols, -1), "insert partition value");
        for (size_t k = 0; k < nstat; k++)
            mcheck(moraine_txn_insert(tx, "ducklake_file_column_stats", str + ((size_t)i * nstat + k) * st.ncols, st.ncols, -1), "insert stats");
    }
    mcheck(moraine_txn_commit(tx), "txn_commit");
    *secs = now() - t;
    *cpu = cpu_now() - c0;
    free(snap);
    free(chg);
    free(dfr);
    free(pvr);
    free(str);
}

static void free_files(moraine_data_file *fs, int n)
{
    for (int i = 0; i < n; i++) {
        free((char *)fs[i].path);
        for (size_t k = 0; k < fs[i].npartition_values; k++) free((char *)fs[i].partition_values[k]);
        free((void *)fs[i].partition_values);
        for (size_t k = 0; k < fs[i].nstats; k++) {
            free((char *)fs[i].stats[k].min_value);
            free((char *)fs[i].stats[k].max_value);
        }
        free((void *)fs[i].stats);
    }
    free(fs);
}

/* WORK/stores/moraine, imported from the catalog unless it is there already */
static void need_moraine_store(void)
{
    struct stat sb;
    if (!stat(store_dir("moraine"), &sb)) return;
    fprintf(stderr, "commit: importing the catalog into %s\n", store_dir("moraine"));
    m_import_one(0);
    compact_import();
}

static void run_commit(int rounds, int nfiles, const char *only)
{
    if (rounds < 1) rounds = 1;
    char dir[4300], cmd[13000];
    snprintf(dir, sizeof dir, "%s/stores/moraine-commit-%ld", WORK, (long)getpid());
    need_moraine_store();
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", dir, store_dir("moraine"), dir);
    if (system(cmd)) die("cannot copy the store");
    moraine_options o = {0};
    o.no_sync = 1;
    moraine_db *db;
    mcheck(moraine_open(dir, &o, &db), "open");
    double *rv = calloc((size_t)rounds, sizeof *rv), *rs = calloc((size_t)rounds, sizeof *rs);
    double *cv = calloc((size_t)rounds, sizeof *cv), *cs = calloc((size_t)rounds, sizeof *cs); /* per CPU second */
    int do_verb = !only || !strcmp(only, "verb"), do_staged = !only || !strcmp(only, "staged");
    static int64_t seq = 1000;
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up */
        moraine_data_file *fs = make_files(nfiles, ++seq);
        if (do_verb) {
            double t = now(), c0 = cpu_now();
            moraine_tx *tx;
            mcheck(moraine_tx_begin(db, &tx), "tx_begin");
            mcheck(moraine_tx_add_data_files(tx, NULL, M.bench_table, fs, (size_t)nfiles, NULL), "add_data_files");
            int64_t snap;
            mcheck(moraine_tx_commit(tx, &snap), "tx_commit");
            t = now() - t;
            double c = cpu_now() - c0;
            if (r >= 0) rv[r] = nfiles / t, cv[r] = nfiles / c;
        }
        free_files(fs, nfiles);
        fs = make_files(nfiles, ++seq);
        if (do_staged) {
            double t, c;
            staged_commit(db, fs, nfiles, &t, &c);
            if (r >= 0) rs[r] = nfiles / t, cs[r] = nfiles / c;
        }
        free_files(fs, nfiles);
        if (r >= 0)
            fprintf(stderr, "commit round %d: verb %.0f files/s (%.0f per CPU s), staged %.0f files/s (%.0f per CPU s)\n", r, do_verb ? rv[r] : 0,
                    do_verb ? cv[r] : 0, do_staged ? rs[r] : 0, do_staged ? cs[r] : 0);
    }
    printf("commit %d files x %d rounds: verb median %.0f files/s (%.0f per CPU s), staged median %.0f files/s (%.0f per CPU s)\n", nfiles, rounds,
           do_verb ? median(rv, rounds) : 0, do_verb ? median(cv, rounds) : 0, do_staged ? median(rs, rounds) : 0, do_staged ? median(cs, rounds) : 0);
    free(rv);
    free(rs);
    free(cv);
    free(cs);
    moraine_close(db);
    rm_rf(dir);
}

/* ---- `bench commit1 WORK [ROUNDS [N]]`: one-file commits, moraine against SQLite ----
 *
 * (e)'s one-file commit by each in-process peer, no fsync, on copies of the
 * imported stores: moraine's verb path (moraine_tx_begin +
 * moraine_tx_add_data_files of one file with 3 partition values and 8 column
 * stats + moraine_tx_commit), and the statements DuckLake's commit of a
 * one-file INSERT issues in SQLite (sq_commit_batch), on DuckLake's schema as
 * created (rollback journal) and with the indexes and WAL of a tuned
 * deployment. Each round times N commits (default 200) of each peer, the
 * peers in a rotating order (so each sees the same load); a warm-up round
 * first. Prints every round, then each peer's median and best commits/s and
 * moraine's ratio to each SQLite (of the medians; and the median of the
 * per-round ratios). Every peer's catalog grows by the same N snapshots a round.
 * Imports the SQLite stores (WORK/stores/sqlite.db, sqlite-indexed.db) when
 * they are missing. */
static void sq_need_store(int indexed)
{
    sq_indexed = indexed;
    struct stat sb;
    if (!stat(sq_path(), &sb)) return;
    fprintf(stderr, "commit1: importing the catalog into %s\n", sq_path());
    sq_import_one(0);
}

static sqlite3 *sq_copy_open(int indexed, char *path, size_t pathlen)
{
    sq_need_store(indexed);
    char from[4300], cmd[9000];
    snprintf(from, sizeof from, "%s", sq_path());
    snprintf(path, pathlen, "%s/stores/sqlite%s-commit1-%ld.db", WORK, indexed ? "-indexed" : "", (long)getpid());
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, path);
    if (system(cmd)) die("cannot copy the store");
    sqlite3 *db;
    sqcheck(NULL, sqlite3_open(path, &db), "open");
    sq_indexed = indexed;
    sq_pragmas(db, 0);
    return db;
}

static void sq_copy_remove(const char *path)
{
    char p[4400];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-journal", path);
    unlink(p);
}

static void run_commit1(int rounds, int n)
{
    if (rounds < 1) rounds = 1;
    if (n < 1) n = 1;
    char dir[4300], cmd[13000], plain_path[4300], idx_path[4300];
    need_moraine_store();
    snprintf(dir, sizeof dir, "%s/stores/moraine-commit1-%ld", WORK, (long)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", dir, store_dir("moraine"), dir);
    if (system(cmd)) die("cannot copy the store");
    moraine_options o = {0};
    o.no_sync = 1;
    moraine_db *db;
    mcheck(moraine_open(dir, &o, &db), "open");
    sqlite3 *plain = sq_copy_open(0, plain_path, sizeof plain_path), *idx = sq_copy_open(1, idx_path, sizeof idx_path);
    enum { NPEER = 3 };
    static const char *names[NPEER] = {"moraine", "sqlite", "sqlite_indexed"};
    commit_ctx mc = {db, 1, n, make_files(n * (rounds + 1), 1), 0};
    sqcommit sp = {plain, 1, n, 1000000, 1 << 16, malloc(1 << 16)}, si = {idx, 1, n, 2000000, 1 << 16, malloc(1 << 16)};
    if (!sp.sql || !si.sql) die("out of memory");
    double *rate[NPEER], *cpu[NPEER];
    for (int p = 0; p < NPEER; p++) {
        rate[p] = calloc((size_t)rounds, sizeof(double));
        cpu[p] = calloc((size_t)rounds, sizeof(double));
    }
    double *ratio_p = calloc((size_t)rounds, sizeof(double)), *ratio_i = calloc((size_t)rounds, sizeof(double));
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up */
        for (int k = 0; k < NPEER; k++) {
            int p = (k + r + 1) % NPEER;
            double t = now(), c0 = cpu_now();
            if (p == 0) {
                commit_ctx c = mc;
                c.files = mc.files + (size_t)(r + 1) * (size_t)n;
                m_commit_batch(&c, 0);
            } else {
                sq_commit_batch(p == 1 ? (void *)&sp : (void *)&si, 0);
            }
            t = now() - t;
            double c = cpu_now() - c0;
            if (r >= 0) rate[p][r] = n / t, cpu[p][r] = n / c;
        }
        if (r < 0) continue;
        ratio_p[r] = rate[0][r] / rate[1][r], ratio_i[r] = rate[0][r] / rate[2][r];
        fprintf(stderr, "commit1 round %d: moraine %.0f/s (%.0f per CPU s), sqlite %.0f/s (%.0f), sqlite_indexed %.0f/s (%.0f); moraine/sqlite %.2f, moraine/indexed %.2f\n",
                r, rate[0][r], cpu[0][r], rate[1][r], cpu[1][r], rate[2][r], cpu[2][r], ratio_p[r], ratio_i[r]);
    }
    double med[NPEER];
    for (int p = 0; p < NPEER; p++) {
        med[p] = median(rate[p], rounds);
        double best = rate[p][0];
        for (int r = 1; r < rounds; r++)
            if (rate[p][r] > best) best = rate[p][r];
        printf("commit1 %s: %d one-file commits x %d rounds: median %.0f/s, best %.0f/s (median %.0f per CPU s)\n", names[p], n, rounds, med[p], best,
               median(cpu[p], rounds));
    }
    printf("commit1 ratio: moraine/sqlite %.2f, moraine/sqlite_indexed %.2f (of the medians); per round, median %.2f and %.2f, min %.2f and %.2f\n",
           med[0] / med[1], med[0] / med[2], median(ratio_p, rounds), median(ratio_i, rounds), minv(ratio_p, rounds), minv(ratio_i, rounds));
    /* results/commit1.json: bench/report.mjs takes the one-file commit verdict from this interleaved run */
    json_t *out = json_object();
    json_object_set_new(out, "rounds", json_integer(rounds));
    json_object_set_new(out, "commits", json_integer(n));
    for (int p = 0; p < NPEER; p++) {
        json_t *o = json_object();
        json_object_set_new(o, "median", json_real(med[p]));
        json_object_set_new(o, "min", json_real(minv(rate[p], rounds)));
        json_object_set_new(o, "median_per_cpu_s", json_real(median(cpu[p], rounds)));
        json_object_set_new(out, names[p], o);
    }
    json_object_set_new(out, "round_ratio_sqlite_median", json_real(median(ratio_p, rounds)));
    json_object_set_new(out, "round_ratio_sqlite_indexed_median", json_real(median(ratio_i, rounds)));
    write_result("commit1", out);
    json_decref(out);
    for (int p = 0; p < NPEER; p++) free(rate[p]), free(cpu[p]);
    free(ratio_p);
    free(ratio_i);
    free_files(mc.files, n * (rounds + 1));
    free(sp.sql);
    free(si.sql);
    moraine_close(db);
    sqlite3_close(plain);
    sqlite3_close(idx);
    rm_rf(dir);
    sq_copy_remove(plain_path);
    sq_copy_remove(idx_path);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench moraine|floor|sqlite|sqlite-load|interleave|loop|commit WORK [plain|indexed]\n");
        return 2;
    }
    snprintf(WORK, sizeof WORK, "%s", argv[2]);
    const char *r = getenv("BENCH_RUNS");
    if (r && atoi(r) > 0) RUNS = atoi(r);
    if (RUNS < 5) RUNS = 5;
    r = getenv("BENCH_IMPORT_RUNS");
    IMPORT_RUNS = r && atoi(r) > 0 ? atoi(r) : RUNS;
    load_meta();
    char p[4200];
    snprintf(p, sizeof p, "%s/stores", WORK);
    mkdir(p, 0755);
    RESULTS = json_object();
    json_object_set_new(RESULTS, "workloads", json_object());
    json_object_set_new(RESULTS, "runs", json_integer(RUNS));
    json_object_set_new(RESULTS, "import_runs", json_integer(IMPORT_RUNS));
    if (!strcmp(argv[1], "moraine")) {
        peer_name = "moraine_c";
        fprintf(stderr, "bench: moraine through C\n");
        run_moraine();
    } else if (!strcmp(argv[1], "floor")) {
        peer_name = "floor";
        fprintf(stderr, "bench: raw LMDB floor\n");
        run_floor();
    } else if (!strcmp(argv[1], "loop")) {
        peer_name = "loop";
        run_loop(argc > 3 ? argv[3] : "pv", argc > 4 ? atoi(argv[4]) : 100);
        return 0;
    } else if (!strcmp(argv[1], "commit1")) {
        peer_name = "commit1";
        run_commit1(argc > 3 ? atoi(argv[3]) : 11, argc > 4 ? atoi(argv[4]) : 200);
        return 0;
    } else if (!strcmp(argv[1], "commit")) {
        peer_name = "commit";
        run_commit(argc > 3 ? atoi(argv[3]) : 5, argc > 4 ? atoi(argv[4]) : 10000, argc > 5 ? argv[5] : NULL);
        return 0;
    } else if (!strcmp(argv[1], "interleave")) {
        peer_name = "interleave";
        run_interleave();
        return 0;
    } else if (!strcmp(argv[1], "sqlite-load")) {
        sq_indexed = argc > 3 && !strcmp(argv[3], "indexed");
        peer_name = "sqlite-load";
        double t = sq_import_one(0);
        fprintf(stderr, "bench sqlite-load: %s in %.2f s, %.0f rows/s\n", sq_path(), t, (double)M.total_rows / t);
        return 0;
    } else if (!strcmp(argv[1], "sqlite")) {
        sq_indexed = argc > 3 && !strcmp(argv[3], "indexed");
        peer_name = sq_indexed ? "sqlite_indexed" : "sqlite";
        fprintf(stderr, "bench: SQLite %s (%s)\n", sq_indexed ? "with table_id-first indexes, WAL" : "with DuckLake's schema as created", sqlite3_libversion());
        run_sqlite();
    } else {
        fprintf(stderr, "bench: unknown peer %s\n", argv[1]);
        return 2;
    }
    json_object_set_new(RESULTS, "peer", json_string(peer_name));
    save_results();
    return 0;
}
