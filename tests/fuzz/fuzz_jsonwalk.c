/* fuzz_jsonwalk.c - libFuzzer target for core/jsonwalk.c, the parse every
 * JSON body goes through (also bearer token claims), inputs up to the whole
 * body limit. Oracle: yajl's own streaming parser measuring the deepest
 * level, stopped only far past the limit (REF_STOP: yajl grows its nesting
 * stack a little at a time, and under ASan each growth is a copy, so a
 * million levels took it a fifth of a second an input). jsonwalk must accept exactly the well-formed texts no deeper than
 * its limit, refuse as JSONWALK_TOO_DEEP those that go deeper before any
 * syntax error, deliver no level past the limit, and with JSONWALK_NO_NUL
 * refuse exactly those holding a NUL in a string or name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "core/jsonwalk.h"

#define LIMIT 16   /* small, so that the fuzzer reaches it often */
#define REF_STOP 1024

struct meter {
    int depth, max;
    int nul;   /* a string or name held a NUL */
};

static int m_open(void *c)
{
    struct meter *m = c;
    if (++m->depth > m->max)
        m->max = m->depth;
    return m->depth <= REF_STOP;
}

static int m_close(void *c)
{
    ((struct meter *)c)->depth--;
    return 1;
}

static int m_str(void *c, const unsigned char *s, size_t n)
{
    if (memchr(s, '\0', n))
        ((struct meter *)c)->nul = 1;
    return 1;
}

static int m_num(void *c, const char *s, size_t n)
{
    (void)c, (void)s, (void)n;
    return 1;
}

static const yajl_callbacks meter_cb = {
    NULL, NULL, NULL, NULL, m_num, m_str, m_open, m_str, m_close, m_open, m_close,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    /* the oracle: yajl alone, stopped only past REF_STOP */
    struct meter ref = {0, 0, 0};
    yajl_handle h = yajl_alloc(&meter_cb, NULL, &ref);
    yajl_status st = yajl_parse(h, (const unsigned char *)body, size);
    if (st == yajl_status_ok)
        st = yajl_complete_parse(h);
    yajl_free(h);
    /* the levels ref saw came before any syntax error it found */
    int ref_syntax = st != yajl_status_ok && st != yajl_status_client_canceled;

    struct meter got = {0, 0, 0};
    char err[128] = "";
    int rc = jsonwalk_parse(&meter_cb, &got, body, size, LIMIT, 0, err, sizeof err);
    if (got.max > LIMIT)
        abort();   /* a level past the limit reached the callbacks */
    if (ref.max > LIMIT ? rc != JSONWALK_TOO_DEEP
                        : rc != (ref_syntax ? JSONWALK_SYNTAX : JSONWALK_OK))
        abort();   /* a different verdict */
    if (rc != JSONWALK_OK && rc != JSONWALK_CANCELED && !err[0])
        abort();   /* every refusal has a message */
    int nrc = jsonwalk_parse(NULL, NULL, body, size, LIMIT, JSONWALK_NO_NUL, NULL, 0);
    if (rc == JSONWALK_OK && (nrc == JSONWALK_OK) != !ref.nul)
        abort();
    if (rc == JSONWALK_OK && ref.nul && nrc != JSONWALK_NUL)
        abort();
    free(body);
    return 0;
}
