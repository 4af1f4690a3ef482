/* heap.c - malloc settings and huge-page advice for the heap (see heap.h).
 *
 * The advice must be renewed as the heap grows: brk() extends the heap with
 * a new mapping that does not inherit MADV_HUGEPAGE from the one below
 * (their flags differ, so the kernel does not merge them). After each
 * request heap_advise() compares the program break with the end of the
 * advised part, and advises the difference, rounded down to 2 MiB; the
 * kernel then merges the advised mappings again.
 *
 * The request during which the heap grew has already touched the start of
 * the new part, and the 2 MiB page that straddles the old break was filled
 * in 4 KiB pages before that; a 2 MiB range with any 4 KiB page in it takes
 * no huge page at fault time. That first range of each step is collapsed
 * into a huge page at once (MADV_COLLAPSE, Linux 6.1; a copy of at most
 * 2 MiB per 32 MiB step), instead of costing 512 faults of its own. Older
 * kernels refuse it and leave it to khugepaged. */
#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/heap.h"

#define HEAP_HUGE ((uintptr_t)2 << 20)          /* transparent huge page size */
#define HEAP_TOP_PAD (32 << 20)                 /* the heap grows this much per brk() */
#define HEAP_TRIM (64 << 20)                    /* free top given back from this size */
#define HEAP_MMAP (16 << 20)                    /* blocks from this size get their own mmap */

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25        /* Linux 6.1; not yet in glibc 2.36's headers */
#endif

static uintptr_t heap_advised;  /* end of the advised part; 2 MiB-aligned */

/* Sets malloc's thresholds, and starts the advised part at the first 2 MiB
 * boundary at or above the current break. */
void heap_tune(void)
{
    mallopt(M_MMAP_THRESHOLD, HEAP_MMAP);
    mallopt(M_TRIM_THRESHOLD, HEAP_TRIM);
    mallopt(M_TOP_PAD, HEAP_TOP_PAD);
    heap_advised = ((uintptr_t)sbrk(0) + HEAP_HUGE - 1) & ~(HEAP_HUGE - 1);
}

/* Advises the whole 2 MiB pages between the advised end and the break, and
 * collapses the first of them (see above). A heap that shrank (trimmed)
 * moves the advised end down with it. */
void heap_advise(void)
{
#ifdef MADV_HUGEPAGE
    uintptr_t end = (uintptr_t)sbrk(0) & ~(HEAP_HUGE - 1);
    if (end == heap_advised || !heap_advised)
        return;
    if (end > heap_advised &&
        madvise((void *)heap_advised, end - heap_advised, MADV_HUGEPAGE) == 0)
        madvise((void *)heap_advised, HEAP_HUGE, MADV_COLLAPSE);  /* errors: a hint */
    heap_advised = end;
#endif
}
