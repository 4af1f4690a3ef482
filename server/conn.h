/* conn.h - what server.c and conn.c share: the server's state and the
 * connection life cycle. Nothing outside server/server.c and server/conn.c
 * includes this file. */
#ifndef TABLED_CONN_H
#define TABLED_CONN_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <llhttp.h>
#include <openssl/ssl.h>

#include "core/buf.h"
#include "server/config.h"
#include "server/handler.h"

struct conn;

/* Listeners of server_listen_extra (azurite's Blob and Queue ports). */
#define SERVER_MAX_EXTRA 4
struct server_extra {
    struct evconnlistener *listener;
    struct req_handler handler;  /* answers its connections */
    int tls;                     /* speaks HTTPS with the server's context */
    int port;                    /* bound port */
};

struct server {
    const struct config *cfg;
    struct req_handler handler; /* answers the table listeners' requests
                                   (server/handler.h) */
    struct req_handler admin_handler; /* the admin listener's: admin_handle */
    struct event_base *base;
    int own_base;              /* made by server_new (else the caller's) */
    struct evconnlistener *listener;      /* HTTP, or NULL (cfg->port < 0) */
    struct evconnlistener *tls_listener;  /* HTTPS, or NULL */
    struct evconnlistener *admin_listener;/* admin endpoints, or NULL */
    SSL_CTX *tls_ctx;
    int port, tls_port, admin_port;       /* bound ports (-1 = off; TLS: 0) */
    struct server_extra extra[SERVER_MAX_EXTRA];
    size_t nextra;
    struct admin *admin;                  /* answers the admin listener */
    struct metrics *metrics;              /* connection counts, or NULL */
    struct throttle *throttle;            /* maintained by a timer, or NULL */
    struct event *maint_ev;               /* reclaims idle throttle buckets */

    struct event *sync_ev;      /* group commit, activated when a reply is held */
    struct event *flush_ev;     /* flushes the access log after a burst */
    struct event *sigint_ev, *sigterm_ev;
    struct event *sighup_ev;    /* runs reload_fn (server_set_reload) */
    void (*reload_fn)(void *arg);
    void *reload_arg;
    struct event *stop_ev;      /* gives up draining after a few seconds */
    struct event *reaccept_ev;  /* re-enables accepting after EMFILE */

    const struct timeval *idle_tv;    /* common timeouts (O(1) re-arming) */
    const struct timeval *header_tv;  /* NULL when header timeouts are off */
    const struct timeval *linger_tv;
    int request_timeout_ms;     /* whole-request deadline */

    struct conn *conns;         /* every open connection, most recently active
                                   first (conns_tail: the idlest) */
    struct conn *conns_tail;
    size_t nconns;
    size_t out_total;           /* unsent reply bytes of every connection */
    uint64_t accept_err_us;     /* last "accept failed" warning (rate limit) */
    unsigned accept_err_quiet;  /* accept failures not logged since */
    struct conn *held;          /* connections with replies waiting for sync */
    int sync_pending;           /* sync_ev is active: hold every reply */
    int flush_pending;
    int stopping;

    struct buf head;            /* scratch for serialising response heads */
    char rbuf[64 * 1024];       /* plain sockets read into this, parse in place */
    llhttp_settings_t settings; /* shared by every parser */
};

/* Sets up the llhttp callbacks in srv->settings. */
void conn_init_settings(struct server *srv);
/* Takes over an accepted socket (plain or TLS), whose requests go to h
 * (the admin listener's or an extra listener's handler; NULL: the
 * server's own). Returns 0 or -1 (the socket is closed on failure). */
int conn_accept(struct server *srv, int fd, const struct sockaddr *sa, int tls,
                const struct req_handler *h);
/* After the handler's sync(): ok = send every held reply and go on reading;
 * !ok = drop those connections without sending their replies. */
void conn_release_all(struct server *srv, int ok);
/* Graceful stop: closes the connections that owe nothing now; the others
 * finish their request (the reply says Connection: close) and close. */
void conn_stop_all(struct server *srv);
/* At the connection cap: closes the connection idle longest (one not
 * waiting for a group commit, an injected delay or a deferred answer). Returns 0, or -1 when
 * no connection can be closed. */
int conn_evict_idlest(struct server *srv);
/* Closes every connection (end of run). */
void conn_free_all(struct server *srv);
/* Makes sure the group-commit event runs this loop turn. */
void server_want_sync(struct server *srv);
/* Arranges a stdout flush shortly after access-log lines were written. */
void server_note_access(struct server *srv);

#endif
