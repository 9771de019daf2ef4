/*
 * crc32c.c — CRC-32C (Castagnoli) of stored values, so a flipped byte
 * anywhere in a value is detected before it is decoded (docs/codec.md).
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise;
 * every path gives the same result. The instruction's latency is three
 * cycles and its throughput one per cycle, so for buffers of 192 bytes and
 * more the hardware path runs three lanes at once and joins them (CRC-32C is
 * linear: crc(c, A.B) = crc(crc(c, A), zeros(|B|)) ^ crc(0, B)): with
 * PCLMULQDQ the lanes are a third of the buffer each (crc_clmul), without it
 * 64 bytes (crc_hw, joined by a table). With AVX-512 and VPCLMULQDQ, buffers
 * of 128 bytes and more are folded 64 bytes at a time by carry-less
 * multiplies instead (crc_fold): a file row with its stats, about 570 bytes,
 * in 17 ns where the three lanes take 30. tests/c/test_codec.c checks every
 * path at every length against a bitwise CRC-32C. Measured in bench/README.md
 * ("store format 5, child rows without their parent-key cells"; "the CRC
 * folded by VPCLMULQDQ").
 */
#include "internal.h"
#include <pthread.h>
#include <string.h>

static uint32_t table[8][256];
static int table_ready;

static void build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++) table[s][i] = (table[s - 1][i] >> 8) ^ table[0][table[s - 1][i] & 0xFF];
    table_ready = 1;
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    if (!table_ready) build_table();
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n >= 8) { /* slicing by 8 on little-endian hosts */
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^ table[5][(w >> 16) & 0xFF] ^ table[4][(w >> 24) & 0xFF] ^
              table[3][(w >> 32) & 0xFF] ^ table[2][(w >> 40) & 0xFF] ^ table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
        p += 8;
        n -= 8;
    }
#endif
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* ---- three lanes as long as the buffer allows ----
 *
 * A buffer of n >= 3 * 64 bytes is cut into three lanes of L bytes (L a
 * multiple of 8, n / 3 rounded down, at most LMAX) run at once, so the
 * crc32 instructions are issued at their throughput, not their latency; the
 * lanes are joined by shifting a CRC register past L zero bytes, done with
 * one carry-less multiply and one crc32: shifting register c by L bytes is
 * c(x) x^(8L) mod P, and crc32q(0, clmul(c, K)) = c(x) K(x) x^33 mod P in
 * the reflected bit order these registers use, so K = x^(8L-33) mod P
 * (kshift, one constant for every L, built once). What is left after the
 * lanes (under 24 bytes, or what runs past 3 * LMAX) goes on the same way or
 * a word at a time. Without PCLMULQDQ the lanes are 64 bytes and are joined
 * by a table (shift_tab). */
#define LANE 64
#define LMAX 1024
static uint32_t shift_tab[4][256]; /* raw CRC register x -> that register after LANE zero bytes, byte by byte of x */
static uint32_t kshift[LMAX / 8 + 1]; /* kshift[L / 8] = x^(8L - 33) mod P, reflected */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* reflected register @r times x^@k mod P */
static uint32_t mulx(uint32_t r, unsigned k)
{
    while (k--) r = (r >> 1) ^ (r & 1 ? 0x82F63B78u : 0);
    return r;
}

static void build_shift(void)
{
    static const uint8_t zeros[LANE];
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) shift_tab[k][b] = crc_sw(b << (8 * k), zeros, LANE);
    uint32_t r = mulx(0x80000000u, 8 * 8 - 33); /* 0x80000000: the polynomial 1 */
    kshift[1] = r;
    for (size_t i = 2; i <= LMAX / 8; i++) kshift[i] = r = mulx(r, 64);
}

static inline uint32_t shift_lane(uint32_t x)
{
    return shift_tab[0][x & 0xFF] ^ shift_tab[1][(x >> 8) & 0xFF] ^ shift_tab[2][(x >> 16) & 0xFF] ^ shift_tab[3][x >> 24];
}

static int shift_ready; /* set (release) once build_shift ran: the common case takes no pthread_once call */

static void shift_init(void)
{
    pthread_once(&shift_once, build_shift);
    __atomic_store_n(&shift_ready, 1, __ATOMIC_RELEASE);
}

/* register @c past @len (a multiple of 8, 8 .. LMAX) zero bytes */
__attribute__((target("sse4.2,pclmul"))) static inline uint32_t shift_clmul(uint32_t c, size_t len)
{
    __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)c), _mm_cvtsi32_si128((int)kshift[len / 8]), 0);
    return (uint32_t)__builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(prod));
}

/* the crc32 instruction over the last @n bytes, a word at a time */
__attribute__((target("sse4.2"))) static inline uint32_t crc_words(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    if (n >= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        c32 = __builtin_ia32_crc32si(c32, w);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        uint16_t w;
        memcpy(&w, p, 2);
        c32 = __builtin_ia32_crc32hi(c32, w);
        p += 2;
        n -= 2;
    }
    if (n) c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc_clmul(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n >= 3 * LANE && !__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE)) shift_init();
    while (n >= 3 * LANE) {
        size_t len = n / 24 * 8;
        if (len > LMAX) len = LMAX;
        uint64_t c0 = crc, c1 = 0, c2 = 0;
        const uint8_t *q = p, *stop = p + len;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, q, 8);
            memcpy(&w1, q + len, 8);
            memcpy(&w2, q + 2 * len, 8);
            c0 = __builtin_ia32_crc32di(c0, w0);
            c1 = __builtin_ia32_crc32di(c1, w1);
            c2 = __builtin_ia32_crc32di(c2, w2);
            q += 8;
        } while (q < stop);
        crc = shift_clmul(shift_clmul((uint32_t)c0, len) ^ (uint32_t)c1, len) ^ (uint32_t)c2;
        p += 3 * len;
        n -= 3 * len;
    }
    return crc_words(crc, p, n);
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n >= 3 * LANE) {
        if (!__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE)) shift_init();
        while (n >= 3 * LANE) {
            uint64_t c0 = crc, c1 = 0, c2 = 0;
#pragma GCC unroll 8
            for (int i = 0; i < LANE; i += 8) {
                uint64_t w0, w1, w2;
                memcpy(&w0, p + i, 8);
                memcpy(&w1, p + LANE + i, 8);
                memcpy(&w2, p + 2 * LANE + i, 8);
                c0 = __builtin_ia32_crc32di(c0, w0);
                c1 = __builtin_ia32_crc32di(c1, w1);
                c2 = __builtin_ia32_crc32di(c2, w2);
            }
            crc = shift_lane(shift_lane((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
            p += 3 * LANE;
            n -= 3 * LANE;
        }
    }
    return crc_words(crc, p, n);
}

/* ---- folding 64-byte blocks with VPCLMULQDQ (AVX-512) ----
 *
 * For buffers of FOLD_MIN bytes and more. A 512-bit register holds four
 * 128-bit polynomials, one per 16 bytes of a 64-byte block, in the reflected
 * order (bit k of a 128-bit lane is the coefficient of x^(127-k); its first
 * 8 bytes Q0 are the high half: lane = Q0 x^64 + Q1). Moving a lane D bits
 * further on is lane * x^D, and mod P that is Q0 (x^(D+64) mod P) +
 * Q1 (x^D mod P), two carry-less multiplies of 64 by 32 bits; the reflected
 * product of two 64-bit operands reads as their product times x, so the
 * constants are x^(D+63) and x^(D-1) mod P (fold_k). Two registers fold
 * 128 bytes a step, the registers are joined (D = 512) and the four lanes of
 * the last one folded into one (D = 384, 256, 128); the 128 bits R left end
 * as crc32q(crc32q(0, R.Q0), R.Q1) = R x^32 mod P. The bytes after the last
 * whole block (under 64) run through the crc32 instruction beside the folds,
 * as their own lane from 0, joined at the end by shifting the folded CRC past
 * them (kbyte). The CRC coming in is xored into the first 4 bytes. */
#define FOLD_MIN 128
static uint64_t fold_k[4][2];  /* {x^(D+63), x^(D-1)} mod P, D = 1024, 512, and the lane fold's table: */
static uint64_t lane_k[4][2];  /* lane i of the last block: D = 128 * (3 - i); lane 3 stays (0, 0) */
static uint32_t kbyte[64];     /* kbyte[t] = x^(8t - 33) mod P, reflected, t = 8 .. 63 */
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;
static int fold_ready;

/* x^@e mod P in the 64-bit reflected form a multiply takes (x^d at bit 63 - d) */
static uint64_t xpow64(unsigned e) { return (uint64_t)mulx(0x80000000u, e) << 32; }

static void build_fold(void)
{
    fold_k[0][0] = xpow64(1024 + 63), fold_k[0][1] = xpow64(1024 - 1);
    fold_k[1][0] = xpow64(512 + 63), fold_k[1][1] = xpow64(512 - 1);
    for (int i = 0; i < 3; i++) {
        unsigned d = 128u * (unsigned)(3 - i);
        lane_k[i][0] = xpow64(d + 63), lane_k[i][1] = xpow64(d - 1);
    }
    for (unsigned t = 8; t < 64; t++) kbyte[t] = mulx(0x80000000u, 8 * t - 33);
}

#define FOLD_TARGET __attribute__((target("sse4.2,pclmul,avx512f,vpclmulqdq")))

FOLD_TARGET static inline __m512i fold512(__m512i acc, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11), next, 0x96);
}

FOLD_TARGET static inline __m512i k512(const uint64_t k[2]) { return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k[1], (long long)k[0])); }

FOLD_TARGET static uint32_t crc_fold(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < FOLD_MIN) return crc_clmul(crc, p, n);
    if (!__atomic_load_n(&fold_ready, __ATOMIC_ACQUIRE)) {
        pthread_once(&fold_once, build_fold);
        __atomic_store_n(&fold_ready, 1, __ATOMIC_RELEASE);
    }
    size_t tail = n & 63, blocks = n >> 6;
    uint32_t crc_tail = tail >= 8 ? crc_words(0, p + n - tail, tail) : 0; /* its own lane, beside the folds */
    __m512i acc0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    __m512i acc1 = _mm512_loadu_si512(p + 64);
    const uint8_t *q = p + 128;
    size_t left = blocks - 2;
    if (left >= 2) {
        __m512i k1024 = k512(fold_k[0]);
        do {
            acc0 = fold512(acc0, k1024, _mm512_loadu_si512(q));
            acc1 = fold512(acc1, k1024, _mm512_loadu_si512(q + 64));
            q += 128;
            left -= 2;
        } while (left >= 2);
    }
    __m512i k512_ = k512(fold_k[1]);
    __m512i acc = fold512(acc0, k512_, acc1);
    if (left) acc = fold512(acc, k512_, _mm512_loadu_si512(q));
    __m512i lk = _mm512_loadu_si512(lane_k);
    __m512i t = _mm512_xor_si512(_mm512_clmulepi64_epi128(acc, lk, 0x00), _mm512_clmulepi64_epi128(acc, lk, 0x11));
    __m128i r = _mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32(t, 0), _mm512_extracti32x4_epi32(t, 1)),
                              _mm_xor_si128(_mm512_extracti32x4_epi32(t, 2), _mm512_extracti32x4_epi32(acc, 3)));
    uint64_t c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(r));
    c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(r, 1));
    if (tail < 8) return crc_words((uint32_t)c, p + n - tail, tail);
    __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c), _mm_cvtsi32_si128((int)kbyte[tail]), 0);
    return (uint32_t)__builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(prod)) ^ crc_tail;
}
#define HAVE_HW 1
#endif

/* The fastest path this CPU has: 3 64-byte blocks folded by VPCLMULQDQ
 * (AVX-512; under 128 bytes as 2); 2 the crc32 instruction in lanes as long
 * as the buffer, joined by PCLMULQDQ; 1 in lanes of 64 bytes joined by a
 * table; 0 the table alone. __builtin_cpu_supports also asks whether the OS
 * saves the AVX-512 registers (XCR0), and valgrind's CPU does not offer
 * AVX-512, so it runs path 2. */
int mr_crc32c_best(void)
{
#ifdef HAVE_HW
    static int hw = -1; /* a race writes the same value */
    if (hw < 0)
        hw = !__builtin_cpu_supports("sse4.2")  ? 0
             : !__builtin_cpu_supports("pclmul") ? 1
             : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") ? 3
                                                                                          : 2;
    return hw;
#else
    return 0;
#endif
}

uint32_t mr_crc32c_path(int path, uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef HAVE_HW
    if (path == 3) return ~crc_fold(~crc, p, n);
    if (path == 2) return ~crc_clmul(~crc, p, n);
    if (path == 1) return ~crc_hw(~crc, p, n);
#endif
    return ~crc_sw(~crc, p, n);
}

uint32_t mr_crc32c_update(uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef HAVE_HW
    int hw = mr_crc32c_best();
    if (hw == 3) return ~crc_fold(~crc, p, n);
    if (hw == 2) return ~crc_clmul(~crc, p, n);
    if (hw) return ~crc_hw(~crc, p, n);
#endif
    return ~crc_sw(~crc, p, n);
}

uint32_t mr_crc32c(const uint8_t *p, size_t n) { return mr_crc32c_update(0, p, n); }
