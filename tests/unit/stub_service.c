/* stub_service.c - a stand-in for protocol/service.c used by test_http.
 *
 * service_handle() answers 200 with a text body that echoes what core/
 * parsed (method, path, query, headers, body), so the test can check the
 * HTTP layer byte for byte. Request headers steer it:
 *   x-dirty: 1        the request "wrote" something: service_dirty() is 1
 *                     until the next service_sync()
 *   x-sync-fail: 1    like x-dirty, and the next service_sync() fails
 *   x-close: 1        the response asks core/ to close the connection
 *   x-status: N       answer with status N
 *   x-big: N          answer with an N-byte body of 'x'
 *   x-evil: 1         add headers core/ must not send as given (its own
 *                     Content-Length/Connection, a value with CR LF)
 * GET /syncs answers with the number of successful service_sync() calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/http.h"
#include "protocol/errors.h"
#include "protocol/service.h"

struct service {
    int dirty;
    int fail_next_sync;
    int syncs;
    unsigned long seq;
};

struct service *service_new(const struct config *cfg, struct store *store, char *err,
                            size_t errlen)
{
    (void)cfg;
    (void)store;
    (void)err;
    (void)errlen;
    return calloc(1, sizeof(struct service));
}

void service_free(struct service *svc)
{
    free(svc);
}

/* Common headers the real service adds (enough for the access log). */
static void add_common(struct service *svc, struct response *resp)
{
    response_headerf(resp, "x-ms-request-id", "stub-%lu", ++svc->seq);
}

int service_handle(struct service *svc, struct request *req, struct response *resp,
                   void (*done)(void *token), void *token)
{
    (void)done;
    (void)token;
    const char *v;
    add_common(svc, resp);
    if ((v = request_header(req, "x-dirty")) && strcmp(v, "1") == 0)
        svc->dirty = 1;
    if ((v = request_header(req, "x-sync-fail")) && strcmp(v, "1") == 0) {
        svc->dirty = 1;
        svc->fail_next_sync = 1;
    }
    if ((v = request_header(req, "x-close")) && strcmp(v, "1") == 0)
        resp->close = 1;
    resp->status = 200;
    if ((v = request_header(req, "x-status")))
        resp->status = atoi(v);
    response_header(resp, "Content-Type", "text/plain");
    if ((v = request_header(req, "x-evil")) && strcmp(v, "1") == 0) {
        response_header(resp, "Content-Length", "999");
        response_header(resp, "connection", "upgrade");
        response_header(resp, "X-Split", "a\r\nInjected: yes");
        response_header(resp, "X-Fine", "kept");
    }
    if (req->method == HTTP_M_GET && strcmp(req->path, "/syncs") == 0) {
        buf_printf(&resp->body, "%d", svc->syncs);
        return 1;
    }
    if ((v = request_header(req, "x-big"))) {
        size_t n = strtoul(v, NULL, 10);
        buf_reserve(&resp->body, n);
        memset(resp->body.data, 'x', n);
        resp->body.len = n;
        resp->body.data[n] = '\0';
        return 1;
    }
    buf_printf(&resp->body, "method=%s(%d)\npath=%s\nquery=%s\ntls=%d\n", req->method_name,
               (int)req->method, req->path, req->query, req->tls);
    for (size_t i = 0; i < req->nheaders; i++)
        buf_printf(&resp->body, "h:%s=%s|\n", req->headers[i].name, req->headers[i].value);
    if (req->body)
        buf_printf(&resp->body, "body[%zu]=%s\n", req->body_len, req->body);
    else
        buf_puts(&resp->body, "nobody\n");
    return 1;
}

int service_dirty(const struct service *svc)
{
    return svc->dirty;
}

int service_sync(struct service *svc)
{
    if (svc->fail_next_sync) {
        svc->fail_next_sync = 0;
        svc->dirty = 0;
        return -2;
    }
    svc->dirty = 0;
    svc->syncs++;
    return 0;
}

void service_error(struct service *svc, struct request *req, struct response *resp, int terr)
{
    (void)req;
    const struct terr_info *ti = terr_info((enum terr)terr);
    add_common(svc, resp);
    resp->status = ti->status;
    resp->close = 1;
    response_header(resp, "Content-Type", "text/plain");
    buf_printf(&resp->body, "error=%s", ti->code);
}
