/*
 * gen.c — a generator of realistic synthetic DuckLake catalogs, written once
 * as the NDJSON catalog format (one <table>.ndjson per ducklake_* table, the
 * form DuckDB's COPY ... (FORMAT json) writes and moraine_import_ndjson
 * reads). Every store of the benchmark loads these same rows.
 *
 *   gen OUTDIR [--tables N] [--files N] [--pkeys N] [--eras N] [--stats N]
 *              [--snapshots N] [--compact F] [--deletes F] [--seed N]
 *
 * The lake it describes: schema "main" (snapshot 0); N tables created at
 * snapshot 1, each with --stats columns (id, ts, region, amount, ...), a
 * partition spec of --pkeys keys and a sort spec; then one event per
 * snapshot, round robin over the tables: an INSERT of a batch of files (with
 * a few DELETEs: delete files for older files), a compaction (groups of 4
 * files of one partition ended, one merged file registered under the same
 * spec and values), or a spec evolution (ALTER ... SET PARTITIONED BY and
 * SET SORTED BY: the live specs end, new ones begin; --eras specs over the
 * table's life). --files counts every ducklake_data_file row (live and
 * ended); --compact is the share of them ended by compaction. Every file
 * carries one ducklake_file_column_stats row per column and one
 * ducklake_file_partition_value row per key of its spec. Ids, counters and
 * schema versions follow DuckLake's rules (next_catalog_id, next_file_id,
 * ducklake_schema_versions on table creation and partition changes), so the
 * catalog also takes moraine's verb commits.
 *
 * Writes OUTDIR/catalog/<table>.ndjson and OUTDIR/meta.json (sizes, the snapshots
 * the workloads read at, the table they read, row counts).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MERGE 4 /* files per compaction group */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static int64_t rrange(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gen: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* ---- the lake's shape ---- */

typedef struct {
    const char *name, *type;
} coldef;
static const coldef COLS[] = {
    {"id", "int64"},          {"ts", "timestamp"},   {"region", "varchar"}, {"amount", "decimal(18,2)"},
    {"user_id", "int64"},     {"name", "varchar"},   {"score", "float64"},  {"qty", "int32"},
    {"category", "varchar"},  {"created", "date"},   {"price", "decimal(12,4)"}, {"flag", "boolean"},
    {"session", "uuid"},      {"lat", "float64"},    {"lon", "float64"},    {"country", "varchar"},
};
#define NCOLDEFS (sizeof COLS / sizeof COLS[0])

/* partition keys by era: column index into COLS, transform */
typedef struct {
    int col;
    const char *transform;
} pkey;
static const pkey PKEYS[4][5] = {
    {{1, "year"}, {1, "month"}, {1, "day"}, {2, "identity"}, {0, "bucket(16)"}},
    {{2, "identity"}, {1, "day"}, {0, "bucket(8)"}, {1, "hour"}, {1, "month"}},
    {{1, "year"}, {1, "month"}, {2, "identity"}, {0, "bucket(32)"}, {1, "day"}},
    {{0, "bucket(16)"}, {1, "day"}, {1, "hour"}, {2, "identity"}, {1, "year"}},
};
typedef struct {
    const char *expr, *dir, *nulls;
} skey;
static const skey SKEYS[3][2] = {
    {{"ts", "ASC", "NULLS_LAST"}, {"region", "ASC", "NULLS_LAST"}},
    {{"amount", "DESC", "NULLS_LAST"}, {"id", "ASC", "NULLS_FIRST"}},
    {{"lower(\"region\")", "ASC", "NULLS_LAST"}, {"ts", "DESC", "NULLS_LAST"}},
};
static const char *REGIONS[] = {"af-south", "ap-east", "ap-south", "eu-central", "eu-north", "eu-west", "me-south", "sa-east", "us-east", "us-west"};

typedef struct {
    int64_t id, table_id, begin, end; /* end -1: NULL */
    int64_t row_id_start, record_count, file_size, footer;
    int64_t partition_id;
    int32_t era, day, region, bucket;
    int64_t delete_idx; /* index into dels of the live delete file, -1 */
    uint8_t output;     /* a compaction output */
} dfile;

typedef struct {
    int64_t id, table_id, begin, end, data_file_id, count, size, footer;
} dfdel;

typedef struct {
    int64_t id, begin, end, era;
} spec;

typedef struct {
    int64_t table_id;
    int64_t budget, groups_target, inserted_target;
    int nev, *kinds; /* 0 insert, 1 compaction, 2 spec change */
    int ninsert, ncompact;
    int64_t next_row_id, record_count, size_bytes;
    int era;
    /* specs */
    spec *parts, *sorts;
    int nparts, nsorts;
    /* compactable groups: first file index (into files) of MERGE consecutive files */
    int64_t *groups;
    size_t ngroups, gcap, gpos;
    int64_t groups_done, groups_owed;
    /* live files with no delete file (indices), for DELETEs */
    int64_t *plain;
    size_t nplain, pcap;
    int64_t inserted, outputs;
} table;

static dfile *files;
static size_t nfiles, fcap;
static dfdel *dels;
static size_t ndels, dcap;

static int64_t next_catalog_id, next_file_id, schema_version;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) die("out of memory");
    return q;
}

/* ---- output ---- */

typedef struct {
    FILE *f;
    const char *name;
    uint64_t rows;
} out;

static char outdir[4096];

static void out_open(out *o, const char *name)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/catalog/%s.ndjson", outdir, name);
    o->f = fopen(p, "w");
    if (!o->f) die("%s: %s", p, strerror(errno));
    static char *bufs[64];
    static int nb;
    bufs[nb] = malloc(1 << 20);
    setvbuf(o->f, bufs[nb++], _IOFBF, 1 << 20);
    o->name = name;
    o->rows = 0;
}
static void out_close(out *o)
{
    if (o->rows == 0) fputc('\n', o->f); /* DuckDB writes an empty table as one newline */
    if (fclose(o->f)) die("%s: write failed", o->name);
}

static void jnull(FILE *f, const char *k, int first) { fprintf(f, "%s\"%s\":null", first ? "{" : ",", k); }
static void jint(FILE *f, const char *k, int64_t v, int first) { fprintf(f, "%s\"%s\":%" PRId64, first ? "{" : ",", k, v); }
static void jintn(FILE *f, const char *k, int64_t v, int first)
{
    if (v < 0) jnull(f, k, first);
    else jint(f, k, v, first);
}
static void jstr(FILE *f, const char *k, const char *v, int first)
{
    fprintf(f, "%s\"%s\":\"", first ? "{" : ",", k);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
    }
    fputc('"', f);
}
static void jbool(FILE *f, const char *k, int v, int first) { fprintf(f, "%s\"%s\":%s", first ? "{" : ",", k, v ? "true" : "false"); }
static uint64_t all_rows;
static void jend(out *o)
{
    fputs("}\n", o->f);
    o->rows++;
    all_rows++;
}

static void uuid(char *b, uint64_t seed)
{
    uint64_t a = mix(seed), c = mix(seed ^ 0xA5A5A5A5ull);
    snprintf(b, 40, "0197%04x-%04x-7%03x-%04x-%012" PRIx64, (unsigned)(a & 0xFFFF), (unsigned)((a >> 16) & 0xFFFF),
             (unsigned)((a >> 32) & 0xFFF), (unsigned)(0x8000 | ((a >> 44) & 0x3FFF)), (uint64_t)(c & 0xFFFFFFFFFFFFull));
}

static void day_text(char *b, int day, int hour)
{
    /* day 0 = 2025-01-01; months of 30 days are good enough for names */
    int y = 2025 + day / 360, m = (day % 360) / 30 + 1, d = day % 30 + 1;
    if (hour < 0) snprintf(b, 32, "%04d-%02d-%02d", y, m, d);
    else snprintf(b, 32, "%04d-%02d-%02d %02d:00:00", y, m, d, hour);
}

/* partition value of key k of spec era @era for file @f */
static void pvalue(char *b, const dfile *f, int era, int k)
{
    const pkey *pk = &PKEYS[era % 4][k];
    int y = 2025 + f->day / 360, m = (f->day % 360) / 30 + 1, d = f->day % 30 + 1;
    if (strcmp(pk->transform, "year") == 0) snprintf(b, 32, "%d", y);
    else if (strcmp(pk->transform, "month") == 0) snprintf(b, 32, "%d", m);
    else if (strcmp(pk->transform, "day") == 0) snprintf(b, 32, "%04d-%02d-%02d", y, m, d);
    else if (strcmp(pk->transform, "hour") == 0) snprintf(b, 32, "%d", f->bucket % 24);
    else if (strcmp(pk->transform, "identity") == 0) snprintf(b, 32, "%s", REGIONS[f->region % 10]);
    else {
        int n = atoi(pk->transform + 7);
        snprintf(b, 32, "%d", f->bucket % n);
    }
}

static int P, K, E;

static void file_path(char *b, size_t cap, const dfile *f)
{
    size_t n = 0;
    for (int k = 0; k < P; k++) {
        char v[32];
        pvalue(v, f, f->era, k);
        const pkey *pk = &PKEYS[f->era % 4][k];
        const char *nm = strcmp(pk->transform, "identity") == 0 ? COLS[pk->col].name : pk->transform;
        char nb[32];
        snprintf(nb, sizeof nb, "%s", nm);
        char *paren = strchr(nb, '(');
        if (paren) *paren = 0;
        n += (size_t)snprintf(b + n, cap - n, "%s=%s/", nb, v);
    }
    char u[40];
    uuid(u, (uint64_t)f->id * 7919u + 17u);
    snprintf(b + n, cap - n, "ducklake-%s.parquet", u);
}

/* min/max of column c for file f, verbatim text as DuckLake stores it */
static void stat_minmax(char *mn, char *mx, const dfile *f, int c, uint64_t h)
{
    const char *t = COLS[c % NCOLDEFS].type;
    const char *nm = COLS[c % NCOLDEFS].name;
    if (strcmp(nm, "id") == 0) {
        snprintf(mn, 64, "%" PRId64, f->row_id_start);
        snprintf(mx, 64, "%" PRId64, f->row_id_start + f->record_count - 1);
    } else if (strcmp(nm, "ts") == 0) {
        day_text(mn, f->day, (int)(h % 6));
        day_text(mx, f->day, 18 + (int)(h % 6));
    } else if (strcmp(nm, "region") == 0) {
        snprintf(mn, 64, "%s", REGIONS[f->region % 10]);
        snprintf(mx, 64, "%s", REGIONS[f->region % 10]);
    } else if (strcmp(t, "date") == 0) {
        day_text(mn, f->day > 30 ? f->day - 30 : 0, -1);
        day_text(mx, f->day, -1);
    } else if (strcmp(t, "varchar") == 0) {
        static const char *W[] = {"aaron", "beatrix", "carlos", "dmitri", "elena", "farah", "gunnar", "hiro", "ines", "jomo", "kaia", "zoe"};
        snprintf(mn, 64, "%s_%" PRIu64, W[h % 6], h % 1000);
        snprintf(mx, 64, "%s_%" PRIu64, W[6 + (h >> 8) % 6], (h >> 16) % 1000);
    } else if (strcmp(t, "boolean") == 0) {
        snprintf(mn, 64, "false");
        snprintf(mx, 64, "true");
    } else if (strcmp(t, "uuid") == 0) {
        uuid(mn, h);
        uuid(mx, h ^ 0xFFFF);
        if (strcmp(mn, mx) > 0) {
            char tmp[64];
            memcpy(tmp, mn, 64);
            memcpy(mn, mx, 64);
            memcpy(mx, tmp, 64);
        }
    } else if (strncmp(t, "decimal", 7) == 0) {
        snprintf(mn, 64, "%" PRIu64 ".%02" PRIu64, h % 100, (h >> 8) % 100);
        snprintf(mx, 64, "%" PRIu64 ".%02" PRIu64, 1000 + (h >> 16) % 90000, (h >> 24) % 100);
    } else if (strncmp(t, "float", 5) == 0) {
        snprintf(mn, 64, "%.6f", -(double)(h % 100000) / 1000.0);
        snprintf(mx, 64, "%.6f", (double)((h >> 20) % 100000) / 1000.0);
    } else {
        snprintf(mn, 64, "%" PRIu64, h % 100);
        snprintf(mx, 64, "%" PRIu64, 100 + (h >> 10) % 100000);
    }
}

static const char *col_name(int c, char *b)
{
    if ((size_t)c < NCOLDEFS) return COLS[c].name;
    snprintf(b, 32, "%s_%d", COLS[c % NCOLDEFS].name, c / (int)NCOLDEFS);
    return b;
}

/* ---- events ---- */

static void new_spec(table *t, int64_t snap, int era)
{
    t->parts = xrealloc(t->parts, (size_t)(t->nparts + 1) * sizeof *t->parts);
    t->parts[t->nparts++] = (spec){next_catalog_id++, snap, -1, era};
    t->sorts = xrealloc(t->sorts, (size_t)(t->nsorts + 1) * sizeof *t->sorts);
    t->sorts[t->nsorts++] = (spec){next_catalog_id++, snap, -1, era};
}

static int64_t add_file(table *t, int64_t snap, int day, int region, int bucket, int64_t rc)
{
    if (nfiles == fcap) {
        fcap = fcap ? fcap * 2 : 1 << 16;
        files = xrealloc(files, fcap * sizeof *files);
    }
    dfile *f = &files[nfiles];
    memset(f, 0, sizeof *f);
    f->id = next_file_id++;
    f->table_id = t->table_id;
    f->begin = snap;
    f->end = -1;
    f->row_id_start = t->next_row_id;
    f->record_count = rc;
    t->next_row_id += rc;
    t->record_count += rc;
    f->file_size = rc * 18 + rrange(500, 5000);
    t->size_bytes += f->file_size;
    f->footer = rrange(400, 4000);
    f->partition_id = t->parts[t->nparts - 1].id;
    f->era = (int32_t)t->parts[t->nparts - 1].era;
    f->day = day;
    f->region = region;
    f->bucket = bucket;
    f->delete_idx = -1;
    return (int64_t)nfiles++;
}

static void add_plain(table *t, int64_t idx)
{
    if (t->nplain == t->pcap) {
        t->pcap = t->pcap ? t->pcap * 2 : 1024;
        t->plain = xrealloc(t->plain, t->pcap * sizeof *t->plain);
    }
    t->plain[t->nplain++] = idx;
}

static void insert_event(table *t, int64_t snap, int64_t n, double del_share, int *deleted)
{
    int day = (int)(snap / 8);
    int64_t done = 0;
    while (done < n) {
        int64_t g = n - done < MERGE ? n - done : MERGE;
        int region = (int)(rnd() % 10), bucket = (int)(rnd() % 1024);
        int64_t first = -1;
        for (int64_t i = 0; i < g; i++) {
            int64_t idx = add_file(t, snap, day, region, bucket, rrange(20000, 200000));
            if (first < 0) first = idx;
            add_plain(t, idx);
        }
        if (g == MERGE) {
            if (t->ngroups == t->gcap) {
                t->gcap = t->gcap ? t->gcap * 2 : 1024;
                t->groups = xrealloc(t->groups, t->gcap * sizeof *t->groups);
            }
            t->groups[t->ngroups++] = first;
        }
        done += g;
    }
    t->inserted += n;
    /* DELETEs: delete files for a few older files of the table (UPDATE/DELETE in the same commit) */
    int64_t nd = (int64_t)(del_share * (double)n + (double)(rnd() % 1000) / 1000.0);
    *deleted = 0;
    size_t older = t->nplain > (size_t)n ? t->nplain - (size_t)n : 0;
    for (int64_t i = 0; i < nd && older > 0; i++) {
        size_t j = (size_t)(rnd() % older);
        int64_t fi = t->plain[j];
        dfile *f = &files[fi];
        if (f->end >= 0 || f->delete_idx >= 0) continue;
        if (ndels == dcap) {
            dcap = dcap ? dcap * 2 : 4096;
            dels = xrealloc(dels, dcap * sizeof *dels);
        }
        dels[ndels] = (dfdel){next_file_id++, t->table_id, snap, -1, f->id, rrange(1, f->record_count / 10 + 1), rrange(600, 4000), rrange(300, 700)};
        f->delete_idx = (int64_t)ndels++;
        /* drop it from the plain list (swap with the last older entry) */
        t->plain[j] = t->plain[older - 1];
        t->plain[older - 1] = t->plain[t->nplain - 1];
        t->nplain--;
        older--;
        *deleted = 1;
    }
}

static void compact_event(table *t, int64_t snap, int64_t quota)
{
    int64_t done = 0;
    while (done < quota && t->gpos < t->ngroups) {
        int64_t first = t->groups[t->gpos++];
        int ok = 1;
        for (int i = 0; i < MERGE; i++)
            if (files[first + i].end >= 0 || files[first + i].begin >= snap) ok = 0;
        if (!ok) continue;
        /* the inputs end (with their delete files); one output under the inputs' spec and values */
        dfile in0 = files[first];
        int64_t rc = 0;
        for (int i = 0; i < MERGE; i++) {
            dfile *f = &files[first + i];
            f->end = snap;
            rc += f->record_count;
            t->record_count -= f->record_count;
            t->size_bytes -= f->file_size;
            if (f->delete_idx >= 0) {
                dels[f->delete_idx].end = snap;
                rc -= dels[f->delete_idx].count;
            }
        }
        int64_t save = t->next_row_id;
        t->next_row_id = in0.row_id_start;
        int64_t idx = add_file(t, snap, in0.day, in0.region, in0.bucket, rc);
        t->next_row_id = save;
        files[idx].partition_id = in0.partition_id;
        files[idx].era = in0.era;
        files[idx].output = 1;
        add_plain(t, idx);
        t->outputs++;
        done++;
    }
    t->groups_done += done;
}

/* ---- main ---- */

static int64_t arg_int(const char *v, const char *name)
{
    char *e;
    long long x = strtoll(v, &e, 10);
    if (*e || x < 0) die("%s: not a non-negative integer: %s", name, v);
    return x;
}

int main(int argc, char **argv)
{
    int64_t T = 4, F = 20000, N = 0, seed = 42;
    double C = 0.3, D = 0.02;
    P = 3;
    E = 4;
    K = 8;
    if (argc < 2) die("usage: gen OUTDIR [--tables N] [--files N] [--pkeys N] [--eras N] [--stats N] [--snapshots N] [--compact F] [--deletes F] [--seed N]");
    snprintf(outdir, sizeof outdir, "%s", argv[1]);
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc) die("%s needs a value", argv[i]);
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--tables")) T = arg_int(v, k);
        else if (!strcmp(k, "--files")) F = arg_int(v, k);
        else if (!strcmp(k, "--pkeys")) P = (int)arg_int(v, k);
        else if (!strcmp(k, "--eras")) E = (int)arg_int(v, k);
        else if (!strcmp(k, "--stats")) K = (int)arg_int(v, k);
        else if (!strcmp(k, "--snapshots")) N = arg_int(v, k);
        else if (!strcmp(k, "--compact")) C = atof(v);
        else if (!strcmp(k, "--deletes")) D = atof(v);
        else if (!strcmp(k, "--seed")) seed = arg_int(v, k);
        else die("unknown option %s", k);
    }
    if (T < 1) die("--tables must be >= 1");
    if (P < 0 || P > 5) die("--pkeys must be 0..5");
    if (E < 1) die("--eras must be >= 1");
    if (K < 3) die("--stats must be >= 3 (id, ts, region carry the partition keys)");
    if (C < 0 || C > 0.75) die("--compact must be in 0..0.75 (groups of %d files merge into one)", MERGE);
    if (D < 0 || D > 0.5) die("--deletes must be in 0..0.5");
    rng_state = mix((uint64_t)seed) | 1;

    /* events per table: E-1 spec changes, compactions, inserts */
    int64_t ncomp_t = C > 0 ? 8 : 0;
    int64_t min_ev = (E - 1) + ncomp_t + 8;
    if (N == 0) N = 2 + T * (F / T / 50 > min_ev ? F / T / 50 : min_ev);
    if (N < 2 + T * min_ev) {
        int64_t n2 = 2 + T * min_ev;
        fprintf(stderr, "gen: --snapshots %" PRId64 " too few for %" PRId64 " tables and %d eras: using %" PRId64 "\n", N, T, E, n2);
        N = n2;
    }

    char p[4200];
    mkdir(outdir, 0755);
    snprintf(p, sizeof p, "%s/catalog", outdir);
    if (mkdir(p, 0755) && errno != EEXIST) die("%s: %s", p, strerror(errno));

    table *tb = calloc((size_t)T, sizeof *tb);
    int64_t total_ev = N - 2;
    next_catalog_id = 1; /* schema 0 at snapshot 0 */
    next_file_id = 0;
    schema_version = 0;

    /* snapshot rows and changes, by id */
    int64_t *snap_sv = calloc((size_t)N, sizeof(int64_t)), *snap_cat = calloc((size_t)N, sizeof(int64_t)), *snap_file = calloc((size_t)N, sizeof(int64_t));
    char **snap_changes = calloc((size_t)N, sizeof(char *));
    int64_t *sv_rows = NULL; /* schema_versions: begin, version, table */
    size_t nsv = 0;

    snap_changes[0] = strdup("created_schema:\"main\"");
    snap_sv[0] = 0;
    snap_cat[0] = next_catalog_id;
    snap_file[0] = 0;

    /* snapshot 1: every table, its columns, partition spec and sort spec */
    schema_version = 1;
    size_t chcap = (size_t)T * 32 + 16, chlen = 0;
    char *ch = malloc(chcap);
    ch[0] = 0;
    for (int64_t i = 0; i < T; i++) {
        table *t = &tb[i];
        t->table_id = next_catalog_id++;
        chlen += (size_t)snprintf(ch + chlen, chcap - chlen, "%screated_table:\"main\".\"t%" PRId64 "\"", i ? "," : "", i + 1);
    }
    snap_changes[1] = ch;
    for (int64_t i = 0; i < T; i++) {
        table *t = &tb[i];
        new_spec(t, 1, 0);
        sv_rows = xrealloc(sv_rows, (nsv + 1) * 3 * sizeof *sv_rows);
        sv_rows[nsv * 3] = 1;
        sv_rows[nsv * 3 + 1] = 1;
        sv_rows[nsv * 3 + 2] = t->table_id;
        nsv++;
        t->budget = F / T + (i < F % T ? 1 : 0);
        t->nev = (int)(total_ev / T + (i < total_ev % T ? 1 : 0));
        t->kinds = calloc((size_t)t->nev, sizeof(int));
        for (int j = 1; j < E; j++) t->kinds[(int64_t)j * t->nev / E] = 2;
        if (ncomp_t) {
            int lo = t->nev / 4;
            for (int j = 0; j < ncomp_t; j++) {
                int at = lo + (int)((int64_t)(j + 1) * (t->nev - lo - 1) / ncomp_t);
                while (at < t->nev && t->kinds[at]) at++;
                if (at < t->nev) t->kinds[at] = 1;
            }
        }
        if (t->kinds[0]) die("internal: first event of a table must be an insert");
        for (int j = 0; j < t->nev; j++) {
            if (t->kinds[j] == 0) t->ninsert++;
            else if (t->kinds[j] == 1) t->ncompact++;
        }
        t->groups_target = (int64_t)(C * (double)t->budget / MERGE + 0.5);
        t->inserted_target = t->budget - t->groups_target;
    }
    snap_sv[1] = schema_version;
    snap_cat[1] = next_catalog_id;
    snap_file[1] = 0;

    /* snapshots 2..N-1: one event each */
    int64_t *ins_done = calloc((size_t)T, sizeof(int64_t));
    int *ins_seen = calloc((size_t)T, sizeof(int)), *comp_seen = calloc((size_t)T, sizeof(int));
    for (int64_t s = 2; s < N; s++) {
        int64_t ti = (s - 2) % T, k = (s - 2) / T;
        table *t = &tb[ti];
        char buf[128];
        switch (t->kinds[k]) {
        case 0: {
            int j = ins_seen[ti]++;
            int64_t upto = t->inserted_target * (j + 1) / t->ninsert;
            int64_t n = upto - ins_done[ti];
            ins_done[ti] = upto;
            int deleted = 0;
            if (n > 0) insert_event(t, s, n, j ? D : 0, &deleted);
            snprintf(buf, sizeof buf, "inserted_into_table:%" PRId64 "%s", t->table_id, deleted ? "" : "");
            if (deleted) snprintf(buf, sizeof buf, "inserted_into_table:%" PRId64 ",deleted_from_table:%" PRId64, t->table_id, t->table_id);
            break;
        }
        case 1: {
            int j = comp_seen[ti]++;
            int64_t upto = t->groups_target * (j + 1) / t->ncompact;
            int64_t quota = upto - t->groups_done;
            compact_event(t, s, quota);
            snprintf(buf, sizeof buf, "compacted_table:%" PRId64, t->table_id);
            break;
        }
        default: {
            t->era++;
            t->parts[t->nparts - 1].end = s;
            t->sorts[t->nsorts - 1].end = s;
            new_spec(t, s, t->era);
            schema_version++;
            sv_rows = xrealloc(sv_rows, (nsv + 1) * 3 * sizeof *sv_rows);
            sv_rows[nsv * 3] = s;
            sv_rows[nsv * 3 + 1] = schema_version;
            sv_rows[nsv * 3 + 2] = t->table_id;
            nsv++;
            snprintf(buf, sizeof buf, "altered_table:%" PRId64, t->table_id);
        }
        }
        snap_changes[s] = strdup(buf);
        snap_sv[s] = schema_version;
        snap_cat[s] = next_catalog_id;
        snap_file[s] = next_file_id;
    }
    int64_t last = N - 1, old = N / 2;

    /* ---- write ---- */
    out o;
    char b1[512], b2[64], b3[64];

    out_open(&o, "ducklake_metadata");
    const char *md[4][2] = {{"version", "1.1-dev1"}, {"created_by", "moraine bench/gen"}, {"data_path", "data/"}, {"encrypted", "false"}};
    for (int i = 0; i < 4; i++) {
        jstr(o.f, "key", md[i][0], 1);
        jstr(o.f, "value", md[i][1], 0);
        jnull(o.f, "scope", 0);
        jnull(o.f, "scope_id", 0);
        jend(&o);
    }
    out_close(&o);

    out_open(&o, "ducklake_snapshot");
    out o2;
    out_open(&o2, "ducklake_snapshot_changes");
    for (int64_t s = 0; s < N; s++) {
        jint(o.f, "snapshot_id", s, 1);
        int64_t sec = s * 37;
        snprintf(b1, sizeof b1, "2026-01-%02d %02d:%02d:%02d.%06d+00", (int)(1 + (sec / 86400) % 28), (int)((sec / 3600) % 24), (int)((sec / 60) % 60),
                 (int)(sec % 60), (int)(mix((uint64_t)s) % 1000000));
        jstr(o.f, "snapshot_time", b1, 0);
        jint(o.f, "schema_version", snap_sv[s], 0);
        jint(o.f, "next_catalog_id", snap_cat[s], 0);
        jint(o.f, "next_file_id", snap_file[s], 0);
        jend(&o);
        jint(o2.f, "snapshot_id", s, 1);
        jstr(o2.f, "changes_made", snap_changes[s], 0);
        jnull(o2.f, "author", 0);
        jnull(o2.f, "commit_message", 0);
        jnull(o2.f, "commit_extra_info", 0);
        jend(&o2);
    }
    out_close(&o);
    out_close(&o2);

    out_open(&o, "ducklake_schema");
    uuid(b2, 1);
    jint(o.f, "schema_id", 0, 1);
    jstr(o.f, "schema_uuid", b2, 0);
    jint(o.f, "begin_snapshot", 0, 0);
    jnull(o.f, "end_snapshot", 0);
    jstr(o.f, "schema_name", "main", 0);
    jstr(o.f, "path", "main/", 0);
    jbool(o.f, "path_is_relative", 1, 0);
    jend(&o);
    out_close(&o);

    out_open(&o, "ducklake_table");
    for (int64_t i = 0; i < T; i++) {
        uuid(b2, 1000 + (uint64_t)i);
        jint(o.f, "table_id", tb[i].table_id, 1);
        jstr(o.f, "table_uuid", b2, 0);
        jint(o.f, "begin_snapshot", 1, 0);
        jnull(o.f, "end_snapshot", 0);
        jint(o.f, "schema_id", 0, 0);
        snprintf(b1, sizeof b1, "t%" PRId64, i + 1);
        jstr(o.f, "table_name", b1, 0);
        snprintf(b1, sizeof b1, "t%" PRId64 "/", i + 1);
        jstr(o.f, "path", b1, 0);
        jbool(o.f, "path_is_relative", 1, 0);
        jend(&o);
    }
    out_close(&o);

    out_open(&o, "ducklake_column");
    for (int64_t i = 0; i < T; i++)
        for (int c = 0; c < K; c++) {
            jint(o.f, "column_id", c + 1, 1);
            jint(o.f, "begin_snapshot", 1, 0);
            jnull(o.f, "end_snapshot", 0);
            jint(o.f, "table_id", tb[i].table_id, 0);
            jint(o.f, "column_order", c + 1, 0);
            jstr(o.f, "column_name", col_name(c, b2), 0);
            jstr(o.f, "column_type", COLS[c % NCOLDEFS].type, 0);
            jnull(o.f, "initial_default", 0);
            jstr(o.f, "default_value", "NULL", 0);
            jbool(o.f, "nulls_allowed", c != 0, 0);
            jnull(o.f, "parent_column", 0);
            jstr(o.f, "default_value_type", "literal", 0);
            jstr(o.f, "default_value_dialect", "duckdb", 0);
            jend(&o);
        }
    out_close(&o);

    out_open(&o, "ducklake_tag");
    for (int64_t i = 0; i < T; i++) {
        jint(o.f, "object_id", tb[i].table_id, 1);
        jint(o.f, "begin_snapshot", 1, 0);
        jnull(o.f, "end_snapshot", 0);
        jstr(o.f, "key", "comment", 0);
        snprintf(b1, sizeof b1, "synthetic table t%" PRId64 " of the moraine benchmark", i + 1);
        jstr(o.f, "value", b1, 0);
        jend(&o);
    }
    out_close(&o);

    out_open(&o, "ducklake_partition_info");
    out_open(&o2, "ducklake_partition_column");
    for (int64_t i = 0; i < T; i++)
        for (int j = 0; j < tb[i].nparts; j++) {
            spec *sp = &tb[i].parts[j];
            jint(o.f, "partition_id", sp->id, 1);
            jint(o.f, "table_id", tb[i].table_id, 0);
            jint(o.f, "begin_snapshot", sp->begin, 0);
            jintn(o.f, "end_snapshot", sp->end, 0);
            jend(&o);
            for (int k = 0; k < P; k++) {
                const pkey *pk = &PKEYS[sp->era % 4][k];
                jint(o2.f, "partition_id", sp->id, 1);
                jint(o2.f, "table_id", tb[i].table_id, 0);
                jint(o2.f, "partition_key_index", k, 0);
                jint(o2.f, "column_id", pk->col + 1, 0);
                jstr(o2.f, "transform", pk->transform, 0);
                jend(&o2);
            }
        }
    out_close(&o);
    out_close(&o2);

    out_open(&o, "ducklake_sort_info");
    out_open(&o2, "ducklake_sort_expression");
    for (int64_t i = 0; i < T; i++)
        for (int j = 0; j < tb[i].nsorts; j++) {
            spec *sp = &tb[i].sorts[j];
            jint(o.f, "sort_id", sp->id, 1);
            jint(o.f, "table_id", tb[i].table_id, 0);
            jint(o.f, "begin_snapshot", sp->begin, 0);
            jintn(o.f, "end_snapshot", sp->end, 0);
            jend(&o);
            for (int k = 0; k < 2; k++) {
                const skey *sk = &SKEYS[sp->era % 3][k];
                jint(o2.f, "sort_id", sp->id, 1);
                jint(o2.f, "table_id", tb[i].table_id, 0);
                jint(o2.f, "sort_key_index", k, 0);
                jstr(o2.f, "expression", sk->expr, 0);
                jstr(o2.f, "dialect", "duckdb", 0);
                jstr(o2.f, "sort_direction", sk->dir, 0);
                jstr(o2.f, "null_order", sk->nulls, 0);
                jend(&o2);
            }
        }
    out_close(&o);
    out_close(&o2);

    out_open(&o, "ducklake_data_file");
    out_open(&o2, "ducklake_file_column_stats");
    out o3;
    out_open(&o3, "ducklake_file_partition_value");
    uint64_t live = 0, ended = 0, live_by_table0 = 0, old_by_table0 = 0;
    for (size_t i = 0; i < nfiles; i++) {
        dfile *f = &files[i];
        if (f->end < 0) live++;
        else ended++;
        if (f->table_id == tb[0].table_id) {
            if (f->end < 0) live_by_table0++;
            if (f->begin <= old && (f->end < 0 || old < f->end)) old_by_table0++;
        }
        jint(o.f, "data_file_id", f->id, 1);
        jint(o.f, "table_id", f->table_id, 0);
        jint(o.f, "begin_snapshot", f->begin, 0);
        jintn(o.f, "end_snapshot", f->end, 0);
        jnull(o.f, "file_order", 0);
        file_path(b1, sizeof b1, f);
        jstr(o.f, "path", b1, 0);
        jbool(o.f, "path_is_relative", 1, 0);
        jstr(o.f, "file_format", "parquet", 0);
        jint(o.f, "record_count", f->record_count, 0);
        jint(o.f, "file_size_bytes", f->file_size, 0);
        jint(o.f, "footer_size", f->footer, 0);
        jint(o.f, "row_id_start", f->row_id_start, 0);
        if (P > 0) jint(o.f, "partition_id", f->partition_id, 0);
        else jint(o.f, "partition_id", f->partition_id, 0);
        jnull(o.f, "encryption_key", 0);
        jnull(o.f, "mapping_id", 0);
        jnull(o.f, "partial_max", 0);
        jint(o.f, "row_group_count", 1 + f->record_count / 122880, 0);
        jend(&o);
        for (int c = 0; c < K; c++) {
            uint64_t h = mix((uint64_t)f->id * 131u + (uint64_t)c);
            stat_minmax(b2, b3, f, c, h);
            jint(o2.f, "data_file_id", f->id, 1);
            jint(o2.f, "table_id", f->table_id, 0);
            jint(o2.f, "column_id", c + 1, 0);
            jint(o2.f, "column_size_bytes", f->file_size / K + (int64_t)(h % 97), 0);
            jint(o2.f, "value_count", f->record_count, 0);
            jint(o2.f, "null_count", c == 0 ? 0 : (int64_t)(h % 50), 0);
            jstr(o2.f, "min_value", b2, 0);
            jstr(o2.f, "max_value", b3, 0);
            if (strncmp(COLS[c % NCOLDEFS].type, "float", 5) == 0) jbool(o2.f, "contains_nan", 0, 0);
            else jnull(o2.f, "contains_nan", 0);
            jnull(o2.f, "extra_stats", 0);
            jend(&o2);
        }
        for (int k = 0; k < P; k++) {
            pvalue(b2, f, f->era, k);
            jint(o3.f, "data_file_id", f->id, 1);
            jint(o3.f, "table_id", f->table_id, 0);
            jint(o3.f, "partition_key_index", k, 0);
            jstr(o3.f, "partition_value", b2, 0);
            jend(&o3);
        }
    }
    out_close(&o);
    out_close(&o2);
    out_close(&o3);
    uint64_t stats_rows = o2.rows, pv_rows = o3.rows;

    out_open(&o, "ducklake_delete_file");
    for (size_t i = 0; i < ndels; i++) {
        dfdel *d = &dels[i];
        jint(o.f, "delete_file_id", d->id, 1);
        jint(o.f, "table_id", d->table_id, 0);
        jint(o.f, "begin_snapshot", d->begin, 0);
        jintn(o.f, "end_snapshot", d->end, 0);
        jint(o.f, "data_file_id", d->data_file_id, 0);
        uuid(b2, (uint64_t)d->id * 31u + 5u);
        snprintf(b1, sizeof b1, "ducklake-%s-delete.parquet", b2);
        jstr(o.f, "path", b1, 0);
        jbool(o.f, "path_is_relative", 1, 0);
        jstr(o.f, "format", "parquet", 0);
        jint(o.f, "delete_count", d->count, 0);
        jint(o.f, "file_size_bytes", d->size, 0);
        jint(o.f, "footer_size", d->footer, 0);
        jnull(o.f, "encryption_key", 0);
        jnull(o.f, "partial_max", 0);
        jint(o.f, "row_group_count", 1, 0);
        jend(&o);
    }
    out_close(&o);

    out_open(&o, "ducklake_schema_versions");
    for (size_t i = 0; i < nsv; i++) {
        jint(o.f, "begin_snapshot", sv_rows[i * 3], 1);
        jint(o.f, "schema_version", sv_rows[i * 3 + 1], 0);
        jint(o.f, "table_id", sv_rows[i * 3 + 2], 0);
        jend(&o);
    }
    out_close(&o);

    out_open(&o, "ducklake_table_stats");
    for (int64_t i = 0; i < T; i++) {
        jint(o.f, "table_id", tb[i].table_id, 1);
        jint(o.f, "record_count", tb[i].record_count, 0);
        jint(o.f, "next_row_id", tb[i].next_row_id, 0);
        jint(o.f, "file_size_bytes", tb[i].size_bytes, 0);
        jend(&o);
    }
    out_close(&o);

    out_open(&o, "ducklake_table_column_stats");
    for (int64_t i = 0; i < T; i++)
        for (int c = 0; c < K; c++) {
            dfile lo = {0}, hi = {0};
            lo.day = 0;
            lo.row_id_start = 0;
            lo.record_count = 1;
            hi.day = (int)(last / 8);
            hi.row_id_start = tb[i].next_row_id - 1;
            hi.record_count = 1;
            hi.region = 9;
            uint64_t h = mix((uint64_t)i * 977u + (uint64_t)c);
            stat_minmax(b2, b1, &lo, c, h);
            stat_minmax(b1, b3, &hi, c, h);
            jint(o.f, "table_id", tb[i].table_id, 1);
            jint(o.f, "column_id", c + 1, 0);
            jbool(o.f, "contains_null", c != 0, 0);
            if (strncmp(COLS[c % NCOLDEFS].type, "float", 5) == 0) jbool(o.f, "contains_nan", 0, 0);
            else jnull(o.f, "contains_nan", 0);
            jstr(o.f, "min_value", b2, 0);
            jstr(o.f, "max_value", b3, 0);
            jnull(o.f, "extra_stats", 0);
            jend(&o);
        }
    out_close(&o);

    const char *empty[] = {"ducklake_column_mapping", "ducklake_column_tag", "ducklake_file_variant_stats", "ducklake_files_scheduled_for_deletion",
                           "ducklake_inlined_data_tables", "ducklake_macro", "ducklake_macro_impl", "ducklake_macro_parameters",
                           "ducklake_name_mapping", "ducklake_view", "ducklake_view_column_tag"};
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        out_open(&o, empty[i]);
        out_close(&o);
    }

    /* rows of every table */
    uint64_t total_rows = all_rows;

    /* the live spec of the table the workloads read, for the commit workloads */
    table *t0 = &tb[0];
    int era0 = (int)t0->parts[t0->nparts - 1].era;
    snprintf(p, sizeof p, "%s/meta.json", outdir);
    FILE *m = fopen(p, "w");
    if (!m) die("%s: %s", p, strerror(errno));
    fprintf(m, "{\n  \"tables\": %" PRId64 ",\n  \"files\": %zu,\n  \"live_files\": %" PRIu64 ",\n  \"ended_files\": %" PRIu64 ",\n", T, nfiles, live, ended);
    fprintf(m, "  \"delete_files\": %zu,\n  \"pkeys\": %d,\n  \"eras\": %d,\n  \"stats\": %d,\n  \"compact\": %g,\n  \"deletes\": %g,\n  \"seed\": %" PRId64 ",\n", ndels,
            P, E, K, C, D, seed);
    fprintf(m, "  \"snapshots\": %" PRId64 ",\n  \"last_snapshot\": %" PRId64 ",\n  \"old_snapshot\": %" PRId64 ",\n", N, last, old);
    fprintf(m, "  \"bench_table_id\": %" PRId64 ",\n  \"bench_table\": \"t1\",\n  \"bench_table_live_files\": %" PRIu64 ",\n  \"bench_table_old_files\": %" PRIu64 ",\n",
            t0->table_id, live_by_table0, old_by_table0);
    fprintf(m, "  \"table_ids\": [");
    for (int64_t i = 0; i < T; i++) fprintf(m, "%s%" PRId64, i ? ", " : "", tb[i].table_id);
    fprintf(m, "],\n  \"columns\": [");
    for (int c = 0; c < K; c++) fprintf(m, "%s\"%s\"", c ? ", " : "", col_name(c, b2));
    fprintf(m, "],\n  \"column_types\": [");
    for (int c = 0; c < K; c++) fprintf(m, "%s\"%s\"", c ? ", " : "", COLS[c % NCOLDEFS].type);
    fprintf(m, "],\n  \"bench_partition_keys\": [");
    for (int k = 0; k < P; k++) fprintf(m, "%s{\"column\": \"%s\", \"transform\": \"%s\"}", k ? ", " : "", COLS[PKEYS[era0 % 4][k].col].name, PKEYS[era0 % 4][k].transform);
    fprintf(m, "],\n  \"stats_rows\": %" PRIu64 ",\n  \"partition_value_rows\": %" PRIu64 ",\n  \"total_rows\": %" PRIu64 "\n}\n", stats_rows, pv_rows, total_rows);
    fclose(m);
    fprintf(stderr, "gen: %" PRId64 " tables, %zu files (%" PRIu64 " live, %" PRIu64 " ended by compaction), %zu delete files, %" PRId64 " snapshots, %" PRIu64 " rows -> %s\n", T,
            nfiles, live, ended, ndels, N, total_rows, outdir);
    return 0;
}
