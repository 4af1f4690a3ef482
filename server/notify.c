/* notify.c - sd_notify(3) at start and stop (see notify.h). */
#include "server/notify.h"

#include <config.h> /* the build's, not server/config.h */
#ifndef PACKAGE_VERSION
#error "configure's config.h was not included"
#endif

#ifdef HAVE_LIBSYSTEMD
#include <stdio.h>
#include <systemd/sd-daemon.h>

/* READY=1 once the listeners are open; systemd then starts dependants. */
void notify_ready(const char *status)
{
    sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

/* STOPPING=1 as soon as the drain begins. */
void notify_stopping(void)
{
    sd_notify(0, "STOPPING=1");
}
#else
/* Built without libsystemd: the installed unit is Type=simple. */
void notify_ready(const char *status)
{
    (void)status;
}

void notify_stopping(void)
{
}
#endif
