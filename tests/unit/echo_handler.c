/* echo_handler.c - the wing tests' request handler (see echo_handler.h). */
#include "tests/unit/echo_handler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/http.h"
#include "core/metrics.h"

/* One answer made later. */
struct later {
    struct echo *e;
    struct later *next;          /* e->later */
    struct request *req;
    struct response *resp;
    void (*done)(void *token);
    void *token;
    struct event *ev;            /* x-defer-ms; NULL for x-defer-hold */
    unsigned long seen, done_before;
};

struct echo {
    int dirty;
    int fail_next_sync;
    int syncs;
    unsigned long seq;           /* handle calls */
    unsigned long completed;     /* deferred answers completed */
    size_t pending;
    struct later *later;         /* every answer outstanding */
    struct event_base *base;
    const struct metrics *metrics;
    struct event *release_ev;    /* completes the held answers */
};

struct echo *echo_new(void)
{
    struct echo *e = calloc(1, sizeof *e);
    if (!e)
        abort();
    return e;
}

void echo_attach(struct echo *e, struct event_base *base, const struct metrics *m)
{
    e->base = base;
    e->metrics = m;
}

/* Unlinks and frees one outstanding answer. */
static void later_free(struct later *l)
{
    struct echo *e = l->e;
    for (struct later **pp = &e->later; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    if (l->ev)
        event_free(l->ev);
    e->pending--;
    free(l);
}

void echo_free(struct echo *e)
{
    while (e->later)
        later_free(e->later);
    if (e->release_ev)
        event_free(e->release_ev);
    free(e);
}

/* Common headers a real service adds (enough for the access log). */
static void add_common(struct echo *e, struct response *resp)
{
    response_headerf(resp, "x-ms-request-id", "echo-%lu", e->seq);
    resp->request_id = response_get_header(resp, "x-ms-request-id");
}

/* Fills resp for req: the steering headers, then the echo. seen and
 * done_before are the counters at the time req was handed over. */
static void answer(struct echo *e, struct request *req, struct response *resp,
                   unsigned long seen, unsigned long done_before)
{
    const char *v;
    add_common(e, resp);
    if ((v = request_header(req, "x-dirty")) && strcmp(v, "1") == 0)
        e->dirty = 1;
    if ((v = request_header(req, "x-sync-fail")) && strcmp(v, "1") == 0) {
        e->dirty = 1;
        e->fail_next_sync = 1;
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
        buf_printf(&resp->body, "%d", e->syncs);
        return;
    }
    if (req->method == HTTP_M_GET && strcmp(req->path, "/stats") == 0) {
        buf_printf(&resp->body, "pending=%zu done=%lu open=%lld", e->pending, e->completed,
                   e->metrics ? (long long)e->metrics->open_conns : -1LL);
        return;
    }
    if ((v = request_header(req, "x-big"))) {
        size_t n = strtoul(v, NULL, 10);
        buf_reserve(&resp->body, n);
        memset(resp->body.data, 'x', n);
        resp->body.len = n;
        resp->body.data[n] = '\0';
        return;
    }
    buf_printf(&resp->body, "method=%s(%d)\npath=%s\nquery=%s\ntls=%d\nseen=%lu\ndone=%lu\n",
               req->method_name, (int)req->method, req->path, req->query, req->tls, seen,
               done_before);
    for (size_t i = 0; i < req->nheaders; i++)
        buf_printf(&resp->body, "h:%s=%s|\n", req->headers[i].name, req->headers[i].value);
    if (req->body)
        buf_printf(&resp->body, "body[%zu]=%s\n", req->body_len, req->body);
    else
        buf_puts(&resp->body, "nobody\n");
}

/* Completes one deferred answer: fills it now (the wing must have kept
 * req and resp intact) and hands it back. */
static void later_complete(struct later *l)
{
    struct echo *e = l->e;
    answer(e, l->req, l->resp, l->seen, l->done_before);
    void (*done)(void *) = l->done;
    void *token = l->token;
    e->completed++;
    later_free(l);
    done(token);
}

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    later_complete(arg);
}

/* Completes every held answer (x-defer-hold) in this one callback. */
static void release_cb(evutil_socket_t fd, short what, void *arg)
{
    struct echo *e = arg;
    (void)fd;
    (void)what;
    struct later *l = e->later;
    while (l) {
        struct later *next = l->next;
        if (!l->ev)
            later_complete(l);
        l = next;
    }
}

static int echo_handle(void *arg, struct request *req, struct response *resp,
                       void (*done)(void *token), void *token)
{
    struct echo *e = arg;
    unsigned long seen = e->seq++;
    const char *ms = request_header(req, "x-defer-ms");
    const char *hold = request_header(req, "x-defer-hold");
    if (strcmp(req->path, "/release") == 0 && e->base) {
        if (!e->release_ev && !(e->release_ev = evtimer_new(e->base, release_cb, e)))
            abort();
        static const struct timeval now = {0, 0};
        evtimer_add(e->release_ev, &now);
    }
    if ((!ms && !hold) || !e->base) {
        answer(e, req, resp, seen, e->completed);
        return 1;
    }
    struct later *l = calloc(1, sizeof *l);
    if (!l)
        abort();
    *l = (struct later){.e = e, .next = e->later, .req = req, .resp = resp, .done = done,
                        .token = token, .seen = seen, .done_before = e->completed};
    if (ms) {
        long v = atol(ms);
        struct timeval tv = {v / 1000, (v % 1000) * 1000};
        if (!(l->ev = evtimer_new(e->base, later_cb, l)))
            abort();
        evtimer_add(l->ev, &tv);
    }
    e->later = l;
    e->pending++;
    return 0;
}

/* The wing's own error answers: a status and the reason's name. */
static void echo_fail(void *arg, struct request *req, struct response *resp, enum http_fail why)
{
    struct echo *e = arg;
    (void)req;
    static const struct {
        int status;
        const char *code;
    } map[] = {
        [HTTP_FAIL_HEADERS_TOO_LARGE] = {431, "RequestHeaderFieldsTooLarge"},
        [HTTP_FAIL_BAD_REQUEST] = {400, "InvalidInput"},
        [HTTP_FAIL_BODY_TOO_LARGE] = {413, "RequestBodyTooLarge"},
        [HTTP_FAIL_TIMEOUT] = {500, "OperationTimedOut"},
    };
    e->seq++;
    add_common(e, resp);
    int known = why >= HTTP_FAIL_HEADERS_TOO_LARGE && why <= HTTP_FAIL_TIMEOUT;
    resp->status = known ? map[why].status : 599;
    resp->close = 1;
    response_header(resp, "Content-Type", "text/plain");
    buf_printf(&resp->body, "error=%s", known ? map[why].code : "unknown");
}

static int echo_dirty(void *arg)
{
    struct echo *e = arg;
    return e->dirty;
}

static int echo_sync(void *arg)
{
    struct echo *e = arg;
    e->dirty = 0;
    if (e->fail_next_sync) {
        e->fail_next_sync = 0;
        return -2;
    }
    e->syncs++;
    return 0;
}

struct req_handler echo_handler(struct echo *e)
{
    return (struct req_handler){.arg = e, .handle = echo_handle, .fail = echo_fail,
                                .dirty = echo_dirty, .sync = echo_sync};
}
