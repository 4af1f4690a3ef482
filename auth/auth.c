/* auth.c - auth_check(): picks the scheme of a request (doc/protocol.md, Choosing the scheme:
 * Authorization header, else SAS, else anonymous), runs its verification
 * and then authorizes the operation. */
#include <string.h>
#include <strings.h>

#include "auth/auth_int.h"

/* The 401 answer whose WWW-Authenticate header lets SDKs discover the
 * tenant (doc/protocol.md, Bearer tokens). */
enum auth_status auth_challenge(const struct auth_ctx *ctx, const struct request *req,
                                struct auth_result *out, const char *error_description)
{
    const char *tenant = ctx->tenant_id ? ctx->tenant_id : AUTH_DEFAULT_TENANT;
    out->http_status = 401;
    out->message = "Server failed to authenticate the request. Please refer to the information in "
                   "the www-authenticate header.";
    if (error_description) {
        out->www_authenticate =
            arena_sprintf(req->arena,
                          "Bearer authorization_uri=https://login.microsoftonline.com/%s/oauth2/"
                          "authorize resource_id=https://storage.azure.com error=\"invalid_token\" "
                          "error_description=\"%s\"",
                          tenant, error_description);
        out->detail = error_description;
    } else {
        out->www_authenticate =
            arena_sprintf(req->arena,
                          "Bearer authorization_uri=https://login.microsoftonline.com/%s/oauth2/"
                          "authorize resource_id=https://storage.azure.com",
                          tenant);
    }
    return AUTH_INVALID_INFO;
}

/* No credentials at all: 401 + challenge from 2020-12-06 on (also when no
 * version is sent: the newest applies), 403 before (doc/protocol.md, Bearer tokens). */
static enum auth_status anonymous(const struct auth_ctx *ctx, const struct request *req,
                                  const struct authq *params, size_t nparams,
                                  struct auth_result *out)
{
    const char *v = auth_header(req, "x-ms-version", NULL);
    if (!v) {
        const struct authq *q = authq_find(params, nparams, "api-version", NULL);
        v = q ? q->value : NULL;
    }
    const char *why = "the request has no Authorization header and no SAS (sig) in its query";
    if (v && auth_version_shape(v) && strcmp(v, AUTH_CHALLENGE_VERSION) < 0) {
        out->detail = "No credentials were supplied.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_NO_CREDENTIALS, why);
    }
    return auth_refuse(out, auth_challenge(ctx, req, out, NULL), AUTH_WHY_NO_CREDENTIALS, why);
}

/* Splits "SCHEME credentials" and runs the scheme. Anything that is not
 * one well-formed header of a known scheme is InvalidAuthenticationInfo. */
static enum auth_status from_header(const struct auth_ctx *ctx, const struct request *req,
                                    const char *account, const struct auth_op *op,
                                    const char *value, size_t len, struct auth_result *out)
{
    if (request_header_count(req, "Authorization") != 1)
        return auth_refuse(out, AUTH_INVALID_INFO, AUTH_WHY_MALFORMED_HEADER,
                           "the request has more than one Authorization header");
    if (strlen(value) != len)
        return auth_refuse(out, AUTH_INVALID_INFO, AUTH_WHY_MALFORMED_HEADER,
                           "the Authorization header holds a NUL byte");
    size_t i = 0;
    while (i < len && (value[i] == ' ' || value[i] == '\t'))
        i++;
    size_t scheme_start = i;
    while (i < len && value[i] != ' ' && value[i] != '\t')
        i++;
    size_t scheme_len = i - scheme_start;
    const char *scheme = value + scheme_start;
    while (i < len && (value[i] == ' ' || value[i] == '\t'))
        i++;
    size_t end = len;
    while (end > i && (value[end - 1] == ' ' || value[end - 1] == '\t'))
        end--;
    const char *cred = value + i;
    size_t cred_len = end - i;
    if (cred_len == 0)
        return auth_refuse(out, AUTH_INVALID_INFO, AUTH_WHY_MALFORMED_HEADER,
                           "the Authorization header has a scheme but no credentials");

    if (scheme_len == 9 && strncasecmp(scheme, "SharedKey", 9) == 0)
        return auth_sharedkey_verify(ctx, req, account, op, 0, cred, cred_len, out);
    if (scheme_len == 13 && strncasecmp(scheme, "SharedKeyLite", 13) == 0)
        return auth_sharedkey_verify(ctx, req, account, op, 1, cred, cred_len, out);
    if (scheme_len == 6 && strncasecmp(scheme, "Bearer", 6) == 0)
        return auth_bearer_verify(ctx, req, account, cred, cred_len, out);
    return auth_refuse(out, AUTH_INVALID_INFO, AUTH_WHY_MALFORMED_HEADER,
                       arena_sprintf(req->arena,
                                     "the Authorization scheme '%.*s' is not SharedKey, "
                                     "SharedKeyLite or Bearer",
                                     (int)(scheme_len > 32 ? 32 : scheme_len), scheme));
}

enum auth_status auth_check(const struct auth_ctx *ctx, const struct request *req,
                            const char *account, const struct auth_op *op, struct auth_result *out)
{
    memset(out, 0, sizeof *out);
    if (op->need && op->need->open) {
        out->scheme = AUTH_SCHEME_ANONYMOUS;
        return AUTH_OK;
    }
    if (ctx->disabled) {
        out->scheme = AUTH_SCHEME_NONE;
        out->perms = AUTH_P_ALL;
        out->rtypes = AUTH_RT_ALL;
        return auth_authorize(out, op);
    }
    if (!account)
        account = "";

    enum auth_status rc;
    const struct sas_grant *grant;
    size_t len = 0;
    const char *authz = auth_header(req, "Authorization", &len);
    if (authz) {
        rc = from_header(ctx, req, account, op, authz, len, out);
    } else if ((grant = auth_sas_cache_find(ctx, account, op, req->query, req->query_len))) {
        rc = auth_sas_grant(ctx, req, grant, out);
    } else {
        struct authq *params;
        size_t nparams;
        authq_parse(req->arena, req->query ? req->query : "", req->query ? req->query_len : 0,
                    &params, &nparams);
        if (authq_find(params, nparams, "sig", NULL))
            rc = auth_sas_verify(ctx, req, account, op, params, nparams, out);
        else
            return anonymous(ctx, req, params, nparams, out);
    }
    if (rc != AUTH_OK)
        return rc;
    rc = auth_authorize(out, op);
    if (rc != AUTH_OK)
        out->why_text = auth_authorize_explain(req->arena, out, op, rc, &out->why);
    return rc;
}

const char *auth_why_name(enum auth_why w)
{
    static const char *const names[AUTH_WHY__COUNT] = {
        [AUTH_WHY_NONE] = "refused",
        [AUTH_WHY_UNKNOWN_ACCOUNT] = "account not configured",
        [AUTH_WHY_NO_ACCOUNT] = "no account in the path",
        [AUTH_WHY_NO_CREDENTIALS] = "no credentials",
        [AUTH_WHY_MALFORMED_HEADER] = "malformed Authorization header",
        [AUTH_WHY_ACCOUNT_MISMATCH] = "account mismatch",
        [AUTH_WHY_SIGNATURE] = "signature mismatch",
        [AUTH_WHY_DATE] = "missing or malformed date",
        [AUTH_WHY_CLOCK_SKEW] = "clock skew",
        [AUTH_WHY_SAS_MALFORMED] = "malformed SAS",
        [AUTH_WHY_SAS_SIGNATURE] = "SAS signature mismatch",
        [AUTH_WHY_SAS_EXPIRED] = "SAS expired",
        [AUTH_WHY_SAS_NOT_YET_VALID] = "SAS not yet valid",
        [AUTH_WHY_SAS_POLICY] = "SAS stored access policy not found",
        [AUTH_WHY_SAS_IP] = "SAS source IP mismatch",
        [AUTH_WHY_SAS_PROTOCOL] = "SAS protocol mismatch",
        [AUTH_WHY_SAS_SERVICE] = "SAS service mismatch",
        [AUTH_WHY_SAS_PERMISSION] = "SAS permission missing",
        [AUTH_WHY_SAS_RESOURCE_TYPE] = "SAS resource type missing",
        [AUTH_WHY_SAS_SCOPE] = "outside the table SAS's scope",
        [AUTH_WHY_BEARER] = "bearer token refused",
        [AUTH_WHY_SECONDARY_WRITE] = "write on the secondary endpoint",
        [AUTH_WHY_NO_CRYPTO] = "signature not checked: libcrypto could not be loaded",
    };
    return (unsigned)w < AUTH_WHY__COUNT && names[w] ? names[w] : "refused";
}
