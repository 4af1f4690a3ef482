/* crc32c.c - CRC-32C (Castagnoli polynomial 0x82F63B78, reflected).
 *
 * The software path is "slicing by 8": eight 256-entry tables, built once,
 * consume eight bytes per step. On x86-64 with SSE4.2 the crc32 instruction
 * does the same work several times faster; flatfile start-up checksums the
 * whole log, so this is what keeps restarts of large stores quick. */
#include "backends/crc32c.h"

#include <string.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc32c_table[8][256];
static int crc32c_ready;

/* Builds the slicing tables (idempotent; tabled is single-threaded and
 * tests call this from one thread). */
static void crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
        crc32c_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^
                                 crc32c_table[0][crc32c_table[t - 1][i] & 0xff];
    crc32c_ready = 1;
}

uint32_t crc32c_extend_sw(uint32_t crc, const void *data, size_t n)
{
    if (!crc32c_ready)
        crc32c_init();
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;          /* little-endian: the low four bytes take the CRC */
        c = crc32c_table[7][w & 0xff] ^ crc32c_table[6][(w >> 8) & 0xff] ^
            crc32c_table[5][(w >> 16) & 0xff] ^ crc32c_table[4][(w >> 24) & 0xff] ^
            crc32c_table[3][(w >> 32) & 0xff] ^ crc32c_table[2][(w >> 40) & 0xff] ^
            crc32c_table[1][(w >> 48) & 0xff] ^ crc32c_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>

/* The SSE4.2 path: eight bytes per crc32 instruction. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_extend_hw(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n)
{
    static int have_hw = -1;
    if (have_hw < 0) {
        __builtin_cpu_init();
        have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return have_hw ? crc32c_extend_hw(crc, data, n) : crc32c_extend_sw(crc, data, n);
}
#else
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n)
{
    return crc32c_extend_sw(crc, data, n);
}
#endif
