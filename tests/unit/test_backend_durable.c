/* test_backend_durable.c - conformance checks of the durable backends:
 * one process per data directory, kill -9 during writes (every write
 * acknowledged before the kill survives, no batch is half there), disk
 * full and failed fsync (the write fails, nothing is lost or half
 * written), and for flatfile the start-up recovery (torn tails are cut,
 * damage in the middle is refused) and compaction. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/registry.h"
#include "tests/unit/backend_suite.h"

/* ---- one data directory, one process ---- */

static void test_lock(void)
{
    struct backend_store *a = store_open("lock", BACKEND_DURABLE_BATCH);
    BT_CHECK(a != NULL, "lock: open");
    int rc = 0;
    char err[512] = "";
    struct backend_store *b = store_open_with("lock", BACKEND_DURABLE_BATCH, NULL, &rc, err,
                                              sizeof(err));
    BT_CHECK(b == NULL && rc != BACKEND_OK && err[0],
             "lock: a second open of the same directory fails with a message");
    printf("# %s\n", err);
    if (b)
        ops->close(b);
    if (a)
        ops->close(a);
    b = store_open("lock", BACKEND_DURABLE_BATCH);
    BT_CHECK(b != NULL, "lock: after close it opens again");
    if (b)
        ops->close(b);
}

/* ---- kill -9 during writes ---- */

#define KILL_HOT 50                 /* keys overwritten again and again */

/* Value of write i of batch b of cycle c (deterministic, len varies). */
static size_t kill_value(unsigned char *v, int c, int b, int i)
{
    size_t len = 16 + (size_t)((b * 37 + i * 101) % 3000);
    if (b % 61 == 7 && i == 0)
        len = 300 * 1024;
    int n = snprintf((char *)v, 32, "%02d:%06d:%d:", c, b, i);
    for (size_t j = (size_t)n; j < len; j++)
        v[j] = (unsigned char)(j * 7 + (size_t)b * 13 + (size_t)i);
    return len;
}

/* Number of writes of batch b besides the hot key. */
static int kill_nwrites(int b)
{
    return 1 + b % 4;
}

/* Child: writes batches until killed, acknowledging on fd each batch (or
 * group of batches) once durable: after apply() in SYNC mode, after
 * sync() in BATCH mode. */
static void kill_child(const char *section, enum backend_durability d, int cycle, int fd)
{
    struct backend_store *st = store_open(section, d);
    if (!st)
        _exit(3);
    static unsigned char vals[6][300 * 1024 + 64];
    char keys[6][48];
    for (int b = 0;; b++) {
        struct backend_write w[6];
        int n = kill_nwrites(b);
        for (int i = 0; i < n; i++) {
            int kl = snprintf(keys[i], sizeof(keys[i]), "k%02d-%06d-%d", cycle, b, i);
            size_t vl = kill_value(vals[i], cycle, b, i);
            w[i] = (struct backend_write){BACKEND_PUT, keys[i], (size_t)kl, vals[i], vl};
        }
        int hk = snprintf(keys[n], sizeof(keys[n]), "hot-%02d", b % KILL_HOT);
        int hl = snprintf((char *)vals[n], 64, "%02d:%06d:hot", cycle, b);
        memset(vals[n] + hl, 'h', 2048);
        w[n] = (struct backend_write){BACKEND_PUT, keys[n], (size_t)hk, vals[n], (size_t)hl + 2048};
        if (bt_apply(st, w, (size_t)n + 1, NULL, 0) != BACKEND_OK)
            _exit(4);
        int ack = -1;
        if (d == BACKEND_DURABLE_SYNC)
            ack = b;
        else if (b % 3 == 2 && bta_sync(ops, st, NULL, 0) == BACKEND_OK)
            ack = b;
        if (ack >= 0 && write(fd, &ack, sizeof(ack)) != (ssize_t)sizeof(ack))
            _exit(5);
    }
}

int kill_writer_main(int argc, char **argv)
{
    /* test_backend --writer BACKEND BASE_DIR SECTION MODE CYCLE FD [PARAM...] */
    static const char *params[32];
    if (argc < 8)
        return 2;
    ops = backend_lookup(argv[2], NULL, 0);
    if (!ops)
        return 3;
    snprintf(base_dir, sizeof(base_dir), "%s", argv[3]);
    int n = 0;
    for (int i = 8; i < argc && n < 31; i++)
        params[n++] = argv[i];
    params[n] = NULL;
    bt_params = params;
    kill_child(argv[4], (enum backend_durability)atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));
    return 0;
}

/* 1 when batch b of cycle c is wholly present (exact values), 0 when
 * wholly absent, -1 when partly present or wrong. */
static int kill_batch_state(struct backend_store *st, int c, int b)
{
    static unsigned char v[300 * 1024 + 64];
    int present = 0, n = kill_nwrites(b);
    for (int i = 0; i < n; i++) {
        char k[48];
        int kl = snprintf(k, sizeof(k), "k%02d-%06d-%d", c, b, i);
        size_t vl = kill_value(v, c, b, i);
        if (get_absent(st, k, (size_t)kl))
            continue;
        if (!get_is(st, k, (size_t)kl, v, vl))
            return -1;
        present++;
    }
    return present == n ? 1 : present == 0 ? 0 : -1;
}

/* Runs cycles of: start a writer, kill -9 it at a random moment, reopen
 * and check. */
static void test_kill(enum backend_durability d, const char *mode, int cycles)
{
    char section[64], what[160];
    snprintf(section, sizeof(section), "kill-%s", mode);
    int last_ack[16], first_absent[16];
    int hot_min[KILL_HOT];      /* highest acknowledged batch per hot key */
    for (int j = 0; j < KILL_HOT; j++)
        hot_min[j] = -1;
    int all_ok = 1, total_acked = 0, total_tail = 0;
    if (!section_params(section))   /* here, not in the forked writer */
        return;
    for (int c = 0; c < cycles && c < 16; c++) {
        int p[2];
        if (pipe(p) != 0) {
            BT_CHECK(0, "kill: pipe");
            return;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            /* A fresh process (exec), not a fork of this one: LevelDB's
               background thread does not survive fork(). */
            close(p[0]);
            char mode_s[8], cycle_s[8], fd_s[8];
            snprintf(mode_s, sizeof(mode_s), "%d", (int)d);
            snprintf(cycle_s, sizeof(cycle_s), "%d", c);
            snprintf(fd_s, sizeof(fd_s), "%d", p[1]);
            const char *args[40] = {"test_backend", "--writer", bt_backend_name, base_dir,
                                    section, mode_s, cycle_s, fd_s};
            int na = 8;
            const char *const *sp = section_params(section);
            for (const char *const *pp = sp; pp && *pp && na < 38; pp++)
                args[na++] = *pp;
            for (const char *const *pp = bt_params; pp && *pp && na < 38; pp++)
                args[na++] = *pp;
            args[na] = NULL;
            execv("/proc/self/exe", (char *const *)args);
            _exit(6);
        }
        close(p[1]);
        int target = 20 + (int)(rnd() % 150), ack = -1, got;
        while (ack < target && read(p[0], &got, sizeof(got)) == (ssize_t)sizeof(got))
            ack = got;
        if (rnd() % 2)
            usleep((useconds_t)(rnd() % 3000));
        kill(pid, SIGKILL);
        while (read(p[0], &got, sizeof(got)) == (ssize_t)sizeof(got))
            ack = got;          /* acknowledged before it died */
        close(p[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFSIGNALED(status)) {
            printf("# writer exited with status %d before the kill\n", WEXITSTATUS(status));
            all_ok = 0;
        }
        last_ack[c] = ack;
        total_acked += ack + 1;

        struct backend_store *st = store_open(section, d);
        if (!st) {
            snprintf(what, sizeof(what), "kill (%s): reopen after kill -9 number %d", mode, c + 1);
            BT_CHECK(0, what);
            return;
        }
        /* acknowledged batches: all present; later ones: all or nothing */
        int ok = 1, b = 0;
        for (; b <= ack && ok; b++)
            if (kill_batch_state(st, c, b) != 1) {
                printf("# cycle %d: acknowledged batch %d is not wholly present\n", c, b);
                ok = 0;
            }
        first_absent[c] = -1;
        for (int absent_run = 0; ok && absent_run < 200; b++) {
            int s = kill_batch_state(st, c, b);
            if (s < 0) {
                printf("# cycle %d: batch %d is partly present\n", c, b);
                ok = 0;
            } else if (s == 0) {
                if (first_absent[c] < 0)
                    first_absent[c] = b;
                absent_run++;
            } else if (first_absent[c] >= 0) {
                printf("# cycle %d: batch %d present after absent batch %d\n", c, b,
                       first_absent[c]);
                ok = 0;
            } else {
                total_tail++;
            }
        }
        /* hot keys: the value of the newest acknowledged write or later */
        for (int i = ack; i >= 0 && i > ack - KILL_HOT; i--)
            if (hot_min[i % KILL_HOT] < c * 1000000 + i)
                hot_min[i % KILL_HOT] = c * 1000000 + i;
        for (int j = 0; j < KILL_HOT && ok; j++) {
            char k[16];
            int kl = snprintf(k, sizeof(k), "hot-%02d", j);
            const void *v = NULL;
            size_t vl = 0;
            int rc = bt_get(st, k, (size_t)kl, &v, &vl, NULL, 0);
            if (hot_min[j] < 0)
                continue;
            int vc = -1, vb = -1;
            char head[16] = "";
            if (rc == BACKEND_OK)
                memcpy(head, v, vl < 15 ? vl : 15);
            if (rc != BACKEND_OK || vl < 10 || sscanf(head, "%2d:%6d", &vc, &vb) != 2 ||
                vc * 1000000 + vb < hot_min[j] || vb % KILL_HOT != j) {
                printf("# cycle %d: hot key %d holds %s, want batch >= %d\n", c, j,
                       rc == BACKEND_OK ? head : "(absent)", hot_min[j]);
                ok = 0;
            }
        }
        all_ok &= ok;
        ops->close(st);
        if (!ok)
            break;
    }
    snprintf(what, sizeof(what),
             "kill (%s): %d kill -9 cycles: every acknowledged batch survives whole, "
             "no batch half applied", mode, cycles);
    BT_CHECK(all_ok, what);
    printf("# %d batches acknowledged, %d more found complete after the kills\n", total_acked,
           total_tail);

    /* everything of every cycle once more after a clean reopen */
    struct backend_store *st = store_open(section, d);
    int ok = st != NULL;
    for (int c = 0; ok && c < cycles && c < 16; c++)
        for (int b = 0; ok && b <= last_ack[c]; b++)
            ok = kill_batch_state(st, c, b) == 1;
    snprintf(what, sizeof(what), "kill (%s): all cycles' acknowledged batches after a clean reopen",
             mode);
    BT_CHECK(ok, what);
    if (st)
        ops->close(st);
}

/* ---- disk full, failed fsync ---- */

/* n puts of 1000-byte values under prefix p, in one batch. */
static int diskfull_batch(struct backend_store *st, const char *p, int n, char *err, size_t errlen)
{
    static char keys[8][32], val[1000];
    struct backend_write w[8];
    memset(val, 'x', sizeof(val));
    for (int i = 0; i < n && i < 8; i++) {
        int kl = snprintf(keys[i], sizeof(keys[i]), "%s%d", p, i);
        w[i] = (struct backend_write){BACKEND_PUT, keys[i], (size_t)kl, val, sizeof(val)};
    }
    return bt_apply(st, w, (size_t)n, err, errlen);
}

/* How many of the n keys of batch p are present (-1: some value wrong). */
static int diskfull_present(struct backend_store *st, const char *p, int n)
{
    char val[1000], k[32];
    memset(val, 'x', sizeof(val));
    int c = 0;
    for (int i = 0; i < n; i++) {
        int kl = snprintf(k, sizeof(k), "%s%d", p, i);
        if (get_absent(st, k, (size_t)kl))
            continue;
        if (!get_is(st, k, (size_t)kl, val, sizeof(val)))
            return -1;
        c++;
    }
    return c;
}

static void test_diskfull(enum backend_durability d, const char *mode)
{
    char section[64], dir[4200], what[200], err[512];
    snprintf(section, sizeof(section), "diskfull-%s", mode);
    section_dir(dir, sizeof(dir), section);
    struct backend_store *st = store_open(section, d);
    if (!st) {
        BT_CHECK(0, "disk full: open");
        return;
    }
    int ok = diskfull_batch(st, "before-", 8, NULL, 0) == BACKEND_OK &&
             bta_sync(ops, st, NULL, 0) == BACKEND_OK;
    snprintf(what, sizeof(what), "disk full (%s): a batch before the disk fills", mode);
    BT_CHECK(ok, what);

    /* no space at all, then space for 700 bytes: the batch is cut */
    long long budgets[2] = {0, 700};
    for (int t = 0; t < 2; t++) {
        faultfs_arm(dir, budgets[t], 0);
        err[0] = 0;
        int rc = diskfull_batch(st, t ? "cut-" : "full-", 5, err, sizeof(err));
        if (rc == BACKEND_OK)
            rc = bta_sync(ops, st, err, sizeof(err));
        faultfs_disarm();
        snprintf(what, sizeof(what), "disk full (%s): a write %s fails with BACKEND_FULL", mode,
                 t ? "cut short by a full disk" : "into a full disk");
        BT_EQ_INT(rc, BACKEND_FULL, what);
        printf("# %s\n", err);
        snprintf(what, sizeof(what), "disk full (%s): ... none of it is visible", mode);
        BT_EQ_INT(diskfull_present(st, t ? "cut-" : "full-", 5), 0, what);
    }
    snprintf(what, sizeof(what), "disk full (%s): earlier data is intact", mode);
    BT_EQ_INT(diskfull_present(st, "before-", 8), 8, what);
    err[0] = 0;
    int rc = diskfull_batch(st, "after-", 6, err, sizeof(err));
    if (rc == BACKEND_OK)
        rc = bta_sync(ops, st, err, sizeof(err));
    snprintf(what, sizeof(what), "disk full (%s): with space again, writes work", mode);
    BT_EQ_INT(rc, BACKEND_OK, what);
    if (rc)
        printf("# %s\n", err);

    /* a failed fsync: the write is reported failed; it may or may not
       survive, but never in part */
    faultfs_arm(dir, -1, 1);
    rc = diskfull_batch(st, "nosync-", 4, NULL, 0);
    if (rc == BACKEND_OK)
        rc = bta_sync(ops, st, NULL, 0);
    faultfs_disarm();
    snprintf(what, sizeof(what), "disk full (%s): a failed fsync fails the write or the sync", mode);
    BT_CHECK(rc != BACKEND_OK, what);
    ops->close(st);

    st = store_open(section, d);
    snprintf(what, sizeof(what), "disk full (%s): reopen", mode);
    BT_CHECK(st != NULL, what);
    if (!st)
        return;
    int nosync = diskfull_present(st, "nosync-", 4);
    snprintf(what, sizeof(what),
             "disk full (%s): after reopen: acknowledged batches whole, failed ones absent, "
             "the unsynced one all or nothing (%d of 4)", mode, nosync);
    BT_CHECK(diskfull_present(st, "before-", 8) == 8 && diskfull_present(st, "after-", 6) == 6 &&
                 diskfull_present(st, "full-", 5) == 0 && diskfull_present(st, "cut-", 5) == 0 &&
                 (nosync == 0 || nosync == 4),
             what);
    snprintf(what, sizeof(what), "disk full (%s): writes work after reopen", mode);
    BT_EQ_INT(diskfull_batch(st, "later-", 3, NULL, 0), BACKEND_OK, what);
    ops->close(st);
    BT_CHECK(faultfs_failures() > 0, "disk full: the injected faults were hit");
}

/* ---- leveldb: writes come back on a small disk ---- */

/* After a full disk, with only 8 MiB free (far below write-buffer-size +
 * max-file-size), the reopen is made and writes work; while nothing is
 * free, the probe (an apply() of no writes) answers BACKEND_FULL and the
 * open database keeps answering reads. */
static void test_ldb_small_disk(void)
{
    char dir[4200], err[512] = "";
    section_dir(dir, sizeof(dir), "smalldisk");
    struct backend_store *st = store_open("smalldisk", BACKEND_DURABLE_SYNC);
    if (!st) {
        BT_CHECK(0, "small disk: open");
        return;
    }
    BT_EQ_INT(diskfull_batch(st, "before-", 8, NULL, 0), BACKEND_OK, "small disk: a batch");
    faultfs_arm(dir, 0, 0);
    faultfs_set_free(0);
    BT_EQ_INT(diskfull_batch(st, "full-", 4, NULL, 0), BACKEND_FULL,
              "small disk: a write into the full disk fails with BACKEND_FULL");
    struct backend_write none = {BACKEND_PUT, "", 0, NULL, 0};
    BT_EQ_INT(bt_apply(st, &none, 0, err, sizeof(err)), BACKEND_FULL,
              "small disk: while nothing is free, an apply() of no writes answers BACKEND_FULL");
    printf("# %s\n", err);
    BT_EQ_INT(diskfull_present(st, "before-", 8), 8,
              "small disk: ... and the open database still answers reads");
    faultfs_arm(dir, -1, 0);
    faultfs_set_free(8 << 20);
    err[0] = 0;
    int rc = bt_apply(st, &none, 0, err, sizeof(err));
    BT_EQ_INT(rc, BACKEND_OK, "small disk: with 8 MiB free, an apply() of no writes reopens");
    if (rc)
        printf("# %s\n", err);
    BT_EQ_INT(diskfull_batch(st, "after-", 8, NULL, 0), BACKEND_OK,
              "small disk: with 8 MiB free, writes work again");
    faultfs_disarm();
    BT_CHECK(diskfull_present(st, "before-", 8) == 8 && diskfull_present(st, "after-", 8) == 8 &&
                 diskfull_present(st, "full-", 4) == 0,
             "small disk: the acknowledged batches are there, the failed one is not");
    ops->close(st);
}

/* ---- flatfile: recovery and compaction ---- */

/* Reads a whole file; NULL when missing. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static int spit(const char *path, const void *p, size_t n, const char *mode)
{
    FILE *f = fopen(path, mode);
    if (!f)
        return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Offsets of the records of a flat-file log (at most max). */
static size_t ff_records(const unsigned char *f, size_t len, size_t *off, size_t max)
{
    size_t n = 0, p = 32;
    while (p + 12 <= len && n < max && le32(f + p) == 0x46524254u) {
        off[n++] = p;
        p += 12 + le32(f + p + 4);
    }
    return n;
}

static off_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* Writes rec1..recN, one record each, in mode d, and closes. */
static int ff_write_records(const char *section, enum backend_durability d, int n)
{
    struct backend_store *st = store_open(section, d);
    if (!st)
        return -1;
    int ok = 1;
    for (int i = 1; i <= n; i++) {
        char k[16], v[64];
        snprintf(k, sizeof(k), "rec%d", i);
        snprintf(v, sizeof(v), "value of record %d", i);
        ok &= put(st, k, strlen(k), v, strlen(v)) == BACKEND_OK;
    }
    ops->close(st);
    return ok ? 0 : -1;
}

/* Which of rec1..recN are present, as a bit mask (bit i-1 = rec i). */
static unsigned ff_present(struct backend_store *st, int n)
{
    unsigned m = 0;
    for (int i = 1; i <= n; i++) {
        char k[16], v[64];
        snprintf(k, sizeof(k), "rec%d", i);
        snprintf(v, sizeof(v), "value of record %d", i);
        if (!get_absent(st, k, strlen(k)) && get_is(st, k, strlen(k), v, strlen(v)))
            m |= 1u << (i - 1);
    }
    return m;
}

/* Damage kinds at the end of a log. */
enum tail_damage {
    TAIL_HALF_RECORD, TAIL_GARBAGE, TAIL_ZEROS, TAIL_BAD_CRC, TAIL_SHORT_HEADER,
    TAIL_HALF_THEN_ZEROS
};

static void test_ff_tail(enum tail_damage kind, const char *name)
{
    char section[64], dir[4200], path[4300], what[200];
    snprintf(section, sizeof(section), "ff-tail-%d", (int)kind);
    section_dir(dir, sizeof(dir), section);
    snprintf(path, sizeof(path), "%s/flatfile.log", dir);
    if (ff_write_records(section, BACKEND_DURABLE_SYNC, 3) != 0) {
        BT_CHECK(0, "flatfile tail: write records");
        return;
    }
    size_t len = 0, off[8];
    unsigned char *f = slurp(path, &len);
    size_t n = f ? ff_records(f, len, off, 8) : 0;
    if (n != 3) {
        BT_CHECK(0, "flatfile tail: the log holds 3 records");
        free(f);
        return;
    }
    size_t keep = len;
    unsigned want = 7;
    if (kind == TAIL_HALF_RECORD) {
        spit(path, f + off[2], (len - off[2]) / 2, "ab");
    } else if (kind == TAIL_GARBAGE) {
        spit(path, "\x54\x42\x52\x46garbage!", 12, "ab");
    } else if (kind == TAIL_ZEROS) {
        /* what the zeros written ahead of the end (preallocate) leave
           after a crash: the clean end of the log, kept as they are */
        static const unsigned char z[4096];
        spit(path, z, sizeof(z), "ab");
        keep = len + sizeof(z);
    } else if (kind == TAIL_HALF_THEN_ZEROS) {
        /* a crash while a record was written into those zeros */
        static const unsigned char z[8192];
        spit(path, f + off[2], (len - off[2]) / 2, "ab");
        spit(path, z, sizeof(z), "ab");
    } else if (kind == TAIL_SHORT_HEADER) {
        spit(path, f + off[2], 7, "ab");
    } else {
        f[len - 2] ^= 0x40;          /* inside the last record's payload */
        spit(path, f, len, "wb");
        keep = off[2];
        want = 3;
    }
    free(f);
    struct backend_store *st = store_open(section, BACKEND_DURABLE_SYNC);
    snprintf(what, sizeof(what), "flatfile tail (%s): opens", name);
    BT_CHECK(st != NULL, what);
    if (!st)
        return;
    snprintf(what, sizeof(what), "flatfile tail (%s): the intact records are all there", name);
    BT_EQ_INT(ff_present(st, 3), want, what);
    if (kind == TAIL_ZEROS)
        snprintf(what, sizeof(what), "flatfile tail (%s): taken for the clean end, not cut",
                 name);
    else
        snprintf(what, sizeof(what), "flatfile tail (%s): the damaged tail was cut off", name);
    BT_EQ_INT(file_size(path), (long long)keep, what);
    snprintf(what, sizeof(what), "flatfile tail (%s): writes go on after it", name);
    BT_CHECK(put(st, "rec4", 4, "value of record 4", 17) == BACKEND_OK, what);
    ops->close(st);
    st = store_open(section, BACKEND_DURABLE_SYNC);
    snprintf(what, sizeof(what), "flatfile tail (%s): and survive another reopen", name);
    BT_CHECK(st && ff_present(st, 4) == (want | 8u), what);
    if (st)
        ops->close(st);
}

/* Damage in a record followed by records of later epochs: refused. The
 * same damage when every later record shares its epoch (one NONE-mode
 * session, nothing synced in between) counts as a torn tail. */
static void test_ff_middle(void)
{
    static const struct {
        enum backend_durability d;
        const char *name;
    } runs[] = {{BACKEND_DURABLE_SYNC, "sync"}, {BACKEND_DURABLE_NONE, "none"}};
    for (int r = 0; r < 2; r++) {
        char section[64], dir[4200], path[4300], what[200], err[512] = "";
        snprintf(section, sizeof(section), "ff-middle-%s", runs[r].name);
        section_dir(dir, sizeof(dir), section);
        snprintf(path, sizeof(path), "%s/flatfile.log", dir);
        if (ff_write_records(section, runs[r].d, 5) != 0) {
            BT_CHECK(0, "flatfile middle: write records");
            continue;
        }
        size_t len = 0, off[8];
        unsigned char *f = slurp(path, &len);
        if (!f || ff_records(f, len, off, 8) != 5) {
            BT_CHECK(0, "flatfile middle: the log holds 5 records");
            free(f);
            continue;
        }
        f[off[1] + 30] ^= 0x01;      /* the payload of record 2 */
        spit(path, f, len, "wb");
        free(f);
        int rc = 0;
        struct backend_store *st =
            store_open_with(section, runs[r].d, NULL, &rc, err, sizeof(err));
        if (runs[r].d == BACKEND_DURABLE_SYNC) {
            BT_CHECK(st == NULL && rc == BACKEND_CORRUPT && strstr(err, "corrupt in the middle"),
                     "flatfile middle (synced records after it): open refuses with "
                     "BACKEND_CORRUPT");
            printf("# %s\n", err);
            snprintf(what, sizeof(what), "flatfile middle: ... and leaves the file alone");
            BT_EQ_INT(file_size(path), (long long)len, what);
        } else {
            BT_CHECK(st != NULL, "flatfile middle (one unsynced session): opens, as a torn tail");
            if (st)
                BT_EQ_INT(ff_present(st, 5), 1, "flatfile middle (one unsynced session): "
                          "records from the damaged one on were cut");
        }
        if (st)
            ops->close(st);
    }
}

/* The bytes of a flat-file log that its records fill (header included). */
static size_t ff_used(const char *path)
{
    size_t len = 0, off[64], n;
    unsigned char *f = slurp(path, &len);
    if (!f)
        return 0;
    n = ff_records(f, len, off, 64);
    size_t used = n ? off[n - 1] + 12 + le32(f + off[n - 1] + 4) : 32;
    free(f);
    return used;
}

/* preallocate: with durability batch the log file runs ahead of its
 * records by zeros (whole pages); close cuts them; preallocate=0 appends
 * only. */
static void test_ff_prealloc(void)
{
    static const char *const none[] = {"preallocate=0", NULL};
    for (int r = 0; r < 2; r++) {
        char section[64], dir[4200], path[4300], what[200], k[16], v[64];
        snprintf(section, sizeof(section), "ff-prealloc-%d", r);
        section_dir(dir, sizeof(dir), section);
        snprintf(path, sizeof(path), "%s/flatfile.log", dir);
        struct backend_store *st =
            store_open_with(section, BACKEND_DURABLE_BATCH, r ? none : NULL, NULL, NULL, 0);
        BT_CHECK(st != NULL, "flatfile preallocate: opens");
        if (!st)
            continue;
        int ok = 1;
        for (int i = 1; i <= 20; i++) {
            snprintf(k, sizeof(k), "rec%d", i);
            snprintf(v, sizeof(v), "value of record %d", i);
            ok &= put(st, k, strlen(k), v, strlen(v)) == BACKEND_OK;
        }
        char err[256];
        ok &= ops->sync(st, err, sizeof err) == BACKEND_OK;
        BT_CHECK(ok, "flatfile preallocate: 20 writes and a sync");
        off_t size = file_size(path);
        size_t used = ff_used(path);
        if (r == 0) {
            snprintf(what, sizeof(what), "flatfile preallocate (default 1M): the file runs at "
                     "least 512 KiB of zeros ahead of its %zu bytes of records (%lld)", used,
                     (long long)size);
            BT_CHECK(size >= (off_t)(used + (512u << 10)) && size % 4096 == 0, what);
        } else {
            BT_EQ_INT(size, (long long)used, "flatfile preallocate=0: the file ends with its "
                      "last record");
        }
        ops->close(st);
        BT_EQ_INT(file_size(path), (long long)used, "flatfile preallocate: close leaves the "
                  "records only");
        st = store_open(section, BACKEND_DURABLE_BATCH);
        BT_CHECK(st && ff_present(st, 20) == 0xfffffu, "flatfile preallocate: every record "
                 "after a reopen");
        if (st)
            ops->close(st);
    }
}

/* A leftover flatfile.log.compact is removed; bad headers are refused. */
static void test_ff_files(void)
{
    char dir[4200], path[4300], err[512] = "";
    if (ff_write_records("ff-files", BACKEND_DURABLE_BATCH, 2) != 0) {
        BT_CHECK(0, "flatfile files: write records");
        return;
    }
    section_dir(dir, sizeof(dir), "ff-files");
    snprintf(path, sizeof(path), "%s/flatfile.log.compact", dir);
    spit(path, "half a compaction", 17, "wb");
    struct backend_store *st = store_open("ff-files", BACKEND_DURABLE_BATCH);
    BT_CHECK(st && ff_present(st, 2) == 3 && file_size(path) < 0,
             "flatfile files: a leftover .compact file is removed, the log is used");
    if (st)
        ops->close(st);

    static const struct {
        const char *bytes;
        size_t n;
        const char *name;
    } bad[] = {
        {"TBLDFL", 6, "flatfile files: a log shorter than its header is refused"},
        {"this is no flat-file log at all, just some text.", 48,
         "flatfile files: a file without the header is refused"},
    };
    for (int i = 0; i < 2; i++) {
        char section[32];
        snprintf(section, sizeof(section), "ff-bad-%d", i);
        section_dir(dir, sizeof(dir), section);
        mkdir(dir, 0755);
        snprintf(path, sizeof(path), "%s/flatfile.log", dir);
        spit(path, bad[i].bytes, bad[i].n, "wb");
        int rc = 0;
        err[0] = 0;
        st = store_open_with(section, BACKEND_DURABLE_BATCH, NULL, &rc, err, sizeof(err));
        BT_CHECK(st == NULL && rc == BACKEND_CORRUPT && err[0], bad[i].name);
        printf("# %s\n", err);
        if (st)
            ops->close(st);
    }
}

/* Overwrites and deletes with a small compaction threshold: the log stays
 * small, a cursor open across compactions keeps working, and a reopen
 * finds the latest values. */
static void test_ff_compaction(void)
{
    /* zeros written ahead too, fewer than the 1 MiB bound below */
    static const char *const cparams[] = {"compact-min-bytes=64K", "compact-garbage-pct=50",
                                          "compact-step-bytes=8K", "preallocate=128K", NULL};
    char dir[4200], path[4300];
    section_dir(dir, sizeof(dir), "ff-compact");
    snprintf(path, sizeof(path), "%s/flatfile.log", dir);
    struct backend_store *st = store_open_with("ff-compact", BACKEND_DURABLE_BATCH, cparams,
                                               NULL, NULL, 0);
    BT_CHECK(st != NULL, "flatfile compaction: open");
    if (!st)
        return;
    enum { NKEY = 200, ROUNDS = 60, VLEN = 600 };
    char k[16], v[VLEN];
    int ok = 1;
    struct backend_iter *it = NULL;
    int cursor_seen = 0, cursor_ok = 1;
    char last_key[16] = "";
    off_t max_size = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (r == 1)     /* a cursor over the 200 keys, read slowly from now on */
            ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0);
        for (int i = 0; i < NKEY; i++) {
            snprintf(k, sizeof(k), "key%04d", i);
            memset(v, 'a' + r % 26, sizeof(v));
            char tag[32];
            memcpy(v, tag, (size_t)snprintf(tag, sizeof(tag), "%04d:%04d", i, r));
            ok &= put(st, k, strlen(k), v, sizeof(v)) == BACKEND_OK;
            if (it && i % 40 == 0 && r > 0) {   /* the cursor moves on slowly */
                const void *gk, *gv;
                size_t gkl, gvl;
                int rc = bt_next(it, &gk, &gkl, &gv, &gvl);
                if (rc == 1) {
                    char kk[16] = "";
                    memcpy(kk, gk, gkl < 15 ? gkl : 15);
                    if (strcmp(kk, last_key) <= 0 || gvl != VLEN) {
                        if (cursor_ok)
                            printf("# cursor: %s after %s, value length %zu\n", kk, last_key,
                                   gvl);
                        cursor_ok = 0;
                    }
                    snprintf(last_key, sizeof(last_key), "%s", kk);
                    cursor_seen++;
                } else if (rc < 0) {
                    printf("# cursor: iter_next returned %d\n", rc);
                    cursor_ok = 0;
                }
            }
        }
        bta_sync(ops, st, NULL, 0);
        off_t sz = file_size(path);
        if (sz > max_size)
            max_size = sz;
    }
    if (it)
        ops->iter_close(it);
    BT_CHECK(ok, "flatfile compaction: 12,000 overwrites of 200 keys");
    BT_CHECK(cursor_ok && cursor_seen > 50,
             "flatfile compaction: a cursor open across compactions stays ordered");
    printf("# log size: largest %lld bytes, now %lld (written about %d)\n", (long long)max_size,
           (long long)file_size(path), NKEY * ROUNDS * (VLEN + 40));
    BT_CHECK(max_size < 1024 * 1024, "flatfile compaction: the log never grew past 1 MiB");
    for (int i = 0; i < NKEY; i += 2) {
        snprintf(k, sizeof(k), "key%04d", i);
        del(st, k, strlen(k));
    }
    ops->close(st);
    st = store_open_with("ff-compact", BACKEND_DURABLE_BATCH, cparams, NULL, NULL, 0);
    BT_CHECK(st != NULL, "flatfile compaction: reopen");
    if (!st)
        return;
    ok = scan_count(st) == NKEY / 2;
    for (int i = 1; i < NKEY && ok; i += 2) {
        snprintf(k, sizeof(k), "key%04d", i);
        memset(v, 'a' + (ROUNDS - 1) % 26, sizeof(v));
        char tag[32];
        memcpy(v, tag, (size_t)snprintf(tag, sizeof(tag), "%04d:%04d", i, ROUNDS - 1));
        ok = get_is(st, k, strlen(k), v, sizeof(v));
    }
    BT_CHECK(ok, "flatfile compaction: after reopen, the latest values and no deleted keys");
    ops->close(st);
}

/* ---- flatfile: a failed fdatasync is rolled back, then writes work ---- */

/* The value of key i in round r of test_ff_sync_fail. */
static void ffsf_value(char *v, size_t vl, int i, int r)
{
    memset(v, 'a' + r % 26, vl);
    char tag[32];
    memcpy(v, tag, (size_t)snprintf(tag, sizeof(tag), "%04d:%04d", i, r));
}

/* 1 when every one of the n keys holds its round-r value. */
static int ffsf_all(struct backend_store *st, int n, int r)
{
    char k[16], v[600];
    for (int i = 0; i < n; i++) {
        snprintf(k, sizeof(k), "key%04d", i);
        ffsf_value(v, sizeof(v), i, r);
        if (!get_is(st, k, strlen(k), v, sizeof(v)))
            return 0;
    }
    return 1;
}

/* Writes round r of keys [lo, hi): 0, or the first failure. */
static int ffsf_round(struct backend_store *st, int lo, int hi, int r)
{
    char k[16], v[600];
    for (int i = lo; i < hi; i++) {
        snprintf(k, sizeof(k), "key%04d", i);
        ffsf_value(v, sizeof(v), i, r);
        int rc = put(st, k, strlen(k), v, sizeof(v));
        if (rc != BACKEND_OK)
            return rc;
    }
    return BACKEND_OK;
}

/* A failed fdatasync (EIO, or ENOSPC as from a file system that allocates
 * at writeback) drops every write since the last good sync: reads show
 * the durable state at once (overwrites and deletes undone, inserts gone),
 * a cursor open across the rollback stays ordered and never shows a
 * dropped key, writes are refused while fsyncs fail, and once they work an
 * apply of no writes (the server's probe) recovers: writes work again, and
 * a reopen finds exactly the acknowledged writes. In BATCH mode a
 * compaction is running when the sync fails. */
static void test_ff_sync_fail(enum backend_durability d, const char *mode, int fail_sync)
{
    static const char *const cparams[] = {"compact-min-bytes=64K", "compact-garbage-pct=50",
                                          "compact-step-bytes=8K", NULL};
    char section[64], dir[4200], what[256], err[512];
    const char *kind = fail_sync == 2 ? "ENOSPC" : "EIO";
    snprintf(section, sizeof(section), "ff-syncfail-%s-%s", mode, kind);
    section_dir(dir, sizeof(dir), section);
    struct backend_store *st = store_open_with(section, d, cparams, NULL, NULL, 0);
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): open", mode, kind);
    BT_CHECK(st != NULL, what);
    if (!st)
        return;
    enum { NKEY = 200 };
    int batch = d == BACKEND_DURABLE_BATCH;
    /* rounds 0 and 1 of every key: enough garbage to start a compaction */
    int ok = ffsf_round(st, 0, NKEY, 0) == BACKEND_OK && ffsf_round(st, 0, NKEY, 1) == 0 &&
             bta_sync(ops, st, NULL, 0) == BACKEND_OK;
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): two rounds written", mode,
             kind);
    BT_CHECK(ok, what);

    struct backend_iter *it = NULL;
    ops->iter_open(st, NULL, 0, NULL, 0, &it, NULL, 0);
    const void *gk, *gv;
    size_t gkl, gvl;
    int seen = bt_next(it, &gk, &gkl, &gv, &gvl) == 1;   /* at key0000 */

    /* overwrites of every key: in BATCH mode a compaction starts */
    faultfs_arm(dir, -1, fail_sync);
    int rc = ffsf_round(st, 0, NKEY, 2);
    if (rc == BACKEND_OK)
        rc = del(st, "key0150", 7);
    if (rc == BACKEND_OK)
        rc = put(st, "new0", 4, "x", 1);                /* an insert */
    if (rc == BACKEND_OK)
        rc = bta_sync(ops, st, err, sizeof(err));
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): the %s fails with %s", mode,
             kind, batch ? "sync" : "write", fail_sync == 2 ? "BACKEND_FULL" : "BACKEND_IOERR");
    BT_EQ_INT(rc, fail_sync == 2 ? BACKEND_FULL : BACKEND_IOERR, what);
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): reads show the durable state "
             "at once", mode, kind);
    BT_CHECK(ffsf_all(st, NKEY, 1) && get_absent(st, "new0", 4), what);

    char last[16] = "key0000";
    int ordered = seen;
    while (bt_next(it, &gk, &gkl, &gv, &gvl) == 1) {
        char kk[16] = "";
        memcpy(kk, gk, gkl < 15 ? gkl : 15);
        if (strcmp(kk, last) <= 0 || strcmp(kk, "new0") == 0 || gvl != 600)
            ordered = 0;
        snprintf(last, sizeof(last), "%s", kk);
        seen++;
    }
    ops->iter_close(it);
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): a cursor open across the "
             "rollback returns every key once, in order, and no dropped one", mode, kind);
    BT_CHECK(ordered && seen == NKEY, what);

    struct backend_write none = {BACKEND_PUT, "", 0, NULL, 0};
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): while fsyncs fail, an apply "
             "of no writes fails and writes are refused", mode, kind);
    BT_CHECK(bt_apply(st, &none, 0, NULL, 0) != BACKEND_OK &&
             put(st, "new1", 4, "x", 1) != BACKEND_OK && get_absent(st, "new1", 4), what);

    faultfs_disarm();
    err[0] = 0;
    rc = bt_apply(st, &none, 0, err, sizeof(err));
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): once fsyncs work, an apply "
             "of no writes recovers", mode, kind);
    BT_EQ_INT(rc, BACKEND_OK, what);
    if (rc)
        printf("# %s\n", err);
    ok = ffsf_round(st, 100, NKEY, 3) == BACKEND_OK && put(st, "new2", 4, "y", 1) == 0 &&
         bta_sync(ops, st, NULL, 0) == BACKEND_OK;
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): writes work again", mode,
             kind);
    BT_CHECK(ok, what);
    ops->close(st);

    st = store_open_with(section, d, cparams, NULL, NULL, 0);
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): reopen", mode, kind);
    BT_CHECK(st != NULL, what);
    if (!st)
        return;
    char k[16], v[600];
    ok = get_absent(st, "new0", 4) && get_absent(st, "new1", 4) && get_is(st, "new2", 4, "y", 1);
    for (int i = 0; i < NKEY; i++) {
        snprintf(k, sizeof(k), "key%04d", i);
        ffsf_value(v, sizeof(v), i, i < 100 ? 1 : 3);   /* round 2 was dropped */
        ok &= get_is(st, k, strlen(k), v, sizeof(v));
    }
    snprintf(what, sizeof(what), "flatfile sync failure (%s, %s): after a reopen, exactly the "
             "acknowledged writes", mode, kind);
    BT_CHECK(ok, what);
    ops->close(st);
}

void test_durable_all(void)
{
    /* A shared store (-s: a database server) is opened by many processes
       by design and is not written through this process's files, so
       the exclusive lock and the disk-full injection (faultfs) do not
       apply to it. */
    if (!bt_section_cmd)
        test_lock();
    test_kill(BACKEND_DURABLE_SYNC, "sync", 4);
    test_kill(BACKEND_DURABLE_BATCH, "batch", 4);
    if (bt_section_cmd) {
        printf("# shared store (-s): exclusive lock and disk-full checks not run\n");
    } else {
        test_diskfull(BACKEND_DURABLE_SYNC, "sync");
        test_diskfull(BACKEND_DURABLE_BATCH, "batch");
    }
    if (ops == &backend_leveldb_ops)
        test_ldb_small_disk();
    if (ops == &backend_flatfile_ops) {
        test_ff_tail(TAIL_HALF_RECORD, "half a record");
        test_ff_tail(TAIL_GARBAGE, "garbage");
        test_ff_tail(TAIL_ZEROS, "zeros");
        test_ff_tail(TAIL_SHORT_HEADER, "a short header");
        test_ff_tail(TAIL_HALF_THEN_ZEROS, "half a record, then zeros");
        test_ff_tail(TAIL_BAD_CRC, "bad checksum in the last record");
        test_ff_middle();
        test_ff_prealloc();
        test_ff_files();
        test_ff_compaction();
        test_ff_sync_fail(BACKEND_DURABLE_BATCH, "batch", 1);
        test_ff_sync_fail(BACKEND_DURABLE_BATCH, "batch", 2);
        test_ff_sync_fail(BACKEND_DURABLE_SYNC, "sync", 1);
    }
}
