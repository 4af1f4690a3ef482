/* auth_int.h - helpers shared by the files of auth/ (not a public API). */
#ifndef TABLED_AUTH_INT_H
#define TABLED_AUTH_INT_H
#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

#include "auth/auth.h"

/* One query parameter, percent-decoded ('+' kept as '+', as Azurite and the
 * SDKs' %2B encoding expect). value is NULL when the raw text had a bad
 * %-escape or decoded to a NUL byte. */
struct authq {
    const char *name;
    const char *value;
    size_t value_len;
};

/* Splits req's raw query on '&' and decodes every name and value into
 * arena memory. Never fails; bad pieces get value == NULL. */
void authq_parse(struct arena *a, const char *q, size_t n, struct authq **out, size_t *count);
/* The parameter named name (exact match) or NULL; *dups is set to the
 * number of further parameters with the same name. */
const struct authq *authq_find(const struct authq *p, size_t n, const char *name, int *dups);
/* Percent-decodes s (no '+' rewriting) into arena memory; NULL on a bad
 * escape or a decoded NUL. */
char *auth_pct_decode(struct arena *a, const char *s, size_t n, size_t *outlen);

/* Constant-time check that given[0..given_len) equals the 44-character
 * base64 MAC computed (lengths are not secret). */
int auth_mac_equal(const char computed[45], const char *given, size_t given_len);

/* Records why a request is refused (see struct auth_result) and returns s. */
static inline enum auth_status auth_refuse(struct auth_result *out, enum auth_status s,
                                           enum auth_why why, const char *text)
{
    out->why = why;
    out->why_text = text;
    return s;
}

/* "'a', 'b'": the configured account names (never keys) for log lines,
 * in arena memory. */
const char *auth_account_list(struct arena *a, const struct auth_ctx *ctx);

/* Current time in ticks (ctx->now_ticks or timefmt_now_ticks()). */
int64_t auth_now(const struct auth_ctx *ctx);

/* The account called name, or NULL. */
const struct account_cfg *auth_find_account(const struct auth_ctx *ctx, const char *name);

/* First header called name: its value and length (the value may hold a
 * NUL before value_len, which callers reject), or NULL. */
const char *auth_header(const struct request *req, const char *name, size_t *len);

/* 1 when v is "YYYY-MM-DD" (digits and dashes). */
int auth_version_shape(const char *v);

/* Checks the x-ms-date/Date of a SharedKey/SharedKeyLite request
 * (doc/protocol.md, Request dates); on failure sets out->detail and returns
 * AUTH_FAILED. */
enum auth_status auth_check_date(const struct auth_ctx *ctx, const struct request *req,
                                 struct auth_result *out);

/* The schemes, each filling out (scheme, rights, details). */
enum auth_status auth_sharedkey_verify(const struct auth_ctx *ctx, const struct request *req,
                                       const char *account, const struct auth_op *op, int lite,
                                       const char *cred, size_t cred_len, struct auth_result *out);
enum auth_status auth_sas_verify(const struct auth_ctx *ctx, const struct request *req,
                                 const char *account, const struct auth_op *op,
                                 const struct authq *params, size_t nparams,
                                 struct auth_result *out);
/* What an account SAS grants, as far as it follows from the query text,
 * the account's keys and the known versions (its signature checked, its
 * fields well-formed): the rest is checked per request. */
struct sas_grant {
    unsigned perms, rtypes;
    int has_start;
    int64_t start, expiry;
    const char *sip, *spr, *sv; /* NULL when absent (sv never is) */
    int table_service;          /* ss names the table service */
    /* A table SAS (no stored access policy: si is never cached) instead of
     * an account SAS: the table it is scoped to, whether that came from the
     * request's path (no tn), and its key range. */
    int table_sas;
    const char *table;
    int table_from_path;
    struct auth_range range;
};

/* The per-request checks of a SAS whose grant is g (time window, source IP,
 * protocol, and for an account SAS the service, doc/protocol.md, SAS checks), filling
 * out; the cached and the uncached path both end here. */
enum auth_status auth_sas_grant(const struct auth_ctx *ctx, const struct request *req,
                                const struct sas_grant *g, struct auth_result *out);
/* HMAC-SHA256 state of one key after its inner and outer pad blocks. */
struct hmac_pads {
    unsigned char key[64]; /* the key as HMAC uses it: hashed if longer than 64, zero-padded */
    SHA256_CTX inner, outer;
    int used;
};

/* One verified account or table SAS (sas_cache.c). */
#define SAS_CACHE_SLOTS 64
struct sas_entry {
    char *query; /* malloc'd raw query text, NULL when the slot is empty */
    size_t query_len;
    uint64_t hash;
    char account[sizeof ((struct account_cfg *)0)->name];
    unsigned char key1[CONFIG_MAX_KEY_BYTES], key2[CONFIG_MAX_KEY_BYTES];
    size_t key1_len, key2_len;
    int (*version_known)(const char *v);
    struct sas_grant grant; /* its strings point into strs and extra */
    char strs[3][64];
    char *extra; /* malloc'd: a table SAS's table and key-range bounds */
};

/* A few keys' pad states, so a signature costs two SHA-256 runs over the
 * message and one block, not OpenSSL 3's HMAC() fetch and setup (2.9 us,
 * against 0.3 us, per request). Accounts have two keys each; a full cache
 * is overwritten round-robin. */
#define HMAC_CACHE_SLOTS 16

struct auth_cache {
    struct hmac_pads hmac[HMAC_CACHE_SLOTS];
    unsigned hmac_next;
    struct sas_entry sas[SAS_CACHE_SLOTS];   /* direct-mapped by query hash */
};

/* The grant verified earlier for exactly this query text, account, the
 * account's current keys and (a table SAS without tn) op's table, or NULL
 * (sas_cache.c). */
const struct sas_grant *auth_sas_cache_find(const struct auth_ctx *ctx, const char *account,
                                            const struct auth_op *op, const char *query,
                                            size_t query_len);
/* Remembers g for the query text (a copy); quietly does nothing when the
 * query is empty or too long to keep. */
void auth_sas_cache_put(const struct auth_ctx *ctx, const char *account,
                        const struct account_cfg *acct, const char *query, size_t query_len,
                        const struct sas_grant *g);

enum auth_status auth_bearer_verify(const struct auth_ctx *ctx, const struct request *req,
                                    const char *account, const char *token, size_t token_len,
                                    struct auth_result *out);

/* Sets out up for the 401 Bearer challenge; returns
 * AUTH_INVALID_INFO. error_description may be NULL. */
enum auth_status auth_challenge(const struct auth_ctx *ctx, const struct request *req,
                                struct auth_result *out, const char *error_description);

#endif
