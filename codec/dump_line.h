/* dump_line.h - one line of a tabled export file (format in dump.h), read
 * and checked without touching any store: tabled import reads the whole
 * file with it once before writing anything, then again to write; the
 * fuzz target tests/fuzz/fuzz_importline.c drives it directly. */
#ifndef TABLED_DUMP_LINE_H
#define TABLED_DUMP_LINE_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "store/entity.h"

/* The export format version this tabled reads and writes. */
#define DUMP_FORMAT 1

enum dump_line_kind {
    DUMP_LINE_HEADER,      /* {"tabled-export":N,...} */
    DUMP_LINE_PROPS,       /* {"account":A,"service-properties":BASE64} */
    DUMP_LINE_TABLE,       /* {"account":A,"table":T,"acl":BASE64} */
    DUMP_LINE_ENTITY,      /* {"account":A,"table":T,"ticks":N,"entity":ENTRY} */
};

struct dump_line {
    enum dump_line_kind kind;
    long long format;              /* header: the "tabled-export" number */
    const char *account, *table;   /* NUL-terminated, in the arena */
    const uint8_t *raw;            /* props: the document; table: the ACL */
    size_t raw_len;                /* (0: a table without policies) */
    struct entity e;               /* entity, Timestamp = ticks; its values
                                      may point into the line */
};

/* Reads line[0..len) (a trailing newline allowed; no NUL needed) into *out,
 * strings in a: the JSON (nesting bounded as for every body the server
 * reads), the names (as the service allows them), a table's ACL bytes
 * (decoded as Get Table ACL reads them, and valid), an entity's keys and
 * values (as an insert checks them) and its ticks (the Edm.DateTime
 * range). A service-properties document is only base64-decoded here (the
 * caller checks it with props_stored_valid). 0, or -1 with what is wrong
 * in err. */
int dump_line_read(struct arena *a, const char *line, size_t len, struct dump_line *out,
                   char *err, size_t errlen);

/* Whether s is an account name (table = 0) or a table name (table = 1) as
 * the service allows: 3 to 24 (63) letters and digits, a table's starting
 * with a letter. */
int dump_name_ok(const char *s, int table);

#endif
