/* heap.c - malloc settings for the heap (see heap.h).
 *
 * Huge-page advice for the heap as it grew (MADV_HUGEPAGE and MADV_COLLAPSE
 * after every request) was removed: in A/B runs of `make bench-batch` it
 * showed no gain, the $batch benchmark was as fast or faster without it
 * (README, Performance). */
#include <malloc.h>

#include "core/heap.h"

#define HEAP_TOP_PAD (32 << 20)                 /* the heap grows this much per brk() */
#define HEAP_TRIM (64 << 20)                    /* free top given back from this size */
#define HEAP_MMAP (16 << 20)                    /* blocks from this size get their own mmap */

/* Sets malloc's thresholds. */
void heap_tune(void)
{
    mallopt(M_MMAP_THRESHOLD, HEAP_MMAP);
    mallopt(M_TRIM_THRESHOLD, HEAP_TRIM);
    mallopt(M_TOP_PAD, HEAP_TOP_PAD);
}
