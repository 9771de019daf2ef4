/*
 * compact.c — rewriting a catalog's store in key order (moraine_compact),
 * and telling whether another process has a catalog open
 * (moraine_open_elsewhere), which `moraine compact` checks before it swaps a
 * compacted copy in place of a catalog (bindings/moraine/compact.lua).
 *
 * A store that grew by many small commits has half-empty pages scattered
 * over the file (each commit copies the pages it touches, LMDB reuses freed
 * ones wherever they are) and free pages only LMDB's free list knows about.
 * Copying every key/value, in key order, into a new environment with
 * MDB_APPEND fills each leaf page before it starts the next, and the new
 * file has no free page: the smallest file the same rows can have in LMDB.
 */
#include "internal.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A write transaction on the copy holds about this many bytes of keys and
 * values: large batches (few commits), well below LMDB's dirty-page limit. */
#define BATCH_BYTES (64u << 20)

/* Removes what moraine_compact created at @dest (after a failure). */
static void remove_copy(const char *dest)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/data.mdb", dest);
    unlink(p);
    snprintf(p, sizeof p, "%s/lock.mdb", dest);
    unlink(p);
    rmdir(dest);
}

int mr_fsync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    if (r != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return r;
    }
    close(fd);
    return 0;
}

/* ---- the copy in format 5 ----
 * A catalog of format 2, 3 or 4 (docs/codec.md, Versioning) is rewritten as it
 * is copied: every record (a value under a C, H, S or R key, or a relation
 * descriptor under M "rel") whose version byte is not 5 is re-encoded by
 * mr_upgrade_value (its checksum verified first, a new one computed), and
 * the format marker says 5. Other entries (meta integers, counts) are the
 * same in every format and copied as they are, as is every record already
 * in format 5. */
typedef struct {
    mr_buf fmt_key, rel_prefix; /* M "format"; M "rel" followed by the id */
    mr_buf val;                 /* the re-encoded value */
    uint8_t marker[12];         /* the format marker's value */
    mr_bounds bounds;           /* the map: a value must lie inside it */
    moraine_db *db;             /* the catalog: its relations, for the child rows' column counts */
    int64_t from;               /* the catalog's format marker as the copy reads it (0: none) */
} upgrade;

/* Sets @u up for copying @db, read in @t: the keys it recognises, the
 * format-5 marker, the map's bounds and the catalog's marker (u->from).
 * Returns 0, MORAINE_ENOMEM, or the error reading the marker (ECORRUPT,
 * ELMDB); free with upgrade_free even on error. */
static int upgrade_init(upgrade *u, moraine_db *db, MDB_txn *t)
{
    memset(u, 0, sizeof *u);
    u->db = db;
    int rc = mr_meta_key(&u->fmt_key, "format");
    if (!rc) rc = mr_meta_key(&u->rel_prefix, "rel");
    if (rc) return rc;
    mr_int_encode(u->marker, u->fmt_key.p, u->fmt_key.len, MR_FORMAT_VERSION);
    mr_bounds_get(db, &u->bounds);
    rc = mr_meta_get_int(t, db->dbi, "format", &u->from);
    return rc < 0 ? rc : 0;
}

/* Frees what upgrade_init allocated. */
static void upgrade_free(upgrade *u)
{
    mr_buf_free(&u->fmt_key);
    mr_buf_free(&u->rel_prefix);
    mr_buf_free(&u->val);
}

/* @out: the value entry (@k, @v) has in the copy: the format-5 marker for
 * M "format"; a record (C, H, S, R, M "rel") whose version byte is not 5
 * rewritten by mr_upgrade_value into u->val (valid until the next call);
 * any other entry as it is. Returns 0, or MORAINE_ECORRUPT (the value lies
 * outside the map; it does not decode, named by its key), MORAINE_ENOMEM. */
static int upgrade_entry(upgrade *u, const MDB_val *k, const MDB_val *v, MDB_val *out)
{
    const uint8_t *key = k->mv_data;
    if (k->mv_size == u->fmt_key.len && memcmp(key, u->fmt_key.p, k->mv_size) == 0) {
        *out = (MDB_val){sizeof u->marker, u->marker};
        return 0;
    }
    int record = k->mv_size > 0 && (key[0] == MR_SUB_CURRENT || key[0] == MR_SUB_HISTORY || key[0] == MR_SUB_SNAPSHOT || key[0] == MR_SUB_ROWS);
    if (!record) record = k->mv_size > u->rel_prefix.len && memcmp(key, u->rel_prefix.p, u->rel_prefix.len) == 0;
    if (!record || v->mv_size == 0 || *(const uint8_t *)v->mv_data == MR_FORMAT_VERSION) return 0;
    if (!mr_value_ok(&u->bounds, v))
        return mr_err(MORAINE_ECORRUPT, "compact: a value of %zu bytes runs past the end of the file: LMDB's pages are damaged", v->mv_size);
    int rc = mr_upgrade_value(u->db, &u->val, v->mv_data, v->mv_size, key, k->mv_size);
    if (rc) {
        char m[600], kd[200];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        mr_key_describe(key, k->mv_size, kd, sizeof kd);
        if (u->from >= MR_FORMAT_OLDEST && u->from < MR_FORMAT_VERSION) /* this build cannot verify the catalog: say what can */
            return mr_err(rc, "compact: the value at key %s does not decode (rewriting the catalog from format %lld to %d): %s; "
                          "this build neither reads nor verifies format %lld: `moraine verify` of the moraine that wrote it lists "
                          "every damaged entry (repair them, or import the lake again), then compact", kd, (long long)u->from,
                          MR_FORMAT_VERSION, m, (long long)u->from);
        return mr_err(rc, "compact: the value at key %s does not decode (rewriting it in format %d): %s", kd, MR_FORMAT_VERSION, m);
    }
    *out = (MDB_val){u->val.len, u->val.p};
    return 0;
}

/* The copy itself: the destination environment @env is open, @rd the
 * source's read transaction. */
static int copy_keys(moraine_db *db, moraine_read *rd, MDB_env *env, const char *dest, uint64_t *copied, moraine_progress_fn progress,
                     void *ud)
{
    MDB_stat ms;
    int mrc = mdb_stat(rd->txn, db->dbi, &ms);
    if (mrc) return mr_lmdb_err(mrc, "compact: reading the catalog's entry count");
    uint64_t total = ms.ms_entries, n = 0;
    MDB_cursor *src;
    if ((mrc = mdb_cursor_open(rd->txn, db->dbi, &src))) return mr_lmdb_err(mrc, "compact: reading the catalog");
    MDB_val k, v;
    int rc = 0;
    upgrade up;
    if ((rc = upgrade_init(&up, db, rd->txn))) {
        upgrade_free(&up);
        mdb_cursor_close(src);
        return rc;
    }
    int get = mdb_cursor_get(src, &k, &v, MDB_FIRST);
    while (!rc && get == 0) {
        MDB_txn *w;
        MDB_dbi dbi;
        MDB_cursor *dst;
        if ((mrc = mdb_txn_begin(env, NULL, 0, &w))) {
            rc = mr_lmdb_err(mrc, dest);
            break;
        }
        if ((mrc = mdb_dbi_open(w, NULL, 0, &dbi)) || (mrc = mdb_cursor_open(w, dbi, &dst))) {
            mdb_txn_abort(w);
            rc = mr_lmdb_err(mrc, dest);
            break;
        }
        size_t bytes = 0;
        while (get == 0 && bytes < BATCH_BYTES) {
            MDB_val out = v;
            if ((rc = upgrade_entry(&up, &k, &v, &out))) break;
            if ((mrc = mdb_cursor_put(dst, &k, &out, MDB_APPEND))) {
                rc = mrc == MDB_KEYEXIST ? mr_err(MORAINE_ECORRUPT, "compact: the catalog's keys are out of order at entry %llu",
                                                  (unsigned long long)n + 1)
                                         : mr_lmdb_err(mrc, dest);
                break;
            }
            bytes += k.mv_size + v.mv_size;
            n++;
            if (progress && (n % 4096) == 0 && progress(ud, n, total)) {
                rc = mr_err(MORAINE_EINVAL, "compact cancelled");
                break;
            }
            get = mdb_cursor_get(src, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(dst);
        if (rc) {
            mdb_txn_abort(w);
            break;
        }
        if ((mrc = mdb_txn_commit(w))) rc = mr_lmdb_err(mrc, dest);
        /* the source pages walked so far are not read again: unmap them, so
         * the process's RSS stays near one batch, not the whole store (a
         * failure here costs memory only, never the copy) */
        (void)moraine_release_pages(db);
    }
    mdb_cursor_close(src);
    upgrade_free(&up);
    if (!rc && get != MDB_NOTFOUND) rc = mr_lmdb_err(get, "compact: reading the catalog");
    if (rc) return rc;
    if (n != total)
        return mr_err(MORAINE_ECORRUPT, "compact: the catalog counts %llu entries but %llu were read", (unsigned long long)total,
                      (unsigned long long)n);
    /* the copy holds as many entries as the source */
    MDB_txn *r;
    MDB_dbi dbi;
    if ((mrc = mdb_txn_begin(env, NULL, MDB_RDONLY, &r))) return mr_lmdb_err(mrc, dest);
    if (!(mrc = mdb_dbi_open(r, NULL, 0, &dbi))) mrc = mdb_stat(r, dbi, &ms);
    mdb_txn_abort(r);
    if (mrc) return mr_lmdb_err(mrc, dest);
    if (ms.ms_entries != n)
        return mr_err(MORAINE_ECORRUPT, "compact: %llu entries copied but the copy holds %llu", (unsigned long long)n,
                      (unsigned long long)ms.ms_entries);
    if (progress && progress(ud, n, total)) return mr_err(MORAINE_EINVAL, "compact cancelled");
    *copied = n;
    return 0;
}

/* @path gets @want's group and permission bits (the group first: changing it
 * can clear set-id bits). The copy's files are created with umask applied
 * and the process's group, so a catalog shared through its group (readers in
 * another account, e.g. nginx's workers, need lock.mdb writable) would lose
 * that after `moraine compact`. 0, or MORAINE_EIO naming @path and the group
 * or mode it cannot be given (a group the caller is not a member of: EPERM). */
static int same_access(const char *path, const struct stat *want)
{
    struct stat st;
    if (stat(path, &st) != 0) return mr_err(MORAINE_EIO, "compact: cannot stat %s: %s", path, strerror(errno));
    if (st.st_gid != want->st_gid && chown(path, (uid_t)-1, want->st_gid) != 0)
        return mr_err(MORAINE_EIO, "compact: cannot give %s the catalog's group (gid %lu): %s", path, (unsigned long)want->st_gid,
                      strerror(errno));
    if (chmod(path, want->st_mode & 07777) != 0)
        return mr_err(MORAINE_EIO, "compact: cannot set the mode of %s: %s", path, strerror(errno));
    return 0;
}

/* The copy's directory, data.mdb and lock.mdb get the source's group and
 * modes (same_access); a source without lock.mdb (a read-only medium) gives
 * the copy's lock.mdb data.mdb's. */
static int copy_access(const char *src_dir, const char *dest, const struct stat *dir_st, const struct stat *data_st)
{
    char s[4096], d[4096];
    struct stat lock_st;
    snprintf(s, sizeof s, "%s/lock.mdb", src_dir);
    if (stat(s, &lock_st) != 0) lock_st = *data_st;
    snprintf(d, sizeof d, "%s/data.mdb", dest);
    int rc = same_access(d, data_st);
    snprintf(d, sizeof d, "%s/lock.mdb", dest);
    if (!rc) rc = same_access(d, &lock_st);
    return rc ? rc : same_access(dest, dir_st);
}

int moraine_compact(moraine_db *db, const char *dest, moraine_compact_info *info, moraine_progress_fn progress, void *ud)
{
    if (!db || !dest || !*dest) return mr_err(MORAINE_EINVAL, "moraine_compact: NULL catalog or destination");
    int rc = mr_same_process(db);
    if (rc) return rc;
    const char *src_dir;
    int mrc = mdb_env_get_path(db->env, &src_dir);
    if (mrc) return mr_lmdb_err(mrc, "compact");
    char src_data[4096];
    struct stat dst_st, src_st, dir_st;
    if (snprintf(src_data, sizeof src_data, "%s/data.mdb", src_dir) >= (int)sizeof src_data || stat(src_data, &src_st) != 0 ||
        stat(src_dir, &dir_st) != 0)
        return mr_err(MORAINE_EIO, "compact: cannot stat the catalog at %s: %s", src_dir, strerror(errno));
    if (stat(dest, &dst_st) == 0 || errno != ENOENT)
        return mr_err(MORAINE_EEXIST, "compact: %s already exists: the copy goes to a new directory", dest);
    /* the copy is as private as the catalog: its directory's and data.mdb's modes */
    if (mkdir(dest, dir_st.st_mode & 07777) != 0)
        return mr_err(MORAINE_EIO, "compact: cannot create directory %s: %s", dest, strerror(errno));
    if (chmod(dest, dir_st.st_mode & 07777) != 0) {
        rc = mr_err(MORAINE_EIO, "compact: cannot set the mode of %s: %s", dest, strerror(errno));
        rmdir(dest);
        return rc;
    }
    MDB_envinfo ei;
    if ((mrc = mr_env_info(db, &ei))) {
        rmdir(dest);
        return mr_lmdb_err(mrc, "compact");
    }
    MDB_env *env = NULL;
    /* keys in order fill pages: the copy is never larger than the source's
     * pages in use; twice its map leaves room for the branch pages */
    size_t map = ei.me_mapsize * 2;
    if (map < (size_t)src_st.st_size * 2) map = (size_t)src_st.st_size * 2;
    if (!(mrc = mdb_env_create(&env)) && !(mrc = mdb_env_set_mapsize(env, map)))
        mrc = mdb_env_open(env, dest, MDB_NOTLS | MDB_NOSYNC, src_st.st_mode & 0666);
    if (mrc) {
        rc = mr_lmdb_err(mrc, dest);
        if (env) mdb_env_close(env);
        remove_copy(dest);
        return rc;
    }
    moraine_read *rd = NULL;
    uint64_t n = 0;
    rc = mr_read_begin(db, &rd); /* an older format's catalog too: the copy is its upgrade */
    if (!rc) {
        if (info) info->txnid = (uint64_t)mdb_txn_id(rd->txn);
        rc = copy_keys(db, rd, env, dest, &n, progress, ud);
        moraine_read_end(rd);
    }
    /* written with MDB_NOSYNC: one sync of the whole file at the end */
    if (!rc && (mrc = mdb_env_sync(env, 1))) rc = mr_lmdb_err(mrc, dest);
    mdb_env_close(env);
    char dest_data[4096];
    snprintf(dest_data, sizeof dest_data, "%s/data.mdb", dest);
    if (!rc) rc = copy_access(src_dir, dest, &dir_st, &src_st);
    if (!rc && (mr_fsync_path(dest_data, 0) != 0 || mr_fsync_path(dest, 1) != 0))
        rc = mr_err(MORAINE_EIO, "compact: cannot sync %s: %s", dest, strerror(errno));
    if (!rc && stat(dest_data, &dst_st) != 0) rc = mr_err(MORAINE_EIO, "compact: cannot stat %s: %s", dest_data, strerror(errno));
    if (rc) {
        remove_copy(dest);
        return rc;
    }
    if (info) {
        info->entries = n;
        info->src_bytes = (uint64_t)src_st.st_size;
        info->dest_bytes = (uint64_t)dst_st.st_size;
    }
    return 0;
}

int moraine_open_elsewhere(moraine_db *db, long *pid)
{
    if (!db) return mr_err(MORAINE_EINVAL, "moraine_open_elsewhere: NULL catalog");
    int rc = mr_same_process(db);
    if (rc) return rc;
    if (pid) *pid = 0;
    /* LMDB's own descriptor of lock.mdb: found among the process's open
     * files by the name the kernel gives it now (the catalog may have been
     * renamed since it was opened: `moraine compact` asks right after its
     * swap), next to data.mdb's. Opening the file again and closing it would
     * drop the locks this process holds on it (POSIX record locks belong to
     * the process). */
    int dfd;
    int mrc = mdb_env_get_fd(db->env, &dfd);
    if (mrc) return mr_lmdb_err(mrc, "open_elsewhere");
    char link[64], lock[4096], name[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dfd);
    ssize_t len = readlink(link, lock, sizeof lock - 1);
    if (len < 0)
        return mr_err(MORAINE_EIO, "cannot read %s: %s (moraine tells other processes apart on Linux only)", link, strerror(errno));
    lock[len] = '\0';
    char *slash = strrchr(lock, '/');
    if (!slash || (size_t)(slash - lock) + sizeof "/lock.mdb" > sizeof lock)
        return mr_err(MORAINE_EIO, "%s: unexpected name of the catalog's data file", lock);
    strcpy(slash, "/lock.mdb");
    DIR *d = opendir("/proc/self/fd");
    if (!d) return mr_err(MORAINE_EIO, "cannot list /proc/self/fd: %s (moraine tells other processes apart on Linux only)", strerror(errno));
    int fd = -1;
    for (struct dirent *e; fd < 0 && (e = readdir(d));) {
        char *end;
        long n = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || n == dirfd(d)) continue;
        snprintf(link, sizeof link, "/proc/self/fd/%ld", n);
        len = readlink(link, name, sizeof name - 1);
        if (len < 0) continue;
        name[len] = '\0';
        if (strcmp(name, lock) == 0) fd = (int)n;
    }
    closedir(d);
    if (fd < 0) return mr_err(MORAINE_EIO, "%s: LMDB's descriptor of the lock file was not found", lock);
    /* Every process that has the environment open holds a shared lock on
     * byte 0 of lock.mdb (LMDB's mdb_env_setup_locks); asking whether an
     * exclusive lock could be taken finds another process's (never this
     * process's own, which cannot conflict with itself). */
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = 1;
    if (fcntl(fd, F_GETLK, &fl) != 0) return mr_err(MORAINE_EIO, "%s: cannot query its locks: %s", lock, strerror(errno));
    if (fl.l_type == F_UNLCK) return 0;
    if (pid) *pid = (long)fl.l_pid;
    return 1;
}

int moraine_last_txnid(moraine_db *db, uint64_t *out)
{
    if (!db || !out) return mr_err(MORAINE_EINVAL, "moraine_last_txnid: NULL argument");
    int rc = mr_same_process(db);
    if (rc) return rc;
    MDB_envinfo ei;
    int mrc = mr_env_info(db, &ei);
    if (mrc) return mr_lmdb_err(mrc, "reading the last transaction id");
    *out = (uint64_t)ei.me_last_txnid;
    return 0;
}
