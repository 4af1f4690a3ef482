/* token.c - continuation token codec (see token.h). */
#include "codec/token.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "codec/edm.h"

char *token_encode(struct arena *a, const char *key, size_t len)
{
    struct buf b;
    buf_init(&b);
    edm_base64_encode(&b, (const uint8_t *)key, len);
    for (size_t i = 0; i < b.len; i++)
        if (b.data[i] == '=')
            b.data[i] = '-';
    char *out = arena_sprintf(a, "1!%zu!%s", b.len, b.len ? b.data : "");
    buf_free(&b);
    return out;
}

int token_decode(struct arena *a, const char *text, size_t n, const char **key, size_t *len)
{
    if (n == 0)
        return -1;
    if (n < 2 || text[0] != '1' || text[1] != '!') {
        *key = arena_strndup(a, text, n);
        *len = n;
        return 0;
    }
    const char *p = text + 2, *end = text + n;
    size_t count = 0;
    if (p >= end || *p < '0' || *p > '9')
        return -1;
    while (p < end && *p >= '0' && *p <= '9') {
        count = count * 10 + (size_t)(*p - '0');
        if (count > n)
            return -1;
        p++;
    }
    if (p >= end || *p != '!')
        return -1;
    p++;
    if ((size_t)(end - p) != count)
        return -1;
    char *b64 = arena_strndup(a, p, count);
    for (size_t i = 0; i < count; i++)
        if (b64[i] == '-')
            b64[i] = '=';
    uint8_t *raw;
    size_t rl;
    if (edm_base64_decode(a, b64, count, &raw, &rl) != 0)
        return -1;
    if (utf8_check((const char *)raw, rl) != 0)
        return -1;
    *key = arena_strndup(a, (const char *)raw, rl);
    *len = rl;
    return 0;
}
