/* route.c - account and resource resolution (see route.h). */
#include "protocol/route.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static int is_ws(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* True when host (without port) calls for path-style addressing: an IP
 * literal, "localhost", or a name without a dot (doc/protocol.md, Endpoint styles). */
static int path_style_host(const char *h, size_t n)
{
    if (n && h[0] == '[')
        return 1;
    if (n == 9 && strncasecmp(h, "localhost", 9) == 0)
        return 1;
    int dot = 0, alldigit = 1;
    for (size_t i = 0; i < n; i++) {
        if (h[i] == '.')
            dot = 1;
        else if (!isdigit((unsigned char)h[i]))
            alldigit = 0;
    }
    return !dot || alldigit;
}

/* Resolves NAME or NAME-secondary to a configured account. */
static enum terr find_account(struct req_ctx *c, const char *name, size_t n)
{
    c->secondary = 0;
    if (n > 10 && strncmp(name + n - 10, "-secondary", 10) == 0) {
        c->secondary = 1;
        n -= 10;
    }
    char tmp[64];
    if (n == 0 || n >= sizeof tmp)
        return TERR_ResourceNotFound;
    memcpy(tmp, name, n);
    tmp[n] = '\0';
    c->account = account_find(c->svc->set.accounts, c->svc->set.naccounts, tmp);
    if (!c->account) {
        c->unknown_account = 1;
        c->account_tried = arena_strdup(c->a, tmp);
        return TERR_ResourceNotFound;
    }
    return TERR_NONE;
}

/* "SCHEME://HOST" and, for path-style URLs, "/ACCOUNT": the service root
 * every OData link is built from (once per request and batch operation,
 * so without printf). */
static const char *make_base(struct arena *a, const char *scheme, const char *host,
                             const char *seg, size_t sl)
{
    size_t cl = strlen(scheme), hl = strlen(host);
    char *b = arena_alloc(a, cl + 3 + hl + (seg ? 1 + sl : 0) + 1);
    char *p = b;
    memcpy(p, scheme, cl);
    p += cl;
    memcpy(p, "://", 3);
    p += 3;
    memcpy(p, host, hl);
    p += hl;
    if (seg) {
        *p++ = '/';
        memcpy(p, seg, sl);
        p += sl;
    }
    *p = '\0';
    return b;
}

enum terr route_account(struct req_ctx *c, const char **rest, size_t *rest_len)
{
    const struct request *req = c->req;
    const char *host = request_header(req, "Host");
    if (!host || !*host)
        return TERR_HostInformationNotPresent;
    size_t hn = strlen(host);
    /* Host without the port. */
    size_t hl = hn;
    if (host[0] == '[') {
        const char *rb = strchr(host, ']');
        hl = rb ? (size_t)(rb - host + 1) : hn;
    } else {
        const char *colon = strchr(host, ':');
        if (colon)
            hl = (size_t)(colon - host);
    }
    const char *scheme = req->tls ? "https" : "http";
    const char *path = req->path;
    size_t plen = req->path_len;
    if (plen == 0 || path[0] != '/')
        return TERR_InvalidUri;

    c->path_style = c->svc->set.path_style_only || path_style_host(host, hl);
    if (c->path_style) {
        const char *seg = path + 1;
        const char *slash = memchr(seg, '/', plen - 1);
        size_t sl = slash ? (size_t)(slash - seg) : plen - 1;
        enum terr e = find_account(c, seg, sl);
        if (e)
            return e;
        c->base = make_base(c->a, scheme, host, seg, sl);
        *rest = seg + sl;
        *rest_len = plen - 1 - sl;
        return TERR_NONE;
    }
    const char *dot = memchr(host, '.', hl);
    enum terr e = find_account(c, host, (size_t)(dot - host));
    if (e)
        return e;
    c->base = make_base(c->a, scheme, host, NULL, 0);
    *rest = path;
    *rest_len = plen;
    return TERR_NONE;
}

/* Parses one quoted key starting at s[*i] == '\''; '' is a quote. */
static int parse_quoted(struct arena *a, const char *s, size_t n, size_t *i,
                        const char **out, size_t *out_len)
{
    if (*i >= n || s[*i] != '\'')
        return -1;
    size_t j = *i + 1;
    char *d = arena_alloc(a, n - *i + 1);
    size_t dl = 0;
    for (;;) {
        if (j >= n)
            return -1;
        if (s[j] == '\'') {
            if (j + 1 < n && s[j + 1] == '\'') {
                d[dl++] = '\'';
                j += 2;
                continue;
            }
            j++;
            break;
        }
        d[dl++] = s[j++];
    }
    d[dl] = '\0';
    *out = d;
    *out_len = dl;
    *i = j;
    return 0;
}

static void skip_ws(const char *s, size_t n, size_t *i)
{
    while (*i < n && is_ws(s[*i]))
        (*i)++;
}

int route_key_predicate(struct arena *a, const char *s, size_t n, const char **pk,
                        size_t *pk_len, const char **rk, size_t *rk_len)
{
    size_t i = 0;
    int have_pk = 0, have_rk = 0;
    if (n < 2 || s[0] != '(' || s[n - 1] != ')')
        return -1;
    i = 1;
    for (int k = 0; k < 2; k++) {
        skip_ws(s, n, &i);
        const char *name = s + i;
        while (i < n && (isalpha((unsigned char)s[i])))
            i++;
        size_t nl = (size_t)(s + i - name);
        skip_ws(s, n, &i);
        if (i >= n || s[i] != '=')
            return -1;
        i++;
        skip_ws(s, n, &i);
        if (nl == 12 && memcmp(name, "PartitionKey", 12) == 0 && !have_pk) {
            if (parse_quoted(a, s, n, &i, pk, pk_len))
                return -1;
            have_pk = 1;
        } else if (nl == 6 && memcmp(name, "RowKey", 6) == 0 && !have_rk) {
            if (parse_quoted(a, s, n, &i, rk, rk_len))
                return -1;
            have_rk = 1;
        } else {
            return -1;
        }
        skip_ws(s, n, &i);
        if (k == 0) {
            if (i >= n || s[i] != ',')
                return -1;
            i++;
        }
    }
    return i == n - 1 ? 0 : -1;
}

int route_quoted_arg(struct arena *a, const char *s, size_t n, const char **out,
                     size_t *out_len)
{
    size_t i = 1;
    if (n < 2 || s[0] != '(' || s[n - 1] != ')')
        return -1;
    skip_ws(s, n, &i);
    if (parse_quoted(a, s, n, &i, out, out_len))
        return -1;
    skip_ws(s, n, &i);
    return i == n - 1 ? 0 : -1;
}

enum terr route_resource(struct req_ctx *c, const char *rest, size_t n)
{
    /* Empty or "/": the service root. */
    if (n == 0 || (n == 1 && rest[0] == '/')) {
        c->res = RES_SERVICE;
        return TERR_NONE;
    }
    /* One segment only (a key cannot contain '/', doc/protocol.md, Key values). A trailing
     * slash is tolerated. A '/' between a '(' and its ')' lies inside a
     * key predicate: the service answers that as a syntax error of the key
     * (doc/protocol.md, Key values); a segment after the ')' is an unknown resource. */
    const char *seg = rest + 1;
    size_t sl = n - 1;
    if (sl && seg[sl - 1] == '/')
        sl--;
    const char *slash = memchr(seg, '/', sl);
    if (slash) {
        size_t before = (size_t)(slash - seg);
        const char *open = memchr(seg, '(', before);
        if (open && !memchr(open, ')', (size_t)(slash - open)))
            return TERR_InvalidInputQuerySyntax;
        return TERR_InvalidUri;
    }
    size_t dl;
    char *d = url_decode(c->a, seg, sl, 0, &dl);
    if (!d)
        return TERR_InvalidUri;
    if (dl == 0)
        return TERR_InvalidUri;
    const char *paren = memchr(d, '(', dl);
    size_t name_len = paren ? (size_t)(paren - d) : dl;

    if (name_len == 6 && strncasecmp(d, "$batch", 6) == 0 && !paren) {
        c->res = RES_BATCH;
        return TERR_NONE;
    }
    if (name_len == 6 && strncasecmp(d, "Tables", 6) == 0) {
        if (!paren || dl - name_len == 2) {
            if (paren && d[dl - 1] != ')')
                return TERR_InvalidUri;
            c->res = RES_TABLES;
            return TERR_NONE;
        }
        if (route_quoted_arg(c->a, paren, dl - name_len, &c->table, &c->table_len))
            return TERR_InvalidUri;
        c->res = RES_TABLE_ENTRY;
        return TERR_NONE;
    }
    c->table = arena_strndup(c->a, d, name_len);
    c->table_len = name_len;
    if (!paren || (dl - name_len == 2 && paren[1] == ')')) {
        c->res = RES_TABLE;
        return TERR_NONE;
    }
    if (route_key_predicate(c->a, paren, dl - name_len, &c->pk, &c->pk_len, &c->rk,
                            &c->rk_len))
        return TERR_InvalidInputQuerySyntax;
    c->res = RES_ENTITY;
    return TERR_NONE;
}
