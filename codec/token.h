/* token.h - continuation tokens in the service's form (doc/protocol.md, Continuation):
 * "1!<n>!<payload>" where payload is the base64 of the UTF-8 key with every
 * '=' replaced by '-', and n is the payload's length. */
#ifndef TABLED_TOKEN_H
#define TABLED_TOKEN_H
#include <stddef.h>

#include "core/arena.h"

/* Token text for key (arena memory, NUL-terminated). */
char *token_encode(struct arena *a, const char *key, size_t len);
/* Decodes a token (already percent-decoded). A value that does not start
 * with "1!" is taken as a raw key. Returns 0, or -1 when empty or
 * malformed. *key is arena memory, NUL-terminated. */
int token_decode(struct arena *a, const char *text, size_t n, const char **key, size_t *len);

#endif
