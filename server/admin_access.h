/* admin_access.h - who may talk to the admin listener.
 *
 * Three checks run on every admin request before it is routed:
 *
 *  1. Host. A web page in a browser on the same machine can reach a
 *     loopback port through DNS rebinding (its own name made to resolve to
 *     127.0.0.1); the browser then still sends that name as Host. So only
 *     loopback Hosts are answered (127.0.0.0/8, [::1], localhost, each with
 *     or without a port), plus the names of --admin-allowed-host and the
 *     listener's own address when it is a specific (not wildcard)
 *     non-loopback one. Anything else, a missing Host or more than one
 *     Host, is refused with 403.
 *
 *  2. Origin. A page of another site can still make a browser send
 *     requests to a loopback port it names by address (an <img> or a
 *     form needs no answer to start an export or change faults). Browsers
 *     say where a request comes from: Sec-Fetch-Site ("same-origin",
 *     "same-site", "cross-site", or "none" when the user typed the URL)
 *     and, on most requests that are not plain GETs, Origin. So a request
 *     whose Sec-Fetch-Site is anything but "same-origin" or "none" is
 *     refused with 403 ("same-site" too: another port of localhost is the
 *     same site but another origin), and so is one whose Origin is not
 *     http://HOST, HOST being its own Host header (the listener as the
 *     browser reached it; ":80" may be left out). Command-line clients
 *     (curl, tabled export --admin, tabled advise) send neither header;
 *     the dashboard page this listener serves is same-origin.
 *
 *  3. Bearer token (--admin-token / --admin-token-file). When one is set,
 *     every request that is not GET or HEAD, and GET /export (it hands
 *     out every entity), must carry
 *     "Authorization: Bearer TOKEN", and so must every request when the
 *     listener is not bound to a loopback address (config.c refuses such a
 *     listener without a token). A missing or wrong token is 401 with
 *     "WWW-Authenticate: Bearer realm=..." (RFC 6750). Tokens are compared
 *     as SHA-256 digests with CRYPTO_memcmp, so the time taken tells
 *     nothing about the token, its length included.
 */
#ifndef TABLED_ADMIN_ACCESS_H
#define TABLED_ADMIN_ACCESS_H
#include <stddef.h>

#include "server/config.h"
#include "core/http.h"

struct admin_access {
    int has_token;
    unsigned char token_sha256[32];
    int listener_loopback;        /* the listener is bound to a loopback address */
    char hosts[CONFIG_MAX_ADMIN_HOSTS + 1][256];  /* allowed non-loopback Hosts */
    size_t nhosts;
};

enum admin_verdict {
    ADMIN_ADMIT = 0,
    ADMIN_BAD_HOST,       /* 403: Host not loopback nor allowed */
    ADMIN_CROSS_SITE,     /* 403: sent by a web page of another origin */
    ADMIN_NO_TOKEN,       /* 401: a token is needed and none was sent */
    ADMIN_BAD_TOKEN,      /* 401: a Bearer token was sent and is not ours */
};

/* Fills a from cfg (token, allowed hosts, listener address); cfg NULL
 * gives the defaults: loopback listener, loopback Hosts, no token. */
void admin_access_init(struct admin_access *a, const struct config *cfg);
/* 1 when the Host header value (NUL-terminated) names a loopback address
 * or an allowed name, with an optional port. */
int admin_access_host_ok(const struct admin_access *a, const char *host);
/* 1 when req carries no sign of coming from another origin's web page
 * (check 2 above); host is its Host header value. */
int admin_access_same_origin(const struct request *req, const char *host);
/* The verdict on one request. */
enum admin_verdict admin_access_check(const struct admin_access *a, const struct request *req);

#endif
