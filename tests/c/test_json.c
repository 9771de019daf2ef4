/*
 * test_json — moraine_row_json on a real catalog (the s3 fixture: NULL and
 * empty partition values, quotes, unicode, tab and newline, int64 extremes):
 * every data file's JSON parses (jansson), has the row's columns in order with
 * exact integers, and with MORAINE_JSON_PARTITION_VALUES / _CHILDREN carries
 * exactly the file's partition values and child rows.
 */
#include "check.h"
#include "moraine.h"
#include <jansson.h>
#include <string.h>

typedef struct {
    int values, nulls, stats;
} totals;

/* Checks one data file's JSON (both flavours) against @row; adds what it saw
 * to @t. Returns 0, or 1 with the first difference written to @why. */
static int file_differs(moraine_read *rd, const moraine_row *row, moraine_json *j, totals *t, char *why, size_t n)
{
    /* partition values only */
    j->len = 0;
    int rc = moraine_row_json(rd, row, MORAINE_JSON_PARTITION_VALUES, j);
    if (rc) return snprintf(why, n, "moraine_row_json: %s", moraine_errmsg()), 1;
    json_error_t e;
    json_t *o1 = json_loadb(j->p, j->len, JSON_ALLOW_NUL, &e);
    if (!o1) return snprintf(why, n, "not JSON: %s: %.*s", e.text, (int)j->len, j->p), 1;
    int bad = 0;
    /* the columns, in order, then partition_values */
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(o1, key, v) {
        if (bad) break;
        if (k < row->ncols && strcmp(key, row->rel->colnames[k]) != 0)
            bad = snprintf(why, n, "key %zu is %s, the column is %s", k, key, row->rel->colnames[k]);
        else if (k < row->ncols && row->vals[k].type == MORAINE_INT && (!json_is_integer(v) || json_integer_value(v) != row->vals[k].i))
            bad = snprintf(why, n, "%s is not the integer %lld", key, (long long)row->vals[k].i);
        k++;
    }
    if (!bad && k != row->ncols + 1) bad = snprintf(why, n, "%zu keys, expected %zu", k, row->ncols + 1);
    json_t *pv = json_object_get(o1, "partition_values");
    moraine_children it;
    moraine_row ch;
    size_t want = 0;
    moraine_row_children(rd, row, &it);
    while (!bad && moraine_children_next(&it, &ch) == 1) {
        if (strcmp(ch.rel->name, "ducklake_file_partition_value") != 0) continue;
        int iv = moraine_column_index(ch.rel, "partition_value");
        json_t *x = json_array_get(pv, want++);
        if (ch.vals[iv].type == MORAINE_NULL) {
            t->nulls++;
            if (!json_is_null(x)) bad = snprintf(why, n, "partition value %zu: NULL printed as non-null", want - 1);
        } else if (!json_is_string(x) || json_string_length(x) != ch.vals[iv].len || memcmp(json_string_value(x), ch.vals[iv].s, ch.vals[iv].len) != 0) {
            bad = snprintf(why, n, "partition value %zu differs from '%.*s'", want - 1, (int)ch.vals[iv].len, ch.vals[iv].s);
        }
        t->values++;
    }
    moraine_children_free(&it);
    if (!bad && json_array_size(pv) != want) bad = snprintf(why, n, "%zu values printed, the file has %zu", json_array_size(pv), want);
    json_decref(o1);
    if (bad) return 1;
    /* every child */
    j->len = 0;
    rc = moraine_row_json(rd, row, MORAINE_JSON_CHILDREN, j);
    if (rc) return snprintf(why, n, "moraine_row_json (children): %s", moraine_errmsg()), 1;
    json_t *o2 = json_loadb(j->p, j->len, 0, &e);
    if (!o2) return snprintf(why, n, "children JSON does not parse: %s", e.text), 1;
    t->stats += (int)json_array_size(json_object_get(o2, "ducklake_file_column_stats"));
    json_decref(o2);
    return 0;
}

int main(void)
{
    check_seed("test_json");
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures/ducklake";
    char src[4096], tmpl[1024];
    snprintf(src, sizeof src, "%s/s3_edge_values/catalog", fx);
    char *dir = check_mkdtemp(tmpl, sizeof tmpl, "moraine-json");
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_RC(moraine_import_ndjson(db, src, NULL, NULL), 0);
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_cursor *c;
    CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    moraine_row row;
    int files = 0;
    totals t = {0};
    moraine_json j = {0};
    /* one check per data file, naming the file when it fails */
    while (moraine_cursor_next(c, &row) == 1) {
        files++;
        int id_col = moraine_column_index(row.rel, "data_file_id"), path_col = moraine_column_index(row.rel, "path");
        char why[512] = "";
        int differs = file_differs(rd, &row, &j, &t, why, sizeof why);
        CHECK(!differs, "data file %lld (%.*s): %s", id_col >= 0 ? (long long)row.vals[id_col].i : -1LL,
              path_col >= 0 ? (int)row.vals[path_col].len : 0, path_col >= 0 ? row.vals[path_col].s : "", why);
    }
    moraine_json_free(&j);
    moraine_read_end(rd);
    CHECK_INT(files, 12);
    CHECK_INT(t.values, 15);
    CHECK(t.nulls >= 4, "only %d NULL partition values seen", t.nulls);
    CHECK_INT(t.stats, 48);
    moraine_close(db);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) check_note("could not remove %s", dir);
    return check_done();
}
