/* test_abi.c - the plug-in interface's layout, pinned per version
 * (backends/backend.h: a version freezes when it is declared).
 *
 * 1. Every field of the structs a plug-in shares with the server sits at
 *    the offset it had when its version was declared, and each version's
 *    part of struct backend_ops ends where the next one begins: moving,
 *    inserting or resizing a field fails here. The figures are those of
 *    x86-64 (LP64); on another ABI the checks are skipped.
 * 2. A vtable of exactly version 2's size (a malloc'd copy of the memory
 *    backend's first fields, version 2) is opened and used through
 *    store/kv.c: point reads, several reads at once, a cursor, conditional
 *    writes, sync, and the version-3 questions (off-loop sync, compaction,
 *    key limit). Under AddressSanitizer any read past the vtable's end is
 *    an error; without it the answers still show the version-3 fields
 *    were not used.
 * 3. A version-4 vtable's option rows are checked and listed as the
 *    built-in backends' are (unknown name, range, kind refused, named);
 *    a vtable of exactly version 3's size has none. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/bopts.h"
#include "backends/registry.h"
#include "store/kv.h"
#include "tests/unit/tap.h"

struct pin {
    const char *what;
    size_t got, want;
};

#define PIN(s, f, off) {#s "." #f, offsetof(struct s, f), off}

/* Offsets as each version declared them (x86-64). */
static const struct pin pins[] = {
    /* version 1 */
    PIN(backend_ops, version, 0), PIN(backend_ops, name, 8), PIN(backend_ops, open, 16),
    PIN(backend_ops, close, 24), PIN(backend_ops, get, 32), PIN(backend_ops, iter_open, 40),
    PIN(backend_ops, iter_seek, 48), PIN(backend_ops, iter_next, 56),
    PIN(backend_ops, iter_close, 64), PIN(backend_ops, apply, 72), PIN(backend_ops, sync, 80),
    /* version 2 */
    PIN(backend_ops, caps, 88), PIN(backend_ops, get_v2, 96), PIN(backend_ops, iter_next_v2, 104),
    PIN(backend_ops, apply_v2, 112),
    /* version 3 */
    PIN(backend_ops, max_key_len, 120), PIN(backend_ops, get_multi_v2, 128),
    PIN(backend_ops, sync_v2, 136), PIN(backend_ops, compact_v2, 144),
    /* version 4 */
    PIN(backend_ops, options, 152),
    PIN(backend_option, name, 0), PIN(backend_option, kind, 8), PIN(backend_option, min, 16),
    PIN(backend_option, max, 24), PIN(backend_option, def, 32), PIN(backend_option, help, 40),
    /* the other shared structs */
    PIN(backend_options, data_dir, 0), PIN(backend_options, durability, 8),
    PIN(backend_options, params, 16), PIN(backend_options, log, 24),
    PIN(backend_options, host, 32),
    PIN(backend_write, op, 0), PIN(backend_write, key, 8), PIN(backend_write, key_len, 16),
    PIN(backend_write, val, 24), PIN(backend_write, val_len, 32),
    PIN(backend_cond, expect, 0), PIN(backend_cond, version, 8),
    PIN(backend_call, done, 0), PIN(backend_call, arg, 8), PIN(backend_call, want_counts, 16),
    PIN(backend_call, status, 20), PIN(backend_call, key, 24), PIN(backend_call, key_len, 32),
    PIN(backend_call, val, 40), PIN(backend_call, val_len, 48), PIN(backend_call, failed, 56),
    PIN(backend_call, created, 64), PIN(backend_call, removed, 72), PIN(backend_call, err, 80),
    PIN(backend_mget, key, 0), PIN(backend_mget, key_len, 8), PIN(backend_mget, status, 16),
    PIN(backend_mget, val, 24), PIN(backend_mget, val_len, 32),
    PIN(backend_host, arg, 0), PIN(backend_host, timer_add, 8),
    PIN(backend_host, timer_cancel, 16), PIN(backend_host, fd_watch, 24),
    PIN(backend_host, fd_modify, 32), PIN(backend_host, fd_unwatch, 40),
};

static const struct pin sizes[] = {
    {"struct backend_ops (version 4)", sizeof(struct backend_ops), 160},
    {"struct backend_option", sizeof(struct backend_option), 48},
    {"struct backend_options", sizeof(struct backend_options), 40},
    {"struct backend_write", sizeof(struct backend_write), 40},
    {"struct backend_cond", sizeof(struct backend_cond), 16},
    {"struct backend_call", sizeof(struct backend_call), 336},
    {"struct backend_mget", sizeof(struct backend_mget), 40},
    {"struct backend_host", sizeof(struct backend_host), 48},
};

/* Where version 2's part of the vtable ends: the first version-3 field;
 * and version 3's: the first version-4 field. */
#define V2_END offsetof(struct backend_ops, max_key_len)
#define V3_END offsetof(struct backend_ops, options)

static void test_layout(void)
{
#if defined(__x86_64__) && defined(__LP64__)
    int ok = 1;
    for (size_t i = 0; i < sizeof pins / sizeof pins[0]; i++)
        if (pins[i].got != pins[i].want) {
            printf("# %s at %zu, pinned at %zu\n", pins[i].what, pins[i].got, pins[i].want);
            ok = 0;
        }
    TEST_CHECK(ok, "every shared field is where its version put it");
    ok = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].got != sizes[i].want) {
            printf("# %s is %zu bytes, pinned at %zu\n", sizes[i].what, sizes[i].got,
                   sizes[i].want);
            ok = 0;
        }
    TEST_CHECK(ok, "every shared struct has its pinned size");
    TEST_EQ_INT((int)offsetof(struct backend_ops, caps), 88, "version 1 ends at byte 88");
    TEST_EQ_INT((int)V2_END, 120, "version 2 ends at byte 120");
    TEST_EQ_INT((int)V3_END, 152, "version 3 ends at byte 152");
#else
    printf("ok 1 # SKIP the pinned offsets are those of x86-64\n");
#endif
    TEST_EQ_INT(TABLED_BACKEND_VERSION_MAX, 4, "the server reads versions 1 to 4");
}

/* kv_get_multi's found callback: counts the keys found. */
static void found_one(void *arg, size_t i, const void *val, size_t val_len)
{
    (void)i;
    (void)val;
    (void)val_len;
    ++*(int *)arg;
}

static void test_v2_sized(void)
{
    /* the bytes an old plug-in's static vtable has: nothing after them */
    unsigned char *buf = malloc(V2_END);
    if (!buf)
        abort();
    memcpy(buf, &backend_memory_ops, V2_END);
    int two = 2;
    memcpy(buf + offsetof(struct backend_ops, version), &two, sizeof two);
    const struct backend_ops *ops = (const struct backend_ops *)(void *)buf;
    struct backend_options o = {.data_dir = ".", .durability = BACKEND_DURABLE_NONE};
    struct kv *kv = NULL;
    char err[256] = "";
    TEST_EQ_INT(kv_open(ops, &o, &kv, err, sizeof err), BACKEND_OK,
                "a vtable of version 2's size opens");
    if (!kv) {
        free(buf);
        return;
    }
    TEST_CHECK(!kv_defers(kv) && !kv_shared(kv), "its capabilities are version 2's caps");
    TEST_CHECK(!kv_syncs_off_loop(kv) && !kv_compacts(kv),
               "no off-loop sync and no compaction (version-3 fields are not read)");
    struct backend_write w[2] = {{BACKEND_PUT, "a", 1, "\x01" "12345678v", 10},
                                 {BACKEND_PUT, "b", 1, "x", 1}};
    struct backend_cond absent[2] = {{BACKEND_EXPECT_ABSENT, 0}, {BACKEND_EXPECT_ABSENT, 0}};
    struct kv_result res = {0, 0, 0};
    TEST_EQ_INT(kv_apply(kv, w, absent, 2, 1, &res, err, sizeof err), BACKEND_OK,
                "a conditional apply works");
    TEST_EQ_INT((int)res.created, 2, "and counts the new keys");
    TEST_EQ_INT(kv_apply(kv, w, absent, 2, 0, &res, err, sizeof err), BACKEND_CONFLICT,
                "an expectation that fails is a conflict");
    const void *v;
    size_t vl;
    TEST_CHECK(kv_get(kv, "b", 1, &v, &vl, err, sizeof err) == BACKEND_OK && vl == 1 &&
                   memcmp(v, "x", 1) == 0,
               "a point read works");
    struct backend_mget keys[3] = {{.key = "a", .key_len = 1}, {.key = "b", .key_len = 1},
                                   {.key = "c", .key_len = 1}};
    int nfound = 0;
    TEST_EQ_INT(kv_get_multi(kv, keys, 3, found_one, &nfound, err, sizeof err), BACKEND_OK,
                "several reads at once (one get each)");
    TEST_EQ_INT(nfound, 2, "find the two keys");
    struct kv_iter *it = NULL;
    int n = 0, rc;
    const void *k;
    size_t kl;
    if (kv_iter_open(kv, NULL, 0, NULL, 0, &it, err, sizeof err) == BACKEND_OK) {
        while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1)
            n++;
        kv_iter_close(it);
    }
    TEST_EQ_INT(n, 2, "a cursor returns both keys");
    TEST_EQ_INT(kv_sync(kv, err, sizeof err), BACKEND_OK, "sync works");
    kv_close(kv);
    free(buf);
}

/* A version-4 vtable's option rows become the checked and listed rows; a
 * vtable of exactly version 3's size has none (its end is never read:
 * ASan catches a read past the malloc'd bytes). */
static void test_option_rows(void)
{
    static const struct backend_option rows[] = {
        {"cache-kb", BACKEND_OPTION_INT, 0, 1048576, "2000", "the cache, in KiB"},
        {"fast", BACKEND_OPTION_BOOL, 0, 0, "off", "skip the checks"},
        {NULL, 0, 0, 0, NULL, NULL},
    };
    static struct backend_ops v4;
    v4 = backend_memory_ops;
    v4.version = 4;
    v4.name = "rows";
    v4.options = rows;
    const struct bopt_desc *d = bopt_for(&v4);
    TEST_CHECK(d && d->nrows == 2, "a version-4 vtable's two rows are its options");
    char err[256] = "";
    const char *good[] = {"cache-kb=512", "fast=on", NULL};
    const char *unknown[] = {"cache-kb=512", "cachekb=1", NULL};
    const char *range[] = {"cache-kb=-1", NULL};
    const char *kind[] = {"fast=maybe", NULL};
    TEST_EQ_INT(d ? bopt_check(d, good, err, sizeof err) : -2, 0, "known names in range pass");
    TEST_CHECK(d && bopt_check(d, unknown, err, sizeof err) < 0 && strstr(err, "cachekb"),
               "an unknown name is refused, named");
    TEST_CHECK(d && bopt_check(d, range, err, sizeof err) < 0 && strstr(err, "cache-kb"),
               "a value out of range is refused, named");
    TEST_CHECK(d && bopt_check(d, kind, err, sizeof err) < 0 && strstr(err, "fast"),
               "a value of the wrong kind is refused, named");

    unsigned char *buf = malloc(V3_END);
    if (!buf)
        abort();
    memcpy(buf, &v4, V3_END);
    int three = 3;
    memcpy(buf + offsetof(struct backend_ops, version), &three, sizeof three);
    TEST_CHECK(bopt_for((const struct backend_ops *)(void *)buf) == NULL,
               "a vtable of version 3's size declares no rows (the field is not read)");
    free(buf);
}

int main(void)
{
    test_layout();
    test_v2_sized();
    test_option_rows();
    return test_done();
}
