/* bfs.c - file-system helpers of the durable backends (see bfs.h). */
#include "backends/bfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backends/backend.h"

int bfs_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

uint64_t bfs_write_zeros(int fd, uint64_t from, uint64_t to)
{
    static uint8_t zeros[64 << 10]; /* never written (.bss; resident once read) */
    uint64_t start = from;
    while (from < to) {
        struct iovec iov[16];
        int k = 0;
        uint64_t len = 0;
        while (k < 16 && from + len < to) {
            size_t c = to - from - len < sizeof zeros ? (size_t)(to - from - len) : sizeof zeros;
            iov[k++] = (struct iovec){(void *)zeros, c};
            len += c;
        }
        ssize_t w = pwritev(fd, iov, k, (off_t)from);
        if (w <= 0)
            break;
        from += (uint64_t)w;
    }
    /* start their writeback now, so that the next sync finds little to do */
    if (from > start)
        sync_file_range(fd, (off_t)start, (off_t)(from - start), SYNC_FILE_RANGE_WRITE);
    return from;
}

int bfs_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -EIO;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int bfs_mkdir_p(const char *path)
{
    size_t len = strlen(path);
    if (len == 0)
        return -EINVAL;
    char *tmp = malloc(len + 1);
    if (!tmp)
        return -ENOMEM;
    memcpy(tmp, path, len + 1);
    int rc = 0;
    for (size_t i = 1; i <= len && rc == 0; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0')
            continue;
        char saved = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            rc = -errno;
        tmp[i] = saved;
    }
    if (rc == 0) {
        struct stat sb;
        if (stat(path, &sb) != 0)
            rc = -errno;
        else if (!S_ISDIR(sb.st_mode))
            rc = -ENOTDIR;
    }
    free(tmp);
    return rc;
}

int bfs_fsync_dir(int dirfd)
{
    while (fsync(dirfd) != 0) {
        if (errno != EINTR)
            return -errno;
    }
    return 0;
}

int bfs_lock(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int bfs_status(int e)
{
    if (e < 0)
        e = -e;
    return e == ENOSPC || e == EDQUOT ? BACKEND_FULL : BACKEND_IOERR;
}
