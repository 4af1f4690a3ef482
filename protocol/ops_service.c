/* ops_service.c - account-level operations: CORS preflight (SPEC 3.17). */
#include "protocol/ctx.h"

/* OPTIONS: needs Origin and Access-Control-Request-Method; with no CORS
 * rule matching (no rules are configured yet) the service answers 403. */
void op_preflight(struct req_ctx *c)
{
    c->odata = 0;
    if (!request_header(c->req, "Origin") ||
        !request_header(c->req, "Access-Control-Request-Method")) {
        reply_error_msg(c, TERR_InvalidHeaderValue, "A required CORS header is not present.");
        return;
    }
    reply_error(c, TERR_CorsPreflightFailure);
}
