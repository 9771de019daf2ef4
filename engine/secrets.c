/*
 * secrets.c — key material in a catalog and the privacy of the store on disk
 * (docs/security.md). Which columns are secret is decided once, in tables.c
 * (MORAINE_COL_SECRET); json.c redacts them when rows are rendered; this file
 * counts the secrets a catalog holds and reports the modes of its files.
 */
#include "internal.h"
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int moraine_secret_count(moraine_read *rd, uint64_t *out)
{
    if (!rd || !out) return mr_err(MORAINE_EINVAL, "moraine_secret_count: NULL argument");
    uint64_t n = 0;
    moraine_relation_info info;
    for (size_t i = 0; moraine_relation_at(rd->db, i, &info) == 1; i++) {
        int any = 0;
        for (size_t k = 0; k < info.ncols; k++) any |= info.colflags && (info.colflags[k] & MORAINE_COL_SECRET);
        if (!any) continue;
        moraine_cursor *c = NULL;
        int rc = moraine_scan_open(rd, info.name, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c);
        moraine_row row;
        while (!rc && (rc = moraine_cursor_next(c, &row)) == 1) {
            rc = 0;
            for (size_t k = 0; k < row.ncols && k < info.ncols; k++)
                if ((info.colflags[k] & MORAINE_COL_SECRET) && row.vals[k].type != MORAINE_NULL) n++;
        }
        if (c) moraine_cursor_close(c);
        if (rc < 0) return rc;
    }
    *out = n;
    return 0;
}

static int mode_of(const char *path, unsigned *out)
{
    struct stat st;
    if (stat(path, &st) != 0) return mr_err(MORAINE_EIO, "%s: cannot stat: %s", path, strerror(errno));
    *out = (unsigned)(st.st_mode & 07777);
    return 0;
}

int moraine_store_access_get(moraine_db *db, moraine_store_access *out)
{
    if (!db || !out) return mr_err(MORAINE_EINVAL, "moraine_store_access_get: NULL argument");
    const char *dir = NULL;
    if (mdb_env_get_path(db->env, &dir) || !dir) return mr_err(MORAINE_EIO, "the catalog's path is not known");
    char path[4096];
    int rc = mode_of(dir, &out->dir_mode);
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (!rc) rc = mode_of(path, &out->data_mode);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    if (!rc) rc = mode_of(path, &out->lock_mode);
    if (rc) return rc;
    out->exposed = (out->data_mode & 044) != 0;
    return 0;
}

/* Whether @a (a stat(2) result) is the file @path names; 0 when @path cannot be stat'ed. */
static int same_as(const struct stat *a, const char *path)
{
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int moraine_path_in_catalog(moraine_db *db, const char *path, int *inside)
{
    if (!db || !path || !inside) return mr_err(MORAINE_EINVAL, "moraine_path_in_catalog: NULL argument");
    if (!*path) return mr_err(MORAINE_EINVAL, "moraine_path_in_catalog: empty path");
    *inside = 0;
    const char *dir = NULL;
    if (mdb_env_get_path(db->env, &dir) || !dir) return mr_err(MORAINE_EIO, "the catalog's path is not known");
    struct stat d;
    if (stat(dir, &d) != 0) return mr_err(MORAINE_EIO, "%s: cannot stat: %s", dir, strerror(errno));
    struct stat p;
    if (stat(path, &p) == 0) {
        char f[4200];
        if (p.st_dev == d.st_dev && p.st_ino == d.st_ino) *inside = 1;
        snprintf(f, sizeof f, "%s/data.mdb", dir);
        if (same_as(&p, f)) *inside = 1;
        snprintf(f, sizeof f, "%s/lock.mdb", dir);
        if (same_as(&p, f)) *inside = 1;
        if (*inside) return 0;
    }
    /* the parent directory: @path up to its last name (trailing slashes dropped) */
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    while (n > 0 && path[n - 1] != '/') n--;
    char *parent = n == 0 ? strdup(".") : strndup(path, n);
    if (!parent) return mr_err(MORAINE_ENOMEM, "out of memory");
    *inside = same_as(&d, parent);
    free(parent);
    return 0;
}
