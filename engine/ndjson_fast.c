/*
 * ndjson_fast.c — the NDJSON import's fast path for DuckDB's flat rows
 * (ndjson.c reads every other line with jansson).
 */
#include "ndjson_internal.h"
#include <stdlib.h>
#include <string.h>

/* DuckDB writes each row as one flat object of scalars. mr_nd_fast_row reads such
 * a line straight into moraine values pointing into the line: keys and
 * strings without a backslash or a control character (UTF-8 checked),
 * integers of at most 18 digits, null, true, false. Anything else (an
 * escape, a real, a longer integer, a nested value, a duplicate or unknown
 * key, a missing column, malformed JSON, a table's first row when it is read
 * first, the columns not known yet) returns 0
 * and the line goes through jansson as before, so every value, refusal and
 * message is the one jansson's path gives. */

static const char *fp_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* a string at p (after its opening quote): its bytes up to the closing quote.
 * Eight bytes at a time while none is a quote, a backslash, a control
 * character or above 0x7f (bit tricks: a byte of x ^ '"' that is zero, one
 * of x below 0x20, may flag the bytes after it too; those go one by one). */
static const char *fp_str(const char *p, const char *e, const char **s, size_t *n)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const char *q = p;
    int high = 0;
    for (;;) {
        while (e - q >= 8) {
            uint64_t x, qu, bs;
            memcpy(&x, q, 8);
            qu = x ^ (ones * '"');
            bs = x ^ (ones * '\\');
            if ((((qu - ones) & ~qu) | ((bs - ones) & ~bs) | ((x - ones * 0x20) & ~x) | x) & highs) break;
            q += 8;
        }
        if (q == e) return NULL;
        unsigned char c = (unsigned char)*q;
        if (c == '"') break;
        if (c == '\\' || c < 0x20) return NULL;
        high |= c >= 0x80;
        q++;
    }
    if (high && !mr_utf8_valid(p, (size_t)(q - p))) return NULL;
    *s = p;
    *n = (size_t)(q - p);
    return q + 1;
}

/* memcmp(a, b, n) == 0 for a column name (a few to a few dozen bytes): eight bytes at a time */
static int same_bytes(const char *a, const char *b, size_t n)
{
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static int fp_delim(const char *p, const char *e)
{
    return p == e || *p == ',' || *p == '}' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r';
}

int mr_nd_fast_row(table *t, const char *p, size_t len, moraine_value *vals)
{
    const char *e = p + len;
    size_t n = t->ncols;
    if (n == 0 || n > 256) return 0;
    if (!t->collen) {
        /* (the columns are set once, by the table's first row or moraine_import_rows) */
        if (!(t->collen = malloc(n * sizeof *t->collen + n))) return 0;
        t->colplain = (unsigned char *)(t->collen + n);
        for (size_t c = 0; c < n; c++) {
            const char *k = t->cols[c];
            size_t kl = strlen(k), j = 0;
            while (j < kl && k[j] != '"' && k[j] != '\\' && (unsigned char)k[j] >= 0x20) j++;
            t->collen[c] = kl;
            t->colplain[c] = j == kl && mr_utf8_valid(k, kl);
        }
    }
    unsigned char seen[256];
    memset(seen, 0, n);
    p = fp_ws(p, e);
    if (p == e || *p != '{') return 0;
    p = fp_ws(p + 1, e);
    for (size_t i = 0;; i++) {
        if (i == n || p == e || *p != '"') return 0;
        p++;
        /* the column: DuckDB writes them in the table's order, so the key is
         * most likely column i's name, which (when plain: no quote,
         * backslash or control character, valid UTF-8) is what fp_str
         * would read if the bytes match up to a quote */
        size_t c = i, kl = t->collen[i];
        if (t->colplain[i] && (size_t)(e - p) > kl && p[kl] == '"' && same_bytes(p, t->cols[i], kl)) {
            p += kl + 1;
        } else {
            const char *k;
            size_t kn;
            if (!(p = fp_str(p, e, &k, &kn))) return 0;
            for (c = 0; c < n; c++)
                if (t->collen[c] == kn && memcmp(t->cols[c], k, kn) == 0) break;
            if (c == n) return 0;
        }
        if (seen[c]) return 0;
        seen[c] = 1;
        p = fp_ws(p, e);
        if (p == e || *p != ':') return 0;
        p = fp_ws(p + 1, e);
        if (p == e) return 0;
        moraine_value *v = &vals[c];
        memset(v, 0, sizeof *v);
        if (*p == '"') {
            v->type = MORAINE_STR;
            if (!(p = fp_str(p + 1, e, &v->s, &v->len))) return 0;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            int neg = *p == '-';
            const char *d = p + neg, *q = d;
            uint64_t u = 0;
            while (q < e && *q >= '0' && *q <= '9') u = u * 10 + (uint64_t)(*q++ - '0');
            size_t nd = (size_t)(q - d);
            if (nd == 0 || nd > 18 || (nd > 1 && *d == '0') || !fp_delim(q, e)) return 0;
            v->type = MORAINE_INT;
            v->i = neg ? -(int64_t)u : (int64_t)u;
            p = q;
        } else if ((size_t)(e - p) >= 4 && memcmp(p, "null", 4) == 0 && fp_delim(p + 4, e)) {
            v->type = MORAINE_NULL;
            p += 4;
        } else if ((size_t)(e - p) >= 4 && memcmp(p, "true", 4) == 0 && fp_delim(p + 4, e)) {
            v->type = MORAINE_BOOL;
            v->i = 1;
            p += 4;
        } else if ((size_t)(e - p) >= 5 && memcmp(p, "false", 5) == 0 && fp_delim(p + 5, e)) {
            v->type = MORAINE_BOOL;
            p += 5;
        } else {
            return 0;
        }
        p = fp_ws(p, e);
        if (p == e) return 0;
        if (*p == '}') {
            if (i + 1 != n) return 0;
            break;
        }
        if (*p != ',') return 0;
        p = fp_ws(p + 1, e);
    }
    /* every key named a column not named before (a key named twice, which
     * jansson refuses, went to jansson), and there are ncols of them */
    return fp_ws(p + 1, e) == e;
}
