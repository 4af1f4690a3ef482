/* test_purge.c - the background purge of deleted tables (store/purge.h)
 * on every built-in backend, through the vtable as the server drives it.
 *
 *     test_purge [BACKEND [N]]      default: memory, leveldb, flatfile; N
 *                                   entities (200000)
 *
 * A spy vtable wraps the backend to see what the purge asks of it: every
 * purge step must open its cursor at the last key the step before deleted
 * (never again at the table's first key, whose deletion markers LevelDB
 * would walk again and again), delete at most PURGE_CHUNK keys in one
 * apply() together with the record's new resume key, and leave every other
 * table alone. The purge must resume from its record after the purge
 * object is dropped and the store reopened (what a restart does), find
 * entities that belong to no table and no record, and report the largest
 * id it holds. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/buf.h"
#include "store/keys.h"
#include "store/kv.h"
#include "store/purge.h"
#include "store/tables.h"
#include "tests/unit/tap.h"

static const struct backend_ops *real;
static char label[32];

/* ---- the spy ---- */

static struct {
    int watching;              /* check the purge's cursors and writes */
    uint64_t id;               /* the table being purged */
    struct buf last;           /* the last entity key of it deleted */
    int bad_start;             /* a cursor opened before last */
    int big_apply;             /* an apply() of more than PURGE_CHUNK deletes */
    int foreign;               /* a write outside the purged table */
    int no_record;             /* a chunk without its record write */
    size_t iter_opens, applies;
} spy;

static int spy_iter_open(struct backend_store *st, const void *start, size_t start_len,
                         const void *end, size_t end_len, struct backend_iter **out,
                         char *err, size_t errlen)
{
    if (spy.watching) {
        spy.iter_opens++;
        size_t n = start_len < spy.last.len ? start_len : spy.last.len;
        int c = n ? memcmp(start, spy.last.data, n) : 0;
        if (spy.last.len && (c < 0 || (c == 0 && start_len < spy.last.len)))
            spy.bad_start = 1;
    }
    return real->iter_open(st, start, start_len, end, end_len, out, err, errlen);
}

/* 1 when key is an entity key of table id. */
static int of_table(const void *key, size_t len, uint64_t id)
{
    struct buf p;
    buf_init(&p);
    keys_entity_table_prefix(&p, id);
    int r = len >= p.len && memcmp(key, p.data, p.len) == 0;
    buf_free(&p);
    return r;
}

/* Checks one apply's writes (v1 or v2 method). */
static void spy_watch(const struct backend_write *w, size_t n)
{
    if (spy.watching) {
        spy.applies++;
        size_t dels = 0;
        int record = 0;
        struct buf rk;
        buf_init(&rk);
        keys_purge(&rk, spy.id);
        for (size_t i = 0; i < n; i++) {
            if (w[i].key_len == rk.len && memcmp(w[i].key, rk.data, rk.len) == 0) {
                record = 1;
                continue;
            }
            if (w[i].op != BACKEND_DELETE || !of_table(w[i].key, w[i].key_len, spy.id)) {
                spy.foreign = 1;
                continue;
            }
            dels++;
            buf_reset(&spy.last);
            buf_append(&spy.last, w[i].key, w[i].key_len);
        }
        buf_free(&rk);
        if (dels > PURGE_CHUNK)
            spy.big_apply = 1;
        if (!record)
            spy.no_record = 1;
    }
}

static int spy_apply(struct backend_store *st, const struct backend_write *w, size_t n,
                     char *err, size_t errlen)
{
    spy_watch(w, n);
    return real->apply(st, w, n, err, errlen);
}

static int spy_apply_v2(struct backend_store *st, const struct backend_write *w,
                        const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    spy_watch(w, n);
    return real->apply_v2(st, w, cond, n, call);
}

static struct backend_ops spy_ops;

/* ---- helpers ---- */

static char base[4096];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Opens the store of the backend under test through the spy (the store
 * layer's kv, as the server does). */
static struct kv *open_store(const char *name)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", base, name);
    struct backend_options o = {.data_dir = dir, .durability = BACKEND_DURABLE_NONE};
    struct kv *st = NULL;
    char err[512] = "";
    if (kv_open(&spy_ops, &o, &st, err, sizeof err) != BACKEND_OK) {
        printf("# open %s: %s\n", dir, err);
        return NULL;
    }
    return st;
}

/* Writes a table row for id (account "acct", name) directly. */
static int put_table(struct kv *st, const char *name, uint64_t id)
{
    struct buf k, v;
    buf_init(&k);
    buf_init(&v);
    keys_table(&k, "acct", name, strlen(name));
    struct table_info t = {.id = id, .name = (char *)name, .name_len = strlen(name)};
    tables_encode(&t, &v);
    struct backend_write w = {BACKEND_PUT, k.data, k.len, v.data, v.len};
    char err[256];
    int rc = kv_apply(st, &w, NULL, 1, 0, NULL, err, sizeof err);
    buf_free(&k);
    buf_free(&v);
    return rc;
}

/* The value of every entity put_entities writes. */
static const char entity_val[] = "an entity value of some forty bytes....";

/* The key and value bytes of the n entities put_entities writes for
 * table id (what purging them must report). */
static size_t entity_bytes(uint64_t id, size_t n)
{
    struct buf key;
    buf_init(&key);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char pk[32], rk[32];
        int pl = snprintf(pk, sizeof pk, "p%06zu", i / 100);
        int rl = snprintf(rk, sizeof rk, "r%07zu", i);
        buf_reset(&key);
        keys_entity(&key, id, pk, (size_t)pl, rk, (size_t)rl);
        total += key.len + sizeof entity_val - 1;
    }
    buf_free(&key);
    return total;
}

/* Writes n entities of table id (partitions of 100 rows), 5000 a batch. */
static int put_entities(struct kv *st, uint64_t id, size_t n)
{
    enum { B = 5000 };
    struct backend_write *w = malloc(B * sizeof *w);
    size_t *offs = malloc(B * sizeof *offs);
    struct buf keys;
    buf_init(&keys);
    int rc = BACKEND_OK;
    for (size_t i = 0; i < n && rc == BACKEND_OK;) {
        size_t m = 0;
        buf_reset(&keys);
        for (; m < B && i < n; m++, i++) {
            char pk[32], rk[32];
            int pl = snprintf(pk, sizeof pk, "p%06zu", i / 100);
            int rl = snprintf(rk, sizeof rk, "r%07zu", i);
            offs[m] = keys.len;
            keys_entity(&keys, id, pk, (size_t)pl, rk, (size_t)rl);
        }
        for (size_t j = 0; j < m; j++) {
            size_t end = j + 1 < m ? offs[j + 1] : keys.len;
            w[j] = (struct backend_write){BACKEND_PUT, keys.data + offs[j], end - offs[j],
                                          entity_val, sizeof entity_val - 1};
        }
        char err[256];
        rc = kv_apply(st, w, NULL, m, 0, NULL, err, sizeof err);
    }
    buf_free(&keys);
    free(offs);
    free(w);
    return rc;
}

/* Entities of table id in the store. */
static size_t count_entities(struct kv *st, uint64_t id)
{
    struct buf s, e;
    buf_init(&s);
    buf_init(&e);
    keys_entity_table_prefix(&s, id);
    keys_entity_table_prefix(&e, id);
    keys_prefix_end(&e);
    struct kv_iter *it;
    char err[256];
    size_t n = 0;
    int watching = spy.watching;   /* the test's own reads are not the purge's */
    spy.watching = 0;
    if (kv_iter_open(st, s.data, s.len, e.data, e.len, &it, err, sizeof err) == BACKEND_OK) {
        const void *k, *v;
        size_t kl, vl;
        while (kv_iter_next(it, &k, &kl, &v, &vl) == 1)
            n++;
        kv_iter_close(it);
    }
    spy.watching = watching;
    buf_free(&s);
    buf_free(&e);
    return n;
}

/* 1 when the purge record of id is in the store. */
static int has_record(struct kv *st, uint64_t id)
{
    struct buf k;
    buf_init(&k);
    keys_purge(&k, id);
    const void *v = NULL;
    size_t vl;
    char err[256];
    int rc = kv_get(st, k.data, k.len, &v, &vl, err, sizeof err);
    buf_free(&k);
    return rc == BACKEND_OK;
}

/* Starts the purge of id as Delete Table does: row delete + record put. */
static int start_purge(struct kv *st, struct purge *p, const char *name, uint64_t id)
{
    struct buf tk, rk, rv;
    buf_init(&tk);
    buf_init(&rk);
    buf_init(&rv);
    keys_table(&tk, "acct", name, strlen(name));
    purge_record(&rk, &rv, id);
    struct backend_write w[2] = {{BACKEND_DELETE, tk.data, tk.len, NULL, 0},
                                 {BACKEND_PUT, rk.data, rk.len, rv.data, rv.len}};
    char err[256];
    int rc = kv_apply(st, w, NULL, 2, 0, NULL, err, sizeof err);
    buf_free(&tk);
    buf_free(&rk);
    buf_free(&rv);
    if (rc == BACKEND_OK)
        purge_add(p, id, 3);
    return rc;
}

/* Bytes the purge steps of run_steps reported (since the last reset). */
static size_t purged_bytes;

/* Runs purge steps (at most max; 0 = until done). Returns the steps, or
 * -1 when one failed. *removed adds up what they report. */
static long run_steps(struct purge *p, struct kv *st, long max, size_t *removed,
                      int *finished)
{
    long steps = 0;
    while (purge_pending(p) && (max == 0 || steps < max)) {
        struct purge_progress pr;
        char err[256] = "";
        if (purge_step(p, st, &pr, err, sizeof err) != BACKEND_OK) {
            printf("# purge_step: %s\n", err);
            return -1;
        }
        *removed += pr.removed;
        purged_bytes += pr.bytes;
        if (pr.finished)
            (*finished)++;
        steps++;
    }
    return steps;
}

static void name(char *out, size_t cap, const char *what)
{
    snprintf(out, cap, "[%s] %s", label, what);
}

#define CHECK(cond, what)                                                                      \
    do {                                                                                       \
        char nm_[300];                                                                         \
        name(nm_, sizeof nm_, what);                                                           \
        tap_check(!!(cond), __FILE__, __LINE__, nm_);                                          \
    } while (0)

static void spy_reset(uint64_t id)
{
    buf_reset(&spy.last);
    spy.watching = 1;
    spy.id = id;
    spy.bad_start = spy.big_apply = spy.foreign = spy.no_record = 0;
    spy.iter_opens = spy.applies = 0;
}

/* The whole scenario on one backend. */
static void run_backend(const char *backend, size_t n)
{
    char err[256] = "";
    real = backend_lookup(backend, err, sizeof err);
    snprintf(label, sizeof label, "%s", backend);
    if (!real) {
        CHECK(0, "backend found");
        return;
    }
    spy_ops = *real;
    spy_ops.iter_open = spy_iter_open;
    spy_ops.apply = real->apply ? spy_apply : NULL;
    if (real->version >= 2 && real->apply_v2)
        spy_ops.apply_v2 = spy_apply_v2;
    int durable = strcmp(backend, "memory") != 0;
    struct kv *st = open_store(backend);
    if (!st) {
        CHECK(0, "open");
        return;
    }

    /* tables 7 (big, deleted), 8 (kept), 5 (deleted by an old version: no
       row, no record), and a record of id 40 with no entity left */
    int ok = put_table(st, "big", 7) == BACKEND_OK && put_table(st, "kept", 8) == BACKEND_OK &&
             put_entities(st, 7, n) == BACKEND_OK && put_entities(st, 8, 1000) == BACKEND_OK &&
             put_entities(st, 5, 3000) == BACKEND_OK;
    CHECK(ok, "load the entities");
    CHECK(count_entities(st, 7) == n, "all entities of the big table are there");

    struct purge *p = purge_new();
    uint64_t max_id = 99;
    CHECK(purge_load(p, st, &max_id, err, sizeof err) == BACKEND_OK,
          "purge_load of the store");
    CHECK(purge_pending(p) == 1 && max_id == 5,
          "the entities of a table with neither row nor record are found (id 5), the live "
          "tables' are not");
    size_t removed = 0;
    int finished = 0;
    spy_reset(5);
    purged_bytes = 0;
    long steps = run_steps(p, st, 0, &removed, &finished);
    CHECK(steps == 3 && removed == 3000 && finished == 1 && count_entities(st, 5) == 0 &&
              !has_record(st, 5),
          "that orphaned table is purged in 3 steps, no record left");
    CHECK(purged_bytes == entity_bytes(5, 3000),
          "the steps report the bytes of the keys and values they deleted");
    spy.watching = 0;

    /* Delete Table of the big table: no entity is touched by the start */
    CHECK(start_purge(st, p, "big", 7) == BACKEND_OK, "the row delete and record put");
    CHECK(count_entities(st, 7) == n && has_record(st, 7), "the record is written");
    long first = (long)(n / PURGE_CHUNK / 3);
    removed = 0;
    finished = 0;
    spy_reset(7);
    steps = run_steps(p, st, first, &removed, &finished);
    CHECK(steps == first && removed == (size_t)first * PURGE_CHUNK && !finished,
          "a third of the purge: PURGE_CHUNK entities a step");
    CHECK(count_entities(st, 7) == n - removed, "... and they are gone from the store");
    CHECK(!spy.bad_start, "each step's cursor starts at the last key deleted");
    CHECK(!spy.big_apply && !spy.no_record && !spy.foreign,
          "each step is one apply() of at most PURGE_CHUNK deletes with the record's "
          "resume key, inside the table");

    /* a restart: the purge object is dropped, the store reopened */
    purge_free(p);
    if (durable) {
        kv_close(st);
        st = open_store(backend);
        if (!st) {
            CHECK(0, "reopen");
            return;
        }
    }
    p = purge_new();
    spy.watching = 0;   /* purge_load's scans are not the steps watched */
    int loaded = purge_load(p, st, &max_id, err, sizeof err) == BACKEND_OK;
    spy.watching = 1;
    CHECK(loaded && purge_pending(p) == 1 && max_id == 7,
          "after a restart the unfinished purge is found from its record");
    /* spy.last still holds the last key deleted before the restart */
    size_t before = removed;
    steps = run_steps(p, st, 0, &removed, &finished);
    CHECK(!spy.bad_start, "the resumed purge starts at the recorded key, not the table's first");
    CHECK(finished == 1 && removed == n && count_entities(st, 7) == 0 && !has_record(st, 7),
          "the resumed purge removes the rest, then its record");
    CHECK(steps >= (long)((n - before) / PURGE_CHUNK) &&
              steps <= (long)((n - before) / PURGE_CHUNK) + 2,
          "in about (N - done) / PURGE_CHUNK steps");
    CHECK(!spy.big_apply && !spy.no_record && !spy.foreign, "bounded chunks, still");
    spy.watching = 0;
    CHECK(count_entities(st, 8) == 1000, "the kept table's entities are all there");

    /* a record whose value this version does not know: from the start */
    struct buf rk;
    buf_init(&rk);
    keys_purge(&rk, 40);
    struct backend_write w = {BACKEND_PUT, rk.data, rk.len, "\x09junk", 5};
    CHECK(kv_apply(st, &w, NULL, 1, 0, NULL, err, sizeof err) == BACKEND_OK &&
              put_entities(st, 40, 2500) == BACKEND_OK,
          "a record of another version, with entities");
    buf_free(&rk);
    purge_free(p);
    p = purge_new();
    CHECK(purge_load(p, st, &max_id, err, sizeof err) == BACKEND_OK && max_id == 40,
          "purge_load reports the largest id it holds");
    removed = 0;
    finished = 0;
    run_steps(p, st, 0, &removed, &finished);
    CHECK(removed == 2500 && count_entities(st, 40) == 0 && !has_record(st, 40),
          "... and purges it from the table's first key");
    purge_free(p);

    /* nothing pending: a store of live tables only */
    p = purge_new();
    CHECK(purge_load(p, st, &max_id, err, sizeof err) == BACKEND_OK &&
              purge_pending(p) == 0 && max_id == 0,
          "a store with live tables only has nothing to purge");
    purge_free(p);
    kv_close(st);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 200000;
    snprintf(base, sizeof base, "%s/test_purge.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(base)) {
        TEST_CHECK(0, "mkdtemp");
        return test_done();
    }
    buf_init(&spy.last);
    static const char *const all[] = {"memory", "leveldb", "flatfile"};
    for (size_t i = 0; i < 3; i++)
        if (!only || strcmp(only, all[i]) == 0)
            run_backend(all[i], n);
    buf_free(&spy.last);
    nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return test_done();
}
