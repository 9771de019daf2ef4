/*
 * key.c — order-preserving tuple encoding of keys (docs/keyspace.md).
 *
 * A key is a subspace byte followed by tuple elements. Each element starts
 * with a type byte so that LMDB's memcmp order is the tuple order:
 *   NULL   0x00
 *   string 0x02, the bytes with 0x00 written as 0x00 0xFF, then 0x00
 *   int64  0x14, 8 bytes big-endian of the value with its sign bit flipped
 * Flipping the sign bit maps INT64_MIN..INT64_MAX onto 0..UINT64_MAX in
 * order, so negative integers sort before positive ones. The string escape
 * keeps "a" < "a\0" < "ab" and lets a prefix never run into the next element.
 */
#include "internal.h"
#include <stdio.h>
#include <string.h>

int mr_key_int(mr_buf *b, int64_t v)
{
    int rc = mr_buf_reserve(b, MR_KEY_INT_LEN);
    if (rc) return rc;
    uint64_t u = (uint64_t)v ^ 0x8000000000000000ULL;
    uint8_t *p = b->p + b->len;
    p[0] = MR_K_INT;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    u = __builtin_bswap64(u); /* big-endian: one store */
    memcpy(p + 1, &u, 8);
#else
    for (int i = 0; i < 8; i++) p[1 + i] = (uint8_t)(u >> (56 - 8 * i));
#endif
    b->len += MR_KEY_INT_LEN;
    return 0;
}

int mr_key_str(mr_buf *b, const char *s, size_t n)
{
    int rc = mr_buf_byte(b, MR_K_STR);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = mr_buf_byte(b, (uint8_t)s[i]);
        if (!rc && s[i] == 0) rc = mr_buf_byte(b, 0xFF);
    }
    return rc ? rc : mr_buf_byte(b, 0x00);
}

/* Encodes a value as a key element. Only NULL, integers and strings are key
 * material; anything else is refused. */
int mr_key_value(mr_buf *b, const moraine_value *v)
{
    switch (v->type) {
    case MORAINE_NULL: return mr_buf_byte(b, MR_K_NULL);
    case MORAINE_INT: return mr_key_int(b, v->i);
    case MORAINE_STR: return mr_key_str(b, v->s, v->len);
    default: return mr_err(MORAINE_EINVAL, "a key column holds a value that is neither NULL, an integer nor a string");
    }
}

int mr_key_next(const uint8_t **pp, const uint8_t *end, moraine_value *out, mr_buf *scratch)
{
    const uint8_t *p = *pp;
    if (p >= end) return mr_err(MORAINE_ECORRUPT, "key: truncated (no element where one was expected)");
    memset(out, 0, sizeof *out);
    switch (*p) {
    case MR_K_NULL:
        out->type = MORAINE_NULL;
        *pp = p + 1;
        return 0;
    case MR_K_INT: {
        if (end - p < MR_KEY_INT_LEN) return mr_err(MORAINE_ECORRUPT, "key: truncated integer element");
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = (u << 8) | p[1 + i];
        out->type = MORAINE_INT;
        out->i = (int64_t)(u ^ 0x8000000000000000ULL);
        *pp = p + MR_KEY_INT_LEN;
        return 0;
    }
    case MR_K_STR: {
        scratch->len = 0;
        p++;
        for (;;) {
            if (p >= end) return mr_err(MORAINE_ECORRUPT, "key: unterminated string element");
            if (*p == 0) {
                if (p + 1 < end && p[1] == 0xFF) {
                    if (mr_buf_byte(scratch, 0)) return MORAINE_ENOMEM;
                    p += 2;
                    continue;
                }
                p++;
                break;
            }
            if (mr_buf_byte(scratch, *p)) return MORAINE_ENOMEM;
            p++;
        }
        out->type = MORAINE_STR;
        out->s = (const char *)scratch->p;
        out->len = scratch->len;
        *pp = p;
        return 0;
    }
    default:
        return mr_err(MORAINE_ECORRUPT, "key: unknown element type byte 0x%02x", *p);
    }
}

/* Human-readable rendering of a key for error messages, e.g. C(7,1,42); an
 * empty key is "(empty key)", a subspace byte that is not printable ASCII
 * \xNN (a damaged store). */
void mr_key_describe(const uint8_t *k, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    const uint8_t *p = k, *end = k + n;
    mr_buf scratch = {0};
    if (outlen == 0) return;
    out[0] = 0;
    if (n == 0) {
        snprintf(out, outlen, "(empty key)");
        return;
    }
    if (*p > 0x20 && *p < 0x7F && *p != '\\') o += (size_t)snprintf(out + o, outlen - o, "%c(", *p);
    else o += (size_t)snprintf(out + o, outlen - o, "\\x%02x(", *p);
    p++;
    int first = 1;
    while (p < end && o < outlen) {
        moraine_value v;
        if (mr_key_next(&p, end, &v, &scratch)) {
            o += (size_t)snprintf(out + o, outlen - o, "%s<corrupt>", first ? "" : ",");
            break;
        }
        if (v.type == MORAINE_NULL)
            o += (size_t)snprintf(out + o, outlen - o, "%sNULL", first ? "" : ",");
        else if (v.type == MORAINE_INT)
            o += (size_t)snprintf(out + o, outlen - o, "%s%lld", first ? "" : ",", (long long)v.i);
        else {
            /* printable ASCII as is, any other byte as \xNN: the text stays valid UTF-8 */
            o += (size_t)snprintf(out + o, outlen - o, "%s'", first ? "" : ",");
            for (size_t i = 0; i < v.len && i < 40 && o + 5 < outlen; i++) {
                unsigned char ch = (unsigned char)v.s[i];
                if (ch >= 0x20 && ch < 0x7F && ch != '\\') out[o++] = (char)ch;
                else o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
            }
            if (o < outlen) o += (size_t)snprintf(out + o, outlen - o, "'");
        }
        first = 0;
    }
    if (o < outlen) snprintf(out + o, outlen - o, ")");
    mr_buf_free(&scratch);
}
