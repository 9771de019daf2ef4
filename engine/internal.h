/*
 * internal.h — shared by the engine's source files; not installed.
 * One concept per file: error.c (messages), key.c (tuple keys), codec.c
 * (values), tables.c (DuckLake's tables and their placement), store.c
 * (catalog handle and relation descriptors), txn.c, txn_rows.c and commit.c
 * (staged commits: the transaction, its rows, its commit; txn_internal.h),
 * read.c (temporal reads), ndjson.c (import/export), verbs_*.c (the verb
 * path; verbs_internal.h).
 *
 * The calls go one way: store.c calls nothing of the transaction's files;
 * they call store.c; the verbs, ndjson.c and the readers call both.
 */
#ifndef MORAINE_INTERNAL_H
#define MORAINE_INTERNAL_H

#include "moraine.h"
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

/* ---- error.c ---- */
int mr_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mr_lmdb_err(int rc, const char *what);

/* ---- compact.c ---- */
/* fsync of the file (@dir 0) or directory (@dir nonzero) at @path: 0, or -1
 * with errno set (open or fsync failed). */
int mr_fsync_path(const char *path, int dir);

/* ---- buffers ---- */
typedef struct {
    uint8_t *p;
    size_t len, cap;
} mr_buf;
int mr_buf_reserve(mr_buf *b, size_t extra);
int mr_buf_put(mr_buf *b, const void *src, size_t n);
int mr_buf_byte(mr_buf *b, uint8_t c);
void mr_buf_free(mr_buf *b);

/* ---- key.c: order-preserving tuple encoding (docs/keyspace.md) ---- */
enum { MR_SUB_META = 'M', MR_SUB_COUNT = 'N', MR_SUB_CURRENT = 'C', MR_SUB_HISTORY = 'H', MR_SUB_SNAPSHOT = 'S', MR_SUB_ROWS = 'R' };
enum { MR_K_NULL = 0x00, MR_K_STR = 0x02, MR_K_INT = 0x14 };
#define MR_KEY_INT_LEN 9
#define MR_MAX_KEY 511 /* LMDB's default maximum key size */
int mr_key_int(mr_buf *b, int64_t v);
int mr_key_str(mr_buf *b, const char *s, size_t n);
int mr_key_value(mr_buf *b, const moraine_value *v);
/* decode one element at *p; returns 0 and advances, or MORAINE_ECORRUPT.
 * For strings, the decoded bytes are written to @scratch (escapes removed). */
int mr_key_next(const uint8_t **p, const uint8_t *end, moraine_value *out, mr_buf *scratch);
void mr_key_describe(const uint8_t *k, size_t n, char *out, size_t outlen);

/* ---- count.c: entries per key range, integers with a checksum ---- */
size_t mr_elem_len(const uint8_t *p, const uint8_t *end); /* length of the key element at p, 0 if malformed */
/* length of the counted range prefix of key @k (C/H/S/R), 0 for keys not counted;
 * @scoped: the key's relation is keyed by table_id first */
size_t mr_count_prefix(int scoped, const uint8_t *k, size_t n);
/* meta integers and counts: 8 bytes big-endian + CRC-32C of key and value.
 * get returns 1 and sets *out, 0 when absent, or an error; answered by the
 * environment's cache when it knows the value for @t (int_cache.c) */
int mr_int_get(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen, int64_t *out);
/* mr_int_get from the stored bytes, checksum checked, never the cache
 * (moraine_verify checks what is stored) */
int mr_int_get_stored(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen, int64_t *out);
int mr_int_put(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen, int64_t v);
/* Deletes the integer under @key (none there: fine, and not a write); 0, or
 * MORAINE_ELMDB / MORAINE_EMAPFULL (mr_lmdb_err). */
int mr_int_del(MDB_txn *t, MDB_dbi dbi, const uint8_t *key, size_t keylen);
/* the 12 bytes mr_int_put stores for @v under @key */
void mr_int_encode(uint8_t b[12], const uint8_t *key, size_t keylen, int64_t v);
typedef struct {
    uint8_t key[80];  /* range prefix, without the N byte (C/H prefixes with string scopes longer than this are refused) */
    size_t len;
    int64_t n, stored;
} mr_count_ent;
typedef struct {
    mr_count_ent *v;
    size_t n, cap;
} mr_counts;
int mr_counts_add(mr_counts *m, const uint8_t *k, size_t n, int64_t delta);
void mr_counts_free(mr_counts *m);
int mr_counts_flush(MDB_txn *t, MDB_dbi dbi, const mr_counts *m);
/* sum of the counts of ranges under @prefix, from range @from on (NULL: all) */
int mr_count_sum(MDB_txn *t, MDB_dbi dbi, const uint8_t *prefix, size_t plen, const uint8_t *from, size_t flen, int64_t *sum);
int mr_count_mismatch(const uint8_t *prefix, size_t plen, int64_t met, int64_t counted); /* the ECORRUPT error */

/* ---- codec.c: record values (docs/codec.md) ---- */
/* 5: an embedded child row does not store its parent-key columns (they are
 * its parent's); 4: a child row carries no column count and its ord as the
 * difference from the row before it in the group; 3: child rows carry their
 * byte length; 2: without it; 1: the value checksum covered the value only
 * (docs/codec.md, Versioning) */
#define MR_FORMAT_VERSION 5
#define MR_FORMAT_OLDEST 2 /* the oldest format moraine_compact rewrites */
enum { MR_T_NULL = 0, MR_T_INT = 1, MR_T_STR = 2, MR_T_FALSE = 3, MR_T_TRUE = 4, MR_T_REAL = 5, MR_T_JSON = 6 };
int mr_put_uvarint(mr_buf *b, uint64_t v);
int mr_get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *out);
int mr_encode_row(mr_buf *b, int64_t ord, const moraine_value *vals, size_t n);
typedef moraine_parent_keys mr_keymap; /* moraine.h; mr_child_keymap below, with mr_rel */
/* a child row as a group holds it: its byte length, the zigzag of @ord less
 * @prev (the ord of the row before it in the group, 0 for the first), then
 * its @n cells but those of @km's columns (NULL: all), no count (the
 * relation's column count); on error nothing is appended */
int mr_encode_child_row(mr_buf *b, int64_t prev, int64_t ord, const moraine_value *vals, size_t n, const mr_keymap *km);
/* the ord a child row's stored difference @u gives after @prev (wrapping, as
 * mr_encode_child_row took the difference) */
static inline int64_t mr_child_ord(int64_t prev, uint64_t u)
{
    return (int64_t)((uint64_t)prev + (uint64_t)((int64_t)(u >> 1) ^ -(int64_t)(u & 1)));
}
/* mr_get_uvarint inline: the one-byte case first (most varints of a row),
 * then, with 10 bytes left, an unrolled loop with no bound check per byte;
 * the same checks (shortest form, 64 bits) as mr_get_uvarint. */
static inline int mr_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(p < end && *p < 0x80, 1)) {
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    if (end - p >= 10) {
        uint64_t v = *p & 0x7F;
        for (int i = 1; i < 10; i++) {
            uint8_t c = p[i];
            v |= (uint64_t)(c & 0x7F) << (7 * i);
            if (c < 0x80) {
                if (c == 0 || (i == 9 && c > 1)) break; /* not shortest, or overflow: the slow path says which */
                *out = v;
                *pp = p + i + 1;
                return 0;
            }
        }
    }
    return mr_get_uvarint(pp, end, out);
}

/* decodes ord + row at *p into vals (capacity cap); *ncols receives the count.
 * Returns 0 or MORAINE_ECORRUPT (never reads past end). */
int mr_decode_row(const uint8_t **p, const uint8_t *end, int64_t *ord, moraine_value *vals, size_t cap, size_t *ncols);
/* past the uvarint at @p, which a decoder has already read without error
 * (no bounds or form checked again) */
static inline const uint8_t *mr_past_uvarint(const uint8_t *p)
{
    while (*p & 0x80) p++;
    return p + 1;
}
/* the cells of the row at @row, past its ord and count: for a row that
 * mr_decode_row (or the projected decode) has read without error */
static inline const uint8_t *mr_row_cells(const uint8_t *row) { return mr_past_uvarint(mr_past_uvarint(row)); }
/* decodes @n cells at *p into vals (the cells of a row after its head) with
 * mr_decode_row's checks; 0 or MORAINE_ECORRUPT */
int mr_decode_cells(const uint8_t **p, const uint8_t *end, moraine_value *vals, size_t n);
/* decodes the child row of @n columns at *p, which ends at @rend (its length
 * read by mr_child_row_span), after the row of ord @prev (0: the first of
 * its group): *ord, the values (those of @km's columns, not stored, from
 * @pkey[j]; @km NULL: every column stored), and in *cells (may be NULL) where
 * the stored cells begin; MORAINE_ECORRUPT (naming @rel) when a cell is
 * damaged or the cells do not end exactly at @rend */
int mr_decode_child_row(const uint8_t **p, const uint8_t *rend, const char *rel, int64_t prev, int64_t *ord, moraine_value *vals, size_t n,
                        const mr_keymap *km, const moraine_value *pkey, const uint8_t **cells);
/* the @n values of a child row whose stored cells are at *p (@km's columns
 * not stored: from @pkey) into vals, with mr_decode_cells' checks */
int mr_decode_child_cells(const uint8_t **p, const uint8_t *end, moraine_value *vals, size_t n, const mr_keymap *km, const moraine_value *pkey);
/* value header: version byte and CRC-32C of the key, then of the rest of the
 * value (docs/codec.md): a value is bound to the key it is stored under */
#define MR_HEADER_LEN 5
int mr_value_begin(mr_buf *b);   /* appends the header, checksum to be filled */
/* reads a child row's length at *p (moved past it); *rend = where the row
 * ends; MORAINE_ECORRUPT when the length is damaged or runs past @end */
int mr_child_row_span(const uint8_t **p, const uint8_t *end, const uint8_t **rend);
/* reads a child group's head at *p (moved past it): its relation id, its
 * row count and *gend = where its rows end (its nbytes); MORAINE_ECORRUPT
 * when a varint is damaged or the group runs past @end */
int mr_group_head(const uint8_t **p, const uint8_t *end, uint64_t *rel_id, uint64_t *nrows, const uint8_t **gend);
/* mr_decode_header for format 2, 3, 4 or 5 (*version): relation descriptors,
 * which are the same in all four, and moraine_compact's rewrite of an older
 * catalog */
int mr_decode_header_any(const uint8_t **p, const uint8_t *end, const uint8_t *key, size_t keylen, int *version);
/* the stored record @v (format 2, 3, 4 or 5, under @key) as format 5 into @out
 * (cleared first), sealed under @key: each child row as
 * mr_encode_child_row writes it (without the parent-key cells, which must
 * be the parent's), its column count checked against its
 * relation in @db; MORAINE_ECORRUPT (and @out undefined) when it does not
 * decode */
int mr_upgrade_value(moraine_db *db, mr_buf *out, const uint8_t *v, size_t vlen, const uint8_t *key, size_t keylen);
/* fills the checksum of the value starting at @start, stored under @key */
void mr_value_seal(mr_buf *b, size_t start, const uint8_t *key, size_t keylen);
/* checks version and checksum of a value read under @key; advances past the header */
int mr_decode_header(const uint8_t **p, const uint8_t *end, const uint8_t *key, size_t keylen);
uint32_t mr_crc32c(const uint8_t *p, size_t n);
uint32_t mr_crc32c_update(uint32_t crc, const uint8_t *p, size_t n); /* mr_crc32c(a||b) == update(mr_crc32c(a), b) */
/* the CRC-32C paths, for tests: mr_crc32c_best() the fastest this CPU has
 * (3: from 128 bytes, 64-byte blocks folded by VPCLMULQDQ (AVX-512), shorter
 * buffers as 2; 2: the crc32 instruction in three lanes as long as the
 * buffer, joined by PCLMULQDQ; 1: in lanes of 64 bytes, joined by a table;
 * 0: a table), and
 * mr_crc32c_update by path @path (0 .. mr_crc32c_best()) */
int mr_crc32c_best(void);
uint32_t mr_crc32c_path(int path, uint32_t crc, const uint8_t *p, size_t n);

/* ---- json.c ---- */
int mr_json_string(mr_buf *b, const char *s, size_t n); /* 1: not valid UTF-8 */
int mr_utf8_valid(const char *s, size_t n); /* 1 when @s is valid UTF-8 */
/* @secrets: nonzero writes secret columns as stored (export); 0 redacts them */
int mr_json_row(mr_buf *b, const moraine_relation_info *rel, const moraine_value *vals, size_t n, int open, int secrets);

/* ---- tables.c: DuckLake's tables ---- */
typedef struct {
    const char *name;
    moraine_placement placement;
    const char *parent;     /* child: parent table */
    const char *key;        /* comma-separated key columns (temporal/child->parent key) */
    int scoped;             /* first key column is table_id: per-table range */
    const char *columns;    /* "name:T,..." T in B V O (BOOLEAN) K (VARCHAR, secret) */
} mr_known_table;
const mr_known_table *mr_known(const char *name);
moraine_coltype mr_known_coltype(const mr_known_table *kt, const char *col);
/* the column names moraine knows for @kt, in DuckLake's order (malloc'd,
 * each and the array); returns their number, 0 for NULL, (size_t)-1 on ENOMEM */
size_t mr_known_columns(const mr_known_table *kt, char ***out);
unsigned mr_known_colflags(const mr_known_table *kt, const char *col); /* MORAINE_COL_SECRET or 0 */
/* The DuckLake release whose columns every catalog of @version has (1 = 0.1,
 * 2 = 0.2, 3 = 0.3, 4 = 0.4, 5 = 1.0; a dev version: the release before it;
 * an unknown version or NULL: 1). */
int mr_known_release(const char *version);
/* The release (as mr_known_release) since which DuckLake's table @table has
 * column @col: 1 for a column the table always had (or one moraine does not
 * list as added later). */
int mr_known_column_since(const char *table, const char *col);
/* The release (as mr_known_release) since which every DuckLake catalog has
 * table @table (its migrations create it: docs/upgrade.md); 0 for a table
 * moraine does not know (ducklake_file_column_stats, named
 * ducklake_file_column_statistics before, is required from 0.3). */
int mr_known_table_since(const char *table);

/* ---- store.c: handle and relation descriptors ---- */
#define MR_MAX_KEYCOLS 4
typedef struct mr_rel {
    moraine_relation_info info;
    size_t namelen;          /* strlen(info.name): lookups by name compare lengths first */
    char **names;            /* owned column names */
    moraine_coltype *types;
    unsigned *flags;         /* MORAINE_COL_* flags per column */
    int nkey;                /* key columns (0: keyed by ord) */
    int keycols[MR_MAX_KEYCOLS];
    int scoped;
    struct mr_rel *parent_rel; /* child relations */
    int parentkey[MR_MAX_KEYCOLS]; /* child columns giving the parent's key, in parent key order */
    int nchildren;           /* number of child relations (for parents) */
} mr_rel;

/* Format 5: the columns of an embedded child row that are not stored, its
 * parent-key columns, whose values are its parent's key cells (a child is
 * embedded under the parent its key cells name, so they are equal: NULL, an
 * integer or a string each; docs/codec.md): an mr_keymap (moraine.h's
 * moraine_parent_keys), MR_MAX_KEYCOLS at most. */
_Static_assert(MR_MAX_KEYCOLS == sizeof ((mr_keymap *)0)->ccol / sizeof(int), "moraine_parent_keys holds MR_MAX_KEYCOLS columns");
/* The keymap of child relation @child embedded in rows of @parent; 0, or
 * MORAINE_ECORRUPT when @child is not a child relation of @parent or their
 * key columns do not pair up (a damaged group's relation id, or a catalog
 * whose tables disagree). */
int mr_child_keymap(const mr_rel *child, const mr_rel *parent, mr_keymap *km);
/* The cells of columns @cols[0..n) (any order, each < the row's count) of
 * the parent row whose cells are @raw (@len bytes, moraine_row.raw) into
 * out[0..n); 0 or MORAINE_ECORRUPT (a cell that does not decode, or fewer
 * cells than asked). */
int mr_pick_cells(const uint8_t *raw, size_t len, const int *cols, int n, moraine_value *out);

/* ---- int_cache.c: the stored integers of one environment, cached ---- */
#define MR_IC_KEYMAX 48 /* longer keys are not cached */
typedef struct {
    uint8_t len, present; /* present 0: the key is not in the store */
    uint8_t key[MR_IC_KEYMAX];
    int64_t v;
} mr_ic_ent;
typedef struct {
    mr_ic_ent *v; /* sorted by key */
    size_t n, cap;
} mr_ic_map;
typedef struct {
    pthread_mutex_t mu; /* guards all below */
    uint64_t txnid;     /* base holds values as of this committed LMDB transaction (0: none) */
    mr_ic_map base;
    MDB_dbi dbi;        /* the catalog's database (the only one cached) */
    int has_dbi;
    const MDB_txn *w;   /* the staged write transaction open on the environment (txn.c), if any */
    uint64_t wid;       /* its LMDB id */
    int woff;           /* a write of it was not recorded: the cache is off for it */
    mr_ic_map wrote;    /* what it wrote (present 0: deleted) */
    uint64_t gen;       /* registrations so far: the last one's ticket */
} mr_int_cache;
void mr_int_cache_init(mr_int_cache *c);
void mr_int_cache_free(mr_int_cache *c);
/* The integer under key @k (@n bytes) as transaction @t reads it, when the
 * cache knows: 1 (*out set) or 0 (no such key); -1 when it does not know. */
int mr_int_cache_get(MDB_txn *t, MDB_dbi dbi, const uint8_t *k, size_t n, int64_t *out);
/* Records what @t read from LMDB for @k (after its checksum passed). */
void mr_int_cache_read(MDB_txn *t, MDB_dbi dbi, const uint8_t *k, size_t n, int present, int64_t v);
/* Records that @t wrote @k (present 0: deleted it); @ok 0 when the write
 * failed (the cache is then off for the rest of @t). */
void mr_int_cache_wrote(MDB_txn *t, MDB_dbi dbi, const uint8_t *k, size_t n, int ok, int present, int64_t v);
/* Registers write transaction @w, just begun (moraine_txn_begin); its
 * ticket, for mr_int_cache_detach and mr_int_cache_end (0: the environment
 * has no cache). */
uint64_t mr_int_cache_begin(MDB_env *env, MDB_txn *w);
/* Called just before mdb_txn_commit of registration @ticket, while it holds
 * LMDB's writer lock: from here on no transaction is taken for it (the next
 * write transaction is the same MDB_txn object); what it wrote is kept for
 * mr_int_cache_end. */
void mr_int_cache_detach(MDB_env *env, uint64_t ticket);
/* Ends registration @ticket: @committed 1 when LMDB committed it (what it
 * wrote becomes the cache's state when nothing registered or moved the
 * cache past it since). Nothing when another registered since, or when it
 * ended already. An abort calls it before mdb_txn_abort. */
void mr_int_cache_end(MDB_env *env, uint64_t ticket, int committed);

/* One LMDB environment per catalog file per process, shared by the handles
 * that open it (store.c; registry guarded by a global mutex). */
typedef struct mr_env {
    MDB_env *env;
    dev_t dev;               /* data.mdb's device and inode */
    ino_t ino;
    pid_t pid;               /* the process that opened it */
    unsigned forks;          /* mr_forks when it was opened (a fork's child, even with the same pid in another pid namespace, differs) */
    int refs;                /* handles sharing it */
    int shared;              /* another handle shared it since it was opened (reg_mu): a failed first open then keeps the files */
    int read_only, no_sync;  /* how it was opened */
    pthread_mutex_t mu;      /* guards writer/writer_thread, commits, last_check */
    int nreaders;            /* read transactions open in this process (map growth needs none) */
    int writer;              /* a write transaction is open (through any handle) */
    int starting;            /* write transactions being begun (moraine_txn_begin, counted under mu before mdb_txn_begin and
                              * until writer is set): LMDB reads its meta page through the map as one begins, so the map
                              * is not remapped while any is counted */
    pthread_t writer_thread;
    const char *map_base;    /* where data.mdb is mapped (found once), for mr_value_ok */
    unsigned commits;        /* commits since the last dead-reader check */
    int64_t last_check_ms;   /* when the writer last cleared dead readers */
    mr_int_cache ic;         /* its stored integers (int_cache.c); the LMDB environment's user context is this mr_env */
    struct mr_env *next;
} mr_env;

struct moraine_db {
    mr_env *sh;              /* the process's environment for this catalog */
    pid_t pid;               /* the process that opened the handle */
    unsigned forks;          /* mr_forks when it was opened (mr_same_process) */
    MDB_env *env;            /* sh->env */
    MDB_dbi dbi;
    moraine_options opts;
    pthread_mutex_t mu;      /* guards rels */
    mr_rel **rels;           /* by definition order */
    size_t nrels, caprels;
    mr_rel **byid;           /* indexed by relation id */
    size_t capid;
    mr_rel **retired;        /* replaced descriptors kept until close */
    size_t nretired;
    uint64_t rels_gen;       /* generation of descriptors loaded */
    moraine_txn *writer;     /* open write txn of this handle, if any */
    int need_marker;         /* opened on a new catalog without writing its format marker (another handle opened the environment
                              * and writes it): this handle's commits write it if it is still missing (commit.c) */
    int format;              /* the catalog's format marker as of open, or 3 once a read, a commit or a clear found or
                              * wrote 3 since (2: only moraine_compact reads it); read and written atomically */
    /* the verb path's tables as of this handle's last verb commit
     * (verbs_cache.c): valid only while the store's last LMDB transaction
     * is the one that commit made; guarded by mu */
    struct mv_reads_s *vcache;
};

/* MORAINE_EFORK unless @db is used in the process that opened it (the same
 * pid and the same fork count: mr_db_here). */
int mr_same_process(moraine_db *db);
/* 1 when @db is used in the process that opened it: the same pid (a child
 * made without fork's handlers, _Fork or a raw clone, has another) and the
 * same fork count (a fork's child that has its parent's pid number, in a new
 * pid namespace, has another); else 0. */
int mr_db_here(const moraine_db *db);
/* How many times this process is a fork's child since moraine_open first ran
 * in an ancestor (a pthread_atfork child handler counts them, registered by
 * moraine_open): a handle records it at open, and every call on a read of
 * the handle (its cursors included) compares, a load and a compare, where
 * getpid() would be a system call a row. */
extern unsigned mr_forks;
/* mr_forks now. */
static inline unsigned mr_forks_now(void) { return __atomic_load_n(&mr_forks, __ATOMIC_RELAXED); }
/* Registers the handler that counts mr_forks (once a process; moraine_open). */
void mr_fork_watch(void);
/* MORAINE_EFORK naming both processes: read @rd was begun in another process
 * (its fork parent), whose LMDB reader slot it holds, not this one's. */
int mr_read_forked(const moraine_read *rd);
/* 0 while @rd is used in the process that began it, else mr_read_forked. A
 * read begins only in its handle's process (mr_same_process), so the
 * handle's fork count is the read's. */
#define MR_READ_HERE(rd) (__builtin_expect(mr_forks_now() != (rd)->db->forks, 0) ? mr_read_forked(rd) : 0)
/* MORAINE_EFORK for walk @what (a row's children) begun in process @pid, used in a fork's child. */
int mr_walk_forked(const char *what, pid_t pid);
/* moraine_read_begin without its format check (moraine_compact reads an
 * older format's catalog to rewrite it) */
int mr_read_begin(moraine_db *db, moraine_read **out);
/* 0 when the catalog of @db is in this build's store format: at once when
 * the handle knows it, else by reading the marker in @t (a catalog opened at
 * an older format and rewritten since: remembered). MORAINE_EFORMAT naming the
 * format and `moraine compact` otherwise ("this build @does 4": "reads",
 * "writes"), or the error reading the marker (moraine_read_begin,
 * moraine_txn_commit). */
int mr_format_check(moraine_db *db, MDB_txn *t, const char *does);
/* frees handle @db (its share of the environment when @release_env), after
 * its open commit was ended (moraine_close, txn.c) */
void mr_db_free(moraine_db *db, int release_env);
/* Frees the verb path's table cache of @db (db->vcache; verbs_cache.c). */
void mr_verbs_cache_free(moraine_db *db);

mr_rel *mr_rel_by_name(moraine_db *db, const char *name);
/* Whether relation @r is named @name (@len: strlen(name)). */
static inline int mr_rel_named(const mr_rel *r, const char *name, size_t len)
{
    return r->namelen == len && memcmp(r->info.name, name, len) == 0;
}
int mr_rels_add(moraine_db *db, mr_rel *r);
int mr_clear_catalog(moraine_db *db);
int mr_catalog_empty(moraine_db *db);
mr_rel *mr_rel_by_id(moraine_db *db, uint64_t id);
int mr_load_relations(moraine_db *db, MDB_txn *t);
int mr_meta_get_int(MDB_txn *t, MDB_dbi dbi, const char *name, int64_t *out);
/* mr_meta_get_int from the stored bytes (mr_int_get_stored) */
int mr_meta_get_int_stored(MDB_txn *t, MDB_dbi dbi, const char *name, int64_t *out);
int mr_meta_put_int(MDB_txn *t, MDB_dbi dbi, const char *name, int64_t v);
int mr_meta_key(mr_buf *b, const char *name);
/* The name of relation @id's row position counter, "ord:<id>", into @out
 * (what snprintf "ord:%u" gives, without its cost: the commit path names
 * several a commit). Returns @out. */
char *mr_ord_name(char out[16], uint32_t id);
int mr_rel_build(moraine_db *db, const char *name, uint32_t id, size_t ncols, const char *const *colnames, mr_rel **out);
void mr_rel_free(mr_rel *r);
int mr_rel_encode(mr_buf *b, const mr_rel *r, const mr_buf *key); /* the descriptor's value, sealed under @key */
int mr_check_value(const mr_rel *r, const moraine_value *row, size_t ncols, int64_t ord);

/* ---- txn.c, txn_rows.c, commit.c: the staged write transaction ---- */
/* frees a transaction inherited across fork without touching LMDB (txn.c) */
void mr_txn_forget(moraine_txn *txn);
/* relation @name as the transaction sees it: its own definitions first (txn.c) */
mr_rel *mr_txn_rel(moraine_txn *txn, const char *name);
int mr_txn_end_at(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord_hint); /* txn_rows.c */
int mr_txn_discard(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols);                  /* txn_rows.c */
int mr_txn_unend(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols);                    /* txn_rows.c */
/* an import's intermediate commit may lack its ducklake_snapshot row (expired snapshots; commit.c) */
void mr_txn_partial_snapshot(moraine_txn *txn, int partial);
/* The LMDB id of @txn's write transaction: the id a read of the store
 * begun after it committed (and before any other write) has (commit.c). */
uint64_t mr_txn_lmdb_id(const moraine_txn *txn);

/* key helpers (store.c; for the transaction and read.c) */
int mr_current_key(mr_buf *b, const mr_rel *r, const moraine_value *row, int64_t ord);
int mr_history_key(mr_buf *b, const mr_rel *r, const moraine_value *row, int64_t ord);
int mr_rows_key(mr_buf *b, const mr_rel *r, int64_t ord);
int mr_snapshot_key(mr_buf *b, int64_t id);
int mr_describe_row(const mr_rel *r, const moraine_value *row, size_t ncols, char *out, size_t outlen);

/* grow the map when a commit hit MDB_MAP_FULL; returns 0 if grown */
int mr_grow_map(moraine_db *db);

int mr_snapshot_row(moraine_read *rd, int64_t id, moraine_row *row);

/* DuckDB's name equality (engine/ident.c): equal after lowering ASCII A-Z;
 * NULL equals nothing. mr_ident_eqn compares @alen bytes of @a with @b. */
int mr_ident_eq(const char *a, const char *b);
int mr_ident_eqn(const char *a, size_t alen, const char *b);

/* The map and the file's length when a transaction began. Damage to LMDB's
 * own pages can hand out a value that runs past the end of the file (reading
 * it would be SIGBUS), so a value inside the map is checked against the file
 * before its bytes are touched; a value outside the map (a page the write
 * transaction itself dirtied, in heap memory) is the transaction's own. */
typedef struct {
    const char *map;
    size_t map_size, file_len;
} mr_bounds;
void mr_bounds_get(moraine_db *db, mr_bounds *b);
void mr_bounds_env(MDB_env *env, mr_bounds *b); /* the same for an environment opened without a moraine_db (bench's floors); the map looked up each call */
/* Every read-only LMDB transaction of a catalog's environment begins here and
 * ends in mr_read_txn_end: it is begun and counted (sh->nreaders) under the
 * environment's lock, which the map's growth also takes (txn.c,
 * moraine_txn_begin). LMDB remaps the file when the map grows and allows it
 * only while no transaction of the process is open, so no read may begin
 * between the check that none is open and the remap. A map grown by another
 * process (MDB_MAP_RESIZED) is adopted here when no transaction of ours is
 * open or being begun, waiting for that up to MR_ADOPT_WAIT_US
 * (mr_adopt_wait) with the lock released. @b, when not NULL, gets the map's bounds as the transaction began.
 * Returns 0 or LMDB's error code (for mr_lmdb_err). */
int mr_read_txn_begin(moraine_db *db, MDB_txn **t, mr_bounds *b);
void mr_read_txn_end(moraine_db *db, MDB_txn *t);
/* Every write transaction of a catalog's environment begins here (txn.c)
 * and ends with mdb_txn_commit/abort then mr_writer_done: refused with
 * MORAINE_ETXN when this thread already holds one on the catalog through
 * another handle (LMDB's writer lock would wait for itself); counted as
 * starting (sh->starting) under the environment's lock from before
 * mdb_txn_begin until it is the writer (sh->writer), since LMDB reads the
 * meta page through the map before it counts the transaction, and the map
 * is not remapped while any is counted. @grow: first double the map while
 * more than half is used, when nothing of the process is open or being
 * begun (moraine_txn_begin). MDB_MAP_RESIZED (another process grew the
 * map) is adopted as mr_read_txn_begin does. Returns 0, MORAINE_ETXN, or
 * MORAINE_ELMDB / MORAINE_EMAPFULL as mr_lmdb_err words LMDB's error. */
int mr_write_txn_begin(moraine_db *db, int grow, MDB_txn **t);
/* Marks the environment's writer gone, after mdb_txn_commit or
 * mdb_txn_abort ended the transaction mr_write_txn_begin began. */
void mr_writer_done(mr_env *sh);
/* Adopts the map size another process set (mdb_env_set_mapsize 0), the
 * environment's lock held, when no transaction of the process is open or
 * being begun: 1 when it did, 0 when something is. */
int mr_adopt_map_locked(mr_env *sh);
/* A begin that met MDB_MAP_RESIZED and could not adopt yet waits for the
 * process's other transactions: sleeps 50 µs, doubling to 5 ms a step, and
 * adds it to *waited_us; 0 (no sleep) once MR_ADOPT_WAIT_US have passed:
 * the begin then fails with MDB_MAP_RESIZED (a read of this thread left open
 * never ends by waiting). */
#define MR_ADOPT_WAIT_US 500000u
int mr_adopt_wait(unsigned *waited_us);
/* mdb_env_info under the same lock, for a caller with no transaction open:
 * LMDB reads it from the map's meta pages, which the map's growth unmaps */
int mr_env_info(moraine_db *db, MDB_envinfo *ei);
static inline int mr_value_ok(const mr_bounds *b, const MDB_val *v)
{
    const char *p = (const char *)v->mv_data;
    if (b->file_len && v->mv_size > b->file_len) return 0; /* no value is longer than the file */
    if (!b->map || p < b->map || p >= b->map + b->map_size) return 1;
    return p <= b->map + b->file_len && v->mv_size <= (size_t)(b->map + b->file_len - p);
}

/* How many 4 KB blocks a sequential read asks for ahead of the one it is in
 * (engine/read.c, prefetch_value; bench.c's floors prefetch the same way). */
#ifndef MR_PREFETCH_PAGES
#define MR_PREFETCH_PAGES 8
#endif

/* Whether the 4 KB block at address @a lies wholly inside the file as @b
 * found it, so a byte of it can be read without SIGBUS (engine/read.c,
 * prefetch_value). */
static inline int mr_block_in_file(const mr_bounds *b, uintptr_t a)
{
    const uintptr_t m = (uintptr_t)b->map;
    return m && a >= m && a - m <= b->file_len && b->file_len - (a - m) >= 4096;
}

/* a staged commit's internals, for engine/history_rewrite.c (defined in txn.c and txn_rows.c) */
MDB_txn *mr_txn_lmdb(moraine_txn *txn);
MDB_dbi mr_txn_dbi(moraine_txn *txn);
const mr_bounds *mr_txn_bounds(moraine_txn *txn);
int64_t mr_txn_snapshot(moraine_txn *txn);
int mr_txn_rewinding(moraine_txn *txn);        /* moraine_txn_rewind was called on it */
void mr_txn_set_rewind(moraine_txn *txn, int on);
int mr_txn_usable(moraine_txn *txn);           /* 0, or EINVAL / ETXN (the commit already failed) */
int mr_txn_fail(moraine_txn *txn, int rc);     /* marks the commit failed with @rc (nothing will be written) */
size_t mr_txn_staged(moraine_txn *txn);        /* staged rows collected so far (pending entries) */
int mr_txn_count(moraine_txn *txn, const mr_rel *r, const uint8_t *k, size_t n, int delta); /* counts an entry written/deleted */
int mr_txn_take_ord(moraine_txn *txn, mr_rel *r, int64_t ord, int64_t *out); /* ord -1: the next free one */

/* ---- project.c: projected decoding (moraine_scan_project) ---- */
typedef struct {
    mr_rel *rel;
    int *map;          /* per stored cell: output slot, MR_PROJ_SKIP (skipped by its length) or MR_PROJ_EXTRA */
    size_t ncols, nout; /* ncols: the cells a row stores (a child's columns less its parent-key columns) */
    int extra_col;     /* the stored cell the reader itself needs (begin_snapshot, snapshot_id, the match column), or -1 */
    int match_col;     /* children: the stored cell rows are filtered on, or -1 */
    int64_t *match;    /* sorted */
    size_t nmatch;
    /* the map as steps for the fast pass (project.c): skip `skip` cells, then
     * decode one into slot `slot` (>= 0, or MR_PROJ_EXTRA); `tail` cells after
     * the last step are skipped */
    struct mr_proj_step {
        uint32_t skip;
        int32_t slot;
    } *steps;
    size_t nsteps, tail;
    int match_step;    /* the step of match_col, or -1 */
    int extra_slot;    /* where the fast pass leaves extra_col's cell (nout when not projected), or -1 */
    /* children (store format 5): the columns a row does not store (km), those
     * asked for (nfill: fill[i].slot gets the parent's key cell fill[i].j),
     * and the parent-key column rows are filtered on (match_key, its index
     * in km; match_col is then -1), or -1 */
    mr_keymap km;
    int nfill;
    struct {
        int32_t slot, j;
    } fill[MR_MAX_KEYCOLS];
    int match_key;
} mr_proj_rel;
typedef struct mr_proj {
    mr_proj_rel row;
    mr_proj_rel *kids;
    size_t nkids;
    moraine_value *kvals; /* child decode buffer */
    size_t kcap;
    /* child walk of the last row */
    const uint8_t *kp, *kend, *gend;
    const uint8_t *kstart; /* where the last row's children start */
    uint64_t kleft, knrows; /* rows left in the group walked, and its row count */
    int64_t kprev;       /* ord of the group's row before the next (0 at its start) */
    int kwhich;          /* index in kids of the group walked, -1 between groups */
    const uint8_t *praw; /* the last row's cells, whose key cells its children leave out */
    size_t praw_len;
    moraine_value pkey[MR_MAX_KEYCOLS]; /* the call-a-row walk's group: its parent-key cells (when its projection asks for them) */
    /* mr_proj_group_rows: one group's rows, decoded */
    moraine_value *gvals;
    size_t gcap;
    int64_t *gords;
    size_t gocap;
} mr_proj;
int mr_proj_build(moraine_db *db, mr_rel *r, const moraine_projection *p, mr_proj **out);
int mr_proj_group_rows(mr_proj *p, moraine_db *db, size_t which, size_t *n);
void mr_proj_free(mr_proj *p);
/* one relation's projection (the body of mr_proj_build, for a parent or a
 * child): @cols NULL is every column; @match_col names the column rows are
 * filtered on (its values @match), else @extra_col is the column copied to
 * the decoders' *extra; @km (children, NULL for a parent) the columns a row
 * does not store; ENOTFOUND / EINVAL / ENOMEM; free with mr_proj_rel_free
 * (also after a failure) */
int mr_proj_rel_build(mr_rel *r, const char *const *cols, size_t ncols, const char *match_col, const int64_t *match, size_t nmatch,
                      int extra_col, const mr_keymap *km, mr_proj_rel *out);
void mr_proj_rel_free(mr_proj_rel *pr);
/* the row at *pp (ord ncols cell*) as the projection decodes it, *pp moved
 * past it (@out has room for nout + 1 values: the last is scratch): 1 when
 * kept (its projected cells in @out, the extra column's cell in
 * *extra), 0 when filtered out (a child whose match column is not among the
 * values asked for; *extra must then be non-NULL), or MORAINE_ECORRUPT.
 * mr_proj_row takes the fast pass (project.c) and falls back to
 * mr_proj_row_ref, the plain pass over the cells, which decides and words
 * every error; both give the same result for the same bytes. */
int mr_proj_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out, moraine_value *extra);
int mr_proj_row_ref(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out, moraine_value *extra);
/* the same for a child row (docs/codec.md: no column count, its ord the
 * difference from @prev, the ord of the row before it in its group) at *pp,
 * after its length: @rend is where the length says it ends; a row filtered
 * out is left with *pp at @rend */
int mr_proj_child_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *rend, int64_t prev, int64_t *ord, moraine_value *out,
                      moraine_value *extra);
int mr_proj_child_row_ref(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *rend, int64_t prev, int64_t *ord, moraine_value *out,
                          moraine_value *extra);
/* decodes the projected cells of the row at *pp (ord ncols cell*) into @out
 * (room for nout + 1 values, as mr_proj_row); returns 0 or MORAINE_ECORRUPT. */
#define MR_PROJ_SKIP (-1)
#define MR_PROJ_EXTRA (-2)
/* the cell of extra_col (projected or not) is copied to *extra (NULL when
 * there is no extra column) */
int mr_proj_decode_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out,
                       moraine_value *extra);
/* the children of the row just decoded (@row: its raw cells and children) */
void mr_proj_children_start(mr_proj *p, const moraine_row *row);
int mr_proj_children_next(mr_proj *p, moraine_db *db, size_t *which, moraine_row *child);

struct moraine_read {
    moraine_db *db;
    MDB_txn *txn;
    mr_bounds bounds;
    moraine_cursor *cursors; /* open cursors, closed at read_end */
    moraine_value *spec_vals; /* buffer for the spec lookups */
    size_t spec_cap;
};

/* ---- column statistics compared as DuckLake does (statval.c) ---- */

/* The comparison a DuckLake column type asks for (resolve once per column). */
typedef struct {
    int kind;            /* 0: bytes (std::string order); else a value kind */
    int is_signed, bits; /* integers */
    int width, scale;    /* decimal(width,scale) */
    int unit;            /* timestamps: fraction digits kept (0, 3, 6, 9) */
} mr_statkind;
/* A parsed min/max text (the text itself for a bytes kind is compared as is). */
typedef struct {
    int cls;      /* 0 -infinity, 1 finite, 2 +infinity, 3 NaN */
    int neg;      /* integers, decimals: sign and magnitude digits (no leading zeros) */
    size_t nd;
    char d[48];
    double f;     /* float32, float64 */
    __int128 v;   /* temporal, boolean */
} mr_statkey;
/* @type's comparison into *k; EINVAL (message set) for a malformed decimal(w,s). */
int mr_stat_kind(const char *type, mr_statkind *k);
/* 1 when @text is a value of kind @k (parsed into *out; a bytes kind: always 1, *out untouched), else 0. */
int mr_stat_parse(const mr_statkind *k, const char *text, mr_statkey *out);
/* -1, 0, 1: @a (text @ta) against @b (text @tb) in kind @k (bytes: the texts). */
int mr_stat_cmp(const mr_statkind *k, const mr_statkey *a, const char *ta, const mr_statkey *b, const char *tb);

#endif
