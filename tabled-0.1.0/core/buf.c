/* buf.c - growable byte buffer (see buf.h). */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Grows geometrically (from 256 bytes); aborts on OOM like the arena does. */
void buf_grow(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        fputs("tabled: out of memory\n", stderr);
        abort();
    }
    b->data = p;
    b->cap = cap;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        buf_append(b, tmp, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_put_u8(struct buf *b, uint8_t v)
{
    buf_putc(b, (char)v);
}

void buf_put_be16(struct buf *b, uint16_t v)
{
    unsigned char t[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    buf_append(b, t, 2);
}

void buf_put_be32(struct buf *b, uint32_t v)
{
    unsigned char t[4];
    for (int i = 0; i < 4; i++)
        t[i] = (unsigned char)(v >> (24 - 8 * i));
    buf_append(b, t, 4);
}

void buf_put_be64(struct buf *b, uint64_t v)
{
    unsigned char t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (unsigned char)(v >> (56 - 8 * i));
    buf_append(b, t, 8);
}

void buf_put_varint(struct buf *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;
    do {
        unsigned char c = v & 0x7f;
        v >>= 7;
        if (v)
            c |= 0x80;
        t[n++] = c;
    } while (v);
    buf_append(b, t, n);
}
