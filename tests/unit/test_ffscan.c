/* test_ffscan.c - flat-file scans served from a cursor's read-ahead window
 * (backends/flatfile.c ff_iter_value) return exactly the stored values:
 * keys written in key order (values side by side in the log), in shuffled
 * order (far apart), rewritten (moved to the log's end), deleted, empty,
 * values larger than the window, an end bound inside a window, and a write
 * during the scan to a key whose old value the window already holds. The
 * expected values come from a plain array model. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "tests/unit/backend_adapter.h"
#include "tests/unit/tap.h"

#define NKEYS 600
#define BIG (100u << 10)   /* above the 64 KiB window */

static uint8_t *model[NKEYS];
static size_t model_len[NKEYS];
static int present[NKEYS];
static unsigned seed = 12345;

/* Small deterministic generator (the test must not depend on rand()). */
static unsigned next_rand(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

static void key_of(int i, char *k)
{
    snprintf(k, 16, "k%05d", i);
}

/* Writes key i with a fresh value of len bytes (recorded in the model). */
static int put(const struct backend_ops *ops, struct backend_store *st, int i, size_t len)
{
    char k[16];
    key_of(i, k);
    uint8_t *v = malloc(len ? len : 1);
    if (!v)
        return -1;
    for (size_t j = 0; j < len; j++)
        v[j] = (uint8_t)(next_rand() ^ (unsigned)i);
    struct backend_write w = {.op = BACKEND_PUT, .key = k, .key_len = strlen(k), .val = v,
                              .val_len = len};
    char err[256];
    int rc = bta_apply(ops, st, &w, NULL, 1, 0, NULL, err, sizeof err);
    free(model[i]);
    model[i] = v;
    model_len[i] = len;
    present[i] = 1;
    return rc == BACKEND_OK ? 0 : -1;
}

static int del(const struct backend_ops *ops, struct backend_store *st, int i)
{
    char k[16];
    key_of(i, k);
    struct backend_write w = {.op = BACKEND_DELETE, .key = k, .key_len = strlen(k)};
    char err[256];
    present[i] = 0;
    return bta_apply(ops, st, &w, NULL, 1, 0, NULL, err, sizeof err) == BACKEND_OK ? 0 : -1;
}

/* Scans [a, b) and compares every entry with the model; returns the
 * number of mismatches (missing, extra, or a different value). */
static int scan_check(const struct backend_ops *ops, struct backend_store *st, int a, int b)
{
    char ka[16], kb[16], err[256];
    key_of(a, ka);
    key_of(b, kb);
    struct backend_iter *it;
    if (ops->iter_open(st, ka, strlen(ka), b < NKEYS ? kb : NULL, b < NKEYS ? strlen(kb) : 0,
                       &it, err, sizeof err) != BACKEND_OK)
        return 1000000;
    int bad = 0, i = a;
    const void *k, *v;
    size_t kl, vl;
    int rc;
    while ((rc = bta_next(ops, it, &k, &kl, &v, &vl)) == 1) {
        while (i < b && !present[i])
            i++;
        char want[16];
        key_of(i, want);
        if (i >= b || kl != strlen(want) || memcmp(k, want, kl) != 0 || vl != model_len[i] ||
            (vl && memcmp(v, model[i], vl) != 0))
            bad++;
        i++;
    }
    while (i < b && !present[i])
        i++;
    if (rc != 0 || i < b)
        bad++;
    ops->iter_close(it);
    return bad;
}

int main(void)
{
    char dir[] = "/tmp/test_ffscan.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    const struct backend_ops *ops = &backend_flatfile_ops;
    struct backend_options opt = {.data_dir = dir, .durability = BACKEND_DURABLE_NONE};
    opt.host = bta_host();
    struct backend_store *st = NULL;
    char err[256];
    if (ops->open(&opt, &st, err, sizeof err) != BACKEND_OK) {
        printf("Bail out! open: %s\n", err);
        return 1;
    }
    /* keys 0..299 in key order: their values lie side by side */
    int fails = 0;
    for (int i = 0; i < 300; i++)
        fails += put(ops, st, i, i % 50 == 0 ? 0 : 200 + (size_t)(next_rand() % 1500));
    /* keys 300..599 in shuffled order: neighbours far apart in the log */
    int order[300];
    for (int i = 0; i < 300; i++)
        order[i] = 300 + i;
    for (int i = 299; i > 0; i--) {
        int j = (int)(next_rand() % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < 300; i++)
        fails += put(ops, st, order[i], 100 + (size_t)(next_rand() % 3000));
    TEST_CHECK(fails == 0, "600 keys written");
    TEST_CHECK(scan_check(ops, st, 0, NKEYS) == 0, "full scan: keys in order and shuffled, empty values");

    /* values larger than the window, between small ones written in order */
    fails = 0;
    for (int i = 100; i < 110; i++)
        fails += put(ops, st, i, i % 2 ? BIG : 40000);
    TEST_CHECK(fails == 0 && scan_check(ops, st, 0, NKEYS) == 0,
       "values of 40 KiB and 100 KiB (larger than the read-ahead window)");

    /* rewrite every 7th key and delete every 11th: gaps in the windows */
    fails = 0;
    for (int i = 0; i < NKEYS; i += 7)
        fails += put(ops, st, i, 10 + (size_t)(next_rand() % 900));
    for (int i = 5; i < NKEYS; i += 11)
        fails += del(ops, st, i);
    TEST_CHECK(fails == 0 && scan_check(ops, st, 0, NKEYS) == 0, "rewritten and deleted keys");

    TEST_CHECK(scan_check(ops, st, 20, 37) == 0 && scan_check(ops, st, 250, 420) == 0,
       "bounded scans ending inside a window");

    /* a write during a scan to keys whose old values the window holds */
    char k0[16];
    key_of(200, k0);
    struct backend_iter *it;
    int bad = ops->iter_open(st, k0, strlen(k0), NULL, 0, &it, err, sizeof err) != BACKEND_OK;
    const void *k, *v;
    size_t kl, vl;
    bad += bta_next(ops, it, &k, &kl, &v, &vl) != 1;   /* reads the window: 200.. */
    bad += put(ops, st, 202, 333) != 0;
    bad += put(ops, st, 203, 0) != 0;
    bad += del(ops, st, 204) != 0;
    int i = 201, seen = 0;
    while (bta_next(ops, it, &k, &kl, &v, &vl) == 1 && i < 230) {
        while (!present[i])
            i++;
        char want[16];
        key_of(i, want);
        if (kl != strlen(want) || memcmp(k, want, kl) != 0 || vl != model_len[i] ||
            (vl && memcmp(v, model[i], vl) != 0))
            bad++;
        i++;
        seen++;
    }
    ops->iter_close(it);
    TEST_CHECK(bad == 0 && seen > 20, "writes during a scan: the scan returns the new values");

    /* the same store after a reopen (the index rebuilt from the log) */
    ops->close(st);
    st = NULL;
    TEST_CHECK(ops->open(&opt, &st, err, sizeof err) == BACKEND_OK, "reopen");
    TEST_CHECK(st && scan_check(ops, st, 0, NKEYS) == 0, "full scan after reopen");
    TEST_CHECK(st && scan_check(ops, st, 99, 111) == 0, "scan over the large values after reopen");
    if (st)
        ops->close(st);

    for (int j = 0; j < NKEYS; j++)
        free(model[j]);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_done();
}
