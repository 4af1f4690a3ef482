/* metrics.h - counters and histograms for the admin listener's /metrics,
 * which server/metrics_text.c renders in the Prometheus text exposition
 * format (version 0.0.4).
 *
 * Everything is a fixed-size array indexed by small numbers the callers
 * already have (operation number, account index), so recording is a few
 * additions and never allocates. Names:
 *   tabled_requests_total{operation,status}            counter
 *   tabled_request_duration_seconds{operation}         histogram (first byte
 *                                                      to answer ready)
 *   tabled_throttled_total{account,scope}              counter (partition|account)
 *   tabled_faults_injected_total{account,kind}         counter (server_busy|
 *                                                      timeout|reset|latency)
 *   tabled_entities{account}                           gauge
 *   tabled_backend_apply_duration_seconds              histogram
 *   tabled_backend_sync_duration_seconds               histogram
 *   tabled_open_connections, tabled_connections_total  gauge, counter
 *   tabled_throttle_partition_buckets, ..._bytes       gauges (when throttling)
 *   tabled_fault_rules                                 gauge
 *   tabled_advisor_*  (render_more: advisor/advisor.h)     gauges
 *   tabled_postgres_* (render_more: backends/postgres.h)   pool gauges and
 *                                                      connection failures
 *   tabled_purge_tables, tabled_purged_entities_total  gauge, counter (deleted
 *                                                      tables whose entities
 *                                                      are still being removed)
 *   tabled_store_writable                              gauge (0 after a failed
 *                                                      write until writes work) */
#ifndef TABLED_METRICS_H
#define TABLED_METRICS_H
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/account.h"

#define METRICS_MAX_OPS 32
#define METRICS_MAX_STATUS 16  /* distinct statuses kept per operation */
#define METRICS_BUCKETS 16     /* finite histogram bounds */

enum metrics_scope { METRICS_SCOPE_PARTITION = 0, METRICS_SCOPE_ACCOUNT = 1 };
enum metrics_fault {
    METRICS_FAULT_BUSY = 0,
    METRICS_FAULT_TIMEOUT,
    METRICS_FAULT_RESET,
    METRICS_FAULT_LATENCY,
    METRICS_FAULT_KINDS
};

struct metrics_hist {
    uint64_t le[METRICS_BUCKETS];  /* observations <= bound i (not cumulative) */
    uint64_t inf;                  /* above the last bound */
    uint64_t count;
    uint64_t sum_us;
};

struct metrics_op {
    const char *name;              /* static text; NULL until first seen */
    struct {
        int status;
        uint64_t n;
    } status[METRICS_MAX_STATUS];
    size_t nstatus;
    uint64_t other;                /* statuses beyond METRICS_MAX_STATUS */
    struct metrics_hist latency;
};


/* Modules that append series of their own. */
#define METRICS_MAX_MORE 8

struct metrics {
    const struct account_cfg *accounts;  /* the accounts' names (labels) */
    size_t naccounts;
    struct metrics_op ops[METRICS_MAX_OPS];
    uint64_t throttled[CONFIG_MAX_ACCOUNTS][2];
    uint64_t faults[CONFIG_MAX_ACCOUNTS][METRICS_FAULT_KINDS];
    int64_t entities[CONFIG_MAX_ACCOUNTS];
    int entities_known;            /* the entity gauges are maintained */
    struct metrics_hist apply, sync;
    int64_t open_conns;
    uint64_t conns_total;
    /* more series, from modules above this one (throttle and fault rules'
       gauges, the partition advisor's): metrics_add_series */
    struct {
        void (*render)(void *arg, struct buf *out);
        void *arg;
    } more[METRICS_MAX_MORE];
    size_t nmore;
    int64_t purge_tables;          /* deleted tables being purged */
    uint64_t purged_entities;
    int store_failed;              /* 1: writes fail (disk full, I/O error);
                                      2: the database cannot be reached */
    char store_error[240];         /* why, for /healthz */
};

/* A zeroed set of metrics for accounts[0..n) (at most
 * CONFIG_MAX_ACCOUNTS; the array must outlive the metrics). */
struct metrics *metrics_new(const struct account_cfg *accounts, size_t n);
void metrics_free(struct metrics *m);
/* Appends render(arg, out)'s series to every rendering (its "# HELP" and
 * "# TYPE" lines included), after the metrics' own; at most
 * METRICS_MAX_MORE. */
void metrics_add_series(struct metrics *m, void (*render)(void *arg, struct buf *out),
                        void *arg);

/* One answered request: op < METRICS_MAX_OPS, name a static string. */
void metrics_request(struct metrics *m, unsigned op, const char *name, int status,
                     uint64_t micros);
void metrics_throttled(struct metrics *m, unsigned account, enum metrics_scope scope);
void metrics_fault(struct metrics *m, unsigned account, enum metrics_fault kind);
void metrics_entities_add(struct metrics *m, unsigned account, int64_t delta);
void metrics_backend_apply(struct metrics *m, uint64_t micros);
void metrics_backend_sync(struct metrics *m, uint64_t micros);
void metrics_connection(struct metrics *m, int opened);  /* 1 opened, 0 closed */
/* Purges of deleted tables: tables pending, entities removed by a step. */
void metrics_purge(struct metrics *m, size_t pending, uint64_t removed);
/* The store's writes fail (failed 1, with why), the database cannot be
   reached (2, with why), or all works again (0). */
void metrics_store_state(struct metrics *m, int failed, const char *why);

/* Records one observation (exposed for tests). */
void metrics_hist_observe(struct metrics_hist *h, uint64_t micros);

#endif
