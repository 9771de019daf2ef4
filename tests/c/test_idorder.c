/*
 * test_idorder.c — engine/verbs_idorder.c against the C++ library it
 * simulates: random sequences of insertions (new names and existing ones in
 * another case) and erasures on a case-insensitive map, run through the
 * simulation and through build/tests/idorder_oracle (a real
 * std::unordered_map with DuckDB's CIHash and CIEquals, built with the system
 * C++ compiler), must list the same names in the same order after every
 * operation. The sequences grow past 13, 29 and 59 names (the rehashes) and
 * use non-ASCII bytes (CIHash reads them as signed chars). Also: CIHash of
 * known names, and the order of the two corpus transactions the simulation
 * was built from.
 */
#include "check.h"
#include "verbs_internal.h"

static void hex(const char *s, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        *out++ = d[c >> 4];
        *out++ = d[c & 15];
    }
    *out = 0;
}

/* Appends the map's order, as the oracle prints it, to @out. */
static void order_line(const mv_hmap *m, char *out, size_t n)
{
    size_t len = strlen(out);
    for (size_t i = 0; i < m->len && len + 64 < n; i++) {
        char h[64];
        hex(m->n[i].name, h);
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? " " : "", h);
    }
    if (len + 1 < n) {
        out[len++] = '\n';
        out[len] = 0;
    }
}

static const char *order_of(const char *const *names, size_t n)
{
    static char buf[256];
    mv_hmap m = {0};
    for (size_t i = 0; i < n; i++) mv_hmap_put(&m, names[i], (int64_t)i, NULL);
    buf[0] = 0;
    for (size_t i = 0; i < m.len; i++) {
        strcat(buf, i ? "," : "");
        strcat(buf, m.n[i].name);
    }
    mv_hmap_free(&m);
    return buf;
}

int main(int argc, char **argv)
{
    (void)argc;
    /* CIHash: case-insensitive, 32 bits */
    CHECK_INT(mv_cihash("main"), mv_cihash("MAIN"));
    CHECK(mv_cihash("main") != mv_cihash("mainx"), "different names hash apart");
    CHECK(mv_cihash("\xc3\xaf") <= UINT32_MAX, "32-bit hash");

    /* the corpus transactions: seed_0014 step 4 (one schema's entries) and
     * seed_0010 step 21 (three schemas) */
    const char *s14[] = {"EventTime", "city", "REGION"};
    CHECK(strcmp(order_of(s14, 3), "REGION,city,EventTime") == 0, "seed_0014 step 4: %s", order_of(s14, 3));
    const char *s10[] = {"stage", "my schema", "main"};
    CHECK(strcmp(order_of(s10, 3), "my schema,main,stage") == 0, "seed_0010 step 21: %s", order_of(s10, 3));

    /* against the C++ library */
    char oracle[4096], dir[4096], ops[4200], got[4200], cmd[12800];
    const char *slash = strrchr(argv[0], '/');
    snprintf(oracle, sizeof oracle, "%.*s/idorder_oracle", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
    CHECK(access(oracle, X_OK) == 0, "the oracle %s is missing (build it with make)", oracle);
    if (access(oracle, X_OK) != 0) return check_done();
    if (!check_mkdtemp(dir, sizeof dir, "moraine-idorder")) return check_done();
    snprintf(ops, sizeof ops, "%s/ops", dir);
    snprintf(got, sizeof got, "%s/out", dir);
    snprintf(cmd, sizeof cmd, "'%s' < '%s' > '%s'", oracle, ops, got);

    check_seed("idorder");
    static const char *const base[] = {"t", "region", "city", "EventTime", "main", "stage", "my schema", "na\xc3\xafve col",
                                       "\xc3\x89t\xc3\xa9", "UserId7", "day4", "amount", "qty", "note", "x", "v1"};
    enum { SEQS = 300, POOL = 90 };
    char pool[POOL][48];
    for (int i = 0; i < POOL; i++)
        snprintf(pool[i], sizeof pool[i], "%s%d", base[i % (int)(sizeof base / sizeof base[0])], i / 16);
    unsigned long mismatches = 0;
    static char expect[1 << 20], actual[1 << 20];
    for (int s = 0; s < SEQS; s++) {
        FILE *f = fopen(ops, "w");
        if (!f) break;
        mv_hmap m = {0};
        char names[200][48];
        expect[0] = 0;
        int nops = 10 + (int)(check_rand() % 150);
        for (int i = 0; i < nops && i < 200; i++) {
            char *name = names[i];
            snprintf(name, 48, "%s", pool[check_rand() % POOL]);
            if (check_rand() % 3 == 0) /* the same name in another case */
                for (char *p = name; *p; p++)
                    if (*p >= 'a' && *p <= 'z' && check_rand() % 2) *p = (char)(*p - 'a' + 'A');
            char h[100];
            hex(name, h);
            if (check_rand() % 5 == 0) {
                fprintf(f, "E %s\nO\n", h);
                mv_hmap_erase(&m, name);
            } else {
                fprintf(f, "I %s\nO\n", h);
                if (mv_hmap_put(&m, name, i, NULL) != 0) mismatches++;
            }
            order_line(&m, expect, sizeof expect);
        }
        fclose(f);
        mv_hmap_free(&m);
        int rc = system(cmd);
        CHECK_INT(rc, 0);
        f = fopen(got, "r");
        size_t len = f ? fread(actual, 1, sizeof actual - 1, f) : 0;
        if (f) fclose(f);
        actual[len] = 0;
        if (strcmp(expect, actual) != 0) {
            if (mismatches++ < 3) check_note("sequence %d: the simulation and std::unordered_map differ", s);
        }
    }
    CHECK(mismatches == 0, "%lu of %d sequences ordered differently from std::unordered_map", mismatches, SEQS);
    unlink(ops);
    unlink(got);
    rmdir(dir);
    return check_done();
}
