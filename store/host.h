/* host.h - the event-loop services a backend borrows (struct backend_host
 * of backends/backend.h), on a libevent event_base.
 *
 * The server makes one host over its event_base and passes host_hooks() in
 * backend_options.host; a backend then waits for a timer or a socket
 * without blocking the loop. The test programs do the same around the
 * event_base they run until a deferred call completes. */
#ifndef TABLED_STORE_HOST_H
#define TABLED_STORE_HOST_H

#include <event2/event.h>

#include "backends/backend.h"

struct host;

/* A host on base (which must outlive it). NULL when out of memory. */
struct host *host_new(struct event_base *base);

/* The hooks to pass in backend_options.host; valid until host_free. */
const struct backend_host *host_hooks(struct host *h);

/* Frees the host. Every backend using it must be closed first (a closed
 * backend has cancelled its timers and dropped its watches). */
void host_free(struct host *h);

#endif
