/*
 * fuzz_key.c — libFuzzer target for the tuple key codec (engine/key.c,
 * docs/keyspace.md).
 *
 * The input is one key: a subspace byte, then tuple elements decoded with
 * mr_key_next until the end. Checks:
 *   - mr_key_describe never overruns its buffer and always NUL-terminates it
 *     (also with a tiny buffer, to exercise truncation);
 *   - every mr_key_next call that succeeds advances, stays inside the input,
 *     and its element re-encodes (mr_key_value) to exactly the bytes it was
 *     decoded from; when the whole key decodes, the re-encoded key equals the
 *     input byte for byte (the encoding is canonical);
 *   - order: the input is also cut in two at position data[0] % size; when
 *     both halves decode as keys, memcmp order (LMDB's, shorter-prefix first)
 *     equals tuple order (subspace byte, then elements: NULL < string < int,
 *     ints by value, strings bytewise, a prefix tuple first).
 * A violated check calls abort() (a real bug in the key codec).
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ELEMS 256

typedef struct {
    int sub;             /* subspace byte, -1 for an empty key */
    size_t n;
    moraine_value v[MAX_ELEMS];
    mr_buf strs[MAX_ELEMS]; /* owned copies of decoded strings */
    int ok;              /* decoded to the end */
    int kept;            /* every element kept in v (for the order check) */
} tuple;

static void tuple_free(tuple *t)
{
    for (size_t i = 0; i < t->n; i++) mr_buf_free(&t->strs[i]);
}

static void fail(const char *what, const uint8_t *data, size_t size)
{
    fprintf(stderr, "fuzz_key: %s (key of %zu bytes:", what, size);
    for (size_t i = 0; i < size && i < 64; i++) fprintf(stderr, " %02x", data[i]);
    fprintf(stderr, "%s)\n", size > 64 ? " ..." : "");
    abort();
}

/* Decodes data[0..size) as a key into t, checking the per-element round trip. */
static void decode(const uint8_t *data, size_t size, tuple *t)
{
    memset(t, 0, sizeof *t);
    t->sub = size ? data[0] : -1;
    if (size == 0) {
        t->ok = t->kept = 1;
        return;
    }
    const uint8_t *p = data + 1, *end = data + size;
    mr_buf scratch = {0}, re = {0};
    t->ok = t->kept = 1;
    while (p < end) {
        const uint8_t *before = p;
        moraine_value v;
        if (mr_key_next(&p, end, &v, &scratch) != 0) {
            if (p != before) fail("mr_key_next failed but moved the cursor", data, size);
            t->ok = 0;
            break;
        }
        if (p <= before || p > end) fail("mr_key_next did not advance within the key", data, size);
        re.len = 0;
        if (mr_key_value(&re, &v) != 0) fail("a decoded element does not re-encode", data, size);
        if (re.len != (size_t)(p - before) || memcmp(re.p, before, re.len) != 0)
            fail("a decoded element re-encodes to other bytes", data, size);
        if (t->n < MAX_ELEMS) {
            moraine_value *dst = &t->v[t->n];
            *dst = v;
            if (v.type == MORAINE_STR) {
                if (mr_buf_put(&t->strs[t->n], v.s, v.len)) abort();
                dst->s = (const char *)t->strs[t->n].p;
            }
            t->n++;
        } else {
            t->kept = 0; /* too many elements to keep for the order check */
        }
    }
    mr_buf_free(&scratch);
    mr_buf_free(&re);
}

static int sgn(long long x) { return (x > 0) - (x < 0); }

static int rank(moraine_type t) { return t == MORAINE_NULL ? 0 : t == MORAINE_STR ? 1 : 2; }

static int elem_cmp(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return sgn(rank(a->type) - rank(b->type));
    if (a->type == MORAINE_INT) return (a->i > b->i) - (a->i < b->i);
    if (a->type == MORAINE_STR) {
        size_t m = a->len < b->len ? a->len : b->len;
        int c = m ? memcmp(a->s, b->s, m) : 0;
        if (c) return sgn(c);
        return (a->len > b->len) - (a->len < b->len);
    }
    return 0;
}

static int tuple_cmp(const tuple *a, const tuple *b)
{
    if (a->sub != b->sub) return sgn(a->sub - b->sub);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        int c = elem_cmp(&a->v[i], &b->v[i]);
        if (c) return c;
    }
    return (a->n > b->n) - (a->n < b->n);
}

/* LMDB's default comparison: memcmp over the shorter length, then length. */
static int lmdb_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t m = na < nb ? na : nb;
    int c = m ? memcmp(a, b, m) : 0;
    if (c) return sgn(c);
    return (na > nb) - (na < nb);
}

/* Wider heap redzones than ASan's default 16 bytes, so that a small negative
 * index (v[-1] of a short array) lands in one and is caught every time. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "redzone=64"; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* describe: a roomy buffer and a tiny one (truncation) */
    static const size_t lens[] = {1, 2, 7, 16, 600};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char *out = malloc(lens[i]);
        if (!out) abort();
        memset(out, 'x', lens[i]);
        mr_key_describe(data, size, out, lens[i]);
        if (!memchr(out, 0, lens[i])) fail("mr_key_describe left its buffer unterminated", data, size);
        free(out);
    }

    tuple *whole = malloc(sizeof *whole);
    if (!whole) abort();
    decode(data, size, whole);
    if (whole->ok && whole->kept && size > 0) {
        mr_buf re = {0};
        if (mr_buf_byte(&re, data[0])) abort();
        for (size_t i = 0; i < whole->n; i++)
            if (mr_key_value(&re, &whole->v[i])) abort();
        if (re.len != size || memcmp(re.p, data, size) != 0) fail("the decoded key re-encodes to other bytes", data, size);
        mr_buf_free(&re);
    }
    tuple_free(whole);
    free(whole);

    /* order: two keys cut from the input */
    if (size >= 2) {
        size_t cut = data[0] % size;
        tuple *a = malloc(sizeof *a), *b = malloc(sizeof *b);
        if (!a || !b) abort();
        decode(data, cut, a);
        decode(data + cut, size - cut, b);
        if (a->ok && a->kept && b->ok && b->kept) {
            int bytes = lmdb_cmp(data, cut, data + cut, size - cut);
            int tup = tuple_cmp(a, b);
            if (bytes != tup) {
                fprintf(stderr, "fuzz_key: cut at %zu: memcmp order %d, tuple order %d\n", cut, bytes, tup);
                fail("key byte order differs from tuple order", data, size);
            }
        }
        tuple_free(a);
        tuple_free(b);
        free(a);
        free(b);
    }
    return 0;
}
