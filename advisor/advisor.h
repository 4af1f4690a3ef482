/* advisor.h - the partition advisor: how an application uses its tables'
 * partitions, and the service's scalability guidance applied to it.
 *
 * The Table service (protocol/service.c) reports every answered entity
 * operation here while the admin listener is on: point reads, writes with
 * their PartitionKeys, batches, queries with their shape (from the filter
 * planner's key ranges) and how many entities they examined and returned,
 * and throttled requests. The advisor keeps, per table (at most
 * ADVISOR_MAX_TABLES, the rest only counted):
 *   - requests and entities by operation kind, query shapes, batch sizes;
 *   - a Space-Saving heavy-hitters sketch of ADVISOR_SKETCH partitions: the
 *     busiest partitions with counts that over-estimate by at most the
 *     recorded error, the long tail summarised as the remainder and a
 *     HyperLogLog estimate of the number of distinct partitions;
 *   - the smallest and largest PartitionKey created so far and how often a
 *     new entity's PartitionKey lay at or beyond them (append/prepend);
 *   - a ring of ADVISOR_SLOTS per-interval samples (entities of the table
 *     and of its busiest partitions) for the dashboard.
 * Memory is allocated once per table and never grows: advisor_memory()
 * never exceeds advisor_memory_cap(), whatever the number of partitions.
 *
 * Findings (advisor_findings) are computed on demand from these counts,
 * counted since start or the last advisor_reset(). Thresholds come from
 * struct advisor_limits (config: --advisor NAME=VALUE, see
 * advisor_limit_set). Everything runs on the event loop's thread. */
#ifndef TABLED_ADVISOR_H
#define TABLED_ADVISOR_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"

#define ADVISOR_MAX_TABLES 32   /* tables tracked; more are only counted */
#define ADVISOR_SKETCH 128      /* partition counters per table */
#define ADVISOR_SLOTS 60        /* ring of per-interval samples */
#define ADVISOR_SLOT_TOP 6      /* partitions kept per sample */
#define ADVISOR_NAME_MAX 48     /* PartitionKey bytes kept (display) */
#define ADVISOR_KEY_MAX 128     /* PartitionKey bytes compared for order */
#define ADVISOR_FILTER_MAX 160  /* $filter bytes kept as an example */
#define ADVISOR_MAX_FINDINGS 128  /* findings reported at most */
#define ADVISOR_MAX_ACCOUNTS 64

/* What an answered operation did. */
enum advisor_op {
    ADVISOR_GET = 0,   /* Get Entity (point read) */
    ADVISOR_QUERY,     /* Query Entities (one page) */
    ADVISOR_INSERT,
    ADVISOR_UPDATE,    /* Update / Merge (If-Match) */
    ADVISOR_UPSERT,    /* Insert Or Replace / Insert Or Merge */
    ADVISOR_DELETE,
    ADVISOR_BATCH,     /* an entity group transaction (entities: its size) */
    ADVISOR_OPS
};

/* Key ranges a query named (filter planner). */
enum advisor_shape {
    ADVISOR_POINT = 0,       /* PartitionKey and RowKey eq: one entity */
    ADVISOR_PARTITION,       /* inside one partition */
    ADVISOR_RANGE,           /* a PartitionKey range: several partitions */
    ADVISOR_SCAN,            /* no key condition: the whole table */
    ADVISOR_SHAPES
};

enum advisor_severity { ADVISOR_INFO = 0, ADVISOR_WARNING, ADVISOR_CRITICAL };

enum advisor_kind {
    ADVISOR_HOT_PARTITION = 0,
    ADVISOR_APPEND_ONLY,
    ADVISOR_PREPEND,
    ADVISOR_TABLE_SCAN,
    ADVISOR_LOW_EFFICIENCY,
    ADVISOR_OVERSIZED,
    ADVISOR_UNBATCHED,
    ADVISOR_THROTTLED,
    ADVISOR_KINDS
};

/* Thresholds; their names, defaults and ranges are the rows of
 * advisor/advisor_limits.c. */
struct advisor_limits {
    double interval_s;          /* sample interval, default 5 */
    double target;              /* entities/s per partition, default 2000 */
    double hot_share;           /* share of a table's entities, default 0.5 */
    double hot_min_entities;    /* table traffic before judging, default 1000 */
    double append_share;        /* creates at the end (start), default 0.8 */
    double append_min_creates;  /* default 500 */
    double append_min_keys;     /* new largest (smallest) keys, default 10 */
    double append_min_intervals; /* intervals with such moves, default 6 */
    double scan_min;            /* full table scans, default 5 */
    double efficiency_ratio;    /* examined per returned, default 10 */
    double efficiency_min_examined; /* default 1000 */
    double partition_entities;  /* entities added to one partition, default 100000 */
    double batch_min_writes;    /* single writes in a stream, default 200 */
    double batch_window_ms;     /* gap that still continues a stream, default 1000 */
    double throttle_min;        /* 503s for one partition, default 1 */
};

/* One operation's table and partition (pk NULL: none, or unknown). */
struct advisor_key {
    unsigned account;
    const char *table;
    size_t table_len;
    const char *pk;
    size_t pk_len;
};

/* One finding. Texts are static except summary and the names. */
struct advisor_finding {
    enum advisor_kind kind;
    enum advisor_severity severity;
    unsigned account;
    char table[64];
    char partition[ADVISOR_NAME_MAX + 4];  /* "" when the finding is per table */
    int has_partition;
    double value, threshold;     /* the measure that crossed its threshold */
    char summary[640];           /* the evidence, with numbers */
    const char *reason;          /* the service's guidance, in its terms */
    const char *fix;             /* what the guidance suggests */
};

struct advisor;

/* advisor_limits.c: the thresholds are option rows (core/options.h), one
 * per field of struct advisor_limits. Sets every field to its default. */
void advisor_limits_default(struct advisor_limits *lim);
/* Applies "name=value" (a row's name, e.g. "hot-share=0.6"). 0, or -1
 * with a message. */
int advisor_limit_set(struct advisor_limits *lim, const char *spec, char *err, size_t errlen);
/* The rows in order: how many, the i-th name (NULL past the end), and the
 * i-th value in lim (for GET /advisor's "thresholds"). */
size_t advisor_limit_count(void);
const char *advisor_limit_name(size_t i);
double advisor_limit_value(const struct advisor_limits *lim, size_t i);
/* Lists the thresholds with their meaning, default and range
 * (`tabled --advisor help`). */
void advisor_limits_usage(FILE *out);

/* A new advisor. now_us: clock_mono_us() (core/clock.h) at every call. */
struct advisor *advisor_new(const struct advisor_limits *lim, uint64_t now_us);
/* Names account index i (as the callers' keys count them) in reports;
 * unnamed indexes show as "?". */
void advisor_name_account(struct advisor *adv, unsigned i, const char *name);
void advisor_free(struct advisor *adv);
/* Forgets everything counted (the limits stay). */
void advisor_reset(struct advisor *adv, uint64_t now_us);

/* A point read (Get Entity, found or not). */
void advisor_read(struct advisor *adv, const struct advisor_key *k, uint64_t now_us);
/* One written entity: op is INSERT/UPDATE/UPSERT/DELETE; created: the entity
 * did not exist before; in_batch: part of an entity group transaction. */
void advisor_write(struct advisor *adv, const struct advisor_key *k, enum advisor_op op,
                   int created, int in_batch, uint64_t now_us);
/* One committed batch of n entities (after its advisor_write calls). */
void advisor_batch(struct advisor *adv, const struct advisor_key *k, size_t n, uint64_t now_us);
/* One page of a query: its shape, entities examined and returned, the
 * partition for ADVISOR_PARTITION / ADVISOR_POINT (k->pk), and the $filter
 * text (may be NULL). */
void advisor_query(struct advisor *adv, const struct advisor_key *k, enum advisor_shape shape,
                   uint64_t examined, uint64_t returned, const char *filter, size_t filter_len,
                   uint64_t now_us);
/* A request refused by a token bucket; k->pk NULL: the account's bucket. */
void advisor_throttled(struct advisor *adv, const struct advisor_key *k, uint64_t now_us);

/* Evaluates the findings into out (at most cap); returns how many. */
size_t advisor_findings(struct advisor *adv, uint64_t now_us, struct advisor_finding *out,
                        size_t cap);
/* Appends GET /advisor's JSON document (schema in README "Partition
 * advisor"). */
void advisor_json(struct advisor *adv, uint64_t now_us, struct buf *out);
/* Appends the Prometheus series tabled_advisor_findings{kind,severity} and
 * tabled_advisor_memory_bytes. */
void advisor_metrics(struct advisor *adv, uint64_t now_us, struct buf *out);

/* advisor_metrics with the clock, in the shape of metrics.h's
 * render_more hook (arg: the advisor). */
void advisor_render_metrics(void *arg, struct buf *out);

/* Bytes the advisor holds now, and the most it can ever hold. */
size_t advisor_memory(const struct advisor *adv);
size_t advisor_memory_cap(void);

const char *advisor_kind_name(enum advisor_kind k);
const char *advisor_severity_name(enum advisor_severity s);
const char *advisor_shape_name(enum advisor_shape s);
const char *advisor_op_name(enum advisor_op op);

#endif
