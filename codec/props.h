/* props.h - the Table service properties document (Get/Set Table Service
 * Properties): its XML read into struct props and written back in the
 * canonical form the service answers and tabled stores. No request
 * context: the operations (protocol/ops/ops_props.c), the import of an
 * export file and the tools use it. */
#ifndef TABLED_PROPS_H
#define TABLED_PROPS_H
#include <stddef.h>

#include "codec/cors.h"
#include "codec/errors.h"
#include "core/arena.h"
#include "core/buf.h"


struct props_retention {
    int enabled;
    int days;                   /* 1..365 when enabled */
};

struct props_logging {
    int read, write, del;
    struct props_retention ret;
};

struct props_metrics {
    int enabled;
    int include_apis;           /* meaningful when enabled */
    struct props_retention ret;
};

struct props {
    struct props_logging log;
    struct props_metrics hour, minute;
    struct cors_rules cors;
};

/* Top-level elements present in a Set body. */
#define P_LOGGING 1u
#define P_HOUR 2u
#define P_MINUTE 4u
#define P_CORS 8u
#define P_ALL 15u

/* Reads the XML document s[0..n) into p; present gets the P_* bits of
 * the parts it holds. Strings of p point into s and a. TERR_NONE or the
 * service's error for the body. */
enum terr props_parse(struct arena *a, const char *s, size_t n, struct props *p,
                      unsigned *present);
/* Appends the canonical document of p to b. */
void props_write(const struct props *p, struct buf *b);
/* Whether s[0..n) is a stored service-properties document the service
 * reads as stored (all four parts; tabled import checks the files'
 * properties with it before writing anything). 1 or 0. */
int props_stored_valid(const char *s, size_t n);

#endif
