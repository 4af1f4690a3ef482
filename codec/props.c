/* props.c - the service properties document (see props.h). */
#include "codec/props.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/edm.h"
#include "codec/xml.h"
#include "core/log.h"

#define DAYS_MAX 365

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
static enum terr get_retention(struct arena *a, const struct xml_node *n, struct props_retention *r)
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

static enum terr get_logging(struct arena *a, const struct xml_node *n, struct props_logging *l)
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
enum terr props_parse(struct arena *a, const char *s, size_t n, struct props *p,
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

static void put_retention(struct buf *b, const struct props_retention *r)
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

/* The Get document, in the element order of doc/protocol.md, Service properties: Get. */
void props_write(const struct props *p, struct buf *b)
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

