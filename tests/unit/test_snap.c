/* test_snap.c - store/snap.h: a cursor that returns the store as of
 * snap_open while writes go on, on each built-in backend.
 *
 *     test_snap [BACKEND]...        default: memory flatfile leveldb
 *
 * Three ranges ('a', 'b', 'c' keys, read in the order b, a, c) of 300
 * keys each, with keys outside them ('0', 'z'). Between the snap's steps,
 * random batches overwrite, delete and insert keys everywhere (ahead of
 * the cursor, behind it, in ranges already read), and whole ranges are
 * deleted or churned (new keys inserted and deleted again); what the snap
 * returns must be exactly the ranges as of snap_open, in order. Also: the
 * temporary file of kept values is under $TMPDIR; a churn of inserts and
 * deletes ahead of the cursor keeps nothing; a second live snap of the
 * store is refused; a snap with live 0 is a plain cursor. */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/buf.h"
#include "store/kv.h"
#include "store/snap.h"
#include "tests/unit/tap.h"

#define NKEYS 300          /* keys per range at the start */
#define KEYSPACE 400       /* keys written meanwhile: 0..KEYSPACE-1 */

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

/* key of prefix p and number i */
static size_t mkkey(char *k, char p, unsigned i)
{
    return (size_t)snprintf(k, 32, "%c%05u", p, i);
}

/* a value of varying length, naming its key and its version */
static size_t mkval(char *v, const char *k, unsigned ver)
{
    int pad = (int)((ver * 7 + (unsigned)k[3]) % 300);
    return (size_t)snprintf(v, 512, "%s/v%u/%*s", k, ver, pad, "");
}

static int put(struct kv *kv, const char *k, size_t kl, const char *v, size_t vl)
{
    struct backend_write w = {BACKEND_PUT, k, kl, v, vl};
    char err[256];
    return kv_apply(kv, &w, NULL, 1, 0, NULL, err, sizeof err);
}

/* A batch of 1-4 random writes anywhere in the key space. */
static int random_batch(struct kv *kv, unsigned ver)
{
    static const char prefixes[] = "0abcz";
    char keys[4][32], vals[4][512];
    struct backend_write w[4];
    unsigned n = 1 + rnd(4);
    for (unsigned i = 0; i < n; i++) {
        size_t kl = mkkey(keys[i], prefixes[rnd(5)], rnd(KEYSPACE));
        w[i].key = keys[i];
        w[i].key_len = kl;
        if (rnd(3) == 0) {
            w[i].op = BACKEND_DELETE;
            w[i].val = NULL;
            w[i].val_len = 0;
        } else {
            w[i].op = BACKEND_PUT;
            w[i].val = vals[i];
            w[i].val_len = mkval(vals[i], keys[i], ver);
        }
    }
    char err[256];
    return kv_apply(kv, w, NULL, n, 0, NULL, err, sizeof err);
}

/* Deletes every key of prefix p that may exist. */
static void delete_all(struct kv *kv, char p)
{
    for (unsigned i = 0; i < KEYSPACE; i++) {
        char k[32];
        struct backend_write w = {BACKEND_DELETE, k, mkkey(k, p, i), NULL, 0};
        char err[256];
        kv_apply(kv, &w, NULL, 1, 0, NULL, err, sizeof err);
    }
}

/* Inserts and deletes again n keys of prefix p that never existed. */
static void churn(struct kv *kv, char p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char k[32], v[512];
        size_t kl = (size_t)snprintf(k, sizeof k, "%c%05u-new%u", p, rnd(KEYSPACE), i);
        put(kv, k, kl, v, mkval(v, k, 1000 + i));
        struct backend_write w = {BACKEND_DELETE, k, kl, NULL, 0};
        char err[256];
        kv_apply(kv, &w, NULL, 1, 0, NULL, err, sizeof err);
    }
}

/* 1 when one of this process's descriptors is a deleted file in dir. */
static int tmp_open_in(const char *dir)
{
    DIR *d = opendir("/proc/self/fd");
    int found = 0;
    struct dirent *e;
    size_t dl = strlen(dir);
    while (d && (e = readdir(d))) {
        char p[300], t[4200];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(p, t, sizeof t - 1);
        if (n <= 0)
            continue;
        t[n] = '\0';
        if (!strncmp(t, dir, dl) && t[dl] == '/' && strstr(t, "(deleted)"))
            found = 1;
    }
    if (d)
        closedir(d);
    return found;
}

static const char order[3] = {'b', 'a', 'c'};

/* The expected output: the ranges in order, as the store holds them now. */
static void expect_now(struct kv *kv, struct buf *want)
{
    for (int r = 0; r < 3; r++) {
        char lo[2] = {order[r], 0}, hi[2] = {(char)(order[r] + 1), 0};
        struct kv_iter *it;
        char err[256];
        if (kv_iter_open(kv, lo, 1, hi, 1, &it, err, sizeof err) != 0)
            return;
        const void *k, *v;
        size_t kl, vl;
        while (kv_iter_next(it, &k, &kl, &v, &vl) == 1) {
            buf_append(want, k, kl);
            buf_putc(want, '=');
            buf_append(want, v, vl);
            buf_putc(want, '\n');
        }
        kv_iter_close(it);
    }
}

static void run(const char *name)
{
    char label[200];
    char err[512] = "";
    const struct backend_ops *ops = backend_lookup(name, err, sizeof err);
    if (!ops) {
        TEST_CHECK(0, name);
        return;
    }
    char dir[] = "/tmp/test-snap-XXXXXX", tdir[] = "/tmp/test-snap-tmp-XXXXXX";
    if (!mkdtemp(dir) || !mkdtemp(tdir))
        abort();
    setenv("TMPDIR", tdir, 1);
    struct backend_options o;
    memset(&o, 0, sizeof o);
    o.data_dir = dir;
    struct kv *kv;
    if (kv_open(ops, &o, &kv, err, sizeof err) != 0) {
        printf("# %s\n", err);
        TEST_CHECK(0, name);
        return;
    }
    for (const char *p = "0abcz"; *p; p++)
        for (unsigned i = 0; i < NKEYS; i++) {
            char k[32], v[512];
            size_t kl = mkkey(k, *p, i);
            put(kv, k, kl, v, mkval(v, k, 0));
        }
    struct buf want, got;
    buf_init(&want);
    buf_init(&got);
    expect_now(kv, &want);

    struct snap_range r[3];
    char bounds[3][2][2];
    for (int i = 0; i < 3; i++) {
        bounds[i][0][0] = order[i];
        bounds[i][1][0] = (char)(order[i] + 1);
        r[i] = (struct snap_range){bounds[i][0], 1, bounds[i][1], 1};
    }
    struct snap *s, *s2;
    int rc = snap_open(kv, r, 3, 1, &s, err, sizeof err);
    snprintf(label, sizeof label, "%s: snap_open", name);
    if (!TEST_CHECK(rc == 0, label)) {
        printf("# %s\n", err);
        return;
    }
    int watches = strcmp(name, "leveldb") != 0;
    snprintf(label, sizeof label, "%s: the temporary file is under $TMPDIR", name);
    TEST_CHECK(tmp_open_in(tdir) == watches, label);
    snprintf(label, sizeof label, "%s: a second live snap is refused", name);
    rc = snap_open(kv, r, 3, 1, &s2, err, sizeof err);
    TEST_CHECK(watches ? rc == BACKEND_INVALID : rc == 0, label);
    if (rc == 0)
        snap_close(s2);

    /* writes before the first range is entered; range 'c' (read last)
       churned: nothing of it may stay kept */
    for (int i = 0; i < 50; i++)
        random_batch(kv, 1);
    unsigned long long k0, b0, k1, b1;
    snap_kept(s, &k0, &b0);
    churn(kv, 'c', 2000);
    snap_kept(s, &k1, &b1);
    snprintf(label, sizeof label, "%s: inserts deleted again leave nothing kept (%llu -> %llu)",
             name, k0, k1);
    TEST_CHECK(k1 == k0, label);

    unsigned ver = 2, steps = 0;
    int bad = 0;
    for (size_t i = 0; i < 3 && !bad; i++) {
        if (snap_enter(s, i) != 0) {
            bad = 1;
            break;
        }
        if (i == 1)
            delete_all(kv, 'c');      /* the next range vanishes */
        const void *k, *v;
        size_t kl, vl;
        while ((rc = snap_next(s, &k, &kl, &v, &vl)) == 1) {
            buf_append(&got, k, kl);
            buf_putc(&got, '=');
            buf_append(&got, v, vl);
            buf_putc(&got, '\n');
            if (++steps % 3 == 0)
                for (unsigned j = rnd(4); j > 0; j--)
                    random_batch(kv, ver++);
        }
        if (rc < 0) {
            printf("# %s\n", snap_error(s));
            bad = 1;
        }
    }
    snprintf(label, sizeof label, "%s: the snap returned the store as of snap_open exactly "
             "(%u batches written meanwhile)", name, ver);
    TEST_CHECK(!bad && got.len == want.len && memcmp(got.data, want.data, got.len) == 0, label);
    if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0) {
        size_t d = 0;
        while (d < got.len && d < want.len && got.data[d] == want.data[d])
            d++;
        printf("#   first difference at byte %zu: got %.60s | want %.60s\n", d,
               d < got.len ? got.data + d : "", d < want.len ? want.data + d : "");
    }
    snap_kept(s, &k1, &b1);
    printf("# %s: %llu keys kept, %llu bytes\n", name, k1, b1);
    snap_close(s);
    snprintf(label, sizeof label, "%s: the temporary file is gone after snap_close", name);
    TEST_CHECK(!tmp_open_in(tdir), label);

    /* no watcher left: a new live snap opens, and one with live 0 reads
       the store as a plain cursor */
    snprintf(label, sizeof label, "%s: a live snap opens again after the first closed", name);
    rc = snap_open(kv, r, 3, 1, &s, err, sizeof err);
    TEST_CHECK(rc == 0, label);
    if (rc == 0)
        snap_close(s);
    buf_reset(&want);
    buf_reset(&got);
    expect_now(kv, &want);
    rc = snap_open(kv, r, 3, 0, &s, err, sizeof err);
    for (size_t i = 0; rc == 0 && i < 3; i++) {
        const void *k, *v;
        size_t kl, vl;
        if (snap_enter(s, i) != 0)
            break;
        while (snap_next(s, &k, &kl, &v, &vl) == 1) {
            buf_append(&got, k, kl);
            buf_putc(&got, '=');
            buf_append(&got, v, vl);
            buf_putc(&got, '\n');
        }
    }
    snprintf(label, sizeof label, "%s: a snap with live 0 reads the store as it is", name);
    TEST_CHECK(rc == 0 && got.len == want.len && memcmp(got.data, want.data, got.len) == 0,
               label);
    snprintf(label, sizeof label, "%s: entering a range behind the current one fails", name);
    TEST_CHECK(rc == 0 && snap_enter(s, 0) != 0, label);
    if (rc == 0)
        snap_close(s);

    buf_free(&want);
    buf_free(&got);
    kv_close(kv);
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    nftw(tdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        for (int i = 1; i < argc; i++)
            run(argv[i]);
    else {
        run("memory");
        run("flatfile");
        run("leveldb");
    }
    return test_done();
}
