/* dump_export.c - the lines of an export file (see dump_export.h). The
 * catalogue (service properties 'p', tables 't') is read with one cursor
 * in the call of dump_export_catalogue; the entities then come from a
 * snap (store/snap.h) over one key range per table, opened in that same
 * call: nothing can write in between, so everything is as of one
 * instant. */
#include "tools/dump_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/arena.h"
#include "core/version.h"
#include "codec/edm.h"
#include "store/entity.h"
#include "codec/entity_json.h"
#include "store/keys.h"
#include "store/snap.h"
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
    int live;                        /* the store is written meanwhile */
    struct kv_iter *it;              /* the catalogue's cursor */
    struct snap *snap;               /* the entities' cursor */
    struct arena *a;                 /* one entity's decoding, reset per line */
    struct dump_table *tabs;
    size_t ntabs, cap;
    size_t cur;                      /* table whose entities come next */
    int in_table;                    /* the cursor is inside tabs[cur] */
    unsigned long long nentities;
};

struct dump_export *dump_export_new(struct kv *kv, const char *account, const char *table,
                                    int live, char *err, size_t errlen)
{
    struct dump_export *x = calloc(1, sizeof *x);
    if (!x)
        abort();
    x->kv = kv;
    x->account = account;
    x->table = table;
    x->live = live;
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
    snap_close(x->snap);
    if (x->a)
        arena_free(x->a);
    free(x->tabs);
    free(x);
}

void dump_export_counts(const struct dump_export *x, unsigned long long *ntables,
                        unsigned long long *nentities)
{
    *ntables = x->ntabs;
    *nentities = x->nentities;
}

void dump_export_kept(const struct dump_export *x, unsigned long long *keys,
                      unsigned long long *bytes)
{
    *keys = *bytes = 0;
    if (x->snap)
        snap_kept(x->snap, keys, bytes);
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

/* Opens the snap over the entities of every table found, in their order,
 * and closes the catalogue's cursor. */
static int open_snap(struct dump_export *x, char *err, size_t errlen)
{
    struct snap_range *r = calloc(x->ntabs ? x->ntabs : 1, sizeof *r);
    struct buf *b = calloc(x->ntabs ? 2 * x->ntabs : 1, sizeof *b);
    if (!r || !b)
        abort();
    for (size_t i = 0; i < x->ntabs; i++) {
        buf_init(&b[2 * i]);
        buf_init(&b[2 * i + 1]);
        keys_entity_table_prefix(&b[2 * i], x->tabs[i].id);
        keys_entity_table_prefix(&b[2 * i + 1], x->tabs[i].id);
        keys_prefix_end(&b[2 * i + 1]);
        r[i] = (struct snap_range){b[2 * i].data, b[2 * i].len, b[2 * i + 1].data,
                                   b[2 * i + 1].len};
    }
    int rc = snap_open(x->kv, r, x->ntabs, x->live, &x->snap, err, errlen);
    for (size_t i = 0; i < 2 * x->ntabs; i++)
        buf_free(&b[i]);
    free(b);
    free(r);
    kv_iter_close(x->it);
    x->it = NULL;
    return rc == 0 ? 0 : -1;
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
    return open_snap(x, err, errlen);
}

int dump_export_step(struct dump_export *x, struct buf *out, size_t max, char *err,
                     size_t errlen)
{
    const void *k, *v;
    size_t kl, vl;
    while (x->cur < x->ntabs) {
        if (!x->in_table) {
            if (snap_enter(x->snap, x->cur) != 0) {
                snprintf(err, errlen, "reading table %s failed: %s", x->tabs[x->cur].name,
                         snap_error(x->snap));
                return -1;
            }
            x->in_table = 1;
        }
        const struct dump_table *t = &x->tabs[x->cur];
        struct entity_json_ctx ctx = {.level = ODATA_MINIMAL, .base = "",
                                      .account = t->account, .table = t->name};
        int r;
        while ((r = snap_next(x->snap, &k, &kl, &v, &vl)) == 1) {
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
            snprintf(err, errlen, "reading table %s failed: %s", t->name, snap_error(x->snap));
            return -1;
        }
        x->in_table = 0;
        x->cur++;
    }
    return 0;
}
