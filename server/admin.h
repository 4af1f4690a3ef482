/* admin.h - the admin listener's requests: metrics, health, fault rules.
 *
 * The admin listener is a separate socket (--admin-port, bound to
 * --admin-host, 127.0.0.1 by default) served by the same connection code
 * as the table endpoints; a connection accepted there is answered by
 * admin_handle() and never reaches the Table service, and no table
 * endpoint reaches this code. Every request first passes the Host and
 * bearer-token checks of server/admin_access.h (403 / 401 when it does not).
 *
 *   GET  /healthz             200 "ok"; 503 "read-only: ..." while writes
 *                             to the store fail (disk full) and are retried
 *   GET  /metrics             Prometheus text format 0.0.4 (core/metrics.h)
 *   GET  /faults              {"rules":[...]} with each rule's counters
 *   PUT  /faults              replace every rule: a JSON array of rule
 *                             objects, or {"rules":[...]}; all or nothing
 *   DELETE /faults            remove every rule
 *   GET  /faults/NAME         one rule
 *   PUT  /faults/NAME         add or replace one rule (a JSON object; 201
 *                             when it is new, 200 when replaced)
 *   DELETE /faults/NAME       remove it (204, or 404)
 *   GET  /advisor, /dashboard the partition advisor (server/advisor_http.h),
 *                             once admin_set_advisor() gave one
 *   GET  /export[?account=A&table=T]  the export file (tools/dump.h) of a
 *                             consistent snapshot, chunked, once
 *                             admin_set_export() gave a producer
 *   POST /import              lines of an export file (its header line
 *                             first) written into the store, once
 *                             admin_set_import() gave a consumer
 *                             (protocol/ops/ops_import.c; JSON answer)
 * A rule object uses the keys of guard/fault.h ("busy", "timeout",
 * "timeout_delay_ms", "latency_ms", "table", ...); numbers, strings and
 * booleans are accepted, and the counters GET shows ("matched",
 * "injected") are ignored, so a GET answer can be PUT back. Errors answer
 * 400/401/403/404/405/500/501/503 with {"error":"message"}. */
#ifndef TABLED_ADMIN_H
#define TABLED_ADMIN_H

#include "core/http.h"

struct admin;
struct config;
struct metrics;
struct fault_set;

/* Neither pointer is owned; faults may be NULL (the /faults endpoints then
 * answer 404). */
struct admin *admin_new(struct metrics *m, struct fault_set *faults);
void admin_free(struct admin *adm);
/* Takes the access rules (token, allowed Hosts, listener address) from
 * cfg; until called, only loopback Hosts are answered and no token is
 * needed. cfg is not kept. */
void admin_set_access(struct admin *adm, const struct config *cfg);
/* Serves the partition advisor's endpoints (not owned). */
struct advisor;
void admin_set_advisor(struct admin *adm, struct advisor *adv);

/* Serves GET /export: start fills s (its filters are copied by start) and
 * returns 0, or 404 (no such table), 503 (another export runs: answered
 * with Retry-After), 501 (not on this store) or 500 with a message in
 * err. */
struct response_stream;
typedef int (*admin_export_fn)(void *arg, const char *account, const char *table,
                               struct response_stream *s, char *err, size_t errlen);
void admin_set_export(struct admin *adm, admin_export_fn start, void *arg);

/* Serves POST /import: fn answers as a struct req_handler's handle does
 * (server/handler.h: 1 when resp is complete now, else 0 and done(token)
 * later). Until set, /import answers 503. */
typedef int (*admin_import_fn)(void *arg, struct request *req, struct response *resp,
                               void (*done)(void *token), void *token);
void admin_set_import(struct admin *adm, admin_import_fn fn, void *arg);

/* The answer to a request the admin listener could not parse or keep
 * (why): its HTTP status with a JSON message; the connection closes. */
void admin_refuse(struct response *resp, enum http_fail why);

/* Answers one request of the admin listener into resp: 1 when complete
 * now; 0 when it comes later (POST /import on a store whose calls
 * complete later), through done(token) as handler.h describes. */
int admin_handle(struct admin *adm, struct request *req, struct response *resp,
                 void (*done)(void *token), void *token);

#endif
