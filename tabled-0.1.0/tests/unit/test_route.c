/* test_route.c - URL routing: accounts (path- and host-style), resource
 * paths, key predicates, Tables('x'), continuation tokens. */
#include <string.h>

#include "core/config.h"
#include "protocol/ctx.h"
#include "protocol/route.h"
#include "protocol/token.h"
#include "tests/unit/tap.h"

static struct config cfg;
static struct service svc;

/* Routes method/path/Host into c; returns the error of the first failing
 * step or TERR_NONE. */
static enum terr route(struct req_ctx *c, struct request *req, struct arena *a,
                       const char *host, const char *path)
{
    static struct http_header h[1];
    memset(req, 0, sizeof *req);
    memset(c, 0, sizeof *c);
    req->arena = a;
    req->path = path;
    req->path_len = strlen(path);
    req->query = "";
    h[0].name = "Host";
    h[0].value = host;
    h[0].value_len = host ? strlen(host) : 0;
    req->headers = h;
    req->nheaders = host ? 1 : 0;
    c->svc = &svc;
    c->req = req;
    c->a = a;
    const char *rest;
    size_t rl;
    enum terr e = route_account(c, &rest, &rl);
    if (e)
        return e;
    return route_resource(c, rest, rl);
}

static void test_paths(void)
{
    struct arena *a = arena_new(4096);
    struct req_ctx c;
    struct request req;

    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1:10002", "/devstoreaccount1/Tables"), 0, "path-style Tables");
    TEST_EQ_INT(c.res, RES_TABLES, "Tables resource");
    TEST_EQ_STR(c.base, "http://127.0.0.1:10002/devstoreaccount1", "path-style base");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/tables()"), 0, "tables() any case");
    TEST_EQ_INT(c.res, RES_TABLES, "tables() is the Tables collection");
    TEST_EQ_INT(route(&c, &req, a, "localhost:1", "/devstoreaccount1/$BATCH"), 0, "$batch any case");
    TEST_EQ_INT(c.res, RES_BATCH, "batch resource");
    TEST_EQ_INT(route(&c, &req, a, "devstoreaccount1.table.localhost:10002", "/Tables"), 0,
                "host-style account");
    TEST_EQ_STR(c.account ? c.account->name : NULL, "devstoreaccount1", "host-style account name");
    TEST_EQ_STR(c.base, "http://devstoreaccount1.table.localhost:10002", "host-style base");
    TEST_EQ_INT(route(&c, &req, a, "[::1]:10002", "/devstoreaccount1-secondary/Tables"), 0,
                "secondary endpoint");
    TEST_EQ_INT(c.secondary, 1, "secondary flagged");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/nosuchaccount/Tables"), TERR_ResourceNotFound,
                "unknown account");
    TEST_EQ_INT(route(&c, &req, a, NULL, "/devstoreaccount1/Tables"), TERR_HostInformationNotPresent,
                "missing Host");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1"), 0, "account root");
    TEST_EQ_INT(c.res, RES_SERVICE, "root is the service");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/orders"), 0, "table path");
    TEST_EQ_INT(c.res, RES_TABLE, "table resource");
    TEST_EQ_STR(c.table, "orders", "table name");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/orders()"), 0, "table() path");
    TEST_EQ_INT(c.res, RES_TABLE, "table() resource");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/Tables('MyTable')"), 0,
                "Tables('x')");
    TEST_EQ_INT(c.res, RES_TABLE_ENTRY, "table entry resource");
    TEST_EQ_STR(c.table, "MyTable", "table entry name");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1",
                      "/devstoreaccount1/orders(PartitionKey='O''Neil%20%22A%22',RowKey='r%201-%C3%BC')"),
                0, "entity path with encoded keys");
    TEST_EQ_INT(c.res, RES_ENTITY, "entity resource");
    TEST_EQ_STR(c.pk, "O'Neil \"A\"", "doubled quote and %22 decode");
    TEST_EQ_STR(c.rk, "r 1-\xc3\xbc", "UTF-8 percent-encoding decodes");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey=%27a%27,RowKey=%27b%27)"),
                0, "%27 quotes");
    TEST_EQ_STR(c.pk, "a", "%27 quoted PK");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='',RowKey='')"), 0,
                "empty keys");
    TEST_EQ_INT((int)c.pk_len + (int)c.rk_len, 0, "empty keys are empty");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(RowKey='r', PartitionKey = 'p')"),
                0, "RowKey first, blanks");
    TEST_EQ_STR(c.pk, "p", "PK when RowKey first");
    TEST_EQ_STR(c.rk, "r", "RK when RowKey first");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a')"),
                TERR_InvalidInput, "one key only");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(partitionkey='a',RowKey='b')"),
                TERR_InvalidInput, "key names are case-sensitive");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a',PartitionKey='b')"),
                TERR_InvalidInput, "same key twice");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a,RowKey='b')"),
                TERR_InvalidInput, "unterminated quote");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a',RowKey='b')x"),
                TERR_InvalidInput, "trailing text");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t/extra"), TERR_InvalidUri,
                "two segments");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t%zz"), TERR_InvalidUri,
                "bad percent escape");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t%C3%28"), TERR_InvalidUri,
                "invalid UTF-8");
    arena_free(a);
}

static void test_tokens(void)
{
    struct arena *a = arena_new(4096);
    TEST_EQ_STR(token_encode(a, "Smith", 5), "1!8!U21pdGg-", "SPEC 6.12 token example");
    const char *k;
    size_t kl;
    TEST_EQ_INT(token_decode(a, "1!8!U21pdGg-", 12, &k, &kl), 0, "token decodes");
    TEST_EQ_STR(k, "Smith", "token round trip");
    const char *s = token_encode(a, "", 0);
    TEST_EQ_INT(token_decode(a, s, strlen(s), &k, &kl), 0, "empty key token decodes");
    TEST_EQ_INT((int)kl, 0, "empty key token is empty");
    TEST_EQ_INT(token_decode(a, "", 0, &k, &kl), -1, "empty token rejected");
    TEST_EQ_INT(token_decode(a, "1!9!U21pdGg-", 12, &k, &kl), -1, "length mismatch rejected");
    TEST_EQ_INT(token_decode(a, "1!4!@@@@", 8, &k, &kl), -1, "bad base64 rejected");
    TEST_EQ_INT(token_decode(a, "1!x!", 4, &k, &kl), -1, "bad count rejected");
    TEST_EQ_INT(token_decode(a, "raw", 3, &k, &kl), 0, "raw key accepted");
    TEST_EQ_STR(k, "raw", "raw key value");
    arena_free(a);
}

int main(void)
{
    config_defaults(&cfg);
    svc.cfg = &cfg;
    test_paths();
    test_tokens();
    return test_done();
}
