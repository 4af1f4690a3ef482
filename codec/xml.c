/* xml.c - the strict, bounded XML reader and the escaping writer (xml.h). */
#include "codec/xml.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/coding.h"

/* Reader state for one document. */
struct xp {
    struct arena *a;
    const char *p, *end;
    char *err;
    size_t errlen;
    size_t nodes;
    char *text;      /* decoded text of the innermost element since its last child */
    size_t tlen;
};

/* Records the first error; always returns -1. */
static int fail(struct xp *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct xp *x, const char *fmt, ...)
{
    if (x->errlen && !x->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err, x->errlen, fmt, ap);
        va_end(ap);
        if (!x->err[0])
            snprintf(x->err, x->errlen, "error");
    }
    return -1;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Checks that s[0..n) is UTF-8 XML may contain: well-formed, no
 * overlongs or surrogates, no U+FFFE/U+FFFF, no C0 controls other than
 * tab, LF and CR. Returns the offset of the first bad byte, or n. */
static size_t check_chars(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                return i;
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (n - i < len)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
            return i;
        i += len;
    }
    return n;
}

/* True when the input at the cursor starts with lit. */
static int at(const struct xp *x, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(x->end - x->p) >= n && memcmp(x->p, lit, n) == 0;
}

static void skip_space(struct xp *x)
{
    while (x->p < x->end && is_space(*x->p))
        x->p++;
}

static int name_start(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || c >= 0x80;
}

static int name_char(unsigned char c)
{
    return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* Reads a Name at the cursor; sets *s, *n. */
static int read_name(struct xp *x, const char **s, size_t *n)
{
    const char *b = x->p;
    if (x->p >= x->end || !name_start((unsigned char)*x->p))
        return fail(x, "name expected");
    while (x->p < x->end && name_char((unsigned char)*x->p))
        x->p++;
    *s = b;
    *n = (size_t)(x->p - b);
    if (*n > XML_MAX_NAME)
        return fail(x, "name longer than %d bytes", XML_MAX_NAME);
    return 0;
}

/* Appends code point cp as UTF-8 to out. */
static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the reference at the cursor ('&' ... ';') into out (>= 4 bytes);
 * returns the number of bytes written, or -1. The output is never longer
 * than the reference. */
static int read_ref(struct xp *x, char *out)
{
    static const struct {
        const char *name;
        char ch;
    } named[] = {{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (at(x, named[i].name)) {
            x->p += strlen(named[i].name);
            out[0] = named[i].ch;
            return 1;
        }
    }
    if (!at(x, "&#"))
        return fail(x, "unknown entity reference");
    x->p += 2;
    int hex = 0;
    if (x->p < x->end && *x->p == 'x') {
        hex = 1;
        x->p++;
    }
    uint32_t cp = 0;
    size_t digits = 0;
    while (x->p < x->end && *x->p != ';') {
        char c = *x->p;
        int d = hex ? coding_hexval((unsigned char)c) : c >= '0' && c <= '9' ? c - '0' : -1;
        if (d < 0)
            return fail(x, "bad character reference");
        cp = cp * (hex ? 16 : 10) + (unsigned)d;
        if (cp > 0x10FFFF)
            return fail(x, "character reference out of range");
        digits++;
        x->p++;
    }
    if (x->p >= x->end || digits == 0)
        return fail(x, "unterminated character reference");
    x->p++;
    int ok = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
             (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!ok)
        return fail(x, "character reference to a character XML forbids");
    return (int)put_utf8(out, cp);
}

/* Reads an attribute value (quote at the cursor) and drops it. */
static int read_attr_value(struct xp *x, const char **v, size_t *vn)
{
    if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
        return fail(x, "attribute value must be quoted");
    char q = *x->p++;
    *v = x->p;
    while (x->p < x->end && *x->p != q) {
        if (*x->p == '<')
            return fail(x, "'<' in an attribute value");
        if (*x->p == '&') {
            char tmp[4];
            if (read_ref(x, tmp) < 0)
                return -1;
            continue;
        }
        x->p++;
    }
    if (x->p >= x->end)
        return fail(x, "unterminated attribute value");
    *vn = (size_t)(x->p - *v);
    x->p++;
    return 0;
}

/* Reads the attributes of a tag up to (not including) '>' or "/>". */
static int read_attrs(struct xp *x)
{
    const char *names[XML_MAX_ATTRS];
    size_t lens[XML_MAX_ATTRS], n = 0;
    for (;;) {
        const char *before = x->p;
        skip_space(x);
        if (x->p >= x->end)
            return fail(x, "unterminated tag");
        if (*x->p == '>' || *x->p == '/')
            return 0;
        if (x->p == before)
            return fail(x, "whitespace expected before an attribute");
        const char *an, *v;
        size_t al, vn;
        if (read_name(x, &an, &al))
            return -1;
        for (size_t i = 0; i < n; i++)
            if (lens[i] == al && memcmp(names[i], an, al) == 0)
                return fail(x, "duplicate attribute %.*s", (int)al, an);
        if (n == XML_MAX_ATTRS)
            return fail(x, "more than %d attributes", XML_MAX_ATTRS);
        names[n] = an;
        lens[n++] = al;
        skip_space(x);
        if (x->p >= x->end || *x->p != '=')
            return fail(x, "'=' expected after attribute %.*s", (int)al, an);
        x->p++;
        skip_space(x);
        if (read_attr_value(x, &v, &vn))
            return -1;
    }
}

/* The XML declaration at the cursor: version 1.0, encoding UTF-8 when
 * given, standalone yes/no when given, in that order. */
static int read_decl(struct xp *x)
{
    static const char *const order[] = {"version", "encoding", "standalone"};
    size_t next = 0;
    x->p += 5; /* "<?xml" */
    for (;;) {
        const char *before = x->p;
        skip_space(x);
        if (at(x, "?>")) {
            x->p += 2;
            return next > 0 ? 0 : fail(x, "XML declaration without a version");
        }
        if (x->p == before)
            return fail(x, "malformed XML declaration");
        const char *an, *v;
        size_t al, vn;
        if (read_name(x, &an, &al))
            return -1;
        size_t k = next;
        while (k < 3 && !(strlen(order[k]) == al && memcmp(order[k], an, al) == 0))
            k++;
        if (k == 3 || (next == 0 && k != 0))
            return fail(x, "unexpected %.*s in the XML declaration", (int)al, an);
        next = k + 1;
        skip_space(x);
        if (x->p >= x->end || *x->p != '=')
            return fail(x, "malformed XML declaration");
        x->p++;
        skip_space(x);
        if (read_attr_value(x, &v, &vn))
            return -1;
        if (k == 0 && !(vn == 3 && memcmp(v, "1.0", 3) == 0))
            return fail(x, "XML version must be 1.0");
        if (k == 1 && !((vn == 5 && strncasecmp(v, "utf-8", 5) == 0) ||
                        (vn == 4 && strncasecmp(v, "utf8", 4) == 0)))
            return fail(x, "encoding must be UTF-8");
        if (k == 2 && !((vn == 3 && memcmp(v, "yes", 3) == 0) ||
                        (vn == 2 && memcmp(v, "no", 2) == 0)))
            return fail(x, "standalone must be yes or no");
    }
}

/* Skips a comment at the cursor ("<!--" ... "-->"; no "--" inside). */
static int skip_comment(struct xp *x)
{
    x->p += 4;
    for (;;) {
        if (x->end - x->p < 3)
            return fail(x, "unterminated comment");
        if (x->p[0] == '-' && x->p[1] == '-') {
            if (x->p[2] != '>')
                return fail(x, "'--' inside a comment");
            x->p += 3;
            return 0;
        }
        x->p++;
    }
}

/* Appends one character-data byte to the text buffer, CR LF and lone CR
 * becoming LF (XML end-of-line handling). */
static void text_byte(struct xp *x, char c)
{
    if (c == '\r') {
        if (x->p < x->end && *x->p == '\n')
            return; /* the LF that follows is kept */
        c = '\n';
    }
    x->text[x->tlen++] = c;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_space(s[i]))
            return 0;
    return 1;
}

/* A new element (name known) under parent; flushes the parent's text. */
static struct xml_node *new_node(struct xp *x, struct xml_node *parent, const char *name,
                                 size_t nl, size_t depth)
{
    if (++x->nodes > XML_MAX_NODES) {
        fail(x, "more than %d elements", XML_MAX_NODES);
        return NULL;
    }
    if (depth > XML_MAX_DEPTH) {
        fail(x, "elements nested deeper than %d", XML_MAX_DEPTH);
        return NULL;
    }
    struct xml_node *n = arena_calloc(x->a, sizeof *n);
    n->name = arena_strndup(x->a, name, nl);
    n->text = "";
    n->parent = parent;
    if (parent) {
        if (!blank(x->text, x->tlen))
            parent->mixed = 1;
        struct xml_node **pp = &parent->first;
        while (*pp)
            pp = &(*pp)->next;
        *pp = n;
        parent->nchildren++;
    }
    x->tlen = 0;
    return n;
}

/* Ends element n: a leaf keeps its text, a parent only its mixed flag. */
static void end_node(struct xp *x, struct xml_node *n)
{
    if (n->first) {
        if (!blank(x->text, x->tlen))
            n->mixed = 1;
    } else {
        n->text = arena_strndup(x->a, x->text, x->tlen);
        n->text_len = x->tlen;
    }
    x->tlen = 0;
}

/* Reads from the root start tag to the root end tag. */
static int read_element_tree(struct xp *x, struct xml_node **root)
{
    struct xml_node *cur = NULL;
    size_t depth = 0;
    for (;;) {
        if (x->p >= x->end)
            return fail(x, "unexpected end of document inside <%s>", cur ? cur->name : "?");
        char c = *x->p;
        if (c == '<' && at(x, "</")) {
            x->p += 2;
            const char *nm;
            size_t nl;
            if (read_name(x, &nm, &nl))
                return -1;
            if (strlen(cur->name) != nl || memcmp(cur->name, nm, nl) != 0)
                return fail(x, "</%.*s> does not close <%s>", (int)nl, nm, cur->name);
            skip_space(x);
            if (x->p >= x->end || *x->p != '>')
                return fail(x, "'>' expected after </%s", cur->name);
            x->p++;
            end_node(x, cur);
            cur = cur->parent;
            if (--depth == 0)
                return 0;
        } else if (c == '<' && at(x, "<!--")) {
            if (skip_comment(x))
                return -1;
        } else if (c == '<' && at(x, "<![CDATA[")) {
            x->p += 9;
            for (;;) {
                if (x->p >= x->end)
                    return fail(x, "unterminated CDATA section");
                if (at(x, "]]>")) {
                    x->p += 3;
                    break;
                }
                char b = *x->p++;
                text_byte(x, b);
            }
        } else if (c == '<' && (at(x, "<!") || at(x, "<?"))) {
            return fail(x, "DOCTYPE, declarations and processing instructions are not allowed");
        } else if (c == '<') {
            x->p++;
            const char *nm;
            size_t nl;
            if (read_name(x, &nm, &nl))
                return -1;
            struct xml_node *n = new_node(x, cur, nm, nl, depth + 1);
            if (!n)
                return -1;
            if (!cur)
                *root = n;
            if (read_attrs(x))
                return -1;
            if (*x->p == '/') {
                if (x->end - x->p < 2 || x->p[1] != '>')
                    return fail(x, "'/>' expected");
                x->p += 2;
                end_node(x, n);
                if (!cur)
                    return 0;
            } else {
                x->p++; /* '>' */
                cur = n;
                depth++;
            }
        } else if (c == '&') {
            char tmp[4];
            int k = read_ref(x, tmp);
            if (k < 0)
                return -1;
            memcpy(x->text + x->tlen, tmp, (size_t)k);
            x->tlen += (size_t)k;
        } else {
            if (at(x, "]]>"))
                return fail(x, "']]>' in character data");
            x->p++;
            text_byte(x, c);
        }
    }
}

/* Comments and whitespace before or after the root element. */
static int read_misc(struct xp *x)
{
    for (;;) {
        skip_space(x);
        if (at(x, "<!--")) {
            if (skip_comment(x))
                return -1;
            continue;
        }
        return 0;
    }
}

int xml_parse(struct arena *a, const char *s, size_t n, struct xml_node **root, char *err,
              size_t errlen)
{
    struct xp x = {.a = a, .p = s, .end = s + n, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    *root = NULL;
    if (n > XML_MAX_INPUT)
        return fail(&x, "document larger than %u bytes", XML_MAX_INPUT);
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
        x.p += 3;
    size_t bad = check_chars((const unsigned char *)x.p, (size_t)(x.end - x.p));
    if (bad != (size_t)(x.end - x.p))
        return fail(&x, "invalid UTF-8 or forbidden character at offset %zu",
                    bad + (size_t)(x.p - s));
    /* Decoded text is never longer than its source. */
    x.text = arena_alloc(a, n + 1);
    if (at(&x, "<?xml") && x.end - x.p > 5 && is_space(x.p[5])) {
        if (read_decl(&x))
            return -1;
    }
    if (read_misc(&x))
        return -1;
    if (x.p >= x.end || *x.p != '<' || at(&x, "<!") || at(&x, "<?") || at(&x, "</"))
        return fail(&x, x.p >= x.end ? "no root element"
                                     : "root element expected (DOCTYPE and processing "
                                       "instructions are not allowed)");
    struct xml_node *r = NULL;
    if (read_element_tree(&x, &r))
        return -1;
    if (read_misc(&x))
        return -1;
    if (x.p != x.end)
        return fail(&x, "content after the root element");
    *root = r;
    return 0;
}

const struct xml_node *xml_child(const struct xml_node *n, const char *name)
{
    for (const struct xml_node *c = n->first; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

size_t xml_count(const struct xml_node *n, const char *name)
{
    size_t k = 0;
    for (const struct xml_node *c = n->first; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            k++;
    return k;
}

const char *xml_trimmed(struct arena *a, const struct xml_node *n, size_t *len)
{
    const char *s = n->text, *e = n->text + n->text_len;
    while (s < e && is_space(*s))
        s++;
    while (e > s && is_space(e[-1]))
        e--;
    if (len)
        *len = (size_t)(e - s);
    return arena_strndup(a, s, (size_t)(e - s));
}

void xml_escape(struct buf *b, const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep;
        switch (s[i]) {
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '&': rep = "&amp;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        case '\r': rep = "&#13;"; break;
        default: continue;
        }
        buf_append(b, s + start, i - start);
        buf_puts(b, rep);
        start = i + 1;
    }
    buf_append(b, s + start, n - start);
}

void xml_put_elem(struct buf *b, const char *name, const char *text)
{
    xml_open(b, name);
    xml_escape(b, text, strlen(text));
    xml_close(b, name);
}

void xml_put_empty(struct buf *b, const char *name)
{
    buf_putc(b, '<');
    buf_puts(b, name);
    buf_puts(b, " />");
}

void xml_open(struct buf *b, const char *name)
{
    buf_putc(b, '<');
    buf_puts(b, name);
    buf_putc(b, '>');
}

void xml_close(struct buf *b, const char *name)
{
    buf_puts(b, "</");
    buf_puts(b, name);
    buf_putc(b, '>');
}
