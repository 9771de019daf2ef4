/*
 * test_project — moraine_scan_project / moraine_cursor_child against the
 * row-at-a-time read (moraine_scan_open, moraine_row_children), which is the
 * oracle: for every fixture catalog of tests/fixtures/ducklake and a
 * generated one (verb commits with NULLs, empty strings, multibyte text, integers
 * past 2^53, files ended so history is read), at every snapshot, for every
 * table scope and for all tables, random projections (a random subset of the
 * columns in a random order; partition values and column stats with a random
 * subset of their columns, the parent-key columns format 5 does not store
 * among them; stats filtered on random column_ids, and either filtered on
 * their parent-key table_id or data_file_id) must give
 * exactly the values the full read gives for the same names, in the same row
 * and child order, each child row with the same ord (moraine_cursor_child's
 * row.ord, moraine_cursor_child_rows' ords, the rows filtered out between
 * them included in the differences they are stored as). Then the full projection of every relation (what ATTACH
 * reads) and the errors.
 */
#include "check.h"
#include "moraine.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

static void put(sbuf *b, const void *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_val(sbuf *b, const moraine_value *v)
{
    char t[64];
    int n = snprintf(t, sizeof t, "|%d:", (int)v->type);
    put(b, t, (size_t)n);
    switch (v->type) {
    case MORAINE_INT:
    case MORAINE_BOOL: n = snprintf(t, sizeof t, "%" PRId64, v->i); put(b, t, (size_t)n); break;
    case MORAINE_REAL: put(b, &v->d, sizeof v->d); break;
    case MORAINE_STR:
    case MORAINE_JSON:
        n = snprintf(t, sizeof t, "%zu:", v->len);
        put(b, t, (size_t)n);
        put(b, v->s, v->len);
        break;
    default: break;
    }
}

/* the projection of one child relation as names and a match set */
typedef struct {
    const char *rel;
    const char *cols[32];
    size_t ncols;
    int all_cols;
    const char *match_col;
    int64_t match[8];
    size_t nmatch;
} kid_t;

static int matches(const kid_t *k, const moraine_row *row)
{
    if (!k->match_col) return 1;
    int c = moraine_column_index(row->rel, k->match_col);
    if (c < 0 || row->vals[c].type != MORAINE_INT) return 0;
    for (size_t i = 0; i < k->nmatch; i++)
        if (k->match[i] == row->vals[c].i) return 1;
    return 0;
}

/* the oracle: the full read, keeping the named columns */
static int oracle(moraine_read *rd, const char *rel, int64_t scope, int64_t s, const char *const *cols, size_t ncols, const kid_t *kids,
                  size_t nkids, int grouped, sbuf *out)
{
    moraine_cursor *c;
    int rc = moraine_scan_open(rd, rel, scope, s, &c);
    if (rc) return rc;
    moraine_row row, k;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        put(out, "\nrow", 4);
        for (size_t i = 0; i < (cols ? ncols : row.ncols); i++) put_val(out, &row.vals[cols ? moraine_column_index(row.rel, cols[i]) : (int)i]);
        /* in stored order, or (@grouped) each child projection's rows in turn */
        for (size_t g = 0; g < (grouped ? nkids : 1); g++) {
            moraine_children ch;
            moraine_row_children(rd, &row, &ch);
            int kr;
            while ((kr = moraine_children_next(&ch, &k)) == 1) {
                for (size_t j = grouped ? g : 0; j < (grouped ? g + 1 : nkids); j++) {
                    if (strcmp(kids[j].rel, k.rel->name) || !matches(&kids[j], &k)) continue;
                    char t[64];
                    put(out, t, (size_t)snprintf(t, sizeof t, "\n kid %zu ord %" PRId64, j, k.ord));
                    for (size_t i = 0; i < (kids[j].all_cols ? k.ncols : kids[j].ncols); i++)
                        put_val(out, &k.vals[kids[j].all_cols ? (int)i : moraine_column_index(k.rel, kids[j].cols[i])]);
                }
            }
            moraine_children_free(&ch);
            if (kr < 0) return kr;
        }
    }
    moraine_cursor_close(c);
    return rc;
}

static moraine_db *cur_db; /* the catalog compare() reads (the width of a child projection of every column) */

/* the projected read; @grouped: the child rows by moraine_cursor_child_rows,
 * a child projection a call (in a random order of calls, written in
 * projection order), then moraine_cursor_child's walk must still give as
 * many rows (the two do not disturb each other) */
static int projected(moraine_read *rd, const char *rel, int64_t scope, int64_t s, const char *const *cols, size_t ncols, const kid_t *kids,
                     size_t nkids, int grouped, sbuf *out)
{
    moraine_child_projection kp[8];
    for (size_t j = 0; j < nkids; j++) {
        kp[j] = (moraine_child_projection){kids[j].rel, kids[j].all_cols ? NULL : kids[j].cols, kids[j].all_cols ? 0 : kids[j].ncols,
                                           kids[j].match_col, kids[j].match, kids[j].nmatch};
    }
    moraine_projection p = {cols, cols ? ncols : 0, kp, nkids};
    moraine_cursor *c;
    int rc = moraine_scan_project(rd, rel, scope, s, &p, &c);
    if (rc) return rc;
    moraine_row row, k;
    while ((rc = moraine_cursor_next(c, &row)) == 1) {
        put(out, "\nrow", 4);
        for (size_t i = 0; i < row.ncols; i++) put_val(out, &row.vals[i]);
        size_t which;
        int kr;
        if (grouped) {
            sbuf part[8] = {{0}};
            size_t total = 0, order[8];
            for (size_t j = 0; j < nkids; j++) order[j] = j;
            for (size_t j = nkids; j > 1; j--) {
                size_t x = check_below(j), t = order[j - 1];
                order[j - 1] = order[x];
                order[x] = t;
            }
            for (size_t o = 0; o < nkids; o++) {
                size_t j = order[o];
                const moraine_value *kv;
                const int64_t *ords;
                size_t nr, w = kp[j].columns ? kp[j].ncolumns : 0;
                if (!kp[j].columns) {
                    moraine_relation_info ki;
                    if ((kr = moraine_relation(cur_db, kids[j].rel, &ki))) return kr;
                    w = ki.ncols;
                }
                if ((kr = moraine_cursor_child_rows(c, j, &kv, &ords, &nr)) < 0) return kr;
                total += nr;
                for (size_t r = 0; r < nr; r++) {
                    char t[64];
                    put(&part[j], t, (size_t)snprintf(t, sizeof t, "\n kid %zu ord %" PRId64, j, ords[r]));
                    for (size_t i = 0; i < w; i++) put_val(&part[j], &kv[r * w + i]);
                }
            }
            for (size_t j = 0; j < nkids; j++) {
                if (part[j].len) put(out, part[j].p, part[j].len);
                free(part[j].p);
            }
            size_t walked = 0;
            while ((kr = moraine_cursor_child(c, &which, &k)) == 1) walked++;
            if (kr < 0) return kr;
            CHECK(walked == total, "%s at %" PRId64 ": moraine_cursor_child walked %zu child rows after moraine_cursor_child_rows gave %zu", rel,
                  s, walked, total);
            continue;
        }
        while ((kr = moraine_cursor_child(c, &which, &k)) == 1) {
            char t[64];
            put(out, t, (size_t)snprintf(t, sizeof t, "\n kid %zu ord %" PRId64, which, k.ord));
            for (size_t i = 0; i < k.ncols; i++) put_val(out, &k.vals[i]);
        }
        if (kr < 0) return kr;
    }
    moraine_cursor_close(c);
    return rc;
}

/* a random subset of @rel's columns in a random order */
static size_t pick_cols(const moraine_relation_info *ri, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < ri->ncols && n < max; i++)
        if (check_below(2)) out[n++] = ri->colnames[i];
    for (size_t i = n; i > 1; i--) {
        size_t j = check_below(i);
        const char *t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
    return n;
}

static unsigned long compared;

static void compare(moraine_read *rd, const char *rel, int64_t scope, int64_t s, const char *const *cols, size_t ncols, const kid_t *kids,
                    size_t nkids)
{
    for (int grouped = 0; grouped < 2; grouped++) {
        sbuf a = {0}, b = {0};
        int ra = oracle(rd, rel, scope, s, cols, ncols, kids, nkids, grouped, &a);
        int rb = projected(rd, rel, scope, s, cols, ncols, kids, nkids, grouped, &b);
        put(&a, "", 0);
        put(&b, "", 0);
        int same = ra == rb && a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
        CHECK(same, "%s scope %" PRId64 " at %" PRId64 ": projected read%s differs from the full read (rc %d/%d, %zu/%zu bytes): %s", rel, scope,
              s, grouped ? " (moraine_cursor_child_rows)" : "", ra, rb, a.len, b.len, moraine_errmsg());
        compared++;
        free(a.p);
        free(b.p);
    }
}

/* random projections of the data files of every table (and of all) at every snapshot */
static void files_everywhere(moraine_db *db, int rounds)
{
    cur_db = db;
    moraine_relation_info df, pv, st;
    if (moraine_relation(db, "ducklake_data_file", &df) || df.ncols == 0) return;
    int have_pv = moraine_relation(db, "ducklake_file_partition_value", &pv) == 0 && pv.ncols > 0;
    int have_st = moraine_relation(db, "ducklake_file_column_stats", &st) == 0 && st.ncols > 0;
    int64_t last = 0;
    if (moraine_last_snapshot(db, &last) != 1) return;
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    for (int64_t s = 0; s <= last + 1; s++) {
        for (int64_t scope = -1; scope <= 12; scope++) {
            for (int r = 0; r < rounds; r++) {
                const char *cols[64];
                size_t nc = pick_cols(&df, cols, 64);
                kid_t kids[2];
                size_t nk = 0;
                if (have_pv && check_below(3)) {
                    kid_t *k = &kids[nk++];
                    memset(k, 0, sizeof *k);
                    k->rel = "ducklake_file_partition_value";
                    k->all_cols = check_below(3) == 0;
                    k->ncols = pick_cols(&pv, k->cols, 32);
                    if (check_below(4) == 0) { /* filtered on a parent-key column, which a row does not store (format 5) */
                        k->match_col = check_below(2) ? "table_id" : "data_file_id";
                        k->nmatch = check_below(4);
                        for (size_t i = 0; i < k->nmatch; i++) k->match[i] = (int64_t)check_below(12);
                    }
                }
                if (have_st && check_below(3)) {
                    kid_t *k = &kids[nk++];
                    memset(k, 0, sizeof *k);
                    k->rel = "ducklake_file_column_stats";
                    k->all_cols = check_below(4) == 0;
                    k->ncols = pick_cols(&st, k->cols, 32);
                    if (check_below(3)) {
                        k->match_col = check_below(5) ? "column_id" : check_below(2) ? "table_id" : "data_file_id";
                        k->nmatch = check_below(4);
                        for (size_t i = 0; i < k->nmatch; i++) k->match[i] = (int64_t)check_below(12);
                    }
                }
                if (nk == 2 && check_below(2)) { /* children named in either order */
                    kid_t t = kids[0];
                    kids[0] = kids[1];
                    kids[1] = t;
                }
                compare(rd, "ducklake_data_file", scope < 0 ? MORAINE_ANY_SCOPE : scope, s, check_below(5) ? cols : NULL, nc, kids, nk);
            }
        }
    }
    moraine_read_end(rd);
}

/* every relation that is not a child, every column, every child relation: what ATTACH reads */
static void whole_catalog(moraine_db *db)
{
    cur_db = db;
    int64_t last = 0;
    if (moraine_last_snapshot(db, &last) != 1) return;
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_relation_info ri, ki;
    for (size_t i = 0; moraine_relation_at(db, i, &ri) == 1; i++) {
        if (ri.placement == MORAINE_PLACE_CHILD || ri.ncols == 0) continue;
        kid_t kids[8];
        size_t nk = 0;
        for (size_t j = 0; moraine_relation_at(db, j, &ki) == 1 && nk < 8; j++) {
            if (ki.placement != MORAINE_PLACE_CHILD || !ki.parent || strcmp(ki.parent, ri.name) || ki.ncols == 0) continue;
            memset(&kids[nk], 0, sizeof kids[nk]);
            kids[nk].rel = ki.name;
            kids[nk].all_cols = 1;
            nk++;
        }
        int64_t snaps[] = {0, last / 2, last, MORAINE_ALL_VERSIONS};
        for (size_t k = 0; k < 4; k++) compare(rd, ri.name, MORAINE_ANY_SCOPE, snaps[k], NULL, 0, kids, nk);
    }
    moraine_read_end(rd);
}

static void errors(moraine_db *db)
{
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_cursor *c;
    const char *bad[] = {"no_such_column"};
    moraine_projection p = {bad, 1, NULL, 0};
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_ENOTFOUND);
    CHECK(strstr(moraine_errmsg(), "no_such_column") != NULL, "message names the column: %s", moraine_errmsg());
    const char *twice[] = {"path", "path"};
    p = (moraine_projection){twice, 2, NULL, 0};
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_EINVAL);
    moraine_child_projection k = {"ducklake_partition_column", NULL, 0, NULL, NULL, 0};
    p = (moraine_projection){NULL, 0, &k, 1};
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_ENOTFOUND);
    k = (moraine_child_projection){"ducklake_file_column_stats", NULL, 0, "nope", NULL, 0};
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_ENOTFOUND);
    moraine_child_projection k2[2] = {{"ducklake_file_column_stats", NULL, 0, NULL, NULL, 0}, {"ducklake_file_column_stats", NULL, 0, NULL, NULL, 0}};
    p = (moraine_projection){NULL, 0, k2, 2};
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_EINVAL);
    p = (moraine_projection){NULL, 0, NULL, 0};
    CHECK_RC(moraine_scan_project(rd, "ducklake_file_column_stats", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_EINVAL);
    CHECK_RC(moraine_scan_project(rd, "no_such_table", MORAINE_ANY_SCOPE, 1, &p, &c), MORAINE_ENOTFOUND);
    CHECK_RC(moraine_scan_project(rd, "ducklake_snapshot", 1, 1, &p, &c), MORAINE_EINVAL);
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, NULL, &c), MORAINE_EINVAL);
    /* moraine_cursor_child: only on a projected cursor, after a row */
    moraine_row row;
    size_t which;
    CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &c), 0);
    CHECK_RC(moraine_cursor_child(c, &which, &row), MORAINE_EINVAL);
    moraine_cursor_close(c);
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &p, &c), 0);
    CHECK_RC(moraine_cursor_child(c, &which, &row), MORAINE_EINVAL);
    moraine_cursor_close(c);
    /* moraine_cursor_child_rows: the same, and a child projection that exists */
    const moraine_value *kv;
    size_t nr = 99;
    CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, &nr), MORAINE_EINVAL);
    CHECK(strstr(moraine_errmsg(), "moraine_scan_project") != NULL, "names what is wrong: %s", moraine_errmsg());
    moraine_cursor_close(c);
    k = (moraine_child_projection){"ducklake_file_partition_value", NULL, 0, NULL, NULL, 0};
    p = (moraine_projection){NULL, 0, &k, 1};
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &p, &c), 0);
    CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, &nr), MORAINE_EINVAL);
    CHECK(strstr(moraine_errmsg(), "no row returned yet") != NULL, "names what is wrong: %s", moraine_errmsg());
    CHECK_RC(moraine_cursor_child_rows(NULL, 0, &kv, NULL, &nr), MORAINE_EINVAL);
    int got = moraine_cursor_next(c, &row);
    CHECK(got == 1, "the catalog has a data file (%d)", got);
    if (got == 1) {
        CHECK_RC(moraine_cursor_child_rows(c, 0, NULL, NULL, &nr), MORAINE_EINVAL);
        CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, NULL), MORAINE_EINVAL);
        CHECK_RC(moraine_cursor_child_rows(c, 1, &kv, NULL, &nr), MORAINE_EINVAL);
        CHECK(strstr(moraine_errmsg(), "child projection 1 of 1") != NULL, "names what is wrong: %s", moraine_errmsg());
        CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, &nr), 0);
    }
    moraine_cursor_close(c);
    moraine_read_end(rd);
}

static moraine_db *open_new(const char *name, char *tmpl, size_t n)
{
    char *dir = check_mkdtemp(tmpl, n, name);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(dir, &o, &db), 0);
    return db;
}

/* a catalog written by verbs: two partitioned tables, files with stats of
 * edge values, some ended (history) and a repartition in between */
static void generated(char *tmpl, size_t n)
{
    moraine_db *db = open_new("moraine-project-gen", tmpl, n);
    CHECK_RC(moraine_init(db, "data/"), 0);
    moraine_column_def cols[] = {{.name = "a", .type = "int64"}, {.name = "b", .type = "varchar"}, {.name = "c", .type = "timestamp"}};
    moraine_tx *tx;
    CHECK_RC(moraine_tx_begin(db, &tx), 0);
    CHECK_RC(moraine_tx_create_table(tx, NULL, "t", cols, 3, NULL), 0);
    CHECK_RC(moraine_tx_create_table(tx, NULL, "u", cols, 3, NULL), 0);
    moraine_partition_key pk[] = {{"a", "identity"}, {"c", "day"}};
    CHECK_RC(moraine_tx_set_partitioning(tx, NULL, "t", pk, 2), 0);
    CHECK_RC(moraine_tx_set_partitioning(tx, NULL, "u", pk, 1), 0);
    CHECK_RC(moraine_tx_commit(tx, NULL), 0);
    static const char *strs[] = {"", "x", "a\0b", "9223372036854775807", "-9223372036854775808", "\xc3\xa9t\xc3\xa9"};
    /* min/max stats must be values of their column's type (int64, varchar, timestamp; engine/statval.c) */
    static const char *typed[3][6] = {{"9223372036854775807", "-9223372036854775808", "0", "-5", "10", "007"},
                                      {"", "x", "a\0b", "9223372036854775807", "-9223372036854775808", "\xc3\xa9t\xc3\xa9"},
                                      {"2024-01-01 00:00:00", "1969-12-31 23:59:59.5", "0044-03-15 10:00:00 (BC)", "infinity", "-infinity",
                                       "2262-04-11 23:47:16.854775"}};
    for (int round = 0; round < 12; round++) {
        CHECK_RC(moraine_tx_begin(db, &tx), 0);
        const char *tab = round % 2 ? "u" : "t";
        if (round == 6) {
            moraine_partition_key pk2[] = {{"b", "identity"}};
            CHECK_RC(moraine_tx_set_partitioning(tx, NULL, "t", pk2, 1), 0);
        }
        moraine_data_file f[4];
        moraine_column_stats st[4][3];
        const char *pv[4][2];
        char paths[4][64];
        for (int i = 0; i < 4; i++) {
            memset(&f[i], 0, sizeof f[i]);
            snprintf(paths[i], sizeof paths[i], "f-%d-%d.parquet", round, i);
            f[i].path = paths[i];
            /* large, but a table's sums of them must fit: engine/verbs_files.c adds
             * record_count to next_row_id and the table's record_count unchecked */
            f[i].record_count = i == 0 ? (INT64_C(1) << 40) + 1 : i;
            f[i].file_size_bytes = 100 + i;
            f[i].footer_size = i == 1 ? INT64_MIN : 7;
            size_t npv = round % 2 ? 1 : (round >= 6 ? 1 : 2);
            /* partition values of the key's transform and column type (engine/verbs_spec.c): identity of
             * a (int64) before round 6 on t and always on u, identity of b (varchar, any bytes) from
             * round 6 on t, day of c an integer */
            static const char *days[] = {"1", "31", "0", "-7", "9223372036854775807", "15"};
            for (size_t k = 0; k < npv; k++) {
                const char *const *set = k == 1 ? days : (!(round % 2) && round >= 6) ? strs : typed[0];
                pv[i][k] = check_below(4) ? set[check_below(6)] : NULL;
            }
            f[i].partition_values = pv[i];
            f[i].npartition_values = npv;
            size_t ns = check_below(4);
            for (size_t k = 0; k < ns; k++) {
                st[i][k] = (moraine_column_stats){cols[k].name, (int64_t)check_below(1000), (INT64_C(1) << 53) + 1, k ? INT64_MIN : 0,
                                                  check_below(3) ? typed[k][check_below(6)] : NULL, check_below(3) ? typed[k][check_below(6)] : NULL,
                                                  (int)check_below(3) - 1};
            }
            f[i].stats = st[i];
            f[i].nstats = ns;
        }
        int64_t first;
        CHECK_RC(moraine_tx_add_data_files(tx, NULL, tab, f, 4, &first), 0);
        CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        if (round % 3 == 2) { /* end one file of the earlier ones */
            CHECK_RC(moraine_tx_begin(db, &tx), 0);
            CHECK_RC(moraine_tx_delete_files(tx, NULL, tab, &first, 1), 0);
            CHECK_RC(moraine_tx_commit(tx, NULL), 0);
        }
    }
    files_everywhere(db, 6);
    whole_catalog(db);
    errors(db);
    moraine_close(db);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(void)
{
    check_seed("test_project");
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures/ducklake";
    static const char *names[] = {"s1_evolution", "s2_multi_table", "s3_edge_values", "s4_encrypted"};
    for (size_t i = 0; i < 4; i++) {
        char src[4096], tmpl[1024];
        snprintf(src, sizeof src, "%s/%s/catalog", fx, names[i]);
        moraine_db *db = open_new("moraine-project", tmpl, sizeof tmpl);
        CHECK_RC(moraine_import_ndjson(db, src, NULL, NULL), 0);
        files_everywhere(db, 3);
        whole_catalog(db);
        moraine_close(db);
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
        CHECK(system(cmd) == 0, "cleanup");
    }
    char tmpl[1024];
    generated(tmpl, sizeof tmpl);
    CHECK(compared > 1000, "compared %lu reads", compared);
    check_note("%lu projected reads compared with the full read", compared);
    return check_done();
}
