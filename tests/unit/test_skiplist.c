/* test_skiplist.c - the shared skip list (backends/skiplist.h) and key
 * order (backends/bkey.h) against plain models.
 *
 * bkey_cmp is checked against a byte-by-byte reference on keys that are
 * prefixes of each other and hold bytes above 0x7f. The list gets random
 * puts (new keys and replacements), removes, finds, seeks and cursor steps
 * over a small keyspace (so keys repeat, and are prefixes of each other),
 * checked after every operation against a sorted array; several cursors
 * stay open throughout, so nodes are replaced and removed under them
 * (deletes during iteration, as the memory backend and the flat-file
 * index need). A cursor must then stand on the replacement (same key) or
 * the successor, exactly as the model says. The structure is checked too:
 * every level in order and a sub-list of the one below, the count, the
 * height. Under the sanitizer build every node block must be freed once.
 *
 * tests/unit/test_skiplist [OPS [SEED]] */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/bkey.h"
#include "backends/skiplist.h"
#include "core/rand.h"
#include "tests/unit/tap.h"

#define KEY_MAX 4
#define MODEL_MAX 2048   /* more than the keyspace (1554 keys) */
#define NCURSORS 4

/* A node as an owner declares one: its own fields, then the list's node. */
struct tnode {
    uint32_t val;
    struct skl_node sk;
};

struct mkey {
    uint8_t k[KEY_MAX];
    size_t len;
};

struct mentry {
    struct mkey key;
    uint32_t val;
};

static struct mentry model[MODEL_MAX];
static size_t nmodel;
static uint64_t rng_state;

/* The test's own choices. */
static uint64_t rnd(void)
{
    return rand_xorshift64(&rng_state);
}

/* A random key: 0 to KEY_MAX bytes from an alphabet with 0x00 and bytes
 * above 0x7f, so prefixes and signedness matter (len 0 only when
 * allow_empty). */
static struct mkey rand_key(int allow_empty)
{
    static const uint8_t alpha[] = {0x00, 0x01, 0x61, 0x7f, 0x80, 0xff};
    struct mkey k;
    k.len = (size_t)(rnd() % (KEY_MAX + 1));
    if (!k.len && !allow_empty)
        k.len = 1;
    for (size_t i = 0; i < k.len; i++)
        k.k[i] = alpha[rnd() % sizeof alpha];
    return k;
}

/* The reference order: byte by byte as unsigned, the shorter first. */
static int ref_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    for (size_t i = 0; i < al && i < bl; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

/* Index of the first model entry with key >= k (nmodel: none). */
static size_t model_ge(const uint8_t *k, size_t len)
{
    size_t i = 0;
    while (i < nmodel && ref_cmp(model[i].key.k, model[i].key.len, k, len) < 0)
        i++;
    return i;
}

static struct tnode *tnode_of(struct skl_node *n)
{
    return n ? (struct tnode *)((char *)n - offsetof(struct tnode, sk)) : NULL;
}

/* 1 when node n (may be NULL) is model entry i (nmodel: the end). */
static int node_is(struct skl_node *n, size_t i)
{
    if (i >= nmodel)
        return n == NULL;
    return n && ref_cmp(skl_key(n), n->klen, model[i].key.k, model[i].key.len) == 0 &&
           tnode_of(n)->val == model[i].val;
}

/* Every level in order and a sub-list of the level below; level 0 equal
 * to the model; count and height consistent. 1 when all hold. */
static int structure_ok(struct skl *sl)
{
    size_t i = 0;
    for (struct skl_node *n = sl->head[0]; n; n = n->next[0], i++)
        if (!node_is(n, i) || n->height < 1 || n->height > SKL_MAX_HEIGHT ||
            n->height > sl->height)
            return 0;
    if (i != nmodel || sl->count != nmodel)
        return 0;
    if (sl->height > 1 && !sl->head[sl->height - 1])
        return 0;
    for (int lvl = 1; lvl < SKL_MAX_HEIGHT; lvl++) {
        struct skl_node *below = sl->head[0];
        struct skl_node *prev = NULL;
        if (lvl >= sl->height && sl->head[lvl])
            return 0;
        for (struct skl_node *n = lvl < sl->height ? sl->head[lvl] : NULL; n; n = n->next[lvl]) {
            while (below && below != n)
                below = below->next[0];
            if (!below || n->height <= lvl)
                return 0;
            if (prev && bkey_cmp(skl_key(prev), prev->klen, skl_key(n), n->klen) >= 0)
                return 0;
            prev = n;
        }
    }
    return 1;
}

/* bkey_cmp against the reference on every pair of a set of keys. */
static void test_bkey(void)
{
    int bad = 0;
    for (int t = 0; t < 20000; t++) {
        struct mkey a = rand_key(1), b = rand_key(1);
        if (sign(bkey_cmp(a.k, a.len, b.k, b.len)) != sign(ref_cmp(a.k, a.len, b.k, b.len)))
            bad++;
    }
    TEST_EQ_INT(bad, 0, "bkey_cmp agrees with byte-wise unsigned order, prefix first");
    TEST_CHECK(bkey_cmp(NULL, 0, NULL, 0) == 0, "bkey_cmp: two empty keys are equal");
    TEST_CHECK(bkey_cmp(NULL, 0, "a", 1) < 0, "bkey_cmp: the empty key sorts first");
    TEST_CHECK(bkey_cmp("\x80", 1, "\x7f", 1) > 0, "bkey_cmp: bytes compare unsigned");
    TEST_CHECK(bkey_cmp("ab", 2, "abc", 3) < 0 && bkey_cmp("abc", 3, "ab", 2) > 0,
               "bkey_cmp: a proper prefix sorts first");
}

/* A model cursor: the index of the entry it returns next (nmodel: end). */
struct mcur {
    struct skl_cursor c;
    int open;
    size_t pos;
};

/* Random operations against the model; returns the number of failures. */
static int random_ops(long ops, uint64_t seed, int use_finger)
{
    struct skl sl;
    skl_init(&sl, offsetof(struct tnode, sk), seed, use_finger);
    struct mcur cur[NCURSORS];
    memset(cur, 0, sizeof cur);
    nmodel = 0;
    uint32_t next_val = 1;
    int fails = 0;
    long n_put = 0, n_repl = 0, n_rm = 0, n_moved = 0, n_step = 0;
    for (long op = 0; op < ops && fails < 5; op++) {
        unsigned what = (unsigned)(rnd() % 100);
        struct mkey k = rand_key(0);
        if (what < 35) {                        /* put */
            struct skl_node *n = skl_node_new(&sl, k.k, k.len, 0);
            if (!n) {
                fails++;
                break;
            }
            tnode_of(n)->val = next_val;
            struct skl_node *old = skl_put(&sl, n);
            size_t i = model_ge(k.k, k.len);
            int had = i < nmodel && ref_cmp(model[i].key.k, model[i].key.len, k.k, k.len) == 0;
            if (!had) {
                if (nmodel == MODEL_MAX) {
                    fails++;
                    break;
                }
                memmove(&model[i + 1], &model[i], (nmodel - i) * sizeof model[0]);
                nmodel++;
                for (int c = 0; c < NCURSORS; c++)
                    if (cur[c].open && cur[c].pos >= i)
                        cur[c].pos++;           /* same node, one entry later */
                n_put++;
            } else {
                n_repl++;
            }
            model[i].key = k;
            model[i].val = next_val++;
            if ((old != NULL) != had || (old && skl_node_cmp(old, k.k, k.len) != 0)) {
                fails++;
                TEST_CHECK(0, "skl_put returns the replaced node exactly when the key existed");
            }
            skl_node_free(&sl, old);
        } else if (what < 55) {                 /* remove */
            struct skl_node *old = skl_remove(&sl, k.k, k.len);
            size_t i = model_ge(k.k, k.len);
            int had = i < nmodel && ref_cmp(model[i].key.k, model[i].key.len, k.k, k.len) == 0;
            if ((old != NULL) != had || (old && !node_is(old, i))) {
                fails++;
                TEST_CHECK(0, "skl_remove returns the node exactly when the key existed");
            }
            if (had) {
                memmove(&model[i], &model[i + 1], (nmodel - i - 1) * sizeof model[0]);
                nmodel--;
                for (int c = 0; c < NCURSORS; c++)
                    if (cur[c].open && cur[c].pos > i)
                        cur[c].pos--;
                    else if (cur[c].open && cur[c].pos == i)
                        n_moved++;              /* now the successor, same index */
                n_rm++;
            }
            skl_node_free(&sl, old);
        } else if (what < 65) {                 /* find */
            struct skl_node *n = skl_find(&sl, k.k, k.len);
            size_t i = model_ge(k.k, k.len);
            int had = i < nmodel && ref_cmp(model[i].key.k, model[i].key.len, k.k, k.len) == 0;
            if (had ? !node_is(n, i) : n != NULL) {
                fails++;
                TEST_CHECK(0, "skl_find finds exactly the model's keys");
            }
        } else if (what < 72) {                 /* seek (first >= key, or the first) */
            struct mkey s = rand_key(1);
            struct skl_node *n = skl_seek(&sl, s.k, s.len);
            if (!node_is(n, model_ge(s.k, s.len))) {
                fails++;
                TEST_CHECK(0, "skl_seek returns the first key >= the key");
            }
        } else if (what < 78) {                 /* open or re-seek a cursor */
            int c = (int)(rnd() % NCURSORS);
            struct mkey s = rand_key(1);
            if (cur[c].open) {
                skl_cursor_seek(&sl, &cur[c].c, s.k, s.len);
            } else {
                skl_cursor_open(&sl, &cur[c].c, s.k, s.len);
                cur[c].open = 1;
            }
            cur[c].pos = model_ge(s.k, s.len);
        } else if (what < 81) {                 /* close a cursor */
            int c = (int)(rnd() % NCURSORS);
            if (cur[c].open) {
                skl_cursor_close(&sl, &cur[c].c);
                cur[c].open = 0;
            }
        } else {                                /* step a cursor */
            int c = (int)(rnd() % NCURSORS);
            if (cur[c].open && cur[c].c.next) {
                struct skl_node *n = cur[c].c.next;
                cur[c].c.next = n->next[0];
                if (!node_is(n, cur[c].pos)) {
                    fails++;
                    TEST_CHECK(0, "a cursor steps through the model's entries in order");
                }
                cur[c].pos++;
                n_step++;
            }
        }
        for (int c = 0; c < NCURSORS; c++)
            if (cur[c].open && !node_is(cur[c].c.next, cur[c].pos)) {
                fails++;
                printf("# op %ld: cursor %d is not at model entry %zu of %zu\n", op, c,
                       cur[c].pos, nmodel);
                TEST_CHECK(0, "open cursors follow replacements and removals");
            }
        if (op % 64 == 0 && !structure_ok(&sl)) {
            fails++;
            TEST_CHECK(0, "the list's structure is sound");
        }
    }
    if (!structure_ok(&sl)) {
        fails++;
        TEST_CHECK(0, "the list's structure is sound at the end");
    }
    printf("# seed %llu, finger %s: %ld new keys, %ld replaced, %ld removed (%ld under a cursor), "
           "%ld cursor steps, %zu keys left\n", (unsigned long long)seed, use_finger ? "on" : "off", n_put, n_repl, n_rm,
           n_moved, n_step, nmodel);
    int still_open = -1;
    for (int c = 0; c < NCURSORS; c++)
        if (cur[c].open)
            still_open = c;
    skl_free(&sl);
    if (still_open >= 0) {
        TEST_CHECK(!cur[still_open].c.attached && !cur[still_open].c.next,
                   "skl_free detaches an open cursor: it reports the end");
        skl_cursor_close(NULL, &cur[still_open].c);     /* safe once detached */
    }
    TEST_CHECK(sl.count == 0 && sl.head[0] == NULL, "skl_free empties the list");
    if (n_moved == 0 || n_step == 0 || n_repl == 0)
        TEST_CHECK(0, "the random run replaced, removed under a cursor and stepped");
    return fails;
}

/* An ascending run (as the flat-file bulk load does, with
 * skl_find_ge_from() and the caller's update[]): every key lands, also
 * across removals in between. */
static void test_ascending(void)
{
    struct skl sl;
    skl_init(&sl, offsetof(struct tnode, sk), 7, 0);
    struct skl_node *update[SKL_MAX_HEIGHT] = {NULL};
    int ok = 1;
    for (uint32_t i = 0; i < 5000; i++) {
        uint8_t k[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
        struct skl_node *n = skl_node_new(&sl, k, sizeof k, 0);
        if (!n) {
            ok = 0;
            break;
        }
        tnode_of(n)->val = i;
        struct skl_node *at = skl_find_ge_from(&sl, k, sizeof k, update);
        if (at)
            ok = 0;                     /* nothing sorts after the newest key */
        skl_link(&sl, n, update);
        if (i % 100 == 50) {            /* then a key of its own, removed */
            uint8_t r[5] = {k[0], k[1], k[2], k[3], 0};
            struct skl_node *t = skl_node_new(&sl, r, sizeof r, 0);
            if (!t) {
                ok = 0;
                break;
            }
            tnode_of(t)->val = i;
            at = skl_find_ge_from(&sl, r, sizeof r, update);
            skl_link(&sl, t, update);
            at = skl_find_ge_from(&sl, r, sizeof r, update);
            ok &= at == t;
            skl_unlink(&sl, t, update, NULL);
            skl_node_free(&sl, t);
        }
    }
    uint32_t prev = 0, seen = 0;
    for (struct skl_node *n = sl.head[0]; n; n = n->next[0], seen++) {
        if (seen && tnode_of(n)->val <= prev)
            ok = 0;
        prev = tnode_of(n)->val;
    }
    TEST_CHECK(ok && seen == 5000 && sl.count == seen,
               "an ascending run linked with skl_find_ge_from, with removals between, stays ordered");
    skl_free(&sl);
}

/* Ascending searches with skl_find_ge_from() over a large list, with
 * jumps of every size between the keys searched: each must find the same
 * node and leave the same predecessors on every level as a plain search
 * (skl_find_ge without a finger). */
static void test_ascending_jumps(void)
{
    struct skl sl;
    skl_init(&sl, offsetof(struct tnode, sk), 11, 0);
    int ok = 1;
    for (uint32_t i = 0; i < 20000 && ok; i++) {
        uint8_t k[4] = {(uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i, 0};
        struct skl_node *n = skl_node_new(&sl, k, sizeof k, 0);
        ok = n != NULL;
        if (n && skl_put(&sl, n))
            ok = 0;
    }
    struct skl_node *update[SKL_MAX_HEIGHT] = {NULL}, *plain[SKL_MAX_HEIGHT];
    uint32_t at = 0;
    int searches = 0;
    while (ok && at < 20000) {
        uint8_t k[4] = {(uint8_t)(at >> 16), (uint8_t)(at >> 8), (uint8_t)at,
                        (uint8_t)(rnd() & 1)};      /* on a key or just after it */
        struct skl_node *a = skl_find_ge_from(&sl, k, sizeof k, update);
        struct skl_node *b = skl_find_ge(&sl, k, sizeof k, plain);
        ok = a == b && memcmp(update, plain, (size_t)sl.height * sizeof update[0]) == 0;
        searches++;
        uint64_t r = rnd();
        at += (r & 15) == 0 ? 1 + (uint32_t)(r >> 8) % 2000 : 1 + (uint32_t)(r >> 8) % 3;
    }
    TEST_CHECK(ok && searches > 100, "ascending searches with jumps find what a plain search finds, "
                                     "with the same predecessors");
    skl_free(&sl);
}

/* The nodes between two keys of an ascending run that the upper levels
 * step over are not read: level 0 starts from where the level above ended
 * (a tail of a few keys merged into a large index would otherwise walk
 * every node between them). The nodes between live in a page that is
 * made unreadable; the search runs in a child process. */
static void test_ascending_skips(void)
{
    enum { NMID = 400 };
    size_t nsz = (sizeof(struct skl_node) + 2 * sizeof(struct skl_node *) + 3 + 7) & ~(size_t)7;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t midsz = (NMID * nsz + page - 1) & ~(page - 1);
    uint8_t *outer = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *mid = mmap(NULL, midsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (outer == MAP_FAILED || mid == MAP_FAILED) {
        TEST_CHECK(0, "skip test: memory mapped");
        return;
    }
    struct skl sl;
    skl_init(&sl, 0, 1, 0);
    /* key (hi, lo, 0) at height h, carved from mem */
#define SKIP_NODE(mem, hi, lo, h)                                                  \
    do {                                                                            \
        struct skl_node *nd_ = (struct skl_node *)(void *)(mem);                    \
        nd_->klen = 3;                                                              \
        nd_->height = (h);                                                          \
        nd_->flags = 0;                                                             \
        uint8_t *k_ = skl_key(nd_);                                                 \
        k_[0] = (hi), k_[1] = (lo), k_[2] = 0;                                      \
        struct skl_node *up_[SKL_MAX_HEIGHT];                                       \
        skl_find_ge(&sl, k_, 3, up_);                                               \
        skl_link(&sl, nd_, up_);                                                    \
    } while (0)
    SKIP_NODE(outer, 1, 0, 2);                      /* a */
    SKIP_NODE(outer + nsz, 5, 0, 1);                /* the first between: read, a's successor */
    for (int i = 1; i < NMID; i++)
        SKIP_NODE(mid + (size_t)i * nsz, 5, (uint8_t)i, 1);
    SKIP_NODE(outer + 2 * nsz, 7, 0, 2);            /* c */
    SKIP_NODE(outer + 3 * nsz, 9, 0, 2);            /* z */
#undef SKIP_NODE
    struct skl_node *c = (struct skl_node *)(void *)(outer + 2 * nsz);
    struct skl_node *z = (struct skl_node *)(void *)(outer + 3 * nsz);
    pid_t pid = fork();
    if (pid == 0) {
        struct skl_node *update[SKL_MAX_HEIGHT] = {NULL};
        const uint8_t k0[3] = {2, 0, 0}, k1[3] = {8, 0, 0};
        skl_find_ge_from(&sl, k0, 3, update);       /* update: a on both levels */
        if (mprotect(mid, midsz, PROT_NONE) != 0)
            _exit(3);
        struct skl_node *r = skl_find_ge_from(&sl, k1, 3, update);
        _exit(r == z && update[0] == c && update[1] == c ? 0 : 2);
    }
    int status = 0;
    int waited = pid > 0 && waitpid(pid, &status, 0) == pid;
    TEST_CHECK(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "an ascending search does not walk level 0 over the nodes the level above stepped "
               "over");
    munmap(mid, midsz);
    munmap(outer, page);
}

int main(int argc, char **argv)
{
    long ops = argc > 1 ? atol(argv[1]) : 200000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 0x5eed;
    rng_state = seed ? seed : 1;
    test_bkey();
    test_ascending();
    test_ascending_jumps();
    test_ascending_skips();
    int fails = 0;
    for (int run = 0; run < 4; run++)
        fails += random_ops(ops / 4, seed + (uint64_t)run, run % 2);   /* finger on and off */
    TEST_EQ_INT(fails, 0, "random puts, removes, finds, seeks and cursor steps match the model");
    return test_done();
}
