/* server.c - the event loop: listeners, accepting, the group-commit event,
 * the access-log flush, signals and graceful stop.
 *
 * Group commit: when a reply follows a write that is not yet durable
 * (the handler's dirty()), conn.c holds it and every later reply in
 * c->pending and activates sync_ev with event_active(). libevent runs
 * active callbacks in the order they were activated, and every socket that
 * epoll reported ready in this loop turn was activated before any of them
 * ran, so sync_ev runs after the read callbacks of the current turn: one
 * sync() makes all of that turn's writes durable, then the held replies go
 * out together. (A deferred answer completed later in the turn is held for
 * the next sync, run in the same way.)
 * (No event priorities: they would let busy sockets starve the listener and
 * the timers.) Connections whose replies are held stop reading until the
 * sync has run, so a busy client cannot postpone it either.
 *
 * The admin listener (--admin-port) is a third socket with a handler of
 * its own (server/admin.c), never the table handler. A
 * one-second timer reclaims the token buckets of idle partitions
 * (guard/throttle.h) so their memory is returned even without traffic.
 *
 * Extra listeners (server_listen_extra) are sockets whose connections are
 * answered by a handler of their own (azurite's Blob and Queue ports);
 * otherwise they are connections like any other: same limits, timeouts,
 * TLS context and graceful stop. With cfg->port < 0 there is no plain
 * HTTP listener at all (HTTPS only). */
#include "server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "core/clock.h"
#include "core/pages.h"
#include "server/admin.h"
#include "server/conn.h"
#include "core/log.h"
#include "guard/throttle.h"
#include "server/tls.h"

#define SERVER_BACKLOG 1024
#define SERVER_STOP_GRACE_MS 5000
#define SERVER_LINGER_MS 2000
#define SERVER_FLUSH_MS 100
/* At most one "accept failed" warning per this many ms (EMFILE repeats
 * every pause of 200 ms while the descriptors stay used up). */
#define SERVER_ACCEPT_WARN_MS 10000
/* Throttle maintenance: period, and bucket slots examined per run (a table
 * of 2^21 slots is swept in 32 s; rebuilding it smaller is O(size)). */
#define SERVER_MAINT_MS 1000
#define SERVER_MAINT_SLOTS 65536

/* Converts milliseconds into a common timeout of base (cheap to re-arm). */
static const struct timeval *common_timeout(struct event_base *base, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    const struct timeval *ct = event_base_init_common_timeout(base, &tv);
    if (!ct) {
        log_error("cannot set up a %d ms timeout", ms);
        abort();
    }
    return ct;
}

/* Runs once per loop turn after the reads: makes the turn's writes durable
 * and releases the held replies, or drops them when that failed. */
static void sync_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    (void)fd;
    (void)what;
    srv->sync_pending = 0;
    int rc = srv->handler.sync ? srv->handler.sync(srv->handler.arg) : 0;
    if (rc != 0)
        log_error("group commit failed (status %d): closing the connections waiting for it",
                  rc);
    conn_release_all(srv, rc == 0);
}

void server_want_sync(struct server *srv)
{
    if (srv->sync_pending)
        return;
    srv->sync_pending = 1;
    event_active(srv->sync_ev, EV_TIMEOUT, 0);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    (void)fd;
    (void)what;
    srv->flush_pending = 0;
    log_flush();
}

void server_note_access(struct server *srv)
{
    if (srv->flush_pending)
        return;
    srv->flush_pending = 1;
    struct timeval tv = {0, SERVER_FLUSH_MS * 1000};
    evtimer_add(srv->flush_ev, &tv);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct server *srv = arg;
    static unsigned refused, evicted;
    (void)salen;
    if (srv->stopping) {
        close(fd);
        return;
    }
    /* At the cap, the connection idle longest makes room: whoever holds
     * the cap with silent connections cannot lock newcomers out. */
    while (srv->nconns >= (size_t)srv->cfg->max_connections) {
        if (conn_evict_idlest(srv) < 0) {
            if (refused++ % 1000 == 0)
                log_warn("connection limit (%d) reached: refusing connections",
                         srv->cfg->max_connections);
            close(fd);
            return;
        }
        if (evicted++ % 1000 == 0)
            log_info("connection limit (%d) reached: closing the connections idle longest",
                     srv->cfg->max_connections);
    }
    for (size_t i = 0; i < srv->nextra; i++) {
        if (l == srv->extra[i].listener) {
            conn_accept(srv, fd, sa, srv->extra[i].tls, &srv->extra[i].handler);
            return;
        }
    }
    conn_accept(srv, fd, sa, l == srv->tls_listener,
                l == srv->admin_listener ? &srv->admin_handler : NULL);
}

/* Reclaims idle throttle buckets. */
static void maint_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    (void)fd;
    (void)what;
    if (srv->throttle)
        throttle_maintain(srv->throttle, clock_mono_us(), SERVER_MAINT_SLOTS);
    log_limit_flush();  /* "suppressed N similar lines" once their second is over */
}

/* accept() failed (typically EMFILE): pause accepting briefly instead of
 * spinning on a listener that stays readable. The warning is written at
 * most every SERVER_ACCEPT_WARN_MS, with the count of failures since. */
static void accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct server *srv = arg;
    int err = EVUTIL_SOCKET_ERROR();
    uint64_t now = clock_mono_us();
    if (srv->accept_err_us && now - srv->accept_err_us < SERVER_ACCEPT_WARN_MS * 1000u) {
        srv->accept_err_quiet++;
    } else {
        if (srv->accept_err_quiet)
            log_warn("accept failed: %s (and %u more times in the last %d s)",
                     evutil_socket_error_to_string(err), srv->accept_err_quiet,
                     (int)((now - srv->accept_err_us) / 1000000u));
        else
            log_warn("accept failed: %s", evutil_socket_error_to_string(err));
        srv->accept_err_us = now;
        srv->accept_err_quiet = 0;
    }
    evconnlistener_disable(l);
    struct timeval tv = {0, 200 * 1000};
    evtimer_add(srv->reaccept_ev, &tv);
}

static void reaccept_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    (void)fd;
    (void)what;
    if (srv->stopping)
        return;
    if (srv->listener)
        evconnlistener_enable(srv->listener);
    if (srv->tls_listener)
        evconnlistener_enable(srv->tls_listener);
    if (srv->admin_listener)
        evconnlistener_enable(srv->admin_listener);
    for (size_t i = 0; i < srv->nextra; i++)
        if (srv->extra[i].listener)
            evconnlistener_enable(srv->extra[i].listener);
}

/* Binds a listener on host:port; *bound receives the real port. */
static struct evconnlistener *listen_on(struct server *srv, const char *host, int port,
                                        int *bound, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    char portstr[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(portstr, sizeof portstr, "%d", port);
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve listen address %s: %s", host, gai_strerror(gai));
        return NULL;
    }
    struct evconnlistener *l = NULL;
    int last_errno = 0;
    /* IPv4 addresses first: "localhost" should mean 127.0.0.1, which is
     * what the printed endpoint and most clients use. */
    for (int pass = 0; pass < 2 && !l; pass++) {
        for (struct addrinfo *ai = res; ai && !l; ai = ai->ai_next) {
            if ((ai->ai_family == AF_INET) != (pass == 0))
                continue;
            l = evconnlistener_new_bind(srv->base, accept_cb, srv,
                                        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                            LEV_OPT_CLOSE_ON_EXEC,
                                        SERVER_BACKLOG, ai->ai_addr, (int)ai->ai_addrlen);
            if (!l)
                last_errno = errno;
        }
    }
    freeaddrinfo(res);
    if (!l) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
                 strerror(last_errno ? last_errno : EADDRNOTAVAIL));
        return NULL;
    }
    evconnlistener_set_error_cb(l, accept_error_cb);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *bound = port;
    if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            *bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            *bound = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    return l;
}

/* Ends the loop after the grace period even if requests are still open. */
static void stop_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    (void)fd;
    (void)what;
    log_warn("stopping with %zu connection(s) still open", srv->nconns);
    event_base_loopbreak(srv->base);
}

void server_stop(struct server *srv)
{
    if (srv->stopping)
        return;
    srv->stopping = 1;
    log_info("stopping: no new connections, finishing %zu open one(s)", srv->nconns);
    if (srv->listener) {
        evconnlistener_free(srv->listener);
        srv->listener = NULL;
    }
    if (srv->tls_listener) {
        evconnlistener_free(srv->tls_listener);
        srv->tls_listener = NULL;
    }
    if (srv->admin_listener) {
        evconnlistener_free(srv->admin_listener);
        srv->admin_listener = NULL;
    }
    for (size_t i = 0; i < srv->nextra; i++) {
        if (srv->extra[i].listener) {
            evconnlistener_free(srv->extra[i].listener);
            srv->extra[i].listener = NULL;
        }
    }
    if (srv->maint_ev)
        event_del(srv->maint_ev);
    conn_stop_all(srv);
    if (srv->nconns == 0) {
        event_base_loopbreak(srv->base);
        return;
    }
    struct timeval tv = {SERVER_STOP_GRACE_MS / 1000, (SERVER_STOP_GRACE_MS % 1000) * 1000};
    evtimer_add(srv->stop_ev, &tv);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    server_stop(arg);
}

/* SIGHUP: the reload main() registered, between two events of the loop. */
static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
    struct server *srv = arg;
    (void)sig;
    (void)what;
    if (srv->reload_fn)
        srv->reload_fn(srv->reload_arg);
}

void server_set_reload(struct server *srv, void (*fn)(void *arg), void *arg)
{
    srv->reload_fn = fn;
    srv->reload_arg = arg;
}

int server_tls_swap(struct server *srv, SSL_CTX *ctx)
{
    if (!srv->tls_ctx) {
        tls_ctx_free(ctx);
        return -1;
    }
    tls_ctx_free(srv->tls_ctx);  /* open connections' SSLs hold their own reference */
    srv->tls_ctx = ctx;
    return 0;
}

/* Creates an event or aborts (only fails on out-of-memory). */
static struct event *must_event(struct event_base *base, evutil_socket_t fd, short what,
                               event_callback_fn cb, void *arg)
{
    struct event *ev = event_new(base, fd, what, cb, arg);
    if (!ev)
        abort();
    return ev;
}

/* The admin listener's handler: server/admin.c answers, over the admin
 * attached by server_attach (503 until then). */
static int admin_request(void *arg, struct request *req, struct response *resp,
                         void (*done)(void *token), void *token)
{
    struct server *srv = arg;
    return admin_handle(srv->admin, req, resp, done, token);
}

/* A request the admin listener could not parse or keep: its status and a
 * JSON message, then the connection closes. */
static void admin_fail(void *arg, struct request *req, struct response *resp,
                       enum http_fail why)
{
    (void)arg;
    (void)req;
    admin_refuse(resp, why);
}

struct server *server_new(const struct config *cfg, struct event_base *base,
                          const struct req_handler *handler, char *err, size_t errlen)
{
    /* 65 KiB, most of it the read buffer of plain sockets, touched only as
     * far as reads fill it: in pages of its own (core/pages.h) */
    struct server *srv = pages_zalloc(sizeof *srv);
    srv->cfg = cfg;
    srv->admin_handler = (struct req_handler){.arg = srv, .handle = admin_request,
                                              .fail = admin_fail, .uncounted = 1};
    srv->admin_port = -1;
    buf_init(&srv->head);
    conn_init_settings(srv);
    srv->base = base ? base : event_base_new();
    srv->own_base = !base;
    if (!srv->base) {
        snprintf(err, errlen, "cannot create the event loop");
        server_free(srv);
        return NULL;
    }
    srv->idle_tv = common_timeout(srv->base, cfg->idle_timeout_ms);
    if (cfg->header_timeout_ms > 0)
        srv->header_tv = common_timeout(srv->base, cfg->header_timeout_ms);
    srv->request_timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 120000;
    srv->linger_tv = common_timeout(
        srv->base, cfg->idle_timeout_ms < SERVER_LINGER_MS ? cfg->idle_timeout_ms : SERVER_LINGER_MS);

    srv->sync_ev = must_event(srv->base, -1, 0, sync_cb, srv);
    srv->flush_ev = must_event(srv->base, -1, 0, flush_cb, srv);
    srv->stop_ev = must_event(srv->base, -1, 0, stop_timeout_cb, srv);
    srv->reaccept_ev = must_event(srv->base, -1, 0, reaccept_cb, srv);
    srv->maint_ev = must_event(srv->base, -1, EV_PERSIST, maint_cb, srv);
    srv->sigint_ev = must_event(srv->base, SIGINT, EV_SIGNAL | EV_PERSIST, signal_cb, srv);
    srv->sigterm_ev = must_event(srv->base, SIGTERM, EV_SIGNAL | EV_PERSIST, signal_cb, srv);
    event_add(srv->sigint_ev, NULL);
    event_add(srv->sigterm_ev, NULL);
    srv->sighup_ev = must_event(srv->base, SIGHUP, EV_SIGNAL | EV_PERSIST, sighup_cb, srv);
    event_add(srv->sighup_ev, NULL);

    if (cfg->tls_port) {
        srv->tls_ctx = tls_ctx_new(cfg->tls_cert, cfg->tls_key, err, errlen);
        if (!srv->tls_ctx) {
            server_free(srv);
            return NULL;
        }
    }
    srv->port = -1;
    if (handler && server_serve(srv, handler, err, errlen) != 0) {
        server_free(srv);
        return NULL;
    }
    if (cfg->admin_port >= 0) {
        srv->admin_listener =
            listen_on(srv, cfg->admin_host, cfg->admin_port, &srv->admin_port, err, errlen);
        if (!srv->admin_listener) {
            server_free(srv);
            return NULL;
        }
    }
    return srv;
}

int server_serve(struct server *srv, const struct req_handler *handler, char *err,
                 size_t errlen)
{
    const struct config *cfg = srv->cfg;
    srv->handler = *handler;
    if (cfg->port >= 0) {
        srv->listener = listen_on(srv, cfg->host, cfg->port, &srv->port, err, errlen);
        if (!srv->listener)
            return -1;
    }
    if (cfg->tls_port) {
        srv->tls_listener = listen_on(srv, cfg->host, cfg->tls_port, &srv->tls_port, err, errlen);
        if (!srv->tls_listener)
            return -1;
    }
    return 0;
}

int server_stopping(const struct server *srv)
{
    return srv->stopping;
}

void server_attach(struct server *srv, struct admin *adm, struct metrics *m,
                   struct throttle *t)
{
    srv->admin = adm;
    srv->metrics = m;
    srv->throttle = t;
    /* always armed: it also reports the log lines the rate limit dropped */
    struct timeval tv = {SERVER_MAINT_MS / 1000, (SERVER_MAINT_MS % 1000) * 1000};
    evtimer_add(srv->maint_ev, &tv);
}

int server_listen_extra(struct server *srv, const char *host, int port, int tls,
                        const struct req_handler *handler, char *err, size_t errlen)
{
    if (srv->nextra >= SERVER_MAX_EXTRA) {
        snprintf(err, errlen, "too many listeners");
        return -1;
    }
    if (tls && !srv->tls_ctx) {
        snprintf(err, errlen, "an HTTPS listener needs the server's certificate (--tls-port)");
        return -1;
    }
    struct server_extra *x = &srv->extra[srv->nextra];
    x->listener = listen_on(srv, host, port, &x->port, err, errlen);
    if (!x->listener)
        return -1;
    x->handler = *handler;
    x->tls = tls;
    srv->nextra++;
    return x->port;
}

int server_admin_port(const struct server *srv)
{
    return srv->admin_listener ? srv->admin_port : -1;
}

int server_port(const struct server *srv)
{
    return srv->port;
}

int server_tls_port(const struct server *srv)
{
    return srv->tls_port;
}

int server_run(struct server *srv)
{
    event_base_dispatch(srv->base);
    /* Replies still held when the loop ended are not sent: their writes
     * are made durable by the backend's close, but nobody is waiting. */
    conn_free_all(srv);
    log_flush();
    return 0;
}

void server_free(struct server *srv)
{
    if (!srv)
        return;
    if (srv->base)
        conn_free_all(srv);
    if (srv->listener)
        evconnlistener_free(srv->listener);
    if (srv->tls_listener)
        evconnlistener_free(srv->tls_listener);
    if (srv->admin_listener)
        evconnlistener_free(srv->admin_listener);
    for (size_t i = 0; i < srv->nextra; i++)
        if (srv->extra[i].listener)
            evconnlistener_free(srv->extra[i].listener);
    struct event *evs[] = {srv->sync_ev,   srv->flush_ev, srv->sigint_ev,  srv->sigterm_ev, srv->sighup_ev,
                           srv->stop_ev,   srv->reaccept_ev, srv->maint_ev};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            event_free(evs[i]);
    if (srv->tls_ctx)
        tls_ctx_free(srv->tls_ctx);
    if (srv->base && srv->own_base)
        event_base_free(srv->base);
    buf_free(&srv->head);
    pages_free(srv, sizeof *srv);
}

struct event_base *server_base(struct server *srv)
{
    return srv->base;
}
