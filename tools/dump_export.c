/* dump_export.c - the lines of an export file from one store cursor (see
 * dump_export.h). The cursor spans the whole store and is repositioned
 * with iter_seek for each part (service properties 'p', tables 't', then
 * each table's entities), never reopened, so a snapshot cursor gives one
 * instant for everything. */
#include "tools/dump_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/arena.h"
#include "core/version.h"
#include "protocol/edm.h"
#include "store/entity.h"
#include "protocol/entity_json.h"
#include "store/keys.h"
#include "store/tables.h"

/* One table found in the store. */
struct dump_table {
    uint64_t id;
    char account[64];
    char name[64];
};

struct dump_export {
    struct kv *kv;
    const char *account, *table;     /* filters, or NULL */
    struct kv_iter *it;
    struct arena *a;                 /* one entity's decoding, reset per line */
    struct dump_table *tabs;
    size_t ntabs, cap;
    size_t cur;                      /* table whose entities come next */
    int in_table;                    /* the cursor is inside tabs[cur] */
    struct buf end;                  /* first key after tabs[cur] */
    unsigned long long nentities;
};

struct dump_export *dump_export_new(struct kv *kv, const char *account, const char *table, char *err,
                                    size_t errlen)
{
    struct dump_export *x = calloc(1, sizeof *x);
    if (!x)
        abort();
    x->kv = kv;
    x->account = account;
    x->table = table;
    buf_init(&x->end);
    if (kv_iter_open(kv, NULL, 0, NULL, 0, &x->it, err, errlen) != 0) {
        x->it = NULL;
        dump_export_free(x);
        return NULL;
    }
    x->a = arena_new(65536);
    return x;
}

void dump_export_free(struct dump_export *x)
{
    if (!x)
        return;
    if (x->it)
        kv_iter_close(x->it);
    if (x->a)
        arena_free(x->a);
    buf_free(&x->end);
    free(x->tabs);
    free(x);
}

void dump_export_counts(const struct dump_export *x, unsigned long long *ntables,
                        unsigned long long *nentities)
{
    *ntables = x->ntabs;
    *nentities = x->nentities;
}

/* Appends "key":"base64(p)" with a leading comma. */
static void put_b64_member(struct buf *b, const char *key, const void *p, size_t n)
{
    buf_puts(b, ",\"");
    buf_puts(b, key);
    buf_puts(b, "\":\"");
    edm_base64_encode(b, p, n);
    buf_putc(b, '"');
}

/* Whether an account passes the account filter. */
static int want_account(const struct dump_export *x, const char *account)
{
    return !x->account || strcasecmp(x->account, account) == 0;
}

/* Appends {"account":A,"table":T with the names as JSON strings. */
static void put_names(struct buf *b, const char *account, const char *table)
{
    buf_puts(b, "{\"account\":");
    json_put_string(b, account, strlen(account));
    if (table) {
        buf_puts(b, ",\"table\":");
        json_put_string(b, table, strlen(table));
    }
}

/* Service properties: 'p' ACCOUNT. */
static int export_props(struct dump_export *x, struct buf *out, char *err, size_t errlen)
{
    static const char p0[] = {KEY_TAG_PROPS};
    const void *k, *v;
    size_t kl, vl;
    int r;
    if (kv_iter_seek(x->it, p0, 1) != 0) {
        snprintf(err, errlen, "reading service properties failed");
        return -1;
    }
    while ((r = kv_iter_next(x->it, &k, &kl, &v, &vl)) == 1) {
        if (kl < 1 || *(const char *)k != KEY_TAG_PROPS)
            break;
        char acct[64];
        if (kl < 2 || kl - 1 >= sizeof acct)
            continue;
        memcpy(acct, (const char *)k + 1, kl - 1);
        acct[kl - 1] = '\0';
        if (!want_account(x, acct) || x->table)
            continue;
        put_names(out, acct, NULL);
        put_b64_member(out, "service-properties", v, vl);
        buf_puts(out, "}\n");
    }
    if (r < 0) {
        snprintf(err, errlen, "reading service properties failed");
        return -1;
    }
    return 0;
}

/* Tables: 't' ACCOUNT 0x00 lower(NAME). */
static int export_tables(struct dump_export *x, struct buf *out, char *err, size_t errlen)
{
    static const char t0[] = {KEY_TAG_TABLE};
    const void *k, *v;
    size_t kl, vl;
    int r;
    if (kv_iter_seek(x->it, t0, 1) != 0) {
        snprintf(err, errlen, "reading the tables failed");
        return -1;
    }
    while ((r = kv_iter_next(x->it, &k, &kl, &v, &vl)) == 1) {
        if (kl < 1 || *(const char *)k != KEY_TAG_TABLE)
            break;
        const char *acct = (const char *)k + 1;
        const char *nul = memchr(acct, 0, kl - 1);
        uint64_t id;
        const char *name;
        size_t name_len, acl_len;
        const unsigned char *acl;
        if (!nul || (size_t)(nul - acct) >= sizeof x->tabs->account ||
            tables_decode(v, vl, &id, &name, &name_len, &acl, &acl_len) != 0 ||
            name_len >= sizeof x->tabs->name) {
            snprintf(err, errlen, "malformed table row in the store");
            return -1;
        }
        char account[64];
        memcpy(account, acct, (size_t)(nul - acct));
        account[nul - acct] = '\0';
        if (!want_account(x, account) ||
            (x->table && (strlen(x->table) != name_len ||
                          strncasecmp(x->table, name, name_len) != 0)))
            continue;
        if (x->ntabs == x->cap) {
            x->cap = x->cap ? x->cap * 2 : 16;
            x->tabs = realloc(x->tabs, x->cap * sizeof *x->tabs);
            if (!x->tabs)
                abort();
        }
        struct dump_table *t = &x->tabs[x->ntabs++];
        t->id = id;
        strcpy(t->account, account);
        memcpy(t->name, name, name_len);
        t->name[name_len] = '\0';
        put_names(out, t->account, t->name);
        put_b64_member(out, "acl", acl, acl_len);
        buf_puts(out, "}\n");
    }
    if (r < 0) {
        snprintf(err, errlen, "reading the tables failed");
        return -1;
    }
    return 0;
}

int dump_export_catalogue(struct dump_export *x, struct buf *out, char *err, size_t errlen)
{
    buf_puts(out, "{\"tabled-export\":1,\"version\":\"" TABLED_VERSION "\"}\n");
    if (export_props(x, out, err, errlen) < 0 || export_tables(x, out, err, errlen) < 0)
        return -1;
    if (x->table && x->ntabs == 0) {
        snprintf(err, errlen, "no table %s%s%s", x->table, x->account ? " in account " : "",
                 x->account ? x->account : "");
        return 1;
    }
    return 0;
}

/* Positions the cursor at the first entity of tabs[cur]. */
static int enter_table(struct dump_export *x, char *err, size_t errlen)
{
    struct buf lo;
    buf_init(&lo);
    keys_entity_table_prefix(&lo, x->tabs[x->cur].id);
    buf_reset(&x->end);
    keys_entity_table_prefix(&x->end, x->tabs[x->cur].id);
    keys_prefix_end(&x->end);
    int rc = kv_iter_seek(x->it, lo.data, lo.len);
    buf_free(&lo);
    if (rc != 0) {
        snprintf(err, errlen, "reading table %s failed", x->tabs[x->cur].name);
        return -1;
    }
    x->in_table = 1;
    return 0;
}

/* Whether key k is below the end of the current table. */
static int before_end(const struct dump_export *x, const void *k, size_t kl)
{
    size_t n = kl < x->end.len ? kl : x->end.len;
    int c = memcmp(k, x->end.data, n);
    return c < 0 || (c == 0 && kl < x->end.len);
}

int dump_export_step(struct dump_export *x, struct buf *out, size_t max, char *err,
                     size_t errlen)
{
    const void *k, *v;
    size_t kl, vl;
    while (x->cur < x->ntabs) {
        if (!x->in_table && enter_table(x, err, errlen) < 0)
            return -1;
        const struct dump_table *t = &x->tabs[x->cur];
        struct entity_json_ctx ctx = {.level = ODATA_MINIMAL, .base = "",
                                      .account = t->account, .table = t->name};
        int r;
        while ((r = kv_iter_next(x->it, &k, &kl, &v, &vl)) == 1 && before_end(x, k, kl)) {
            struct entity e;
            uint64_t id;
            memset(&e, 0, sizeof e);
            if (keys_entity_decode(x->a, k, kl, &id, &e.pk, &e.pk_len, &e.rk, &e.rk_len) != 0 ||
                entity_decode(x->a, v, vl, &e) != 0) {
                snprintf(err, errlen, "malformed entity in table %s", t->name);
                return -1;
            }
            put_names(out, t->account, t->name);
            char num[64];
            snprintf(num, sizeof num, ",\"ticks\":%lld,\"entity\":", (long long)e.timestamp);
            buf_puts(out, num);
            entity_json_write(out, &e, &ctx);
            buf_puts(out, "}\n");
            arena_reset(x->a);
            x->nentities++;
            if (out->len >= max)
                return 1;
        }
        if (r < 0) {
            snprintf(err, errlen, "reading table %s failed", t->name);
            return -1;
        }
        x->in_table = 0;
        x->cur++;
    }
    return 0;
}
