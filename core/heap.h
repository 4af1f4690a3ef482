/* heap.h - how the process heap is kept: malloc settings.
 *
 * A request's buffers are allocated and freed on every request, and the
 * in-memory store grows by about one entity's size for every insert, all on
 * glibc's main heap. malloc keeps its memory: buffers of a few MiB stay on
 * the heap (no fresh mmap each time), the heap grows 32 MiB at a time, and
 * its top is not given back to the kernel after each request, only once
 * 64 MiB are free there. */
#ifndef TABLED_HEAP_H
#define TABLED_HEAP_H

/* Sets malloc's options; call once, first thing in main(). */
void heap_tune(void);

#endif
