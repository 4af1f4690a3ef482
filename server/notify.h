/* notify.h - tells the service manager (systemd) that tabled is ready or
 * stopping, so a Type=notify unit is "active" only once the listeners
 * accept connections. Does nothing when tabled was configured with
 * --disable-sd-notify (the unit is then Type=simple) or runs outside
 * systemd (no NOTIFY_SOCKET). */
#ifndef TABLED_NOTIFY_H
#define TABLED_NOTIFY_H

/* Sends msg (NAME=VALUE lines) as one datagram to $NOTIFY_SOCKET: 1 when
   sent, 0 when nobody asked for it (no or an unsupported NOTIFY_SOCKET,
   or notifications configured off), -1 on an error (errno set). */
int notify_send(const char *msg);
/* After the ready banner: READY=1 with a STATUS= line. */
void notify_ready(const char *status);
/* When a stop signal arrived and the server drains: STOPPING=1. */
void notify_stopping(void);

#endif
