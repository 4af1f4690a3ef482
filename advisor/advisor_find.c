/* advisor_find.c - the partition advisor's findings: each pattern of the
 * service's scalability guidance checked against the counts of advisor.c,
 * with its evidence, the reason in the service's terms and the fix the
 * guidance suggests (see advisor.h). */
#include "advisor/advisor_int.h"

#include <stdio.h>
#include <string.h>

#include "core/coding.h"

/* The reasons and fixes, after the service's documentation: "Scalability
 * and performance targets for Table storage", "Design for querying",
 * "Table design patterns" (prepend/append anti-pattern, high volume
 * writes), "Design for data modification" (entity group transactions). */
static const char *const reasons[ADVISOR_KINDS] = {
    [ADVISOR_HOT_PARTITION] =
        "The service serves each partition from one partition server: the target for a "
        "single partition is about 2,000 entities per second (1 KiB entities). Traffic "
        "concentrated on one PartitionKey cannot be spread over more servers, and past "
        "the target the service answers 503 Server Busy.",
    [ADVISOR_APPEND_ONLY] =
        "Prepend/append anti-pattern: when each new PartitionKey sorts after all existing "
        "ones (keys made from the current time or a counter), every insert goes to the "
        "partition at the end of the key range. The service cannot spread those inserts "
        "over partition servers, so write throughput stays that of one partition.",
    [ADVISOR_PREPEND] =
        "Prepend/append anti-pattern: when each new PartitionKey sorts before all existing "
        "ones (reverse ticks, descending counters), every insert goes to the partition at "
        "the start of the key range. The service cannot spread those inserts over "
        "partition servers, so write throughput stays that of one partition.",
    [ADVISOR_TABLE_SCAN] =
        "Design for querying: a query that names no PartitionKey is a table scan, the least "
        "efficient kind. It reads every partition in order, at most 1,000 entities per "
        "page and round trip, and gets slower as the table grows.",
    [ADVISOR_LOW_EFFICIENCY] =
        "The service reads every entity of the key range a query names and filters the "
        "others out on the server: entities examined but not returned cost time and "
        "count against the partition's throughput, and long pages end early with a "
        "continuation token.",
    [ADVISOR_OVERSIZED] =
        "A partition is served by one partition server whatever its size: all its "
        "entities share one partition's target of about 2,000 entities per second, and "
        "a query over the whole partition reads it page by page.",
    [ADVISOR_UNBATCHED] =
        "An entity group transaction carries up to 100 inserts, updates and deletes of one "
        "partition in one request, atomically. A stream of single writes to one partition "
        "costs a request each, against the account's 20,000 requests per second and the "
        "client's round trips.",
    [ADVISOR_THROTTLED] =
        "The service answers 503 Server Busy when a partition or the account goes past its "
        "scalability target (about 2,000 entities/s per partition, 20,000 per account); "
        "in production these requests fail or are retried.",
};

static const char *const fixes[ADVISOR_KINDS] = {
    [ADVISOR_HOT_PARTITION] =
        "Spread the load over more partitions: derive the PartitionKey from a value with "
        "many distinct, evenly used values, or prefix it with a hash bucket "
        "(hash(id) % N + \"_\" + id); keep together in one partition only what must be "
        "changed in one batch.",
    [ADVISOR_APPEND_ONLY] =
        "Prefix the PartitionKey with a hash bucket or another well-spread value "
        "(\"07_2024-05-01T10\") so inserts land on many partitions; keep the time in the "
        "RowKey.",
    [ADVISOR_PREPEND] =
        "Prefix the PartitionKey with a hash bucket or another well-spread value so inserts "
        "land on many partitions; keep the (reverse) time in the RowKey.",
    [ADVISOR_TABLE_SCAN] =
        "Add the PartitionKey (and RowKey) to the filter: point queries and partition "
        "queries are the efficient kinds. To find entities by another property, store "
        "index entities keyed by it (secondary index patterns).",
    [ADVISOR_LOW_EFFICIENCY] =
        "Narrow the key range: move the property you filter on into the RowKey (or into "
        "index entities), so that the filter becomes a PartitionKey and RowKey range.",
    [ADVISOR_OVERSIZED] =
        "Split the partition: add a bucket or time component to its PartitionKey "
        "(\"customer42_2024-05\"), keeping together only the entities changed in one batch "
        "or read together.",
    [ADVISOR_UNBATCHED] =
        "Group writes to the same PartitionKey into batches (submit_transaction, "
        "SubmitTransactionAsync) of up to 100 operations and 4 MiB.",
    [ADVISOR_THROTTLED] =
        "Retry with exponential backoff, and spread the load over more partitions (see "
        "hot partition); for the account target, over more storage accounts.",
};

/* The findings being built. */
struct found {
    struct advisor_finding *out;
    size_t cap, n;
    const struct advisor *adv;
};

/* Prints a key for a summary: the kept bytes, "..." when cut. */
static const char *shown(char *tmp, size_t cap, const char *s, size_t n, int cut)
{
    snprintf(tmp, cap, "%.*s%s", (int)n, s, cut ? "..." : "");
    return tmp;
}

/* Starts a finding for table t (partition p may be NULL); NULL when full. */
static struct advisor_finding *add(struct found *f, enum advisor_kind kind,
                                   enum advisor_severity sev, const struct advisor_table *t,
                                   const char *pk, size_t pk_len, int cut, double value,
                                   double threshold)
{
    if (f->n == f->cap)
        return NULL;
    struct advisor_finding *x = &f->out[f->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->severity = sev;
    x->account = t->account;
    snprintf(x->table, sizeof x->table, "%.*s", (int)t->name_len, t->name);
    if (pk) {
        x->has_partition = 1;
        shown(x->partition, sizeof x->partition, pk, pk_len, cut);
    }
    x->value = value;
    x->threshold = threshold;
    x->reason = reasons[kind];
    x->fix = fixes[kind];
    return x;
}

/* Entities/s of p's busiest interval (the current one counts as a full
 * interval: a lower bound of its rate). */
static double peak_rate(const struct advisor *adv, const struct advisor_part *p)
{
    uint32_t n = p->peak_slot > p->slot_count ? p->peak_slot : p->slot_count;
    return n / adv->lim.interval_s;
}

static void hot_partitions(struct found *f, const struct advisor_table *t)
{
    const struct advisor_limits *L = &f->adv->lim;
    for (int i = 0; i < t->nparts; i++) {
        const struct advisor_part *p = &t->part[i];
        double share = t->entities ? (double)p->count / (double)t->entities : 0;
        double rate = peak_rate(f->adv, p);
        int hot = share >= L->hot_share && t->entities >= L->hot_min_entities;
        if (!hot && rate < L->target)
            continue;
        struct advisor_finding *x =
            add(f, ADVISOR_HOT_PARTITION, rate >= L->target ? ADVISOR_CRITICAL : ADVISOR_WARNING,
                t, p->name, p->name_len, p->truncated, share, L->hot_share);
        if (!x)
            return;
        snprintf(x->summary, sizeof x->summary,
                 "Partition '%s' of table %s took %.0f%% of the table's traffic (%llu of %llu "
                 "entities read or written). Its busiest %gs interval ran at %.0f entities/s, "
                 "%.0f%% of the %.0f entities/s partition target.",
                 x->partition, x->table, share * 100, (unsigned long long)p->count,
                 (unsigned long long)t->entities, L->interval_s, rate, rate * 100 / L->target,
                 L->target);
    }
}

static void key_order(struct found *f, const struct advisor_table *t)
{
    const struct advisor_limits *L = &f->adv->lim;
    if (t->creates < L->append_min_creates)
        return;
    for (int end = 1; end >= 0; end--) {
        uint64_t at = end ? t->at_end : t->at_start;
        uint64_t moved = end ? t->new_max : t->new_min;
        uint64_t spread = end ? t->max_intervals : t->min_intervals;
        double share = (double)at / (double)t->creates;
        /* a sorted bulk load moves the bound in a few intervals only: the
         * pattern must go on (append-min-intervals) to be one */
        if (share < L->append_share || moved < L->append_min_keys ||
            spread < L->append_min_intervals)
            continue;
        const char *k = end ? t->max : t->min;
        size_t kl = end ? t->max_len : t->min_len;
        size_t shown_len = utf8_cut(k, kl, ADVISOR_NAME_MAX);
        struct advisor_finding *x =
            add(f, end ? ADVISOR_APPEND_ONLY : ADVISOR_PREPEND, ADVISOR_WARNING, t, k,
                shown_len, kl > shown_len, share, L->append_share);
        if (!x)
            return;
        snprintf(x->summary, sizeof x->summary,
                 "%.0f%% of the entities created in table %s (%llu of %llu) had a PartitionKey "
                 "%s every key seen before; the %s PartitionKey changed %llu times, in %llu "
                 "intervals of %gs, now '%s'.",
                 share * 100, x->table, (unsigned long long)at,
                 (unsigned long long)t->creates, end ? "at or after" : "at or before",
                 end ? "largest" : "smallest", (unsigned long long)moved,
                 (unsigned long long)spread, L->interval_s, x->partition);
    }
}

static void queries(struct found *f, const struct advisor_table *t)
{
    const struct advisor_limits *L = &f->adv->lim;
    const struct advisor_qstat *s = &t->shape[ADVISOR_SCAN];
    struct advisor_finding *x;
    if (s->n >= L->scan_min &&
        (x = add(f, ADVISOR_TABLE_SCAN, ADVISOR_WARNING, t, NULL, 0, 0, (double)s->n,
                 L->scan_min))) {
        snprintf(x->summary, sizeof x->summary,
                 "%llu queries on table %s named no PartitionKey and scanned the table "
                 "(%llu entities examined, %llu returned); last: %s%s.",
                 (unsigned long long)s->n, x->table, (unsigned long long)s->examined,
                 (unsigned long long)s->returned,
                 t->example[ADVISOR_SCAN][0] ? "$filter=" : "(no $filter)",
                 t->example[ADVISOR_SCAN]);
    }
    uint64_t ex = 0, ret = 0;
    for (int i = ADVISOR_PARTITION; i < ADVISOR_SHAPES; i++) {
        ex += t->shape[i].examined;
        ret += t->shape[i].returned;
    }
    double ratio = (double)ex / (double)(ret ? ret : 1);
    if (ex >= L->efficiency_min_examined && ratio >= L->efficiency_ratio &&
        (x = add(f, ADVISOR_LOW_EFFICIENCY, ADVISOR_WARNING, t, NULL, 0, 0, ratio,
                 L->efficiency_ratio))) {
        snprintf(x->summary, sizeof x->summary,
                 "Queries on table %s examined %llu entities to return %llu (%.0f examined "
                 "per entity returned). Least efficient: %s query, %llu examined, %llu "
                 "returned, $filter=%s.",
                 x->table, (unsigned long long)ex, (unsigned long long)ret, ratio,
                 advisor_shape_name(t->worst.shape), (unsigned long long)t->worst.examined,
                 (unsigned long long)t->worst.returned, t->worst.filter);
    }
}

static void partitions(struct found *f, const struct advisor_table *t)
{
    const struct advisor_limits *L = &f->adv->lim;
    for (int i = 0; i < t->nparts; i++) {
        const struct advisor_part *p = &t->part[i];
        struct advisor_finding *x;
        if ((double)p->size >= L->partition_entities &&
            (x = add(f, ADVISOR_OVERSIZED, ADVISOR_WARNING, t, p->name, p->name_len,
                     p->truncated, (double)p->size, L->partition_entities))) {
            snprintf(x->summary, sizeof x->summary,
                     "Partition '%s' of table %s grew by %lld entities while watched (more "
                     "than %.0f).",
                     x->partition, x->table, (long long)p->size, L->partition_entities);
        }
        if ((double)p->stream_writes >= L->batch_min_writes &&
            p->stream_writes * 2 >= p->writes &&
            (x = add(f, ADVISOR_UNBATCHED, ADVISOR_INFO, t, p->name, p->name_len, p->truncated,
                     (double)p->stream_writes, L->batch_min_writes))) {
            snprintf(x->summary, sizeof x->summary,
                     "Partition '%s' of table %s received %llu single-entity writes, each "
                     "within %.0f ms of the one before (%llu writes in all, %llu in "
                     "batches).",
                     x->partition, x->table, (unsigned long long)p->stream_writes,
                     L->batch_window_ms, (unsigned long long)p->writes,
                     (unsigned long long)(p->writes - p->single_writes));
        }
        if ((double)p->throttled >= L->throttle_min &&
            (x = add(f, ADVISOR_THROTTLED, ADVISOR_CRITICAL, t, p->name, p->name_len,
                     p->truncated, (double)p->throttled, L->throttle_min))) {
            snprintf(x->summary, sizeof x->summary,
                     "Requests to partition '%s' of table %s were refused %llu times with 503 "
                     "Server Busy (partition target).",
                     x->partition, x->table, (unsigned long long)p->throttled);
        }
    }
    struct advisor_finding *x;
    if ((double)t->throttled_account >= L->throttle_min &&
        (x = add(f, ADVISOR_THROTTLED, ADVISOR_CRITICAL, t, NULL, 0, 0,
                 (double)t->throttled_account, L->throttle_min))) {
        snprintf(x->summary, sizeof x->summary,
                 "Requests to table %s were refused %llu times with 503 Server Busy (account "
                 "target).",
                 x->table, (unsigned long long)t->throttled_account);
    }
}

size_t advisor_findings(struct advisor *adv, uint64_t now_us, struct advisor_finding *out,
                        size_t cap)
{
    advisor_tick(adv, now_us);
    struct found f = {out, cap, 0, adv};
    for (size_t i = 0; i < adv->ntables; i++) {
        const struct advisor_table *t = adv->tables[i];
        hot_partitions(&f, t);
        key_order(&f, t);
        queries(&f, t);
        partitions(&f, t);
    }
    /* most severe first, then by kind (hot partitions first), stable */
    for (size_t i = 1; i < f.n; i++) {
        struct advisor_finding x = out[i];
        size_t j = i;
        while (j > 0 && (out[j - 1].severity < x.severity ||
                         (out[j - 1].severity == x.severity && out[j - 1].kind > x.kind))) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return f.n;
}
