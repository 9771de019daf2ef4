/*
 * DuckDB's identifier rules, as the verbs apply them (issue 16).
 *
 * DuckDB looks names up without regard to ASCII case and stores them as
 * written: two names equal after lowering A-Z are the same name. When it
 * renders a name (ParsedExpression::ToString, which is what DuckLake stores
 * as a sort expression) it writes it through
 * KeywordHelper::WriteOptionallyQuoted with allow_caps: bare when every byte
 * is an ASCII letter, '_' or (not first) a digit and the name is no keyword
 * of any category, else in double quotes with '"' doubled. The keywords are
 * those of DuckDB's grammar lists (third_party/libpg_query/grammar/keywords:
 * unreserved, reserved, column name, function name, type name). The Lua
 * module bindings/moraine/ident.lua holds the same list.
 */
#include "internal.h"

#include <string.h>

static const char *const keywords[] = {
    "abort", "absolute", "access", "action", "add", "admin", "after", "aggregate",
    "all", "also", "alter", "always", "analyse", "analyze", "and", "any",
    "array", "as", "asc", "asof", "assertion", "assignment", "asymmetric", "at",
    "attach", "attribute", "authorization", "backward", "before", "begin", "between", "bigint",
    "binary", "bit", "boolean", "both", "by", "cache", "call", "called",
    "cascade", "cascaded", "case", "cast", "catalog", "chain", "char", "character",
    "characteristics", "check", "checkpoint", "class", "close", "cluster", "coalesce", "collate",
    "collation", "column", "comment", "comments", "commit", "committed", "compression", "concurrently",
    "configuration", "conflict", "connection", "constraint", "constraints", "content", "continue", "conversion",
    "copy", "create", "cross", "csv", "cube", "current", "current_schema", "cursor",
    "cycle", "data", "database", "day", "days", "deallocate", "dec", "decimal",
    "declare", "default", "defaults", "deferrable", "deferred", "definer", "delete", "delimiter",
    "delimiters", "depends", "desc", "describe", "detach", "dictionary", "disable", "discard",
    "distinct", "do", "document", "domain", "double", "drop", "each", "else",
    "enable", "encoding", "encrypted", "end", "enum", "escape", "event", "except",
    "exclude", "excluding", "exclusive", "execute", "exists", "explain", "export", "export_state",
    "extension", "external", "extract", "false", "family", "fetch", "filter", "first",
    "float", "following", "for", "force", "foreign", "forward", "freeze", "from",
    "full", "function", "functions", "generated", "glob", "global", "grant", "granted",
    "graph_table", "group", "grouping", "grouping_id", "handler", "having", "header", "hold",
    "hour", "hours", "identity", "if", "ignore", "ilike", "immediate", "immutable",
    "implicit", "import", "in", "include", "including", "increment", "index", "indexes",
    "inherit", "inherits", "initially", "inline", "inner", "inout", "input", "insensitive",
    "insert", "install", "instead", "int", "integer", "intersect", "interval", "into",
    "invoker", "is", "isnull", "isolation", "join", "json", "key", "label",
    "language", "large", "last", "lateral", "leading", "leakproof", "left", "level",
    "like", "limit", "listen", "load", "local", "location", "lock", "locked",
    "logged", "macro", "map", "mapping", "match", "materialized", "maxvalue", "method",
    "microsecond", "microseconds", "millisecond", "milliseconds", "minute", "minutes", "minvalue", "mode",
    "month", "months", "move", "name", "names", "national", "natural", "nchar",
    "new", "next", "no", "none", "not", "nothing", "notify", "notnull",
    "nowait", "null", "nullif", "nulls", "numeric", "object", "of", "off",
    "offset", "oids", "old", "on", "only", "operator", "option", "options",
    "or", "order", "ordinality", "out", "outer", "over", "overlaps", "overlay",
    "overriding", "owned", "owner", "parallel", "parser", "partial", "partition", "passing",
    "password", "percent", "pivot", "pivot_longer", "pivot_wider", "placing", "plans", "policy",
    "position", "positional", "pragma", "preceding", "precision", "prepare", "prepared", "preserve",
    "primary", "prior", "privileges", "procedural", "procedure", "program", "publication", "qualify",
    "quote", "range", "read", "real", "reassign", "recheck", "recursive", "ref",
    "references", "referencing", "refresh", "reindex", "relative", "release", "rename", "repeatable",
    "replace", "replica", "reset", "respect", "restart", "restrict", "returning", "returns",
    "revoke", "right", "role", "rollback", "rollup", "row", "rows", "rule",
    "sample", "savepoint", "schema", "schemas", "scroll", "search", "second", "seconds",
    "security", "select", "sequence", "sequences", "serializable", "server", "session", "set",
    "setof", "sets", "share", "show", "similar", "skip", "smallint", "snapshot",
    "some", "sql", "stable", "standalone", "start", "statement", "statistics", "stdin",
    "stdout", "storage", "stored", "strict", "strip", "struct", "subscription", "substring",
    "summarize", "symmetric", "sysid", "system", "table", "tables", "tablesample", "tablespace",
    "temp", "template", "temporary", "text", "then", "time", "timestamp", "to",
    "trailing", "transaction", "transform", "treat", "trigger", "trim", "true", "truncate",
    "trusted", "try_cast", "type", "types", "unbounded", "uncommitted", "unencrypted", "union",
    "unique", "unknown", "unlisten", "unlogged", "unpivot", "until", "update", "use",
    "user", "using", "vacuum", "valid", "validate", "validator", "value", "values",
    "varchar", "variadic", "varying", "verbose", "version", "view", "views", "virtual",
    "volatile", "when", "where", "whitespace", "window", "with", "within", "without",
    "work", "wrapper", "write", "xml", "xmlattributes", "xmlconcat", "xmlelement", "xmlexists",
    "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable", "year",
    "years", "yes", "zone",
};

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

int mr_ident_eqn(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen != blen) return 0;
    for (size_t i = 0; i < alen; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return 0;
    return 1;
}

int mr_ident_eq(const char *a, const char *b)
{
    if (!a || !b) return 0;
    return mr_ident_eqn(a, strlen(a), b);
}

int moraine_ident_is_keyword(const char *name)
{
    if (!name) return 0;
    size_t lo = 0, hi = sizeof keywords / sizeof keywords[0];
    char buf[64];
    size_t n = strlen(name);
    if (n >= sizeof buf) return 0;
    for (size_t i = 0; i <= n; i++) buf[i] = (char)lower((unsigned char)name[i]);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(buf, keywords[mid]);
        if (c == 0) return 1;
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return 0;
}

int moraine_ident_requires_quotes(const char *name)
{
    if (!name || !*name) return 1;
    for (const char *p = name; *p; p++) {
        int c = (unsigned char)*p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (p != name && c >= '0' && c <= '9');
        if (!ok) return 1;
    }
    return moraine_ident_is_keyword(name);
}

size_t moraine_ident_render(const char *name, char *out, size_t outlen)
{
    if (!name) name = "";
    size_t need = 0;
    int q = moraine_ident_requires_quotes(name);
    size_t o = 0;
#define PUT(ch)                                                                                                                            \
    do {                                                                                                                                   \
        if (out && o + 1 < outlen) out[o++] = (ch);                                                                                        \
        need++;                                                                                                                            \
    } while (0)
    if (q) PUT('"');
    for (const char *p = name; *p; p++) {
        if (q && *p == '"') PUT('"');
        PUT(*p);
    }
    if (q) PUT('"');
#undef PUT
    if (out && outlen) out[o] = 0;
    return need;
}
