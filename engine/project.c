/*
 * project.c — projected decoding (moraine_scan_project, moraine_cursor_child).
 *
 * A projection maps each stored column of a relation to an output slot or to
 * -1; one pass over a row's cells decodes the mapped ones and skips the
 * others by their length (an INT's varint bytes, a STR's length prefix), so
 * a cell not asked for costs a tag test and no store. The map is also kept
 * as steps (skip k cells, decode one), which the fast pass below walks with
 * no call per cell; it falls back to the plain pass (decode_row) for anything
 * it does not take, so every error is found and worded by the plain pass.
 * Child groups of relations not asked for are skipped whole by their nbytes;
 * rows of a child filtered on one column (the stats of the columns a planner
 * wants) are dropped as soon as that cell is read, their other cells skipped.
 * The value's checksum is verified by the caller (read.c) before any of this:
 * every byte a read returns or decides on is covered by it.
 */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

static int i64cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int mr_proj_rel_build(mr_rel *r, const char *const *cols, size_t ncols, const char *match_col, const int64_t *match, size_t nmatch,
                      int extra_col, const mr_keymap *km, mr_proj_rel *out)
{
    memset(out, 0, sizeof *out);
    out->rel = r;
    out->match_col = -1;
    out->extra_col = -1;
    out->match_key = -1;
    if (km) out->km = *km;
    const size_t nall = r->info.ncols;
    out->ncols = nall - (size_t)out->km.n;
    out->map = malloc((nall ? nall : 1) * sizeof *out->map);
    if (!out->map) return mr_err(MORAINE_ENOMEM, "out of memory");
    int *map = out->map; /* by column first; by stored cell below */
    for (size_t i = 0; i < nall; i++) map[i] = cols ? MR_PROJ_SKIP : (int)i;
    out->nout = cols ? ncols : nall;
    for (size_t i = 0; cols && i < ncols; i++) {
        int c = cols[i] ? moraine_column_index(&r->info, cols[i]) : -1;
        if (c < 0) return mr_err(MORAINE_ENOTFOUND, "%s has no column '%s'", r->info.name, cols[i] ? cols[i] : "(NULL)");
        if (map[c] >= 0) return mr_err(MORAINE_EINVAL, "%s: column '%s' named twice in a projection", r->info.name, cols[i]);
        map[c] = (int)i;
    }
    if (match_col) {
        out->match_col = moraine_column_index(&r->info, match_col);
        if (out->match_col < 0) return mr_err(MORAINE_ENOTFOUND, "%s has no column '%s'", r->info.name, match_col);
        out->match = malloc((nmatch ? nmatch : 1) * sizeof *out->match);
        if (!out->match) return mr_err(MORAINE_ENOMEM, "out of memory");
        if (nmatch) memcpy(out->match, match, nmatch * sizeof *match);
        out->nmatch = nmatch;
        qsort(out->match, nmatch, sizeof *out->match, i64cmp);
        extra_col = out->match_col;
    }
    /* the columns a child row does not store: asked ones are filled from the
     * parent's key cells, a filter on one is decided once per group; the
     * map and the extra and match columns then count stored cells */
    if (out->km.n) {
        size_t at = 0;
        int kj = 0;
        for (size_t i = 0; i < nall; i++) {
            if (kj < out->km.n && (size_t)out->km.ccol[kj] == i) {
                if (map[i] >= 0) {
                    out->fill[out->nfill].slot = map[i];
                    out->fill[out->nfill++].j = kj;
                }
                if ((int)i == out->match_col) out->match_key = kj;
                if ((int)i == extra_col) extra_col = -1;
                kj++;
                continue;
            }
            if ((int)i == out->match_col) out->match_col = (int)at;
            if ((int)i == extra_col) extra_col = (int)at;
            map[at++] = map[i];
        }
        if (out->match_key >= 0) out->match_col = -1;
    }
    const size_t n = out->ncols;
    if (extra_col >= 0 && (size_t)extra_col < n) {
        out->extra_col = extra_col;
        if (map[extra_col] == MR_PROJ_SKIP) map[extra_col] = MR_PROJ_EXTRA;
    }
    /* the cell of a column decoded only for the reader (MR_PROJ_EXTRA) goes to
     * out[nout], the spare slot past the projected ones */
    out->extra_slot = out->extra_col < 0 ? -1 : map[out->extra_col] == MR_PROJ_EXTRA ? (int)out->nout : map[out->extra_col];
    out->match_step = -1;
    out->steps = malloc((n ? n : 1) * sizeof *out->steps);
    if (!out->steps) return mr_err(MORAINE_ENOMEM, "out of memory");
    uint32_t skip = 0;
    for (size_t i = 0; i < n; i++) {
        if (map[i] == MR_PROJ_SKIP) {
            skip++;
            continue;
        }
        if ((int)i == out->match_col) out->match_step = (int)out->nsteps;
        out->steps[out->nsteps].skip = skip;
        out->steps[out->nsteps++].slot = map[i] == MR_PROJ_EXTRA ? (int32_t)out->nout : map[i];
        skip = 0;
    }
    out->tail = skip;
    return 0;
}

void mr_proj_rel_free(mr_proj_rel *pr)
{
    free(pr->map);
    free(pr->steps);
    free(pr->match);
}

void mr_proj_free(mr_proj *p)
{
    if (!p) return;
    mr_proj_rel_free(&p->row);
    for (size_t i = 0; i < p->nkids; i++) mr_proj_rel_free(&p->kids[i]);
    free(p->kids);
    free(p->kvals);
    free(p->gvals);
    free(p->gords);
    free(p);
}

int mr_proj_build(moraine_db *db, mr_rel *r, const moraine_projection *p, mr_proj **out)
{
    mr_proj *pj = calloc(1, sizeof *pj);
    if (!pj) return mr_err(MORAINE_ENOMEM, "out of memory");
    pj->kwhich = -1;
    /* the column visibility at S is read from: begin_snapshot, or the
     * snapshot relation's snapshot_id */
    int vcol = r->info.begin_col;
    if (r->info.placement == MORAINE_PLACE_SNAPSHOT) {
        vcol = moraine_column_index(&r->info, "snapshot_id");
        if (vcol < 0) vcol = 0;
    }
    int rc = mr_proj_rel_build(r, p->columns, p->ncolumns, NULL, NULL, 0, vcol, NULL, &pj->row);
    if (!rc && p->nchildren) {
        pj->kids = calloc(p->nchildren, sizeof *pj->kids);
        if (!pj->kids) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    }
    for (size_t i = 0; !rc && i < p->nchildren; i++) {
        const moraine_child_projection *c = &p->children[i];
        pthread_mutex_lock(&db->mu);
        mr_rel *k = c->relation ? mr_rel_by_name(db, c->relation) : NULL;
        pthread_mutex_unlock(&db->mu);
        if (!k || k->info.placement != MORAINE_PLACE_CHILD || !k->info.parent || strcmp(k->info.parent, r->info.name) != 0) {
            rc = mr_err(MORAINE_ENOTFOUND, "%s has no child relation '%s'", r->info.name, c->relation ? c->relation : "(NULL)");
            break;
        }
        for (size_t j = 0; j < i; j++)
            if (pj->kids[j].rel == k) rc = mr_err(MORAINE_EINVAL, "child relation '%s' named twice in a projection", c->relation);
        mr_keymap km;
        if (!rc) rc = mr_child_keymap(k, r, &km);
        if (!rc) rc = mr_proj_rel_build(k, c->columns, c->ncolumns, c->match_column, c->match_values, c->nmatch, -1, &km, &pj->kids[i]);
        pj->nkids = i + 1;
    }
    if (!rc && pj->nkids) {
        size_t cap = 1;
        for (size_t i = 0; i < pj->nkids; i++)
            if (pj->kids[i].nout > cap) cap = pj->kids[i].nout;
        pj->kvals = malloc((cap + 1) * sizeof *pj->kvals); /* and the spare slot */
        pj->kcap = cap;
        if (!pj->kvals) rc = mr_err(MORAINE_ENOMEM, "out of memory");
    }
    if (rc) {
        mr_proj_free(pj);
        return rc;
    }
    *out = pj;
    return 0;
}

static int64_t unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static inline int in_sorted(const int64_t *v, size_t n, int64_t x)
{
    if (n == 1) return v[0] == x; /* one column's stats: the common filter */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (v[m] < x) lo = m + 1;
        else if (v[m] > x) hi = m;
        else return 1;
    }
    return 0;
}

/* ---- the fast pass ----
 *
 * The steps of a projection (build_rel) walk a row with no call and no map
 * lookup per cell: runs of cells not asked for are skipped in a tight loop,
 * the asked ones decoded into their slots, and a child row whose match
 * column is not among the values asked for is skipped from there on without
 * decoding its other cells. The fast pass accepts a subset of what the slow
 * pass (decode_row below, the reference) accepts and yields the same values
 * for it: every uvarint it reads, decoded or skipped, must be in its shortest
 * form and at most 8 bytes long (9- and 10-byte varints, values of 2^56 and
 * more, are left to the slow pass), so what it passes the slow pass passes
 * too, the strict checks of a decoded INT included. Anything else (an error,
 * or a varint it does not take) returns -1 and the caller runs the slow pass
 * on the same bytes, which decides and words any error exactly as before.
 * Varints of 2 to 8 bytes are read as one little-endian word where 8 bytes
 * are left before @end (never past it); big-endian hosts take the slow pass
 * for them. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MR_PROJ_WORDS 1
#endif

/* The uvarint of 2 to 8 bytes at @p (its first byte has the high bit set)
 * into *out; the byte after it, or NULL (see above). */
static inline __attribute__((always_inline)) const uint8_t *fast_uv_long(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    if (__builtin_expect(end - p >= 3, 1)) { /* two or three bytes: most ords, ids and sizes */
        if (p[1] < 0x80) {
            if (!p[1]) return NULL;
            *out = (uint64_t)(p[0] & 0x7F) | (uint64_t)p[1] << 7;
            return p + 2;
        }
        if (p[2] < 0x80) {
            if (!p[2]) return NULL;
            *out = (uint64_t)(p[0] & 0x7F) | (uint64_t)(p[1] & 0x7F) << 7 | (uint64_t)p[2] << 14;
            return p + 3;
        }
        if (end - p >= 4 && p[3] < 0x80) {
            if (!p[3]) return NULL;
            *out = (uint64_t)(p[0] & 0x7F) | (uint64_t)(p[1] & 0x7F) << 7 | (uint64_t)(p[2] & 0x7F) << 14 | (uint64_t)p[3] << 21;
            return p + 4;
        }
    } else if (end - p == 2) {
        if (p[1] >= 0x80 || !p[1]) return NULL;
        *out = (uint64_t)(p[0] & 0x7F) | (uint64_t)p[1] << 7;
        return p + 2;
    }
#ifdef MR_PROJ_WORDS
    if (end - p < 8) return NULL;
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t stop = ~w & 0x8080808080808080ULL;
    if (!stop) return NULL; /* longer than 8 bytes */
    unsigned bit = (unsigned)__builtin_ctzll(stop); /* the high bit of the last byte, 8k + 7 (k >= 1) */
    if (!((w >> (bit - 7)) & 0xFF)) return NULL;    /* a last byte of 0: not the shortest form */
    uint64_t x = w & ((2ULL << bit) - 1);           /* bytes 0..k (all 8 when bit is 63: 2 << 63 wraps to 0) */
    x = (x & 0x007F007F007F007FULL) | ((x & 0x7F007F007F007F00ULL) >> 1);
    x = (x & 0x00003FFF00003FFFULL) | ((x & 0x3FFF00003FFF0000ULL) >> 2);
    x = (x & 0x000000000FFFFFFFULL) | ((x & 0x0FFFFFFF00000000ULL) >> 4);
    *out = x;
    return p + (bit >> 3) + 1;
#else
    return NULL;
#endif
}

/* The uvarint at @p into *out; the byte after it, or NULL (see above). */
static inline __attribute__((always_inline)) const uint8_t *fast_uv(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    if (__builtin_expect(p < end && *p < 0x80, 1)) {
        *out = *p;
        return p + 1;
    }
    return p < end ? fast_uv_long(p, end, out) : NULL;
}

/* Past the uvarint at @p, with fast_uv's checks; NULL as fast_uv. */
static inline __attribute__((always_inline)) const uint8_t *fast_skip_uv(const uint8_t *p, const uint8_t *end)
{
    if (__builtin_expect(p < end && *p < 0x80, 1)) return p + 1;
    if (__builtin_expect(end - p >= 3, 1)) {
        if (p[1] < 0x80) return p[1] ? p + 2 : NULL;
        if (p[2] < 0x80) return p[2] ? p + 3 : NULL;
    } else if (end - p == 2) {
        return p[1] < 0x80 && p[1] ? p + 2 : NULL;
    }
#ifdef MR_PROJ_WORDS
    if (end - p < 8) return NULL;
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t stop = ~w & 0x8080808080808080ULL;
    if (!stop) return NULL;
    unsigned bit = (unsigned)__builtin_ctzll(stop);
    if (!((w >> (bit - 7)) & 0xFF)) return NULL;
    return p + (bit >> 3) + 1;
#else
    return NULL;
#endif
}

/* Past @n cells at @p, each checked as the slow pass skips it (and its
 * varints as fast_uv); NULL when the slow pass must decide. The tags are
 * tested most frequent first (no jump table). */
static inline __attribute__((always_inline)) const uint8_t *fast_skip(const uint8_t *p, const uint8_t *end, size_t n)
{
    for (; n; n--) {
        if (__builtin_expect(p >= end, 0)) return NULL;
        uint8_t tag = *p++;
        if (tag == MR_T_INT) {
            if (!(p = fast_skip_uv(p, end))) return NULL;
        } else if (tag == MR_T_STR || tag == MR_T_JSON) {
            uint64_t u;
            if (!(p = fast_uv(p, end, &u)) || u > (uint64_t)(end - p)) return NULL;
            p += u;
        } else if (tag == MR_T_NULL || tag == MR_T_FALSE || tag == MR_T_TRUE) {
        } else if (tag == MR_T_REAL) {
            if (end - p < 8) return NULL;
            p += 8;
        } else return NULL;
    }
    return p;
}

/* The cell at @p into *v, as the slow pass decodes it; NULL as above. */
static inline __attribute__((always_inline)) const uint8_t *fast_cell(const uint8_t *p, const uint8_t *end, moraine_value *v)
{
    if (__builtin_expect(p >= end, 0)) return NULL;
    uint8_t tag = *p++;
    uint64_t u;
    if (tag == MR_T_INT) {
        if (!(p = fast_uv(p, end, &u))) return NULL;
        v->type = MORAINE_INT;
        v->i = unzigzag(u);
        return p;
    }
    if (tag == MR_T_STR || tag == MR_T_JSON) {
        if (!(p = fast_uv(p, end, &u)) || u > (uint64_t)(end - p)) return NULL;
        v->type = tag == MR_T_STR ? MORAINE_STR : MORAINE_JSON;
        v->s = (const char *)p;
        v->len = (size_t)u;
        return p + u;
    }
    if (tag == MR_T_NULL) {
        v->type = MORAINE_NULL;
        return p;
    }
    if (tag == MR_T_FALSE || tag == MR_T_TRUE) {
        v->type = MORAINE_BOOL;
        v->i = tag == MR_T_TRUE;
        return p;
    }
    if (tag == MR_T_REAL) {
        if (end - p < 8) return NULL;
        uint64_t bits = 0;
        for (int k = 7; k >= 0; k--) bits = (bits << 8) | p[k];
        memcpy(&v->d, &bits, 8);
        v->type = MORAINE_REAL;
        return p + 8;
    }
    return NULL;
}

/* Steps @from .. @to - 1 of a projection over the cells at @p: each skips
 * its cells, then decodes one into out[slot]. Returns where the last step
 * ended, or NULL when a cell is not one the fast pass takes (or runs past
 * @end): the slow pass decides. */
static inline __attribute__((always_inline)) const uint8_t *fast_steps(const struct mr_proj_step *st, size_t from, size_t to,
                                                                       const uint8_t *p, const uint8_t *end, moraine_value *out)
{
    for (size_t i = from; i < to; i++) {
        if (st[i].skip && !(p = fast_skip(p, end, st[i].skip))) return NULL;
        if (!(p = fast_cell(p, end, &out[st[i].slot]))) return NULL;
    }
    return p;
}

/* The fast pass over the row at *pp: 1 when decoded (as decode_row would:
 * the same values in the same slots, the same *extra), 0 when a child row's
 * match column is not among the values asked for (the row is walked to its
 * end, *pp past it; for a @child row, @end is the row's end, known from its
 * length, and *pp is set there without walking the rest), -1 when the slow
 * pass must decide (*pp untouched). A @child row (docs/codec.md) has no
 * column count and its ord is the difference from @prev. */
static inline __attribute__((always_inline)) int fast_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord,
                                                          moraine_value *out, moraine_value *extra, int child, int64_t prev)
{
    const uint8_t *p = *pp;
    uint64_t u, n;
    if (child) {
        if (!(p = fast_uv(p, end, &u))) return -1;
    } else if (!(p = fast_uv(p, end, &u)) || !(p = fast_uv(p, end, &n)) || n != pr->ncols) {
        return -1;
    }
    const int64_t o = child ? mr_child_ord(prev, u) : (int64_t)u;
    const struct mr_proj_step *st = pr->steps;
    if (pr->match_step < 0) {
        if (!(p = fast_steps(st, 0, pr->nsteps, p, end, out))) return -1;
    } else {
        size_t m = (size_t)pr->match_step;
        if (!(p = fast_steps(st, 0, m + 1, p, end, out))) return -1;
        const moraine_value *v = &out[st[m].slot];
        if (!(v->type == MORAINE_INT && in_sorted(pr->match, pr->nmatch, v->i))) {
            if (child) p = end; /* a child row with its length: @end is where it ends */
            else if (!(p = fast_skip(p, end, pr->ncols - (size_t)pr->match_col - 1))) return -1;
            *ord = o;
            *pp = p;
            return 0;
        }
        if (!(p = fast_steps(st, m + 1, pr->nsteps, p, end, out))) return -1;
    }
    if (pr->tail && !(p = fast_skip(p, end, pr->tail))) return -1;
    if (extra) {
        if (pr->extra_slot < 0) extra->type = MORAINE_NULL;
        else *extra = out[pr->extra_slot];
    }
    *ord = o;
    *pp = p;
    return 1;
}

/* One pass over the cells: the same checks as mr_decode_row (docs/codec.md)
 * for the cells decoded; a cell not asked for is skipped by its length, its
 * bytes only bounds-checked (the value's checksum was verified before). The
 * reference the fast pass falls back to. */
static __attribute__((noinline)) int decode_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord,
                                                            moraine_value *out, moraine_value *extra, int child, int64_t prev)
{
    const uint8_t *p = *pp;
    uint64_t u, n = pr->ncols;
    int rc;
    if ((rc = mr_uvarint(&p, end, &u))) return rc;
    *ord = child ? mr_child_ord(prev, u) : (int64_t)u;
    if (!child && (rc = mr_uvarint(&p, end, &n))) return rc;
    if (n != pr->ncols) return mr_err(MORAINE_ECORRUPT, "value: %llu columns where %s has %zu", (unsigned long long)n, pr->rel->info.name, pr->ncols);
    const int *map = pr->map;
    moraine_value spare;
    for (size_t i = 0; i < n; i++) {
        if (__builtin_expect(p >= end, 0)) return mr_err(MORAINE_ECORRUPT, "value: truncated at column %zu", i);
        uint8_t tag = *p++;
        int slot = map[i];
        if (slot == MR_PROJ_SKIP) {
            switch (tag) {
            case MR_T_NULL:
            case MR_T_FALSE:
            case MR_T_TRUE: break;
            case MR_T_INT: {
                const uint8_t *q = p, *lim = end - p > 10 ? p + 10 : end;
                while (q < lim && *q >= 0x80) q++;
                if (q >= lim) return mr_err(MORAINE_ECORRUPT, "value: truncated or overlong varint at column %zu", i);
                p = q + 1;
                break;
            }
            case MR_T_STR:
            case MR_T_JSON:
                if ((rc = mr_uvarint(&p, end, &u))) return rc;
                if (u > (uint64_t)(end - p))
                    return mr_err(MORAINE_ECORRUPT, "value: string of %llu bytes runs past the end at column %zu", (unsigned long long)u, i);
                p += u;
                break;
            case MR_T_REAL:
                if (end - p < 8) return mr_err(MORAINE_ECORRUPT, "value: truncated double at column %zu", i);
                p += 8;
                break;
            default: return mr_err(MORAINE_ECORRUPT, "value: unknown cell tag 0x%02x at column %zu", tag, i);
            }
            continue;
        }
        moraine_value *v = slot >= 0 ? &out[slot] : &spare;
        switch (tag) {
        case MR_T_NULL: v->type = MORAINE_NULL; break;
        case MR_T_INT:
            if ((rc = mr_uvarint(&p, end, &u))) return rc;
            v->type = MORAINE_INT;
            v->i = unzigzag(u);
            break;
        case MR_T_STR:
        case MR_T_JSON:
            if ((rc = mr_uvarint(&p, end, &u))) return rc;
            if (u > (uint64_t)(end - p))
                return mr_err(MORAINE_ECORRUPT, "value: string of %llu bytes runs past the end at column %zu", (unsigned long long)u, i);
            v->type = tag == MR_T_STR ? MORAINE_STR : MORAINE_JSON;
            v->s = (const char *)p;
            v->len = (size_t)u;
            p += u;
            break;
        case MR_T_FALSE:
        case MR_T_TRUE:
            v->type = MORAINE_BOOL;
            v->i = tag == MR_T_TRUE;
            break;
        case MR_T_REAL: {
            if (end - p < 8) return mr_err(MORAINE_ECORRUPT, "value: truncated double at column %zu", i);
            uint64_t bits = 0;
            for (int k = 7; k >= 0; k--) bits = (bits << 8) | p[k];
            memcpy(&v->d, &bits, 8);
            v->type = MORAINE_REAL;
            p += 8;
            break;
        }
        default: return mr_err(MORAINE_ECORRUPT, "value: unknown cell tag 0x%02x at column %zu", tag, i);
        }
    }
    if (extra) {
        if (pr->extra_col < 0) extra->type = MORAINE_NULL;
        else if (map[pr->extra_col] == MR_PROJ_EXTRA) *extra = spare;
        else *extra = out[map[pr->extra_col]];
    }
    *pp = p;
    return 0;
}

static int row_ref(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out, moraine_value *extra,
                   int child, int64_t prev)
{
    int rc = decode_row(pr, pp, end, ord, out, extra, child, prev);
    if (rc) return rc;
    return !(pr->match_col >= 0 && !(extra->type == MORAINE_INT && in_sorted(pr->match, pr->nmatch, extra->i)));
}

int mr_proj_row_ref(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out, moraine_value *extra)
{
    return row_ref(pr, pp, end, ord, out, extra, 0, 0);
}

int mr_proj_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out, moraine_value *extra)
{
    int f = fast_row(pr, pp, end, ord, out, extra, 0, 0);
    return f >= 0 ? f : row_ref(pr, pp, end, ord, out, extra, 0, 0);
}

int mr_proj_child_row_ref(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *rend, int64_t prev, int64_t *ord, moraine_value *out,
                          moraine_value *extra)
{
    return row_ref(pr, pp, rend, ord, out, extra, 1, prev);
}

int mr_proj_child_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *rend, int64_t prev, int64_t *ord, moraine_value *out,
                      moraine_value *extra)
{
    int f = fast_row(pr, pp, rend, ord, out, extra, 1, prev);
    return f >= 0 ? f : row_ref(pr, pp, rend, ord, out, extra, 1, prev);
}

int mr_proj_decode_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out,
                       moraine_value *extra)
{
    int rc = mr_proj_row(pr, pp, end, ord, out, extra); /* a parent row has no match column: never 0 */
    return rc < 0 ? rc : 0;
}

void mr_proj_children_start(mr_proj *p, const moraine_row *row)
{
    p->kp = p->kstart = row->children;
    p->kend = row->children + row->children_len;
    p->praw = row->raw;
    p->praw_len = row->raw_len;
    p->gend = row->children;
    p->kleft = 0;
    p->kwhich = -1;
}

/* The head of the child group at *pp (docs/codec.md): its rel_id, row
 * count and end (*gend, from its nbytes), *pp past the head. The three
 * varints by the fast pass; mr_group_head decides (and words) anything it
 * does not take. 0 or MORAINE_ECORRUPT. */
static inline __attribute__((always_inline)) int group_head(const uint8_t **pp, const uint8_t *end, uint64_t *id, uint64_t *nrows,
                                                            const uint8_t **gend)
{
    uint64_t nbytes;
    const uint8_t *q = *pp;
    if ((q = fast_uv(q, end, id)) && (q = fast_uv(q, end, nrows)) && (q = fast_uv(q, end, &nbytes)) && nbytes <= (uint64_t)(end - q)) {
        *pp = q;
        *gend = q + nbytes;
        return 0;
    }
    return mr_group_head(pp, end, id, nrows, gend);
}

/* The child row at *pp within its group (ending at @gend): *pp past its
 * length, *rend where it ends. The length by the fast pass, else
 * mr_child_row_span. 0 or MORAINE_ECORRUPT. */
static inline __attribute__((always_inline)) int row_span(const uint8_t **pp, const uint8_t *gend, const uint8_t **rend)
{
    uint64_t len;
    const uint8_t *q = fast_uv(*pp, gend, &len);
    if (q && len <= (uint64_t)(gend - q)) {
        *pp = q;
        *rend = q + len;
        return 0;
    }
    return mr_child_row_span(pp, gend, rend);
}

/* For a group of child projection @pr: the parent's key cells its rows
 * leave out, in @pr's keymap order, into @pkey when the projection asks for
 * one or filters on one (store format 5); 1 when the group's rows are
 * wanted, 0 when its filter on a parent-key column drops them all, or
 * MORAINE_ECORRUPT. Each walk keeps its own @pkey: the call-a-row walk's
 * (p->pkey) must outlive a group read by mr_proj_group_rows between two of
 * its rows, whose child projection may list the keys in another order. */
static int group_keys(const mr_proj *p, const mr_proj_rel *pr, moraine_value *pkey)
{
    if (!pr->nfill && pr->match_key < 0) return 1;
    int rc = mr_pick_cells(p->praw, p->praw_len, pr->km.pcol, pr->km.n, pkey);
    if (rc) return rc;
    if (pr->match_key < 0) return 1;
    const moraine_value *v = &pkey[pr->match_key];
    return v->type == MORAINE_INT && in_sorted(pr->match, pr->nmatch, v->i);
}

/* The parent's key cells @pkey asked for into the slots of row @out. */
static inline void fill_keys(const moraine_value *pkey, const mr_proj_rel *pr, moraine_value *out)
{
    for (int i = 0; i < pr->nfill; i++) out[pr->fill[i].slot] = pkey[pr->fill[i].j];
}

/* Past the child groups not asked for, to the next one asked for: 1 (its
 * rows in p->kleft, maybe none), 0 at the end of the children, or an error.
 * Out of line: once per group, and it keeps the row loop's registers free. */
static __attribute__((noinline)) int next_group(mr_proj *p, moraine_db *db)
{
    int rc;
    for (;;) {
        p->kp = p->gend; /* a group ends where its nbytes say */
        if (p->kp >= p->kend) return 0;
        uint64_t id, nrows;
        if ((rc = group_head(&p->kp, p->kend, &id, &nrows, &p->gend))) return rc;
        p->kwhich = -1;
        for (size_t i = 0; i < p->nkids; i++)
            if (p->kids[i].rel->info.id == id) p->kwhich = (int)i;
        if (p->kwhich < 0) {
            if (!mr_rel_by_id(db, id))
                return mr_err(MORAINE_ECORRUPT, "value: child group of unknown table id %llu", (unsigned long long)id);
            continue; /* not asked for: skipped by its length */
        }
        if (nrows == 0 && p->kp != p->gend) /* as mr_proj_group_rows refuses it */
            return mr_err(MORAINE_ECORRUPT, "value: child group of %s has bytes after its 0 rows", p->kids[p->kwhich].rel->info.name);
        if ((rc = group_keys(p, &p->kids[p->kwhich], p->pkey)) < 0) return rc;
        if (!rc) continue; /* filtered out whole on a parent-key column */
        p->kleft = p->knrows = nrows;
        p->kprev = 0;
        return 1;
    }
}

int mr_proj_children_next(mr_proj *p, moraine_db *db, size_t *which, moraine_row *child)
{
    for (;;) {
        if (p->kleft == 0) {
            int rc = next_group(p, db);
            if (rc <= 0) return rc;
            continue;
        }
        const mr_proj_rel *pr = &p->kids[p->kwhich];
        const uint8_t *kp = p->kp, *gend = p->gend;
        uint64_t left = p->kleft;
        int64_t prev = p->kprev;
        moraine_value m, *mx = pr->match_col >= 0 ? &m : NULL;
        int f;
        const uint8_t *rend, *rs;
        do { /* the rows of the group, those filtered out skipped by their length */
            if ((f = row_span(&kp, gend, &rend)) < 0) {
                p->kp = kp;
                return f;
            }
            rs = kp;
            f = fast_row(pr, &kp, rend, &child->ord, p->kvals, mx, 1, prev);
            if (f < 0 && (f = row_ref(pr, &kp, rend, &child->ord, p->kvals, mx, 1, prev)) < 0) {
                p->kp = kp;
                return f;
            }
            if (__builtin_expect(kp != rend, 0)) {
                p->kp = kp;
                return mr_err(MORAINE_ECORRUPT, "value: child row of %s takes %zu bytes, its length says %zu", pr->rel->info.name,
                              (size_t)(kp - rs), (size_t)(rend - rs));
            }
            prev = child->ord;
            left--;
        } while (!f && left);
        p->kp = kp;
        if (!left && kp != gend) /* the group's rows end before its nbytes: as mr_proj_group_rows refuses it */
            return mr_err(MORAINE_ECORRUPT, "value: child group of %s has bytes after its %llu rows", pr->rel->info.name,
                          (unsigned long long)p->knrows);
        p->kleft = left;
        p->kprev = prev;
        if (!f) continue;
        fill_keys(p->pkey, pr, p->kvals);
        child->raw = mr_past_uvarint(rs); /* the cells, past the ord difference the row was decoded with */
        child->raw_len = (size_t)(kp - child->raw);
        child->parent_raw = p->praw;
        child->parent_raw_len = p->praw_len;
        child->rel = &pr->rel->info;
        child->ncols = pr->nout;
        child->vals = p->kvals;
        child->children = NULL;
        child->children_len = 0;
        *which = (size_t)p->kwhich;
        return 1;
    }
}

/* A child row filtered on its first stored cell (a stats row's column_id)
 * by the fast pass, from @q (past its length) to @rend: a row not asked for
 * is dropped on that cell (*kept 0), one asked for decoded into @out (*kept
 * 1); *d its ord difference; where the row ends, or NULL when a cell is not
 * one the fast pass takes and the generic passes must decide. */
static inline __attribute__((always_inline)) const uint8_t *first_match_row(const mr_proj_rel *pr, const uint8_t *q, const uint8_t *rend,
                                                                            moraine_value *out, uint64_t *d, int *kept)
{
    const uint8_t *e = fast_uv(q, rend, d);
    uint64_t u;
    if (!e || e >= rend || *e != MR_T_INT || !(e = fast_uv(e + 1, rend, &u))) return NULL;
    const int64_t v = unzigzag(u);
    if (!in_sorted(pr->match, pr->nmatch, v)) {
        *kept = 0;
        return rend;
    }
    moraine_value *m = &out[pr->steps[0].slot];
    m->type = MORAINE_INT;
    m->i = v;
    if (!(e = fast_steps(pr->steps, 1, pr->nsteps, e, rend, out)) || (pr->tail && !(e = fast_skip(e, rend, pr->tail))) || e != rend) return NULL;
    *kept = 1;
    return e;
}

/* The rows of child projection @which of the row last decoded
 * (mr_proj_children_start), in one pass: groups of other relations are skipped
 * by their length, rows failing the child's match filter dropped, the others
 * decoded into p->gvals (grown as needed; row k's values at k * nout, each
 * row's spare slot the next row's first, so the buffer holds one more) and
 * their ords into p->gords. The sequential walk (mr_proj_children_next) is
 * left where it was. *n the rows kept; 0, or MORAINE_ECORRUPT / ENOMEM. */
int mr_proj_group_rows(mr_proj *p, moraine_db *db, size_t which, size_t *n)
{
    const mr_proj_rel *pr = &p->kids[which];
    const uint8_t *q = p->kstart, *end = p->kend;
    const uint64_t want = pr->rel->info.id;
    size_t nout = pr->nout;
    *n = 0;
    while (q < end) {
        uint64_t id, nrows;
        const uint8_t *gend;
        int rc;
        if ((rc = group_head(&q, end, &id, &nrows, &gend))) return rc;
        const uint64_t nbytes = (uint64_t)(gend - q);
        if (id != want) {
            if (!mr_rel_by_id(db, id)) return mr_err(MORAINE_ECORRUPT, "value: child group of unknown table id %llu", (unsigned long long)id);
            q = gend;
            continue;
        }
        /* each row takes one byte at least (its length): more rows than
         * bytes is a damaged head, found before any allocation */
        if (nrows > nbytes) return mr_err(MORAINE_ECORRUPT, "value: child group of %s says %llu rows in %llu bytes", pr->rel->info.name,
                                          (unsigned long long)nrows, (unsigned long long)nbytes);
        size_t need = (size_t)nrows * nout + 1;
        if (need > p->gcap) {
            moraine_value *v = realloc(p->gvals, need * sizeof *v);
            if (!v) return mr_err(MORAINE_ENOMEM, "out of memory");
            p->gvals = v;
            p->gcap = need;
        }
        if ((size_t)nrows > p->gocap) {
            int64_t *o = realloc(p->gords, (size_t)nrows * sizeof *o);
            if (!o) return mr_err(MORAINE_ENOMEM, "out of memory");
            p->gords = o;
            p->gocap = (size_t)nrows;
        }
        moraine_value pkey[MR_MAX_KEYCOLS]; /* this call's own: the call-a-row walk keeps p->pkey */
        if ((rc = group_keys(p, pr, pkey)) <= 0) return rc; /* < 0: damaged; 0: filtered out whole on a parent-key column */
        moraine_value m, *mx = pr->match_col >= 0 ? &m : NULL;
        const int first_match = pr->match_step == 0 && pr->steps[0].skip == 0; /* the filter's cell leads the row */
        int64_t prev = 0;
        size_t k = 0;
        for (uint64_t r = 0; r < nrows; r++) {
            /* A filtered row whose length, ord difference and leading INT
             * cell are one byte each (most stats rows: column_id under 64):
             * dropped on those four bytes when its value is not asked for,
             * as first_match_row drops it (its other cells unread, the row
             * skipped by its length), with nothing else to do; rows kept,
             * and any other, take the passes below. 5% of a read of files
             * with one column's stats (bench/README.md, issue 18). */
            if (first_match && gend - q >= 4 && (q[0] | q[1] | q[3]) < 0x80 && q[2] == MR_T_INT && q[0] >= 3 && q[0] < gend - q &&
                !in_sorted(pr->match, pr->nmatch, unzigzag(q[3]))) {
                prev = mr_child_ord(prev, q[1]);
                q += 1 + q[0];
                continue;
            }
            const uint8_t *rend;
            if ((rc = row_span(&q, gend, &rend)) < 0) return rc;
            const uint8_t *rs = q;
            moraine_value *out = p->gvals + k * nout;
            int f;
            const uint8_t *e;
            uint64_t d;
            if (!mx && (e = fast_uv(q, rend, &d)) && (e = fast_steps(pr->steps, 0, pr->nsteps, e, rend, out)) &&
                (!pr->tail || (e = fast_skip(e, rend, pr->tail))) && e == rend) { /* no filter: fast_row's pass, its branches hoisted */
                p->gords[k] = mr_child_ord(prev, d);
                q = e;
                f = 1;
            } else if (first_match && (e = first_match_row(pr, q, rend, out, &d, &f))) {
                p->gords[k] = mr_child_ord(prev, d);
                q = e;
            } else if ((f = fast_row(pr, &q, rend, &p->gords[k], out, mx, 1, prev)) < 0 &&
                       (f = row_ref(pr, &q, rend, &p->gords[k], out, mx, 1, prev)) < 0) {
                return f;
            }
            if (q != rend)
                return mr_err(MORAINE_ECORRUPT, "value: child row of %s takes %zu bytes, its length says %zu", pr->rel->info.name,
                              (size_t)(q - rs), (size_t)(rend - rs));
            prev = p->gords[k];
            if (pr->nfill && f) fill_keys(pkey, pr, out);
            k += (size_t)f;
        }
        if (q != gend) return mr_err(MORAINE_ECORRUPT, "value: child group of %s has bytes after its %llu rows", pr->rel->info.name,
                                     (unsigned long long)nrows);
        *n = k;
        return 0;
    }
    return 0;
}
