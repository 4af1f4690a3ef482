/* texthash.h - a fast non-cryptographic hash of a byte string, for caches
 * keyed by exact text (SAS queries, query strings). Not for tables an
 * attacker fills: it is not keyed. */
#ifndef TABLED_TEXTHASH_H
#define TABLED_TEXTHASH_H
#include <stddef.h>
#include <stdint.h>

/* 64 bits of hash of s[0..n); every bit depends on every byte. */
uint64_t texthash(const void *s, size_t n);

#endif
