/* host.c - struct backend_host on a libevent event_base: one-shot timers
 * and persistent fd watches, each a small allocation holding its event.
 *
 * A timer is freed by the host just before its callback runs (so the
 * callback may add timers, cancel others, or close the backend that made
 * it); timer_cancel frees one that has not fired. A watch stays until
 * fd_unwatch, which may be called from the watch's own callback. */
#include <stdlib.h>
#include <sys/time.h>

#include "store/host.h"

struct host {
    struct event_base *base;
    struct backend_host hooks;
};

struct host_timer {
    struct event *ev;
    void (*fn)(void *fn_arg);
    void *fn_arg;
};

struct host_watch {
    struct host *h;
    struct event *ev;
    int fd;
    void (*fn)(void *fn_arg, unsigned ready);
    void *fn_arg;
};

/* libevent's callback of a timer: frees it, then calls the backend. */
static void host_timer_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct host_timer *t = arg;
    void (*fn)(void *) = t->fn;
    void *fn_arg = t->fn_arg;
    event_free(t->ev);
    free(t);
    fn(fn_arg);
}

/* backend_host.timer_add: fn(fn_arg) once, after ms milliseconds. */
static void *host_timer_add(void *arg, unsigned ms, void (*fn)(void *fn_arg), void *fn_arg)
{
    struct host *h = arg;
    struct host_timer *t = malloc(sizeof(*t));
    if (!t)
        return NULL;
    t->fn = fn;
    t->fn_arg = fn_arg;
    t->ev = evtimer_new(h->base, host_timer_fire, t);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    if (!t->ev || evtimer_add(t->ev, &tv) != 0) {
        if (t->ev)
            event_free(t->ev);
        free(t);
        return NULL;
    }
    return t;
}

/* backend_host.timer_cancel: drops a timer that has not fired. */
static void host_timer_cancel(void *arg, void *timer)
{
    (void)arg;
    struct host_timer *t = timer;
    if (!t)
        return;
    event_free(t->ev);
    free(t);
}

/* libevent's flags for BACKEND_FD_* bits. */
static short host_flags(unsigned events)
{
    return (short)(((events & BACKEND_FD_READ) ? EV_READ : 0) |
                   ((events & BACKEND_FD_WRITE) ? EV_WRITE : 0));
}

/* libevent's callback of a watch: hands the ready bits to the backend. */
static void host_watch_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    struct host_watch *w = arg;
    unsigned ready = ((what & EV_READ) ? BACKEND_FD_READ : 0u) |
                     ((what & EV_WRITE) ? BACKEND_FD_WRITE : 0u);
    w->fn(w->fn_arg, ready);
}

/* (Re)arms a watch for events; 0 leaves it idle. 0, or -1 on failure. */
static int host_watch_arm(struct host_watch *w, unsigned events)
{
    event_del(w->ev);
    if (!events)
        return 0;
    if (event_assign(w->ev, w->h->base, w->fd, (short)(host_flags(events) | EV_PERSIST),
                     host_watch_fire, w) != 0)
        return -1;
    return event_add(w->ev, NULL);
}

/* backend_host.fd_watch: fn(fn_arg, ready) whenever fd is ready. */
static void *host_fd_watch(void *arg, int fd, unsigned events,
                           void (*fn)(void *fn_arg, unsigned ready), void *fn_arg)
{
    struct host *h = arg;
    struct host_watch *w = malloc(sizeof(*w));
    if (!w)
        return NULL;
    *w = (struct host_watch){h, NULL, fd, fn, fn_arg};
    w->ev = event_new(h->base, fd, (short)(host_flags(events) | EV_PERSIST), host_watch_fire, w);
    if (!w->ev || host_watch_arm(w, events) != 0) {
        if (w->ev)
            event_free(w->ev);
        free(w);
        return NULL;
    }
    return w;
}

/* backend_host.fd_modify: waits for other events (0: none for now). */
static void host_fd_modify(void *arg, void *watch, unsigned events)
{
    (void)arg;
    if (watch)
        host_watch_arm(watch, events);
}

/* backend_host.fd_unwatch: drops a watch (also from its own callback). */
static void host_fd_unwatch(void *arg, void *watch)
{
    (void)arg;
    struct host_watch *w = watch;
    if (!w)
        return;
    event_free(w->ev);
    free(w);
}

struct host *host_new(struct event_base *base)
{
    struct host *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->base = base;
    h->hooks = (struct backend_host){
        .arg = h,
        .timer_add = host_timer_add,
        .timer_cancel = host_timer_cancel,
        .fd_watch = host_fd_watch,
        .fd_modify = host_fd_modify,
        .fd_unwatch = host_fd_unwatch,
    };
    return h;
}

const struct backend_host *host_hooks(struct host *h)
{
    return &h->hooks;
}

void host_free(struct host *h)
{
    free(h);
}
