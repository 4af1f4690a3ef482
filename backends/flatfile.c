/* flatfile.c - the flat-file backend: one append-only log of framed
 * records plus an in-memory ordered index of where each live value lies.
 *
 * Files in the data directory:
 *   flatfile.log           the log
 *   flatfile.log.compact   the next log while a compaction builds it
 *   LOCK                   flock()ed while a process has the store open
 *   flatfile.ckpt          the index checkpoint (ffckpt.h; "the index
 *                          checkpoint" below): start-up loads it and
 *                          replays only the log written after its start
 *   flatfile.ckpt.tmp      a checkpoint being written
 *
 * Log format (integers little-endian):
 *   file header, 32 bytes: "TBLDFLAT", u32 version (1), u32 header size
 *     (32), u64 random file id, u32 reserved (0), u32 CRC-32C of bytes 0-27
 *   records, one per apply() (so a batch is one record):
 *     u32 magic 0x46524254, u32 payload length, u32 CRC-32C of the length
 *     field and the payload, then the payload:
 *       u64 epoch, u32 write count, and per write
 *       u8 op (1 put, 2 delete), u32 key length, [u32 value length,]
 *       key, [value]
 *
 * Epochs tell a crash-torn tail from real damage. The epoch of a record is
 * the number of fsyncs the store had completed when it was written. An
 * fsync in flight when a record is written (group commit runs it on a
 * worker thread, see below) may not cover that record, but the one after
 * it does; so a record followed by one whose epoch is at least two higher
 * was made durable by an fsync. Start-up verifies every record's CRC. At
 * the first bad record it looks for intact records after it: none means a
 * torn tail, which is cut off (logged); intact records with an epoch two
 * or more above the first of them mean the bad record had been fsynced, so
 * the log is damaged in the middle and open() fails with BACKEND_CORRUPT,
 * naming the offset. (Intact records within one epoch of each other can
 * be the unsynced writes of the last moments before a crash; they are cut
 * with the torn record, and logged.)
 *
 * The file may end in zeros after its last record: with durability batch
 * or sync, ff_prealloc keeps about preallocate bytes of zeros written ahead
 * of the end (st->alloc_end is the file's size), so that records overwrite
 * blocks the file has and their fdatasync commits no new size. Start-up
 * takes zeros from the first bad record to the end of the file for the
 * clean end (nothing to cut); a clean close cuts them off.
 *
 * Durability: apply() writes its record with one pwrite(); in SYNC mode it
 * fdatasync()s before returning, in BATCH mode sync() does (group commit),
 * in NONE mode only close() does. In BATCH mode with the server's event
 * loop (backend_options.host), sync_v2 runs that fdatasync on a worker
 * thread (backends/bsync.h) while the loop goes on appending: the thread
 * gets the log's descriptor (sync_fd) and nothing else, and fdatasync
 * covers every pwrite() that returned before it was called. A compaction
 * that replaces the log first waits for the sync in flight
 * (bsync_wait), so the descriptor it closes is not the thread's. The
 * option sync-thread=off keeps sync() on the loop instead. A failed write is cut off again with
 * ftruncate() so that nothing half-written stays in the log. A failed
 * fdatasync() is never retried (the state of the page cache after it is
 * unknown): every record past the last durable point (durable_end) is
 * dropped, from the index at once through the undo journal (BATCH mode),
 * and writes are refused until ff_reset has cut the log back to
 * durable_end from a fresh descriptor, made that durable and read the last
 * durable span back from disk (see "the undo journal" below and
 * doc/architecture.md).
 *
 * Compaction: when the log is at least compact-min-bytes long and garbage
 * (overwritten and deleted data) is at least compact-garbage-pct percent of
 * it, a new log is built in flatfile.log.compact, a step at a time (about
 * compact-step-bytes per apply()), so the event loop never stalls for the
 * whole copy. A cursor walks the index in key order copying live values;
 * meanwhile every apply() writes its record to both files. Each node has
 * two locations, loc[parity] in the live file (used by every read) and
 * loc[!parity] in the new one, valid when node->cgen equals the current
 * compaction number. When the walk ends: fdatasync the new file, rename it
 * over flatfile.log, fsync the directory, flip the parity. A crash at any
 * point leaves either the complete old log (the .compact file is removed
 * at start-up) or the complete new one: nothing is lost.
 *
 * Memory: the index holds keys and locations only (about 40 bytes plus the
 * key per entry); values are read with pread() from the page cache, a
 * point get one value per call, a scan the values of neighbouring entries
 * with one call into a 64 KiB window of its cursor (ff_iter_value).
 *
 * Interface version 2, completing every call at once (caps 0): get_v2
 * reads the value into a buffer of the store and lends it (until the next
 * get or close), iter_next_v2 lends the cursor's buffer. apply_v2 checks
 * the expectations against the index (and reads the 8 version bytes of a
 * value when one is asked for) before it encodes the record: one process
 * holds the store (LOCK) and runs one call at a time, so nothing comes
 * between the check and the write. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/bfs.h"
#include "backends/bopts.h"
#include "backends/bsync.h"
#include "backends/checks.h"
#include "backends/crc32c.h"
#include "backends/ffckpt.h"
#include "backends/ffindex.h"
#include "backends/lecode.h"
#include "core/clock.h"
#include "core/errfmt.h"

#define FF_LOG_NAME "flatfile.log"
#define FF_TMP_NAME "flatfile.log.compact"
#define FF_LOCK_NAME "LOCK"
#define FF_CKPT_NAME "flatfile.ckpt"
#define FF_CKPT_TMP "flatfile.ckpt.tmp"
#define FF_CKPT_CLOSE_MIN (1u << 20) /* a clean close checkpoints a longer tail */
#define FF_CKPT_TICK_MS 1       /* a walk steps this often from the loop too */
#define FF_CKPT_IDLE_MS 3000    /* writes stopped this long: checkpoint the tail */
#define FF_STALE 1                  /* ff_scan: the checkpoint does not fit the log */

#define FF_FILE_MAGIC "TBLDFLAT"
#define FF_VERSION 1u
#define FF_HDR_SIZE 32u
#define FF_REC_MAGIC 0x46524254u
#define FF_REC_HDR 12u              /* magic, length, crc */
#define FF_PAYLOAD_HDR 12u          /* epoch, count */
#define FF_OP_PUT 1u
#define FF_OP_DELETE 2u
#define FF_MAX_KEY BACKEND_KEY_MAX
#define FF_MAX_VAL BACKEND_VAL_MAX
#define FF_MAX_PAYLOAD (1u << 31)   /* one apply() at most 2 GiB */
#define FF_REC_KEEP (16u << 20)     /* encode buffers above this are freed */
#define FF_RECOVER_UNMAP (64u << 20) /* start-up drops read pages this often */
#define FF_UNDO_MAX (32u << 20)     /* undo journal bytes that force a sync */
#define FF_RETRY_MS 1000u           /* between recovery attempts of writes */

/* How to take back one write of a record that is not durable yet (BATCH
 * mode): the node a put linked (NULL for a delete) and the node it
 * replaced or removed (NULL when the key was absent). The journal owns
 * old until the record is durable (then it is freed) or rolled back (then
 * it goes back into the index and put is freed). */
struct ff_undo {
    struct ffidx_node *put;
    struct ffidx_node *old;
    uint64_t rec_end;               /* end of its record in the log */
};

/* A compaction in progress. */
struct ff_compaction {
    int fd;                         /* flatfile.log.compact */
    uint64_t end;                   /* its size */
    uint64_t kicked;                /* bytes already handed to writeback */
    uint64_t old_size;              /* live file size when it started */
    uint64_t file_id;               /* the new log's, from its header */
    struct skl_cursor cur;          /* the key-order walk */
};

struct backend_store {
    char *dir;
    int dirfd, lockfd, fd;
    uint64_t end;                   /* log size: where the next record goes */
    uint64_t epoch;                 /* fsyncs completed (see the top) */
    enum backend_durability durability;
    int dirty;                      /* records written since the last fsync */
    int failed;                     /* a fsync failed: writes are refused
                                       until ff_reset succeeds */
    int fail_status;                /* BACKEND_IOERR or BACKEND_FULL */
    int dir_unsynced;               /* a directory fsync failed */
    uint64_t retry_us;              /* no write tries ff_reset before */
    uint64_t durable_end;           /* the log up to here is durable */
    uint64_t alloc_end;             /* the file's size: st->end, then the zeros
                                       written ahead of it (option preallocate) */
    uint64_t prealloc;              /* option preallocate (0: none) */
    uint64_t span_start;            /* start of the last span made durable */
    unsigned resets;                /* rollbacks so far */
    struct ff_undo *undo;           /* BATCH: the writes past durable_end */
    size_t nundo, undo_cap;
    uint64_t undo_bytes;            /* journal and the old nodes it holds */
    int parity;                     /* nodes' loc[parity] is in the live file */
    uint32_t cgen;                  /* number of the latest compaction */
    struct ffidx ix;
    struct ff_compaction *cmp;
    uint8_t *rec;                   /* record encoding buffer */
    size_t rec_cap;
    struct ffidx_node **nodes;      /* scratch: nodes of one record */
    size_t *voff;                   /* scratch: their value offsets in it */
    size_t scratch_cap;             /* entries both arrays hold */
    uint8_t *getbuf;                /* get_v2's lent value */
    size_t getcap;
    uint64_t compact_min, compact_step, compact_pct;
    void (*log)(enum backend_log_level, const char *);
    struct bsync *syncer;           /* BATCH with a host: the sync worker */
    int sync_fd;                    /* the fd the worker's job syncs */
    struct backend_call *sync_call; /* the sync_v2 in flight */
    uint64_t sync_end;              /* the log end it covers */
    unsigned sync_resets;           /* resets when it began */
    int sync_thread;                /* option sync-thread: use a worker */
    int key_hash;                   /* option key-hash: the index's hash of keys */
    void *hash_timer;               /* the host's timer that steps its build */
    uint64_t file_id;               /* the live log's, from its header */
    uint64_t ck_min;                /* option checkpoint-bytes (0: none) */
    uint64_t ck_start;              /* the checkpoint on disk replays the log
                                       from here (0: none for this log) */
    uint64_t ck_bytes;              /* its size */
    uint64_t ck_retry;              /* after a failed one: not before here */
    int ck_on;                      /* a checkpoint walk is under way */
    const struct backend_host *host; /* the loop's hooks, or NULL */
    void *ck_timer;                 /* the host's timer that steps the walk */
    void *ck_idle_timer;            /* the host's timer of ff_ckpt_idle */
    uint64_t last_write_us;         /* clock_mono_us() of the last apply */
    struct skl_cursor ck_cur;       /* its key-order walk */
    struct ffckpt_writer ckw;       /* its file */
    struct ffckpt_meta ck_meta;     /* start, file id, tail CRC of it */
    uint64_t lgen;                  /* bumped whenever bytes already in the
                                       log may change or the live file is
                                       swapped: read-ahead windows of
                                       cursors taken before are stale */
};

struct backend_iter {
    struct backend_store *st;
    struct skl_cursor cur;
    uint8_t *buf;                   /* key then value of the last entry */
    size_t cap;
    uint8_t *win;                   /* read-ahead: log bytes [woff, woff+wlen) */
    uint64_t woff;
    size_t wlen;
    uint64_t wgen;                  /* st->lgen when win was read */
    int has_end;
    size_t end_len;
    uint8_t end[];
};

/* ---- small helpers ---- */

/* Formats a detail message into the caller's buffer. */
__attribute__((format(printf, 3, 4)))
static void ff_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errfmt_set(err, errlen, "flatfile: ");
    errfmt_vappend(err, errlen, fmt, ap);
    va_end(ap);
}

/* Reports an event through the configured log hook, or on stderr. */
__attribute__((format(printf, 3, 4)))
static void ff_log(const struct backend_store *st, enum backend_log_level lvl, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    errfmt_set(msg, sizeof msg, "flatfile %s: ", st->dir);
    va_start(ap, fmt);
    errfmt_vappend(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (st->log)
        st->log(lvl, msg);
    else
        fprintf(stderr, "%s\n", msg);
}

/* fdatasync() retried on EINTR; 0 or -errno. */
static int ff_datasync(int fd)
{
    while (fdatasync(fd) != 0) {
        if (errno != EINTR)
            return -errno;
    }
    return 0;
}

/* Grows a byte buffer to at least need bytes. 0, or -1 when out of memory. */
static int ff_reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c = c > SIZE_MAX / 2 ? need : c * 2;
    uint8_t *p = realloc(*buf, c);
    if (!p)
        return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* Makes room for n entries in the scratch arrays. 0, or -1 when out of
 * memory. */
static int ff_scratch(struct backend_store *st, size_t n)
{
    if (n <= st->scratch_cap)
        return 0;
    size_t cap = st->scratch_cap ? st->scratch_cap : 64;
    while (cap < n)
        cap *= 2;
    struct ffidx_node **nodes = realloc(st->nodes, cap * sizeof(*nodes));
    if (!nodes)
        return -1;
    st->nodes = nodes;
    size_t *voff = realloc(st->voff, cap * sizeof(*voff));
    if (!voff)
        return -1;
    st->voff = voff;
    st->scratch_cap = cap;
    return 0;
}

/* Seals a record whose payload is already at rec + FF_REC_HDR. */
static void ff_seal(uint8_t *rec, uint32_t payload_len)
{
    le_put32(rec, FF_REC_MAGIC);
    le_put32(rec + 4, payload_len);
    uint32_t crc = crc32c_extend(0, rec + 4, 4);
    crc = crc32c_extend(crc, rec + FF_REC_HDR, payload_len);
    le_put32(rec + 8, crc);
}

/* Creates dir/name holding just a file header (new file id) and returns
 * its fd, or -errno. The caller decides about fsync and rename. */
static int ff_create_file(struct backend_store *st, const char *name, uint64_t *file_id)
{
    if (unlinkat(st->dirfd, name, 0) != 0 && errno != ENOENT)
        return -errno;
    int fd = openat(st->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    uint8_t h[FF_HDR_SIZE] = {0};
    uint64_t id;
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
        id = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    memcpy(h, FF_FILE_MAGIC, 8);
    *file_id = id;
    le_put32(h + 8, FF_VERSION);
    le_put32(h + 12, FF_HDR_SIZE);
    le_put64(h + 16, id);
    le_put32(h + 28, crc32c_extend(0, h, 28));
    int rc = bfs_pwrite_all(fd, h, sizeof(h), 0);
    if (rc < 0) {
        close(fd);
        unlinkat(st->dirfd, name, 0);
        return rc;
    }
    return fd;
}

/* Reads a node's value from the live file into buf (vlen bytes). */
static int ff_read_value(struct backend_store *st, const struct ffidx_node *n, void *buf)
{
    if (!n->vlen)
        return 0;
    return bfs_pread_all(st->fd, buf, n->vlen, n->loc[st->parity]);
}

/* ---- start-up: scanning and recovering the log ---- */

/* 1 when a well-formed record (magic, length in bounds, CRC) starts at
 * map[p], with its payload length in *len. */
static int ff_record_ok(const uint8_t *map, uint64_t size, uint64_t p, uint32_t *len)
{
    if (size - p < FF_REC_HDR || le_get32(map + p) != FF_REC_MAGIC)
        return 0;
    uint32_t l = le_get32(map + p + 4);
    if (l < FF_PAYLOAD_HDR || l > FF_MAX_PAYLOAD || l > size - p - FF_REC_HDR)
        return 0;
    uint32_t crc = crc32c_extend(0, map + p + 4, 4);
    crc = crc32c_extend(crc, map + p + FF_REC_HDR, l);
    if (crc != le_get32(map + p + 8))
        return 0;
    *len = l;
    return 1;
}

/* Offset of the first well-formed record at or after from, or size. */
static uint64_t ff_find_record(const uint8_t *map, uint64_t size, uint64_t from)
{
    static const uint8_t magic[4] = {0x54, 0x42, 0x52, 0x46};   /* FF_REC_MAGIC, LE */
    uint64_t p = from;
    while (p + FF_REC_HDR <= size) {
        const uint8_t *hit = memmem(map + p, size - p, magic, 4);
        if (!hit)
            break;
        p = (uint64_t)(hit - map);
        uint32_t len;
        if (ff_record_ok(map, size, p, &len))
            return p;
        p++;
    }
    return size;
}

/* Queues the writes of one verified record (payload at map[off]) for the
 * index. Returns 0, BACKEND_CORRUPT (a checksummed record that does not
 * parse: not a torn write, so never silently skipped) or BACKEND_NOMEM. */
static int ff_replay(struct backend_store *st, const uint8_t *map, uint64_t off, uint32_t len,
                     char *err, size_t errlen)
{
    const uint8_t *p = map + off, *end = p + len;
    uint32_t count = le_get32(p + 8);
    p += FF_PAYLOAD_HDR;
    for (uint32_t i = 0; i < count; i++) {
        if (end - p < 5)
            goto bad;
        uint8_t op = p[0];
        uint32_t kl = le_get32(p + 1), vl = 0;
        p += 5;
        if (op == FF_OP_PUT) {
            if (end - p < 4)
                goto bad;
            vl = le_get32(p);
            p += 4;
        } else if (op != FF_OP_DELETE) {
            goto bad;
        }
        if (kl == 0 || kl > FF_MAX_KEY || vl > FF_MAX_VAL || (uint64_t)(end - p) < (uint64_t)kl + vl)
            goto bad;
        struct ffidx_node *n = ffidx_node_new(&st->ix, p, kl);
        if (!n) {
            ff_err(err, errlen, "open: out of memory rebuilding the index");
            return BACKEND_NOMEM;
        }
        if (op == FF_OP_PUT) {
            n->vlen = vl;
            n->loc[0] = (uint64_t)(p - map) + kl;
        } else {
            n->sk.flags = FFIDX_TOMB;
        }
        if (ffidx_bulk_add(&st->ix, n) != 0) {
            ffidx_node_free(&st->ix, n);
            ff_err(err, errlen, "open: out of memory rebuilding the index");
            return BACKEND_NOMEM;
        }
        p += kl + vl;
    }
    if (p == end)
        return 0;
bad:
    ff_err(err, errlen,
           "%s/%s is corrupt: the record at offset %llu has a valid checksum but does not "
           "parse; refusing to open (restore the file from a backup or move it away)",
           st->dir, FF_LOG_NAME, (unsigned long long)(off - FF_REC_HDR));
    return BACKEND_CORRUPT;
}

/* CRC-32C of the log bytes a checkpoint starting at start checks: up to
 * FFCKPT_TAIL_CHECK bytes before it, after the file header. */
static uint32_t ff_ckpt_crc(const uint8_t *bytes, uint64_t start)
{
    uint64_t from = start > FF_HDR_SIZE + FFCKPT_TAIL_CHECK ? start - FFCKPT_TAIL_CHECK
                                                            : FF_HDR_SIZE;
    return start > from ? crc32c_extend(0, bytes + from, start - from) : 0;
}


/* 1 when the n bytes at p are all zero: the zeros written ahead of a log's
 * end (ff_prealloc), which start-up takes for its clean end. */
static int ff_all_zero(const uint8_t *p, uint64_t n)
{
    uint64_t acc = 0;
    for (; n >= 8; p += 8, n -= 8)
        acc |= le_get64(p);
    while (n--)
        acc |= *p++;
    return acc == 0;
}
/* Verifies and replays the records of map[from, size) into the index and
 * cuts a torn tail. need: when a checkpoint was loaded, the log must hold
 * intact records up to there; a bad record below it returns FF_STALE
 * before anything is cut (the caller replays the whole log instead).
 * Sets *end, raises *epoch and counts the records in *nrec. */
static int ff_scan(struct backend_store *st, const uint8_t *map, uint64_t size, uint64_t from,
                   uint64_t need, uint64_t *end, uint64_t *epoch_io, uint64_t *nrec_out,
                   char *err, size_t errlen)
{
    uint64_t p = from, epoch = *epoch_io, nrec = 0, dropped = from & ~(uint64_t)(FF_RECOVER_UNMAP - 1);
    uint32_t len;
    int rc;
    while (p < size && ff_record_ok(map, size, p, &len)) {
        rc = ff_replay(st, map, p + FF_REC_HDR, len, err, errlen);
        if (rc != BACKEND_OK)
            return rc;
        uint64_t e = le_get64(map + p + FF_REC_HDR);
        if (e > epoch)
            epoch = e;
        p += FF_REC_HDR + (uint64_t)len;
        nrec++;
        /* Unmap what was read (the page cache keeps it), so that reading a
           large log does not show up as resident memory of the server. */
        if (p - dropped >= FF_RECOVER_UNMAP) {
            uint64_t upto = p & ~(uint64_t)(FF_RECOVER_UNMAP - 1);
            madvise((uint8_t *)map + dropped, upto - dropped, MADV_DONTNEED);
            dropped = upto;
        }
    }
    if (p < need)
        return FF_STALE;

    st->alloc_end = size;
    if (p < size && ff_all_zero(map + p, size - p)) {
        /* zeros written ahead of the end (option preallocate): the clean
           end of the log, kept for the next writes */
    } else if (p < size) {
        /* A bad record at p: torn tail or damage in the middle? */
        uint64_t q = ff_find_record(map, size, p + 1);
        uint64_t first_epoch = 0, max_epoch = 0, intact = 0;
        for (uint64_t r = q; r < size;) {
            if (!ff_record_ok(map, size, r, &len)) {
                r = ff_find_record(map, size, r + 1);
                continue;
            }
            uint64_t e = le_get64(map + r + FF_REC_HDR);
            if (!intact)
                first_epoch = e;
            if (e > max_epoch)
                max_epoch = e;
            intact++;
            r += FF_REC_HDR + (uint64_t)len;
        }
        if (intact && max_epoch >= first_epoch + 2) {
            ff_err(err, errlen,
                   "%s/%s is corrupt in the middle: the record at offset %llu fails its "
                   "checksum, and %llu intact records after it include ones written after it "
                   "was made durable; refusing to open (restore the file from a backup; do "
                   "not delete it)",
                   st->dir, FF_LOG_NAME, (unsigned long long)p, (unsigned long long)intact);
            return BACKEND_CORRUPT;
        }
        ff_log(st, BACKEND_LOG_WARN,
               "torn or corrupt tail at offset %llu: cut %llu bytes (%llu intact records "
               "after it, all from the last unsynced moment) left by a crash during a write "
               "that was never acknowledged as durable",
               (unsigned long long)p, (unsigned long long)(size - p), (unsigned long long)intact);
        if (ftruncate(st->fd, (off_t)p) != 0) {
            ff_err(err, errlen, "open: cannot cut the torn tail of %s/%s: %s", st->dir,
                   FF_LOG_NAME, strerror(errno));
            return BACKEND_IOERR;
        }
        st->alloc_end = p;
    }
    *end = p;
    *epoch_io = epoch;
    *nrec_out = nrec;
    return BACKEND_OK;
}

/* Loads the index checkpoint when there is one that fits this log (its
 * file id, a log long enough, the same bytes before its start): the
 * index then holds its entries, *from and *need tell ff_scan where to go
 * on, *epoch is raised. A checkpoint that does not fit is ignored (and
 * logged): the whole log is replayed. BACKEND_OK or BACKEND_NOMEM. */
static int ff_load_ckpt(struct backend_store *st, const uint8_t *map, uint64_t size,
                        uint64_t *from, uint64_t *need, uint64_t *epoch, char *err,
                        size_t errlen)
{
    struct ffckpt_meta m;
    uint64_t bytes;
    char why[200];
    int lr = ffckpt_load(st->dirfd, FF_CKPT_NAME, &st->ix, st->parity, &m, &bytes, why,
                         sizeof why);
    if (lr < 0) {
        ff_err(err, errlen, "open: out of memory loading the index checkpoint");
        return BACKEND_NOMEM;
    }
    if (lr == 1) {
        const char *bad = NULL;
        if (m.file_id != st->file_id)
            bad = "it was written for an earlier log (before a compaction)";
        else if (m.start < FF_HDR_SIZE || m.need > size)
            bad = "the log is shorter than the part it covers";
        else if (ff_ckpt_crc(map, m.start) != m.tail_crc)
            bad = "the log is not the one it was written for";
        if (bad) {
            ffidx_free(&st->ix);
            snprintf(why, sizeof why, "%s", bad);
            lr = 0;
        }
    }
    if (lr == 0) {
        if (why[0])
            ff_log(st, BACKEND_LOG_WARN, "index checkpoint %s ignored (%s): reading the whole "
                   "log instead", FF_CKPT_NAME, why);
        return BACKEND_OK;
    }
    *from = m.start;
    *need = m.need;
    if (m.epoch > *epoch)
        *epoch = m.epoch;
    st->ck_start = m.start;
    st->ck_bytes = bytes;
    return BACKEND_OK;
}

/* Rebuilds the index (from the checkpoint and the log after it, or from
 * the whole log) and cuts a torn tail. Sets st->end and st->epoch. */
static int ff_recover(struct backend_store *st, char *err, size_t errlen)
{
    struct stat sb;
    if (fstat(st->fd, &sb) != 0) {
        ff_err(err, errlen, "open: fstat %s/%s: %s", st->dir, FF_LOG_NAME, strerror(errno));
        return BACKEND_IOERR;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size < FF_HDR_SIZE) {
        ff_err(err, errlen,
               "%s/%s is %llu bytes, shorter than its header: not a tabled flat-file log "
               "(move it away to start empty)",
               st->dir, FF_LOG_NAME, (unsigned long long)size);
        return BACKEND_CORRUPT;
    }
    uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, st->fd, 0);
    if (map == MAP_FAILED) {
        ff_err(err, errlen, "open: mmap %s/%s: %s", st->dir, FF_LOG_NAME, strerror(errno));
        return BACKEND_IOERR;
    }
    madvise(map, size, MADV_SEQUENTIAL);
    int rc = BACKEND_OK;
    if (memcmp(map, FF_FILE_MAGIC, 8) != 0 || le_get32(map + 28) != crc32c_extend(0, map, 28)) {
        ff_err(err, errlen, "%s/%s has no valid flat-file header: not a tabled flat-file log, "
               "or damaged", st->dir, FF_LOG_NAME);
        rc = BACKEND_CORRUPT;
        goto out;
    }
    if (le_get32(map + 8) != FF_VERSION || le_get32(map + 12) != FF_HDR_SIZE) {
        ff_err(err, errlen, "%s/%s: unsupported format version %u", st->dir, FF_LOG_NAME,
               le_get32(map + 8));
        rc = BACKEND_CORRUPT;
        goto out;
    }
    st->file_id = le_get64(map + 16);

    uint64_t from = FF_HDR_SIZE, need = 0, epoch = 0, nrec = 0, end = 0;
    rc = ff_load_ckpt(st, map, size, &from, &need, &epoch, err, errlen);
    if (rc != BACKEND_OK)
        goto out;
    size_t loaded = ffidx_count(&st->ix);
    rc = ff_scan(st, map, size, from, need, &end, &epoch, &nrec, err, errlen);
    if (rc == FF_STALE) {
        ff_log(st, BACKEND_LOG_WARN, "index checkpoint %s ignored (the log after offset %llu "
               "is not intact up to the %llu bytes it covers): reading the whole log instead",
               FF_CKPT_NAME, (unsigned long long)from, (unsigned long long)need);
        ffidx_free(&st->ix);
        st->ck_start = st->ck_bytes = 0;
        from = FF_HDR_SIZE;
        epoch = loaded = 0;
        rc = ff_scan(st, map, size, from, 0, &end, &epoch, &nrec, err, errlen);
    }
    if (rc != BACKEND_OK)
        goto out;
    ffidx_bulk_finish(&st->ix);
    st->end = end;
    /* What recovery found is what the store holds from now on: make it
       durable, and give later records a higher epoch than any before. */
    int sr = ff_datasync(st->fd);
    if (sr < 0) {
        ff_err(err, errlen, "open: fdatasync %s/%s: %s", st->dir, FF_LOG_NAME, strerror(-sr));
        rc = BACKEND_IOERR;
        goto out;
    }
    st->epoch = epoch + 1;
    st->durable_end = st->span_start = st->end;
    if (loaded)
        ff_log(st, BACKEND_LOG_INFO, "opened: %zu keys from the index checkpoint, %llu records "
               "after it, %zu live keys, %llu bytes", loaded, (unsigned long long)nrec,
               ffidx_count(&st->ix), (unsigned long long)st->end);
    else if (nrec > 0)
        ff_log(st, BACKEND_LOG_INFO, "opened: %llu records, %zu live keys, %llu bytes",
               (unsigned long long)nrec, ffidx_count(&st->ix), (unsigned long long)st->end);
out:
    munmap(map, size);
    return rc;
}

/* ---- the index's hash of keys ---- */

static void ff_hash_arm(struct backend_store *st);

/* One slice of the hash's build, between requests. */
static void ff_hash_tick(void *arg)
{
    struct backend_store *st = arg;
    st->hash_timer = NULL;
    if (ffidx_hash_step(&st->ix))
        ff_hash_arm(st);
}

/* Keeps the hash's build going from the loop while it has slices left:
 * after the start, and after a write that grew or shrank the table past
 * its bounds (a new build); every FFH_JOB_POLL_MS while a thread builds
 * it, to take its table over once it is done. */
static void ff_hash_arm(struct backend_store *st)
{
    if (st->host && !st->hash_timer && ffidx_hash_pending(&st->ix))
        st->hash_timer = st->host->timer_add(
            st->host->arg, ffidx_hash_waiting(&st->ix) ? FFH_JOB_POLL_MS : 0, ff_hash_tick, st);
}

/* ---- open / close ---- */

/* The settings the --backend-option rows below fill. */
struct ff_conf {
    size_t compact_min, compact_step, ckpt_bytes, prealloc;
    long long compact_pct;
    int sync_thread, key_hash;
};

#define FF_AT(f) .offset = offsetof(struct ff_conf, f), .size = sizeof(((struct ff_conf *)0)->f)
static const struct opt ff_rows[] = {
    {.name = "compact-min-bytes", .type = OPT_SIZE, FF_AT(compact_min), .min = 0,
     .max = 1LL << 40, .def = "64M", .arg = "BYTES",
     .help = "the log is not compacted while it is smaller than this"},
    {.name = "compact-garbage-pct", .type = OPT_INT, FF_AT(compact_pct), .min = 1, .max = 100,
     .def = "50", .arg = "PCT", .help = "compact when this share of the log is dead records"},
    {.name = "compact-step-bytes", .type = OPT_SIZE, FF_AT(compact_step), .min = 4096,
     .max = 1 << 30, .def = "1M", .arg = "BYTES",
     .help = "bytes copied per compaction step between requests"},
    {.name = "checkpoint-bytes", .type = OPT_SIZE, FF_AT(ckpt_bytes), .min = 0,
     .max = 1LL << 40, .def = "64M", .arg = "BYTES",
     .help = "write an index checkpoint once the log has grown this much (and a quarter of "
             "the last checkpoint's size) since the last one, so that a restart reads only "
             "the log after it; 0: never"},
    {.name = "sync-thread", .type = OPT_BOOL, FF_AT(sync_thread), .def = "on", .arg = "on|off",
     .help = "durability batch syncs on a worker thread (off: on the event loop)"},
    {.name = "key-hash", .type = OPT_BOOL, FF_AT(key_hash), .def = "on", .arg = "on|off",
     .help = "keep a hash of the keys beside the ordered index, so that a point read finds "
             "its key in one or two memory accesses instead of a search (13 to 20 bytes of "
             "memory a key, built in the background after a start); off: saves that memory"},
    {.name = "preallocate", .type = OPT_SIZE, FF_AT(prealloc), .min = 0, .max = 1 << 30,
     .def = "1M", .arg = "BYTES",
     .help = "with durability batch or sync, keep this many bytes of zeros written ahead of "
             "the log's end, so that the fdatasync of a write does not also have to commit a "
             "new file size; 0: append"},
};

const struct bopt_desc backend_flatfile_opts = {
    "flatfile", ff_rows, sizeof ff_rows / sizeof ff_rows[0], sizeof(struct ff_conf)};

/* Reads the compaction settings from the options (rows above). */
static int ff_settings(struct backend_store *st, const struct backend_options *opt, char *err,
                       size_t errlen)
{
    struct ff_conf c;
    char msg[512];
    if (bopt_parse(&backend_flatfile_opts, opt->params, &c, msg, sizeof msg) < 0) {
        ff_err(err, errlen, "%s", msg);
        return BACKEND_INVALID;
    }
    st->compact_min = c.compact_min;
    st->compact_pct = (uint64_t)c.compact_pct;
    st->compact_step = c.compact_step;
    st->sync_thread = c.sync_thread;
    st->key_hash = c.key_hash;
    st->ck_min = c.ckpt_bytes;
    st->prealloc = c.prealloc;
    return BACKEND_OK;
}

static void ff_free_store(struct backend_store *st)
{
    bsync_free(st->syncer);         /* first: it may be syncing st->fd */
    if (st->hash_timer)             /* here: a close's rollback may arm it */
        st->host->timer_cancel(st->host->arg, st->hash_timer);
    if (st->ck_on)
        skl_cursor_close(&st->ix.sl, &st->ck_cur);
    if (st->dirfd >= 0)
        ffckpt_abort(&st->ckw, st->dirfd, FF_CKPT_TMP);
    for (size_t i = 0; i < st->nundo; i++)
        ffidx_node_free(&st->ix, st->undo[i].old);  /* the puts are in the index */
    free(st->undo);
    ffidx_free(&st->ix);
    if (st->fd >= 0)
        close(st->fd);
    if (st->lockfd >= 0)
        close(st->lockfd);
    if (st->dirfd >= 0)
        close(st->dirfd);
    free(st->rec);
    free(st->getbuf);
    free(st->nodes);
    free(st->voff);
    free(st->dir);
    free(st);
}

static int ff_open(const struct backend_options *opt, struct backend_store **out, char *err,
                   size_t errlen)
{
    if (!opt || !out || !opt->data_dir || !opt->data_dir[0]) {
        ff_err(err, errlen, "open: no data directory given");
        return BACKEND_INVALID;
    }
    struct backend_store *st = calloc(1, sizeof(*st));
    if (!st || !(st->dir = strdup(opt->data_dir))) {
        free(st);
        ff_err(err, errlen, "open: out of memory");
        return BACKEND_NOMEM;
    }
    st->dirfd = st->lockfd = st->fd = -1;
    st->ckw.fd = -1;
    st->durability = opt->durability;
    st->log = opt->log;
    ffidx_init(&st->ix, (uint64_t)(uintptr_t)st ^ (uint64_t)time(NULL));
    int rc = ff_settings(st, opt, err, errlen);
    if (rc != BACKEND_OK)
        goto fail;

    int e = bfs_mkdir_p(st->dir);
    if (e < 0) {
        ff_err(err, errlen, "open: cannot create data directory %s: %s", st->dir, strerror(-e));
        rc = BACKEND_IOERR;
        goto fail;
    }
    st->dirfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->dirfd < 0) {
        ff_err(err, errlen, "open: %s: %s", st->dir, strerror(errno));
        rc = BACKEND_IOERR;
        goto fail;
    }
    st->lockfd = bfs_lock(st->dirfd, FF_LOCK_NAME);
    if (st->lockfd < 0) {
        ff_err(err, errlen, "open: data directory %s is in use by another process (%s)",
               st->dir, strerror(-st->lockfd));
        rc = BACKEND_IOERR;
        goto fail;
    }
    if (unlinkat(st->dirfd, FF_TMP_NAME, 0) == 0)
        ff_log(st, BACKEND_LOG_INFO, "removed %s left by an unfinished compaction", FF_TMP_NAME);
    unlinkat(st->dirfd, FF_CKPT_TMP, 0);   /* an unfinished checkpoint */

    st->fd = openat(st->dirfd, FF_LOG_NAME, O_RDWR | O_CLOEXEC);
    if (st->fd < 0 && errno == ENOENT) {
        /* A new store: create the log under a temporary name, make it
           durable, then give it its real name. */
        uint64_t id;
        int fd = ff_create_file(st, FF_TMP_NAME, &id);
        int r = fd < 0 ? fd : ff_datasync(fd);
        if (r == 0 && renameat(st->dirfd, FF_TMP_NAME, st->dirfd, FF_LOG_NAME) != 0)
            r = -errno;
        if (r == 0)
            r = bfs_fsync_dir(st->dirfd);
        if (r < 0) {
            if (fd >= 0)
                close(fd);
            ff_err(err, errlen, "open: cannot create %s/%s: %s", st->dir, FF_LOG_NAME,
                   strerror(-r));
            rc = bfs_status(r);
            goto fail;
        }
        st->fd = fd;
    } else if (st->fd < 0) {
        ff_err(err, errlen, "open: %s/%s: %s", st->dir, FF_LOG_NAME, strerror(errno));
        rc = BACKEND_IOERR;
        goto fail;
    }
    /* a large checkpoint's load starts the hash's build on a thread */
    st->ix.hash_job = st->key_hash && opt->host;
    rc = ff_recover(st, err, errlen);
    if (rc != BACKEND_OK)
        goto fail;
    st->host = opt->host;
    if (st->host && st->key_hash && ffidx_hash_start(&st->ix) == 0)
        ff_hash_arm(st);
    if (st->durability == BACKEND_DURABLE_BATCH && opt->host && st->sync_thread &&
        !(st->syncer = bsync_new(opt->host, err, errlen))) {
        rc = BACKEND_NOMEM;
        goto fail;
    }
    *out = st;
    return BACKEND_OK;
fail:
    ff_free_store(st);
    return rc;
}

static void ff_compact_abort(struct backend_store *st, const char *why, int e);
static void ff_ckpt_abort(struct backend_store *st, const char *why, int e);
static void ff_fail(struct backend_store *st, const char *what, int r, uint64_t unsynced);

static void ff_ckpt_close(struct backend_store *st);

static void ff_close(struct backend_store *st)
{
    if (!st)
        return;
    if (st->cmp)
        ff_compact_abort(st, "the store is closing", 0);
    if (st->ck_timer)
        st->host->timer_cancel(st->host->arg, st->ck_timer);
    st->ck_timer = NULL;
    if (st->ck_idle_timer)
        st->host->timer_cancel(st->host->arg, st->ck_idle_timer);
    st->ck_idle_timer = NULL;
    bsync_free(st->syncer);         /* waits for the sync in flight */
    st->syncer = NULL;
    ff_ckpt_close(st);
    if (st->dirty && !st->failed) {
        int r = ff_datasync(st->fd);
        if (r < 0)
            ff_fail(st, "close: fdatasync", r, 0);
    }
    if (st->failed) {
        /* leave no dropped record for the next start to find (best
           effort: the next start cuts a torn tail anyway) */
        if (ftruncate(st->fd, (off_t)st->durable_end) == 0)
            ff_datasync(st->fd);
    } else if (st->alloc_end > st->end && st->fd >= 0) {
        /* the zeros written ahead are not needed any more (best effort:
           start-up takes them for the end of the log anyway) */
        if (ftruncate(st->fd, (off_t)st->end) != 0) {
        }
    }
    ff_free_store(st);
}

/* ---- reads ---- */

/* Point lookup (version 2): reads the value into the store's buffer and
 * lends it until the next get or close. */
static int ff_get_v2(struct backend_store *st, const void *key, size_t klen,
                     struct backend_call *call)
{
    backend_call_reset(call);
    if (!st || !backend_key_ok(key, klen)) {
        ff_err(call->err, sizeof call->err, "get: empty, missing or oversized key");
        return backend_call_end(call, BACKEND_INVALID);
    }
    if (st->getcap > FF_REC_KEEP) {    /* the last value lent was huge: give it back */
        free(st->getbuf);
        st->getbuf = NULL;
        st->getcap = 0;
    }
    struct ffidx_node *n = ffidx_find(&st->ix, key, klen);
    if (!n)
        return backend_call_end(call, BACKEND_NOTFOUND);   /* an answer: no detail */
    if (ff_reserve(&st->getbuf, &st->getcap, (size_t)n->vlen + 1) != 0) {
        ff_err(call->err, sizeof call->err, "get: out of memory");
        return backend_call_end(call, BACKEND_NOMEM);
    }
    int r = ff_read_value(st, n, st->getbuf);
    if (r < 0) {
        ff_err(call->err, sizeof call->err, "get: reading %s/%s: %s", st->dir, FF_LOG_NAME,
               strerror(-r));
        return backend_call_end(call, BACKEND_IOERR);
    }
    call->val = st->getbuf;
    call->val_len = n->vlen;
    return backend_call_end(call, BACKEND_OK);
}

static int ff_iter_open(struct backend_store *st, const void *start, size_t start_len,
                        const void *end, size_t end_len, struct backend_iter **out, char *err,
                        size_t errlen)
{
    const char *why = backend_check_bounds(start, start_len, end, end_len);
    if (!st || !out || why) {
        ff_err(err, errlen, "%s", why ? why : "iter_open: no store or no output pointer");
        return BACKEND_INVALID;
    }
    size_t keep = end ? end_len : 0;
    struct backend_iter *it = calloc(1, sizeof(*it) + keep);
    if (!it) {
        ff_err(err, errlen, "iter_open: out of memory");
        return BACKEND_NOMEM;
    }
    it->st = st;
    it->has_end = end != NULL;
    it->end_len = keep;
    if (keep)
        memcpy(it->end, end, keep);
    skl_cursor_open(&st->ix.sl, &it->cur, start, start_len);
    *out = it;
    return BACKEND_OK;
}

static int ff_iter_seek(struct backend_iter *it, const void *key, size_t klen)
{
    if (!it || !backend_seek_ok(key, klen))
        return BACKEND_INVALID;
    if (it->cur.attached)
        skl_cursor_seek(&it->st->ix.sl, &it->cur, key, klen);
    return BACKEND_OK;
}

/* Read-ahead of a scan: the values of consecutive index entries usually
 * lie side by side in the log (written in key order, or copied in key
 * order by a compaction), and one pread() per value costs more than the
 * rest of a scan step. So a cursor reads, with one pread(), the log span
 * holding the value of n and of the entries after it, as long as the span
 * stays within FF_WIN_MAX bytes and is mostly made of their values (at
 * most FF_WIN_SLACK bytes besides them), and serves the next steps from
 * that window. Entries far apart, or rewritten elsewhere, end the span:
 * their values are read on their own, as before. Only bytes below the log
 * end that nodes point at are read; any change to bytes already in the
 * log (a cut after a failed sync or write) or a swap of the live file
 * bumps st->lgen, which drops the window. */
#define FF_WIN_MAX (64u << 10)
#define FF_WIN_SLACK 4096u
#define FF_WIN_NODES 256u

/* Copies the value of n into dst, from the cursor's window when it holds
 * it, else by reading a new window starting at n (or n alone). */
static int ff_iter_value(struct backend_iter *it, const struct ffidx_node *n, uint8_t *dst)
{
    struct backend_store *st = it->st;
    if (!n->vlen)
        return 0;
    uint64_t loc = n->loc[st->parity];
    if (it->wlen && it->wgen == st->lgen && loc >= it->woff &&
        loc - it->woff <= it->wlen && n->vlen <= it->wlen - (loc - it->woff)) {
        memcpy(dst, it->win + (loc - it->woff), n->vlen);
        return 0;
    }
    it->wlen = 0;
    if (n->vlen >= FF_WIN_MAX / 2)
        return ff_read_value(st, n, dst);
    /* how far the span of n and its successors goes */
    uint64_t lo = loc, hi = loc + n->vlen, used = n->vlen;
    const struct ffidx_node *m = ffidx_next(n);
    for (unsigned k = 0; m && k < FF_WIN_NODES; k++, m = ffidx_next(m)) {
        if (it->has_end && bkey_cmp(ffidx_key(m), m->sk.klen, it->end, it->end_len) >= 0)
            break;
        uint64_t ml = m->loc[st->parity], mlo = ml < lo ? ml : lo;
        uint64_t mhi = ml + m->vlen > hi ? ml + m->vlen : hi;
        if (mhi - mlo > FF_WIN_MAX || mhi - mlo > used + m->vlen + FF_WIN_SLACK)
            break;
        lo = mlo;
        hi = mhi;
        used += m->vlen;
    }
    if (hi - lo == n->vlen)
        return ff_read_value(st, n, dst);
    if (!it->win && !(it->win = malloc(FF_WIN_MAX)))
        return ff_read_value(st, n, dst);
    int r = bfs_pread_all(st->fd, it->win, (size_t)(hi - lo), lo);
    if (r < 0)
        return r;
    it->woff = lo;
    it->wlen = (size_t)(hi - lo);
    it->wgen = st->lgen;
    memcpy(dst, it->win + (loc - lo), n->vlen);
    return 0;
}

/* Returns the next entry below the end bound; key and value are copied
 * into the cursor's buffer, so they stay valid across writes. */
static int ff_iter_next(struct backend_iter *it, const void **key, size_t *klen, const void **val,
                        size_t *vlen)
{
    if (!it)
        return BACKEND_INVALID;
    if (!it->cur.attached)
        return 0;
    struct ffidx_node *n = ffidx_of(it->cur.next);
    if (!n)
        return 0;
    if (it->has_end && bkey_cmp(ffidx_key(n), n->sk.klen, it->end, it->end_len) >= 0) {
        it->cur.next = NULL;
        return 0;
    }
    if (ff_reserve(&it->buf, &it->cap, (size_t)n->sk.klen + n->vlen + 1) != 0)
        return BACKEND_NOMEM;
    memcpy(it->buf, ffidx_key(n), n->sk.klen);
    if (ff_iter_value(it, n, it->buf + n->sk.klen) < 0)
        return BACKEND_IOERR;
    it->cur.next = n->sk.next[0];
    if (key)
        *key = it->buf;
    if (klen)
        *klen = n->sk.klen;
    if (val)
        *val = it->buf + n->sk.klen;
    if (vlen)
        *vlen = n->vlen;
    return 1;
}

/* iter_next with the entry lent through the call (version 2): the
 * cursor's buffer, valid until its next step. */
static int ff_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    backend_call_reset(call);
    int rc = ff_iter_next(it, &call->key, &call->key_len, &call->val, &call->val_len);
    if (rc < 0)
        ff_err(call->err, sizeof call->err, "iter_next: %s",
               rc == BACKEND_INVALID ? "no cursor"
               : rc == BACKEND_NOMEM ? "out of memory" : "reading the log failed");
    return backend_call_end(call, rc);
}

static void ff_iter_close(struct backend_iter *it)
{
    if (!it)
        return;
    if (it->cur.attached)
        skl_cursor_close(&it->st->ix.sl, &it->cur);
    free(it->win);
    free(it->buf);
    free(it);
}

/* ---- the undo journal, a failed sync, and recovery from it ---- */

/* Bytes a node held by the journal stands for. */
static uint64_t ff_node_size(const struct ffidx_node *n)
{
    return sizeof(*n) + (uint64_t)n->sk.height * sizeof(n->sk.next[0]) + n->sk.klen;
}

/* Room for n more journal entries (BATCH mode only keeps one). 0, or -1
 * when out of memory. */
static int ff_undo_reserve(struct backend_store *st, size_t n)
{
    if (st->durability != BACKEND_DURABLE_BATCH || st->nundo + n <= st->undo_cap)
        return 0;
    size_t cap = st->undo_cap ? st->undo_cap : 256;
    while (cap < st->nundo + n)
        cap *= 2;
    struct ff_undo *u = realloc(st->undo, cap * sizeof(*u));
    if (!u)
        return -1;
    st->undo = u;
    st->undo_cap = cap;
    return 0;
}

/* The log is durable up to upto: the journal entries of the records
 * before it go, with the nodes those records replaced. */
static void ff_durable(struct backend_store *st, uint64_t upto)
{
    if (upto <= st->durable_end)
        return;
    st->span_start = st->durable_end;
    st->durable_end = upto;
    size_t k = 0;
    while (k < st->nundo && st->undo[k].rec_end <= upto) {
        struct ffidx_node *old = st->undo[k].old;
        if (old) {
            st->undo_bytes -= ff_node_size(old);
            ffidx_node_free(&st->ix, old);
        }
        st->undo_bytes -= sizeof(struct ff_undo);
        k++;
    }
    st->nundo -= k;
    if (k)                          /* undo may be NULL when nothing was kept */
        memmove(st->undo, st->undo + k, st->nundo * sizeof(*st->undo));
    if (!st->nundo && st->undo_cap > 4096) {   /* a burst is over: give it back */
        free(st->undo);
        st->undo = NULL;
        st->undo_cap = 0;
    }
}

/* Makes the whole log durable now, on the loop (before a compaction's
 * switch or an index checkpoint, never while the sync worker runs): 0, or
 * -errno after failing the store with what as the reason. */
static int ff_sync_on_loop(struct backend_store *st, const char *what)
{
    uint64_t upto = st->end;
    int r = ff_datasync(st->fd);
    if (r < 0) {
        ff_fail(st, what, r, 0);
        return r;
    }
    st->epoch++;
    st->dirty = 0;
    ff_durable(st, upto);
    return 0;
}

/* Takes every write past durable_end back out of the index, newest
 * first, so that the index shows the durable log again (cursors move as
 * for any write). */
static void ff_undo_all(struct backend_store *st)
{
    while (st->nundo) {
        struct ff_undo *u = &st->undo[--st->nundo];
        struct ffidx_node *gone;
        if (u->old)
            gone = ffidx_put(&st->ix, u->old);   /* the put's node, or NULL */
        else
            gone = ffidx_remove(&st->ix, ffidx_key(u->put), u->put->sk.klen);
        ffidx_node_free(&st->ix, gone);
    }
    st->undo_bytes = 0;
    ff_hash_arm(st);
}

/* A failed fdatasync (r: -errno) or a failed write that could not be cut
 * back. The records past durable_end may or may not be on disk, and after
 * a failed fsync the page cache cannot say which (the kernel may have
 * marked the pages clean; a later fsync can succeed without writing
 * them). So they are all dropped: out of the index at once (reads show
 * durable data only), their answers fail (every sync fails until
 * ff_reset), the log is cut back to durable_end in the page cache now and
 * again, from a fresh descriptor and made durable, by ff_reset before any
 * write is taken. unsynced: bytes written past st->end (SYNC mode: the
 * record being made durable). */
static void ff_fail(struct backend_store *st, const char *what, int r, uint64_t unsynced)
{
    if (st->failed)
        return;
    if (st->cmp)
        ff_compact_abort(st, "the log is cut back after a failed write or fsync", 0);
    ff_ckpt_abort(st, "the log is cut back after a failed write or fsync", 0);
    uint64_t dropped = st->end - st->durable_end + unsynced;
    ff_undo_all(st);
    st->failed = 1;
    st->fail_status = bfs_status(r);
    st->resets++;
    st->dirty = 0;
    st->retry_us = 0;
    if (ftruncate(st->fd, (off_t)st->durable_end) != 0) {
        /* ff_reset cuts it before any write */
    }
    st->lgen++;
    st->end = st->alloc_end = st->durable_end;
    ff_log(st, BACKEND_LOG_ERROR, "%s failed (%s): the %llu bytes of the log written since it "
           "was last made durable are dropped, and their writes answer an error; writes are "
           "refused until the log is cut back to its durable part and read back intact "
           "(tried about once a second)", what, strerror(-r), (unsigned long long)dropped);
}

/* Reads [from, to) of the log through fd, from the disk as far as the
 * kernel lets go of its clean cached pages, and checks that it holds whole
 * records with good checksums ending exactly at to (and that the file
 * header is intact). BACKEND_OK, BACKEND_CORRUPT or a read failure. */
static int ff_verify(struct backend_store *st, int fd, uint64_t from, uint64_t to, char *err,
                     size_t errlen)
{
    posix_fadvise(fd, 0, FF_HDR_SIZE, POSIX_FADV_DONTNEED);
    if (to > from)
        posix_fadvise(fd, (off_t)from, (off_t)(to - from), POSIX_FADV_DONTNEED);
    uint8_t h[FF_HDR_SIZE];
    int r = bfs_pread_all(fd, h, sizeof h, 0);
    if (r < 0)
        goto io;
    uint64_t p = from;
    if (memcmp(h, FF_FILE_MAGIC, 8) != 0 || le_get32(h + 28) != crc32c_extend(0, h, 28))
        goto bad;
    while (p < to) {
        uint8_t rh[FF_REC_HDR];
        if (to - p < FF_REC_HDR)
            goto bad;
        if ((r = bfs_pread_all(fd, rh, sizeof rh, p)) < 0)
            goto io;
        uint32_t len = le_get32(rh + 4);
        if (le_get32(rh) != FF_REC_MAGIC || len < FF_PAYLOAD_HDR || len > to - p - FF_REC_HDR)
            goto bad;
        if (ff_reserve(&st->rec, &st->rec_cap, len) != 0) {
            ff_err(err, errlen, "reading back %s/%s: out of memory", st->dir, FF_LOG_NAME);
            return BACKEND_NOMEM;
        }
        if ((r = bfs_pread_all(fd, st->rec, len, p + FF_REC_HDR)) < 0)
            goto io;
        uint32_t crc = crc32c_extend(crc32c_extend(0, rh + 4, 4), st->rec, len);
        if (crc != le_get32(rh + 8))
            goto bad;
        p += FF_REC_HDR + (uint64_t)len;
    }
    return BACKEND_OK;
io:
    ff_err(err, errlen, "reading back %s/%s: %s", st->dir, FF_LOG_NAME, strerror(-r));
    return bfs_status(r);
bad:
    ff_err(err, errlen, "%s/%s read back from disk is not what was made durable (at offset "
           "%llu): writes stay refused; restart tabled to check the whole log", st->dir,
           FF_LOG_NAME, (unsigned long long)p);
    return BACKEND_CORRUPT;
}

/* Recovery after ff_fail (or a failed directory fsync): a fresh
 * descriptor of the same file, the log cut back to durable_end and that
 * made durable, the last span made durable before the failure read back
 * and checked; then writes are taken again. On failure nothing changes
 * (the next attempt starts over). BACKEND_OK or a failure with err. */
static int ff_reset(struct backend_store *st, char *err, size_t errlen)
{
    if (st->syncer)
        bsync_wait(st->syncer);     /* a sync begun before the failure uses st->fd */
    int r;
    if (st->dir_unsynced) {
        if ((r = bfs_fsync_dir(st->dirfd)) < 0) {
            ff_err(err, errlen, "writes are refused until an fsync of the directory %s "
                   "succeeds: %s", st->dir, strerror(-r));
            return bfs_status(r);
        }
        st->dir_unsynced = 0;
    }
    int fd = openat(st->dirfd, FF_LOG_NAME, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        r = -errno;
        ff_err(err, errlen, "writes are refused after a failed fsync; reopening %s/%s: %s",
               st->dir, FF_LOG_NAME, strerror(-r));
        return bfs_status(r);
    }
    struct stat now, was;
    int rc = BACKEND_OK;
    if (fstat(fd, &now) != 0 || fstat(st->fd, &was) != 0) {
        r = -errno;
        ff_err(err, errlen, "writes are refused after a failed fsync; fstat %s/%s: %s", st->dir,
               FF_LOG_NAME, strerror(-r));
        rc = bfs_status(r);
    } else if (now.st_dev != was.st_dev || now.st_ino != was.st_ino) {
        ff_err(err, errlen, "writes are refused after a failed fsync, and %s/%s was replaced by "
               "another file: restart tabled", st->dir, FF_LOG_NAME);
        rc = BACKEND_IOERR;
    } else if ((uint64_t)now.st_size < st->durable_end) {
        ff_err(err, errlen, "writes are refused after a failed fsync, and %s/%s is %llu bytes, "
               "shorter than the %llu made durable: restart tabled to check the log", st->dir,
               FF_LOG_NAME, (unsigned long long)now.st_size,
               (unsigned long long)st->durable_end);
        rc = BACKEND_CORRUPT;
    } else if (ftruncate(fd, (off_t)st->durable_end) != 0) {
        r = -errno;
        ff_err(err, errlen, "writes are refused after a failed fsync; cutting %s/%s back: %s",
               st->dir, FF_LOG_NAME, strerror(-r));
        rc = bfs_status(r);
    } else if ((r = ff_datasync(fd)) < 0) {
        ff_err(err, errlen, "writes are refused after a failed fsync, and fdatasync of %s/%s "
               "still fails: %s", st->dir, FF_LOG_NAME, strerror(-r));
        rc = bfs_status(r);
    } else {
        rc = ff_verify(st, fd, st->span_start, st->durable_end, err, errlen);
    }
    if (st->rec_cap > FF_REC_KEEP) {
        free(st->rec);
        st->rec = NULL;
        st->rec_cap = 0;
    }
    if (rc != BACKEND_OK) {
        close(fd);
        return rc;
    }
    close(st->fd);
    st->fd = fd;
    st->lgen++;
    st->end = st->alloc_end = st->durable_end;
    st->epoch++;
    st->dirty = 0;
    st->failed = 0;
    ff_log(st, BACKEND_LOG_WARN, "the log is cut back to offset %llu (the end of its durable "
           "part), made durable and read back intact: writes are taken again",
           (unsigned long long)st->durable_end);
    return BACKEND_OK;
}

/* ---- compaction ---- */

/* Drops an unfinished compaction: the live log is untouched and complete. */
static void ff_compact_abort(struct backend_store *st, const char *why, int e)
{
    struct ff_compaction *c = st->cmp;
    skl_cursor_close(&st->ix.sl, &c->cur);
    close(c->fd);
    unlinkat(st->dirfd, FF_TMP_NAME, 0);
    st->cmp = NULL;
    free(c);
    if (e)
        ff_log(st, BACKEND_LOG_WARN, "compaction abandoned (%s: %s); the log is intact", why,
               strerror(e < 0 ? -e : e));
    else
        ff_log(st, BACKEND_LOG_INFO, "compaction abandoned: %s", why);
}

/* Starts a compaction when the log is big enough and mostly garbage. */
static void ff_compact_maybe_start(struct backend_store *st)
{
    if (st->cmp || st->failed || st->end < st->compact_min)
        return;
    uint64_t live = st->ix.live_bytes + FF_HDR_SIZE;
    uint64_t garbage = st->end > live ? st->end - live : 0;
    if (garbage * 100 < st->end * st->compact_pct)
        return;
    struct ff_compaction *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    int fd = ff_create_file(st, FF_TMP_NAME, &c->file_id);
    if (fd < 0) {
        free(c);
        ff_log(st, BACKEND_LOG_WARN, "cannot start compaction: %s", strerror(-fd));
        return;
    }
    c->fd = fd;
    c->end = FF_HDR_SIZE;
    c->old_size = st->end;
    st->cgen++;
    skl_cursor_open(&st->ix.sl, &c->cur, NULL, 0);
    st->cmp = c;
    ff_log(st, BACKEND_LOG_INFO, "compaction started: log %llu bytes, live data about %llu",
           (unsigned long long)st->end, (unsigned long long)live);
}

/* Makes the new log the live one: fdatasync of both logs, rename,
 * directory fsync. Not while a sync is in flight (the next apply tries
 * again): its outcome must be known before the live log is synced again,
 * since a second fsync can succeed where the first failed without the data
 * being on disk. The live log is made durable first (a failure is a failed
 * sync: ff_fail), so that whichever name survives a crash, it holds every
 * record, and nothing is left for the journal. */
static void ff_compact_finish(struct backend_store *st)
{
    struct ff_compaction *c = st->cmp;
    if (st->syncer && bsync_busy(st->syncer))
        return;
    if (st->durable_end < st->end &&
        ff_sync_on_loop(st, "fdatasync of the log before a compaction's switch") < 0)
        return;
    int r = ff_datasync(c->fd);
    if (r < 0) {
        ff_compact_abort(st, "fdatasync of the new log", r);
        return;
    }
    if (renameat(st->dirfd, FF_TMP_NAME, st->dirfd, FF_LOG_NAME) != 0) {
        ff_compact_abort(st, "rename", errno);
        return;
    }
    /* From here on the new file is the log, whatever happens next. */
    r = bfs_fsync_dir(st->dirfd);
    if (r < 0) {
        /* both logs hold every record durably, but later writes must not
           go to a file the directory may not name after a crash */
        st->failed = 1;
        st->dir_unsynced = 1;
        st->fail_status = bfs_status(r);
        st->retry_us = 0;
        ff_log(st, BACKEND_LOG_ERROR, "compaction: directory fsync failed (%s): writes are "
               "refused until it succeeds (tried about once a second)", strerror(-r));
    }
    skl_cursor_close(&st->ix.sl, &c->cur);
    if (st->syncer)
        bsync_wait(st->syncer);     /* its job may use the old descriptor */
    /* A checkpoint names the old log's locations: the next one is made
       from the new log (its start is then far behind: ff_ckpt_maybe). */
    ff_ckpt_abort(st, "a compaction replaced the log", 0);
    unlinkat(st->dirfd, FF_CKPT_NAME, 0);
    st->ck_start = st->ck_bytes = st->ck_retry = 0;
    st->file_id = c->file_id;
    close(st->fd);
    st->fd = c->fd;
    st->end = st->alloc_end = c->end;
    st->parity ^= 1;
    st->lgen++;
    st->epoch++;
    st->dirty = 0;
    st->durable_end = st->span_start = c->end;
    ff_log(st, BACKEND_LOG_INFO, "compaction done: %llu -> %llu bytes",
           (unsigned long long)c->old_size, (unsigned long long)c->end);
    st->cmp = NULL;
    free(c);
}

/* Copies about compact_step bytes of live values into the new log, in key
 * order, as one record; finishes the compaction at the end of the index. */
static void ff_compact_step(struct backend_store *st)
{
    struct ff_compaction *c = st->cmp;
    size_t used = FF_REC_HDR + FF_PAYLOAD_HDR, n = 0;
    int other = st->parity ^ 1;
    struct ffidx_node *x = ffidx_of(c->cur.next);
    while (x && used < st->compact_step) {
        if (x->cgen != st->cgen) {
            size_t need = used + FFIDX_ENTRY_OVERHEAD + x->sk.klen + x->vlen;
            if (ff_reserve(&st->rec, &st->rec_cap, need) != 0 || ff_scratch(st, n + 1) != 0) {
                ff_compact_abort(st, "out of memory", ENOMEM);
                return;
            }
            uint8_t *p = st->rec + used;
            p[0] = FF_OP_PUT;
            le_put32(p + 1, x->sk.klen);
            le_put32(p + 5, x->vlen);
            memcpy(p + FFIDX_ENTRY_OVERHEAD, ffidx_key(x), x->sk.klen);
            int r = ff_read_value(st, x, p + FFIDX_ENTRY_OVERHEAD + x->sk.klen);
            if (r < 0) {
                ff_compact_abort(st, "reading the live log", r);
                return;
            }
            st->nodes[n] = x;
            st->voff[n] = used + FFIDX_ENTRY_OVERHEAD + x->sk.klen;
            n++;
            used = need;
        }
        x = ffidx_next(x);
    }
    c->cur.next = x ? &x->sk : NULL;
    if (n) {
        le_put64(st->rec + FF_REC_HDR, st->epoch);
        le_put32(st->rec + FF_REC_HDR + 8, (uint32_t)n);
        ff_seal(st->rec, (uint32_t)(used - FF_REC_HDR));
        int r = bfs_pwrite_all(c->fd, st->rec, used, c->end);
        if (r < 0) {
            ff_compact_abort(st, "writing the new log", r);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            st->nodes[i]->loc[other] = c->end + st->voff[i];
            st->nodes[i]->cgen = st->cgen;
        }
        c->end += used;
        /* Start writeback now so that the final fdatasync has little left. */
        sync_file_range(c->fd, (off_t)c->kicked, (off_t)(c->end - c->kicked),
                        SYNC_FILE_RANGE_WRITE);
        c->kicked = c->end;
    }
    if (st->rec_cap > FF_REC_KEEP) {
        free(st->rec);
        st->rec = NULL;
        st->rec_cap = 0;
    }
    if (!x)
        ff_compact_finish(st);
}

/* ---- the index checkpoint (ffckpt.h) ----
 *
 * A checkpoint is written by a walk of the index in key order, a step of
 * about compact-step-bytes per apply() like a compaction, so the loop
 * never stalls for the whole index. The walk begins at log offset S (the
 * log end then); writes during the walk change entries before or after
 * the cursor, but every such write is a record at or after S, which a
 * restart replays over the checkpoint. An entry the walk meets may point
 * at such a record: so the log is made durable up to where it ends when
 * the walk ends (need) before the checkpoint is renamed into place, and a
 * restart that finds the log shorter, or not intact up to need, ignores
 * the checkpoint. A failed write or fsync (which may take index entries
 * back) and a compaction's switch (which changes every location) end the
 * walk without a checkpoint. */

static void ff_ckpt_finish(struct backend_store *st);

/* Ends the walk in progress (if any) without writing; e: errno for the
 * log, 0 for an ordinary reason (logged at info level). */
static void ff_ckpt_abort(struct backend_store *st, const char *why, int e)
{
    if (!st->ck_on)
        return;
    skl_cursor_close(&st->ix.sl, &st->ck_cur);
    ffckpt_abort(&st->ckw, st->dirfd, FF_CKPT_TMP);
    st->ck_on = 0;
    if (e) {
        uint64_t lim = st->ck_min > FF_CKPT_CLOSE_MIN ? st->ck_min : FF_CKPT_CLOSE_MIN;
        st->ck_retry = st->end + lim;       /* not again at once */
        ff_log(st, BACKEND_LOG_WARN, "index checkpoint not written (%s: %s); a restart "
               "reads more of the log; tried again later", why, strerror(e < 0 ? -e : e));
    } else {
        ff_log(st, BACKEND_LOG_INFO, "index checkpoint abandoned: %s", why);
    }
}

/* Starts a walk at the log end. */
static void ff_ckpt_begin(struct backend_store *st)
{
    uint8_t tail[FFCKPT_TAIL_CHECK];
    uint64_t start = st->end;
    uint64_t from = start > FF_HDR_SIZE + FFCKPT_TAIL_CHECK ? start - FFCKPT_TAIL_CHECK
                                                            : FF_HDR_SIZE;
    int r = bfs_pread_all(st->fd, tail, (size_t)(start - from), from);
    if (r == 0)
        r = ffckpt_begin(&st->ckw, st->dirfd, FF_CKPT_TMP);
    if (r < 0) {
        st->ck_on = 1;      /* for the abort's bookkeeping */
        skl_cursor_open(&st->ix.sl, &st->ck_cur, NULL, 0);
        ff_ckpt_abort(st, "starting it", r);
        return;
    }
    st->ck_meta.start = start;
    st->ck_meta.file_id = st->file_id;
    st->ck_meta.tail_crc = start > from ? crc32c_extend(0, tail, start - from) : 0;
    skl_cursor_open(&st->ix.sl, &st->ck_cur, NULL, 0);
    st->ck_on = 1;
}

/* Adds entries to the checkpoint until about budget bytes are written;
 * finishes it at the end of the index. */
static void ff_ckpt_step(struct backend_store *st, uint64_t budget)
{
    uint64_t stop = ffckpt_size(&st->ckw) + budget;
    struct ffidx_node *x = ffidx_of(st->ck_cur.next);
    while (x && ffckpt_size(&st->ckw) < stop) {
        int r = ffckpt_add(&st->ckw, ffidx_key(x), x->sk.klen, x->vlen, x->loc[st->parity]);
        if (r < 0) {
            ff_ckpt_abort(st, "writing it", r);
            return;
        }
        x = ffidx_next(x);
    }
    st->ck_cur.next = x ? &x->sk : NULL;
    if (!x)
        ff_ckpt_finish(st);
}

/* The walk is at the end: makes the log durable up to its end (not while
 * a sync is in flight: the next apply tries again, as a compaction's
 * switch), then puts the checkpoint in place. */
static void ff_ckpt_finish(struct backend_store *st)
{
    if (st->syncer && bsync_busy(st->syncer))
        return;
    if ((st->durable_end < st->end || st->dirty) &&
        ff_sync_on_loop(st, "fdatasync of the log before an index checkpoint") < 0)
        return;
    st->ck_meta.need = st->end;
    st->ck_meta.epoch = st->epoch;
    uint64_t size = ffckpt_size(&st->ckw);
    uint64_t count = st->ckw.count;
    skl_cursor_close(&st->ix.sl, &st->ck_cur);
    st->ck_on = 0;
    int r = ffckpt_commit(&st->ckw, st->dirfd, FF_CKPT_TMP, FF_CKPT_NAME, &st->ck_meta);
    if (r < 0) {
        st->ck_on = 1;      /* the abort logs it and sets the retry point */
        skl_cursor_open(&st->ix.sl, &st->ck_cur, NULL, 0);
        ff_ckpt_abort(st, "putting it in place", r);
        return;
    }
    st->ck_start = st->ck_meta.start;
    st->ck_bytes = size;
    ff_log(st, BACKEND_LOG_INFO, "index checkpoint written: %llu keys, %llu bytes; a restart "
           "reads the log from offset %llu", (unsigned long long)count,
           (unsigned long long)size, (unsigned long long)st->ck_start);
}

static void ff_ckpt_arm(struct backend_store *st);

/* The host's timer while a walk is under way: one more step, so that a
 * walk also ends when the writes that began it have stopped (and its
 * finish, which waits for the sync worker to be idle, gets to run under
 * a steady load whose applies always find the worker busy). */
static void ff_ckpt_tick(void *arg)
{
    struct backend_store *st = arg;
    st->ck_timer = NULL;
    if (!st->ck_on || st->failed || st->cmp)
        return;
    ff_ckpt_step(st, st->compact_step);
    ff_ckpt_arm(st);
}

/* Keeps the walk stepping from the loop (FF_CKPT_TICK_MS apart, between
 * requests) while it is under way and the store has a loop. */
static void ff_ckpt_arm(struct backend_store *st)
{
    if (st->ck_on && st->host && !st->ck_timer)
        st->ck_timer = st->host->timer_add(st->host->arg, FF_CKPT_TICK_MS, ff_ckpt_tick, st);
}

/* 1 when the log after the checkpoint is long enough that a checkpoint
 * should be written once writes stop: at least 1 MiB and a sixteenth of
 * the last checkpoint's size (a restart then replays no tail; the walk
 * writes the index once, which a tail that short does not repay). */
static int ff_ckpt_idle_due(const struct backend_store *st)
{
    if (!st->ck_min || st->failed || st->cmp || st->ck_on || st->end < st->ck_retry)
        return 0;
    uint64_t base = st->ck_start ? st->ck_start : FF_HDR_SIZE;
    uint64_t lim = st->ck_bytes / 16 > FF_CKPT_CLOSE_MIN ? st->ck_bytes / 16 : FF_CKPT_CLOSE_MIN;
    return st->end - base >= lim;
}

/* The host's timer after writes: once they have stopped for
 * FF_CKPT_IDLE_MS, a walk over the tail they left (a load ends with up
 * to checkpoint-bytes or a quarter of the checkpoint after it, which
 * every restart would otherwise replay); while they go on, waits again. */
static void ff_ckpt_idle(void *arg)
{
    struct backend_store *st = arg;
    st->ck_idle_timer = NULL;
    if (!ff_ckpt_idle_due(st))
        return;
    uint64_t quiet_us = clock_mono_us() - st->last_write_us;
    if (quiet_us < FF_CKPT_IDLE_MS * 1000ull) {
        unsigned ms = (unsigned)((FF_CKPT_IDLE_MS * 1000ull - quiet_us) / 1000u) + 1;
        st->ck_idle_timer = st->host->timer_add(st->host->arg, ms, ff_ckpt_idle, st);
        return;
    }
    uint64_t base = st->ck_start ? st->ck_start : FF_HDR_SIZE;
    ff_log(st, BACKEND_LOG_INFO, "writes stopped with %llu bytes of log after the index "
           "checkpoint: writing a new one", (unsigned long long)(st->end - base));
    ff_ckpt_begin(st);
    if (!st->ck_on)
        return;
    ff_ckpt_step(st, st->compact_step);
    ff_ckpt_arm(st);
}

/* After each apply(): a step of the walk in progress, or a new walk when
 * the log has grown checkpoint-bytes and a quarter of the last
 * checkpoint's size since the last one (so restarts replay a bounded tail
 * while checkpoints cost a bounded share of the writes). Not during a
 * compaction (its switch would end the walk). Otherwise, with a loop, the
 * idle timer (ff_ckpt_idle) is set when the tail is worth a checkpoint
 * once writes stop. */
static void ff_ckpt_maybe(struct backend_store *st)
{
    if (!st->ck_min || st->failed)
        return;
    if (st->host)
        st->last_write_us = clock_mono_us();
    if (!st->ck_on) {
        uint64_t base = st->ck_start ? st->ck_start : FF_HDR_SIZE;
        uint64_t lim = st->ck_min > st->ck_bytes / 4 ? st->ck_min : st->ck_bytes / 4;
        if (st->cmp || st->end < st->ck_retry || st->end - base < lim) {
            if (st->host && !st->ck_idle_timer && ff_ckpt_idle_due(st))
                st->ck_idle_timer = st->host->timer_add(st->host->arg, FF_CKPT_IDLE_MS,
                                                        ff_ckpt_idle, st);
            return;
        }
        ff_ckpt_begin(st);
        if (!st->ck_on)
            return;
    }
    ff_ckpt_step(st, st->compact_step);
    ff_ckpt_arm(st);
}

/* A clean close: the walk in progress is completed, or a new one made
 * when the tail since the last checkpoint is long enough to matter. */
static void ff_ckpt_close(struct backend_store *st)
{
    if (!st->ck_min || st->failed)
        return;
    if (!st->ck_on) {
        uint64_t base = st->ck_start ? st->ck_start : FF_HDR_SIZE;
        uint64_t lim = st->ck_min < FF_CKPT_CLOSE_MIN ? st->ck_min : FF_CKPT_CLOSE_MIN;
        if (st->end - base < lim)
            return;
        ff_ckpt_begin(st);
        if (!st->ck_on)
            return;
    }
    ff_ckpt_step(st, UINT64_MAX / 2);
}

/* ---- writes ---- */

/* Encodes the writes as one record into st->rec, creating the index nodes
 * of the puts (st->nodes[i], NULL for deletes) and noting where each value
 * lies in the record (st->voff[i]). Returns the record size, or 0 when out
 * of memory (nothing allocated is kept). */
static size_t ff_encode(struct backend_store *st, const struct backend_write *w, size_t n)
{
    uint64_t size = FF_REC_HDR + FF_PAYLOAD_HDR;
    for (size_t i = 0; i < n; i++)
        size += FFIDX_ENTRY_OVERHEAD - (w[i].op == BACKEND_DELETE ? 4 : 0) + w[i].key_len +
                (w[i].op == BACKEND_PUT ? w[i].val_len : 0);
    if (ff_reserve(&st->rec, &st->rec_cap, (size_t)size) != 0 || ff_scratch(st, n) != 0)
        return 0;
    uint8_t *p = st->rec + FF_REC_HDR;
    le_put64(p, st->epoch);
    le_put32(p + 8, (uint32_t)n);
    p += FF_PAYLOAD_HDR;
    for (size_t i = 0; i < n; i++) {
        st->nodes[i] = NULL;
        p[0] = w[i].op == BACKEND_PUT ? FF_OP_PUT : FF_OP_DELETE;
        le_put32(p + 1, (uint32_t)w[i].key_len);
        p += 5;
        if (w[i].op == BACKEND_PUT) {
            le_put32(p, (uint32_t)w[i].val_len);
            p += 4;
            st->nodes[i] = ffidx_node_new(&st->ix, w[i].key, w[i].key_len);
            if (!st->nodes[i]) {
                for (size_t j = 0; j < i; j++)
                    ffidx_node_free(&st->ix, st->nodes[j]);
                return 0;
            }
            st->nodes[i]->vlen = (uint32_t)w[i].val_len;
        }
        memcpy(p, w[i].key, w[i].key_len);
        p += w[i].key_len;
        st->voff[i] = (size_t)(p - st->rec);
        if (w[i].op == BACKEND_PUT && w[i].val_len) {
            memcpy(p, w[i].val, w[i].val_len);
            p += w[i].val_len;
        }
    }
    ff_seal(st->rec, (uint32_t)(size - FF_REC_HDR));
    return (size_t)size;
}

/* Frees the nodes ff_encode() created. */
static void ff_drop_nodes(struct backend_store *st, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ffidx_node_free(&st->ix, st->nodes[i]);
}

/* The expectation check's look-up (backend_probe_fn): the index, and the
 * version bytes of the value when asked for. */
static int ff_probe(void *ctx, const void *key, size_t klen, int want_version, uint64_t *version,
                    char *err, size_t errlen)
{
    struct backend_store *st = ctx;
    struct ffidx_node *n = ffidx_find(&st->ix, key, klen);
    if (!n)
        return 0;
    if (want_version) {
        uint8_t head[9];
        *version = 0;
        if (n->vlen >= sizeof head) {
            int r = bfs_pread_all(st->fd, head, sizeof head, n->loc[st->parity]);
            if (r < 0) {
                ff_err(err, errlen, "apply: reading %s/%s: %s", st->dir, FF_LOG_NAME,
                       strerror(-r));
                return BACKEND_IOERR;
            }
            *version = backend_value_version(head, sizeof head);
        }
    }
    return 1;
}


/* Keeps about st->prealloc bytes of zeros written ahead of the log's end
 * (durability batch or sync). A record then overwrites blocks the file
 * already has, so the fdatasync that makes it durable writes its data and
 * no new file size: on ext4 no journal commit, about half the time of an
 * append's (doc/performance.md, "Durable inserts against the disk's
 * bound"). The zeros are written from the loop in one call per half of
 * the reserve used, and made durable by the next sync; start-up takes a
 * zero tail for the log's clean end (ff_scan), and close cuts it off. A
 * failure here costs nothing but the reserve: the log just grows by
 * appends until a later call succeeds. */
static void ff_prealloc(struct backend_store *st)
{
    if (!st->prealloc || st->durability == BACKEND_DURABLE_NONE || st->failed ||
        st->alloc_end >= st->end + st->prealloc / 2)
        return;
    /* alloc_end >= end always */
    st->alloc_end = bfs_write_zeros(st->fd, st->alloc_end,
                                    (st->end + st->prealloc + 4095) & ~(uint64_t)4095);
}
/* Appends the writes as one record (version 2), after the argument and
 * expectation checks, then updates the index and counts what each write
 * found there. */
static int ff_sync(struct backend_store *st, char *err, size_t errlen);

static int ff_apply_v2(struct backend_store *st, const struct backend_write *w,
                       const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    backend_call_reset(call);
    char *err = call->err;
    size_t errlen = sizeof call->err;
    const char *why = st ? backend_check_writes(w, cond, n) : "apply: no store";
    if (why) {
        ff_err(err, errlen, "%s", why);
        return backend_call_end(call, BACKEND_INVALID);
    }
    uint64_t total = FF_PAYLOAD_HDR;
    for (size_t i = 0; i < n; i++)
        total += FFIDX_ENTRY_OVERHEAD + w[i].key_len + (w[i].op == BACKEND_PUT ? w[i].val_len : 0);
    if (total > FF_MAX_PAYLOAD) {
        ff_err(err, errlen, "apply: one batch may hold at most 2 GiB");
        return backend_call_end(call, BACKEND_INVALID);
    }
    int rc;
    if (st->failed) {
        /* the server's probe (n == 0) tries to recover about once a
           second; a write tries when the last attempt is that old */
        uint64_t now = clock_mono_us();
        if (n && now < st->retry_us) {
            ff_err(err, errlen, "apply: writes are refused since a write or fsync of %s/%s "
                   "failed; the log is checked again about once a second", st->dir,
                   FF_LOG_NAME);
            return backend_call_end(call, st->fail_status);
        }
        rc = ff_reset(st, err, errlen);
        if (rc != BACKEND_OK) {
            st->retry_us = now + FF_RETRY_MS * 1000u;
            return backend_call_end(call, rc);
        }
    }
    if (n == 0)
        return backend_call_end(call, BACKEND_OK);
    if (st->undo_bytes >= FF_UNDO_MAX && !(st->syncer && bsync_busy(st->syncer))) {
        /* no group commit for a long time (an offline import): bound the
           journal by syncing here */
        rc = ff_sync(st, err, errlen);
        if (rc != BACKEND_OK)
            return backend_call_end(call, rc);
    }
    rc = backend_check_conds(w, cond, n, ff_probe, st, &call->failed, err, errlen);
    if (rc != BACKEND_OK)
        return backend_call_end(call, rc);
    if (ff_undo_reserve(st, n) != 0) {
        ff_err(err, errlen, "apply: out of memory");
        return backend_call_end(call, BACKEND_NOMEM);
    }
    size_t size = ff_encode(st, w, n);
    if (!size) {
        ff_err(err, errlen, "apply: out of memory");
        return backend_call_end(call, BACKEND_NOMEM);
    }

    int r = bfs_pwrite_all(st->fd, st->rec, size, st->end);
    if (r < 0) {
        /* Cut whatever part reached the file so no half record stays. */
        st->lgen++;
        if (ftruncate(st->fd, (off_t)st->end) != 0)
            ff_fail(st, "cutting back a failed write", -errno, 0);
        else
            st->alloc_end = st->end;
        ff_drop_nodes(st, n);
        ff_err(err, errlen, "apply: writing %s/%s: %s", st->dir, FF_LOG_NAME, strerror(-r));
        return backend_call_end(call, bfs_status(r));
    }
    if (st->durability == BACKEND_DURABLE_SYNC) {
        r = ff_datasync(st->fd);
        if (r < 0) {
            ff_drop_nodes(st, n);
            ff_fail(st, "fdatasync", r, size);
            ff_err(err, errlen, "apply: fdatasync %s/%s: %s", st->dir, FF_LOG_NAME, strerror(-r));
            return backend_call_end(call, bfs_status(r));
        }
        st->epoch++;
    } else {
        st->dirty = 1;
    }
    struct ff_compaction *c = st->cmp;
    if (c) {
        r = bfs_pwrite_all(c->fd, st->rec, size, c->end);
        if (r < 0) {
            ff_compact_abort(st, "writing the new log", r);
            c = NULL;
        }
    }

    /* The record is in the log: update the index (cannot fail). In BATCH
       mode the journal keeps what each write replaced until a sync makes
       the record durable (ff_durable) or fails (ff_fail rolls it back). */
    int other = st->parity ^ 1;
    int journal = st->durability == BACKEND_DURABLE_BATCH;
    for (size_t i = 0; i < n; i++) {
        struct ffidx_node *old;
        if (w[i].op == BACKEND_PUT) {
            struct ffidx_node *x = st->nodes[i];
            x->loc[st->parity] = st->end + st->voff[i];
            if (c) {
                x->loc[other] = c->end + st->voff[i];
                x->cgen = st->cgen;
            }
            old = ffidx_put(&st->ix, x);
            call->created += old == NULL;
        } else {
            old = ffidx_remove(&st->ix, w[i].key, w[i].key_len);
            call->removed += old != NULL;
        }
        if (!journal) {
            ffidx_node_free(&st->ix, old);
        } else if (old || w[i].op == BACKEND_PUT) {
            st->undo[st->nundo++] = (struct ff_undo){st->nodes[i], old, st->end + size};
            st->undo_bytes += sizeof(struct ff_undo) + (old ? ff_node_size(old) : 0);
        }
    }
    st->end += size;
    if (st->end > st->alloc_end)
        st->alloc_end = st->end;
    if (!journal)
        ff_durable(st, st->end);
    if (c)
        c->end += size;
    if (st->rec_cap > FF_REC_KEEP) {
        free(st->rec);
        st->rec = NULL;
        st->rec_cap = 0;
    }

    if (st->cmp)
        ff_compact_step(st);
    else
        ff_compact_maybe_start(st);
    ff_ckpt_maybe(st);
    ff_prealloc(st);
    ff_hash_arm(st);
    if (st->failed) {   /* the compaction's sync failed: this record is dropped too */
        ff_err(err, errlen, "apply: a write or fsync of %s/%s failed; the writes not yet "
               "durable are dropped", st->dir, FF_LOG_NAME);
        call->created = call->removed = 0;
        return backend_call_end(call, st->fail_status);
    }
    if (!call->want_counts)
        call->created = call->removed = 0;
    return backend_call_end(call, BACKEND_OK);
}

/* The outcome r of an fdatasync that covered the log up to upto: one
 * more epoch is durable, or (failed) the writes not yet durable are
 * dropped and writes are refused until ff_reset (ff_fail).
 * BACKEND_OK, BACKEND_IOERR or BACKEND_FULL. */
static int ff_synced(struct backend_store *st, int r, uint64_t upto, char *err, size_t errlen)
{
    if (r < 0) {
        ff_fail(st, "fdatasync", r, 0);
        ff_err(err, errlen, "sync: fdatasync %s/%s: %s (the writes since the last successful "
               "one are dropped)", st->dir, FF_LOG_NAME, strerror(-r));
        return bfs_status(r);
    }
    st->epoch++;
    ff_durable(st, upto);
    return BACKEND_OK;
}

/* Group commit: one fdatasync for every record written since the last. */
static int ff_sync(struct backend_store *st, char *err, size_t errlen)
{
    if (!st) {
        ff_err(err, errlen, "sync: no store");
        return BACKEND_INVALID;
    }
    if (st->failed) {
        ff_err(err, errlen, "sync: a write or fsync of %s/%s failed; the writes since the last "
               "successful fsync are dropped", st->dir, FF_LOG_NAME);
        return st->fail_status;
    }
    if (!st->dirty)
        return BACKEND_OK;
    uint64_t upto = st->end;
    int r = ff_datasync(st->fd);
    if (r >= 0)
        st->dirty = 0;
    return ff_synced(st, r, upto, err, errlen);
}

/* The worker's job: fdatasync of the log as it was when the sync began. */
static int ff_sync_job(void *arg)
{
    struct backend_store *st = arg;
    return ff_datasync(st->sync_fd);
}

/* On the loop, after the worker's fdatasync: the outcome, as ff_sync. */
static void ff_sync_done(void *arg, int r)
{
    struct backend_store *st = arg;
    struct backend_call *call = st->sync_call;
    st->sync_call = NULL;
    int rc;
    if (st->resets != st->sync_resets) {
        /* the records it covered were dropped after a failure meanwhile */
        ff_err(call->err, sizeof call->err, "sync: a write or fsync of %s/%s failed; the "
               "writes since the last successful fsync are dropped", st->dir, FF_LOG_NAME);
        rc = st->failed ? st->fail_status : BACKEND_IOERR;
    } else {
        rc = ff_synced(st, r, st->sync_end, call->err, sizeof call->err);
    }
    backend_call_end(call, rc);
    call->done(call);
}

/* Group commit off the loop (version 2): the fdatasync of every record
 * written so far runs on the worker; records written meanwhile are left
 * for the next one. */
static int ff_sync_v2(struct backend_store *st, struct backend_call *call)
{
    backend_call_reset(call);
    if (st && !st->syncer) {
        ff_err(call->err, sizeof call->err, "sync_v2: no sync worker (sync-thread=off, or no "
               "event loop): use sync()");
        return backend_call_end(call, BACKEND_INVALID);
    }
    if (!st || st->failed || !st->dirty)
        return backend_call_end(call, ff_sync(st, call->err, sizeof call->err));
    st->dirty = 0;
    st->sync_fd = st->fd;
    st->sync_end = st->end;
    st->sync_resets = st->resets;
    st->sync_call = call;
    bsync_start(st->syncer, ff_sync_job, ff_sync_done, st);
    return BACKEND_PENDING;
}

const struct backend_ops backend_flatfile_ops = {
    .version = 3,
    .name = "flatfile",
    .open = ff_open,
    .close = ff_close,
    .iter_open = ff_iter_open,
    .iter_seek = ff_iter_seek,
    .iter_next = ff_iter_next,
    .iter_close = ff_iter_close,
    .sync = ff_sync,
    .caps = 0,
    .get_v2 = ff_get_v2,
    .iter_next_v2 = ff_iter_next_v2,
    .apply_v2 = ff_apply_v2,
    .sync_v2 = ff_sync_v2,
};
