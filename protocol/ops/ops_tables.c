/* ops_tables.c - Create Table, Delete Table, Query Tables, Get Table
 * (doc/protocol.md, Operations; Tables and table names). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "codec/atom.h"
#include "protocol/ctx.h"
#include "store/keys.h"
#include "store/purge.h"
#include "protocol/query.h"
#include "codec/table_json.h"
#include "codec/token.h"

#define TABLE_PAGE_MAX 1000

/* Validates a new table name; TERR_NONE when it may be created (doc/protocol.md, Create Table:
 * length, then characters, then the reserved name). */
static enum terr check_table_name(const char *s, size_t n)
{
    if (n < 3 || n > 63)
        return TERR_OutOfRangeInput;
    if (!isalpha((unsigned char)s[0]))
        return TERR_InvalidResourceName;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) || (unsigned char)s[i] > 127)
            return TERR_InvalidResourceName;
    if (n == 6 && strncasecmp(s, "tables", 6) == 0)
        return TERR_InvalidInput;
    return TERR_NONE;
}

/* Appends one table entry object for the negotiated level. */
static void write_table_entry(struct req_ctx *c, struct buf *b, const char *name, size_t n,
                              const char *metadata)
{
    buf_putc(b, '{');
    int first = 1;
    if (metadata && c->level != ODATA_NOMETADATA) {
        buf_puts(b, "\"odata.metadata\":");
        json_put_string(b, metadata, strlen(metadata));
        first = 0;
    }
    if (c->level == ODATA_FULL) {
        if (!first)
            buf_putc(b, ',');
        buf_puts(b, "\"odata.type\":");
        const char *type = arena_sprintf(c->a, "%s.Tables", c->account->name);
        json_put_string(b, type, strlen(type));
        buf_puts(b, ",\"odata.id\":");
        const char *id = arena_sprintf(c->a, "%s/Tables('%.*s')", c->base, (int)n, name);
        json_put_string(b, id, strlen(id));
        buf_puts(b, ",\"odata.editLink\":");
        const char *edit = arena_sprintf(c->a, "Tables('%.*s')", (int)n, name);
        json_put_string(b, edit, strlen(edit));
        first = 0;
    }
    if (!first)
        buf_putc(b, ',');
    buf_puts(b, "\"TableName\":");
    json_put_string(b, name, n);
    buf_putc(b, '}');
}

/* One table as a top-level Atom entry. */
static void write_atom_table(struct req_ctx *c, struct buf *b, const char *name, size_t n)
{
    struct atom_ctx ac = {.base = c->base, .account = c->account->name};
    atom_ctx_now(c->a, &ac);
    atom_write_table(b, name, n, &ac, 1);
}

/* Rounds of a create on a shared store that lost the id counter to
 * another front end's create (store/tables.h). */
#define CREATE_ROUNDS 64

/* Writes the row of a new table name (expecting it absent) with a fresh id
 * (*id); on a shared store the id counter's update goes in the same apply.
 * 0, BACKEND_CONFLICT when the table exists, or a failure status. */
static int create_row(struct req_ctx *c, const char *name, size_t n, uint64_t *id)
{
    struct service *svc = c->svc;
    struct buf ckey, cval;
    buf_init(&ckey);
    buf_init(&cval);
    int rc;
    for (int round = 0;; round++) {
        struct backend_cond cond[2] = {{BACKEND_EXPECT_ABSENT, 0}, {BACKEND_EXPECT_ANY, 0}};
        buf_reset(&ckey);
        buf_reset(&cval);
        if (svc->shared) {
            char err[256] = "";
            rc = tables_claim_id(svc->tables, svc->kv, id, &ckey, &cval, &cond[1], err,
                                 sizeof err);
            if (rc != BACKEND_OK) {
                log_error("reading the table id counter failed: %s", err);
                break;
            }
        } else {
            *id = tables_next_id(svc->tables);
        }
        struct table_info t = {.id = *id, .name = (char *)name, .name_len = n};
        buf_reset(c->kbuf);
        buf_reset(c->vbuf);
        keys_table(c->kbuf, c->account->name, name, n);
        tables_encode(&t, c->vbuf);
        struct backend_write w[2] = {
            {BACKEND_PUT, c->kbuf->data, c->kbuf->len, c->vbuf->data, c->vbuf->len},
            {BACKEND_PUT, ckey.data, ckey.len, cval.data, cval.len},
        };
        /* a create that raced this one (it waited on storage) got there
           first: the row's expectation fails */
        size_t failed = 0;
        rc = service_apply(c, 0, w, cond, svc->shared ? 2 : 1, &failed);
        /* another front end took the id: claim the next one */
        if (rc == BACKEND_CONFLICT && failed == 1 && round + 1 < CREATE_ROUNDS)
            continue;
        if (rc == BACKEND_CONFLICT && failed == 1)
            rc = BACKEND_UNAVAILABLE;   /* still racing: 503, try again */
        break;
    }
    buf_free(&ckey);
    buf_free(&cval);
    return rc;
}

void op_create_table(struct req_ctx *c)
{
    const char *name;
    size_t n;
    enum terr e = table_json_name(c->a, c->req->body, c->req->body_len, &name, &n);
    if (!e)
        e = check_table_name(name, n);
    struct service *svc = c->svc;
    /* on a shared store the row's absent expectation is the only check */
    if (!e && !svc->shared && tables_find(svc->tables, c->account->name, name, n))
        e = TERR_TableAlreadyExists;
    if (e) {
        reply_error_msg(c, e, e == TERR_OutOfRangeInput
                                  ? "The specified resource name length is not within the "
                                    "permissible limits."
                                  : NULL);
        return;
    }
    uint64_t id;
    int rc = create_row(c, name, n, &id);
    if (rc != 0) {
        reply_error(c, rc == BACKEND_CONFLICT ? TERR_TableAlreadyExists : terr_from_backend(rc));
        return;
    }
    if (!svc->shared)
        tables_add(svc->tables, c->account->name, id, name, n, NULL, 0);

    const char *url = arena_sprintf(c->a, "%s/Tables('%s')", c->base, name);
    struct response *r = c->resp;
    if (c->prefer && strcmp(c->prefer, "return-no-content") == 0) {
        r->status = 204;
        response_header(r, "Location", url);
        response_header(r, "DataServiceId", url);
        response_header(r, "Preference-Applied", c->prefer);
        return;
    }
    r->status = 201;
    if (c->atom)
        reply_atom_content_type(c);
    else
        reply_json_content_type(c);
    response_header(r, "Location", url);
    if (c->prefer)
        response_header(r, "Preference-Applied", c->prefer);
    if (c->atom)
        write_atom_table(c, &r->body, name, n);
    else
        write_table_entry(c, &r->body, name, n, reply_metadata_url(c, "Tables/@Element"));
}

/* Deletes the table row and, in the same atomic apply(), records that the
 * table's entities are to be purged; the entities (unreachable from now
 * on: a re-created table gets a new id) are removed in the background, so
 * the answer takes the same time for a table of any size
 * (store/purge.h). */
void op_delete_table(struct req_ctx *c)
{
    struct service *svc = c->svc;
    const struct table_info *t;
    int rc = service_table(c, c->table, c->table_len, &t);
    if (rc != BACKEND_OK) {
        reply_error(c, rc == BACKEND_NOTFOUND ? TERR_ResourceNotFound : terr_from_backend(rc));
        return;
    }
    uint64_t id = t->id;
    struct buf rkey, rval;
    buf_init(&rkey);
    buf_init(&rval);
    purge_record(&rkey, &rval, id);
    buf_reset(c->kbuf);
    keys_table(c->kbuf, c->account->name, c->table, c->table_len);
    struct backend_write w[2] = {
        {BACKEND_DELETE, c->kbuf->data, c->kbuf->len, NULL, 0},
        {BACKEND_PUT, rkey.data, rkey.len, rval.data, rval.len},
    };
    /* a delete that raced this one removed it first (on a shared store:
       or another front end re-created it, with another id: the row's
       version is its id) */
    struct backend_cond cond[2] = {{BACKEND_EXPECT_PRESENT, 0}, {BACKEND_EXPECT_ANY, 0}};
    if (svc->shared)
        cond[0] = (struct backend_cond){BACKEND_EXPECT_VERSION, id};
    rc = service_apply(c, 0, w, cond, 2, NULL);
    buf_free(&rkey);
    buf_free(&rval);
    if (rc != 0) {
        reply_error(c, rc == BACKEND_CONFLICT ? TERR_ResourceNotFound : terr_from_backend(rc));
        return;
    }
    if (!svc->shared)
        tables_remove(svc->tables, c->account->name, c->table, c->table_len);
    service_purge_start(c, id);
    c->resp->status = 204;
}

void op_get_table(struct req_ctx *c)
{
    const struct table_info *t;
    int rc = service_table(c, c->table, c->table_len, &t);
    if (rc != BACKEND_OK) {
        reply_error(c, rc == BACKEND_NOTFOUND ? TERR_ResourceNotFound : terr_from_backend(rc));
        return;
    }
    c->resp->status = 200;
    if (c->atom) {
        reply_atom_content_type(c);
        write_atom_table(c, &c->resp->body, t->name, t->name_len);
        return;
    }
    reply_json_content_type(c);
    write_table_entry(c, &c->resp->body, t->name, t->name_len,
                      reply_metadata_url(c, "Tables/@Element"));
}

void op_query_tables(struct req_ctx *c)
{
    struct service *svc = c->svc;
    struct query_opts q;
    enum terr e = query_opts_parse(c, QUERY_TABLES, &q);
    if (e) {
        reply_error_msg(c, e, q.message);
        return;
    }
    const struct query_param *next = url_query_get(c->qp, c->nqp, "NextTableName");
    struct buf start, end, lower;
    buf_init(&start);
    buf_init(&end);
    buf_init(&lower);
    keys_table_prefix(&start, c->account->name);
    keys_table_prefix(&end, c->account->name);
    keys_prefix_end(&end);
    if (next) {
        const char *key;
        size_t kl;
        if (token_decode(c->a, next->value, next->value_len, &key, &kl) != 0) {
            buf_free(&start);
            buf_free(&end);
            reply_error(c, TERR_InvalidInput);
            return;
        }
        buf_reset(&start);
        keys_table(&start, c->account->name, key, kl);
    }
    struct kv_iter *it;
    char err[256];
    int orc = kv_iter_open(svc->kv, start.data, start.len, end.data, end.len, &it, err,
                           sizeof err);
    if (orc != BACKEND_OK) {
        log_error("query tables: %s", err);
        buf_free(&start);
        buf_free(&end);
        reply_error(c, terr_from_backend(orc));
        return;
    }
    struct response *r = c->resp;
    struct buf *b = &r->body;
    struct atom_ctx ac = {.base = c->base, .account = c->account->name};
    if (c->atom) {
        atom_ctx_now(c->a, &ac);
        atom_feed_open(b, &ac, "Tables");
    } else {
        buf_putc(b, '{');
        if (c->level != ODATA_NOMETADATA) {
            buf_puts(b, "\"odata.metadata\":");
            const char *md = reply_metadata_url(c, "Tables");
            json_put_string(b, md, strlen(md));
            buf_putc(b, ',');
        }
        buf_puts(b, "\"value\":[");
    }
    int limit = q.top == QUERY_NO_TOP ? TABLE_PAGE_MAX : q.top, count = 0;
    const char *next_name = NULL;
    size_t next_len = 0;
    const void *k, *v;
    size_t kl, vl;
    int rc = 0;
    /* $top=0: an empty page without a continuation (as in Query Entities,
     * doc/protocol-notes.md). */
    while (limit > 0 && (rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        uint64_t id;
        const char *name;
        size_t nl, al;
        const unsigned char *acl;
        if (tables_decode(v, vl, &id, &name, &nl, &acl, &al) != 0)
            continue;
        if (!query_match_table(&q, name, nl))
            continue;
        if (count == limit) {
            next_name = arena_strndup(c->a, name, nl);
            next_len = nl;
            break;
        }
        if (c->atom) {
            count++;
            atom_write_table(b, name, nl, &ac, 0);
            continue;
        }
        if (count++)
            buf_putc(b, ',');
        write_table_entry(c, b, name, nl, NULL);
    }
    if (rc < 0) {
        log_error("query tables: %s", kv_iter_error(it));
        kv_iter_close(it);
        buf_free(&start);
        buf_free(&end);
        buf_free(&lower);
        buf_reset(b);
        reply_error(c, terr_from_backend(rc));
        return;
    }
    kv_iter_close(it);
    r->status = 200;
    if (c->atom) {
        atom_feed_close(b);
        reply_atom_content_type(c);
    } else {
        buf_puts(b, "]}");
        reply_json_content_type(c);
    }
    if (next_name) {
        char *low = arena_strndup(c->a, next_name, next_len);
        for (size_t i = 0; i < next_len; i++)
            low[i] = (char)tolower((unsigned char)low[i]);
        response_header(r, "x-ms-continuation-NextTableName",
                        token_encode(c->a, low, next_len));
    }
    buf_free(&start);
    buf_free(&end);
    buf_free(&lower);
}
