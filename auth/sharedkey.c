/* sharedkey.c - SharedKey and SharedKeyLite for the Table service
 * (doc/protocol.md, SharedKey; SharedKeyLite): the short Table string-to-sign, verified against both
 * account keys in constant time. */
#include <string.h>
#include <strings.h>

#include "auth/auth_int.h"
#include "core/coding.h"

/* Longest signature echoed back in the error detail. */
#define SK_ECHO_MAX 256

/* Appends the header's value (empty when absent) to b. */
static void put_header(struct buf *b, const struct request *req, const char *name)
{
    const char *v = auth_header(req, name, NULL);
    if (v)
        buf_puts(b, v);
}

/* Appends "?comp=VALUE" when the raw query has a comp parameter (name
 * matched case-insensitively, value percent-decoded when it can be). Other
 * parameters never enter the Table string-to-sign. */
static void put_comp(struct buf *b, const struct request *req)
{
    const char *q = req->query ? req->query : "";
    size_t n = req->query ? req->query_len : 0;
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && q[i] != '&')
            i++;
        const char *p = q + start, *eq = memchr(p, '=', i - start);
        size_t name_len = eq ? (size_t)(eq - p) : i - start;
        if (name_len == 4 && strncasecmp(p, "comp", 4) == 0) {
            const char *v = eq ? eq + 1 : "";
            size_t vlen = eq ? (size_t)(q + i - v) : 0;
            size_t dlen = 0;
            char *dec = req->arena ? auth_pct_decode(req->arena, v, vlen, &dlen) : NULL;
            buf_puts(b, "?comp=");
            if (dec)
                buf_append(b, dec, dlen);
            else
                buf_append(b, v, vlen);
            return;
        }
        i++;
    }
}

/* The string-to-sign of SharedKey or SharedKeyLite (doc/protocol.md, SharedKey; SharedKeyLite). */
void auth_sharedkey_string_to_sign(struct buf *b, const struct request *req, const char *account,
                                   const char *path, size_t path_len, int lite)
{
    if (!lite) {
        buf_puts(b, req->method_name ? req->method_name : "");
        buf_putc(b, '\n');
        put_header(b, req, "Content-MD5");
        buf_putc(b, '\n');
        put_header(b, req, "Content-Type");
        buf_putc(b, '\n');
    }
    if (auth_header(req, "x-ms-date", NULL))
        put_header(b, req, "x-ms-date");
    else
        put_header(b, req, "Date");
    buf_putc(b, '\n');
    buf_putc(b, '/');
    buf_puts(b, account);
    if (path_len == 0)
        buf_putc(b, '/');
    else
        buf_append(b, path, path_len);
    put_comp(b, req);
}

/* 1 for bytes a client leaves unescaped in a path (RFC 3986 pchar plus '/'
 * as the separator); everything else it percent-encodes. */
static int keep_raw(unsigned char c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        return 1;
    return c && strchr("-._~!$&'()*+,;=:@", c) != NULL;
}

/* The path with its percent-encoding normalised the way SDKs generate it:
 * escapes of pchars decoded, other bytes escaped with upper-case hex, an
 * escaped '/' left escaped. A client whose HTTP stack re-encodes the path
 * after signing still verifies (doc/protocol.md, SharedKey). */
static char *normalise_path(struct arena *a, const char *p, size_t n, size_t *outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = arena_alloc(a, n * 3 + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        int escaped = 0;
        int hi = c == '%' && i + 2 < n ? coding_hexval((unsigned char)p[i + 1]) : -1;
        int lo = hi >= 0 ? coding_hexval((unsigned char)p[i + 2]) : -1;
        if (lo >= 0) {
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
            escaped = 1;
        }
        if ((c == '/' && !escaped) || keep_raw(c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
    *outlen = o;
    return out;
}

/* Verifies "ACCOUNT:SIGNATURE" (cred) of a SharedKey/SharedKeyLite header:
 * every key of the account, the account name with and (secondary endpoint)
 * without "-secondary", the raw and the normalised path; then the date. */
enum auth_status auth_sharedkey_verify(const struct auth_ctx *ctx, const struct request *req,
                                       const char *account, const struct auth_op *op, int lite,
                                       const char *cred, size_t cred_len, struct auth_result *out)
{
    const char *colon = memchr(cred, ':', cred_len);
    if (!colon || colon == cred || colon + 1 == cred + cred_len)
        return auth_refuse(out, AUTH_INVALID_INFO, AUTH_WHY_MALFORMED_HEADER,
                           lite ? "the SharedKeyLite credentials are not ACCOUNT:SIGNATURE"
                                : "the SharedKey credentials are not ACCOUNT:SIGNATURE");
    size_t name_len = (size_t)(colon - cred);
    const char *sig = colon + 1;
    size_t sig_len = cred_len - name_len - 1;
    size_t acct_len = strlen(account);

    int name_ok = name_len == acct_len && memcmp(cred, account, acct_len) == 0;
    if (!name_ok && name_len == acct_len + 10 && memcmp(cred, account, acct_len) == 0 &&
        memcmp(cred + acct_len, "-secondary", 10) == 0)
        name_ok = 1;
    const struct account_cfg *acct = auth_find_account(ctx, account);
    if (!name_ok || !acct) {
        out->detail = "The account named in the Authorization header is not the account of the "
                      "request.";
        if (!acct)
            return auth_refuse(out, AUTH_FAILED, AUTH_WHY_UNKNOWN_ACCOUNT,
                               arena_sprintf(req->arena,
                                             "account '%s' is not configured (configured: %s)",
                                             account, auth_account_list(req->arena, ctx)));
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_ACCOUNT_MISMATCH,
                           arena_sprintf(req->arena,
                                         "the Authorization header signs for account '%.*s', but "
                                         "the request addresses account '%s'",
                                         (int)(name_len > 64 ? 64 : name_len), cred, account));
    }

    const char *path = req->path ? req->path : "/";
    size_t path_len = req->path ? req->path_len : 1;
    const char *secondary_name = op && op->secondary
                                     ? arena_sprintf(req->arena, "%s-secondary", account)
                                     : NULL;

    /* The normalised path is made only when the raw one did not verify:
     * clients almost always sign the path they send. */
    const char *names[2] = {account, secondary_name};
    const char *norm = NULL;
    size_t norm_len = 0;
    const unsigned char *keys[2] = {acct->key1, acct->key2};
    size_t key_lens[2] = {acct->key1_len, acct->key2_len};
    int matched = 0;

    struct buf sts;
    buf_init(&sts);
    for (int ni = 0; ni < 2 && !matched; ni++) {
        if (!names[ni])
            continue;
        for (int pi = 0; pi < 2 && !matched; pi++) {
            const char *pp = path;
            size_t pl = path_len;
            if (pi == 1) {
                if (!norm)
                    norm = normalise_path(req->arena, path, path_len, &norm_len);
                if (norm_len == path_len && memcmp(norm, path, path_len) == 0)
                    break;   /* nothing new to try */
                pp = norm;
                pl = norm_len;
            }
            buf_reset(&sts);
            auth_sharedkey_string_to_sign(&sts, req, names[ni], pp, pl, lite);
            for (int ki = 0; ki < 2 && !matched; ki++) {
                char mac[45];
                if (key_lens[ki] == 0)
                    continue;
                if (auth_hmac_b64(ctx->cache, keys[ki], key_lens[ki], sts.data, sts.len,
                                  mac) < 0) {
                    buf_free(&sts);
                    return auth_refuse(out, AUTH_UNAVAILABLE, AUTH_WHY_NO_CRYPTO,
                                       "the SharedKey signature could not be checked: "
                                       "libcrypto could not be loaded (the error log "
                                       "says why)");
                }
                matched = auth_mac_equal(mac, sig, sig_len);
            }
        }
    }

    if (!matched) {
        /* The detail quotes the first string tried: the raw path's. */
        buf_reset(&sts);
        auth_sharedkey_string_to_sign(&sts, req, account, path, path_len, lite);
        int echo = sig_len > SK_ECHO_MAX ? SK_ECHO_MAX : (int)sig_len;
        out->detail = arena_sprintf(req->arena,
                                    "The MAC signature found in the HTTP request '%.*s' is not the "
                                    "same as any computed signature. Server used following string "
                                    "to sign: '%s'.",
                                    echo, sig, sts.data ? sts.data : "");
        out->sts = arena_strdup(req->arena, sts.data ? sts.data : "");
        buf_free(&sts);
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SIGNATURE,
                           arena_sprintf(req->arena,
                                         "%s signature does not match: tried the %s of account "
                                         "'%s'%s; check the account key and what the client "
                                         "signs",
                                         lite ? "SharedKeyLite" : "SharedKey",
                                         acct->key2_len ? "two keys" : "key", account,
                                         norm && (norm_len != path_len ||
                                                  memcmp(norm, path, path_len) != 0)
                                             ? " over the path as sent and re-encoded"
                                             : ""));
    }
    buf_free(&sts);
    enum auth_status rc = auth_check_date(ctx, req, out);
    if (rc != AUTH_OK)
        return rc;
    out->scheme = lite ? AUTH_SCHEME_SHAREDKEYLITE : AUTH_SCHEME_SHAREDKEY;
    out->perms = AUTH_P_ALL;
    out->rtypes = AUTH_RT_ALL;
    return AUTH_OK;
}
