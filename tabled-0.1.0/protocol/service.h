/* service.h - the Table service: the one entry point core/ calls.
 *
 * service_handle() runs one request to completion (within one event-loop
 * turn) and fills the response, including the common headers
 * (x-ms-request-id, x-ms-version, Date, Server, client-request-id echo). */
#ifndef TABLED_SERVICE_H
#define TABLED_SERVICE_H

#include "backends/backend.h"
#include "core/config.h"
#include "core/http.h"

struct service;

/* The service keeps pointers to cfg, ops and st; they must outlive it. */
struct service *service_new(const struct config *cfg, const struct backend_ops *ops,
                            struct backend_store *st, char *err, size_t errlen);
void service_free(struct service *svc);

void service_handle(struct service *svc, struct request *req, struct response *resp);

/* Group commit: 1 when writes were applied since the last service_sync(). */
int service_dirty(const struct service *svc);
/* Makes the writes durable (backend sync). 0 or a backend status. */
int service_sync(struct service *svc);

/* Fills resp with an error answer for a request core/ could not even parse
 * (limits, malformed HTTP): status + the service's error body. */
void service_error(struct service *svc, struct request *req, struct response *resp, int terr);

/* Turns on throttling (t), fault injection (f) and metrics (m); each may
 * be NULL (off). The service uses them but does not own them. With m, the
 * entities of every account are counted once (a scan of the store) and the
 * counts kept current from then on (an existence check per entity put).
 * Returns 0, or -1 with a message (the scan failed). */
struct throttle;
struct fault_set;
struct metrics;
int service_attach(struct service *svc, struct throttle *t, struct fault_set *f,
                   struct metrics *m, char *err, size_t errlen);

#endif
