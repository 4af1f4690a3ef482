/* deferred.c - a test plug-in backend that completes EVERY call later,
 * from the event loop: a built-in backend wrapped so that get_v2,
 * iter_next_v2 and apply_v2 always answer BACKEND_PENDING and finish after
 * a host timer. It proves that a caller handles deferred completion (the
 * conformance suite and the protocol suite run it); nothing else uses it.
 *
 * Build: make check builds it as backends/examples/.libs/libdeferred.so
 * (the inner backends' sources compiled in, only tabled_backend_init
 * exported). Run:
 *     ./tabled --backend ./libdeferred.so --backend-option deferred-ms=1
 *
 * Options (backend_options.params, "name=value"; the inner backend gets
 * the others, and refuses a name it does not know):
 *   deferred-inner  leveldb (default), memory or flatfile: the backend
 *                   that stores the data
 *   deferred-ms     milliseconds from a call to its completion, default 1
 *                   (0: the next event-loop turn)
 *
 * How a call completes. Each call is queued and gets a timer of
 * deferred-ms; the inner operation is performed only when the timer fires,
 * so an apply's effects become visible at its completion and other
 * requests really run in between. Whenever a timer fires, every call
 * queued before it completes first: completions (and applies' effects)
 * keep the order of the calls. The results are copied into buffers of this
 * wrapper, lent to done(), and overwritten with 0xA5 bytes when done()
 * returns, so a caller that keeps a lent pointer past done() reads garbage
 * instead of silently working. iter_open, iter_seek, iter_close, sync,
 * open and close act at once.
 *
 * Consistency. With deferred-inner=leveldb each cursor is a LevelDB
 * snapshot as of iter_open, the view backend.h asks of a deferring
 * backend (a query page never shows half of an apply that completed while
 * it was being read). The memory and flatfile inner backends show the
 * live store to a cursor, so a page read across loop turns may see applies
 * that completed meanwhile; use them for the protocol suite's other checks,
 * not for page consistency.
 *
 * Misuse it tolerates: a cursor or the store closed while a call on it is
 * outstanding (its timer is cancelled; done() is never called), a cursor
 * closed from its own step's done(). A second step on a cursor whose step
 * is outstanding, and iter_seek meanwhile, answer BACKEND_INVALID. open()
 * without backend_options.host answers BACKEND_INVALID: this backend needs
 * the server's event loop. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/bopts.h"

#define DFR_POISON 0xA5

enum dfr_kind { DFR_GET, DFR_NEXT, DFR_APPLY };

/* One outstanding call. A get or apply owns its op (freed at completion);
 * a cursor's step is the op inside the cursor. */
struct dfr_op {
    struct dfr_op *prev, *next;     /* the store's queue, in call order */
    uint64_t seq;                   /* place in that order */
    enum dfr_kind kind;
    struct backend_store *st;
    struct backend_iter *it;        /* DFR_NEXT */
    struct backend_call *call;
    void *timer;                    /* NULL once fired or cancelled */
    const void *key;                /* DFR_GET (the caller keeps it alive) */
    size_t key_len;
    const struct backend_write *w;  /* DFR_APPLY (likewise) */
    const struct backend_cond *cond;
    size_t n;
    uint8_t *buf;                   /* DFR_GET: the value lent to done() */
    size_t buf_len;
};

struct backend_store {
    const struct backend_ops *inner_ops;
    struct backend_store *inner;
    const struct backend_host *host;
    unsigned ms;
    struct dfr_op *head, *tail;     /* outstanding calls */
    uint64_t seq;
    int firing;                     /* dfr_fire calls on the stack */
    int closed;                     /* closed from a done(): freed on unwind */
};

struct backend_iter {
    struct backend_store *st;
    struct backend_iter *inner;
    struct dfr_op step;             /* the outstanding step, when pending */
    int pending;
    int in_done;                    /* its step's done() is running */
    int closed;                     /* closed from there: freed on unwind */
    uint8_t *buf;                   /* key then value lent to done() */
    size_t cap, used;
};

/* The built-in backends this plug-in wraps (compiled into it with their
 * sources; tabled's own copies stay hidden behind the plug-in's symbol
 * visibility). */
extern const struct backend_ops backend_memory_ops;
extern const struct backend_ops backend_leveldb_ops;
extern const struct backend_ops backend_flatfile_ops;

/* The inner backends; this file is compiled with their sources. */
static const struct {
    const char *name;
    const struct backend_ops *ops;
} dfr_inners[] = {
    {"leveldb", &backend_leveldb_ops},
    {"memory", &backend_memory_ops},
    {"flatfile", &backend_flatfile_ops},
};

/* This plug-in's own options, as rows (backends/bopts.h): parsed like a
 * built-in backend's, the last one of a name winning. */
struct dfr_conf {
    char inner[16];
    long long ms;
};

#define DFR_AT(f) .offset = offsetof(struct dfr_conf, f), .size = sizeof(((struct dfr_conf *)0)->f)
static const struct opt dfr_rows[] = {
    {.name = "deferred-inner", .type = OPT_STRING, DFR_AT(inner), .def = "leveldb",
     .arg = "NAME", .help = "the backend that stores the data: leveldb, memory or flatfile"},
    {.name = "deferred-ms", .type = OPT_INT, DFR_AT(ms), .min = 0, .max = 60000, .def = "1",
     .arg = "MS", .help = "milliseconds from a call to its completion (0: the next loop turn)"},
};

static const struct bopt_desc dfr_opts = {
    "deferred", dfr_rows, sizeof dfr_rows / sizeof dfr_rows[0], sizeof(struct dfr_conf)};

/* 1 when param is one of this plug-in's options (a "deferred-" name). */
static int dfr_own(const char *param)
{
    return strncmp(param, "deferred-", 9) == 0;
}

/* Opens the inner store after checking the options and the host. */
static int dfr_open(const struct backend_options *opt, struct backend_store **out, char *err,
                    size_t errlen)
{
    if (!opt || !out) {
        snprintf(err, errlen, "deferred: open: no options or no output pointer");
        return BACKEND_INVALID;
    }
    const struct backend_host *h = opt->host;
    if (!h || !h->timer_add || !h->timer_cancel) {
        snprintf(err, errlen, "deferred: this backend completes every call from the event loop "
                 "and needs its timers (backend_options.host), which this caller does not "
                 "lend");
        return BACKEND_INVALID;
    }
    /* This plug-in's options parsed by its rows; the inner backend gets
     * every other one. */
    size_t n = 0;
    for (const char *const *p = opt->params; p && *p; p++)
        n++;
    const char **own = calloc(n + 1, sizeof *own), **rest = calloc(n + 1, sizeof *rest);
    struct backend_store *st = calloc(1, sizeof(*st));
    if (!own || !rest || !st) {
        free(own);
        free(rest);
        free(st);
        snprintf(err, errlen, "deferred: out of memory");
        return BACKEND_NOMEM;
    }
    size_t nown = 0, nrest = 0;
    for (const char *const *p = opt->params; p && *p; p++) {
        if (dfr_own(*p))
            own[nown++] = *p;
        else
            rest[nrest++] = *p;
    }
    struct dfr_conf c;
    char msg[512];
    const struct backend_ops *inner = NULL;
    int parsed = bopt_parse(&dfr_opts, own, &c, msg, sizeof msg);
    free(own);
    for (size_t i = 0; parsed == 0 && i < sizeof dfr_inners / sizeof dfr_inners[0]; i++)
        if (strcmp(c.inner, dfr_inners[i].name) == 0)
            inner = dfr_inners[i].ops;
    if (!inner) {
        free(rest);
        free(st);
        if (parsed < 0)
            snprintf(err, errlen, "deferred: %s", msg);
        else
            snprintf(err, errlen, "deferred: unknown deferred-inner '%s' (leveldb, memory or "
                     "flatfile)", c.inner);
        return BACKEND_INVALID;
    }
    struct backend_options iopt = *opt;
    iopt.params = rest;
    int rc = inner->open(&iopt, &st->inner, err, errlen);
    free(rest);
    if (rc != BACKEND_OK) {
        free(st);
        return rc;
    }
    st->inner_ops = inner;
    st->host = h;
    st->ms = (unsigned)c.ms;
    *out = st;
    return BACKEND_OK;
}

/* Takes an op out of its store's queue and cancels its timer. */
static void dfr_unlink(struct dfr_op *op)
{
    struct backend_store *st = op->st;
    if (op->prev)
        op->prev->next = op->next;
    else
        st->head = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        st->tail = op->prev;
    op->prev = op->next = NULL;
    if (op->timer)
        st->host->timer_cancel(st->host->arg, op->timer);
    op->timer = NULL;
}

/* Frees an op that is not a cursor's step. */
static void dfr_op_free(struct dfr_op *op)
{
    if (op->kind == DFR_NEXT)
        return;
    free(op->buf);
    free(op);
}

/* Drops every outstanding call (done() is not called), closes the inner
 * store, and frees the wrapper unless a completion is on the stack. */
static void dfr_close(struct backend_store *st)
{
    if (!st)
        return;
    while (st->head) {
        struct dfr_op *op = st->head;
        dfr_unlink(op);
        if (op->kind == DFR_NEXT)
            op->it->pending = 0;
        dfr_op_free(op);
    }
    st->inner_ops->close(st->inner);
    st->inner = NULL;
    if (st->firing)
        st->closed = 1;
    else
        free(st);
}

/* Copies an inner result into buf (grown as needed). 0, or -1 when out of
 * memory. */
static int dfr_keep(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *p = realloc(*buf, need);
    if (!p)
        return -1;
    *buf = p;
    *cap = need;
    return 0;
}

/* Performs one queued call on the inner store and fills its results. */
static void dfr_perform(struct dfr_op *op)
{
    struct backend_store *st = op->st;
    struct backend_call *call = op->call;
    struct backend_call ic = {0};
    int rc;
    ic.want_counts = call->want_counts;
    if (op->kind == DFR_GET) {
        rc = st->inner_ops->get_v2(st->inner, op->key, op->key_len, &ic);
        size_t cap = 0;
        if (rc == BACKEND_OK && dfr_keep(&op->buf, &cap, ic.val_len + 1) != 0)
            rc = BACKEND_NOMEM;
        if (rc == BACKEND_OK) {
            memcpy(op->buf, ic.val, ic.val_len);
            op->buf_len = ic.val_len;
            call->val = op->buf;
            call->val_len = ic.val_len;
        }
    } else if (op->kind == DFR_NEXT) {
        struct backend_iter *it = op->it;
        rc = st->inner_ops->iter_next_v2(it->inner, &ic);
        if (rc == 1 && dfr_keep(&it->buf, &it->cap, ic.key_len + ic.val_len + 1) != 0)
            rc = BACKEND_NOMEM;
        if (rc == 1) {
            memcpy(it->buf, ic.key, ic.key_len);
            memcpy(it->buf + ic.key_len, ic.val, ic.val_len);
            it->used = ic.key_len + ic.val_len;
            call->key = it->buf;
            call->key_len = ic.key_len;
            call->val = it->buf + ic.key_len;
            call->val_len = ic.val_len;
        }
    } else {
        rc = st->inner_ops->apply_v2(st->inner, op->w, op->cond, op->n, &ic);
        call->failed = ic.failed;
        call->created = ic.created;
        call->removed = ic.removed;
    }
    if (rc == BACKEND_NOMEM && !ic.err[0])
        snprintf(ic.err, sizeof ic.err, "deferred: out of memory");
    memcpy(call->err, ic.err, sizeof call->err);
    call->status = rc;
}

/* Completes one call taken off the queue: performs it, calls done(), then
 * spoils and frees what it lent. */
static void dfr_complete(struct dfr_op *op)
{
    dfr_perform(op);
    struct backend_call *call = op->call;
    if (op->kind != DFR_NEXT) {
        call->done(call);
        if (op->buf)
            memset(op->buf, DFR_POISON, op->buf_len);
        dfr_op_free(op);
        return;
    }
    struct backend_iter *it = op->it;
    it->pending = 0;
    it->in_done = 1;
    call->done(call);
    it->in_done = 0;
    if (it->buf)
        memset(it->buf, DFR_POISON, it->used);
    if (it->closed) {
        free(it->buf);
        free(it);
    }
}

/* A call's timer fired: completes every call queued up to it, in order
 * (done() may queue more, close a cursor, or close the store). */
static void dfr_fire(void *arg)
{
    struct dfr_op *op = arg;
    struct backend_store *st = op->st;
    op->timer = NULL;               /* the host freed it */
    uint64_t upto = op->seq;
    st->firing++;
    while (!st->closed && st->head && st->head->seq <= upto) {
        struct dfr_op *x = st->head;
        dfr_unlink(x);
        dfr_complete(x);
    }
    st->firing--;
    if (st->closed && !st->firing)
        free(st);
}

/* Queues a call and arms its timer. BACKEND_PENDING, or BACKEND_NOMEM
 * (the op is then not queued). */
static int dfr_queue(struct backend_store *st, struct dfr_op *op)
{
    op->st = st;
    op->seq = ++st->seq;
    op->prev = st->tail;
    op->next = NULL;
    if (st->tail)
        st->tail->next = op;
    else
        st->head = op;
    st->tail = op;
    op->timer = st->host->timer_add(st->host->arg, st->ms, dfr_fire, op);
    if (!op->timer) {
        dfr_unlink(op);
        snprintf(op->call->err, sizeof op->call->err, "deferred: out of memory (timer)");
        op->call->status = BACKEND_NOMEM;
        return BACKEND_NOMEM;
    }
    return BACKEND_PENDING;
}

/* Queues a copy of op (a get or an apply) on st; what, for messages.
 * BACKEND_PENDING, or the failure with call->status set. */
static int dfr_submit(struct backend_store *st, struct dfr_op tmpl, const char *what)
{
    struct backend_call *call = tmpl.call;
    struct dfr_op *op = st ? malloc(sizeof(*op)) : NULL;
    if (!op) {
        snprintf(call->err, sizeof call->err, "deferred: %s: %s", what,
                 st ? "out of memory" : "no store");
        return call->status = st ? BACKEND_NOMEM : BACKEND_INVALID;
    }
    *op = tmpl;
    int rc = dfr_queue(st, op);
    if (rc != BACKEND_PENDING)
        free(op);
    return rc;
}

/* Starts a call: clears its outputs; NULL when the call is unusable. */
static int dfr_call_ok(struct backend_call *call)
{
    if (!call)
        return 0;
    call->status = BACKEND_PENDING;
    call->key = call->val = NULL;
    call->key_len = call->val_len = 0;
    call->failed = call->created = call->removed = 0;
    call->err[0] = 0;
    if (!call->done) {
        snprintf(call->err, sizeof call->err, "deferred: the call has no done callback");
        call->status = BACKEND_INVALID;
        return 0;
    }
    return 1;
}

static int dfr_get_v2(struct backend_store *st, const void *key, size_t key_len,
                      struct backend_call *call)
{
    if (!dfr_call_ok(call))
        return BACKEND_INVALID;
    return dfr_submit(st, (struct dfr_op){.kind = DFR_GET, .call = call, .key = key,
                                          .key_len = key_len}, "get");
}

static int dfr_apply_v2(struct backend_store *st, const struct backend_write *w,
                        const struct backend_cond *cond, size_t n, struct backend_call *call)
{
    if (!dfr_call_ok(call))
        return BACKEND_INVALID;
    return dfr_submit(st, (struct dfr_op){.kind = DFR_APPLY, .call = call, .w = w, .cond = cond,
                                          .n = n}, "apply");
}

/* Opens the inner cursor at once (with leveldb: its snapshot). */
static int dfr_iter_open(struct backend_store *st, const void *start, size_t start_len,
                         const void *end, size_t end_len, struct backend_iter **out, char *err,
                         size_t errlen)
{
    if (!st || !out) {
        snprintf(err, errlen, "deferred: iter_open: no store or no output pointer");
        return BACKEND_INVALID;
    }
    struct backend_iter *it = calloc(1, sizeof(*it));
    if (!it) {
        snprintf(err, errlen, "deferred: out of memory");
        return BACKEND_NOMEM;
    }
    int rc = st->inner_ops->iter_open(st->inner, start, start_len, end, end_len, &it->inner, err,
                                      errlen);
    if (rc != BACKEND_OK) {
        free(it);
        return rc;
    }
    it->st = st;
    *out = it;
    return BACKEND_OK;
}

static int dfr_iter_seek(struct backend_iter *it, const void *key, size_t key_len)
{
    if (!it || it->pending)
        return BACKEND_INVALID;
    return it->st->inner_ops->iter_seek(it->inner, key, key_len);
}

static int dfr_iter_next_v2(struct backend_iter *it, struct backend_call *call)
{
    if (!dfr_call_ok(call))
        return BACKEND_INVALID;
    if (!it || it->pending) {
        snprintf(call->err, sizeof call->err, "deferred: iter_next: %s",
                 it ? "a step of this cursor is outstanding" : "no cursor");
        return call->status = BACKEND_INVALID;
    }
    it->step = (struct dfr_op){.kind = DFR_NEXT, .it = it, .call = call};
    int rc = dfr_queue(it->st, &it->step);
    it->pending = rc == BACKEND_PENDING;
    return rc;
}

/* Drops an outstanding step (its done() is not called) and frees the
 * cursor, or leaves the freeing to dfr_complete when called from its own
 * step's done(). */
static void dfr_iter_close(struct backend_iter *it)
{
    if (!it)
        return;
    if (it->pending)
        dfr_unlink(&it->step);
    it->pending = 0;
    it->st->inner_ops->iter_close(it->inner);
    it->inner = NULL;
    if (it->in_done) {
        it->closed = 1;
        return;
    }
    free(it->buf);
    free(it);
}

/* Acts at once: makes every completed apply durable. */
static int dfr_sync(struct backend_store *st, char *err, size_t errlen)
{
    if (!st) {
        snprintf(err, errlen, "deferred: sync: no store");
        return BACKEND_INVALID;
    }
    return st->inner_ops->sync(st->inner, err, errlen);
}

static const struct backend_ops deferred_ops = {
    .version = 2,
    .name = "deferred",
    .open = dfr_open,
    .close = dfr_close,
    .get = NULL,                    /* version 2 only: every read completes later */
    .iter_open = dfr_iter_open,
    .iter_seek = dfr_iter_seek,
    .iter_next = NULL,
    .iter_close = dfr_iter_close,
    .apply = NULL,
    .sync = dfr_sync,
    .caps = BACKEND_CAP_DEFERS,
    .get_v2 = dfr_get_v2,
    .iter_next_v2 = dfr_iter_next_v2,
    .apply_v2 = dfr_apply_v2,
};

/* The one exported symbol (TABLED_BACKEND_SYMBOL). */
__attribute__((visibility("default")))
const struct backend_ops *tabled_backend_init(void)
{
    return &deferred_ops;
}
