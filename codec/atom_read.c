/* atom_read.c - an Atom entry's m:properties as the JSON object the JSON
 * path parses (atom.h), read with expat. */
#include <expat.h>
#include <string.h>

#include "codec/atom.h"
#include "codec/entity_json.h"

/* Namespace separator of expat's resolved names ("URI NAME"): a space
 * cannot appear in a namespace name or a local name. */
#define SEP ' '

/* Parse state. Elements are counted by depth: 1 entry, 2 content,
 * 3 m:properties, 4 one property. */
struct rd {
    XML_Parser p;
    int depth;
    int err;              /* the body is refused (InvalidInput) */
    int in_content;       /* depth 2 element is atom:content */
    int in_props;         /* depth 3 element is m:properties */
    int in_prop;          /* depth 4 element is a d: property */
    int prop_null;
    char type[32];        /* its m:type, "" when none */
    struct buf name;      /* its local name */
    struct buf text;      /* its character data */
    struct buf json;      /* the object being built */
    int nprops;
};

/* Stops the parse and marks the body refused. */
static void refuse(struct rd *r)
{
    r->err = 1;
    XML_StopParser(r->p, XML_FALSE);
}

/* Whether expat's resolved name q is namespace ns + SEP + local. */
static int qname_is(const char *q, const char *ns, const char *local)
{
    size_t nl = strlen(ns);
    return strncmp(q, ns, nl) == 0 && q[nl] == SEP && strcmp(q + nl + 1, local) == 0;
}

/* Local part of a resolved name in namespace ns, or NULL. */
static const char *local_in(const char *q, const char *ns)
{
    size_t nl = strlen(ns);
    return strncmp(q, ns, nl) == 0 && q[nl] == SEP ? q + nl + 1 : NULL;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    struct rd *r = ud;
    r->depth++;
    if (r->depth > ATOM_MAX_DEPTH) {
        refuse(r);
        return;
    }
    switch (r->depth) {
    case 1:
        if (!qname_is(name, ATOM_NS_ATOM, "entry"))
            refuse(r);
        return;
    case 2:
        r->in_content = qname_is(name, ATOM_NS_ATOM, "content");
        return;
    case 3:
        r->in_props = r->in_content && qname_is(name, ATOM_NS_M, "properties");
        return;
    case 4: {
        const char *local = r->in_props ? local_in(name, ATOM_NS_D) : NULL;
        r->in_prop = local != NULL;
        if (!local)
            return;
        buf_reset(&r->name);
        buf_puts(&r->name, local);
        buf_reset(&r->text);
        r->type[0] = '\0';
        r->prop_null = 0;
        for (size_t i = 0; atts[i]; i += 2) {
            if (qname_is(atts[i], ATOM_NS_M, "type")) {
                size_t tl = strlen(atts[i + 1]);
                if (tl >= sizeof r->type) {
                    refuse(r);
                    return;
                }
                memcpy(r->type, atts[i + 1], tl + 1);
            } else if (qname_is(atts[i], ATOM_NS_M, "null")) {
                r->prop_null = strcmp(atts[i + 1], "true") == 0;
            }
        }
        return;
    }
    default:
        if (r->in_prop)
            refuse(r);   /* a property holds text only */
        return;
    }
}

/* Trims XML whitespace from both ends of s[0..*n) (typed values). */
static const char *trim(const char *s, size_t *n)
{
    while (*n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++, (*n)--;
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\n' ||
                  s[*n - 1] == '\r'))
        (*n)--;
    return s;
}

/* Appends the finished property to the JSON object. */
static void put_prop(struct rd *r)
{
    struct buf *j = &r->json;
    const char *name = r->name.data ? r->name.data : "";
    if (r->nprops++)
        buf_putc(j, ',');
    if (r->type[0]) {
        struct buf an;
        buf_init(&an);
        buf_append(&an, name, r->name.len);
        buf_puts(&an, "@odata.type");
        json_put_string(j, an.data, an.len);
        buf_putc(j, ':');
        json_put_string(j, r->type, strlen(r->type));
        buf_putc(j, ',');
        buf_free(&an);
    }
    json_put_string(j, name, r->name.len);
    buf_putc(j, ':');
    if (r->prop_null) {
        buf_puts(j, "null");
        return;
    }
    const char *s = r->text.data ? r->text.data : "";
    size_t n = r->text.len;
    if (r->type[0] && strcmp(r->type, "Edm.String") != 0) {
        s = trim(s, &n);
        if (strcmp(r->type, "Edm.Double") == 0) {
            if (n == 3 && memcmp(s, "INF", 3) == 0)
                s = "Infinity", n = 8;
            else if (n == 4 && memcmp(s, "-INF", 4) == 0)
                s = "-Infinity", n = 9;
        } else if (strcmp(r->type, "Edm.Boolean") == 0 && n == 1) {
            if (*s == '1')
                s = "true", n = 4;
            else if (*s == '0')
                s = "false", n = 5;
        }
    }
    json_put_string(j, s, n);
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    struct rd *r = ud;
    (void)name;
    if (r->depth == 4 && r->in_prop) {
        put_prop(r);
        r->in_prop = 0;
    } else if (r->depth == 3) {
        r->in_props = 0;
    } else if (r->depth == 2) {
        r->in_content = 0;
    }
    r->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    struct rd *r = ud;
    if (r->depth == 4 && r->in_prop)
        buf_append(&r->text, s, (size_t)len);
}

/* A DOCTYPE (hence any DTD, entity declaration or external subset) is
 * refused before its content is looked at. */
static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal)
{
    (void)name, (void)sysid, (void)pubid, (void)has_internal;
    refuse(ud);
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int pe, const XML_Char *v,
                                   int vl, const XML_Char *base, const XML_Char *sys,
                                   const XML_Char *pub, const XML_Char *notation)
{
    (void)name, (void)pe, (void)v, (void)vl, (void)base, (void)sys, (void)pub, (void)notation;
    refuse(ud);
}

enum terr atom_to_json(struct arena *a, const char *body, size_t len, const char **json,
                       size_t *json_len)
{
    struct rd r;
    memset(&r, 0, sizeof r);
    if (len > (size_t)1 << 30)
        return TERR_InvalidInput;
    r.p = XML_ParserCreateNS(NULL, SEP);
    if (!r.p)
        return TERR_InternalError;
    buf_init(&r.name);
    buf_init(&r.text);
    buf_init(&r.json);
    XML_SetUserData(r.p, &r);
    XML_SetElementHandler(r.p, on_start, on_end);
    XML_SetCharacterDataHandler(r.p, on_text);
    XML_SetStartDoctypeDeclHandler(r.p, on_doctype);
    XML_SetEntityDeclHandler(r.p, on_entity_decl);
    XML_SetParamEntityParsing(r.p, XML_PARAM_ENTITY_PARSING_NEVER);
    buf_putc(&r.json, '{');
    enum XML_Status st = XML_Parse(r.p, body, (int)len, XML_TRUE);
    enum terr e = TERR_NONE;
    if (st != XML_STATUS_OK || r.err)
        e = TERR_InvalidInput;
    XML_ParserFree(r.p);
    if (!e) {
        buf_putc(&r.json, '}');
        *json = arena_strndup(a, r.json.data, r.json.len);
        *json_len = r.json.len;
    }
    buf_free(&r.name);
    buf_free(&r.text);
    buf_free(&r.json);
    return e;
}
