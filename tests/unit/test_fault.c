/* test_fault.c - fault injection rules of guard/fault.c: the key = value
 * vocabulary, matching and specificity, operation classes, deterministic
 * every/count, probabilities with a fixed seed, latency and timeouts, the
 * JSON form. */
#include <stdio.h>
#include <string.h>

#include "guard/fault.h"
#include "tests/unit/tap.h"

static char err[256];

/* Builds a rule from "key=value;key=value" text; aborts the test on error. */
static struct fault_rule rule(const char *name, const char *spec)
{
    struct fault_rule r;
    fault_rule_init(&r, name);
    char tmp[2048];
    snprintf(tmp, sizeof tmp, "%s", spec);
    for (char *save = NULL, *kv = strtok_r(tmp, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        *eq = '\0';
        if (fault_rule_set(&r, kv, eq + 1, err, sizeof err) < 0) {
            printf("# %s\n", err);
            r.name[0] = '\0';
        }
    }
    return r;
}

static struct fault_request req(const char *account, const char *table, const char *pk,
                                enum fault_class cls)
{
    struct fault_request q = {account, table, table ? strlen(table) : 0, pk,
                              pk ? strlen(pk) : 0, cls};
    return q;
}

static void test_vocabulary(void)
{
    struct fault_rule r;
    fault_rule_init(&r, "x");
    TEST_EQ_INT(fault_rule_set(&r, "busy", "0.25", err, sizeof err), 0, "busy = 0.25");
    TEST_EQ_INT(fault_rule_set(&r, "busy", "1.5", err, sizeof err), -1, "busy = 1.5 refused");
    TEST_EQ_INT(fault_rule_set(&r, "timeout", "abc", err, sizeof err), -1, "timeout = abc refused");
    TEST_EQ_INT(fault_rule_set(&r, "latency_ms", "10-50", err, sizeof err), 0,
                "latency_ms (underscore) = 10-50");
    TEST_CHECK(r.latency_min_ms == 10 && r.latency_max_ms == 50, "range stored");
    TEST_EQ_INT(fault_rule_set(&r, "latency-ms", "50-10", err, sizeof err), -1,
                "a reversed range is refused");
    TEST_EQ_INT(fault_rule_set(&r, "ops", "reads, batches", err, sizeof err), 0, "ops list");
    TEST_EQ_INT(r.ops, FAULT_READ | FAULT_BATCH, "ops bits");
    TEST_EQ_INT(fault_rule_set(&r, "ops", "deletes", err, sizeof err), -1, "unknown op class");
    TEST_EQ_INT(fault_rule_set(&r, "Timeout-Applies", "true", err, sizeof err), 0,
                "keys are case-insensitive");
    TEST_EQ_INT(fault_rule_set(&r, "colour", "red", err, sizeof err), -1, "unknown key");
    TEST_EQ_STR(err, "unknown fault setting 'colour'", "message names the key");
    TEST_EQ_INT(fault_rule_check(&r, err, sizeof err), 0, "rule is consistent");
    fault_rule_set(&r, "timeout", "0.8", err, sizeof err);
    TEST_EQ_INT(fault_rule_check(&r, err, sizeof err), -1, "busy + timeout > 1 is refused");
    struct fault_rule p = rule("p", "partition=k");
    TEST_EQ_INT(fault_rule_check(&p, err, sizeof err), -1, "a partition without a table");
    struct fault_rule n = rule("", "busy=1");
    TEST_EQ_INT(fault_rule_check(&n, err, sizeof err), -1, "a rule without a name");
    TEST_EQ_INT(fault_rule_set(&r, "name", "a/b", err, sizeof err), -1, "names hold no '/'");
}

static void test_specificity_and_classes(void)
{
    struct fault_set *fs = fault_set_new(42);
    struct fault_action a;
    TEST_CHECK(!fault_active(fs), "an empty set is inactive");
    struct fault_request q = req("devstoreaccount1", "orders", "p1", FAULT_READ);
    TEST_EQ_INT(fault_decide(fs, &q, &a), 0, "no rules: nothing to do");

    struct fault_rule any = rule("any", "busy=1");
    struct fault_rule acct = rule("acct", "account=DevStoreAccount1;timeout=1;timeout-delay-ms=7");
    struct fault_rule tab = rule("tab", "account=*;table=ORDERS;reset=1");
    struct fault_rule part = rule("part", "table=orders;partition=p1;latency-ms=5");
    fault_put(fs, &any);
    fault_put(fs, &acct);
    fault_put(fs, &tab);
    TEST_CHECK(fault_active(fs) && !fault_needs_pk(fs), "active; no partition rule yet");
    fault_put(fs, &part);
    TEST_CHECK(fault_needs_pk(fs), "a partition rule needs the key");

    TEST_EQ_INT(fault_decide(fs, &q, &a), 1, "the partition rule decides for orders/p1");
    TEST_CHECK(a.kind == FAULT_NONE && a.delay_ms == 5 && !strcmp(a.rule, "part"),
               "latency only, from the most specific rule");
    q = req("devstoreaccount1", "orders", "p2", FAULT_WRITE);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_RESET && a.delay_ms == 0 && !strcmp(a.rule, "tab"),
               "another partition of the table: the table rule resets");
    q = req("devstoreaccount1", "other", NULL, FAULT_BATCH);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_TIMEOUT && a.delay_ms == 7 && !strcmp(a.rule, "acct"),
               "another table: the account rule times out after its delay");
    q = req("someoneelse", "orders", "p9", FAULT_READ);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_RESET, "table rules with account * apply to every account");
    q = req("someoneelse", NULL, NULL, FAULT_READ);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_BUSY && !strcmp(a.rule, "any"),
               "a service-level request of another account: the catch-all rule");
    q = req("devstoreaccount1", "orders", NULL, FAULT_WRITE);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_RESET, "an unknown key never matches a partition rule");

    /* classes */
    struct fault_rule w = rule("any", "ops=writes;busy=1");
    fault_put(fs, &w);  /* replaces "any" */
    TEST_EQ_INT(fault_count(fs), 4, "a rule of the same name is replaced");
    q = req("x", NULL, NULL, FAULT_READ);
    TEST_EQ_INT(fault_decide(fs, &q, &a), 0, "a write-only rule ignores reads");
    q = req("x", NULL, NULL, FAULT_WRITE);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_BUSY, "and fires on writes");
    TEST_EQ_INT(fault_delete(fs, "tab"), 1, "delete by name");
    TEST_EQ_INT(fault_delete(fs, "tab"), 0, "a second delete finds nothing");
    q = req("devstoreaccount1", "orders", "p2", FAULT_WRITE);
    fault_decide(fs, &q, &a);
    TEST_CHECK(a.kind == FAULT_TIMEOUT, "with the table rule gone the account rule decides");
    fault_clear(fs);
    TEST_CHECK(!fault_active(fs) && !fault_needs_pk(fs), "cleared");
    fault_set_free(fs);
}

static void test_every_and_count(void)
{
    struct fault_set *fs = fault_set_new(7);
    struct fault_rule e = rule("e", "every=3;busy=1");
    fault_put(fs, &e);
    struct fault_request q = req("a", "t", "k", FAULT_WRITE);
    struct fault_action a;
    char got[16] = "";
    for (int i = 0; i < 9; i++) {
        fault_decide(fs, &q, &a);
        got[i] = a.kind == FAULT_BUSY ? 'B' : '.';
    }
    TEST_EQ_STR(got, "..B..B..B", "every=3 fires on the 3rd, 6th and 9th request");

    struct fault_rule c = rule("c", "table=t;timeout=1;count=2");
    struct fault_rule fallback = rule("e", "latency-ms=3");
    fault_put(fs, &fallback);
    fault_put(fs, &c);
    for (int i = 0; i < 4; i++) {
        fault_decide(fs, &q, &a);
        got[i] = a.kind == FAULT_TIMEOUT ? 'T' : a.delay_ms == 3 ? 'l' : '?';
    }
    got[4] = '\0';
    TEST_EQ_STR(got, "TTll", "count=2 stops after two faults; the next rule takes over");
    const struct fault_rule *r = fault_get(fs, 1);
    TEST_CHECK(r && r->matched == 2 && r->injected == 2, "counters of the exhausted rule");
    fault_set_free(fs);
}

static void test_probabilities(void)
{
    struct fault_set *fs = fault_set_new(12345);
    struct fault_rule p = rule("p", "busy=0.2;timeout=0.1;reset=0.05;latency-ms=10-20");
    fault_put(fs, &p);
    struct fault_request q = req("a", "t", NULL, FAULT_READ);
    struct fault_action a;
    int n[4] = {0}, lat_ok = 1;
    for (int i = 0; i < 20000; i++) {
        fault_decide(fs, &q, &a);
        n[a.kind]++;
        if (a.kind != FAULT_RESET && (a.delay_ms < 10 || a.delay_ms > 20))
            lat_ok = 0;
        if (a.kind == FAULT_RESET && a.delay_ms != 0)
            lat_ok = 0;
    }
    printf("# none %d busy %d timeout %d reset %d\n", n[0], n[1], n[2], n[3]);
    TEST_CHECK(n[FAULT_BUSY] > 3600 && n[FAULT_BUSY] < 4400, "busy about 20%");
    TEST_CHECK(n[FAULT_TIMEOUT] > 1700 && n[FAULT_TIMEOUT] < 2300, "timeout about 10%");
    TEST_CHECK(n[FAULT_RESET] > 800 && n[FAULT_RESET] < 1200, "reset about 5%");
    TEST_CHECK(lat_ok, "latency within 10-20 ms on everything but resets");

    struct fault_set *again = fault_set_new(12345);
    fault_put(again, &p);
    struct fault_set *first = fault_set_new(12345);
    fault_put(first, &p);
    int same = 1;
    for (int i = 0; i < 1000; i++) {
        struct fault_action x, y;
        fault_decide(first, &q, &x);
        fault_decide(again, &q, &y);
        if (x.kind != y.kind || x.delay_ms != y.delay_ms)
            same = 0;
    }
    TEST_CHECK(same, "the same seed gives the same decisions");
    fault_set_free(first);
    fault_set_free(again);
    fault_set_free(fs);
}

static void test_json(void)
{
    struct fault_rule r = rule("r1", "account=devstoreaccount1;table=orders;partition=a\"b;"
                                     "ops=writes,batches;busy=0.5;timeout=0.25;"
                                     "timeout-delay-ms=100;latency-ms=10-20;timeout-applies=true;"
                                     "count=3");
    struct buf b;
    buf_init(&b);
    fault_rule_json(&r, &b);
    TEST_EQ_STR(b.data,
                "{\"name\":\"r1\",\"account\":\"devstoreaccount1\",\"table\":\"orders\","
                "\"partition\":\"a\\\"b\",\"ops\":\"writes,batches\",\"busy\":0.5,"
                "\"timeout\":0.25,\"reset\":0,\"timeout_delay_ms\":100,\"latency_ms\":\"10-20\","
                "\"timeout_applies\":true,\"every\":0,\"count\":3,\"matched\":0,\"injected\":0}",
                "a rule as JSON");
    buf_reset(&b);
    struct fault_set *fs = fault_set_new(1);
    fault_set_json(fs, &b);
    TEST_EQ_STR(b.data, "{\"rules\":[]}", "an empty set as JSON");
    struct fault_rule t = rule("t", "ops=all");
    fault_put(fs, &t);
    buf_reset(&b);
    fault_set_json(fs, &b);
    TEST_EQ_STR(b.data,
                "{\"rules\":[{\"name\":\"t\",\"account\":\"*\",\"table\":\"*\",\"ops\":\"all\","
                "\"busy\":0,\"timeout\":0,\"reset\":0,\"timeout_delay_ms\":0,\"latency_ms\":\"0\","
                "\"timeout_applies\":false,\"every\":0,\"count\":0,\"matched\":0,\"injected\":0}]}",
                "a set as JSON");
    fault_set_free(fs);
    buf_free(&b);
}

int main(void)
{
    test_vocabulary();
    test_specificity_and_classes();
    test_every_and_count();
    test_probabilities();
    test_json();
    return test_done();
}
