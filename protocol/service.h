/* service.h - the Table service: the entry points server/main.c registers
 * with the server wing (server/handler.h, struct req_handler).
 *
 * service_handle() runs one request and fills the response, including the
 * common headers (x-ms-request-id, x-ms-version, Date, Server,
 * client-request-id echo). */
#ifndef TABLED_SERVICE_H
#define TABLED_SERVICE_H

#include "core/account.h"
#include "core/http.h"

struct service;

/* What the service needs of the application's settings; server/ fills it
 * from the configuration (server/main.c). Restart-only settings:
 * the service keeps a copy. */
struct service_settings {
    const struct account_cfg *accounts; /* the served accounts; keys may be
                                           replaced in place (a reload) */
    size_t naccounts;
    int auth;                         /* 1 = verify requests, 0 = --auth off */
    int oauth_basic;                  /* Azurite-style bearer check */
    int strict_versions;              /* refuse unknown x-ms-version values */
    int path_style_only;              /* the account always from the path */
    int scan_budget;                  /* entities examined per page; 0 = unlimited */
    int scan_budget_ms;               /* time cut per page; 0 = none */
    int throttle_batch_per_request;   /* account bucket: a batch costs 1 */
    int throttle_retry_after;         /* Retry-After seconds on 503s; 0 = none */
};

/* The service keeps a copy of set and a pointer to store (which must
 * outlive it) and to set->accounts (which must too). */
struct store;
struct service *service_new(const struct service_settings *set, struct store *store,
                            char *err, size_t errlen);
/* Serves the secondary endpoint's reads from store (a read-only store over
 * replicas of the primary's database, store_replica_sync_time; it must
 * outlive the service) instead of the primary's; Get Table Service Stats
 * then tells its sync time. 0, or -1 with a message. */
int service_set_secondary(struct service *svc, struct store *store, char *err, size_t errlen);

/* Before service_free on a store whose calls complete later: starts no
 * more background work and turns the loop (wait_once(arg), one turn) until
 * the requests and the background step that wait on the store are over
 * (their cursors closed, their answers handed over), for at most max_ms.
 * Whatever still waits then is dropped by service_free. */
void service_quiesce(struct service *svc, void (*wait_once)(void *arg), void *arg, int max_ms);
void service_free(struct service *svc);

/* Answers req into resp. Returns 1 when resp is complete now. Returns 0
 * when the store completes its calls later (kv_defers): the request then
 * runs on its own coroutine (core/coro.h), other requests are served
 * meanwhile, and done(token) is called once, from the event loop, when
 * resp is complete; req and resp must stay valid and untouched until then. */
int service_handle(struct service *svc, struct request *req, struct response *resp,
                   void (*done)(void *token), void *token);

/* POST /import of the admin listener (server/admin.h): writes the lines
 * of a tabled export file in req's body (codec/dump_line.h: the header
 * line first, then any lines of the file) into the store, as
 * protocol/ops/ops_import.c describes; the answer is JSON. Returns and calls
 * done as service_handle does. The caller has admitted the request (the
 * admin token); nothing of the Table service's authentication applies. */
int service_import(struct service *svc, struct request *req, struct response *resp,
                   void (*done)(void *token), void *token);

/* Group commit: 1 when writes were applied since the last service_sync(). */
int service_dirty(const struct service *svc);
/* Makes the writes durable (backend sync). 0 or a backend status. */
int service_sync(struct service *svc);

/* Background work, one bounded step per call: removing the entities of
 * deleted tables (store/purge.h) and probing a store whose writes
 * failed (an apply() of no writes, at most once a second) until they work.
 * Returns the milliseconds after which to call again (0: at the next loop
 * turn, after the sockets), or -1: nothing to do until the wake callback
 * is called. */
int service_background(struct service *svc);
/* The callback by which the service asks core/ for a service_background()
 * call soon (when a table is deleted, a write fails, ...); called at once
 * when work is pending already (purges a restart resumes). */
void service_set_wake(struct service *svc, void (*wake)(void *arg), void *arg);

/* Fills resp with an error answer for a request the server wing could not
 * parse or keep (limits, malformed HTTP, timeout): status + the service's
 * error body, the Table error terr_from_http_fail(why). */
void service_error(struct service *svc, struct request *req, struct response *resp,
                   enum http_fail why);

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

/* Turns on the partition advisor (advisor/advisor.h; not owned, NULL = off):
 * every answered entity operation is then recorded there. */
struct advisor;
void service_attach_advisor(struct service *svc, struct advisor *adv);

#endif
