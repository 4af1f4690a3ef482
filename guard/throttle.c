/* throttle.c - token buckets per partition and per account (see throttle.h).
 *
 * Units: a bucket holds nano-tokens (1 token = 1e9); a rate is nano-tokens
 * per microsecond (tokens/s * 1000). A bucket's level at time now is
 * min(burst, tokens + (now - stamp) * rate); storing (tokens, stamp) and
 * computing the level on use is the whole refill.
 *
 * The partition table is open addressing with linear probing over slots of
 * {h0, h1, tokens, stamp}; (h0, h1) == (0, 0) marks an empty slot (h1 always
 * has its low bit set). Deletion shifts the following run back, so there
 * are no tombstones and a lookup stops at the first empty slot. */
#include "guard/throttle.h"

#include "core/coding.h"
#include "core/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NANO 1000000000LL
/* Smallest table: 1024 slots, 32 KiB. */
#define THROTTLE_MIN_SLOTS 1024u
/* Slots the sweep examines on every admission. */
#define THROTTLE_SWEEP_STEP 2u
/* Deepest deficit a bucket can run into (in burst units beyond empty):
 * keeps the refill arithmetic far from overflow. */
#define THROTTLE_MAX_DEFICIT_BURSTS 1000

struct slot {
    uint64_t h0, h1;
    int64_t tokens;  /* nano-tokens at stamp */
    uint64_t stamp;  /* microseconds */
};

struct acct_bucket {
    int64_t tokens;
    uint64_t stamp;
};

struct throttle {
    int64_t p_rate, p_burst;   /* partition: nano-tokens per us, capacity */
    int64_t a_rate, a_burst;   /* account */
    int64_t p_floor, a_floor;  /* lowest level a deficit may reach */
    uint64_t k0, k1;           /* hash key */
    struct acct_bucket *acct;
    unsigned naccounts;
    struct slot *slots;        /* mmap()ed, cap slots */
    size_t cap, mask, count;
    size_t cursor;             /* next slot the sweep examines */
};

/* ---- SipHash-2-4 with 128-bit output, fed incrementally ---- */

struct sip {
    uint64_t v0, v1, v2, v3;
    uint64_t m;        /* pending bytes of the current word */
    unsigned mlen;     /* how many */
    uint64_t total;    /* bytes fed */
};

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static void sip_round(struct sip *s)
{
    s->v0 += s->v1;
    s->v1 = rotl(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rotl(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rotl(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rotl(s->v2, 32);
}

static void sip_init(struct sip *s, uint64_t k0, uint64_t k1)
{
    s->v0 = k0 ^ 0x736f6d6570736575ULL;
    s->v1 = k1 ^ 0x646f72616e646f6dULL ^ 0xee;
    s->v2 = k0 ^ 0x6c7967656e657261ULL;
    s->v3 = k1 ^ 0x7465646279746573ULL;
    s->m = 0;
    s->mlen = 0;
    s->total = 0;
}

static void sip_word(struct sip *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

static void sip_byte(struct sip *s, unsigned char b)
{
    s->m |= (uint64_t)b << (8 * s->mlen);
    s->total++;
    if (++s->mlen == 8) {
        sip_word(s, s->m);
        s->m = 0;
        s->mlen = 0;
    }
}

/* Little-endian 64-bit load. */
static uint64_t load_le64(const unsigned char *p)
{
    return coding_get_le(p, 8);
}

static void sip_feed(struct sip *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n && s->mlen) {
        sip_byte(s, *p++);
        n--;
    }
    while (n >= 8) {
        sip_word(s, load_le64(p));
        s->total += 8;
        p += 8;
        n -= 8;
    }
    while (n--)
        sip_byte(s, *p++);
}

static void sip_final(struct sip *s, uint64_t *h0, uint64_t *h1)
{
    uint64_t b = (s->total << 56) | s->m;
    sip_word(s, b);
    s->v2 ^= 0xee;
    for (int i = 0; i < 4; i++)
        sip_round(s);
    *h0 = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
    s->v1 ^= 0xdd;
    for (int i = 0; i < 4; i++)
        sip_round(s);
    *h1 = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* The partition's 128-bit identity: account, lower(table), 0, pk. */
static void key_hash(const struct throttle *t, const struct throttle_key *k, uint64_t *h0,
                     uint64_t *h1)
{
    struct sip s;
    unsigned char acct[4] = {(unsigned char)k->account, (unsigned char)(k->account >> 8),
                             (unsigned char)(k->account >> 16), (unsigned char)(k->account >> 24)};
    sip_init(&s, t->k0, t->k1);
    sip_feed(&s, acct, sizeof acct);
    for (size_t i = 0; i < k->table_len; i++) {
        unsigned char c = (unsigned char)k->table[i];
        sip_byte(&s, c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c);
    }
    sip_byte(&s, 0);
    sip_feed(&s, k->pk, k->pk_len);
    sip_final(&s, h0, h1);
    *h1 |= 1;  /* never (0, 0): that marks an empty slot */
}

/* ---- bucket arithmetic ---- */

/* Level at now of a bucket holding tokens at stamp. */
static int64_t level(int64_t tokens, uint64_t stamp, uint64_t now, int64_t rate, int64_t cap)
{
    if (tokens >= cap)
        return cap;
    if (now <= stamp)
        return tokens;
    uint64_t elapsed = now - stamp;
    uint64_t need = (uint64_t)(cap - tokens);
    if (elapsed > need / (uint64_t)rate)
        return cap;
    int64_t v = tokens + (int64_t)(elapsed * (uint64_t)rate);
    return v > cap ? cap : v;
}

/* Nano-tokens a bucket of capacity cap must hold to admit cost tokens. */
static int64_t needed(int64_t cost, int64_t cap)
{
    int64_t want = (cost > 0 ? cost : 1) * NANO;
    return want < cap ? want : cap;
}

/* Level minus cost, not below the deficit floor. */
static int64_t take(int64_t lvl, int64_t cost, int64_t floor)
{
    int64_t v = lvl - cost * NANO;
    return v < floor ? floor : v;
}

/* ---- the slot table ---- */

static struct slot *slots_alloc(size_t cap)
{
    void *p = mmap(NULL, cap * sizeof(struct slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        abort();  /* out of memory, as everywhere else */
    return p;  /* zero-filled: all empty */
}

static void slots_free(struct slot *s, size_t cap)
{
    if (s)
        munmap(s, cap * sizeof(struct slot));
}

static int slot_empty(const struct slot *s)
{
    return (s->h0 | s->h1) == 0;
}

static int slot_full(const struct throttle *t, const struct slot *s, uint64_t now)
{
    return level(s->tokens, s->stamp, now, t->p_rate, t->p_burst) >= t->p_burst;
}

/* Index of the slot holding (h0, h1), or of the empty slot ending its run. */
static size_t slot_find(const struct throttle *t, uint64_t h0, uint64_t h1)
{
    size_t i = (size_t)h0 & t->mask;
    while (!slot_empty(&t->slots[i]) && (t->slots[i].h0 != h0 || t->slots[i].h1 != h1))
        i = (i + 1) & t->mask;
    return i;
}

/* Empties slot i and shifts later members of its run back (no tombstones). */
static void slot_delete(struct throttle *t, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        struct slot *s = &t->slots[j];
        if (slot_empty(s))
            break;
        size_t home = (size_t)s->h0 & t->mask;
        /* s may move to i when its home is not in the cyclic range (i, j]. */
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            t->slots[i] = *s;
            i = j;
        }
    }
    memset(&t->slots[i], 0, sizeof t->slots[i]);
    t->count--;
}

/* Rebuilds the table with room for the live (not full) buckets at twice
 * their number, at least the minimum size; full buckets are dropped. */
static void table_rebuild(struct throttle *t, uint64_t now, size_t extra)
{
    size_t live = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (!slot_empty(&t->slots[i]) && !slot_full(t, &t->slots[i], now))
            live++;
    size_t cap = THROTTLE_MIN_SLOTS;
    while (cap < (live + extra) * 2)
        cap *= 2;
    struct slot *old = t->slots;
    size_t old_cap = t->cap;
    t->slots = slots_alloc(cap);
    t->cap = cap;
    t->mask = cap - 1;
    t->count = 0;
    t->cursor = 0;
    for (size_t i = 0; i < old_cap; i++) {
        const struct slot *s = &old[i];
        if (slot_empty(s) || slot_full(t, s, now))
            continue;
        size_t j = slot_find(t, s->h0, s->h1);
        t->slots[j] = *s;
        t->count++;
    }
    slots_free(old, old_cap);
}

/* Examines up to n slots at the sweep cursor, deleting full buckets. */
static void sweep(struct throttle *t, uint64_t now, size_t n)
{
    if (t->count == 0)
        return;
    if (n > t->cap)
        n = t->cap;
    while (n--) {
        size_t i = t->cursor;
        t->cursor = (t->cursor + 1) & t->mask;
        /* A deletion may shift a later bucket into slot i: look again. */
        while (!slot_empty(&t->slots[i]) && slot_full(t, &t->slots[i], now))
            slot_delete(t, i);
    }
}

/* Stores a bucket at level lvl for (h0, h1), which has none; may rebuild. */
static void slot_insert(struct throttle *t, uint64_t h0, uint64_t h1, int64_t lvl, uint64_t now)
{
    if ((t->count + 1) * 4 > t->cap * 3)
        table_rebuild(t, now, 1);
    size_t i = slot_find(t, h0, h1);
    t->slots[i] = (struct slot){h0, h1, lvl, now};
    t->count++;
}

/* ---- public ---- */

/* Converts a configured rate/burst; 0 when out of range. */
static int to_units(double rate, double burst, int64_t *r, int64_t *b)
{
    if (!(rate >= 0.001 && rate <= 1e7 && burst >= 1 && burst <= 1e6))
        return 0;
    *r = llround(rate * 1000.0);
    *b = llround(burst * (double)NANO);
    return *r > 0;
}

struct throttle *throttle_new(const struct throttle_limits *lim, unsigned naccounts,
                              const unsigned char seed[16])
{
    struct throttle *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    if (!to_units(lim->partition_rate, lim->partition_burst, &t->p_rate, &t->p_burst) ||
        !to_units(lim->account_rate, lim->account_burst, &t->a_rate, &t->a_burst) ||
        naccounts == 0) {
        free(t);
        return NULL;
    }
    t->p_floor = -t->p_burst * THROTTLE_MAX_DEFICIT_BURSTS;
    t->a_floor = -t->a_burst * THROTTLE_MAX_DEFICIT_BURSTS;
    t->k0 = load_le64(seed);
    t->k1 = load_le64(seed + 8);
    t->naccounts = naccounts;
    t->acct = calloc(naccounts, sizeof *t->acct);
    if (!t->acct)
        abort();
    for (unsigned i = 0; i < naccounts; i++)
        t->acct[i].tokens = t->a_burst;
    t->cap = THROTTLE_MIN_SLOTS;
    t->mask = t->cap - 1;
    t->slots = slots_alloc(t->cap);
    return t;
}

void throttle_free(struct throttle *t)
{
    if (!t)
        return;
    slots_free(t->slots, t->cap);
    free(t->acct);
    free(t);
}

enum throttle_verdict throttle_admit(struct throttle *t, const struct throttle_key *k,
                                     int64_t pcost, int64_t acost, uint64_t now_us)
{
    if (k->account >= t->naccounts)
        return THROTTLE_OK;  /* not an account we know: nothing to count */
    struct acct_bucket *a = &t->acct[k->account];
    int64_t alvl = level(a->tokens, a->stamp, now_us, t->a_rate, t->a_burst);
    if (alvl < needed(acost, t->a_burst))
        return THROTTLE_ACCOUNT;
    if (k->pk) {
        sweep(t, now_us, THROTTLE_SWEEP_STEP);
        uint64_t h0, h1;
        key_hash(t, k, &h0, &h1);
        size_t i = slot_find(t, h0, h1);
        struct slot *s = &t->slots[i];
        int have = !slot_empty(s);
        int64_t plvl = have ? level(s->tokens, s->stamp, now_us, t->p_rate, t->p_burst)
                            : t->p_burst;
        if (plvl < needed(pcost, t->p_burst))
            return THROTTLE_PARTITION;
        if (pcost > 0) {
            if (have) {
                s->tokens = take(plvl, pcost, t->p_floor);
                s->stamp = now_us;
            } else {
                slot_insert(t, h0, h1, take(plvl, pcost, t->p_floor), now_us);
            }
        }
    }
    if (acost > 0) {
        a->tokens = take(alvl, acost, t->a_floor);
        a->stamp = now_us;
    }
    return THROTTLE_OK;
}

void throttle_charge(struct throttle *t, const struct throttle_key *k, int64_t pcost,
                     int64_t acost, uint64_t now_us)
{
    if (k->account >= t->naccounts)
        return;
    if (acost > 0) {
        struct acct_bucket *a = &t->acct[k->account];
        int64_t alvl = level(a->tokens, a->stamp, now_us, t->a_rate, t->a_burst);
        a->tokens = take(alvl, acost, t->a_floor);
        a->stamp = now_us;
    }
    if (k->pk && pcost > 0) {
        uint64_t h0, h1;
        key_hash(t, k, &h0, &h1);
        size_t i = slot_find(t, h0, h1);
        struct slot *s = &t->slots[i];
        if (!slot_empty(s)) {
            int64_t plvl = level(s->tokens, s->stamp, now_us, t->p_rate, t->p_burst);
            s->tokens = take(plvl, pcost, t->p_floor);
            s->stamp = now_us;
        } else {
            slot_insert(t, h0, h1, take(t->p_burst, pcost, t->p_floor), now_us);
        }
    }
}

void throttle_maintain(struct throttle *t, uint64_t now_us, size_t budget)
{
    sweep(t, now_us, budget);
    if (t->cap > THROTTLE_MIN_SLOTS && t->count * 8 <= t->cap)
        table_rebuild(t, now_us, 0);
}

double throttle_partition_tokens(struct throttle *t, const struct throttle_key *k,
                                 uint64_t now_us)
{
    uint64_t h0, h1;
    key_hash(t, k, &h0, &h1);
    const struct slot *s = &t->slots[slot_find(t, h0, h1)];
    int64_t lvl = slot_empty(s) ? t->p_burst : level(s->tokens, s->stamp, now_us, t->p_rate,
                                                     t->p_burst);
    return (double)lvl / (double)NANO;
}

double throttle_account_tokens(struct throttle *t, unsigned account, uint64_t now_us)
{
    if (account >= t->naccounts)
        return 0;
    const struct acct_bucket *a = &t->acct[account];
    return (double)level(a->tokens, a->stamp, now_us, t->a_rate, t->a_burst) / (double)NANO;
}

size_t throttle_partitions(const struct throttle *t)
{
    return t->count;
}

size_t throttle_table_bytes(const struct throttle *t)
{
    return t->cap * sizeof(struct slot);
}

void throttle_render_metrics(void *arg, struct buf *b)
{
    const struct throttle *t = arg;
    buf_puts(b, "# HELP tabled_throttle_partition_buckets Partitions holding a token bucket "
                "that is not full.\n# TYPE tabled_throttle_partition_buckets gauge\n");
    buf_printf(b, "tabled_throttle_partition_buckets %zu\n", throttle_partitions(t));
    buf_puts(b, "# HELP tabled_throttle_table_bytes Memory of the partition bucket table.\n"
                "# TYPE tabled_throttle_table_bytes gauge\n");
    buf_printf(b, "tabled_throttle_table_bytes %zu\n", throttle_table_bytes(t));
}
