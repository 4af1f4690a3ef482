/* admin_access.c - Host and bearer-token checks of the admin listener (see
 * admin_access.h). */
#include "server/admin_access.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/sslload.h"

/* 1 when addr is 0.0.0.0 or :: (with or without brackets): binding there
 * says nothing about the name clients will use. */
static int is_wildcard(const char *addr)
{
    char tmp[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(addr);
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
        addr++;
        n -= 2;
    }
    if (n == 0)
        return 1;
    if (n >= sizeof tmp)
        return 0;
    memcpy(tmp, addr, n);
    tmp[n] = '\0';
    unsigned char a[16];
    static const unsigned char zero[16];
    if (inet_pton(AF_INET, tmp, a) == 1)
        return memcmp(a, zero, 4) == 0;
    if (inet_pton(AF_INET6, tmp, a) == 1)
        return memcmp(a, zero, 16) == 0;
    return 0;
}

/* Adds one allowed Host name (lower case; IPv6 literals in brackets). */
static void add_host(struct admin_access *a, const char *name)
{
    if (a->nhosts >= sizeof a->hosts / sizeof a->hosts[0] || !*name)
        return;
    unsigned char a6[16];
    char *dst = a->hosts[a->nhosts];
    if (strlen(name) + 3 > sizeof a->hosts[0])
        return;
    if (inet_pton(AF_INET6, name, a6) == 1)
        snprintf(dst, sizeof a->hosts[0], "[%s]", name);
    else
        snprintf(dst, sizeof a->hosts[0], "%s", name);
    for (char *p = dst; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    a->nhosts++;
}

void admin_access_init(struct admin_access *a, const struct config *cfg)
{
    memset(a, 0, sizeof *a);
    a->listener_loopback = 1;
    if (!cfg)
        return;
    if (cfg->admin_token[0]) {
        /* libcrypto is opened here, with a token only; without it (logged)
         * no token matches: the listener stays closed to every request */
        const struct sslload_crypto *sc = sslload_crypto();
        a->has_token = 1;
        if (sc)
            sc->SHA256((const unsigned char *)cfg->admin_token, strlen(cfg->admin_token),
                       a->token_sha256);
    }
    a->listener_loopback = config_addr_is_loopback(cfg->admin_host);
    for (size_t i = 0; i < cfg->nadmin_allowed_hosts; i++)
        add_host(a, cfg->admin_allowed_hosts[i]);
    if (!a->listener_loopback && !is_wildcard(cfg->admin_host))
        add_host(a, cfg->admin_host);
}

/* Length of the host part of a Host value ("name", "1.2.3.4", "[v6]")
 * when what follows it is nothing or ":" and 1-5 digits; 0 otherwise. */
static size_t host_part_len(const char *v)
{
    size_t n = strlen(v), end;
    if (n == 0)
        return 0;
    if (v[0] == '[') {
        const char *rb = memchr(v, ']', n);
        if (!rb)
            return 0;
        end = (size_t)(rb - v) + 1;
    } else {
        const char *colon = memchr(v, ':', n);
        end = colon ? (size_t)(colon - v) : n;
    }
    if (end == 0)
        return 0;
    if (end < n) {
        size_t digits = n - end - 1;
        if (v[end] != ':' || digits == 0 || digits > 5)
            return 0;
        for (size_t i = end + 1; i < n; i++)
            if (!isdigit((unsigned char)v[i]))
                return 0;
    }
    return end;
}

int admin_access_host_ok(const struct admin_access *a, const char *host)
{
    char name[256];
    size_t n = host_part_len(host);
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, host, n);
    name[n] = '\0';
    /* an unbracketed IPv6 literal never gets here whole: it was cut at
     * its first ':' and what followed was not a port */
    if (config_addr_is_loopback(name))
        return 1;
    for (size_t i = 0; i < a->nhosts; i++)
        if (strcasecmp(a->hosts[i], name) == 0)
            return 1;
    return 0;
}

/* 1 when value is "Bearer TOKEN" (scheme in any case) and TOKEN hashes to
 * the configured token's digest; compared in constant time. */
static int token_matches(const struct admin_access *a, const char *value)
{
    if (strncasecmp(value, "Bearer", 6) != 0 || (value[6] != ' ' && value[6] != '\t'))
        return 0;
    const char *t = value + 6;
    while (*t == ' ' || *t == '\t')
        t++;
    const struct sslload_crypto *sc = sslload_crypto();
    if (!sc)
        return 0;
    unsigned char got[32];
    sc->SHA256((const unsigned char *)t, strlen(t), got);
    return sc->CRYPTO_memcmp(got, a->token_sha256, sizeof got) == 0;
}

/* Length of an authority ("name", "name:port") without a ":80" port,
 * the default of http: origins (a browser leaves it out). */
static size_t without_default_port(const char *v, size_t n)
{
    if (n > 3 && !memcmp(v + n - 3, ":80", 3) && v[n - 4] != ':')
        return n - 3;
    return n;
}

/* 1 when origin (an Origin header value) is http://HOST, HOST being the
 * request's Host value: the listener's own origin as the browser sees
 * it (the admin listener speaks plain HTTP). */
static int origin_is_own(const char *origin, const char *host)
{
    if (strncasecmp(origin, "http://", 7) != 0)
        return 0;
    const char *o = origin + 7;
    size_t ol = without_default_port(o, strlen(o));
    size_t hl = without_default_port(host, strlen(host));
    return ol == hl && ol > 0 && strncasecmp(o, host, ol) == 0;
}

int admin_access_same_origin(const struct request *req, const char *host)
{
    const char *site = request_header(req, "Sec-Fetch-Site");
    if (site) {
        if (request_header_count(req, "Sec-Fetch-Site") != 1 ||
            (strcasecmp(site, "same-origin") != 0 && strcasecmp(site, "none") != 0))
            return 0;
    }
    const char *origin = request_header(req, "Origin");
    if (origin && (request_header_count(req, "Origin") != 1 || !origin_is_own(origin, host)))
        return 0;
    return 1;
}

enum admin_verdict admin_access_check(const struct admin_access *a, const struct request *req)
{
    const char *host = request_header(req, "Host");
    if (!host || request_header_count(req, "Host") != 1 || !admin_access_host_ok(a, host))
        return ADMIN_BAD_HOST;
    if (!admin_access_same_origin(req, host))
        return ADMIN_CROSS_SITE;
    /* GET /export hands out every entity: with a token it needs it, as a
     * change does, on any listener. */
    int read_only = (req->method == HTTP_M_GET || req->method == HTTP_M_HEAD) &&
                    !(req->path_len == 7 && !memcmp(req->path, "/export", 7));
    int need = a->has_token && (!read_only || !a->listener_loopback);
    if (!a->listener_loopback && !a->has_token)
        need = 1;  /* config.c forbids this; refuse everything if it happens */
    if (!need)
        return ADMIN_ADMIT;
    const char *auth = request_header(req, "Authorization");
    if (!auth || request_header_count(req, "Authorization") != 1)
        return ADMIN_NO_TOKEN;
    if (!a->has_token || !token_matches(a, auth))
        return strncasecmp(auth, "Bearer", 6) == 0 ? ADMIN_BAD_TOKEN : ADMIN_NO_TOKEN;
    return ADMIN_ADMIT;
}
