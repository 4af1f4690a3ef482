/* admin.h - the admin listener's requests: metrics, health, fault rules.
 *
 * The admin listener is a separate socket (--admin-port, bound to
 * --admin-host, 127.0.0.1 by default) served by the same connection code
 * as the table endpoints; a connection accepted there is answered by
 * admin_handle() and never reaches the Table service, and no table
 * endpoint reaches this code. No authentication: keep it on loopback.
 *
 *   GET  /healthz             200 "ok"
 *   GET  /metrics             Prometheus text format 0.0.4 (core/metrics.h)
 *   GET  /faults              {"rules":[...]} with each rule's counters
 *   PUT  /faults              replace every rule: a JSON array of rule
 *                             objects, or {"rules":[...]}; all or nothing
 *   DELETE /faults            remove every rule
 *   GET  /faults/NAME         one rule
 *   PUT  /faults/NAME         add or replace one rule (a JSON object; 201
 *                             when it is new, 200 when replaced)
 *   DELETE /faults/NAME       remove it (204, or 404)
 * A rule object uses the keys of core/fault.h ("busy", "timeout",
 * "timeout_delay_ms", "latency_ms", "table", ...); numbers, strings and
 * booleans are accepted, and the counters GET shows ("matched",
 * "injected") are ignored, so a GET answer can be PUT back. Errors answer
 * 400/404/405 with {"error":"message"}. */
#ifndef TABLED_ADMIN_H
#define TABLED_ADMIN_H

#include "core/http.h"

struct admin;
struct metrics;
struct fault_set;

/* Neither pointer is owned; faults may be NULL (the /faults endpoints then
 * answer 404). */
struct admin *admin_new(struct metrics *m, struct fault_set *faults);
void admin_free(struct admin *adm);

/* Answers one request of the admin listener (fills resp). */
void admin_handle(struct admin *adm, const struct request *req, struct response *resp);

#endif
