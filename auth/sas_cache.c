/* sas_cache.c - account and table SAS query strings whose signature and
 * fields have been verified, so that a client replaying one SAS (the usual
 * case: an SDK holds one SAS URL) costs a hash and a compare instead of
 * parsing, percent-decoding and HMAC-SHA256 per request.
 *
 * What is kept is only what follows from the query text, the account's
 * keys and the known versions alone (struct sas_grant); the time window,
 * source IP, protocol and service are checked on every request by
 * auth_sas_grant(), the same code the uncached path runs. An entry is used
 * only when the account name, both keys and version_known are the same as
 * when it was verified, so a changed key never verifies an old signature.
 * A table SAS without tn was signed for the table of the request's path, so
 * its entry is used only for that same table; one with a stored access
 * policy (si) is never kept, since the policy can change under it. Only
 * successes are kept: a failed verification leaves the slot alone.
 * The entries live in the auth_ctx's cache (struct auth_cache, kept by the
 * service); single-threaded, like the loop that calls it; fixed size,
 * direct-mapped by a hash of the query. */
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"
#include "core/texthash.h"

#define SAS_CACHE_MAX_QUERY 2048

/* Whether e was verified for this account, its current keys and ctx's
 * version list. */
static int same_account(const struct sas_entry *e, const struct auth_ctx *ctx,
                        const char *account, const struct account_cfg *acct)
{
    return strcmp(e->account, account) == 0 && e->version_known == ctx->version_known &&
           e->key1_len == acct->key1_len && e->key2_len == acct->key2_len &&
           memcmp(e->key1, acct->key1, acct->key1_len) == 0 &&
           memcmp(e->key2, acct->key2, acct->key2_len) == 0;
}

const struct sas_grant *auth_sas_cache_find(const struct auth_ctx *ctx, const char *account,
                                            const struct auth_op *op, const char *query,
                                            size_t query_len)
{
    if (query_len == 0 || query_len > SAS_CACHE_MAX_QUERY)
        return NULL;
    if (!ctx->cache)
        return NULL;
    uint64_t h = texthash(query, query_len);
    const struct sas_entry *e = &ctx->cache->sas[h % SAS_CACHE_SLOTS];
    if (!e->query || e->hash != h || e->query_len != query_len ||
        memcmp(e->query, query, query_len) != 0)
        return NULL;
    const struct account_cfg *acct = auth_find_account(ctx, account);
    if (!acct || !same_account(e, ctx, account, acct))
        return NULL;
    if (e->grant.table_from_path &&
        (!op || !op->table || strcmp(op->table, e->grant.table) != 0))
        return NULL;
    return &e->grant;
}

/* Copies s into dst (64 bytes); 0, or -1 when it does not fit. */
static int keep(char dst[64], const char *s, const char **out)
{
    if (!s) {
        *out = NULL;
        return 0;
    }
    size_t n = strlen(s);
    if (n >= 64)
        return -1;
    memcpy(dst, s, n + 1);
    *out = dst;
    return 0;
}

/* Copies n bytes of s (NULL stays NULL) NUL-terminated to *at; returns
 * the copy. */
static const char *put_str(char **at, const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *d = *at;
    memcpy(d, s, n);
    d[n] = 0;
    *at = d + n + 1;
    return d;
}

/* A malloc'd copy of a table SAS's table and key range into e (its grant
 * pointing at it); 0, or -1 when out of memory. */
static int keep_table(struct sas_entry *e, const struct sas_grant *g)
{
    const struct auth_range *r = &g->range;
    size_t tlen = strlen(g->table);
    char *x = malloc(tlen + r->spk_len + r->srk_len + r->epk_len + r->erk_len + 5);
    if (!x)
        return -1;
    e->extra = x;
    e->grant.table = put_str(&x, g->table, tlen);
    e->grant.range.spk = put_str(&x, r->spk, r->spk_len);
    e->grant.range.srk = put_str(&x, r->srk, r->srk_len);
    e->grant.range.epk = put_str(&x, r->epk, r->epk_len);
    e->grant.range.erk = put_str(&x, r->erk, r->erk_len);
    return 0;
}

void auth_sas_cache_put(const struct auth_ctx *ctx, const char *account,
                        const struct account_cfg *acct, const char *query, size_t query_len,
                        const struct sas_grant *g)
{
    if (!ctx->cache || query_len == 0 || query_len > SAS_CACHE_MAX_QUERY ||
        strlen(account) >= sizeof ctx->cache->sas[0].account)
        return;
    uint64_t h = texthash(query, query_len);
    struct sas_entry *e = &ctx->cache->sas[h % SAS_CACHE_SLOTS];
    char *copy = malloc(query_len);
    if (!copy)
        return;
    free(e->query);
    e->query = NULL;
    free(e->extra);
    e->extra = NULL;
    e->grant = *g;
    if (keep(e->strs[0], g->sip, &e->grant.sip) || keep(e->strs[1], g->spr, &e->grant.spr) ||
        keep(e->strs[2], g->sv, &e->grant.sv) || (g->table_sas && keep_table(e, g))) {
        free(copy);
        return;
    }
    memcpy(copy, query, query_len);
    e->query = copy;
    e->query_len = query_len;
    e->hash = h;
    strcpy(e->account, account);
    memcpy(e->key1, acct->key1, acct->key1_len);
    memcpy(e->key2, acct->key2, acct->key2_len);
    e->key1_len = acct->key1_len;
    e->key2_len = acct->key2_len;
    e->version_known = ctx->version_known;
}
