/* ops_service.c - CORS: the preflight operation (doc/protocol.md, Preflight requests) and the CORS
 * headers of actual requests (doc/protocol.md, CORS), evaluated against the account's
 * stored rules (ops_props.c). */
#include <string.h>

#include "protocol/ops/ops_props.h"
#include "protocol/ctx.h"

/* OPTIONS: needs Origin and Access-Control-Request-Method; answers 200
 * with the Access-Control-* headers when a rule allows the request, else
 * 403. Never authenticated; the addressed resource need not exist. */
void op_preflight(struct req_ctx *c)
{
    c->odata = 0;
    const char *origin = request_header(c->req, "Origin");
    const char *method = request_header(c->req, "Access-Control-Request-Method");
    if (!origin || !method) {
        reply_error_msg(c, TERR_InvalidHeaderValue, "A required CORS header is not present.");
        return;
    }
    const char *headers = request_header(c->req, "Access-Control-Request-Headers");
    const struct cors_rules *rs = props_cors_rules(c->svc, c->account->name);
    int i = cors_match_preflight(rs, origin, method, headers);
    if (i < 0) {
        reply_error(c, TERR_CorsPreflightFailure);
        return;
    }
    struct response *r = c->resp;
    r->status = 200;
    response_header(r, "Access-Control-Allow-Origin", origin);
    response_header(r, "Access-Control-Allow-Methods", method);
    if (headers)
        response_header(r, "Access-Control-Allow-Headers", headers);
    response_headerf(r, "Access-Control-Max-Age", "%lld", (long long)rs->r[i].max_age);
    response_header(r, "Access-Control-Allow-Credentials", "true");
}

/* Comma-separated names of the headers the response carries (what an
 * ExposedHeaders "*" exposes). */
static const char *response_header_names(struct req_ctx *c)
{
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < c->resp->nheaders; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_puts(&b, c->resp->headers[i].name);
    }
    const char *s = arena_strndup(c->a, b.data ? b.data : "", b.len);
    buf_free(&b);
    return s;
}

/* The CORS headers of an actual request: cors_actual() decides, row by
 * row of the service's Vary table (doc/protocol.md, CORS). */
void op_cors_headers(struct req_ctx *c)
{
    if (c->op == OP_PREFLIGHT || !c->account)
        return;
    const char *origin = request_header(c->req, "Origin");
    const struct cors_rules *rs = props_cors_rules(c->svc, c->account->name);
    struct cors_answer ans;
    cors_actual(rs, origin, c->req->method_name, &ans);
    struct response *r = c->resp;
    if (ans.rule >= 0) {
        const struct cors_rule *rule = &rs->r[ans.rule];
        const char *exposed = rule->exposed_headers;
        if (strcmp(exposed, "*") == 0)
            exposed = response_header_names(c);
        response_header(r, "Access-Control-Allow-Origin", ans.any ? "*" : origin);
        if (*exposed)
            response_header(r, "Access-Control-Expose-Headers", exposed);
        if (!ans.any)
            response_header(r, "Access-Control-Allow-Credentials", "true");
    }
    if (ans.vary)
        response_header(r, "Vary", "Origin");
}
