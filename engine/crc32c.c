/*
 * crc32c.c — CRC-32C (Castagnoli) of stored values, so a flipped byte
 * anywhere in a value is detected before it is decoded (docs/codec.md).
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise;
 * every path gives the same result. The instruction's latency is three
 * cycles and its throughput one per cycle, so for buffers of 192 bytes and
 * more the hardware path runs three lanes at once and joins them (CRC-32C is
 * linear: crc(c, A.B) = crc(crc(c, A), zeros(|B|)) ^ crc(0, B)): with
 * PCLMULQDQ the lanes are a third of the buffer each (crc_clmul), without it
 * 64 bytes (crc_hw, joined by a table). tests/c/test_codec.c checks every
 * path at every length against a bitwise CRC-32C. Measured in bench/README.md
 * ("store format 5, child rows without their parent-key cells").
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
#define HAVE_HW 1
#endif

/* The fastest path this CPU has: 2 the crc32 instruction in lanes as long
 * as the buffer, joined by PCLMULQDQ; 1 in lanes of 64 bytes joined by a
 * table; 0 the table alone. */
int mr_crc32c_best(void)
{
#ifdef HAVE_HW
    static int hw = -1; /* a race writes the same value */
    if (hw < 0) hw = !__builtin_cpu_supports("sse4.2") ? 0 : __builtin_cpu_supports("pclmul") ? 2 : 1;
    return hw;
#else
    return 0;
#endif
}

uint32_t mr_crc32c_path(int path, uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef HAVE_HW
    if (path == 2) return ~crc_clmul(~crc, p, n);
    if (path == 1) return ~crc_hw(~crc, p, n);
#endif
    return ~crc_sw(~crc, p, n);
}

uint32_t mr_crc32c_update(uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef HAVE_HW
    int hw = mr_crc32c_best();
    if (hw == 2) return ~crc_clmul(~crc, p, n);
    if (hw) return ~crc_hw(~crc, p, n);
#endif
    return ~crc_sw(~crc, p, n);
}

uint32_t mr_crc32c(const uint8_t *p, size_t n) { return mr_crc32c_update(0, p, n); }
