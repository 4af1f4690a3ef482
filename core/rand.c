/* rand.c - xorshift generators (see rand.h). */
#include "core/rand.h"

#include <stdint.h>
#include <sys/random.h>
#include <time.h>

/* Marsaglia's xorshift64 with the (13, 7, 17) triple. */
uint64_t rand_xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* A fixed seed spreads into both words; s[0] is made odd so the state is
 * never all zero. */
void rand_x128_seed(struct rand_x128 *r, uint64_t seed)
{
    if (seed) {
        r->s[0] = seed;
        r->s[1] = seed * 0x9e3779b97f4a7c15ULL + 1;
    } else if (getrandom(r->s, sizeof r->s, 0) != sizeof r->s) {
        r->s[0] = (uint64_t)time(NULL);
        r->s[1] = (uint64_t)(uintptr_t)r;
    }
    r->s[0] |= 1;
}

/* Vigna's xorshift128+ (23, 17, 26). */
uint64_t rand_x128_next(struct rand_x128 *r)
{
    uint64_t s1 = r->s[0];
    const uint64_t s0 = r->s[1];
    r->s[0] = s0;
    s1 ^= s1 << 23;
    r->s[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return r->s[1] + s0;
}

/* The top 53 bits scaled by 2^-53. */
double rand_x128_unit(struct rand_x128 *r)
{
    return (double)(rand_x128_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
