/* test_throttle.c - the token buckets of guard/throttle.c with an injected
 * clock (microseconds passed by hand): refill, burst, deficits, costs above
 * the burst, the account bucket, key identity, and reclamation of idle
 * partitions. Nothing here sleeps. */
#include <stdio.h>
#include <string.h>

#include "guard/throttle.h"
#include "tests/unit/tap.h"

static const unsigned char seed[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

#define SEC 1000000ULL
#define MS 1000ULL

static struct throttle_key key(unsigned account, const char *table, const char *pk)
{
    struct throttle_key k = {account, table, strlen(table), pk, pk ? strlen(pk) : 0};
    return k;
}

/* How many cost-1 requests into k are admitted in a row at time now. */
static int admit_run(struct throttle *t, const struct throttle_key *k, uint64_t now, int max)
{
    int n = 0;
    while (n < max && throttle_admit(t, k, 1, 1, now) == THROTTLE_OK)
        n++;
    return n;
}

static void test_limits(void)
{
    struct throttle_limits bad = {0, 10, 100, 100};
    TEST_CHECK(throttle_new(&bad, 1, seed) == NULL, "rate 0 is refused");
    struct throttle_limits bad2 = {10, 0.5, 100, 100};
    TEST_CHECK(throttle_new(&bad2, 1, seed) == NULL, "burst below 1 is refused");
    struct throttle_limits ok = {0.001, 1, 1e7, 1e6};
    struct throttle *t = throttle_new(&ok, 1, seed);
    TEST_CHECK(t != NULL, "extreme but valid limits are accepted");
    throttle_free(t);
}

static void test_refill_and_burst(void)
{
    struct throttle_limits lim = {10, 5, 1000, 1000};
    struct throttle *t = throttle_new(&lim, 2, seed);
    struct throttle_key k = key(0, "orders", "p1");
    uint64_t now = 1000 * SEC;
    TEST_EQ_INT(admit_run(t, &k, now, 100), 5, "a fresh partition admits its burst of 5");
    TEST_EQ_INT(throttle_admit(t, &k, 1, 1, now), THROTTLE_PARTITION,
                "the 6th request at the same instant is refused by the partition bucket");
    TEST_EQ_INT(admit_run(t, &k, now + 50 * MS, 100), 0, "after 50 ms (0.5 token) still refused");
    TEST_EQ_INT(admit_run(t, &k, now + 100 * MS, 100), 1, "after 100 ms at 10/s one more");
    TEST_EQ_INT(admit_run(t, &k, now + 400 * MS, 100), 3, "300 ms later three more");
    TEST_EQ_INT(admit_run(t, &k, now + 100 * SEC, 100), 5,
                "after a long idle time the bucket holds the burst, not more");
    struct throttle_key other = key(0, "orders", "p2");
    TEST_EQ_INT(admit_run(t, &other, now + 100 * SEC, 100), 5,
                "another partition has its own bucket");
    TEST_CHECK(throttle_account_tokens(t, 0, now + 100 * SEC) > 980 &&
                   throttle_account_tokens(t, 0, now + 100 * SEC) < 991,
               "the account bucket was charged for every admitted request");
    throttle_free(t);
}

static void test_refused_takes_nothing(void)
{
    struct throttle_limits lim = {1, 3, 1, 4};
    struct throttle *t = throttle_new(&lim, 1, seed);
    struct throttle_key a = key(0, "t", "a"), b = key(0, "t", "b");
    uint64_t now = 5 * SEC;
    TEST_EQ_INT(admit_run(t, &a, now, 10), 3, "partition a: burst 3");
    TEST_EQ_INT(throttle_admit(t, &a, 1, 1, now), THROTTLE_PARTITION, "partition a is empty");
    TEST_CHECK(throttle_account_tokens(t, 0, now) == 1.0,
               "the refused request took nothing from the account bucket");
    TEST_EQ_INT(throttle_admit(t, &b, 1, 1, now), THROTTLE_OK, "partition b takes the last account token");
    TEST_EQ_INT(throttle_admit(t, &b, 1, 1, now), THROTTLE_ACCOUNT,
                "then the account bucket refuses (checked before the partition)");
    TEST_CHECK(throttle_partition_tokens(t, &b, now) == 2.0,
               "the account refusal took nothing from the partition bucket");
    throttle_free(t);
}

static void test_deficit_and_large_costs(void)
{
    struct throttle_limits lim = {10, 5, 1e6, 1e6};
    struct throttle *t = throttle_new(&lim, 1, seed);
    struct throttle_key k = key(0, "t", "p");
    uint64_t now = SEC;
    TEST_EQ_INT(throttle_admit(t, &k, 8, 8, now), THROTTLE_OK,
                "a batch of 8 is admitted by a full bucket of 5");
    TEST_CHECK(throttle_partition_tokens(t, &k, now) == -3.0, "leaving a deficit of 3");
    TEST_EQ_INT(throttle_admit(t, &k, 1, 1, now + 350 * MS), THROTTLE_PARTITION,
                "after 350 ms the deficit is 0.5 token: refused");
    TEST_EQ_INT(throttle_admit(t, &k, 1, 1, now + 400 * MS), THROTTLE_OK,
                "after 400 ms one token: admitted");
    TEST_EQ_INT(throttle_admit(t, &k, 8, 8, now + 500 * MS), THROTTLE_PARTITION,
                "a large cost needs a full bucket");
    TEST_EQ_INT(throttle_admit(t, &k, 3, 3, now + 800 * MS), THROTTLE_OK,
                "a cost of 3 is admitted once 3 tokens are there");

    /* cost 0: the up-front check of a query, then the charge after. */
    now = 100 * SEC;
    TEST_EQ_INT(throttle_admit(t, &k, 0, 0, now), THROTTLE_OK, "a check admits a full bucket");
    TEST_CHECK(throttle_partition_tokens(t, &k, now) == 5.0, "and takes nothing");
    throttle_charge(t, &k, 12, 12, now);
    TEST_CHECK(throttle_partition_tokens(t, &k, now) == -7.0,
               "a page of 12 entities charged afterwards leaves a deficit of 7");
    TEST_EQ_INT(throttle_admit(t, &k, 0, 0, now + 700 * MS), THROTTLE_PARTITION,
                "the next check waits out the deficit (0 tokens after 700 ms)");
    TEST_EQ_INT(throttle_admit(t, &k, 0, 0, now + 800 * MS), THROTTLE_OK,
                "and admits at one token (800 ms)");
    struct throttle_key fresh = key(0, "t", "never-seen");
    throttle_charge(t, &fresh, 2, 0, now);
    TEST_CHECK(throttle_partition_tokens(t, &fresh, now) == 3.0,
               "a charge to a partition without a bucket starts from a full one");

    /* deficits are bounded */
    for (int i = 0; i < 100; i++)
        throttle_charge(t, &k, 1000000, 0, now);
    TEST_CHECK(throttle_partition_tokens(t, &k, now) >= -5000.0,
               "a deficit never goes below 1000 bursts");
    throttle_free(t);
}

static void test_clock_backwards(void)
{
    struct throttle_limits lim = {10, 2, 100, 100};
    struct throttle *t = throttle_new(&lim, 1, seed);
    struct throttle_key k = key(0, "t", "p");
    TEST_EQ_INT(admit_run(t, &k, 10 * SEC, 10), 2, "burst of 2");
    TEST_EQ_INT(admit_run(t, &k, 9 * SEC, 10), 0, "a clock going backwards refills nothing");
    throttle_free(t);
}

static void test_key_identity(void)
{
    struct throttle_limits lim = {1, 1, 1000, 1000};
    struct throttle *t = throttle_new(&lim, 3, seed);
    uint64_t now = SEC;
    struct throttle_key k1 = key(0, "Orders", "p"), k2 = key(0, "oRDERS", "p");
    TEST_EQ_INT(throttle_admit(t, &k1, 1, 1, now), THROTTLE_OK, "Orders/p admitted");
    TEST_EQ_INT(throttle_admit(t, &k2, 1, 1, now), THROTTLE_PARTITION,
                "oRDERS/p is the same partition (table names are case-insensitive)");
    struct throttle_key k3 = key(0, "orders", "P");
    TEST_EQ_INT(throttle_admit(t, &k3, 1, 1, now), THROTTLE_OK,
                "PartitionKey P differs from p (keys are case-sensitive)");
    struct throttle_key k4 = key(1, "orders", "p");
    TEST_EQ_INT(throttle_admit(t, &k4, 1, 1, now), THROTTLE_OK,
                "the same table and key in another account is another partition");
    /* "ab" + "c" vs "a" + "bc": the separator keeps them apart */
    struct throttle_key k5 = key(0, "ab", "c"), k6 = key(0, "a", "bc");
    TEST_EQ_INT(throttle_admit(t, &k5, 1, 1, now), THROTTLE_OK, "ab/c admitted");
    TEST_EQ_INT(throttle_admit(t, &k6, 1, 1, now), THROTTLE_OK, "a/bc is another partition");
    struct throttle_key acct_only = {2, "orders", 6, NULL, 0};
    TEST_EQ_INT(throttle_admit(t, &acct_only, 1, 1, now), THROTTLE_OK,
                "a request without a partition uses the account bucket only");
    TEST_EQ_INT(throttle_partitions(t), 5, "five partition buckets are held");
    struct throttle_key unknown = key(7, "t", "p");
    TEST_EQ_INT(throttle_admit(t, &unknown, 1, 1, now), THROTTLE_OK,
                "an account index beyond the configured ones is not throttled");
    /* Long keys go through the word-at-a-time hash path. */
    char big1[1100], big2[1100];
    memset(big1, 'x', sizeof big1 - 1);
    big1[sizeof big1 - 1] = '\0';
    memcpy(big2, big1, sizeof big1);
    big2[1000] = 'y';
    struct throttle_key b1 = key(0, "t", big1), b2 = key(0, "t", big2);
    TEST_EQ_INT(throttle_admit(t, &b1, 1, 1, now), THROTTLE_OK, "a 1099-byte key admitted");
    TEST_EQ_INT(throttle_admit(t, &b1, 1, 1, now), THROTTLE_PARTITION, "and then empty");
    TEST_EQ_INT(throttle_admit(t, &b2, 1, 1, now), THROTTLE_OK,
                "a key differing in one byte near the end is another partition");
    throttle_free(t);
}

static void test_reclamation(void)
{
    struct throttle_limits lim = {1, 1, 1e7, 1e6};
    struct throttle *t = throttle_new(&lim, 1, seed);
    size_t empty_bytes = throttle_table_bytes(t);
    uint64_t now = 10 * SEC;
    char pk[32];
    int refused = 0;
    for (int i = 0; i < 200000; i++) {
        snprintf(pk, sizeof pk, "p%d", i);
        struct throttle_key k = key(0, "t", pk);
        if (throttle_admit(t, &k, 1, 0, now) != THROTTLE_OK)
            refused++;
    }
    TEST_EQ_INT(refused, 0, "200,000 distinct partitions each admit their first request");
    TEST_EQ_INT(throttle_partitions(t), 200000, "they all hold a (non-full) bucket");
    TEST_CHECK(throttle_table_bytes(t) >= 200000 * 32, "the table grew to hold them");
    struct throttle_key k7 = key(0, "t", "p7");
    TEST_EQ_INT(throttle_admit(t, &k7, 1, 0, now), THROTTLE_PARTITION,
                "p7 is still empty after the growth (buckets survive rebuilds)");

    /* Half a second later nothing is full yet: maintenance keeps them. */
    throttle_maintain(t, now + 500 * MS, (size_t)-1);
    TEST_EQ_INT(throttle_partitions(t), 200000, "nothing is reclaimed before it is full");

    /* After a second every bucket is full again: the same as no bucket. */
    now += 2 * SEC;
    throttle_maintain(t, now, (size_t)-1);
    TEST_EQ_INT(throttle_partitions(t), 0, "idle partitions are reclaimed");
    TEST_EQ_INT(throttle_table_bytes(t), empty_bytes, "and the table shrinks back to its minimum");
    TEST_EQ_INT(throttle_admit(t, &k7, 1, 0, now), THROTTLE_OK,
                "a reclaimed partition starts full again");

    /* Touching a stream of partitions whose buckets refill before the table
     * fills up: inserts rebuild instead of growing. */
    struct throttle_limits fast = {1000, 1, 1e7, 1e6};
    struct throttle *f = throttle_new(&fast, 1, seed);
    uint64_t tnow = SEC;
    for (int i = 0; i < 100000; i++) {
        snprintf(pk, sizeof pk, "q%d", i);
        struct throttle_key k = key(0, "t", pk);
        throttle_admit(f, &k, 1, 0, tnow);
        tnow += 2 * MS;  /* every earlier bucket is full again */
    }
    TEST_EQ_INT(throttle_table_bytes(f), empty_bytes,
                "100,000 partitions touched one after another never grow the table");
    TEST_CHECK(throttle_partitions(f) <= 1024, "and few buckets are held at any time");

    /* The sweep on admission alone reclaims too (no maintenance call). */
    for (int i = 0; i < 600; i++) {
        snprintf(pk, sizeof pk, "r%d", i);
        struct throttle_key k = key(0, "t", pk);
        throttle_admit(f, &k, 1, 0, tnow);
    }
    size_t before = throttle_partitions(f);
    tnow += 10 * MS;
    struct throttle_key same = key(0, "t", "hot");
    for (int i = 0; i < 2000; i++)
        throttle_admit(f, &same, 0, 0, tnow);
    TEST_CHECK(before >= 600 && throttle_partitions(f) <= 1,
               "admissions sweep full buckets away as they go");
    throttle_free(f);
    throttle_free(t);
}

/* Deleting from the middle of probe runs keeps every other bucket findable. */
static void test_delete_keeps_runs(void)
{
    struct throttle_limits lim = {1, 2, 1e7, 1e6};
    struct throttle *t = throttle_new(&lim, 1, seed);
    char pk[32];
    uint64_t t0 = SEC, t1 = SEC + 1500 * MS;
    /* 700 buckets (load 0.68 of 1024): even ones charged early (full again
     * at t1 + 0.5 s), odd ones charged twice late (still empty then). */
    for (int i = 0; i < 700; i++) {
        snprintf(pk, sizeof pk, "k%d", i);
        struct throttle_key k = key(0, "t", pk);
        if (i % 2 == 0)
            throttle_admit(t, &k, 1, 0, t0);
        else
            throttle_admit(t, &k, 2, 0, t1);
    }
    throttle_maintain(t, t1 + 600 * MS, (size_t)-1);
    TEST_EQ_INT(throttle_partitions(t), 350, "the 350 full buckets were deleted");
    int still_empty = 0;
    for (int i = 1; i < 700; i += 2) {
        snprintf(pk, sizeof pk, "k%d", i);
        struct throttle_key k = key(0, "t", pk);
        if (throttle_admit(t, &k, 1, 0, t1 + 600 * MS) == THROTTLE_PARTITION)
            still_empty++;
    }
    TEST_EQ_INT(still_empty, 350, "every surviving bucket is still found after the deletions");
    throttle_free(t);
}

int main(void)
{
    test_limits();
    test_refill_and_burst();
    test_refused_takes_nothing();
    test_deficit_and_large_costs();
    test_clock_backwards();
    test_key_identity();
    test_reclamation();
    test_delete_keeps_runs();
    return test_done();
}
