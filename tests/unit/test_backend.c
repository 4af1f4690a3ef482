/* test_backend.c - the backend conformance suite.
 *
 *     test_backend [BACKEND [DIR]]
 *
 * BACKEND is a built-in name or a path to a plug-in .so (default "memory").
 * Every section opens its own store with data_dir DIR/SECTION; DIR defaults
 * to a fresh mkdtemp() directory that is removed at the end (a DIR given on
 * the command line is left in place and should be empty). The same checks
 * run against every backend; the close-and-reopen checks run only for
 * durable backends (every backend except "memory"), and a few checks of
 * memory-specific promises run only for "memory". */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "tests/unit/tap.h"

/* A key or value given as a C literal that may hold 0x00 bytes. */
struct tk {
    const char *p;
    size_t n;
};
#define TK(s) {(s), sizeof(s) - 1}

static const struct backend_ops *ops;
static char base_dir[4096];
static int is_memory;           /* the backend under test is "memory" */

/* ---- small helpers over the vtable ---- */

/* Opens the store of one section (data_dir = base_dir/section). */
static struct backend_store *store_open(const char *section, enum backend_durability d)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/%s", base_dir, section);
    struct backend_options opt = {.data_dir = dir, .durability = d, .params = NULL};
    struct backend_store *st = NULL;
    char err[256] = "";
    int rc = ops->open(&opt, &st, err, sizeof(err));
    if (rc != BACKEND_OK || !st) {
        printf("# open %s failed: %d %s\n", dir, rc, err);
        return NULL;
    }
    return st;
}

/* One put through apply(). */
static int put(struct backend_store *st, const void *k, size_t kl, const void *v, size_t vl)
{
    struct backend_write w = {BACKEND_PUT, k, kl, v, vl};
    char err[256] = "";
    int rc = ops->apply(st, &w, 1, err, sizeof(err));
    if (rc != BACKEND_OK)
        printf("# put failed: %d %s\n", rc, err);
    return rc;
}

/* One delete through apply(). */
static int del(struct backend_store *st, const void *k, size_t kl)
{
    struct backend_write w = {BACKEND_DELETE, k, kl, NULL, 0};
    char err[256] = "";
    int rc = ops->apply(st, &w, 1, err, sizeof(err));
    if (rc != BACKEND_OK)
        printf("# delete failed: %d %s\n", rc, err);
    return rc;
}

/* 1 when get(k) returns exactly the value v. */
static int get_is(struct backend_store *st, const void *k, size_t kl, const void *v, size_t vl)
{
    void *got = NULL;
    size_t got_len = 0;
    char err[256] = "";
    int rc = ops->get(st, k, kl, &got, &got_len, err, sizeof(err));
    int ok = rc == BACKEND_OK && got != NULL && got_len == vl && (vl == 0 || memcmp(got, v, vl) == 0);
    if (!ok)
        printf("# get: rc %d, len %zu (want %zu) %s\n", rc, got_len, vl, err);
    if (rc == BACKEND_OK)
        free(got);
    return ok;
}

/* 1 when get(k) says BACKEND_NOTFOUND. */
static int get_absent(struct backend_store *st, const void *k, size_t kl)
{
    void *got = NULL;
    size_t got_len = 0;
    int rc = ops->get(st, k, kl, &got, &got_len, NULL, 0);
    if (rc == BACKEND_OK)
        free(got);
    return rc == BACKEND_NOTFOUND;
}

/* Byte order of the keyspace, as the reference for the checks. */
static int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

struct kv {
    const void *k;
    size_t kl;
    const void *v;
    size_t vl;
};

/* Prints a key as hex for a diagnostic line. */
static void print_key(const char *label, const void *k, size_t kl)
{
    printf("#   %s (%zu bytes):", label, kl);
    for (size_t i = 0; i < kl && i < 24; i++)
        printf(" %02x", ((const unsigned char *)k)[i]);
    printf("%s\n", kl > 24 ? " ..." : "");
}

/* Drains an open cursor and compares what it returns, in order, with
 * exp[0..n). Returns 1 on an exact match (keys and values). */
static int iter_matches(struct backend_iter *it, const struct kv *exp, size_t n)
{
    size_t i = 0;
    for (;;) {
        const void *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        int rc = ops->iter_next(it, &k, &kl, &v, &vl);
        if (rc < 0) {
            printf("# iter_next error %d after %zu entries\n", rc, i);
            return 0;
        }
        if (rc == 0)
            break;
        if (i >= n) {
            printf("# cursor returned more than the %zu expected entries\n", n);
            print_key("extra", k, kl);
            return 0;
        }
        if (key_cmp(k, kl, exp[i].k, exp[i].kl) != 0) {
            printf("# entry %zu has the wrong key\n", i);
            print_key("got", k, kl);
            print_key("expected", exp[i].k, exp[i].kl);
            return 0;
        }
        if (vl != exp[i].vl || (vl && (!v || memcmp(v, exp[i].v, vl) != 0))) {
            printf("# entry %zu has the wrong value (len %zu, want %zu)\n", i, vl, exp[i].vl);
            return 0;
        }
        i++;
    }
    if (i != n) {
        printf("# cursor ended after %zu of %zu expected entries\n", i, n);
        return 0;
    }
    return 1;
}

/* Opens a cursor over [start, end) and compares it with exp[0..n). */
static int scan_matches(struct backend_store *st, const void *start, size_t sl, const void *end,
                        size_t el, const struct kv *exp, size_t n)
{
    struct backend_iter *it = NULL;
    char err[256] = "";
    int rc = ops->iter_open(st, start, sl, end, el, &it, err, sizeof(err));
    if (rc != BACKEND_OK || !it) {
        printf("# iter_open failed: %d %s\n", rc, err);
        return 0;
    }
    int ok = iter_matches(it, exp, n);
    ops->iter_close(it);
    return ok;
}

/* 1 when the next entry of the cursor has key k (0/NULL k: at the end). */
static int next_is(struct backend_iter *it, const void *k, size_t kl)
{
    const void *gk = NULL, *gv = NULL;
    size_t gkl = 0, gvl = 0;
    int rc = ops->iter_next(it, &gk, &gkl, &gv, &gvl);
    if (!k) {
        if (rc != 0)
            printf("# expected the end, iter_next returned %d\n", rc);
        return rc == 0;
    }
    if (rc != 1) {
        printf("# expected an entry, iter_next returned %d\n", rc);
        return 0;
    }
    if (key_cmp(gk, gkl, k, kl) != 0) {
        print_key("got", gk, gkl);
        print_key("expected", k, kl);
        return 0;
    }
    return 1;
}

/* ---- sections ---- */

/* The keys of the ordering checks, in ascending byte order. */
static const struct tk order_keys[] = {
    TK("\x00"), TK("\x00\x00"), TK("\x00\x01"), TK("\x01"), TK("a"), TK("a\x00"),
    TK("a\x00\x00"), TK("a\x01"), TK("ab"), TK("abc"), TK("b"), TK("\x7f"),
    TK("\x80"), TK("\xfe"), TK("\xff"), TK("\xff\x00"), TK("\xff\xff"), TK("\xff\xff\xff"),
};
#define NORDER (sizeof(order_keys) / sizeof(order_keys[0]))
static char order_vals[NORDER][16];

/* Fills exp with order_keys[from..to) and their values; returns the count. */
static size_t order_slice(struct kv *exp, size_t from, size_t to)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++)
        exp[n++] = (struct kv){order_keys[i].p, order_keys[i].n, order_vals[i], strlen(order_vals[i])};
    return n;
}

/* The registry: built-in names, unknown names and bad plug-in paths. */
static void test_registry(void)
{
    char err[256] = "";
    const struct backend_ops *m = backend_lookup("memory", err, sizeof(err));
    TEST_CHECK(m == &backend_memory_ops, "registry: 'memory' is the built-in memory backend");
    err[0] = 0;
    TEST_CHECK(backend_lookup("no-such-backend", err, sizeof(err)) == NULL,
               "registry: unknown name fails");
    TEST_CHECK(strstr(err, "no-such-backend") && strstr(err, "memory"),
               "registry: unknown-name error names the known backends");
    err[0] = 0;
    TEST_CHECK(backend_lookup("/nonexistent/libnothing.so", err, sizeof(err)) == NULL && err[0],
               "registry: missing plug-in file fails with a message");
    TEST_CHECK(backend_lookup("", NULL, 0) == NULL, "registry: empty name fails (no err buffer)");
    TEST_EQ_INT(ops->version, TABLED_BACKEND_VERSION, "backend under test has the current version");
}

/* Point operations: hit, miss, overwrite, delete, zero-length values,
 * invalid keys. */
static void test_point_ops(void)
{
    struct backend_store *st = store_open("point", BACKEND_DURABLE_NONE);
    TEST_CHECK(st != NULL, "point: open");
    if (!st)
        return;
    TEST_CHECK(get_absent(st, "k", 1), "point: get on an empty store is NOTFOUND");
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, NULL, 0), "point: empty store scans empty");

    TEST_EQ_INT(put(st, "k", 1, "one", 3), BACKEND_OK, "point: put");
    TEST_CHECK(get_is(st, "k", 1, "one", 3), "point: get hit");
    TEST_CHECK(get_absent(st, "j", 1), "point: get miss (other key)");
    TEST_CHECK(get_absent(st, "k\x00", 2), "point: get miss (key plus 0x00)");
    TEST_CHECK(get_absent(st, "kk", 2), "point: get miss (longer key)");

    TEST_EQ_INT(put(st, "k", 1, "a longer value", 14), BACKEND_OK, "point: overwrite longer");
    TEST_CHECK(get_is(st, "k", 1, "a longer value", 14), "point: overwrite longer is visible");
    TEST_EQ_INT(put(st, "k", 1, "s", 1), BACKEND_OK, "point: overwrite shorter");
    TEST_CHECK(get_is(st, "k", 1, "s", 1), "point: overwrite shorter is visible");
    struct kv one = {"k", 1, "s", 1};
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, &one, 1), "point: overwrite leaves one entry");

    TEST_EQ_INT(del(st, "k", 1), BACKEND_OK, "point: delete");
    TEST_CHECK(get_absent(st, "k", 1), "point: deleted key is NOTFOUND");
    TEST_EQ_INT(del(st, "k", 1), BACKEND_OK, "point: deleting it again is not an error");
    TEST_EQ_INT(del(st, "never", 5), BACKEND_OK, "point: deleting a never-written key is OK");
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, NULL, 0), "point: store is empty again");

    /* Zero-length values. */
    TEST_EQ_INT(put(st, "z", 1, NULL, 0), BACKEND_OK, "point: put zero-length value (val NULL)");
    TEST_EQ_INT(put(st, "y", 1, "", 0), BACKEND_OK, "point: put zero-length value (val \"\")");
    void *got = NULL;
    size_t got_len = 99;
    int rc = ops->get(st, "z", 1, &got, &got_len, NULL, 0);
    TEST_CHECK(rc == BACKEND_OK && got != NULL && got_len == 0,
               "point: zero-length value gets a non-NULL pointer and length 0");
    if (rc == BACKEND_OK)
        free(got);
    struct kv zs[2] = {{"y", 1, "", 0}, {"z", 1, "", 0}};
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, zs, 2), "point: zero-length values iterate");
    TEST_EQ_INT(put(st, "z", 1, "now", 3), BACKEND_OK, "point: zero-length value overwritten");
    TEST_CHECK(get_is(st, "z", 1, "now", 3), "point: ... and reads back");
    TEST_EQ_INT(put(st, "z", 1, NULL, 0), BACKEND_OK, "point: overwrite back to zero length");
    TEST_CHECK(get_is(st, "z", 1, "", 0), "point: ... and reads back empty");

    /* Invalid keys. */
    char err[256] = "";
    struct backend_write w = {BACKEND_PUT, "", 0, "v", 1};
    TEST_EQ_INT(ops->apply(st, &w, 1, err, sizeof(err)), BACKEND_INVALID,
                "point: put with an empty key is BACKEND_INVALID");
    TEST_CHECK(err[0] != 0, "point: ... with a detail message");
    w.op = BACKEND_DELETE;
    TEST_EQ_INT(ops->apply(st, &w, 1, NULL, 0), BACKEND_INVALID,
                "point: delete with an empty key is BACKEND_INVALID (no err buffer)");
    void *v = NULL;
    size_t vl = 0;
    rc = ops->get(st, "", 0, &v, &vl, NULL, 0);
    TEST_CHECK(rc != BACKEND_OK, "point: get with an empty key fails");
    if (rc == BACKEND_OK)
        free(v);
    TEST_EQ_INT(ops->apply(st, NULL, 0, NULL, 0), BACKEND_OK, "point: apply of zero writes is OK");
    TEST_EQ_INT(ops->sync(st, NULL, 0), BACKEND_OK, "point: sync");
    ops->close(st);
}

/* Byte ordering, [start, end) bounds and seek. */
static void test_order_and_ranges(void)
{
    struct backend_store *st = store_open("order", BACKEND_DURABLE_NONE);
    TEST_CHECK(st != NULL, "order: open");
    if (!st)
        return;
    int ok = 1;
    for (size_t j = 0; j < NORDER; j++) {   /* a scrambled insertion order */
        size_t i = (j * 7) % NORDER;
        snprintf(order_vals[i], sizeof(order_vals[i]), "val%zu", i);
        ok &= put(st, order_keys[i].p, order_keys[i].n, order_vals[i], strlen(order_vals[i])) == 0;
    }
    TEST_CHECK(ok, "order: put 18 keys with 0x00/0xFF bytes and shared prefixes");
    ok = 1;
    for (size_t i = 0; i < NORDER; i++)
        ok &= get_is(st, order_keys[i].p, order_keys[i].n, order_vals[i], strlen(order_vals[i]));
    TEST_CHECK(ok, "order: every key reads back its own value");

    struct kv exp[NORDER];
    size_t n = order_slice(exp, 0, NORDER);
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, n),
               "order: full scan is memcmp order, shorter prefix first");
    TEST_CHECK(scan_matches(st, "", 0, NULL, 0, exp, n), "order: start \"\" (len 0) is the first key");

    /* Bounds: start inclusive, end exclusive. a=4 .. abc=9, b=10. */
    n = order_slice(exp, 4, 10);
    TEST_CHECK(scan_matches(st, "a", 1, "b", 1, exp, n), "range: [a, b) is the 'a' prefix");
    n = order_slice(exp, 4, 11);
    TEST_CHECK(scan_matches(st, "a", 1, "b\x00", 2, exp, n), "range: end b\\0 includes b");
    n = order_slice(exp, 5, 10);
    TEST_CHECK(scan_matches(st, "a\x00", 2, "b", 1, exp, n), "range: start a\\0 excludes a");
    n = order_slice(exp, 4, 5);
    TEST_CHECK(scan_matches(st, "a", 1, "a\x00", 2, exp, n), "range: [a, a\\0) is exactly a");
    n = order_slice(exp, 8, 10);
    TEST_CHECK(scan_matches(st, "aa", 2, "abd", 3, exp, n), "range: bounds between keys");
    TEST_CHECK(scan_matches(st, "a", 1, "a", 1, NULL, 0), "range: start == end is empty");
    TEST_CHECK(scan_matches(st, "aa", 2, "aa", 2, NULL, 0), "range: start == end (absent) is empty");
    TEST_CHECK(scan_matches(st, "b", 1, "a", 1, NULL, 0), "range: start > end is empty");
    TEST_CHECK(scan_matches(st, "\xff\xff\xff\x00", 4, NULL, 0, NULL, 0),
               "range: start beyond the last key is empty");
    TEST_CHECK(scan_matches(st, NULL, 0, "\x00", 1, NULL, 0), "range: end at the first key is empty");
    n = order_slice(exp, 14, NORDER);
    TEST_CHECK(scan_matches(st, "\xff", 1, NULL, 0, exp, n), "range: end NULL runs to the last key");
    n = order_slice(exp, 0, 4);
    TEST_CHECK(scan_matches(st, NULL, 0, "a", 1, exp, n), "range: start_len 0 runs from the first key");
    n = order_slice(exp, 17, NORDER);
    TEST_CHECK(scan_matches(st, "\xff\xff\xff", 3, NULL, 0, exp, n), "range: start at the last key");
    n = order_slice(exp, 14, 17);
    TEST_CHECK(scan_matches(st, "\xff", 1, "\xff\xff\xff", 3, exp, n), "range: 0xFF keys with end bound");

    /* Seek inside one cursor. */
    struct backend_iter *it = NULL;
    TEST_EQ_INT(ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0), BACKEND_OK, "seek: iter_open");
    if (it) {
        TEST_CHECK(next_is(it, "\x00", 1) && next_is(it, "\x00\x00", 2), "seek: first two entries");
        TEST_EQ_INT(ops->iter_seek(it, "ab", 2), BACKEND_OK, "seek: forward to an existing key");
        TEST_CHECK(next_is(it, "ab", 2) && next_is(it, "abc", 3), "seek: ... continues from it");
        TEST_EQ_INT(ops->iter_seek(it, "\x00\x01", 2), BACKEND_OK, "seek: backward");
        TEST_CHECK(next_is(it, "\x00\x01", 2) && next_is(it, "\x01", 1), "seek: ... continues from it");
        TEST_EQ_INT(ops->iter_seek(it, "a\x00\x01", 3), BACKEND_OK, "seek: to a gap");
        TEST_CHECK(next_is(it, "a\x01", 2), "seek: ... lands on the next greater key");
        TEST_EQ_INT(ops->iter_seek(it, "\xff\xff\xff\xff", 4), BACKEND_OK, "seek: past the last key");
        TEST_CHECK(next_is(it, NULL, 0), "seek: ... is at the end");
        TEST_EQ_INT(ops->iter_seek(it, "b", 1), BACKEND_OK, "seek: back after reaching the end");
        TEST_CHECK(next_is(it, "b", 1), "seek: ... works again");
        TEST_EQ_INT(ops->iter_seek(it, "", 0), BACKEND_OK, "seek: empty key");
        TEST_CHECK(next_is(it, "\x00", 1), "seek: ... goes to the first key");
        ops->iter_close(it);
    }
    it = NULL;
    TEST_EQ_INT(ops->iter_open(st, "a", 1, "b", 1, &it, NULL, 0), BACKEND_OK, "seek: bounded iter_open");
    if (it) {
        TEST_EQ_INT(ops->iter_seek(it, "abc", 3), BACKEND_OK, "seek: to the last key in bounds");
        TEST_CHECK(next_is(it, "abc", 3) && next_is(it, NULL, 0), "seek: ... stops at the end bound");
        TEST_EQ_INT(ops->iter_seek(it, "b", 1), BACKEND_OK, "seek: to the end bound");
        TEST_CHECK(next_is(it, NULL, 0), "seek: ... yields nothing");
        TEST_EQ_INT(ops->iter_seek(it, "\xfe", 1), BACKEND_OK, "seek: beyond the end bound");
        TEST_CHECK(next_is(it, NULL, 0), "seek: ... yields nothing (end bound holds)");
        TEST_EQ_INT(ops->iter_seek(it, "a\x00", 2), BACKEND_OK, "seek: back inside the bounds");
        TEST_CHECK(next_is(it, "a\x00", 2), "seek: ... works");
        ops->iter_close(it);
    }

    /* Two cursors at once are independent. */
    struct backend_iter *i1 = NULL, *i2 = NULL;
    ops->iter_open(st, "b", 1, NULL, 0, &i1, NULL, 0);
    ops->iter_open(st, "\xfe", 1, NULL, 0, &i2, NULL, 0);
    TEST_CHECK(i1 && i2 && next_is(i1, "b", 1) && next_is(i2, "\xfe", 1) && next_is(i1, "\x7f", 1) &&
                   next_is(i2, "\xff", 1),
               "iter: two open cursors are independent");
    if (i1)
        ops->iter_close(i1);
    if (i2)
        ops->iter_close(i2);
    ops->close(st);
}

/* apply(): several writes at once, later writes to a key win, and a batch
 * with one bad write changes nothing. */
static void test_apply(void)
{
    struct backend_store *st = store_open("apply", BACKEND_DURABLE_NONE);
    TEST_CHECK(st != NULL, "apply: open");
    if (!st)
        return;
    put(st, "gone", 4, "x", 1);
    put(st, "keep", 4, "old", 3);
    put(st, "twice-del", 9, "x", 1);
    struct backend_write w[] = {
        {BACKEND_PUT, "a", 1, "1", 1},
        {BACKEND_DELETE, "gone", 4, NULL, 0},
        {BACKEND_PUT, "same", 4, "first", 5},
        {BACKEND_PUT, "keep", 4, "new", 3},
        {BACKEND_PUT, "same", 4, "second", 6},
        {BACKEND_PUT, "put-del", 7, "x", 1},
        {BACKEND_DELETE, "put-del", 7, NULL, 0},
        {BACKEND_DELETE, "del-put", 7, NULL, 0},
        {BACKEND_PUT, "del-put", 7, "back", 4},
        {BACKEND_DELETE, "twice-del", 9, NULL, 0},
        {BACKEND_DELETE, "twice-del", 9, NULL, 0},
        {BACKEND_DELETE, "absent", 6, NULL, 0},
    };
    char err[256] = "";
    TEST_EQ_INT(ops->apply(st, w, sizeof(w) / sizeof(w[0]), err, sizeof(err)), BACKEND_OK,
                "apply: mixed puts and deletes");
    struct kv exp[] = {
        {"a", 1, "1", 1}, {"del-put", 7, "back", 4}, {"keep", 4, "new", 3}, {"same", 4, "second", 6},
    };
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, 4),
               "apply: result has later-wins semantics for repeated keys");
    TEST_CHECK(get_is(st, "same", 4, "second", 6), "apply: put, put same key -> second value");
    TEST_CHECK(get_absent(st, "put-del", 7), "apply: put then delete same key -> absent");
    TEST_CHECK(get_is(st, "del-put", 7, "back", 4), "apply: delete then put same key -> present");

    /* A batch with one invalid write must change nothing. */
    struct backend_write bad[] = {
        {BACKEND_PUT, "a", 1, "changed", 7},
        {BACKEND_DELETE, "keep", 4, NULL, 0},
        {BACKEND_PUT, "new-key", 7, "v", 1},
        {BACKEND_PUT, "", 0, "empty key", 9},
    };
    err[0] = 0;
    TEST_EQ_INT(ops->apply(st, bad, 4, err, sizeof(err)), BACKEND_INVALID,
                "apply: a batch holding an empty key is BACKEND_INVALID");
    TEST_CHECK(err[0] != 0, "apply: ... with a detail message");
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, 4), "apply: ... and nothing of it was applied");

    /* A larger batch (more than any small fixed-size fast path). */
    enum { NB = 500 };
    struct backend_write big[NB];
    char keys[NB][8];
    for (int i = 0; i < NB; i++) {
        snprintf(keys[i], sizeof(keys[i]), "b%04d", i % 400);  /* 100 keys written twice */
        big[i] = (struct backend_write){BACKEND_PUT, keys[i], 5, &keys[i][0], i < 400 ? 1 : 5};
    }
    TEST_EQ_INT(ops->apply(st, big, NB, NULL, 0), BACKEND_OK, "apply: 500 writes in one call");
    int ok = 1;
    for (int i = 0; i < 400; i++)
        ok &= get_is(st, keys[i], 5, keys[i], i < 100 ? 5 : 1);
    TEST_CHECK(ok, "apply: ... every key has its last value");
    ops->close(st);
}

/* Values of 1 MiB and the limits: 8 MiB values, 64 KiB keys. */
static void test_large(void)
{
    struct backend_store *st = store_open("large", BACKEND_DURABLE_NONE);
    TEST_CHECK(st != NULL, "large: open");
    if (!st)
        return;
    size_t mib = 1024 * 1024, max_val = 8 * mib, max_key = 64 * 1024;
    unsigned char *v = malloc(max_val);
    unsigned char *k = malloc(max_key);
    if (!v || !k) {
        TEST_CHECK(0, "large: test buffers");
        free(v);
        free(k);
        ops->close(st);
        return;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < max_val; i++) {
        x = x * 1103515245u + 12345u;
        v[i] = (unsigned char)(x >> 24);
    }
    for (size_t i = 0; i < max_key; i++)
        k[i] = (unsigned char)(i * 31 + 7);

    TEST_EQ_INT(put(st, "big", 3, v, mib), BACKEND_OK, "large: put a 1 MiB value");
    TEST_CHECK(get_is(st, "big", 3, v, mib), "large: 1 MiB value reads back exactly");
    struct kv e = {"big", 3, v, mib};
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, &e, 1), "large: 1 MiB value iterates exactly");
    TEST_EQ_INT(put(st, "big", 3, v + 1, mib - 1), BACKEND_OK, "large: overwrite with 1 MiB - 1");
    TEST_CHECK(get_is(st, "big", 3, v + 1, mib - 1), "large: ... reads back");
    TEST_EQ_INT(put(st, "max", 3, v, max_val), BACKEND_OK, "large: put an 8 MiB value (the limit)");
    TEST_CHECK(get_is(st, "max", 3, v, max_val), "large: 8 MiB value reads back exactly");
    TEST_EQ_INT(put(st, k, max_key, "kv", 2), BACKEND_OK, "large: put a 64 KiB key (the limit)");
    TEST_CHECK(get_is(st, k, max_key, "kv", 2), "large: 64 KiB key reads back");
    TEST_CHECK(get_absent(st, k, max_key - 1), "large: its 64 KiB - 1 prefix is absent");
    struct kv ek = {k, max_key, "kv", 2};
    TEST_CHECK(scan_matches(st, k, max_key, k, max_key, NULL, 0) &&
                   scan_matches(st, k, max_key - 1, "\x08", 1, &ek, 1),
               "large: 64 KiB key as a range bound");
    TEST_EQ_INT(del(st, "max", 3), BACKEND_OK, "large: delete the 8 MiB value");
    TEST_CHECK(get_absent(st, "max", 3), "large: ... is gone");
    free(v);
    free(k);
    ops->close(st);
}

/* ---- many random keys against a sorted reference ---- */

struct ref_op {
    unsigned char *k;
    size_t kl;
    unsigned char *v;
    size_t vl;
    size_t seq;
    int is_del;
};

static uint64_t rng_state = 0x243F6A8885A308D3ull;

/* xorshift64: deterministic pseudo-random numbers for reproducible runs. */
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

/* Orders reference ops by key, then by sequence number. */
static int ref_cmp(const void *a, const void *b)
{
    const struct ref_op *x = a, *y = b;
    int c = key_cmp(x->k, x->kl, y->k, y->kl);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A random key over a small alphabet rich in 0x00 and 0xFF, so that shared
 * prefixes and edge bytes are common. */
static size_t random_key(unsigned char *k)
{
    static const unsigned char alpha[] = {0x00, 0x01, 'a', 'b', 0x7f, 0x80, 0xfe, 0xff};
    size_t len = (rnd() % 8 == 0) ? 1 + rnd() % 40 : 1 + rnd() % 8;
    for (size_t i = 0; i < len; i++)
        k[i] = (rnd() % 4 == 0) ? (unsigned char)rnd() : alpha[rnd() % 8];
    return len;
}

/* Index of the first live entry with key >= k in the sorted live array. */
static size_t lower_bound(const struct kv *live, size_t n, const void *k, size_t kl)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(live[mid].k, live[mid].kl, k, kl) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* 100,000 random writes (puts, overwrites, deletes) in batches, checked by
 * full scan, point gets and random ranges against a sorted reference. */
static void test_many(void)
{
    enum { NOPS = 100000 };
    struct backend_store *st = store_open("many", BACKEND_DURABLE_BATCH);
    TEST_CHECK(st != NULL, "many: open (batch durability)");
    if (!st)
        return;
    struct ref_op *ref = calloc(NOPS, sizeof(*ref));
    struct backend_write *w = calloc(256, sizeof(*w));
    if (!ref || !w) {
        TEST_CHECK(0, "many: test buffers");
        free(ref);
        free(w);
        ops->close(st);
        return;
    }
    int ok = 1, sync_ok = 1;
    size_t i = 0, batches = 0;
    while (i < NOPS) {
        size_t nb = 1 + rnd() % 200;
        if (nb > NOPS - i)
            nb = NOPS - i;
        for (size_t j = 0; j < nb; j++, i++) {
            struct ref_op *o = &ref[i];
            unsigned char kb[64];
            o->seq = i;
            o->is_del = rnd() % 7 == 0;
            if (i > 0 && rnd() % 8 == 0) {   /* reuse an earlier key */
                struct ref_op *old = &ref[rnd() % i];
                o->kl = old->kl;
                memcpy(kb, old->k, old->kl);
            } else {
                o->kl = random_key(kb);
            }
            o->k = malloc(o->kl);
            memcpy(o->k, kb, o->kl);
            if (!o->is_del) {
                o->vl = rnd() % 33;
                o->v = malloc(o->vl ? o->vl : 1);
                for (size_t b = 0; b < o->vl; b++)
                    o->v[b] = (unsigned char)rnd();
            }
            w[j] = (struct backend_write){o->is_del ? BACKEND_DELETE : BACKEND_PUT, o->k, o->kl,
                                          o->v, o->vl};
        }
        char err[256] = "";
        if (ops->apply(st, w, nb, err, sizeof(err)) != BACKEND_OK) {
            if (ok)
                printf("# apply failed: %s\n", err);
            ok = 0;
        }
        if (++batches % 16 == 0)
            sync_ok &= ops->sync(st, NULL, 0) == BACKEND_OK;
    }
    TEST_CHECK(ok, "many: 100,000 random writes applied in batches of 1..200");
    TEST_CHECK(sync_ok, "many: periodic sync() succeeds");

    /* Reference: last write per key wins; deleted keys drop out. */
    struct ref_op *sorted = malloc(NOPS * sizeof(*sorted));
    struct kv *live = malloc(NOPS * sizeof(*live));
    size_t nlive = 0;
    memcpy(sorted, ref, NOPS * sizeof(*sorted));
    qsort(sorted, NOPS, sizeof(*sorted), ref_cmp);
    size_t ndeleted = 0;
    for (size_t a = 0; a < NOPS; a++) {
        if (a + 1 < NOPS && key_cmp(sorted[a].k, sorted[a].kl, sorted[a + 1].k, sorted[a + 1].kl) == 0)
            continue;
        if (sorted[a].is_del) {
            sorted[ndeleted++] = sorted[a];   /* reuse the array for deleted keys */
            continue;
        }
        live[nlive++] = (struct kv){sorted[a].k, sorted[a].kl, sorted[a].v, sorted[a].vl};
    }
    printf("# %zu live keys, %zu deleted keys\n", nlive, ndeleted);
    TEST_CHECK(nlive > 50000 && ndeleted > 1000, "many: the workload has many live and deleted keys");
    TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, live, nlive), "many: full scan equals the reference");

    ok = 1;
    for (int t = 0; t < 3000 && ok; t++) {
        const struct kv *e = &live[rnd() % nlive];
        ok = get_is(st, e->k, e->kl, e->v, e->vl);
    }
    TEST_CHECK(ok, "many: 3000 random gets of live keys return their last value");
    ok = 1;
    for (size_t t = 0; t < ndeleted && t < 3000 && ok; t++)
        ok = get_absent(st, sorted[t].k, sorted[t].kl);
    TEST_CHECK(ok, "many: deleted keys are NOTFOUND");

    ok = 1;
    for (int t = 0; t < 300 && ok; t++) {
        unsigned char s[64], e[64];
        size_t sl = random_key(s), el = random_key(e);
        if (key_cmp(s, sl, e, el) > 0) {
            unsigned char tmp[64];
            size_t tl = sl;
            memcpy(tmp, s, sl);
            memcpy(s, e, el);
            sl = el;
            memcpy(e, tmp, tl);
            el = tl;
        }
        size_t lo = lower_bound(live, nlive, s, sl), hi = lower_bound(live, nlive, e, el);
        int open_end = t % 10 == 0;
        if (open_end)
            hi = nlive;
        ok = scan_matches(st, s, sl, open_end ? NULL : e, el, live + lo, hi - lo);
    }
    TEST_CHECK(ok, "many: 300 random [start, end) ranges equal the reference");

    if (!is_memory) {
        ops->close(st);
        st = store_open("many", BACKEND_DURABLE_NONE);
        TEST_CHECK(st != NULL, "many: reopen");
        if (st) {
            TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, live, nlive),
                       "many: after reopen the full scan still equals the reference");
            ok = 1;
            for (size_t t = 0; t < ndeleted && t < 1000 && ok; t++)
                ok = get_absent(st, sorted[t].k, sorted[t].kl);
            TEST_CHECK(ok, "many: after reopen deleted keys stay deleted");
        }
    }
    if (st)
        ops->close(st);
    for (size_t a = 0; a < NOPS; a++) {
        free(ref[a].k);
        free(ref[a].v);
    }
    free(ref);
    free(sorted);
    free(live);
    free(w);
}

/* Two stores (different data dirs) do not share data. */
static void test_two_stores(void)
{
    struct backend_store *a = store_open("two-a", BACKEND_DURABLE_NONE);
    struct backend_store *b = store_open("two-b", BACKEND_DURABLE_NONE);
    TEST_CHECK(a && b, "two stores: both open");
    if (a && b) {
        put(a, "k", 1, "in a", 4);
        put(b, "k", 1, "in b", 4);
        put(a, "only-a", 6, "x", 1);
        TEST_CHECK(get_is(a, "k", 1, "in a", 4) && get_is(b, "k", 1, "in b", 4) &&
                       get_absent(b, "only-a", 6),
                   "two stores: writes to one are not seen by the other");
    }
    if (a)
        ops->close(a);
    if (b)
        ops->close(b);
}

/* Durable backends: data survives close and reopen in every durability
 * mode (close() makes every applied write durable). */
static void test_reopen(void)
{
    static const enum backend_durability modes[] = {
        BACKEND_DURABLE_SYNC, BACKEND_DURABLE_BATCH, BACKEND_DURABLE_NONE};
    static const char *mode_names[] = {"sync", "batch", "none"};
    size_t big_len = 1024 * 1024 + 3;
    unsigned char *big = malloc(big_len);
    if (!big) {
        TEST_CHECK(0, "reopen: test buffer");
        return;
    }
    for (size_t i = 0; i < big_len; i++)
        big[i] = (unsigned char)(i * 131 + (i >> 9));

    for (int m = 0; m < 3; m++) {
        char sec[32], what[128];
        snprintf(sec, sizeof(sec), "reopen-%s", mode_names[m]);
        struct backend_store *st = store_open(sec, modes[m]);
        snprintf(what, sizeof(what), "reopen (%s): open", mode_names[m]);
        TEST_CHECK(st != NULL, what);
        if (!st)
            continue;
        put(st, "\x00z", 2, "zero", 4);
        put(st, "a", 1, "first", 5);
        put(st, "a", 1, "second", 6);
        put(st, "b", 1, "", 0);
        put(st, "c", 1, "deleted", 7);
        del(st, "c", 1);
        put(st, "big", 3, big, big_len);
        struct backend_write w[] = {
            {BACKEND_PUT, "\xff\xff", 2, "ff", 2},
            {BACKEND_DELETE, "a", 1, NULL, 0},
            {BACKEND_PUT, "a", 1, "third", 5},
        };
        ops->apply(st, w, 3, NULL, 0);
        if (modes[m] == BACKEND_DURABLE_BATCH) {
            snprintf(what, sizeof(what), "reopen (%s): sync", mode_names[m]);
            TEST_EQ_INT(ops->sync(st, NULL, 0), BACKEND_OK, what);
        }
        ops->close(st);

        for (int round = 0; round < 2; round++) {
            st = store_open(sec, modes[m]);
            snprintf(what, sizeof(what), "reopen (%s): reopen %d", mode_names[m], round + 1);
            TEST_CHECK(st != NULL, what);
            if (!st)
                break;
            struct kv exp[] = {
                {"\x00z", 2, "zero", 4}, {"a", 1, "third", 5}, {"b", 1, "", 0},
                {"big", 3, big, big_len}, {"\xff\xff", 2, "ff", 2},
            };
            snprintf(what, sizeof(what), "reopen (%s): every write survived reopen %d", mode_names[m],
                     round + 1);
            TEST_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, 5), what);
            snprintf(what, sizeof(what), "reopen (%s): deleted key stays deleted (%d)", mode_names[m],
                     round + 1);
            TEST_CHECK(get_absent(st, "c", 1), what);
            if (round == 0) {  /* change it once more; the second reopen must see that */
                put(st, "d", 1, "later", 5);
                del(st, "d", 1);
            }
            ops->close(st);
        }
    }
    free(big);
}

/* Memory backend only: its documented promise that a cursor left open
 * across writes keeps working (see backends/memory.c). Run under ASan this
 * catches any read of a freed entry. */
static void test_memory_cursor_across_writes(void)
{
    struct backend_store *st = store_open("memory-cursor", BACKEND_DURABLE_NONE);
    TEST_CHECK(st != NULL, "memory cursor: open");
    if (!st)
        return;
    for (char c = 'a'; c <= 'h'; c++)
        put(st, &c, 1, &c, 1);
    struct backend_iter *it = NULL;
    ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0);
    TEST_CHECK(it && next_is(it, "a", 1), "memory cursor: first entry");
    if (!it) {
        ops->close(st);
        return;
    }
    del(st, "b", 1);                    /* the entry it would return next */
    put(st, "c", 1, "C-new", 5);        /* overwrite the one after it */
    del(st, "e", 1);
    const void *k, *v;
    size_t kl, vl;
    int rc = ops->iter_next(it, &k, &kl, &v, &vl);
    TEST_CHECK(rc == 1 && kl == 1 && memcmp(k, "c", 1) == 0 && vl == 5 && memcmp(v, "C-new", 5) == 0,
               "memory cursor: skips the deleted next entry, sees the overwritten value");
    TEST_CHECK(next_is(it, "d", 1) && next_is(it, "f", 1), "memory cursor: continues in order");
    ops->close(st);                     /* with the cursor still open */
    TEST_CHECK(next_is(it, NULL, 0), "memory cursor: after store close the cursor is at its end");
    ops->iter_close(it);
}

/* Memory backend only: writes beyond the interface limits (64 KiB keys,
 * 8 MiB values) are refused with BACKEND_INVALID and change nothing. */
static void test_memory_limits(void)
{
    struct backend_store *st = store_open("memory-limits", BACKEND_DURABLE_NONE);
    TEST_CHECK(st != NULL, "memory limits: open");
    if (!st)
        return;
    size_t kl = 64 * 1024 + 1, vl = 8 * 1024 * 1024 + 1;
    unsigned char *buf = calloc(1, vl);
    if (buf) {
        struct backend_write w[2] = {{BACKEND_PUT, "ok", 2, "v", 1}, {BACKEND_PUT, buf, kl, "v", 1}};
        TEST_EQ_INT(ops->apply(st, w, 2, NULL, 0), BACKEND_INVALID, "memory limits: 64 KiB + 1 key");
        w[1] = (struct backend_write){BACKEND_PUT, "k", 1, buf, vl};
        TEST_EQ_INT(ops->apply(st, w, 2, NULL, 0), BACKEND_INVALID, "memory limits: 8 MiB + 1 value");
        TEST_CHECK(get_absent(st, "ok", 2), "memory limits: ... nothing was applied");
    }
    free(buf);
    ops->close(st);
}

/* Removes one entry of the temporary data directory tree. */
static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "memory";
    char err[512] = "";
    ops = backend_lookup(name, err, sizeof(err));
    if (!ops) {
        printf("not ok 1 - backend_lookup(\"%s\"): %s\n1..1\n", name, err);
        return 1;
    }
    is_memory = strcmp(ops->name, "memory") == 0;
    int own_dir = argc <= 2;
    if (own_dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(base_dir, sizeof(base_dir), "%s/tabled-backend-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(base_dir)) {
            printf("not ok 1 - mkdtemp: %s\n1..1\n", strerror(errno));
            return 1;
        }
    } else {
        snprintf(base_dir, sizeof(base_dir), "%s", argv[2]);
    }
    printf("# backend %s (%s), data under %s\n", ops->name, name, base_dir);

    test_registry();
    test_point_ops();
    test_order_and_ranges();
    test_apply();
    test_large();
    test_two_stores();
    test_many();
    if (!is_memory)
        test_reopen();
    else {
        test_memory_cursor_across_writes();
        test_memory_limits();
    }

    if (own_dir)
        nftw(base_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return test_done();
}
