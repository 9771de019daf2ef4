/*
 * test_secrets — key material over the real encrypted catalog (the s4 fixture,
 * written by the ducklake extension with ATTACH ... (ENCRYPTED)):
 * - the descriptors flag exactly ducklake_data_file.encryption_key and
 *   ducklake_delete_file.encryption_key as MORAINE_COL_SECRET;
 * - moraine_row_json writes no key of the fixture, in any row of any table,
 *   with or without children: a key is "<redacted>"; with
 *   MORAINE_JSON_SECRETS each file's own key comes back exactly; a NULL key
 *   (the unencrypted s1 fixture) stays null;
 * - moraine_secret_count counts the non-NULL keys (4 in s4, 0 in s1);
 * - a new store is private (directory 0700, data.mdb and lock.mdb 0600,
 *   whatever the umask lets through) and moraine_store_access_get says so; a
 *   store made readable by others is reported exposed;
 * - an NDJSON export of s4 carries every key exactly, in files made 0600 in a
 *   directory made 0700; an export of s1 (no keys) keeps the umask's modes.
 * The fixture's keys are read from the fixture file itself, not written here.
 */
#include "check.h"
#include "moraine.h"
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

static char keys[16][64];
static int nkeys;

/* Collects the distinct non-NULL encryption_keys of an NDJSON fixture file. */
static void read_keys(const char *path)
{
    json_error_t e;
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, &e);
        if (!o) continue;
        json_t *k = json_object_get(o, "encryption_key");
        int seen = 0;
        for (int i = 0; json_is_string(k) && i < nkeys; i++) seen |= strcmp(keys[i], json_string_value(k)) == 0;
        if (json_is_string(k) && !seen && nkeys < 16) snprintf(keys[nkeys++], sizeof keys[0], "%s", json_string_value(k));
        json_decref(o);
    }
    fclose(f);
}

/* Number of the fixture's distinct keys found in @s. */
static int keys_in(const char *s, size_t n)
{
    int found = 0;
    for (int i = 0; i < nkeys; i++) {
        size_t kl = strlen(keys[i]);
        for (size_t p = 0; p + kl <= n; p++)
            if (memcmp(s + p, keys[i], kl) == 0) {
                found++;
                break;
            }
    }
    return found;
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0xFFFF;
    return (unsigned)(st.st_mode & 07777);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

static moraine_db *import(const char *fx, const char *scenario, const char *dir)
{
    char src[4096];
    snprintf(src, sizeof src, "%s/%s/catalog", fx, scenario);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    if (db) CHECK_RC(moraine_import_ndjson(db, src, NULL, NULL), 0);
    return db;
}

/* link(2), named apart so the test reads as what it does */
static int link_file(const char *from, const char *to) { return link(from, to); }

int main(void)
{
    check_seed("test_secrets");
    umask(022); /* the common default: what a private store must not inherit */
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures/ducklake";
    char path[8192], tmpl[1024];
    char *root = check_mkdtemp(tmpl, sizeof tmpl, "moraine-secrets");
    CHECK(root != NULL, "cannot make a temporary directory");
    if (!root) return check_done();
    snprintf(path, sizeof path, "%s/s4_encrypted/catalog/ducklake_data_file.ndjson", fx);
    read_keys(path);
    snprintf(path, sizeof path, "%s/s4_encrypted/catalog/ducklake_delete_file.ndjson", fx);
    read_keys(path);
    CHECK_INT(nkeys, 3); /* three data files (two share a key), one delete file */

    char dir[1024];
    snprintf(dir, sizeof dir, "%s/s4", root);
    moraine_db *db = import(fx, "s4_encrypted", dir);
    if (!db) return check_done();

    /* the flag, per column */
    int flagged = 0;
    moraine_relation_info info;
    for (size_t i = 0; moraine_relation_at(db, i, &info) == 1; i++)
        for (size_t k = 0; k < info.ncols; k++)
            if (info.colflags[k] & MORAINE_COL_SECRET) {
                flagged++;
                CHECK(strcmp(info.colnames[k], "encryption_key") == 0 &&
                          (strcmp(info.name, "ducklake_data_file") == 0 || strcmp(info.name, "ducklake_delete_file") == 0),
                      "%s.%s flagged secret", info.name, info.colnames[k]);
            }
    CHECK_INT(flagged, 2);

    /* every row of every relation, every version, as JSON: no key; with the flag: the row's key */
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_json j = {0};
    int rows = 0, leaks = 0, redacted = 0, exact = 0;
    for (size_t i = 0; moraine_relation_at(db, i, &info) == 1; i++) {
        if (info.placement == MORAINE_PLACE_CHILD) continue; /* rendered inside their parents below */
        moraine_cursor *c;
        CHECK_RC(moraine_scan_open(rd, info.name, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
        moraine_row row;
        while (moraine_cursor_next(c, &row) == 1) {
            rows++;
            j.len = 0;
            CHECK_RC(moraine_row_json(rd, &row, MORAINE_JSON_CHILDREN | MORAINE_JSON_PARTITION_VALUES, &j), 0);
            leaks += keys_in(j.p, j.len);
            int ik = moraine_column_index(row.rel, "encryption_key");
            if (ik < 0) continue;
            json_error_t e;
            json_t *o = json_loadb(j.p, j.len, 0, &e);
            CHECK(o != NULL, "%s: not JSON: %s", info.name, e.text);
            const char *shown = o ? json_string_value(json_object_get(o, "encryption_key")) : NULL;
            if (shown && strcmp(shown, MORAINE_REDACTED) == 0) redacted++;
            json_decref(o);
            j.len = 0;
            CHECK_RC(moraine_row_json(rd, &row, MORAINE_JSON_SECRETS, &j), 0);
            o = json_loadb(j.p, j.len, 0, &e);
            shown = o ? json_string_value(json_object_get(o, "encryption_key")) : NULL;
            if (shown && row.vals[ik].type == MORAINE_STR && strlen(shown) == row.vals[ik].len &&
                memcmp(shown, row.vals[ik].s, row.vals[ik].len) == 0 && keys_in(shown, strlen(shown)) == 1)
                exact++;
            json_decref(o);
        }
        moraine_cursor_close(c);
    }
    CHECK(rows > 20, "only %d rows rendered", rows);
    CHECK(leaks == 0, "%d keys of the fixture appeared in rendered rows", leaks);
    CHECK_INT(redacted, 4);
    CHECK_INT(exact, 4);
    uint64_t count = 99;
    CHECK_RC(moraine_secret_count(rd, &count), 0);
    CHECK_INT(count, 4);
    CHECK_RC(moraine_secret_count(rd, NULL), MORAINE_EINVAL);
    moraine_read_end(rd);

    /* a private store */
    moraine_store_access acc;
    CHECK_RC(moraine_store_access_get(db, &acc), 0);
    CHECK(acc.dir_mode == 0700, "directory mode %o", acc.dir_mode);
    CHECK(acc.data_mode == 0600, "data.mdb mode %o", acc.data_mode);
    CHECK(acc.lock_mode == 0600, "lock.mdb mode %o", acc.lock_mode);
    CHECK_INT(acc.exposed, 0);
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    CHECK(chmod(path, 0640) == 0, "chmod");
    CHECK_RC(moraine_store_access_get(db, &acc), 0);
    CHECK_INT(acc.exposed, 1);
    CHECK(acc.data_mode == 0640, "data.mdb mode %o", acc.data_mode);

    /* moraine_path_in_catalog: a file an export would write there (or rename over data.mdb) */
    {
        static const char *const in[] = {"%s/data.mdb", "%s/lock.mdb", "%s/new.sql", "%s/./x.sqlite", "%s/../s4/y.db", "%s", "%s/",
                                         "%s/data.mdb/"};
        for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
            int inside = -1;
            snprintf(path, sizeof path, in[i], dir);
            CHECK_RC(moraine_path_in_catalog(db, path, &inside), 0);
            CHECK(inside == 1, "%s: inside %d", path, inside);
        }
        char other[2048], link[2048];
        static const char *const out[] = {"%s/export.sql", "%s/s4-copy/x.sql", "%s/no-such-dir/x.sql"};
        for (size_t i = 0; i < sizeof out / sizeof *out; i++) {
            int inside = -1;
            snprintf(path, sizeof path, out[i], root);
            CHECK_RC(moraine_path_in_catalog(db, path, &inside), 0);
            CHECK(inside == 0, "%s: inside %d", path, inside);
        }
        /* another name for the directory, and for data.mdb */
        snprintf(other, sizeof other, "%s/s4-symlink", root);
        CHECK(symlink(dir, other) == 0, "symlink");
        snprintf(path, sizeof path, "%s/out.sqlite", other);
        int inside = -1;
        CHECK_RC(moraine_path_in_catalog(db, path, &inside), 0);
        CHECK_INT(inside, 1);
        snprintf(path, sizeof path, "%s/data.mdb", dir);
        snprintf(link, sizeof link, "%s/hardlink.mdb", root);
        CHECK(link_file(path, link) == 0, "link");
        inside = -1;
        CHECK_RC(moraine_path_in_catalog(db, link, &inside), 0);
        CHECK_INT(inside, 1);
        CHECK(unlink(link) == 0 && unlink(other) == 0, "unlink");
        CHECK_RC(moraine_path_in_catalog(db, "", &inside), MORAINE_EINVAL);
        CHECK_RC(moraine_path_in_catalog(db, NULL, &inside), MORAINE_EINVAL);
        CHECK_RC(moraine_path_in_catalog(db, path, NULL), MORAINE_EINVAL);
    }

    /* the export carries the keys exactly, privately */
    char out[2048];
    snprintf(out, sizeof out, "%s/export", root);
    CHECK_RC(moraine_export_ndjson(db, out, NULL, NULL), 0);
    CHECK(mode_of(out) == 0700, "export directory mode %o", mode_of(out));
    const char *files[] = {"ducklake_data_file", "ducklake_delete_file", "ducklake_snapshot"};
    int inexport = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s.ndjson", out, files[i]);
        CHECK(mode_of(path) == 0600, "%s mode %o", path, mode_of(path));
        size_t n = 0;
        char *text = slurp(path, &n);
        if (text) inexport += keys_in(text, n);
        free(text);
    }
    CHECK_INT(inexport, 3);
    moraine_close(db);

    /* an unencrypted catalog: NULL keys stay null, nothing to count, an ordinary export */
    snprintf(dir, sizeof dir, "%s/s1", root);
    db = import(fx, "s1_evolution", dir);
    if (db) {
        CHECK_RC(moraine_read_begin(db, &rd), 0);
        moraine_cursor *c;
        CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
        moraine_row row;
        int nulls = 0, n = 0;
        while (moraine_cursor_next(c, &row) == 1) {
            n++;
            j.len = 0;
            CHECK_RC(moraine_row_json(rd, &row, 0, &j), 0);
            if (memmem(j.p, j.len, "\"encryption_key\":null", 21)) nulls++;
        }
        moraine_cursor_close(c);
        CHECK(n > 0 && nulls == n, "%d of %d unencrypted files show encryption_key null", nulls, n);
        CHECK_RC(moraine_secret_count(rd, &count), 0);
        CHECK_INT(count, 0);
        moraine_read_end(rd);
        snprintf(out, sizeof out, "%s/export1", root);
        CHECK_RC(moraine_export_ndjson(db, out, NULL, NULL), 0);
        snprintf(path, sizeof path, "%s/ducklake_data_file.ndjson", out);
        CHECK(mode_of(path) == 0644, "unencrypted export mode %o (umask 022)", mode_of(path));
        moraine_close(db);
    }
    moraine_json_free(&j);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) check_note("could not remove %s", root);
    return check_done();
}
