/* jsontrace.h - yajl callbacks that log every event as a line of text,
 * and runners for yajl (configured as entity_json.c configures it) and for
 * jsonflat over the same bytes: the two logs must agree whenever jsonflat
 * accepts a body. Shared by tests/unit/test_jsonflat.c and the fuzz target
 * tests/fuzz/fuzz_jsonflat.c. */
#ifndef TABLED_TESTS_JSONTRACE_H
#define TABLED_TESTS_JSONTRACE_H

#include <string.h>
#include <yajl/yajl_parse.h>

#include "codec/jsonflat.h"

/* The callbacks as a text log: one line per event. */
struct trace {
    char buf[1 << 16];
    size_t len;
    int overflow;
};

static void put(struct trace *t, const char *tag, const void *s, size_t n)
{
    size_t tl = strlen(tag);
    if (t->len + tl + n + 2 > sizeof t->buf) {
        t->overflow = 1;
        return;
    }
    memcpy(t->buf + t->len, tag, tl);
    t->len += tl;
    if (n)
        memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len++] = '\n';
    t->buf[t->len] = 0;
}

static int t_null(void *c) { put(c, "null", NULL, 0); return 1; }
static int t_bool(void *c, int b) { put(c, b ? "true" : "false", NULL, 0); return 1; }
static int t_num(void *c, const char *s, size_t n) { put(c, "num:", s, n); return 1; }
static int t_str(void *c, const unsigned char *s, size_t n) { put(c, "str:", s, n); return 1; }
static int t_smap(void *c) { put(c, "{", NULL, 0); return 1; }
static int t_key(void *c, const unsigned char *s, size_t n) { put(c, "key:", s, n); return 1; }
static int t_emap(void *c) { put(c, "}", NULL, 0); return 1; }
static int t_sarr(void *c) { put(c, "[", NULL, 0); return 1; }
static int t_earr(void *c) { put(c, "]", NULL, 0); return 1; }

static const yajl_callbacks cbs = {t_null, t_bool, NULL, NULL, t_num, t_str,
                                   t_smap, t_key, t_emap, t_sarr, t_earr};

/* yajl over s as entity_json.c runs it: 1 when it accepts. */
static int run_yajl(const char *s, size_t n, struct trace *t)
{
    memset(t, 0, sizeof *t);
    yajl_handle h = yajl_alloc(&cbs, NULL, t);
    yajl_config(h, yajl_dont_validate_strings, 1);
    yajl_status st = yajl_parse(h, (const unsigned char *)s, n);
    if (st == yajl_status_ok)
        st = yajl_complete_parse(h);
    yajl_free(h);
    return st == yajl_status_ok;
}

static int run_flat(const char *s, size_t n, struct trace *t)
{
    memset(t, 0, sizeof *t);
    return jsonflat_parse(&cbs, t, s, n);
}

#endif
