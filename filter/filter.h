/* filter.h - the OData $filter of Query Entities and Query Tables (doc/protocol.md, Queries).
 *
 * A request's $filter text (already percent-decoded, '+' already turned into
 * a space by url_decode) is compiled once with filter_compile into a small
 * tree in the request arena. filter_match then evaluates that tree against
 * every entity the scan produces, on its stored encoding; nothing is
 * re-parsed or decoded per entity.
 *
 * filter_plan turns the conditions on PartitionKey and RowKey (TableName for
 * Query Tables) into key ranges, so a scan reads only what can match. A plan
 * is always a superset of the matches: callers still run filter_match on
 * every entity (or table) the ranges yield.
 *
 * Everything a compiled filter or a plan points to lives in the arena given
 * to filter_compile / filter_plan; nothing needs freeing. */
#ifndef TABLED_FILTER_H
#define TABLED_FILTER_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "store/entity.h"
#include "codec/errors.h"

/* Longest $filter text accepted (bytes); longer -> InvalidInput. */
#define FILTER_MAX_TEXT 65536
/* Deepest nesting of parentheses and `not` accepted; deeper -> InvalidInput. */
#define FILTER_MAX_DEPTH 100
/* Most ranges a plan holds; more are replaced by the range covering them. */
#define FILTER_PLAN_MAX_RANGES 100

/* What the filter runs against: entities (any property name) or the table
 * list (only TableName; doc/protocol.md, Filtering tables). */
enum filter_target { FILTER_ENTITIES, FILTER_TABLES };

/* Result of comparing values of unrelated types (String property vs Int32
 * literal, Int32 property vs Double literal, ...; doc/protocol.md, Filter evaluation). */
enum filter_mismatch {
    FILTER_MISMATCH_FALSE = 0,     /* default: false for all six operators */
    FILTER_MISMATCH_CLOUDSTUB = 1, /* eq/gt/ge false, ne/lt/le true */
};

/* Switches of one compile (doc/protocol.md, Configuration switches), kept in the filter. */
struct filter_options {
    enum filter_mismatch mismatch;
    int max_comparisons; /* > 0: more comparisons -> InvalidInput (doc/protocol.md, Query errors) */
    int tables_strict;   /* 1: Query Tables filter naming another property
                            than TableName -> InternalError (doc/protocol.md, Query errors); 0:
                            compiles, but matches nothing (default) */
};


struct filter;

/* Optional counters, owned by the caller (tests, scan budgets). */
struct filter_stats {
    uint64_t examined; /* filter_match / filter_match_table calls */
    uint64_t matched;  /* ... that returned 1 */
};

/* Compiles text[0..len) for target under the switches opt (NULL: all
 * zero, the service's defaults) into *out (arena memory). Returns 0, or
 * -1 with *err and *message set:
 *   TERR_InvalidInput  syntax error; *message = "Syntax error at position N
 *                      in '<text>'." (N: 0-based UTF-16 index of the
 *                      offending token; also for nesting deeper than
 *                      FILTER_MAX_DEPTH). Also for null literals (message
 *                      "A query expression may not contain null values."),
 *                      for a term that is not Boolean where one is needed
 *                      (a literal other than true / false, a bare
 *                      PartitionKey, RowKey, Timestamp or TableName): as
 *                      the whole filter with message "The $filter
 *                      expression must evaluate to a single boolean
 *                      value.", under and / or / not with message NULL;
 *                      and with message NULL for malformed UTF-8, too long
 *                      texts, too many comparisons.
 *   TERR_NotImplemented property vs property, literal vs literal,
 *                      functions, arithmetic, '/' paths (message NULL: use
 *                      the code's standard text).
 *   TERR_InternalError only with tables_strict (message NULL).
 * Syntax errors are reported in preference to the other errors. An empty or
 * all-blank text is a syntax error; callers that want "no filter" for
 * `$filter=` should not compile it. The literals true and false are Boolean
 * constants (a whole filter, or an operand of and / or / not); filter_plan
 * folds them. A bare custom property is true for an entity whose value of
 * it is Boolean true. */
int filter_compile(struct arena *a, const char *text, size_t len, enum filter_target target,
                   const struct filter_options *opt, struct filter **out, enum terr *err,
                   const char **message);

/* Counts every later filter_match / filter_match_table call into *st
 * (NULL stops counting). */
void filter_set_stats(struct filter *f, struct filter_stats *st);

/* One entity as a scan reads it: its keys, and its value as stored
 * (entity_encode), which the filter reads in place: a comparison finds its
 * property by walking the stored names and reads only that value, so no
 * entity is decoded and nothing is allocated. */
struct filter_row {
    const char *pk, *rk; /* may be NULL when !filter_needs_keys(f) */
    size_t pk_len, rk_len;
    const void *val;
    size_t val_len;
};

/* 1 when row satisfies f (an FILTER_ENTITIES filter), else 0; -1 when
 * the part of the value the filter read is malformed (the row is corrupt:
 * the caller skips it). A FILTER_TABLES filter matches no row. */
int filter_match(const struct filter *f, const struct filter_row *row);
/* 1 when f compares PartitionKey or RowKey: filter_match then reads the
 * row's keys (a caller may otherwise leave them undecoded). */
int filter_needs_keys(const struct filter *f);
/* 1 when the table named name[0..len) satisfies f (a FILTER_TABLES filter;
 * TableName compares ordinally and case-sensitively), else 0. */
int filter_match_table(const struct filter *f, const char *name, size_t len);

/* Ordinal comparison of two UTF-8 strings by UTF-16 code units (doc/protocol.md, String order):
 * <0, 0, >0. Equal to memcmp order except that characters >= U+10000 sort
 * before U+E000..U+FFFF. Used for keys and string values alike. */
int filter_strcmp16(const char *a, size_t an, const char *b, size_t bn);

/* ---- key ranges ----------------------------------------------------------
 *
 * Entities are ordered by (PartitionKey, RowKey). One end of a range:
 *
 *   unbounded          no limit on this side
 *   has_rk == 0        a whole-partition bound on pk:
 *                        lower inclusive: PK >= pk    lower exclusive: PK > pk
 *                        upper inclusive: PK <= pk    upper exclusive: PK < pk
 *   has_rk == 1        a bound on the pair:
 *                        lower: (PK,RK) >= (pk,rk) (inclusive) or > (pk,rk)
 *                        upper: (PK,RK) <= (pk,rk) (inclusive) or < (pk,rk)
 *
 * With the key layout of keys.h ('e' id PK' 0x00 RK') a range maps to the
 * backend's [start, end) like this (P = keys_entity_partition_prefix(id, pk),
 * E = keys_entity(id, pk, rk), T = keys_entity_table_prefix(id),
 * end(X) = X after keys_prefix_end, X+0 = X with one 0x00 byte appended):
 *
 *   lower: unbounded T | PK >= pk  P      | PK > pk  end(P)
 *          (PK,RK) >= E            | (PK,RK) > E  E+0
 *   upper: unbounded end(T) | PK <= pk  end(P) | PK < pk  P
 *          (PK,RK) <= E+0     | (PK,RK) < E  E
 *
 * For FILTER_TABLES pk holds a TableName and has_rk is always 0; the bounds
 * compare case-sensitively. Table rows are keyed by the lower-cased name, so
 * use filter_plan_fold_case to get ranges over lower-cased names. */
struct filter_bound {
    int unbounded;
    const char *pk;
    size_t pk_len;
    int has_rk;
    const char *rk;
    size_t rk_len;
    int inclusive;
};

struct filter_range {
    struct filter_bound lo, hi;
};

/* The union of n ranges, sorted and non-overlapping. n == 0: nothing can
 * match. One range with both ends unbounded: a full scan. */
struct filter_plan {
    struct filter_range *ranges;
    size_t n;
};

/* Plans f: PartitionKey eq -> one partition, PartitionKey eq and RowKey
 * eq/gt/ge/lt/le -> a point or a RowKey range in the partition, PartitionKey
 * gt/ge/lt/le -> a PartitionKey range; `and` intersects, `or` unites (more
 * than FILTER_PLAN_MAX_RANGES -> their hull), anything under `not` and every
 * other property -> no restriction; the constant false (also `not true`)
 * -> nothing, true -> no restriction (so `true and X` plans as X and
 * `false or X` as X). Always returns 0. */
int filter_plan(const struct filter *f, struct arena *a, struct filter_plan *out);
/* 1 when p restricts nothing (one range, both ends unbounded). */
int filter_plan_is_full(const struct filter_plan *p);
/* 1 when r holds exactly one entity key (both ends the same (pk,rk),
 * inclusive): the caller can do a point get instead of a scan. */
int filter_range_is_point(const struct filter_range *r);
/* 1 when the key (pk, rk) lies in one of p's ranges; for a table plan pass
 * rk = NULL, rk_len = 0. */
int filter_plan_contains(const struct filter_plan *p, const char *pk, size_t pk_len,
                         const char *rk, size_t rk_len);
/* Appends the backend key interval [start, end) of entity range r in table
 * table_id (the mapping above; filter_keys.c, needs keys.c). Both buffers
 * are appended to, so pass empty ones. */
void filter_range_keys(const struct filter_range *r, uint64_t table_id, struct buf *start,
                       struct buf *end);
/* Turns a FILTER_TABLES plan over case-sensitive names into a plan over
 * ASCII-lower-cased names that contains lower(N) for every name N the input
 * plan contains (bounds may widen; `TableName eq 'Orders'` stays the point
 * 'orders'). */
void filter_plan_fold_case(struct arena *a, const struct filter_plan *in, struct filter_plan *out);

#endif
