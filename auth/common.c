/* common.c - small helpers of auth/: query decoding, HMAC, constant-time
 * compare, clock, account lookup, the request-date rules. */
/* The low-level SHA-256 calls (deprecated in OpenSSL 3, still supported)
 * let a keyed HMAC state be copied as a plain struct, without allocation
 * (before any header includes openssl/sha.h). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "auth/auth_int.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "core/coding.h"
#include "core/pages.h"
#include "core/sslload.h"
#include "core/timefmt.h"

/* Percent-decodes s into arena memory. '+' stays '+': the SDKs send a
 * literal plus as %2B, and a raw '+' in a signature must survive. */
char *auth_pct_decode(struct arena *a, const char *s, size_t n, size_t *outlen)
{
    char *out = arena_alloc(a, n + 1);
    long o = coding_pct_decode(s, n, out, n + 1, CODING_PCT_NO_NUL);
    if (o < 0)
        return NULL;
    if (outlen)
        *outlen = (size_t)o;
    return out;
}

/* Splits the raw query into decoded name/value pairs (see auth_int.h). */
void authq_parse(struct arena *a, const char *q, size_t n, struct authq **out, size_t *count)
{
    size_t cap = 1, k = 0;
    for (size_t i = 0; i < n; i++)
        if (q[i] == '&')
            cap++;
    struct authq *p = arena_alloc(a, cap * sizeof *p);
    size_t i = 0;
    while (i < n) {
        size_t start = i, eq = (size_t)-1;
        while (i < n && q[i] != '&') {
            if (q[i] == '=' && eq == (size_t)-1)
                eq = i;
            i++;
        }
        size_t end = i;
        i++; /* skip '&' */
        if (end == start)
            continue;
        size_t name_end = eq == (size_t)-1 ? end : eq;
        const char *name = auth_pct_decode(a, q + start, name_end - start, NULL);
        if (!name)
            continue;
        p[k].name = name;
        if (eq == (size_t)-1) {
            p[k].value = arena_strdup(a, "");
            p[k].value_len = 0;
        } else {
            p[k].value = auth_pct_decode(a, q + eq + 1, end - eq - 1, &p[k].value_len);
            if (!p[k].value)
                p[k].value_len = 0;
        }
        k++;
    }
    *out = p;
    *count = k;
}

/* First parameter called name; counts duplicates for callers that must
 * refuse ambiguity (SAS fields). */
const struct authq *authq_find(const struct authq *p, size_t n, const char *name, int *dups)
{
    const struct authq *found = NULL;
    int d = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(p[i].name, name) != 0)
            continue;
        if (found)
            d++;
        else
            found = &p[i];
    }
    if (dups)
        *dups = d;
    return found;
}

struct auth_cache *auth_cache_new(void)
{
    /* 50 KiB of slots, filled one by one as keys and SAS queries come:
     * in pages of their own (core/pages.h), resident once used */
    struct auth_cache *c = pages_zalloc(sizeof *c);
    return c;
}

void auth_cache_free(struct auth_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < SAS_CACHE_SLOTS; i++) {
        free(c->sas[i].query);
        free(c->sas[i].extra);
    }
    pages_free(c, sizeof *c);
}

/* The pad states of key: computed once per key when cache keeps them,
 * else into *tmp. */
static const struct hmac_pads *hmac_pads_for(const struct sslload_crypto *c,
                                             struct auth_cache *cache, const unsigned char *key,
                                             size_t key_len, struct hmac_pads *tmp)
{
    unsigned char k[64] = {0}, pad[64];
    if (key_len > sizeof k)
        c->SHA256(key, key_len, k);
    else if (key_len)
        memcpy(k, key, key_len);
    struct hmac_pads *p = tmp;
    if (cache) {
        for (unsigned i = 0; i < HMAC_CACHE_SLOTS; i++)
            if (cache->hmac[i].used && memcmp(cache->hmac[i].key, k, sizeof k) == 0)
                return &cache->hmac[i];
        p = &cache->hmac[cache->hmac_next++ % HMAC_CACHE_SLOTS];
    }
    memcpy(p->key, k, sizeof k);
    for (unsigned i = 0; i < sizeof pad; i++)
        pad[i] = k[i] ^ 0x36;
    c->SHA256_Init(&p->inner);
    c->SHA256_Update(&p->inner, pad, sizeof pad);
    for (unsigned i = 0; i < sizeof pad; i++)
        pad[i] = k[i] ^ 0x5c;
    c->SHA256_Init(&p->outer);
    c->SHA256_Update(&p->outer, pad, sizeof pad);
    p->used = 1;
    return p;
}

/* Base64(HMAC-SHA256(key, msg)): the signature of every scheme here
 * (RFC 2104 over the cached pad states). libcrypto is opened on the first
 * signature (core/sslload.h), not at start. */
int auth_hmac_b64(struct auth_cache *cache, const unsigned char *key, size_t key_len,
                  const char *msg, size_t msg_len, char out[45])
{
    const struct sslload_crypto *sc = sslload_crypto();
    if (!sc)
        return -1;
    struct hmac_pads tmp;
    const struct hmac_pads *p = hmac_pads_for(sc, cache, key, key_len, &tmp);
    unsigned char ih[32], mac[32];
    SHA256_CTX c = p->inner;
    sc->SHA256_Update(&c, msg, msg_len);
    sc->SHA256_Final(ih, &c);
    c = p->outer;
    sc->SHA256_Update(&c, ih, sizeof ih);
    sc->SHA256_Final(mac, &c);
    coding_b64_encode(mac, sizeof mac, out);
    return 0;
}

/* Constant-time MAC compare (the length of a signature is public); after
 * auth_hmac_b64(), so libcrypto is open. */
int auth_mac_equal(const char computed[45], const char *given, size_t given_len)
{
    const struct sslload_crypto *sc = sslload_crypto();
    if (given_len != 44 || !sc)
        return 0;
    return sc->CRYPTO_memcmp(computed, given, 44) == 0;
}

int64_t auth_now(const struct auth_ctx *ctx)
{
    return ctx->now_ticks ? ctx->now_ticks(ctx->now_arg) : timefmt_now_ticks();
}

const char *auth_account_list(struct arena *a, const struct auth_ctx *ctx)
{
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < ctx->naccounts && b.len < 512; i++) {
        if (i)
            buf_puts(&b, ", ");
        buf_putc(&b, '\'');
        buf_puts(&b, ctx->accounts[i].name);
        buf_putc(&b, '\'');
    }
    const char *out = arena_strdup(a, ctx->naccounts ? b.data : "none");
    buf_free(&b);
    return out;
}

const struct account_cfg *auth_find_account(const struct auth_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->naccounts; i++)
        if (strcmp(ctx->accounts[i].name, name) == 0)
            return &ctx->accounts[i];
    return NULL;
}

/* Like request_header(), but also hands back the stored length so that a
 * value with an embedded NUL can be told apart. */
const char *auth_header(const struct request *req, const char *name, size_t *len)
{
    const struct http_header *h = request_header_find(req, name);
    if (!h)
        return NULL;
    if (len)
        *len = h->value ? h->value_len : 0;
    return h->value ? h->value : "";
}

int auth_version_shape(const char *v)
{
    if (!v || strlen(v) != 10)
        return 0;
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7) {
            if (v[i] != '-')
                return 0;
        } else if (v[i] < '0' || v[i] > '9') {
            return 0;
        }
    }
    return 1;
}

/* doc/protocol.md, Request dates: x-ms-date (else Date) must be RFC 1123 with a two-digit day
 * and within 15 minutes of now. */
enum auth_status auth_check_date(const struct auth_ctx *ctx, const struct request *req,
                                 struct auth_result *out)
{
    size_t len = 0;
    const char *date = auth_header(req, "x-ms-date", &len);
    if (!date)
        date = auth_header(req, "Date", &len);
    if (!date || len == 0) {
        out->detail = "Request date header not specified.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_DATE,
                           "the request has neither an x-ms-date nor a Date header");
    }
    int64_t secs;
    if (strlen(date) != len || timefmt_rfc1123_parse(date, len, &secs) != 0) {
        out->detail = "The Date header in the request is incorrect.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_DATE,
                           "the x-ms-date / Date header is not an RFC 1123 date "
                           "(Sun, 06 Nov 1994 08:49:37 GMT)");
    }
    if (ctx->no_skew_check)
        return AUTH_OK;
    int64_t now = (auth_now(ctx) - TIMEFMT_UNIX_EPOCH_TICKS) / TIMEFMT_TICKS_PER_SECOND;
    if (secs < now - AUTH_MAX_SKEW_SECONDS) {
        out->detail = arena_sprintf(req->arena, "Request date header too old: '%s'", date);
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_CLOCK_SKEW,
                           arena_sprintf(req->arena,
                                         "the request date '%s' is %lld s behind the server's "
                                         "clock (at most %d s are allowed)",
                                         date, (long long)(now - secs), AUTH_MAX_SKEW_SECONDS));
    }
    if (secs > now + AUTH_MAX_SKEW_SECONDS) {
        out->detail =
            arena_sprintf(req->arena, "Request date header too far in the future: '%s'", date);
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_CLOCK_SKEW,
                           arena_sprintf(req->arena,
                                         "the request date '%s' is %lld s ahead of the server's "
                                         "clock (at most %d s are allowed)",
                                         date, (long long)(secs - now), AUTH_MAX_SKEW_SECONDS));
    }
    return AUTH_OK;
}
