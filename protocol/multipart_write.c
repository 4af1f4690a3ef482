/* multipart_write.c - $batch response serialiser (see multipart.h, SPEC 8.6,
 * 8.7). Produces the service's exact bytes: CRLF line ends, each part
 * "Content-Type: application/http" + "Content-Transfer-Encoding: binary",
 * blank line, status line, headers, blank line, body, CRLF, next delimiter. */
#include "protocol/multipart.h"

#include <stdio.h>
#include <string.h>

#include "protocol/ctlscan.h"

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
    if (part->content_id)
        put_header(out, "Content-ID", part->content_id, strlen(part->content_id));
    for (size_t i = 0; i < part->nheaders; i++)
        put_header(out, part->headers[i].name, part->headers[i].value,
                   part->headers[i].value_len);
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
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
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
