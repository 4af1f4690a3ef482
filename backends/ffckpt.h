/* ffckpt.h - the flat-file backend's index checkpoint (doc/storage.md,
 * "Index checkpoint").
 *
 * A checkpoint is a file holding the index as it was when a key-order
 * walk of it began (every live key with its value's location and length,
 * ascending), and the log position that walk started at: opening loads it
 * in one ordered pass (no sort) and replays only the log records from that
 * position on. It is written through a temporary file, fsynced and renamed
 * (ffckpt_commit), and checked on load (ffckpt_load): header and body
 * checksums, key order, bounds. Whether it belongs to the log at hand is
 * the caller's check (the log's file id and a checksum of the log bytes
 * just before the start position, both in the header).
 *
 * File format (integers little-endian):
 *   header, 80 bytes: "TBLDFCKP", u32 version (1), u32 header size (80),
 *     u64 log file id, u64 start (replay the log from here),
 *     u64 need (the log must hold at least this many bytes: values the
 *     walk met past start lie below it), u64 epoch (above every record
 *     epoch of the log up to need), u64 entry count, u64 body bytes,
 *     u32 CRC-32C of the log bytes [max(32, start - 4096), start),
 *     u32 CRC-32C of the body, u32 reserved (0), u32 CRC-32C of bytes 0-75
 *   body, one entry per live key in key order:
 *     u32 key length, u32 value length, u64 value offset in the log, key */
#ifndef TABLED_FFCKPT_H
#define TABLED_FFCKPT_H
#include <stddef.h>
#include <stdint.h>

#include "backends/ffindex.h"

#define FFCKPT_HDR_SIZE 80u
#define FFCKPT_ENT_HDR 16u          /* key length, value length, offset */
#define FFCKPT_TAIL_CHECK 4096u     /* log bytes before start that are checksummed */

/* What a checkpoint says about the log it covers. */
struct ffckpt_meta {
    uint64_t file_id;               /* the log's, from its header */
    uint64_t start;                 /* replay the log from here */
    uint64_t need;                  /* the log holds at least this much */
    uint64_t epoch;                 /* above every epoch up to need */
    uint64_t count;                 /* entries */
    uint32_t tail_crc;              /* log bytes before start */
};

/* A checkpoint being written: entries are buffered and appended to the
 * temporary file; the header goes in last. */
struct ffckpt_writer {
    int fd;                         /* the temporary file, -1 when none */
    uint64_t off;                   /* file bytes written (header room included) */
    uint64_t count;
    uint32_t crc;                   /* of the body so far */
    uint8_t *buf;
    size_t len, cap;
};

/* Creates dirfd/tmp (replacing one left over) for a new checkpoint. 0 or
 * -errno. */
int ffckpt_begin(struct ffckpt_writer *w, int dirfd, const char *tmp);
/* Adds one entry; keys must come in ascending order. 0 or -errno. */
int ffckpt_add(struct ffckpt_writer *w, const uint8_t *key, uint32_t klen, uint32_t vlen,
               uint64_t loc);
/* Bytes the writer has produced so far (body and header room). */
static inline uint64_t ffckpt_size(const struct ffckpt_writer *w)
{
    return w->off + w->len;
}
/* Writes the header (m's fields, count from the writer), fdatasyncs,
 * renames tmp to name, fsyncs the directory and closes the file. 0 or
 * -errno (the temporary file is removed). */
int ffckpt_commit(struct ffckpt_writer *w, int dirfd, const char *tmp, const char *name,
                  const struct ffckpt_meta *m);
/* Drops an unfinished checkpoint and its temporary file (no-op when none). */
void ffckpt_abort(struct ffckpt_writer *w, int dirfd, const char *tmp);

/* Loads dirfd/name into the empty index ix (nodes with loc[parity] set)
 * and fills m. 1 when loaded; 0 when there is no usable checkpoint (why
 * says what was wrong, empty when the file is absent; ix is left empty);
 * -1 when out of memory (ix left empty). Checks the header and body
 * checksums, the key order and that every value lies below m->need. The
 * body is read once, checksummed and built in the same pass; the nodes
 * of a body that fails its checksum are freed. */
int ffckpt_load(int dirfd, const char *name, struct ffidx *ix, int parity,
                struct ffckpt_meta *m, uint64_t *file_bytes, char *why, size_t whylen);

#endif
