/* response.c - building a struct response and reading request headers. */
#include "core/http.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar: the characters of header names and methods (a table:
 * every byte of every header name, top-level and in $batch parts, is
 * looked up). */
const unsigned char http_tchar_map[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1,
    ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,
    ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
    ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
    ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
    ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1,
    ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
    ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Case-insensitive header name match. Most names differ in their first
 * byte already: compare that (letters folded by clearing bit 0x20, a test
 * that never rejects an equal pair) before calling strcasecmp. */
static int header_name_eq(const char *a, const char *b)
{
    return ((a[0] ^ b[0]) & ~0x20) == 0 && strcasecmp(a, b) == 0;
}

const struct http_header *request_header_find(const struct request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (header_name_eq(req->headers[i].name, name))
            return &req->headers[i];
    return NULL;
}

const char *request_header(const struct request *req, const char *name)
{
    const struct http_header *h = request_header_find(req, name);
    return h ? h->value : NULL;
}

size_t request_header_count(const struct request *req, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < req->nheaders; i++)
        if (header_name_eq(req->headers[i].name, name))
            n++;
    return n;
}

void response_init(struct response *resp, struct arena *arena)
{
    memset(resp, 0, sizeof *resp);
    resp->arena = arena;
    buf_init(&resp->body);
}

void response_free(struct response *resp)
{
    buf_free(&resp->body);
    resp->headers = NULL;
    resp->nheaders = resp->cap = 0;
}

/* Appends a header slot to resp (arena array, grown by doubling). */
static struct http_header *new_header(struct response *resp)
{
    if (resp->nheaders == resp->cap) {
        size_t cap = resp->cap ? resp->cap * 2 : 16;
        struct http_header *h = arena_alloc(resp->arena, cap * sizeof *h);
        if (resp->nheaders)
            memcpy(h, resp->headers, resp->nheaders * sizeof *h);
        resp->headers = h;
        resp->cap = cap;
    }
    return &resp->headers[resp->nheaders++];
}

void response_header(struct response *resp, const char *name, const char *value)
{
    struct http_header *h = new_header(resp);
    h->name = arena_strdup(resp->arena, name);
    h->value_len = strlen(value);
    h->value = arena_strndup(resp->arena, value, h->value_len);
}

void response_header_ref(struct response *resp, const char *name, const char *value,
                         size_t value_len)
{
    struct http_header *h = new_header(resp);
    h->name = name;
    h->value = value;
    h->value_len = value_len;
}

void response_headerf(struct response *resp, const char *name, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        response_header(resp, name, tmp);
        return;
    }
    char *big = arena_alloc(resp->arena, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    response_header(resp, name, big);
}

const struct http_header *response_find_header(const struct response *resp, const char *name)
{
    for (size_t i = 0; i < resp->nheaders; i++)
        if (header_name_eq(resp->headers[i].name, name))
            return &resp->headers[i];
    return NULL;
}

const char *response_get_header(const struct response *resp, const char *name)
{
    const struct http_header *h = response_find_header(resp, name);
    return h ? h->value : NULL;
}

const char *http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 416: return "Requested Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}
