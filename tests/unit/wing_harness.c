/* wing_harness.c - the server wing tests' child server and client (see
 * wing_harness.h). */
#include "tests/unit/wing_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "core/metrics.h"
#include "server/server.h"
#include "tests/unit/echo_handler.h"

/* ---- server in a child process ---- */

/* Forks a server for cfg answered by the echo handler (echo_handler.h);
 * the child reports its ports through a pipe. */
int start_server(struct config *cfg, struct child *ch)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(pfd[0]);
        /* The access log goes to stdout: keep it out of the TAP output
         * (its buffered writes could split our "ok" lines). */
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        close(devnull);
        signal(SIGPIPE, SIG_IGN);
        log_set_level(LOG_WARN);
        char err[512];
        struct echo *echo = echo_new();
        struct req_handler handler = echo_handler(echo);
        struct metrics *m = metrics_new(cfg->accounts, cfg->naccounts);
        struct server *srv = server_new(cfg, NULL, &handler, err, sizeof err);
        int ports[2] = {-1, -1};
        if (srv) {
            ports[0] = server_port(srv);
            ports[1] = server_tls_port(srv);
        } else {
            fprintf(stderr, "server_new: %s\n", err);
        }
        if (write(pfd[1], ports, sizeof ports) != sizeof ports)
            _exit(3);
        close(pfd[1]);
        if (!srv)
            _exit(3);
        server_attach(srv, NULL, m, NULL);
        echo_attach(echo, server_base(srv), m);
        server_run(srv);
        server_free(srv);
        echo_free(echo);
        metrics_free(m);
        exit(0);  /* exit, not _exit: lets LeakSanitizer check the server */
    }
    close(pfd[1]);
    int ports[2];
    ssize_t n = read(pfd[0], ports, sizeof ports);
    close(pfd[0]);
    if (n != sizeof ports || ports[0] <= 0)
        return -1;
    ch->pid = pid;
    ch->port = ports[0];
    ch->tls_port = ports[1];
    return 0;
}

/* Sends SIGTERM and returns the child's exit status (-1 if it crashed). */
int stop_server(struct child *ch)
{
    int st;
    kill(ch->pid, SIGTERM);
    if (waitpid(ch->pid, &st, 0) != ch->pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- a tiny blocking HTTP client ---- */

int dial(struct client *c, int port)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* A safety net against hangs, not a timing assertion. */
    struct timeval tv = {15, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->cap = 1 << 16;
    c->buf = malloc(c->cap);
    return connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
}

void hangup(struct client *c)
{
    if (c->ssl)
        SSL_free(c->ssl);
    close(c->fd);
    free(c->buf);
    c->buf = NULL;
}

int send_bytes(struct client *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = c->ssl ? SSL_write(c->ssl, p, (int)n) : send(c->fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int send_str(struct client *c, const char *s)
{
    return send_bytes(c, s, strlen(s));
}

/* Reads more bytes into the buffer: >0 bytes read, 0 EOF, -1 error. */
ssize_t fill(struct client *c)
{
    if (c->cap - c->len < 65536) {
        c->cap *= 2;
        c->buf = realloc(c->buf, c->cap);
    }
    ssize_t n = c->ssl ? SSL_read(c->ssl, c->buf + c->len, (int)(c->cap - c->len - 1))
                       : recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
    if (n > 0)
        c->len += (size_t)n;
    return n < 0 ? -1 : n;
}

void consume(struct client *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

void reply_free(struct reply *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Reads one response; head_only for HEAD (no body despite Content-Length).
 * Returns 0, or -1 when the connection ended first. */
int read_reply(struct client *c, struct reply *r, int head_only)
{
    memset(r, 0, sizeof *r);
    char *end;
    for (;;) {
        c->buf[c->len] = '\0';
        if (c->len && (end = strstr(c->buf, "\r\n\r\n")))
            break;
        if (fill(c) <= 0)
            return -1;
    }
    size_t hlen = (size_t)(end - c->buf) + 4;
    r->head = strndup(c->buf, hlen);
    r->status = atoi(r->head + 9);
    size_t clen = 0;
    char *cl = strcasestr(r->head, "\r\nContent-Length:");
    if (cl)
        clen = strtoul(cl + 17, NULL, 10);
    if (head_only || r->status == 100)
        clen = 0;
    while (c->len < hlen + clen)
        if (fill(c) <= 0)
            return -1;
    r->body = malloc(clen + 1);
    memcpy(r->body, c->buf + hlen, clen);
    r->body[clen] = '\0';
    r->body_len = clen;
    consume(c, hlen + clen);
    return 0;
}

/* 1 when the server closed the connection with nothing more to read. */
int at_eof(struct client *c)
{
    if (c->len)
        return 0;
    return fill(c) == 0;
}

int has_header(const struct reply *r, const char *line)
{
    char want[256];
    snprintf(want, sizeof want, "\r\n%s\r\n", line);
    return strcasestr(r->head, want) != NULL;
}

/* One request on a fresh connection; returns the reply (status -1 when
 * none came). */
struct reply one_shot(int port, const char *req)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, req);
    if (read_reply(&c, &r, 0) < 0)
        r.status = -1;
    hangup(&c);
    return r;
}
