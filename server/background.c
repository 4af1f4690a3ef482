/* background.c - the Table service's background work on the event loop
 * (see background.h). */
#include "server/background.h"

#include <stdlib.h>

#include <event2/event.h>


struct background {
    struct event *ev;
    background_step_fn step;
    background_set_wake_fn set_wake;
    void *arg;
};

/* (Re)arms the timer to fire after ms milliseconds (0: next loop turn). */
static void bg_arm(struct background *bg, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(bg->ev, &tv);
}

/* One step of background work, then the timer as the service asks. */
static void bg_run(evutil_socket_t fd, short what, void *arg)
{
    struct background *bg = arg;
    (void)fd;
    (void)what;
    int ms = bg->step(bg->arg);
    if (ms >= 0)
        bg_arm(bg, ms);
}

/* The service has new work: run a step at the next loop turn. */
static void bg_wake(void *arg)
{
    bg_arm(arg, 0);
}

struct background *background_new(struct event_base *base, background_step_fn step,
                                  background_set_wake_fn set_wake, void *arg)
{
    struct background *bg = calloc(1, sizeof *bg);
    if (!bg)
        abort();
    bg->step = step;
    bg->set_wake = set_wake;
    bg->arg = arg;
    bg->ev = evtimer_new(base, bg_run, bg);
    if (!bg->ev)
        abort();
    set_wake(arg, bg_wake, bg);
    return bg;
}

void background_free(struct background *bg)
{
    if (!bg)
        return;
    bg->set_wake(bg->arg, NULL, NULL);
    event_free(bg->ev);
    free(bg);
}
