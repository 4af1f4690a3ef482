/* absent.h - the Blob and Queue ports of the azurite command.
 *
 * The peer emulator's combined command serves three services; tabled
 * serves the Table service only. So that tools which start "azurite" and
 * wait for all three ports (or connect to the Blob port first) work
 * unchanged, main() opens the other two ports with this handler: every
 * request gets the storage service's error for an operation it does not
 * implement (501, x-ms-error-code APINotImplemented, the Blob/Queue XML
 * error body) with a message saying that this server provides the Table
 * service only, and a warning naming the method and path is logged.
 * doc/azurite.md explains the choice of status. */
#ifndef TABLED_ABSENT_H
#define TABLED_ABSENT_H

#include "server/handler.h"

enum absent_service { ABSENT_BLOB, ABSENT_QUEUE };

/* Fills *h with the handler answering every request of which's port. */
void absent_handler(enum absent_service which, struct req_handler *h);

/* "Blob" or "Queue", as in Azurite's readiness lines. */
const char *absent_name(enum absent_service which);

#endif
