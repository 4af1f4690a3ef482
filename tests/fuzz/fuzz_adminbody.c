/* fuzz_adminbody.c - libFuzzer target for the admin listener's JSON bodies
 * (server/admin.c, PUT /faults/NAME and PUT /faults), inputs up to the whole
 * body limit. The first input byte picks the path, the rest is the body
 * (NUL-terminated, as the connection hands it over). Every answer must be
 * 200, 201 or 400 without a crash or a per-level recursion, and whatever
 * rule set was accepted must be accepted again as GET /faults prints it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/admin.h"
#include "core/arena.h"
#include "server/config.h"
#include "guard/fault.h"
#include "core/log.h"
#include "core/metrics.h"

static struct arena *arena;
static struct admin *adm;
static struct fault_set *faults;

/* method path with body[0..len) (NUL-terminated); returns the status and
 * leaves the answer in *resp (freed by the caller). */
static int call(enum http_method m, const char *path, const char *body, size_t len,
                struct response *resp)
{
    struct request req;
    /* a loopback client: the admin listener answers no other Host */
    struct http_header host = {.name = "Host", .value = "127.0.0.1", .value_len = 9};
    memset(&req, 0, sizeof req);
    req.headers = &host;
    req.nheaders = 1;
    req.arena = arena;
    req.method = m;
    req.path = path;
    req.path_len = strlen(path);
    req.query = "";
    req.body = body;
    req.body_len = len;
    response_init(resp, arena);
    admin_handle(adm, &req, resp, NULL, NULL);
    return resp->status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!adm) {
        static struct config cfg;
        config_defaults(&cfg);
        log_set_level(LOG_ERROR);
        arena = arena_new(4096);
        struct metrics *m = metrics_new(cfg.accounts, cfg.naccounts);
        faults = fault_set_new(1);
        metrics_add_series(m, fault_render_metrics, faults);
        adm = admin_new(m, faults);
    }
    if (size == 0)
        return 0;
    static const char *paths[] = {"/faults/fz", "/faults", "/faults/p%20q", "/faults/a"};
    const char *path = paths[data[0] & 3];
    char *body = malloc(size);
    memcpy(body, data + 1, size - 1);
    body[size - 1] = '\0';
    struct response resp;
    int st = call(HTTP_M_PUT, path, body, size - 1, &resp);
    if (st != 200 && st != 201 && st != 400)
        abort();
    response_free(&resp);
    if (st != 400) {
        /* what GET /faults prints must be accepted back */
        struct response got, back;
        call(HTTP_M_GET, "/faults", NULL, 0, &got);
        char *text = malloc(got.body.len + 1);
        memcpy(text, got.body.data, got.body.len);
        text[got.body.len] = '\0';
        if (call(HTTP_M_PUT, "/faults", text, got.body.len, &back) != 200)
            abort();
        free(text);
        response_free(&got);
        response_free(&back);
    }
    struct response del;
    call(HTTP_M_DELETE, "/faults", NULL, 0, &del);
    response_free(&del);
    if (fault_count(faults) != 0)
        abort();
    arena_reset(arena);
    free(body);
    return 0;
}
