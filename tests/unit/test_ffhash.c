/* test_ffhash.c - the flat-file index's hash of keys (backends/ffhash.c
 * through ffindex.c). Every point look-up must give what the skip list's
 * own search gives, before, during and after a build, across puts,
 * replacements and removes between the build's slices, across the table
 * growing and shrinking, and when keys crowd one slot past the probe
 * limit (they are then found through the list, in bounded time). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backends/ffindex.h"
#include "tests/unit/tap.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int ascending;           /* key_of: keys in the order of i (a checkpoint's load) */

/* Key i as text, the way partition and row keys look. */
static size_t key_of(uint64_t i, char *buf)
{
    if (ascending)
        return (size_t)sprintf(buf, "pk\x01rk-%012llu", (unsigned long long)i);
    return (size_t)sprintf(buf, "pk%llu\x01rk-%llu", (unsigned long long)(i % 97),
                           (unsigned long long)i);
}

/* Puts key i; returns 1 when it was new. */
static int put(struct ffidx *ix, uint64_t i)
{
    char k[64];
    size_t kl = key_of(i, k);
    struct ffidx_node *n = ffidx_node_new(ix, k, kl);
    if (!n)
        return -1;
    n->vlen = (uint32_t)i;
    struct ffidx_node *old = ffidx_put(ix, n);
    ffidx_node_free(ix, old);
    return old == NULL;
}

static int del(struct ffidx *ix, uint64_t i)
{
    char k[64];
    size_t kl = key_of(i, k);
    struct ffidx_node *old = ffidx_remove(ix, k, kl);
    ffidx_node_free(ix, old);
    return old != NULL;
}

/* 1 when ffidx_find (the hash where it answers) agrees with the list's
 * search for key i. */
static int agrees(struct ffidx *ix, uint64_t i)
{
    char k[64];
    size_t kl = key_of(i, k);
    struct ffidx_node *a = ffidx_find(ix, k, kl);
    struct ffidx_node *b = ffidx_of(skl_find(&ix->sl, k, kl));
    return a == b && (!a || a->vlen == (uint32_t)i);
}

/* Every key below range, linked or not, found the same both ways. */
static int all_agree(struct ffidx *ix, uint64_t range)
{
    for (uint64_t i = 0; i < range; i++)
        if (!agrees(ix, i))
            return 0;
    return 1;
}

static void finish(struct ffidx *ix)
{
    while (ffidx_hash_step(ix))
        ;
}

int main(void)
{
    struct ffidx ix;

    /* random writes and slices of builds, checked against the list */
    ffidx_init(&ix, 1);
    TEST_EQ_INT(ffidx_hash_start(&ix), 0, "the hash starts on an empty index");
    const uint64_t range = 30000;
    int bad = 0;
    for (int op = 0; op < 300000 && !bad; op++) {
        uint64_t r = rnd();
        uint64_t i = (r >> 8) % range;
        switch (r & 7) {
        case 0: case 1: case 2: put(&ix, i); break;
        case 3: del(&ix, i); break;
        case 4: ffidx_hash_step(&ix); break;
        default: bad = !agrees(&ix, i); break;
        }
    }
    TEST_CHECK(!bad, "look-ups agree with the list through random writes and builds");
    TEST_CHECK(ix.hash.builds > 1, "the table was built anew as the keys grew");
    finish(&ix);
    TEST_CHECK(ffh_complete(&ix.hash), "a finished build is complete");
    TEST_EQ_INT((long long)ix.hash.used, (long long)ffidx_count(&ix),
                "it holds every linked key once");
    TEST_CHECK(all_agree(&ix, range + 1000), "every key and every absent one agree after it");
    {
        int sure = 0;
        struct skl_node *n = ffh_find(&ix.hash, "absent", 6, &sure);
        TEST_CHECK(n == NULL && sure, "an absent key is answered by the table alone");
    }
    ffidx_free(&ix);
    TEST_CHECK(ix.hash.slot == NULL, "freeing the index unmaps the table");

    /* a loaded index: the build walks it while writes land on both sides
       of the walk */
    ffidx_init(&ix, 2);
    for (uint64_t i = 0; i < 200000; i++)
        put(&ix, i * 2);
    TEST_EQ_INT(ffidx_hash_start(&ix), 0, "the hash starts on a loaded index");
    TEST_CHECK(ffidx_hash_pending(&ix), "its build has slices to do");
    size_t nslots = ix.hash.nslots;
    TEST_CHECK(nslots >= (double)ffidx_count(&ix) / FFH_BUILD_LOAD &&
                   nslots < (double)ffidx_count(&ix) / FFH_BUILD_LOAD + 512,
               "the table is sized for the keys");
    int steps = 0;
    bad = 0;
    while (ffidx_hash_pending(&ix)) {
        for (int k = 0; k < 200; k++) {
            uint64_t i = rnd() % 400000;
            if (k & 1)
                put(&ix, i);
            else
                del(&ix, i);
        }
        for (int k = 0; k < 200 && !bad; k++)
            bad = !agrees(&ix, rnd() % 400000);
        ffidx_hash_step(&ix);
        steps++;
    }
    TEST_CHECK(!bad, "look-ups mid-build agree with the list");
    TEST_CHECK(steps > 10, "the build takes many slices");
    TEST_CHECK(ffh_complete(&ix.hash) && !ix.hash.refused, "the build ends complete");
    TEST_EQ_INT((long long)ix.hash.used, (long long)ffidx_count(&ix),
                "it holds every linked key once");
    TEST_CHECK(all_agree(&ix, 400000), "every key agrees after the build");

    /* shrinking: removing most keys builds a smaller table */
    for (uint64_t i = 0; i < 400000; i++)
        if (i % 64)
            del(&ix, i);
    TEST_CHECK(ix.hash.nslots < nslots / 4, "removing most keys shrinks the table");
    finish(&ix);
    TEST_CHECK(all_agree(&ix, 400000), "every key agrees after shrinking");
    ffidx_free(&ix);

    /* a bulk load keeps the hash as it links and frees */
    ffidx_init(&ix, 3);
    ffidx_hash_start(&ix);
    for (uint64_t i = 0; i < 1000; i++) {
        char k[64];
        size_t kl = key_of(i, k);
        struct ffidx_node *n = ffidx_node_new(&ix, k, kl);
        n->vlen = (uint32_t)i;
        ffidx_bulk_add(&ix, n);
    }
    ffidx_bulk_finish(&ix);
    TEST_CHECK(ix.hash.slot != NULL && all_agree(&ix, 2000), "a bulk merge keeps the hash");
    finish(&ix);
    TEST_CHECK(all_agree(&ix, 2000) && ffh_complete(&ix.hash), "and its build completes");
    ffidx_free(&ix);

    /* a checkpoint's load: the hash is built on a thread over the arena
       while writes go to its journal, then taken over */
    ascending = 1;
    const uint64_t nload = 300000;
    for (int pass = 0; pass < 2; pass++) {
        ffidx_init(&ix, 5);
        ix.hash_job = 1;
        ffidx_arena_reserve(&ix, (uint64_t)24 << 20);
        struct skl_node *tail[SKL_MAX_HEIGHT] = {NULL};
        for (uint64_t i = 0; i < nload; i++) {
            char k[64];
            size_t kl = key_of(i * 2, k);
            struct ffidx_node *n = ffidx_node_arena(&ix, k, kl);
            n->vlen = (uint32_t)(i * 2);
            ffidx_append(&ix, n, tail);
        }
        ffidx_arena_done(&ix);
        TEST_CHECK(ix.hash.job != NULL, "a large load starts the hash's build on a thread");
        if (pass == 1) {
            ffidx_free(&ix);
            TEST_CHECK(ix.hash.job == NULL && ix.hash.slot == NULL,
                       "freeing the index while the thread builds stops it");
            continue;
        }
        /* writes right away, while the thread is at work: new keys,
           replaced and removed arena nodes, removed new ones */
        bad = 0;
        for (int op = 0; op < 40000 && !bad; op++) {
            uint64_t i = rnd() % (nload * 2 + 1000);
            if (op % 3 == 2)
                del(&ix, i);
            else
                put(&ix, i);
            if (op % 16 == 0)
                bad = !agrees(&ix, rnd() % (nload * 2 + 1000));
        }
        TEST_CHECK(!bad, "look-ups agree while the thread builds");
        int polls = 0;
        while (ffidx_hash_step(&ix) && polls < 100000) {
            struct timespec ts = {0, 100 * 1000};
            nanosleep(&ts, NULL);
            polls++;
        }
        TEST_CHECK(ix.hash.job == NULL && ffh_complete(&ix.hash),
                   "its table is taken over, with the journal replayed: complete");
        printf("# %zu writes journalled while the thread built\n", ix.hash.replayed);
        TEST_EQ_INT((long long)ix.hash.used, (long long)ffidx_count(&ix),
                    "it holds every linked key once");
        TEST_CHECK(all_agree(&ix, nload * 2 + 1000), "every key agrees after the take-over");
        ffidx_free(&ix);
    }
    ascending = 0;

    /* keys crowding one home slot: past FFH_PROBE they are refused, the
       table stops answering "absent" by itself, and look-ups stay right */
    ffidx_init(&ix, 4);
    ffidx_hash_start(&ix);
    finish(&ix);
    TEST_EQ_INT((long long)ix.hash.nslots, FFH_MIN_SLOTS, "an empty index gets the smallest table");
    static uint64_t crowd[700];
    size_t nc = 0;
    for (uint64_t i = 0; nc < 700 && i < 100000000; i++) {
        char k[64];
        size_t kl = key_of(i, k);
        if (ffh_home_of(&ix.hash, k, kl) == 5)
            crowd[nc++] = i;
    }
    TEST_EQ_INT((long long)nc, 700, "700 keys with the same home slot");
    size_t keep = 600;          /* past FFH_PROBE, under FFH_MAX_LOAD: no rebuild */
    TEST_CHECK(keep > FFH_PROBE && keep < FFH_MAX_LOAD * FFH_MIN_SLOTS, "the crowd's size");
    for (size_t j = 0; j < keep; j++)
        put(&ix, crowd[j]);
    TEST_EQ_INT((long long)ix.hash.builds, 1, "no rebuild below the load limit");
    TEST_CHECK(ix.hash.refused && !ffh_complete(&ix.hash), "keys past the probe limit are refused");
    TEST_EQ_INT((long long)ix.hash.used, FFH_PROBE, "the run holds FFH_PROBE keys");
    bad = 0;
    for (size_t j = 0; j < nc && !bad; j++)
        bad = !agrees(&ix, crowd[j]);
    TEST_CHECK(!bad, "every crowded key, in the table or not, is found");
    {
        int sure = 1;
        ffh_find(&ix.hash, "absent", 6, &sure);
        TEST_CHECK(!sure, "an incomplete table sends misses to the list");
    }
    for (size_t j = 0; j < keep; j += 2)
        del(&ix, crowd[j]);
    bad = 0;
    for (size_t j = 0; j < nc && !bad; j++)
        bad = !agrees(&ix, crowd[j]);
    TEST_CHECK(!bad, "and after removing every other one (the run shifted back)");
    ffidx_free(&ix);
    return test_done();
}
