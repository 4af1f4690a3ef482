/* ffhash.c - the flat-file index's hash of keys beside its skip list (see
 * ffhash.h): a seeded hash, linear probing with the distance kept in each
 * slot, a build that walks the list a few thousand nodes at a time. */
#include "backends/ffhash.h"

#include <pthread.h>
#include <stdlib.h>
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
#define FFH_JOB_CHECK 4096      /* nodes a thread adds between looks at its stop flag */

/* A write the loop made while a thread built the table: the node, with
 * the low bit set for a remove, and its key's hash. */
struct ffh_jent {
    uintptr_t node;
    uint64_t x;
};

/* A build on a thread. The thread owns slot, used, refused and bad until
 * it sets done; the loop owns the journal. */
struct ffh_job {
    pthread_t thread;
    int stop, done;             /* atomics: the loop's request, the thread's answer */
    uint64_t *slot;
    size_t nslots, used;
    uint64_t seed;
    int refused, bad;
    struct ffh_range *r;
    size_t nr;
    struct skl shape;           /* only node_off, for skl_node_size() */
    struct ffh_jent *jl;
    size_t jn, jcap;
};

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

/* Of the eight bytes loaded as w (in memory order), the last len (1 to
 * 7), as the low bytes of the result. */
static uint64_t ffh_tail(uint64_t w, size_t len)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return w >> (8 * (8 - len));
#else
    return w & ((UINT64_C(1) << (8 * len)) - 1);
#endif
}

/* The seeded hash of a key, eight bytes a step. Not a cryptographic hash:
 * the seed is secret and random, and FFH_PROBE bounds what keys that
 * collide anyway can cost (ffhash.h). */
static uint64_t ffh_hash(uint64_t seed, const uint8_t *k, size_t len)
{
    uint64_t x = seed ^ ((uint64_t)len * UINT64_C(0x9e3779b97f4a7c15));
    int whole = len >= 8;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        x = (x ^ w) * UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 29;
        k += 8;
        len -= 8;
    }
    uint64_t w = 0;
    if (len && whole) {
        /* the key's last eight bytes, without those hashed already (a
         * fixed-size load instead of a memcpy of len bytes) */
        memcpy(&w, k + len - 8, 8);
        w = ffh_tail(w, len);
    } else {
        for (size_t i = 0; i < len; i++)
            w |= (uint64_t)k[i] << (8 * i);
    }
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
static size_t ffh_home_n(size_t nslots, uint64_t x)
{
    return (size_t)(((unsigned __int128)x * nslots) >> 64);
}

static size_t ffh_home(const struct ffh *h, uint64_t x)
{
    return ffh_home_n(h->nslots, x);
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

/* Stops a thread's build, waits for it and frees it with its table and
 * journal. */
static void ffh_job_free(struct ffh *h)
{
    struct ffh_job *j = h->job;
    if (!j)
        return;
    __atomic_store_n(&j->stop, 1, __ATOMIC_RELEASE);
    pthread_join(j->thread, NULL);
    if (j->slot)
        munmap(j->slot, j->nslots * sizeof(uint64_t));
    free(j->r);
    free(j->jl);
    free(j);
    h->job = NULL;
}

/* Stops a thread's build, unmaps the table and ends the walk (the cursor
 * may already be detached by a freed list: skl_cursor_close does not
 * read sl then). */
void ffh_free(struct ffh *h, struct skl *sl)
{
    ffh_job_free(h);
    if (h->walking)
        skl_cursor_close(sl, &h->walk);
    h->walking = 0;
    if (h->slot)
        munmap(h->slot, h->nslots * sizeof(uint64_t));
    h->slot = NULL;
    h->used = 0;
    h->refused = 0;
}

/* 1 when the list's keys have passed FFH_MAX_LOAD of the table's slots. */
static int ffh_outgrown(const struct ffh *h, const struct skl *sl)
{
    return (double)sl->count > FFH_MAX_LOAD * (double)h->nslots;
}

/* 1 when the keys have outgrown the table or fallen under an eighth of
 * its slots: time for a table sized anew. */
static int ffh_out_of_bounds(const struct ffh *h, const struct skl *sl)
{
    return ffh_outgrown(h, sl) || (h->nslots > FFH_MIN_SLOTS && sl->count < h->nslots / 8);
}

/* Maps an empty table sized for count keys at load (FFH_BUILD_LOAD or
 * FFH_GROW_LOAD), sets *nslots, and draws the next table's seed into
 * h->seed. NULL when out of memory. */
static uint64_t *ffh_map(struct ffh *h, size_t count, double load, size_t *nslots)
{
    size_t n = (size_t)((double)count / load);
    n = n < FFH_MIN_SLOTS ? FFH_MIN_SLOTS : (n + 511) & ~(size_t)511;  /* whole pages */
    size_t bytes = n * sizeof(uint64_t);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (bytes >= FFH_HUGE)
        madvise(p, bytes, MADV_HUGEPAGE);   /* a hint: fewer TLB misses per look-up */
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint64_t)(uintptr_t)p;         /* no entropy yet: still varies per run */
    h->seed = ffh_mix(h->seed_base ^ r ^ h->builds);
    h->builds++;
    *nslots = n;
    return p;
}

int ffh_start(struct ffh *h, struct skl *sl)
{
    if (h->job)
        return 0;               /* a thread builds: ffh_step adopts its table */
    /* a table the keys outgrew: room for more before the next build */
    double load = h->slot && ffh_outgrown(h, sl) ? FFH_GROW_LOAD : FFH_BUILD_LOAD;
    ffh_free(h, sl);
    if (h->disabled)
        return -1;
    size_t n;
    uint64_t *p = ffh_map(h, sl->count, load, &n);
    if (!p)
        return -1;
    h->slot = p;
    h->nslots = n;
    skl_cursor_open(sl, &h->walk, NULL, 0);
    h->walking = 1;
    return 0;
}

/* Puts n (hash x) in the table slot[0..nslots), or finds it there
 * already. Returns 0 (*used counts a new slot), -1 when no slot within
 * FFH_PROBE was free, -2 when n's address does not fit a slot. */
static int ffh_place(uint64_t *slot, size_t nslots, size_t *used, const struct skl_node *n,
                     uint64_t x)
{
    uintptr_t a = (uintptr_t)n;
    if ((uint64_t)a & ~FFH_PTR_MASK)
        return -2;
    size_t i = ffh_home_n(nslots, x);
    uint64_t tag = (x & FFH_TAG_MASK) << FFH_PTR_BITS;
    for (uint64_t d = 0; d < FFH_PROBE; d++, i = i + 1 == nslots ? 0 : i + 1) {
        uint64_t s = slot[i];
        if (!s) {
            slot[i] = (uint64_t)a | tag | (d << FFH_DIST_SHIFT);
            (*used)++;
            return 0;
        }
        if (ffh_slot_node(s) == n)
            return 0;
    }
    return -1;
}

/* Puts n (hash x) in the table, or finds it there already. Returns 0, or
 * -1 when no slot within FFH_PROBE was free (the table is then no longer
 * complete) or n's address does not fit (the table is then disabled). */
static int ffh_insert(struct ffh *h, struct skl *sl, struct skl_node *n, uint64_t x)
{
    int r = ffh_place(h->slot, h->nslots, &h->used, n, x);
    if (r == -2) {
        h->disabled = 1;
        ffh_free(h, sl);
    } else if (r == -1) {
        h->refused = 1;
    }
    return r < 0 ? -1 : 0;
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

/* The thread's build: every node of the ranges into the job's table,
 * until the end or until told to stop. */
static void *ffh_job_main(void *arg)
{
    struct ffh_job *j = arg;
    size_t k = 0;
    for (size_t ri = 0; ri < j->nr && !j->bad; ri++) {
        const char *p = j->r[ri].first;
        while (p < j->r[ri].end && !j->bad) {
            /* as ffh_step: hash a few nodes and start loading their home
               slots, then fill them */
            const struct skl_node *b[FFH_BATCH];
            uint64_t x[FFH_BATCH];
            size_t m = 0;
            for (; m < FFH_BATCH && p < j->r[ri].end; m++) {
                const struct skl_node *n = (const struct skl_node *)(p + j->shape.node_off);
                size_t size = skl_node_size(&j->shape, n);
                b[m] = n;
                x[m] = ffh_hash(j->seed, skl_key(n), n->klen);
                __builtin_prefetch(&j->slot[ffh_home_n(j->nslots, x[m])], 1);
                p += (size + 7) & ~(size_t)7;
            }
            for (size_t i = 0; i < m; i++) {
                int r = ffh_place(j->slot, j->nslots, &j->used, b[i], x[i]);
                if (r == -1)
                    j->refused = 1;
                else if (r == -2)
                    j->bad = 1;
            }
            k += m;
            if (k >= FFH_JOB_CHECK) {
                k = 0;
                if (__atomic_load_n(&j->stop, __ATOMIC_ACQUIRE))
                    goto out;
            }
        }
    }
out:
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int ffh_job_start(struct ffh *h, struct skl *sl, const struct ffh_range *r, size_t nr)
{
    ffh_free(h, sl);
    if (h->disabled)
        return -1;
    struct ffh_job *j = calloc(1, sizeof *j);
    if (!j || !(j->r = malloc((nr ? nr : 1) * sizeof *r))) {
        free(j);
        return -1;
    }
    memcpy(j->r, r, nr * sizeof *r);
    j->nr = nr;
    j->shape.node_off = sl->node_off;
    if (!(j->slot = ffh_map(h, sl->count, FFH_BUILD_LOAD, &j->nslots))) {
        free(j->r);
        free(j);
        return -1;
    }
    j->seed = h->seed;          /* the journal's hashes use it too */
    if (pthread_create(&j->thread, NULL, ffh_job_main, j) != 0) {
        munmap(j->slot, j->nslots * sizeof(uint64_t));
        free(j->r);
        free(j);
        return -1;
    }
    h->job = j;
    return 0;
}

/* Keeps a write for the thread's table (op 1: n was removed). Past
 * FFH_JOURNAL_MAX writes, or out of memory, the thread's build is given
 * up for a walk. */
static void ffh_journal(struct ffh *h, struct skl *sl, const struct skl_node *n, int op)
{
    struct ffh_job *j = h->job;
    if (j->jn == j->jcap) {
        size_t cap = j->jcap ? j->jcap * 2 : 1024;
        struct ffh_jent *jl = cap <= FFH_JOURNAL_MAX ? realloc(j->jl, cap * sizeof *jl) : NULL;
        if (!jl) {
            ffh_job_free(h);
            ffh_start(h, sl);
            return;
        }
        j->jl = jl;
        j->jcap = cap;
    }
    j->jl[j->jn].node = (uintptr_t)n | (uintptr_t)op;
    j->jl[j->jn].x = ffh_hash(j->seed, skl_key(n), n->klen);
    j->jn++;
}

/* Takes over the table of a thread that is done: replays the journal on
 * it, then sizes it anew if the writes took it past its bounds. */
static void ffh_job_adopt(struct ffh *h, struct skl *sl)
{
    struct ffh_job *j = h->job;
    pthread_join(j->thread, NULL);
    h->job = NULL;
    if (j->bad)
        h->disabled = 1;
    h->slot = j->slot;
    h->nslots = j->nslots;
    h->used = j->used;
    h->refused = j->refused;
    for (size_t i = 0; i < j->jn && h->slot && !h->disabled; i++) {
        struct skl_node *n = (struct skl_node *)(j->jl[i].node & ~(uintptr_t)1);
        if (!(j->jl[i].node & 1)) {
            ffh_insert(h, sl, n, j->jl[i].x);
        } else {
            size_t at = ffh_locate(h, n, j->jl[i].x);
            if (at != (size_t)-1)
                ffh_delete_at(h, at);
        }
    }
    h->replayed = j->jn;
    free(j->r);
    free(j->jl);
    free(j);
    if (h->disabled) {
        ffh_free(h, sl);
        return;
    }
    if (ffh_out_of_bounds(h, sl))
        ffh_start(h, sl);
}

int ffh_step(struct ffh *h, struct skl *sl, size_t budget)
{
    if (h->job) {
        if (!__atomic_load_n(&h->job->done, __ATOMIC_ACQUIRE))
            return 1;
        ffh_job_adopt(h, sl);
        return ffh_pending(h);
    }
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
    *sure = ffh_complete(h);
    return NULL;
}

void ffh_put(struct ffh *h, struct skl *sl, struct skl_node *n, struct skl_node *old)
{
    if (h->job) {
        if (old)
            ffh_journal(h, sl, old, 1);
        if (h->job)
            ffh_journal(h, sl, n, 0);
        return;
    }
    if (!h->slot)
        return;
    uint64_t x = ffh_key_hash(h, n);
    size_t i = old ? ffh_locate(h, old, x) : (size_t)-1;
    if (i != (size_t)-1)
        h->slot[i] = (h->slot[i] & ~FFH_PTR_MASK) | (uint64_t)(uintptr_t)n;
    else if (ffh_insert(h, sl, n, x) != 0)
        return;
    if (ffh_out_of_bounds(h, sl))
        ffh_start(h, sl);
}

void ffh_remove(struct ffh *h, struct skl *sl, struct skl_node *old)
{
    if (h->job) {
        ffh_journal(h, sl, old, 1);
        return;
    }
    if (!h->slot)
        return;
    size_t i = ffh_locate(h, old, ffh_key_hash(h, old));
    if (i != (size_t)-1)
        ffh_delete_at(h, i);
    if (ffh_out_of_bounds(h, sl))
        ffh_start(h, sl);
}
