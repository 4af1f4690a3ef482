/* reclaim.h - asking the backend for the space purged tables leave.
 *
 * A purge (store/purge.h) deletes a table's entities, but an engine that
 * keeps deleted data until a compaction reaches it still holds them:
 * LevelDB keeps deletion markers in its memtable and the old values in
 * table files, which stay on disk and mapped in memory, and with no more
 * writes to that key range no compaction may ever reach it. When the
 * purge of a table that held at least RECLAIM_MIN_BYTES has finished,
 * reclaim_table() queues the table's key range, and reclaim_start()
 * hands the queued ranges to the backend as hints (kv_compact_start,
 * backend.h compact_v2), one at a time. A range is joined to the last
 * queued one when the two touch: the tables of a bulk delete have
 * consecutive ids, so the service starts once no purge is left, and one
 * compaction reclaims them all. Each time one completes, the bytes its
 * tables held are counted as freed (core/heap.h heap_freed: the backend
 * has now freed what it kept of them) and done(arg) is called from the
 * event loop: the service gives that memory back when it is due.
 *
 * Smaller tables are left to the engine's own compactions: LevelDB
 * compacts whole files, and the files that hold a small table hold its
 * neighbours too, so rewriting them would cost more than it frees.
 * Nothing is stored: a stop before the hint is taken loses only the hint.
 * A backend without the hint (memory frees at once, flatfile compacts by
 * itself, postgres has autovacuum) makes every call here a no-op. */
#ifndef TABLED_RECLAIM_H
#define TABLED_RECLAIM_H
#include <stddef.h>
#include <stdint.h>

#include "store/kv.h"

/* Bytes a table's purge must have deleted before its range is handed on. */
#define RECLAIM_MIN_BYTES ((uint64_t)32 << 20)

struct reclaim;

/* A queue over kv; done(arg) after each range the backend has handled
   (done may be NULL). */
struct reclaim *reclaim_new(struct kv *kv, void (*done)(void *arg), void *arg);

/* Frees the queue. A hint in flight is dropped: close the kv next, with
   no event-loop turn in between (its close waits for the work and drops
   the completion). */
void reclaim_free(struct reclaim *r);

/* The purge of table id has deleted bytes of keys and values in all and
   is finished: queues its range when bytes >= RECLAIM_MIN_BYTES. */
void reclaim_table(struct reclaim *r, uint64_t id, uint64_t bytes);

/* Hands the queued ranges on, one at a time (the next when the one in
   flight completes). */
void reclaim_start(struct reclaim *r);

#endif
