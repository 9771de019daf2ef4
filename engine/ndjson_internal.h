/*
 * ndjson_internal.h — what the NDJSON import's two files share: the parsed
 * tables (ndjson.c reads them) and the replay plan (ndjson_plan.c checks the
 * rows and orders them snapshot by snapshot; ndjson.c replays the plan).
 */
#ifndef MORAINE_NDJSON_INTERNAL_H
#define MORAINE_NDJSON_INTERNAL_H

#include "internal.h"

typedef struct {
    char *name;
    char **cols;
    size_t ncols;
    mr_rel *rel;        /* descriptor built for checking (not the store's) */
    mr_buf data;        /* rows encoded with mr_encode_row */
    size_t *off;        /* start of row i in data */
    size_t *line;       /* source line of row i */
    size_t nrows, caprows;
    int slim;           /* only checked, never replayed: keep only the columns the plan reads */
    unsigned char *keep; /* (slim) per column: kept (else stored as NULL) */
} table;

typedef struct {
    table *t;
    size_t n, cap;
    moraine_value *vals;
    size_t vcap;
    int from_files; /* rows came from <table>.ndjson files: messages say file:line */
    int slim;       /* a check only (moraine_import_*check*): tables are slim (table.slim) */
    moraine_progress_fn progress; /* the check phase reports rows read as (read, 0) */
    void *ud;
    uint64_t read;
} tables;

enum { PH_END = 0, PH_SNAPSHOT = 1, PH_INSERT = 2, PH_CHILD = 3, PH_ROWS = 4 };

typedef struct {
    int64_t snap;
    uint32_t phase, table;
    uint64_t row;
} op;

typedef struct {
    op *v;
    size_t n, cap;
} ops;

/* Row @i of @t decoded into ts->vals (valid until the next call): *vals, its
 * position in *ord. ENOMEM, ECORRUPT. (ndjson.c) */
int mr_nd_row_at(tables *ts, table *t, size_t i, moraine_value **vals, int64_t *ord);
/* The table named @name, or NULL. (ndjson.c) */
table *mr_nd_find_table(tables *ts, const char *name);
/* Checks the tables' rows (references, parents, snapshots) and orders them
 * into @o: for each snapshot its ends, its snapshot row, its inserts, their
 * children; non-temporal rows last. EINVAL naming file and line (or table and
 * row), ENOMEM. (ndjson_plan.c) */
int mr_nd_plan(tables *ts, ops *o);

#endif
