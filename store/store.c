/* store.c - the store layer (see store.h). */
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timefmt.h"
#include "store/keys.h"
#include "store/kv.h"
#include "store/store_int.h"
#include "store/tables.h"

/* The store's names are the backends' codes (store.h). */
_Static_assert((int)STORE_OK == (int)BACKEND_OK && (int)STORE_NOTFOUND == (int)BACKEND_NOTFOUND &&
                   (int)STORE_IOERR == (int)BACKEND_IOERR && (int)STORE_NOMEM == (int)BACKEND_NOMEM &&
                   (int)STORE_CORRUPT == (int)BACKEND_CORRUPT &&
                   (int)STORE_INVALID == (int)BACKEND_INVALID &&
                   (int)STORE_FULL == (int)BACKEND_FULL &&
                   (int)STORE_CONFLICT == (int)BACKEND_CONFLICT &&
                   (int)STORE_UNAVAILABLE == (int)BACKEND_UNAVAILABLE &&
                   (int)STORE_UNKNOWN == (int)BACKEND_UNKNOWN,
               "store and backend status codes differ");
_Static_assert(STORE_EXPECT_ANY == (int)BACKEND_EXPECT_ANY &&
                   STORE_EXPECT_ABSENT == (int)BACKEND_EXPECT_ABSENT &&
                   STORE_EXPECT_PRESENT == (int)BACKEND_EXPECT_PRESENT &&
                   STORE_EXPECT_VERSION == (int)BACKEND_EXPECT_VERSION,
               "store and backend expectations differ");

/* Milliseconds between probes of a store whose writes failed. */
#define STORE_PROBE_MS 1000

struct store {
    struct kv *kv;
    enum durability durability;
    int dirty;                 /* writes applied since the last sync began */
    /* Group commit off the loop (batch mode, kv_syncs_off_loop): syncs are
       numbered from 1; a write applied while sync k is in flight (or none
       is, after k) is covered by sync k + 1. */
    int pipelined;
    int syncing;               /* sync number started is in flight */
    uint64_t started;          /* syncs begun */
    uint64_t finished;         /* syncs over (succeeded or failed) */
    uint64_t need;             /* the sync that covers the latest write */
    uint64_t sync_t0;          /* when the sync in flight began (metrics) */
    struct backend_call call;  /* of the sync in flight */
    struct store_waiter *wait_head, *wait_tail;  /* by need, ascending */
    int checks_needed;         /* the store may change between a read and
                                  a write (deferred or shared): send the
                                  expectations with the writes */
    int64_t last_timestamp;    /* strictly increasing commit Timestamps */
    int shared;                /* other processes write the store too */
    struct metrics *metrics;
    void (*wake)(void *arg);
    void *wake_arg;
    uint64_t sync_failures;    /* syncs that failed so far */
    int failed;                /* the last write or sync failed */
    uint64_t failed_us;        /* since when (monotonic) */
    uint64_t probe_us;         /* next probe */
};

struct store *store_new(struct kv *kv, enum durability durability)
{
    struct store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->kv = kv;
    s->durability = durability;
    s->shared = kv_shared(kv);
    s->checks_needed = kv_defers(kv) || s->shared;
    s->pipelined = durability == DURABILITY_BATCH && kv_syncs_off_loop(kv);
    return s;
}

void store_free(struct store *s)
{
    free(s);
}

struct kv *store_kv(struct store *s)
{
    return s->kv;
}

int store_defers(const struct store *s)
{
    return kv_defers(s->kv);
}

/* A store expectation as the backend's (the same values: store.h). */
static struct backend_cond store_cond(struct store_expect e)
{
    return (struct backend_cond){(enum backend_expect)e.kind, e.version};
}

void store_set_wake(struct store *s, void (*wake)(void *arg), void *arg)
{
    s->wake = wake;
    s->wake_arg = arg;
}

/* Asks the server for a background step soon. */
static void store_wake(struct store *s)
{
    if (s->wake)
        s->wake(s->wake_arg);
}

int store_replica_sync_time(struct store *s, int64_t *unix_s)
{
    int rc = kv_replica_sync_time(s->kv, unix_s);
    return rc > 0 ? STORE_OK : rc == 0 ? STORE_UNAVAILABLE : STORE_INVALID;
}

int store_shared(const struct store *s)
{
    return s->shared;
}

int64_t store_next_timestamp(struct store *s, int64_t after)
{
    int64_t now = timefmt_now_ticks();
    if (now <= s->last_timestamp)
        now = s->last_timestamp + 1;
    s->last_timestamp = now;
    /* after is kept out of the clock until the commit is applied: a
       refused If-Match of a far-future ETag must not date later writes */
    return now <= after ? after + 1 : now;
}

void store_timestamp_applied(struct store *s, int64_t ts)
{
    if (ts > s->last_timestamp)
        s->last_timestamp = ts;
}

/* A write or sync failed: out of space or an I/O error puts the store in
 * the failed state (logged once) until a write works again. */
static void store_failure(struct store *s, int rc, const char *err)
{
    int down = rc == BACKEND_UNAVAILABLE || rc == BACKEND_UNKNOWN;
    if (rc != BACKEND_FULL && rc != BACKEND_IOERR && !down)
        return;
    s->probe_us = clock_mono_us() + STORE_PROBE_MS * 1000u;
    if (s->failed)
        return;
    s->failed = down ? 2 : 1;
    s->failed_us = clock_mono_us();
    if (down)
        log_error("the database cannot be reached (%s): requests answer 503 ServerBusy "
                  "until it can; tried every %d s", err, STORE_PROBE_MS / 1000);
    else
        log_error("the store refuses writes (%s): writes answer 500 and are retried every %d s",
                  rc == BACKEND_FULL ? "out of space" : err, STORE_PROBE_MS / 1000);
    metrics_store_state(s->metrics, s->failed,
                        err && *err ? err : down ? "database unavailable" : "write failed");
    store_wake(s);
}

/* Writes work again after a failure. */
static void store_recovered(struct store *s)
{
    log_warn(s->failed == 2 ? "the database answers again (after %.1f s)"
                            : "the store takes writes again (after %.1f s)",
             (double)(clock_mono_us() - s->failed_us) / 1e6);
    s->failed = 0;
    metrics_store_state(s->metrics, 0, NULL);
    store_wake(s);
}

void store_note(struct store *s, int rc, const char *err)
{
    if (rc != BACKEND_OK)
        store_failure(s, rc, err);
    else if (s->failed)
        store_recovered(s);
}

int store_failed(const struct store *s)
{
    return s->failed;
}

int store_probe(struct store *s, int *wait_ms)
{
    uint64_t now = clock_mono_us();
    *wait_ms = STORE_PROBE_MS;
    if (!s->failed && !s->shared)
        return 1;
    if (now < s->probe_us) {
        *wait_ms = (int)((s->probe_us - now + 999) / 1000);
        return !s->failed;
    }
    s->probe_us = now + STORE_PROBE_MS * 1000u;
    char err[256] = "";
    struct backend_write none = {BACKEND_PUT, "", 0, NULL, 0};  /* never read */
    int rc = kv_apply(s->kv, &none, NULL, 0, 0, NULL, err, sizeof err);
    if (rc == BACKEND_OK && s->shared) {
        /* a database server: one read proves it answers (the empty apply
           may only look at the connections) */
        static const char key[] = {KEY_TAG_COUNTER, 't', 'a', 'b', 'l', 'e', 'i', 'd'};
        const void *v;
        size_t vl;
        rc = kv_get(s->kv, key, sizeof key, &v, &vl, err, sizeof err);
        if (rc == BACKEND_NOTFOUND)
            rc = BACKEND_OK;
    }
    if (rc != BACKEND_OK) {
        if (s->shared)
            store_failure(s, rc, err);
        return 0;
    }
    return 1;
}

int store_dirty(const struct store *s)
{
    return s->dirty && !s->pipelined;
}

int store_pipelined(const struct store *s)
{
    return s->pipelined;
}

/* Begins sync number started + 1 of everything applied so far: 1 while it
 * is in flight (store_sync_done follows), or 0 when it finished at once
 * (*rc, and store_sync_end has run). */
static int store_sync_begin(struct store *s, int *rc);

/* Bookkeeping at the end of the sync begun last: its outcome rc (err: the
 * detail), the failure state, the metrics. */
static void store_sync_end(struct store *s, int rc, const char *err)
{
    s->syncing = 0;
    s->finished = s->started;
    if (s->metrics)
        metrics_backend_sync(s->metrics, clock_mono_us() - s->sync_t0);
    if (rc != BACKEND_OK) {
        log_error("backend sync failed: %s", err);
        s->sync_failures++;
        store_failure(s, rc, err);
    }
}

/* Unlinks the waiters the syncs over so far cover, each with status rc,
 * onto *ready (in order). */
static void store_detach(struct store *s, int rc, struct store_waiter ***ready)
{
    while (s->wait_head && s->wait_head->gen <= s->finished) {
        struct store_waiter *w = s->wait_head;
        s->wait_head = w->next;
        w->status = rc;
        w->next = NULL;
        **ready = w;
        *ready = &w->next;
    }
    if (!s->wait_head)
        s->wait_tail = NULL;
}

/* The backend's completion of a sync (from the event loop): releases the
 * waiters it covers and, while writes wait for the next one, begins that
 * at once (the pipeline: the loop has gone on applying meanwhile). The
 * waiters are called last, when the store is consistent again: a waiter
 * may hold a new reply (store_hold) from its callback. */
static void store_sync_done(struct backend_call *call)
{
    struct store *s = call->arg;
    struct store_waiter *ready = NULL, **tail = &ready;
    int rc = call->status;
    store_sync_end(s, rc, call->err);
    store_detach(s, rc, &tail);
    while (s->pipelined && (s->wait_head || s->dirty)) {
        if (store_sync_begin(s, &rc))
            break;
        store_detach(s, rc, &tail);
    }
    while (ready) {
        struct store_waiter *w = ready;
        ready = w->next;
        w->fn(w, w->status);
    }
}

static int store_sync_begin(struct store *s, int *rc)
{
    int was_dirty = s->dirty;
    s->dirty = 0;
    s->started++;
    s->syncing = 1;
    s->sync_t0 = s->metrics ? clock_mono_us() : 0;
    s->call.done = store_sync_done;
    s->call.arg = s;
    s->call.want_counts = 0;
    s->call.err[0] = '\0';
    *rc = kv_sync_start(s->kv, &s->call);
    if (*rc == BACKEND_PENDING)
        return 1;
    if (*rc == BACKEND_INVALID) {
        /* this store syncs on the loop (backend.h sync_v2): from now on
           the server holds the replies and calls store_sync per turn */
        log_info("group commit: the backend syncs on the event loop");
        s->pipelined = 0;
        s->syncing = 0;
        s->started--;
        s->dirty = was_dirty;
        *rc = BACKEND_OK;
        return 0;
    }
    store_sync_end(s, *rc, s->call.err);
    return 0;
}

int store_synced(const struct store *s)
{
    return s->need <= s->finished;
}

int store_hold(struct store *s, struct store_waiter *w)
{
    if (!s->pipelined || s->need <= s->finished)
        return 0;
    w->gen = s->need;
    w->next = NULL;
    if (s->wait_tail)
        s->wait_tail->next = w;
    else
        s->wait_head = w;
    s->wait_tail = w;
    if (s->syncing)
        return 1;
    /* nothing in flight: then nothing else waits either; begin the sync
       that covers w (a sync that ends at once is answered here, never
       through w->fn: the caller is inside a request) */
    int rc;
    if (store_sync_begin(s, &rc))
        return 1;
    s->wait_head = s->wait_tail = NULL;
    return rc == BACKEND_OK ? 0 : rc;
}

int store_holding(const struct store *s)
{
    return s->syncing || s->wait_head != NULL;
}

void store_drop_waiters(struct store *s)
{
    s->wait_head = s->wait_tail = NULL;
}

int store_sync(struct store *s)
{
    char err[256] = "";
    s->dirty = 0;
    uint64_t t0 = s->metrics ? clock_mono_us() : 0;
    int rc = kv_sync(s->kv, err, sizeof err);
    if (s->metrics)
        metrics_backend_sync(s->metrics, clock_mono_us() - t0);
    if (rc != BACKEND_OK) {
        log_error("backend sync failed: %s", err);
        s->sync_failures++;
        store_failure(s, rc, err);
    }
    return rc;
}

uint64_t store_sync_failures(const struct store *s)
{
    return s->sync_failures;
}

/* A borrowed stored value decoded into e, its strings pointing into a
   copy in a. 0, or -1 when the value does not decode. */
static int store_entity_copy(struct arena *a, const void *val, size_t vl, struct entity *e)
{
    char *copy = arena_alloc(a, vl ? vl : 1);
    memcpy(copy, val, vl);
    return entity_decode(a, copy, vl, e);
}

int store_entity_get(struct store *s, struct arena *a, const char *key, size_t key_len,
                     struct entity *e)
{
    const void *val;
    size_t vl;
    char err[256] = "";
    int rc = kv_get(s->kv, key, key_len, &val, &vl, err, sizeof err);
    if (rc == BACKEND_NOTFOUND)
        return 0;
    if (rc != BACKEND_OK) {
        log_error("backend get failed: %s", err);
        return rc;
    }
    if (store_entity_copy(a, val, vl, e) != 0) {
        log_error("corrupt entity value in the store");
        return BACKEND_CORRUPT;
    }
    return 1;
}

/* Where store_entity_get_many's values go. */
struct store_many {
    struct arena *a;
    struct entity *e;
    int *found;
    int corrupt;               /* a value did not decode */
};

/* kv_get_multi's callback: decodes a borrowed value into a copy. */
static void store_many_found(void *arg, size_t i, const void *val, size_t vl)
{
    struct store_many *m = arg;
    if (store_entity_copy(m->a, val, vl, &m->e[i]) != 0)
        m->corrupt = 1;
    else
        m->found[i] = 1;
}

int store_entity_get_many(struct store *s, struct arena *a, const char *const *keys,
                          const size_t *lens, size_t n, struct entity *e, int *found)
{
    struct backend_mget *mg = arena_alloc(a, (n ? n : 1) * sizeof *mg);
    struct store_many m = {a, e, found, 0};
    for (size_t i = 0; i < n; i++) {
        mg[i] = (struct backend_mget){keys[i], lens[i], 0, NULL, 0};
        found[i] = 0;
        memset(&e[i], 0, sizeof e[i]);
    }
    char err[256] = "";
    int rc = kv_get_multi(s->kv, mg, n, store_many_found, &m, err, sizeof err);
    if (rc != BACKEND_OK) {
        log_error("backend get failed: %s", err);
        return rc;
    }
    if (m.corrupt) {
        log_error("corrupt entity value in the store");
        return BACKEND_CORRUPT;
    }
    return 0;
}

enum store_verdict store_judge(enum store_intent intent, const struct store_precond *pc,
                               int found, int64_t cur_ticks, int shared,
                               struct store_expect *cond)
{
    cond->kind = STORE_EXPECT_ANY;
    cond->version = 0;
    if (intent == STORE_INSERT) {
        cond->kind = STORE_EXPECT_ABSENT;
        return found ? STORE_EXISTS : STORE_GO;
    }
    if (!found) {
        if (pc->present)
            return STORE_NOT_FOUND;
        /* an upsert that creates: nobody else may have created it since
           (on a shared store a blind upsert too: its Timestamp must
           exceed that of any version written meanwhile) */
        if (intent != STORE_UPSERT || shared)
            cond->kind = STORE_EXPECT_ABSENT;
        return STORE_GO;
    }
    if (pc->present && !pc->any && (pc->never || pc->ticks != cur_ticks))
        return STORE_MISMATCH;
    if (shared && intent != STORE_DELETE) {
        /* the new Timestamp is above cur_ticks: it must still be the
           current version, or two front ends could write the same ticks */
        cond->kind = STORE_EXPECT_VERSION;
        cond->version = (uint64_t)cur_ticks;
        return STORE_GO;
    }
    if (intent == STORE_MERGE || intent == STORE_UPSERT_MERGE) {
        /* the result is built from what was read: it must still be so */
        cond->kind = STORE_EXPECT_VERSION;
        cond->version = (uint64_t)cur_ticks;
    } else if (pc->present && !pc->any) {
        cond->kind = STORE_EXPECT_VERSION;
        cond->version = (uint64_t)pc->ticks;
    } else if (pc->present) {
        cond->kind = STORE_EXPECT_PRESENT;
    }
    return STORE_GO;
}

void store_judge_blind(enum store_intent intent, const struct store_precond *pc,
                       struct store_expect *cond)
{
    cond->version = 0;
    if (intent == STORE_INSERT) {
        cond->kind = STORE_EXPECT_ABSENT;
    } else if (pc->present && !pc->any) {
        cond->kind = STORE_EXPECT_VERSION;
        cond->version = (uint64_t)pc->ticks;
    } else {
        cond->kind = pc->present ? STORE_EXPECT_PRESENT : STORE_EXPECT_ANY;
    }
}

int store_checks_needed(const struct store *s)
{
    return s->checks_needed;
}

int store_apply(struct store *s, int account, const struct backend_write *w,
                const struct backend_cond *cond, size_t n, size_t *failed)
{
    char err[256] = "";
    struct metrics *m = s->metrics;
    int count = account >= 0 && m && m->entities_known;
    struct kv_result res;
    uint64_t t0 = m ? clock_mono_us() : 0;
    int rc = kv_apply(s->kv, w, cond, n, count, &res, err, sizeof err);
    if (m)
        metrics_backend_apply(m, clock_mono_us() - t0);
    if (rc == BACKEND_CONFLICT) {
        if (failed)
            *failed = res.failed;
        return rc;
    }
    if (rc != BACKEND_OK) {
        log_error("backend apply failed: %s", err);
        store_failure(s, rc, err);
        return rc;
    }
    if (count)
        metrics_entities_add(m, (unsigned)account, (int64_t)res.created - (int64_t)res.removed);
    if (s->failed)
        store_recovered(s);
    if (s->durability == DURABILITY_BATCH) {
        s->dirty = 1;
        s->need = s->started + 1;
    }
    return 0;
}

/* Counts the entities of every table of every configured account (the
 * starting point of the tabled_entities gauges). */
static int store_count_entities(struct store *s, const struct account_cfg *accounts,
                                size_t naccounts, char *err,
                                size_t errlen)
{
    const char ts[1] = {KEY_TAG_TABLE}, te[1] = {KEY_TAG_TABLE + 1};
    struct kv_iter *it;
    int rc = kv_iter_open(s->kv, ts, 1, te, 1, &it, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    /* Table rows first (ids and accounts), then one scan per table. */
    struct buf ids;
    buf_init(&ids);
    const void *k, *v;
    size_t kl, vl;
    while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        const char *kp = k;
        const char *nul = kl > 1 ? memchr(kp + 1, '\0', kl - 1) : NULL;
        uint64_t id;
        const char *name;
        size_t nl, al;
        const unsigned char *acl;
        if (!nul || tables_decode(v, vl, &id, &name, &nl, &acl, &al) != 0)
            continue;
        char acct[64];
        size_t an = (size_t)(nul - kp - 1);
        if (an >= sizeof acct)
            continue;
        memcpy(acct, kp + 1, an);
        acct[an] = '\0';
        const struct account_cfg *a = account_find(accounts, naccounts, acct);
        if (!a)
            continue;
        uint32_t ai = (uint32_t)(a - accounts);
        buf_append(&ids, &id, sizeof id);
        buf_append(&ids, &ai, sizeof ai);
    }
    if (rc < 0)
        snprintf(err, errlen, "%s", kv_iter_error(it));
    kv_iter_close(it);
    struct buf start, end;
    buf_init(&start);
    buf_init(&end);
    for (size_t off = 0; rc == 0 && off < ids.len; off += sizeof(uint64_t) + sizeof(uint32_t)) {
        uint64_t id;
        uint32_t ai;
        memcpy(&id, ids.data + off, sizeof id);
        memcpy(&ai, ids.data + off + sizeof id, sizeof ai);
        buf_reset(&start);
        buf_reset(&end);
        keys_entity_table_prefix(&start, id);
        keys_entity_table_prefix(&end, id);
        keys_prefix_end(&end);
        rc = kv_iter_open(s->kv, start.data, start.len, end.data, end.len, &it, err, errlen);
        if (rc != BACKEND_OK)
            break;
        int64_t n = 0;
        while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1)
            n++;
        if (rc < 0)
            snprintf(err, errlen, "%s", kv_iter_error(it));
        kv_iter_close(it);
        metrics_entities_add(s->metrics, ai, n);
    }
    buf_free(&start);
    buf_free(&end);
    buf_free(&ids);
    return rc < 0 ? rc : BACKEND_OK;
}

int store_set_metrics(struct store *s, struct metrics *m, const struct account_cfg *accounts,
                      size_t naccounts, char *err,
                      size_t errlen)
{
    s->metrics = m;
    if (!m)
        return 0;
    memset(m->entities, 0, sizeof m->entities);
    err[0] = '\0';
    int rc = store_count_entities(s, accounts, naccounts, err, errlen);
    if (rc != BACKEND_OK) {
        if (!*err)
            snprintf(err, errlen, "reading the store failed (%d)", rc);
        return rc;
    }
    m->entities_known = 1;
    return 0;
}

int store_commit(struct store *s, int account, struct store_put *w, size_t n,
                 struct buf *vbuf, int64_t *ts_out, size_t *failed)
{
    /* Every entity written together shares one Timestamp, above the
     * version of each entity it replaces; a deleted entity leaves no
     * version to stay above (a re-created one starts from the clock). */
    int64_t after = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i].e && w[i].cur_ticks > after)
            after = w[i].cur_ticks;
    int64_t ts = store_next_timestamp(s, after);
    struct backend_write small_w[2];
    struct backend_cond small_c[2];
    size_t small_off[2];
    struct backend_write *bw = n <= 2 ? small_w : malloc(n * sizeof *bw);
    struct backend_cond *cond = n <= 2 ? small_c : malloc(n * sizeof *cond);
    size_t *off = n <= 2 ? small_off : malloc(n * sizeof *off);
    if (!bw || !cond || !off)
        abort();   /* the process's own buffers: out of memory aborts */
    /* The values are encoded back to back into vbuf; they are pointed at
     * only once it has stopped growing. */
    buf_reset(vbuf);
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        off[i] = vbuf->len;
        if (w[i].e) {
            w[i].e->timestamp = ts;
            entity_encode(w[i].e, vbuf);
        }
        /* a judgement made on a read needs checking only where the store
           can change between the read and the write */
        cond[i] = w[i].blind || s->checks_needed
                      ? store_cond(w[i].expect)
                      : (struct backend_cond){BACKEND_EXPECT_ANY, 0};
        any |= cond[i].expect != BACKEND_EXPECT_ANY;
    }
    for (size_t i = 0; i < n; i++) {
        if (!w[i].e) {
            bw[i] = (struct backend_write){BACKEND_DELETE, w[i].key, w[i].key_len, NULL, 0};
            continue;
        }
        size_t end = i + 1 < n ? off[i + 1] : vbuf->len;
        bw[i] = (struct backend_write){BACKEND_PUT, w[i].key, w[i].key_len, vbuf->data + off[i],
                                       end - off[i]};
    }
    int rc = store_apply(s, account, bw, any ? cond : NULL, n, failed);
    if (n > 2) {
        free(bw);
        free(cond);
        free(off);
    }
    if (rc != 0)
        return rc;
    /* Applied: the versions it replaced are confirmed now, read from the
       store or checked by the backend as If-Match named them, so the
       clock may go past them; a refused commit leaves it as it was. */
    store_timestamp_applied(s, ts);
    *ts_out = ts;
    return 0;
}

int store_put_raw(struct store *s, int account, const struct store_raw *w, size_t n)
{
    struct backend_write *bw = malloc((n ? n : 1) * sizeof *bw);
    if (!bw)
        abort();
    for (size_t i = 0; i < n; i++)
        bw[i] = (struct backend_write){BACKEND_PUT, w[i].key, w[i].key_len, w[i].val,
                                       w[i].val_len};
    int rc = store_apply(s, account, bw, NULL, n, NULL);
    free(bw);
    return rc;
}

int store_props_get(struct store *s, struct arena *a, const char *account, const char **doc,
                    size_t *len)
{
    struct buf key;
    buf_init(&key);
    keys_props(&key, account);
    const void *borrowed = NULL;
    size_t vl = 0;
    char err[256] = "";
    int rc = kv_get(s->kv, key.data, key.len, &borrowed, &vl, err, sizeof err);
    buf_free(&key);
    if (rc == BACKEND_NOTFOUND)
        return STORE_NOTFOUND;
    if (rc != BACKEND_OK) {
        log_error("reading service properties of %s: %s", account, err);
        return rc;
    }
    char *val = arena_alloc(a, vl ? vl : 1);
    memcpy(val, borrowed, vl);
    *doc = val;
    *len = vl;
    return STORE_OK;
}

int store_props_put(struct store *s, const char *account, const void *doc, size_t len)
{
    struct buf k;
    buf_init(&k);
    keys_props(&k, account);
    struct backend_write w = {BACKEND_PUT, k.data, k.len, doc, len};
    int rc = store_apply(s, -1, &w, NULL, 1, NULL);
    buf_free(&k);
    return rc;
}

struct store_scan {
    struct kv_iter *it;
};

int store_scan_open(struct store *s, const void *start, size_t start_len, const void *end,
                    size_t end_len, struct store_scan **out, char *err, size_t errlen)
{
    struct store_scan *sc = malloc(sizeof *sc);
    if (!sc)
        abort();
    int rc = kv_iter_open(s->kv, start, start_len, end, end_len, &sc->it, err, errlen);
    if (rc != BACKEND_OK) {
        free(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

int store_scan_seek(struct store_scan *sc, const void *key, size_t key_len)
{
    return kv_iter_seek(sc->it, key, key_len);
}

int store_scan_next(struct store_scan *sc, const void **key, size_t *key_len,
                    const void **val, size_t *val_len)
{
    return kv_iter_next(sc->it, key, key_len, val, val_len);
}

const char *store_scan_error(const struct store_scan *sc)
{
    return kv_iter_error(sc->it);
}

void store_scan_close(struct store_scan *sc)
{
    if (!sc)
        return;
    kv_iter_close(sc->it);
    free(sc);
}
