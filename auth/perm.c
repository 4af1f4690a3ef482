/* perm.c - the permission model: a SAS's letters and resource types
 * against what an operation needs (struct auth_need, kept in the
 * operation's row by protocol/optable.c; doc/protocol.md, Account SAS; Table SAS), table SAS
 * key ranges, and the read-only secondary endpoint (doc/protocol.md, Account key rights). */
#include <string.h>
#include <strings.h>

#include "auth/auth.h"
#include "core/arena.h"

/* One byte of a UTF-8 key in UTF-16 order: the lead bytes of U+E000..
 * U+FFFF (0xEE, 0xEF) sort after those of supplementary characters
 * (0xF0..0xF4), whose UTF-16 surrogates are 0xD800..0xDFFF. */
static unsigned order_byte(unsigned char c)
{
    return c == 0xEE ? 0xF5u : c == 0xEF ? 0xF6u : c;
}

int auth_key_compare(const char *a, size_t a_len, const char *b, size_t b_len)
{
    size_t n = a_len < b_len ? a_len : b_len;
    for (size_t i = 0; i < n; i++) {
        unsigned x = order_byte((unsigned char)a[i]), y = order_byte((unsigned char)b[i]);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return a_len < b_len ? -1 : a_len > b_len ? 1 : 0;
}

int auth_range_active(const struct auth_range *r)
{
    return r->spk || r->srk || r->epk || r->erk;
}

/* doc/protocol.md, Table SAS:
 *   (spk absent or pk > spk or (pk == spk and (srk absent or rk >= srk)))
 *   and (epk absent or pk < epk or (pk == epk and (erk absent or rk <= erk))) */
int auth_range_contains(const struct auth_range *r, const char *pk, size_t pk_len, const char *rk,
                        size_t rk_len)
{
    if (!pk)
        pk = "", pk_len = 0;
    if (!rk)
        rk = "", rk_len = 0;
    if (r->spk) {
        int c = auth_key_compare(pk, pk_len, r->spk, r->spk_len);
        if (c < 0 || (c == 0 && r->srk && auth_key_compare(rk, rk_len, r->srk, r->srk_len) < 0))
            return 0;
    }
    if (r->epk) {
        int c = auth_key_compare(pk, pk_len, r->epk, r->epk_len);
        if (c > 0 || (c == 0 && r->erk && auth_key_compare(rk, rk_len, r->erk, r->erk_len) > 0))
            return 0;
    }
    return 1;
}

/* May this authenticated caller do op? See auth.h. */
enum auth_status auth_authorize(const struct auth_result *res, const struct auth_op *op)
{
    const struct auth_need *n = op->need;
    if (!n)
        return AUTH_FAILURE;
    if (n->open)
        return AUTH_OK;
    if (op->secondary && n->write)
        return AUTH_SECONDARY_WRITE;

    switch (res->scheme) {
    case AUTH_SCHEME_NONE:
    case AUTH_SCHEME_SHAREDKEY:
    case AUTH_SCHEME_SHAREDKEYLITE:
    case AUTH_SCHEME_BEARER:
        return AUTH_OK;
    case AUTH_SCHEME_ANONYMOUS:
        return AUTH_FAILED;
    case AUTH_SCHEME_ACCOUNT_SAS:
        /* Azurite answers ACL operations under an account SAS with a
         * permission mismatch; nothing better is documented. */
        if (n->acct_denied)
            return AUTH_PERMISSION_MISMATCH;
        if (!(res->rtypes & n->rt_any))
            return AUTH_RESOURCE_TYPE_MISMATCH;
        if ((res->perms & n->acct_all) != n->acct_all || (n->acct_any && !(res->perms & n->acct_any)))
            return AUTH_PERMISSION_MISMATCH;
        return AUTH_OK;
    case AUTH_SCHEME_TABLE_SAS:
        if (n->table_denied)
            return AUTH_FAILURE;
        if (op->table && (!res->sas_table || strcasecmp(op->table, res->sas_table) != 0))
            return AUTH_FAILURE;
        if ((res->perms & n->table_all) != n->table_all ||
            (n->table_any && !(res->perms & n->table_any)))
            return AUTH_PERMISSION_MISMATCH;
        if (op->pk && !auth_range_contains(&res->range, op->pk, op->pk_len, op->rk, op->rk_len))
            return AUTH_FAILURE;
        return AUTH_OK;
    }
    return AUTH_FAILURE;
}

/* The letters of permission bits p ("raudlwcp" order) into out. */
static const char *perm_letters(unsigned p, char out[10])
{
    static const char letters[] = "raudlwcp";
    size_t n = 0;
    for (unsigned i = 0; i < 8; i++)
        if (p & (1u << i))
            out[n++] = letters[i];
    out[n] = 0;
    return out;
}

/* The letters of resource-type bits ("sco"). */
static const char *rt_letters(unsigned r, char out[4])
{
    size_t n = 0;
    if (r & AUTH_RT_SERVICE)
        out[n++] = 's';
    if (r & AUTH_RT_CONTAINER)
        out[n++] = 'c';
    if (r & AUTH_RT_OBJECT)
        out[n++] = 'o';
    out[n] = 0;
    return out;
}

const char *auth_authorize_explain(struct arena *a, const struct auth_result *res,
                                   const struct auth_op *op, enum auth_status s,
                                   enum auth_why *why)
{
    const struct auth_need *n = op->need;
    const char *name = n && n->name ? n->name : "Unknown";
    char have[10], all[10], any[10];
    if (s == AUTH_SECONDARY_WRITE) {
        *why = AUTH_WHY_SECONDARY_WRITE;
        return arena_sprintf(a, "%s changes data and the secondary endpoint is read-only", name);
    }
    if (!n) {
        *why = AUTH_WHY_NONE;
        return "unknown operation";
    }
    int table_sas = res->scheme == AUTH_SCHEME_TABLE_SAS;
    if (s == AUTH_RESOURCE_TYPE_MISMATCH) {
        char r1[4], r2[4];
        *why = AUTH_WHY_SAS_RESOURCE_TYPE;
        return arena_sprintf(a, "%s needs srt to hold one of '%s'; the SAS grants srt '%s'", name,
                             rt_letters(n->rt_any, r1), rt_letters(res->rtypes, r2));
    }
    if (s == AUTH_PERMISSION_MISMATCH) {
        *why = AUTH_WHY_SAS_PERMISSION;
        if (!table_sas && n->acct_denied)
            return arena_sprintf(a, "%s is not allowed under an account SAS (the account key "
                                    "or a table SAS's owner only)", name);
        unsigned need_all = table_sas ? n->table_all : n->acct_all;
        unsigned need_any = table_sas ? n->table_any : n->acct_any;
        return arena_sprintf(a, "%s needs sp with '%s'%s%s%s; the SAS grants sp '%s'", name,
                             perm_letters(need_all, all), need_any ? " and one of '" : "",
                             need_any ? perm_letters(need_any, any) : "", need_any ? "'" : "",
                             perm_letters(res->perms, have));
    }
    if (s == AUTH_FAILURE && table_sas) {
        *why = AUTH_WHY_SAS_SCOPE;
        if (n->table_denied)
            return arena_sprintf(a, "%s is not allowed under a table SAS (it needs the account "
                                    "key or an account SAS)", name);
        if (op->table && (!res->sas_table || strcasecmp(op->table, res->sas_table) != 0))
            return arena_sprintf(a, "the table SAS is for table '%.64s', the request addresses "
                                    "table '%.64s'",
                                 res->sas_table ? res->sas_table : "", op->table);
        return arena_sprintf(a, "%s addresses an entity outside the table SAS's key range "
                                "(spk/srk/epk/erk)", name);
    }
    *why = AUTH_WHY_NONE;
    return arena_sprintf(a, "%s is not allowed with these credentials", name);
}
