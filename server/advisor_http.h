/* advisor_http.h - the partition advisor on the admin listener:
 *
 *   GET    /advisor     findings and per-table summaries (JSON; README
 *                       "Partition advisor" documents the schema)
 *   DELETE /advisor     forget what was counted (204)
 *   GET    /dashboard   a self-contained HTML page polling /advisor
 *
 * The page is server/dashboard.html, turned into a C array at build time
 * (server/Makefile.inc), so the binary serves it with no files around. */
#ifndef TABLED_ADVISOR_HTTP_H
#define TABLED_ADVISOR_HTTP_H
#include <stdint.h>

#include "core/http.h"

struct advisor;

/* Answers req when its path is one of the above: 1, else 0 (untouched). */
int advisor_http_handle(struct advisor *adv, const struct request *req, struct response *resp);

#endif
