/* test_backend_model.c - a backend against a model, with random work
 * (backend_model.c; tabled-backend-check runs it on a plug-in).
 *
 *     test_backend_model [BACKEND [OPS [SEED]]]
 *
 * Runs OPS random operations (default 200,000 on "memory", 20,000 on the
 * durable built-ins, which it runs too when no BACKEND is given, and under
 * make check on the deferred test plug-in over leveldb and memory: labels
 * deferred-leveldb, deferred-memory) through their version-2 methods,
 * each store compared with a plain array after every operation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "tests/unit/backend_adapter.h"
#include "tests/unit/backend_model.h"
#include "tests/unit/tap.h"

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    long nops = argc > 2 ? atol(argv[2]) : 0;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 0x9e3779b97f4a7c15ULL;
    bm_init(seed);
    /* The built-ins, and under make check the deferred test plug-in
       (every call completes from the event loop) over two of them. */
    static const char *const dfr_ldb[] = {"deferred-inner=leveldb", "deferred-ms=0", NULL};
    static const char *const dfr_mem[] = {"deferred-inner=memory", "deferred-ms=0", NULL};
    static const struct {
        const char *label, *name;   /* name: built-in, or plug-in under TOP_BUILDDIR */
        const char *const *params;
        long nops;
    } runs[] = {
        {"memory", "memory", NULL, 200000},
        {"flatfile", "flatfile", NULL, 20000},
        {"leveldb", "leveldb", NULL, 20000},
        {"deferred-leveldb", "backends/examples/.libs/libdeferred.so", dfr_ldb, 10000},
        {"deferred-memory", "backends/examples/.libs/libdeferred.so", dfr_mem, 20000},
    };
    const char *top = getenv("TOP_BUILDDIR");
    char tmpl[] = "/tmp/tabled-model-XXXXXX";
    char *dir = mkdtemp(tmpl);
    TEST_CHECK(dir != NULL, "temporary directory");
    if (!dir)
        return test_done();
    printf("# seed %llu\n", (unsigned long long)seed);
    for (size_t b = 0; b < sizeof runs / sizeof runs[0]; b++) {
        if (only && strcmp(only, runs[b].label) != 0)
            continue;
        char path[4200], err[256];
        const char *name = runs[b].name;
        if (strchr(name, '/')) {
            if (!top || !*top) {
                printf("# TOP_BUILDDIR is not set: %s is not tested\n", runs[b].label);
                continue;
            }
            snprintf(path, sizeof path, "%s/%s", top, name);
            name = path;
        }
        const struct backend_ops *ops = backend_lookup(name, err, sizeof err);
        if (!ops) {
            TEST_CHECK(0, err);
            continue;
        }
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/%s", dir, runs[b].label);
        long n = nops ? nops : runs[b].nops;
        char what[128];
        snprintf(what, sizeof what, "[%s] %ld random operations agree with the model",
                 runs[b].label, n);
        TEST_CHECK(bm_run(ops, sub, runs[b].params, n) == 0, what);
    }
    TEST_CHECK(bta_violations() == 0, "the backends kept the caller-visible rules of backend.h");
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", dir);
    return test_done();
}
