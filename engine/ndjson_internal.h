/*
 * ndjson_internal.h — what the NDJSON import's files share: the parsed
 * tables (ndjson.c reads them, ndjson_fast.c parses DuckDB's flat rows) and
 * the replay plan (ndjson_plan.c checks the rows and orders them snapshot by
 * snapshot; ndjson.c replays the plan).
 */
#ifndef MORAINE_NDJSON_INTERNAL_H
#define MORAINE_NDJSON_INTERNAL_H

#include "internal.h"

/* Bytes of a file read with pread: len bytes from its offset off (cap allocated). */
typedef struct {
    char *buf;
    size_t off, len, cap;
} nd_window;

typedef struct {
    char *name;
    char **cols;
    size_t ncols;
    size_t *collen;     /* strlen of each column name (mr_nd_fast_row's, made at its first call) */
    unsigned char *colplain; /* (in collen's block) per column: its name has no quote, backslash or control character, and is UTF-8 */
    mr_rel *rel;        /* descriptor built for checking (not the store's) */
    /* Rows given as values, or read from a file that is one JSON array: */
    mr_buf data;        /* rows encoded with mr_encode_row */
    size_t *off;        /* start of row i in data */
    size_t *line;       /* source line (or number) of row i */
    size_t nrows, caprows;
    /* Rows of a file of JSON lines (file set): kept as where they start in
     * the file, which stays open, and parsed again whenever they are read
     * (mr_nd_row_at), from bytes read with pread into a window (win: the
     * file's bytes, refilled as the rows go by; a read never
     * faults, a file cut shorter is an EIO); their line numbers are counted
     * when a message needs one (mr_nd_line). */
    int file;
    char *whole;        /* a file that is not a regular one (a pipe, say): read whole into memory, else NULL */
    size_t size;        /* the file's size when it was opened (whole: the bytes read) */
    int regular;        /* a regular file: path and what it was when opened recorded, rows read with pread */
    int fd, has_fd;     /* (has_fd) the file, open (at most ND_MAX_OPEN files at a time: ndjson.c) */
    uint64_t used;      /* (regular) when its bytes were last asked for (tables.tick) */
    /* (regular) two windows: win[0] follows the rows read in file order,
     * win[1] those read out of order (a version ended long after it began),
     * so a jump back does not throw away win[0] (file_bytes) */
    nd_window win[2];
    char *path;         /* (regular) the file, and what it was when opened (files_unchanged, files_same) */
    uint64_t fdev, fino;
    int64_t fmtime_s, fmtime_ns;
    void *foff;         /* (file) where row i's text starts in the file (its leading blanks skipped): uint32_t
                         * for a file under 4 GiB, else uint64_t (row_start) */
    int slim;           /* only checked, never replayed: keep only the columns the plan reads */
    unsigned char *keep; /* (slim) per column: kept (else stored as NULL) */
    /* (file rows) the rows' ords when they are not 0, 1, 2, ...: runs, row
     * run_row[k] on having ord run_ord[k] + (row - run_row[k]) (the
     * caller's arrays, ascending; mr_import_ndjson_given) */
    const int64_t *run_row, *run_ord;
    size_t nruns;
} table;

typedef struct {
    table *t;
    size_t n, cap;
    moraine_value *vals;
    size_t vcap;
    int from_files; /* rows came from <table>.ndjson files: messages say file:line */
    int whole_dir;  /* the files are a directory's, as an export left them: every table of the catalog's version must be there */
    int slim;       /* a check only (moraine_import_*check*): tables are slim (table.slim) */
    moraine_progress_fn progress; /* the check phase reports rows read as (read, 0) */
    void *ud;
    uint64_t read;
    void *jrow;                 /* (file rows) the json_t of the row mr_nd_row_at read last, if jansson read it */
    char *owned[256];           /* (file rows) text of its nested values */
    size_t nowned;
    uint64_t commits;           /* commits the replay made */
    size_t nopen;               /* (file rows) tables whose file is open (has_fd) */
    uint64_t tick;              /* (file rows) counts the asks for a file's bytes (table.used) */
} tables;

enum { PH_END = 0, PH_SNAPSHOT = 1, PH_INSERT = 2, PH_CHILD = 3, PH_ROWS = 4 };

/* The replay plan: one step per row (and one more per version ended at a
 * later snapshot), 8 bytes each: the snapshot's index in snaps, the phase
 * (PH_*, 3 bits), the table and the row packed high to low, so that sorting
 * the integers orders the steps by (snapshot, phase, table, row). */
typedef struct {
    uint64_t *v;
    size_t n, cap;
    int64_t *snaps;     /* the snapshots the steps name, ascending */
    size_t nsnaps;
    unsigned row_bits, table_bits;
} ops;

static inline uint64_t op_row(const ops *o, size_t i) { return o->v[i] & ((1ULL << o->row_bits) - 1); }
static inline uint32_t op_table(const ops *o, size_t i) { return (uint32_t)((o->v[i] >> o->row_bits) & ((1ULL << o->table_bits) - 1)); }
static inline uint32_t op_phase(const ops *o, size_t i) { return (uint32_t)((o->v[i] >> (o->row_bits + o->table_bits)) & 7); }
static inline int64_t op_snap(const ops *o, size_t i) { return o->snaps[o->v[i] >> (o->row_bits + o->table_bits + 3)]; }

/* Row @i of @t into ts->vals (valid until the next call): decoded, or for a
 * file of JSON lines parsed again from the file (read with pread: a file
 * cut shorter meanwhile is an error, never a fault); *vals, its position in
 * *ord. ENOMEM, ECORRUPT, EIO naming the file (it changed since it was
 * checked: shorter than it was, another size or modification time when its
 * window is refilled, a row that no longer parses, a read error). (ndjson.c) */
int mr_nd_row_at(tables *ts, table *t, size_t i, moraine_value **vals, int64_t *ord);
/* The source line of row @i of @t (rows given as values: its number in its
 * table), for messages. (ndjson.c) */
size_t mr_nd_line(const table *t, size_t i);
/* Reads the line @p (@len bytes, no newline) into @vals (t->ncols values in
 * column order, pointing into the line) when it is one of DuckDB's flat rows
 * of plain scalars that jansson would read as the same values: 1; anything
 * else 0 (the line goes to jansson, which gives the values or the refusal).
 * (ndjson_fast.c) */
int mr_nd_fast_row(table *t, const char *p, size_t len, moraine_value *vals);
/* The table named @name, or NULL. (ndjson.c) */
table *mr_nd_find_table(tables *ts, const char *name);
/* Checks the tables' rows (references, parents, snapshots) and orders them
 * into @o (freed with mr_nd_ops_free): for each snapshot its ends, its snapshot row, its inserts, their
 * children; non-temporal rows last. EINVAL naming file and line (or table and
 * row), ENOMEM. (ndjson_plan.c) */
int mr_nd_plan(tables *ts, ops *o);
/* Frees the plan @o. (ndjson_plan.c) */
void mr_nd_ops_free(ops *o);

/* One table of mr_import_ndjson_given: `<dir>/<name>.ndjson`, its columns
 * @cols (a file's rows must name exactly these, in this order). */
typedef struct {
    const char *name;
    size_t ncols;
    const char *const *cols;
} mr_nd_given;
/* Writes the file @path of table @t (the @i-th given), calling
 * mr_nd_file_row for each row as it writes it, and may set t's run_row,
 * run_ord and nruns (arrays that must live until the import returns).
 * Returns 0, or what mr_import_ndjson_given is to return (a positive value:
 * nothing was written to the catalog). */
typedef int (*mr_nd_writer)(void *wud, tables *ts, table *t, size_t i, const char *path);
/* The file moraine_export_ndjson keeps in its directory while it renames
 * its tables into place (made and synced before the first rename, removed
 * after the last): an export killed part way through leaves it. */
#define MR_EXPORT_INCOMPLETE ".moraine-export-incomplete"

/* 0 when directory @dir holds no MR_EXPORT_INCOMPLETE; else MORAINE_EINVAL
 * naming it: an export into @dir was killed while it renamed its tables,
 * which may be of two exports (the next export into @dir removes it). Every
 * import of a directory asks first. (ndjson_export.c) */
int mr_export_complete(const char *dir);

/* moraine_import_ndjson of the @n tables @g of @dir, in that order (their
 * relation ids, and the order of a commit's rows within a phase), each
 * defined with its columns even when it has no row, instead of every
 * <table>.ndjson of @dir in file name order. With @write, each file is
 * written by it as the import reads it (the rows it hands to
 * mr_nd_file_row are checked then, not read back from the file), and
 * opened once written (the plan and the replay read its rows again);
 * without, each file is read. *@commits (may be NULL) the commits made. Errors as moraine_import_ndjson, and what @write
 * returns. (ndjson.c; moraine_import_sqlite) */
int mr_import_ndjson_given(moraine_db *db, const char *dir, const mr_nd_given *g, size_t n, mr_nd_writer write, void *wud,
                           moraine_progress_fn progress, void *ud, uint64_t *commits);
/* A row of a table being written (mr_nd_writer): its values @vals (t->ncols,
 * the very values its line reads as), its line number @line in the file
 * and the offset @at where it starts: checked and kept as a row read from
 * a file. EINVAL naming `path:line` and the column (mr_check_value),
 * ENOMEM, EINVAL "import cancelled" (progress). */
int mr_nd_file_row(tables *ts, table *t, const moraine_value *vals, const char *path, size_t line, uint64_t at);

#endif
