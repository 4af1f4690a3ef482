/* dump_int.h - what tools/dump.c shares with tools/dump_azurite.c,
 * tools/dump_fetch.c and tools/dump_push.c. */
#ifndef TABLED_DUMP_INT_H
#define TABLED_DUMP_INT_H
#include <stddef.h>
#include <stdio.h>

#include "backends/backend.h"
#include "core/arena.h"
#include "tools/dump.h"
#include "store/tables.h"

struct event_base;
struct host;

/* What one run works on. */
struct dump {
    struct dump_store st;            /* the store options (dump.h) */
    const struct backend_ops *ops;
    struct kv *kv;                   /* the open store (store/kv.h) */
    struct event_base *base;         /* its event loop, turned while a call */
    struct host *host;               /* completes later (store/host.h) */
    struct table_cache *tc;
    const char *account, *table;     /* export filters (NULL = all) */
    const char *output;              /* export file (NULL = stdout) */
    const char *admin;               /* export from (import into) the server of
                                        this admin URL, or NULL */
    const char *admin_token;         /* its bearer token, or NULL */
    const char *input;               /* import file ("-" = stdin) */
    int from_azurite;
    long batch;                      /* entities per import transaction */
    int progress;                    /* stderr is a terminal */
    unsigned long long nentities, ntables;
};

/* Writes collected for one import transaction (keys and values in the
 * arena, reset after each commit). */
struct dump_batch {
    struct backend_write w[1024];
    size_t n;
    struct arena *a;
};

/* Commits the pending writes in one apply(). 0 or -1. */
int dump_batch_commit(struct dump *d, struct dump_batch *bt, char *err, size_t errlen);
/* Adds a put (key and value copied) and commits when the batch is full. */
int dump_batch_put(struct dump *d, struct dump_batch *bt, const void *k, size_t kl,
                   const void *v, size_t vl, char *err, size_t errlen);
/* The table of that name, created when missing; with set_acl its ACL is
 * (re)written. NULL on error. */
const struct table_info *dump_ensure_table(struct dump *d, struct dump_batch *bt,
                                           const char *account, const char *name,
                                           const unsigned char *acl, size_t acl_len,
                                           int set_acl, char *err, size_t errlen);
/* The running count on a terminal (every 10000, and a final line). */
void dump_show_progress(struct dump *d, int done);
/* tabled import --from-azurite FILE, in two steps: load reads the whole
 * file and checks everything the import will write (names, ACLs, every
 * entity) without touching the store (NULL with a message when invalid);
 * import writes it into the open store (0 or -1); free forgets it. */
struct dump_azurite;
struct dump_azurite *dump_azurite_load(struct dump *d, const char *path, char *err,
                                       size_t errlen);
int dump_azurite_import(struct dump *d, struct dump_azurite *z, char *err, size_t errlen);
void dump_azurite_free(struct dump_azurite *z);
/* tabled export --admin URL: GET /export of a running server into out.
 * 0, or -1 with a message. */
int dump_fetch(struct dump *d, FILE *out, char *err, size_t errlen);
/* tabled import --admin URL FILE: in (an export file checked whole
 * already) sent to a running server's POST /import in pieces
 * (tools/dump_push.c); d->ntables and d->nentities count what it wrote.
 * 0, or -1 with a message naming the file's line. */
int dump_push(struct dump *d, FILE *in, char *err, size_t errlen);

#endif
