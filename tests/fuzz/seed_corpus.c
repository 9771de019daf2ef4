/*
 * seed_corpus.c — writes the seed corpora of the fuzz targets.
 *
 *   seed_corpus <fixtures> <out>
 *
 * <fixtures> is the directory of DuckLake fixture catalogs
 * (tests/fixtures/ducklake: s1_evolution/catalog/ *.ndjson, ...);
 * <out> receives one directory per target:
 *   key/     every key of the LMDB file of s1_evolution imported into a
 *            temporary catalog (raw LMDB: a cursor over the unnamed DB);
 *   record/  every value of that file as the record target reads it: a mode
 *            byte 0x00 + the stored value (header and CRC included), and each
 *            value body without its 5-byte header as 0x01 + body (the target
 *            seals it);
 *   ndjson/  one seed per fixture file of every fixture catalog: the index of
 *            its table in ndjson_tables.h, then the file's bytes;
 *   verbs/   a few hand-written op sequences (see verbs_driver.lua) and some
 *            pseudo-random byte strings;
 *   sql/     every statement line of the corpus scenarios
 *            (<fixtures>/corpus/<seed>/scenario.sql) that is DDL (CREATE,
 *            ALTER, DROP, COMMENT), as mode byte 0x00 + the line (see
 *            sql_driver.lua), and the parenthesised list of each SET SORTED BY
 *            / SET PARTITIONED BY as mode 0x02 + the list.
 * Returns 0, or 1 with a message.
 */
#include "moraine.h"
#include "ndjson_tables.h"
#include <dirent.h>
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int die(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "seed_corpus: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    exit(1);
}

static void mkdir_p(const char *dir)
{
    if (mkdir(dir, 0775) != 0 && errno != EEXIST) die("cannot create %s: %s", dir, strerror(errno));
}

static void write_seed(const char *dir, const char *prefix, size_t n, const void *head, size_t hlen, const void *body, size_t blen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%05zu", dir, prefix, n);
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write %s: %s", path, strerror(errno));
    if ((hlen && fwrite(head, 1, hlen, f) != hlen) || (blen && fwrite(body, 1, blen, f) != blen) || fclose(f) != 0)
        die("cannot write %s%s", path, "");
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* key/ and record/ from the LMDB file of an imported catalog */
static void seed_lmdb(const char *fixtures, const char *out)
{
    char src[4096], tmp[256], kdir[4096], rdir[4096];
    snprintf(src, sizeof src, "%s/s1_evolution/catalog", fixtures);
    struct stat st;
    snprintf(tmp, sizeof tmp, "%s/moraine-seed-XXXXXX", stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(tmp)) die("mkdtemp %s: %s", tmp, strerror(errno));
    moraine_options o;
    memset(&o, 0, sizeof o);
    o.map_size = 64u << 20;
    o.no_sync = 1;
    o.create = 1;
    moraine_db *db;
    if (moraine_open(tmp, &o, &db) != 0) die("cannot open a catalog in %s: %s", tmp, moraine_errmsg());
    if (moraine_import_ndjson(db, src, NULL, NULL) != 0) die("cannot import %s: %s", src, moraine_errmsg());
    moraine_close(db);

    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 64u << 20) || mdb_env_open(env, tmp, MDB_RDONLY, 0644) ||
        mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi) || mdb_cursor_open(txn, dbi, &cur))
        die("cannot read the LMDB file in %s%s", tmp, "");
    snprintf(kdir, sizeof kdir, "%s/key", out);
    snprintf(rdir, sizeof rdir, "%s/record", out);
    mkdir_p(kdir);
    mkdir_p(rdir);
    size_t n = 0, nv = 0;
    static const unsigned char whole = 0x00, body = 0x01;
    int rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        write_seed(kdir, "k", n, NULL, 0, k.mv_data, k.mv_size);
        write_seed(rdir, "v", n, &whole, 1, v.mv_data, v.mv_size);
        if (v.mv_size > 5 && ((const unsigned char *)v.mv_data)[0] == 0x01) {
            write_seed(rdir, "b", n, &body, 1, (const unsigned char *)v.mv_data + 5, v.mv_size - 5);
            nv++;
        }
        n++;
    }
    if (rc != MDB_NOTFOUND) die("cursor: %s%s", mdb_strerror(rc), "");
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    rm_dir(tmp);
    printf("seed_corpus: %zu keys, %zu values + %zu value bodies from %s\n", n, n, nv, src);
}

static void seed_ndjson(const char *fixtures, const char *out)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/ndjson", out);
    mkdir_p(dir);
    DIR *d = opendir(fixtures);
    if (!d) die("cannot open %s: %s", fixtures, strerror(errno));
    struct dirent *de;
    size_t n = 0;
    char **sets = NULL;
    size_t nsets = 0;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            sets = realloc(sets, (nsets + 1) * sizeof *sets);
            if (!sets || !(sets[nsets++] = strdup(de->d_name))) die("out of memory%s%s", "", "");
        }
    closedir(d);
    for (size_t s = 0; s < nsets; s++) {
        for (size_t t = 0; t < FUZZ_NDJSON_NTABLES; t++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s/catalog/%s.ndjson", fixtures, sets[s], fuzz_ndjson_tables[t]);
            FILE *f = fopen(path, "rb");
            if (!f) continue;
            char *buf = NULL;
            size_t len = 0, cap = 0, got;
            do {
                if (len == cap) {
                    cap = cap ? cap * 2 : 65536;
                    if (!(buf = realloc(buf, cap))) die("out of memory%s%s", "", "");
                }
                got = fread(buf + len, 1, cap - len, f);
                len += got;
            } while (got);
            fclose(f);
            unsigned char idx = (unsigned char)t;
            write_seed(dir, "n", n++, &idx, 1, buf, len);
            free(buf);
        }
        free(sets[s]);
    }
    free(sets);
    printf("seed_corpus: %zu ndjson seeds from %s\n", n, fixtures);
}

static void seed_sql(const char *fixtures, const char *out)
{
    char dir[4096], cdir[4096];
    snprintf(dir, sizeof dir, "%s/sql", out);
    snprintf(cdir, sizeof cdir, "%s/corpus", fixtures);
    mkdir_p(dir);
    DIR *d = opendir(cdir);
    if (!d) return; /* no corpus beside the fixtures: no seeds, the target still runs */
    struct dirent *de;
    size_t n = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/scenario.sql", cdir, de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char line[8192];
        while (fgets(line, sizeof line, f)) {
            size_t len = strcspn(line, "\n");
            line[len] = 0;
            if (strncmp(line, "CREATE", 6) && strncmp(line, "ALTER", 5) && strncmp(line, "DROP", 4) &&
                strncmp(line, "COMMENT", 7))
                continue;
            unsigned char mode = 0;
            write_seed(dir, "q", n++, &mode, 1, line, len);
            const char *by = strstr(line, " BY (");
            const char *end = strrchr(line, ')');
            if (by && end && end > by + 5) {
                mode = 2;
                write_seed(dir, "q", n++, &mode, 1, by + 5, (size_t)(end - (by + 5)));
            }
        }
        fclose(f);
    }
    closedir(d);
    printf("seed_corpus: %zu sql seeds from %s\n", n, cdir);
}

/* Hand-written op sequences for verbs_driver.lua. Ops: 0 commit, 1 abort,
 * 2 nested, 3 create_table, 4 create_schema, 5 add_column, 6 rename_column,
 * 7 drop_column, 8 rename_table, 9 drop_table, 10 set_partitioning,
 * 11 clear_partitioning, 12 set_sorting, 13 clear_sorting, 14 add_data_files,
 * 15 add_delete_files, 16 delete_files, 17 rewrite_files. A table argument is
 * three bytes (0xFF i f: pool entry i; 0 i f: live table i; f 1: passed as
 * "t" / "s.t", 0: as {schema =, table =}), a column two (0 i: live column i). */
static const unsigned char verbs_seed1[] = {
    /* create t0 (a int64, ts timestamp, b varchar); partition by year(ts), a */
    0, 3, 1, 0xFF, 0, 1, 3, 0, 0, 0, 3, 2, 0, 1, 1, 0,
    10, 0, 0, 1, 2, 0, 1, 1, 1, 0, 0, 0, 0, 0,
    /* two files with 2 partition values each; sort by a DESC NULLS_FIRST */
    0, 14, 0, 0, 1, 2, 12, 5, 0, 1, 0, 1, 1, 12, 5, 0, 1, 0, 1, 1,
    12, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 1, 0,
    /* rewrite both into one output with stats */
    1, 17, 0, 0, 1, 2, 0, 1, 1, 20, 5, 0, 1, 0, 1, 0, 1, 0, 0, 5, 0, 0, 0,
    /* nested: reset partitioning; outer: rename a -> A (a conflict: both alter t0) */
    0, 2, 0, 11, 0, 0, 1, 0, 6, 0, 0, 1, 0, 0, 6, 0, 0,
    /* drop ts, delete a file, reset sorting; then drop the table */
    0, 7, 0, 0, 1, 0, 1, 16, 0, 0, 1, 1, 0, 13, 0, 0, 1, 0,
    0, 9, 0, 0, 1, 0,
};
static const unsigned char verbs_seed2[] = {
    /* schema s1; table s1.t0 (id int64, "x y" varchar default 'x') in table form;
     * partition by bucket(4, id); sort by lower("x y") with direction UP (refused); add column c */
    2, 4, 0, 3, 0, 1, 0, 0, 2, 4, 0, 0, 5, 1, 3, 3,
    10, 0, 0, 1, 1, 0, 0, 1, 5,
    12, 0, 0, 1, 1, 0, 1, 0, 2, 3, 5, 0,
    5, 0, 0, 1, 2, 1, 0, 0,
    /* a file with a wrong partition value count, rename s1.t0 to t3, a delete file, abort */
    0, 14, 0, 0, 1, 1, 7, 7, 0, 8, 0, 1, 1,
    8, 0, 0, 1, 3,
    15, 0, 0, 1, 1, 0, 1, 2, 3, 0,
    1,
};

static void seed_verbs(const char *out)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/verbs", out);
    mkdir_p(dir);
    size_t n = 0;
    write_seed(dir, "v", n++, NULL, 0, verbs_seed1, sizeof verbs_seed1);
    write_seed(dir, "v", n++, NULL, 0, verbs_seed2, sizeof verbs_seed2);
    /* pseudo-random strings (a fixed xorshift, so builds are reproducible) */
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int s = 0; s < 16; s++) {
        unsigned char buf[512];
        size_t len = 32 + (size_t)s * 30;
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (unsigned char)(x >> 24);
        }
        write_seed(dir, "v", n++, NULL, 0, buf, len);
    }
    printf("seed_corpus: %zu verbs seeds\n", n);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: seed_corpus <fixtures dir> <corpus dir>\n");
        return 1;
    }
    mkdir_p(argv[2]);
    seed_lmdb(argv[1], argv[2]);
    seed_ndjson(argv[1], argv[2]);
    seed_verbs(argv[2]);
    seed_sql(argv[1], argv[2]);
    return 0;
}
