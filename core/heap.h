/* heap.h - giving freed memory back to the kernel. malloc keeps glibc's
 * own settings (its top is trimmed once 128 KiB are free there; larger
 * blocks are mmap'd from a threshold glibc adapts).
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
