/* arena.c - per-request bump allocator (see arena.h). */
#include "core/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct chunk {
    struct chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

struct arena {
    struct chunk *head;   /* current chunk, newest first */
    size_t chunk_size;
    size_t total;
};

/* Allocates a chunk able to hold at least n bytes; aborts on OOM. */
static struct chunk *chunk_new(size_t n)
{
    struct chunk *c = malloc(sizeof *c + n);
    if (!c) {
        fputs("tabled: out of memory\n", stderr);
        abort();
    }
    c->next = NULL;
    c->size = n;
    c->used = 0;
    return c;
}

struct arena *arena_new(size_t chunk_size)
{
    struct arena *a = calloc(1, sizeof *a);
    if (!a)
        abort();
    a->chunk_size = chunk_size ? chunk_size : 16384;
    return a;
}

void arena_free(struct arena *a)
{
    if (!a)
        return;
    struct chunk *c = a->head;
    while (c) {
        struct chunk *n = c->next;
        free(c);
        c = n;
    }
    free(a);
}

/* Keeps the first (oldest, normal-sized) chunk for reuse and frees the rest,
 * so a steady stream of small requests allocates nothing. */
void arena_reset(struct arena *a)
{
    struct chunk *keep = NULL, *c = a->head;
    while (c) {
        struct chunk *n = c->next;
        if (!n && c->size == a->chunk_size)
            keep = c;
        else
            free(c);
        c = n;
    }
    if (keep)
        keep->used = 0;
    a->head = keep;
    a->total = 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        if (n > a->chunk_size / 4) {
            /* Large block: its own chunk, linked behind the current one so
             * the current chunk keeps serving small allocations. */
            struct chunk *big = chunk_new(n);
            big->used = n;
            if (c) {
                big->next = c->next;
                c->next = big;
            } else {
                a->head = big;
            }
            a->total += n;
            return big->data;
        }
        c = chunk_new(a->chunk_size);
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    return p;
}

void *arena_calloc(struct arena *a, size_t n)
{
    void *p = arena_alloc(a, n);
    memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_sprintf(struct arena *a, const char *fmt, ...)
{
    /* Format into a stack buffer first; only long results format twice. */
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    if ((size_t)n < sizeof tmp) {
        memcpy(p, tmp, (size_t)n + 1);
        return p;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

char *arena_concat(struct arena *a, ...)
{
    va_list ap;
    size_t n = 0;
    va_start(ap, a);
    for (const char *s; (s = va_arg(ap, const char *));)
        n += strlen(s);
    va_end(ap);
    char *p = arena_alloc(a, n + 1), *q = p;
    va_start(ap, a);
    for (const char *s; (s = va_arg(ap, const char *));) {
        size_t k = strlen(s);
        memcpy(q, s, k);
        q += k;
    }
    va_end(ap);
    *q = '\0';
    return p;
}

size_t arena_used(const struct arena *a)
{
    return a->total;
}
