/* bearer.c - Microsoft Entra ID bearer tokens (doc/protocol.md, Bearer tokens). By default
 * every token is refused with the service's 401 challenge; with
 * ctx->bearer_basic an emulator-style check accepts a JWT whose claims look
 * right (aud, iss, nbf, exp) without verifying its signature, over HTTPS
 * only, as Azurite's "basic" OAuth mode does. Such a token acts for the
 * account owner on every operation, Get/Set Table ACL included (the
 * service's rule since 2025, doc/protocol-notes.md). */
#include <string.h>
#include <strings.h>
#include <yajl/yajl_tree.h>

#include "auth/auth_int.h"
#include "core/coding.h"
#include "core/jsonwalk.h"
#include "core/timefmt.h"

/* Longest token payload we look at. */
#define BEARER_MAX_PAYLOAD 16384

/* Decodes base64url (padding optional) into arena memory, NUL-terminated.
 * NULL when malformed. */
static char *b64url_decode(struct arena *a, const char *s, size_t n, size_t *outlen)
{
    char *out = arena_alloc(a, n / 4 * 3 + 4);
    long o = coding_b64_decode(s, n, (uint8_t *)out, CODING_B64_URL);
    if (o < 0)
        return NULL;
    out[o] = 0;
    *outlen = (size_t)o;
    return out;
}

/* The token's payload claim `name` as a string, or NULL. */
static const char *claim_str(yajl_val root, const char *name)
{
    const char *path[] = {name, NULL};
    yajl_val v = yajl_tree_get(root, path, yajl_t_string);
    return v ? YAJL_GET_STRING(v) : NULL;
}

/* The claim as a number of seconds; 0 when absent or not a number. */
static int claim_num(yajl_val root, const char *name, double *out)
{
    const char *path[] = {name, NULL};
    yajl_val v = yajl_tree_get(root, path, yajl_t_number);
    if (!v)
        return 0;
    *out = YAJL_IS_INTEGER(v) ? (double)YAJL_GET_INTEGER(v) : YAJL_GET_DOUBLE(v);
    return 1;
}

/* Issuers of Entra ID tokens (prefix match; the tenant is not checked). */
static int issuer_ok(const char *iss)
{
    static const char *const prefixes[] = {
        "https://sts.windows.net/",      "https://login.microsoftonline.com/",
        "https://sts.microsoftonline.de/", "https://sts.chinacloudapi.cn/",
        "https://sts.windows-ppe.net",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(iss, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

/* Audiences of Azure Storage: the generic resource (URL or app id) or
 * https://ACCOUNT.table.<any suffix>[/] for this account. */
static int audience_ok(const char *aud, const char *account)
{
    if (strcmp(aud, "https://storage.azure.com") == 0 ||
        strcmp(aud, "https://storage.azure.com/") == 0 ||
        strcmp(aud, "e406a681-f3d4-42a8-90b6-c2b029497af1") == 0)
        return 1;
    size_t alen = strlen(account);
    if (strncmp(aud, "https://", 8) != 0 || strncmp(aud + 8, account, alen) != 0 ||
        strncmp(aud + 8 + alen, ".table.", 7) != 0)
        return 0;
    const char *host = aud + 8 + alen + 7;
    size_t hlen = strlen(host);
    if (hlen > 0 && host[hlen - 1] == '/')
        hlen--;
    return hlen > 0 && memchr(host, '/', hlen) == NULL;
}

/* Basic claim checks of a JWT "header.payload.signature". NULL when good,
 * else the reason. */
static const char *check_token(const struct auth_ctx *ctx, const struct request *req,
                               const char *account, const char *token, size_t len)
{
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', (size_t)(token + len - dot1 - 1)) : NULL;
    if (!dot1 || !dot2 || memchr(dot2 + 1, '.', (size_t)(token + len - dot2 - 1)))
        return "The token is not a JWT.";
    size_t plen = (size_t)(dot2 - dot1 - 1);
    if (plen == 0 || plen > BEARER_MAX_PAYLOAD)
        return "The token is not a JWT.";
    size_t jlen;
    char *json = b64url_decode(req->arena, dot1 + 1, plen, &jlen);
    if (!json || strlen(json) != jlen)
        return "The token is not a JWT.";
    char err[128];
    /* Nesting is bounded before yajl_tree recurses over it; claims are C
     * strings, so one holding "\u0000" would be cut short: refused. */
    if (jsonwalk_parse(NULL, NULL, json, jlen, JSONWALK_MAX_DEPTH, JSONWALK_NO_NUL, NULL, 0) !=
        JSONWALK_OK)
        return "The token is not a JWT.";
    yajl_val root = yajl_tree_parse(json, err, sizeof err);
    if (!root || !YAJL_IS_OBJECT(root)) {
        yajl_tree_free(root);
        return "The token is not a JWT.";
    }
    const char *why = NULL;
    double nbf, exp;
    const char *iss = claim_str(root, "iss"), *aud = claim_str(root, "aud");
    double now = (double)((auth_now(ctx) - TIMEFMT_UNIX_EPOCH_TICKS) / TIMEFMT_TICKS_PER_SECOND);
    if (!claim_num(root, "nbf", &nbf) || !claim_num(root, "exp", &exp) || !iss || !aud)
        why = "The token lacks a required claim.";
    else if (now < nbf)
        why = "Lifetime validation failed. The token is not yet valid.";
    else if (now > exp)
        why = "Lifetime validation failed. The token is expired.";
    else if (!issuer_ok(iss))
        why = "Invalid token issuer.";
    else if (!audience_ok(aud, account))
        why = "Invalid token audience.";
    yajl_tree_free(root);
    return why;
}

enum auth_status auth_bearer_verify(const struct auth_ctx *ctx, const struct request *req,
                                    const char *account, const char *token, size_t token_len,
                                    struct auth_result *out)
{
    if (!req->tls) {
        out->detail = "Authentication scheme Bearer is not allowed with HTTP.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_BEARER,
                           "a bearer token over plain HTTP (tokens need HTTPS, --tls-port)");
    }
    if (!ctx->bearer_basic)
        return auth_refuse(out,
                           auth_challenge(ctx, req, out,
                                          "This server does not accept bearer tokens."),
                           AUTH_WHY_BEARER, "bearer tokens are off (--oauth basic turns them on)");
    /* No x-ms-date / Date is needed: the SDKs send none with a token
     * credential, the service accepts such requests, and the token's own
     * nbf / exp are its time check (doc/protocol-notes.md, "Bearer
     * tokens"). A date that is sent is not looked at either: it is signed
     * by nothing. */
    if (!auth_find_account(ctx, account)) {
        out->detail = "The account of the request does not exist.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_UNKNOWN_ACCOUNT,
                           arena_sprintf(req->arena,
                                         "account '%s' is not configured (configured: %s)",
                                         account, auth_account_list(req->arena, ctx)));
    }
    const char *why = check_token(ctx, req, account, token, token_len);
    if (why)
        return auth_refuse(out, auth_challenge(ctx, req, out, why), AUTH_WHY_BEARER, why);
    out->scheme = AUTH_SCHEME_BEARER;
    out->perms = AUTH_P_ALL;
    out->rtypes = AUTH_RT_ALL;
    return AUTH_OK;
}
