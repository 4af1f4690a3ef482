/* test_store.c - the store layer without HTTP (store/store.h,
 * store/catalog.h): the write rules the request pipeline relies on.
 *
 * A store "shared" by several front ends is simulated by the memory
 * backend with the shared capability set, and two catalogues on it (two
 * front ends: each has its own cache, guesses and id claims). The rules:
 *   - table ids come from one counter row: unique and increasing across
 *     front ends, never reused after a delete;
 *   - a delete or an ACL change expects the row's version (its id), so a
 *     table deleted and re-created by another front end is not touched;
 *   - entity commits: one Timestamp per commit, strictly increasing; a
 *     refused commit (an expectation that failed) moves no later one;
 *     on a shared store every judged write carries its expectation;
 *   - service properties round-trip; a deleted table's entities are
 *     removed by the upkeep steps. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/arena.h"
#include "core/buf.h"
#include "store/catalog.h"
#include "store/keys.h"
#include "store/kv.h"
#include "store/store.h"
#include "tests/unit/tap.h"

static struct arena *A;

/* The memory backend claiming to be shared: the store then keeps the
 * rules of several front ends on one engine. */
static struct backend_ops shared_memory;

/* Opens a memory kv (shared or not) and a store on it. */
static struct store *open_store(int shared, struct kv **kv)
{
    struct backend_options bo = {.durability = BACKEND_DURABLE_NONE};
    char err[256];
    const struct backend_ops *ops = &backend_memory_ops;
    if (shared) {
        shared_memory = backend_memory_ops;
        shared_memory.caps |= BACKEND_CAP_SHARED;
        ops = &shared_memory;
    }
    if (kv_open(ops, &bo, kv, err, sizeof err) != BACKEND_OK)
        return NULL;
    return store_new(*kv, DURABILITY_NONE);
}

/* An entity pk/rk with one Int32 property. */
static void make_entity(struct entity *e, const char *pk, const char *rk, int32_t v)
{
    memset(e, 0, sizeof *e);
    e->pk = pk;
    e->pk_len = strlen(pk);
    e->rk = rk;
    e->rk_len = strlen(rk);
    struct property *p = entity_add(A, e, "V", 1);
    p->v.type = EDM_INT32;
    p->v.u.i32 = v;
}

/* The entity key of pk/rk in table id (in A). */
static const char *ekey(uint64_t id, const char *pk, const char *rk, size_t *len)
{
    struct buf b;
    buf_init(&b);
    keys_entity(&b, id, pk, strlen(pk), rk, strlen(rk));
    char *k = arena_alloc(A, b.len);
    memcpy(k, b.data, b.len);
    *len = b.len;
    buf_free(&b);
    return k;
}

/* Commits one put of e at key with expectation x (blind: sent always). */
static int put1(struct store *s, const char *key, size_t kl, struct entity *e,
                struct store_expect x, int64_t cur, int64_t *ts)
{
    struct buf vb;
    buf_init(&vb);
    struct store_put p = {.key = key, .key_len = kl, .e = e, .expect = x, .blind = 1,
                          .cur_ticks = cur};
    int rc = store_commit(s, -1, &p, 1, &vb, ts, NULL);
    buf_free(&vb);
    return rc;
}

static void test_shared_catalog(void)
{
    struct kv *kv;
    struct store *s = open_store(1, &kv);
    TEST_CHECK(s != NULL, "open a shared memory store");
    if (!s)
        return;
    char err[256];
    struct catalog *a = catalog_open(s, NULL, NULL, err, sizeof err);
    struct catalog *b = catalog_open(s, NULL, NULL, err, sizeof err);
    TEST_CHECK(a && b, "two front ends' catalogues on it");
    TEST_CHECK(catalog_shared(a) && catalog_shared(b), "both know the store is shared");

    uint64_t id1 = 0, id2 = 0, id3 = 0;
    TEST_EQ_INT(catalog_create(a, "acct", "One", 3, &id1), STORE_OK, "front end A creates One");
    TEST_EQ_INT(catalog_create(b, "acct", "Two", 3, &id2), STORE_OK, "front end B creates Two");
    TEST_CHECK(id2 > id1, "B's id comes after A's (one counter row)");
    TEST_EQ_INT(catalog_create(b, "acct", "one", 3, &id3), STORE_CONFLICT,
                "B cannot create One again (names are case-insensitive)");

    const struct table_info *t = NULL;
    TEST_EQ_INT(catalog_table(b, A, "acct", "ONE", 3, &t), STORE_OK, "B reads One's row");
    TEST_CHECK(t && t->id == id1 && t->name_len == 3 && memcmp(t->name, "One", 3) == 0,
               "with A's id and its original casing");
    struct table_info stale = *t;

    TEST_EQ_INT(catalog_delete(a, -1, "acct", "One", 3), STORE_OK, "A deletes One");
    TEST_EQ_INT(catalog_table(b, A, "acct", "One", 3, &t), STORE_NOTFOUND,
                "B no longer finds it");
    TEST_EQ_INT(catalog_delete(b, -1, "acct", "One", 3), STORE_NOTFOUND,
                "a second delete answers not found");
    TEST_EQ_INT(catalog_create(b, "acct", "One", 3, &id3), STORE_OK, "B re-creates One");
    TEST_CHECK(id3 > id2, "with a new id: ids are never reused");
    static const unsigned char acl[] = {1, 2, 3};
    TEST_EQ_INT(catalog_set_acl(a, &stale, "acct", acl, sizeof acl), STORE_NOTFOUND,
                "an ACL change for the deleted table does not touch the new one");
    TEST_EQ_INT(catalog_table(a, A, "acct", "One", 3, &t), STORE_OK, "A reads the new row");
    TEST_CHECK(t && t->id == id3 && t->acl_len == 0, "it has no ACL");
    TEST_EQ_INT(catalog_set_acl(a, t, "acct", acl, sizeof acl), STORE_OK,
                "an ACL change for the current table works");
    TEST_EQ_INT(catalog_table(b, A, "acct", "One", 3, &t), STORE_OK, "B reads it");
    TEST_CHECK(t && t->acl_len == sizeof acl && memcmp(t->acl, acl, sizeof acl) == 0,
               "and sees the ACL A wrote");

    uint64_t guess = 0;
    TEST_CHECK(catalog_guess(b, "acct", "One", 3, &guess) && guess == id3,
               "B's guess of One's id is the id its last read showed");
    TEST_CHECK(!catalog_known(b, "acct", "One", 3), "a shared catalogue caches no table");

    /* an import's table: found, or created with the counter */
    int created = -1;
    uint64_t id4 = 0;
    TEST_EQ_INT(catalog_import_table(a, "acct", "Two", NULL, 0, 0, &id4, &created, err,
                                     sizeof err),
                STORE_OK, "import names an existing table");
    TEST_CHECK(id4 == id2 && created == 0, "its id, not created");
    TEST_EQ_INT(catalog_import_table(a, "acct", "Three", NULL, 0, 0, &id4, &created, err,
                                     sizeof err),
                STORE_OK, "import names a new table");
    TEST_CHECK(id4 > id3 && created == 1, "created with the next id");

    /* One's first incarnation left a purge record: A's upkeep removes it */
    TEST_EQ_INT((int)catalog_purges_pending(a), 1, "the deletion is queued for its entities");
    int steps = 0, ms;
    while ((ms = catalog_purge_step(a)) >= 0 && steps < 100)
        steps++;
    TEST_EQ_INT(ms, -1, "the purge steps finish");
    catalog_free(a);
    catalog_free(b);
    store_free(s);
    kv_close(kv);
}

static void test_commit_rules(int shared)
{
    struct kv *kv;
    struct store *s = open_store(shared, &kv);
    TEST_CHECK(s != NULL, shared ? "open a shared store" : "open a local store");
    if (!s)
        return;
    char err[256];
    struct catalog *cat = catalog_open(s, NULL, NULL, err, sizeof err);
    uint64_t id;
    TEST_EQ_INT(catalog_create(cat, "acct", "t", 1, &id), STORE_OK, "create a table");
    size_t kl;
    const char *key = ekey(id, "p", "r", &kl);
    struct entity e;
    make_entity(&e, "p", "r", 1);
    int64_t ts1 = 0, ts2 = 0, ts3 = 0;
    struct store_expect absent = {STORE_EXPECT_ABSENT, 0};
    TEST_EQ_INT(put1(s, key, kl, &e, absent, 0, &ts1), STORE_OK, "insert");
    TEST_CHECK(ts1 > 0 && e.timestamp == ts1, "the commit's Timestamp is the entity's");
    TEST_EQ_INT(put1(s, key, kl, &e, absent, 0, &ts2), STORE_CONFLICT,
                "a second insert is refused by its expectation");

    /* If-Match naming a version far in the future: refused, and the
     * clock is not moved by it */
    int64_t future = ts1 + (int64_t)10000000 * 3600 * 24 * 365;   /* a year of ticks */
    struct store_expect bogus = {STORE_EXPECT_VERSION, (uint64_t)future};
    TEST_EQ_INT(put1(s, key, kl, &e, bogus, future, &ts2), STORE_CONFLICT,
                "a write expecting a version that is not there is refused");
    struct store_expect cur = {STORE_EXPECT_VERSION, (uint64_t)ts1};
    TEST_EQ_INT(put1(s, key, kl, &e, cur, ts1, &ts3), STORE_OK, "a write of the current version");
    TEST_CHECK(ts3 > ts1, "gets a later Timestamp");
    TEST_CHECK(ts3 < future, "which the refused write did not push past its ETag");

    struct entity got = {0};
    TEST_EQ_INT(store_entity_get(s, A, key, kl, &got), 1, "read it back");
    TEST_CHECK(got.timestamp == ts3 && got.nprops == 1 && got.props[0].v.u.i32 == 1,
               "the stored entity has the last commit's Timestamp");

    /* two entities in one commit share one Timestamp */
    size_t kl2;
    const char *key2 = ekey(id, "p", "s", &kl2);
    struct entity e2;
    make_entity(&e2, "p", "s", 2);
    struct store_put two[2] = {
        {.key = key, .key_len = kl, .e = NULL, .expect = {STORE_EXPECT_PRESENT, 0}},
        {.key = key2, .key_len = kl2, .e = &e2, .expect = {STORE_EXPECT_ABSENT, 0}},
    };
    struct buf vb;
    buf_init(&vb);
    int64_t ts4 = 0;
    TEST_EQ_INT(store_commit(s, -1, two, 2, &vb, &ts4, NULL), STORE_OK,
                "a delete and an insert in one commit");
    TEST_CHECK(ts4 > ts3 && e2.timestamp == ts4, "one Timestamp, after the last");
    TEST_EQ_INT(store_entity_get(s, A, key, kl, &got), 0, "the deleted one is gone");

    /* a judged write: on a shared store its expectation always goes */
    struct store_precond pc = {0};
    struct store_expect x;
    TEST_EQ_INT(store_judge(STORE_REPLACE, &pc, 1, ts4, shared, &x), STORE_GO,
                "an unconditional replace of an existing entity goes");
    if (shared)
        TEST_CHECK(x.kind == STORE_EXPECT_VERSION && x.version == (uint64_t)ts4,
                   "shared: it expects the version read");
    else
        TEST_CHECK(x.kind == STORE_EXPECT_ANY, "local: it needs no expectation");
    TEST_EQ_INT(store_judge(STORE_UPSERT, &pc, 0, 0, shared, &x), STORE_GO,
                "an upsert that creates goes");
    TEST_CHECK(x.kind == (shared ? STORE_EXPECT_ABSENT : STORE_EXPECT_ANY),
               shared ? "shared: it expects the key absent" : "local: blind");
    struct store_put late = {.key = key2, .key_len = kl2, .e = &e2,
                             .expect = {STORE_EXPECT_VERSION, (uint64_t)ts1}, .blind = 0};
    int64_t ts5 = 0;
    int rc = store_commit(s, -1, &late, 1, &vb, &ts5, NULL);
    if (shared)
        TEST_EQ_INT(rc, STORE_CONFLICT, "shared: a judgement on a stale read is refused");
    else
        TEST_EQ_INT(rc, STORE_OK, "local: a judged write is applied as judged (no race)");
    buf_free(&vb);

    /* service properties */
    const char *doc;
    size_t dl;
    TEST_EQ_INT(store_props_get(s, A, "acct", &doc, &dl), STORE_NOTFOUND,
                "no service properties stored yet");
    TEST_EQ_INT(store_props_put(s, "acct", "<x/>", 4), STORE_OK, "store a document");
    TEST_EQ_INT(store_props_get(s, A, "acct", &doc, &dl), STORE_OK, "read it");
    TEST_CHECK(dl == 4 && memcmp(doc, "<x/>", 4) == 0, "byte for byte");

    /* a scan over the table, then the table's deletion and purge */
    struct buf lo, hi;
    buf_init(&lo);
    buf_init(&hi);
    keys_entity_table_prefix(&lo, id);
    keys_entity_table_prefix(&hi, id);
    keys_prefix_end(&hi);
    struct store_scan *sc;
    int n = 0;
    const void *k, *v;
    size_t kn, vn;
    TEST_EQ_INT(store_scan_open(s, lo.data, lo.len, hi.data, hi.len, &sc, err, sizeof err),
                STORE_OK, "open a scan of the table");
    while (store_scan_next(sc, &k, &kn, &v, &vn) == 1)
        n++;
    store_scan_close(sc);
    TEST_EQ_INT(n, 1, "it holds one entity");
    TEST_EQ_INT(catalog_delete(cat, -1, "acct", "t", 1), STORE_OK, "delete the table");
    while (catalog_purge_step(cat) >= 0)
        ;
    n = 0;
    store_scan_open(s, lo.data, lo.len, hi.data, hi.len, &sc, err, sizeof err);
    while (store_scan_next(sc, &k, &kn, &v, &vn) == 1)
        n++;
    store_scan_close(sc);
    TEST_EQ_INT(n, 0, "the upkeep removed its entities");
    buf_free(&lo);
    buf_free(&hi);
    catalog_free(cat);
    store_free(s);
    kv_close(kv);
}

static void test_local_cache(void)
{
    struct kv *kv;
    struct store *s = open_store(0, &kv);
    char err[256];
    struct catalog *cat = catalog_open(s, NULL, NULL, err, sizeof err);
    TEST_CHECK(!catalog_shared(cat), "a memory store is this process's own");
    uint64_t id1, id2;
    TEST_EQ_INT(catalog_create(cat, "acct", "Cached", 6, &id1), STORE_OK, "create a table");
    TEST_CHECK(catalog_known(cat, "acct", "cached", 6), "the cache knows it at once");
    TEST_EQ_INT(catalog_create(cat, "acct", "CACHED", 6, &id2), STORE_CONFLICT,
                "a second create is refused from the cache");
    catalog_free(cat);
    /* a restart reads the rows again */
    cat = catalog_open(s, NULL, NULL, err, sizeof err);
    const struct table_info *t;
    TEST_EQ_INT(catalog_table(cat, NULL, "acct", "Cached", 6, &t), STORE_OK,
                "a new catalogue on the same store finds it");
    TEST_CHECK(t && t->id == id1, "with its id");
    TEST_EQ_INT(catalog_create(cat, "acct", "Other", 5, &id2), STORE_OK, "create another");
    TEST_CHECK(id2 > id1, "its id follows");
    catalog_free(cat);
    store_free(s);
    kv_close(kv);
}

int main(void)
{
    A = arena_new(4096);
    test_shared_catalog();
    test_commit_rules(0);
    test_commit_rules(1);
    test_local_cache();
    arena_free(A);
    return test_done();
}
