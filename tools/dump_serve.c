/* dump_serve.c - the body of the admin listener's GET /export (see
 * dump_export.h): an export of the running server's store that is one
 * instant's snapshot while the loop goes on serving.
 *
 * LevelDB cursors read an implicit snapshot taken when they are opened,
 * so there the one cursor of struct dump_export is advanced a piece per
 * loop turn as the client takes the data (core/conn.c calls fill when the
 * connection's output has room): writes go on meanwhile and are not seen.
 * The memory and flatfile cursors show the live store (backends/backend.h),
 * and so may a plug-in's: there the whole export is written in the loop
 * turn of the request, into an unlinked temporary file (under $TMPDIR),
 * which is then sent in pieces. No write can come between, so it is a
 * snapshot too; the loop stalls while it is written (README, "Backup and
 * restore", gives the measured stall per million entities). */
#include "tools/dump_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/http.h"
#include "core/log.h"

/* One GET /export in progress. */
struct dump_stream {
    struct dump_export *x;       /* snapshot cursor (LevelDB), or NULL */
    FILE *tmp;                   /* the export already written, or NULL */
    struct buf head;             /* catalogue lines not yet sent */
    size_t head_off;
    char account[64], table[64]; /* the filters x points to */
    unsigned long long nentities;
};

/* Frees a stream (struct response_stream.free). */
static void stream_free(void *arg)
{
    struct dump_stream *ds = arg;
    if (ds->x) {
        unsigned long long nt;
        dump_export_counts(ds->x, &nt, &ds->nentities);
    }
    log_info("admin: export ended after %llu entities", ds->nentities);
    dump_export_free(ds->x);
    if (ds->tmp)
        fclose(ds->tmp);
    buf_free(&ds->head);
    free(ds);
}

/* The next piece of the body (struct response_stream.fill). */
static int stream_fill(void *arg, struct buf *out, size_t max)
{
    struct dump_stream *ds = arg;
    if (ds->head_off < ds->head.len) {
        size_t n = ds->head.len - ds->head_off < max ? ds->head.len - ds->head_off : max;
        buf_append(out, ds->head.data + ds->head_off, n);
        ds->head_off += n;
        return 1;
    }
    if (ds->tmp) {
        buf_reserve(out, max);
        size_t n = fread(out->data + out->len, 1, max, ds->tmp);
        out->len += n;
        out->data[out->len] = '\0';
        if (ferror(ds->tmp)) {
            log_error("admin: export: reading the temporary file failed");
            return -1;
        }
        return n < max ? 0 : 1;
    }
    char err[512] = "";
    int r = dump_export_step(ds->x, out, max, err, sizeof err);
    if (r < 0)
        log_error("admin: export: %s", err);
    return r;
}

/* Whether the cursors of this backend read a snapshot. */
static int snapshot_cursors(const struct backend_ops *ops)
{
    return ops == &backend_leveldb_ops;
}

/* Writes the whole export of x into ds->tmp now. */
static int write_all(struct dump_stream *ds, char *err, size_t errlen)
{
    uint64_t t0 = clock_mono_us(), t1;
    ds->tmp = tmpfile();
    if (!ds->tmp) {
        snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
        return -1;
    }
    struct buf b;
    buf_init(&b);
    int r;
    do {
        r = dump_export_step(ds->x, &b, 1 << 20, err, errlen);
        if (r >= 0 && b.len && fwrite(b.data, 1, b.len, ds->tmp) != b.len) {
            snprintf(err, errlen, "writing a temporary file failed: %s", strerror(errno));
            r = -1;
        }
        buf_reset(&b);
    } while (r > 0);
    buf_free(&b);
    if (r < 0)
        return -1;
    if (fflush(ds->tmp) != 0 || fseek(ds->tmp, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "writing a temporary file failed: %s", strerror(errno));
        return -1;
    }
    unsigned long long nt;
    dump_export_counts(ds->x, &nt, &ds->nentities);
    dump_export_free(ds->x);
    ds->x = NULL;
    t1 = clock_mono_us();
    log_info("admin: export of %llu entities written in one loop turn in %.3f s "
             "(this backend's cursors are not snapshots)", ds->nentities,
             (double)(t1 - t0) / 1e6);
    return 0;
}

int dump_serve_start(void *src, const char *account, const char *table,
                     struct response_stream *s, char *err, size_t errlen)
{
    const struct dump_source *ds_src = src;
    struct dump_stream *ds = calloc(1, sizeof *ds);
    if (!ds)
        abort();
    buf_init(&ds->head);
    snprintf(ds->account, sizeof ds->account, "%s", account ? account : "");
    snprintf(ds->table, sizeof ds->table, "%s", table ? table : "");
    if (kv_defers(ds_src->kv)) {
        /* its calls complete later, and the admin listener does not wait
           on a coroutine: the store's own tools export such a store */
        snprintf(err, errlen, "GET /export is not available on a backend that completes its calls "
                              "later (%s)", kv_ops(ds_src->kv)->name);
        buf_free(&ds->head);
        free(ds);
        return 501;
    }
    ds->x = dump_export_new(ds_src->kv, account ? ds->account : NULL,
                            table ? ds->table : NULL, err, errlen);
    int rc = ds->x ? dump_export_catalogue(ds->x, &ds->head, err, errlen) : -1;
    if (rc == 0 && !snapshot_cursors(kv_ops(ds_src->kv)))
        rc = write_all(ds, err, errlen);
    if (rc != 0) {
        dump_export_free(ds->x);
        if (ds->tmp)
            fclose(ds->tmp);
        buf_free(&ds->head);
        free(ds);
        return rc == 1 ? 404 : 500;
    }
    s->fill = stream_fill;
    s->free = stream_free;
    s->arg = ds;
    return 0;
}
