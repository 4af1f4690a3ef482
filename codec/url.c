/* url.c - strict percent-decoding, query strings, and the URL encoding the
 * service uses for entity paths (doc/protocol.md, Resource paths; Key encoding in URLs). */
#include "codec/url.h"

#include <stdlib.h>
#include <string.h>

#include "core/coding.h"
#include "core/texthash.h"
#include "codec/edm.h"

/* Decodes %XX (both hex digits required) and optionally '+'; the result
 * must be well-formed UTF-8 so later layers never see broken text. */
char *url_decode(struct arena *a, const char *s, size_t n, int plus_as_space, size_t *outlen)
{
    char *out = arena_alloc(a, n + 1);
    long k = coding_pct_decode(s, n, out, n + 1, plus_as_space ? CODING_PCT_PLUS : 0);
    if (k < 0 || utf8_check(out, (size_t)k) != 0)
        return NULL;
    if (outlen)
        *outlen = (size_t)k;
    return out;
}

/* RFC 3986 pchar minus pct-encoded: unreserved, sub-delims, ':' and '@'
 * (a table: Location and odata.id are built for every entity written). */
static const unsigned char pchar_tab[256] = {
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
    ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1,
    ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
    ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['-'] = 1, ['.'] = 1,
    ['_'] = 1, ['~'] = 1, ['!'] = 1, ['$'] = 1, ['&'] = 1, ['\''] = 1, ['('] = 1, [')'] = 1,
    ['*'] = 1, ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1, [':'] = 1, ['@'] = 1,
};

/* Appends s with every non-pchar byte as %XX (upper-case hex); runs of
 * pchar bytes are copied whole. */
void url_encode_pchar(struct buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && pchar_tab[(unsigned char)s[run]])
            run++;
        if (run > i)
            buf_append(b, s + i, run - i);
        if (run == n)
            break;
        unsigned char c = (unsigned char)s[run];
        char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
        buf_append(b, esc, 3);
        i = run + 1;
    }
}

/* One key of a predicate: quotes doubled, then pchar-encoded. */
static void put_key(struct buf *b, const char *s, size_t n)
{
    const char *q;
    while (n && (q = memchr(s, '\'', n)) != NULL) {
        size_t k = (size_t)(q - s) + 1;
        url_encode_pchar(b, s, k);
        buf_putc(b, '\'');
        s += k;
        n -= k;
    }
    url_encode_pchar(b, s, n);
}

/* TABLE(PartitionKey='PK',RowKey='RK') as in Location and odata.id. */
void url_entity_path(struct buf *b, const char *table, const char *pk, size_t pk_len,
                     const char *rk, size_t rk_len)
{
    url_encode_pchar(b, table, strlen(table));
    buf_puts(b, "(PartitionKey='");
    put_key(b, pk, pk_len);
    buf_puts(b, "',RowKey='");
    put_key(b, rk, rk_len);
    buf_puts(b, "')");
}

/* The decoded parameters of recent query strings. A client tends to send
 * the same query again and again (a SAS on every URL; one $filter page
 * after another differs only in its continuation), so decoding the same
 * text twice is common: a hit copies the decoded strings into the arena
 * in one go. Only successful parses are kept; direct-mapped by a hash of
 * the text; single-threaded like the loop. */
#define QUERY_MEMO_SLOTS 16
#define QUERY_MEMO_MAX 2048 /* longer queries are decoded every time */

struct query_memo {
    char *text;               /* malloc'd raw query, NULL: empty slot */
    size_t len;
    uint64_t hash;
    struct query_param *params; /* malloc'd; names and values in strings */
    size_t count;
    char *strings;            /* malloc'd: each name and value with its NUL */
    size_t strings_len;
};

/* The memo (url.h): a few recent query strings and their parse. */
struct url_memo {
    struct query_memo slot[QUERY_MEMO_SLOTS];
};

struct url_memo *url_memo_new(void)
{
    struct url_memo *m = calloc(1, sizeof *m);
    if (!m)
        abort();
    return m;
}

void url_memo_free(struct url_memo *memo)
{
    if (!memo)
        return;
    for (size_t i = 0; i < QUERY_MEMO_SLOTS; i++) {
        free(memo->slot[i].text);
        free(memo->slot[i].params);
        free(memo->slot[i].strings);
    }
    free(memo);
}

/* The memo's answer for q copied into the arena; 0, or -1 on a miss. */
static int memo_get(const struct url_memo *memo, struct arena *a, const char *q, size_t n,
                    uint64_t h, struct query_param **out, size_t *count)
{
    const struct query_memo *m = &memo->slot[h % QUERY_MEMO_SLOTS];
    if (!m->text || m->hash != h || m->len != n || memcmp(m->text, q, n) != 0)
        return -1;
    struct query_param *p = arena_alloc(a, (m->count ? m->count : 1) * sizeof *p);
    char *s = arena_alloc(a, m->strings_len);
    memcpy(s, m->strings, m->strings_len);
    for (size_t i = 0; i < m->count; i++) {
        p[i].name = s + (m->params[i].name - m->strings);
        p[i].value = s + (m->params[i].value - m->strings);
        p[i].value_len = m->params[i].value_len;
    }
    *out = p;
    *count = m->count;
    return 0;
}

/* Keeps the parse of q (its names up to their first NUL, as every reader
 * sees them; values whole). Quietly keeps nothing when memory is short. */
static void memo_put(struct url_memo *memo, const char *q, size_t n, uint64_t h,
                     const struct query_param *p, size_t count)
{
    struct query_memo *m = &memo->slot[h % QUERY_MEMO_SLOTS];
    size_t len = 0;
    for (size_t i = 0; i < count; i++)
        len += strlen(p[i].name) + 1 + p[i].value_len + 1;
    char *text = malloc(n), *strings = malloc(len ? len : 1);
    struct query_param *params = malloc((count ? count : 1) * sizeof *params);
    if (!text || !strings || !params) {
        free(text);
        free(strings);
        free(params);
        return;
    }
    free(m->text);
    free(m->strings);
    free(m->params);
    memcpy(text, q, n);
    char *s = strings;
    for (size_t i = 0; i < count; i++) {
        size_t nl = strlen(p[i].name) + 1;
        memcpy(s, p[i].name, nl);
        params[i].name = s;
        s += nl;
        memcpy(s, p[i].value, p[i].value_len + 1);
        params[i].value = s;
        params[i].value_len = p[i].value_len;
        s += p[i].value_len + 1;
    }
    *m = (struct query_memo){.text = text, .len = n, .hash = h, .params = params,
                             .count = count, .strings = strings, .strings_len = len};
}

/* Splits q on '&' (empty pieces skipped), each piece on its first '=' (no
 * '=' means an empty value); names and values are decoded with '+' as a
 * space. The array and strings are arena memory. */
int url_parse_query(struct url_memo *um, struct arena *a, const char *q, size_t n,
                    struct query_param **out, size_t *count)
{
    int memo = um && n > 0 && n <= QUERY_MEMO_MAX;
    uint64_t h = memo ? texthash(q, n) : 0;
    if (memo && memo_get(um, a, q, n, h, out, count) == 0)
        return 0;
    size_t max = 1;
    for (size_t i = 0; i < n; i++)
        if (q[i] == '&')
            max++;
    struct query_param *params = arena_alloc(a, max * sizeof *params);
    size_t k = 0;
    size_t i = 0;
    while (i <= n) {
        const char *amp = i < n ? memchr(q + i, '&', n - i) : NULL;
        size_t end = amp ? (size_t)(amp - q) : n;
        if (end > i) {
            const char *piece = q + i;
            size_t plen = end - i;
            const char *eq = memchr(piece, '=', plen);
            size_t nlen = eq ? (size_t)(eq - piece) : plen;
            const char *v = eq ? eq + 1 : piece + plen;
            size_t vlen = eq ? plen - nlen - 1 : 0;
            struct query_param *p = &params[k];
            p->name = url_decode(a, piece, nlen, 1, NULL);
            p->value = url_decode(a, v, vlen, 1, &p->value_len);
            if (!p->name || !p->value)
                return -1;
            k++;
        }
        i = end + 1;
    }
    *out = params;
    *count = k;
    if (memo)
        memo_put(um, q, n, h, params, k);
    return 0;
}

/* First parameter with exactly this name. */
const struct query_param *url_query_get(const struct query_param *p, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].name[0] == name[0] && strcmp(p[i].name, name) == 0)
            return &p[i];
    return NULL;
}
