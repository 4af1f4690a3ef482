/* httpc.h - the one HTTP/1.1 client of the tools: `tabled advise`
 * (GET /advisor), `tabled export --admin` (GET /export, a chunked body
 * streamed to a file) and `tabled import --admin` (POST /import), all
 * talking to a running server's admin listener.
 *
 * One request per connection (Connection: close). The answer's body is
 * read by its framing: Content-Length, chunked, or up to the close; a
 * body that ends before its framing says is reported as incomplete. */
#ifndef TABLED_HTTPC_H
#define TABLED_HTTPC_H
#include <stddef.h>

#include "core/buf.h"

/* An admin URL "http://HOST[:PORT][/PREFIX]" taken apart. */
struct httpc_url {
    char host[256];          /* without IPv6 brackets */
    char port[16];           /* "80" when the URL gives none */
    char prefix[512];        /* the path before the endpoint, no trailing '/' */
};

/* Splits url into u. 0, or -1 when malformed or too long. */
int httpc_parse_url(const char *url, struct httpc_url *u);

/* Connects to host:port with send and receive timeouts of timeout_s
 * seconds; the socket, or -1 with a message saying what to do. */
int httpc_connect(const char *host, const char *port, int timeout_s, char *err, size_t errlen);

/* One request. */
struct httpc_req {
    const char *method;      /* "GET", "POST" */
    const char *target;      /* the endpoint and query ("/export?table=T"),
                                after the URL's prefix */
    const char *token;       /* Authorization: Bearer, or NULL / "" */
    const char *accept;      /* Accept header, or NULL */
    const char *content_type;/* with a body */
    const void *body;        /* NULL: no body */
    size_t body_len;
    int timeout_s;           /* connect and each read or write */
    /* Where a 200 answer's body goes as it arrives (NULL: into the
       answer's body); returns 0, or -1 to stop (the request fails with
       the message it put in err). */
    int (*sink)(void *arg, const char *p, size_t n, char *err, size_t errlen);
    void *sink_arg;
    size_t max;              /* longest body kept in the answer (more is cut) */
};

/* What came back. */
struct httpc_answer {
    int status;
    int table;               /* the Table service answered (the URL is the
                                table port, not the admin listener) */
    char retry_after[16];    /* its Retry-After, or "" */
    struct buf body;         /* the body when no sink took it (buf_free it) */
    int complete;            /* the body ended as its framing says */
};

/* Sends r to u and reads the answer into a (a->body initialised here).
 * 0 once an answer came (whatever its status), or -1 with a message in err
 * (nothing answered, or the sink stopped). */
int httpc_do(const struct httpc_url *u, const struct httpc_req *r, struct httpc_answer *a,
             char *err, size_t errlen);

/* 1 when an HTTP answer (head: its status line and headers, body: its
 * body, both NUL-terminated, either may be NULL) is the Table service's
 * (an x-ms-request-id header, or a storage error body) rather than the
 * admin listener's. */
int httpc_is_table_answer(const char *head, const char *body);

#endif
