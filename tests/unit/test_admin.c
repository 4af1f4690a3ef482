/* test_admin.c - core/admin.c in process: health, metrics, and the fault
 * rule endpoints (add, replace, list, delete, all-or-nothing replacement,
 * errors), with hand-built requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/admin.h"
#include "core/arena.h"
#include "core/config.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/metrics.h"
#include "tests/unit/tap.h"

static struct arena *arena;
static struct admin *adm;
static struct response resp;

/* Runs method path [body] and leaves the answer in resp. */
static int call(enum http_method m, const char *path, const char *body)
{
    struct request req;
    memset(&req, 0, sizeof req);
    req.arena = arena;
    req.method = m;
    req.path = path;
    req.path_len = strlen(path);
    req.query = "";
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    response_free(&resp);
    response_init(&resp, arena);
    admin_handle(adm, &req, &resp);
    return resp.status;
}

static const char *body(void)
{
    return resp.body.data ? resp.body.data : "";
}

int main(void)
{
    static struct config cfg;
    config_defaults(&cfg);
    log_set_level(LOG_WARN);
    arena = arena_new(4096);
    struct metrics *m = metrics_new(&cfg);
    struct fault_set *fs = fault_set_new(1);
    m->faults_set = fs;
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
