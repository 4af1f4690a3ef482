/* ffindex.c - the flatfile backend's ordered in-memory index (see
 * ffindex.h): the shared skip list (backends/skiplist.h) with the bytes
 * each node stands for in the log, and a sort-then-link bulk load for
 * start-up. */
#include "backends/ffindex.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>


#define FFIDX_BULK_CHUNK ((size_t)1 << 22)  /* queued writes merged at once */
#define FFIDX_SMALL_SORT 16                 /* insertion sort below this */
#define FFIDX_CHUNK ((size_t)32 << 20)      /* arena block, at most */
#define FFIDX_CHUNK_MIN ((size_t)64 << 10)  /* and at least */
#define FFIDX_HUGE ((size_t)2 << 20)        /* a huge page */
#define FFIDX_FILL_MIN ((size_t)4 << 20)    /* a reserved block this large gets a fill thread */
#define FFIDX_FILL_STEP ((size_t)16 << 20)  /* bytes it faults in per call */
#define FFIDX_CHUNK_HDR ((sizeof(struct ffidx_chunk) + 15) & ~(size_t)15) /* nodes start here */
#define FFIDX_COLLAPSE_STEP ((size_t)2 << 20) /* bytes made one huge page per call */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25        /* Linux 6.1; older C headers lack the name */
#endif

/* The thread faulting in a reserved block (ffidx_arena_reserve), or
 * turning its kept part into huge pages afterwards (ffidx_arena_done). */
struct ffidx_thread {
    pthread_t thread;
    char *base;
    size_t size;
    int stop;                   /* set (atomically) to end it early */
};

/* Starts fn on a new thread over [base, base + size); NULL when it cannot. */
static struct ffidx_thread *ffidx_thread_start(void *(*fn)(void *), char *base, size_t size)
{
    struct ffidx_thread *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->base = base;
    f->size = size;
    if (pthread_create(&f->thread, NULL, fn, f) != 0) {
        free(f);
        return NULL;
    }
    return f;
}

/* Tells a thread of ffidx_thread_start to stop, waits for it and frees it
 * (NULL: nothing). */
static void ffidx_thread_stop(struct ffidx_thread *f)
{
    if (!f)
        return;
    __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
    pthread_join(f->thread, NULL);
    free(f);
}

/* Bytes a live node stands for in the log (for the garbage estimate). */
static uint64_t ffidx_node_bytes(const struct ffidx_node *n)
{
    return (uint64_t)n->sk.klen + n->vlen + FFIDX_ENTRY_OVERHEAD;
}

/* An empty index; seed picks the node heights. */
void ffidx_init(struct ffidx *ix, uint64_t seed)
{
    memset(ix, 0, sizeof(*ix));
    skl_init(&ix->sl, offsetof(struct ffidx_node, sk), seed, 0);   /* gets come in random order */
    ffh_init(&ix->hash, seed);
}

/* Frees the linked nodes (the list's) and the queued ones (the bulk
 * array's), and detaches the cursors. */
void ffidx_free(struct ffidx *ix)
{
    /* no thread may touch a block being unmapped */
    ffidx_thread_stop(ix->huge);
    ix->huge = NULL;
    ffidx_thread_stop(ix->fill);
    ix->fill = NULL;
    ffh_free(&ix->hash, &ix->sl);
    /* the malloc()ed nodes one by one, the arena's with its blocks */
    struct skl_node *n = ix->sl.head[0];
    while (n) {
        struct skl_node *next = n->next[0];
        ffidx_node_free(ix, ffidx_of(n));
        n = next;
    }
    memset(ix->sl.head, 0, sizeof ix->sl.head);
    skl_free(&ix->sl);          /* detaches the cursors, resets the list */
    while (ix->chunks) {
        struct ffidx_chunk *c = ix->chunks;
        ix->chunks = c->next;
        munmap(c, c->size);
    }
    ix->arena_bytes = 0;
    for (size_t i = 0; i < ix->nbulk; i++)
        ffidx_node_free(ix, ix->bulk[i].node);
    free(ix->bulk);
    ix->bulk = NULL;
    ix->nbulk = ix->capbulk = 0;
    ix->live_bytes = 0;
}

/* A node with a copy of key and no value yet. */
struct ffidx_node *ffidx_node_new(struct ffidx *ix, const void *key, size_t klen)
{
    struct ffidx_node *n = ffidx_of(skl_node_new(&ix->sl, key, klen, 0));
    if (!n)
        return NULL;
    n->loc[0] = n->loc[1] = 0;
    n->vlen = 0;
    n->cgen = 0;
    return n;
}

/* A node carved from the current arena block (a new block when it is
 * full), height drawn as skl_node_new() does. */
struct ffidx_node *ffidx_node_arena(struct ffidx *ix, const void *key, size_t klen)
{
    int h = skl_random_height(&ix->sl);
    size_t size = offsetof(struct ffidx_node, sk) + sizeof(struct skl_node) +
                  (size_t)h * sizeof(struct skl_node *) + klen;
    size = (size + 7) & ~(size_t)7;
    struct ffidx_chunk *c = ix->chunks;
    if (!c || c->size - c->used < size) {
        /* blocks sized to what is still expected (the hint), so that the
           last one, mapped whole, is not much bigger than needed */
        uint64_t left = ix->arena_hint > ix->arena_bytes ? ix->arena_hint - ix->arena_bytes : 0;
        size_t want = left < FFIDX_CHUNK_MIN ? FFIDX_CHUNK_MIN
                      : left > FFIDX_CHUNK ? FFIDX_CHUNK : (size_t)left;
        if (want < size + 64)
            want = size + 64;
        void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        /* huge pages where the system allows them: a few faults per block
           instead of one per 4 KiB, and fewer TLB misses in lookups */
        if (want >= ((size_t)2 << 20))
            madvise(m, want, MADV_HUGEPAGE);
        c = m;
        c->next = ix->chunks;
        c->size = want;
        c->used = FFIDX_CHUNK_HDR;
        ix->chunks = c;
        ix->arena_bytes += want;
    }
    struct ffidx_node *n = (struct ffidx_node *)((char *)c + c->used);
    c->used += size;
    n->sk.klen = (uint32_t)klen;
    n->sk.height = (uint8_t)h;
    n->sk.flags = FFIDX_ARENA;
    memcpy(skl_key(&n->sk), key, klen);
    n->loc[0] = n->loc[1] = 0;
    n->vlen = 0;
    n->cgen = 0;
    return n;
}

/* The fill thread: faults the block in, a step at a time, from its start
 * (where the nodes go first) until the end or until told to stop. */
static void *ffidx_fill_main(void *arg)
{
    struct ffidx_thread *f = arg;
#ifdef MADV_POPULATE_WRITE
    for (size_t off = 0; off < f->size && !__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
         off += FFIDX_FILL_STEP) {
        size_t n = f->size - off < FFIDX_FILL_STEP ? f->size - off : FFIDX_FILL_STEP;
        if (madvise(f->base + off, n, MADV_POPULATE_WRITE) != 0)
            break;              /* an older kernel: the nodes fault it in */
    }
#endif
    return NULL;
}

/* The huge-page thread: makes the block huge pages 2 MiB at a time
 * (MADV_COLLAPSE), from its start, until the end or until told to stop.
 * A kernel without MADV_COLLAPSE leaves it to khugepaged, which the
 * block's MADV_HUGEPAGE advice already asks for. */
static void *ffidx_huge_main(void *arg)
{
    struct ffidx_thread *f = arg;
    /* the lowest priority: the work is only worth the CPU nobody else
       wants (this thread's nice value, not the process's) */
    setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    /* only whole aligned huge pages can be made */
    char *p = (char *)(((uintptr_t)f->base + FFIDX_HUGE - 1) & ~(uintptr_t)(FFIDX_HUGE - 1));
    for (; p + FFIDX_COLLAPSE_STEP <= f->base + f->size &&
           !__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
         p += FFIDX_COLLAPSE_STEP)
        if (madvise(p, FFIDX_COLLAPSE_STEP, MADV_COLLAPSE) != 0 && errno == EINVAL)
            break;
    return NULL;
}

void ffidx_arena_reserve(struct ffidx *ix, uint64_t bytes)
{
    if (ix->fill || bytes < FFIDX_HUGE || bytes > ((uint64_t)1 << 40))
        return;
    size_t size = ((size_t)bytes + FFIDX_HUGE - 1) & ~(FFIDX_HUGE - 1);
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return;
    struct ffidx_chunk *c = m;
    c->next = ix->chunks;
    c->size = size;
    c->used = FFIDX_CHUNK_HDR;
    ix->chunks = c;
    ix->arena_bytes += size;
#ifdef MADV_POPULATE_WRITE
    if (size >= FFIDX_FILL_MIN) {
        /* small pages while it is filled, huge ones once the load is done
           (ffidx_arena_done): see ffindex.h */
        madvise(m, size, MADV_NOHUGEPAGE);
        ix->fill = ffidx_thread_start(ffidx_fill_main, m, size);
        if (ix->fill)
            return;
    }
#endif
    /* no thread: huge pages as the nodes fault them in */
    madvise(m, size, MADV_HUGEPAGE);
}

/* Starts the hash's build on a thread over every arena block's nodes,
 * which are the list's nodes right after a checkpoint load (the loop's
 * writes from now on go to the hash's journal). Without it the loop's
 * walk builds the hash later (ffidx_hash_start). */
static void ffidx_hash_job(struct ffidx *ix)
{
    size_t nr = 0;
    for (struct ffidx_chunk *c = ix->chunks; c; c = c->next)
        nr++;
    struct ffh_range *r = malloc((nr ? nr : 1) * sizeof *r);
    if (!r)
        return;
    size_t i = 0;
    for (struct ffidx_chunk *c = ix->chunks; c; c = c->next, i++) {
        r[i].first = (const char *)c + FFIDX_CHUNK_HDR;
        r[i].end = (const char *)c + c->used;
    }
    ffh_job_start(&ix->hash, &ix->sl, r, nr);
    free(r);
}

void ffidx_arena_done(struct ffidx *ix)
{
    struct ffidx_thread *f = ix->fill;
    if (!f)
        return;
    char *base = f->base;
    ffidx_thread_stop(f);
    ix->fill = NULL;
    /* the estimate is a little high: unmap what no node took (the block
       is the first chunk still, or one the nodes went on past) */
    for (struct ffidx_chunk *c = ix->chunks; c; c = c->next) {
        if ((char *)c != base)
            continue;
        size_t keep = (c->used + FFIDX_HUGE - 1) & ~(FFIDX_HUGE - 1);
        if (keep < c->size) {
            munmap((char *)c + keep, c->size - keep);
            ix->arena_bytes -= c->size - keep;
            c->size = keep;
        }
        madvise(c, c->size, MADV_HUGEPAGE);
        ffidx_thread_stop(ix->huge);    /* none but after a load into a used index */
        ix->huge = ffidx_thread_start(ffidx_huge_main, (char *)c, c->size);
    }
    if (ix->hash_job)
        ffidx_hash_job(ix);
}

/* Frees an unlinked node: its one block (an arena node stays until the
 * index is freed). */
void ffidx_node_free(struct ffidx *ix, struct ffidx_node *n)
{
    if (n && !(n->sk.flags & FFIDX_ARENA))
        skl_node_free(&ix->sl, &n->sk);
}

/* Point look-up: the hash when it is sure, else the list. */
struct ffidx_node *ffidx_find(struct ffidx *ix, const void *key, size_t klen)
{
    int sure;
    struct skl_node *n = ffh_find(&ix->hash, key, klen, &sure);
    if (n || sure)
        return ffidx_of(n);
    return ffidx_of(skl_find(&ix->sl, key, klen));
}

int ffidx_hash_start(struct ffidx *ix)
{
    return ffh_start(&ix->hash, &ix->sl);
}

int ffidx_hash_step(struct ffidx *ix)
{
    return ffh_step(&ix->hash, &ix->sl, FFIDX_HASH_STEP);
}

/* skl_put(), keeping live_bytes and the hash. */
struct ffidx_node *ffidx_put(struct ffidx *ix, struct ffidx_node *n)
{
    struct ffidx_node *old = ffidx_of(skl_put(&ix->sl, &n->sk));
    if (old)
        ix->live_bytes -= ffidx_node_bytes(old);
    ix->live_bytes += ffidx_node_bytes(n);
    ffh_put(&ix->hash, &ix->sl, &n->sk, old ? &old->sk : NULL);
    return old;
}

/* skl_remove(), keeping live_bytes and the hash. */
struct ffidx_node *ffidx_remove(struct ffidx *ix, const void *key, size_t klen)
{
    struct ffidx_node *old = ffidx_of(skl_remove(&ix->sl, key, klen));
    if (old) {
        ix->live_bytes -= ffidx_node_bytes(old);
        ffh_remove(&ix->hash, &ix->sl, &old->sk);
    }
    return old;
}

/* ---- bulk load ---- */

/* Eight key bytes of n from depth d, big-endian, zero-padded. */
static uint64_t ffidx_chunk(const struct ffidx_node *n, size_t d)
{
    const uint8_t *k = ffidx_key(n);
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = (v << 8) | (d + i < n->sk.klen ? k[d + i] : 0);
    return v;
}

/* How many key bytes remain from depth d, capped at 9 ("more than 8"):
 * breaks ties between equal chunks so that a key ending earlier (its
 * padding zeros are not bytes) sorts first. */
static unsigned ffidx_rest(const struct ffidx_node *n, size_t d)
{
    size_t r = n->sk.klen > d ? n->sk.klen - d : 0;
    return r > 8 ? 9 : (unsigned)r;
}

/* Full comparison of two bulk entries: key, then write order. */
static int ffidx_ent_cmp(const void *pa, const void *pb)
{
    const struct ffidx_bulk_ent *a = pa, *b = pb;
    int c = bkey_cmp(ffidx_key(a->node), a->node->sk.klen, ffidx_key(b->node), b->node->sk.klen);
    if (c)
        return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Insertion sort with the full comparison, for small ranges. */
static void ffidx_isort(struct ffidx_bulk_ent *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct ffidx_bulk_ent t = a[i];
        size_t j = i;
        while (j > 0 && ffidx_ent_cmp(&a[j - 1], &t) > 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = t;
    }
}

/* -1/0/1: order of a and b by the chunk at the current depth. */
static int ffidx_chunk_cmp(const struct ffidx_bulk_ent *a, const struct ffidx_bulk_ent *b,
                           size_t d)
{
    if (a->cache != b->cache)
        return a->cache < b->cache ? -1 : 1;
    unsigned ra = ffidx_rest(a->node, d), rb = ffidx_rest(b->node, d);
    return ra < rb ? -1 : ra > rb;
}

static void ffidx_swap(struct ffidx_bulk_ent *a, struct ffidx_bulk_ent *b)
{
    struct ffidx_bulk_ent t = *a;
    *a = *b;
    *b = t;
}

/* Multikey quicksort (Bentley & Sedgewick) on 8-byte chunks: a three-way
 * partition on the chunk at depth d; the equal part moves 8 bytes deeper.
 * Entries carry their current chunk so that partitioning touches only the
 * array. Beyond a depth budget the range falls back to qsort, which bounds
 * the worst case for adversarial keys. Equal keys end up adjacent in any
 * order (the merge picks the highest seq). */
static void ffidx_mkqsort(struct ffidx_bulk_ent *a, size_t n, size_t d, int budget)
{
    while (n > FFIDX_SMALL_SORT) {
        if (budget-- <= 0) {
            qsort(a, n, sizeof(*a), ffidx_ent_cmp);
            return;
        }
        /* median of three as the pivot, moved to a[0] */
        size_t m = n / 2;
        if (ffidx_chunk_cmp(&a[m], &a[0], d) < 0)
            ffidx_swap(&a[m], &a[0]);
        if (ffidx_chunk_cmp(&a[n - 1], &a[0], d) < 0)
            ffidx_swap(&a[n - 1], &a[0]);
        if (ffidx_chunk_cmp(&a[n - 1], &a[m], d) < 0)
            ffidx_swap(&a[n - 1], &a[m]);
        ffidx_swap(&a[0], &a[m]);
        struct ffidx_bulk_ent piv = a[0];
        size_t lt = 0, i = 0, gt = n;
        while (i < gt) {
            int c = ffidx_chunk_cmp(&a[i], &piv, d);
            if (c < 0)
                ffidx_swap(&a[lt++], &a[i++]);
            else if (c == 0)
                i++;
            else
                ffidx_swap(&a[i], &a[--gt]);
        }
        ffidx_mkqsort(a, lt, d, budget);
        ffidx_mkqsort(a + gt, n - gt, d, budget);
        a += lt;
        n = gt - lt;
        if (ffidx_rest(piv.node, d) <= 8)
            return;     /* every key of the equal part ends here: all equal */
        d += 8;
        for (size_t j = 0; j < n; j++)
            a[j].cache = ffidx_chunk(a[j].node, d);
    }
    ffidx_isort(a, n);
}

/* Sorts the queued writes and merges them into the list in one ascending
 * pass: the predecessors of the last key on every level (update[]) only
 * move forward, and each search descends from the highest level that
 * moved (skl_find_ge_from), so a few queued keys far apart in a large
 * list (the log tail after a checkpoint) cost O(queued x height), not a
 * walk over every existing node between them. */
static void ffidx_bulk_merge(struct ffidx *ix)
{
    size_t n = ix->nbulk;
    struct ffidx_bulk_ent *a = ix->bulk;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++)
        a[i].cache = ffidx_chunk(a[i].node, 0);
    int budget = 2;
    for (size_t s = n; s > 1; s >>= 1)
        budget += 2;
    ffidx_mkqsort(a, n, 0, budget * 4);

    struct skl_node *update[SKL_MAX_HEIGHT] = {NULL};
    size_t i = 0;
    while (i < n) {
        /* the group of equal keys a[i..j); the highest seq wins */
        size_t j = i + 1, win = i;
        while (j < n && bkey_cmp(ffidx_key(a[j].node), a[j].node->sk.klen, ffidx_key(a[i].node),
                                 a[i].node->sk.klen) == 0) {
            if (a[j].seq > a[win].seq)
                win = j;
            j++;
        }
        /* ascending keys: each search starts from the last one's update[] */
        struct ffidx_node *w = a[win].node;
        struct skl_node *old = skl_find_ge_from(&ix->sl, ffidx_key(w), w->sk.klen, update);
        if (old && skl_node_cmp(old, ffidx_key(w), w->sk.klen) != 0)
            old = NULL;
        if (old) {
            skl_unlink(&ix->sl, old, update, NULL);
            ix->live_bytes -= ffidx_node_bytes(ffidx_of(old));
            ffh_remove(&ix->hash, &ix->sl, old);
            ffidx_node_free(ix, ffidx_of(old));
        }
        if (!(w->sk.flags & FFIDX_TOMB)) {
            skl_link(&ix->sl, &w->sk, update);
            ix->live_bytes += ffidx_node_bytes(w);
            ffh_put(&ix->hash, &ix->sl, &w->sk, NULL);
        }
        for (size_t k = i; k < j; k++)
            if (k != win || (w->sk.flags & FFIDX_TOMB))
                ffidx_node_free(ix, a[k].node);
        i = j;
    }
    ix->nbulk = 0;
}

int ffidx_bulk_add(struct ffidx *ix, struct ffidx_node *n)
{
    if (ix->nbulk == ix->capbulk) {
        if (ix->capbulk >= FFIDX_BULK_CHUNK) {
            ffidx_bulk_merge(ix);
        } else {
            size_t cap = ix->capbulk ? ix->capbulk * 2 : 4096;
            struct ffidx_bulk_ent *b = realloc(ix->bulk, cap * sizeof(*b));
            if (b) {
                ix->bulk = b;
                ix->capbulk = cap;
            } else if (ix->nbulk) {
                ffidx_bulk_merge(ix);      /* make room in what we have */
            } else {
                return -1;
            }
        }
    }
    ix->bulk[ix->nbulk].node = n;
    ix->bulk[ix->nbulk].seq = ix->bulk_seq++;
    ix->bulk[ix->nbulk].cache = 0;
    ix->nbulk++;
    return 0;
}

void ffidx_bulk_finish(struct ffidx *ix)
{
    ffidx_bulk_merge(ix);
    free(ix->bulk);
    ix->bulk = NULL;
    ix->capbulk = 0;
}

/* skl_link() at the end of the list: the predecessors are the last nodes
 * of each level, which the caller keeps in tail[]. */
void ffidx_append(struct ffidx *ix, struct ffidx_node *n, struct skl_node **tail)
{
    if (ix->hash.slot || ix->hash.job)
        ffh_free(&ix->hash, &ix->sl);   /* links past it: ffidx_hash_start again */
    skl_link(&ix->sl, &n->sk, tail);
    for (int lvl = 0; lvl < n->sk.height; lvl++)
        tail[lvl] = &n->sk;
    ix->live_bytes += ffidx_node_bytes(n);
}
