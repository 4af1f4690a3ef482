/* heap.h - how the process heap is kept: malloc settings, and giving
 * freed memory back to the kernel.
 *
 * A request's buffers are allocated and freed on every request, and the
 * in-memory store grows by about one entity's size for every insert, all on
 * glibc's main heap. malloc keeps its memory: buffers of a few MiB stay on
 * the heap (no fresh mmap each time), the heap grows 32 MiB at a time, and
 * its top is not given back to the kernel after each request, only once
 * 64 MiB are free there.
 *
 * Free memory in the middle of the heap (a deleted table's entities, with
 * live blocks allocated after them) and in the arenas of other threads
 * (LevelDB's) is never given back by free() itself. Whoever frees much at
 * once counts it with heap_freed(); once HEAP_GIVE_BACK_MIN bytes were
 * counted, heap_give_back_due() says so, and the owner of the idle time
 * (the Table service's background step, after a second without requests)
 * calls heap_give_back(), which returns the free pages of every arena
 * (malloc_trim(0): a walk over the whole heap, so once, not per request). */
#ifndef TABLED_HEAP_H
#define TABLED_HEAP_H

#include <stddef.h>

/* Bytes counted by heap_freed() before a give-back is worth its walk. */
#define HEAP_GIVE_BACK_MIN ((size_t)32 << 20)

/* Sets malloc's options; call once, first thing in main(). */
void heap_tune(void);

/* On (1) while a backend's compaction of deleted data runs on another
 * thread, off (0) after it. heap_give_back() cannot trim the free top of
 * another thread's arena (LevelDB's compaction thread's: malloc_trim
 * trims only the main heap's top); that thread's own frees trim it, but
 * only once it exceeds HEAP_TRIM, as large as such an arena gets. On,
 * the thresholds are glibc's defaults (128 KiB), so that the compaction
 * thread gives its buffers back as it frees them; for the main heap that
 * means a brk() more often for those seconds. */
void heap_trim_eager(int on);

/* Counts bytes just freed in bulk (or data deleted whose memory a library
 * frees: an estimate is enough). */
void heap_freed(size_t bytes);

/* 1 when at least HEAP_GIVE_BACK_MIN bytes were counted since the last
 * heap_give_back(). */
int heap_give_back_due(void);

/* Gives the free pages of every malloc arena back to the kernel and
 * resets the count. Returns the resident bytes given back (as VmRSS
 * fell meanwhile; 0 when it could not be read). */
size_t heap_give_back(void);

#endif
