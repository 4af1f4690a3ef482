/* multipart_write.c - $batch response serialiser (see multipart.h, doc/protocol.md, Batch responses;
 * Query in a batch). Produces the service's exact bytes: CRLF line ends, each part
 * "Content-Type: application/http" + "Content-Transfer-Encoding: binary",
 * blank line, status line, headers, blank line, body, CRLF, next delimiter. */
#include "codec/multipart.h"

#include <stdio.h>
#include <string.h>

#include "core/coding.h"
#include "codec/ctlscan.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Turns control bytes other than tab in p[0..n) into spaces, in place. */
static void blank_ctl(char *p, size_t n)
{
    size_t i = 0;
    while ((i += ctl_span(p + i, n - i)) < n)
        p[i++] = ' ';
}

/* Appends s with control bytes made spaces, so it cannot end a line. */
static void put_clean(struct buf *out, const char *s)
{
    size_t start = out->len;
    buf_puts(out, s);
    blank_ctl(out->data + start, out->len - start);
}

/* Appends "NAME: VALUE" CRLF, control bytes in name and value made
 * spaces so the header can never end early: one reservation, two copies
 * and one scan. */
static void put_header(struct buf *out, const char *name, const char *value, size_t vl)
{
    size_t nl = strlen(name);
    buf_reserve(out, nl + vl + 4);
    char *d = out->data + out->len;
    memcpy(d, name, nl);
    memcpy(d + nl, ": ", 2);
    memcpy(d + nl + 2, value, vl);
    blank_ctl(d, nl + 2 + vl);
    memcpy(d + nl + 2 + vl, "\r\n", 2);
    out->len += nl + vl + 4;
    out->data[out->len] = '\0';
}

/* Appends "NAME: VALUE" CRLF as they are (see headers_clean). */
static void put_header_raw(struct buf *out, const char *name, const char *value, size_t vl)
{
    size_t nl = strlen(name);
    buf_reserve(out, nl + vl + 4);
    char *d = out->data + out->len;
    memcpy(d, name, nl);
    memcpy(d + nl, ": ", 2);
    memcpy(d + nl + 2, value, vl);
    memcpy(d + nl + 2 + vl, "\r\n", 2);
    out->len += nl + vl + 4;
    out->data[out->len] = '\0';
}

/* Whether n header lines written raw at p[0..len) hold no control byte but
 * their own CR LF: exactly 2n control bytes in all (a CR, LF or other
 * control byte inside a name or value would add to them). One pass over
 * the block instead of one scan per header. */
static int headers_clean(const char *p, size_t len, size_t n)
{
    size_t ctl = 0, i = 0;
#ifdef __SSE2__
    const __m128i tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
    const __m128i ctl_max = _mm_set1_epi8(0x1f);
    /* per-lane counts (a hit is -1: subtracting adds one), summed every 255
     * blocks before a lane could wrap */
    const __m128i zero = _mm_setzero_si128();
    while (len - i >= 16) {
        __m128i acc = zero;
        for (int k = 0; k < 255 && len - i >= 16; k++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
            __m128i low = _mm_andnot_si128(_mm_cmpeq_epi8(v, tab),
                                           _mm_cmpeq_epi8(_mm_min_epu8(v, ctl_max), v));
            acc = _mm_sub_epi8(acc, _mm_or_si128(low, _mm_cmpeq_epi8(v, del)));
        }
        __m128i sum = _mm_sad_epu8(acc, zero);
        ctl += (size_t)_mm_cvtsi128_si32(sum) + (size_t)_mm_extract_epi16(sum, 4);
    }
#endif
    for (; i < len; i++)
        ctl += ctl_byte((unsigned char)p[i]);
    return ctl == 2 * n;
}

/* Appends one application/http part (without its delimiter line). */
static void put_part(struct buf *out, const struct multipart_part *part)
{
    int status = part->status;
    const char *reason = part->reason ? part->reason : http_reason(status);
    buf_puts(out, "Content-Type: application/http\r\n"
                  "Content-Transfer-Encoding: binary\r\n"
                  "\r\n");
    char line[] = "HTTP/1.1 000 ";
    if (status < 0 || status > 999)
        status = 500;
    line[9] = (char)('0' + status / 100);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    buf_append(out, line, sizeof line - 1);
    put_clean(out, reason);
    buf_puts(out, "\r\n");
    /* Headers are written as they are and checked as one block; only when
     * a control byte is found are they written again, blanked one by one. */
    size_t start = out->len;
    if (part->content_id)
        put_header_raw(out, "Content-ID", part->content_id, strlen(part->content_id));
    for (size_t i = 0; i < part->nheaders; i++)
        put_header_raw(out, part->headers[i].name, part->headers[i].value,
                       part->headers[i].value_len);
    if (!headers_clean(out->data + start, out->len - start,
                       part->nheaders + (part->content_id != NULL))) {
        out->len = start;
        if (part->content_id)
            put_header(out, "Content-ID", part->content_id, strlen(part->content_id));
        for (size_t i = 0; i < part->nheaders; i++)
            put_header(out, part->headers[i].name, part->headers[i].value,
                       part->headers[i].value_len);
    }
    buf_puts(out, "\r\n");
    if (part->body && part->body_len)
        buf_append(out, part->body, part->body_len);
    buf_puts(out, "\r\n");
}

void multipart_guid(char out[37], const unsigned char rnd[16])
{
    unsigned char b[16];
    memcpy(b, rnd, 16);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);  /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);  /* RFC 4122 variant */
    coding_uuid_format(b, out);
}

char *multipart_content_type(struct arena *a, const char *batch_guid)
{
    return arena_sprintf(a, "multipart/mixed; boundary=batchresponse_%s", batch_guid);
}

void multipart_write_changeset(struct buf *out, const char *batch_guid,
                               const char *changeset_guid,
                               const struct multipart_part *parts, size_t n)
{
    buf_printf(out,
               "--batchresponse_%s\r\n"
               "Content-Type: multipart/mixed; boundary=changesetresponse_%s\r\n"
               "\r\n",
               batch_guid, changeset_guid);
    for (size_t i = 0; i < n; i++) {
        buf_puts(out, "--changesetresponse_");
        buf_puts(out, changeset_guid);
        buf_puts(out, "\r\n");
        put_part(out, &parts[i]);
    }
    buf_printf(out, "--changesetresponse_%s--\r\n--batchresponse_%s--\r\n", changeset_guid,
               batch_guid);
}

void multipart_write_query(struct buf *out, const char *batch_guid,
                           const struct multipart_part *part)
{
    buf_printf(out, "--batchresponse_%s\r\n", batch_guid);
    put_part(out, part);
    buf_printf(out, "--batchresponse_%s--\r\n", batch_guid);
}

void multipart_part_from_response(const struct response *resp, const char *content_id,
                                  struct multipart_part *part)
{
    memset(part, 0, sizeof *part);
    part->status = resp->status;
    part->reason = resp->reason;
    part->content_id = content_id;
    part->headers = resp->headers;
    part->nheaders = resp->nheaders;
    part->body = resp->body.data;
    part->body_len = resp->body.len;
}
