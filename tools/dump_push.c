/* dump_push.c - `tabled import --admin URL FILE`: a checked export file
 * sent to a running server's admin listener (POST /import, answered by
 * protocol/ops/ops_import.c), so that a server on any backend (an in-memory
 * one in a CI job too) can be seeded without being stopped.
 *
 * The file goes in pieces of whole lines, about DUMP_PUSH_PIECE bytes
 * each (a longer line goes alone), each piece beginning with the file's
 * header line, one request (and connection) per piece: the server writes
 * a piece and makes it durable before it answers, and serves its other
 * clients between pieces. A piece refused with 503 (another import runs,
 * or the server's store is not open yet) is sent again after a pause, for
 * at most DUMP_PUSH_RETRY_S seconds. Any other refusal stops the import,
 * naming the file's line: the pieces before it are imported (importing
 * again is idempotent). */
#include "tools/dump_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "core/buf.h"
#include "core/jsonwalk.h"
#include "tools/httpc.h"

/* Bytes of lines per request (a piece is written in one turn of the
 * server's loop on most stores: small enough not to hold its other
 * clients for long, large enough that the request costs little). */
#define DUMP_PUSH_PIECE (512u << 10)
/* How long a connect or a read may wait. */
#define DUMP_PUSH_TIMEOUT_S 300
/* How long 503 answers are waited out, in all. */
#define DUMP_PUSH_RETRY_S 120
/* Longest answer read. */
#define DUMP_PUSH_ANSWER_MAX (64u << 10)

/* The number at key of the JSON object v, or 0. */
static unsigned long long json_count(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val n = yajl_tree_get(v, path, yajl_t_number);
    return n && YAJL_IS_INTEGER(n) && YAJL_GET_INTEGER(n) > 0
               ? (unsigned long long)YAJL_GET_INTEGER(n) : 0;
}

/* Reads the server's JSON answer (counts, unserved accounts, error and
 * its line of the piece). NULL when it is not such JSON. */
static yajl_val push_parse(const char *body)
{
    if (jsonwalk_parse(NULL, NULL, body, strlen(body), JSONWALK_MAX_DEPTH, JSONWALK_NO_NUL,
                       NULL, 0) != JSONWALK_OK)
        return NULL;
    yajl_val v = yajl_tree_parse(body, NULL, 0);
    if (v && !YAJL_IS_OBJECT(v)) {
        yajl_tree_free(v);
        return NULL;
    }
    return v;
}

/* Remembers the unserved accounts the server named (at most 8). */
static void push_unserved(yajl_val v, char names[8][64], size_t *n)
{
    const char *path[] = {"unserved", NULL};
    yajl_val a = yajl_tree_get(v, path, yajl_t_array);
    for (size_t i = 0; a && i < a->u.array.len; i++) {
        const char *s = YAJL_GET_STRING(a->u.array.values[i]);
        if (!s)
            continue;
        size_t j = 0;
        while (j < *n && strcmp(names[j], s) != 0)
            j++;
        if (j == *n && *n < 8)
            snprintf(names[(*n)++], 64, "%s", s);
    }
}

/* Sends one piece (lines first..last of the file), waiting out 503s.
 * 0, or -1 with a message naming the file's line. */
static int push_piece(struct dump *d, const struct httpc_url *u, const struct buf *piece,
                      unsigned long first, unsigned long last, char unserved[8][64],
                      size_t *nunserved, char *err, size_t errlen)
{
    struct httpc_req req = {.method = "POST", .target = "/import", .token = d->admin_token,
                            .content_type = "application/x-ndjson", .body = piece->data,
                            .body_len = piece->len, .timeout_s = DUMP_PUSH_TIMEOUT_S,
                            .max = DUMP_PUSH_ANSWER_MAX};
    struct httpc_answer ans;
    time_t give_up = time(NULL) + DUMP_PUSH_RETRY_S;
    for (;;) {
        if (httpc_do(u, &req, &ans, err, errlen) != 0) {
            buf_free(&ans.body);
            return -1;
        }
        if (ans.status != 503 || time(NULL) >= give_up || ans.table)
            break;
        buf_free(&ans.body);
        int wait = atoi(ans.retry_after);
        sleep(wait >= 1 && wait <= 10 ? (unsigned)wait : 1);
    }
    const char *body = ans.body.data ? ans.body.data : "";
    if (ans.table) {
        snprintf(err, errlen, "%.300s is the table port, not the admin listener; give --admin "
                 "the URL of the port set with --admin-port (default http://127.0.0.1:10003)",
                 d->admin);
        buf_free(&ans.body);
        return -1;
    }
    yajl_val v = push_parse(body);
    const char *epath[] = {"error", NULL};
    yajl_val e = v ? yajl_tree_get(v, epath, yajl_t_string) : NULL;
    const char *why = e ? YAJL_GET_STRING(e) : NULL;
    int rc = -1;
    if (ans.status == 200 && v) {
        d->ntables += json_count(v, "tables");
        d->nentities += json_count(v, "entities");
        push_unserved(v, unserved, nunserved);
        rc = 0;
    } else if (ans.status == 404 || ans.status == 405) {
        snprintf(err, errlen, "%.300s has no POST /import: is it an older tabled, or not the "
                 "admin listener (--admin-port)?", d->admin);
    } else if (ans.status == 401 || ans.status == 403) {
        snprintf(err, errlen, "the admin listener refused the request (%d): %.300s; give its "
                 "token with --admin-token or $TABLED_ADMIN_TOKEN", ans.status,
                 why ? why : body);
    } else if (ans.status == 413) {
        snprintf(err, errlen, "lines %lu-%lu (%zu bytes) are more than the server takes in "
                 "one request; start it with a larger --max-body-bytes", first, last,
                 piece->len);
    } else if (why && v) {
        /* the piece's line K: K = 1 is the header, K >= 2 the file's
           line first + K - 2 */
        unsigned long k = (unsigned long)json_count(v, "line");
        unsigned long at = k >= 2 ? first + k - 2 : k == 1 ? 1 : first;
        d->ntables += json_count(v, "tables");
        d->nentities += json_count(v, "entities");
        if (ans.status == 400)
            snprintf(err, errlen, "line %lu: %s; the lines before line %lu were imported "
                     "(fix the file, then import it again: importing is idempotent)", at, why,
                     first);
        else
            snprintf(err, errlen, "import stopped at line %lu: %s (status %d); the lines "
                     "before it were imported but for at most the last 1000 entities "
                     "(importing is idempotent: run it again once the server is fixed)", at,
                     why, ans.status);
    } else {
        snprintf(err, errlen, "POST %s/import answered %d: %.300s", d->admin, ans.status,
                 body);
    }
    if (v)
        yajl_tree_free(v);
    buf_free(&ans.body);
    return rc;
}

int dump_push(struct dump *d, FILE *in, char *err, size_t errlen)
{
    struct httpc_url u;
    if (httpc_parse_url(d->admin, &u) < 0) {
        snprintf(err, errlen, "--admin expects http://HOST:PORT, got '%.300s'", d->admin);
        return -1;
    }
    struct buf piece, header;
    buf_init(&piece);
    buf_init(&header);
    char *line = NULL, unserved[8][64];
    size_t cap = 0, nunserved = 0;
    ssize_t len;
    unsigned long lineno = 0, first = 2;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) > 0) {
        lineno++;
        if (lineno == 1) {             /* checked: the header */
            buf_append(&header, line, (size_t)len);
            if (header.data[header.len - 1] != '\n')
                buf_putc(&header, '\n');
            buf_append(&piece, header.data, header.len);
            continue;
        }
        if (piece.len > header.len && piece.len + (size_t)len > DUMP_PUSH_PIECE) {
            rc = push_piece(d, &u, &piece, first, lineno - 1, unserved,
                            &nunserved, err, errlen);
            piece.len = 0;
            buf_append(&piece, header.data, header.len);
            first = lineno;
            if (d->progress)
                fprintf(stderr, "\rimported %llu entities", d->nentities);
            if (rc != 0)
                break;
        }
        buf_append(&piece, line, (size_t)len);
        if (piece.data[piece.len - 1] != '\n')
            buf_putc(&piece, '\n');
    }
    if (rc == 0 && ferror(in)) {
        snprintf(err, errlen, "read failed: %s", strerror(errno));
        rc = -1;
    }
    /* the last piece (also a file of its header alone: the server checks
       the format) */
    if (rc == 0 && (piece.len > header.len || lineno == 1))
        rc = push_piece(d, &u, &piece, first, lineno, unserved, &nunserved,
                        err, errlen);
    if (d->progress)
        fprintf(stderr, "\rimported %llu entities\n", d->nentities);
    for (size_t i = 0; rc == 0 && i < nunserved; i++)
        fprintf(stderr, "tabled import: the server does not serve account %s: its tables and "
                "entities were stored, and are served once the server runs with that account "
                "(--account)\n", unserved[i]);
    free(line);
    buf_free(&piece);
    buf_free(&header);
    return rc;
}
