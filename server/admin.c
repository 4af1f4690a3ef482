/* admin.c - the admin listener's requests (see admin.h). */
#include "server/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "server/admin_access.h"
#include "server/advisor_http.h"
#include "core/coding.h"
#include "guard/fault.h"
#include "core/jsonwalk.h"
#include "core/log.h"
#include "server/metrics_text.h"

/* Seconds a GET /export refused while another runs is told to wait. */
#define ADMIN_EXPORT_RETRY_AFTER "10"

struct admin {
    struct metrics *metrics;
    struct fault_set *faults;
    struct admin_access access;   /* Host and token checks (admin_access.h) */
    struct advisor *advisor;   /* optional: /advisor, /dashboard */
    admin_export_fn export_start;  /* optional: /export */
    void *export_arg;
    admin_import_fn import;    /* optional: /import */
    void *import_arg;
};

struct admin *admin_new(struct metrics *m, struct fault_set *faults)
{
    struct admin *adm = calloc(1, sizeof *adm);
    if (!adm)
        abort();
    adm->metrics = m;
    adm->faults = faults;
    admin_access_init(&adm->access, NULL);
    return adm;
}

void admin_set_access(struct admin *adm, const struct config *cfg)
{
    admin_access_init(&adm->access, cfg);
}

void admin_set_advisor(struct admin *adm, struct advisor *adv)
{
    adm->advisor = adv;
}

void admin_set_export(struct admin *adm, admin_export_fn start, void *arg)
{
    adm->export_start = start;
    adm->export_arg = arg;
}

void admin_set_import(struct admin *adm, admin_import_fn fn, void *arg)
{
    adm->import = fn;
    adm->import_arg = arg;
}

void admin_free(struct admin *adm)
{
    free(adm);
}

static void admin_answer(struct admin *adm, const struct request *req,
                         struct response *resp);

/* Answers status with a JSON {"error": message} body. */
static void reply_json_error(struct response *resp, int status, const char *message)
{
    resp->status = status;
    buf_reset(&resp->body);
    response_header(resp, "Content-Type", "application/json");
    buf_puts(&resp->body, "{\"error\":\"");
    for (const char *p = message; *p; p++) {
        if (*p == '"' || *p == '\\')
            buf_putc(&resp->body, '\\');
        buf_putc(&resp->body, (unsigned char)*p < 0x20 ? ' ' : *p);
    }
    buf_puts(&resp->body, "\"}\n");
}

static void reply_method(struct response *resp, const char *allow)
{
    response_header(resp, "Allow", allow);
    reply_json_error(resp, 405, "method not allowed");
}

/* Applies the members of JSON object v to rule r. -1 with a message. */
static int rule_from_json(yajl_val v, struct fault_rule *r, char *err, size_t errlen)
{
    if (!YAJL_IS_OBJECT(v)) {
        snprintf(err, errlen, "a rule must be a JSON object");
        return -1;
    }
    for (size_t i = 0; i < v->u.object.len; i++) {
        const char *key = v->u.object.keys[i];
        yajl_val m = v->u.object.values[i];
        if (!strcmp(key, "matched") || !strcmp(key, "injected"))
            continue;
        const char *text;
        if (YAJL_IS_STRING(m))
            text = YAJL_GET_STRING(m);
        else if (YAJL_IS_NUMBER(m))
            text = YAJL_GET_NUMBER(m);
        else if (YAJL_IS_TRUE(m))
            text = "true";
        else if (YAJL_IS_FALSE(m))
            text = "false";
        else {
            snprintf(err, errlen, "rule member '%s' must be a string, number or boolean", key);
            return -1;
        }
        if (fault_rule_set(r, key, text, err, errlen) < 0)
            return -1;
    }
    return fault_rule_check(r, err, errlen);
}

/* Parses the request body as JSON; NULL with a message. The body is first
 * walked with a nesting limit and refused when it holds "\u0000" (rule
 * fields are C strings), so the tree built after is shallow and every
 * string in it is whole. */
static yajl_val parse_body(const struct request *req, char *err, size_t errlen)
{
    if (!req->body || !req->body_len) {
        snprintf(err, errlen, "a JSON body is required");
        return NULL;
    }
    char perr[256] = "";
    if (jsonwalk_parse(NULL, NULL, req->body, req->body_len, JSONWALK_MAX_DEPTH,
                       JSONWALK_NO_NUL, perr, sizeof perr) != JSONWALK_OK) {
        snprintf(err, errlen, "invalid JSON: %s", perr);
        return NULL;
    }
    yajl_val v = yajl_tree_parse(req->body, perr, sizeof perr);
    if (!v) {
        /* yajl's message spans lines; keep the first */
        perr[strcspn(perr, "\r\n")] = '\0';
        snprintf(err, errlen, "invalid JSON: %s", perr);
    }
    return v;
}

/* PUT /faults: replaces every rule, or changes nothing on error. */
static void put_all(struct admin *adm, const struct request *req, struct response *resp)
{
    char err[512];
    yajl_val v = parse_body(req, err, sizeof err);
    if (!v) {
        reply_json_error(resp, 400, err);
        return;
    }
    yajl_val list = v;
    if (YAJL_IS_OBJECT(v)) {
        const char *path[] = {"rules", NULL};
        list = yajl_tree_get(v, path, yajl_t_array);
    }
    if (!list || !YAJL_IS_ARRAY(list)) {
        yajl_tree_free(v);
        reply_json_error(resp, 400, "expected an array of rules or {\"rules\":[...]}");
        return;
    }
    size_t n = list->u.array.len;
    if (n > FAULT_MAX_RULES) {
        yajl_tree_free(v);
        reply_json_error(resp, 400, "too many rules");
        return;
    }
    struct fault_rule *rules = calloc(n ? n : 1, sizeof *rules);
    if (!rules)
        abort();
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        fault_rule_init(&rules[i], "");
        char msg[300];
        if (rule_from_json(list->u.array.values[i], &rules[i], msg, sizeof msg) < 0) {
            snprintf(err, sizeof err, "rule %zu: %s", i, msg);
            ok = 0;
        }
        for (size_t j = 0; ok && j < i; j++) {
            if (!strcmp(rules[j].name, rules[i].name)) {
                snprintf(err, sizeof err, "rule %zu: duplicate name '%s'", i, rules[i].name);
                ok = 0;
            }
        }
    }
    yajl_tree_free(v);
    if (!ok) {
        free(rules);
        reply_json_error(resp, 400, err);
        return;
    }
    fault_clear(adm->faults);
    for (size_t i = 0; i < n; i++)
        fault_put(adm->faults, &rules[i]);
    free(rules);
    log_info("admin: %zu fault rule(s) in force", n);
    resp->status = 200;
    response_header(resp, "Content-Type", "application/json");
    fault_set_json(adm->faults, &resp->body);
    buf_putc(&resp->body, '\n');
}

/* PUT /faults/NAME */
static void put_one(struct admin *adm, const char *name, const struct request *req,
                    struct response *resp)
{
    char err[512];
    yajl_val v = parse_body(req, err, sizeof err);
    if (!v) {
        reply_json_error(resp, 400, err);
        return;
    }
    struct fault_rule r;
    fault_rule_init(&r, name);
    int rc = rule_from_json(v, &r, err, sizeof err);
    yajl_tree_free(v);
    if (rc == 0 && strcmp(r.name, name) != 0) {
        snprintf(err, sizeof err, "the body names rule '%s', the path '%s'", r.name, name);
        rc = -1;
    }
    if (rc < 0) {
        reply_json_error(resp, 400, err);
        return;
    }
    int existed = 0;
    for (size_t i = 0; i < fault_count(adm->faults); i++)
        if (!strcmp(fault_get(adm->faults, i)->name, name))
            existed = 1;
    if (fault_put(adm->faults, &r) < 0) {
        reply_json_error(resp, 400, "too many rules");
        return;
    }
    log_info("admin: fault rule %s %s", name, existed ? "replaced" : "added");
    resp->status = existed ? 200 : 201;
    response_header(resp, "Content-Type", "application/json");
    fault_rule_json(&r, &resp->body);
    buf_putc(&resp->body, '\n');
}

/* /faults and /faults/NAME */
static void faults(struct admin *adm, const char *rest, size_t rest_len,
                   const struct request *req, struct response *resp)
{
    if (!adm->faults) {
        reply_json_error(resp, 404, "fault injection is not available");
        return;
    }
    enum http_method m = req->method;
    if (rest_len == 0) {
        if (m == HTTP_M_GET || m == HTTP_M_HEAD) {
            resp->status = 200;
            response_header(resp, "Content-Type", "application/json");
            fault_set_json(adm->faults, &resp->body);
            buf_putc(&resp->body, '\n');
        } else if (m == HTTP_M_PUT) {
            put_all(adm, req, resp);
        } else if (m == HTTP_M_DELETE) {
            fault_clear(adm->faults);
            log_info("admin: every fault rule removed");
            resp->status = 200;
            response_header(resp, "Content-Type", "application/json");
            fault_set_json(adm->faults, &resp->body);
            buf_putc(&resp->body, '\n');
        } else {
            reply_method(resp, "GET, PUT, DELETE");
        }
        return;
    }
    char name[FAULT_MAX_NAME];   /* a C string: %00 would cut it short */
    if (coding_pct_decode(rest, rest_len, name, sizeof name, CODING_PCT_NO_NUL) < 0 || !name[0] ||
        strchr(name, '/')) {
        reply_json_error(resp, 404, "no such rule");
        return;
    }
    if (m == HTTP_M_PUT) {
        put_one(adm, name, req, resp);
        return;
    }
    const struct fault_rule *r = NULL;
    for (size_t i = 0; i < fault_count(adm->faults); i++)
        if (!strcmp(fault_get(adm->faults, i)->name, name))
            r = fault_get(adm->faults, i);
    if (m == HTTP_M_GET || m == HTTP_M_HEAD) {
        if (!r) {
            reply_json_error(resp, 404, "no such rule");
            return;
        }
        resp->status = 200;
        response_header(resp, "Content-Type", "application/json");
        fault_rule_json(r, &resp->body);
        buf_putc(&resp->body, '\n');
    } else if (m == HTTP_M_DELETE) {
        if (!fault_delete(adm->faults, name)) {
            reply_json_error(resp, 404, "no such rule");
            return;
        }
        log_info("admin: fault rule %s removed", name);
        resp->status = 204;
    } else {
        reply_method(resp, "GET, PUT, DELETE");
    }
}

/* The value of query parameter name (percent-decoded into out), 1 when
 * present, 0 when absent, -1 when malformed or too long. */
static int query_param(const struct request *req, const char *name, char *out, size_t cap)
{
    const char *q = req->query, *end = q + req->query_len;
    size_t nl = strlen(name);
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        if ((size_t)(stop - q) > nl && !memcmp(q, name, nl) && q[nl] == '=')
            return coding_pct_decode(q + nl + 1, (size_t)(stop - q - nl - 1), out, cap,
                                     CODING_PCT_NO_NUL) < 0 ? -1 : 1;
        q = stop + 1;
    }
    return 0;
}

/* GET /export[?account=A&table=T]: the export file as a chunked stream. */
static void export(struct admin *adm, const struct request *req, struct response *resp)
{
    if (req->method != HTTP_M_GET) {
        reply_method(resp, "GET");
        return;
    }
    if (!adm->export_start) {
        reply_json_error(resp, 404, "export is not available");
        return;
    }
    char account[64], table[64], err[512] = "";
    int ha = query_param(req, "account", account, sizeof account);
    int ht = query_param(req, "table", table, sizeof table);
    if (ha < 0 || ht < 0) {
        reply_json_error(resp, 400, "malformed account or table parameter");
        return;
    }
    /* The filters must outlive this request: the stream copies them. */
    int rc = adm->export_start(adm->export_arg, ha ? account : NULL, ht ? table : NULL,
                               &resp->stream, err, sizeof err);
    if (rc != 0) {
        log_warn("admin: export refused: %s", err);
        if (rc == 503)
            response_header(resp, "Retry-After", ADMIN_EXPORT_RETRY_AFTER);
        reply_json_error(resp, rc == 404 || rc == 501 || rc == 503 ? rc : 500, err);
        return;
    }
    log_info("admin: export started%s%s%s%s", ha ? " of account " : "", ha ? account : "",
             ht ? " table " : "", ht ? table : "");
    resp->status = 200;
    response_header(resp, "Content-Type", "application/x-ndjson");
}

/* Refuses a request admin_access_check() does not admit: 403 for its Host
 * or for coming from another origin's web page,
 * 401 with a Bearer challenge (RFC 6750) for its token. 1 when refused. */
static int refuse_unadmitted(struct admin *adm, const struct request *req,
                             struct response *resp)
{
    switch (admin_access_check(&adm->access, req)) {
    case ADMIN_ADMIT:
        return 0;
    case ADMIN_BAD_HOST:
        log_info("admin: request from %s refused: its Host is not a loopback or allowed "
                 "name (see --admin-allowed-host)", req->peer_ip[0] ? req->peer_ip : "?");
        reply_json_error(resp, 403, "the Host header names neither a loopback address nor an "
                         "allowed admin host");
        return 1;
    case ADMIN_CROSS_SITE:
        log_info("admin: request from %s refused: it came from a web page of another site "
                 "(Origin or Sec-Fetch-Site)", req->peer_ip[0] ? req->peer_ip : "?");
        reply_json_error(resp, 403, "requests from web pages of other origins are refused: "
                         "use a command-line client, or the dashboard this listener serves");
        return 1;
    case ADMIN_NO_TOKEN:
        response_header(resp, "WWW-Authenticate", "Bearer realm=\"tabled-admin\"");
        reply_json_error(resp, 401, "this request needs Authorization: Bearer with the admin "
                         "token");
        return 1;
    case ADMIN_BAD_TOKEN:
        response_header(resp, "WWW-Authenticate",
                        "Bearer realm=\"tabled-admin\", error=\"invalid_token\"");
        reply_json_error(resp, 401, "the admin token is wrong");
        return 1;
    }
    return 1;
}

void admin_refuse(struct response *resp, enum http_fail why)
{
    switch (why) {
    case HTTP_FAIL_HEADERS_TOO_LARGE:
        reply_json_error(resp, 431, "the request head is too large");
        break;
    case HTTP_FAIL_BODY_TOO_LARGE:
        reply_json_error(resp, 413, "the request body is larger than --max-body-bytes");
        break;
    case HTTP_FAIL_TIMEOUT:
        reply_json_error(resp, 408, "the request did not arrive in time");
        break;
    default:
        reply_json_error(resp, 400, "malformed HTTP request");
        break;
    }
    resp->close = 1;
}

int admin_handle(struct admin *adm, struct request *req, struct response *resp,
                 void (*done)(void *token), void *token)
{
    if (!adm) {
        reply_json_error(resp, 503, "the admin endpoints are not ready");
        return 1;
    }
    if (req->method == HTTP_M_HEAD)
        resp->no_body = 1;
    if (refuse_unadmitted(adm, req, resp))
        return 1;
    if (req->path_len == 7 && !memcmp(req->path, "/import", 7)) {
        if (req->method != HTTP_M_POST) {
            reply_method(resp, "POST");
            return 1;
        }
        if (!adm->import) {
            reply_json_error(resp, 503, "import is not available until the store is open");
            return 1;
        }
        return adm->import(adm->import_arg, req, resp, done, token);
    }
    admin_answer(adm, req, resp);
    return 1;
}

/* The admin requests answered at once (all but /import). */
static void admin_answer(struct admin *adm, const struct request *req, struct response *resp)
{
    const char *p = req->path;
    size_t n = req->path_len;
    int read = req->method == HTTP_M_GET || req->method == HTTP_M_HEAD;
    if (n == 8 && !memcmp(p, "/healthz", 8)) {
        if (!read) {
            reply_method(resp, "GET, HEAD");
            return;
        }
        /* 503 while the store refuses writes (reads still work), or while
           the database cannot be reached */
        int failed = adm->metrics ? adm->metrics->store_failed : 0;
        resp->status = failed ? 503 : 200;
        response_header(resp, "Content-Type", "text/plain; charset=utf-8");
        if (failed == 2)
            buf_printf(&resp->body, "unavailable: the database cannot be reached: %s\n",
                       adm->metrics->store_error);
        else if (failed)
            buf_printf(&resp->body, "read-only: writes fail and are retried: %s\n",
                       adm->metrics->store_error);
        else
            buf_puts(&resp->body, "ok\n");
        return;
    }
    if (n == 8 && !memcmp(p, "/metrics", 8)) {
        if (!read) {
            reply_method(resp, "GET, HEAD");
            return;
        }
        resp->status = 200;
        response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        metrics_render(adm->metrics, &resp->body);
        return;
    }
    if (n >= 7 && !memcmp(p, "/faults", 7) && (n == 7 || p[7] == '/')) {
        size_t skip = n == 7 ? 7 : 8;
        faults(adm, p + skip, n - skip, req, resp);
        return;
    }
    if (n == 7 && !memcmp(p, "/export", 7)) {
        export(adm, req, resp);
        return;
    }
    if (adm->advisor && advisor_http_handle(adm->advisor, req, resp))
        return;
    reply_json_error(resp, 404, "not found (try /metrics, /healthz, /faults, /export or "
                     "/import)");
}
