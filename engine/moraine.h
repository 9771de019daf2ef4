/*
 * moraine.h — the public contract of moraine, an embedded catalog engine for
 * DuckLake lakes on LMDB.
 *
 * moraine keeps the rows of a DuckLake metadata catalog (the ducklake_* tables)
 * in an ordered LMDB keyspace and serves them row-faithfully at any snapshot.
 * See docs/keyspace.md (where every table lives), docs/codec.md (the value
 * format) and docs/semantics.md (the temporal filter and the staged path).
 *
 * Conventions used by every function here
 * ----------------------------------------
 * - Functions that can fail return an int: 0 (MORAINE_OK) on success, a
 *   negative MORAINE_E* code on failure. The message for the last failure on
 *   the calling thread is returned by moraine_errmsg(); it names what was
 *   wrong (table, row, column, key) and is valid until the next failing call
 *   on the same thread.
 * - Iterators return 1 when they produced an item, 0 when exhausted, and a
 *   negative code on error.
 * - Integers are exact int64 over the full range. Strings are byte strings of
 *   any content (NUL bytes and invalid UTF-8 included) given as pointer plus
 *   length; NULL is a distinct value type, never an empty string.
 * - Values handed out by read functions point into LMDB's memory map (no
 *   copy). They stay valid until the read transaction ends, and the value
 *   array of a moraine_row until the next call on the cursor that filled it.
 * - A write transaction that saw any failed call cannot commit: commit returns
 *   the first error, and nothing of it reaches the store.
 */
#ifndef MORAINE_H
#define MORAINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MORAINE_VERSION_STRING "0.1.0"

/* ---- error codes --------------------------------------------------------- */
enum {
    MORAINE_OK = 0,
    MORAINE_EINVAL = -1,      /* bad argument or bad input row/value */
    MORAINE_ENOTFOUND = -2,   /* unknown table, row, key or snapshot */
    MORAINE_EEXIST = -3,      /* duplicate live key, or relation redefined differently */
    MORAINE_ESNAPSHOT = -4,   /* snapshot id not above the last committed one */
    MORAINE_ENOTLIVE = -5,    /* ending a row that is not live */
    MORAINE_ECORRUPT = -6,    /* stored bytes fail to decode */
    MORAINE_ELMDB = -7,       /* LMDB reported an error (message carries mdb_strerror) */
    MORAINE_ENOMEM = -8,      /* allocation failed */
    MORAINE_EIO = -9,         /* file could not be read or written */
    MORAINE_EJSON = -10,      /* malformed JSON in an import file */
    MORAINE_EREADONLY = -11,  /* write attempted on a read-only catalog */
    MORAINE_ETXN = -12,       /* transaction misuse (already failed, finished, nested) */
    MORAINE_EMAPFULL = -13,   /* the commit does not fit in the map size */
    MORAINE_ECONFLICT = -14,  /* optimistic concurrency conflict (verb path) */
    MORAINE_EFORK = -15,      /* handle used in a process other than the one that opened it (after fork) */
    MORAINE_EFORMAT = -16     /* the catalog is in a store format this build does not read or write (an older
                                 one: `moraine compact` rewrites it; docs/codec.md, Versioning) */
};

/**
 * moraine_errmsg - message of the last failure on the calling thread.
 * Returns: a NUL-terminated string (empty if no failure yet); valid until the
 * next failing moraine call on this thread. Never NULL.
 */
const char *moraine_errmsg(void);

/**
 * moraine_strerror - short fixed name of an error code ("EINVAL", ...).
 * @code: a MORAINE_E* value. Returns a static string; "EUNKNOWN" otherwise.
 */
const char *moraine_strerror(int code);

/**
 * DuckDB's identifier rules (engine/ident.c; issue 16). Names are looked up
 * without regard to ASCII case and stored as written.
 * moraine_ident_is_keyword - nonzero when @name (any ASCII case) is one of
 * DuckDB's grammar keywords, of any category (KeywordHelper::IsKeyword).
 * moraine_ident_requires_quotes - nonzero when DuckDB writes @name in double
 * quotes (KeywordHelper::RequiresQuotes with allow_caps): empty, a byte other
 * than an ASCII letter, '_' or a digit, a digit first, or a keyword.
 * moraine_ident_render - writes @name as DuckDB renders it (bare, or quoted
 * with '"' doubled) into @out (@outlen bytes, NUL-terminated, truncated if
 * short; @out may be NULL) and returns the length it needs without the NUL.
 */
int moraine_ident_is_keyword(const char *name);
int moraine_ident_requires_quotes(const char *name);
size_t moraine_ident_render(const char *name, char *out, size_t outlen);

/**
 * Column statistics compared as DuckLake compares them (engine/statval.c;
 * DuckLakeColumnStats::MergeStats and RequiresValueComparison,
 * src/storage/ducklake_stats.cpp / ducklake_stats.hpp).
 * moraine_stat_compare - compares min/max texts @a and @b of a column of
 * DuckLake type @column_type ("int64", "decimal(18,2)", "timestamptz", ...):
 * integers, float32/64, decimals, date, time, timetz, timestamp (and _s, _ms,
 * _ns, tz) and boolean as values of the type, every other type as bytes
 * (std::string's order). Sets *cmp to -1, 0 or 1 and returns 0; EINVAL when a
 * text is not a value of the type (out of range, another form, finer than the
 * type; the message names the text and the type) or a decimal type is malformed.
 * moraine_stat_check - 0 when @text is a value of @column_type (any text for
 * a type compared as bytes), else EINVAL as above.
 * moraine_stat_value_compared - 1 when @column_type's texts compare as values.
 */
int moraine_stat_compare(const char *column_type, const char *a, const char *b, int *cmp);
int moraine_stat_check(const char *column_type, const char *text);
int moraine_stat_value_compared(const char *column_type);

/* ---- values ----------------------------------------------------------------- */
typedef enum {
    MORAINE_NULL = 0,  /* SQL NULL */
    MORAINE_INT = 1,   /* BIGINT: .i */
    MORAINE_STR = 2,   /* VARCHAR, UUID, TIMESTAMPTZ text: .s/.len, any bytes */
    MORAINE_BOOL = 3,  /* BOOLEAN: .i is 0 or 1 */
    MORAINE_REAL = 4,  /* a DOUBLE (only in tables moraine does not know, e.g. inlined data): .d */
    MORAINE_JSON = 5   /* a nested JSON value kept as its compact text: .s/.len */
} moraine_type;

/** One cell. Which member is meaningful depends on @type (see moraine_type). */
typedef struct {
    moraine_type type;
    int64_t i;
    double d;
    const char *s;
    size_t len;
} moraine_value;

/** Column types of a relation's descriptor (what a column may hold). */
typedef enum {
    MORAINE_COL_ANY = 0,     /* a column moraine does not know: any value type */
    MORAINE_COL_BIGINT = 1,  /* MORAINE_INT or NULL */
    MORAINE_COL_VARCHAR = 2, /* MORAINE_STR or NULL (also UUID, TIMESTAMPTZ) */
    MORAINE_COL_BOOLEAN = 3  /* MORAINE_BOOL or NULL */
} moraine_coltype;

/**
 * Column flags of a relation's descriptor (moraine_relation_info.colflags).
 * MORAINE_COL_SECRET: the column holds key material whoever reads can use to
 * read the lake's data: DuckLake's per-file Parquet encryption key
 * (ducklake_data_file.encryption_key, ducklake_delete_file.encryption_key,
 * written by an encrypted lake, `ATTACH ... (ENCRYPTED)`). Decided once, by
 * moraine's DuckLake table list (engine/tables.c), for every catalog.
 * Renderers redact it (moraine_row_json, MORAINE_REDACTED); the copying
 * paths (export, import) carry it exactly. docs/security.md.
 */
#define MORAINE_COL_SECRET 1u

/** Text a redacted secret column shows in place of its value (a NULL stays NULL). */
#define MORAINE_REDACTED "<redacted>"

/* ---- catalog handle ---------------------------------------------------------- */
typedef struct moraine_db moraine_db;

/** Options for moraine_open. Zero-initialise, then set what you need. */
typedef struct {
    size_t map_size;   /* LMDB map size in bytes; 0 = 1 GiB default, less than 256 KiB is taken as 256 KiB. Doubled before a
                        * commit while more than half is in use, up to max_map_size. */
    size_t max_map_size; /* 0 = 64 GiB; a commit that cannot fit fails with MORAINE_EMAPFULL naming the setting to raise
                          * (map_size for one commit larger than the free half of the map, else this) */
    int read_only;     /* nonzero: open read-only (MDB_RDONLY); writes fail with MORAINE_EREADONLY */
    int no_sync;       /* nonzero: do not fsync on commit (MDB_NOSYNC); a crash may lose recent commits */
    int create;        /* nonzero: create the directory if missing (ignored when read_only) */
} moraine_options;

/**
 * moraine_open - open (or create) a catalog stored in directory @path.
 * @path: directory holding LMDB's data.mdb and lock.mdb.
 * @opts: options, or NULL for defaults (read-write, synced, create).
 * @out: receives the handle on success.
 * A new store is private, as PostgreSQL keeps its data directory: a directory
 * moraine_open creates is made 0700, and data.mdb and lock.mdb, when LMDB
 * creates them, 0600 (the catalog may hold encryption keys,
 * MORAINE_COL_SECRET). Existing files keep their modes.
 * A failed open removes what it created, whichever step failed (LMDB cannot
 * open the environment: a data.mdb that is not LMDB, a map it cannot have,
 * ENOMEM; or a later step: a full disk at a new catalog's first commit): a
 * directory moraine_open created goes with the files in it; in a directory
 * that was there, the lock.mdb LMDB made beside a data.mdb that is not LMDB
 * or is cut short goes, and the data.mdb and lock.mdb LMDB made otherwise
 * stay (another process may be creating the same catalog). A file or
 * directory that was there before is never removed.
 * Handles of one catalog in one process share one LMDB environment (any
 * thread may open one). The call that opens the environment writes a new
 * catalog's format marker (a write, which waits while another process
 * commits); a handle that shares the environment before that commit writes
 * the marker with its own first commit if it is still missing.
 * Returns 0, or MORAINE_EIO (path missing and not creating), MORAINE_ELMDB,
 * MORAINE_ECORRUPT (the directory holds an LMDB file that is not a moraine
 * catalog, or a damaged table descriptor), MORAINE_EFORMAT (a catalog of
 * format 1 or of a newer format than this build's), MORAINE_ENOMEM. A
 * catalog of format 2, 3 or 4 opens, for moraine_compact to rewrite it in
 * format 5; reads and commits on it are refused with MORAINE_EFORMAT until
 * then (docs/codec.md, Versioning).
 */
int moraine_open(const char *path, const moraine_options *opts, moraine_db **out);

/** moraine_close - close a catalog; NULL is a no-op. No transaction may be open. */
void moraine_close(moraine_db *db);

/**
 * moraine_release_pages - drop this process's mapping of data.mdb's pages
 * (madvise MADV_DONTNEED over LMDB's read-only map of the file). Pages a
 * process has read stay mapped and count in its resident set until then; a
 * bulk writer (an import, a compaction) touches the whole store, so its RSS
 * would grow with the store although it needs none of those pages again.
 * Nothing is lost and no open transaction is disturbed: the map is of the
 * file, read-only and shared, and the next access maps the page again (a
 * minor fault when it is still in the page cache). The kernel's page cache
 * itself is not emptied. Not for a serving process: its next reads fault
 * their pages back in. Returns 0, MORAINE_EINVAL (NULL), MORAINE_EFORK
 * (the handle was opened by another process) or MORAINE_EIO (madvise
 * refused, its message named).
 */
int moraine_release_pages(moraine_db *db);

/**
 * moraine_reader_check - clear the reader slots of processes that died with a
 * read transaction open (LMDB's mdb_reader_check). Such slots never block a
 * writer, but they keep old pages from being reused until cleared; moraine
 * also runs this check when a catalog is opened for writing.
 * @dead (may be NULL) receives the number of slots cleared. Returns 0 or
 * MORAINE_ELMDB.
 */
int moraine_reader_check(moraine_db *db, int *dead);

/**
 * moraine_last_snapshot - id of the newest committed snapshot.
 * Returns 1 and sets *out, or 0 when the catalog has no snapshot yet, or a
 * negative error.
 */
int moraine_last_snapshot(moraine_db *db, int64_t *out);

/* ---- relations (ducklake_* tables) ------------------------------------------- */

/** Placement of a relation in the keyspace (docs/keyspace.md). */
typedef enum {
    MORAINE_PLACE_TEMPORAL = 1, /* own kind in current/history, keyed by its key columns */
    MORAINE_PLACE_CHILD = 2,    /* embedded in a parent's value (partition_column, file stats, ...) */
    MORAINE_PLACE_SNAPSHOT = 3, /* ducklake_snapshot, keyed by snapshot_id in the snapshot subspace */
    MORAINE_PLACE_ROWS = 4      /* non-temporal rows in the rows subspace, keyed by row position */
} moraine_placement;

/** Read-only description of a relation as this catalog holds it. */
typedef struct {
    const char *name;          /* e.g. "ducklake_data_file" */
    uint32_t id;               /* relation id in keys */
    moraine_placement placement;
    size_t ncols;
    const char *const *colnames; /* in the catalog's own column order */
    const moraine_coltype *coltypes;
    int begin_col, end_col;    /* column index of begin_snapshot/end_snapshot, or -1 */
    const char *parent;        /* MORAINE_PLACE_CHILD: parent relation name; else NULL */
    const unsigned *colflags;  /* per column: MORAINE_COL_SECRET or 0 (same order as colnames) */
} moraine_relation_info;

/**
 * moraine_relation - describe relation @name as this catalog holds it.
 * Returns 0 and fills @out (pointers owned by @db, valid until close), or
 * MORAINE_ENOTFOUND if the catalog has no such relation.
 */
int moraine_relation(moraine_db *db, const char *name, moraine_relation_info *out);

/**
 * moraine_relation_at - the i-th relation of the catalog (0-based, in the
 * order they were defined). Returns 1 and fills @out, 0 past the end.
 */
int moraine_relation_at(moraine_db *db, size_t i, moraine_relation_info *out);

/**
 * moraine_column_index - index of column @col in relation @rel, or -1.
 */
int moraine_column_index(const moraine_relation_info *rel, const char *col);

/**
 * moraine_known_column_type - the type moraine gives column @column of
 * DuckLake's table @table (DuckLake v1.0 and 1.1-dev1's column types,
 * engine/tables.c), with no catalog: the type a relation defined with that
 * column has (moraine_relation_info.coltypes) and the one the imports check
 * (a string that is not valid UTF-8 is refused in a MORAINE_COL_VARCHAR
 * column, kept in a MORAINE_COL_ANY one).
 * Returns the type; MORAINE_COL_ANY for a table or a column moraine does not
 * know (an inlined data table's columns, say) and for a NULL argument.
 */
moraine_coltype moraine_known_column_type(const char *table, const char *column);

/**
 * moraine_required_table - the @i-th (0-based) table every DuckLake catalog
 * of version @version has (ducklake_metadata's 'version' value, e.g. "0.4",
 * "1.1-dev1"; a dev version: the tables of the release before it; a version
 * DuckLake never wrote, or NULL: none), among the tables moraine knows
 * (engine/tables.c; DuckLake's migrations add ducklake_column_mapping and
 * ducklake_name_mapping in 0.2, ducklake_schema_versions in 0.3, the macro,
 * sort and variant-stats tables in 0.4). A source lacking one is incomplete:
 * the imports and sync refuse it. Returns the table's name (static), or NULL
 * past the last.
 */
const char *moraine_required_table(const char *version, size_t i);

/* ---- staged commits (the write path DuckLake's own rows take) ----------------- */
typedef struct moraine_txn moraine_txn;

#define MORAINE_NO_SNAPSHOT INT64_MIN /* a commit that only touches non-temporal rows */

/**
 * moraine_txn_begin - start one staged commit for DuckLake snapshot @snapshot_id.
 * One LMDB write transaction; only one may be open per catalog at a time.
 * @snapshot_id: the snapshot this commit writes. It must be above every
 *   snapshot id committed before (MORAINE_ESNAPSHOT otherwise, checked here).
 *   Temporal rows inserted must have begin_snapshot == @snapshot_id; rows
 *   ended get end_snapshot = @snapshot_id. MORAINE_NO_SNAPSHOT starts a commit
 *   that may only define relations and put/delete non-temporal rows.
 * Returns 0, MORAINE_ESNAPSHOT, MORAINE_EREADONLY, MORAINE_ETXN (one already
 * open), MORAINE_ELMDB.
 */
int moraine_txn_begin(moraine_db *db, int64_t snapshot_id, moraine_txn **out);

/**
 * moraine_txn_define - declare relation @name with columns @colnames (in the
 * catalog's column order). Known DuckLake tables get their placement and
 * column types from moraine's table list; columns moraine does not know are
 * kept as MORAINE_COL_ANY. A relation already defined with the same columns is
 * a no-op. ncols may be 0 for a relation whose columns are not known yet (an
 * empty table); it can be redefined with columns later.
 * Returns 0, MORAINE_EEXIST (defined before with other columns), MORAINE_EINVAL
 * (duplicate column name; a known table lacking a column its placement needs,
 * e.g. ducklake_data_file without table_id).
 */
int moraine_txn_define(moraine_txn *txn, const char *name, size_t ncols, const char *const *colnames);

/**
 * moraine_txn_insert - insert one row of relation @name.
 * @row: @ncols values in the relation's column order (ncols must equal the
 *   descriptor's). Values are copied; the caller keeps ownership.
 * @ord: the row's position in its table for export order (>= 0), or -1 to
 *   append after every row of the table so far.
 * Placement decides what happens: a temporal row (begin_snapshot must equal
 * the commit's snapshot; end_snapshot NULL goes to current, end == begin goes
 * straight to history); a child row is embedded in its parent (the parent's
 * live version, inserted earlier in this commit or before; with no live parent
 * it is kept as a loose row, still exported in place); a snapshot row
 * (snapshot_id must equal the commit's snapshot); a non-temporal row.
 * Returns 0, MORAINE_ENOTFOUND (relation not defined), MORAINE_EINVAL (wrong
 * value type for a column, wrong column count, begin/end not as above),
 * MORAINE_EEXIST (a live row with the same key exists), MORAINE_ELMDB.
 * The message names the table, the row (its key) and the column.
 */
int moraine_txn_insert(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord);

/**
 * moraine_txn_end - end the live version of a temporal row at this commit's
 * snapshot (DuckLake: UPDATE ... SET end_snapshot = S). The row moves from
 * current to history with its embedded children.
 * @row: the row's values in column order; its key columns identify it (for a
 *   relation moraine does not know, every column but begin/end must match).
 * Returns 0, MORAINE_ENOTLIVE (no live row with that key), MORAINE_ENOTFOUND
 * (relation not defined), MORAINE_EINVAL (not a temporal relation, or the live
 * row's begin_snapshot is above this snapshot).
 */
int moraine_txn_end(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols);

/**
 * moraine_txn_put_row - insert or replace the non-temporal row at position
 * @ord (>= 0) of relation @name (placement MORAINE_PLACE_ROWS).
 * DuckLake: in-place UPDATEs of ducklake_table_stats and the like.
 * Returns 0, MORAINE_EINVAL, MORAINE_ENOTFOUND.
 */
int moraine_txn_put_row(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord);

/**
 * moraine_txn_delete_row - delete the non-temporal row at position @ord.
 * Returns 0, MORAINE_ENOTFOUND (no such row), MORAINE_EINVAL.
 */
int moraine_txn_delete_row(moraine_txn *txn, const char *name, int64_t ord);

/**
 * moraine_txn_commit - make the commit durable, atomically, and free @txn.
 * A commit with a snapshot id, in a catalog that has the ducklake_snapshot
 * table, is one whole DuckLake snapshot: it must carry that snapshot's
 * ducklake_snapshot row, whose schema_version, next_catalog_id and
 * next_file_id are not negative and not below the last snapshot's row;
 * otherwise MORAINE_ESNAPSHOT and nothing is written.
 * Returns 0, the first error any call on @txn returned (nothing written),
 * MORAINE_EFORMAT (a catalog of format 2, 3 or 4, written by an older moraine,
 * takes no commit until `moraine compact` rewrites it in format 5;
 * docs/codec.md), MORAINE_ECORRUPT (a stored row the commit loads is damaged),
 * MORAINE_ESNAPSHOT (see above), MORAINE_EMAPFULL (map size exhausted even
 * after growing to max_map_size; nothing written), MORAINE_ELMDB.
 */
int moraine_txn_commit(moraine_txn *txn);

/**
 * moraine_txn_partial - mark @txn as an intermediate commit of a replay (an
 * import, a sync): it may then lack the ducklake_snapshot row of its own
 * snapshot id, which a staged commit otherwise must carry (MORAINE_ESNAPSHOT
 * at commit). DuckLake: ducklake_expire_snapshots deletes snapshot rows while
 * rows that began at those snapshots stay, so replaying a catalog commits at
 * ids that have no snapshot row. The caller's last commit must be whole.
 * @partial: nonzero to allow it, 0 to require the row again.
 * Returns 0, or MORAINE_EINVAL for a NULL @txn.
 */
int moraine_txn_partial(moraine_txn *txn, int partial);

/**
 * moraine_txn_rewind - let the history rewrites of @txn (a commit with a
 * snapshot id S) reach every snapshot below S instead of the catalog's last
 * one L: versions and ducklake_snapshot rows with ids in (L, S) may be
 * inserted, and L's own snapshot row deleted. It is how a catalog whose
 * snapshots above some C were replaced elsewhere (a push rebased them onto a
 * DuckLake catalog that moved on; DuckLake's retried commit takes new ids)
 * is made equal to that catalog in ONE LMDB transaction: delete its versions
 * above C, insert the other catalog's, commit S, the other's newest. The
 * commit still needs S's ducklake_snapshot row and S above L.
 * Returns 0, MORAINE_EINVAL (NULL @txn; a commit without snapshot id), or
 * MORAINE_ETXN (rows already staged: rewrites come first).
 */
int moraine_txn_rewind(moraine_txn *txn);

/** moraine_txn_abort - discard everything of @txn and free it. NULL is a no-op. */
void moraine_txn_abort(moraine_txn *txn);

/* ---- history rewrites (engine/history_rewrite.c) ------------------------------
 * DuckLake changes its past in place: ducklake_expire_snapshots deletes
 * snapshot rows and the versions only they saw, ducklake_merge_adjacent_files
 * deletes the merged files and inserts the new one with the first source's
 * begin_snapshot, a DELETE that replaces a delete file inserts the new one with
 * the old one's begin_snapshot. A sync replays these exactly with the three
 * calls below, inside a staged commit (with a snapshot id or
 * MORAINE_NO_SNAPSHOT), before any insert or end of that commit (they write
 * straight into the LMDB transaction; staged rows are collected until commit):
 * a call made after one returns MORAINE_ETXN. Each call is checked; a failed
 * call fails the whole commit (nothing is written). Only history at or below
 * the catalog's last committed snapshot L is rewritten: a catalog without a
 * snapshot has none (MORAINE_ESNAPSHOT). */

/** A child row given with the version it belongs to (moraine_txn_insert_version). */
typedef struct {
    const char *name;          /* the child relation, e.g. "ducklake_file_column_stats" */
    const moraine_value *row;  /* its values in the child's column order */
    size_t ncols;
    int64_t ord;               /* its position in its table (>= 0), or -1 to append */
} moraine_child_row;

/**
 * moraine_txn_delete_version - delete one stored version of a temporal row,
 * with its embedded children, or one ducklake_snapshot row with its
 * ducklake_snapshot_changes (DuckLake: DELETE FROM ..., not an end).
 * @row: every column of the version as stored. Its key columns, begin_snapshot
 *   and end_snapshot find it (end NULL: the live version; else the ended one
 *   with that end); for ducklake_snapshot, its snapshot_id. Every other
 *   column must equal the stored one (the row is the catalog's own, e.g. from
 *   a scan), so a stale or mistaken row deletes nothing.
 * @ord: the row's position; it identifies the version only for a relation
 *   keyed by position (a temporal table moraine does not know), else ignored.
 * Returns 0, MORAINE_ENOTFOUND (table not defined; no version with this key,
 * begin and end), MORAINE_EINVAL (a placement other than temporal or snapshot,
 * wrong column count or types, the stored version differs in a column: named),
 * MORAINE_ESNAPSHOT (begin_snapshot or end_snapshot not an integer at or below
 * L; the snapshot row of L itself, which DuckLake never expires), MORAINE_ETXN
 * (after an insert or end in this commit, or the commit already failed),
 * MORAINE_ECORRUPT, MORAINE_ELMDB.
 */
int moraine_txn_delete_version(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord);

/**
 * moraine_txn_delete_snapshot - delete the ducklake_snapshot row of snapshot
 * @snapshot_id (below L) with its ducklake_snapshot_changes: the snapshot
 * expired (ducklake_expire_snapshots). The versions that began or ended at it
 * stay. Returns 0, MORAINE_ENOTFOUND (no such snapshot row), MORAINE_ESNAPSHOT
 * (@snapshot_id is L or above it), MORAINE_ETXN, MORAINE_ELMDB.
 */
int moraine_txn_delete_snapshot(moraine_txn *txn, int64_t snapshot_id);

/**
 * moraine_txn_insert_version - insert one version of a temporal row (or one
 * ducklake_snapshot row) at or below L, with its children.
 * @row: every column. begin_snapshot is an integer at or below L;
 *   end_snapshot NULL makes it the live version (current subspace: no live
 *   version of its key may exist), an integer from begin_snapshot to L an
 *   ended one (history: no version with the same key, begin and end may
 *   exist). A ducklake_snapshot row: snapshot_id at or below L, not stored.
 * @ord: its position in its table (>= 0) or -1 to append.
 * @children: @nchildren rows of child relations of @name (e.g. a data file's
 *   column stats and partition values; a snapshot's changes), each with the
 *   parent's key in its key columns; embedded in the version.
 * Returns 0, MORAINE_ENOTFOUND (table not defined), MORAINE_EINVAL (placement,
 * column count or types, a child of another table or of another key, a key
 * column not an integer, string or NULL, a key longer than LMDB's limit),
 * MORAINE_ESNAPSHOT (begin or end not at or below L, end below begin),
 * MORAINE_EEXIST (the version's place is taken), MORAINE_ETXN, MORAINE_ELMDB.
 */
int moraine_txn_insert_version(moraine_txn *txn, const char *name, const moraine_value *row, size_t ncols, int64_t ord,
                               const moraine_child_row *children, size_t nchildren);

/* ---- reads ------------------------------------------------------------------- */
typedef struct moraine_read moraine_read;
typedef struct moraine_cursor moraine_cursor;

/**
 * moraine_read_begin - open a read transaction (a consistent view of the
 * catalog as of its newest commit). Many may be open at once, from any thread
 * (one per thread at a time). Returns 0, MORAINE_ELMDB, MORAINE_EFORMAT (a
 * catalog of store format 2, 3 or 4, written by an older moraine: `moraine
 * compact` rewrites it in format 5; docs/codec.md, Versioning), MORAINE_ECORRUPT
 * (the format marker does not read), MORAINE_EINVAL (NULL
 * argument), MORAINE_ENOMEM, MORAINE_EFORK.
 * A read belongs to the process that began it: its LMDB snapshot is held by
 * that process's reader slot, which the process may release at any time. In
 * a fork's child, every call on an inherited read or its cursors
 * (moraine_read_last_snapshot, moraine_scan_open, moraine_scan_project,
 * moraine_cursor_next, moraine_cursor_child, moraine_cursor_child_rows,
 * moraine_row_json, moraine_children_next, moraine_read_snapshot, the spec
 * lookups, moraine_table_id_at, moraine_secret_count) returns MORAINE_EFORK,
 * naming both processes; moraine_read_end frees it there without touching
 * the parent's slot. Rows and values a read returned before the fork point
 * into its pages: the child must not read them. The check is a counter the
 * pthread_atfork child handler moraine_open registers raises in each child
 * (moraine_fork_count), read once a call: no system call a row. A child made
 * without fork's handlers (glibc's _Fork, a raw clone or fork system call)
 * is not seen by it: its reads of inherited reads are not refused (its calls
 * on the inherited handle are, by pid).
 */
int moraine_read_begin(moraine_db *db, moraine_read **out);

/**
 * moraine_fork_count - the address of this process's fork counter, which the
 * pthread_atfork child handler moraine_open registers raises in every fork's
 * child (see moraine_read_begin). A value read through it differs, in a
 * child, from any value read before the fork. For bindings that check, with
 * no call, that a value they hand out still lies in a live read of this
 * process (LuaJIT's raw batch columns, bindings/moraine.lua). Never NULL.
 */
const unsigned *moraine_fork_count(void);

/** moraine_read_end - close a read transaction and every cursor's values. */
void moraine_read_end(moraine_read *rd);

/**
 * moraine_read_last_snapshot - newest snapshot id in this read's view.
 * Returns 1 and sets *out, 0 when there is none, MORAINE_EFORK (a read
 * begun in another process, see moraine_read_begin), MORAINE_ELMDB.
 */
int moraine_read_last_snapshot(moraine_read *rd, int64_t *out);

/** A decoded row: values point into the map (see conventions). */
typedef struct {
    const moraine_relation_info *rel;
    size_t ncols;
    const moraine_value *vals;
    int64_t ord;               /* the row's position in its table */
    /* embedded children, undecoded; walk them with moraine_row_children */
    const uint8_t *children;
    size_t children_len;
    /* the row's own encoded cells (docs/codec.md: a tag and its payload
     * each), one for every column of rel (rel->ncols, also from a projected
     * read, whose ncols counts only the columns asked), without the row's
     * head (its ord and count, or a child row's length and ord difference);
     * for a child row embedded in its parent's value, every column but its
     * parent-key columns (store format 5: their values are the parent's key
     * cells, whose row's cells are parent_raw) */
    const uint8_t *raw;
    size_t raw_len;
    /* an embedded child row: its parent row's encoded cells (the parent's
     * raw); NULL for any other row */
    const uint8_t *parent_raw;
    size_t parent_raw_len;
} moraine_row;

#define MORAINE_ALL_VERSIONS INT64_MIN /* snapshot argument: every version, live and ended */
#define MORAINE_ANY_SCOPE INT64_MIN    /* scope argument: every table */

/**
 * moraine_scan_open - rows of relation @name visible at snapshot @snapshot,
 * exactly as `begin_snapshot <= S AND (end_snapshot IS NULL OR S < end_snapshot)`
 * selects them (relations without end_snapshot: begin_snapshot <= S; without
 * either: every row). One range scan of current plus one of the history
 * versions that ended after S.
 * @scope: for table-scoped relations (their first key column is table_id),
 *   restrict to that table_id; MORAINE_ANY_SCOPE for all. For relations not
 *   table-scoped it must be MORAINE_ANY_SCOPE.
 * @snapshot: a snapshot id, or MORAINE_ALL_VERSIONS.
 * Rows come in key order (docs/keyspace.md); child relations come parent by
 * parent. Rows' ord gives the table's original row order.
 * Returns 0, MORAINE_ENOTFOUND (no such relation), MORAINE_EINVAL (scope on a
 * relation that has none), MORAINE_EFORK (a read begun in another process,
 * see moraine_read_begin), MORAINE_ENOMEM.
 */
int moraine_scan_open(moraine_read *rd, const char *name, int64_t scope, int64_t snapshot, moraine_cursor **out);

/**
 * moraine_cursor_next - next row. Returns 1 and fills @row, 0 when done,
 * MORAINE_ECORRUPT (the stored value does not decode; message names the key),
 * MORAINE_EFORK (the cursor's read was begun in another process: after fork,
 * see moraine_read_begin), MORAINE_ETXN (the cursor is closed).
 */
int moraine_cursor_next(moraine_cursor *cur, moraine_row *row);

/** moraine_cursor_close - free a cursor (also freed by moraine_read_end). NULL ok. */
void moraine_cursor_close(moraine_cursor *cur);

/** The parent-key columns of a child table embedded in its parent's rows
 * (store format 5, docs/codec.md; private to the engine): @n of them, child
 * column ccol[j] (ascending) holding the value of parent column pcol[j]. */
typedef struct {
    int n;
    int ccol[4];
    int pcol[4];
} moraine_parent_keys;

/** Iterator over the embedded children of a row (fields private). */
typedef struct {
    const uint8_t *p, *end;
    const uint8_t *gend;              /* where the group being walked ends (its nbytes) */
    const moraine_relation_info *rel; /* relation of the group being walked */
    uint64_t left;                    /* rows left in the group */
    int64_t prev_ord;                 /* ord of the group's row before the next (0 at its start) */
    moraine_value *vals;              /* decode buffer (owned by the iterator) */
    size_t cap;
    moraine_db *db;
    /* the parent row: its cells (raw) and relation id; the group's
     * parent-key columns (keys) and their values (pkey), which a child row
     * does not store (store format 5, docs/codec.md) */
    const uint8_t *praw;
    size_t praw_len;
    uint32_t prel_id;
    moraine_parent_keys keys;
    moraine_value pkey[4];
} moraine_children;

/**
 * moraine_row_children - start walking @row's embedded children (partition
 * columns of a partition spec, sort expressions of a sort spec, partition
 * values and column/variant stats of a data file, changes of a snapshot).
 * @row: a row a cursor of @rd returned, used while the walk lasts (its
 * cells give the child rows their parent-key columns, which store format 5
 * does not store: docs/codec.md).
 * Call moraine_children_next until it returns 0, then moraine_children_free.
 */
void moraine_row_children(moraine_read *rd, const moraine_row *row, moraine_children *it);

/**
 * moraine_children_next - next child row, of any child relation; check
 * child->rel->name. Each row is read within its group's byte count and must
 * take exactly its own length (docs/codec.md). Returns 1, 0 when done,
 * MORAINE_ECORRUPT (a group or row that does not decode, a row running past
 * its group, bytes after a group's last row, a group of an unknown relation
 * or of one that is not a child table of the row's relation, a parent row
 * whose key cells do not decode), MORAINE_EFORK (the row's read was begun
 * in another process: see moraine_read_begin). Each child row comes whole:
 * its parent-key columns are the parent row's key cells.
 */
int moraine_children_next(moraine_children *it, moraine_row *child);

/** moraine_children_free - release the iterator's buffer. */
void moraine_children_free(moraine_children *it);

/* ---- projected reads: decode only what is asked -------------------------------- */

/**
 * One child relation a projected scan decodes (moraine_projection.children).
 * @relation: child relation name, e.g. "ducklake_file_partition_value" or
 *   "ducklake_file_column_stats"; it must be a child of the scanned relation.
 * @columns, @ncolumns: its columns to decode, in the order the child rows'
 *   vals give them; NULL (ncolumns 0): every column in catalog order.
 * @match_column: NULL for every row of the group; else only rows whose cell
 *   in this column is an INT among @match_values (@nmatch values), e.g.
 *   "column_id" with the ids whose stats a planner wants. The column need not
 *   be among @columns.
 */
typedef struct {
    const char *relation;
    const char *const *columns;
    size_t ncolumns;
    const char *match_column;
    const int64_t *match_values;
    size_t nmatch;
} moraine_child_projection;

/**
 * What a projected scan decodes. @columns, @ncolumns: the scanned relation's
 * columns, in output order (NULL, 0: every column in catalog order).
 * @children, @nchildren: the child relations decoded (others are skipped by
 * their byte length, never decoded; NULL, 0: none).
 */
typedef struct {
    const char *const *columns;
    size_t ncolumns;
    const moraine_child_projection *children;
    size_t nchildren;
} moraine_projection;

/**
 * moraine_scan_project - moraine_scan_open with a projection: the same rows
 * (same visibility at @snapshot, same order, same checks: every value's
 * CRC-32C over key and value is verified and every walked key range is
 * counted), but moraine_cursor_next decodes only the projected columns:
 * row->ncols is the number of columns asked and row->vals[i] is the i-th
 * column named in @proj->columns (row->rel still describes the whole
 * relation: use the projection's order, not moraine_column_index, to find a
 * value). Cells not asked are skipped by their length. Children come from
 * moraine_cursor_child. @proj is copied; it need not outlive the call.
 * Only temporal, snapshot and rows relations (not child relations) can be
 * scanned this way.
 * Returns 0; MORAINE_ENOTFOUND (no such relation; a column or child
 * relation the relation does not have, named in the message);
 * MORAINE_EINVAL (NULL argument, a child relation, scope as for
 * moraine_scan_open, a child projection naming a relation twice);
 * MORAINE_ENOMEM; MORAINE_EFORK (see moraine_read_begin).
 */
int moraine_scan_project(moraine_read *rd, const char *name, int64_t scope, int64_t snapshot, const moraine_projection *proj,
                         moraine_cursor **out);

/**
 * moraine_cursor_child - the next projected child row of the row the cursor
 * returned last (a cursor of moraine_scan_project): groups of relations not
 * in the projection are skipped by their byte length, rows failing a
 * child's match_column filter are skipped after decoding that one cell.
 * *which receives the index of the child's relation in proj->children;
 * child->vals are its projected columns (child->ncols of them, in the
 * child projection's order). Values are valid until the next
 * moraine_cursor_child or moraine_cursor_next on @cur.
 * Returns 1, 0 when the row has no more, MORAINE_ECORRUPT (a damaged group,
 * bytes after a group's last row among them: the message names the parent's
 * key), MORAINE_EINVAL (not a projected cursor, or no row returned yet),
 * MORAINE_EFORK (see moraine_read_begin).
 */
int moraine_cursor_child(moraine_cursor *cur, size_t *which, moraine_row *child);

/**
 * moraine_cursor_child_rows - every projected row of child projection
 * @which (an index into proj->children) of the row the cursor returned
 * last, decoded in one pass: *vals receives *nrows × the child projection's
 * ncolumns values, row k's at (*vals)[k * ncolumns], in the child
 * projection's column order; *ords (if @ords is not NULL) each row's ord.
 * Rows come in stored order (the group's key order), those failing the
 * child's match_column filter left out; groups of other relations are
 * skipped by their byte length. The same rows moraine_cursor_child returns
 * for @which, without a call per row; it does not move moraine_cursor_child's
 * walk, and the two may be mixed. Values are valid until the next
 * moraine_cursor_child_rows or moraine_cursor_next on @cur (strings point
 * into the read's pages, valid while the read is open).
 * Returns 0 (*nrows may be 0: the row has no such child rows, and *vals
 * and *ords are then not to be read);
 * MORAINE_ECORRUPT (a damaged group: the message names the parent's key;
 * *nrows is 0); MORAINE_EINVAL (NULL @cur, @vals or @nrows, not a projected
 * cursor, no row returned yet, @which past the child projections);
 * MORAINE_ETXN (the cursor is closed); MORAINE_ENOMEM; MORAINE_EFORK (see
 * moraine_read_begin).
 */
int moraine_cursor_child_rows(moraine_cursor *cur, size_t which, const moraine_value **vals, const int64_t **ords, size_t *nrows);

/**
 * moraine_partition_spec_at - the partition spec (ducklake_partition_info row,
 * partition columns embedded) in force for table @table_id at @snapshot.
 * Returns 1 and fills @row, 0 if the table has no spec then, or an error:
 * MORAINE_ECORRUPT (a damaged value or key range), MORAINE_EFORK (see
 * moraine_read_begin), MORAINE_ENOMEM, MORAINE_EINVAL (NULL @rd or @row).
 * The row is valid until the next call on @rd of this function family.
 * DuckLake: a table whose partitioning was reset has a zero-column spec.
 */
int moraine_partition_spec_at(moraine_read *rd, int64_t table_id, int64_t snapshot, moraine_row *row);

/**
 * moraine_sort_spec_at - the sort spec (ducklake_sort_info row, sort
 * expressions embedded) in force for @table_id at @snapshot. Returns 1, 0 (no
 * sort spec: never set, or RESET SORTED BY), or an error as for
 * moraine_partition_spec_at.
 */
int moraine_sort_spec_at(moraine_read *rd, int64_t table_id, int64_t snapshot, moraine_row *row);

/**
 * moraine_partition_spec_by_id - the partition spec @partition_id of
 * @table_id, whatever its lifetime: live, ended, or never visible
 * (begin == end, an intermediate spec of one transaction). This is how a data
 * file's own spec is found. Returns 1, 0 if none, or an error as for
 * moraine_partition_spec_at.
 */
int moraine_partition_spec_by_id(moraine_read *rd, int64_t table_id, int64_t partition_id, moraine_row *row);

/**
 * moraine_read_snapshot - the ducklake_snapshot row of snapshot @snapshot_id,
 * by one key lookup (the snapshot subspace is keyed by snapshot_id,
 * docs/keyspace.md), not a scan of every snapshot row. DuckLake's ATTACH
 * reads the newest one this way (`... FROM ducklake_snapshot WHERE
 * snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)`):
 * moraine_read_last_snapshot gives that id.
 * @snapshot_id: any integer; an id the catalog never committed, one whose row
 *   was expired (moraine_txn_delete_snapshot), or a catalog without the
 *   ducklake_snapshot table all answer 0.
 * @row: filled with every column of the row in catalog order (row->ncols is
 *   the relation's column count) and its embedded ducklake_snapshot_changes
 *   (walk them with moraine_row_children). The value's CRC-32C over key and
 *   value is checked as on every read. The row is valid until the next call
 *   on @rd of this function, moraine_partition_spec_at, moraine_sort_spec_at
 *   or moraine_partition_spec_by_id, or moraine_read_end.
 * Returns 1 and fills @row, 0 if there is no such row, MORAINE_EINVAL (NULL
 * @rd or @row), MORAINE_ECORRUPT (the stored value is damaged: its checksum,
 * header or cells; the message names the key), MORAINE_ELMDB, MORAINE_ENOMEM,
 * MORAINE_EFORK (see moraine_read_begin).
 */
int moraine_read_snapshot(moraine_read *rd, int64_t snapshot_id, moraine_row *row);

/**
 * moraine_table_id_at - the table_id of table @table in schema @schema as
 * DuckLake names it at snapshot @snapshot (time travel: a table dropped
 * later, or renamed later, is found under the name it had at @snapshot; a
 * name dropped and re-created gives each table in its own lifetime).
 * @schema: schema_name; NULL means "main". Names are compared byte for byte.
 * @snapshot: a snapshot id (MORAINE_ALL_VERSIONS is refused: a name may
 *   belong to several tables over time).
 * @table_id: receives the id on success.
 * The schema is found by one scan of ducklake_schema at @snapshot, the table
 * by one range scan of ducklake_table at @snapshot (the same visibility as
 * moraine_scan_open).
 * Returns 0; MORAINE_ENOTFOUND (no such schema, or no such table in it, at
 * @snapshot: the message names which); MORAINE_EINVAL (a NULL argument, or
 * MORAINE_ALL_VERSIONS); MORAINE_ECORRUPT; MORAINE_EFORK (see moraine_read_begin).
 */
int moraine_table_id_at(moraine_read *rd, const char *schema, const char *table, int64_t snapshot, int64_t *table_id);

/* ---- import from rows, verify, stats --------------------------------------- */

/** Progress callback: @done rows of @total so far. Return nonzero to cancel. */
typedef int (*moraine_progress_fn)(void *ud, uint64_t done, uint64_t total);


/** One table handed to moraine_import_rows: @nrows rows of @ncols values, row-major. */
typedef struct {
    const char *name;
    size_t ncols;
    const char *const *colnames;
    size_t nrows;
    const moraine_value *rows; /* nrows * ncols values */
} moraine_import_table;

/**
 * moraine_import_rows - like moraine_import_ndjson, with the tables given as
 * rows (from a SQLite catalog, say) instead of files. Values are checked
 * against the column types moraine knows; an integer 0 or 1 in a BOOLEAN
 * column is taken as false/true (SQLite keeps BOOLEAN as an integer). Row
 * order within a table is the order given. Errors as moraine_import_ndjson,
 * with messages naming table, row (1-based) and column.
 */
int moraine_import_rows(moraine_db *db, const moraine_import_table *tables, size_t ntables, moraine_progress_fn progress, void *ud);

/** A violation found by moraine_verify: the damaged key (rendered) and what is wrong. */
typedef void (*moraine_verify_fn)(void *ud, const char *key, const char *problem);

/**
 * moraine_verify - check every keyspace invariant (docs/keyspace.md): every
 * key and value decodes and has its table's column count; a current row is
 * live (end_snapshot NULL) and its key is the one its values give; a history
 * row has begin_snapshot <= end_snapshot and the key its values give; at most
 * one live version per key; at most one live partition spec and one live
 * sort spec per table; each embedded child decodes, names its parent and
 * sits at a position (ord) from 0 to below its table's ord counter (a child
 * row stores its ord as the difference from the row before it: one outside
 * says a damaged difference, docs/codec.md); a snapshot row sits under its own id and none is above the last committed
 * snapshot; the last snapshot has its ducklake_snapshot row; every counted
 * key range holds as many entries as the catalog counted (a key damaged out
 * of its range); meta integers and table descriptors pass their checksums.
 * Each violation is passed to @report (may be NULL).
 * Returns the number of violations (0: the catalog is sound), or a negative
 * error when the store cannot be read.
 */
int moraine_verify(moraine_db *db, moraine_verify_fn report, void *ud, moraine_progress_fn progress, void *pud);

/**
 * moraine_verify_path - moraine_verify of the catalog in directory @path, run
 * in a child process (fork, then open read-only and walk), so damage to
 * LMDB's own pages that makes LMDB's cursor code fault cannot kill the
 * caller. Violations, progress and errors come back over a pipe; @report and
 * @progress run in the calling process (a nonzero @progress kills the child:
 * MORAINE_EINVAL "verify cancelled"). When the child dies of a signal, one
 * more violation is reported: its key is the last key the walk reached,
 * "(at K)", and the problem names the signal.
 * Returns the number of violations, or the child's open/read error
 * (MORAINE_EIO, MORAINE_ECORRUPT, ...), or MORAINE_EIO/MORAINE_ENOMEM when
 * the child cannot be started.
 */
int moraine_verify_path(const char *path, moraine_verify_fn report, void *ud, moraine_progress_fn progress, void *pud);

/** Entries and bytes of one (subspace, table) pair, for moraine_stats. */
typedef struct {
    char subspace;        /* 'C' current, 'H' history, 'S' snapshot, 'R' rows, 'M' meta */
    const char *relation; /* table name, or NULL for the meta subspace */
    uint64_t entries, key_bytes, value_bytes;
} moraine_stat;

/**
 * moraine_stats - walk the keyspace once and report entries and bytes per
 * subspace and table through @fn (called once per pair, in key order).
 * Returns 0 or a negative error.
 */
int moraine_stats(moraine_db *db, void (*fn)(void *ud, const moraine_stat *st), void *ud);

/** What moraine_compact did: entries copied, data.mdb's size before and after. */
typedef struct {
    uint64_t entries;    /* key/value pairs copied (every entry of the store) */
    uint64_t src_bytes;  /* the catalog's data.mdb, in bytes */
    uint64_t dest_bytes; /* the copy's data.mdb, in bytes */
    uint64_t txnid;      /* the LMDB transaction the copy was read at (see moraine_last_txnid) */
} moraine_compact_info;

/**
 * moraine_compact - copy the store of @db, every key/value in key order, into
 * a new catalog directory @dest (created; it must not exist) with MDB_APPEND:
 * every leaf page filled before the next begins and no free page, the
 * smallest file LMDB can hold the same rows in (docs/reliability.md).
 * The source is read in one read transaction (a consistent copy, writers go
 * on meanwhile and are not in the copy); the copy is written in write
 * transactions of about 64 MiB each, without fsync, then synced whole
 * (data.mdb and @dest's directory entry) before the call returns. @dest,
 * its data.mdb and its lock.mdb get the group and permission bits of the
 * catalog's (whatever the umask), so a catalog shared through its group stays
 * so. The copy must hold as many
 * entries as the source counted. Nothing is left at @dest on failure.
 * A catalog of store format 2, 3 or 4 (an older moraine's; it opens, but reads
 * and commits are refused) is copied in format 5: every record of an older
 * version is re-encoded (each child row with its length, its ord as the
 * difference from the row before it, no column count; a child row's column
 * count checked against its table) and sealed again, the format marker says
 * 4 (docs/codec.md, Versioning); a record that does not decode is
 * MORAINE_ECORRUPT naming its key (of an older catalog, which this build
 * cannot verify: the message says to verify it with the moraine that wrote
 * it), nothing left at @dest.
 * @info (may be NULL) receives the entry count and both files' sizes;
 * @progress (may be NULL) is called every 4096 entries and at the end with
 * (entries copied, entries in all); nonzero cancels.
 * Returns 0, or MORAINE_EINVAL (NULL argument; "compact cancelled"),
 * MORAINE_EEXIST (@dest exists), MORAINE_EIO (@dest cannot be created,
 * synced or stat'ed, or given the catalog's group, e.g. one the caller is
 * not a member of; the catalog's files cannot be stat'ed), MORAINE_ECORRUPT
 * (keys out of order, or entry counts that disagree; an older format's record
 * that does not decode), MORAINE_ELMDB,
 * MORAINE_ENOMEM, MORAINE_EFORK.
 */
int moraine_compact(moraine_db *db, const char *dest, moraine_compact_info *info, moraine_progress_fn progress, void *ud);

/**
 * moraine_open_elsewhere - whether a process other than the caller has the
 * catalog of @db open (any handle, read-only too): every process that opens
 * an LMDB environment holds a shared lock on its lock.mdb, which the call
 * asks about (fcntl F_GETLK on LMDB's own descriptor, found in
 * /proc/self/fd: Linux only). Handles of the calling process do not count.
 * @pid (may be NULL) receives the id of one such process, or 0.
 * Returns 1 (another process has it open), 0 (none), or MORAINE_EIO (the
 * lock file or /proc/self/fd cannot be read), MORAINE_EINVAL, MORAINE_ELMDB,
 * MORAINE_EFORK.
 */
int moraine_open_elsewhere(moraine_db *db, long *pid);

/**
 * moraine_last_txnid - the id of the last LMDB write transaction committed to
 * the catalog of @db (by any process): it grows with every commit that
 * changed the store, so an equal id means nothing was written since. Inside
 * an open write transaction it is the last one committed before it.
 * Returns 0 and sets *@out, or MORAINE_EINVAL, MORAINE_ELMDB, MORAINE_EFORK.
 */
int moraine_last_txnid(moraine_db *db, uint64_t *out);

/* ---- verb transactions: moraine_verbs.h (docs/verbs.md) -------------------- */
#include "moraine_verbs.h"

/* ---- rows as JSON ------------------------------------------------------------ */

/** A growing text buffer; zero-initialise, free with moraine_json_free. */
typedef struct {
    char *p;
    size_t len, cap;
} moraine_json;

#define MORAINE_JSON_CHILDREN 1u         /* embed child rows: ,"<child table>":[{...},...] */
#define MORAINE_JSON_PARTITION_VALUES 2u /* embed a data file's values: ,"partition_values":["2025",null,...] */
#define MORAINE_JSON_SECRETS 4u          /* write MORAINE_COL_SECRET columns as stored (an admin path); else redacted */

/**
 * moraine_row_json - append @row to @out as one JSON object in DuckDB's
 * JSON-lines form: columns in the catalog's order, exact integers, null,
 * true/false, strings escaped as DuckDB does (the form of
 * moraine_export_ndjson). @flags add the row's embedded children. A column
 * flagged MORAINE_COL_SECRET (in the row and its children) is written as
 * "<redacted>" (MORAINE_REDACTED) when it is not NULL and as null when it is
 * NULL, unless @flags has MORAINE_JSON_SECRETS (docs/security.md). The text is
 * not NUL-terminated; out->len is its length.
 * Returns 0; MORAINE_EINVAL (a string that is not valid UTF-8, or a double
 * that is NaN or infinite, which JSON cannot carry: message names the table
 * and column; @out then holds a partial object, reset len to undo;
 * a NULL argument); MORAINE_ECORRUPT (a damaged child); MORAINE_ENOMEM;
 * MORAINE_EFORK (@rd was begun in another process: see moraine_read_begin).
 */
int moraine_row_json(moraine_read *rd, const moraine_row *row, unsigned flags, moraine_json *out);

/** moraine_json_free - release the buffer of @j (and zero it). */
void moraine_json_free(moraine_json *j);

/* ---- secrets and the store on disk (docs/security.md) ----------------------- */

/**
 * moraine_secret_count - number of non-NULL values in MORAINE_COL_SECRET
 * columns in @rd's view, over every version of every row (live and ended: an
 * ended file's key still opens a Parquet file until it is deleted).
 * Returns 0 and sets *out; MORAINE_EINVAL (NULL argument), MORAINE_ECORRUPT,
 * MORAINE_ENOMEM, MORAINE_EFORK (see moraine_read_begin).
 */
int moraine_secret_count(moraine_read *rd, uint64_t *out);

/** Permission bits of a catalog's files (st_mode & 07777), from stat(2). */
typedef struct {
    unsigned dir_mode;  /* the catalog directory */
    unsigned data_mode; /* data.mdb: every row, secrets included */
    unsigned lock_mode; /* lock.mdb: LMDB's reader table (pids, no catalog data) */
    int exposed;        /* nonzero: data.mdb is readable by group or others */
} moraine_store_access;

/**
 * moraine_store_access_get - the permission bits of @db's directory, data.mdb
 * and lock.mdb. A catalog moraine creates is private: the directory (when
 * moraine_open creates it) 0700, data.mdb and lock.mdb 0600, as PostgreSQL
 * keeps its data directory.
 * Returns 0 and fills @out; MORAINE_EINVAL (NULL argument), MORAINE_EIO (a
 * file cannot be stat'ed: message names it).
 */
int moraine_store_access_get(moraine_db *db, moraine_store_access *out);

/**
 * moraine_path_in_catalog - whether writing the file @path would touch @db's
 * own files: @path is in the catalog's directory (its parent directory is
 * that directory, whatever the spelling: ".", "..", symbolic links, compared
 * by device and inode), is the directory itself, or is data.mdb or lock.mdb
 * under another name (a hard link). An export writes its file, or a
 * temporary file beside it that is then renamed over it, so a path there
 * could replace data.mdb with the export and lose the catalog: moraine's
 * exports refuse it. @path need not exist; a parent directory that does not
 * exist is not the catalog's (*inside 0).
 * Returns 0 and sets *inside (1 or 0); MORAINE_EINVAL (NULL argument, empty
 * @path), MORAINE_EIO (the catalog's directory cannot be stat'ed).
 */
int moraine_path_in_catalog(moraine_db *db, const char *path, int *inside);

/* ---- import / export (docs/import-export.md) ------------------------------- */


/**
 * moraine_import_ndjson - replay a DuckLake catalog exported as a directory of
 * `<table>.ndjson` files (one JSON object per line; a file holding one JSON
 * array of objects is accepted too) into an empty catalog, snapshot by
 * snapshot through the staged path, then the non-temporal tables.
 * Accepts gaps in snapshot ids, rows whose begin_snapshot names an expired
 * snapshot, unknown columns and tables (inlined data tables included).
 * Every file is read and checked before anything is written
 * (docs/import-export.md, "Check everything first"). The files stay open
 * and each row is read again from its file (pread into a window of it, never
 * through a map) and parsed again by the checks and the replay (the process
 * keeps about 12 bytes a row, not the rows): the files must not change
 * during the import (docs/import-export.md, "Memory").
 * Returns 0; MORAINE_EIO (directory or file unreadable; a file changed
 * since it was read, message naming it: cut shorter, grown, rewritten
 * (another inode, size or modification time) or a row no longer reading as
 * it did, whether before the replay or during it; a change that keeps size
 * and modification time and leaves the rows still read well formed is not
 * seen); MORAINE_EJSON
 * (malformed JSON: message names file and line); MORAINE_EINVAL (@dir holds
 * `.moraine-export-incomplete`: an export into it was killed while it renamed
 * its tables, see moraine_export_ndjson; a row with a
 * wrong type or missing column: file, line, column; a snapshot column that is
 * not a non-negative integer, an end_snapshot below its begin_snapshot, a
 * begin or end after the last ducklake_snapshot row; a child row whose parent
 * row is absent; an id naming no row (a data file's table_id, ...); a
 * DuckLake catalog, one with ducklake_metadata and ducklake_snapshot rows,
 * lacking one of the tables every DuckLake catalog has); MORAINE_EEXIST (the
 * catalog is not empty); MORAINE_ETXN (this thread holds a commit open on
 * the catalog through another handle); staged-path errors. On any error
 * nothing of the import remains in the catalog, unless the undo itself
 * failed: the message then says "the import could not be undone" and why,
 * and what the import committed before the failure, if anything, stays.
 * @progress (may be NULL) is called in two phases: while the files are read
 * and checked, with (rows read so far, 0) every 4096 rows and once at the
 * end (total 0: not known yet); then while the rows are written, with
 * (rows written, rows in all) every 4096 rows and at the end. A nonzero
 * return cancels the import (MORAINE_EINVAL "import cancelled").
 */
int moraine_import_ndjson(moraine_db *db, const char *dir, moraine_progress_fn progress, void *ud);

/** One table of a SQLite DuckLake catalog, as moraine_import_sqlite reads it. */
typedef struct {
    const char *name;             /* a ducklake_* table of the file */
    size_t ncols;
    const char *const *cols;      /* its columns, in PRAGMA table_info order */
    const unsigned char *bools;   /* per column: nonzero when its integers 0 and 1 are false and true; NULL: none */
} moraine_sqlite_table;

/** moraine_import_sqlite: every integral REAL (an exact int64) is read as an
 * integer (as a LuaJIT number is stored), not only in the BIGINT columns
 * moraine knows. */
#define MORAINE_SQLITE_INT_REALS 1u

/**
 * moraine_import_sqlite - import a DuckLake catalog kept in the SQLite file
 * @path into an empty catalog, as moraine.sync's first round would (every
 * snapshot one staged commit), at the speed of moraine_import_ndjson: the
 * file is opened read-only and read in one read transaction, every table of
 * @tables (which must be the file's ducklake_* tables in name order, with
 * their columns in PRAGMA table_info order) written as `<name>.ndjson` into
 * the new directory @tmpdir (created 0700, must not exist; on the catalog's
 * disk, as big as the catalog's rows as JSON), which is then imported as
 * moraine_import_ndjson imports a directory, with the tables in the order
 * given (their relation ids), each defined with the columns given even
 * without rows, and each row at position (ord) rowid - 1. @tmpdir is removed
 * in every case. Values: an INTEGER its exact int64, or false/true where
 * @tables' bools says so and it is 0 or 1; NULL; TEXT and BLOB the string
 * of their bytes; a REAL a double, an integer when it is integral and the
 * column a BIGINT one moraine knows (or any column with
 * MORAINE_SQLITE_INT_REALS in @flags). Memory: one row at a time, a 1 MiB
 * buffer, the runs of rowids that do not follow each other, and
 * moraine_import_ndjson's ~12 bytes a row. Each row is checked as it is
 * written (not read back before the plan). The replay's commits are not
 * synced one by one: the environment is MDB_NOSYNC while the import runs
 * (unless it already was) and synced once at the end, whatever the outcome;
 * another handle of the same environment committing meanwhile is synced at
 * that end too. @tmpdir is the mark of those unsynced commits: created and
 * made durable (its parent synced) before the first, held with
 * flock(LOCK_EX) while the import runs, removed after the final sync; a
 * caller that finds it unlocked must not trust the store (the moraine
 * command discards it and imports afresh: docs/import-export.md).
 * Returns 0, with the number of commits made in *@commits (may be NULL);
 * 1 when this import cannot take the file, nothing written: a string that
 * is not valid UTF-8 or a REAL that is not finite (JSON has no form for
 * them), tables or columns other than @tables, any error SQLite reports
 * (not a database, unreadable, a table without rowid) — the caller imports
 * through the staged path instead, which reads and refuses the file itself;
 * MORAINE_EINVAL (a NULL argument, a table name with '/', cancelled:
 * "import cancelled"); MORAINE_EREADONLY, MORAINE_EEXIST (the catalog is
 * not empty); MORAINE_EIO (@tmpdir cannot be created or written); every
 * error of moraine_import_ndjson (its messages name `<name>.ndjson:line`;
 * nothing of the import remains in the catalog).
 * @progress (may be NULL) is called as moraine_import_ndjson calls it:
 * (rows written and checked, 0) every 4096 rows and once at the end, then
 * (replay steps done, in all). A nonzero return cancels.
 */
int moraine_import_sqlite(moraine_db *db, const char *path, const char *tmpdir, const moraine_sqlite_table *tables, size_t n,
                          unsigned flags, moraine_progress_fn progress, void *ud, uint64_t *commits);

/**
 * moraine_import_ndjson_check - read and check the directory @dir as
 * moraine_import_ndjson does before it writes anything, without a catalog:
 * the same reading, the same checks, the same errors and messages (file,
 * line, column). @progress as moraine_import_ndjson's first phase.
 * Returns 0 when moraine_import_ndjson would start writing; MORAINE_EIO,
 * MORAINE_EJSON, MORAINE_EINVAL as moraine_import_ndjson.
 */
int moraine_import_ndjson_check(const char *dir, moraine_progress_fn progress, void *ud);

/** The checks of an import of rows (moraine_import_rows) run without a
 * catalog, the rows given a part at a time: moraine_import_check_begin, then
 * moraine_import_check_add for each part, then moraine_import_check_end. */
typedef struct moraine_import_check moraine_import_check;

/**
 * moraine_import_check_begin - start checking an import of rows.
 * Returns 0 (*@out set); MORAINE_EINVAL (@out NULL); MORAINE_ENOMEM.
 */
int moraine_import_check_begin(moraine_import_check **out);

/**
 * moraine_import_check_add - add a part of one table: @t's rows (values are
 * copied; the caller may free them on return) after the rows given for the
 * same table name before (numbered on from them, 1-based, in messages); the
 * first part of a table names its columns, later parts must name the same.
 * Each row is checked as moraine_import_rows checks it (types of the columns
 * moraine knows; 0/1 in a BOOLEAN column taken as false/true).
 * Returns 0; MORAINE_EINVAL (a value of the wrong type, naming table, row and
 * column; other columns than the table's first part; NULL argument);
 * MORAINE_ENOMEM. After an error the check can only be ended.
 */
int moraine_import_check_add(moraine_import_check *c, const moraine_import_table *t);

/**
 * moraine_import_check_end - run the checks that need every row (those of
 * moraine_import_rows before it writes: snapshots, ends, parents, ids,
 * required tables) and free @c.
 * Returns 0 when moraine_import_rows of the same tables would start writing;
 * MORAINE_EINVAL (naming table, row and column); MORAINE_ENOMEM.
 */
int moraine_import_check_end(moraine_import_check *c);

/**
 * moraine_export_ndjson - write every relation of the catalog to
 * `<dir>/<table>.ndjson`, rows in their original order, columns in the
 * catalog's order, secret columns as stored (an export is a copy of the
 * catalog; when the catalog holds secrets, moraine_secret_count > 0, every
 * file is created 0600 and a directory it creates 0700: docs/security.md),
 * in DuckDB's JSON-lines form (exact integers, null, strings,
 * true/false); an empty table is a file holding one newline. Creates @dir.
 * Each file is written as `<table>.ndjson.tmp` and synced; when all are,
 * they are renamed into place, bracketed by `<dir>/.moraine-export-incomplete`
 * (made and synced before the first rename, removed after the last): an
 * export killed part way through its renames leaves it, and every import of
 * @dir (moraine_import_ndjson, sync from an NDJSON directory) refuses the
 * directory until an export into it ends. One export into @dir at a time:
 * the export holds an flock of @dir.
 * Returns 0; MORAINE_EIO; MORAINE_EINVAL (a string that is not valid UTF-8,
 * or a double that is NaN or infinite, cannot be written as JSON: message
 * names table, row and column);
 * MORAINE_EEXIST (@dir holds a `<name>.ndjson` of a table the catalog does
 * not have, which an import of @dir would read: nothing is written);
 * MORAINE_ECONFLICT (another export into @dir is running: nothing is
 * written).
 */
int moraine_export_ndjson(moraine_db *db, const char *dir, moraine_progress_fn progress, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* MORAINE_H */
