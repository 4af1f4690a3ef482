/* jsonpeek.h - read one top-level string member of a JSON object without
 * parsing the rest of it.
 *
 * The throttle must know an insert's PartitionKey before any work is done
 * (doc/protocol.md, Token buckets: refuse before doing any work), and the key lives in the JSON
 * body. Entity bodies put PartitionKey first in practice, so scanning for
 * it and stopping there costs a few dozen bytes of the body, with no
 * allocation unless the value holds escapes. Values are skipped without
 * validation; a malformed body simply yields "not found" (the operation
 * itself will answer 400 later). */
#ifndef TABLED_JSONPEEK_H
#define TABLED_JSONPEEK_H
#include <stddef.h>

#include "core/arena.h"

/* Finds the first top-level member called name (compared after unescaping)
 * of the object text [p, p + n). When its value is a string, stores its
 * UTF-8 text in *out / *out_len (pointing into p, not NUL-terminated, when
 * it has no escapes; else decoded into arena a) and returns 1; otherwise
 * returns 0. */
int jsonpeek_string(struct arena *a, const char *p, size_t n, const char *name,
                    const char **out, size_t *out_len);

#endif
