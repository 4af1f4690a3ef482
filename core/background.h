/* background.h - runs the Table service's background work from the event
 * loop: removing the entities of deleted tables and probing a store whose
 * writes failed (protocol/service.h, service_background).
 *
 * A timer calls service_background() once per loop turn while it has work
 * (after that turn's sockets, so a request never waits for more than one
 * bounded step), at the delay it asks for while it waits (a probe), and
 * not at all when it has nothing to do; the service wakes it up. */
#ifndef TABLED_BACKGROUND_H
#define TABLED_BACKGROUND_H

struct event_base;
struct service;
struct background;

/* Hooks svc's background work into base (both must outlive it). */
struct background *background_new(struct event_base *base, struct service *svc);
void background_free(struct background *bg);

#endif
