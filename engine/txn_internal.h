/*
 * txn_internal.h — shared by the staged write transaction's files only (not
 * installed): txn.c (state, pending entries, begin, abort), txn_rows.c (row
 * operations) and commit.c (the commit). internal.h declares what the rest
 * of the engine calls (mr_txn_rel, mr_txn_end_at, mr_txn_discard, ...).
 * Errors: int-returning functions return 0 or a MORAINE_E* code with the
 * message set (mr_err), unless they say otherwise.
 */
#ifndef MORAINE_TXN_INTERNAL_H
#define MORAINE_TXN_INTERNAL_H

#include "internal.h"
#include <stddef.h>

/* A child group of a pending entry: the encoded rows of one child relation. */
typedef struct {
    uint32_t rel_id;
    uint64_t nrows;
    int64_t last_ord; /* the ord of the last row (a child row stores its ord as the difference from the row before) */
    mr_buf bytes;
    mr_keymap km;     /* the rows' parent-key columns, not stored (format 5), once has_km */
    int has_km;
} group;

/* What of a pending entry lives in its commit's arena (freed with the commit). */
#define MR_PA_STRUCT 1u  /* the entry itself */
#define MR_PA_VALS 2u    /* vals and the strings they point to */
#define MR_PA_IDENT 4u   /* ident's bytes (never changed once set) */
#define MR_PA_TARGET 8u  /* target points at ident's bytes (a live row's target is its identity) */

/* A chunk of a commit's arena: rows and entries allocated by bumping, freed
 * together when the commit ends (no malloc/free per row). */
typedef struct mr_chunk {
    struct mr_chunk *next;
    size_t used, cap;
    max_align_t data[];
} mr_chunk;

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
    unsigned arena;      /* MR_PA_*: parts owned by the commit's arena */
} pending;

#define MR_TXN_RELCACHE 16

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
    uint64_t ic_ticket;  /* its registration with the environment's integer cache (int_cache.c) */
    int partial_snapshot; /* an import's commit that may lack its ducklake_snapshot row */
    int rewind;          /* history rewrites may reach up to snapshot - 1 (moraine_txn_rewind) */
    mr_counts counts;    /* entries added (+) and removed (-) per counted key range (count.c) */
    mr_buf kb, kb2;      /* key scratch */
    /* a cursor of the LMDB transaction for the lookups and puts of rows
     * (mr_txn_cursor): placed on the page of the last key, it spares the next
     * key that falls on the same page LMDB's descent from the root (rows come
     * in key order: a commit's data files, an import's rows) */
    MDB_cursor *cur;
    /* a key range the LMDB transaction holds no entry in (mr_txn_has_key):
     * keys k with gap_lo <= k < gap_hi in LMDB's order (gap_end: gap_hi is
     * the end of the keyspace), found by one MDB_SET_RANGE; so the new rows
     * of a commit, whose keys come in order past the stored ones (a commit's
     * data files), ask LMDB once and not once a row. Valid until the LMDB
     * transaction is written (mr_txn_wrote). */
    mr_buf gap_lo, gap_hi;
    int gap_valid, gap_end;
    mr_chunk *arena;     /* this commit's arena (mr_txn_alloc), newest chunk first */
    mr_rel *relcache[MR_TXN_RELCACHE]; /* relations last named (txn_rows.c); emptied when one is defined */
    mr_rel *relbyptr[MR_TXN_RELCACHE]; /* relations last found, slot by the address of their own name (txn_rows.c); emptied when one is defined */
    /* the parent entry the last child row attached to (txn_rows.c): the next
     * child of the same relation with the same integer parent key attaches
     * to it without encoding and hashing the key again; valid while no
     * entry was added (nlist) and no relation defined */
    const mr_rel *pc_child;
    int64_t pc_key[MR_MAX_KEYCOLS];
    pending *pc_parent;
    size_t pc_nlist;
};

/* ---- txn.c ---- */

/* Counts an entry written (+1) or deleted (-1) under key @k of relation @r. ENOMEM. */
int mr_txn_count_entry(moraine_txn *txn, const mr_rel *r, const uint8_t *k, size_t n, int delta);
/* mdb_put that counts a new entry: with @flags 0 an existing entry is
 * replaced (not counted again), with MDB_NOOVERWRITE it is MDB_KEYEXIST.
 * Returns an LMDB code (MDB_PANIC when counting failed). */
int mr_txn_put_counted(moraine_txn *txn, const mr_rel *r, MDB_val *k, MDB_val *v, unsigned flags);
/* The transaction's cursor (txn->cur), opened on first use into *out.
 * Returns an LMDB code. LMDB keeps a write transaction's cursors valid
 * across every put and delete made through the transaction. */
int mr_txn_cursor(moraine_txn *txn, MDB_cursor **out);
/* Whether the LMDB transaction holds an entry under key @k: 0 when it does,
 * MDB_NOTFOUND when not, another LMDB code on failure, or MDB_PANIC when
 * out of memory. The answer of mdb_get, through the transaction's cursor
 * and its gap (txn->gap_lo): a miss records the range up to the next stored
 * key, and a key inside that range is answered without asking LMDB. */
int mr_txn_has_key(moraine_txn *txn, const MDB_val *k);
/* Forgets the gap of mr_txn_has_key: every write to the LMDB transaction
 * calls it first (mr_txn_put_counted, the commit's flush, deletes, and
 * whoever takes the LMDB transaction through mr_txn_lmdb). */
void mr_txn_wrote(moraine_txn *txn);
/* Closes the transaction's cursor (before its LMDB transaction ends). */
void mr_txn_cursor_close(moraine_txn *txn);
/* Marks the transaction failed with @rc and the current message (the first
 * failure is kept); returns @rc. */
int mr_txn_fail(moraine_txn *txn, int rc);
/* EINVAL for NULL, ETXN once the transaction failed, else 0. */
int mr_txn_usable(moraine_txn *txn);
/* The hash slot of identity key @k: its newest entry's, or the empty slot it would take. */
pending **mr_pending_slot(moraine_txn *txn, const uint8_t *k, size_t n);
/* The newest entry with identity @k (children attach to it), or NULL. */
pending *mr_pending_lookup(moraine_txn *txn, const mr_buf *k);
/* The live entry among those with the same identity as @head, or NULL. */
pending *mr_pending_live(pending *head);
/* Whether the stored row under this identity was loaded into the commit. */
int mr_pending_store_seen(pending *head);
/* Frees entry @e (NULL: nothing). */
void mr_pending_free(pending *e);
/* Registers a new pending entry under its identity key (newest wins). ENOMEM. */
int mr_pending_add(moraine_txn *txn, pending *e);
/* A new entry of relation @r at row position @ord (in the commit's arena),
 * or NULL (out of memory). */
pending *mr_pending_new(moraine_txn *txn, mr_rel *r, int64_t ord);
/* Sets entry @e's identity to the @n bytes at @k (copied into the arena). ENOMEM. */
int mr_pending_set_ident(moraine_txn *txn, pending *e, const uint8_t *k, size_t n);
/* @n bytes from the commit's arena, aligned for any object; freed when the
 * commit ends. NULL when out of memory. */
void *mr_txn_alloc(moraine_txn *txn, size_t n);
/* Frees the transaction's memory (not its LMDB transaction). */
void mr_txn_free(moraine_txn *txn);

#endif
