/* metrics.c - counters and histograms (see metrics.h); their Prometheus
 * text form is server/metrics_text.c. */
#include "core/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Upper bounds of the histogram buckets, in microseconds (as printed:
 * server/metrics_text.c). */
static const uint64_t bound_us[METRICS_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};


struct metrics *metrics_new(const struct account_cfg *accounts, size_t n)
{
    struct metrics *m = calloc(1, sizeof *m);
    if (!m)
        abort();
    m->accounts = accounts;
    m->naccounts = n < CONFIG_MAX_ACCOUNTS ? n : CONFIG_MAX_ACCOUNTS;
    return m;
}

void metrics_free(struct metrics *m)
{
    free(m);
}

void metrics_hist_observe(struct metrics_hist *h, uint64_t micros)
{
    size_t i = 0;
    while (i < METRICS_BUCKETS && micros > bound_us[i])
        i++;
    if (i < METRICS_BUCKETS)
        h->le[i]++;
    else
        h->inf++;
    h->count++;
    h->sum_us += micros;
}

void metrics_request(struct metrics *m, unsigned op, const char *name, int status,
                     uint64_t micros)
{
    if (!m || op >= METRICS_MAX_OPS)
        return;
    struct metrics_op *o = &m->ops[op];
    if (!o->name)
        o->name = name;
    size_t i = 0;
    while (i < o->nstatus && o->status[i].status != status)
        i++;
    if (i == o->nstatus) {
        if (o->nstatus == METRICS_MAX_STATUS) {
            o->other++;
            i = METRICS_MAX_STATUS;
        } else {
            o->status[i].status = status;
            o->nstatus++;
        }
    }
    if (i < METRICS_MAX_STATUS)
        o->status[i].n++;
    metrics_hist_observe(&o->latency, micros);
}

void metrics_add_series(struct metrics *m, void (*render)(void *arg, struct buf *out),
                        void *arg)
{
    if (m && m->nmore < METRICS_MAX_MORE)
        m->more[m->nmore++] = (typeof(m->more[0])){render, arg};
}

void metrics_throttled(struct metrics *m, unsigned account, enum metrics_scope scope)
{
    if (m && account < CONFIG_MAX_ACCOUNTS)
        m->throttled[account][scope]++;
}

void metrics_fault(struct metrics *m, unsigned account, enum metrics_fault kind)
{
    if (m && account < CONFIG_MAX_ACCOUNTS && kind < METRICS_FAULT_KINDS)
        m->faults[account][kind]++;
}

void metrics_entities_add(struct metrics *m, unsigned account, int64_t delta)
{
    if (m && account < CONFIG_MAX_ACCOUNTS)
        m->entities[account] += delta;
}

void metrics_backend_apply(struct metrics *m, uint64_t micros)
{
    if (m)
        metrics_hist_observe(&m->apply, micros);
}

void metrics_backend_sync(struct metrics *m, uint64_t micros)
{
    if (m)
        metrics_hist_observe(&m->sync, micros);
}

void metrics_connection(struct metrics *m, int opened)
{
    if (!m)
        return;
    if (opened) {
        m->open_conns++;
        m->conns_total++;
    } else {
        m->open_conns--;
    }
}

void metrics_purge(struct metrics *m, size_t pending, uint64_t removed)
{
    if (!m)
        return;
    m->purge_tables = (int64_t)pending;
    m->purged_entities += removed;
}

void metrics_store_state(struct metrics *m, int failed, const char *why)
{
    if (!m)
        return;
    m->store_failed = failed;
    snprintf(m->store_error, sizeof m->store_error, "%s", failed && why ? why : "");
}
