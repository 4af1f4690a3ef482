/* buf.h - growable byte buffer with one owner (whoever called buf_init).
 *
 * Used for response bodies, encoded keys and entity values. The data is
 * always NUL-terminated (not counted in len) so text can be used directly. */
#ifndef TABLED_BUF_H
#define TABLED_BUF_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf {
    char *data;
    size_t len;
    size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);                 /* len = 0, keeps memory */
/* Grows the buffer to hold extra more bytes (and the NUL); aborts when out
 * of memory. buf_reserve's slow path. */
void buf_grow(struct buf *b, size_t extra);

/* The appends below are inline: response writers and the entity encoder
 * make dozens per entity, mostly of a few bytes, and a literal's length is
 * then known at compile time. */

/* Makes room for extra more bytes. */
static inline void buf_reserve(struct buf *b, size_t extra)
{
    if (b->len + extra + 1 > b->cap)
        buf_grow(b, extra);
}

/* Appends n bytes from p. */
static inline void buf_append(struct buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Appends the string s (without its NUL). */
static inline void buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

/* Appends one byte. */
static inline void buf_putc(struct buf *b, char c)
{
    buf_reserve(b, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}
void buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Fixed-width big-endian integers, for binary encodings. */
void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_be16(struct buf *b, uint16_t v);
void buf_put_be32(struct buf *b, uint32_t v);
void buf_put_be64(struct buf *b, uint64_t v);
/* LEB128 unsigned varint. */
void buf_put_varint(struct buf *b, uint64_t v);

#endif
