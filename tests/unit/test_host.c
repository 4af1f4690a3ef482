/* test_host.c - store/host.c: the event-loop hooks a backend borrows.
 * Timers fire once, in the order of their delays, and not after
 * timer_cancel; a timer may add or cancel timers from its callback; fd
 * watches report readiness until changed or dropped, also from their own
 * callback. */
#include <event2/event.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "store/host.h"
#include "tests/unit/tap.h"

static const struct backend_host *hk;
static char fired[16];              /* timer names in firing order */
static size_t nfired;
static void *victim;                /* cancelled by timer 'c' */

static void on_timer(void *arg)
{
    char name = *(const char *)arg;
    if (nfired < sizeof fired - 1)
        fired[nfired++] = name;
    if (name == 'c' && victim) {
        hk->timer_cancel(hk->arg, victim);
        victim = NULL;
    }
    if (name == 'a')                /* a timer added from a callback */
        hk->timer_add(hk->arg, 0, on_timer, "n");
}

struct watch_state {
    void *w;
    int calls;
    unsigned last;
    int drop;                       /* fd_unwatch from the callback */
};

static void on_fd(void *arg, unsigned ready)
{
    struct watch_state *s = arg;
    s->calls++;
    s->last = ready;
    if (s->drop) {
        hk->fd_unwatch(hk->arg, s->w);
        s->w = NULL;
    }
}

/* Runs the loop for about ms milliseconds. */
static void spin(struct event_base *b, int ms)
{
    struct timeval tv = {0, ms * 1000};
    event_base_loopexit(b, &tv);
    event_base_dispatch(b);
}

int main(void)
{
    struct event_base *b = event_base_new();
    struct host *h = b ? host_new(b) : NULL;
    TEST_CHECK(h != NULL, "host_new");
    if (!h)
        return test_done();
    hk = host_hooks(h);
    TEST_CHECK(hk->arg && hk->timer_add && hk->timer_cancel && hk->fd_watch && hk->fd_modify &&
                   hk->fd_unwatch,
               "host_hooks fills every hook");

    /* timers: order by delay, cancel before firing, cancel from a callback */
    void *t1 = hk->timer_add(hk->arg, 30, on_timer, "d");
    void *t2 = hk->timer_add(hk->arg, 1, on_timer, "a");
    void *t3 = hk->timer_add(hk->arg, 10, on_timer, "c");
    void *t4 = hk->timer_add(hk->arg, 5, on_timer, "x");
    victim = hk->timer_add(hk->arg, 20, on_timer, "v");
    TEST_CHECK(t1 && t2 && t3 && t4 && victim, "timer_add returns handles");
    hk->timer_cancel(hk->arg, t4);
    spin(b, 60);
    fired[nfired] = 0;
    TEST_EQ_STR(fired, "ancd", "timers fire once each, by delay; cancelled ones never "
                "(also when cancelled from another timer's callback)");

    /* fd watches on a pipe */
    int p[2];
    TEST_CHECK(pipe(p) == 0, "pipe");
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    struct watch_state r = {0}, wr = {0};
    r.w = hk->fd_watch(hk->arg, p[0], BACKEND_FD_READ, on_fd, &r);
    TEST_CHECK(r.w != NULL, "fd_watch");
    spin(b, 5);
    TEST_EQ_INT(r.calls, 0, "an idle pipe is not readable");
    TEST_CHECK(write(p[1], "x", 1) == 1, "write a byte");
    spin(b, 5);
    TEST_CHECK(r.calls >= 1 && r.last == BACKEND_FD_READ, "the watch reports BACKEND_FD_READ");
    int before = r.calls;
    spin(b, 5);
    TEST_CHECK(r.calls > before, "it stays armed (persistent) while the byte is unread");
    hk->fd_modify(hk->arg, r.w, 0);
    before = r.calls;
    spin(b, 5);
    TEST_EQ_INT(r.calls, before, "fd_modify(0) makes it wait for nothing");
    hk->fd_modify(hk->arg, r.w, BACKEND_FD_READ);
    spin(b, 5);
    TEST_CHECK(r.calls > before, "fd_modify(READ) arms it again");
    r.drop = 1;
    before = r.calls;
    spin(b, 5);
    TEST_CHECK(r.calls == before + 1 && r.w == NULL,
               "fd_unwatch from the watch's own callback: no further calls");
    wr.w = hk->fd_watch(hk->arg, p[1], BACKEND_FD_WRITE, on_fd, &wr);
    spin(b, 5);
    TEST_CHECK(wr.calls >= 1 && wr.last == BACKEND_FD_WRITE, "a writable pipe reports WRITE");
    hk->fd_unwatch(hk->arg, wr.w);
    before = wr.calls;
    spin(b, 5);
    TEST_EQ_INT(wr.calls, before, "fd_unwatch stops the reports");
    close(p[0]);
    close(p[1]);
    host_free(h);
    event_base_free(b);
    return test_done();
}
