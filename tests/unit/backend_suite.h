/* backend_suite.h - helpers shared by the parts of the backend conformance
 * suite (backend_suite.c: the checks every backend passes;
 * test_backend_v2.c: interface version 2 and deferred completion;
 * test_backend_durable.c: reopen, kill -9, disk-full and flat-file
 * recovery checks of the durable backends). */
#ifndef TABLED_BACKEND_SUITE_H
#define TABLED_BACKEND_SUITE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backends/backend.h"
#include "tests/unit/backend_adapter.h"

/* The backend under test and how it is run. */
extern const struct backend_ops *ops;
extern char base_dir[4096];             /* this backend's directory */
extern const char *const *bt_params;    /* backend_options.params */
extern int bt_durable;                  /* data survives close/reopen */
extern const char *bt_backend_name;     /* name or plug-in path */
extern const char *bt_section_cmd;      /* -s CMD: a shared store per section, or NULL */

/* Runs every section against one backend: name is a built-in name or a
   plug-in path, label names its checks. dir NULL: a fresh temporary
   directory, removed afterwards. version: the interface version it must
   have (0: any). durable: the data survives close and reopen (the reopen,
   kill -9 and disk-full sections run). params: its options, or NULL.
   Returns 0, or -1 when the backend could not even be found. */
int bt_run_backend(const char *label, const char *name, int version, int durable,
                   const char *const *params, const char *dir);
/* Names the checks that follow "[label] ..." (outside bt_run_backend). */
void bt_set_label(const char *label);
/* Checks made so far through bt_check, and how many failed. */
void bt_totals(int *n, int *failed);

/* One TAP check, named with the label of the backend run ("[leveldb]
   point: get hit"). tap.h keeps its counters per file, so every part of
   the suite reports through this one function of backend_suite.c. */
int bt_check(int ok, const char *file, int line, const char *what);
#define BT_CHECK(cond, what) bt_check(!!(cond), __FILE__, __LINE__, (what))
#define BT_EQ_INT(a, b, what)                                                          \
    do {                                                                               \
        long long bt_a = (long long)(a), bt_b = (long long)(b);                        \
        if (!bt_check(bt_a == bt_b, __FILE__, __LINE__, (what)))                       \
            printf("#   got %lld, expected %lld\n", bt_a, bt_b);                       \
    } while (0)

struct kv {
    const void *k;
    size_t kl;
    const void *v;
    size_t vl;
};

/* The options -s CMD printed for a section (an empty list without -s;
   NULL when the command failed). */
const char *const *section_params(const char *section);
/* Path of one section's data directory (base_dir/section). */
void section_dir(char *out, size_t cap, const char *section);
/* Opens the store of one section; NULL (with a diagnostic) on failure.
   extra, when not NULL, holds more params appended to bt_params. */
struct backend_store *store_open(const char *section, enum backend_durability d);
struct backend_store *store_open_with(const char *section, enum backend_durability d,
                                      const char *const *extra, int *rc_out, char *err,
                                      size_t errlen);
/* The vtable's methods through the adapter (version 2 when present,
   deferred calls waited for): bt_get lends the value until the next
   bt_get, bt_next the entry until the next bt_next. */
int bt_get(struct backend_store *st, const void *k, size_t kl, const void **v, size_t *vl,
           char *err, size_t errlen);
int bt_apply(struct backend_store *st, const struct backend_write *w, size_t n, char *err,
             size_t errlen);
int bt_next(struct backend_iter *it, const void **k, size_t *kl, const void **v, size_t *vl);
int put(struct backend_store *st, const void *k, size_t kl, const void *v, size_t vl);
int del(struct backend_store *st, const void *k, size_t kl);
int get_is(struct backend_store *st, const void *k, size_t kl, const void *v, size_t vl);
int get_absent(struct backend_store *st, const void *k, size_t kl);
int key_cmp(const void *a, size_t alen, const void *b, size_t blen);
void print_key(const char *label, const void *k, size_t kl);
int iter_matches(struct backend_iter *it, const struct kv *exp, size_t n);
int scan_matches(struct backend_store *st, const void *start, size_t sl, const void *end,
                 size_t el, const struct kv *exp, size_t n);
/* Number of entries a full scan returns (-1 on error). */
long scan_count(struct backend_store *st);
uint64_t rnd(void);

/* test_backend_v2.c */
void test_registry_versions(const char *top);
void test_v1_gating(void);
void test_v2_all(void);

/* test_backend_durable.c */
void test_durable_all(void);
/* "test_backend --writer ...": the process that test_kill() kills. */
int kill_writer_main(int argc, char **argv);
/* Fault injection (tests/crash/faultfs.c, linked into test_backend):
   writes and syncs of files under prefix fail once budget bytes were
   written (budget 0: at once); fail_sync makes fdatasync/fsync fail. */
void faultfs_arm(const char *prefix, long long budget, int fail_sync);
void faultfs_disarm(void);
long long faultfs_failures(void);
/* statvfs() under the prefix reports bytes free (-1: the truth). */
void faultfs_set_free(long long bytes);

#endif
