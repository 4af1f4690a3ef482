/* ops_import.c - the admin listener's POST /import: lines of a tabled
 * export file (format in codec/dump_line.h) written into the running
 * service's store, so that `tabled import --admin URL FILE` can seed a
 * server on any backend (an in-memory one too) without stopping it.
 *
 * The body is one piece of the file: its header line first (the format
 * is checked on every piece), then whole lines. The piece is read twice:
 * every line is checked first (dump_line_read, and props_stored_valid
 * for service properties), and nothing is written unless all of them are
 * valid; then the lines are written in order:
 *   - service properties: stored, and the cached copy dropped;
 *   - a table line: the table is created when missing (a fresh id, or on
 *     a store shared with other front ends one claimed from the store's
 *     counter, as Create Table does) and given the line's ACL;
 *   - entity lines: their table is created when missing (without an ACL),
 *     and runs of up to IMPORT_BATCH entities of one account are applied
 *     at once as plain puts keeping the file's Timestamps (and so ETags),
 *     counted for the account's entity gauge.
 * The writes go through the service's store like any request's, so the
 * table cache, the entity counts and the group commit (the answer is sent
 * once the piece is durable) stay right, and requests are served between
 * pieces (and, on a store whose calls complete later, between batches).
 * One import runs at a time: another one meanwhile is answered 503.
 *
 * Answers (JSON): 200 {"tables":T,"entities":E,"properties":P,
 * "unserved":[accounts]} (tables created; accounts written that this
 * server does not serve, which a restart with them configured shows);
 * 400 {"error":...,"line":N} naming the piece's first bad line (nothing
 * written); 503 while another import runs; 500/503 {"error":...,"line":N,
 * "entities":E} when the store failed part way (the lines before N were
 * written, but for at most the last IMPORT_BATCH entities; importing again
 * is idempotent). */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "protocol/ctx.h"
#include "codec/dump_line.h"
#include "codec/entity_json.h"
#include "codec/errors.h"
#include "protocol/ops/ops_props.h"
#include "store/keys.h"
#include "store/store.h"
#include "store/tables.h"

/* Entities per store apply. */
#define IMPORT_BATCH 1000
/* Distinct unserved accounts named in the answer. */
#define IMPORT_MAX_UNSERVED 16

/* One import request's state. */
struct import {
    struct req_ctx *c;
    struct arena *line_a;      /* one line's parse, reset per line */
    struct arena *batch_a;     /* the pending batch's keys and values */
    struct store_raw w[IMPORT_BATCH];
    size_t n;                  /* pending writes */
    int account;               /* their account's index, or -1 */
    /* the table of the last table or entity line, and its id */
    char last_account[64], last_table[64];
    uint64_t last_id;
    int have_last;
    unsigned long long tables, entities, properties;
    const char *unserved[IMPORT_MAX_UNSERVED];
    size_t nunserved;
    char err[512];
};

/* The answer: status and a JSON object of the counts (and error). */
static void import_answer(struct import *im, int status, unsigned long line)
{
    struct response *r = im->c->resp;
    struct buf *b = &r->body;
    r->status = status;
    buf_reset(b);
    response_header(r, "Content-Type", "application/json");
    buf_putc(b, '{');
    if (im->err[0]) {
        buf_puts(b, "\"error\":");
        json_put_string(b, im->err, strlen(im->err));
        buf_printf(b, ",\"line\":%lu,", line);
    }
    buf_printf(b, "\"tables\":%llu,\"entities\":%llu,\"properties\":%llu,\"unserved\":[",
               im->tables, im->entities, im->properties);
    for (size_t i = 0; i < im->nunserved; i++) {
        if (i)
            buf_putc(b, ',');
        json_put_string(b, im->unserved[i], strlen(im->unserved[i]));
    }
    buf_puts(b, "]}\n");
}

/* The next line of body[*pos..len) (without its newline); 0 at the end. */
static int next_line(const char *body, size_t len, size_t *pos, const char **line,
                     size_t *line_len)
{
    if (*pos >= len)
        return 0;
    const char *p = body + *pos;
    const char *nl = memchr(p, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - p) : len - *pos;
    *line = p;
    *line_len = n;
    *pos += n + (nl ? 1 : 0);
    return 1;
}

/* The check pass: every line valid, the first one the header of this
 * format. 0, or the bad line's number with im->err set. */
static unsigned long import_check(struct import *im, const char *body, size_t len)
{
    size_t pos = 0;
    const char *line;
    size_t n;
    unsigned long lineno = 0;
    char why[400];
    while (next_line(body, len, &pos, &line, &n)) {
        lineno++;
        struct dump_line l;
        arena_reset(im->line_a);
        if (dump_line_read(im->line_a, line, n, &l, why, sizeof why) != 0) {
            snprintf(im->err, sizeof im->err, "%s", why);
            return lineno;
        }
        if ((lineno == 1) != (l.kind == DUMP_LINE_HEADER)) {
            snprintf(im->err, sizeof im->err, lineno == 1
                     ? "the body must begin with the export file's header line "
                       "({\"tabled-export\":%d,...})"
                     : "a second header line", DUMP_FORMAT);
            return lineno;
        }
        if (l.kind == DUMP_LINE_HEADER && l.format != DUMP_FORMAT) {
            snprintf(im->err, sizeof im->err, "export format version %lld, but this server "
                     "reads version %d only", l.format, DUMP_FORMAT);
            return lineno;
        }
        if (l.kind == DUMP_LINE_PROPS && !props_stored_valid((const char *)l.raw, l.raw_len)) {
            snprintf(im->err, sizeof im->err, "\"service-properties\" is not a service "
                     "properties document as tabled export writes it");
            return lineno;
        }
    }
    if (lineno == 0) {
        snprintf(im->err, sizeof im->err, "the body is empty: send the export file's header "
                 "line and its lines");
        return 1;
    }
    return 0;
}

/* The index of account in the configuration, or -1 (then noted as
 * unserved, once). */
static int import_account(struct import *im, const char *account)
{
    const struct service_settings *cfg = &im->c->svc->set;
    const struct account_cfg *a = account_find(cfg->accounts, cfg->naccounts, account);
    if (a)
        return (int)(a - cfg->accounts);
    for (size_t i = 0; i < im->nunserved; i++)
        if (strcmp(im->unserved[i], account) == 0)
            return -1;
    if (im->nunserved < IMPORT_MAX_UNSERVED)
        im->unserved[im->nunserved++] = arena_strndup(im->c->a, account, strlen(account));
    return -1;
}

/* Applies the pending entity writes. 0 or a backend status. */
static int import_flush(struct import *im)
{
    if (!im->n)
        return 0;
    int rc = store_put_raw(im->c->svc->store, im->account, im->w, im->n);
    if (rc == STORE_OK)
        im->entities += im->n;
    im->n = 0;
    arena_reset(im->batch_a);
    return rc;
}

/* The id of table account/name, creating the table when missing; with
 * set_acl its ACL becomes acl[0..acl_len) (a create sets it too):
 * catalog_import_table. 0 with *id, or a store status (im->err set). */
static int import_table(struct import *im, const char *account, const char *name,
                        const unsigned char *acl, size_t acl_len, int set_acl, uint64_t *id)
{
    int created = 0;
    int rc = catalog_import_table(im->c->svc->cat, account, name, acl, acl_len, set_acl, id,
                                  &created, im->err, sizeof im->err);
    if (rc == STORE_OK && created)
        im->tables++;
    else if (rc != STORE_OK && !im->err[0])
        snprintf(im->err, sizeof im->err, "writing table %s/%s failed: %s", account, name,
                 terr_info(terr_from_store(rc))->message);
    return rc;
}

/* Queues one entity's put (key and value copied), applying the batch when
 * it is full or belongs to another account. 0 or a backend status. */
static int import_entity(struct import *im, int account, uint64_t table_id,
                         const struct entity *e)
{
    int rc;
    if ((im->n && im->account != account) || im->n == IMPORT_BATCH)
        if ((rc = import_flush(im)) != STORE_OK)
            return rc;
    struct req_ctx *c = im->c;
    buf_reset(c->kbuf);
    buf_reset(c->vbuf);
    keys_entity(c->kbuf, table_id, e->pk, e->pk_len, e->rk, e->rk_len);
    entity_encode(e, c->vbuf);
    void *k = arena_alloc(im->batch_a, c->kbuf->len), *v = arena_alloc(im->batch_a, c->vbuf->len);
    memcpy(k, c->kbuf->data, c->kbuf->len);
    memcpy(v, c->vbuf->data, c->vbuf->len);
    im->account = account;
    im->w[im->n++] = (struct store_raw){.key = k, .key_len = c->kbuf->len, .val = v,
                                        .val_len = c->vbuf->len};
    return STORE_OK;
}

/* The write pass over lines the check pass found valid. 0, or the line
 * being written when the store failed (im->err set; *rcp its status). */
static unsigned long import_write(struct import *im, const char *body, size_t len, int *rcp)
{
    size_t pos = 0;
    const char *line;
    size_t n;
    unsigned long lineno = 0;
    char why[400];
    int rc = STORE_OK;
    while (rc == STORE_OK && next_line(body, len, &pos, &line, &n)) {
        lineno++;
        struct dump_line l;
        arena_reset(im->line_a);
        if (dump_line_read(im->line_a, line, n, &l, why, sizeof why) != 0) {
            snprintf(im->err, sizeof im->err, "%s", why);   /* checked already */
            rc = STORE_INVALID;
            break;
        }
        if (l.kind == DUMP_LINE_HEADER)
            continue;
        int account = import_account(im, l.account);
        if (l.kind == DUMP_LINE_PROPS) {
            if ((rc = import_flush(im)) == STORE_OK &&
                (rc = props_put_stored(im->c, l.account, (const char *)l.raw, l.raw_len)) ==
                    STORE_OK)
                im->properties++;
            continue;
        }
        uint64_t id;
        if (l.kind == DUMP_LINE_TABLE || !im->have_last ||
            strcmp(im->last_account, l.account) != 0 || strcmp(im->last_table, l.table) != 0) {
            /* a table row is written before the entities that follow it */
            if ((rc = import_flush(im)) != STORE_OK ||
                (rc = import_table(im, l.account, l.table, l.raw, l.raw_len,
                                   l.kind == DUMP_LINE_TABLE, &id)) != STORE_OK)
                break;
            snprintf(im->last_account, sizeof im->last_account, "%s", l.account);
            snprintf(im->last_table, sizeof im->last_table, "%s", l.table);
            im->last_id = id;
            im->have_last = 1;
        }
        if (l.kind == DUMP_LINE_ENTITY)
            rc = import_entity(im, account, im->last_id, &l.e);
    }
    if (rc == STORE_OK && (rc = import_flush(im)) != STORE_OK)
        lineno = lineno ? lineno : 1;
    *rcp = rc;
    if (rc == STORE_OK)
        return 0;
    if (!im->err[0])
        snprintf(im->err, sizeof im->err, "the store failed: %s",
                 terr_info(terr_from_store(rc))->message);
    return lineno;
}

void op_import(struct req_ctx *c)
{
    struct service *svc = c->svc;
    struct import *im = arena_alloc(c->a, sizeof *im);
    memset(im, 0, sizeof *im);
    im->c = c;
    im->account = -1;
    if (c->req->method != HTTP_M_POST) {
        snprintf(im->err, sizeof im->err, "POST the export file's lines to /import");
        response_header(c->resp, "Allow", "POST");
        import_answer(im, 405, 0);
        return;
    }
    if (svc->importing) {
        snprintf(im->err, sizeof im->err, "another import is running; send this piece again "
                 "once it is over");
        response_header(c->resp, "Retry-After", "1");
        import_answer(im, 503, 0);
        return;
    }
    const char *body = c->req->body ? c->req->body : "";
    size_t len = c->req->body_len;
    im->line_a = arena_new(65536);
    im->batch_a = arena_new(1 << 20);
    svc->importing = 1;
    unsigned long bad = import_check(im, body, len);
    if (bad) {
        import_answer(im, 400, bad);
    } else {
        int rc;
        unsigned long at = import_write(im, body, len, &rc);
        if (at) {
            log_warn("import: line %lu of a piece: %s", at, im->err);
            int status = terr_info(terr_from_store(rc))->status;
            import_answer(im, status >= 500 ? status : 500, at);
        } else {
            import_answer(im, 200, 0);
        }
    }
    svc->importing = 0;
    arena_free(im->line_a);
    arena_free(im->batch_a);
}
