/*
 * check.h — the C tests' harness: no framework, one translation unit per test
 * binary.
 *
 *   CHECK(cond, fmt, ...)   counts one check; on failure prints
 *                           "file:line: FAILED: cond: message" to stderr.
 *   CHECK_INT(a, b)         CHECK(a == b) printing both as integers.
 *   CHECK_RC(expr, code)    CHECK that a moraine call returned @code, printing
 *                           both codes by name and moraine_errmsg() if not.
 *   check_done()            prints the one closing line "N passed, N failed"
 *                           and returns the process exit status (1 if any
 *                           check failed): `return check_done();` in main.
 *
 * Loops over many generated cases count their mismatches themselves and end
 * with one CHECK per property, so the counts stay readable; the first few
 * mismatches are printed with check_note().
 *
 * Random tests take their seed from MORAINE_TEST_SEED when set (to replay a
 * failure), else from the clock; check_seed() prints it.
 *
 *   check_crash_writer(out, n, argv0)  the path of build/tests/crash_writer
 *                           (tests/crash/writer.c, which the crash and
 *                           concurrency tests run) beside the test binary.
 * check_mkdtemp(buf, size, name) makes a new directory "$TMPDIR/name.XXXXXX"
 * (/tmp when TMPDIR is unset or empty), for the test to remove when done:
 * tests/run-all.sh fails a run that leaves anything in its TMPDIR.
 */
#ifndef MORAINE_CHECK_H
#define MORAINE_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long check_passed_, check_failed_;

/* Makes a new directory "$TMPDIR/@name.XXXXXX" (TMPDIR unset or empty: /tmp)
 * with mkdtemp(3); returns @buf holding its path, or NULL (errno set; also
 * ENAMETOOLONG when the path does not fit in @size bytes). */
static inline char *check_mkdtemp(char *buf, size_t size, const char *name)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    int n = snprintf(buf, size, "%s/%s.XXXXXX", dir, name);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    return mkdtemp(buf);
}

/* At most this many failure messages are printed; all are counted. */
#define CHECK_MAX_PRINTED 200

static inline void check_report_(int ok, const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static inline void check_report_(int ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok) {
        check_passed_++;
        return;
    }
    check_failed_++;
    if (check_failed_ > CHECK_MAX_PRINTED) {
        if (check_failed_ == CHECK_MAX_PRINTED + 1) fprintf(stderr, "(further failure messages suppressed)\n");
        return;
    }
    fprintf(stderr, "%s:%d: FAILED: %s: ", file, line, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

#define CHECK(cond, ...) check_report_((cond) ? 1 : 0, __FILE__, __LINE__, #cond, __VA_ARGS__)

#define CHECK_INT(a, b)                                                                                                 \
    do {                                                                                                                \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                                                 \
        check_report_(check_a_ == check_b_, __FILE__, __LINE__, #a " == " #b, "%lld != %lld", check_a_, check_b_);      \
    } while (0)

/* Needs moraine.h (moraine_strerror, moraine_errmsg) included before use. */
#define CHECK_RC(expr, code)                                                                                            \
    do {                                                                                                                \
        int check_rc_ = (expr), check_want_ = (code);                                                                   \
        check_report_(check_rc_ == check_want_, __FILE__, __LINE__, #expr, "returned %d (%s), expected %d (%s); errmsg: %s", \
                      check_rc_, moraine_strerror(check_rc_), check_want_, moraine_strerror(check_want_),              \
                      moraine_errmsg());                                                                                \
    } while (0)

/* A note that goes with a failure about to be counted (e.g. the first few
 * mismatching cases of a loop). */
static inline void check_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void check_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("  note: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Prints "N passed, N failed" as the binary's last line; the exit status. */
static inline int check_done(void)
{
    fflush(stderr);
    printf("%lu passed, %lu failed\n", check_passed_, check_failed_);
    fflush(stdout);
    return check_failed_ ? 1 : 0;
}

/* Writes to @out (@n bytes) the path of the crash_writer program in the
 * directory of @argv0 (the test binary's argv[0]; "." when it has no slash).
 * Returns 1 when that file is executable; else counts one failed check naming
 * the path and returns 0 (the caller then ends with check_done()). */
static inline int check_crash_writer(char *out, size_t n, const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    snprintf(out, n, "%.*s/crash_writer", slash ? (int)(slash - argv0) : 1, slash ? argv0 : ".");
    int ok = access(out, X_OK) == 0;
    CHECK(ok, "the writer %s is missing (build it with make)", out);
    return ok;
}

/* ---- seeded randomness (splitmix64: small, good enough, reproducible) ---- */

static uint64_t check_rng_state_;

static inline uint64_t check_seed(const char *test)
{
    const char *env = getenv("MORAINE_TEST_SEED");
    uint64_t seed;
    if (env && *env) seed = strtoull(env, NULL, 0);
    else seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    check_rng_state_ = seed;
    printf("%s: seed %" PRIu64 " (replay with MORAINE_TEST_SEED=%" PRIu64 ")\n", test, seed, seed);
    fflush(stdout);
    return seed;
}

static inline uint64_t check_rand(void)
{
    uint64_t z = (check_rng_state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform-enough integer in [0, n) for small n. */
static inline uint64_t check_below(uint64_t n) { return n ? check_rand() % n : 0; }

#endif
