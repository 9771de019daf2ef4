/*
 * ndjson_export.c — export of the catalog exchange format
 * (moraine_export_ndjson): every row of every relation, every version, in
 * DuckDB's JSON-lines form, one `<table>.ndjson` file per table written beside
 * the final names and renamed into place (docs/import-export.md); rows in
 * their row order. The import is ndjson.c.
 */
#include "ndjson_internal.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int64_t ord;
    uint64_t seq;
    const uint8_t *raw;
    const uint8_t *praw; /* an embedded child row: its parent's cells (moraine_row.parent_raw), else NULL */
    uint32_t len, plen;
} ent;

static int ent_cmp(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    if (x->ord != y->ord) return x->ord < y->ord ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Opens @path for writing; @private: created 0600 (and made 0600 if it was there). */
static FILE *open_out(const char *path, int private)
{
    if (!private) return fopen(path, "wb");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return NULL;
    FILE *f = fchmod(fd, 0600) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

static int export_table(moraine_read *rd, const mr_rel *r, const char *dir, int private)
{
    char path[4096], final[4096];
    snprintf(final, sizeof final, "%s/%s.ndjson", dir, r->info.name);
    snprintf(path, sizeof path, "%s/%s.ndjson.tmp", dir, r->info.name);
    FILE *f = open_out(path, private);
    if (!f) return mr_err(MORAINE_EIO, "%s: cannot write: %s", path, strerror(errno));
    ent *es = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (r->info.ncols > 0) {
        moraine_cursor *c = NULL;
        rc = moraine_scan_open(rd, r->info.name, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c);
        moraine_row row;
        while (!rc && (rc = moraine_cursor_next(c, &row)) == 1) {
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                ent *p = realloc(es, cap * sizeof *p);
                if (!p) {
                    rc = mr_err(MORAINE_ENOMEM, "out of memory");
                    break;
                }
                es = p;
            }
            if (row.raw_len > UINT32_MAX || row.parent_raw_len > UINT32_MAX) {
                rc = mr_err(MORAINE_ENOMEM, "%s: a row of more than 4 GiB", r->info.name);
                break;
            }
            es[n] = (ent){row.ord, n, row.raw, row.parent_raw, (uint32_t)row.raw_len, (uint32_t)row.parent_raw_len};
            n++;
            rc = 0;
        }
        if (c) moraine_cursor_close(c);
    }
    if (rc < 0) goto out;
    rc = 0;
    if (n > 1) qsort(es, n, sizeof *es, ent_cmp);
    moraine_value *vals = calloc(r->info.ncols ? r->info.ncols : 1, sizeof *vals);
    if (!vals) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    mr_buf line = {0};
    mr_keymap km = {0};
    int km_ok = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const uint8_t *p = es[i].raw; /* the row's cells (moraine_row.raw), as the cursor read them */
        int64_t ord = es[i].ord;
        if (es[i].praw) { /* an embedded child row: its parent-key columns are its parent's key cells */
            moraine_value pkey[MR_MAX_KEYCOLS];
            if (!km_ok && (rc = mr_child_keymap(r, mr_rel_by_name(rd->db, r->info.parent), &km))) break;
            km_ok = 1;
            if ((rc = mr_pick_cells(es[i].praw, es[i].plen, km.pcol, km.n, pkey))) break;
            if ((rc = mr_decode_child_cells(&p, es[i].raw + es[i].len, vals, r->info.ncols, &km, pkey))) break;
        } else if ((rc = mr_decode_cells(&p, es[i].raw + es[i].len, vals, r->info.ncols))) {
            break;
        }
        line.len = 0;
        rc = mr_json_row(&line, &r->info, vals, r->info.ncols, 0, 1); /* an export carries secrets exactly */
        if (rc == MORAINE_EINVAL) {
            char m[600];
            snprintf(m, sizeof m, "%s", moraine_errmsg());
            rc = mr_err(rc, "row %lld of %s", (long long)ord, m);
            break;
        }
        if (!rc) rc = mr_buf_byte(&line, '\n');
        if (!rc && fwrite(line.p, 1, line.len, f) != line.len) rc = mr_err(MORAINE_EIO, "%s: write failed", path);
    }
    mr_buf_free(&line);
    free(vals);
    if (!rc && n == 0) fputc('\n', f);
out:
    free(es);
    /* on the disk before it is renamed into place: a crash never leaves an empty or partial file at the final name */
    if (!rc && (fflush(f) != 0 || fsync(fileno(f)) != 0)) rc = mr_err(MORAINE_EIO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && !rc) rc = mr_err(MORAINE_EIO, "%s: write failed: %s", path, strerror(errno));
    (void)final;
    if (rc) remove(path);
    return rc;
}

int mr_export_complete(const char *dir)
{
    char mark[4096];
    snprintf(mark, sizeof mark, "%s/%s", dir, MR_EXPORT_INCOMPLETE);
    struct stat st;
    if (lstat(mark, &st) == 0)
        return mr_err(MORAINE_EINVAL, "%s: an export into it was killed while it renamed its tables (%s is there): they may be of two "
                      "exports; export the catalog into it again",
                      dir, MR_EXPORT_INCOMPLETE);
    return 0;
}

/* fsync of directory @dirfd: the names made, renamed or removed in it are on the disk */
static int sync_dir(int dirfd, const char *dir)
{
    if (fsync(dirfd) != 0) return mr_err(MORAINE_EIO, "%s: cannot sync the directory: %s", dir, strerror(errno));
    return 0;
}

/* Renames (@rename_them) or removes the <table>.ndjson.tmp files of the
 * first @n relations. The renames are bracketed by MR_EXPORT_INCOMPLETE in
 * @dir (@dirfd), made and synced before the first and removed after the last:
 * an export killed part way through them leaves it, and an import of @dir
 * refuses a directory holding it (its tables may be of two exports).
 * *@marked is set to 1 once the mark is made (before any rename). */
static int finish_export(moraine_db *db, const char *dir, int dirfd, size_t n, int rename_them, int *marked)
{
    int rc = 0;
    char mark[4096];
    snprintf(mark, sizeof mark, "%s/%s", dir, MR_EXPORT_INCOMPLETE);
    if (rename_them) {
        int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || fsync(fd) != 0) rc = mr_err(MORAINE_EIO, "%s: cannot write: %s", mark, strerror(errno));
        if (fd >= 0) close(fd);
        if (!rc) rc = sync_dir(dirfd, dir);
        if (rc) unlink(mark); /* not one rename made: the export failed whole, unmarked */
        else *marked = 1;
    }
    for (size_t i = 0; i < n; i++) {
        char tmp[4096], final[4096];
        snprintf(final, sizeof final, "%s/%s.ndjson", dir, db->rels[i]->info.name);
        snprintf(tmp, sizeof tmp, "%s/%s.ndjson.tmp", dir, db->rels[i]->info.name);
        if (rename_them && !rc && rename(tmp, final) != 0) rc = mr_err(MORAINE_EIO, "%s: cannot rename: %s", final, strerror(errno));
        else if (!rename_them) remove(tmp);
    }
    if (rename_them && !rc) {
        rc = sync_dir(dirfd, dir);
        if (!rc && unlink(mark) != 0) rc = mr_err(MORAINE_EIO, "%s: cannot remove: %s", mark, strerror(errno));
        if (!rc) rc = sync_dir(dirfd, dir);
    }
    return rc;
}

/* MORAINE_EEXIST when @dir holds a `<name>.ndjson` of a table @db does not
 * have: an import of the directory would read it beside the export's tables
 * (the export overwrites only the files of its own tables). */
static int stray_tables(moraine_db *db, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return mr_err(MORAINE_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 7 || strcmp(e->d_name + n - 7, ".ndjson") != 0) continue;
        int ours = 0;
        for (size_t i = 0; !ours && i < db->nrels; i++) {
            const char *name = db->rels[i]->info.name;
            ours = strlen(name) == n - 7 && memcmp(name, e->d_name, n - 7) == 0;
        }
        if (!ours)
            rc = mr_err(MORAINE_EEXIST, "%s holds %s, a table this catalog does not have, which an import of the directory would read: "
                        "export into an empty directory (or remove it)", dir, e->d_name);
    }
    closedir(d);
    return rc;
}

int moraine_export_ndjson(moraine_db *db, const char *dir, moraine_progress_fn progress, void *ud)
{
    if (!db || !dir) return mr_err(MORAINE_EINVAL, "moraine_export_ndjson: NULL argument");
    moraine_read *rd;
    int rc = moraine_read_begin(db, &rd);
    if (rc) return rc;
    /* an export holding encryption keys is as private as the store (docs/security.md) */
    uint64_t secrets = 0;
    rc = moraine_secret_count(rd, &secrets);
    struct stat st;
    int made = 0;
    if (!rc && stat(dir, &st) != 0) {
        if (mkdir(dir, secrets ? 0700 : 0775) != 0) rc = mr_err(MORAINE_EIO, "%s: cannot create directory: %s", dir, strerror(errno));
        else made = 1;
    } else if (!rc) {
        rc = stray_tables(db, dir);
    }
    /* one export into @dir at a time (flock of the directory, held to the
     * end): two at once would rename their files between each other's and
     * leave a mix of both; the second is refused before it writes anything */
    int dirfd = -1;
    if (!rc) {
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) rc = mr_err(MORAINE_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
        else if (flock(dirfd, LOCK_EX | LOCK_NB) != 0)
            rc = errno == EWOULDBLOCK ? mr_err(MORAINE_ECONFLICT, "%s: another export into it is running (it holds the directory's lock): "
                                                                  "run this one again once it has ended; nothing was written",
                                               dir)
                                      : mr_err(MORAINE_EIO, "%s: cannot lock the directory: %s", dir, strerror(errno));
    }
    if (rc) {
        if (dirfd >= 0) close(dirfd);
        if (made) rmdir(dir);
        moraine_read_end(rd);
        return rc;
    }
    size_t nrels = db->nrels, written = 0;
    /* every table goes to <table>.ndjson.tmp first; only when all are
     * written are they renamed into place, so a failed export (a value JSON
     * cannot carry, a full disk) leaves nothing of itself in @dir */
    for (size_t i = 0; !rc && i < nrels; i++) {
        rc = export_table(rd, db->rels[i], dir, secrets > 0);
        if (!rc) written = i + 1;
        if (!rc && progress && progress(ud, i + 1, nrels)) rc = mr_err(MORAINE_EINVAL, "export cancelled");
    }
    int renaming = 0; /* the mark is made: renames may have begun */
    if (!rc) rc = finish_export(db, dir, dirfd, written, 1, &renaming);
    if (rc && !renaming) {
        char m[1024];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        finish_export(db, dir, dirfd, written, 0, &renaming);
        if (made) rmdir(dir);
        rc = mr_err(rc, "%s (nothing was exported)", m);
    } else if (rc) {
        char m[1024];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        finish_export(db, dir, dirfd, written, 0, &renaming);
        rc = mr_err(rc, "%s (the export failed while it renamed its files: %s/%s marks the directory as a mix an import refuses; export again)", m,
                    dir, MR_EXPORT_INCOMPLETE);
    }
    close(dirfd); /* the lock with it */
    moraine_read_end(rd);
    return rc;
}
