/*
 * test_proj_fast — the fast pass of a projected read (engine/project.c:
 * mr_proj_row) against the plain pass it falls back to (mr_proj_row_ref),
 * which is the oracle: for random projections of a 10-column relation
 * (random columns in a random order, an extra column or a match column with
 * random values) and random rows (integers of every varint length from 1 to
 * 10 bytes, negative ones, strings of 0 to 300 bytes, JSON, NULL, booleans,
 * doubles), then the same rows with bytes flipped, varints made overlong,
 * cut short at any point or followed by other bytes, both passes must give
 * the same result: the same return (kept, filtered out, or MORAINE_ECORRUPT
 * with the same message), the same end of the row, ord, projected values and
 * extra cell. Also checks that the fast pass reads exactly the bytes the row
 * spans (never past the end it is given: the buffers are exact heap copies,
 * so the ASan build catches a read past them).
 */
#include "check.h"
#include "internal.h"
#include <stdlib.h>
#include <string.h>

#define NC 10
static const char *const NAMES[NC] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"};

static uint64_t rs;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static int64_t rand_int(void)
{
    int bits = (int)(rnd() % 65); /* 0..64 significant bits: every varint length */
    uint64_t v = bits == 0 ? 0 : rnd() >> (64 - bits);
    return (int64_t)v;
}

static void rand_value(moraine_value *v, char *text, size_t textcap)
{
    memset(v, 0, sizeof *v);
    switch (rnd() % 8) {
    case 0: v->type = MORAINE_NULL; break;
    case 1:
    case 2:
    case 3: v->type = MORAINE_INT, v->i = rand_int(); break;
    case 4:
    case 5: {
        size_t n = rnd() % 4 == 0 ? rnd() % textcap : rnd() % 20;
        for (size_t i = 0; i < n; i++) text[i] = (char)('a' + rnd() % 26);
        v->type = rnd() % 4 ? MORAINE_STR : MORAINE_JSON;
        v->s = text;
        v->len = n;
        break;
    }
    case 6: v->type = MORAINE_BOOL, v->i = (int64_t)(rnd() & 1); break;
    default: v->type = MORAINE_REAL, v->d = (double)(int64_t)rnd() / 7.0; break;
    }
}

static int same_value(const moraine_value *a, const moraine_value *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case MORAINE_INT:
    case MORAINE_BOOL: return a->i == b->i;
    case MORAINE_STR:
    case MORAINE_JSON: return a->len == b->len && a->s == b->s;
    case MORAINE_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    default: return 1;
    }
}

/* A random projection of the relation (freed by the caller). */
static int rand_proj(mr_rel *r, mr_proj_rel *pr, int64_t *match, size_t *nmatch)
{
    const char *cols[NC];
    int perm[NC];
    for (int i = 0; i < NC; i++) perm[i] = i;
    for (int i = NC - 1; i > 0; i--) {
        int j = (int)(rnd() % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    size_t n = rnd() % (NC + 1);
    for (size_t i = 0; i < n; i++) cols[i] = NAMES[perm[i]];
    int all = rnd() % 10 == 0;
    const char *mcol = NULL;
    int extra = -1;
    *nmatch = 0;
    if (rnd() % 2) {
        mcol = NAMES[rnd() % NC];
        *nmatch = rnd() % 4;
        for (size_t i = 0; i < *nmatch; i++) match[i] = (int64_t)(rnd() % 5) - 1;
    } else if (rnd() % 2) {
        extra = (int)(rnd() % NC);
    }
    return mr_proj_rel_build(r, all ? NULL : cols, all ? 0 : n, mcol, match, *nmatch, extra, NULL, pr);
}

/* Damages an encoded row: flips, overlong varints, a byte spliced in or out. */
static size_t mutate(uint8_t *b, size_t n, size_t cap)
{
    int k = (int)(rnd() % 3) + 1;
    for (int j = 0; j < k && n; j++) {
        size_t at = rnd() % n;
        switch (rnd() % 5) {
        case 0: b[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 1: b[at] = (uint8_t)rnd(); break;
        case 2: /* a byte of 0x80 before it: a varint there is no longer in its shortest form */
            if (n < cap) {
                memmove(b + at + 1, b + at, n - at);
                b[at] = 0x80;
                n++;
            }
            break;
        case 3:
            memmove(b + at, b + at + 1, n - at - 1);
            n--;
            break;
        default: b[at] = (uint8_t)(rnd() % 8); break; /* a tag, maybe another one */
        }
    }
    return n;
}

int main(void)
{
    rs = check_seed("test_proj_fast") | 1;
    mr_rel r;
    memset(&r, 0, sizeof r);
    r.info.name = "t";
    r.info.ncols = NC;
    r.info.colnames = NAMES;
    static char text[NC][300];
    long cases = 0, kept = 0, filtered = 0, errors = 0, bad_rc = 0, bad_msg = 0, bad_end = 0, bad_vals = 0, bad_build = 0;
    char msg_fast[512], msg_ref[512];
    for (int round = 0; round < 3000; round++) {
        mr_proj_rel pr;
        int64_t match[4];
        size_t nmatch;
        if (rand_proj(&r, &pr, match, &nmatch)) {
            bad_build++;
            mr_proj_rel_free(&pr);
            continue;
        }
        for (int row = 0; row < 40; row++) {
            moraine_value wide[NC + 2];
            size_t ncells = rnd() % 50 == 0 ? (size_t)(rnd() % (NC + 3)) : NC; /* sometimes the wrong column count */
            for (size_t i = 0; i < ncells; i++) rand_value(&wide[i], text[i % NC], sizeof text[i % NC]);
            mr_buf b = {0};
            int64_t ord = rand_int();
            if (mr_encode_row(&b, ord, wide, ncells)) abort();
            size_t tailn = rnd() % 3 == 0 ? rnd() % 16 : 0; /* what follows the row in a value (child groups) */
            if (mr_buf_reserve(&b, tailn + 16)) abort();
            for (size_t i = 0; i < tailn; i++) b.p[b.len++] = (uint8_t)rnd();
            size_t n = b.len;
            int damaged = rnd() % 3 == 0;
            if (damaged) n = mutate(b.p, n, b.cap);
            if (rnd() % 8 == 0 && n) n = rnd() % n; /* cut short */
            uint8_t *buf = malloc(n ? n : 1); /* exact size: a read past it is ASan's */
            if (!buf) abort();
            memcpy(buf, b.p, n);
            moraine_value out_f[NC + 1], out_r[NC + 1], ex_f, ex_r;
            memset(out_f, 0xAB, sizeof out_f);
            memset(out_r, 0xAB, sizeof out_r);
            memset(&ex_f, 0xAB, sizeof ex_f);
            memset(&ex_r, 0xAB, sizeof ex_r);
            const uint8_t *pf = buf, *pr_ = buf;
            int64_t of = 0, orr = 0;
            moraine_value *xf = pr.match_col >= 0 || rnd() % 2 ? &ex_f : NULL;
            moraine_value *xr = xf ? &ex_r : NULL;
            int rf = mr_proj_row(&pr, &pf, buf + n, &of, out_f, xf);
            snprintf(msg_fast, sizeof msg_fast, "%s", rf < 0 ? moraine_errmsg() : "");
            int rr = mr_proj_row_ref(&pr, &pr_, buf + n, &orr, out_r, xr);
            snprintf(msg_ref, sizeof msg_ref, "%s", rr < 0 ? moraine_errmsg() : "");
            cases++;
            if (rf != rr) {
                if (bad_rc++ < 5) check_note("round %d row %d: fast %d, reference %d (%s)", round, row, rf, rr, msg_ref);
            } else if (rf < 0) {
                errors++;
                if (strcmp(msg_fast, msg_ref) != 0 && bad_msg++ < 5) check_note("messages differ: '%s' / '%s'", msg_fast, msg_ref);
            } else {
                if (rf) kept++;
                else filtered++;
                if ((pf != pr_ || of != orr) && bad_end++ < 5) check_note("round %d row %d: end %td / %td, ord %lld / %lld", round, row, pf - buf,
                                                                      pr_ - buf, (long long)of, (long long)orr);
                int same = 1;
                for (size_t i = 0; rf == 1 && i < pr.nout; i++) same &= same_value(&out_f[i], &out_r[i]);
                if (rf == 1 && xf) same &= same_value(&ex_f, &ex_r);
                if (!same && bad_vals++ < 5) check_note("round %d row %d: values differ", round, row);
                if (!damaged && rf == 1 && tailn == 0 && (size_t)(pf - buf) != n && bad_end++ < 5)
                    check_note("round %d row %d: an undamaged row ends at %td of %zu", round, row, pf - buf, n);
            }
            free(buf);
            mr_buf_free(&b);
        }
        mr_proj_rel_free(&pr);
    }
    check_note("%ld rows: %ld kept, %ld filtered out, %ld refused", cases, kept, filtered, errors);
    CHECK(bad_build == 0, "%ld projections failed to build", bad_build);
    CHECK(bad_rc == 0, "%ld rows where the fast pass and the reference returned differently", bad_rc);
    CHECK(bad_msg == 0, "%ld refusals worded differently", bad_msg);
    CHECK(bad_end == 0, "%ld rows ending elsewhere or with another ord", bad_end);
    CHECK(bad_vals == 0, "%ld rows with other values", bad_vals);
    CHECK(kept > 10000 && filtered > 1000 && errors > 1000, "every outcome seen (%ld kept, %ld filtered, %ld refused)", kept, filtered, errors);
    return check_done();
}
