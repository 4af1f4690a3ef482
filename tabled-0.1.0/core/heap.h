/* heap.h - how the process heap is kept: malloc settings, and transparent
 * huge pages for the heap as it grows.
 *
 * A request's buffers are allocated and freed on every request, and the
 * in-memory store grows by about one entity's size for every insert, all on
 * glibc's main heap. Two things make that cheap:
 *  - malloc keeps its memory: buffers of a few MiB stay on the heap (no
 *    fresh mmap each time) and the top of the heap is not given back to the
 *    kernel after each request, only once 64 MiB are free there;
 *  - the heap grows 32 MiB at a time, and each part that brk() adds is
 *    advised MADV_HUGEPAGE, so that where transparent huge pages are on
 *    ("madvise" or "always"; on "never" the advice does nothing) one page
 *    fault maps 2 MiB instead of 4 KiB. On a virtual machine a 4 KiB fault
 *    can cost about 10 us (2.7 s per GB measured), more than an insert's
 *    own work for the 4 KiB of entities it maps (glibc's
 *    glibc.malloc.hugetlb=1 tunable does the same, but only from the
 *    environment at start-up).
 * Under AddressSanitizer malloc is not glibc's and the heap does not grow:
 * the advice then never happens. */
#ifndef TABLED_HEAP_H
#define TABLED_HEAP_H

/* Sets malloc's options and starts watching the heap's growth; call once,
 * first thing in main(). */
void heap_tune(void);

/* Advises MADV_HUGEPAGE for what the heap has grown by since the last call
 * (whole 2 MiB pages only); cheap when it has not grown. Called after each
 * request. */
void heap_advise(void);

#endif
