/* reply.c - error bodies and the headers every response carries
 * (doc/protocol.md, Common response headers; Error bodies; Response header sets). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "codec/atom.h"
#include "protocol/authlog.h"
#include "protocol/ctx.h"
#include "codec/edm.h"

static const char *const content_types[] = {
    "application/json;odata=nometadata;streaming=true;charset=utf-8",
    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
    "application/json;odata=fullmetadata;streaming=true;charset=utf-8",
};

void reply_json_content_type(struct req_ctx *c)
{
    response_header_ref(c->resp, "Content-Type", content_types[c->level],
                        strlen(content_types[c->level]));
}

const char *reply_metadata_url(struct req_ctx *c, const char *suffix)
{
    return arena_concat(c->a, c->base, "/$metadata#", suffix, (char *)NULL);
}

/* Appends s (n bytes) to b with the XML special characters escaped. */
static void xml_escape(struct buf *b, const char *s, size_t n)
{
    for (const char *end = s + n; s < end; s++) {
        switch (*s) {
        case '<': buf_puts(b, "&lt;"); break;
        case '>': buf_puts(b, "&gt;"); break;
        case '&': buf_puts(b, "&amp;"); break;
        case '"': buf_puts(b, "&quot;"); break;
        default: buf_putc(b, *s);
        }
    }
}

/* Whether an error of c is answered in Atom's XML: Atom was negotiated,
 * or negotiation was not reached and would pick Atom (the version has no
 * JSON, or the request's Accept asks for Atom or nothing). */
static int reply_atom(struct req_ctx *c)
{
    if (c->atom)
        return 1;
    if (!odata_atom_allowed(c))
        return 0;
    if (strcmp(c->version, "2013-08-15") < 0)
        return 1;
    if (c->negotiated)
        return 0;
    struct req_ctx tmp = *c;
    odata_negotiate(&tmp, 1);
    return tmp.atom;
}

void reply_atom_content_type(struct req_ctx *c)
{
    response_header(c->resp, "Content-Type", ATOM_CONTENT_TYPE);
    response_header(c->resp, "DataServiceVersion",
                    url_query_get(c->qp, c->nqp, "$select") ? "2.0;" : "1.0;");
}

/* The batch prefix, the message text (len bytes: it may hold NUL bytes,
 * a key's value does), and the RequestId and Time lines (doc/protocol.md, Error bodies), in
 * the arena; *n its length. */
static const char *full_message(struct req_ctx *c, const char *message, size_t len, size_t *n)
{
    char t[40];
    edm_datetime_format7(edm_now_ticks(), t);
    const char *prefix = c->msg_prefix ? c->msg_prefix : "";
    const char *tail = arena_sprintf(c->a, "\nRequestId:%s\nTime:%s", c->request_id, t);
    size_t pl = strlen(prefix), tl = strlen(tail);
    char *m = arena_alloc(c->a, pl + len + tl + 1);
    memcpy(m, prefix, pl);
    memcpy(m + pl, message, len);
    memcpy(m + pl + len, tail, tl + 1);
    *n = pl + len + tl;
    return m;
}

void reply_set_error_msg(struct req_ctx *c, enum terr e, const char *message, size_t len)
{
    c->err_code = e;
    c->err_msg = message;
    c->err_msg_len = len;
}

void reply_error_msg(struct req_ctx *c, enum terr e, const char *message)
{
    const struct terr_info *info = terr_info(e);
    struct response *r = c->resp;
    size_t len;
    if (message) {
        len = strlen(message);
    } else if (c->err_msg && c->err_code == e) {
        message = c->err_msg;
        len = c->err_msg_len;
    } else {
        message = info->message;
        len = strlen(message);
    }
    size_t msg_len;
    const char *msg = full_message(c, message, len, &msg_len);
    r->status = info->status;
    buf_reset(&r->body);
    /* Drop headers an operation may have added before failing. */
    r->nheaders = 0;
    if (c->prefer_echo && c->prefer)
        response_header(r, "Preference-Applied", c->prefer);
    if (e == TERR_AtomFormatNotSupported) {
        /* OData XML error in the default namespace (doc/protocol.md, OData XML errors). */
        response_header(r, "Content-Type", "application/xml;charset=utf-8");
        buf_puts(&r->body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><error xmlns=\""
                           "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><code>");
        buf_puts(&r->body, info->code);
        buf_puts(&r->body, "</code><message xml:lang=\"en-US\">");
        xml_escape(&r->body, msg, msg_len);
        buf_puts(&r->body, "</message></error>");
    } else if (c->odata && reply_atom(c)) {
        /* Atom requests get the OData XML error (doc/protocol.md, OData XML errors). */
        response_header(r, "Content-Type", "application/xml;charset=utf-8");
        response_header(r, "x-ms-error-code", info->code);
        atom_write_error(&r->body, info->code, msg, msg_len);
    } else if (c->odata) {
        reply_json_content_type(c);
        buf_puts(&r->body, "{\"odata.error\":{\"code\":\"");
        buf_puts(&r->body, info->code);
        buf_puts(&r->body, "\",\"message\":{\"lang\":\"en-US\",\"value\":");
        json_put_string(&r->body, msg, msg_len);
        buf_puts(&r->body, "}}}");
    } else {
        response_header(r, "Content-Type", "application/xml");
        response_header(r, "x-ms-error-code", info->code);
        buf_puts(&r->body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><m:error xmlns:m=\""
                           "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><m:code>");
        buf_puts(&r->body, info->code);
        buf_puts(&r->body, "</m:code><m:message xml:lang=\"en-US\">");
        xml_escape(&r->body, msg, msg_len);
        buf_puts(&r->body, "</m:message></m:error>");
    }
    if (r->no_body) {
        /* HEAD: status and code only (doc/protocol.md, Choosing the error format). */
        if (!response_get_header(r, "x-ms-error-code"))
            response_header(r, "x-ms-error-code", info->code);
    }
    if (info->status == 431 || info->status == 505)
        r->close = 1;
}

void reply_auth_error(struct req_ctx *c, enum terr e)
{
    const struct auth_result *ar = &c->auth;
    if (!c->auth_logged)
        authlog_refusal(c, e, ar);
    reply_error_msg(c, e, ar->message);
    if (ar->http_status)
        c->resp->status = ar->http_status;
    if (ar->www_authenticate)
        response_header(c->resp, "WWW-Authenticate", ar->www_authenticate);
    if (ar->detail && !c->odata && c->resp->body.len > 20) {
        /* Storage XML bodies carry the detail after the message. */
        struct buf *b = &c->resp->body;
        const char *tail = "</m:error>";
        size_t tl = strlen(tail);
        if (b->len > tl && memcmp(b->data + b->len - tl, tail, tl) == 0) {
            b->len -= tl;
            buf_puts(b, "<AuthenticationErrorDetail>");
            xml_escape(b, ar->detail, strlen(ar->detail));
            buf_puts(b, "</AuthenticationErrorDetail>");
            buf_puts(b, tail);
        }
    }
}

void reply_error(struct req_ctx *c, enum terr e)
{
    reply_error_msg(c, e, NULL);
}

/* Date header text, recomputed at most once a second. */
static const char *http_date(void)
{
    static time_t cached;
    static char text[40];
    time_t now = time(NULL);
    if (now != cached) {
        edm_rfc1123_format((int64_t)now, text);
        cached = now;
    }
    return text;
}

/* A header whose name and value outlive the response (literals, the
 * version table, the request's own header text): not copied. */
static void header_lit(struct response *r, const char *name, const char *value)
{
    response_header_ref(r, name, value, strlen(value));
}

void reply_finish(struct req_ctx *c)
{
    struct response *r = c->resp;
    if (c->odata)
        header_lit(r, "Cache-Control", "no-cache");
    header_lit(r, "Server", "Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0");
    size_t idn = strlen(c->request_id);
    r->request_id = arena_strndup(r->arena, c->request_id, idn);
    response_header_ref(r, "x-ms-request-id", r->request_id, idn);
    const char *cid = request_header(c->req, "x-ms-client-request-id");
    if (cid)
        header_lit(r, "x-ms-client-request-id", cid);
    header_lit(r, "x-ms-version", c->version_echo ? c->version_echo : c->version);
    if (c->odata)
        header_lit(r, "X-Content-Type-Options", "nosniff");
    response_header(r, "Date", http_date()); /* the text changes each second */
}
