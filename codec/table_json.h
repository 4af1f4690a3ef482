/* table_json.h - the TableName member of a Create Table body (doc/protocol.md, Create Table).
 *
 * The body is walked with core/jsonwalk.c's nesting limit, so a body of
 * 4 MiB of brackets is malformed input, never a deep recursion; other
 * members, nested or not, are ignored. The name keeps its length: a
 * "\u0000" in it is a character of the name (which the name check then
 * refuses), not its end. */
#ifndef TABLED_TABLE_JSON_H
#define TABLED_TABLE_JSON_H
#include <stddef.h>

#include "core/arena.h"
#include "codec/errors.h"

/* Finds the string value of the first top-level "TableName" member of the
 * JSON object body[0..len) and copies it into arena a (NUL-terminated, but
 * *n is its length). TERR_InvalidInput when the body is missing, not
 * well-formed JSON, nested deeper than JSONWALK_MAX_DEPTH, not an object,
 * or its TableName is absent, not a string, or empty. */
enum terr table_json_name(struct arena *a, const char *body, size_t len, const char **name,
                          size_t *n);

#endif
