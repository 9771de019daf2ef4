/*
 * test_codec.c — the record format of stored values (engine/codec.c,
 * docs/codec.md), on its own: uvarints, rows of every value type, and what
 * the decoder does with truncated, flipped and overflowing input.
 *
 * Every buffer handed to a decoder is a malloc'd copy of exactly its length,
 * so the ASan build catches any read past the end.
 */
#include "check.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* values in this file are sealed under the empty key: the checksum is then
 * the CRC-32C of the value alone (test_key_binding binds them to keys) */
#define NOKEY ((const uint8_t *)"")

/* ---- helpers ------------------------------------------------------------------ */

static uint8_t *exact_copy(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (!c) abort();
    if (n) memcpy(c, p, n);
    return c;
}

static double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static moraine_value v_null(void) { return (moraine_value){.type = MORAINE_NULL}; }
static moraine_value v_int(int64_t i) { return (moraine_value){.type = MORAINE_INT, .i = i}; }
static moraine_value v_bool(int b) { return (moraine_value){.type = MORAINE_BOOL, .i = b}; }
static moraine_value v_real(double d) { return (moraine_value){.type = MORAINE_REAL, .d = d}; }
static moraine_value v_str(const char *s, size_t n) { return (moraine_value){.type = MORAINE_STR, .s = s, .len = n}; }
static moraine_value v_json(const char *s, size_t n) { return (moraine_value){.type = MORAINE_JSON, .s = s, .len = n}; }

/* Exact equality of two values as the codec must keep them: same type, same
 * integer, same bytes, same double bits (-0.0 and NaN payloads included). */
static int value_same(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case MORAINE_NULL: return 1;
    case MORAINE_INT: return a->i == b->i;
    case MORAINE_BOOL: return (a->i != 0) == (b->i != 0);
    case MORAINE_REAL: return to_bits(a->d) == to_bits(b->d);
    case MORAINE_STR:
    case MORAINE_JSON: return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
    }
    return 0;
}

/* Encodes header (version, checksum) + row, the way the engine stores a value. */
static void encode_value(mr_buf *b, int64_t ord, const moraine_value *vals, size_t n)
{
    b->len = 0;
    if (mr_value_begin(b) || mr_encode_row(b, ord, vals, n)) abort();
    mr_value_seal(b, 0, NOKEY, 0);
}

/* Decodes an exact-size copy of @enc (header + row) and compares with
 * @vals/@ord. Returns 1 when identical and the whole buffer was consumed. */
static int round_trip(const mr_buf *enc, int64_t ord, const moraine_value *vals, size_t n, char *why, size_t whylen)
{
    uint8_t *c = exact_copy(enc->p, enc->len);
    const uint8_t *p = c, *end = c + enc->len;
    moraine_value out[64];
    size_t got = 999;
    int64_t gord = 0;
    int ok = 0;
    if (mr_decode_header(&p, end, NOKEY, 0)) snprintf(why, whylen, "header: %s", moraine_errmsg());
    else if (mr_decode_row(&p, end, &gord, out, 64, &got)) snprintf(why, whylen, "row: %s", moraine_errmsg());
    else if (p != end) snprintf(why, whylen, "consumed %td of %zu bytes", p - c, enc->len);
    else if (gord != ord) snprintf(why, whylen, "ord %lld != %lld", (long long)gord, (long long)ord);
    else if (got != n) snprintf(why, whylen, "%zu columns != %zu", got, n);
    else {
        ok = 1;
        for (size_t i = 0; ok && i < n; i++) {
            if (!value_same(&out[i], &vals[i])) {
                snprintf(why, whylen, "column %zu differs (type %d vs %d)", i, (int)out[i].type, (int)vals[i].type);
                ok = 0;
            } else if ((out[i].type == MORAINE_STR || out[i].type == MORAINE_JSON) && out[i].len &&
                       ((const uint8_t *)out[i].s < c || (const uint8_t *)out[i].s + out[i].len > end)) {
                snprintf(why, whylen, "column %zu points outside the buffer", i);
                ok = 0;
            }
        }
    }
    free(c);
    return ok;
}

/* ---- uvarints ------------------------------------------------------------------- */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void test_uvarint(void)
{
    static const uint64_t fixed[] = {0, 1, 127, 128, 255, 16383, 16384, 2097151, 2097152, 0xFFFFFFFFULL, 1ULL << 35,
                                     (1ULL << 56) - 1, 1ULL << 56, (1ULL << 63) - 1, 1ULL << 63, UINT64_MAX - 1, UINT64_MAX};
    int bad = 0, badprefix = 0;
    for (int c = 0; c < 20000 + (int)(sizeof fixed / sizeof fixed[0]); c++) {
        uint64_t v = c < (int)(sizeof fixed / sizeof fixed[0]) ? fixed[c] : check_rand() >> check_below(64);
        mr_buf b = {0};
        mr_put_uvarint(&b, v);
        if (b.len != varint_len(v)) bad++;
        uint8_t *copy = exact_copy(b.p, b.len);
        const uint8_t *p = copy;
        uint64_t out = 0;
        if (mr_get_uvarint(&p, copy + b.len, &out) != 0 || out != v || p != copy + b.len) {
            bad++;
            if (bad <= 5) check_note("uvarint %llu does not round-trip", (unsigned long long)v);
        }
        free(copy);
        for (size_t len = 0; len < b.len; len++) { /* every strict prefix is truncated */
            copy = exact_copy(b.p, len);
            p = copy;
            if (mr_get_uvarint(&p, copy + len, &out) != MORAINE_ECORRUPT || p != copy) badprefix++;
            free(copy);
        }
        mr_buf_free(&b);
    }
    CHECK(bad == 0, "%d uvarints did not round-trip with minimal length", bad);
    CHECK(badprefix == 0, "%d strict prefixes of uvarints were not MORAINE_ECORRUPT", badprefix);

    /* 64-bit overflow: the 10th byte may only be 0 or 1 */
    static const struct {
        uint8_t b[12];
        size_t len;
        int rc;
        uint64_t v;
    } cases[] = {
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, 10, 0, UINT64_MAX},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 10, 0, 1ULL << 63},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}, 10, MORAINE_ECORRUPT, 0},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, 10, MORAINE_ECORRUPT, 0},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00}, 11, MORAINE_ECORRUPT, 0},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, 12, MORAINE_ECORRUPT, 0},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, 10, MORAINE_ECORRUPT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *copy = exact_copy(cases[i].b, cases[i].len);
        const uint8_t *p = copy;
        uint64_t out = 0;
        CHECK_RC(mr_get_uvarint(&p, copy + cases[i].len, &out), cases[i].rc);
        if (cases[i].rc == 0) CHECK(out == cases[i].v && p == copy + 10, "case %zu decoded %llu", i, (unsigned long long)out);
        else CHECK(p == copy, "case %zu: pointer advanced on failure", i);
        free(copy);
    }

    /* an overflowing varint in each varint field of a row */
    static const uint8_t over[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02};
    for (int field = 0; field < 4; field++) {
        mr_buf b = {0};
        if (field == 0) { /* ord */
            mr_buf_put(&b, over, sizeof over);
            mr_put_uvarint(&b, 0);
        } else {
            mr_put_uvarint(&b, 7);
            if (field == 1) mr_buf_put(&b, over, sizeof over); /* ncols */
            else {
                mr_put_uvarint(&b, 1);
                mr_buf_byte(&b, field == 2 ? MR_T_INT : MR_T_STR); /* integer payload / string length */
                mr_buf_put(&b, over, sizeof over);
            }
        }
        uint8_t *copy = exact_copy(b.p, b.len);
        const uint8_t *p = copy;
        moraine_value vals[4];
        int64_t ord;
        size_t n;
        CHECK_RC(mr_decode_row(&p, copy + b.len, &ord, vals, 4, &n), MORAINE_ECORRUPT);
        CHECK(strstr(moraine_errmsg(), "varint") != NULL, "field %d: message '%s' does not name the varint", field, moraine_errmsg());
        free(copy);
        mr_buf_free(&b);
    }

    /* a string length near 2^64 must not wrap around the bounds check */
    mr_buf b = {0};
    mr_put_uvarint(&b, 0);
    mr_put_uvarint(&b, 1);
    mr_buf_byte(&b, MR_T_STR);
    mr_put_uvarint(&b, UINT64_MAX);
    mr_buf_put(&b, "abc", 3);
    uint8_t *copy = exact_copy(b.p, b.len);
    const uint8_t *p = copy;
    moraine_value vals[2];
    int64_t ord;
    size_t n;
    CHECK_RC(mr_decode_row(&p, copy + b.len, &ord, vals, 2, &n), MORAINE_ECORRUPT);
    free(copy);
    mr_buf_free(&b);
}

/* ---- fixed rows -------------------------------------------------------------------- */

static void test_every_type(void)
{
    static const char nul[] = "a\0b\0";
    static const char bad_utf8[] = "\xff\xfe\xc0\x80\xed\xa0\x80\xf4\x90\x80\x80";
    static const char json[] = "{\"a\":[1,2,{\"b\":null}]}";
    moraine_value row[] = {
        v_null(),
        v_int(0),
        v_int(-1),
        v_int(1),
        v_int(INT64_MIN),
        v_int(INT64_MAX),
        v_int(INT64_MIN + 1),
        v_int(INT64_MAX - 1),
        v_str("", 0),
        v_str(nul, sizeof nul - 1),
        v_str(bad_utf8, sizeof bad_utf8 - 1),
        v_bool(0),
        v_bool(1),
        v_real(0.0),
        v_real(-0.0),
        v_real(from_bits(0x7FF8000000000123ULL)), /* quiet NaN with a payload */
        v_real(from_bits(0xFFF8000000000000ULL)), /* negative NaN */
        v_real(from_bits(0x7FF0000000000001ULL)), /* signalling NaN */
        v_real(INFINITY),
        v_real(-INFINITY),
        v_real(from_bits(1)), /* smallest subnormal */
        v_real(1.5),
        v_real(-1e308),
        v_json(json, sizeof json - 1),
        v_json("", 0),
        v_null(),
    };
    size_t n = sizeof row / sizeof row[0];
    static const int64_t ords[] = {0, 1, 127, 128, 1000000, INT64_MAX, -1, INT64_MIN};
    mr_buf b = {0};
    char why[256];
    for (size_t k = 0; k < sizeof ords / sizeof ords[0]; k++) {
        encode_value(&b, ords[k], row, n);
        CHECK(round_trip(&b, ords[k], row, n, why, sizeof why), "row of every type, ord %lld: %s", (long long)ords[k], why);
    }
    /* each value alone, too */
    for (size_t i = 0; i < n; i++) {
        encode_value(&b, (int64_t)i, &row[i], 1);
        CHECK(round_trip(&b, (int64_t)i, &row[i], 1, why, sizeof why), "value %zu alone: %s", i, why);
    }
    /* an empty row */
    encode_value(&b, 3, NULL, 0);
    CHECK(round_trip(&b, 3, NULL, 0, why, sizeof why), "empty row: %s", why);

    /* NULL and the empty string are distinct, in bytes and decoded */
    mr_buf bn = {0}, be = {0};
    moraine_value vn = v_null(), ve = v_str("", 0);
    encode_value(&bn, 0, &vn, 1);
    encode_value(&be, 0, &ve, 1);
    CHECK(bn.len != be.len || memcmp(bn.p, be.p, bn.len) != 0, "NULL and '' encode the same");
    CHECK(round_trip(&bn, 0, &vn, 1, why, sizeof why) && round_trip(&be, 0, &ve, 1, why, sizeof why), "NULL/'' round trip: %s", why);
    /* and an empty JSON text is neither */
    moraine_value vj = v_json("", 0), vs = v_str("", 0);
    CHECK(!value_same(&vj, &vs), "test helper: JSON '' equals STR ''");
    mr_buf_free(&bn);
    mr_buf_free(&be);

    /* the documented bytes (docs/codec.md) */
    moraine_value small[] = {v_null(), v_int(-1), v_str("ab", 2), v_bool(0), v_bool(1), v_real(1.0), v_json("[]", 2), v_int(64)};
    static const uint8_t want[] = {0x05, 0x08, 0x00, 0x01, 0x01, 0x02, 0x02, 'a', 'b', 0x03, 0x04,
                                   0x05, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x06, 0x02, '[', ']', 0x01, 0x80, 0x01};
    encode_value(&b, 5, small, sizeof small / sizeof small[0]);
    CHECK(b.len == MR_HEADER_LEN + sizeof want && b.p[0] == MR_FORMAT_VERSION && memcmp(b.p + MR_HEADER_LEN, want, sizeof want) == 0,
          "the small row is not encoded as documented (%zu bytes)", b.len);
    {
        uint32_t crc = mr_crc32c(want, sizeof want);
        CHECK(b.p[1] == (crc & 0xFF) && b.p[2] == ((crc >> 8) & 0xFF) && b.p[3] == ((crc >> 16) & 0xFF) && b.p[4] == (crc >> 24),
              "the header does not hold the CRC-32C of the row (little-endian)");
        /* the CRC-32C check value: "123456789" -> e3069283 */
        CHECK(mr_crc32c((const uint8_t *)"123456789", 9) == 0xE3069283u, "crc32c(123456789) = %08x", mr_crc32c((const uint8_t *)"123456789", 9));
        /* every length up to 400 bytes, then every 37th up to 2 KiB and every
         * 211th up to 7 KiB (past three lanes of the longest, 3 KiB), from
         * every start offset mod 8 and a running CRC: each path (the table,
         * the 64-byte lanes, the lanes as long as the buffer,
         * the 64-byte blocks folded by VPCLMULQDQ) equals a plain
         * bitwise CRC-32C */
        static uint8_t buf[7168 + 8];
        for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131u + 7u + (i >> 5));
        int crc_bad = 0;
        for (size_t off = 0; off < 8; off++) {
            for (size_t len = 0; len <= 7168; len += (len < 400 ? 1 : len < 2048 ? 37 : 211)) {
                uint32_t init = (uint32_t)(len * 2654435761u + off);
                uint32_t c = ~init;
                for (size_t i = 0; i < len; i++) {
                    c ^= buf[off + i];
                    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
                }
                c = ~c;
                if (mr_crc32c_update(init, buf + off, len) != c) crc_bad++;
                for (int path = 0; path <= mr_crc32c_best(); path++) /* and every path this CPU has */
                    if (mr_crc32c_path(path, init, buf + off, len) != c) crc_bad++;
            }
        }
        CHECK(crc_bad == 0, "%d lengths where mr_crc32c_update differs from the bitwise CRC-32C", crc_bad);
    }

    /* zigzag: small magnitudes of either sign are short, extremes take 10 bytes */
    static const struct {
        int64_t v;
        size_t len;
    } zz[] = {{0, 1}, {-1, 1}, {1, 1}, {-64, 1}, {63, 1}, {64, 2}, {-65, 2}, {INT64_MAX, 10}, {INT64_MIN, 10}};
    for (size_t i = 0; i < sizeof zz / sizeof zz[0]; i++) {
        moraine_value v = v_int(zz[i].v);
        b.len = 0;
        mr_encode_row(&b, 0, &v, 1);
        CHECK(b.len == 2 + 1 + zz[i].len, "integer %lld takes %zu bytes, expected %zu", (long long)zz[i].v, b.len - 3, zz[i].len);
    }

    /* a boolean is 0 or 1 after a round trip, whatever nonzero it was */
    moraine_value b7 = v_bool(7);
    encode_value(&b, 0, &b7, 1);
    {
        uint8_t *c = exact_copy(b.p, b.len);
        const uint8_t *p = c;
        moraine_value out;
        int64_t ord;
        size_t got;
        CHECK_RC(mr_decode_header(&p, c + b.len, NOKEY, 0), 0);
        CHECK_RC(mr_decode_row(&p, c + b.len, &ord, &out, 1, &got), 0);
        CHECK(out.type == MORAINE_BOOL && out.i == 1, "BOOL 7 decoded as type %d value %lld", (int)out.type, (long long)out.i);
        free(c);
    }

    /* an unknown value type is refused when encoding */
    moraine_value odd = {.type = (moraine_type)42};
    b.len = 0;
    CHECK_RC(mr_encode_row(&b, 0, &odd, 1), MORAINE_EINVAL);
    mr_buf_free(&b);
}

static void test_header_and_tags(void)
{
    uint8_t *c = exact_copy("", 0);
    const uint8_t *p = c;
    CHECK_RC(mr_decode_header(&p, c, NOKEY, 0), MORAINE_ECORRUPT);
    free(c);
    for (int v = 0; v < 256; v++) {
        /* a header over an empty body: the CRC-32C of nothing is 0 */
        uint8_t hdr[MR_HEADER_LEN] = {(uint8_t)v, 0, 0, 0, 0};
        c = exact_copy(hdr, sizeof hdr);
        p = c;
        int rc = mr_decode_header(&p, c + sizeof hdr, NOKEY, 0);
        if (v == MR_FORMAT_VERSION) CHECK(rc == 0 && p == c + sizeof hdr, "version byte %d refused", v);
        else {
            CHECK(rc == MORAINE_ECORRUPT && p == c, "version byte %d accepted", v);
            CHECK(strstr(moraine_errmsg(), "version") != NULL, "message '%s' does not say version", moraine_errmsg());
        }
        free(c);
    }
    /* a varint not in its shortest form (fuzzer finding R1): one value, one encoding */
    {
        static const uint8_t overlong[][3] = {{0x80, 0x00, 0}, {0xFF, 0x00, 0}, {0x81, 0x80, 0x00}};
        static const size_t lens[] = {2, 2, 3};
        for (size_t i = 0; i < 3; i++) {
            uint8_t *q0 = exact_copy(overlong[i], lens[i]);
            const uint8_t *q = q0;
            uint64_t out;
            CHECK_RC(mr_get_uvarint(&q, q0 + lens[i], &out), MORAINE_ECORRUPT);
            CHECK(strstr(moraine_errmsg(), "shortest") != NULL, "message '%s' does not say why", moraine_errmsg());
            free(q0);
        }
        uint8_t zero = 0x00, *z = exact_copy(&zero, 1);
        const uint8_t *q = z;
        uint64_t out = 1;
        CHECK_RC(mr_get_uvarint(&q, z + 1, &out), 0);
        CHECK(out == 0, "the one-byte 0 decodes to %llu", (unsigned long long)out);
        free(z);
    }
    /* every single-bit flip of a stored value is caught by its checksum */
    {
        mr_buf fb = {0};
        moraine_value row[] = {v_int(42), v_str("partition", 9), v_null(), v_bool(1)};
        encode_value(&fb, 3, row, 4);
        int missed = 0;
        for (size_t i = 0; i < fb.len; i++)
            for (int bit = 0; bit < 8; bit++) {
                uint8_t *copy = exact_copy(fb.p, fb.len);
                copy[i] ^= (uint8_t)(1u << bit);
                const uint8_t *q = copy;
                if (mr_decode_header(&q, copy + fb.len, NOKEY, 0) != MORAINE_ECORRUPT) missed++;
                free(copy);
            }
        CHECK(missed == 0, "%d single-bit flips were not detected", missed);
        mr_buf_free(&fb);
    }

    /* every cell tag the format does not define */
    int bad = 0;
    for (int tag = MR_T_JSON + 1; tag < 256; tag++) {
        uint8_t row[] = {0x00, 0x01, (uint8_t)tag, 0, 0, 0, 0, 0, 0, 0, 0};
        c = exact_copy(row, sizeof row);
        p = c;
        moraine_value v;
        int64_t ord;
        size_t n;
        if (mr_decode_row(&p, c + sizeof row, &ord, &v, 1, &n) != MORAINE_ECORRUPT) bad++;
        free(c);
    }
    CHECK(bad == 0, "%d undefined cell tags accepted", bad);

    /* more columns than the caller has room for */
    moraine_value three[] = {v_int(1), v_int(2), v_int(3)}, out[3];
    mr_buf b = {0};
    mr_encode_row(&b, 0, three, 3);
    int64_t ord;
    size_t n;
    c = exact_copy(b.p, b.len);
    p = c;
    CHECK_RC(mr_decode_row(&p, c + b.len, &ord, out, 2, &n), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "columns") != NULL, "message '%s' does not mention columns", moraine_errmsg());
    p = c;
    CHECK_RC(mr_decode_row(&p, c + b.len, &ord, out, 3, &n), 0);
    CHECK_INT(n, 3);
    free(c);
    mr_buf_free(&b);
}

/* ---- random rows ------------------------------------------------------------------- */

typedef struct {
    moraine_value v[24];
    size_t n;
    int64_t ord;
    uint8_t bytes[24][300]; /* owned string bytes */
} rrow;

static void rand_row(rrow *r)
{
    static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, 63, 64, -64, -65, INT64_MAX - 1, INT64_MAX};
    r->n = check_below(25);
    switch (check_below(4)) {
    case 0: r->ord = (int64_t)check_below(1000); break;
    case 1: r->ord = (int64_t)check_rand(); break;
    case 2: r->ord = edges[check_below(sizeof edges / sizeof edges[0])]; break;
    default: r->ord = (int64_t)(check_rand() >> check_below(64)); break;
    }
    for (size_t i = 0; i < r->n; i++) {
        moraine_value *v = &r->v[i];
        memset(v, 0, sizeof *v);
        switch (check_below(6)) {
        case 0: v->type = MORAINE_NULL; break;
        case 1:
            v->type = MORAINE_INT;
            v->i = check_below(3) ? (int64_t)(check_rand() >> check_below(64)) : edges[check_below(sizeof edges / sizeof edges[0])];
            break;
        case 2:
        case 3: {
            v->type = check_below(4) ? MORAINE_STR : MORAINE_JSON;
            size_t len = check_below(5) ? check_below(20) : check_below(300); /* lengths over 127 need 2-byte varints */
            for (size_t j = 0; j < len; j++) r->bytes[i][j] = (uint8_t)(check_below(4) ? check_rand() : 0);
            v->s = (const char *)r->bytes[i];
            v->len = len;
            break;
        }
        case 4:
            v->type = MORAINE_BOOL;
            v->i = (int64_t)check_below(2);
            break;
        default:
            v->type = MORAINE_REAL;
            v->d = from_bits(check_below(4) ? check_rand() : (check_below(2) ? 0x8000000000000000ULL : 0x7FF0000000000001ULL));
            break;
        }
    }
}

static void test_random_rows(void)
{
    const int cases = 3000;
    static rrow r, r2;
    int bad = 0, badpair = 0, badprefix = 0;
    char why[256];
    mr_buf b = {0};
    for (int c = 0; c < cases; c++) {
        rand_row(&r);
        encode_value(&b, r.ord, r.v, r.n);
        if (!round_trip(&b, r.ord, r.v, r.n, why, sizeof why)) {
            bad++;
            if (bad <= 5) check_note("random row %d (%zu columns): %s", c, r.n, why);
        }

        /* two rows back to back decode one after the other (child groups rely on it) */
        rand_row(&r2);
        mr_buf two = {0};
        mr_encode_row(&two, r.ord, r.v, r.n);
        size_t first_len = two.len;
        mr_encode_row(&two, r2.ord, r2.v, r2.n);
        uint8_t *copy = exact_copy(two.p, two.len);
        const uint8_t *p = copy, *end = copy + two.len;
        moraine_value out[24];
        int64_t ord;
        size_t n;
        int ok = mr_decode_row(&p, end, &ord, out, 24, &n) == 0 && p == copy + first_len && n == r.n && ord == r.ord;
        for (size_t i = 0; ok && i < n; i++) ok = value_same(&out[i], &r.v[i]);
        ok = ok && mr_decode_row(&p, end, &ord, out, 24, &n) == 0 && p == end && n == r2.n && ord == r2.ord;
        for (size_t i = 0; ok && i < n; i++) ok = value_same(&out[i], &r2.v[i]);
        if (!ok) badpair++;
        free(copy);

        /* every strict prefix of a row is MORAINE_ECORRUPT; a prefix of the
         * pair that holds the whole first row decodes that row only */
        for (size_t len = 0; len < two.len; len++) {
            copy = exact_copy(two.p, len);
            p = copy;
            end = copy + len;
            int rc = mr_decode_row(&p, end, &ord, out, 24, &n);
            int good;
            if (len < first_len) good = rc == MORAINE_ECORRUPT && p == copy;
            else {
                good = rc == 0 && p == copy + first_len && n == r.n;
                if (good && p < end) good = mr_decode_row(&p, end, &ord, out, 24, &n) == MORAINE_ECORRUPT;
            }
            if (!good) {
                badprefix++;
                if (badprefix <= 5) check_note("row %d: prefix %zu of %zu (first row %zu bytes): rc %d", c, len, two.len, first_len, rc);
            }
            free(copy);
        }
        mr_buf_free(&two);
    }
    mr_buf_free(&b);
    CHECK(bad == 0, "%d of %d random rows did not round-trip", bad, cases);
    CHECK(badpair == 0, "%d of %d back-to-back row pairs did not decode in sequence", badpair, cases);
    CHECK(badprefix == 0, "%d truncations of %d random encodings decoded wrongly", badprefix, cases);

    /* header + row: every prefix, the header included */
    badprefix = 0;
    for (int c = 0; c < 500; c++) {
        rand_row(&r);
        encode_value(&b, r.ord, r.v, r.n);
        for (size_t len = 0; len < b.len; len++) {
            uint8_t *copy = exact_copy(b.p, len);
            const uint8_t *p = copy;
            moraine_value out[24];
            int64_t ord;
            size_t n;
            int rc = mr_decode_header(&p, copy + len, NOKEY, 0);
            if (rc == 0) rc = mr_decode_row(&p, copy + len, &ord, out, 24, &n);
            if (rc != MORAINE_ECORRUPT) badprefix++;
            free(copy);
        }
    }
    mr_buf_free(&b);
    CHECK(badprefix == 0, "%d truncated stored values were not MORAINE_ECORRUPT", badprefix);
}

/* Whatever the decoder returns for damaged input must describe memory inside
 * the buffer. */
static int sane_result(const moraine_value *out, size_t n, const uint8_t *buf, const uint8_t *end)
{
    for (size_t i = 0; i < n; i++) {
        switch (out[i].type) {
        case MORAINE_NULL:
        case MORAINE_INT:
        case MORAINE_REAL: break;
        case MORAINE_BOOL:
            if (out[i].i != 0 && out[i].i != 1) return 0;
            break;
        case MORAINE_STR:
        case MORAINE_JSON:
            if (out[i].len > (size_t)(end - buf)) return 0;
            if (out[i].len && ((const uint8_t *)out[i].s < buf || (const uint8_t *)out[i].s > end - out[i].len)) return 0;
            break;
        default: return 0;
        }
    }
    return 1;
}

static void test_flips(void)
{
    const int cases = 30000;
    static rrow r;
    int bad = 0;
    mr_buf b = {0};
    for (int c = 0; c < cases; c++) {
        rand_row(&r);
        b.len = 0;
        mr_encode_row(&b, r.ord, r.v, r.n);
        int flips = 1 + (int)check_below(3);
        for (int f = 0; f < flips && b.len; f++) {
            size_t at = check_below(b.len);
            if (check_below(2)) b.p[at] ^= (uint8_t)(1u << check_below(8));
            else b.p[at] = (uint8_t)check_rand();
        }
        uint8_t *copy = exact_copy(b.p, b.len);
        const uint8_t *p = copy, *end = copy + b.len;
        moraine_value out[24];
        int64_t ord;
        size_t n = 0;
        size_t cap = check_below(2) ? 24 : check_below(25);
        int rc = mr_decode_row(&p, end, &ord, out, cap, &n);
        int ok = (rc == 0 && p >= copy && p <= end && n <= cap && sane_result(out, n, copy, end)) || (rc == MORAINE_ECORRUPT && p == copy);
        if (!ok) {
            bad++;
            if (bad <= 5) check_note("flipped row %d: rc %d", c, rc);
        }
        free(copy);
    }
    mr_buf_free(&b);
    CHECK(bad == 0, "%d of %d rows with flipped bytes gave an unsafe result", bad, cases);

    /* pure garbage */
    bad = 0;
    for (int c = 0; c < 30000; c++) {
        uint8_t g[40];
        size_t len = check_below(sizeof g + 1);
        for (size_t j = 0; j < len; j++) g[j] = (uint8_t)(check_below(3) ? check_below(8) : check_rand());
        uint8_t *copy = exact_copy(g, len);
        const uint8_t *p = copy, *end = copy + len;
        moraine_value out[8];
        int64_t ord;
        size_t n = 0;
        int rc = mr_decode_row(&p, end, &ord, out, 8, &n);
        if (!((rc == 0 && p <= end && sane_result(out, n, copy, end)) || rc == MORAINE_ECORRUPT)) bad++;
        free(copy);
    }
    CHECK(bad == 0, "%d garbage buffers gave an unsafe result", bad);
}

/* A value is bound to its key (format 2): sealed under one key, it fails its
 * checksum when read under any key that differs in one byte, by a truncation
 * or by an extension, and passes under its own key. */
static void test_key_binding(void)
{
    moraine_value row[] = {v_int(7), v_str("a.parquet", 9), v_int(1024)};
    const uint8_t key[] = {'C', 0x14, 0x80, 0, 0, 0, 0, 0, 0, 0x09, 0x14, 0x80, 0, 0, 0, 0, 0, 0, 0x01,
                           0x14, 0x80, 0, 0, 0, 0, 0, 0, 0x07};
    mr_buf b = {0};
    if (mr_value_begin(&b) || mr_encode_row(&b, 3, row, 3)) abort();
    mr_value_seal(&b, 0, key, sizeof key);
    const uint8_t *p = b.p;
    CHECK_RC(mr_decode_header(&p, b.p + b.len, key, sizeof key), 0);
    int missed = 0, tried = 0;
    uint8_t k2[sizeof key + 1];
    for (size_t i = 0; i < sizeof key; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(k2, key, sizeof key);
            k2[i] ^= (uint8_t)(1u << bit);
            p = b.p;
            tried++;
            if (mr_decode_header(&p, b.p + b.len, k2, sizeof key) != MORAINE_ECORRUPT || p != b.p) missed++;
        }
        p = b.p;
        tried++;
        if (mr_decode_header(&p, b.p + b.len, key, i) != MORAINE_ECORRUPT) missed++; /* truncated key */
    }
    memcpy(k2, key, sizeof key);
    k2[sizeof key] = 0;
    p = b.p;
    tried++;
    if (mr_decode_header(&p, b.p + b.len, k2, sizeof key + 1) != MORAINE_ECORRUPT) missed++;
    CHECK(missed == 0, "%d of %d damaged keys passed the value's checksum", missed, tried);
    CHECK(strstr(moraine_errmsg(), "key") != NULL, "message '%s' does not say the key may be damaged", moraine_errmsg());
    mr_buf_free(&b);
}

int main(void)
{
    check_seed("test_codec");
    test_key_binding();
    test_uvarint();
    test_every_type();
    test_header_and_tags();
    test_random_rows();
    test_flips();
    return check_done();
}
