/* backend_model.c - a backend against a model, with random work (see
 * backend_model.h; tests/unit/test_backend_model runs it on the built-in
 * backends, tabled-backend-check on a plug-in).
 *
 * Batches of puts and deletes (ascending runs in one "partition", as a
 * $batch writes them, or keys anywhere), point gets, range scans and
 * seeks on a cursor left open across writes, each compared with a plain
 * array. Keys come from a fixed set of 4,000 whose lengths vary, so that
 * some are prefixes of others; the array holds them in the store's order
 * (memcmp, shorter first). The memory backend starts each search from the
 * last one's path (its "finger"), which only a long mix of forward,
 * backward, replacing and deleting writes exercises. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "tests/unit/backend_adapter.h"
#include "tests/unit/backend_model.h"

#define NPART 4
#define NROW 1000
#define NKEYS (NPART * NROW)

static char keys[NKEYS][16];
static size_t key_lens[NKEYS];
static int present[NKEYS];
static unsigned vals[NKEYS];     /* value seed of a present key */
static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* The store's key order: memcmp, and a proper prefix first. */
static int key_cmp(const void *a, const void *b)
{
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
    size_t n = key_lens[ia] < key_lens[ib] ? key_lens[ia] : key_lens[ib];
    int c = memcmp(keys[ia], keys[ib], n);
    if (c)
        return c;
    return key_lens[ia] < key_lens[ib] ? -1 : key_lens[ia] > key_lens[ib];
}

/* Builds the key set in store order: "p<P>/<R>" with R unpadded. */
static void make_keys(void)
{
    static char raw[NKEYS][16];
    static size_t raw_lens[NKEYS];
    size_t order[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) {
        raw_lens[i] = (size_t)snprintf(raw[i], sizeof raw[i], "p%zu/%zu", i / NROW, i % NROW);
        memcpy(keys[i], raw[i], sizeof raw[i]);
        key_lens[i] = raw_lens[i];
        order[i] = i;
    }
    qsort(order, NKEYS, sizeof order[0], key_cmp);
    for (size_t i = 0; i < NKEYS; i++) {
        memcpy(keys[i], raw[order[i]], sizeof raw[0]);
        key_lens[i] = raw_lens[order[i]];
    }
}

/* Value of key i for seed v: a few to a few hundred bytes. */
static size_t make_val(size_t i, unsigned v, char *out)
{
    size_t n = 1 + (v % 300);
    for (size_t k = 0; k < n; k++)
        out[k] = (char)('a' + (i + v + k) % 26);
    return n;
}

static int val_ok(size_t i, const void *val, size_t len)
{
    char want[512];
    size_t n = make_val(i, vals[i], want);
    return len == n && memcmp(val, want, n) == 0;
}

/* Index of the first key >= (k, kl), NKEYS when none. */
static size_t lower_bound(const char *k, size_t kl)
{
    size_t lo = 0, hi = NKEYS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        size_t n = key_lens[mid] < kl ? key_lens[mid] : kl;
        int c = memcmp(keys[mid], k, n);
        if (c == 0)
            c = key_lens[mid] < kl ? -1 : key_lens[mid] > kl;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Runs ops random operations on one store (see backend_model.h). */
int bm_run(const struct backend_ops *ops, const char *dir, const char *const *params,
               long nops)
{
    struct backend_options opt = {.data_dir = dir, .durability = BACKEND_DURABLE_NONE,
                                  .params = params, .host = bta_host()};
    struct backend_store *st;
    char err[256];
    if (ops->open(&opt, &st, err, sizeof err) != BACKEND_OK) {
        printf("# open %s: %s\n", ops->name, err);
        return 1;
    }
    memset(present, 0, sizeof present);
    int bad = 0;
    struct backend_iter *held = NULL;   /* a cursor open across writes */
    size_t held_pos = 0;                /* model index it was last seen at */
    static char vbuf[64][512];
    for (long op = 0; op < nops && bad < 5; op++) {
        unsigned kind = (unsigned)(rnd() % 100);
        if (kind < 45) {   /* a batch of writes */
            struct backend_write w[64];
            size_t n = 1 + rnd() % 40;
            size_t at = rnd() % NKEYS;
            int run_up = rnd() % 3 != 0;   /* an ascending run, else anywhere */
            size_t idx[64];
            unsigned seeds[64];
            for (size_t j = 0; j < n; j++) {
                size_t i = run_up ? (at + j * (1 + rnd() % 3)) % NKEYS : rnd() % NKEYS;
                idx[j] = i;
                seeds[j] = (unsigned)rnd();
                int del = rnd() % 4 == 0;
                w[j].op = del ? BACKEND_DELETE : BACKEND_PUT;
                w[j].key = keys[i];
                w[j].key_len = key_lens[i];
                w[j].val = del ? NULL : vbuf[j];
                w[j].val_len = del ? 0 : make_val(i, seeds[j], vbuf[j]);
            }
            if (bta_apply(ops, st, w, NULL, n, 0, NULL, err, sizeof err) != BACKEND_OK) {
                bad++;
                printf("# op %ld: %s\n", op, err);
                continue;
            }
            for (size_t j = 0; j < n; j++) {   /* later writes win */
                present[idx[j]] = w[j].op == BACKEND_PUT;
                vals[idx[j]] = seeds[j];
            }
        } else if (kind < 75) {   /* point gets */
            size_t i = rnd() % NKEYS;
            const void *val = NULL;
            size_t vl = 0;
            int rc = bta_get(ops, st, keys[i], key_lens[i], &val, &vl, err, sizeof err);
            int ok = present[i] ? rc == BACKEND_OK && val_ok(i, val, vl) : rc == BACKEND_NOTFOUND;
            if (!ok) {
                bad++;
                printf("# op %ld: get %.*s: rc %d, model %s\n", op, (int)key_lens[i],
                        keys[i], rc, present[i] ? "present" : "absent");
            }
        } else if (kind < 90) {   /* a bounded scan */
            size_t a = rnd() % NKEYS, b = a + rnd() % 200;
            if (b > NKEYS)
                b = NKEYS;
            struct backend_iter *it;
            if (ops->iter_open(st, keys[a], key_lens[a], b < NKEYS ? keys[b] : NULL,
                               b < NKEYS ? key_lens[b] : 0, &it, err, sizeof err) != BACKEND_OK) {
                bad++;
                printf("# op %ld: %s\n", op, err);
                continue;
            }
            size_t m = a;
            for (;;) {
                while (m < b && !present[m])
                    m++;
                const void *k, *v;
                size_t kl, vl;
                int rc = bta_next(ops, it, &k, &kl, &v, &vl);
                if (m == b) {
                    if (rc != 0) {
                        bad++;
                        printf("# op %ld: scan went past its end\n", op);
                    }
                    break;
                }
                if (rc != 1 || kl != key_lens[m] || memcmp(k, keys[m], kl) != 0 ||
                    !val_ok(m, v, vl)) {
                    bad++;
                    printf("# op %ld: scan from %zu: expected key %zu\n", op, a, m);
                    break;
                }
                m++;
            }
            ops->iter_close(it);
        } else {   /* the held cursor: open, seek forward, or step */
            if (!held || rnd() % 4 == 0) {
                if (held)
                    ops->iter_close(held);
                held_pos = rnd() % NKEYS;
                if (ops->iter_open(st, keys[held_pos], key_lens[held_pos], NULL, 0, &held, err,
                                   sizeof err) != BACKEND_OK) {
                    held = NULL;
                    bad++;
                    printf("# op %ld: %s\n", op, err);
                }
                continue;
            }
            if (rnd() % 2) {
                held_pos = rnd() % NKEYS;
                ops->iter_seek(held, keys[held_pos], key_lens[held_pos]);
            }
            /* What comes next must be a present key at or after held_pos
             * (keys written since may or may not be seen: only order,
             * bounds and values of keys unchanged are promised). */
            const void *k, *v;
            size_t kl, vl;
            int rc = bta_next(ops, held, &k, &kl, &v, &vl);
            if (rc == 1) {
                size_t i = lower_bound(k, kl);
                if (i == NKEYS || key_lens[i] != kl || memcmp(keys[i], k, kl) != 0 ||
                    i < held_pos) {
                    bad++;
                    printf("# op %ld: held cursor returned a key out of order\n", op);
                } else {
                    held_pos = i + 1;
                }
            } else if (rc < 0) {
                bad++;
                printf("# op %ld: held cursor failed\n", op);
            }
        }
    }
    if (held)
        ops->iter_close(held);
    /* The whole store, in order, once more. */
    struct backend_iter *it;
    if (ops->iter_open(st, NULL, 0, NULL, 0, &it, err, sizeof err) == BACKEND_OK) {
        size_t m = 0;
        for (;;) {
            while (m < NKEYS && !present[m])
                m++;
            const void *k, *v;
            size_t kl, vl;
            int rc = bta_next(ops, it, &k, &kl, &v, &vl);
            if (m == NKEYS) {
                bad += rc != 0;
                break;
            }
            if (rc != 1 || kl != key_lens[m] || memcmp(k, keys[m], kl) != 0 ||
                !val_ok(m, v, vl)) {
                bad++;
                printf("# final scan: expected key %zu\n", m);
                break;
            }
            m++;
        }
        ops->iter_close(it);
    } else {
        bad++;
    }
    ops->close(st);
    return bad;
}

/* Sets the random seed and builds the key set. */
void bm_init(uint64_t seed)
{
    rng_state = seed ? seed : 1;
    make_keys();
}
