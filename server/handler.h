/* handler.h - what the server wing hands each parsed request to.
 *
 * The wing (listener, connections, HTTP framing) knows nothing of the
 * Table service: main(), the composition root, fills a struct req_handler
 * with adapters over the service and passes it to server_new(). Every
 * call comes from the event loop's thread.
 *
 * Life of one request: conn.c parses it into a struct request (its memory:
 * the connection's buffers and arena), prepares an empty struct response
 * and calls handle(). The answer is complete either at once (handle returns
 * 1) or later (handle returns 0 and calls done(token) once it has filled
 * resp). While an answer is outstanding the connection parses no further
 * request (pipelined bytes wait in its input), reads nothing, runs no
 * timer that could close it, and is never freed: when its client goes
 * away meanwhile (a write of an earlier answer fails), the connection is
 * freed and the answer dropped only once done arrives. There is no deadline on the handler's
 * latency: a handler that talks to a slow engine gives up itself, with its
 * own error answer (an OperationTimedOut), through done.
 *
 * Group commit: after each answer (at once or at done) the wing asks
 * dirty(); when it is 1, that answer and every later one are held until
 * one sync() per loop turn has run, then sent (sync() == 0) or dropped with
 * their connections (sync() < 0). */
#ifndef TABLED_HANDLER_H
#define TABLED_HANDLER_H

#include "core/http.h"

struct req_handler {
    /* Passed as the first argument of every function below. */
    void *arg;
    /* Answers req into resp. Returns 1 when resp is complete now; 0 when
     * the answer comes later: the handler then calls done(token) exactly
     * once, from the event loop (never from inside handle: it returns 1
     * then), after filling resp; until then req and resp stay valid and
     * untouched by the wing. done may be called for several connections in
     * one loop turn. After server_free() done must no longer be called (the
     * handler drops what is outstanding when main() frees it). */
    int (*handle)(void *arg, struct request *req, struct response *resp,
                  void (*done)(void *token), void *token);
    /* Fills resp with the error answer for a request the wing could not
     * parse or keep (why); the wing then closes the connection. req has a
     * method and target only when the head had been parsed, and no body. */
    void (*fail)(void *arg, struct request *req, struct response *resp, enum http_fail why);
    /* Group commit: 1 when writes were applied since the last sync(). */
    int (*dirty)(void *arg);
    /* Makes those writes durable: 0, or a negative status (the held
     * answers are then dropped and their connections closed). */
    int (*sync)(void *arg);
    /* 1: the connections of a listener with this handler are not counted
     * in the connection metrics (the admin listener's, server.c). Only
     * the handler given to server_new() is asked dirty() and sync(). */
    int uncounted;
};

#endif
