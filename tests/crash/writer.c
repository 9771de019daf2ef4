/*
 * crash_writer CATALOG_DIR [MAX_COMMITS [PAUSE_MS]] — the process the crash and
 * concurrency tests kill or read beside: it commits verb snapshots with fsync
 * on, one data file each (every 7th also changes the partition spec), and
 * prints "ACK <snapshot>" on stdout after each commit has returned, i.e. once
 * it is acknowledged. Every snapshot s >= 2 therefore shows exactly s - 1
 * data files of table "t"; a catalog where that does not hold lost or split
 * a commit.
 */
#include "moraine.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, int rc)
{
    fprintf(stderr, "crash_writer: %s: %s: %s\n", what, moraine_strerror(rc), moraine_errmsg());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: crash_writer CATALOG_DIR [MAX_COMMITS [PAUSE_MS]]\n");
        return 2;
    }
    long max = argc > 2 ? atol(argv[2]) : -1;
    long pause_ms = argc > 3 ? atol(argv[3]) : 0; /* between commits (the HTTP test paces the writer) */
    moraine_options o = {.create = 1};
    moraine_db *db;
    int rc;
    if ((rc = moraine_open(argv[1], &o, &db))) return fail("open", rc);
    int64_t last;
    int have = moraine_last_snapshot(db, &last);
    if (have < 0) return fail("last snapshot", have);
    if (have == 0 && (rc = moraine_init(db, "data/"))) return fail("init", rc);
    /* the table: created here unless a killed predecessor already committed it */
    moraine_tx *tx;
    moraine_column_def cols[] = {{.name = "k", .type = "int64"}, {.name = "ts", .type = "timestamp"}};
    if ((rc = moraine_tx_begin(db, &tx))) return fail("begin", rc);
    rc = moraine_tx_create_table(tx, NULL, "t", cols, 2, NULL);
    if (rc == MORAINE_EEXIST) {
        moraine_tx_abort(tx);
    } else if (rc || (rc = moraine_tx_commit(tx, &last))) {
        return fail("create table", rc);
    } else {
        printf("ACK %lld\n", (long long)last);
        fflush(stdout);
    }
    for (long n = 0; max < 0 || n < max; n++) {
        if ((rc = moraine_tx_begin(db, &tx))) return fail("begin", rc);
        int64_t next = moraine_tx_base(tx) + 1;
        if (next % 7 == 0) {
            moraine_partition_key pk[] = {{"k", next % 2 ? "identity" : "bucket(4)"}};
            if ((rc = moraine_tx_set_partitioning(tx, NULL, "t", pk, 1))) return fail("partition", rc);
        }
        moraine_read *rd;
        moraine_row spec;
        size_t nvals = 0;
        if ((rc = moraine_read_begin(db, &rd))) return fail("read", rc);
        int have_spec = moraine_partition_spec_at(rd, 1, next - 1, &spec);
        moraine_read_end(rd);
        if (have_spec < 0) return fail("spec", have_spec);
        if (have_spec == 1 || next % 7 == 0) nvals = 1; /* every spec this writer sets has one key */
        char path[64], val[32];
        snprintf(path, sizeof path, "f%lld.parquet", (long long)next);
        snprintf(val, sizeof val, "%lld", (long long)(next % 4)); /* a bucket of bucket(4), an int64 for identity */
        const char *vals[] = {val};
        moraine_data_file f = {path, 0, NULL, 1, 100, 10, vals, nvals, NULL, 0, 0};
        if ((rc = moraine_tx_add_data_files(tx, NULL, "t", &f, 1, NULL))) return fail("add file", rc);
        int64_t snap;
        if ((rc = moraine_tx_commit(tx, &snap))) return fail("commit", rc);
        printf("ACK %lld\n", (long long)snap);
        fflush(stdout);
        if (pause_ms > 0) usleep((useconds_t)pause_ms * 1000);
    }
    moraine_close(db);
    return 0;
}
