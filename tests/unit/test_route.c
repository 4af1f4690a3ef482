/* test_route.c - URL routing: accounts (path- and host-style), resource
 * paths, key predicates, Tables('x'), continuation tokens; the operation
 * table (one row per operation) and its matching of verb and resource to
 * an operation, for requests and $batch parts; auth statuses mapped to
 * Table errors. */
#include <stdio.h>
#include <string.h>

#include "server/config.h"
#include "protocol/ctx.h"
#include "protocol/optable.h"
#include "protocol/route.h"
#include "codec/token.h"
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
                TERR_InvalidInputQuerySyntax, "one key only");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(partitionkey='a',RowKey='b')"),
                TERR_InvalidInputQuerySyntax, "key names are case-sensitive");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a',PartitionKey='b')"),
                TERR_InvalidInputQuerySyntax, "same key twice");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a,RowKey='b')"),
                TERR_InvalidInputQuerySyntax, "unterminated quote");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a',RowKey='b')x"),
                TERR_InvalidInputQuerySyntax, "trailing text");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t/extra"), TERR_InvalidUri,
                "two segments");
    /* A raw '/' inside a key predicate is a syntax error of the key, as the
     * service reports it (azure-storage-net#386, doc/protocol.md, Key values). */
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a/b',RowKey='r')"),
                TERR_InvalidInputQuerySyntax, "raw / inside a key predicate");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a',RowKey='r')/x"),
                TERR_InvalidUri, "a segment after a key predicate");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t(PartitionKey='a',RowKey='b/')"),
                TERR_InvalidInputQuerySyntax, "raw / at the end of a RowKey");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t%zz"), TERR_InvalidUri,
                "bad percent escape");
    TEST_EQ_INT(route(&c, &req, a, "127.0.0.1", "/devstoreaccount1/t%C3%28"), TERR_InvalidUri,
                "invalid UTF-8");
    arena_free(a);
}

static void test_tokens(void)
{
    struct arena *a = arena_new(4096);
    TEST_EQ_STR(token_encode(a, "Smith", 5), "1!8!U21pdGg-", "continuation token naming Smith");
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

/* What each operation was before the table (service.c's op_names,
 * op_writes, op_has_body, auth_kind, fault_class_of; ops_batch.c's
 * route_op): the table must keep all of it. The rights themselves are
 * checked by test_auth's permission matrix over these rows. */
static const struct {
    enum op op;
    const char *name;
    int writes, body;
    const char *auth;          /* the REST name its rights carry */
    enum fault_class fault;
    int changeset, batch_query;
} expect[] = {
    {OP_QUERY_TABLES, "QueryTables", 0, 1, "QueryTables", FAULT_READ, 0, 0},
    {OP_GET_TABLE, "GetTable", 0, 1, "QueryTables", FAULT_READ, 0, 0},
    {OP_CREATE_TABLE, "CreateTable", 1, 1, "CreateTable", FAULT_WRITE, 0, 0},
    {OP_DELETE_TABLE, "DeleteTable", 1, 0, "DeleteTable", FAULT_WRITE, 0, 0},
    {OP_QUERY_ENTITIES, "QueryEntities", 0, 1, "QueryEntities", FAULT_READ, 0, 1},
    {OP_GET_ENTITY, "GetEntity", 0, 1, "GetEntity", FAULT_READ, 0, 1},
    {OP_INSERT_ENTITY, "InsertEntity", 1, 1, "InsertEntity", FAULT_WRITE, 1, 0},
    {OP_UPDATE_ENTITY, "UpdateEntity", 1, 0, "UpdateEntity", FAULT_WRITE, 1, 0},
    {OP_INSERT_OR_REPLACE, "InsertOrReplaceEntity", 1, 0, "InsertOrReplaceEntity",
     FAULT_WRITE, 1, 0},
    {OP_MERGE_ENTITY, "MergeEntity", 1, 0, "MergeEntity", FAULT_WRITE, 1, 0},
    {OP_INSERT_OR_MERGE, "InsertOrMergeEntity", 1, 0, "InsertOrMergeEntity", FAULT_WRITE, 1,
     0},
    {OP_DELETE_ENTITY, "DeleteEntity", 1, 0, "DeleteEntity", FAULT_WRITE, 1, 0},
    {OP_BATCH, "EntityGroupTransaction", 1, 0, "EntityGroupTransaction", FAULT_BATCH, 0, 0},
    {OP_GET_ACL, "GetTableAcl", 0, 0, "GetTableAcl", FAULT_READ, 0, 0},
    {OP_SET_ACL, "SetTableAcl", 1, 0, "SetTableAcl", FAULT_WRITE, 0, 0},
    {OP_GET_SERVICE_PROPERTIES, "GetServiceProperties", 0, 0, "GetTableServiceProperties",
     FAULT_READ, 0, 0},
    {OP_SET_SERVICE_PROPERTIES, "SetServiceProperties", 1, 0, "SetTableServiceProperties",
     FAULT_WRITE, 0, 0},
    {OP_GET_SERVICE_STATS, "GetServiceStats", 0, 0, "GetTableServiceStats", FAULT_READ, 0, 0},
    {OP_PREFLIGHT, "Preflight", 0, 0, "PreflightTableRequest", FAULT_READ, 0, 0},
};

/* The table itself: one row per enum op, in enum order, each with a
 * unique name, a handler, and the properties the operation had. */
static void test_table(void)
{
    size_t n;
    const struct op_def *rows = optable_rows(&n);
    TEST_EQ_INT((int)n, OP_COUNT - 1, "one row per operation");
    TEST_EQ_INT((int)(sizeof expect / sizeof expect[0]), OP_COUNT - 1, "every op is expected");
    for (size_t i = 0; i < n; i++) {
        const struct op_def *r = &rows[i];
        char what[96];
        snprintf(what, sizeof what, "row %zu", i);
        TEST_EQ_INT(r->op, (int)(i + 1), what);
        TEST_CHECK(optable_get(r->op) == r, "optable_get finds the row");
        TEST_CHECK(r->handler != NULL, "row has a handler");
        TEST_CHECK(r->name && *r->name, "row has a name");
        TEST_CHECK(r->methods != 0, "row matches some verb");
        TEST_CHECK(r->res != RES_NONE || (r->flags & OPF_ANY_RESOURCE), "row has a resource");
        for (size_t j = 0; j < i; j++)
            if (rows[j].name && r->name && strcmp(rows[j].name, r->name) == 0)
                TEST_CHECK(0, "names are unique");
        for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
            if (expect[k].op != r->op)
                continue;
            TEST_EQ_STR(r->name, expect[k].name, "metric and log name kept");
            TEST_EQ_INT(!!(r->flags & OPF_WRITES), expect[k].writes, r->name);
            TEST_EQ_INT(!!(r->flags & OPF_BODY), expect[k].body, r->name);
            TEST_EQ_STR(r->auth.name, expect[k].auth, r->name);
            TEST_EQ_INT(r->fault, expect[k].fault, r->name);
            TEST_EQ_INT(!!(r->flags & OPF_CHANGESET), expect[k].changeset, r->name);
            TEST_EQ_INT(!!(r->flags & OPF_BATCH_QUERY), expect[k].batch_query, r->name);
        }
    }
    TEST_EQ_STR(optable_name(OP_NONE), "Unrouted", "OP_NONE is Unrouted");
    TEST_CHECK(optable_get(OP_NONE) == NULL && optable_get(OP_COUNT) == NULL, "no row outside");
}

/* One matching case: resource, verb, comp, restype, If-Match, where from;
 * the operation expected (OP_NONE: the error), and whether XML. */
static const struct {
    enum resource res;
    enum http_method m;
    const char *comp, *restype;
    int if_match;
    enum optable_from from;
    enum op op;
    enum terr err;
    int xml;
} cases[] = {
    {RES_TABLES, HTTP_M_GET, NULL, NULL, 0, OPTABLE_REQUEST, OP_QUERY_TABLES, 0, 0},
    {RES_TABLES, HTTP_M_HEAD, NULL, NULL, 0, OPTABLE_REQUEST, OP_QUERY_TABLES, 0, 0},
    {RES_TABLES, HTTP_M_GET, "acl", NULL, 0, OPTABLE_REQUEST, OP_QUERY_TABLES, 0, 0},
    {RES_TABLES, HTTP_M_POST, NULL, NULL, 0, OPTABLE_REQUEST, OP_CREATE_TABLE, 0, 0},
    {RES_TABLES, HTTP_M_PUT, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_MethodNotAllowed, 0},
    {RES_TABLE_ENTRY, HTTP_M_GET, NULL, NULL, 0, OPTABLE_REQUEST, OP_GET_TABLE, 0, 0},
    {RES_TABLE_ENTRY, HTTP_M_DELETE, NULL, NULL, 1, OPTABLE_REQUEST, OP_DELETE_TABLE, 0, 0},
    {RES_TABLE_ENTRY, HTTP_M_POST, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE,
     TERR_MethodNotAllowed, 0},
    {RES_TABLE, HTTP_M_GET, NULL, NULL, 0, OPTABLE_REQUEST, OP_QUERY_ENTITIES, 0, 0},
    {RES_TABLE, HTTP_M_POST, NULL, NULL, 0, OPTABLE_REQUEST, OP_INSERT_ENTITY, 0, 0},
    {RES_TABLE, HTTP_M_DELETE, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_MethodNotAllowed,
     0},
    {RES_TABLE, HTTP_M_GET, "acl", NULL, 0, OPTABLE_REQUEST, OP_GET_ACL, 0, 1},
    {RES_TABLE, HTTP_M_HEAD, "acl", NULL, 0, OPTABLE_REQUEST, OP_GET_ACL, 0, 1},
    {RES_TABLE, HTTP_M_PUT, "acl", NULL, 0, OPTABLE_REQUEST, OP_SET_ACL, 0, 1},
    {RES_TABLE, HTTP_M_POST, "acl", NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_UnsupportedHttpVerb,
     1},
    {RES_TABLE, HTTP_M_GET, "list", NULL, 0, OPTABLE_REQUEST, OP_NONE,
     TERR_InvalidQueryParameterValue, 1},
    {RES_ENTITY, HTTP_M_GET, NULL, NULL, 0, OPTABLE_REQUEST, OP_GET_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_HEAD, NULL, NULL, 1, OPTABLE_REQUEST, OP_GET_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_GET, "acl", NULL, 0, OPTABLE_REQUEST, OP_GET_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_PUT, NULL, NULL, 1, OPTABLE_REQUEST, OP_UPDATE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_PUT, NULL, NULL, 0, OPTABLE_REQUEST, OP_INSERT_OR_REPLACE, 0, 0},
    {RES_ENTITY, HTTP_M_MERGE, NULL, NULL, 1, OPTABLE_REQUEST, OP_MERGE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_PATCH, NULL, NULL, 1, OPTABLE_REQUEST, OP_MERGE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_MERGE, NULL, NULL, 0, OPTABLE_REQUEST, OP_INSERT_OR_MERGE, 0, 0},
    {RES_ENTITY, HTTP_M_PATCH, NULL, NULL, 0, OPTABLE_REQUEST, OP_INSERT_OR_MERGE, 0, 0},
    {RES_ENTITY, HTTP_M_DELETE, NULL, NULL, 1, OPTABLE_REQUEST, OP_DELETE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_DELETE, NULL, NULL, 0, OPTABLE_REQUEST, OP_DELETE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_POST, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_MethodNotAllowed, 0},
    {RES_ENTITY, HTTP_M_OTHER, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_MethodNotAllowed,
     0},
    {RES_BATCH, HTTP_M_POST, NULL, NULL, 0, OPTABLE_REQUEST, OP_BATCH, 0, 0},
    {RES_BATCH, HTTP_M_GET, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_MethodNotAllowed, 0},
    {RES_SERVICE, HTTP_M_GET, "properties", "service", 0, OPTABLE_REQUEST,
     OP_GET_SERVICE_PROPERTIES, 0, 1},
    {RES_SERVICE, HTTP_M_PUT, "properties", "service", 0, OPTABLE_REQUEST,
     OP_SET_SERVICE_PROPERTIES, 0, 1},
    {RES_SERVICE, HTTP_M_DELETE, "properties", "service", 0, OPTABLE_REQUEST, OP_NONE,
     TERR_UnsupportedHttpVerb, 1},
    {RES_SERVICE, HTTP_M_HEAD, "stats", "service", 0, OPTABLE_REQUEST, OP_GET_SERVICE_STATS, 0,
     1},
    {RES_SERVICE, HTTP_M_PUT, "stats", "service", 0, OPTABLE_REQUEST, OP_NONE,
     TERR_UnsupportedHttpVerb, 1},
    {RES_SERVICE, HTTP_M_GET, NULL, "service", 0, OPTABLE_REQUEST, OP_NONE, TERR_InvalidUri, 1},
    {RES_SERVICE, HTTP_M_GET, "properties", NULL, 0, OPTABLE_REQUEST, OP_NONE,
     TERR_InvalidQueryParameterValue, 1},
    {RES_SERVICE, HTTP_M_GET, "properties", "table", 0, OPTABLE_REQUEST, OP_NONE,
     TERR_InvalidQueryParameterValue, 1},
    {RES_SERVICE, HTTP_M_GET, "acl", "service", 0, OPTABLE_REQUEST, OP_NONE,
     TERR_InvalidQueryParameterValue, 1},
    {RES_NONE, HTTP_M_GET, NULL, NULL, 0, OPTABLE_REQUEST, OP_NONE, TERR_InvalidUri, 0},
    {RES_NONE, HTTP_M_OPTIONS, NULL, NULL, 0, OPTABLE_REQUEST, OP_PREFLIGHT, 0, 0},
    {RES_SERVICE, HTTP_M_OPTIONS, NULL, NULL, 0, OPTABLE_REQUEST, OP_PREFLIGHT, 0, 0},
    {RES_ENTITY, HTTP_M_OPTIONS, NULL, NULL, 1, OPTABLE_REQUEST, OP_PREFLIGHT, 0, 0},
    /* $batch parts: entity reads and writes only, comp ignored, no HEAD,
     * every failure InvalidInput */
    {RES_TABLE, HTTP_M_POST, NULL, NULL, 0, OPTABLE_PART, OP_INSERT_ENTITY, 0, 0},
    {RES_TABLE, HTTP_M_POST, "acl", NULL, 0, OPTABLE_PART, OP_INSERT_ENTITY, 0, 0},
    {RES_TABLE, HTTP_M_GET, NULL, NULL, 0, OPTABLE_PART, OP_QUERY_ENTITIES, 0, 0},
    {RES_TABLE, HTTP_M_GET, "acl", NULL, 0, OPTABLE_PART, OP_QUERY_ENTITIES, 0, 0},
    {RES_ENTITY, HTTP_M_GET, NULL, NULL, 0, OPTABLE_PART, OP_GET_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_PUT, NULL, NULL, 1, OPTABLE_PART, OP_UPDATE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_PUT, NULL, NULL, 0, OPTABLE_PART, OP_INSERT_OR_REPLACE, 0, 0},
    {RES_ENTITY, HTTP_M_MERGE, NULL, NULL, 1, OPTABLE_PART, OP_MERGE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_PATCH, NULL, NULL, 0, OPTABLE_PART, OP_INSERT_OR_MERGE, 0, 0},
    {RES_ENTITY, HTTP_M_DELETE, NULL, NULL, 1, OPTABLE_PART, OP_DELETE_ENTITY, 0, 0},
    {RES_ENTITY, HTTP_M_HEAD, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_ENTITY, HTTP_M_POST, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_ENTITY, HTTP_M_OPTIONS, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_ENTITY, HTTP_M_OTHER, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_TABLE, HTTP_M_PUT, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_TABLE, HTTP_M_DELETE, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_TABLES, HTTP_M_POST, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_TABLES, HTTP_M_GET, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_TABLE_ENTRY, HTTP_M_DELETE, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput,
     0},
    {RES_BATCH, HTTP_M_POST, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
    {RES_SERVICE, HTTP_M_GET, "properties", "service", 0, OPTABLE_PART, OP_NONE,
     TERR_InvalidInput, 0},
    {RES_NONE, HTTP_M_GET, NULL, NULL, 0, OPTABLE_PART, OP_NONE, TERR_InvalidInput, 0},
};

/* optable_match over every case above. */
static void test_match(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int xml = -1;
        enum terr e = TERR_NONE;
        const struct op_def *d = optable_match(cases[i].res, cases[i].m, cases[i].comp,
                                               cases[i].restype, cases[i].if_match,
                                               cases[i].from, &xml, &e);
        char what[96];
        snprintf(what, sizeof what, "case %zu: %s", i,
                 cases[i].op ? optable_name(cases[i].op) : terr_info(cases[i].err)->code);
        TEST_EQ_INT(d ? (int)d->op : OP_NONE, cases[i].op, what);
        TEST_EQ_INT(d ? TERR_NONE : e, cases[i].op ? TERR_NONE : cases[i].err, what);
        if (cases[i].from == OPTABLE_REQUEST)
            TEST_EQ_INT(xml, cases[i].xml, what);
    }
}

/* Every auth refusal becomes its storage error code, once, in protocol
 * (codec/errors.c's terr_from_auth); AUTH_OK is no error. */
static void test_auth_map(void)
{
    static const struct {
        enum auth_status s;
        const char *code;
        int status;
    } cases[] = {
        {AUTH_FAILED, "AuthenticationFailed", 403},
        {AUTH_INVALID_INFO, "InvalidAuthenticationInfo", 400},
        {AUTH_FAILURE, "AuthorizationFailure", 403},
        {AUTH_PERMISSION_MISMATCH, "AuthorizationPermissionMismatch", 403},
        {AUTH_RESOURCE_TYPE_MISMATCH, "AuthorizationResourceTypeMismatch", 403},
        {AUTH_SERVICE_MISMATCH, "AuthorizationServiceMismatch", 403},
        {AUTH_SOURCE_IP_MISMATCH, "AuthorizationSourceIPMismatch", 403},
        {AUTH_PROTOCOL_MISMATCH, "AuthorizationProtocolMismatch", 403},
        {AUTH_SECONDARY_WRITE, "InsufficientAccountPermissions", 403},
        {AUTH_UNAVAILABLE, "InternalError", 500},
    };
    TEST_EQ_INT(terr_from_auth(AUTH_OK), TERR_NONE, "AUTH_OK is no error");
    TEST_EQ_INT((int)(sizeof cases / sizeof cases[0]), AUTH__COUNT - 1, "every refusal listed");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct terr_info *ti = terr_info(terr_from_auth(cases[i].s));
        TEST_EQ_STR(ti->code, cases[i].code, "auth status's error code");
        TEST_EQ_INT(ti->status, cases[i].status, "auth status's HTTP status");
    }
    TEST_EQ_INT(terr_from_auth(AUTH__COUNT), TERR_InternalError, "unknown status is internal");
}

/* The entity writes' store intent and advisor kind (formerly switches in
 * ops_entities.c and advise.c) come from their rows. */
static void test_write_rows(void)
{
    static const struct {
        enum op op;
        enum store_intent intent;
        enum advisor_op advise;
    } w[] = {
        {OP_INSERT_ENTITY, STORE_INSERT, ADVISOR_INSERT},
        {OP_UPDATE_ENTITY, STORE_REPLACE, ADVISOR_UPDATE},
        {OP_INSERT_OR_REPLACE, STORE_UPSERT, ADVISOR_UPSERT},
        {OP_MERGE_ENTITY, STORE_MERGE, ADVISOR_UPDATE},
        {OP_INSERT_OR_MERGE, STORE_UPSERT_MERGE, ADVISOR_UPSERT},
        {OP_DELETE_ENTITY, STORE_DELETE, ADVISOR_DELETE},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        const struct op_def *r = optable_get(w[i].op);
        TEST_EQ_INT(r->intent, w[i].intent, r->name);
        TEST_EQ_INT(r->advise, w[i].advise, r->name);
        TEST_CHECK(r->flags & OPF_CHANGESET, "an entity write may be in a changeset");
    }
}

int main(void)
{
    config_defaults(&cfg);
    svc.set = (struct service_settings){.accounts = cfg.accounts, .naccounts = cfg.naccounts};
    test_paths();
    test_tokens();
    test_table();
    test_write_rows();
    test_match();
    test_auth_map();
    return test_done();
}
