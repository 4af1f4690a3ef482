/* test_admin.c - server/admin.c in process: health, metrics, and the fault
 * rule endpoints (add, replace, list, delete, all-or-nothing replacement,
 * errors), and who is admitted (server/admin_access.c: Host names, bearer
 * token), with hand-built requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/admin.h"
#include "core/arena.h"
#include "server/config.h"
#include "guard/fault.h"
#include "core/log.h"
#include "core/metrics.h"
#include "tests/unit/tap.h"

static struct arena *arena;
static struct admin *adm;
static struct response resp;

/* Runs method path [body] with the headers hdrs ("Name", "value" pairs,
 * NULL-terminated; NULL = none) and leaves the answer in resp. */
static int call_h(enum http_method m, const char *path, const char *body,
                  const char *const *hdrs)
{
    struct request req;
    struct http_header h[8];
    memset(&req, 0, sizeof req);
    req.arena = arena;
    req.method = m;
    req.path = path;
    req.path_len = strlen(path);
    req.query = "";
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    for (size_t i = 0; hdrs && hdrs[2 * i] && i < 8; i++) {
        h[i].name = hdrs[2 * i];
        h[i].value = hdrs[2 * i + 1];
        h[i].value_len = strlen(hdrs[2 * i + 1]);
        req.nheaders = i + 1;
    }
    req.headers = h;
    response_free(&resp);
    response_init(&resp, arena);
    admin_handle(adm, &req, &resp, NULL, NULL);
    return resp.status;
}

/* The same from a loopback client (Host: 127.0.0.1:10009). */
static int call(enum http_method m, const char *path, const char *body)
{
    static const char *const loop[] = {"Host", "127.0.0.1:10009", NULL};
    return call_h(m, path, body, loop);
}

/* The same with one Host header value and an optional Authorization. */
static int call_ha(enum http_method m, const char *path, const char *host, const char *auth)
{
    const char *hdrs[] = {"Host", host, auth ? "Authorization" : NULL, auth, NULL};
    return call_h(m, path, m == HTTP_M_PUT ? "{\"busy\":0.5}" : NULL, hdrs);
}

static const char *body(void)
{
    return resp.body.data ? resp.body.data : "";
}

/* Parses argv-style flags into cfg (config_parse_args, as main does). */
static int parse(struct config *cfg, const char *const *args)
{
    char *argv[32], err[512];
    int argc = 0;
    argv[argc++] = (char *)"tabled";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    config_defaults(cfg);
    int rc = config_parse_args(cfg, argc, argv, err, sizeof err);
    if (rc)
        printf("#   config: %s\n", err);
    return rc;
}

#define TOKEN "s3cret-Token_0123456789"

/* Host names and the bearer token (server/admin_access.c). */
static void test_access(struct fault_set *fs)
{
    static struct config cfg;
    fault_clear(fs);

    /* defaults: loopback Hosts only, no token */
    static const char *good_hosts[] = {
        "127.0.0.1", "127.0.0.1:10009", "127.8.9.10:1", "localhost", "LocalHost:80",
        "[::1]", "[::1]:10009", "[::ffff:127.0.0.1]:5",
    };
    for (size_t i = 0; i < sizeof good_hosts / sizeof good_hosts[0]; i++) {
        char what[120];
        snprintf(what, sizeof what, "Host %s is answered", good_hosts[i]);
        TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", good_hosts[i], NULL), 200, what);
    }
    static const char *bad_hosts[] = {
        "evil.example", "evil.example:10009", "127.0.0.1.evil.example", "localhost.evil.example",
        "evilocalhost", "localhost.", "127.0.0.1.nip.io:10009", "7f000001.rbndr.us",
        "0.0.0.0", "[::]:10009", "10.0.0.5", "::1", "127.0.0.1:", "127.0.0.1:80:80",
        "127.0.0.1:123456", "127.0.0.1:8a", "[::1", "[::1]x", "", "127.1",
        "localhost@evil.example", "127.0.0.1 evil.example",
    };
    for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
        char what[120];
        snprintf(what, sizeof what, "Host '%s' is 403", bad_hosts[i]);
        TEST_EQ_INT(call_ha(HTTP_M_GET, "/metrics", bad_hosts[i], NULL), 403, what);
    }
    TEST_CHECK(strstr(body(), "\"error\":\"the Host header") != NULL, "403 body says why");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "evil.example", NULL), 403,
                "a rebinding PUT is 403");
    TEST_EQ_INT(fault_count(fs), 0, "and adds no rule");
    TEST_EQ_INT(call_h(HTTP_M_GET, "/healthz", NULL, NULL), 403, "no Host header is 403");
    static const char *const two[] = {"Host", "127.0.0.1", "Host", "evil.example", NULL};
    TEST_EQ_INT(call_h(HTTP_M_GET, "/healthz", NULL, two), 403, "two Host headers are 403");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "localhost:10009", NULL), 201,
                "without a configured token a loopback PUT is allowed");
    fault_clear(fs);

    /* extra allowed names */
    const char *a1[] = {"--admin-port", "0", "--admin-allowed-host", "Tabled.Internal,fd00::7",
                        "--admin-allowed-host", "10.1.2.3", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "--admin-allowed-host parses");
    admin_set_access(adm, &cfg);
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "tabled.internal:10009", NULL), 200,
                "a configured name is answered (any case, with a port)");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "TABLED.INTERNAL", NULL), 200,
                "a configured name without a port");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "[fd00::7]:10009", NULL), 200,
                "a configured IPv6 address, bracketed in Host");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "10.1.2.3", NULL), 200,
                "a configured IPv4 address");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "127.0.0.1", NULL), 200,
                "loopback stays allowed");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "x.tabled.internal", NULL), 403,
                "a subdomain of a configured name is not");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "evil.example", NULL), 403,
                "other names still are 403");

    /* a token on a loopback listener: needed for everything but GET/HEAD */
    const char *a2[] = {"--admin-port", "0", "--admin-token", TOKEN, NULL};
    TEST_EQ_INT(parse(&cfg, a2), 0, "--admin-token parses");
    admin_set_access(adm, &cfg);
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/metrics", "127.0.0.1", NULL), 200,
                "token set, loopback: GET /metrics needs none");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "127.0.0.1", NULL), 200,
                "token set, loopback: GET /healthz needs none");
    TEST_EQ_INT(call_ha(HTTP_M_HEAD, "/faults", "127.0.0.1", NULL), 200, "nor HEAD /faults");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", NULL), 401, "PUT without it is 401");
    TEST_EQ_STR(response_get_header(&resp, "WWW-Authenticate"), "Bearer realm=\"tabled-admin\"",
                "401 carries a Bearer challenge");
    TEST_EQ_INT(fault_count(fs), 0, "and adds no rule");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", "Bearer wrong-token-0123456789"),
                401, "PUT with a wrong token is 401");
    TEST_EQ_STR(response_get_header(&resp, "WWW-Authenticate"),
                "Bearer realm=\"tabled-admin\", error=\"invalid_token\"",
                "the challenge says invalid_token");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", "Bearer " TOKEN "x"), 401,
                "the token with a character more is 401");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", "Bearer s3cret-Token_012345678"),
                401, "the token with a character less is 401");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", "Basic " TOKEN), 401,
                "another scheme is 401");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", TOKEN), 401,
                "the bare token is 401");
    TEST_EQ_INT(fault_count(fs), 0, "no refused PUT added a rule");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", "Bearer " TOKEN), 201,
                "PUT with the right token is done");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "127.0.0.1", "bearer   " TOKEN), 200,
                "the scheme in any case, several blanks");
    TEST_EQ_INT(call_ha(HTTP_M_DELETE, "/faults/x", "127.0.0.1", NULL), 401,
                "DELETE without the token is 401");
    TEST_EQ_INT(call_ha(HTTP_M_DELETE, "/faults", "127.0.0.1", "Bearer nope-nope-nope-nope"), 401,
                "DELETE /faults with a wrong token is 401");
    TEST_EQ_INT(fault_count(fs), 1, "the rule is still there");
    TEST_EQ_INT(call_ha(HTTP_M_POST, "/healthz", "127.0.0.1", NULL), 401,
                "POST is checked before routing (401, not 405)");
    TEST_EQ_INT(call_ha(HTTP_M_DELETE, "/faults/x", "127.0.0.1", "Bearer " TOKEN), 204,
                "DELETE with the token");
    TEST_EQ_INT(call_ha(HTTP_M_PUT, "/faults/x", "evil.example", "Bearer " TOKEN), 403,
                "the right token does not excuse a bad Host");

    /* a non-loopback listener (config only; nothing is bound here) */
    const char *a3[] = {"--admin-port", "0", "--admin-host", "0.0.0.0", NULL};
    TEST_EQ_INT(parse(&cfg, a3), -1, "--admin-host 0.0.0.0 without a token is refused");
    const char *a4[] = {"--admin-port", "0", "--admin-host", "10.9.8.7", "--admin-token", TOKEN,
                        NULL};
    TEST_EQ_INT(parse(&cfg, a4), 0, "--admin-host 10.9.8.7 with a token");
    admin_set_access(adm, &cfg);
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/metrics", "10.9.8.7:10009", NULL), 401,
                "off loopback even GET /metrics needs the token");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/healthz", "127.0.0.1", NULL), 401,
                "whatever the Host says");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/metrics", "10.9.8.7:10009", "Bearer " TOKEN), 200,
                "with it, and the listener's own address as Host");
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/metrics", "evil.example", "Bearer " TOKEN), 403,
                "another Host is still 403");

    admin_set_access(adm, NULL);
    TEST_EQ_INT(call_ha(HTTP_M_GET, "/metrics", "10.9.8.7", NULL), 403,
                "admin_set_access(NULL) is back to the defaults");
}

/* Requests a browser sends for a page of another origin are 403
 * (server/admin_access.c, check 2); tools' and same-origin ones are not. */
static void test_origin(void)
{
    static const struct {
        const char *host, *name, *value;
        int want;
    } cases[] = {
        {"127.0.0.1:10009", "Sec-Fetch-Site", "cross-site", 403},
        {"127.0.0.1:10009", "Sec-Fetch-Site", "same-site", 403},
        {"127.0.0.1:10009", "Sec-Fetch-Site", "Cross-Site", 403},
        {"127.0.0.1:10009", "Sec-Fetch-Site", "", 403},
        {"127.0.0.1:10009", "Sec-Fetch-Site", "same-origin", 200},
        {"127.0.0.1:10009", "Sec-Fetch-Site", "none", 200},
        {"127.0.0.1:10009", "Origin", "http://127.0.0.1:10009", 200},
        {"127.0.0.1:10009", "Origin", "HTTP://127.0.0.1:10009", 200},
        {"127.0.0.1:10009", "Origin", "http://127.0.0.1:10010", 403},
        {"127.0.0.1:10009", "Origin", "http://127.0.0.1", 403},
        {"127.0.0.1:10009", "Origin", "https://127.0.0.1:10009", 403},
        {"127.0.0.1:10009", "Origin", "http://localhost:10009", 403},
        {"127.0.0.1:10009", "Origin", "http://127.0.0.1:10009/", 403},
        {"127.0.0.1:10009", "Origin", "null", 403},
        {"127.0.0.1:10009", "Origin", "", 403},
        {"localhost", "Origin", "http://localhost:80", 200},
        {"localhost:80", "Origin", "http://localhost", 200},
        {"[::1]:10009", "Origin", "http://[::1]:10009", 200},
        {"[::1]:10009", "Origin", "http://[::1]", 403},
    };
    char what[200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *hdrs[] = {"Host", cases[i].host, cases[i].name, cases[i].value, NULL};
        snprintf(what, sizeof what, "Host %s, %s: '%s' is %d", cases[i].host, cases[i].name,
                 cases[i].value, cases[i].want);
        TEST_EQ_INT(call_h(HTTP_M_GET, "/healthz", NULL, hdrs), cases[i].want, what);
    }
    const char *two[] = {"Host", "127.0.0.1", "Origin", "http://127.0.0.1", "Origin",
                         "http://127.0.0.1", NULL};
    TEST_EQ_INT(call_h(HTTP_M_GET, "/healthz", NULL, two), 403, "two Origin headers are 403");
    const char *put[] = {"Host", "127.0.0.1", "Origin", "http://evil.example", NULL};
    TEST_EQ_INT(call_h(HTTP_M_PUT, "/faults/x", "{\"busy\":1}", put), 403,
                "a PUT from another origin's page is 403");
    TEST_CHECK(strstr(body(), "other origins") != NULL, "and the body says why");
    TEST_EQ_INT(call(HTTP_M_GET, "/faults/x", NULL), 404, "and added no rule");
}

int main(void)
{
    static struct config cfg;
    config_defaults(&cfg);
    log_set_level(LOG_WARN);
    arena = arena_new(4096);
    struct metrics *m = metrics_new(cfg.accounts, cfg.naccounts);
    struct fault_set *fs = fault_set_new(1);
    metrics_add_series(m, fault_render_metrics, fs);
    adm = admin_new(m, fs);
    response_init(&resp, arena);

    TEST_EQ_INT(call(HTTP_M_GET, "/healthz", NULL), 200, "GET /healthz");
    TEST_EQ_STR(body(), "ok\n", "healthz body");
    TEST_EQ_INT(call(HTTP_M_POST, "/healthz", "x"), 405, "POST /healthz is 405");
    TEST_EQ_STR(response_get_header(&resp, "Allow"), "GET, HEAD", "Allow header");
    TEST_EQ_INT(call(HTTP_M_GET, "/metrics", NULL), 200, "GET /metrics");
    TEST_EQ_STR(response_get_header(&resp, "Content-Type"),
                "text/plain; version=0.0.4; charset=utf-8", "exposition content type");
    TEST_CHECK(strstr(body(), "# TYPE tabled_requests_total counter\n") &&
                   strstr(body(), "tabled_fault_rules 0\n"),
               "metrics text");
    TEST_EQ_INT(call(HTTP_M_GET, "/nothing", NULL), 404, "unknown path is 404");
    TEST_EQ_INT(call(HTTP_M_GET, "/metricsx", NULL), 404, "no prefix matching");

    TEST_EQ_INT(call(HTTP_M_GET, "/faults", NULL), 200, "GET /faults");
    TEST_EQ_STR(body(), "{\"rules\":[]}\n", "no rules yet");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow",
                     "{\"table\":\"orders\",\"latency_ms\":\"5-10\",\"busy\":0.25,"
                     "\"timeout_applies\":true,\"count\":4}"),
                201, "PUT /faults/slow creates a rule");
    TEST_CHECK(strstr(body(), "\"name\":\"slow\"") && strstr(body(), "\"busy\":0.25") &&
                   strstr(body(), "\"latency_ms\":\"5-10\"") &&
                   strstr(body(), "\"timeout_applies\":true") && strstr(body(), "\"count\":4"),
               "the answer shows the rule");
    TEST_EQ_INT(fault_count(fs), 1, "one rule in force");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow", "{\"busy\":1}"), 200, "PUT again replaces");
    TEST_CHECK(fault_get(fs, 0)->busy == 1.0 && fault_get(fs, 0)->table[0] == '\0',
               "the replacement is the new rule alone");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow", "{\"busy\":2}"), 400, "bad probability is 400");
    TEST_CHECK(strstr(body(), "\"error\":\"fault busy: expected a probability"), "error message");
    TEST_CHECK(fault_get(fs, 0)->busy == 1.0, "a refused PUT changes nothing");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow", "{\"busy\":"), 400, "truncated JSON is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow", NULL), 400, "no body is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow", "[1]"), 400, "not an object is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/slow", "{\"name\":\"other\"}"), 400,
                "a body naming another rule is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/p%20q", "{\"reset\":0.5,\"every\":2}"), 201,
                "a percent-encoded rule name");
    TEST_EQ_INT(call(HTTP_M_GET, "/faults/p%20q", NULL), 200, "GET one rule");
    TEST_CHECK(strstr(body(), "\"name\":\"p q\""), "decoded name");

    /* round trip: GET /faults, PUT the same text back */
    call(HTTP_M_GET, "/faults", NULL);
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", body());
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults", saved), 200, "PUT back what GET answered");
    call(HTTP_M_GET, "/faults", NULL);
    TEST_EQ_STR(body(), saved, "same rules after the round trip");

    TEST_EQ_INT(call(HTTP_M_PUT, "/faults",
                     "[{\"name\":\"a\",\"busy\":1},{\"name\":\"b\",\"timeout\":3}]"),
                400, "one bad rule refuses the whole list");
    TEST_CHECK(strstr(body(), "rule 1:") != NULL, "the message names the bad rule");
    TEST_EQ_INT(fault_count(fs), 2, "and nothing changed");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults", "[{\"name\":\"a\"},{\"name\":\"a\"}]"), 400,
                "duplicate names are refused");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults", "[{\"busy\":1}]"), 400, "a nameless rule is refused");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults", "{\"rules\":[{\"name\":\"only\",\"ops\":\"batches\"}]}"),
                200, "PUT {\"rules\":[...]} replaces all");
    TEST_EQ_INT(fault_count(fs), 1, "one rule left");
    TEST_EQ_INT(call(HTTP_M_DELETE, "/faults/only", NULL), 204, "DELETE one rule");
    TEST_EQ_INT(call(HTTP_M_DELETE, "/faults/only", NULL), 404, "DELETE it again is 404");
    TEST_EQ_INT(call(HTTP_M_GET, "/faults/only", NULL), 404, "GET a missing rule is 404");
    call(HTTP_M_PUT, "/faults/x", "{\"busy\":0.5}");
    TEST_EQ_INT(call(HTTP_M_DELETE, "/faults", NULL), 200, "DELETE /faults");
    TEST_EQ_INT(fault_count(fs), 0, "removes everything");
    TEST_EQ_INT(call(HTTP_M_POST, "/faults", "{}"), 405, "POST /faults is 405");
    TEST_EQ_INT(call(HTTP_M_GET, "/faults/%zz", NULL), 404, "a malformed escape is 404");

    test_access(fs);
    test_origin();
    /* 1 MiB of nesting is refused before any tree is built (a recursive
     * yajl_tree_free over it ran off the stack) */
    call(HTTP_M_DELETE, "/faults", NULL);
    for (int shape = 0; shape < 2; shape++) {
        /* well-formed: every level closed again, so a tree would be whole */
        const char *open = shape ? "{\"a\":" : "[", *close = shape ? "}" : "]";
        size_t u = strlen(open), reps = (1u << 20) / (u + 1), len = 0;
        char *deep = malloc((u + 1) * reps + 2);
        for (size_t i = 0; i < reps; i++, len += u)
            memcpy(deep + len, open, u);
        if (shape)
            deep[len++] = '1';
        memset(deep + len, *close, reps);
        deep[len + reps] = '\0';
        TEST_EQ_INT(call(HTTP_M_PUT, "/faults/deep", deep), 400,
                    shape ? "PUT /faults/NAME with 1 MiB of {\"a\":...} is 400"
                          : "PUT /faults/NAME with 1 MiB of [...] is 400");
        TEST_CHECK(strstr(body(), "nested deeper than") != NULL, "the error says why");
        TEST_EQ_INT(call(HTTP_M_PUT, "/faults", deep), 400, "PUT /faults with it is 400");
        free(deep);
    }
    /* NULs: a name is a C string, so "\u0000" or %00 would cut it short */
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/foo", "{\"name\":\"foo\\u0000bar\",\"busy\":0.5}"), 400,
                "a NUL escape in the body's name is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/foo", "{\"ops\\u0000x\":\"batches\"}"), 400,
                "a NUL escape in a member name is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults", "[{\"name\":\"foo\\u0000bar\"}]"), 400,
                "a NUL escape in PUT /faults is 400");
    TEST_EQ_INT(call(HTTP_M_PUT, "/faults/foo%00bar", "{\"busy\":0.5}"), 404,
                "%00 in the path names no rule");
    TEST_EQ_INT(fault_count(fs), 0, "none of them made a rule");

    admin_free(adm);
    adm = admin_new(m, NULL);
    TEST_EQ_INT(call(HTTP_M_GET, "/faults", NULL), 404, "no fault set: /faults is 404");
    response_free(&resp);
    admin_free(adm);
    fault_set_free(fs);
    metrics_free(m);
    arena_free(arena);
    return test_done();
}
