/*
 * ndjson.c — import and export of the catalog exchange format: a directory
 * with one `<table>.ndjson` file per ducklake_* table, one JSON object per
 * line (docs/import-export.md). JSON is parsed with jansson (exact 64-bit
 * integers), except DuckDB's flat rows of plain scalars, which a fast path
 * reads straight into values (ndjson_fast.c: the same values, and anything it
 * does not take goes to jansson); export writes DuckDB's JSON-lines form
 * directly (ndjson_export.c).
 *
 * Import reads and checks every file before it writes anything (the checks
 * and the replay plan: ndjson_plan.c), then replays the catalog snapshot by
 * snapshot through the staged path. The files stay open and a row is kept
 * as where it starts in its file (4 bytes, 8 in a file of 4 GiB or more;
 * plus 8 per step of the plan): the checks and the replay read it again
 * from there (pread into a window of the file, never through a map: a file
 * cut shorter during the import is an EIO, not a SIGBUS) and parse it again,
 * so the process's own memory is the plan and the windows, not the catalog.
 * For snapshot S, first the versions that end at S, then the snapshot row,
 * the versions that begin at S, and the children of those. Non-temporal
 * tables go into the first (ducklake_metadata) or last commit. If a commit
 * fails, the catalog is emptied again, as it was before the import.
 */
#include "ndjson_internal.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- parsed tables ---- */


/* One more row read and checked: every 4096 rows, progress(read, 0) (the
 * total is not known until every file is read). Nonzero cancels. */
static int row_read(tables *ts)
{
    ts->read++;
    if (ts->progress && ts->read % 4096 == 0 && ts->progress(ts->ud, ts->read, 0))
        return mr_err(MORAINE_EINVAL, "import cancelled");
    return 0;
}

/* Where row @i of a file's table starts in the file. */
static size_t row_start(const table *t, size_t i)
{
    return t->size <= UINT32_MAX ? ((const uint32_t *)t->foff)[i] : (size_t)((const uint64_t *)t->foff)[i];
}

/* Lets go of the row mr_nd_row_at read last through jansson. */
static void release_row(tables *ts)
{
    for (size_t i = 0; i < ts->nowned; i++) free(ts->owned[i]);
    ts->nowned = 0;
    if (ts->jrow) json_decref((json_t *)ts->jrow);
    ts->jrow = NULL;
}

static void tables_free(tables *ts)
{
    release_row(ts);
    for (size_t i = 0; i < ts->n; i++) {
        table *t = &ts->t[i];
        free(t->name);
        for (size_t c = 0; c < t->ncols; c++) free(t->cols[c]);
        free(t->cols);
        mr_rel_free(t->rel);
        mr_buf_free(&t->data);
        free(t->off);
        free(t->line);
        free(t->keep);
        free(t->foff);
        free(t->collen);
        if (t->has_fd) close(t->fd); /* (the tables go: ts->nopen is not kept) */
        free(t->whole);
        free(t->win[0].buf);
        free(t->win[1].buf);
        free(t->path);
    }
    free(ts->t);
    free(ts->vals);
}

static int json_to_value(json_t *j, moraine_value *v, char **owned);

/* ---- reading a file's bytes ----
 *
 * A file of JSON lines is read with pread, never through a map: another
 * process may cut the file shorter while it is imported, and a mapped page
 * past its new end would raise SIGBUS. Rows are mostly read in file order
 * (the first read, the plan's passes, a table's inserts in the replay), so
 * each file has a window of WIN_BYTES (win[0]), refilled from the row that
 * is not in it when that row comes next in file order. A row read out of
 * order (a version ended long after it began) goes to the file's second
 * window (win[1]), read from there: JUMP_BYTES, doubled each time the rows
 * after it are read next, up to WIN_BYTES, when the two windows trade
 * places (the rows read in order are now those). A row longer than a
 * window grows it. Each refill first checks the file's size and
 * modification time (same_file); a file shorter than its row is an EIO. */
#define WIN_BYTES ((size_t)1 << 20)
#define JUMP_BYTES ((size_t)16 << 10)
/* Files open at a time (a catalog can have a file per inlined data table):
 * past that, the file whose bytes were asked for least recently is closed
 * and its windows let go; it is opened again by its name when needed, and
 * must then still be the same file (device, inode, size, modification
 * time). So the import holds at most ND_MAX_OPEN descriptors and windows. */
#define ND_MAX_OPEN 64

/* The EIO of a file @t that changed since it was opened and checked. */
static int file_changed(const table *t, const char *how)
{
    return mr_err(MORAINE_EIO, "%s: the file changed since it was checked (%s): it must not change while it is imported",
                  t->path, how);
}

/* Whether t's open file is still the one first opened (device and inode:
 * it may have been opened again by its name, reopen) with the size and
 * modification time it had then: 0, else the EIO naming it. */
static int same_file(const table *t)
{
    struct stat st;
    if (fstat(t->fd, &st) != 0) return mr_err(MORAINE_EIO, "%s: cannot stat: %s", t->path, strerror(errno));
    if ((uint64_t)st.st_dev != t->fdev || (uint64_t)st.st_ino != t->fino) return file_changed(t, "another file");
    if ((uintmax_t)st.st_size < t->size) return file_changed(t, "it is shorter than it was");
    if ((uintmax_t)st.st_size != t->size || (int64_t)st.st_mtim.tv_sec != t->fmtime_s || (int64_t)st.st_mtim.tv_nsec != t->fmtime_ns)
        return file_changed(t, "another size or modification time");
    return 0;
}

/* Whether the file t->path names is still the one opened: the same device,
 * inode, size and modification time. 0, else the EIO naming it. */
static int same_path(const table *t)
{
    struct stat st;
    if (stat(t->path, &st) != 0 || (uint64_t)st.st_dev != t->fdev || (uint64_t)st.st_ino != t->fino ||
        (uintmax_t)st.st_size != t->size || (int64_t)st.st_mtim.tv_sec != t->fmtime_s || (int64_t)st.st_mtim.tv_nsec != t->fmtime_ns)
        return file_changed(t, "another file, size or modification time");
    return 0;
}

/* Whether every file still has the size and modification time it had when
 * it was opened (same_file through an open file: one replaced by a rename
 * since still reads as it was; same_path for one closed meanwhile): after
 * the replay read its last row, before its last commit, so that a file
 * rewritten while its rows were read is refused even when no refill saw it;
 * and after a check's last row. EIO naming the file. */
static int files_same(const tables *ts)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < ts->n; i++)
        if (ts->t[i].regular) rc = ts->t[i].has_fd ? same_file(&ts->t[i]) : same_path(&ts->t[i]);
    return rc;
}

/* Closes t's file and lets its windows go (it is opened again when needed). */
static void close_file(tables *ts, table *t)
{
    close(t->fd);
    t->has_fd = 0;
    ts->nopen--;
    for (int k = 0; k < 2; k++) {
        free(t->win[k].buf);
        memset(&t->win[k], 0, sizeof t->win[k]);
    }
}

/* One more file open (@t's): past ND_MAX_OPEN, the one asked for least
 * recently other than @t is closed. */
static void opened(tables *ts, table *t)
{
    t->has_fd = 1;
    t->used = ++ts->tick;
    if (++ts->nopen <= ND_MAX_OPEN) return;
    table *lru = NULL;
    for (size_t i = 0; i < ts->n; i++)
        if (ts->t[i].has_fd && &ts->t[i] != t && (!lru || ts->t[i].used < lru->used)) lru = &ts->t[i];
    if (lru) close_file(ts, lru);
}

/* t's file open again when it was closed (opened): by its name, and it must
 * be the same file as when it was first opened. EIO naming it. */
static int reopen(tables *ts, table *t)
{
    if (t->has_fd) return 0;
    int fd = open(t->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mr_err(MORAINE_EIO, "%s: cannot open: %s", t->path, strerror(errno));
    t->fd = fd;
    opened(ts, t);
    return same_file(t);
}

/* Reads @n bytes of t's file at @off into @buf: all of them, else EIO (a
 * read error, or the file is shorter than when it was opened). */
static int read_at(const table *t, char *buf, size_t n, size_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(t->fd, buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return mr_err(MORAINE_EIO, "%s: read error: %s", t->path, strerror(errno));
        if (r == 0) return file_changed(t, "it is shorter than it was");
        got += (size_t)r;
    }
    return 0;
}

/* Fills the window @w with t's bytes from @off: @want of them (at least
 * @need; fewer where the file ends), the file first opened again if it was
 * closed (reopen) and checked unchanged (same_file). EIO, ENOMEM (the
 * window then empty). */
static int fill(tables *ts, table *t, nd_window *w, size_t off, size_t need, size_t want)
{
    if (want < need) want = need;
    if (want > t->size - off) want = t->size - off;
    w->len = 0;
    w->off = off;
    if (w->cap < want) {
        char *b = realloc(w->buf, want);
        if (!b) return mr_err(MORAINE_ENOMEM, "out of memory");
        w->buf = b;
        w->cap = want;
    }
    int rc = t->has_fd ? same_file(t) : reopen(ts, t);
    if (!rc) rc = read_at(t, w->buf, want, off);
    if (!rc) w->len = want;
    return rc;
}

/* Whether bytes from @s come next after the window @w (or in it): within
 * @ahead bytes past its end. */
static int follows(const nd_window *w, size_t s, size_t ahead)
{
    return w->len && s >= w->off && s - w->off <= w->len + ahead;
}

/* Bytes [@s, @e) of t's file in *@p: through its windows (above). EIO (the
 * file changed), ENOMEM. */
static int file_bytes(tables *ts, table *t, size_t s, size_t e, const char **p)
{
    if (t->whole) {
        *p = t->whole + s;
        return 0;
    }
    t->used = ++ts->tick;
    for (int k = 0; k < 2; k++) {
        nd_window *w = &t->win[k];
        if (s >= w->off && e <= w->off + w->len) {
            *p = w->buf + (s - w->off);
            return 0;
        }
    }
    if (s > e || e > t->size) return file_changed(t, "it is shorter than it was");
    nd_window *w = &t->win[0];
    int rc;
    if (!w->len || follows(w, s, WIN_BYTES)) {
        /* the file's first rows, or the next ones: the window moves on */
        rc = fill(ts, t, w, s, e - s, WIN_BYTES);
    } else {
        /* out of order: the second window, larger while its rows are read in order */
        w = &t->win[1];
        size_t want = follows(w, s, w->len) ? 2 * w->len : JUMP_BYTES;
        rc = fill(ts, t, w, s, e - s, want < WIN_BYTES ? want : WIN_BYTES);
        if (!rc && want >= WIN_BYTES) {
            /* the rows read in order are these now */
            nd_window x = t->win[0];
            t->win[0] = t->win[1];
            t->win[1] = x;
            w = &t->win[0];
        }
    }
    *p = w->buf;
    return rc;
}

/* Row @i of a file's table parsed again from the file into ts->vals (the
 * same values as the first read: mr_nd_fast_row, else jansson). A row that no
 * longer parses is a file changed since it was checked: EIO. */
static int file_row_at(tables *ts, table *t, size_t i, int64_t *ord)
{
    release_row(ts);
    *ord = (int64_t)i;
    if (t->nruns) {
        /* the last run that starts at or before row i */
        size_t lo = 0, hi = t->nruns;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if ((uint64_t)t->run_row[mid] <= (uint64_t)i) lo = mid;
            else hi = mid;
        }
        if ((uint64_t)t->run_row[lo] <= (uint64_t)i) *ord = t->run_ord[lo] + ((int64_t)i - t->run_row[lo]);
    }
    /* the row's line ends before the next row starts (or where the file does) */
    size_t s = row_start(t, i), e = i + 1 < t->nrows ? row_start(t, i + 1) : t->size;
    if (e < s || e > t->size) e = t->size;
    const char *p = NULL;
    int rc = file_bytes(ts, t, s, e, &p);
    if (rc) return rc;
    const char *nl = memchr(p, '\n', e - s);
    if (!nl && i + 1 < t->nrows)
        return mr_err(MORAINE_EIO, "%s.ndjson:%zu: the row no longer reads as it did: the file changed during the import",
                      t->name, mr_nd_line(t, i));
    size_t len = nl ? (size_t)(nl - p) : e - s;
    while (len && p[len - 1] == '\r') len--;
    if (mr_nd_fast_row(t, p, len, ts->vals)) return 0;
    json_t *obj = json_loadb(p, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
    ts->jrow = obj;
    rc = obj && json_is_object(obj) ? 0 : MORAINE_EIO;
    for (size_t c = 0; !rc && c < t->ncols; c++) {
        json_t *j = json_object_get(obj, t->cols[c]);
        if (!j) rc = MORAINE_EIO;
        else if ((rc = json_to_value(j, &ts->vals[c], &ts->owned[ts->nowned]))) return rc;
        else if (ts->owned[ts->nowned]) ts->nowned++;
    }
    if (rc) return mr_err(MORAINE_EIO, "%s.ndjson:%zu: the row no longer reads as it did: the file changed during the import",
                          t->name, mr_nd_line(t, i));
    return 0;
}

int mr_nd_row_at(tables *ts, table *t, size_t i, moraine_value **vals, int64_t *ord)
{
    if (ts->vcap < t->ncols + 1) {
        moraine_value *v = realloc(ts->vals, (t->ncols + 1) * sizeof *v);
        if (!v) return mr_err(MORAINE_ENOMEM, "out of memory");
        ts->vals = v;
        ts->vcap = t->ncols + 1;
    }
    *vals = ts->vals;
    if (t->file) return file_row_at(ts, t, i, ord);
    const uint8_t *p = t->data.p + t->off[i], *end = t->data.p + t->data.len;
    size_t n;
    return mr_decode_row(&p, end, ord, ts->vals, t->ncols, &n);
}

size_t mr_nd_line(const table *t, size_t i)
{
    if (!t->file) return t->line[i];
    /* the lines before the row's, blank ones included, as the first read
     * counted them: read again in pieces of a buffer of its own (the
     * windows hold the rows being used); a file cut shorter since gives the
     * lines it still has */
    size_t n = 1, end = row_start(t, i);
    if (t->whole) {
        const char *p = t->whole, *e = t->whole + end;
        while (p < e && (p = memchr(p, '\n', (size_t)(e - p)))) {
            n++;
            p++;
        }
        return n;
    }
    char buf[16384];
    int fd = t->has_fd ? t->fd : open(t->path, O_RDONLY | O_CLOEXEC);
    for (size_t off = 0; fd >= 0 && off < end;) {
        size_t want = end - off < sizeof buf ? end - off : sizeof buf;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (const char *p = buf, *e = buf + r; p < e && (p = memchr(p, '\n', (size_t)(e - p))); p++) n++;
        off += (size_t)r;
    }
    if (fd >= 0 && !t->has_fd) close(fd);
    return n;
}

/* Converts one JSON value to a moraine value; nested values become text. */
static int json_to_value(json_t *j, moraine_value *v, char **owned)
{
    memset(v, 0, sizeof *v);
    *owned = NULL;
    switch (json_typeof(j)) {
    case JSON_NULL: v->type = MORAINE_NULL; return 0;
    case JSON_TRUE: v->type = MORAINE_BOOL; v->i = 1; return 0;
    case JSON_FALSE: v->type = MORAINE_BOOL; v->i = 0; return 0;
    case JSON_INTEGER: v->type = MORAINE_INT; v->i = (int64_t)json_integer_value(j); return 0;
    case JSON_REAL: v->type = MORAINE_REAL; v->d = json_real_value(j); return 0;
    case JSON_STRING:
        v->type = MORAINE_STR;
        v->s = json_string_value(j);
        v->len = json_string_length(j);
        return 0;
    default: {
        char *txt = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        if (!txt) return mr_err(MORAINE_ENOMEM, "out of memory");
        v->type = MORAINE_JSON;
        v->s = txt;
        v->len = strlen(txt);
        *owned = txt;
        return 0;
    }
    }
}

/* Appends the row @vals (t->ncols values) to t->data. A slim table (a check
 * that never replays) stores only the columns the plan reads (keys, parent
 * keys, snapshot columns, the ids its references name), the others as NULL:
 * the bulk of a catalog (paths, stats, uuids) is checked and let go.
 * ducklake_metadata (a few rows) is kept whole: the plan reads its version. */
static int encode_row(table *t, const moraine_value *vals)
{
    if (!t->slim || !t->rel || t->ncols > 256 || strcmp(t->name, "ducklake_metadata") == 0) return mr_encode_row(&t->data, (int64_t)t->nrows, vals, t->ncols);
    if (!t->keep) {
        static const char *const ids[] = {"table_id", "data_file_id", "schema_id", "snapshot_id", "begin_snapshot",
                                          "end_snapshot", NULL};
        const mr_rel *r = t->rel;
        if (!(t->keep = calloc(t->ncols, 1))) return mr_err(MORAINE_ENOMEM, "out of memory");
        for (int i = 0; i < r->nkey; i++) {
            if ((size_t)r->keycols[i] < t->ncols) t->keep[r->keycols[i]] = 1;
            if (r->info.placement == MORAINE_PLACE_CHILD && (size_t)r->parentkey[i] < t->ncols) t->keep[r->parentkey[i]] = 1;
        }
        if (r->info.placement == MORAINE_PLACE_TEMPORAL) {
            if ((size_t)r->info.begin_col < t->ncols) t->keep[r->info.begin_col] = 1;
            if ((size_t)r->info.end_col < t->ncols) t->keep[r->info.end_col] = 1;
        }
        for (size_t c = 0; c < t->ncols; c++)
            for (int i = 0; ids[i]; i++)
                if (strcmp(t->cols[c], ids[i]) == 0) t->keep[c] = 1;
    }
    moraine_value v[256];
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->keep[c]) v[c] = vals[c];
        else {
            memset(&v[c], 0, sizeof v[c]);
            v[c].type = MORAINE_NULL;
        }
    }
    return mr_encode_row(&t->data, (int64_t)t->nrows, v, t->ncols);
}

/* Checks a row of t->ncols values in column order and appends it: encoded,
 * or for a file of JSON lines (t->file) where it starts in the file, @at. */
static int keep_row(table *t, const moraine_value *vals, const char *path, size_t line, size_t at)
{
    int rc = mr_check_value(t->rel, vals, t->ncols, (int64_t)t->nrows);
    if (rc) {
        char m[600];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        return mr_err(rc, "%s:%zu: %s", path, line, m);
    }
    if (t->file) {
        if (t->nrows == t->caprows) {
            size_t cap = t->caprows ? t->caprows * 2 : 64;
            /* 4 bytes a row in a file under 4 GiB, else 8 */
            void *f = realloc(t->foff, cap * (t->size <= UINT32_MAX ? sizeof(uint32_t) : sizeof(uint64_t)));
            if (!f) return mr_err(MORAINE_ENOMEM, "out of memory");
            t->foff = f;
            t->caprows = cap;
        }
        if (t->size <= UINT32_MAX) ((uint32_t *)t->foff)[t->nrows++] = (uint32_t)at;
        else ((uint64_t *)t->foff)[t->nrows++] = at;
        return 0;
    }
    if (t->nrows == t->caprows) {
        size_t cap = t->caprows ? t->caprows * 2 : 64;
        size_t *o = realloc(t->off, cap * sizeof *o), *l = o ? realloc(t->line, cap * sizeof *l) : NULL;
        if (o) t->off = o;
        if (l) t->line = l;
        if (!o || !l) return mr_err(MORAINE_ENOMEM, "out of memory");
        t->caprows = cap;
    }
    t->off[t->nrows] = t->data.len;
    t->line[t->nrows] = line;
    rc = encode_row(t, vals);
    if (!rc) t->nrows++;
    return rc;
}

static int add_row(table *t, json_t *obj, const char *path, size_t line, size_t at)
{
    if (!json_is_object(obj)) return mr_err(MORAINE_EINVAL, "%s:%zu: a row must be a JSON object", path, line);
    if (json_object_size(obj) == 0) return mr_err(MORAINE_EINVAL, "%s:%zu: a row without columns ({})", path, line);
    if (t->nrows == 0 && t->ncols == 0) {
        size_t n = json_object_size(obj);
        t->cols = calloc(n ? n : 1, sizeof *t->cols);
        if (!t->cols) return mr_err(MORAINE_ENOMEM, "out of memory");
        const char *k;
        json_t *val;
        json_object_foreach(obj, k, val) {
            if (!(t->cols[t->ncols++] = strdup(k))) return mr_err(MORAINE_ENOMEM, "out of memory");
        }
        (void)val;
        int rc = mr_rel_build(NULL, t->name, 0, t->ncols, (const char *const *)t->cols, &t->rel);
        if (rc) {
            char m[600];
            snprintf(m, sizeof m, "%s", moraine_errmsg());
            return mr_err(rc, "%s:%zu: %s", path, line, m);
        }
    }
    moraine_value vals[256];
    char *owned[256];
    if (t->ncols > 256) return mr_err(MORAINE_EINVAL, "%s: more than 256 columns", path);
    if (json_object_size(obj) != t->ncols) {
        const char *k;
        json_t *val;
        json_object_foreach(obj, k, val) {
            size_t c = 0;
            while (c < t->ncols && strcmp(t->cols[c], k) != 0) c++;
            if (c == t->ncols) return mr_err(MORAINE_EINVAL, "%s:%zu: unknown column '%s' (not in the table's first row)", path, line, k);
        }
    }
    int rc = 0;
    size_t c;
    for (c = 0; c < t->ncols; c++) {
        json_t *j = json_object_get(obj, t->cols[c]);
        if (!j) {
            rc = mr_err(MORAINE_EINVAL, "%s:%zu: row is missing column '%s'", path, line, t->cols[c]);
            break;
        }
        if ((rc = json_to_value(j, &vals[c], &owned[c]))) break;
    }
    if (!rc) rc = keep_row(t, vals, path, line, at);
    for (size_t i = 0; i < c; i++) free(owned[i]);
    return rc;
}

/* An empty table in DuckDB's NDJSON export is a file with one newline (or
 * nothing): no row names its columns. A table DuckLake defines gets the
 * columns moraine knows for it (engine/tables.c), so verbs can write to it
 * afterwards; an unknown table stays without columns. */
static int known_columns(table *t)
{
    const mr_known_table *kt = mr_known(t->name);
    if (!kt) return 0;
    char **cols;
    size_t n = mr_known_columns(kt, &cols);
    if (n == (size_t)-1) return mr_err(MORAINE_ENOMEM, "out of memory");
    free(t->cols);
    t->cols = cols;
    t->ncols = n;
    return n ? mr_rel_build(NULL, t->name, 0, t->ncols, (const char *const *)t->cols, &t->rel) : 0;
}

/* Opens the file @path: a regular file stays open (t->fd, while no more
 * than ND_MAX_OPEN are; its size, device, inode and modification time
 * recorded: same_file, same_path) and its rows are read from it with pread
 * as they are needed. Anything else (a pipe, a file of size 0 such as
 * /proc's) is read whole into memory (t->whole). EIO (cannot open, read
 * error), ENOMEM. */
static int open_file(tables *ts, table *t, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mr_err(MORAINE_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uintmax_t)st.st_size <= SIZE_MAX) {
        t->fd = fd;
        t->regular = 1;
        opened(ts, t);
        t->size = (size_t)st.st_size;
        t->fdev = (uint64_t)st.st_dev;
        t->fino = (uint64_t)st.st_ino;
        t->fmtime_s = (int64_t)st.st_mtim.tv_sec;
        t->fmtime_ns = (int64_t)st.st_mtim.tv_nsec;
        return (t->path = strdup(path)) ? 0 : mr_err(MORAINE_ENOMEM, "out of memory");
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            char *p = realloc(buf, cap);
            if (!p) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            buf = p;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = mr_err(MORAINE_EIO, "%s: read error", path);
            break;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    t->whole = buf;
    t->size = n;
    return 0;
}

/* The line of t's file that starts at @pos, up to and with its newline (or
 * to the end of the file), in *@line (*@n bytes): in t->whole, or read into
 * the file's window, which grows for a line longer than it. EIO (the file
 * changed: fill), ENOMEM. */
static int next_line(tables *ts, table *t, size_t pos, const char **line, size_t *n)
{
    if (t->whole) {
        const char *p = t->whole + pos, *nl = memchr(p, '\n', t->size - pos);
        *line = p;
        *n = nl ? (size_t)(nl + 1 - p) : t->size - pos;
        return 0;
    }
    nd_window *w = &t->win[0];
    for (;;) {
        size_t wend = w->off + w->len, need = 1;
        if (pos >= w->off && pos < wend) {
            const char *p = w->buf + (pos - w->off), *nl = memchr(p, '\n', wend - pos);
            if (nl || wend == t->size) {
                *line = p;
                *n = nl ? (size_t)(nl + 1 - p) : wend - pos;
                return 0;
            }
            need = 2 * (wend - pos); /* the line goes on past the window */
        }
        int rc = fill(ts, t, w, pos, need, WIN_BYTES);
        if (rc) return rc;
    }
}

/* A file that is one JSON array of objects (its first non-blank byte is
 * '['): parsed whole, its rows kept encoded. */
static int read_array(tables *ts, table *t, const char *path)
{
    char *all = t->whole;
    int rc = 0;
    if (!all) {
        /* the window is not needed again: the rows are kept encoded */
        free(t->win[0].buf);
        memset(&t->win[0], 0, sizeof t->win[0]);
        if (!(all = malloc(t->size))) return mr_err(MORAINE_ENOMEM, "out of memory");
        if ((rc = t->has_fd ? same_file(t) : reopen(ts, t)) || (rc = read_at(t, all, t->size, 0))) {
            free(all);
            return rc;
        }
    }
    json_error_t e;
    json_t *arr = json_loadb(all, t->size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
    if (all != t->whole) free(all);
    if (!arr)
        return strstr(e.text, "duplicate") ? mr_err(MORAINE_EJSON, "%s:%d: an object names the same key twice (%s): refused, "
                                                                   "the value meant is ambiguous", path, e.line, e.text)
                                           : mr_err(MORAINE_EJSON, "%s:%d: malformed JSON: %s", path, e.line, e.text);
    if (!json_is_array(arr)) rc = mr_err(MORAINE_EJSON, "%s: expected a JSON array of objects", path);
    for (size_t i = 0; !rc && i < json_array_size(arr); i++) {
        rc = add_row(t, json_array_get(arr, i), path, i + 1, 0);
        if (!rc) rc = row_read(ts);
    }
    json_decref(arr);
    return rc;
}

static int read_table(tables *ts, table *t, const char *path)
{
    int rc = open_file(ts, t, path);
    size_t lineno = 0, n;
    int first = 1;
    for (size_t pos = 0; !rc && pos < t->size; pos += n) {
        /* a line as getline gives it: up to and with its newline */
        const char *line;
        if ((rc = next_line(ts, t, pos, &line, &n))) break;
        lineno++;
        size_t len = n;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        size_t s = 0;
        while (s < len && (line[s] == ' ' || line[s] == '\t')) s++;
        if (s == len) continue;
        if (first && line[s] == '[') {
            /* the whole file is one JSON array of objects: its rows are kept encoded */
            rc = read_array(ts, t, path);
            break;
        }
        first = 0;
        t->file = 1; /* JSON lines: rows are kept as where they start */
        size_t at = pos + s;
        moraine_value fv[256];
        if (mr_nd_fast_row(t, line + s, len - s, fv)) {
            rc = keep_row(t, fv, path, lineno, at);
            if (!rc) rc = row_read(ts);
            continue;
        }
        json_error_t e;
        /* JSON_REJECT_DUPLICATES: {"table_id":1,"table_id":2} is refused
         * (jansson would keep the last value, silently) */
        json_t *obj = json_loadb(line + s, len - s, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
        if (!obj) {
            rc = strstr(e.text, "duplicate") ? mr_err(MORAINE_EJSON, "%s:%zu: the object names the same key twice (%s, column %d): "
                                                                     "refused, the value meant is ambiguous", path, lineno, e.text, e.column)
                                             : mr_err(MORAINE_EJSON, "%s:%zu: malformed JSON: %s (column %d)", path, lineno, e.text, e.column);
            break;
        }
        rc = add_row(t, obj, path, lineno, at);
        json_decref(obj);
        if (!rc) rc = row_read(ts);
    }
    return rc;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a > b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int read_dir(const char *dir, tables *ts)
{
    int rc0 = mr_export_complete(dir);
    if (rc0) return rc0;
    DIR *d = opendir(dir);
    if (!d) return mr_err(MORAINE_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!ends_with(de->d_name, ".ndjson") && !ends_with(de->d_name, ".json")) continue;
        char **p = realloc(names, (n + 1) * sizeof *p);
        if (!p || !(p[n] = strdup(de->d_name))) rc = mr_err(MORAINE_ENOMEM, "out of memory");
        if (p) names = p;
        if (!rc) n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    if (!rc && n == 0) rc = mr_err(MORAINE_EIO, "%s: no <table>.ndjson files: not a catalog export", dir);
    ts->t = calloc(n ? n : 1, sizeof *ts->t);
    if (!ts->t && !rc) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        table *t = &ts->t[ts->n++];
        t->slim = ts->slim;
        char *dot = strrchr(names[i], '.');
        t->name = strndup(names[i], (size_t)(dot - names[i]));
        for (size_t j = 0; j + 1 < ts->n; j++)
            if (t->name && strcmp(ts->t[j].name, t->name) == 0) rc = mr_err(MORAINE_EINVAL, "%s: table '%s' appears twice (.json and .ndjson)", dir, t->name);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!rc) rc = t->name ? read_table(ts, t, path) : mr_err(MORAINE_ENOMEM, "out of memory");
        if (!rc && t->ncols == 0) rc = known_columns(t);
    }
    if (!rc && ts->progress && ts->progress(ts->ud, ts->read, 0)) rc = mr_err(MORAINE_EINVAL, "import cancelled");
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int mr_clear_catalog(moraine_db *db)
{
    MDB_txn *t;
    int mrc, rc = mr_write_txn_begin(db, 0, &t); /* counted: the map is not remapped under it (txn.c) */
    if (rc) return rc;
    /* the generation only grows: every handle (in any process) that loaded
     * descriptors before the clear reloads them at its next read */
    int64_t gen = 0;
    rc = mr_meta_get_int(t, db->dbi, "rels_gen", &gen);
    if (rc < 0) {
        mdb_txn_abort(t);
        mr_writer_done(db->sh);
        return rc;
    }
    if ((uint64_t)gen < db->rels_gen) gen = (int64_t)db->rels_gen;
    mrc = mdb_drop(t, db->dbi, 0);
    rc = mrc ? mr_lmdb_err(mrc, "clearing the catalog") : mr_meta_put_int(t, db->dbi, "format", MR_FORMAT_VERSION);
    if (!rc) rc = mr_meta_put_int(t, db->dbi, "rels_gen", gen + 1);
    if (rc) {
        mdb_txn_abort(t);
        mr_writer_done(db->sh);
        return rc;
    }
    mrc = mdb_txn_commit(t);
    mr_writer_done(db->sh);
    if (mrc) return mr_lmdb_err(mrc, "clearing the catalog");
    db->need_marker = 0; /* written above */
    __atomic_store_n(&db->format, MR_FORMAT_VERSION, __ATOMIC_RELAXED); /* the marker written above */
    pthread_mutex_lock(&db->mu);
    /* descriptors of the failed import: retire them all */
    for (size_t i = 0; i < db->nrels; i++) {
        mr_rel **p = realloc(db->retired, (db->nretired + 1) * sizeof *p);
        if (!p) break;
        db->retired = p;
        db->retired[db->nretired++] = db->rels[i];
        db->byid[db->rels[i]->info.id] = NULL;
    }
    db->nrels = 0;
    db->rels_gen = (uint64_t)gen + 1;
    pthread_mutex_unlock(&db->mu);
    return 0;
}

/* Import and init need a catalog with no rows. One that only has table
 * descriptors (an import of empty files, say) counts as empty: its
 * descriptors are dropped first, so it can be imported into again; so does
 * an empty catalog of an older store format, whose marker the clear rewrites. */
int mr_catalog_empty(moraine_db *db)
{
    int64_t last;
    int rc = moraine_last_snapshot(db, &last);
    if (rc < 0) return rc;
    if (rc == 1) return mr_err(MORAINE_EEXIST, "the catalog is not empty: import into a new catalog");
    MDB_txn *t;
    int mrc = mr_read_txn_begin(db, &t, NULL);
    if (mrc) return mr_lmdb_err(mrc, "reading the catalog");
    MDB_cursor *c;
    int rows = 0;
    if ((mrc = mdb_cursor_open(t, db->dbi, &c)) == 0) {
        MDB_val k, v;
        for (mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0 && !rows; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
            if (k.mv_size && ((const uint8_t *)k.mv_data)[0] != MR_SUB_META && ((const uint8_t *)k.mv_data)[0] != MR_SUB_COUNT) rows = 1;
        mdb_cursor_close(c);
    }
    mr_read_txn_end(db, t);
    if (rows) return mr_err(MORAINE_EEXIST, "the catalog is not empty: import into a new catalog");
    /* descriptors to drop, or the marker of an older store format (an empty
     * catalog an older moraine created): the clear writes this build's */
    if (db->nrels || __atomic_load_n(&db->format, __ATOMIC_RELAXED) != MR_FORMAT_VERSION) return mr_clear_catalog(db);
    return 0;
}

static int replay(moraine_db *db, tables *ts, ops *o, moraine_progress_fn progress, void *ud)
{
    int rc = 0;
    size_t i = 0;
    uint64_t total = o->n, done = 0;
    int defined = 0;
    unsigned long commits = 0;
    while (!rc && i < o->n) {
        int64_t snap = op_snap(o, i);
        moraine_txn *txn;
        if ((rc = moraine_txn_begin(db, snap, &txn))) break;
        if (!defined) {
            /* every table, empty ones included, is defined in the first commit */
            for (size_t ti = 0; !rc && ti < ts->n; ti++)
                rc = moraine_txn_define(txn, ts->t[ti].name, ts->t[ti].ncols, (const char *const *)ts->t[ti].cols);
            defined = 1;
        }
        for (; !rc && i < o->n && op_snap(o, i) == snap; i++) {
            table *t = &ts->t[op_table(o, i)];
            size_t row = (size_t)op_row(o, i);
            moraine_value *v;
            int64_t ord;
            if ((rc = mr_nd_row_at(ts, t, row, &v, &ord))) break;
            switch (op_phase(o, i)) {
            case PH_END: {
                /* the row as it was live: end it at this snapshot */
                moraine_value saved = v[t->rel->info.end_col];
                v[t->rel->info.end_col].type = MORAINE_NULL;
                rc = mr_txn_end_at(txn, t->name, v, t->ncols, ord);
                v[t->rel->info.end_col] = saved;
                break;
            }
            case PH_INSERT: {
                moraine_value *e = &v[t->rel->info.end_col];
                if (e->type == MORAINE_INT && e->i != snap) e->type = MORAINE_NULL; /* ended later by its PH_END op */
                rc = moraine_txn_insert(txn, t->name, v, t->ncols, ord);
                break;
            }
            default: rc = moraine_txn_insert(txn, t->name, v, t->ncols, ord); break;
            }
            if (rc) {
                char m[700];
                snprintf(m, sizeof m, "%s", moraine_errmsg());
                rc = ts->from_files ? mr_err(rc, "%s.ndjson:%zu: %s", t->name, mr_nd_line(t, row), m)
                                    : mr_err(rc, "%s row %zu: %s", t->name, mr_nd_line(t, row), m);
            }
            done++;
            if (progress && (done % 4096 == 0 || done == total) && progress(ud, done, total)) {
                rc = mr_err(MORAINE_EINVAL, "import cancelled");
            }
        }
        if (rc) {
            moraine_txn_abort(txn);
            break;
        }
        /* every row read: the files must still be the ones checked */
        if (i == o->n && (rc = files_same(ts))) {
            moraine_txn_abort(txn);
            break;
        }
        /* rows can begin at a snapshot DuckLake expired (no ducklake_snapshot
         * row): only the last commit must be a whole snapshot */
        mr_txn_partial_snapshot(txn, i < o->n);
        if ((rc = moraine_txn_commit(txn))) {
            if (rc == MORAINE_ESNAPSHOT && snap != MORAINE_NO_SNAPSHOT) {
                char m[700];
                snprintf(m, sizeof m, "%s", moraine_errmsg());
                rc = mr_err(MORAINE_EINVAL, "the catalog's last snapshot %lld has no usable ducklake_snapshot row: %s", (long long)snap, m);
            }
            break;
        }
        /* the store's pages this import touched are not read again: unmap
         * them now and then (moraine_release_pages), so the process's RSS
         * does not grow with the store; a failure costs memory only */
        ts->commits++;
        if (++commits % 256 == 0) (void)moraine_release_pages(db);
    }
    if (!rc && !defined) {
        /* a catalog of empty tables only */
        moraine_txn *txn;
        if (!(rc = moraine_txn_begin(db, MORAINE_NO_SNAPSHOT, &txn))) {
            for (size_t ti = 0; !rc && ti < ts->n; ti++)
                rc = moraine_txn_define(txn, ts->t[ti].name, ts->t[ti].ncols, (const char *const *)ts->t[ti].cols);
            if (rc) moraine_txn_abort(txn);
            else if (!(rc = moraine_txn_commit(txn))) ts->commits++;
        }
    }
    return rc;
}

/* Adds one row given as values (moraine_import_rows). */
static int add_values(table *t, const moraine_value *vals, size_t rowno)
{
    moraine_value v[256];
    if (t->ncols > 256) return mr_err(MORAINE_EINVAL, "%s: more than 256 columns", t->name);
    for (size_t c = 0; c < t->ncols; c++) {
        v[c] = vals[c];
        /* SQLite keeps BOOLEAN as 0/1 */
        if (t->rel->types[c] == MORAINE_COL_BOOLEAN && v[c].type == MORAINE_INT && (v[c].i == 0 || v[c].i == 1)) v[c].type = MORAINE_BOOL;
    }
    int rc = mr_check_value(t->rel, v, t->ncols, (int64_t)t->nrows);
    if (rc) {
        char m[600];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        return mr_err(rc, "%s row %zu: %s", t->name, rowno, m);
    }
    /* text of a VARCHAR column DuckLake defines that is not UTF-8: DuckLake
     * never writes one (its strings are UTF-8), an NDJSON import cannot hold
     * one (its JSON parser refuses it) and the catalog's exports cannot carry
     * it (verbs refuse it for that reason): refused, so that every import
     * takes the same catalogs. Columns moraine does not know (an inlined data
     * table's BLOB, say) keep their bytes (docs/import-export.md). */
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->rel->types[c] != MORAINE_COL_VARCHAR || v[c].type != MORAINE_STR || mr_utf8_valid(v[c].s, v[c].len)) continue;
        char shown[200];
        size_t o = 0;
        for (size_t i = 0; i < v[c].len && i < 40 && o + 5 < sizeof shown; i++) {
            unsigned char ch = (unsigned char)v[c].s[i];
            o += (size_t)snprintf(shown + o, sizeof shown - o, ch >= 0x20 && ch < 0x7F && ch != '\\' ? "%c" : "\\x%02x", ch);
        }
        shown[o] = 0;
        return mr_err(MORAINE_EINVAL, "%s row %zu: column '%s' holds '%s%s', bytes that are not valid UTF-8, which the "
                      "catalog's exports (NDJSON, SQL, JSON) need (an NDJSON import refuses them too)",
                      t->name, rowno, t->cols[c], shown, v[c].len > 40 ? "..." : "");
    }
    if (t->nrows == t->caprows) {
        size_t cap = t->caprows ? t->caprows * 2 : 64;
        size_t *o = realloc(t->off, cap * sizeof *o);
        if (o) t->off = o;
        size_t *l = o ? realloc(t->line, cap * sizeof *l) : NULL;
        if (l) t->line = l;
        if (!o || !l) return mr_err(MORAINE_ENOMEM, "out of memory");
        t->caprows = cap;
    }
    t->off[t->nrows] = t->data.len;
    t->line[t->nrows] = rowno;
    rc = encode_row(t, v);
    if (!rc) t->nrows++;
    return rc;
}

/* Whether every open file is still the one read: the same file (device,
 * inode), size and modification time. The replay parses the rows again
 * from the files, so one rewritten in place since it was checked would
 * give other rows. Checked before anything is written; a change during the
 * replay is seen when a window is refilled (same_file) or a row no longer
 * reads, and by files_same before the last commit (docs/import-export.md).
 * EIO naming the file. */
static int files_unchanged(const tables *ts)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < ts->n; i++)
        if (ts->t[i].regular) rc = same_path(&ts->t[i]);
    return rc;
}

static int import_tables(moraine_db *db, tables *ts, moraine_progress_fn progress, void *ud)
{
    ops o = {0};
    int rc = mr_nd_plan(ts, &o);
    if (!rc) rc = files_unchanged(ts);
    if (!rc) {
        rc = replay(db, ts, &o, progress, ud);
        if (rc) {
            char m[1024];
            snprintf(m, sizeof m, "%s", moraine_errmsg());
            if (mr_clear_catalog(db) == 0) rc = mr_err(rc, "%s (import undone: the catalog is empty again)", m);
            else /* the clear's own error (a full map, a commit of this thread on another handle): what was committed stays */
                rc = mr_err(rc, "%s (the import could not be undone: %s; what it committed before the failure, if anything, stays in "
                            "the catalog)", m, moraine_errmsg());
        }
    }
    mr_nd_ops_free(&o);
    return rc;
}

/* Appends the table @in (its name, columns and rows) to @ts: a new table
 * when @ts has none of that name, else (@append) its rows after the ones it
 * has, the columns having to be the same; without @append a name given
 * twice is refused. Rows are numbered from 1 per table, in the order given. */
static int add_input(tables *ts, const moraine_import_table *in, size_t idx, int append)
{
    if (!in->name || (in->ncols && !in->colnames) || (in->nrows && !in->rows))
        return mr_err(MORAINE_EINVAL, "moraine_import_rows: table %zu is incomplete", idx);
    table *t = mr_nd_find_table(ts, in->name);
    if (t && !append) return mr_err(MORAINE_EINVAL, "table '%s' is given twice", in->name);
    if (t) {
        int same = t->ncols == in->ncols;
        for (size_t c = 0; same && c < in->ncols; c++) same = strcmp(t->cols[c], in->colnames[c] ? in->colnames[c] : "") == 0;
        if (!same) return mr_err(MORAINE_EINVAL, "table '%s' is given again with other columns", in->name);
    } else {
        table *nt = realloc(ts->t, (ts->n + 1) * sizeof *nt);
        if (!nt) return mr_err(MORAINE_ENOMEM, "out of memory");
        ts->t = nt;
        t = &ts->t[ts->n++];
        memset(t, 0, sizeof *t);
        t->slim = ts->slim;
        if (!(t->name = strdup(in->name))) return mr_err(MORAINE_ENOMEM, "out of memory");
        t->cols = calloc(in->ncols ? in->ncols : 1, sizeof *t->cols);
        if (!t->cols) return mr_err(MORAINE_ENOMEM, "out of memory");
        for (size_t c = 0; c < in->ncols; c++) {
            if (!(t->cols[c] = strdup(in->colnames[c] ? in->colnames[c] : ""))) return mr_err(MORAINE_ENOMEM, "out of memory");
            t->ncols++;
        }
        if (t->ncols) {
            int rc = mr_rel_build(NULL, t->name, 0, t->ncols, (const char *const *)t->cols, &t->rel);
            if (rc) return rc;
        }
    }
    if (!t->ncols && in->nrows) return mr_err(MORAINE_EINVAL, "table '%s' has %zu rows but no columns", t->name, in->nrows);
    int rc = 0;
    for (size_t r = 0; !rc && r < in->nrows; r++) rc = add_values(t, in->rows + r * in->ncols, t->nrows + 1);
    return rc;
}

int moraine_import_rows(moraine_db *db, const moraine_import_table *in, size_t n, moraine_progress_fn progress, void *ud)
{
    if (!db || (n && !in)) return mr_err(MORAINE_EINVAL, "moraine_import_rows: NULL argument");
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    int rc = mr_catalog_empty(db);
    if (rc) return rc;
    tables ts = {0};
    for (size_t i = 0; !rc && i < n; i++) rc = add_input(&ts, &in[i], i, 0);
    if (!rc) rc = import_tables(db, &ts, progress, ud);
    tables_free(&ts);
    return rc;
}

/* ---- checking without importing ---- */

struct moraine_import_check {
    tables ts;
};

/* The checks of an import (the plan's), nothing written. */
static int check_tables(tables *ts)
{
    ops o = {0};
    int rc = mr_nd_plan(ts, &o);
    mr_nd_ops_free(&o);
    return rc;
}

int moraine_import_check_begin(moraine_import_check **out)
{
    if (!out) return mr_err(MORAINE_EINVAL, "moraine_import_check_begin: NULL argument");
    *out = calloc(1, sizeof **out);
    if (*out) (*out)->ts.slim = 1;
    return *out ? 0 : mr_err(MORAINE_ENOMEM, "out of memory");
}

int moraine_import_check_add(moraine_import_check *c, const moraine_import_table *t)
{
    if (!c || !t) return mr_err(MORAINE_EINVAL, "moraine_import_check_add: NULL argument");
    return add_input(&c->ts, t, c->ts.n, 1);
}

int moraine_import_check_end(moraine_import_check *c)
{
    if (!c) return mr_err(MORAINE_EINVAL, "moraine_import_check_end: NULL argument");
    int rc = check_tables(&c->ts);
    tables_free(&c->ts);
    free(c);
    return rc;
}

int moraine_import_ndjson_check(const char *dir, moraine_progress_fn progress, void *ud)
{
    if (!dir) return mr_err(MORAINE_EINVAL, "moraine_import_ndjson_check: NULL argument");
    tables ts = {0};
    ts.from_files = ts.whole_dir = 1;
    ts.slim = 1;
    ts.progress = progress;
    ts.ud = ud;
    int rc = read_dir(dir, &ts);
    if (!rc) rc = check_tables(&ts);
    if (!rc) rc = files_same(&ts); /* the checks read the rows again: from the files read first */
    tables_free(&ts);
    return rc;
}

static int read_given(const char *dir, tables *ts, const mr_nd_given *g, size_t n, mr_nd_writer write, void *wud);

/* The import of moraine_import_ndjson (@g NULL: the directory's files) and of
 * mr_import_ndjson_given (@g: the tables given, their files written by @write):
 * into an empty, writable catalog; the number of commits in *@commits. */
static int import_dir(moraine_db *db, const char *dir, const mr_nd_given *g, size_t n, mr_nd_writer write, void *wud,
                      moraine_progress_fn progress, void *ud, uint64_t *commits)
{
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    int rc = mr_catalog_empty(db);
    if (rc) return rc;
    tables ts = {0};
    ts.from_files = 1;
    ts.whole_dir = !g; /* the tables given (a SQLite source's) are checked by sync (check_tables) */
    ts.progress = progress;
    ts.ud = ud;
    rc = g ? read_given(dir, &ts, g, n, write, wud) : read_dir(dir, &ts);
    if (!rc) rc = import_tables(db, &ts, progress, ud);
    if (commits) *commits = rc ? 0 : ts.commits;
    tables_free(&ts);
    return rc;
}

int moraine_import_ndjson(moraine_db *db, const char *dir, moraine_progress_fn progress, void *ud)
{
    if (!db || !dir) return mr_err(MORAINE_EINVAL, "moraine_import_ndjson: NULL argument");
    return import_dir(db, dir, NULL, 0, NULL, NULL, progress, ud, NULL);
}

/* Row offsets of a file's table as 8 bytes each (a file reaching 4 GiB). */
static int widen_offsets(table *t)
{
    uint64_t *w = malloc((t->caprows ? t->caprows : 1) * sizeof *w);
    if (!w) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; i < t->nrows; i++) w[i] = ((const uint32_t *)t->foff)[i];
    free(t->foff);
    t->foff = w;
    return 0;
}

int mr_nd_file_row(tables *ts, table *t, const moraine_value *vals, const char *path, size_t line, uint64_t at)
{
    /* t->size, until the file is opened: the largest offset so far (keep_row
     * keeps 4-byte offsets while it is under 4 GiB) */
    if (at > UINT32_MAX && t->size <= UINT32_MAX) {
        int rc = widen_offsets(t);
        if (rc) return rc;
    }
    if (at > t->size) t->size = (size_t)at;
    t->file = 1;
    int rc = keep_row(t, vals, path, line, (size_t)at);
    return rc ? rc : row_read(ts);
}

/* read_dir for mr_import_ndjson_given: the tables @g, in that order */
static int read_given(const char *dir, tables *ts, const mr_nd_given *g, size_t n, mr_nd_writer write, void *wud)
{
    int rc = 0;
    ts->t = calloc(n ? n : 1, sizeof *ts->t);
    if (!ts->t) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        table *t = &ts->t[ts->n++];
        if (!(t->name = strdup(g[i].name))) return mr_err(MORAINE_ENOMEM, "out of memory");
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s.ndjson", dir, g[i].name) >= sizeof path)
            return mr_err(MORAINE_EIO, "%s/%s.ndjson: path too long", dir, g[i].name);
        if (!write) {
            /* a file read as moraine_import_ndjson reads it; one without rows gets the columns given */
            rc = read_table(ts, t, path);
            if (rc || t->ncols || !g[i].ncols) continue;
        }
        if (!(t->cols = calloc(g[i].ncols ? g[i].ncols : 1, sizeof *t->cols))) return mr_err(MORAINE_ENOMEM, "out of memory");
        for (size_t c = 0; c < g[i].ncols; c++) {
            if (!(t->cols[c] = strdup(g[i].cols[c]))) return mr_err(MORAINE_ENOMEM, "out of memory");
            t->ncols++;
        }
        if (t->ncols && (rc = mr_rel_build(NULL, t->name, 0, t->ncols, (const char *const *)t->cols, &t->rel))) break;
        if (!write) continue;
        rc = write(wud, ts, t, i, path);
        if (rc) break;
        /* the file as written, opened: the plan and the replay read its rows again from it */
        size_t seen = t->size;
        t->size = 0;
        if ((rc = open_file(ts, t, path))) break;
        if (seen > UINT32_MAX && t->size <= UINT32_MAX) rc = mr_err(MORAINE_EIO, "%s: the file is shorter than written", path);
        else if (t->nrows && seen <= UINT32_MAX && t->size > UINT32_MAX) rc = widen_offsets(t);
    }
    if (!rc && ts->progress && ts->progress(ts->ud, ts->read, 0)) rc = mr_err(MORAINE_EINVAL, "import cancelled");
    return rc;
}

int mr_import_ndjson_given(moraine_db *db, const char *dir, const mr_nd_given *g, size_t n, mr_nd_writer write, void *wud,
                           moraine_progress_fn progress, void *ud, uint64_t *commits)
{
    return import_dir(db, dir, g, n, write, wud, progress, ud, commits);
}
