/* cors.c - CORS list validation and rule matching (cors.h, doc/protocol.md, CORS). */
#include "codec/cors.h"

#include <string.h>
#include <strings.h>

#include "core/buf.h"

static const char *const cors_methods[] = {"DELETE", "GET", "HEAD", "MERGE",
                                           "POST", "OPTIONS", "PUT", "PATCH"};

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One item of a comma-separated list. */
struct item {
    const char *s;
    size_t n;
};

/* Next item of s[*pos..n), blanks trimmed; 0 at the end of the text. An
 * empty item between commas is returned with n == 0. */
static int next_item(const char *s, size_t n, size_t *pos, struct item *it)
{
    if (*pos > n)
        return 0;
    size_t b = *pos, e = b;
    while (e < n && s[e] != ',')
        e++;
    *pos = e + 1;
    size_t l = b, r = e;
    while (l < r && is_blank(s[l]))
        l++;
    while (r > l && is_blank(s[r - 1]))
        r--;
    it->s = s + l;
    it->n = r - l;
    return 1;
}

/* Characters (code points) of UTF-8 text. */
static size_t chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            k++;
    return k;
}

static int is_method(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof cors_methods / sizeof cors_methods[0]; i++)
        if (strlen(cors_methods[i]) == n && memcmp(cors_methods[i], s, n) == 0)
            return 1;
    return 0;
}

const char *cors_list_normalize(struct arena *a, enum cors_list kind, const char *s, size_t n)
{
    struct buf out;
    buf_init(&out);
    size_t pos = 0, count = 0, literal = 0, prefix = 0;
    int ok = 1, all_blank = 1;
    for (size_t i = 0; i < n; i++)
        if (!is_blank(s[i]))
            all_blank = 0;
    struct item it;
    while (ok && !all_blank && next_item(s, n, &pos, &it)) {
        if (it.n == 0 || chars(it.s, it.n) > CORS_MAX_ITEM) {
            ok = 0;
            break;
        }
        for (size_t i = 0; i < it.n; i++)
            if (is_blank(it.s[i]) || (unsigned char)it.s[i] < 0x20)
                ok = 0;
        count++;
        switch (kind) {
        case CORS_ORIGINS:
            if (count > CORS_MAX_ORIGINS)
                ok = 0;
            break;
        case CORS_METHODS:
            if (!is_method(it.s, it.n))
                ok = 0;
            break;
        case CORS_HEADERS:
            if (it.s[it.n - 1] == '*')
                prefix++;
            else
                literal++;
            if (memchr(it.s, '*', it.n - 1) || prefix > CORS_MAX_PREFIX_HEADERS ||
                literal > CORS_MAX_LITERAL_HEADERS)
                ok = 0;
            break;
        }
        if (count > 1)
            buf_putc(&out, ',');
        buf_append(&out, it.s, it.n);
    }
    if (count == 0 && kind != CORS_HEADERS)
        ok = 0;
    const char *r = ok ? arena_strndup(a, out.data ? out.data : "", out.len) : NULL;
    buf_free(&out);
    return r;
}

/* 1 when the list holds an item equal to s[0..n) (case-insensitively when
 * ci), or "*" when star. */
static int list_has(const char *list, const char *s, size_t n, int ci, int star)
{
    size_t pos = 0, ln = strlen(list);
    struct item it;
    while (next_item(list, ln, &pos, &it)) {
        if (star && it.n == 1 && it.s[0] == '*')
            return 1;
        if (it.n == n && (ci ? strncasecmp(it.s, s, n) == 0 : memcmp(it.s, s, n) == 0))
            return 1;
    }
    return 0;
}

/* 1 when header name h[0..n) matches an allowed-headers entry: "*",
 * "prefix*" (case-insensitive prefix) or the exact name. */
static int header_allowed(const char *allowed, const char *h, size_t n)
{
    size_t pos = 0, ln = strlen(allowed);
    struct item it;
    while (next_item(allowed, ln, &pos, &it)) {
        if (it.n == 0)
            continue;
        if (it.s[it.n - 1] == '*') {
            size_t pl = it.n - 1;
            if (n >= pl && strncasecmp(it.s, h, pl) == 0)
                return 1;
        } else if (it.n == n && strncasecmp(it.s, h, n) == 0) {
            return 1;
        }
    }
    return 0;
}

int cors_any_origin(const struct cors_rule *r)
{
    return list_has(r->origins, "*", 1, 0, 0);
}

/* Origin and method of rule r allow the request. */
static int rule_allows(const struct cors_rule *r, const char *origin, const char *method)
{
    return list_has(r->origins, origin, strlen(origin), 1, 1) &&
           list_has(r->methods, method, strlen(method), 0, 0);
}

int cors_match_preflight(const struct cors_rules *rs, const char *origin, const char *method,
                         const char *headers)
{
    for (size_t i = 0; i < rs->n; i++) {
        const struct cors_rule *r = &rs->r[i];
        if (!rule_allows(r, origin, method))
            continue;
        int ok = 1;
        if (headers) {
            size_t pos = 0, hn = strlen(headers);
            struct item it;
            while (ok && next_item(headers, hn, &pos, &it))
                if (it.n && !header_allowed(r->allowed_headers, it.s, it.n))
                    ok = 0;
        }
        if (ok)
            return (int)i;
    }
    return -1;
}

int cors_match_actual(const struct cors_rules *rs, const char *origin, const char *method)
{
    for (size_t i = 0; i < rs->n; i++)
        if (rule_allows(&rs->r[i], origin, method))
            return (int)i;
    return -1;
}

void cors_actual(const struct cors_rules *rs, const char *origin, const char *method,
                 struct cors_answer *out)
{
    out->rule = -1;
    out->any = 0;
    out->vary = 0;
    if (rs->n == 0)
        return;   /* rows 1 and 4: no rules, no CORS headers */
    if (origin) {
        out->rule = cors_match_actual(rs, origin, method);
    } else {
        for (size_t i = 0; i < rs->n && out->rule < 0; i++)
            if (cors_any_origin(&rs->r[i]) &&
                list_has(rs->r[i].methods, method, strlen(method), 0, 0))
                out->rule = (int)i;
    }
    out->any = out->rule >= 0 && cors_any_origin(&rs->r[out->rule]);
    int get_like = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    out->vary = get_like && !out->any;
}
