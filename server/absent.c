/* absent.c - answers for the Blob and Queue ports of the azurite command
 * (see absent.h): every request gets the Blob/Queue services' XML error
 *
 *   <?xml version="1.0" encoding="utf-8"?><Error><Code>APINotImplemented</Code>
 *   <Message>This server provides ...\nRequestId:...\nTime:...</Message></Error>
 *
 * with status 501, x-ms-error-code, x-ms-request-id and Date headers (the
 * client's x-ms-client-request-id and x-ms-version echoed), and one warning
 * line naming the method and path (never the query, which may carry a SAS
 * signature). The body is made of fixed text only; nothing of the request
 * is copied into it. A request the wing cannot parse or keep gets the same
 * shape with the common error code for that reason. Nothing is buffered
 * here: the wing's limits bound every request. */
#include "server/absent.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/buf.h"
#include "core/coding.h"
#include "core/http.h"
#include "core/log.h"
#include "core/rand.h"
#include "core/timefmt.h"

/* Longest part of a path written into the log line. */
#define ABSENT_LOG_PATH 256

struct absent {
    const char *name;      /* "Blob" */
    const char *message;   /* the error message, without RequestId/Time */
};

static const struct absent absent_services[] = {
    [ABSENT_BLOB] = {"Blob", "This server provides the Table service only (tabled); the Blob "
                             "service is not available. Use Azure Storage or an emulator that "
                             "provides the Blob service for blobs."},
    [ABSENT_QUEUE] = {"Queue", "This server provides the Table service only (tabled); the "
                               "Queue service is not available. Use Azure Storage or an "
                               "emulator that provides the Queue service for queues."},
};

const char *absent_name(enum absent_service which)
{
    return absent_services[which].name;
}

/* A random (version 4) UUID for x-ms-request-id, as the services send. */
static void absent_request_id(char out[40])
{
    static struct rand_x128 rng;
    static int seeded;
    if (!seeded) {
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed || !seed)
            seed = (uint64_t)time(NULL) | 1;
        rand_x128_seed(&rng, seed);
        seeded = 1;
    }
    uint8_t g[16];
    uint64_t a = rand_x128_next(&rng), b = rand_x128_next(&rng);
    memcpy(g, &a, 8);
    memcpy(g + 8, &b, 8);
    g[6] = (uint8_t)((g[6] & 0x0f) | 0x40);
    g[8] = (uint8_t)((g[8] & 0x3f) | 0x80);
    coding_uuid_format(g, out);
}

/* Fills resp with one storage error (status, code, the service's message). */
static void absent_error(const struct absent *svc, const struct request *req,
                         struct response *resp, int status, const char *code)
{
    char id[40], when[40], date[40];
    absent_request_id(id);
    timefmt_iso_format7(timefmt_now_ticks(), when);
    timefmt_rfc1123_format((int64_t)time(NULL), date);
    resp->status = status;
    response_header(resp, "Content-Type", "application/xml");
    response_header(resp, "x-ms-error-code", code);
    response_header(resp, "x-ms-request-id", id);
    resp->request_id = response_get_header(resp, "x-ms-request-id");
    const char *cid = req ? request_header(req, "x-ms-client-request-id") : NULL;
    if (cid)
        response_header(resp, "x-ms-client-request-id", cid);
    const char *ver = req ? request_header(req, "x-ms-version") : NULL;
    if (ver)
        response_header(resp, "x-ms-version", ver);
    response_header(resp, "Date", date);
    buf_printf(&resp->body,
               "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s</Code>"
               "<Message>%s\nRequestId:%s\nTime:%s</Message></Error>",
               code, svc->message, id, when);
}

/* Every request: 501 APINotImplemented and a warning naming it. */
static int absent_handle(void *arg, struct request *req, struct response *resp,
                         void (*done)(void *token), void *token)
{
    const struct absent *svc = arg;
    (void)done;
    (void)token;
    size_t n = req->path_len < ABSENT_LOG_PATH ? req->path_len : ABSENT_LOG_PATH;
    log_warn("%s %.*s%s: answered 501 APINotImplemented (the %s service is not provided: "
             "this server provides the Table service only)",
             req->method_name, (int)n, req->path, req->path_len > n ? "..." : "", svc->name);
    absent_error(svc, req, resp, 501, "APINotImplemented");
    return 1;
}

/* A request the wing could not parse or keep: the common error for it. */
static void absent_fail(void *arg, struct request *req, struct response *resp,
                        enum http_fail why)
{
    const struct absent *svc = arg;
    int status = 400;
    const char *code = "InvalidInput";
    if (why == HTTP_FAIL_HEADERS_TOO_LARGE) {
        status = 431;
        code = "RequestHeaderFieldsTooLarge";
    } else if (why == HTTP_FAIL_BODY_TOO_LARGE) {
        status = 413;
        code = "RequestBodyTooLarge";
    } else if (why == HTTP_FAIL_TIMEOUT) {
        status = 500;
        code = "OperationTimedOut";
    }
    log_warn("%s port: a request could not be read; answered %d %s (the %s service is not "
             "provided: this server provides the Table service only)",
             svc->name, status, code, svc->name);
    absent_error(svc, req, resp, status, code);
}

/* Nothing is ever written: no group commit to wait for. */
static int absent_dirty(void *arg)
{
    (void)arg;
    return 0;
}

static int absent_sync(void *arg)
{
    (void)arg;
    return 0;
}

void absent_handler(enum absent_service which, struct req_handler *h)
{
    *h = (struct req_handler){.arg = (void *)&absent_services[which],
                              .handle = absent_handle,
                              .fail = absent_fail,
                              .dirty = absent_dirty,
                              .sync = absent_sync};
}
