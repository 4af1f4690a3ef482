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

#endif
