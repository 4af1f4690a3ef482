/* test_conn_deferred.c - the deferred-answer contract of server/handler.h,
 * over real sockets: a server (the wing with the echo handler,
 * tests/unit/echo_handler.h, which answers after a timer when asked to)
 * runs in a forked child, with idle, header and request timeouts far
 * shorter than the answers take. Checks: pipelined requests wait behind a
 * pending one and are answered in order; other connections are served
 * while one waits; a client that disconnects (or whose earlier reply
 * cannot be written) keeps its connection until done arrives, then it is
 * freed; several answers completed in one loop turn share one group
 * commit, which holds (or, when it fails, drops) them; a graceful stop
 * waits for a pending answer. Under the sanitizer build a connection
 * freed too early is a use-after-free in the handler's completion. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "server/config.h"
#include "tests/unit/tap.h"
#include "tests/unit/wing_harness.h"

/* The answers are slower than every timeout of the server. */
#define IDLE_MS 300
#define DEFER_MS 900

/* The echo handler's counters (GET /stats) through a fresh connection. */
struct stats {
    long pending, done, open;
};

static struct stats get_stats(int port)
{
    struct stats s = {-1, -1, -1};
    struct reply r = one_shot(port, "GET /stats HTTP/1.1\r\nHost: h\r\n\r\n");
    if (r.status == 200 && r.body)
        sscanf(r.body, "pending=%ld done=%ld open=%ld", &s.pending, &s.done, &s.open);
    reply_free(&r);
    return s;
}

static long get_syncs(int port)
{
    struct reply r = one_shot(port, "GET /syncs HTTP/1.1\r\nHost: h\r\n\r\n");
    long n = r.status == 200 && r.body ? atol(r.body) : -1;
    reply_free(&r);
    return n;
}

/* The value of "name=" in an echo body, or -1. */
static long echo_field(const struct reply *r, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, "\n%s=", name);
    const char *p = r->body ? strstr(r->body, key) : NULL;
    return p ? atol(p + strlen(key)) : -1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls /stats until the open connections (the poller's own included) drop
 * to want, for at most 3 s. Returns the last count. */
static long wait_open(int port, long want)
{
    long open = -1;
    for (int i = 0; i < 60; i++) {
        open = get_stats(port).open;
        if (open == want)
            break;
        sleep_ms(50);
    }
    return open;
}

/* One deferred answer, slower than the idle and request timeouts. */
static void test_simple(int port)
{
    struct client c;
    struct reply r;
    dial(&c, port);
    uint64_t t0 = clock_mono_us();
    send_str(&c, "PUT /slow?a=1 HTTP/1.1\r\nHost: h\r\nx-defer-ms: 900\r\nContent-Length: 3\r\n\r\nabc");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.status == 200, "deferred: answered");
    uint64_t took = clock_mono_us() - t0;
    TEST_CHECK(took >= (DEFER_MS - 50) * 1000u, "deferred: answered when done was called, not before");
    TEST_CHECK(r.body && strstr(r.body, "path=/slow\nquery=a=1\n") && strstr(r.body, "body[3]=abc"),
               "deferred: the request was intact when the handler completed");
    reply_free(&r);
    send_str(&c, "GET /after HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "path=/after"),
               "deferred: the connection stays usable (no timer closed it meanwhile)");
    reply_free(&r);
    hangup(&c);
}

/* Pipelined: A (later), B (at once), C (later) in one write. */
static void test_pipelined(int port)
{
    struct client c;
    struct reply a, b, cc;
    dial(&c, port);
    send_str(&c, "GET /A HTTP/1.1\r\nHost: h\r\nx-defer-ms: 400\r\n\r\n"
                 "GET /B HTTP/1.1\r\nHost: h\r\n\r\n"
                 "GET /C HTTP/1.1\r\nHost: h\r\nx-defer-ms: 100\r\n\r\n");
    int ok = read_reply(&c, &a, 0) == 0 && read_reply(&c, &b, 0) == 0 &&
             read_reply(&c, &cc, 0) == 0;
    TEST_CHECK(ok, "pipelined: three answers");
    if (ok) {
        TEST_CHECK(strstr(a.body, "path=/A") && strstr(b.body, "path=/B") &&
                       strstr(cc.body, "path=/C"),
                   "pipelined: answers in request order");
        TEST_CHECK(echo_field(&b, "done") > echo_field(&a, "done"),
                   "pipelined: B was parsed only after A's answer was done");
        TEST_CHECK(echo_field(&cc, "seen") == echo_field(&b, "seen") + 1,
                   "pipelined: C handed over right after B");
        reply_free(&a);
        reply_free(&b);
        reply_free(&cc);
    }
    hangup(&c);
}

/* While one connection waits, others are served at once. */
static void test_concurrent(int port)
{
    struct client slow;
    struct reply r;
    dial(&slow, port);
    send_str(&slow, "GET /slow HTTP/1.1\r\nHost: h\r\nx-defer-ms: 900\r\n\r\n");
    sleep_ms(100);
    uint64_t t0 = clock_mono_us();
    int served = 0;
    for (int i = 0; i < 5; i++) {
        struct reply q = one_shot(port, "GET /quick HTTP/1.1\r\nHost: h\r\n\r\n");
        served += q.status == 200;
        reply_free(&q);
    }
    struct stats s = get_stats(port);
    TEST_EQ_INT(served, 5, "concurrent: five other requests answered");
    TEST_CHECK(clock_mono_us() - t0 < 500000u, "concurrent: ... without waiting for the slow one");
    TEST_EQ_INT(s.pending, 1, "concurrent: the slow answer still pending meanwhile");
    TEST_CHECK(read_reply(&slow, &r, 0) == 0 && r.status == 200 && strstr(r.body, "path=/slow"),
               "concurrent: the slow answer arrives afterwards");
    reply_free(&r);
    hangup(&slow);
}

/* The client goes away while its answer is pending: the connection stays
 * until done, then is freed. */
static void test_disconnect(int port)
{
    long base = wait_open(port, 1);
    TEST_EQ_INT(base, 1, "disconnect: only the poller's connection open at the start");
    struct client c;
    dial(&c, port);
    send_str(&c, "GET /gone HTTP/1.1\r\nHost: h\r\nx-defer-ms: 600\r\n\r\n");
    sleep_ms(100);
    hangup(&c);
    sleep_ms(100);
    struct stats s = get_stats(port);
    TEST_EQ_INT(s.pending, 1, "disconnect: the answer is still being made");
    TEST_EQ_INT(s.open, 2, "disconnect: its connection is kept until done");
    TEST_EQ_INT(wait_open(port, 1), 1, "disconnect: freed after done");

    /* The earlier reply cannot be written (the client resets the
     * connection with 16 MB unsent): the connection breaks while the next
     * answer is pending, and is freed only when it is done. */
    dial(&c, port);
    int small = 4096;
    setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    send_str(&c, "GET /big HTTP/1.1\r\nHost: h\r\nx-big: 16000000\r\n\r\n"
                 "GET /next HTTP/1.1\r\nHost: h\r\nx-defer-ms: 700\r\n\r\n");
    sleep_ms(150);
    struct linger lg = {1, 0};
    setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);  /* close sends an RST */
    hangup(&c);
    sleep_ms(150);
    s = get_stats(port);
    TEST_EQ_INT(s.pending, 1, "broken: the pending answer is still being made");
    TEST_EQ_INT(s.open, 2, "broken: the broken connection is kept until done");
    TEST_EQ_INT(wait_open(port, 1), 1, "broken: freed after done, its answer dropped");
    struct reply r = one_shot(port, "GET /alive HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_EQ_INT(r.status, 200, "broken: server still serving");
    reply_free(&r);
}

/* Three held answers completed in one loop turn, each a write: one group
 * commit for the three, and none of them sent before it. */
static void test_one_turn(int port)
{
    long syncs = get_syncs(port);
    struct client c[3];
    struct reply r;
    for (int i = 0; i < 3; i++) {
        dial(&c[i], port);
        char req[128];
        snprintf(req, sizeof req, "PUT /w%d HTTP/1.1\r\nHost: h\r\nx-defer-hold: 1\r\nx-dirty: 1\r\n\r\n", i);
        send_str(&c[i], req);
    }
    sleep_ms(100);
    TEST_EQ_INT(get_stats(port).pending, 3, "one turn: three answers held");
    r = one_shot(port, "POST /release HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    TEST_EQ_INT(r.status, 200, "one turn: release requested");
    reply_free(&r);
    int got = 0;
    for (int i = 0; i < 3; i++) {
        char want[16];
        snprintf(want, sizeof want, "path=/w%d", i);
        if (read_reply(&c[i], &r, 0) == 0 && r.status == 200 && strstr(r.body, want))
            got++;
        reply_free(&r);
        hangup(&c[i]);
    }
    TEST_EQ_INT(got, 3, "one turn: every connection got its own answer");
    TEST_EQ_INT(get_syncs(port) - syncs, 1, "one turn: one sync for the three writes completed together");

    /* A deferred write whose sync fails: its answer is never sent. */
    struct client f;
    dial(&f, port);
    send_str(&f, "PUT /f HTTP/1.1\r\nHost: h\r\nx-defer-ms: 100\r\nx-sync-fail: 1\r\n\r\n"
                 "GET /after HTTP/1.1\r\nHost: h\r\n\r\n");
    TEST_CHECK(at_eof(&f), "group commit failure at completion: closed without any answer");
    hangup(&f);
    TEST_EQ_INT(get_syncs(port) - syncs, 1, "group commit failure at completion: not counted");
}

/* SIGTERM while an answer is pending: it is still sent, then the server
 * exits. */
static void test_stop(struct child *ch)
{
    struct client c;
    struct reply r;
    dial(&c, ch->port);
    send_str(&c, "GET /last HTTP/1.1\r\nHost: h\r\nx-defer-ms: 500\r\n\r\n");
    sleep_ms(100);
    kill(ch->pid, SIGTERM);
    TEST_CHECK(read_reply(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "path=/last") &&
                   has_header(&r, "Connection: close"),
               "stop: the pending answer is sent, with Connection: close");
    reply_free(&r);
    TEST_CHECK(at_eof(&c), "stop: then the connection closes");
    hangup(&c);
    int st;
    TEST_CHECK(waitpid(ch->pid, &st, 0) == ch->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "stop: the server exits 0");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct config cfg;
    struct child ch;
    config_defaults(&cfg);
    cfg.port = 0;
    cfg.idle_timeout_ms = IDLE_MS;
    cfg.header_timeout_ms = IDLE_MS;
    cfg.request_timeout_ms = IDLE_MS;
    cfg.max_conn_output_bytes = 64 << 20;  /* a big reply does not hold the next request */
    if (start_server(&cfg, &ch) != 0) {
        TEST_CHECK(0, "server started");
        return test_done();
    }
    test_simple(ch.port);
    test_pipelined(ch.port);
    test_concurrent(ch.port);
    test_disconnect(ch.port);
    test_one_turn(ch.port);
    test_stop(&ch);
    return test_done();
}
