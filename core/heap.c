/* heap.c - malloc settings for the heap, and giving freed memory back to
 * the kernel (see heap.h).
 *
 * Huge-page advice for the heap as it grew (MADV_HUGEPAGE and MADV_COLLAPSE
 * after every request) was removed: in A/B runs of `make bench-batch` it
 * showed no gain, the $batch benchmark was as fast or faster without it
 * (README, Performance). */
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "core/heap.h"

#define HEAP_TOP_PAD (32 << 20)                 /* the heap grows this much per brk() */
#define HEAP_TRIM (64 << 20)                    /* free top given back from this size */
#define HEAP_MMAP (16 << 20)                    /* blocks from this size get their own mmap */

static size_t heap_freed_bytes;                 /* counted since the last give-back */

#ifdef __SANITIZE_ADDRESS__
/* A sanitizer build allocates through ASan, whose free memory and
 * quarantine this gives back (libasan; no header is needed). */
void __sanitizer_purge_allocator(void);
#endif

/* Sets malloc's thresholds. */
void heap_tune(void)
{
    mallopt(M_MMAP_THRESHOLD, HEAP_MMAP);
    mallopt(M_TRIM_THRESHOLD, HEAP_TRIM);
    mallopt(M_TOP_PAD, HEAP_TOP_PAD);
}

/* See heap.h: glibc's own defaults (DEFAULT_TRIM_THRESHOLD, DEFAULT_TOP_PAD)
 * while on. */
void heap_trim_eager(int on)
{
    mallopt(M_TRIM_THRESHOLD, on ? 128 << 10 : HEAP_TRIM);
    mallopt(M_TOP_PAD, on ? 128 << 10 : HEAP_TOP_PAD);
}

/* Adds to the count that makes a give-back worthwhile. */
void heap_freed(size_t bytes)
{
    heap_freed_bytes += bytes;
}

int heap_give_back_due(void)
{
    return heap_freed_bytes >= HEAP_GIVE_BACK_MIN;
}

/* The process's resident bytes (/proc/self/statm), 0 when unknown. */
static size_t heap_resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size, res = 0;
    if (fscanf(f, "%lu %lu", &size, &res) != 2)
        res = 0;
    fclose(f);
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* malloc_trim(0): releases the free top of each arena and, since glibc
 * 2.8, every whole free page inside them (MADV_DONTNEED); in a sanitizer
 * build, ASan's allocator does the same for its own. */
size_t heap_give_back(void)
{
    heap_freed_bytes = 0;
    size_t before = heap_resident();
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_purge_allocator();
#else
    malloc_trim(0);
#endif
    size_t after = heap_resident();
    return before > after && after ? before - after : 0;
}
