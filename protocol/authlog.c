/* authlog.c - the log line of a refused request (see authlog.h). */
#include "protocol/authlog.h"

#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "codec/errors.h"

/* Longest path and string to sign quoted in a line. */
#define AUTHLOG_PATH_MAX 256
#define AUTHLOG_STS_MAX 1024

/* Appends at most max bytes of s[0..n) to b, newlines as \n and other
 * control bytes and quotes as \xHH, so one line stays one line. */
static void put_escaped(struct buf *b, const char *s, size_t n, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n') {
            buf_puts(b, "\\n");
        } else if (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\') {
            char e[4] = {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
            buf_append(b, e, 4);
        } else {
            buf_putc(b, (char)ch);
        }
    }
    if (i < n)
        buf_puts(b, "...");
}

void authlog_refusal(struct req_ctx *c, enum terr e, const struct auth_result *ar)
{
    enum auth_why why = ar->why;
    const char *name = auth_why_name(why);
    c->auth_logged = 1;
    if (!log_limit_take(LOG_INFO, LOG_KEY_AUTH + (unsigned)why, name))
        return;
    const struct request *req = c->req;
    const struct terr_info *ti = terr_info(e);
    int status = ar->http_status ? ar->http_status : ti->status;
    struct buf b;
    buf_init(&b);
    const char *text = ar->why_text ? ar->why_text : name;
    put_escaped(&b, text, strlen(text), 1024);
    buf_puts(&b, "; request ");
    buf_puts(&b, c->request_id);
    buf_putc(&b, ' ');
    put_escaped(&b, req->method_name ? req->method_name : "-",
                req->method_name ? strlen(req->method_name) : 1, 32);
    buf_putc(&b, ' ');
    /* the path only: a SAS's sig is in the query, which is never logged */
    put_escaped(&b, req->path ? req->path : "/", req->path ? req->path_len : 1, AUTHLOG_PATH_MAX);
    log_info("request refused (%s): %s from %s, answered %d %s", name, b.data,
             req->peer_ip[0] ? req->peer_ip : "-", status, ti->code);
    if (ar->sts && log_get_level() >= LOG_DEBUG) {
        buf_reset(&b);
        put_escaped(&b, ar->sts, strlen(ar->sts), AUTHLOG_STS_MAX);
        log_debug("request refused (%s): request %s: the server's string to sign was \"%s\"", name,
                  c->request_id, b.data);
    }
    buf_free(&b);
}

enum terr authlog_authorize(struct req_ctx *c, const struct auth_op *op)
{
    enum auth_status s = auth_authorize(&c->auth, op);
    if (s == AUTH_OK)
        return TERR_NONE;
    enum terr e = terr_from_auth(s);
    struct auth_result ar = c->auth;
    ar.why_text = auth_authorize_explain(c->a, &c->auth, op, s, &ar.why);
    ar.sts = NULL;
    authlog_refusal(c, e, &ar);
    return e;
}
