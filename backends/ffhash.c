/* ffhash.c - the flat-file index's hash of keys beside its skip list (see
 * ffhash.h): a seeded hash, linear probing with the distance kept in each
 * slot, a build that walks the list a few thousand nodes at a time. */
#include "backends/ffhash.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#define FFH_PTR_BITS 48
#define FFH_PTR_MASK ((UINT64_C(1) << FFH_PTR_BITS) - 1)
#define FFH_TAG_BITS 6
#define FFH_TAG_MASK ((UINT64_C(1) << FFH_TAG_BITS) - 1)
#define FFH_DIST_SHIFT (FFH_PTR_BITS + FFH_TAG_BITS)   /* 10 bits: up to 1,023 */
#define FFH_HUGE ((size_t)2 << 20)
#define FFH_BATCH 16            /* nodes whose slots the walk loads at once */

/* splitmix64's finaliser: every input bit reaches every output bit. */
static uint64_t ffh_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* The seeded hash of a key, eight bytes a step. Not a cryptographic hash:
 * the seed is secret and random, and FFH_PROBE bounds what keys that
 * collide anyway can cost (ffhash.h). */
static uint64_t ffh_hash(uint64_t seed, const uint8_t *k, size_t len)
{
    uint64_t x = seed ^ ((uint64_t)len * UINT64_C(0x9e3779b97f4a7c15));
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        x = (x ^ w) * UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 29;
        k += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, k, len);
    return ffh_mix(x ^ w);
}

/* A slot's distance from its key's home slot. */
static uint64_t ffh_slot_dist(uint64_t s)
{
    return s >> FFH_DIST_SHIFT;
}

/* A slot's node. */
static struct skl_node *ffh_slot_node(uint64_t s)
{
    return (struct skl_node *)(uintptr_t)(s & FFH_PTR_MASK);
}

/* The slot a hash starts its probe at: the hash scaled to the table's
 * size (its high bits; the low ones are the tag). */
static size_t ffh_home(const struct ffh *h, uint64_t x)
{
    return (size_t)(((unsigned __int128)x * h->nslots) >> 64);
}

/* The slot after i, around the end. */
static size_t ffh_next(const struct ffh *h, size_t i)
{
    return i + 1 == h->nslots ? 0 : i + 1;
}

/* The table's hash of node n's key. */
static uint64_t ffh_key_hash(const struct ffh *h, const struct skl_node *n)
{
    return ffh_hash(h->seed, skl_key(n), n->klen);
}

size_t ffh_home_of(const struct ffh *h, const void *key, size_t klen)
{
    return ffh_home(h, ffh_hash(h->seed, key, klen));
}

void ffh_init(struct ffh *h, uint64_t seed)
{
    memset(h, 0, sizeof *h);
    h->seed_base = seed;
}

/* Unmaps the table and ends the walk (the cursor may already be detached
 * by a freed list: skl_cursor_close does not read sl then). */
void ffh_free(struct ffh *h, struct skl *sl)
{
    if (h->walking)
        skl_cursor_close(sl, &h->walk);
    h->walking = 0;
    if (h->slot)
        munmap(h->slot, h->nslots * sizeof(uint64_t));
    h->slot = NULL;
    h->used = 0;
    h->complete = h->refused = 0;
}

int ffh_start(struct ffh *h, struct skl *sl)
{
    ffh_free(h, sl);
    if (h->disabled)
        return -1;
    size_t n = (size_t)((double)sl->count / FFH_BUILD_LOAD);
    n = n < FFH_MIN_SLOTS ? FFH_MIN_SLOTS : (n + 511) & ~(size_t)511;  /* whole pages */
    size_t bytes = n * sizeof(uint64_t);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    if (bytes >= FFH_HUGE)
        madvise(p, bytes, MADV_HUGEPAGE);   /* a hint: fewer TLB misses per look-up */
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint64_t)(uintptr_t)p;         /* no entropy yet: still varies per run */
    h->slot = p;
    h->nslots = n;
    h->seed = ffh_mix(h->seed_base ^ r ^ h->builds);
    h->builds++;
    skl_cursor_open(sl, &h->walk, NULL, 0);
    h->walking = 1;
    return 0;
}

/* Puts n (hash x) in the table, or finds it there already. Returns 0, or
 * -1 when no slot within FFH_PROBE was free (the table is then no longer
 * complete) or n's address does not fit (the table is then disabled). */
static int ffh_insert(struct ffh *h, struct skl *sl, struct skl_node *n, uint64_t x)
{
    uintptr_t a = (uintptr_t)n;
    if ((uint64_t)a & ~FFH_PTR_MASK) {
        h->disabled = 1;
        ffh_free(h, sl);
        return -1;
    }
    size_t i = ffh_home(h, x);
    uint64_t tag = (x & FFH_TAG_MASK) << FFH_PTR_BITS;
    for (uint64_t d = 0; d < FFH_PROBE; d++, i = ffh_next(h, i)) {
        uint64_t s = h->slot[i];
        if (!s) {
            h->slot[i] = (uint64_t)a | tag | (d << FFH_DIST_SHIFT);
            h->used++;
            return 0;
        }
        if (ffh_slot_node(s) == n)
            return 0;
    }
    h->refused = 1;
    h->complete = 0;
    return -1;
}

/* The index of the slot holding node n (hash x), or (size_t)-1. */
static size_t ffh_locate(const struct ffh *h, const struct skl_node *n, uint64_t x)
{
    size_t i = ffh_home(h, x);
    for (unsigned d = 0; d < FFH_PROBE; d++, i = ffh_next(h, i)) {
        uint64_t s = h->slot[i];
        if (!s)
            break;
        if (ffh_slot_node(s) == n)
            return i;
    }
    return (size_t)-1;
}

int ffh_step(struct ffh *h, struct skl *sl, size_t budget)
{
    if (!ffh_pending(h))
        return 0;
    while (budget > 0) {
        /* hash a few nodes and start loading their home slots, then fill
           them: the slots' cache misses overlap */
        struct skl_node *b[FFH_BATCH];
        uint64_t x[FFH_BATCH];
        size_t m = 0;
        struct skl_node *n = h->walk.next;
        while (n && m < FFH_BATCH && m < budget) {
            b[m] = n;
            x[m] = ffh_key_hash(h, n);
            __builtin_prefetch(&h->slot[ffh_home(h, x[m])], 1);
            m++;
            n = n->next[0];
        }
        h->walk.next = n;
        for (size_t i = 0; i < m; i++) {
            ffh_insert(h, sl, b[i], x[i]);
            if (!h->slot)
                return 0;       /* disabled */
        }
        budget -= m;
        if (!n) {
            skl_cursor_close(sl, &h->walk);
            h->walking = 0;
            h->complete = !h->refused;
            return 0;
        }
    }
    return 1;
}

struct skl_node *ffh_find(const struct ffh *h, const void *key, size_t klen, int *sure)
{
    *sure = 0;
    if (!h->slot)
        return NULL;
    uint64_t x = ffh_hash(h->seed, key, klen);
    size_t i = ffh_home(h, x);
    uint64_t tag = x & FFH_TAG_MASK;
    for (uint64_t d = 0; d < FFH_PROBE; d++, i = ffh_next(h, i)) {
        uint64_t s = h->slot[i];
        if (!s)
            break;
        /* the same tag, and the same home: the slot's distance is ours */
        if (((s >> FFH_PTR_BITS) & FFH_TAG_MASK) == tag && ffh_slot_dist(s) == d) {
            struct skl_node *n = ffh_slot_node(s);
            if (n->klen == klen && memcmp(skl_key(n), key, klen) == 0)
                return n;
        }
    }
    *sure = h->complete;
    return NULL;
}

/* Empties slot i and closes the hole: each entry after it in the run
 * whose home lies at or before the hole moves into it and leaves a new
 * hole behind, so that no probe meets an empty slot before its key
 * (Knuth's algorithm R for linear probing; an entry's home is its slot
 * less its distance). */
static void ffh_delete_at(struct ffh *h, size_t i)
{
    for (size_t k = ffh_next(h, i);; k = ffh_next(h, k)) {
        uint64_t s = h->slot[k];
        if (!s)
            break;
        uint64_t d = ffh_slot_dist(s), gap = k > i ? k - i : k + h->nslots - i;
        if (d >= gap) {         /* its home is not after the hole */
            h->slot[i] = s - (gap << FFH_DIST_SHIFT);
            i = k;
        }
    }
    h->slot[i] = 0;
    h->used--;
}

void ffh_put(struct ffh *h, struct skl *sl, struct skl_node *n, struct skl_node *old)
{
    if (!h->slot)
        return;
    uint64_t x = ffh_key_hash(h, n);
    size_t i = old ? ffh_locate(h, old, x) : (size_t)-1;
    if (i != (size_t)-1)
        h->slot[i] = (h->slot[i] & ~FFH_PTR_MASK) | (uint64_t)(uintptr_t)n;
    else if (ffh_insert(h, sl, n, x) != 0)
        return;
    if ((double)sl->count > FFH_MAX_LOAD * (double)h->nslots)
        ffh_start(h, sl);
}

void ffh_remove(struct ffh *h, struct skl *sl, struct skl_node *old)
{
    if (!h->slot)
        return;
    size_t i = ffh_locate(h, old, ffh_key_hash(h, old));
    if (i != (size_t)-1)
        ffh_delete_at(h, i);
    if (h->nslots > FFH_MIN_SLOTS && sl->count < h->nslots / 8)
        ffh_start(h, sl);
}
