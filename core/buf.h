/* buf.h - growable byte buffer with one owner (whoever called buf_init).
 *
 * Used for response bodies, encoded keys and entity values. The data is
 * always NUL-terminated (not counted in len) so text can be used directly. */
#ifndef TABLED_BUF_H
#define TABLED_BUF_H
#include <stddef.h>
#include <stdint.h>

struct buf {
    char *data;
    size_t len;
    size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);                 /* len = 0, keeps memory */
void buf_reserve(struct buf *b, size_t extra); /* room for extra more bytes */
void buf_append(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, char c);
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
