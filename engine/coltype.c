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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    const char *canon;
    int rc = mv_leaf_type(r->col, t->type, &canon);
    if (rc || canon == t->type) return rc;
    free(t->type);
    return (t->type = strdup(canon)) ? 0 : mr_err(MORAINE_ENOMEM, "out of memory");
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
        /* a non-nested type is stored in DuckLake's spelling */
        const char *canon;
        int rc = mv_leaf_type(r.col, text, &canon);
        if (rc) return rc;
        if (!(out->type = strdup(canon))) return mr_err(MORAINE_ENOMEM, "out of memory");
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

/* ---- decimal(width,scale) --------------------------------------------------- */

/* Reads an optionally signed run of digits at *p (advancing it): *neg the
 * sign, *v the value capped at 1000 (DuckDB casts a modifier to UTINYINT,
 * so anything above 255 fails alike), *lead0 when it has a leading zero
 * ("018"). 0 when there is no digit. */
static int read_mod(const char **p, int *neg, int *v, int *lead0)
{
    const char *s = *p;
    *neg = *s == '-';
    if (*neg) s++;
    if (*s < '0' || *s > '9') return 0;
    *lead0 = s[0] == '0' && s[1] >= '0' && s[1] <= '9';
    long n = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        if (n < 1000) n = n * 10 + (*s - '0');
    *v = n > 1000 ? 1000 : (int)n;
    *p = s;
    return 1;
}

int mv_decimal_check(const char *col, const char *text)
{
    if (!text || strncasecmp(text, "decimal", 7) != 0) return 0;
    const char *p = text + 7;
    if (*p && *p != '(' && *p != ' ') return 0; /* another word ("decimals") */
    const char *c = col ? col : "";
    int wneg = 0, w = 0, w0 = 0, sneg = 0, sc = 0, s0 = 0;
    int ok = *p == '(';
    if (ok) {
        p++;
        ok = read_mod(&p, &wneg, &w, &w0) && *p == ',';
    }
    if (ok) {
        p++;
        ok = read_mod(&p, &sneg, &sc, &s0) && *p == ')' && p[1] == 0;
    }
    if (!ok) return mr_err(MORAINE_EINVAL, "column \"%s\": the type \"%s\" is not DuckLake's decimal(width,scale) (ducklake_column.column_type)", c, text);
    /* DuckDB's BindDecimalType (src/catalog/default/default_types.cpp), in
     * its order: each modifier cast to UTINYINT, then the width's range, then
     * the scale against the width */
    if (wneg || w > 255) return mr_err(MORAINE_EINVAL, "DECIMAL type width must be between 1 and 38 (column \"%s\": %s)", c, text);
    if (sneg || sc > 255) return mr_err(MORAINE_EINVAL, "DECIMAL type scale must be between 0 and 38 (column \"%s\": %s)", c, text);
    if (w < 1 || w > 38) return mr_err(MORAINE_EINVAL, "DECIMAL type width must be between 1 and 38 (column \"%s\": %s)", c, text);
    if (sc > w) return mr_err(MORAINE_EINVAL, "DECIMAL type scale cannot be greater than width (column \"%s\": %s)", c, text);
    /* DuckLakeTypes::ToString writes "decimal(W,S)": lower case, plain digits */
    if (strncmp(text, "decimal(", 8) != 0 || w0 || s0)
        return mr_err(MORAINE_EINVAL, "column \"%s\": the type \"%s\" is not spelled as DuckLake writes it: decimal(%d,%d)", c, text, w, sc);
    return 0;
}

/* ---- ALTER COLUMN ... TYPE: DuckLake's widening promotions ------------------- */

/* DuckDB's LogicalTypeId of each DuckLake type (DuckLakeTypes::FromString,
 * ducklake_types.cpp; the numbers are DuckDB's, types.hpp: CombineNumericTypes
 * orders by them). JSON is VARCHAR with the alias "JSON" (LT_JSON here). */
enum {
    LT_BOOLEAN = 10, LT_TINYINT = 11, LT_SMALLINT = 12, LT_INTEGER = 13, LT_BIGINT = 14, LT_DATE = 15, LT_TIME = 16,
    LT_TIMESTAMP_SEC = 17, LT_TIMESTAMP_MS = 18, LT_TIMESTAMP = 19, LT_TIMESTAMP_NS = 20, LT_DECIMAL = 21, LT_FLOAT = 22,
    LT_DOUBLE = 23, LT_VARCHAR = 25, LT_BLOB = 26, LT_INTERVAL = 27, LT_UTINYINT = 28, LT_USMALLINT = 29, LT_UINTEGER = 30,
    LT_UBIGINT = 31, LT_TIMESTAMP_TZ = 32, LT_TIMESTAMP_TZ_NS = 33, LT_TIME_TZ = 34, LT_TIME_NS = 35, LT_UHUGEINT = 49,
    LT_HUGEINT = 50, LT_UUID = 54, LT_GEOMETRY = 60, LT_VARIANT = 109, LT_JSON = 1000
};

typedef struct {
    int id, width, scale;
    const char *duckdb; /* LogicalType::ToString (decimal: "DECIMAL") */
} ltype;

static const struct {
    const char *name;
    int id;
    const char *duckdb;
} dl_types[] = {
    {"boolean", LT_BOOLEAN, "BOOLEAN"},
    {"int8", LT_TINYINT, "TINYINT"},
    {"int16", LT_SMALLINT, "SMALLINT"},
    {"int32", LT_INTEGER, "INTEGER"},
    {"int64", LT_BIGINT, "BIGINT"},
    {"int128", LT_HUGEINT, "HUGEINT"},
    {"uint8", LT_UTINYINT, "UTINYINT"},
    {"uint16", LT_USMALLINT, "USMALLINT"},
    {"uint32", LT_UINTEGER, "UINTEGER"},
    {"uint64", LT_UBIGINT, "UBIGINT"},
    {"uint128", LT_UHUGEINT, "UHUGEINT"},
    {"float32", LT_FLOAT, "FLOAT"},
    {"float64", LT_DOUBLE, "DOUBLE"},
    {"time", LT_TIME, "TIME"},
    {"time_ns", LT_TIME_NS, "TIME_NS"},
    {"date", LT_DATE, "DATE"},
    {"timestamp", LT_TIMESTAMP, "TIMESTAMP"},
    {"timestamp_us", LT_TIMESTAMP, "TIMESTAMP"},
    {"timestamp_ms", LT_TIMESTAMP_MS, "TIMESTAMP_MS"},
    {"timestamp_ns", LT_TIMESTAMP_NS, "TIMESTAMP_NS"},
    {"timestamp_s", LT_TIMESTAMP_SEC, "TIMESTAMP_S"},
    {"timestamptz", LT_TIMESTAMP_TZ, "TIMESTAMP WITH TIME ZONE"},
    {"timestamptz_ns", LT_TIMESTAMP_TZ_NS, "TIMESTAMPTZ_NS"},
    {"timetz", LT_TIME_TZ, "TIME WITH TIME ZONE"},
    {"interval", LT_INTERVAL, "INTERVAL"},
    {"varchar", LT_VARCHAR, "VARCHAR"},
    {"blob", LT_BLOB, "BLOB"},
    {"uuid", LT_UUID, "UUID"},
    {"json", LT_JSON, "JSON"},
    {"variant", LT_VARIANT, "VARIANT"},
    {"geometry", LT_GEOMETRY, "GEOMETRY"},
};

/* The DuckDB type DuckLake reads @text as (DuckLakeTypes::FromString: names
 * without regard to case, "decimal(W,S)" as written); 0 when moraine does
 * not know it (then *t is untouched). */
static int ltype_of(const char *text, ltype *t)
{
    if (!text) return 0;
    if (strncmp(text, "decimal(", 8) == 0) {
        const char *p = text + 8;
        int neg, w, s, z;
        if (!read_mod(&p, &neg, &w, &z) || neg || *p++ != ',' || !read_mod(&p, &neg, &s, &z) || neg || *p != ')' || p[1]) return 0;
        if (w < 1 || w > 38 || s > w) return 0;
        t->id = LT_DECIMAL, t->width = w, t->scale = s, t->duckdb = "DECIMAL";
        return 1;
    }
    for (size_t i = 0; i < sizeof dl_types / sizeof dl_types[0]; i++)
        if (strcasecmp(text, dl_types[i].name) == 0) {
            t->id = dl_types[i].id, t->width = t->scale = 0, t->duckdb = dl_types[i].duckdb;
            return 1;
        }
    return 0;
}

int mv_leaf_type(const char *col, const char *text, const char **canon)
{
    int rc = mv_decimal_check(col, text);
    if (rc) return rc;
    ltype t;
    if (!ltype_of(text, &t))
        return strcasecmp(text, "unknown") == 0
                   ? mr_err(MORAINE_EINVAL, "column \"%s\": the type \"%s\" is no type DuckLake writes for a column", col ? col : "", text)
                   : mr_err(MORAINE_EINVAL,
                            "column \"%s\": DuckLake cannot load the type \"%s\" (Failed to parse DuckLake type - unsupported type '%s')",
                            col ? col : "", text, text);
    *canon = text;
    if (t.id == LT_DECIMAL) return 0;
    /* DuckLakeTypes::ToString: the first name of the type's id in DuckLake's list */
    for (size_t i = 0; i < sizeof dl_types / sizeof dl_types[0]; i++)
        if (dl_types[i].id == t.id) {
            *canon = dl_types[i].name;
            break;
        }
    return 0;
}

static int ltype_eq(const ltype *a, const ltype *b) { return a->id == b->id && a->width == b->width && a->scale == b->scale; }

static int is_integral(int id)
{
    switch (id) {
    case LT_TINYINT: case LT_SMALLINT: case LT_INTEGER: case LT_BIGINT: case LT_HUGEINT:
    case LT_UTINYINT: case LT_USMALLINT: case LT_UINTEGER: case LT_UBIGINT: case LT_UHUGEINT:
        return 1;
    default:
        return 0;
    }
}

static int is_numeric(int id) { return is_integral(id) || id == LT_FLOAT || id == LT_DOUBLE || id == LT_DECIMAL; }

/* DuckDB's TargetTypeCost (src/function/cast_rules.cpp) */
static int target_cost(int to)
{
    switch (to) {
    case LT_BIGINT: return 101;
    case LT_INTEGER: return 102;
    case LT_HUGEINT: return 103;
    case LT_DOUBLE: return 104;
    case LT_DECIMAL: return 105;
    case LT_TIMESTAMP_NS: return 119;
    case LT_TIMESTAMP: return 120;
    case LT_TIMESTAMP_MS: return 121;
    case LT_TIMESTAMP_SEC: return 122;
    case LT_TIMESTAMP_TZ: return 123;
    case LT_TIMESTAMP_TZ_NS: return 124;
    case LT_VARCHAR: return 149;
    default: return 110;
    }
}

/* DuckDB's CastRules::ImplicitCast between two unequal type ids without an
 * alias (src/function/cast_rules.cpp): the cost, or -1 when there is no
 * implicit cast. */
static int implicit_cast(int from, int to)
{
    static const struct {
        int from;
        int to[12];
    } rules[] = {
        {LT_TINYINT, {LT_SMALLINT, LT_INTEGER, LT_BIGINT, LT_HUGEINT, LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_SMALLINT, {LT_INTEGER, LT_BIGINT, LT_HUGEINT, LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_INTEGER, {LT_BIGINT, LT_HUGEINT, LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_BIGINT, {LT_FLOAT, LT_DOUBLE, LT_HUGEINT, LT_DECIMAL}},
        {LT_UTINYINT, {LT_USMALLINT, LT_UINTEGER, LT_UBIGINT, LT_SMALLINT, LT_INTEGER, LT_BIGINT, LT_HUGEINT, LT_UHUGEINT, LT_FLOAT,
                       LT_DOUBLE, LT_DECIMAL}},
        {LT_USMALLINT, {LT_UINTEGER, LT_UBIGINT, LT_INTEGER, LT_BIGINT, LT_HUGEINT, LT_UHUGEINT, LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_UINTEGER, {LT_UBIGINT, LT_BIGINT, LT_UHUGEINT, LT_HUGEINT, LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_UBIGINT, {LT_FLOAT, LT_DOUBLE, LT_UHUGEINT, LT_HUGEINT, LT_DECIMAL}},
        {LT_HUGEINT, {LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_UHUGEINT, {LT_FLOAT, LT_DOUBLE, LT_DECIMAL}},
        {LT_FLOAT, {LT_DOUBLE}},
        {LT_DECIMAL, {LT_FLOAT, LT_DOUBLE}},
        {LT_DATE, {LT_TIMESTAMP, LT_TIMESTAMP_TZ, LT_TIMESTAMP_TZ_NS, LT_TIMESTAMP_MS, LT_TIMESTAMP_NS, LT_TIMESTAMP_SEC}},
        {LT_TIMESTAMP_SEC, {LT_TIMESTAMP, LT_TIMESTAMP_MS, LT_TIMESTAMP_NS}},
        {LT_TIMESTAMP_MS, {LT_TIMESTAMP, LT_TIMESTAMP_NS}},
        {LT_TIMESTAMP_NS, {LT_TIMESTAMP}},
        {LT_TIMESTAMP, {LT_TIMESTAMP_NS, LT_TIMESTAMP_TZ, LT_TIMESTAMP_TZ_NS}},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        if (rules[i].from != from) continue;
        for (size_t k = 0; k < 12 && rules[i].to[k]; k++)
            if (rules[i].to[k] == to) return target_cost(to);
        return -1;
    }
    return -1;
}

/* DuckDB's GetDecimalProperties width of an integral type (types.cpp) */
static int decimal_width(int id)
{
    switch (id) {
    case LT_TINYINT: case LT_UTINYINT: return 3;
    case LT_SMALLINT: case LT_USMALLINT: return 5;
    case LT_INTEGER: case LT_UINTEGER: return 10;
    case LT_BIGINT: return 19;
    case LT_UBIGINT: return 20;
    default: return 38; /* HUGEINT, UHUGEINT */
    }
}

/* DuckDB's CombineNumericTypes (types.cpp): two numeric ids with no implicit cast either way. */
static int combine_numeric(int l, int r)
{
    if (l > r) {
        int x = l;
        l = r, r = x;
    }
    if (l == LT_BIGINT || r == LT_UBIGINT) return LT_HUGEINT;
    if (l == LT_INTEGER || r == LT_UINTEGER) return LT_BIGINT;
    if (l == LT_SMALLINT || r == LT_USMALLINT) return LT_INTEGER;
    if (l == LT_TINYINT || r == LT_UTINYINT) return LT_SMALLINT;
    if (l == LT_UHUGEINT || r == LT_HUGEINT) return LT_DOUBLE;
    return -1; /* DuckDB: InternalException */
}

/* DuckLake's TypePromotionIsAllowed for @s != @t: DuckDB's
 * LogicalType::DefaultTryGetMaxLogicalTypeUnchecked(s, t) succeeds and gives
 * @t (types.cpp TryGetMaxLogicalTypeInternal: DefaultCombineTypesRules, then
 * TryCombineViaImplicitCast, then the numeric and boolean fallbacks). */
static int promotion_allowed(const ltype *s, const ltype *t)
{
    /* MatchesNoAlias / CombineNoAliasTypes: the aliased side wins, the left (source) first */
    if (s->id == LT_JSON || t->id == LT_JSON) return s->id != LT_JSON;
    /* UnequalMatchesVariant / CombineVariant */
    if (s->id == LT_VARIANT || t->id == LT_VARIANT) return t->id == LT_VARIANT;
    if (s->id == LT_DECIMAL && t->id == LT_DECIMAL) {
        /* CombineEqualDecimal */
        int ls = s->width - s->scale, lt = t->width - t->scale;
        int extra = ls > lt ? ls : lt, scale = s->scale > t->scale ? s->scale : t->scale, width = extra + scale;
        if (width > 38) width = 38, scale = 38 - extra;
        return width == t->width && scale == t->scale;
    }
    int l2r = implicit_cast(s->id, t->id), r2l = implicit_cast(t->id, s->id);
    if (l2r >= 0 && (l2r < r2l || r2l < 0)) {
        if (t->id != LT_DECIMAL) return 1;
        /* DecimalSizeCheck: the decimal grows to hold the integer, capped at 38 */
        int ow = decimal_width(s->id);
        if (ow <= t->width - t->scale) return 1;
        int nw = ow + t->scale > 38 ? 38 : ow + t->scale;
        return nw == t->width;
    }
    if (r2l >= 0) return 0; /* the result is the source type */
    if (is_numeric(s->id) && is_numeric(t->id)) return combine_numeric(s->id, t->id) == t->id;
    if (s->id == LT_BOOLEAN && is_integral(t->id)) return 1;
    return 0;
}

static void ltype_text(const ltype *t, char *buf, size_t n)
{
    if (t->id == LT_DECIMAL) snprintf(buf, n, "DECIMAL(%d,%d)", t->width, t->scale);
    else snprintf(buf, n, "%s", t->duckdb);
}

int mv_type_change(const char *col, const char *from, const char *to, int *same)
{
    ltype s, t;
    *same = 0;
    int ks = ltype_of(from, &s), kt = ltype_of(to, &t);
    if (!ks || !kt)
        return mr_err(MORAINE_EINVAL,
                      "alter_column \"%s\": moraine does not know the DuckLake type \"%s\", so it cannot tell whether DuckLake allows "
                      "the change from \"%s\" to \"%s\"",
                      col ? col : "", !ks ? (from ? from : "") : to, from ? from : "", to);
    if (ltype_eq(&s, &t)) {
        *same = 1;
        return 0;
    }
    if (promotion_allowed(&s, &t)) return 0;
    char a[48], b[48];
    ltype_text(&s, a, sizeof a);
    ltype_text(&t, b, sizeof b);
    return mr_err(MORAINE_EINVAL, "Cannot change type of column %s from %s to %s - only widening type promotions are allowed", col ? col : "", a, b);
}
