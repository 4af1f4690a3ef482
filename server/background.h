/* background.h - runs background work from the event loop: for tabled, the
 * Table service's removal of deleted tables' entities and probing of a store
 * whose writes failed (protocol/service.h, service_background), which main()
 * hands over as callbacks: this server-wing module includes no protocol
 * header.
 *
 * A timer calls the step once per loop turn while it has work
 * (after that turn's sockets, so a request never waits for more than one
 * bounded step), at the delay it asks for while it waits (a probe), and
 * not at all when it has nothing to do; the service wakes it up. */
#ifndef TABLED_BACKGROUND_H
#define TABLED_BACKGROUND_H

struct event_base;
struct background;

/* One bounded step of work: returns the delay in ms before the next step
 * (0: next loop turn), or -1 when there is nothing to do until a wake-up. */
typedef int (*background_step_fn)(void *arg);
/* Wake-up hook: the owner of the work calls wake(wake_arg) when new work
 * arrives; set_wake(arg, NULL, NULL) unregisters it. */
typedef void (*background_wake_fn)(void *wake_arg);
typedef void (*background_set_wake_fn)(void *arg, background_wake_fn wake, void *wake_arg);

/* Runs step(arg) from base's loop as above and registers its wake-up
 * through set_wake(arg, ...) (base and arg must outlive the result). */
struct background *background_new(struct event_base *base, background_step_fn step,
                                  background_set_wake_fn set_wake, void *arg);
void background_free(struct background *bg);

#endif
