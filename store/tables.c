/* tables.c - the table catalogue and its cache (see tables.h). */
#include "store/tables.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coding.h"
#include "store/keys.h"
#include "store/kv.h"

struct tnode {
    struct tnode *next;
    uint64_t hash;
    char *key;                 /* account '/' lower(name) */
    struct table_info info;
};

struct table_cache {
    struct tnode **buckets;
    size_t nbuckets, count;
    uint64_t next_id;
    const struct tnode *last;  /* the last table found (NULL after a removal) */
    /* shared stores: the id each table's row showed when last read, a slot
       per thash (tables_guess) */
    uint64_t guess_hash[64], guess_id[64];
};

/* Hash of account '/' lower(name), computed without building the key. */
static uint64_t thash(const char *account, const char *name, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = account; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ '/') * 1099511628211ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)tolower((unsigned char)name[i])) * 1099511628211ULL;
    return h;
}

/* True when node key equals account '/' lower(name). */
static int tmatch(const struct tnode *t, const char *account, const char *name, size_t n)
{
    size_t al = strlen(account);
    if (strncmp(t->key, account, al) != 0 || t->key[al] != '/')
        return 0;
    const char *k = t->key + al + 1;
    for (size_t i = 0; i < n; i++)
        if (k[i] != tolower((unsigned char)name[i]))
            return 0;
    return k[n] == '\0';
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (!p)
        abort();
    return p;
}

static char *xmemdup(const void *p, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        abort();
    if (n)
        memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

/* Doubles the bucket array once the load factor passes 1. */
static void tgrow(struct table_cache *tc)
{
    size_t nb = tc->nbuckets * 2;
    struct tnode **b = xcalloc(nb, sizeof *b);
    for (size_t i = 0; i < tc->nbuckets; i++) {
        struct tnode *t = tc->buckets[i];
        while (t) {
            struct tnode *n = t->next;
            t->next = b[t->hash % nb];
            b[t->hash % nb] = t;
            t = n;
        }
    }
    free(tc->buckets);
    tc->buckets = b;
    tc->nbuckets = nb;
}

/* Looks name up by hash; a request naming the table found last, with the
 * same bytes (every operation of a $batch does), is answered without
 * hashing: the same bytes match case-insensitively too. */
const struct table_info *tables_find(struct table_cache *tc, const char *account,
                                     const char *name, size_t name_len)
{
    const struct tnode *l = tc->last;
    if (l && l->info.name_len == name_len && memcmp(l->info.name, name, name_len) == 0 &&
        strcmp(l->info.account, account) == 0)
        return &l->info;
    uint64_t h = thash(account, name, name_len);
    for (struct tnode *t = tc->buckets[h % tc->nbuckets]; t; t = t->next)
        if (t->hash == h && tmatch(t, account, name, name_len)) {
            tc->last = t;
            return &t->info;
        }
    return NULL;
}

const struct table_info *tables_add(struct table_cache *tc, const char *account,
                                    uint64_t id, const char *name, size_t name_len,
                                    const unsigned char *acl, size_t acl_len)
{
    tables_remove(tc, account, name, name_len);
    struct tnode *t = xcalloc(1, sizeof *t);
    size_t al = strlen(account);
    t->key = malloc(al + 1 + name_len + 1);
    if (!t->key)
        abort();
    memcpy(t->key, account, al);
    t->key[al] = '/';
    for (size_t i = 0; i < name_len; i++)
        t->key[al + 1 + i] = (char)tolower((unsigned char)name[i]);
    t->key[al + 1 + name_len] = '\0';
    t->hash = thash(account, name, name_len);
    t->info.id = id;
    t->info.account = xmemdup(account, al);
    t->info.name = xmemdup(name, name_len);
    t->info.name_len = name_len;
    t->info.acl = acl_len ? (unsigned char *)xmemdup(acl, acl_len) : NULL;
    t->info.acl_len = acl_len;
    t->next = tc->buckets[t->hash % tc->nbuckets];
    tc->buckets[t->hash % tc->nbuckets] = t;
    if (++tc->count > tc->nbuckets)
        tgrow(tc);
    if (id >= tc->next_id)
        tc->next_id = id + 1;
    return &t->info;
}

static void tnode_free(struct tnode *t)
{
    free(t->key);
    free(t->info.account);
    free(t->info.name);
    free(t->info.acl);
    free(t);
}

void tables_remove(struct table_cache *tc, const char *account, const char *name,
                   size_t name_len)
{
    uint64_t h = thash(account, name, name_len);
    struct tnode **pp = &tc->buckets[h % tc->nbuckets];
    for (; *pp; pp = &(*pp)->next) {
        struct tnode *t = *pp;
        if (t->hash == h && tmatch(t, account, name, name_len)) {
            *pp = t->next;
            if (tc->last == t)
                tc->last = NULL;
            tnode_free(t);
            tc->count--;
            return;
        }
    }
}

void tables_set_acl(struct table_cache *tc, const struct table_info *ti,
                    const unsigned char *acl, size_t acl_len)
{
    (void)tc;
    struct table_info *t = (struct table_info *)ti;
    free(t->acl);
    t->acl = acl_len ? (unsigned char *)xmemdup(acl, acl_len) : NULL;
    t->acl_len = acl_len;
}

uint64_t tables_next_id(struct table_cache *tc)
{
    return tc->next_id++;
}

int tables_claim_id(struct table_cache *tc, struct kv *kv, uint64_t *id, struct buf *key,
                    struct buf *val, struct backend_cond *cond, char *err, size_t errlen)
{
    size_t k0 = key->len;
    keys_table_id_counter(key);
    const void *v;
    size_t vl;
    int rc = kv_get(kv, key->data + k0, key->len - k0, &v, &vl, err, errlen);
    if (rc != BACKEND_OK && rc != BACKEND_NOTFOUND)
        return rc;
    uint64_t next = tc->next_id;
    if (rc == BACKEND_OK) {
        uint64_t counter = backend_value_version(v, vl);
        *cond = (struct backend_cond){BACKEND_EXPECT_VERSION, counter};
        if (counter > next)
            next = counter;
    } else {
        *cond = (struct backend_cond){BACKEND_EXPECT_ABSENT, 0};
    }
    *id = next;
    buf_put_u8(val, 1);
    buf_put_be64(val, next + 1);
    if (next >= tc->next_id)
        tc->next_id = next + 1;
    return BACKEND_OK;
}

/* A table row's value decoded into out (strings copied into a). 0, or
   BACKEND_CORRUPT (err). */
static int tables_fill(struct arena *a, const char *account, const void *v, size_t vl,
                       struct table_info *out, char *err, size_t errlen)
{
    uint64_t id;
    const char *n;
    size_t nl, al;
    const unsigned char *acl;
    if (tables_decode(v, vl, &id, &n, &nl, &acl, &al) != 0) {
        snprintf(err, errlen, "corrupt table row in the store");
        return BACKEND_CORRUPT;
    }
    out->id = id;
    out->account = arena_strndup(a, account, strlen(account));
    out->name = arena_strndup(a, n, nl);
    out->name_len = nl;
    out->acl = al ? arena_alloc(a, al) : NULL;
    if (al)
        memcpy(out->acl, acl, al);
    out->acl_len = al;
    return BACKEND_OK;
}

int tables_read(struct kv *kv, struct arena *a, const char *account, const char *name,
                size_t name_len, struct table_info *out, char *err, size_t errlen)
{
    struct buf key;
    buf_init(&key);
    keys_table(&key, account, name, name_len);
    const void *v;
    size_t vl;
    int rc = kv_get(kv, key.data, key.len, &v, &vl, err, errlen);
    buf_free(&key);
    if (rc != BACKEND_OK)
        return rc;
    return tables_fill(a, account, v, vl, out, err, errlen);
}

/* Where tables_read_with's two values go (borrowed values copied, the
   row's decoded, while kv_get_multi's callback holds them). */
struct tables_with {
    struct arena *a;
    const char *account;
    struct table_info *out;
    int row_rc;                /* BACKEND_NOTFOUND until the row is found */
    void *val2;
    size_t len2;
    int found2;
    char *err;
    size_t errlen;
};

/* kv_get_multi's callback for tables_read_with: key 0 the row, 1 key2. */
static void tables_with_found(void *arg, size_t i, const void *val, size_t vl)
{
    struct tables_with *w = arg;
    if (i == 0) {
        w->row_rc = tables_fill(w->a, w->account, val, vl, w->out, w->err, w->errlen);
        return;
    }
    w->val2 = arena_alloc(w->a, vl ? vl : 1);
    memcpy(w->val2, val, vl);
    w->len2 = vl;
    w->found2 = 1;
}

int tables_read_with(struct kv *kv, struct arena *a, const char *account, const char *name,
                     size_t name_len, struct table_info *out, const void *key2,
                     size_t key2_len, void **val2, size_t *len2, int *found2, char *err,
                     size_t errlen)
{
    struct buf key;
    buf_init(&key);
    keys_table(&key, account, name, name_len);
    struct backend_mget mg[2] = {{key.data, key.len, 0, NULL, 0},
                                 {key2, key2_len, 0, NULL, 0}};
    struct tables_with w = {a, account, out, BACKEND_NOTFOUND, NULL, 0, 0, err, errlen};
    int rc = kv_get_multi(kv, mg, 2, tables_with_found, &w, err, errlen);
    buf_free(&key);
    if (rc != BACKEND_OK)
        return rc;
    if (w.row_rc != BACKEND_OK)
        return w.row_rc;
    *val2 = w.val2;
    *len2 = w.len2;
    *found2 = w.found2;
    return BACKEND_OK;
}

void tables_guess_note(struct table_cache *tc, const char *account, const char *name,
                       size_t name_len, uint64_t id)
{
    uint64_t h = thash(account, name, name_len);
    tc->guess_hash[h & 63] = h;
    tc->guess_id[h & 63] = id;
}

int tables_guess(const struct table_cache *tc, const char *account, const char *name,
                 size_t name_len, uint64_t *id)
{
    uint64_t h = thash(account, name, name_len);
    if (tc->guess_hash[h & 63] != h || !tc->guess_id[h & 63])
        return 0;
    *id = tc->guess_id[h & 63];
    return 1;
}

void tables_reserve_id(struct table_cache *tc, uint64_t id)
{
    if (id >= tc->next_id)
        tc->next_id = id + 1;
}

void tables_encode(const struct table_info *t, struct buf *out)
{
    buf_put_u8(out, 1);
    buf_put_be64(out, t->id);
    buf_put_varint(out, t->name_len);
    buf_append(out, t->name, t->name_len);
    buf_put_varint(out, t->acl_len);
    if (t->acl_len)
        buf_append(out, t->acl, t->acl_len);
}

int tables_decode(const void *val, size_t len, uint64_t *id, const char **name,
                  size_t *name_len, const unsigned char **acl, size_t *acl_len)
{
    const unsigned char *p = val, *end = p + len;
    if (len < 9 || p[0] != 1)
        return -1;
    *id = coding_get_be64(p + 1);
    p += 9;
    uint64_t n;
    if (coding_get_varint(&p, end, &n) || n > (uint64_t)(end - p))
        return -1;
    *name = (const char *)p;
    *name_len = n;
    p += n;
    if (coding_get_varint(&p, end, &n) || n > (uint64_t)(end - p))
        return -1;
    *acl = p;
    *acl_len = n;
    return 0;
}

struct table_cache *tables_empty(void)
{
    struct table_cache *tc = xcalloc(1, sizeof *tc);
    tc->nbuckets = 64;
    tc->buckets = xcalloc(tc->nbuckets, sizeof *tc->buckets);
    tc->next_id = 1;
    return tc;
}

struct table_cache *tables_load(struct kv *kv,
                                char *err, size_t errlen)
{
    struct table_cache *tc = tables_empty();

    /* Table rows: every key starting with 't'. */
    const char start[1] = {KEY_TAG_TABLE}, end[1] = {KEY_TAG_TABLE + 1};
    struct kv_iter *it;
    if (kv_iter_open(kv, start, 1, end, 1, &it, err, errlen) != BACKEND_OK) {
        tables_free(tc);
        return NULL;
    }
    const void *k, *v;
    size_t kl, vl;
    int rc;
    while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        const char *kp = k;
        const char *nul = memchr(kp + 1, '\0', kl - 1);
        uint64_t id;
        const char *name;
        size_t nl, al;
        const unsigned char *acl;
        if (!nul || tables_decode(v, vl, &id, &name, &nl, &acl, &al) != 0) {
            snprintf(err, errlen, "corrupt table row in the store");
            kv_iter_close(it);
            tables_free(tc);
            return NULL;
        }
        char *account = xmemdup(kp + 1, (size_t)(nul - kp - 1));
        tables_add(tc, account, id, name, nl, acl, al);
        free(account);
    }
    kv_iter_close(it);
    if (rc < 0) {
        snprintf(err, errlen, "reading table rows failed (%d)", rc);
        tables_free(tc);
        return NULL;
    }
    /* Entity keys of deleted tables may remain (see ops_tables.c); the id
     * counter must also pass them, so look at the last entity key. */
    const char es[1] = {KEY_TAG_ENTITY}, ee[1] = {KEY_TAG_ENTITY + 1};
    if (kv_iter_open(kv, es, 1, ee, 1, &it, err, errlen) == BACKEND_OK) {
        /* Binary search over ids is not possible with a forward cursor, so
         * probe downward from the largest id space by seeking: seek to each
         * candidate id prefix; ids are dense in practice. */
        uint64_t probe = tc->next_id;
        for (;;) {
            unsigned char pk[9] = {KEY_TAG_ENTITY};
            for (int i = 0; i < 8; i++)
                pk[1 + i] = (unsigned char)(probe >> (56 - 8 * i));
            kv_iter_seek(it, pk, sizeof pk);
            if (kv_iter_next(it, &k, &kl, &v, &vl) != 1 || kl < 9)
                break;
            const unsigned char *kb = k;
            uint64_t id = coding_get_be64(kb + 1);
            probe = id + 1;
        }
        if (probe > tc->next_id)
            tc->next_id = probe;
        kv_iter_close(it);
    }
    return tc;
}

void tables_free(struct table_cache *tc)
{
    if (!tc)
        return;
    for (size_t i = 0; i < tc->nbuckets; i++) {
        struct tnode *t = tc->buckets[i];
        while (t) {
            struct tnode *n = t->next;
            tnode_free(t);
            t = n;
        }
    }
    free(tc->buckets);
    free(tc);
}
