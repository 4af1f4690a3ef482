/* rand.h - fast non-cryptographic generators with explicit state: skip-list
 * heights, fault injection draws, request ids. Never for secrets. */
#ifndef TABLED_RAND_H
#define TABLED_RAND_H
#include <stdint.h>

/* xorshift64 (13, 7, 17): advances *state (never 0) and returns it. */
uint64_t rand_xorshift64(uint64_t *state);

/* xorshift128+ state. */
struct rand_x128 {
    uint64_t s[2];
};

/* Seeds r from seed when non-zero (reproducible runs), else from
 * getrandom() (falling back on the time and the address of r). */
void rand_x128_seed(struct rand_x128 *r, uint64_t seed);

/* Next 64 random bits of r. */
uint64_t rand_x128_next(struct rand_x128 *r);

/* Uniform double in [0, 1) from r (53 bits). */
double rand_x128_unit(struct rand_x128 *r);

#endif
