/* dump_fetch.c - `tabled export --admin URL`: the export of a running
 * server, read from its admin listener's GET /export (a chunked body, see
 * tools/dump_serve.c) and written to a file as it arrives. A body that
 * ends without its last chunk (the server stopped, the store failed) is an
 * error: the file is then incomplete. */
#include "tools/dump_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/advise.h"
#include "core/buf.h"

/* How long a connect or a read may wait (a server under load, or a large
 * export's catalogue read in the turn of the request). */
#define FETCH_TIMEOUT_S 300

/* Counts the entity and table lines of the body as it passes (an entity
 * line starts {"account":A,"table":T,"ticks":, a table line has "acl"). */
struct line_count {
    char start[200];
    size_t n;
    unsigned long long entities, tables;
};

/* Classifies the line whose beginning is in lc->start. */
static void line_done(struct line_count *lc)
{
    lc->start[lc->n < sizeof lc->start ? lc->n : sizeof lc->start - 1] = '\0';
    if (!strncmp(lc->start, "{\"account\":", 11)) {
        if (strstr(lc->start, "\",\"ticks\":"))
            lc->entities++;
        else if (strstr(lc->start, "\",\"acl\":"))
            lc->tables++;
    }
    lc->n = 0;
}

/* Feeds body bytes to the counter. */
static void line_feed(struct line_count *lc, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n')
            line_done(lc);
        else if (lc->n++ < sizeof lc->start - 1)
            lc->start[lc->n - 1] = p[i];
    }
}

/* Appends name=value (percent-encoded) to the query in b. */
static void put_param(struct buf *b, const char *name, const char *value)
{
    buf_putc(b, strchr(b->data, '?') ? '&' : '?');
    buf_puts(b, name);
    buf_putc(b, '=');
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
            buf_putc(b, (char)*p);
        else
            buf_printf(b, "%%%02X", *p);
    }
}

/* Reads the chunked body from in into out. 0, or -1 with a message. */
static int copy_chunked(FILE *in, FILE *out, struct line_count *lc, char *err, size_t errlen)
{
    char *line = NULL, data[65536];
    size_t cap = 0;
    int rc = -1;
    for (;;) {
        if (getline(&line, &cap, in) <= 0) {
            snprintf(err, errlen, "the export was cut short (the server closed the "
                     "connection before its end): the file is incomplete");
            break;
        }
        char *e;
        unsigned long long sz = strtoull(line, &e, 16);
        if (e == line) {
            snprintf(err, errlen, "malformed chunked body");
            break;
        }
        if (sz == 0) {
            rc = 0;
            break;
        }
        while (sz > 0) {
            size_t want = sz < sizeof data ? (size_t)sz : sizeof data;
            size_t n = fread(data, 1, want, in);
            if (n == 0)
                break;
            line_feed(lc, data, n);
            if (fwrite(data, 1, n, out) != n) {
                snprintf(err, errlen, "write failed: %m");
                free(line);
                return -1;
            }
            sz -= n;
        }
        if (sz > 0 || getline(&line, &cap, in) <= 0 || strcmp(line, "\r\n") != 0) {
            snprintf(err, errlen, "the export was cut short (the server closed the "
                     "connection before its end): the file is incomplete");
            break;
        }
    }
    free(line);
    return rc;
}

int dump_fetch(struct dump *d, FILE *out, char *err, size_t errlen)
{
    char host[256], port[16], prefix[512];
    if (advise_parse_url(d->admin, host, sizeof host, port, sizeof port, prefix,
                         sizeof prefix) < 0) {
        snprintf(err, errlen, "--admin expects http://HOST:PORT, got '%.300s'", d->admin);
        return -1;
    }
    int fd = advise_connect(host, port, FETCH_TIMEOUT_S, err, errlen);
    if (fd < 0)
        return -1;
    struct buf target, req;
    buf_init(&target);
    buf_init(&req);
    buf_printf(&target, "%s/export", prefix);
    if (d->account)
        put_param(&target, "account", d->account);
    if (d->table)
        put_param(&target, "table", d->table);
    buf_printf(&req, "GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\n", target.data,
               strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
    if (d->admin_token && *d->admin_token)
        buf_printf(&req, "Authorization: Bearer %s\r\n", d->admin_token);
    buf_puts(&req, "Connection: close\r\n\r\n");
    ssize_t w = send(fd, req.data, req.len, MSG_NOSIGNAL);
    buf_free(&req);
    buf_free(&target);
    FILE *in = w < 0 ? NULL : fdopen(fd, "r");
    if (!in) {
        snprintf(err, errlen, "sending the request failed: %m");
        close(fd);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int status = 0, chunked = 0, table = 0, rc = -1;
    if (getline(&line, &cap, in) <= 0 || sscanf(line, "HTTP/1.%*d %d", &status) != 1) {
        snprintf(err, errlen, "no HTTP answer from %s:%s", host, port);
        goto out;
    }
    while (getline(&line, &cap, in) > 0 && strcmp(line, "\r\n") != 0)
        if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked"))
            chunked = 1;
        else if (!strncasecmp(line, "x-ms-request-id:", 16))
            table = 1;
    if (status != 200 || !chunked) {
        char body[512];
        size_t n = fread(body, 1, sizeof body - 1, in);
        body[n] = '\0';
        body[strcspn(body, "\r\n")] = '\0';
        if (table || advise_is_table_answer(NULL, body))
            snprintf(err, errlen, "%.300s is the table port, not the admin listener; give "
                     "--admin the URL of the port set with --admin-port (default "
                     "http://127.0.0.1:10003)", d->admin);
        else
            snprintf(err, errlen, "GET %s/export answered %d: %.400s", d->admin, status, body);
        goto out;
    }
    struct line_count lc = {.n = 0};
    rc = copy_chunked(in, out, &lc, err, errlen);
    d->nentities = lc.entities;
    d->ntables = lc.tables;
out:
    free(line);
    fclose(in);
    return rc;
}
