/* httpc.c - the tools' HTTP/1.1 client (see httpc.h). */
#include "tools/httpc.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int httpc_parse_url(const char *url, struct httpc_url *u)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *h = url + 7, *end = h + strcspn(h, "/");
    const char *colon;
    if (*h == '[') {
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb || (size_t)(rb - h - 1) >= sizeof u->host)
            return -1;
        snprintf(u->host, sizeof u->host, "%.*s", (int)(rb - h - 1), h + 1);
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        size_t n = (size_t)((colon ? colon : end) - h);
        if (n == 0 || n >= sizeof u->host)
            return -1;
        snprintf(u->host, sizeof u->host, "%.*s", (int)n, h);
    }
    if (colon) {
        size_t n = (size_t)(end - colon - 1);
        if (n == 0 || n >= sizeof u->port)
            return -1;
        snprintf(u->port, sizeof u->port, "%.*s", (int)n, colon + 1);
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    size_t xl = strlen(end);
    while (xl > 0 && end[xl - 1] == '/')
        xl--;
    if (xl >= sizeof u->prefix)
        return -1;
    snprintf(u->prefix, sizeof u->prefix, "%.*s", (int)xl, end);
    return 0;
}

int httpc_connect(const char *host, const char *port, int timeout_s, char *err, size_t errlen)
{
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval tv = {timeout_s, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            snprintf(err, errlen, "nothing answers at http://%s%s%s:%s (%m); start the server "
                     "with --admin-port N and give --admin http://127.0.0.1:N",
                     strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

int httpc_is_table_answer(const char *head, const char *body)
{
    if (head && strcasestr(head, "\r\nx-ms-request-id:"))
        return 1;
    return body && (strstr(body, "\"odata.error\"") || strstr(body, "<m:error") ||
                    strstr(body, "<Error>"));
}

/* Sends all of p[0..n). 0, or -1. */
static int send_all(int fd, const void *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

/* Body bytes: to the sink (a 200 answer with one), else kept up to max. */
static int take(const struct httpc_req *r, struct httpc_answer *a, const char *p, size_t n,
                char *err, size_t errlen)
{
    if (r->sink && a->status == 200)
        return r->sink(r->sink_arg, p, n, err, errlen);
    size_t room = r->max > a->body.len ? r->max - a->body.len : 0;
    buf_append(&a->body, p, n < room ? n : room);
    return 0;
}

/* Reads n body bytes (n < 0: up to the close). 1 when all came, 0 when
 * the connection ended first, -1 when the sink stopped. */
static int read_body(FILE *in, const struct httpc_req *r, struct httpc_answer *a, long long n,
                     char *err, size_t errlen)
{
    char data[65536];
    while (n != 0) {
        size_t want = n < 0 || n > (long long)sizeof data ? sizeof data : (size_t)n;
        size_t got = fread(data, 1, want, in);
        if (got == 0)
            return n < 0 ? 1 : 0;
        if (take(r, a, data, got, err, errlen) != 0)
            return -1;
        if (n > 0)
            n -= (long long)got;
    }
    return 1;
}

/* Reads a chunked body. 1 complete, 0 cut short, -1 the sink stopped. */
static int read_chunked(FILE *in, const struct httpc_req *r, struct httpc_answer *a,
                        char *err, size_t errlen)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        if (getline(&line, &cap, in) <= 0)
            break;
        char *e;
        unsigned long long sz = strtoull(line, &e, 16);
        if (e == line)
            break;
        if (sz == 0) {
            rc = 1;
            break;
        }
        if ((rc = read_body(in, r, a, (long long)sz, err, errlen)) != 1)
            break;
        rc = 0;
        if (getline(&line, &cap, in) <= 0 || strcmp(line, "\r\n") != 0)
            break;
    }
    free(line);
    return rc;
}

int httpc_do(const struct httpc_url *u, const struct httpc_req *r, struct httpc_answer *a,
             char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    buf_init(&a->body);
    int fd = httpc_connect(u->host, u->port, r->timeout_s, err, errlen);
    if (fd < 0)
        return -1;
    int v6 = strchr(u->host, ':') != NULL;
    struct buf head;
    buf_init(&head);
    buf_printf(&head, "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n", r->method, u->prefix, r->target,
               v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
    if (r->token && *r->token)
        buf_printf(&head, "Authorization: Bearer %s\r\n", r->token);
    if (r->accept)
        buf_printf(&head, "Accept: %s\r\n", r->accept);
    if (r->body)
        buf_printf(&head, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                   r->content_type ? r->content_type : "application/octet-stream",
                   r->body_len);
    buf_puts(&head, "Connection: close\r\n\r\n");
    /* a server that refuses early (401, 413) may close before the whole
       body is sent: its answer is still read */
    int unsent = send_all(fd, head.data, head.len) != 0 ||
                 (r->body && send_all(fd, r->body, r->body_len) != 0);
    buf_free(&head);
    FILE *in = fdopen(fd, "r");
    if (!in) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long long clen = -1;
    int chunked = 0, rc = -1;
    struct buf hdrs;
    buf_init(&hdrs);
    if (getline(&line, &cap, in) <= 0 || sscanf(line, "HTTP/1.%*d %d", &a->status) != 1) {
        snprintf(err, errlen, "no HTTP answer from %s:%s%s", u->host, u->port,
                 unsent ? " (sending the request failed)" : "");
        goto out;
    }
    buf_puts(&hdrs, line);
    while (getline(&line, &cap, in) > 0 && strcmp(line, "\r\n") != 0) {
        buf_puts(&hdrs, line);
        if (!strncasecmp(line, "content-length:", 15))
            clen = strtoll(line + 15, NULL, 10);
        else if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked"))
            chunked = 1;
        else if (!strncasecmp(line, "retry-after:", 12))
            snprintf(a->retry_after, sizeof a->retry_after, "%.*s",
                     (int)strcspn(line + 12 + strspn(line + 12, " "), "\r\n"),
                     line + 12 + strspn(line + 12, " "));
    }
    int body = chunked ? read_chunked(in, r, a, err, errlen)
                       : read_body(in, r, a, clen, err, errlen);
    if (body < 0)
        goto out;
    a->complete = body == 1;
    buf_putc(&a->body, '\0');
    a->body.len--;
    a->table = httpc_is_table_answer(hdrs.data, a->body.data);
    rc = 0;
out:
    buf_free(&hdrs);
    free(line);
    fclose(in);
    return rc;
}
