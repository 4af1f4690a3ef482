/* odata.c - format negotiation (JSON metadata levels, and Atom for the
 * versions before 2015-12-11) and the Prefer header (doc/protocol.md, Content negotiation;
 * OData version headers; Prefer; Service versions). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/atom.h"
#include "protocol/ctx.h"

/* ASCII lower case of ch. */
static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
}

/* Case-insensitive search for needle (lower case) in the n bytes at s; a
 * candidate is compared only when its first byte matches (every Accept of
 * every batch operation is searched for "atom"). */
static int contains_ci(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        if (lower(s[i]) != needle[0])
            continue;
        size_t k = 1;
        while (k < m && lower(s[i + k]) == needle[k])
            k++;
        if (k == m)
            return 1;
    }
    return 0;
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Result of looking at one media range. */
enum media { MEDIA_OTHER, MEDIA_ATOM, MEDIA_VERBOSE, MEDIA_JSON, MEDIA_WILD };

/* Classifies one media range "type/sub;param=v;..." (s..s+n). */
static enum media classify(const char *s, size_t n, enum odata_level *level)
{
    while (n && is_blank(*s))
        s++, n--;
    while (n && is_blank(s[n - 1]))
        n--;
    size_t tl = 0;
    while (tl < n && s[tl] != ';' && !is_blank(s[tl]))
        tl++;
    if (contains_ci(s, tl, "atom") || (tl == 15 && strncasecmp(s, "application/xml", tl) == 0))
        return MEDIA_ATOM;
    int json = tl == 16 && strncasecmp(s, "application/json", tl) == 0;
    int wild = (tl == 3 && strncmp(s, "*/*", 3) == 0) ||
               (tl == 13 && strncasecmp(s, "application/*", 13) == 0);
    if (!json && !wild)
        return MEDIA_OTHER;
    *level = ODATA_MINIMAL;
    if (json) {
        /* Look at the odata= parameter, spaces allowed around ';' and '='. */
        const char *p = s + tl, *end = s + n;
        while (p < end) {
            while (p < end && (*p == ';' || is_blank(*p)))
                p++;
            const char *name = p;
            while (p < end && *p != '=' && *p != ';' && !is_blank(*p))
                p++;
            size_t nl = (size_t)(p - name);
            while (p < end && is_blank(*p))
                p++;
            if (p >= end || *p != '=') {
                while (p < end && *p != ';')
                    p++;
                continue;
            }
            p++;
            while (p < end && is_blank(*p))
                p++;
            const char *val = p;
            while (p < end && *p != ';' && !is_blank(*p))
                p++;
            size_t vl = (size_t)(p - val);
            if (nl == 5 && strncasecmp(name, "odata", 5) == 0) {
                if (vl == 10 && strncasecmp(val, "nometadata", vl) == 0)
                    *level = ODATA_NOMETADATA;
                else if (vl == 15 && strncasecmp(val, "minimalmetadata", vl) == 0)
                    *level = ODATA_MINIMAL;
                else if (vl == 12 && strncasecmp(val, "fullmetadata", vl) == 0)
                    *level = ODATA_FULL;
                else if (vl == 7 && strncasecmp(val, "verbose", vl) == 0)
                    return MEDIA_VERBOSE;
                else
                    return MEDIA_OTHER;
            }
        }
    }
    return json ? MEDIA_JSON : MEDIA_WILD;
}

/* "3.0;NetFx" -> 3; 0 when absent or unparsable. */
static int odata_version(const char *v)
{
    if (!v)
        return 0;
    while (is_blank(*v))
        v++;
    return isdigit((unsigned char)*v) ? atoi(v) : 0;
}

int odata_atom_allowed(const struct req_ctx *c)
{
    return strcmp(c->version, ATOM_LAST_VERSION_BEFORE) < 0;
}

enum terr odata_atom_body(struct req_ctx *c, struct request *req)
{
    if (!odata_atom_allowed(c))
        return TERR_AtomFormatNotSupported;
    const char *json;
    size_t n;
    enum terr e = atom_to_json(c->a, req->body, req->body_len, &json, &n);
    if (e)
        return e;
    req->body = json;
    req->body_len = n;
    return TERR_NONE;
}

enum terr odata_negotiate(struct req_ctx *c, int body_needed)
{
    const char *accept = request_header(c->req, "Accept");
    const struct query_param *fmt = url_query_get(c->qp, c->nqp, "$format");
    int atom_ok = odata_atom_allowed(c);
    c->atom = 0;
    c->negotiated = 1;
    if (fmt) {
        if (strcasecmp(fmt->value, "json") == 0) {
            c->level = ODATA_MINIMAL;
            goto version;
        }
        accept = strcasecmp(fmt->value, "atom") == 0 ? "application/atom+xml" : fmt->value;
    }
    c->level = ODATA_MINIMAL;
    if (!accept || !*accept) {
        /* The documented default is Atom (doc/protocol.md, Content negotiation, rule 5): served
         * before 2015-12-11; later it matters only when a body has to be
         * produced. */
        if (atom_ok) {
            c->atom = 1;
            return TERR_NONE;
        }
        if (body_needed)
            return TERR_AtomFormatNotSupported;
        goto version;
    }
    int saw_atom = 0, saw_verbose = 0;
    const char *p = accept;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        enum odata_level lv;
        enum media m = classify(p, n, &lv);
        if (atom_ok && (m == MEDIA_ATOM || (m == MEDIA_WILD && !saw_verbose))) {
            /* Atom, or any type where Atom is the default (the first
             * media range that can be served wins). */
            c->atom = 1;
            return TERR_NONE;
        }
        if (m == MEDIA_JSON || m == MEDIA_WILD) {
            c->level = lv;
            goto version;
        }
        saw_atom |= m == MEDIA_ATOM;
        saw_verbose |= m == MEDIA_VERBOSE;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (saw_verbose)
        return TERR_JsonVerboseFormatNotSupported;
    if (saw_atom)
        return TERR_AtomFormatNotSupported;
    if (!body_needed)
        goto version;
    return TERR_MediaTypeNotSupported;

version:;
    /* JSON needs OData 3.0 and x-ms-version 2013-08-15 or later (doc/protocol.md, OData version headers). */
    const char *max = request_header(c->req, "MaxDataServiceVersion");
    const char *dsv = request_header(c->req, "DataServiceVersion");
    int ov = max ? odata_version(max) : odata_version(dsv);
    if ((max || dsv) && ov > 0 && ov < 3)
        return TERR_JsonFormatNotSupported;
    if (strcmp(c->version, "2013-08-15") < 0)
        return TERR_JsonFormatNotSupported;
    return TERR_NONE;
}

void odata_prefer(struct req_ctx *c)
{
    const char *p = request_header(c->req, "Prefer");
    c->prefer = NULL;
    if (!p)
        return;
    if (contains_ci(p, strlen(p), "return-no-content"))
        c->prefer = "return-no-content";
    else if (contains_ci(p, strlen(p), "return-content"))
        c->prefer = "return-content";
    c->prefer_echo = c->prefer != NULL;
}
