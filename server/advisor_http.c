/* advisor_http.c - the advisor's admin endpoints (see advisor_http.h). */
#include "server/advisor_http.h"

#include <string.h>

#include "advisor/advisor.h"
#include "core/clock.h"

/* advisor_dashboard_html[]: the page, generated from server/dashboard.html. */
#include "server/dashboard_html.h"

/* 405 with Allow. */
static void not_allowed(struct response *resp, const char *allow)
{
    resp->status = 405;
    response_header(resp, "Allow", allow);
    response_header(resp, "Content-Type", "application/json");
    buf_puts(&resp->body, "{\"error\":\"method not allowed\"}\n");
}

int advisor_http_handle(struct advisor *adv, const struct request *req, struct response *resp)
{
    const char *p = req->path;
    size_t n = req->path_len;
    int read = req->method == HTTP_M_GET || req->method == HTTP_M_HEAD;
    if (n == 8 && !memcmp(p, "/advisor", 8)) {
        if (read) {
            resp->status = 200;
            response_header(resp, "Content-Type", "application/json");
            response_header(resp, "Cache-Control", "no-store");
            advisor_json(adv, clock_mono_us(), &resp->body);
        } else if (req->method == HTTP_M_DELETE) {
            advisor_reset(adv, clock_mono_us());
            resp->status = 204;
        } else {
            not_allowed(resp, "GET, HEAD, DELETE");
        }
        return 1;
    }
    if (n == 10 && !memcmp(p, "/dashboard", 10)) {
        if (!read) {
            not_allowed(resp, "GET, HEAD");
            return 1;
        }
        resp->status = 200;
        response_header(resp, "Content-Type", "text/html; charset=utf-8");
        response_header(resp, "Cache-Control", "no-store");
        /* the page loads nothing from elsewhere, and may not */
        response_header(resp, "Content-Security-Policy",
                        "default-src 'self'; script-src 'unsafe-inline'; "
                        "style-src 'unsafe-inline'; img-src 'self' data:");
        buf_append(&resp->body, advisor_dashboard_html, sizeof advisor_dashboard_html);
        return 1;
    }
    return 0;
}
