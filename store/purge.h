/* purge.h - removing the entities of deleted tables, in the background.
 *
 * Every table instance has its own key prefix, 'e' be64(TABLE_ID), and ids
 * are never reused (store/tables.h), so once a table's row is gone its
 * entities are unreachable: a re-created table of the same name gets a new
 * id and sees none of them. Delete Table therefore only deletes the row
 * and, in the same atomic apply(), puts a purge record
 *     'd' be64(TABLE_ID) -> u8 version (=1), the last entity key deleted
 *                           (absent until the first chunk)
 * and answers at once. purge_step() then deletes the entities a bounded
 * chunk per call (PURGE_CHUNK keys), from the event loop between requests;
 * each chunk's deletes and the record's new resume key are one apply(), so
 * a chunk never rescans what earlier chunks deleted (on LevelDB a scan from
 * the table's first key would walk every deletion marker before it), and
 * after a crash or a stop purge_load() finds every unfinished purge and it
 * goes on where it stopped. The chunk that finds no entity left deletes
 * the record.
 *
 * Data from before purge records existed may hold entities of tables that
 * have neither a row nor a record (a delete interrupted by a crash);
 * purge_load() finds those too and purges them the same way.
 *
 * On a store shared by several front ends (kv_shared) any of them may
 * have started a purge, and may die before it ends: each front end looks
 * for purge records now and then (purge_rescan, from its background step)
 * and purges what it finds, its own or not. Two front ends purging one
 * table delete the same keys (harmless: deleting an absent key is no
 * error); each chunk's record write expects the record present, so once
 * one of them finished (deleted the record), the other's next chunk
 * conflicts, writes nothing, and it drops the job. The orphan scan is
 * skipped there (tables.h).
 *
 * Everything here goes through the backend vtable (iter_open at the resume
 * key, iter_next, apply), so it works on every backend and plug-in. */
#ifndef TABLED_PURGE_H
#define TABLED_PURGE_H
#include <stddef.h>
#include <stdint.h>

#include "store/kv.h"
#include "core/buf.h"

/* Keys deleted by one purge_step() at most (and key bytes, for long keys). */
#define PURGE_CHUNK 1024
#define PURGE_CHUNK_BYTES (1u << 20)

struct purge;

/* What one purge_step() did. */
struct purge_progress {
    uint64_t id;         /* the table purged */
    int account;         /* the account given to purge_add(), or -1 */
    size_t removed;      /* entities deleted */
    size_t bytes;        /* their keys' and values' bytes */
    uint64_t table_bytes; /* bytes of the table deleted by this process
                            since its purge was queued, this step's too */
    int finished;        /* the table's purge is complete */
};

struct purge *purge_new(void);
void purge_free(struct purge *p);

/* Finds the unfinished purges of the store: every purge record, and the
 * entity ids that have neither a table row nor a record. *max_id receives
 * the largest table id among them (0: none), which no new table may reuse.
 * 0, or a backend status with a message. */
int purge_load(struct purge *p, struct kv *kv,
               uint64_t *max_id, char *err, size_t errlen);

/* The record that starts the purge of table id: appends its key to key and
 * its value to val (to be written in the same apply() as the table row's
 * delete; then call purge_add). */
void purge_record(struct buf *key, struct buf *val, uint64_t id);

/* Queues the purges whose records are in the store and not queued yet
 * (another front end's, on a shared store). 0, or a backend status. */
int purge_rescan(struct purge *p, struct kv *kv, char *err, size_t errlen);

/* Queues the purge of table id (its record is written). account: whose
 * entity count these entities are in (reported back by purge_step), -1
 * for none. */
void purge_add(struct purge *p, uint64_t id, int account);

/* Number of tables whose entities are still being removed. */
size_t purge_pending(const struct purge *p);

/* Deletes the next chunk of the oldest pending purge (one iterator, one
 * apply()). 0 with *pr filled (nothing done when none is pending), or a
 * backend status with a message; then nothing was applied and the same
 * chunk is tried again on the next call. */
int purge_step(struct purge *p, struct kv *kv,
               struct purge_progress *pr, char *err, size_t errlen);

#endif
