/* multipart.h - the $batch wire codec (doc/protocol.md, Batch): a multipart/mixed parser for
 * entity group transaction requests and a serialiser for their 202 bodies.
 *
 * The codec only reads and writes the envelope. The protocol layer calls
 * multipart_parse(), routes and runs each operation like a top-level request
 * (multipart_op_to_request() helps), then calls multipart_write_changeset()
 * or multipart_write_query() with the sub-responses.
 *
 * Parsing (doc/protocol.md, Batch request body; Batch parser tolerance):
 *   - The boundary comes from the outer Content-Type (media type must be
 *     multipart/mixed; the parameter may be quoted; other parameters such as
 *     charset are ignored; no spaces are needed around ';').
 *   - Delimiters are whole lines "--B" or "--B--", ended by CRLF or LF, or by
 *     the end of the enclosing content; trailing blanks are tolerated. Text
 *     equal to "--B" in the middle of a line (inside a JSON string) is data.
 *   - Preamble before the first delimiter and epilogue after the close
 *     delimiter are ignored. A multipart whose last delimiter lacks the "--"
 *     is accepted when only blank text follows it (old JS SDK).
 *   - Header names are case-insensitive; values are trimmed.
 *   - A part is either a changeset (Content-Type: multipart/mixed; boundary=)
 *     or one embedded request (Content-Type: application/http, optional
 *     Content-Transfer-Encoding binary/8bit/7bit, optional Content-ID).
 *   - Embedded request: leading blank lines are skipped, then the request
 *     line "METHOD URL HTTP/1.1" (exactly HTTP/1.1, as ODataLib demands),
 *     then headers up to the first empty line or the end of the part, then
 *     the body with leading blank lines and trailing CR/LF/blanks stripped.
 *     A sub-request Content-Length is neither required nor used.
 *   - Structure (doc/protocol.md, Batch limits): exactly one top-level part, either a changeset
 *     of 1..n write operations (POST, PUT, MERGE, PATCH, DELETE) or a single
 *     GET. Anything else (two changesets, changeset + query, a nested
 *     changeset, GET in a changeset, an empty changeset) is malformed.
 *   - All scanning is bounded by body_len: the body need not be
 *     NUL-terminated and may contain NUL bytes. Header lines may not.
 *
 * Memory: everything the parser returns lives in the arena given to it,
 * except op->body, which points into the caller's body (zero copy). */
#ifndef TABLED_MULTIPART_H
#define TABLED_MULTIPART_H
#include <stddef.h>

#include "core/arena.h"
#include "core/buf.h"
#include "core/http.h"

/* Service limit on the operations of one changeset (doc/protocol.md, Batch limits). */
#define MULTIPART_MAX_OPS 100

/* Return values of multipart_parse(). */
enum multipart_status {
    MULTIPART_OK = 0,
    /* Envelope unparsable or structure not allowed: answer 400 InvalidInput. */
    MULTIPART_ERR_MALFORMED = -1,
    /* Parsed fine but the changeset holds more than MULTIPART_MAX_OPS
     * operations. The batch is still filled in completely (nops = the real
     * count), so the caller can answer the 202 of doc/protocol.md, Batch limits with one 400
     * InvalidInput part "99:The batch request operation exceeds the maximum
     * 100 changes per change set." (its Accept/Prefer/Content-ID at hand). */
    MULTIPART_ERR_TOO_MANY = -2,
};

enum multipart_kind {
    MULTIPART_CHANGESET = 1,  /* one changeset of write operations */
    MULTIPART_QUERY = 2,      /* one GET directly under the batch boundary */
};

/* One embedded request. All strings are NUL-terminated arena copies unless
 * said otherwise; they and the headers array are read-only, because
 * operations whose request line and headers are byte-identical share them. */
struct multipart_op {
    size_t index;                 /* 0-based position in the batch */
    const char *method_name;      /* as written, e.g. "MERGE" */
    enum http_method method;      /* HTTP_M_OTHER when not one we know */
    const char *url;              /* request-target exactly as given */
    /* Split of url. For an absolute URL ("http://h:p/acct/t()?q") host is
     * "h:p" and path starts at the first '/' after it ("/" when there is
     * none); for a relative URL host is "" and path is the text before '?'
     * (it may lack the leading '/': relative to the service root). query is
     * the text after '?' ("" when absent); a '#fragment' is dropped. Nothing
     * is percent-decoded. */
    const char *host;
    const char *path;
    size_t path_len;
    const char *query;
    size_t query_len;
    struct http_header *headers;  /* sub-request headers, in order */
    size_t nheaders;
    /* Body: a slice of the caller's body (NOT NUL-terminated, may contain
     * NUL bytes); NULL and 0 when the request has no body. */
    const char *body;
    size_t body_len;
    /* Content-ID, from the MIME part headers or else from the sub-request
     * headers (doc/protocol.md, Batch parser tolerance); NULL when neither carries one. */
    const char *content_id;
    int in_changeset;               /* 1 for changeset operations */
    const char *changeset_boundary; /* its boundary, NULL outside one */
};

struct multipart_batch {
    enum multipart_kind kind;
    const char *boundary;           /* the request's batch boundary */
    const char *changeset_boundary; /* NULL for MULTIPART_QUERY */
    struct multipart_op *ops;       /* arena array, nops entries */
    size_t nops;
};

/* Parses a $batch request. content_type is the request's Content-Type value
 * (NULL when absent); body/body_len the request body. On MULTIPART_OK or
 * MULTIPART_ERR_TOO_MANY *out is filled; on MULTIPART_ERR_MALFORMED *out is
 * zeroed. *reason (if reason is not NULL) gets a short static text saying
 * what was wrong, or NULL on success; it is meant for logs and tests, not
 * for the client. */
int multipart_parse(struct arena *a, const char *content_type, const char *body,
                    size_t body_len, struct multipart_batch *out, const char **reason);

/* Fills *req from one operation so the operation can be routed and run like
 * a top-level request: arena, tls, peer_ip and start_us come from parent;
 * method, target (= op->url), path, query and headers from op; HTTP/1.1. The
 * body is op's slice of the batch body, not copied and so NOT NUL-terminated
 * (NULL when the op has none): batch operations are entity operations, whose
 * readers all go by body_len. */
void multipart_op_to_request(struct arena *a, const struct multipart_op *op,
                             const struct request *parent, struct request *req);

/* ---- Response serialisation (doc/protocol.md, Batch responses; Query in a batch) ---- */

/* One sub-response. headers are written in order, after the optional
 * Content-ID header, as "Name: value"; CR, LF and other control bytes in
 * names and values are written as spaces (no header injection). */
struct multipart_part {
    int status;                       /* e.g. 204 */
    const char *reason;               /* NULL: http_reason(status) */
    const char *content_id;           /* NULL: no Content-ID header */
    const struct http_header *headers;
    size_t nheaders;
    const char *body;                 /* NULL or body_len 0: empty body */
    size_t body_len;
};

/* Formats 16 random bytes as a version-4 GUID, lower case, 8-4-4-4-12
 * (out must hold 37 bytes). The caller supplies the randomness. */
void multipart_guid(char out[37], const unsigned char rnd[16]);

/* The top-level Content-Type value, "multipart/mixed; boundary=
 * batchresponse_<batch_guid>", in the arena. */
char *multipart_content_type(struct arena *a, const char *batch_guid);

/* Appends the body of a changeset answer: the batchresponse_<batch_guid>
 * part holding a changesetresponse_<changeset_guid> multipart with the n
 * sub-responses in order. Used for a successful changeset (one part per
 * operation) and for a failed one (n = 1: the failing operation). */
void multipart_write_changeset(struct buf *out, const char *batch_guid,
                               const char *changeset_guid,
                               const struct multipart_part *parts, size_t n);

/* Appends the body answering a single query outside a changeset (doc/protocol.md, Query in a batch):
 * one part directly under batchresponse_<batch_guid>. */
void multipart_write_query(struct buf *out, const char *batch_guid,
                           const struct multipart_part *part);

/* Fills *part from a sub-request's response (status, reason, headers, body)
 * plus the Content-ID to echo (NULL for none). part points into resp. */
void multipart_part_from_response(const struct response *resp, const char *content_id,
                                  struct multipart_part *part);

#endif
