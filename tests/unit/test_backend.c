/* test_backend.c - the backend conformance suite under make check.
 *
 *     test_backend                     every built-in backend, and the
 *                                      example plug-in (version 1) and
 *                                      the deferred test plug-in when
 *                                      TOP_BUILDDIR is set (make check)
 *     test_backend [-n] [-o NAME=VALUE]... [-s CMD] BACKEND [DIR]
 *
 * BACKEND is a built-in name or a path to a plug-in .so. -n says the
 * backend is not durable (it loses its data on close, like "memory" and
 * the example plug-in that wraps it); -o passes a backend option; DIR is
 * the data directory (default: a fresh temporary one); -s CMD prepares a
 * store per section (backend_suite.c). The sections themselves are in
 * backend_suite.c, which the installed tabled-backend-check runs too;
 * here are the registry's checks and the list of backends make check
 * runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "tests/unit/backend_suite.h"

/* The plan line and exit status of every check (they are counted in
 * backend_suite.c, through bt_check). */
static int bt_done(void)
{
    int n, failed;
    bt_totals(&n, &failed);
    printf("1..%d\n", n);
    return failed ? 1 : 0;
}

/* The registry: built-in names, unknown names and bad plug-in paths. */
static void test_registry(void)
{
    char err[256] = "";
    const struct backend_ops *m = backend_lookup("memory", err, sizeof(err));
    BT_CHECK(m == &backend_memory_ops, "registry: 'memory' is the built-in memory backend");
    err[0] = 0;
    BT_CHECK(backend_lookup("no-such-backend", err, sizeof(err)) == NULL,
             "registry: unknown name fails");
    BT_CHECK(strstr(err, "no-such-backend") && strstr(err, "memory"),
             "registry: unknown-name error names the known backends");
    err[0] = 0;
    BT_CHECK(backend_lookup("/nonexistent/libnothing.so", err, sizeof(err)) == NULL && err[0],
             "registry: missing plug-in file fails with a message");
    BT_CHECK(backend_lookup("", NULL, 0) == NULL, "registry: empty name fails (no err buffer)");
    BT_CHECK(backend_lookup("leveldb", NULL, 0) == &backend_leveldb_ops &&
                 backend_lookup("flatfile", NULL, 0) == &backend_flatfile_ops,
             "registry: 'leveldb' and 'flatfile' are built in");
    err[0] = 0;
    backend_lookup("nope", err, sizeof(err));
    BT_CHECK(strstr(err, "leveldb") && strstr(err, "flatfile"),
             "registry: the unknown-name error lists leveldb and flatfile");
    const char *top = getenv("TOP_BUILDDIR");
    if (top && *top) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/tests/unit/.libs/libbadplugin.so", top);
        err[0] = 0;
        BT_CHECK(backend_lookup(path, err, sizeof(err)) == NULL && strstr(err, "version"),
                 "registry: a plug-in with another interface version is refused");
        printf("# %s\n", err);
        test_registry_versions(top);
    }
    BT_CHECK(backend_memory_ops.version == 3 && backend_leveldb_ops.version == 3 &&
                 backend_flatfile_ops.version == 3,
             "registry: the built-in backends are version 3");
    test_v1_gating();
}

/* A plug-in of backends/examples as make check builds it, or NULL. */
static const char *find_plugin(char *buf, size_t cap, const char *so)
{
    const char *top = getenv("TOP_BUILDDIR");
    if (!top || !*top)
        return NULL;
    snprintf(buf, cap, "%s/backends/examples/.libs/%s", top, so);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--writer"))
        return kill_writer_main(argc, argv);
    static const char *opts[17];
    size_t nopts = 0;
    int not_durable = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-n")) {
            not_durable = 1;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc && nopts < 16) {
            opts[nopts++] = argv[++i];
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            bt_section_cmd = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: test_backend [-n] [-o NAME=VALUE]... [-s CMD] [BACKEND [DIR]]\n");
            return 2;
        }
    }
    opts[nopts] = NULL;
    if (i < argc) {
        const char *name = argv[i];
        int durable = !not_durable && strcmp(name, "memory") != 0;
        bt_set_label("registry");
        test_registry();
        bt_run_backend(name, name, 0, durable, opts, i + 1 < argc ? argv[i + 1] : NULL);
        return bt_done();
    }

    bt_set_label("registry");
    test_registry();
    static const char *const compact[] = {"compact-min-bytes=256K", "compact-garbage-pct=40",
                                          "compact-step-bytes=16K", NULL};
    static const char *const small_ldb[] = {"write-buffer-size=256K", "cache-size=0", NULL};
    bt_run_backend("memory", "memory", 3, 0, NULL, NULL);
    bt_run_backend("leveldb", "leveldb", 3, 1, NULL, NULL);
    bt_run_backend("leveldb-small-memtable", "leveldb", 3, 1, small_ldb, NULL);
    bt_run_backend("flatfile", "flatfile", 3, 1, NULL, NULL);
    bt_run_backend("flatfile-compacting", "flatfile", 3, 1, compact, NULL);
    /* The plug-ins make check builds: the example (a version-1 plug-in),
       and the deferred test plug-in (every call completes from the event
       loop, at the next turn: deferred-ms=0 keeps the big sections quick)
       over leveldb (durable) and over memory. */
    static const char *const dfr_ldb[] = {"deferred-inner=leveldb", "deferred-ms=0", NULL};
    static const char *const dfr_mem[] = {"deferred-inner=memory", "deferred-ms=0", NULL};
    char plugin[4200];
    if (find_plugin(plugin, sizeof(plugin), "libcounting.so")) {
        bt_run_backend("plugin", plugin, 1, 0, NULL, NULL);
        find_plugin(plugin, sizeof(plugin), "libdeferred.so");
        bt_run_backend("deferred-leveldb", plugin, 2, 1, dfr_ldb, NULL);
        bt_run_backend("deferred-memory", plugin, 2, 0, dfr_mem, NULL);
    } else {
        printf("# TOP_BUILDDIR is not set: the plug-ins are not tested\n");
    }
    return bt_done();
}
