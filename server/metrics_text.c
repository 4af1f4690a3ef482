/* metrics_text.c - the metrics (core/metrics.h) in the Prometheus text
 * exposition format (version 0.0.4), for the admin listener's /metrics. */
#include "server/metrics_text.h"

#include <stdio.h>

/* The bucket bounds of core/metrics.c, as printed (seconds). */
static const char *const bound_text[METRICS_BUCKETS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
};

static const char *const fault_names[METRICS_FAULT_KINDS] = {
    "server_busy", "timeout", "reset", "latency",
};

/* Appends a label value with the format's escapes (\\, \", \n). */
static void label_value(struct buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            buf_putc(b, '\\');
        if (*s == '\n') {
            buf_puts(b, "\\n");
            continue;
        }
        buf_putc(b, *s);
    }
}

/* The # HELP and # TYPE lines of one family. */
static void family(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Seconds with microsecond precision. */
static void put_seconds(struct buf *b, uint64_t us)
{
    buf_printf(b, "%llu.%06llu", (unsigned long long)(us / 1000000),
               (unsigned long long)(us % 1000000));
}

/* The _bucket/_sum/_count series of one histogram; labels is "" or
 * `name="value",` text placed before le. */
static void hist_series(struct buf *b, const char *name, const char *labels,
                        const struct metrics_hist *h)
{
    uint64_t cum = 0;
    for (size_t i = 0; i < METRICS_BUCKETS; i++) {
        cum += h->le[i];
        buf_printf(b, "%s_bucket{%sle=\"%s\"} %llu\n", name, labels, bound_text[i],
                   (unsigned long long)cum);
    }
    cum += h->inf;
    buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)cum);
    size_t ll = strlen(labels);
    /* labels without the trailing comma for _sum and _count */
    if (ll)
        buf_printf(b, "%s_sum{%.*s} ", name, (int)(ll - 1), labels);
    else
        buf_printf(b, "%s_sum ", name);
    put_seconds(b, h->sum_us);
    buf_putc(b, '\n');
    if (ll)
        buf_printf(b, "%s_count{%.*s} %llu\n", name, (int)(ll - 1), labels,
                   (unsigned long long)h->count);
    else
        buf_printf(b, "%s_count %llu\n", name, (unsigned long long)h->count);
}

static void render_requests(const struct metrics *m, struct buf *b)
{
    family(b, "tabled_requests_total", "counter",
           "Requests answered by the table endpoints, by operation and HTTP status.");
    for (size_t i = 0; i < METRICS_MAX_OPS; i++) {
        const struct metrics_op *o = &m->ops[i];
        if (!o->name)
            continue;
        for (size_t j = 0; j < o->nstatus; j++) {
            buf_puts(b, "tabled_requests_total{operation=\"");
            label_value(b, o->name);
            buf_printf(b, "\",status=\"%d\"} %llu\n", o->status[j].status,
                       (unsigned long long)o->status[j].n);
        }
        if (o->other) {
            buf_puts(b, "tabled_requests_total{operation=\"");
            label_value(b, o->name);
            buf_printf(b, "\",status=\"other\"} %llu\n", (unsigned long long)o->other);
        }
    }
    family(b, "tabled_request_duration_seconds", "histogram",
           "Time from a request's first byte until its answer was ready.");
    for (size_t i = 0; i < METRICS_MAX_OPS; i++) {
        const struct metrics_op *o = &m->ops[i];
        if (!o->name)
            continue;
        struct buf lab;
        buf_init(&lab);
        buf_puts(&lab, "operation=\"");
        label_value(&lab, o->name);
        buf_puts(&lab, "\",");
        hist_series(b, "tabled_request_duration_seconds", lab.data, &o->latency);
        buf_free(&lab);
    }
}

static void render_accounts(const struct metrics *m, struct buf *b)
{
    size_t n = m->naccounts;
    family(b, "tabled_throttled_total", "counter",
           "Requests refused with 503 ServerBusy by the token buckets, by account and bucket.");
    for (size_t i = 0; i < n; i++) {
        for (int s = 0; s < 2; s++) {
            buf_puts(b, "tabled_throttled_total{account=\"");
            label_value(b, m->accounts[i].name);
            buf_printf(b, "\",scope=\"%s\"} %llu\n", s == 0 ? "partition" : "account",
                       (unsigned long long)m->throttled[i][s]);
        }
    }
    family(b, "tabled_faults_injected_total", "counter",
           "Faults injected by the fault rules, by account and kind.");
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < METRICS_FAULT_KINDS; k++) {
            buf_puts(b, "tabled_faults_injected_total{account=\"");
            label_value(b, m->accounts[i].name);
            buf_printf(b, "\",kind=\"%s\"} %llu\n", fault_names[k],
                       (unsigned long long)m->faults[i][k]);
        }
    }
    if (m->entities_known) {
        family(b, "tabled_entities", "gauge", "Entities stored, by account.");
        for (size_t i = 0; i < n; i++) {
            buf_puts(b, "tabled_entities{account=\"");
            label_value(b, m->accounts[i].name);
            buf_printf(b, "\"} %lld\n", (long long)m->entities[i]);
        }
    }
}

void metrics_render(const struct metrics *m, struct buf *b)
{
    render_requests(m, b);
    render_accounts(m, b);
    family(b, "tabled_backend_apply_duration_seconds", "histogram",
           "Time the backend took to apply one atomic group of writes.");
    hist_series(b, "tabled_backend_apply_duration_seconds", "", &m->apply);
    family(b, "tabled_backend_sync_duration_seconds", "histogram",
           "Time the backend took to make writes durable (group commit or sync).");
    hist_series(b, "tabled_backend_sync_duration_seconds", "", &m->sync);
    family(b, "tabled_open_connections", "gauge", "Open client connections (table endpoints).");
    buf_printf(b, "tabled_open_connections %lld\n", (long long)m->open_conns);
    family(b, "tabled_connections_total", "counter", "Client connections accepted.");
    buf_printf(b, "tabled_connections_total %llu\n", (unsigned long long)m->conns_total);
    family(b, "tabled_purge_tables", "gauge",
           "Deleted tables whose entities are still being removed.");
    buf_printf(b, "tabled_purge_tables %lld\n", (long long)m->purge_tables);
    family(b, "tabled_purged_entities_total", "counter",
           "Entities of deleted tables removed in the background.");
    buf_printf(b, "tabled_purged_entities_total %llu\n", (unsigned long long)m->purged_entities);
    family(b, "tabled_store_writable", "gauge",
           "0 while writes to the store fail (disk full, I/O error) and are retried.");
    buf_printf(b, "tabled_store_writable %d\n", !m->store_failed);
    for (size_t i = 0; i < m->nmore; i++)
        m->more[i].render(m->more[i].arg, b);
}
