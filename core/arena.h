/* arena.h - per-request bump allocator.
 *
 * Everything a request allocates while it is handled (decoded path pieces,
 * parsed entities, scratch strings) comes from its arena and is released in
 * one arena_reset() when the response has been written. Allocations are
 * 16-byte aligned. Out of memory aborts the process (there is no sane way to
 * answer a request half-allocated). */
#ifndef TABLED_ARENA_H
#define TABLED_ARENA_H
#include <stddef.h>

struct arena;

struct arena *arena_new(size_t chunk_size);
void arena_free(struct arena *a);
void arena_reset(struct arena *a);
void *arena_alloc(struct arena *a, size_t n);
void *arena_calloc(struct arena *a, size_t n);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_sprintf(struct arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The NUL-terminated strings given, up to a NULL, one after the other:
 * arena_sprintf("%s%s...") without parsing a format, for the strings a
 * response builds on every request. */
char *arena_concat(struct arena *a, ...) __attribute__((sentinel));
/* Bytes handed out since the last reset (for limits and tests). */
size_t arena_used(const struct arena *a);

#endif
