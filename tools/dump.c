/* dump.c - tabled export / tabled import (see dump.h).
 *
 * Both work on the store itself, opened like the server opens it (same
 * --backend, --data, --backend-option, --config), so they work with every
 * backend and keep Timestamps and ETags exactly. LevelDB locks its
 * directory and the flat file is written by one process only: stop the
 * server first (for a service: systemctl stop tabled). Export of a stopped
 * store is a consistent snapshot by construction. Import is idempotent:
 * tables are created when missing, entities are put (an existing entity of
 * the same keys is replaced), in transactions of --batch entities. */
#include "tools/dump.h"
#include "tools/dump_int.h"
#include "tools/dump_export.h"
#include "codec/dump_line.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/arena.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/version.h"
#include "codec/props.h"
#include "codec/edm.h"
#include "store/entity.h"
#include "codec/entity_json.h"
#include "store/host.h"
#include "store/keys.h"
#include "store/tables.h"

#define DUMP_MAX_FLAGS 64

static const char dump_usage[] =
    "Usage: tabled export [--account NAME] [--table NAME] [-o FILE] [STORE OPTIONS]\n"
    "       tabled export --admin URL [--admin-token T] [--account NAME] [--table NAME]\n"
    "                     [-o FILE]\n"
    "       tabled import [--batch N] [--from-azurite] [--account NAME] FILE [STORE OPTIONS]\n"
    "       tabled import --admin URL [--admin-token T] FILE\n"
    "STORE OPTIONS are tabled's own: --config FILE, --backend NAME, --data DIR,\n"
    "--backend-option N=V, --durability MODE. Stop the server of that store first,\n"
    "or export from (import into) the running server with --admin (its admin\n"
    "listener, e.g. http://127.0.0.1:10003; the token defaults to\n"
    "$TABLED_ADMIN_TOKEN). FILE - reads standard input.\n"
    "--from-azurite reads Azurite's __azurite_db_table__.json (--account then\n"
    "names the account its data goes to; default: the account recorded in it).\n";

/* Backend diagnostics go to stderr. */
static void dump_backend_log(enum backend_log_level level, const char *msg)
{
    fprintf(stderr, "tabled: %s%s\n", level == BACKEND_LOG_ERROR ? "error: " : "", msg);
}

/* kv's waiter: one turn of the tool's event loop, in which a backend that
   completes its calls later (postgres) finishes the call waited for. */
static void dump_wait_once(void *arg)
{
    event_base_loop(arg, EVLOOP_ONCE);
}

/* Closes the store and its event loop (either may be missing). */
static void dump_close(struct dump *d)
{
    kv_close(d->kv);
    d->kv = NULL;
    if (d->host)
        host_free(d->host);
    if (d->base)
        event_base_free(d->base);
    d->host = NULL;
    d->base = NULL;
}

/* Opens the configured store and its table catalogue. The store gets an
 * event loop as in the server, so a backend whose calls complete later
 * works too: every call is waited for by turning that loop (the tools run
 * one call at a time). */
static int dump_open(struct dump *d, char *err, size_t errlen)
{
    d->ops = backend_lookup(d->st.backend, err, errlen);
    if (!d->ops)
        return -1;
    d->base = event_base_new();
    d->host = d->base ? host_new(d->base) : NULL;
    if (!d->host) {
        snprintf(err, errlen, "cannot create an event loop");
        dump_close(d);
        return -1;
    }
    struct backend_options bo = {
        .data_dir = d->st.data_dir,
        .durability = d->st.durability == DURABILITY_SYNC ? BACKEND_DURABLE_SYNC
                      : d->st.durability == DURABILITY_NONE ? BACKEND_DURABLE_NONE
                                                             : BACKEND_DURABLE_BATCH,
        .params = d->st.params,
        .log = dump_backend_log,
        .host = host_hooks(d->host),
    };
    char msg[512];
    if (kv_open(d->ops, &bo, &d->kv, msg, sizeof msg) != 0) {
        if (d->ops->version >= 2 && (d->ops->caps & BACKEND_CAP_SHARED))
            snprintf(err, errlen, "cannot open the %s store: %s", d->ops->name, msg);
        else
            snprintf(err, errlen, "cannot open the %s store in %.300s: %s (is the server "
                     "running?)", d->ops->name, d->st.data_dir, msg);
        dump_close(d);
        return -1;
    }
    kv_set_waiter(d->kv, dump_wait_once, d->base);
    d->tc = tables_load(d->kv, err, errlen);
    if (!d->tc) {
        dump_close(d);
        return -1;
    }
    return 0;
}

/* Writes the whole buffer to f and empties it. */
static int dump_flush_out(struct buf *b, FILE *f)
{
    if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
        return -1;
    b->len = 0;
    return 0;
}

/* Exports service properties, tables and entities of the stopped store
 * to f (the lines come from tools/dump_export.c, as for GET /export). */
static int dump_export(struct dump *d, FILE *f, char *err, size_t errlen)
{
    struct buf out;
    buf_init(&out);
    int rc = -1, r;
    struct dump_export *x = dump_export_new(d->kv, d->account, d->table, 0, err, errlen);
    if (!x)
        goto out;
    if (dump_export_catalogue(x, &out, err, errlen) != 0)
        goto out;
    do {
        r = dump_export_step(x, &out, 1 << 20, err, errlen);
        if (r >= 0 && dump_flush_out(&out, f) < 0) {
            snprintf(err, errlen, "write failed: %s", strerror(errno));
            goto out;
        }
        dump_export_counts(x, &d->ntables, &d->nentities);
        if (d->progress && r > 0)
            fprintf(stderr, "\rexported %llu entities", d->nentities);
    } while (r > 0);
    if (r < 0)
        goto out;
    if (fflush(f) != 0) {
        snprintf(err, errlen, "write failed: %s", strerror(errno));
        goto out;
    }
    if (d->progress)
        fprintf(stderr, "\n");
    rc = 0;
out:
    if (rc < 0 && !err[0])
        snprintf(err, errlen, "export failed: %s", strerror(errno));
    dump_export_free(x);
    buf_free(&out);
    return rc;
}

/* Commits the pending writes in one apply(). */
int dump_batch_commit(struct dump *d, struct dump_batch *bt, char *err, size_t errlen)
{
    if (!bt->n)
        return 0;
    if (kv_apply(d->kv, bt->w, NULL, bt->n, 0, NULL, err, errlen) != 0)
        return -1;
    bt->n = 0;
    arena_reset(bt->a);
    return 0;
}

/* Adds a put (copying key and value) and commits when the batch is full. */
int dump_batch_put(struct dump *d, struct dump_batch *bt, const void *k, size_t kl,
                     const void *v, size_t vl, char *err, size_t errlen)
{
    void *kc = arena_alloc(bt->a, kl ? kl : 1), *vc = arena_alloc(bt->a, vl ? vl : 1);
    memcpy(kc, k, kl);
    memcpy(vc, v, vl);
    bt->w[bt->n++] = (struct backend_write){BACKEND_PUT, kc, kl, vc, vl};
    if ((long)bt->n >= d->batch || bt->n == sizeof bt->w / sizeof bt->w[0])
        return dump_batch_commit(d, bt, err, errlen);
    return 0;
}

/* Rounds of a create on a shared store that lost the id counter to a
 * front end's create (as protocol/ops/ops_tables.c). */
#define DUMP_CREATE_ROUNDS 64

/* A table missing from the catalogue loaded at start, on a store shared
 * with running front ends (postgres): its id is claimed from the store's
 * counter in the apply that writes its row (store/tables.h), and a table
 * a front end created meanwhile is read and used (given the file's ACL
 * when it has one). NULL on error. */
static const struct table_info *dump_create_shared(struct dump *d, const char *account,
                                                   const char *name, const unsigned char *acl,
                                                   size_t acl_len, char *err, size_t errlen)
{
    size_t nl = strlen(name);
    struct buf ck, cv, k, v;
    buf_init(&ck);
    buf_init(&cv);
    buf_init(&k);
    buf_init(&v);
    const struct table_info *t = NULL;
    for (int round = 0; round < DUMP_CREATE_ROUNDS; round++) {
        struct backend_cond cond[2] = {{BACKEND_EXPECT_ABSENT, 0}, {BACKEND_EXPECT_ANY, 0}};
        uint64_t id;
        buf_reset(&ck);
        buf_reset(&cv);
        buf_reset(&k);
        buf_reset(&v);
        if (tables_claim_id(d->tc, d->kv, &id, &ck, &cv, &cond[1], err, errlen) != 0)
            break;
        struct table_info nt = {.id = id, .name = (char *)name, .name_len = nl,
                                .acl = (unsigned char *)acl, .acl_len = acl_len};
        keys_table(&k, account, name, nl);
        tables_encode(&nt, &v);
        struct backend_write w[2] = {{BACKEND_PUT, k.data, k.len, v.data, v.len},
                                     {BACKEND_PUT, ck.data, ck.len, cv.data, cv.len}};
        struct kv_result res = {0, 0, 0};
        int rc = kv_apply(d->kv, w, cond, 2, 0, &res, err, errlen);
        if (rc == BACKEND_OK) {
            d->ntables++;
            t = tables_add(d->tc, account, id, name, nl, acl, acl_len);
            break;
        }
        if (rc != BACKEND_CONFLICT)
            break;
        if (res.failed == 0) {          /* a front end created it: use that one */
            struct arena *a = arena_new(4096);
            struct table_info cur;
            rc = tables_read(d->kv, a, account, name, nl, &cur, err, errlen);
            if (rc == BACKEND_OK)
                t = tables_add(d->tc, account, cur.id, cur.name, cur.name_len, cur.acl,
                               cur.acl_len);
            arena_free(a);
            if (rc == BACKEND_NOTFOUND)
                continue;               /* and deleted it again: create it */
            break;
        }
        err[0] = '\0';                  /* the counter moved: claim again */
    }
    if (!t && !err[0])
        snprintf(err, errlen, "creating table %s/%s kept racing other creates", account, name);
    buf_free(&ck);
    buf_free(&cv);
    buf_free(&k);
    buf_free(&v);
    return t;
}

/* The table of that name, created (with its ACL when given) when missing;
 * an existing table gets the ACL of the file. NULL on error. */
const struct table_info *dump_ensure_table(struct dump *d, struct dump_batch *bt,
                                           const char *account, const char *name,
                                           const unsigned char *acl, size_t acl_len,
                                           int set_acl, char *err, size_t errlen)
{
    size_t nl = strlen(name);
    if (!dump_name_ok(account, 0) || !dump_name_ok(name, 1)) {
        snprintf(err, errlen, "invalid account or table name '%.64s/%.64s'", account, name);
        return NULL;
    }
    const struct table_info *t = tables_find(d->tc, account, name, nl);
    if (t && !set_acl)
        return t;
    /* A table row is committed at once, so that the catalogue and the
     * store agree whatever happens next. */
    if (dump_batch_commit(d, bt, err, errlen) != 0)
        return NULL;
    if (!t && kv_shared(d->kv))
        return dump_create_shared(d, account, name, acl, acl_len, err, errlen);
    struct table_info nt = {.id = t ? t->id : tables_next_id(d->tc),
                            .account = (char *)account, .name = (char *)(t ? t->name : name),
                            .name_len = t ? t->name_len : nl,
                            .acl = (unsigned char *)acl, .acl_len = acl_len};
    struct buf k, v;
    buf_init(&k);
    buf_init(&v);
    keys_table(&k, account, name, nl);
    tables_encode(&nt, &v);
    struct backend_write w = {BACKEND_PUT, k.data, k.len, v.data, v.len};
    int rc = kv_apply(d->kv, &w, NULL, 1, 0, NULL, err, errlen);
    buf_free(&k);
    buf_free(&v);
    if (rc != 0)
        return NULL;
    if (t) {
        tables_set_acl(d->tc, t, acl, acl_len);
        return t;
    }
    d->ntables++;
    return tables_add(d->tc, account, nt.id, name, nl, acl, acl_len);
}

/* Shows the running count on a terminal. */
void dump_show_progress(struct dump *d, int done)
{
    if (d->progress && (done || d->nentities % 10000 == 0))
        fprintf(stderr, "\rimported %llu entities%s", d->nentities, done ? "\n" : "");
}

/* What an invalid file's message ends with. */
#define DUMP_NOTHING "; nothing was imported (fix the file or export it again, then import it)"

/* The validation pass: reads the whole file as the import will, checking
 * the header (first line, format DUMP_FORMAT), every line (dump_line_read)
 * and every service-properties document, without touching any store. 0,
 * or -1 with a message naming the line. */
static int dump_import_check(FILE *f, char *err, size_t errlen)
{
    struct arena *a = arena_new(65536);
    char *line = NULL, why[512];
    size_t cap = 0;
    ssize_t len;
    unsigned long lineno = 0;
    int rc = -1;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        struct dump_line l;
        arena_reset(a);
        if (dump_line_read(a, line, (size_t)len, &l, why, sizeof why) != 0) {
            if (lineno == 1)
                snprintf(err, errlen, "line 1: not the header of a tabled export "
                         "({\"tabled-export\":%d,...}): %s" DUMP_NOTHING, DUMP_FORMAT, why);
            else
                snprintf(err, errlen, "line %lu: %s" DUMP_NOTHING, lineno, why);
            goto out;
        }
        if (lineno == 1 && l.kind != DUMP_LINE_HEADER) {
            snprintf(err, errlen, "line 1: not the header of a tabled export "
                     "({\"tabled-export\":%d,...})" DUMP_NOTHING, DUMP_FORMAT);
            goto out;
        }
        if (lineno > 1 && l.kind == DUMP_LINE_HEADER) {
            snprintf(err, errlen, "line %lu: a second header line" DUMP_NOTHING, lineno);
            goto out;
        }
        if (l.kind == DUMP_LINE_HEADER && l.format != DUMP_FORMAT) {
            snprintf(err, errlen, "line 1: export format version %lld, but this tabled reads "
                     "version %d only; nothing was imported (import it with the tabled release "
                     "that wrote it, or export again with this one)", l.format, DUMP_FORMAT);
            goto out;
        }
        if (l.kind == DUMP_LINE_PROPS && !props_stored_valid((const char *)l.raw, l.raw_len)) {
            snprintf(err, errlen, "line %lu: \"service-properties\" is not a service "
                     "properties document as tabled export writes it" DUMP_NOTHING, lineno);
            goto out;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "read failed: %s" DUMP_NOTHING, strerror(errno));
        goto out;
    }
    if (lineno == 0) {
        snprintf(err, errlen, "the file is empty, not a tabled export" DUMP_NOTHING);
        goto out;
    }
    rc = 0;
out:
    free(line);
    arena_free(a);
    return rc;
}

/* Imports a tabled export file that dump_import_check found valid. A
 * failure of the store part way is reported with what was committed
 * (importing again is idempotent). */
static int dump_import(struct dump *d, FILE *f, char *err, size_t errlen)
{
    struct dump_batch *bt = calloc(1, sizeof *bt);
    struct arena *ea = arena_new(65536);
    bt->a = arena_new(1 << 20);
    struct buf k, v;
    buf_init(&k);
    buf_init(&v);
    char *line = NULL, why[512] = "";
    size_t cap = 0;
    ssize_t len;
    unsigned long lineno = 0;
    int rc = -1;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        struct dump_line l;
        arena_reset(ea);
        if (dump_line_read(ea, line, (size_t)len, &l, why, sizeof why) != 0) {
            snprintf(err, errlen, "line %lu: %s (the file changed while it was imported?)",
                     lineno, why);
            goto out;
        }
        if (l.kind == DUMP_LINE_HEADER)
            continue;
        if (l.kind == DUMP_LINE_PROPS) {
            k.len = 0;
            keys_props(&k, l.account);
            if (dump_batch_put(d, bt, k.data, k.len, l.raw, l.raw_len, why, sizeof why) < 0)
                goto failed;
            continue;
        }
        const struct table_info *t =
            dump_ensure_table(d, bt, l.account, l.table, l.raw, l.raw_len,
                              l.kind == DUMP_LINE_TABLE, why, sizeof why);
        if (!t)
            goto failed;
        if (l.kind == DUMP_LINE_TABLE)
            continue;
        k.len = 0;
        v.len = 0;
        keys_entity(&k, t->id, l.e.pk, l.e.pk_len, l.e.rk, l.e.rk_len);
        entity_encode(&l.e, &v);
        if (dump_batch_put(d, bt, k.data, k.len, v.data, v.len, why, sizeof why) < 0)
            goto failed;
        d->nentities++;
        dump_show_progress(d, 0);
    }
    if (ferror(f)) {
        snprintf(why, sizeof why, "read failed: %s", strerror(errno));
        goto failed;
    }
    if (dump_batch_commit(d, bt, why, sizeof why) < 0 || kv_sync(d->kv, why, sizeof why) != 0)
        goto failed;
    dump_show_progress(d, 1);
    rc = 0;
    goto out;
failed:
    snprintf(err, errlen, "import stopped at line %lu: %s; the lines before it were imported "
             "but for at most the last %ld entities (importing is idempotent: run it again "
             "once the store is fixed)", lineno, why, d->batch);
out:
    free(line);
    buf_free(&k);
    buf_free(&v);
    arena_free(bt->a);
    free(bt);
    arena_free(ea);
    return rc;
}

/* The import's input as a seekable stream (read twice: checked, then
 * imported): the file itself when it is a regular file, else (standard
 * input, a pipe) a copy spooled to an unlinked temporary file in $TMPDIR
 * (default /tmp). NULL with a message. */
static FILE *dump_input_open(const char *path, char *err, size_t errlen)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *in = is_stdin ? stdin : fopen(path, "r");
    if (!in) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (!is_stdin && fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode))
        return in;
    const char *dir = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/tabled-import-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmpl);
    FILE *sp = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (!sp) {
        snprintf(err, errlen, "cannot create a temporary copy of %s in %.300s: %s (set "
                 "TMPDIR to a writable directory)", is_stdin ? "standard input" : path,
                 dir && *dir ? dir : "/tmp", strerror(errno));
        if (fd >= 0)
            close(fd);
        if (fd >= 0)
            unlink(tmpl);
        if (!is_stdin)
            fclose(in);
        return NULL;
    }
    unlink(tmpl);
    char chunk[65536];
    size_t n;
    int bad = 0;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0 && !bad)
        bad = fwrite(chunk, 1, n, sp) != n;
    bad = bad || ferror(in) || fflush(sp) != 0 || fseek(sp, 0, SEEK_SET) != 0;
    if (bad)
        snprintf(err, errlen, "cannot copy %s to a temporary file in %.300s: %s",
                 is_stdin ? "standard input" : path, dir && *dir ? dir : "/tmp",
                 strerror(errno));
    if (!is_stdin)
        fclose(in);
    if (bad) {
        fclose(sp);
        return NULL;
    }
    return sp;
}

/* tabled export --admin URL: the file from a running server. */
static int dump_export_admin(struct dump *d)
{
    char err[1024] = "";
    uint64_t t0 = clock_mono_us(), t1;
    FILE *f = d->output ? fopen(d->output, "w") : stdout;
    int rc = f ? dump_fetch(d, f, err, sizeof err) : -1;
    if (!f)
        snprintf(err, sizeof err, "cannot write %s: %s", d->output, strerror(errno));
    if (f && fflush(f) != 0 && rc == 0) {
        snprintf(err, sizeof err, "write failed: %s", strerror(errno));
        rc = -1;
    }
    if (f && f != stdout && fclose(f) != 0 && rc == 0) {
        snprintf(err, sizeof err, "cannot write %s: %s", d->output, strerror(errno));
        rc = -1;
    }
    t1 = clock_mono_us();
    if (rc < 0) {
        fprintf(stderr, "tabled export: %s\n", err);
        return 1;
    }
    fprintf(stderr, "tabled export: %llu tables, %llu entities in %.2f s\n", d->ntables,
            d->nentities, (double)(t1 - t0) / 1e6);
    return 0;
}

/* tabled import --admin URL FILE: the whole file is read and checked
 * first (as for a store: an invalid file sends nothing), then sent to the
 * running server. */
static int dump_import_admin(struct dump *d)
{
    char err[1024] = "";
    uint64_t t0 = clock_mono_us();
    d->progress = isatty(2);
    FILE *in = dump_input_open(d->input, err, sizeof err);
    int rc = in ? 0 : -1;
    if (in && (dump_import_check(in, err, sizeof err) != 0 || fseek(in, 0, SEEK_SET) != 0)) {
        if (!err[0])
            snprintf(err, sizeof err, "cannot read %s again: %s", d->input, strerror(errno));
        rc = -1;
    }
    if (rc == 0)
        rc = dump_push(d, in, err, sizeof err);
    if (in && in != stdin)
        fclose(in);
    if (rc < 0) {
        fprintf(stderr, "tabled import: %s\n", err);
        return 1;
    }
    fprintf(stderr, "tabled import: %llu tables, %llu entities in %.2f s\n", d->ntables,
            d->nentities, (double)(clock_mono_us() - t0) / 1e6);
    return 0;
}

int dump_main(int argc, char **argv, dump_store_args store_args)
{
    static struct dump d;
    char *rest[DUMP_MAX_FLAGS + 2];
    int nrest = 0;
    char err[1024] = "";
    int is_export = strcmp(argv[0], "export") == 0;

    memset(&d, 0, sizeof d);
    d.batch = 1000;
    rest[nrest++] = "tabled";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(dump_usage, stdout);
            return 0;
        } else if ((strcmp(a, "--account") == 0 || strcmp(a, "--table") == 0 ||
                    strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 ||
                    strcmp(a, "--batch") == 0) && next) {
            if (a[2] == 'a')
                d.account = next;
            else if (a[2] == 't')
                d.table = next;
            else if (a[2] == 'b')
                d.batch = atol(next);
            else
                d.output = next;
            i++;
        } else if ((strcmp(a, "--admin") == 0 || strcmp(a, "--admin-token") == 0) && next) {
            if (a[7] == '-')
                d.admin_token = next;
            else
                d.admin = next;
            i++;
        } else if (strcmp(a, "--from-azurite") == 0) {
            d.from_azurite = 1;
        } else if ((a[0] != '-' || strcmp(a, "-") == 0) && !d.input && !is_export) {
            d.input = a;
        } else if (nrest + 2 <= DUMP_MAX_FLAGS) {
            /* A store option; its value is the next argument unless given
             * as --name=value (tabled's only switches are below). */
            rest[nrest++] = argv[i];
            if (a[0] == '-' && !strchr(a, '=') && strcmp(a, "--throttle") != 0 &&
                strcmp(a, "--version") != 0 && next)
                rest[nrest++] = argv[++i];
        } else {
            fprintf(stderr, "tabled %s: too many arguments\n", argv[0]);
            return 2;
        }
    }
    rest[nrest] = NULL;
    if (is_export ? (d.from_azurite || d.input || strcmp(argv[0], "export") != 0)
                  : (!d.input || d.table || d.output)) {
        fprintf(stderr, "%s", dump_usage);
        return 2;
    }
    if (d.admin) {
        if (nrest > 1) {
            fprintf(stderr, "tabled %s: --admin %s a running server: no store options\n",
                    argv[0], is_export ? "reads" : "writes into");
            return 2;
        }
        if (!is_export && (d.from_azurite || d.account)) {
            fprintf(stderr, "tabled import: --admin takes tabled export files; import an "
                    "Azurite database into a stopped store (tabled import --from-azurite FILE "
                    "--backend NAME --data DIR), or start the server on Azurite's folder "
                    "with -l DIR --import-azurite-db\n");
            return 2;
        }
        if (!d.admin_token)
            d.admin_token = getenv("TABLED_ADMIN_TOKEN");
        return is_export ? dump_export_admin(&d) : dump_import_admin(&d);
    }
    if (d.batch < 1 || d.batch > 1000) {
        fprintf(stderr, "tabled import: --batch expects 1..1000\n");
        return 2;
    }
    int rc = store_args(nrest, rest, &d.st, err, sizeof err);
    if (rc != 0) {
        if (rc < 0)
            fprintf(stderr, "tabled %s: %s\n", argv[0], err);
        fflush(stdout);
        return rc < 0 ? 2 : 0;
    }
    /* The memory store lives only as long as this tool: an import into it
     * would be lost when the tool exits, so it is refused before anything
     * is read. */
    if (!is_export) {
        const struct backend_ops *ops = backend_lookup(d.st.backend, err, sizeof err);
        if (ops && strcmp(ops->name, "memory") == 0) {
            fprintf(stderr, "tabled import: the memory store lives only as long as this tool, "
                    "so the import would be lost when it exits; to seed a running server "
                    "(an in-memory one too) give --admin and the URL of its admin listener "
                    "(--admin-port), or give --backend and --data of a lasting store such as "
                    "leveldb or flatfile (with its server stopped)\n");
            return 2;
        }
        err[0] = '\0';
    }
    d.progress = isatty(2);
    /* An import reads and checks its whole input before the store is
     * opened: an invalid file imports nothing and creates no store. */
    FILE *in = NULL;
    struct dump_azurite *az = NULL;
    if (!is_export && d.from_azurite)
        az = dump_azurite_load(&d, d.input, err, sizeof err);
    else if (!is_export && (in = dump_input_open(d.input, err, sizeof err)) &&
             (dump_import_check(in, err, sizeof err) != 0 || fseek(in, 0, SEEK_SET) != 0)) {
        if (!err[0])
            snprintf(err, sizeof err, "cannot read %s again: %s", d.input, strerror(errno));
        if (in != stdin)
            fclose(in);
        in = NULL;
    }
    if (!is_export && !in && !az) {
        fprintf(stderr, "tabled import: %s\n", err);
        return 1;
    }
    if (dump_open(&d, err, sizeof err) < 0) {
        if (in && in != stdin)
            fclose(in);
        dump_azurite_free(az);
        fprintf(stderr, "tabled %s: %s\n", argv[0], err);
        return 1;
    }
    uint64_t t0 = clock_mono_us(), t1;
    FILE *f = NULL;
    if (is_export) {
        f = d.output ? fopen(d.output, "w") : stdout;
        rc = f ? dump_export(&d, f, err, sizeof err) : -1;
        if (!f)
            snprintf(err, sizeof err, "cannot write %s: %s", d.output, strerror(errno));
        if (f && f != stdout && fclose(f) != 0 && rc == 0) {
            snprintf(err, sizeof err, "cannot write %s: %s", d.output, strerror(errno));
            rc = -1;
        }
    } else if (az) {
        rc = dump_azurite_import(&d, az, err, sizeof err);
        dump_azurite_free(az);
    } else {
        rc = dump_import(&d, in, err, sizeof err);
        if (in != stdin)
            fclose(in);
    }
    t1 = clock_mono_us();
    tables_free(d.tc);
    dump_close(&d);
    if (rc < 0) {
        fprintf(stderr, "tabled %s: %s\n", argv[0], err);
        return 1;
    }
    fprintf(stderr, "tabled %s: %llu tables, %llu entities in %.2f s\n", argv[0], d.ntables,
            d.nentities, (double)(t1 - t0) / 1e6);
    return 0;
}
