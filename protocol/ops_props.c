/* ops_props.c - Get/Set Table Service Properties and Get Table Service
 * Stats (SPEC 3.14-3.16, 11.1, 11.2).
 *
 * An account's properties are stored at keys_props(account) as the very
 * document Get returns (canonical XML, so storing and loading reuse the
 * reader and the writer). Every request with an Origin and every GET/HEAD
 * needs the account's CORS rules (SPEC 11.4), so decoded properties are
 * cached here, one slot per account; Set writes the backend, then drops
 * the slot so the next use reloads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "protocol/ops_props.h"
#include "protocol/ctx.h"
#include "protocol/edm.h"
#include "store/keys.h"
#include "protocol/xml.h"

#define PROPS_MAX_BODY (64u << 10)
#define DAYS_MAX 365

struct retention {
    int enabled;
    int days;                   /* 1..365 when enabled */
};

struct logging {
    int read, write, del;
    struct retention ret;
};

struct props_metrics {
    int enabled;
    int include_apis;           /* meaningful when enabled */
    struct retention ret;
};

struct props {
    struct logging log;
    struct props_metrics hour, minute;
    struct cors_rules cors;
};

/* Top-level elements present in a Set body. */
#define P_LOGGING 1u
#define P_HOUR 2u
#define P_MINUTE 4u
#define P_CORS 8u
#define P_ALL 15u

/* One cached account. */
struct props_slot {
    char account[64];
    int loaded;
    uint64_t loaded_us;         /* when (monotonic): shared stores reload */
    struct props p;
    char *pool;                 /* malloc'd: the CORS strings of p */
};

/* The cache belongs to one service; a different service resets it. */
static struct {
    const struct service *svc;
    struct props_slot slot[CONFIG_MAX_ACCOUNTS];
} cache;

/* The single leaf child `name` of n: *out NULL when absent; -1 when it
 * occurs twice or has children. */
static int leaf(const struct xml_node *n, const char *name, const struct xml_node **out)
{
    *out = NULL;
    if (xml_count(n, name) > 1)
        return -1;
    const struct xml_node *c = xml_child(n, name);
    if (c && (c->first || c->mixed))
        return -1;
    *out = c;
    return 0;
}

/* True when s[0..n) is only XML whitespace. */
static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i]))
            return 0;
    return 1;
}

/* The single container child `name` of n (absent: *out NULL). */
static int container(const struct xml_node *n, const char *name, const struct xml_node **out)
{
    *out = NULL;
    if (xml_count(n, name) > 1)
        return -1;
    const struct xml_node *c = xml_child(n, name);
    if (c && (c->mixed || !blank(c->text, c->text_len)))
        return -1;
    *out = c;
    return 0;
}

/* A required true/false leaf. */
static enum terr get_bool(struct arena *a, const struct xml_node *n, const char *name, int *out)
{
    const struct xml_node *c;
    if (leaf(n, name, &c) || !c)
        return TERR_InvalidXmlDocument;
    const char *v = xml_trimmed(a, c, NULL);
    if (strcmp(v, "true") == 0)
        *out = 1;
    else if (strcmp(v, "false") == 0)
        *out = 0;
    else
        return TERR_InvalidXmlNodeValue;
    return TERR_NONE;
}

/* Decimal digits only, at most max; -1 when not. */
static int64_t get_uint(const char *v, int64_t max)
{
    if (!*v)
        return -1;
    int64_t r = 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9')
            return -1;
        r = r * 10 + (*v - '0');
        if (r > max)
            return -1;
    }
    return r;
}

/* <Version>1.0</Version>, required. */
static enum terr get_version(struct arena *a, const struct xml_node *n)
{
    const struct xml_node *c;
    if (leaf(n, "Version", &c) || !c)
        return TERR_InvalidXmlDocument;
    return strcmp(xml_trimmed(a, c, NULL), "1.0") == 0 ? TERR_NONE : TERR_InvalidXmlNodeValue;
}

/* <RetentionPolicy><Enabled/>[<Days/>]</RetentionPolicy>, required. */
static enum terr get_retention(struct arena *a, const struct xml_node *n, struct retention *r)
{
    const struct xml_node *rp, *d;
    if (container(n, "RetentionPolicy", &rp) || !rp)
        return TERR_InvalidXmlDocument;
    enum terr e = get_bool(a, rp, "Enabled", &r->enabled);
    if (e)
        return e;
    r->days = 0;
    if (leaf(rp, "Days", &d))
        return TERR_InvalidXmlDocument;
    if (!r->enabled)
        return TERR_NONE;
    int64_t days = d ? get_uint(xml_trimmed(a, d, NULL), DAYS_MAX) : -1;
    if (days < 1)
        return TERR_InvalidXmlNodeValue;
    r->days = (int)days;
    return TERR_NONE;
}

static enum terr get_logging(struct arena *a, const struct xml_node *n, struct logging *l)
{
    enum terr e = get_version(a, n);
    if (!e)
        e = get_bool(a, n, "Delete", &l->del);
    if (!e)
        e = get_bool(a, n, "Read", &l->read);
    if (!e)
        e = get_bool(a, n, "Write", &l->write);
    if (!e)
        e = get_retention(a, n, &l->ret);
    return e;
}

static enum terr get_metrics(struct arena *a, const struct xml_node *n, struct props_metrics *m)
{
    enum terr e = get_version(a, n);
    if (!e)
        e = get_bool(a, n, "Enabled", &m->enabled);
    if (e)
        return e;
    m->include_apis = 0;
    const struct xml_node *inc;
    if (leaf(n, "IncludeAPIs", &inc))
        return TERR_InvalidXmlDocument;
    if (m->enabled) {
        if (!inc)
            return TERR_InvalidXmlDocument;
        if ((e = get_bool(a, n, "IncludeAPIs", &m->include_apis)))
            return e;
    }
    return get_retention(a, n, &m->ret);
}

/* One list of a CORS rule; required lists must be present. */
static enum terr get_list(struct arena *a, const struct xml_node *rule, const char *name,
                          enum cors_list kind, int required, const char **out, size_t *total)
{
    const struct xml_node *c;
    if (leaf(rule, name, &c) || (required && !c))
        return TERR_InvalidXmlDocument;
    size_t len = 0;
    const char *v = c ? xml_trimmed(a, c, &len) : "";
    *out = cors_list_normalize(a, kind, v, len);
    if (!*out)
        return TERR_InvalidXmlNodeValue;
    *total += strlen(*out);
    return TERR_NONE;
}

static enum terr get_cors(struct arena *a, const struct xml_node *n, struct cors_rules *rs)
{
    memset(rs, 0, sizeof *rs);
    if (xml_count(n, "CorsRule") > CORS_MAX_RULES)
        return TERR_InvalidXmlDocument;
    size_t total = 0;
    for (const struct xml_node *rule = n->first; rule; rule = rule->next) {
        if (strcmp(rule->name, "CorsRule") != 0)
            continue;
        if (rule->mixed)
            return TERR_InvalidXmlDocument;
        struct cors_rule *r = &rs->r[rs->n];
        enum terr e;
        if ((e = get_list(a, rule, "AllowedOrigins", CORS_ORIGINS, 1, &r->origins, &total)) ||
            (e = get_list(a, rule, "AllowedMethods", CORS_METHODS, 1, &r->methods, &total)) ||
            (e = get_list(a, rule, "AllowedHeaders", CORS_HEADERS, 0, &r->allowed_headers,
                          &total)) ||
            (e = get_list(a, rule, "ExposedHeaders", CORS_HEADERS, 0, &r->exposed_headers,
                          &total)))
            return e;
        const struct xml_node *age;
        if (leaf(rule, "MaxAgeInSeconds", &age) || !age)
            return TERR_InvalidXmlDocument;
        r->max_age = get_uint(xml_trimmed(a, age, NULL), 2147483647);
        if (r->max_age < 0)
            return TERR_InvalidXmlNodeValue;
        rs->n++;
    }
    return total > CORS_MAX_TEXT ? TERR_InvalidXmlNodeValue : TERR_NONE;
}

/* Parses a StorageServiceProperties document into *p; *present tells
 * which top-level elements it had (at least one, else an error). */
static enum terr props_parse(struct arena *a, const char *s, size_t n, struct props *p,
                             unsigned *present)
{
    struct xml_node *root;
    char err[160];
    *present = 0;
    if (xml_parse(a, s, n, &root, err, sizeof err) != 0) {
        log_debug("service properties: %s", err);
        return TERR_InvalidXmlDocument;
    }
    if (strcmp(root->name, "StorageServiceProperties") != 0 || root->mixed)
        return TERR_InvalidXmlDocument;
    static const struct {
        const char *name;
        unsigned bit;
    } parts[] = {{"Logging", P_LOGGING}, {"HourMetrics", P_HOUR},
                 {"MinuteMetrics", P_MINUTE}, {"Cors", P_CORS}};
    for (size_t i = 0; i < 4; i++) {
        const struct xml_node *c;
        if (container(root, parts[i].name, &c))
            return TERR_InvalidXmlDocument;
        if (!c)
            continue;
        *present |= parts[i].bit;
        enum terr e = parts[i].bit == P_LOGGING  ? get_logging(a, c, &p->log)
                      : parts[i].bit == P_HOUR   ? get_metrics(a, c, &p->hour)
                      : parts[i].bit == P_MINUTE ? get_metrics(a, c, &p->minute)
                                                 : get_cors(a, c, &p->cors);
        if (e)
            return e;
    }
    return *present ? TERR_NONE : TERR_InvalidXmlDocument;
}

static void put_bool(struct buf *b, const char *name, int v)
{
    xml_put_elem(b, name, v ? "true" : "false");
}

static void put_retention(struct buf *b, const struct retention *r)
{
    xml_open(b, "RetentionPolicy");
    put_bool(b, "Enabled", r->enabled);
    if (r->enabled)
        buf_printf(b, "<Days>%d</Days>", r->days);
    xml_close(b, "RetentionPolicy");
}

static void put_metrics(struct buf *b, const char *name, const struct props_metrics *m)
{
    xml_open(b, name);
    xml_put_elem(b, "Version", "1.0");
    put_bool(b, "Enabled", m->enabled);
    if (m->enabled)
        put_bool(b, "IncludeAPIs", m->include_apis);
    put_retention(b, &m->ret);
    xml_close(b, name);
}

/* A list element; empty lists as <Name />. */
static void put_list(struct buf *b, const char *name, const char *v)
{
    if (*v)
        xml_put_elem(b, name, v);
    else
        xml_put_empty(b, name);
}

/* The Get document, in the element order of SPEC 11.1.2. */
static void props_write(const struct props *p, struct buf *b)
{
    buf_puts(b, XML_DECL);
    xml_open(b, "StorageServiceProperties");
    xml_open(b, "Logging");
    xml_put_elem(b, "Version", "1.0");
    put_bool(b, "Read", p->log.read);
    put_bool(b, "Write", p->log.write);
    put_bool(b, "Delete", p->log.del);
    put_retention(b, &p->log.ret);
    xml_close(b, "Logging");
    put_metrics(b, "HourMetrics", &p->hour);
    put_metrics(b, "MinuteMetrics", &p->minute);
    if (p->cors.n == 0) {
        xml_put_empty(b, "Cors");
    } else {
        xml_open(b, "Cors");
        for (size_t i = 0; i < p->cors.n; i++) {
            const struct cors_rule *r = &p->cors.r[i];
            xml_open(b, "CorsRule");
            put_list(b, "AllowedMethods", r->methods);
            put_list(b, "AllowedOrigins", r->origins);
            put_list(b, "AllowedHeaders", r->allowed_headers);
            put_list(b, "ExposedHeaders", r->exposed_headers);
            buf_printf(b, "<MaxAgeInSeconds>%lld</MaxAgeInSeconds>", (long long)r->max_age);
            xml_close(b, "CorsRule");
        }
        xml_close(b, "Cors");
    }
    xml_close(b, "StorageServiceProperties");
}

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
static void props_read(struct service *svc, struct arena *a, const char *account, struct props *p)
{
    memset(p, 0, sizeof *p);
    struct buf key;
    buf_init(&key);
    keys_props(&key, account);
    const void *borrowed = NULL;
    size_t vl = 0;
    char err[256] = "";
    int rc = kv_get(svc->kv, key.data, key.len, &borrowed, &vl, err, sizeof err);
    buf_free(&key);
    if (rc == BACKEND_NOTFOUND)
        return;
    if (rc != BACKEND_OK) {
        log_error("reading service properties of %s: %s", account, err);
        return;
    }
    char *val = arena_alloc(a, vl ? vl : 1);   /* parsed strings point into it */
    memcpy(val, borrowed, vl);
    unsigned present;
    struct props tmp;
    memset(&tmp, 0, sizeof tmp);
    if (props_parse(a, val, vl, &tmp, &present) != TERR_NONE || present != P_ALL)
        log_error("stored service properties of %s are unreadable; using defaults", account);
    else
        *p = tmp;
}

int props_stored_valid(const char *s, size_t n)
{
    struct arena *a = arena_new(8192);
    char *copy = arena_alloc(a, n ? n : 1);   /* parsed strings point into it */
    memcpy(copy, s, n);
    struct props tmp;
    unsigned present = 0;
    memset(&tmp, 0, sizeof tmp);
    int ok = props_parse(a, copy, n, &tmp, &present) == TERR_NONE && present == P_ALL;
    arena_free(a);
    return ok;
}

/* How long a front end on a shared store trusts its cached properties:
 * another front end may have set them (DESIGN: service properties are
 * read on every CORS request, so not a read per request). */
#define PROPS_SHARED_TTL_US 1000000u

/* The cached properties of account, loading them when needed (on a
 * shared store again once they are PROPS_SHARED_TTL_US old). */
static const struct props *props_get(struct service *svc, const char *account)
{
    if (cache.svc != svc) {
        for (size_t i = 0; i < CONFIG_MAX_ACCOUNTS; i++)
            slot_drop(&cache.slot[i]);
        cache.svc = svc;
    }
    struct props_slot *free_slot = NULL;
    for (size_t i = 0; i < CONFIG_MAX_ACCOUNTS; i++) {
        struct props_slot *s = &cache.slot[i];
        if (s->loaded && strcmp(s->account, account) == 0) {
            if (!svc->shared || clock_mono_us() - s->loaded_us < PROPS_SHARED_TTL_US)
                return &s->p;
            slot_drop(s);
        }
        if (!s->loaded && !free_slot)
            free_slot = s;
    }
    if (!free_slot) { /* more accounts than configured: should not happen */
        free_slot = &cache.slot[0];
        slot_drop(free_slot);
    }
    struct arena *a = arena_new(8192);
    struct props p;
    props_read(svc, a, account, &p);
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
static void props_forget(const char *account)
{
    for (size_t i = 0; i < CONFIG_MAX_ACCOUNTS; i++)
        if (cache.slot[i].loaded && strcmp(cache.slot[i].account, account) == 0)
            slot_drop(&cache.slot[i]);
}

int props_put_stored(struct req_ctx *c, const char *account, const char *doc, size_t len)
{
    struct buf k;
    buf_init(&k);
    keys_props(&k, account);
    struct backend_write w = {BACKEND_PUT, k.data, k.len, doc, len};
    int rc = service_apply(c, 0, &w, NULL, 1, NULL);
    props_forget(account);
    buf_free(&k);
    return rc;
}

const struct cors_rules *props_cors_rules(struct service *svc, const char *account)
{
    return &props_get(svc, account)->cors;
}

void op_get_service_properties(struct req_ctx *c)
{
    const struct props *p = props_get(c->svc, c->account->name);
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
    buf_reset(c->kbuf);
    buf_reset(c->vbuf);
    keys_props(c->kbuf, c->account->name);
    props_write(&merged, c->vbuf);
    struct backend_write w = {BACKEND_PUT, c->kbuf->data, c->kbuf->len, c->vbuf->data,
                              c->vbuf->len};
    int rc = service_apply(c, 0, &w, NULL, 1, NULL);
    props_forget(c->account->name);
    if (rc != 0) {
        reply_error(c, terr_from_backend(rc));
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
    char date[40];
    edm_rfc1123_format((int64_t)((edm_now_ticks() - EDM_UNIX_EPOCH_TICKS) / EDM_TICKS_PER_SECOND),
                       date);
    struct buf *b = &c->resp->body;
    c->resp->status = 200;
    response_header(c->resp, "Content-Type", "application/xml");
    buf_puts(b, XML_DECL);
    xml_open(b, "StorageServiceStats");
    xml_open(b, "GeoReplication");
    xml_put_elem(b, "Status", "live");
    xml_put_elem(b, "LastSyncTime", date);
    xml_close(b, "GeoReplication");
    xml_close(b, "StorageServiceStats");
}
