/* pages.h - zeroed memory that costs resident pages only once it is used.
 *
 * A few long-lived structures are large (the server's read buffer,
 * the purge's chunk arrays, the signature caches: 50-80 KiB each) and
 * mostly untouched until the first requests that need them. calloc() of
 * such a block may come from heap memory freed earlier, and then writes
 * zeros over every page of it: an idle server would hold pages it has not
 * used (doc/performance.md, Idle footprint). pages_zalloc() keeps such a
 * block in pages of its own, which the kernel provides on first use. */
#ifndef TABLED_PAGES_H
#define TABLED_PAGES_H

#include <stddef.h>

/* n zeroed bytes in a private anonymous mapping (whole pages; nothing is
 * resident until written); aborts when the system has no memory left,
 * like the callers' calloc() did. Free with pages_free(p, n). */
void *pages_zalloc(size_t n);

/* Unmaps a block from pages_zalloc(p, n); p NULL does nothing. */
void pages_free(void *p, size_t n);

#endif
