/*
 * verify.c — the keyspace's invariants checked end to end (moraine_verify),
 * and its size per subspace and table (moraine_stats). Both walk every key
 * once in one read transaction.
 */
#include "internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    moraine_db *db;
    moraine_verify_fn report;
    void *ud;
    int count;
    char key[256];
    char *where; /* shared with the parent of moraine_verify_path: the key being checked */
    MDB_txn *txn;      /* the walk's read transaction: the ord counters */
    int64_t *next_ord; /* by relation id: its M "ord:<id>" counter, -1 none, -2 not read yet */
    size_t nnext;
} vstate;

/* The ord counter of relation @id (M "ord:<id>", the position the next row
 * appended takes: every row's ord lies below it), read once; -1 when there
 * is none or it does not read (reported where the walk meets it). */
static int64_t next_ord(vstate *v, uint32_t id)
{
    if (id >= v->nnext) {
        size_t n = (size_t)id + 16;
        int64_t *p = realloc(v->next_ord, n * sizeof *p);
        if (!p) return -1;
        for (size_t i = v->nnext; i < n; i++) p[i] = -2;
        v->next_ord = p;
        v->nnext = n;
    }
    if (v->next_ord[id] == -2) {
        char name[16];
        int64_t n = -1;
        v->next_ord[id] = mr_meta_get_int_stored(v->txn, v->db->dbi, mr_ord_name(name, id), &n) == 1 && n >= 0 ? n : -1;
    }
    return v->next_ord[id];
}

#define WHERE_LEN 256

static void violation(vstate *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(vstate *v, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->count++;
    if (v->report) v->report(v->ud, v->key, msg);
}

/* table_id -> live spec count, for partition_info and sort_info */
typedef struct {
    int64_t table_id;
    uint32_t rel;
    int n;
} livecount;

/* Compares the entries found in each counted key range with the catalog's
 * count of it (both maps sorted by range). */
static void count_ranges(vstate *v, const mr_counts *met, const mr_counts *stored)
{
    size_t i = 0, j = 0;
    while (i < met->n || j < stored->n) {
        int c;
        if (i == met->n) c = 1;
        else if (j == stored->n) c = -1;
        else {
            size_t m = met->v[i].len < stored->v[j].len ? met->v[i].len : stored->v[j].len;
            c = memcmp(met->v[i].key, stored->v[j].key, m);
            if (!c) c = (met->v[i].len > stored->v[j].len) - (met->v[i].len < stored->v[j].len);
        }
        const mr_count_ent *e = c <= 0 ? &met->v[i] : &stored->v[j];
        int64_t found = c <= 0 ? met->v[i].n : 0, counted = c >= 0 ? stored->v[j].n : 0;
        if (found != counted) {
            mr_key_describe(e->key, e->len, v->key, sizeof v->key);
            violation(v, "the range holds %lld entries where the catalog counted %lld: a key in or near it is damaged", (long long)found,
                      (long long)counted);
        }
        if (c <= 0) i++;
        if (c >= 0) j++;
    }
}

/* Checks the embedded children of a parent row. */
static void check_children(vstate *v, mr_rel *parent, const moraine_value *pvals, const uint8_t *p, const uint8_t *end, moraine_value **buf, size_t *cap)
{
    while (p < end) {
        uint64_t id, nrows;
        const uint8_t *gend;
        if (mr_group_head(&p, end, &id, &nrows, &gend)) {
            violation(v, "%s: embedded child group is damaged", parent->info.name);
            return;
        }
        mr_rel *c = mr_rel_by_id(v->db, id);
        if (!c || c->info.placement != MORAINE_PLACE_CHILD || !c->info.parent || strcmp(c->info.parent, parent->info.name) != 0) {
            violation(v, "%s: embeds rows of table id %llu, which is not one of its child tables", parent->info.name, (unsigned long long)id);
            p = gend;
            continue;
        }
        if (*cap < c->info.ncols) {
            moraine_value *nb = realloc(*buf, c->info.ncols * sizeof *nb);
            if (!nb) return;
            *buf = nb;
            *cap = c->info.ncols;
        }
        /* the parent's key cells, which its child rows leave out (store format 5) */
        mr_keymap km;
        moraine_value pkey[MR_MAX_KEYCOLS];
        if (mr_child_keymap(c, parent, &km)) {
            violation(v, "%s: embeds rows of %s, whose parent-key columns do not pair with its key", parent->info.name, c->info.name);
            p = gend;
            continue;
        }
        for (int k = 0; k < km.n; k++) pkey[k] = pvals[km.pcol[k]];
        int64_t prev = 0, lim = next_ord(v, c->info.id);
        for (uint64_t r = 0; r < nrows; r++) {
            uint64_t dord; /* the ord's difference from the row before */
            const uint8_t *rend;
            if (mr_child_row_span(&p, gend, &rend) || mr_get_uvarint(&p, rend, &dord) || mr_decode_child_cells(&p, rend, *buf, c->info.ncols, &km, pkey)) {
                violation(v, "%s: embedded %s row %llu does not decode", parent->info.name, c->info.name, (unsigned long long)r);
                break;
            }
            /* every ord a commit gives is >= 0 and below the table's counter:
             * one outside says a damaged difference (this row's or one before it) */
            int64_t ord = mr_child_ord(prev, dord);
            prev = ord;
            if (ord < 0 || (lim >= 0 && ord >= lim))
                violation(v, "%s: embedded %s row %llu is at position %lld, outside 0 .. %lld (the table's next position): its ord "
                          "difference, or one before it, is damaged", parent->info.name, c->info.name, (unsigned long long)r, (long long)ord,
                          lim >= 0 ? (long long)lim - 1 : (long long)INT64_MAX);
            if (p != rend) {
                violation(v, "%s: embedded %s row %llu is %lld bytes shorter than its length", parent->info.name, c->info.name,
                          (unsigned long long)r, (long long)(rend - p));
                p = rend;
            }
        }
        if (p != gend) violation(v, "%s: embedded %s group has %lld stray bytes", parent->info.name, c->info.name, (long long)(gend - p));
        p = gend;
    }
}

static int verify(moraine_db *db, moraine_verify_fn report, void *ud, moraine_progress_fn progress, void *pud, char *where)
{
    moraine_read *rd;
    int rc = moraine_read_begin(db, &rd);
    if (rc) return rc;
    vstate v = {db, report, ud, 0, "", where, rd->txn, NULL, 0};
    int64_t last = INT64_MIN;
    int have_last = mr_meta_get_int_stored(rd->txn, db->dbi, "last_snapshot", &last);
    MDB_stat ms;
    mdb_stat(rd->txn, db->dbi, &ms);
    MDB_cursor *c;
    int mrc = mdb_cursor_open(rd->txn, db->dbi, &c);
    if (mrc) {
        moraine_read_end(rd);
        return mr_lmdb_err(mrc, "verify");
    }
    moraine_value *vals = NULL, *kids = NULL;
    size_t cap = 0, kcap = 0;
    livecount *lc = NULL;
    size_t nlc = 0;
    mr_buf kb = {0}, scratch = {0};
    uint64_t done = 0;
    int have_format = 0, stopped = 0;
    mr_counts met = {0}, stored = {0}; /* entries per counted range: found, and as the catalog counted them */
    MDB_val k, val;
    char prevkey[sizeof v.key]; /* the last key that was not empty, described */
    prevkey[0] = 0;
    for (mrc = mdb_cursor_get(c, &k, &val, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(c, &k, &val, MDB_NEXT)) {
        done++;
        if (progress && done % 4096 == 0 && progress(pud, done, ms.ms_entries)) {
            rc = mr_err(MORAINE_EINVAL, "verify cancelled");
            break;
        }
        /* the pages walked are not read again: unmap them now and then, so
         * verifying a large store does not make the process's RSS as large
         * (a failure costs memory only) */
        if (done % 65536 == 0) (void)moraine_release_pages(db);
        if (!mr_value_ok(&rd->bounds, &k) || !mr_value_ok(&rd->bounds, &val)) {
            char prev[sizeof v.key];
            snprintf(prev, sizeof prev, "%s", v.key[0] ? v.key : "the start");
            snprintf(v.key, sizeof v.key, "(after %.200s)", prev);
            violation(&v, "a key or value runs past the end of the file: LMDB's pages are damaged; the walk stops here");
            stopped = 1;
            break;
        }
        const uint8_t *kp = k.mv_data, *kend = kp + k.mv_size;
        if (k.mv_size == 0) {
            /* (a damaged page): located by the key before it */
            snprintf(v.key, sizeof v.key, "(empty key, after %.200s)", prevkey[0] ? prevkey : "the start");
            if (where) memcpy(where, v.key, WHERE_LEN);
            violation(&v, "empty key");
            continue;
        }
        mr_key_describe(kp, k.mv_size, v.key, sizeof v.key);
        memcpy(prevkey, v.key, sizeof prevkey);
        if (where) memcpy(where, v.key, WHERE_LEN);
        uint8_t sub = *kp++;
        if (sub == MR_SUB_META) {
            moraine_value name = {0};
            if (mr_key_next(&kp, kend, &name, &scratch) == 0 && name.type == MORAINE_STR && name.len == 6 && memcmp(name.s, "format", 6) == 0) have_format = 1;
            int is_rel = name.type == MORAINE_STR && name.len == 3 && memcmp(name.s, "rel", 3) == 0 && kp < kend;
            int64_t iv;
            if (is_rel) {
                const uint8_t *p = val.mv_data;
                if (mr_decode_header(&p, p + val.mv_size, k.mv_data, k.mv_size)) violation(&v, "table descriptor: %s", moraine_errmsg());
            } else if (mr_int_get_stored(rd->txn, db->dbi, k.mv_data, k.mv_size, &iv) < 0) {
                violation(&v, "%s", moraine_errmsg());
            }
            continue;
        }
        if (sub == MR_SUB_COUNT) {
            int64_t n = 0;
            if (mr_int_get_stored(rd->txn, db->dbi, k.mv_data, k.mv_size, &n) < 0) violation(&v, "%s", moraine_errmsg());
            else if (n <= 0) violation(&v, "entry count %lld is not positive", (long long)n);
            else if ((rc = mr_counts_add(&stored, (const uint8_t *)k.mv_data + 1, k.mv_size - 1, n))) break;
            continue;
        }
        if (sub != MR_SUB_CURRENT && sub != MR_SUB_HISTORY && sub != MR_SUB_SNAPSHOT && sub != MR_SUB_ROWS) {
            violation(&v, "key of unknown subspace 0x%02x", sub);
            continue;
        }
        mr_rel *r = NULL;
        moraine_value idv;
        if (sub == MR_SUB_SNAPSHOT) {
            r = mr_rel_by_name(db, "ducklake_snapshot");
        } else if (mr_key_next(&kp, kend, &idv, &scratch) == 0 && idv.type == MORAINE_INT) {
            r = mr_rel_by_id(db, (uint64_t)idv.i);
        }
        if (!r) {
            violation(&v, "key of an unknown table");
            continue;
        }
        size_t pl = mr_count_prefix(r->scoped, k.mv_data, k.mv_size);
        if (pl && (rc = mr_counts_add(&met, k.mv_data, pl, 1))) break;
        if (cap < r->info.ncols) {
            moraine_value *nb = realloc(vals, r->info.ncols * sizeof *nb);
            if (!nb) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            vals = nb;
            cap = r->info.ncols;
        }
        const uint8_t *p = val.mv_data, *end = p + val.mv_size;
        int64_t ord;
        size_t n;
        if (mr_decode_header(&p, end, k.mv_data, k.mv_size) || mr_decode_row(&p, end, &ord, vals, r->info.ncols, &n)) {
            violation(&v, "%s: stored value does not decode: %s", r->info.name, moraine_errmsg());
            continue;
        }
        if (n != r->info.ncols) {
            violation(&v, "%s: stored value has %zu columns, the table has %zu", r->info.name, n, r->info.ncols);
            continue;
        }
        if (mr_check_value(r, vals, n, ord)) violation(&v, "%s", moraine_errmsg());
        kb.len = 0;
        switch (sub) {
        case MR_SUB_CURRENT:
            if (r->info.placement != MORAINE_PLACE_TEMPORAL) {
                violation(&v, "%s is not a temporal table but has a row in current", r->info.name);
                break;
            }
            if (vals[r->info.end_col].type != MORAINE_NULL) violation(&v, "%s: a row in current has end_snapshot set", r->info.name);
            if (vals[r->info.begin_col].type != MORAINE_INT) violation(&v, "%s: begin_snapshot is not an integer", r->info.name);
            else if (have_last == 1 && vals[r->info.begin_col].i > last)
                violation(&v, "%s: begin_snapshot %lld is above the last snapshot %lld", r->info.name, (long long)vals[r->info.begin_col].i, (long long)last);
            if (mr_current_key(&kb, r, vals, ord) == 0 && (kb.len != k.mv_size || memcmp(kb.p, k.mv_data, kb.len) != 0))
                violation(&v, "%s: the row's values give another key", r->info.name);
            if (strcmp(r->info.name, "ducklake_partition_info") == 0 || strcmp(r->info.name, "ducklake_sort_info") == 0) {
                int64_t tid = vals[r->keycols[0]].type == MORAINE_INT ? vals[r->keycols[0]].i : INT64_MIN;
                size_t i = 0;
                while (i < nlc && !(lc[i].table_id == tid && lc[i].rel == r->info.id)) i++;
                if (i == nlc) {
                    livecount *nl = realloc(lc, (nlc + 1) * sizeof *nl);
                    if (nl) {
                        lc = nl;
                        lc[nlc++] = (livecount){tid, r->info.id, 0};
                    }
                }
                if (i < nlc && ++lc[i].n == 2)
                    violation(&v, "%s: table %lld has more than one live spec", r->info.name, (long long)tid);
            }
            check_children(&v, r, vals, p, end, &kids, &kcap);
            break;
        case MR_SUB_HISTORY: {
            if (r->info.placement != MORAINE_PLACE_TEMPORAL) {
                violation(&v, "%s is not a temporal table but has a row in history", r->info.name);
                break;
            }
            const moraine_value *b = &vals[r->info.begin_col], *e = &vals[r->info.end_col];
            if (b->type != MORAINE_INT || e->type != MORAINE_INT) violation(&v, "%s: a history row needs begin_snapshot and end_snapshot", r->info.name);
            else if (e->i < b->i) violation(&v, "%s: end_snapshot %lld is below begin_snapshot %lld", r->info.name, (long long)e->i, (long long)b->i);
            if (mr_history_key(&kb, r, vals, ord) == 0 && (kb.len != k.mv_size || memcmp(kb.p, k.mv_data, kb.len) != 0))
                violation(&v, "%s: the row's values give another key", r->info.name);
            check_children(&v, r, vals, p, end, &kids, &kcap);
            break;
        }
        case MR_SUB_SNAPSHOT: {
            int ic = moraine_column_index(&r->info, "snapshot_id");
            if (ic < 0 || vals[ic].type != MORAINE_INT || mr_snapshot_key(&kb, vals[ic].i) || kb.len != k.mv_size || memcmp(kb.p, k.mv_data, kb.len) != 0)
                violation(&v, "ducklake_snapshot: a row is not under its own snapshot_id");
            else if (have_last != 1 || vals[ic].i > last)
                violation(&v, "ducklake_snapshot: snapshot %lld is above the last committed snapshot", (long long)vals[ic].i);
            check_children(&v, r, vals, p, end, &kids, &kcap);
            break;
        }
        case MR_SUB_ROWS:
            if (mr_rows_key(&kb, r, ord) == 0 && (kb.len != k.mv_size || memcmp(kb.p, k.mv_data, kb.len) != 0))
                violation(&v, "%s: the row's position %lld differs from its key", r->info.name, (long long)ord);
            if (p != end) violation(&v, "%s: a row of a non-temporal table has %lld trailing bytes", r->info.name, (long long)(end - p));
            break;
        }
    }
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = mr_lmdb_err(mrc, "verify");
    if (!rc && !stopped) count_ranges(&v, &met, &stored);
    /* the last snapshot is one a verb can build on: its ducklake_snapshot row exists */
    mr_rel *sr = mr_rel_by_name(db, "ducklake_snapshot");
    if (!rc && !stopped && have_last == 1 && sr && sr->info.ncols > 0) {
        MDB_val sk, sv;
        if (mr_snapshot_key(&kb, last) == 0) {
            sk.mv_size = kb.len;
            sk.mv_data = kb.p;
            if (mdb_get(rd->txn, db->dbi, &sk, &sv) == MDB_NOTFOUND) {
                snprintf(v.key, sizeof v.key, "M('last_snapshot')");
                violation(&v, "the last snapshot %lld has no ducklake_snapshot row: no verb can build on it", (long long)last);
            }
        }
    }
    mr_counts_free(&met);
    mr_counts_free(&stored);
    if (!rc && !stopped && !have_format && ms.ms_entries) {
        snprintf(v.key, sizeof v.key, "M('format')");
        violation(&v, "the catalog has no format marker");
    }
    if (progress && !rc) progress(pud, done, ms.ms_entries);
    mdb_cursor_close(c);
    free(vals);
    free(kids);
    free(lc);
    free(v.next_ord);
    mr_buf_free(&kb);
    mr_buf_free(&scratch);
    moraine_read_end(rd);
    return rc ? rc : v.count;
}

int moraine_verify(moraine_db *db, moraine_verify_fn report, void *ud, moraine_progress_fn progress, void *pud)
{
    return verify(db, report, ud, progress, pud, NULL);
}

/* ---- verify in a child process ---- */

/* Records the child sends: a type byte, a 4-byte length, the payload. */
static int send_rec(int fd, char type, const void *p, uint32_t n)
{
    uint8_t h[5] = {(uint8_t)type, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    return write(fd, h, 5) == 5 && (n == 0 || write(fd, p, n) == (ssize_t)n) ? 0 : -1;
}

static int read_full(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

typedef struct {
    int fd;
} child_out;

static void child_report(void *ud, const char *key, const char *problem)
{
    child_out *o = ud;
    char buf[1400];
    int n = snprintf(buf, sizeof buf, "%s%c%s", key ? key : "", 0, problem ? problem : "");
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    send_rec(o->fd, 'V', buf, (uint32_t)n + 1);
}

static int child_progress(void *ud, uint64_t done, uint64_t total)
{
    child_out *o = ud;
    uint64_t b[2] = {done, total};
    return send_rec(o->fd, 'P', b, sizeof b) ? 1 : 0;
}

int moraine_verify_path(const char *path, moraine_verify_fn report, void *ud, moraine_progress_fn progress, void *pud)
{
    if (!path) return mr_err(MORAINE_EINVAL, "moraine_verify_path: NULL path");
    char *where = mmap(NULL, WHERE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (where == MAP_FAILED) return mr_err(MORAINE_ENOMEM, "cannot map a page to share with the verify process: %s", strerror(errno));
    memset(where, 0, WHERE_LEN);
    int fd[2];
    if (pipe(fd) != 0) {
        munmap(where, WHERE_LEN);
        return mr_err(MORAINE_EIO, "cannot make a pipe for the verify process: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        munmap(where, WHERE_LEN);
        return mr_err(MORAINE_EIO, "cannot start the verify process: %s", strerror(errno));
    }
    if (pid == 0) {
        /* the child: open, walk, report; _exit (no atexit handlers of the parent) */
        close(fd[0]);
        signal(SIGPIPE, SIG_IGN);
        /* everything the parent learns comes over the pipe; what a fault
         * inside LMDB prints (a sanitizer's report) would only be noise */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, STDERR_FILENO);
            close(devnull);
        }
        child_out o = {fd[1]};
        moraine_options opt = {.read_only = 1};
        moraine_db *db;
        int rc = moraine_open(path, &opt, &db);
        if (!rc) {
            rc = verify(db, child_report, &o, progress ? child_progress : NULL, &o, where);
            moraine_close(db);
        }
        if (rc < 0) {
            const char *m = moraine_errmsg();
            char buf[1100];
            int32_t code = rc;
            memcpy(buf, &code, 4);
            size_t n = strlen(m) > 1000 ? 1000 : strlen(m);
            memcpy(buf + 4, m, n);
            send_rec(fd[1], 'E', buf, (uint32_t)(n + 4));
        } else {
            int32_t count = rc;
            send_rec(fd[1], 'D', &count, 4);
        }
        _exit(0);
    }
    close(fd[1]);
    int rc = 0, finished = 0, cancelled = 0;
    char *buf = malloc(1 << 16);
    if (!buf) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    int count = 0;
    uint8_t h[5];
    while (!rc && !finished && read_full(fd[0], h, 5) == 0) {
        uint32_t n = (uint32_t)h[1] | (uint32_t)h[2] << 8 | (uint32_t)h[3] << 16 | (uint32_t)h[4] << 24;
        if (n >= (1 << 16) || read_full(fd[0], buf, n) != 0) break;
        buf[n] = 0;
        switch (h[0]) {
        case 'V':
            count++;
            if (report) report(ud, buf, buf + strlen(buf) + 1);
            break;
        case 'P': {
            uint64_t b[2];
            memcpy(b, buf, sizeof b);
            if (progress && progress(pud, b[0], b[1])) {
                cancelled = 1;
                kill(pid, SIGKILL);
                rc = mr_err(MORAINE_EINVAL, "verify cancelled");
            }
            break;
        }
        case 'E': {
            int32_t code;
            memcpy(&code, buf, 4);
            rc = mr_err(code, "%s", buf + 4);
            finished = 1;
            break;
        }
        case 'D': finished = 1; break;
        }
    }
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!rc && !cancelled && !finished) {
        char key[WHERE_LEN + 16];
        snprintf(key, sizeof key, "(at %.*s)", WHERE_LEN - 1, where[0] ? where : "the start");
        char problem[400];
        char how[80];
        if (WIFSIGNALED(st)) snprintf(how, sizeof how, "of signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        else snprintf(how, sizeof how, "with exit status %d (a sanitizer's fault handler)", WIFEXITED(st) ? WEXITSTATUS(st) : st);
        snprintf(problem, sizeof problem,
                 "the walk died %s inside LMDB at or after this key: LMDB's own pages are damaged there (they carry no checksum); "
                 "export what reads and re-import, or restore a backup",
                 how);
        count++;
        if (report) report(ud, key, problem);
    }
    free(buf);
    munmap(where, WHERE_LEN);
    return rc ? rc : count;
}

int moraine_stats(moraine_db *db, void (*fn)(void *ud, const moraine_stat *st), void *ud)
{
    moraine_read *rd;
    int rc = moraine_read_begin(db, &rd);
    if (rc) return rc;
    MDB_cursor *c;
    int mrc = mdb_cursor_open(rd->txn, db->dbi, &c);
    if (mrc) {
        moraine_read_end(rd);
        return mr_lmdb_err(mrc, "stats");
    }
    moraine_stat cur = {0};
    int64_t cur_id = -2;
    uint64_t walked = 0;
    mr_buf scratch = {0};
    MDB_val k, v;
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        const uint8_t *kp = k.mv_data, *kend = kp + k.mv_size;
        char sub = k.mv_size ? (char)*kp++ : '?';
        int64_t id = -1;
        const char *name = NULL;
        if (sub == MR_SUB_SNAPSHOT) {
            name = "ducklake_snapshot";
        } else if (sub != MR_SUB_META && sub != MR_SUB_COUNT) {
            moraine_value idv;
            if (mr_key_next(&kp, kend, &idv, &scratch) == 0 && idv.type == MORAINE_INT) {
                id = idv.i;
                mr_rel *r = mr_rel_by_id(db, (uint64_t)id);
                name = r ? r->info.name : "(unknown table)";
            }
        }
        if (sub != cur.subspace || id != cur_id) {
            if (cur.entries && fn) fn(ud, &cur);
            cur = (moraine_stat){.subspace = sub, .relation = name};
            cur_id = id;
        }
        cur.entries++;
        cur.key_bytes += k.mv_size;
        cur.value_bytes += v.mv_size;
        /* the pages walked are not read again: unmap them now and then, so
         * the process's RSS does not grow with the store (as verify does) */
        if (++walked % 65536 == 0) (void)moraine_release_pages(db);
    }
    if (cur.entries && fn) fn(ud, &cur);
    if (mrc != MDB_NOTFOUND) rc = mr_lmdb_err(mrc, "stats");
    mdb_cursor_close(c);
    mr_buf_free(&scratch);
    moraine_read_end(rd);
    return rc;
}
