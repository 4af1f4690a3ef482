/* notify.c - sd_notify(3) at start and stop (see notify.h).
 *
 * The service manager's notification protocol, written out instead of
 * linked from libsystemd (whose libraries cost about 1 MiB of resident
 * memory for these two calls; doc/performance.md, Idle footprint):
 * NOTIFY_SOCKET names an AF_UNIX datagram socket, a path when it starts
 * with '/', an abstract name when it starts with '@'; each message is one
 * datagram of NAME=VALUE lines. sd_notify(3) documents this protocol as
 * stable, with the same reference implementation. Other socket kinds
 * (vsock:) and a missing variable mean no service manager listens: then
 * nothing is sent. */
#include "server/notify.h"

#include <config.h> /* the build's, not server/config.h */
#ifndef PACKAGE_VERSION
#error "configure's config.h was not included"
#endif

#ifdef WITH_SD_NOTIFY
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Sends msg as one datagram to $NOTIFY_SOCKET. Returns 1 when sent, 0
 * when no service manager asked for it, -1 on an error (errno set). */
int notify_send(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@') || !path[1])
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n > sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, n);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0';     /* abstract namespace */
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    if (path[0] == '/' && n < sizeof sa.sun_path)
        len++;                     /* the path's terminating NUL */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    ssize_t w = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == (ssize_t)strlen(msg) ? 1 : -1;
}

/* READY=1 once the listeners are open; systemd then starts dependants. */
void notify_ready(const char *status)
{
    char msg[512];
    snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s", status);
    notify_send(msg);
}

/* STOPPING=1 as soon as the drain begins. */
void notify_stopping(void)
{
    notify_send("STOPPING=1");
}
#else
/* Configured with --disable-sd-notify: the installed unit is Type=simple. */
int notify_send(const char *msg)
{
    (void)msg;
    return 0;
}

void notify_ready(const char *status)
{
    (void)status;
}

void notify_stopping(void)
{
}
#endif
