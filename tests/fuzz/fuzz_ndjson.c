/*
 * fuzz_ndjson.c — libFuzzer target for moraine_import_ndjson (engine/ndjson.c
 * and the staged path behind it) and moraine_export_ndjson.
 *
 * The first input byte picks a table name (ndjson_tables.h: every DuckLake
 * table plus one moraine does not know); the rest is the content of
 * `<table>.ndjson`, written into a fresh directory (under /dev/shm when it
 * exists) and imported into a fresh catalog (no_sync, map_size 64 MiB).
 * Refusals are fine. When the import succeeds:
 *   - moraine_verify must report 0 violations;
 *   - export to another fresh directory must succeed, or fail with EINVAL
 *     for a string that is not valid UTF-8 (the message says so);
 *   - when the export succeeded, importing it into a third catalog must
 *     succeed and exporting that one must give byte-identical files
 *     (import and export are row-faithful: export . import is idempotent).
 * A violated check prints what was wrong and calls abort(). Every directory
 * and handle is removed/closed on every run (the fuzzer checks for leaks).
 * MORAINE_FUZZ_VERBOSE=1 prints each import's outcome.
 */
#include "moraine.h"
#include "fuzz_tmp.h"
#include "ndjson_tables.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *root;
static int verbose = -1; /* MORAINE_FUZZ_VERBOSE=1: print each import's outcome */

static int env_flag(const char *name)
{
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

static void report(void *ud, const char *key, const char *problem)
{
    (void)ud;
    fprintf(stderr, "fuzz_ndjson: verify: %s: %s\n", key, problem);
}

static moraine_db *open_catalog(const char *dir)
{
    moraine_options o;
    memset(&o, 0, sizeof o);
    o.map_size = 64u << 20;
    o.no_sync = 1;
    o.create = 1;
    moraine_db *db = NULL;
    int rc = moraine_open(dir, &o, &db);
    if (rc) {
        fprintf(stderr, "fuzz_ndjson: cannot open a fresh catalog in %s: %s: %s\n", dir, moraine_strerror(rc), moraine_errmsg());
        abort();
    }
    return db;
}

/* Reads a whole file; returns its length or -1. */
static long slurp(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            char *p = realloc(buf, cap);
            if (!p) abort();
            buf = p;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
    }
    fclose(f);
    *out = buf;
    return (long)len;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted list of the file names in dir (NULL-terminated). */
static char **list_dir(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d) abort();
    char **names = NULL;
    *n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        names = realloc(names, (*n + 2) * sizeof *names);
        if (!names || !(names[*n] = strdup(de->d_name))) abort();
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(names, *n, sizeof *names, cmp_names);
    return names;
}

static void free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* The two export directories must hold the same files with the same bytes. */
static void same_exports(const char *a, const char *b)
{
    size_t na, nb;
    char **la = list_dir(a, &na), **lb = list_dir(b, &nb);
    if (na != nb) {
        fprintf(stderr, "fuzz_ndjson: re-export holds %zu files, the first export %zu\n", nb, na);
        abort();
    }
    for (size_t i = 0; i < na; i++) {
        if (strcmp(la[i], lb[i]) != 0) {
            fprintf(stderr, "fuzz_ndjson: re-export has %s where the first export has %s\n", lb[i], la[i]);
            abort();
        }
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%s", a, la[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, lb[i]);
        char *ca = NULL, *cb = NULL;
        long sa = slurp(pa, &ca), sb = slurp(pb, &cb);
        if (sa < 0 || sb < 0 || sa != sb || memcmp(ca, cb, (size_t)sa) != 0) {
            fprintf(stderr, "fuzz_ndjson: %s differs after import . export . import . export (%ld vs %ld bytes)\n--- first export:\n%.*s\n--- re-export:\n%.*s\n",
                    la[i], sa, sb, (int)(sa > 2000 ? 2000 : sa), ca ? ca : "", (int)(sb > 2000 ? 2000 : sb), cb ? cb : "");
            abort();
        }
        free(ca);
        free(cb);
    }
    free_list(la, na);
    free_list(lb, nb);
}

/* Exports db to dir; returns 1 when exported, 0 when refused for invalid UTF-8. */
static int export_ok(moraine_db *db, const char *dir, const char *what)
{
    int rc = moraine_export_ndjson(db, dir, NULL, NULL);
    if (rc == 0) return 1;
    if (rc == MORAINE_EINVAL && strstr(moraine_errmsg(), "not valid UTF-8")) return 0;
    fprintf(stderr, "fuzz_ndjson: %s failed: %s: %s\n", what, moraine_strerror(rc), moraine_errmsg());
    abort();
}

/* Wider heap redzones than ASan's default 16 bytes, so that a small negative
 * index (v[-1] of a short array) lands in one and is caught every time. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "redzone=64"; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (verbose < 0) {
        verbose = env_flag("MORAINE_FUZZ_VERBOSE");
    }
    if (size == 0) return 0;
    if (!root) root = fuzz_root("ndjson");
    const char *table = fuzz_ndjson_tables[data[0] % FUZZ_NDJSON_NTABLES];
    char in[600], cat[600], out[600], cat2[600], out2[600], file[1200];
    snprintf(in, sizeof in, "%s/in", root);
    snprintf(cat, sizeof cat, "%s/cat", root);
    snprintf(out, sizeof out, "%s/out", root);
    snprintf(cat2, sizeof cat2, "%s/cat2", root);
    snprintf(out2, sizeof out2, "%s/out2", root);
    if (mkdir(in, 0700) != 0) {
        fprintf(stderr, "fuzz_ndjson: mkdir %s: %s\n", in, strerror(errno));
        abort();
    }
    snprintf(file, sizeof file, "%s/%s.ndjson", in, table);
    FILE *f = fopen(file, "wb");
    if (!f || (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) || fclose(f) != 0) {
        fprintf(stderr, "fuzz_ndjson: cannot write %s\n", file);
        abort();
    }

    moraine_db *db = open_catalog(cat);
    int rc = moraine_import_ndjson(db, in, NULL, NULL);
    if (verbose) fprintf(stderr, "fuzz_ndjson: import of %s.ndjson (%zu bytes): %s %s\n", table, size - 1, moraine_strerror(rc), rc ? moraine_errmsg() : "");
    if (rc == 0) {
        int bad = moraine_verify(db, report, NULL, NULL, NULL);
        if (bad != 0) {
            fprintf(stderr, "fuzz_ndjson: moraine_verify after a successful import of %s.ndjson returned %d\n", table, bad);
            abort();
        }
        if (export_ok(db, out, "export")) {
            moraine_db *db2 = open_catalog(cat2);
            rc = moraine_import_ndjson(db2, out, NULL, NULL);
            if (rc != 0) {
                fprintf(stderr, "fuzz_ndjson: the export of an imported %s.ndjson does not import again: %s: %s\n", table,
                        moraine_strerror(rc), moraine_errmsg());
                abort();
            }
            bad = moraine_verify(db2, report, NULL, NULL, NULL);
            if (bad != 0) {
                fprintf(stderr, "fuzz_ndjson: moraine_verify after re-importing the export returned %d\n", bad);
                abort();
            }
            if (!export_ok(db2, out2, "re-export")) {
                fprintf(stderr, "fuzz_ndjson: the re-import holds invalid UTF-8 the first import did not export\n");
                abort();
            }
            moraine_close(db2);
            same_exports(out, out2);
            fuzz_rm_tree(out2);
            fuzz_rm_tree(cat2);
        }
        fuzz_rm_tree(out);
    } else if (rc != MORAINE_EJSON && rc != MORAINE_EINVAL && rc != MORAINE_EEXIST && rc != MORAINE_ENOTLIVE &&
               rc != MORAINE_ESNAPSHOT && rc != MORAINE_ENOTFOUND) {
        /* I/O, LMDB, corruption or memory failures are not refusals of bad input */
        fprintf(stderr, "fuzz_ndjson: import of %s.ndjson failed with %s: %s\n", table, moraine_strerror(rc), moraine_errmsg());
        abort();
    }
    moraine_close(db);
    fuzz_rm_tree(cat);
    fuzz_rm_tree(in);
    return 0;
}
