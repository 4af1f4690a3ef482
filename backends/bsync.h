/* bsync.h - one sync worker thread for a durable backend's group commit.
 *
 * tabled is single-threaded, except for this: a backend in
 * BACKEND_DURABLE_BATCH mode runs its fdatasync() on a worker thread so
 * that the event loop goes on reading, parsing and applying the next
 * group's writes while one group's sync is in flight (backend.h,
 * sync_async). The thread's job is tiny and must stay so: the job
 * function is given only what it owns during the job (file descriptors
 * and a small result area of the backend, which the loop does not touch
 * until the job is finished), never the index, the buffers or anything the
 * loop changes. The handoff is a mutex and a condition variable (the job
 * in, the status out) and an eventfd the loop watches through the host's
 * fd_watch hook: the job's done callback always runs on the loop thread,
 * from that watch, never from inside a backend method. While the loop
 * starts each job soon after the last one's end (a busy group commit), the
 * thread polls for the next one for a moment instead of sleeping, which
 * saves the wake-up (bsync.c).
 *
 * The same worker serves a job that is long but as self-contained: a
 * backend's compaction of a range on request (backend.h compact_v2;
 * leveldb runs it on a bsync of its own, so that it never holds up a
 * sync).
 *
 * At most one job at a time. bsync_wait() blocks the loop until the job
 * in flight (if any) has finished (its done callback still comes later,
 * from the watch), for the rare moments a backend must change what the
 * job uses (closing a file a compaction replaced, reopening a database).
 */
#ifndef TABLED_BSYNC_H
#define TABLED_BSYNC_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"

struct bsync;

/* A worker with its thread, its eventfd watched on host. NULL with a
   message in err when the thread or the eventfd cannot be made. */
struct bsync *bsync_new(const struct backend_host *host, char *err, size_t errlen);

/* Runs job(arg) on the thread; then, on the loop thread, done(arg, rc)
   with job's return value. No job may be in flight (bsync_busy). */
void bsync_start(struct bsync *b, int (*job)(void *arg), void (*done)(void *arg, int rc),
                 void *arg);

/* 1 from bsync_start until done has been called. */
int bsync_busy(struct bsync *b);

/* Blocks until the job in flight, if any, has returned (done follows from
   the loop as usual). */
void bsync_wait(struct bsync *b);

/* How many times the thread, after a job, polled for the next one and
   found it (*found) or went to sleep after the longest poll (*missed);
   see bsync.c. For tests and benchmarks. */
void bsync_polls(struct bsync *b, uint64_t *found, uint64_t *missed);

/* Waits for the job in flight, stops the thread and frees the worker; a
   done callback not yet delivered is dropped. NULL is a no-op. */
void bsync_free(struct bsync *b);

#endif
