/* cors.h - CORS rules of the service properties: validation of the
 * comma-separated lists a rule is made of, and matching of preflight and
 * actual requests against an account's rules (doc/protocol.md, Service properties: validation; CORS).
 *
 * A rule keeps its lists as normalised text ("a,b,c": items trimmed, no
 * empty items), exactly as Get Service Properties returns them. The
 * strings belong to whoever owns the struct cors_rules. */
#ifndef TABLED_CORS_H
#define TABLED_CORS_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

#define CORS_MAX_RULES 5
#define CORS_MAX_ORIGINS 64
#define CORS_MAX_ITEM 256           /* characters of one origin or header name */
#define CORS_MAX_LITERAL_HEADERS 64
#define CORS_MAX_PREFIX_HEADERS 2
#define CORS_MAX_TEXT 2048          /* all list text of all rules together */

struct cors_rule {
    const char *origins;            /* "*" or origins */
    const char *methods;            /* upper-case verbs */
    const char *allowed_headers;    /* may be "" */
    const char *exposed_headers;    /* may be "" */
    int64_t max_age;                /* seconds, >= 0 */
};

struct cors_rules {
    size_t n;
    struct cors_rule r[CORS_MAX_RULES];
};

/* Which list a text is, for cors_list_normalize's checks. */
enum cors_list { CORS_ORIGINS, CORS_METHODS, CORS_HEADERS };

/* Checks list text s[0..n) (items separated by ',', blanks around items
 * ignored) against the rules of its kind and returns its normalised form
 * in arena memory, or NULL when invalid (InvalidXmlNodeValue):
 *   origins: "*" or 1..64 items of at most 256 characters
 *   methods: 1 or more of DELETE GET HEAD MERGE POST OPTIONS PUT PATCH
 *   headers: possibly empty; at most 64 literal names and 2 prefixes
 *            ("x-ms-meta*"), each at most 256 characters */
const char *cors_list_normalize(struct arena *a, enum cors_list kind, const char *s, size_t n);

/* Index of the first rule that allows a preflight for origin, the
 * Access-Control-Request-Method value method and the optional
 * Access-Control-Request-Headers value headers (NULL: none), or -1.
 * Origins compare case-insensitively, methods exactly, header names
 * case-insensitively, "*" and "prefix*" entries as wildcards. */
int cors_match_preflight(const struct cors_rules *rs, const char *origin, const char *method,
                         const char *headers);
/* Index of the first rule whose origins and methods allow an actual
 * request (headers are not checked), or -1. */
int cors_match_actual(const struct cors_rules *rs, const char *origin, const char *method);
/* 1 when the rule's origin list contains "*". */
int cors_any_origin(const struct cors_rule *r);

/* What the CORS headers of an actual (non-preflight) request are, row by
 * row of the table in the service's CORS documentation ("Understanding
 * how the Vary header is set"):
 *   rule: the matching rule (-1: none). With an Origin, the first rule
 *         whose origins and methods allow it; without one, the first rule
 *         that allows all origins ("*") and the method.
 *   any:  that rule allows all origins: Access-Control-Allow-Origin "*",
 *         no Access-Control-Allow-Credentials; else the request origin
 *         is echoed with Allow-Credentials true. Access-Control-Expose-
 *         Headers comes from the rule either way.
 *   vary: send "Vary: Origin": GET/HEAD only, when rules exist and the
 *         match (if any) is not an all-origins rule. */
struct cors_answer {
    int rule;
    int any;
    int vary;
};
/* Fills *out for a request with method (exact verb) and origin (NULL when
 * the request has no Origin header) against the account's rules rs. */
void cors_actual(const struct cors_rules *rs, const char *origin, const char *method,
                 struct cors_answer *out);

#endif
