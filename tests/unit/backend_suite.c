/* backend_suite.c - the backend conformance suite: the checks every
 * backend passes, run against one backend by bt_run_backend().
 *
 * Two programs compile it: tests/unit/test_backend (make check: every
 * built-in backend and the plug-ins make check builds; test_backend.c)
 * and tabled-backend-check (installed: one plug-in given by path, for
 * plug-in authors; backend_check.c). Each backend run gets a directory
 * (given, or a fresh mkdtemp() one, removed at the end) and every section
 * opens its own store in a subdirectory. A backend whose data lives
 * outside the directory (a database server, like postgres) is run with a
 * section command (bt_section_cmd, test_backend -s CMD): before a section
 * first opens its store, "CMD SECTION" runs (sh -c) and prepares an empty
 * store for that section alone; each line it prints is one more option
 * for that section's opens (e.g. conninfo=... naming a fresh database).
 * Such a store is shared by design (several front ends open it at once)
 * and never written through local files, so the exclusive-lock and
 * disk-full checks are not run; reopen and kill -9 are.
 *
 * The durable backends also run test_backend_durable.c (reopen, kill -9,
 * disk full, flat-file recovery); interface version 2 and deferred
 * completion are in test_backend_v2.c. Check names start with the
 * backend's label: "[leveldb] point: get hit". */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/registry.h"
#include "tests/unit/tap.h"
#include "tests/unit/backend_suite.h"

/* A key or value given as a C literal that may hold 0x00 bytes. */
struct tk {
    const char *p;
    size_t n;
};
#define TK(s) {(s), sizeof(s) - 1}

const struct backend_ops *ops;
char base_dir[4096];
const char *const *bt_params;
int bt_durable;
const char *bt_backend_name;
const char *bt_section_cmd;
static char bt_label[64];

void bt_set_label(const char *label)
{
    snprintf(bt_label, sizeof(bt_label), "%s", label);
}

void bt_totals(int *n, int *failed)
{
    *n = tap_n;
    *failed = tap_failed;
}

int bt_check(int ok, const char *file, int line, const char *what)
{
    char name[600];
    snprintf(name, sizeof(name), "[%s] %s", bt_label, what);
    return tap_check(ok, file, line, name);
}

/* ---- small helpers over the vtable ---- */

void section_dir(char *out, size_t cap, const char *section)
{
    snprintf(out, cap, "%s/%s", base_dir, section);
}

/* The options "CMD SECTION" printed for one section (-s CMD); an empty
 * list without -s. The command runs once per section: a section opened
 * again (reopen checks) gets the same store. NULL when the command failed
 * (a failed check says so). */
const char *const *section_params(const char *section)
{
    static struct {
        char name[64];
        char *params[9];
    } cache[64];
    static size_t ncache;
    static const char *const none[] = {NULL};
    if (!bt_section_cmd)
        return none;
    for (size_t i = 0; i < ncache; i++)
        if (!strcmp(cache[i].name, section))
            return (const char *const *)cache[i].params;
    char cmd[4400], line[4096], what[200];
    snprintf(cmd, sizeof(cmd), "%s '%s'", bt_section_cmd, section);
    fflush(stdout);
    FILE *f = ncache < 64 ? popen(cmd, "r") : NULL;
    if (!f) {
        snprintf(what, sizeof(what), "section %s: the -s command runs", section);
        BT_CHECK(0, what);
        return NULL;
    }
    size_t n = 0;
    char **params = cache[ncache].params;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] && n < 8)
            params[n++] = strdup(line);
    }
    params[n] = NULL;
    int status = pclose(f);
    if (status != 0) {
        snprintf(what, sizeof(what), "section %s: the -s command succeeds", section);
        BT_CHECK(0, what);
        printf("# %s: status %d\n", cmd, status);
        for (size_t i = 0; i < n; i++)
            free(params[i]);
        return NULL;
    }
    snprintf(cache[ncache++].name, sizeof(cache[0].name), "%s", section);
    return (const char *const *)params;
}

struct backend_store *store_open_with(const char *section, enum backend_durability d,
                                      const char *const *extra, int *rc_out, char *err,
                                      size_t errlen)
{
    char dir[4200];
    section_dir(dir, sizeof(dir), section);
    const char *params[32];
    size_t n = 0;
    const char *const *sp = section_params(section);
    if (!sp) {
        if (rc_out)
            *rc_out = BACKEND_IOERR;
        return NULL;
    }
    for (const char *const *p = sp; *p && n < 8; p++)
        params[n++] = *p;
    for (const char *const *p = bt_params; p && *p && n < 24; p++)
        params[n++] = *p;
    for (const char *const *p = extra; p && *p && n < 31; p++)
        params[n++] = *p;
    params[n] = NULL;
    struct backend_options opt = {.data_dir = dir, .durability = d, .params = params,
                                  .host = bta_host()};
    struct backend_store *st = NULL;
    char local[512] = "";
    if (!err) {
        err = local;
        errlen = sizeof(local);
    }
    int rc = ops->open(&opt, &st, err, errlen);
    if (rc_out)
        *rc_out = rc;
    if (rc != BACKEND_OK || !st) {
        if (err == local)
            printf("# open %s failed: %d %s\n", dir, rc, err);
        return NULL;
    }
    return st;
}

struct backend_store *store_open(const char *section, enum backend_durability d)
{
    return store_open_with(section, d, NULL, NULL, NULL, 0);
}

int bt_get(struct backend_store *st, const void *k, size_t kl, const void **v, size_t *vl,
           char *err, size_t errlen)
{
    return bta_get(ops, st, k, kl, v, vl, err, errlen);
}

int bt_apply(struct backend_store *st, const struct backend_write *w, size_t n, char *err,
             size_t errlen)
{
    return bta_apply(ops, st, w, NULL, n, 0, NULL, err, errlen);
}

int bt_next(struct backend_iter *it, const void **k, size_t *kl, const void **v, size_t *vl)
{
    return bta_next(ops, it, k, kl, v, vl);
}

/* One put through apply(). */
int put(struct backend_store *st, const void *k, size_t kl, const void *v, size_t vl)
{
    struct backend_write w = {BACKEND_PUT, k, kl, v, vl};
    char err[256] = "";
    int rc = bt_apply(st, &w, 1, err, sizeof(err));
    if (rc != BACKEND_OK)
        printf("# put failed: %d %s\n", rc, err);
    return rc;
}

/* One delete through apply(). */
int del(struct backend_store *st, const void *k, size_t kl)
{
    struct backend_write w = {BACKEND_DELETE, k, kl, NULL, 0};
    char err[256] = "";
    int rc = bt_apply(st, &w, 1, err, sizeof(err));
    if (rc != BACKEND_OK)
        printf("# delete failed: %d %s\n", rc, err);
    return rc;
}

/* 1 when get(k) returns exactly the value v. */
int get_is(struct backend_store *st, const void *k, size_t kl, const void *v, size_t vl)
{
    const void *got = NULL;
    size_t got_len = 0;
    char err[256] = "";
    int rc = bt_get(st, k, kl, &got, &got_len, err, sizeof(err));
    int ok = rc == BACKEND_OK && got != NULL && got_len == vl && (vl == 0 || memcmp(got, v, vl) == 0);
    if (!ok)
        printf("# get: rc %d, len %zu (want %zu) %s\n", rc, got_len, vl, err);
    return ok;
}

/* 1 when get(k) says BACKEND_NOTFOUND. */
int get_absent(struct backend_store *st, const void *k, size_t kl)
{
    const void *got = NULL;
    size_t got_len = 0;
    return bt_get(st, k, kl, &got, &got_len, NULL, 0) == BACKEND_NOTFOUND;
}

/* Byte order of the keyspace, as the reference for the checks. */
int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Prints a key as hex for a diagnostic line. */
void print_key(const char *label, const void *k, size_t kl)
{
    printf("#   %s (%zu bytes):", label, kl);
    for (size_t i = 0; i < kl && i < 24; i++)
        printf(" %02x", ((const unsigned char *)k)[i]);
    printf("%s\n", kl > 24 ? " ..." : "");
}

/* Drains an open cursor and compares what it returns, in order, with
 * exp[0..n). Returns 1 on an exact match (keys and values). */
int iter_matches(struct backend_iter *it, const struct kv *exp, size_t n)
{
    size_t i = 0;
    for (;;) {
        const void *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        int rc = bt_next(it, &k, &kl, &v, &vl);
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
int scan_matches(struct backend_store *st, const void *start, size_t sl, const void *end,
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

long scan_count(struct backend_store *st)
{
    struct backend_iter *it = NULL;
    if (ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0) != BACKEND_OK)
        return -1;
    long n = 0;
    int rc;
    while ((rc = bt_next(it, NULL, NULL, NULL, NULL)) == 1)
        n++;
    ops->iter_close(it);
    return rc < 0 ? -1 : n;
}

/* 1 when the next entry of the cursor has key k (0/NULL k: at the end). */
static int next_is(struct backend_iter *it, const void *k, size_t kl)
{
    const void *gk = NULL, *gv = NULL;
    size_t gkl = 0, gvl = 0;
    int rc = bt_next(it, &gk, &gkl, &gv, &gvl);
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

/* Point operations: hit, miss, overwrite, delete, zero-length values,
 * invalid keys. */
static void test_point_ops(void)
{
    struct backend_store *st = store_open("point", BACKEND_DURABLE_NONE);
    BT_CHECK(st != NULL, "point: open");
    if (!st)
        return;
    BT_CHECK(get_absent(st, "k", 1), "point: get on an empty store is NOTFOUND");
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, NULL, 0), "point: empty store scans empty");

    BT_EQ_INT(put(st, "k", 1, "one", 3), BACKEND_OK, "point: put");
    BT_CHECK(get_is(st, "k", 1, "one", 3), "point: get hit");
    BT_CHECK(get_absent(st, "j", 1), "point: get miss (other key)");
    BT_CHECK(get_absent(st, "k\x00", 2), "point: get miss (key plus 0x00)");
    BT_CHECK(get_absent(st, "kk", 2), "point: get miss (longer key)");

    BT_EQ_INT(put(st, "k", 1, "a longer value", 14), BACKEND_OK, "point: overwrite longer");
    BT_CHECK(get_is(st, "k", 1, "a longer value", 14), "point: overwrite longer is visible");
    BT_EQ_INT(put(st, "k", 1, "s", 1), BACKEND_OK, "point: overwrite shorter");
    BT_CHECK(get_is(st, "k", 1, "s", 1), "point: overwrite shorter is visible");
    struct kv one = {"k", 1, "s", 1};
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, &one, 1), "point: overwrite leaves one entry");

    BT_EQ_INT(del(st, "k", 1), BACKEND_OK, "point: delete");
    BT_CHECK(get_absent(st, "k", 1), "point: deleted key is NOTFOUND");
    BT_EQ_INT(del(st, "k", 1), BACKEND_OK, "point: deleting it again is not an error");
    BT_EQ_INT(del(st, "never", 5), BACKEND_OK, "point: deleting a never-written key is OK");
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, NULL, 0), "point: store is empty again");

    /* Zero-length values. */
    BT_EQ_INT(put(st, "z", 1, NULL, 0), BACKEND_OK, "point: put zero-length value (val NULL)");
    BT_EQ_INT(put(st, "y", 1, "", 0), BACKEND_OK, "point: put zero-length value (val \"\")");
    const void *got = NULL;
    size_t got_len = 99;
    int rc = bt_get(st, "z", 1, &got, &got_len, NULL, 0);
    BT_CHECK(rc == BACKEND_OK && got != NULL && got_len == 0,
             "point: zero-length value gets a non-NULL pointer and length 0");
    struct kv zs[2] = {{"y", 1, "", 0}, {"z", 1, "", 0}};
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, zs, 2), "point: zero-length values iterate");
    BT_EQ_INT(put(st, "z", 1, "now", 3), BACKEND_OK, "point: zero-length value overwritten");
    BT_CHECK(get_is(st, "z", 1, "now", 3), "point: ... and reads back");
    BT_EQ_INT(put(st, "z", 1, NULL, 0), BACKEND_OK, "point: overwrite back to zero length");
    BT_CHECK(get_is(st, "z", 1, "", 0), "point: ... and reads back empty");

    /* Invalid keys. */
    char err[256] = "";
    struct backend_write w = {BACKEND_PUT, "", 0, "v", 1};
    BT_EQ_INT(bt_apply(st, &w, 1, err, sizeof(err)), BACKEND_INVALID,
              "point: put with an empty key is BACKEND_INVALID");
    BT_CHECK(err[0] != 0, "point: ... with a detail message");
    w.op = BACKEND_DELETE;
    BT_EQ_INT(bt_apply(st, &w, 1, NULL, 0), BACKEND_INVALID,
              "point: delete with an empty key is BACKEND_INVALID (no err buffer)");
    const void *v = NULL;
    size_t vl = 0;
    rc = bt_get(st, "", 0, &v, &vl, NULL, 0);
    BT_CHECK(rc != BACKEND_OK, "point: get with an empty key fails");
    BT_EQ_INT(bt_apply(st, NULL, 0, NULL, 0), BACKEND_OK, "point: apply of zero writes is OK");
    BT_EQ_INT(bta_sync(ops, st, NULL, 0), BACKEND_OK, "point: sync");
    ops->close(st);
}

/* Byte ordering, [start, end) bounds and seek. */
static void test_order_and_ranges(void)
{
    struct backend_store *st = store_open("order", BACKEND_DURABLE_NONE);
    BT_CHECK(st != NULL, "order: open");
    if (!st)
        return;
    int ok = 1;
    for (size_t j = 0; j < NORDER; j++) {   /* a scrambled insertion order */
        size_t i = (j * 7) % NORDER;
        snprintf(order_vals[i], sizeof(order_vals[i]), "val%zu", i);
        ok &= put(st, order_keys[i].p, order_keys[i].n, order_vals[i], strlen(order_vals[i])) == 0;
    }
    BT_CHECK(ok, "order: put 18 keys with 0x00/0xFF bytes and shared prefixes");
    ok = 1;
    for (size_t i = 0; i < NORDER; i++)
        ok &= get_is(st, order_keys[i].p, order_keys[i].n, order_vals[i], strlen(order_vals[i]));
    BT_CHECK(ok, "order: every key reads back its own value");

    struct kv exp[NORDER];
    size_t n = order_slice(exp, 0, NORDER);
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, n),
             "order: full scan is memcmp order, shorter prefix first");
    BT_CHECK(scan_matches(st, "", 0, NULL, 0, exp, n), "order: start \"\" (len 0) is the first key");

    /* Bounds: start inclusive, end exclusive. a=4 .. abc=9, b=10. */
    n = order_slice(exp, 4, 10);
    BT_CHECK(scan_matches(st, "a", 1, "b", 1, exp, n), "range: [a, b) is the 'a' prefix");
    n = order_slice(exp, 4, 11);
    BT_CHECK(scan_matches(st, "a", 1, "b\x00", 2, exp, n), "range: end b\\0 includes b");
    n = order_slice(exp, 5, 10);
    BT_CHECK(scan_matches(st, "a\x00", 2, "b", 1, exp, n), "range: start a\\0 excludes a");
    n = order_slice(exp, 4, 5);
    BT_CHECK(scan_matches(st, "a", 1, "a\x00", 2, exp, n), "range: [a, a\\0) is exactly a");
    n = order_slice(exp, 8, 10);
    BT_CHECK(scan_matches(st, "aa", 2, "abd", 3, exp, n), "range: bounds between keys");
    BT_CHECK(scan_matches(st, "a", 1, "a", 1, NULL, 0), "range: start == end is empty");
    BT_CHECK(scan_matches(st, "aa", 2, "aa", 2, NULL, 0), "range: start == end (absent) is empty");
    BT_CHECK(scan_matches(st, "b", 1, "a", 1, NULL, 0), "range: start > end is empty");
    BT_CHECK(scan_matches(st, "\xff\xff\xff\x00", 4, NULL, 0, NULL, 0),
             "range: start beyond the last key is empty");
    BT_CHECK(scan_matches(st, NULL, 0, "\x00", 1, NULL, 0), "range: end at the first key is empty");
    n = order_slice(exp, 14, NORDER);
    BT_CHECK(scan_matches(st, "\xff", 1, NULL, 0, exp, n), "range: end NULL runs to the last key");
    n = order_slice(exp, 0, 4);
    BT_CHECK(scan_matches(st, NULL, 0, "a", 1, exp, n), "range: start_len 0 runs from the first key");
    n = order_slice(exp, 17, NORDER);
    BT_CHECK(scan_matches(st, "\xff\xff\xff", 3, NULL, 0, exp, n), "range: start at the last key");
    n = order_slice(exp, 14, 17);
    BT_CHECK(scan_matches(st, "\xff", 1, "\xff\xff\xff", 3, exp, n), "range: 0xFF keys with end bound");

    /* Seek inside one cursor. */
    struct backend_iter *it = NULL;
    BT_EQ_INT(ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0), BACKEND_OK, "seek: iter_open");
    if (it) {
        BT_CHECK(next_is(it, "\x00", 1) && next_is(it, "\x00\x00", 2), "seek: first two entries");
        BT_EQ_INT(ops->iter_seek(it, "ab", 2), BACKEND_OK, "seek: forward to an existing key");
        BT_CHECK(next_is(it, "ab", 2) && next_is(it, "abc", 3), "seek: ... continues from it");
        BT_EQ_INT(ops->iter_seek(it, "\x00\x01", 2), BACKEND_OK, "seek: backward");
        BT_CHECK(next_is(it, "\x00\x01", 2) && next_is(it, "\x01", 1), "seek: ... continues from it");
        BT_EQ_INT(ops->iter_seek(it, "a\x00\x01", 3), BACKEND_OK, "seek: to a gap");
        BT_CHECK(next_is(it, "a\x01", 2), "seek: ... lands on the next greater key");
        BT_EQ_INT(ops->iter_seek(it, "\xff\xff\xff\xff", 4), BACKEND_OK, "seek: past the last key");
        BT_CHECK(next_is(it, NULL, 0), "seek: ... is at the end");
        BT_EQ_INT(ops->iter_seek(it, "b", 1), BACKEND_OK, "seek: back after reaching the end");
        BT_CHECK(next_is(it, "b", 1), "seek: ... works again");
        BT_EQ_INT(ops->iter_seek(it, "", 0), BACKEND_OK, "seek: empty key");
        BT_CHECK(next_is(it, "\x00", 1), "seek: ... goes to the first key");
        ops->iter_close(it);
    }
    it = NULL;
    BT_EQ_INT(ops->iter_open(st, "a", 1, "b", 1, &it, NULL, 0), BACKEND_OK, "seek: bounded iter_open");
    if (it) {
        BT_EQ_INT(ops->iter_seek(it, "abc", 3), BACKEND_OK, "seek: to the last key in bounds");
        BT_CHECK(next_is(it, "abc", 3) && next_is(it, NULL, 0), "seek: ... stops at the end bound");
        BT_EQ_INT(ops->iter_seek(it, "b", 1), BACKEND_OK, "seek: to the end bound");
        BT_CHECK(next_is(it, NULL, 0), "seek: ... yields nothing");
        BT_EQ_INT(ops->iter_seek(it, "\xfe", 1), BACKEND_OK, "seek: beyond the end bound");
        BT_CHECK(next_is(it, NULL, 0), "seek: ... yields nothing (end bound holds)");
        BT_EQ_INT(ops->iter_seek(it, "a\x00", 2), BACKEND_OK, "seek: back inside the bounds");
        BT_CHECK(next_is(it, "a\x00", 2), "seek: ... works");
        ops->iter_close(it);
    }

    /* Two cursors at once are independent. */
    struct backend_iter *i1 = NULL, *i2 = NULL;
    ops->iter_open(st, "b", 1, NULL, 0, &i1, NULL, 0);
    ops->iter_open(st, "\xfe", 1, NULL, 0, &i2, NULL, 0);
    BT_CHECK(i1 && i2 && next_is(i1, "b", 1) && next_is(i2, "\xfe", 1) && next_is(i1, "\x7f", 1) &&
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
    BT_CHECK(st != NULL, "apply: open");
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
    BT_EQ_INT(bt_apply(st, w, sizeof(w) / sizeof(w[0]), err, sizeof(err)), BACKEND_OK,
              "apply: mixed puts and deletes");
    struct kv exp[] = {
        {"a", 1, "1", 1}, {"del-put", 7, "back", 4}, {"keep", 4, "new", 3}, {"same", 4, "second", 6},
    };
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, 4),
             "apply: result has later-wins semantics for repeated keys");
    BT_CHECK(get_is(st, "same", 4, "second", 6), "apply: put, put same key -> second value");
    BT_CHECK(get_absent(st, "put-del", 7), "apply: put then delete same key -> absent");
    BT_CHECK(get_is(st, "del-put", 7, "back", 4), "apply: delete then put same key -> present");

    /* A batch with one invalid write must change nothing. */
    struct backend_write bad[] = {
        {BACKEND_PUT, "a", 1, "changed", 7},
        {BACKEND_DELETE, "keep", 4, NULL, 0},
        {BACKEND_PUT, "new-key", 7, "v", 1},
        {BACKEND_PUT, "", 0, "empty key", 9},
    };
    err[0] = 0;
    BT_EQ_INT(bt_apply(st, bad, 4, err, sizeof(err)), BACKEND_INVALID,
              "apply: a batch holding an empty key is BACKEND_INVALID");
    BT_CHECK(err[0] != 0, "apply: ... with a detail message");
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, 4), "apply: ... and nothing of it was applied");

    /* A larger batch (more than any small fixed-size fast path). */
    enum { NB = 500 };
    struct backend_write big[NB];
    char keys[NB][8];
    for (int i = 0; i < NB; i++) {
        snprintf(keys[i], sizeof(keys[i]), "b%04d", i % 400);  /* 100 keys written twice */
        big[i] = (struct backend_write){BACKEND_PUT, keys[i], 5, &keys[i][0], i < 400 ? 1 : 5};
    }
    BT_EQ_INT(bt_apply(st, big, NB, NULL, 0), BACKEND_OK, "apply: 500 writes in one call");
    int ok = 1;
    for (int i = 0; i < 400; i++)
        ok &= get_is(st, keys[i], 5, keys[i], i < 100 ? 5 : 1);
    BT_CHECK(ok, "apply: ... every key has its last value");
    ops->close(st);
}

/* Values of 1 MiB and the limits: 8 MiB values, 64 KiB keys. */
static void test_large(void)
{
    struct backend_store *st = store_open("large", BACKEND_DURABLE_NONE);
    BT_CHECK(st != NULL, "large: open");
    if (!st)
        return;
    size_t mib = 1024 * 1024, max_val = 8 * mib, max_key = 64 * 1024;
    /* a version-3 backend may declare a smaller key limit (max_key_len) */
    if (ops->version >= 3 && ops->max_key_len && ops->max_key_len < max_key)
        max_key = ops->max_key_len;
    int long_order = max_key >= 6200;
    unsigned char *v = malloc(max_val);
    unsigned char *k = malloc(max_key);
    if (!v || !k) {
        BT_CHECK(0, "large: test buffers");
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

    BT_EQ_INT(put(st, "big", 3, v, mib), BACKEND_OK, "large: put a 1 MiB value");
    BT_CHECK(get_is(st, "big", 3, v, mib), "large: 1 MiB value reads back exactly");
    struct kv e = {"big", 3, v, mib};
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, &e, 1), "large: 1 MiB value iterates exactly");
    BT_EQ_INT(put(st, "big", 3, v + 1, mib - 1), BACKEND_OK, "large: overwrite with 1 MiB - 1");
    BT_CHECK(get_is(st, "big", 3, v + 1, mib - 1), "large: ... reads back");
    BT_EQ_INT(put(st, "max", 3, v, max_val), BACKEND_OK, "large: put an 8 MiB value (the limit)");
    BT_CHECK(get_is(st, "max", 3, v, max_val), "large: 8 MiB value reads back exactly");
    BT_EQ_INT(put(st, k, max_key, "kv", 2), BACKEND_OK,
              "large: put a key of the limit (64 KiB or the backend's max_key_len)");
    BT_CHECK(get_is(st, k, max_key, "kv", 2), "large: the longest key reads back");
    BT_CHECK(get_absent(st, k, max_key - 1), "large: its prefix one byte shorter is absent");
    struct kv ek = {k, max_key, "kv", 2};
    BT_CHECK(scan_matches(st, k, max_key, k, max_key, NULL, 0) &&
                   scan_matches(st, k, max_key - 1, "\x08", 1, &ek, 1),
             "large: the longest key as a range bound");
    if (long_order) {
        /* keys longer than an index entry may be (an entity key of two
           1,024-character keys is up to 6,154 bytes), sharing a 3000-byte
           prefix in every way; inserted out of order. */
        static unsigned char lk[6][6200];
        static const size_t ll[6] = { 3000, 3001, 3000, 6200, 6200, 3001 };
        static const int order[6] = { 2, 0, 1, 3, 4, 5 };    /* their byte order */
        struct kv le[6];
        for (int i = 0; i < 6; i++) {
            memset(lk[i], 'q', ll[i]);
            lk[i][2999] = i == 2 ? 'p' : 'q';           /* 2: below the prefix */
        }
        lk[1][3000] = 0x00;
        memset(lk[3] + 3000, 'a', 3200);
        memset(lk[4] + 3000, 'a', 3200);
        lk[4][6199] = 'b';
        lk[5][3000] = 0xff;
        for (int i = 0; i < 6; i++) {
            put(st, lk[5 - i], ll[5 - i], "L", 1);
            le[i] = (struct kv){lk[order[i]], ll[order[i]], "L", 1};
        }
        BT_CHECK(scan_matches(st, lk[2], ll[2], "r", 1, le, 6),
                 "large: keys of 3,000-6,200 bytes sharing a 3,000-byte prefix scan in byte order");
        BT_CHECK(scan_matches(st, lk[1], ll[1], lk[4], ll[4], le + 2, 2) &&
                     scan_matches(st, lk[3], 3001, lk[5], ll[5], le + 3, 2),
                 "large: ... and bounded by such keys or their prefixes");
        for (int i = 0; i < 6; i++)
            del(st, lk[i], ll[i]);
    }
    BT_EQ_INT(del(st, "max", 3), BACKEND_OK, "large: delete the 8 MiB value");
    BT_CHECK(get_absent(st, "max", 3), "large: ... is gone");
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
uint64_t rnd(void)
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
    BT_CHECK(st != NULL, "many: open (batch durability)");
    if (!st)
        return;
    struct ref_op *ref = calloc(NOPS, sizeof(*ref));
    struct backend_write *w = calloc(256, sizeof(*w));
    if (!ref || !w) {
        BT_CHECK(0, "many: test buffers");
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
        if (bt_apply(st, w, nb, err, sizeof(err)) != BACKEND_OK) {
            if (ok)
                printf("# apply failed: %s\n", err);
            ok = 0;
        }
        if (++batches % 16 == 0)
            sync_ok &= bta_sync(ops, st, NULL, 0) == BACKEND_OK;
    }
    BT_CHECK(ok, "many: 100,000 random writes applied in batches of 1..200");
    BT_CHECK(sync_ok, "many: periodic sync() succeeds");

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
    BT_CHECK(nlive > 50000 && ndeleted > 1000, "many: the workload has many live and deleted keys");
    BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, live, nlive), "many: full scan equals the reference");

    ok = 1;
    for (int t = 0; t < 3000 && ok; t++) {
        const struct kv *e = &live[rnd() % nlive];
        ok = get_is(st, e->k, e->kl, e->v, e->vl);
    }
    BT_CHECK(ok, "many: 3000 random gets of live keys return their last value");
    ok = 1;
    for (size_t t = 0; t < ndeleted && t < 3000 && ok; t++)
        ok = get_absent(st, sorted[t].k, sorted[t].kl);
    BT_CHECK(ok, "many: deleted keys are NOTFOUND");

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
    BT_CHECK(ok, "many: 300 random [start, end) ranges equal the reference");

    if (bt_durable) {
        ops->close(st);
        st = store_open("many", BACKEND_DURABLE_NONE);
        BT_CHECK(st != NULL, "many: reopen");
        if (st) {
            BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, live, nlive),
                     "many: after reopen the full scan still equals the reference");
            ok = 1;
            for (size_t t = 0; t < ndeleted && t < 1000 && ok; t++)
                ok = get_absent(st, sorted[t].k, sorted[t].kl);
            BT_CHECK(ok, "many: after reopen deleted keys stay deleted");
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
    BT_CHECK(a && b, "two stores: both open");
    if (a && b) {
        put(a, "k", 1, "in a", 4);
        put(b, "k", 1, "in b", 4);
        put(a, "only-a", 6, "x", 1);
        BT_CHECK(get_is(a, "k", 1, "in a", 4) && get_is(b, "k", 1, "in b", 4) &&
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
        BT_CHECK(0, "reopen: test buffer");
        return;
    }
    for (size_t i = 0; i < big_len; i++)
        big[i] = (unsigned char)(i * 131 + (i >> 9));

    for (int m = 0; m < 3; m++) {
        char sec[32], what[128];
        snprintf(sec, sizeof(sec), "reopen-%s", mode_names[m]);
        struct backend_store *st = store_open(sec, modes[m]);
        snprintf(what, sizeof(what), "reopen (%s): open", mode_names[m]);
        BT_CHECK(st != NULL, what);
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
        bt_apply(st, w, 3, NULL, 0);
        if (modes[m] == BACKEND_DURABLE_BATCH) {
            snprintf(what, sizeof(what), "reopen (%s): sync", mode_names[m]);
            BT_EQ_INT(bta_sync(ops, st, NULL, 0), BACKEND_OK, what);
        }
        ops->close(st);

        for (int round = 0; round < 2; round++) {
            st = store_open(sec, modes[m]);
            snprintf(what, sizeof(what), "reopen (%s): reopen %d", mode_names[m], round + 1);
            BT_CHECK(st != NULL, what);
            if (!st)
                break;
            struct kv exp[] = {
                {"\x00z", 2, "zero", 4}, {"a", 1, "third", 5}, {"b", 1, "", 0},
                {"big", 3, big, big_len}, {"\xff\xff", 2, "ff", 2},
            };
            snprintf(what, sizeof(what), "reopen (%s): every write survived reopen %d", mode_names[m],
                     round + 1);
            BT_CHECK(scan_matches(st, NULL, 0, NULL, 0, exp, 5), what);
            snprintf(what, sizeof(what), "reopen (%s): deleted key stays deleted (%d)", mode_names[m],
                     round + 1);
            BT_CHECK(get_absent(st, "c", 1), what);
            if (round == 0) {  /* change it once more; the second reopen must see that */
                put(st, "d", 1, "later", 5);
                del(st, "d", 1);
            }
            ops->close(st);
        }
    }
    free(big);
}

/* One entry a cursor returned during the writes test. */
struct seen {
    char k[8];
    size_t kl;
    char v[16];
    size_t vl;
};

/* Cursors open across writes keep the promise of backend.h: ascending,
 * no repeats, unchanged keys all returned, values old or new, never torn.
 * Run under ASan this also catches reads of freed entries. */
static void test_cursor_writes(void)
{
    struct backend_store *st = store_open("cursor-writes", BACKEND_DURABLE_NONE);
    BT_CHECK(st != NULL, "cursor+writes: open");
    if (!st)
        return;
    char k[2] = {0, 0}, v[16];
    for (char c = 'a'; c <= 'z'; c++) {
        k[0] = c;
        snprintf(v, sizeof(v), "v1-%c", c);
        put(st, k, 1, v, strlen(v));
    }
    struct backend_iter *it = NULL;
    BT_EQ_INT(ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0), BACKEND_OK,
              "cursor+writes: iter_open");
    if (!it) {
        ops->close(st);
        return;
    }
    struct seen seen[64];
    size_t ns = 0;
    int rc = 1;
    const void *gk, *gv;
    size_t gkl, gvl;
    while (ns < 5 && (rc = bt_next(it, &gk, &gkl, &gv, &gvl)) == 1)
        ns++;
    BT_CHECK(rc == 1 && ns == 5, "cursor+writes: read a..e");
    ns = 0;   /* only what comes after the writes is checked below */
    /* Writes while the cursor is open: delete the entry it returns next,
       overwrite the one after, insert ahead and behind, delete ahead. */
    del(st, "f", 1);
    put(st, "g", 1, "v2-g", 4);
    put(st, "fa", 2, "v1-fa", 5);
    put(st, "0", 1, "v1-0", 4);
    del(st, "y", 1);
    struct backend_write bw[] = {
        {BACKEND_PUT, "m", 1, "v2-m", 4}, {BACKEND_DELETE, "n", 1, NULL, 0},
        {BACKEND_PUT, "na", 2, "v1-na", 5},
    };
    bt_apply(st, bw, 3, NULL, 0);
    int ok = 1, monotonic = 1;
    int midway_done = 0;
    while (ns < 64 && (rc = bt_next(it, &gk, &gkl, &gv, &gvl)) == 1) {
        if (gkl > 2 || gvl > 15) {
            ok = 0;
            break;
        }
        memcpy(seen[ns].k, gk, gkl);
        seen[ns].kl = gkl;
        memcpy(seen[ns].v, gv, gvl);
        seen[ns].vl = gvl;
        if (ns && key_cmp(seen[ns - 1].k, seen[ns - 1].kl, gk, gkl) >= 0)
            monotonic = 0;
        ns++;
        if (!midway_done && gkl == 1 && ((const char *)gk)[0] == 'p') {
            /* more writes in the middle, ahead of and behind the cursor */
            put(st, "q", 1, "v2-q", 4);
            del(st, "r", 1);
            put(st, "b", 1, "v2-b", 4);
            midway_done = 1;
        }
    }
    BT_CHECK(rc == 0, "cursor+writes: the cursor reaches its end without an error");
    BT_CHECK(ok && monotonic, "cursor+writes: keys strictly ascending, no repeats");
    /* every key untouched from open to the end: h..l, o, p, s..x, z */
    const char *untouched = "hijklopstuvwxz";
    int all = 1;
    for (const char *c = untouched; *c; c++) {
        int found = 0;
        for (size_t i = 0; i < ns; i++)
            if (seen[i].kl == 1 && seen[i].k[0] == *c) {
                char want[8];
                snprintf(want, sizeof(want), "v1-%c", *c);
                found = seen[i].vl == strlen(want) && memcmp(seen[i].v, want, seen[i].vl) == 0;
            }
        if (!found) {
            printf("# untouched key %c missing or with a wrong value\n", *c);
            all = 0;
        }
    }
    BT_CHECK(all, "cursor+writes: every untouched key is returned with its value");
    /* changed keys: absent, or with a value they held */
    int vals = 1;
    for (size_t i = 0; i < ns; i++) {
        char key[4] = "";
        memcpy(key, seen[i].k, seen[i].kl);
        key[seen[i].kl] = 0;
        char v1[16], v2[16];
        snprintf(v1, sizeof(v1), "v1-%s", key);
        snprintf(v2, sizeof(v2), "v2-%s", key);
        int is1 = seen[i].vl == strlen(v1) && memcmp(seen[i].v, v1, seen[i].vl) == 0;
        int is2 = seen[i].vl == strlen(v2) && memcmp(seen[i].v, v2, seen[i].vl) == 0;
        if ((!is1 && !is2) || (is2 && !strchr("gmqb", key[0])) ||
            key_cmp(seen[i].k, seen[i].kl, "e", 1) <= 0) {
            printf("# unexpected entry %s = %.*s\n", key, (int)seen[i].vl, seen[i].v);
            vals = 0;
        }
    }
    BT_CHECK(vals, "cursor+writes: nothing behind the cursor, every value one its key held");
    BT_EQ_INT(ops->iter_seek(it, "", 0), BACKEND_OK, "cursor+writes: seek back to the start");
    rc = bt_next(it, &gk, &gkl, NULL, NULL);
    BT_CHECK(rc == 1 && gkl == 1 && (((const char *)gk)[0] == '0' || ((const char *)gk)[0] == 'a'),
             "cursor+writes: ... returns the first key again");
    ops->iter_close(it);

    /* Randomised: a cursor walks 3000 keys while every step writes. Each
       returned value must be one its key held since the cursor opened;
       values carry a version so this can be checked. */
    enum { NK = 3000 };
    static unsigned versions[NK];
    char kb[16], vb[32];
    for (int i = 0; i < NK; i++) {
        versions[i] = 1;
        snprintf(kb, sizeof(kb), "r%05d", i);
        snprintf(vb, sizeof(vb), "%05d:%u", i, 1u);
        put(st, kb, 6, vb, strlen(vb));
    }
    static unsigned char touched[NK], returned[NK];
    memset(touched, 0, sizeof(touched));
    memset(returned, 0, sizeof(returned));
    it = NULL;
    ops->iter_open(st, "r", 1, "s", 1, &it, NULL, 0);
    int good = it != NULL, steps = 0, last = -1;
    while (good && (rc = bt_next(it, &gk, &gkl, &gv, &gvl)) == 1) {
        int ki = -1;
        unsigned ver = 0, kv = 0;
        if (gkl != 6 || sscanf((const char *)gk + 1, "%5d", &ki) != 1 || gvl >= sizeof(vb)) {
            good = 0;
            break;
        }
        memcpy(vb, gv, gvl);
        vb[gvl] = 0;
        if (sscanf(vb, "%5u:%u", &kv, &ver) != 2 || (int)kv != ki || ver < 1 ||
            ver > versions[ki] || ki <= last) {
            printf("# key %d: value '%s' (latest version %u), previous key %d\n", ki, vb,
                   versions[ki], last);
            good = 0;
            break;
        }
        last = ki;
        returned[ki] = 1;
        /* one write per step: overwrite or delete a random key, or re-put */
        int w = (int)(rnd() % NK);
        snprintf(kb, sizeof(kb), "r%05d", w);
        touched[w] = 1;
        if (rnd() % 3 == 0) {
            del(st, kb, 6);
        } else {
            versions[w]++;
            snprintf(vb, sizeof(vb), "%05d:%u", w, versions[w]);
            put(st, kb, 6, vb, strlen(vb));
        }
        steps++;
    }
    BT_CHECK(good && rc == 0,
             "cursor+writes: 3000-key walk, a write per step: ordered, values old or new");
    int missing = 0;
    for (int i = 0; i < NK; i++)
        missing += !touched[i] && !returned[i];
    BT_EQ_INT(missing, 0, "cursor+writes: ... every key not written during the walk was returned");
    if (it)
        ops->iter_close(it);
    printf("# %d steps\n", steps);
    ops->close(st);
}

/* Writes beyond the interface limits (64 KiB keys, 8 MiB values) are
 * refused with BACKEND_INVALID and change nothing. */
static void test_limits(void)
{
    struct backend_store *st = store_open("limits", BACKEND_DURABLE_NONE);
    BT_CHECK(st != NULL, "limits: open");
    if (!st)
        return;
    size_t kl = 64 * 1024 + 1, vl = 8 * 1024 * 1024 + 1;
    unsigned char *buf = calloc(1, vl);
    if (buf) {
        struct backend_write w[2] = {{BACKEND_PUT, "ok", 2, "v", 1}, {BACKEND_PUT, buf, kl, "v", 1}};
        BT_EQ_INT(bt_apply(st, w, 2, NULL, 0), BACKEND_INVALID, "limits: 64 KiB + 1 key");
        w[1] = (struct backend_write){BACKEND_PUT, "k", 1, buf, vl};
        BT_EQ_INT(bt_apply(st, w, 2, NULL, 0), BACKEND_INVALID, "limits: 8 MiB + 1 value");
        BT_CHECK(get_absent(st, "ok", 2), "limits: ... nothing was applied");
    }
    free(buf);
    ops->close(st);
}

/* Entity-like keys of many tables: 'e' be64(id) pk 0x00 rk. */
static size_t table_key(unsigned char *k, uint64_t id, int pk, int rk)
{
    size_t n = 0;
    k[n++] = 'e';
    for (int b = 7; b >= 0; b--)
        k[n++] = (unsigned char)(id >> (8 * b));
    n += (size_t)sprintf((char *)k + n, "p%03d", pk);
    k[n++] = 0;
    n += (size_t)sprintf((char *)k + n, "r%03d", rk);
    return n;
}

/* Counts the entries of [start, end) and checks they all carry table id. */
static long table_scan(struct backend_store *st, uint64_t id)
{
    unsigned char s[32], e[32];
    table_key(s, id, 0, 0);
    table_key(e, id + 1, 0, 0);
    size_t sl = 9, el = id + 1 == 0 ? 0 : 9;   /* 'e' be64(id): the table's prefix */
    struct backend_iter *it = NULL;
    if (ops->iter_open(st, s, sl, el ? e : NULL, el, &it, NULL, 0) != BACKEND_OK)
        return -1;
    long n = 0;
    const void *k;
    size_t kl;
    int rc;
    while ((rc = bt_next(it, &k, &kl, NULL, NULL)) == 1) {
        if (kl < 9 || memcmp(k, s, 9) != 0)
            n = -1000000;
        n++;
    }
    ops->iter_close(it);
    return rc < 0 ? -1 : n;
}

/* 600 tables (id 0x00..0x01FF and ids with 0xFF bytes) of 20 rows each:
 * every table's range holds exactly its rows, before and after dropping
 * every third table in one batch, and (durable backends) after reopen. */
static void test_many_tables(void)
{
    enum { NT = 600, NR = 20 };
    struct backend_store *st = store_open("many-tables", BACKEND_DURABLE_BATCH);
    BT_CHECK(st != NULL, "many tables: open");
    if (!st)
        return;
    uint64_t ids[NT];
    for (int t = 0; t < NT; t++)
        ids[t] = t < 500 ? (uint64_t)t : 0xFFFFFFFFFFFFFF00ull + (uint64_t)(t - 500);
    unsigned char keys[NR][32];
    struct backend_write w[NR];
    int ok = 1;
    for (int t = 0; t < NT; t++) {
        for (int r = 0; r < NR; r++) {
            size_t kl = table_key(keys[r], ids[t], r % 4, r);
            w[r] = (struct backend_write){BACKEND_PUT, keys[r], kl, keys[r], kl};
        }
        ok &= bt_apply(st, w, NR, NULL, 0) == BACKEND_OK;
    }
    bta_sync(ops, st, NULL, 0);
    BT_CHECK(ok, "many tables: 600 tables x 20 rows written, one batch per table");
    for (int round = 0; round < 3 && st; round++) {
        int good = 1;
        for (int t = 0; t < NT; t++) {
            long want = (round > 0 && t % 3 == 0) ? 0 : NR;
            long got = table_scan(st, ids[t]);
            if (got != want) {
                printf("# table %d: %ld rows, want %ld\n", t, got, want);
                good = 0;
                break;
            }
        }
        const char *what[] = {"many tables: each table's range holds exactly its 20 rows",
                              "many tables: after dropping every third table (one batch each)",
                              "many tables: ... and after reopen"};
        BT_CHECK(good, what[round]);
        if (round == 0) {
            ok = 1;
            for (int t = 0; t < NT; t += 3) {
                for (int r = 0; r < NR; r++) {
                    size_t kl = table_key(keys[r], ids[t], r % 4, r);
                    w[r] = (struct backend_write){BACKEND_DELETE, keys[r], kl, NULL, 0};
                }
                ok &= bt_apply(st, w, NR, NULL, 0) == BACKEND_OK;
            }
            bta_sync(ops, st, NULL, 0);
            BT_CHECK(ok, "many tables: drop every third table");
        } else if (round == 1) {
            if (!bt_durable)
                break;
            ops->close(st);
            st = store_open("many-tables", BACKEND_DURABLE_BATCH);
            BT_CHECK(st != NULL, "many tables: reopen");
        }
    }
    if (st)
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

/* Runs every section against one backend (see backend_suite.h). */
int bt_run_backend(const char *label, const char *name, int version, int durable,
                   const char *const *params, const char *dir)
{
    char err[512] = "";
    snprintf(bt_label, sizeof(bt_label), "%s", label);
    ops = backend_lookup(name, err, sizeof(err));
    BT_CHECK(ops != NULL, "backend_lookup finds it");
    if (!ops) {
        printf("# %s\n", err);
        return -1;
    }
    bt_durable = durable;
    bt_params = params;
    bt_backend_name = name;
    rng_state = 0x243F6A8885A308D3ull;
    int own_dir = dir == NULL;
    if (own_dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(base_dir, sizeof(base_dir), "%s/tabled-backend-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(base_dir)) {
            BT_CHECK(0, "mkdtemp");
            return 0;
        }
    } else {
        snprintf(base_dir, sizeof(base_dir), "%s", dir);
    }
    printf("# backend %s (%s), %s, data under %s\n", ops->name, name,
           durable ? "durable" : "not durable", base_dir);
    BT_CHECK(ops->version >= 1 && ops->version <= TABLED_BACKEND_VERSION_MAX,
             "the backend's interface version is one the server accepts");
    if (version)
        BT_EQ_INT(ops->version, version, "the backend has the expected interface version");
    if (ops->version >= 2 && !(ops->caps & BACKEND_CAP_DEFERS))
        BT_CHECK(ops->get_v2 && ops->iter_next_v2 && ops->apply_v2,
                 "a version-2 backend that completes at once has every _v2 method");
    int bad_before = bta_violations();
    test_point_ops();
    test_order_and_ranges();
    test_apply();
    test_large();
    test_limits();
    test_two_stores();
    test_cursor_writes();
    test_many_tables();
    test_many();
    test_v2_all();
    if (durable) {
        test_reopen();
        test_durable_all();
    }
    BT_EQ_INT(bta_violations() - bad_before, 0,
              "the backend kept the caller-visible rules of backend.h (PENDING, done())");
    if (own_dir)
        nftw(base_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

