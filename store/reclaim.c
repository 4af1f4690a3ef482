/* reclaim.c - handing purged tables' key ranges to the backend (see
 * reclaim.h). */
#include "store/reclaim.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/heap.h"
#include "core/log.h"
#include "store/keys.h"

struct reclaim_range {
    struct reclaim_range *next;
    struct buf lo, hi;         /* [lo, hi) */
    uint64_t bytes;            /* what the purges deleted there */
};

struct reclaim {
    struct kv *kv;
    void (*done)(void *arg);
    void *arg;
    struct reclaim_range *head, *tail;
    int busy;                  /* call is in flight */
    uint64_t busy_bytes;       /* the bytes of its range */
    struct backend_call call;
};

struct reclaim *reclaim_new(struct kv *kv, void (*done)(void *arg), void *arg)
{
    struct reclaim *rc = calloc(1, sizeof *rc);
    if (!rc)
        abort();
    rc->kv = kv;
    rc->done = done;
    rc->arg = arg;
    return rc;
}

/* Frees one queued range and its bounds. */
static void range_free(struct reclaim_range *g)
{
    buf_free(&g->lo);
    buf_free(&g->hi);
    free(g);
}

void reclaim_free(struct reclaim *r)
{
    if (!r)
        return;
    while (r->head) {
        struct reclaim_range *g = r->head;
        r->head = g->next;
        range_free(g);
    }
    free(r);
}

/* 1 when the bytes of a equal those of b. */
static int buf_same(const struct buf *a, const struct buf *b)
{
    return a->len == b->len && (!a->len || memcmp(a->data, b->data, a->len) == 0);
}

/* Says how a hint ended and tells the owner. After a reclaim the backend
 * has freed what it held of the deleted data (LevelDB: the memtables
 * that held it, during the purge and at the compaction's start, freed
 * after the purge's give-back may have run): those bytes are counted again
 * (core/heap.h: an estimate), for one more give-back. */
static void reclaim_ended(struct reclaim *r, int status)
{
    if (status < 0)
        log_warn("reclaiming the space of deleted tables failed (left to the backend): %s",
                 r->call.err);
    else
        heap_freed((size_t)r->busy_bytes);
    if (r->done)
        r->done(r->arg);
}

static void reclaim_call_done(struct backend_call *call);

/* Starts the queued ranges until one is in flight or none is left. */
void reclaim_start(struct reclaim *r)
{
    while (!r->busy && r->head) {
        struct reclaim_range *g = r->head;
        r->head = g->next;
        if (!r->head)
            r->tail = NULL;
        memset(&r->call, 0, sizeof r->call);
        r->call.done = reclaim_call_done;
        r->call.arg = r;
        r->busy_bytes = g->bytes;
        int rc = kv_compact_start(r->kv, g->lo.data, g->lo.len, g->hi.data, g->hi.len,
                                  &r->call);
        range_free(g);          /* the backend copied the bounds */
        if (rc == BACKEND_PENDING)
            r->busy = 1;
        else
            reclaim_ended(r, rc);
    }
}

/* The backend's completion of the hint in flight (from the event loop):
 * reports it and starts the next. */
static void reclaim_call_done(struct backend_call *call)
{
    struct reclaim *r = call->arg;
    r->busy = 0;
    reclaim_ended(r, call->status);
    reclaim_start(r);
}

void reclaim_table(struct reclaim *r, uint64_t id, uint64_t bytes)
{
    if (bytes < RECLAIM_MIN_BYTES || !kv_compacts(r->kv))
        return;
    struct buf lo, hi;
    buf_init(&lo);
    buf_init(&hi);
    keys_entity_table_prefix(&lo, id);
    keys_entity_table_prefix(&hi, id);
    keys_prefix_end(&hi);
    struct reclaim_range *t = r->tail;
    if (t && buf_same(&t->hi, &lo)) {           /* the next table up */
        t->bytes += bytes;
        buf_reset(&t->hi);
        buf_append(&t->hi, hi.data, hi.len);
    } else if (t && buf_same(&t->lo, &hi)) {    /* the next table down */
        t->bytes += bytes;
        buf_reset(&t->lo);
        buf_append(&t->lo, lo.data, lo.len);
    } else {
        struct reclaim_range *g = calloc(1, sizeof *g);
        if (!g)
            abort();
        g->lo = lo;
        g->hi = hi;
        g->bytes = bytes;
        if (r->tail)
            r->tail->next = g;
        else
            r->head = g;
        r->tail = g;
        return;
    }
    buf_free(&lo);
    buf_free(&hi);
}
