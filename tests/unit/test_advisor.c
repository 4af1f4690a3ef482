/* test_advisor.c - the partition advisor (advisor/advisor.h) driven directly
 * with synthetic workloads and a synthetic clock: each pattern gives its
 * finding naming the right table and partition, a well-spread workload
 * gives none, thresholds apply, the JSON is well formed, and memory stays
 * at its cap with 1,000,000 distinct partitions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "advisor/advisor.h"
#include "tap.h"

/* Stated cap of the advisor's memory (README "Partition advisor"). */
#define STATED_CAP (2u << 20)

static uint64_t now = 1000000;

static struct advisor_key key(const char *table, const char *pk)
{
    struct advisor_key k = {0, table, strlen(table), pk, pk ? strlen(pk) : 0};
    return k;
}

static struct advisor *fresh(const char *const *specs)
{
    struct advisor_limits lim;
    advisor_limits_default(&lim);
    char err[256];
    for (; specs && *specs; specs++)
        if (advisor_limit_set(&lim, *specs, err, sizeof err) != 0)
            printf("# bad spec %s: %s\n", *specs, err);
    struct advisor *a = advisor_new(&lim, now);
    advisor_name_account(a, 0, "devstoreaccount1");
    return a;
}

static struct advisor_finding found[ADVISOR_MAX_FINDINGS];

/* Index of the finding of kind in table (and partition, unless NULL), or -1. */
static int find(struct advisor *a, enum advisor_kind kind, const char *table, const char *pk,
                size_t *nout)
{
    size_t n = advisor_findings(a, now, found, ADVISOR_MAX_FINDINGS);
    if (nout)
        *nout = n;
    for (size_t i = 0; i < n; i++)
        if (found[i].kind == kind && strcmp(found[i].table, table) == 0 &&
            (!pk || (found[i].has_partition && strcmp(found[i].partition, pk) == 0)))
            return (int)i;
    return -1;
}

static void test_limits(void)
{
    struct advisor_limits lim;
    char err[256];
    advisor_limits_default(&lim);
    TEST_CHECK(lim.target == 2000 && lim.hot_share == 0.5, "defaults: 2,000/s target, 50% share");
    TEST_EQ_INT(advisor_limit_set(&lim, "hot-share=0.7", err, sizeof err), 0, "hot-share=0.7");
    TEST_CHECK(lim.hot_share == 0.7, "hot-share applied");
    TEST_EQ_INT(advisor_limit_set(&lim, "batch-window-ms=250", err, sizeof err), 0,
                "batch-window-ms=250");
    TEST_CHECK(lim.batch_window_ms == 250, "batch-window-ms applied");
    TEST_EQ_INT(advisor_limit_set(&lim, "hot-share=2", err, sizeof err), -1, "out of range refused");
    TEST_CHECK(strstr(err, "hot-share") != NULL, "message names the threshold");
    TEST_EQ_INT(advisor_limit_set(&lim, "nope=1", err, sizeof err), -1, "unknown name refused");
    TEST_EQ_INT(advisor_limit_set(&lim, "target", err, sizeof err), -1, "missing value refused");
    TEST_EQ_INT(advisor_limit_set(&lim, "target=12x", err, sizeof err), -1, "junk refused");
}

/* Hash-spread keys, point reads, partition queries, batched writes. */
static void test_healthy(void)
{
    struct advisor *a = fresh(NULL);
    char pk[32], rk[32];
    for (int round = 0; round < 50; round++) {
        for (int p = 0; p < 64; p++) {
            snprintf(pk, sizeof pk, "%08x", (unsigned)(p * 2654435761u));
            struct advisor_key k = key("orders", pk);
            for (int r = 0; r < 10; r++) {
                snprintf(rk, sizeof rk, "%d-%d", round, r);
                advisor_write(a, &k, ADVISOR_INSERT, 1, 1, now);
            }
            advisor_batch(a, &k, 10, now);
            advisor_read(a, &k, now);
            advisor_query(a, &k, ADVISOR_PARTITION, 10, 10, "PartitionKey eq 'x'", 19, now);
            now += 100;
        }
    }
    size_t n = advisor_findings(a, now, found, ADVISOR_MAX_FINDINGS);
    TEST_EQ_INT(n, 0, "a well-spread workload has no findings");
    for (size_t i = 0; i < n; i++)
        printf("#   %s %s: %s\n", advisor_kind_name(found[i].kind), found[i].table,
               found[i].summary);
    advisor_free(a);
}

static void test_hot(void)
{
    const char *specs[] = {"hot-min-entities=500", NULL};
    struct advisor *a = fresh(specs);
    char pk[32];
    for (int i = 0; i < 1000; i++) {
        struct advisor_key hot = key("events", "tenant-1");
        advisor_read(a, &hot, now);
        snprintf(pk, sizeof pk, "tenant-%d", 2 + i % 40);
        struct advisor_key other = key("events", pk);
        if (i % 3 == 0)
            advisor_read(a, &other, now);
        now += 5000;  /* 200 reads/s of the hot partition */
    }
    size_t n;
    int i = find(a, ADVISOR_HOT_PARTITION, "events", "tenant-1", &n);
    TEST_CHECK(i >= 0, "hot partition found, naming events/tenant-1");
    if (i >= 0) {
        TEST_EQ_INT(found[i].severity, ADVISOR_WARNING, "below the target: a warning");
        TEST_CHECK(strstr(found[i].summary, "75% of the table's traffic") != NULL,
                   "evidence: its share of the table");
        TEST_CHECK(strstr(found[i].summary, "2000 entities/s partition target") != NULL,
                   "evidence: entities/s against the target");
        TEST_CHECK(found[i].reason && strstr(found[i].reason, "2,000 entities per second"),
                   "reason in the service's terms");
        TEST_CHECK(found[i].fix && strstr(found[i].fix, "hash bucket"), "fix: hash bucket");
    }
    TEST_EQ_INT(n, 1, "only that finding");
    /* 12,000 entities in one 5 s interval: 2,400/s, above the target */
    now += 10 * 1000000;
    struct advisor_key hot = key("events", "tenant-1");
    for (int j = 0; j < 12000; j++)
        advisor_read(a, &hot, now + (uint64_t)j * 300);
    now += 12000 * 300 + 6000000;
    i = find(a, ADVISOR_HOT_PARTITION, "events", "tenant-1", NULL);
    TEST_CHECK(i >= 0 && found[i].severity == ADVISOR_CRITICAL,
               "above 2,000 entities/s in an interval: critical");
    advisor_free(a);
    /* below hot-min-entities nothing is judged */
    a = fresh(NULL);
    for (int j = 0; j < 900; j++)
        advisor_read(a, &hot, now);
    TEST_CHECK(find(a, ADVISOR_HOT_PARTITION, "events", NULL, NULL) < 0,
               "no hot partition below hot-min-entities (default 1000)");
    advisor_free(a);
}

static void test_key_order(void)
{
    struct advisor *a = fresh(NULL);
    char pk[32];
    for (int i = 0; i < 600; i++) {
        snprintf(pk, sizeof pk, "2024-05-01T10:%05d", i / 5);  /* time-derived keys */
        struct advisor_key k = key("log", pk);
        advisor_write(a, &k, ADVISOR_INSERT, 1, 0, now);
        now += 60000;  /* 36 s: the keys move in 8 intervals of 5 s */
    }
    for (int i = 0; i < 600; i++) {
        snprintf(pk, sizeof pk, "%010d", 1000000 - i);  /* reverse ticks */
        struct advisor_key k = key("rev", pk);
        advisor_write(a, &k, ADVISOR_UPSERT, 1, 0, now);
        now += 60000;
    }
    int i = find(a, ADVISOR_APPEND_ONLY, "log", NULL, NULL);
    TEST_CHECK(i >= 0, "append-only found on table log");
    if (i >= 0)
        TEST_EQ_STR(found[i].partition, "2024-05-01T10:00119", "names the current last partition");
    TEST_CHECK(find(a, ADVISOR_PREPEND, "log", NULL, NULL) < 0, "log: no prepend");
    i = find(a, ADVISOR_PREPEND, "rev", NULL, NULL);
    TEST_CHECK(i >= 0, "prepend found on table rev");
    if (i >= 0)
        TEST_EQ_STR(found[i].partition, "0000999401", "names the current first partition");
    TEST_CHECK(find(a, ADVISOR_APPEND_ONLY, "rev", NULL, NULL) < 0, "rev: no append-only");
    advisor_free(a);
    /* one partition only: hot maybe, never append-only */
    a = fresh(NULL);
    struct advisor_key k = key("one", "same");
    for (int j = 0; j < 600; j++)
        advisor_write(a, &k, ADVISOR_INSERT, 1, 1, now);
    TEST_CHECK(find(a, ADVISOR_APPEND_ONLY, "one", NULL, NULL) < 0,
               "a single partition is not append-only");
    advisor_free(a);
}

/* A seed script: 10,000 entities in 100 batches of sorted keys, once, in
 * 2 s. Its keys move in one or two intervals: not append-only (default
 * append-min-intervals 6); the same keys going on arriving over a minute
 * are. */
static void test_seed_load(void)
{
    struct advisor *a = fresh(NULL);
    char pk[32];
    int i = 0;
    for (int b = 0; b < 100; b++) {
        for (int j = 0; j < 100; j++, i++) {
            snprintf(pk, sizeof pk, "customer-%06d", i / 10);
            struct advisor_key k = key("seed", pk);
            advisor_write(a, &k, ADVISOR_INSERT, 1, 1, now);
        }
        now += 20000;
    }
    for (int r = 0; r < 2000; r++) {  /* then the tests read it */
        snprintf(pk, sizeof pk, "customer-%06d", (r * 7) % 1000);
        struct advisor_key k = key("seed", pk);
        advisor_read(a, &k, now);
        now += 10000;
    }
    TEST_CHECK(find(a, ADVISOR_APPEND_ONLY, "seed", NULL, NULL) < 0,
               "a sorted seed load, once, is not append-only");
    /* sustained: new largest keys in every interval for a minute */
    for (int s = 0; s < 60; s++, i += 10) {
        snprintf(pk, sizeof pk, "customer-%06d", i / 10);
        struct advisor_key k = key("seed", pk);
        advisor_write(a, &k, ADVISOR_INSERT, 1, 0, now);
        now += 1000000;
    }
    TEST_CHECK(find(a, ADVISOR_APPEND_ONLY, "seed", NULL, NULL) >= 0,
               "the same keys moving on over a minute are append-only");
    advisor_free(a);
}

static void test_queries(void)
{
    struct advisor *a = fresh(NULL);
    struct advisor_key k = key("users", NULL);
    for (int i = 0; i < 6; i++)
        advisor_query(a, &k, ADVISOR_SCAN, 400, 2, "Email eq 'a@b.c'", 16, now);
    int i = find(a, ADVISOR_TABLE_SCAN, "users", NULL, NULL);
    TEST_CHECK(i >= 0, "table scans found on users");
    if (i >= 0) {
        TEST_CHECK(strstr(found[i].summary, "Email eq 'a@b.c'") != NULL, "names the query");
        TEST_CHECK(!found[i].has_partition, "per table: no partition");
    }
    i = find(a, ADVISOR_LOW_EFFICIENCY, "users", NULL, NULL);
    TEST_CHECK(i >= 0, "low query efficiency found (2,400 examined, 12 returned)");
    advisor_free(a);
    /* a partition query filtering on a property */
    a = fresh(NULL);
    k = key("users", "de");
    for (int j = 0; j < 4; j++)
        advisor_query(a, &k, ADVISOR_PARTITION, 1000, 3, "Age gt 90", 9, now);
    advisor_query(a, &k, ADVISOR_PARTITION, 100, 100, NULL, 0, now);
    TEST_CHECK(find(a, ADVISOR_TABLE_SCAN, "users", NULL, NULL) < 0, "no table scan");
    i = find(a, ADVISOR_LOW_EFFICIENCY, "users", NULL, NULL);
    TEST_CHECK(i >= 0 && strstr(found[i].summary, "Age gt 90") != NULL,
               "low efficiency names the worst query");
    advisor_free(a);
    /* four scans stay under scan-min (5) */
    a = fresh(NULL);
    k = key("users", NULL);
    for (int j = 0; j < 4; j++)
        advisor_query(a, &k, ADVISOR_SCAN, 10, 10, NULL, 0, now);
    TEST_CHECK(find(a, ADVISOR_TABLE_SCAN, "users", NULL, NULL) < 0, "4 scans: no finding");
    advisor_free(a);
}

static void test_partitions(void)
{
    const char *specs[] = {"partition-entities=300", NULL};
    struct advisor *a = fresh(specs);
    struct advisor_key big = key("docs", "big");
    for (int i = 0; i < 400; i++)
        advisor_write(a, &big, ADVISOR_INSERT, 1, 1, now);
    for (int i = 0; i < 50; i++)
        advisor_write(a, &big, ADVISOR_DELETE, 0, 1, now);
    struct advisor_key s = key("docs", "stream");
    for (int i = 0; i < 250; i++) {
        advisor_write(a, &s, ADVISOR_UPSERT, i < 10, 0, now);
        now += 50000;  /* 20 single writes per second */
    }
    struct advisor_key slow = key("docs", "slow");
    for (int i = 0; i < 250; i++) {
        advisor_write(a, &slow, ADVISOR_UPSERT, 0, 0, now);
        now += 2000000;  /* one every 2 s: not a stream */
    }
    int i = find(a, ADVISOR_OVERSIZED, "docs", "big", NULL);
    TEST_CHECK(i >= 0, "oversized partition docs/big");
    if (i >= 0)
        TEST_CHECK(strstr(found[i].summary, "350 entities") != NULL, "size: created - deleted");
    i = find(a, ADVISOR_UNBATCHED, "docs", "stream", NULL);
    TEST_CHECK(i >= 0, "unbatched writes docs/stream");
    if (i >= 0)
        TEST_EQ_INT(found[i].severity, ADVISOR_INFO, "unbatched writes: info");
    TEST_CHECK(find(a, ADVISOR_UNBATCHED, "docs", "slow", NULL) < 0,
               "writes 2 s apart are not a stream");
    TEST_CHECK(find(a, ADVISOR_OVERSIZED, "docs", "stream", NULL) < 0, "small partition: no");
    /* throttling */
    struct advisor_key t = key("docs", "stream");
    advisor_throttled(a, &t, now);
    i = find(a, ADVISOR_THROTTLED, "docs", "stream", NULL);
    TEST_CHECK(i >= 0 && found[i].severity == ADVISOR_CRITICAL, "throttled partition: critical");
    TEST_EQ_INT(found[0].severity, ADVISOR_CRITICAL, "findings sorted most severe first");
    struct advisor_key acct = key("docs", NULL);
    advisor_throttled(a, &acct, now);
    size_t n;
    find(a, ADVISOR_THROTTLED, "docs", NULL, &n);
    int account_level = 0;
    for (size_t j = 0; j < n; j++)
        account_level += found[j].kind == ADVISOR_THROTTLED && !found[j].has_partition;
    TEST_EQ_INT(account_level, 1, "account-bucket throttling: a per-table finding");
    advisor_reset(a, now);
    TEST_EQ_INT(advisor_findings(a, now, found, ADVISOR_MAX_FINDINGS), 0, "reset forgets");
    advisor_free(a);
}

/* JSON: well formed with awkward keys; history samples name partitions. */
static void test_json(void)
{
    struct advisor *a = fresh(NULL);
    const char *pk = "q\"uo\\te\n\x01<b>";
    struct advisor_key k = key("weird", pk);
    for (int i = 0; i < 30; i++) {
        advisor_read(a, &k, now);
        now += 1000000;  /* 30 s: 6 intervals */
    }
    struct buf b;
    buf_init(&b);
    advisor_json(a, now, &b);
    char err[256];
    yajl_val v = yajl_tree_parse(b.data, err, sizeof err);
    TEST_CHECK(v != NULL, "GET /advisor JSON parses");
    const char *tp[] = {"tables", NULL};
    yajl_val tables = v ? yajl_tree_get(v, tp, yajl_t_array) : NULL;
    TEST_CHECK(tables && tables->u.array.len == 1, "one table");
    if (tables && tables->u.array.len == 1) {
        yajl_val t = tables->u.array.values[0];
        const char *pp[] = {"partitions", NULL}, *hp[] = {"history", NULL};
        yajl_val parts = yajl_tree_get(t, pp, yajl_t_array);
        yajl_val hist = yajl_tree_get(t, hp, yajl_t_array);
        const char *kp[] = {"pk", NULL};
        yajl_val name = parts && parts->u.array.len ? yajl_tree_get(parts->u.array.values[0], kp,
                                                                    yajl_t_string)
                                                    : NULL;
        TEST_EQ_STR(name ? YAJL_GET_STRING(name) : NULL, pk, "the key survives escaping");
        TEST_EQ_INT(hist ? hist->u.array.len : 0, 6, "six finished 5 s intervals in history");
    }
    yajl_tree_free(v);
    buf_reset(&b);
    advisor_metrics(a, now, &b);
    TEST_CHECK(strstr(b.data, "tabled_advisor_findings{kind=\"hot-partition\",severity="
                              "\"warning\"} 0") != NULL,
               "metrics: findings by kind and severity");
    buf_free(&b);
    advisor_free(a);
}

/* The UTF-8 characters of every length the cut tests use. */
static const char *const wide[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};

/* lead, then pre - 1 'x', then ch repeated: at least total bytes. */
static size_t wide_text(char *out, char lead, size_t pre, const char *ch, size_t total)
{
    size_t n = 0, w = strlen(ch);
    out[n++] = lead;
    while (n < pre)
        out[n++] = 'x';
    while (n < total) {
        memcpy(out + n, ch, w);
        n += w;
    }
    out[n] = '\0';
    return n;
}

/* The bytes of a wide_text with prefix pre and characters of w bytes kept
 * when cut at max bytes on a character boundary. */
static size_t kept(size_t pre, size_t w, size_t max)
{
    return pre + (max - pre) / w * w;
}

/* A string member of a yajl object (path of two names), or NULL. */
static const char *jget(yajl_val v, const char *a, const char *b)
{
    const char *p[] = {a, b, NULL};
    yajl_val s = v ? yajl_tree_get(v, p, yajl_t_string) : NULL;
    return s ? YAJL_GET_STRING(s) : NULL;
}

/* Whether got is want[0..n) followed by tail. */
static int is_cut(const char *got, const char *want, size_t n, const char *tail)
{
    return got && strncmp(got, want, n) == 0 && strcmp(got + n, tail) == 0;
}

/* PartitionKeys and filters of 1-, 2-, 3- and 4-byte characters, with every
 * offset of a character against the cuts (48 bytes of a partition name,
 * 128 of a key-order bound, 156 of a filter): the JSON stays UTF-8 that a
 * strict reader takes, each text is cut at the last character boundary
 * that fits, and the findings' partitions likewise. */
static void test_utf8_cuts(void)
{
    static const char *const specs[] = {"hot-min-entities=1", "append-min-creates=1",
                                        "append-min-keys=2", "append-min-intervals=1",
                                        "scan-min=1", NULL};
    int bad_json = 0, bad_pk = 0, bad_bound = 0, bad_filter = 0, bad_finding = 0, cases = 0;
    for (size_t w = 1; w <= 4; w++) {
        for (size_t pre = 1; pre <= w + 1; pre++) {
            char pk[3][300], filter[300];
            struct advisor *a = fresh(specs);
            for (int j = 0; j < 3; j++) {
                wide_text(pk[j], (char)('a' + j), pre, wide[w - 1], 200);
                struct advisor_key k = key("wide", pk[j]);
                advisor_write(a, &k, ADVISOR_INSERT, 1, 0, now);
            }
            struct advisor_key hot = key("wide", pk[2]);
            for (int j = 0; j < 10; j++)
                advisor_read(a, &hot, now);
            size_t fl = wide_text(filter, 'f', pre, wide[w - 1], 220);
            struct advisor_key scan = key("wide", NULL);
            advisor_query(a, &scan, ADVISOR_SCAN, 5, 1, filter, fl, now);
            struct buf b;
            buf_init(&b);
            advisor_json(a, now, &b);
            char err[256] = "";
            yajl_val v = yajl_tree_parse(b.data, err, sizeof err);
            cases++;
            if (!v) {
                bad_json++;
                printf("# %zu-byte characters, prefix %zu: %s\n", w, pre, err);
                buf_free(&b);
                advisor_free(a);
                continue;
            }
            const char *tp[] = {"tables", NULL}, *fp[] = {"findings", NULL};
            yajl_val tabs = yajl_tree_get(v, tp, yajl_t_array);
            yajl_val t = tabs && tabs->u.array.len ? tabs->u.array.values[0] : NULL;
            const char *pp[] = {"partitions", NULL};
            yajl_val parts = t ? yajl_tree_get(t, pp, yajl_t_array) : NULL;
            const char *name = parts && parts->u.array.len
                                   ? jget(parts->u.array.values[0], "pk", NULL) : NULL;
            bad_pk += !is_cut(name, pk[2], kept(pre, w, ADVISOR_NAME_MAX), "");
            bad_bound += !is_cut(jget(t, "key_order", "max"), pk[2],
                                 kept(pre, w, ADVISOR_KEY_MAX), "");
            const char *qp[] = {"queries", "scan", "last_filter", NULL};
            yajl_val lf = t ? yajl_tree_get(t, qp, yajl_t_string) : NULL;
            bad_filter += !is_cut(lf ? YAJL_GET_STRING(lf) : NULL, filter,
                                  kept(pre, w, ADVISOR_FILTER_MAX - 4), "...");
            yajl_val fs = yajl_tree_get(v, fp, yajl_t_array);
            int hot_seen = 0, append_seen = 0;
            for (size_t i = 0; fs && i < fs->u.array.len; i++) {
                const char *kind = jget(fs->u.array.values[i], "kind", NULL);
                const char *part = jget(fs->u.array.values[i], "partition", NULL);
                int is_hot = kind && strcmp(kind, "hot-partition") == 0;
                int is_append = kind && strcmp(kind, "append-only") == 0;
                if (!is_hot && !is_append)
                    continue;
                hot_seen += is_hot;
                append_seen += is_append;
                bad_finding += !is_cut(part, pk[2], kept(pre, w, ADVISOR_NAME_MAX), "...");
            }
            bad_finding += !hot_seen || !append_seen;
            yajl_tree_free(v);
            buf_free(&b);
            advisor_free(a);
        }
    }
    printf("# %d cases: 1- to 4-byte characters at every offset of the cuts\n", cases);
    TEST_EQ_INT(bad_json, 0, "GET /advisor stays UTF-8 a strict reader takes, whatever the cut");
    TEST_EQ_INT(bad_pk, 0, "partition names cut at the last character boundary of 48 bytes");
    TEST_EQ_INT(bad_bound, 0, "key-order bounds cut at the last character boundary of 128 bytes");
    TEST_EQ_INT(bad_filter, 0, "filters cut at the last character boundary of 156 bytes, then ...");
    TEST_EQ_INT(bad_finding, 0, "findings name the partition cut the same way, then ...");
}

/* 1,000,000 distinct partitions (and more tables than tracked): memory at
 * its cap, the busy partition still counted, the rest summarised. */
static void test_memory(void)
{
    struct advisor *a = fresh(NULL);
    char pk[32], tn[32];
    size_t before = advisor_memory(a);
    struct advisor_key hot = key("big", "the-hot-one");
    for (int i = 0; i < 1000000; i++) {
        snprintf(pk, sizeof pk, "p%07d", (int)(((uint64_t)i * 7919u) % 1000000u));
        struct advisor_key k = key("big", pk);
        advisor_write(a, &k, ADVISOR_INSERT, 1, 1, now);
        if (i % 10 == 0)
            advisor_read(a, &hot, now);
        if (i % 1000 == 0)
            now += 100000;
    }
    for (int t = 0; t < ADVISOR_MAX_TABLES + 8; t++) {
        snprintf(tn, sizeof tn, "t%d", t);
        struct advisor_key k = key(tn, "x");
        advisor_read(a, &k, now);
    }
    size_t mem = advisor_memory(a);
    printf("# advisor memory: %zu bytes before, %zu after 1,000,000 partitions and %d tables; "
           "cap %zu\n", before, mem, ADVISOR_MAX_TABLES + 9, advisor_memory_cap());
    TEST_CHECK(mem <= advisor_memory_cap(), "memory within advisor_memory_cap()");
    TEST_CHECK(advisor_memory_cap() <= STATED_CAP, "advisor_memory_cap() under the stated 2 MiB");
    TEST_EQ_INT(mem, advisor_memory_cap(), "every table slot used: exactly the cap");
    struct buf b;
    buf_init(&b);
    advisor_json(a, now, &b);
    TEST_CHECK(strstr(b.data, "\"untracked_operations\":9") != NULL,
               "tables beyond the cap are counted as untracked");
    char *t = strstr(b.data, "\"table\":\"big\"");
    char *first = t ? strstr(t, "\"partitions\":[{\"pk\":\"") : NULL;
    TEST_CHECK(first && strncmp(first + 21, "the-hot-one\"", 12) == 0,
               "the busy partition tops the sketch");
    char *est = t ? strstr(t, "\"partitions_estimate\":") : NULL;
    long e = est ? strtol(est + 22, NULL, 10) : 0;
    printf("# distinct partitions estimate: %ld\n", e);
    TEST_CHECK(e > 900000 && e < 1100000, "distinct partitions estimated within 10%");
    buf_free(&b);
    advisor_free(a);
}

int main(void)
{
    test_limits();
    test_healthy();
    test_hot();
    test_key_order();
    test_seed_load();
    test_queries();
    test_partitions();
    test_json();
    test_utf8_cuts();
    test_memory();
    return test_done();
}
