/* test_ffarena.c - the flat-file index's start-up arena
 * (backends/ffindex.c, ffidx_arena_reserve and ffidx_arena_done). A
 * reserved block is faulted in with small pages while a checkpoint's
 * nodes are built into it (huge pages are slow to get on a machine that
 * has handed its free memory back to a hypervisor), and turned into huge
 * pages by a thread once the load is done (lookups in a large index miss
 * the TLB far less). The nodes must read back the same after that, and
 * freeing the index while the thread works must stop it first. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "backends/ffindex.h"
#include "tests/unit/tap.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define BLOCK ((uint64_t)48 << 20)

/* KiB of huge pages in the mappings overlapping [base, base + size), from
 * /proc/self/smaps; -1 when it cannot be read. */
static long huge_kib(const void *base, size_t size)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    char line[512];
    int in = 0;
    long kib = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long s, e;
        long v;
        if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = s < hi && e > lo;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
            kib += v;
    }
    fclose(f);
    return kib;
}

/* Whether this kernel makes huge pages on request: a scratch mapping of
 * two huge pages, touched, collapsed. */
static int collapse_works(void)
{
    size_t sz = (size_t)8 << 20;
    char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 0;
    char *a = (char *)(((uintptr_t)m + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
    memset(a, 1, (size_t)2 << 20);
    int ok = madvise(a, (size_t)2 << 20, MADV_COLLAPSE) == 0;
    munmap(m, sz);
    return ok;
}

static void key_of(uint64_t i, char *k)
{
    snprintf(k, 32, "pk%04u\x01rk%012llu", (unsigned)(i / 100000), (unsigned long long)i);
}

/* Builds nodes into ix's reserved arena, as a checkpoint load does, until
 * they fill about three quarters of it; returns how many. */
static uint64_t fill(struct ffidx *ix)
{
    struct skl_node *tail[SKL_MAX_HEIGHT] = {NULL};
    char k[32];
    uint64_t i = 0;
    while (ix->chunks && ix->chunks->used < BLOCK / 4 * 3) {
        key_of(i, k);
        struct ffidx_node *n = ffidx_node_arena(ix, k, strlen(k));
        if (!n)
            break;
        n->vlen = (uint32_t)(i % 1000);
        n->loc[0] = i * 1000;
        ffidx_append(ix, n, tail);
        i++;
    }
    return i;
}

/* Every node found again, with its own value location. */
static int all_found(struct ffidx *ix, uint64_t count)
{
    char k[32];
    for (uint64_t i = 0; i < count; i++) {
        key_of(i, k);
        struct ffidx_node *n = ffidx_find(ix, k, strlen(k));
        if (!n || n->loc[0] != i * 1000 || n->vlen != i % 1000)
            return 0;
    }
    return 1;
}

int main(void)
{
    struct ffidx ix;
    ffidx_init(&ix, 42);
    ffidx_arena_reserve(&ix, BLOCK);
    TEST_CHECK(ix.chunks != NULL, "a block is reserved for the expected nodes");
    TEST_CHECK(ix.fill != NULL, "a thread faults the block in");
    uint64_t count = fill(&ix);
    TEST_CHECK(count > 100000, "the nodes go into the reserved block");
    const struct ffidx_chunk *block = ix.chunks;
    TEST_EQ_INT(huge_kib(block, block->size), 0, "small pages while the nodes are built");

    ffidx_arena_done(&ix);
    TEST_CHECK(ix.fill == NULL, "the fault-in thread is gone once the load is done");
    TEST_CHECK(block->size < BLOCK, "the block's unused end is given back");
    if (!collapse_works()) {
        printf("# skipped: this kernel does not make huge pages on request (MADV_COLLAPSE); "
               "the block is left to khugepaged\n");
    } else {
        /* the thread makes it huge pages in well under a second per 100 MB;
           allow much longer on a busy machine */
        long kib = 0;
        for (int t = 0; t < 600; t++) {
            kib = huge_kib(block, block->size);
            if (kib >= (long)(block->size / 1024 / 2))
                break;
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        TEST_CHECK(kib >= (long)(block->size / 1024 / 2), "then the block becomes huge pages");
    }
    TEST_CHECK(all_found(&ix, count), "every node reads back the same after that");
    ffidx_free(&ix);
    TEST_CHECK(ix.huge == NULL && ix.chunks == NULL, "freeing the index stops the thread");

    /* freed at once, while the thread is still at work on the block */
    ffidx_init(&ix, 43);
    ffidx_arena_reserve(&ix, BLOCK);
    count = fill(&ix);
    ffidx_arena_done(&ix);
    TEST_CHECK(all_found(&ix, count / 10), "a second index reads back");
    ffidx_free(&ix);
    TEST_CHECK(ix.huge == NULL && ix.chunks == NULL,
               "freeing it while its block becomes huge pages returns");
    return test_done();
}
