/* jsonpeek.c - one top-level string member of a JSON object (see jsonpeek.h). */
#include "core/jsonpeek.h"

#include <stdint.h>
#include <string.h>

#include "core/coding.h"

/* Scanner over [p, end). */
struct peek {
    const char *p, *end;
};

static void skip_ws(struct peek *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* At an opening quote: moves past the closing one. Sets *start and *len to the
 * raw text between the quotes and *escaped when it holds a backslash.
 * Returns 0, or -1 when the string does not end. */
static int scan_string(struct peek *s, const char **start, size_t *len, int *escaped)
{
    const char *q = ++s->p;
    *escaped = 0;
    while (q < s->end && *q != '"') {
        if (*q == '\\') {
            *escaped = 1;
            q++;
        }
        q++;
    }
    if (q >= s->end)
        return -1;
    *start = s->p;
    *len = (size_t)(q - s->p);
    s->p = q + 1;
    return 0;
}

/* Appends code point cp as UTF-8 at o; returns the bytes written. */
static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the escaped string text [p, p + n) into out (room for n bytes:
 * no escape grows). Returns the length, or -1 for a bad escape. */
static long unescape(const char *p, size_t n, char *out)
{
    const char *end = p + n;
    size_t o = 0;
    while (p < end) {
        if (*p != '\\') {
            out[o++] = *p++;
            continue;
        }
        if (++p >= end)
            return -1;
        char c = *p++;
        switch (c) {
        case '"': case '\\': case '/': out[o++] = c; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            long u = coding_hex4(p, (size_t)(end - p));
            if (u < 0)
                return -1;
            p += 4;
            uint32_t cp = (uint32_t)u;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u'
                              ? coding_hex4(p + 2, (size_t)(end - p - 2)) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return -1;
            }
            o += put_utf8(out + o, cp);  /* at most 4 bytes for 6 or 12 read */
            break;
        }
        default:
            return -1;
        }
    }
    return (long)o;
}

/* Moves past one value of any kind (not validated). Returns 0 or -1. */
static int skip_value(struct peek *s)
{
    if (s->p >= s->end)
        return -1;
    const char *str;
    size_t len;
    int esc;
    if (*s->p == '"')
        return scan_string(s, &str, &len, &esc);
    if (*s->p == '{' || *s->p == '[') {
        int depth = 0;
        while (s->p < s->end) {
            char c = *s->p;
            if (c == '"') {
                if (scan_string(s, &str, &len, &esc) < 0)
                    return -1;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0) {
                s->p++;
                return 0;
            }
            s->p++;
        }
        return -1;
    }
    /* number, true, false, null */
    const char *start = s->p;
    while (s->p < s->end && *s->p != ',' && *s->p != '}' && *s->p != ']' && *s->p != ' ' &&
           *s->p != '\t' && *s->p != '\n' && *s->p != '\r')
        s->p++;
    return s->p > start ? 0 : -1;
}

/* 1 when the raw key text equals name once unescaped. */
static int key_is(const char *raw, size_t len, int escaped, const char *name)
{
    size_t nl = strlen(name);
    if (!escaped)
        return len == nl && memcmp(raw, name, nl) == 0;
    char tmp[256];
    if (len > sizeof tmp)
        return 0;
    long k = unescape(raw, len, tmp);
    return k == (long)nl && memcmp(tmp, name, nl) == 0;
}

int jsonpeek_string(struct arena *a, const char *p, size_t n, const char *name,
                    const char **out, size_t *out_len)
{
    struct peek s = {p, p + n};
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return 0;
    s.p++;
    for (;;) {
        skip_ws(&s);
        if (s.p >= s.end || *s.p != '"')
            return 0;  /* '}' (no such member) or malformed */
        const char *key;
        size_t klen;
        int kesc;
        if (scan_string(&s, &key, &klen, &kesc) < 0)
            return 0;
        skip_ws(&s);
        if (s.p >= s.end || *s.p != ':')
            return 0;
        s.p++;
        skip_ws(&s);
        if (key_is(key, klen, kesc, name)) {
            if (s.p >= s.end || *s.p != '"')
                return 0;
            const char *v;
            size_t vlen;
            int vesc;
            if (scan_string(&s, &v, &vlen, &vesc) < 0)
                return 0;
            if (!vesc) {
                *out = v;
                *out_len = vlen;
                return 1;
            }
            char *buf = arena_alloc(a, vlen + 1);
            long k = unescape(v, vlen, buf);
            if (k < 0)
                return 0;
            buf[k] = '\0';
            *out = buf;
            *out_len = (size_t)k;
            return 1;
        }
        if (skip_value(&s) < 0)
            return 0;
        skip_ws(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            continue;
        }
        return 0;
    }
}
