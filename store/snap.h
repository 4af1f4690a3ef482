/* snap.h - a cursor that reads the store as it was at one instant while
 * writes go on, over a list of key ranges read one after the other.
 *
 * GET /export (tools/dump_serve.c) reads a whole store this way, a piece
 * per event-loop turn, while the loop serves other requests. The ranges
 * (one per exported table) are read in the order given, each once, in key
 * order; what comes out is exactly the store as of snap_open: a write
 * applied later is not seen (not even a part of a batch), a key deleted
 * later is still returned with its value as of then.
 *
 * LevelDB cursors read an implicit snapshot already (backends/backend.h):
 * there a snap is one plain cursor. The memory and flat file backends, and
 * plug-ins, have cursors that see the live store. For them a "live" snap
 * watches the store's writes (kv_watch): before a write reaches the
 * backend, the current state of each key it touches that the snap has
 * not yet passed (a key of a range still ahead, or of the current range
 * beyond the last key returned) is kept, unless one is kept already:
 * absent, or the value, appended to an unlinked temporary file under
 * $TMPDIR (default /tmp; created at snap_open). The keys and where their
 * values lie are held in an in-memory ordered map (a private store of the
 * memory backend). snap_next merges the live cursor with that map: a key
 * in the map is returned with its kept value, or skipped when it was
 * absent; any other key is unchanged since snap_open and comes from the
 * store. A kept "absent" is dropped again when a later write deletes the
 * key (its state is then as at snap_open), so a stream of inserts and
 * deletes ahead of the cursor does not grow the map.
 *
 * Cost: each key is kept at most once, with its value as of snap_open, so
 * the temporary file holds at most the ranges' data as of then (usually
 * the few keys written ahead of the cursor while it runs) and the map the
 * keys written ahead of it (at most those that existed then plus those
 * that exist now). Each write during a live snap pays a cursor seek per
 * key. One watcher per store: a second live snap on a store fails.
 * A snap of a store whose calls complete later (kv_defers) is refused
 * unless live is 0. */
#ifndef TABLED_SNAP_H
#define TABLED_SNAP_H
#include <stddef.h>

#include "store/kv.h"

struct snap;

/* Keys lo <= k < hi (hi NULL: to the last key). Ranges must not overlap. */
struct snap_range {
    const void *lo;
    size_t lo_len;
    const void *hi;
    size_t hi_len;
};

/* Opens a snap of the n ranges r (copied) of kv. live: writes may come
 * while it is open (the server); 0: nothing writes to the store meanwhile
 * (an offline export), and the snap is a plain cursor. 0, or a failure
 * status with a message (BACKEND_INVALID: another live snap is open, or
 * the store defers its calls; BACKEND_IOERR: the temporary file). */
int snap_open(struct kv *kv, const struct snap_range *r, size_t n, int live, struct snap **out,
              char *err, size_t errlen);
/* Starts reading range i: the first snap_enter may name any range, each
 * later one a range after the current one in the list (the ranges
 * between are then skipped). 0, or a failure (see snap_error). */
int snap_enter(struct snap *s, size_t i);
/* The next entry of the current range as of snap_open: 1 with key and
 * value (valid until the next snap call or write to the store), 0 at the
 * end of the range, or a failure (see snap_error): a read failed, or
 * keeping a value before a write failed (the write itself went on; the
 * snap is then lost). */
int snap_next(struct snap *s, const void **key, size_t *key_len, const void **val,
              size_t *val_len);
const char *snap_error(const struct snap *s);
/* Keys kept for writes made while the snap was open, and the bytes of
 * their values in the temporary file. */
void snap_kept(const struct snap *s, unsigned long long *keys, unsigned long long *bytes);
/* Stops watching, removes the temporary file, frees s (NULL is fine). */
void snap_close(struct snap *s);

#endif
