/*
 * fuzz_record.c — libFuzzer target for the value codec (engine/codec.c,
 * docs/codec.md).
 *
 * The first input byte selects the mode, the rest is the value:
 *   even: the rest is a whole stored value (version byte, CRC-32C, row,
 *         child groups) and goes through mr_decode_header as it is, so the
 *         checksum refuses almost everything the fuzzer makes up;
 *   odd:  the rest is a value body (row and child groups): it is sealed
 *         first (mr_value_begin + the bytes + mr_value_seal), which must
 *         then pass mr_decode_header, so the fuzzer reaches the row decoder
 *         past the checksum.
 * Then mr_decode_row (capacity 64) decodes the row, and the child groups
 * are walked: rel_id, nrows, nbytes (mr_get_uvarint), then nrows rows, each
 * after its length (mr_child_row_span), that must take exactly that length
 * and stay within nbytes; a child row (format 5) is its ord's difference and
 * as many cells as its table has columns less its parent-key columns, here
 * rel_id % 13 stored cells and (rel_id / 13) % 3 parent-key columns at a
 * place rel_id / 39 picks, decoded from fixed parent cells and left out
 * again when re-encoded.
 *
 * Round trip: every row that decodes is re-encoded with mr_encode_row (a
 * child row, with its length, by mr_encode_child_row after the ord of the row
 * before it) and must give back exactly the bytes it was decoded from (the
 * encoding is canonical: the decoder refuses varints not in their shortest
 * form). A mismatch calls abort().
 *
 * Projection: every row (decodable or not) is also read through a projection
 * (engine/project.c) chosen from the mode byte's other 7 bits and the row's
 * column count (columns in some order, a match column with values among 0-2
 * or an extra column); the fast pass (mr_proj_row, mr_proj_child_row) must
 * give what the plain pass (mr_proj_row_ref, mr_proj_child_row_ref) gives:
 * the same return, message, end, ord and values; a child row the fast pass
 * filters out may instead be left at its end, which its length gives,
 * unwalked. A difference calls abort().
 */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP 64

static void dump_fail(const char *what, const uint8_t *span, size_t n, const mr_buf *re)
{
    fprintf(stderr, "fuzz_record: %s\n  decoded span (%zu bytes):", what, n);
    for (size_t i = 0; i < n && i < 96; i++) fprintf(stderr, " %02x", span[i]);
    fprintf(stderr, "%s\n  re-encoded   (%zu bytes):", n > 96 ? " ..." : "", re->len);
    for (size_t i = 0; i < re->len && i < 96; i++) fprintf(stderr, " %02x", re->p[i]);
    fprintf(stderr, "%s\n", re->len > 96 ? " ..." : "");
    abort();
}

static unsigned proj_seed;
static char proj_names[CAP][8];
static const char *proj_np[CAP];

static int same_value(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case MORAINE_INT:
    case MORAINE_BOOL: return a->i == b->i;
    case MORAINE_STR:
    case MORAINE_JSON: return a->len == b->len && a->s == b->s;
    case MORAINE_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    default: return 1;
    }
}

/* The fast and the plain pass of a projection over the row at @p agree; a
 * @child row (@end its length's end) has @nchild columns and follows the row
 * of ord @prev. */
static void proj_diff(const uint8_t *p, const uint8_t *end, int child, size_t nchild, int64_t prev)
{
    if (!proj_np[0])
        for (int i = 0; i < CAP; i++) {
            snprintf(proj_names[i], sizeof proj_names[i], "c%d", i);
            proj_np[i] = proj_names[i];
        }
    const uint8_t *q = p;
    uint64_t o, n;
    if (child) n = nchild ? nchild : 4;
    else if (mr_get_uvarint(&q, end, &o) || mr_get_uvarint(&q, end, &n) || n == 0 || n > CAP) n = 4;
    (void)o;
    mr_rel r;
    memset(&r, 0, sizeof r);
    r.info.name = "f";
    r.info.ncols = (size_t)n;
    r.info.colnames = proj_np;
    uint64_t s = (uint64_t)proj_seed * 0x9E3779B97F4A7C15ULL + n + 1;
    const char *cols[CAP];
    size_t nc = 0, rot = (size_t)(s % n);
    for (size_t i = 0; i < n; i++)
        if ((s >> (i % 61)) & 1) cols[nc++] = proj_np[(i + rot) % n];
    static const int64_t mv[3] = {0, 1, 2};
    int match = (s >> 61) & 1;
    mr_proj_rel pr;
    if (mr_proj_rel_build(&r, cols, nc, match ? proj_np[(s >> 8) % n] : NULL, mv, (size_t)((s >> 16) % 4), match ? -1 : (int)((s >> 24) % (n + 1)) - 1,
                          NULL, &pr))
        abort();
    moraine_value of[CAP + 1], orf[CAP + 1], xf, xr;
    memset(of, 0, sizeof of);
    memset(orf, 0, sizeof orf);
    memset(&xf, 0, sizeof xf);
    memset(&xr, 0, sizeof xr);
    const uint8_t *pf = p, *pr_ = p;
    int64_t ordf = 0, ordr = 0;
    char mf[512];
    if (child && nchild == 0) {
        mr_proj_rel_free(&pr);
        return; /* a table of no column takes no projection */
    }
    int rf = child ? mr_proj_child_row(&pr, &pf, end, prev, &ordf, of, &xf) : mr_proj_row(&pr, &pf, end, &ordf, of, &xf);
    snprintf(mf, sizeof mf, "%s", rf < 0 ? moraine_errmsg() : "");
    if (child && rf == 0 && pf == end) { /* filtered out by the fast pass: left at its end, unwalked (the slow pass walks it,
                                            and may stop elsewhere: its caller then reports the row's length) */
        mr_proj_rel_free(&pr);
        return;
    }
    int rr = child ? mr_proj_child_row_ref(&pr, &pr_, end, prev, &ordr, orf, &xr) : mr_proj_row_ref(&pr, &pr_, end, &ordr, orf, &xr);
    int same = rf == rr;
    if (same && rf < 0) same = strcmp(mf, moraine_errmsg()) == 0;
    if (same && rf >= 0) same = pf == pr_ && ordf == ordr;
    for (size_t i = 0; same && rf == 1 && i < pr.nout; i++) same = same_value(&of[i], &orf[i]);
    if (same && rf == 1) same = same_value(&xf, &xr);
    if (!same) {
        fprintf(stderr, "fuzz_record: the projection's fast pass returned %d (%s), the plain pass %d (%s)\n", rf, mf, rr,
                rr < 0 ? moraine_errmsg() : "");
        abort();
    }
    mr_proj_rel_free(&pr);
}

/* Decodes one row at *p (up to end) and checks its round trip. Returns 0 or
 * the decoder's error. */
static int row_roundtrip(const uint8_t **p, const uint8_t *end)
{
    proj_diff(*p, end, 0, 0, 0);
    moraine_value vals[CAP];
    int64_t ord;
    size_t n = 0;
    const uint8_t *start = *p;
    int rc = mr_decode_row(p, end, &ord, vals, CAP, &n);
    if (rc) {
        if (*p != start) {
            fprintf(stderr, "fuzz_record: mr_decode_row failed but moved the cursor\n");
            abort();
        }
        return rc;
    }
    if (*p <= start || *p > end || n > CAP) {
        fprintf(stderr, "fuzz_record: mr_decode_row left the cursor outside the value or reported %zu columns\n", n);
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        const moraine_value *v = &vals[i];
        if ((v->type == MORAINE_STR || v->type == MORAINE_JSON) && v->len &&
            ((const uint8_t *)v->s < start || (const uint8_t *)v->s + v->len > *p)) {
            fprintf(stderr, "fuzz_record: column %zu points outside the decoded row\n", i);
            abort();
        }
    }
    mr_buf re = {0};
    if (mr_encode_row(&re, ord, vals, n)) {
        fprintf(stderr, "fuzz_record: a decoded row does not re-encode: %s\n", moraine_errmsg());
        abort();
    }
    size_t span = (size_t)(*p - start);
    if (re.len != span || memcmp(re.p, start, span) != 0) dump_fail("a decoded row re-encodes to other bytes", start, span, &re);
    mr_buf_free(&re);
    return 0;
}

/* The child row whose length begins at @at (the row's bytes from *p to
 * @rend, after its length) of @nc cells, after the row of ord *prev: it
 * decodes to exactly @rend, and re-encoded after *prev it gives back the
 * bytes from @at. Returns 0 (*prev its ord) or the decoder's error. */
static int child_roundtrip(const uint8_t *at, const uint8_t **p, const uint8_t *rend, size_t nc, int64_t *prev, const mr_keymap *km)
{
    if (!km->n) proj_diff(*p, rend, 1, nc, *prev);
    /* the parent-key cells @km's columns take (store format 5): not stored */
    static const moraine_value pkey[MR_MAX_KEYCOLS] = {{.type = MORAINE_INT, .i = -7}, {.type = MORAINE_STR, .s = "k", .len = 1},
                                                       {.type = MORAINE_NULL}, {.type = MORAINE_INT, .i = INT64_MIN}};
    moraine_value vals[CAP];
    int64_t ord;
    const uint8_t *start = *p;
    nc += (size_t)km->n;
    int rc = mr_decode_child_row(p, rend, "f", *prev, &ord, vals, nc, km, pkey, NULL);
    if (rc) {
        if (*p != start) {
            fprintf(stderr, "fuzz_record: mr_decode_child_row failed but moved the cursor\n");
            abort();
        }
        return rc;
    }
    if (*p != rend) {
        fprintf(stderr, "fuzz_record: mr_decode_child_row did not stop at the row's end\n");
        abort();
    }
    mr_buf re = {0};
    for (int j = 0; j < km->n; j++)
        if (vals[km->ccol[j]].type != pkey[j].type || vals[km->ccol[j]].i != pkey[j].i) {
            fprintf(stderr, "fuzz_record: a parent-key column of a decoded child row is not its parent's cell\n");
            abort();
        }
    if (mr_encode_child_row(&re, *prev, ord, vals, nc, km)) {
        fprintf(stderr, "fuzz_record: a decoded child row does not re-encode: %s\n", moraine_errmsg());
        abort();
    }
    size_t span = (size_t)(rend - at);
    if (re.len != span || memcmp(re.p, at, span) != 0) dump_fail("a decoded child row re-encodes to other bytes", at, span, &re);
    mr_buf_free(&re);
    *prev = ord;
    return 0;
}

/* Wider heap redzones than ASan's default 16 bytes, so that a small negative
 * index (v[-1] of a short array) lands in one and is caught every time. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "redzone=64"; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    int sealed = data[0] & 1;
    proj_seed = data[0] >> 1;
    mr_buf val = {0};
    if (sealed) {
        if (mr_value_begin(&val) || mr_buf_put(&val, data + 1, size - 1)) abort();
        mr_value_seal(&val, 0, (const uint8_t *)"k", 1);
    } else {
        if (mr_buf_put(&val, data + 1, size - 1)) abort();
    }
    /* an exact-size heap copy, so ASan catches any read past the end */
    uint8_t *buf = malloc(val.len ? val.len : 1);
    if (!buf) abort();
    if (val.len) memcpy(buf, val.p, val.len);
    size_t len = val.len;
    mr_buf_free(&val);

    const uint8_t *p = buf, *end = buf + len;
    int rc = mr_decode_header(&p, end, (const uint8_t *)"k", 1);
    if (sealed && rc) {
        fprintf(stderr, "fuzz_record: a freshly sealed value fails its header check: %s\n", moraine_errmsg());
        abort();
    }
    if (rc == 0 && row_roundtrip(&p, end) == 0) {
        /* child groups */
        while (p < end) {
            uint64_t rel, nrows, nbytes;
            if (mr_get_uvarint(&p, end, &rel) || mr_get_uvarint(&p, end, &nrows) || mr_get_uvarint(&p, end, &nbytes)) break;
            if (nbytes > (uint64_t)(end - p)) break;
            const uint8_t *gend = p + nbytes;
            uint64_t i;
            int64_t prev = 0;
            /* rel / 13 picks up to two parent-key columns (store format 5),
             * anywhere among the row's columns: left out of the stored cells */
            mr_keymap km = {0};
            size_t stored = (size_t)(rel % 13), n2 = (size_t)((rel / 13) % 3);
            for (size_t j = 0; j < n2; j++) { /* adjacent, from any place in the row */
                km.ccol[km.n] = (int)((rel / 39) % (stored + 1) + j);
                km.pcol[km.n] = (int)j;
                km.n++;
            }
            for (i = 0; i < nrows && p < gend; i++) { /* each row after its length (format 5) */
                const uint8_t *rend, *at = p;
                if (mr_child_row_span(&p, gend, &rend) || child_roundtrip(at, &p, rend, stored, &prev, &km)) break;
            }
            if (i < nrows || p != gend) break; /* inconsistent group (moraine_verify reports these) */
        }
    }
    free(buf);
    return 0;
}
