/* ffindex.c - the flatfile backend's ordered in-memory index (see
 * ffindex.h): a skip list with p = 1/4, cursors that survive writes, and a
 * sort-then-link bulk load for start-up. */
#include "backends/ffindex.h"

#include <stdlib.h>
#include <string.h>

#include "core/rand.h"

#define FFIDX_BULK_CHUNK ((size_t)1 << 22)  /* queued writes merged at once */
#define FFIDX_SMALL_SORT 16                 /* insertion sort below this */

int ffidx_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Compares node n's key with key. */
static int ffidx_node_cmp(const struct ffidx_node *n, const void *key, size_t klen)
{
    return ffidx_cmp(ffidx_key(n), n->klen, key, klen);
}

void ffidx_init(struct ffidx *ix, uint64_t seed)
{
    memset(ix, 0, sizeof(*ix));
    ix->height = 1;
    ix->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
}

void ffidx_free(struct ffidx *ix)
{
    for (struct ffidx_cursor *c = ix->cursors; c; c = c->next_c) {
        c->attached = 0;
        c->next = NULL;
    }
    ix->cursors = NULL;
    struct ffidx_node *n = ix->head[0];
    while (n) {
        struct ffidx_node *next = n->next[0];
        free(n);
        n = next;
    }
    for (size_t i = 0; i < ix->nbulk; i++)
        free(ix->bulk[i].node);
    free(ix->bulk);
    memset(ix->head, 0, sizeof(ix->head));
    ix->bulk = NULL;
    ix->nbulk = ix->capbulk = 0;
    ix->count = 0;
    ix->live_bytes = 0;
    ix->height = 1;
}

/* Random node height: each extra level with probability 1/4. */
static int ffidx_random_height(struct ffidx *ix)
{
    uint32_t r = (uint32_t)(rand_xorshift64(&ix->rng) >> 32);
    int h = 1;
    while (h < FFIDX_MAX_HEIGHT && (r & 3) == 0) {
        h++;
        r >>= 2;
    }
    return h;
}

struct ffidx_node *ffidx_node_new(struct ffidx *ix, const void *key, size_t klen)
{
    int h = ffidx_random_height(ix);
    struct ffidx_node *n = malloc(sizeof(*n) + (size_t)h * sizeof(n->next[0]) + klen);
    if (!n)
        return NULL;
    n->loc[0] = n->loc[1] = 0;
    n->vlen = 0;
    n->klen = (uint32_t)klen;
    n->cgen = 0;
    n->height = (uint8_t)h;
    n->flags = 0;
    if (klen)
        memcpy(ffidx_key(n), key, klen);
    return n;
}

/* Forward pointer slot at level lvl after x (x NULL: the head). */
static struct ffidx_node **ffidx_slot(struct ffidx *ix, struct ffidx_node *x, int lvl)
{
    return x ? &x->next[lvl] : &ix->head[lvl];
}

/* First node >= key; fills update[] with the predecessors on every level
 * in use when update is not NULL. */
static struct ffidx_node *ffidx_search(struct ffidx *ix, const void *key, size_t klen,
                                       struct ffidx_node **update)
{
    struct ffidx_node *x = NULL;
    for (int lvl = ix->height - 1; lvl >= 0; lvl--) {
        struct ffidx_node *n;
        while ((n = *ffidx_slot(ix, x, lvl)) && ffidx_node_cmp(n, key, klen) < 0)
            x = n;
        if (update)
            update[lvl] = x;
    }
    return *ffidx_slot(ix, x, 0);
}

struct ffidx_node *ffidx_find(struct ffidx *ix, const void *key, size_t klen)
{
    struct ffidx_node *n = ffidx_search(ix, key, klen, NULL);
    return n && ffidx_node_cmp(n, key, klen) == 0 ? n : NULL;
}

struct ffidx_node *ffidx_find_ge(struct ffidx *ix, const void *key, size_t klen)
{
    return klen ? ffidx_search(ix, key, klen, NULL) : ix->head[0];
}

/* Bytes a live node stands for in the log (for the garbage estimate). */
static uint64_t ffidx_node_bytes(const struct ffidx_node *n)
{
    return (uint64_t)n->klen + n->vlen + FFIDX_ENTRY_OVERHEAD;
}

/* Links n after the predecessors in update[] (NULL = head), raising the
 * list height when needed. */
static void ffidx_link(struct ffidx *ix, struct ffidx_node *n, struct ffidx_node **update)
{
    for (int lvl = ix->height; lvl < n->height; lvl++)
        update[lvl] = NULL;
    if (n->height > ix->height)
        ix->height = n->height;
    for (int lvl = 0; lvl < n->height; lvl++) {
        struct ffidx_node **slot = ffidx_slot(ix, update[lvl], lvl);
        n->next[lvl] = *slot;
        *slot = n;
    }
    ix->count++;
    ix->live_bytes += ffidx_node_bytes(n);
}

/* Unlinks old (whose predecessors are in update[]) and moves the cursors
 * that would return it next to repl, or to its successor. */
static void ffidx_unlink(struct ffidx *ix, struct ffidx_node *old, struct ffidx_node **update,
                         struct ffidx_node *repl)
{
    for (int lvl = 0; lvl < old->height; lvl++) {
        struct ffidx_node **slot = ffidx_slot(ix, update[lvl], lvl);
        if (*slot == old)
            *slot = old->next[lvl];
    }
    while (ix->height > 1 && ix->head[ix->height - 1] == NULL)
        ix->height--;
    for (struct ffidx_cursor *c = ix->cursors; c; c = c->next_c)
        if (c->next == old)
            c->next = repl ? repl : old->next[0];
    ix->count--;
    ix->live_bytes -= ffidx_node_bytes(old);
}

struct ffidx_node *ffidx_put(struct ffidx *ix, struct ffidx_node *n)
{
    struct ffidx_node *update[FFIDX_MAX_HEIGHT];
    struct ffidx_node *old = ffidx_search(ix, ffidx_key(n), n->klen, update);
    if (old && ffidx_node_cmp(old, ffidx_key(n), n->klen) != 0)
        old = NULL;
    if (old) {
        /* Unlink first (update[] stays valid: old's predecessors are not
         * old), then link n at the same place. */
        for (int lvl = 0; lvl < old->height; lvl++) {
            struct ffidx_node **slot = ffidx_slot(ix, update[lvl], lvl);
            if (*slot == old)
                *slot = old->next[lvl];
        }
        ix->count--;
        ix->live_bytes -= ffidx_node_bytes(old);
        ffidx_link(ix, n, update);
        while (ix->height > 1 && ix->head[ix->height - 1] == NULL)
            ix->height--;
        for (struct ffidx_cursor *c = ix->cursors; c; c = c->next_c)
            if (c->next == old)
                c->next = n;
        return old;
    }
    ffidx_link(ix, n, update);
    return NULL;
}

struct ffidx_node *ffidx_remove(struct ffidx *ix, const void *key, size_t klen)
{
    struct ffidx_node *update[FFIDX_MAX_HEIGHT];
    struct ffidx_node *old = ffidx_search(ix, key, klen, update);
    if (!old || ffidx_node_cmp(old, key, klen) != 0)
        return NULL;
    ffidx_unlink(ix, old, update, NULL);
    return old;
}

void ffidx_cursor_open(struct ffidx *ix, struct ffidx_cursor *c, const void *start, size_t slen)
{
    c->attached = 1;
    c->next = ffidx_find_ge(ix, start, slen);
    c->prev_c = NULL;
    c->next_c = ix->cursors;
    if (ix->cursors)
        ix->cursors->prev_c = c;
    ix->cursors = c;
}

void ffidx_cursor_seek(struct ffidx *ix, struct ffidx_cursor *c, const void *key, size_t klen)
{
    if (c->attached)
        c->next = ffidx_find_ge(ix, key, klen);
}

void ffidx_cursor_close(struct ffidx *ix, struct ffidx_cursor *c)
{
    if (!c->attached)
        return;
    if (c->prev_c)
        c->prev_c->next_c = c->next_c;
    else
        ix->cursors = c->next_c;
    if (c->next_c)
        c->next_c->prev_c = c->prev_c;
    c->attached = 0;
}

/* ---- bulk load ---- */

/* Eight key bytes of n from depth d, big-endian, zero-padded. */
static uint64_t ffidx_chunk(const struct ffidx_node *n, size_t d)
{
    const uint8_t *k = ffidx_key(n);
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = (v << 8) | (d + i < n->klen ? k[d + i] : 0);
    return v;
}

/* How many key bytes remain from depth d, capped at 9 ("more than 8"):
 * breaks ties between equal chunks so that a key ending earlier (its
 * padding zeros are not bytes) sorts first. */
static unsigned ffidx_rest(const struct ffidx_node *n, size_t d)
{
    size_t r = n->klen > d ? n->klen - d : 0;
    return r > 8 ? 9 : (unsigned)r;
}

/* Full comparison of two bulk entries: key, then write order. */
static int ffidx_ent_cmp(const void *pa, const void *pb)
{
    const struct ffidx_bulk_ent *a = pa, *b = pb;
    int c = ffidx_cmp(ffidx_key(a->node), a->node->klen, ffidx_key(b->node), b->node->klen);
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
 * pass: fingers (the predecessors of the last key on every level) only
 * move forward, so the merge costs O(queued + existing). */
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

    struct ffidx_node *update[FFIDX_MAX_HEIGHT] = {NULL};
    size_t i = 0;
    while (i < n) {
        /* the group of equal keys a[i..j); the highest seq wins */
        size_t j = i + 1, win = i;
        while (j < n && ffidx_cmp(ffidx_key(a[j].node), a[j].node->klen, ffidx_key(a[i].node),
                                  a[i].node->klen) == 0) {
            if (a[j].seq > a[win].seq)
                win = j;
            j++;
        }
        struct ffidx_node *w = a[win].node;
        const uint8_t *key = ffidx_key(w);
        for (int lvl = ix->height - 1; lvl >= 0; lvl--) {
            struct ffidx_node *x = update[lvl], *nx;
            while ((nx = *ffidx_slot(ix, x, lvl)) && ffidx_node_cmp(nx, key, w->klen) < 0)
                x = nx;
            update[lvl] = x;
        }
        struct ffidx_node *old = *ffidx_slot(ix, update[0], 0);
        if (old && ffidx_node_cmp(old, key, w->klen) != 0)
            old = NULL;
        if (old) {
            ffidx_unlink(ix, old, update, NULL);
            free(old);
        }
        if (!(w->flags & FFIDX_TOMB))
            ffidx_link(ix, w, update);
        for (size_t k = i; k < j; k++)
            if (k != win || (w->flags & FFIDX_TOMB))
                free(a[k].node);
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
