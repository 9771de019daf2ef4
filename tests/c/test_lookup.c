/*
 * test_lookup — moraine_table_id_at (a table's id by schema and table name at
 * a snapshot) on the s2_multi_table fixture, which holds a table dropped and
 * re-created under the same name ("sales"."tmp": ids 8 then 11) and a table
 * renamed ("customers" -> "clients", id 3).
 *
 * The expected answers come from the fixture's own NDJSON files, read here
 * with jansson: for every snapshot of ducklake_snapshot.ndjson and every
 * (schema name, table name) pair any version ever had, the table_id of the
 * ducklake_table row visible at that snapshot (`begin_snapshot <= S AND
 * (end_snapshot IS NULL OR S < end_snapshot)`) whose schema row is visible
 * too, or none (MORAINE_ENOTFOUND).
 */
#include "check.h"
#include "moraine.h"
#include <jansson.h>
#include <string.h>

static json_t *load_rows(const char *dir, const char *table)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s.ndjson", dir, table);
    FILE *f = fopen(p, "rb");
    json_t *arr = json_array();
    if (!f) {
        check_note("cannot read %s", p);
        return arr;
    }
    char line[65536];
    while (fgets(line, sizeof line, f)) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        if (o) json_array_append_new(arr, o);
    }
    fclose(f);
    return arr;
}

static int visible(json_t *row, long long s)
{
    json_t *b = json_object_get(row, "begin_snapshot"), *e = json_object_get(row, "end_snapshot");
    if (!json_is_integer(b) || json_integer_value(b) > s) return 0;
    return !json_is_integer(e) || s < json_integer_value(e);
}

static long long int_of(json_t *row, const char *col) { return (long long)json_integer_value(json_object_get(row, col)); }
static const char *str_of(json_t *row, const char *col) { return json_string_value(json_object_get(row, col)); }

/* The schema name of schema @id at snapshot @s, or NULL. */
static const char *schema_at(json_t *schemas, long long id, long long s)
{
    size_t i;
    json_t *r;
    json_array_foreach(schemas, i, r) if (int_of(r, "schema_id") == id && visible(r, s)) return str_of(r, "schema_name");
    return NULL;
}

int main(void)
{
    check_seed("test_lookup");
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures/ducklake";
    char src[4096], tmpl[1024];
    snprintf(src, sizeof src, "%s/s2_multi_table/catalog", fx);
    char *dir = check_mkdtemp(tmpl, sizeof tmpl, "moraine-lookup");
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    CHECK_RC(moraine_import_ndjson(db, src, NULL, NULL), 0);
    json_t *tables = load_rows(src, "ducklake_table"), *schemas = load_rows(src, "ducklake_schema");
    json_t *snaps = load_rows(src, "ducklake_snapshot");
    CHECK(json_array_size(tables) >= 4 && json_array_size(snaps) > 0, "fixture not read (%zu tables)", json_array_size(tables));

    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    size_t si, ti, ni;
    json_t *snap, *t, *n;
    int asked = 0, found = 0, bad = 0, dropped_seen = 0;
    json_array_foreach(snaps, si, snap) {
        long long s = int_of(snap, "snapshot_id");
        /* every name any version ever had, asked at s */
        json_array_foreach(tables, ni, n) {
            const char *sname = NULL;
            json_t *sr;
            size_t k;
            json_array_foreach(schemas, k, sr) if (int_of(sr, "schema_id") == int_of(n, "schema_id")) sname = str_of(sr, "schema_name");
            if (!sname) continue;
            const char *tname = str_of(n, "table_name");
            long long want = -1;
            json_array_foreach(tables, ti, t) {
                if (!visible(t, s) || strcmp(str_of(t, "table_name"), tname) != 0) continue;
                const char *cur = schema_at(schemas, int_of(t, "schema_id"), s);
                if (cur && strcmp(cur, sname) == 0) want = int_of(t, "table_id");
            }
            int64_t got = -1;
            int rc = moraine_table_id_at(rd, sname, tname, s, &got);
            asked++;
            if (want >= 0) {
                found++;
                if (rc != 0 || got != want) {
                    bad++;
                    if (bad <= 5) check_note("%s.%s at %lld: rc %d id %lld, expected %lld", sname, tname, s, rc, (long long)got, want);
                }
                if (strcmp(tname, "tmp") == 0 && int_of(n, "end_snapshot") > 0 && want == int_of(n, "table_id")) dropped_seen++;
            } else if (rc != MORAINE_ENOTFOUND || !strstr(moraine_errmsg(), tname)) {
                bad++;
                if (bad <= 5) check_note("%s.%s at %lld: rc %d (%s), expected ENOTFOUND naming it", sname, tname, s, rc, moraine_errmsg());
            }
        }
    }
    CHECK(bad == 0, "%d of %d lookups differ from the fixture", bad, asked);
    CHECK(found > 0 && found < asked, "%d of %d lookups found a table: the fixture should give both answers", found, asked);
    CHECK(dropped_seen > 0, "the dropped table tmp was never found at a snapshot where it was live");

    /* the same-name pair by hand: the first tmp (dropped), then the re-created one */
    long long first = -1, second = -1, dropped_at = -1, second_begin = -1;
    json_array_foreach(tables, ti, t) {
        if (strcmp(str_of(t, "table_name"), "tmp") != 0) continue;
        if (json_is_integer(json_object_get(t, "end_snapshot"))) {
            first = int_of(t, "table_id");
            dropped_at = int_of(t, "end_snapshot");
        } else {
            second = int_of(t, "table_id");
            second_begin = int_of(t, "begin_snapshot");
        }
    }
    CHECK(first >= 0 && second >= 0 && first != second, "fixture: two tables named tmp expected (%lld, %lld)", first, second);
    int64_t id = -1;
    CHECK_RC(moraine_table_id_at(rd, "sales", "tmp", dropped_at - 1, &id), 0);
    CHECK_INT(id, first);
    CHECK_RC(moraine_table_id_at(rd, "sales", "tmp", second_begin, &id), 0);
    CHECK_INT(id, second);
    if (second_begin > dropped_at) {
        id = 12345;
        CHECK_RC(moraine_table_id_at(rd, "sales", "tmp", dropped_at, &id), MORAINE_ENOTFOUND);
        CHECK_INT(id, 12345); /* untouched */
    }

    /* bad input and the schema */
    CHECK_RC(moraine_table_id_at(rd, "sales", "tmp", MORAINE_ALL_VERSIONS, &id), MORAINE_EINVAL);
    CHECK_RC(moraine_table_id_at(rd, "sales", NULL, 20, &id), MORAINE_EINVAL);
    CHECK_RC(moraine_table_id_at(rd, "sales", "tmp", 20, NULL), MORAINE_EINVAL);
    CHECK_RC(moraine_table_id_at(NULL, "sales", "tmp", 20, &id), MORAINE_EINVAL);
    CHECK_RC(moraine_table_id_at(rd, "nope", "tmp", 20, &id), MORAINE_ENOTFOUND);
    CHECK(strstr(moraine_errmsg(), "no schema \"nope\"") != NULL, "message: %s", moraine_errmsg());
    /* NULL schema is main: no table of s2 lives in main */
    CHECK_RC(moraine_table_id_at(rd, NULL, "tmp", 20, &id), MORAINE_ENOTFOUND);
    CHECK(strstr(moraine_errmsg(), "\"main\".\"tmp\"") != NULL, "message: %s", moraine_errmsg());
    moraine_read_end(rd);

    json_decref(tables);
    json_decref(schemas);
    json_decref(snaps);
    moraine_close(db);

    /* a catalog with no tables at all: ENOTFOUND, not a crash */
    char tmpl2[1024];
    char *dir2 = check_mkdtemp(tmpl2, sizeof tmpl2, "moraine-lookup-empty");
    moraine_db *empty;
    CHECK_RC(moraine_open(dir2, &o, &empty), 0);
    moraine_read *erd;
    CHECK_RC(moraine_read_begin(empty, &erd), 0);
    id = 7;
    CHECK_RC(moraine_table_id_at(erd, "main", "t", 0, &id), MORAINE_ENOTFOUND);
    CHECK_INT(id, 7);
    moraine_read_end(erd);
    moraine_close(empty);
    char cmd2[256];
    snprintf(cmd2, sizeof cmd2, "rm -rf '%s'", dir2);
    if (system(cmd2) != 0) check_note("could not remove %s", dir2);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) check_note("could not remove %s", dir);
    return check_done();
}
