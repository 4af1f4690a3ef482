/* wing_harness.h - what the server wing's tests share: a server (the
 * wing with the echo handler, tests/unit/echo_handler.h) in a forked child,
 * and a small blocking HTTP/1.1 client (plain or TLS) to drive it. */
#ifndef TABLED_WING_HARNESS_H
#define TABLED_WING_HARNESS_H
#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "server/config.h"

struct child {
    pid_t pid;
    int port;
    int tls_port;
};

struct client {
    int fd;
    SSL *ssl;
    char *buf;
    size_t len, cap;
};

struct reply {
    int status;
    char *head;     /* status line + headers, NUL-terminated */
    char *body;     /* NUL-terminated */
    size_t body_len;
};

/* Forks a server for cfg answered by the echo handler (echo_handler.h);
 * the child reports its ports through a pipe. */
int start_server(struct config *cfg, struct child *ch);
/* Sends SIGTERM and returns the child's exit status (-1 if it crashed). */
int stop_server(struct child *ch);
/* Connects c to 127.0.0.1:port (a 15 s receive timeout against hangs):
 * 0 or -1. */
int dial(struct client *c, int port);
/* Closes c and frees its buffer. */
void hangup(struct client *c);
/* Sends n bytes (or the string s): 0, or -1 when the connection failed. */
int send_bytes(struct client *c, const char *p, size_t n);
int send_str(struct client *c, const char *s);
/* Reads more bytes into the buffer: >0 bytes read, 0 EOF, -1 error. */
ssize_t fill(struct client *c);
/* Drops the first n buffered bytes. */
void consume(struct client *c, size_t n);
void reply_free(struct reply *r);
/* Reads one response; head_only for HEAD (no body despite Content-Length).
 * Returns 0, or -1 when the connection ended first. */
int read_reply(struct client *c, struct reply *r, int head_only);
/* 1 when the server closed the connection with nothing more to read. */
int at_eof(struct client *c);
/* 1 when the reply has the header line "Name: value" (name case-blind). */
int has_header(const struct reply *r, const char *line);
/* One request on a fresh connection; returns the reply (status -1 when
 * none came). */
struct reply one_shot(int port, const char *req);

#endif
