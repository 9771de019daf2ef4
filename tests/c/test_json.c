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
    int files = 0, bad = 0, values = 0, nulls = 0, stats = 0;
    moraine_json j = {0};
    while (moraine_cursor_next(c, &row) == 1) {
        files++;
        /* partition values only */
        j.len = 0;
        CHECK_RC(moraine_row_json(rd, &row, MORAINE_JSON_PARTITION_VALUES, &j), 0);
        json_error_t e;
        json_t *o1 = json_loadb(j.p, j.len, JSON_ALLOW_NUL, &e);
        if (!o1) {
            bad++;
            check_note("not JSON: %s: %.*s", e.text, (int)j.len, j.p);
            continue;
        }
        /* the columns, in order, then partition_values */
        size_t k = 0;
        const char *key;
        json_t *v;
        json_object_foreach(o1, key, v) {
            if (k < row.ncols && strcmp(key, row.rel->colnames[k]) != 0) bad++;
            if (k < row.ncols && row.vals[k].type == MORAINE_INT && (!json_is_integer(v) || json_integer_value(v) != row.vals[k].i)) bad++;
            k++;
        }
        CHECK(k == row.ncols + 1, "file has %zu keys, expected %zu", k, row.ncols + 1);
        json_t *pv = json_object_get(o1, "partition_values");
        moraine_children it;
        moraine_row ch;
        size_t want = 0;
        moraine_row_children(rd, &row, &it);
        while (moraine_children_next(&it, &ch) == 1) {
            if (strcmp(ch.rel->name, "ducklake_file_partition_value") != 0) continue;
            int iv = moraine_column_index(ch.rel, "partition_value");
            json_t *x = json_array_get(pv, want++);
            if (ch.vals[iv].type == MORAINE_NULL) {
                nulls++;
                if (!json_is_null(x)) bad++;
            } else if (!json_is_string(x) || json_string_length(x) != ch.vals[iv].len || memcmp(json_string_value(x), ch.vals[iv].s, ch.vals[iv].len) != 0) {
                bad++;
            }
            values++;
        }
        moraine_children_free(&it);
        CHECK(json_array_size(pv) == want, "file with %zu values printed %zu", want, json_array_size(pv));
        json_decref(o1);
        /* every child */
        j.len = 0;
        CHECK_RC(moraine_row_json(rd, &row, MORAINE_JSON_CHILDREN, &j), 0);
        json_t *o2 = json_loadb(j.p, j.len, 0, &e);
        CHECK(o2 != NULL, "children JSON does not parse: %s", e.text);
        if (o2) {
            json_t *st = json_object_get(o2, "ducklake_file_column_stats");
            stats += (int)json_array_size(st);
            json_decref(o2);
        }
    }
    moraine_json_free(&j);
    moraine_read_end(rd);
    CHECK_INT(files, 12);
    CHECK_INT(values, 15);
    CHECK(nulls >= 4, "only %d NULL partition values seen", nulls);
    CHECK_INT(stats, 48);
    CHECK(bad == 0, "%d mismatches between rows and their JSON", bad);
    moraine_close(db);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) check_note("could not remove %s", dir);
    return check_done();
}
