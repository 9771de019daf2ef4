/*
 * test_statval.c — min/max texts compared as DuckLake's
 * DuckLakeColumnStats::MergeStats compares them (engine/statval.c): as
 * values of the column's type for the types RequiresValueComparison covers,
 * as bytes otherwise; texts that are not values of the type are refused.
 */
#include "moraine.h"
#include "check.h"

#include <string.h>

static void cmp_is(const char *type, const char *a, const char *b, int want)
{
    int c = 99;
    int rc = moraine_stat_compare(type, a, b, &c);
    CHECK(rc == 0 && c == want, "%s: cmp(%s, %s) = %d (rc %d: %s), want %d", type, a, b, c, rc, rc ? moraine_errmsg() : "", want);
    if (rc == 0 && want != 0) {
        int r = 99;
        moraine_stat_compare(type, b, a, &r);
        CHECK(r == -want, "%s: cmp(%s, %s) = %d, want %d", type, b, a, r, -want);
    }
}

static void bad(const char *type, const char *text)
{
    int c;
    int rc = moraine_stat_compare(type, text, text, &c);
    CHECK(rc == MORAINE_EINVAL, "%s: \"%s\" accepted (rc %d)", type, text, rc);
    if (rc == MORAINE_EINVAL) CHECK(strstr(moraine_errmsg(), text) != NULL, "message names the text: %s", moraine_errmsg());
    CHECK_RC(moraine_stat_check(type, text), MORAINE_EINVAL);
}

int main(void)
{
    /* integers: negative numbers and different digit counts (bytes would say "10" < "9", "-1" < "-2") */
    cmp_is("int32", "9", "10", -1);
    cmp_is("int32", "-2", "-1", -1);
    cmp_is("int32", "-10", "9", -1);
    cmp_is("int32", "0", "-0", 0);
    cmp_is("int64", "-9223372036854775808", "9223372036854775807", -1);
    cmp_is("int8", "-128", "127", -1);
    cmp_is("uint64", "18446744073709551615", "9", 1);
    cmp_is("int128", "-170141183460469231731687303715884105728", "170141183460469231731687303715884105727", -1);
    cmp_is("uint128", "340282366920938463463374607431768211455", "340282366920938463463374607431768211454", 1);
    cmp_is("int16", "007", "7", 0);
    bad("int8", "128");
    bad("int8", "-129");
    bad("uint8", "-1");
    bad("uint8", "256");
    bad("int64", "9223372036854775808");
    bad("int128", "170141183460469231731687303715884105728");
    bad("int32", "1.5");
    bad("int32", "abc");
    bad("int32", "");
    bad("int32", " 1");

    /* float and double: NaN above +inf, -0.0 equal to 0.0, exponents */
    cmp_is("float64", "1245.0", "999.5", 1);
    cmp_is("float64", "-1.5", "-1.25", -1);
    cmp_is("float64", "1e+20", "99999.0", 1);
    cmp_is("float64", "inf", "1e308", 1);
    cmp_is("float64", "-inf", "-1e308", -1);
    cmp_is("float64", "nan", "inf", 1);
    cmp_is("float64", "nan", "NaN", 0);
    cmp_is("float64", "-0.0", "0.0", 0);
    cmp_is("float32", "3.4028235e+38", "1.0", 1);
    bad("float64", "1e400");
    bad("float32", "1e39");
    bad("float64", "0x10");
    bad("float64", "1.0abc");
    /* a plain decimal text (read without strtod when its digits fit in 2^53)
     * is the double strtod reads: the same value written with an exponent
     * (which strtod reads) compares equal; the next double up compares above */
    cmp_is("float64", "9007199254740992", "9007199254740993", 0); /* 2^53 + 1 rounds to 2^53 (to even) */
    cmp_is("float64", "0.1", "1e-1", 0);
    cmp_is("float64", "0.30000000000000004", "0.3", 1);
    cmp_is("float64", "-0.30000000000000004", "-3.0000000000000004e-1", 0);
    cmp_is("float64", "-0", "0e0", 0);
    cmp_is("float64", ".5", "5.", -1);
    bad("float64", ".");
    bad("float64", "-");
    {
        uint64_t seed = check_seed("test_statval"), x = seed | 1;
        int wrong = 0;
        for (int i = 0; i < 20000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t mant = x % ((UINT64_C(1) << 53) + 1) >> (x % 50);
            int nfrac = (int)((x >> 56) % 23);
            char digits[32], plain[80], expo[64];
            int nd = snprintf(digits, sizeof digits, "%" PRIu64, mant);
            const char *sign = i % 2 ? "-" : "";
            if (nd > nfrac) /* 123.45 (123. when nfrac is 0) */
                snprintf(plain, sizeof plain, "%s%.*s.%s", sign, nd - nfrac, digits, digits + nd - nfrac);
            else /* 0.00012345 */
                snprintf(plain, sizeof plain, "%s0.%.*s%s", sign, nfrac - nd, "0000000000000000000000", digits);
            snprintf(expo, sizeof expo, "%s%se-%d", sign, digits, nfrac);
            int c = 99;
            if (moraine_stat_compare("float64", plain, expo, &c) != 0 || c != 0) {
                if (wrong++ < 5) check_note("float64 %s against %s: %d", plain, expo, c);
            }
        }
        CHECK(wrong == 0, "%d plain decimal texts read otherwise than strtod reads them", wrong);
    }

    /* decimal(p,s): the scale of the text may differ; rounded half away from zero to s digits */
    cmp_is("decimal(18,2)", "1.5", "1.50", 0);
    cmp_is("decimal(18,2)", "10.00", "9.99", 1);
    cmp_is("decimal(18,2)", "-0.05", "0.00", -1);
    cmp_is("decimal(18,2)", "-10.5", "-9.99", -1);
    cmp_is("decimal(18,2)", "1.005", "1.01", 0);
    cmp_is("decimal(18,2)", "1.004", "1.00", 0);
    cmp_is("decimal(4,0)", "9999", "-9999", 1);
    cmp_is("decimal(38,10)", "-0.0000000001", "0", -1);
    bad("decimal(4,2)", "100.00");
    bad("decimal(4,2)", "99.995"); /* rounds to 100.00: past the width */
    bad("decimal(18,2)", "1,5");
    bad("decimal(18,2)", "1e3");

    /* date: years of any width, BC, infinities */
    cmp_is("date", "2024-01-01", "2023-12-31", 1);
    cmp_is("date", "0999-12-31", "1000-01-01", -1);
    cmp_is("date", "10000-01-01", "9999-12-31", 1); /* bytes would put "10000" first */
    cmp_is("date", "0044-03-15 (BC)", "0001-01-01", -1);
    cmp_is("date", "0044-03-15 (BC)", "0043-03-15 (BC)", -1);
    cmp_is("date", "0001-12-31 (BC)", "0001-01-01", -1);
    cmp_is("date", "infinity", "5881580-07-10", 1);
    cmp_is("date", "-infinity", "5877642-06-25 (BC)", -1);
    cmp_is("date", "2024-02-29", "2024-03-01", -1);
    bad("date", "2023-02-29");
    bad("date", "2024-13-01");
    bad("date", "2024-04-31");
    bad("date", "0000-01-01");
    bad("date", "2024/01/01");

    /* time and timetz */
    cmp_is("time", "23:59:59.999999", "24:00:00", -1);
    cmp_is("time", "09:00:00", "10:00:00", -1);
    cmp_is("time", "12:00:00.5", "12:00:00.499999", 1);
    cmp_is("timetz", "13:00:00+01", "12:00:00+00", -1); /* 12:00 UTC; ties: the larger offset first */
    cmp_is("timetz", "13:01:00+01", "12:00:00+00", 1);
    cmp_is("timetz", "11:00:00-01", "12:00:00+00", 1);
    cmp_is("timetz", "05:30:00+05:30", "00:00:00+00", -1);
    bad("time", "25:00:00");
    bad("time", "12:60:00");
    bad("time", "12:00:00.1234567");
    bad("timetz", "12:00:00");

    /* timestamps: fractional seconds, BC, offsets, units */
    cmp_is("timestamp", "2024-01-01 00:00:00.5", "2024-01-01 00:00:00.25", 1);
    cmp_is("timestamp", "2024-01-01 00:00:00.000001", "2024-01-01 00:00:00", 1);
    cmp_is("timestamp", "1969-12-31 23:59:59", "1970-01-01 00:00:00", -1);
    cmp_is("timestamp", "0044-03-15 10:00:00 (BC)", "0001-01-01 00:00:00", -1);
    cmp_is("timestamp", "2024-01-01", "2024-01-01 00:00:00", 0);
    cmp_is("timestamp", "infinity", "294246-01-01 00:00:00", 1);
    cmp_is("timestamptz", "2024-01-01 01:00:00+01", "2024-01-01 00:00:00+00", 0);
    cmp_is("timestamptz", "2024-01-01 00:30:00+01", "2023-12-31 23:45:00+00", -1);
    cmp_is("timestamp_ns", "2024-01-01 00:00:00.000000001", "2024-01-01 00:00:00", 1);
    cmp_is("timestamp_ms", "2024-01-01 00:00:00.123", "2024-01-01 00:00:00.122", 1);
    cmp_is("timestamp_s", "2262-04-11 23:47:16", "1969-12-31 23:59:59", 1);
    bad("timestamp_s", "2024-01-01 00:00:00.5");
    bad("timestamp_ms", "2024-01-01 00:00:00.0001");
    bad("timestamp", "2024-01-01 00:00:00.0000001");
    bad("timestamp_ns", "2262-04-12 00:00:00");
    bad("timestamp", "2024-01-01 24:00:01");
    bad("timestamp", "not a time");

    /* boolean */
    cmp_is("boolean", "false", "true", -1);
    cmp_is("boolean", "true", "t", 0);
    bad("boolean", "yes please");

    /* every other type: bytes, unsigned, a prefix first (std::string's order) */
    cmp_is("varchar", "Cust_500", "cust_99", -1);
    cmp_is("varchar", "", "a", -1);
    cmp_is("varchar", "ab", "abc", -1);
    cmp_is("varchar", "\xc3\xa9", "z", 1);
    cmp_is("uuid", "00000000-0000-0000-0000-000000000010", "00000000-0000-0000-0000-000000000009", 1);
    cmp_is("time_ns", "10:00:00", "9:00:00", -1); /* outside IsTemporal: bytes */
    cmp_is("blob", "\\x00", "\\x01", -1);
    CHECK_RC(moraine_stat_check("varchar", "anything at all"), 0);

    CHECK(moraine_stat_value_compared("int64") && moraine_stat_value_compared("decimal(9,3)") && moraine_stat_value_compared("timestamptz"),
          "value comparison for numeric and temporal types");
    CHECK(!moraine_stat_value_compared("varchar") && !moraine_stat_value_compared("interval") && !moraine_stat_value_compared("uuid"),
          "bytes for the others");
    int c;
    CHECK_RC(moraine_stat_compare("decimal(x,y)", "1", "2", &c), MORAINE_EINVAL);
    /* type names are compared case-insensitively */
    cmp_is("INT32", "9", "10", -1);
    cmp_is("UInt8", "9", "10", -1);
    cmp_is("Float64", "9.5", "10", -1);
    cmp_is("DECIMAL(4,1)", "9.95", "10.0", 0); /* 9.95 rounds to 10.0 */
    cmp_is("TimeStamp_MS", "2024-01-01 00:00:00.5", "2024-01-01 00:00:00.25", 1);
    cmp_is("TIMESTAMPTZ", "2024-01-01 00:00:00+01", "2024-01-01 00:00:00", -1);
    cmp_is("Boolean", "f", "true", -1);
    bad("Int8", "128");
    cmp_is("interval", "9", "10", 1); /* not a value kind: bytes */
    return check_done();
}
