/*
 * sqlite_import.c — moraine_import_sqlite: a DuckLake catalog kept in SQLite
 * imported into an empty catalog through the NDJSON import. Every ducklake_*
 * table is read with the sqlite3 C API, in one read transaction, and written
 * as `<table>.ndjson` (DuckDB's JSON-lines form, docs/import-export.md) in a
 * temporary directory; then moraine_import_ndjson's reading, checks and
 * replay (ndjson.c, mr_import_ndjson_given) take that directory, with the
 * tables in the order and with the columns and row positions the staged
 * import (moraine.sync) gives them; the directory is removed in every case.
 *
 * Values are read as moraine.sync_source reads a SQLite file (LuaSQL): an
 * INTEGER is its exact int64 (0 and 1 become false and true in the columns
 * the caller names as booleans), NULL is null, TEXT and BLOB are the string
 * of their bytes, a REAL is a double (an integral one an integer in a BIGINT
 * column moraine knows, or in every column with MORAINE_SQLITE_INT_REALS, as
 * the Lua binding stores a number there); a row's position (ord) is its rowid
 * - 1. Memory: one row at a time, a 1 MiB write buffer, and per table the
 * runs of rowids that do not follow each other.
 *
 * What JSON cannot carry (a string that is not valid UTF-8, an infinite
 * REAL), a file whose tables or columns are not the ones given, and any
 * error SQLite reports make it return 1 with nothing written: the caller
 * imports through the staged path instead, which reads and refuses the
 * file with its own messages.
 */
#include "ndjson_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOT_TAKEN 1
#define FLUSH_AT (1u << 20)

typedef struct {
    const char *name;
    int64_t *run_row, *run_ord;
    size_t nruns, capruns;
    int written; /* its file exists in tmpdir */
} src_table;

typedef struct {
    const char *tmpdir;
    src_table *st;
    size_t n;
    sqlite3 *sq;
    const moraine_sqlite_table *tabs;
    unsigned flags;
} job;

static int write_all(int fd, const uint8_t *p, size_t n, const char *path)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return mr_err(MORAINE_EIO, "%s: write failed: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* mr_buf_put and mr_buf_byte, inline: the row loop calls them for every value */
static inline int bput(mr_buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap && mr_buf_reserve(b, n)) return -1;
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

static inline int bbyte(mr_buf *b, uint8_t c)
{
    if (b->len + 1 > b->cap && mr_buf_reserve(b, 1)) return -1;
    b->p[b->len++] = c;
    return 0;
}

/* A double as JSON, as moraine_export_ndjson writes one (json.c); NOT_TAKEN
 * when it is not finite (JSON has no form for it). */
static int put_real(mr_buf *b, double d)
{
    char buf[40];
    if (!isfinite(d)) return NOT_TAKEN;
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    int rc = mr_buf_put(b, buf, strlen(buf));
    if (!rc && !strpbrk(buf, ".eEn")) rc = mr_buf_put(b, ".0", 2);
    return rc ? mr_err(MORAINE_ENOMEM, "out of memory") : 0;
}

/* An int64 in decimal (no snprintf: this is most of what the import writes). */
static int put_int(mr_buf *b, int64_t v)
{
    if (mr_buf_reserve(b, 21)) return mr_err(MORAINE_ENOMEM, "out of memory");
    char tmp[21];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    uint8_t *o = b->p + b->len;
    if (v < 0) *o++ = '-';
    while (n) *o++ = (uint8_t)tmp[--n];
    b->len = (size_t)(o - b->p);
    return 0;
}

/* Another row whose ord is @ord (its rowid - 1) at position @row: a new run
 * when it does not follow the previous row's. */
static int note_ord(src_table *t, uint64_t row, int64_t ord)
{
    if (t->nruns) {
        size_t k = t->nruns - 1;
        if ((uint64_t)t->run_ord[k] + (row - (uint64_t)t->run_row[k]) == (uint64_t)ord) return 0;
    } else if (ord == (int64_t)row) {
        return 0;
    }
    if (t->nruns == t->capruns) {
        size_t cap = t->capruns ? t->capruns * 2 : 16;
        int64_t *a = realloc(t->run_row, cap * sizeof *a);
        if (a) t->run_row = a;
        int64_t *o = a ? realloc(t->run_ord, cap * sizeof *o) : NULL;
        if (o) t->run_ord = o;
        if (!a || !o) return mr_err(MORAINE_ENOMEM, "out of memory");
        t->capruns = cap;
    }
    t->run_row[t->nruns] = (int64_t)row;
    t->run_ord[t->nruns] = ord;
    t->nruns++;
    return 0;
}

/* Whether the double @d is an exact int64 (the Lua binding's test). */
static int integral(double d, int64_t *out)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return 0;
    int64_t i = (int64_t)d;
    if ((double)i != d) return 0;
    *out = i;
    return 1;
}

/* The @i-th table (mr_nd_writer): SELECT of its columns and rowid, in rowid
 * order, written to @path, each row handed to the import (mr_nd_file_row)
 * as it is written. */
static int write_table(void *wud, tables *ts, table *nt, size_t i, const char *path)
{
    job *j = wud;
    sqlite3 *sq = j->sq;
    src_table *t = &j->st[i];
    const moraine_sqlite_table *g = &j->tabs[i];
    const unsigned char *bools = g->bools;
    unsigned flags = j->flags;
    mr_buf sql = {0}, line = {0};
    int rc = 0, fd = -1;
    sqlite3_stmt *st = NULL;
    unsigned char *big = NULL;
    mr_buf *keys = NULL;
    moraine_value vals[256];
    uint64_t fileoff = 0;
    if (g->ncols > 256) return NOT_TAKEN;
    if (!(big = calloc(g->ncols ? g->ncols : 1, 1)) || !(keys = calloc(g->ncols ? g->ncols : 1, sizeof *keys))) {
        rc = mr_err(MORAINE_ENOMEM, "out of memory");
        goto out;
    }
    const mr_known_table *kt = mr_known(g->name);
    rc = mr_buf_put(&sql, "SELECT ", 7);
    for (size_t c = 0; !rc && c < g->ncols; c++) {
        if (kt && mr_known_coltype(kt, g->cols[c]) == MORAINE_COL_BIGINT) big[c] = 1;
        /* "col": once per table */
        int u = mr_json_string(&keys[c], g->cols[c], strlen(g->cols[c]));
        if (u == 1) rc = NOT_TAKEN;
        else if (u || mr_buf_byte(&keys[c], ':')) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        if (!rc) rc = mr_buf_byte(&sql, '"');
        for (const char *p = g->cols[c]; !rc && *p; p++)
            rc = (*p == '"' ? mr_buf_put(&sql, "\"\"", 2) : mr_buf_byte(&sql, (uint8_t)*p));
        if (!rc) rc = mr_buf_put(&sql, "\", ", 3);
    }
    if (rc) goto out;
    rc = mr_buf_put(&sql, "rowid FROM \"", 12);
    for (const char *p = g->name; !rc && *p; p++) rc = (*p == '"' ? mr_buf_put(&sql, "\"\"", 2) : mr_buf_byte(&sql, (uint8_t)*p));
    if (!rc) rc = mr_buf_put(&sql, "\" ORDER BY rowid", 17); /* with its NUL */
    if (rc) {
        if (rc != NOT_TAKEN) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        goto out;
    }
    if (sqlite3_prepare_v2(sq, (const char *)sql.p, -1, &st, NULL) != SQLITE_OK) {
        rc = NOT_TAKEN;
        goto out;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = mr_err(MORAINE_EIO, "%s: cannot create: %s", path, strerror(errno));
        goto out;
    }
    t->written = 1;
    uint64_t row = 0;
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        size_t start = line.len;
        if (bbyte(&line, '{')) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        for (size_t c = 0; !rc && c < g->ncols; c++) {
            int ci = (int)c;
            moraine_value *v = &vals[c];
            memset(v, 0, sizeof *v);
            if ((c && bbyte(&line, ',')) || bput(&line, keys[c].p, keys[c].len)) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            switch (sqlite3_column_type(st, ci)) {
            case SQLITE_NULL:
                v->type = MORAINE_NULL;
                if (bput(&line, "null", 4)) rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            case SQLITE_INTEGER: {
                int64_t x = sqlite3_column_int64(st, ci);
                v->i = x;
                if (bools && bools[c] && (x == 0 || x == 1)) {
                    v->type = MORAINE_BOOL;
                    if (x ? bput(&line, "true", 4) : bput(&line, "false", 5)) rc = mr_err(MORAINE_ENOMEM, "out of memory");
                } else {
                    v->type = MORAINE_INT;
                    rc = put_int(&line, x);
                }
                break;
            }
            case SQLITE_FLOAT: {
                double d = sqlite3_column_double(st, ci);
                int64_t x;
                if (((flags & MORAINE_SQLITE_INT_REALS) || big[c]) && integral(d, &x)) {
                    v->type = MORAINE_INT;
                    v->i = x;
                    rc = put_int(&line, x);
                } else {
                    v->type = MORAINE_REAL;
                    v->d = d;
                    rc = put_real(&line, d);
                }
                break;
            }
            default: { /* TEXT, BLOB: the string of their bytes */
                const char *p = sqlite3_column_type(st, ci) == SQLITE_TEXT ? (const char *)sqlite3_column_text(st, ci)
                                                                           : (const char *)sqlite3_column_blob(st, ci);
                size_t n = (size_t)sqlite3_column_bytes(st, ci);
                v->type = MORAINE_STR;
                v->s = p ? p : "";
                v->len = p ? n : 0;
                int u = mr_json_string(&line, v->s, v->len);
                if (u == 1) rc = NOT_TAKEN;
                else if (u) rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            }
        }
        if (rc) break;
        if (bput(&line, "}\n", 2)) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        int64_t rowid = sqlite3_column_int64(st, (int)g->ncols);
        if (!rc) rc = rowid == INT64_MIN ? NOT_TAKEN : note_ord(t, row, rowid - 1);
        /* checked and kept as moraine_import_ndjson keeps a row it read */
        if (!rc) rc = mr_nd_file_row(ts, nt, vals, path, (size_t)row + 1, fileoff + start);
        row++;
        if (!rc && line.len >= FLUSH_AT) {
            rc = write_all(fd, line.p, line.len, path);
            fileoff += line.len;
            line.len = 0;
        }
    }
    if (!rc && s != SQLITE_DONE) rc = NOT_TAKEN; /* SQLite's error: the staged path reports it */
    if (!rc && row == 0 && bbyte(&line, '\n')) rc = mr_err(MORAINE_ENOMEM, "out of memory"); /* an empty table, as DuckDB writes it */
    if (!rc && line.len) rc = write_all(fd, line.p, line.len, path);
    if (fd >= 0 && close(fd) != 0 && !rc) rc = mr_err(MORAINE_EIO, "%s: write failed: %s", path, strerror(errno));
    nt->run_row = t->run_row;
    nt->run_ord = t->run_ord;
    nt->nruns = t->nruns;
out:
    if (st) sqlite3_finalize(st);
    for (size_t c = 0; keys && c < g->ncols; c++) mr_buf_free(&keys[c]);
    free(keys);
    free(big);
    mr_buf_free(&sql);
    mr_buf_free(&line);
    return rc;
}

/* Whether the file's ducklake_* tables (in name order) and their columns
 * (PRAGMA table_info order) are @tables: 0, NOT_TAKEN, ENOMEM. */
static int same_tables(sqlite3 *sq, const moraine_sqlite_table *tabs, size_t n)
{
    sqlite3_stmt *st = NULL, *ti = NULL;
    size_t k = 0;
    int rc = 0;
    if (sqlite3_prepare_v2(sq, "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 9) = 'ducklake_' "
                               "ORDER BY name", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sq, "SELECT name FROM pragma_table_info(?) ORDER BY cid", -1, &ti, NULL) != SQLITE_OK)
        rc = NOT_TAKEN;
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (k == n || !name || strcmp(name, tabs[k].name) != 0) {
            rc = NOT_TAKEN;
            break;
        }
        sqlite3_reset(ti);
        sqlite3_bind_text(ti, 1, name, -1, SQLITE_TRANSIENT);
        size_t c = 0;
        int s2;
        while ((s2 = sqlite3_step(ti)) == SQLITE_ROW) {
            const char *col = (const char *)sqlite3_column_text(ti, 0);
            if (c == tabs[k].ncols || !col || strcmp(col, tabs[k].cols[c]) != 0) break;
            c++;
        }
        if (s2 != SQLITE_DONE || c != tabs[k].ncols) rc = NOT_TAKEN;
        k++;
    }
    if (!rc && (s != SQLITE_DONE || k != n)) rc = NOT_TAKEN;
    sqlite3_finalize(st);
    sqlite3_finalize(ti);
    return rc;
}

/* Makes the entry @path just created durable: fsync of its parent directory. */
static int sync_parent(const char *path)
{
    char parent[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if (slash == path) snprintf(parent, sizeof parent, "/");
    else snprintf(parent, sizeof parent, "%.*s", (int)(slash - path), path);
    if (mr_fsync_path(parent, 1) != 0) return mr_err(MORAINE_EIO, "%s: cannot sync the directory: %s", parent, strerror(errno));
    return 0;
}

/* Removes what the import wrote in tmpdir, and tmpdir. */
static void remove_tmp(job *j)
{
    char path[4096];
    for (size_t i = 0; i < j->n; i++) {
        if (!j->st[i].written) continue;
        snprintf(path, sizeof path, "%s/%s.ndjson", j->tmpdir, j->st[i].name);
        unlink(path);
    }
    rmdir(j->tmpdir);
}

int moraine_import_sqlite(moraine_db *db, const char *path, const char *tmpdir, const moraine_sqlite_table *tabs, size_t n,
                          unsigned flags, moraine_progress_fn progress, void *ud, uint64_t *commits)
{
    if (commits) *commits = 0;
    if (!db || !path || !tmpdir || (n && !tabs)) return mr_err(MORAINE_EINVAL, "moraine_import_sqlite: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (!tabs[i].name || (tabs[i].ncols && !tabs[i].cols) || strchr(tabs[i].name, '/'))
            return mr_err(MORAINE_EINVAL, "moraine_import_sqlite: table %zu is incomplete", i);
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    int rc = mr_catalog_empty(db);
    if (rc) return rc;
    job j = {tmpdir, calloc(n ? n : 1, sizeof *j.st), n, NULL, tabs, flags};
    mr_nd_given *g = calloc(n ? n : 1, sizeof *g);
    if (!j.st || !g) {
        free(j.st);
        free(g);
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        j.st[i].name = tabs[i].name;
        g[i] = (mr_nd_given){tabs[i].name, tabs[i].ncols, tabs[i].cols};
    }
    int made = 0;
    if (sqlite3_open_v2(path, &j.sq, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) rc = NOT_TAKEN;
    /* one read transaction: every table as of one state of the file */
    if (!rc && sqlite3_exec(j.sq, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) rc = NOT_TAKEN;
    if (!rc) rc = same_tables(j.sq, tabs, n);
    /* the temporary directory is also the mark of an import whose commits
     * are not all on disk yet (they are unsynced until the end, below): it
     * is made durable before the first commit and removed only after the
     * final sync, and held with flock(LOCK_EX) while the import runs, so
     * that `moraine` tells a running import (locked) from one a crash or a
     * kill ended (there, unlocked: the catalog is discarded and imported
     * again; docs/import-export.md) */
    int lockfd = -1;
    if (!rc) {
        if (mkdir(tmpdir, 0700) != 0) rc = mr_err(MORAINE_EIO, "%s: cannot create the import's temporary directory: %s", tmpdir, strerror(errno));
        else made = 1;
    }
    if (!rc) {
        lockfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) != 0)
            rc = mr_err(MORAINE_EIO, "%s: cannot lock the import's temporary directory: %s", tmpdir, strerror(errno));
    }
    if (!rc) rc = sync_parent(tmpdir);
    /* the commits are not synced one by one: a failed import leaves nothing
     * (it empties the catalog), so only the end needs to be durable, and it
     * is synced then; a crash in between leaves a part, as a crash between
     * synced commits did */
    unsigned envflags = 0;
    int nosync = 0;
    if (!rc && mdb_env_get_flags(db->env, &envflags) == 0 && !(envflags & MDB_NOSYNC))
        nosync = mdb_env_set_flags(db->env, MDB_NOSYNC, 1) == 0;
    if (!rc) rc = mr_import_ndjson_given(db, tmpdir, g, n, write_table, &j, progress, ud, commits);
    if (nosync) {
        mdb_env_set_flags(db->env, MDB_NOSYNC, 0);
        int mrc = mdb_env_sync(db->env, 1);
        if (mrc && !rc) rc = mr_lmdb_err(mrc, "syncing the imported catalog");
    }
    if (j.sq) {
        sqlite3_exec(j.sq, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(j.sq);
    }
    if (made) remove_tmp(&j);
    if (lockfd >= 0) close(lockfd);
    for (size_t i = 0; i < n; i++) {
        free(j.st[i].run_row);
        free(j.st[i].run_ord);
    }
    free(j.st);
    free(g);
    return rc;
}
