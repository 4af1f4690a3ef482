/* http.h - the request and response as the protocol layer sees them.
 *
 * The server wing (server/conn.c) fills a struct request from the wire
 * (llhttp callbacks) and hands it to the handler main() registered
 * (server/handler.h: the Table service); the handler fills a struct
 * response, which the wing serialises (status line, headers,
 * Content-Length or chunked framing, Connection handling). The protocol
 * layer never touches a socket.
 *
 * Ownership: every pointer in a request (and every header a response holds)
 * lives in the request's arena and dies when the response has been written.
 * The response body is a struct buf owned by the response. */
#ifndef TABLED_HTTP_H
#define TABLED_HTTP_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"

/* Methods we route. Values are our own, not llhttp's. */
enum http_method {
    HTTP_M_OTHER = 0,
    HTTP_M_GET,
    HTTP_M_HEAD,
    HTTP_M_POST,
    HTTP_M_PUT,
    HTTP_M_DELETE,
    HTTP_M_MERGE,
    HTTP_M_PATCH,
    HTTP_M_OPTIONS,
};

struct http_header {
    const char *name;   /* NUL-terminated, as received / as to be sent */
    const char *value;  /* NUL-terminated; leading/trailing blanks trimmed */
    size_t value_len;
};

struct request {
    struct arena *arena;
    enum http_method method;
    const char *method_name;  /* e.g. "GET", "MERGE", NUL-terminated */
    int http_major, http_minor;
    const char *target;       /* raw request-target, NUL-terminated */
    const char *path;         /* raw path before '?', not percent-decoded */
    size_t path_len;
    const char *query;        /* raw text after '?', "" when absent */
    size_t query_len;
    struct http_header *headers;
    size_t nheaders;
    const char *body;         /* NULL when no body; NUL-terminated otherwise,
                                 except in a $batch operation's request,
                                 where it is a slice of the batch body */
    size_t body_len;
    int tls;                  /* arrived over HTTPS */
    char peer_ip[64];         /* client address, text form */
    uint64_t start_us;        /* monotonic microseconds at first byte */
    size_t reply_budget;      /* 0, or the body size a reply should stay near
                                 where the protocol allows (a query page ends
                                 early with a continuation): set by the wing
                                 while the process holds much unsent output */
};

/* Why the wing answers a request itself, without the handler's handle():
 * the request could not be parsed or kept. The handler's fail() turns the
 * reason into its own error answer (codec/errors.c: a Table error). */
enum http_fail {
    HTTP_FAIL_HEADERS_TOO_LARGE = 1, /* request head (or trailers) over max_header_bytes */
    HTTP_FAIL_BAD_REQUEST,           /* malformed HTTP: request line, header name, framing */
    HTTP_FAIL_BODY_TOO_LARGE,        /* body (announced or received) over max_body_bytes */
    HTTP_FAIL_TIMEOUT,               /* the whole request did not arrive within its deadline */
};

/* First header named name (case-insensitive), or NULL. */
const char *request_header(const struct request *req, const char *name);
/* 1 for an RFC 9110 token character (header names, methods). */
extern const unsigned char http_tchar_map[256];
static inline int http_is_tchar(unsigned char c)
{
    return http_tchar_map[c];
}
/* The first header named name (case-insensitive), or NULL. */
const struct http_header *request_header_find(const struct request *req, const char *name);
/* How many headers carry that name (case-insensitive). */
size_t request_header_count(const struct request *req, const char *name);

/* A body made in pieces as the client takes it (GET /export): the wing
 * sends it with Transfer-Encoding: chunked after the head, one fill() per
 * loop turn while the connection's unsent output is small, then closes
 * the connection. fill appends about max bytes or fewer to out and
 * returns 1 (more to come), 0 (done: the last chunk is sent) or -1
 * (failed: the connection is closed without the last chunk, so the
 * client sees a cut body). free releases arg, whatever happened. */
struct response_stream {
    int (*fill)(void *arg, struct buf *out, size_t max);
    void (*free)(void *arg);
    void *arg;
};

struct response {
    struct arena *arena;      /* same arena as the request */
    int status;               /* 0 until set */
    const char *reason;       /* NULL: standard phrase for the status */
    struct http_header *headers;
    size_t nheaders, cap;
    struct buf body;
    int close;                /* close the connection after writing */
    int no_body;              /* HEAD: send headers (with Content-Length) only */
    /* Fault injection (guard/fault.h): the wing sends the answer delay_ms late
     * without blocking the loop (later requests of the connection wait
     * behind it), or with reset set sends nothing and resets the
     * connection (RST). */
    int delay_ms;
    int reset;
    struct response_stream stream;   /* fill == NULL: the body is body */
    /* The answer's request id, as its handler sent it (a header of its
     * protocol), for the access log; NULL: none. Arena or static memory. */
    const char *request_id;
};

void response_init(struct response *resp, struct arena *arena);
void response_free(struct response *resp);  /* frees the body buffer */
/* Adds a header; name and value are copied into the arena. */
void response_header(struct response *resp, const char *name, const char *value);
/* The same without copies: name and value (NUL-terminated, value_len bytes)
 * must live as long as the response (literals, arena strings). */
void response_header_ref(struct response *resp, const char *name, const char *value,
                         size_t value_len);
void response_headerf(struct response *resp, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Value of a header already added (case-insensitive), or NULL. */
const char *response_get_header(const struct response *resp, const char *name);
/* The same header as a whole (value_len too), or NULL. */
const struct http_header *response_find_header(const struct response *resp, const char *name);
/* Standard reason phrase ("Not Found") for a status code. */
const char *http_reason(int status);

#endif
