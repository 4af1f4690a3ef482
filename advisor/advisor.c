/* advisor.c - the partition advisor's collection: tables, the partition
 * sketch, key order, intervals (see advisor.h). */
#include "advisor/advisor_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/coding.h"

/* ---- life cycle ---- */

struct advisor *advisor_new(const struct advisor_limits *lim, uint64_t now_us)
{
    struct advisor *adv = calloc(1, sizeof *adv);
    if (!adv)
        abort();
    adv->lim = *lim;
    adv->slot_us = (uint64_t)(lim->interval_s * 1e6);
    if (adv->slot_us == 0)
        adv->slot_us = 1;
    adv->start_us = adv->slot_start_us = now_us;
    return adv;
}

void advisor_name_account(struct advisor *adv, unsigned i, const char *name)
{
    if (i < ADVISOR_MAX_ACCOUNTS)
        snprintf(adv->accounts[i], sizeof adv->accounts[i], "%s", name);
}

void advisor_free(struct advisor *adv)
{
    if (!adv)
        return;
    for (size_t i = 0; i < adv->ntables; i++)
        free(adv->tables[i]);
    free(adv);
}

void advisor_reset(struct advisor *adv, uint64_t now_us)
{
    for (size_t i = 0; i < adv->ntables; i++)
        free(adv->tables[i]);
    memset(adv->tables, 0, sizeof adv->tables);
    adv->ntables = 0;
    adv->last = NULL;
    adv->untracked = 0;
    adv->start_us = adv->slot_start_us = now_us;
    adv->slots_done = 0;
}

size_t advisor_memory(const struct advisor *adv)
{
    return sizeof *adv + adv->ntables * sizeof(struct advisor_table);
}

size_t advisor_memory_cap(void)
{
    return sizeof(struct advisor) + ADVISOR_MAX_TABLES * sizeof(struct advisor_table);
}

/* ---- hashing ---- */

/* FNV-1a over s, then a splitmix64 finaliser (the HyperLogLog needs well
 * mixed bits). fold: ASCII case folded (table names). */
static uint64_t hash_bytes(const char *s, size_t n, int fold)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (fold && c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        h = (h ^ c) * 0x100000001b3ULL;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

/* ---- tables ---- */

/* The table of k (created on first sight), or NULL beyond the cap. */
static struct advisor_table *table_of(struct advisor *adv, const struct advisor_key *k)
{
    struct advisor_table *t = adv->last;
    if (t && t->account == k->account && t->name_len == k->table_len &&
        memcmp(t->name, k->table, k->table_len) == 0)
        return t;
    if (!k->table || k->table_len == 0 || k->table_len >= sizeof t->name)
        return NULL;
    uint64_t h = hash_bytes(k->table, k->table_len, 1) ^ k->account;
    for (size_t i = 0; i < adv->ntables; i++) {
        t = adv->tables[i];
        if (t->hash == h && t->account == k->account && t->name_len == k->table_len &&
            strncasecmp(t->name, k->table, k->table_len) == 0)
            return adv->last = t;
    }
    if (adv->ntables == ADVISOR_MAX_TABLES) {
        adv->untracked++;
        return NULL;
    }
    t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->hash = h;
    t->account = k->account;
    memcpy(t->name, k->table, k->table_len);
    t->name_len = k->table_len;
    memset(t->bucket, 0xff, sizeof t->bucket);  /* -1: empty chains */
    adv->tables[adv->ntables++] = t;
    return adv->last = t;
}

/* ---- the partition sketch ---- */

/* Adds hash h to the table's HyperLogLog. */
static void hll_add(struct advisor_table *t, uint64_t h)
{
    unsigned idx = (unsigned)(h & (ADVISOR_HLL - 1));
    uint64_t w = h >> 10;  /* log2(ADVISOR_HLL) bits chose the register */
    uint8_t rank = 1;
    while (rank < 55 && !(w & 1)) {
        w >>= 1;
        rank++;
    }
    if (rank > t->hll[idx])
        t->hll[idx] = rank;
}

/* Unlinks counter i from its hash chain. */
static void chain_remove(struct advisor_table *t, int i)
{
    int16_t *p = &t->bucket[t->part[i].hash % ADVISOR_BUCKETS];
    while (*p >= 0 && *p != i)
        p = &t->part[*p].next;
    if (*p == i)
        *p = t->part[i].next;
}

/* The counter of partition pk, taking over the smallest counter when the
 * sketch is full (Space-Saving: the newcomer inherits its count as error).
 * NULL when pk is NULL. */
static struct advisor_part *part_of(struct advisor_table *t, const char *pk, size_t pk_len)
{
    if (!pk)
        return NULL;
    uint64_t h = hash_bytes(pk, pk_len, 0);
    size_t b = h % ADVISOR_BUCKETS;
    for (int16_t i = t->bucket[b]; i >= 0; i = t->part[i].next)
        if (t->part[i].hash == h)
            return &t->part[i];
    hll_add(t, h);
    int i;
    uint64_t inherit = 0;
    if (t->nparts < ADVISOR_SKETCH) {
        i = t->nparts++;
    } else {
        i = 0;
        for (int j = 1; j < ADVISOR_SKETCH; j++)
            if (t->part[j].count < t->part[i].count)
                i = j;
        inherit = t->part[i].count;
        chain_remove(t, i);
    }
    struct advisor_part *p = &t->part[i];
    memset(p, 0, sizeof *p);
    p->hash = h;
    p->count = p->err = inherit;
    /* cut at a character boundary: the name goes into JSON documents */
    p->name_len = (uint8_t)utf8_cut(pk, pk_len, ADVISOR_NAME_MAX);
    p->truncated = pk_len > p->name_len;
    memcpy(p->name, pk, p->name_len);
    p->next = t->bucket[b];
    t->bucket[b] = (int16_t)i;
    return p;
}

/* Counts n entities of one request on table t and partition p. */
static void count(struct advisor_table *t, struct advisor_part *p, uint64_t n)
{
    t->entities += n;
    t->cur_entities += (uint32_t)n;
    if (p) {
        p->count += n;
        p->slot_count += (uint32_t)n;
    }
}

/* ---- intervals ---- */

/* Moves table t's current interval into ring slot s. */
static void close_slot(struct advisor_table *t, struct advisor_slot *s)
{
    memset(s, 0, sizeof *s);
    s->entities = t->cur_entities;
    s->requests = t->cur_requests;
    memcpy(s->shapes, t->cur_shapes, sizeof s->shapes);
    t->cur_entities = t->cur_requests = 0;
    memset(t->cur_shapes, 0, sizeof t->cur_shapes);
    /* the busiest partitions of the interval, by insertion into top[] */
    for (int i = 0; i < t->nparts; i++) {
        struct advisor_part *p = &t->part[i];
        uint32_t n = p->slot_count;
        if (n > p->peak_slot)
            p->peak_slot = n;
        p->slot_count = 0;
        if (n == 0)
            continue;
        int at = s->ntop;
        while (at > 0 && s->top[at - 1].n < n)
            at--;
        if (at >= ADVISOR_SLOT_TOP)
            continue;
        int last = s->ntop < ADVISOR_SLOT_TOP ? s->ntop : ADVISOR_SLOT_TOP - 1;
        memmove(&s->top[at + 1], &s->top[at], (size_t)(last - at) * sizeof s->top[0]);
        s->top[at].n = n;
        s->top[at].name_len = p->name_len;
        memcpy(s->top[at].name, p->name, p->name_len);
        if (s->ntop < ADVISOR_SLOT_TOP)
            s->ntop++;
    }
}

void advisor_tick(struct advisor *adv, uint64_t now_us)
{
    if (now_us < adv->slot_start_us + adv->slot_us)
        return;
    uint64_t n = (now_us - adv->slot_start_us) / adv->slot_us;
    for (size_t ti = 0; ti < adv->ntables; ti++) {
        struct advisor_table *t = adv->tables[ti];
        close_slot(t, &t->ring[adv->slots_done % ADVISOR_SLOTS]);
        /* idle intervals: empty samples (at most one ring's worth) */
        for (uint64_t k = 1; k < n && k <= ADVISOR_SLOTS; k++)
            close_slot(t, &t->ring[(adv->slots_done + k) % ADVISOR_SLOTS]);
    }
    adv->slots_done += n;
    adv->slot_start_us += n * adv->slot_us;
}

/* ---- recording ---- */

void advisor_read(struct advisor *adv, const struct advisor_key *k, uint64_t now_us)
{
    advisor_tick(adv, now_us);
    struct advisor_table *t = table_of(adv, k);
    if (!t)
        return;
    struct advisor_part *p = part_of(t, k->pk, k->pk_len);
    t->req[ADVISOR_GET]++;
    t->ent[ADVISOR_GET]++;
    t->cur_requests++;
    count(t, p, 1);
    if (p) {
        p->requests++;
        p->reads++;
    }
}

/* Copies pk (at most ADVISOR_KEY_MAX bytes, cut at a character boundary:
 * the bound is shown in GET /advisor) into a key-order bound. */
static void set_bound(char *dst, uint8_t *len, const char *pk, size_t pk_len)
{
    *len = (uint8_t)utf8_cut(pk, pk_len, ADVISOR_KEY_MAX);
    memcpy(dst, pk, *len);
}

/* memcmp order of pk against a kept bound (keys longer than the bound's
 * ADVISOR_KEY_MAX bytes compare by that prefix, cut as set_bound cuts). */
static int bound_cmp(const char *pk, size_t pk_len, const char *b, size_t blen)
{
    size_t n = utf8_cut(pk, pk_len, ADVISOR_KEY_MAX);
    int r = memcmp(pk, b, n < blen ? n : blen);
    return r ? r : (n > blen) - (n < blen);
}

/* Counts interval now_slot (slots_done + 1) once among the intervals in
 * which a key-order bound moved. */
static void moved_in(uint64_t *intervals, uint64_t *last, uint64_t now_slot)
{
    if (*last != now_slot) {
        *last = now_slot;
        (*intervals)++;
    }
}

/* Where a created entity's PartitionKey lies against those seen before;
 * now_slot numbers the current interval (slots_done + 1). */
static void key_order(struct advisor_table *t, const char *pk, size_t pk_len, uint64_t now_slot)
{
    t->creates++;
    if (!t->have_range) {
        t->have_range = 1;
        set_bound(t->min, &t->min_len, pk, pk_len);
        set_bound(t->max, &t->max_len, pk, pk_len);
        t->new_max = t->new_min = 1;
        t->at_end++;
        t->at_start++;
        return;
    }
    int hi = bound_cmp(pk, pk_len, t->max, t->max_len);
    int lo = bound_cmp(pk, pk_len, t->min, t->min_len);
    if (hi >= 0) {
        t->at_end++;
        if (hi > 0) {
            t->new_max++;
            moved_in(&t->max_intervals, &t->max_moved_in, now_slot);
            set_bound(t->max, &t->max_len, pk, pk_len);
        }
    }
    if (lo <= 0) {
        t->at_start++;
        if (lo < 0) {
            t->new_min++;
            moved_in(&t->min_intervals, &t->min_moved_in, now_slot);
            set_bound(t->min, &t->min_len, pk, pk_len);
        }
    }
}

void advisor_write(struct advisor *adv, const struct advisor_key *k, enum advisor_op op,
                   int created, int in_batch, uint64_t now_us)
{
    advisor_tick(adv, now_us);
    struct advisor_table *t = table_of(adv, k);
    if (!t || op >= ADVISOR_OPS)
        return;
    struct advisor_part *p = part_of(t, k->pk, k->pk_len);
    t->ent[op]++;
    if (!in_batch) {
        t->req[op]++;
        t->cur_requests++;
        t->single_writes++;
    }
    count(t, p, 1);
    if (created && k->pk)
        key_order(t, k->pk, k->pk_len, adv->slots_done + 1);
    if (!p)
        return;
    p->writes++;
    if (created)
        p->size++;
    else if (op == ADVISOR_DELETE)
        p->size--;
    if (in_batch)
        return;
    p->requests++;
    p->single_writes++;
    if (p->last_single_us &&
        now_us - p->last_single_us <= (uint64_t)(adv->lim.batch_window_ms * 1000))
        p->stream_writes++;
    p->last_single_us = now_us;
}

void advisor_batch(struct advisor *adv, const struct advisor_key *k, size_t n, uint64_t now_us)
{
    advisor_tick(adv, now_us);
    struct advisor_table *t = table_of(adv, k);
    if (!t)
        return;
    struct advisor_part *p = part_of(t, k->pk, k->pk_len);
    t->req[ADVISOR_BATCH]++;
    t->ent[ADVISOR_BATCH] += n;
    t->cur_requests++;
    t->batches++;
    t->batch_entities += n;
    t->batch_sizes[n <= 1 ? 0 : n <= 10 ? 1 : n <= 50 ? 2 : 3]++;
    if (p)
        p->requests++;
}

/* Copies a $filter text into a fixed field ("" when NULL); a longer one is
 * cut at a character boundary and ends in "...". */
static void keep_filter(char *dst, const char *f, size_t n)
{
    if (!f)
        n = 0;
    if (n >= ADVISOR_FILTER_MAX) {
        size_t k = utf8_cut(f, n, ADVISOR_FILTER_MAX - 4);
        memcpy(dst, f, k);
        memcpy(dst + k, "...", 4);
        return;
    }
    if (n)
        memcpy(dst, f, n);
    dst[n] = '\0';
}

void advisor_query(struct advisor *adv, const struct advisor_key *k, enum advisor_shape shape,
                   uint64_t examined, uint64_t returned, const char *filter, size_t filter_len,
                   uint64_t now_us)
{
    advisor_tick(adv, now_us);
    struct advisor_table *t = table_of(adv, k);
    if (!t || shape >= ADVISOR_SHAPES)
        return;
    int one = shape == ADVISOR_POINT || shape == ADVISOR_PARTITION;
    struct advisor_part *p = one ? part_of(t, k->pk, k->pk_len) : NULL;
    t->req[ADVISOR_QUERY]++;
    t->ent[ADVISOR_QUERY] += returned;
    t->cur_requests++;
    t->cur_shapes[shape]++;
    struct advisor_qstat *q = &t->shape[shape];
    q->n++;
    q->examined += examined;
    q->returned += returned;
    /* a query costs its partition what it read (at least one) */
    count(t, p, examined ? examined : 1);
    if (p) {
        p->requests++;
        p->reads += examined;
    }
    if (shape != ADVISOR_POINT)
        keep_filter(t->example[shape], filter, filter_len);
    double ratio = (double)examined / (double)(returned ? returned : 1);
    if (shape != ADVISOR_POINT && examined > 0 &&
        (ratio > t->worst.ratio || (ratio == t->worst.ratio && examined > t->worst.examined))) {
        t->worst.ratio = ratio;
        t->worst.shape = shape;
        t->worst.examined = examined;
        t->worst.returned = returned;
        keep_filter(t->worst.filter, filter, filter_len);
    }
}

void advisor_throttled(struct advisor *adv, const struct advisor_key *k, uint64_t now_us)
{
    advisor_tick(adv, now_us);
    struct advisor_table *t = table_of(adv, k);
    if (!t)
        return;
    if (!k->pk) {
        t->throttled_account++;
        return;
    }
    struct advisor_part *p = part_of(t, k->pk, k->pk_len);
    t->throttled++;
    if (p)
        p->throttled++;
}

/* ---- names ---- */

const char *advisor_kind_name(enum advisor_kind k)
{
    static const char *const n[ADVISOR_KINDS] = {
        "hot-partition", "append-only", "prepend", "table-scan", "low-query-efficiency",
        "oversized-partition", "unbatched-writes", "throttled",
    };
    return k < ADVISOR_KINDS ? n[k] : "?";
}

const char *advisor_severity_name(enum advisor_severity s)
{
    return s == ADVISOR_CRITICAL ? "critical" : s == ADVISOR_WARNING ? "warning" : "info";
}

const char *advisor_shape_name(enum advisor_shape s)
{
    static const char *const n[ADVISOR_SHAPES] = {"point", "partition", "range", "scan"};
    return s < ADVISOR_SHAPES ? n[s] : "?";
}

const char *advisor_op_name(enum advisor_op op)
{
    static const char *const n[ADVISOR_OPS] = {"get", "query", "insert", "update",
                                               "upsert", "delete", "batch"};
    return op < ADVISOR_OPS ? n[op] : "?";
}
