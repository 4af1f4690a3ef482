/* bfs.h - small file-system helpers shared by the durable backends: full
 * reads and writes at an offset, zeros written ahead of a log, mkdir -p, directory fsync, the data
 * directory lock and errno-to-status mapping. (Options are parsed by
 * option rows: backends/bopts.h.) */
#ifndef TABLED_BFS_H
#define TABLED_BFS_H
#include <stddef.h>
#include <stdint.h>

/* Writes all n bytes at off (retrying short writes and EINTR). Returns 0
 * or -errno; after a failure some prefix may have been written. */
int bfs_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
/* Writes zeros over [from, to) (in writes of up to 1 MiB) and starts
 * their writeback (sync_file_range), for the zeros a log keeps written
 * ahead of its end. Returns how far the zeros reach: to, or less when a
 * write failed or came up short (the caller tries again later). */
uint64_t bfs_write_zeros(int fd, uint64_t from, uint64_t to);
/* Reads exactly n bytes at off. Returns 0, -errno, or -EIO at end of file. */
int bfs_pread_all(int fd, void *buf, size_t n, uint64_t off);
/* Creates path and its missing parents (mode 0755). 0 or -errno. */
int bfs_mkdir_p(const char *path);
/* fsync() of a directory, so that created, renamed and removed names in it
 * are durable. 0 or -errno. */
int bfs_fsync_dir(int dirfd);
/* Opens (creating) dir/name and takes an exclusive flock on it, so that two
 * processes never open one data directory. Returns the fd, or -errno
 * (-EWOULDBLOCK when another process holds it). */
int bfs_lock(int dirfd, const char *name);
/* BACKEND_FULL for ENOSPC/EDQUOT, else BACKEND_IOERR (e is a positive or
 * negative errno). */
int bfs_status(int e);

#endif
