/* ops_props.c - Get/Set Table Service Properties and Get Table Service
 * Stats (doc/protocol.md, Service properties document; Get Service Stats).
 *
 * An account's properties are stored at keys_props(account) as the very
 * document Get returns (canonical XML, so storing and loading reuse the
 * reader and the writer). Every request with an Origin and every GET/HEAD
 * needs the account's CORS rules (doc/protocol.md, CORS), so decoded properties are
 * cached in the service (svc->props), one slot per account; Set writes the
 * backend, then drops the slot so the next use reloads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "protocol/ops/ops_props.h"
#include "protocol/ctx.h"
#include "codec/edm.h"
#include "store/keys.h"
#include "codec/props.h"
#include "codec/xml.h"

#define PROPS_MAX_BODY (64u << 10)
/* One cached account. */
struct props_slot {
    char account[64];
    int loaded;
    uint64_t loaded_us;         /* when (monotonic): shared stores reload */
    struct props p;
    char *pool;                 /* malloc'd: the CORS strings of p */
};

/* A service's cache (svc->props), made at its first use. */
struct props_cache {
    struct props_slot slot[CONFIG_MAX_ACCOUNTS];
};

/* Copies the CORS strings of p into one malloc'd pool owned by the slot. */
static void slot_keep(struct props_slot *s, const struct props *p)
{
    size_t total = 0;
    for (size_t i = 0; i < p->cors.n; i++) {
        const struct cors_rule *r = &p->cors.r[i];
        total += strlen(r->origins) + strlen(r->methods) + strlen(r->allowed_headers) +
                 strlen(r->exposed_headers) + 4;
    }
    s->p = *p;
    s->pool = total ? malloc(total) : NULL;
    if (total && !s->pool)
        abort();
    char *q = s->pool;
    for (size_t i = 0; i < p->cors.n; i++) {
        const char **f[4] = {&s->p.cors.r[i].origins, &s->p.cors.r[i].methods,
                             &s->p.cors.r[i].allowed_headers, &s->p.cors.r[i].exposed_headers};
        for (int k = 0; k < 4; k++) {
            size_t l = strlen(*f[k]) + 1;
            memcpy(q, *f[k], l);
            *f[k] = q;
            q += l;
        }
    }
    s->loaded = 1;
}

static void slot_drop(struct props_slot *s)
{
    free(s->pool);
    memset(s, 0, sizeof *s);
}

/* Reads the stored properties of account from the backend into *p
 * (defaults when none are stored or the stored ones are unreadable). */
static void props_read(struct store *store, struct arena *a, const char *account,
                       struct props *p)
{
    memset(p, 0, sizeof *p);
    const char *val;           /* in a: parsed strings point into it */
    size_t vl;
    if (store_props_get(store, a, account, &val, &vl) != STORE_OK)
        return;                /* none stored (defaults), or logged */
    unsigned present;
    struct props tmp;
    memset(&tmp, 0, sizeof tmp);
    if (props_parse(a, val, vl, &tmp, &present) != TERR_NONE || present != P_ALL)
        log_error("stored service properties of %s are unreadable; using defaults", account);
    else
        *p = tmp;
}

/* How long a front end on a shared store trusts its cached properties:
 * another front end may have set them (doc/architecture.md, Several front ends on one store:
 * service properties are read on every CORS request, so not a read per request). */
#define PROPS_SHARED_TTL_US 1000000u

/* The cached properties of account, loading them when needed (on a
 * shared store again once they are PROPS_SHARED_TTL_US old). */
static const struct props *props_get(struct service *svc, const char *account)
{
    if (!svc->props && !(svc->props = calloc(1, sizeof *svc->props)))
        abort();
    struct props_cache *cache = svc->props;
    struct props_slot *free_slot = NULL;
    for (size_t i = 0; i < CONFIG_MAX_ACCOUNTS; i++) {
        struct props_slot *s = &cache->slot[i];
        if (s->loaded && strcmp(s->account, account) == 0) {
            if (!svc->shared || clock_mono_us() - s->loaded_us < PROPS_SHARED_TTL_US)
                return &s->p;
            slot_drop(s);
        }
        if (!s->loaded && !free_slot)
            free_slot = s;
    }
    if (!free_slot) { /* more accounts than configured: should not happen */
        free_slot = &cache->slot[0];
        slot_drop(free_slot);
    }
    struct arena *a = arena_new(8192);
    struct props p;
    props_read(svc->store, a, account, &p);
    /* another request may have filled the slot while this one waited */
    if (free_slot->loaded)
        slot_drop(free_slot);
    snprintf(free_slot->account, sizeof free_slot->account, "%s", account);
    slot_keep(free_slot, &p);
    free_slot->loaded_us = clock_mono_us();
    arena_free(a);
    return &free_slot->p;
}

/* Forgets the cached properties of account. */
static void props_forget(struct service *svc, const char *account)
{
    for (size_t i = 0; svc->props && i < CONFIG_MAX_ACCOUNTS; i++)
        if (svc->props->slot[i].loaded && strcmp(svc->props->slot[i].account, account) == 0)
            slot_drop(&svc->props->slot[i]);
}

void props_cache_free(struct props_cache *cache)
{
    if (!cache)
        return;
    for (size_t i = 0; i < CONFIG_MAX_ACCOUNTS; i++)
        slot_drop(&cache->slot[i]);
    free(cache);
}

int props_put_stored(struct req_ctx *c, const char *account, const char *doc, size_t len)
{
    int rc = store_props_put(c->svc->store, account, doc, len);
    props_forget(c->svc, account);
    return rc;
}

const struct cors_rules *props_cors_rules(struct service *svc, const char *account)
{
    return &props_get(svc, account)->cors;
}

void op_get_service_properties(struct req_ctx *c)
{
    struct store *rs = ctx_read_store(c);
    struct props own;
    const struct props *p = &own;
    if (rs != c->svc->store)   /* the secondary's replica: read there, not cached */
        props_read(rs, c->a, c->account->name, &own);
    else
        p = props_get(c->svc, c->account->name);
    c->resp->status = 200;
    response_header(c->resp, "Content-Type", "application/xml");
    props_write(p, &c->resp->body);
}

void op_set_service_properties(struct req_ctx *c)
{
    struct service *svc = c->svc;
    const struct request *req = c->req;
    if (req->body_len > PROPS_MAX_BODY) {
        reply_error(c, TERR_RequestBodyTooLarge);
        return;
    }
    struct props in, merged;
    unsigned present;
    memset(&in, 0, sizeof in);
    enum terr e = props_parse(c->a, req->body ? req->body : "", req->body_len, &in, &present);
    if (e) {
        reply_error(c, e);
        c->resp->reason = terr_info(e)->message;
        return;
    }
    merged = *props_get(svc, c->account->name);
    if (present & P_LOGGING)
        merged.log = in.log;
    if (present & P_HOUR)
        merged.hour = in.hour;
    if (present & P_MINUTE)
        merged.minute = in.minute;
    if (present & P_CORS)
        merged.cors = in.cors;
    buf_reset(c->vbuf);
    props_write(&merged, c->vbuf);
    int rc = store_props_put(svc->store, c->account->name, c->vbuf->data, c->vbuf->len);
    props_forget(svc, c->account->name);
    if (rc != 0) {
        reply_error(c, terr_from_store(rc));
        return;
    }
    c->resp->status = 202;
}

void op_get_service_stats(struct req_ctx *c)
{
    if (!c->secondary) {
        reply_error(c, TERR_InvalidQueryParameterValue);
        return;
    }
    /* Over a replica (doc/scale-out.md, Secondary endpoint on a read
       replica): live with the time before which every primary write is readable there, or, with no
       replica that can tell, unavailable with an empty LastSyncTime as
       the service answers for a secondary it cannot reach. Without one
       the secondary reads the primary's store: everything is there now. */
    char date[40] = "";
    const char *status = "live";
    int64_t sync_s;
    struct store *rs = ctx_read_store(c);
    if (rs == c->svc->store)
        edm_rfc1123_format((int64_t)((edm_now_ticks() - EDM_UNIX_EPOCH_TICKS) /
                                     EDM_TICKS_PER_SECOND), date);
    else if (store_replica_sync_time(rs, &sync_s) == STORE_OK)
        edm_rfc1123_format(sync_s, date);
    else
        status = "unavailable";
    struct buf *b = &c->resp->body;
    c->resp->status = 200;
    response_header(c->resp, "Content-Type", "application/xml");
    buf_puts(b, XML_DECL);
    xml_open(b, "StorageServiceStats");
    xml_open(b, "GeoReplication");
    xml_put_elem(b, "Status", status);
    xml_put_elem(b, "LastSyncTime", date);
    xml_close(b, "GeoReplication");
    xml_close(b, "StorageServiceStats");
}
