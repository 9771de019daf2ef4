/*
 * commit.c — staged commits: one DuckLake snapshot, one LMDB write
 * transaction (docs/semantics.md).
 *
 * Rows that carry children (a data file and its partition values and stats,
 * a spec and its columns, a snapshot and its changes) are collected in memory
 * while the commit is built ("pending" entries, found by their identity: the
 * current-subspace key) and encoded once at commit. Ending a row turns its
 * pending entry into a history entry; the current key is deleted at commit.
 * Rows of non-temporal tables are written straight into the LMDB transaction.
 * Nothing reaches the store unless moraine_txn_commit succeeds.
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    uint32_t rel_id;
    uint64_t nrows;
    mr_buf bytes;
} group;

typedef struct pending {
    mr_buf ident;        /* current-subspace key (snapshot key for snapshots) */
    mr_buf target;       /* where the value goes at commit */
    int delete_current;  /* the row was live in the store: delete ident at commit */
    int ended;           /* target is a history key */
    int from_store;      /* loaded from the store (the stored row is represented here) */
    int discarded;       /* inserted by this commit and taken back: never written */
    struct pending *prev; /* older entry with the same identity in this commit */
    int history_noover;  /* refuse to overwrite an existing history version */
    mr_rel *rel;
    int64_t ord;
    moraine_value *vals;
    size_t ncols;
    uint8_t *store;      /* owned bytes the string values point into */
    group *groups;
    size_t ngroups;
} pending;

struct moraine_txn {
    moraine_db *db;
    MDB_txn *t;
    mr_bounds bounds;
    int64_t snapshot;
    int failed;
    char failmsg[1024];
    pending **list;      /* in creation order */
    size_t nlist, caplist;
    pending **slots;     /* hash: identity -> newest pending entry */
    size_t nslots, used;
    mr_rel **defs;       /* relations defined by this commit */
    size_t ndefs;
    int64_t *next_ord;   /* per relation id, -1 = not loaded */
    int *ord_dirty;
    size_t nord;
    int64_t next_rel_id;
    int64_t new_gen;     /* rels_gen written by this commit (when it defines tables) */
    int partial_snapshot; /* an import's commit that may lack its ducklake_snapshot row */
    int rewind;          /* history rewrites may reach up to snapshot - 1 (moraine_txn_rewind) */
    mr_counts counts;    /* entries added (+) and removed (-) per counted key range (count.c) */
    mr_buf kb, kb2;      /* key scratch */
};

/* Counts an entry written (+1) or deleted (-1) under key @k of relation @r. */
static int count_entry(moraine_txn *txn, const mr_rel *r, const uint8_t *k, size_t n, int delta)
{
    size_t pl = mr_count_prefix(r ? r->scoped : 0, k, n);
    return pl ? mr_counts_add(&txn->counts, k, pl, delta) : 0;
}

/* mdb_put that counts a new entry: with @flags 0 an existing entry is
 * replaced (not counted again), with MDB_NOOVERWRITE it is MDB_KEYEXIST. */
static int put_counted(moraine_txn *txn, const mr_rel *r, MDB_val *k, MDB_val *v, unsigned flags)
{
    MDB_val mine = *v; /* MDB_KEYEXIST points v at the stored value */
    int mrc = mdb_put(txn->t, txn->db->dbi, k, v, MDB_NOOVERWRITE);
    if (mrc == MDB_KEYEXIST && !(flags & MDB_NOOVERWRITE)) {
        *v = mine;
        return mdb_put(txn->t, txn->db->dbi, k, v, 0);
    }
    if (mrc) return mrc;
    int rc = count_entry(txn, r, k->mv_data, k->mv_size, +1);
    return rc ? MDB_PANIC : 0; /* only ENOMEM or an over-long range: reported as a failed write */
}

/* ---- failure bookkeeping ---- */

static int fail(moraine_txn *txn, int rc)
{
    if (!txn->failed) {
        txn->failed = rc;
        snprintf(txn->failmsg, sizeof txn->failmsg, "%s", moraine_errmsg());
    }
    return rc;
}

static int usable(moraine_txn *txn)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "NULL transaction");
    if (txn->failed) return mr_err(MORAINE_ETXN, "the commit already failed and must be aborted: %s", txn->failmsg);
    return 0;
}

/* ---- pending entries ---- */

static uint64_t fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static pending **slot_for(moraine_txn *txn, const uint8_t *k, size_t n)
{
    size_t mask = txn->nslots - 1;
    for (size_t i = fnv(k, n) & mask;; i = (i + 1) & mask) {
        pending *e = txn->slots[i];
        if (!e || (e->ident.len == n && memcmp(e->ident.p, k, n) == 0)) return &txn->slots[i];
    }
}

/* The newest entry with identity @k (children attach to it), or NULL. */
static pending *lookup(moraine_txn *txn, const mr_buf *k) { return *slot_for(txn, k->p, k->len); }

/* The live entry among those with the same identity as @head, or NULL. */
static pending *live_of(pending *head)
{
    for (pending *e = head; e; e = e->prev)
        if (!e->ended) return e;
    return NULL;
}

/* Whether the stored row under this identity was loaded into the commit. */
static int store_seen(pending *head)
{
    for (pending *e = head; e; e = e->prev)
        if (e->from_store) return 1;
    return 0;
}

static int grow_slots(moraine_txn *txn)
{
    size_t n = txn->nslots ? txn->nslots * 2 : 1024;
    pending **old = txn->slots;
    size_t oldn = txn->nslots;
    txn->slots = calloc(n, sizeof *txn->slots);
    if (!txn->slots) {
        txn->slots = old;
        return mr_err(MORAINE_ENOMEM, "out of memory");
    }
    txn->nslots = n;
    for (size_t i = 0; i < oldn; i++)
        if (old[i]) *slot_for(txn, old[i]->ident.p, old[i]->ident.len) = old[i];
    free(old);
    return 0;
}

static void pending_free(pending *e)
{
    if (!e) return;
    mr_buf_free(&e->ident);
    mr_buf_free(&e->target);
    free(e->vals);
    free(e->store);
    for (size_t i = 0; i < e->ngroups; i++) mr_buf_free(&e->groups[i].bytes);
    free(e->groups);
    free(e);
}

/* Copies a row: the values and every string they point to. */
static int copy_row(pending *e, const moraine_value *row, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (row[i].type == MORAINE_STR || row[i].type == MORAINE_JSON) bytes += row[i].len;
    e->vals = calloc(n ? n : 1, sizeof *e->vals);
    e->store = malloc(bytes ? bytes : 1);
    if (!e->vals || !e->store) return mr_err(MORAINE_ENOMEM, "out of memory");
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        e->vals[i] = row[i];
        if (row[i].type == MORAINE_STR || row[i].type == MORAINE_JSON) {
            if (row[i].len) memcpy(e->store + off, row[i].s, row[i].len);
            e->vals[i].s = (const char *)e->store + off;
            off += row[i].len;
        }
    }
    e->ncols = n;
    return 0;
}

/* Registers a new pending entry under identity key @k (newest wins). */
static int add_pending(moraine_txn *txn, pending *e)
{
    int rc = 0;
    if ((txn->used + 1) * 2 > txn->nslots && (rc = grow_slots(txn))) return rc;
    if (txn->nlist == txn->caplist) {
        size_t cap = txn->caplist ? txn->caplist * 2 : 256;
        pending **p = realloc(txn->list, cap * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        txn->list = p;
        txn->caplist = cap;
    }
    pending **s = slot_for(txn, e->ident.p, e->ident.len);
    if (!*s) txn->used++;
    e->prev = *s;
    *s = e;
    txn->list[txn->nlist++] = e;
    return 0;
}

static pending *new_pending(mr_rel *r, int64_t ord)
{
    pending *e = calloc(1, sizeof *e);
    if (e) {
        e->rel = r;
        e->ord = ord;
    }
    return e;
}

/* Loads the stored value at @key (a live row or a snapshot) into a pending
 * entry so it can gain children or be ended. Returns 1 when found, 0 when not. */
static int load_pending(moraine_txn *txn, const mr_buf *key, pending **out)
{
    MDB_val k = {key->len, key->p}, v;
    int mrc = mdb_get(txn->t, txn->db->dbi, &k, &v);
    if (mrc == MDB_NOTFOUND) return 0;
    if (mrc) return mr_lmdb_err(mrc, "reading a stored row");
    if (!mr_value_ok(&txn->bounds, &v)) return mr_err(MORAINE_ECORRUPT, "a stored value runs past the end of the file: LMDB's pages are damaged");
    /* the relation id is the element after the subspace byte for C keys; snapshots are ducklake_snapshot */
    mr_rel *r = NULL;
    const uint8_t *kp = key->p + 1, *kend = key->p + key->len;
    if (key->p[0] == MR_SUB_SNAPSHOT) {
        r = mr_txn_rel(txn, "ducklake_snapshot");
    } else {
        moraine_value idv;
        mr_buf scratch = {0};
        int rc = mr_key_next(&kp, kend, &idv, &scratch);
        mr_buf_free(&scratch);
        if (rc) return rc;
        r = idv.type == MORAINE_INT ? mr_rel_by_id(txn->db, (uint64_t)idv.i) : NULL;
    }
    char desc[200];
    if (!r) {
        mr_key_describe(key->p, key->len, desc, sizeof desc);
        return mr_err(MORAINE_ECORRUPT, "stored row %s names an unknown table", desc);
    }
    pending *e = new_pending(r, 0);
    if (!e) return mr_err(MORAINE_ENOMEM, "out of memory");
    int rc = 0;
    e->store = malloc(v.mv_size ? v.mv_size : 1);
    e->vals = calloc(r->info.ncols ? r->info.ncols : 1, sizeof *e->vals);
    if (!e->store || !e->vals) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    if (!rc) {
        memcpy(e->store, v.mv_data, v.mv_size);
        const uint8_t *p = e->store, *end = p + v.mv_size;
        rc = mr_decode_header(&p, end, key->p, key->len);
        if (!rc) rc = mr_decode_row(&p, end, &e->ord, e->vals, r->info.ncols, &e->ncols);
        if (!rc && e->ncols != r->info.ncols) rc = mr_err(MORAINE_ECORRUPT, "stored row has %zu columns, table %s has %zu", e->ncols, r->info.name, r->info.ncols);
        while (!rc && p < end) {
            uint64_t id, nrows, nbytes;
            if ((rc = mr_get_uvarint(&p, end, &id)) || (rc = mr_get_uvarint(&p, end, &nrows)) || (rc = mr_get_uvarint(&p, end, &nbytes))) break;
            if (nbytes > (uint64_t)(end - p)) {
                rc = mr_err(MORAINE_ECORRUPT, "child group runs past the end of the value");
                break;
            }
            group *g = realloc(e->groups, (e->ngroups + 1) * sizeof *g);
            if (!g) {
                rc = mr_err(MORAINE_ENOMEM, "out of memory");
                break;
            }
            e->groups = g;
            g = &e->groups[e->ngroups++];
            memset(g, 0, sizeof *g);
            g->rel_id = (uint32_t)id;
            g->nrows = nrows;
            rc = mr_buf_put(&g->bytes, p, (size_t)nbytes);
            p += nbytes;
        }
        if (rc == MORAINE_ECORRUPT) {
            char m[512];
            snprintf(m, sizeof m, "%s", moraine_errmsg());
            mr_key_describe(key->p, key->len, desc, sizeof desc);
            rc = mr_err(MORAINE_ECORRUPT, "stored row %s of %s: %s", desc, r->info.name, m);
        }
    }
    e->from_store = 1;
    if (!rc) rc = mr_buf_put(&e->ident, key->p, key->len);
    if (!rc) rc = mr_buf_put(&e->target, key->p, key->len);
    if (!rc) rc = add_pending(txn, e);
    if (rc) {
        pending_free(e);
        return rc;
    }
    *out = e;
    return 1;
}

/* ---- relations ---- */

mr_rel *mr_txn_rel(moraine_txn *txn, const char *name)
{
    for (size_t i = txn->ndefs; i-- > 0;)
        if (strcmp(txn->defs[i]->info.name, name) == 0) return txn->defs[i];
    return mr_rel_by_name(txn->db, name);
}

static int rel_of(moraine_txn *txn, const char *name, mr_rel **out)
{
    if (!name) return mr_err(MORAINE_EINVAL, "NULL table name");
    mr_rel *r = mr_txn_rel(txn, name);
    if (!r) return mr_err(MORAINE_ENOTFOUND, "table '%s' is not defined in this catalog (define it first)", name);
    if (r->info.ncols == 0) return mr_err(MORAINE_EINVAL, "table '%s' was defined without columns; define its columns first", name);
    *out = r;
    return 0;
}

int moraine_txn_define(moraine_txn *txn, const char *name, size_t ncols, const char *const *colnames)
{
    int rc = usable(txn);
    if (rc) return rc;
    if (!name || !*name) return fail(txn, mr_err(MORAINE_EINVAL, "moraine_txn_define: empty table name"));
    if (strlen(name) > 400) return fail(txn, mr_err(MORAINE_EINVAL, "table name of %zu bytes is too long", strlen(name)));
    for (size_t i = 0; i < ncols; i++)
        if (!colnames || !colnames[i]) return fail(txn, mr_err(MORAINE_EINVAL, "%s: NULL column name %zu", name, i));
    mr_rel *have = mr_txn_rel(txn, name);
    if (have) {
        if (ncols == 0) return 0;
        if (have->info.ncols == ncols) {
            size_t i = 0;
            while (i < ncols && strcmp(have->names[i], colnames[i]) == 0) i++;
            if (i == ncols) return 0;
        }
        if (have->info.ncols != 0)
            return fail(txn, mr_err(MORAINE_EEXIST, "table '%s' is already defined with other columns (%zu columns)", name, have->info.ncols));
    }
    uint32_t id;
    if (have) {
        id = have->info.id;
    } else {
        if (txn->next_rel_id == 0) {
            int64_t v = 1;
            if ((rc = mr_meta_get_int(txn->t, txn->db->dbi, "next_rel_id", &v)) < 0) return fail(txn, rc);
            txn->next_rel_id = rc ? v : 1;
        }
        id = (uint32_t)txn->next_rel_id++;
    }
    mr_rel *r;
    if ((rc = mr_rel_build(txn->db, name, id, ncols, colnames, &r))) return fail(txn, rc);
    mr_rel **d = realloc(txn->defs, (txn->ndefs + 1) * sizeof *d);
    if (!d) {
        mr_rel_free(r);
        return fail(txn, mr_err(MORAINE_ENOMEM, "out of memory"));
    }
    txn->defs = d;
    txn->defs[txn->ndefs++] = r;
    return 0;
}

/* ---- ord counters ---- */

static int ord_slot(moraine_txn *txn, mr_rel *r, int64_t **slot)
{
    uint32_t id = r->info.id;
    if (id >= txn->nord) {
        size_t n = id + 64;
        int64_t *p = realloc(txn->next_ord, n * sizeof *p);
        if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
        txn->next_ord = p;
        int *d = realloc(txn->ord_dirty, n * sizeof *d);
        if (!d) return mr_err(MORAINE_ENOMEM, "out of memory");
        txn->ord_dirty = d;
        for (size_t i = txn->nord; i < n; i++) {
            txn->next_ord[i] = -1;
            txn->ord_dirty[i] = 0;
        }
        txn->nord = n;
    }
    if (txn->next_ord[id] < 0) {
        char name[32];
        snprintf(name, sizeof name, "ord:%u", id);
        int64_t v = 0;
        int rc = mr_meta_get_int(txn->t, txn->db->dbi, name, &v);
        if (rc < 0) return rc;
        txn->next_ord[id] = rc ? v : 0;
    }
    *slot = &txn->next_ord[id];
    return 0;
}

static int take_ord(moraine_txn *txn, mr_rel *r, int64_t ord, int64_t *out)
{
    int64_t *slot = NULL;
    int rc = ord_slot(txn, r, &slot);
    if (rc) return rc;
    if (ord < -1) return mr_err(MORAINE_EINVAL, "%s: row position %lld is negative", r->info.name, (long long)ord);
    if (ord == -1) ord = *slot;
    if (ord == INT64_MAX) return mr_err(MORAINE_EINVAL, "%s: row position overflows", r->info.name);
    if (ord + 1 > *slot) {
        *slot = ord + 1;
        txn->ord_dirty[r->info.id] = 1;
    }
    *out = ord;
    return 0;
}

/* ---- begin ---- */

/* Dead readers (processes killed in a read) keep their LMDB reader slots
 * until someone clears them, and while they do, the pages of the snapshot
 * they read cannot be reused: a writer that stays open (it never reopens,
 * where moraine also clears them) would make the file grow with every
 * commit. So the writer clears them itself, cheaply: after every 32nd
 * commit, or after a commit a second or more after the last check. */
#define MR_READER_CHECK_COMMITS 32
#define MR_READER_CHECK_MS 1000
static void dead_reader_check(mr_env *sh)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    pthread_mutex_lock(&sh->mu);
    int due = ++sh->commits >= MR_READER_CHECK_COMMITS || now - sh->last_check_ms >= MR_READER_CHECK_MS;
    if (due) {
        sh->commits = 0;
        sh->last_check_ms = now;
    }
    pthread_mutex_unlock(&sh->mu);
    if (due) mdb_reader_check(sh->env, NULL);
}

static void writer_done(mr_env *sh)
{
    pthread_mutex_lock(&sh->mu);
    sh->writer = 0;
    pthread_mutex_unlock(&sh->mu);
}

int moraine_txn_begin(moraine_db *db, int64_t snapshot_id, moraine_txn **out)
{
    if (!db || !out) return mr_err(MORAINE_EINVAL, "moraine_txn_begin: NULL argument");
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    int prc = mr_same_process(db);
    if (prc) return prc;
    if (db->writer) return mr_err(MORAINE_ETXN, "a commit is already open on this catalog handle");
    mr_env *sh = db->sh;
    pthread_mutex_lock(&sh->mu);
    int mine = sh->writer && pthread_equal(sh->writer_thread, pthread_self());
    int busy = sh->writer;
    pthread_mutex_unlock(&sh->mu);
    /* another handle of the same catalog in this thread: LMDB's writer lock
     * would wait for ourselves (another thread's commit is simply waited for) */
    if (mine) return mr_err(MORAINE_ETXN, "a commit is already open on this catalog in this thread, through another handle of it");
    /* Grow the map ahead of need while no read transaction of ours is open
     * (LMDB allows resizing only then): when more than half is in use. */
    if (__atomic_load_n(&sh->nreaders, __ATOMIC_SEQ_CST) == 0 && !busy) {
        MDB_envinfo ei;
        MDB_stat st;
        if (mdb_env_info(db->env, &ei) == 0 && mdb_env_stat(db->env, &st) == 0) {
            size_t used = (ei.me_last_pgno + 1) * (size_t)st.ms_psize;
            if (ei.me_mapsize > db->opts.map_size) db->opts.map_size = ei.me_mapsize;
            while (used * 2 > db->opts.map_size && mr_grow_map(db) == 0) {
            }
        }
    }
    moraine_txn *txn = calloc(1, sizeof *txn);
    if (!txn) return mr_err(MORAINE_ENOMEM, "out of memory");
    txn->db = db;
    txn->snapshot = snapshot_id;
    int mrc = mdb_txn_begin(db->env, NULL, 0, &txn->t);
    if (mrc == MDB_MAP_RESIZED) {
        mdb_env_set_mapsize(db->env, 0);
        db->sh->map_base = NULL; /* remapped */
        mrc = mdb_txn_begin(db->env, NULL, 0, &txn->t);
    }
    if (mrc) {
        free(txn);
        return mr_lmdb_err(mrc, "starting a commit");
    }
    pthread_mutex_lock(&sh->mu);
    sh->writer = 1;
    sh->writer_thread = pthread_self();
    pthread_mutex_unlock(&sh->mu);
    mr_bounds_get(db, &txn->bounds);
    pthread_mutex_lock(&db->mu);
    int rc = mr_load_relations(db, txn->t);
    pthread_mutex_unlock(&db->mu);
    if (!rc && snapshot_id != MORAINE_NO_SNAPSHOT) {
        int64_t last = 0;
        int have = mr_meta_get_int(txn->t, db->dbi, "last_snapshot", &last);
        if (have < 0) rc = have;
        else if (snapshot_id < 0) rc = mr_err(MORAINE_ESNAPSHOT, "snapshot id %lld is negative", (long long)snapshot_id);
        else if (have && snapshot_id <= last)
            rc = mr_err(MORAINE_ESNAPSHOT, "snapshot %lld is not above the last committed snapshot %lld", (long long)snapshot_id,
                        (long long)last);
    }
    if (!rc) rc = grow_slots(txn);
    if (rc) {
        mdb_txn_abort(txn->t);
        writer_done(sh);
        free(txn->slots);
        free(txn);
        return rc;
    }
    db->writer = txn;
    *out = txn;
    return 0;
}

/* ---- insert ---- */

static int parent_ident(moraine_txn *txn, mr_rel *child, const moraine_value *row, mr_rel **parent, mr_buf *out)
{
    mr_rel *p = mr_txn_rel(txn, child->info.parent);
    if (!p || p->info.ncols == 0) return 0;
    *parent = p;
    out->len = 0;
    int rc;
    if (p->info.placement == MORAINE_PLACE_SNAPSHOT) {
        if (row[child->parentkey[0]].type != MORAINE_INT) return 0;
        rc = mr_snapshot_key(out, row[child->parentkey[0]].i);
    } else {
        if (p->nkey != child->nkey) return 0;
        rc = mr_buf_byte(out, MR_SUB_CURRENT);
        if (!rc) rc = mr_key_int(out, p->info.id);
        for (int i = 0; !rc && i < child->nkey; i++) rc = mr_key_value(out, &row[child->parentkey[i]]);
    }
    return rc ? rc : 1;
}

static int append_child(pending *parent, mr_rel *child, const moraine_value *row, size_t n, int64_t ord)
{
    group *g = NULL;
    for (size_t i = 0; i < parent->ngroups; i++)
        if (parent->groups[i].rel_id == child->info.id) g = &parent->groups[i];
    if (!g) {
        group *gs = realloc(parent->groups, (parent->ngroups + 1) * sizeof *gs);
        if (!gs) return mr_err(MORAINE_ENOMEM, "out of memory");
        parent->groups = gs;
        g = &gs[parent->ngroups++];
        memset(g, 0, sizeof *g);
        g->rel_id = child->info.id;
    }
    g->nrows++;
    return mr_encode_row(&g->bytes, ord, row, n);
}

static int put_rows_value(moraine_txn *txn, mr_rel *r, const moraine_value *row, size_t n, int64_t ord, unsigned flags)
{
    mr_buf v = {0};
    int rc = mr_rows_key(&txn->kb, r, ord);
    if (!rc) rc = mr_value_begin(&v);
    if (!rc) rc = mr_encode_row(&v, ord, row, n);
    if (!rc) mr_value_seal(&v, 0, txn->kb.p, txn->kb.len);
    if (!rc) {
        if (txn->kb.len > MR_MAX_KEY) rc = mr_err(MORAINE_EINVAL, "%s: key too long", r->info.name);
    }
    if (!rc) {
        MDB_val k = {txn->kb.len, txn->kb.p}, val = {v.len, v.p};
        int mrc = put_counted(txn, r, &k, &val, flags);
        if (mrc == MDB_KEYEXIST) rc = mr_err(MORAINE_EEXIST, "%s: a row already sits at position %lld", r->info.name, (long long)ord);
        else if (mrc) rc = mr_lmdb_err(mrc, r->info.name);
    }
    mr_buf_free(&v);
    return rc;
}

/* A table has at most one live partition spec and one live sort spec
 * (DuckLake ends the old one when it sets a new one; moraine_verify checks
 * it): a second live ducklake_partition_info / ducklake_sort_info row for the
 * same table is refused, whether the first is stored or inserted by this commit. */
static int one_live_spec(moraine_txn *txn, mr_rel *r, const moraine_value *row, const char *desc)
{
    if (strcmp(r->info.name, "ducklake_partition_info") != 0 && strcmp(r->info.name, "ducklake_sort_info") != 0) return 0;
    const moraine_value *tid = &row[r->keycols[0]];
    for (size_t i = 0; i < txn->nlist; i++) {
        pending *e = txn->list[i];
        if (e->rel->info.id != r->info.id || e->ended || e->discarded || e->from_store) continue;
        if (e->vals[r->keycols[0]].type == tid->type && e->vals[r->keycols[0]].i == tid->i)
            return mr_err(MORAINE_EEXIST, "%s row %s: the table already has a live spec (inserted by this commit); end it first", r->info.name, desc);
    }
    mr_buf prefix = {0};
    int rc = mr_buf_byte(&prefix, MR_SUB_CURRENT);
    if (!rc) rc = mr_key_int(&prefix, r->info.id);
    if (!rc) rc = mr_key_value(&prefix, tid);
    MDB_cursor *c = NULL;
    int mrc = rc ? 0 : mdb_cursor_open(txn->t, txn->db->dbi, &c);
    if (mrc) rc = mr_lmdb_err(mrc, "opening a cursor");
    MDB_val k = {prefix.len, prefix.p}, v;
    for (mrc = rc ? MDB_NOTFOUND : mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); !rc && mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < prefix.len || memcmp(k.mv_data, prefix.p, prefix.len) != 0) break;
        pending *head = *slot_for(txn, k.mv_data, k.mv_size);
        if (store_seen(head) && !live_of(head)) continue; /* ended by this commit */
        char other[200];
        mr_key_describe(k.mv_data, k.mv_size, other, sizeof other);
        rc = mr_err(MORAINE_EEXIST, "%s row %s: the table already has a live spec (%s); end it first", r->info.name, desc, other);
    }
    if (c) mdb_cursor_close(c);
    mr_buf_free(&prefix);
    return rc;
}

static int insert_temporal(moraine_txn *txn, mr_rel *r, const moraine_value *row, size_t n, int64_t ord)
{
    char desc[256];
    const moraine_value *b = &row[r->info.begin_col], *e = &row[r->info.end_col];
    mr_describe_row(r, row, n, desc, sizeof desc);
    if (txn->snapshot == MORAINE_NO_SNAPSHOT)
        return mr_err(MORAINE_EINVAL, "%s row %s: temporal rows need a commit with a snapshot id", r->info.name, desc);
    if (b->type != MORAINE_INT || b->i != txn->snapshot)
        return mr_err(MORAINE_EINVAL, "%s row %s: column 'begin_snapshot' must be this commit's snapshot %lld", r->info.name, desc,
                      (long long)txn->snapshot);
    if (e->type != MORAINE_NULL && (e->type != MORAINE_INT || e->i != txn->snapshot))
        return mr_err(MORAINE_EINVAL, "%s row %s: column 'end_snapshot' must be NULL, or this commit's snapshot %lld for a version "
                      "no snapshot sees", r->info.name, desc, (long long)txn->snapshot);
    for (int i = 0; i < r->nkey; i++)
        if (row[r->keycols[i]].type != MORAINE_INT && row[r->keycols[i]].type != MORAINE_STR && row[r->keycols[i]].type != MORAINE_NULL)
            return mr_err(MORAINE_EINVAL, "%s row %s: key column '%s' must be an integer, a string or NULL", r->info.name, desc,
                          r->names[r->keycols[i]]);
    int rc = mr_current_key(&txn->kb, r, row, ord);
    if (rc) return rc;
    if (txn->kb.len > MR_MAX_KEY)
        return mr_err(MORAINE_EINVAL, "%s row %s: key of %zu bytes is longer than LMDB's %d", r->info.name, desc, txn->kb.len, MR_MAX_KEY);
    pending *have = lookup(txn, &txn->kb);
    int live_elsewhere = live_of(have) != NULL;
    if (!live_elsewhere && !store_seen(have)) {
        MDB_val k = {txn->kb.len, txn->kb.p}, v;
        int mrc = mdb_get(txn->t, txn->db->dbi, &k, &v);
        if (mrc == 0) live_elsewhere = 1;
        else if (mrc != MDB_NOTFOUND) return mr_lmdb_err(mrc, r->info.name);
    }
    if (live_elsewhere && e->type == MORAINE_NULL)
        return mr_err(MORAINE_EEXIST, "%s row %s: a live row with this key already exists", r->info.name, desc);
    if (e->type == MORAINE_NULL && (rc = one_live_spec(txn, r, row, desc))) return rc;
    pending *p = new_pending(r, ord);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory");
    rc = copy_row(p, row, n);
    if (!rc) rc = mr_buf_put(&p->ident, txn->kb.p, txn->kb.len);
    if (!rc && e->type == MORAINE_NULL) rc = mr_buf_put(&p->target, txn->kb.p, txn->kb.len);
    if (!rc && e->type != MORAINE_NULL) {
        /* a version no snapshot sees goes straight to history */
        rc = mr_history_key(&p->target, r, p->vals, ord);
        p->ended = 1;
        p->history_noover = 1;
    }
    if (!rc) {
        /* a live row must fit in history too, or it could never be ended */
        mr_buf hk = {0};
        moraine_value saved = p->vals[r->info.end_col];
        p->vals[r->info.end_col].type = MORAINE_INT;
        p->vals[r->info.end_col].i = INT64_MAX;
        rc = mr_history_key(&hk, r, p->vals, ord);
        p->vals[r->info.end_col] = saved;
        if (!rc && hk.len > MR_MAX_KEY)
            rc = mr_err(MORAINE_EINVAL, "%s row %s: its key (%zu bytes in history) is longer than LMDB's %d", r->info.name, desc, hk.len, MR_MAX_KEY);
        mr_buf_free(&hk);
    }
    if (!rc) rc = add_pending(txn, p); /* newest: its children follow it */
    if (rc) pending_free(p);
    return rc;
}

int moraine_txn_insert(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord)
{
    int rc = usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return fail(txn, rc);
    if ((rc = mr_check_value(r, row, ncols, ord))) return fail(txn, rc);
    if ((rc = take_ord(txn, r, ord, &ord))) return fail(txn, rc);
    char desc[256];
    switch (r->info.placement) {
    case MORAINE_PLACE_TEMPORAL:
        rc = insert_temporal(txn, r, row, ncols, ord);
        break;
    case MORAINE_PLACE_SNAPSHOT: {
        mr_describe_row(r, row, ncols, desc, sizeof desc);
        const moraine_value *id = &row[r->keycols[0]];
        if (id->type != MORAINE_INT || id->i != txn->snapshot) {
            rc = mr_err(MORAINE_EINVAL, "ducklake_snapshot row %s: column 'snapshot_id' must be this commit's snapshot %lld", desc,
                        (long long)txn->snapshot);
            break;
        }
        if ((rc = mr_snapshot_key(&txn->kb, id->i))) break;
        MDB_val k = {txn->kb.len, txn->kb.p}, v;
        if (lookup(txn, &txn->kb) || mdb_get(txn->t, txn->db->dbi, &k, &v) == 0) {
            rc = mr_err(MORAINE_EEXIST, "ducklake_snapshot row %s: snapshot already recorded", desc);
            break;
        }
        pending *p = new_pending(r, ord);
        if (!p) {
            rc = mr_err(MORAINE_ENOMEM, "out of memory");
            break;
        }
        rc = copy_row(p, row, ncols);
        if (!rc) rc = mr_buf_put(&p->ident, txn->kb.p, txn->kb.len);
        if (!rc) rc = mr_buf_put(&p->target, txn->kb.p, txn->kb.len);
        if (!rc) rc = add_pending(txn, p);
        if (rc) pending_free(p);
        break;
    }
    case MORAINE_PLACE_CHILD: {
        mr_rel *parent = NULL;
        mr_buf pk = {0};
        int found = parent_ident(txn, r, row, &parent, &pk);
        pending *pe = NULL;
        if (found > 0) {
            pe = lookup(txn, &pk);
            if (!pe) {
                found = load_pending(txn, &pk, &pe);
                if (found < 0) rc = found;
            }
        } else if (found < 0) {
            rc = found;
        }
        mr_buf_free(&pk);
        if (rc) break;
        if (pe) rc = append_child(pe, r, row, ncols, ord);
        else rc = put_rows_value(txn, r, row, ncols, ord, MDB_NOOVERWRITE); /* no live parent: kept as a loose row */
        break;
    }
    case MORAINE_PLACE_ROWS:
        rc = put_rows_value(txn, r, row, ncols, ord, MDB_NOOVERWRITE);
        break;
    }
    return rc ? fail(txn, rc) : 0;
}

/* ---- end ---- */

static int values_equal(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case MORAINE_NULL: return 1;
    case MORAINE_INT:
    case MORAINE_BOOL: return a->i == b->i;
    case MORAINE_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    default: return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
    }
}

static int content_matches(const mr_rel *r, const moraine_value *a, const moraine_value *b)
{
    for (size_t i = 0; i < r->info.ncols; i++) {
        if ((int)i == r->info.begin_col || (int)i == r->info.end_col) continue;
        if (!values_equal(&a[i], &b[i])) return 0;
    }
    return 1;
}

/* For relations keyed by row position: find the live row with these values. */
static int find_by_content(moraine_txn *txn, mr_rel *r, const moraine_value *row, int64_t *ord)
{
    for (size_t i = 0; i < txn->nlist; i++) {
        pending *e = txn->list[i];
        if (e->rel->info.id == r->info.id && !e->ended && e->ident.p[0] == MR_SUB_CURRENT && content_matches(r, e->vals, row)) {
            *ord = e->ord;
            return 1;
        }
    }
    mr_buf prefix = {0};
    int rc = mr_buf_byte(&prefix, MR_SUB_CURRENT);
    if (!rc) rc = mr_key_int(&prefix, r->info.id);
    if (rc) return rc;
    MDB_cursor *c;
    int mrc = mdb_cursor_open(txn->t, txn->db->dbi, &c);
    if (mrc) {
        mr_buf_free(&prefix);
        return mr_lmdb_err(mrc, "opening a cursor");
    }
    moraine_value *vals = calloc(r->info.ncols, sizeof *vals);
    int found = vals ? 0 : mr_err(MORAINE_ENOMEM, "out of memory");
    MDB_val k = {prefix.len, prefix.p}, v;
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); !found && mrc == 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < prefix.len || memcmp(k.mv_data, prefix.p, prefix.len) != 0) break;
        const uint8_t *p = v.mv_data, *end = p + v.mv_size;
        int64_t o;
        size_t n;
        if ((rc = mr_decode_header(&p, end, k.mv_data, k.mv_size)) || (rc = mr_decode_row(&p, end, &o, vals, r->info.ncols, &n))) {
            found = rc;
            break;
        }
        mr_buf kb = {0};
        if (mr_current_key(&kb, r, vals, o) == 0) {
            pending *pe = lookup(txn, &kb);
            if (!store_seen(pe) && n == r->info.ncols && content_matches(r, vals, row)) {
                *ord = o;
                found = 1;
            }
        }
        mr_buf_free(&kb);
    }
    free(vals);
    mdb_cursor_close(c);
    mr_buf_free(&prefix);
    return found;
}

int moraine_txn_end(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols)
{
    return mr_txn_end_at(txn, name, row, ncols, -1);
}

/* moraine_txn_end, and for tables keyed by row position, @ord (>= 0) names the
 * row directly (the importer knows it) instead of a search by content. */
int mr_txn_end_at(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord_hint)
{
    int rc = usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return fail(txn, rc);
    char desc[256];
    if (r->info.placement != MORAINE_PLACE_TEMPORAL)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s is not a temporal table: its rows are never ended", name));
    if (ncols != r->info.ncols)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s: a row has %zu columns, the table has %zu", name, ncols, r->info.ncols));
    if (txn->snapshot == MORAINE_NO_SNAPSHOT)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s: ending a row needs a commit with a snapshot id", name));
    mr_describe_row(r, row, ncols, desc, sizeof desc);
    int64_t ord = ord_hint;
    if (r->nkey == 0 && ord_hint < 0) {
        int f = find_by_content(txn, r, row, &ord);
        if (f < 0) return fail(txn, f);
        if (f == 0) return fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: no live row with these values to end", name, desc));
    }
    if ((rc = mr_current_key(&txn->kb, r, row, ord))) return fail(txn, rc);
    pending *head = lookup(txn, &txn->kb);
    pending *e = live_of(head);
    if (!e && store_seen(head)) return fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: the row is not live (already ended)", name, desc));
    if (!e) {
        int f = load_pending(txn, &txn->kb, &e);
        if (f < 0) return fail(txn, f);
        if (f == 0) return fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: no live row with this key to end", name, desc));
        e->delete_current = 1;
    }
    const moraine_value *b = &e->vals[r->info.begin_col];
    if (b->type != MORAINE_INT || b->i > txn->snapshot)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s row %s: its begin_snapshot is above snapshot %lld", name, desc, (long long)txn->snapshot));
    e->vals[r->info.end_col].type = MORAINE_INT;
    e->vals[r->info.end_col].i = txn->snapshot;
    e->ended = 1;
    e->history_noover = 1;
    if (e->from_store) e->delete_current = 1; /* also when it was loaded to gain children */
    if ((rc = mr_history_key(&e->target, r, e->vals, e->ord))) return fail(txn, rc);
    if (e->target.len > MR_MAX_KEY)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s row %s: its history key of %zu bytes is longer than LMDB's %d", name, desc, e->target.len, MR_MAX_KEY));
    return 0;
}

/* Takes back a live row this commit inserted (the verb path: a column renamed
 * twice in one transaction keeps only its last version, as DuckLake writes
 * only the net change). Returns 0, MORAINE_ENOTLIVE when no such row was
 * inserted by this commit. */
int mr_txn_discard(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols)
{
    int rc = usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return fail(txn, rc);
    if (r->info.placement != MORAINE_PLACE_TEMPORAL || ncols != r->info.ncols || r->nkey == 0)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s: only rows of keyed temporal tables can be taken back", name));
    if ((rc = mr_current_key(&txn->kb, r, row, 0))) return fail(txn, rc);
    pending *e = live_of(lookup(txn, &txn->kb));
    if (!e || e->from_store) {
        char desc[256];
        mr_describe_row(r, row, ncols, desc, sizeof desc);
        return fail(txn, mr_err(MORAINE_ENOTLIVE, "%s row %s: not a row this commit inserted", name, desc));
    }
    e->discarded = 1;
    e->ended = 1; /* no longer live: a later insert of the key is allowed */
    return 0;
}

/* ---- non-temporal rows ---- */

int moraine_txn_put_row(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord)
{
    int rc = usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return fail(txn, rc);
    if (r->info.placement != MORAINE_PLACE_ROWS)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s is not a non-temporal table: use insert/end", name));
    if (ord < 0) return fail(txn, mr_err(MORAINE_EINVAL, "%s: put_row needs a row position >= 0", name));
    if ((rc = mr_check_value(r, row, ncols, ord))) return fail(txn, rc);
    if ((rc = take_ord(txn, r, ord, &ord))) return fail(txn, rc);
    rc = put_rows_value(txn, r, row, ncols, ord, 0);
    return rc ? fail(txn, rc) : 0;
}

int moraine_txn_delete_row(moraine_txn *txn, const char *name, int64_t ord)
{
    int rc = usable(txn);
    if (rc) return rc;
    mr_rel *r;
    if ((rc = rel_of(txn, name, &r))) return fail(txn, rc);
    if (r->info.placement != MORAINE_PLACE_ROWS)
        return fail(txn, mr_err(MORAINE_EINVAL, "%s is not a non-temporal table: its rows are ended, not deleted", name));
    if ((rc = mr_rows_key(&txn->kb, r, ord))) return fail(txn, rc);
    MDB_val k = {txn->kb.len, txn->kb.p};
    int mrc = mdb_del(txn->t, txn->db->dbi, &k, NULL);
    if (mrc == MDB_NOTFOUND) return fail(txn, mr_err(MORAINE_ENOTFOUND, "%s: no row at position %lld", name, (long long)ord));
    if (mrc) return fail(txn, mr_lmdb_err(mrc, name));
    if ((rc = count_entry(txn, r, txn->kb.p, txn->kb.len, -1))) return fail(txn, rc);
    return 0;
}

/* ---- commit / abort ---- */

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    return x->rel_id < y->rel_id ? -1 : x->rel_id > y->rel_id;
}

static int encode_pending(pending *e, mr_buf *v)
{
    v->len = 0;
    int rc = mr_value_begin(v);
    if (!rc) rc = mr_encode_row(v, e->ord, e->vals, e->ncols);
    if (e->ngroups > 1) qsort(e->groups, e->ngroups, sizeof *e->groups, cmp_group);
    for (size_t i = 0; !rc && i < e->ngroups; i++) {
        group *g = &e->groups[i];
        rc = mr_put_uvarint(v, g->rel_id);
        if (!rc) rc = mr_put_uvarint(v, g->nrows);
        if (!rc) rc = mr_put_uvarint(v, g->bytes.len);
        if (!rc) rc = mr_buf_put(v, g->bytes.p, g->bytes.len);
    }
    if (!rc) mr_value_seal(v, 0, e->target.p, e->target.len);
    return rc;
}

static int flush(moraine_txn *txn)
{
    mr_buf v = {0};
    int rc = 0;
    MDB_dbi dbi = txn->db->dbi;
    for (size_t i = 0; !rc && i < txn->nlist; i++) {
        pending *e = txn->list[i];
        if (e->discarded) continue;
        if (e->delete_current) {
            MDB_val k = {e->ident.len, e->ident.p};
            int mrc = mdb_del(txn->t, dbi, &k, NULL);
            if (mrc && mrc != MDB_NOTFOUND) rc = mr_lmdb_err(mrc, "moving a row to history");
            if (!mrc) rc = count_entry(txn, e->rel, k.mv_data, k.mv_size, -1);
        }
        if (!rc) rc = encode_pending(e, &v);
        if (!rc) {
            MDB_val k = {e->target.len, e->target.p}, val = {v.len, v.p};
            int mrc = put_counted(txn, e->rel, &k, &val, e->history_noover ? MDB_NOOVERWRITE : 0);
            if (mrc == MDB_KEYEXIST) {
                char desc[256];
                mr_describe_row(e->rel, e->vals, e->ncols, desc, sizeof desc);
                rc = mr_err(MORAINE_EEXIST, "%s row %s: a history version with the same key, begin and end already exists", e->rel->info.name, desc);
            } else if (mrc) {
                rc = mr_lmdb_err(mrc, "writing a row");
            }
        }
    }
    mr_buf_free(&v);
    /* descriptors, counters, last snapshot */
    for (size_t i = 0; !rc && i < txn->ndefs; i++) {
        mr_rel *r = txn->defs[i];
        mr_buf k = {0}, val = {0};
        rc = mr_meta_key(&k, "rel");
        if (!rc) rc = mr_key_int(&k, r->info.id);
        if (!rc) rc = mr_rel_encode(&val, r, &k);
        if (!rc) {
            MDB_val mk = {k.len, k.p}, mv = {val.len, val.p};
            int mrc = mdb_put(txn->t, dbi, &mk, &mv, 0);
            if (mrc) rc = mr_lmdb_err(mrc, "writing a table descriptor");
        }
        mr_buf_free(&k);
        mr_buf_free(&val);
    }
    if (!rc && txn->ndefs) {
        int64_t gen = 0;
        rc = mr_meta_get_int(txn->t, dbi, "rels_gen", &gen);
        if (rc >= 0) rc = mr_meta_put_int(txn->t, dbi, "rels_gen", gen + 1);
        txn->new_gen = gen + 1;
        if (!rc && txn->next_rel_id) rc = mr_meta_put_int(txn->t, dbi, "next_rel_id", txn->next_rel_id);
    }
    for (size_t id = 0; !rc && id < txn->nord; id++) {
        if (!txn->ord_dirty[id]) continue;
        char name[32];
        snprintf(name, sizeof name, "ord:%zu", id);
        rc = mr_meta_put_int(txn->t, dbi, name, txn->next_ord[id]);
    }
    if (!rc && txn->snapshot != MORAINE_NO_SNAPSHOT) rc = mr_meta_put_int(txn->t, dbi, "last_snapshot", txn->snapshot);
    if (!rc) rc = mr_counts_flush(txn->t, dbi, &txn->counts);
    return rc;
}

/* A counter of the ducklake_snapshot row @vals (NULL when the column is
 * absent or not an integer). */
static const moraine_value *snap_counter(const mr_rel *r, const moraine_value *vals, const char *col)
{
    int i = moraine_column_index(&r->info, col);
    return i >= 0 && vals[i].type == MORAINE_INT ? &vals[i] : NULL;
}

/* A staged commit with a snapshot id is one whole DuckLake snapshot: in a
 * catalog that has the ducklake_snapshot table, the commit carries that
 * table's row for its own id, whose counters (schema_version,
 * next_catalog_id, next_file_id) are not negative and not below those of the
 * last committed snapshot's row. A commit without it would leave a last
 * snapshot no verb can build on. An import's intermediate commits may lack
 * the row (DuckLake expires snapshots: rows can begin at an expired one). */
static int whole_snapshot(moraine_txn *txn)
{
    if (txn->snapshot == MORAINE_NO_SNAPSHOT || txn->partial_snapshot) return 0;
    mr_rel *r = mr_txn_rel(txn, "ducklake_snapshot");
    if (!r || r->info.ncols == 0) return 0; /* not a DuckLake catalog: moraine's own tests, say */
    int rc = mr_snapshot_key(&txn->kb, txn->snapshot);
    if (rc) return rc;
    pending *p = lookup(txn, &txn->kb);
    if (!p || p->discarded)
        return mr_err(MORAINE_ESNAPSHOT,
                      "commit of snapshot %lld has no ducklake_snapshot row for it: a staged commit must be a whole DuckLake snapshot "
                      "(insert its ducklake_snapshot row, as the verbs do); nothing was written",
                      (long long)txn->snapshot);
    static const char *const counters[] = {"schema_version", "next_catalog_id", "next_file_id"};
    for (int i = 0; i < 3; i++) {
        const moraine_value *v = snap_counter(r, p->vals, counters[i]);
        if (v && v->i < 0)
            return mr_err(MORAINE_ESNAPSHOT, "ducklake_snapshot row of snapshot %lld: %s %lld is negative; nothing was written",
                          (long long)txn->snapshot, counters[i], (long long)v->i);
    }
    int64_t last = 0;
    int have = mr_meta_get_int(txn->t, txn->db->dbi, "last_snapshot", &last);
    if (have <= 0) return have;
    if ((rc = mr_snapshot_key(&txn->kb, last))) return rc;
    MDB_val k = {txn->kb.len, txn->kb.p}, v;
    int mrc = mdb_get(txn->t, txn->db->dbi, &k, &v);
    if (mrc == MDB_NOTFOUND) return 0; /* the last snapshot has no row (a catalog verify reports): nothing to compare */
    if (mrc) return mr_lmdb_err(mrc, "reading the last snapshot's row");
    if (!mr_value_ok(&txn->bounds, &v)) return mr_err(MORAINE_ECORRUPT, "the last snapshot's row runs past the end of the file");
    moraine_value *prev = calloc(r->info.ncols, sizeof *prev);
    if (!prev) return mr_err(MORAINE_ENOMEM, "out of memory");
    const uint8_t *vp = v.mv_data, *end = vp + v.mv_size;
    int64_t ord;
    size_t n = 0;
    if ((rc = mr_decode_header(&vp, end, k.mv_data, k.mv_size)) == 0) rc = mr_decode_row(&vp, end, &ord, prev, r->info.ncols, &n);
    if (!rc && n != r->info.ncols) rc = mr_err(MORAINE_ECORRUPT, "the last snapshot's row has %zu columns", n);
    if (rc) {
        char m[400];
        snprintf(m, sizeof m, "%s", moraine_errmsg());
        rc = mr_err(rc, "ducklake_snapshot row S(%lld) is damaged: %s", (long long)last, m);
    }
    for (int i = 0; !rc && i < 3; i++) {
        const moraine_value *now = snap_counter(r, p->vals, counters[i]), *before = snap_counter(r, prev, counters[i]);
        if (now && before && now->i < before->i)
            rc = mr_err(MORAINE_ESNAPSHOT, "ducklake_snapshot row of snapshot %lld: %s %lld is below %lld of the last snapshot %lld; nothing was written",
                        (long long)txn->snapshot, counters[i], (long long)now->i, (long long)before->i, (long long)last);
    }
    free(prev);
    return rc;
}

void mr_txn_partial_snapshot(moraine_txn *txn, int partial) { txn->partial_snapshot = partial; }

int moraine_txn_partial(moraine_txn *txn, int partial)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "moraine_txn_partial: no transaction");
    mr_txn_partial_snapshot(txn, partial != 0);
    return 0;
}

static void txn_free(moraine_txn *txn)
{
    for (size_t i = 0; i < txn->nlist; i++) pending_free(txn->list[i]);
    free(txn->list);
    free(txn->slots);
    for (size_t i = 0; i < txn->ndefs; i++) mr_rel_free(txn->defs[i]);
    free(txn->defs);
    free(txn->next_ord);
    free(txn->ord_dirty);
    mr_buf_free(&txn->kb);
    mr_buf_free(&txn->kb2);
    mr_counts_free(&txn->counts);
    free(txn);
}

int moraine_txn_commit(moraine_txn *txn)
{
    if (!txn) return mr_err(MORAINE_EINVAL, "NULL transaction");
    moraine_db *db = txn->db;
    int prc = mr_same_process(db);
    if (prc) {
        mr_txn_forget(txn);
        return mr_err(prc, "%s", moraine_errmsg());
    }
    int rc = txn->failed ? mr_err(txn->failed, "%s", txn->failmsg) : whole_snapshot(txn);
    if (!rc) rc = flush(txn);
    if (rc) {
        if (rc == MORAINE_EMAPFULL)
            rc = mr_err(MORAINE_EMAPFULL, "the commit does not fit in the catalog's map (map size %zu bytes, max_map_size %zu): "
                        "raise max_map_size; nothing was written", db->opts.map_size, db->opts.max_map_size);
        mdb_txn_abort(txn->t);
        writer_done(db->sh);
        db->writer = NULL;
        txn_free(txn);
        return rc;
    }
    int mrc = mdb_txn_commit(txn->t);
    writer_done(db->sh);
    db->writer = NULL;
    /* the environment may have been opened no_sync by another handle */
    if (!mrc && db->sh->no_sync && !db->opts.no_sync) mrc = mdb_env_sync(db->env, 1);
    if (!mrc) dead_reader_check(db->sh);
    if (mrc) {
        txn_free(txn);
        return mrc == MDB_MAP_FULL ? mr_err(MORAINE_EMAPFULL, "the commit does not fit in the catalog's map: raise max_map_size; nothing was written")
                                   : mr_lmdb_err(mrc, "committing");
    }
    /* descriptors become the handle's (they are in the store now) */
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < txn->ndefs; i++) {
        if (mr_rels_add(db, txn->defs[i]) == 0) txn->defs[i] = NULL;
    }
    size_t kept = 0;
    for (size_t i = 0; i < txn->ndefs; i++)
        if (txn->defs[i]) txn->defs[kept++] = txn->defs[i];
    /* the handle holds every descriptor of the generation this commit wrote
     * (it loaded the store's at begin, under the writer lock); if one could
     * not be added, the next read reloads them all */
    if (txn->ndefs && kept == 0) db->rels_gen = (uint64_t)txn->new_gen;
    txn->ndefs = kept;
    pthread_mutex_unlock(&db->mu);
    txn_free(txn);
    return 0;
}

void moraine_txn_abort(moraine_txn *txn)
{
    if (!txn) return;
    if (txn->db->pid != getpid()) {
        mr_txn_forget(txn);
        return;
    }
    mdb_txn_abort(txn->t);
    writer_done(txn->db->sh);
    txn->db->writer = NULL;
    txn_free(txn);
}

/* A transaction inherited across fork: its LMDB state (the writer lock, the
 * dirty pages' bookkeeping) is the parent's, so only this process's memory
 * is freed; LMDB's transaction object stays allocated. */
void mr_txn_forget(moraine_txn *txn)
{
    txn->db->writer = NULL;
    txn_free(txn);
}

/* ---- for engine/history_rewrite.c (the transaction's internals stay here) ---- */

MDB_txn *mr_txn_lmdb(moraine_txn *txn) { return txn->t; }
MDB_dbi mr_txn_dbi(moraine_txn *txn) { return txn->db->dbi; }
const mr_bounds *mr_txn_bounds(moraine_txn *txn) { return &txn->bounds; }
int64_t mr_txn_snapshot(moraine_txn *txn) { return txn->snapshot; }
int mr_txn_rewinding(moraine_txn *txn) { return txn->rewind; }
void mr_txn_set_rewind(moraine_txn *txn, int on) { txn->rewind = on; }
int mr_txn_usable(moraine_txn *txn) { return usable(txn); }
int mr_txn_fail(moraine_txn *txn, int rc) { return fail(txn, rc); }
size_t mr_txn_staged(moraine_txn *txn) { return txn->nlist; }
int mr_txn_count(moraine_txn *txn, const mr_rel *r, const uint8_t *k, size_t n, int delta) { return count_entry(txn, r, k, n, delta); }
int mr_txn_take_ord(moraine_txn *txn, mr_rel *r, int64_t ord, int64_t *out) { return take_ord(txn, r, ord, out); }
