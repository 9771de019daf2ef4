/*
 * codec.c — the record format of stored values (docs/codec.md).
 *
 *   value  := version:u8 crc32c:u32le row group*   (the CRC covers everything after it)
 *   row    := ord:uvarint ncols:uvarint cell*
 *   cell   := tag:u8 payload
 *             NULL(0) | INT(1) zigzag uvarint | STR(2) len:uvarint bytes
 *             | FALSE(3) | TRUE(4) | REAL(5) 8 bytes little-endian IEEE-754
 *             | JSON(6) len:uvarint bytes
 *   group  := rel_id:uvarint nrows:uvarint nbytes:uvarint child{nrows}
 *   child  := len:uvarint dord:uvarint cell{ncols of the child relation
 *             less its parent-key columns}
 *             dord: zigzag of the row's ord less the ord of the row before
 *             it in the group (0 for the first)
 *
 * Format 5 (this build): a child row is preceded by its byte length, so a
 * reader skips a child row it does not want without walking its cells (format
 * 3), carries neither its column count (its relation's) nor its whole ord
 * (format 4), nor the cells of its parent-key columns, which are its parent's
 * key cells (mr_keymap). Format 4 stored those cells, format 3 wrote child
 * rows as `len row`, format 2 as `row`; mr_upgrade_value rewrites a value of
 * any of them as format 5 (moraine_compact).
 *
 * Groups hold a parent's embedded children (docs/keyspace.md). The decoder
 * checks every length against the end of the buffer and never reads past it;
 * any inconsistency is MORAINE_ECORRUPT.
 */
#include "internal.h"
#include <stdint.h>
#include <string.h>

/* Writes @v as a uvarint at @p (room for 10 bytes); returns the bytes written. */
static inline size_t put_uvarint_at(uint8_t *p, uint64_t v)
{
    if (v < 0x80) {
        *p = (uint8_t)v;
        return 1;
    }
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

int mr_put_uvarint(mr_buf *b, uint64_t v)
{
    int rc = mr_buf_reserve(b, 10);
    if (rc) return rc;
    b->len += put_uvarint_at(b->p + b->len, v);
    return 0;
}

int mr_get_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) { /* the common one-byte case */
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end) return mr_err(MORAINE_ECORRUPT, "value: truncated varint");
        uint8_t c = *p++;
        if (shift == 63 && c > 1) return mr_err(MORAINE_ECORRUPT, "value: varint overflows 64 bits");
        if (c == 0 && shift > 0) return mr_err(MORAINE_ECORRUPT, "value: varint not in its shortest form");
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return mr_err(MORAINE_ECORRUPT, "value: varint longer than 10 bytes");
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

/* The row's head (@nhead uvarints: ord and count, or a child row's ord
 * difference) and its cells written in place (no call per byte) into room
 * reserved for the row: at most 11 bytes a cell and 20 for its head, reserved first, and each
 * string's bytes, added to the reservation when the string comes (@most
 * bounds what the row can take so far; b->len moves only at the end, so a
 * failure appends nothing). */
static int encode(mr_buf *b, const uint64_t *head, size_t nhead, const moraine_value *vals, size_t n, const mr_keymap *km)
{
    /* the next column not stored (a parent-key column of an embedded child row) */
    int kj = 0;
    size_t skip = km && km->n ? (size_t)km->ccol[0] : SIZE_MAX;
    if (n > (SIZE_MAX / 4) / 11) return mr_err(MORAINE_ENOMEM, "out of memory (a row of %zu cells)", n);
    size_t most = 20 + 11 * n;
    int rc = mr_buf_reserve(b, most);
    if (rc) return rc;
    uint8_t *p = b->p + b->len;
    for (size_t i = 0; i < nhead; i++) p += put_uvarint_at(p, head[i]); /* at most two: within the 20 bytes */
    for (size_t i = 0; i < n; i++) {
        const moraine_value *v = &vals[i];
        if (__builtin_expect(i == skip, 0)) {
            skip = ++kj < km->n ? (size_t)km->ccol[kj] : SIZE_MAX;
            continue;
        }
        switch (v->type) {
        case MORAINE_NULL: *p++ = MR_T_NULL; break;
        case MORAINE_INT:
            *p++ = MR_T_INT;
            p += put_uvarint_at(p, zigzag(v->i));
            break;
        case MORAINE_STR:
        case MORAINE_JSON:
            if (v->len > SIZE_MAX / 4 - most) return mr_err(MORAINE_ENOMEM, "out of memory (a row of more than %zu bytes)", SIZE_MAX / 4);
            most += v->len;
            if (most > b->cap - b->len) {
                size_t at = (size_t)(p - b->p);
                if ((rc = mr_buf_reserve(b, most))) return rc;
                p = b->p + at;
            }
            *p++ = v->type == MORAINE_STR ? MR_T_STR : MR_T_JSON;
            p += put_uvarint_at(p, v->len);
            if (v->len) memcpy(p, v->s, v->len);
            p += v->len;
            break;
        case MORAINE_BOOL: *p++ = v->i ? MR_T_TRUE : MR_T_FALSE; break;
        case MORAINE_REAL: {
            uint64_t u;
            memcpy(&u, &v->d, 8);
            *p++ = MR_T_REAL;
            for (int k = 0; k < 8; k++) *p++ = (uint8_t)(u >> (8 * k));
            break;
        }
        default: return mr_err(MORAINE_EINVAL, "value of unknown type %d in column %zu", (int)v->type, i); /* nothing appended */
        }
    }
    b->len = (size_t)(p - b->p);
    return 0;
}

int mr_encode_row(mr_buf *b, int64_t ord, const moraine_value *vals, size_t n)
{
    const uint64_t head[2] = {(uint64_t)ord, n};
    return encode(b, head, 2, vals, n, NULL);
}

int mr_encode_child_row(mr_buf *b, int64_t prev, int64_t ord, const moraine_value *vals, size_t n, const mr_keymap *km)
{
    size_t at = b->len;
    int rc = mr_buf_reserve(b, 1);
    if (rc) return rc;
    b->len++; /* room for a one-byte length, the usual case */
    const uint64_t dord[1] = {zigzag((int64_t)((uint64_t)ord - (uint64_t)prev))};
    if ((rc = encode(b, dord, 1, vals, n, km))) {
        b->len = at;
        return rc;
    }
    size_t len = b->len - at - 1;
    uint8_t head[10];
    size_t k = put_uvarint_at(head, len);
    if (k > 1) {
        if ((rc = mr_buf_reserve(b, k - 1))) {
            b->len = at;
            return rc;
        }
        memmove(b->p + at + k, b->p + at + 1, len);
        b->len += k - 1;
    }
    memcpy(b->p + at, head, k);
    return 0;
}

int mr_child_row_span(const uint8_t **pp, const uint8_t *end, const uint8_t **rend)
{
    uint64_t len;
    int rc = mr_uvarint(pp, end, &len);
    if (rc) return rc;
    if (len > (uint64_t)(end - *pp)) return mr_err(MORAINE_ECORRUPT, "value: child row of %llu bytes runs past the end", (unsigned long long)len);
    *rend = *pp + len;
    return 0;
}

int mr_group_head(const uint8_t **pp, const uint8_t *end, uint64_t *rel_id, uint64_t *nrows, const uint8_t **gend)
{
    uint64_t nbytes;
    int rc;
    if ((rc = mr_uvarint(pp, end, rel_id)) || (rc = mr_uvarint(pp, end, nrows)) || (rc = mr_uvarint(pp, end, &nbytes))) return rc;
    if (nbytes > (uint64_t)(end - *pp)) return mr_err(MORAINE_ECORRUPT, "value: child group runs past the end");
    *gend = *pp + nbytes;
    return 0;
}

int mr_value_begin(mr_buf *b)
{
    static const uint8_t hdr[MR_HEADER_LEN] = {MR_FORMAT_VERSION, 0, 0, 0, 0};
    return mr_buf_put(b, hdr, sizeof hdr);
}

/* The checksum covers the key the value is stored under, then the value's
 * bytes after the header: a value read under any other key (a damaged key, or
 * a value moved by damaged page offsets) fails it. */
static uint32_t value_crc(const uint8_t *key, size_t keylen, const uint8_t *rest, size_t n)
{
    return mr_crc32c_update(mr_crc32c(key, keylen), rest, n);
}

void mr_value_seal(mr_buf *b, size_t start, const uint8_t *key, size_t keylen)
{
    uint32_t c = value_crc(key, keylen, b->p + start + MR_HEADER_LEN, b->len - start - MR_HEADER_LEN);
    for (int i = 0; i < 4; i++) b->p[start + 1 + i] = (uint8_t)(c >> (8 * i));
}

/* The checksum of the value at @p (its header first) stored under @key. */
static int check_header(const uint8_t *p, const uint8_t *end, const uint8_t *key, size_t keylen)
{
    uint32_t want = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 24;
    uint32_t got = value_crc(key, keylen, p + MR_HEADER_LEN, (size_t)(end - p - MR_HEADER_LEN));
    if (want != got)
        return mr_err(MORAINE_ECORRUPT, "value: checksum of key and value mismatch (stored %08x, computed %08x): the key or the value is damaged",
                      want, got);
    return 0;
}

int mr_decode_header(const uint8_t **p, const uint8_t *end, const uint8_t *key, size_t keylen)
{
    if (end - *p < MR_HEADER_LEN) return mr_err(MORAINE_ECORRUPT, "value: shorter than its header");
    if (**p != MR_FORMAT_VERSION) {
        if (**p >= MR_FORMAT_OLDEST && **p < MR_FORMAT_VERSION)
            return mr_err(MORAINE_ECORRUPT, "value: format version %u (a catalog written by an older moraine), this build reads %u: "
                          "`moraine compact` rewrites it in format %u", **p, MR_FORMAT_VERSION, MR_FORMAT_VERSION);
        return mr_err(MORAINE_ECORRUPT, "value: format version %u, this build reads %u", **p, MR_FORMAT_VERSION);
    }
    int rc = check_header(*p, end, key, keylen);
    if (rc) return rc;
    *p += MR_HEADER_LEN;
    return 0;
}

int mr_decode_header_any(const uint8_t **p, const uint8_t *end, const uint8_t *key, size_t keylen, int *version)
{
    if (end - *p < MR_HEADER_LEN) return mr_err(MORAINE_ECORRUPT, "value: shorter than its header");
    if (**p > MR_FORMAT_VERSION || **p < MR_FORMAT_OLDEST)
        return mr_err(MORAINE_ECORRUPT, "value: format version %u, this build reads %u to %u", **p, MR_FORMAT_OLDEST, MR_FORMAT_VERSION);
    int rc = check_header(*p, end, key, keylen);
    if (rc) return rc;
    *version = **p;
    *p += MR_HEADER_LEN;
    return 0;
}

int mr_decode_row(const uint8_t **pp, const uint8_t *end, int64_t *ord, moraine_value *vals, size_t cap, size_t *ncols)
{
    const uint8_t *p = *pp;
    uint64_t u, n;
    int rc;
    if ((rc = mr_get_uvarint(&p, end, &u))) return rc;
    if ((rc = mr_get_uvarint(&p, end, &n))) return rc;
    if (n > cap) return mr_err(MORAINE_ECORRUPT, "value: %llu columns where the table has %zu", (unsigned long long)n, cap);
    if ((rc = mr_decode_cells(&p, end, vals, (size_t)n))) return rc;
    *ord = (int64_t)u;
    *ncols = (size_t)n;
    *pp = p;
    return 0;
}

int mr_decode_child_row(const uint8_t **pp, const uint8_t *rend, const char *rel, int64_t prev, int64_t *ord, moraine_value *vals, size_t n,
                        const mr_keymap *km, const moraine_value *pkey, const uint8_t **cells)
{
    const uint8_t *p = *pp, *start = p;
    uint64_t u;
    int rc;
    if ((rc = mr_get_uvarint(&p, rend, &u))) return rc;
    const uint8_t *c = p;
    if ((rc = mr_decode_child_cells(&p, rend, vals, n, km, pkey))) return rc;
    if (p != rend)
        return mr_err(MORAINE_ECORRUPT, "value: child row of %s takes %zu bytes, its length says %zu", rel, (size_t)(p - start),
                      (size_t)(rend - start));
    *ord = mr_child_ord(prev, u);
    if (cells) *cells = c;
    *pp = p;
    return 0;
}

int mr_decode_child_cells(const uint8_t **pp, const uint8_t *end, moraine_value *vals, size_t n, const mr_keymap *km, const moraine_value *pkey)
{
    size_t at = 0;
    int rc;
    for (int j = 0; km && j < km->n; j++) { /* the stored cells before each column not stored, then its parent's value */
        size_t c = (size_t)km->ccol[j];
        if (c >= n) break;
        if ((rc = mr_decode_cells(pp, end, vals + at, c - at))) return rc;
        vals[c] = pkey[j];
        at = c + 1;
    }
    return mr_decode_cells(pp, end, vals + at, n - at);
}

int mr_child_keymap(const mr_rel *child, const mr_rel *parent, mr_keymap *km)
{
    km->n = 0;
    if (!parent || child->info.placement != MORAINE_PLACE_CHILD || !child->info.parent || strcmp(child->info.parent, parent->info.name) != 0)
        return mr_err(MORAINE_ECORRUPT, "value: rows of %s embedded in a %s row, which is not their parent table", child->info.name,
                      parent ? parent->info.name : "(unknown)");
    if (child->nkey != parent->nkey)
        return mr_err(MORAINE_ECORRUPT, "%s has %d parent-key columns where its parent %s has %d key columns", child->info.name, child->nkey,
                      parent->info.name, parent->nkey);
    for (int j = 0; j < child->nkey; j++) { /* insertion sort by child column */
        int k = km->n++;
        while (k > 0 && km->ccol[k - 1] > child->parentkey[j]) {
            km->ccol[k] = km->ccol[k - 1];
            km->pcol[k] = km->pcol[k - 1];
            k--;
        }
        km->ccol[k] = child->parentkey[j];
        km->pcol[k] = parent->keycols[j];
    }
    return 0;
}

int mr_pick_cells(const uint8_t *raw, size_t len, const int *cols, int n, moraine_value *out)
{
    const uint8_t *p = raw, *end = raw + len;
    int last = -1, rc;
    for (int j = 0; j < n; j++)
        if (cols[j] > last) last = cols[j];
    moraine_value v;
    for (int i = 0; i <= last; i++) {
        if ((rc = mr_decode_cells(&p, end, &v, 1))) return rc;
        for (int j = 0; j < n; j++)
            if (cols[j] == i) out[j] = v;
    }
    return 0;
}

int mr_decode_cells(const uint8_t **pp, const uint8_t *end, moraine_value *vals, size_t n)
{
    const uint8_t *p = *pp;
    uint64_t u;
    int rc;
    for (size_t i = 0; i < n; i++) {
        moraine_value *v = &vals[i];
        if (p >= end) return mr_err(MORAINE_ECORRUPT, "value: truncated at column %zu", i);
        uint8_t tag = *p++;
        switch (tag) {
        case MR_T_NULL: v->type = MORAINE_NULL; break;
        case MR_T_INT:
            if ((rc = mr_get_uvarint(&p, end, &u))) return rc;
            v->type = MORAINE_INT;
            v->i = unzigzag(u);
            break;
        case MR_T_STR:
        case MR_T_JSON:
            if ((rc = mr_get_uvarint(&p, end, &u))) return rc;
            if (u > (uint64_t)(end - p)) return mr_err(MORAINE_ECORRUPT, "value: string of %llu bytes runs past the end at column %zu", (unsigned long long)u, i);
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
    *pp = p;
    return 0;
}

/* Past the cell at *pp, checked as mr_decode_cells checks it (column @i
 * for the message); 0 or MORAINE_ECORRUPT. */
static int skip_cell(const uint8_t **pp, const uint8_t *end, uint64_t i)
{
    const uint8_t *p = *pp;
    uint64_t u;
    int rc;
    if (p >= end) return mr_err(MORAINE_ECORRUPT, "value: truncated at column %llu", (unsigned long long)i);
    uint8_t tag = *p++;
    switch (tag) {
    case MR_T_NULL:
    case MR_T_FALSE:
    case MR_T_TRUE: break;
    case MR_T_INT:
        if ((rc = mr_get_uvarint(&p, end, &u))) return rc;
        break;
    case MR_T_STR:
    case MR_T_JSON:
        if ((rc = mr_get_uvarint(&p, end, &u))) return rc;
        if (u > (uint64_t)(end - p)) return mr_err(MORAINE_ECORRUPT, "value: string of %llu bytes runs past the end at column %llu", (unsigned long long)u, (unsigned long long)i);
        p += u;
        break;
    case MR_T_REAL:
        if (end - p < 8) return mr_err(MORAINE_ECORRUPT, "value: truncated double at column %llu", (unsigned long long)i);
        p += 8;
        break;
    default: return mr_err(MORAINE_ECORRUPT, "value: unknown cell tag 0x%02x at column %llu", tag, (unsigned long long)i);
    }
    *pp = p;
    return 0;
}

/* Past the row at *pp (ord, ncols, cells), each cell checked as
 * mr_decode_row checks it: its *ord, *ncols and where its *cells begin;
 * MORAINE_ECORRUPT as mr_decode_row. */
static int skip_row(const uint8_t **pp, const uint8_t *end, uint64_t *ord, uint64_t *ncols, const uint8_t **cells)
{
    const uint8_t *p = *pp;
    uint64_t n;
    int rc;
    if ((rc = mr_get_uvarint(&p, end, ord)) || (rc = mr_get_uvarint(&p, end, &n))) return rc;
    *ncols = n;
    *cells = p;
    for (uint64_t i = 0; i < n; i++)
        if ((rc = skip_cell(&p, end, i))) return rc;
    *pp = p;
    return 0;
}

/* A cell's bytes: where it starts and how long it is. */
typedef struct {
    const uint8_t *p;
    size_t len;
} cell_span;

/* One child row of a format-2, -3 or -4 group at *pp (formats 3 and 4:
 * after its length, the row must end where the length says; format 4 has no
 * ord or count, but the difference from *prev) appended to @rows as format 5
 * writes it: its length, the zigzag of its ord less *prev, its cells as they
 * are (checked, as many as @rel has columns) but those of @km's columns,
 * which must be the bytes of the parent's key cells @pkey. */
static int upgrade_child_row(const uint8_t **pp, const uint8_t *gend, int ver, const mr_rel *rel, const mr_keymap *km, const cell_span *pkey,
                             int64_t *prev, mr_buf *rows)
{
    const uint8_t *p = *pp, *rend = gend, *cells;
    uint64_t ord, n, u;
    int rc;
    if (ver >= 3 && (rc = mr_child_row_span(&p, gend, &rend))) return rc;
    if (ver == 4) {
        if ((rc = mr_get_uvarint(&p, rend, &u))) return rc;
        ord = (uint64_t)mr_child_ord(*prev, u);
        n = rel->info.ncols;
    } else if ((rc = skip_row(&p, rend, &ord, &n, &cells))) {
        return rc;
    } else {
        p = cells;
    }
    if (n != rel->info.ncols)
        return mr_err(MORAINE_ECORRUPT, "value: child row of %s has %llu columns, expected %zu", rel->info.name, (unsigned long long)n,
                      rel->info.ncols);
    uint64_t d = zigzag((int64_t)(ord - (uint64_t)*prev));
    size_t at = rows->len, kj = 0;
    if ((rc = mr_buf_reserve(rows, 1))) return rc;
    rows->len++; /* the length, one byte for now */
    if ((rc = mr_put_uvarint(rows, d))) return rc;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *c = p;
        if ((rc = skip_cell(&p, rend, i))) return rc;
        if (kj < (size_t)km->n && (uint64_t)km->ccol[kj] == i) {
            if ((size_t)(p - c) != pkey[kj].len || memcmp(c, pkey[kj].p, pkey[kj].len) != 0)
                return mr_err(MORAINE_ECORRUPT, "value: child row of %s names another parent in column '%s'", rel->info.name,
                              rel->names[i]);
            kj++;
            continue;
        }
        if ((rc = mr_buf_put(rows, c, (size_t)(p - c)))) return rc;
    }
    if (ver >= 3 && p != rend)
        return mr_err(MORAINE_ECORRUPT, "value: child row of %s ends %zu bytes before its length says", rel->info.name, (size_t)(rend - p));
    size_t len = rows->len - at - 1;
    uint8_t head[10];
    size_t k = put_uvarint_at(head, len);
    if (k > 1) {
        if ((rc = mr_buf_reserve(rows, k - 1))) return rc;
        memmove(rows->p + at + k, rows->p + at + 1, len);
        rows->len += k - 1;
    }
    memcpy(rows->p + at, head, k);
    *prev = (int64_t)ord;
    *pp = p;
    return 0;
}

/* Format 2, 3 or 4 to 5: the header and the parent row as they are (the
 * checksum does not cover the version byte, but is computed again all the
 * same), each child group's rows as format 5 writes them (without their
 * parent-key cells, checked equal to the parent's) and its nbytes counted
 * again. A format-5 record is sealed again as it is. */
int mr_upgrade_value(moraine_db *db, mr_buf *out, const uint8_t *v, size_t vlen, const uint8_t *key, size_t keylen)
{
    const uint8_t *p = v, *end = v + vlen;
    int ver, rc;
    out->len = 0;
    if ((rc = mr_decode_header_any(&p, end, key, keylen, &ver)) || (rc = mr_value_begin(out))) return rc;
    if (ver == MR_FORMAT_VERSION) {
        if ((rc = mr_buf_put(out, p, (size_t)(end - p)))) return rc;
    } else {
        const uint8_t *row = p, *cells;
        uint64_t ord, n;
        if ((rc = skip_row(&p, end, &ord, &n, &cells)) || (rc = mr_buf_put(out, row, (size_t)(p - row)))) return rc;
        mr_buf rows = {0};
        while (!rc && p < end) {
            uint64_t id, nrows;
            const uint8_t *gend;
            if ((rc = mr_group_head(&p, end, &id, &nrows, &gend))) break;
            const mr_rel *rel = mr_rel_by_id(db, id);
            if (!rel) {
                rc = mr_err(MORAINE_ECORRUPT, "value: child group of unknown table id %llu", (unsigned long long)id);
                break;
            }
            /* the parent's key cells, which the child rows name and format 5 leaves out */
            mr_keymap km;
            cell_span pkey[MR_MAX_KEYCOLS];
            if ((rc = mr_child_keymap(rel, rel->info.parent ? mr_rel_by_name(db, rel->info.parent) : NULL, &km))) break;
            const uint8_t *c = cells;
            for (uint64_t i = 0; !rc && i < n; i++) {
                const uint8_t *at = c;
                if ((rc = skip_cell(&c, end, i))) break;
                for (int j = 0; j < km.n; j++)
                    if ((uint64_t)km.pcol[j] == i) pkey[j] = (cell_span){at, (size_t)(c - at)};
            }
            for (int j = 0; !rc && j < km.n; j++)
                if ((uint64_t)km.pcol[j] >= n) rc = mr_err(MORAINE_ECORRUPT, "value: the parent row has %llu columns, its key column is %d", (unsigned long long)n, km.pcol[j]);
            if (rc) break;
            rows.len = 0;
            int64_t prev = 0;
            for (uint64_t r = 0; !rc && r < nrows; r++) rc = upgrade_child_row(&p, gend, ver, rel, &km, pkey, &prev, &rows);
            if (!rc && p != gend) rc = mr_err(MORAINE_ECORRUPT, "value: child group has %lld stray bytes", (long long)(gend - p));
            if (!rc && !(rc = mr_put_uvarint(out, id)) && !(rc = mr_put_uvarint(out, nrows)) && !(rc = mr_put_uvarint(out, rows.len)))
                rc = mr_buf_put(out, rows.p, rows.len);
        }
        mr_buf_free(&rows);
        if (rc) return rc;
    }
    mr_value_seal(out, 0, key, keylen);
    return 0;
}
