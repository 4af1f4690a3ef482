/* auth.h - who is calling, and may they do this? (doc/protocol.md, Authentication)
 *
 * The auth module is a set of pure functions over a parsed request: it never
 * touches a socket, a backend or the clock directly (time comes from
 * auth_ctx.now_ticks, stored access policies from auth_ctx.policy_lookup).
 *
 * How the protocol layer uses it:
 *
 *   1. Route the request, fill a struct auth_op (the operation's needs, addressed
 *      table, keys when the URL names them, secondary endpoint or not).
 *   2. Call auth_check(). It picks the scheme (Authorization header first;
 *      otherwise a SAS when the query has `sig`; otherwise anonymous),
 *      authenticates (signature, date, SAS time window, IP, protocol) and
 *      authorizes the operation (permissions, resource types, table name,
 *      key range when op->pk/rk are known, writes on the secondary).
 *      AUTH_OK means go on; anything else is a refusal, which the protocol
 *      layer turns into its Table error (terr_from_auth, once), decorated
 *      with auth_result.http_status / .message / .detail /
 *      .www_authenticate when they are set.
 *   3. When keys are only known later (Insert Entity: from the body), or for
 *      every sub-operation of a $batch, call auth_authorize() with a filled
 *      auth_op and the auth_result of step 2.
 *   4. Queries under a table SAS with a key range: return only entities for
 *      which auth_range_contains() is true (the range is in result->range).
 *
 * Ownership: strings an auth_result points to live in req->arena (or are
 * static); nothing needs freeing. */
#ifndef TABLED_AUTH_H
#define TABLED_AUTH_H
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/account.h"
#include "core/http.h"

/* Largest clock skew of a SharedKey/SharedKeyLite date (doc/protocol.md, Request dates); a
 * Bearer request needs no date (doc/protocol-notes.md). */
#define AUTH_MAX_SKEW_SECONDS (15 * 60)
/* Version from which an anonymous request gets the 401 Bearer challenge
 * instead of 403 AuthenticationFailed (doc/protocol.md, Bearer tokens). */
#define AUTH_CHALLENGE_VERSION "2020-12-06"
/* Tenant named in the WWW-Authenticate challenge when ctx->tenant_id is NULL. */
#define AUTH_DEFAULT_TENANT "common"

/* What auth_check() and auth_authorize() answer. Each refusal stands for
 * one storage error code (named beside it), which codec/errors.c's
 * terr_from_auth() gives it; auth never names protocol's codes. */
enum auth_status {
    AUTH_OK = 0,
    AUTH_FAILED,                  /* AuthenticationFailed (403) */
    AUTH_INVALID_INFO,            /* InvalidAuthenticationInfo (400; 401 with
                                   * the Bearer challenge, see http_status) */
    AUTH_FAILURE,                 /* AuthorizationFailure (403) */
    AUTH_PERMISSION_MISMATCH,     /* AuthorizationPermissionMismatch (403) */
    AUTH_RESOURCE_TYPE_MISMATCH,  /* AuthorizationResourceTypeMismatch (403) */
    AUTH_SERVICE_MISMATCH,        /* AuthorizationServiceMismatch (403) */
    AUTH_SOURCE_IP_MISMATCH,      /* AuthorizationSourceIPMismatch (403) */
    AUTH_PROTOCOL_MISMATCH,       /* AuthorizationProtocolMismatch (403) */
    AUTH_SECONDARY_WRITE,         /* InsufficientAccountPermissions (403):
                                   * a write on the secondary endpoint */
    AUTH_UNAVAILABLE,             /* InternalError (500): a signature could
                                   * not be checked (libcrypto missing) */
    AUTH__COUNT
};

/* What one operation needs to be authorized. The protocol layer keeps one
 * in each operation's row (protocol/optable.c), so an operation's rights
 * live beside everything else about it; batch sub-operations use their
 * own operation's. A zero struct needs nothing from a SAS that a SAS can
 * give: every SAS is refused it. */
struct auth_need {
    const char *name;        /* the REST API's name of the operation, for
                                refusal explanations ("QueryTables") */
    int open;                /* answered without authentication (CORS
                                preflight): never refused */
    int write;               /* changes state: refused on the secondary */
    /* account SAS */
    int acct_denied;         /* never through an account SAS */
    unsigned rt_any;         /* srt must hold one of these (AUTH_RT_*) */
    unsigned acct_all;       /* sp must hold all of these (AUTH_P_*) ... */
    unsigned acct_any;       /* ... and one of these (when not 0) */
    /* table SAS */
    int table_denied;        /* never through a table SAS */
    unsigned table_all;      /* sp must hold all of these ... */
    unsigned table_any;      /* ... and one of these (when not 0) */
};

/* The operation descriptor the protocol layer fills. */
struct auth_op {
    const struct auth_need *need;   /* the operation's (NULL: refused) */
    /* Addressed table name, percent-decoded, as in the URL (any case), or
     * NULL when the operation names none (service operations, Query Tables,
     * Create Table, the $batch envelope). For Delete Table: the T of
     * /Tables('T'). Used to check a table SAS's tn. */
    const char *table;
    /* Entity keys (decoded) when known: from the URL for point operations,
     * from the body for inserts and batch sub-operations. pk == NULL means
     * "not known yet": the key-range check is then skipped and the caller
     * must call auth_authorize() again once they are known. */
    const char *pk;
    size_t pk_len;
    const char *rk;               /* may be NULL only when pk is NULL */
    size_t rk_len;
    int secondary;                /* request came to ACCOUNT-secondary */
};

/* How the request was authenticated. */
enum auth_scheme {
    AUTH_SCHEME_NONE = 0,         /* verification off (--auth off): full access */
    AUTH_SCHEME_ANONYMOUS,        /* preflight only */
    AUTH_SCHEME_SHAREDKEY,
    AUTH_SCHEME_SHAREDKEYLITE,
    AUTH_SCHEME_BEARER,
    AUTH_SCHEME_ACCOUNT_SAS,
    AUTH_SCHEME_TABLE_SAS,
};

/* SAS permission letters (bits of auth_result.perms). */
#define AUTH_P_READ    0x01u      /* r */
#define AUTH_P_ADD     0x02u      /* a */
#define AUTH_P_UPDATE  0x04u      /* u */
#define AUTH_P_DELETE  0x08u      /* d */
#define AUTH_P_LIST    0x10u      /* l (account SAS) */
#define AUTH_P_WRITE   0x20u      /* w (account SAS) */
#define AUTH_P_CREATE  0x40u      /* c (account SAS) */
#define AUTH_P_PROCESS 0x80u      /* p (account SAS; unused by tables) */
#define AUTH_P_ALL     0xFFu

/* Account SAS resource types (bits of auth_result.rtypes). */
#define AUTH_RT_SERVICE   0x1u    /* s */
#define AUTH_RT_CONTAINER 0x2u    /* c: tables */
#define AUTH_RT_OBJECT    0x4u    /* o: entities */
#define AUTH_RT_ALL       0x7u

/* Why a request was refused, for the server's diagnostic log (never on
 * the wire). Each reason is one rate-limit key of that log. */
enum auth_why {
    AUTH_WHY_NONE = 0,
    AUTH_WHY_UNKNOWN_ACCOUNT,      /* the account is not configured */
    AUTH_WHY_NO_ACCOUNT,           /* the path names no account (path-style) */
    AUTH_WHY_NO_CREDENTIALS,       /* no Authorization header and no SAS */
    AUTH_WHY_MALFORMED_HEADER,     /* Authorization header not "SCHEME cred" */
    AUTH_WHY_ACCOUNT_MISMATCH,     /* header signs for another account */
    AUTH_WHY_SIGNATURE,            /* SharedKey / SharedKeyLite MAC differs */
    AUTH_WHY_DATE,                 /* x-ms-date / Date missing or malformed */
    AUTH_WHY_CLOCK_SKEW,           /* date more than 15 minutes off */
    AUTH_WHY_SAS_MALFORMED,        /* a SAS field missing, repeated, bad */
    AUTH_WHY_SAS_SIGNATURE,        /* SAS signature differs */
    AUTH_WHY_SAS_EXPIRED,          /* now >= se */
    AUTH_WHY_SAS_NOT_YET_VALID,    /* now < st */
    AUTH_WHY_SAS_POLICY,           /* si names no stored access policy */
    AUTH_WHY_SAS_IP,               /* client address outside sip */
    AUTH_WHY_SAS_PROTOCOL,         /* spr=https over plain HTTP */
    AUTH_WHY_SAS_SERVICE,          /* ss lacks the table service */
    AUTH_WHY_SAS_PERMISSION,       /* sp lacks what the operation needs */
    AUTH_WHY_SAS_RESOURCE_TYPE,    /* srt lacks what the operation needs */
    AUTH_WHY_SAS_SCOPE,            /* table SAS: other table, other kind of
                                    * operation, or key outside its range */
    AUTH_WHY_BEARER,               /* bearer token refused */
    AUTH_WHY_SECONDARY_WRITE,      /* write on the secondary endpoint */
    AUTH_WHY_NO_CRYPTO,            /* libcrypto could not be loaded */
    AUTH_WHY__COUNT
};

/* A short phrase for reason w ("signature mismatch"), for log lines. */
const char *auth_why_name(enum auth_why w);

/* A table SAS key range (doc/protocol.md, Table SAS). Absent bounds are NULL (open). */
struct auth_range {
    const char *spk, *srk;        /* start PartitionKey / RowKey (inclusive) */
    size_t spk_len, srk_len;
    const char *epk, *erk;        /* end PartitionKey / RowKey (inclusive) */
    size_t epk_len, erk_len;
};

/* What auth_check() learned. Filled on success and on failure. */
struct auth_result {
    enum auth_scheme scheme;
    /* Granted rights. Owner schemes (NONE, SHAREDKEY*, BEARER) get
     * AUTH_P_ALL / AUTH_RT_ALL; SAS schemes get what the SAS (or its stored
     * policy) grants. */
    unsigned perms;
    unsigned rtypes;
    /* Table SAS: the table it is scoped to (tn as sent, else the addressed
     * table), arena memory; NULL otherwise. */
    const char *sas_table;
    /* Table SAS key range (all NULL when unrestricted). */
    struct auth_range range;
    /* SAS: the signed version sv (for doc/protocol.md, Service versions: the effective version
     * when neither x-ms-version nor api-version is sent); else NULL. */
    const char *sas_version;
    /* Error decoration, set only on failure:
     *  http_status: 0 = the status of the status's error code; 401 for the
     *               Bearer challenge (AUTH_INVALID_INFO).
     *  www_authenticate: value of a WWW-Authenticate header to send, or NULL.
     *  message: replacement for the error code's message when the service
     *           quotes data in it (the source IP), or NULL.
     *  detail:  the AuthenticationErrorDetail text of the XML error body
     *           (string to sign, time window, date problem), or NULL.
     * All are plain text; the caller escapes them for XML/JSON. */
    int http_status;
    const char *www_authenticate;
    const char *message;
    const char *detail;
    /* Diagnostics for the server's log, set on failure: the reason, a
     * plain-text explanation (never a key or a signature, arena or
     * static), and the string to sign the server computed (SharedKey and
     * SAS signature mismatches), or NULL. */
    enum auth_why why;
    const char *why_text;
    const char *sts;
};

/* A stored access policy (doc/protocol.md, Stored access policies) as the policy_lookup callback returns
 * it. Absent fields have has_* = 0. */
struct auth_policy {
    int has_start;
    int64_t start_ticks;          /* 100 ns ticks since 0001-01-01 (core/timefmt.h) */
    int has_expiry;
    int64_t expiry_ticks;
    int has_perm;
    char perm[8];                 /* NUL-terminated subset of "raud" */
};

/* Configuration of the checks; one per server, read-only while requests
 * run. Zero-initialise, then set accounts (everything else has defaults). */
struct auth_ctx {
    const struct account_cfg *accounts;  /* the configured accounts */
    size_t naccounts;
    int disabled;                 /* 1: --auth off; everything is allowed */
    int no_skew_check;            /* 1: skip the 15-minute date check */
    int bearer_basic;             /* 1: accept unsigned JWTs whose aud, iss,
                                   * nbf, exp look right (HTTPS only); 0:
                                   * refuse every Bearer token (default) */
    const char *tenant_id;        /* for the challenge; NULL: AUTH_DEFAULT_TENANT */
    /* Current time in 100 ns ticks since 0001-01-01 (core/timefmt.h); NULL:
     * timefmt_now_ticks(). */
    int64_t (*now_ticks)(void *arg);
    void *now_arg;
    /* Stored access policy `id` of `table` (as the SAS names it, any case)
     * in `account`: fill *out and return 1, or return 0 when there is no
     * such table or policy. NULL: every `si` is unknown. */
    int (*policy_lookup)(void *arg, const char *account, const char *table, const char *id,
                         struct auth_policy *out);
    void *policy_arg;
    /* 1 when v (NUL-terminated) is a service version the server knows
     * (doc/protocol.md, Service versions); NULL: any well-formed YYYY-MM-DD is accepted. */
    int (*version_known)(const char *v);
    /* What this context has verified or computed before (account SAS
     * grants, HMAC key states), kept by the one who made the context
     * (auth_cache_new); NULL: nothing is kept, every request is verified
     * from scratch. Not shared between threads. */
    struct auth_cache *cache;
};

/* An empty cache for an auth_ctx (aborts when out of memory). */
struct auth_cache *auth_cache_new(void);
/* Frees it (NULL is fine). */
void auth_cache_free(struct auth_cache *c);

/* Authenticates req for `account` (the primary account name, after the
 * router stripped any "-secondary" suffix) and authorizes op. Fills *out
 * (always) and returns AUTH_OK or the refusal:
 *   AUTH_FAILED                      bad/unknown signature or account,
 *                                    missing/bad/skewed date, bad SAS field,
 *                                    SAS outside its time window, unknown si
 *   AUTH_INVALID_INFO                malformed Authorization header (400), or
 *                                    the Bearer challenge (http_status 401)
 *   AUTH_FAILURE                     table SAS on another table, on a table/
 *                                    ACL/service operation, key outside range
 *   AUTH_PERMISSION_MISMATCH / RESOURCE_TYPE_MISMATCH /
 *   SERVICE_MISMATCH / PROTOCOL_MISMATCH / SOURCE_IP_MISMATCH   (doc/protocol.md, SAS checks)
 *   AUTH_SECONDARY_WRITE             write on the secondary endpoint
 * SharedKey signs req->path exactly as received (doc/protocol.md, SharedKey); the same path
 * with its percent-encoding normalised is tried too. req->arena must be set:
 * scratch strings and the result's strings are allocated there. */
enum auth_status auth_check(const struct auth_ctx *ctx, const struct request *req,
                            const char *account, const struct auth_op *op, struct auth_result *out);

/* Authorizes one more operation under an already authenticated result (a
 * batch sub-operation, or an insert once its keys are known). Same codes as
 * the authorization part of auth_check(). */
enum auth_status auth_authorize(const struct auth_result *res, const struct auth_op *op);

/* 1 when (pk, rk) lies inside r (ordinal UTF-16 order, doc/protocol.md, Table SAS), else 0.
 * An all-NULL range contains everything. */
int auth_range_contains(const struct auth_range *r, const char *pk, size_t pk_len, const char *rk,
                        size_t rk_len);
/* 1 when r restricts anything. */
int auth_range_active(const struct auth_range *r);
/* Ordinal comparison of two UTF-8 keys in UTF-16 code-unit order: <0, 0, >0. */
int auth_key_compare(const char *a, size_t a_len, const char *b, size_t b_len);

/* Explains a refusal s of auth_authorize(res, op) for the log: sets
 * *why and returns a text (arena memory or static) naming what the
 * operation needs and what the credentials grant. */
const char *auth_authorize_explain(struct arena *a, const struct auth_result *res,
                                   const struct auth_op *op, enum auth_status s,
                                   enum auth_why *why);


/* Lower-level pieces, exposed for the protocol layer's error details and
 * for tests. */

/* Appends the SharedKey (lite = 0) or SharedKeyLite (lite = 1) string to
 * sign of req for account name `account` and canonical path `path`
 * (normally req->path) to b (doc/protocol.md, SharedKey; SharedKeyLite). */
void auth_sharedkey_string_to_sign(struct buf *b, const struct request *req, const char *account,
                                   const char *path, size_t path_len, int lite);
/* Base64(HMAC-SHA256(key, msg)) into out (>= 45 bytes, NUL-terminated).
 * Returns 0, or -1 when libcrypto cannot be loaded (logged once; the
 * request is answered AUTH_UNAVAILABLE). */
int auth_hmac_b64(struct auth_cache *cache, const unsigned char *key, size_t key_len,
                  const char *msg, size_t msg_len, char out[45]);

#endif
