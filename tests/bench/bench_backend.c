/* bench_backend.c - throughput and memory of a backend under an entity-like
 * load (not part of make check; run with `make bench-backend`).
 *
 *     bench_backend [-n ENTITIES] [-v VALUE_BYTES] [-p ROWS_PER_PARTITION]
 *                   [-B WRITES_PER_APPLY] [-b BACKEND] [-d DIR]
 *
 * Keys look like entity keys (store/keys.h): 'e' be64(table id)
 * "pkNNNNNN" 0x00 "rkNNNNNNNNNN". Entities are inserted in a shuffled order,
 * then read back by point gets in another random order, then scanned whole
 * and partition by partition; durable backends are then closed and
 * reopened (recovery time). Peak RSS is VmHWM from /proc/self/status. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "store/kv.h"

#define BENCH_KEY_MAX 64

static uint64_t bench_rng = 0x9E3779B97F4A7C15ull;

/* xorshift64: fast deterministic pseudo-random numbers. */
static uint64_t bench_rand(void)
{
    uint64_t x = bench_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bench_rng = x;
    return x;
}

/* Seconds on the monotonic clock. */
static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes the key of entity i into k; returns its length. */
static size_t bench_key(unsigned char *k, size_t i, size_t rows_per_part)
{
    size_t n = 0;
    k[n++] = 'e';
    for (int b = 7; b >= 0; b--)
        k[n++] = (unsigned char)(b == 0 ? 1 : 0);   /* table id 1, big-endian */
    n += (size_t)sprintf((char *)k + n, "pk%06zu", i / rows_per_part);
    k[n++] = 0x00;
    n += (size_t)sprintf((char *)k + n, "rk%010zu", i % rows_per_part);
    return n;
}

/* Writes the prefix of partition p ('e' id "pkNNNNNN" 0x00) into k. */
static size_t bench_partition_prefix(unsigned char *k, size_t p)
{
    size_t n = 0;
    k[n++] = 'e';
    for (int b = 7; b >= 0; b--)
        k[n++] = (unsigned char)(b == 0 ? 1 : 0);
    n += (size_t)sprintf((char *)k + n, "pk%06zu", p);
    k[n++] = 0x00;
    return n;
}

/* Peak resident set size in KiB (VmHWM), or -1. */
static long bench_peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

/* A random permutation of 0..n-1 (Fisher-Yates). */
static size_t *bench_shuffle(size_t n)
{
    size_t *p = malloc(n * sizeof(*p));
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++)
        p[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = bench_rand() % i, t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
    return p;
}

/* Removes one entry of the temporary data directory. */
static int bench_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void bench_usage(void)
{
    fprintf(stderr, "usage: bench_backend [-n ENTITIES] [-v VALUE_BYTES] [-p ROWS_PER_PARTITION]\n"
                    "                     [-B WRITES_PER_APPLY] [-b BACKEND] [-d DIR]\n");
}

int main(int argc, char **argv)
{
    size_t n = 1000000, vsize = 1024, rows = 1000, batch = 1;
    const char *name = "memory", *dir = NULL;
    int c;
    while ((c = getopt(argc, argv, "n:v:p:B:b:d:h")) != -1) {
        switch (c) {
        case 'n': n = strtoul(optarg, NULL, 10); break;
        case 'v': vsize = strtoul(optarg, NULL, 10); break;
        case 'p': rows = strtoul(optarg, NULL, 10); break;
        case 'B': batch = strtoul(optarg, NULL, 10); break;
        case 'b': name = optarg; break;
        case 'd': dir = optarg; break;
        default: bench_usage(); return 2;
        }
    }
    if (n == 0 || rows == 0 || batch == 0 || vsize < 8 || vsize > 8 * 1024 * 1024) {
        bench_usage();
        return 2;
    }
    char err[512] = "", tmpdir[] = "/tmp/tabled-bench-XXXXXX";
    const struct backend_ops *ops = backend_lookup(name, err, sizeof(err));
    if (!ops) {
        fprintf(stderr, "bench_backend: %s\n", err);
        return 1;
    }
    if (!dir) {
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            return 1;
        }
        dir = tmpdir;
    }
    struct backend_options opt = {.data_dir = dir, .durability = BACKEND_DURABLE_NONE, .params = NULL};
    struct kv *st = NULL;
    if (kv_open(ops, &opt, &st, err, sizeof(err)) != BACKEND_OK) {
        fprintf(stderr, "bench_backend: open: %s\n", err);
        return 1;
    }
    size_t *order = bench_shuffle(n);
    unsigned char *vals = malloc(vsize * batch);
    unsigned char *keys = malloc(BENCH_KEY_MAX * batch);
    struct backend_write *w = malloc(batch * sizeof(*w));
    if (!order || !vals || !keys || !w) {
        fprintf(stderr, "bench_backend: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < vsize * batch; i++)
        vals[i] = (unsigned char)bench_rand();
    printf("backend %s: %zu entities, %zu-byte values, %zu rows per partition, %zu writes per apply\n",
           ops->name, n, vsize, rows, batch);
    long rss0 = bench_peak_rss_kib();

    /* Inserts in shuffled order. */
    double t0 = bench_now();
    for (size_t i = 0; i < n; i += batch) {
        size_t nb = n - i < batch ? n - i : batch;
        for (size_t j = 0; j < nb; j++) {
            unsigned char *k = keys + j * BENCH_KEY_MAX, *v = vals + j * vsize;
            memcpy(v, &order[i + j], sizeof(size_t) < 8 ? sizeof(size_t) : 8);
            w[j] = (struct backend_write){BACKEND_PUT, k, bench_key(k, order[i + j], rows), v, vsize};
        }
        if (kv_apply(st, w, NULL, nb, 0, NULL, err, sizeof(err)) != BACKEND_OK) {
            fprintf(stderr, "bench_backend: apply: %s\n", err);
            return 1;
        }
    }
    if (kv_sync(st, err, sizeof(err)) != BACKEND_OK) {
        fprintf(stderr, "bench_backend: sync: %s\n", err);
        return 1;
    }
    double t_ins = bench_now() - t0;
    long rss_loaded = bench_peak_rss_kib();

    /* Point gets in another random order. */
    free(order);
    order = bench_shuffle(n);
    if (!order)
        return 1;
    t0 = bench_now();
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char k[BENCH_KEY_MAX];
        const void *v = NULL;
        size_t vl = 0;
        if (kv_get(st, k, bench_key(k, order[i], rows), &v, &vl, err, sizeof(err)) != BACKEND_OK) {
            bad++;
            continue;
        }
        size_t idx = 0;
        memcpy(&idx, v, sizeof(size_t) < 8 ? sizeof(size_t) : 8);
        bad += vl != vsize || idx != order[i];
    }
    double t_get = bench_now() - t0;

    /* One scan over everything. */
    t0 = bench_now();
    struct kv_iter *it = NULL;
    size_t seen = 0, bytes = 0;
    if (kv_iter_open(st, NULL, 0, NULL, 0, &it, err, sizeof(err)) != BACKEND_OK) {
        fprintf(stderr, "bench_backend: iter_open: %s\n", err);
        return 1;
    }
    const void *k, *v;
    size_t kl, vl;
    while (kv_iter_next(it, &k, &kl, &v, &vl) == 1) {
        seen++;
        bytes += kl + vl;
    }
    kv_iter_close(it);
    double t_scan = bench_now() - t0;
    bad += seen != n;

    /* Partition scans (a query of one partition), in random order. */
    size_t nparts = (n + rows - 1) / rows, pscans = nparts < 1000 ? nparts : 1000, pseen = 0;
    t0 = bench_now();
    for (size_t s = 0; s < pscans; s++) {
        unsigned char lo[BENCH_KEY_MAX], hi[BENCH_KEY_MAX];
        size_t p = bench_rand() % nparts;
        size_t ll = bench_partition_prefix(lo, p);
        memcpy(hi, lo, ll);
        hi[ll - 1] = 0x01;              /* [pk 0x00, pk 0x01) */
        if (kv_iter_open(st, lo, ll, hi, ll, &it, err, sizeof(err)) != BACKEND_OK)
            return 1;
        while (kv_iter_next(it, &k, &kl, &v, &vl) == 1)
            pseen++;
        kv_iter_close(it);
    }
    double t_pscan = bench_now() - t0;

    printf("insert:          %10.0f entities/s  (%.2f s)\n", (double)n / t_ins, t_ins);
    printf("point get:       %10.0f gets/s      (%.2f s)\n", (double)n / t_get, t_get);
    printf("full scan:       %10.0f entities/s  %.0f MiB/s  (%.2f s)\n", (double)seen / t_scan,
           (double)bytes / t_scan / 1048576.0, t_scan);
    printf("partition scans: %10.0f scans/s     %.0f entities/s  (%zu scans, %zu entities)\n",
           (double)pscans / t_pscan, (double)pseen / t_pscan, pscans, pseen);
    printf("peak RSS (VmHWM): %ld MiB before load, %ld MiB loaded; payload %.0f MiB\n", rss0 / 1024,
           rss_loaded / 1024, (double)bytes / 1048576.0);
    kv_close(st);
    if (strcmp(ops->name, "memory") != 0) {
        /* Durable backends: how long a reopen (recovery, index rebuild)
           takes, and that it finds everything. */
        t0 = bench_now();
        if (kv_open(ops, &opt, &st, err, sizeof(err)) != BACKEND_OK) {
            fprintf(stderr, "bench_backend: reopen: %s\n", err);
            return 1;
        }
        double t_open = bench_now() - t0;
        size_t again = 0;
        if (kv_iter_open(st, NULL, 0, NULL, 0, &it, err, sizeof(err)) == BACKEND_OK) {
            while (kv_iter_next(it, &k, &kl, &v, &vl) == 1)
                again++;
            kv_iter_close(it);
        }
        printf("reopen:          %10.2f s (then %zu entities scanned in %.2f s); peak RSS %ld MiB\n",
               t_open, again, bench_now() - t0 - t_open, bench_peak_rss_kib() / 1024);
        bad += again != n;
        kv_close(st);
    }
    if (bad)
        printf("ERRORS: %zu entities missing or wrong\n", bad);
    free(order);
    free(vals);
    free(keys);
    free(w);
    if (dir == tmpdir && nftw(tmpdir, bench_rm, 16, FTW_DEPTH | FTW_PHYS) != 0)
        printf("data left in %s\n", tmpdir);
    return bad ? 1 : 0;
}
