/* jsonwalk.h - yajl's callback parser with a nesting limit, for every JSON
 * body tabled reads.
 *
 * A request body may be up to 4 MiB of '[' or '{"a":'. Anything that
 * recurses once per level over such a body (yajl_tree builds and frees its
 * tree recursively) runs off the stack, and even yajl's own streaming
 * parser keeps a byte per open level. jsonwalk_parse() runs yajl's
 * streaming parser and stops it at the first value opened deeper than
 * max_depth, so no caller ever sees, builds or keeps more than max_depth
 * levels; callers that still want a yajl_tree (small admin documents) run
 * this first, which bounds the tree's recursion.
 *
 * Strings and member names reach the callbacks with their length: a
 * "\u0000" escape arrives as a NUL byte inside them, never as their end.
 * Callers that keep them as C strings pass JSONWALK_NO_NUL, which refuses
 * such bodies. */
#ifndef TABLED_JSONWALK_H
#define TABLED_JSONWALK_H

#include <stddef.h>
#include <yajl/yajl_parse.h>

/* The nesting limit for bodies whose documents are shallow (table and
 * entity bodies: 1 level, admin rules: 3, token claims: a few). */
#define JSONWALK_MAX_DEPTH 64

enum {
    JSONWALK_OK = 0,
    JSONWALK_SYNTAX = -1,     /* not well-formed JSON (or not UTF-8) */
    JSONWALK_TOO_DEEP = -2,   /* a value opens deeper than max_depth */
    JSONWALK_NUL = -3,        /* JSONWALK_NO_NUL: a string or name holds U+0000 */
    JSONWALK_CANCELED = -4,   /* a callback returned 0 */
    JSONWALK_NOMEM = -5,
};

/* flags */
#define JSONWALK_NO_NUL 1u        /* refuse "\u0000" in strings and names */
#define JSONWALK_RAW_STRINGS 2u   /* skip yajl's UTF-8 check (the caller checks) */

/* Parses the whole of p[0..n) (no NUL terminator needed), calling the
 * callbacks of cb with ctx as yajl would; cb may be NULL (check only), and
 * so may any callback in it (the event is skipped). Numbers are delivered
 * as text through yajl_number only; yajl_integer and yajl_double are never
 * called. The top-level value is depth 1: "[]" needs max_depth 1.
 * Returns a JSONWALK_* status; when err is not NULL it gets a one-line
 * reason for any failure but JSONWALK_CANCELED. */
int jsonwalk_parse(const yajl_callbacks *cb, void *ctx, const char *p, size_t n, int max_depth,
                   unsigned flags, char *err, size_t errlen);

#endif
