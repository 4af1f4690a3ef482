/* fault.h - fault injection rules: 503 ServerBusy, 500 OperationTimedOut,
 * added latency and connection resets, for testing client retry logic
 * (doc/protocol.md, Token buckets).
 *
 * A rule applies to an account ("*" or empty: any), optionally one table
 * (case-insensitive) and optionally one PartitionKey of it, and to some
 * operation classes (reads, writes, batches; default all). For a request
 * the most specific matching rule wins (partition > table > account > any;
 * among equals the first). The chosen rule draws one outcome:
 *   busy     probability of 503 ServerBusy
 *   timeout  probability of 500 OperationTimedOut, answered after
 *            timeout-delay-ms
 *   reset    probability of a connection reset (no answer at all)
 * and adds latency-ms (fixed "N" or uniform "A-B") to every answer it lets
 * through, faulty or not (not to resets). With every = N the outcome fires
 * on every Nth matching request instead of at random (the probabilities
 * then only weigh which fault it is); count = N stops the rule after N
 * injected faults.
 *
 * Writes: a request refused with ServerBusy or reset is never executed. A
 * timed-out write is not executed either, unless timeout-applies = true:
 * then it runs to completion (fully applied, atomically, as always) and
 * only its answer is replaced by the 500 — the service can do either, and
 * clients must cope with both.
 *
 * Rules come from [fault NAME] sections of the config file and from the
 * admin listener (server/admin.c) at run time; the same key = value
 * vocabulary serves both. */
#ifndef TABLED_FAULT_H
#define TABLED_FAULT_H
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define FAULT_MAX_RULES 64
#define FAULT_MAX_NAME 64
#define FAULT_MAX_PK 1024

/* Operation classes (bit mask). */
enum fault_class {
    FAULT_READ = 1,
    FAULT_WRITE = 2,
    FAULT_BATCH = 4,
    FAULT_ALL = 7,
};

enum fault_kind {
    FAULT_NONE = 0,
    FAULT_BUSY,     /* 503 ServerBusy */
    FAULT_TIMEOUT,  /* 500 OperationTimedOut */
    FAULT_RESET,    /* connection reset, no answer */
};

struct fault_rule {
    char name[FAULT_MAX_NAME];
    char account[64];               /* "" = any */
    char table[64];                 /* "" = any */
    char partition[FAULT_MAX_PK + 1];
    int has_partition;              /* the empty PartitionKey is a key too */
    unsigned ops;                   /* enum fault_class bits */
    double busy, timeout, reset;    /* probabilities, sum <= 1 */
    int timeout_delay_ms;
    int latency_min_ms, latency_max_ms;
    int timeout_applies;            /* run the write, then answer 500 */
    uint64_t every;                 /* 0 = random draws */
    uint64_t count;                 /* 0 = unlimited */
    uint64_t matched, injected;     /* run-time counters */
};

/* What a request is. */
struct fault_request {
    const char *account;
    const char *table;       /* NULL for service-level operations */
    size_t table_len;
    const char *pk;          /* NULL when unknown or not an entity operation */
    size_t pk_len;
    enum fault_class cls;
};

/* What to do with it. kind FAULT_NONE with delay_ms > 0: answer normally,
 * late. */
struct fault_action {
    enum fault_kind kind;
    int delay_ms;
    int applies_write;        /* FAULT_TIMEOUT: execute the write first */
    const char *rule;         /* name of the rule that decided */
};

struct fault_set;

/* Empty rule named name (all operations, no faults). */
void fault_rule_init(struct fault_rule *r, const char *name);
/* Sets one field by its key ("busy", "latency-ms", ...; '_' may stand for
 * '-'). Returns 0, or -1 with a message. */
int fault_rule_set(struct fault_rule *r, const char *key, const char *value, char *err,
                   size_t errlen);
/* Checks a finished rule (probabilities sum <= 1, partition needs table). */
int fault_rule_check(const struct fault_rule *r, char *err, size_t errlen);
/* Appends the rule as a JSON object (with its counters). */
void fault_rule_json(const struct fault_rule *r, struct buf *out);

/* seed 0: a random seed. */
struct fault_set *fault_set_new(uint64_t seed);
void fault_set_free(struct fault_set *fs);
/* Adds r, or replaces the rule of the same name (counters restart).
 * Returns 0, or -1 when the set is full. */
int fault_put(struct fault_set *fs, const struct fault_rule *r);
/* Removes the rule called name: 1, or 0 when there is none. */
int fault_delete(struct fault_set *fs, const char *name);
void fault_clear(struct fault_set *fs);
size_t fault_count(const struct fault_set *fs);
/* Appends the fault rules' gauge (rules in force) in Prometheus text
 * format; arg is a struct fault_set (for metrics_add_series). */
void fault_render_metrics(void *arg, struct buf *out);
const struct fault_rule *fault_get(const struct fault_set *fs, size_t i);
/* Appends {"rules":[...]} */
void fault_set_json(const struct fault_set *fs, struct buf *out);

/* 1 when some rule exists (the fast path skips everything otherwise). */
int fault_active(const struct fault_set *fs);
/* 1 when some rule names a partition (the caller must find the key). */
int fault_needs_pk(const struct fault_set *fs);
/* Decides for one request. Returns 1 when *out holds something to do. */
int fault_decide(struct fault_set *fs, const struct fault_request *q, struct fault_action *out);

#endif
