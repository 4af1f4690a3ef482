/* jsonout.h - JSON strings out: the one escaper every layer uses (entity
 * and table JSON, the advisor's and the fault rules' documents, export
 * lines, the access log's JSON). */
#ifndef TABLED_JSONOUT_H
#define TABLED_JSONOUT_H
#include <stddef.h>

#include "core/buf.h"

/* Appends s JSON-escaped, without quotes: '"', '\\' and U+0000..U+001F
 * escaped (the short forms where JSON has one), everything else,
 * non-ASCII UTF-8 included, raw. The hot loop of every entity response:
 * runs of plain bytes are found sixteen (SSE2) or eight at a time and
 * copied in one go. */
void json_escape(struct buf *b, const char *s, size_t n);
/* Appends "s" (json_escape between quotes). */
void json_put_string(struct buf *b, const char *s, size_t n);

#endif
