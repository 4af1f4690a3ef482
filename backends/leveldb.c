/* leveldb.c - the LevelDB backend, over LevelDB's C API (leveldb/c.h).
 *
 * One LevelDB database per data directory. LevelDB's default comparator
 * is bytewise (memcmp, shorter prefix first), exactly the keyspace order of
 * backend.h, so keys are stored as they come. apply() is one WriteBatch;
 * cursors are LevelDB iterators (each has an implicit snapshot taken at
 * iter_open, so a cursor open across writes sees the store as of then).
 *
 * Durability. SYNC: every WriteBatch is written with sync = true (LevelDB
 * appends it to its log and fdatasyncs). BATCH: batches are written with
 * sync = false, and sync() writes an empty batch with sync = true, which
 * fdatasyncs the log and so every record appended before it. NONE: only
 * close() does that.
 *
 * One gap in that scheme is closed here: when LevelDB's memtable fills, it
 * switches to a new log file and closes the old one WITHOUT fsync; the
 * sync write then reaches only the new log, so unsynced records at the end
 * of the old one could be lost by a power failure while later ones
 * survive. The backend watches the data directory with inotify; after a
 * sync write that follows the creation of a new *.log file it fdatasyncs
 * every older log that still exists (LevelDB deletes an old log only after
 * its contents are safely in a table file) and fsyncs the directory. Without
 * inotify it checks the directory after every sync write.
 *
 * Group commit off the loop. In BATCH mode with the server's event loop
 * (backend_options.host), sync_v2 does not write LevelDB's empty synced
 * batch (LevelDB queues every writer behind a sync write, so the loop's
 * next write would wait for the fdatasync): a worker thread
 * (backends/bsync.h) fdatasyncs the live log file itself, through its own
 * descriptor (logfd) of the newest NNNNNN.log, which is what LevelDB's
 * synced write does (its log writer hands every record to write(2) before
 * the write returns, and fdatasync covers the file, whichever descriptor
 * names it). A log switch shows in the inotify queue before any record
 * goes to the new log, so the thread drains the queue first: after a new
 * log appeared it reopens logfd on the newest log, and after the
 * fdatasync syncs the older logs and the directory as above. The thread
 * touches only inofd, logfd, lognum and many_logs; the loop leaves them
 * alone while a job may run (close and a reopen wait for it first).
 *
 * Zeros ahead of the live log. With durability batch or sync the loop
 * keeps preallocate bytes of zeros written ahead of the end of LevelDB's
 * live log (through zfd, a descriptor of its own), so that LevelDB's
 * records overwrite blocks the file has and their fdatasync commits no new
 * size; LevelDB's log reader takes a zero tail for padding. ldb_prealloc
 * says why that is safe without knowing LevelDB's exact place in the log.
 *
 * Failed writes. After a failed log write LevelDB keeps appending to the
 * same log, where the partial record would make its log reader drop the
 * rest of that 32 KiB block on recovery, later acknowledged records
 * included. So after any failed write or sync this backend reopens the
 * database before the next write (recovery drops the torn record, which is
 * the last one, and starts a fresh log). Until then reads keep working.
 * Recovery writes the logs' records into a table file and a new manifest,
 * so the reopen is only tried once statvfs() shows room for that: twice
 * the size of the log files (a table of tiny records can be larger than
 * their log) plus the manifest plus 1 MiB. That is what the reopen needs,
 * not a fixed reserve, so writes come back on a small disk as soon as a
 * little space is free. Before closing the database it also writes (and
 * removes) a 4 KiB file, LDB_PROBE_NAME: a disk that refuses writes while
 * statvfs() shows room (quotas) is found without giving up the open
 * database. Those checks are cheap, so every write (and the server's probe,
 * an apply() with no writes, about once a second; protocol/service.c) makes
 * them. A reopen that fails anyway (the database is closed then, and reads
 * fail too) is retried by the next call, then after backoffs of 100 ms
 * doubling to 32 s, and every call returns an error until one succeeds.
 *
 * Interface version 2, completing every call at once (caps 0; sync_v2 and
 * compact_v2 run on workers, but no request waits for them). get_v2
 * lends the buffer leveldb_get() returned, kept by the store until the
 * next get or close (LevelDB's C API has no pinned read, so this is the
 * one copy a read makes); the version-1 get hands that same buffer over
 * instead. apply_v2 checks the expectations with leveldb_get() of each
 * conditioned key before writing the batch: one process holds the
 * database (LevelDB's LOCK) and runs one call at a time, so nothing comes
 * between the check and the write.
 *
 * Reclaiming deleted tables (compact_v2). Deleting keys writes deletion
 * markers; the memtable that holds them keeps its arena (up to two of
 * write-buffer-size), and the table files that hold the old values stay,
 * and stay mapped (file-backed resident memory), until a compaction
 * happens to reach them, which for a range nobody writes any more may be
 * never. compact_v2 runs leveldb_compact_range() over the emptied range
 * on a second worker thread (a bsync of its own, made at the first call,
 * so that a compaction of seconds never holds up a group commit): LevelDB
 * first switches to a fresh memtable and writes the old one to a level-0
 * file (freeing its arena), then merges the range's files level by level
 * into nothing (the markers go at the last level) and deletes them,
 * unmapping them. The call blocks its thread until that is done; LevelDB
 * serves the loop's reads and writes meanwhile (its own compaction thread
 * does the work, and the loop's writes may wait behind a memtable switch
 * as they would for any other). The worker touches only the database
 * handle and the range it was given; a reopen waits for it (which may
 * hold up the loop for the rest of the compaction, on that rare path)
 * and so does close. When it is done, the drop in LevelDB's memory
 * (leveldb.approximate-memory-usage: the memtables and the block cache)
 * is logged; the freed arenas (this one's, and those of the memtables
 * LevelDB flushed during the purge) are free heap that only the server's
 * malloc_trim gives back (core/heap.h). Without a host
 * (an offline tool) the compaction runs in the call itself.
 *
 * Options (backend_options.params, "name=value"):
 *   cache-size         block cache, default 32M (0 = LevelDB's own 8 MiB)
 *   write-buffer-size  memtable size, default 64M (bigger: fewer flushes,
 *                      longer log replay at start-up)
 *   max-open-files     default 1000
 *   max-file-size      table file size, default 32M
 *   block-size         table block size, default 4K
 *   bloom-bits         bloom filter bits per key, default 10 (0 = none)
 *   compression        off (default) or on (snappy): a scan of a whole
 *                      table reads every block, and decompressing them
 *                      was two thirds of a filtered scan's CPU (102 ms of
 *                      100,000 entities against 36 ms uncompressed, which
 *                      mmap'ed table files also serve without a copy);
 *                      snappy halves the disk used
 *   sync-thread        on (default): BATCH mode syncs on the worker thread
 *                      (see above); off: sync() on the loop
 *   idle-compaction    on (default): see below; off: never
 *
 * Compaction when writes stop (idle-compaction). LevelDB moves data down
 * its levels as they fill, and also charges a read that had to look into
 * more than one table file to the first file it looked into: after about
 * one such read per 16 KiB of a file, it compacts that file into the next
 * level ("seek compaction"). With bloom filters most of those looks cost
 * little, but the compactions they cause are real: after a large load the
 * first minutes of point reads paid for compacting the load (point GETs
 * at 1,000,000 entities cost 2.7 times the server CPU of the same GETs a
 * minute later, when those compactions were done). So, with a loop
 * (backend_options.host), once writes have stopped for LDB_IDLE_MS and
 * at least max(write-buffer-size, an eighth of the database) was written
 * since the last such compaction, and a point read may look into more
 * than one table file (two level-0 files, which overlap, or files in two
 * levels), the backend compacts the whole key range on its compaction
 * worker (as compact_v2 does, above): the load's compactions are done
 * while the server is idle, and afterwards a point read looks into one
 * table file and charges nothing. Writes and reads go on meanwhile; a
 * compact_v2 arriving during it waits for it to end. The eighth bounds the
 * extra writing to about eight times the data written between such
 * compactions, on top of LevelDB's own. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <leveldb/c.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/bkey.h"
#include "backends/bfs.h"
#include "backends/bopts.h"
#include "backends/bsync.h"
#include "backends/checks.h"
#include "core/clock.h"
#include "core/errfmt.h"

#define LDB_STACK_WRITES 16             /* counting needs no allocation up to this */
#define LDB_IDLE_MS 3000                /* writes stopped this long: compact (see the top) */
#define LDB_IDLE_SHARE 8                /* after writing 1/8 of the database */
/* The file a reopen writes first to see that the disk takes writes. */
#define LDB_PROBE_NAME "tabled-space-probe"
#define LDB_PROBE_BYTES 4096

struct backend_store {
    char *dir;
    int dirfd;
    int inofd;                      /* inotify on dir, -1 when unavailable */
    leveldb_t *db;                  /* NULL while a reopen is failing */
    leveldb_options_t *opt;
    leveldb_cache_t *cache;
    leveldb_filterpolicy_t *bloom;
    leveldb_readoptions_t *ropt;
    leveldb_writeoptions_t *wnosync, *wsync;
    leveldb_writebatch_t *batch, *empty;
    enum backend_durability durability;
    int dirty;                      /* writes since the last sync write */
    int broken;                     /* a write failed: reopen before writing */
    uint64_t retry_us;              /* no reopen before (monotonic) */
    unsigned backoff_ms;            /* after a failed reopen; 0 after a good one */
    int full_logged;                /* "still full" said for this failure */
    int iters;                      /* open cursors (a reopen must wait) */
    char *getval;                   /* get_v2's lent value (LevelDB's malloc) */
    void (*log)(enum backend_log_level, const char *);
    struct bsync *syncer;           /* BATCH with a host: the sync worker */
    struct backend_call *sync_call; /* the sync_v2 in flight */
    int logfd;                      /* the worker's descriptor of the live log */
    int zfd;                        /* the loop's descriptor of the live log, for
                                       the zeros written ahead (-1: none) */
    long long zlognum;              /* its number */
    uint64_t zpos;                  /* where LevelDB writes in it (an estimate
                                       from the records since zfd's fstat) */
    uint64_t zend;                  /* the end of the zeros written there */
    size_t prealloc;                /* option preallocate (0: off) */
    long long lognum;               /* its number, -1: none yet */
    int many_logs;                  /* more than 64 logs seen (logged later) */
    int sync_thread;                /* option sync-thread: use a worker */
    const struct backend_host *host; /* the loop's hooks, or NULL */
    struct bsync *compactor;        /* compact_v2's worker (made at the first) */
    struct backend_call *compact_call; /* the compact_v2 in flight */
    leveldb_t *cdb;                 /* the worker's: the database it compacts */
    char *clo, *chi;                /* and its range (chi NULL: to the end) */
    size_t clo_len, chi_len;
    size_t cfreed;                  /* its result: how far LevelDB's memory fell
                                       (for the log) */
    uint64_t cstart_us;             /* when it started (monotonic) */
    int idle_compact;               /* option idle-compaction */
    size_t wbuf;                    /* option write-buffer-size */
    void *idle_timer;               /* the host's timer while writes are watched */
    uint64_t last_write_us;         /* the newest apply with writes (monotonic) */
    uint64_t idle_bytes;            /* bytes written since the last idle compaction */
    int cidle;                      /* the compactor runs an idle compaction */
    struct backend_call *cnext;     /* a compact_v2 waiting for it to end */
    char *nlo, *nhi;                /* and that call's range (nhi NULL: to the end) */
    size_t nlo_len, nhi_len;
};

struct backend_iter {
    struct backend_store *st;
    leveldb_iterator_t *it;
    int advance;                    /* step before reading (lazy iter_next) */
    int unseeked;                   /* not positioned yet: seek to the start first */
    int has_end;
    size_t end_len;
    size_t start_len;               /* the start bound, after end in bytes[] */
    unsigned char bytes[];          /* end (end_len), then start (start_len) */
};

/* Formats a detail message into the caller's buffer. */
__attribute__((format(printf, 3, 4)))
static void ldb_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errfmt_set(err, errlen, "leveldb: ");
    errfmt_vappend(err, errlen, fmt, ap);
    va_end(ap);
}

/* Reports an event through the configured log hook, or on stderr. */
__attribute__((format(printf, 3, 4)))
static void ldb_log(const struct backend_store *st, enum backend_log_level lvl, const char *fmt,
                    ...)
{
    char msg[512];
    va_list ap;
    errfmt_set(msg, sizeof msg, "leveldb %s: ", st->dir);
    va_start(ap, fmt);
    errfmt_vappend(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (st->log)
        st->log(lvl, msg);
    else
        fprintf(stderr, "%s\n", msg);
}

/* Status for a LevelDB error string: out of space or another I/O error. */
static int ldb_status(const char *e)
{
    return e && (strstr(e, "No space left") || strstr(e, "quota")) ? BACKEND_FULL : BACKEND_IOERR;
}

/* Parses the options into st->opt (and the cache and filter it owns). */
/* The settings the --backend-option rows below fill. */
struct ldb_conf {
    size_t cache, wbuf, fsize, bsize, prealloc;
    long long files, bloom;
    int compress, sync_thread, idle_compact;
};

#define LDB_AT(f) .offset = offsetof(struct ldb_conf, f), .size = sizeof(((struct ldb_conf *)0)->f)
/* Bigger memtable and table files than LevelDB's own defaults (4 MiB,
   2 MiB): less compaction work per byte written, which matters when the
   compaction thread shares two cores with the server (about +35% durable
   inserts/s); the cost is a longer log replay after a crash. */
static const struct opt ldb_rows[] = {
    {.name = "cache-size", .type = OPT_SIZE, LDB_AT(cache), .min = 0, .max = 1LL << 40,
     .def = "32M", .arg = "BYTES", .help = "block cache (0: LevelDB's own 8 MiB)"},
    {.name = "write-buffer-size", .type = OPT_SIZE, LDB_AT(wbuf), .min = 64 << 10,
     .max = 1LL << 32, .def = "64M", .arg = "BYTES",
     .help = "memtable size (bigger: fewer flushes, longer log replay at start-up)"},
    {.name = "max-open-files", .type = OPT_INT, LDB_AT(files), .min = 16, .max = 1 << 20,
     .def = "1000", .arg = "N", .help = "table files LevelDB keeps open"},
    {.name = "max-file-size", .type = OPT_SIZE, LDB_AT(fsize), .min = 64 << 10, .max = 1 << 30,
     .def = "32M", .arg = "BYTES", .help = "table file size"},
    {.name = "block-size", .type = OPT_SIZE, LDB_AT(bsize), .min = 1 << 10, .max = 4 << 20,
     .def = "4K", .arg = "BYTES", .help = "table block size"},
    {.name = "bloom-bits", .type = OPT_INT, LDB_AT(bloom), .min = 0, .max = 64, .def = "10",
     .arg = "N", .help = "bloom filter bits per key (0: none)"},
    {.name = "compression", .type = OPT_BOOL, LDB_AT(compress), .def = "off", .arg = "on|off",
     .help = "snappy compression of table blocks (halves the disk, slower scans)"},
    {.name = "sync-thread", .type = OPT_BOOL, LDB_AT(sync_thread), .def = "on", .arg = "on|off",
     .help = "durability batch syncs on a worker thread (off: on the event loop)"},
    {.name = "preallocate", .type = OPT_SIZE, LDB_AT(prealloc), .min = 0, .max = 1 << 30,
     .def = "1M", .arg = "BYTES", .help = "with durability batch or sync, keep this many bytes "
     "of zeros written ahead of the log's end, so that the fdatasync of a write does not also "
     "have to commit a new file size; 0: append"},
    {.name = "idle-compaction", .type = OPT_BOOL, LDB_AT(idle_compact), .def = "on",
     .arg = "on|off", .help = "compact the store when writes stop after a large load (off: "
     "leave it to LevelDB, whose reads then pay for it)"},
};

const struct bopt_desc backend_leveldb_opts = {
    "leveldb", ldb_rows, sizeof ldb_rows / sizeof ldb_rows[0], sizeof(struct ldb_conf)};

/* Reads the settings from the options (rows above) into LevelDB options. */
static int ldb_settings(struct backend_store *st, const char *const *pa, char *err,
                        size_t errlen)
{
    struct ldb_conf c;
    char msg[512];
    if (bopt_parse(&backend_leveldb_opts, pa, &c, msg, sizeof msg) < 0) {
        ldb_err(err, errlen, "%s", msg);
        return BACKEND_INVALID;
    }
    size_t cache = c.cache, wbuf = c.wbuf, fsize = c.fsize, bsize = c.bsize;
    long long files = c.files, bloom = c.bloom;
    int compress = c.compress;
    st->sync_thread = c.sync_thread;
    st->idle_compact = c.idle_compact;
    st->wbuf = wbuf;
    st->prealloc = c.prealloc;
    st->opt = leveldb_options_create();
    leveldb_options_set_create_if_missing(st->opt, 1);
    leveldb_options_set_write_buffer_size(st->opt, (size_t)wbuf);
    leveldb_options_set_max_open_files(st->opt, (int)files);
    leveldb_options_set_max_file_size(st->opt, (size_t)fsize);
    leveldb_options_set_block_size(st->opt, (size_t)bsize);
    leveldb_options_set_compression(st->opt,
                                    compress ? leveldb_snappy_compression : leveldb_no_compression);
    if (cache) {
        st->cache = leveldb_cache_create_lru((size_t)cache);
        leveldb_options_set_cache(st->opt, st->cache);
    }
    if (bloom) {
        st->bloom = leveldb_filterpolicy_create_bloom((int)bloom);
        leveldb_options_set_filter_policy(st->opt, st->bloom);
    }
    return BACKEND_OK;
}

/* Releases everything of a store (the database must be closed). */
static void ldb_free_store(struct backend_store *st)
{
    bsync_free(st->syncer);
    bsync_free(st->compactor);
    free(st->clo);
    free(st->chi);
    free(st->nlo);
    free(st->nhi);
    if (st->logfd >= 0)
        close(st->logfd);
    if (st->zfd >= 0)
        close(st->zfd);
    free(st->getval);
    if (st->batch)
        leveldb_writebatch_destroy(st->batch);
    if (st->empty)
        leveldb_writebatch_destroy(st->empty);
    if (st->ropt)
        leveldb_readoptions_destroy(st->ropt);
    if (st->wnosync)
        leveldb_writeoptions_destroy(st->wnosync);
    if (st->wsync)
        leveldb_writeoptions_destroy(st->wsync);
    if (st->opt)
        leveldb_options_destroy(st->opt);
    if (st->bloom)
        leveldb_filterpolicy_destroy(st->bloom);
    if (st->cache)
        leveldb_cache_destroy(st->cache);
    if (st->inofd >= 0)
        close(st->inofd);
    if (st->dirfd >= 0)
        close(st->dirfd);
    free(st->dir);
    free(st);
}

static int ldb_open(const struct backend_options *o, struct backend_store **out, char *err,
                    size_t errlen)
{
    if (!o || !out || !o->data_dir || !o->data_dir[0]) {
        ldb_err(err, errlen, "open: no data directory given");
        return BACKEND_INVALID;
    }
    struct backend_store *st = calloc(1, sizeof(*st));
    if (!st || !(st->dir = strdup(o->data_dir))) {
        free(st);
        ldb_err(err, errlen, "open: out of memory");
        return BACKEND_NOMEM;
    }
    st->dirfd = st->inofd = st->logfd = st->zfd = -1;
    st->lognum = st->zlognum = -1;
    st->durability = o->durability;
    st->log = o->log;
    st->host = o->host;
    int rc = ldb_settings(st, o->params, err, errlen);
    if (rc != BACKEND_OK)
        goto fail;
    int e = bfs_mkdir_p(st->dir);
    if (e < 0) {
        ldb_err(err, errlen, "open: cannot create data directory %s: %s", st->dir, strerror(-e));
        rc = BACKEND_IOERR;
        goto fail;
    }
    st->dirfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->dirfd < 0) {
        ldb_err(err, errlen, "open: %s: %s", st->dir, strerror(errno));
        rc = BACKEND_IOERR;
        goto fail;
    }
    /* Watch before opening: the log LevelDB creates at open counts too. */
    st->inofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (st->inofd >= 0 && inotify_add_watch(st->inofd, st->dir, IN_CREATE | IN_MOVED_TO) < 0) {
        close(st->inofd);
        st->inofd = -1;
    }
    char *lerr = NULL;
    st->db = leveldb_open(st->opt, st->dir, &lerr);
    if (lerr) {
        ldb_err(err, errlen, "open %s: %s", st->dir, lerr);
        leveldb_free(lerr);
        st->db = NULL;
        rc = BACKEND_IOERR;
        goto fail;
    }
    st->ropt = leveldb_readoptions_create();
    st->wnosync = leveldb_writeoptions_create();
    st->wsync = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(st->wsync, 1);
    st->batch = leveldb_writebatch_create();
    st->empty = leveldb_writebatch_create();
    if (st->durability == BACKEND_DURABLE_BATCH && o->host && st->sync_thread &&
        !(st->syncer = bsync_new(o->host, err, errlen))) {
        rc = BACKEND_NOMEM;
        goto fail;
    }
    *out = st;
    return BACKEND_OK;
fail:
    ldb_free_store(st);
    return rc;
}

/* Numeric part of a LevelDB log file name "NNNNNN.log", or -1. */
static long long ldb_log_number(const char *name)
{
    char *end;
    if (name[0] < '0' || name[0] > '9')
        return -1;
    long long n = strtoll(name, &end, 10);
    return strcmp(end, ".log") == 0 ? n : -1;
}

/* The store's directory opened for reading its entries (*d, closedir
 * after). 0 or -errno. */
static int ldb_opendir(struct backend_store *st, DIR **d)
{
    int fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!*d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return -e;
    }
    return 0;
}

/* fdatasyncs every log file older than the newest (LevelDB closed them
 * without fsync when it switched logs), then the directory. 0 or -errno. */
static int ldb_sync_old_logs(struct backend_store *st)
{
    DIR *d;
    int oe = ldb_opendir(st, &d);
    if (oe)
        return oe;
    long long newest = -1, nums[64];
    size_t n = 0;
    int rc = 0, overflow = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long x = ldb_log_number(de->d_name);
        if (x < 0)
            continue;
        if (x > newest)
            newest = x;
        if (n < sizeof(nums) / sizeof(nums[0]))
            nums[n++] = x;
        else
            overflow = 1;
    }
    closedir(d);
    if (overflow)
        st->many_logs = 1;          /* logged by the loop (this may be the worker) */
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (nums[i] == newest)
            continue;               /* the sync write covered it */
        char name[32];
        snprintf(name, sizeof(name), "%06lld.log", nums[i]);
        int lf = openat(st->dirfd, name, O_RDONLY | O_CLOEXEC);
        if (lf < 0) {
            if (errno != ENOENT)    /* gone: its data is in a table file */
                rc = -errno;
            continue;
        }
        if (fdatasync(lf) != 0)
            rc = -errno;
        close(lf);
    }
    if (rc == 0)
        rc = bfs_fsync_dir(st->dirfd);
    return rc;
}

/* Says once that ldb_sync_old_logs saw too many logs (on the loop). */
static void ldb_note_many_logs(struct backend_store *st)
{
    if (st->many_logs)
        ldb_log(st, BACKEND_LOG_WARN, "more than 64 log files; syncing the first 64");
    st->many_logs = 0;
}

/* 1 when LevelDB created a log file since the last call (or there is no
 * inotify to tell): drains the inotify queue. */
static int ldb_new_logs(struct backend_store *st)
{
    int need = st->inofd < 0;
    if (st->inofd >= 0) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t r;
        while ((r = read(st->inofd, buf, sizeof(buf))) > 0) {
            for (char *p = buf; p < buf + r;) {
                struct inotify_event *ev = (struct inotify_event *)p;
                if ((ev->mask & IN_Q_OVERFLOW) || (ev->len && ldb_log_number(ev->name) >= 0))
                    need = 1;
                p += sizeof(*ev) + ev->len;
            }
        }
    }
    return need;
}

/* After a sync write: when LevelDB created a log file since the last
 * check, make the older logs and the directory durable too. */
static int ldb_after_sync(struct backend_store *st)
{
    int r = ldb_new_logs(st) ? ldb_sync_old_logs(st) : 0;
    ldb_note_many_logs(st);
    return r;
}

/* The number of the newest log file (LevelDB's live one) in *newest.
 * 0 or -errno (-ENOENT: none). Reads only dirfd, from either thread. */
static int ldb_newest_log(struct backend_store *st, long long *newest)
{
    DIR *d;
    int oe = ldb_opendir(st, &d);
    if (oe)
        return oe;
    *newest = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long x = ldb_log_number(de->d_name);
        if (x > *newest)
            *newest = x;
    }
    closedir(d);
    return *newest < 0 ? -ENOENT : 0;
}

/* Points logfd at the newest log file (LevelDB's live one). 0 or -errno. */
static int ldb_open_live_log(struct backend_store *st)
{
    long long newest;
    int oe = ldb_newest_log(st, &newest);
    if (oe)
        return oe;
    if (newest == st->lognum && st->logfd >= 0)
        return 0;
    char name[32];
    snprintf(name, sizeof(name), "%06lld.log", newest);
    int lf = openat(st->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (lf < 0)
        return -errno;
    if (st->logfd >= 0)
        close(st->logfd);
    st->logfd = lf;
    st->lognum = newest;
    return 0;
}

/* Bytes LevelDB's log gains for one WriteBatch of these writes: the
 * batch (12-byte header; per write a tag, the key and for a put the value,
 * each with its varint length) and a 7-byte record header per 32 KiB
 * block it spans, counted a little high (the block's padding of at most 6
 * bytes included). Only an estimate for ldb_prealloc. */
static uint64_t ldb_log_bytes(const struct backend_write *w, size_t n)
{
    uint64_t b = 12;
    for (size_t i = 0; i < n; i++) {
        b += 1 + 5 + w[i].key_len;
        if (w[i].op == BACKEND_PUT)
            b += 5 + w[i].val_len;
    }
    return b + (b / 32761 + 1) * 14;
}

/* Zeros written ahead of LevelDB's log, as the flat file does with its
 * own (doc/performance.md, "The flat file's log with zeros written ahead"
 * and "LevelDB's log with zeros written ahead"): an fdatasync after
 * LevelDB appends must also commit the file's new size (a journal commit
 * on ext4), one after it overwrote blocks the file has need not. Called
 * on the loop after each write that reached LevelDB's log (logged bytes
 * of it), with LevelDB idle: LevelDB writes its live log only from the
 * thread that calls leveldb_write, at its own position, never past the
 * file's end but by appending. So zeros written at or beyond the file's
 * size (fstat) can never cover a record; LevelDB's position is known
 * only as an estimate (zpos), which decides when, never where, zeros are
 * written. LevelDB's log reader takes a zero-filled tail for padding (a
 * record header of zeros: "preallocated file regions") and reads nothing
 * from it. After a log switch (a new newest .log) zfd follows it: at once
 * when the sync worker saw the new log (ldb_sync_done), else once the
 * estimate reaches the zeros' end in the old log. Errors only leave this
 * log without zeros (LevelDB then appends, as without them). */
static void ldb_prealloc(struct backend_store *st, uint64_t logged)
{
    if (!st->prealloc || st->durability == BACKEND_DURABLE_NONE)
        return;
    st->zpos += logged;
    if (st->zfd >= 0 && st->zpos + st->prealloc / 2 <= st->zend)
        return;
    long long newest;
    if (ldb_newest_log(st, &newest) < 0)
        return;
    if (newest != st->zlognum || st->zfd < 0) {
        char name[32];
        snprintf(name, sizeof(name), "%06lld.log", newest);
        int fd = openat(st->dirfd, name, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return;
        if (st->zfd >= 0)
            close(st->zfd);
        st->zfd = fd;
        st->zlognum = newest;
        st->zpos = st->zend = 0;
    }
    struct stat sb;
    if (fstat(st->zfd, &sb) != 0)
        return;
    uint64_t size = (uint64_t)sb.st_size;
    if (size > st->zend)            /* LevelDB got past the zeros (or a new log): */
        st->zpos = st->zend = size; /* it appends at the end, so that is its place */
    st->zend = bfs_write_zeros(st->zfd, st->zend,
                               (st->zpos + st->prealloc + 4095) & ~(uint64_t)4095);
}

/* The worker's job: fdatasync of the live log (after a log switch: of
 * the older logs and the directory too). 0 or -errno. Runs off the loop:
 * touches only inofd, logfd, lognum and many_logs. */
static int ldb_sync_job(void *arg)
{
    struct backend_store *st = arg;
    int need = ldb_new_logs(st) || st->logfd < 0;
    if (need) {
        int r = ldb_open_live_log(st);
        if (r < 0)
            return r;
    }
    if (fdatasync(st->logfd) != 0)
        return -errno;
    return need ? ldb_sync_old_logs(st) : 0;
}

/* Free bytes a reopen needs (see the top): 2 x the log files + the
 * manifest + 1 MiB. */
static uint64_t ldb_reopen_need(struct backend_store *st)
{
    uint64_t logs = 0, manifest = 0;
    int fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 1u << 20;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        int is_log = ldb_log_number(de->d_name) >= 0;
        if (!is_log && strncmp(de->d_name, "MANIFEST-", 9) != 0)
            continue;
        struct stat sb;
        if (fstatat(st->dirfd, de->d_name, &sb, 0) != 0)
            continue;
        if (is_log)
            logs += (uint64_t)sb.st_size;
        else if ((uint64_t)sb.st_size > manifest)
            manifest = (uint64_t)sb.st_size;
    }
    closedir(d);
    return 2 * logs + manifest + (1u << 20);
}

/* Writes and removes a small file in the data directory: 0 when the disk
 * takes it, or -errno. */
static int ldb_space_probe(struct backend_store *st)
{
    int fd = openat(st->dirfd, LDB_PROBE_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    static const char zeros[LDB_PROBE_BYTES];
    ssize_t w = write(fd, zeros, sizeof(zeros));
    int e = w == (ssize_t)sizeof(zeros) ? 0 : w < 0 ? -errno : -ENOSPC;
    close(fd);
    unlinkat(st->dirfd, LDB_PROBE_NAME, 0);
    return e;
}

/* Closes and reopens the database after a failed write (see the top). */
static int ldb_reopen(struct backend_store *st, char *err, size_t errlen)
{
    if (st->syncer)
        bsync_wait(st->syncer);     /* the worker lists and opens the logs */
    if (st->compactor)
        bsync_wait(st->compactor);  /* the worker compacts through st->db */
    if (st->iters) {
        ldb_err(err, errlen, "a write failed earlier and the store must be reopened, but %d "
                "cursors are open", st->iters);
        return BACKEND_IOERR;
    }
    uint64_t now = clock_mono_us();
    if (now < st->retry_us) {
        ldb_err(err, errlen, "a write failed earlier; the store is reopened when it can be "
                "(next try in %llu ms)", (unsigned long long)((st->retry_us - now) / 1000));
        return st->db ? BACKEND_FULL : BACKEND_IOERR;
    }
    /* Reopening writes a table and a manifest: while the disk has no room
       for them, keep the open database (and reads) instead. */
    struct statvfs vfs;
    if (st->db && statvfs(st->dir, &vfs) == 0) {
        uint64_t free_b = (uint64_t)vfs.f_bavail * vfs.f_frsize, need = ldb_reopen_need(st);
        if (free_b < need) {
            if (!st->full_logged)
                ldb_log(st, BACKEND_LOG_WARN, "the disk is full: %llu bytes free, the reopen "
                        "that makes writes work again needs %llu; retrying when there is room",
                        (unsigned long long)free_b, (unsigned long long)need);
            st->full_logged = 1;
            ldb_err(err, errlen, "a write failed earlier and the disk under %s is still full "
                    "(%llu bytes free, %llu needed)", st->dir, (unsigned long long)free_b,
                    (unsigned long long)need);
            return BACKEND_FULL;
        }
    }
    int e = st->db ? ldb_space_probe(st) : 0;
    if (e < 0) {
        if (!st->full_logged)
            ldb_log(st, BACKEND_LOG_WARN, "the disk refuses writes (%s); the reopen that makes "
                    "writes work again is retried when it takes them", strerror(-e));
        st->full_logged = 1;
        ldb_err(err, errlen, "a write failed earlier and the disk under %s still refuses "
                "writes: %s", st->dir, strerror(-e));
        return e == -ENOSPC || e == -EDQUOT ? BACKEND_FULL : BACKEND_IOERR;
    }
    if (st->db)
        leveldb_close(st->db);
    char *lerr = NULL;
    st->db = leveldb_open(st->opt, st->dir, &lerr);
    if (lerr) {
        ldb_err(err, errlen, "reopening after a failed write: %s", lerr);
        int rc = ldb_status(lerr);
        /* the next call retries at once, later ones after 100 ms doubling */
        st->retry_us = clock_mono_us() + (uint64_t)st->backoff_ms * 1000;
        ldb_log(st, BACKEND_LOG_ERROR, "reopening after a failed write failed (%s); reads fail "
                "too until a retry works (next in %u ms)", lerr, st->backoff_ms);
        st->backoff_ms = st->backoff_ms ? st->backoff_ms * 2 : 100;
        if (st->backoff_ms > 32000)
            st->backoff_ms = 32000;
        leveldb_free(lerr);
        st->db = NULL;
        return rc;
    }
    st->broken = 0;
    st->dirty = 0;                  /* recovery wrote everything to tables */
    if (st->zfd >= 0)               /* and began a new log: zeros go there next */
        close(st->zfd);
    st->zfd = -1;
    st->backoff_ms = 0;
    st->retry_us = 0;
    st->full_logged = 0;
    ldb_log(st, BACKEND_LOG_INFO, "reopened after a failed write");
    return BACKEND_OK;
}

static void ldb_close(struct backend_store *st)
{
    if (!st)
        return;
    if (st->idle_timer)
        st->host->timer_cancel(st->host->arg, st->idle_timer);
    st->idle_timer = NULL;
    bsync_free(st->syncer);         /* waits for the sync in flight */
    st->syncer = NULL;
    bsync_free(st->compactor);      /* and for the compaction */
    st->compactor = NULL;
    if (st->db) {
        if (st->dirty && !st->broken) {
            char *lerr = NULL;
            leveldb_write(st->db, st->wsync, st->empty, &lerr);
            if (lerr) {
                ldb_log(st, BACKEND_LOG_ERROR, "close: sync failed: %s", lerr);
                leveldb_free(lerr);
            } else if (ldb_after_sync(st) < 0) {
                ldb_log(st, BACKEND_LOG_ERROR, "close: syncing old logs failed");
            }
        }
        leveldb_close(st->db);
    }
    ldb_free_store(st);
}

/* The database, or NULL with a message when a reopen failed. */
static leveldb_t *ldb_db(struct backend_store *st, char *err, size_t errlen)
{
    if (!st->db && ldb_reopen(st, err, errlen) != BACKEND_OK)
        return NULL;
    return st->db;
}

/* leveldb_get(): BACKEND_OK with *v (LevelDB's malloc()ed copy, never
 * NULL, which the caller frees) and *n, BACKEND_NOTFOUND, or a failure
 * with a message. */
static int ldb_read(struct backend_store *st, const void *key, size_t klen, char **v, size_t *n,
                    char *err, size_t errlen)
{
    leveldb_t *db = ldb_db(st, err, errlen);
    if (!db)
        return BACKEND_IOERR;
    char *lerr = NULL;
    *n = 0;
    *v = leveldb_get(db, st->ropt, key, klen, n, &lerr);
    if (lerr) {
        ldb_err(err, errlen, "get: %s", lerr);
        leveldb_free(lerr);
        return BACKEND_IOERR;
    }
    if (!*v)
        return BACKEND_NOTFOUND;
    return BACKEND_OK;
}

/* Point lookup (version 2): lends the value LevelDB returned; the store
 * keeps it until the next get or close. */
static int ldb_get_v2(struct backend_store *st, const void *key, size_t klen,
                      struct backend_call *call)
{
    backend_call_reset(call);
    if (!st || !backend_key_ok(key, klen)) {
        ldb_err(call->err, sizeof call->err, "get: empty, missing or oversized key");
        return backend_call_end(call, BACKEND_INVALID);
    }
    free(st->getval);
    st->getval = NULL;
    size_t n;
    int rc = ldb_read(st, key, klen, &st->getval, &n, call->err, sizeof call->err);
    if (rc != BACKEND_OK)
        return backend_call_end(call, rc);     /* NOTFOUND: an answer, no detail */
    call->val = n ? st->getval : "";           /* a non-NULL pointer for length 0 */
    call->val_len = n;
    return backend_call_end(call, BACKEND_OK);
}

/* Opens a cursor over [start, end) on LevelDB's implicit snapshot. */
static int ldb_iter_open(struct backend_store *st, const void *start, size_t start_len,
                         const void *end, size_t end_len, struct backend_iter **out, char *err,
                         size_t errlen)
{
    const char *why = backend_check_bounds(start, start_len, end, end_len);
    if (!st || !out || why) {
        ldb_err(err, errlen, "%s", why ? why : "iter_open: no store or no output pointer");
        return BACKEND_INVALID;
    }
    leveldb_t *db = ldb_db(st, err, errlen);
    if (!db)
        return BACKEND_IOERR;
    size_t keep = end ? end_len : 0;
    struct backend_iter *it = calloc(1, sizeof(*it) + keep + start_len);
    if (!it) {
        ldb_err(err, errlen, "iter_open: out of memory");
        return BACKEND_NOMEM;
    }
    it->st = st;
    it->has_end = end != NULL;
    it->end_len = keep;
    it->start_len = start_len;
    if (keep)
        memcpy(it->bytes, end, keep);
    if (start_len)
        memcpy(it->bytes + keep, start, start_len);
    /* The iterator reads the snapshot of this moment; its first seek waits
       for the first step: a caller that seeks at once (a query page) then
       pays one seek, not two. A seek steps over every deleted or replaced
       entry before its target still in the tables, so a seek to a table's
       start behind many deletes cost a query page milliseconds
       (doc/performance.md, "Soak"). */
    it->it = leveldb_create_iterator(db, st->ropt);
    it->unseeked = 1;
    st->iters++;
    *out = it;
    return BACKEND_OK;
}

static int ldb_iter_seek(struct backend_iter *it, const void *key, size_t klen)
{
    if (!it || !backend_seek_ok(key, klen))
        return BACKEND_INVALID;
    if (klen)
        leveldb_iter_seek(it->it, key, klen);
    else
        leveldb_iter_seek_to_first(it->it);
    it->unseeked = 0;
    it->advance = 0;
    return BACKEND_OK;
}

/* Returns the entry under the LevelDB iterator and steps past it lazily,
 * on the next call, so the returned pointers stay valid until then. */
static int ldb_iter_next(struct backend_iter *it, const void **key, size_t *klen,
                         const void **val, size_t *vlen)
{
    if (!it)
        return BACKEND_INVALID;
    if (it->unseeked)               /* the first step: seek to the start bound */
        ldb_iter_seek(it, it->bytes + it->end_len, it->start_len);
    else if (it->advance) {
        leveldb_iter_next(it->it);
        it->advance = 0;
    }
    if (!leveldb_iter_valid(it->it)) {
        char *lerr = NULL;
        leveldb_iter_get_error(it->it, &lerr);
        if (lerr) {
            ldb_log(it->st, BACKEND_LOG_ERROR, "iterator: %s", lerr);
            leveldb_free(lerr);
            return BACKEND_IOERR;
        }
        return 0;
    }
    size_t kl = 0, vl = 0;
    const char *k = leveldb_iter_key(it->it, &kl);
    if (it->has_end && bkey_cmp(k, kl, it->bytes, it->end_len) >= 0)
        return 0;
    const char *v = leveldb_iter_value(it->it, &vl);
    it->advance = 1;
    if (key)
        *key = k;
    if (klen)
        *klen = kl;
    if (val)
        *val = v;
    if (vlen)
        *vlen = vl;
    return 1;
}

/* iter_next with the entry lent through the call (version 2); the
 * pointers are the LevelDB iterator's, valid until the next step. */
static int ldb_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    backend_call_reset(call);
    int rc = ldb_iter_next(it, &call->key, &call->key_len, &call->val, &call->val_len);
    if (rc < 0)
        ldb_err(call->err, sizeof call->err, "iter_next: %s",
                rc == BACKEND_INVALID ? "no cursor" : "the iterator failed (see the log)");
    return backend_call_end(call, rc);
}

static void ldb_iter_close(struct backend_iter *it)
{
    if (!it)
        return;
    leveldb_iter_destroy(it->it);
    it->st->iters--;
    free(it);
}

/* The expectation check's look-up (backend_probe_fn). */
static int ldb_probe(void *ctx, const void *key, size_t klen, int want_version, uint64_t *version,
                     char *err, size_t errlen)
{
    char *v;
    size_t n;
    int rc = ldb_read(ctx, key, klen, &v, &n, err, errlen);
    if (rc == BACKEND_NOTFOUND)
        return 0;
    if (rc != BACKEND_OK)
        return rc;
    if (want_version)
        *version = backend_value_version(v, n);
    leveldb_free(v);
    return 1;
}

/* One write of ldb_count's sort: the key and its place in the array. */
struct ldb_cnt {
    const void *key;
    size_t key_len, i;
};

/* Orders writes by key, then by their place in the array. */
static int ldb_cnt_cmp(const void *a, const void *b)
{
    const struct ldb_cnt *x = a, *y = b;
    int c = bkey_cmp(x->key, x->key_len, y->key, y->key_len);
    if (c)
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* want_counts: how many puts find their key absent and how many deletes
 * find it present, each write seeing the earlier ones of the array (so
 * created - removed is the change in the number of keys). The writes are
 * sorted by key so that each distinct key is looked up once. */
static int ldb_count(struct backend_store *st, const struct backend_write *w, size_t n,
                     struct backend_call *call)
{
    struct ldb_cnt stack[LDB_STACK_WRITES], *s = stack;
    if (n > LDB_STACK_WRITES && !(s = malloc(n * sizeof(*s)))) {
        ldb_err(call->err, sizeof call->err, "apply: out of memory");
        return BACKEND_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        s[i] = (struct ldb_cnt){w[i].key, w[i].key_len, i};
    qsort(s, n, sizeof(*s), ldb_cnt_cmp);
    int rc = BACKEND_OK, exists = 0;
    for (size_t j = 0; j < n && rc == BACKEND_OK; j++) {
        if (j == 0 || bkey_cmp(s[j].key, s[j].key_len, s[j - 1].key, s[j - 1].key_len) != 0) {
            uint64_t unused;
            rc = exists = ldb_probe(st, s[j].key, s[j].key_len, 0, &unused, call->err,
                                    sizeof call->err);
            if (rc > 0)
                rc = BACKEND_OK;
        }
        if (w[s[j].i].op == BACKEND_PUT) {
            call->created += !exists;
            exists = 1;
        } else {
            call->removed += exists;
            exists = 0;
        }
    }
    if (s != stack)
        free(s);
    return rc;
}

/* Applies the writes as one WriteBatch (version 2), after the argument
 * and expectation checks. */
static void ldb_note_writes(struct backend_store *st, const struct backend_write *w, size_t n);

static int ldb_apply_v2(struct backend_store *st, const struct backend_write *w,
                        const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    backend_call_reset(call);
    char *err = call->err;
    size_t errlen = sizeof call->err;
    const char *why = st ? backend_check_writes(w, cond, n) : "apply: no store";
    if (why) {
        ldb_err(err, errlen, "%s", why);
        return backend_call_end(call, BACKEND_INVALID);
    }
    if (st->broken || !st->db) {  /* n == 0 too: the server's probe */
        int rc = ldb_reopen(st, err, errlen);
        if (rc != BACKEND_OK)
            return backend_call_end(call, rc);
    }
    if (n == 0)
        return backend_call_end(call, BACKEND_OK);
    int rc = backend_check_conds(w, cond, n, ldb_probe, st, &call->failed, err, errlen);
    if (rc == BACKEND_OK && call->want_counts)
        rc = ldb_count(st, w, n, call);
    if (rc != BACKEND_OK)
        return backend_call_end(call, rc);
    leveldb_writebatch_clear(st->batch);
    for (size_t i = 0; i < n; i++) {
        if (w[i].op == BACKEND_PUT)
            leveldb_writebatch_put(st->batch, w[i].key, w[i].key_len,
                                   w[i].val_len ? w[i].val : "", w[i].val_len);
        else
            leveldb_writebatch_delete(st->batch, w[i].key, w[i].key_len);
    }
    int sync = st->durability == BACKEND_DURABLE_SYNC;
    char *lerr = NULL;
    leveldb_write(st->db, sync ? st->wsync : st->wnosync, st->batch, &lerr);
    if (lerr) {
        rc = ldb_status(lerr);
        ldb_err(err, errlen, "apply: %s", lerr);
        ldb_log(st, BACKEND_LOG_ERROR, "write failed (%s); reopening before the next write",
                lerr);
        leveldb_free(lerr);
        st->broken = 1;
        return backend_call_end(call, rc);
    }
    if (sync) {
        int r = ldb_after_sync(st);
        if (r < 0) {
            st->broken = 1;
            ldb_err(err, errlen, "apply: syncing older logs: %s", strerror(-r));
            return backend_call_end(call, BACKEND_IOERR);
        }
    } else {
        st->dirty = 1;
    }
    ldb_prealloc(st, ldb_log_bytes(w, n));
    ldb_note_writes(st, w, n);
    return backend_call_end(call, BACKEND_OK);
}

/* Group commit: one synced (empty) write makes every earlier one durable. */
static int ldb_sync(struct backend_store *st, char *err, size_t errlen)
{
    if (!st) {
        ldb_err(err, errlen, "sync: no store");
        return BACKEND_INVALID;
    }
    if (!st->dirty)
        return BACKEND_OK;
    if (st->broken || !st->db)         /* recovery makes the good writes durable */
        return ldb_reopen(st, err, errlen);
    char *lerr = NULL;
    leveldb_write(st->db, st->wsync, st->empty, &lerr);
    st->zpos += ldb_log_bytes(NULL, 0);  /* the empty batch's record */
    if (lerr) {
        ldb_err(err, errlen, "sync: %s", lerr);
        ldb_log(st, BACKEND_LOG_ERROR, "sync failed (%s); reopening before the next write", lerr);
        leveldb_free(lerr);
        st->broken = 1;
        return BACKEND_IOERR;
    }
    int r = ldb_after_sync(st);
    if (r < 0) {
        st->broken = 1;
        ldb_err(err, errlen, "sync: syncing older logs: %s", strerror(-r));
        return BACKEND_IOERR;
    }
    st->dirty = 0;
    return BACKEND_OK;
}

/* On the loop, after the worker's job: the outcome, as ldb_sync. */
static void ldb_sync_done(void *arg, int r)
{
    struct backend_store *st = arg;
    struct backend_call *call = st->sync_call;
    st->sync_call = NULL;
    ldb_note_many_logs(st);
    if (st->zfd >= 0 && st->lognum != st->zlognum) {
        close(st->zfd);             /* the worker found a new log: zeros go there */
        st->zfd = -1;
    }
    if (r < 0) {
        ldb_err(call->err, sizeof call->err, "sync: fdatasync of the log: %s", strerror(-r));
        ldb_log(st, BACKEND_LOG_ERROR, "sync failed (%s); reopening before the next write",
                strerror(-r));
        st->broken = 1;
        backend_call_end(call, BACKEND_IOERR);
    } else {
        backend_call_end(call, BACKEND_OK);
    }
    call->done(call);
}

/* Group commit off the loop (version 2): the worker fdatasyncs the log
 * (see the top); writes applied meanwhile are left for the next sync. */
static int ldb_sync_v2(struct backend_store *st, struct backend_call *call)
{
    backend_call_reset(call);
    if (st && !st->syncer) {
        ldb_err(call->err, sizeof call->err, "sync_v2: no sync worker (sync-thread=off, or no "
                "event loop): use sync()");
        return backend_call_end(call, BACKEND_INVALID);
    }
    if (!st || !st->dirty || st->broken || !st->db)
        return backend_call_end(call, ldb_sync(st, call->err, sizeof call->err));
    st->dirty = 0;
    st->sync_call = call;
    bsync_start(st->syncer, ldb_sync_job, ldb_sync_done, st);
    return BACKEND_PENDING;
}

/* LevelDB's estimate of its memory in use (memtables, block cache), 0 when
 * it has none. */
static size_t ldb_memory(leveldb_t *db)
{
    char *v = leveldb_property_value(db, "leveldb.approximate-memory-usage");
    size_t n = v ? (size_t)strtoull(v, NULL, 10) : 0;
    leveldb_free(v);
    return n;
}

/* The compaction (on the worker, or in the call without a loop): see the
 * top. LevelDB reports no failure here; one of its background work shows
 * at the next write. */
static int ldb_compact_job(void *arg)
{
    struct backend_store *st = arg;
    size_t before = ldb_memory(st->cdb);
    leveldb_compact_range(st->cdb, st->clo_len ? st->clo : NULL, st->clo_len, st->chi,
                          st->chi_len);
    size_t after = ldb_memory(st->cdb);
    st->cfreed = before > after ? before - after : 0;
    return 0;
}

/* On the loop, after the worker's compaction: logs it and completes the
 * call. */
static int ldb_compact_v2(struct backend_store *st, const void *lo, size_t lo_len,
                          const void *hi, size_t hi_len, struct backend_call *call);

static void ldb_compact_done(void *arg, int r)
{
    (void)r;
    struct backend_store *st = arg;
    struct backend_call *call = st->compact_call;
    st->compact_call = NULL;
    st->cdb = NULL;
    if (st->cidle) {
        st->cidle = 0;
        ldb_log(st, BACKEND_LOG_INFO, "compacted the store after writes stopped, in %.1f s",
                (double)(clock_mono_us() - st->cstart_us) / 1e6);
        if ((call = st->cnext)) {   /* the compact_v2 that waited */
            st->cnext = NULL;
            int rc = ldb_compact_v2(st, st->nlo, st->nlo_len, st->nhi, st->nhi_len, call);
            if (rc != BACKEND_PENDING)
                call->done(call);
        }
        return;
    }
    ldb_log(st, BACKEND_LOG_INFO, "compacted a range of deleted data in %.1f s; LevelDB's "
            "memory in use fell by %zu MiB", (double)(clock_mono_us() - st->cstart_us) / 1e6,
            st->cfreed >> 20);
    backend_call_end(call, BACKEND_OK);
    call->done(call);
}

/* Replaces the range at plo and phi with copies of [lo, hi) (hi NULL: phi
 * gets NULL, to the end). */
static int ldb_copy_range(char **plo, size_t *plo_len, char **phi, size_t *phi_len,
                          const void *lo, size_t lo_len, const void *hi, size_t hi_len)
{
    free(*plo);
    free(*phi);
    *plo = malloc(lo_len + 1);
    *phi = hi ? malloc(hi_len + 1) : NULL;
    if (!*plo || (hi && !*phi))
        return BACKEND_NOMEM;
    if (lo_len)
        memcpy(*plo, lo, lo_len);
    if (hi_len)
        memcpy(*phi, hi, hi_len);
    *plo_len = lo_len;
    *phi_len = hi ? hi_len : 0;
    return BACKEND_OK;
}

/* Keeps a copy of the range for the job (chi NULL: to the end). */
static int ldb_compact_range_set(struct backend_store *st, const void *lo, size_t lo_len,
                                 const void *hi, size_t hi_len)
{
    return ldb_copy_range(&st->clo, &st->clo_len, &st->chi, &st->chi_len, lo, lo_len, hi,
                          hi_len);
}

/* How many table files a point read may look into: each level-0 file
 * (they overlap), and one per deeper level that holds files. */
static int ldb_read_depth(leveldb_t *db)
{
    int depth = 0;
    for (int level = 0; level < 7; level++) {
        char name[40];
        snprintf(name, sizeof name, "leveldb.num-files-at-level%d", level);
        char *v = leveldb_property_value(db, name);
        unsigned long long files = v ? strtoull(v, NULL, 10) : 0;
        leveldb_free(v);
        depth += level == 0 ? (int)files : files > 0;
    }
    return depth;
}

/* LevelDB's estimate of the bytes its table files hold. */
static uint64_t ldb_table_bytes(leveldb_t *db)
{
    static const char lo[1] = {0};
    static const char hi[9] = {'\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff',
                               '\xff', '\xff'};
    const char *los[1] = {lo}, *his[1] = {hi};
    size_t lol[1] = {0}, hil[1] = {sizeof hi};
    uint64_t sz[1] = {0};
    leveldb_approximate_sizes(db, 1, los, lol, his, hil, sz);
    return sz[0];
}

/* The host's timer while writes are watched (see the top): once they have
 * stopped for LDB_IDLE_MS, starts the idle compaction if it is due. */
static void ldb_idle_tick(void *arg)
{
    struct backend_store *st = arg;
    st->idle_timer = NULL;
    uint64_t now = clock_mono_us(), quiet = now - st->last_write_us;
    if (quiet < (uint64_t)LDB_IDLE_MS * 1000) {
        unsigned ms = (unsigned)(((uint64_t)LDB_IDLE_MS * 1000 - quiet) / 1000) + 1;
        st->idle_timer = st->host->timer_add(st->host->arg, ms, ldb_idle_tick, st);
        return;
    }
    if (!st->db || st->broken || st->compact_call || st->cidle)
        return;                     /* the next write watches again */
    uint64_t due = st->wbuf, total = ldb_table_bytes(st->db);
    if (total / LDB_IDLE_SHARE > due)
        due = total / LDB_IDLE_SHARE;
    if (st->idle_bytes < due)
        return;
    st->idle_bytes = 0;
    if (ldb_read_depth(st->db) < 2)
        return;                     /* a read looks into one file already */
    char err[256];
    if (!st->compactor && !(st->compactor = bsync_new(st->host, err, sizeof err))) {
        ldb_log(st, BACKEND_LOG_WARN, "no compaction after writes stopped: %s", err);
        return;
    }
    if (ldb_compact_range_set(st, "", 0, NULL, 0) != BACKEND_OK)
        return;
    ldb_log(st, BACKEND_LOG_INFO, "compacting the store now that writes stopped (%llu MiB "
            "of tables), so that point reads look into one table file",
            (unsigned long long)(total >> 20));
    st->cdb = st->db;
    st->cidle = 1;
    st->cstart_us = now;
    bsync_start(st->compactor, ldb_compact_job, ldb_compact_done, st);
}

/* After an apply with writes: counts their bytes and watches for writes
 * to stop (see the top). */
static void ldb_note_writes(struct backend_store *st, const struct backend_write *w, size_t n)
{
    if (!st->idle_compact || !st->host)
        return;
    for (size_t i = 0; i < n; i++)
        st->idle_bytes += w[i].key_len + (w[i].op == BACKEND_PUT ? w[i].val_len : 0);
    st->last_write_us = clock_mono_us();
    if (!st->idle_timer)
        st->idle_timer = st->host->timer_add(st->host->arg, LDB_IDLE_MS, ldb_idle_tick, st);
}

/* The hint that [lo, hi) holds no live key (version 2): compacts it on the
 * worker (see the top). */
static int ldb_compact_v2(struct backend_store *st, const void *lo, size_t lo_len,
                          const void *hi, size_t hi_len, struct backend_call *call)
{
    backend_call_reset(call);
    const char *why = backend_check_bounds(lo, lo_len, hi, hi_len);
    if (st && !why && st->cidle && !st->cnext) {  /* wait for the idle compaction */
        if (ldb_copy_range(&st->nlo, &st->nlo_len, &st->nhi, &st->nhi_len, lo, lo_len, hi,
                           hi_len) != BACKEND_OK) {
            ldb_err(call->err, sizeof call->err, "compact: out of memory");
            return backend_call_end(call, BACKEND_NOMEM);
        }
        st->cnext = call;
        return BACKEND_PENDING;
    }
    if (!st || why || st->compact_call || st->cidle) {
        ldb_err(call->err, sizeof call->err, "compact: %s", !st ? "no store"
                : why ? "bad bounds" : "a compaction is in flight");
        return backend_call_end(call, BACKEND_INVALID);
    }
    leveldb_t *db = ldb_db(st, call->err, sizeof call->err);
    if (!db)
        return backend_call_end(call, BACKEND_IOERR);
    if (ldb_compact_range_set(st, lo, lo_len, hi, hi_len) != BACKEND_OK) {
        ldb_err(call->err, sizeof call->err, "compact: out of memory");
        return backend_call_end(call, BACKEND_NOMEM);
    }
    if (!st->host) {                /* no loop to keep going: compact here */
        st->cdb = db;
        ldb_compact_job(st);
        st->cdb = NULL;
        return backend_call_end(call, BACKEND_OK);
    }
    if (!st->compactor && !(st->compactor = bsync_new(st->host, call->err, sizeof call->err)))
        return backend_call_end(call, BACKEND_NOMEM);
    st->cdb = db;
    st->compact_call = call;
    st->cstart_us = clock_mono_us();
    bsync_start(st->compactor, ldb_compact_job, ldb_compact_done, st);
    return BACKEND_PENDING;
}

const struct backend_ops backend_leveldb_ops = {
    .version = 3,
    .name = "leveldb",
    .open = ldb_open,
    .close = ldb_close,
    .iter_open = ldb_iter_open,
    .iter_seek = ldb_iter_seek,
    .iter_next = ldb_iter_next,
    .iter_close = ldb_iter_close,
    .sync = ldb_sync,
    .caps = 0,
    .get_v2 = ldb_get_v2,
    .iter_next_v2 = ldb_iter_next_v2,
    .apply_v2 = ldb_apply_v2,
    .sync_v2 = ldb_sync_v2,
    .compact_v2 = ldb_compact_v2,
};
