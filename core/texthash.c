/* texthash.c - see texthash.h. */
#include "core/texthash.h"

#include <string.h>

/* Eight bytes a step with FNV-1a's constants and a shift that brings high
 * bits down; the last fold mixes the high half into the low bits that
 * callers take a slot from. */
uint64_t texthash(const void *s, size_t n)
{
    const unsigned char *p = s;
    uint64_t h = 1469598103934665603ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 32);
}
