/*
 * statval.c — min/max texts of DuckLake's column statistics compared as
 * DuckLake compares them when it merges a file's stats into a table's
 * (DuckLakeColumnStats::MergeStats, src/storage/ducklake_stats.cpp): for the
 * types RequiresValueComparison covers (ducklake_stats.hpp: DuckDB's
 * LogicalType::IsNumeric, IsTemporal, and BOOLEAN) both texts are cast to
 * the column's type (Value::DefaultCastAs, which throws on a text that is
 * not a value of the type) and compared as values; every other type compares
 * the texts as std::string does (bytes, unsigned, a prefix first).
 *
 * The texts read are the forms DuckDB renders (Value::ToString), which is
 * what DuckLake writes as min_value / max_value: integers of every width,
 * float/double (shortest round-trip digits, inf, -inf, nan), decimal(p,s)
 * (any number of fraction digits, rounded half away from zero to s as
 * DuckDB's string-to-decimal cast does), date (YYYY-MM-DD, a year of any
 * width, " (BC)", infinity / -infinity), time (HH:MM:SS[.fraction]),
 * timetz (time and +HH[:MM[:SS]]), timestamp / timestamp_s / _ms / _ns /
 * timestamptz (date, ' ' or 'T', time, an optional offset, " (BC)"), boolean
 * (true/false/t/f/1/0). A text outside these forms, out of the type's range,
 * or finer than the type (a fraction of a second in a timestamp_s) is
 * refused: DuckDB's cast would throw, or round where moraine would have to
 * guess. time_ns and timestamptz_ns are outside IsTemporal in the DuckDB
 * DuckLake builds on (src/common/types.cpp), so they compare as bytes.
 */
#include "internal.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { SK_BYTES, SK_INT, SK_FLOAT, SK_DOUBLE, SK_DECIMAL, SK_DATE, SK_TIME, SK_TIMETZ, SK_TS, SK_BOOL };

typedef mr_statkind statkind;
typedef mr_statkey statkey;

static int kind_of(const char *type, statkind *k)
{
    /* the type names compared case-insensitively, as DuckLake's type names are */
    static const struct {
        const char *name;
        int kind, is_signed, bits, unit;
    } names[] = {{"int8", SK_INT, 1, 8, 0},      {"int16", SK_INT, 1, 16, 0},   {"int32", SK_INT, 1, 32, 0},     {"int64", SK_INT, 1, 64, 0},
                 {"int128", SK_INT, 1, 128, 0},  {"uint8", SK_INT, 0, 8, 0},    {"uint16", SK_INT, 0, 16, 0},    {"uint32", SK_INT, 0, 32, 0},
                 {"uint64", SK_INT, 0, 64, 0},   {"uint128", SK_INT, 0, 128, 0}, {"float32", SK_FLOAT, 0, 0, 0}, {"float64", SK_DOUBLE, 0, 0, 0},
                 {"boolean", SK_BOOL, 0, 0, 0},  {"date", SK_DATE, 0, 0, 0},    {"time", SK_TIME, 0, 0, 0},      {"timetz", SK_TIMETZ, 0, 0, 0},
                 {"timestamp", SK_TS, 0, 0, 6},  {"timestamp_us", SK_TS, 0, 0, 6}, {"timestamptz", SK_TS, 0, 0, 6}, {"timestamp_s", SK_TS, 0, 0, 0},
                 {"timestamp_ms", SK_TS, 0, 0, 3}, {"timestamp_ns", SK_TS, 0, 0, 9}};
    memset(k, 0, sizeof *k);
    k->kind = SK_BYTES;
    if (!type) return 0;
    char c0 = (char)tolower((unsigned char)type[0]);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].name[0] == c0 && strcasecmp(type, names[i].name) == 0) {
            k->kind = names[i].kind, k->is_signed = names[i].is_signed, k->bits = names[i].bits, k->unit = names[i].unit;
            return 0;
        }
    if (c0 == 'd' && strncasecmp(type, "decimal(", 8) == 0) {
        int w, s, n = 0;
        if (sscanf(type + 8, "%d,%d)%n", &w, &s, &n) != 2 || type[8 + n] || w < 1 || w > 38 || s < 0 || s > w)
            return mr_err(MORAINE_EINVAL, "column type \"%s\" is not a DuckLake decimal(width,scale)", type);
        k->kind = SK_DECIMAL, k->width = w, k->scale = s;
    }
    return 0;
}

static int isdig(char c) { return c >= '0' && c <= '9'; }

/* Compares magnitudes given as digit strings without leading zeros. */
static int mag_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    if (na != nb) return na < nb ? -1 : 1;
    int c = memcmp(a, b, na);
    return c < 0 ? -1 : c > 0;
}

/* The digits of 2^bits - 1 (unsigned) or 2^(bits-1) - 1 / 2^(bits-1) (signed max / -min). */
static const char *int_limit(int bits, int is_signed, int neg)
{
    static const char *u[] = {"255", "65535", "4294967295", "18446744073709551615", "340282366920938463463374607431768211455"};
    static const char *smax[] = {"127", "32767", "2147483647", "9223372036854775807", "170141183460469231731687303715884105727"};
    static const char *smin[] = {"128", "32768", "2147483648", "9223372036854775808", "170141183460469231731687303715884105728"};
    int i = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : bits == 64 ? 3 : 4;
    return !is_signed ? u[i] : neg ? smin[i] : smax[i];
}

/* [+-]digits[.digits] (a digit somewhere); the integer digits (leading zeros
 * dropped) and the fraction digits. 0 when the text is not of that form. */
static int parse_number(const char *s, int *neg, const char **ip, size_t *ni, const char **fp, size_t *nf)
{
    *neg = 0;
    if (*s == '+' || *s == '-') *neg = *s++ == '-';
    const char *i0 = s;
    while (isdig(*s)) s++;
    size_t n_int = (size_t)(s - i0);
    const char *f0 = s;
    size_t n_frac = 0;
    if (*s == '.') {
        f0 = ++s;
        while (isdig(*s)) s++;
        n_frac = (size_t)(s - f0);
    }
    if (*s || n_int + n_frac == 0) return 0;
    while (n_int > 0 && *i0 == '0') i0++, n_int--;
    *ip = i0, *ni = n_int, *fp = f0, *nf = n_frac;
    return 1;
}

static int parse_int(const statkind *k, const char *s, statkey *out)
{
    const char *ip, *fp;
    size_t ni, nf;
    if (!parse_number(s, &out->neg, &ip, &ni, &fp, &nf) || nf || s[strlen(s) - 1] == '.') return 0;
    if (ni == 0) out->neg = 0;
    const char *lim = int_limit(k->bits, k->is_signed, out->neg);
    if ((out->neg && !k->is_signed && ni) || mag_cmp(ip, ni, lim, strlen(lim)) > 0) return 0;
    memcpy(out->d, ip, ni);
    out->nd = ni;
    out->cls = 1;
    return 1;
}

/* The value scaled to k->scale fraction digits, rounded half away from zero. */
static int parse_decimal(const statkind *k, const char *s, statkey *out)
{
    const char *ip, *fp;
    size_t ni, nf;
    if (!parse_number(s, &out->neg, &ip, &ni, &fp, &nf)) return 0;
    char buf[128];
    size_t n = 0, sc = (size_t)k->scale;
    if (ni + sc > 100) return 0;
    memcpy(buf, ip, ni), n = ni;
    for (size_t i = 0; i < sc; i++) buf[n++] = i < nf ? fp[i] : '0';
    int up = nf > sc && fp[sc] >= '5';
    for (size_t i = n; up && i-- > 0;) {
        if (buf[i] == '9') buf[i] = '0';
        else {
            buf[i]++;
            up = 0;
        }
    }
    size_t st = 0;
    if (up) { /* carried out of the first digit */
        memmove(buf + 1, buf, n++);
        buf[0] = '1';
    }
    while (st < n && buf[st] == '0') st++;
    if (n - st > (size_t)k->width) return 0;
    out->nd = n - st;
    memcpy(out->d, buf + st, out->nd);
    if (out->nd == 0) out->neg = 0;
    out->cls = 1;
    return 1;
}

/* [+-]digits[.digits] whose digits, read as one integer, are at most 2^53
 * with at most 22 of them after the point, into *v: that integer and the
 * power of ten are exact doubles, so their one IEEE division is the
 * correctly rounded value, which is what strtod returns for the text.
 * 0 for any other text (strtod reads it). */
static int plain_double(const char *s, double *v)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = *s == '-';
    if (*s == '+' || *s == '-') s++;
    uint64_t mant = 0;
    int nd = 0, nfrac = 0;
    for (; isdig(*s); s++, nd++) {
        if (nd == 19) return 0;
        mant = mant * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.')
        for (s++; isdig(*s); s++, nd++, nfrac++) {
            if (nd == 19) return 0;
            mant = mant * 10 + (uint64_t)(*s - '0');
        }
    if (*s || nd == 0 || nfrac > 22 || mant > (UINT64_C(1) << 53)) return 0;
    double x = (double)mant / p10[nfrac];
    *v = neg ? -x : x;
    return 1;
}

static int parse_float(int single, const char *s, statkey *out)
{
    if (!single && plain_double(s, &out->f)) {
        out->cls = 1;
        return 1;
    }
    if (!*s || *s == ' ' || *s == '\t' || *s == '\n' || strchr(s, 'x') || strchr(s, 'X')) return 0;
    char *end;
    errno = 0;
    double v = single ? (double)strtof(s, &end) : strtod(s, &end);
    if (*end || end == s) return 0;
    const char *p = s + (*s == '+' || *s == '-');
    int inf_text = strncasecmp(p, "inf", 3) == 0;
    if (isinf(v) && !inf_text) return 0; /* out of range: DuckDB's cast throws */
    out->cls = isnan(v) ? 3 : 1;
    out->f = v;
    return 1;
}

/* 1-2 (or more for the year) digits into *v; the end into *end. */
static int digits(const char **s, int min, int max, long long *v)
{
    const char *p = *s;
    long long x = 0;
    int n = 0;
    while (isdig(*p) && n < max) x = x * 10 + (*p++ - '0'), n++;
    if (n < min || isdig(*p)) return 0;
    *s = p, *v = x;
    return 1;
}

/* Days since 1970-01-01 of proleptic Gregorian (astronomical) year y. */
static long long days_from_civil(long long y, long long m, long long d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int is_leap(long long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* YYYY-MM-DD: *year as written (>= 1), month, day checked. */
static int parse_ymd(const char **s, long long *y, long long *m, long long *d)
{
    const char *p = *s;
    if (!digits(&p, 1, 7, y) || *p++ != '-' || !digits(&p, 1, 2, m) || *p++ != '-' || !digits(&p, 1, 2, d)) return 0;
    if (*y < 1 || *m < 1 || *m > 12 || *d < 1) return 0;
    *s = p;
    return 1;
}

static int check_day(long long y_astro, long long m, long long d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return d <= mdays[m - 1] + (m == 2 && is_leap(y_astro));
}

/* HH:MM:SS[.fraction] into nanoseconds since midnight; 24:00:00 allowed. */
static int parse_hms(const char **s, __int128 *ns, int *nfrac)
{
    const char *p = *s;
    long long h, mi, se;
    if (!digits(&p, 1, 2, &h) || *p++ != ':' || !digits(&p, 2, 2, &mi) || *p++ != ':' || !digits(&p, 2, 2, &se)) return 0;
    long long frac = 0;
    int nf = 0;
    if (*p == '.') {
        p++;
        while (isdig(*p)) {
            if (nf == 9) return 0;
            frac = frac * 10 + (*p++ - '0'), nf++;
        }
        if (nf == 0) return 0;
    }
    for (int i = nf; i < 9; i++) frac *= 10;
    if (mi > 59 || se > 59 || h > 24 || (h == 24 && (mi || se || frac))) return 0;
    *ns = ((__int128)(h * 3600 + mi * 60 + se)) * 1000000000 + frac;
    *nfrac = nf;
    *s = p;
    return 1;
}

/* +HH[:MM[:SS]] / -HH... into seconds east of UTC. */
static int parse_offset(const char **s, long long *off)
{
    const char *p = *s;
    if (*p != '+' && *p != '-') return 0;
    int neg = *p++ == '-';
    long long h, m = 0, se = 0;
    if (!digits(&p, 1, 2, &h)) return 0;
    if (*p == ':') {
        p++;
        if (!digits(&p, 2, 2, &m)) return 0;
        if (*p == ':') {
            p++;
            if (!digits(&p, 2, 2, &se)) return 0;
        }
    }
    if (h > 15 || m > 59 || se > 59) return 0;
    *off = (neg ? -1 : 1) * (h * 3600 + m * 60 + se);
    *s = p;
    return 1;
}

static int parse_bc(const char **s)
{
    if (strncmp(*s, " (BC)", 5) == 0) {
        *s += 5;
        return 1;
    }
    return 0;
}

static int parse_infinity(const char *s, statkey *out)
{
    if (*s != 'i' && *s != '+' && *s != '-') return 0;
    if (strcmp(s, "infinity") == 0 || strcmp(s, "+infinity") == 0) out->cls = 2;
    else if (strcmp(s, "-infinity") == 0) out->cls = 0;
    else return 0;
    return 1;
}

static int parse_date(const char *s, statkey *out)
{
    if (parse_infinity(s, out)) return 1;
    long long y, m, d;
    if (!parse_ymd(&s, &y, &m, &d)) return 0;
    int bc = parse_bc(&s);
    if (*s) return 0;
    long long ya = bc ? 1 - y : y;
    if (!check_day(ya, m, d) || ya < -5877641 || ya > 5881580) return 0;
    out->cls = 1;
    out->v = days_from_civil(ya, m, d);
    return 1;
}

static int parse_time(int tz, const char *s, statkey *out)
{
    __int128 ns;
    int nf;
    if (!parse_hms(&s, &ns, &nf) || nf > 6) return 0;
    long long off = 0;
    if (tz && !parse_offset(&s, &off)) return 0;
    if (*s) return 0;
    __int128 us = ns / 1000;
    if (tz) {
        /* DuckDB's dtime_tz_t::sort_key: UTC time first, then the larger offset first */
        long long enc = 57599 - off;
        out->v = ((us + (__int128)enc * 1000000) << 24) + enc;
    } else {
        out->v = us;
    }
    out->cls = 1;
    return 1;
}

static int parse_timestamp(const statkind *k, const char *s, statkey *out)
{
    if (parse_infinity(s, out)) return 1;
    long long y, m, d, off = 0;
    if (!parse_ymd(&s, &y, &m, &d)) return 0;
    int bc = parse_bc(&s);
    __int128 ns = 0;
    int nf = 0;
    if (*s == ' ' || *s == 'T') {
        s++;
        if (!parse_hms(&s, &ns, &nf)) return 0;
        if (*s == '+' || *s == '-') {
            if (!parse_offset(&s, &off)) return 0;
        }
    }
    if (!bc) bc = parse_bc(&s);
    if (*s) return 0;
    long long ya = bc ? 1 - y : y;
    if (!check_day(ya, m, d)) return 0;
    static const long long unit_ns[] = {1000000000, 0, 0, 1000000, 0, 0, 1000, 0, 0, 1};
    if (ns % unit_ns[k->unit]) return 0; /* finer than the type */
    __int128 v = (__int128)days_from_civil(ya, m, d) * 86400 * 1000000000 + ns - (__int128)off * 1000000000;
    /* DuckDB's ranges: nanoseconds within int64 (timestamp_ns), else microseconds */
    __int128 lim = k->unit == 9 ? v : v / 1000;
    if (lim >= INT64_MAX || lim <= -INT64_MAX) return 0;
    out->cls = 1;
    out->v = v;
    return 1;
}

static int parse_bool(const char *s, statkey *out)
{
    if (strcasecmp(s, "true") == 0 || strcasecmp(s, "t") == 0 || strcmp(s, "1") == 0) out->v = 1;
    else if (strcasecmp(s, "false") == 0 || strcasecmp(s, "f") == 0 || strcmp(s, "0") == 0) out->v = 0;
    else return 0;
    out->cls = 1;
    return 1;
}

/* The key of @s in kind @k into *out: each kind's parser sets the fields
 * key_cmp reads for that kind (cls always; neg, nd and d; f; or v). */
static int parse_key(const statkind *k, const char *s, statkey *out)
{
    switch (k->kind) {
    case SK_INT: return parse_int(k, s, out);
    case SK_DECIMAL: return parse_decimal(k, s, out);
    case SK_FLOAT: return parse_float(1, s, out);
    case SK_DOUBLE: return parse_float(0, s, out);
    case SK_DATE: return parse_date(s, out);
    case SK_TIME: return parse_time(0, s, out);
    case SK_TIMETZ: return parse_time(1, s, out);
    case SK_TS: return parse_timestamp(k, s, out);
    case SK_BOOL: return parse_bool(s, out);
    }
    return 0;
}

static int key_cmp(const statkind *k, const statkey *a, const statkey *b)
{
    if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
    if (a->cls != 1) return 0;
    switch (k->kind) {
    case SK_INT:
    case SK_DECIMAL:
        if (a->neg != b->neg) return a->neg ? -1 : 1;
        return a->neg ? -mag_cmp(a->d, a->nd, b->d, b->nd) : mag_cmp(a->d, a->nd, b->d, b->nd);
    case SK_FLOAT:
    case SK_DOUBLE: return a->f < b->f ? -1 : a->f > b->f; /* -0.0 == 0.0, as DuckDB's Equals */
    default: return a->v < b->v ? -1 : a->v > b->v;
    }
}

static int bytes_cmp(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c) return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

int mr_stat_kind(const char *type, mr_statkind *k) { return kind_of(type, k); }

int mr_stat_parse(const mr_statkind *k, const char *text, mr_statkey *out) { return k->kind == SK_BYTES ? 1 : parse_key(k, text, out); }

int mr_stat_cmp(const mr_statkind *k, const mr_statkey *a, const char *ta, const mr_statkey *b, const char *tb)
{
    return k->kind == SK_BYTES ? bytes_cmp(ta, tb) : key_cmp(k, a, b);
}

int moraine_stat_check(const char *column_type, const char *text)
{
    statkind k;
    statkey key;
    int rc = kind_of(column_type, &k);
    if (rc) return rc;
    if (!text) return mr_err(MORAINE_EINVAL, "no statistics value to check");
    if (k.kind != SK_BYTES && !parse_key(&k, text, &key))
        return mr_err(MORAINE_EINVAL, "\"%s\" is not a value of type %s", text, column_type);
    return 0;
}

int moraine_stat_compare(const char *column_type, const char *a, const char *b, int *cmp)
{
    statkind k;
    int rc = kind_of(column_type, &k);
    if (rc) return rc;
    if (!a || !b) return mr_err(MORAINE_EINVAL, "no statistics value to compare");
    if (k.kind == SK_BYTES) {
        *cmp = bytes_cmp(a, b);
        return 0;
    }
    statkey ka, kb;
    if (!parse_key(&k, a, &ka)) return mr_err(MORAINE_EINVAL, "\"%s\" is not a value of type %s", a, column_type);
    if (!parse_key(&k, b, &kb)) return mr_err(MORAINE_EINVAL, "\"%s\" is not a value of type %s", b, column_type);
    *cmp = key_cmp(&k, &ka, &kb);
    return 0;
}

int moraine_stat_value_compared(const char *column_type)
{
    statkind k;
    return kind_of(column_type, &k) == 0 && k.kind != SK_BYTES;
}
