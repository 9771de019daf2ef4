/*
 * test_keys.c — the order-preserving tuple encoding of keys (engine/key.c,
 * docs/keyspace.md), on its own.
 *
 * The property that matters: LMDB's order of encoded keys (memcmp over the
 * common length, then shorter-is-less) is the order of the tuples they encode
 * (element by element; NULL < string < integer; integers by value over the
 * whole int64 range; strings bytewise, a prefix first; a shorter tuple before
 * its extensions). Comparisons here go through LMDB itself (mdb_cmp on a real
 * environment), so a change of LMDB's comparator would be caught too.
 *
 * Decoding must give back exactly what was encoded, and malformed keys must be
 * MORAINE_ECORRUPT without reading a byte past the end: every buffer handed to
 * the decoder is a malloc'd copy of exactly its length, so the ASan build
 * catches any overread.
 */
#include "check.h"
#include "internal.h"

#include <ftw.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXT 5 /* elements per generated tuple */
#define MAXS 8 /* bytes per generated string */

/* A tuple element owning its bytes (so generated tuples can be kept). */
typedef struct {
    moraine_type type;
    int64_t i;
    uint8_t s[MAXS];
    size_t len;
} elem;

typedef struct {
    elem e[MAXT];
    size_t n;
} tuple;

/* ---- LMDB's comparator ---------------------------------------------------- */

static char lmdb_dir[1024];
static MDB_env *env;
static MDB_txn *txn;
static MDB_dbi dbi;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int lmdb_setup(void)
{
    if (!check_mkdtemp(lmdb_dir, sizeof lmdb_dir, "moraine-test-keys")) return -1;
    if (mdb_env_create(&env) || mdb_env_open(env, lmdb_dir, 0, 0600)) return -1;
    if (mdb_txn_begin(env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi)) return -1;
    return 0;
}

static void lmdb_teardown(void)
{
    if (txn) mdb_txn_abort(txn);
    if (env) mdb_env_close(env);
    nftw(lmdb_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int sign(long long v) { return (v > 0) - (v < 0); }

/* The order LMDB keeps the two keys in: -1, 0, 1. */
static int key_cmp(const mr_buf *a, const mr_buf *b)
{
    MDB_val x = {a->len, a->p}, y = {b->len, b->p};
    return sign(mdb_cmp(txn, dbi, &x, &y));
}

/* ---- the reference tuple order ---------------------------------------------- */

static int type_rank(moraine_type t) { return t == MORAINE_NULL ? 0 : t == MORAINE_STR ? 1 : 2; }

static int bytes_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) return sign(c);
    return (na > nb) - (na < nb);
}

static int elem_cmp(const elem *a, const elem *b)
{
    int ra = type_rank(a->type), rb = type_rank(b->type);
    if (ra != rb) return ra < rb ? -1 : 1;
    if (a->type == MORAINE_INT) return (a->i > b->i) - (a->i < b->i);
    if (a->type == MORAINE_STR) return bytes_cmp(a->s, a->len, b->s, b->len);
    return 0;
}

static int tuple_cmp(const tuple *a, const tuple *b)
{
    for (size_t k = 0; k < a->n && k < b->n; k++) {
        int c = elem_cmp(&a->e[k], &b->e[k]);
        if (c) return c;
    }
    return (a->n > b->n) - (a->n < b->n);
}

/* ---- encoding / decoding helpers ---------------------------------------------- */

static moraine_value as_value(const elem *e)
{
    moraine_value v;
    memset(&v, 0, sizeof v);
    v.type = e->type;
    v.i = e->i;
    v.s = (const char *)e->s;
    v.len = e->len;
    return v;
}

static int encode(mr_buf *b, const tuple *t)
{
    b->len = 0;
    for (size_t k = 0; k < t->n; k++) {
        moraine_value v = as_value(&t->e[k]);
        int rc = mr_key_value(b, &v);
        if (rc) return rc;
    }
    return 0;
}

/* Decodes the whole of @k (copied to an exact-size buffer) into @out.
 * Returns 0, or the first error of mr_key_next. */
static int decode(const uint8_t *k, size_t n, tuple *out)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) return MORAINE_ENOMEM;
    if (n) memcpy(copy, k, n);
    const uint8_t *p = copy, *end = copy + n;
    mr_buf scratch = {0};
    int rc = 0;
    out->n = 0;
    while (p < end) {
        moraine_value v;
        if ((rc = mr_key_next(&p, end, &v, &scratch))) break;
        if (out->n == MAXT || (v.type == MORAINE_STR && v.len > MAXS)) {
            rc = -1000; /* more than was ever encoded */
            break;
        }
        elem *e = &out->e[out->n++];
        memset(e, 0, sizeof *e);
        e->type = v.type;
        e->i = v.i;
        e->len = v.type == MORAINE_STR ? v.len : 0;
        if (e->len) memcpy(e->s, v.s, e->len);
    }
    mr_buf_free(&scratch);
    free(copy);
    return rc;
}

static int tuple_equal(const tuple *a, const tuple *b)
{
    if (a->n != b->n) return 0;
    for (size_t k = 0; k < a->n; k++) {
        const elem *x = &a->e[k], *y = &b->e[k];
        if (x->type != y->type) return 0;
        if (x->type == MORAINE_INT && x->i != y->i) return 0;
        if (x->type == MORAINE_STR && (x->len != y->len || (x->len && memcmp(x->s, y->s, x->len) != 0))) return 0;
    }
    return 1;
}

static void describe(const tuple *t, char *out, size_t outlen)
{
    size_t o = 0;
    o += (size_t)snprintf(out + o, outlen - o, "(");
    for (size_t k = 0; k < t->n && o < outlen; k++) {
        const elem *e = &t->e[k];
        if (k && o < outlen) o += (size_t)snprintf(out + o, outlen - o, ", ");
        if (o >= outlen) break;
        if (e->type == MORAINE_NULL) o += (size_t)snprintf(out + o, outlen - o, "NULL");
        else if (e->type == MORAINE_INT) o += (size_t)snprintf(out + o, outlen - o, "%lld", (long long)e->i);
        else {
            o += (size_t)snprintf(out + o, outlen - o, "\"");
            for (size_t j = 0; j < e->len && o < outlen; j++) o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", e->s[j]);
            if (o < outlen) o += (size_t)snprintf(out + o, outlen - o, "\"");
        }
    }
    if (o < outlen) snprintf(out + o, outlen - o, ")");
}

static tuple t_int(int64_t v)
{
    tuple t;
    memset(&t, 0, sizeof t);
    t.n = 1;
    t.e[0].type = MORAINE_INT;
    t.e[0].i = v;
    return t;
}

static tuple t_str(const char *s, size_t len)
{
    tuple t;
    memset(&t, 0, sizeof t);
    t.n = 1;
    t.e[0].type = MORAINE_STR;
    t.e[0].len = len;
    memcpy(t.e[0].s, s, len);
    return t;
}

static void push_null(tuple *t)
{
    memset(&t->e[t->n], 0, sizeof t->e[t->n]);
    t->e[t->n++].type = MORAINE_NULL;
}

static void push_int(tuple *t, int64_t v)
{
    memset(&t->e[t->n], 0, sizeof t->e[t->n]);
    t->e[t->n].type = MORAINE_INT;
    t->e[t->n++].i = v;
}

static void push_str(tuple *t, const char *s, size_t len)
{
    memset(&t->e[t->n], 0, sizeof t->e[t->n]);
    t->e[t->n].type = MORAINE_STR;
    t->e[t->n].len = len;
    memcpy(t->e[t->n++].s, s, len);
}

/* Checks one pair: LMDB order == tuple order, and both decode back. Returns
 * the number of problems (0 or more), printing the first few. */
static unsigned long pair_problems_printed;

static int check_pair(const tuple *a, const tuple *b)
{
    mr_buf ka = {0}, kb = {0};
    int bad = 0;
    if (encode(&ka, a) || encode(&kb, b)) bad++;
    int want = tuple_cmp(a, b), got = bad ? 0 : key_cmp(&ka, &kb);
    if (!bad && got != want) bad++;
    tuple da, db;
    if (!bad && (decode(ka.p, ka.len, &da) || !tuple_equal(&da, a))) bad++;
    if (!bad && (decode(kb.p, kb.len, &db) || !tuple_equal(&db, b))) bad++;
    if (bad && pair_problems_printed++ < 10) {
        char sa[256], sb[256];
        describe(a, sa, sizeof sa);
        describe(b, sb, sizeof sb);
        check_note("%s vs %s: tuple order %d, LMDB order %d (or a decode mismatch)", sa, sb, want, got);
    }
    mr_buf_free(&ka);
    mr_buf_free(&kb);
    return bad;
}

/* ---- random generation ---------------------------------------------------------- */

static int64_t rand_int(void)
{
    static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, -4294967296LL, -2147483649LL, -2147483648LL, -65536, -256, -255,
                                    -129, -128, -127, -2, -1, 0, 1, 2, 127, 128, 255, 256, 65535, 2147483647LL, 2147483648LL,
                                    4294967296LL, INT64_MAX - 1, INT64_MAX};
    switch (check_below(5)) {
    case 0: return (int64_t)check_rand(); /* anywhere in the range */
    case 1: return (int64_t)check_below(2001) - 1000;
    case 2: return edges[check_below(sizeof edges / sizeof edges[0])];
    case 3: { /* around a power of two, either sign */
        int64_t p = (int64_t)(1ULL << check_below(63));
        int64_t v = p + (int64_t)check_below(5) - 2;
        return check_below(2) ? v : -v;
    }
    default: return (int64_t)(check_rand() >> check_below(64)); /* small magnitudes, both signs via wraparound */
    }
}

/* Strings over a small alphabet that hits the escape (0x00), the escape's
 * second byte (0xFF), its neighbours, and common prefixes. */
static void rand_str(elem *e)
{
    static const uint8_t alphabet[] = {0x00, 0x01, 'a', 'b', 0xFE, 0xFF};
    e->type = MORAINE_STR;
    e->len = check_below(MAXS + 1);
    if (check_below(4) == 0) e->len = check_below(3);
    for (size_t j = 0; j < e->len; j++) e->s[j] = alphabet[check_below(sizeof alphabet)];
}

static void rand_elem(elem *e)
{
    memset(e, 0, sizeof *e);
    switch (check_below(4)) {
    case 0: e->type = MORAINE_NULL; break;
    case 1: rand_str(e); break;
    default:
        e->type = MORAINE_INT;
        e->i = check_below(3) ? (int64_t)check_below(5) - 2 : rand_int(); /* small values collide more */
        break;
    }
}

static void rand_tuple(tuple *t)
{
    t->n = check_below(MAXT + 1);
    for (size_t k = 0; k < t->n; k++) rand_elem(&t->e[k]);
}

/* b derived from a so that long common prefixes are frequent. */
static void rand_neighbour(const tuple *a, tuple *b)
{
    *b = *a;
    switch (check_below(4)) {
    case 0: rand_tuple(b); break;
    case 1: /* change one element */
        if (b->n) rand_elem(&b->e[check_below(b->n)]);
        break;
    case 2: /* cut or extend */
        if (b->n && check_below(2)) b->n = check_below(b->n);
        else if (b->n < MAXT) rand_elem(&b->e[b->n++]);
        break;
    default: /* same tuple */
        break;
    }
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_int_fixed(void)
{
    static const int64_t v[] = {INT64_MIN, INT64_MIN + 1, -4294967296LL, -2147483648LL, -65536, -256, -255, -128,
                                -2, -1, 0, 1, 2, 127, 128, 255, 256, 2147483647LL, 4294967296LL, INT64_MAX - 1, INT64_MAX};
    size_t n = sizeof v / sizeof v[0];
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            tuple a = t_int(v[i]), b = t_int(v[j]);
            bad += check_pair(&a, &b);
        }
    CHECK(bad == 0, "%d of %zu ordered integer pairs (INT64_MIN..INT64_MAX) misordered or not decoded", bad, n * n);

    /* The documented bytes: type 0x14, big-endian with the sign bit flipped. */
    mr_buf b = {0};
    static const struct {
        int64_t v;
        uint8_t k[9];
    } exact[] = {
        {INT64_MIN, {0x14, 0, 0, 0, 0, 0, 0, 0, 0}},
        {-1, {0x14, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
        {0, {0x14, 0x80, 0, 0, 0, 0, 0, 0, 0}},
        {1, {0x14, 0x80, 0, 0, 0, 0, 0, 0, 1}},
        {INT64_MAX, {0x14, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        b.len = 0;
        CHECK_RC(mr_key_int(&b, exact[i].v), 0);
        CHECK(b.len == MR_KEY_INT_LEN && memcmp(b.p, exact[i].k, 9) == 0, "encoding of %lld is not the documented 9 bytes",
              (long long)exact[i].v);
    }
    /* encoding appends: two ints in one buffer */
    b.len = 0;
    CHECK_RC(mr_key_int(&b, -1), 0);
    CHECK_RC(mr_key_int(&b, 1), 0);
    CHECK(b.len == 18 && memcmp(b.p, exact[1].k, 9) == 0 && memcmp(b.p + 9, exact[3].k, 9) == 0, "mr_key_int does not append");
    mr_buf_free(&b);
}

static void test_int_random(void)
{
    const int pairs = 200000;
    int bad = 0;
    for (int i = 0; i < pairs; i++) {
        tuple a = t_int(rand_int()), b = check_below(20) ? t_int(rand_int()) : a;
        int64_t x = a.e[0].i;
        if (check_below(4) == 0) b.e[0].i = x == INT64_MAX ? x - 1 : x + 1; /* adjacent values */
        bad += check_pair(&a, &b);
    }
    CHECK(bad == 0, "%d of %d random integer pairs misordered or not decoded", bad, pairs);

    /* neighbours: v and v+1 over the whole range */
    bad = 0;
    for (int i = 0; i < pairs; i++) {
        int64_t v = rand_int();
        if (v == INT64_MAX) v--;
        mr_buf ka = {0}, kb = {0};
        mr_key_int(&ka, v);
        mr_key_int(&kb, v + 1);
        if (key_cmp(&ka, &kb) != -1) {
            bad++;
            if (bad <= 5) check_note("enc(%lld) is not below enc(%lld)", (long long)v, (long long)(v + 1));
        }
        mr_buf_free(&ka);
        mr_buf_free(&kb);
    }
    CHECK(bad == 0, "%d of %d random (v, v+1) pairs misordered", bad, pairs);
}

static void test_str_fixed(void)
{
    /* ascending in tuple order */
    static const struct {
        const char *s;
        size_t len;
    } v[] = {
        {"", 0},         {"\0", 1},        {"\0\0", 2},     {"\0\x01", 2},   {"\0\xff", 2},  {"\x01", 1},
        {"a", 1},        {"a\0", 2},       {"a\0\0", 3},    {"a\0b", 3},      {"a\0\xff", 3},    {"a\x01", 2},
        {"ab", 2},       {"ab\0", 3},      {"ab\xff", 3},   {"b", 1},        {"\xfe", 1},    {"\xfe\xff", 2},
        {"\xff", 1},     {"\xff\0", 2},    {"\xff\xff", 2}, {"\xff\xff\xff", 3},
    };
    size_t n = sizeof v / sizeof v[0];
    int bad = 0, misordered = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            tuple a = t_str(v[i].s, v[i].len), b = t_str(v[j].s, v[j].len);
            bad += check_pair(&a, &b);
            if (tuple_cmp(&a, &b) != (i > j) - (i < j)) misordered++; /* the list itself is in order */
        }
    CHECK(misordered == 0, "the fixed string list is not in bytewise order (test bug)");
    CHECK(bad == 0, "%d of %zu pairs of strings with NUL/0xFF bytes misordered or not decoded", bad, n * n);

    /* the named examples */
    mr_buf a = {0}, a0 = {0}, ab = {0}, e = {0};
    mr_key_str(&a, "a", 1);
    mr_key_str(&a0, "a\0", 2);
    mr_key_str(&ab, "ab", 2);
    mr_key_str(&e, "", 0);
    CHECK(key_cmp(&a, &a0) < 0, "\"a\" must sort before \"a\\0\"");
    CHECK(key_cmp(&a0, &ab) < 0, "\"a\\0\" must sort before \"ab\"");
    CHECK(key_cmp(&e, &a) < 0, "\"\" must sort before \"a\"");
    static const uint8_t enc_a0[] = {0x02, 'a', 0x00, 0xFF, 0x00}, enc_e[] = {0x02, 0x00};
    CHECK(a0.len == sizeof enc_a0 && memcmp(a0.p, enc_a0, sizeof enc_a0) == 0, "\"a\\0\" is not encoded 02 61 00 FF 00");
    CHECK(e.len == sizeof enc_e && memcmp(e.p, enc_e, sizeof enc_e) == 0, "\"\" is not encoded 02 00");
    mr_buf_free(&a);
    mr_buf_free(&a0);
    mr_buf_free(&ab);
    mr_buf_free(&e);

    /* a long string with every byte value round-trips */
    char all[512];
    for (int i = 0; i < 512; i++) all[i] = (char)(i & 0xFF);
    mr_buf k = {0}, scratch = {0};
    CHECK_RC(mr_key_str(&k, all, sizeof all), 0);
    CHECK(k.len == 1 + 512 + 2 + 1, "512 bytes with two NULs encode to %zu bytes, expected 516", k.len);
    uint8_t *copy = malloc(k.len);
    memcpy(copy, k.p, k.len);
    const uint8_t *p = copy;
    moraine_value out;
    CHECK_RC(mr_key_next(&p, copy + k.len, &out, &scratch), 0);
    CHECK(out.type == MORAINE_STR && out.len == 512 && memcmp(out.s, all, 512) == 0, "every byte value: round trip differs");
    CHECK(p == copy + k.len, "decoder did not consume the whole string element");
    free(copy);
    mr_buf_free(&k);
    mr_buf_free(&scratch);
}

static void test_str_random(void)
{
    const int pairs = 100000;
    int bad = 0;
    for (int i = 0; i < pairs; i++) {
        tuple a, b;
        a.n = b.n = 1;
        rand_str(&a.e[0]);
        if (check_below(3) == 0) {
            b = a; /* extend or cut: prefixes */
            if (b.e[0].len < MAXS && check_below(2)) b.e[0].s[b.e[0].len++] = (uint8_t)(check_below(2) ? 0x00 : check_rand());
            else if (b.e[0].len) b.e[0].len--;
        } else {
            rand_str(&b.e[0]);
        }
        bad += check_pair(&a, &b);
    }
    CHECK(bad == 0, "%d of %d random string pairs (NUL, 0xFF, prefixes) misordered or not decoded", bad, pairs);
}

static void test_tuples(void)
{
    /* ascending in tuple order */
    tuple v[32];
    size_t n = 0;
#define T0() (v[n].n = 0, &v[n])
    tuple *t;
    t = T0(); n++;                                              /* () */
    t = T0(); push_null(t); n++;                                /* (NULL) */
    t = T0(); push_null(t); push_null(t); n++;                  /* (NULL, NULL) */
    t = T0(); push_null(t); push_int(t, INT64_MIN); n++;        /* (NULL, MIN) */
    t = T0(); push_str(t, "", 0); n++;                          /* ("") */
    t = T0(); push_str(t, "", 0); push_null(t); n++;            /* ("", NULL) */
    t = T0(); push_str(t, "", 0); push_str(t, "", 0); n++;      /* ("", "") */
    t = T0(); push_str(t, "", 0); push_int(t, -1); n++;         /* ("", -1) */
    t = T0(); push_str(t, "\0", 1); n++;                        /* ("\0") */
    t = T0(); push_str(t, "a", 1); push_int(t, INT64_MAX); n++; /* ("a", MAX) */
    t = T0(); push_str(t, "a\0", 2); push_str(t, "\xff", 1); n++; /* ("a\0", "\xff") */
    t = T0(); push_str(t, "a\0", 2); push_int(t, INT64_MIN); n++; /* ("a\0", MIN) */
    t = T0(); push_str(t, "ab", 2); push_null(t); n++;          /* ("ab", NULL) */
    t = T0(); push_str(t, "\xff", 1); n++;                      /* ("\xff") */
    t = T0(); push_int(t, INT64_MIN); n++;                      /* (MIN) */
    t = T0(); push_int(t, -1); push_str(t, "zzz", 3); n++;      /* (-1, "zzz") */
    t = T0(); push_int(t, 0); n++;                              /* (0) */
    t = T0(); push_int(t, 1); n++;                              /* (1) */
    t = T0(); push_int(t, 1); push_null(t); n++;                /* (1, NULL) */
    t = T0(); push_int(t, 1); push_str(t, "", 0); n++;          /* (1, "") */
    t = T0(); push_int(t, 1); push_str(t, "a", 1); n++;         /* (1, "a") */
    t = T0(); push_int(t, 1); push_str(t, "a", 1); push_int(t, 5); n++; /* (1, "a", 5) */
    t = T0(); push_int(t, 1); push_str(t, "a\0", 2); n++;       /* (1, "a\0") */
    t = T0(); push_int(t, 1); push_str(t, "b", 1); n++;         /* (1, "b") */
    t = T0(); push_int(t, 1); push_int(t, INT64_MIN); n++;      /* (1, MIN) */
    t = T0(); push_int(t, 1); push_int(t, 0); n++;              /* (1, 0) */
    t = T0(); push_int(t, 2); push_str(t, "", 0); n++;          /* (2, "") */
    t = T0(); push_int(t, INT64_MAX); push_null(t); n++;        /* (MAX, NULL) */
#undef T0
    (void)t;
    int bad = 0, misordered = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            bad += check_pair(&v[i], &v[j]);
            if (tuple_cmp(&v[i], &v[j]) != (i > j) - (i < j)) misordered++;
        }
    CHECK(misordered == 0, "the fixed tuple list is not in tuple order (test bug)");
    CHECK(bad == 0, "%d of %zu pairs of mixed tuples misordered or not decoded", bad, n * n);

    /* NULL before strings and integers, strings before integers */
    mr_buf kn = {0}, ks = {0}, ki = {0};
    moraine_value nv = {.type = MORAINE_NULL}, sv = {.type = MORAINE_STR, .s = "", .len = 0}, iv = {.type = MORAINE_INT, .i = INT64_MIN};
    CHECK_RC(mr_key_value(&kn, &nv), 0);
    CHECK_RC(mr_key_value(&ks, &sv), 0);
    CHECK_RC(mr_key_value(&ki, &iv), 0);
    CHECK(key_cmp(&kn, &ks) < 0, "NULL must sort before the empty string");
    CHECK(key_cmp(&kn, &ki) < 0, "NULL must sort before INT64_MIN");
    CHECK(key_cmp(&ks, &ki) < 0, "strings sort before integers (type bytes 0x02 < 0x14)");
    CHECK(kn.len == 1 && kn.p[0] == MR_K_NULL, "NULL is the single byte 0x00");
    mr_buf_free(&kn);
    mr_buf_free(&ks);
    mr_buf_free(&ki);

    /* random tuples, neighbours sharing prefixes */
    const int pairs = 150000;
    bad = 0;
    for (int i = 0; i < pairs; i++) {
        tuple a, b;
        rand_tuple(&a);
        rand_neighbour(&a, &b);
        bad += check_pair(&a, &b);
    }
    CHECK(bad == 0, "%d of %d random mixed tuples misordered or not decoded", bad, pairs);
}

static void test_key_value(void)
{
    mr_buf b = {0}, ref = {0};
    moraine_value v;
    memset(&v, 0, sizeof v);
    v.type = MORAINE_BOOL;
    v.i = 1;
    CHECK_RC(mr_key_value(&b, &v), MORAINE_EINVAL);
    v.type = MORAINE_REAL;
    v.d = 1.5;
    CHECK_RC(mr_key_value(&b, &v), MORAINE_EINVAL);
    v.type = MORAINE_JSON;
    v.s = "{}";
    v.len = 2;
    CHECK_RC(mr_key_value(&b, &v), MORAINE_EINVAL);

    /* mr_key_value == mr_key_int / mr_key_str */
    b.len = 0;
    v.type = MORAINE_INT;
    v.i = -42;
    mr_key_value(&b, &v);
    mr_key_int(&ref, -42);
    CHECK(b.len == ref.len && memcmp(b.p, ref.p, b.len) == 0, "mr_key_value(INT) differs from mr_key_int");
    b.len = ref.len = 0;
    v.type = MORAINE_STR;
    v.s = "x\0y";
    v.len = 3;
    mr_key_value(&b, &v);
    mr_key_str(&ref, "x\0y", 3);
    CHECK(b.len == ref.len && memcmp(b.p, ref.p, b.len) == 0, "mr_key_value(STR) differs from mr_key_str");
    mr_buf_free(&b);
    mr_buf_free(&ref);
}

/* Runs mr_key_next once on an exact-size copy of @k; returns its code, and
 * checks that on failure *p did not move and on success it moved forward
 * within the buffer. */
static int next_once(const uint8_t *k, size_t n, size_t *consumed)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, k, n);
    const uint8_t *p = copy, *end = copy + n;
    mr_buf scratch = {0};
    moraine_value v;
    int rc = mr_key_next(&p, end, &v, &scratch);
    *consumed = (size_t)(p - copy);
    if (rc == 0) {
        CHECK(p > copy && p <= end, "mr_key_next succeeded but moved to offset %td of %zu", p - copy, n);
    } else {
        CHECK(p == copy, "mr_key_next failed (%d) but advanced the pointer", rc);
    }
    mr_buf_free(&scratch);
    free(copy);
    return rc;
}

static void test_malformed(void)
{
    size_t used;
    /* nothing where an element was expected */
    CHECK_RC(next_once((const uint8_t *)"", 0, &used), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "key") != NULL, "message '%s' does not say it is about a key", moraine_errmsg());

    /* truncated integers: the type byte and 0..7 of its 8 bytes */
    uint8_t full[9] = {0x14, 0x80, 1, 2, 3, 4, 5, 6, 7};
    for (size_t len = 1; len < 9; len++) {
        CHECK_RC(next_once(full, len, &used), MORAINE_ECORRUPT);
        CHECK(strstr(moraine_errmsg(), "truncated") != NULL, "truncated int of %zu bytes: message '%s'", len, moraine_errmsg());
    }
    CHECK_RC(next_once(full, 9, &used), 0);
    CHECK_INT(used, 9);

    /* unterminated strings */
    static const struct {
        const char *k;
        size_t len;
    } unterminated[] = {
        {"\x02", 1}, {"\x02" "a", 2}, {"\x02" "ab", 3}, {"\x02\x00\xff", 3}, {"\x02" "a\x00\xff", 4},
        {"\x02\xff", 2}, {"\x02\x00\xff\x00\xff", 5}, {"\x02\x01\x01\x01", 4},
    };
    for (size_t i = 0; i < sizeof unterminated / sizeof unterminated[0]; i++) {
        CHECK_RC(next_once((const uint8_t *)unterminated[i].k, unterminated[i].len, &used), MORAINE_ECORRUPT);
        CHECK(strstr(moraine_errmsg(), "unterminated") != NULL, "unterminated string %zu: message '%s'", i, moraine_errmsg());
    }
    /* the shortest valid strings, for contrast */
    CHECK_RC(next_once((const uint8_t *)"\x02\x00", 2, &used), 0);
    CHECK_INT(used, 2);
    CHECK_RC(next_once((const uint8_t *)"\x02\x00\xff\x00", 4, &used), 0);
    CHECK_INT(used, 4);
    /* "02 00 00": the empty string, then a NULL element */
    CHECK_RC(next_once((const uint8_t *)"\x02\x00\x00", 3, &used), 0);
    CHECK_INT(used, 2);

    /* every type byte that is not NULL, string or integer */
    int bad = 0;
    for (int t = 0; t < 256; t++) {
        if (t == MR_K_NULL || t == MR_K_STR || t == MR_K_INT) continue;
        uint8_t k1[1] = {(uint8_t)t}, k9[9] = {(uint8_t)t, 0, 0, 0, 0, 0, 0, 0, 0};
        if (next_once(k1, 1, &used) != MORAINE_ECORRUPT || next_once(k9, 9, &used) != MORAINE_ECORRUPT) {
            bad++;
            check_note("type byte 0x%02x accepted", t);
        }
    }
    CHECK(bad == 0, "%d unknown type bytes accepted", bad);
    CHECK_RC(next_once((const uint8_t *)"\x15", 1, &used), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "0x15") != NULL, "unknown type byte message '%s' does not name the byte", moraine_errmsg());

    /* every prefix of valid tuple encodings decodes element by element to a
     * shorter valid tuple or to MORAINE_ECORRUPT, never past the end */
    const int cases = 20000;
    bad = 0;
    for (int c = 0; c < cases; c++) {
        tuple t, d;
        rand_tuple(&t);
        mr_buf k = {0};
        encode(&k, &t);
        for (size_t len = 0; len <= k.len; len++) {
            int rc = decode(k.p, len, &d);
            int ok = rc == 0 || rc == MORAINE_ECORRUPT;
            if (len == k.len) ok = rc == 0 && tuple_equal(&d, &t);
            else if (rc == 0) { /* a prefix that decodes: each element a prefix of the original's */
                ok = d.n <= t.n;
                for (size_t e = 0; ok && e < d.n; e++) {
                    if (d.e[e].type != t.e[e].type) ok = 0;
                    else if (d.e[e].type == MORAINE_INT) ok = d.e[e].i == t.e[e].i;
                    else if (d.e[e].type == MORAINE_STR)
                        ok = d.e[e].len <= t.e[e].len && (d.e[e].len == 0 || memcmp(d.e[e].s, t.e[e].s, d.e[e].len) == 0);
                }
            }
            if (!ok) {
                bad++;
                if (bad <= 5) {
                    char s[256];
                    describe(&t, s, sizeof s);
                    check_note("prefix %zu of %zu bytes of %s: rc %d", len, k.len, s, rc);
                }
            }
        }
        mr_buf_free(&k);
    }
    CHECK(bad == 0, "%d prefixes of %d random keys decoded wrongly", bad, cases);

    /* random garbage: every call 0 or MORAINE_ECORRUPT, never past the end */
    bad = 0;
    for (int c = 0; c < 50000; c++) {
        uint8_t g[24];
        size_t len = check_below(sizeof g + 1);
        static const uint8_t likely[] = {0x00, 0x02, 0x14, 0xFF, 'a'};
        for (size_t j = 0; j < len; j++) g[j] = check_below(2) ? likely[check_below(sizeof likely)] : (uint8_t)check_rand();
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, g, len);
        const uint8_t *p = copy, *end = copy + len;
        mr_buf scratch = {0};
        while (p < end) {
            moraine_value v;
            const uint8_t *before = p;
            int rc = mr_key_next(&p, end, &v, &scratch);
            if (rc != 0 && rc != MORAINE_ECORRUPT) bad++;
            if (rc) break;
            if (p <= before || p > end) {
                bad++;
                break;
            }
        }
        mr_buf_free(&scratch);
        free(copy);
    }
    CHECK(bad == 0, "%d random garbage keys gave a code other than 0/ECORRUPT or moved wrongly", bad);
}

static void test_describe(void)
{
    mr_buf k = {0};
    mr_buf_byte(&k, MR_SUB_CURRENT);
    mr_key_int(&k, 1);
    mr_key_int(&k, -10);
    mr_key_str(&k, "ab", 2);
    mr_buf_byte(&k, MR_K_NULL);
    char out[128];
    mr_key_describe(k.p, k.len, out, sizeof out);
    CHECK(strcmp(out, "C(1,-10,'ab',NULL)") == 0, "mr_key_describe gave '%s'", out);

    /* every output size, exact-size buffers: always terminated, never past */
    int bad = 0;
    for (size_t outlen = 1; outlen <= 24; outlen++) {
        char *o = malloc(outlen);
        memset(o, 'x', outlen);
        mr_key_describe(k.p, k.len, o, outlen);
        if (memchr(o, 0, outlen) == NULL) bad++;
        free(o);
    }
    CHECK(bad == 0, "%d small output sizes left the description unterminated", bad);

    /* a corrupt key is described, not crashed on */
    static const uint8_t corrupt[] = {'C', 0x14, 0x80, 0x00, 0x99};
    uint8_t *copy = malloc(sizeof corrupt);
    memcpy(copy, corrupt, sizeof corrupt);
    mr_key_describe(copy, sizeof corrupt, out, sizeof out);
    CHECK(strstr(out, "<corrupt>") != NULL, "a truncated key is described as '%s'", out);
    free(copy);

    /* an empty key (LMDB hands one back from a damaged page) is named as
     * such, not ")"; a subspace byte that is not printable is shown as \xNN */
    uint8_t *none = malloc(1);
    memset(out, 'x', sizeof out);
    mr_key_describe(none, 0, out, sizeof out);
    CHECK(strcmp(out, "(empty key)") == 0, "an empty key is described as '%s'", out);
    free(none);
    static const uint8_t odd[] = {0x01, 0x14, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07};
    copy = malloc(sizeof odd);
    memcpy(copy, odd, sizeof odd);
    mr_key_describe(copy, sizeof odd, out, sizeof out);
    CHECK(strcmp(out, "\\x01(7)") == 0, "a key with subspace byte 0x01 is described as '%s'", out);
    free(copy);
    mr_buf_free(&k);
}

int main(void)
{
    check_seed("test_keys");
    if (lmdb_setup()) {
        fprintf(stderr, "cannot create an LMDB environment in %s\n", lmdb_dir);
        CHECK(0, "LMDB setup");
        lmdb_teardown();
        return check_done();
    }
    test_int_fixed();
    test_int_random();
    test_str_fixed();
    test_str_random();
    test_tuples();
    test_key_value();
    test_malformed();
    test_describe();
    lmdb_teardown();
    return check_done();
}
