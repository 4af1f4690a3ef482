/* bkey.h - the order of the keyspace, written once: every backend, the
 * shared skip list (backends/skiplist.h) and the store's snapshot merge
 * (store/snap.c) compare keys with bkey_cmp().
 *
 * Keys are byte strings ordered as unsigned bytes (memcmp), a proper
 * prefix before the longer key; backend.h promises clients this order and
 * store/keys.h encodes keys so that it is the service's order.
 *
 * Header-only (static inline) and installed beside backend.h
 * ($(includedir)/tabled/backends/bkey.h): plug-ins that compile
 * backends/memory.c alone need it without an object file, and the
 * comparison is inlined into every skip-list search. */
#ifndef TABLED_BACKEND_BKEY_H
#define TABLED_BACKEND_BKEY_H
#include <stddef.h>
#include <string.h>

/* <0, 0 or >0 as key a sorts before, equal to or after key b. A NULL
 * pointer is allowed with a length of 0. */
static inline int bkey_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

#endif
