/* sas.c - shared access signatures: account SAS (doc/protocol.md, Account SAS) and table
 * (service) SAS (doc/protocol.md, Table SAS), validated per doc/protocol.md, SAS checks: signature first, then
 * stored policy, time window, source IP, protocol, services. What the SAS
 * grants goes to auth_result; perm.c decides per operation. */
#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "auth/auth_int.h"
#include "core/timefmt.h"

/* The SAS query parameters, decoded; NULL when absent. */
struct sas {
    const char *sv, *ss, *srt, *sp, *st, *se, *sip, *spr, *ses, *sig;
    const char *tn, *spk, *srk, *epk, *erk, *si;
    size_t sig_len, spk_len, srk_len, epk_len, erk_len;
};

/* Looks a field up: 0 ok (present or absent), -1 when it is duplicated or
 * its escapes are malformed (the request then fails authentication). */
static int field(const struct authq *p, size_t n, const char *name, const char **v, size_t *len)
{
    int dups;
    const struct authq *q = authq_find(p, n, name, &dups);
    *v = NULL;
    if (len)
        *len = 0;
    if (!q)
        return 0;
    if (dups || !q->value)
        return -1;
    *v = q->value;
    if (len)
        *len = q->value_len;
    return 0;
}

static int gather(const struct authq *p, size_t n, struct sas *s)
{
    memset(s, 0, sizeof *s);
    return field(p, n, "sv", &s->sv, NULL) | field(p, n, "ss", &s->ss, NULL) |
           field(p, n, "srt", &s->srt, NULL) | field(p, n, "sp", &s->sp, NULL) |
           field(p, n, "st", &s->st, NULL) | field(p, n, "se", &s->se, NULL) |
           field(p, n, "sip", &s->sip, NULL) | field(p, n, "spr", &s->spr, NULL) |
           field(p, n, "ses", &s->ses, NULL) | field(p, n, "sig", &s->sig, &s->sig_len) |
           field(p, n, "tn", &s->tn, NULL) | field(p, n, "spk", &s->spk, &s->spk_len) |
           field(p, n, "srk", &s->srk, &s->srk_len) | field(p, n, "epk", &s->epk, &s->epk_len) |
           field(p, n, "erk", &s->erk, &s->erk_len) | field(p, n, "si", &s->si, NULL);
}

/* Appends v (or nothing when absent) and, when nl, a newline. */
static void put(struct buf *b, const char *v, int nl)
{
    if (v)
        buf_puts(b, v);
    if (nl)
        buf_putc(b, '\n');
}

/* doc/protocol.md, Account SAS: account SAS string-to-sign; ses joins from 2020-12-06. */
static void account_sts(struct buf *b, const char *account, const struct sas *s)
{
    put(b, account, 1);
    put(b, s->sp, 1);
    put(b, s->ss, 1);
    put(b, s->srt, 1);
    put(b, s->st, 1);
    put(b, s->se, 1);
    put(b, s->sip, 1);
    put(b, s->spr, 1);
    put(b, s->sv, 1);
    if (strcmp(s->sv, "2020-12-06") >= 0)
        put(b, s->ses, 1);
}

/* doc/protocol.md, Table SAS: table SAS string-to-sign for its three version eras. */
static void table_sts(struct buf *b, const char *account, const char *table, const struct sas *s)
{
    put(b, s->sp, 1);
    put(b, s->st, 1);
    put(b, s->se, 1);
    buf_puts(b, strcmp(s->sv, "2015-02-21") >= 0 ? "/table/" : "/");
    buf_puts(b, account);
    buf_putc(b, '/');
    for (const char *t = table; *t; t++)
        buf_putc(b, (char)tolower((unsigned char)*t));
    buf_putc(b, '\n');
    put(b, s->si, 1);
    if (strcmp(s->sv, "2015-04-05") >= 0) {
        put(b, s->sip, 1);
        put(b, s->spr, 1);
    }
    put(b, s->sv, 1);
    put(b, s->spk, 1);
    put(b, s->srk, 1);
    put(b, s->epk, 1);
    put(b, s->erk, 0);
}

/* Parses a SAS time: YYYY-MM-DD or the ISO forms timefmt_iso_parse takes
 * (doc/protocol.md, SAS checks). 0 or -1. */
static int sas_time(const char *v, int64_t *ticks)
{
    size_t n = strlen(v);
    if (n == 10) {
        char tmp[24];
        memcpy(tmp, v, 10);
        memcpy(tmp + 10, "T00:00Z", 8);
        return timefmt_iso_parse(tmp, 17, ticks) == 0 ? 0 : -1;
    }
    return timefmt_iso_parse(v, n, ticks) == 0 ? 0 : -1;
}

/* Maps permission letters to AUTH_P_* bits; letters outside `allowed` (and
 * not merely ignorable blob letters in `ignored`) make it -1. */
static int perm_bits(const char *v, const char *allowed, const char *ignored, unsigned *out)
{
    static const char letters[] = "raudlwcp";
    unsigned bits = 0;
    for (const char *c = v; *c; c++) {
        const char *pos = strchr(letters, *c);
        if (pos && strchr(allowed, *c))
            bits |= 1u << (pos - letters);
        else if (!strchr(ignored, *c))
            return -1;
    }
    *out = bits;
    return 0;
}

/* Resource types "sco" -> AUTH_RT_* bits, -1 on another letter. */
static int rtype_bits(const char *v, unsigned *out)
{
    unsigned bits = 0;
    for (const char *c = v; *c; c++) {
        if (*c == 's')
            bits |= AUTH_RT_SERVICE;
        else if (*c == 'c')
            bits |= AUTH_RT_CONTAINER;
        else if (*c == 'o')
            bits |= AUTH_RT_OBJECT;
        else
            return -1;
    }
    *out = bits;
    return 0;
}

/* An address as 16 bytes (IPv4 as ::ffff:a.b.c.d); brackets and a zone
 * suffix are ignored. 0 or -1. */
static int ip_parse(const char *s, size_t n, unsigned char out[16])
{
    char tmp[64];
    if (n > 0 && s[0] == '[') {
        s++;
        n--;
        const char *rb = memchr(s, ']', n);
        if (rb)
            n = (size_t)(rb - s);
    }
    const char *pct = memchr(s, '%', n);
    if (pct)
        n = (size_t)(pct - s);
    if (n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    unsigned char v4[4];
    if (inet_pton(AF_INET, tmp, v4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, v4, 4);
        return 0;
    }
    return inet_pton(AF_INET6, tmp, out) == 1 ? 0 : -1;
}

/* sip check: 1 inside, 0 outside, -1 when sip is malformed. */
static int ip_allowed(const char *sip, const char *peer)
{
    unsigned char lo[16], hi[16], ip[16];
    const char *dash = strchr(sip, '-');
    if (dash) {
        if (ip_parse(sip, (size_t)(dash - sip), lo) || ip_parse(dash + 1, strlen(dash + 1), hi))
            return -1;
    } else {
        if (ip_parse(sip, strlen(sip), lo))
            return -1;
        memcpy(hi, lo, 16);
    }
    if (!peer || ip_parse(peer, strlen(peer), ip))
        return 0;
    return memcmp(lo, ip, 16) <= 0 && memcmp(ip, hi, 16) <= 0;
}

/* RFC 1123 text of ticks, for the time-window message. */
static const char *rfc1123(struct arena *a, int64_t ticks)
{
    char tmp[32];
    int64_t t = ticks - TIMEFMT_UNIX_EPOCH_TICKS;
    int64_t secs = t / TIMEFMT_TICKS_PER_SECOND;
    if (t < 0 && t % TIMEFMT_TICKS_PER_SECOND)
        secs--; /* floor */
    timefmt_rfc1123_format(secs, tmp);
    return arena_strdup(a, tmp);
}

/* Signature check with both keys; sets the detail on mismatch. */
static enum auth_status check_sig(const struct auth_ctx *ctx, const struct account_cfg *acct,
                                  const struct request *req,
                                  const struct buf *sts, const struct sas *s,
                                  struct auth_result *out)
{
    const unsigned char *keys[2] = {acct->key1, acct->key2};
    size_t key_lens[2] = {acct->key1_len, acct->key2_len};
    for (int k = 0; k < 2; k++) {
        char mac[45];
        if (key_lens[k] == 0)
            continue;
        if (auth_hmac_b64(ctx->cache, keys[k], key_lens[k], sts->data, sts->len, mac) < 0)
            return auth_refuse(out, AUTH_UNAVAILABLE, AUTH_WHY_NO_CRYPTO,
                               "the SAS signature could not be checked: libcrypto could not "
                               "be loaded (the error log says why)");
        if (auth_mac_equal(mac, s->sig, s->sig_len))
            return AUTH_OK;
    }
    out->detail = arena_sprintf(req->arena, "Signature did not match. String to sign used was %s",
                                sts->data);
    out->sts = arena_strdup(req->arena, sts->data ? sts->data : "");
    return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_SIGNATURE,
                       arena_sprintf(req->arena,
                                     "%s SAS signature does not match the %s of account '%s'; "
                                     "check the key it was made with and its fields",
                                     s->ss || s->srt ? "account" : "table",
                                     acct->key2_len ? "two keys" : "key", acct->name));
}

/* The checks both kinds share after the signature: time window, source
 * IP, protocol (doc/protocol.md, SAS checks). */
static enum auth_status check_window(const struct auth_ctx *ctx, const struct request *req,
                                     int has_start, int64_t start, int64_t expiry, const char *sip,
                                     const char *spr, struct auth_result *out)
{
    int64_t now = auth_now(ctx);
    if ((has_start && now < start) || now >= expiry) {
        out->detail = arena_sprintf(req->arena,
                                    "Signature not valid in the specified time frame: Start [%s] - "
                                    "Expiry [%s] - Current [%s]",
                                    has_start ? rfc1123(req->arena, start) : "",
                                    rfc1123(req->arena, expiry), rfc1123(req->arena, now));
        if (now >= expiry)
            return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_EXPIRED,
                               arena_sprintf(req->arena,
                                             "the SAS expired (se) at %s; the server's time is "
                                             "%s",
                                             rfc1123(req->arena, expiry),
                                             rfc1123(req->arena, now)));
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_NOT_YET_VALID,
                           arena_sprintf(req->arena,
                                         "the SAS starts (st) at %s; the server's time is %s",
                                         rfc1123(req->arena, start), rfc1123(req->arena, now)));
    }
    if (sip) {
        int ok = ip_allowed(sip, req->peer_ip);
        if (ok < 0) {
            out->detail = "The sip parameter is not a valid IP address or range.";
            return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_MALFORMED,
                               "the SAS's sip is not an IP address or range");
        }
        if (!ok) {
            out->message = arena_sprintf(req->arena,
                                         "This request is not authorized to perform this "
                                         "operation using this source IP %s.",
                                         req->peer_ip);
            return auth_refuse(out, AUTH_SOURCE_IP_MISMATCH, AUTH_WHY_SAS_IP,
                               arena_sprintf(req->arena,
                                             "the client address %s is outside the SAS's sip "
                                             "'%.64s'",
                                             req->peer_ip, sip));
        }
    }
    if (spr) {
        if (strcmp(spr, "https") == 0) {
            if (!req->tls)
                return auth_refuse(out, AUTH_PROTOCOL_MISMATCH, AUTH_WHY_SAS_PROTOCOL,
                                   "the SAS allows HTTPS only (spr=https) and the request came "
                                   "over plain HTTP");
        } else if (strcmp(spr, "https,http") != 0 && strcmp(spr, "http,https") != 0) {
            out->detail = "The spr parameter must be https or https,http.";
            return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_MALFORMED,
                               "the SAS's spr is neither https nor https,http");
        }
    }
    return AUTH_OK;
}

/* sv must look like a version, be known, and be new enough for the kind. */
static int version_ok(const struct auth_ctx *ctx, const char *sv, const char *min)
{
    if (!auth_version_shape(sv) || strcmp(sv, min) < 0)
        return 0;
    return ctx->version_known ? ctx->version_known(sv) : 1;
}

/* Account SAS: doc/protocol.md, Account SAS. */
static enum auth_status verify_account(const struct auth_ctx *ctx, const struct request *req,
                                       const char *account, const struct account_cfg *acct,
                                       const struct sas *s, struct auth_result *out)
{
    if (!s->sv || !s->ss || !s->srt || !s->sp || !s->se || !s->sig) {
        out->detail = "A mandatory account SAS parameter (sv, ss, srt, sp, se, sig) is missing.";
        return AUTH_FAILED;
    }
    if (!version_ok(ctx, s->sv, "2015-04-05")) {
        out->detail = "The signed version (sv) is not supported.";
        return AUTH_FAILED;
    }
    struct buf sts;
    buf_init(&sts);
    account_sts(&sts, account, s);
    enum auth_status rc = check_sig(ctx, acct, req, &sts, s, out);
    buf_free(&sts);
    if (rc != AUTH_OK)
        return rc;

    struct sas_grant g;
    memset(&g, 0, sizeof g);
    if (perm_bits(s->sp, "rwdlacup", "xytfi", &g.perms) || rtype_bits(s->srt, &g.rtypes) ||
        strspn(s->ss, "bqtf") != strlen(s->ss) || (s->st && sas_time(s->st, &g.start)) ||
        sas_time(s->se, &g.expiry)) {
        out->detail = "A SAS parameter is not in the correct format.";
        return AUTH_FAILED;
    }
    g.has_start = s->st != NULL;
    g.sip = s->sip;
    g.spr = s->spr;
    g.sv = s->sv;
    g.table_service = strchr(s->ss, 't') != NULL;
    auth_sas_cache_put(ctx, account, acct, req->query, req->query_len, &g);
    return auth_sas_grant(ctx, req, &g, out);
}

enum auth_status auth_sas_grant(const struct auth_ctx *ctx, const struct request *req,
                                const struct sas_grant *g, struct auth_result *out)
{
    enum auth_status rc =
        check_window(ctx, req, g->has_start, g->start, g->expiry, g->sip, g->spr, out);
    if (rc != AUTH_OK)
        return rc;
    if (g->table_sas) {
        /* g may be the cache's: the result gets the request's own copies. */
        const struct auth_range *r = &g->range;
        out->scheme = AUTH_SCHEME_TABLE_SAS;
        out->perms = g->perms;
        out->rtypes = 0;
        out->sas_table = arena_strdup(req->arena, g->table);
        out->range.spk = r->spk ? arena_strndup(req->arena, r->spk, r->spk_len) : NULL;
        out->range.spk_len = r->spk_len;
        out->range.srk = r->srk ? arena_strndup(req->arena, r->srk, r->srk_len) : NULL;
        out->range.srk_len = r->srk_len;
        out->range.epk = r->epk ? arena_strndup(req->arena, r->epk, r->epk_len) : NULL;
        out->range.epk_len = r->epk_len;
        out->range.erk = r->erk ? arena_strndup(req->arena, r->erk, r->erk_len) : NULL;
        out->range.erk_len = r->erk_len;
        out->sas_version = arena_strdup(req->arena, g->sv);
        return AUTH_OK;
    }
    if (!g->table_service)
        return auth_refuse(out, AUTH_SERVICE_MISMATCH, AUTH_WHY_SAS_SERVICE,
                           "the account SAS's ss does not include t (the table service)");
    out->scheme = AUTH_SCHEME_ACCOUNT_SAS;
    out->perms = g->perms;
    out->rtypes = g->rtypes;
    out->sas_version = arena_strdup(req->arena, g->sv); /* g may be the cache's */
    return AUTH_OK;
}

/* Table SAS: doc/protocol.md, Table SAS, with the stored access policy of `si` (Stored access policies)
 * supplying what the URL leaves out. */
static enum auth_status verify_table(const struct auth_ctx *ctx, const struct request *req,
                                     const char *account, const struct account_cfg *acct,
                                     const struct auth_op *op, const struct sas *s,
                                     struct auth_result *out)
{
    const char *table = s->tn ? s->tn : (op ? op->table : NULL);
    if (!s->sv || !s->sig || !table || !*table) {
        out->detail = "A mandatory table SAS parameter (sv, tn, sig) is missing.";
        return AUTH_FAILED;
    }
    if (!version_ok(ctx, s->sv, "2012-02-12")) {
        out->detail = "The signed version (sv) is not supported.";
        return AUTH_FAILED;
    }
    if ((s->srk && !s->spk) || (s->erk && !s->epk)) {
        out->detail = "srk requires spk and erk requires epk.";
        return AUTH_FAILED;
    }
    struct buf sts;
    buf_init(&sts);
    table_sts(&sts, account, table, s);
    enum auth_status rc = check_sig(ctx, acct, req, &sts, s, out);
    buf_free(&sts);
    if (rc != AUTH_OK)
        return rc;

    /* Merge with the stored access policy. */
    const char *sp = s->sp;
    int has_start = 0, has_expiry = 0;
    int64_t start = 0, expiry = 0;
    struct auth_policy pol;
    memset(&pol, 0, sizeof pol);
    if (s->si) {
        if (!ctx->policy_lookup || !ctx->policy_lookup(ctx->policy_arg, account, table, s->si, &pol)) {
            out->detail = "The signed identifier (si) does not name a stored access policy of "
                          "the table.";
            return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_POLICY,
                               arena_sprintf(req->arena,
                                             "the SAS's si '%.64s' names no stored access policy "
                                             "of table '%.64s'",
                                             s->si, table));
        }
        if ((pol.has_perm && s->sp) || (pol.has_start && s->st) || (pol.has_expiry && s->se)) {
            out->detail = "A field is given both in the SAS and in its stored access policy.";
            return AUTH_FAILED;
        }
        if (pol.has_perm) {
            pol.perm[sizeof pol.perm - 1] = 0;
            sp = pol.perm;
        }
        if (pol.has_start) {
            has_start = 1;
            start = pol.start_ticks;
        }
        if (pol.has_expiry) {
            has_expiry = 1;
            expiry = pol.expiry_ticks;
        }
    }
    if (s->st) {
        if (sas_time(s->st, &start)) {
            out->detail = "The signed start (st) is not in the correct format.";
            return AUTH_FAILED;
        }
        has_start = 1;
    }
    if (s->se) {
        if (sas_time(s->se, &expiry)) {
            out->detail = "The signed expiry (se) is not in the correct format.";
            return AUTH_FAILED;
        }
        has_expiry = 1;
    }
    unsigned perms;
    if (!sp || !has_expiry || perm_bits(sp, "raud", "", &perms)) {
        out->detail = "The SAS (with its stored access policy) lacks a valid sp or se.";
        return AUTH_FAILED;
    }
    /* Before 2015-04-05 sip and spr are not signed, so they mean nothing. */
    int signed_net = strcmp(s->sv, "2015-04-05") >= 0;
    struct sas_grant g;
    memset(&g, 0, sizeof g);
    g.perms = perms;
    g.has_start = has_start;
    g.start = start;
    g.expiry = expiry;
    g.sip = signed_net ? s->sip : NULL;
    g.spr = signed_net ? s->spr : NULL;
    g.sv = s->sv;
    g.table_sas = 1;
    g.table = table;
    g.table_from_path = s->tn == NULL;
    g.range.spk = s->spk;
    g.range.spk_len = s->spk_len;
    g.range.srk = s->srk;
    g.range.srk_len = s->srk_len;
    g.range.epk = s->epk;
    g.range.epk_len = s->epk_len;
    g.range.erk = s->erk;
    g.range.erk_len = s->erk_len;
    /* A stored access policy can change or go: such a SAS is never kept. */
    if (!s->si)
        auth_sas_cache_put(ctx, account, acct, req->query, req->query_len, &g);
    return auth_sas_grant(ctx, req, &g, out);
}

/* Entry from auth_check(): a query with `sig`. An `ss` or `srt` makes it an
 * account SAS, anything else a table SAS. */
enum auth_status auth_sas_verify(const struct auth_ctx *ctx, const struct request *req,
                                 const char *account, const struct auth_op *op,
                                 const struct authq *params, size_t nparams,
                                 struct auth_result *out)
{
    struct sas s;
    if (gather(params, nparams, &s) != 0) {
        out->detail = "A SAS parameter is repeated or badly percent-encoded.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_SAS_MALFORMED,
                           "a SAS field is repeated or badly percent-encoded");
    }
    const struct account_cfg *acct = auth_find_account(ctx, account);
    if (!acct) {
        out->detail = "The account of the request does not exist.";
        return auth_refuse(out, AUTH_FAILED, AUTH_WHY_UNKNOWN_ACCOUNT,
                           arena_sprintf(req->arena,
                                         "account '%s' is not configured (configured: %s)",
                                         account, auth_account_list(req->arena, ctx)));
    }
    enum auth_status rc = s.ss || s.srt ? verify_account(ctx, req, account, acct, &s, out)
                                        : verify_table(ctx, req, account, acct, op, &s, out);
    /* The remaining refusals are malformed fields; their detail says which. */
    if (rc != AUTH_OK && out->why == AUTH_WHY_NONE)
        auth_refuse(out, rc, AUTH_WHY_SAS_MALFORMED, out->detail);
    return rc;
}
