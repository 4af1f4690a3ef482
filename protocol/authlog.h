/* authlog.h - one diagnostic log line per refused request: why the
 * credentials were refused, for the person reading the server's log (the
 * wire answer stays the service's). Rate-limited per reason (core/log.h). */
#ifndef TABLED_AUTHLOG_H
#define TABLED_AUTHLOG_H

#include "protocol/ctx.h"

/* Logs the refusal e of request c whose reason auth left in ar (auth_check's
 * result): at info level the reason, the request (id, method, path without
 * its query, client address) and the answer's code; at debug level also the
 * string to sign the server computed. */
void authlog_refusal(struct req_ctx *c, enum terr e, const struct auth_result *ar);

/* auth_authorize() of op under c->auth, logging a refusal as above (a batch
 * sub-operation, or an insert whose keys come from its body). */
enum terr authlog_authorize(struct req_ctx *c, const struct auth_op *op);

#endif
