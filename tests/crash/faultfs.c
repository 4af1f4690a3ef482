/* faultfs.c - injected disk errors for the durability tests.
 *
 * Defines write, pwrite, pwrite64, writev, fdatasync and fsync. Linked
 * into a test program (test_backend) it replaces the C library's versions
 * for the whole process, LevelDB's shared library included; built as a
 * shared object and LD_PRELOADed it does the same for a running tabled.
 * Disarmed, every call goes straight to the system call.
 *
 * Armed with a path prefix, writes to files whose path starts with it may
 * write `budget` more bytes in total and then fail with ENOSPC (a write
 * crossing the limit is cut short first, as on a full disk), and when
 * fail_sync is set fdatasync/fsync of such files fail: with EIO (1) or
 * ENOSPC (2, as a file system that allocates at writeback reports a full
 * disk).
 *
 * A small disk: with a free size set (faultfs_set_free, or FREE in the
 * control file), statvfs() of a path under the prefix reports that many
 * bytes free (and available) instead of the truth.
 *
 * Control: faultfs_arm()/faultfs_disarm() in-process, or, when the
 * environment names a control file in FAULTFS_CTL, that file: absent means
 * disarmed, "PREFIX BUDGET FAIL_SYNC [FREE]" arms (BUDGET -1: writes pass;
 * FREE absent or -1: statvfs tells the truth). It is re-read whenever it
 * changes. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

void faultfs_arm(const char *prefix, long long budget, int fail_sync);
void faultfs_disarm(void);
void faultfs_set_free(long long bytes);
long long faultfs_failures(void);

static char fault_prefix[PATH_MAX];
static size_t fault_plen;
static long long fault_budget = -1;     /* -1: writes pass */
static int fault_sync;                  /* fail fdatasync/fsync: 1 EIO, 2 ENOSPC */
static long long fault_free = -1;       /* statvfs's free bytes; -1: the truth */
static long long fault_count;           /* calls made to fail */
static const char *fault_ctl;           /* FAULTFS_CTL, or NULL */
static struct stat fault_ctl_sb;
static int fault_ctl_seen;

void faultfs_arm(const char *prefix, long long budget, int fail_sync)
{
    snprintf(fault_prefix, sizeof(fault_prefix), "%s", prefix);
    fault_plen = strlen(fault_prefix);
    fault_budget = budget;
    fault_sync = fail_sync;
}

void faultfs_disarm(void)
{
    fault_budget = -1;
    fault_sync = 0;
    fault_free = -1;
}

void faultfs_set_free(long long bytes)
{
    fault_free = bytes;
}

long long faultfs_failures(void)
{
    return fault_count;
}

__attribute__((constructor))
static void fault_init(void)
{
    const char *c = getenv("FAULTFS_CTL");
    fault_ctl = c && *c ? c : NULL;
}

/* Re-reads the control file when it appeared, changed or vanished. */
static void fault_poll(void)
{
    if (!fault_ctl)
        return;
    struct stat sb;
    if (stat(fault_ctl, &sb) != 0) {
        if (fault_ctl_seen)
            faultfs_disarm();
        fault_ctl_seen = 0;
        return;
    }
    if (fault_ctl_seen && sb.st_mtim.tv_sec == fault_ctl_sb.st_mtim.tv_sec &&
        sb.st_mtim.tv_nsec == fault_ctl_sb.st_mtim.tv_nsec && sb.st_size == fault_ctl_sb.st_size &&
        sb.st_ino == fault_ctl_sb.st_ino)
        return;
    fault_ctl_sb = sb;
    fault_ctl_seen = 1;
    char buf[PATH_MAX + 64] = "";
    int fd = open(fault_ctl, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    char prefix[PATH_MAX];
    long long budget, free_bytes = -1;
    int fs;
    if (sscanf(buf, "%4095s %lld %d %lld", prefix, &budget, &fs, &free_bytes) >= 3) {
        faultfs_arm(prefix, budget, fs);
        faultfs_set_free(free_bytes);
    }
}

/* 1 when fd is a file under the armed prefix. */
static int fault_match(int fd)
{
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n < 0)
        return 0;
    path[n] = 0;
    return strncmp(path, fault_prefix, fault_plen) == 0;
}

/* How many of n bytes may go to fd now: n, fewer, or -1 (ENOSPC). */
static long long fault_allow(int fd, size_t n)
{
    fault_poll();
    if (fault_budget < 0 || n == 0 || !fault_match(fd))
        return (long long)n;
    if (fault_budget == 0) {
        fault_count++;
        errno = ENOSPC;
        return -1;
    }
    long long k = (long long)n < fault_budget ? (long long)n : fault_budget;
    fault_budget -= k;
    return k;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    long long k = fault_allow(fd, n);
    if (k < 0)
        return -1;
    return syscall(SYS_write, fd, buf, (size_t)k);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    long long k = fault_allow(fd, n);
    if (k < 0)
        return -1;
    return syscall(SYS_pwrite64, fd, buf, (size_t)k, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    long long k = fault_allow(fd, total);
    if (k < 0)
        return -1;
    if ((size_t)k == total)
        return syscall(SYS_writev, fd, iov, cnt);
    /* cut short: write the first k bytes only */
    ssize_t done = 0;
    for (int i = 0; i < cnt && k > 0; i++) {
        size_t part = iov[i].iov_len < (size_t)k ? iov[i].iov_len : (size_t)k;
        ssize_t w = syscall(SYS_write, fd, iov[i].iov_base, part);
        if (w < 0)
            return done ? done : -1;
        done += w;
        k -= w;
        if ((size_t)w < part)
            break;
    }
    return done;
}

/* 1 when a sync of fd must fail. */
static int fault_sync_fails(int fd)
{
    fault_poll();
    if (!fault_sync || !fault_match(fd))
        return 0;
    fault_count++;
    errno = fault_sync == 2 ? ENOSPC : EIO;
    return 1;
}

int fdatasync(int fd)
{
    if (fault_sync_fails(fd))
        return -1;
    return (int)syscall(SYS_fdatasync, fd);
}

int fsync(int fd)
{
    if (fault_sync_fails(fd))
        return -1;
    return (int)syscall(SYS_fsync, fd);
}

/* 1 when path (resolved) lies under the armed prefix. */
static int fault_path_match(const char *path)
{
    char real[PATH_MAX];
    if (!fault_plen || !realpath(path, real))
        return 0;
    return strncmp(real, fault_prefix, fault_plen) == 0;
}

/* statvfs/statvfs64: the C library's answer, with the free space of a
 * small disk when one is set for the path. */
int statvfs(const char *path, struct statvfs *sb)
{
    static int (*next)(const char *, struct statvfs *);
    if (!next)
        next = (int (*)(const char *, struct statvfs *))dlsym(RTLD_NEXT, "statvfs");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    int rc = next(path, sb);
    fault_poll();
    if (rc == 0 && fault_free >= 0 && fault_path_match(path) && sb->f_frsize) {
        sb->f_bfree = (fsblkcnt_t)(fault_free / (long long)sb->f_frsize);
        sb->f_bavail = sb->f_bfree;
    }
    return rc;
}

int statvfs64(const char *path, struct statvfs64 *sb)
{
    static int (*next)(const char *, struct statvfs64 *);
    if (!next)
        next = (int (*)(const char *, struct statvfs64 *))dlsym(RTLD_NEXT, "statvfs64");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    int rc = next(path, sb);
    fault_poll();
    if (rc == 0 && fault_free >= 0 && fault_path_match(path) && sb->f_frsize) {
        sb->f_bfree = (fsblkcnt64_t)(fault_free / (long long)sb->f_frsize);
        sb->f_bavail = sb->f_bfree;
    }
    return rc;
}
