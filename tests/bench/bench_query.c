/* bench_query.c - one-partition query latency against table size (not part
 * of make check; run with `make bench-query`).
 *
 *     bench_query [-p ROWS_PER_PARTITION] [-r REQUESTS] [SIZE...]
 *
 * For each SIZE (default 10000 and 1000000) a fresh memory store gets one
 * table of SIZE entities in partitions of ROWS_PER_PARTITION (default 100),
 * written straight into the backend. Then REQUESTS (default 20000) Query
 * Entities requests `$filter=PartitionKey eq 'pNNNNNNN'` for random
 * partitions go through service_handle() in process (routing, filter
 * compile, plan, scan, minimalmetadata JSON of the whole partition), timed
 * one by one; the table prints median, p90, p99 and max latency (wall
 * clock), median and p99 of the thread's CPU time, and the entities
 * examined per query (the planner's counter, which must equal
 * ROWS_PER_PARTITION at every size). A point query is timed the same way.
 * The server's HTTP layer is left out on purpose: it does not depend on the
 * table size. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "store/kv.h"
#include "server/config.h"
#include "core/http.h"
#include "core/log.h"
#include "protocol/ctx.h"
#include "store/entity.h"
#include "store/keys.h"
#include "protocol/service.h"
#include "store/tables.h"

#define BENCH_APPLY 10000
#define BENCH_TABLE "bench"

static uint64_t bq_rng = 0x2545F4914F6CDD1Dull;

/* xorshift64: deterministic pseudo-random partition choice. */
static uint64_t bq_rand(void)
{
    uint64_t x = bq_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bq_rng = x;
    return x;
}

/* Monotonic time in nanoseconds. */
static uint64_t bq_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread in nanoseconds (unaffected by preemption, so the
 * tail is not made of other processes' time slices on a busy machine). */
static uint64_t bq_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One request through service_handle; returns the status, and the body
 * length in *body_len. path is relative to the account, query raw. */
static int bq_request(struct service *svc, enum http_method m, const char *mname,
                      const char *path, const char *query, const char *body, size_t *body_len)
{
    struct arena *a = arena_new(16384);
    struct request req;
    memset(&req, 0, sizeof req);
    req.arena = a;
    req.method = m;
    req.method_name = mname;
    req.http_major = req.http_minor = 1;
    char *p = arena_sprintf(a, "/%s%s", DEV_ACCOUNT_NAME, path);
    req.path = p;
    req.path_len = strlen(p);
    req.query = query;
    req.query_len = strlen(query);
    req.target = arena_sprintf(a, "%s?%s", p, query);
    struct http_header h[] = {
        {"Host", "127.0.0.1:10002", 15},
        {"x-ms-version", "2019-02-02", 10},
        {"Accept", "application/json;odata=minimalmetadata", 38},
        {"DataServiceVersion", "3.0;NetFx", 9},
        {"MaxDataServiceVersion", "3.0;NetFx", 9},
        {"Content-Type", "application/json", 16},
    };
    req.headers = h;
    req.nheaders = body ? 6 : 5;
    if (body) {
        req.body = body;
        req.body_len = strlen(body);
    }
    struct response resp;
    response_init(&resp, a);
    service_handle(svc, &req, &resp, NULL, NULL);
    int status = resp.status;
    if (body_len)
        *body_len = resp.body.len;
    response_free(&resp);
    arena_free(a);
    return status;
}

/* Writes size entities (partitions of rows) into table id via apply(). */
static int bq_load(struct kv *st, uint64_t id, long size, long rows)
{
    struct backend_write *w = malloc(BENCH_APPLY * sizeof *w);
    size_t *off = malloc(BENCH_APPLY * 4 * sizeof *off);
    if (!w || !off)
        abort();
    struct buf keys, vals;
    buf_init(&keys);
    buf_init(&vals);
    struct arena *a = arena_new(4096);
    long n = 0;
    int rc = 0;
    for (long i = 0; i < size && rc == 0; i++) {
        char pk[32], rk[32], s[32];
        snprintf(pk, sizeof pk, "p%07ld", i / rows);
        snprintf(rk, sizeof rk, "r%07ld", i % rows);
        snprintf(s, sizeof s, "value-%07ld", i); /* same width at every size */
        struct entity e = {.pk = pk, .rk = rk, .pk_len = strlen(pk), .rk_len = strlen(rk),
                           .timestamp = 638500000000000000LL + i};
        arena_reset(a);
        struct property *p = entity_add(a, &e, "Qty", 3);
        p->v.type = EDM_INT32;
        p->v.u.i32 = (int32_t)(i % 1000);
        p = entity_add(a, &e, "Name", 4);
        p->v.type = EDM_STRING;
        p->v.u.s.ptr = s;
        p->v.u.s.len = strlen(s);
        p = entity_add(a, &e, "Price", 5);
        p->v.type = EDM_DOUBLE;
        p->v.u.d = (double)i / 8;
        off[4 * n] = keys.len;
        keys_entity(&keys, id, pk, e.pk_len, rk, e.rk_len);
        off[4 * n + 1] = keys.len - off[4 * n];
        off[4 * n + 2] = vals.len;
        entity_encode(&e, &vals);
        off[4 * n + 3] = vals.len - off[4 * n + 2];
        if (++n == BENCH_APPLY || i + 1 == size) {
            for (long j = 0; j < n; j++)
                w[j] = (struct backend_write){BACKEND_PUT, keys.data + off[4 * j], off[4 * j + 1],
                                              vals.data + off[4 * j + 2], off[4 * j + 3]};
            char err[256];
            if (kv_apply(st, w, NULL, (size_t)n, 0, NULL, err, sizeof err) != BACKEND_OK) {
                fprintf(stderr, "apply: %s\n", err);
                rc = -1;
            }
            buf_reset(&keys);
            buf_reset(&vals);
            n = 0;
        }
    }
    arena_free(a);
    buf_free(&keys);
    buf_free(&vals);
    free(off);
    free(w);
    return rc;
}

/* qsort order of latencies. */
static int bq_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Latency at quantile q (0..1) of sorted samples, in microseconds. */
static double bq_quant(const uint64_t *s, long n, double q)
{
    long i = (long)(q * (double)(n - 1) + 0.5);
    return (double)s[i] / 1000.0;
}

/* Times requests queries of one kind; prints one result line. 0 or -1. */
static int bq_measure(struct service *svc, const char *label, long size, long rows, long nparts,
                      long requests, int point)
{
    uint64_t *lat = malloc((size_t)requests * sizeof *lat);
    uint64_t *cpu = malloc((size_t)requests * sizeof *cpu);
    if (!lat || !cpu)
        abort();
    uint64_t examined = 0;
    size_t bytes = 0;
    for (long i = 0; i < requests; i++) {
        long part = (long)(bq_rand() % (uint64_t)nparts);
        char q[160];
        if (point)
            snprintf(q, sizeof q,
                     "$filter=PartitionKey%%20eq%%20%%27p%07ld%%27%%20and%%20RowKey%%20eq%%20"
                     "%%27r%07ld%%27",
                     part, (long)(bq_rand() % (uint64_t)rows));
        else
            snprintf(q, sizeof q, "$filter=PartitionKey%%20eq%%20%%27p%07ld%%27", part);
        uint64_t before = svc->rows_examined;
        uint64_t t0 = bq_now_ns(), c0 = bq_cpu_ns();
        size_t bl = 0;
        int status = bq_request(svc, HTTP_M_GET, "GET", "/" BENCH_TABLE "()", q, NULL, &bl);
        lat[i] = bq_now_ns() - t0;
        cpu[i] = bq_cpu_ns() - c0;
        examined += svc->rows_examined - before;
        bytes += bl;
        if (status != 200) {
            fprintf(stderr, "query answered %d\n", status);
            free(lat);
            free(cpu);
            return -1;
        }
    }
    qsort(lat, (size_t)requests, sizeof *lat, bq_cmp);
    qsort(cpu, (size_t)requests, sizeof *cpu, bq_cmp);
    printf("%-10s %9ld %8ld %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %8.1f %7zu\n", label, size,
           requests, bq_quant(lat, requests, 0.5), bq_quant(lat, requests, 0.9),
           bq_quant(lat, requests, 0.99), (double)lat[requests - 1] / 1000.0,
           bq_quant(cpu, requests, 0.5), bq_quant(cpu, requests, 0.99),
           (double)examined / (double)requests, bytes / (size_t)requests);
    free(lat);
    free(cpu);
    return 0;
}

/* Loads a fresh store with size entities and measures both query kinds. */
static int bq_run(long size, long rows, long requests)
{
    struct config cfg;
    config_defaults(&cfg);
    cfg.auth = 0;
    cfg.scan_budget_ms = 0;
    struct backend_options bo = {.durability = BACKEND_DURABLE_NONE};
    struct kv *st;
    char err[256];
    if (kv_open(&backend_memory_ops, &bo, &st, err, sizeof err) != BACKEND_OK) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    struct store *store = store_new(st, DURABILITY_NONE);
    struct service_settings set = {.accounts = cfg.accounts, .naccounts = cfg.naccounts,
                                   .scan_budget = cfg.scan_budget};
    struct service *svc = service_new(&set, store, err, sizeof err);
    if (!svc) {
        fprintf(stderr, "service_new: %s\n", err);
        store_free(store);
        kv_close(st);
        return -1;
    }
    int rc = -1;
    if (bq_request(svc, HTTP_M_POST, "POST", "/Tables", "",
                   "{\"TableName\":\"" BENCH_TABLE "\"}", NULL) == 201) {
        const struct table_info *t = NULL;
        catalog_table(svc->cat, NULL, DEV_ACCOUNT_NAME, BENCH_TABLE, strlen(BENCH_TABLE), &t);
        double t0 = (double)bq_now_ns();
        if (t && bq_load(st, t->id, size, rows) == 0) {
            fprintf(stderr, "# loaded %ld entities in %.2f s\n", size,
                    ((double)bq_now_ns() - t0) / 1e9);
            long nparts = (size + rows - 1) / rows;
            /* warm-up: touch the code paths once */
            bq_measure(svc, "(warm-up)", size, rows, nparts, requests / 10 + 1, 0);
            rc = bq_measure(svc, "partition", size, rows, nparts, requests, 0);
            if (rc == 0)
                rc = bq_measure(svc, "point", size, rows, nparts, requests, 1);
        }
    }
    service_free(svc);
    store_free(store);
    kv_close(st);
    return rc;
}

int main(int argc, char **argv)
{
    long rows = 100, requests = 20000;
    long sizes[16];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            rows = atol(argv[++i]);
        else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            requests = atol(argv[++i]);
        else if (argv[i][0] != '-' && nsizes < 16)
            sizes[nsizes++] = atol(argv[i]);
        else {
            fprintf(stderr, "usage: bench_query [-p ROWS_PER_PARTITION] [-r REQUESTS] [SIZE...]\n");
            return 2;
        }
    }
    if (nsizes == 0) {
        sizes[nsizes++] = 10000;
        sizes[nsizes++] = 1000000;
    }
    if (rows < 1 || requests < 1) {
        fprintf(stderr, "bench_query: -p and -r must be positive\n");
        return 2;
    }
    log_set_level(LOG_WARN);
    printf("# Query Entities latency in process (service_handle), %ld rows per partition, "
           "minimalmetadata; times in microseconds (wall clock, then thread CPU time)\n",
           rows);
    printf("%-10s %9s %8s %9s %9s %9s %9s %9s %9s %8s %7s\n", "query", "entities", "requests",
           "median", "p90", "p99", "max", "cpu-med", "cpu-p99", "examined", "bytes");
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] < rows || bq_run(sizes[i], rows, requests) != 0)
            return 1;
    return 0;
}
