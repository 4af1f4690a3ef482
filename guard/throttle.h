/* throttle.h - token buckets per partition and per account (doc/protocol.md, Token buckets).
 *
 * The service's scalability targets are stated in entities per second: one
 * bucket per partition (account, table, PartitionKey) and one per account,
 * each refilled continuously at its rate up to its burst. A request costs
 * one token per entity it touches. Buckets count in nano-tokens, so any rate
 * down to 0.001/s refills exactly; the clock is passed in by the caller
 * (monotonic microseconds), which lets tests drive it by hand.
 *
 * Admission: a bucket admits a cost when it holds at least min(cost, burst)
 * tokens (so a batch larger than the burst is possible when the bucket is
 * full); the whole cost is then taken, and the bucket may go below zero
 * (a deficit that later requests wait out). A refused request takes nothing
 * from either bucket. throttle_charge() takes tokens after the fact (a query
 * page, whose size is known only once it is computed).
 *
 * Memory: a partition whose bucket is full is the same as a partition with
 * no bucket, so only partitions touched within the last burst/rate seconds
 * hold one. Buckets live in one open-addressing table of fixed 32-byte
 * slots keyed by a keyed 128-bit hash (SipHash-2-4-128 with a random key:
 * clients cannot aim collisions, and an accidental one among 2^64 keys is
 * out of reach). Full buckets are reclaimed by a sweep that advances a few
 * slots on every admission and further in throttle_maintain(); the table
 * is rebuilt smaller when it becomes sparse, and lives in its own mmap()ed
 * pages, so memory goes back to the system when partitions fall idle.
 * Checking a bucket is O(1) and allocates nothing, except when an insert
 * finds the table 3/4 full (an amortised rebuild). */
#ifndef TABLED_THROTTLE_H
#define TABLED_THROTTLE_H
#include <stddef.h>
#include <stdint.h>

/* Limits as configured (tokens = entities). */
struct throttle_limits {
    double partition_rate;   /* tokens per second, 0.001 .. 1e7 */
    double partition_burst;  /* bucket capacity, 1 .. 1e6 */
    double account_rate;
    double account_burst;
};

/* Which bucket refused a request. */
enum throttle_verdict {
    THROTTLE_OK = 0,
    THROTTLE_PARTITION = 1,
    THROTTLE_ACCOUNT = 2,
};

/* A request's buckets: account index (< naccounts given to throttle_new),
 * table name (compared case-insensitively, as table names are) and
 * PartitionKey bytes. pk == NULL: the account bucket only. */
struct throttle_key {
    unsigned account;
    const char *table;
    size_t table_len;
    const char *pk;
    size_t pk_len;
};

struct throttle;

/* Creates the buckets for naccounts accounts (all full). seed keys the
 * partition hash (16 random bytes; tests may pass fixed ones). NULL when
 * the limits are out of range. */
struct throttle *throttle_new(const struct throttle_limits *lim, unsigned naccounts,
                              const unsigned char seed[16]);
void throttle_free(struct throttle *t);

/* Admits a request costing pcost tokens of its partition bucket and acost
 * of its account bucket, or refuses it (taking nothing). A cost of 0 only
 * checks that the bucket holds at least one token (the up-front check of a
 * query). The account bucket is checked first. */
enum throttle_verdict throttle_admit(struct throttle *t, const struct throttle_key *k,
                                     int64_t pcost, int64_t acost, uint64_t now_us);

/* Takes tokens without checking (deficits allowed). pcost is ignored when
 * k->pk is NULL. */
void throttle_charge(struct throttle *t, const struct throttle_key *k, int64_t pcost,
                     int64_t acost, uint64_t now_us);

/* Reclaims full partition buckets among the next `budget` slots of the
 * sweep, and rebuilds the table smaller when it is at most 1/8 used.
 * Called from a timer so idle partitions are reclaimed without traffic. */
void throttle_maintain(struct throttle *t, uint64_t now_us, size_t budget);

/* Tokens a partition bucket holds at now (the burst when it has none), and
 * the same for an account; for tests and diagnostics. */
double throttle_partition_tokens(struct throttle *t, const struct throttle_key *k,
                                 uint64_t now_us);
double throttle_account_tokens(struct throttle *t, unsigned account, uint64_t now_us);

/* Partition buckets currently held, and the bytes of their table. */
size_t throttle_partitions(const struct throttle *t);
/* Appends the throttle's gauges in Prometheus text format (buckets in use,
 * the bucket table's memory); arg is a struct throttle (for
 * metrics_add_series). */
struct buf;
void throttle_render_metrics(void *arg, struct buf *out);
size_t throttle_table_bytes(const struct throttle *t);

#endif
