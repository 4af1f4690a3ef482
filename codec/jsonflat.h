/* jsonflat.h - a fast path in front of yajl for the JSON that entity
 * bodies almost always are: one flat object whose member names and string
 * values hold no escapes, and whose values are strings, numbers, true,
 * false or null.
 *
 * jsonflat_parse() walks such a body once (eight bytes at a time inside
 * strings) and delivers exactly the callbacks yajl would deliver for it,
 * with yajl's arguments: start_map, then map_key / value pairs, then
 * end_map; strings and keys point into the body, numbers are passed as
 * their text to yajl_number. Anything else (an escape, a nested value,
 * whitespace other than space, tab, CR and LF, malformed syntax, trailing
 * bytes) makes it stop and answer JSONFLAT_DECLINED before it has called
 * anything that could not be repeated: the caller then resets its state
 * and runs yajl over the same bytes, which gives every error its usual
 * answer. So the fast path never decides an error itself.
 *
 * Callbacks run as they are found; a declined parse may already have
 * called some of them, so the caller must start over from a clean state. */
#ifndef TABLED_PROTOCOL_JSONFLAT_H
#define TABLED_PROTOCOL_JSONFLAT_H

#include <stddef.h>
#include <yajl/yajl_parse.h>

enum {
    JSONFLAT_OK = 0,        /* the whole body was parsed, every callback ran */
    JSONFLAT_DECLINED = 1,  /* not a simple flat object: use yajl */
    JSONFLAT_CANCELED = 2,  /* a callback returned 0, as yajl_status_client_canceled */
};

/* Parses body[0..len) as described above. cb must have yajl_number set
 * (numbers are delivered as text); yajl_integer and yajl_double are not
 * used. */
int jsonflat_parse(const yajl_callbacks *cb, void *ctx, const char *body, size_t len);

#endif
