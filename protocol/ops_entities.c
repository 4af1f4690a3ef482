/* ops_entities.c - Get, Insert, Update, Merge, upserts and Delete of one
 * entity (SPEC 3.6-3.10, 7). */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "protocol/ctx.h"
#include "protocol/keys.h"
#include "protocol/query.h"

/* Result of reading the If-Match header (SPEC 7.3). */
struct precond {
    int present;   /* header sent */
    int any;       /* "*" */
    int never;     /* empty value: can never match */
    int64_t ticks; /* the ETag's timestamp otherwise */
};

/* Parses If-Match / If-None-Match for a write. */
static enum terr parse_precond(struct req_ctx *c, struct precond *p)
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
    if (entity_etag_parse(v, strlen(v), &p->ticks) != 0)
        return TERR_InvalidInput;
    return TERR_NONE;
}

/* Validates the URL keys of c (SPEC 7.4). */
static enum terr check_url_keys(struct req_ctx *c)
{
    enum terr e = entity_check_key(c->pk, c->pk_len);
    if (!e)
        e = entity_check_key(c->rk, c->rk_len);
    return e;
}

/* Encodes the backend key of (table, c->pk, c->rk) into svc->key. */
static void entity_key(struct req_ctx *c, const struct table_info *t, const char *pk,
                       size_t pk_len, const char *rk, size_t rk_len)
{
    buf_reset(&c->svc->key);
    keys_entity(&c->svc->key, t->id, pk, pk_len, rk, rk_len);
}

/* Reads the current entity at svc->key. 1 found (*val malloc()ed, e
 * decoded into it), 0 absent, -1 error (already answered). */
static int load_entity(struct req_ctx *c, void **val, struct entity *e)
{
    struct service *svc = c->svc;
    size_t vl;
    char err[256] = "";
    int rc = svc->ops->get(svc->st, svc->key.data, svc->key.len, val, &vl, err, sizeof err);
    if (rc == BACKEND_NOTFOUND)
        return 0;
    if (rc != BACKEND_OK) {
        log_error("backend get failed: %s", err);
        reply_error(c, TERR_InternalError);
        return -1;
    }
    if (entity_decode(c->a, *val, vl, e) != 0) {
        log_error("corrupt entity value in the store");
        free(*val);
        *val = NULL;
        reply_error(c, TERR_InternalError);
        return -1;
    }
    return 1;
}

/* Writes e at svc->key (which must hold its key). 0 or -1 (answered). */
static int store_entity(struct req_ctx *c, const struct entity *e)
{
    struct service *svc = c->svc;
    buf_reset(&svc->val);
    entity_encode(e, &svc->val);
    struct backend_write w = {BACKEND_PUT, svc->key.data, svc->key.len, svc->val.data,
                              svc->val.len};
    if (service_apply(svc, &w, 1) != 0) {
        reply_error(c, TERR_InternalError);
        return -1;
    }
    return 0;
}

/* Adds the ETag header for ticks. */
static void etag_header(struct req_ctx *c, int64_t ticks)
{
    char etag[80];
    entity_etag(ticks, etag);
    response_header(c->resp, "ETag", etag);
}

/* BASE/TABLE(PartitionKey='..',RowKey='..') */
static const char *entity_url(struct req_ctx *c, const struct table_info *t,
                              const struct entity *e)
{
    struct buf b;
    buf_init(&b);
    buf_puts(&b, c->base);
    buf_putc(&b, '/');
    url_entity_path(&b, t->name, e->pk, e->pk_len, e->rk, e->rk_len);
    const char *s = arena_strndup(c->a, b.data, b.len);
    buf_free(&b);
    return s;
}

/* Writes e as a single-entry body (Get Entity, Insert 201). */
static void write_single(struct req_ctx *c, const struct table_info *t, const struct entity *e,
                         const struct query_opts *q)
{
    const char *md = q && q->select_text
                         ? arena_sprintf(c->a, "%s/@Element&$select=%s", t->name, q->select_text)
                         : arena_sprintf(c->a, "%s/@Element", t->name);
    struct entity_json_ctx jc = {
        .level = c->level,
        .base = c->base,
        .account = c->account->name,
        .table = t->name,
        .metadata = reply_metadata_url(c, md),
        .select = q ? q->select : NULL,
        .nselect = q ? q->nselect : 0,
    };
    reply_json_content_type(c);
    entity_json_write(&c->resp->body, e, &jc);
}

void op_get_entity(struct req_ctx *c)
{
    const struct table_info *t;
    enum terr err = ctx_table(c, &t);
    struct query_opts q = {0};
    if (!err)
        err = check_url_keys(c);
    if (!err)
        err = query_opts_parse(c, QUERY_POINT, &q);
    if (err) {
        reply_error(c, err);
        return;
    }
    entity_key(c, t, c->pk, c->pk_len, c->rk, c->rk_len);
    void *val = NULL;
    struct entity e = {0};
    int found = load_entity(c, &val, &e);
    if (found < 0)
        return;
    if (!found) {
        reply_error(c, TERR_ResourceNotFound);
        return;
    }
    e.pk = c->pk;
    e.pk_len = c->pk_len;
    e.rk = c->rk;
    e.rk_len = c->rk_len;
    c->resp->status = 200;
    etag_header(c, e.timestamp);
    write_single(c, t, &e, &q);
    free(val);
}

void op_insert_entity(struct req_ctx *c)
{
    const struct table_info *t;
    enum terr err = ctx_table(c, &t);
    struct entity e;
    if (!err)
        err = entity_json_parse(c->a, c->req->body ? c->req->body : "",
                                c->req->body_len, ENTITY_PARSE_INSERT, &e);
    if (err) {
        reply_error(c, err);
        return;
    }
    /* The keys are known only now: check a SAS key range (SPEC 10.8). */
    c->aop.pk = e.pk;
    c->aop.pk_len = e.pk_len;
    c->aop.rk = e.rk;
    c->aop.rk_len = e.rk_len;
    if ((err = auth_authorize(&c->auth, &c->aop))) {
        reply_auth_error(c, err);
        return;
    }
    entity_key(c, t, e.pk, e.pk_len, e.rk, e.rk_len);
    void *val = NULL;
    struct entity old = {0};
    int found = load_entity(c, &val, &old);
    free(val);
    if (found < 0)
        return;
    if (found) {
        reply_error(c, TERR_EntityAlreadyExists);
        return;
    }
    e.timestamp = service_next_timestamp(c->svc);
    if (store_entity(c, &e) != 0)
        return;
    const char *url = entity_url(c, t, &e);
    struct response *r = c->resp;
    if (c->prefer && strcmp(c->prefer, "return-no-content") == 0) {
        r->status = 204;
        etag_header(c, e.timestamp);
        response_header(r, "Location", url);
        response_header(r, "DataServiceId", url);
        response_header(r, "Preference-Applied", c->prefer);
        return;
    }
    r->status = 201;
    etag_header(c, e.timestamp);
    response_header(r, "Location", url);
    if (c->prefer)
        response_header(r, "Preference-Applied", c->prefer);
    write_single(c, t, &e, NULL);
}

/* Update Entity, Merge Entity, Insert Or Replace, Insert Or Merge. */
void op_write_entity(struct req_ctx *c)
{
    int merge = c->op == OP_MERGE_ENTITY || c->op == OP_INSERT_OR_MERGE;
    const struct table_info *t;
    struct precond pc;
    struct entity body;
    enum terr err = ctx_table(c, &t);
    if (!err)
        err = check_url_keys(c);
    if (!err)
        err = entity_json_parse(c->a, c->req->body ? c->req->body : "",
                                c->req->body_len, ENTITY_PARSE_UPDATE, &body);
    if (!err)
        err = parse_precond(c, &pc);
    if (err) {
        reply_error(c, err);
        return;
    }
    /* The URL names the entity; body keys, if any, are ignored (SPEC 7.4). */
    body.pk = c->pk;
    body.pk_len = c->pk_len;
    body.rk = c->rk;
    body.rk_len = c->rk_len;
    entity_key(c, t, c->pk, c->pk_len, c->rk, c->rk_len);
    void *val = NULL;
    struct entity cur = {0};
    int found = load_entity(c, &val, &cur);
    if (found < 0)
        return;
    if (!found && pc.present) {
        reply_error(c, TERR_ResourceNotFound);
        return;
    }
    if (found && pc.present && !pc.any && (pc.never || pc.ticks != cur.timestamp)) {
        free(val);
        reply_error(c, TERR_UpdateConditionNotSatisfied);
        return;
    }
    struct entity *out = &body;
    if (merge && found) {
        cur.pk = c->pk;
        cur.pk_len = c->pk_len;
        cur.rk = c->rk;
        cur.rk_len = c->rk_len;
        entity_merge(c->a, &cur, &body);
        out = &cur;
        if ((err = entity_check_limits(out))) {
            free(val);
            reply_error(c, err);
            return;
        }
    }
    out->timestamp = service_next_timestamp(c->svc);
    int rc = store_entity(c, out);
    free(val);
    if (rc != 0)
        return;
    c->resp->status = 204;
    etag_header(c, out->timestamp);
}

void op_delete_entity(struct req_ctx *c)
{
    const struct table_info *t;
    struct precond pc;
    enum terr err = ctx_table(c, &t);
    if (!err)
        err = check_url_keys(c);
    if (!err)
        err = parse_precond(c, &pc);
    if (!err && !pc.present)
        err = TERR_MissingRequiredHeader;
    if (err) {
        reply_error(c, err);
        return;
    }
    entity_key(c, t, c->pk, c->pk_len, c->rk, c->rk_len);
    void *val = NULL;
    struct entity cur = {0};
    int found = load_entity(c, &val, &cur);
    if (found < 0)
        return;
    free(val);
    if (!found) {
        reply_error(c, TERR_ResourceNotFound);
        return;
    }
    if (!pc.any && (pc.never || pc.ticks != cur.timestamp)) {
        reply_error(c, TERR_UpdateConditionNotSatisfied);
        return;
    }
    struct backend_write w = {BACKEND_DELETE, c->svc->key.data, c->svc->key.len, NULL, 0};
    if (service_apply(c->svc, &w, 1) != 0) {
        reply_error(c, TERR_InternalError);
        return;
    }
    c->resp->status = 204;
}
