/* server.h - the event loop: listeners, connections, group commit, stop.
 *
 * One thread, one libevent base. server_new() binds the HTTP (and, when
 * configured, HTTPS) listeners; server_run() serves until SIGINT/SIGTERM,
 * then stops accepting, lets in-flight requests finish (at most ~5 s) and
 * returns. Each request goes to the handler main() registers
 * (server/handler.h). The caller owns cfg and what handler->arg points to;
 * both must outlive the server. */
#ifndef TABLED_SERVER_H
#define TABLED_SERVER_H
#include <stddef.h>

#include "server/config.h"
#include "server/handler.h"

struct server;

/* Binds the listeners on base (the caller's loop, which must outlive the
 * server; NULL: the server makes and frees its own); requests go to
 * *handler (the struct is copied). NULL with a message in err (address in
 * use, bad certificate, ...). With handler NULL only the admin listener
 * is bound (a front end waiting for its database: /healthz answers 503
 * meanwhile); server_serve() then binds the table listeners. */
struct event_base;
struct server *server_new(const struct config *cfg, struct event_base *base,
                          const struct req_handler *handler, char *err, size_t errlen);
/* Binds the HTTP and HTTPS listeners of a server made with no handler;
 * their requests go to *handler (copied). 0, or -1 with a message in err
 * (the caller then frees the server). */
int server_serve(struct server *srv, const struct req_handler *handler, char *err,
                 size_t errlen);
/* 1 once a stop signal (or server_stop) has begun the graceful stop. */
int server_stopping(const struct server *srv);
/* The bound HTTP port (the kernel's choice when cfg->port is 0), or -1
 * when cfg->port < 0 asked for no plain HTTP listener (HTTPS only). */
int server_port(const struct server *srv);
/* The bound HTTPS port, or 0 when TLS is off. */
int server_tls_port(const struct server *srv);
/* The bound admin port, or -1 when the admin listener is off. */
int server_admin_port(const struct server *srv);

/* Binds one more listener on host:port whose requests go to *handler
 * (copied) instead of the server's handler; over HTTPS with the server's
 * certificate when tls (which needs cfg->tls_port). Its connections share
 * the server's limits, timeouts and graceful stop. For the Blob and Queue
 * ports the azurite command opens (server/absent.h). Returns the bound
 * port, or -1 with a message in err. */
int server_listen_extra(struct server *srv, const char *host, int port, int tls,
                        const struct req_handler *handler, char *err, size_t errlen);

struct admin;
struct metrics;
struct throttle;
/* Hands the server what the admin listener answers with (adm), where to
 * count connections (m) and the throttle whose idle buckets a timer
 * reclaims (t); any may be NULL. Call before server_run(). */
void server_attach(struct server *srv, struct admin *adm, struct metrics *m,
                   struct throttle *t);
/* Serves until a stop signal, then drains; returns 0. */
int server_run(struct server *srv);
/* Starts a graceful stop from inside the loop (what SIGTERM does). */
void server_stop(struct server *srv);
/* Closes every remaining connection and frees the server. */
void server_free(struct server *srv);

/* What SIGHUP runs, on the loop thread between events (NULL: a HUP is
 * ignored). Until this is set a HUP does nothing either. */
void server_set_reload(struct server *srv, void (*fn)(void *arg), void *arg);
/* Replaces the HTTPS context for connections accepted from now on; each
 * open connection keeps the context it started with (its SSL holds a
 * reference). Takes ownership of ctx. Returns 0, or -1 when TLS is off
 * (ctx is then freed). */
struct ssl_ctx_st;
int server_tls_swap(struct server *srv, struct ssl_ctx_st *ctx);

/* The server's event loop, for timers of other modules (server/background.c);
 * valid until server_free(). */
struct event_base *server_base(struct server *srv);

#endif
