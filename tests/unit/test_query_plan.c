/* test_query_plan.c - the query planner on a large table, in process.
 *
 * A service over the memory backend (auth off) gets one table holding
 * 1,000 partitions of ROWS (1,000) entities ("p0000".."p0999" x "r0000".."r0999"),
 * written straight into the backend in big apply() batches. Query Entities
 * requests then go through service_handle() exactly as core/ would send
 * them, and svc->rows_examined (every entity a query reads) shows that a
 * point, a partition, a RowKey range, an or of points and a PartitionKey
 * range read only their key ranges, while a filter on other properties
 * reads the whole table. Paging ($top, the 1000 cap, the scan budget) is
 * checked against the same counter and the continuation headers.
 *
 * 1,000 x 1,000 = 1,000,000 entities, also under AddressSanitizer (about
 * 5 s of CPU there; 1.5 s in a normal build). QUERY_PLAN_PARTS=N in the
 * environment loads N partitions instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "codec/token.h"
#include "tests/unit/tap.h"

#define ROWS 1000          /* entities per partition */
#define APPLY_BATCH 10000  /* writes per apply() while loading */
#define TABLE "big"

static struct config cfg;
static struct service *svc;
static struct kv *kv;
static struct store *store;
static long parts;         /* partitions loaded */

/* One answered request: status, body, continuation headers, rows read. */
struct answer {
    int status;
    char *body;            /* malloc()ed, NUL-terminated */
    char npk[256], nrk[256];
    uint64_t examined;
    int entities;          /* "RowKey" members in the body */
};

/* Percent-encodes every byte outside the RFC 3986 unreserved set. */
static void pct(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            buf_putc(b, (char)ch);
        } else {
            buf_putc(b, '%');
            buf_putc(b, hex[ch >> 4]);
            buf_putc(b, hex[ch & 15]);
        }
    }
}

/* Counts the occurrences of needle in s. */
static int count_of(const char *s, const char *needle)
{
    int n = 0;
    size_t nl = strlen(needle);
    for (const char *p = strstr(s, needle); p; p = strstr(p + nl, needle))
        n++;
    return n;
}

/* Sends one request through service_handle. path is relative to the
 * account ("/Tables", "/big()"); query is the raw (encoded) query string. */
static void send_req(enum http_method m, const char *mname, const char *path, const char *query,
                     const char *body, struct answer *out)
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
    req.query = arena_strndup(a, query, strlen(query));
    req.query_len = strlen(query);
    req.target = arena_sprintf(a, "%s%s%s", p, *query ? "?" : "", query);
    struct http_header h[] = {
        {"Host", "127.0.0.1:10002", 15},
        {"x-ms-version", "2019-02-02", 10},
        {"Accept", "application/json;odata=nometadata", 33},
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
    strcpy(req.peer_ip, "127.0.0.1");
    struct response resp;
    response_init(&resp, a);
    uint64_t before = svc->rows_examined;
    service_handle(svc, &req, &resp, NULL, NULL);
    out->examined = svc->rows_examined - before;
    out->status = resp.status;
    out->body = malloc(resp.body.len + 1);
    if (!out->body)
        abort();
    memcpy(out->body, resp.body.data ? resp.body.data : "", resp.body.len);
    out->body[resp.body.len] = '\0';
    const char *v = response_get_header(&resp, "x-ms-continuation-NextPartitionKey");
    snprintf(out->npk, sizeof out->npk, "%s", v ? v : "");
    v = response_get_header(&resp, "x-ms-continuation-NextRowKey");
    snprintf(out->nrk, sizeof out->nrk, "%s", v ? v : "");
    out->entities = count_of(out->body, "\"RowKey\":");
    response_free(&resp);
    arena_free(a);
}

/* Query Entities on TABLE with $filter (may be NULL), extra raw query
 * parameters (may be ""), answered into out. */
static void query(const char *filter, const char *extra, struct answer *out)
{
    struct buf q;
    buf_init(&q);
    if (filter) {
        buf_puts(&q, "$filter=");
        pct(&q, filter);
    }
    if (extra && *extra) {
        if (q.len)
            buf_putc(&q, '&');
        buf_puts(&q, extra);
    }
    buf_putc(&q, '\0');
    send_req(HTTP_M_GET, "GET", "/" TABLE "()", q.data, NULL, out);
    buf_free(&q);
}

/* Query with continuation tokens (already in wire form). */
static void query_from(const char *filter, const char *extra, const char *npk, const char *nrk,
                       struct answer *out)
{
    struct buf x;
    buf_init(&x);
    if (extra && *extra) {
        buf_puts(&x, extra);
        buf_putc(&x, '&');
    }
    buf_puts(&x, "NextPartitionKey=");
    pct(&x, npk);
    if (nrk) {
        buf_puts(&x, "&NextRowKey=");
        pct(&x, nrk);
    }
    buf_putc(&x, '\0');
    query(filter, x.data, out);
    buf_free(&x);
}

/* The token naming key s, as the server should emit it (memory of
 * tok_arena, freed at the end of main). */
static struct arena *tok_arena;
static char *tok(const char *s)
{
    return token_encode(tok_arena, s, strlen(s));
}

/* Writes PARTS x ROWS entities {n: Int32 i, s: String} directly into the
 * table's key range, APPLY_BATCH writes per apply(). */
static int load(uint64_t table_id)
{
    struct backend_write *w = malloc(APPLY_BATCH * sizeof *w);
    struct buf keys, vals;
    size_t *ko = malloc(APPLY_BATCH * sizeof *ko), *kl = malloc(APPLY_BATCH * sizeof *kl);
    size_t *vo = malloc(APPLY_BATCH * sizeof *vo), *vl = malloc(APPLY_BATCH * sizeof *vl);
    if (!w || !ko || !kl || !vo || !vl)
        abort();
    buf_init(&keys);
    buf_init(&vals);
    struct arena *a = arena_new(4096);
    long total = parts * ROWS, n = 0;
    int rc = 0;
    for (long i = 0; i < total && rc == 0; i++) {
        char pk[32], rk[32];
        snprintf(pk, sizeof pk, "p%04ld", i / ROWS);
        snprintf(rk, sizeof rk, "r%04ld", i % ROWS);
        struct entity e = {.pk = pk, .rk = rk, .pk_len = strlen(pk), .rk_len = strlen(rk),
                           .timestamp = 638500000000000000LL + i};
        arena_reset(a);
        struct property *p = entity_add(a, &e, "n", 1);
        p->v.type = EDM_INT32;
        p->v.u.i32 = (int32_t)i;
        p = entity_add(a, &e, "s", 1);
        p->v.type = EDM_STRING;
        p->v.u.s.ptr = "x";
        p->v.u.s.len = 1;
        ko[n] = keys.len;
        keys_entity(&keys, table_id, pk, e.pk_len, rk, e.rk_len);
        kl[n] = keys.len - ko[n];
        vo[n] = vals.len;
        entity_encode(&e, &vals);
        vl[n] = vals.len - vo[n];
        n++;
        if (n == APPLY_BATCH || i + 1 == total) {
            for (long j = 0; j < n; j++)
                w[j] = (struct backend_write){BACKEND_PUT, keys.data + ko[j], kl[j],
                                              vals.data + vo[j], vl[j]};
            char err[256];
            if (kv_apply(kv, w, NULL, (size_t)n, 0, NULL, err, sizeof err) != BACKEND_OK) {
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
    free(w);
    free(ko);
    free(kl);
    free(vo);
    free(vl);
    return rc;
}

/* Releases an answer's body. */
static void done(struct answer *x)
{
    free(x->body);
    x->body = NULL;
}

/* Point filters: exactly the one key is read. */
static void test_points(void)
{
    struct answer x;
    query("PartitionKey eq 'p0100' and RowKey eq 'r0500'", "", &x);
    TEST_EQ_INT(x.status, 200, "point filter: 200");
    TEST_EQ_INT(x.entities, 1, "point filter: one entity");
    TEST_CHECK(strstr(x.body, "\"PartitionKey\":\"p0100\",\"RowKey\":\"r0500\"") != NULL,
               "point filter: the right entity");
    TEST_EQ_INT(x.examined, 1, "point filter examines 1 entity");
    TEST_CHECK(!x.npk[0] && !x.nrk[0], "point filter: no continuation");
    done(&x);

    query("RowKey eq 'r0007' and PartitionKey eq 'p0003'", "", &x);
    TEST_EQ_INT(x.entities, 1, "point filter, RowKey first: one entity");
    TEST_EQ_INT(x.examined, 1, "point filter, RowKey first, examines 1 entity");
    done(&x);

    query("PartitionKey eq 'p0100' and RowKey eq 'r0500' and n eq 5", "", &x);
    TEST_EQ_INT(x.entities, 0, "point filter with a false extra condition: no entity");
    TEST_EQ_INT(x.examined, 1, "point filter with an extra condition examines 1 entity");
    done(&x);

    query("PartitionKey eq 'p0100' and RowKey eq 'r0500x'", "", &x);
    TEST_EQ_INT(x.status, 200, "point filter on a missing key: 200");
    TEST_EQ_INT(x.entities, 0, "point filter on a missing key: empty");
    TEST_EQ_INT(x.examined, 0, "point filter on a missing key examines nothing");
    done(&x);

    query("PartitionKey eq 'zzz' and RowKey eq 'r0001'", "", &x);
    TEST_EQ_INT(x.examined, 0, "point filter past the last partition examines nothing");
    done(&x);

    query("(PartitionKey eq 'p0001' and RowKey eq 'r0001') or "
          "(PartitionKey eq 'p0009' and RowKey eq 'r0999') or "
          "(RowKey eq 'r0000' and PartitionKey eq 'p0005')",
          "", &x);
    TEST_EQ_INT(x.entities, 3, "or of three points: three entities");
    TEST_EQ_INT(x.examined, 3, "or of three points examines 3 entities");
    const char *a = strstr(x.body, "\"p0001\""), *b = strstr(x.body, "\"p0005\""),
               *c = strstr(x.body, "\"p0009\"");
    TEST_CHECK(a && b && c && a < b && b < c, "or of points: key order, not filter order");
    done(&x);

    query("(PartitionKey eq 'p0001' and RowKey eq 'r0001') or "
          "(PartitionKey eq 'p0001' and RowKey eq 'r0001')",
          "", &x);
    TEST_EQ_INT(x.entities, 1, "the same point twice: one entity");
    TEST_EQ_INT(x.examined, 1, "the same point twice examines it once");
    done(&x);
}

/* Partition and RowKey-range filters read only their partition / range. */
static void test_partitions(void)
{
    struct answer x;
    query("PartitionKey eq 'p0042'", "", &x);
    TEST_EQ_INT(x.entities, ROWS, "one partition: all its entities");
    TEST_EQ_INT(x.examined, ROWS, "one partition examines exactly its rows");
    TEST_CHECK(!x.npk[0], "one partition of 1000: no continuation");
    done(&x);

    query("PartitionKey eq 'p0042' and n lt 0", "", &x);
    TEST_EQ_INT(x.entities, 0, "one partition, nothing matches: empty");
    TEST_EQ_INT(x.examined, ROWS, "one partition with a non-key condition examines its rows");
    done(&x);

    query("PartitionKey eq 'p0042' and s eq 'x' and n ge 0", "", &x);
    TEST_EQ_INT(x.examined, ROWS, "partition and two non-key conditions: its rows");
    done(&x);

    query("PartitionKey eq 'p0042' and RowKey ge 'r0100' and RowKey lt 'r0200'", "", &x);
    TEST_EQ_INT(x.entities, 100, "RowKey range [r0100, r0200): 100 entities");
    TEST_EQ_INT(x.examined, 100, "RowKey range [r0100, r0200) examines 100");
    done(&x);

    query("PartitionKey eq 'p0042' and RowKey gt 'r0100' and RowKey le 'r0200'", "", &x);
    TEST_EQ_INT(x.entities, 100, "RowKey range (r0100, r0200]: 100 entities");
    TEST_EQ_INT(x.examined, 100, "RowKey range (r0100, r0200] examines 100");
    TEST_CHECK(strstr(x.body, "\"r0101\"") && strstr(x.body, "\"r0200\"") &&
                   !strstr(x.body, "\"r0100\"") && !strstr(x.body, "\"r0201\""),
               "RowKey range (r0100, r0200]: the right ends");
    done(&x);

    query("PartitionKey eq 'p0042' and RowKey ge 'r0990'", "", &x);
    TEST_EQ_INT(x.examined, 10, "RowKey ge inside a partition examines the tail only");
    done(&x);

    query("RowKey lt 'r0005' and PartitionKey eq 'p0042'", "", &x);
    TEST_EQ_INT(x.examined, 5, "RowKey lt inside a partition examines the head only");
    done(&x);

    query("PartitionKey eq 'p0042' and (RowKey eq 'r0001' or RowKey eq 'r0500')", "", &x);
    TEST_EQ_INT(x.entities, 2, "partition and an or of RowKeys: 2 entities");
    TEST_EQ_INT(x.examined, 2, "partition and an or of RowKeys examines 2");
    done(&x);

    query("PartitionKey ge 'p0010' and PartitionKey lt 'p0013' and n lt 0", "", &x);
    TEST_EQ_INT(x.examined, 3 * ROWS, "PartitionKey range of three partitions examines 3000");
    done(&x);

    query("PartitionKey gt 'p0010' and PartitionKey le 'p0012' and n lt 0", "", &x);
    TEST_EQ_INT(x.examined, 2 * ROWS, "PartitionKey range (p0010, p0012] examines 2000");
    done(&x);

    query("(PartitionKey eq 'p0003' or PartitionKey eq 'p0007') and n lt 0", "", &x);
    TEST_EQ_INT(x.examined, 2 * ROWS, "or of two partitions examines 2000");
    done(&x);

    query("PartitionKey eq 'p0003' and PartitionKey eq 'p0004'", "", &x);
    TEST_EQ_INT(x.entities, 0, "contradictory partitions: empty");
    TEST_EQ_INT(x.examined, 0, "contradictory partitions examine nothing");
    done(&x);

    query("PartitionKey eq 'p0042' and RowKey gt 'r0500' and RowKey lt 'r0400'", "", &x);
    TEST_EQ_INT(x.examined, 0, "empty RowKey range examines nothing");
    done(&x);
}

/* Filters the planner cannot narrow read every entity. */
static void test_full_scans(void)
{
    struct answer x;
    long total = parts * ROWS;
    query("n lt 0", "", &x);
    TEST_EQ_INT(x.status, 200, "full scan: 200");
    TEST_EQ_INT(x.entities, 0, "full scan matching nothing: empty page");
    TEST_EQ_INT(x.examined, total, "filter on a non-key property examines every entity");
    TEST_CHECK(!x.npk[0], "full scan to the end: no continuation");
    done(&x);

    query("not (PartitionKey eq 'p0000') and n lt 0", "", &x);
    TEST_EQ_INT(x.examined, total, "not over a key condition is not planned: full scan");
    done(&x);

    query("PartitionKey eq 'p0001' or n lt 0", "", &x);
    TEST_EQ_INT(x.examined, total, "or with a non-key branch: full scan");
    done(&x);

    char f[64];
    snprintf(f, sizeof f, "n eq %ld", total - 1);
    query(f, "", &x);
    TEST_EQ_INT(x.entities, 1, "full scan finds the last entity");
    TEST_EQ_INT(x.examined, total, "... after examining every entity");
    done(&x);

    /* No filter: the first page stops at 1000 and looks at one more. */
    query(NULL, "", &x);
    TEST_EQ_INT(x.entities, 1000, "no filter: a page of 1000");
    TEST_EQ_INT(x.examined, 1001, "no filter: 1001 examined (the 1001st is the token)");
    TEST_EQ_STR(x.npk, tok("p0001"), "no filter: NextPartitionKey names p0001");
    TEST_EQ_STR(x.nrk, tok("r0000"), "no filter: NextRowKey names r0000");
    done(&x);
}

/* The literals true and false fold in the plan (issue 14 point 5): false
 * reads nothing, `true and X` reads what X reads, `false or X` too. */
static void test_constants(void)
{
    struct answer x;
    query("false", "", &x);
    TEST_EQ_INT(x.status, 200, "$filter=false: 200");
    TEST_EQ_INT(x.entities, 0, "$filter=false: empty page");
    TEST_EQ_INT(x.examined, 0, "$filter=false examines nothing");
    TEST_CHECK(!x.npk[0] && !x.nrk[0], "$filter=false: no continuation");
    done(&x);

    query("not true and n lt 0", "", &x);
    TEST_EQ_INT(x.examined, 0, "not true and ... examines nothing");
    done(&x);

    query("true and PartitionKey eq 'p0100' and RowKey eq 'r0500'", "", &x);
    TEST_EQ_INT(x.entities, 1, "true and a point: one entity");
    TEST_EQ_INT(x.examined, 1, "true and a point examines 1 entity");
    done(&x);

    query("(true and RowKey eq 'r0001' and PartitionKey eq 'p0002') or "
          "(false or (PartitionKey eq 'p0003' and RowKey lt 'r0010'))",
          "", &x);
    TEST_EQ_INT(x.entities, 11, "point or (false or RowKey range): 1 + 10 entities");
    TEST_EQ_INT(x.examined, 11, "... examines only the point and the range");
    done(&x);

    query("true", "$top=5", &x);
    TEST_EQ_INT(x.entities, 5, "$filter=true: like no filter");
    TEST_EQ_INT(x.examined, 6, "$filter=true&$top=5 examines 6 (the 6th is the token)");
    done(&x);

    query("1", "", &x);
    TEST_EQ_INT(x.status, 400, "$filter=1: 400");
    TEST_EQ_INT(x.examined, 0, "$filter=1 examines nothing");
    done(&x);
}

/* $top, the 1000 cap, continuation across planned ranges, scan budget. */
static void test_paging(void)
{
    struct answer x;
    query("PartitionKey eq 'p0005'", "$top=10", &x);
    TEST_EQ_INT(x.entities, 10, "$top=10 in a partition: 10 entities");
    TEST_EQ_INT(x.examined, 11, "$top=10 examines 11 (the 11th is the token)");
    TEST_EQ_STR(x.npk, tok("p0005"), "$top=10: NextPartitionKey");
    TEST_EQ_STR(x.nrk, tok("r0010"), "$top=10: NextRowKey names r0010");
    char npk[256], nrk[256];
    snprintf(npk, sizeof npk, "%s", x.npk);
    snprintf(nrk, sizeof nrk, "%s", x.nrk);
    done(&x);
    query_from("PartitionKey eq 'p0005'", "$top=10", npk, nrk, &x);
    TEST_EQ_INT(x.entities, 10, "$top=10 resumed: the next 10");
    TEST_CHECK(strstr(x.body, "\"r0010\"") && strstr(x.body, "\"r0019\"") &&
                   !strstr(x.body, "\"r0009\""),
               "$top=10 resumed: r0010..r0019");
    TEST_EQ_INT(x.examined, 11, "$top=10 resumed examines 11 (seeks to the token)");
    done(&x);

    /* Resuming at the last rows of the partition. */
    query_from("PartitionKey eq 'p0005'", "", tok("p0005"), tok("r0995"), &x);
    TEST_EQ_INT(x.entities, 5, "resume at r0995: the last 5 entities");
    TEST_EQ_INT(x.examined, 5, "resume at r0995 examines 5");
    TEST_CHECK(!x.npk[0] && !x.nrk[0], "resume at r0995: last page, no token");
    done(&x);

    /* Two partitions: 1000 + 1000 across two planned ranges. */
    query("PartitionKey eq 'p0007' or PartitionKey eq 'p0002'", "", &x);
    TEST_EQ_INT(x.entities, 1000, "two partitions: first page of 1000");
    TEST_EQ_INT(x.examined, 1001, "two partitions, first page: 1001 examined");
    TEST_EQ_STR(x.npk, tok("p0007"), "two partitions: token names p0007");
    TEST_EQ_STR(x.nrk, tok("r0000"), "two partitions: token names r0000");
    snprintf(npk, sizeof npk, "%s", x.npk);
    snprintf(nrk, sizeof nrk, "%s", x.nrk);
    done(&x);
    query_from("PartitionKey eq 'p0007' or PartitionKey eq 'p0002'", "", npk, nrk, &x);
    TEST_EQ_INT(x.entities, 1000, "two partitions: second page of 1000");
    TEST_EQ_INT(x.examined, 1000, "two partitions, second page: 1000 examined");
    TEST_CHECK(strstr(x.body, "\"p0007\"") && !strstr(x.body, "\"p0002\""),
               "two partitions, second page: only p0007");
    TEST_CHECK(!x.npk[0], "two partitions, second page: no token");
    done(&x);

    /* NextPartitionKey alone resumes at the partition's start. */
    query_from("PartitionKey ge 'p0002' and PartitionKey le 'p0003'", "", tok("p0003"), NULL,
               &x);
    TEST_EQ_INT(x.entities, 1000, "NextPartitionKey only: the whole partition p0003");
    TEST_EQ_INT(x.examined, 1000, "NextPartitionKey only: 1000 examined");
    done(&x);

    /* Scan budget: at most N entities examined per page. */
    svc->set.scan_budget = 250;
    query("PartitionKey eq 'p0009' and n lt 0", "", &x);
    TEST_EQ_INT(x.examined, 250, "scan budget 250: 250 examined");
    TEST_EQ_INT(x.entities, 0, "scan budget 250, nothing matched: empty page");
    TEST_EQ_STR(x.npk, tok("p0009"), "scan budget 250: token partition p0009");
    TEST_EQ_STR(x.nrk, tok("r0250"), "scan budget 250: token names the next unexamined row");
    snprintf(npk, sizeof npk, "%s", x.npk);
    snprintf(nrk, sizeof nrk, "%s", x.nrk);
    done(&x);
    int pages = 1;
    uint64_t seen = 250;
    while (npk[0] && pages < 10) {
        query_from("PartitionKey eq 'p0009' and n lt 0", "", npk, nrk, &x);
        seen += x.examined;
        pages++;
        snprintf(npk, sizeof npk, "%s", x.npk);
        snprintf(nrk, sizeof nrk, "%s", x.nrk);
        done(&x);
    }
    /* 250 + 250 + 250 + 250 = the partition; the 4th page spends its budget
     * on the last row and the range ends there, so it carries no token. */
    TEST_EQ_INT(pages, 4, "scan budget 250 over 1000 rows: 4 pages");
    TEST_EQ_INT(seen, ROWS, "scan budget pages examine the partition once");

    svc->set.scan_budget = 300;
    query("PartitionKey eq 'p0009' and (n eq 9100 or n eq 9500)", "", &x);
    TEST_EQ_INT(x.entities, 1, "scan budget 300: the match inside the budget");
    TEST_CHECK(strstr(x.body, "\"r0100\"") != NULL, "scan budget 300: it is r0100");
    TEST_EQ_STR(x.nrk, tok("r0300"), "scan budget 300: token at r0300");
    done(&x);
    svc->set.scan_budget = 0;
}

int main(void)
{
    log_set_level(LOG_WARN);
    const char *env = getenv("QUERY_PLAN_PARTS");
    parts = env ? atol(env) : 1000;
    if (parts < 20 || parts > 9999) /* the tests name p0000..p0019; keys are p%04ld */
        parts = parts < 20 ? 20 : 9999;
    printf("# %ld entities (%ld partitions of %d)\n", parts * ROWS, parts, ROWS);

    tok_arena = arena_new(4096);
    config_defaults(&cfg);
    struct backend_options bo = {.data_dir = NULL, .durability = BACKEND_DURABLE_NONE};
    char err[256];
    if (kv_open(&backend_memory_ops, &bo, &kv, err, sizeof err) != BACKEND_OK) {
        TEST_CHECK(0, "open the memory backend");
        return test_done();
    }
    store = store_new(kv, DURABILITY_NONE);
    /* no authentication, no scan budget, and no time cut (counts must not
     * depend on the machine's speed) */
    struct service_settings set = {.accounts = cfg.accounts, .naccounts = cfg.naccounts};
    svc = service_new(&set, store, err, sizeof err);
    TEST_CHECK(svc != NULL, "service_new over the memory backend");
    if (!svc)
        return test_done();

    struct answer x;
    send_req(HTTP_M_POST, "POST", "/Tables", "", "{\"TableName\":\"" TABLE "\"}", &x);
    TEST_EQ_INT(x.status, 201, "create table through service_handle");
    done(&x);
    const struct table_info *t = NULL;
    catalog_table(svc->cat, NULL, DEV_ACCOUNT_NAME, TABLE, strlen(TABLE), &t);
    TEST_CHECK(t != NULL, "the table is in the catalogue");
    if (!t)
        return test_done();
    TEST_EQ_INT(load(t->id), 0, "load the entities in big apply() batches");

    query("PartitionKey eq 'p0000' and RowKey eq 'r0000'", "", &x);
    TEST_EQ_INT(x.entities, 1, "the loaded entities are visible to queries");
    done(&x);

    test_points();
    test_partitions();
    test_full_scans();
    test_constants();
    test_paging();

    service_free(svc);
    store_free(store);
    kv_close(kv);
    arena_free(tok_arena);
    return test_done();
}
