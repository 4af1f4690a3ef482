/* ffckpt.c - writing and loading the flat-file index checkpoint (format in
 * ffckpt.h and doc/storage.md). */
#include "backends/ffckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/bfs.h"
#include "backends/bkey.h"
#include "backends/checks.h"
#include "backends/crc32c.h"
#include "backends/lecode.h"

#define FFCKPT_MAGIC "TBLDFCKP"
#define FFCKPT_VERSION 1u
#define FFCKPT_FLUSH (1u << 20)     /* buffered entry bytes written at once */

/* A fresh temporary file with room for the header. */
int ffckpt_begin(struct ffckpt_writer *w, int dirfd, const char *tmp)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (unlinkat(dirfd, tmp, 0) != 0 && errno != ENOENT)
        return -errno;
    int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    w->fd = fd;
    w->off = FFCKPT_HDR_SIZE;
    return 0;
}

/* Writes the buffered entries after what is in the file, and starts
 * their writeback so that the final fdatasync has little left. */
static int ffckpt_flush(struct ffckpt_writer *w)
{
    if (!w->len)
        return 0;
    int r = bfs_pwrite_all(w->fd, w->buf, w->len, w->off);
    if (r < 0)
        return r;
    sync_file_range(w->fd, (off_t)w->off, (off_t)w->len, SYNC_FILE_RANGE_WRITE);
    w->off += w->len;
    w->len = 0;
    return 0;
}

/* Appends one entry to the buffer (flushed when it is full). */
int ffckpt_add(struct ffckpt_writer *w, const uint8_t *key, uint32_t klen, uint32_t vlen,
               uint64_t loc)
{
    size_t need = w->len + FFCKPT_ENT_HDR + klen;
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : FFCKPT_FLUSH + FFCKPT_ENT_HDR + BACKEND_KEY_MAX;
        while (cap < need)
            cap *= 2;
        uint8_t *b = realloc(w->buf, cap);
        if (!b)
            return -ENOMEM;
        w->buf = b;
        w->cap = cap;
    }
    uint8_t *p = w->buf + w->len;
    le_put32(p, klen);
    le_put32(p + 4, vlen);
    le_put64(p + 8, loc);
    memcpy(p + FFCKPT_ENT_HDR, key, klen);
    w->crc = crc32c_extend(w->crc, p, FFCKPT_ENT_HDR + klen);
    w->len = need;
    w->count++;
    return w->len >= FFCKPT_FLUSH ? ffckpt_flush(w) : 0;
}

/* Header, fdatasync, rename, directory fsync: after it the checkpoint is
 * in place whatever happens; before it the old one (if any) is. */
int ffckpt_commit(struct ffckpt_writer *w, int dirfd, const char *tmp, const char *name,
                  const struct ffckpt_meta *m)
{
    int r = ffckpt_flush(w);
    if (r == 0) {
        uint8_t h[FFCKPT_HDR_SIZE] = {0};
        memcpy(h, FFCKPT_MAGIC, 8);
        le_put32(h + 8, FFCKPT_VERSION);
        le_put32(h + 12, FFCKPT_HDR_SIZE);
        le_put64(h + 16, m->file_id);
        le_put64(h + 24, m->start);
        le_put64(h + 32, m->need);
        le_put64(h + 40, m->epoch);
        le_put64(h + 48, w->count);
        le_put64(h + 56, w->off - FFCKPT_HDR_SIZE);
        le_put32(h + 64, m->tail_crc);
        le_put32(h + 68, w->crc);
        le_put32(h + 76, crc32c_extend(0, h, 76));
        r = bfs_pwrite_all(w->fd, h, sizeof h, 0);
    }
    while (r == 0 && fdatasync(w->fd) != 0)
        if (errno != EINTR)
            r = -errno;
    if (r == 0 && renameat(dirfd, tmp, dirfd, name) != 0)
        r = -errno;
    if (r < 0) {
        ffckpt_abort(w, dirfd, tmp);
        return r;
    }
    /* Renamed: a failed directory fsync leaves either name after a crash,
       and both are complete checkpoints or absent. */
    r = bfs_fsync_dir(dirfd);
    close(w->fd);
    w->fd = -1;
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
    return r;
}

void ffckpt_abort(struct ffckpt_writer *w, int dirfd, const char *tmp)
{
    if (w->fd >= 0) {
        close(w->fd);
        unlinkat(dirfd, tmp, 0);
    }
    w->fd = -1;
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

/* Builds the nodes of a verified body, in order. 1, 0 (why set) or -1. */
static int ffckpt_build(const uint8_t *p, const uint8_t *end, uint64_t count, struct ffidx *ix,
                        int parity, uint64_t need, char *why, size_t whylen)
{
    struct skl_node *tail[SKL_MAX_HEIGHT] = {NULL};
    /* node bytes to expect: the keys, the node, 1.33 forward pointers on
       average, alignment (the body has 16 bytes per entry besides keys) */
    ix->arena_hint = (uint64_t)(end - p) +
                     count * (sizeof(struct ffidx_node) + 11 + 8 - FFCKPT_ENT_HDR) + 4096;
    const uint8_t *prev = NULL;
    uint32_t prevlen = 0;
    for (uint64_t i = 0; i < count; i++) {
        if ((size_t)(end - p) < FFCKPT_ENT_HDR)
            goto bad;
        uint32_t kl = le_get32(p), vl = le_get32(p + 4);
        uint64_t loc = le_get64(p + 8);
        p += FFCKPT_ENT_HDR;
        if (kl == 0 || kl > BACKEND_KEY_MAX || vl > BACKEND_VAL_MAX || (size_t)(end - p) < kl ||
            loc > need || vl > need - loc ||
            (prev && bkey_cmp(prev, prevlen, p, kl) >= 0))
            goto bad;
        struct ffidx_node *n = ffidx_node_arena(ix, p, kl);
        if (!n) {
            ffidx_free(ix);
            return -1;
        }
        n->vlen = vl;
        n->loc[parity] = loc;
        ffidx_append(ix, n, tail);
        prev = p;
        prevlen = kl;
        p += kl;
    }
    if (p == end)
        return 1;
bad:
    snprintf(why, whylen, "its entries do not parse");
    ffidx_free(ix);
    return 0;
}

int ffckpt_load(int dirfd, const char *name, struct ffidx *ix, int parity,
                struct ffckpt_meta *m, uint64_t *file_bytes, char *why, size_t whylen)
{
    why[0] = 0;
    *file_bytes = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            snprintf(why, whylen, "cannot open it: %s", strerror(errno));
        return 0;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < FFCKPT_HDR_SIZE) {
        snprintf(why, whylen, "it is shorter than its header");
        close(fd);
        return 0;
    }
    uint64_t size = (uint64_t)sb.st_size;
    uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(why, whylen, "cannot map it: %s", strerror(errno));
        return 0;
    }
    madvise(map, size, MADV_SEQUENTIAL);
    int rc = 0;
    if (memcmp(map, FFCKPT_MAGIC, 8) != 0 || le_get32(map + 76) != crc32c_extend(0, map, 76)) {
        snprintf(why, whylen, "its header is damaged");
        goto out;
    }
    if (le_get32(map + 8) != FFCKPT_VERSION || le_get32(map + 12) != FFCKPT_HDR_SIZE) {
        snprintf(why, whylen, "unknown version %u", le_get32(map + 8));
        goto out;
    }
    m->file_id = le_get64(map + 16);
    m->start = le_get64(map + 24);
    m->need = le_get64(map + 32);
    m->epoch = le_get64(map + 40);
    m->count = le_get64(map + 48);
    m->tail_crc = le_get32(map + 64);
    uint64_t body = le_get64(map + 56);
    if (body != size - FFCKPT_HDR_SIZE || m->start > m->need ||
        m->count > body / (FFCKPT_ENT_HDR + 1)) {
        snprintf(why, whylen, "it is cut short or its header does not add up");
        goto out;
    }
    if (crc32c_extend(0, map + FFCKPT_HDR_SIZE, body) != le_get32(map + 68)) {
        snprintf(why, whylen, "its entries fail their checksum");
        goto out;
    }
    rc = ffckpt_build(map + FFCKPT_HDR_SIZE, map + size, m->count, ix, parity, m->need, why,
                      whylen);
    if (rc == 1)
        *file_bytes = size;
out:
    munmap(map, size);
    return rc;
}
