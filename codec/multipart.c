/* multipart.c - $batch request parser (see multipart.h, doc/protocol.md, Batch request body; Batch limits).
 *
 * The body is walked line by line (LF or CRLF) and never beyond body_len.
 * A multipart is first split into part spans on its delimiter lines, then
 * each part's MIME headers are read, then either the changeset is split the
 * same way or the embedded HTTP request is parsed. Only small things (header
 * names and values, the URL, boundaries) are copied into the arena; bodies
 * stay slices of the caller's buffer. */
#include "codec/multipart.h"

#include <string.h>
#include <strings.h>

#include "core/cpu.h"
#include "codec/ctlscan.h"
#ifdef __SSE2__
#include <immintrin.h>
#endif

/* Longest boundary we accept (RFC 2046 says 70; clients use ~42). */
#define MP_MAX_BOUNDARY 200

struct span {
    const char *p;
    size_t n;
};

/* One line: [p, p+n) without its CRLF/LF; next is the first byte after it. */
struct line {
    const char *p;
    size_t n;
    const char *next;
};

/* A growable arena array of part spans. */
struct spans {
    struct span *v;
    size_t n, cap;
};

/* The MIME headers of one part we care about (first occurrence each). */
struct mime {
    struct span ctype, cte, cid;
    int has_ctype, has_cte, has_cid;
};

struct parser {
    struct arena *a;
    const char *reason;       /* set by fail() */
    struct multipart_op *ops; /* grows by doubling */
    size_t nops, cap;
    /* The head (request line, headers and the blank line after them) of
     * the last operation parsed in full, when it ended in LF: a later
     * operation whose head repeats it byte for byte shares that
     * operation's results instead of parsing them again (a changeset
     * often sends one head 100 times with different bodies). */
    const char *head;         /* NULL when none */
    size_t head_len;
    size_t head_op;           /* its index in ops (ops may move) */
    const char *head_cid;     /* the Content-ID its headers gave */
};

/* Records why parsing failed and returns MULTIPART_ERR_MALFORMED. */
static int fail(struct parser *ps, const char *why)
{
    if (!ps->reason)
        ps->reason = why;
    return MULTIPART_ERR_MALFORMED;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}


/* First LF in [p, end), or NULL. Most lines are short header lines, where
 * a call to memchr costs more than the search: the first 64 bytes are
 * searched inline (16 a step with SSE2), longer lines (bodies) by memchr. */
static inline __attribute__((always_inline)) const char *find_lf(const char *p,
                                                                  const char *end)
{
#ifdef __SSE2__
    const __m128i lf = _mm_set1_epi8('\n');
    for (int k = 0; k < 4 && end - p >= 16; k++) {
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), lf));
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    return p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
}

/* Reads the line starting at p (p < end). Lines end at LF (a CR before it
 * is dropped) or at end. */
static inline __attribute__((always_inline)) void next_line(const char *p, const char *end,
                                                            struct line *ln)
{
    const char *lf = find_lf(p, end);
    ln->p = p;
    if (lf) {
        ln->n = (size_t)(lf - p);
        ln->next = lf + 1;
    } else {
        ln->n = (size_t)(end - p);
        ln->next = end;
    }
    if (ln->n && p[ln->n - 1] == '\r')
        ln->n--;
}

/* 1 when [p, p+n) holds only SP, HT, CR, LF (or nothing). */
static int all_space(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_space(p[i]))
            return 0;
    return 1;
}

/* Trims SP/HT on both sides of a span. */
static struct span trim_blanks(const char *p, size_t n)
{
    while (n && is_blank(*p)) {
        p++;
        n--;
    }
    while (n && is_blank(p[n - 1]))
        n--;
    struct span s = {p, n};
    return s;
}

static int span_ieq(struct span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && strncasecmp(s.p, lit, n) == 0;
}

enum delim { NOT_DELIM = 0, DELIM_OPEN, DELIM_CLOSE };

/* Whether a line is "--B" or "--B--" followed only by blanks (or a stray
 * CR). Partial-line matches are data, as for the real service. */
static enum delim delim_kind(const struct line *ln, const char *b, size_t blen)
{
    if (ln->n < blen + 2 || ln->p[0] != '-' || ln->p[1] != '-' ||
        memcmp(ln->p + 2, b, blen) != 0)
        return NOT_DELIM;
    const char *r = ln->p + 2 + blen;
    size_t rn = ln->n - 2 - blen;
    enum delim kind = DELIM_OPEN;
    if (rn >= 2 && r[0] == '-' && r[1] == '-') {
        kind = DELIM_CLOSE;
        r += 2;
        rn -= 2;
    }
    for (size_t i = 0; i < rn; i++)
        if (!is_blank(r[i]) && r[i] != '\r')
            return NOT_DELIM;
    return kind;
}

/* Appends a part span to an arena array. */
static void spans_push(struct arena *a, struct spans *s, const char *p, size_t n)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        struct span *v = arena_alloc(a, cap * sizeof *v);
        if (s->n)
            memcpy(v, s->v, s->n * sizeof *v);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n].p = p;
    s->v[s->n].n = n;
    s->n++;
}

#if defined(__SSE2__) && !defined(MULTIPART_NO_AVX2)
#define MULTIPART_AVX2 1
/* The AVX2 steps of find_dash_line from q: where "\n--" starts, or where
 * fewer than 34 bytes are left (the rest is for the other loops). */
__attribute__((target("avx2"))) static const char *find_dash_line_avx2(const char *q,
                                                                         const char *end)
{
    const __m256i nl = _mm256_set1_epi8('\n'), dash = _mm256_set1_epi8('-');
    while (end - q >= 34) {
        __m256i a = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)q), nl);
        __m256i b =
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(q + 1)), dash);
        __m256i c =
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(q + 2)), dash);
        unsigned mask = (unsigned)_mm256_movemask_epi8(_mm256_and_si256(a, _mm256_and_si256(b, c)));
        if (mask)
            return q + __builtin_ctz(mask);
        q += 32;
    }
    return q;
}
#endif

/* The first "--" at or after p that begins a line of [start, end) (it
 * follows a '\n' or is at start), or NULL. Only such a line can be a
 * delimiter. Part headers are full of single '-' (Content-Type,
 * return-no-content) and a search from '-' to '-' stopped about 16 times
 * per operation, so the three bytes "\n--" are looked for together, 32
 * positions a step with AVX2 where the processor has it, else 16 with
 * SSE2. */
static const char *find_dash_line(const char *p, const char *start, const char *end)
{
    if (p == start && end - p >= 2 && p[0] == '-' && p[1] == '-')
        return p;
    const char *q = p > start ? p - 1 : p;  /* where the '\n' may be */
#ifdef MULTIPART_AVX2
    if (cpu_has_avx2()) {
        q = find_dash_line_avx2(q, end);
        /* a hit is answered here: going on into the SSE2 loop to find it
         * again cost 6% of a 100-operation parse */
        if (end - q >= 3 && q[0] == '\n' && q[1] == '-' && q[2] == '-')
            return q + 1;
    }
#endif
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n'), dash = _mm_set1_epi8('-');
    while (end - q >= 18) {
        __m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)q), nl);
        __m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + 1)), dash);
        __m128i c = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + 2)), dash);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(a, _mm_and_si128(b, c)));
        if (mask)
            return q + __builtin_ctz(mask) + 1;
        q += 16;
    }
#endif
    for (; end - q >= 3; q++)
        if (q[0] == '\n' && q[1] == '-' && q[2] == '-')
            return q + 1;
    return NULL;
}

/* Splits [p, end) on the delimiter lines of boundary b into part spans.
 * A part runs from after its delimiter line to before the line break that
 * precedes the next delimiter line. Preamble and epilogue are dropped. The
 * close delimiter may be missing when only blank text follows the last
 * delimiter. Returns 0 or MULTIPART_ERR_MALFORMED. */
static int split_parts(struct parser *ps, const char *p, const char *end, const char *b,
                       struct spans *out)
{
    size_t blen = strlen(b);
    const char *part = NULL;  /* start of the open part, NULL before the first */
    const char *start = p;
    memset(out, 0, sizeof *out);
    while (p < end) {
        /* Only a line that starts with "--" can be a delimiter. */
        const char *d = find_dash_line(p, start, end);
        if (!d)
            break;
        struct line ln;
        next_line(d, end, &ln);
        enum delim k = delim_kind(&ln, b, blen);
        if (k != NOT_DELIM) {
            if (part) {
                const char *pe = ln.p;
                if (pe > part && pe[-1] == '\n')
                    pe--;
                if (pe > part && pe[-1] == '\r')
                    pe--;
                spans_push(ps->a, out, part, (size_t)(pe - part));
            }
            if (k == DELIM_CLOSE)
                return 0;
            part = ln.next;
        }
        p = ln.next;
    }
    if (!part)
        return fail(ps, "boundary delimiter not found");
    if (!all_space(part, (size_t)(end - part)))
        return fail(ps, "multipart not terminated");
    return 0;
}

/* Splits one header line into a name and a trimmed value. Rejects control
 * bytes (NUL included), folded lines, a missing colon and bad names. */
static int split_header(struct parser *ps, const struct line *ln, struct span *name,
                        struct span *value)
{
    /* Fast path: a token name up to the colon, then a clean value. */
    const char *end = ln->p + ln->n, *q = ln->p;
    while (q < end && http_is_tchar((unsigned char)*q))
        q++;
    if (q > ln->p && q < end && *q == ':' &&
        ctl_span(q + 1, (size_t)(end - q - 1)) == (size_t)(end - q - 1)) {
        name->p = ln->p;
        name->n = (size_t)(q - ln->p);
        *value = trim_blanks(q + 1, (size_t)(end - q - 1));
        return 0;
    }
    /* Otherwise find what is wrong, in the order the reasons are given. */
    if (ctl_span(ln->p, ln->n) != ln->n)
        return fail(ps, "control character in a header line");
    const char *colon = memchr(ln->p, ':', ln->n);
    if (!colon || colon == ln->p)
        return fail(ps, "bad header line");
    for (const char *q = ln->p; q < colon; q++)
        if (!http_is_tchar((unsigned char)*q))
            return fail(ps, "bad header name");
    name->p = ln->p;
    name->n = (size_t)(colon - ln->p);
    *value = trim_blanks(colon + 1, (size_t)(ln->p + ln->n - colon - 1));
    return 0;
}

/* Reads MIME part headers from *p up to the first blank line or the end of
 * the part (the blank line before a delimiter belongs to the delimiter, so a
 * part with headers and no content may lack it); *p is left after them. */
static int parse_mime(struct parser *ps, const char **p, const char *end, struct mime *m)
{
    memset(m, 0, sizeof *m);
    while (*p < end) {
        struct line ln;
        next_line(*p, end, &ln);
        *p = ln.next;
        if (all_space(ln.p, ln.n))
            return 0;
        struct span name, value;
        if (split_header(ps, &ln, &name, &value))
            return MULTIPART_ERR_MALFORMED;
        if (span_ieq(name, "Content-Type") && !m->has_ctype) {
            m->ctype = value;
            m->has_ctype = 1;
        } else if (span_ieq(name, "Content-Transfer-Encoding") && !m->has_cte) {
            m->cte = value;
            m->has_cte = 1;
        } else if (span_ieq(name, "Content-ID") && !m->has_cid) {
            m->cid = value;
            m->has_cid = 1;
        }
    }
    return 0;
}

/* Parses a Content-Type value: *mtype gets the trimmed media type and
 * *boundary an arena copy of the (unquoted) boundary parameter, or NULL.
 * Parameters are ';'-separated with optional blanks; values are tokens or
 * quoted strings with backslash escapes. */
static int parse_ctype(struct parser *ps, struct span ct, struct span *mtype, char **boundary)
{
    const char *p = ct.p, *end = ct.p + ct.n;
    const char *semi = memchr(p, ';', ct.n);
    *mtype = trim_blanks(p, (size_t)((semi ? semi : end) - p));
    *boundary = NULL;
    p = semi ? semi + 1 : end;
    while (p < end) {
        while (p < end && is_blank(*p))
            p++;
        const char *name = p;
        while (p < end && *p != '=' && *p != ';')
            p++;
        struct span pn = trim_blanks(name, (size_t)(p - name));
        if (p == end || *p == ';') {  /* parameter without a value: ignored */
            if (p < end)
                p++;
            continue;
        }
        p++;  /* '=' */
        while (p < end && is_blank(*p))
            p++;
        char *val;
        if (p < end && *p == '"') {
            val = arena_alloc(ps->a, (size_t)(end - p) + 1);
            size_t vn = 0;
            p++;
            for (;;) {
                if (p == end)
                    return fail(ps, "unterminated quoted parameter");
                if (*p == '"')
                    break;
                if (*p == '\\' && p + 1 < end)
                    p++;
                val[vn++] = *p++;
            }
            val[vn] = '\0';
            p++;  /* closing quote */
            while (p < end && is_blank(*p))
                p++;
            if (p < end && *p != ';')
                return fail(ps, "junk after a quoted parameter");
        } else {
            const char *v = p;
            while (p < end && *p != ';')
                p++;
            struct span vs = trim_blanks(v, (size_t)(p - v));
            val = arena_strndup(ps->a, vs.p, vs.n);
        }
        if (p < end)
            p++;  /* ';' */
        if (span_ieq(pn, "boundary") && !*boundary) {
            size_t bl = strlen(val);
            if (bl == 0)
                return fail(ps, "empty boundary");
            if (bl > MP_MAX_BOUNDARY)
                return fail(ps, "boundary too long");
            for (size_t i = 0; i < bl; i++)
                if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f)
                    return fail(ps, "control character in boundary");
            *boundary = val;
        }
    }
    return 0;
}

/* Maps a method name to our enum (case-sensitive, as in HTTP); *name gets
 * the literal spelling of a known method, else NULL. */
static enum http_method method_of(struct span m, const char **name)
{
    static const struct {
        const char *name;
        enum http_method m;
    } tab[] = {
        {"GET", HTTP_M_GET},       {"HEAD", HTTP_M_HEAD},     {"POST", HTTP_M_POST},
        {"PUT", HTTP_M_PUT},       {"DELETE", HTTP_M_DELETE}, {"MERGE", HTTP_M_MERGE},
        {"PATCH", HTTP_M_PATCH},   {"OPTIONS", HTTP_M_OPTIONS},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].name) == m.n && memcmp(tab[i].name, m.p, m.n) == 0) {
            *name = tab[i].name;
            return tab[i].m;
        }
    *name = NULL;
    return HTTP_M_OTHER;
}

/* Copies [p, p+n) to *d as a NUL-terminated string and advances *d. */
static const char *put_str(char **d, const char *p, size_t n)
{
    char *s = *d;
    memcpy(s, p, n);
    s[n] = '\0';
    *d = s + n + 1;
    return s;
}

/* Splits op->url into host, path and query (see struct multipart_op), all
 * three copied into one arena block (they are never longer than the URL
 * together, plus "/" for an empty absolute path and three NULs). */
static void split_url(struct parser *ps, struct multipart_op *op, size_t url_len)
{
    const char *u = op->url, *end = u + url_len;
    const char *p = u;
    const char *host = "";
    size_t host_len = 0;
    /* scheme "://" makes it absolute */
    const char *q = u;
    if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) {
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
               (*q >= '0' && *q <= '9') || *q == '+' || *q == '-' || *q == '.')
            q++;
        if (q[0] == ':' && q[1] == '/' && q[2] == '/') {
            host = q + 3;
            p = host;
            while (p < end && *p != '/' && *p != '?' && *p != '#')
                p++;
            host_len = (size_t)(p - host);
        }
    }
    char *d = arena_alloc(ps->a, url_len + 4);
    op->host = put_str(&d, host, host_len);
    const char *pe = p;
    while (pe < end && *pe != '?' && *pe != '#')
        pe++;
    if ((host_len || p != u) && pe == p) {  /* absolute: the path is "/" when empty */
        op->path = put_str(&d, "/", 1);
        op->path_len = 1;
    } else {
        op->path = put_str(&d, p, (size_t)(pe - p));
        op->path_len = (size_t)(pe - p);
    }
    if (pe < end && *pe == '?') {
        const char *qs = pe + 1, *qe = qs;
        while (qe < end && *qe != '#')
            qe++;
        op->query = put_str(&d, qs, (size_t)(qe - qs));
        op->query_len = (size_t)(qe - qs);
    } else {
        op->query = "";
        op->query_len = 0;
    }
}

/* Parses "METHOD SP URL SP HTTP/1.1" (blanks may repeat; the URL is what
 * lies between the first and the last blank run, as ODataLib reads it). */
static int parse_request_line(struct parser *ps, const struct line *ln, struct multipart_op *op)
{
    if (ctl_span(ln->p, ln->n) != ln->n)
        return fail(ps, "control character in the request line");
    struct span l = trim_blanks(ln->p, ln->n);
    size_t i = 0, j = l.n;
    while (i < l.n && !is_blank(l.p[i]))
        i++;
    while (j > 0 && !is_blank(l.p[j - 1]))
        j--;
    if (i == l.n || j <= i)
        return fail(ps, "bad request line");
    struct span method = {l.p, i};
    struct span version = {l.p + j, l.n - j};
    struct span url = trim_blanks(l.p + i, j - i);
    if (url.n == 0)
        return fail(ps, "bad request line");
    for (size_t k = 0; k < method.n; k++)
        if (!http_is_tchar((unsigned char)method.p[k]))
            return fail(ps, "bad method");
    if (version.n != 8 || memcmp(version.p, "HTTP/1.1", 8) != 0)
        return fail(ps, "sub-request version is not HTTP/1.1");
    op->method = method_of(method, &op->method_name);
    if (!op->method_name)
        op->method_name = arena_strndup(ps->a, method.p, method.n);
    op->url = arena_strndup(ps->a, url.p, url.n);
    split_url(ps, op, url.n);
    return 0;
}

/* Appends a copy of one header to op->headers (arena doubling array). */
static void op_add_header(struct parser *ps, struct multipart_op *op, size_t *cap,
                          struct span name, struct span value)
{
    if (op->nheaders == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct http_header *v = arena_alloc(ps->a, nc * sizeof *v);
        if (op->nheaders)
            memcpy(v, op->headers, op->nheaders * sizeof *v);
        op->headers = v;
        *cap = nc;
    }
    struct http_header *h = &op->headers[op->nheaders++];
    char *d = arena_alloc(ps->a, name.n + value.n + 2);
    h->name = put_str(&d, name.p, name.n);
    h->value = put_str(&d, value.p, value.n);
    h->value_len = value.n;
}

/* Parses the embedded HTTP request in [p, end) (an application/http part
 * whose MIME headers were m) into op. */
static int parse_embedded(struct parser *ps, const char *p, const char *end,
                          const struct mime *m, struct multipart_op *op)
{
    struct line ln;
    for (;;) {  /* first non-blank line is the request line */
        if (p >= end)
            return fail(ps, "no request line");
        next_line(p, end, &ln);
        p = ln.next;
        if (!all_space(ln.p, ln.n))
            break;
    }
    const char *head = ln.p;
    const char *cid = NULL;
    if (ps->head && (size_t)(end - head) >= ps->head_len &&
        memcmp(head, ps->head, ps->head_len) == 0) {
        /* The same bytes parse the same way: share the results. */
        const struct multipart_op *src = &ps->ops[ps->head_op];
        op->method_name = src->method_name;
        op->method = src->method;
        op->url = src->url;
        op->host = src->host;
        op->path = src->path;
        op->path_len = src->path_len;
        op->query = src->query;
        op->query_len = src->query_len;
        op->headers = src->headers;
        op->nheaders = src->nheaders;
        cid = ps->head_cid;
        p = head + ps->head_len;
    } else {
        if (parse_request_line(ps, &ln, op))
            return MULTIPART_ERR_MALFORMED;
        size_t cap = 0;
        int blank = 0;
        while (p < end) {
            next_line(p, end, &ln);
            p = ln.next;
            if (all_space(ln.p, ln.n)) {
                blank = 1;
                break;
            }
            struct span name, value;
            if (split_header(ps, &ln, &name, &value))
                return MULTIPART_ERR_MALFORMED;
            op_add_header(ps, op, &cap, name, value);
            if (!cid && value.n && span_ieq(name, "Content-ID"))
                cid = op->headers[op->nheaders - 1].value;
        }
        if (blank && p[-1] == '\n') {
            ps->head = head;
            ps->head_len = (size_t)(p - head);
            ps->head_op = op->index;
            ps->head_cid = cid;
        }
    }
    while (p < end && is_space(*p))
        p++;
    while (end > p && is_space(end[-1]))
        end--;
    if (end > p) {
        op->body = p;
        op->body_len = (size_t)(end - p);
    }
    if (m->has_cid && m->cid.n)
        op->content_id = arena_strndup(ps->a, m->cid.p, m->cid.n);
    else
        op->content_id = cid;
    return 0;
}

/* Appends a zeroed op to the result array and returns it. */
static struct multipart_op *new_op(struct parser *ps)
{
    if (ps->nops == ps->cap) {
        size_t nc = ps->cap ? ps->cap * 2 : 8;
        struct multipart_op *v = arena_alloc(ps->a, nc * sizeof *v);
        if (ps->nops)
            memcpy(v, ps->ops, ps->nops * sizeof *v);
        ps->ops = v;
        ps->cap = nc;
    }
    struct multipart_op *op = &ps->ops[ps->nops];
    memset(op, 0, sizeof *op);
    op->index = ps->nops++;
    return op;
}

/* Checks the Content-Type (and transfer encoding) of an operation part. */
static int check_http_part(struct parser *ps, const struct mime *m, struct span mtype)
{
    if (!span_ieq(mtype, "application/http"))
        return fail(ps, "part Content-Type is not application/http");
    if (m->has_cte && !span_ieq(m->cte, "binary") && !span_ieq(m->cte, "8bit") &&
        !span_ieq(m->cte, "7bit"))
        return fail(ps, "unsupported Content-Transfer-Encoding");
    return 0;
}

/* Parses the changeset multipart in [p, end) with boundary cb. */
static int parse_changeset(struct parser *ps, const char *p, const char *end, const char *cb)
{
    struct spans parts;
    if (split_parts(ps, p, end, cb, &parts))
        return MULTIPART_ERR_MALFORMED;
    for (size_t i = 0; i < parts.n; i++) {
        const char *q = parts.v[i].p, *qe = q + parts.v[i].n;
        if (all_space(q, parts.v[i].n))
            return fail(ps, "empty part in changeset");
        struct mime m;
        if (parse_mime(ps, &q, qe, &m))
            return MULTIPART_ERR_MALFORMED;
        if (!m.has_ctype)
            return fail(ps, "changeset part without Content-Type");
        struct span mtype;
        char *nested;
        if (parse_ctype(ps, m.ctype, &mtype, &nested))
            return MULTIPART_ERR_MALFORMED;
        if (span_ieq(mtype, "multipart/mixed"))
            return fail(ps, "nested changeset");
        if (check_http_part(ps, &m, mtype))
            return MULTIPART_ERR_MALFORMED;
        struct multipart_op *op = new_op(ps);
        op->in_changeset = 1;
        op->changeset_boundary = cb;
        if (parse_embedded(ps, q, qe, &m, op))
            return MULTIPART_ERR_MALFORMED;
        switch (op->method) {
        case HTTP_M_POST:
        case HTTP_M_PUT:
        case HTTP_M_MERGE:
        case HTTP_M_PATCH:
        case HTTP_M_DELETE:
            break;
        default:
            return fail(ps, "method not allowed in a changeset");
        }
    }
    if (ps->nops == 0)
        return fail(ps, "empty changeset");
    return 0;
}

int multipart_parse(struct arena *a, const char *content_type, const char *body,
                    size_t body_len, struct multipart_batch *out, const char **reason)
{
    struct parser ps = {a, NULL, NULL, 0, 0, NULL, 0, 0, NULL};
    int rc = MULTIPART_ERR_MALFORMED;
    memset(out, 0, sizeof *out);
    if (!body)
        body_len = 0;
    const char *end = body + body_len;
    struct span mtype;
    char *bb = NULL, *cb = NULL;
    struct spans parts;
    struct mime m;

    if (!content_type) {
        fail(&ps, "missing Content-Type");
        goto done;
    }
    struct span ct = {content_type, strlen(content_type)};
    if (parse_ctype(&ps, ct, &mtype, &bb))
        goto done;
    if (!span_ieq(mtype, "multipart/mixed")) {
        fail(&ps, "Content-Type is not multipart/mixed");
        goto done;
    }
    if (!bb) {
        fail(&ps, "missing boundary");
        goto done;
    }
    if (split_parts(&ps, body, end, bb, &parts))
        goto done;
    if (parts.n == 0 || all_space(parts.v[0].p, parts.v[0].n)) {
        fail(&ps, "empty batch");
        goto done;
    }
    if (parts.n > 1) {
        fail(&ps, "more than one part in the batch");
        goto done;
    }
    const char *p = parts.v[0].p, *pe = p + parts.v[0].n;
    if (parse_mime(&ps, &p, pe, &m))
        goto done;
    if (!m.has_ctype) {
        fail(&ps, "batch part without Content-Type");
        goto done;
    }
    if (parse_ctype(&ps, m.ctype, &mtype, &cb))
        goto done;
    if (span_ieq(mtype, "multipart/mixed")) {
        if (!cb) {
            fail(&ps, "changeset without boundary");
            goto done;
        }
        if (parse_changeset(&ps, p, pe, cb))
            goto done;
        out->kind = MULTIPART_CHANGESET;
        out->changeset_boundary = cb;
    } else {
        if (check_http_part(&ps, &m, mtype))
            goto done;
        struct multipart_op *op = new_op(&ps);
        if (parse_embedded(&ps, p, pe, &m, op))
            goto done;
        if (op->method != HTTP_M_GET) {
            fail(&ps, "only a GET may stand outside a changeset");
            goto done;
        }
        out->kind = MULTIPART_QUERY;
    }
    out->boundary = bb;
    out->ops = ps.ops;
    out->nops = ps.nops;
    rc = ps.nops > MULTIPART_MAX_OPS ? MULTIPART_ERR_TOO_MANY : MULTIPART_OK;
    if (rc == MULTIPART_ERR_TOO_MANY)
        ps.reason = "more than 100 operations in the changeset";
done:
    if (rc == MULTIPART_ERR_MALFORMED)
        memset(out, 0, sizeof *out);
    if (reason)
        *reason = rc == MULTIPART_OK ? NULL : ps.reason;
    return rc;
}

void multipart_op_to_request(struct arena *a, const struct multipart_op *op,
                             const struct request *parent, struct request *req)
{
    memset(req, 0, sizeof *req);
    req->arena = a;
    req->method = op->method;
    req->method_name = op->method_name;
    req->http_major = 1;
    req->http_minor = 1;
    req->target = op->url;
    req->path = op->path;
    req->path_len = op->path_len;
    req->query = op->query;
    req->query_len = op->query_len;
    req->headers = op->headers;
    req->nheaders = op->nheaders;
    req->body = op->body;   /* a slice of the batch body, not copied */
    req->body_len = op->body_len;
    if (parent) {
        req->tls = parent->tls;
        memcpy(req->peer_ip, parent->peer_ip, sizeof req->peer_ip);
        req->start_us = parent->start_us;
    }
}
