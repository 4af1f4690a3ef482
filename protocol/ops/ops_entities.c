/* ops_entities.c - Get, Insert, Update, Merge, upserts and Delete of one
 * entity (doc/protocol.md, Operations; Writes). Writes go through entity_prepare (every check
 * and the resulting entity, nothing written), entity_commit (one Timestamp
 * and one atomic apply for all prepared writes) and entity_respond, which
 * $batch shares. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "codec/atom.h"
#include "protocol/authlog.h"
#include "protocol/ctx.h"
#include "store/keys.h"
#include "protocol/query.h"

/* Times a write is prepared again after a racing write changed its entity
 * between the read and the write (STORE_CONFLICT): each round re-reads
 * and re-judges, so the answer is the one the new state gives. */
#define ENTITY_WRITE_ROUNDS 8

/* Parses If-Match / If-None-Match for a write (doc/protocol.md, If-Match): present, "*",
 * never (an empty value or a weak ETag this server never issues) or the
 * ETag's Timestamp. */
static enum terr parse_precond(struct req_ctx *c, struct store_precond *p)
{
    memset(p, 0, sizeof *p);
    if (request_header(c->req, "If-None-Match"))
        return TERR_InvalidInput;
    size_t n = request_header_count(c->req, "If-Match");
    if (n == 0)
        return TERR_NONE;
    if (n > 1)
        return TERR_InvalidInput;
    const char *v = request_header(c->req, "If-Match");
    p->present = 1;
    if (!*v) {
        p->never = 1;
        return TERR_NONE;
    }
    if (strcmp(v, "*") == 0) {
        p->any = 1;
        return TERR_NONE;
    }
    /* Any well-formed weak ETag is a condition (412 when it does not name
     * the current version); anything else is not an ETag (400). A lower-
     * case w/ is the same weak marker. */
    size_t len = strlen(v);
    if (!entity_etag_wellformed(v, len))
        return TERR_InvalidInput;
    char *w = arena_strndup(c->a, v, len);
    w[0] = 'W';
    if (entity_etag_parse(w, len, &p->ticks) != 0)
        p->never = 1;
    return TERR_NONE;
}

/* Validates the URL keys of c (doc/protocol.md, URL keys and body keys). A forbidden character makes the
 * URL unparsable for the service: InvalidInput "Bad Request - Error in
 * query syntax." (doc/protocol.md, Key values), not the OutOfRangeInput of a body key. */
static enum terr check_url_keys(struct req_ctx *c)
{
    enum terr e = entity_check_key(c->pk, c->pk_len);
    if (!e && (e = entity_check_key(c->rk, c->rk_len)) == TERR_KeyValueTooLarge)
        e = TERR_RowKeyValueTooLarge;
    return e == TERR_OutOfRangeInput ? TERR_InvalidInputQuerySyntax : e;
}

/* Backend key of (t, pk, rk), in the arena. */
static void entity_key(struct req_ctx *c, const struct table_info *t, const char *pk,
                       size_t pk_len, const char *rk, size_t rk_len, const char **key,
                       size_t *key_len)
{
    struct buf *b = c->kbuf;
    buf_reset(b);
    keys_entity(b, t->id, pk, pk_len, rk, rk_len);
    *key = arena_strndup(c->a, b->data, b->len);
    *key_len = b->len;
}

/* Adds the ETag header for ticks. The text of the last one is kept in the
 * service: a batch's entities all share one Timestamp. */
static void etag_header(struct req_ctx *c, int64_t ticks)
{
    struct service *svc = c->svc;
    if (!svc->etag[0] || svc->etag_ticks != ticks) {
        entity_etag(ticks, svc->etag);
        svc->etag_ticks = ticks;
        svc->etag_len = strlen(svc->etag);
    }
    response_header_ref(c->resp, "ETag", arena_strndup(c->a, svc->etag, svc->etag_len),
                        svc->etag_len);
}

/* BASE/TABLE(PartitionKey='..',RowKey='..') in the arena; *len its length.
 * Built in c->kbuf, which is free again once the key was copied. */
static const char *entity_url(struct req_ctx *c, const struct table_info *t,
                              const struct entity *e, size_t *len)
{
    struct buf *b = c->kbuf;
    buf_reset(b);
    buf_puts(b, c->base);
    buf_putc(b, '/');
    url_entity_path(b, t->name, e->pk, e->pk_len, e->rk, e->rk_len);
    *len = b->len;
    return arena_strndup(c->a, b->data, b->len);
}

/* Writes e as a single-entry body (Get Entity, Insert 201). */
static void write_single(struct req_ctx *c, const struct table_info *t, const struct entity *e,
                         const struct query_opts *q)
{
    if (c->atom) {
        struct atom_ctx ac = {.base = c->base, .account = c->account->name, .table = t->name,
                              .select = q ? q->select : NULL, .nselect = q ? q->nselect : 0};
        atom_ctx_now(c->a, &ac);
        reply_atom_content_type(c);
        atom_write_entity(&c->resp->body, e, &ac, 1);
        return;
    }
    /* odata.metadata, written at minimal and full metadata only. */
    const char *md = NULL;
    if (c->level != ODATA_NOMETADATA)
        md = reply_metadata_url(
            c, q && q->select_text
                   ? arena_concat(c->a, t->name, "/@Element&$select=", q->select_text, (char *)NULL)
                   : arena_concat(c->a, t->name, "/@Element", (char *)NULL));
    struct entity_json_ctx jc = {
        .level = c->level,
        .base = c->base,
        .account = c->account->name,
        .table = t->name,
        .metadata = md,
        .select = q ? q->select : NULL,
        .nselect = q ? q->nselect : 0,
    };
    reply_json_content_type(c);
    entity_json_write(&c->resp->body, e, &jc);
}

/* A shared store's point read when this front end knows the table's id
   from an earlier request: the table's row and the entity under the
   guessed id read in one store call (one round trip on PostgreSQL), the
   entity kept only if the row confirms the id. Returns the table lookup's
   error (TERR_NONE with *t set), *found 1 with *e decoded, 0 absent,
   GET_UNREAD when the guess was wrong (read the entity again under
   (*t)->id), or a backend status. */
enum { GET_UNREAD = 2 };
static enum terr get_with_guess(struct req_ctx *c, uint64_t guess, const struct table_info **t,
                                struct entity *e, int *found)
{
    struct table_info g = {.id = guess};
    const char *key;
    size_t kl;
    entity_key(c, &g, c->pk, c->pk_len, c->rk, c->rk_len, &key, &kl);
    void *val = NULL;
    size_t vl = 0;
    int got = 0;
    int rc = service_table_with(c, t, key, kl, &val, &vl, &got);
    if (rc != STORE_OK)
        return rc == STORE_NOTFOUND ? TERR_TableNotFound : terr_from_store(rc);
    *found = GET_UNREAD;
    if ((*t)->id != guess)
        return TERR_NONE;
    *found = got;
    if (got && entity_decode(c->a, val, vl, e) != 0) {
        log_error("corrupt entity value in the store");
        *found = STORE_CORRUPT;
    }
    return TERR_NONE;
}

void op_get_entity(struct req_ctx *c)
{
    const struct table_info *t;
    struct query_opts q = {0};
    struct entity e = {0};
    int found = GET_UNREAD;
    uint64_t guess;
    /* URL syntax first (doc/protocol.md, Validation order, step 2), then the table. */
    enum terr err = check_url_keys(c);
    if (!err)
        err = catalog_guess(ctx_read_cat(c), c->account->name, c->table, c->table_len, &guess)
                  ? get_with_guess(c, guess, &t, &e, &found)
                  : ctx_table(c, &t);
    if (!err)
        err = query_opts_parse(c, QUERY_POINT, &q);
    if (err) {
        reply_error(c, err);
        return;
    }
    if (found == GET_UNREAD) {
        const char *key;
        size_t kl;
        entity_key(c, t, c->pk, c->pk_len, c->rk, c->rk_len, &key, &kl);
        found = store_entity_get(ctx_read_store(c), c->a, key, kl, &e);
    }
    if (found <= 0) {
        reply_error(c, found < 0 ? terr_from_store(found) : TERR_ResourceNotFound);
        return;
    }
    e.pk = c->pk;
    e.pk_len = c->pk_len;
    e.rk = c->rk;
    e.rk_len = c->rk_len;
    c->resp->status = 200;
    etag_header(c, e.timestamp);
    write_single(c, t, &e, &q);
}

/* Keys named by the request: the body's for an insert, else the URL's. */
static void prepare_keys(struct req_ctx *c, struct entity_write *w, const struct entity *body)
{
    if (c->op == OP_INSERT_ENTITY) {
        w->e = *body;
    } else {
        /* The URL keys were checked before anything else. */
        if (body)
            w->e = *body;
        /* The URL names the entity; body keys are ignored (doc/protocol.md, URL keys and body keys). */
        w->e.pk = c->pk;
        w->e.pk_len = c->pk_len;
        w->e.rk = c->rk;
        w->e.rk_len = c->rk_len;
    }
}

/* What op does to its entity, in the store's terms (its row's). */
static enum store_intent entity_intent(enum op op)
{
    return optable_get(op)->intent;
}

/* The Table error of a store verdict (TERR_NONE: go on). */
static enum terr entity_verdict(enum store_verdict v)
{
    switch (v) {
    case STORE_EXISTS:
        return TERR_EntityAlreadyExists;
    case STORE_NOT_FOUND:
        return TERR_ResourceNotFound;
    case STORE_MISMATCH:
        return TERR_UpdateConditionNotSatisfied;
    case STORE_GO:
        break;
    }
    return TERR_NONE;
}

enum terr entity_conflict_on(struct req_ctx *c, const struct entity_write *w, int found,
                             const struct entity *cur)
{
    struct store_expect cond;
    return entity_verdict(store_judge(entity_intent(c->op), &w->pc, found,
                                      found ? cur->timestamp : 0, store_shared(c->svc->store),
                                      &cond));
}

enum terr entity_conflict(struct req_ctx *c, const struct entity_write *w)
{
    struct entity cur = {0};
    int found = store_entity_get(c->svc->store, c->a, w->key, w->key_len, &cur);
    if (found < 0)
        return terr_from_store(found);
    return entity_conflict_on(c, w, found, &cur);
}

/* 1 when the single write c names will read its entity before writing
 * (entity_prepare_early's need_read, foreseen from the operation and its
 * If-Match before they are checked): merges, upserts, and updates or
 * deletes under "*" (on a shared store) or an empty If-Match. A wrong
 * guess costs only a read that entity_prepare makes again or ignores. */
static int entity_reads_first(struct req_ctx *c)
{
    if (c->op == OP_INSERT_OR_REPLACE || c->op == OP_INSERT_OR_MERGE ||
        c->op == OP_MERGE_ENTITY)
        return 1;
    if (c->op != OP_UPDATE_ENTITY && c->op != OP_DELETE_ENTITY)
        return 0;
    const char *v = request_header(c->req, "If-Match");
    return request_header_count(c->req, "If-Match") == 1 && v && (!*v || !strcmp(v, "*"));
}

/* The table of a single write (w->t), and on a shared store, when the
 * write will read its entity and this front end knows the table's id, the
 * entity too in the same store call (one round trip on PostgreSQL, as a
 * point GET does): w->pre_found and w->pre_e, which entity_prepare uses
 * when the table's row confirms the id. */
static enum terr entity_table_first(struct req_ctx *c, struct entity_write *w)
{
    uint64_t guess;
    if (c->in_batch || c->batch || !entity_reads_first(c) ||
        !catalog_guess(c->svc->cat, c->account->name, c->table, c->table_len, &guess))
        return ctx_table(c, &w->t);
    return get_with_guess(c, guess, &w->t, &w->pre_e, &w->pre_found);
}

enum terr entity_prepare_early(struct req_ctx *c, struct entity_write *w)
{
    memset(w, 0, sizeof *w);
    w->op = c->op;
    w->del = c->op == OP_DELETE_ENTITY;
    /* URL keys are URL syntax: checked before the table and the body, so a
     * key with a forbidden character in both answers as the URL's (doc/protocol.md,
     * URL keys and body keys; Validation order, step 2). */
    enum terr err = c->op != OP_INSERT_ENTITY ? check_url_keys(c) : TERR_NONE;
    if (err)
        return err;
    w->pre_found = GET_UNREAD;
    if (!(w->t = batch_table(c)) && (err = entity_table_first(c, w)))
        return err;
    struct entity body;
    if (!w->del) {
        struct entity_range range;
        err = entity_json_parse_range(c->a, c->req->body ? c->req->body : "", c->req->body_len,
                                      c->op == OP_INSERT_ENTITY ? ENTITY_PARSE_INSERT
                                                                : ENTITY_PARSE_UPDATE,
                                      &body, &range);
        if (err == TERR_OutOfRangeInput && range.name) {
            /* the service names the key or property and its value */
            size_t len;
            const char *msg = terr_range_message(c->a, range.name, range.name_len, range.value,
                                                 range.value_len, &len);
            reply_set_error_msg(c, err, msg, len);
        }
        if (err)
            return err;
    }
    prepare_keys(c, w, w->del ? NULL : &body);
    if (c->batch && (err = batch_check_entity(c, w)))
        return err;
    if (c->in_batch || c->op == OP_INSERT_ENTITY) {
        /* A SAS key range can be checked only now (doc/protocol.md, Batch execution; Table SAS). */
        c->aop.pk = w->e.pk;
        c->aop.pk_len = w->e.pk_len;
        c->aop.rk = w->e.rk;
        c->aop.rk_len = w->e.rk_len;
        if ((err = authlog_authorize(c, &c->aop))) {
            c->auth_failed = 1;
            return err;
        }
    }
    struct store_precond pc = {0};
    if (c->op != OP_INSERT_ENTITY && (err = parse_precond(c, &pc)))
        return err;
    if (w->del && !pc.present) {
        /* Inside a batch a DELETE without If-Match means "*" (doc/protocol.md, Delete Entity). */
        if (!c->in_batch)
            return TERR_MissingRequiredHeader;
        pc.present = pc.any = 1;
    }

    entity_key(c, w->t, w->e.pk, w->e.pk_len, w->e.rk, w->e.rk_len, &w->key, &w->key_len);
    w->pc = pc;
    /* An insert, or an update or delete under an If-Match that can match,
     * writes without reading: the backend checks the expectation with the
     * write (absent; present; the ETag's version), and only a write it
     * refuses is read, to tell 409, 404 and 412 apart (entity_conflict).
     * A batch of inserts is then one store call. Merges read what they
     * merge into; upserts read whether they create (the advisor's). On a
     * shared store "*" reads too: the new Timestamp must exceed the
     * version it replaces (store.h), which only the ETag names. */
    int shared = store_shared(c->svc->store);
    if (c->op == OP_INSERT_ENTITY ||
        ((c->op == OP_UPDATE_ENTITY || c->op == OP_DELETE_ENTITY) && pc.present && !pc.never &&
         !(pc.any && shared))) {
        w->blind = 1;
        w->created = c->op == OP_INSERT_ENTITY;
        w->cur_ticks = pc.present && !pc.any ? pc.ticks : 0;
        store_judge_blind(entity_intent(c->op), &pc, &w->cond);
        return TERR_NONE;
    }
    w->need_read = 1;
    return TERR_NONE;
}

enum terr entity_judge(struct req_ctx *c, struct entity_write *w, int found, struct entity *cur)
{
    w->created = !found && !w->del;
    w->cur_ticks = found ? cur->timestamp : 0;
    enum terr verdict =
        entity_verdict(store_judge(entity_intent(c->op), &w->pc, found, cur->timestamp,
                                   store_shared(c->svc->store), &w->cond));
    if (verdict || !found)
        return verdict;
    if ((c->op == OP_MERGE_ENTITY || c->op == OP_INSERT_OR_MERGE)) {
        cur->pk = w->e.pk;
        cur->pk_len = w->e.pk_len;
        cur->rk = w->e.rk;
        cur->rk_len = w->e.rk_len;
        entity_merge(c->a, cur, &w->e);
        enum terr err = entity_check_limits(cur);
        if (err)
            return err;
        w->e = *cur;
    }
    return TERR_NONE;
}

enum terr entity_prepare(struct req_ctx *c, struct entity_write *w)
{
    enum terr err = entity_prepare_early(c, w);
    if (err || !w->need_read)
        return err;
    struct entity cur = {0};
    int found = w->pre_found;
    if (found == GET_UNREAD)
        found = store_entity_get(c->svc->store, c->a, w->key, w->key_len, &cur);
    else if (found == 1)
        cur = w->pre_e;
    if (found < 0)
        return terr_from_store(found);
    return entity_judge(c, w, found, &cur);
}

int entity_commit(struct req_ctx *c, struct entity_write *w, size_t n, size_t *failed)
{
    struct service *svc = c->svc;
    struct store_put small[2];
    struct store_put *p = n <= 2 ? small : arena_alloc(c->a, n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (struct store_put){.key = w[i].key, .key_len = w[i].key_len,
                                  .e = w[i].del ? NULL : &w[i].e, .expect = w[i].cond,
                                  .blind = w[i].blind, .cur_ticks = w[i].cur_ticks};
    int account = c->account ? (int)(c->account - svc->set.accounts) : -1;
    int64_t ts;
    int rc = store_commit(svc->store, account, p, n, c->vbuf, &ts, failed);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        w[i].e.timestamp = ts;   /* the deletes' too (the puts' is set) */
    if (svc->advisor)
        service_advise_writes(c, w, n);
    return 0;
}

void entity_respond(struct req_ctx *c, const struct entity_write *w)
{
    struct response *r = c->resp;
    if (w->del) {
        r->status = 204;
        return;
    }
    if (w->op != OP_INSERT_ENTITY) {
        r->status = 204;
        etag_header(c, w->e.timestamp);
        return;
    }
    size_t url_len;
    const char *url = entity_url(c, w->t, &w->e, &url_len);
    /* c->prefer is one of odata_prefer's literals */
    if (c->prefer && strcmp(c->prefer, "return-no-content") == 0) {
        r->status = 204;
        etag_header(c, w->e.timestamp);
        response_header_ref(r, "Location", url, url_len);
        response_header_ref(r, "DataServiceId", url, url_len);
        response_header_ref(r, "Preference-Applied", c->prefer, strlen(c->prefer));
        return;
    }
    r->status = 201;
    etag_header(c, w->e.timestamp);
    response_header_ref(r, "Location", url, url_len);
    if (c->prefer)
        response_header_ref(r, "Preference-Applied", c->prefer, strlen(c->prefer));
    write_single(c, w->t, &w->e, NULL);
}

void op_write(struct req_ctx *c)
{
    struct entity_write w;
    for (int round = 0;; round++) {
        enum terr err = entity_prepare(c, &w);
        if (err) {
            if (c->auth_failed)
                reply_auth_error(c, err);
            else
                reply_error(c, err);
            return;
        }
        int rc = entity_commit(c, &w, 1, NULL);
        if (rc == 0)
            break;
        /* refused: the entity is not as the write expected (a blind write
           learns why now; a judged one raced another write) */
        if (rc == STORE_CONFLICT && (err = entity_conflict(c, &w))) {
            reply_error(c, err);
            return;
        }
        if (rc != STORE_CONFLICT || round + 1 >= ENTITY_WRITE_ROUNDS) {
            reply_error(c, terr_from_store(rc));
            return;
        }
    }
    entity_respond(c, &w);
}
