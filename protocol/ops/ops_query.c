/* ops_query.c - Query Entities: one page of a table in (PartitionKey,
 * RowKey) order, filtered, projected, with continuation tokens
 * (doc/protocol.md, Query Entities; Continuation). A page is computed within one event-loop turn. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "codec/atom.h"
#include "protocol/ctx.h"
#include "store/keys.h"
#include "filter/filter.h"
#include "protocol/query.h"
#include "codec/token.h"

#define PAGE_MAX 1000
#define PAGE_MAX_BYTES (4u << 20)

/* Start key of the scan from NextPartitionKey / NextRowKey. */
static enum terr resume_key(struct req_ctx *c, const struct table_info *t, struct buf *start)
{
    const struct query_param *npk = url_query_get(c->qp, c->nqp, "NextPartitionKey");
    const struct query_param *nrk = url_query_get(c->qp, c->nqp, "NextRowKey");
    if (!npk && !nrk)
        return TERR_NONE;
    if (!npk)
        return TERR_InvalidInput;
    const char *pk, *rk = NULL;
    size_t pkl, rkl = 0;
    if (token_decode(c->a, npk->value, npk->value_len, &pk, &pkl) != 0)
        return TERR_InvalidInput;
    if (nrk && token_decode(c->a, nrk->value, nrk->value_len, &rk, &rkl) != 0)
        return TERR_InvalidInput;
    buf_reset(start);
    if (rk)
        keys_entity(start, t->id, pk, pkl, rk, rkl);
    else
        keys_entity_partition_prefix(start, t->id, pk, pkl);
    return TERR_NONE;
}

/* Adds the continuation headers naming the entity with key k. */
static void continuation(struct req_ctx *c, const void *k, size_t kl)
{
    uint64_t id;
    const char *pk, *rk;
    size_t pkl, rkl;
    if (keys_entity_decode(c->a, k, kl, &id, &pk, &pkl, &rk, &rkl) != 0)
        return;
    response_header(c->resp, "x-ms-continuation-NextPartitionKey", token_encode(c->a, pk, pkl));
    response_header(c->resp, "x-ms-continuation-NextRowKey", token_encode(c->a, rk, rkl));
}

/* Byte order of two backend keys (memcmp, shorter prefix first). */
static int keycmp(const void *a, size_t al, const void *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    return r ? r : (al > bl) - (al < bl);
}

/* State of one page while it is being filled. */
struct page {
    struct req_ctx *c;
    const struct query_opts *q;
    struct entity_json_ctx jc;
    struct atom_ctx ac;        /* c->atom: the feed's entries */
    int limit, count, ranged, done;
    int keys_first;             /* the filter reads PartitionKey / RowKey */
    long examined, budget;
    int64_t deadline;
    size_t max_bytes;           /* the page ends once its body is larger */
    struct store_scan *it;       /* the page's one cursor (one snapshot) */
    struct arena *scratch;      /* per-row memory, reset every row */
};

/* Decodes the keys of entity key k into row (scratch memory). 0, or -1
 * for a malformed key (logged; the row is skipped). */
static int row_keys(struct page *pg, const void *k, size_t kl, struct filter_row *row)
{
    uint64_t id;
    if (keys_entity_decode(pg->scratch, k, kl, &id, &row->pk, &row->pk_len, &row->rk,
                           &row->rk_len) == 0)
        return 0;
    log_error("query: corrupt entity in the store; skipped");
    return -1;
}

/* After an entity of one_len bytes of JSON, when the body has no room
 * for two more like it: room for as many more as the page may still
 * take, up to its byte limit. Doubling from the connection's buffer, a
 * 1 MiB page was realloc'ed about five times, each copying everything
 * written so far (3-7% of a query's instructions, callgrind, make
 * bench-scan's pages and scans). Small answers never get here, and what
 * is reserved but not written is not touched; the connection frees a
 * body this large after the reply (server/conn.c). */
static void page_reserve(struct page *pg, struct buf *b, size_t one_len)
{
    if (b->cap - b->len > 2 * (one_len + 1))
        return;
    size_t more = (one_len + 1) * (size_t)(pg->limit - pg->count);
    size_t room = pg->max_bytes + one_len + 64;   /* the page ends past max_bytes */
    if (b->len + more > room)
        more = room > b->len ? room - b->len : 0;
    buf_reserve(b, more);
}

/* Scans stored keys [start, end) into the page with its cursor. 0, or
 * a store status on an error. Sets pg->done once the page is complete
 * (continuation added). */
static int scan_range(struct page *pg, const struct buf *start, const struct buf *end)
{
    struct req_ctx *c = pg->c;
    struct service *svc = c->svc;
    struct buf *b = &c->resp->body;
    struct store_scan *it = pg->it;
    int src = store_scan_seek(it, start->data, start->len);
    if (src != STORE_OK) {
        log_error("query: %s", store_scan_error(it));
        return src < 0 ? src : STORE_IOERR;
    }
    const void *k, *v;
    size_t kl, vl;
    int rc;
    while ((rc = store_scan_next(it, &k, &kl, &v, &vl)) == 1) {
        if (keycmp(k, kl, end->data, end->len) >= 0)
            break;   /* past this range: the cursor serves the next one */
        if ((pg->budget > 0 && pg->examined >= pg->budget) ||
            (pg->deadline && (pg->examined & 1023) == 1023 && clock_mono_ms() > pg->deadline)) {
            /* Budget spent: the next unexamined key is the token. */
            continuation(c, k, kl);
            pg->done = 1;
            break;
        }
        pg->examined++;
        svc->rows_examined++;
        /* The filter and the JSON read the stored value in place; only the
         * keys are decoded, into a scratch arena reset every row (so a long
         * scan uses constant memory), and only when something reads them. */
        arena_reset(pg->scratch);
        struct filter_row row = {.val = v, .val_len = vl};
        int have_keys = 0;
        if (pg->keys_first) {
            if (row_keys(pg, k, kl, &row) != 0)
                continue;
            have_keys = 1;
        }
        int m = query_match_entity(pg->q, &row);
        if (m < 0) {
            log_error("query: corrupt entity in the store; skipped");
            continue;
        }
        if (!m)
            continue;
        if (!have_keys && row_keys(pg, k, kl, &row) != 0)
            continue;
        if (pg->ranged && !auth_range_contains(&c->auth.range, row.pk, row.pk_len, row.rk,
                                               row.rk_len))
            continue;
        if (pg->count == pg->limit || (pg->count > 0 && b->len > pg->max_bytes)) {
            continuation(c, k, kl);
            pg->done = 1;
            break;
        }
        if (c->atom) {
            struct entity e = {.pk = row.pk, .rk = row.rk, .pk_len = row.pk_len,
                               .rk_len = row.rk_len};
            if (entity_decode(pg->scratch, v, vl, &e) != 0) {
                log_error("query: corrupt entity in the store; skipped");
                continue;
            }
            pg->count++;
            atom_write_entity(b, &e, &pg->ac, 0);
        } else {
            size_t at = b->len;
            if (pg->count)
                buf_putc(b, ',');
            if (entity_json_write_value(b, row.pk, row.pk_len, row.rk, row.rk_len, v, vl,
                                        &pg->jc) != 0) {
                b->len = at;
                b->data[at] = '\0';
                log_error("query: corrupt entity in the store; skipped");
                continue;
            }
            pg->count++;
            page_reserve(pg, b, b->len - at);
        }
        service_query_entity(c, row.pk, row.pk_len);  /* one token per entity */
    }
    if (rc < 0)
        log_error("query: %s", store_scan_error(it));
    return rc < 0 ? rc : 0;
}

void op_query_entities(struct req_ctx *c)
{
    const struct table_info *t;
    struct query_opts q = {0};
    enum terr err = ctx_table(c, &t);
    if (!err)
        err = query_opts_parse(c, QUERY_ENTITIES, &q);
    struct buf resume;
    buf_init(&resume);
    if (!err)
        err = resume_key(c, t, &resume);
    if (err) {
        buf_free(&resume);
        reply_error_msg(c, err, err == TERR_InvalidInput || err == TERR_NotImplemented
                                    ? q.message : NULL);
        return;
    }
    /* Key ranges the filter allows (a superset of its matches). */
    struct filter_plan plan;
    struct filter_range full = {.lo = {.unbounded = 1}, .hi = {.unbounded = 1}};
    if (q.filter) {
        filter_plan(q.filter, c->a, &plan);
    } else {
        plan.ranges = &full;
        plan.n = 1;
    }

    if ((err = service_query_admit(c, &plan))) {  /* buckets not empty (doc/protocol.md, Token buckets) */
        buf_free(&resume);
        reply_error(c, err);
        return;
    }
    struct response *r = c->resp;
    struct buf *b = &r->body;
    struct atom_ctx ac = {.base = c->base, .account = c->account->name, .table = t->name,
                          .select = q.select, .nselect = q.nselect};
    if (c->atom) {
        atom_ctx_now(c->a, &ac);
        atom_feed_open(b, &ac, t->name);
    } else {
        buf_putc(b, '{');
        if (c->level != ODATA_NOMETADATA) {
            const char *md = q.select_text
                                 ? arena_concat(c->a, t->name, "&$select=", q.select_text,
                                                (char *)NULL)
                                 : t->name;
            md = reply_metadata_url(c, md);
            buf_puts(b, "\"odata.metadata\":");
            json_put_string(b, md, strlen(md));
            buf_putc(b, ',');
        }
        buf_puts(b, "\"value\":[");
    }
    struct page pg = {
        .c = c,
        .q = &q,
        .jc = {.level = c->level, .base = c->base, .account = c->account->name,
               .table = t->name, .metadata = NULL, .select = q.select, .nselect = q.nselect},
        .ac = ac,
        .limit = q.top == QUERY_NO_TOP ? PAGE_MAX : q.top,
        /* A shorter page (still with its continuation) while the server
         * holds much unsent output (server/conn.c, backpressure). */
        .max_bytes = c->req->reply_budget && c->req->reply_budget < PAGE_MAX_BYTES
                         ? c->req->reply_budget
                         : PAGE_MAX_BYTES,
        .ranged = auth_range_active(&c->auth.range),
        .keys_first = q.filter && filter_needs_keys(q.filter),
        .budget = c->svc->set.scan_budget,
        .deadline =
            c->svc->set.scan_budget_ms > 0 ? clock_mono_ms() + c->svc->set.scan_budget_ms : 0,
    };
    struct buf start, end;
    buf_init(&start);
    buf_init(&end);
    /* One cursor over the table for the whole page: a backend whose
     * cursors are snapshots then shows the page as of one moment, also
     * when the plan has several ranges and the store answers later. */
    keys_entity_table_prefix(&start, t->id);
    keys_entity_table_prefix(&end, t->id);
    keys_prefix_end(&end);
    char emsg[256] = "";
    int rc = store_scan_open(ctx_read_store(c), start.data, start.len, end.data, end.len, &pg.it,
                             emsg, sizeof emsg);
    if (rc != STORE_OK) {
        log_error("query: %s", emsg);
        pg.it = NULL;
    }
    pg.scratch = rc == 0 ? arena_new(16384) : NULL;
    /* $top=0: an empty page that examined nothing, so no continuation
     * either; one naming the first match would send a client that follows
     * it with the same $top round in circles (doc/protocol-notes.md). */
    pg.done = pg.limit == 0;
    for (size_t i = 0; i < plan.n && !pg.done && rc == 0; i++) {
        buf_reset(&start);
        buf_reset(&end);
        filter_range_keys(&plan.ranges[i], t->id, &start, &end);
        if (resume.len) {
            /* Resume inside or after this range (tokens are inclusive). */
            if (keycmp(end.data, end.len, resume.data, resume.len) <= 0)
                continue;
            if (keycmp(start.data, start.len, resume.data, resume.len) < 0) {
                buf_reset(&start);
                buf_append(&start, resume.data, resume.len);
            }
        }
        if (keycmp(start.data, start.len, end.data, end.len) >= 0)
            continue;
        rc = scan_range(&pg, &start, &end);
    }
    store_scan_close(pg.it);
    arena_free(pg.scratch);
    buf_free(&start);
    buf_free(&end);
    buf_free(&resume);
    log_debug("query %s: %ld rows examined, %d returned", t->name, pg.examined, pg.count);
    service_query_done(c);  /* the page's entities, charged after it (doc/protocol.md, Token buckets) */
    if (c->svc->advisor && rc == 0)
        service_advise_query(c, t, &plan, (uint64_t)pg.examined, (uint64_t)pg.count);
    if (rc != 0) {
        reply_error(c, terr_from_store(rc));
        return;
    }
    r->status = 200;
    if (c->atom) {
        atom_feed_close(b);
        reply_atom_content_type(c);
        return;
    }
    buf_puts(b, "]}");
    reply_json_content_type(c);
}
