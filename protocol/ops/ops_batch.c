/* ops_batch.c - entity group transactions (doc/protocol.md, Batch): every operation of the
 * changeset is routed and prepared against the current store (no writes),
 * and only when all succeed are they committed in one atomic apply() with
 * one shared Timestamp. The first failing operation is answered alone, its
 * message prefixed with its index; the store is then exactly as before. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "protocol/authlog.h"
#include "protocol/ctx.h"
#include "codec/multipart.h"
#include "protocol/optable.h"
#include "protocol/route.h"

#define BATCH_MAX_BYTES (4u << 20)
/* Times a changeset is prepared again after a racing write changed one of
 * its entities between its reads and its commit (STORE_CONFLICT). */
#define BATCH_WRITE_ROUNDS 8

/* Cross-operation state: the first operation fixes table and partition;
 * the RowKeys seen so far sit in a small open-addressing set (a batch of
 * 100 compared pairwise cost 4,950 key comparisons). */
#define BATCH_RK_SLOTS 256   /* power of two, over twice MULTIPART_MAX_OPS */
struct batch_state {
    const struct table_info *t;
    const char *pk;
    size_t pk_len;
    const char *rks[BATCH_RK_SLOTS];
    size_t rk_lens[BATCH_RK_SLOTS];
    size_t n;
};

/* FNV-1a of a RowKey, for the set above. */
static unsigned rk_hash(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

const struct table_info *batch_table(struct req_ctx *c)
{
    const struct batch_state *b = c->batch;
    if (!b || b->n == 0 || b->t->name_len != c->table_len ||
        strncasecmp(b->t->name, c->table, c->table_len) != 0)
        return NULL;
    return b->t;
}

enum terr batch_check_entity(struct req_ctx *c, const struct entity_write *w)
{
    struct batch_state *b = c->batch;
    if (b->n == 0) {
        b->t = w->t;
        b->pk = w->e.pk;
        b->pk_len = w->e.pk_len;
    } else {
        if (w->t->id != b->t->id)  /* copies, on a shared store */
            return TERR_InvalidInput;
        if (w->e.pk_len != b->pk_len || memcmp(w->e.pk, b->pk, b->pk_len) != 0)
            return TERR_CommandsInBatchActOnDifferentPartitions;
    }
    if (b->n >= MULTIPART_MAX_OPS)
        return TERR_NONE;   /* the parser stops longer changesets first */
    const char *rk = w->e.rk ? w->e.rk : "";
    unsigned i = rk_hash(rk, w->e.rk_len) & (BATCH_RK_SLOTS - 1);
    for (; b->rks[i]; i = (i + 1) & (BATCH_RK_SLOTS - 1))
        if (b->rk_lens[i] == w->e.rk_len && memcmp(b->rks[i], rk, w->e.rk_len) == 0)
            return strcmp(c->version, "2016-05-31") >= 0 ? TERR_InvalidDuplicateRow
                                                         : TERR_InvalidInput;
    b->rks[i] = rk;
    b->rk_lens[i] = w->e.rk_len;
    b->n++;
    return TERR_NONE;
}

/* Whether a header name is Content-ID (first byte tested first). */
static int is_content_id(const char *name)
{
    return (name[0] == 'C' || name[0] == 'c') && strcasecmp(name, "Content-ID") == 0;
}

/* Whether two operations route alike: same method, URL and headers (in
 * order, Content-ID aside); only their bodies may differ. Routing reads
 * nothing else of an operation, and a changeset of inserts into one table
 * sends the same request line and headers 100 times (the parser then
 * shares one parse among them, which is the quick answer here). */
static int same_route(const struct multipart_op *a, const struct multipart_op *b)
{
    if (a->url == b->url && a->method_name == b->method_name && a->headers == b->headers &&
        a->nheaders == b->nheaders)
        return 1;
    if (a->method != b->method || strcmp(a->method_name, b->method_name) != 0 ||
        strcmp(a->url, b->url) != 0)
        return 0;
    size_t i = 0, j = 0;
    for (;;) {
        while (i < a->nheaders && is_content_id(a->headers[i].name))
            i++;
        while (j < b->nheaders && is_content_id(b->headers[j].name))
            j++;
        if (i == a->nheaders || j == b->nheaders)
            return i == a->nheaders && j == b->nheaders;
        const struct http_header *x = &a->headers[i++], *y = &b->headers[j++];
        if (x->value_len != y->value_len || strcmp(x->name, y->name) != 0 ||
            memcmp(x->value, y->value, x->value_len) != 0)
            return 0;
    }
}

/* Puts a Host header first in sreq's headers: the URL's host, else the
 * batch's Host (an absolute URL is resolved like a top-level request). */
static void add_host(struct req_ctx *c, const struct multipart_op *op, struct request *sreq)
{
    const char *host = op->host && *op->host ? op->host : request_header(c->req, "Host");
    struct http_header *h = arena_alloc(c->a, (sreq->nheaders + 1) * sizeof *h);
    h[0] = (struct http_header){"Host", host ? host : "", host ? strlen(host) : 0};
    if (sreq->nheaders)
        memcpy(h + 1, sreq->headers, sreq->nheaders * sizeof *h);
    sreq->headers = h;
    sreq->nheaders++;
}

/* The format of batch part sub, from its own Accept and Content-Type as
 * for a top-level request (doc/protocol.md, Content negotiation): an Atom or XML body, or an Accept
 * the part cannot be answered in, fails the part (415). A part without
 * Accept takes the JSON level the envelope's Accept named, else minimal
 * metadata; the envelope's Accept never refuses anything (doc/protocol.md, Batch envelope). */
static enum terr part_format(const struct req_ctx *c, struct req_ctx *sub)
{
    const struct request *sreq = sub->req;
    const char *ct = request_header(sreq, "Content-Type");
    if (ct && sreq->body_len && (strcasestr(ct, "atom") || strcasestr(ct, "/xml"))) {
        /* An Atom entry: read per operation in op_batch (atom_body). */
        if (!odata_atom_allowed(sub))
            return TERR_AtomFormatNotSupported;
        sub->atom_body = 1;
    }
    if (!request_header(sreq, "Accept")) {
        /* Atom where the part sends Atom, or sends no body inside an
         * envelope that negotiated Atom; else the envelope's JSON level. */
        sub->level = c->level;
        sub->atom = sub->atom_body || (!sreq->body_len && c->atom);
        return TERR_NONE;
    }
    return odata_negotiate(sub, optable_answer_body(sub));
}

/* Sets up sub as the context of batch operation op of parent c, routed like
 * a top-level request to the same account. When tmpl is given (the routed
 * context of an earlier operation for which same_route holds, before it was
 * prepared), its routing is taken over instead of being worked out again. */
static enum terr prepare_part(struct req_ctx *c, const struct multipart_op *op,
                              struct req_ctx *sub, struct request *sreq,
                              struct response *sresp, const struct req_ctx *tmpl)
{
    multipart_op_to_request(c->a, op, c->req, sreq);
    response_init(sresp, c->a);
    if (tmpl) {
        *sub = *tmpl;
        sub->req = sreq;
        sub->resp = sresp;
        if (!op->path_len || op->path[0] == '/')
            add_host(c, op, sreq);
        return TERR_NONE;
    }
    memset(sub, 0, sizeof *sub);
    sub->svc = c->svc;
    sub->req = sreq;
    sub->resp = sresp;
    sub->a = c->a;
    sub->odata = 1;
    sub->in_batch = 1;
    sub->batch = c->batch;
    sub->kbuf = c->kbuf;
    sub->vbuf = c->vbuf;
    sub->version = c->version;
    sub->version_echo = c->version_echo;
    sub->level = c->level;
    sub->auth = c->auth;
    memcpy(sub->request_id, c->request_id, sizeof sub->request_id);
    sub->qp = NULL;
    if (url_parse_query(c->svc->url_memo, c->a, sreq->query, sreq->query_len, &sub->qp, &sub->nqp) != 0)
        return TERR_InvalidInput;

    const char *rest;
    size_t rest_len;
    if (op->path_len && op->path[0] != '/') {
        /* Relative to the service root of the batch's account. */
        sub->account = c->account;
        sub->base = c->base;
        rest = arena_sprintf(c->a, "/%.*s", (int)op->path_len, op->path);
        rest_len = op->path_len + 1;
    } else {
        /* Absolute path (and maybe host): resolve it like a request, with
         * the URL's host or else the batch's Host header. */
        add_host(c, op, sreq);
        enum terr e = route_account(sub, &rest, &rest_len);
        int one_segment = op->path_len && !memchr(op->path + 1, '/', op->path_len - 1);
        if (!(op->host && *op->host) && one_segment &&
            (e == TERR_ResourceNotFound || (e == TERR_NONE && rest_len == 0))) {
            /* A path without host of one segment that names no account, or
             * is the account's name ("/mytable", "/devstoreaccount1" naming
             * a table): relative to the service root of the batch's
             * account, as the legacy Python SDK writes it for a custom
             * endpoint; on a path-style endpoint as on a host-style one. */
            sub->account = c->account;
            sub->secondary = 0;
            sub->unknown_account = 0;
            sub->base = c->base;
            rest = op->path;
            rest_len = op->path_len;
            e = TERR_NONE;
        }
        if (e)
            return TERR_InvalidInput;
        if (sub->account != c->account || sub->secondary)
            return TERR_InvalidInput;
    }
    enum terr e = route_resource(sub, rest, rest_len);
    if (e)
        return e;
    /* The same table as a top-level request, with the restrictions of a
     * part (OPTABLE_PART: entity reads and writes only). */
    const struct op_def *d = optable_match(sub->res, sreq->method, NULL, NULL,
                                           request_header(sreq, "If-Match") != NULL,
                                           OPTABLE_PART, NULL, &e);
    if (!d)
        return e;
    sub->def = d;
    sub->op = d->op;
    if (d->flags & OPF_PREFER)
        odata_prefer(sub);
    if ((e = part_format(c, sub)))
        return e;
    /* Permissions of each operation (doc/protocol.md, Batch execution). URL keys are known now, as
     * for a top-level request (a point query is checked only here); an
     * insert's keys are checked in entity_prepare once known. */
    service_auth_op(sub);
    return TERR_NONE;
}

/* The sub-response as the batch part carries it: the service's header
 * order (doc/protocol.md, Batch responses), DataServiceVersion 3.0; for inserts, errors and
 * queries, 1.0; otherwise. The part's headers point at src's strings and
 * at literals (all outlive the answer), so nothing is copied. */
static void make_part(struct req_ctx *c, const struct response *src, const char *dsv,
                      const char *content_id, struct multipart_part *part)
{
    static const char *const names[] = {"Preference-Applied", "DataServiceVersion",
                                        "Content-Type", "Location", "DataServiceId", "ETag"};
    size_t nnames = sizeof names / sizeof names[0];
    struct http_header *h = arena_alloc(c->a, (nnames + 2) * sizeof *h);
    size_t n = 0;
    h[n++] = (struct http_header){"X-Content-Type-Options", "nosniff", 7};
    h[n++] = (struct http_header){"Cache-Control", "no-cache", 8};
    for (size_t i = 0; i < nnames; i++) {
        if (i == 1) {
            h[n++] = (struct http_header){names[i], dsv, strlen(dsv)};
            continue;
        }
        const struct http_header *sh = response_find_header(src, names[i]);
        if (sh)
            h[n++] = (struct http_header){names[i], sh->value, sh->value_len};
    }
    memset(part, 0, sizeof *part);
    part->status = src->status;
    part->content_id = content_id;
    part->headers = h;
    part->nheaders = n;
    part->body = src->body.data;
    part->body_len = src->body.len;
}

/* Answers operation i's failure e in sub as the batch's only part. */
static void fail_part(struct req_ctx *c, struct req_ctx *sub, size_t i, enum terr e,
                      const char *content_id, struct multipart_part *part)
{
    sub->msg_prefix = arena_sprintf(c->a, "%zu:", i);
    reply_error_msg(sub, e, sub->auth_failed ? sub->auth.message : NULL);
    make_part(c, sub->resp, sub->atom ? "1.0;" : "3.0;", content_id, part);
}

/* Writes the 202 multipart answer around parts (changeset or query). */
static void batch_reply(struct req_ctx *c, const struct multipart_part *parts, size_t n,
                        int query)
{
    char bguid[40], cguid[40];
    service_uuid(c->svc, bguid);
    service_uuid(c->svc, cguid);
    struct response *r = c->resp;
    r->status = 202;
    response_header(r, "Content-Type", multipart_content_type(c->a, bguid));
    if (query)
        multipart_write_query(&r->body, bguid, parts);
    else
        multipart_write_changeset(&r->body, bguid, cguid, parts, n);
}

/* Frees the bodies of the first n sub-responses once the batch answer has
 * copied them (the sub-responses own their body buffers). */
static void free_subs(struct response *sresps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        response_free(&sresps[i]);
}

/* A batch holding one GET (doc/protocol.md, Query in a batch). */
static void batch_query(struct req_ctx *c, const struct multipart_batch *mb)
{
    struct req_ctx sub;
    struct request sreq;
    struct response sresp;
    struct multipart_part part;
    const struct multipart_op *op = &mb->ops[0];
    enum terr e = prepare_part(c, op, &sub, &sreq, &sresp, NULL);
    if (!e && !(sub.def->flags & OPF_BATCH_QUERY))
        e = TERR_InvalidInput;
    if (!e)
        e = authlog_authorize(c, &sub.aop);
    enum terr busy = e ? TERR_NONE : service_batch_admit(c, &sub, op, 1);
    if (busy) {  /* throttled: the whole batch answers 503 (doc/protocol.md, Token buckets) */
        reply_error(c, busy);
        free_subs(&sresp, 1);
        return;
    }
    if (e) {
        fail_part(c, &sub, 0, e, op->content_id, &part);
    } else {
        sub.in_batch = 0;
        sub.guarded = c->guarded;
        sub.msg_prefix = "0:";
        sub.def->handler(&sub);
        make_part(c, &sresp, sub.atom ? "1.0;" : "3.0;", op->content_id, &part);
    }
    batch_reply(c, &part, 1, 1);
    free_subs(&sresp, 1);
}

/* Entities read for some writes of a changeset (batch_read). */
struct batch_reads {
    size_t m;                  /* how many */
    size_t *idx;               /* the write of each (arena) */
    struct entity *cur;        /* its entity, when found */
    int *found;
};

/* The current state of the entities of some of the writes w[0..n) (those
 * prepared without a read when blind, else those judged on one), read in
 * one store call (one round trip on postgres, instead of one read each):
 * r->m of them, write r->idx[k] found (r->found[k]) as r->cur[k]. 0, or a
 * negative backend status (only when r->m > 0). */
static int batch_read(struct req_ctx *c, const struct entity_write *w, size_t n, int blind,
                      struct batch_reads *r)
{
    r->m = 0;
    r->idx = NULL;
    for (size_t i = 0; i < n; i++)
        r->m += (blind ? w[i].blind : w[i].need_read) != 0;
    if (!r->m)
        return 0;
    const char **keys = arena_alloc(c->a, r->m * sizeof *keys);
    size_t *lens = arena_alloc(c->a, r->m * sizeof *lens);
    r->idx = arena_alloc(c->a, r->m * sizeof *r->idx);
    r->cur = arena_alloc(c->a, r->m * sizeof *r->cur);
    r->found = arena_alloc(c->a, r->m * sizeof *r->found);
    for (size_t i = 0, k = 0; i < n; i++)
        if (blind ? w[i].blind : w[i].need_read) {
            keys[k] = w[i].key;
            lens[k] = w[i].key_len;
            r->idx[k++] = i;
        }
    return store_entity_get_many(c->svc->store, c->a, keys, lens, r->m, r->cur, r->found);
}

/* The first of the writes w[0..n) that its entity's current state
 * refuses, in batch order, their entities all read at once: with blind,
 * the writes prepared without a read (an earlier blind write's failure
 * comes first in batch order, so only a changeset that fails anyway
 * asks); else the writes judged on that state (upserts, merges, and on a
 * shared store If-Match "*"), judged now. Returns its index with its
 * error in *e, or n when none is refused (a failed read fails the first
 * write read). */
static size_t batch_first_refused(struct req_ctx *c, struct req_ctx *subs,
                                  struct entity_write *w, size_t n, int blind, enum terr *e)
{
    struct batch_reads r;
    int rc = batch_read(c, w, n, blind, &r);
    if (rc < 0) {
        *e = terr_from_store(rc);
        return r.idx[0];
    }
    for (size_t k = 0; k < r.m; k++) {
        size_t i = r.idx[k];
        *e = blind ? entity_conflict_on(&subs[i], &w[i], r.found[k], &r.cur[k])
                   : entity_judge(&subs[i], &w[i], r.found[k], &r.cur[k]);
        if (*e)
            return i;
    }
    return n;
}

/* Routes, checks and prepares every operation of a changeset into w (one
 * sub-request each): first every check that needs no read, up to the
 * first operation that fails one; then the reads of the operations before
 * it, all in one store call (batch_first_refused). The first operation in batch
 * order that fails answers the changeset, as if each had been prepared
 * in turn. admit: charge the throttle (the first round only). 0, or -1
 * when the batch was answered (an operation failed). */
static int batch_prepare(struct req_ctx *c, const struct multipart_batch *mb,
                         struct entity_write *w, struct req_ctx *subs, struct request *sreqs,
                         struct response *sresps, struct multipart_part *parts, int admit)
{
    struct req_ctx tmpl;           /* routing of the last operation routed in full */
    const struct multipart_op *tmpl_op = NULL;
    size_t stop = mb->nops;        /* the operation whose checks failed */
    enum terr e = TERR_NONE;
    for (size_t i = 0; i < mb->nops; i++) {
        struct req_ctx *sub = &subs[i];
        int reuse = tmpl_op && same_route(tmpl_op, &mb->ops[i]);
        e = prepare_part(c, &mb->ops[i], sub, &sreqs[i], &sresps[i], reuse ? &tmpl : NULL);
        if (!e && !reuse) {
            tmpl = *sub;
            tmpl_op = &mb->ops[i];
        }
        if (!e && !(sub->def->flags & OPF_CHANGESET))
            e = TERR_InvalidInput;
        if (!e && sub->atom_body)
            e = odata_atom_body(sub, &sreqs[i]);
        if (!e && (e = authlog_authorize(c, &sub->aop)))
            sub->auth_failed = 1;
        enum terr busy =
            !e && i == 0 && admit ? service_batch_admit(c, sub, &mb->ops[0], mb->nops) : 0;
        if (busy) {  /* throttled before any backend access: top-level 503 */
            reply_error(c, busy);
            free_subs(sresps, 1);
            return -1;
        }
        if (!e)
            e = entity_prepare_early(sub, &w[i]);
        if (e) {
            stop = i;
            break;
        }
    }
    size_t prepared = stop < mb->nops ? stop + 1 : mb->nops;   /* sub-responses made */
    enum terr je;
    size_t fail = batch_first_refused(c, subs, w, stop, 0, &je);
    if (fail < stop)
        e = je;
    if (fail == mb->nops)
        return 0;
    /* an earlier write prepared without a read may fail first */
    enum terr be;
    size_t bf = batch_first_refused(c, subs, w, fail, 1, &be);
    if (bf < fail) {
        e = be;
        fail = bf;
    }
    fail_part(c, &subs[fail], fail, e, mb->ops[fail].content_id, &parts[0]);
    batch_reply(c, parts, 1, 0);
    free_subs(sresps, prepared);
    return -1;
}

void op_batch(struct req_ctx *c)
{
    const struct request *req = c->req;
    if (req->body_len > BATCH_MAX_BYTES) {
        reply_error(c, TERR_RequestBodyTooLargeLimit);
        return;
    }
    const char *ctype = request_header(req, "Content-Type");
    struct multipart_batch mb;
    const char *reason = NULL;
    int rc = multipart_parse(c->a, ctype ? ctype : "", req->body ? req->body : "", req->body_len,
                             &mb, &reason);
    if (rc == MULTIPART_ERR_MALFORMED) {
        log_debug("batch rejected: %s", reason ? reason : "malformed");
        reply_error(c, TERR_InvalidInput);
        return;
    }
    if (rc == MULTIPART_OK && mb.kind == MULTIPART_QUERY) {
        batch_query(c, &mb);
        return;
    }
    struct batch_state bs = {0};
    c->batch = &bs;
    struct multipart_part *parts = arena_alloc(c->a, (mb.nops ? mb.nops : 1) * sizeof *parts);
    if (rc == MULTIPART_ERR_TOO_MANY) {
        struct req_ctx sub;
        struct request sreq;
        struct response sresp;
        size_t last = MULTIPART_MAX_OPS - 1;
        prepare_part(c, &mb.ops[last], &sub, &sreq, &sresp, NULL);
        sub.msg_prefix = arena_sprintf(c->a, "%zu:", last);
        reply_error_msg(&sub, TERR_InvalidInput,
                        "The batch request operation exceeds the maximum 100 changes per change set.");
        make_part(c, &sresp, "3.0;", mb.ops[last].content_id, &parts[0]);
        batch_reply(c, parts, 1, 0);
        free_subs(&sresp, 1);
        return;
    }

    struct entity_write *w = arena_alloc(c->a, mb.nops * sizeof *w);
    struct req_ctx *subs = arena_alloc(c->a, mb.nops * sizeof *subs);
    struct request *sreqs = arena_alloc(c->a, mb.nops * sizeof *sreqs);
    struct response *sresps = arena_alloc(c->a, mb.nops * sizeof *sresps);
    /* A write that raced the batch's between its reads and its commit
     * (STORE_CONFLICT) makes the whole batch be prepared again. */
    for (int round = 0;; round++) {
        if (round) {
            free_subs(sresps, mb.nops);
            memset(&bs, 0, sizeof bs);
        }
        if (batch_prepare(c, &mb, w, subs, sreqs, sresps, parts, round == 0) != 0)
            return;
        size_t failed = 0;
        int rc = entity_commit(c, w, mb.nops, &failed);
        if (rc == 0)
            break;
        enum terr e = rc == STORE_CONFLICT && failed < mb.nops
                          ? entity_conflict(&subs[failed], &w[failed])
                          : TERR_NONE;
        if (e) {   /* that operation fails the changeset, as if judged first */
            fail_part(c, &subs[failed], failed, e, mb.ops[failed].content_id, &parts[0]);
            batch_reply(c, parts, 1, 0);
            free_subs(sresps, mb.nops);
            return;
        }
        if (rc != STORE_CONFLICT || round + 1 >= BATCH_WRITE_ROUNDS) {
            free_subs(sresps, mb.nops);
            reply_error(c, terr_from_store(rc));
            return;
        }
    }
    for (size_t i = 0; i < mb.nops; i++) {
        entity_respond(&subs[i], &w[i]);
        make_part(c, subs[i].resp, w[i].op == OP_INSERT_ENTITY && !subs[i].atom ? "3.0;" : "1.0;",
                  mb.ops[i].content_id, &parts[i]);
    }
    batch_reply(c, parts, mb.nops, 0);
    free_subs(sresps, mb.nops);
}
