/* heap.c - giving freed memory back to the kernel (see heap.h).
 *
 * malloc keeps glibc's own settings: thresholds of our own (32 MiB heap
 * steps, trimming from 64 MiB, blocks from 16 MiB mmap'd) showed no gain
 * in A/B runs of bench_batch (doc/performance.md, "Speed tricks and what
 * they earn") and were removed, with the switch to glibc's defaults
 * during a backend's compaction that they needed.
 *
 * Huge-page advice for the heap as it grew (MADV_HUGEPAGE and MADV_COLLAPSE
 * after every request) was removed: in A/B runs of `make bench-batch` it
 * showed no gain, the $batch benchmark was as fast or faster without it
 * (README, Performance). */
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "core/heap.h"

static size_t heap_freed_bytes;                 /* counted since the last give-back */

#ifdef __SANITIZE_ADDRESS__
/* A sanitizer build allocates through ASan, whose free memory and
 * quarantine this gives back (libasan; no header is needed). */
void __sanitizer_purge_allocator(void);
#endif

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
