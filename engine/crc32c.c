/*
 * crc32c.c — CRC-32C (Castagnoli) of stored values, so a flipped byte
 * anywhere in a value is detected before it is decoded (docs/codec.md).
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise;
 * both give the same result. The instruction's latency is three cycles and
 * its throughput one per cycle, so for buffers of 192 bytes and more the
 * hardware path runs three lanes of 64 bytes at once and joins them with a
 * table that appends 64 zero bytes to a CRC (CRC-32C is linear:
 * crc(c, A.B) = crc(crc(c, A), zeros(|B|)) ^ crc(0, B)); tests/c/test_codec.c
 * checks every length against the table-driven CRC.
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
#define LANE 64
static uint32_t shift_tab[4][256]; /* raw CRC register x -> that register after LANE zero bytes, byte by byte of x */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void build_shift(void)
{
    static const uint8_t zeros[LANE];
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) shift_tab[k][b] = crc_sw(b << (8 * k), zeros, LANE);
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
#define HAVE_HW 1
#endif

uint32_t mr_crc32c_update(uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef HAVE_HW
    static int hw = -1;
    if (hw < 0) hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    if (hw) return ~crc_hw(~crc, p, n);
#endif
    return ~crc_sw(~crc, p, n);
}

uint32_t mr_crc32c(const uint8_t *p, size_t n) { return mr_crc32c_update(0, p, n); }
