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

void op_create_table(struct req_ctx *c)
{
    const char *name;
    size_t n;
    enum terr e = table_json_name(c->a, c->req->body, c->req->body_len, &name, &n);
    if (!e)
        e = check_table_name(name, n);
    struct service *svc = c->svc;
    /* on a shared store the row's absent expectation is the only check */
    if (!e && catalog_known(svc->cat, c->account->name, name, n))
        e = TERR_TableAlreadyExists;
    if (e) {
        reply_error_msg(c, e, e == TERR_OutOfRangeInput
                                  ? "The specified resource name length is not within the "
                                    "permissible limits."
                                  : NULL);
        return;
    }
    uint64_t id;
    int rc = catalog_create(svc->cat, c->account->name, name, n, &id);
    if (rc != 0) {
        reply_error(c, rc == STORE_CONFLICT ? TERR_TableAlreadyExists : terr_from_store(rc));
        return;
    }

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
    int account = (int)(c->account - c->svc->set.accounts);
    int rc = catalog_delete(c->svc->cat, account, c->account->name, c->table, c->table_len);
    if (rc != STORE_OK) {
        reply_error(c, rc == STORE_NOTFOUND ? TERR_ResourceNotFound : terr_from_store(rc));
        return;
    }
    c->resp->status = 204;
}

void op_get_table(struct req_ctx *c)
{
    const struct table_info *t;
    int rc = service_table(c, c->table, c->table_len, &t);
    if (rc != STORE_OK) {
        reply_error(c, rc == STORE_NOTFOUND ? TERR_ResourceNotFound : terr_from_store(rc));
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
    struct store_scan *it;
    char err[256];
    int orc = store_scan_open(ctx_read_store(c), start.data, start.len, end.data, end.len, &it, err,
                              sizeof err);
    if (orc != STORE_OK) {
        log_error("query tables: %s", err);
        buf_free(&start);
        buf_free(&end);
        reply_error(c, terr_from_store(orc));
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
    while (limit > 0 && (rc = store_scan_next(it, &k, &kl, &v, &vl)) == 1) {
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
        log_error("query tables: %s", store_scan_error(it));
        store_scan_close(it);
        buf_free(&start);
        buf_free(&end);
        buf_free(&lower);
        buf_reset(b);
        reply_error(c, terr_from_store(rc));
        return;
    }
    store_scan_close(it);
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
