/* test_metrics.c - core/metrics.c: what is counted and the exact text of
 * the Prometheus exposition (families, labels, cumulative buckets). */
#include <stdio.h>
#include <string.h>

#include "server/config.h"
#include "server/metrics_text.h"
#include "guard/throttle.h"
#include "tests/unit/tap.h"

/* 1 when line (a whole line, without its newline) occurs in text. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

int main(void)
{
    static struct config cfg;
    config_defaults(&cfg);
    config_add_account(&cfg, "second", "AAAA", NULL, NULL, 0);
    struct metrics *m = metrics_new(cfg.accounts, cfg.naccounts);
    metrics_request(m, 6, "GetEntity", 200, 80);
    metrics_request(m, 6, "GetEntity", 200, 300);
    metrics_request(m, 6, "GetEntity", 404, 20000000);
    metrics_request(m, 7, "InsertEntity", 503, 1000);
    metrics_request(m, 99, "Bogus", 200, 1);
    metrics_throttled(m, 0, METRICS_SCOPE_PARTITION);
    metrics_throttled(m, 0, METRICS_SCOPE_PARTITION);
    metrics_throttled(m, 1, METRICS_SCOPE_ACCOUNT);
    metrics_fault(m, 1, METRICS_FAULT_RESET);
    metrics_backend_apply(m, 1500);
    metrics_connection(m, 1);
    metrics_connection(m, 1);
    metrics_connection(m, 0);
    struct buf b;
    buf_init(&b);
    metrics_render(m, &b);
    const char *t = b.data;
    TEST_CHECK(has_line(t, "# TYPE tabled_requests_total counter"), "requests family typed");
    TEST_CHECK(has_line(t, "tabled_requests_total{operation=\"GetEntity\",status=\"200\"} 2"),
               "GetEntity 200 counted twice");
    TEST_CHECK(has_line(t, "tabled_requests_total{operation=\"GetEntity\",status=\"404\"} 1"),
               "GetEntity 404 once");
    TEST_CHECK(has_line(t, "tabled_requests_total{operation=\"InsertEntity\",status=\"503\"} 1"),
               "InsertEntity 503 once");
    TEST_CHECK(strstr(t, "Bogus") == NULL, "an operation number out of range is ignored");
    TEST_CHECK(has_line(t, "tabled_request_duration_seconds_bucket{operation=\"GetEntity\",le=\"0.0001\"} 1"),
               "80 us falls in the first bucket");
    TEST_CHECK(has_line(t, "tabled_request_duration_seconds_bucket{operation=\"GetEntity\",le=\"0.0005\"} 2"),
               "buckets are cumulative");
    TEST_CHECK(has_line(t, "tabled_request_duration_seconds_bucket{operation=\"GetEntity\",le=\"10\"} 2"),
               "20 s is above the last finite bound");
    TEST_CHECK(has_line(t, "tabled_request_duration_seconds_bucket{operation=\"GetEntity\",le=\"+Inf\"} 3"),
               "+Inf holds everything");
    TEST_CHECK(has_line(t, "tabled_request_duration_seconds_sum{operation=\"GetEntity\"} 20.000380"),
               "sum in seconds");
    TEST_CHECK(has_line(t, "tabled_request_duration_seconds_count{operation=\"GetEntity\"} 3"),
               "count");
    TEST_CHECK(has_line(t, "tabled_throttled_total{account=\"devstoreaccount1\",scope=\"partition\"} 2"),
               "partition refusals of the dev account");
    TEST_CHECK(has_line(t, "tabled_throttled_total{account=\"second\",scope=\"account\"} 1"),
               "account refusals of the second account");
    TEST_CHECK(has_line(t, "tabled_throttled_total{account=\"second\",scope=\"partition\"} 0"),
               "zero series are present");
    TEST_CHECK(has_line(t, "tabled_faults_injected_total{account=\"second\",kind=\"reset\"} 1"),
               "an injected reset");
    TEST_CHECK(strstr(t, "tabled_entities") == NULL, "no entity gauge until it is maintained");
    TEST_CHECK(has_line(t, "tabled_backend_apply_duration_seconds_bucket{le=\"0.0025\"} 1"),
               "apply histogram without labels");
    TEST_CHECK(has_line(t, "tabled_backend_apply_duration_seconds_sum 0.001500"), "apply sum");
    TEST_CHECK(has_line(t, "tabled_backend_sync_duration_seconds_count 0"), "empty sync histogram");
    TEST_CHECK(has_line(t, "tabled_open_connections 1"), "open connections");
    TEST_CHECK(has_line(t, "tabled_connections_total 2"), "connections accepted");
    TEST_CHECK(strstr(t, "tabled_throttle_partition_buckets") == NULL, "no throttle gauges when off");

    m->entities_known = 1;
    metrics_entities_add(m, 1, 5);
    metrics_entities_add(m, 1, -2);
    struct throttle_limits lim = {1, 1, 1, 1};
    unsigned char seed[16] = {0};
    struct throttle *th = throttle_new(&lim, 2, seed);
    metrics_add_series(m, throttle_render_metrics, th);
    buf_reset(&b);
    metrics_render(m, &b);
    t = b.data;
    TEST_CHECK(has_line(t, "tabled_entities{account=\"second\"} 3"), "entity gauge");
    TEST_CHECK(has_line(t, "tabled_entities{account=\"devstoreaccount1\"} 0"), "zero entities");
    TEST_CHECK(has_line(t, "tabled_throttle_partition_buckets 0"), "throttle gauge");
    TEST_CHECK(t[b.len - 1] == '\n', "the text ends with a newline");

    /* More distinct statuses than kept: the rest is "other". */
    for (int s = 0; s < METRICS_MAX_STATUS + 3; s++)
        metrics_request(m, 3, "CreateTable", 400 + s, 10);
    buf_reset(&b);
    metrics_render(m, &b);
    TEST_CHECK(has_line(b.data, "tabled_requests_total{operation=\"CreateTable\",status=\"other\"} 3"),
               "statuses beyond the table are counted as other");
    throttle_free(th);
    metrics_free(m);
    buf_free(&b);
    return test_done();
}
