/* conn.c - one client connection: llhttp parsing into a struct request,
 * handing it to the registered handler (server/handler.h), serialising the
 * response, keep-alive, pipelining, limits, timeouts and closing.
 *
 * Memory: the request-target and header text of the request being parsed
 * are copied into c->head (reused across requests), its body into c->body;
 * the struct request points into those two buffers and into c->arena, all
 * three reset once the response has been serialised. Responses are written
 * into the connection's output buffer (or c->pending while a group commit
 * is outstanding), so nothing of a request outlives its turn.
 *
 * I/O: plain sockets use raw libevent events with read() into a shared
 * buffer, parsed in place, and one writev() of all replies a read produced
 * (about two system calls per request; the write event is armed only when
 * the socket is full). TLS connections go through bufferevent_openssl.
 *
 * Closing: a connection that closes after its last answer (Connection:
 * close, or an early answer such as 413 to a body still arriving) lingers
 * first, plain or TLS alike: it reads and discards input until EOF, for at
 * most srv->linger_tv and CONN_LINGER_BYTES, then closes (TLS: with
 * close_notify). Closing at once would make the kernel answer the
 * client's unread bytes with a reset, which destroys the answer before
 * the client, still writing its body, has read it (conn_finish).
 *
 * Ordering: requests of one connection are handled one after another as
 * llhttp completes them, so pipelined replies go out in order by
 * construction. Functions called from llhttp callbacks never free the
 * connection; only the top-level libevent callbacks do, as their last step.
 *
 * Deferred answers: when the handler answers later (handle() returns 0),
 * c->waiting is set until its done(c) call: the parser is paused after
 * that request (pipelined bytes wait in c->in), reading stops, the timer
 * is off, and nothing frees c. Whatever would have freed it meanwhile (a
 * failed write of an earlier reply, a write deadline, a failed group
 * commit) marks it broken instead (conn_drop); conn_done then frees it and
 * drops the answer. Otherwise conn_done sends the answer exactly as if it
 * had come at once (group commit, injected delay, keep-alive) and parses
 * on.
 *
 * Injected faults (guard/fault.h): an answer with delay_ms goes into
 * c->pending like a held one, and the connection stops parsing and reading
 * until a per-connection timer releases it, so the loop never waits; an
 * answer with reset is dropped and the socket closed with SO_LINGER 0,
 * which sends an RST. Every connection is answered by the handler of the
 * listener that accepted it (c->h): the server's, an extra listener's, or
 * the admin listener's (server.c, over server/admin.h).
 *
 * Limits (all from struct config): a connection whose unsent output is
 * above max_conn_output_bytes, or that owes output while the process holds
 * more than max_total_output_bytes, starts no further request until its
 * output has drained (conn_output_blocked); near that process limit query
 * pages are kept short (struct request's reply_budget). A request head
 * must arrive within the header timeout (from accept for the first one),
 * the whole request within the request timeout. srv->conns is kept in
 * order of last activity, so at the connection cap the idlest connection
 * is closed for a newcomer (conn_evict_idlest). */
#include "server/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "core/coding.h"
#include "core/arena.h"
#include "core/clock.h"
#include "core/http.h"
#include "core/log.h"
#include "core/metrics.h"
#include "server/tls.h"

#define CONN_ARENA_CHUNK (16 * 1024)
/* Smallest reply budget (struct request) while the process is over its
 * output limit: query pages of about this size, with a continuation. */
#define CONN_REPLY_FLOOR (64 * 1024)
/* Bodies at least this large are handed to the evbuffer, not copied (the
 * response then gets a new buffer of the same size for the next reply). */
#define CONN_BODY_STEAL (16 * 1024)
/* ... up to this size. A larger body (a query page of up to 4 MiB) is
 * copied in pieces of CONN_BODY_PIECE bytes, each freed once written: a
 * body handed over whole would stay in memory until its last byte is
 * written, while only its unsent part counts against the output limits. */
#define CONN_BODY_STEAL_MAX (256 * 1024)
#define CONN_BODY_PIECE (256 * 1024 - 512)  /* a chain with its header in 256 KiB */
/* Largest body buffer reserved up front from an announced Content-Length
 * (a client announcing 4 MiB and sending nothing should not cost 4 MiB). */
#define CONN_RESERVE_MAX (1024 * 1024)
/* Per-connection buffers larger than this are freed after a request. */
#define CONN_KEEP_BYTES (64 * 1024)
/* A streamed body (struct response_stream) is made in pieces of about
 * this size, one per loop turn, while less than CONN_STREAM_HIGH bytes of
 * the connection's output are unsent. */
#define CONN_STREAM_PIECE (256 * 1024)
#define CONN_STREAM_HIGH (1024 * 1024)
/* A lingering connection (conn_finish) is closed once it has discarded this
 * many bytes of input, or after srv->linger_tv, whichever comes first. */
#define CONN_LINGER_BYTES ((size_t)64 * 1024 * 1024)

/* Where one header's name and value sit in c->head. */
struct hspan {
    size_t name_off, name_len;
    size_t value_off, value_len;
};

struct conn {
    struct server *srv;
    struct conn *prev, *next;   /* srv->conns */
    struct conn *held_next;     /* srv->held */
    struct bufferevent *bev;    /* TLS only */
    struct event *rev, *wev;    /* plain only: readable / writable */
    struct evbuffer *in, *out;  /* plain only: unparsed input, unsent output */
    int fd;
    int tls;
    const struct req_handler *h;/* answers its requests (srv->handler or an
                                   extra listener's) */
    char peer_ip[64];

    llhttp_t parser;
    struct arena *arena;
    struct request req;
    struct response resp;       /* its body buffer is reused */
    struct buf head;            /* target + header text of the current request */
    struct hspan *spans;
    size_t nspans, spans_cap;
    struct buf body;
    size_t url_end;             /* target is head.data[0, url_end) */
    size_t trailer_bytes;
    int field_open, value_open;
    enum http_fail fail_why;    /* error chosen inside a callback, or 0 */

    unsigned in_msg : 1;        /* between message begin and complete */
    unsigned headers_done : 1;
    unsigned body_direct : 1;   /* in a Content-Length body: read into body */
    unsigned closing : 1;       /* no more requests; close once flushed */
    unsigned held : 1;          /* on srv->held */
    unsigned read_deferred : 1; /* input waits for the group commit */
    unsigned wpaused : 1;       /* parsing paused until output drains */
    unsigned lingering : 1;     /* write side shut, discarding input */
    unsigned eof : 1;           /* peer closed its side */
    unsigned broken : 1;        /* write failed: free at the next chance */
    unsigned delaying : 1;      /* an injected delay holds c->pending */
    unsigned reset : 1;         /* injected reset: RST at the next chance */
    unsigned served : 1;        /* a request has been answered */
    unsigned deadline : 1;      /* the timer is the whole-request deadline */
    unsigned waiting : 1;       /* the handler answers later (conn_done) */

    size_t out_held;            /* bytes in out/pending, counted in srv->out_total */
    size_t linger_bytes;        /* input discarded while lingering */
    struct evbuffer_cb_entry *out_cbe, *pending_cbe;  /* conn_out_cb on those */

    struct evbuffer *pending;   /* replies held for the group commit or a delay */
    struct event *timer;        /* header, idle and linger deadlines */
    struct event *delay_ev;     /* ends an injected delay (created on first use) */
    struct response_stream stream;  /* a body still being made, or fill NULL */
    struct event *stream_ev;    /* makes its next piece (created on first use) */
    struct buf stream_buf;      /* that piece */
};

static void request_release(struct conn *c, int close);
static void conn_reading(struct conn *c, int on);
static void conn_pump(struct conn *c);
static void conn_settle(struct conn *c);
static void conn_stream_wake(struct conn *c);
static void conn_done(void *token);
static void conn_drop(struct conn *c);

/* Turns reading back on once nothing stops the connection from taking its
 * next request: it is not closing, paused for output, holding replies for
 * a group commit or an injected delay, or waiting for a deferred answer. */
static void conn_read_on(struct conn *c)
{
    if (c->closing || c->lingering || c->wpaused || c->held || c->delaying || c->waiting)
        return;
    c->read_deferred = 0;
    conn_reading(c, 1);
}

/* Arms the connection's one timer. (A timer that expired in this loop turn
 * still runs its callback after being re-armed; the callback recognises
 * such stale expiries because the timer is pending again.) */
static void conn_arm(struct conn *c, const struct timeval *tv)
{
    c->deadline = 0;
    evtimer_add(c->timer, tv);
}

static void conn_arm_idle(struct conn *c)
{
    conn_arm(c, c->srv->idle_tv);
}

/* Microseconds left until the whole-request deadline of the request being
 * received (0 once it has passed). */
static uint64_t request_left_us(const struct conn *c)
{
    uint64_t deadline = c->req.start_us + (uint64_t)c->srv->request_timeout_ms * 1000u;
    uint64_t now = clock_mono_us();
    return deadline > now ? deadline - now : 0;
}

/* Inside a request body: the next bytes must come within the idle timeout,
 * and the whole request within the request timeout of its first byte (a
 * body trickled a byte at a time is cut there). */
static void conn_arm_body(struct conn *c)
{
    uint64_t left = request_left_us(c);
    if (left >= (uint64_t)c->srv->cfg->idle_timeout_ms * 1000u) {
        conn_arm_idle(c);
        return;
    }
    struct timeval tv = {(time_t)(left / 1000000u), (suseconds_t)(left % 1000000u)};
    evtimer_add(c->timer, &tv);
    c->deadline = 1;
}

/* ---- I/O helpers shared by the plain and TLS paths ---- */

static struct evbuffer *conn_input(struct conn *c)
{
    return c->bev ? bufferevent_get_input(c->bev) : c->in;
}

static struct evbuffer *conn_output(struct conn *c)
{
    return c->bev ? bufferevent_get_output(c->bev) : c->out;
}

/* Keeps srv->out_total (and c's share of it) equal to the bytes queued in
 * c's output and held-reply buffers, whoever adds or drains them. */
static void conn_out_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    struct conn *c = arg;
    (void)b;
    c->out_held += info->n_added;
    c->out_held -= info->n_deleted;
    c->srv->out_total += info->n_added;
    c->srv->out_total -= info->n_deleted;
}

/* Counts buffer b in the output totals (see conn_out_cb). */
static struct evbuffer_cb_entry *conn_count_output(struct conn *c, struct evbuffer *b)
{
    struct evbuffer_cb_entry *e = evbuffer_add_cb(b, conn_out_cb, c);
    if (!e)
        abort();
    return e;
}

/* Whether c must not start its next request yet: its unsent output is above
 * the per-connection limit, or the process holds more unsent output than
 * its limit and c owes some of it. A reply already built may exceed the
 * limits once; parsing resumes when c's output has drained (conn_pump), so
 * a client that pipelines and never reads holds at most one reply, and a
 * client with nothing owed is always answered. */
static int conn_output_blocked(struct conn *c)
{
    const struct config *cfg = c->srv->cfg;
    size_t mine = evbuffer_get_length(conn_output(c));
    return mine > cfg->max_conn_output_bytes ||
           (mine > 0 && c->srv->out_total > cfg->max_total_output_bytes);
}

/* Stops parsing and reading until c's output has drained. */
static void conn_pause_output(struct conn *c)
{
    c->wpaused = 1;
    conn_reading(c, 0);
}

/* Puts c at the head of srv->conns (most recently active first). */
static void conn_link_front(struct conn *c)
{
    struct server *srv = c->srv;
    c->prev = NULL;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    else
        srv->conns_tail = c;
    srv->conns = c;
}

static void conn_unlink(struct conn *c)
{
    struct server *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        srv->conns_tail = c->prev;
    c->prev = c->next = NULL;
}

/* Bytes moved on c: it is now the most recently active connection. */
static void conn_touch(struct conn *c)
{
    if (c->srv->conns == c)
        return;
    conn_unlink(c);
    conn_link_front(c);
}

/* Turns reading on or off (no system call when nothing changes). */
static void conn_reading(struct conn *c, int on)
{
    if (c->bev) {
        if (on)
            bufferevent_enable(c->bev, EV_READ);
        else
            bufferevent_disable(c->bev, EV_READ);
    } else if (on) {
        event_add(c->rev, NULL);
    } else {
        event_del(c->rev);
    }
}

/* ---- request parsing (llhttp callbacks) ---- */

/* Charges n more head bytes against max_header_bytes (text plus the ": "
 * and CRLF of each line). Fails with 431 when the head is too large. */
static int head_room(struct conn *c, size_t n)
{
    size_t used = c->head.len + n + 4 * (c->nspans + 1) + 16;
    if (used > c->srv->cfg->max_header_bytes) {
        c->fail_why = HTTP_FAIL_HEADERS_TOO_LARGE;
        return -1;
    }
    return 0;
}

/* Starts a new request: clears the per-request buffers, starts the header
 * deadline. */
static int on_message_begin(llhttp_t *p)
{
    struct conn *c = p->data;
    buf_reset(&c->head);
    buf_reset(&c->body);
    c->nspans = 0;
    c->url_end = 0;
    c->trailer_bytes = 0;
    c->field_open = c->value_open = 0;
    c->in_msg = 1;
    c->headers_done = 0;
    c->body_direct = 0;
    c->req.start_us = clock_mono_us();
    /* (A first request keeps the header deadline armed at accept.) */
    if (c->srv->header_tv && c->served)
        conn_arm(c, c->srv->header_tv);
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (head_room(c, len) < 0)
        return -1;
    buf_append(&c->head, at, len);
    return 0;
}

static int on_url_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    c->url_end = c->head.len;
    buf_putc(&c->head, '\0');
    return 0;
}

/* Trailer fields (after a chunked body) are counted but not kept. */
static int trailer_room(struct conn *c, size_t len)
{
    c->trailer_bytes += len;
    if (c->trailer_bytes > c->srv->cfg->max_header_bytes) {
        c->fail_why = HTTP_FAIL_HEADERS_TOO_LARGE;
        return -1;
    }
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (c->headers_done)
        return trailer_room(c, len);
    if (head_room(c, len) < 0)
        return -1;
    if (!c->field_open) {
        if (c->nspans == c->spans_cap) {
            size_t cap = c->spans_cap ? c->spans_cap * 2 : 32;
            struct hspan *s = realloc(c->spans, cap * sizeof *s);
            if (!s)
                abort();
            c->spans = s;
            c->spans_cap = cap;
        }
        c->spans[c->nspans].name_off = c->head.len;
        c->field_open = 1;
        c->value_open = 0;
    }
    buf_append(&c->head, at, len);
    return 0;
}

static int on_header_field_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    if (c->headers_done)
        return 0;
    if (!c->field_open)  /* cannot happen with llhttp; keep the spans sane */
        return -1;
    struct hspan *s = &c->spans[c->nspans];
    s->name_len = c->head.len - s->name_off;
    const unsigned char *name = (const unsigned char *)c->head.data + s->name_off;
    for (size_t i = 0; i < s->name_len; i++) {
        /* llhttp 8 lets a space inside or before the colon of a name
         * through; RFC 9112 5.1 wants a 400. */
        if (!http_is_tchar(name[i])) {
            c->fail_why = HTTP_FAIL_BAD_REQUEST;
            return -1;
        }
    }
    buf_putc(&c->head, '\0');
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (c->headers_done)
        return trailer_room(c, len);
    if (head_room(c, len) < 0)
        return -1;
    if (!c->value_open) {
        c->spans[c->nspans].value_off = c->head.len;
        c->value_open = 1;
    }
    buf_append(&c->head, at, len);
    return 0;
}

/* Ends one header line: trims the value and NUL-terminates it. */
static int on_header_value_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    if (c->headers_done)
        return 0;
    if (!c->field_open)
        return -1;
    struct hspan *s = &c->spans[c->nspans];
    if (!c->value_open)
        s->value_off = c->head.len;
    size_t off = s->value_off, end = c->head.len;
    while (off < end && (c->head.data[off] == ' ' || c->head.data[off] == '\t'))
        off++;
    while (end > off && (c->head.data[end - 1] == ' ' || c->head.data[end - 1] == '\t'))
        end--;
    s->value_off = off;
    s->value_len = end - off;
    c->head.len = end;
    buf_putc(&c->head, '\0');
    c->nspans++;
    c->field_open = c->value_open = 0;
    return 0;
}

/* Our method enum from llhttp's. */
static enum http_method map_method(uint8_t m)
{
    switch (m) {
    case HTTP_GET: return HTTP_M_GET;
    case HTTP_HEAD: return HTTP_M_HEAD;
    case HTTP_POST: return HTTP_M_POST;
    case HTTP_PUT: return HTTP_M_PUT;
    case HTTP_DELETE: return HTTP_M_DELETE;
    case HTTP_MERGE: return HTTP_M_MERGE;
    case HTTP_PATCH: return HTTP_M_PATCH;
    case HTTP_OPTIONS: return HTTP_M_OPTIONS;
    default: return HTTP_M_OTHER;
    }
}

/* A request with no fields, for errors found before the head was complete. */
static void request_blank(struct conn *c)
{
    struct request *r = &c->req;
    r->arena = c->arena;
    r->method = HTTP_M_OTHER;
    r->method_name = "-";
    r->http_major = 1;
    r->http_minor = 1;
    r->target = r->path = r->query = "";
    r->path_len = r->query_len = 0;
    r->headers = NULL;
    r->nheaders = 0;
    r->body = NULL;
    r->body_len = 0;
}

/* Points the struct request at the parsed head (c->head must not grow
 * after this until the response is written). */
static void request_build(struct conn *c)
{
    struct request *r = &c->req;
    llhttp_t *p = &c->parser;
    r->arena = c->arena;
    r->method = map_method(p->method);
    r->method_name = llhttp_method_name((llhttp_method_t)p->method);
    r->http_major = p->http_major;
    r->http_minor = p->http_minor;
    char *target = c->head.data;
    r->target = target;
    char *q = memchr(target, '?', c->url_end);
    if (q) {
        r->path_len = (size_t)(q - target);
        r->path = arena_strndup(c->arena, target, r->path_len);
        r->query = q + 1;
        r->query_len = c->url_end - r->path_len - 1;
    } else {
        r->path = target;
        r->path_len = c->url_end;
        r->query = "";
        r->query_len = 0;
    }
    r->nheaders = c->nspans;
    r->headers = c->nspans ? arena_alloc(c->arena, c->nspans * sizeof *r->headers) : NULL;
    for (size_t i = 0; i < c->nspans; i++) {
        r->headers[i].name = target + c->spans[i].name_off;
        r->headers[i].value = target + c->spans[i].value_off;
        r->headers[i].value_len = c->spans[i].value_len;
    }
    r->body = NULL;
    r->body_len = 0;
}

/* Writes the interim "100 Continue" (behind any held replies). */
static void send_continue(struct conn *c)
{
    static const char msg[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct evbuffer *out = c->held ? c->pending : conn_output(c);
    evbuffer_add(out, msg, sizeof msg - 1);
}

/* The head is complete: build the request, check the announced body size,
 * answer Expect: 100-continue. */
static int on_headers_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    const struct config *cfg = c->srv->cfg;
    if (!c->url_end) {  /* no request-target callback: treat as malformed */
        c->fail_why = HTTP_FAIL_BAD_REQUEST;
        return -1;
    }
    c->headers_done = 1;
    request_build(c);
    int has_len = (p->flags & F_CONTENT_LENGTH) != 0;
    int chunked = (p->flags & F_CHUNKED) != 0;
    if (has_len && p->content_length > cfg->max_body_bytes) {
        c->fail_why = HTTP_FAIL_BODY_TOO_LARGE;
        return -1;
    }
    if ((chunked || (has_len && p->content_length > 0)) &&
        (p->http_major > 1 || (p->http_major == 1 && p->http_minor >= 1))) {
        const char *expect = request_header(&c->req, "Expect");
        if (expect && strcasecmp(expect, "100-continue") == 0)
            send_continue(c);
    }
    if (has_len && p->content_length > 0)  /* one allocation for most bodies */
        buf_reserve(&c->body, p->content_length < CONN_RESERVE_MAX ? (size_t)p->content_length
                                                                    : CONN_RESERVE_MAX);
    if (chunked || (has_len && p->content_length > 0))
        conn_arm_body(c);  /* body progress and whole-request deadlines */
    c->body_direct = has_len && !chunked && p->content_length > 0;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (c->body.len + len > c->srv->cfg->max_body_bytes) {
        c->fail_why = HTTP_FAIL_BODY_TOO_LARGE;
        return -1;
    }
    if (c->body.data && at == c->body.data + c->body.len) {
        /* read straight into place by plain_read_cb: nothing to copy */
        c->body.len += len;
        c->body.data[c->body.len] = '\0';
        return 0;
    }
    buf_append(&c->body, at, len);
    return 0;
}

/* ---- responses ---- */

/* Starts a response for the current request, keeping the body buffer of
 * the previous one to avoid a malloc per request. */
static void response_begin(struct conn *c)
{
    struct buf keep = c->resp.body;
    response_init(&c->resp, c->arena);
    c->resp.body = keep;
    buf_reset(&c->resp.body);
}

/* Where replies go right now: held for the group commit while one is
 * outstanding (or this reply made the handler dirty), else the socket. */
static struct evbuffer *reply_buffer(struct conn *c)
{
    struct server *srv = c->srv;
    int hold = srv->sync_pending ||
               (srv->handler.dirty && srv->handler.dirty(srv->handler.arg));
    if (hold || c->delaying) {
        if (!c->pending) {
            c->pending = evbuffer_new();
            if (!c->pending)
                abort();
            c->pending_cbe = conn_count_output(c, c->pending);
        }
        if (hold && !c->held) {
            c->held = 1;
            c->held_next = srv->held;
            srv->held = c;
        }
        if (hold)
            server_want_sync(srv);
        return c->pending;
    }
    return conn_output(c);
}

/* Headers the wing writes itself (copies from the handler are dropped), and
 * headers that would break the framing (CR/LF inside: response splitting).
 * Sets *name_len to the length of the name. */
static int skip_header(const struct http_header *h, size_t *name_len)
{
    size_t n = 0;
    int bad = 0;
    for (const char *p = h->name; *p; p++, n++)
        bad |= *p == '\r' || *p == '\n' || *p == ':' || *p == ' ';
    *name_len = n;
    if ((n == 14 && strcasecmp(h->name, "Content-Length") == 0) ||
        (n == 10 && strcasecmp(h->name, "Connection") == 0) ||
        (n == 17 && strcasecmp(h->name, "Transfer-Encoding") == 0))
        return 1;
    if (bad || memchr(h->value, '\r', h->value_len) || memchr(h->value, '\n', h->value_len)) {
        log_warn("dropping response header %s: invalid characters", h->name);
        return 1;
    }
    return 0;
}

/* Appends the decimal form of v. */
static void put_uint(struct buf *b, size_t v)
{
    buf_reserve(b, 20);
    b->len += coding_u64_dec(v, b->data + b->len);
    b->data[b->len] = '\0';
}

static void free_cleanup(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    free(arg);
}

/* Serialises c->resp for c->req, logs it, and releases the request's
 * memory. close: add "Connection: close" and close after writing. */
static void conn_respond(struct conn *c, int close)
{
    struct server *srv = c->srv;
    struct request *req = &c->req;
    struct response *resp = &c->resp;
    struct buf *h = &srv->head;
    int status = resp->status >= 100 && resp->status <= 999 ? resp->status : 500;
    const char *reason = resp->reason ? resp->reason : http_reason(status);
    size_t blen = resp->body.len;

    buf_reset(h);
    buf_append(h, "HTTP/1.1 ", 9);
    put_uint(h, (size_t)status);
    buf_putc(h, ' ');
    buf_puts(h, reason);
    buf_append(h, "\r\n", 2);
    for (size_t i = 0; i < resp->nheaders; i++) {
        const struct http_header *hd = &resp->headers[i];
        size_t name_len;
        if (skip_header(hd, &name_len))
            continue;
        buf_append(h, hd->name, name_len);
        buf_append(h, ": ", 2);
        buf_append(h, hd->value, hd->value_len);
        buf_append(h, "\r\n", 2);
    }
    if (resp->stream.fill && !resp->no_body) {
        /* A streamed body: chunked, and the connection closes after it. */
        buf_puts(h, "Transfer-Encoding: chunked\r\n");
        close = 1;
        blen = 0;
        c->stream = resp->stream;
        memset(&resp->stream, 0, sizeof resp->stream);
    } else {
        if (resp->stream.free)
            resp->stream.free(resp->stream.arg);
        memset(&resp->stream, 0, sizeof resp->stream);
        buf_append(h, "Content-Length: ", 16);
        put_uint(h, blen);
        buf_append(h, "\r\n", 2);
    }
    if (close)
        buf_puts(h, "Connection: close\r\n");
    else if (req->http_major == 1 && req->http_minor == 0)
        buf_puts(h, "Connection: keep-alive\r\n");
    buf_append(h, "\r\n", 2);

    struct evbuffer *out = reply_buffer(c);
    size_t sent = 0;
    evbuffer_add(out, h->data, h->len);
    if (!resp->no_body && blen) {
        if (blen > CONN_BODY_STEAL_MAX) {
            for (size_t off = 0; off < blen; off += CONN_BODY_PIECE)
                evbuffer_add(out, resp->body.data + off,
                             blen - off < CONN_BODY_PIECE ? blen - off : CONN_BODY_PIECE);
        } else if (blen >= CONN_BODY_STEAL) {
            char *data = resp->body.data;
            if (evbuffer_add_reference(out, data, blen, free_cleanup, data) == 0) {
                buf_init(&resp->body);
                if (blen < CONN_KEEP_BYTES)
                    buf_reserve(&resp->body, blen);   /* no regrowing next time */
            } else
                evbuffer_add(out, data, blen);
        } else {
            evbuffer_add(out, resp->body.data, blen);
        }
        sent = blen;
    }

    if (srv->cfg->access_log) {
        log_access(req->method_name, req->path, status, sent, clock_mono_us() - req->start_us,
                   resp->request_id);
        server_note_access(srv);
    }
    request_release(c, close);
    if (c->stream.fill)
        conn_stream_wake(c);
}

/* Ends a streamed body: frees its producer (the last chunk, when ok, is
 * queued by the caller). */
static void conn_stream_end(struct conn *c)
{
    if (c->stream.free)
        c->stream.free(c->stream.arg);
    memset(&c->stream, 0, sizeof c->stream);
    buf_free(&c->stream_buf);
}

/* Whether the stream may make its next piece now: its head has been sent
 * (no group commit or delay holds it) and little output is unsent, in c
 * and in the process (the output limits of conn_output_blocked). */
static int conn_stream_room(struct conn *c)
{
    size_t mine = evbuffer_get_length(conn_output(c));
    size_t high = c->srv->cfg->max_conn_output_bytes < CONN_STREAM_HIGH
                      ? c->srv->cfg->max_conn_output_bytes : CONN_STREAM_HIGH;
    return !c->held && !c->delaying && !c->broken && mine < high &&
           !(mine > 0 && c->srv->out_total > c->srv->cfg->max_total_output_bytes);
}

/* Makes one piece of the streamed body as one chunk; asks for another
 * turn while there is room, else the write side's conn_pump does. */
static void conn_stream_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->stream.fill || !conn_stream_room(c)) {
        conn_settle(c);
        return;
    }
    struct buf *b = &c->stream_buf;
    buf_reset(b);
    int r = c->stream.fill(c->stream.arg, b, CONN_STREAM_PIECE);
    struct evbuffer *out = conn_output(c);
    if (r >= 0 && b->len) {
        char len[24];
        int n = snprintf(len, sizeof len, "%zx\r\n", b->len);
        evbuffer_add(out, len, (size_t)n);
        evbuffer_add(out, b->data, b->len);
        evbuffer_add(out, "\r\n", 2);
    }
    if (r <= 0) {
        if (r == 0)
            evbuffer_add(out, "0\r\n\r\n", 5);
        else
            c->eof = 1;  /* no linger: the cut body must be seen as cut */
        conn_stream_end(c);
    }
    conn_touch(c);
    conn_pump(c);
    conn_settle(c);
}

/* Schedules conn_stream_cb for the next loop turn when there is room. */
static void conn_stream_wake(struct conn *c)
{
    if (!c->stream.fill || !conn_stream_room(c))
        return;
    if (!c->stream_ev) {
        c->stream_ev = event_new(c->srv->base, -1, 0, conn_stream_cb, c);
        if (!c->stream_ev)
            abort();
    }
    /* A zero timer, not event_active(): it runs after the next poll, so
     * other connections' I/O is served between two pieces. */
    static const struct timeval now = {0, 0};
    if (!evtimer_pending(c->stream_ev, NULL))
        evtimer_add(c->stream_ev, &now);
}

/* Drops the answer of an injected reset: nothing is sent, the connection
 * is reset at the next chance (conn_settle). */
static void conn_reset_reply(struct conn *c)
{
    struct server *srv = c->srv;
    struct request *req = &c->req;
    if (srv->cfg->access_log) {
        log_access(req->method_name, req->path, 0, 0, clock_mono_us() - req->start_us,
                   c->resp.request_id);
        server_note_access(srv);
    }
    buf_reset(&c->resp.body);
    c->reset = 1;
    request_release(c, 1);
}

/* Ends an injected delay: the held answers go out, parsing and reading
 * resume (unless a group commit still holds them: its release does it). */
static void conn_delay_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    (void)what;
    c->delaying = 0;
    conn_arm_idle(c);
    if (c->held)
        return;  /* conn_release() sends them after the sync */
    if (c->pending)
        evbuffer_add_buffer(conn_output(c), c->pending);
    conn_read_on(c);
    conn_pump(c);
    conn_settle(c);
}

/* Holds the answer just queued (in c->pending) for ms milliseconds. */
static void conn_start_delay(struct conn *c, int ms)
{
    if (!c->delay_ev) {
        c->delay_ev = event_new(c->srv->base, -1, 0, conn_delay_cb, c);
        if (!c->delay_ev)
            abort();
    }
    /* libevent's timers run on the coarse monotonic clock and count from
     * the time cached at the start of this loop turn: refresh that, and
     * add one tick of the coarse clock, so a delay is never short. */
    static long tick_us = -1;
    if (tick_us < 0) {
        struct timespec res;
        tick_us = clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0
                      ? (res.tv_nsec + 999) / 1000
                      : 10000;
    }
    long us = (long)ms * 1000 + tick_us;
    struct timeval tv = {us / 1000000, us % 1000000};
    event_base_update_cache_time(c->srv->base);
    evtimer_add(c->delay_ev, &tv);
    c->read_deferred = 1;  /* whoever sends the answers reads on */
    conn_reading(c, 0);
}

/* The request is answered: release its memory; close marks the connection
 * as closing. */
static void request_release(struct conn *c, int close)
{
    struct request *req = &c->req;
    struct response *resp = &c->resp;
    arena_reset(c->arena);
    resp->headers = NULL;
    resp->nheaders = resp->cap = 0;
    if (resp->body.cap > CONN_KEEP_BYTES)
        buf_free(&resp->body);
    if (c->body.cap > CONN_KEEP_BYTES)
        buf_free(&c->body);
    else
        buf_reset(&c->body);
    if (c->head.cap > CONN_KEEP_BYTES)
        buf_free(&c->head);
    req->headers = NULL;
    req->nheaders = 0;
    req->body = NULL;
    req->body_len = 0;
    if (close)
        c->closing = 1;
}

/* Answers a request the wing could not parse or accept (the handler's
 * fail()), then closes. */
static void conn_fail(struct conn *c, enum http_fail why)
{
    if (!c->headers_done)
        request_blank(c);
    c->req.body = NULL;
    c->req.body_len = 0;
    c->in_msg = 0;
    c->body_direct = 0;
    response_begin(c);
    c->h->fail(c->h->arg, &c->req, &c->resp, why);
    conn_respond(c, 1);
}

/* How large a reply should be at most now (0 = no preference): what is
 * left of the process's output limit, never below CONN_REPLY_FLOOR. Without
 * it, every new client that asks for a 4 MiB page and never reads would
 * hold 4 MiB, however many of them there are. */
static size_t reply_budget(const struct server *srv)
{
    size_t cap = srv->cfg->max_total_output_bytes;
    size_t left = srv->out_total < cap ? cap - srv->out_total : 0;
    if (left >= (size_t)8 << 20)
        return 0;
    return left > CONN_REPLY_FLOOR ? left : CONN_REPLY_FLOOR;
}

/* The answer to the current request is complete: queue it (or drop it for
 * an injected reset). Returns 0 when the next pipelined request may be
 * parsed now, HPE_PAUSED when the connection is closing, delayed or its
 * output backed up. Never frees c. */
static int conn_answered(struct conn *c)
{
    struct server *srv = c->srv;
    llhttp_t *p = &c->parser;
    if (c->resp.reset) {
        conn_reset_reply(c);
        return HPE_PAUSED;
    }
    int delay = c->resp.delay_ms;
    if (delay > 0)
        c->delaying = 1;  /* conn_respond queues into c->pending */
    int close = c->resp.close || !llhttp_should_keep_alive(p) || srv->stopping;
    conn_respond(c, close);
    if (delay > 0) {
        conn_start_delay(c, delay);
        return HPE_PAUSED;
    }
    if (c->closing)
        return HPE_PAUSED;
    conn_arm_idle(c);
    if (conn_output_blocked(c)) {
        conn_pause_output(c);
        return HPE_PAUSED;
    }
    return 0;
}

/* A whole request has arrived: hand it to the connection's handler. An answer that comes later pauses the parser until
 * conn_done; one that is complete now is queued at once. */
static int on_message_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    struct server *srv = c->srv;
    c->in_msg = 0;
    c->body_direct = 0;
    c->served = 1;
    if (c->body.len) {
        c->req.body = c->body.data;
        c->req.body_len = c->body.len;
    }
    response_begin(c);
    c->req.reply_budget = reply_budget(srv);
    if (c->req.method == HTTP_M_HEAD)
        c->resp.no_body = 1;
    c->waiting = 1;
    int now = c->h->handle(c->h->arg, &c->req, &c->resp, conn_done, c);
    if (!now) {
        /* No timer runs while the handler works: its latency is not
         * the client's idleness (see handler.h). */
        evtimer_del(c->timer);
        c->deadline = 0;
        /* Reading stays on: a client usually sends nothing until it
         * has its answer, and should it send more, the read callback
         * finds c waiting and turns reading off then. Turning it off
         * here and on again with the answer cost two epoll_ctl calls
         * per deferred request (every write of a group commit). */
        c->read_deferred = 1;  /* whoever ends the wait reads on */
        return HPE_PAUSED;
    }
    c->waiting = 0;
    return conn_answered(c);
}

void conn_init_settings(struct server *srv)
{
    llhttp_settings_t *s = &srv->settings;
    llhttp_settings_init(s);
    s->on_message_begin = on_message_begin;
    s->on_url = on_url;
    s->on_url_complete = on_url_complete;
    s->on_header_field = on_header_field;
    s->on_header_field_complete = on_header_field_complete;
    s->on_header_value = on_header_value;
    s->on_header_value_complete = on_header_value_complete;
    s->on_headers_complete = on_headers_complete;
    s->on_body = on_body;
    s->on_message_complete = on_message_complete;
}


/* 1 when the input llhttp refused is the start of a TLS handshake record
 * (content type 22, version 3.x) as the first bytes of a plain-HTTP
 * connection: a client speaking HTTPS to the HTTP port. */
static int conn_tls_hello(const struct conn *c, const char *data, size_t len)
{
    if (c->tls || c->served || llhttp_get_error_pos(&c->parser) != data || len < 1)
        return 0;
    return (unsigned char)data[0] == 0x16 && (len < 2 || (unsigned char)data[1] == 0x03);
}

/* Runs llhttp over one contiguous piece of input. Returns how many bytes
 * it consumed: all of them, or fewer when parsing paused (the connection
 * is closing or its output backed up). Never frees c. */
static size_t conn_feed(struct conn *c, const char *data, size_t len)
{
    if (c->closing || c->wpaused || c->delaying || c->waiting)
        return 0;
    if (!c->in_msg && conn_output_blocked(c)) {
        conn_pause_output(c);  /* the next request waits for our output */
        return 0;
    }
    enum llhttp_errno e = llhttp_execute(&c->parser, data, len);
    if (e == HPE_OK)
        return len;
    if (e == HPE_PAUSED) {
        size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - data);
        llhttp_resume(&c->parser);
        return used;
    }
    if (e == HPE_PAUSED_UPGRADE) {
        /* We never agree to an Upgrade (no 101 was sent), so the client
         * goes on speaking HTTP/1.1; CONNECT has no such future. */
        if (c->parser.method == HTTP_CONNECT) {
            c->closing = 1;
            return len;
        }
        size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - data);
        llhttp_resume_after_upgrade(&c->parser);
        return used;
    }
    if (!c->fail_why && conn_tls_hello(c, data, len)) {
        /* The answer stays the plain 400: a TLS client reads it as a bad
         * record and reports "wrong version number", the usual sign of
         * HTTPS sent to an HTTP port. */
        if (log_limit_take(LOG_INFO, LOG_KEY_TLS_ON_PLAIN, "TLS on the plain HTTP port"))
            log_info("TLS on the plain HTTP port; use http:// or --tls-port (client %s)",
                     c->peer_ip);
    } else if (!c->fail_why) {
        log_debug("bad request from %s: %s", c->peer_ip, llhttp_get_error_reason(&c->parser));
    }
    conn_fail(c, c->fail_why ? c->fail_why : HTTP_FAIL_BAD_REQUEST);
    return len;
}

/* Parses whatever input is buffered until it is used up, the connection
 * starts closing, or output backs up. Never frees c. */
static void conn_process(struct conn *c)
{
    struct evbuffer *in = conn_input(c);
    while (!c->closing && !c->wpaused && !c->delaying && !c->waiting) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
            break;
        size_t used = conn_feed(c, v.iov_base, v.iov_len);
        evbuffer_drain(in, used);
        if (used == 0)
            break;
    }
    if (c->closing)
        evbuffer_drain(in, evbuffer_get_length(in));
}

/* Plain sockets: writes queued output now; arms the write event (with the
 * idle timeout as the write deadline) only when the socket is full. */
static void conn_flush(struct conn *c)
{
    if (c->bev || c->broken)
        return;
    int progress = 0;
    while (evbuffer_get_length(c->out) > 0) {
        int n = evbuffer_write(c->out, c->fd);
        if (n > 0) {
            progress = 1;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            c->broken = 1;
            return;
        }
        break;
    }
    if (progress)
        conn_touch(c);
    /* The write deadline runs from the last progress: a client that reads
     * nothing for the idle timeout is closed (plain_write_cb). */
    if (evbuffer_get_length(c->out) == 0)
        event_del(c->wev);
    else if (progress || !event_pending(c->wev, EV_WRITE, NULL))
        event_add(c->wev, c->srv->idle_tv);
}

/* Parses and writes until neither makes progress; resumes parsing paused
 * for output once that output is gone. Never frees c. */
static void conn_pump(struct conn *c)
{
    for (;;) {
        conn_process(c);
        conn_flush(c);
        if (!c->wpaused || c->closing || c->broken ||
            evbuffer_get_length(conn_output(c)) > 0)
            break;
        c->wpaused = 0;
        conn_read_on(c);
    }
    if (c->in_msg && c->headers_done)
        conn_arm_body(c);  /* body still coming */
    conn_stream_wake(c);
}

/* ---- closing ---- */

void conn_free(struct conn *c)
{
    struct server *srv = c->srv;
    if (c->held) {
        for (struct conn **pp = &srv->held; *pp; pp = &(*pp)->held_next) {
            if (*pp == c) {
                *pp = c->held_next;
                break;
            }
        }
    }
    conn_unlink(c);
    srv->nconns--;
    /* (A bufferevent may outlive this call: no callback may reach c.) */
    evbuffer_remove_cb_entry(conn_output(c), c->out_cbe);
    if (c->pending)
        evbuffer_remove_cb_entry(c->pending, c->pending_cbe);
    srv->out_total -= c->out_held;
    if (!c->h->uncounted)
        metrics_connection(srv->metrics, 0);
    event_free(c->timer);
    if (c->delay_ev)
        event_free(c->delay_ev);
    conn_stream_end(c);
    if (c->stream_ev)
        event_free(c->stream_ev);
    if (c->reset) {
        /* SO_LINGER 0: close() sends an RST instead of a FIN. */
        struct linger lg = {1, 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    if (c->bev) {
        bufferevent_free(c->bev);  /* closes the socket */
    } else {
        event_free(c->rev);
        event_free(c->wev);
        evbuffer_free(c->in);
        evbuffer_free(c->out);
        close(c->fd);
    }
    if (c->pending)
        evbuffer_free(c->pending);
    arena_free(c->arena);
    buf_free(&c->head);
    buf_free(&c->body);
    buf_free(&c->resp.body);
    free(c->spans);
    free(c);
    if (srv->stopping && srv->nconns == 0)
        event_base_loopbreak(srv->base);
}

/* Once everything owed is written: discard input for a moment (so a
 * client still sending its body when it was answered early does not get a
 * reset that destroys the answer), or free at once after EOF and at
 * shutdown. A plain socket is half-closed first; a TLS one gets its
 * close_notify when the lingering ends (conn_linger_end), as TLS has no
 * half-close that still lets the server read. The lingering ends at EOF,
 * after srv->linger_tv, or after CONN_LINGER_BYTES of input; until then
 * the connection counts like any other (cap, eviction, metrics). */
static void conn_finish(struct conn *c)
{
    if (c->eof || c->srv->stopping) {
        conn_free(c);
        return;
    }
    if (!c->bev)
        shutdown(c->fd, SHUT_WR);
    c->lingering = 1;
    c->linger_bytes = 0;
    evbuffer_drain(conn_input(c), evbuffer_get_length(conn_input(c)));
    conn_reading(c, 1);
    conn_arm(c, c->srv->linger_tv);
}

/* Ends a lingering close: close_notify on TLS, then free. */
static void conn_linger_end(struct conn *c)
{
    if (c->bev && c->tls)   /* (a plain connection must not load libssl) */
        tls_close_notify(c->bev);
    conn_free(c);
}

/* Counts n discarded bytes of a lingering connection; ends the lingering
 * (frees c) past CONN_LINGER_BYTES. Returns 1 when c was freed. */
static int conn_linger_count(struct conn *c, size_t n)
{
    c->linger_bytes += n;
    if (c->linger_bytes <= CONN_LINGER_BYTES)
        return 0;
    log_debug("closing %s: more than %zu bytes sent after its answer", c->peer_ip,
              CONN_LINGER_BYTES);
    conn_linger_end(c);
    return 1;
}

/* Called last by every top-level callback: frees a broken connection, and
 * finishes a closing one once its replies are written. May free c. */
static void conn_settle(struct conn *c)
{
    if (c->broken || c->reset) {
        conn_drop(c);
        return;
    }
    if (!c->closing || c->held || c->delaying || c->waiting || c->lingering || c->stream.fill)
        return;
    if (evbuffer_get_length(conn_output(c)) > 0) {
        conn_reading(c, 0);  /* the write callback finishes the job */
        return;
    }
    conn_finish(c);
}

/* Frees c, or, while the handler still makes its answer (and uses c->req
 * and c->resp), marks it broken and silences it: conn_done frees it. */
static void conn_drop(struct conn *c)
{
    if (!c->waiting) {
        conn_free(c);
        return;
    }
    c->broken = 1;
    c->closing = 1;
    evtimer_del(c->timer);
    if (c->bev) {
        bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    } else {
        event_del(c->rev);
        event_del(c->wev);
    }
}

/* The handler's done(token): the deferred answer is in c->resp. Queues it
 * as if it had come at once and parses the pipelined requests behind it;
 * when the connection broke meanwhile, frees it and drops the answer.
 * May free c. */
static void conn_done(void *token)
{
    struct conn *c = token;
    if (!c->waiting)
        abort();  /* done called twice, or for an answer given at once */
    c->waiting = 0;
    if (c->broken) {
        log_debug("dropping the answer for %s: the connection broke while it was made",
                  c->peer_ip);
        if (c->resp.stream.free)
            c->resp.stream.free(c->resp.stream.arg);
        memset(&c->resp.stream, 0, sizeof c->resp.stream);
        conn_free(c);
        return;
    }
    if (conn_answered(c) == 0)
        conn_read_on(c);
    conn_pump(c);
    conn_settle(c);
}

/* The peer closed its side. May free c. */
static void conn_on_eof(struct conn *c)
{
    if (c->lingering) {
        conn_linger_end(c);
        return;
    }
    c->eof = 1;
    if (!c->held && !c->delaying && !c->waiting && !c->stream.fill &&
        evbuffer_get_length(conn_output(c)) == 0) {
        conn_free(c);
        return;
    }
    /* Finish writing the replies we owe, then close. */
    c->closing = 1;
    conn_reading(c, 0);
    conn_settle(c);
}

/* Our earlier replies wait for the group commit: stop reading until it has
 * run, so a busy client cannot keep the commit from running. */
static void conn_defer_reading(struct conn *c)
{
    c->read_deferred = 1;
    conn_reading(c, 0);
}

/* ---- plain socket callbacks ---- */

static void plain_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    struct server *srv = c->srv;
    (void)what;
    if ((c->held || c->delaying || c->waiting) && !c->lingering) {
        conn_defer_reading(c);
        return;
    }
    /* Inside a Content-Length body with nothing queued, read the body's
     * next bytes (and no more) straight into the body buffer: llhttp then
     * parses them in place and on_body need not copy them. */
    char *dst = srv->rbuf;
    size_t want = sizeof srv->rbuf;
    if (c->body_direct && evbuffer_get_length(c->in) == 0 && c->body.data) {
        size_t room = c->body.cap - c->body.len - 1;   /* keep the NUL's byte */
        uint64_t rest = c->parser.content_length;      /* llhttp: bytes still due */
        if (room > 0 && rest > 0) {
            dst = c->body.data + c->body.len;
            want = rest < room ? (size_t)rest : room;
        }
    }
    ssize_t n = read(fd, dst, want);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            conn_drop(c);
        return;
    }
    if (n == 0) {
        conn_on_eof(c);
        return;
    }
    conn_touch(c);
    if (c->lingering) {
        conn_linger_count(c, (size_t)n);  /* discarded */
        return;
    }
    if (c->closing)
        return;  /* discarded */
    const char *data = dst;
    size_t len = (size_t)n, used = 0;
    if (evbuffer_get_length(c->in) == 0) {
        /* The usual case: parse straight from the read buffer. */
        while (used < len && !c->closing && !c->wpaused && !c->delaying && !c->waiting) {
            size_t k = conn_feed(c, data + used, len - used);
            if (k == 0)
                break;
            used += k;
        }
    }
    if (used < len && !c->closing)
        evbuffer_add(c->in, data + used, len - used);
    conn_pump(c);
    conn_settle(c);
}

static void plain_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    if ((what & EV_TIMEOUT) && !event_pending(c->wev, EV_WRITE | EV_TIMEOUT, NULL)) {
        log_debug("closing %s: client stopped reading", c->peer_ip);
        conn_drop(c);
        return;
    }
    conn_pump(c);
    conn_settle(c);
}

/* ---- TLS (bufferevent) callbacks ---- */

static void tls_read_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->lingering || c->closing) {
        /* Discarded as it arrives: at most one read's worth is held. */
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t n = evbuffer_get_length(in);
        evbuffer_drain(in, n);
        if (c->lingering) {
            conn_touch(c);
            conn_linger_count(c, n);
        }
        return;
    }
    if (c->held || c->delaying || c->waiting) {
        conn_defer_reading(c);
        return;
    }
    conn_touch(c);
    conn_pump(c);
    conn_settle(c);
}

/* The output has drained: resume paused parsing, finish a close. */
static void tls_write_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    (void)bev;
    conn_touch(c);
    conn_pump(c);
    conn_settle(c);
}

static void tls_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        if (what & BEV_EVENT_TIMEOUT)
            log_debug("closing %s: client stopped reading", c->peer_ip);
        conn_drop(c);
        return;
    }
    if (what & BEV_EVENT_EOF)
        conn_on_eof(c);
}

/* Header deadline, idle keep-alive deadline, or end of lingering. */
static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    (void)what;
    if (c->lingering) {
        log_debug("closing %s: end of the lingering close", c->peer_ip);
        conn_linger_end(c);
        return;
    }
    if (c->held || c->delaying || c->waiting)
        return;  /* re-armed when the held (or deferred) answers go out */
    if (evtimer_pending(c->timer, NULL))
        return;  /* re-armed after it expired: the new deadline stands */
    if (!c->in_msg && (evbuffer_get_length(conn_output(c)) > 0 || c->stream.fill)) {
        /* Still sending a reply: the write deadline governs. */
        conn_arm_idle(c);
        return;
    }
    if (c->in_msg && c->headers_done && c->deadline) {
        /* The whole request did not arrive in time: the handler.s answer
         * for an operation over its time limit, then close. */
        log_debug("closing %s: request timeout", c->peer_ip);
        conn_fail(c, HTTP_FAIL_TIMEOUT);
        conn_pump(c);
        conn_settle(c);
        return;
    }
    log_debug("closing %s: %s timeout", c->peer_ip,
              (c->in_msg && !c->headers_done) || (!c->in_msg && !c->served) ? "header" : "idle");
    conn_free(c);
}

/* ---- life cycle ---- */

/* Creates an event or aborts (only fails on out-of-memory). */
static struct event *conn_event(struct event_base *base, int fd, short what,
                                event_callback_fn cb, void *arg)
{
    struct event *ev = event_new(base, fd, what, cb, arg);
    if (!ev)
        abort();
    return ev;
}

int conn_accept(struct server *srv, int fd, const struct sockaddr *sa, int tls,
                const struct req_handler *h)
{
    struct bufferevent *bev = NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (tls) {
        bev = tls_bufferevent_new(srv->base, srv->tls_ctx, fd);  /* closes fd on failure */
        if (!bev) {
            log_warn("cannot set up a TLS connection");
            return -1;
        }
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->srv = srv;
    c->fd = fd;
    c->tls = tls;
    c->h = h ? h : &srv->handler;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, c->peer_ip,
                  sizeof c->peer_ip);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, c->peer_ip,
                  sizeof c->peer_ip);
    c->arena = arena_new(CONN_ARENA_CHUNK);
    buf_init(&c->head);
    buf_init(&c->body);
    buf_init(&c->resp.body);
    request_blank(c);
    memcpy(c->req.peer_ip, c->peer_ip, sizeof c->peer_ip);
    c->req.tls = tls;
    llhttp_init(&c->parser, HTTP_REQUEST, &srv->settings);
    c->parser.data = c;
    c->timer = conn_event(srv->base, -1, 0, conn_timer_cb, c);

    if (bev) {
        c->bev = bev;
        bufferevent_setcb(bev, tls_read_cb, tls_write_cb, tls_event_cb, c);
        bufferevent_set_timeouts(bev, NULL, srv->idle_tv);
        bufferevent_set_max_single_read(bev, 64 * 1024);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
    } else {
        c->in = evbuffer_new();
        c->out = evbuffer_new();
        if (!c->in || !c->out)
            abort();
        c->rev = conn_event(srv->base, fd, EV_READ | EV_PERSIST, plain_read_cb, c);
        c->wev = conn_event(srv->base, fd, EV_WRITE, plain_write_cb, c);
        event_add(c->rev, NULL);
    }
    c->out_cbe = conn_count_output(c, conn_output(c));
    /* The header timeout runs from accept: a client that sends nothing
     * holds its connection no longer than one that sends half a head. */
    conn_arm(c, srv->header_tv ? srv->header_tv : srv->idle_tv);

    conn_link_front(c);
    srv->nconns++;
    if (!c->h->uncounted)
        metrics_connection(srv->metrics, 1);
    return 0;
}

/* Sends (ok) or drops (!ok) the replies c held for the group commit, then
 * reads on. May free c. */
static void conn_release(struct conn *c, int ok)
{
    if (!ok) {
        log_warn("closing connection from %s: its writes could not be made durable", c->peer_ip);
        conn_drop(c);
        return;
    }
    if (c->delaying)
        return;  /* an injected delay is still running: conn_delay_cb sends them */
    evbuffer_add_buffer(conn_output(c), c->pending);
    if (c->read_deferred)
        conn_read_on(c);
    conn_pump(c);
    conn_settle(c);
}

void conn_release_all(struct server *srv, int ok)
{
    /* Detach the list first: releasing may hold new replies (a deferred
     * request that writes again), which start the next group. */
    struct conn *list = srv->held;
    srv->held = NULL;
    while (list) {
        struct conn *c = list;
        list = c->held_next;
        c->held = 0;
        c->held_next = NULL;
        conn_release(c, ok);
    }
}

void conn_stop_all(struct server *srv)
{
    struct conn *c = srv->conns;
    while (c) {
        struct conn *next = c->next;
        if (c->lingering) {
            conn_linger_end(c);
        } else if (!c->in_msg && !c->held && !c->delaying && !c->waiting &&
                   evbuffer_get_length(conn_output(c)) == 0) {
            conn_free(c);
        } else if (!c->in_msg) {
            /* Replies still being written or held: send them, then close.
             * (A request in flight gets Connection: close in its reply.) */
            c->closing = 1;
            conn_settle(c);
        }
        c = next;
    }
}

int conn_evict_idlest(struct server *srv)
{
    for (struct conn *c = srv->conns_tail; c; c = c->prev) {
        if (c->held || c->delaying || c->waiting)
            continue;  /* a group commit, timer or handler still refers to it */
        log_debug("closing %s: connection limit reached, idle longest", c->peer_ip);
        conn_free(c);
        return 0;
    }
    return -1;
}

void conn_free_all(struct server *srv)
{
    while (srv->conns)
        conn_free(srv->conns);
}
