/* advisor_json.c - GET /advisor's JSON document and the advisor's
 * Prometheus series (see advisor.h; the schema is in README "Partition
 * advisor"). */
#include "advisor/advisor_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonout.h"

/* Partitions listed per table, busiest first. */
#define JSON_PARTITIONS 20

/* Bytes of the well-formed UTF-8 character at u[0..n) (lead byte >= 0x80:
 * 2..4), or 0 when it is not one (bad lead, missing or bad continuation,
 * overlong form, surrogate, above U+10FFFF). */
static size_t utf8_char_len(const unsigned char *u, size_t n)
{
    size_t len = u[0] >= 0xC2 && u[0] <= 0xDF ? 2 : u[0] >= 0xE0 && u[0] <= 0xEF ? 3
                 : u[0] >= 0xF0 && u[0] <= 0xF4 ? 4 : 0;
    if (!len || n < len)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((u[i] & 0xC0) != 0x80)
            return 0;
    if ((u[0] == 0xE0 && u[1] < 0xA0) || (u[0] == 0xED && u[1] > 0x9F) ||
        (u[0] == 0xF0 && u[1] < 0x90) || (u[0] == 0xF4 && u[1] > 0x8F))
        return 0;
    return len;
}

/* The kept names are cut at character boundaries (advisor.c); a byte that
 * is not part of well-formed UTF-8 all the same becomes U+FFFD, so that
 * the document is always valid JSON for strict readers. */
void advisor_json_string(struct buf *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    size_t run = 0;   /* start of the well-formed bytes not yet written */
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x80)
            continue;
        size_t len = utf8_char_len((const unsigned char *)s + i, n - i);
        if (len) {
            i += len - 1;
            continue;
        }
        json_escape(b, s + run, i - run);   /* the escaper: core/jsonout.h */
        buf_puts(b, "\\ufffd");
        run = i + 1;
    }
    json_escape(b, s + run, n - run);
    buf_putc(b, '"');
}

static void jstr(struct buf *b, const char *s)
{
    advisor_json_string(b, s, strlen(s));
}

/* A finite double as JSON (3 decimals at most). */
static void jnum(struct buf *b, double v)
{
    if (!(v == v) || v > 1e300 || v < -1e300)
        v = 0;
    if (v == (double)(long long)v)
        buf_printf(b, "%lld", (long long)v);
    else
        buf_printf(b, "%.3f", v);
}

static const char *account_name(const struct advisor *adv, unsigned a)
{
    return a < ADVISOR_MAX_ACCOUNTS && adv->accounts[a][0] ? adv->accounts[a] : "?";
}

static void finding_json(const struct advisor *adv, const struct advisor_finding *x,
                         struct buf *b)
{
    buf_puts(b, "{\"kind\":");
    jstr(b, advisor_kind_name(x->kind));
    buf_puts(b, ",\"severity\":");
    jstr(b, advisor_severity_name(x->severity));
    buf_puts(b, ",\"account\":");
    jstr(b, account_name(adv, x->account));
    buf_puts(b, ",\"table\":");
    jstr(b, x->table);
    buf_puts(b, ",\"partition\":");
    if (x->has_partition)
        jstr(b, x->partition);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"value\":");
    jnum(b, x->value);
    buf_puts(b, ",\"threshold\":");
    jnum(b, x->threshold);
    buf_puts(b, ",\"summary\":");
    jstr(b, x->summary);
    buf_puts(b, ",\"reason\":");
    jstr(b, x->reason);
    buf_puts(b, ",\"fix\":");
    jstr(b, x->fix);
    buf_putc(b, '}');
}

/* qsort order of counter indexes: busiest first (sort_table names the
 * table being sorted; single-threaded). */
static const struct advisor_table *sort_table;
static int cmp_parts(const void *a, const void *b)
{
    uint64_t x = sort_table->part[*(const int *)a].count;
    uint64_t y = sort_table->part[*(const int *)b].count;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void part_json(const struct advisor *adv, const struct advisor_table *t,
                      const struct advisor_part *p, struct buf *b)
{
    buf_puts(b, "{\"pk\":");
    advisor_json_string(b, p->name, p->name_len);
    buf_printf(b, ",\"truncated\":%s,\"entities\":%llu,\"error\":%llu,\"share\":",
               p->truncated ? "true" : "false", (unsigned long long)p->count,
               (unsigned long long)p->err);
    jnum(b, t->entities ? (double)p->count / (double)t->entities : 0);
    buf_printf(b,
               ",\"requests\":%llu,\"reads\":%llu,\"writes\":%llu,\"single_writes\":%llu,"
               "\"stream_writes\":%llu,\"throttled\":%llu,\"size_change\":%lld,"
               "\"peak_per_s\":",
               (unsigned long long)p->requests, (unsigned long long)p->reads,
               (unsigned long long)p->writes, (unsigned long long)p->single_writes,
               (unsigned long long)p->stream_writes, (unsigned long long)p->throttled,
               (long long)p->size);
    uint32_t peak = p->peak_slot > p->slot_count ? p->peak_slot : p->slot_count;
    jnum(b, peak / adv->lim.interval_s);
    buf_putc(b, '}');
}

/* HyperLogLog estimate of the distinct partitions (with the small-range
 * correction). */
static double distinct(const struct advisor_table *t)
{
    double m = ADVISOR_HLL, sum = 0;
    int zeros = 0;
    for (int i = 0; i < ADVISOR_HLL; i++) {
        sum += 1.0 / (double)(1ULL << t->hll[i]);
        zeros += t->hll[i] == 0;
    }
    double e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    if (e <= 2.5 * m && zeros) {
        e = m * log(m / zeros);
    }
    return e;
}

static void table_json(const struct advisor *adv, const struct advisor_table *t, struct buf *b)
{
    buf_puts(b, "{\"account\":");
    jstr(b, account_name(adv, t->account));
    buf_puts(b, ",\"table\":");
    advisor_json_string(b, t->name, t->name_len);
    buf_printf(b, ",\"entities\":%llu,\"requests\":{", (unsigned long long)t->entities);
    for (int i = 0; i < ADVISOR_OPS; i++)
        buf_printf(b, "%s\"%s\":%llu", i ? "," : "", advisor_op_name(i),
                   (unsigned long long)t->req[i]);
    buf_puts(b, "},\"operation_entities\":{");
    for (int i = 0; i < ADVISOR_OPS; i++)
        buf_printf(b, "%s\"%s\":%llu", i ? "," : "", advisor_op_name(i),
                   (unsigned long long)t->ent[i]);
    buf_puts(b, "},\"queries\":{");
    for (int i = 0; i < ADVISOR_SHAPES; i++) {
        const struct advisor_qstat *q = &t->shape[i];
        buf_printf(b, "%s\"%s\":{\"count\":%llu,\"examined\":%llu,\"returned\":%llu,\"last_filter\":",
                   i ? "," : "", advisor_shape_name(i), (unsigned long long)q->n,
                   (unsigned long long)q->examined, (unsigned long long)q->returned);
        if (i == ADVISOR_POINT || !q->n)
            buf_puts(b, "null");
        else
            jstr(b, t->example[i]);
        buf_putc(b, '}');
    }
    buf_printf(b,
               "},\"batches\":{\"count\":%llu,\"entities\":%llu,\"sizes\":{\"1\":%llu,"
               "\"2-10\":%llu,\"11-50\":%llu,\"51-100\":%llu}},\"single_writes\":%llu,"
               "\"throttled\":{\"partition\":%llu,\"account\":%llu},",
               (unsigned long long)t->batches, (unsigned long long)t->batch_entities,
               (unsigned long long)t->batch_sizes[0], (unsigned long long)t->batch_sizes[1],
               (unsigned long long)t->batch_sizes[2], (unsigned long long)t->batch_sizes[3],
               (unsigned long long)t->single_writes, (unsigned long long)t->throttled,
               (unsigned long long)t->throttled_account);
    buf_printf(b,
               "\"key_order\":{\"creates\":%llu,\"at_end\":%llu,\"new_max\":%llu,"
               "\"max_intervals\":%llu,\"at_start\":%llu,\"new_min\":%llu,"
               "\"min_intervals\":%llu,\"min\":",
               (unsigned long long)t->creates, (unsigned long long)t->at_end,
               (unsigned long long)t->new_max, (unsigned long long)t->max_intervals,
               (unsigned long long)t->at_start, (unsigned long long)t->new_min,
               (unsigned long long)t->min_intervals);
    if (t->have_range) {
        advisor_json_string(b, t->min, t->min_len);
        buf_puts(b, ",\"max\":");
        advisor_json_string(b, t->max, t->max_len);
    } else {
        buf_puts(b, "null,\"max\":null");
    }
    buf_puts(b, "},\"partitions_estimate\":");
    jnum(b, (double)(long long)(distinct(t) + 0.5));
    /* busiest partitions, and what the rest add up to */
    int idx[ADVISOR_SKETCH];
    for (int i = 0; i < t->nparts; i++)
        idx[i] = i;
    sort_table = t;
    qsort(idx, (size_t)t->nparts, sizeof idx[0], cmp_parts);
    uint64_t listed = 0;
    buf_puts(b, ",\"partitions\":[");
    for (int i = 0; i < t->nparts && i < JSON_PARTITIONS; i++) {
        if (i)
            buf_putc(b, ',');
        part_json(adv, t, &t->part[idx[i]], b);
        listed += t->part[idx[i]].count - t->part[idx[i]].err;  /* counted for sure */
    }
    buf_printf(b, "],\"other_entities\":%llu,\"history\":[",
               (unsigned long long)(t->entities > listed ? t->entities - listed : 0));
    uint64_t n = adv->slots_done < ADVISOR_SLOTS ? adv->slots_done : ADVISOR_SLOTS;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t seq = adv->slots_done - n + k;
        const struct advisor_slot *s = &t->ring[seq % ADVISOR_SLOTS];
        buf_printf(b, "%s{\"seq\":%llu,\"entities\":%u,\"requests\":%u,\"shapes\":[%u,%u,%u,%u],"
                      "\"top\":[",
                   k ? "," : "", (unsigned long long)seq, s->entities, s->requests,
                   s->shapes[0], s->shapes[1], s->shapes[2], s->shapes[3]);
        for (int i = 0; i < s->ntop; i++) {
            buf_puts(b, i ? ",[" : "[");
            advisor_json_string(b, s->top[i].name, s->top[i].name_len);
            buf_printf(b, ",%u]", s->top[i].n);
        }
        buf_puts(b, "]}");
    }
    buf_puts(b, "]}");
}

void advisor_json(struct advisor *adv, uint64_t now_us, struct buf *b)
{
    struct advisor_finding *found = adv->found;
    size_t nf = advisor_findings(adv, now_us, found, ADVISOR_MAX_FINDINGS);
    const struct advisor_limits *L = &adv->lim;
    buf_puts(b, "{\"version\":1,\"interval_s\":");
    jnum(b, L->interval_s);
    buf_printf(b, ",\"elapsed_s\":");
    jnum(b, (double)(now_us - adv->start_us) / 1e6);
    buf_printf(b, ",\"slots_done\":%llu,\"memory_bytes\":%zu,\"memory_cap_bytes\":%zu,"
                  "\"untracked_operations\":%llu,\"thresholds\":{",
               (unsigned long long)adv->slots_done, advisor_memory(adv), advisor_memory_cap(),
               (unsigned long long)adv->untracked);
    for (size_t i = 0; i < advisor_limit_count(); i++) {
        buf_printf(b, "%s\"%s\":", i ? "," : "", advisor_limit_name(i));
        jnum(b, advisor_limit_value(L, i));
    }
    buf_puts(b, "},\"counts\":{");
    int sev[3] = {0, 0, 0};
    for (size_t i = 0; i < nf; i++)
        sev[found[i].severity]++;
    buf_printf(b, "\"info\":%d,\"warning\":%d,\"critical\":%d},\"findings\":[", sev[0], sev[1],
               sev[2]);
    for (size_t i = 0; i < nf; i++) {
        if (i)
            buf_putc(b, ',');
        finding_json(adv, &found[i], b);
    }
    buf_puts(b, "],\"tables\":[");
    for (size_t i = 0; i < adv->ntables; i++) {
        if (i)
            buf_putc(b, ',');
        table_json(adv, adv->tables[i], b);
    }
    buf_puts(b, "]}\n");
}

void advisor_metrics(struct advisor *adv, uint64_t now_us, struct buf *b)
{
    struct advisor_finding *found = adv->found;
    size_t nf = advisor_findings(adv, now_us, found, ADVISOR_MAX_FINDINGS);
    buf_puts(b, "# HELP tabled_advisor_findings Findings of the partition advisor, by kind and "
                "severity.\n# TYPE tabled_advisor_findings gauge\n");
    for (int k = 0; k < ADVISOR_KINDS; k++) {
        for (int s = ADVISOR_INFO; s <= ADVISOR_CRITICAL; s++) {
            int n = 0;
            for (size_t i = 0; i < nf; i++)
                n += found[i].kind == (enum advisor_kind)k &&
                     found[i].severity == (enum advisor_severity)s;
            buf_printf(b, "tabled_advisor_findings{kind=\"%s\",severity=\"%s\"} %d\n",
                       advisor_kind_name(k), advisor_severity_name(s), n);
        }
    }
    buf_printf(b, "# HELP tabled_advisor_memory_bytes Memory held by the partition advisor.\n"
                  "# TYPE tabled_advisor_memory_bytes gauge\ntabled_advisor_memory_bytes %zu\n",
               advisor_memory(adv));
    buf_printf(b, "# HELP tabled_advisor_tables Tables tracked by the partition advisor.\n"
                  "# TYPE tabled_advisor_tables gauge\ntabled_advisor_tables %zu\n",
               adv->ntables);
}

void advisor_render_metrics(void *arg, struct buf *out)
{
    advisor_metrics(arg, clock_mono_us(), out);
}
