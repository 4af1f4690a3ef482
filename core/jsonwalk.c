/* jsonwalk.c - yajl's callback parser with a nesting limit (see jsonwalk.h). */
#include "core/jsonwalk.h"

#include <stdio.h>
#include <string.h>

/* The state between yajl and the caller's callbacks. */
struct walk {
    const yajl_callbacks *cb;
    void *ctx;
    int depth, max_depth;
    unsigned flags;
    int status;   /* why a callback stopped yajl, or JSONWALK_OK */
};

/* Passes a callback's verdict on: 0 stops yajl as a cancel by the caller. */
static int pass(struct walk *w, int keep)
{
    if (!keep)
        w->status = JSONWALK_CANCELED;
    return keep;
}

static int w_null(void *c)
{
    struct walk *w = c;
    return !w->cb || !w->cb->yajl_null || pass(w, w->cb->yajl_null(w->ctx));
}

static int w_boolean(void *c, int b)
{
    struct walk *w = c;
    return !w->cb || !w->cb->yajl_boolean || pass(w, w->cb->yajl_boolean(w->ctx, b));
}

static int w_number(void *c, const char *s, size_t n)
{
    struct walk *w = c;
    return !w->cb || !w->cb->yajl_number || pass(w, w->cb->yajl_number(w->ctx, s, n));
}

/* 0 (and the status) when a string or name may not hold a NUL and does. */
static int nul_ok(struct walk *w, const unsigned char *s, size_t n)
{
    if ((w->flags & JSONWALK_NO_NUL) && memchr(s, '\0', n)) {
        w->status = JSONWALK_NUL;
        return 0;
    }
    return 1;
}

static int w_string(void *c, const unsigned char *s, size_t n)
{
    struct walk *w = c;
    if (!nul_ok(w, s, n))
        return 0;
    return !w->cb || !w->cb->yajl_string || pass(w, w->cb->yajl_string(w->ctx, s, n));
}

static int w_map_key(void *c, const unsigned char *s, size_t n)
{
    struct walk *w = c;
    if (!nul_ok(w, s, n))
        return 0;
    return !w->cb || !w->cb->yajl_map_key || pass(w, w->cb->yajl_map_key(w->ctx, s, n));
}

/* An object or array opens one level deeper: refused past the limit
 * before the caller hears of it. */
static int open_level(struct walk *w)
{
    if (w->depth >= w->max_depth) {
        w->status = JSONWALK_TOO_DEEP;
        return 0;
    }
    w->depth++;
    return 1;
}

static int w_start_map(void *c)
{
    struct walk *w = c;
    if (!open_level(w))
        return 0;
    return !w->cb || !w->cb->yajl_start_map || pass(w, w->cb->yajl_start_map(w->ctx));
}

static int w_end_map(void *c)
{
    struct walk *w = c;
    w->depth--;
    return !w->cb || !w->cb->yajl_end_map || pass(w, w->cb->yajl_end_map(w->ctx));
}

static int w_start_array(void *c)
{
    struct walk *w = c;
    if (!open_level(w))
        return 0;
    return !w->cb || !w->cb->yajl_start_array || pass(w, w->cb->yajl_start_array(w->ctx));
}

static int w_end_array(void *c)
{
    struct walk *w = c;
    w->depth--;
    return !w->cb || !w->cb->yajl_end_array || pass(w, w->cb->yajl_end_array(w->ctx));
}

static const yajl_callbacks walk_callbacks = {
    w_null, w_boolean, NULL, NULL, w_number, w_string,
    w_start_map, w_map_key, w_end_map, w_start_array, w_end_array,
};

/* Copies yajl's message for a syntax error (its first line) into err. */
static void syntax_message(yajl_handle h, const char *p, size_t n, char *err, size_t errlen)
{
    unsigned char *m = yajl_get_error(h, 0, (const unsigned char *)p, n);
    const char *s = m ? (const char *)m : "malformed JSON";
    snprintf(err, errlen, "%.*s", (int)strcspn(s, "\r\n"), s);
    if (m)
        yajl_free_error(h, m);
}

int jsonwalk_parse(const yajl_callbacks *cb, void *ctx, const char *p, size_t n, int max_depth,
                   unsigned flags, char *err, size_t errlen)
{
    struct walk w = {cb, ctx, 0, max_depth, flags, JSONWALK_OK};
    yajl_handle h = yajl_alloc(&walk_callbacks, NULL, &w);
    if (!h) {
        if (err)
            snprintf(err, errlen, "out of memory");
        return JSONWALK_NOMEM;
    }
    if (flags & JSONWALK_RAW_STRINGS)
        yajl_config(h, yajl_dont_validate_strings, 1);
    yajl_status st = yajl_parse(h, (const unsigned char *)p, n);
    if (st == yajl_status_ok)
        st = yajl_complete_parse(h);
    int rc = JSONWALK_OK;
    if (st == yajl_status_client_canceled)
        rc = w.status != JSONWALK_OK ? w.status : JSONWALK_CANCELED;
    else if (st != yajl_status_ok)
        rc = JSONWALK_SYNTAX;
    if (err && rc == JSONWALK_SYNTAX)
        syntax_message(h, p, n, err, errlen);
    else if (err && rc == JSONWALK_TOO_DEEP)
        snprintf(err, errlen, "nested deeper than %d levels", max_depth);
    else if (err && rc == JSONWALK_NUL)
        snprintf(err, errlen, "a string or member name holds U+0000");
    yajl_free(h);
    return rc;
}
