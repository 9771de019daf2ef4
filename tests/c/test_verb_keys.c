/*
 * test_verb_keys.c — the rules the C verbs own for partition and sort keys
 * (engine/verbs_spec.c, engine/verbs_files.c; docs/verbs.md): a transform is
 * one DuckLake's catalog loader reads, with a bucket count as DuckLake writes
 * it; a partition value fits its key's transform and column type; a sort
 * key's column references name live columns. Every refusal leaves the store
 * as it was: the transaction then commits nothing.
 */
#include "moraine.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static moraine_db *db;

/* The transform of key 0 of table 1's live spec ("" when none). */
static void live_transform(char *out, size_t n)
{
    moraine_read *rd;
    moraine_row spec;
    out[0] = 0;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    int64_t last = -1;
    moraine_read_last_snapshot(rd, &last);
    if (moraine_partition_spec_at(rd, 1, last, &spec) == 1) {
        moraine_children it;
        moraine_row ch;
        moraine_row_children(rd, &spec, &it);
        while (moraine_children_next(&it, &ch) == 1) {
            int it_ = moraine_column_index(ch.rel, "transform"), ik = moraine_column_index(ch.rel, "partition_key_index");
            if (strcmp(ch.rel->name, "ducklake_partition_column") == 0 && it_ >= 0 && ch.vals[ik].i == 0)
                snprintf(out, n, "%.*s", (int)ch.vals[it_].len, ch.vals[it_].s);
        }
        moraine_children_free(&it);
    }
    moraine_read_end(rd);
}

static int64_t last_snapshot(void)
{
    moraine_read *rd;
    int64_t last = -1;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_read_last_snapshot(rd, &last);
    moraine_read_end(rd);
    return last;
}

/* set_partitioning with one key refused with @code and a message holding @words; nothing committed */
static void partition_refused(const char *column, const char *transform, int code, const char *words)
{
    int64_t before = last_snapshot();
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_partition_key k = {column, transform};
    int rc = moraine_tx_set_partitioning(tx, NULL, "events", &k, 1);
    CHECK(rc == code, "%s of %s: rc %d, want %d", transform, column, rc, code);
    CHECK(strstr(moraine_errmsg(), words) != NULL, "%s: message '%s' lacks '%s'", transform, moraine_errmsg(), words);
    int64_t snap = 0;
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    CHECK_INT(snap, -1);
    CHECK_INT(last_snapshot(), before);
}

static void partition_is(const char *column, const char *transform, const char *stored)
{
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_partition_key k = {column, transform};
    CHECK_RC(moraine_tx_set_partitioning(tx, NULL, "events", &k, 1), 0);
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
    char got[64];
    live_transform(got, sizeof got);
    CHECK(strcmp(got, stored) == 0, "%s stored as '%s', want '%s'", transform, got, stored);
}

/* add_data_files of one file whose key 0 value is @value; @code 0: accepted and committed */
static void value_is(const char *value, int code, const char *words)
{
    static int seq;
    int64_t before = last_snapshot();
    char path[32];
    snprintf(path, sizeof path, "f%d.parquet", seq++);
    const char *vals[] = {value};
    moraine_data_file f = {.path = path, .record_count = 1, .file_size_bytes = 10, .footer_size = INT64_MIN,
                           .partition_values = vals, .npartition_values = 1};
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    int rc = moraine_tx_add_data_files(tx, NULL, "events", &f, 1, NULL);
    CHECK(rc == code, "value '%s': rc %d (%s), want %d", value ? value : "NULL", rc, moraine_errmsg(), code);
    if (code) CHECK(strstr(moraine_errmsg(), words) != NULL, "value '%s': message '%s' lacks '%s'", value, moraine_errmsg(), words);
    int64_t snap = 0;
    CHECK_RC(moraine_tx_commit(tx, &snap), 0);
    CHECK_INT(snap, code ? -1 : before + 1);
}

int main(void)
{
    char dir[4096];
    CHECK(check_mkdtemp(dir, sizeof dir, "verbkeys") != NULL, "mkdtemp");
    moraine_options o = {.create = 1, .no_sync = 1};
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_RC(moraine_init(db, "data/"), 0);
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    moraine_column_def cols[] = {{.name = "id", .type = "int64"},
                                 {.name = "ts", .type = "timestamp"},
                                 {.name = "name", .type = "varchar"},
                                 {.name = "user_id", .type = "int64"},
                                 {.name = "amount", .type = "decimal(18,2)"}};
    int64_t tid = -1;
    CHECK_RC(moraine_tx_create_table(tx, NULL, "events", cols, 5, &tid), 0);
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
    CHECK_INT(tid, 1);

    /* ---- transforms: what DuckLake's catalog loader refuses is refused here */
    partition_refused("name", "truncate(10)", MORAINE_EINVAL, "Unsupported partition transform \"truncate(10)\"");
    partition_refused("ts", "foo", MORAINE_EINVAL, "Unsupported partition transform \"foo\"");
    partition_refused("id", "year(ts)", MORAINE_EINVAL, "Unsupported partition transform \"year(ts)\"");
    partition_refused("id", "YEAR", MORAINE_EINVAL, "Unsupported partition transform");
    partition_refused("id", " year", MORAINE_EINVAL, "Unsupported partition transform");
    partition_refused("id", "bucket(4", MORAINE_EINVAL, "Unsupported partition transform");
    partition_refused("id", "", MORAINE_EINVAL, "needs a transform string");
    partition_refused("id", NULL, MORAINE_EINVAL, "needs a transform string");
    partition_refused("id", "bucket(0)", MORAINE_EINVAL, "Bucket count must be positive");
    partition_refused("id", "bucket(000)", MORAINE_EINVAL, "Bucket count must be positive");
    partition_refused("id", "bucket(-3)", MORAINE_EINVAL, "Bucket count must be positive");
    partition_refused("id", "bucket(x)", MORAINE_EINVAL, "Bucket count must be an integer");
    partition_refused("id", "bucket()", MORAINE_EINVAL, "Bucket count must be an integer");
    partition_refused("id", "bucket(1.5)", MORAINE_EINVAL, "Bucket count must be an integer");
    partition_refused("id", "bucket( 4)", MORAINE_EINVAL, "Bucket count must be an integer");
    partition_refused("id", "bucket(04)", MORAINE_EINVAL, "not written as DuckLake writes it");
    partition_refused("id", "bucket(+4)", MORAINE_EINVAL, "not written as DuckLake writes it");
    partition_refused("id", "bucket(2147483648)", MORAINE_EINVAL, "Bucket count cannot exceed 2147483647");
    partition_refused("id", "bucket(99999999999999999999999)", MORAINE_EINVAL, "Bucket count");
    partition_refused("nosuch", "identity", MORAINE_ENOTFOUND, "Unexpected partition key - column \"nosuch\" does not exist");
    char got[64];
    live_transform(got, sizeof got);
    CHECK(got[0] == 0, "no spec after the refusals, got '%s'", got);
    partition_is("id", "bucket(2147483647)", "bucket(2147483647)");
    partition_is("ts", "hour", "hour");
    partition_is("name", "identity", "identity");

    /* ---- partition values under bucket(4, user_id): 0..3 or NULL (DuckLake's IsValidTransformedHivePartitionValue) */
    partition_is("user_id", "bucket(4)", "bucket(4)");
    const char *bad_buckets[] = {"999", "-1", "4", "abc", "1.5", "04", "+1", "", "-0", " 1", "9223372036854775808"};
    for (size_t i = 0; i < sizeof bad_buckets / sizeof bad_buckets[0]; i++) value_is(bad_buckets[i], MORAINE_EINVAL, "is not a bucket of bucket(4)");
    value_is("0", 0, NULL);
    value_is("3", 0, NULL);
    value_is(NULL, 0, NULL);

    /* year..hour: integers as DuckLake writes them */
    partition_is("ts", "year", "year");
    const char *bad_years[] = {"x", "1.5", "02024", "2024 ", "", "1e3"};
    for (size_t i = 0; i < sizeof bad_years / sizeof bad_years[0]; i++) value_is(bad_years[i], MORAINE_EINVAL, "is not an integer as DuckLake writes a year value");
    value_is("2024", 0, NULL);
    value_is("-44", 0, NULL);

    /* epoch_year .. epoch_hour (DuckLake 1.1): integers, before 1970 negative */
    partition_is("ts", "epoch_day", "epoch_day");
    value_is("19783", 0, NULL);
    value_is("-1", 0, NULL);
    value_is("19783.5", MORAINE_EINVAL, "is not an integer as DuckLake writes a epoch_day value");

    /* identity: a value of the column's type (engine/statval.c) */
    partition_is("id", "identity", "identity");
    value_is("abc", MORAINE_EINVAL, "is not a value of type int64");
    value_is("1.5", MORAINE_EINVAL, "is not a value of type int64");
    value_is("9223372036854775808", MORAINE_EINVAL, "is not a value of type int64");
    value_is("-12", 0, NULL);
    partition_is("amount", "identity", "identity");
    value_is("x", MORAINE_EINVAL, "is not a value of type decimal(18,2)");
    value_is("3.25", 0, NULL);
    partition_is("ts", "identity", "identity");
    value_is("2024-13-01 00:00:00", MORAINE_EINVAL, "is not a value of type timestamp");
    value_is("2024-03-01 05:00:00", 0, NULL);
    partition_is("name", "identity", "identity");
    value_is("any text at all", 0, NULL);

    /* a rewrite keeps its inputs' partition: an output naming another value is refused */
    {
        int64_t before = last_snapshot(), first = -1;
        const char *vals[] = {"eu"}, *other[] = {"us"};
        moraine_data_file in = {.path = "in.parquet", .record_count = 1, .file_size_bytes = 10, .footer_size = INT64_MIN,
                                .partition_values = vals, .npartition_values = 1};
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        CHECK_RC(moraine_tx_add_data_files(tx, NULL, "events", &in, 1, &first), 0);
        CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        moraine_data_file out = {.path = "out.parquet", .record_count = 1, .file_size_bytes = 10, .footer_size = INT64_MIN,
                                 .partition_values = other, .npartition_values = 1};
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        CHECK_RC(moraine_tx_rewrite_files(tx, NULL, "events", &first, 1, &out, 1), MORAINE_EINVAL);
        CHECK(strstr(moraine_errmsg(), "a rewrite keeps its inputs' partition") != NULL, "%s", moraine_errmsg());
        out.partition_values = vals;
        CHECK_RC(moraine_tx_rewrite_files(tx, NULL, "events", &first, 1, &out, 1), 0);
        int64_t snap = -1;
        CHECK_RC(moraine_tx_commit(tx, &snap), 0);
        CHECK_INT(snap, before + 2);
    }

    /* ---- sort keys: column references checked when given (DuckLake's ValidateSortExpressionColumns) */
    {
        int64_t before = last_snapshot();
        const char *c1[] = {"nosuch", "id", "other"}, *c2[] = {"other", "NOSUCH", "Amount"};
        moraine_sort_key keys[] = {{.expression = "((nosuch + id) + other)", .sort_direction = "DESC", .columns = c1, .ncolumns = 3},
                                   {.expression = "((other + \"NOSUCH\") + Amount)", .columns = c2, .ncolumns = 3}};
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        CHECK_RC(moraine_tx_set_sorting(tx, NULL, "events", keys, 2), MORAINE_ENOTFOUND);
        CHECK(strcmp(moraine_errmsg(), "Columns in the SET SORTED BY statement were not found in the DuckLake table. Unmatched columns were: "
                                       "nosuch, other, NOSUCH") == 0,
              "message: %s", moraine_errmsg());
        moraine_sort_key empty = {.expression = ""};
        CHECK_RC(moraine_tx_set_sorting(tx, NULL, "events", &empty, 1), MORAINE_EINVAL);
        moraine_sort_key nocols = {.expression = "id", .ncolumns = 1};
        CHECK_RC(moraine_tx_set_sorting(tx, NULL, "events", &nocols, 1), MORAINE_EINVAL);
        int64_t snap = 0;
        CHECK_RC(moraine_tx_commit(tx, &snap), 0);
        CHECK_INT(snap, -1);
        CHECK_INT(last_snapshot(), before);

        /* a column added earlier in the transaction counts; case is ignored */
        const char *c3[] = {"ID", "score"};
        moraine_sort_key ok = {.expression = "(ID + score)", .columns = c3, .ncolumns = 2};
        moraine_column_def score = {.name = "score", .type = "int32"};
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        CHECK_RC(moraine_tx_add_column(tx, NULL, "events", &score), 0);
        CHECK_RC(moraine_tx_set_sorting(tx, NULL, "events", &ok, 1), 0);
        /* rename_column's new keys name the columns as they are after the rename */
        const char *c4[] = {"score"}, *c5[] = {"points"};
        moraine_sort_key stale = {.expression = "score", .columns = c4, .ncolumns = 1};
        moraine_sort_key fresh = {.expression = "points", .columns = c5, .ncolumns = 1};
        CHECK_RC(moraine_tx_rename_column(tx, NULL, "events", "score", "points", &stale, 1), MORAINE_ENOTFOUND);
        CHECK(strstr(moraine_errmsg(), "Unmatched columns were: score") != NULL, "%s", moraine_errmsg());
        CHECK_RC(moraine_tx_rename_column(tx, NULL, "events", "score", "points", &fresh, 1), 0);
        CHECK_RC(moraine_tx_commit(tx, &snap), 0);
        CHECK_INT(snap, before + 1);
    }

    moraine_close(db);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "rm");
    return check_done();
}
