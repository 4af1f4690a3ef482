/* test_multipart.c - the $batch codec: parser tolerances (doc/protocol.md, Batch parser tolerance), the
 * a changeset and a single query (doc/protocol.md, Query in a batch), malformed envelopes, limits, truncation, and
 * byte-exact responses (doc/protocol.md, Batch responses; Query in a batch). */
#include "codec/ctlscan.h"
#include "codec/multipart.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/unit/tap.h"

static struct arena *A;

/* Returns a copy of s with every LF turned into CRLF (in the arena). */
static char *crlf(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '\n' ? 2 : 1;
    char *o = arena_alloc(A, n + 1), *q = o;
    for (const char *p = s; *p; p++) {
        if (*p == '\n')
            *q++ = '\r';
        *q++ = *p;
    }
    *q = '\0';
    return o;
}

static int parse(const char *ct, const char *body, struct multipart_batch *b, const char **why)
{
    return multipart_parse(A, ct, body, strlen(body), b, why);
}

/* 1 when parsing fails as malformed; prints the reason as a TAP comment. */
static int malformed(const char *ct, const char *body)
{
    struct multipart_batch b;
    const char *why = NULL;
    int rc = parse(ct, body, &b, &why);
    printf("#   reason: %s\n", why ? why : "(none)");
    return rc == MULTIPART_ERR_MALFORMED && why != NULL && b.nops == 0 && b.ops == NULL;
}

/* Value of the first header named name in op, or NULL. */
static const char *hdr(const struct multipart_op *op, const char *name)
{
    for (size_t i = 0; i < op->nheaders; i++)
        if (strcasecmp(op->headers[i].name, name) == 0)
            return op->headers[i].value;
    return NULL;
}

/* The body of op as a NUL-terminated arena string ("" when none). */
static const char *body_of(const struct multipart_op *op)
{
    return op->body ? arena_strndup(A, op->body, op->body_len) : "";
}

static const char *CT = "multipart/mixed; boundary=batch_7f1c2e";

/* A three-operation changeset (Batch request body; written with LF; crlf() makes it wire form). */
static const char *EX82 =
    "--batch_7f1c2e\n"
    "Content-Type: multipart/mixed; boundary=changeset_91ab04\n"
    "\n"
    "--changeset_91ab04\n"
    "Content-Type: application/http\n"
    "Content-Transfer-Encoding: binary\n"
    "\n"
    "POST http://127.0.0.1:10002/devstoreaccount1/orders HTTP/1.1\n"
    "Content-Type: application/json;odata=nometadata\n"
    "Accept: application/json;odata=minimalmetadata\n"
    "Prefer: return-no-content\n"
    "DataServiceVersion: 3.0\n"
    "\n"
    "{\"PartitionKey\":\"p1\",\"RowKey\":\"r1\",\"Qty\":1}\n"
    "--changeset_91ab04\n"
    "Content-Type: application/http\n"
    "Content-Transfer-Encoding: binary\n"
    "\n"
    "MERGE http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p1',RowKey='r2') HTTP/1.1\n"
    "Content-Type: application/json\n"
    "Accept: application/json;odata=minimalmetadata\n"
    "If-Match: *\n"
    "\n"
    "{\"Qty\":2}\n"
    "--changeset_91ab04\n"
    "Content-Type: application/http\n"
    "Content-Transfer-Encoding: binary\n"
    "\n"
    "DELETE http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p1',RowKey='r3') HTTP/1.1\n"
    "Accept: application/json;odata=minimalmetadata\n"
    "If-Match: *\n"
    "\n"
    "--changeset_91ab04--\n"
    "--batch_7f1c2e--\n";

/* A batch holding one query (doc/protocol.md, Query in a batch). */
static const char *EX87 =
    "--batch_ab12\n"
    "Content-Type: application/http\n"
    "Content-Transfer-Encoding: binary\n"
    "\n"
    "GET http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1') HTTP/1.1\n"
    "Accept: application/json;odata=minimalmetadata\n"
    "\n"
    "--batch_ab12--\n";

/* Checks the parse of the changeset example above (either line ending). */
static void check_ex82(const char *body, const char *label)
{
    struct multipart_batch b;
    const char *why = "x";
    char what[128];
#define W(s) (snprintf(what, sizeof what, "%s: %s", label, s), what)
    int rc = parse(CT, body, &b, &why);
    TEST_EQ_INT(rc, MULTIPART_OK, W("parses"));
    TEST_CHECK(why == NULL, W("no reason on success"));
    TEST_EQ_INT(b.kind, MULTIPART_CHANGESET, W("is a changeset"));
    TEST_EQ_STR(b.boundary, "batch_7f1c2e", W("batch boundary"));
    TEST_EQ_STR(b.changeset_boundary, "changeset_91ab04", W("changeset boundary"));
    TEST_EQ_INT(b.nops, 3, W("three operations"));
    if (b.nops != 3)
        return;
    const struct multipart_op *o = b.ops;
    TEST_EQ_STR(o[0].method_name, "POST", W("op0 method"));
    TEST_EQ_INT(o[0].method, HTTP_M_POST, W("op0 method enum"));
    TEST_EQ_INT(o[1].method, HTTP_M_MERGE, W("op1 MERGE"));
    TEST_EQ_INT(o[2].method, HTTP_M_DELETE, W("op2 DELETE"));
    TEST_EQ_STR(o[0].url, "http://127.0.0.1:10002/devstoreaccount1/orders", W("op0 url"));
    TEST_EQ_STR(o[0].host, "127.0.0.1:10002", W("op0 host"));
    TEST_EQ_STR(o[0].path, "/devstoreaccount1/orders", W("op0 path"));
    TEST_EQ_INT(o[0].path_len, strlen("/devstoreaccount1/orders"), W("op0 path_len"));
    TEST_EQ_STR(o[0].query, "", W("op0 no query"));
    TEST_EQ_STR(o[1].path, "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r2')",
                W("op1 path"));
    TEST_EQ_INT(o[0].nheaders, 4, W("op0 four headers"));
    TEST_EQ_STR(o[0].headers[0].name, "Content-Type", W("op0 header 0 name"));
    TEST_EQ_STR(o[0].headers[0].value, "application/json;odata=nometadata",
                W("op0 header 0 value"));
    TEST_EQ_INT(o[0].headers[0].value_len, strlen("application/json;odata=nometadata"),
                W("op0 header 0 value_len"));
    TEST_EQ_STR(hdr(&o[0], "prefer"), "return-no-content", W("op0 Prefer"));
    TEST_EQ_STR(hdr(&o[1], "If-Match"), "*", W("op1 If-Match"));
    TEST_EQ_STR(body_of(&o[0]), "{\"PartitionKey\":\"p1\",\"RowKey\":\"r1\",\"Qty\":1}",
                W("op0 body"));
    TEST_CHECK(o[0].body >= body && o[0].body + o[0].body_len <= body + strlen(body),
               W("op0 body is a slice of the input"));
    TEST_EQ_STR(body_of(&o[1]), "{\"Qty\":2}", W("op1 body"));
    TEST_CHECK(o[2].body == NULL && o[2].body_len == 0, W("op2 has no body"));
    TEST_EQ_INT(o[2].nheaders, 2, W("op2 two headers"));
    for (size_t i = 0; i < 3; i++) {
        TEST_EQ_INT(o[i].index, i, W("index"));
        TEST_CHECK(o[i].in_changeset, W("in changeset"));
        TEST_EQ_STR(o[i].changeset_boundary, "changeset_91ab04", W("op changeset boundary"));
        TEST_CHECK(o[i].content_id == NULL, W("no Content-ID"));
    }
#undef W
}

static void test_examples(void)
{
    check_ex82(crlf(EX82), "8.2 CRLF");
    check_ex82(EX82, "8.2 LF-only");

    struct multipart_batch b;
    int rc = parse("multipart/mixed; boundary=batch_ab12", crlf(EX87), &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "8.7 query parses");
    TEST_EQ_INT(b.kind, MULTIPART_QUERY, "8.7 is a query");
    TEST_EQ_INT(b.nops, 1, "8.7 one op");
    TEST_CHECK(b.changeset_boundary == NULL, "8.7 no changeset boundary");
    TEST_EQ_INT(b.ops[0].method, HTTP_M_GET, "8.7 GET");
    TEST_CHECK(!b.ops[0].in_changeset && !b.ops[0].changeset_boundary, "8.7 not in changeset");
    TEST_EQ_STR(b.ops[0].path, "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')",
                "8.7 path");
    TEST_EQ_STR(hdr(&b.ops[0], "Accept"), "application/json;odata=minimalmetadata",
                "8.7 Accept");
    TEST_CHECK(b.ops[0].body == NULL, "8.7 no body");
}

/* One-operation changeset around a given operation part (LF form). */
static char *one_op(const char *mime_extra, const char *request)
{
    return arena_sprintf(A,
                         "--batch_x\n"
                         "Content-Type: multipart/mixed; boundary=cs_y\n"
                         "\n"
                         "--cs_y\n"
                         "Content-Type: application/http\n"
                         "Content-Transfer-Encoding: binary\n"
                         "%s"
                         "\n"
                         "%s\n"
                         "--cs_y--\n"
                         "--batch_x--\n",
                         mime_extra, request);
}

static const char *CTX = "multipart/mixed; boundary=batch_x";

static void test_tolerances(void)
{
    struct multipart_batch b;
    int rc;

    /* lower-case MIME header names (JS SDK) */
    const char *lc = crlf("--batch_x\n"
                          "content-type: multipart/mixed; boundary=cs_y\n"
                          "\n"
                          "--cs_y\n"
                          "content-type: application/http\n"
                          "content-transfer-encoding: binary\n"
                          "\n"
                          "POST http://h/acct/t HTTP/1.1\n"
                          "content-type: application/json\n"
                          "\n"
                          "{\"a\":1}\n"
                          "--cs_y--\n"
                          "--batch_x--\n");
    rc = parse(CTX, lc, &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "lower-case MIME headers accepted");
    TEST_EQ_INT(b.nops, 1, "lower-case: one op");
    TEST_EQ_STR(hdr(&b.ops[0], "Content-Type"), "application/json", "lower-case: header found");

    /* an extra empty line between headers and body (JS SDK) */
    rc = parse(CTX, crlf(one_op("", "POST http://h/acct/t HTTP/1.1\nAccept: x\n\n\n{\"a\":1}")),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "extra blank line before body accepted");
    TEST_EQ_STR(body_of(&b.ops[0]), "{\"a\":1}", "extra blank line: body intact");
    TEST_EQ_INT(b.ops[0].nheaders, 1, "extra blank line: one header");

    /* Content-ID as a MIME part header (Go SDK) */
    rc = parse(CTX, crlf(one_op("Content-ID: 7\n", "POST http://h/acct/t HTTP/1.1\n\n{}")),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "MIME Content-ID accepted");
    TEST_EQ_STR(b.ops[0].content_id, "7", "MIME Content-ID reported");
    TEST_EQ_INT(b.ops[0].nheaders, 0, "MIME Content-ID is not a sub-request header");

    /* Content-ID as a header of the embedded request */
    rc = parse(CTX, crlf(one_op("", "POST http://h/acct/t HTTP/1.1\ncontent-id: 12 \n\n{}")), &b,
               NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "request Content-ID accepted");
    TEST_EQ_STR(b.ops[0].content_id, "12", "request Content-ID reported, trimmed");

    /* both: the MIME part header wins */
    rc = parse(CTX,
               crlf(one_op("Content-ID: 1\n", "POST http://h/acct/t HTTP/1.1\nContent-ID: 2\n\n{}")),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "both Content-IDs accepted");
    TEST_EQ_STR(b.ops[0].content_id, "1", "MIME Content-ID preferred");

    /* outer Content-Type variants (.NET / Python) */
    const char *body = crlf(one_op("", "DELETE http://h/acct/t(PartitionKey='a',RowKey='b') HTTP/1.1\nIf-Match: *\n"));
    static const char *cts[] = {
        "multipart/mixed;charset=\"utf-8\";boundary=batch_x",
        "multipart/mixed; boundary=\"batch_x\"",
        "Multipart/Mixed; BOUNDARY=batch_x",
        "multipart/mixed ; boundary = batch_x ; charset=utf-8",
        "multipart/mixed; boundary=\"batch_x\"; charset=utf-8",
        "multipart/mixed; boundary=\"batch\\_x\"",
        "multipart/mixed; foo; boundary=batch_x",
    };
    for (size_t i = 0; i < sizeof cts / sizeof cts[0]; i++) {
        rc = parse(cts[i], body, &b, NULL);
        TEST_EQ_INT(rc, MULTIPART_OK, cts[i]);
        TEST_CHECK(rc == MULTIPART_OK && strcmp(b.boundary, "batch_x") == 0 && b.nops == 1,
                   "boundary read from the variant");
    }

    /* quoted changeset boundary inside the batch part */
    rc = parse(CTX,
               crlf("--batch_x\nContent-Type: multipart/mixed; boundary=\"cs y\"\n\n"
                    "--cs y\nContent-Type: application/http\n\n"
                    "PUT http://h/a/t(PartitionKey='a',RowKey='b') HTTP/1.1\n\n{}\n"
                    "--cs y--\n--batch_x--\n"),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "quoted changeset boundary with a space, no CTE header");
    TEST_EQ_STR(b.changeset_boundary, "cs y", "quoted changeset boundary value");

    /* closing delimiter without trailing "--" (old JS SDK), with or without CRLF */
    const char *noclose = crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                               "--cs_y\nContent-Type: application/http\n"
                               "Content-Transfer-Encoding: binary\n\n"
                               "DELETE http://h/a/t(PartitionKey='a',RowKey='b') HTTP/1.1\n\n"
                               "--cs_y--\n--batch_x\n");
    rc = parse(CTX, noclose, &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "outer close delimiter without -- accepted");
    TEST_EQ_INT(b.nops, 1, "no-close: one op");
    char *noclose2 = arena_strndup(A, noclose, strlen(noclose) - 2);
    TEST_EQ_INT(parse(CTX, noclose2, &b, NULL), MULTIPART_OK,
                "outer close without -- and without final CRLF accepted");
    const char *nocrlf = crlf(one_op("", "DELETE http://h/a/t() HTTP/1.1"));
    char *nocrlf2 = arena_strndup(A, nocrlf, strlen(nocrlf) - 2);
    TEST_EQ_INT(parse(CTX, nocrlf2, &b, NULL), MULTIPART_OK, "missing final CRLF accepted");
    TEST_EQ_INT(parse(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs\n\n"
                                "--cs\nContent-Type: application/http\n\n"
                                "DELETE /a/t() HTTP/1.1\n\n--cs\n\n--batch_x--\n"),
                      &b, NULL),
                MULTIPART_OK, "changeset close delimiter without -- accepted");

    /* trailing whitespace on delimiter lines and blank-only separator lines */
    rc = parse(CTX,
               crlf("--batch_x  \nContent-Type: multipart/mixed; boundary=cs_y\n \n"
                    "--cs_y\t\nContent-Type: application/http \n\n"
                    "DELETE http://h/a/t() HTTP/1.1  \n\n"
                    "--cs_y-- \n--batch_x--\t\n"),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "trailing whitespace on delimiter lines accepted");
    TEST_EQ_STR(b.ops[0].url, "http://h/a/t()", "request line trailing blanks trimmed");

    /* preamble and epilogue */
    rc = parse(CTX,
               crlf("This is a preamble.\n--batch_x is not a delimiter here\n\n"
                    "--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                    "changeset preamble\n"
                    "--cs_y\nContent-Type: application/http\n\n"
                    "DELETE http://h/a/t() HTTP/1.1\n\n"
                    "--cs_y--\nchangeset epilogue\n--batch_x--\nepilogue\n--batch_x\njunk"),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "preamble and epilogue ignored");
    TEST_EQ_INT(b.nops, 1, "preamble: one op");

    /* MERGE or PATCH; Host and Content-Length headers present or absent */
    rc = parse(CTX,
               crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                    "--cs_y\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n"
                    "PATCH http://h/a/t(PartitionKey='a',RowKey='1') HTTP/1.1\n"
                    "Host: h\nContent-Length: 9\n\n{\"Qty\":2}\n"
                    "--cs_y\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n"
                    "MERGE http://h/a/t(PartitionKey='a',RowKey='2') HTTP/1.1\n\n{\"Qty\":3}\n"
                    "--cs_y\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n"
                    "PUT http://h/a/t(PartitionKey='a',RowKey='3') HTTP/1.1\n\n{}\n"
                    "--cs_y--\n--batch_x--\n"),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "PATCH, MERGE, PUT, Host, Content-Length accepted");
    TEST_EQ_INT(b.nops, 3, "three ops");
    TEST_EQ_INT(b.ops[0].method, HTTP_M_PATCH, "PATCH enum");
    TEST_EQ_STR(hdr(&b.ops[0], "Host"), "h", "Host header kept");
    TEST_EQ_STR(body_of(&b.ops[0]), "{\"Qty\":2}", "body with Content-Length");
    TEST_EQ_INT(b.ops[1].method, HTTP_M_MERGE, "MERGE enum");
    TEST_EQ_INT(b.ops[2].method, HTTP_M_PUT, "PUT enum");
    TEST_EQ_INT(b.ops[1].nheaders, 0, "op without headers");

    /* LF-only mixed with CRLF in one body */
    rc = parse(CTX,
               "--batch_x\r\nContent-Type: multipart/mixed; boundary=cs_y\n\r\n"
               "--cs_y\nContent-Type: application/http\r\n\n"
               "DELETE http://h/a/t() HTTP/1.1\r\n\n--cs_y--\n--batch_x--\r\n",
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "mixed CRLF and LF accepted");
}

/* Parses a one-op changeset whose request line uses url; checks the split. */
static void check_url(const char *url, const char *host, const char *path, const char *query)
{
    struct multipart_batch b;
    char *req = arena_sprintf(A, "POST %s HTTP/1.1\n\n{}", url);
    int rc = parse(CTX, crlf(one_op("", req)), &b, NULL);
    char what[300];
    snprintf(what, sizeof what, "url %s", url);
    TEST_EQ_INT(rc, MULTIPART_OK, what);
    if (rc != MULTIPART_OK)
        return;
    TEST_EQ_STR(b.ops[0].url, url, "url as given");
    TEST_EQ_STR(b.ops[0].host, host, "host");
    TEST_EQ_STR(b.ops[0].path, path, "path");
    TEST_EQ_INT(b.ops[0].path_len, strlen(path), "path_len");
    TEST_EQ_STR(b.ops[0].query, query, "query");
    TEST_EQ_INT(b.ops[0].query_len, strlen(query), "query_len");
}

static void test_urls(void)
{
    check_url("http://127.0.0.1:10002/devstoreaccount1/orders()", "127.0.0.1:10002",
              "/devstoreaccount1/orders()", "");
    check_url("https://acct.table.core.windows.net/orders", "acct.table.core.windows.net",
              "/orders", "");
    check_url("https://acct.table.core.windows.net/orders?$format=application/json;odata=nometadata",
              "acct.table.core.windows.net", "/orders", "$format=application/json;odata=nometadata");
    check_url("/devstoreaccount1/orders?a=1#frag", "", "/devstoreaccount1/orders", "a=1");
    check_url("orders(PartitionKey='a',RowKey='b')", "", "orders(PartitionKey='a',RowKey='b')",
              "");
    check_url("http://h", "h", "/", "");
    check_url("http://h?x=1", "h", "/", "x=1");
    check_url("HTTP://H:1/a/b", "H:1", "/a/b", "");
    /* relative to the service root, without the account (legacy SDKs) */
    check_url("/mytable", "", "/mytable", "");
    check_url("/mytable(PartitionKey='p',RowKey='r')", "",
              "/mytable(PartitionKey='p',RowKey='r')", "");
    check_url("/devstoreaccount1", "", "/devstoreaccount1", "");
    check_url("/mytable()?$filter=RowKey%20eq%20'r'", "", "/mytable()", "$filter=RowKey%20eq%20'r'");
}

/* A changeset as the legacy Python SDK writes it for a custom
 * TableEndpoint (sub-request URLs relative to the service root, without
 * the account; issue 14 point 8), and the per-part Accept and
 * Content-Type that decide each part's format (point 6). */
static void test_legacy_rootless(void)
{
    static const char *body =
        "--batch_L\n"
        "Content-Type: multipart/mixed; boundary=changeset_L\n"
        "\n"
        "--changeset_L\n"
        "Content-Type: application/http\n"
        "Content-Transfer-Encoding: binary\n"
        "\n"
        "POST /mytable HTTP/1.1\n"
        "Content-Type: application/json\n"
        "Accept: application/json;odata=minimalmetadata\n"
        "Prefer: return-no-content\n"
        "DataServiceVersion: 3.0;\n"
        "Content-Length: 33\n"
        "\n"
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\n"
        "--changeset_L\n"
        "Content-Type: application/http\n"
        "Content-Transfer-Encoding: binary\n"
        "\n"
        "MERGE /mytable(PartitionKey='p',RowKey='r') HTTP/1.1\n"
        "Content-Type: application/atom+xml\n"
        "Accept: application/atom+xml,application/xml\n"
        "If-Match: *\n"
        "\n"
        "{\"V\":1}\n"
        "--changeset_L\n"
        "Content-Type: application/http\n"
        "Content-Transfer-Encoding: binary\n"
        "\n"
        "DELETE /devstoreaccount1/mytable(PartitionKey='p',RowKey='s') HTTP/1.1\n"
        "If-Match: *\n"
        "\n"
        "\n"
        "--changeset_L--\n"
        "--batch_L--\n";
    struct multipart_batch b;
    int rc = parse("multipart/mixed; boundary=batch_L", crlf(body), &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "legacy rootless changeset parses");
    if (rc != MULTIPART_OK)
        return;
    TEST_EQ_INT(b.nops, 3, "legacy: three operations");
    TEST_CHECK(b.ops[0].method == HTTP_M_POST && strcmp(b.ops[0].host, "") == 0 &&
                   strcmp(b.ops[0].path, "/mytable") == 0 && b.ops[0].path_len == 8,
               "legacy: POST /mytable has no host and path /mytable");
    TEST_CHECK(b.ops[1].method == HTTP_M_MERGE && strcmp(b.ops[1].host, "") == 0 &&
                   strcmp(b.ops[1].path, "/mytable(PartitionKey='p',RowKey='r')") == 0,
               "legacy: MERGE /mytable(keys) has no host and the whole path");
    TEST_CHECK(b.ops[2].method == HTTP_M_DELETE &&
                   strcmp(b.ops[2].path, "/devstoreaccount1/mytable(PartitionKey='p',RowKey='s')") == 0,
               "legacy: DELETE with the account segment keeps it");
    TEST_EQ_STR(hdr(&b.ops[0], "Accept"), "application/json;odata=minimalmetadata",
                "legacy: each part keeps its own Accept (JSON)");
    TEST_EQ_STR(hdr(&b.ops[1], "Accept"), "application/atom+xml,application/xml",
                "legacy: each part keeps its own Accept (Atom)");
    TEST_EQ_STR(hdr(&b.ops[1], "Content-Type"), "application/atom+xml",
                "legacy: each part keeps its own Content-Type");
    TEST_CHECK(hdr(&b.ops[2], "Accept") == NULL, "legacy: a part without Accept has none");
    TEST_EQ_STR(body_of(&b.ops[0]), "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}",
                "legacy: insert body");
    TEST_EQ_STR(body_of(&b.ops[1]), "{\"V\":1}", "legacy: merge body");
}

static void test_bodies(void)
{
    struct multipart_batch b;
    int rc;

    /* the boundary text inside a JSON string (same line) is data */
    rc = parse(CTX,
               crlf(one_op("", "POST http://h/a/t HTTP/1.1\n\n"
                               "{\"s\":\"\\r\\n--cs_y--\\r\\n\",\"t\":\"--batch_x--\"}")),
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "boundary inside a JSON string is data");
    TEST_EQ_STR(body_of(&b.ops[0]), "{\"s\":\"\\r\\n--cs_y--\\r\\n\",\"t\":\"--batch_x--\"}",
                "JSON body with boundary text intact");

    /* a line that merely starts with the delimiter is data */
    rc = parse(CTX, crlf(one_op("", "POST http://h/a/t HTTP/1.1\n\n{\n--cs_yz\n--cs_y--x\n}")), &b,
               NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "delimiter prefix lines are data");
    TEST_EQ_STR(body_of(&b.ops[0]), "{\r\n--cs_yz\r\n--cs_y--x\r\n}", "multi-line body intact");

    /* a whole line equal to the delimiter splits the part, as in MIME */
    TEST_CHECK(malformed(CTX, crlf(one_op("", "POST http://h/a/t HTTP/1.1\n\n{\"a\":1,\n--cs_y\n\"b\":2}"))),
               "whole delimiter line inside a body splits it (then malformed)");

    /* NUL bytes in the body are kept (explicit length) */
    static const char nulbody[] =
        "--batch_x\r\nContent-Type: multipart/mixed; boundary=cs_y\r\n\r\n"
        "--cs_y\r\nContent-Type: application/http\r\n\r\n"
        "POST http://h/a/t HTTP/1.1\r\n\r\n{\"a\":\"\0\0\"}\r\n"
        "--cs_y--\r\n--batch_x--\r\n";
    rc = multipart_parse(A, CTX, nulbody, sizeof nulbody - 1, &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "NUL bytes in a body accepted");
    TEST_EQ_INT(b.ops[0].body_len, 10, "NUL body length");
    TEST_CHECK(b.ops[0].body_len == 10 && memcmp(b.ops[0].body, "{\"a\":\"\0\0\"}", 10) == 0,
               "NUL body bytes");

    /* leading/trailing whitespace of the body is stripped */
    rc = parse(CTX, crlf(one_op("", "POST http://h/a/t HTTP/1.1\n\n\n  {}  \n\n")), &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "blank-padded body accepted");
    TEST_EQ_STR(body_of(&b.ops[0]), "{}", "body trimmed");

    /* headers that run to the end of the part (no blank line) */
    rc = parse(CTX, "--batch_x\r\nContent-Type: application/http\r\n\r\n"
                    "GET /a/t() HTTP/1.1\r\nAccept: application/json\r\n--batch_x--",
               &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_OK, "headers ending at the part end");
    TEST_EQ_STR(hdr(&b.ops[0], "Accept"), "application/json", "last header kept");
    TEST_CHECK(b.ops[0].body == NULL, "no body");
}

/* Delimiter lines are found wherever they fall in the parser's 32-byte
 * (AVX2) or 16-byte (SSE2) search steps: the same batch behind preambles of 0 to 47 bytes full of
 * '-', of "--" inside lines and of "--" lines of other boundaries, with a
 * body holding "--" inside a line and a line that merely starts like the
 * delimiter; LF and CRLF. */
static void test_delimiter_offsets(void)
{
    static const char filler[] = "a-b--c\n-d\n--other\nx--y\n-\n";
    static const char batch[] =
        "--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
        "--cs_y\nContent-Type: application/http\n\n"
        "POST http://h/a/t HTTP/1.1\nPrefer: return-no-content\n\n"
        "{\"a\":\"x--y\",\n--cs_yz\n\"b\":\"-\"}\n"
        "--cs_y\nContent-Type: application/http\n\n"
        "DELETE http://h/a/t(PartitionKey='a',RowKey='b') HTTP/1.1\n\n"
        "--cs_y--\n--batch_x--\n";
    for (int use_crlf = 0; use_crlf < 2; use_crlf++) {
        int good = 0;
        for (size_t k = 0; k < 48; k++) {
            char text[512];
            size_t n = 0;
            for (size_t i = 0; i < k; i++)
                text[n++] = filler[i % (sizeof filler - 1)];
            if (k)
                text[n++] = '\n';
            memcpy(text + n, batch, sizeof batch);
            const char *body = use_crlf ? crlf(text) : text;
            const char *want = use_crlf ? "{\"a\":\"x--y\",\r\n--cs_yz\r\n\"b\":\"-\"}"
                                        : "{\"a\":\"x--y\",\n--cs_yz\n\"b\":\"-\"}";
            struct multipart_batch b;
            int rc = parse(CTX, body, &b, NULL);
            if (rc == MULTIPART_OK && b.nops == 2 && strcmp(body_of(&b.ops[0]), want) == 0 &&
                b.ops[1].method == HTTP_M_DELETE && b.ops[1].body == NULL)
                good++;
            else
                printf("#   preamble of %zu bytes (%s): rc %d, %zu ops\n", k,
                       use_crlf ? "CRLF" : "LF", rc, rc == MULTIPART_OK ? b.nops : 0);
        }
        TEST_EQ_INT(good, 48, use_crlf ? "delimiters found behind 48 preamble lengths (CRLF)"
                                       : "delimiters found behind 48 preamble lengths (LF)");
    }
}

/* Operations whose request line and headers repeat an earlier one's byte
 * for byte share its parse; any difference parses anew. */
static void test_repeated_heads(void)
{
    struct multipart_batch b;
    const char *body = crlf("--batch_x\n"
                            "Content-Type: multipart/mixed; boundary=cs_y\n\n"
                            "--cs_y\nContent-Type: application/http\nContent-ID: 1\n\n"
                            "POST http://h/a/t HTTP/1.1\nAccept: application/json\nPrefer: p\n\n"
                            "{\"n\":1}\n"
                            "--cs_y\nContent-Type: application/http\nContent-ID: 2\n\n"
                            "POST http://h/a/t HTTP/1.1\nAccept: application/json\nPrefer: p\n\n"
                            "{\"n\":2}\n"
                            "--cs_y\nContent-Type: application/http\n\n"
                            "POST http://h/a/t HTTP/1.1\nAccept: application/json\nPrefer: q\n\n"
                            "{\"n\":3}\n"
                            "--cs_y\nContent-Type: application/http\n\n"
                            "POST http://h/a/t HTTP/1.1\nAccept: application/json\nPrefer: q\n"
                            "Content-ID: 9\n\n{\"n\":4}\n"
                            "--cs_y\nContent-Type: application/http\n\n"
                            "POST http://h/a/t HTTP/1.1\nAccept: application/json\nPrefer: q\n"
                            "Content-ID: 9\n\n{\"n\":5}\n"
                            "--cs_y\nContent-Type: application/http\n\n"
                            "MERGE http://h/a/t(PartitionKey='p',RowKey='r')?x=1 HTTP/1.1\n"
                            "Accept: application/json\nPrefer: q\nContent-ID: 9\n\n{\"n\":6}\n"
                            "--cs_y--\n--batch_x--\n");
    TEST_EQ_INT(parse(CTX, body, &b, NULL), MULTIPART_OK, "repeated heads: parsed");
    TEST_EQ_INT(b.nops, 6, "repeated heads: 6 operations");
    if (b.nops != 6)
        return;
    static const char *const bodies[] = {"{\"n\":1}", "{\"n\":2}", "{\"n\":3}",
                                         "{\"n\":4}", "{\"n\":5}", "{\"n\":6}"};
    static const char *const prefer[] = {"p", "p", "q", "q", "q", "q"};
    static const char *const cids[] = {"1", "2", NULL, "9", "9", "9"};
    char what[128];
    for (int i = 0; i < 6; i++) {
        const struct multipart_op *op = &b.ops[i];
        snprintf(what, sizeof what, "repeated heads: op %d body", i);
        TEST_EQ_STR(body_of(op), bodies[i], what);
        snprintf(what, sizeof what, "repeated heads: op %d Prefer", i);
        TEST_EQ_STR(hdr(op, "Prefer"), prefer[i], what);
        snprintf(what, sizeof what, "repeated heads: op %d Content-ID", i);
        TEST_CHECK(cids[i] ? op->content_id && strcmp(op->content_id, cids[i]) == 0
                           : op->content_id == NULL,
                   what);
        snprintf(what, sizeof what, "repeated heads: op %d method and path", i);
        TEST_CHECK(i < 5 ? op->method == HTTP_M_POST && strcmp(op->path, "/a/t") == 0 &&
                               strcmp(op->query, "") == 0
                         : op->method == HTTP_M_MERGE && strcmp(op->method_name, "MERGE") == 0 &&
                               strcmp(op->path, "/a/t(PartitionKey='p',RowKey='r')") == 0 &&
                               strcmp(op->query, "x=1") == 0,
                   what);
    }
    TEST_CHECK(b.ops[1].headers == b.ops[0].headers, "repeated heads: op 1 shares op 0's parse");
    TEST_CHECK(b.ops[2].headers != b.ops[1].headers, "repeated heads: a changed value parses anew");
    TEST_CHECK(b.ops[4].headers == b.ops[3].headers && b.ops[4].nheaders == 3,
               "repeated heads: op 4 shares op 3's parse, Content-ID header included");

    /* a head repeated but cut short by the end of its part is parsed anew */
    const char *cut = crlf("--batch_x\n"
                           "Content-Type: multipart/mixed; boundary=cs_y\n\n"
                           "--cs_y\nContent-Type: application/http\n\n"
                           "POST http://h/a/t HTTP/1.1\nA: 1\n\n{}\n"
                           "--cs_y\nContent-Type: application/http\n\n"
                           "POST http://h/a/t HTTP/1.1\nA: 1\n"
                           "--cs_y--\n--batch_x--\n");
    TEST_EQ_INT(parse(CTX, cut, &b, NULL), MULTIPART_OK, "repeated head cut short: parsed");
    TEST_CHECK(b.nops == 2 && b.ops[1].body == NULL && b.ops[1].nheaders == 1 &&
                   strcmp(hdr(&b.ops[1], "A"), "1") == 0,
               "repeated head cut short: headers to the part end, no body");
}

static void test_malformed(void)
{
    const char *ok = crlf(one_op("", "DELETE http://h/a/t() HTTP/1.1\n"));
    struct multipart_batch b;
    TEST_EQ_INT(parse(CTX, ok, &b, NULL), MULTIPART_OK, "baseline parses");

    TEST_CHECK(malformed(NULL, ok), "missing Content-Type");
    TEST_CHECK(malformed("multipart/mixed", ok), "missing boundary");
    TEST_CHECK(malformed("multipart/mixed; charset=utf-8", ok), "boundary param absent");
    TEST_CHECK(malformed("multipart/mixed; boundary=", ok), "empty boundary");
    TEST_CHECK(malformed("multipart/mixed; boundary=\"\"", ok), "empty quoted boundary");
    TEST_CHECK(malformed("multipart/mixed; boundary=\"batch_x", ok), "unterminated quote");
    TEST_CHECK(malformed("multipart/mixed; boundary=\"batch_x\"x", ok), "junk after quote");
    TEST_CHECK(malformed("application/json; boundary=batch_x", ok), "not multipart/mixed");
    TEST_CHECK(malformed("multipart/mixed; boundary=batch_z", ok), "boundary not found");
    TEST_CHECK(malformed(CTX, ""), "empty body");
    TEST_CHECK(malformed(CTX, "--batch_x--\r\n"), "batch with no part");
    TEST_CHECK(malformed(CTX, "--batch_x\r\n\r\n"), "batch with only a blank part");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: application/http\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--cs_y--\n")),
               "unterminated batch (no outer delimiter after the part)");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: application/http\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--batch_x--\n")),
               "unterminated changeset part");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: multipart/mixed; boundary=cs_z\n\n"
                                   "--cs_z\nContent-Type: application/http\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--cs_z--\n"
                                   "--cs_y--\n--batch_x--\n")),
               "nested changeset");
    const char *two = crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                           "--cs_y\nContent-Type: application/http\n\n"
                           "DELETE /a/t() HTTP/1.1\n\n--cs_y--\n"
                           "--batch_x\nContent-Type: multipart/mixed; boundary=cs_z\n\n"
                           "--cs_z\nContent-Type: application/http\n\n"
                           "DELETE /a/t() HTTP/1.1\n\n--cs_z--\n--batch_x--\n");
    TEST_CHECK(malformed(CTX, two), "two changesets");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: application/http\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--cs_y--\n"
                                   "--batch_x\nContent-Type: application/http\n\n"
                                   "GET /a/t() HTTP/1.1\n\n--batch_x--\n")),
               "changeset plus query");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: application/http\n\nGET /a/t() HTTP/1.1\n\n"
                                   "--batch_x\nContent-Type: application/http\n\nGET /a/t() HTTP/1.1\n\n"
                                   "--batch_x--\n")),
               "two queries");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "GET http://h/a/t() HTTP/1.1\n"))),
               "GET inside a changeset");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "OPTIONS http://h/a/t() HTTP/1.1\n"))),
               "OPTIONS inside a changeset");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "merge http://h/a/t() HTTP/1.1\n"))),
               "lower-case method (unknown) inside a changeset");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: application/http\n\n"
                                   "POST /a/t HTTP/1.1\n\n{}\n--batch_x--\n")),
               "POST outside a changeset");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y--\n--batch_x--\n")),
               "empty changeset");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--batch_x--\n")),
               "changeset boundary never appears");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed\n\n"
                                   "--cs_y\n--cs_y--\n--batch_x--\n")),
               "changeset without boundary");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\n\n--cs_y\nContent-Type: application/http\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--cs_y--\n--batch_x--\n")),
               "empty part inside a changeset");
    TEST_CHECK(malformed(CTX, crlf(one_op("Bad Header: x\n", "DELETE /a/t() HTTP/1.1\n"))),
               "bad part header name (space)");
    TEST_CHECK(malformed(CTX, crlf(one_op("NoColonHere\n", "DELETE /a/t() HTTP/1.1\n"))),
               "bad part header (no colon)");
    TEST_CHECK(malformed(CTX, crlf(one_op(": novalue\n", "DELETE /a/t() HTTP/1.1\n"))),
               "bad part header (empty name)");
    TEST_CHECK(malformed(CTX, crlf(one_op(" folded\n", "DELETE /a/t() HTTP/1.1\n"))),
               "folded part header line");
    TEST_CHECK(malformed(CTX, crlf(one_op("X-A: a\x01z\n", "DELETE /a/t() HTTP/1.1\n"))),
               "control byte in a part header");
    static const char nulhdr[] =
        "--batch_x\r\nContent-Type: application/http\r\n\r\n"
        "GET /a/t() HTTP/1.1\r\nAccept: a\0b\r\n\r\n--batch_x--\r\n";
    TEST_CHECK(multipart_parse(A, CTX, nulhdr, sizeof nulhdr - 1, &b, NULL) ==
                   MULTIPART_ERR_MALFORMED,
               "NUL byte in a sub-request header");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE /a/t() HTTP/1.1\nBad Name: 1\n"))),
               "bad sub-request header name");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: application/http\n"
                                   "--cs_y--\n--batch_x--\n")),
               "part headers running into the delimiter, no request");
    TEST_CHECK(malformed(CTX, crlf(one_op("", ""))), "no request line");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "\n\n  \n"))), "only blank lines, no request line");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE http://h/a/t() HTTP/1.0\n"))),
               "HTTP/1.0 sub-request");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE http://h/a/t() http/1.1\n"))),
               "lower-case version");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE http://h/a/t()\n"))), "no version");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE\n"))), "method only");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE  HTTP/1.1\n"))), "no URL");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DEL(ETE /a HTTP/1.1\n"))), "bad method token");
    TEST_CHECK(malformed(CTX, crlf(one_op("", "DELETE /a\x7f HTTP/1.1\n"))),
               "control byte in the request line");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Transfer-Encoding: binary\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--cs_y--\n--batch_x--\n")),
               "part without Content-Type");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: text/plain\n\n"
                                   "DELETE /a/t() HTTP/1.1\n\n--cs_y--\n--batch_x--\n")),
               "part with the wrong Content-Type");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n"
                                   "--cs_y\nContent-Type: application/http\n"
                                   "Content-Transfer-Encoding: base64\n\n"
                                   "REVMRVRF\n--cs_y--\n--batch_x--\n")),
               "base64 transfer encoding");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\n\n--batch_x--\n")),
               "batch part without headers");
    TEST_CHECK(malformed(CTX, crlf("--batch_x\nContent-Type: text/plain\n\nhello\n--batch_x--\n")),
               "batch part of an unknown type");
    char longb[260];
    memset(longb, 'b', sizeof longb);
    memcpy(longb, "multipart/mixed; boundary=", 26);
    longb[sizeof longb - 1] = '\0';
    TEST_CHECK(malformed(longb, ok), "boundary longer than 200");
    TEST_CHECK(malformed("multipart/mixed; boundary=\"a\x01\"", ok), "control byte in boundary");
}

/* A changeset of n inserts (LF form). */
static char *n_ops(int n)
{
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "--batch_x\nContent-Type: multipart/mixed; boundary=cs_y\n\n");
    for (int i = 0; i < n; i++)
        buf_printf(&b,
                   "--cs_y\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n"
                   "POST http://h/a/t HTTP/1.1\nContent-ID: %d\n\n"
                   "{\"PartitionKey\":\"p\",\"RowKey\":\"%d\"}\n",
                   i + 1, i);
    buf_puts(&b, "--cs_y--\n--batch_x--\n");
    char *s = crlf(b.data);
    buf_free(&b);
    return s;
}

static void test_limits(void)
{
    struct multipart_batch b;
    const char *why = "x";
    int rc = parse(CTX, n_ops(100), &b, &why);
    TEST_EQ_INT(rc, MULTIPART_OK, "100 operations accepted");
    TEST_EQ_INT(b.nops, 100, "100 ops counted");
    TEST_CHECK(why == NULL, "no reason for 100");
    TEST_EQ_STR(b.ops[99].content_id, "100", "op 99 Content-ID");
    TEST_EQ_STR(body_of(&b.ops[99]), "{\"PartitionKey\":\"p\",\"RowKey\":\"99\"}", "op 99 body");

    rc = parse(CTX, n_ops(101), &b, &why);
    TEST_EQ_INT(rc, MULTIPART_ERR_TOO_MANY, "101 operations: distinct code");
    TEST_EQ_INT(b.nops, 101, "101 ops counted");
    TEST_CHECK(why != NULL, "reason for 101");
    TEST_EQ_INT(b.kind, MULTIPART_CHANGESET, "101: batch filled in");
    TEST_EQ_STR(b.ops[100].content_id, "101", "101: last op parsed");

    rc = parse(CTX, n_ops(250), &b, NULL);
    TEST_EQ_INT(rc, MULTIPART_ERR_TOO_MANY, "250 operations: too many");
    TEST_EQ_INT(b.nops, 250, "250 counted");

    /* malformed wins over too many */
    char *bad = n_ops(101);
    char *pos = strstr(bad, "HTTP/1.1");
    memcpy(pos, "HTTP/1.0", 8);
    TEST_CHECK(malformed(CTX, bad), "malformed op among 101 is malformed");
}

/* Parses every prefix of body (in an exactly sized heap copy, so ASan sees
 * any read past the end) and checks each result is an error or a batch with
 * no more operations than the whole, whose slices lie inside the prefix. */
static void check_prefixes(const char *ct, const char *body, const char *label)
{
    size_t n = strlen(body);
    struct arena *pa = arena_new(0);  /* reset per prefix; body stays in A */
    struct multipart_batch full;
    int frc = multipart_parse(pa, ct, body, n, &full, NULL);
    size_t full_nops = full.nops;
    size_t bad = 0, oks = 0;
    for (size_t len = 0; len <= n; len++) {
        char *copy = malloc(len ? len : 1);
        memcpy(copy, body, len);
        struct multipart_batch b;
        const char *why = NULL;
        int rc = multipart_parse(pa, ct, copy, len, &b, &why);
        if (rc == MULTIPART_OK) {
            oks++;
            if (b.nops == 0 || b.nops > full_nops)
                bad++;
            for (size_t i = 0; i < b.nops; i++)
                if (b.ops[i].body &&
                    (b.ops[i].body < copy || b.ops[i].body + b.ops[i].body_len > copy + len))
                    bad++;
        } else if (rc != MULTIPART_ERR_MALFORMED || !why) {
            bad++;
        }
        free(copy);
        arena_reset(pa);
    }
    arena_free(pa);
    char what[128];
    snprintf(what, sizeof what, "%s: every prefix is an error or a sub-batch", label);
    TEST_CHECK(frc == MULTIPART_OK && bad == 0, what);
    snprintf(what, sizeof what, "%s: some prefixes parse (close delimiter optional)", label);
    TEST_CHECK(oks >= 1, what);
}

static void test_truncation(void)
{
    check_prefixes(CT, crlf(EX82), "8.2 CRLF");
    check_prefixes(CT, EX82, "8.2 LF");
    check_prefixes("multipart/mixed; boundary=batch_ab12", crlf(EX87), "8.7");
}

static void test_to_request(void)
{
    struct multipart_batch b;
    const char *body = crlf(EX82);
    TEST_EQ_INT(parse(CT, body, &b, NULL), MULTIPART_OK, "to_request: parse");
    struct request parent;
    memset(&parent, 0, sizeof parent);
    parent.tls = 1;
    strcpy(parent.peer_ip, "127.0.0.1");
    parent.start_us = 42;
    struct request r;
    multipart_op_to_request(A, &b.ops[0], &parent, &r);
    TEST_EQ_INT(r.method, HTTP_M_POST, "to_request: method");
    TEST_EQ_STR(r.method_name, "POST", "to_request: method name");
    TEST_EQ_INT(r.http_major * 10 + r.http_minor, 11, "to_request: HTTP/1.1");
    TEST_EQ_STR(r.target, "http://127.0.0.1:10002/devstoreaccount1/orders", "to_request: target");
    TEST_EQ_STR(r.path, "/devstoreaccount1/orders", "to_request: path");
    TEST_EQ_STR(r.query, "", "to_request: query");
    TEST_EQ_INT(r.nheaders, 4, "to_request: headers");
    TEST_EQ_STR(request_header(&r, "accept"), "application/json;odata=minimalmetadata",
                "to_request: request_header works");
    {
        static const char want[] = "{\"PartitionKey\":\"p1\",\"RowKey\":\"r1\",\"Qty\":1}";
        TEST_CHECK(r.body == b.ops[0].body && r.body_len == sizeof want - 1 &&
                       memcmp(r.body, want, sizeof want - 1) == 0,
                   "to_request: body is the op's slice of the batch body (no copy)");
    }
    TEST_EQ_INT(r.body_len, b.ops[0].body_len, "to_request: body_len");
    TEST_CHECK(r.tls == 1 && strcmp(r.peer_ip, "127.0.0.1") == 0 && r.start_us == 42 &&
                   r.arena == A,
               "to_request: connection fields from parent");
    multipart_op_to_request(A, &b.ops[2], NULL, &r);
    TEST_CHECK(r.body == NULL && r.body_len == 0, "to_request: no body -> NULL");
}

static struct http_header H(const char *n, const char *v)
{
    struct http_header h = {n, v, strlen(v)};
    return h;
}

static void test_write_success(void)
{
    static const char *expect =
        "--batchresponse_6855a671-22eb-4f57-aac9-e4249f5fe499\r\n"
        "Content-Type: multipart/mixed; boundary=changesetresponse_d62db986-87c1-44e6-80ca-45aafe557be2\r\n"
        "\r\n"
        "--changesetresponse_d62db986-87c1-44e6-80ca-45aafe557be2\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 204 No Content\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-cache\r\n"
        "Preference-Applied: return-no-content\r\n"
        "DataServiceVersion: 3.0;\r\n"
        "Location: https://acct.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')\r\n"
        "DataServiceId: https://acct.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')\r\n"
        "ETag: W/\"datetime'2024-06-03T10%3A00%3A00.1234567Z'\"\r\n"
        "\r\n"
        "\r\n"
        "--changesetresponse_d62db986-87c1-44e6-80ca-45aafe557be2\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 204 No Content\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-cache\r\n"
        "DataServiceVersion: 1.0;\r\n"
        "ETag: W/\"datetime'2024-06-03T10%3A00%3A00.1234567Z'\"\r\n"
        "\r\n"
        "\r\n"
        "--changesetresponse_d62db986-87c1-44e6-80ca-45aafe557be2\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 204 No Content\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-cache\r\n"
        "DataServiceVersion: 1.0;\r\n"
        "\r\n"
        "\r\n"
        "--changesetresponse_d62db986-87c1-44e6-80ca-45aafe557be2--\r\n"
        "--batchresponse_6855a671-22eb-4f57-aac9-e4249f5fe499--\r\n";
    const char *etag = "W/\"datetime'2024-06-03T10%3A00%3A00.1234567Z'\"";
    const char *loc = "https://acct.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')";
    struct http_header h0[] = {H("X-Content-Type-Options", "nosniff"),
                               H("Cache-Control", "no-cache"),
                               H("Preference-Applied", "return-no-content"),
                               H("DataServiceVersion", "3.0;"),
                               H("Location", loc),
                               H("DataServiceId", loc),
                               H("ETag", etag)};
    struct http_header h1[] = {H("X-Content-Type-Options", "nosniff"),
                               H("Cache-Control", "no-cache"), H("DataServiceVersion", "1.0;"),
                               H("ETag", etag)};
    struct http_header h2[] = {H("X-Content-Type-Options", "nosniff"),
                               H("Cache-Control", "no-cache"), H("DataServiceVersion", "1.0;")};
    struct multipart_part parts[3] = {
        {204, NULL, NULL, h0, 7, NULL, 0},
        {204, "No Content", NULL, h1, 4, "", 0},
        {204, NULL, NULL, h2, 3, NULL, 0},
    };
    struct buf out;
    buf_init(&out);
    multipart_write_changeset(&out, "6855a671-22eb-4f57-aac9-e4249f5fe499",
                              "d62db986-87c1-44e6-80ca-45aafe557be2", parts, 3);
    TEST_EQ_STR(out.data, expect, "changeset success response, byte for byte");
    TEST_EQ_INT(out.len, strlen(expect), "success response length");
    buf_free(&out);

    TEST_EQ_STR(multipart_content_type(A, "6855a671-22eb-4f57-aac9-e4249f5fe499"),
                "multipart/mixed; boundary=batchresponse_6855a671-22eb-4f57-aac9-e4249f5fe499",
                "top-level Content-Type");
}

/* Control bytes in any header text become spaces: a header value can never
 * end its line early or smuggle another header in. */
static void test_write_control_bytes(void)
{
    static const char *expect =
        "--batchresponse_b\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 200 O K\r\n"
        "Content-ID: 1  X-Evil: 1\r\n"
        "X-A b: v  Set-Cookie: x\tz \r\n"
        "Location: http://h/t(PartitionKey='a ',RowKey='b')\r\n"
        "\r\n"
        "{}\r\n"
        "--batchresponse_b--\r\n";
    struct http_header h[] = {H("X-A\nb", "v\r\nSet-Cookie: x\tz\x7f"),
                              H("Location", "http://h/t(PartitionKey='a\x01',RowKey='b')")};
    struct multipart_part part = {200, "O\rK", "1\r\nX-Evil: 1", h, 2, "{}", 2};
    struct buf out;
    buf_init(&out);
    multipart_write_query(&out, "b", &part);
    TEST_EQ_STR(out.data, expect, "control bytes in reason, Content-ID, names and values -> spaces");
    TEST_EQ_INT(out.len, strlen(expect), "length after blanking control bytes");
    buf_free(&out);

    /* Header blocks longer than 255 16-byte steps (the block check counts in
     * byte lanes): clean ones are kept, one control byte anywhere is blanked. */
    for (size_t at = 0; at <= 9000; at += 1500) {
        size_t vlen = 9000;
        char *v = arena_alloc(A, vlen + 1);
        for (size_t i = 0; i < vlen; i++)
            v[i] = (char)('a' + i % 26);
        v[vlen] = '\0';
        int dirty = at < vlen;
        if (dirty)
            v[at] = '\n';
        struct http_header lh[] = {H("X-Long", v), H("X-Short", "s")};
        struct multipart_part lp = {204, NULL, NULL, lh, 2, NULL, 0};
        buf_init(&out);
        multipart_write_query(&out, "b", &lp);
        const char *hv = strstr(out.data, "X-Long: ");
        int ok = hv && strstr(out.data, "\r\nX-Short: s\r\n") != NULL;
        if (ok) {
            hv += 8;
            for (size_t i = 0; i < vlen && ok; i++)
                ok = hv[i] == (dirty && i == at ? ' ' : (char)('a' + i % 26));
            ok = ok && hv[vlen] == '\r';
        }
        char what[96];
        snprintf(what, sizeof what, "9000-byte header value, %s", dirty ? "LF blanked" : "clean");
        if (dirty)
            snprintf(what, sizeof what, "9000-byte header value, LF at %zu blanked", at);
        TEST_CHECK(ok, what);
        buf_free(&out);
    }
    /* "X-Control-Byte: " is 16 bytes, so 4096 control bytes put 256 in every
     * byte lane of the block check, which would wrap to 0 and leave just the
     * line's own CR LF to count */
    {
        char *v = arena_alloc(A, 4097);
        memset(v, '\x01', 4096);
        v[4096] = '\0';
        struct http_header lh[] = {H("X-Control-Byte", v)};
        struct multipart_part lp = {204, NULL, NULL, lh, 1, NULL, 0};
        buf_init(&out);
        multipart_write_query(&out, "b", &lp);
        const char *hv = strstr(out.data, "X-Control-Byte: ");
        int ok = hv != NULL;
        for (size_t i = 0; ok && i < 4096; i++)
            ok = hv[16 + i] == ' ';
        TEST_CHECK(ok, "4096 control bytes in one value all blanked");
        buf_free(&out);
    }
}

/* ctl_span: the first control byte at any offset of a long run (16- and
 * 8-byte steps, then bytes), among tabs and bytes >= 0x80, which pass. */
static void test_ctl_span(void)
{
    static const char plain[] = "a\t\x80\xff ~\xc3\xbc";
    static const unsigned char bad[] = {0x00, 0x01, 0x0a, 0x0d, 0x1f, 0x7f};
    int found = 0, total = 0;
    char run[48];
    for (size_t b = 0; b < sizeof bad; b++) {
        for (int pos = 0; pos < 48; pos++) {
            for (int j = 0; j < 48; j++)
                run[j] = plain[j % (sizeof plain - 1)];
            run[pos] = (char)bad[b];
            found += ctl_span(run, sizeof run) == (size_t)pos;
            total++;
        }
    }
    TEST_EQ_INT(found, total, "ctl_span stops at each control byte at each of 48 offsets");
    for (int j = 0; j < 48; j++)
        run[j] = plain[j % (sizeof plain - 1)];
    TEST_EQ_INT(ctl_span(run, sizeof run), sizeof run, "ctl_span passes tabs and bytes >= 0x80");
    TEST_EQ_INT(ctl_span(run, 0), 0, "ctl_span of nothing");
}

static void test_write_failure(void)
{
    static const char *json =
        "{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\","
        "\"value\":\"1:The specified entity already exists.\\nRequestId:a1f47a48-9bb1-4b3d-8c6d-"
        "d49d382153e8\\nTime:2024-06-03T10:00:00.5907425Z\"}}}";
    char *expect = arena_sprintf(
        A,
        "--batchresponse_fe2c3109-0555-4011-abe3-55d0c32a4ca2\r\n"
        "Content-Type: multipart/mixed; boundary=changesetresponse_a2395820-82ca-4a23-bd49-290bfa44f306\r\n"
        "\r\n"
        "--changesetresponse_a2395820-82ca-4a23-bd49-290bfa44f306\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 409 Conflict\r\n"
        "Content-ID: 1\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-cache\r\n"
        "Preference-Applied: return-no-content\r\n"
        "DataServiceVersion: 3.0;\r\n"
        "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
        "\r\n"
        "%s\r\n"
        "--changesetresponse_a2395820-82ca-4a23-bd49-290bfa44f306--\r\n"
        "--batchresponse_fe2c3109-0555-4011-abe3-55d0c32a4ca2--\r\n",
        json);
    /* built through a struct response, as the protocol layer will */
    struct response resp;
    response_init(&resp, A);
    resp.status = 409;
    response_header(&resp, "X-Content-Type-Options", "nosniff");
    response_header(&resp, "Cache-Control", "no-cache");
    response_header(&resp, "Preference-Applied", "return-no-content");
    response_header(&resp, "DataServiceVersion", "3.0;");
    response_header(&resp, "Content-Type",
                    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8");
    buf_puts(&resp.body, json);
    struct multipart_part part;
    multipart_part_from_response(&resp, "1", &part);
    struct buf out;
    buf_init(&out);
    multipart_write_changeset(&out, "fe2c3109-0555-4011-abe3-55d0c32a4ca2",
                              "a2395820-82ca-4a23-bd49-290bfa44f306", &part, 1);
    TEST_EQ_STR(out.data, expect, "changeset failure response, byte for byte");
    buf_free(&out);
    response_free(&resp);
}

static void test_write_query(void)
{
    static const char *json =
        "{\"odata.metadata\":\"http://127.0.0.1:10002/devstoreaccount1/$metadata#orders/@Element\","
        "\"odata.etag\":\"W/\\\"datetime'2024-06-03T10%3A00%3A00.1234567Z'\\\"\",\"PartitionKey\":"
        "\"p1\",\"RowKey\":\"r1\"}";
    const char *etag = "W/\"datetime'2024-06-03T10%3A00%3A00.1234567Z'\"";
    char *expect = arena_sprintf(
        A,
        "--batchresponse_11111111-2222-4333-8444-555555555555\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 200 OK\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-cache\r\n"
        "DataServiceVersion: 3.0;\r\n"
        "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
        "ETag: %s\r\n"
        "\r\n"
        "%s\r\n"
        "--batchresponse_11111111-2222-4333-8444-555555555555--\r\n",
        etag, json);
    struct http_header h[] = {
        H("X-Content-Type-Options", "nosniff"), H("Cache-Control", "no-cache"),
        H("DataServiceVersion", "3.0;"),
        H("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"),
        H("ETag", etag)};
    struct multipart_part part = {200, NULL, NULL, h, 5, json, strlen(json)};
    struct buf out;
    buf_init(&out);
    multipart_write_query(&out, "11111111-2222-4333-8444-555555555555", &part);
    TEST_EQ_STR(out.data, expect, "single-query batch response, byte for byte");
    buf_free(&out);

    /* a 404 query answer with a Content-ID echo */
    struct multipart_part nf = {404, NULL, "5", h, 2, "{}", 2};
    buf_init(&out);
    multipart_write_query(&out, "g", &nf);
    TEST_EQ_STR(out.data,
                "--batchresponse_g\r\nContent-Type: application/http\r\n"
                "Content-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 404 Not Found\r\n"
                "Content-ID: 5\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n"
                "\r\n{}\r\n--batchresponse_g--\r\n",
                "404 query part with Content-ID");
    buf_free(&out);
}

static void test_write_misc(void)
{
    char g[37];
    unsigned char zero[16] = {0}, ff[16];
    memset(ff, 0xff, sizeof ff);
    multipart_guid(g, zero);
    TEST_EQ_STR(g, "00000000-0000-4000-8000-000000000000", "guid of zeros is v4");
    multipart_guid(g, ff);
    TEST_EQ_STR(g, "ffffffff-ffff-4fff-bfff-ffffffffffff", "guid of ones is v4");
    unsigned char seq[16];
    for (int i = 0; i < 16; i++)
        seq[i] = (unsigned char)(i * 17);
    multipart_guid(g, seq);
    TEST_EQ_STR(g, "00112233-4455-4677-8899-aabbccddeeff", "guid byte order");

    /* CR/LF in a header value or Content-ID cannot inject lines */
    struct http_header h[] = {H("X-A", "a\r\nX-Evil: 1")};
    struct multipart_part p = {400, "Bad\nRequest", "1\r\n2", h, 1, NULL, 0};
    struct buf out;
    buf_init(&out);
    multipart_write_changeset(&out, "b", "c", &p, 1);
    TEST_EQ_STR(out.data,
                "--batchresponse_b\r\nContent-Type: multipart/mixed; boundary=changesetresponse_c\r\n"
                "\r\n--changesetresponse_c\r\nContent-Type: application/http\r\n"
                "Content-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 400 Bad Request\r\n"
                "Content-ID: 1  2\r\nX-A: a  X-Evil: 1\r\n\r\n\r\n"
                "--changesetresponse_c--\r\n--batchresponse_b--\r\n",
                "control bytes in headers become spaces");
    buf_free(&out);

    /* the serialiser's output is a well-formed multipart: our parser finds
     * the boundary and rejects it only because parts hold responses */
    struct multipart_batch b;
    struct multipart_part ok = {204, NULL, NULL, NULL, 0, NULL, 0};
    buf_init(&out);
    multipart_write_changeset(&out, "b", "c", &ok, 1);
    const char *why = NULL;
    int rc = multipart_parse(A, "multipart/mixed; boundary=batchresponse_b", out.data, out.len, &b,
                             &why);
    TEST_CHECK(rc == MULTIPART_ERR_MALFORMED && why &&
                   strcmp(why, "bad method") == 0,
               "response envelope splits cleanly (fails only at the status line, as a bad method)");
    buf_free(&out);
}

int main(void)
{
    A = arena_new(0);
    test_examples();
    test_tolerances();
    test_urls();
    test_legacy_rootless();
    test_bodies();
    test_delimiter_offsets();
    test_repeated_heads();
    test_malformed();
    test_limits();
    test_truncation();
    test_to_request();
    test_write_success();
    test_write_control_bytes();
    test_ctl_span();
    test_write_failure();
    test_write_query();
    test_write_misc();
    arena_free(A);
    return test_done();
}
