/*
 * coltype.c — a column's type as the verbs take it (moraine_column_def.type)
 * read into the tree of ducklake_column rows DuckLake writes for it.
 *
 * A non-nested type is DuckLake's spelling, kept as given ("int64",
 * "decimal(18,2)"). A nested type names its children:
 *
 *     type   := "struct" "(" field { "," field } ")"
 *             | "list" "(" type ")"
 *             | "map" "(" type "," type ")"
 *             | leaf
 *     field  := name type
 *     name   := [A-Za-z_\x80-\xff][A-Za-z0-9_$\x80-\xff]*  |  '"' { any byte but '"' | '""' } '"'
 *     leaf   := word [ "(" balanced text ")" ]     (inside a nested type)
 *
 * with blanks allowed between the parts and struct/list/map matched without
 * regard to ASCII case. DuckLake stores the nested rows' column_type as
 * "struct", "list" and "map" (DuckLakeTypes::ToString, ducklake_types.cpp);
 * a list's child is named "element", a map's "key" and "value"
 * (DuckLakeFieldId::FieldIdFromType, ducklake_field_data.cpp).
 */
#include "verbs_internal.h"
#include <stdlib.h>
#include <string.h>

/* Deepest nesting read (DuckDB bounds its parser's recursion too). */
#define MV_TYPE_DEPTH 100

typedef struct {
    const char *s; /* the whole text */
    const char *p; /* where reading is */
    const char *col;
} reader;

static void blanks(reader *r)
{
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r' || *r->p == '\f' || *r->p == '\v') r->p++;
}

static int word_start(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
static int word_byte(unsigned char c) { return word_start(c) || (c >= '0' && c <= '9') || c == '$'; }

/* 1 when the text at @p is the keyword @kw (ASCII case ignored) not followed by a word byte. */
static int is_kw(const char *p, const char *kw)
{
    size_t n = strlen(kw);
    for (size_t i = 0; i < n; i++)
        if ((p[i] | 0x20) != kw[i]) return 0;
    return !word_byte((unsigned char)p[n]);
}

static int bad(reader *r, const char *what)
{
    return mr_err(MORAINE_EINVAL, "column \"%s\": cannot read the type \"%s\" at byte %zu: %s", r->col, r->s, (size_t)(r->p - r->s) + 1, what);
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

void mv_type_free(mv_type *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->nkids; i++) mv_type_free(&t->kids[i]);
    free(t->kids);
    free(t->name);
    free(t->type);
    memset(t, 0, sizeof *t);
}

/* Appends a zeroed child to @t into *out. ENOMEM. */
static int add_kid(mv_type *t, mv_type **out)
{
    mv_type *k = realloc(t->kids, (t->nkids + 1) * sizeof *k);
    if (!k) return mr_err(MORAINE_ENOMEM, "out of memory");
    t->kids = k;
    memset(&k[t->nkids], 0, sizeof k[0]);
    *out = &k[t->nkids++];
    return 0;
}

/* A struct field's name, bare or double-quoted, into *out (malloc'd). */
static int read_name(reader *r, char **out)
{
    blanks(r);
    if (*r->p == '"') {
        const char *q = r->p + 1;
        size_t n = 0;
        for (const char *e = q;; e++) {
            if (!*e) return bad(r, "a quoted name is not closed");
            if (*e == '"' && e[1] == '"') { e++; n++; continue; }
            if (*e == '"') break;
            n++;
        }
        char *d = malloc(n + 1);
        if (!d) return mr_err(MORAINE_ENOMEM, "out of memory");
        size_t k = 0;
        const char *e = q;
        for (; !(*e == '"' && e[1] != '"'); e++) {
            if (*e == '"') e++;
            d[k++] = *e;
        }
        d[k] = 0;
        r->p = e + 1;
        if (!k) {
            free(d);
            return bad(r, "a struct field needs a name");
        }
        *out = d;
        return 0;
    }
    if (!word_start((unsigned char)*r->p)) return bad(r, "expected a struct field's name");
    const char *b = r->p;
    while (word_byte((unsigned char)*r->p)) r->p++;
    if (!(*out = dupn(b, (size_t)(r->p - b)))) return mr_err(MORAINE_ENOMEM, "out of memory");
    return 0;
}

static int expect(reader *r, char c, const char *what)
{
    blanks(r);
    if (*r->p != c) return bad(r, *r->p ? what : "the type ends early: a '(' is not closed");
    r->p++;
    return 0;
}

static int read_type(reader *r, mv_type *t, int depth);

/* A non-nested type inside a nested one: a word and, if any, its
 * parenthesised parameters ("decimal(18,2)"), kept as written. */
static int read_leaf(reader *r, mv_type *t)
{
    blanks(r);
    const char *b = r->p;
    if (!word_start((unsigned char)*r->p)) return bad(r, "expected a type");
    while (word_byte((unsigned char)*r->p)) r->p++;
    const char *e = r->p;
    blanks(r);
    if (*r->p == '(') {
        int d = 0;
        do {
            if (!*r->p) return bad(r, "a '(' is not closed");
            if (*r->p == '(') d++;
            else if (*r->p == ')') d--;
            r->p++;
        } while (d > 0);
        e = r->p;
    }
    if (!(t->type = dupn(b, (size_t)(e - b)))) return mr_err(MORAINE_ENOMEM, "out of memory");
    return 0;
}

static int read_type(reader *r, mv_type *t, int depth)
{
    if (depth > MV_TYPE_DEPTH) return bad(r, "moraine reads a type nested 100 levels deep at most");
    blanks(r);
    static const char *const kinds[3] = {"struct", "list", "map"};
    int kind = -1;
    for (int k = 0; k < 3; k++)
        if (is_kw(r->p, kinds[k])) kind = k;
    if (kind < 0) return read_leaf(r, t);
    r->p += strlen(kinds[kind]);
    if (!(t->type = strdup(kinds[kind]))) return mr_err(MORAINE_ENOMEM, "out of memory");
    blanks(r);
    if (*r->p != '(') {
        static const char *const need[3] = {"struct needs its fields: struct(name type, ...)", "list needs its element type: list(type)",
                                            "map needs its key and value types: map(key, value)"};
        return bad(r, need[kind]);
    }
    r->p++;
    blanks(r);
    int rc = 0;
    mv_type *k;
    if (kind == 0) {
        /* DuckLake: a STRUCT without fields is no DuckLake type (DuckLakeTypes::ToString) */
        if (*r->p == ')') return mr_err(MORAINE_EINVAL, "Failed to convert DuckDB type to DuckLake - unsupported type STRUCT()");
        for (;;) {
            if ((rc = add_kid(t, &k)) || (rc = read_name(r, &k->name)) || (rc = read_type(r, k, depth + 1))) return rc;
            /* DuckDB's parser (Transformer::TransformTypeName): field names
             * unique without regard to case */
            for (size_t i = 0; i + 1 < t->nkids; i++)
                if (mr_ident_eq(t->kids[i].name, k->name)) return mr_err(MORAINE_EINVAL, "Duplicate struct entry name \"%s\"", k->name);
            blanks(r);
            if (*r->p == ',') {
                r->p++;
                continue;
            }
            return expect(r, ')', "expected ',' or ')' after a struct field");
        }
    }
    if ((rc = add_kid(t, &k))) return rc;
    if (!(k->name = strdup(kind == 1 ? "element" : "key"))) return mr_err(MORAINE_ENOMEM, "out of memory");
    if ((rc = read_type(r, k, depth + 1))) return rc;
    if (kind == 2) {
        if ((rc = expect(r, ',', "a map needs its key and value types: map(key, value)"))) return rc;
        if ((rc = add_kid(t, &k))) return rc;
        if (!(k->name = strdup("value"))) return mr_err(MORAINE_ENOMEM, "out of memory");
        if ((rc = read_type(r, k, depth + 1))) return rc;
    }
    return expect(r, ')', kind == 1 ? "a list has one element type: list(type)" : "a map has two types: map(key, value)");
}

int mv_type_parse(const char *col, const char *text, mv_type *out)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text) return mr_err(MORAINE_EINVAL, "column \"%s\" needs a type", col ? col : "");
    reader r = {.s = text, .p = text, .col = col ? col : ""};
    blanks(&r);
    int nested = is_kw(r.p, "struct") || is_kw(r.p, "list") || is_kw(r.p, "map");
    if (!nested) {
        /* a non-nested type is stored as given (DuckLake's spelling) */
        if (!(out->type = strdup(text))) return mr_err(MORAINE_ENOMEM, "out of memory");
        return 0;
    }
    int rc = read_type(&r, out, 0);
    if (!rc) {
        blanks(&r);
        if (*r.p) rc = bad(&r, "unexpected text after the type");
    }
    if (rc) mv_type_free(out);
    return rc;
}

int mv_type_nested(const mv_type *t) { return t->nkids > 0; }

const char *mv_type_duckdb_kind(const mv_type *t)
{
    if (!t->nkids) return NULL;
    return strcmp(t->type, "struct") == 0 ? "STRUCT" : strcmp(t->type, "list") == 0 ? "LIST" : "MAP";
}
