/* dump_serve.c - the body of the admin listener's GET /export (see
 * dump_export.h): an export of the running server's store that is one
 * instant's snapshot while the loop goes on serving.
 *
 * The export's entities come from a snap (store/snap.h) opened in the
 * loop turn of the request, together with the catalogue: LevelDB's cursor
 * reads its own snapshot; on the memory and flat file backends (and
 * plug-ins) the snap keeps, before each write, the state as of the start
 * of every key it has not passed yet. Either way the body is made in
 * pieces, one per loop turn, as the client takes it (server/conn.c calls
 * fill when the connection's output has room), so no turn does more than
 * one piece of about 256 KiB whatever the store's size.
 *
 * One export runs at a time (each holds a snapshot, and on the live-store
 * backends makes every write pay a look-up meanwhile): another GET
 * /export while one runs is answered 503 (the admin listener adds
 * Retry-After). */
#include "tools/dump_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/http.h"
#include "core/log.h"

/* One GET /export in progress. */
struct dump_stream {
    struct dump_source *src;     /* its running points here while it runs */
    struct dump_export *x;
    struct buf head;             /* catalogue lines not yet sent */
    size_t head_off;
    char account[64], table[64]; /* the filters x points to */
    uint64_t t0;                 /* clock_mono_us() at the start */
};

/* Frees a stream (struct response_stream.free); the next export may
 * start. */
static void stream_free(void *arg)
{
    struct dump_stream *ds = arg;
    unsigned long long nt = 0, ne = 0, kk = 0, kb = 0;
    if (ds->x) {
        dump_export_counts(ds->x, &nt, &ne);
        dump_export_kept(ds->x, &kk, &kb);
    }
    log_info("admin: export ended after %llu entities in %.3f s (%llu keys written meanwhile "
             "kept as of its start, %llu bytes of values)", ne,
             (double)(clock_mono_us() - ds->t0) / 1e6, kk, kb);
    dump_export_free(ds->x);
    buf_free(&ds->head);
    if (ds->src->running == ds)
        ds->src->running = NULL;
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
    char err[512] = "";
    int r = dump_export_step(ds->x, out, max, err, sizeof err);
    if (r < 0)
        log_error("admin: export: %s", err);
    return r;
}

int dump_serve_start(void *src, const char *account, const char *table,
                     struct response_stream *s, char *err, size_t errlen)
{
    struct dump_source *ds_src = src;
    if (ds_src->running) {
        snprintf(err, errlen, "another export is running and only one runs at a time: "
                              "retry when it has finished");
        return 503;
    }
    if (kv_defers(ds_src->kv)) {
        /* its calls complete later, and the admin listener does not wait
           on a coroutine: the store's own tools export such a store */
        snprintf(err, errlen, "GET /export is not available on a backend that completes its calls "
                              "later (%s)", kv_ops(ds_src->kv)->name);
        return 501;
    }
    struct dump_stream *ds = calloc(1, sizeof *ds);
    if (!ds)
        abort();
    ds->src = ds_src;
    ds->t0 = clock_mono_us();
    buf_init(&ds->head);
    snprintf(ds->account, sizeof ds->account, "%s", account ? account : "");
    snprintf(ds->table, sizeof ds->table, "%s", table ? table : "");
    ds->x = dump_export_new(ds_src->kv, account ? ds->account : NULL,
                            table ? ds->table : NULL, 1, err, errlen);
    int rc = ds->x ? dump_export_catalogue(ds->x, &ds->head, err, errlen) : -1;
    if (rc != 0) {
        dump_export_free(ds->x);
        buf_free(&ds->head);
        free(ds);
        return rc == 1 ? 404 : 500;
    }
    ds_src->running = ds;
    s->fill = stream_fill;
    s->free = stream_free;
    s->arg = ds;
    return 0;
}
