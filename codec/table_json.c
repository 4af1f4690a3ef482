/* table_json.c - the TableName of a Create Table body (see table_json.h). */
#include "codec/table_json.h"

#include <string.h>
#include <yajl/yajl_parse.h>

#include "core/jsonwalk.h"

/* What a Create Table body's walk has found so far. */
struct name_walk {
    struct arena *a;
    int depth;
    int top_object;   /* the top-level value is an object */
    int in_name;      /* the next top-level value is TableName's */
    int seen;         /* TableName's value came (the first one decides) */
    const char *name; /* a string value, copied with its length */
    size_t n;
};

/* Any scalar, object or array: only TableName's value at depth 1 matters. */
static void name_value(struct name_walk *w, const unsigned char *s, size_t n, int is_string)
{
    if (w->depth == 1 && w->in_name && !w->seen) {
        w->seen = 1;
        if (is_string) {
            w->name = arena_strndup(w->a, (const char *)s, n);
            w->n = n;
        }
    }
    if (w->depth == 1)
        w->in_name = 0;
}

/* The yajl callbacks below feed name_value and follow the depth. */
static int nw_null(void *ctx)
{
    name_value(ctx, NULL, 0, 0);
    return 1;
}

static int nw_boolean(void *ctx, int b)
{
    (void)b;
    name_value(ctx, NULL, 0, 0);
    return 1;
}

static int nw_number(void *ctx, const char *s, size_t n)
{
    (void)s, (void)n;
    name_value(ctx, NULL, 0, 0);
    return 1;
}

static int nw_string(void *ctx, const unsigned char *s, size_t n)
{
    name_value(ctx, s, n, 1);
    return 1;
}

static int nw_map_key(void *ctx, const unsigned char *s, size_t n)
{
    struct name_walk *w = ctx;
    if (w->depth == 1)
        w->in_name = n == 9 && memcmp(s, "TableName", 9) == 0;
    return 1;
}

static int nw_start(void *ctx, int is_map)
{
    struct name_walk *w = ctx;
    if (w->depth == 0)
        w->top_object = is_map;
    else
        name_value(w, NULL, 0, 0);
    w->depth++;
    return 1;
}

static int nw_start_map(void *ctx)
{
    return nw_start(ctx, 1);
}

static int nw_start_array(void *ctx)
{
    return nw_start(ctx, 0);
}

static int nw_end(void *ctx)
{
    struct name_walk *w = ctx;
    w->depth--;
    return 1;
}

static const yajl_callbacks name_callbacks = {
    nw_null, nw_boolean, NULL, NULL, nw_number, nw_string,
    nw_start_map, nw_map_key, nw_end, nw_start_array, nw_end,
};

enum terr table_json_name(struct arena *a, const char *body, size_t len, const char **name,
                          size_t *n)
{
    if (!body || len == 0)
        return TERR_InvalidInput;
    struct name_walk w = {.a = a};
    if (jsonwalk_parse(&name_callbacks, &w, body, len, JSONWALK_MAX_DEPTH, 0, NULL, 0) !=
        JSONWALK_OK)
        return TERR_InvalidInput;
    if (!w.top_object || !w.name || w.n == 0)
        return TERR_InvalidInput;
    *name = w.name;
    *n = w.n;
    return TERR_NONE;
}
