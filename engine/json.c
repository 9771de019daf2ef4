/*
 * json.c — rows as JSON text, in DuckDB's JSON-lines form (the form of the
 * fixtures and of moraine_export_ndjson): columns in the catalog's order,
 * exact integers, null, true/false, strings escaped the way DuckDB escapes
 * them (" \ and control characters; UTF-8 kept as is). A string that is not
 * valid UTF-8 cannot be JSON: refused with EINVAL naming the column.
 * Secret columns (MORAINE_COL_SECRET, the encryption keys of an encrypted
 * lake) are rendered as "<redacted>" unless the caller asks for them
 * (MORAINE_JSON_SECRETS; export always does): docs/security.md.
 */
#include "internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p, or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) len = 2, min = 0x80, c &= 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800, c &= 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000, c &= 0x07;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (p[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    return len;
}

int mr_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(p + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

/* Appends a JSON string; returns 1 when the bytes are not valid UTF-8. */
int mr_json_string(mr_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (mr_buf_reserve(b, n + 2)) return -1;
    b->p[b->len++] = '"';
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        /* a run of plain bytes at once */
        size_t j = i;
        while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\') j++;
        if (j > i) {
            if (mr_buf_put(b, p + i, j - i)) return -1;
            i = j;
            continue;
        }
        char esc[8];
        const char *e = NULL;
        if (c == '"') e = "\\\"";
        else if (c == '\\') e = "\\\\";
        else if (c == '\n') e = "\\n";
        else if (c == '\r') e = "\\r";
        else if (c == '\t') e = "\\t";
        else if (c == '\b') e = "\\b";
        else if (c == '\f') e = "\\f";
        else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            e = esc;
        }
        if (e) {
            if (mr_buf_put(b, e, strlen(e))) return -1;
            i++;
            continue;
        }
        size_t l = utf8_len(p + i, n - i);
        if (!l) return 1;
        if (mr_buf_put(b, p + i, l)) return -1;
        i += l;
    }
    return mr_buf_byte(b, '"') ? -1 : 0;
}

/* a finite double as JSON (the caller refuses NaN and the infinities: JSON has no form for them) */
static int json_real(mr_buf *b, double d)
{
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    int rc = mr_buf_put(b, buf, strlen(buf));
    if (!rc && !strpbrk(buf, ".eEn")) rc = mr_buf_put(b, ".0", 2);
    return rc;
}

/* Appends {"col":value,...} for a row of relation @rel (no closing brace when
 * @open). A secret column (MORAINE_COL_SECRET) is written as MORAINE_REDACTED
 * unless @secrets; a NULL stays null, so NULL and present stay apart. */
int mr_json_row(mr_buf *b, const moraine_relation_info *rel, const moraine_value *vals, size_t n, int open, int secrets)
{
    int rc = mr_buf_byte(b, '{');
    for (size_t k = 0; !rc && k < n; k++) {
        if (k) rc = mr_buf_byte(b, ',');
        if (!rc) rc = mr_json_string(b, rel->colnames[k], strlen(rel->colnames[k])) ? -1 : 0;
        if (!rc) rc = mr_buf_byte(b, ':');
        if (rc) break;
        const moraine_value *v = &vals[k];
        if (!secrets && v->type != MORAINE_NULL && rel->colflags && k < rel->ncols && (rel->colflags[k] & MORAINE_COL_SECRET)) {
            rc = mr_buf_put(b, "\"" MORAINE_REDACTED "\"", strlen(MORAINE_REDACTED) + 2);
            continue;
        }
        char num[32];
        switch (v->type) {
        case MORAINE_NULL: rc = mr_buf_put(b, "null", 4); break;
        case MORAINE_INT:
            snprintf(num, sizeof num, "%lld", (long long)v->i);
            rc = mr_buf_put(b, num, strlen(num));
            break;
        case MORAINE_BOOL: rc = v->i ? mr_buf_put(b, "true", 4) : mr_buf_put(b, "false", 5); break;
        case MORAINE_REAL:
            if (!isfinite(v->d)) /* written as null it would read back as NULL: refused, as invalid UTF-8 is */
                return mr_err(MORAINE_EINVAL, "%s: column '%s' holds %s, which JSON cannot carry", rel->name, rel->colnames[k],
                              isnan(v->d) ? "NaN" : v->d > 0 ? "Infinity" : "-Infinity");
            rc = json_real(b, v->d);
            break;
        case MORAINE_JSON: rc = mr_buf_put(b, v->s, v->len); break;
        case MORAINE_STR: {
            int u = mr_json_string(b, v->s, v->len);
            if (u == 1) {
                char shown[160];
                size_t o = 0;
                for (size_t i = 0; i < v->len && i < 40 && o + 5 < sizeof shown; i++) {
                    unsigned char ch = (unsigned char)v->s[i];
                    o += (size_t)snprintf(shown + o, sizeof shown - o, ch >= 0x20 && ch < 0x7F && ch != '\\' ? "%c" : "\\x%02x", ch);
                }
                shown[o] = 0;
                return mr_err(MORAINE_EINVAL, "%s: column '%s' holds '%s%s', bytes that are not valid UTF-8, which JSON cannot carry",
                              rel->name, rel->colnames[k], shown, v->len > 40 ? "..." : "");
            }
            rc = u ? MORAINE_ENOMEM : 0;
            break;
        }
        }
    }
    if (rc) return rc < 0 ? mr_err(MORAINE_ENOMEM, "out of memory") : rc;
    return open ? 0 : mr_buf_byte(b, '}');
}

int moraine_row_json(moraine_read *rd, const moraine_row *row, unsigned flags, moraine_json *out)
{
    if (!rd || !row || !out) return mr_err(MORAINE_EINVAL, "moraine_row_json: NULL argument");
    int frc = MR_READ_HERE(rd); /* the row's bytes are in the read's pages */
    if (frc) return frc;
    mr_buf b = {(uint8_t *)out->p, out->len, out->cap};
    int want_kids = (flags & (MORAINE_JSON_CHILDREN | MORAINE_JSON_PARTITION_VALUES)) && row->children_len;
    int secrets = (flags & MORAINE_JSON_SECRETS) != 0;
    int rc = mr_json_row(&b, row->rel, row->vals, row->ncols, 1, secrets);
    if (!rc && want_kids) {
        moraine_children it;
        moraine_row ch;
        moraine_row_children(rd, row, &it);
        const moraine_relation_info *cur = NULL;
        int pv = -1;
        while (!rc && (rc = moraine_children_next(&it, &ch)) == 1) {
            rc = 0;
            int is_pv = strcmp(ch.rel->name, "ducklake_file_partition_value") == 0;
            if (flags & MORAINE_JSON_PARTITION_VALUES && is_pv) {
                /* "partition_values":["2025","3",null] in partition_key_index order as stored */
                if (pv < 0 && cur) { /* close the child group before: values are not one of its rows */
                    rc = mr_buf_byte(&b, ']');
                    cur = NULL;
                }
                if (rc) break;
                if (pv < 0) rc = mr_buf_put(&b, ",\"partition_values\":[", 21);
                else rc = mr_buf_byte(&b, ',');
                pv = 1;
                int iv = moraine_column_index(ch.rel, "partition_value");
                if (!rc && iv >= 0 && ch.vals[iv].type == MORAINE_STR) {
                    int u = mr_json_string(&b, ch.vals[iv].s, ch.vals[iv].len);
                    if (u == 1) rc = mr_err(MORAINE_EINVAL, "ducklake_file_partition_value: a partition value is not valid UTF-8");
                    else if (u) rc = mr_err(MORAINE_ENOMEM, "out of memory");
                } else if (!rc) {
                    rc = mr_buf_put(&b, "null", 4);
                }
                continue;
            }
            if (!(flags & MORAINE_JSON_CHILDREN)) continue;
            if (pv == 1) {
                rc = mr_buf_byte(&b, ']');
                pv = 0;
            }
            if (ch.rel != cur) {
                if (cur) rc = mr_buf_byte(&b, ']');
                if (!rc) rc = mr_buf_byte(&b, ',');
                if (!rc) rc = mr_json_string(&b, ch.rel->name, strlen(ch.rel->name)) ? MORAINE_ENOMEM : 0;
                if (!rc) rc = mr_buf_put(&b, ":[", 2);
                cur = ch.rel;
            } else {
                rc = mr_buf_byte(&b, ',');
            }
            if (!rc) rc = mr_json_row(&b, ch.rel, ch.vals, ch.ncols, 0, secrets);
        }
        moraine_children_free(&it);
        if (!rc && pv == 1) rc = mr_buf_byte(&b, ']');
        if (!rc && cur) rc = mr_buf_byte(&b, ']');
    }
    if (!rc && (flags & MORAINE_JSON_PARTITION_VALUES) && !want_kids) rc = mr_buf_put(&b, ",\"partition_values\":[]", 22);
    if (!rc) rc = mr_buf_byte(&b, '}');
    out->p = (char *)b.p;
    out->len = b.len;
    out->cap = b.cap;
    return rc;
}

void moraine_json_free(moraine_json *j)
{
    free(j->p);
    j->p = NULL;
    j->len = j->cap = 0;
}
