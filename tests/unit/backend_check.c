/* backend_check.c - tabled-backend-check, the installed checker for
 * storage backend plug-ins (doc/plugins.md).
 *
 *     tabled-backend-check PLUGIN.so [--backend-option NAME=VALUE]...
 *                          [--data DIR] [--durable] [--ops N] [--seed N]
 *
 * Loads the plug-in through tabled's own loader (backends/registry.c:
 * the same version and vtable checks as tabled --backend PATH) and runs
 * the suites make check runs on the built-in backends, compiled from the
 * same files: the conformance suite (backend_suite.c, test_backend_v2.c:
 * point operations, order and ranges, atomic batches, large values,
 * limits, two stores, cursors across writes, many tables, conditional
 * writes and counts, deferred completion when the plug-in defers), the
 * model suite (backend_model.c: random work compared with an in-memory
 * model) and, with --durable, the durability and fault suite
 * (test_backend_durable.c: reopen, kill -9 of a writer process, disk full
 * and failed fsync injected by tests/crash/faultfs.c, which this program
 * links so that the plug-in's own write() and fsync() calls go through
 * it). Every check prints one TAP line; the last line is "N passed, M
 * failed", and the exit status is 0 only when nothing failed (1: a check
 * failed, 2: usage). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "tests/unit/backend_adapter.h"
#include "tests/unit/backend_model.h"
#include "tests/unit/backend_suite.h"

#define BC_MAX_OPTS 32

/* The usage text (--help, and after a usage error). */
static void bc_usage(FILE *f)
{
    fputs("usage: tabled-backend-check PLUGIN.so [--backend-option NAME=VALUE]...\n"
          "                            [--data DIR] [--durable] [--ops N] [--seed N]\n"
          "\n"
          "Loads a storage backend plug-in the way tabled --backend PLUGIN.so does and\n"
          "runs the backend conformance suite, a randomised comparison against an\n"
          "in-memory model and, with --durable, the durability and fault checks\n"
          "(reopen, kill -9 of a writer, disk full and failed fsync). Prints one TAP\n"
          "line per check and \"N passed, M failed\"; exits 1 when a check failed.\n"
          "\n"
          "  --backend-option NAME=VALUE  passed to the plug-in's open() (repeatable),\n"
          "                               as tabled --backend-option passes it\n"
          "  --data DIR                   data directory (default: a temporary one,\n"
          "                               removed at the end); each section uses a\n"
          "                               subdirectory of it\n"
          "  --durable                    the plug-in keeps its data in files under the\n"
          "                               data directory: run reopen, kill -9, disk-full\n"
          "                               and failed-fsync checks too\n"
          "  --ops N                      random operations of the model suite\n"
          "                               (default 20000)\n"
          "  --seed N                     seed of the model suite (default fixed)\n"
          "  -h, --help                   this text\n"
          "\n"
          "The guide for plug-in authors is doc/plugins.md in tabled's sources.\n",
          f);
}

/* Prints a usage error and what to do about it; returns the exit status. */
static int bc_usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "tabled-backend-check: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "Run tabled-backend-check --help for the options.\n");
    return 2;
}

/* Makes dir and its missing parents (mkdir -p); 0 or -1 with errno. */
static int bc_mkdirs(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Runs the model suite in dir (created by the plug-in's open). */
static void bc_model(const char *name, const char *dir, const char *const *params, long nops,
                     unsigned long long seed)
{
    char err[512] = "";
    const struct backend_ops *ops = backend_lookup(name, err, sizeof err);
    if (!ops)
        return;         /* the conformance suite reported it */
    bt_set_label("model");
    printf("# model: %ld random operations, seed %llu, data under %s\n", nops, seed, dir);
    bm_init(seed);
    int bad_before = bta_violations();
    char what[160];
    snprintf(what, sizeof what, "%ld random operations agree with the model", nops);
    if (!BT_CHECK(bm_run(ops, dir, params, nops) == 0, what))
        printf("# the '#' lines above name the first operations that disagreed; rerun with "
               "--seed %llu to repeat them\n", seed);
    BT_EQ_INT(bta_violations() - bad_before, 0,
              "the backend kept the caller-visible rules of backend.h (PENDING, done())");
}

int main(int argc, char **argv)
{
    /* the writer process the kill -9 check starts (test_backend_durable.c) */
    if (argc > 1 && !strcmp(argv[1], "--writer"))
        return kill_writer_main(argc, argv);
    static const char *opts[BC_MAX_OPTS + 1];
    size_t nopts = 0;
    const char *plugin = NULL, *data = NULL;
    int durable = 0;
    long nops = 20000;
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bc_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--backend-option") || !strcmp(a, "-o")) {
            if (i + 1 >= argc || !strchr(argv[i + 1], '='))
                return bc_usage_error("--backend-option needs NAME=VALUE", NULL);
            if (nopts == BC_MAX_OPTS)
                return bc_usage_error("too many --backend-option (at most 32)", NULL);
            opts[nopts++] = argv[++i];
        } else if (!strncmp(a, "--backend-option=", 17)) {
            if (nopts == BC_MAX_OPTS)
                return bc_usage_error("too many --backend-option (at most 32)", NULL);
            opts[nopts++] = a + 17;
        } else if (!strcmp(a, "--data")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return bc_usage_error("--data needs a directory", NULL);
            data = argv[++i];
        } else if (!strcmp(a, "--durable")) {
            durable = 1;
        } else if (!strcmp(a, "--ops") || !strcmp(a, "--seed")) {
            char *end = NULL;
            if (i + 1 >= argc)
                return bc_usage_error("a number must follow", a);
            unsigned long long v = strtoull(argv[i + 1], &end, 10);
            if (!argv[i + 1][0] || *end || (!strcmp(a, "--ops") && (v < 1 || v > 100000000)))
                return bc_usage_error("not a number in range (--ops: 1 to 100000000)",
                                      argv[i + 1]);
            i++;
            if (!strcmp(a, "--ops"))
                nops = (long)v;
            else
                seed = v;
        } else if (a[0] == '-') {
            return bc_usage_error("unknown option", a);
        } else if (plugin) {
            return bc_usage_error("only one plug-in is checked per run; extra argument", a);
        } else {
            plugin = a;
        }
    }
    opts[nopts] = NULL;
    if (!plugin)
        return bc_usage_error("no plug-in given (the path of its .so file)", NULL);

    /* The loader takes a name without '/' for a built-in backend. */
    char path[4200];
    snprintf(path, sizeof path, "%s%s", strchr(plugin, '/') ? "" : "./", plugin);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "tabled-backend-check: %s is not a file: give the path of the "
                        "plug-in's shared object (.so)\n", path);
        return 2;
    }
    char err[512] = "";
    const struct backend_ops *ops = backend_lookup(path, err, sizeof err);
    if (!ops) {
        fprintf(stderr, "tabled-backend-check: tabled would refuse this plug-in: %s\n", err);
        fprintf(stderr, "It must export %s returning a filled struct backend_ops of "
                        "version 1 to %d (backends/backend.h; see doc/plugins.md).\n",
                TABLED_BACKEND_SYMBOL, TABLED_BACKEND_VERSION_MAX);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    printf("# plug-in %s: backend \"%s\", interface version %d%s\n", path, ops->name,
           ops->version, ops->version >= 2 && (ops->caps & BACKEND_CAP_DEFERS)
                             ? ", defers calls" : "");
    if (!durable)
        printf("# not --durable: reopen, kill -9, disk-full and failed-fsync checks are "
               "not run\n");

    char tmp[4096] = "";
    if (!data) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/tabled-backend-check-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            fprintf(stderr, "tabled-backend-check: cannot make a directory under %s: give "
                            "one with --data DIR\n", t && *t ? t : "/tmp");
            return 2;
        }
        data = tmp;
    }
    char suite_dir[4200], model_dir[4200];
    snprintf(suite_dir, sizeof suite_dir, "%s/suite", data);
    snprintf(model_dir, sizeof model_dir, "%s/model", data);
    if (bc_mkdirs(data) != 0) {
        fprintf(stderr, "tabled-backend-check: cannot make %s: %s: give a writable --data DIR\n",
                data, strerror(errno));
        return 2;
    }
    if (mkdir(suite_dir, 0700) != 0 && access(suite_dir, W_OK) != 0) {
        fprintf(stderr, "tabled-backend-check: cannot make %s: give a writable --data DIR\n",
                suite_dir);
        return 2;
    }
    bt_run_backend(ops->name, path, 0, durable, opts, suite_dir);
    bc_model(path, model_dir, opts, nops, seed);

    if (tmp[0]) {
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            printf("# could not remove %s\n", tmp);
    }
    int n, failed;
    bt_totals(&n, &failed);
    printf("1..%d\n", n);
    if (failed)
        printf("# %d checks failed: the \"not ok\" lines name them, the \"#\" lines before "
               "them say what the plug-in answered (doc/plugins.md explains the contract)\n",
               failed);
    printf("%d passed, %d failed\n", n - failed, failed);
    return failed ? 1 : 0;
}
