/* dump_fetch.c - `tabled export --admin URL`: the export of a running
 * server, read from its admin listener's GET /export (a chunked body, see
 * tools/dump_serve.c) through the tools' HTTP client (tools/httpc.h) and
 * written to a file as it arrives. A body that
 * ends without its last chunk (the server stopped, the store failed) is an
 * error: the file is then incomplete. */
#include "tools/dump_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "tools/httpc.h"

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
    buf_putc(b, b->data && strchr(b->data, '?') ? '&' : '?');
    buf_puts(b, name);
    buf_putc(b, '=');
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
            buf_putc(b, (char)*p);
        else
            buf_printf(b, "%%%02X", *p);
    }
}

/* The sink of GET /export's body: counted and written as it arrives. */
struct fetch_sink {
    FILE *out;
    struct line_count lc;
};

static int fetch_take(void *arg, const char *p, size_t n, char *err, size_t errlen)
{
    struct fetch_sink *fs = arg;
    line_feed(&fs->lc, p, n);
    if (fwrite(p, 1, n, fs->out) != n) {
        snprintf(err, errlen, "write failed: %m");
        return -1;
    }
    return 0;
}

int dump_fetch(struct dump *d, FILE *out, char *err, size_t errlen)
{
    struct httpc_url u;
    if (httpc_parse_url(d->admin, &u) < 0) {
        snprintf(err, errlen, "--admin expects http://HOST:PORT, got '%.300s'", d->admin);
        return -1;
    }
    struct buf target;
    buf_init(&target);
    buf_puts(&target, "/export");
    if (d->account)
        put_param(&target, "account", d->account);
    if (d->table)
        put_param(&target, "table", d->table);
    struct fetch_sink fs = {.out = out};
    struct httpc_req req = {.method = "GET", .target = target.data, .token = d->admin_token,
                            .timeout_s = FETCH_TIMEOUT_S, .sink = fetch_take,
                            .sink_arg = &fs, .max = 512};
    struct httpc_answer ans;
    int rc = httpc_do(&u, &req, &ans, err, errlen);
    buf_free(&target);
    if (rc != 0) {
        buf_free(&ans.body);
        return -1;
    }
    rc = -1;
    if (ans.table) {
        snprintf(err, errlen, "%.300s is the table port, not the admin listener; give "
                 "--admin the URL of the port set with --admin-port (default "
                 "http://127.0.0.1:10003)", d->admin);
    } else if (ans.status != 200) {
        const char *b = ans.body.data ? ans.body.data : "";
        snprintf(err, errlen, "GET %s/export answered %d: %.*s", d->admin, ans.status,
                 (int)strcspn(b, "\r\n"), b);
    } else if (!ans.complete) {
        snprintf(err, errlen, "the export was cut short (the server closed the connection "
                 "before its end): the file is incomplete");
    } else {
        rc = 0;
    }
    d->nentities = fs.lc.entities;
    d->ntables = fs.lc.tables;
    buf_free(&ans.body);
    return rc;
}
