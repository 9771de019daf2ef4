/*
 * project.c — projected decoding (moraine_scan_project, moraine_cursor_child).
 *
 * A projection maps each stored column of a relation to an output slot or to
 * -1; one pass over a row's cells decodes the mapped ones and skips the
 * others by their length (an INT's varint bytes, a STR's length prefix), so
 * a cell not asked for costs a tag dispatch and no store. Child groups of
 * relations not asked for are skipped whole by their nbytes; rows of a child
 * filtered on one column (the stats of the columns a planner wants) are
 * dropped after one pass that decodes only that cell and the asked ones.
 * The value's checksum is verified by the caller (read.c) before any of this.
 */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

static int i64cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int build_rel(mr_rel *r, const char *const *cols, size_t ncols, const char *match_col, const int64_t *match, size_t nmatch,
                     int extra_col, mr_proj_rel *out)
{
    memset(out, 0, sizeof *out);
    out->rel = r;
    out->match_col = -1;
    out->extra_col = -1;
    out->ncols = r->info.ncols;
    out->map = malloc((r->info.ncols ? r->info.ncols : 1) * sizeof *out->map);
    if (!out->map) return mr_err(MORAINE_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->info.ncols; i++) out->map[i] = cols ? MR_PROJ_SKIP : (int)i;
    out->nout = cols ? ncols : r->info.ncols;
    for (size_t i = 0; cols && i < ncols; i++) {
        int c = cols[i] ? moraine_column_index(&r->info, cols[i]) : -1;
        if (c < 0) return mr_err(MORAINE_ENOTFOUND, "%s has no column '%s'", r->info.name, cols[i] ? cols[i] : "(NULL)");
        if (out->map[c] >= 0) return mr_err(MORAINE_EINVAL, "%s: column '%s' named twice in a projection", r->info.name, cols[i]);
        out->map[c] = (int)i;
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
    if (extra_col >= 0 && (size_t)extra_col < r->info.ncols) {
        out->extra_col = extra_col;
        if (out->map[extra_col] == MR_PROJ_SKIP) out->map[extra_col] = MR_PROJ_EXTRA;
    }
    return 0;
}

void mr_proj_free(mr_proj *p)
{
    if (!p) return;
    free(p->row.map);
    for (size_t i = 0; i < p->nkids; i++) {
        free(p->kids[i].map);
        free(p->kids[i].match);
    }
    free(p->kids);
    free(p->kvals);
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
    int rc = build_rel(r, p->columns, p->ncolumns, NULL, NULL, 0, vcol, &pj->row);
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
        if (!rc) rc = build_rel(k, c->columns, c->ncolumns, c->match_column, c->match_values, c->nmatch, -1, &pj->kids[i]);
        pj->nkids = i + 1;
    }
    if (!rc && pj->nkids) {
        size_t cap = 1;
        for (size_t i = 0; i < pj->nkids; i++)
            if (pj->kids[i].nout > cap) cap = pj->kids[i].nout;
        pj->kvals = malloc(cap * sizeof *pj->kvals);
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

static int in_sorted(const int64_t *v, size_t n, int64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (v[m] < x) lo = m + 1;
        else if (v[m] > x) hi = m;
        else return 1;
    }
    return 0;
}

/* One pass over the cells: the same checks as mr_decode_row (docs/codec.md)
 * for the cells decoded; a cell not asked for is skipped by its length, its
 * bytes only bounds-checked (the value's checksum was verified before). */
static inline __attribute__((always_inline)) int decode_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord,
                                                            moraine_value *out, moraine_value *extra)
{
    const uint8_t *p = *pp;
    uint64_t u, n;
    int rc;
    if ((rc = mr_uvarint(&p, end, &u))) return rc;
    *ord = (int64_t)u;
    if ((rc = mr_uvarint(&p, end, &n))) return rc;
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

int mr_proj_decode_row(const mr_proj_rel *pr, const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *out,
                       moraine_value *extra)
{
    return decode_row(pr, pp, end, ord, out, extra);
}

void mr_proj_children_start(mr_proj *p, const uint8_t *children, size_t len)
{
    p->kp = children;
    p->kend = children + len;
    p->gend = children;
    p->kleft = 0;
    p->kwhich = -1;
}

int mr_proj_children_next(mr_proj *p, moraine_db *db, size_t *which, moraine_row *child)
{
    int rc;
    for (;;) {
        while (p->kleft == 0) {
            p->kp = p->gend; /* a group ends where its nbytes say */
            if (p->kp >= p->kend) return 0;
            uint64_t id, nrows, nbytes;
            if ((rc = mr_uvarint(&p->kp, p->kend, &id)) || (rc = mr_uvarint(&p->kp, p->kend, &nrows)) ||
                (rc = mr_uvarint(&p->kp, p->kend, &nbytes)))
                return rc;
            if (nbytes > (uint64_t)(p->kend - p->kp)) return mr_err(MORAINE_ECORRUPT, "value: child group runs past the end");
            p->gend = p->kp + nbytes;
            p->kwhich = -1;
            for (size_t i = 0; i < p->nkids; i++)
                if (p->kids[i].rel->info.id == id) p->kwhich = (int)i;
            if (p->kwhich < 0) {
                if (!mr_rel_by_id(db, id))
                    return mr_err(MORAINE_ECORRUPT, "value: child group of unknown table id %llu", (unsigned long long)id);
                continue; /* not asked for: skipped by its length */
            }
            p->kleft = nrows;
        }
        const mr_proj_rel *pr = &p->kids[p->kwhich];
        moraine_value m;
        child->raw = p->kp;
        if ((rc = decode_row(pr, &p->kp, p->gend, &child->ord, p->kvals, pr->match_col >= 0 ? &m : NULL))) return rc;
        p->kleft--;
        if (pr->match_col >= 0 && !(m.type == MORAINE_INT && in_sorted(pr->match, pr->nmatch, m.i))) continue;
        child->raw_len = (size_t)(p->kp - child->raw);
        child->rel = &pr->rel->info;
        child->ncols = pr->nout;
        child->vals = p->kvals;
        child->children = NULL;
        child->children_len = 0;
        *which = (size_t)p->kwhich;
        return 1;
    }
}
