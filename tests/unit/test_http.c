/* test_http.c - the HTTP layer end to end: a real server (server/server.c,
 * server/conn.c, llhttp) with the echoing test handler, driven over raw
 * sockets from this process while the server runs in a forked child. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "server/config.h"
#include "core/log.h"
#include "server/server.h"
#include "server/tls.h"
#include "tests/unit/echo_handler.h"
#include "tests/unit/tap.h"
#include "tests/unit/wing_harness.h"

/* ---- tests ---- */

static void test_basic(int port)
{
    struct client c;
    struct reply r;
    TEST_EQ_INT(dial(&c, port), 0, "connect");
    send_str(&c, "GET /devstoreaccount1/Tables?$top=1&x=y HTTP/1.1\r\nHost: h\r\n"
                 "X-Test:   spaced value  \r\nEmpty:\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "basic: reply");
    TEST_EQ_INT(r.status, 200, "basic: status 200");
    TEST_CHECK(strncmp(r.head, "HTTP/1.1 200 OK\r\n", 17) == 0, "basic: status line");
    TEST_CHECK(strstr(r.body, "method=GET(1)\npath=/devstoreaccount1/Tables\nquery=$top=1&x=y\n"),
               "basic: method, path, query");
    TEST_CHECK(strstr(r.body, "h:X-Test=spaced value|"), "basic: header value trimmed");
    TEST_CHECK(strstr(r.body, "h:Empty=|"), "basic: empty header value");
    TEST_CHECK(strstr(r.body, "h:Host=h|"), "basic: Host header");
    TEST_CHECK(strstr(r.body, "nobody"), "basic: no body -> NULL");
    char cl[64];
    snprintf(cl, sizeof cl, "Content-Length: %zu", r.body_len);
    TEST_CHECK(has_header(&r, cl), "basic: Content-Length matches the body");
    TEST_CHECK(!strcasestr(r.head, "Connection:"), "basic: keep-alive needs no Connection header");
    TEST_CHECK(has_header(&r, "x-ms-request-id: echo-1") || strstr(r.head, "x-ms-request-id: echo-"),
               "basic: service headers written");
    TEST_CHECK(!strcasestr(r.head, "\r\nDate:"), "basic: core adds no Date header");
    reply_free(&r);

    /* keep-alive: a second request on the same connection */
    send_str(&c, "GET /second HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "keep-alive: second reply");
    TEST_CHECK(strstr(r.body, "path=/second\nquery=\n"), "keep-alive: path, empty query");
    reply_free(&r);
    hangup(&c);
}

static void test_header_hygiene(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "GET /evil HTTP/1.1\r\nHost: h\r\nx-evil: 1\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "hygiene: reply");
    TEST_CHECK(!strstr(r.head, "999") && !strcasestr(r.head, "upgrade"),
               "hygiene: service's Content-Length/Connection dropped");
    TEST_CHECK(!strstr(r.head, "Injected") && !strstr(r.head, "X-Split"),
               "hygiene: header with CR LF dropped");
    TEST_CHECK(has_header(&r, "X-Fine: kept"), "hygiene: other headers kept");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/next"),
               "hygiene: framing intact for the next reply");
    reply_free(&r);
    hangup(&c);
}

static void test_methods(int port)
{
    static const struct {
        const char *m;
        const char *want;
    } cases[] = {
        {"MERGE", "method=MERGE(6)"}, {"PATCH", "method=PATCH(7)"},
        {"OPTIONS", "method=OPTIONS(8)"}, {"PUT", "method=PUT(4)"},
        {"DELETE", "method=DELETE(5)"}, {"PROPFIND", "method=PROPFIND(0)"},
    };
    struct client c;
    dial(&c, port);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char req[128], what[64];
        struct reply r;
        snprintf(req, sizeof req, "%s /m HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
                 cases[i].m);
        send_str(&c, req);
        snprintf(what, sizeof what, "method %s mapped", cases[i].m);
        TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, cases[i].want), what);
        reply_free(&r);
    }
    hangup(&c);
}

static void test_pipelining(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "GET /p1 HTTP/1.1\r\nHost: h\r\n\r\n"
                 "POST /p2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
                 "DELETE /p3?q=1 HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/p1\n"), "pipelining: first");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/p2\n") &&
                   strstr(r.body, "body[3]=abc\n"),
               "pipelining: second with its body");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/p3\nquery=q=1\n"),
               "pipelining: third");
    reply_free(&r);

    /* many requests in one write, with large replies so that output backs
     * up and parsing pauses and resumes */
    char *many = malloc(200 * 80);
    size_t n = 0;
    for (int i = 0; i < 200; i++)
        n += (size_t)sprintf(many + n, "GET /n%d HTTP/1.1\r\nHost: h\r\n%s\r\n", i,
                             i % 10 == 0 ? "x-big: 300000\r\n" : "");
    send_bytes(&c, many, n);
    free(many);
    int in_order = 1;
    for (int i = 0; i < 200; i++) {
        char want[32];
        snprintf(want, sizeof want, "path=/n%d\n", i);
        if (read_reply(&c, &r, 0) < 0) {
            in_order = 0;
            break;
        }
        if (i % 10 == 0 ? r.body_len != 300000 : !strstr(r.body, want))
            in_order = 0;
        reply_free(&r);
    }
    TEST_CHECK(in_order, "pipelining: 200 requests answered in order");
    hangup(&c);
}

static void test_upgrade_ignored(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                 "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"
                 "GET /after-up HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "path=/up\n"),
               "upgrade: request answered in HTTP/1.1");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/after-up\n"),
               "upgrade: connection stays HTTP/1.1");
    reply_free(&r);
    hangup(&c);
}

static void test_split_head(int port)
{
    const char *req = "PUT /split?a=b HTTP/1.1\r\nHost: example\r\nX-Long-Name: value-1\r\n"
                      "Content-Length: 4\r\n\r\nwxyz";
    struct client c;
    struct reply r;
    dial(&c, port);
    for (size_t i = 0; req[i]; i++) {
        send_bytes(&c, req + i, 1);
        if (i % 7 == 0)
            usleep(1000);
    }
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "split head: reply");
    TEST_CHECK(strstr(r.body, "path=/split\nquery=a=b\n") && strstr(r.body, "h:X-Long-Name=value-1|") &&
                   strstr(r.body, "h:Host=example|") && strstr(r.body, "body[4]=wxyz"),
               "split head: header pieces accumulated");
    reply_free(&r);
    hangup(&c);
}

static void test_chunked(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "POST /chunky HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
    usleep(2000);
    send_str(&c, "lo\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "chunked: reply");
    TEST_CHECK(strstr(r.body, "body[11]=hello world\n"), "chunked: body reassembled");
    TEST_CHECK(!strstr(r.body, "X-Trailer"), "chunked: trailers not added as headers");
    reply_free(&r);
    /* the connection is still usable */
    send_str(&c, "GET /after-chunked HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/after-chunked"),
               "chunked: keep-alive afterwards");
    reply_free(&r);
    hangup(&c);
}

static void test_continue(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "PUT /cont HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    const char *want = "HTTP/1.1 100 Continue\r\n\r\n";
    while (c.len < strlen(want))
        if (fill(&c) <= 0)
            break;
    TEST_CHECK(c.len >= strlen(want) && memcmp(c.buf, want, strlen(want)) == 0,
               "100-continue: interim reply before the body");
    if (c.len >= strlen(want))
        consume(&c, strlen(want));
    send_str(&c, "hello");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "100-continue: final reply");
    TEST_CHECK(r.status == 200 && strstr(r.body, "body[5]=hello"), "100-continue: body received");
    reply_free(&r);
    hangup(&c);

    /* too large with Expect: the final error comes at once, no 100 */
    dial(&c, port);
    send_str(&c, "PUT /cont HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                 "Content-Length: 999999999\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "100-continue too large: reply");
    TEST_EQ_INT(r.status, 413, "100-continue too large: 413, not 100");
    reply_free(&r);
    hangup(&c);
}

static void test_head(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "HEAD /h HTTP/1.1\r\nHost: h\r\n\r\nGET /after-head HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 1), 0, "HEAD: reply");
    char *cl = strcasestr(r.head, "\r\nContent-Length:");
    TEST_CHECK(cl && strtoul(cl + 17, NULL, 10) > 0, "HEAD: Content-Length of the would-be body");
    reply_free(&r);
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "HEAD: next reply");
    TEST_CHECK(r.status == 200 && strncmp(r.body, "method=GET(1)\npath=/after-head", 30) == 0,
               "HEAD: no body bytes were sent");
    reply_free(&r);
    hangup(&c);
}

static void test_http10(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "GET /old HTTP/1.0\r\nHost: h\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "HTTP/1.0: reply");
    TEST_CHECK(strstr(r.body, "path=/old"), "HTTP/1.0: served");
    TEST_CHECK(has_header(&r, "Connection: close"), "HTTP/1.0: Connection: close");
    TEST_CHECK(at_eof(&c), "HTTP/1.0: closed after the reply");
    reply_free(&r);
    hangup(&c);

    dial(&c, port);
    send_str(&c, "GET /old1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "HTTP/1.0 keep-alive: reply");
    TEST_CHECK(has_header(&r, "Connection: keep-alive"), "HTTP/1.0 keep-alive: announced");
    reply_free(&r);
    send_str(&c, "GET /old2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/old2"),
               "HTTP/1.0 keep-alive: second request");
    reply_free(&r);
    hangup(&c);

    dial(&c, port);
    send_str(&c, "GET /bye HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "Connection: close: reply");
    TEST_CHECK(has_header(&r, "Connection: close"), "Connection: close: echoed");
    TEST_CHECK(at_eof(&c), "Connection: close: closed, later request ignored");
    reply_free(&r);
    hangup(&c);

    dial(&c, port);
    send_str(&c, "GET /svc-close HTTP/1.1\r\nHost: h\r\nx-close: 1\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "resp->close: reply");
    TEST_CHECK(has_header(&r, "Connection: close") && at_eof(&c), "resp->close: closed");
    reply_free(&r);
    hangup(&c);
}

static void test_limits(int port, size_t max_body)
{
    struct client c;
    struct reply r;

    /* header block over 64 KiB */
    size_t big = 70 * 1024;
    char *req = malloc(big + 128);
    int n = sprintf(req, "GET /big HTTP/1.1\r\nHost: h\r\nX-Big: ");
    memset(req + n, 'a', big);
    strcpy(req + n + big, "\r\n\r\n");
    dial(&c, port);
    send_str(&c, req);
    free(req);
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "oversized head: reply");
    TEST_EQ_INT(r.status, 431, "oversized head: 431");
    TEST_CHECK(has_header(&r, "Connection: close"), "oversized head: Connection: close");
    TEST_CHECK(at_eof(&c), "oversized head: closed");
    reply_free(&r);
    hangup(&c);

    /* announced body too large: answered before any body byte is sent */
    dial(&c, port);
    send_str(&c, "PUT /huge HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "oversized Content-Length: reply");
    TEST_EQ_INT(r.status, 413, "oversized Content-Length: 413");
    TEST_CHECK(strstr(r.body, "RequestBodyTooLarge"), "oversized Content-Length: RequestBodyTooLarge");
    TEST_CHECK(at_eof(&c), "oversized Content-Length: closed without reading the body");
    reply_free(&r);
    hangup(&c);

    /* exactly at the limit is fine */
    char *body = malloc(max_body + 1);
    memset(body, 'b', max_body);
    body[max_body] = '\0';
    char head[128];
    snprintf(head, sizeof head, "POST /limit HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n",
             max_body);
    dial(&c, port);
    send_str(&c, head);
    send_str(&c, body);
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "body at the limit: reply");
    snprintf(head, sizeof head, "body[%zu]=bbbb", max_body);
    TEST_CHECK(r.status == 200 && strstr(r.body, head), "body at the limit: accepted");
    reply_free(&r);
    hangup(&c);

    /* chunked body growing past the limit */
    dial(&c, port);
    send_str(&c, "POST /chunks HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
    char chunk[64];
    size_t piece = 16384, sent = 0;
    while (sent <= max_body + piece) {
        snprintf(chunk, sizeof chunk, "%zx\r\n", piece);
        if (send_str(&c, chunk) < 0 || send_bytes(&c, body, piece) < 0 || send_str(&c, "\r\n") < 0)
            break;
        sent += piece;
    }
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "oversized chunked body: reply");
    TEST_EQ_INT(r.status, 413, "oversized chunked body: 413");
    TEST_CHECK(strstr(r.body, "RequestBodyTooLarge"), "oversized chunked body: RequestBodyTooLarge");
    reply_free(&r);
    hangup(&c);
    free(body);

    /* malformed requests */
    r = one_shot(port, "GARBAGE\r\n\r\n");
    TEST_EQ_INT(r.status, 400, "malformed request line: 400");
    TEST_CHECK(r.body && strstr(r.body, "InvalidInput"), "malformed request line: InvalidInput");
    reply_free(&r);
    r = one_shot(port, "GET / HTTP/1.1\r\nBad Header\r\n\r\n");
    TEST_EQ_INT(r.status, 400, "malformed header: 400");
    reply_free(&r);
    r = one_shot(port, "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n");
    TEST_EQ_INT(r.status, 400, "space inside a header name: 400");
    reply_free(&r);
    r = one_shot(port, "GET / HTTP/1.1\r\nX-Test : v\r\n\r\n");
    TEST_EQ_INT(r.status, 400, "space before the colon: 400");
    reply_free(&r);
    r = one_shot(port, "GET / HTTP/1.1\r\nX-Ok_1.~!#: v\r\n\r\n");
    TEST_EQ_INT(r.status, 200, "token punctuation in a header name accepted");
    reply_free(&r);
    dial(&c, port);
    send_str(&c, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.status == 400 && at_eof(&c),
               "malformed chunk size: 400 and close");
    reply_free(&r);
    hangup(&c);
}

static void test_group_commit(int port)
{
    struct client c;
    struct reply r;
    r = one_shot(port, "GET /syncs HTTP/1.1\r\nHost: h\r\n\r\n");
    int base = atoi(r.body ? r.body : "-1");
    TEST_EQ_INT(base, 0, "group commit: no sync while nothing was written");
    reply_free(&r);

    dial(&c, port);
    send_str(&c, "PUT /w1 HTTP/1.1\r\nHost: h\r\nx-dirty: 1\r\n\r\n"
                 "PUT /w2 HTTP/1.1\r\nHost: h\r\nx-dirty: 1\r\n\r\n"
                 "GET /r HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/w1"), "group commit: first reply");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/w2"), "group commit: second reply");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/r"), "group commit: read after writes");
    reply_free(&r);
    send_str(&c, "GET /syncs HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0, "group commit: sync count reply");
    TEST_EQ_INT(atoi(r.body), 1, "group commit: one sync for the writes of one turn");
    reply_free(&r);
    hangup(&c);

    /* the sync fails: held replies are never sent */
    dial(&c, port);
    send_str(&c, "PUT /f HTTP/1.1\r\nHost: h\r\nx-sync-fail: 1\r\n\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(at_eof(&c), "group commit failure: connection closed without any reply");
    hangup(&c);
    r = one_shot(port, "GET /syncs HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_EQ_INT(r.status, 200, "group commit failure: server still serving");
    TEST_EQ_INT(atoi(r.body ? r.body : "-1"), 1, "group commit failure: failed sync not counted");
    reply_free(&r);
}

static void test_half_close(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "GET /half1 HTTP/1.1\r\nHost: h\r\n\r\nGET /half2 HTTP/1.1\r\nHost: h\r\nx-big: 2000000\r\n\r\n");
    shutdown(c.fd, SHUT_WR);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/half1"),
               "half-close: first reply after the client shut its side");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.body_len == 2000000,
               "half-close: large second reply still delivered");
    reply_free(&r);
    TEST_CHECK(at_eof(&c), "half-close: server closes afterwards");
    hangup(&c);
}

static void test_big_reply(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    send_str(&c, "GET /big HTTP/1.1\r\nHost: h\r\nx-big: 3000000\r\n\r\n");
    TEST_EQ_INT(read_reply(&c, &r, 0), 0, "big reply: received");
    int ok = r.body_len == 3000000;
    for (size_t i = 0; ok && i < r.body_len; i++)
        ok = r.body[i] == 'x';
    TEST_CHECK(ok, "big reply: 3 MB body intact");
    reply_free(&r);
    hangup(&c);
}

static void test_timeouts(void)
{
    struct config cfg;
    struct child ch;
    config_defaults(&cfg);
    cfg.port = 0;
    cfg.idle_timeout_ms = 600;
    cfg.header_timeout_ms = 300;
    cfg.max_connections = 3;
    if (start_server(&cfg, &ch) != 0) {
        TEST_CHECK(0, "timeouts: server started");
        return;
    }
    struct client c, d, e, f;
    struct reply r;

    dial(&c, ch.port);
    TEST_CHECK(at_eof(&c), "idle timeout: silent connection closed");
    hangup(&c);

    dial(&c, ch.port);
    send_str(&c, "GET /slow HTTP/1.1\r\nHost: h\r\n");
    TEST_CHECK(at_eof(&c), "header timeout: incomplete head closed");
    hangup(&c);

    dial(&c, ch.port);
    send_str(&c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.status == 200, "idle timeout: request served");
    TEST_CHECK(at_eof(&c), "idle timeout: keep-alive connection closed when idle");
    reply_free(&r);
    hangup(&c);

    /* connection cap: a fourth concurrent connection is served, and the
     * connection idle longest (the first) is closed to make room */
    dial(&c, ch.port);
    dial(&d, ch.port);
    dial(&e, ch.port);
    send_str(&c, "GET /1 HTTP/1.1\r\n\r\n");
    send_str(&d, "GET /2 HTTP/1.1\r\n\r\n");
    send_str(&e, "GET /3 HTTP/1.1\r\n\r\n");
    int served = 0;
    if (read_reply(&c, &r, 0) == 0)
        served++;
    reply_free(&r);
    if (read_reply(&d, &r, 0) == 0)
        served++;
    reply_free(&r);
    if (read_reply(&e, &r, 0) == 0)
        served++;
    reply_free(&r);
    TEST_EQ_INT(served, 3, "connection cap: connections under the cap served");
    dial(&f, ch.port);
    send_str(&f, "GET /4 HTTP/1.1\r\n\r\n");
    TEST_CHECK(read_reply(&f, &r, 0) == 0 && r.status == 200,
               "connection cap: a newcomer at the cap is served");
    reply_free(&r);
    TEST_CHECK(at_eof(&c), "connection cap: the connection idle longest was closed");
    send_str(&d, "GET /5 HTTP/1.1\r\n\r\n");
    TEST_CHECK(read_reply(&d, &r, 0) == 0 && r.status == 200,
               "connection cap: a more recent connection stays open");
    reply_free(&r);
    hangup(&c);
    hangup(&d);
    hangup(&e);
    hangup(&f);
    TEST_EQ_INT(stop_server(&ch), 0, "timeouts server: clean exit on SIGTERM");
}

/* ---- TLS ---- */

/* Writes a fresh self-signed EC certificate and key as PEM files. */
static int make_cert(const char *cert_path, const char *key_path)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!key || !x)
        return -1;
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_sign(x, key, EVP_sha256());
    FILE *f = fopen(cert_path, "w");
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key_path, "w");
    PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(key);
    return 0;
}

static void test_tls(void)
{
    char dir[] = "/tmp/tabled-tls-XXXXXX";
    char cert[128], key[128], bad[128], err[512];
    if (!mkdtemp(dir)) {
        TEST_CHECK(0, "tls: temp dir");
        return;
    }
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(bad, sizeof bad, "%s/bad.pem", dir);
    TEST_EQ_INT(make_cert(cert, key), 0, "tls: test certificate generated");
    FILE *f = fopen(bad, "w");
    fputs("not a certificate\n", f);
    fclose(f);

    SSL_CTX *ctx = tls_ctx_new(bad, key, err, sizeof err);
    TEST_CHECK(!ctx && strstr(err, "bad certificate") && strstr(err, bad),
               "tls: garbage certificate gives a clear error");
    ctx = tls_ctx_new(cert, bad, err, sizeof err);
    TEST_CHECK(!ctx && strstr(err, "key"), "tls: garbage key gives a clear error");
    ctx = tls_ctx_new("/nonexistent/cert.pem", key, err, sizeof err);
    TEST_CHECK(!ctx && strstr(err, "/nonexistent/cert.pem"), "tls: missing file named");

    struct config cfg;
    struct child ch;
    config_defaults(&cfg);
    cfg.port = 0;
    cfg.tls_port = 0;
    strcpy(cfg.tls_cert, bad);
    strcpy(cfg.tls_key, key);
    cfg.tls_port = 1;  /* any non-zero value enables TLS; the bind must fail first on the cert */
    char e2[512];
    struct echo *echo = echo_new();
    struct req_handler handler = echo_handler(echo);
    struct server *srv = server_new(&cfg, NULL, &handler, e2, sizeof e2);
    echo_free(echo);
    TEST_CHECK(!srv && strstr(e2, "certificate"), "tls: server_new refuses a bad certificate");
    server_free(srv);

    strcpy(cfg.tls_cert, cert);
    cfg.tls_port = 0;
    /* Ask for any free TLS port: bind port 0 via a temporary socket. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, (struct sockaddr *)&sa, sizeof sa);
    getsockname(s, (struct sockaddr *)&sa, &sl);
    cfg.tls_port = ntohs(sa.sin_port);
    close(s);
    if (start_server(&cfg, &ch) != 0) {
        TEST_CHECK(0, "tls: server started");
        return;
    }
    TEST_EQ_INT(ch.tls_port, cfg.tls_port, "tls: HTTPS port reported");

    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    struct client c;
    struct reply r;
    dial(&c, ch.tls_port);
    c.ssl = SSL_new(cctx);
    SSL_set_fd(c.ssl, c.fd);
    TEST_EQ_INT(SSL_connect(c.ssl), 1, "tls: handshake");
    send_str(&c, "GET /secure HTTP/1.1\r\nHost: h\r\n\r\nGET /secure2 HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/secure\n") &&
                   strstr(r.body, "tls=1"),
               "tls: request served with req->tls = 1");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/secure2\n"),
               "tls: pipelined second request");
    reply_free(&r);
    /* a deferred answer (test_conn_deferred covers the contract over plain
     * sockets): the request behind it waits in the TLS input */
    send_str(&c, "GET /later HTTP/1.1\r\nHost: h\r\nx-defer-ms: 200\r\n\r\n"
                 "GET /then HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/later\n"),
               "tls: deferred answer");
    reply_free(&r);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && strstr(r.body, "path=/then\n") &&
                   strstr(r.body, "\ndone=1\n"),
               "tls: the request behind it handled after it was done");
    reply_free(&r);
    hangup(&c);

    /* TLS 1.1 is refused */
    SSL_CTX *old = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(old, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(old, TLS1_1_VERSION);
    SSL_CTX_set_security_level(old, 0);
    dial(&c, ch.tls_port);
    c.ssl = SSL_new(old);
    SSL_set_fd(c.ssl, c.fd);
    TEST_CHECK(SSL_connect(c.ssl) != 1, "tls: TLS 1.1 refused");
    ERR_clear_error();
    hangup(&c);
    SSL_CTX_free(old);

    r = one_shot(ch.port, "GET /plain HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(r.status == 200 && strstr(r.body, "tls=0"), "tls: plain HTTP side by side");
    reply_free(&r);
    SSL_CTX_free(cctx);
    TEST_EQ_INT(stop_server(&ch), 0, "tls server: clean exit");
    unlink(cert);
    unlink(key);
    unlink(bad);
    rmdir(dir);
}

static void test_graceful_stop(void)
{
    struct config cfg;
    struct child ch;
    config_defaults(&cfg);
    cfg.port = 0;
    if (start_server(&cfg, &ch) != 0) {
        TEST_CHECK(0, "stop: server started");
        return;
    }
    struct client idle, busy;
    struct reply r;
    dial(&idle, ch.port);
    dial(&busy, ch.port);
    send_str(&idle, "GET /warm HTTP/1.1\r\nHost: h\r\n\r\n");
    read_reply(&idle, &r, 0);
    reply_free(&r);
    /* a request in flight: head sent, body not yet */
    send_str(&busy, "PUT /inflight HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                    "Content-Length: 4\r\n\r\n");
    TEST_CHECK(read_reply(&busy, &r, 0) == 0 && r.status == 100, "stop: head of in-flight request read");
    reply_free(&r);
    kill(ch.pid, SIGTERM);
    TEST_CHECK(at_eof(&idle), "stop: idle connection closed");
    send_str(&busy, "data");
    TEST_CHECK(read_reply(&busy, &r, 0) == 0 && r.status == 200 && strstr(r.body, "body[4]=data") &&
                   has_header(&r, "Connection: close"),
               "stop: in-flight request finished with Connection: close");
    reply_free(&r);
    int st;
    waitpid(ch.pid, &st, 0);
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "stop: exit status 0");
    hangup(&idle);
    hangup(&busy);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct config cfg;
    struct child ch;
    config_defaults(&cfg);
    cfg.port = 0;
    cfg.max_body_bytes = 100000;
    if (start_server(&cfg, &ch) != 0) {
        TEST_CHECK(0, "server started on port 0");
        return test_done();
    }
    TEST_CHECK(ch.port > 0, "server reports the port the kernel picked");
    test_basic(ch.port);
    test_methods(ch.port);
    test_header_hygiene(ch.port);
    test_pipelining(ch.port);
    test_split_head(ch.port);
    test_upgrade_ignored(ch.port);
    test_chunked(ch.port);
    test_continue(ch.port);
    test_head(ch.port);
    test_http10(ch.port);
    test_group_commit(ch.port);
    test_limits(ch.port, cfg.max_body_bytes);
    test_big_reply(ch.port);
    test_half_close(ch.port);
    TEST_EQ_INT(stop_server(&ch), 0, "server exits 0 on SIGTERM");
    test_timeouts();
    test_tls();
    test_graceful_stop();
    return test_done();
}
