/* catalog.c - the table catalogue and its upkeep (see catalog.h). */
#include "store/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/heap.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/keys.h"
#include "store/kv.h"
#include "store/purge.h"
#include "store/reclaim.h"
#include "store/store_int.h"

/* Rounds of a create on a shared store that lost the id counter to
 * another front end's create (store/tables.h), and of an import's table
 * write that raced another. */
#define CATALOG_CREATE_ROUNDS 64

/* Milliseconds between looks for other front ends' purge records. */
#define CATALOG_RESCAN_MS 5000

struct catalog {
    struct store *s;
    struct kv *kv;
    int shared;                  /* kv_shared: rows are read, not cached */
    struct table_cache *tables;  /* trusted only when !shared (then it keeps
                                    tables_guess's ids) */
    struct purge *purge;         /* deleted tables still holding entities */
    struct reclaim *reclaim;     /* compaction after purges */
    struct metrics *metrics;
    void (*wake)(void *arg);
    void *wake_arg;
    uint64_t sync_failures_seen; /* store_sync_failures at the last resync */
    uint64_t rescan_us;          /* shared: next look for others' purges */
    int purge_failing;           /* the last purge step failed (logged once) */
};

struct catalog *catalog_open(struct store *s, void (*wake)(void *arg), void *arg, char *err,
                             size_t errlen)
{
    struct catalog *cat = calloc(1, sizeof *cat);
    if (!cat) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cat->s = s;
    cat->kv = store_kv(s);
    cat->shared = kv_shared(cat->kv);
    cat->wake = wake;
    cat->wake_arg = arg;
    cat->tables = tables_load(cat->kv, err, errlen);
    if (!cat->tables) {
        free(cat);
        return NULL;
    }
    /* Purges a stop or crash interrupted go on; their ids stay taken. */
    cat->purge = purge_new();
    uint64_t purge_max;
    if (purge_load(cat->purge, cat->kv, &purge_max, err, errlen) != BACKEND_OK) {
        purge_free(cat->purge);
        tables_free(cat->tables);
        free(cat);
        return NULL;
    }
    tables_reserve_id(cat->tables, purge_max);
    cat->reclaim = reclaim_new(cat->kv, wake, arg);
    cat->sync_failures_seen = store_sync_failures(s);
    if (purge_pending(cat->purge))
        log_info("%zu deleted table(s) still hold entities: removing them in the background",
                 purge_pending(cat->purge));
    return cat;
}

struct catalog *catalog_open_reader(struct store *s)
{
    struct catalog *cat = calloc(1, sizeof *cat);
    if (!cat)
        return NULL;
    cat->s = s;
    cat->kv = store_kv(s);
    cat->shared = 1;                /* rows are read at every lookup */
    cat->tables = tables_empty();   /* only for catalog_guess's ids */
    cat->purge = purge_new();
    cat->sync_failures_seen = store_sync_failures(s);
    return cat;
}

void catalog_free(struct catalog *cat)
{
    if (!cat)
        return;
    tables_free(cat->tables);
    purge_free(cat->purge);
    reclaim_free(cat->reclaim);
    free(cat);
}

void catalog_set_metrics(struct catalog *cat, struct metrics *m)
{
    cat->metrics = m;
    metrics_purge(m, purge_pending(cat->purge), 0);
}

int catalog_shared(const struct catalog *cat)
{
    return cat->shared;
}

int catalog_table(struct catalog *cat, struct arena *a, const char *account, const char *name,
                  size_t name_len, const struct table_info **out)
{
    if (!cat->shared) {
        *out = tables_find(cat->tables, account, name, name_len);
        return *out ? STORE_OK : STORE_NOTFOUND;
    }
    *out = NULL;
    struct table_info *t = arena_alloc(a, sizeof *t);
    char err[256] = "";
    int rc = tables_read(cat->kv, a, account, name, name_len, t, err, sizeof err);
    if (rc == BACKEND_OK) {
        *out = t;
        tables_guess_note(cat->tables, account, name, name_len, t->id);
    } else if (rc != BACKEND_NOTFOUND) {
        log_error("reading the table row failed: %s", err);
    }
    return rc;
}

int catalog_table_with(struct catalog *cat, struct arena *a, const char *account,
                       const char *name, size_t name_len, const struct table_info **out,
                       const void *key2, size_t key2_len, void **val2, size_t *len2,
                       int *found2)
{
    *out = NULL;
    struct table_info *t = arena_alloc(a, sizeof *t);
    char err[256] = "";
    int rc = tables_read_with(cat->kv, a, account, name, name_len, t, key2, key2_len, val2,
                              len2, found2, err, sizeof err);
    if (rc == BACKEND_OK) {
        *out = t;
        tables_guess_note(cat->tables, account, name, name_len, t->id);
    } else if (rc != BACKEND_NOTFOUND) {
        log_error("reading the table row failed: %s", err);
    }
    return rc;
}

int catalog_guess(const struct catalog *cat, const char *account, const char *name,
                  size_t name_len, uint64_t *id)
{
    return cat->shared && tables_guess(cat->tables, account, name, name_len, id);
}

int catalog_known(struct catalog *cat, const char *account, const char *name, size_t name_len)
{
    return !cat->shared && tables_find(cat->tables, account, name, name_len) != NULL;
}

/* Writes the row of a new table (expecting it absent) with a fresh id
 * (*id); on a shared store the id counter's update goes in the same
 * apply. 0, BACKEND_CONFLICT when the table exists, or a failure. */
static int catalog_create_row(struct catalog *cat, const char *account, const char *name,
                              size_t n, uint64_t *id)
{
    struct buf ckey, cval, k, v;
    buf_init(&ckey);
    buf_init(&cval);
    buf_init(&k);
    buf_init(&v);
    int rc;
    for (int round = 0;; round++) {
        struct backend_cond cond[2] = {{BACKEND_EXPECT_ABSENT, 0}, {BACKEND_EXPECT_ANY, 0}};
        buf_reset(&ckey);
        buf_reset(&cval);
        if (cat->shared) {
            char err[256] = "";
            rc = tables_claim_id(cat->tables, cat->kv, id, &ckey, &cval, &cond[1], err,
                                 sizeof err);
            if (rc != BACKEND_OK) {
                log_error("reading the table id counter failed: %s", err);
                break;
            }
        } else {
            *id = tables_next_id(cat->tables);
        }
        struct table_info t = {.id = *id, .name = (char *)name, .name_len = n};
        buf_reset(&k);
        buf_reset(&v);
        keys_table(&k, account, name, n);
        tables_encode(&t, &v);
        struct backend_write w[2] = {
            {BACKEND_PUT, k.data, k.len, v.data, v.len},
            {BACKEND_PUT, ckey.data, ckey.len, cval.data, cval.len},
        };
        /* a create that raced this one (it waited on storage) got there
           first: the row's expectation fails */
        size_t failed = 0;
        rc = store_apply(cat->s, -1, w, cond, cat->shared ? 2 : 1, &failed);
        /* another front end took the id: claim the next one */
        if (rc == BACKEND_CONFLICT && failed == 1 && round + 1 < CATALOG_CREATE_ROUNDS)
            continue;
        if (rc == BACKEND_CONFLICT && failed == 1)
            rc = BACKEND_UNAVAILABLE;   /* still racing: 503, try again */
        break;
    }
    buf_free(&ckey);
    buf_free(&cval);
    buf_free(&k);
    buf_free(&v);
    return rc;
}

int catalog_create(struct catalog *cat, const char *account, const char *name,
                   size_t name_len, uint64_t *id)
{
    /* on a shared store the row's absent expectation is the only check */
    if (catalog_known(cat, account, name, name_len))
        return STORE_CONFLICT;
    int rc = catalog_create_row(cat, account, name, name_len, id);
    if (rc == 0 && !cat->shared)
        tables_add(cat->tables, account, *id, name, name_len, NULL, 0);
    return rc;
}

int catalog_delete(struct catalog *cat, int account_index, const char *account,
                   const char *name, size_t name_len)
{
    struct arena *a = arena_new(512);
    const struct table_info *t;
    int rc = catalog_table(cat, a, account, name, name_len, &t);
    if (rc != STORE_OK) {
        arena_free(a);
        return rc;
    }
    uint64_t id = t->id;
    arena_free(a);
    struct buf rkey, rval, k;
    buf_init(&rkey);
    buf_init(&rval);
    buf_init(&k);
    purge_record(&rkey, &rval, id);
    keys_table(&k, account, name, name_len);
    struct backend_write w[2] = {
        {BACKEND_DELETE, k.data, k.len, NULL, 0},
        {BACKEND_PUT, rkey.data, rkey.len, rval.data, rval.len},
    };
    /* a delete that raced this one removed it first (on a shared store:
       or another front end re-created it, with another id: the row's
       version is its id) */
    struct backend_cond cond[2] = {{BACKEND_EXPECT_PRESENT, 0}, {BACKEND_EXPECT_ANY, 0}};
    if (cat->shared)
        cond[0] = (struct backend_cond){BACKEND_EXPECT_VERSION, id};
    rc = store_apply(cat->s, -1, w, cond, 2, NULL);
    buf_free(&rkey);
    buf_free(&rval);
    buf_free(&k);
    if (rc == BACKEND_CONFLICT)
        return STORE_NOTFOUND;
    if (rc != 0)
        return rc;
    if (!cat->shared)
        tables_remove(cat->tables, account, name, name_len);
    purge_add(cat->purge, id, cat->metrics ? account_index : -1);
    metrics_purge(cat->metrics, purge_pending(cat->purge), 0);
    if (cat->wake)
        cat->wake(cat->wake_arg);
    return STORE_OK;
}

int catalog_set_acl(struct catalog *cat, const struct table_info *t, const char *account,
                    const unsigned char *acl, size_t acl_len)
{
    struct table_info row = *t;
    row.acl = (unsigned char *)acl;
    row.acl_len = acl_len;
    struct buf k, v;
    buf_init(&k);
    buf_init(&v);
    keys_table(&k, account, t->name, t->name_len);
    tables_encode(&row, &v);
    struct backend_write w = {BACKEND_PUT, k.data, k.len, v.data, v.len};
    /* the table must still exist (a delete may have raced this request;
       on a shared store: and not be re-created by another front end, so
       its id, the row's version, is expected) */
    struct backend_cond present = {BACKEND_EXPECT_PRESENT, 0};
    if (cat->shared)
        present = (struct backend_cond){BACKEND_EXPECT_VERSION, t->id};
    int rc = store_apply(cat->s, -1, &w, &present, 1, NULL);
    buf_free(&k);
    buf_free(&v);
    if (rc == BACKEND_CONFLICT)
        return STORE_NOTFOUND;
    if (rc == 0 && !cat->shared)
        tables_set_acl(cat->tables, t, acl, acl_len);
    return rc;
}

int catalog_import_table(struct catalog *cat, const char *account, const char *name,
                         const unsigned char *acl, size_t acl_len, int set_acl, uint64_t *id,
                         int *created, char *err, size_t errlen)
{
    size_t nl = strlen(name);
    struct arena *a = arena_new(512);
    struct buf ckey, cval, k, v;
    buf_init(&ckey);
    buf_init(&cval);
    buf_init(&k);
    buf_init(&v);
    *created = 0;
    int rc = BACKEND_CONFLICT;
    for (int round = 0; round < CATALOG_CREATE_ROUNDS && rc == BACKEND_CONFLICT; round++) {
        struct table_info cur = {0};
        int found;
        if (cat->shared) {
            rc = tables_read(cat->kv, a, account, name, nl, &cur, err, errlen);
            if (rc != BACKEND_OK && rc != BACKEND_NOTFOUND)
                break;
            found = rc == BACKEND_OK;
        } else {
            const struct table_info *t = tables_find(cat->tables, account, name, nl);
            found = t != NULL;
            if (t)
                cur = *t;
        }
        if (found && !set_acl) {
            *id = cur.id;
            rc = BACKEND_OK;
            break;
        }
        struct backend_cond cond[2] = {{BACKEND_EXPECT_ABSENT, 0}, {BACKEND_EXPECT_ANY, 0}};
        size_t nw = 1;
        buf_reset(&ckey);
        buf_reset(&cval);
        if (found) {
            /* the table still exists (on a shared store: not re-created) */
            cond[0] = cat->shared ? (struct backend_cond){BACKEND_EXPECT_VERSION, cur.id}
                                  : (struct backend_cond){BACKEND_EXPECT_PRESENT, 0};
        } else if (cat->shared) {
            rc = tables_claim_id(cat->tables, cat->kv, &cur.id, &ckey, &cval, &cond[1], err,
                                 errlen);
            if (rc != BACKEND_OK)
                break;
            nw = 2;
        } else {
            cur.id = tables_next_id(cat->tables);
        }
        struct table_info row = {.id = cur.id, .name = found ? cur.name : (char *)name,
                                 .name_len = found ? cur.name_len : nl,
                                 .acl = (unsigned char *)acl, .acl_len = acl_len};
        buf_reset(&k);
        buf_reset(&v);
        keys_table(&k, account, name, nl);
        tables_encode(&row, &v);
        struct backend_write w[2] = {{BACKEND_PUT, k.data, k.len, v.data, v.len},
                                     {BACKEND_PUT, ckey.data, ckey.len, cval.data, cval.len}};
        rc = store_apply(cat->s, -1, w, cond, nw, NULL);
        if (rc == BACKEND_OK) {
            *id = cur.id;
            *created = !found;
            if (!cat->shared && found)
                tables_set_acl(cat->tables, tables_find(cat->tables, account, name, nl), acl,
                               acl_len);
            else if (!cat->shared)
                tables_add(cat->tables, account, cur.id, name, nl, acl, acl_len);
        }
    }
    if (rc == BACKEND_CONFLICT)
        snprintf(err, errlen, "creating table %s/%s kept racing other requests", account,
                 name);
    buf_free(&ckey);
    buf_free(&cval);
    buf_free(&k);
    buf_free(&v);
    arena_free(a);
    return rc;
}

void catalog_resync(struct catalog *cat, int busy)
{
    uint64_t fails = store_sync_failures(cat->s);
    if (fails == cat->sync_failures_seen || cat->shared || busy)
        return;
    char err[256] = "";
    uint64_t purge_max = 0;
    struct table_cache *tc = tables_load(cat->kv, err, sizeof err);
    struct purge *pg = tc ? purge_new() : NULL;
    if (!pg || purge_load(pg, cat->kv, &purge_max, err, sizeof err) != BACKEND_OK) {
        log_error("re-reading the tables after a failed sync failed (%s); retrying",
                  err[0] ? err : "out of memory");
        purge_free(pg);
        tables_free(tc);
        return;
    }
    cat->sync_failures_seen = fails;
    /* ids are never reused: the new cache continues after the old one */
    tables_reserve_id(tc, tables_next_id(cat->tables));
    tables_reserve_id(tc, purge_max);
    tables_free(cat->tables);
    cat->tables = tc;
    purge_free(cat->purge);
    cat->purge = pg;
    metrics_purge(cat->metrics, purge_pending(cat->purge), 0);
    log_info("after a failed sync: the tables and the pending table deletions were read "
             "again from the store");
}

size_t catalog_purges_pending(const struct catalog *cat)
{
    return purge_pending(cat->purge);
}

int catalog_purge_step(struct catalog *cat)
{
    struct purge_progress pr;
    char err[256] = "";
    int rc = purge_step(cat->purge, cat->kv, &pr, err, sizeof err);
    store_note(cat->s, rc, err);
    if (rc != BACKEND_OK) {
        if (!cat->purge_failing)
            log_error("removing the entities of a deleted table failed (retrying): %s", err);
        cat->purge_failing = 1;
        return 1000;  /* the store's probe interval */
    }
    if (cat->purge_failing)
        log_info("removing the entities of deleted tables works again");
    cat->purge_failing = 0;
    /* the entities it removed leave their account's gauge (entities of
       tables deleted before this start were never counted) */
    if (pr.account >= 0)
        metrics_entities_add(cat->metrics, (unsigned)pr.account, -(int64_t)pr.removed);
    metrics_purge(cat->metrics, purge_pending(cat->purge), pr.removed);
    heap_freed(pr.bytes);
    if (pr.finished) {
        log_info("deleted table %llu: all of its entities are removed",
                 (unsigned long long)pr.id);
        reclaim_table(cat->reclaim, pr.id, pr.table_bytes);
    }
    /* after the last purge: one compaction for the tables of a bulk
       delete, and none competing with the purge's writes */
    if (!purge_pending(cat->purge))
        reclaim_start(cat->reclaim);
    return purge_pending(cat->purge) ? 0 : -1;
}

void catalog_adopt(struct catalog *cat)
{
    uint64_t now = clock_mono_us();
    if (!cat->shared || now < cat->rescan_us)
        return;
    cat->rescan_us = now + CATALOG_RESCAN_MS * 1000u;
    char err[256] = "";
    size_t before = purge_pending(cat->purge);
    if (purge_rescan(cat->purge, cat->kv, err, sizeof err) != BACKEND_OK)
        return;   /* the probe reports an unreachable store */
    if (purge_pending(cat->purge) > before) {
        log_info("%zu deleted table(s) found still holding entities: removing them",
                 purge_pending(cat->purge) - before);
        metrics_purge(cat->metrics, purge_pending(cat->purge), 0);
    }
}
