/* echo_handler.h - a request handler (server/handler.h) for the server
 * wing's own tests: it answers 200 with a text body that echoes what the
 * wing parsed (method, path, query, headers, body), so test_http can check
 * the HTTP layer byte for byte, and answers later when asked to, so
 * test_conn_deferred can check the deferred-answer contract. It is test
 * code and links no protocol/ file. Request headers steer it:
 *   x-dirty: 1        the request "wrote" something: dirty() is 1 until
 *                     the next sync() (for a deferred answer: from the
 *                     moment it completes)
 *   x-sync-fail: 1    like x-dirty, and the next sync() fails
 *   x-close: 1        the response asks the wing to close the connection
 *   x-status: N       answer with status N
 *   x-big: N          answer with an N-byte body of 'x'
 *   x-evil: 1         add headers the wing must not send as given (its own
 *                     Content-Length/Connection, a value with CR LF)
 *   x-defer-ms: N     answer N ms later (handle returns 0; a timer fills
 *                     the answer, reading the request only then, and
 *                     calls done)
 *   x-defer-hold: 1   answer later, when a request to /release arrives:
 *                     a timer then completes every held answer in one
 *                     callback (several done calls in one loop turn)
 * GET /syncs answers with the number of successful sync() calls; GET
 * /stats with "pending=P done=D open=O" (deferred answers outstanding and
 * completed, open connections as the metrics count them). Every echo
 * carries "seen=S" (handle calls before this one) and "done=D" (deferred
 * answers completed before it was handled). */
#ifndef TABLED_ECHO_HANDLER_H
#define TABLED_ECHO_HANDLER_H

#include "server/handler.h"

struct echo;
struct event_base;
struct metrics;

struct echo *echo_new(void);
/* Timers of deferred answers run on base (the server's loop); m (may be
 * NULL) is where /stats reads the open connections. */
void echo_attach(struct echo *e, struct event_base *base, const struct metrics *m);
/* Frees e and its outstanding answers (without calling done: the server
 * is gone by then). */
void echo_free(struct echo *e);
/* The handler to register with server_new(). */
struct req_handler echo_handler(struct echo *e);

#endif
