/* fuzz_multipart.c - libFuzzer target for the $batch codec.
 *
 * Input: the first line is the request Content-Type, the rest the body.
 * The body is copied into an exactly sized heap block (no NUL after it) so
 * AddressSanitizer catches any read past body_len. A parsed batch is checked
 * for internal consistency, turned into sub-requests, and answered with a
 * fake response of every shape the serialiser produces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/multipart.h"

/* Aborts (a finding) when a parse result breaks the header's promises. */
static void check_batch(const struct multipart_batch *b, const char *body, size_t len)
{
    if (!b->boundary || !b->ops || b->nops == 0)
        abort();
    if (b->kind == MULTIPART_QUERY && (b->nops != 1 || b->ops[0].method != HTTP_M_GET))
        abort();
    if (b->kind == MULTIPART_CHANGESET && !b->changeset_boundary)
        abort();
    for (size_t i = 0; i < b->nops; i++) {
        const struct multipart_op *op = &b->ops[i];
        if (op->index != i || !op->method_name || !op->url || !op->host || !op->path ||
            !op->query || strlen(op->path) != op->path_len || strlen(op->query) != op->query_len)
            abort();
        if (op->body && (op->body < body || op->body_len == 0 || op->body_len > len ||
                         op->body + op->body_len > body + len))
            abort();
        if (!op->body && op->body_len)
            abort();
        if (op->in_changeset != (b->kind == MULTIPART_CHANGESET))
            abort();
        for (size_t h = 0; h < op->nheaders; h++)
            if (strlen(op->headers[h].value) != op->headers[h].value_len ||
                !op->headers[h].name[0])
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct arena *a;
    if (!a)
        a = arena_new(0);
    const uint8_t *nl = memchr(data, '\n', size);
    size_t ctlen = nl ? (size_t)(nl - data) : size;
    char *ct = malloc(ctlen + 1);
    memcpy(ct, data, ctlen);
    ct[ctlen] = '\0';
    size_t blen = nl ? size - ctlen - 1 : 0;
    char *body = malloc(blen ? blen : 1);
    if (blen)
        memcpy(body, nl + 1, blen);

    struct multipart_batch b;
    const char *why = NULL;
    int rc = multipart_parse(a, ct, body, blen, &b, &why);
    if (rc == MULTIPART_ERR_MALFORMED) {
        if (!why || b.ops || b.nops)
            abort();
    } else if (rc == MULTIPART_OK || rc == MULTIPART_ERR_TOO_MANY) {
        check_batch(&b, body, blen);
        if ((rc == MULTIPART_ERR_TOO_MANY) != (b.nops > MULTIPART_MAX_OPS))
            abort();
        struct multipart_part *parts = arena_calloc(a, b.nops * sizeof *parts);
        for (size_t i = 0; i < b.nops; i++) {
            struct request req;
            multipart_op_to_request(a, &b.ops[i], NULL, &req);
            /* the body is the op's slice of the batch body, not a copy */
            if (req.body != b.ops[i].body || req.body_len != b.ops[i].body_len)
                abort();
            /* echo the request's headers and body back as a sub-response */
            parts[i].status = i % 2 ? 204 : 201;
            parts[i].content_id = b.ops[i].content_id;
            parts[i].headers = b.ops[i].headers;
            parts[i].nheaders = b.ops[i].nheaders;
            parts[i].body = b.ops[i].body;
            parts[i].body_len = b.ops[i].body_len;
        }
        char g1[37], g2[37];
        unsigned char rnd[16];
        memset(rnd, (int)(size & 0xff), sizeof rnd);
        multipart_guid(g1, rnd);
        rnd[0] ^= 1;
        multipart_guid(g2, rnd);
        struct buf out;
        buf_init(&out);
        if (b.kind == MULTIPART_QUERY)
            multipart_write_query(&out, g1, &parts[0]);
        else
            multipart_write_changeset(&out, g1, g2, parts, b.nops);
        char *tail = arena_sprintf(a, "--batchresponse_%s--\r\n", g1);
        size_t tl = strlen(tail);
        if (out.len < tl || memcmp(out.data + out.len - tl, tail, tl) != 0)
            abort();
        multipart_content_type(a, g1);
        buf_free(&out);
    } else {
        abort();
    }
    free(ct);
    free(body);
    arena_reset(a);
    return 0;
}
