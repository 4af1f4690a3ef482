/* test_ffckpt.c - the flat-file index checkpoint (backends/ffckpt.c and
 * its use in backends/flatfile.c). A store with small checkpoint and step
 * sizes takes random puts, overwrites and deletes; at several points its
 * files are copied as a kill -9 would leave them (the page cache holds
 * every written byte) and the copy is opened: it must load the checkpoint
 * (the open's log line says so), replay the tail after it, and hold
 * exactly the model, as the same copy without the checkpoint (a full
 * replay) does. Then a corrupt, torn, and stale checkpoint (another log's,
 * or a log shorter than it covers) must be ignored with a full replay, and
 * checkpoints must go on being right across compactions. Last, a
 * checkpoint of several of the load's 1 MiB reads, with entries
 * straddling them, must load whole, and damage in a later read must get
 * it ignored. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "tests/unit/backend_adapter.h"
#include "tests/unit/tap.h"

#define NKEYS 1500

static uint8_t *model[NKEYS];
static size_t model_len[NKEYS];
static int present[NKEYS];
static unsigned seed = 777;
static const struct backend_ops *ops = &backend_flatfile_ops;

/* The store's log lines, newest last (for "loaded from the checkpoint"). */
static char logbuf[1 << 16];
static size_t loglen;

static void capture(enum backend_log_level lvl, const char *msg)
{
    (void)lvl;
    size_t n = strlen(msg);
    if (loglen + n + 2 >= sizeof logbuf)
        loglen = 0;
    memcpy(logbuf + loglen, msg, n);
    loglen += n;
    logbuf[loglen++] = '\n';
    logbuf[loglen] = 0;
}

static void log_clear(void)
{
    loglen = 0;
    logbuf[0] = 0;
}

static int log_has(const char *what)
{
    return strstr(logbuf, what) != NULL;
}

static unsigned next_rand(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

static void key_of(int i, char *k)
{
    snprintf(k, 24, "pk%03d\x01rk%05d", i % 37, i);
}

static int put(struct backend_store *st, int i, size_t len)
{
    char k[24];
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

static int del(struct backend_store *st, int i)
{
    char k[24];
    key_of(i, k);
    struct backend_write w = {.op = BACKEND_DELETE, .key = k, .key_len = strlen(k)};
    char err[256];
    int rc = bta_apply(ops, st, &w, NULL, 1, 0, NULL, err, sizeof err);
    free(model[i]);
    model[i] = NULL;
    model_len[i] = 0;
    present[i] = 0;
    return rc == BACKEND_OK ? 0 : -1;
}

/* count random operations: new keys, overwrites (some of them large) and
 * deletes. */
static int churn(struct backend_store *st, int count)
{
    int fails = 0;
    for (int n = 0; n < count; n++) {
        int i = (int)(next_rand() % NKEYS);
        unsigned op = next_rand() % 10;
        if (op < 7 || !present[i])
            fails += put(st, i, 20 + next_rand() % (op == 0 ? 3000 : 300));
        else
            fails += del(st, i);
    }
    return fails;
}

/* 0 when a full scan and gets of the store match the model. */
static int check_model(struct backend_store *st)
{
    struct backend_iter *it;
    char err[256];
    if (ops->iter_open(st, NULL, 0, NULL, 0, &it, err, sizeof err) != BACKEND_OK)
        return -1;
    /* key order of key_of(): by i % 37, then i */
    int bad = 0, seen = 0;
    const void *k, *v;
    size_t kl, vl;
    int rc;
    while ((rc = bta_next(ops, it, &k, &kl, &v, &vl)) == 1) {
        int i = -1;
        if (kl == 13) {    /* the 5 digits after "pkNNN\x01rk" */
            i = 0;
            for (int d = 8; d < 13; d++)
                i = i * 10 + (((const char *)k)[d] - '0');
        }
        char want[24];
        key_of(i, want);
        if (i < 0 || i >= NKEYS || kl != strlen(want) || memcmp(k, want, kl) != 0 ||
            !present[i] || vl != model_len[i] || (vl && memcmp(v, model[i], vl) != 0))
            bad++;
        seen++;
    }
    ops->iter_close(it);
    int want_n = 0;
    for (int i = 0; i < NKEYS; i++) {
        want_n += present[i];
        char kk[24];
        key_of(i, kk);
        const void *gv;
        size_t gl;
        int g = bta_get(ops, st, kk, strlen(kk), &gv, &gl, err, sizeof err);
        if (present[i] ? g != BACKEND_OK || gl != model_len[i] || (gl && memcmp(gv, model[i], gl))
                       : g != BACKEND_NOTFOUND)
            bad++;
    }
    return rc < 0 || bad || seen != want_n ? -1 : 0;
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY);
    if (in < 0)
        return errno == ENOENT ? 1 : -1;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[65536];
    ssize_t n;
    int rc = out < 0 ? -1 : 0;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* Copies the log (and the checkpoint when with_ckpt and it exists) of
 * the open store in src into a fresh directory dst: what a kill -9 now
 * would leave on disk. 1 when a checkpoint was copied, 0 when not, -1. */
static int crash_copy(const char *src, const char *dst, int with_ckpt)
{
    char a[512], b[512], cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dst, dst);
    if (system(cmd) != 0)
        return -1;
    snprintf(a, sizeof a, "%s/flatfile.log", src);
    snprintf(b, sizeof b, "%s/flatfile.log", dst);
    if (copy_file(a, b) != 0)
        return -1;
    if (!with_ckpt)
        return 0;
    snprintf(a, sizeof a, "%s/flatfile.ckpt", src);
    snprintf(b, sizeof b, "%s/flatfile.ckpt", dst);
    int r = copy_file(a, b);
    return r < 0 ? -1 : r == 0;
}

static const char *params[] = {"checkpoint-bytes=64K", "compact-step-bytes=4096",
                               "compact-min-bytes=1G", NULL};
static const char *params_compact[] = {"checkpoint-bytes=32K", "compact-step-bytes=4096",
                                       "compact-min-bytes=256K", "compact-garbage-pct=40",
                                       NULL};

static struct backend_store *open_dir(const char *dir, const char *const *p)
{
    struct backend_options opt = {.data_dir = dir, .durability = BACKEND_DURABLE_NONE,
                                  .params = p, .log = capture};
    opt.host = bta_host();
    struct backend_store *st = NULL;
    char err[256];
    if (ops->open(&opt, &st, err, sizeof err) != BACKEND_OK) {
        printf("# open %s: %s\n", dir, err);
        return NULL;
    }
    return st;
}

/* Opens a crash copy of src with its checkpoint (which must be used) and
 * without (a full replay); both must match the model. */
static void check_copy(const char *src, const char *copy, const char *what)
{
    char t[200];
    int had = crash_copy(src, copy, 1);
    snprintf(t, sizeof t, "%s: a checkpoint is on disk", what);
    TEST_CHECK(had == 1, t);
    log_clear();
    struct backend_store *st = open_dir(copy, params);
    snprintf(t, sizeof t, "%s: the copy opens from the checkpoint and the log after it", what);
    TEST_CHECK(st && log_has("keys from the index checkpoint") && !log_has("ignored"), t);
    snprintf(t, sizeof t, "%s: it holds every write", what);
    TEST_CHECK(st && check_model(st) == 0, t);
    if (st)
        ops->close(st);
    crash_copy(src, copy, 0);
    log_clear();
    st = open_dir(copy, params);
    snprintf(t, sizeof t, "%s: a full replay of the same log holds the same", what);
    TEST_CHECK(st && !log_has("index checkpoint") && check_model(st) == 0, t);
    if (st)
        ops->close(st);
}

/* Rewrites len bytes at off in path (off < 0: from the end). */
static int poke(const char *path, long off, const void *bytes, size_t len)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return -1;
    if (off < 0)
        off += lseek(fd, 0, SEEK_END);
    int rc = pwrite(fd, bytes, len, off) == (ssize_t)len ? 0 : -1;
    close(fd);
    return rc;
}

/* A copy whose checkpoint was spoilt by spoil must open without it (a
 * logged full replay) and match the model. */
static void check_ignored(const char *src, const char *copy, const char *what,
                          int (*spoil)(const char *ckpt))
{
    char t[200], ck[512];
    crash_copy(src, copy, 1);
    snprintf(ck, sizeof ck, "%s/flatfile.ckpt", copy);
    snprintf(t, sizeof t, "%s: the checkpoint is spoilt", what);
    TEST_CHECK(spoil(ck) == 0, t);
    log_clear();
    struct backend_store *st = open_dir(copy, params);
    snprintf(t, sizeof t, "%s: it is ignored (logged) and the whole log replayed", what);
    TEST_CHECK(st && log_has("index checkpoint flatfile.ckpt ignored") &&
               !log_has("keys from the index checkpoint"), t);
    snprintf(t, sizeof t, "%s: the store holds every write", what);
    TEST_CHECK(st && check_model(st) == 0, t);
    if (st)
        ops->close(st);
}

static int spoil_body(const char *ck)
{
    uint8_t x = 0xA5;
    return poke(ck, -7, &x, 1);
}

static int spoil_torn(const char *ck)
{
    struct stat sb;
    return stat(ck, &sb) != 0 ? -1 : truncate(ck, sb.st_size - 100);
}

static int spoil_header(const char *ck)
{
    uint8_t x = 0x5A;
    return poke(ck, 30, &x, 1);
}

/* A checkpoint of another log: the one saved before a compaction. */
static char other_ckpt[512];
static int spoil_other(const char *ck)
{
    return copy_file(other_ckpt, ck);
}

/* Key j of the large store: lengths from 1 to 300 bytes, so that entries
 * end at every offset of the load's reads; "L" and 8 digits lead, so
 * the order is j's. */
static size_t big_key(int j, char *k)
{
    size_t len = 1 + (size_t)((j * 7919u) % 300u);
    int n = snprintf(k, 320, "L%08d", j);
    for (size_t i = (size_t)n; i < len; i++)
        k[i] = (char)('a' + (j + (int)i) % 26);
    return len < (size_t)n ? (size_t)n : len;
}

/* 0 when every key of the large store holds its value (its number). */
static int big_check(struct backend_store *st, int nbig)
{
    int bad = 0;
    for (int j = 0; j < nbig; j++) {
        char k[320], err[256];
        size_t kl = big_key(j, k);
        const void *v;
        size_t vl;
        if (bta_get(ops, st, k, kl, &v, &vl, err, sizeof err) != BACKEND_OK || vl != sizeof j ||
            memcmp(v, &j, sizeof j) != 0)
            bad++;
    }
    return bad ? -1 : 0;
}

/* A checkpoint several times the load's read buffer (1 MiB): entries
 * (keys of 1 to 300 bytes) straddle the reads at every offset of their
 * header and key. It must load whole; damage in a later read (its
 * checksum) must still get it ignored. */
static void test_large(const char *dir)
{
    char big[256], copy[300], ck[320], t[200];
    snprintf(big, sizeof big, "%s/big", dir);
    snprintf(copy, sizeof copy, "%s/bigcopy", dir);
    struct backend_store *st = open_dir(big, params);
    enum { NBIG = 24000 };
    int fails = !st;
    for (int j = 0; st && j < NBIG; j += 100) {
        struct backend_write w[100];
        char keys[100][320];
        int vals[100];
        for (int b = 0; b < 100; b++) {
            vals[b] = j + b;
            w[b] = (struct backend_write){.op = BACKEND_PUT, .key = keys[b],
                                          .key_len = big_key(j + b, keys[b]), .val = &vals[b],
                                          .val_len = sizeof vals[b]};
        }
        char err[256];
        fails += bta_apply(ops, st, w, NULL, 100, 0, NULL, err, sizeof err) != BACKEND_OK;
    }
    if (st)
        ops->close(st);          /* a clean close: a checkpoint of everything */
    snprintf(ck, sizeof ck, "%s/flatfile.ckpt", big);
    struct stat sb;
    TEST_CHECK(fails == 0 && stat(ck, &sb) == 0 && sb.st_size > 3 * (1 << 20),
               "large store: a checkpoint of more than 3 MiB");
    log_clear();
    st = open_dir(big, params);
    TEST_CHECK(st && log_has(" keys from the index checkpoint") &&
               !log_has("ignored"), "large store: it loads whole");
    TEST_CHECK(st && big_check(st, NBIG) == 0, "large store: every key holds its value");
    if (st)
        ops->close(st);
    /* a byte of a key in the third read turned: checksum */
    crash_copy(big, copy, 1);
    snprintf(ck, sizeof ck, "%s/flatfile.ckpt", copy);
    uint8_t x;
    int fd = open(ck, O_RDWR);
    int ok = fd >= 0 && pread(fd, &x, 1, (5 << 19) + 77) == 1;
    x ^= 0x20;
    ok = ok && pwrite(fd, &x, 1, (5 << 19) + 77) == 1;
    if (fd >= 0)
        close(fd);
    log_clear();
    st = open_dir(copy, params);
    snprintf(t, sizeof t, "large store, damaged in a later read: ignored, the log replayed");
    TEST_CHECK(ok && st && log_has("index checkpoint flatfile.ckpt ignored") &&
               !log_has("keys from the index checkpoint") && big_check(st, NBIG) == 0, t);
    if (st)
        ops->close(st);
}

int main(void)
{
    char dir[] = "/tmp/test_ffckpt.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char copy[128];
    snprintf(copy, sizeof copy, "%s/copy", dir);
    char live[128];
    snprintf(live, sizeof live, "%s/live", dir);

    struct backend_store *st = open_dir(live, params);
    if (!st) {
        printf("Bail out! cannot open %s\n", live);
        return 1;
    }
    int fails = 0;
    for (int i = 0; i < NKEYS; i++)
        fails += put(st, i, 100 + next_rand() % 200);
    TEST_CHECK(fails == 0, "1500 keys written");
    TEST_CHECK(log_has("index checkpoint written"), "checkpoints are written as the log grows");
    check_copy(live, copy, "after the load");

    /* the tail after the last checkpoint: overwrites and deletes */
    for (int round = 0; round < 4; round++) {
        char what[64];
        fails = churn(st, 150 + 97 * round);
        snprintf(what, sizeof what, "after churn round %d", round + 1);
        TEST_CHECK(fails == 0, what);
        check_copy(live, copy, what);
    }
    /* a crash copy taken in the middle of a checkpoint walk (a step per
       write of 4 KiB of entries: the walk spans many writes) */
    log_clear();
    int mid = 0;
    for (int n = 0; n < 3000 && !mid; n++) {
        fails += churn(st, 1);
        mid = log_has("index checkpoint written");
    }
    fails += churn(st, 5);     /* a walk under way or not: the copy must be right */
    TEST_CHECK(fails == 0 && mid, "more checkpoints while overwriting");
    check_copy(live, copy, "with writes during a later walk");

    check_ignored(live, copy, "corrupt entries", spoil_body);
    check_ignored(live, copy, "torn checkpoint", spoil_torn);
    check_ignored(live, copy, "damaged header", spoil_header);

    /* a log shorter than the checkpoint covers (its tail lost): ignored,
       and the store is what a full replay of that log gives */
    {
        crash_copy(live, copy, 1);
        char lg[600];
        snprintf(lg, sizeof lg, "%s/flatfile.log", copy);
        /* the log end the checkpoint needs: u64 at byte 32 of its header */
        char ck[200];
        snprintf(ck, sizeof ck, "%s/flatfile.ckpt", copy);
        uint8_t need8[8] = {0};
        int cfd = open(ck, O_RDONLY);
        int ok = cfd >= 0 && pread(cfd, need8, 8, 32) == 8;
        if (cfd >= 0)
            close(cfd);
        off_t need = 0;
        for (int b = 7; b >= 0; b--)
            need = need * 256 + need8[b];
        ok = ok && need > 100 && truncate(lg, need - 10) == 0;
        log_clear();
        struct backend_store *a = open_dir(copy, params);
        TEST_CHECK(ok && a && log_has("ignored") && !log_has("keys from the index checkpoint"),
                   "stale checkpoint (the log was cut below what it covers): ignored");
        /* compare with a full replay of the same cut log */
        char copy2[160];
        snprintf(copy2, sizeof copy2, "%s2", copy);
        crash_copy(live, copy2, 0);
        snprintf(lg, sizeof lg, "%s/flatfile.log", copy2);
        ok = ok && truncate(lg, need - 10) == 0;
        struct backend_store *b = open_dir(copy2, params);
        int same = ok && a && b;
        if (same) {
            for (int i = 0; i < NKEYS && same; i++) {
                char kk[24], err[256];
                key_of(i, kk);
                const void *v1, *v2;
                size_t l1, l2;
                int g1 = bta_get(ops, a, kk, strlen(kk), &v1, &l1, err, sizeof err);
                uint8_t *c1 = g1 == BACKEND_OK ? malloc(l1 + 1) : NULL;
                if (c1)
                    memcpy(c1, v1, l1);
                int g2 = bta_get(ops, b, kk, strlen(kk), &v2, &l2, err, sizeof err);
                same = g1 == g2 && (g1 != BACKEND_OK || (c1 && l1 == l2 && !memcmp(c1, v2, l1)));
                free(c1);
            }
        }
        TEST_CHECK(same, "stale checkpoint: the store equals a full replay of the cut log");
        if (a)
            ops->close(a);
        if (b)
            ops->close(b);
    }

    /* a clean close writes a checkpoint covering everything */
    ops->close(st);
    log_clear();
    st = open_dir(live, params);
    TEST_CHECK(st && log_has("keys from the index checkpoint"),
               "a reopen after a clean close loads the checkpoint");
    TEST_CHECK(st && check_model(st) == 0, "and holds every write");
    if (st)
        ops->close(st);

    /* compactions: keep the current checkpoint (of the old log) aside */
    {
        char ck[600];
        snprintf(ck, sizeof ck, "%s/flatfile.ckpt", live);
        snprintf(other_ckpt, sizeof other_ckpt, "%s/other.ckpt", dir);
        TEST_CHECK(copy_file(ck, other_ckpt) == 0, "a checkpoint of the log before compaction kept");
    }
    st = open_dir(live, params_compact);
    log_clear();
    int compactions = 0;
    fails = 0;
    for (int n = 0; n < 400 && compactions < 2; n++) {
        fails += churn(st, 50);
        char *p = logbuf;
        compactions = 0;
        while ((p = strstr(p, "compaction done")))
            compactions++, p++;
    }
    TEST_CHECK(fails == 0 && compactions >= 2, "two compactions ran");
    /* write until a checkpoint of the new log is on disk */
    log_clear();
    for (int n = 0; n < 3000 && !log_has("index checkpoint written"); n++)
        fails += churn(st, 1);
    fails += churn(st, 20);
    TEST_CHECK(fails == 0 && log_has("index checkpoint written"),
               "a checkpoint of the compacted log is written");
    check_copy(live, copy, "after compactions");
    check_ignored(live, copy, "a checkpoint of the log before the compaction", spoil_other);
    ops->close(st);

    test_large(dir);

    for (int j = 0; j < NKEYS; j++)
        free(model[j]);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_done();
}
