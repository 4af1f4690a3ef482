/* notify.h - tells the service manager (systemd) that tabled is ready or
 * stopping, so a Type=notify unit is "active" only once the listeners
 * accept connections. Does nothing when tabled was built without
 * libsystemd (the unit is then Type=simple) or runs outside systemd. */
#ifndef TABLED_NOTIFY_H
#define TABLED_NOTIFY_H

/* After the ready banner: READY=1 with a STATUS= line. */
void notify_ready(const char *status);
/* When a stop signal arrived and the server drains: STOPPING=1. */
void notify_stopping(void);

#endif
